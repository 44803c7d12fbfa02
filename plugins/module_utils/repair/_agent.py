# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The repair agent's pass: read Slurm and OCI, plan (``repair/_machine``), persist, act, log.

One pass (:func:`run_pass`):

1. Take the state file's lock (a second pass at the same time, e.g. the timer and a manual run,
   exits at once and does nothing).
2. Read Slurm's nodes (``scontrol show node``), the acceptance jobs in progress, and the cluster's
   instances (ListInstances in the compartment, only those whose defined tag names this cluster),
   their compute hosts' health (ListComputeHosts), maintenance events
   (ListInstanceMaintenanceEvents) and instance pool members with their cluster networks
   (ListInstancePools, ListInstancePoolInstances, ListClusterNetworks). Any read that fails makes
   the pass incomplete, and an incomplete pass does nothing at all (logged with the reason).
3. :func:`~_machine.plan_pass` with the records from the state file.
4. Write the new records (atomically: temporary file, fsync, rename) **before** acting, then carry
   out the actions in order. A node's remaining actions are skipped after one of them fails; the
   next pass sees where it stands and plans again.
5. One JSON line per action in the audit log: time, node, action, the phase the node is in, the
   instance OCID, the result (``ok``, ``error`` with the message, ``dry-run``).

The dry run (``dry_run=True``) reads the same state and computes the same plan, prints it, and
changes nothing: no Slurm write, no OCI write, no state file, no audit line.

