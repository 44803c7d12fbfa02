# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Elastic capacity in the configuration model: node sets of OCI instances that Slurm's power saving
launches for queued jobs and terminates when idle.

A **node set** (``slurm_elastic_nodesets``) is one shape's elastic nodes: ``name`` and ``count`` give
the node names (``<name>-1`` .. ``<name>-<count>``, which are also each instance's display name and
hostname label), the shape gives their hardware (overridable per key), and the launch keys say where
they go (compartment, availability domain, subnet, image, and a compute cluster or an instance pool).
They are never declared by address: a node registers its address when it starts
(``SlurmctldParameters=cloud_reg_addrs``).

**Power saving** (``slurm_power_saving``): the slurm.conf keys, always written explicitly.
``ResumeTimeout`` is checked to be above each node set's boot time (``boot_time_s``: what a launch
of that shape takes to run slurmd, OCI's typical figure per shape kind unless measured and set)
plus a margin for the join. Static nodes are listed in ``SuspendExcNodes``: only elastic nodes are
ever powered down. ``PrivateData=cloud`` keeps powered-down nodes visible to ``scontrol`` and
``sinfo``, which the reconcile pass and people need.

Standard library only: the plan runs on the control node, the agent on the controller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import compress

__all__ = [
    "BOOT_TIME_S",
    "POWER_DEFAULTS",
    "PROGRAMS",
    "ElasticError",
    "agent_nodesets",
    "node_names",
    "plan_elastic",
]

# The programs slurmctld runs (as SlurmUser) and the directory they are installed in (the elastic role).
PROGRAMS = {
    "ResumeProgram": "oci-gpu-power-resume",
    "SuspendProgram": "oci-gpu-power-suspend",
    "ResumeFailProgram": "oci-gpu-power-resume-fail",
}

POWER_DEFAULTS: dict[str, Any] = {
    # seconds a node is idle before it is powered down (terminated)
    "suspend_time": 600,
    # seconds slurmctld gives the suspend program before the node may be resumed again
    "suspend_timeout": 300,
    # seconds from resume to slurmd registered; past it the node is marked down and ResumeFailProgram runs
    "resume_timeout": 1800,
    # nodes per minute slurmctld asks to launch / terminate (also the cap on OCI calls)
    "resume_rate": 20,
    "suspend_rate": 20,
    # more nodes and partitions never powered down (static nodes always are left alone)
    "exclude_nodes": [],
    "exclude_partitions": [],
    "program_dir": "/usr/local/sbin",
}

# Launch to slurmd running, by shape kind, in seconds: OCI's typical figures (bare-metal GPU hosts take
# the longest); a node set measured otherwise sets boot_time_s.
BOOT_TIME_S = {"bare_metal": 1200, "vm": 300, "vm_flex": 300}
# what a node needs after its instance runs: the controller's bootstrap (munge key, slurmd) and registration
JOIN_MARGIN_S = 120
# words SlurmctldParameters needs for cloud nodes: a new node fetches its configuration from slurmctld
# (configless), the address it registers from becomes its NodeAddr (no DNS, no edit on any other host), and a
# powered-down node is idle again, so a failed one can be resumed
SLURMCTLD_WORDS = ("enable_configless", "cloud_reg_addrs", "idle_on_node_suspend")
# from this release slurmctld takes a cloud node's address from its registration by itself, and calls the word
# defunct (it says so in its log on every start)
REG_ADDRS_BUILT_IN = (24, 11)
# a tree width above any node count: slurmd forwards no messages, since elastic nodes are not in DNS
TREE_WIDTH = 65533

_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,40}[a-z0-9]$")
_OCID_RE = re.compile(r"^ocid1\.[a-z0-9]+\.[a-z0-9-]*\.[a-z0-9-]*\.[A-Za-z0-9._-]+$")

_HARDWARE_KEYS = ("cpus", "sockets", "cores_per_socket", "threads_per_core", "real_memory", "gpu_count")
_LAUNCH_KEYS = (
    "compartment_id",
    "availability_domain",
    "subnet_id",
    "image_id",
    "compute_cluster_id",
    "instance_pool_id",
    "fault_domain",
    "ocpus",
    "memory_in_gbs",
    "boot_volume_size_gbs",
    "freeform_tags",
    "ssh_user",
)
NODESET_KEYS = frozenset(
    (
        "name",
        "count",
        "shape",
        "gpu_type",
        "features",
        "weight",
        "memory_reserve_mb",
        "boot_time_s",
        *_HARDWARE_KEYS,
        *_LAUNCH_KEYS,
    )
)
_POWER_KEYS = frozenset(POWER_DEFAULTS)
# slurm.conf keys the power-saving settings own: slurm_config may not set them
OWNED_KEYS = frozenset(
    (
        "SuspendProgram",
        "ResumeProgram",
        "ResumeFailProgram",
        "SuspendTime",
        "SuspendTimeout",
        "ResumeTimeout",
        "ResumeRate",
        "SuspendRate",
        "SuspendExcNodes",
        "SuspendExcParts",
    )
)


