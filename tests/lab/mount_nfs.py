#!/usr/bin/env python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""``mount.nfs`` stand-in for lab nodes (TEST ONLY; never installed by a role).

The lab's kernel has no NFS client, so ``mount -t nfs SERVER:/EXPORT DIR`` cannot reach the kernel.
``lab up`` diverts the distribution's ``mount.nfs`` (dpkg-divert, so installing nfs-common keeps it
aside) and puts this script in its place. It does what can be done for real, then stands in for the
rest:

1. refuses what ``mount.nfs`` refuses (a spec not in ``host:/dir`` form) and what this stand-in
   cannot honour (``nfsvers``/``vers`` other than 3: OCI File Storage speaks NFSv3);
2. talks real NFSv3 to the server with libnfs (``nfs-ls nfs://SERVER/EXPORT``: portmapper, MOUNT,
   READDIR), so an unreachable server or an unknown export fails as it would on a real node;
3. bind-mounts the export's directory from the lab's storage volume
   (``/var/lib/oci-gpu-lab/storage/nfs/<export>``, which the lab's NFS node serves and every lab
   node shares) onto DIR. Reads and writes therefore go to the same files the NFS server exports,
   but not over the NFS protocol. ``mount`` shows the bind (ext4/xfs), not ``nfs``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

STORAGE = "/var/lib/oci-gpu-lab/storage/nfs"
LOG = "/var/log/oci-gpu-lab-mount-nfs.log"
EX_USAGE, EX_FAIL = 1, 32  # mount.nfs's exit codes
PROBE_TIMEOUT = 10


def log(msg: str) -> None:
    try:
        with open(LOG, "a") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {msg}\n")
    except OSError:
        pass


def parse(argv: list[str]) -> tuple[str, str, list[str], set[str]]:
    """``mount.nfs remotetarget dir [-rvVwfnsh] [-o options]`` -> (spec, dir, options, flags)."""
    if len(argv) < 2:
        raise SystemExit(f"usage: {os.path.basename(sys.argv[0])} remotetarget dir [-rvVwfnsh] [-o nfsoptions]")
    spec, target = argv[0], argv[1]
    opts: list[str] = []
    flags: set[str] = set()
    rest = argv[2:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "-o" and i + 1 < len(rest):
            opts += [o for o in rest[i + 1].split(",") if o]
            i += 2
            continue
        if arg.startswith("-o") and len(arg) > 2:
            opts += [o for o in arg[2:].split(",") if o]
        elif arg.startswith("-"):
            flags.update(arg[1:])
        i += 1
    return spec, target, opts, flags


def main(argv: list[str]) -> int:
    spec, target, opts, flags = parse(argv)
    log(f"mount.nfs {spec} {target} -o {','.join(opts)}")
    server, sep, export = spec.partition(":")
    if not sep or not server or not export.startswith("/"):
        print(f"mount.nfs: remote share not in 'host:dir' format: {spec}", file=sys.stderr)
        return EX_USAGE
    for opt in opts:
        key, _eq, value = opt.partition("=")
        if key in ("nfsvers", "vers") and value not in ("3",):
            print(f"mount.nfs (lab stand-in): only NFSv3 is served here, not {opt}", file=sys.stderr)
            return EX_FAIL
    if not os.path.isdir(target):
        print(f"mount.nfs: mount point {target} does not exist", file=sys.stderr)
        return EX_FAIL
    try:
        probe = subprocess.run(
            ["nfs-ls", f"nfs://{server}{export}"], capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        print(f"mount.nfs: Connection timed out ({server}:{export}, {PROBE_TIMEOUT} s)", file=sys.stderr)
        return EX_FAIL
    if probe.returncode != 0:
        why = " ".join((probe.stderr or probe.stdout).split()) or "?"
        print(f"mount.nfs: access denied by server while mounting {spec}: {why}", file=sys.stderr)
        return EX_FAIL
    backing = os.path.join(STORAGE, export.strip("/"))
    if not os.path.isdir(backing):
        print(f"mount.nfs (lab stand-in): {spec} answers, but {backing} is not on this lab volume", file=sys.stderr)
        return EX_FAIL
    if "f" in flags:  # fake: everything but the mount
        return 0
    res = subprocess.run(["mount", "--bind", backing, target], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        print(f"mount.nfs: {res.stderr.strip()}", file=sys.stderr)
        return EX_FAIL
    if "ro" in opts or "r" in flags:
        subprocess.run(["mount", "-o", "remount,bind,ro", target], check=False)
    log(f"bound {backing} on {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
