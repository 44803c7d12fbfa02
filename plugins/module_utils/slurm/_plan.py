# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The whole cluster's Slurm plan, computed once per run: one pure function, no Ansible.

Public API
----------
``plan_cluster(cluster, hosts, probes, omit_token=None) -> dict``
    From the cluster settings, the host lists, which hosts are in the run and which of them are
    still standing, and what each standing host reported (its probe), decide everything the
    hosts need: the file texts, the node list (kept / orphan / missing / lost nodes), the
    directories the configuration implies, the Slurm version and the restart plan. Raises
    :class:`SlurmPlanError` (every problem, each naming its host, key or value) before any host
    is touched.
``preflight_cluster(cluster, hosts, omit_token=None) -> dict``
    Before anything changes: who must stand does, and the description passes the model.
``failure_allowance(setting, compute_count) -> int``
    How many compute hosts may fail before the run stops (``slurm_max_failed_compute``).
``partitions_from_conf(text) -> list``
    Partition records read back from a live ``slurm.conf``.

Rules (DESIGN.md §8): a node vanishing from slurm.conf ends its job NODE_FAIL, so the node list is
never shrunk by a host that is missing from the run (``--limit``), unreachable or failing; a run
that does not hold the whole cluster never alters an existing node or partition line; the
controllers and the dbd host must stand, and too many lost compute hosts stop the run.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu._topology import HEADER, KEYS, short_id
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import (
    DEFAULT_SLURM_CONF,
    SlurmConfigError,
    parse_slurm_conf,
    private_data_dbd,
    render_slurm_config_with_settings,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._containers import (
    oci_conf_text,
    oci_series,
    plugstack_conf_text,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._elastic import (
    ElasticError,
    agent_nodesets,
    never_suspended,
    node_names,
    plan_elastic,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError, compress
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._node_files import (
    containers_prolog_path,
    host_node_files,
    node_files,
    pyxis_problems,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodes import merge_records, records_from_conf
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._role_settings import (
    container_problems,
    container_settings,
    unit_files,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._schedule import host_inputs, writes_config
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._topology import (
    TOPOLOGY_FILES,
    live_placement,
    plan_topology,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import (
    SLURMD_RESTART_FILES,
    behaviour,
    change_plan,
    parse_version,
    version_problems,
)

__all__ = [
    "DEFAULT_MAX_FAILED_COMPUTE",
    "SlurmPlanError",
    "failure_allowance",
    "partitions_from_conf",
    "plan_cluster",
    "preflight_cluster",
]

# A quarter of the compute hosts, rounded down, but never fewer than one: a node in repair
# must not stop a small cluster, a systematic failure (a bad image, a wrong key) stops a big one.
DEFAULT_MAX_FAILED_COMPUTE = "25%"

_ALLOWANCE_RE = re.compile(r"^\s*(\d+)\s*(%?)\s*$")


class SlurmPlanError(ValueError):
    """The plan cannot be made; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            text = self.problems[0]
        else:
            text = f"{len(self.problems)} problems:\n" + "\n".join("- " + p for p in self.problems)
        super().__init__(text)


# HealthCheckNodeState=NONDRAINED_IDLE came with Slurm 23.02 (its NEWS); 22.05 has no such word.
NONDRAINED_IDLE_SINCE = (23, 2)


def failure_allowance(setting: Any, compute_count: int) -> int:
    """Compute hosts that may fail: a count (``3``) or a percentage (``"25%"``, at least one host)."""
    match = _ALLOWANCE_RE.match(str(setting)) if not isinstance(setting, bool) else None
    if not match:
        raise ValueError(
            f"slurm_max_failed_compute is {setting!r}: give a number of hosts (e.g. 2) or a percentage (e.g. '25%')"
        )
    number, percent = int(match.group(1)), bool(match.group(2))
    if not percent:
        return number
    if number > 100:
        raise ValueError(f"slurm_max_failed_compute is {setting!r}: a percentage is at most 100%")
    return max(1, compute_count * number // 100)


def _bool_word(value: str) -> bool:
    return value.strip().upper() in ("YES", "TRUE", "1")


def partitions_from_conf(text: str | None) -> list[dict[str, Any]]:
    """Partition records (as the model takes them) from a live slurm.conf's partition lines."""
    out = []
    for name, definition in parse_slurm_conf(text)["partitions"].items():
        if name.upper() == "DEFAULT":
            continue
        rec: dict[str, Any] = {"name": name}
        options: dict[str, str] = {}
        for pair in definition.split():
            key, _eq, value = pair.partition("=")
            low = key.lower()
            if low == "nodes":
                rec["nodes"] = "ALL" if value.upper() == "ALL" else [value]
            elif low == "default":
                rec["default"] = _bool_word(value)
            elif low == "maxtime":
                rec["max_time"] = value
            else:
                options[key] = value
        if options:
            rec["options"] = options
        out.append(rec)
    return sorted(out, key=lambda r: r["name"])


def _controller_names(value: str) -> list[str]:
    """Host names of a SlurmctldHost value as parse_slurm_conf joins them (``ctl1,ctl2(10.0.0.3)``)."""
    return [part.split("(", 1)[0].strip() for part in value.split(",") if part.strip()]


def losses(live_text: str, new_text: str, removed: Iterable[str]) -> list[str]:
    """What the new slurm.conf takes away that the live one has: accounting through slurmdbd, a
    controller (primary or backup). Each is refused unless ``removed`` (slurm_removed) names it: an
    inventory that lost the dbd host or a controller (stopped, untagged, outside the filters) must
    never turn accounting off or drop a controller."""
    allowed = set(removed)
    old, new = parse_slurm_conf(live_text)["keys"], parse_slurm_conf(new_text)["keys"]
    problems = []
    old_acct, new_acct = old.get("accountingstoragetype", ""), new.get("accountingstoragetype", "")
    if "slurmdbd" in old_acct and "slurmdbd" not in new_acct and "accounting" not in allowed:
        host = old.get("accountingstoragehost", "")
        problems.append(
            f"the live slurm.conf keeps accounting in slurmdbd{f' on {host}' if host else ''}, and this run would "
            "turn it off (no host in slurm_dbd_hosts, the slurm_dbd group, or slurm_accounting_enabled false): "
            "slurmctld would restart without accounting and the dbd host would lose slurmdbd.conf. If the dbd "
            "host is stopped or left the inventory, bring it back; to end accounting on purpose, add "
            "'accounting' to slurm_removed"
        )
    old_ctl = _controller_names(old.get("slurmctldhost", ""))
    new_ctl = _controller_names(new.get("slurmctldhost", ""))
    gone = [h for h in old_ctl if h not in new_ctl and h not in allowed]
    if gone:
        problems.append(
            f"the live slurm.conf has SlurmctldHost {', '.join(old_ctl)}, and this run would drop "
            f"{', '.join(gone)} (planned: {', '.join(new_ctl) or 'none'}), from slurm_controller_hosts or the "
            "slurm_controller group. If that host is stopped or left the inventory, bring it back; to take a "
            f"controller out on purpose, add its name to slurm_removed ({', '.join(repr(h) for h in gone)})"
        )
    return problems


def _names(value: Any) -> list[str]:
    return [str(v) for v in value or []]


def _version_of(probe: Mapping[str, Any]) -> tuple[int, int] | None:
    try:
        return parse_version(probe.get("slurm_version") or "")
    except ValueError:
        return None


def _slurm_user(settings: Mapping[str, Any]) -> str:
    """The user the Slurm daemons run as: slurm.conf's SlurmUser, root when it is omitted (as Slurm does)."""
    return str(settings.get("SlurmUser") or "root")


def _dbd_log_dir(settings: Mapping[str, Any]) -> str:
    """slurmdbd logs beside slurmctld; the model's default place when SlurmctldLogFile is omitted."""
    return os.path.dirname(str(settings.get("SlurmctldLogFile") or DEFAULT_SLURM_CONF["SlurmctldLogFile"]))


def _directories(settings: Mapping[str, Any], conf_dir: str) -> list[dict[str, Any]]:
    """The directories the configuration implies, with the roles that need each."""
    user = _slurm_user(settings)
    dirs: dict[str, dict[str, Any]] = {}

    def add(path: Any, owner: str, mode: str, roles: Iterable[str]) -> None:
        if not isinstance(path, str) or not path.startswith("/"):
            return
        entry = dirs.setdefault(path, {"path": path, "owner": owner, "mode": mode, "roles": []})
        entry["roles"] = sorted(set(entry["roles"]) | set(roles))

    add(conf_dir, "root", "0755", ("controller", "dbd", "compute", "login"))
    add(_dbd_log_dir(settings), user, "0750", ("controller", "dbd"))
    if settings.get("SlurmdLogFile"):
        add(os.path.dirname(str(settings["SlurmdLogFile"])), user, "0750", ("compute",))
    add(settings.get("StateSaveLocation"), user, "0700", ("controller",))
    add(settings.get("SlurmdSpoolDir"), "root", "0755", ("compute",))
    return [dirs[p] for p in sorted(dirs)]


def _standing_problems(
    cluster: Mapping[str, Any],
    controllers: list[str],
    dbd: list[str],
    compute: list[str],
    in_run: set[str],
    lost: list[str],
) -> list[str]:
    """The controllers and the dbd host must stand; lost compute hosts within the allowance."""
    problems = []
    for label, group in (("controller", controllers), ("slurmdbd host", dbd)):
        down = [h for h in group if h in lost]
        if down:
            problems.append(
                f"{label}(s) {', '.join(down)} failed or are unreachable in this run: the whole cluster depends "
                "on them, so nothing is changed anywhere; bring them back and run again"
            )
    compute_in_run = [h for h in compute if h in in_run]
    compute_lost = [h for h in compute_in_run if h in lost]
    setting = cluster.get("max_failed_compute", DEFAULT_MAX_FAILED_COMPUTE)
    try:
        allowed = failure_allowance(setting, len(compute_in_run))
    except ValueError as exc:
        return [*problems, str(exc)]
    if len(compute_lost) > allowed:
        problems.append(
            f"{len(compute_lost)} of {len(compute_in_run)} compute hosts failed or are unreachable "
            f"({', '.join(compute_lost)}), more than slurm_max_failed_compute={setting!s} allows ({allowed}): "
            "the run stops"
        )
    return problems


# munge's default credential time-to-live (munged --ttl): a credential from a host whose clock is
# further off than this is refused as expired (or "rewound"), so nothing on that host talks to Slurm.
MUNGE_TTL = 300


def _account_problems(
    cluster: Mapping[str, Any], controllers: list[str], standing: set[str], probes: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Hosts whose reported users (the probe's ``accounts``: SlurmUser) have another UID/GID than on the
    first standing controller, and hosts whose clock is further off the control node's than munge's
    credential TTL: named before any file changes. Slurm trusts an RPC from SlurmUser's UID as this
    host knows it, and the controllers share StateSaveLocation, owned by that UID. (munge's own UID is
    not compared: nothing depends on it, and packages allocate it in install order.) A host that
    reports nothing is not judged."""
    problems = []
    reference = next((h for h in controllers if h in standing and (probes.get(h) or {}).get("accounts")), "")
    if reference:
        ref_accounts = probes[reference]["accounts"]
        for user, ref in sorted(ref_accounts.items()):
            if not ref:
                continue
            differ: dict[tuple[int, int], list[str]] = {}
            for host in sorted(standing):
                got = ((probes.get(host) or {}).get("accounts") or {}).get(user)
                if got and (got.get("uid"), got.get("gid")) != (ref.get("uid"), ref.get("gid")):
                    differ.setdefault((got.get("uid"), got.get("gid")), []).append(host)
            for (uid, gid), hosts in sorted(differ.items(), key=lambda kv: kv[1]):
                ctl = [h for h in hosts if h in controllers]
                why = (
                    f"; the controllers share StateSaveLocation, owned by that UID: after a failover {', '.join(ctl)} "
                    "could not read the state"
                    if ctl
                    else ""
                )
                problems.append(
                    f"user {user} has UID {uid} (GID {gid}) on {compress(hosts)} but UID {ref.get('uid')} (GID "
                    f"{ref.get('gid')}) on {reference}: every Slurm host needs the same UID and GID for it{why}. "
                    f"Give {user} the same UID and GID everywhere (usermod -u, groupmod -g, then chown its files) "
                    "and run again"
                )
    limit = float(cluster.get("max_clock_skew") or MUNGE_TTL)
    skewed = {
        h: float((probes.get(h) or {})["clock_skew"])
        for h in sorted(standing)
        if isinstance((probes.get(h) or {}).get("clock_skew"), (int, float))
        and abs(float(probes[h]["clock_skew"])) > limit
    }
    if skewed:
        shown = ", ".join(f"{h} {v:+.0f} s" for h, v in list(skewed.items())[:10])
        more = f" (+{len(skewed) - 10} more)" if len(skewed) > 10 else ""
        problems.append(
            f"the clocks of {len(skewed)} host(s) are further off the control node's than munge's credential TTL "
            f"({limit:g} s): {shown}{more}; munge refuses their credentials, so Slurm would not work there. Set "
            "their clocks (chrony/NTP) and run again"
        )
    return problems


def _membership(hosts: Mapping[str, Any]) -> dict[str, Any]:
    """The host lists, and who of the cluster is in the run, standing, lost or outside it."""
    out: dict[str, Any] = {k: _names(hosts.get(k)) for k in ("controllers", "dbd", "compute", "login")}
    in_run = set(_names(hosts.get("in_run")))
    standing = set(_names(hosts.get("standing"))) & in_run
    everyone = list(dict.fromkeys(out["controllers"] + out["dbd"] + out["compute"] + out["login"]))
    out.update(
        in_run=in_run,
        standing=standing,
        cluster_hosts=everyone,
        outside=[h for h in everyone if h not in in_run],
        lost=[h for h in everyone if h in in_run and h not in standing],
    )
    return out


def _elastic(
    cluster: Mapping[str, Any], static: Iterable[str], version: tuple[int, int] | None = None
) -> dict[str, Any]:
    """The elastic node sets' records and power-saving keys (slurm/_elastic); raises SlurmPlanError."""
    try:
        return plan_elastic(
            cluster.get("elastic_nodesets"),
            cluster.get("power_saving"),
            static,
            cluster.get("config") or {},
            where=str(cluster.get("where") or ""),
            memory_reserve_mb=int(cluster.get("memory_reserve_mb") or 0),
            version=version,
        )
    except ElasticError as exc:
        raise SlurmPlanError(exc.problems) from None


def _with_power(config: Mapping[str, Any], elastic: Mapping[str, Any]) -> dict[str, Any]:
    """The site's slurm.conf keys with the power-saving ones over them (those carry the site's words)."""
    power = elastic.get("config") or {}
    low = {k.lower() for k in power}
    return {**{k: v for k, v in config.items() if str(k).lower() not in low}, **power}


def _spec(cluster: Mapping[str, Any], controllers: list[str], nodes: list[dict[str, Any]], **extra: Any) -> dict:
    """The configuration model's input from the cluster settings and a node list."""
    spec = {
        "cluster_name": cluster.get("cluster_name"),
        "controllers": controllers,
        "nodes": nodes,
        "config": _with_power(cluster.get("config") or {}, extra.pop("elastic", {})),
        "cgroup": cluster.get("cgroup") or {},
        **extra,
    }
    spec.setdefault("partitions", cluster.get("partitions") or [])
    if cluster.get("accounting"):
        spec["accounting"] = dict(cluster["accounting"])
    return spec


# The ids a Slurm node's place in the fabric is read from: the probe's (IMDS, checked against the
# inventory on the node), else the inventory's for hosts outside the run (oci_* hostvars).
# level -> the record key of its id (the first of _topology.KEYS: hpc_island_id, local_block_id...)
_LEVEL_KEYS = {level: keys[0] for level, keys in KEYS.items()}
_TOPOLOGY_IDS = tuple(_LEVEL_KEYS.values())


def _plan_topology(
    cluster: Mapping[str, Any],
    controllers: list[str],
    nodes: list[dict[str, Any]],
    probes: Mapping[str, Mapping[str, Any]],
    version: tuple[int, int] | None,
    settings: Mapping[str, str],
    members: dict[str, list[str]],
    partial: bool,
    reference: str,
    live_topology: dict[str, str],
    elastic_sets: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    inventory = cluster.get("topology_inventory") or {}
    # Elastic nodes have no host to probe until they are launched. A node set launched into a compute
    # cluster shares that cluster's RDMA fabric: its nodes get a switch of their own at the island level
    # (the compute cluster's OCID as the id), so a job is kept inside it, and no block (their leaf is
    # unknown until launch). Other node sets sit with the hosts that report no place.
    elastic_place = {
        n: {"shape": ns.get("shape"), "hpc_island_id": ns.get("compute_cluster_id")}
        for ns in elastic_sets
        for n in node_names(ns)
    }
    records = []
    unknown = []
    for node in nodes:
        name = node["name"]
        if name in elastic_place:
            place = elastic_place[name]
            records.append({"name": name, "gpu_model": node.get("gpu_type"), **{k: v for k, v in place.items() if v}})
            continue
        probe = probes.get(name) or {}
        ids = probe.get("topology") or inventory.get(name) or {}
        if "topology" not in probe and name not in inventory:
            unknown.append(name)
        record = {"name": name, "gpu_model": node.get("gpu_type")}
        record.update({k: ids[k] for k in _TOPOLOGY_IDS if isinstance(ids, Mapping) and ids.get(k)})
        records.append(record)
    # A node this run cannot ask (unreachable, failed, or kept without a fresh record) keeps the place
    # the live topology.conf gives it: its name's tail is matched back to the id the other nodes report.
    live_text = live_topology.get("topology.conf", "")
    if unknown and live_text:
        where = live_placement(live_text)
        full: dict[tuple[str, str], str] = {}
        for rec in records:
            for level, key in _LEVEL_KEYS.items():
                if rec.get(key):
                    full.setdefault((level, short_id(rec[key])), rec[key])
        by_name = {rec["name"]: rec for rec in records}
        for name in unknown:
            for level, tail in where.get(name, {}).items():
                by_name[name][_LEVEL_KEYS[level]] = full.get((level, tail), tail)
    controller = next(
        (probes[h] for h in controllers if h in probes and probes[h].get("topology_plugins")),
        None,
    ) or next((p for p in probes.values() if p.get("topology_plugins")), {})
    live = None
    if partial and reference:
        live = {"plugin": parse_slurm_conf(reference)["keys"].get("topologyplugin", ""), "files": live_topology}
    user_plugin = str(settings.get("TopologyPlugin") or "")
    return plan_topology(
        str(cluster.get("topology") or "none"),
        records,
        version,
        controller.get("topology_plugins") or [],
        members,
        user_plugin=user_plugin,
        live=live,
    )


# The files every host with a configuration has; a configless node compares only these with the
# primary controller's to tell whether it missed a reconfigure (the topology file is applied by one).
BASE_FILES = ("cgroup.conf", "gres.conf", "slurm.conf")
# What a failed restart puts back (tasks/restart.yml): the base files and the topology files.
LAST_GOOD_FILES = (*BASE_FILES, *TOPOLOGY_FILES)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest()


def _conf_files(
    cluster: Mapping[str, Any], files: Mapping[str, str], topology_files: Mapping[str, str], version_text: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The configuration files every host that has them gets, in the order they are written, with
    their final content (the managed header on the base files), and the role's files to remove."""
    conf_dir = str(cluster.get("conf_dir") or "/etc/slurm")
    header = str(cluster.get("managed_header") or "")
    out = [
        {"name": n, "path": f"{conf_dir}/{n}", "content": f"{header}{files[n]}"}
        for n in ("cgroup.conf", "gres.conf", "slurm.conf")
    ]
    out[-1]["validate"] = "env SLURM_CONF=%s scontrol show hostnames localhost"
    out += [{"name": n, "path": f"{conf_dir}/{n}", "content": text} for n, text in sorted(topology_files.items())]
    containers = cluster.get("containers") or {}
    absent = []
    if containers.get("oci_enabled"):
        text = oci_conf_text(
            version_text,
            str(containers.get("oci_state_dir") or ""),
            str(containers.get("oci_runtime") or ""),
            containers.get("oci_config") or {},
            containers_prolog_path(conf_dir),
        )
        out.append({"name": "oci.conf", "path": f"{conf_dir}/oci.conf", "content": text})
    else:
        # The role's own oci.conf goes when turned off; a site's own file stays.
        absent.append({"name": "oci.conf", "path": f"{conf_dir}/oci.conf", "state": "absent_if_managed"})
    if containers.get("pyxis_enabled"):
        out.append(
            {"name": "plugstack.conf", "path": f"{conf_dir}/plugstack.conf", "content": plugstack_conf_text(conf_dir)}
        )
    return out, absent


# Where a configless slurmd keeps the files slurmctld sent it.
CONFIGLESS_DIR = "/run/slurm/conf"


def _check_live_dir(host: Mapping[str, Any] | None, conf_dir: str) -> str:
    """Where slurm_config_check reads the check host's live files: its configuration directory, or
    the configless slurmd's copy."""
    return conf_dir if (host or {}).get("writes_config", True) else CONFIGLESS_DIR


def _check_needed(conf_sha: Mapping[str, str], probe: Mapping[str, Any], live_dir: str) -> bool:
    """Whether the check host's live files (in ``live_dir``) differ from the candidate's: a file
    missing, another directory or any other hash says yes."""
    if os.path.dirname(str(probe.get("live_conf_path") or "")) != live_dir:
        return True
    live = probe.get("conf_sha256") or {}
    return any(live.get(name) != sha for name, sha in conf_sha.items())


def _base_view(probe: Mapping[str, Any]) -> dict[str, str]:
    sha = probe.get("conf_sha256") or {}
    return {n: str(sha.get(n) or "") for n in BASE_FILES}


def _hosts(
    cluster: Mapping[str, Any],
    m: Mapping[str, Any],
    probes: Mapping[str, Mapping[str, Any]],
    conf_sha: Mapping[str, str],
) -> dict[str, dict[str, Any]]:
    """Per standing host of the cluster, what its schedule needs (slurm/_schedule.host_inputs)."""
    configless = bool(cluster.get("configless"))
    primary = m["controllers"][0] if m["controllers"] else ""
    ctl = probes.get(primary) or {}
    ctl_live = bool(ctl.get("live_conf_path"))
    ctl_sha = ctl.get("conf_sha256") or {}
    # What the primary controller's apply changes among the files slurmctld serves configless slurmd
    # (those slurmd reads at start): its live files against this plan's.
    served_changed = (
        sorted(n for n in SLURMD_RESTART_FILES if n in conf_sha and conf_sha[n] != ctl_sha.get(n, ""))
        if configless and primary in m["standing"]
        else []
    )
    removed = set(_names(cluster.get("nodes_removed")))
    roles_of: dict[str, list[str]] = {}
    for role, key in (("controller", "controllers"), ("dbd", "dbd"), ("compute", "compute"), ("login", "login")):
        for host in m[key]:
            roles_of.setdefault(host, []).append(role)
    out = {}
    for host in m["cluster_hosts"]:
        if host not in m["standing"]:
            continue
        probe = probes.get(host) or {}
        roles = roles_of.get(host, [])
        if writes_config(roles, configless):
            behind = bool(probe.get("behind"))
        else:
            # A configless slurmd keeps the files slurmctld sent it (/run/slurm/conf): behind when they
            # differ from the primary controller's live files as this run found them.
            behind = (
                str(probe.get("live_conf_path") or "").startswith("/run/")
                and ctl_live
                and _base_view(probe) != _base_view(ctl)
            )
        out[host] = host_inputs(
            host,
            roles,
            primary=host == primary,
            configless=configless,
            live_conf=bool(probe.get("live_conf")),
            running=probe.get("running") or [],
            taken_out=host in removed,
            behind=behind,
            served_changed=served_changed,
        )
    return out


def preflight_cluster(
    cluster: Mapping[str, Any],
    hosts: Mapping[str, Any],
    omit_token: Any = None,
    versions: Mapping[str, Mapping[str, Any]] | None = None,
    upgrade: bool = False,
) -> dict[str, Any]:
    """Before anything changes: the hosts that must stand do, and the cluster description (node names
    only: the hardware is read later) passes the configuration model. ``versions``: per standing host,
    what ``slurm_version_info`` read (``installed``, ``candidate``, ``recorded``); the releases must
    be ones Slurm runs together and upgrades to (``_version.version_problems``; ``upgrade``: this
    run upgrades the packages). Returns the lost hosts."""
    m = _membership(hosts)
    problems = _standing_problems(cluster, m["controllers"], m["dbd"], m["compute"], m["in_run"], m["lost"])
    if versions is not None:
        roles = {
            h: [
                r
                for r, group in (
                    ("controller", "controllers"),
                    ("dbd", "dbd"),
                    ("compute", "compute"),
                    ("login", "login"),
                )
                if h in m[group]
            ]
            for h in versions
        }
        problems.extend(version_problems({h: {**versions[h], "roles": roles[h]} for h in versions}, upgrade))
    try:
        elastic = _elastic(cluster, m["compute"])
    except SlurmPlanError as exc:
        problems.extend(exc.problems)
        elastic = {}
    try:
        names = [{"name": h} for h in m["compute"]] + [{"name": n} for n in elastic.get("names", [])]
        render_slurm_config_with_settings(
            _spec(cluster, m["controllers"], names, elastic=elastic), omit_token=omit_token
        )
    except SlurmConfigError as exc:
        problems.append(str(exc))
    if problems:
        raise SlurmPlanError(problems)
    return {"nodes": {"lost": sorted(m["lost"]), "outside_run": sorted(m["outside"])}}


def plan_cluster(
    cluster: Mapping[str, Any],
    hosts: Mapping[str, Any],
    probes: Mapping[str, Mapping[str, Any]],
    omit_token: Any = None,
) -> dict[str, Any]:
    """Decide the whole cluster's configuration once (see the module doc).

    ``cluster``: ``cluster_name``, ``partitions``, ``config``, ``cgroup``, ``gres_autodetect``
    (``auto``/``off``/``nvml``/``nvidia``/``rsmi``), ``accounting`` (a mapping
    or ``None`` when there is no slurmdbd), ``nodes_removed``, ``max_failed_compute``,
    ``conf_dir``, ``configless``, ``containers``, ``slurmd_defaults_file`` (the systemd files,
    ``slurm/_role_settings.unit_files``).

    ``hosts``: ``controllers``, ``dbd``, ``compute``, ``login`` (the cluster's host lists),
    ``in_run`` (the hosts this run set out to manage: ``ansible_play_hosts_all``) and ``standing``
    (those not failed or unreachable: ``ansible_play_hosts``).

    ``probes``: per standing host, what ``slurm_node_info`` reported: ``slurm_version``,
    ``live_conf`` (text of the slurm.conf the host runs with, empty when it has none),
    ``record`` (compute hosts), ``nvml_plugin``.
    """
    problems: list[str] = []
    m = _membership(hosts)
    controllers, dbd, compute = m["controllers"], m["dbd"], m["compute"]
    in_run, standing, cluster_hosts = m["in_run"], m["standing"], m["cluster_hosts"]
    outside, lost = m["outside"], m["lost"]
    partial = bool(outside)

    problems.extend(_standing_problems(cluster, controllers, dbd, compute, in_run, lost))
    problems.extend(_account_problems(cluster, controllers, standing, probes))

    # --- the Slurm version ----------------------------------------------------------------
    versions = {h: v for h in sorted(standing) for v in [_version_of(probes.get(h) or {})] if v is not None}
    from_ctl = [versions[h] for h in controllers if h in versions]
    version: tuple[int, int] | None = min(from_ctl) if from_ctl else (min(versions.values()) if versions else None)
    version_text = f"{version[0]}.{version[1]:02d}" if version else ""
    row: dict[str, Any] = {}
    if version is None:
        problems.append(
            "cannot tell the installed Slurm version: no host in this run reports one "
            "(slurmctld -V, slurmd -V, dpkg-query, rpm); install the Slurm packages first"
        )
    else:
        try:
            row = behaviour(version)
        except ValueError as exc:
            problems.append(str(exc))
    mixed = sorted({f"{v[0]}.{v[1]:02d}" for v in versions.values()})

    # --- the live configuration: every controller in the run, else any host in the run ------
    live_sources = [h for h in controllers if h in standing and (probes.get(h) or {}).get("live_conf")]
    if not live_sources:
        live_sources = [h for h in cluster_hosts if h in standing and (probes.get(h) or {}).get("live_conf")]
    live: dict[str, dict[str, Any]] = {}
    for source in reversed(live_sources):  # the first source wins
        try:
            live.update(records_from_conf(str(probes[source]["live_conf"])))
        except (HostlistError, ValueError) as exc:
            problems.append(f"the live slurm.conf of host {source} cannot be read: {exc}")
    reference = str(probes[live_sources[0]]["live_conf"]) if live_sources else ""

    # --- the node list --------------------------------------------------------------------
    removed_on_purpose = set(_names(cluster.get("nodes_removed")))
    fresh = {
        h: dict((probes.get(h) or {})["record"])
        for h in compute
        if h in standing and (probes.get(h) or {}).get("record")
    }
    # Elastic nodes (State=CLOUD) have no host: their records come from their node sets.
    try:
        elastic = _elastic(cluster, compute, version)
    except SlurmPlanError as exc:
        problems.extend(exc.problems)
        elastic = {"records": [], "names": [], "config": {}, "nodesets": [], "settings": {}}
    cloud = {rec["name"]: rec for rec in elastic["records"]}
    # Outside a whole-cluster run an existing line never changes; a lost host keeps its line.
    merged = merge_records([*compute, *cloud], {**fresh, **cloud}, live, removed_on_purpose, keep_live=partial)
    nodes = {rec["name"]: rec for rec in merged["nodes"]}
    if cloud:  # every defined node that is not elastic: the live lines kept and lost hosts too, not one removed
        elastic["config"]["SuspendExcNodes"] = never_suspended(
            elastic["settings"], [n for n, rec in nodes.items() if (rec.get("options") or {}).get("State") != "CLOUD"]
        )
    kept, missing, added = merged["kept"], merged["missing"], merged["added"]
    orphans, removed = merged["orphans"], merged["removed"]

    ctl_standing = [h for h in controllers if h in standing]
    if not live_sources:
        unknown = sorted(h for h in compute if h not in fresh and h not in removed_on_purpose)
        if unknown and not ctl_standing:
            problems.append(
                "no host in this run has a live slurm.conf and no controller is in the run, so the node "
                f"definitions of {', '.join(unknown)} (no fresh record: outside --limit, failed or unreachable) "
                "cannot be kept; add a controller or those hosts to the run"
            )
    if partial and removed:
        problems.append(
            f"slurm_nodes_removed names {', '.join(removed)}, but this run does not hold the whole cluster "
            f"({', '.join(outside)} outside it): remove nodes in a run over every host"
        )
    if added and partial:
        if not ctl_standing:
            problems.append(
                f"this run would add node(s) {', '.join(added)} but no controller is in it: add "
                f"{', '.join(controllers)} to --limit"
            )
        elif row.get("node_change") == "restart":
            left_out = sorted(h for h in set(compute) | set(live) if h not in in_run and h not in removed_on_purpose)
            if left_out:
                problems.append(
                    f"adding node(s) {', '.join(added)} on Slurm {version_text} restarts every slurmd, but "
                    f"slurmd host(s) {compress(left_out)} are outside this run: run over every compute host "
                    "(or upgrade to 24.11, where a reconfigure is enough)"
                )

    # --- the partitions -------------------------------------------------------------------
    partitions: Any = cluster.get("partitions") or []
    live_partitions = partitions_from_conf(reference) if reference else []
    if partial and live_partitions:
        partitions = live_partitions

    # --- gres autodetection ---------------------------------------------------------------
    mode = str(cluster.get("gres_autodetect") or "auto")
    if mode == "auto":
        flags = [bool((probes.get(h) or {}).get("nvml_plugin")) for h in fresh]
        mode = "nvml" if flags and all(flags) else "off"

    # pyxis where a host loads it: found, and built for the release the host runs
    containers = cluster.get("containers") or {}
    standing_probes = {h: probes[h] for h in standing if h in probes}
    problems.extend(pyxis_problems(containers, version_text, standing_probes))

    if problems:
        raise SlurmPlanError(problems)

    spec = _spec(cluster, controllers, merged["nodes"], partitions=partitions, gres_autodetect=mode, elastic=elastic)
    live_source_probe = (probes.get(live_sources[0]) or {}) if live_sources else {}
    live_topology = {k: str(v) for k, v in (live_source_probe.get("live_topology") or {}).items() if v}
    topology: dict[str, Any] = {}

    def topology_keys(settings: dict[str, str], members: dict[str, list[str]]) -> dict[str, str]:
        topology.update(
            _plan_topology(
                cluster,
                controllers,
                merged["nodes"],
                probes,
                version,
                settings,
                members,
                partial,
                reference,
                live_topology,
                elastic.get("nodesets") or [],
            )
        )
        if topology["problems"]:
            raise SlurmPlanError(topology["problems"])
        return {"TopologyPlugin": topology["plugin"]} if topology["plugin"] else {}

    try:
        files, settings = render_slurm_config_with_settings(spec, omit_token=omit_token, extra_keys=topology_keys)
    except SlurmConfigError as exc:
        raise SlurmPlanError([str(exc)]) from exc
    states = {w.strip().upper() for w in str(settings.get("HealthCheckNodeState", "")).split(",")}
    if "NONDRAINED_IDLE" in states and version is not None and version < NONDRAINED_IDLE_SINCE:
        raise SlurmPlanError(
            [
                f"HealthCheckNodeState = {settings['HealthCheckNodeState']!r} (slurm_health_check_node_state or "
                f"slurm_config): NONDRAINED_IDLE needs Slurm 23.02 or later, and this cluster runs {version_text}; "
                "use IDLE, or ANY so that the health check can also resume the nodes it drained"
            ]
        )
    files.update(topology["files"])
    # Files the role wrote for an earlier topology that this one does not use (topology.yaml is
    # read whenever it exists, whatever slurm.conf says) go; a file of the site's own stays.
    stale = sorted(n for n, text in live_topology.items() if n not in topology["files"] and text.startswith(HEADER))
    topology_changed = any(topology["files"].get(n, "") != live_topology.get(n, "") for n in TOPOLOGY_FILES)

    lost_services = losses(reference, files["slurm.conf"], _names(cluster.get("removed"))) if reference else []
    if lost_services:
        raise SlurmPlanError(lost_services)
    plan = (
        change_plan(reference, files["slurm.conf"], version_text, topology_changed=topology_changed)
        if reference
        else {
            "restart": [],
            "reconfigure": False,
            "reasons": [],
            "added_nodes": sorted(nodes),
            "removed_nodes": [],
            "removed_partitions": [],
            "resized_nodes": [],
            "bad_config_kills_slurmctld": bool(row.get("bad_config_kills_slurmctld")),
        }
    )
    report = []
    if partial:
        report.append(
            "this run does not hold the whole cluster (outside it: "
            f"{compress(sorted(outside))}): existing node and partition lines are "
            "kept as they are live"
        )
    for label, names in (
        ("failed or unreachable, definitions kept", [h for h in lost if h in live]),
        ("failed or unreachable, not yet defined", [h for h in lost if h not in live and h in compute]),
        ("kept from the live slurm.conf (no fresh record)", kept),
        ("no longer in the compute group but kept", orphans),
        ("not yet configurable (no record, not in slurm.conf)", [h for h in missing if h not in lost]),
        ("added", added if reference else []),
        ("removed on purpose", removed),
    ):
        if names:
            report.append(f"{label}: {', '.join(names)}")
    if len(mixed) > 1:
        report.append(
            f"hosts run different Slurm releases ({', '.join(mixed)}): planned with the rules of {version_text}"
        )
    report.extend(topology["report"])
    conf_dir = str(cluster.get("conf_dir") or "/etc/slurm")
    conf_files, conf_absent = _conf_files(cluster, files, topology["files"], version_text)
    conf_absent += [{"name": n, "path": f"{conf_dir}/{n}", "state": "absent"} for n in stale]
    conf_sha = {f["name"]: _sha256(f["content"]) for f in conf_files}
    last_good_dir = str(cluster.get("last_good_dir") or "/var/lib/oci-gpu-cluster/slurm-last-good")
    by_name = {f["name"]: f for f in conf_files}
    host_entries = _hosts(cluster, m, probes, conf_sha)
    for host, entry in host_entries.items():
        entry["node_files"] = host_node_files(containers, version_text, conf_dir, probes.get(host))
    local = node_files(containers, version_text, conf_dir)
    check_host = next(
        (h for h in compute if h in fresh and h not in removed_on_purpose), ctl_standing[0] if ctl_standing else ""
    )
    check_live_dir = _check_live_dir(host_entries.get(check_host), conf_dir)
    units = unit_files(
        str(settings.get("StateSaveLocation") or ""),
        list(hosts.get("controllers") or []),
        bool(cluster.get("configless")),
        str(cluster.get("slurmd_defaults_file") or "/etc/default/slurmd"),
    )
    return {
        # The configuration files of every host that has them (a configless compute node fetches
        # them from slurmctld), with their final content, and the role's files that go.
        "conf_files": conf_files,
        "conf_files_absent": conf_absent,
        # What every node keeps itself (a configless slurmd fetches none of it), the same on every host of
        # the roles each names: the root prologs and epilog, enroot.conf (slurm/_node_files). What differs
        # per host (pyxis.conf, the sysctl file) is in hosts[...].node_files.
        "node_directories": local["directories"],
        "node_files": local["files"],
        # The systemd drop-ins and the configless slurmd's defaults (slurm/_role_settings.unit_files).
        "unit_directories": units["directories"],
        "unit_files": units["files"],
        # The container and GPU job map settings against this release; the role refuses them by name.
        "container_problems": container_problems(
            container_settings(containers, cluster.get("config"), conf_dir), version_text
        ),
        # What the daemons will have applied once this run's restarts and reconfigures succeed.
        "conf_sha256": conf_sha,
        # The copies a failed restart puts back (tasks/restart.yml), by name.
        "last_good_files": [
            {"name": f"last-good {n}", "path": f"{last_good_dir}/{n}", "content": by_name[n]["content"]}
            if n in by_name
            else {"name": f"last-good {n}", "path": f"{last_good_dir}/{n}", "state": "absent"}
            for n in LAST_GOOD_FILES
        ],
        "last_good_names": [n for n in LAST_GOOD_FILES if n in by_name],
        # Per standing host: what its restart schedule needs (slurm/_schedule.host_schedule).
        "hosts": host_entries,
        "files": files,
        "files_absent": stale,
        "topology": {k: topology[k] for k in ("mode", "plugin") if k in topology}
        | {"blocks": topology.get("blocks", 0), "switches": topology.get("switches", 0)},
        "settings": settings,
        "slurm_user": _slurm_user(settings),
        "dbd_log_dir": _dbd_log_dir(settings),
        # slurm.conf's PrivateData alone does not hide sacct's answers: slurmdbd.conf needs its own
        "dbd_private_data": private_data_dbd(settings.get("PrivateData")),
        "directories": _directories(settings, conf_dir),
        "version": version_text,
        "nodes": {
            "defined": sorted(nodes),
            "kept": sorted(kept),
            "orphans": orphans,
            "missing": sorted(missing),
            "added": sorted(added),
            "removed": removed,
            "lost": sorted(lost),
            "outside_run": sorted(outside),
        },
        "partial": partial,
        # the power-saving agent's node sets (slurm/_elastic.agent_nodesets) and settings
        "elastic": {
            "nodes": elastic["names"],
            "nodesets": agent_nodesets(elastic.get("nodesets") or []),
            "settings": elastic.get("settings") or {},
        },
        "live_source": live_sources[0] if live_sources else "",
        # The host that checks the candidate with the installed Slurm before any file changes: a
        # standing compute host with a fresh record runs slurmd -G; else a controller checks plugins.
        "check_host": check_host,
        # Whether its live files differ from the candidate (from its probe): the same bytes would be
        # checked by nothing (slurm_config_check skips them), so the role then makes no call at all.
        "check_needed": _check_needed(conf_sha, probes.get(check_host) or {}, check_live_dir),
        # where that check reads the host's live files
        "check_live_dir": check_live_dir,
        "plan": plan,
        # oci.conf's template series for this release (slurm/_containers.oci_series)
        "oci_series": oci_series(version_text) if version_text else "",
        "report": report,
    }
