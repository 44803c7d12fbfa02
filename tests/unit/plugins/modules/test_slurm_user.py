# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_user's helpers (_sacctmgr): the user's fields and one association per account, the writes in
order, associations kept unless listed for removal, refusals before any call (the module through
ansible-core: tests/functional)."""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm import _sacctmgr as S

# The two reads for user alice, as 24.11 prints them (--noheader --parsable2).
OWN = "alice|physics|None\n"
ASSOC = """\
lab|chem|alice|normal||||||
lab|physics|alice|normal,gpu-short|normal|gres/gpu=2||1-00:00:00|
"""


def test_the_two_reads_parse_into_the_user_and_its_associations() -> None:
    have = S.parse_user(OWN, ASSOC)
    assert have == {
        "default_account": "physics",
        "admin_level": "none",
        "accounts": {
            "chem": {
                "qos": ["normal"],
                "default_qos": None,
                "grp_tres": {},
                "max_tres_per_job": {},
                "max_wall": None,
                "max_jobs": None,
            },
            "physics": {
                "qos": ["gpu-short", "normal"],
                "default_qos": "normal",
                "grp_tres": {"gres/gpu": 2},
                "max_tres_per_job": {},
                "max_wall": 86400,
                "max_jobs": None,
            },
        },
    }
    assert S.parse_user("", "") is None


def test_plan_adds_changes_and_removes_in_order_and_keeps_what_is_not_listed() -> None:
    have = S.parse_user(OWN, ASSOC)
    assert S.plan_user("alice", "present", {"grp_tres": "gres/gpu=2"}, ["physics"], [], have)["argvs"] == []
    plan = S.plan_user(
        "alice", "present", {"default_account": "bio", "max_jobs": 4}, ["physics", "bio"], ["chem"], have
    )
    assert plan["argvs"] == [
        ["sacctmgr", "--immediate", "add", "user", "alice", "Account=bio"],
        ["sacctmgr", "--immediate", "modify", "user", "where", "name=alice", "set", "DefaultAccount=bio"],
        ["sacctmgr", "--immediate", "modify", "user", "where", "name=alice", "account=physics", "set", "MaxJobs=4"],
        ["sacctmgr", "--immediate", "modify", "user", "where", "name=alice", "account=bio", "set", "MaxJobs=4"],
        ["sacctmgr", "--immediate", "delete", "user", "where", "name=alice", "account=chem"],
    ]
    assert plan["before"]["accounts"] == ["chem", "physics"] and plan["after"]["accounts"] == ["bio", "physics"]
    new = S.plan_user("bob", "present", {"grp_tres": {"gres/gpu": 1}, "admin_level": "Operator"}, ["physics"], [], None)
    assert new["argvs"] == [
        [
            "sacctmgr",
            "--immediate",
            "add",
            "user",
            "bob",
            "Account=physics",
            "DefaultAccount=physics",
            "AdminLevel=operator",
            "GrpTRES=gres/gpu=1",
        ],
    ]


def test_refusals_before_any_call() -> None:
    assert S.user_problems("alice", {"default_account": "bio"}, ["physics"], ["physics"]) == [
        "user alice: physics both in accounts and remove_accounts",
        "user alice: default_account 'bio' is not in its accounts ['physics']",
    ]
    assert S.user_problems("al ice", {"admin_level": "root"}, ["physics"], []) == [
        "user name 'al ice': use the login name (letters, digits, '_', '.', '-')",
        "user al ice: admin_level: 'root' is not one of None, Operator, Administrator",
    ]
