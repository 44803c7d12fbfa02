# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""oke_addons_plan: the oke_addons role's add-on plan, with expected values written out here."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.oci_gpu.cluster.plugins.filter.oke_addons_plan import oke_addons_plan

H100 = {
    "shape": "BM.GPU.H100.8",
    "rdma": {
        "rdma_resource_name": "rdma_bm_gpu_h100_8",
        "rdma_vendor_id": "15b3",
        "rdma_vf_device_id": "101e",
        "rdma_driver": "mlx5_core",
    },
}
A10 = {"shape": "VM.GPU.A10.1", "rdma": None}
H100_RESOURCE = {
    "resourcePrefix": "nvidia.com",
    "resourceName": "rdma_bm_gpu_h100_8",
    "selectors": {"vendors": ["15b3"], "devices": ["101e"], "drivers": ["mlx5_core"], "isRdma": True},
}
DEFAULT_ADDONS = [
    {"name": "CertManager"},
    {"name": "NvidiaNetworkOperator"},
    {"name": "NvidiaGpuOperator", "configurations": {"dcgmExporter.enabled": "false"}},
    {"name": "NodeFeatureDiscovery", "version": "v0.16.0"},
]
OFFERED = [
    {"name": "NodeFeatureDiscovery", "versions": [{"version": "v0.16.0"}, {"version": "v0.15.0"}]},
    {"name": "NvidiaGpuOperator", "versions": [{"version": "v24.9.0"}]},
    {"name": "NvidiaGpuPlugin", "versions": [{"version": "v1.0"}]},
    {"name": "NvidiaNetworkOperator", "versions": [{"version": "v24.10.0"}]},
    {"name": "CertManager", "versions": [{"version": "v1.16.0"}]},
]


def test_order_versions_and_merged_configurations() -> None:
    out = oke_addons_plan(DEFAULT_ADDONS, versions={"CertManager": "v1.16.0"}, gpu_shapes=[A10, H100], options=OFFERED)
    assert [(a["name"], a["state"], a["version"], a["order"]) for a in out["plan"]] == [
        ("NodeFeatureDiscovery", "present", "v0.16.0", 10),
        ("NvidiaGpuPlugin", "absent", None, 15),
        ("NvidiaGpuOperator", "present", None, 20),
        ("NvidiaNetworkOperator", "present", None, 30),
        ("CertManager", "present", "v1.16.0", 40),
    ]
    configs = {a["name"]: a["configurations"] for a in out["plan"]}
    assert configs["NvidiaGpuOperator"] == {
        "driver.enabled": "false",
        "toolkit.enabled": "true",
        "devicePlugin.enabled": "true",
        "dcgmExporter.enabled": "false",
        "nfd.enabled": "false",
    }
    assert configs["NodeFeatureDiscovery"] is None and configs["NvidiaGpuPlugin"] is None
    net = configs["NvidiaNetworkOperator"]
    assert json.loads(net.pop("sriovDevicePlugin.resources")) == [H100_RESOURCE]
    assert net == {
        "nfd.enabled": "false",
        "ofedDriver.deploy": "false",
        "sriovDevicePlugin.deploy": "true",
        "secondaryNetwork.deploy": "true",
    }
    assert out["rdma_shapes"] == [H100] and out["rdma_resources"] == [H100_RESOURCE]
    assert out["not_offered"] == [] and out["errors"] == []


def test_network_operator_only_with_rdma_and_gpu_plugin_kept_when_asked() -> None:
    out = oke_addons_plan(DEFAULT_ADDONS, gpu_shapes=[A10], gpu_driver_enabled="yes", disable_nvidia_gpu_plugin=False)
    assert [a["name"] for a in out["plan"]] == ["NodeFeatureDiscovery", "NvidiaGpuOperator", "CertManager"]
    assert out["plan"][1]["configurations"]["driver.enabled"] == "true"
    out = oke_addons_plan(DEFAULT_ADDONS, gpu_shapes=[H100], rdma_enabled=False)
    assert "NvidiaNetworkOperator" not in [a["name"] for a in out["plan"]]
    # Named by the user, OKE's GPU plugin is planned as given, not disabled.
    out = oke_addons_plan([{"name": "NvidiaGpuOperator"}, {"name": "NvidiaGpuPlugin"}])
    assert [(a["name"], a["state"]) for a in out["plan"]] == [
        ("NvidiaGpuPlugin", "present"),
        ("NvidiaGpuOperator", "present"),
    ]
    # Unknown add-ons go last, in the order given.
    out = oke_addons_plan([{"name": "Zeta"}, {"name": "CertManager", "state": "absent"}, {"name": "Alpha"}])
    assert [(a["name"], a["state"], a["order"]) for a in out["plan"]] == [
        ("CertManager", "absent", 40),
        ("Zeta", "present", 90),
        ("Alpha", "present", 90),
    ]


def test_input_errors_need_no_cluster_data() -> None:
    out = oke_addons_plan(
        [
            {"name": "CertManager"},
            {"name": "NvidiaGpuOperator", "configurations": {"driver.enabled": False, "x": 2}},
            {"name": "CertManager"},
        ]
    )
    assert out["errors"] == [
        "oke_addons_addons names an add-on more than once: CertManager, NvidiaGpuOperator, CertManager",
        'OKE add-on configuration values must be strings (quote them, e.g. "true"); not strings: '
        "oke_addons_addons[NvidiaGpuOperator].configurations[driver.enabled] = false; "
        "oke_addons_addons[NvidiaGpuOperator].configurations[x] = 2",
    ]
    assert out["not_offered"] == []


def test_not_offered_names_unknown_addons_and_versions_only_for_present_ones() -> None:
    addons = [
        {"name": "NvidiaGpuOperatr"},
        {"name": "NvidiaGpuOperator", "version": "v25.3.0"},
        {"name": "Gone", "state": "absent"},
    ]
    out = oke_addons_plan(addons, options=OFFERED, disable_nvidia_gpu_plugin=False)
    assert out["not_offered"] == [
        "add-on NvidiaGpuOperator version v25.3.0 (offered: v24.9.0)",
        "add-on NvidiaGpuOperatr is unknown (known: CertManager, NodeFeatureDiscovery, NvidiaGpuOperator, "
        "NvidiaGpuPlugin, NvidiaNetworkOperator)",
    ]
    assert out["errors"] == out["not_offered"]


def test_refuses_a_list_that_is_not_of_mappings() -> None:
    with pytest.raises(AnsibleFilterError, match="must be a list of mappings"):
        oke_addons_plan(["CertManager"])
