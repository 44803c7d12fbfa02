# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which controller is in charge, from ``scontrol ping`` as Slurm prints it (scontrol.c ``_print_ping``:
``primary``, ``backup`` with two controllers, ``backupN`` with more; the banner when one is down)."""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import in_charge, parse_ping

BANNER = "*****************************************\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n" + "*" * 41 + "\n"


def test_one_controller() -> None:
    assert parse_ping("Slurmctld(primary) at ctl is UP\n") == [("ctl", True)]
    assert in_charge("Slurmctld(primary) at ctl is UP\n") == "ctl"


def test_the_backup_is_in_charge_only_while_the_primary_is_down() -> None:
    both = "Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is UP\n"
    assert in_charge(both) == "ctl1"
    failed_over = "Slurmctld(primary) at ctl1 is DOWN\nSlurmctld(backup) at ctl2 is UP\n" + BANNER
    assert parse_ping(failed_over) == [("ctl1", False), ("ctl2", True)]
    assert in_charge(failed_over) == "ctl2"
    three = "Slurmctld(primary) at a is DOWN\nSlurmctld(backup1) at b is DOWN\nSlurmctld(backup2) at c.x.y is UP\n"
    assert in_charge(three) == "c.x.y"


def test_nothing_up_or_nothing_listed() -> None:
    assert in_charge("Slurmctld(primary) at ctl is DOWN\n" + BANNER) is None
    assert parse_ping("") == [] and in_charge("slurm_load_ctl_conf error") is None
