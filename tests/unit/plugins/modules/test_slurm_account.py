# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_account's helpers (_sacctmgr): the account's own fields and its association's, the one write a
change needs, refusals before any call (the module through ansible-core: tests/functional)."""

from __future__ import annotations

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
    assert S.account_problems("p", {"qos": ["normal"], "default_qos": "gpu-short", "fairshare": "lots"}) == [
        "account p: fairshare: 'lots' is not a whole number of shares or 'parent'",
        "account p: default_qos 'gpu-short' is not in its qos list ['normal']",
    ]
