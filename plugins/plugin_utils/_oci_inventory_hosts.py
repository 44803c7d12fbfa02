# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``oci_gpu.cluster.oci`` inventory's host building, pure: raw data plus options in, host
records (name, variables, groups) out, without touching the network."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes, _topology
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._oci_inventory_api import InventoryError
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._oci_inventory_fetch import _error_text

# "elastic": an instance the elastic agent launched for a powered-up Slurm node (power/_agent); its
# group is never one the slurm playbook configures: Slurm, not the inventory, owns those nodes
SLURM_ROLES = {
    "controller": "slurm_controller",
    "dbd": "slurm_dbd",
    "compute": "slurm_compute",
    "login": "slurm_login",
    "elastic": "slurm_elastic",
}


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
    tags = RoleTags.of(opts)
    report = RoleReport()
    hosts: list[dict[str, Any]] = []
    no_ip: list[str] = []
    for region in raw.get("regions", []):
        data = raw["per_region"].get(region)
        if not data:
            continue
        index = RegionIndex.of(region, data, comp_names)
        for inst in data["instances"]:
            if states and (inst.get("lifecycle_state") or "").upper() not in states:
                continue
            hv = host_vars(inst, index)
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
            groups = default_group_names(hv, warn, tags, report) if default_groups else []
            exported = hv if opts.get("extended_hostvars") else {k: v for k, v in hv.items() if k in CORE_HOSTVARS}
            hosts.append({"name": name, "vars": exported, "all_vars": hv, "groups": groups})
    _finish_roles(tags, report, warn)
    if default_groups:
        _fabric_names_apart(hosts)
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


@dataclass(frozen=True)
class RegionIndex:
    """One region's raw data indexed for host building: attachments by instance, private IPs by
    VNIC, compute hosts and pools by instance, subnets, public IPs and compartment names."""

    region: str
    atts_by_inst: dict[str, list[dict[str, Any]]]
    ips_by_vnic: dict[str, list[dict[str, Any]]]
    topo: dict[str, dict[str, Any]]
    pool_of: dict[str, tuple[str, dict[str, Any]]]
    subnets: dict[str, dict[str, Any]]
    public_ips: dict[str, str]
    comp_names: dict[str, str]

    @classmethod
    def of(cls, region: str, data: dict[str, Any], comp_names: dict[str, str]) -> RegionIndex:
        ips_by_vnic: dict[str, list[dict[str, Any]]] = {}
        for p in data["private_ips"]:
            ips_by_vnic.setdefault(p.get("vnic_id"), []).append(p)
        atts_by_inst: dict[str, list[dict[str, Any]]] = {}
        for a in data["attachments"]:
            if a.get("lifecycle_state") == "ATTACHED":
                atts_by_inst.setdefault(a["instance_id"], []).append(a)
        pool_of: dict[str, tuple[str, dict[str, Any]]] = {}
        for pid, p in data.get("pools", {}).items():
            for iid in p.get("instance_ids", []):
                pool_of[iid] = (pid, p)
        return cls(
            region=region,
            atts_by_inst=atts_by_inst,
            ips_by_vnic=ips_by_vnic,
            topo={h["instance_id"]: h for h in data.get("compute_hosts", [])},
            pool_of=pool_of,
            subnets=data.get("subnets", {}),
            public_ips=data.get("public_ips", {}),
            comp_names=comp_names,
        )


