# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure logic of the ``oci_gpu.cluster.oci`` inventory plugin: fetch plan, fetch, and host building.

``fetch()`` turns list calls into a compact, JSON-serialisable *raw* dict (the cache payload; it
never holds instance metadata, user_data or ssh keys). ``build_hosts()`` turns raw data plus options
into host records (name, variables, groups) without touching the network. Both are unit-tested
directly; the plugin class only glues them to Ansible.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils import _shapes

SLURM_ROLES = {"controller": "slurm_controller", "dbd": "slurm_dbd", "compute": "slurm_compute", "login": "slurm_login"}
HOSTNAME_SOURCES = ("display_name", "hostname_label", "fqdn", "private_ip", "public_ip", "id")
DEFAULT_HOSTNAMES = ["hostname_label", "display_name", "private_ip", "id"]
DEFAULT_ANSIBLE_HOST = ["private_ip", "fqdn", "public_ip"]
# Host variables set by default. Every variable costs Ansible noticeable time per host (ansible-core
# 2.19 tags and later serialises each value), so the rest is computed (filters, compose and groups
# see it) but only exported with ``extended_hostvars``.
CORE_HOSTVARS = frozenset(
    (
        "ansible_host",
        "oci_id",
        "oci_display_name",
        "oci_region",
        "oci_availability_domain",
        "oci_fault_domain",
        "oci_compartment_id",
        "oci_lifecycle_state",
        "oci_shape",
        "oci_gpus",
        "oci_gpu_description",
        "oci_ocpus",
        "oci_memory_gb",
        "oci_private_ip",
        "oci_hostname_label",
        "oci_public_ip",
        "oci_freeform_tags",
        "oci_defined_tags",
        "oci_vnics",
        "oci_cluster_network_id",
        "oci_instance_pool_id",
        "oci_hpc_island_id",
        "oci_network_block_id",
        "oci_local_block_id",
    )
)
LIFECYCLE_STATES = (
    "MOVING",
    "PROVISIONING",
    "RUNNING",
    "STARTING",
    "STOPPING",
    "STOPPED",
    "CREATING_IMAGE",
    "TERMINATING",
    "TERMINATED",
)


class InventoryError(Exception):
    """The inventory cannot be produced; the message names what failed."""


class AuthFailure(InventoryError):
    """The API answered 401: the credentials are wrong, retrying cannot help."""


# ---------------------------------------------------------------------------------------------
# Extraction: SDK model or dict -> the compact records we keep (and cache)
# ---------------------------------------------------------------------------------------------
@functools.cache
def _camel(attr: str) -> str:
    head, *rest = attr.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _g(obj: Any, attr: str) -> Any:
    """``attr`` (snake_case) of an SDK model, or of the API's raw camelCase JSON dict."""
    return obj.get(_camel(attr)) if isinstance(obj, dict) else getattr(obj, attr, None)


def slim_instance(i: Any) -> dict[str, Any]:
    sc = _g(i, "shape_config")
    return {
        "id": _g(i, "id"),
        "display_name": _g(i, "display_name"),
        "compartment_id": _g(i, "compartment_id"),
        "availability_domain": _g(i, "availability_domain"),
        "fault_domain": _g(i, "fault_domain"),
        "region": _g(i, "region"),
        "shape": _g(i, "shape"),
        "lifecycle_state": _g(i, "lifecycle_state"),
        "image_id": _g(i, "image_id"),
        "instance_configuration_id": _g(i, "instance_configuration_id"),
        "time_created": str(_g(i, "time_created")) if _g(i, "time_created") is not None else None,
        "freeform_tags": dict(_g(i, "freeform_tags") or {}),
        "defined_tags": {k: dict(v) for k, v in (_g(i, "defined_tags") or {}).items()},
        "shape_config": None
        if sc is None
        else {
            "ocpus": _g(sc, "ocpus"),
            "memory_in_gbs": _g(sc, "memory_in_gbs"),
            "vcpus": _g(sc, "vcpus"),
            "gpus": _g(sc, "gpus"),
            "gpu_description": _g(sc, "gpu_description"),
            "local_disks": _g(sc, "local_disks"),
            "local_disks_total_size_in_gbs": _g(sc, "local_disks_total_size_in_gbs"),
            "networking_bandwidth_in_gbps": _g(sc, "networking_bandwidth_in_gbps"),
        },
    }


