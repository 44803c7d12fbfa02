# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Node records for the Slurm configuration model: from what a node reports, and from the live config.

Public API
----------
``parse_slurmd_c(text) -> dict``
    ``slurmd -C`` output -> ``{"cpus", "boards", "sockets", "cores_per_socket",
    "threads_per_core", "real_memory"}`` (sockets = Boards x SocketsPerBoard).
``node_record(name, slurmd_c, gpu_devices, shape=None, gpu_type=None, features=None,
              weight=None, memory_reserve_mb=0) -> dict``
    One record for ``_slurm_config``: the node's real CPU layout and memory, its GPU devices,
    the gres type from the OCI shape table (or ``gpu_type``).
``gpu_check(name, shape, gpu_devices, expected=None) -> str | None``
    A message naming the node when the GPUs it shows differ from what its shape promises.
``records_from_conf(text) -> dict``
    ``{name: record}`` read back from a rendered ``slurm.conf`` (our own output format).
``merge_records(compute_hosts, fresh, live, remove=(), keep_live=False) -> dict``
    The node list to render: never smaller than the live one because part of the inventory was
    unreachable or outside the run. See its docstring.
``merge_nodes(compute_hosts, fresh, old_conf_text, remove=()) -> dict``
    The same against one live slurm.conf text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import parse_slurm_conf
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import expand

__all__ = ["gpu_check", "merge_nodes", "merge_records", "node_record", "parse_slurmd_c", "records_from_conf"]

_PAIR_RE = re.compile(r"(\w+)=(\S+)")
_NVIDIA_DEV_RE = re.compile(r"^/dev/nvidia(\d+)$")


def _pairs(text: str) -> dict[str, str]:
    return {k.lower(): v for k, v in _PAIR_RE.findall(text or "")}


def parse_slurmd_c(text: str) -> dict[str, int]:
    """Read ``slurmd -C``; ValueError quotes the text when a field is missing."""
    pairs = _pairs(text.splitlines()[0] if text else "")
    try:
        boards = int(pairs.get("boards", "1"))
        out = {
            "cpus": int(pairs["cpus"]),
            "boards": boards,
            "sockets": boards * int(pairs["socketsperboard"]),
            "cores_per_socket": int(pairs["corespersocket"]),
            "threads_per_core": int(pairs["threadspercore"]),
            "real_memory": int(pairs["realmemory"]),
        }
    except (KeyError, ValueError):
        raise ValueError(f"cannot read the node layout from 'slurmd -C' output {text!r}") from None
    return out


def _gpu_index(path: str) -> int | None:
    match = _NVIDIA_DEV_RE.match(path)
    return int(match.group(1)) if match else None


def gpu_devices_sorted(paths: Iterable[str]) -> list[str]:
    """``/dev/nvidiaN`` paths only (not nvidiactl, nvidia-uvm...), in numeric order."""
    found = [(idx, p) for p in paths for idx in [_gpu_index(p)] if idx is not None]
    return [path for _idx, path in sorted(found)]


def gpu_check(
    name: str,
    shape: str | None,
    gpu_devices: Iterable[str],
    expected: int | None = None,
    count_key: str = "slurm_gpu_count",
) -> str | None:
    """Compare the GPUs a node shows with what its shape promises (or ``expected`` when given: the
    variable ``count_key`` set it)."""
    devices = gpu_devices_sorted(gpu_devices)
    source = count_key
    if expected is None:
        expected = _shapes.gpu_count(shape)
        if expected is None:  # no shape, or one the table does not know: nothing promised
            return None
        source = f"its shape {shape}"
    if len(devices) != expected:
        shown = ", ".join(devices) if devices else "none"
        return f"node {name}: {source} promises {expected} GPU(s) but the node shows {len(devices)} ({shown})"
    return None


def node_record(
    name: str,
    slurmd_c: Any,
    gpu_devices: Iterable[str] = (),
    shape: str | None = None,
    gpu_type: str | None = None,
    features: Iterable[str] | None = None,
    weight: int | None = None,
    memory_reserve_mb: int = 0,
) -> dict[str, Any]:
    layout = parse_slurmd_c(slurmd_c) if isinstance(slurmd_c, str) else dict(slurmd_c)
    record: dict[str, Any] = {
        "name": name,
        "cpus": layout["cpus"],
        "sockets": layout["sockets"],
        "cores_per_socket": layout["cores_per_socket"],
        "threads_per_core": layout["threads_per_core"],
        "real_memory": max(1, int(layout["real_memory"]) - int(memory_reserve_mb or 0)),
    }
    devices = gpu_devices_sorted(gpu_devices)
    if devices:
        record["gpu_type"] = gpu_type or _shapes.gres_type(shape) or "gpu"
        record["gpu_count"] = len(devices)
        record["gpu_files"] = devices
    feats = list(features or [])
    if shape:
        feats.append(shape.lower().replace(".", "_"))
    if feats:
        record["features"] = sorted(set(feats))
    if weight is not None:
        record["weight"] = int(weight)
    return record


