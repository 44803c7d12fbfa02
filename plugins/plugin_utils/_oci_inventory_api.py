# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``oci_gpu.cluster.oci`` inventory's API side: the calls it makes (``SdkApi``, list calls only,
every page, slim JSON-serialisable dicts), and its errors."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any


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


# The fields kept of each other kind of OCI record, by kind: slim dicts, no SDK object past this file.
_SLIM_FIELDS: dict[str, tuple[str, ...]] = {
    kind: tuple(fields.split())
    for kind, fields in {
        "attachment": "instance_id vnic_id subnet_id lifecycle_state nic_index time_created",
        "private_ip": "id vnic_id ip_address hostname_label is_primary subnet_id",
        "subnet": "id compartment_id display_name cidr_block subnet_domain_name prohibit_public_ip_on_vnic vcn_id",
        "pool": "id display_name lifecycle_state instance_configuration_id size",
        "compute_host": "id instance_id hpc_island_id network_block_id local_block_id gpu_memory_fabric_id"
        " health lifecycle_state",
    }.items()
}


def slim(kind: str, record: Any) -> dict[str, Any]:
    """The fields of ``_SLIM_FIELDS[kind]`` of an SDK model or a raw JSON dict."""
    return {k: _g(record, k) for k in _SLIM_FIELDS[kind]}


class CallFailed(Exception):
    def __init__(self, status: int | None, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# ---------------------------------------------------------------------------------------------
# The SDK-backed Api (the only part that talks to OCI)
# ---------------------------------------------------------------------------------------------
class SdkApi:
    """``Api`` over the unmodified ``oci`` SDK: one client set per region, all pages, slim dicts."""

    def __init__(
        self, auth: dict[str, Any], endpoints: dict[str, str] | None = None, page_limit: int = 1000, retry: Any = None
    ) -> None:
        from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth

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
        return [slim("attachment", a) for a in self._raw_all("compute", region, "/vnicAttachments", query)]

    def list_private_ips(self, region: str, subnet: str) -> list[dict[str, Any]]:
        return [slim("private_ip", p) for p in self._raw_all("network", region, "/privateIps", {"subnetId": subnet})]

    def get_subnet(self, region: str, subnet: str) -> dict[str, Any]:
        return slim("subnet", self._call(self._client("network", region).get_subnet, subnet).data)

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
        return [slim("compute_host", h) for h in self._raw_all("compute", region, "/computeHosts", query)]

    def list_cluster_networks(self, region: str, compartment: str) -> list[dict[str, Any]]:
        return [
            {
                "id": c["id"],
                "display_name": c.get("displayName"),
                "lifecycle_state": c.get("lifecycleState"),
                "instance_pools": [slim("pool", p) for p in (c.get("instancePools") or [])],
            }
            for c in self._raw_all("management", region, "/clusterNetworks", {"compartmentId": compartment})
        ]

    def list_subnets(self, region: str, compartment: str, vcn: str | None) -> list[dict[str, Any]]:
        query = {"compartmentId": compartment, "vcnId": vcn}
        return [slim("subnet", x) for x in self._raw_all("network", region, "/subnets", query)]

    def list_instance_pools(self, region: str, compartment: str) -> list[dict[str, Any]]:
        return [
            slim("pool", p)
            for p in self._raw_all("management", region, "/instancePools", {"compartmentId": compartment})
        ]

    def list_instance_pool_instances(self, region: str, compartment: str, pool: str) -> list[str]:
        path = f"/instancePools/{pool}/instances"
        return [i["id"] for i in self._raw_all("management", region, path, {"compartmentId": compartment})]
