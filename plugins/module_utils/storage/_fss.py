# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""OCI File Storage: resolve file systems / mount targets to NFS sources, and NFS mount options.

Pure functions (unit-tested without the SDK) plus one reader that drives an SDK
``FileStorageClient`` / ``VirtualNetworkClient`` pair. Used by the ``fss_export_info`` module and,
through it, by the ``fss_mount`` role.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Options OCI documents for File Storage (NFSv3, TCP, 1 MiB transfers) and what keeps a boot or a
# play from hanging on an unreachable mount target: hard (never soft: silent data loss), _netdev,
# nofail, an automount with a mount timeout.
DEFAULT_OPTIONS = (
    "hard",
    "_netdev",
    "nofail",
    "x-systemd.automount",
    "nfsvers=3",
    "proto=tcp",
    "rsize=1048576",
    "wsize=1048576",
)
FLAG_OPPOSITES = {"hard": "soft", "soft": "hard", "ro": "rw", "rw": "ro", "auto": "noauto", "noauto": "auto"}


class FssError(Exception):
    """A resolution problem with a message fit for the user."""


def merge_options(*groups: list[str] | tuple[str, ...] | None) -> list[str]:
    """Merge option lists left to right: a later ``key=value`` replaces an earlier one with the same
    key, a later flag replaces its opposite (``soft`` after ``hard``); order of first appearance kept."""
    out: dict[str, str] = {}
    for group in groups:
        for raw in group or ():
            opt = str(raw).strip()
            if not opt:
                continue
            key = opt.split("=", 1)[0]
            opposite = FLAG_OPPOSITES.get(key)
            if opposite and opposite in out:
                del out[opposite]
            out[key] = opt
    return list(out.values())


def option_errors(options: list[str]) -> list[str]:
    """What makes an FSS mount unsafe or unusable, one message per problem."""
    errors = []
    keys = {o.split("=", 1)[0]: o for o in options}
    if "soft" in keys:
        errors.append("'soft' can lose written data on a network hiccup; File Storage mounts must be 'hard'")
    vers = keys.get("nfsvers") or keys.get("vers")
    if vers and vers.split("=", 1)[1] not in ("3",):
        errors.append(f"{vers!r}: OCI File Storage serves NFSv3")
    for key in ("rsize", "wsize", "nconnect", "x-systemd.mount-timeout", "timeo", "retrans"):
        if key in keys:
            value = keys[key].split("=", 1)[1] if "=" in keys[key] else ""
            if not value.isdigit() or int(value) <= 0:
                errors.append(f"{keys[key]!r}: {key} needs a positive whole number")
    if "nconnect" in keys and keys["nconnect"].split("=", 1)[-1].isdigit() and int(keys["nconnect"].split("=")[1]) > 16:
        errors.append(f"{keys['nconnect']!r}: Linux allows at most nconnect=16")
    return errors


def nfs_source(address: str, export_path: str) -> str:
    if not address:
        raise FssError("the mount target has no address")
    if not export_path.startswith("/"):
        raise FssError(f"export path {export_path!r} must start with '/'")
    return f"{address}:{export_path}"


def export_records(
    file_systems: dict[str, dict[str, Any]],
    exports: list[dict[str, Any]],
    mount_targets: list[dict[str, Any]],
    ip_of: Callable[[str], str],
    export_path: str | None = None,
) -> list[dict[str, Any]]:
    """Join exports with the mount targets serving their export set: one record per (export, mount
    target), sorted by path then mount target name. ``ip_of(private_ip_id)`` gives an address."""
    by_set: dict[str, list[dict[str, Any]]] = {}
    for mt in mount_targets:
        if mt.get("lifecycle_state", "ACTIVE") in ("ACTIVE", "UPDATING"):
            by_set.setdefault(mt.get("export_set_id") or "", []).append(mt)
    out = []
    for ex in exports:
        if ex.get("lifecycle_state", "ACTIVE") != "ACTIVE":
            continue
        if export_path and ex.get("path") != export_path:
            continue
        fs = file_systems.get(ex.get("file_system_id") or "", {})
        for mt in by_set.get(ex.get("export_set_id") or "", []):
            ips = mt.get("private_ip_ids") or []
            address = ip_of(ips[0]) if ips else ""
            out.append(
                {
                    "file_system_id": ex.get("file_system_id"),
                    "file_system_name": fs.get("display_name"),
                    "export_id": ex.get("id"),
                    "export_path": ex.get("path"),
                    "mount_target_id": mt.get("id"),
                    "mount_target_name": mt.get("display_name"),
                    "mount_target_ip": address,
                    "source": nfs_source(address, ex.get("path") or ""),
                }
            )
    return sorted(out, key=lambda r: (r["export_path"] or "", r["mount_target_name"] or "", r["mount_target_id"]))


