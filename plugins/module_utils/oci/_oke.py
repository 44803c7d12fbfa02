# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""OKE (Container Engine) helpers shared by the ``oke_*`` modules.

The first half is pure: configurations as ``[{key, value}]`` <-> dict, input validation, the
install/update/disable plan and its diff, version compatibility from ListAddonOptions data and the
GPU/RDMA view of node pools. The second half wraps the SDK calls (client, paging, 404 as absent,
work-request waits). ``oci`` is imported lazily through ``_oci_auth`` so this file imports without it.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

# Lifecycle states of an add-on (Addon.lifecycle_state).
from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth

# Lifecycle states of an add-on (Addon.lifecycle_state).
TRANSITIONAL_STATES = ("CREATING", "UPDATING", "DELETING")
FAILED_STATES = ("NEEDS_ATTENTION", "FAILED")
# Work request states (WorkRequest.status).
WORK_REQUEST_DONE = ("SUCCEEDED", "FAILED", "CANCELED")

CLUSTER_OCID_RE = re.compile(r"^ocid1\.cluster\.[a-z0-9-]+\.[a-z0-9-]*\.[A-Za-z0-9._-]+$")


def oke_argspec() -> dict[str, Any]:
    """Argument spec of the options every ``oke_*`` module has: the shared authentication options
    (doc fragment ``oci_gpu.cluster._oci_auth``) and region/endpoint (``oci_gpu.cluster._oci_service``)."""
    spec = _oci_auth.oci_auth_argspec()
    spec.update(_oci_auth.oci_service_argspec())
    return spec


def oke_cluster_argspec() -> dict[str, Any]:
    """``oke_argspec()`` and the cluster of the modules that act on one (doc fragment
    ``oci_gpu.cluster._oke_cluster``)."""
    return {**oke_argspec(), "cluster_id": {"type": "str", "required": True}}


# -- pure functions ------------------------------------------------------------------------------
def configs_to_dict(configs: list[dict[str, Any]] | None) -> dict[str, str]:
    """``[{key, value}]`` (as the API returns them) -> ``{key: value}``."""
    return {c["key"]: c.get("value") for c in configs or []}


def dict_to_configs(configs: dict[str, str] | None) -> list[dict[str, str]]:
    """``{key: value}`` -> ``[{key, value}]`` sorted by key (a stable request body)."""
    return [{"key": k, "value": configs[k]} for k in sorted(configs or {})]


def validate_configurations(name: str, configs: Any) -> list[str]:
    """Errors for configurations that OKE would refuse: a mapping of string keys to string values."""
    if configs is None:
        return []
    if not isinstance(configs, dict):
        return [f"add-on {name}: configurations must be a mapping of key to string value, got {type(configs).__name__}"]
    errors = []
    for key, value in configs.items():
        if not isinstance(key, str) or not key:
            errors.append(f"add-on {name}: configuration key {key!r} must be a non-empty string")
        elif not isinstance(value, str):
            errors.append(
                f"add-on {name}: configuration {key!r} has a {type(value).__name__} value {value!r};"
                ' OKE takes strings only (quote it, e.g. "true")'
            )
    return errors


def validate_cluster_id(cluster_id: Any) -> str | None:
    """An error message when ``cluster_id`` is not a cluster OCID, else None."""
    if not cluster_id:
        return "cluster_id is missing: give the OKE cluster OCID (ocid1.cluster.oc1...)"
    if not isinstance(cluster_id, str) or not CLUSTER_OCID_RE.match(cluster_id):
        return f"cluster_id {cluster_id!r} is not a cluster OCID (ocid1.cluster.<realm>.<region>.<id>)"
    return None


def _version_tuple(version: str | None) -> tuple[int, ...]:
    nums = re.findall(r"\d+", version or "")
    return tuple(int(n) for n in nums[:3])


def kubernetes_version_ok(k8s_version: str, filters: dict[str, Any] | None) -> bool:
    """Whether an add-on version's ``kubernetesVersionFilters`` admit ``k8s_version``."""
    filters = filters or {}
    exact = filters.get("exactKubernetesVersions") or filters.get("exact_kubernetes_versions") or []
    if exact:
        return k8s_version in exact
    have = _version_tuple(k8s_version)
    low = filters.get("minimalVersion") or filters.get("minimal_version")
    high = filters.get("maximumVersion") or filters.get("maximum_version")
    if low and have < _version_tuple(low):
        return False
    return not (high and have > _version_tuple(high))


