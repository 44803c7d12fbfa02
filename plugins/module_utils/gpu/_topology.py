# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""One model of OCI's RDMA fabric for Slurm (topology/tree, topology/block) and OKE (Kueue levels).

OCI places each bare-metal GPU host in an HPC island, a network block within it and a local block
within that (the Compute API's ``ComputeHost``: ``hpcIslandId``, ``networkBlockId``,
``localBlockId``, and ``gpuMemoryFabricId`` on GB200/GB300; IMDS ``/opc/v2/host/``:
``rdmaTopologyData.customerHPCIslandId`` / ``customerNetworkBlock`` / ``customerLocalBlock`` /
``customerGpuMemoryFabric``, and ``rackId``). Which level is the block a job should stay inside
depends on the GPU family (the practice of Oracle's HPC stack and OKE's RDMA node labels, as issue
16 records it):

- H100, H200, B200, B300, MI300X, MI355X, L40S: the local block (the hosts under one leaf switch),
  under the network block;
- A100 (BM.GPU4.8, BM.GPU.A100-v2.8, the B4 shapes): the rack, under the network block;
- GB200, GB300 (NVL72): the GPU memory fabric (one NVLink domain), under the local block.

From host records (name plus any of those ids; missing ids are allowed) this builds

- the tree: root > island > network block > the family's levels > nodes; a missing level gets a
  switch of its parent's (``<parent>_none``), levels below a host's last id are left out (a CPU
  host with no ids sits under ``oci_fabric_none``), so every node is under exactly one leaf
  switch, and a switch holds either switches or nodes;
