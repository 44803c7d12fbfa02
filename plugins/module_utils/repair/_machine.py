# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The repair agent's state machine: one record per node, one pure function per pass.

Pure Python: the standard library and ``slurm/_nodestate`` (a reason without slurmctld's stamp, the
DRAIN flag). The agent (``repair/_agent.py``) reads Slurm and OCI, calls
:func:`plan_pass`, persists the records it returns **before** it carries out the actions (so a
crash between the two resumes the same step, with the same instance OCID and the same retry
token), then carries the actions out in order. The dry run calls the same function.

Public API
----------
``plan_pass(records, observed, settings, now) -> {"records", "actions", "notes"}``
    ``records``: ``{node: record}`` as the last pass left them. ``observed``: what this pass read
    (see :func:`observation`). ``settings``: :data:`DEFAULTS` overridden. ``now``: seconds.
    Returns the records to persist, the actions in order (``{"node", "do", ...}``) and one note per
    node that has something to say (why it waits, why nothing is done).

A node's phases (``record["phase"]``)::

    (none) --fault--> draining --no job--> drained --> rebooting --slurmd back--> accepting --> (none)
    (joining: once its instance RUNS, the site's join command is run once; then slurmd must register)
                         |                    \\-----> terminating --TERMINATED--> launching --> joining
                         | deadline (opt-in)                                                    |
                         +-> requeue                            accepting <--slurmd registers--+
    accepting --job failed / drained again--> drained (attempt + 1) or failed (attempts spent)
    (none) --maintenance window within lead--> maintenance --event over--> (none)

Faults the agent acts on: a drain by the health check the ``gpu_node`` role installs (reason
prefix ``gpu-health:``) for a hardware cause (``repair_causes``: nvidia_smi, gpu_count, fabric, xid;
not mounts or munge, which the check itself resumes once they are back), the same under the agent's
own prefix (``oci_gpu-repair:``) when the state file was lost, and an OCI compute host reported
``UNHEALTHY`` or with impacted components. Anything else is an administrator's: a node drained or
down for another reason is never touched, and a repair in progress is released (its record
dropped, nothing undone) the moment an administrator resumes the node or changes its reason.

Guards:

* **Fail closed**: when the pass could not read Slurm's nodes or the cluster's instances completely
  (``observed["complete"]`` false), nothing at all is done and the records stay as they were.
* A node whose name two live instances claim is ambiguous: nothing is done to it.
* At most ``max_concurrent`` nodes are out of service for repair at once (phases from draining to
  accepting); more faults wait in ``queued``. Maintenance drains are not capped: OCI takes the
  host at the window whether or not it was drained.
* Jobs are waited for, never killed or requeued, unless ``drain_deadline_s`` is set (the site's
  opt-in): then, once, the node's jobs are requeued after that many seconds of draining.
* A terminate names the instance OCID recorded when the node was drained, never one looked up by
  name afterwards; once the record moves past ``terminating`` no terminate is planned for it again.
* A relaunch carries a retry token fixed in the record (node, attempt, old instance), so a pass
  that died after OCI accepted the launch gets the same instance back, never a second one; a live
  instance with the node's name that is not the old one is adopted instead of launching.
* After ``max_attempts`` failed repairs the node stays drained, with a reason that says so.
* An instance pool relaunches a member terminated behind its back, under a name of its own: a
  member is instead detached with the pool shrinking (OCI terminates it), and its relaunch is
  attached back once RUNNING. A cluster network's pool alone launches its members: such a node is
  rebooted but never replaced (held drained, saying so).
* After its own ``RESET`` the agent takes slurmctld's DOWN "Node unexpectedly rebooted" as the node
  coming back, not as an administrator's change.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import bare_reason as _bare
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import drained as _drained
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import responding as _registered

PREFIX = "oci_gpu-repair:"
HEALTH_PREFIX = "gpu-health:"  # gpu/_health.py REASON_PREFIX: the node check's drains
RESERVATION_PREFIX = "oci_gpu_repair_"

# reasons slurmctld writes itself on a node it sets DOWN (never an administrator's)
SLURMCTLD_DOWN = ("Not responding", "Node unexpectedly rebooted")
# From draining to accepting a node is out of service because of the agent: these count against
# max_concurrent. queued, maintenance and failed do not.
ACTIVE = ("draining", "drained", "rebooting", "terminating", "launching", "joining", "accepting")
PHASES = (*ACTIVE, "queued", "maintenance", "failed")

DEFAULTS: dict[str, Any] = {
    "max_concurrent": 1,
    "max_attempts": 2,
    # the health check's drains the agent repairs (regexes matched from the start of the reason):
    # hardware, not a mount or munge the check resumes by itself once it is back
    "repair_causes": [r"gpu-health: (nvidia_smi|gpu_count|fabric|xid):"],
    # causes a reboot (OCI RESET) may cure, tried once per fault before a replacement
    "reboot_causes": [r"gpu-health: (xid|gpu_count|nvidia_smi):"],
    "drain_deadline_s": None,  # None: wait for jobs for ever (never requeue)
    "maintenance_lead_s": 7200,
    "reboot_timeout_s": 900,
    "join_timeout_s": 1800,
    "accept_timeout_s": 900,
}

_LIVE = ("PROVISIONING", "STARTING", "RUNNING", "STOPPING", "STOPPED", "MOVING", "CREATING_IMAGE", "TERMINATING")


class SettingsError(ValueError):
    pass


def settings_from(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """DEFAULTS with ``values`` over them, checked: a clear error names the key and the value."""
    out = dict(DEFAULTS)
    for key, value in (values or {}).items():
        if key not in DEFAULTS:
            raise SettingsError(f"repair setting {key!r} is unknown (known: {', '.join(sorted(DEFAULTS))})")
        out[key] = value
    for key in ("max_concurrent", "max_attempts"):
        if not isinstance(out[key], int) or isinstance(out[key], bool) or out[key] < 1:
            raise SettingsError(f"repair setting {key}={out[key]!r} must be a whole number of 1 or more")
    for key in ("maintenance_lead_s", "reboot_timeout_s", "join_timeout_s", "accept_timeout_s"):
        if not isinstance(out[key], (int, float)) or isinstance(out[key], bool) or out[key] <= 0:
            raise SettingsError(f"repair setting {key}={out[key]!r} must be a number of seconds above 0")
    deadline = out["drain_deadline_s"]
    if deadline is not None and (not isinstance(deadline, (int, float)) or isinstance(deadline, bool) or deadline <= 0):
        raise SettingsError(
            f"repair setting drain_deadline_s={deadline!r} must be empty or a number of seconds above 0"
        )
    for key in ("repair_causes", "reboot_causes"):
        if not isinstance(out[key], list):
            raise SettingsError(f"repair setting {key}={out[key]!r} must be a list of patterns")
        for pattern in out[key]:
            try:
                re.compile(pattern)
            except (re.error, TypeError) as exc:
                raise SettingsError(f"repair setting {key} has a bad pattern {pattern!r}: {exc}") from exc
    return out


def observation(
    nodes: Mapping[str, Mapping[str, Any]] | None,
    instances: Mapping[str, list[Mapping[str, Any]]] | None,
    maintenance: Mapping[str, list[Mapping[str, Any]]] | None = None,
    jobs: Mapping[str, Mapping[str, Any]] | None = None,
    problems: list[str] | None = None,
) -> dict[str, Any]:
    """What a pass read, in the shape :func:`plan_pass` takes.

    ``nodes``: Slurm's nodes (``slurm/_nodestate.parse_show_node``: state, flags, reason,
    slurmd_start). ``instances``: per node name, the cluster's instances that carry it (``id``,
    ``state``, ``health``, ``impacted``; ``pool``, ``cluster_network``: the OCIDs of the instance
    pool it is in and of that pool's cluster network, if any).
    ``maintenance``: per instance OCID, its events (``id``, ``state``, ``start`` and ``end`` in
    seconds). ``jobs``: acceptance jobs by id (``state``, ``exit``). A part that could not be read
    is None, or named in ``problems``: the pass is then incomplete and does nothing.
    """
    missing = [name for name, part in (("Slurm nodes", nodes), ("OCI instances", instances)) if part is None]
    probs = list(problems or []) + [f"{name} could not be read" for name in missing]
    return {
        "complete": not probs,
        "problems": probs,
        "nodes": dict(nodes or {}),
        "instances": {k: list(v) for k, v in (instances or {}).items()},
        "maintenance": {k: list(v) for k, v in (maintenance or {}).items()},
        "jobs": dict(jobs or {}),
    }


def retry_token(node: str, attempt: int, old_instance: str | None) -> str:
    """The relaunch's ``opc-retry-token``: fixed by the record, so a repeated launch replays."""
    digest = hashlib.sha256(f"{node}|{attempt}|{old_instance or ''}".encode()).hexdigest()[:32]
    return f"oci-gpu-repair-{digest}"


def reservation_name(node: str) -> str:
    return RESERVATION_PREFIX + re.sub(r"[^A-Za-z0-9_.-]", "_", node)


def _busy(node: Mapping[str, Any]) -> bool:
    """Jobs still run (or finish) on it: ALLOCATED/MIXED, or COMPLETING."""
    return node.get("state") in ("ALLOCATED", "MIXED") or "COMPLETING" in (node.get("flags") or [])


def _responding(node: Mapping[str, Any]) -> bool:
    flags = node.get("flags") or []
    return "NOT_RESPONDING" not in flags and node.get("state") not in ("", "UNKNOWN", "DOWN", "FUTURE")


def _reason(text: str) -> str:
    """A reason scontrol takes in one argument: the prefix, no double quotes, at most 200 characters."""
    return f"{PREFIX} {text}".replace('"', "'")[:200]


def _live(instances: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [i for i in instances if i.get("state") in _LIVE]


def _host_fault(inst: Mapping[str, Any] | None) -> str | None:
    if not inst:
        return None
    if inst.get("health") == "UNHEALTHY" or inst.get("impacted"):
        parts = ["oci-host:", str(inst.get("health") or "impacted")]
        if inst.get("impacted"):
            parts.append("(impacted components)")
        return " ".join(parts)
    return None


def _due_event(events: list[Mapping[str, Any]], now: float, lead: float) -> Mapping[str, Any] | None:
    due = [e for e in events if e.get("state") in ("SCHEDULED", "STARTED", "PROCESSING") and e.get("start") is not None]
    due = [e for e in due if float(e["start"]) - now <= lead]
    return min(due, key=lambda e: float(e["start"])) if due else None


def _new_record(phase: str, cause: str, now: float, instance_id: str | None, **extra: Any) -> dict[str, Any]:
    rec = {
        "phase": phase,
        "cause": cause,
        "attempt": 1,
        "since": now,
        "started": now,
        "instance_id": instance_id,
        "confirmed": False,
        "rebooted": False,
    }
    rec.update(extra)
    return rec


def _enter(rec: dict[str, Any], phase: str, now: float, **extra: Any) -> dict[str, Any]:
    out = dict(rec)
    out.update(phase=phase, since=now, **extra)
    return out


def plan_pass(
    records: Mapping[str, Mapping[str, Any]],
    observed: Mapping[str, Any],
    settings: Mapping[str, Any],
    now: float,
) -> dict[str, Any]:
    """One pass of the state machine over every node (see the module's docstring)."""
    records = {k: dict(v) for k, v in records.items()}
    if not observed.get("complete"):
        why = "; ".join(observed.get("problems") or ["state incomplete"])
        return {"records": records, "actions": [], "notes": [{"node": None, "note": f"nothing done: {why}"}]}

    s = dict(DEFAULTS)
    s.update(settings)
    nodes: Mapping[str, Mapping[str, Any]] = observed["nodes"]
    out_records: dict[str, dict[str, Any]] = {}
    actions: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    active = sum(1 for r in records.values() if r.get("phase") in ACTIVE)

    def act(node: str, do: str, **args: Any) -> None:
        actions.append({"node": node, "do": do, **args})

    def note(node: str, text: str) -> None:
        notes.append({"node": node, "note": text})

    # Repairs in progress first, then nodes without one (and queued ones) in name order, so a slot
    # a finished repair frees is taken in the same pass.
    for name in sorted(n for n, r in records.items() if r.get("phase") != "queued"):
        rec = records[name]
        node = nodes.get(name)
        if node is None:  # a node Slurm no longer knows: keep the record, do nothing
            out_records[name] = rec
            note(name, "Slurm does not know this node: nothing done")
            continue
        insts = _live(observed["instances"].get(name, []))
        if len(insts) > 1:
            out_records[name] = rec
            note(name, "more than one live instance carries this name: nothing done")
            continue
        rec_out, acts, text = _step(name, rec, node, insts[0] if insts else None, observed, s, now)
        if rec_out is not None and rec.get("phase") == "draining" and rec_out["phase"] == "drained" and not acts:
            rec_out, acts, text = _step(name, rec_out, node, insts[0] if insts else None, observed, s, now)
        if rec_out is not None:
            out_records[name] = rec_out
        if rec.get("phase") in ACTIVE and (rec_out is None or rec_out.get("phase") not in ACTIVE):
            active -= 1
        for a in acts:
            act(name, **a)
        if text:
            note(name, text)

    for name in sorted(n for n, r in records.items() if r.get("phase") == "queued" and n not in nodes):
        out_records[name] = records[name]
    fresh = [n for n in nodes if n not in records or records[n].get("phase") == "queued"]
    for name in sorted(fresh):
        rec = records.get(name)
        insts = _live(observed["instances"].get(name, []))
        if len(insts) > 1:
            if rec is not None:
                out_records[name] = rec
            note(name, "more than one live instance carries this name: nothing done")
            continue
        new = _start(name, rec, nodes[name], insts[0] if insts else None, observed, s, now, active)
        if new is None:
            if rec is not None:
                note(name, "dropped from the queue: no fault any more, or an administrator's now")
            continue
        rec_out, acts, text = new
        out_records[name] = rec_out
        for a in acts:
            act(name, **a)
        if rec_out["phase"] in ACTIVE:
            active += 1
        if text:
            note(name, text)
    return {"records": out_records, "actions": actions, "notes": notes}


def _start(
    name: str,
    rec: Mapping[str, Any] | None,
    node: Mapping[str, Any],
    inst: Mapping[str, Any] | None,
    observed: Mapping[str, Any],
    s: Mapping[str, Any],
    now: float,
    active: int,
) -> tuple[dict[str, Any], list[dict[str, Any]], str] | None:
    """A node without a repair in progress: a new fault, a maintenance window, or nothing."""
    drained = _drained(node)
    reason = _bare(node.get("reason", ""))
    ours_or_check = reason.startswith(PREFIX) or reason.startswith(HEALTH_PREFIX)
    if (drained or node.get("state") == "DOWN") and reason and not ours_or_check:
        return None  # an administrator's drain or DOWN: never acted on
    if node.get("state") == "DOWN" and not drained and not reason.startswith(PREFIX):
        return None  # down without a drain: slurmctld's (not responding) or an administrator's

    iid = inst.get("id") if inst else None
    event = _due_event(observed["maintenance"].get(iid or "", []), now, float(s["maintenance_lead_s"])) if iid else None
    cause = None
    if drained and ours_or_check:
        # a drain of the agent's own without a record (the state file was lost) is taken up again
        # only for a cause it repairs: never a "gave up" or a maintenance drain
        text = reason[len(PREFIX) :].strip() if reason.startswith(PREFIX) else reason
        if any(re.match(p, text) for p in s["repair_causes"]):
            cause = text
    if cause is None:
        cause = _host_fault(inst)
    if cause is None and event is not None:
        text = _reason(f"maintenance {event['id']} from {int(float(event['start']))}")
        res = {"name": reservation_name(name), "start": now, "end": event.get("end") or float(event["start"]) + 14400}
        acts = [{"do": "reserve", **res}]
        if not (drained and reason == text):
            acts.insert(0, {"do": "drain", "reason": text})
        new = _new_record("maintenance", text, now, iid, reason=text, event_id=event["id"], reservation=res["name"])
        return new, acts, f"maintenance {event['id']} is due: drained and reserved before its window"
    if cause is None:
        return None
    if active >= int(s["max_concurrent"]):
        if rec is not None:
            return (
                dict(rec),
                [],
                f"waits: {active} node(s) already out of service for repair (max {s['max_concurrent']})",
            )
        new = _new_record("queued", cause, now, iid)
        return new, [], f"queued: {active} node(s) already out of service for repair (max {s['max_concurrent']})"
    text = _reason(cause)
    new = _new_record("draining", cause, now, iid, reason=text)
    acts: list[dict[str, Any]] = []
    if not (drained and reason == text):
        acts.append({"do": "drain", "reason": text})
    return new, acts, f"repair starts: {cause}"


def _fail_attempt(
    rec: Mapping[str, Any], why: str, s: Mapping[str, Any], now: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    attempt = int(rec.get("attempt", 1))
    acts: list[dict[str, Any]] = []
    if rec.get("reservation"):
        acts.append({"do": "unreserve", "name": rec["reservation"]})
    if attempt >= int(s["max_attempts"]):
        text = _reason(f"gave up after {attempt} attempt(s): {why}")
        acts.append({"do": "drain", "reason": text})
        new = _enter(rec, "failed", now, reason=text, last_error=why, reservation=None, job_id=None, confirmed=False)
        return new, acts
    text = _reason(f"attempt {attempt + 1}: {why}")
    acts.append({"do": "drain", "reason": text})
    new = _enter(
        rec,
        "drained",
        now,
        attempt=attempt + 1,
        reason=text,
        last_error=why,
        reservation=None,
        job_id=None,
        rebooted=True,
        confirmed=False,
    )
    return new, acts


def _step(
    name: str,
    rec: dict[str, Any],
    node: Mapping[str, Any],
    inst: Mapping[str, Any] | None,
    observed: Mapping[str, Any],
    s: Mapping[str, Any],
    now: float,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], str]:
    """One step of a repair (or maintenance) in progress."""
    phase = rec.get("phase")
    age = now - float(rec.get("since", now))
    reason = _bare(node.get("reason", ""))
    drained = _drained(node)

    if phase == "failed":
        if drained and reason == rec.get("reason"):
            return dict(rec, confirmed=True), [], "stays drained: repair attempts spent"
        if not rec.get("confirmed"):
            return rec, [{"do": "drain", "reason": rec["reason"]}], "drain not seen yet: asked again"
        return None, [], "released: an administrator resumed the node or changed its reason"

    # An administrator takes over by resuming the node or giving it another reason; the phases in
    # which the agent itself has resumed the node (accepting) are judged by the acceptance instead.
    if phase in ("draining", "drained", "rebooting", "terminating", "launching", "joining", "maintenance"):
        # slurmctld's own reasons for a node it marks DOWN while its instance is away or has rebooted
        # are not an administrator's; with them the node may even have lost its drain flag
        slurmctlds = node.get("state") == "DOWN" and reason.startswith(SLURMCTLD_DOWN)
        replaced = reason != rec.get("reason") and not reason.startswith(SLURMCTLD_DOWN)
        if rec.get("confirmed") and ((not drained and not slurmctlds) or replaced):
            acts = [{"do": "unreserve", "name": rec["reservation"]}] if rec.get("reservation") else []
            return None, acts, "released: an administrator resumed the node or changed its reason"
        if not rec.get("confirmed"):
            if not (drained and reason == rec.get("reason")):
                return rec, [{"do": "drain", "reason": rec["reason"]}], "drain not seen yet: asked again"
            rec = dict(rec, confirmed=True)

    if phase == "maintenance":
        iid = rec.get("instance_id")
        events = observed["maintenance"].get(iid or "", [])
        event = next((e for e in events if e.get("id") == rec.get("event_id")), None)
        if event is not None and event.get("state") in ("SCHEDULED", "STARTED", "PROCESSING"):
            return rec, [], f"waits for maintenance {rec.get('event_id')} ({event.get('state')})"
        if not _responding(node):
            return rec, [], "maintenance over: waits for slurmd to answer"
        acts = [{"do": "unreserve", "name": rec["reservation"]}, {"do": "resume"}]
        return None, acts, "maintenance over: resumed"

    if phase == "draining":
        if not _busy(node):
            return _enter(rec, "drained", now), [], "drained: no job runs on it"
        deadline = s.get("drain_deadline_s")
        if deadline is not None and age >= float(deadline) and not rec.get("requeued"):
            return dict(rec, requeued=now), [{"do": "requeue"}], f"drain deadline ({deadline} s) passed: jobs requeued"
        return rec, [], "waits for its jobs to end (never killed)"

    if phase == "drained":
        if _busy(node):  # a job started between passes (an administrator's): wait again
            return _enter(rec, "draining", now), [], "a job runs on it: waits again"
        cause = str(rec.get("cause", ""))
        reboot = not rec.get("rebooted") and any(re.match(p, cause) for p in s["reboot_causes"])
        iid = rec.get("instance_id") or (inst.get("id") if inst else None)
        if inst is not None and iid and inst.get("id") != iid:
            return rec, [], f"the instance carrying this name changed ({iid} -> {inst.get('id')}): nothing done"
        if reboot and inst is not None:
            new = _enter(
                rec, "rebooting", now, rebooted=True, instance_id=iid, slurmd_start=node.get("slurmd_start", "")
            )
            return new, [{"do": "reboot", "instance_id": iid}], f"reboot (RESET) for {cause}"
        if inst is None:  # nothing to terminate: launch straight away
            token = retry_token(name, int(rec.get("attempt", 1)), iid)
            return (
                _enter(rec, "launching", now, token=token),
                [{"do": "launch", "token": token, "old_instance_id": iid}],
                "no live instance: relaunch",
            )
        pool = inst.get("pool")
        if pool and inst.get("cluster_network"):
            # a cluster network's pool alone launches its members (the RDMA fabric): held, and said
            why = (
                f"instance {iid} is in cluster network {inst['cluster_network']} (pool {pool}), "
                "whose members only the pool launches: replace it there"
            )
            text = _reason(f"gave up: {why}")
            new = _enter(rec, "failed", now, reason=text, last_error=why, confirmed=False)
            return new, [{"do": "drain", "reason": text}], f"gave up: {why}"
        # A pool relaunches a member terminated behind its back, under a name of its own: a member
        # is detached with the pool shrinking (OCI terminates it), and the relaunch attached back.
        gone = {"do": "detach", "pool": pool, "instance_id": iid} if pool else {"do": "terminate", "instance_id": iid}
        acts = [{"do": "report_host", "instance_id": iid, "text": cause[:256]}, gone]
        new = _enter(rec, "terminating", now, instance_id=iid, slurmd_start=node.get("slurmd_start", ""), pool=pool)
        return new, acts, f"replace {iid}: reported and " + (f"detached from pool {pool}" if pool else "terminated")

    if phase == "rebooting":
        # slurmctld marks a node that rebooted without `scontrol reboot` DOWN ("Node unexpectedly
        # rebooted"): registered again is what counts, and the acceptance's resume clears the DOWN
        registered = _registered(node) and node.get("state") != "FUTURE"
        back = registered and node.get("slurmd_start") and node.get("slurmd_start") != rec.get("slurmd_start")
        if back:
            return _accept(name, rec, now)
        if age >= float(s["reboot_timeout_s"]):
            return _enter(rec, "drained", now), [], f"no slurmd after reboot in {s['reboot_timeout_s']} s: replace"
        return rec, [], "waits for slurmd after the reboot"

    if phase == "terminating":
        iid = rec.get("instance_id")
        if inst is not None and inst.get("id") == iid:
            if inst.get("state") == "TERMINATING":
                return rec, [], f"waits for {iid} to terminate"
            if inst.get("pool"):  # never terminated while a pool would relaunch it
                acts = [{"do": "detach", "pool": inst["pool"], "instance_id": iid}]
                return rec, acts, f"{iid} still in pool {inst['pool']}: detach again"
            return rec, [{"do": "terminate", "instance_id": iid}], f"{iid} still {inst.get('state')}: terminate again"
        if inst is not None:  # another instance carries the name: adopt it, never terminate it
            return _enter(rec, "joining", now, new_instance_id=inst.get("id")), [], f"adopts {inst.get('id')}"
        token = retry_token(name, int(rec.get("attempt", 1)), iid)
        return (
            _enter(rec, "launching", now, token=token),
            [{"do": "launch", "token": token, "old_instance_id": iid}],
            f"{iid} gone: relaunch",
        )

    if phase == "launching":
        if inst is not None and inst.get("id") != rec.get("instance_id"):
            return _enter(rec, "joining", now, new_instance_id=inst.get("id")), [], f"launched {inst.get('id')}"
        return (
            rec,
            [{"do": "launch", "token": rec["token"], "old_instance_id": rec.get("instance_id")}],
            "launch (same retry token)",
        )

    if phase == "joining":
        new_id = rec.get("new_instance_id")
        if inst is None or inst.get("id") != new_id:
            if age >= float(s["join_timeout_s"]):
                return _fail(rec, f"instance {new_id} gone before joining", s, now)
            return rec, [], f"waits for instance {new_id}"
        registered = _responding(node) and node.get("slurmd_start") not in ("", rec.get("slurmd_start"))
        # back into the old instance's pool, each pass until the pool lists it
        attach = (
            [{"do": "attach", "pool": rec["pool"], "instance_id": new_id}]
            if rec.get("pool") and inst.get("state") == "RUNNING" and inst.get("pool") != rec["pool"]
            else []
        )
        if attach and registered:
            return rec, attach, f"attach {new_id} to pool {rec['pool']}"
        if inst.get("state") != "RUNNING" or not registered:
            if age >= float(s["join_timeout_s"]):
                return _fail(rec, f"{new_id} did not join Slurm in {s['join_timeout_s']} s", s, now)
            if inst.get("state") == "RUNNING" and not rec.get("join_sent"):
                # the site's join (its add-node path), once per instance; a node that joins by itself
                # (cloud-init, configless) needs no command, and the action says so
                return dict(rec, join_sent=now), [*attach, {"do": "join", "instance_id": new_id}], f"join {new_id}"
            return rec, attach, f"waits for {new_id} to join ({inst.get('state')})"
        return _accept(name, dict(rec, instance_id=new_id), now)

    if phase == "accepting":
        job_id = rec.get("job_id")
        if not job_id:  # the agent died before the job was submitted: submit it now
            return rec, [{"do": "accept", "reservation": rec["reservation"]}], "acceptance job submitted again"
        if drained and reason.startswith(HEALTH_PREFIX):
            return _fail(rec, f"acceptance: {reason}", s, now)
        if (drained or node.get("state") == "DOWN") and not reason.startswith(PREFIX):
            acts = [{"do": "unreserve", "name": rec["reservation"]}]
            return None, acts, "released: an administrator drained the node during its acceptance"
        job = observed["jobs"].get(str(job_id))
        if job is not None and job.get("state") == "COMPLETED" and str(job.get("exit", "0:0")) == "0:0":
            return (
                None,
                [{"do": "unreserve", "name": rec["reservation"]}],
                f"acceptance job {job_id} passed: back in service",
            )
        if job is not None and job.get("state") not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", None):
            return _fail(rec, f"acceptance job {job_id} {job.get('state')} {job.get('exit', '')}".strip(), s, now)
        if age >= float(s["accept_timeout_s"]):
            return _fail(rec, f"acceptance job {job_id} not done in {s['accept_timeout_s']} s", s, now)
        return rec, [], f"waits for acceptance job {job_id}"

    return rec, [], f"unknown phase {phase!r}: nothing done"


def _fail(
    rec: dict[str, Any], why: str, s: Mapping[str, Any], now: float
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    new, acts = _fail_attempt(rec, why, s, now)
    return new, acts, ("gave up: " if new["phase"] == "failed" else "attempt failed: ") + why


def _accept(name: str, rec: dict[str, Any], now: float) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Reserve the node for the agent alone, return it to service inside the reservation, run the job."""
    res = reservation_name(name)
    acts = [
        {"do": "reserve", "name": res, "start": now, "end": None},
        {"do": "resume"},
        {"do": "accept", "reservation": res},
    ]
    return _enter(rec, "accepting", now, reservation=res, job_id=None), acts, "acceptance in reservation " + res
