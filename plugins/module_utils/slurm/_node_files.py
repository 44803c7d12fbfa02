# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The files every Slurm node keeps itself, as pure functions: a configless slurmd fetches none of them.

The plan (``slurm/_plan.plan_cluster``) returns them with the configuration files, so the role writes
them in its one ``slurm_files`` call per host and renders nothing itself.

Public API
----------
``node_files(settings, version, conf_dir) -> dict``
    ``directories`` and ``files`` (``slurm_files`` entries) that are the same on every host of the
    roles each names: the root prolog that makes the container runtimes' per-user directories, the
    GPU job map's prolog and epilog (DCGM's ``hpc_job`` label), and ``enroot.conf``. A feature that
    is off leaves its files ``absent_if_managed``: the role's own file goes, a site's stays.
``host_node_files(settings, version, conf_dir, probe) -> list``
    What differs per host, where its feature is on: ``plugstack.conf.d/pyxis.conf`` (the plugin path
    the host's probe found) and the user-namespace sysctl file (never lower than the limits the probe
    read). Off, both are in ``node_files`` as ``absent_if_managed``.
``pyxis_problems(settings, version, probes) -> list``
    A pyxis that is missing, or built for another Slurm release than a host runs, named per host.

``enabled(settings, key)``, ``containers_on(settings)``, ``job_map_dir(settings)``, ``prolog_dir(conf_dir)``,
``epilog_dir(conf_dir)``, ``MANAGED``
    How these files read the settings (a setting is on as Ansible's ``bool`` reads it), where the
    role's prologs and epilogs live, and the comment every file the role manages starts with
    (``slurm/_role_settings`` reads them the same way).

``settings`` are the role's container settings (the plan's ``containers`` option): ``oci_enabled``,
``oci_state_dir``, ``pyxis_enabled``, ``pyxis_plugin``, ``pyxis_args``, ``pyxis_packages``,
``enroot_base_dir``, ``enroot_config`` and ``job_map_dir`` (empty: no GPU job map).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._containers import (
    enroot_paths,
    oci_series,
    pyxis_version_problem,
)

__all__ = [
    "MANAGED",
    "containers_on",
    "containers_prolog_path",
    "enabled",
    "epilog_dir",
    "host_node_files",
    "job_map_dir",
    "node_files",
    "prolog_dir",
    "pyxis_problems",
]

MANAGED = "# Managed by Ansible (oci_gpu.cluster.slurm)"
CONTAINERS_PROLOG = "oci-gpu-containers.sh"
JOB_MAP_SCRIPT = "oci-gpu-job-map.sh"
ENROOT_CONF = "/etc/enroot/enroot.conf"
SYSCTL_CONF = "/etc/sysctl.d/90-oci-gpu-containers.conf"
# What rootless containers (crun, enroot) need of the kernel; a node that has more keeps it.
COMPUTE = ["compute"]
USERNS_LIMITS = {"user.max_user_namespaces": 65536, "user.max_mnt_namespaces": 65536}

_CONTAINERS_PROLOG_HEAD = f"""#!/bin/sh
{MANAGED}: per-user directories the job user's container
# runtimes need, made as root before the job starts (a batch job has no login session, so
# systemd's /run/user/<uid> does not exist). A parent is 0755 root, a user's own
# directory 0700. The enroot base may be world-writable scratch: every directory this script trusts
# must be a real directory (never a link), owned by root and writable by root alone; anything else
# was planted by a user and is refused, logged, and left untouched (the prolog fails: Slurm drains
# the node with the reason and holds the job). The user's directory is chowned without following links.
# Several jobs of one user start on a node at once, each running this: every step tolerates
# another prolog having made the directory first.
set -eu
refuse() {{
  logger -p auth.warning -t oci-gpu-containers "job ${{SLURM_JOB_ID:-?}} (uid $SLURM_JOB_UID): refused $1" \
2>/dev/null || true
  echo "oci-gpu-containers prolog: refused $1" >&2
  exit 1
}}
# rootdir DIR: DIR exists (made here if missing), root's alone.
rootdir() {{
  mkdir -m 0755 "$1" 2>/dev/null || true
  if [ -L "$1" ]; then refuse "$1: a symbolic link"; fi
  if [ ! -d "$1" ]; then refuse "$1: not a directory and cannot be made (is its parent there?)"; fi
  set -- "$1" $(stat -c '%u %a' "$1")
  if [ "$2" != 0 ] || [ $((0$3 & 022)) -ne 0 ]; then refuse "$1: owned by uid $2 with mode $3, not root's alone"; fi
}}
# userdir PARENT DIR: PARENT is root's alone; DIR is the job user's, 0700.
userdir() {{
  rootdir "$1"
  mkdir -m 0700 "$2" 2>/dev/null || true
  if [ -L "$2" ] || [ ! -d "$2" ]; then refuse "$2: a symbolic link or not a directory"; fi
  set -- "$1" "$2" $(stat -c '%u' "$2")
  if [ "$3" != 0 ] && [ "$3" != "$SLURM_JOB_UID" ]; then refuse "$2: owned by uid $3"; fi
  chown -h "$SLURM_JOB_UID" "$2"
}}
"""

