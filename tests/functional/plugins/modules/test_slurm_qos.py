# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_qos run by ansible-core against a sacctmgr stand-in (standins/sacctmgr_standin.py) that keeps a
state file and logs every call."""

from __future__ import annotations

from . import adhoc

# ------------------------------------------------------------------ the module, run by ansible-core


def test_module_creates_then_changes_nothing_and_diffs_a_change(sacctmgr) -> None:
    args = {"name": "GPU-Short", "priority": 100, "max_wall": "240", "max_tres_per_user": {"gres/gpu": 4}}
    check = adhoc.run_module("slurm_qos", args, "--check")
    assert check["changed"] is True and check["changes"] == ["state", "max_tres_per_user", "max_wall", "priority"]
    assert sacctmgr.writes() == [], "check mode wrote"
    first = adhoc.run_module("slurm_qos", args)
    assert first["changed"] is True and first["name"] == "gpu-short", first
    state = sacctmgr.state()["qos"]
    assert state["gpu-short"]["MaxWall"] == "04:00:00" and state["gpu-short"]["MaxTRESPU"] == "gres/gpu=4"
    again = adhoc.run_module("slurm_qos", dict(args, max_wall="04:00:00"))
    assert again["changed"] is False and again["commands"] == []
    assert len(sacctmgr.writes()) == 1, "a second identical run wrote"
    diff = adhoc.run_module("slurm_qos", dict(args, max_tres_per_user="gres/gpu=2"), "--diff")
    assert diff["changed"] is True and diff["changes"] == ["max_tres_per_user"]
    assert diff["diff"] == {
        "before": {"max_tres_per_user": {"gres/gpu": 4}, "max_wall": 14400, "priority": 100},
        "after": {"max_tres_per_user": {"gres/gpu": 2}, "max_wall": 14400, "priority": 100},
    }
    gone = adhoc.run_module("slurm_qos", {"name": "gpu-short", "state": "absent"})
    assert gone["changed"] is True and sacctmgr.state()["qos"] == {}


def test_module_refuses_before_any_call(sacctmgr) -> None:
    res = adhoc.run_module("slurm_qos", {"name": "gpu", "max_tres_per_user": {"gres/gpu": "all"}})
    assert res.get("failed") is True
    assert res["msg"] == "qos gpu: max_tres_per_user: TRES gres/gpu='all': use a whole number"
    assert sacctmgr.calls() == []
