# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The OCI API emulator's HTTP side: one threaded server per region, real REST paths, signatures.

Test-only. Every request must carry a valid OCI (draft-cavage, RSA-SHA256) signature made with a
key registered for the tenancy; writes must also carry a matching ``x-content-sha256``. Knobs
(latency, jitter, per-region rate limit, 5xx fault rate, failing compartments, add-on timing and
failures) and per-route request counters live under ``/_emulator/`` (unsigned, loopback only).
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import json
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from .compute import ComputeMixin
from .tenancy import EPOCH, RegionState, Tenancy, ocid, public_view

MAX_LIMIT = 1000
ADDON_WRITE_OPS = ("InstallAddon", "UpdateAddon", "DisableAddon")
DEFAULT_LIMIT = 100
CLOCK_SKEW_S = 300


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


class Knobs:
    """Fault and timing settings; every field can be changed at runtime through ``/_emulator/knobs``."""

    def __init__(self, **kw: Any) -> None:
        self.latency_s: float = 0.0
        self.jitter_s: float = 0.0
        self.rate_limit_per_s: float = 0.0  # per region; 0 = unlimited
        self.fault_rate: float = 0.0  # share of signed API requests answered 500
        self.fault_seed: int = 7
        self.compartment_errors: dict[str, int] = {}  # compartment OCID -> 403/404/5xx for requests naming it
        self.region_errors: dict[str, int] = {}  # region -> status for every API request there
        self.route_errors: dict[str, int] = {}  # operation name (e.g. ListComputeHosts) -> status
        self.addon_delay_s: float = 0.2  # CREATING/UPDATING/DELETING -> final state
        self.addon_failures: dict[str, str] = {}  # add-on name -> addonError message (NEEDS_ATTENTION)
        # operation -> {status, code, message, times?}: answered instead of the call (times: how often)
        self.route_faults: dict[str, dict[str, Any]] = {}
        # operation -> seconds: the request hangs that long, then is answered 503 without being carried
        # out (a client killed while waiting: its request never took effect)
        self.route_stall_s: dict[str, float] = {}
        self.launch_delay_s: float = 0.2  # PROVISIONING -> RUNNING (after the lab hook, if any)
        self.terminate_delay_s: float = 0.2  # TERMINATING -> TERMINATED
        self.action_delay_s: float = 0.2  # STOPPING/STARTING -> STOPPED/RUNNING
        self.launch_async_failures: dict[str, str] = {}  # shape -> message: accepted, then TERMINATED
        self.launch_topology: dict[str, str] = {}  # hpcIslandId/networkBlockId/localBlockId of launched hosts
        self.launch_first_host: int = 2  # launched instances take subnet addresses from this host index on
        self.update(**kw)

    def update(self, **kw: Any) -> None:
        for k, v in kw.items():
            if not hasattr(self, k):
                raise ValueError(f"unknown knob {k!r}")
            setattr(self, k, v)

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