_JOB_MAP_PROLOG = f"""#!/bin/sh
{MANAGED}: the GPU-to-job map that NVIDIA's DCGM exporter reads
# (--hpc-job-mapping-dir) to put the Slurm job id on each GPU's series (label hpc_job). One file per GPU
# of this node, named by its index (Slurm's SLURM_JOB_GPUS: the gres index, the device's minor number),
# holding the ids of the jobs on it, one per line; the epilog takes the job out again.
# A label is not worth a job: whatever goes wrong here is logged and the job starts all the same.
dir={{dir}}
[ -n "${{SLURM_JOB_GPUS:-}}" ] || exit 0
note() {{ logger -p daemon.warning -t oci-gpu-job-map "job ${{SLURM_JOB_ID:-?}}: $1" 2>/dev/null || true; }}
umask 022
mkdir -p "$dir" 2>/dev/null
if [ -L "$dir" ] || [ ! -d "$dir" ] || [ "$(stat -c %u "$dir")" != 0 ]; then
  note "$dir is not a directory of root's: no GPU job map"; exit 0
fi
for gpu in $(echo "$SLURM_JOB_GPUS" | tr ',' ' '); do
  case "$gpu" in ''|*[!0-9]*) note "GPU index '$gpu' skipped"; continue ;; esac
  (
    flock -w 10 9 || note "no lock on $dir/.lock"
    printf '%s\\n' "$SLURM_JOB_ID" >> "$dir/$gpu" || note "cannot write $dir/$gpu"
  ) 9>>"$dir/.lock"
done
exit 0
"""

_JOB_MAP_EPILOG = f"""#!/bin/sh
{MANAGED}: takes the ending job out of the GPU-to-job map the prolog
# wrote for NVIDIA's DCGM exporter (every GPU's file: the epilog does not need to know which GPUs the job
# had). Whatever goes wrong here is logged; the node is never drained for it.
dir={{dir}}
[ -d "$dir" ] && [ ! -L "$dir" ] || exit 0
note() {{ logger -p daemon.warning -t oci-gpu-job-map "job ${{SLURM_JOB_ID:-?}}: $1" 2>/dev/null || true; }}
case "${{SLURM_JOB_ID:-}}" in ''|*[!0-9_]*) exit 0 ;; esac
(
  flock -w 10 9 || note "no lock on $dir/.lock"
  for file in "$dir"/*; do
    case "${{file##*/}}" in ''|*[!0-9]*) continue ;; esac
    [ -f "$file" ] && [ ! -L "$file" ] || continue
    grep -qx "$SLURM_JOB_ID" "$file" || continue
    grep -vx "$SLURM_JOB_ID" "$file" > "$file.new"
    if [ -s "$file.new" ]; then mv -f "$file.new" "$file"; else rm -f "$file" "$file.new"; fi
  done
) 9>>"$dir/.lock"
exit 0
"""


def enabled(settings: Mapping[str, Any], key: str) -> bool:
    return boolean(settings.get(key), strict=False)


