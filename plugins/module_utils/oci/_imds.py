# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""A node's place in OCI's RDMA fabric from its instance metadata (IMDS ``/opc/v2/host/``).

OCI's IMDS v2 answers only requests with ``Authorization: Bearer Oracle``; ``/opc/v2/host/`` gives
``rackId`` and, on RDMA bare-metal GPU shapes, ``rdmaTopologyData`` with ``customerHPCIslandId``,
``customerNetworkBlock``, ``customerLocalBlock`` and (GB200/GB300) ``customerGpuMemoryFabric``.
``node_topology`` reads it with a timeout and checks it against what the inventory says (the
Compute API's ``ListComputeHosts``, as hostvars): a node the two place differently is refused by
name, a node off OCI gets a message that says so and what to do.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from http.client import HTTPException
from typing import Any

HOST_URL = "http://169.254.169.254/opc/v2/host/"
HEADERS = {"Authorization": "Bearer Oracle"}
# model key -> (where IMDS has it, the inventory hostvar that carries it)
FIELDS = {
    "hpc_island_id": ("rdmaTopologyData.customerHPCIslandId", "oci_hpc_island_id"),
    "network_block_id": ("rdmaTopologyData.customerNetworkBlock", "oci_network_block_id"),
    "local_block_id": ("rdmaTopologyData.customerLocalBlock", "oci_local_block_id"),
    "gpu_memory_fabric_id": ("rdmaTopologyData.customerGpuMemoryFabric", "oci_gpu_memory_fabric_id"),
    "rack_id": ("rackId", "oci_rack_id"),
}


class ImdsError(Exception):
    """IMDS could not be read or gave something else than a host document."""


def _get(doc: Mapping[str, Any], dotted: str) -> str:
    cur: Any = doc
    for part in dotted.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    return str(cur) if isinstance(cur, (str, int)) and str(cur) else ""


def ids_from_host(doc: Any) -> dict[str, str]:
    """The topology ids of an IMDS host document (keys of FIELDS that it has)."""
    if not isinstance(doc, Mapping):
        raise ImdsError(f"the answer is not a JSON object but {type(doc).__name__}")
    return {key: value for key, (path, _var) in FIELDS.items() for value in [_get(doc, path)] if value}


def read_host(url: str, timeout: float, opener: Callable[..., Any]) -> dict[str, str]:
    """GET ``url`` with the IMDS header; ``opener`` is ``ansible.module_utils.urls.open_url``."""
    try:
        response = opener(url, headers=HEADERS, timeout=timeout, method="GET", follow_redirects="none")
        body = response.read()
    except (OSError, ValueError, HTTPException) as exc:  # URLError, HTTPError and timeouts are OSErrors
        reason = getattr(exc, "reason", None) or exc
        raise ImdsError(f"{type(exc).__name__}: {reason}") from None
    try:
        return ids_from_host(json.loads(body))
    except ValueError as exc:
        raise ImdsError(f"the answer is not JSON ({exc})") from None


def node_topology(
    node: str,
    expected: Mapping[str, Any] | None,
    url: str,
    timeout: float,
    required: bool,
    opener: Callable[..., Any],
) -> dict[str, Any]:
    """``{"topology": ids, "source": "imds" | "inventory" | "imds+inventory" | "none", "imds_error": text}``,
    or ``{"failed": message}`` when IMDS and the inventory disagree, or when IMDS cannot be read, the
    inventory gives nothing and ``required``."""
    inventory = {k: str(v) for k, v in (expected or {}).items() if k in FIELDS and v not in (None, "")}
    try:
        found = read_host(url, timeout, opener)
    except ImdsError as exc:
        error = f"cannot read OCI's instance metadata at {url} within {timeout:g} s ({exc})"
        if inventory:
            return {"topology": inventory, "source": "inventory", "imds_error": error}
        if required:
            return {
                "failed": f"node {node}: {error}: this is not an OCI instance, or IMDS is out of its reach. "
                "Give its place in the inventory (hostvars oci_hpc_island_id, oci_network_block_id, "
                "oci_local_block_id, as the oci_gpu.cluster.oci inventory sets them) or set "
                "slurm_topology: none"
            }
        return {"topology": {}, "source": "none", "imds_error": error}
    clashes = [
        f"{FIELDS[k][1]} is {inventory[k]} in the inventory, but IMDS ({FIELDS[k][0]}) says {found[k]}"
        for k in sorted(inventory)
        if k in found and found[k] != inventory[k]
    ]
    if clashes:
        return {
            "failed": f"node {node}: the inventory and the node's IMDS place it differently in the RDMA fabric: "
            + "; ".join(clashes)
            + ". Refresh the inventory cache, or fix the hostvars that set these ids"
        }
    merged = {**inventory, **found}
    source = "imds+inventory" if inventory and found else ("imds" if found else ("inventory" if inventory else "none"))
    return {"topology": merged, "source": source, "imds_error": ""}