A terminate first records, from OCI, what the relaunch needs (shape, availability and fault domain,
subnet, private IP, hostname label, image, metadata, tags, compute cluster) in the node's record
and refuses an instance that does not carry the cluster's defined tag. The relaunch asks for the
same private IP and hostname label, so Slurm's NodeName and NodeAddr stay true, and carries the
retry token the record holds. The host report is the defined tag OCI reads when an instance is
terminated (``ComputeInstanceHostActions.CustomerReportedHostStatus``), merged into the instance's
own tags, never replacing them.
"""

from __future__ import annotations

import datetime
import json
import re
import socket
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common import _agent as _common
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _compute
from ansible_collections.oci_gpu.cluster.plugins.module_utils.repair import _machine
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm import _nodestate
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import parse_show_node
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._reservation import MAINTENANCE_FLAGS

HOST_REPORT_NAMESPACE = "ComputeInstanceHostActions"
HOST_REPORT_KEY = "CustomerReportedHostStatus"
HOST_REPORT_VALUE = "unhealthy"

CONFIG_DEFAULTS: dict[str, Any] = {
    "cluster": None,
    "cluster_tag": _compute.DEFAULT_CLUSTER_TAG,
    "role_tag": _compute.DEFAULT_ROLE_TAG,
    "oci": {},
    "state_file": "/var/lib/oci-gpu-repair/state.json",
    "audit_log": "/var/log/oci-gpu-repair/audit.jsonl",
    "machine": {},
    "host_health": True,
    "acceptance": {"command": "nvidia-smi -L", "gpus": None, "time_limit_min": 10, "user": "root"},
    "reservation_minutes": 120,
    "scontrol": "scontrol",
    # this controller's SlurmctldHost name (default: the host name); the agent runs on every
    # controller and acts only on the one in charge (scontrol ping)
    "controller_name": None,
    "sbatch": "sbatch",
    "squeue": "squeue",
    "timeout": 60,
    "oci_attempts": 3,
    # the site's add-node path for a relaunched node, run once it is RUNNING: argv with {node},
    # {instance_id} and {ip}; empty: the node joins by itself (cloud-init, configless slurmd)
    "join_command": [],
    "join_command_timeout": 60,
}

if TYPE_CHECKING:  # a type only: Python 3.8 cannot subscript collections.abc.Callable at run time
    Runner = Callable[[Sequence[str], float], tuple[int, str, str]]


class AgentError(Exception):
    """A configuration or state problem with a message fit for the log."""


def load_config(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            given = json.load(fh)
    except (OSError, ValueError) as exc:
        raise AgentError(f"repair settings {path}: {exc}") from exc
    cfg = dict(CONFIG_DEFAULTS)
    cfg.update(given)
    if not cfg.get("cluster"):
        raise AgentError(f"repair settings {path}: cluster is required")
    if not (cfg.get("oci") or {}).get("compartment_id"):
        raise AgentError(f"repair settings {path}: oci.compartment_id is required")
    try:
        cfg["machine"] = _machine.settings_from(cfg.get("machine"))
    except _machine.SettingsError as exc:
        raise AgentError(f"repair settings {path}: {exc}") from exc
    return cfg


run_command = _common.run_command


# -- state file (common/_agent: write ahead, fsync, rename) -----------------------------------------
def load_records(path: str) -> dict[str, Any]:
    return _common.load_records(path, AgentError)


def save_records(path: str, records: dict[str, Any]) -> None:
    _common.save_records(path, records, sync_dir=True)


class Audit:
    def __init__(self, path: str | None, now: Callable[[], float] = time.time) -> None:
        self.path, self.now = path, now
        self.lines: list[dict[str, Any]] = []

    def log(self, **fields: Any) -> None:
        line = _common.audit_line(self.now(), **fields)
        self.lines.append(line)
        _common.append_audit(self.path, line)


# -- reading ------------------------------------------------------------------------------------------
def read_slurm(cfg: dict[str, Any], run: Runner) -> tuple[dict[str, Any] | None, str | None]:
    rc, out, err = run([cfg["scontrol"], "show", "node"], cfg["timeout"])
    if rc != 0:
        return None, f"scontrol show node: rc {rc}: {(err or out).strip()[:300]}"
    nodes = parse_show_node(out)
    if not nodes:
        return None, "scontrol show node listed no node"
    return nodes, None


_JOB = re.compile(r"(?:^|\s)JobState=(\S+)")
_EXIT = re.compile(r"(?:^|\s)ExitCode=(\S+)")


def read_jobs(cfg: dict[str, Any], run: Runner, job_ids: Sequence[str]) -> dict[str, Any]:
    jobs: dict[str, Any] = {}
    for job_id in job_ids:
        rc, out, _err = run([cfg["scontrol"], "show", "job", "-o", str(job_id)], cfg["timeout"])
        state, code = _JOB.search(out or ""), _EXIT.search(out or "")
        if rc == 0 and state:
            jobs[str(job_id)] = {"state": state.group(1), "exit": code.group(1) if code else ""}
    return jobs


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    text = str(value).replace("Z", "+00:00")
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _duration_s(text: Any, default: float = 4 * 3600) -> float:
    """ISO 8601 durations as OCI writes them (``PT4H``, ``PT30M``, ``P1DT2H``)."""
    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?", str(text or ""))
    if not m or not any(m.groups()):
        return default
    d, h, mi, s = (int(x or 0) for x in m.groups())
    return float(((d * 24 + h) * 60 + mi) * 60 + s)


def read_oci(cfg: dict[str, Any], clients: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any], list[str]]:
    """(instances by node name, maintenance events by instance OCID, problems)."""
    compute = clients["compute"]
    comp = cfg["oci"]["compartment_id"]
    problems: list[str] = []
    try:
        listed = _oci_auth.list_all(compute.list_instances, comp)
    except Exception as exc:  # any failure to read is a reason to do nothing
        return None, {}, [f"ListInstances: {_short(exc)}"]
    # the elastic agent's instances are its own: a faulty one is powered down and released, never repaired
    mine = [
        i
        for i in listed
        if _compute.ownership_problem(i, cfg["cluster"], cfg["cluster_tag"]) is None
        and (_compute.tag_value(i, cfg["role_tag"]) or "").lower() != _compute.ELASTIC_ROLE
    ]
    health: dict[str, dict[str, Any]] = {}
    if cfg.get("host_health", True):
        try:
            for host in _oci_auth.list_all(compute.list_compute_hosts, comp):
                if host.get("instance_id"):
                    health[host["instance_id"]] = host
        except Exception as exc:
            problems.append(f"ListComputeHosts: {_short(exc)}")
    events: dict[str, list[dict[str, Any]]] = {}
    try:
        for ev in _oci_auth.list_all(compute.list_instance_maintenance_events, comp):
            start = _epoch(ev.get("time_window_start"))
            events.setdefault(ev.get("instance_id") or "", []).append(
                {
                    "id": ev.get("id"),
                    "state": ev.get("lifecycle_state"),
                    "start": start,
                    "end": None if start is None else start + _duration_s(ev.get("start_window_duration")),
                }
            )
    except Exception as exc:
        problems.append(f"ListInstanceMaintenanceEvents: {_short(exc)}")
    # pool members leave their pool before a replacement, cluster networks' are never replaced (see _machine)
    pools: dict[str, str] = {}
    networks: dict[str, str] = {}  # pool OCID -> its cluster network's
    manage = clients.get("compute_management")
    try:
        if manage is None:
            raise AgentError("no Compute Management client")
        for cn in _oci_auth.list_all(manage.list_cluster_networks, comp):
            if cn.get("lifecycle_state") not in ("TERMINATING", "TERMINATED"):
                networks.update({p["id"]: cn["id"] for p in cn.get("instance_pools") or []})
        for pool in _oci_auth.list_all(manage.list_instance_pools, comp):
            if pool.get("lifecycle_state") in ("TERMINATING", "TERMINATED"):
                continue
            for member in _oci_auth.list_all(manage.list_instance_pool_instances, comp, pool["id"]):
                pools[member["id"]] = pool["id"]
    except Exception as exc:
        problems.append(f"ListInstancePools: {_short(exc)}")
    by_name: dict[str, list[dict[str, Any]]] = {}
    for inst in mine:
        host = health.get(inst["id"]) or {}
        by_name.setdefault(inst.get("display_name") or "", []).append(
            {
                "id": inst["id"],
                "state": inst.get("lifecycle_state"),
                "health": host.get("health"),
                "impacted": bool(host.get("has_impacted_components")),
                "pool": pools.get(inst["id"]),
                "cluster_network": networks.get(pools.get(inst["id"]) or ""),
            }
        )
    return by_name, events, problems


_short = _common.short_error


def standby(cfg: dict[str, Any], run: Runner) -> tuple[str | None, str | None]:
    """(why this controller stands by, why ping could not tell); both None on the controller in charge."""
    rc, out, err = run([cfg["scontrol"], "ping"], cfg["timeout"])
    return _nodestate.standby(rc, out, err, cfg.get("controller_name") or socket.gethostname())


def observe(
    cfg: dict[str, Any], records: dict[str, Any], run: Runner, clients: dict[str, Any] | None
) -> dict[str, Any]:
    problems: list[str] = []
    nodes, why = read_slurm(cfg, run)
    if why:
        problems.append(why)
    if nodes is not None:  # elastic (State=CLOUD) nodes are the elastic agent's: never repaired
        nodes = {n: v for n, v in nodes.items() if "CLOUD" not in (v.get("flags") or [])}
    if clients is None:
        instances, events = None, {}
        problems.append("no OCI client")
    else:
        instances, events, oci_problems = read_oci(cfg, clients)
        problems += oci_problems
    job_ids = [str(r["job_id"]) for r in records.values() if r.get("phase") == "accepting" and r.get("job_id")]
    jobs = read_jobs(cfg, run, job_ids) if nodes is not None else {}
    return _machine.observation(nodes, instances, events, jobs, problems)


# -- acting -------------------------------------------------------------------------------------------
class Actor:
    """Carries out one node's actions; every method raises on failure (the pass logs it)."""

    def __init__(self, cfg: dict[str, Any], run: Runner, clients: dict[str, Any] | None, now: float) -> None:
        self.cfg, self.run, self.clients, self.now = cfg, run, clients, now

    def _scontrol(self, *args: str) -> str:
        rc, out, err = self.run([self.cfg["scontrol"], *args], self.cfg["timeout"])
        if rc != 0:
            raise AgentError(f"scontrol {args[0]} {args[1] if len(args) > 1 else ''}: {(err or out).strip()[:300]}")
        return out

    def drain(self, node: str, rec: dict[str, Any], reason: str) -> str:
        self._scontrol("update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}")
        return reason

    def resume(self, node: str, rec: dict[str, Any]) -> str:
        self._scontrol("update", f"NodeName={node}", "State=RESUME")
        return "resumed"

    def requeue(self, node: str, rec: dict[str, Any]) -> str:
        rc, out, err = self.run([self.cfg["squeue"], "-h", "-w", node, "-o", "%A"], self.cfg["timeout"])
        if rc != 0:
            raise AgentError(f"squeue -w {node}: {(err or out).strip()[:300]}")
        ids = [x for x in out.split() if x.isdigit()]
        for job_id in ids:
            self._scontrol("requeue", job_id)
        return "requeued " + (",".join(ids) or "nothing")

    def reserve(self, node: str, rec: dict[str, Any], name: str, start: float, end: float | None) -> str:
        minutes = self.cfg["reservation_minutes"] if end is None else max(1, int((float(end) - self.now) / 60) + 1)
        argv = [
            self.cfg["scontrol"],
            "create",
            "reservation",
            f"ReservationName={name}",
            f"Nodes={node}",
            f"Users={self.cfg['acceptance'].get('user') or 'root'}",
            "StartTime=now",
            f"Duration={minutes}",
            "Flags=" + ",".join(MAINTENANCE_FLAGS),
        ]
        rc, out, err = self.run(argv, self.cfg["timeout"])
        if rc != 0 and "duplicate" not in (err + out).lower() and "exists" not in (err + out).lower():
            raise AgentError(f"scontrol create reservation {name}: {(err or out).strip()[:300]}")
        return f"{name} for {minutes} min"

    def unreserve(self, node: str, rec: dict[str, Any], name: str) -> str:
        rc, out, err = self.run([self.cfg["scontrol"], "delete", f"ReservationName={name}"], self.cfg["timeout"])
        if rc != 0 and "not found" not in (err + out).lower() and "invalid reservation" not in (err + out).lower():
            raise AgentError(f"scontrol delete reservation {name}: {(err or out).strip()[:300]}")
        return name

    def accept(self, node: str, rec: dict[str, Any], reservation: str) -> str:
        acc = self.cfg["acceptance"]
        argv = [
            self.cfg["sbatch"],
            "--parsable",
            f"--reservation={reservation}",
            f"--nodelist={node}",
            "--nodes=1",
            "--exclusive",
            f"--time={int(acc.get('time_limit_min') or 10)}",
            "--job-name=oci-gpu-repair-accept",
            "--output=/dev/null",
        ]
        if acc.get("gpus"):
            argv.append(f"--gres=gpu:{int(acc['gpus'])}")
        argv += ["--wrap", acc.get("command") or "nvidia-smi -L"]
        rc, out, err = self.run(argv, self.cfg["timeout"])
        job_id = out.strip().split(";")[0]
        if rc != 0 or not job_id.isdigit():
            raise AgentError(f"sbatch acceptance job: {(err or out).strip()[:300]}")
        rec["job_id"] = job_id
        return f"job {job_id}"

    # -- OCI --
    def _compute(self) -> Any:
        if self.clients is None:
            raise AgentError("no OCI client")
        return self.clients["compute"]

    def _owned(self, instance_id: str) -> dict[str, Any]:
        inst = _compute.get_instance(self._compute(), instance_id)
        if inst is None:
            raise AgentError(f"instance {instance_id} not found")
        problem = _compute.ownership_problem(inst, self.cfg["cluster"], self.cfg["cluster_tag"])
        if problem:
            raise AgentError(problem)
        return inst

    def reboot(self, node: str, rec: dict[str, Any], instance_id: str) -> str:
        self._owned(instance_id)
        self._compute().instance_action(instance_id, "RESET")
        return f"RESET {instance_id}"

    def report_host(self, node: str, rec: dict[str, Any], instance_id: str, text: str) -> str:
        oci = _oci_auth.oci
        inst = self._owned(instance_id)
        tags = {ns: dict(v or {}) for ns, v in (inst.get("defined_tags") or {}).items()}
        tags.setdefault(HOST_REPORT_NAMESPACE, {})[HOST_REPORT_KEY] = HOST_REPORT_VALUE
        self._compute().update_instance(instance_id, oci.core.models.UpdateInstanceDetails(defined_tags=tags))
        return f"{HOST_REPORT_NAMESPACE}.{HOST_REPORT_KEY}={HOST_REPORT_VALUE}"

    def _going(self, rec: dict[str, Any], instance_id: str) -> str | None:
        """Before an instance goes: its state if it already went, else None once what the relaunch
        needs is read and kept in the record."""
        inst = self._owned(instance_id)
        if inst.get("lifecycle_state") in _compute.GONE_STATES:
            return f"{instance_id} already {inst.get('lifecycle_state')}"
        if not rec.get("template"):
            vnic = _compute.primary_vnic(self._compute(), self.clients["network"], inst) if self.clients else None
            if not vnic:
                raise AgentError(f"instance {instance_id} has no primary VNIC to relaunch from: not terminated")
            rec["template"] = template_from(inst, vnic)
        return None

    def terminate(self, node: str, rec: dict[str, Any], instance_id: str) -> str:
        gone = self._going(rec, instance_id)
        if gone:
            return gone
        self._compute().terminate_instance(instance_id, preserve_boot_volume=False)
        return f"terminate {instance_id}"

    def detach(self, node: str, rec: dict[str, Any], pool: str, instance_id: str) -> str:
        """Out of its pool with the pool's size one less (it launches no replacement of its own);
        OCI terminates the instance (auto-terminate)."""
        oci = _oci_auth.oci
        gone = self._going(rec, instance_id)
        if gone:
            return gone
        details = oci.core.models.DetachInstancePoolInstanceDetails(
            instance_id=instance_id, is_decrement_size=True, is_auto_terminate=True
        )
        self.clients["compute_management"].detach_instance_pool_instance(pool, details)
        return f"detach {instance_id} from pool {pool} (size - 1, terminated by OCI)"

    def attach(self, node: str, rec: dict[str, Any], pool: str, instance_id: str) -> str:
        oci = _oci_auth.oci
        self._owned(instance_id)
        details = oci.core.models.AttachInstancePoolInstanceDetails(instance_id=instance_id)
        self.clients["compute_management"].attach_instance_pool_instance(pool, details)
        return f"attach {instance_id} to pool {pool}"

    def join(self, node: str, rec: dict[str, Any], instance_id: str) -> str:
        command = self.cfg.get("join_command") or []
        if not command:
            return "no join command: waits for the node to join by itself"
        ip = (rec.get("template") or {}).get("private_ip") or ""
        argv = [str(a).format(node=node, instance_id=instance_id, ip=ip) for a in command]
        rc, out, err = self.run(argv, float(self.cfg.get("join_command_timeout") or 60))
        if rc != 0:
            raise AgentError(f"join command rc {rc}: {(err or out).strip()[:300]}")
        return f"join command ran for {node} ({ip})"

    def launch(self, node: str, rec: dict[str, Any], token: str, old_instance_id: str | None) -> str:
        oci = _oci_auth.oci
        tpl = rec.get("template")
        if not tpl:
            raise AgentError(f"no launch template recorded for {node} (old instance {old_instance_id})")
        details = oci.core.models.LaunchInstanceDetails(
            compartment_id=tpl["compartment_id"],
            availability_domain=tpl["availability_domain"],
            fault_domain=tpl.get("fault_domain"),
            shape=tpl["shape"],
            shape_config=oci.core.models.LaunchInstanceShapeConfigDetails(**tpl["shape_config"])
            if tpl.get("shape_config")
            else None,
            display_name=tpl["display_name"],
            create_vnic_details=oci.core.models.CreateVnicDetails(
                subnet_id=tpl["subnet_id"],
                hostname_label=tpl.get("hostname_label"),
                private_ip=tpl.get("private_ip"),
                assign_public_ip=False,
            ),
            metadata=tpl.get("metadata") or None,
            defined_tags=tpl.get("defined_tags") or None,
            freeform_tags=tpl.get("freeform_tags") or None,
            source_details=oci.core.models.InstanceSourceViaImageDetails(image_id=tpl["image_id"]),
            compute_cluster_id=tpl.get("compute_cluster_id"),
        )
        try:
            inst = self._compute().launch_instance(details, opc_retry_token=token).data
        except oci.exceptions.ServiceError as exc:
            if _compute.is_capacity_error(exc.status, exc.code, exc.message):
                raise AgentError(
                    f"no capacity for {tpl['shape']} in {tpl['availability_domain']}: {exc.message}"
                ) from exc
            raise
        rec["new_instance_id"] = inst.id
        return f"launch {inst.id} ({tpl['shape']}, {tpl.get('private_ip')})"