def read_exports(
    fss: Any,
    vnet: Any,
    to_dict: Callable[[Any], Any],
    list_all: Callable[..., list[Any]],
    *,
    file_system_id: str | None = None,
    mount_target_id: str | None = None,
    export_path: str | None = None,
    compartment_id: str | None = None,
) -> list[dict[str, Any]]:
    """Exports of a file system and/or a mount target, with the mount target's private IP.

    ``list_all(method, **kwargs)`` pages a list call (``oci/_auth.list_pages``).
    """
    if not (file_system_id or mount_target_id):
        raise FssError("give file_system_id or mount_target_id")
    file_systems: dict[str, dict[str, Any]] = {}
    mount_targets: list[dict[str, Any]]
    if mount_target_id:
        mount_targets = [to_dict(fss.get_mount_target(mount_target_id).data)]
    if file_system_id:
        fs = to_dict(fss.get_file_system(file_system_id).data)
        file_systems[fs["id"]] = fs
        exports = [to_dict(e) for e in list_all(fss.list_exports, file_system_id=file_system_id)]
        if not mount_target_id:
            wanted_sets = {e.get("export_set_id") for e in exports}
            # Mount targets often sit in a network compartment: compartment_id says where to look.
            listed = list_all(
                fss.list_mount_targets,
                compartment_id=compartment_id or fs["compartment_id"],
                availability_domain=fs["availability_domain"],
            )
            mount_targets = [m for m in (to_dict(x) for x in listed) if m.get("export_set_id") in wanted_sets]
    else:
        mt = mount_targets[0]
        exports = [to_dict(e) for e in list_all(fss.list_exports, export_set_id=mt["export_set_id"])]
        for fs_id in sorted({e["file_system_id"] for e in exports if e.get("file_system_id")}):
            file_systems[fs_id] = to_dict(fss.get_file_system(fs_id).data)
    ips: dict[str, str] = {}

    def ip_of(private_ip_id: str) -> str:
        if private_ip_id not in ips:
            ips[private_ip_id] = vnet.get_private_ip(private_ip_id).data.ip_address
        return ips[private_ip_id]

    records = export_records(file_systems, exports, mount_targets, ip_of, export_path)
    if not records:
        what = " and ".join(
            f"{k} {v}"
            for k, v in (
                ("file system", file_system_id),
                ("mount target", mount_target_id),
                ("export path", export_path),
            )
            if v
        )
        raise FssError(f"no active export found for {what}")
    return records


MOUNT_KEYS = {
    "path",
    "target",
    "export_path",
    "file_system_id",
    "mount_target_id",
    "compartment_id",
    "options",
    "nconnect",
    "owner",
    "group",
    "mode",
    "state",
}


def resolution_key(mount: dict[str, Any]) -> str:
    """The key of a mount's API lookup in the role's resolved-exports map."""
    return "|".join(str(mount.get(k) or "") for k in ("file_system_id", "mount_target_id", "export_path"))