def containers_on(settings: Mapping[str, Any]) -> bool:
    return enabled(settings, "oci_enabled") or enabled(settings, "pyxis_enabled")


def job_map_dir(settings: Mapping[str, Any]) -> str:
    return str(settings.get("job_map_dir") or "").strip()


def prolog_dir(conf_dir: str) -> str:
    return f"{conf_dir}/prolog.d"


def epilog_dir(conf_dir: str) -> str:
    return f"{conf_dir}/epilog.d"


def containers_prolog_path(conf_dir: str) -> str:
    """The root prolog that makes each job user's container directories (oci.conf names it too)."""
    return f"{prolog_dir(conf_dir)}/{CONTAINERS_PROLOG}"


def containers_prolog_text(settings: Mapping[str, Any], version: Any) -> str:
    """The root prolog: crun's per-user state directory, enroot's per-user paths."""
    lines = [_CONTAINERS_PROLOG_HEAD]
    if enabled(settings, "oci_enabled"):
        state = shlex.quote(str(settings.get("oci_state_dir") or ""))
        who = "$SLURM_JOB_USER" if oci_series(version) == "22.05" else "$SLURM_JOB_UID"
        lines.append(f'# crun\'s state (oci.conf --root)\nuserdir {state} {state}/"{who}"\n')
    if enabled(settings, "pyxis_enabled"):
        paths = enroot_paths(str(settings.get("enroot_base_dir") or "").strip())
        lines.append("# enroot's runtime, data and cache paths (enroot.conf), on local scratch when there is one\n")
        lines.append(f"rootdir {shlex.quote(paths['top'])}\n")
        for parent in paths["parents"].split():
            lines.append(f'userdir {shlex.quote(parent)} {shlex.quote(parent)}/"user-$SLURM_JOB_UID"\n')
    lines.append("exit 0\n")
    return "".join(lines)


def job_map_texts(directory: str) -> tuple[str, str]:
    """The GPU job map's prolog and epilog for a map directory."""
    quoted = shlex.quote(directory)
    return _JOB_MAP_PROLOG.replace("dir={dir}", f"dir={quoted}"), _JOB_MAP_EPILOG.replace("dir={dir}", f"dir={quoted}")


def enroot_conf_text(settings: Mapping[str, Any], conf_dir: str) -> str:
    base = str(settings.get("enroot_base_dir") or "").strip()
    paths = enroot_paths(base)
    text = (
        f"{MANAGED}: enroot, per user under {base}\n"
        f"# (the Slurm prolog {containers_prolog_path(conf_dir)} makes each job user's directories as root).\n"
    )
    text += "".join(f"{key} {paths[key]}\n" for key in ("ENROOT_RUNTIME_PATH", "ENROOT_DATA_PATH", "ENROOT_CACHE_PATH"))
    return text + "".join(f"{key} {value}\n" for key, value in (settings.get("enroot_config") or {}).items())


def _arg(value: Any) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


def pyxis_conf_text(version: str, path: str, args: Mapping[str, Any] | None) -> str:
    own = "".join(f" {key}={_arg(value)}" for key, value in (args or {}).items())
    return (
        f"{MANAGED}: pyxis (srun --container-image), built for Slurm {version}.\n"
        f"required {path}{own}\n\n"  # the blank line the role's template ended with: no rewrite on upgrade
    )


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def userns_sysctl_text(now: Mapping[str, Any] | None) -> str:
    """The user-namespace limits rootless containers need, never lower than ``now`` (the probe's read)."""
    now = now or {}
    text = f"{MANAGED}: user namespaces for rootless containers (crun,\n# enroot), never lower than the node had.\n"
    return text + "".join(f"{key} = {max(wanted, _int(now.get(key)))}\n" for key, wanted in USERNS_LIMITS.items())


def _file(name: str, path: str, roles: list[str], on: bool, content: str, mode: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "path": path, "roles": roles}
    if mode:
        entry["mode"] = mode
    entry["content"] = content if on else ""
    entry["state"] = "present" if on else "absent_if_managed"
    return entry