class _Bucket:
    """Token bucket: ``rate`` requests per second with a one-second burst."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tokens = 0.0
        self.stamp = time.monotonic()
        self.rate = 0.0

    def take(self, rate: float) -> bool:
        if rate <= 0:
            return True
        with self.lock:
            now = time.monotonic()
            if rate != self.rate:
                self.rate, self.tokens = rate, rate
            self.tokens = min(rate, self.tokens + (now - self.stamp) * rate)
            self.stamp = now
            if self.tokens >= 1:
                self.tokens -= 1
                return True
            return False


class Route:
    def __init__(self, method: str, pattern: str, op: str, fn: Callable[..., Any]) -> None:
        self.method = method
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
        self.regex = re.compile("^" + regex + "$")
        self.op = op
        self.fn = fn


def _b(v: str | None) -> bool:
    return str(v).lower() == "true"


class Emulator(ComputeMixin):
    """Owns the tenancy, the knobs, the counters and one HTTP server per region."""

    def __init__(self, tenancy: Tenancy, public_keys: dict[str, bytes] | None = None, **knobs: Any) -> None:
        self.tenancy = tenancy
        self.knobs = Knobs(**knobs)
        # keyId ("tenancy/user/fingerprint") -> public key
        self.keys: dict[str, Any] = {}
        for key_id, pem in (public_keys or {}).items():
            self.add_key(key_id, pem)
        self.counters: dict[str, dict[str, int]] = {}
        self.counter_lock = threading.Lock()
        # operation -> requests that began a stall (route_stall_s): a test knows its client now waits
        self.stalled: dict[str, int] = {}
        self.stall_lock = threading.Lock()
        # successful Container Engine add-on writes, in order, with the cluster's add-on states at the time
        self.write_log: list[dict[str, Any]] = []
        self.buckets = {r: _Bucket() for r in tenancy.regions}
        self.rng = random.Random(self.knobs.fault_seed)
        self.rng_lock = threading.Lock()
        self.servers: dict[str, ThreadingHTTPServer] = {}
        self.threads: list[threading.Thread] = []
        self._compute_init()
        self.routes = self._routes()

    # -- lifecycle -------------------------------------------------------------------------------
    def add_key(self, key_id: str, pem: bytes | str) -> None:
        data = pem.encode() if isinstance(pem, str) else pem
        self.keys[key_id] = serialization.load_pem_public_key(data)

    def start(self, ports: dict[str, int] | None = None, host: str = "127.0.0.1") -> dict[str, str]:
        """Start one server per region (port 0 = pick a free one); return region -> endpoint URL."""
        emulator = self

        class Handler(_Handler):
            pass

        Handler.emulator = emulator
        for region in self.tenancy.regions:
            port = (ports or {}).get(region, 0)
            server = ThreadingHTTPServer((host, port), Handler)
            server.daemon_threads = True
            server.region = region  # type: ignore[attr-defined]
            server.request_queue_size = 128
            self.servers[region] = server
            t = threading.Thread(target=server.serve_forever, name=f"oci-emulator-{region}", daemon=True)
            t.start()
            self.threads.append(t)
        return self.endpoints()

    def endpoints(self) -> dict[str, str]:
        return {r: f"http://{s.server_address[0]}:{s.server_address[1]}" for r, s in self.servers.items()}

    def stop(self) -> None:
        for s in self.servers.values():
            s.shutdown()
            s.server_close()
        self.servers.clear()

    # -- counters --------------------------------------------------------------------------------
    def count(self, region: str, op: str, status: int) -> None:
        with self.counter_lock:
            reg = self.counters.setdefault(region, {})
            reg[op] = reg.get(op, 0) + 1
            if status >= 400:
                key = f"{op}:{status}"
                reg[key] = reg.get(key, 0) + 1

    def counter_snapshot(self) -> dict[str, Any]:
        with self.counter_lock:
            per_region = {r: dict(c) for r, c in self.counters.items()}
        total: dict[str, int] = {}
        for c in per_region.values():
            for k, v in c.items():
                total[k] = total.get(k, 0) + v
        requests = sum(v for k, v in total.items() if ":" not in k)
        return {"requests": requests, "by_op": total, "by_region": per_region}

    def reset_counters(self) -> None:
        with self.counter_lock:
            self.counters.clear()
            self.write_log.clear()

    def log_write(self, region: str, op: str, params: dict[str, str], body: Any, headers: Any) -> None:
        """Record an accepted add-on write: which add-on, whether it carried a retry token, and every
        add-on's lifecycle state on that cluster just after it was accepted."""
        if op not in ADDON_WRITE_OPS:
            return
        r = self.tenancy.regions[region]
        with r.lock:
            states = {n: a["lifecycleState"] for n, a in r.addons.get(params.get("id", ""), {}).items()}
        entry = {
            "op": op,
            "region": region,
            "clusterId": params.get("id"),
            "addon": params.get("name") or (body or {}).get("addonName"),
            "retryToken": bool(headers.get("opc-retry-token")),
            "addonStates": states,
            "time": time.time(),
        }
        with self.counter_lock:
            self.write_log.append(entry)

    def writes(self) -> list[dict[str, Any]]:
        with self.counter_lock:
            return [dict(w) for w in self.write_log]

    # -- request pipeline ------------------------------------------------------------------------
    def verify_signature(self, method: str, target: str, headers: Any, body: bytes) -> None:
        auth = headers.get("authorization")
        if not auth or not auth.startswith("Signature "):
            raise ApiError(
                401, "NotAuthenticated", "The required information to complete authentication was not provided."
            )
        params = dict(re.findall(r'(\w+)="([^"]*)"', auth))
        key = self.keys.get(params.get("keyId", ""))
        if key is None:
            raise ApiError(
                401,
                "NotAuthenticated",
                "The required information to complete authentication was not provided or was incorrect.",
            )
        signed = (params.get("headers") or "date").split()
        required = {"date", "(request-target)", "host"}
        if method in ("POST", "PUT", "PATCH"):
            required |= {"content-length", "content-type", "x-content-sha256"}
        if not required <= set(signed):
            raise ApiError(401, "NotAuthenticated", f"Signature must cover {sorted(required)}")
        lines = []
        for h in signed:
            if h == "(request-target)":
                lines.append(f"(request-target): {method.lower()} {target}")
            else:
                value = headers.get(h)
                if value is None:
                    raise ApiError(401, "NotAuthenticated", f"Signed header {h!r} missing")
                lines.append(f"{h}: {value}")
        try:
            key.verify(
                base64.b64decode(params.get("signature", "")),
                "\n".join(lines).encode("ascii"),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except (InvalidSignature, ValueError) as exc:
            raise ApiError(
                401,
                "NotAuthenticated",
                "The required information to complete authentication was not provided or was incorrect.",
            ) from exc
        try:
            sent = email.utils.parsedate_to_datetime(headers.get("date")).timestamp()
        except (TypeError, ValueError) as exc:
            raise ApiError(401, "NotAuthenticated", "Invalid date header") from exc
        if abs(sent - time.time()) > CLOCK_SKEW_S:
            raise ApiError(401, "NotAuthenticated", "Date header outside the allowed clock skew")
        if "x-content-sha256" in signed:
            digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
            if headers.get("x-content-sha256") != digest or int(headers.get("content-length") or -1) != len(body):
                raise ApiError(401, "NotAuthenticated", "Body does not match x-content-sha256/content-length")

    def before_call(self, region: str, query: dict[str, str], op: str = "") -> None:
        k = self.knobs
        if k.latency_s or k.jitter_s:
            with self.rng_lock:
                jitter = self.rng.uniform(-k.jitter_s, k.jitter_s) if k.jitter_s else 0.0
            time.sleep(max(0.0, k.latency_s + jitter))
        if not self.buckets[region].take(k.rate_limit_per_s):
            raise ApiError(429, "TooManyRequests", "Too many requests for the tenancy", {"retry-after": "1"})
        stall = k.route_stall_s.get(op)
        if stall:
            with self.stall_lock:
                self.stalled[op] = self.stalled.get(op, 0) + 1
            time.sleep(float(stall))
            raise ApiError(503, "ServiceUnavailable", f"{op} stalled {stall} s and dropped (injected)")
        fault = k.route_faults.get(op)
        if fault:
            times = fault.get("times")
            if times is None or int(times) > 0:
                if times is not None:
                    fault["times"] = int(times) - 1
                status = int(fault.get("status", 500))
                raise ApiError(status, fault.get("code") or _code_for(status), fault.get("message") or f"{op} failed")
        status = k.route_errors.get(op)
        if status:
            raise ApiError(int(status), _code_for(int(status)), f"{op} refused (injected)")
        status = k.region_errors.get(region)
        if status:
            raise ApiError(int(status), _code_for(int(status)), f"region {region} unavailable (injected)")
        comp = query.get("compartmentId")
        if comp and comp in k.compartment_errors:
            status = int(k.compartment_errors[comp])
            raise ApiError(status, _code_for(status), f"Authorization failed or requested resource not found ({comp})")
        if k.fault_rate:
            with self.rng_lock:
                hit = self.rng.random() < k.fault_rate
            if hit:
                raise ApiError(500, "InternalServerError", "injected fault")

    # -- routes ----------------------------------------------------------------------------------
    def _routes(self) -> list[Route]:
        core, ce, fss, lustre = "/20160918", "/20180222", "/20171215", "/20250228"
        table = [
            ("GET", core + "/compartments", "ListCompartments", self.list_compartments),
            ("GET", core + "/compartments/{id}", "GetCompartment", self.get_compartment),
            ("GET", core + "/tenancies/{id}", "GetTenancy", self.get_tenancy),
            (
                "GET",
                core + "/tenancies/{id}/regionSubscriptions",
                "ListRegionSubscriptions",
                self.list_region_subscriptions,
            ),
            ("GET", core + "/availabilityDomains", "ListAvailabilityDomains", self.list_ads),
            ("GET", core + "/instances", "ListInstances", self.list_instances),
            ("GET", core + "/instances/{id}", "GetInstance", self.get_by_id("instances")),
            ("GET", core + "/vnicAttachments", "ListVnicAttachments", self.list_vnic_attachments),
            ("GET", core + "/vnics/{id}", "GetVnic", self.get_vnic),
            ("GET", core + "/privateIps", "ListPrivateIps", self.list_private_ips),
            ("GET", core + "/privateIps/{id}", "GetPrivateIp", self.get_by_id("private_ips")),
            ("GET", core + "/subnets", "ListSubnets", self.list_subnets),
            ("GET", core + "/subnets/{id}", "GetSubnet", self.get_by_id("subnets")),
            (
                "POST",
                core + "/publicIps/actions/getByPrivateIpId",
                "GetPublicIpByPrivateIpId",
                self.public_ip_by_private,
            ),
            ("GET", core + "/publicIps", "ListPublicIps", self.list_public_ips),
            ("GET", core + "/computeHosts", "ListComputeHosts", self.list_compute_hosts),
            ("GET", core + "/instancePools", "ListInstancePools", self.list_simple("instance_pools")),
            ("GET", core + "/instancePools/{id}", "GetInstancePool", self.get_by_id("instance_pools")),
            ("GET", core + "/instancePools/{id}/instances", "ListInstancePoolInstances", self.list_pool_instances),
            ("GET", core + "/clusterNetworks", "ListClusterNetworks", self.list_cluster_networks),
            ("GET", core + "/clusterNetworks/{id}", "GetClusterNetwork", self.get_cluster_network),
            ("GET", core + "/clusterNetworks/{id}/instances", "ListClusterNetworkInstances", self.list_cn_instances),
            ("GET", ce + "/clusters", "ListClusters", self.list_simple("clusters", name_key="name")),
            ("GET", ce + "/clusters/{id}", "GetCluster", self.get_by_id("clusters")),
            ("POST", ce + "/clusters/{id}/kubeconfig/content", "CreateKubeconfig", self.create_kubeconfig),
            ("GET", ce + "/nodePools", "ListNodePools", self.list_node_pools),
            ("GET", ce + "/nodePools/{id}", "GetNodePool", self.get_by_id("node_pools")),
            ("GET", ce + "/addonOptions", "ListAddonOptions", self.list_addon_options),
            ("GET", ce + "/clusters/{id}/addons", "ListAddons", self.list_addons),
            ("POST", ce + "/clusters/{id}/addons", "InstallAddon", self.install_addon),
            ("GET", ce + "/clusters/{id}/addons/{name}", "GetAddon", self.get_addon),
            ("PUT", ce + "/clusters/{id}/addons/{name}", "UpdateAddon", self.update_addon),
            ("DELETE", ce + "/clusters/{id}/addons/{name}", "DisableAddon", self.disable_addon),
            ("GET", ce + "/workRequests", "ListWorkRequests", self.list_work_requests),
            ("GET", ce + "/workRequests/{id}", "GetWorkRequest", self.get_work_request),
            ("GET", ce + "/workRequests/{id}/errors", "ListWorkRequestErrors", self.list_work_request_errors),
            ("GET", fss + "/mountTargets", "ListMountTargets", self.list_simple("mount_targets", need_ad=True)),
            ("GET", fss + "/mountTargets/{id}", "GetMountTarget", self.get_by_id("mount_targets")),
            ("GET", fss + "/fileSystems", "ListFileSystems", self.list_simple("file_systems", need_ad=True)),
            ("GET", fss + "/fileSystems/{id}", "GetFileSystem", self.get_by_id("file_systems")),
            ("GET", fss + "/exports", "ListExports", self.list_exports),
            ("GET", fss + "/exports/{id}", "GetExport", self.get_by_id("exports")),
            ("GET", lustre + "/lustreFileSystems", "ListLustreFileSystems", self.list_lustre),
            ("GET", lustre + "/lustreFileSystems/{id}", "GetLustreFileSystem", self.get_by_id("lustre_file_systems")),
        ]
        table += self.compute_routes()  # the compute write side (compute.py)
        return [Route(m, p, op, fn) for m, p, op, fn in table]

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            if route.method == method:
                m = route.regex.match(path)
                if m:
                    return route, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}
        return None

    # -- helpers ---------------------------------------------------------------------------------
    @staticmethod
    def page(items: list[dict[str, Any]], q: dict[str, str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
        try:
            limit = int(q.get("limit", DEFAULT_LIMIT))
        except ValueError as exc:
            raise ApiError(400, "InvalidParameter", "limit must be an integer") from exc
        if not 1 <= limit <= MAX_LIMIT:
            raise ApiError(400, "InvalidParameter", f"limit must be between 1 and {MAX_LIMIT}")
        start = 0
        if q.get("page"):
            m = re.fullmatch(r"p([0-9]+)", q["page"])
            if not m:
                raise ApiError(400, "InvalidParameter", "invalid page token")
            start = int(m.group(1))
        chunk = items[start : start + limit]
        headers = {"opc-next-page": f"p{start + limit}"} if start + limit < len(items) else {}
        return [public_view(i) for i in chunk], headers

    def listed(
        self, items: list[dict[str, Any]], q: dict[str, str], *same: str, wrap: bool = False, **fields: str
    ) -> tuple[Any, dict[str, str]]:
        """A list call's answer: the items the query's filters keep (``_filter``), one page of them,
        under ``items`` where the API wraps the list in an object (``wrap``)."""
        page, headers = self.page(_filter(items, q, *same, **fields), q)
        return ({"items": page} if wrap else page), headers

    @staticmethod
    def need(q: dict[str, str], *names: str) -> None:
        for n in names:
            if not q.get(n):
                raise ApiError(400, "MissingParameter", f"Missing required parameter {n}")

    def get_by_id(self, attr: str) -> Callable[..., Any]:
        def handler(r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
            rec = r.by_id.get(p["id"])
            if rec is None or rec not in getattr(r, attr):
                raise ApiError(404, "NotAuthorizedOrNotFound", f"{attr} {p['id']} not found")
            comp = rec.get("compartmentId")
            if comp:
                self.before_compartment(comp)
            return public_view(rec), {"etag": _etag(rec)}

        return handler

    def before_compartment(self, comp: str) -> None:
        status = self.knobs.compartment_errors.get(comp)
        if status:
            raise ApiError(
                int(status), _code_for(int(status)), f"Authorization failed or requested resource not found ({comp})"
            )

    def list_simple(self, attr: str, name_key: str = "displayName", need_ad: bool = False) -> Callable[..., Any]:
        def handler(r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
            self.need(q, "compartmentId", *(("availabilityDomain",) if need_ad else ()))
            items = [i for i in getattr(r, attr) if i.get("compartmentId") == q["compartmentId"]]
            items = _filter(items, q, "availabilityDomain", "lifecycleState")
            if q.get(name_key if name_key != "displayName" else "displayName"):
                items = [
                    i for i in items if i.get(name_key) == q.get(name_key if name_key == "displayName" else "name")
                ]
            if q.get("name") and name_key == "name":
                items = [i for i in items if i.get("name") == q["name"]]
            return self.page(items, q)

        return handler

    # -- identity --------------------------------------------------------------------------------
    def list_compartments(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")
        root = q["compartmentId"]
        if _b(q.get("compartmentIdInSubtree")):
            if root != self.tenancy.id:
                raise ApiError(400, "InvalidParameter", "compartmentIdInSubtree is only valid on the root compartment")
            items = self.tenancy.subtree(root)
        else:
            items = list(self.tenancy.children.get(root, []))
        return self.listed(items, q, "lifecycleState", "name")

    def get_compartment(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        if p["id"] == self.tenancy.id:
            return {
                "id": self.tenancy.id,
                "name": self.tenancy.name,
                "compartmentId": None,
                "lifecycleState": "ACTIVE",
            }, {}
        for c in self.tenancy.compartments:
            if c["id"] == p["id"]:
                return c, {}
        raise ApiError(404, "NotAuthorizedOrNotFound", "compartment not found")

    def get_tenancy(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        if p["id"] != self.tenancy.id:
            raise ApiError(404, "NotAuthorizedOrNotFound", "tenancy not found")
        return {
            "id": self.tenancy.id,
            "name": self.tenancy.name,
            "homeRegionKey": self.tenancy.regions[self.tenancy.home_region].key,
        }, {}

    def list_region_subscriptions(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        if p["id"] != self.tenancy.id:
            raise ApiError(404, "NotAuthorizedOrNotFound", "tenancy not found")
        return [
            {
                "regionKey": st.key,
                "regionName": name,
                "status": "READY",
                "isHomeRegion": name == self.tenancy.home_region,
            }
            for name, st in self.tenancy.regions.items()
        ], {}

    def list_ads(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")
        return [
            {"name": ad, "id": ocid("availabilitydomain", r.key, ad), "compartmentId": self.tenancy.id} for ad in r.ads
        ], {}

    # -- compute / network -----------------------------------------------------------------------
    def list_instances(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")
        items = r.instances_by_comp.get(q["compartmentId"], [])
        return self.listed(items, q, "availabilityDomain", "displayName", "lifecycleState")

    def list_vnic_attachments(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")
        items = r.attachments_by_comp.get(q["compartmentId"], [])
        return self.listed(items, q, "availabilityDomain", "instanceId", "vnicId")

    def get_vnic(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        vnic = r.vnics.get(p["id"])
        if vnic is None:
            raise ApiError(404, "NotAuthorizedOrNotFound", f"vnic {p['id']} not found")
        self.before_compartment(vnic["compartmentId"])
        return vnic, {"etag": _etag(vnic)}

    def list_private_ips(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        if q.get("subnetId"):
            items = r.private_ips_by_subnet.get(q["subnetId"], [])
        elif q.get("vnicId"):
            items = r.private_ips_by_vnic.get(q["vnicId"], [])
        else:
            raise ApiError(400, "MissingParameter", "subnetId, vnicId or vlanId is required")
        return self.listed(items, q, "ipAddress", "vnicId")

    def list_subnets(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")
        items = [s for s in r.subnets if s["compartmentId"] == q["compartmentId"]]
        return self.listed(items, q, "vcnId", "displayName", "lifecycleState")

    def public_ip_by_private(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        pip = (body or {}).get("privateIpId")
        if not pip:
            raise ApiError(400, "MissingParameter", "privateIpId is required")
        rec = r.public_ip_by_private.get(pip)
        if rec is None:
            raise ApiError(404, "NotAuthorizedOrNotFound", f"no public IP for {pip}")
        return public_view(rec), {}

    def list_public_ips(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId", "scope")
        if q["scope"] == "AVAILABILITY_DOMAIN":
            self.need(q, "availabilityDomain")
        items = [i for i in r.public_ips if i["compartmentId"] == q["compartmentId"] and i["scope"] == q["scope"]]
        return self.listed(items, q, "availabilityDomain", "lifetime")

    def list_compute_hosts(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")
        comp = q["compartmentId"]
        if _b(q.get("computeHostInSubtree")):
            comps = {comp} | {c["id"] for c in self.tenancy.subtree(comp)}
            items = [h for h in r.compute_hosts if h["compartmentId"] in comps]
        else:
            items = [h for h in r.compute_hosts if h["compartmentId"] == comp]
        return self.listed(
            items,
            q,
            "availabilityDomain",
            "displayName",
            computeHostLifecycleState="lifecycleState",
            computeHostHealth="health",
            wrap=True,
        )

    def list_pool_instances(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        pool = r.by_id.get(p["id"])
        if pool is None or pool not in r.instance_pools:
            raise ApiError(404, "NotAuthorizedOrNotFound", "instance pool not found")
        self.need(q, "compartmentId")
        items = [_instance_summary(r.by_id[i]) for i in pool.get("_instanceIds", []) if i in r.by_id]
        return self.page(items, q)

    def _cn_full(self, r: RegionState, cn: dict[str, Any]) -> dict[str, Any]:
        view = public_view(cn)
        view["instancePools"] = [public_view(r.by_id[i]) for i in cn.get("instancePools", []) if i in r.by_id]
        return view

    def list_cluster_networks(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")
        items = [self._cn_full(r, c) for c in r.cluster_networks if c["compartmentId"] == q["compartmentId"]]
        return self.listed(items, q, "displayName", "lifecycleState")

    def get_cluster_network(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        cn = r.by_id.get(p["id"])
        if cn is None or cn not in r.cluster_networks:
            raise ApiError(404, "NotAuthorizedOrNotFound", "cluster network not found")
        return self._cn_full(r, cn), {}

    def list_cn_instances(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        cn = r.by_id.get(p["id"])
        if cn is None or cn not in r.cluster_networks:
            raise ApiError(404, "NotAuthorizedOrNotFound", "cluster network not found")
        self.need(q, "compartmentId")
        ids = [i for pool in cn.get("instancePools", []) for i in r.by_id.get(pool, {}).get("_instanceIds", [])]
        return self.page([_instance_summary(r.by_id[i]) for i in ids if i in r.by_id], q)

    # -- container engine ------------------------------------------------------------------------
    def list_node_pools(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")
        items = [n for n in r.node_pools if n["compartmentId"] == q["compartmentId"]]
        return self.listed(items, q, "clusterId", "name", "lifecycleState")

    def create_kubeconfig(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        cluster = r.by_id.get(p["id"])
        if cluster is None or cluster not in r.clusters:
            raise ApiError(404, "NotAuthorizedOrNotFound", "cluster not found")
        text = (
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {n}\n  cluster:\n    server: https://{e}\n"
            "contexts:\n- name: {n}\n  context: {{cluster: {n}, user: {n}}}\ncurrent-context: {n}\n"
            "users:\n- name: {n}\n  user: {{token: emulated}}\n"
        ).format(n=cluster["name"], e=cluster.get("endpoints", {}).get("privateEndpoint", "127.0.0.1:6443"))
        return RawBody(text.encode(), "application/octet-stream"), {}

    def list_addon_options(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "kubernetesVersion")
        kv = q["kubernetesVersion"]
        out = []
        for opt in r.addon_options:
            if q.get("addonName") and opt["name"] != q["addonName"]:
                continue
            o = dict(opt)
            o["versions"] = [v for v in opt.get("versions", []) if _k8s_ok(kv, v.get("kubernetesVersionFilters") or {})]
            out.append(o)
        return self.page(out, q)

    def _cluster(self, r: RegionState, cid: str) -> dict[str, Any]:
        cluster = r.by_id.get(cid)
        if cluster is None or cluster not in r.clusters:
            raise ApiError(404, "NotAuthorizedOrNotFound", f"cluster {cid} not found")
        return cluster

    def _tick(self, r: RegionState) -> None:
        """Advance add-ons and work requests whose delay has passed (state is computed lazily)."""
        now = time.time()
        for cluster_addons in r.addons.values():
            for name in list(cluster_addons):
                a = cluster_addons[name]
                due = a.get("_due")
                if due is None or now < due:
                    continue
                a.pop("_due", None)
                wr = r.work_requests.get(a.pop("_wr", ""))
                if a["lifecycleState"] == "DELETING":
                    del cluster_addons[name]
                    status = "SUCCEEDED"
                elif a.get("_fail"):
                    a["lifecycleState"] = "NEEDS_ATTENTION"
                    a["addonError"] = {"code": "AddonInstallFailed", "message": a.pop("_fail"), "status": "500"}
                    status = "FAILED"
                else:
                    a["lifecycleState"] = "ACTIVE"
                    a["currentInstalledVersion"] = a.get("version")
                    a["addonError"] = None
                    status = "SUCCEEDED"
                if wr is not None:
                    wr["status"] = status
                    wr["timeFinished"] = _now()
                    if status == "FAILED":
                        wr["_errors"] = [
                            {"code": "AddonInstallFailed", "message": a["addonError"]["message"], "timestamp": _now()}
                        ]
        for wr in r.work_requests.values():
            if wr["status"] == "ACCEPTED":
                wr["status"] = "IN_PROGRESS"
                wr["timeStarted"] = _now()

    def _work_request(self, r: RegionState, cluster: dict[str, Any], op: str, action: str, name: str) -> str:
        wid = ocid("clustersworkrequest", r.key, cluster["id"], name, op, len(r.work_requests), time.time())
        r.work_requests[wid] = {
            "id": wid,
            "operationType": op,
            "status": "ACCEPTED",
            "compartmentId": cluster["compartmentId"],
            "resources": [
                {
                    "actionType": action,
                    "entityType": "addon",
                    "identifier": cluster["id"],
                    "entityUri": f"/clusters/{cluster['id']}/addons/{name}",
                }
            ],
            "timeAccepted": _now(),
            "timeStarted": None,
            "timeFinished": None,
            "_clusterId": cluster["id"],
        }
        return wid

    def list_addons(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self._cluster(r, p["id"])
        with r.lock:
            self._tick(r)
            items = [{k: v for k, v in a.items() if k != "configurations"} for a in r.addons.get(p["id"], {}).values()]
        return self.page(items, q)

    def get_addon(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self._cluster(r, p["id"])
        with r.lock:
            self._tick(r)
            a = r.addons.get(p["id"], {}).get(p["name"])
            if a is None:
                raise ApiError(404, "NotAuthorizedOrNotFound", f"addon {p['name']} not found")
            return public_view(a), {"etag": _etag(a)}

    def _check_version(self, r: RegionState, cluster: dict[str, Any], name: str, version: str | None) -> None:
        opt = next((o for o in r.addon_options if o["name"] == name), None)
        if opt is None:
            raise ApiError(400, "InvalidParameter", f"Unknown addon {name}")
        if version is None:
            return
        for v in opt.get("versions", []):
            if v["versionNumber"] == version:
                if not _k8s_ok(cluster["kubernetesVersion"], v.get("kubernetesVersionFilters") or {}):
                    raise ApiError(
                        400, "InvalidParameter", f"{name} {version} does not support {cluster['kubernetesVersion']}"
                    )
                return
        raise ApiError(400, "InvalidParameter", f"Unknown version {version} for addon {name}")

    def install_addon(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        cluster = self._cluster(r, p["id"])
        body = body or {}
        name = body.get("addonName")
        if not name:
            raise ApiError(400, "MissingParameter", "addonName is required")
        self._check_version(r, cluster, name, body.get("version"))
        with r.lock:
            self._tick(r)
            addons = r.addons.setdefault(cluster["id"], {})
            if (
                name in addons
                and addons[name]["lifecycleState"] not in ("DELETED", "FAILED")
                and not body.get("isOverrideExisting")
            ):
                raise ApiError(409, "Conflict", f"Addon {name} already exists")
            wid = self._work_request(r, cluster, "ENABLE_ADDON", "CREATED", name)
            addons[name] = {
                "name": name,
                "version": body.get("version"),
                "currentInstalledVersion": None,
                "timeCreated": _now(),
                "lifecycleState": "CREATING",
                "configurations": body.get("configurations") or [],
                "addonError": None,
                "_due": time.time() + self.knobs.addon_delay_s,
                "_wr": wid,
                "_fail": self.knobs.addon_failures.get(name),
            }
        return None, {"opc-work-request-id": wid}

    def update_addon(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        cluster = self._cluster(r, p["id"])
        body = body or {}
        with r.lock:
            self._tick(r)
            a = r.addons.get(cluster["id"], {}).get(p["name"])
            if a is None:
                raise ApiError(404, "NotAuthorizedOrNotFound", f"addon {p['name']} not found")
            if a["lifecycleState"] in ("CREATING", "UPDATING", "DELETING"):
                raise ApiError(409, "Conflict", f"addon {p['name']} is {a['lifecycleState']}")
            self._check_version(r, cluster, p["name"], body.get("version") or a.get("version"))
            wid = self._work_request(r, cluster, "UPDATE_ADDON", "UPDATED", p["name"])
            if body.get("version"):
                a["version"] = body["version"]
            if body.get("configurations") is not None:
                a["configurations"] = body["configurations"]
            a.update(lifecycleState="UPDATING", _due=time.time() + self.knobs.addon_delay_s, _wr=wid)
            a["_fail"] = self.knobs.addon_failures.get(p["name"])
        return None, {"opc-work-request-id": wid}

    def disable_addon(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        cluster = self._cluster(r, p["id"])
        with r.lock:
            self._tick(r)
            a = r.addons.get(cluster["id"], {}).get(p["name"])
            if a is None:
                raise ApiError(404, "NotAuthorizedOrNotFound", f"addon {p['name']} not found")
            wid = self._work_request(r, cluster, "DISABLE_ADDON", "DELETED", p["name"])
            a.update(lifecycleState="DELETING", _due=time.time() + self.knobs.addon_delay_s, _wr=wid, _fail=None)
        return None, {"opc-work-request-id": wid}

    def list_work_requests(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        self.need(q, "compartmentId")
        with r.lock:
            self._tick(r)
            items = [w for w in r.work_requests.values() if w["compartmentId"] == q["compartmentId"]]
            if q.get("clusterId"):
                items = [w for w in items if w["_clusterId"] == q["clusterId"]]
            return self.page(items, q)

    def get_work_request(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        with r.lock:
            self._tick(r)
            wr = r.work_requests.get(p["id"])
            if wr is None:
                raise ApiError(404, "NotAuthorizedOrNotFound", "work request not found")
            return public_view(wr), {}

    def list_work_request_errors(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        with r.lock:
            self._tick(r)
            wr = r.work_requests.get(p["id"])
            if wr is None:
                raise ApiError(404, "NotAuthorizedOrNotFound", "work request not found")
            return list(wr.get("_errors", [])), {}

    # -- storage ---------------------------------------------------------------------------------
    def list_exports(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        if not (q.get("compartmentId") or q.get("exportSetId") or q.get("fileSystemId")):
            raise ApiError(400, "MissingParameter", "compartmentId, exportSetId or fileSystemId is required")
        items = r.exports
        if q.get("compartmentId"):
            items = [e for e in items if e.get("_compartmentId") == q["compartmentId"]]
        return self.listed(items, q, "exportSetId", "fileSystemId", "lifecycleState")

    def list_lustre(self, r: RegionState, q: dict[str, str], p: dict[str, str], body: Any) -> Any:
        items = r.lustre_file_systems
        if q.get("compartmentId"):
            items = [f for f in items if f["compartmentId"] == q["compartmentId"]]
        elif not q.get("id"):
            raise ApiError(400, "MissingParameter", "compartmentId or id is required")
        return self.listed(items, q, "availabilityDomain", "lifecycleState", "displayName", "id", wrap=True)


class RawBody:
    def __init__(self, data: bytes, content_type: str) -> None:
        self.data, self.content_type = data, content_type


def _filter(items: list[dict[str, Any]], q: dict[str, str], *same: str, **fields: str) -> list[dict[str, Any]]:
    """The items whose fields equal the query's filters: ``same`` names a parameter that filters the
    field of its own name, ``fields`` maps a parameter to another field."""
    for param, field in [*((name, name) for name in same), *fields.items()]:
        want = q.get(param)
        if want:
            items = [i for i in items if str(i.get(field)) == want]
    return items


def _instance_summary(inst: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": inst["id"],
        "availabilityDomain": inst["availabilityDomain"],
        "compartmentId": inst["compartmentId"],
        "displayName": inst.get("displayName"),
        "faultDomain": inst.get("faultDomain"),
        "instanceConfigurationId": inst.get("instanceConfigurationId"),
        "region": inst.get("region"),
        "shape": inst.get("shape"),
        "state": inst.get("lifecycleState"),
        "timeCreated": inst.get("timeCreated", EPOCH),
    }


def _k8s_ok(version: str, filters: dict[str, Any]) -> bool:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v)[:3])

    exact = filters.get("exactKubernetesVersions") or []
    if exact:
        return version in exact
    lo, hi = filters.get("minimalVersion"), filters.get("maximumVersion")
    return (not lo or key(version) >= key(lo)) and (not hi or key(version) <= key(hi))


def _code_for(status: int) -> str:
    return {
        400: "InvalidParameter",
        401: "NotAuthenticated",
        403: "NotAuthorizedOrNotFound",
        404: "NotAuthorizedOrNotFound",
        409: "Conflict",
        429: "TooManyRequests",
    }.get(status, "InternalServerError" if status >= 500 else "Error")


def _etag(rec: dict[str, Any]) -> str:
    return hashlib.md5(json.dumps(public_view(rec), sort_keys=True, default=str).encode()).hexdigest()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


class _Handler(BaseHTTPRequestHandler):
    emulator: Emulator
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "oci-emulator/1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        if isinstance(payload, RawBody):
            data, ctype = payload.data, payload.content_type
        elif payload is None:
            data, ctype = b"", "application/json"
        else:
            data, ctype = json.dumps(payload, separators=(",", ":")).encode(), "application/json"
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.send_header("opc-request-id", f"emu-{threading.get_ident():x}-{time.monotonic_ns():x}")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        em = self.emulator
        region: str = self.server.region  # type: ignore[attr-defined]
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        parsed = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(parsed.query, keep_blank_values=True).items()}
        if parsed.path.startswith("/_emulator/"):
            if self.client_address[0] not in ("127.0.0.1", "::1"):
                self._send(403, {"error": "control paths answer on loopback only"})
                return
            self._control(parsed.path, body)
            return
        op = "Unknown"
        try:
            found = em.match(self.command, parsed.path)
            if found is not None:
                op = found[0].op
            em.verify_signature(self.command, self.path, self.headers, body)
            if found is None:
                raise ApiError(404, "NotAuthorizedOrNotFound", f"no route for {self.command} {parsed.path}")
            route, params = found
            em.before_call(region, query, op)
            payload = json.loads(body) if body else None
            em.request_ctx.headers = self.headers
            result, headers = route.fn(em.tenancy.regions[region], query, params, payload)
            status = 204 if result is None and self.command == "DELETE" else 200
            if result is None and "opc-work-request-id" in headers:
                status = 202
            em.count(region, op, status)
            em.log_write(region, op, params, payload, self.headers)
            self._send(status, result, headers)
        except ApiError as err:
            em.count(region, op, err.status)
            self._send(err.status, {"code": err.code, "message": err.message}, err.headers)
        except Exception as exc:
            em.count(region, op, 500)
            self._send(500, {"code": "InternalServerError", "message": f"emulator error: {exc!r}"})

    def _control(self, path: str, body: bytes) -> None:
        em = self.emulator
        if path == "/_emulator/counters":
            self._send(200, em.counter_snapshot())
        elif path == "/_emulator/writes":
            self._send(200, em.writes())
        elif path == "/_emulator/reset" and self.command == "POST":
            em.reset_counters()
            self._send(200, {"ok": True})
        elif path == "/_emulator/knobs":
            if self.command == "POST":
                try:
                    em.knobs.update(**json.loads(body or b"{}"))
                except (ValueError, TypeError) as exc:
                    self._send(400, {"error": str(exc)})
                    return
            self._send(200, em.knobs.as_dict())
        elif path == "/_emulator/instances":
            out = []
            for r in em.tenancy.regions.values():
                with r.lock:
                    out += [
                        {k: i.get(k) for k in ("id", "displayName", "lifecycleState", "shape", "region")}
                        for i in r.instances
                    ]
            self._send(200, out)
        elif path == "/_emulator/compute-log":
            self._send(200, list(em.compute_log))
        elif path == "/_emulator/stalled":
            with em.stall_lock:
                self._send(200, dict(em.stalled))
        elif path in ("/_emulator/host-health", "/_emulator/maintenance") and self.command == "POST":
            try:
                args = json.loads(body or b"{}")
                iid = args.pop("instanceId")
                if path == "/_emulator/host-health":
                    rec = em.set_host_health(iid, args.pop("health"), args.pop("impacted", None))
                elif iid.startswith("ocid1.instancemaintenanceevent."):  # an existing event: its fields change
                    rec = em.update_maintenance(iid, **args)
                else:
                    rec = em.schedule_maintenance(iid, **args)
            except (KeyError, ValueError, TypeError) as exc:
                self._send(400, {"error": str(exc)})
                return
            self._send(200, rec)
        elif path == "/_emulator/tenancy":
            self._send(200, em.tenancy.data)
        else:
            self._send(404, {"error": "unknown control path"})

    do_GET = do_POST = do_PUT = do_DELETE = _handle
