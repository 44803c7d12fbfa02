# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_reservation's helpers (_slurm_reservation): scontrol's oneliner read, the one create, update or
delete a change needs, maintenance flags, refusals before any call (the module through ansible-core:
tests/functional)."""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm import _reservation as R

# scontrol show reservation maint --oneliner, as 24.11 prints it.
SHOW = (
    "ReservationName=maint StartTime=2026-12-03T12:00:00 EndTime=2026-12-03T14:00:00 Duration=02:00:00 "
    "Nodes=gpu[3-4] NodeCnt=2 CoreCnt=4 Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES "
    "TRES=cpu=4 Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) "
    "MaxStartDelay=(null)\n"
)


def test_the_oneliner_parses_and_slurm_s_own_flags_are_left_out() -> None:
    assert R.parse(SHOW) == {
        "name": "maint",
        "start_time": "2026-12-03T12:00:00",
        "duration": 7200,
        "nodes": ["gpu3", "gpu4"],
        "users": ["root"],
        "accounts": [],
        "flags": ["IGNORE_JOBS", "MAINT"],
        "partition": "",
        "state": "ACTIVE",
    }
    assert R.not_found(1, "", "Reservation maint not found") and not R.not_found(
        1, "", "Unable to contact slurm controller"
    )


def test_plan_creates_updates_only_what_differs_and_never_moves_a_start_to_now() -> None:
    have = R.parse(SHOW)
    same = R.wanted_fields(
        {"nodes": "gpu3,gpu4", "duration": "120", "users": ["root"], "maintenance": True, "start_time": "now"}
    )
    assert R.plan("maint", "present", same, have)["argv"] is None
    longer = R.wanted_fields({"nodes": ["gpu[3-5]"], "duration": "4:00:00", "flags": ["MAINT", "DAILY"]})
    assert R.plan("maint", "present", longer, have)["argv"] == [
        "scontrol",
        "update",
        "ReservationName=maint",
        "Duration=0-04:00:00",
        "Nodes=gpu[3-5]",
        "Flags+=DAILY",
        "Flags-=IGNORE_JOBS",
    ]
    new = R.wanted_fields({"nodes": "gpu3", "duration": "02:00:00", "users": ["root"], "maintenance": True})
    assert R.plan("m2", "present", new, None)["argv"] == [
        "scontrol",
        "create",
        "reservation",
        "ReservationName=m2",
        "StartTime=now",
        "Duration=0-02:00:00",
        "Nodes=gpu3",
        "Users=root",
        "Flags=IGNORE_JOBS,MAINT",
    ]
    assert R.plan("maint", "absent", {}, have)["argv"] == ["scontrol", "delete", "ReservationName=maint"]
    assert R.plan("maint", "absent", {}, None)["argv"] is None


def test_refusals_before_any_call() -> None:
    got = R.problems("maint", {"nodes": "gpu[3-", "duration": "-1", "start_time": "tomorrow"})
    assert (
        got[0]
        == "reservation maint: start_time 'tomorrow': use now, now+N[minutes|hours|days] or YYYY-MM-DDTHH:MM[:SS]"
    )
    assert got[1] == "reservation maint: duration '-1': a reservation needs an end (D-HH:MM:SS)"
    assert got[2].startswith("reservation maint: nodes: ") and "gpu[3-" in got[2]
    assert (
        got[3] == "reservation maint: give users or accounts (Slurm needs to know whom it is for; e.g. users: [root])"
    )
    assert len(got) == 4
    assert R.problems("bad name", {"state": "absent"}) == [
        "reservation name 'bad name': use letters, digits, '_', '.' or '-'"
    ]
