# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_reservation run by ansible-core against an scontrol stand-in (standins/sacctmgr_standin.py
--as-scontrol)."""

from __future__ import annotations

from . import adhoc


def test_module_makes_a_maintenance_window_then_changes_nothing_then_releases_it(sacctmgr) -> None:
    args = {"name": "maint-gpu3", "nodes": "gpu3", "duration": "02:00:00", "users": ["root"], "maintenance": True}
    check = adhoc.run_module("slurm_reservation", args, "--check")
    assert check["changed"] is True and check["commands"][0][:3] == ["scontrol", "create", "reservation"]
    assert "reservations" not in sacctmgr.state() or sacctmgr.state()["reservations"] == {}
    made = adhoc.run_module("slurm_reservation", args)
    assert made["changed"] is True, made
    assert sacctmgr.state()["reservations"]["maint-gpu3"]["Flags"] == "IGNORE_JOBS,MAINT,SPEC_NODES"
    again = adhoc.run_module("slurm_reservation", dict(args, duration="120"))
    assert again["changed"] is False and again["reservation"]["nodes"] == ["gpu3"]
    longer = adhoc.run_module("slurm_reservation", dict(args, duration="03:00:00"), "--diff")
    assert longer["changes"] == ["duration"] and longer["diff"]["after"]["duration"] == 10800
    assert sacctmgr.state()["reservations"]["maint-gpu3"]["Duration"] == "0-03:00:00"
    gone = adhoc.run_module("slurm_reservation", {"name": "maint-gpu3", "state": "absent"})
    assert gone["changed"] is True and sacctmgr.state()["reservations"] == {}
    assert adhoc.run_module("slurm_reservation", {"name": "maint-gpu3", "state": "absent"})["changed"] is False
