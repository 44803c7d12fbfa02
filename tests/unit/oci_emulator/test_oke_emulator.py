# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The emulator's OKE additions: add-on catalogue, the essential device plugin, the write log."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import oci
import yaml

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _oke

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator import generate  # noqa: E402
from tests.oci_emulator.tenancy import default_addon_options  # noqa: E402
from tests.oci_emulator.testing import running_emulator  # noqa: E402

ROLE_DEFAULTS = REPO / "roles" / "oke_addons" / "defaults" / "main.yml"


def test_role_default_versions_are_offered_for_the_generated_clusters() -> None:
    versions = yaml.safe_load(ROLE_DEFAULTS.read_text())["oke_addons_versions"]
    k8s = generate(hosts=1, regions=1, compartments=1, oke_clusters=1)
    cluster_k8s = next(iter(k8s["regions"].values()))["clusters"][0]["kubernetesVersion"]
    catalogue = {o["name"]: o for o in default_addon_options()}
    for name, version in versions.items():
        offered = [
            v["versionNumber"]
            for v in catalogue[name]["versions"]
            if _oke.kubernetes_version_ok(cluster_k8s, v["kubernetesVersionFilters"])
        ]
        assert version in offered, f"{name} {version} not offered for {cluster_k8s}: {offered}"


def test_gpu_operator_catalogue_has_the_keys_the_role_sets() -> None:
    keys = {
        c["key"]
        for o in default_addon_options()
        if o["name"] == "NvidiaGpuOperator"
        for c in o["versions"][-1]["configurations"]
    }
    assert {"driver.enabled", "dcgmExporter.enabled", "toolkit.enabled", "nfd.enabled"} <= keys


def test_write_log_records_addon_writes_with_states_and_retry_token(tmp_path: Path) -> None:
    data = generate(hosts=2, regions=1, compartments=1, oke_clusters=1)
    with running_emulator(data, tmp_path, addon_delay_s=0.05) as lab:
        ce = oci.container_engine.ContainerEngineClient(
            oci.config.from_file(str(lab.creds.config_file)), service_endpoint=lab.endpoints[lab.tenancy.home_region]
        )
        cid = lab.tenancy.regions[lab.tenancy.home_region].clusters[0]["id"]
        assert ce.get_addon(cid, "NvidiaGpuPlugin").data.lifecycle_state == "ACTIVE"  # essential, preinstalled
        ce.install_addon(
            cid, oci.container_engine.models.InstallAddonDetails(addon_name="CertManager"), opc_retry_token="t1"
        )
        time.sleep(0.1)
        ce.disable_addon(cid, "NvidiaGpuPlugin", True)
        ce.get_addon(cid, "CertManager")
        writes = lab.emulator.writes()
        assert [(w["op"], w["addon"], w["retryToken"]) for w in writes] == [
            ("InstallAddon", "CertManager", True),
            ("DisableAddon", "NvidiaGpuPlugin", False),
        ]
        assert writes[1]["addonStates"] == {"NvidiaGpuPlugin": "DELETING", "CertManager": "ACTIVE"}
        lab.emulator.reset_counters()
        assert lab.emulator.writes() == []
