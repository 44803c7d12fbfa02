# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_restart's and slurm_nodes_drain's reading of scontrol show node (the modules through
ansible-core against stand-ins: tests/functional)."""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import (
    admin_down,
    bare_reason,
    parse_show_node,
    responding,
)

# scontrol show node, as Slurm 24.11 prints it in the lab (lines cut short; the line of three
# spaces before Reason= is Slurm's).
SHOW = """\
NodeName=gpu1 Arch=x86_64 CoresPerSocket=4
   CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=0.10
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   BootTime=2026-12-01T10:00:00 SlurmdStartTime=2026-12-01T10:01:02
   CurrentWatts=0 AveWatts=0
   \n   Reason=disk check, ticket 42 [alice@2026-12-01T11:00:00]

NodeName=cpu1 Arch=x86_64 CoresPerSocket=4
   State=DOWN*+NOT_RESPONDING ThreadsPerCore=1 TmpDisk=0
   BootTime=None SlurmdStartTime=None
   Reason=Not responding [slurm@2026-12-01T11:05:00]
"""


def test_show_node_gives_state_flags_reason_and_start() -> None:
    nodes = parse_show_node(SHOW)
    assert nodes["gpu1"] == {
        "state": "IDLE",
        "flags": ["DRAIN"],
        "reason": "disk check, ticket 42 [alice@2026-12-01T11:00:00]",
        "slurmd_start": "2026-12-01T10:01:02",
    }
    assert nodes["cpu1"]["state"] == "DOWN" and nodes["cpu1"]["slurmd_start"] == ""
    assert not responding(nodes["cpu1"]) and responding(nodes["gpu1"])
    assert admin_down(nodes["cpu1"]) and not admin_down(nodes["gpu1"])
    assert bare_reason(nodes["gpu1"]["reason"]) == "disk check, ticket 42"