def host_vars(inst: dict[str, Any], index: RegionIndex) -> dict[str, Any]:
    sc = inst.get("shape_config") or {}
    shape = inst.get("shape")
    rec = _shapes.shape(shape)
    gpus = sc.get("gpus")
    if gpus is None:
        gpus = _shapes.gpu_count(shape)
    vnics = []
    # list calls do not say which VNIC is the primary one: it is the first attached (at launch)
    order = sorted(
        index.atts_by_inst.get(inst["id"], []), key=lambda a: (a.get("time_created") or "", a.get("nic_index") or 0)
    )
    for a in order:
        for p in index.ips_by_vnic.get(a["vnic_id"], []):
            subnet = index.subnets.get(p.get("subnet_id"), {})
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
                    "public_ip": index.public_ips.get(p.get("id")),
                }
            )
    primary = next((v for v in vnics if v["is_primary"]), vnics[0] if vnics else {})
    host = index.topo.get(inst["id"], {})
    pool = index.pool_of.get(inst["id"])
    hv: dict[str, Any] = {
        "oci_id": inst["id"],
        "oci_display_name": inst.get("display_name"),
        "oci_region": index.region,
        "oci_availability_domain": inst.get("availability_domain"),
        "oci_fault_domain": inst.get("fault_domain"),
        "oci_compartment_id": inst.get("compartment_id"),
        "oci_compartment_name": index.comp_names.get(inst.get("compartment_id")),
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


FREEFORM_ROLE_TAG = "slurm_role"


def _split_tag(option: str, value: Any) -> tuple[str, str]:
    """``namespace.key`` of a defined tag. OCI allows no period and no space in either name, so the
    first period splits them."""
    text = str(value or "")
    ns, dot, key = text.partition(".")
    if not dot or not ns or not key or "." in key or re.search(r"\s", text):
        raise InventoryError(
            f"{option}: {text!r} is not a defined tag; write it as <tag namespace>.<tag key>, for example "
            "oci-gpu.slurm-role (OCI allows no period or space in either name)"
        )
    return ns.lower(), key.lower()


def _defined_tag(hv: dict[str, Any], ns: str, key: str) -> Any:
    # tag namespaces and keys are case-insensitive in OCI; the API returns them as they were created
    for ns_name, tags in (hv.get("oci_defined_tags") or {}).items():
        if str(ns_name).lower() == ns and isinstance(tags, dict):
            for key_name, value in tags.items():
                if str(key_name).lower() == key:
                    return value
    return None


@dataclass(frozen=True)
class RoleTags:
    """Where a host's Slurm roles come from (issue 15): the defined tag ``slurm_role_tag``, which IAM
    policy on its tag namespace protects, within the cluster named by the defined tag ``cluster_tag``.
    The freeform tag ``slurm_role``, which anyone allowed to update an instance can set, counts only
    with ``freeform_slurm_roles``."""

    role_tag: tuple[str, str] = ("oci-gpu", "slurm-role")
    cluster_tag: tuple[str, str] = ("oci-gpu", "cluster")
    cluster: str | None = None
    freeform: bool = False

    @classmethod
    def of(cls, opts: dict[str, Any]) -> RoleTags:
        cluster = opts.get("cluster")
        return cls(
            role_tag=_split_tag("slurm_role_tag", opts.get("slurm_role_tag") or "oci-gpu.slurm-role"),
            cluster_tag=_split_tag("cluster_tag", opts.get("cluster_tag") or "oci-gpu.cluster"),
            cluster=str(cluster) if cluster not in (None, "") else None,
            freeform=bool(opts.get("freeform_slurm_roles")),
        )

    @property
    def role_tag_name(self) -> str:
        return ".".join(self.role_tag)

    @property
    def cluster_tag_name(self) -> str:
        return ".".join(self.cluster_tag)

    def roles(self, hv: dict[str, Any]) -> tuple[Any, str]:
        """The host's role tag value and where it came from (``defined``, ``freeform`` or ``""``)."""
        value = _defined_tag(hv, *self.role_tag)
        if value:
            return value, "defined"
        if self.freeform:
            value = (hv.get("oci_freeform_tags") or {}).get(FREEFORM_ROLE_TAG)
            if value:
                return value, "freeform"
        return None, ""

    def cluster_of(self, hv: dict[str, Any]) -> str | None:
        value = _defined_tag(hv, *self.cluster_tag)
        return str(value) if value not in (None, "") else None


DEFAULT_ROLE_TAGS = RoleTags()


@dataclass
class RoleReport:
    """What ``build_hosts`` tells once per run about Slurm roles: hosts per cluster, hosts that got
    their role from the freeform tag, hosts whose freeform tag was ignored, hosts left out of scope."""

    clusters: dict[str, list[str]] = field(default_factory=dict)
    freeform_used: list[str] = field(default_factory=list)
    freeform_ignored: list[str] = field(default_factory=list)
    unscoped: list[str] = field(default_factory=list)


def _shown(names: list[str]) -> str:
    return ", ".join(names[:10]) + (f" (+{len(names) - 10} more)" if len(names) > 10 else "")


def _finish_roles(tags: RoleTags, report: RoleReport, warn: Callable[[str], None] | None) -> None:
    if tags.cluster is None and len(report.clusters) > 1:
        found = "; ".join(
            f"{name or '(no ' + tags.cluster_tag_name + ' tag)'}: {_shown(sorted(hosts))}"
            for name, hosts in sorted(report.clusters.items())
        )
        raise InventoryError(
            f"hosts with the Slurm role tag {tags.role_tag_name} belong to {len(report.clusters)} clusters "
            f"({found}); set the option cluster to the one this inventory is for, so that one cluster's "
            f"hosts never join another's Slurm groups (the cluster is the defined tag {tags.cluster_tag_name})"
        )
    if not warn:
        return
    if report.freeform_used:
        warn(
            f"freeform_slurm_roles is on: {len(report.freeform_used)} host(s) got their Slurm role from the "
            f"freeform tag {FREEFORM_ROLE_TAG}, which anyone allowed to update an instance can set "
            f"({_shown(report.freeform_used)}); move them to the defined tag {tags.role_tag_name}"
        )
    if report.freeform_ignored:
        warn(
            f"{len(report.freeform_ignored)} host(s) carry the freeform tag {FREEFORM_ROLE_TAG} but not the "
            f"defined tag {tags.role_tag_name}, so they get no Slurm group: {_shown(report.freeform_ignored)} "
            "(tag them with the defined tag, or set freeform_slurm_roles: true to trust the freeform one)"
        )
    if report.unscoped:
        warn(
            f"{len(report.unscoped)} host(s) carry {tags.role_tag_name} but no {tags.cluster_tag_name} tag, "
            f"so they are outside cluster {tags.cluster!r} and get no Slurm group: {_shown(report.unscoped)}"
        )


def _slurm_groups(
    hv: dict[str, Any], tags: RoleTags, report: RoleReport | None, warn: Callable[[str], None] | None
) -> list[str]:
    value, source = tags.roles(hv)
    name = str(hv.get("oci_display_name") or hv.get("oci_id"))
    if not value:
        if report is not None and (hv.get("oci_freeform_tags") or {}).get(FREEFORM_ROLE_TAG):
            report.freeform_ignored.append(name)
        return []
    cluster = tags.cluster_of(hv)
    if tags.cluster is not None and cluster != tags.cluster:
        if report is not None and cluster is None:
            report.unscoped.append(name)
        return []
    if report is not None:
        report.clusters.setdefault(cluster or "", []).append(name)
        if source == "freeform":
            report.freeform_used.append(name)
    groups = []
    for role in slurm_roles(value):
        if role in SLURM_ROLES:
            groups.append(SLURM_ROLES[role])
        elif warn:
            warn(f"{name}: unknown Slurm role {role!r} ignored (known: {', '.join(SLURM_ROLES)})")
    return groups


# The fabric groups, widest first: (level of module_utils/gpu/_topology.py, host variable). Their names
# are the topology model's switch and block names, so a group and a Slurm switch or block agree.
FABRIC_LEVELS = (
    ("island", "oci_hpc_island_id"),
    ("network_block", "oci_network_block_id"),
    ("local_block", "oci_local_block_id"),
    ("memory_fabric", "oci_gpu_memory_fabric_id"),
)


def _fabric_names_apart(hosts: list[dict[str, Any]]) -> None:
    """Two ids of one level that end in the same 12 characters would share a group: give them the
    topology model's hashed names instead (computed once over all hosts)."""
    for level, var in FABRIC_LEVELS:
        ids = {h["all_vars"][var] for h in hosts if h["all_vars"].get(var)}
        if len({_topology.short_id(i) for i in ids}) == len(ids):
            continue
        names = _topology.level_names(level, ids)
        for h in hosts:
            value = h["all_vars"].get(var)
            plain = _topology.PREFIX[level] + "_" + _topology.short_id(value) if value else None
            if value and names[value] != plain:
                h["groups"] = [names[value] if g == plain else g for g in h["groups"]]


def default_group_names(
    hv: dict[str, Any],
    warn: Callable[[str], None] | None = None,
    tags: RoleTags = DEFAULT_ROLE_TAGS,
    report: RoleReport | None = None,
) -> list[str]:
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
    for level, var in FABRIC_LEVELS:
        if hv.get(var):
            groups.append(_topology.PREFIX[level] + "_" + _topology.short_id(hv[var]))
    groups.extend(_slurm_groups(hv, tags, report, warn))
    return groups
