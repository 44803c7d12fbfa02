# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""capacity_plan: names from a pattern, guards on what may be removed, caps, bad requests."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.oci_gpu.cluster.plugins.filter.capacity_plan import capacity_plan

INV = {
    "hosts": ["ctl", "login1", "gpu1", "gpu2", "gpu4", "nfs"],
    "compute": ["gpu1", "gpu2", "gpu4"],
    "protected": ["ctl", "login1"],
    "oci_ids": {"gpu2": "ocid1.instance.oc1.iad.two", "gpu4": ""},
}


def plan(**request: Any) -> dict[str, Any]:
    return capacity_plan({"pattern": "gpu{n}", "max_add": 16, "max_remove": 4, **request}, INV)


def test_a_count_takes_the_lowest_free_indices() -> None:
    assert plan(add=3) == {"add": ["gpu3", "gpu5", "gpu6"], "remove": [], "errors": []}
    assert plan(add=2, pattern="hpc-gpu-{n:03d}")["add"] == ["hpc-gpu-001", "hpc-gpu-002"]


def test_named_nodes_and_a_rerun_of_the_same_names() -> None:
    # gpu2 exists already as a compute node: a rerun after a launch, which compute_instance adopts
    assert plan(add=["gpu2", "gpu9"]) == {"add": ["gpu2", "gpu9"], "remove": [], "errors": []}


def test_removal_only_of_oci_compute_nodes() -> None:
    out = plan(remove=["gpu2"])
    assert out == {"add": [], "remove": [{"name": "gpu2", "instance_id": "ocid1.instance.oc1.iad.two"}], "errors": []}
    errors = plan(remove=["ctl", "nfs", "gpu4", "gpu7"])["errors"]
    assert errors == [
        "capacity_remove: ctl is a controller, dbd or login host; only compute nodes are removed",
        "capacity_remove: nfs is not a compute node of this inventory",
        "capacity_remove: gpu4 has no OCI instance (oci_id): it was not found through OCI",
        "capacity_remove: gpu7 is not a compute node of this inventory",
    ]


def test_caps_and_bad_requests() -> None:
    assert plan(add=17)["errors"] == ["capacity_add names 17 nodes, more than capacity_max_add (16) allows at once"]
    assert "more than capacity_max_remove (1)" in plan(remove=["gpu1", "gpu2"], max_remove=1)["errors"][-1]
    assert plan(add=1, pattern="gpu")["errors"] == ["capacity_name_pattern 'gpu' must contain {n} (e.g. 'gpu{n}')"]
    assert "is not a host name" in plan(add=["GPU_1"])["errors"][0]
    assert plan(add=["ctl"])["errors"] == [
        "capacity_add: ctl is already a host of this inventory, and not a compute node"
    ]
    assert "gpu2 is both in capacity_add and capacity_remove" in plan(add=["gpu2"], remove=["gpu2"])["errors"]
    assert plan(add=-1)["errors"] == ["capacity_add -1 must be 0 or more"]
    assert plan(add=["gpu8", "gpu8"])["errors"] == ["named twice: gpu8"]
    with pytest.raises(AnsibleFilterError):
        capacity_plan([], INV)


def test_extra_vars_strings_and_the_scope() -> None:
    # -e capacity_add=2 gives "2" (a count); -e capacity_add=gpu7 gives one name
    assert plan(add="2")["add"] == ["gpu3", "gpu5"]
    assert plan(add="gpu7")["add"] == ["gpu7"]
    assert plan(scope="all")["errors"] == []
    assert plan(scope="some")["errors"] == ["capacity_slurm_scope must be new or all, got 'some'"]
