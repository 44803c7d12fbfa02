# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""What a Slurm configuration change needs, by Slurm major version: one table, pure functions.

Public API
----------
``parse_version(text) -> tuple``
    ``"slurm 22.05.8"`` / ``"slurm-wlm 24.11.5"`` / ``"24.11"`` -> ``(22, 5)`` / ``(24, 11)``.
``version_from_output(text) -> str``
    The version in ``slurmd -V`` / package-manager output (``"24.11.5"``), or ``""``.
``behaviour(version) -> dict``
    The row of :data:`VERSION_TABLE` in force for that version.
``releases_between(old, new) -> int`` / ``upgrade_path(old, new) -> list``
    How many release series an upgrade crosses, and the shortest path Slurm supports.
``version_problems(hosts, upgrade) -> list``
    The hosts whose Slurm change (a package upgrade, packages changed outside the role, a new
    host of another release) Slurm does not support, each named with the supported path.
``change_plan(old_text, new_text, version, topology_changed=False) -> dict``
    Which daemons a change of ``slurm.conf`` (and of the topology file) needs restarted across
    the cluster, and whether ``scontrol reconfigure`` suffices (a topology file's content:
    reconfigure; ``TopologyPlugin``: every daemon restarts). What a change of one host's other
    files needs (gres.conf, cgroup.conf, oci.conf, slurmdbd.conf, unit drop-ins) is decided with
    this result, per host, by ``slurm/_schedule.host_schedule``.