def offered_versions(options: list[dict[str, Any]], name: str) -> list[str] | None:
    """Versions ListAddonOptions offers for ``name`` (already filtered by Kubernetes version), or
    None when the add-on is unknown."""
    for opt in options:
        if opt.get("name") == name:
            return [v.get("version_number") or v.get("versionNumber") for v in opt.get("versions") or []]
    return None


def check_addon_request(
    name: str, version: str | None, configs: Any, options: list[dict[str, Any]] | None, k8s_version: str | None
) -> list[str]:
    """Every reason not to send this add-on to OKE; ``options`` as ListAddonOptions answered for the
    cluster's Kubernetes version (None: not checked)."""
    errors = validate_configurations(name, configs)
    if options is None:
        return errors
    versions = offered_versions(options, name)
    known = ", ".join(sorted(o.get("name", "") for o in options))
    if versions is None:
        errors.append(f"add-on {name!r} is not an OKE add-on (known: {known})")
    elif version and version not in versions:
        errors.append(
            f"add-on {name}: version {version!r} is not offered for Kubernetes {k8s_version}"
            f" (offered: {', '.join(versions) or 'none'})"
        )
    return errors


def addon_view(addon: dict[str, Any] | None) -> dict[str, Any] | None:
    """The module's view of an add-on (snake_case SDK dict in, stable dict out)."""
    if addon is None:
        return None
    error = addon.get("addon_error")
    return {
        "name": addon.get("name"),
        "version": addon.get("version"),
        "current_installed_version": addon.get("current_installed_version"),
        "lifecycle_state": addon.get("lifecycle_state"),
        "configurations": configs_to_dict(addon.get("configurations")),
        "addon_error": dict(error) if error else None,
        "time_created": addon.get("time_created"),
    }


def plan_addon(current: dict[str, Any] | None, desired: dict[str, Any]) -> dict[str, Any]:
    """What to do to make ``current`` (an :func:`addon_view` or None) look like ``desired``.

    ``desired``: ``name``, ``state`` (present/absent), ``version`` (None: keep / service default) and
    ``configurations`` (None: not managed; a dict: exactly these keys). Returns ``action`` (install,
    update, disable or None), ``changes`` (what differs) and ``diff`` (``before``/``after`` views).
    """
    state = desired.get("state", "present")
    before = _diff_view(current)
    if state == "absent":
        if current is None:
            return {"action": None, "changes": [], "diff": {"before": before, "after": before}}
        return {"action": "disable", "changes": ["state"], "diff": {"before": before, "after": {}}}
    after = {
        "name": desired["name"],
        "version": desired.get("version") or (current or {}).get("version"),
        "configurations": dict(
            desired["configurations"]
            if desired.get("configurations") is not None
            else (current or {}).get("configurations") or {}
        ),
        "state": "present",
    }
    if current is None:
        return {"action": "install", "changes": ["state"], "diff": {"before": before, "after": after}}
    changes = []
    if desired.get("version") and desired["version"] != current.get("version"):
        changes.append("version")
    if desired.get("configurations") is not None and dict(desired["configurations"]) != (
        current.get("configurations") or {}
    ):
        changes.append("configurations")
    return {"action": "update" if changes else None, "changes": changes, "diff": {"before": before, "after": after}}


def _diff_view(current: dict[str, Any] | None) -> dict[str, Any]:
    if current is None:
        return {}
    return {
        "name": current["name"],
        "version": current.get("version"),
        "configurations": dict(current.get("configurations") or {}),
        "state": "present",
    }


def shape_gpus(shape: str | None) -> int:
    """GPUs per node of an OCI shape, from the collection's shape table: 0 for a CPU shape, -1 for a
    shape the table does not know whose name says GPU (a GPU pool of unknown count), else 0."""
    count = _shapes.gpu_count(shape)
    if count is None:
        return -1 if _shapes.is_gpu_shape(shape) else 0
    return count


