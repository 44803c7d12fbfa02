# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Pure decisions of the lustre_client role and the Lustre lookups: LNet NIDs, mount specs and what
a client mounts. Standard library only (Python 3.8+).
"""

from __future__ import annotations

import re
from typing import Any

LNET_NETWORK = re.compile(r"^(tcp|o2ib)[0-9]*$")
LUSTRE_STATES = ("mounted", "present", "unmounted", "absent")
FSNAME = re.compile(r"^[A-Za-z0-9_-]{1,8}$")


def lustre_nid(address: str, lnet: str = "tcp") -> str:
    """``10.0.0.20`` + ``tcp`` → ``10.0.0.20@tcp``; an address that already names its network is kept.

    Failover MGS nodes are separated by ``:``, several NIDs of one node by ``,`` (both kept)."""
    nodes = []
    for node in (address or "").strip().split(":"):
        nids = [n.strip() if "@" in n else f"{n.strip()}@{lnet or 'tcp'}" for n in node.split(",") if n.strip()]
        if nids:
            nodes.append(",".join(nids))
    return ":".join(nodes)


def lustre_mount_spec(mgs: str, fsname: str, lnet: str = "tcp") -> str:
    """The mount source ``<mgs nid>:/<fsname>``."""
    return f"{lustre_nid(mgs, lnet)}:/{fsname}"


def lustre_mounts(
    mounts: Any,
    *,
    host: str,
    resolved: dict[str, dict[str, Any]] | None = None,
    default_options: str = "defaults,_netdev,nofail",
    mount_timeout: int = 60,
) -> dict[str, Any]:
    """Validate ``lustre_client_mounts`` and build the fstab entries.

    ``resolved`` maps a Lustre file system OCID to what ``lustre_file_system_info`` returned for
    it (``management_service_address``, ``file_system_name``, ``lnet``); ``None`` means not looked
    up yet (a first pass that checks everything else). Returns ``{"errors": [...], "mounts": [{path,
    src, fstype, opts, state, fsname, mgs_nid}], "to_resolve": [OCIDs to look up]}``.
    """
    errors: list[str] = []
    out: list[dict[str, Any]] = []
    to_resolve: list[str] = []
    first_pass = resolved is None
    resolved = resolved or {}
    if not isinstance(mounts, list):
        return {
            "errors": [f"lustre_client_mounts on host {host} must be a list, got {mounts!r}."],
            "mounts": [],
            "to_resolve": [],
        }
    seen: set[str] = set()
    for idx, m in enumerate(mounts):
        where = f"lustre_client_mounts[{idx}] on host {host}"
        if not isinstance(m, dict):
            errors.append(f"{where} is {m!r}: give a dict with path and mgs_nid + fsname or lustre_file_system_id.")
            continue
        unknown = sorted(set(m) - {"path", "mgs_nid", "fsname", "lustre_file_system_id", "options", "state", "lnet"})
        if unknown:
            errors.append(f"{where} has unknown key(s) {', '.join(unknown)}.")
        path = str(m.get("path") or "")
        if not path.startswith("/") or path == "/":
            errors.append(f"{where}: path is {path!r}; give an absolute mount point other than /.")
        if path in seen:
            errors.append(f"{where}: path {path} is mounted twice.")
        seen.add(path)
        state = m.get("state", "mounted")
        if state not in LUSTRE_STATES:
            errors.append(f"{where}: state is {state!r}; use one of {', '.join(LUSTRE_STATES)}.")
        mgs = str(m.get("mgs_nid") or "")
        fsname = str(m.get("fsname") or "")
        lnet = str(m.get("lnet") or "tcp")
        fs_id = str(m.get("lustre_file_system_id") or "")
        if mgs and fs_id:
            errors.append(f"{where} gives both mgs_nid ({mgs}) and lustre_file_system_id ({fs_id}); give one.")
        elif fs_id:
            info = resolved.get(fs_id)
            if fs_id not in to_resolve:
                to_resolve.append(fs_id)
            if first_pass:
                fsname = fsname or "pending"
            elif not info:
                errors.append(
                    f"{where}: lustre_file_system_id {fs_id} was not resolved through the OCI API "
                    f"(not found, or not visible with lustre_client_oci_api)."
                )
            else:
                mgs = str(info.get("management_service_address") or "")
                lnet = str(info.get("lnet") or lnet)
                api_fsname = str(info.get("file_system_name") or "")
                if fsname and api_fsname and fsname != api_fsname:
                    errors.append(
                        f"{where}: fsname {fsname} differs from {api_fsname}, the name of {fs_id} in the OCI API."
                    )
                fsname = fsname or api_fsname
        elif not mgs and state in ("mounted", "present"):
            errors.append(f"{where}: give mgs_nid (e.g. 10.0.0.20@tcp) and fsname, or lustre_file_system_id.")
        if (mgs or state in ("mounted", "present")) and not FSNAME.match(fsname):
            errors.append(f"{where}: fsname is {fsname!r}; a Lustre fsname has 1 to 8 letters, digits, '_' or '-'.")
        if not LNET_NETWORK.match(lnet):
            errors.append(f"{where}: lnet is {lnet!r}; use tcp, tcpN, o2ib or o2ibN.")
        options = m.get("options")
        if options is None:
            opts = f"{default_options},x-systemd.automount,x-systemd.mount-timeout={int(mount_timeout)}"
        elif isinstance(options, list):
            opts = ",".join(str(o) for o in options)
        else:
            opts = str(options)
        out.append(
            {
                "path": path,
                "src": lustre_mount_spec(mgs, fsname, lnet) if mgs else "",
                "fstype": "lustre",
                "opts": opts,
                "state": state,
                "fsname": fsname,
                "mgs_nid": lustre_nid(mgs, lnet),
            }
        )
    return {"errors": errors, "mounts": out, "to_resolve": to_resolve}