def template_from(inst: dict[str, Any], vnic: dict[str, Any]) -> dict[str, Any]:
    """What a relaunch of ``inst`` needs, from GetInstance and its primary VNIC (SDK dicts)."""
    tags = {ns: dict(v or {}) for ns, v in (inst.get("defined_tags") or {}).items() if ns != HOST_REPORT_NAMESPACE}
    shape_config = inst.get("shape_config") or {}
    flex = (
        {k: shape_config[k] for k in ("ocpus", "memory_in_gbs") if shape_config.get(k)}
        if ".Flex" in str(inst.get("shape"))
        else {}
    )
    source = inst.get("source_details") or {}
    return {
        "compartment_id": inst["compartment_id"],
        "availability_domain": inst["availability_domain"],
        "fault_domain": inst.get("fault_domain"),
        "shape": inst["shape"],
        "shape_config": flex or None,
        "display_name": inst["display_name"],
        "subnet_id": vnic["subnet_id"],
        "private_ip": vnic.get("private_ip"),
        "hostname_label": vnic.get("hostname_label"),
        "image_id": source.get("image_id") or inst.get("image_id"),
        "metadata": dict(inst.get("metadata") or {}),
        "defined_tags": tags,
        "freeform_tags": dict(inst.get("freeform_tags") or {}),
        "compute_cluster_id": inst.get("compute_cluster_id"),
    }


