# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Putting a written file in place, and reading one back (modules on the node).

Pure Python, standard library only, importable on Python 3.8+.

``move_into_place(module, tmp, path)``
    Renames ``tmp`` (written in the same directory) over ``path``, keeping the mode and owner the
    caller gave ``tmp``. AnsibleModule.atomic_move gives a file it creates the umask's mode (0644)
    and the caller's chmod comes after: a window in which a new munge key or slurmdbd.conf is
    readable by everyone. SELinux gets the path's default context, as atomic_move would give it.
``read_record(path)``
    A JSON object of strings the role keeps on a node (what the daemons applied, the nodes held
    DOWN); ``{}`` when missing or unreadable.
``read_json(path)``
    A JSON file's data; None when the path is empty, or the file missing, unreadable or not JSON.
``read_text(path, errors="replace")``
    A small text file's content (UTF-8, undecodable bytes handled by ``errors``); None when it is
    missing or unreadable.
"""

from __future__ import annotations

import json
import os


def move_into_place(module, tmp, path):
    context = module.selinux_default_context(path) if module.selinux_enabled() else None
    os.rename(tmp, path)
    if context is not None:
        module.set_context_if_different(path, context, False)


def read_json(path):
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def read_record(path):
    data = read_json(path)
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def read_text(path, errors="replace"):
    try:
        with open(path, encoding="utf-8", errors=errors) as handle:
            return handle.read()
    except OSError:
        return None
