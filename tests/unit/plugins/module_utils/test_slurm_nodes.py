# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import render_slurm_config
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodes import (
    gpu_check,
    merge_nodes,
    node_record,
    parse_slurmd_c,
    records_from_conf,
)

SLURMD_C = (
    "NodeName=gpu1 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063000\n"
    "UpTime=3-01:02:03\n"
)
H100_DEVICES = [f"/dev/nvidia{i}" for i in (7, 6, 5, 4, 3, 2, 1, 0)] + ["/dev/nvidiactl", "/dev/nvidia-uvm"]


def test_parse_slurmd_c() -> None:
    assert parse_slurmd_c(SLURMD_C) == {
        "cpus": 224,
        "boards": 1,
        "sockets": 2,
        "cores_per_socket": 56,
        "threads_per_core": 2,
        "real_memory": 2063000,
    }


def test_parse_slurmd_c_refuses_garbage_quoting_it() -> None:
    with pytest.raises(ValueError, match="slurmd: fatal"):
        parse_slurmd_c("slurmd: fatal: something")


def test_node_record_for_an_h100_node() -> None:
    rec = node_record("gpu1", SLURMD_C, H100_DEVICES, shape="BM.GPU.H100.8", memory_reserve_mb=3000)
    assert rec["gpu_type"] == "h100"
    assert rec["gpu_count"] == 8
    assert rec["gpu_files"] == [f"/dev/nvidia{i}" for i in range(8)]
    assert rec["real_memory"] == 2060000
    assert rec["features"] == ["bm_gpu_h100_8"]
    assert (rec["sockets"], rec["cores_per_socket"], rec["threads_per_core"]) == (2, 56, 2)


def test_node_record_for_a_cpu_node_has_no_gres() -> None:
    rec = node_record("cpu1", SLURMD_C, [], shape="VM.Standard.E5.Flex")
    assert "gpu_count" not in rec and "gpu_type" not in rec


@pytest.mark.parametrize(
    ("shape", "devices", "expected", "message"),
    [
        ("BM.GPU.H100.8", H100_DEVICES, None, None),
        (
            "BM.GPU.H100.8",
            H100_DEVICES[1:],
            None,
            "node n1: its shape BM.GPU.H100.8 promises 8 GPU(s) but the node shows 7",
        ),
        ("BM.GPU.L40S.4", H100_DEVICES, None, "promises 4 GPU(s) but the node shows 8"),
        ("VM.Standard.E5.Flex", [], None, None),
        ("VM.Standard.E5.Flex", ["/dev/nvidia0"], None, "promises 0 GPU(s) but the node shows 1 (/dev/nvidia0)"),
        ("", ["/dev/nvidia0"], None, None),
        ("", ["/dev/nvidia0"], 2, "node n1: slurm_gpu_count promises 2 GPU(s) but the node shows 1"),
    ],
)
def test_gpu_check(shape, devices, expected, message) -> None:
    result = gpu_check("n1", shape, devices, expected)
    if message is None:
        assert result is None
    else:
        assert result is not None and message in result


def rendered(records: list[dict]) -> str:
    spec = {"cluster_name": "lab", "controllers": ["ctl"], "nodes": records, "partitions": []}
    return render_slurm_config(spec)["slurm.conf"]


def test_records_round_trip_through_rendered_conf() -> None:
    recs = [node_record(f"gpu{i}", SLURMD_C, H100_DEVICES, shape="BM.GPU.H100.8") for i in (1, 2, 3)]
    recs.append(node_record("cpu1", SLURMD_C, [], shape=None))
    back = records_from_conf(rendered(recs))
    assert sorted(back) == ["cpu1", "gpu1", "gpu2", "gpu3"]
    assert back["gpu2"]["gpu_count"] == 8 and back["gpu2"]["gpu_type"] == "h100"
    assert back["gpu2"]["features"] == ["bm_gpu_h100_8"]
    assert back["cpu1"]["real_memory"] == 2063000
    # Re-rendering what was read back gives the same node lines.
    again = [dict(r) for r in back.values()]
    for rec in again:
        if rec.get("gpu_count"):
            rec["gpu_files"] = [f"/dev/nvidia{i}" for i in range(rec["gpu_count"])]
    assert rendered(again) == rendered(recs)


OLD = rendered(
    [
        {"name": "gpu1", "cpus": 2, "real_memory": 1000, "gpu_type": "h100", "gpu_count": 8},
        {"name": "gpu2", "cpus": 2, "real_memory": 1000, "gpu_type": "h100", "gpu_count": 8},
        {"name": "cpu1", "cpus": 2, "real_memory": 1000},
    ]
)


def fresh(*names: str) -> dict:
    return {n: {"name": n, "cpus": 4, "real_memory": 2000} for n in names}


def test_merge_first_install_takes_fresh_records_and_reports_missing() -> None:
    out = merge_nodes(["gpu1", "gpu2", "cpu1"], fresh("gpu1", "cpu1"), "")
    assert [n["name"] for n in out["nodes"]] == ["cpu1", "gpu1"]
    assert out["missing"] == ["gpu2"]


def test_merge_keeps_a_live_node_whose_host_did_not_answer() -> None:
    out = merge_nodes(["gpu1", "gpu2", "cpu1"], fresh("gpu1", "cpu1"), OLD)
    by_name = {n["name"]: n for n in out["nodes"]}
    assert sorted(by_name) == ["cpu1", "gpu1", "gpu2"]
    assert by_name["gpu2"]["gpu_count"] == 8 and by_name["gpu2"]["cpus"] == 2
    assert by_name["gpu1"]["cpus"] == 4
    assert out["kept"] == ["gpu2"]


def test_merge_never_drops_a_live_node_missing_from_the_inventory() -> None:
    out = merge_nodes(["gpu1"], fresh("gpu1"), OLD)
    assert sorted(n["name"] for n in out["nodes"]) == ["cpu1", "gpu1", "gpu2"]
    assert out["orphans"] == ["cpu1", "gpu2"]


def test_merge_removes_only_what_it_is_told_to() -> None:
    out = merge_nodes(["gpu1", "gpu2"], fresh("gpu1", "gpu2"), OLD, remove=["cpu1"])
    assert sorted(n["name"] for n in out["nodes"]) == ["gpu1", "gpu2"]
    assert out["removed"] == ["cpu1"]
