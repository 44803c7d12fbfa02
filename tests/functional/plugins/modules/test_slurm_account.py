# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_account run by ansible-core against the sacctmgr stand-in: the writes a change needs, a missing
parent named, a removal refused while jobs are active (named by id) unless cancel_jobs."""

from __future__ import annotations

from . import adhoc


def test_module_creates_then_changes_nothing_then_diffs(sacctmgr) -> None:
    args = {
        "name": "Physics",
        "description": "Physics",
        "fairshare": 100,
        "qos": ["normal"],
        "grp_tres": {"gres/gpu": 8},
    }
    assert adhoc.run_module("slurm_account", args, "--check")["changes"] == [
        "state",
        "description",
        "fairshare",
        "grp_tres",
        "qos",
    ]
    assert sacctmgr.writes() == []
    first = adhoc.run_module("slurm_account", args)
    assert first["changed"] is True and first["name"] == "physics"
    assert sacctmgr.state()["accounts"]["physics"]["GrpTRES"] == "gres/gpu=8"
    again = adhoc.run_module("slurm_account", dict(args, grp_tres="gres/gpu=8", qos=["NORMAL"]))
    assert again["changed"] is False and len(sacctmgr.writes()) == 1
    diff = adhoc.run_module("slurm_account", dict(args, grp_tres={"gres/gpu": 2}), "--diff")
    assert diff["changes"] == ["grp_tres"] and diff["diff"]["before"]["grp_tres"] == {"gres/gpu": 8}
    assert diff["diff"]["after"]["grp_tres"] == {"gres/gpu": 2}


def test_module_names_a_missing_parent(sacctmgr) -> None:
    res = adhoc.run_module("slurm_account", {"name": "chem", "parent": "science"})
    assert res.get("failed") is True
    # looked up first; sacctmgr's own refusal ("No parent account ...") is sorted by outcome()
    assert res["msg"] == "account chem: parent account 'science' does not exist"
    assert sacctmgr.writes() == []


def test_module_looks_up_a_new_parent_before_moving_an_account(sacctmgr) -> None:
    adhoc.run_module("slurm_account", {"name": "chem"})
    writes = len(sacctmgr.writes())
    res = adhoc.run_module("slurm_account", {"name": "chem", "parent": "science"})
    assert res.get("failed") is True and res["msg"] == "account chem: parent account 'science' does not exist"
    assert len(sacctmgr.writes()) == writes
    adhoc.run_module("slurm_account", {"name": "science"})
    moved = adhoc.run_module("slurm_account", {"name": "chem", "parent": "science"})
    assert moved["changed"] is True and sacctmgr.state()["accounts"]["chem"]["ParentName"] == "science"


def test_module_refuses_a_removal_with_active_jobs_unless_told_to_cancel(sacctmgr) -> None:
    adhoc.run_module("slurm_account", {"name": "physics"})
    state = sacctmgr.state()
    state["jobs"] = {"physics": ["12", "9"]}
    sacctmgr.set_state(state)
    refused = adhoc.run_module("slurm_account", {"name": "physics", "state": "absent"})
    assert refused.get("failed") is True and refused["jobs"] == ["9", "12"]
    assert refused["msg"] == (
        "account physics: not removed, job(s) 9, 12 run or wait under it; end them, or set cancel_jobs: true"
    )
    assert "physics" in sacctmgr.state()["accounts"]
    done = adhoc.run_module("slurm_account", {"name": "physics", "state": "absent", "cancel_jobs": True})
    assert done["changed"] is True and done["commands"][-1] == ["scancel", "--account=physics"]
    assert sacctmgr.state()["accounts"] == {}
