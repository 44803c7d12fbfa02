# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Which Slurm topology a cluster gets, and its files: one pure function over the RDMA model.

``plan_topology(mode, hosts, version, plugins, partitions, user_plugin, live) -> dict``

``mode`` is ``slurm_topology``:

- ``tree``: ``TopologyPlugin=topology/tree`` and a topology.conf of switches (every node under a
  leaf switch, one root), any release;
- ``block``: ``TopologyPlugin=topology/block`` and a topology.conf of blocks plus ``BlockSizes``; the
  plugin came with 23.11 and must be installed (``topology_block.so``); a partition mixing nodes in
  blocks with nodes outside any block only ever gives jobs the block nodes (24.11), so it is refused,
  naming the partition;
- ``none``: no ``TopologyPlugin`` line (24.11 has no ``topology/none``: it became ``topology/default``
  in 23.11, and writing it stops slurmctld) and no topology file;
- ``auto``: ``none`` when the fabric has at most one block (nothing to choose between) or when
  ``slurm_config`` sets ``TopologyPlugin`` itself (the site runs its own topology);
  ``block`` where the plugin is installed, every partition is all-block or block-free, and a GPU
  family whose block is an NVLink or leaf-switch domain is present (local block, memory fabric);
  ``tree`` otherwise.

From Slurm 25.05 the file is topology.yaml (a tree and a block topology, the chosen one the cluster
default), and slurm.conf names no plugin; the role renders it by version (Debian has no 25.05: it
is tested by rendering only). ``TopologyParam`` is never written: it is the site's to set.

