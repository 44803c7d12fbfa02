# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``oci_gpu.cluster.oci`` inventory's fetch: which compartments, then per region one fetcher
with one method per phase, and the recorder of what failed. Returns the raw (cacheable) dict."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._oci_inventory_api import (
    AuthFailure,
    CallFailed,
    InventoryError,
)


def select_compartments(
    tenancy: str,
    all_compartments: list[dict[str, Any]],
    roots: list[str] | None,
    subtree: bool,
    exclude: list[str] | None,
) -> list[dict[str, Any]]:
    """Compartments to query: the roots (default: the tenancy) and, with ``subtree``, their ACTIVE
    descendants, minus ``exclude`` (OCIDs or names) and everything below an excluded one."""
    by_id = {c["id"]: c for c in all_compartments}
    by_id.setdefault(tenancy, {"id": tenancy, "name": "(root)", "compartment_id": None, "lifecycle_state": "ACTIVE"})
    children: dict[str, list[str]] = {}
    for c in all_compartments:
        children.setdefault(c.get("compartment_id"), []).append(c["id"])
    excluded = set()
    for e in exclude or []:
        excluded |= {cid for cid, c in by_id.items() if e in (cid, c.get("name"))}
    chosen: dict[str, dict[str, Any]] = {}
    for root in roots or [tenancy]:
        ids = [root]
        while ids:
            cid = ids.pop()
            if cid in excluded or cid in chosen:
                continue
            c = by_id.get(cid) or {"id": cid, "name": cid, "lifecycle_state": "ACTIVE"}
            if c.get("lifecycle_state", "ACTIVE") != "ACTIVE":
                continue
            chosen[cid] = c
            if subtree:
                ids.extend(children.get(cid, []))
    return list(chosen.values())


class _Recorder:
    """The failed calls and refused enrichments of one fetch, recorded from every thread."""

    def __init__(self) -> None:
        self.errors: list[dict[str, Any]] = []
        self.notices: list[str] = []
        self._lock = threading.Lock()

    def record(self, region: str, scope: str, call: str, exc: CallFailed, enrichment: str | None = None) -> None:
        if exc.status == 401:
            raise AuthFailure(
                f"OCI API refused the credentials (401 {exc.code}) in region {region} on {call}: {exc.message}. "
                "Check the key, fingerprint, user and tenancy in the OCI config."
            )
        if enrichment and exc.status in (403, 404):
            # an optional enrichment the policy does not allow: hosts are complete, only these
            # variables/groups are missing -- say so instead of failing every inventory run
            with self._lock:
                self.notices.append(
                    f"region {region} {scope}: {call} not authorized ({exc.status}); {enrichment} variables "
                    f"and groups are missing for these hosts (grant the permission or set {enrichment}: false)"
                )
            return
        with self._lock:
            self.errors.append(
                {"region": region, "scope": scope, "call": call, "status": exc.status, "message": exc.message}
            )


