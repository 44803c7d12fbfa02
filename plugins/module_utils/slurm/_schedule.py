# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Which Slurm daemons a host restarts or reconfigures, and why: the one owner of that decision.

Public API
----------
``host_schedule(host, changed) -> dict``
    From what the plan knows of one host (``host``: an entry of the plan's ``hosts``, made by
    :func:`host_inputs`) and the names of the files that host's apply changed (``changed``: the
    ``slurm_files`` result), the ordered steps: ``{"steps": [{"daemon", "action", "handler",
    "reasons"}], "handlers": [...], "reasons": [...]}``. Pure: no I/O, no Ansible.
``with_file_changes(plan, changed, first_install=False) -> dict``
    ``change_plan``'s cluster-wide result with what changed files add (slurmdbd.conf restarts
    slurmdbd, a file slurmd reads at start restarts slurmd, except on a first install): the
    public filter ``slurm_change_plan`` answers with it. (The role's own rule for a running
    slurmdbd is stricter: :func:`host_schedule` restarts only one that runs.)
``host_inputs(name, roles, ...) -> dict``
    The plan's per-host entry: roles as the plan's host lists give them, whether the host is the
    primary controller, writes the configuration files (configless compute hosts do not), runs
    the daemons already, was taken out on purpose, and whether its daemons are behind their files.

The order is Slurm's upgrade order, and the role's handlers run in it: slurmdbd, slurmctld, a
reconfigure (primary controller), slurmd (rolling batches).

Rules (the version table decides the cluster-wide part, ``slurm/_version.change_plan``):

* slurmdbd restarts when its slurmdbd.conf changed and it was running (a first start needs none).
* slurmctld restarts when the plan says so, or when it runs with older files than the host has
  (``behind``: a run stopped between writing and applying them).
* The primary controller reconfigures when the plan says so, or, with configless nodes, when a
  file it serves them that slurmd reads at start changed and slurmctld is not restarting anyway.
* slurmd restarts (never on a first install, nor on a node taken out on purpose) when the plan
  restarts it, when it is behind, when a file slurmd reads at start changed (for a configless
  node: on the primary controller, which serves it), when its unit settings changed, or when only
  slurm.conf changed and neither a restart nor a reconfigure delivers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import SLURMD_RESTART_FILES

__all__ = ["HANDLERS", "SLURMD_UNIT_FILES", "host_inputs", "host_schedule", "with_file_changes", "writes_config"]

# The role's handler for each step (roles/slurm/handlers/main.yml), in the order they run.
HANDLERS = {
    "slurmdbd": "Restart slurmdbd",
    "slurmctld": "Restart slurmctld",
    "reconfigure": "Reconfigure Slurm",
    "slurmd": "Restart slurmd",
}
# The slurmd unit's drop-in and defaults file (configless): a change restarts slurmd.
SLURMD_UNIT_FILES = ("slurmd-dropin", "slurmd-defaults")
BEHIND = "{daemon} runs with older files than these (an earlier run stopped before applying them)"


def _slurmd_files(changed: Iterable[str]) -> list[str]:
    """The changed files slurmd reads at start (a restart applies them), in the order given, once."""
    restart_files = set(SLURMD_RESTART_FILES)
    return [n for n in dict.fromkeys(changed) if n in restart_files]


def with_file_changes(plan: Mapping[str, Any], changed: Iterable[str], first_install: bool = False) -> dict[str, Any]:
    """change_plan's result plus the restarts the changed files need (module doc)."""
    out = {**plan, "restart": list(plan.get("restart") or []), "reasons": list(plan.get("reasons") or [])}
    changed = list(changed or [])
    if "slurmdbd.conf" in changed:
        out["restart"].append("slurmdbd")
        out["reasons"].insert(0, "slurmdbd.conf changed")
    files = [] if first_install else _slurmd_files(changed)
    if files:
        out["restart"].append("slurmd")
        out["reasons"] += [f"{n} changed: slurmd restarts" for n in files]
    out["restart"] = [d for d in ("slurmdbd", "slurmctld", "slurmd") if d in out["restart"]]
    return out


def writes_config(roles: Iterable[str], configless: bool) -> bool:
    """Whether a host keeps the configuration files itself: all do but a configless compute-only node."""
    return not configless or bool(set(roles) - {"compute"})


def host_inputs(
    name: str,
    roles: Iterable[str],
    primary: bool,
    configless: bool,
    live_conf: bool,
    running: Iterable[str],
    taken_out: bool,
    behind: bool,
    served_changed: Iterable[str] = (),
) -> dict[str, Any]:
    """The plan's entry for one host (see the module doc); plain data, JSON-safe."""
    roles = sorted(set(roles))
    writes = writes_config(roles, configless)
    return {
        "name": name,
        "roles": roles,
        "primary": bool(primary),
        "configless": bool(configless),
        "writes_config": writes,
        "first_install": not live_conf,
        "running": sorted(set(running)),
        "taken_out": bool(taken_out),
        "behind": bool(behind),
        # what slurmctld serves this configless slurmd that changes in this run
        "served_changed": [] if writes else sorted(set(served_changed)),
    }


def _step(daemon: str, action: str, reasons: list[str]) -> dict[str, Any]:
    return {"daemon": daemon, "action": action, "handler": HANDLERS[daemon], "reasons": reasons}


def host_schedule(host: Mapping[str, Any], plan: Mapping[str, Any], changed: Iterable[str]) -> dict[str, Any]:
    """The ordered restart/reconfigure steps of one host (module doc). ``plan``: change_plan's result."""
    changed = list(changed or [])
    roles = set(host.get("roles") or [])
    running = set(host.get("running") or [])
    behind = bool(host.get("behind"))
    restart = list(plan.get("restart") or [])
    reconfigure = bool(plan.get("reconfigure"))
    plan_reasons = list(plan.get("reasons") or [])
    steps = []

    if "dbd" in roles and "slurmdbd.conf" in changed and "slurmdbd" in running:
        steps.append(_step("slurmdbd", "restart", ["slurmdbd.conf changed"]))

    if "controller" in roles and ("slurmctld" in restart or behind):
        steps.append(
            _step("slurmctld", "restart", plan_reasons + ([BEHIND.format(daemon="slurmctld")] if behind else []))
        )

    if host.get("primary"):
        served = _slurmd_files(changed)
        by_files = bool(host.get("configless") and served and "slurmctld" not in restart and "slurmctld" in running)
        if reconfigure or by_files:
            reasons = plan_reasons or [f"{', '.join(served)} changed: slurmctld serves them to configless nodes"]
            steps.append(_step("reconfigure", "reconfigure", reasons))

    if "compute" in roles and not host.get("taken_out") and not host.get("first_install"):
        # A configless slurmd reads what the primary controller writes in this run.
        seen = changed + _slurmd_files(host.get("served_changed") or [])
        files = _slurmd_files(seen)
        unit = [n for n in changed if n in SLURMD_UNIT_FILES]
        conf_alone = "slurm.conf" in seen and not restart and not reconfigure
        if "slurmd" in restart or behind or files or unit or conf_alone:
            reasons = (
                plan_reasons
                + [f"{n} changed: slurmd restarts" for n in files]
                + (["slurmd unit settings changed: slurmd restarts"] if unit else [])
                + ([BEHIND.format(daemon="slurmd")] if behind else [])
            ) or ["this node had an outdated configuration"]
            steps.append(_step("slurmd", "restart", reasons))

    return {
        "steps": steps,
        "handlers": [s["handler"] for s in steps],
        "reasons": [f"{s['daemon']} {s['action']}: {'; '.join(s['reasons'])}" for s in steps],
    }