def summarise_node_pools(pools: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"node_pools": [...], "nodes": {...}, "gpu_shapes": [...]}`` from GetNodePool answers
    (snake_case dicts): per pool its shape, GPUs per node and node states; counts of ACTIVE GPU and
    non-GPU nodes; one record per GPU shape with active nodes, GPUs and RDMA facts."""
    out_pools = []
    counts = {"total": 0, "active": 0, "gpu_active": 0, "non_gpu_active": 0}
    shapes: dict[str, dict[str, Any]] = {}
    for pool in pools:
        shape = pool.get("node_shape") or ""
        gpus = shape_gpus(shape)
        nodes = [
            {
                "id": n.get("id"),
                "name": n.get("name"),
                "lifecycle_state": n.get("lifecycle_state"),
                "private_ip": n.get("private_ip"),
                "availability_domain": n.get("availability_domain"),
                "fault_domain": n.get("fault_domain"),
            }
            for n in pool.get("nodes") or []
        ]
        active = sum(1 for n in nodes if n["lifecycle_state"] == "ACTIVE")
        counts["total"] += len(nodes)
        counts["active"] += active
        counts["gpu_active" if gpus else "non_gpu_active"] += active
        out_pools.append(
            {
                "id": pool.get("id"),
                "name": pool.get("name"),
                "node_shape": shape,
                "kubernetes_version": pool.get("kubernetes_version"),
                "lifecycle_state": pool.get("lifecycle_state"),
                "gpus_per_node": gpus,
                "is_gpu": gpus != 0,
                "nodes": nodes,
            }
        )
        if gpus:
            info = _shapes.shape(shape)
            rec = shapes.setdefault(
                shape,
                {
                    "shape": shape,
                    "gpus_per_node": gpus,
                    "gpu_model": info.gpu_model if info else None,
                    "gpu_vendor": info.gpu_vendor if info else None,
                    "cpus_per_node": _shapes.threads(shape),
                    "memory_gb_per_node": info.memory_gb if info else None,
                    "nodes": 0,
                    "active_nodes": 0,
                    "gpus_active": 0,
                    "rdma": _shapes.rdma_profile(shape),
                },
            )
            rec["nodes"] += len(nodes)
            rec["active_nodes"] += active
            rec["gpus_active"] += active * max(gpus, 0)
    return {"node_pools": out_pools, "nodes": counts, "gpu_shapes": [shapes[k] for k in sorted(shapes)]}


# -- the oke_addons role's plan (filter oci_gpu.cluster.oke_addons_plan) ---------------------------
# Order in which managed add-ons are applied, whatever the order of oke_addons_addons: NFD labels
# nodes first; OKE's own device plugin goes before the GPU operator takes over; the network
# operator waits for the GPU operator's toolkit rollout (it restarts the runtime).
ADDON_ORDER = {
    "NodeFeatureDiscovery": 10,
    "NvidiaGpuPlugin": 15,
    "NvidiaGpuOperator": 20,
    "NvidiaNetworkOperator": 30,
    "CertManager": 40,
    "KubernetesMetricsServer": 40,
    "ClusterAutoscaler": 50,
}
ADDON_ORDER_UNKNOWN = 90


def sriov_resources(gpu_shapes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SR-IOV device plugin's resource list: one RDMA resource per GPU shape with RDMA NICs
    (``gpu_shapes`` as summarise_node_pools returns them)."""
    return [
        {
            "resourcePrefix": "nvidia.com",
            "resourceName": s["rdma"]["rdma_resource_name"],
            "selectors": {
                "vendors": [s["rdma"]["rdma_vendor_id"]],
                "devices": [s["rdma"]["rdma_vf_device_id"]],
                "drivers": [s["rdma"]["rdma_driver"]],
                "isRdma": True,
            },
        }
        for s in gpu_shapes
        if s.get("rdma")
    ]


