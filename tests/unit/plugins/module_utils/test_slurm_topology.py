# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_topology's choice and files (module_utils/slurm/_topology.py): each mode, per release, and
the rules that keep slurmctld up (no topology/none, no block smaller than the base, no partition
mixing block and other nodes)."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._topology import plan_topology

NB = "ocid1.computenetworkblock.oc1.iad.aaaaaaaanetblk000001"


def gpu(name: str, block: int, model: str = "h100") -> dict[str, Any]:
    return {
        "name": name,
        "gpu_model": model,
        "network_block_id": NB,
        "local_block_id": f"ocid1.computelocalblock.oc1.iad.aaaaaaaalocblk00000{block}",
    }


FOUR = [gpu("gpu1", 1), gpu("gpu2", 1), gpu("gpu3", 2), gpu("gpu4", 2)]
ALL_GPU = {"gpu": ["gpu1", "gpu2", "gpu3", "gpu4"]}


def test_auto_picks_block_on_24_11_with_the_plugin_and_tree_without_it() -> None:
    got = plan_topology("auto", FOUR, (24, 11), ["tree", "block"], ALL_GPU)
    assert (got["mode"], got["plugin"], got["problems"]) == ("block", "topology/block", [])
    assert got["files"] == {
        "topology.conf": "# Managed by Ansible (oci_gpu.cluster.slurm): OCI RDMA topology\n"
        "BlockName=local_block_locblk000001 Nodes=gpu[1-2]\n"
        "BlockName=local_block_locblk000002 Nodes=gpu[3-4]\n"
        "BlockSizes=2,4\n"
    }
    # 22.05 has no topology/block; 24.11 without topology_block.so neither
    for version, plugins in (((22, 5), ["tree"]), ((24, 11), ["tree"])):
        got = plan_topology("auto", FOUR, version, plugins, ALL_GPU)
        assert (got["mode"], got["plugin"]) == ("tree", "topology/tree")
        assert "SwitchName=local_block_locblk000001 Nodes=gpu[1-2]" in got["files"]["topology.conf"]


def test_auto_is_tree_for_a100_racks_and_when_a_partition_mixes_cpu_nodes() -> None:
    a100 = [{**h, "gpu_model": "a100", "rack_id": f"rack{i // 2}"} for i, h in enumerate(FOUR)]
    assert plan_topology("auto", a100, (24, 11), ["block", "tree"], ALL_GPU)["mode"] == "tree"
    mixed = {"all": ["gpu1", "gpu2", "gpu3", "gpu4", "cpu1"]}
    got = plan_topology("auto", [*FOUR, {"name": "cpu1"}], (24, 11), ["block", "tree"], mixed)
    assert got["mode"] == "tree" and got["problems"] == []
    assert "partition(s) all (cpu1 in no block) mix block and other nodes" in got["report"][0]


def test_block_refuses_a_mixed_partition_by_name_and_a_release_without_the_plugin() -> None:
    mixed = {"gpu": ["gpu1", "gpu2"], "batch": ["gpu3", "cpu1"]}
    got = plan_topology("block", [*FOUR, {"name": "cpu1"}], (24, 11), ["block"], mixed)
    assert got["files"] == {} and len(got["problems"]) == 1
    assert "partition(s) batch (cpu1 in no block)" in got["problems"][0]
    got = plan_topology("block", FOUR, (22, 5), ["tree"], ALL_GPU)
    assert "Slurm 22.05 has no topology/block plugin" in got["problems"][0]
    got = plan_topology("block", FOUR, (24, 11), ["tree"], ALL_GPU)
    assert "needs topology_block.so" in got["problems"][0]


def test_none_and_a_single_block_write_no_plugin_line() -> None:
    for got in (
        plan_topology("none", FOUR, (24, 11), ["block", "tree"], ALL_GPU),
        plan_topology("auto", FOUR[:2], (24, 11), ["block", "tree"], ALL_GPU),
        plan_topology("auto", [{"name": "n1"}, {"name": "n2"}], (24, 11), ["block", "tree"], {}),
    ):
        assert (got["mode"], got["plugin"], got["files"], got["problems"]) == ("none", "", {}, [])


def test_a_topologyplugin_in_slurm_config_is_the_sites_own() -> None:
    got = plan_topology("auto", FOUR, (24, 11), ["block"], ALL_GPU, user_plugin="topology/tree")
    assert (got["plugin"], got["files"]) == ("", {}) and "writes no topology file" in got["report"][0]
    got = plan_topology("tree", FOUR, (24, 11), ["block"], ALL_GPU, user_plugin="topology/tree")
    assert "slurm_config sets TopologyPlugin=topology/tree while slurm_topology is tree" in got["problems"][0]


def test_slurm_25_05_gets_topology_yaml_and_no_plugin_line() -> None:
    got = plan_topology("auto", FOUR, (25, 5), [], ALL_GPU)
    assert (got["mode"], got["plugin"], list(got["files"])) == ("block", "", ["topology.yaml"])
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(got["files"]["topology.yaml"])
    assert [(t["topology"], t["cluster_default"]) for t in doc] == [("oci_tree", False), ("oci_block", True)]
    assert doc[1]["block"] == {
        "block_sizes": [2, 4],
        "blocks": [
            {"block": "local_block_locblk000001", "nodes": "gpu[1-2]"},
            {"block": "local_block_locblk000002", "nodes": "gpu[3-4]"},
        ],
    }
    switches = {s["switch"]: s for s in doc[0]["tree"]["switches"]}
    assert switches["oci_fabric"]["children"] == "oci_fabric_none"
    assert switches["local_block_locblk000002"]["nodes"] == "gpu[3-4]"


def test_a_partial_run_keeps_the_live_topology() -> None:
    live = {"plugin": "topology/tree", "files": {"topology.conf": "SwitchName=s1 Nodes=gpu[1-4]\n"}}
    got = plan_topology("auto", FOUR[:1], (24, 11), ["block"], ALL_GPU, live=live)
    assert (got["mode"], got["plugin"], got["files"]) == ("tree", "topology/tree", live["files"])
    assert "live topology is kept" in got["report"][0]


def test_bad_mode_and_bad_hosts_are_problems() -> None:
    assert "choose one of auto, tree, block, none" in plan_topology("fat-tree", FOUR, (24, 11))["problems"][0]
    assert "listed twice" in plan_topology("tree", [*FOUR, FOUR[0]], (24, 11))["problems"][0]


def test_live_placement_reads_tree_and_block_files() -> None:
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._topology import live_placement

    tree = plan_topology("tree", FOUR, (24, 11))["files"]["topology.conf"]
    assert live_placement(tree)["gpu3"] == {"network_block": "netblk000001", "local_block": "locblk000002"}
    block = plan_topology("block", FOUR, (24, 11), ["block"])["files"]["topology.conf"]
    assert live_placement(block)["gpu1"] == {"local_block": "locblk000001"}
    assert live_placement("SwitchName=s1 Nodes=n[1-2]\nSwitchName=top Switches=s1\n") == {"n1": {}, "n2": {}}
