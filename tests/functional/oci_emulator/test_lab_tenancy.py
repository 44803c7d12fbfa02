# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""A lab as a tenancy: ansible-inventory sees every node as the lab's IMDS describes it (the lab's record is
the unit tests', tests/unit/oci_emulator/test_lab_tenancy.py)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator.testing import ansible_inventory  # noqa: E402
from tests.unit.oci_emulator.test_lab_tenancy import lab_world  # noqa: E402


def test_inventory_sees_the_lab_nodes_as_imds_describes_them(tmp_path: Path) -> None:
    with lab_world(tmp_path) as (lab, running):
        inv = ansible_inventory(running.inventory_file("lab", regions=["us-ashburn-1"], extended_hostvars=True))
    assert inv.rc == 0, inv.stderr
    data = inv.data
    hostvars = data["_meta"]["hostvars"]
    assert sorted(hostvars) == sorted(n["name"] for n in lab["nodes"])
    for node in lab["nodes"]:
        hv, doc = hostvars[node["name"]], node["imds"]["instance"]
        assert hv["ansible_host"] == node["ip"]
        assert hv["oci_id"] == doc["id"] and hv["oci_shape"] == node["shape"]
        assert hv["oci_gpus"] == node["gpus"]
        topo = node["imds"]["host"].get("rdmaTopologyData")
        if topo:
            assert hv["oci_hpc_island_id"] == topo["customerHPCIslandId"]
            assert hv["oci_network_block_id"] == topo["customerNetworkBlock"]
            assert hv["oci_local_block_id"] == topo["customerLocalBlock"]
    groups = {g: set(v.get("hosts", [])) for g, v in data.items() if isinstance(v, dict) and g != "_meta"}
    assert groups["slurm_controller"] == {"ctl"} and groups["slurm_dbd"] == {"ctl"}
    assert groups["slurm_compute"] == {"gpu1", "gpu2", "gpu3"} and groups["slurm_login"] == {"login1"}
    assert "nfs" not in set().union(*(v for g, v in groups.items() if g.startswith("slurm_")))
    cluster_networks = [g for g in groups if g.startswith("cluster_network_")]
    assert len(cluster_networks) == 1 and groups[cluster_networks[0]] == {"gpu1", "gpu2", "gpu3"}
    # the inventory's local block groups hold the nodes the lab placed together (gpu1 by its
    # ordinal, 0, which no label shares)
    local_blocks = sorted(sorted(v) for g, v in groups.items() if g.startswith("local_block_"))
    assert local_blocks == [["gpu1"], ["gpu2", "gpu3"]]