def ocid_lookups(mounts: list[Any], exclude: list[str] | tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The API lookups mounts given by OCID need, once each, minus the keys in ``exclude``."""
    out: dict[str, dict[str, Any]] = {}
    for m in mounts or []:
        if not isinstance(m, dict) or (m.get("state") or "mounted") == "absent":
            continue
        if not (m.get("file_system_id") or m.get("mount_target_id")):
            continue
        key = resolution_key(m)
        if key not in exclude and key not in out:
            out[key] = {
                "key": key,
                "path": m.get("path"),
                **{k: m.get(k) for k in ("file_system_id", "mount_target_id", "export_path", "compartment_id")},
            }
    return list(out.values())


def mount_plan(
    mounts: list[dict[str, Any]],
    *,
    options: list[str] | tuple[str, ...] = DEFAULT_OPTIONS,
    mount_timeout: int = 30,
    nconnect: int = 0,
    resolved: dict[str, list[dict[str, Any]]] | None = None,
    host: str = "",
    key: str = "fss_mount_mounts",
) -> list[dict[str, Any]]:
    """Validate the role's mounts and compute what to mount: ``[{path, src, address, opts, owner,
    group, mode, state}]``. Every refusal names ``key[i].field``, the value and the host."""
    resolved = resolved or {}
    where = f" on {host}" if host else ""
    plan: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for i, m in enumerate(mounts or []):
        name = f"{key}[{i}]"
        if not isinstance(m, dict):
            raise FssError(f"{name} = {m!r}{where}: each mount is a dict with at least 'path'")
        unknown = sorted(set(m) - MOUNT_KEYS)
        if unknown:
            known = ", ".join(sorted(MOUNT_KEYS))
            raise FssError(f"{name}{where}: unknown key(s) {', '.join(unknown)} (known: {known})")
        path = str(m.get("path") or "")
        if not path.startswith("/") or path == "/" or "//" in path or path.rstrip("/") != path:
            raise FssError(f"{name}.path = {path!r}{where}: give an absolute mount point such as /home")
        if path in seen:
            raise FssError(f"{name}.path = {path!r}{where}: already mounted by {key}[{seen[path]}]")
        seen[path] = i
        state = m.get("state") or "mounted"
        if state not in ("mounted", "present", "absent"):
            raise FssError(f"{name}.state = {state!r}{where}: use mounted, present or absent")
        by_ocid = bool(m.get("file_system_id") or m.get("mount_target_id"))
        if by_ocid and m.get("target"):
            raise FssError(f"{name}{where}: give either target (an address) or file_system_id/mount_target_id")
        if by_ocid:
            records = resolved.get(resolution_key(m))
            if not records:
                raise FssError(
                    f"{name}{where}: file system {m.get('file_system_id') or '-'} / mount target "
                    f"{m.get('mount_target_id') or '-'} was not resolved (no active export)"
                )
            paths = sorted({r["export_path"] for r in records})
            if len(paths) > 1:
                raise FssError(f"{name}{where}: several exports match ({', '.join(paths)}); set export_path")
            address, export_path = records[0]["mount_target_ip"], records[0]["export_path"]
        else:
            address = str(m.get("target") or "")
            export_path = str(m.get("export_path") or "")
            if not address and state != "absent":
                raise FssError(f"{name}.target{where}: missing; give the mount target's address or file_system_id")
            if not export_path.startswith("/") and state != "absent":
                raise FssError(f"{name}.export_path = {export_path!r}{where}: give the export path, such as /home")
        n = m.get("nconnect", nconnect) or 0
        extra = [f"x-systemd.mount-timeout={mount_timeout}"] + ([f"nconnect={n}"] if n else [])
        opts = merge_options(options, extra, [str(o) for o in m.get("options") or []])
        errors = option_errors(opts)
        if errors:
            raise FssError(f"{name}.options{where}: " + "; ".join(errors))
        plan.append(
            {
                "path": path,
                "src": f"{address}:{export_path}" if address else "",
                "address": address,
                "opts": ",".join(opts),
                "owner": m.get("owner"),
                "group": m.get("group"),
                "mode": None if m.get("mode") is None else str(m.get("mode")),
                "state": state,
            }
        )
    return plan