def default_configurations(
    name: str, *, gpu_driver_enabled: bool, rdma_resources: list[dict[str, Any]]
) -> dict[str, str]:
    """The role's configurations of an add-on before the user's own. OKE GPU images carry the NVIDIA
    driver and the Mellanox OFED stack, so the operators install neither (the GPU driver only when
    asked); NFD comes from its own add-on, so the operators' bundled NFD stays off."""
    if name == "NvidiaGpuOperator":
        return {
            "driver.enabled": "true" if gpu_driver_enabled else "false",
            "toolkit.enabled": "true",
            "devicePlugin.enabled": "true",
            "dcgmExporter.enabled": "true",
            "nfd.enabled": "false",
        }
    if name == "NvidiaNetworkOperator":
        return {
            "nfd.enabled": "false",
            "ofedDriver.deploy": "false",
            "sriovDevicePlugin.deploy": "true",
            "secondaryNetwork.deploy": "true",
            "sriovDevicePlugin.resources": json.dumps(rdma_resources),
        }
    return {}


def addons_input_errors(addons: list[dict[str, Any]]) -> list[str]:
    """What is wrong with ``oke_addons_addons`` itself, before any call: an add-on named twice, a
    configuration value that is not a string."""
    errors = []
    names = [str(a.get("name")) for a in addons]
    if len(names) != len(set(names)):
        errors.append(f"oke_addons_addons names an add-on more than once: {', '.join(names)}")
    bad = [
        f"oke_addons_addons[{a.get('name')}].configurations[{key}] = {json.dumps(value, default=str)}"
        for a in addons
        for key, value in (a.get("configurations") or {}).items()
        if not isinstance(value, str)
    ]
    if bad:
        errors.append(
            f'OKE add-on configuration values must be strings (quote them, e.g. "true"); not strings: {"; ".join(bad)}'
        )
    return errors


def not_offered(plan: list[dict[str, Any]], options: list[dict[str, Any]]) -> list[str]:
    """Present add-ons of ``plan`` that the cluster's Kubernetes version is not offered, or whose
    version is not; ``options`` as oke_addon_info returns them (``[{name, versions: [{version}]}]``)."""
    offered = {o.get("name"): [v.get("version") for v in o.get("versions") or []] for o in options}
    known = ", ".join(sorted(str(n) for n in offered))
    out = []
    for addon in plan:
        if addon["state"] != "present":
            continue
        if addon["name"] not in offered:
            out.append(f"add-on {addon['name']} is unknown (known: {known})")
        elif addon["version"] and addon["version"] not in offered[addon["name"]]:
            out.append(
                f"add-on {addon['name']} version {addon['version']} (offered: {', '.join(offered[addon['name']])})"
            )
    return out


def plan_addons(
    addons: list[dict[str, Any]],
    *,
    versions: dict[str, str] | None = None,
    gpu_shapes: list[dict[str, Any]] | None = None,
    options: list[dict[str, Any]] | None = None,
    rdma_enabled: bool = True,
    gpu_driver_enabled: bool = False,
    disable_nvidia_gpu_plugin: bool = True,
) -> dict[str, Any]:
    """The managed add-ons to apply, in order, with their versions and merged configurations.

    Returns ``plan`` (name, state, version or None, configurations or None, order), ``rdma_shapes``
    (GPU shapes with RDMA NICs), ``rdma_resources`` (the SR-IOV resource list), ``not_offered``
    (checked only when ``options`` is given) and ``errors`` (input errors, then what is not offered).
    The network operator is planned only with ``rdma_enabled`` and a GPU shape with RDMA NICs; with
    ``disable_nvidia_gpu_plugin`` and the GPU operator asked for, OKE's own GPU plugin is disabled.
    """
    versions = versions or {}
    rdma_shapes = [s for s in gpu_shapes or [] if s.get("rdma")]
    resources = sriov_resources(rdma_shapes)
    names = [a.get("name") for a in addons]
    plan = []
    if disable_nvidia_gpu_plugin and "NvidiaGpuOperator" in names and "NvidiaGpuPlugin" not in names:
        plan.append(
            {
                "name": "NvidiaGpuPlugin",
                "state": "absent",
                "version": None,
                "configurations": None,
                "order": ADDON_ORDER["NvidiaGpuPlugin"],
            }
        )
    for addon in addons:
        name = addon.get("name")
        if name == "NvidiaNetworkOperator" and not (rdma_enabled and rdma_shapes):
            continue
        merged = default_configurations(name, gpu_driver_enabled=gpu_driver_enabled, rdma_resources=resources)
        merged.update(addon.get("configurations") or {})
        plan.append(
            {
                "name": name,
                "state": addon.get("state") or "present",
                "version": addon.get("version") or versions.get(name) or None,
                "configurations": merged or None,
                "order": ADDON_ORDER.get(name, ADDON_ORDER_UNKNOWN),
            }
        )
    plan.sort(key=lambda a: a["order"])
    missing = not_offered(plan, options) if options is not None else []
    return {
        "plan": plan,
        "rdma_shapes": rdma_shapes,
        "rdma_resources": resources,
        "not_offered": missing,
        "errors": addons_input_errors(addons) + missing,
    }


