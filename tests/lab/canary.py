# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Canaries for the secrets test (issue 15, TEST ONLY): fresh secret values, the forms a leak could
take, a scanner for files (here and inside a lab node) and a sampler of every process's command line.

A canary is a unique value used as a real secret (the munge key, the accounting password); a *hit*
is any of its forms - raw, base64, hex, and for a password its distinctive token alone (a leak cut
at the ``#``) and the form slurmdbd.conf escapes it to - found where no secret belongs. Patterns
reach a node's scanner on stdin, never on a command line.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Canary:
    name: str
    value: str
    extra: tuple[bytes, ...] = ()

    def forms(self) -> dict[str, bytes]:
        raw = self.value.encode()
        out = {"raw": raw, "base64": base64.b64encode(raw), "hex": binascii.hexlify(raw)}
        for i, b in enumerate(self.extra):
            out[f"form{i}"] = b
        return out


def munge_key_canary(name: str = "munge_key") -> Canary:
    """A binary key given as base64 (the munge key, the JWT key)."""
    key = secrets.token_bytes(64)
    text = base64.b64encode(key).decode()
    # the decoded key's bytes, in hex too (what od or a hex dump of the key file would show)
    return Canary(name, text, (key, binascii.hexlify(key)))


def password_canary(name: str = "db_password") -> Canary:
    token = "canary" + secrets.token_hex(8)
    value = f"{token} #pw x\\y"
    # the token alone catches a leak cut at the '#'; slurmdbd.conf holds the escaped, quoted form
    escaped = '"' + value.replace("\\", "\\\\").replace("#", "\\#") + '"'
    return Canary(name, value, (token.encode(), escaped.encode()))


def patterns(canaries: list[Canary]) -> dict[str, bytes]:
    return {f"{c.name}/{form}": b for c in canaries for form, b in c.forms().items()}


@dataclass
class ScanResult:
    files: int = 0
    bytes: int = 0
    hits: list[str] = field(default_factory=list)

    def add(self, other: ScanResult) -> None:
        self.files += other.files
        self.bytes += other.bytes
        self.hits.extend(other.hits)


# The scanner, as a program a node's python3 runs: JSON {"roots", "patterns", "since", "skip"} on stdin
# (patterns base64-encoded), JSON {"files", "bytes", "hits"} on stdout.
SCANNER = r"""
import base64, json, os, sys
req = json.load(sys.stdin)
pats = {k: base64.b64decode(v) for k, v in req["patterns"].items()}
since = req.get("since") or 0
skip = tuple(req.get("skip") or ())


def paths(root):
    if os.path.isfile(root):
        yield root
        return
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not os.path.join(top, d).startswith(skip)]
        for n in names:
            yield os.path.join(top, n)


out = {"files": 0, "bytes": 0, "hits": []}
for root in req["roots"]:
    for p in paths(root):
        try:
            st = os.lstat(p)
            if not os.path.isfile(p) or os.path.islink(p) or st.st_mtime < since or p.startswith(skip):
                continue
            with open(p, "rb") as f:
                data = f.read()
        except OSError:
            continue
        out["files"] += 1
        out["bytes"] += len(data)
        out["hits"].extend(p + ": " + k for k, v in pats.items() if v in data)
print(json.dumps(out))
"""


def _request(roots: list[str], pats: dict[str, bytes], since: float = 0, skip: tuple[str, ...] = ()) -> str:
    return json.dumps(
        {
            "roots": roots,
            "patterns": {k: base64.b64encode(v).decode() for k, v in pats.items()},
            "since": since,
            "skip": list(skip),
        }
    )


def scan_here(roots: list[str], pats: dict[str, bytes], since: float = 0, skip: tuple[str, ...] = ()) -> ScanResult:
    res = subprocess.run(
        ["python3", "-c", SCANNER],
        input=_request(roots, pats, since, skip),
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(res.stdout)
    return ScanResult(data["files"], data["bytes"], data["hits"])


def scan_node(container: str, roots: list[str], pats: dict[str, bytes], since: float = 0) -> ScanResult:
    res = subprocess.run(
        ["podman", "exec", "-i", container, "python3", "-c", SCANNER],
        input=_request(roots, pats, since),
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(res.stdout)
    return ScanResult(data["files"], data["bytes"], [f"{container}:{h}" for h in data["hits"]])


class CmdlineSampler:
    """Reads every process's /proc/<pid>/cmdline every ``interval`` seconds while running. The lab's
    nodes are containers on this kernel, so this host's /proc shows their processes too."""

    def __init__(self, pats: dict[str, bytes], interval: float = 0.3) -> None:
        self.pats = pats
        self.interval = interval
        self.samples = 0
        self.processes = 0
        self.bytes = 0
        self.hits: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CmdlineSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples += 1
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                try:
                    data = Path(entry.path, "cmdline").read_bytes()
                except OSError:
                    continue
                self.processes += 1
                self.bytes += len(data)
                for k, v in self.pats.items():
                    if v in data:
                        self.hits.add(f"pid {entry.name} ({data[:60]!r}...): {k}")
            time.sleep(self.interval)
