# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-only stand-in for scontrol, squeue, scancel, systemctl and journalctl (this host runs no
slurmctld and no systemd). The tests put a directory first on PATH holding one small script per
command, which runs ``python slurm_standin.py <command> <args>``; the cluster lives in the JSON
file $STANDIN_STATE and every call is appended to its "log".

The state: ``nodes`` (name -> state, flags, reason, start), ``jobs`` ([id, user, state, node]),
``jobs_end_after`` (squeue calls before the jobs end by themselves; -1 never), ``on_restart``
(``register``: the node re-registers with a new SlurmdStartTime, and with ReturnToService=2 a DOWN
node without DRAIN returns to IDLE as slurmctld does; ``silent``: it never re-registers; ``fail``:
systemctl restart fails).
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    path = os.environ["STANDIN_STATE"]
    with open(path, encoding="utf-8") as handle:
        st = json.load(handle)
    cmd, args = sys.argv[1], sys.argv[2:]
    st["log"].append(" ".join([cmd, *args]))
    rc = run(st, cmd, args)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(st, handle)
    return rc


def show(name, node):
    state = "+".join([node["state"], *node["flags"]])
    print(f"NodeName={name} Arch=x86_64 CoresPerSocket=1")
    print(f"   State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A")
    print(f"   BootTime=2026-12-01T10:00:00 SlurmdStartTime={node['start'] or 'None'}")
    print("   ")  # Slurm 24.11 prints a line of spaces here
    if node["reason"]:
        print(f"   Reason={node['reason']} [root@2026-12-01T11:00:00]")
    print()


def run(st, cmd, args):
    nodes = st["nodes"]
    if cmd == "scontrol" and args[:2] == ["show", "node"]:
        names = args[2].split(",") if len(args) > 2 else sorted(nodes)
        if any(n not in nodes for n in names):
            print(f"Node {names[0]} not found", file=sys.stderr)
            return 1
        for name in names:
            show(name, nodes[name])
        return 0
    if cmd == "scontrol" and args[0] == "update":
        fields = dict(a.split("=", 1) for a in args[1:])
        for name in fields["nodename"].split(","):
            node = nodes[name]
            want = fields["state"].lower()
            if want == "drain":
                node["flags"] = sorted({*node["flags"], "DRAIN"})
            elif want == "undrain":
                node["flags"] = [f for f in node["flags"] if f != "DRAIN"]
            elif want == "down":
                node["state"] = "DOWN"
            if "reason" in fields:
                node["reason"] = fields["reason"]
        return 0
    if cmd == "scontrol" and args == ["ping"]:
        print("Slurmctld(primary) at ctl is UP")
        return 0
    if cmd == "squeue":
        wanted = next(a for a in args if a.startswith("--nodelist=")).split("=", 1)[1].split(",")
        if st["jobs_end_after"] == 0:
            st["jobs"] = []
        st["jobs_end_after"] -= 1
        for jid, user, state, node in st["jobs"]:
            if node in wanted:
                print(f"{jid}|{user}|{state}")
        return 0
    if cmd == "scancel":
        st["jobs"] = [j for j in st["jobs"] if j[0] not in args]
        return 0
    if cmd == "systemctl" and args[0] == "restart":
        if st["on_restart"] == "fail":
            print("Job for slurmd.service failed", file=sys.stderr)
            return 1
        if st["on_restart"] == "register":
            for node in nodes.values():
                node["start"] = "2026-12-01T12:00:00"
                node["flags"] = [f for f in node["flags"] if f != "NOT_RESPONDING"]
                if node["state"] == "DOWN":
                    node["state"] = "IDLE"
                    if "DRAIN" not in node["flags"]:
                        node["reason"] = ""
        return 0
    if cmd == "systemctl" and args[0] == "is-active":
        print("active")
        return 0
    if cmd in ("systemctl", "journalctl"):
        print("slurmd: error: the stand-in's journal line")
        return 0
    print(f"stand-in: {cmd} {args} not handled", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