def slim_attachment(a: Any) -> dict[str, Any]:
    keys = ("instance_id", "vnic_id", "subnet_id", "lifecycle_state", "nic_index", "time_created")
    return {k: _g(a, k) for k in keys}


def slim_private_ip(p: Any) -> dict[str, Any]:
    return {k: _g(p, k) for k in ("id", "vnic_id", "ip_address", "hostname_label", "is_primary", "subnet_id")}


def slim_subnet(s: Any) -> dict[str, Any]:
    keys = (
        "id",
        "compartment_id",
        "display_name",
        "cidr_block",
        "subnet_domain_name",
        "prohibit_public_ip_on_vnic",
        "vcn_id",
    )
    return {k: _g(s, k) for k in keys}


def _slim_pool(p: Any) -> dict[str, Any]:
    return {k: _g(p, k) for k in ("id", "display_name", "lifecycle_state", "instance_configuration_id", "size")}


def slim_compute_host(h: Any) -> dict[str, Any]:
    keys = (
        "id",
        "instance_id",
        "hpc_island_id",
        "network_block_id",
        "local_block_id",
        "gpu_memory_fabric_id",
        "health",
        "lifecycle_state",
    )
    return {k: _g(h, k) for k in keys}


# ---------------------------------------------------------------------------------------------
# Compartment selection
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# Fetch
# ---------------------------------------------------------------------------------------------
class CallFailed(Exception):
    def __init__(self, status: int | None, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def fetch(api: Any, opts: dict[str, Any], warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """All list calls the inventory needs, concurrent per region. Returns the raw (cacheable) dict.

    ``api`` is ``SdkApi`` (or a test double with the same methods): ``tenancy``, ``home_region``,
    ``region_subscriptions()``, ``compartments()``, ``list_instances()``, ``list_vnic_attachments()``,
    ``list_private_ips()``, ``get_subnet()``, ``list_subnets()``, ``list_compute_hosts()``,
    ``list_cluster_networks()``, ``list_instance_pools()``, ``list_instance_pool_instances()`` and
    ``get_public_ip_by_private_ip()``; each returns every page as slim dicts and raises ``CallFailed``.

    Raises ``AuthFailure`` on a 401 and ``InventoryError`` naming every failed call unless
    ``opts['allow_partial']``; then failures are listed under ``raw['errors']``.
    """
    tenancy = api.tenancy
    errors: list[dict[str, Any]] = []
    err_lock = threading.Lock()

    notices: list[str] = []

    def record(region: str, scope: str, call: str, exc: CallFailed, enrichment: str | None = None) -> None:
        if exc.status == 401:
            raise AuthFailure(
                f"OCI API refused the credentials (401 {exc.code}) in region {region} on {call}: {exc.message}. "
                "Check the key, fingerprint, user and tenancy in the OCI config."
            )
        if enrichment and exc.status in (403, 404):
            # an optional enrichment the policy does not allow: hosts are complete, only these
            # variables/groups are missing -- say so instead of failing every inventory run
            with err_lock:
                notices.append(
                    f"region {region} {scope}: {call} not authorized ({exc.status}); {enrichment} variables "
                    f"and groups are missing for these hosts (grant the permission or set {enrichment}: false)"
                )
            return
        with err_lock:
            errors.append(
                {"region": region, "scope": scope, "call": call, "status": exc.status, "message": exc.message}
            )

    regions = list(opts.get("regions") or [])
    if not regions:
        try:
            regions = api.region_subscriptions()
        except CallFailed as exc:
            record(api.home_region or "?", tenancy, "ListRegionSubscriptions", exc)
            raise InventoryError(_error_text(errors)) from exc
    try:
        all_comps = api.compartments()
    except CallFailed as exc:
        record(api.home_region or "?", tenancy, "ListCompartments", exc)
        raise InventoryError(_error_text(errors)) from exc
    comps = select_compartments(
        tenancy,
        all_comps,
        opts.get("compartments"),
        bool(opts.get("compartment_subtree", True)),
        opts.get("exclude_compartments"),
    )
    states = [s.upper() for s in opts.get("lifecycle_states") or []]
    server_state = states[0] if len(states) == 1 else None
    server_filters = server_filter_params(opts.get("server_filters"))
    raw: dict[str, Any] = {
        "tenancy": tenancy,
        "regions": regions,
        "compartments": {c["id"]: c.get("name") for c in all_comps} | {c["id"]: c.get("name") for c in comps},
        "queried_compartments": [c["id"] for c in comps],
        "per_region": {},
        "errors": errors,
        "notices": notices,
    }
    workers = max(1, int(opts.get("max_workers") or 8))

    def one_region(region: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "instances": [],
            "attachments": [],
            "private_ips": [],
            "subnets": {},
            "compute_hosts": [],
            "pools": {},
            "cluster_networks": {},
            "public_ips": {},
        }
        lock = threading.Lock()
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"oci-{region}")
        try:
            # phase 1: per compartment, instances then (only if any) their VNIC attachments
            def per_comp(cid: str) -> tuple[str, list[dict[str, Any]]]:
                try:
                    insts = api.list_instances(region, cid, server_state, server_filters)
                except CallFailed as exc:
                    record(region, cid, "ListInstances", exc)
                    return cid, []
                if states:
                    insts = [i for i in insts if (i.get("lifecycle_state") or "").upper() in states]
                if not insts:
                    return cid, []
                try:
                    atts = api.list_vnic_attachments(region, cid, server_filters.get("availabilityDomain"))
                except CallFailed as exc:
                    record(region, cid, "ListVnicAttachments", exc)
                    atts = []
                    for i in insts:
                        i["_vnic_error"] = True
                keep = {i["id"] for i in insts}
                with lock:
                    out["instances"].extend(insts)
                    out["attachments"].extend(a for a in atts if a["instance_id"] in keep)
                return cid, insts

            by_comp = dict(pool.map(per_comp, [c["id"] for c in comps]))
            subnet_ids = sorted({a["subnet_id"] for a in out["attachments"] if a.get("lifecycle_state") == "ATTACHED"})

            # phase 2: per subnet private IPs (+ subnet details), topology, pool membership
            def per_subnet(sid: str) -> None:
                try:
                    ips = api.list_private_ips(region, sid)
                    with lock:
                        out["private_ips"].extend(ips)
                except CallFailed as exc:
                    record(region, sid, "ListPrivateIps", exc)

            def subnet_details() -> None:
                # Subnets of a cluster usually share one compartment and VCN: one GetSubnet finds them,
                # one ListSubnets there returns the rest (2 calls instead of one per subnet).
                remaining = list(subnet_ids)
                while remaining:
                    sid = remaining.pop(0)
                    try:
                        sub = api.get_subnet(region, sid)
                    except CallFailed as exc:
                        record(region, sid, "GetSubnet", exc, "public_ips")
                        continue
                    found = {sid: sub}
                    if remaining and sub.get("compartment_id"):
                        try:
                            for other in api.list_subnets(region, sub["compartment_id"], sub.get("vcn_id")):
                                found[other["id"]] = other
                        except CallFailed as exc:
                            record(region, sub["compartment_id"], "ListSubnets", exc, "public_ips")
                    with lock:
                        out["subnets"].update(found)
                    remaining = [r for r in remaining if r not in found]

            def compute_hosts() -> None:
                seen: set[str] = set()
                for root in opts.get("compartments") or [tenancy]:
                    try:
                        hosts = api.list_compute_hosts(region, root, True)
                    except CallFailed as exc:
                        record(region, root, "ListComputeHosts", exc, "compute_hosts")
                        continue
                    with lock:
                        for h in hosts:
                            if h.get("instance_id") and h["id"] not in seen:
                                seen.add(h["id"])
                                out["compute_hosts"].append(h)

            def pools_of(cid: str, insts: list[dict[str, Any]]) -> None:
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
                live = [
                    pc for pc in pools.values() if pc[0].get("lifecycle_state") not in ("TERMINATED", "TERMINATING")
                ]
                by_config: dict[str | None, list[tuple[dict[str, Any], dict[str, Any] | None]]] = {}
                for pc in live:
                    by_config.setdefault(pc[0].get("instance_configuration_id"), []).append(pc)
                for config, candidates in by_config.items():
                    users = [i["id"] for i in insts if config and i.get("instance_configuration_id") == config]
                    size = candidates[0][0].get("size")
                    exact = bool(opts.get("exact_pool_membership"))
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
                    with lock:
                        for (p, cn), members in assigned:
                            out["pools"][p["id"]] = {
                                "name": p.get("display_name"),
                                "cluster_network_id": cn["id"] if cn else None,
                                "cluster_network_name": cn.get("display_name") if cn else None,
                                "instance_ids": members,
                            }

            jobs = [pool.submit(per_subnet, s) for s in subnet_ids]
            if opts.get("public_ips", False) and subnet_ids:
                jobs.append(pool.submit(subnet_details))
            insts_all = out["instances"]
            if opts.get("compute_hosts", True) and any(_is_bm_gpu(i.get("shape")) for i in insts_all):
                jobs.append(pool.submit(compute_hosts))
            if opts.get("cluster_networks", True):
                for cid, insts in by_comp.items():
                    if any(i.get("instance_configuration_id") for i in insts):
                        jobs.append(pool.submit(pools_of, cid, insts))
            for j in jobs:
                j.result()

            # phase 3: public IPs, only for primary IPs in subnets that allow them
            if opts.get("public_ips", False):
                candidates = [
                    p["id"]
                    for p in out["private_ips"]
                    if p.get("is_primary")
                    and p.get("vnic_id")
                    and out["subnets"].get(p.get("subnet_id"), {}).get("prohibit_public_ip_on_vnic") is False
                ]

                def public(pid: str) -> None:
                    try:
                        ip = api.get_public_ip_by_private_ip(region, pid)
                    except CallFailed as exc:
                        record(region, pid, "GetPublicIpByPrivateIpId", exc, "public_ips")
                        return
                    if ip:
                        with lock:
                            out["public_ips"][pid] = ip

                for j in [pool.submit(public, pid) for pid in candidates]:
                    j.result()
        finally:
            pool.shutdown(wait=True)
        return out

    with ThreadPoolExecutor(max_workers=max(1, len(regions)), thread_name_prefix="oci-region") as rpool:
        for region, data in zip(regions, rpool.map(one_region, regions), strict=True):
            raw["per_region"][region] = data

    if errors and not opts.get("allow_partial"):
        raise InventoryError(_error_text(errors))
    # The warnings come from build_hosts, which reads them from the raw data: a raw result served
    # from the inventory cache warns the same as a fresh one.
    return raw


def report_gaps(raw: dict[str, Any], opts: dict[str, Any], warn: Callable[[str], None] | None = None) -> None:
    """Warn of what the raw data lacks (enrichments the policy refused, calls that failed under
    ``allow_partial``), fresh or from the cache; raise ``InventoryError`` for failed calls unless
    ``allow_partial`` (a partial result cached while it was set is not served once it is not)."""
    notices = raw.get("notices") or []
    errors = raw.get("errors") or []
    if errors and not opts.get("allow_partial"):
        raise InventoryError(_error_text(errors) + " (a partial result; set allow_partial: true to use it)")
    if warn:
        for notice in sorted(set(notices))[:10]:
            warn(notice)
        if errors:
            warn("partial inventory (allow_partial): " + _error_text(errors))


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


def _is_bm_gpu(shape: str | None) -> bool:
    return _shapes.is_bare_metal_gpu(shape)


# ---------------------------------------------------------------------------------------------
# Build hosts
# ---------------------------------------------------------------------------------------------
def safe_group(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def short_id(ocid_value: str | None) -> str | None:
    """The unique tail of an OCID, short enough for a group name."""
    if not ocid_value:
        return None
    return ocid_value.rsplit(".", 1)[-1][-12:]


def _lookup(d: dict[str, Any], dotted: str) -> Any:
    cur: Any = d
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def matches(hostvars: dict[str, Any], flt: dict[str, Any]) -> bool:
    """True when every key (a hostvar name, dotted into dicts; ``oci_`` prefix optional) matches the
    value or one of a list of values."""
    for key, want in flt.items():
        have = _lookup(hostvars, key)
        if have is None and not key.startswith("oci_"):
            have = _lookup(hostvars, "oci_" + key)
        wants = want if isinstance(want, list) else [want]
        if have not in wants and str(have) not in [str(w) for w in wants]:
            return False
    return True


def build_hosts(
    raw: dict[str, Any], opts: dict[str, Any], warn: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Host records ``{"name", "vars", "all_vars", "groups"}`` from raw fetch data (``vars`` are the
    ones to export, ``all_vars`` everything known, for compose/groups). Raises ``InventoryError`` on
    duplicate hostnames unless ``allow_duplicate_hostnames``, and for failed calls in ``raw`` unless
    ``allow_partial`` (report_gaps warns of what is missing)."""
    report_gaps(raw, opts, warn)
    hostnames = list(opts.get("hostnames") or DEFAULT_HOSTNAMES)
    for h in hostnames:
        if h not in HOSTNAME_SOURCES:
            raise InventoryError(f"hostnames: unknown source {h!r}; choose from {', '.join(HOSTNAME_SOURCES)}")
    if "id" not in hostnames:
        hostnames.append("id")
    host_pref = list(opts.get("ansible_host") or DEFAULT_ANSIBLE_HOST)
    states = [s.upper() for s in opts.get("lifecycle_states") or []]
    comp_names = raw.get("compartments", {})
    default_groups = opts.get("default_groups", True)
    hosts: list[dict[str, Any]] = []
    no_ip: list[str] = []
    for region in raw.get("regions", []):
        data = raw["per_region"].get(region)
        if not data:
            continue
        ips_by_vnic: dict[str, list[dict[str, Any]]] = {}
        for p in data["private_ips"]:
            ips_by_vnic.setdefault(p.get("vnic_id"), []).append(p)
        atts_by_inst: dict[str, list[dict[str, Any]]] = {}
        for a in data["attachments"]:
            if a.get("lifecycle_state") == "ATTACHED":
                atts_by_inst.setdefault(a["instance_id"], []).append(a)
        topo = {h["instance_id"]: h for h in data.get("compute_hosts", [])}
        pool_of: dict[str, tuple[str, dict[str, Any]]] = {}
        for pid, p in data.get("pools", {}).items():
            for iid in p.get("instance_ids", []):
                pool_of[iid] = (pid, p)
        for inst in data["instances"]:
            if states and (inst.get("lifecycle_state") or "").upper() not in states:
                continue
            hv = host_vars(inst, region, atts_by_inst, ips_by_vnic, data, topo, pool_of, comp_names)
            if not hv.get("oci_private_ip"):
                no_ip.append(f"{inst.get('display_name')} ({inst['id']})")
            include = opts.get("include_filters") or []
            if include and not any(matches(hv, f) for f in include):
                continue
            if any(matches(hv, f) for f in opts.get("exclude_filters") or []):
                continue
            name = next(hv[_var_of(src)] for src in hostnames if hv.get(_var_of(src)))
            for src in host_pref:
                if hv.get(_var_of(src)):
                    hv["ansible_host"] = hv[_var_of(src)]
                    break
            groups = default_group_names(hv, warn) if default_groups else []
            exported = hv if opts.get("extended_hostvars") else {k: v for k, v in hv.items() if k in CORE_HOSTVARS}
            hosts.append({"name": name, "vars": exported, "all_vars": hv, "groups": groups})
    if no_ip and warn:
        shown = ", ".join(no_ip[:10]) + (f" (+{len(no_ip) - 10} more)" if len(no_ip) > 10 else "")
        warn(f"{len(no_ip)} instance(s) have no private IP (no ATTACHED VNIC found); kept without one: {shown}")
    seen: dict[str, str] = {}
    dups = []
    for h in hosts:
        if h["name"] in seen:
            dups.append(f"{h['name']} ({seen[h['name']]}, {h['vars']['oci_id']})")
        else:
            seen[h["name"]] = h["vars"]["oci_id"]
    if dups:
        msg = f"duplicate hostnames: {', '.join(dups[:10])}"
        if not opts.get("allow_duplicate_hostnames"):
            raise InventoryError(msg + "; choose other 'hostnames' sources or set allow_duplicate_hostnames")
        if warn:
            warn(msg + "; later hosts merge into earlier ones")
    return hosts


def _var_of(source: str) -> str:
    return "oci_" + source


def host_vars(
    inst: dict[str, Any],
    region: str,
    atts_by_inst: dict[str, list[dict[str, Any]]],
    ips_by_vnic: dict[str, list[dict[str, Any]]],
    data: dict[str, Any],
    topo: dict[str, dict[str, Any]],
    pool_of: dict[str, tuple[str, dict[str, Any]]],
    comp_names: dict[str, str],
) -> dict[str, Any]:
    sc = inst.get("shape_config") or {}
    shape = inst.get("shape")
    rec = _shapes.shape(shape)
    gpus = sc.get("gpus")
    if gpus is None:
        gpus = _shapes.gpu_count(shape)
    vnics = []
    # list calls do not say which VNIC is the primary one: it is the first attached (at launch)
    order = sorted(
        atts_by_inst.get(inst["id"], []), key=lambda a: (a.get("time_created") or "", a.get("nic_index") or 0)
    )
    for a in order:
        for p in ips_by_vnic.get(a["vnic_id"], []):
            subnet = data.get("subnets", {}).get(p.get("subnet_id"), {})
            domain = subnet.get("subnet_domain_name")
            label = p.get("hostname_label")
            vnics.append(
                {
                    "vnic_id": a["vnic_id"],
                    "subnet_id": p.get("subnet_id"),
                    "private_ip": p.get("ip_address"),
                    "private_ip_id": p.get("id"),
                    "hostname_label": label,
                    "fqdn": f"{label}.{domain}" if label and domain else None,
                    "is_primary": bool(p.get("is_primary")),
                    "public_ip": data.get("public_ips", {}).get(p.get("id")),
                }
            )
    primary = next((v for v in vnics if v["is_primary"]), vnics[0] if vnics else {})
    host = topo.get(inst["id"], {})
    pool = pool_of.get(inst["id"])
    hv: dict[str, Any] = {
        "oci_id": inst["id"],
        "oci_display_name": inst.get("display_name"),
        "oci_region": region,
        "oci_availability_domain": inst.get("availability_domain"),
        "oci_fault_domain": inst.get("fault_domain"),
        "oci_compartment_id": inst.get("compartment_id"),
        "oci_compartment_name": comp_names.get(inst.get("compartment_id")),
        "oci_lifecycle_state": inst.get("lifecycle_state"),
        "oci_shape": shape,
        "oci_gpus": int(gpus or 0),
        "oci_gpu_description": sc.get("gpu_description"),
        "oci_gpu_model": _shapes.gres_type(shape),
        "oci_gpu_vendor": rec.gpu_vendor if rec is not None and gpus else None,
        "oci_ocpus": sc.get("ocpus"),
        "oci_memory_gb": sc.get("memory_in_gbs"),
        "oci_local_disks": sc.get("local_disks"),
        "oci_rdma_nics": rec.rdma_nic_count if rec is not None else None,
        "oci_image_id": inst.get("image_id"),
        "oci_private_ip": primary.get("private_ip"),
        "oci_hostname_label": primary.get("hostname_label"),
        "oci_fqdn": primary.get("fqdn"),
        "oci_public_ip": primary.get("public_ip"),
        "oci_subnet_id": primary.get("subnet_id"),
        # secondary VNICs only: the primary one is in the flat variables above
        "oci_vnics": vnics if len(vnics) > 1 else None,
        "oci_freeform_tags": inst.get("freeform_tags") or {},
        "oci_defined_tags": inst.get("defined_tags") or {},
        "oci_instance_pool_id": pool[0] if pool else None,
        "oci_instance_pool_name": pool[1].get("name") if pool else None,
        "oci_cluster_network_id": pool[1].get("cluster_network_id") if pool else None,
        "oci_cluster_network_name": pool[1].get("cluster_network_name") if pool else None,
        "oci_compute_host_id": host.get("id"),
        "oci_hpc_island_id": host.get("hpc_island_id"),
        "oci_network_block_id": host.get("network_block_id"),
        "oci_local_block_id": host.get("local_block_id"),
        "oci_gpu_memory_fabric_id": host.get("gpu_memory_fabric_id"),
        "oci_host_health": host.get("health"),
    }
    # unset values are left out: every variable costs Ansible time per host (5,000 hosts x 40 vars)
    return {k: v for k, v in hv.items() if v is not None}


def slurm_roles(tag: Any) -> list[str]:
    if not tag:
        return []
    return [r.strip().lower() for r in re.split(r"[,\s]+", str(tag)) if r.strip()]


def default_group_names(hv: dict[str, Any], warn: Callable[[str], None] | None = None) -> list[str]:
    groups = ["oci", "gpu" if hv.get("oci_gpus") else "cpu"]
    groups.append("shape_" + safe_group(hv.get("oci_shape") or "unknown"))
    groups.append("region_" + safe_group(hv["oci_region"]))
    if hv.get("oci_availability_domain"):
        # "Uocm:US-ASHBURN-AD-1" -> ad_us_ashburn_ad_1
        groups.append("ad_" + safe_group(hv["oci_availability_domain"].split(":")[-1].lower()))
    if hv.get("oci_gpu_model"):
        groups.append("gpu_" + safe_group(hv["oci_gpu_model"]))
    if hv.get("oci_cluster_network_name") or hv.get("oci_cluster_network_id"):
        groups.append(
            "cluster_network_"
            + safe_group(hv.get("oci_cluster_network_name") or short_id(hv["oci_cluster_network_id"]))
        )
    if hv.get("oci_instance_pool_id"):
        groups.append(
            "instance_pool_" + safe_group(hv.get("oci_instance_pool_name") or short_id(hv["oci_instance_pool_id"]))
        )
    if hv.get("oci_hpc_island_id"):
        groups.append("hpc_island_" + safe_group(short_id(hv["oci_hpc_island_id"]) or ""))
    if hv.get("oci_network_block_id"):
        groups.append("network_block_" + safe_group(short_id(hv["oci_network_block_id"]) or ""))
    for role in slurm_roles((hv.get("oci_freeform_tags") or {}).get("slurm_role")):
        if role in SLURM_ROLES:
            groups.append(SLURM_ROLES[role])
        elif warn:
            warn(f"{hv.get('oci_display_name')}: unknown slurm_role {role!r} ignored (known: {', '.join(SLURM_ROLES)})")
    return groups


# ---------------------------------------------------------------------------------------------
# The SDK-backed Api (the only part that talks to OCI)
# ---------------------------------------------------------------------------------------------
class SdkApi:
    """``Api`` over the unmodified ``oci`` SDK: one client set per region, all pages, slim dicts."""

    def __init__(
        self, auth: dict[str, Any], endpoints: dict[str, str] | None = None, page_limit: int = 1000, retry: Any = None
    ) -> None:
        from ansible_collections.oci_gpu.cluster.plugins.module_utils import _oci_auth

        self._auth_mod = _oci_auth
        self.oci = _oci_auth.oci
        self.auth = auth
        self.tenancy = auth["tenancy"]
        self.home_region = auth.get("region")
        self.endpoints = endpoints or {}
        self.limit = max(1, min(1000, int(page_limit)))
        self._clients: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self.retry = retry

    def _client(self, kind: str, region: str | None) -> Any:
        region = region or self.home_region
        key = (kind, region or "")
        with self._lock:
            if key not in self._clients:
                cls = {
                    "identity": self.oci.identity.IdentityClient,
                    "compute": self.oci.core.ComputeClient,
                    "network": self.oci.core.VirtualNetworkClient,
                    "management": self.oci.core.ComputeManagementClient,
                }[kind]
                self._clients[key] = self._auth_mod.make_client(
                    cls, self.auth, region, self.endpoints.get(region or ""), self.retry
                )
            return self._clients[key]

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self.oci.exceptions.ServiceError as exc:
            raise CallFailed(exc.status, exc.code, exc.message) from exc
        except self.oci.exceptions.RequestException as exc:
            raise CallFailed(None, "RequestException", str(exc)) from exc

    def _all(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
        items: list[Any] = []
        page = None
        while True:
            resp = self._call(fn, *args, limit=self.limit, **({"page": page} if page else {}), **kwargs)
            data = resp.data
            items.extend(data.items if hasattr(data, "items") and not isinstance(data, list) else data)
            page = resp.next_page
            if not page:
                return items

    def region_subscriptions(self) -> list[str]:
        subs = self._call(self._client("identity", None).list_region_subscriptions, self.tenancy).data
        return [s.region_name for s in subs if s.status == "READY"]

    def compartments(self) -> list[dict[str, Any]]:
        comps = self._all(
            self._client("identity", None).list_compartments,
            self.tenancy,
            compartment_id_in_subtree=True,
            access_level="ACCESSIBLE",
        )
        return [
            {"id": c.id, "name": c.name, "compartment_id": c.compartment_id, "lifecycle_state": c.lifecycle_state}
            for c in comps
        ]

    def _raw_all(self, kind: str, region: str, path: str, query: dict[str, Any]) -> list[dict[str, Any]]:
        """Every page of a list call as the API's JSON (camelCase dicts).

        Goes through the SDK's own ``call_api`` (signing, endpoint, retries, error types) but asks
        for untyped JSON: building SDK model objects (and parsing every timestamp with dateutil)
        costs more CPU than the rest of the inventory for thousands of hosts.
        """
        client = self._client(kind, region)
        call = client.base_client.call_api
        strategy = self.retry or self.oci.retry.DEFAULT_RETRY_STRATEGY
        headers = {"accept": "application/json", "content-type": "application/json"}
        items: list[dict[str, Any]] = []
        page = None
        while True:
            q = {k: v for k, v in query.items() if v is not None}
            q["limit"] = self.limit
            if page:
                q["page"] = page
            resp = self._call(
                strategy.make_retrying_call,
                call,
                resource_path=path,
                method="GET",
                query_params=q,
                header_params=dict(headers),
                response_type="object",
            )
            data = resp.data
            items.extend(data.get("items", []) if isinstance(data, dict) else (data or []))
            page = resp.next_page
            if not page:
                return items

    def list_instances(
        self, region: str, compartment: str, state: str | None, filters: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        query = {"compartmentId": compartment, "lifecycleState": state, **(filters or {})}
        return [slim_instance(i) for i in self._raw_all("compute", region, "/instances", query)]

    def list_vnic_attachments(self, region: str, compartment: str, ad: str | None = None) -> list[dict[str, Any]]:
        query = {"compartmentId": compartment, "availabilityDomain": ad}
        return [slim_attachment(a) for a in self._raw_all("compute", region, "/vnicAttachments", query)]

    def list_private_ips(self, region: str, subnet: str) -> list[dict[str, Any]]:
        return [slim_private_ip(p) for p in self._raw_all("network", region, "/privateIps", {"subnetId": subnet})]

    def get_subnet(self, region: str, subnet: str) -> dict[str, Any]:
        return slim_subnet(self._call(self._client("network", region).get_subnet, subnet).data)

    def get_public_ip_by_private_ip(self, region: str, private_ip_id: str) -> str | None:
        details = self.oci.core.models.GetPublicIpByPrivateIpIdDetails(private_ip_id=private_ip_id)
        try:
            return self._call(self._client("network", region).get_public_ip_by_private_ip_id, details).data.ip_address
        except CallFailed as exc:
            if exc.status == 404:
                return None
            raise

    def list_compute_hosts(self, region: str, compartment: str, subtree: bool) -> list[dict[str, Any]]:
        query = {"compartmentId": compartment, "computeHostInSubtree": subtree}
        return [slim_compute_host(h) for h in self._raw_all("compute", region, "/computeHosts", query)]

    def list_cluster_networks(self, region: str, compartment: str) -> list[dict[str, Any]]:
        return [
            {
                "id": c["id"],
                "display_name": c.get("displayName"),
                "lifecycle_state": c.get("lifecycleState"),
                "instance_pools": [_slim_pool(p) for p in (c.get("instancePools") or [])],
            }
            for c in self._raw_all("management", region, "/clusterNetworks", {"compartmentId": compartment})
        ]

    def list_subnets(self, region: str, compartment: str, vcn: str | None) -> list[dict[str, Any]]:
        query = {"compartmentId": compartment, "vcnId": vcn}
        return [slim_subnet(x) for x in self._raw_all("network", region, "/subnets", query)]

    def list_instance_pools(self, region: str, compartment: str) -> list[dict[str, Any]]:
        return [
            _slim_pool(p) for p in self._raw_all("management", region, "/instancePools", {"compartmentId": compartment})
        ]

    def list_instance_pool_instances(self, region: str, compartment: str, pool: str) -> list[str]:
        path = f"/instancePools/{pool}/instances"
        return [i["id"] for i in self._raw_all("management", region, path, {"compartmentId": compartment})]
