# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Research groups as tenants: one description, checked once, turned into Slurm accounting
(QOS per tier, an account per tenant, users and their associations) and OKE objects (a namespace,
RoleBinding, ResourceQuota, Kueue ClusterQueue and LocalQueue per tenant). Pure functions.

Public API
----------
``plan(tenants, tiers, *, gpu_shapes=(), cohort="oci-gpu", remove_users=(), remove_tenants=(),
oke_role="edit", directory=None) -> dict``
    ``{"problems": [...], "slurm": {"qos", "accounts", "users", "remove_accounts"},
    "oke": {"objects", "gpus_by_shape", "cohort"}, "lookup": {"users", "groups"}}``; with problems,
    the rest is empty. ``directory`` is what the controller's name service said of ``lookup``
    (module ``directory_info``, plus ``host``): with it, a member or group it does not know is a
    problem named by the tenant, and each group's members are members of the tenant on Slurm
    (without it, groups are not expanded).
``flavor_name(shape)``
    The Kueue ResourceFlavor name of a GPU shape (``BM.GPU.H100.8`` -> ``bm-gpu-h100-8``), the
    name the oke_addons role gives the flavors it creates.

A tenant (``oci_gpu_tenants`` item): ``name`` (the Slurm account and, by default, the namespace),
``members`` (login names), ``groups`` (directory groups whose members are members too, on
Slurm), ``gpus`` (the GPU quota: the account's ``GrpTRES=gres/gpu``, the
namespace's ResourceQuota and the ClusterQueue's ``nominalQuota``), ``tier`` (a key of the tiers:
the QOS), ``fairshare`` (default: ``gpus``, at least 1), ``max_wall`` (a Slurm time),
``description``, ``organization``, ``namespace``, ``oke_iam_group`` (an IAM group OCID: the
RoleBinding's subject), ``gpus_by_shape`` (with several GPU shapes on OKE: the quota per shape,
summing to ``gpus``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu._shapes import shape as shape_facts
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._sacctmgr import check_name, parse_time

TENANT_KEYS = frozenset(
    [
        "name",
        "members",
        "groups",
        "gpus",
        "tier",
        "fairshare",
        "max_wall",
        "description",
        "organization",
        "namespace",
        "oke_iam_group",
        "gpus_by_shape",
    ]
)
TIER_KEYS = frozenset(["priority", "max_wall", "max_gpus_per_user", "flags"])
# Namespaces that belong to Kubernetes or to the add-ons, never to a tenant.
RESERVED_NAMESPACES = frozenset(("default", "kube-system", "kube-public", "kube-node-lease"))
_USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_GROUP_OCID = re.compile(r"^ocid1\.group\.[a-z0-9-]+\.[a-z0-9-]*\.[a-z0-9.-]+$")
MANAGED_BY = {"app.kubernetes.io/managed-by": "oci_gpu.cluster"}


def flavor_name(shape: str) -> str:
    return str(shape).lower().replace(".", "-")


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _time_problems(where: str, value: Any) -> list[str]:
    """A Slurm time limit's problem (none for a time or no value), naming ``where``."""
    if value is None:
        return []
    try:
        parse_time(value)
    except ValueError as exc:
        return [f"{where}: {exc}"]
    return []


def _tier_problems(tiers: Any) -> list[str]:
    if not isinstance(tiers, Mapping) or not tiers:
        return [f"tenants_tiers must be a non-empty mapping of tier name to settings, got {tiers!r}"]
    out = []
    for name, spec in tiers.items():
        label = f"tenants_tiers.{name}"
        out.extend(f"{label}: {p}" for p in [check_name("QOS", name)] if p)
        if not isinstance(spec, Mapping):
            out.append(f"{label}: must be a mapping (priority, max_wall, max_gpus_per_user, flags), got {spec!r}")
            continue
        out.extend(
            f"{label}: unknown key {k!r} (known: {', '.join(sorted(TIER_KEYS))})" for k in spec if k not in TIER_KEYS
        )
        if _whole(spec.get("priority", 0)) is None:
            out.append(f"{label}.priority: {spec.get('priority')!r} is not a whole number")
        if spec.get("max_gpus_per_user") is not None and _whole(spec["max_gpus_per_user"]) is None:
            out.append(f"{label}.max_gpus_per_user: {spec['max_gpus_per_user']!r} is not a whole number")
        out.extend(_time_problems(f"{label}.max_wall", spec.get("max_wall")))
    return out


def _tenant_problems(i: int, t: Any, tiers: Mapping[str, Any], gpu_shapes: list[str]) -> list[str]:
    if not isinstance(t, Mapping):
        return [f"oci_gpu_tenants[{i}]: must be a mapping with at least name, members and gpus, got {t!r}"]
    label = f"tenant {t.get('name', f'#{i}')}"
    out = [f"{label}: unknown key {k!r} (known: {', '.join(sorted(TENANT_KEYS))})" for k in t if k not in TENANT_KEYS]
    for key in ("name", "members", "gpus"):
        if key not in t:
            out.append(f"{label}: {key} is required")
    if "name" in t:
        out.extend(f"{label}: name: {p}" for p in [check_name("account", t["name"])] if p)
    members = t.get("members", [])
    if not isinstance(members, list):
        out.append(f"{label}: members: a list of login names, got {members!r}")
        members = []
    out.extend(
        f"{label}: members: {m!r} is not a login name (lower-case letters, digits, '_', '.', '-'; at most 32)"
        for m in members
        if not isinstance(m, str) or not _USER.match(m)
    )
    dupes = sorted({m for m in members if isinstance(m, str) and members.count(m) > 1})
    if dupes:
        out.append(f"{label}: members: listed twice: {', '.join(dupes)}")
    groups = t.get("groups", [])
    if not isinstance(groups, list):
        out.append(f"{label}: groups: a list of directory group names, got {groups!r}")
    else:
        bad = [g for g in groups if not isinstance(g, str) or not _USER.match(g)]
        out.extend(f"{label}: groups: {g!r} is not a group name" for g in bad)
    gpus = _whole(t.get("gpus", 0))
    if gpus is None or gpus < 0:
        out.append(f"{label}: gpus: {t.get('gpus')!r} is not a whole number of GPUs (0 or more)")
    if t.get("fairshare") is not None and (_whole(t["fairshare"]) is None or _whole(t["fairshare"]) < 1):
        out.append(f"{label}: fairshare: {t['fairshare']!r} is not a whole number of shares (1 or more)")
    tier = t.get("tier", "standard")
    if tier not in tiers:
        out.append(f"{label}: tier: {tier!r} is not one of tenants_tiers ({', '.join(sorted(tiers))})")
    out.extend(_time_problems(f"{label}: max_wall", t.get("max_wall")))
    ns = t.get("namespace", _namespace(t))
    if not isinstance(ns, str) or not _DNS_LABEL.match(ns):
        out.append(f"{label}: namespace: {ns!r} is not a Kubernetes namespace name (a DNS-1123 label); set namespace")
    elif ns in RESERVED_NAMESPACES:
        out.append(f"{label}: namespace: {ns!r} belongs to Kubernetes; give the tenant its own")
    group = t.get("oke_iam_group")
    if group is not None and (not isinstance(group, str) or not _GROUP_OCID.match(group)):
        out.append(f"{label}: oke_iam_group: {group!r} is not an IAM group OCID (ocid1.group.oc1..)")
    by_shape = t.get("gpus_by_shape")
    if by_shape is not None:
        if not isinstance(by_shape, Mapping):
            out.append(f"{label}: gpus_by_shape: a mapping of GPU shape to GPUs, got {by_shape!r}")
        else:
            for shape, count in by_shape.items():
                if shape_facts(shape) is None or not shape_facts(shape).gpu_count:
                    out.append(f"{label}: gpus_by_shape: {shape!r} is not a GPU shape the collection knows")
                if _whole(count) is None:
                    out.append(f"{label}: gpus_by_shape.{shape}: {count!r} is not a whole number")
            counts = [_whole(c) for c in by_shape.values()]
            if gpus is not None and None not in counts and sum(counts) != gpus:
                out.append(f"{label}: gpus_by_shape adds up to {sum(counts)}, not gpus={gpus}")
    elif len(gpu_shapes) > 1 and gpus:
        out.append(
            f"{label}: the OKE cluster has several GPU shapes ({', '.join(gpu_shapes)}): "
            "say how the quota splits with gpus_by_shape"
        )
    return out


def _shares(t: Mapping[str, Any], gpu_shapes: list[str]) -> dict[str, int]:
    if t.get("gpus_by_shape") is not None:
        return {str(s): int(_whole(c) or 0) for s, c in sorted(t["gpus_by_shape"].items())}
    return {gpu_shapes[0]: int(_whole(t["gpus"]) or 0)} if gpu_shapes else {}


def _label(name: Any) -> str:
    """A Slurm account name as a Kubernetes name (``Chem_Lab`` -> ``chem-lab``)."""
    return str(name).lower().replace("_", "-").replace(".", "-")


def _namespace(t: Mapping[str, Any]) -> str:
    """The tenant's namespace: its own, else its name as a Kubernetes name."""
    return str(t.get("namespace") or _label(t.get("name", "")))


def _slurm(
    tenants: list[Mapping[str, Any]], tiers: Mapping[str, Any], remove_users: list[str], remove_tenants: list[str]
) -> dict[str, Any]:
    qos = []
    for name in sorted(tiers):
        spec = tiers[name] or {}
        per_user = spec.get("max_gpus_per_user")
        qos.append(
            {
                "name": str(name).lower(),
                "priority": int(_whole(spec.get("priority", 0)) or 0),
                "max_wall": str(spec["max_wall"]) if spec.get("max_wall") is not None else "-1",
                "max_tres_per_user": {"gres/gpu": int(per_user)} if per_user is not None else {},
                "flags": list(spec.get("flags") or []),
            }
        )
    accounts = []
    memberships: dict[str, list[str]] = {}
    for t in tenants:
        name = str(t["name"]).lower()
        tier = str(t.get("tier", "standard")).lower()
        gpus = int(_whole(t["gpus"]) or 0)
        accounts.append(
            {
                "name": name,
                "description": str(t.get("description") or f"tenant {name}"),
                "organization": str(t.get("organization") or name),
                "fairshare": int(_whole(t.get("fairshare")) or max(gpus, 1)),
                "qos": [tier],
                "default_qos": tier,
                "grp_tres": {"gres/gpu": gpus},
                "max_wall": str(t["max_wall"]) if t.get("max_wall") is not None else "-1",
            }
        )
        for member in t["members"]:
            memberships.setdefault(member, []).append(name)
    model_accounts = sorted({a["name"] for a in accounts} | {str(r).lower() for r in remove_tenants})
    users = []
    for user in sorted(set(memberships) | set(remove_users)):
        mine = memberships.get(user, [])
        leaving = sorted(set(model_accounts) - set(mine)) if user in remove_users else []
        users.append(
            {
                "name": user,
                "accounts": mine,
                # the first tenant (in the model's order) that lists the user
                "default_account": mine[0] if mine else None,
                "remove_accounts": leaving,
            }
        )
    return {
        "qos": qos,
        "accounts": accounts,
        "users": users,
        "remove_accounts": sorted(str(r).lower() for r in remove_tenants),
    }


def _oke(tenants: list[Mapping[str, Any]], gpu_shapes: list[str], cohort: str, role: str) -> dict[str, Any]:
    objects: list[dict[str, Any]] = []
    totals: dict[str, int] = {}
    for t in tenants:
        name, ns = str(t["name"]).lower(), _namespace(t)
        labels = dict(MANAGED_BY, **{"oci-gpu.cluster/tenant": name})
        gpus = int(_whole(t["gpus"]) or 0)
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": ns,
                    "labels": dict(
                        labels,
                        **{
                            "pod-security.kubernetes.io/enforce": "baseline",
                            "pod-security.kubernetes.io/enforce-version": "latest",
                            "pod-security.kubernetes.io/warn": "restricted",
                            "pod-security.kubernetes.io/audit": "restricted",
                        },
                    ),
                },
            }
        )
        if t.get("oke_iam_group"):
            # A RoleBinding (not a ClusterRoleBinding) to the built-in ClusterRole: its rights hold in
            # this namespace only. OKE maps an IAM group to a Kubernetes group named by its OCID.
            objects.append(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": f"{name}-{role}", "namespace": ns, "labels": labels},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [
                        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": t["oke_iam_group"]}
                    ],
                }
            )
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "gpu-quota", "namespace": ns, "labels": labels},
                "spec": {"hard": {"requests.nvidia.com/gpu": str(gpus)}},
            }
        )
        flavors = []
        for shape, count in _shares(t, gpu_shapes).items():
            facts = shape_facts(shape)
            per_gpu_cpus = (facts.ocpus or 0) * (facts.threads_per_core or 1) // max(facts.gpu_count, 1)
            per_gpu_mem = (facts.memory_gb or 0) // max(facts.gpu_count, 1)
            totals[shape] = totals.get(shape, 0) + count
            # A GPU brings its share of the host's CPUs and memory: Kueue admits only workloads whose
            # every requested resource the queue covers.
            flavors.append(
                {
                    "name": flavor_name(shape),
                    "resources": [
                        {"name": "cpu", "nominalQuota": str(count * per_gpu_cpus)},
                        {"name": "memory", "nominalQuota": f"{count * per_gpu_mem}Gi"},
                        {"name": "nvidia.com/gpu", "nominalQuota": str(count)},
                    ],
                }
            )
        queue = f"tenant-{_label(name)}"
        objects.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "ClusterQueue",
                "metadata": {"name": queue, "labels": labels},
                "spec": {
                    "cohort": cohort,
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                    "queueingStrategy": "BestEffortFIFO",
                    # idle quota lends to the cohort; a tenant takes its own back by preempting borrowers
                    "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                    "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": flavors}],
                },
            }
        )
        objects.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "LocalQueue",
                "metadata": {"name": "gpu", "namespace": ns, "labels": labels},
                "spec": {"clusterQueue": queue},
            }
        )
    return {"objects": objects, "gpus_by_shape": dict(sorted(totals.items())), "cohort": cohort}


