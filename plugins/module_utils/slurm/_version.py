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
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import parse_slurm_conf
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import expand

__all__ = [
    "SLURMD_RESTART_FILES",
    "VERSION_TABLE",
    "behaviour",
    "change_plan",
    "parse_version",
    "version_from_output",
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
        if added or removed:
            if row["node_change"] == "restart":
                restart.update(("slurmctld", "slurmd"))
                reasons.append("nodes added or removed: slurmctld and every slurmd restart before 24.11")
            else:
                reconfigure = True
                reasons.append("nodes added or removed: reconfigure (24.11+)")
        if redefined:
            if row["node_change"] == "restart":
                restart.update(("slurmctld", "slurmd"))
                reasons.append("node definitions changed: slurmctld and every slurmd restart before 24.11")
            else:
                reconfigure = True
                reasons.append("node definitions changed: reconfigure (24.11+)")
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


# Where distributions install Slurm's plugins (Debian/Ubuntu multiarch, then RPM layouts).
PLUGIN_DIRS = (
    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
    "/usr/lib64/slurm",
    "/usr/lib/slurm",
)