class _RegionFetch:
    """One region's calls, one method per phase, on the region's thread pool; results land in ``out``.

    Phase 1, per compartment: instances, then (only where there are any) their VNIC attachments.
    Phase 2, at once: private IPs per subnet, subnet details (public IPs only), compute hosts (bare-metal
    GPU instances only), pool membership (instances launched from a configuration only).
    Phase 3: public IPs of the primary IPs in subnets that allow them (public IPs only).
    """

    def __init__(
        self, api: Any, region: str, opts: dict[str, Any], comps: list[dict[str, Any]], rec: _Recorder, pool: Any
    ) -> None:
        self.api, self.region, self.opts, self.comps, self.rec, self.pool = api, region, opts, comps, rec, pool
        self.states = [s.upper() for s in opts.get("lifecycle_states") or []]
        self.server_state = self.states[0] if len(self.states) == 1 else None
        self.server_filters = server_filter_params(opts.get("server_filters"))
        self.lock = threading.Lock()
        self.out: dict[str, Any] = {
            "instances": [],
            "attachments": [],
            "private_ips": [],
            "subnets": {},
            "compute_hosts": [],
            "pools": {},
            "cluster_networks": {},
            "public_ips": {},
        }

    def run(self) -> dict[str, Any]:
        opts, out = self.opts, self.out
        by_comp = dict(self.pool.map(self.instances, [c["id"] for c in self.comps]))
        subnet_ids = sorted({a["subnet_id"] for a in out["attachments"] if a.get("lifecycle_state") == "ATTACHED"})
        jobs = [self.pool.submit(self.private_ips, s) for s in subnet_ids]
        if opts.get("public_ips", False) and subnet_ids:
            jobs.append(self.pool.submit(self.subnets, subnet_ids))
        if opts.get("compute_hosts", True) and any(_shapes.is_bare_metal_gpu(i.get("shape")) for i in out["instances"]):
            jobs.append(self.pool.submit(self.compute_hosts))
        if opts.get("cluster_networks", True):
            for cid, insts in by_comp.items():
                if any(i.get("instance_configuration_id") for i in insts):
                    jobs.append(self.pool.submit(self.pools, cid, insts))
        for j in jobs:
            j.result()
        if opts.get("public_ips", False):
            self.public_ips()
        return out

    def instances(self, cid: str) -> tuple[str, list[dict[str, Any]]]:
        try:
            insts = self.api.list_instances(self.region, cid, self.server_state, self.server_filters)
        except CallFailed as exc:
            self.rec.record(self.region, cid, "ListInstances", exc)
            return cid, []
        if self.states:
            insts = [i for i in insts if (i.get("lifecycle_state") or "").upper() in self.states]
        if not insts:
            return cid, []
        try:
            atts = self.api.list_vnic_attachments(self.region, cid, self.server_filters.get("availabilityDomain"))
        except CallFailed as exc:
            self.rec.record(self.region, cid, "ListVnicAttachments", exc)
            atts = []
            for i in insts:
                i["_vnic_error"] = True
        keep = {i["id"] for i in insts}
        with self.lock:
            self.out["instances"].extend(insts)
            self.out["attachments"].extend(a for a in atts if a["instance_id"] in keep)
        return cid, insts

    def private_ips(self, sid: str) -> None:
        try:
            ips = self.api.list_private_ips(self.region, sid)
        except CallFailed as exc:
            self.rec.record(self.region, sid, "ListPrivateIps", exc)
            return
        with self.lock:
            self.out["private_ips"].extend(ips)

    def subnets(self, subnet_ids: list[str]) -> None:
        # Subnets of a cluster usually share one compartment and VCN: one GetSubnet finds them,
        # one ListSubnets there returns the rest (2 calls instead of one per subnet).
        remaining = list(subnet_ids)
        while remaining:
            sid = remaining.pop(0)
            try:
                sub = self.api.get_subnet(self.region, sid)
            except CallFailed as exc:
                self.rec.record(self.region, sid, "GetSubnet", exc, "public_ips")
                continue
            found = {sid: sub}
            if remaining and sub.get("compartment_id"):
                try:
                    for other in self.api.list_subnets(self.region, sub["compartment_id"], sub.get("vcn_id")):
                        found[other["id"]] = other
                except CallFailed as exc:
                    self.rec.record(self.region, sub["compartment_id"], "ListSubnets", exc, "public_ips")
            with self.lock:
                self.out["subnets"].update(found)
            remaining = [r for r in remaining if r not in found]

    def compute_hosts(self) -> None:
        seen: set[str] = set()
        for root in self.opts.get("compartments") or [self.api.tenancy]:
            try:
                hosts = self.api.list_compute_hosts(self.region, root, True)
            except CallFailed as exc:
                self.rec.record(self.region, root, "ListComputeHosts", exc, "compute_hosts")
                continue
            with self.lock:
                for h in hosts:
                    if h.get("instance_id") and h["id"] not in seen:
                        seen.add(h["id"])
                        self.out["compute_hosts"].append(h)

    def pools(self, cid: str, insts: list[dict[str, Any]]) -> None:
        region, api, record = self.region, self.api, self.rec.record
        try:
            cns = api.list_cluster_networks(region, cid)
        except CallFailed as exc:
            record(region, cid, "ListClusterNetworks", exc, "cluster_networks")
            return
        pools: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {}
        for cn in cns:
            for p in cn.get("instance_pools", []):
                pools[p["id"]] = (p, cn)
        configs = {i.get("instance_configuration_id") for i in insts} - {None}
        if configs - {p.get("instance_configuration_id") for p, _cn in pools.values()}:
            # some instances come from pools outside any cluster network
            try:
                for p in api.list_instance_pools(region, cid):
                    pools.setdefault(p["id"], (p, None))
            except CallFailed as exc:
                record(region, cid, "ListInstancePools", exc, "cluster_networks")
                return
        live = [pc for pc in pools.values() if pc[0].get("lifecycle_state") not in ("TERMINATED", "TERMINATING")]
        by_config: dict[str | None, list[tuple[dict[str, Any], dict[str, Any] | None]]] = {}
        for pc in live:
            by_config.setdefault(pc[0].get("instance_configuration_id"), []).append(pc)
        for config, candidates in by_config.items():
            users = [i["id"] for i in insts if config and i.get("instance_configuration_id") == config]
            size = candidates[0][0].get("size")
            exact = bool(self.opts.get("exact_pool_membership"))
            if not exact and len(candidates) == 1 and size is not None and len(users) <= int(size):
                # one live pool launches from this configuration and the count fits it:
                # its instances are ours without a per-pool call
                assigned = [(candidates[0], users)]
            else:
                assigned = []
                for pc in candidates:
                    try:
                        assigned.append((pc, api.list_instance_pool_instances(region, cid, pc[0]["id"])))
                    except CallFailed as exc:
                        record(region, pc[0]["id"], "ListInstancePoolInstances", exc, "cluster_networks")
            with self.lock:
                for (p, cn), members in assigned:
                    self.out["pools"][p["id"]] = {
                        "name": p.get("display_name"),
                        "cluster_network_id": cn["id"] if cn else None,
                        "cluster_network_name": cn.get("display_name") if cn else None,
                        "instance_ids": members,
                    }

    def public_ips(self) -> None:
        out = self.out
        candidates = [
            p["id"]
            for p in out["private_ips"]
            if p.get("is_primary")
            and p.get("vnic_id")
            and out["subnets"].get(p.get("subnet_id"), {}).get("prohibit_public_ip_on_vnic") is False
        ]

        def public(pid: str) -> None:
            try:
                ip = self.api.get_public_ip_by_private_ip(self.region, pid)
            except CallFailed as exc:
                self.rec.record(self.region, pid, "GetPublicIpByPrivateIpId", exc, "public_ips")
                return
            if ip:
                with self.lock:
                    out["public_ips"][pid] = ip

        for j in [self.pool.submit(public, pid) for pid in candidates]:
            j.result()