# -- SDK side ------------------------------------------------------------------------------------
class OkeError(_oci_auth.OciModuleError):
    """A Container Engine problem with a message fit for the user; ``details`` go into the result."""


def ce_client(params: dict[str, Any]) -> Any:
    """A ContainerEngineClient from the module's auth/region/endpoint options with the shared retry
    strategy (429, 5xx and 409 IncorrectState with backoff)."""
    auth = _oci_auth.resolve_auth(params)
    return _oci_auth.make_client(
        _oci_auth.oci.container_engine.ContainerEngineClient,
        auth,
        params.get("region"),
        params.get("service_endpoint"),
        _oci_auth.retry_strategy(),
    )


to_dict = _oci_auth.to_dict
list_all = _oci_auth.list_all


def is_status(exc: BaseException, status: int) -> bool:
    return isinstance(exc, _oci_auth.oci.exceptions.ServiceError) and exc.status == status


def get_cluster(client: Any, cluster_id: str) -> dict[str, Any]:
    try:
        return to_dict(client.get_cluster(cluster_id).data)
    except _oci_auth.oci.exceptions.ServiceError as exc:
        if exc.status == 404:
            raise OkeError(f"cluster {cluster_id} not found (or not authorised)") from exc
        raise


def get_addon(client: Any, cluster_id: str, name: str) -> dict[str, Any] | None:
    """The add-on as a snake_case dict, or None when the cluster does not have it."""
    try:
        return to_dict(client.get_addon(cluster_id, name).data)
    except _oci_auth.oci.exceptions.ServiceError as exc:
        if exc.status == 404:
            return None
        raise


def addon_options(client: Any, k8s_version: str, name: str | None = None) -> list[dict[str, Any]]:
    kwargs = {"addon_name": name} if name else {}
    return list_all(client.list_addon_options, k8s_version, **kwargs)


def wait_addon_settled(
    client: Any, cluster_id: str, name: str, timeout: float, interval: float, clock: Any = time
) -> dict[str, Any] | None:
    """Poll GetAddon until the add-on leaves CREATING/UPDATING/DELETING (or is gone)."""
    deadline = clock.monotonic() + timeout
    while True:
        addon = get_addon(client, cluster_id, name)
        if addon is None or addon.get("lifecycle_state") not in TRANSITIONAL_STATES:
            return addon
        if clock.monotonic() >= deadline:
            raise OkeError(
                f"add-on {name} is still {addon.get('lifecycle_state')} after {timeout:g} s",
                addon=addon_view(addon),
            )
        clock.sleep(interval)


def wait_work_request(
    client: Any, work_request_id: str, timeout: float, interval: float, clock: Any = time
) -> dict[str, Any]:
    """Poll GetWorkRequest until it ends; returns it with ``errors`` (ListWorkRequestErrors) when it failed."""
    deadline = clock.monotonic() + timeout
    while True:
        wr = to_dict(client.get_work_request(work_request_id).data)
        if wr.get("status") in WORK_REQUEST_DONE:
            if wr["status"] != "SUCCEEDED":
                errs = client.list_work_request_errors(wr.get("compartment_id"), work_request_id).data
                wr["errors"] = [to_dict(e) for e in errs or []]
            return wr
        if clock.monotonic() >= deadline:
            raise OkeError(
                f"work request {work_request_id} is still {wr.get('status')} after {timeout:g} s",
                work_request=wr,
            )
        clock.sleep(interval)
