# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""OCI compute helpers shared by ``compute_instance`` and ``instance_pool``.

The first half is pure: input checks, the cluster-tag guard every destructive call passes,
capacity-error recognition and the instance view the modules return. The second half wraps the SDK
(clients, lookups, waits); errors, paging and main() are ``_oci_auth``'s, shared with the OKE modules.
"""

from __future__ import annotations

import base64
import socket
import time
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth

GONE_STATES = ("TERMINATING", "TERMINATED")
CAPACITY_CODES = ("OutOfHostCapacity", "OutOfCapacity", "LimitExceeded", "QuotaExceeded")
DEFAULT_CLUSTER_TAG = "oci-gpu.cluster"
DEFAULT_ROLE_TAG = "oci-gpu.slurm-role"
# the role tag's value on the instances the elastic agent launches (the inventory's slurm_elastic group)
ELASTIC_ROLE = "elastic"


class ComputeError(_oci_auth.OciModuleError):
    """A compute failure with a message fit for the user and the details to return with it."""


def compute_argspec() -> dict[str, Any]:
    """Options every compute module has: authentication, region/endpoint, the cluster guard and the
    polling interval (doc fragment ``oci_gpu.cluster._oci_compute``)."""
    spec = _oci_auth.oci_auth_argspec()
    spec.update(_oci_auth.oci_service_argspec())
    spec.update(
        {
            "compartment_id": {"type": "str", "required": True},
            "cluster": {"type": "str", "required": True},
            "cluster_tag": {"type": "str", "default": DEFAULT_CLUSTER_TAG},
            "poll_interval": {"type": "float", "default": 5},
        }
    )
    return spec


# -- pure functions ------------------------------------------------------------------------------
def split_tag(tag: str, option: str) -> tuple[str, str]:
    """``"namespace.key"`` -> ``(namespace, key)``; a clear error otherwise."""
    ns, dot, key = (tag or "").partition(".")
    if not (ns and dot and key):
        raise ComputeError(f"{option} {tag!r} is not '<tag namespace>.<tag key>'")
    return ns, key


def tag_value(instance: dict[str, Any], tag: str) -> str | None:
    """The value of defined tag ``namespace.key`` on ``instance`` (as the SDK's to_dict gives it);
    namespaces and keys match without regard to case, as OCI's do."""
    ns, _dot, key = tag.partition(".")
    for have_ns, tags in (instance.get("defined_tags") or {}).items():
        if have_ns.lower() == ns.lower():
            for have_key, value in (tags or {}).items():
                if have_key.lower() == key.lower():
                    return None if value is None else str(value)
    return None


def ownership_problem(instance: dict[str, Any], cluster: str, cluster_tag: str) -> str | None:
    """Why this module must not change or terminate ``instance`` for ``cluster`` (None: it may)."""
    have = tag_value(instance, cluster_tag)
    name = instance.get("display_name")
    if have is None:
        return (
            f"instance {name!r} ({instance.get('id')}) has no defined tag {cluster_tag}: it was not made for"
            f" cluster {cluster!r}, so it is left alone"
        )
    if have != cluster:
        return (
            f"instance {name!r} ({instance.get('id')}) belongs to cluster {have!r} ({cluster_tag}), not {cluster!r}:"
            " it is left alone"
        )
    return None


def is_capacity_error(status: int | None, code: str | None, message: str | None) -> bool:
    """Whether an OCI error means "no capacity or quota for this shape here": 500 ``InternalError``
    "Out of host capacity", 400 ``LimitExceeded`` and their kin. These are not retried."""
    text = (message or "").lower()
    if code in CAPACITY_CODES:
        return True
    return bool(status in (400, 500) and ("out of host capacity" in text or "out of capacity" in text))


def launch_input_errors(params: dict[str, Any]) -> list[str]:
    """Every reason not to launch, found before any call: missing keys, a bad user_data."""
    errors = [
        f"{key} is required to launch {params.get('display_name')!r} (state=present, no such instance yet)"
        for key in ("availability_domain", "shape", "subnet_id", "image_id")
        if not params.get(key)
    ]
    if not params.get("display_name"):
        errors.insert(0, "display_name is required to launch an instance")
    label = params.get("hostname_label")
    if label is not None and not (label.isascii() and label.replace("-", "").isalnum() and len(label) <= 63):
        errors.append(f"hostname_label {label!r} must be letters, digits and hyphens, at most 63 characters")
    return errors


def merged_tags(params: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The defined tags a launch carries: the user's, plus the cluster tag and the Slurm role tag."""
    tags: dict[str, dict[str, str]] = {ns: dict(v or {}) for ns, v in (params.get("defined_tags") or {}).items()}
    ns, key = split_tag(params["cluster_tag"], "cluster_tag")
    tags.setdefault(ns, {})[key] = params["cluster"]
    roles = params.get("slurm_roles")
    if roles:
        rns, rkey = split_tag(params.get("slurm_role_tag") or DEFAULT_ROLE_TAG, "slurm_role_tag")
        tags.setdefault(rns, {})[rkey] = ",".join(roles)
    return tags


def launch_metadata(params: dict[str, Any]) -> dict[str, str]:
    """Instance metadata: the SSH keys and cloud-init ``user_data`` (base64, as OCI wants it)."""
    meta = {k: str(v) for k, v in (params.get("metadata") or {}).items()}
    if params.get("ssh_authorized_keys"):
        meta["ssh_authorized_keys"] = params["ssh_authorized_keys"]
    if params.get("user_data") is not None:
        meta["user_data"] = base64.b64encode(params["user_data"].encode()).decode()
    return meta


def instance_view(inst: dict[str, Any] | None, vnic: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the modules return about an instance (empty when there is none)."""
    if not inst:
        return {}
    meta = dict(inst.get("metadata") or {})
    if "user_data" in meta:
        meta["user_data"] = "(set)"
    return {
        "id": inst.get("id"),
        "display_name": inst.get("display_name"),
        "lifecycle_state": inst.get("lifecycle_state"),
        "shape": inst.get("shape"),
        "availability_domain": inst.get("availability_domain"),
        "fault_domain": inst.get("fault_domain"),
        "compartment_id": inst.get("compartment_id"),
        "instance_configuration_id": inst.get("instance_configuration_id"),
        "time_created": str(inst.get("time_created")) if inst.get("time_created") else None,
        "defined_tags": inst.get("defined_tags") or {},
        "freeform_tags": inst.get("freeform_tags") or {},
        "metadata_keys": sorted(meta),
        "private_ip": (vnic or {}).get("private_ip"),
        "hostname_label": (vnic or {}).get("hostname_label"),
    }


def pick_live(instances: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The one instance of this display name that is not terminating or terminated; more than one
    is an error (which one a change would mean is a guess)."""
    live = [i for i in instances if i.get("display_name") == name and i.get("lifecycle_state") not in GONE_STATES]
    if len(live) > 1:
        ids = ", ".join(f"{i['id']} ({i.get('lifecycle_state')})" for i in live)
        raise ComputeError(f"{len(live)} instances are named {name!r}: {ids}; name one by instance_id")
    return live[0] if live else None


# -- SDK side ------------------------------------------------------------------------------------
to_dict = _oci_auth.to_dict
list_all = _oci_auth.list_all


def launch_retry_strategy() -> Any:
    """The SDK's backoff for throttling, conflicts and server errors, but not for capacity errors
    (500 ``InternalError`` "Out of host capacity"), which must fail at once and name the shape."""
    oci = _oci_auth.oci
    return (
        oci.retry.RetryStrategyBuilder(max_attempts=8, retry_max_wait_between_calls_seconds=30)
        .add_max_attempts(8)
        .add_total_elapsed_time(600)
        .add_service_error_check(
            service_error_retry_config={
                -1: [],
                409: ["IncorrectState", "LockConflict"],
                429: [],
                500: ["InternalServerError"],
                502: [],
                503: [],
                504: [],
            },
            service_error_retry_on_any_5xx=False,
        )
        .get_retry_strategy()
    )


def clients(params: dict[str, Any]) -> dict[str, Any]:
    """Compute, compute management, virtual network and work request clients for one region."""
    oci = _oci_auth.oci
    auth = _oci_auth.resolve_auth(params)
    region, endpoint = params.get("region"), params.get("service_endpoint")
    return {
        name: _oci_auth.make_client(cls, auth, region=region, endpoint=endpoint)
        for name, cls in (
            ("compute", oci.core.ComputeClient),
            ("management", oci.core.ComputeManagementClient),
            ("network", oci.core.VirtualNetworkClient),
            ("work_requests", oci.work_requests.WorkRequestClient),
        )
    }


def agent_clients(cfg: dict[str, Any], compute_retry: Any = None) -> dict[str, Any] | None:
    """Compute, virtual network and compute management clients for an agent's settings (``oci``: auth,
    region, service_endpoint; ``oci_attempts``), retried on throttling and server errors; None without the
    SDK. ``compute_retry``: the compute client's own strategy (the power agent's never retries a capacity
    error)."""
    if not _oci_auth.HAS_OCI:
        return None
    oci = _oci_auth.oci
    o = cfg.get("oci") or {}
    auth = _oci_auth.resolve_auth(o)
    retry = _oci_auth.retry_strategy(max_attempts=int(cfg.get("oci_attempts") or 3), max_wait_s=5)
    region, endpoint = o.get("region"), o.get("service_endpoint")

    def make(cls: Any, strategy: Any = retry) -> Any:
        return _oci_auth.make_client(cls, auth, region=region, endpoint=endpoint, retry=strategy)

    return {
        "compute": make(oci.core.ComputeClient, compute_retry or retry),
        "network": make(oci.core.VirtualNetworkClient),
        "compute_management": make(oci.core.ComputeManagementClient),
    }


def find_by_name(compute: Any, compartment_id: str, name: str) -> dict[str, Any] | None:
    return pick_live(list_all(compute.list_instances, compartment_id, display_name=name), name)


def get_instance(compute: Any, instance_id: str) -> dict[str, Any] | None:
    oci = _oci_auth.oci
    try:
        return to_dict(compute.get_instance(instance_id).data)
    except oci.exceptions.ServiceError as exc:
        if exc.status == 404:
            return None
        raise


def primary_vnic(compute: Any, network: Any, inst: dict[str, Any]) -> dict[str, Any] | None:
    atts = list_all(compute.list_vnic_attachments, inst["compartment_id"], instance_id=inst["id"])
    atts = [a for a in atts if a.get("lifecycle_state") == "ATTACHED"]
    for att in sorted(atts, key=lambda a: str(a.get("time_created"))):
        vnic = to_dict(network.get_vnic(att["vnic_id"]).data)
        if vnic.get("is_primary"):
            return vnic
    return None


def wait_state(compute: Any, instance_id: str, wanted: tuple[str, ...], timeout: float, poll: float) -> dict[str, Any]:
    """Poll GetInstance until its state is one of ``wanted`` or it is TERMINATED; raise on timeout."""
    end = time.monotonic() + timeout
    while True:
        inst = get_instance(compute, instance_id)
        state = (inst or {}).get("lifecycle_state", "TERMINATED")
        if inst is None or state in wanted or state == "TERMINATED":
            return inst or {"id": instance_id, "lifecycle_state": "TERMINATED"}
        if time.monotonic() >= end:
            raise ComputeError(
                f"instance {instance_id} is still {state} after {timeout:g} s (wait_timeout); it is left as it is"
                " and a rerun adopts it",
                instance=instance_view(inst),
            )
        time.sleep(poll)


def work_request_errors(work_requests: Any, work_request_id: str | None) -> list[str]:
    if not work_request_id:
        return []
    try:
        errs = list_all(work_requests.list_work_request_errors, work_request_id)
    except Exception:  # the errors are a courtesy; the failure is reported either way
        return []
    return [e.get("message") for e in errs if e.get("message")]


def wait_for_ssh(host: str, port: int, timeout: float, poll: float) -> float:
    """Seconds until ``host:port`` accepts a TCP connection; ComputeError on timeout."""
    start = time.monotonic()
    while True:
        try:
            with socket.create_connection((host, port), timeout=min(5.0, max(poll, 0.5))):
                return time.monotonic() - start
        except OSError as exc:
            if time.monotonic() - start >= timeout:
                raise ComputeError(f"{host}:{port} did not accept SSH within {timeout:g} s: {exc}") from exc
            time.sleep(poll)