def node_files(settings: Mapping[str, Any], version: Any, conf_dir: str) -> dict[str, list[dict[str, Any]]]:
    """The directories and files every node of the named roles keeps the same (module doc)."""
    containers, pyxis = containers_on(settings), enabled(settings, "pyxis_enabled")
    job_map = job_map_dir(settings)
    prologs, epilogs = prolog_dir(conf_dir), epilog_dir(conf_dir)
    dirs: list[dict[str, Any]] = []
    if containers or job_map:
        dirs.append({"path": prologs, "owner": "root", "mode": "0755", "roles": ["compute"]})
    if job_map:
        dirs.append({"path": epilogs, "owner": "root", "mode": "0755", "roles": ["compute"]})
    if pyxis:
        dirs.append({"path": f"{conf_dir}/plugstack.conf.d", "owner": "root", "mode": "0755", "roles": []})
        dirs.append({"path": "/etc/enroot", "owner": "root", "mode": "0755", "roles": ["compute"]})
    map_prolog, map_epilog = job_map_texts(job_map) if job_map else ("", "")
    files = [
        _file(
            f"prolog {CONTAINERS_PROLOG}",
            containers_prolog_path(conf_dir),
            ["compute"],
            containers,
            containers_prolog_text(settings, version) if containers else "",
            "0755",
        ),
        _file(f"prolog {JOB_MAP_SCRIPT}", f"{prologs}/{JOB_MAP_SCRIPT}", COMPUTE, bool(job_map), map_prolog, "0755"),
        _file(f"epilog {JOB_MAP_SCRIPT}", f"{epilogs}/{JOB_MAP_SCRIPT}", COMPUTE, bool(job_map), map_epilog, "0755"),
        _file("enroot.conf", ENROOT_CONF, ["compute"], pyxis, enroot_conf_text(settings, conf_dir) if pyxis else ""),
    ]
    # Off, the per-host files go the same way everywhere (host_node_files then has nothing for them).
    if not pyxis:
        files.append(_file("plugstack.conf.d/pyxis.conf", f"{conf_dir}/plugstack.conf.d/pyxis.conf", [], False, ""))
    if not containers:
        files.append(_file("sysctl containers", SYSCTL_CONF, ["compute"], False, ""))
    return {"directories": dirs, "files": files}


def _pyxis_path(settings: Mapping[str, Any], probe: Mapping[str, Any]) -> str:
    """Where this host's pyxis is: where its probe found it, else the path the settings give."""
    found = probe.get("pyxis") or {}
    return str(found.get("path") or settings.get("pyxis_plugin") or "")


def host_node_files(
    settings: Mapping[str, Any], version: str, conf_dir: str, probe: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """pyxis.conf and the sysctl file of one host, where their features are on (module doc)."""
    probe = probe or {}
    out = []
    if enabled(settings, "pyxis_enabled"):
        text = pyxis_conf_text(version, _pyxis_path(settings, probe), settings.get("pyxis_args"))
        out.append(_file("plugstack.conf.d/pyxis.conf", f"{conf_dir}/plugstack.conf.d/pyxis.conf", [], True, text))
    if containers_on(settings):
        text = userns_sysctl_text(probe.get("userns_limits"))
        out.append(_file("sysctl containers", SYSCTL_CONF, ["compute"], True, text))
    return out


def pyxis_problems(settings: Mapping[str, Any], version: str, probes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The hosts whose probe read pyxis (compute and login hosts with pyxis on) and found it missing or
    built for another release than the host runs (its probe's version, else the plan's)."""
    if not enabled(settings, "pyxis_enabled"):
        return []
    out = []
    for host in sorted(probes):
        read = (probes[host] or {}).get("pyxis")
        if not read:
            continue
        if read.get("error"):
            out.append(f"{host}: pyxis {read['error']} (check slurm_pyxis_plugin)")
            continue
        problem = pyxis_version_problem(
            read.get("version") or None,
            probes[host].get("slurm_version") or version,
            _pyxis_path(settings, probes[host]),
            host,
            bool(read.get("found")),
            settings.get("pyxis_packages") or (),
        )
        if problem:
            out.append(problem)
    return out