A run that does not hold the whole cluster (``live`` is the live file's text) keeps the live file:
the hosts outside it may not report their place, and the file must not lose them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _topology
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError, expand

MODES = ("auto", "tree", "block", "none")
TOPOLOGY_FILES = ("topology.conf", "topology.yaml")
BLOCK_SINCE = (23, 11)
YAML_SINCE = (25, 5)
# Families whose block is a domain worth keeping a job inside (NVLink or one leaf switch).
_BLOCK_FAMILIES_LEVELS = ("local_block", "memory_fabric")


def _yaml_text(topologies: list[dict[str, Any]]) -> str:
    """topology.yaml by hand (module_utils may not import PyYAML): the fixed, simple shape it has."""
    out = [_topology.HEADER, "---"]
    for topo in topologies:
        out.append(f"- topology: {topo['topology']}")
        out.append(f"  cluster_default: {'true' if topo['cluster_default'] else 'false'}")
        if "tree" in topo:
            out.append("  tree:")
            out.append("    switches:")
            for sw in topo["tree"]["switches"]:
                out.append(f"      - switch: {sw['switch']}")
                if "children" in sw:
                    out.append(f'        children: "{sw["children"]}"')
                else:
                    out.append(f'        nodes: "{sw["nodes"]}"')
        else:
            out.append("  block:")
            out.append("    block_sizes: [" + ", ".join(str(s) for s in topo["block"]["block_sizes"]) + "]")
            out.append("    blocks:" + ("" if topo["block"]["blocks"] else " []"))
            for blk in topo["block"]["blocks"]:
                out.append(f"      - block: {blk['block']}")
                out.append(f'        nodes: "{blk["nodes"]}"')
    return "\n".join(out) + "\n"


# A switch or block name's prefix -> the model's level (longest first: network_block before rack...).
_NAME_LEVELS = sorted(((prefix + "_", level) for level, prefix in _topology.PREFIX.items()), key=lambda kv: -len(kv[0]))


def _level_of(name: str) -> tuple[str, str] | None:
    """``local_block_abc123456789`` -> ``("local_block", "abc123456789")``; None for the root, the
    ``_none`` switches of a missing level and anything else."""
    for prefix, level in _NAME_LEVELS:
        if name.startswith(prefix) and not name.endswith("_none"):
            tail = name[len(prefix) :]
            return level, tail[: -len("_nodes")] if tail.endswith("_nodes") else tail
    return None


def live_placement(text: str) -> dict[str, dict[str, str]]:
    """Each node's place as a live topology.conf (tree or block) gives it: level -> the tail of its
    name (the short id the name was made from). Lines the role did not write are read the same way."""
    parent: dict[str, str] = {}
    leaf: dict[str, str] = {}
    for raw in str(text or "").splitlines():
        line = raw.split("#", 1)[0].strip()
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        keys = {k.lower(): v for k, v in fields.items()}
        name = keys.get("switchname") or keys.get("blockname")
        if not name:
            continue
        for child in (keys.get("switches") or "").split(","):
            if child:
                parent[child] = name
        if keys.get("nodes"):
            try:
                for node in expand(keys["nodes"]):
                    leaf[node] = name
            except HostlistError:
                continue
    out: dict[str, dict[str, str]] = {}
    for node, switch in leaf.items():
        place: dict[str, str] = {}
        seen = set()
        while switch and switch not in seen:
            seen.add(switch)
            found = _level_of(switch)
            if found:
                place.setdefault(found[0], found[1])
            switch = parent.get(switch, "")
        out[node] = place
    return out


def _mixed_partitions(partitions: Mapping[str, Iterable[str]], model: Mapping[str, Any]) -> list[str]:
    """Partitions holding nodes in blocks and nodes outside every block."""
    unblocked = set(model["unblocked"])
    out = []
    for name, nodes in sorted(partitions.items()):
        members = set(nodes)
        if members & unblocked and members - unblocked:
            out.append(f"{name} ({', '.join(sorted(members & unblocked)[:5])} in no block)")
    return out


def plan_topology(
    mode: str,
    hosts: list[Mapping[str, Any]],
    version: tuple[int, int] | None,
    plugins: Iterable[str] = (),
    partitions: Mapping[str, Iterable[str]] | None = None,
    user_plugin: str = "",
    live: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Decide the topology (see the module doc). ``hosts``: the Slurm nodes' records for
    ``_topology.build`` (``name``, ``gpu_model`` or ``shape``, the ids). ``plugins``: the topology
    plugins the controller has installed (``tree``, ``block``, ...). ``partitions``: name -> node
    names. ``live``: in a run that does not hold the whole cluster, ``{"plugin": the live
    TopologyPlugin, "files": {name: live text}}``, kept as they are when there are any.

    Returns ``{"mode", "plugin", "files", "problems", "report", "blocks", "switches"}``: ``plugin``
    is the ``TopologyPlugin`` value to write ('' for none), ``files`` maps topology.conf or
    topology.yaml to its text."""
    out: dict[str, Any] = {"mode": "none", "plugin": "", "files": {}, "problems": [], "report": []}
    mode = str(mode or "auto").lower()
    if mode not in MODES:
        out["problems"].append(f"slurm_topology is {mode!r}: choose one of {', '.join(MODES)}")
        return out
    if user_plugin:
        if mode in ("tree", "block"):
            out["problems"].append(
                f"slurm_config sets TopologyPlugin={user_plugin} while slurm_topology is {mode}: the role writes "
                "TopologyPlugin and topology.conf from slurm_topology; drop the key, or set slurm_topology: none "
                "to keep a topology of your own"
            )
        elif mode == "auto":
            out["report"].append(
                f"topology: slurm_config sets TopologyPlugin={user_plugin}, so the role writes no topology file"
            )
        return out
    if mode == "none":
        return out
    if live is not None and (live.get("files") or live.get("plugin")):
        plugin = str(live.get("plugin") or "")
        out.update(
            mode=plugin.rsplit("/", 1)[-1]
            if plugin
            else ("yaml" if "topology.yaml" in live.get("files", {}) else "none"),
            plugin=plugin,
            files=dict(live.get("files") or {}),
        )
        out["report"].append(
            "topology: this run does not hold the whole cluster, so the live topology is kept; run over every "
            "host to change it"
        )
        return out
    try:
        model = _topology.build(hosts)
    except _topology.TopologyError as exc:
        out["problems"].append(str(exc))
        return out
    out["blocks"] = len(model["blocks"])
    out["switches"] = sum(1 for s in model["switches"] if "nodes" in s)
    have = {str(p) for p in plugins}
    yaml_version = version is not None and version >= YAML_SINCE
    block_ok = version is not None and version >= BLOCK_SINCE and ("block" in have or yaml_version)
    mixed = _mixed_partitions(partitions or {}, model)
    if mode == "auto":
        if out["blocks"] <= 1:
            out["report"].append("topology: one block at most (or no RDMA fabric ids), so no topology plugin")
            return out
        families = {
            _topology.family_levels(h.get("shape") or h.get("oci_shape"), h.get("gpu_model"))[-1] for h in hosts
        }
        if block_ok and not mixed and families & set(_BLOCK_FAMILIES_LEVELS) and model["blocks"]:
            mode = "block"
        else:
            mode = "tree"
            if block_ok and mixed:
                out["report"].append(
                    "topology: tree, not block: partition(s) " + "; ".join(mixed) + " mix block and other nodes"
                )
    elif mode == "block":
        if not block_ok:
            found = f"Slurm {version[0]}.{version[1]:02d}" if version else "an unknown Slurm release"
            out["problems"].append(
                f"slurm_topology is block, but {found} has no topology/block plugin (it came with 23.11 and "
                "needs topology_block.so on the controller): use tree or auto"
            )
            return out
        if not model["blocks"]:
            out["problems"].append("slurm_topology is block, but no node has a block id (local block, rack, fabric)")
            return out
        if mixed:
            out["problems"].append(
                "slurm_topology is block, but partition(s) "
                + "; ".join(mixed)
                + ": with topology/block Slurm gives such a partition's jobs only its block nodes, so keep the "
                "GPU nodes in blocks and other nodes in partitions of their own"
            )
            return out
    out["mode"] = mode
    if yaml_version:
        out["files"] = {"topology.yaml": _yaml_text(_topology.topology_yaml(model, mode))}
    else:
        out["plugin"] = f"topology/{mode}"
        out["files"] = {"topology.conf": _topology.topology_conf(model, mode)}
    return out