- the blocks: one per value of each node's block level; a node without one is in no block;
- block sizes: the smallest block is the base, then doublings while a job of that size could
  still fit (each a power-of-two multiple of the base, none above the block nodes' count).

Names are Slurm-legal (letters, digits and ``_``; at most 64 characters, which 24.11 requires),
``<level>_<last 12 characters of the id>`` as the inventory's groups are, or a hash of the id
where two ids of one level would share that name; they depend on the ids only, never on the order
of the hosts. Pure Python (no Ansible), so the filter, the roles and the tests share it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import compress

# Every level, widest first, with the prefix of its names (the inventory's group prefixes).
LEVELS = ("island", "network_block", "local_block", "rack", "memory_fabric")
PREFIX = {
    "island": "hpc_island",
    "network_block": "network_block",
    "local_block": "local_block",
    "rack": "rack",
    "memory_fabric": "gpu_memory_fabric",
}
ROOT = "oci_fabric"
MAX_NAME = 64
# The first line of every topology file the role writes (a file without it is the site's own).
HEADER = "# Managed by Ansible (oci_gpu.cluster.slurm): OCI RDMA topology"

# The levels below the network block, widest first, per GPU model; the last one is the block.
_LOCAL_BLOCK = ("local_block",)
_RACK = ("rack",)
_MEMORY_FABRIC = ("local_block", "memory_fabric")
FAMILY_LEVELS = {
    "h100": _LOCAL_BLOCK,
    "h200": _LOCAL_BLOCK,
    "b200": _LOCAL_BLOCK,
    "b300": _LOCAL_BLOCK,
    "mi300x": _LOCAL_BLOCK,
    "mi355x": _LOCAL_BLOCK,
    "l40s": _LOCAL_BLOCK,
    "a100": _RACK,
    "gb200": _MEMORY_FABRIC,
    "gb300": _MEMORY_FABRIC,
}
DEFAULT_LEVELS = _LOCAL_BLOCK

# The host record keys each level is read from (the inventory's hostvars, without the oci_ prefix).
KEYS = {
    "island": ("hpc_island_id", "oci_hpc_island_id", "island"),
    "network_block": ("network_block_id", "oci_network_block_id", "network_block"),
    "local_block": ("local_block_id", "oci_local_block_id", "local_block"),
    "rack": ("rack_id", "oci_rack_id", "rack"),
    "memory_fabric": ("gpu_memory_fabric_id", "oci_gpu_memory_fabric_id", "memory_fabric"),
}


class TopologyError(ValueError):
    """A host list the model cannot use; the message names the host."""


def family_levels(shape: str | None, gpu_model: str | None = None) -> tuple[str, ...]:
    """The levels below the network block for a shape (or a GPU model such as ``h100``, the Slurm gres
    type), widest first (the last is its block)."""
    model = _shapes.gres_type(shape) or str(gpu_model or "").lower()
    return FAMILY_LEVELS.get(model, DEFAULT_LEVELS)


def short_id(value: str) -> str:
    """The unique tail of an OCID (or any id), as the inventory's group names use it."""
    tail = str(value).rsplit(".", 1)[-1][-12:]
    return re.sub(r"[^A-Za-z0-9_]", "_", tail)


def _hash(value: str, length: int = 12) -> str:
    return hashlib.sha256(str(value).encode()).hexdigest()[:length]


def _legal(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if len(name) > MAX_NAME:
        name = name[: MAX_NAME - 17] + "_" + _hash(name, 16)
    return name


def level_names(level: str, ids: Iterable[str]) -> dict[str, str]:
    """Names for the ids of one level: ``<prefix>_<short id>``, or ``<prefix>_<hash>`` for ids whose
    short form another id of the level shares."""
    ids = sorted(set(ids))
    by_short: dict[str, list[str]] = {}
    for i in ids:
        by_short.setdefault(short_id(i), []).append(i)
    out = {}
    for short, group in by_short.items():
        for i in group:
            out[i] = _legal(f"{PREFIX[level]}_{short if len(group) == 1 else _hash(i)}")
    return out


def _id(host: Mapping[str, Any], level: str) -> str | None:
    for key in KEYS[level]:
        value = host.get(key)
        if value not in (None, ""):
            return str(value)
    return None


def _fill_ancestors(records: list[tuple[str, tuple[str, ...], dict[str, str | None]]]) -> None:
    """Give every host the ancestors the other hosts of its blocks report (a host whose record lacks
    its network block but shares a local block with hosts that have it), so that each switch has one
    parent; two hosts placing one id under different parents are refused, naming both."""
    for depth in range(len(LEVELS), 0, -1):
        groups: dict[tuple[str, str], list[tuple[str, tuple[str, ...], dict[str, str | None]]]] = {}
        for record in records:
            _name, path_levels, ids = record
            if depth < len(path_levels) and ids[path_levels[depth]]:
                groups.setdefault((path_levels[depth], ids[path_levels[depth]] or ""), []).append(record)
        for (level, value), members in sorted(groups.items()):
            for above in members[0][1][:depth]:
                known = sorted({(ids[above], name) for name, _p, ids in members if ids[above]})
                values = {v for v, _n in known}
                if len(values) > 1:
                    (a, host_a), (b, host_b) = known[0], next(k for k in known if k[0] != known[0][0])
                    raise TopologyError(
                        f"topology: {level.replace('_', ' ')} {value} is under two {above.replace('_', ' ')}s: "
                        f"{a} (host {host_a}) and {b} (host {host_b})"
                    )
                if values:
                    for _n, _p, ids in members:
                        ids[above] = known[0][0]


def build(hosts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The tree, the blocks and the block sizes of ``hosts`` (dicts with ``name``, optional
    ``shape`` and the ids of KEYS). See the module's docstring."""
    records = []
    seen: set[str] = set()
    for host in hosts:
        name = host.get("name")
        if not isinstance(name, str) or not name or not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", name):
            raise TopologyError(f"topology: invalid host name {name!r}")
        if name in seen:
            raise TopologyError(f"topology: host {name} is listed twice")
        seen.add(name)
        below = family_levels(host.get("shape") or host.get("oci_shape"), host.get("gpu_model"))
        path_levels = ("island", "network_block", *below)
        records.append((name, path_levels, {lv: _id(host, lv) for lv in LEVELS}))
    _fill_ancestors(records)
    names = {lv: level_names(lv, (ids[lv] for _n, _p, ids in records if ids[lv])) for lv in LEVELS}

    children: dict[str, set[str]] = {}
    leaves: dict[str, list[str]] = {}
    blocks: dict[str, list[str]] = {}
    block_key: dict[str, tuple[str, ...]] = {}
    placement: dict[str, dict[str, str]] = {}
    for name, path_levels, ids in records:
        parent = ROOT
        where: dict[str, str] = {}
        # levels below the last id the host has are left out (a CPU host with no ids sits in one
        # leaf under the root); a missing level above it gets its parent's _none switch
        known = [i for i, lv in enumerate(path_levels) if ids[lv]]
        for lv in path_levels[: (known[-1] + 1) if known else 1]:
            switch = names[lv][ids[lv]] if ids[lv] else _legal(f"{parent}_none")
            children.setdefault(parent, set()).add(switch)
            if ids[lv]:
                where[PREFIX[lv]] = switch
            parent = switch
        leaves.setdefault(parent, []).append(name)
        placement[name] = where
        block_level = path_levels[-1]
        if ids[block_level]:
            block = names[block_level][ids[block_level]]
            blocks.setdefault(block, []).append(name)
            # adjacent blocks share an island and a network block: block aggregation follows the order
            block_key[block] = tuple(where.get(PREFIX[lv], "") for lv in path_levels)
    # A switch holds switches or nodes, not both: nodes missing a level that other nodes under the
    # same switch have (a GB200 host without a memory fabric beside an H100 host without a local
    # block) move to a leaf of their own below it.
    for switch in sorted(set(children) & set(leaves)):
        leaf = _legal(f"{switch}_nodes")
        children[switch].add(leaf)
        leaves.setdefault(leaf, []).extend(leaves.pop(switch))
    switches = []
    for switch in sorted(set(children) | set(leaves)):
        if switch in children:
            switches.append({"name": switch, "switches": sorted(children[switch])})
        else:
            switches.append({"name": switch, "nodes": compress(leaves[switch]), "count": len(leaves[switch])})
    ordered = sorted(blocks, key=lambda b: (block_key[b], b))
    block_list = [{"name": b, "nodes": compress(blocks[b]), "count": len(blocks[b])} for b in ordered]
    in_blocks = sum(len(v) for v in blocks.values())
    return {
        "root": ROOT,
        "switches": switches,
        "blocks": block_list,
        "block_sizes": block_sizes([len(v) for v in blocks.values()]),
        "unblocked": sorted(set(seen) - {n for v in blocks.values() for n in v}),
        "block_nodes": in_blocks,
        "placement": placement,
    }


def block_sizes(sizes: Iterable[int]) -> list[int]:
    """``BlockSizes``: the smallest block is the base (no block may be smaller: slurmctld refuses),
    then each doubling up to the nodes in all blocks together."""
    sizes = [s for s in sizes if s > 0]
    if not sizes:
        return []
    base, total = min(sizes), sum(sizes)
    out = [base]
    while out[-1] * 2 <= total:
        out.append(out[-1] * 2)
    return out


def topology_conf(model: Mapping[str, Any], plugin: str) -> str:
    """topology.conf for ``tree`` (every node under a leaf switch, one root) or ``block``."""
    lines = [HEADER]
    if plugin == "tree":
        for sw in model["switches"]:
            if "nodes" in sw:
                lines.append(f"SwitchName={sw['name']} Nodes={sw['nodes']}")
            else:
                lines.append(f"SwitchName={sw['name']} Switches={','.join(sw['switches'])}")
    elif plugin == "block":
        for block in model["blocks"]:
            lines.append(f"BlockName={block['name']} Nodes={block['nodes']}")
        if model["block_sizes"]:
            lines.append("BlockSizes=" + ",".join(str(s) for s in model["block_sizes"]))
    else:
        raise TopologyError(f"topology: no topology.conf for plugin {plugin!r} (tree or block)")
    return "\n".join(lines) + "\n"


def topology_yaml(model: Mapping[str, Any], default: str) -> list[dict[str, Any]]:
    """topology.yaml's content (Slurm 25.05+): a tree and a block topology, ``default`` marked as the
    cluster default (a list of topologies, as the file holds)."""
    tree = {
        "topology": "oci_tree",
        "cluster_default": default == "tree",
        "tree": {
            "switches": [
                {
                    "switch": sw["name"],
                    **({"nodes": sw["nodes"]} if "nodes" in sw else {"children": ",".join(sw["switches"])}),
                }
                for sw in model["switches"]
            ]
        },
    }
    block = {
        "topology": "oci_block",
        "cluster_default": default == "block",
        "block": {
            "block_sizes": list(model["block_sizes"]),
            "blocks": [{"block": b["name"], "nodes": b["nodes"]} for b in model["blocks"]],
        },
    }
    return [tree, block]


# OKE's own RDMA node labels, widest first, and the model's levels they carry.
OKE_LABELS = (
    ("island", "oci.oraclecloud.com/rdma.hpc_island_id"),
    ("network_block", "oci.oraclecloud.com/rdma.network_block_id"),
    ("local_block", "oci.oraclecloud.com/rdma.local_block_id"),
)
HOST_LABEL = "kubernetes.io/hostname"


def kueue_topologies(shapes: Iterable[str], levels: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The Kueue ``Topology`` objects for the GPU shapes of a cluster: one per distinct level list
    (``kueue_levels`` of each shape), each with ``name``, ``levels`` and the ``shapes`` whose
    ResourceFlavor points at it. ``oci-rdma`` is the one down to the local block; a family whose block
    OKE does not label (the A100's rack) gets ``oci-rdma-network-block``. Given ``levels``, one
    ``oci-rdma`` with those levels serves every shape."""
    shapes = sorted({str(s) for s in shapes})
    if levels:
        return [{"name": "oci-rdma", "levels": [str(lv) for lv in levels], "shapes": shapes}]
    by_levels: dict[tuple[str, ...], list[str]] = {}
    for shape in shapes:
        by_levels.setdefault(tuple(kueue_levels([shape])), []).append(shape)
    out = []
    for lvls, members in sorted(by_levels.items(), key=lambda kv: (-len(kv[0]), kv[0])):
        deepest = next(level for level, label in reversed(OKE_LABELS) if label in lvls)
        name = "oci-rdma" if deepest == "local_block" else "oci-rdma-" + deepest.replace("_", "-")
        out.append({"name": name, "levels": list(lvls), "shapes": members})
    return out


def kueue_levels(shapes: Iterable[str] | None = None) -> list[str]:
    """The Kueue Topology's node labels, widest first: the RDMA levels OKE labels that the shapes'
    families use (island and network block always; the local block where a family's block is at or
    below it), then the host."""
    wanted = {"island", "network_block"}
    for shape in shapes or [None]:
        levels = family_levels(shape)
        if "local_block" in levels or "memory_fabric" in levels:
            wanted.add("local_block")
    return [label for level, label in OKE_LABELS if level in wanted] + [HOST_LABEL]