def plan(
    tenants: Any,
    tiers: Any,
    *,
    gpu_shapes: Any = (),
    cohort: str = "oci-gpu",
    remove_users: Any = (),
    remove_tenants: Any = (),
    oke_role: str = "edit",
    directory: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The tenants model checked (every problem, each naming the tenant and key) and planned."""
    tenants = [] if tenants is None else tenants
    shapes = [str(s) for s in (gpu_shapes or [])]
    problems = _tier_problems(tiers)
    if not isinstance(tenants, list):
        problems.append(f"oci_gpu_tenants must be a list of tenants, got {type(tenants).__name__}")
        tenants = []
    tiers_ok = tiers if isinstance(tiers, Mapping) else {}
    for shape in shapes:
        if shape_facts(shape) is None or not shape_facts(shape).gpu_count:
            problems.append(f"tenants_oke_gpu_shapes: {shape!r} is not a GPU shape the collection knows")
    for i, t in enumerate(tenants):
        problems.extend(_tenant_problems(i, t, tiers_ok, shapes))
    seen: dict[str, str] = {}
    for t in tenants:
        if not isinstance(t, Mapping) or "name" not in t:
            continue
        for kind, key in (("name", str(t["name"]).lower()), ("namespace", _namespace(t))):
            if (kind, key) in seen:
                problems.append(f"tenant {t['name']}: {kind} {key!r} is also tenant {seen[(kind, key)]}'s")
            seen[(kind, key)] = str(t["name"])
    for label, names, check in (
        ("tenants_remove_users", remove_users, _USER.match),
        ("tenants_remove", remove_tenants, lambda n: not check_name("account", n)),
    ):
        if not isinstance(names, (list, tuple)):
            problems.append(f"{label}: a list of names, got {names!r}")
            continue
        problems.extend(f"{label}: {n!r} is not a valid name" for n in names if not isinstance(n, str) or not check(n))
    kept = {str(t.get("name", "")).lower() for t in tenants if isinstance(t, Mapping)}
    if isinstance(remove_tenants, (list, tuple)):
        problems.extend(
            f"tenants_remove: {n!r} is still in oci_gpu_tenants; take it out of the model first"
            for n in remove_tenants
            if str(n).lower() in kept
        )
    if not _DNS_LABEL.match(str(oke_role or "")):
        problems.append(f"tenants_oke_role: {oke_role!r} is not a ClusterRole name")
    if not _DNS_LABEL.match(str(cohort or "")):
        problems.append(f"tenants_oke_cohort: {cohort!r} is not a Kueue cohort name (a DNS-1123 label)")
    if problems:
        return {"problems": problems, "slurm": {}, "oke": {}, "lookup": {}}
    lookup = {
        "users": sorted({m for t in tenants for m in t["members"]}),
        "groups": sorted({g for t in tenants for g in t.get("groups") or []}),
    }
    expanded, problems = _with_directory(tenants, directory)
    if problems:
        return {"problems": problems, "slurm": {}, "oke": {}, "lookup": lookup}
    return {
        "problems": [],
        "slurm": _slurm(expanded, tiers, list(remove_users), list(remove_tenants)),
        "oke": _oke(tenants, shapes, cohort, oke_role),
        "lookup": lookup,
    }


def _with_directory(
    tenants: list[Mapping[str, Any]], directory: Mapping[str, Any] | None
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The tenants with their groups' members added, and every member or group the directory does not know.

    Without a directory (the model's own check, before the lookup; an OKE-only run, where groups
    mean nothing) the members stay as listed."""
    if directory is None:
        return list(tenants), []
    host = str(directory.get("host") or "the controller")
    users = directory.get("users") or {}
    groups = directory.get("groups") or {}
    out, problems = [], []
    for t in tenants:
        members = list(t["members"])
        problems.extend(
            f"tenant {t['name']}: members: {m!r} is not a user {host} knows (neither its local files nor its directory)"
            for m in members
            if not users.get(m)
        )
        for g in t.get("groups") or []:
            if not groups.get(g):
                problems.append(f"tenant {t['name']}: groups: {g!r} is not a group {host} knows")
                continue
            for m in groups[g].get("members") or []:
                if not users.get(m):
                    problems.append(f"tenant {t['name']}: groups: {g!r} lists {m!r}, who is not a user {host} knows")
                elif m not in members:
                    members.append(m)
        out.append({**t, "members": members})
    return out, problems
