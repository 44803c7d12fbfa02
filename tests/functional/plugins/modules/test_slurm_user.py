# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_user run by ansible-core against the sacctmgr stand-in: associations kept unless listed for
removal, removals refused while jobs are active."""

from __future__ import annotations

from . import adhoc


def test_module_creates_then_changes_nothing_and_removes_only_on_request(sacctmgr) -> None:
    for acct in ("physics", "chem"):
        assert adhoc.run_module("slurm_account", {"name": acct})["changed"] is True
    args = {"name": "alice", "accounts": ["physics", "chem"], "default_account": "physics", "grp_tres": {"gres/gpu": 2}}
    first = adhoc.run_module("slurm_user", args)
    assert first["changed"] is True and first["changes"] == ["state"], first
    user = sacctmgr.state()["users"]["alice"]
    assert user["DefaultAccount"] == "physics" and sorted(user["assocs"]) == ["chem", "physics"]
    assert user["assocs"]["chem"]["GrpTRES"] == "gres/gpu=2"
    writes = len(sacctmgr.writes())
    again = adhoc.run_module("slurm_user", args)
    assert again["changed"] is False and len(sacctmgr.writes()) == writes
    # physics alone in the model: chem is kept
    assert adhoc.run_module("slurm_user", dict(args, accounts=["physics"]))["changed"] is False
    state = sacctmgr.state()
    state["jobs"]["alice/chem"] = ["31"]
    sacctmgr.set_state(state)
    refused = adhoc.run_module("slurm_user", dict(args, accounts=["physics"], remove_accounts=["chem"]))
    assert refused.get("failed") is True and refused["jobs"] == ["31"]
    assert refused["msg"].startswith("user alice in account chem: not removed, job(s) 31 run or wait under it")
    done = adhoc.run_module("slurm_user", dict(args, accounts=["physics"], remove_accounts=["chem"], cancel_jobs=True))
    assert done["changed"] is True and ["scancel", "--user=alice", "--account=chem"] in done["commands"]
    assert sorted(sacctmgr.state()["users"]["alice"]["assocs"]) == ["physics"]
