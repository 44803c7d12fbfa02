# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_node_info's judgement (_gpu_node.node_problems): each check names the node, the check, what was
expected and what was found (the module through ansible-core: tests/functional)."""

from __future__ import annotations

from gpu_stand_ins import H100_NICS

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _node as _gpu_node
from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu._health import parse_smi_query


def _smi(gpus: int, state: str = "Completed", persistence: str = "Enabled") -> str:
    body = "Driver Version                            : 550.90.07\n"
    body += f"Attached GPUs                             : {gpus}\n"
    for i in range(gpus):
        body += f"GPU 00000000:{16 + i:02X}:00.0\n    Persistence Mode : {persistence}\n    Fabric\n"
        body += f"        State : {state}\n        Status : {'Success' if state == 'Completed' else 'N/A'}\n"
    return body


def _facts(**over) -> dict:
    facts = {
        "driver_version": "550.90.07",
        "driver_source": "/sys/module/nvidia/version",
        "gpu_devices": [f"/dev/nvidia{i}" for i in range(8)],
        "smi": parse_smi_query(_smi(8)),
        "modules": ["nvidia", "nvidia_peermem"],
        "peermem_available": True,
        "rdma_nics": H100_NICS,
        "units": {
            "nvidia-fabricmanager": {"loaded": "loaded", "active": "active", "enabled": "enabled"},
            "nvidia-imex": {"loaded": "not-found", "active": "inactive", "enabled": ""},
        },
    }
    facts.update(over)
    return facts


H100 = {"shape": "BM.GPU.H100.8", "gpu_count": None, "driver_min": "", "checks": {}}


def test_a_healthy_h100_passes_both_stages() -> None:
    assert _gpu_node.node_problems("gpu1", _facts(), H100) == []
    assert _gpu_node.node_problems("gpu1", _facts(), H100, "service") == []


def test_driver_missing_and_too_old() -> None:
    assert _gpu_node.node_problems("gpu1", _facts(driver_version="", driver_source="no /sys/x"), H100) == [
        "node gpu1: driver: expected the NVIDIA driver loaded, found none (no /sys/x)"
    ]
    assert _gpu_node.node_problems("gpu1", _facts(), dict(H100, driver_min="560.28")) == [
        "node gpu1: driver: expected driver 560.28 or later, found 550.90.07"
    ]
    assert _gpu_node.node_problems("gpu1", _facts(), dict(H100, driver_min="550.90")) == []


def test_seven_of_eight_gpus_uses_the_slurm_gpu_check() -> None:
    got = _gpu_node.node_problems("gpu1", _facts(gpu_devices=[f"/dev/nvidia{i}" for i in range(7)]), H100)
    assert got == [
        "node gpu1: gpu_count: its shape BM.GPU.H100.8 promises 8 GPU(s) but the node shows 7 ("
        + ", ".join(f"/dev/nvidia{i}" for i in range(7))
        + ")"
    ]


def test_a_gpu_missing_from_nvidia_smi_behind_its_device_node_is_refused() -> None:
    got = _gpu_node.node_problems("gpu1", _facts(smi=parse_smi_query(_smi(7))), H100)
    assert got == ["node gpu1: gpu_count: expected 8 GPU(s) in nvidia-smi -q (its shape BM.GPU.H100.8), found 7"]
    got = _gpu_node.node_problems("gpu1", _facts(smi=parse_smi_query(_smi(7))), dict(H100, gpu_count=7))
    assert got == [
        "node gpu1: gpu_count: gpu_node_gpu_count promises 7 GPU(s) but the node shows 8 ("
        + ", ".join(f"/dev/nvidia{i}" for i in range(8))
        + ")"
    ]
    assert _gpu_node.node_problems("gpu1", _facts(smi=None), H100) == []  # nvidia-smi failed: the driver check's


def test_fabric_manager_missing_or_not_ready() -> None:
    units = {"nvidia-fabricmanager": {"loaded": "not-found", "active": "inactive", "enabled": ""}}
    assert _gpu_node.node_problems("gpu1", _facts(units=units), H100) == [
        "node gpu1: fabric: expected nvidia-fabricmanager installed (shape BM.GPU.H100.8 needs it), "
        "found no such service"
    ]
    busy = _facts(smi=parse_smi_query(_smi(8, state="In Progress")))
    assert _gpu_node.node_problems("gpu1", busy, H100) == []  # preflight: the service step starts it
    got = _gpu_node.node_problems("gpu1", busy, H100, "service")
    assert got == [
        "node gpu1: fabric: expected every GPU's fabric state Completed/Success, found fabric not ready: "
        "GPU 0: In Progress/N/A, GPU 1: In Progress/N/A, GPU 2: In Progress/N/A, GPU 3: In Progress/N/A (+4 more)"
    ]


def test_gb200_needs_imex_not_fabric_manager() -> None:
    gb200 = {"shape": "BM.GPU.GB200.4", "gpu_count": None, "driver_min": "", "checks": {}}
    facts = _facts(
        gpu_devices=[f"/dev/nvidia{i}" for i in range(4)],
        smi=parse_smi_query(_smi(4)),
        rdma_nics=["mlx5_0", "mlx5_1", "mlx5_3", "mlx5_4"],
    )
    assert _gpu_node.node_problems("gb1", facts, gb200) == [
        "node gb1: fabric: expected nvidia-imex installed (shape BM.GPU.GB200.4 needs it), found no such service"
    ]
    facts["units"]["nvidia-imex"] = {"loaded": "loaded", "active": "failed", "enabled": "enabled"}
    assert _gpu_node.node_problems("gb1", facts, gb200) == []
    assert _gpu_node.node_problems("gb1", facts, gb200, "service") == [
        "node gb1: fabric: expected nvidia-imex running, found failed"
    ]


def test_rdma_nics_peermem_and_persistence() -> None:
    facts = _facts(rdma_nics=H100_NICS[2:], modules=["nvidia"], smi=parse_smi_query(_smi(8, persistence="Disabled")))
    assert _gpu_node.node_problems("gpu1", facts, H100) == [
        "node gpu1: rdma_nics: expected the 16 RDMA NICs of BM.GPU.H100.8, found 14; missing mlx5_0, mlx5_1"
    ]
    assert _gpu_node.node_problems("gpu1", facts, H100, "service") == [
        "node gpu1: peermem: expected nvidia_peermem loaded (GPUDirect RDMA), found not loaded",
        "node gpu1: rdma_nics: expected the 16 RDMA NICs of BM.GPU.H100.8, found 14; missing mlx5_0, mlx5_1",
        "node gpu1: persistence: expected persistence mode Enabled on every GPU, "
        "found not on GPU 0, 1, 2, 3, 4, 5, 6, 7",
    ]
    # a driver without nvidia_peermem is not asked for it
    assert not any(
        "peermem" in p for p in _gpu_node.node_problems("gpu1", dict(facts, peermem_available=False), H100, "service")
    )


def test_checks_turn_off_and_shapes_without_fabric() -> None:
    off = dict(H100, checks=dict.fromkeys(_gpu_node.CHECKS, False))
    assert (
        _gpu_node.node_problems(
            "gpu1", _facts(driver_version="", gpu_devices=[], rdma_nics=[], units={}), off, "service"
        )
        == []
    )
    l40s = {"shape": "BM.GPU.L40S.4", "gpu_count": None, "driver_min": "", "checks": {}}
    facts = _facts(
        gpu_devices=[f"/dev/nvidia{i}" for i in range(4)],
        smi=parse_smi_query(_smi(4)),
        rdma_nics=["mlx5_0", "mlx5_2"],
        units={},
    )
    assert _gpu_node.node_problems("l1", facts, l40s, "service") == []


def test_version_tuple() -> None:
    assert _gpu_node.version_tuple("550.90.07") == (550, 90, 7)
    assert _gpu_node.version_tuple("570.86.15-open") == (570, 86)
    assert _gpu_node.version_tuple("") == ()


ROUTES = (
    "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
    "ens300\t00000000\t0100590A\t0003\t0\t0\t200\t00000000\t0\t0\t0\n"
    "eth0\t00000000\t0100590A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
    "down0\t00000000\t0100590A\t0002\t0\t0\t0\t00000000\t0\t0\t0\n"
    "rdma0\t0000590A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
)


def test_the_default_route_with_the_lowest_metric_names_the_interface() -> None:
    assert _gpu_node.default_route_ifname(ROUTES) == "eth0"
    assert _gpu_node.default_route_ifname(ROUTES.replace("\t100\t", "\t300\t")) == "ens300"
    assert _gpu_node.default_route_ifname(ROUTES.splitlines()[0] + "\n" + ROUTES.splitlines()[-1]) == ""
    assert _gpu_node.default_route_ifname("") == ""
