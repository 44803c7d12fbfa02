# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The emulator's compute write side: instances that launch, run, stop and terminate (TEST ONLY).

Core Services paths (``/20160918``) as the real ``oci`` SDK calls them (GetInstance is server.py's): LaunchInstance,
TerminateInstance, InstanceAction (STOP, START, SOFTSTOP, SOFTRESET, RESET), UpdateInstance
(display name, tags, metadata), GetComputeHost (health a test flips), ListInstanceMaintenanceEvents
(events a test schedules), UpdateInstancePool (size), AttachInstancePoolInstance,
DetachInstancePoolInstance (``isDecrementSize``, ``isAutoTerminate``), CreateComputeCluster,
GetComputeCluster, ListComputeClusters, and the Work Requests service's GetWorkRequest.

Lifecycle: a launch answers PROVISIONING at once; a worker thread waits ``launch_delay_s``, runs the
lab hook's ``launch`` (a lab container, when a hook is set) and then makes the instance RUNNING. A
hook that fails ends the instance TERMINATED with the error in ``_hookError``. Terminate answers at
once with TERMINATING and becomes TERMINATED after ``terminate_delay_s`` and the hook's
``terminate``. Actions walk STOPPING -> STOPPED and STARTING -> RUNNING the same way.

``opc-retry-token`` is honoured on every create: the same token with the same body answers the
first response again (the same instance); with another body, 409 ``Conflict``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import threading
import time
from typing import Any, Protocol

from .tenancy import RegionState, ocid, public_view

INSTANCE_ACTIONS = ("STOP", "START", "SOFTSTOP", "SOFTRESET", "RESET")
HOST_REPORT_NAMESPACE = "ComputeInstanceHostActions"
HOST_REPORT_KEY = "CustomerReportedHostStatus"


class ComputeHook(Protocol):
    """What the lab does when an instance changes: ``launch`` must leave a booting node (or raise)."""

    def launch(self, region: str, instance: dict[str, Any]) -> None: ...

    def terminate(self, region: str, instance: dict[str, Any]) -> None: ...

    def action(self, region: str, instance: dict[str, Any], action: str) -> None: ...


class LaunchFailed(Exception):
    """A launch OCI accepted and then ended (``launch_async_failures``)."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


class ComputeMixin:
    """Mixed into ``Emulator``; uses its ``tenancy``, ``knobs``, ``ApiError`` and helpers."""

    tenancy: Any
    knobs: Any
    compute_hook: ComputeHook | None
    request_ctx: threading.local
    compute_log: list[dict[str, Any]]

    def _compute_init(self) -> None:
        self.compute_hook = None
        self.request_ctx = threading.local()
        self.retry_tokens: dict[tuple[str, str], tuple[str, Any]] = {}
        self.compute_log = []
        self.compute_threads: list[threading.Thread] = []
        self.compute_lock = threading.Lock()

    def compute_routes(self) -> list[tuple[str, str, str, Any]]:
        core = "/20160918"
        return [
            ("POST", core + "/instances", "LaunchInstance", self.launch_instance),
            ("DELETE", core + "/instances/{id}", "TerminateInstance", self.terminate_instance),
            ("POST", core + "/instances/{id}", "InstanceAction", self.instance_action),
            ("PUT", core + "/instances/{id}", "UpdateInstance", self.update_instance),
            ("GET", core + "/computeHosts/{id}", "GetComputeHost", self.get_compute_host),
            ("GET", core + "/instanceMaintenanceEvents", "ListInstanceMaintenanceEvents", self.list_maintenance),
            ("PUT", core + "/instancePools/{id}", "UpdateInstancePool", self.update_instance_pool),
            ("POST", core + "/instancePools/{id}/instances", "AttachInstancePoolInstance", self.attach_pool_instance),
            (
                "POST",
                core + "/instancePools/{id}/actions/detachInstance",
                "DetachInstancePoolInstance",
                self.detach_pool_instance,
            ),
            ("POST", core + "/computeClusters", "CreateComputeCluster", self.create_compute_cluster),
            ("GET", core + "/computeClusters", "ListComputeClusters", self.list_compute_clusters),
            ("GET", core + "/computeClusters/{id}", "GetComputeCluster", self.get_compute_cluster),
            ("GET", core + "/workRequests/{id}", "GetComputeWorkRequest", self.get_compute_work_request),
            ("GET", core + "/workRequests/{id}/errors", "ListComputeWorkRequestErrors", self.list_compute_wr_errors),
        ]

    # -- helpers ---------------------------------------------------------------------------------
    def _err(self, status: int, code: str, message: str) -> Exception:
        from .server import ApiError

        return ApiError(status, code, message)

    def _instance(self, r: RegionState, iid: str) -> dict[str, Any]:
        inst = r.by_id.get(iid)
        if inst is None or not iid.startswith("ocid1.instance."):
            raise self._err(404, "NotAuthorizedOrNotFound", f"instance {iid} not found")
        return inst

    def _replay(self, op: str, body: Any, make: Any) -> Any:
        """Answer a create once per ``opc-retry-token``: the same token and body -> the first answer."""
        headers = getattr(self.request_ctx, "headers", None)
        token = headers.get("opc-retry-token") if headers is not None else None
        if not token:
            return make()
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
        key = (op, token)
        with self.compute_lock:
            seen = self.retry_tokens.get(key)
            if seen is not None:
                if seen[0] != digest:
                    raise self._err(409, "Conflict", f"retry token {token} was used with another request body")
                self._log("replay", op=op, token=token)
                return seen[1]
            answer = make()
            self.retry_tokens[key] = (digest, answer)
            return answer

    def _log(self, event: str, **fields: Any) -> None:
        self.compute_log.append({"event": event, "time": time.time(), **fields})

    def _spawn(self, fn: Any, *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True, name="oci-emulator-compute")
        t.start()
        self.compute_threads.append(t)

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait for every lifecycle worker to finish (tests)."""
        end = time.monotonic() + timeout
        for t in list(self.compute_threads):
            t.join(max(0.0, end - time.monotonic()))

    def _free_ip(self, r: RegionState, subnet: dict[str, Any]) -> str:
        net = ipaddress.ip_network(subnet["cidrBlock"], strict=False)
        used = {p["ipAddress"] for p in r.private_ips_by_subnet.get(subnet["id"], []) if p.get("ipState") != "FREE"}
        used |= set(subnet.get("_reserved") or [])
        # OCI keeps the first two host addresses of a subnet (the gateway among them)
        first = max(2, int(self.knobs.launch_first_host))
        for n, addr in enumerate(net.hosts()):
            if n >= first and str(addr) not in used:
                return str(addr)
        raise ValueError(f"subnet {subnet['id']} ({net}) has no free address")

    # -- instances -------------------------------------------------------------------------------
    def launch_instance(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        body = body or {}
        for key in ("compartmentId", "availabilityDomain", "shape"):
            if not body.get(key):
                raise self._err(400, "MissingParameter", f"Missing required parameter {key}")
        vnic = body.get("createVnicDetails") or {}
        subnet_id = vnic.get("subnetId") or body.get("subnetId")
        if not subnet_id:
            raise self._err(400, "MissingParameter", "createVnicDetails.subnetId is required")
        if body["availabilityDomain"] not in r.ads:
            raise self._err(400, "InvalidParameter", f"availability domain {body['availabilityDomain']} not found")
        cluster_id = body.get("computeClusterId")
        if cluster_id and not any(c["id"] == cluster_id for c in r.compute_clusters):
            raise self._err(404, "NotAuthorizedOrNotFound", f"compute cluster {cluster_id} not found")

        def make() -> Any:
            with r.lock:
                subnet = next((s for s in r.subnets if s["id"] == subnet_id), None)
                if subnet is None:
                    raise self._err(404, "NotAuthorizedOrNotFound", f"subnet {subnet_id} not found")
                n = sum(1 for i in r.instances if i["id"].startswith("ocid1.instance."))
                iid = ocid("instance", r.key, body["compartmentId"], body.get("displayName"), n, time.time_ns())
                name = body.get("displayName") or f"instance{time.strftime('%Y%m%d%H%M')}"
                hostname = vnic.get("hostnameLabel") or body.get("hostnameLabel") or name
                try:
                    ip = vnic.get("privateIp") or self._free_ip(r, subnet)
                except ValueError as exc:
                    raise self._err(400, "InvalidParameter", str(exc)) from exc
                inst: dict[str, Any] = {
                    "id": iid,
                    "compartmentId": body["compartmentId"],
                    "availabilityDomain": body["availabilityDomain"],
                    "faultDomain": body.get("faultDomain") or "FAULT-DOMAIN-1",
                    "displayName": name,
                    "region": r.name,
                    "shape": body["shape"],
                    "lifecycleState": "PROVISIONING",
                    "timeCreated": _now(),
                    "imageId": (body.get("sourceDetails") or {}).get("imageId") or body.get("imageId"),
                    "launchMode": "NATIVE",
                    "freeformTags": dict(body.get("freeformTags") or {}),
                    "definedTags": {k: dict(v) for k, v in (body.get("definedTags") or {}).items()},
                    "systemTags": {},
                    "metadata": dict(body.get("metadata") or {}),
                    "extendedMetadata": dict(body.get("extendedMetadata") or {}),
                    "instanceConfigurationId": None,
                    "sourceDetails": body.get("sourceDetails"),
                    "_computeClusterId": cluster_id,
                    "_vnics": [{"subnetId": subnet_id, "privateIp": ip, "hostnameLabel": hostname}],
                }
                topo = dict(self.knobs.launch_topology or {})
                if topo or cluster_id:
                    topo.setdefault("hpcIslandId", ocid("computehpcisland", r.key, "lab"))
                    topo.setdefault("networkBlockId", ocid("computenetworkblock", r.key, "lab"))
                    topo.setdefault("localBlockId", ocid("computelocalblock", r.key, "lab"))
                    inst["_computeHost"] = {**topo, "health": "HEALTHY"}
                r.add_instance(inst)
                self._log("launch", region=r.name, instanceId=iid, displayName=name, privateIp=ip)
            self._spawn(self._finish_launch, r, inst)
            wid = self._compute_work_request(r, inst, "LaunchInstance")
            return public_view(inst), {"etag": iid[-12:], "opc-work-request-id": wid}

        return self._replay("LaunchInstance", body, make)

    def _finish_launch(self, r: RegionState, inst: dict[str, Any]) -> None:
        time.sleep(max(0.0, float(self.knobs.launch_delay_s)))
        try:
            late = (self.knobs.launch_async_failures or {}).get(inst["shape"])
            if late:  # accepted, then ended by OCI (capacity found missing after the answer)
                raise LaunchFailed(late)
            if self.compute_hook is not None:
                self.compute_hook.launch(r.name, inst)
        except Exception as exc:  # the lab could not make the node: the instance ends as OCI's would
            with r.lock:
                inst["_hookError"] = repr(exc)
                self._set_terminated(r, inst)
                message = str(exc) if isinstance(exc, LaunchFailed) else f"the lab could not make the node: {exc!r}"
                for wr in r.compute_work_requests.values():
                    if wr["_instanceId"] == inst["id"] and wr["status"] == "IN_PROGRESS":
                        wr.update(status="FAILED", timeFinished=_now())
                        wr["_errors"] = [{"code": "InternalError", "message": message, "timestamp": _now()}]
            self._log("launch-failed", instanceId=inst["id"], error=repr(exc))
            return
        with r.lock:
            if inst["lifecycleState"] == "PROVISIONING":
                inst["lifecycleState"] = "RUNNING"
                for att in r.vnic_attachments:
                    if att["instanceId"] == inst["id"] and att["lifecycleState"] == "ATTACHING":
                        att["lifecycleState"] = "ATTACHED"
            self._finish_work_requests(inst["id"], "LaunchInstance")
        self._log("running", instanceId=inst["id"])

    def terminate_instance(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        inst = self._instance(r, p["id"])
        with r.lock:
            state = inst["lifecycleState"]
            if state in ("TERMINATING", "TERMINATED"):
                return None, {}
            inst["lifecycleState"] = "TERMINATING"
            self._log("terminate", region=r.name, instanceId=inst["id"], displayName=inst.get("displayName"))
        self._spawn(self._finish_terminate, r, inst)
        return None, {}

    def _finish_terminate(self, r: RegionState, inst: dict[str, Any]) -> None:
        time.sleep(max(0.0, float(self.knobs.terminate_delay_s)))
        try:
            if self.compute_hook is not None:
                self.compute_hook.terminate(r.name, inst)
        except Exception as exc:
            self._log("terminate-hook-failed", instanceId=inst["id"], error=repr(exc))
        with r.lock:
            self._set_terminated(r, inst)
        self._log("terminated", instanceId=inst["id"])

    def _set_terminated(self, r: RegionState, inst: dict[str, Any]) -> None:
        inst["lifecycleState"] = "TERMINATED"
        for att in r.vnic_attachments:
            if att["instanceId"] == inst["id"]:
                att["lifecycleState"] = "DETACHED"
        vnic_ids = {a["vnicId"] for a in r.vnic_attachments if a["instanceId"] == inst["id"]}
        for pip in r.private_ips:
            if pip.get("vnicId") in vnic_ids:
                pip["ipState"] = "FREE"
        for host in r.compute_hosts:
            if host.get("instanceId") == inst["id"]:
                host["lifecycleState"] = "AVAILABLE"
                host["instanceId"] = None
        for pool in r.instance_pools:
            ids = pool.get("_instanceIds") or []
            if inst["id"] in ids:
                ids.remove(inst["id"])
                if not pool.get("_keepSize"):
                    pool["size"] = len(ids)
        r.reindex()

    def instance_action(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "action")  # type: ignore[attr-defined]
        action = q["action"]
        if action not in INSTANCE_ACTIONS:
            raise self._err(400, "InvalidParameter", f"action {action} is not one of {', '.join(INSTANCE_ACTIONS)}")
        inst = self._instance(r, p["id"])
        with r.lock:
            state = inst["lifecycleState"]
            if action == "START":
                if state == "RUNNING":
                    return public_view(inst), {}
                if state != "STOPPED":
                    raise self._err(409, "IncorrectState", f"instance {inst['id']} is {state}")
                inst["lifecycleState"] = "STARTING"
            else:
                if action in ("STOP", "SOFTSTOP") and state == "STOPPED":
                    return public_view(inst), {}
                if state != "RUNNING":
                    raise self._err(409, "IncorrectState", f"instance {inst['id']} is {state}")
                inst["lifecycleState"] = "STOPPING"
            self._log("action", region=r.name, instanceId=inst["id"], action=action)
            view = public_view(inst)
        self._spawn(self._finish_action, r, inst, action)
        return view, {}

    def _finish_action(self, r: RegionState, inst: dict[str, Any], action: str) -> None:
        time.sleep(max(0.0, float(self.knobs.action_delay_s)))
        try:
            if self.compute_hook is not None:
                self.compute_hook.action(r.name, inst, action)
        except Exception as exc:
            self._log("action-hook-failed", instanceId=inst["id"], action=action, error=repr(exc))
        with r.lock:
            if inst["lifecycleState"] in ("STOPPING", "STARTING"):
                inst["lifecycleState"] = "STOPPED" if action in ("STOP", "SOFTSTOP") else "RUNNING"

    def update_instance(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        inst = self._instance(r, p["id"])
        body = body or {}
        with r.lock:
            if inst["lifecycleState"] in ("TERMINATING", "TERMINATED"):
                raise self._err(409, "IncorrectState", f"instance {inst['id']} is {inst['lifecycleState']}")
            for key in ("displayName", "freeformTags", "definedTags", "metadata", "extendedMetadata"):
                if body.get(key) is not None:
                    inst[key] = body[key]
            report = ((body.get("definedTags") or {}).get(HOST_REPORT_NAMESPACE) or {}).get(HOST_REPORT_KEY)
            if report:
                self._log("host-report", instanceId=inst["id"], report=report)
            self._log("update", instanceId=inst["id"], fields=sorted(k for k in body if body[k] is not None))
            r.reindex()
            return public_view(inst), {"etag": p["id"][-12:]}

    # -- hosts and maintenance -------------------------------------------------------------------
    def get_compute_host(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        host = next((h for h in r.compute_hosts if h["id"] == p["id"]), None)
        if host is None:
            raise self._err(404, "NotAuthorizedOrNotFound", f"compute host {p['id']} not found")
        return public_view(host), {}

    def list_maintenance(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")  # type: ignore[attr-defined]
        items = [e for e in r.maintenance_events if e["compartmentId"] == q["compartmentId"]]
        for param in ("instanceId", "lifecycleState", "correlationToken", "instanceAction"):
            if q.get(param):
                items = [e for e in items if e.get(param) == q[param]]
        return self.page(items, q)  # type: ignore[attr-defined]

    def set_host_health(self, instance_id: str, health: str, impacted: bool | None = None) -> dict[str, Any]:
        """Flip the health of the compute host an instance runs on (tests, the lab's control path)."""
        for r in self.tenancy.regions.values():
            with r.lock:
                for host in r.compute_hosts:
                    if host.get("instanceId") == instance_id:
                        host["health"] = health
                        host["hasImpactedComponents"] = bool(impacted if impacted is not None else health != "HEALTHY")
                        host["timeUpdated"] = _now()
                        return public_view(host)
        raise KeyError(f"no compute host runs instance {instance_id}")

    def schedule_maintenance(self, instance_id: str, **fields: Any) -> dict[str, Any]:
        """Add a SCHEDULED maintenance event for an instance (tests, the lab's control path)."""
        for r in self.tenancy.regions.values():
            with r.lock:
                inst = r.by_id.get(instance_id)
                if inst is None:
                    continue
                event = {
                    "id": ocid("instancemaintenanceevent", r.key, instance_id, len(r.maintenance_events)),
                    "instanceId": instance_id,
                    "compartmentId": inst["compartmentId"],
                    "maintenanceCategory": "FLEXIBLE",
                    "maintenanceReason": "HARDWARE_REPLACEMENT",
                    "instanceAction": "REBOOT_MIGRATION",
                    "alternativeResolutionActions": ["REBOOT_MIGRATION", "TERMINATE"],
                    "lifecycleState": "SCHEDULED",
                    "canReschedule": True,
                    "createdBy": "CUSTOMER" if fields.pop("by_customer", False) else "OCI",
                    "displayName": f"maintenance {instance_id[-8:]}",
                    "description": "scheduled by the lab",
                    "timeCreated": _now(),
                    "timeWindowStart": _now(),
                    "timeHardDueDate": None,
                    "startWindowDuration": "PT4H",
                    "freeformTags": {},
                    "definedTags": {},
                    **fields,
                }
                r.maintenance_events.append(event)
                return dict(event)
        raise KeyError(f"no instance {instance_id}")

    def update_maintenance(self, event_id: str, **fields: Any) -> dict[str, Any]:
        """Change a maintenance event (tests, the lab's control path): e.g. ``lifecycleState`` SUCCEEDED."""
        for r in self.tenancy.regions.values():
            with r.lock:
                for event in r.maintenance_events:
                    if event["id"] == event_id:
                        event.update(fields)
                        return dict(event)
        raise KeyError(f"no maintenance event {event_id}")

    # -- instance pools --------------------------------------------------------------------------
    def _pool(self, r: RegionState, pid: str) -> dict[str, Any]:
        pool = next((x for x in r.instance_pools if x["id"] == pid), None)
        if pool is None:
            raise self._err(404, "NotAuthorizedOrNotFound", f"instance pool {pid} not found")
        return pool

    def update_instance_pool(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        pool = self._pool(r, p["id"])
        body = body or {}
        with r.lock:
            size = body.get("size")
            if size is not None:
                if int(size) < 0:
                    raise self._err(400, "InvalidParameter", f"size {size} must be 0 or more")
                pool["size"] = int(size)
            for key in ("displayName", "freeformTags", "definedTags"):
                if body.get(key) is not None:
                    pool[key] = body[key]
            self._log("pool-update", instancePoolId=pool["id"], size=pool["size"])
            return public_view(pool), {"etag": pool["id"][-12:]}

    def attach_pool_instance(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        pool = self._pool(r, p["id"])
        iid = (body or {}).get("instanceId")
        if not iid:
            raise self._err(400, "MissingParameter", "instanceId is required")
        inst = self._instance(r, iid)
        with r.lock:
            if inst["lifecycleState"] != "RUNNING":
                raise self._err(409, "IncorrectState", f"instance {iid} is {inst['lifecycleState']}")
            ids = pool.setdefault("_instanceIds", [])
            if iid in ids:
                raise self._err(409, "Conflict", f"instance {iid} is already in pool {pool['id']}")
            ids.append(iid)
            pool["size"] = len(ids)
            inst["instanceConfigurationId"] = pool.get("instanceConfigurationId")
            self._log("pool-attach", instancePoolId=pool["id"], instanceId=iid)
            view = {
                "id": iid,
                "instancePoolId": pool["id"],
                "availabilityDomain": inst["availabilityDomain"],
                "compartmentId": inst["compartmentId"],
                "displayName": inst.get("displayName"),
                "faultDomain": inst.get("faultDomain"),
                "instanceConfigurationId": pool.get("instanceConfigurationId"),
                "lifecycleState": "ACTIVE",
                "region": r.name,
                "shape": inst.get("shape"),
                "state": inst["lifecycleState"],
                "timeCreated": inst.get("timeCreated"),
                "loadBalancerBackends": [],
            }
        wid = self._compute_work_request(r, inst, "AttachInstancePoolInstance", done=True)
        return view, {"opc-work-request-id": wid}

    def detach_pool_instance(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        pool = self._pool(r, p["id"])
        body = body or {}
        iid = body.get("instanceId")
        if not iid:
            raise self._err(400, "MissingParameter", "instanceId is required")
        inst = self._instance(r, iid)
        with r.lock:
            ids = pool.setdefault("_instanceIds", [])
            if iid not in ids:
                raise self._err(404, "NotAuthorizedOrNotFound", f"instance {iid} is not in pool {pool['id']}")
            ids.remove(iid)
            if body.get("isDecrementSize", True):
                pool["size"] = len(ids)
            inst["instanceConfigurationId"] = None
            self._log(
                "pool-detach",
                instancePoolId=pool["id"],
                instanceId=iid,
                isDecrementSize=body.get("isDecrementSize", True),
                isAutoTerminate=bool(body.get("isAutoTerminate")),
            )
            terminate = bool(body.get("isAutoTerminate")) and inst["lifecycleState"] not in (
                "TERMINATING",
                "TERMINATED",
            )
            if terminate:
                inst["lifecycleState"] = "TERMINATING"
        if terminate:
            self._spawn(self._finish_terminate, r, inst)
        wid = self._compute_work_request(r, inst, "DetachInstancePoolInstance", done=not terminate)
        return None, {"opc-work-request-id": wid}

    # -- compute clusters ------------------------------------------------------------------------
    def create_compute_cluster(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        body = body or {}
        for key in ("compartmentId", "availabilityDomain"):
            if not body.get(key):
                raise self._err(400, "MissingParameter", f"Missing required parameter {key}")

        def make() -> Any:
            with r.lock:
                cc = {
                    "id": ocid("computecluster", r.key, body["compartmentId"], len(r.compute_clusters), time.time_ns()),
                    "compartmentId": body["compartmentId"],
                    "availabilityDomain": body["availabilityDomain"],
                    "displayName": body.get("displayName") or "compute-cluster",
                    "lifecycleState": "ACTIVE",
                    "timeCreated": _now(),
                    "timeUpdated": _now(),
                    "freeformTags": dict(body.get("freeformTags") or {}),
                    "definedTags": dict(body.get("definedTags") or {}),
                }
                r.compute_clusters.append(cc)
                r.by_id[cc["id"]] = cc
                self._log("compute-cluster", computeClusterId=cc["id"])
                return public_view(cc), {"etag": cc["id"][-12:]}

        return self._replay("CreateComputeCluster", body, make)

    def list_compute_clusters(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")  # type: ignore[attr-defined]
        items = [c for c in r.compute_clusters if c["compartmentId"] == q["compartmentId"]]
        if q.get("displayName"):
            items = [c for c in items if c["displayName"] == q["displayName"]]
        page, headers = self.page(items, q)  # type: ignore[attr-defined]
        return {"items": page}, headers

    def get_compute_cluster(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        cc = next((c for c in r.compute_clusters if c["id"] == p["id"]), None)
        if cc is None:
            raise self._err(404, "NotAuthorizedOrNotFound", f"compute cluster {p['id']} not found")
        return public_view(cc), {}

    # -- work requests (Work Requests service, /20160918/workRequests) ---------------------------
    def _compute_work_request(self, r: RegionState, inst: dict[str, Any], op: str, done: bool = False) -> str:
        wid = ocid("coreservicesworkrequest", r.key, inst["id"], op, time.time_ns())
        with r.lock:
            r.compute_work_requests[wid] = {
                "id": wid,
                "operationType": op,
                "status": "SUCCEEDED" if done else "IN_PROGRESS",
                "compartmentId": inst["compartmentId"],
                "resources": [{"entityType": "instance", "actionType": "IN_PROGRESS", "identifier": inst["id"]}],
                "percentComplete": 100.0 if done else 0.0,
                "timeAccepted": _now(),
                "timeStarted": _now(),
                "timeFinished": _now() if done else None,
                "_instanceId": inst["id"],
            }
        return wid

    def _finish_work_requests(self, instance_id: str, op: str) -> None:
        for r in self.tenancy.regions.values():
            for wr in r.compute_work_requests.values():
                if wr["_instanceId"] == instance_id and wr["operationType"] == op and wr["status"] == "IN_PROGRESS":
                    wr.update(status="SUCCEEDED", percentComplete=100.0, timeFinished=_now())

    def get_compute_work_request(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        with r.lock:
            wr = r.compute_work_requests.get(p["id"])
            if wr is None:
                raise self._err(404, "NotAuthorizedOrNotFound", f"work request {p['id']} not found")
            inst = r.by_id.get(wr["_instanceId"])
            if wr["status"] == "IN_PROGRESS" and inst is not None and inst["lifecycleState"] == "TERMINATED":
                failed = wr["operationType"] == "LaunchInstance"
                wr.update(status="FAILED" if failed else "SUCCEEDED", timeFinished=_now())
            return public_view(wr), {}

    def list_compute_wr_errors(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        with r.lock:
            wr = r.compute_work_requests.get(p["id"])
            if wr is None:
                raise self._err(404, "NotAuthorizedOrNotFound", f"work request {p['id']} not found")
            return self.page(list(wr.get("_errors", [])), q)  # type: ignore[attr-defined]
