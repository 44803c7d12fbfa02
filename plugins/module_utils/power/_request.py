# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The programs slurmctld runs for power saving (``oci-gpu-power-resume``, ``-suspend``, ``-resume-fail``):
each writes one request file into the spool directory and returns at once (see ``power/_agent``).
Standard library and the collection's hostlist code only, so a call costs milliseconds."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Sequence

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError, expand

ACTIONS = ("resume", "suspend", "resume-fail")
SPOOL_DIR = "/var/spool/oci-gpu-power"


class AgentError(Exception):
    """A configuration or state problem with a message fit for the log."""


def write_request(spool_dir: str, action: str, hostlist: str, now: float | None = None) -> str:
    """Write one request file atomically; returns its path. Raises AgentError on a bad hostlist."""
    if action not in ACTIONS:
        raise AgentError(f"unknown action {action!r}")
    try:
        nodes = expand(hostlist)
    except HostlistError as exc:
        raise AgentError(f"{action}: bad hostlist {hostlist!r}: {exc}") from exc
    stamp = time.time() if now is None else now
    name = f"{int(stamp * 1000):015d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    tmp = os.path.join(spool_dir, "." + name)
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"action": action, "nodes": nodes, "time": stamp}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o640)
    final = os.path.join(spool_dir, name)
    os.replace(tmp, final)
    return final


def program_main(action: str, argv: Sequence[str] | None = None, spool_dir: str | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write(f"usage: oci-gpu-power-{action} HOSTLIST\n")
        return 2
    try:
        path = write_request(spool_dir or SPOOL_DIR, action, args[0])
    except (AgentError, OSError) as exc:
        sys.stderr.write(f"oci-gpu-power-{action}: {exc}\n")
        return 1
    sys.stdout.write(f"oci-gpu-power-{action}: request {os.path.basename(path)} for {args[0]}\n")
    return 0