class ElasticError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
        return int(value)
    return None


def node_names(nodeset: Mapping[str, Any]) -> list[str]:
    return [f"{nodeset['name']}-{i}" for i in range(1, int(nodeset["count"]) + 1)]


def _nodeset(raw: Any, i: int, where: str, problems: list[str]) -> dict[str, Any] | None:
    label = f"slurm_elastic_nodesets[{i}]"
    if not isinstance(raw, Mapping):
        problems.append(f"{label} = {raw!r} ({where}): a node set must be a mapping")
        return None
    for key in sorted(set(raw) - NODESET_KEYS, key=str):
        problems.append(f"{label}.{key} ({where}): unknown key; known: {', '.join(sorted(NODESET_KEYS))}")
    out: dict[str, Any] = {k: raw[k] for k in raw if k in NODESET_KEYS}
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        problems.append(
            f"{label}.name = {name!r} ({where}): must be a host name prefix (lower-case letters, digits, "
            "hyphens; 2 to 42 characters): the nodes are <name>-1 .. <name>-<count>"
        )
    count = _int(raw.get("count"))
    if count is None or not 1 <= count <= 10000:
        problems.append(f"{label}.count = {raw.get('count')!r} ({where}): must be a whole number from 1 to 10000")
    else:
        out["count"] = count
    shape = raw.get("shape")
    info = _shapes.shape(shape) if isinstance(shape, str) else None
    if not isinstance(shape, str) or not shape:
        problems.append(f"{label}.shape = {shape!r} ({where}): an OCI shape name is required")
    for key in (*_HARDWARE_KEYS, "weight", "memory_reserve_mb", "boot_time_s", "boot_volume_size_gbs"):
        if key in raw and raw[key] is not None:
            value = _int(raw[key])
            if value is None or value < (0 if key in ("gpu_count", "weight", "memory_reserve_mb") else 1):
                problems.append(f"{label}.{key} = {raw[key]!r} ({where}): must be a whole number")
            else:
                out[key] = value
    if info is None and isinstance(shape, str) and shape:
        missing = [k for k in ("cpus", "real_memory") if out.get(k) is None]
        if missing:
            problems.append(
                f"{label}.shape = {shape!r} ({where}): not in the collection's shape table, so set "
                f"{' and '.join(missing)} (and gpu_count, gpu_type for GPUs)"
            )
    for key in ("compartment_id", "availability_domain", "subnet_id", "image_id"):
        if not isinstance(raw.get(key), str) or not raw.get(key):
            problems.append(f"{label}.{key} = {raw.get(key)!r} ({where}): required to launch the node set's instances")
    for key in ("compartment_id", "subnet_id", "image_id", "compute_cluster_id", "instance_pool_id"):
        value = raw.get(key)
        if isinstance(value, str) and value and not _OCID_RE.match(value):
            problems.append(f"{label}.{key} = {value!r} ({where}): not an OCID")
    if raw.get("compute_cluster_id") and raw.get("instance_pool_id"):
        problems.append(
            f"{label} ({where}): compute_cluster_id and instance_pool_id are both set; a node set launches into "
            "one compute cluster or one instance pool"
        )
    feats = raw.get("features", [])
    if isinstance(feats, str):
        feats = [f for f in feats.split(",") if f]
    if not isinstance(feats, list) or not all(isinstance(f, str) and re.match(r"^[A-Za-z0-9_.-]+$", f) for f in feats):
        problems.append(f"{label}.features = {raw.get('features')!r} ({where}): a list of feature words")
        feats = []
    out["features"] = list(feats)
    return out


def _boot_time(ns: Mapping[str, Any]) -> int:
    if ns.get("boot_time_s"):
        return int(ns["boot_time_s"])
    info = _shapes.shape(ns.get("shape"))
    return BOOT_TIME_S.get(info.kind if info else "bare_metal", BOOT_TIME_S["bare_metal"])