# -- the pass -----------------------------------------------------------------------------------------
def run_pass(
    cfg: dict[str, Any],
    run: Runner = run_command,
    clients: dict[str, Any] | None = None,
    now: float | None = None,
    dry_run: bool = False,
    audit: Audit | None = None,
) -> dict[str, Any]:
    """One pass; returns ``{"plan": ..., "results": [...], "skipped": reason-or-None}``."""
    now = time.time() if now is None else now
    audit = audit or Audit(None if dry_run else cfg.get("audit_log"))
    state_file = cfg["state_file"]
    with _common.pass_lock(state_file) as held:
        if not held:
            return {"plan": None, "results": [], "skipped": _common.SKIPPED_LOCKED}
        waiting, blind = standby(cfg, run)
        if waiting:
            return {"plan": None, "results": [], "skipped": waiting}
        if blind:  # a pass that cannot tell who is in charge does nothing
            audit.log(node=None, action="pass", result="nothing done", problems=[blind])
            return {"plan": None, "results": [], "skipped": blind}
        records = load_records(state_file)
        observed = observe(cfg, records, run, clients)
        plan = _machine.plan_pass(records, observed, cfg["machine"], now)
        if dry_run:
            return {"plan": plan, "results": [], "skipped": None}
        if not observed["complete"]:
            audit.log(node=None, action="pass", result="nothing done", problems=observed["problems"])
            return {"plan": plan, "results": [], "skipped": "; ".join(observed["problems"])}
        new_records = plan["records"]
        save_records(state_file, new_records)  # write ahead: a crash from here on resumes this step
        actor = Actor(cfg, run, clients, now)
        results = []
        failed: set[str] = set()
        for action in plan["actions"]:
            node = action["node"]
            args = {k: v for k, v in action.items() if k not in ("node", "do")}
            rec = new_records.get(node, {})
            entry = {
                "node": node,
                "action": action["do"],
                "phase": rec.get("phase"),
                "instance_id": rec.get("instance_id"),
            }
            if node in failed:
                entry.update(result="skipped", detail="an earlier action for this node failed")
            else:
                try:
                    detail = getattr(actor, action["do"])(node, rec, **args)
                    entry.update(result="ok", detail=detail)
                except Exception as exc:  # logged, and the node waits for the next pass
                    failed.add(node)
                    entry.update(result="error", error=_short(exc))
                if rec:
                    save_records(state_file, new_records)
            audit.log(**entry)
            results.append(entry)
        return {"plan": plan, "results": results, "skipped": None}


def make_clients(cfg: dict[str, Any]) -> dict[str, Any] | None:
    return _compute.agent_clients(cfg)


def main(argv: Sequence[str] | None = None) -> int:
    return _common.cli(
        argv,
        prog="oci-gpu-repair",
        description="One pass of the GPU node repair agent.",
        config="/etc/oci-gpu-repair/settings.json",
        load_config=load_config,
        make_clients=make_clients,
        run_pass=run_pass,
        errors=(AgentError, _oci_auth.OciAuthError),
    )
