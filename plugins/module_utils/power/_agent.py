# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Elastic capacity: Slurm's power-saving programs and the agent that launches and terminates instances.

**The programs** slurmctld runs as SlurmUser (``ResumeProgram``, ``SuspendProgram``,
``ResumeFailProgram``, see ``slurm/_elastic``) only write a request file (one JSON line: the action and
the expanded node names) into the spool directory and return at once: slurmctld's script runner is
never held by an OCI call. A systemd path unit starts the agent's pass when a request lands; a timer
runs it every interval too (the reconcile).

**One pass** (root, on the controller, :func:`run_pass`):

1. Take the state file's lock (a second pass exits at once).
2. Read the requests, Slurm's nodes (``scontrol show node``) and the cluster's instances (ListInstances,
   those whose defined tag names this cluster). A read that fails makes the pass do nothing but keep
   the requests for the next pass (fail closed).
3. Plan (:func:`plan_pass`, pure), write the records ahead, act, one JSON line per action in the audit log.

Per elastic node, the record's phase:

* ``launching`` - LaunchInstance was sent with the record's retry token (so a pass killed after the call
  and rerun gets the same instance back, never a second one). A live instance of the node's name is
  adopted instead of launching: a second resume launches nothing.
* ``bootstrapping`` - the instance runs; the agent gives it the munge key over SSH (the controller's own
  key, whose public half the launch put in the instance's ``ssh_authorized_keys``) and starts configless
  slurmd (``--conf-server`` the controllers, ``-N`` the node name): nothing changes on any other host.
* ``up`` - slurmd was started; Slurm takes it from there (the node registers its address).
* ``terminating`` - TerminateInstance was sent (a suspend, a failed resume, or the reconcile).

A capacity error marks the node DOWN with a reason naming the shape and OCI's message (its job is
requeued by Slurm) and no instance is left. **Reconcile** (every pass): an instance of an elastic node
that Slurm has powered down (and no resume is under way) is terminated once it is older than the grace
period; a node Slurm thinks up (neither powered down nor powering up) with no instance and no launch
under way is powered down (``State=POWER_DOWN_FORCE``). At most ``max_launches`` and
``max_terminations`` per pass.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common import _agent as _common
from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _health
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _compute
from ansible_collections.oci_gpu.cluster.plugins.module_utils.power._request import (
    ACTIONS,
    AgentError,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm import _nodestate
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._elastic import agent_nodesets, gpu_facts
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import expand
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import parse_show_node

PREFIX = "oci_gpu-power:"
LIVE_STATES = ("PROVISIONING", "STARTING", "RUNNING", "STOPPING", "STOPPED", "CREATING_IMAGE", "MOVING")

CONFIG_DEFAULTS: dict[str, Any] = {
    "cluster": None,
    "cluster_tag": _compute.DEFAULT_CLUSTER_TAG,
    "role_tag": _compute.DEFAULT_ROLE_TAG,
    "oci": {},
    "nodesets": {},
    "controllers": [],
    # this controller's SlurmctldHost name (default: the host name); the agent runs on every
    # controller and acts only on the one in charge (scontrol ping)
    "controller_name": None,
    "spool_dir": "/var/spool/oci-gpu-power",
    "state_file": "/var/lib/oci-gpu-power/state.json",
    "audit_log": "/var/log/oci-gpu-power/audit.jsonl",
    "ssh_key": "/etc/oci-gpu-power/id_ed25519",
    "ssh_user": "opc",
    "ssh_timeout": 20,
    "munge_key": "/etc/munge/munge.key",
    "scontrol": "scontrol",
    "timeout": 60,
    "oci_attempts": 3,
    "max_launches": 20,
    "max_terminations": 20,
    # seconds an instance of a powered-down node may live before the reconcile terminates it
    "orphan_grace_s": 300,
    # seconds a launch may take to run slurmd before the agent stops bootstrapping it (Slurm's
    # ResumeTimeout; slurmctld then runs ResumeFailProgram, which terminates it)
    "resume_timeout_s": 1800,
    "user_data": "",
    # more slurmd options on the new node (after --conf-server and -N)
    "slurmd_options": "",
    # the GPU health check (gpu/_health) a GPU node gets at join and passes before slurmd starts:
    # {"program", "config", "python", "settings": the program's settings but node, gpu_count, fabric}
    # (None: no check at join)
    "health": None,
    # files every new node gets before slurmd starts: [{"path", "mode", "content"}] (the slurm role's GPU job map
    # prolog and epilog: slurm.conf names their directories, and a Prolog glob that matches nothing fails every job)
    "node_files": [],
}

if TYPE_CHECKING:
    Runner = Callable[[Sequence[str], float, "str | None"], tuple[int, str, str]]


def read_requests(spool_dir: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The requests in arrival order, and their files (removed once the pass has taken them in)."""
    out, files = [], []
    try:
        names = sorted(n for n in os.listdir(spool_dir) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        return [], []
    for name in names:
        path = os.path.join(spool_dir, name)
        try:
            with open(path, encoding="utf-8") as fh:
                req = json.load(fh)
        except (OSError, ValueError):
            continue
        if req.get("action") in ACTIONS and isinstance(req.get("nodes"), list):
            out.append(req)
            files.append(path)
    return out, files


# -- state and audit (common/_agent: write ahead, fsync, rename) -----------------------------------
def load_records(path: str) -> dict[str, Any]:
    return _common.load_records(path, AgentError)


def save_records(path: str, records: Mapping[str, Any]) -> None:
    _common.save_records(path, records)


def audit(path: str | None, lines: list[dict[str, Any]], now: float, **fields: Any) -> None:
    line = _common.audit_line(now, **fields)
    lines.append(line)
    _common.append_audit(path, line)


# -- the plan (pure) ----------------------------------------------------------------------------------
def elastic_nodes(nodesets: Mapping[str, Any]) -> dict[str, str]:
    """node name -> its node set's name."""
    return {node: name for name, ns in nodesets.items() for node in expand(str(ns["nodes"]))}


def _powered_down(node: Mapping[str, Any]) -> bool:
    flags = set(node.get("flags") or [])
    return bool(flags & {"POWERED_DOWN", "POWERING_DOWN"}) and "POWERING_UP" not in flags


def _powering_up(node: Mapping[str, Any]) -> bool:
    return "POWERING_UP" in set(node.get("flags") or [])


def _given_up(node: Mapping[str, Any]) -> bool:
    """DOWN by this agent (a capacity error): no launch until a person or Slurm resumes it."""
    return node.get("state") == "DOWN" and str(node.get("reason") or "").startswith(PREFIX)


def _busy(node: Mapping[str, Any]) -> bool:
    """Jobs on it (a suspend request older than a resume that followed it must not end them)."""
    return node.get("state") in ("ALLOCATED", "MIXED", "COMPLETING") or "COMPLETING" in set(node.get("flags") or [])


def _up(node: Mapping[str, Any]) -> bool:
    """Slurm counts on the node: neither down nor powered down nor on its way up or down."""
    return (
        bool(node)
        and node.get("state") not in ("DOWN", "")
        and not _powered_down(node)
        and not _powering_up(node)
        and "POWER_DOWN" not in set(node.get("flags") or [])
    )


def plan_pass(
    records: Mapping[str, Any],
    requests: Iterable[Mapping[str, Any]],
    slurm: Mapping[str, Any],
    instances: Mapping[str, list[dict[str, Any]]],
    cfg: Mapping[str, Any],
    now: float,
) -> dict[str, Any]:
    """``{"records": new records, "actions": [{"node", "do", ...}], "notes": [...]}``.

    ``instances``: node name -> live instances of the cluster with that display name
    (``{"id", "state", "created", "ip"}``), ``slurm``: ``parse_show_node`` of the elastic nodes."""
    names = elastic_nodes(cfg["nodesets"])
    recs = {k: dict(v) for k, v in records.items()}
    actions: list[dict[str, Any]] = []
    notes: list[str] = []
    wanted: dict[str, str] = {}  # node -> the last action asked for it
    for req in requests:
        for node in req["nodes"]:
            if node in names:
                wanted[node] = req["action"]
            else:
                notes.append(f"{req['action']} {node}: not an elastic node; ignored")
    launches = terminations = 0

    def terminate(node: str, inst: Mapping[str, Any], why: str) -> None:
        nonlocal terminations
        if terminations >= int(cfg["max_terminations"]):
            notes.append(f"{node}: terminate of {inst['id']} waits (max_terminations {cfg['max_terminations']})")
            return
        terminations += 1
        recs[node] = {"phase": "terminating", "instance_id": inst["id"], "since": now, "why": why}
        actions.append({"node": node, "do": "terminate", "instance_id": inst["id"], "why": why})

    for node in sorted(names):
        live = instances.get(node) or []
        rec = recs.get(node)
        snode = slurm.get(node) or {}
        want = wanted.get(node)
        if len(live) > 1:  # never guess which one is the node: terminate none, launch none
            notes.append(f"{node}: {len(live)} live instances ({', '.join(i['id'] for i in live)}); left as they are")
            continue
        inst = live[0] if live else None
        if want in ("suspend", "resume-fail") and _busy(snode) and not _powered_down(snode):
            notes.append(f"{node}: {want} ignored: Slurm shows jobs on it ({snode.get('state')})")
            want = None
        if want in ("suspend", "resume-fail"):
            if inst:
                terminate(node, inst, want)
            else:
                recs.pop(node, None)
                actions.append({"node": node, "do": "note", "text": f"{want}: no instance"})
            continue
        if rec and rec.get("phase") == "terminating":
            if inst is None:
                recs.pop(node)
            elif want == "resume":
                notes.append(f"{node}: resume waits for {inst['id']} to terminate")
            continue
        if want == "resume" or (_powering_up(snode) and not rec and not _given_up(snode)):
            if inst:  # adopt: a second resume, or an instance launched before a crash
                if not rec or rec.get("instance_id") != inst["id"]:
                    recs[node] = {"phase": "bootstrapping", "instance_id": inst["id"], "since": now}
                    actions.append({"node": node, "do": "note", "text": f"adopted {inst['id']}: no launch"})
            elif rec and rec.get("phase") == "launching":
                pass  # the launch under way (its retry token answers a repeat)
            elif launches >= int(cfg["max_launches"]):
                notes.append(f"{node}: launch waits (max_launches {cfg['max_launches']})")
                continue
            else:
                launches += 1
                token = uuid.uuid4().hex
                recs[node] = {"phase": "launching", "token": token, "since": now, "nodeset": names[node]}
                actions.append({"node": node, "do": "launch", "token": token})
                continue
            rec = recs.get(node)
        if rec and rec.get("phase") == "launching":
            if inst:
                recs[node] = {**rec, "phase": "bootstrapping", "instance_id": inst["id"]}
                rec = recs[node]
            elif now - float(rec.get("since") or now) > float(cfg["resume_timeout_s"]):
                recs.pop(node)
                notes.append(f"{node}: launch never showed an instance within the resume timeout")
                continue
            elif not rec.get("sent"):
                actions.append({"node": node, "do": "launch", "token": rec["token"]})
                continue
            else:
                continue
        if rec and rec.get("phase") == "bootstrapping" and inst:
            if now - float(rec.get("since") or now) > float(cfg["resume_timeout_s"]):
                notes.append(f"{node}: not bootstrapped within the resume timeout; ResumeFailProgram ends it")
            elif inst["state"] == "RUNNING" and inst.get("ip"):
                actions.append({"node": node, "do": "bootstrap", "instance_id": inst["id"], "ip": inst["ip"]})
            continue
        if rec and rec.get("phase") == "bootstrapping" and not inst:
            recs.pop(node)
            rec = None
        # reconcile
        in_flight = rec is not None and rec.get("phase") in ("launching", "bootstrapping")
        if inst and snode and _powered_down(snode) and not in_flight:
            age = now - float(inst.get("created") or now)
            if age >= float(cfg["orphan_grace_s"]):
                terminate(node, inst, "reconcile: the node is powered down")
            else:
                notes.append(f"{node}: {inst['id']} runs while the node is powered down ({age:.0f} s, grace)")
            continue
        if not inst and _up(snode) and not in_flight:
            recs.pop(node, None)
            actions.append({"node": node, "do": "power_down", "why": "reconcile: no instance"})
    return {"records": recs, "actions": actions, "notes": notes}


# -- reading ------------------------------------------------------------------------------------------
_run = _common.run_command


_short = _common.short_error


def standby(cfg: Mapping[str, Any], run: Runner) -> str | None:
    """None on the controller in charge; on another, why it stands by. Raises when ping cannot tell."""
    rc, out, err = run([cfg["scontrol"], "ping"], float(cfg["timeout"]), None)
    waiting, blind = _nodestate.standby(rc, out, err, cfg.get("controller_name") or socket.gethostname())
    if blind:
        raise AgentError(blind)
    return waiting


def read_slurm(cfg: Mapping[str, Any], run: Runner, names: Iterable[str]) -> dict[str, Any]:
    rc, out, err = run([cfg["scontrol"], "show", "node"], float(cfg["timeout"]), None)
    if rc != 0:
        raise AgentError(f"scontrol show node: rc {rc}: {(err or out).strip()[:300]}")
    nodes = parse_show_node(out)
    missing = sorted(set(names) - set(nodes))
    if missing:  # without PrivateData=cloud a powered-down node is invisible: never guess its state
        raise AgentError(f"scontrol show node does not list {', '.join(missing[:5])} (PrivateData=cloud?)")
    return nodes


def read_instances(
    cfg: Mapping[str, Any], clients: Mapping[str, Any], names: Iterable[str], need_ip: Iterable[str] = ()
) -> dict[str, list]:
    """The cluster's live instances of the elastic nodes, by name; the address only of the nodes in ``need_ip``
    (those being brought up: two calls each, so a pass over a large settled cluster costs ListInstances only)."""
    compute, network = clients["compute"], clients["network"]
    need = set(need_ip)
    wanted = set(names)
    comps = sorted({ns["compartment_id"] for ns in cfg["nodesets"].values()})
    out: dict[str, list[dict[str, Any]]] = {}
    for comp in comps:
        for inst in _oci_auth.list_all(compute.list_instances, comp):
            name = inst.get("display_name") or ""
            if name not in wanted or inst.get("lifecycle_state") not in LIVE_STATES:
                continue
            if _compute.ownership_problem(inst, cfg["cluster"], cfg["cluster_tag"]) is not None:
                continue
            out.setdefault(name, []).append(
                {"id": inst["id"], "state": inst["lifecycle_state"], "created": _epoch(inst.get("time_created"))}
            )
    for name, insts in out.items():
        for i in insts:
            if i["state"] == "RUNNING" and name in need:
                vnic = _compute.primary_vnic(compute, network, {"id": i["id"], "compartment_id": _comp_of(cfg, name)})
                i["ip"] = (vnic or {}).get("private_ip")
    return out


def _comp_of(cfg: Mapping[str, Any], node: str) -> str:
    return cfg["nodesets"][elastic_nodes(cfg["nodesets"])[node]]["compartment_id"]


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    import datetime

    try:
        return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# -- acting -------------------------------------------------------------------------------------------
class Actor:
    def __init__(self, cfg: Mapping[str, Any], run: Runner, clients: Mapping[str, Any] | None) -> None:
        self.cfg, self.run, self.clients = cfg, run, clients

    def note(self, node: str, rec: dict[str, Any], text: str) -> str:
        return text

    def _scontrol(self, *args: str) -> str:
        rc, out, err = self.run([self.cfg["scontrol"], *args], float(self.cfg["timeout"]), None)
        if rc != 0:
            raise AgentError(f"scontrol {' '.join(args[:2])}: {(err or out).strip()[:300]}")
        return out

    def power_down(self, node: str, rec: dict[str, Any], why: str) -> str:
        self._scontrol("update", f"NodeName={node}", "State=POWER_DOWN_FORCE", f"Reason={PREFIX} {why}")
        return f"POWER_DOWN_FORCE ({why})"

    def terminate(self, node: str, rec: dict[str, Any], instance_id: str, why: str) -> str:
        if self.clients is None:
            raise AgentError("no OCI client")
        inst = _compute.get_instance(self.clients["compute"], instance_id)
        if inst is None or inst.get("lifecycle_state") in _compute.GONE_STATES:
            return f"{instance_id} already gone"
        problem = _compute.ownership_problem(inst, self.cfg["cluster"], self.cfg["cluster_tag"])
        if problem:
            raise AgentError(problem)
        ns = self.cfg["nodesets"][elastic_nodes(self.cfg["nodesets"])[node]]
        if ns.get("instance_pool_id"):
            oci = _oci_auth.oci
            details = oci.core.models.DetachInstancePoolInstanceDetails(
                instance_id=instance_id, is_decrement_size=True, is_auto_terminate=True
            )
            self.clients["compute_management"].detach_instance_pool_instance(ns["instance_pool_id"], details)
            self._forget(instance_id)
            return f"detach {instance_id} from pool {ns['instance_pool_id']} (terminated by OCI; {why})"
        self.clients["compute"].terminate_instance(instance_id, preserve_boot_volume=False)
        self._forget(instance_id)
        return f"terminate {instance_id} ({why})"

    def _forget(self, instance_id: str) -> None:
        known = os.path.join(os.path.dirname(self.cfg["state_file"]), "known_hosts.d", os.path.basename(instance_id))
        if os.path.exists(known):
            os.unlink(known)

    def _public_key(self) -> str:
        with open(self.cfg["ssh_key"] + ".pub", encoding="utf-8") as fh:
            return fh.read().strip()

    def launch(self, node: str, rec: dict[str, Any], token: str) -> str:
        if self.clients is None:
            raise AgentError("no OCI client")
        oci = _oci_auth.oci
        ns = self.cfg["nodesets"][rec["nodeset"]]
        tag_ns, tag_key = _compute.split_tag(self.cfg["cluster_tag"], "cluster_tag")
        role_ns, role_key = _compute.split_tag(self.cfg["role_tag"], "role_tag")
        tags: dict[str, dict[str, str]] = {tag_ns: {tag_key: self.cfg["cluster"]}}
        # "elastic", never "compute": the inventory puts it in slurm_elastic, so a slurm playbook run
        # while it is up does not take it for a static compute host
        tags.setdefault(role_ns, {})[role_key] = _compute.ELASTIC_ROLE
        metadata = {"ssh_authorized_keys": self._public_key()}
        if self.cfg.get("user_data"):
            metadata["user_data"] = base64.b64encode(str(self.cfg["user_data"]).encode()).decode()
        flex = {k: ns[k] for k in ("ocpus", "memory_in_gbs") if ns.get(k)}
        details = oci.core.models.LaunchInstanceDetails(
            compartment_id=ns["compartment_id"],
            availability_domain=ns["availability_domain"],
            fault_domain=ns.get("fault_domain"),
            shape=ns["shape"],
            shape_config=oci.core.models.LaunchInstanceShapeConfigDetails(**flex) if flex else None,
            display_name=node,
            create_vnic_details=oci.core.models.CreateVnicDetails(
                subnet_id=ns["subnet_id"], hostname_label=node, assign_public_ip=False
            ),
            metadata=metadata,
            defined_tags=tags,
            freeform_tags=dict(ns.get("freeform_tags") or {}) or None,
            source_details=oci.core.models.InstanceSourceViaImageDetails(
                image_id=ns["image_id"], boot_volume_size_in_gbs=ns.get("boot_volume_size_gbs")
            ),
            compute_cluster_id=ns.get("compute_cluster_id"),
        )
        try:
            inst = self.clients["compute"].launch_instance(details, opc_retry_token=token).data
        except oci.exceptions.ServiceError as exc:
            if _compute.is_capacity_error(exc.status, exc.code, exc.message):
                reason = f"{PREFIX} no capacity for {ns['shape']} in {ns['availability_domain']}: {exc.message}"
                self._scontrol("update", f"NodeName={node}", "State=DOWN", f"Reason={reason[:250]}")
                rec["phase"] = "failed"
                raise AgentError(reason) from exc
            raise
        rec["sent"] = True
        rec["instance_id"] = inst.id
        if ns.get("instance_pool_id"):
            details = oci.core.models.AttachInstancePoolInstanceDetails(instance_id=inst.id)
            self.clients["compute_management"].attach_instance_pool_instance(ns["instance_pool_id"], details)
        return f"launch {inst.id} ({ns['shape']})"

    def bootstrap(self, node: str, rec: dict[str, Any], instance_id: str, ip: str) -> str:
        """The munge key and configless slurmd, over SSH with the controller's key (stdin, never argv)."""
        try:
            with open(self.cfg["munge_key"], "rb") as fh:
                key = base64.b64encode(fh.read()).decode()
        except OSError as exc:
            raise AgentError(f"munge key {self.cfg['munge_key']}: {exc.strerror}") from exc
        servers = ",".join(self.cfg["controllers"])
        extra = str(self.cfg.get("slurmd_options") or "").strip()
        options = f"--conf-server {servers} -N {node}" + (f" {extra}" if extra else "")
        if not re.fullmatch(r"[A-Za-z0-9 ._:,=/@+-]*", options):
            raise AgentError(f"slurmd_options {extra!r}: letters, digits, spaces and ._:,=/@+- only")
        script = BOOTSTRAP.replace("@OPTIONS@", options).replace("@NODE_FILES@", node_files_script(self.cfg))
        stdin = f"MUNGE_KEY_B64={key}\n"
        health = self._health_files(node)
        if health:
            program, config, files = health
            stdin += f"HEALTH_PROGRAM_B64={files[0]}\nHEALTH_CONFIG_B64={files[1]}\n"
            script = script.replace("@HEALTH_PROGRAM@", program).replace("@HEALTH_CONFIG@", config)
        # trust on first use, per instance: an address OCI gives again to a new instance has a new host key
        known_dir = os.path.join(os.path.dirname(self.cfg["state_file"]), "known_hosts.d")
        os.makedirs(known_dir, mode=0o700, exist_ok=True)
        known = os.path.join(known_dir, instance_id)
        argv = [
            "ssh",
            "-i",
            self.cfg["ssh_key"],
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=accept-new",
            "-o",
            f"UserKnownHostsFile={known}",
            "-o",
            "ConnectTimeout=5",
            f"{self.cfg['ssh_user']}@{ip}",
            "sudo -n /bin/sh -s",
        ]
        rc, out, err = self.run(argv, float(self.cfg["ssh_timeout"]) + 120, stdin + script)
        if rc == HEALTH_FAILED and health:
            return self._unhealthy(node, rec, instance_id, ip, out)
        if rc != 0:
            raise AgentError(f"bootstrap over SSH to {ip}: rc {rc}: {(err or out).strip()[-300:]}")
        rec["phase"] = "up"
        rec["ip"] = ip
        passed = " after the GPU health check passed" if health else ""
        return f"munge key and configless slurmd on {ip} (conf server {servers}){passed}"

    def _health_files(self, node: str) -> tuple[str, str, tuple[str, str]] | None:
        """(program path, settings path, (program, settings) in base64) for a GPU node; None: no check."""
        health = self.cfg.get("health")
        ns = self.cfg["nodesets"][elastic_nodes(self.cfg["nodesets"])[node]]
        if not health or not int(ns.get("gpu_count") or 0):
            return None
        program, config = str(health["program"]), str(health["config"])
        for path in (program, config):
            if not re.fullmatch(r"/[A-Za-z0-9._/-]+", path):
                raise AgentError(f"health program or settings path {path!r}: an absolute path of ._/- and letters")
        with open(_health.__file__, encoding="utf-8") as fh:
            text = f"#!{health.get('python') or '/usr/bin/python3'}\n{fh.read()}"
        settings = {
            **(health.get("settings") or {}),
            "node": node,
            "gpu_count": int(ns["gpu_count"]),
            "fabric": ns.get("gpu_fabric"),
        }
        b64 = (base64.b64encode(text.encode()).decode(), base64.b64encode(json.dumps(settings).encode()).decode())
        return program, config, b64

    def _unhealthy(self, node: str, rec: dict[str, Any], instance_id: str, ip: str, out: str) -> str:
        """A node that failed the GPU health check at join: slurmd never started there. It is set DOWN with
        the check's reason (Slurm requeues its job) and its instance terminated, as after a capacity error:
        the agent's reason keeps the next resume off it until a person resumes it. (A drain would not hold:
        Slurm 24.11 clears it when it powers the node down.)"""
        lines = [ln.split(": ", 2)[-1] for ln in out.splitlines() if ln.startswith(_health.REASON_PREFIX)]
        problem = next((ln for ln in lines if ln not in ("failed", "passed")), "failed")
        reason = f"{PREFIX} gpu-health at join: {problem}"[:250]
        self._scontrol("update", f"NodeName={node}", "State=DOWN", f"Reason={reason}")
        done = self.terminate(node, rec, instance_id, "the GPU health check failed at join")
        rec.clear()
        rec.update(phase="terminating", instance_id=instance_id, since=time.time(), why="gpu-health at join")
        return f"the GPU health check failed on {ip}: {problem}; node down, {done}"


def node_files_script(cfg: Mapping[str, Any]) -> str:
    """Shell lines that write ``cfg["node_files"]`` on the node (each through a temporary file, then renamed)."""
    lines = []
    for f in cfg.get("node_files") or []:
        path, mode = str(f.get("path") or ""), str(f.get("mode") or "0644")
        if not re.fullmatch(r"/[A-Za-z0-9._/-]+", path) or "/../" in path + "/":
            raise AgentError(f"node_files path {path!r}: an absolute path of ._/- and letters")
        if not re.fullmatch(r"0?[0-7]{3}", mode):
            raise AgentError(f"node_files {path}: mode {mode!r} is not an octal mode")
        b64 = base64.b64encode(str(f.get("content") or "").encode()).decode()
        lines += [
            f"install -d -m 0755 {os.path.dirname(path)}",
            f"printf '%s' '{b64}' | base64 -d > {path}.new",
            f"chmod {mode} {path}.new",
            f"mv -f {path}.new {path}",
        ]
    return "\n".join(lines)


# The exit code of the join when the GPU health check fails (slurmd is not started).
HEALTH_FAILED = 86

# The node side of the join (run as root through sudo; the munge key, and for a GPU node the health
# check's program and settings, arrive on stdin as the first lines).
BOOTSTRAP = r"""set -eu
umask 077
if ! command -v slurmd >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1 || ! command -v srun >/dev/null 2>&1; then
  # no daemon starts from the packages' scripts: slurmd without its options would wait for a configuration forever
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod 0755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q munge slurmd slurm-client >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi
install -d -m 0700 -o munge -g munge /etc/munge
printf '%s' "$MUNGE_KEY_B64" | base64 -d > /etc/munge/.munge.key.new
unset MUNGE_KEY_B64
chown munge:munge /etc/munge/.munge.key.new
chmod 0400 /etc/munge/.munge.key.new
mv -f /etc/munge/.munge.key.new /etc/munge/munge.key
systemctl restart munge
if [ -n "${HEALTH_PROGRAM_B64:-}" ]; then
  # the GPU health check, as the gpu_node role installs it (Slurm's HealthCheckProgram runs it from now on)
  install -d -m 0755 "$(dirname @HEALTH_PROGRAM@)" "$(dirname @HEALTH_CONFIG@)"
  printf '%s' "$HEALTH_PROGRAM_B64" | base64 -d > @HEALTH_PROGRAM@.new
  printf '%s' "$HEALTH_CONFIG_B64" | base64 -d > @HEALTH_CONFIG@.new
  chmod 0755 @HEALTH_PROGRAM@.new
  chmod 0644 @HEALTH_CONFIG@.new
  mv -f @HEALTH_PROGRAM@.new @HEALTH_PROGRAM@
  mv -f @HEALTH_CONFIG@.new @HEALTH_CONFIG@
  unset HEALTH_PROGRAM_B64 HEALTH_CONFIG_B64
  # before slurmd: a node that fails never takes a job
  @HEALTH_PROGRAM@ --config @HEALTH_CONFIG@ --check-only || exit 86
fi
@NODE_FILES@
rm -f /etc/slurm/slurm.conf
printf 'SLURMD_OPTIONS="@OPTIONS@"\n' > /etc/default/slurmd
systemctl enable slurmd >/dev/null 2>&1 || true
# slurmd reports ready once it has its configuration; Slurm's ResumeTimeout judges the rest
systemctl restart --no-block slurmd
"""


# -- the pass -----------------------------------------------------------------------------------------
def run_pass(
    cfg: Mapping[str, Any],
    run: Runner = _run,
    clients: Mapping[str, Any] | None = None,
    now: float | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    now = time.time() if now is None else now
    log: list[dict[str, Any]] = []
    path = None if dry_run else cfg.get("audit_log")
    state_file = cfg["state_file"]
    with _common.pass_lock(state_file) as held:
        if not held:
            return {"plan": None, "results": [], "skipped": _common.SKIPPED_LOCKED}
        records = load_records(state_file)
        requests, files = read_requests(cfg["spool_dir"])
        names = list(elastic_nodes(cfg["nodesets"]))
        try:
            waiting = standby(cfg, run)
            if waiting:  # requests stay for this host's turn; a standby's slurmctld writes none
                return {"plan": None, "results": [], "skipped": waiting}
            slurm = read_slurm(cfg, run, names)
            if clients is None:
                raise AgentError("no OCI client")
            rising = {n for n, r in records.items() if r.get("phase") in ("launching", "bootstrapping")}
            rising |= {n for req in requests if req["action"] == "resume" for n in req["nodes"]}
            rising |= {n for n in names if _powering_up(slurm.get(n) or {})}
            instances = read_instances(cfg, clients, names, rising)
        except Exception as exc:  # a pass that cannot read both sides destroys nothing; requests wait
            audit(path, log, now, node=None, action="pass", result="nothing done", problem=_short(exc))
            return {"plan": None, "results": log, "skipped": _short(exc)}
        plan = plan_pass(records, requests, slurm, instances, cfg, now)
        if dry_run:
            return {"plan": plan, "results": [], "skipped": None}
        new = plan["records"]
        save_records(state_file, new)  # write ahead: a crash from here on resumes, never repeats blindly
        for f in files:  # the requests are in the records now
            os.unlink(f)
        for req in requests:
            audit(path, log, now, node=None, action="request", result=req["action"], nodes=req["nodes"])
        actor = Actor(cfg, run, clients)
        for act in plan["actions"]:
            node = act["node"]
            rec = new.setdefault(node, {}) if act["do"] in ("launch", "bootstrap") else new.get(node, {})
            args = {k: v for k, v in act.items() if k not in ("node", "do")}
            entry = {"node": node, "action": act["do"], "phase": rec.get("phase"), **args}
            entry.pop("token", None)
            try:
                entry.update(result="ok", detail=getattr(actor, act["do"])(node, rec, **args))
            except Exception as exc:
                entry.update(result="error", error=_short(exc))
            if rec.get("phase") == "failed":
                new.pop(node, None)
            save_records(state_file, new)
            audit(path, log, now, **entry)
        for note in plan["notes"]:
            audit(path, log, now, node=None, action="note", result=note)
        return {"plan": plan, "results": log, "skipped": None}


def make_clients(cfg: Mapping[str, Any]) -> dict[str, Any] | None:
    # launches are not retried on capacity errors (they must fail at once and name the shape)
    if not _oci_auth.HAS_OCI:
        return None
    return _compute.agent_clients(dict(cfg), compute_retry=_compute.launch_retry_strategy())


def load_config(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            given = json.load(fh)
    except (OSError, ValueError) as exc:
        raise AgentError(f"power settings {path}: {exc}") from exc
    cfg = dict(CONFIG_DEFAULTS)
    cfg.update(given)
    for key in ("cluster", "nodesets", "controllers"):
        if not cfg.get(key):
            raise AgentError(f"power settings {path}: {key} is required")
    if isinstance(cfg["nodesets"], list):  # slurm_elastic_nodesets as the site wrote them
        sets = agent_nodesets(cfg["nodesets"])
        cfg["nodesets"] = {str(ns["name"]): {**ns, **sets[str(ns["name"])]} for ns in cfg["nodesets"]}
    else:  # already by name, with their node hostlists: the GPUs from the shape unless given
        cfg["nodesets"] = {name: {**gpu_facts(ns), **ns} for name, ns in cfg["nodesets"].items()}
    return cfg


def main(argv: Sequence[str] | None = None) -> int:
    return _common.cli(
        argv,
        prog="oci-gpu-power",
        description="One pass of the elastic capacity agent.",
        config="/etc/oci-gpu-power/settings.json",
        load_config=load_config,
        make_clients=make_clients,
        run_pass=run_pass,
        errors=(AgentError, _oci_auth.OciAuthError),
        hidden=("token",),
    )
