# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The capacity playbook's plan: which nodes to launch and which to remove, checked once per run.

Pure (no Ansible, no SDK). ``plan()`` takes the request and what the inventory knows and returns
the names to launch, the instances to remove (name and OCID) and every reason to refuse.
"""

from __future__ import annotations

import re
from typing import Any

HOSTNAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


def names_from_pattern(pattern: str, count: int, taken: set[str], first: int = 1) -> list[str]:
    """``count`` names from ``pattern`` (with ``{n}``, e.g. ``gpu{n}`` or ``hpc-gpu-{n:03d}``), the
    lowest indices from ``first`` whose names are not ``taken``."""
    out: list[str] = []
    n = first
    while len(out) < count:
        name = pattern.format(n=n)
        if name not in taken:
            out.append(name)
        n += 1
        if n > first + count + len(taken) + 1:  # cannot happen with {n} in the pattern
            break
    return out


def plan(request: dict[str, Any], inventory: dict[str, Any]) -> dict[str, Any]:
    """``request``: ``add`` (a count, as a number or digits as ``-e capacity_add=2`` gives them, or
    names: a list or one name), ``pattern``, ``remove`` (names), ``max_add``, ``max_remove``,
    ``scope`` (``new`` or ``all``, checked when given). ``inventory``: ``hosts`` (every inventory
    host name), ``compute`` (slurm_compute), ``protected`` (controllers, dbd and login hosts),
    ``oci_ids`` (host -> instance OCID).

    Returns ``{"add": [...], "remove": [{"name", "instance_id"}], "errors": [...]}``."""
    errors: list[str] = []
    hosts = set(inventory.get("hosts") or [])
    compute = set(inventory.get("compute") or [])
    protected = set(inventory.get("protected") or [])
    oci_ids = dict(inventory.get("oci_ids") or {})
    pattern = str(request.get("pattern") or "")
    add_req = request.get("add")
    if isinstance(add_req, str):
        add_req = int(add_req) if add_req.strip().isdigit() else [add_req]
    scope = request.get("scope")
    if scope is not None and scope not in ("new", "all"):
        errors.append(f"capacity_slurm_scope must be new or all, got {scope!r}")
    add: list[str] = []
    if isinstance(add_req, bool) or not isinstance(add_req, (int, list, type(None))):
        errors.append(f"capacity_add must be a count or a list of host names, got {add_req!r}")
    elif isinstance(add_req, int):
        if add_req < 0:
            errors.append(f"capacity_add {add_req} must be 0 or more")
        elif add_req:
            if "{n" not in pattern:
                errors.append(f"capacity_name_pattern {pattern!r} must contain {{n}} (e.g. 'gpu{{n}}')")
            else:
                try:
                    add = names_from_pattern(pattern, add_req, hosts)
                except (ValueError, KeyError, IndexError) as exc:
                    errors.append(f"capacity_name_pattern {pattern!r} is not a name pattern: {exc}")
    else:
        add = [str(n) for n in add_req or []]
    remove = [str(n) for n in request.get("remove") or []]
    for name in add:
        if not HOSTNAME_RE.match(name):
            errors.append(f"capacity_add: {name!r} is not a host name (lower-case letters, digits, '-')")
        elif name in hosts and name not in compute:
            errors.append(f"capacity_add: {name} is already a host of this inventory, and not a compute node")
    for name in sorted(set(add) & set(remove)):
        errors.append(f"{name} is both in capacity_add and capacity_remove")
    out_remove = []
    for name in remove:
        if name in protected:
            errors.append(f"capacity_remove: {name} is a controller, dbd or login host; only compute nodes are removed")
        elif name not in compute:
            errors.append(f"capacity_remove: {name} is not a compute node of this inventory")
        elif not oci_ids.get(name):
            errors.append(f"capacity_remove: {name} has no OCI instance (oci_id): it was not found through OCI")
        else:
            out_remove.append({"name": name, "instance_id": oci_ids[name]})
    for key, items, limit in (("add", add, request.get("max_add")), ("remove", remove, request.get("max_remove"))):
        if limit is not None and len(items) > int(limit):
            errors.append(
                f"capacity_{key} names {len(items)} nodes, more than capacity_max_{key} ({int(limit)}) allows at once"
            )
    dupes = sorted({n for n in add if add.count(n) > 1} | {n for n in remove if remove.count(n) > 1})
    if dupes:
        errors.append(f"named twice: {', '.join(dupes)}")
    return {"add": add, "remove": out_remove, "errors": errors}