def fetch(api: Any, opts: dict[str, Any], warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """All list calls the inventory needs, concurrent per region (``_RegionFetch``). Returns the raw
    (cacheable) dict.

    ``api`` is ``SdkApi`` (or a test double with the same methods): ``tenancy``, ``home_region``,
    ``region_subscriptions()``, ``compartments()``, ``list_instances()``, ``list_vnic_attachments()``,
    ``list_private_ips()``, ``get_subnet()``, ``list_subnets()``, ``list_compute_hosts()``,
    ``list_cluster_networks()``, ``list_instance_pools()``, ``list_instance_pool_instances()`` and
    ``get_public_ip_by_private_ip()``; each returns every page as slim dicts and raises ``CallFailed``.

    Raises ``AuthFailure`` on a 401 and ``InventoryError`` naming every failed call unless
    ``opts['allow_partial']``; then failures are listed under ``raw['errors']`` and refused
    enrichments under ``raw['notices']`` (build_hosts warns of both). ``warn`` is not used here.
    """
    tenancy = api.tenancy
    rec = _Recorder()
    regions = list(opts.get("regions") or [])
    if not regions:
        try:
            regions = api.region_subscriptions()
        except CallFailed as exc:
            rec.record(api.home_region or "?", tenancy, "ListRegionSubscriptions", exc)
            raise InventoryError(_error_text(rec.errors)) from exc
    try:
        all_comps = api.compartments()
    except CallFailed as exc:
        rec.record(api.home_region or "?", tenancy, "ListCompartments", exc)
        raise InventoryError(_error_text(rec.errors)) from exc
    comps = select_compartments(
        tenancy,
        all_comps,
        opts.get("compartments"),
        bool(opts.get("compartment_subtree", True)),
        opts.get("exclude_compartments"),
    )
    raw: dict[str, Any] = {
        "tenancy": tenancy,
        "regions": regions,
        "compartments": {c["id"]: c.get("name") for c in all_comps} | {c["id"]: c.get("name") for c in comps},
        "queried_compartments": [c["id"] for c in comps],
        "per_region": {},
        "errors": rec.errors,
        "notices": rec.notices,
    }
    workers = max(1, int(opts.get("max_workers") or 8))

    def one_region(region: str) -> dict[str, Any]:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"oci-{region}") as pool:
            return _RegionFetch(api, region, opts, comps, rec, pool).run()

    with ThreadPoolExecutor(max_workers=max(1, len(regions)), thread_name_prefix="oci-region") as rpool:
        for region, data in zip(regions, rpool.map(one_region, regions), strict=True):
            raw["per_region"][region] = data

    if rec.errors and not opts.get("allow_partial"):
        raise InventoryError(_error_text(rec.errors))
    # The warnings come from build_hosts, which reads them from the raw data: a raw result served
    # from the inventory cache warns the same as a fresh one.
    return raw


SERVER_FILTERS = {
    "availability_domain": "availabilityDomain",
    "display_name": "displayName",
    "compute_cluster_id": "computeClusterId",
    "capacity_reservation_id": "capacityReservationId",
}


def server_filter_params(filters: dict[str, Any] | None) -> dict[str, str]:
    """``server_filters`` option -> ListInstances query parameters; unknown keys are an error."""
    out = {}
    for key, value in (filters or {}).items():
        if key not in SERVER_FILTERS:
            raise InventoryError(f"server_filters: unknown key {key!r}; choose from {', '.join(SERVER_FILTERS)}")
        if value not in (None, ""):
            out[SERVER_FILTERS[key]] = str(value)
    return out


def _error_text(errors: list[dict[str, Any]]) -> str:
    lines = [
        f"region {e['region']} {e['scope']}: {e['call']} failed ({e['status']}): {e['message']}" for e in errors[:20]
    ]
    more = f" (+{len(errors) - 20} more)" if len(errors) > 20 else ""
    return f"{len(errors)} OCI API call(s) failed after retries: " + "; ".join(lines) + more
