# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Slurm node states as slurmctld reports them (modules on the controller or on a node).

Pure Python, standard library only, importable on Python 3.8+.

``parse_show_node(text) -> {name: {"state", "flags", "reason", "slurmd_start"}}``
    Parses ``scontrol show node [names]`` (the multi-line form: ``Reason=`` holds spaces and has a
    line of its own). ``state`` is the base state (``IDLE``, ``MIXED``, ``DOWN`` ...), ``flags`` the
    rest of ``State=`` (``DRAIN``, ``NOT_RESPONDING`` ...).
``bare_reason(reason)``
    A reason without the ``[user@time]`` slurmctld appends, to set it again.
``drained(node)`` / ``responding(node)`` / ``admin_down(node)``
    What the role judges a node by.
``parse_ping(text) -> [(host, up)]``
    ``scontrol ping``'s controllers in SlurmctldHost order, each UP or not.
``in_charge(text)``
    The controller in charge: the first one ``scontrol ping`` says is UP (a backup takes over only
    while those before it are down), or None.
``standby(rc, out, err, me) -> (why standing by, why ping cannot tell)``
    For an agent on every controller: both None on the controller in charge (``me``, compared by
    short name); a pass that cannot tell acts nowhere.
"""

from __future__ import annotations

import re

_PING = re.compile(r"^Slurmctld\((?:primary|backup\d*)\) at (\S+) is (UP|DOWN)\s*$", re.MULTILINE)
_STAMP = re.compile(r"\s*\[[^\]\s@]+@[^\]\s]+\]\s*$")


def parse_show_node(text):
    nodes = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:  # 24.11 prints a line of spaces inside a node's block, before Reason=
            continue
        if line.startswith("NodeName="):
            name = line.split()[0].split("=", 1)[1]
            current = nodes.setdefault(name, {"state": "", "flags": [], "reason": "", "slurmd_start": ""})
        if current is None:
            continue
        if line.startswith("Reason="):
            current["reason"] = line[len("Reason=") :]
            continue
        for field in line.split():
            key, sep, value = field.partition("=")
            if not sep:
                continue
            if key == "State":
                parts = value.split("+")
                current["state"] = parts[0].rstrip("*")
                current["flags"] = parts[1:] + (["NOT_RESPONDING"] if parts[0].endswith("*") else [])
            elif key == "SlurmdStartTime":
                current["slurmd_start"] = "" if value in ("None", "Unknown") else value
    return nodes


def bare_reason(reason):
    return _STAMP.sub("", reason or "").strip()


def drained(node):
    return "DRAIN" in node.get("flags", [])


def responding(node):
    return "NOT_RESPONDING" not in node.get("flags", []) and node.get("state") not in ("", "UNKNOWN")


def admin_down(node):
    """DOWN without the DRAIN flag: with ReturnToService=2 the next registration returns it to service."""
    return node.get("state") == "DOWN" and not drained(node)


def parse_ping(text):
    return [(host, state == "UP") for host, state in _PING.findall(text or "")]


def in_charge(text):
    return next((host for host, up in parse_ping(text) if up), None)


def standby(rc, out, err, me):
    if not parse_ping(out):
        return None, f"scontrol ping: rc {rc}: {(err or out).strip()[:300] or 'no controller listed'}"
    lead = in_charge(out)
    if lead is None:
        return None, "scontrol ping: no controller is UP"
    if lead.split(".")[0] != me.split(".")[0]:
        return f"standby: {lead} is the controller in charge, not {me}", None
    return None, None