def _record(ns: Mapping[str, Any], name: str, memory_reserve_mb: int) -> dict[str, Any]:
    info = _shapes.shape(ns.get("shape"))
    threads = int(ns.get("threads_per_core") or (info.threads_per_core if info else None) or 2)
    sockets = int(ns.get("sockets") or (info.sockets if info else None) or 1)
    ocpus = ns.get("ocpus") or (info.ocpus if info else None)
    cpus = ns.get("cpus") or (int(ocpus) * threads if ocpus else None)
    cores = ns.get("cores_per_socket") or (cpus // (sockets * threads) if cpus else None)
    memory_gb = ns.get("memory_in_gbs") or (info.memory_gb if info else None)
    reserve = int(ns["memory_reserve_mb"]) if ns.get("memory_reserve_mb") is not None else int(memory_reserve_mb)
    memory = ns.get("real_memory") or (int(memory_gb) * 1024 - reserve if memory_gb else None)
    rec: dict[str, Any] = {
        "name": name,
        "cpus": int(cpus),
        "sockets": sockets,
        "cores_per_socket": int(cores),
        "threads_per_core": threads,
        "real_memory": max(1, int(memory)),
        "options": {"State": "CLOUD"},
    }
    gpus = ns.get("gpu_count")
    if gpus is None:
        gpus = info.gpu_count if info else 0
    if gpus:
        rec["gpu_type"] = ns.get("gpu_type") or (info.gpu_model if info else None) or "gpu"
        rec["gpu_count"] = int(gpus)
        rec["gpu_files"] = [f"/dev/nvidia{i}" for i in range(int(gpus))]
    feats = set(ns.get("features") or []) | {"elastic", str(ns["name"])}
    if ns.get("shape"):
        feats.add(str(ns["shape"]).lower().replace(".", "_"))
    rec["features"] = sorted(feats)
    # static nodes first: an elastic node costs a launch
    rec["weight"] = int(ns["weight"]) if ns.get("weight") is not None else 1000
    return rec


def _words(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [w.strip() for w in str(value).split(",") if w.strip()]


def plan_elastic(
    nodesets: Any,
    power: Any,
    static_nodes: Iterable[str],
    config: Mapping[str, Any] | None = None,
    where: str = "",
    memory_reserve_mb: int = 1024,
    version: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """The elastic part of the cluster plan: ``records`` (the cloud nodes' NodeName records), ``config``
    (slurm.conf keys to merge under the site's ``slurm_config``), ``names`` and the normalised
    ``nodesets``. Raises :class:`ElasticError` naming every bad key and value. No node sets: nothing."""
    problems: list[str] = []
    where = where or "the cluster settings"
    if nodesets in (None, "", []):
        return {"records": [], "config": {}, "names": [], "nodesets": []}
    if not isinstance(nodesets, list):
        raise ElasticError([f"slurm_elastic_nodesets = {nodesets!r} ({where}): must be a list of node sets"])
    sets = [s for i, raw in enumerate(nodesets) for s in [_nodeset(raw, i, where, problems)] if s is not None]
    power = {} if power is None else power
    if not isinstance(power, Mapping):
        raise ElasticError([f"slurm_power_saving = {power!r} ({where}): must be a mapping"])
    for key in sorted(set(power) - _POWER_KEYS, key=str):
        problems.append(f"slurm_power_saving.{key} ({where}): unknown key; known: {', '.join(sorted(_POWER_KEYS))}")
    p = dict(POWER_DEFAULTS)
    p.update({k: v for k, v in power.items() if k in _POWER_KEYS})
    for key in ("suspend_time", "suspend_timeout", "resume_timeout", "resume_rate", "suspend_rate"):
        value = _int(p[key])
        if value is None or value < (0 if key.endswith("_rate") else 1):
            problems.append(f"slurm_power_saving.{key} = {p[key]!r} ({where}): must be a whole number of seconds/nodes")
        else:
            p[key] = value
    if not isinstance(p["program_dir"], str) or not p["program_dir"].startswith("/"):
        problems.append(f"slurm_power_saving.program_dir = {p['program_dir']!r} ({where}): an absolute path")
    static = set(static_nodes)
    seen: dict[str, str] = {}
    for ns in sets:
        if not isinstance(ns.get("name"), str) or not isinstance(ns.get("count"), int):
            continue
        for node in node_names(ns):
            if node in static:
                problems.append(
                    f"slurm_elastic_nodesets '{ns['name']}' ({where}): node {node} is also a static compute host"
                )
            elif node in seen:
                problems.append(
                    f"slurm_elastic_nodesets '{ns['name']}' ({where}): node {node} is also in node set '{seen[node]}'"
                )
            seen.setdefault(node, ns["name"])
        if isinstance(p["resume_timeout"], int):
            need = _boot_time(ns) + JOIN_MARGIN_S
            if p["resume_timeout"] < need:
                problems.append(
                    f"slurm_power_saving.resume_timeout = {p['resume_timeout']} ({where}): below the boot time of node "
                    f"set '{ns['name']}' ({_boot_time(ns)} s for {ns.get('shape')}) plus {JOIN_MARGIN_S} s to join; "
                    f"slurmctld would mark every launch failed. Use at least {need}"
                )
    given = {str(k).lower(): k for k in (config or {})}
    for key in sorted(OWNED_KEYS):
        if key.lower() in given:
            problems.append(
                f"slurm_config.{given[key.lower()]} ({where}): set by slurm_power_saving when elastic node sets "
                "exist; set it there"
            )
    if problems:
        raise ElasticError(problems)

    records = [
        _record(ns, node, memory_reserve_mb) for ns in sorted(sets, key=lambda s: s["name"]) for node in node_names(ns)
    ]
    exclude = sorted(static | set(_words(p["exclude_nodes"])))
    conf: dict[str, Any] = {
        "SuspendProgram": f"{p['program_dir']}/{PROGRAMS['SuspendProgram']}",
        "ResumeProgram": f"{p['program_dir']}/{PROGRAMS['ResumeProgram']}",
        "ResumeFailProgram": f"{p['program_dir']}/{PROGRAMS['ResumeFailProgram']}",
        "SuspendTime": p["suspend_time"],
        "SuspendTimeout": p["suspend_timeout"],
        "ResumeTimeout": p["resume_timeout"],
        "ResumeRate": p["resume_rate"],
        "SuspendRate": p["suspend_rate"],
    }
    if exclude:
        conf["SuspendExcNodes"] = compress(exclude)
    if _words(p["exclude_partitions"]):
        conf["SuspendExcParts"] = ",".join(_words(p["exclude_partitions"]))
    cfg = {str(k).lower(): v for k, v in (config or {}).items()}
    words = _words(cfg.get("slurmctldparameters"))
    needed = [w for w in SLURMCTLD_WORDS if not (w == "cloud_reg_addrs" and version and version >= REG_ADDRS_BUILT_IN)]
    conf["SlurmctldParameters"] = ",".join(words + [w for w in needed if w not in words])
    private = _words(cfg.get("privatedata"))
    conf["PrivateData"] = ",".join(private + ([] if "cloud" in private else ["cloud"]))
    if "treewidth" not in cfg:
        conf["TreeWidth"] = TREE_WIDTH
    return {
        "records": records,
        "config": conf,
        "names": [r["name"] for r in records],
        "nodesets": sorted(sets, key=lambda s: s["name"]),
        "settings": p,
    }


def never_suspended(settings: Mapping[str, Any], static: Iterable[str]) -> str:
    """``SuspendExcNodes``: every node slurm.conf defines that is not elastic, and the site's own."""
    return compress(sorted(set(static) | set(_words(settings.get("exclude_nodes")))))


def gpu_facts(nodeset: Mapping[str, Any]) -> dict[str, Any]:
    """The GPUs each node of the set must show (``gpu_count``, the shape's unless given) and the shape's
    NVLink fabric (``gpu_fabric``): what the health check at join is set up with."""
    gpus = nodeset.get("gpu_count")
    return {
        "gpu_count": int(gpus if gpus is not None else (_shapes.gpu_count(nodeset.get("shape")) or 0)),
        "gpu_fabric": _shapes.gpu_fabric(nodeset.get("shape")),
    }


def agent_nodesets(nodesets: list[Mapping[str, Any]]) -> dict[str, Any]:
    """What the power-saving agent needs per node set (launch keys and the node names, and for the GPU
    health check at join the GPUs each node must show and the shape's NVLink fabric), for its settings."""
    out = {}
    for ns in nodesets:
        out[ns["name"]] = {
            "nodes": compress(node_names(ns)),
            "shape": ns["shape"],
            **gpu_facts(ns),
            **{k: ns[k] for k in _LAUNCH_KEYS if ns.get(k) not in (None, "", {})},
        }
    return out