def records_from_conf(text: str | None) -> dict[str, dict[str, Any]]:
    """Node records read back from slurm.conf lines, keyed by node name."""
    out: dict[str, dict[str, Any]] = {}
    for expr, definition in parse_slurm_conf(text)["nodes"].items():
        if expr.upper() == "DEFAULT":
            continue
        pairs = _pairs(definition)
        base: dict[str, Any] = {}
        for key, field in (
            ("cpus", "cpus"),
            ("sockets", "sockets"),
            ("socketsperboard", "sockets"),
            ("corespersocket", "cores_per_socket"),
            ("threadspercore", "threads_per_core"),
            ("realmemory", "real_memory"),
            ("weight", "weight"),
        ):
            if key in pairs:
                base[field] = int(pairs[key])
        if "features" in pairs or "feature" in pairs:
            base["features"] = sorted((pairs.get("features") or pairs.get("feature", "")).split(","))
        gres = pairs.get("gres", "")
        match = re.match(r"gpu:(?:([^:,]+):)?(\d+)", gres)
        if match:
            base["gpu_type"] = match.group(1) or "gpu"
            base["gpu_count"] = int(match.group(2))
        if "nodeaddr" in pairs:
            base["address"] = pairs["nodeaddr"]
        if pairs.get("state", "").upper() == "CLOUD":  # an elastic node stays one in a run that keeps its line
            base["options"] = {"State": "CLOUD"}
        for name in expand(expr):
            out[name] = dict(base, name=name)
    return out


def merge_records(
    compute_hosts: Iterable[str],
    fresh: Mapping[str, Mapping[str, Any]],
    live: Mapping[str, Mapping[str, Any]],
    remove: Iterable[str] = (),
    keep_live: bool = False,
) -> dict[str, Any]:
    """Decide the node list to render from fresh records and the live node records.

    * A compute host with a fresh record gets that record, unless ``keep_live`` (a run that does
      not hold the whole cluster) and the live configuration already defines it: then its live
      line stays as it is.
    * A compute host without one (unreachable, failed, or outside ``--limit``) keeps its live
      definition; if it has none yet it is left out (nothing shrinks: it never was there) and
      reported in ``missing``.
    * A live node that is no longer a compute host stays, unless it is listed in ``remove`` (the
      deliberate path: drain it first). Removing a node that holds a job ends that job NODE_FAIL,
      so nothing is removed by omission.

    Returns ``{"nodes": [records sorted by name], "kept": [...], "missing": [...], "added": [...],
    "removed": [...], "orphans": [...]}``; ``orphans`` are live nodes outside the compute group
    that were kept, ``added`` fresh nodes the live configuration lacks.
    """
    gone = set(remove)
    nodes: dict[str, dict[str, Any]] = {}
    kept: list[str] = []
    missing: list[str] = []
    added: list[str] = []
    for host in compute_hosts:
        if host in gone:
            continue
        if host in live and (keep_live or not fresh.get(host)):
            nodes[host] = dict(live[host])
            if not fresh.get(host):
                kept.append(host)
        elif fresh.get(host):
            nodes[host] = dict(fresh[host])
            if host not in live:
                added.append(host)
        else:
            missing.append(host)
    orphans = sorted(n for n in live if n not in nodes and n not in gone)
    for name in orphans:
        nodes[name] = dict(live[name])
    return {
        "nodes": [nodes[n] for n in sorted(nodes)],
        "kept": sorted(kept),
        "missing": sorted(missing),
        "added": sorted(added),
        "removed": sorted(n for n in gone if n in live),
        "orphans": orphans,
    }


def merge_nodes(
    compute_hosts: Iterable[str],
    fresh: Mapping[str, Mapping[str, Any]],
    old_conf_text: str | None,
    remove: Iterable[str] = (),
) -> dict[str, Any]:
    """:func:`merge_records` against the nodes of one live slurm.conf text (empty on a first install);
    the result without ``added``."""
    out = merge_records(compute_hosts, fresh, records_from_conf(old_conf_text), remove)
    del out["added"]
    return out
