# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Slurm reservations through ``scontrol``: read one, compare, and the one write that makes it as
wanted. Pure helpers; argv lists, never a shell.

``scontrol show reservation NAME --oneliner`` exits 1 with "Reservation NAME not found" when there
is none. Nodes compare as host sets (``gpu[1-2]`` == ``gpu1,gpu2``), users and accounts as sets,
times as seconds. A start time of ``now`` is only used to create: an existing reservation's start
is never moved to "now".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError, compress, expand
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._sacctmgr import check_name, format_time, parse_time

# What a maintenance window needs: no job may start on its nodes (MAINT also keeps them out of
# utilisation accounting), and it can be made over nodes that still run jobs (IGNORE_JOBS).
MAINTENANCE_FLAGS = ("MAINT", "IGNORE_JOBS")
# Flags Slurm sets by itself (SPEC_NODES: nodes were named), not compared.
SLURM_SET_FLAGS = frozenset({"SPEC_NODES"})
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_FIELD = re.compile(r"(\w+)=(\S*)")
_START = re.compile(r"^(now(\+\d+(minutes|hours|days)?)?|\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?)$")


def show_argv(name: str) -> list[str]:
    return ["scontrol", "show", "reservation", name, "--oneliner"]


def not_found(rc: int, out: str, err: str) -> bool:
    return rc != 0 and "not found" in f"{out} {err}"


def _names(value: Any) -> list[str]:
    if value in (None, "", "(null)"):
        return []
    parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return sorted({str(p).strip() for p in parts if str(p).strip() and str(p).strip() != "(null)"})


def _nodes(value: Any) -> list[str]:
    if value in (None, "", "(null)"):
        return []
    parts = value if isinstance(value, (list, tuple)) else [value]
    return sorted({h for p in parts for h in expand(str(p))})


def parse(text: str) -> dict[str, Any]:
    """A reservation's fields from ``scontrol show reservation NAME --oneliner``."""
    fields = dict(_FIELD.findall(text))
    return {
        "name": fields.get("ReservationName", ""),
        "start_time": fields.get("StartTime", ""),
        "duration": parse_time(fields.get("Duration", "")),
        "nodes": _nodes(fields.get("Nodes")),
        "users": _names(fields.get("Users")),
        "accounts": _names(fields.get("Accounts")),
        "flags": sorted(f.upper() for f in _names(fields.get("Flags")) if f.upper() not in SLURM_SET_FLAGS),
        "partition": "" if fields.get("PartitionName") in (None, "(null)") else fields["PartitionName"],
        "state": fields.get("State", ""),
    }


def wanted_fields(params: Mapping[str, Any]) -> dict[str, Any]:
    """The given options as compared (None: not managed)."""
    flags = params.get("flags")
    if flags is None and params.get("maintenance"):
        flags = list(MAINTENANCE_FLAGS)
    return {
        "start_time": params.get("start_time"),
        "duration": None if params.get("duration") is None else parse_time(params["duration"]),
        "nodes": None if params.get("nodes") is None else _nodes(params["nodes"]),
        "users": None if params.get("users") is None else _names(params["users"]),
        "accounts": None if params.get("accounts") is None else _names(params["accounts"]),
        "flags": None if flags is None else sorted(str(f).upper() for f in flags),
        "partition": params.get("partition"),
    }


def problems(name: Any, params: Mapping[str, Any]) -> list[str]:
    """Refusals before any call: the name, times, nodes, users/accounts, and who the reservation is for."""
    out = []
    if not _NAME.match(str(name or "")):
        out.append(f"reservation name {name!r}: use letters, digits, '_', '.' or '-'")
    if params.get("state", "present") == "absent":
        return out
    label = f"reservation {name}"
    if params.get("start_time") is not None and not _START.match(str(params["start_time"])):
        out.append(
            f"{label}: start_time {params['start_time']!r}: use now, now+N[minutes|hours|days] or YYYY-MM-DDTHH:MM[:SS]"
        )
    try:
        if params.get("duration") is not None and parse_time(params["duration"]) is None:
            out.append(f"{label}: duration {params['duration']!r}: a reservation needs an end (D-HH:MM:SS)")
    except ValueError as exc:
        out.append(f"{label}: duration: {exc}")
    try:
        _nodes(params.get("nodes"))
    except HostlistError as exc:
        out.append(f"{label}: nodes: {exc}")
    for acct in _names(params.get("accounts")):
        out.extend(p for p in [check_name("account", acct)] if p)
    if not _names(params.get("users")) and not _names(params.get("accounts")):
        out.append(f"{label}: give users or accounts (Slurm needs to know whom it is for; e.g. users: [root])")
    return out


def _value(key: str, value: Any) -> str:
    if key == "duration":
        return format_time(value)
    if key == "nodes":
        return compress(value) if value else ""
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


KEYS = {
    "start_time": "StartTime",
    "duration": "Duration",
    "nodes": "Nodes",
    "users": "Users",
    "accounts": "Accounts",
    "partition": "PartitionName",
}


def plan(name: str, state: str, wanted: Mapping[str, Any], have: Mapping[str, Any] | None) -> dict[str, Any]:
    """The one scontrol write (``argv``, None for none), with ``before``/``after`` and ``changes``."""
    if state == "absent":
        if have is None:
            return {"argv": None, "before": {}, "after": {}, "changes": []}
        return {
            "argv": ["scontrol", "delete", f"ReservationName={name}"],
            "before": dict(have),
            "after": {},
            "changes": ["state"],
        }
    managed = {k: v for k, v in wanted.items() if v is not None}
    if have is None:
        sets = [f"{KEYS[k]}={_value(k, v)}" for k, v in sorted(managed.items()) if k in KEYS and v not in ([], "")]
        if "start_time" not in managed:
            sets.insert(0, "StartTime=now")
        if managed.get("flags"):
            sets.append(f"Flags={','.join(managed['flags'])}")
        argv = ["scontrol", "create", "reservation", f"ReservationName={name}", *sets]
        return {"argv": argv, "before": {}, "after": managed, "changes": ["state", *sorted(managed)]}
    # an existing reservation's start is compared only when given as a date (never moved to "now")
    compare = {k: v for k, v in managed.items() if not (k == "start_time" and str(v).startswith("now"))}
    if "start_time" in compare:
        compare["start_time"] = str(compare["start_time"])[:19]
        if len(compare["start_time"]) == 16:
            compare["start_time"] += ":00"
    changes = sorted(k for k, v in compare.items() if have.get(k) != v)
    before = {k: have.get(k) for k in compare}
    if not changes:
        return {"argv": None, "before": before, "after": compare, "changes": []}
    sets = [f"{KEYS[k]}={_value(k, compare[k])}" for k in changes if k in KEYS]
    if "flags" in changes:
        added = [f for f in compare["flags"] if f not in have["flags"]]
        removed = [f for f in have["flags"] if f not in compare["flags"]]
        sets += ([f"Flags+={','.join(added)}"] if added else []) + ([f"Flags-={','.join(removed)}"] if removed else [])
    argv = ["scontrol", "update", f"ReservationName={name}", *sets]
    return {"argv": argv, "before": before, "after": compare, "changes": changes}