Facts the table encodes (Slurm's release notes and the slurm.conf man page of each release):

* 22.05-23.02: ``scontrol reconfigure`` with a bad slurm.conf kills slurmctld (we validate the
  candidate first). Adding or removing nodes needs slurmctld and every slurmd restarted.
* 23.11-24.05: a bad config is refused by reconfigure and the old one keeps running; adding or
  removing nodes still needs every daemon restarted.
* 24.11+: adding or removing nodes takes effect with a reconfigure.
* In every release some keys only take effect on a restart of slurmctld, and some need every
  daemon restarted (``GresTypes``, ``SelectType``, ...). Running jobs survive restarts of
  slurmctld and slurmd; a node vanishing from slurm.conf does not (NODE_FAIL), which is why the
  role never drops nodes by accident.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import parse_slurm_conf
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import expand

__all__ = [
    "SLURMD_RESTART_FILES",
    "VERSION_TABLE",
    "behaviour",
    "change_plan",
    "parse_version",
    "releases_between",
    "upgrade_path",
    "version_from_output",
    "version_problems",
]

# Files beside slurm.conf whose change takes effect on a slurmd restart, in every release: slurmd
# reads gres.conf and cgroup.conf at start; slurmstepd reads oci.conf and plugstack.conf (with
# the files it includes) for each step, and slurmd restarts so that a configless node fetches them
# and no step starts between the old and the new file. A configless slurmd fetches the files
# slurmctld serves (a reconfigure first). ``change_plan`` and the role read this one table.
SLURMD_RESTART_FILES = ("gres.conf", "cgroup.conf", "oci.conf", "plugstack.conf", "plugstack.conf.d/pyxis.conf")

# Keys whose change needs a slurmctld restart (lower-case, as Slurm matches keys).
_CTLD_RESTART = frozenset(
    k.lower()
    for k in (
        "AccountingStorageEnforce",
        "AccountingStorageHost",
        "AccountingStoragePort",
        "AccountingStorageType",
        "AuthAltParameters",
        "AuthAltTypes",
        "AuthType",
        "ClusterName",
        "MaxJobCount",
        "ProctrackType",
        "SchedulerType",
        "SlurmctldHost",
        "SlurmctldParameters",
        "SlurmctldPort",
        "SlurmctldPidFile",
        "SlurmUser",
        "StateSaveLocation",
    )
)
# Keys whose change needs slurmctld and every slurmd restarted.
_ALL_RESTART = frozenset(
    k.lower()
    for k in (
        "AuthType",
        "CredType",
        "GresTypes",
        "JobAcctGatherType",
        "MpiDefault",
        "PrologFlags",
        "ProctrackType",
        "SelectType",
        "SelectTypeParameters",
        "SlurmdPort",
        "SlurmdSpoolDir",
        "SwitchType",
        "TaskPlugin",
        "TopologyPlugin",
    )
)

# One row per release series where behaviour changes; a version uses the newest row <= it.
VERSION_TABLE: tuple[dict[str, Any], ...] = (
    {
        "since": (22, 5),
        "bad_config_kills_slurmctld": True,
        "node_change": "restart",
    },
    {
        "since": (23, 11),
        "bad_config_kills_slurmctld": False,
        "node_change": "restart",
    },
    {
        "since": (24, 11),
        "bad_config_kills_slurmctld": False,
        "node_change": "reconfigure",
    },
)

OLDEST_SUPPORTED = VERSION_TABLE[0]["since"]

_VERSION_RE = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?")


def parse_version(text: Any) -> tuple[int, int]:
    """Return (major, minor) from any Slurm version string; ValueError quotes what it got."""
    if isinstance(text, (tuple, list)) and len(text) >= 2:
        return int(text[0]), int(text[1])
    match = _VERSION_RE.search(str(text))
    if not match:
        raise ValueError(f"cannot read a Slurm version from {text!r}")
    return int(match.group(1)), int(match.group(2))


_FULL_VERSION_RE = re.compile(r"(?<![\d.])(\d{2})\.(\d{2})(?:\.(\d+))?")


def version_from_output(text: Any) -> str:
    """``"slurm 24.11.5"`` / ``"24.11.5-1"`` / ``"slurm-wlm 22.05.8"`` -> ``"24.11.5"``; ``""`` when none."""
    match = _FULL_VERSION_RE.search(str(text or ""))
    if not match:
        return ""
    return ".".join(g for g in match.groups() if g is not None)


def behaviour(version: Any) -> dict[str, Any]:
    ver = parse_version(version)
    if ver < OLDEST_SUPPORTED:
        raise ValueError(
            f"Slurm {ver[0]}.{ver[1]:02d} is older than the oldest supported release "
            f"{OLDEST_SUPPORTED[0]}.{OLDEST_SUPPORTED[1]:02d}"
        )
    row = VERSION_TABLE[0]
    for candidate in VERSION_TABLE:
        if candidate["since"] <= ver:
            row = candidate
    return dict(row)


# The words of a node line that say what the node has or where it is: a change to one of them on a
# busy node ends its jobs (NODE_FAIL) when the daemons take the new definition. Features, Weight,
# State and the like only steer the scheduler.
NODE_RESOURCE_WORDS = frozenset(
    w.lower()
    for w in (
        "CPUs",
        "Boards",
        "SocketsPerBoard",
        "Sockets",
        "CoresPerSocket",
        "ThreadsPerCore",
        "RealMemory",
        "Gres",
        "CpuSpecList",
        "CoreSpecCount",
        "MemSpecLimit",
        "NodeAddr",
        "NodeHostname",
    )
)


def _resources(definition: str) -> dict[str, str]:
    words = (w.partition("=") for w in definition.split())
    return {k.lower(): v for k, _eq, v in words if k.lower() in NODE_RESOURCE_WORDS}


def _expand_node_names(nodes: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for expr, definition in nodes.items():
        if expr.upper() == "DEFAULT":
            continue
        for name in expand(expr):
            out[name] = definition
    return out


def change_plan(
    old_text: str | None,
    new_text: str,
    version: Any,
    topology_changed: bool = False,
) -> dict[str, Any]:
    """Decide what a change needs: restarts per daemon, or a reconfigure.

    ``old_text`` None/empty means a first install: daemons are simply started, nothing to plan.
    Returns ``{"restart": [daemons], "reconfigure": bool, "reasons": [text], "added_nodes": [...],
    "removed_nodes": [...], "removed_partitions": [...], "resized_nodes": [...]}`` with daemons among
    ``slurmdbd``, ``slurmctld``, ``slurmd``. ``removed_partitions`` (gone or renamed) and
    ``resized_nodes`` (kept, but with other resources or address: NODE_RESOURCE_WORDS) are what
    would end the jobs in them or on them: the role refuses while jobs are there.
    """
    row = behaviour(version)
    restart = set()
    reasons = []
    reconfigure = False
    added: list = []
    removed: list = []
    removed_partitions: list = []
    resized: list = []
    if old_text:
        old = parse_slurm_conf(old_text)
        new = parse_slurm_conf(new_text)
        changed_keys = sorted(
            k for k in set(old["keys"]) | set(new["keys"]) if old["keys"].get(k) != new["keys"].get(k)
        )
        for key in changed_keys:
            if key in _ALL_RESTART:
                restart.update(("slurmctld", "slurmd"))
                reasons.append(f"{key} changed: slurmctld and every slurmd restart")
            elif key in _CTLD_RESTART:
                restart.add("slurmctld")
                reasons.append(f"{key} changed: slurmctld restarts")
            else:
                reconfigure = True
                reasons.append(f"{key} changed: reconfigure")
        old_nodes = _expand_node_names(old["nodes"])
        new_nodes = _expand_node_names(new["nodes"])
        added = sorted(set(new_nodes) - set(old_nodes))
        removed = sorted(set(old_nodes) - set(new_nodes))
        redefined = sorted(n for n in set(old_nodes) & set(new_nodes) if old_nodes[n] != new_nodes[n])
        resized = [n for n in redefined if _resources(old_nodes[n]) != _resources(new_nodes[n])]
        removed_partitions = sorted(
            p for p in old["partitions"] if p.upper() != "DEFAULT" and p not in new["partitions"]
        )
        node_changes = {"nodes added or removed": added or removed, "node definitions changed": redefined}
        for what in (w for w, hit in node_changes.items() if hit):
            if row["node_change"] == "restart":
                restart.update(("slurmctld", "slurmd"))
                reasons.append(f"{what}: slurmctld and every slurmd restart before 24.11")
            else:
                reconfigure = True
                reasons.append(f"{what}: reconfigure (24.11+)")
        if old["partitions"] != new["partitions"]:
            reconfigure = True
            reasons.append("partitions changed: reconfigure")
    # topology.conf / topology.yaml: every daemon re-reads it on a reconfigure (the plugin itself,
    # TopologyPlugin in slurm.conf, needs every daemon restarted: _ALL_RESTART).
    if topology_changed and old_text:
        reconfigure = True
        reasons.append("the topology file changed: reconfigure")
    # A restart of slurmctld re-reads everything: a reconfigure on top would only repeat it.
    if "slurmctld" in restart:
        reconfigure = False
    order = [d for d in ("slurmdbd", "slurmctld", "slurmd") if d in restart]
    return {
        "restart": order,
        "reconfigure": reconfigure,
        "reasons": reasons,
        "added_nodes": added,
        "removed_nodes": removed,
        "removed_partitions": removed_partitions,
        "resized_nodes": resized,
        "bad_config_kills_slurmctld": row["bad_config_kills_slurmctld"],
    }


# Slurm's release series, oldest first. After 25.11 a release comes every May and November.
RELEASES: tuple[tuple[int, int], ...] = (
    (20, 2),
    (20, 11),
    (21, 8),
    (22, 5),
    (23, 2),
    (23, 11),
    (24, 5),
    (24, 11),
    (25, 5),
    (25, 11),
)
# slurmdbd and slurmctld read the database and the state files of at most this many earlier
# releases, and slurmctld talks to slurmd and client commands that many releases older (Slurm's
# upgrade guide: two, three from 24.11 on).
UPGRADE_REACH_BEFORE_24_11 = 2
UPGRADE_REACH_FROM_24_11 = 3


def _release_index(ver: tuple[int, int]) -> int:
    """The position of a release series in :data:`RELEASES` (extended by the May/November cadence)."""
    if ver in RELEASES:
        return RELEASES.index(ver)
    last = RELEASES[-1]
    if ver > last and ver[1] in (5, 11):
        return len(RELEASES) - 1 + (ver[0] - last[0]) * 2 + (1 if ver[1] == 5 else 2) - 2
    raise ValueError(f"Slurm {ver[0]}.{ver[1]:02d} is not a Slurm release series")


def upgrade_reach(target: Any) -> int:
    """How many releases an upgrade *to* ``target`` may cross."""
    return UPGRADE_REACH_FROM_24_11 if parse_version(target) >= (24, 11) else UPGRADE_REACH_BEFORE_24_11


def _text(ver: tuple[int, int]) -> str:
    return f"{ver[0]}.{ver[1]:02d}"


def releases_between(old: Any, new: Any) -> int:
    """Release series from ``old`` to ``new`` (negative for a downgrade): 22.05 -> 24.11 is 4."""
    return _release_index(parse_version(new)) - _release_index(parse_version(old))


def upgrade_path(old: Any, new: Any) -> list[str]:
    """The fewest upgrades from ``old`` to ``new`` that Slurm supports, each as far as it may go:
    ``upgrade_path("22.05", "24.11") == ["22.05", "23.11", "24.11"]``."""
    start, end = parse_version(old), parse_version(new)
    path = [start]
    here = _release_index(start)
    goal = _release_index(end)
    series = list(RELEASES)
    while len(series) <= goal:  # releases after the table, by the cadence
        y, mo = series[-1]
        series.append((y, 11) if mo == 5 else (y + 1, 5))
    while here < goal:
        step = max(i for i in range(here + 1, goal + 1) if i - here <= upgrade_reach(series[i]))
        path.append(series[step])
        here = step
    return [_text(v) for v in path]


def _major(text: Any) -> tuple[int, int] | None:
    try:
        return parse_version(text) if text else None
    except ValueError:
        return None


def version_problems(hosts: Mapping[str, Mapping[str, Any]], upgrade: bool) -> list[str]:
    """What Slurm does not support among the hosts' releases, before any package changes.

    ``hosts``: per host, ``roles`` (controller, dbd, compute, login), ``installed`` (the packages'
    version, ``""`` when none), ``candidate`` (what the package manager would install) and
    ``recorded`` (the release the daemons ran when the role last applied, ``""`` when unknown).
    ``upgrade``: this run upgrades the packages to the candidate (the role's slurm_upgrade).

    A host's release before the run is the recorded one, else the installed one; after the run it
    is the candidate when upgrading (or when nothing is installed yet), else the installed one.
    Refused: a downgrade; a step across more releases than the target release reads; a dbd host
    older than a controller, and a compute or login host newer than a controller or further
    behind than the controllers' release reaches.
    """
    problems: list[str] = []
    after: dict[str, tuple[int, int]] = {}
    for host in sorted(hosts):
        info = hosts[host]
        installed, candidate, recorded = (_major(info.get(k)) for k in ("installed", "candidate", "recorded"))
        before = recorded or installed
        now = (candidate if upgrade and candidate else installed) or candidate
        if now is None:
            continue
        after[host] = now
        if before is None or before == now:
            continue
        outside = bool(recorded and installed and recorded != installed)
        how = (
            f"its Slurm packages were changed outside this role: the daemons last ran {_text(before)}, "
            f"the packages are {_text(now)}"
            if outside
            else f"this run would upgrade Slurm {_text(before)} to {_text(now)} (slurm_upgrade)"
        )
        try:
            steps = releases_between(before, now)
        except ValueError as exc:
            problems.append(f"host {host}: {how}; {exc}")
            continue
        if steps < 0:
            problems.append(
                f"host {host}: {how}; Slurm cannot go back a release (the state files and the "
                f"accounting database {_text(before)} wrote are not readable by {_text(now)}): "
                f"put {_text(before)} back"
            )
        elif steps > upgrade_reach(now):
            problems.append(
                f"host {host}: {how}; that is {steps} releases on, and Slurm {_text(now)} reads the state "
                f"and the accounting database of at most {upgrade_reach(now)} releases back: upgrade through "
                f"{' -> '.join(upgrade_path(before, now))}, one step per run"
                + (f" (put {_text(before)} back first)" if outside else "")
            )
    controllers = [after[h] for h in sorted(hosts) if "controller" in hosts[h].get("roles", ()) and h in after]
    if not controllers:
        return problems
    ctld = min(controllers)
    for host in sorted(after):
        roles = hosts[host].get("roles", ())
        ver = after[host]
        if "dbd" in roles and ver < ctld:
            problems.append(
                f"host {host}: slurmdbd would run {_text(ver)}, older than slurmctld's {_text(ctld)}: "
                "slurmdbd must be upgraded first"
            )
        if not {"compute", "login"} & set(roles) or "controller" in roles:
            continue
        if ver > ctld:
            problems.append(
                f"host {host}: Slurm {_text(ver)} would be newer than the controllers' {_text(ctld)}; "
                "slurmd and the client commands may not be newer than slurmctld: install "
                f"{_text(ctld)} on {host}, or upgrade the controllers first"
            )
        elif releases_between(ver, ctld) > upgrade_reach(ctld):
            problems.append(
                f"host {host}: Slurm {_text(ver)} is more than {upgrade_reach(ctld)} releases behind the "
                f"controllers' {_text(ctld)}, which no longer talk to it: upgrade it through "
                f"{' -> '.join(upgrade_path(ver, ctld))}"
            )
    return problems


# Where distributions install Slurm's plugins (Debian/Ubuntu multiarch, then RPM layouts).
PLUGIN_DIRS = (
    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
    "/usr/lib64/slurm",
    "/usr/lib/slurm",
)
