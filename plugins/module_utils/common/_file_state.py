# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Whether a host's files are already as a ``slurm_files`` call would leave them, without the call.

Pure Python, standard library only, importable on Python 3.8+.

A converged host's ``slurm_files`` call changes nothing, yet costs a round trip on every run. So
``slurm_files`` keeps a record of what it manages (``write_record``: each path, file or directory,
and whether its content is a secret), the host's probe, a call made anyway, reads the record back
with the state of every path in it (``read_state``), and ``not_in_place`` says on the controller whether
the call would change anything. Where it cannot tell, it says no, and the call runs as before:

- a path the record does not hold (a new file, or no record yet);
- a secret's content (``slurmdbd.conf``): the probe never returns a digest of it;
- an owner, group or mode it cannot compare (a mode not given in octal), a symbolic link.

The comparison follows ``slurm_files``: the items for the node's roles (``wanted``), content by
SHA-256 of its UTF-8 bytes, owner and group by name or number (the group defaults to the owner),
the mode's permission bits; ``absent`` needs the path gone, ``absent_if_managed`` a managed file
gone.

``wanted(items, node_roles)``
    The items without roles, and those sharing a role with the node.
``record_items(directories, files, node_roles)``
    What ``write_record`` keeps: ``[{"path", "kind": "directory"|"file", "secret": bool}]``.
``write_record(path, items, module=None)``
    Writes the record (JSON, 0644) only when it differs, through ``_files.move_into_place`` when a
    module is given (SELinux context as for every other file a module writes); True when it wrote.
``read_state(record_path)``
    ``{path: state}`` for every path of the record, as it is now: ``kind`` (``directory``, ``file``,
    ``link``, ``other`` or ``absent``), ``owner``, ``group`` (names, numbers where a name is
    unknown), ``uid``, ``gid``, ``mode`` (``"0644"``), and for a file ``sha256`` (None for a secret)
    and ``managed`` (one of its first three lines carries the managed mark). ``{}`` without a record.
``not_in_place(directories, files, node_roles, state)``
    The paths a ``slurm_files`` call with these items would change, or cannot tell about; empty
    when it would change nothing.
``managed(path)``
    Whether one of the file's first three lines carries the managed mark (False when unreadable).
"""

from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import stat
import tempfile

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._files import move_into_place, read_json

MANAGED_MARK = "Managed by Ansible (oci_gpu.cluster"


def wanted(items, node_roles):
    roles = set(node_roles or [])
    return [i for i in items or [] if not i.get("roles") or set(i["roles"]) & roles]


def _is_secret(item):
    return item.get("secret_content") is not None


def record_items(directories, files, node_roles):
    out = [{"path": d["path"], "kind": "directory", "secret": False} for d in wanted(directories, node_roles)]
    out += [{"path": f["path"], "kind": "file", "secret": _is_secret(f)} for f in wanted(files, node_roles)]
    return out


def write_record(path, items, module=None):
    text = json.dumps({"version": 1, "items": items}, indent=1, sort_keys=True) + "\n"
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == text:
                return False
    except OSError:
        pass
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        if module is None:
            os.rename(tmp, path)
        else:
            move_into_place(module, tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


def _name(getter, number):
    try:
        return getter(number)[0]
    except KeyError:
        return str(number)


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def managed(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return any(MANAGED_MARK in handle.readline() for _line in range(3))
    except OSError:
        return False


def path_state(path, secret=False):
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {"kind": "absent"}
    except OSError:
        return {"kind": "other"}
    if stat.S_ISLNK(info.st_mode):
        return {"kind": "link"}
    kind = "directory" if stat.S_ISDIR(info.st_mode) else "file" if stat.S_ISREG(info.st_mode) else "other"
    out = {
        "kind": kind,
        "uid": info.st_uid,
        "gid": info.st_gid,
        "owner": _name(pwd.getpwuid, info.st_uid),
        "group": _name(grp.getgrgid, info.st_gid),
        "mode": f"{stat.S_IMODE(info.st_mode):04o}",
    }
    if kind == "file":
        try:
            out["sha256"] = None if secret else _sha256(path)
            out["managed"] = managed(path)
        except OSError:
            return {"kind": "other"}
    return out


def read_state(record_path):
    record = read_json(record_path)
    items = record.get("items") if isinstance(record, dict) and record.get("version") == 1 else None
    if not isinstance(items, list):
        return {}
    out = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            out[item["path"]] = path_state(item["path"], bool(item.get("secret")))
    return out


def _same_id(wanted_id, name, number):
    wanted_id = str(wanted_id)
    return int(wanted_id) == number if wanted_id.isdigit() else wanted_id == name


def _attrs_in_place(item, now, default_mode):
    owner = item.get("owner") or "root"
    group = item.get("group") or owner
    try:
        mode = int(str(item.get("mode") or default_mode), 8)
    except ValueError:
        return False
    return (
        _same_id(owner, now.get("owner"), now.get("uid"))
        and _same_id(group, now.get("group"), now.get("gid"))
        and now.get("mode") == f"{mode:04o}"
    )


def _file_in_place(item, now):
    state = item.get("state") or "present"
    if state == "absent":
        return now.get("kind") == "absent"
    if state == "absent_if_managed":
        return now.get("kind") == "absent" or (now.get("kind") == "file" and now.get("managed") is False)
    if now.get("kind") != "file" or _is_secret(item) or now.get("sha256") is None or item.get("content") is None:
        return False
    digest = hashlib.sha256(item["content"].encode("utf-8", errors="surrogateescape")).hexdigest()
    return digest == now["sha256"] and _attrs_in_place(item, now, "0644")


def not_in_place(directories, files, node_roles, state):
    state = state or {}
    out = []
    for item in wanted(directories, node_roles):
        now = state.get(item["path"])
        if not now or now.get("kind") != "directory" or not _attrs_in_place(item, now, "0755"):
            out.append(item["path"])
    for item in wanted(files, node_roles):
        now = state.get(item["path"])
        if not now or not _file_in_place(item, now):
            out.append(item["path"])
    return out
