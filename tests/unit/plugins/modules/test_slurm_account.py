# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_account and its helpers (_sacctmgr): the account's own fields and its association's, the one
write a change needs, refusals before any call, a removal refused while jobs are active (named by id)
unless cancel_jobs; the module run by ansible-core against the sacctmgr stand-in."""

from __future__ import annotations

import adhoc

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm import _sacctmgr as S

# The two reads for account physics, as 24.11 prints them (--noheader --parsable2).
OWN = "physics|physics department|university\n"
ASSOC = """\
lab|physics||root|100|normal|normal,gpu-short|gres/gpu=8|||
lab|physics|alice|physics|1||normal,gpu-short||||
lab|physics|bob|physics|1||normal,gpu-short||||
"""


def test_the_two_reads_parse_into_account_fields_and_its_users() -> None:
    assert S.account_show_argv("Physics")[0][-2:] == ["name=physics", "format=Account,Descr,Org"]
    have = S.parse_account(OWN, ASSOC)
    assert have == {
        "description": "physics department",
        "organization": "university",
        "parent": "root",
        "fairshare": 100,
        "default_qos": "normal",
        "qos": ["gpu-short", "normal"],
        "grp_tres": {"gres/gpu": 8},
        "max_tres_per_job": {},
        "max_wall": None,
        "max_jobs": None,
        "users": ["alice", "bob"],
    }
    assert S.parse_account("", "") is None


def test_plan_creates_modifies_only_what_differs_and_deletes() -> None:
    have = S.parse_account(OWN, ASSOC)
    same = {"fairshare": "100", "qos": ["Normal", "gpu-short"], "grp_tres": "gres/gpu=8", "parent": "ROOT"}
    assert S.plan_account("physics", "present", same, have)["argv"] is None
    plan = S.plan_account("physics", "present", {"grp_tres": {"gres/gpu": 4}, "fairshare": "parent"}, have)
    assert plan["argv"] == [
        "sacctmgr",
        "--immediate",
        "modify",
        "account",
        "where",
        "name=physics",
        "set",
        "Fairshare=parent",
        "GrpTRES=gres/gpu=4",
    ]
    assert plan["before"] == {"grp_tres": {"gres/gpu": 8}, "fairshare": 100}
    new = S.plan_account("Chem", "present", {"parent": "science", "qos": ["normal"], "max_wall": "2-00:00:00"}, None)
    assert new["argv"] == [
        "sacctmgr",
        "--immediate",
        "add",
        "account",
        "chem",
        "MaxWall=2-00:00:00",
        "Parent=science",
        "QOS=normal",
    ]
    gone = S.plan_account("physics", "absent", {}, have, cluster="lab")
    assert gone["argv"] == ["sacctmgr", "--immediate", "delete", "account", "where", "name=physics", "cluster=lab"]


def test_refusals_name_the_account_the_field_and_the_value() -> None:
    assert S.account_problems("phys ics", {}) == [
        "account name 'phys ics': use 1-64 letters, digits, '_', '.' or '-', starting with a letter, digit or '_' "
        "(sacctmgr stores it lower-cased)"
    ]
    assert S.account_problems("p", {"qos": ["normal"], "default_qos": "gpu-short", "fairshare": "lots"}) == [
        "account p: fairshare: 'lots' is not a whole number of shares or 'parent'",
        "account p: default_qos 'gpu-short' is not in its qos list ['normal']",
    ]


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
