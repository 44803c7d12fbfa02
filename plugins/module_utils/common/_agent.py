# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""What the controller's agents share (``repair/_agent``, ``power/_agent``): one owner for the state file,
the pass lock, the audit line and the command line.

Pure Python, standard library only, importable on Python 3.8+.

``load_records(path, error)`` / ``save_records(path, records, sync_dir=False)``
    The state file: ``{"version": 1, "records": {...}}``, written ahead of any action (temporary file,
    fsync, rename; ``sync_dir`` fsyncs the directory too). A file that cannot be read raises ``error``:
    the agent fails closed.
``pass_lock(state_file)``
    A context manager that yields whether this pass holds the state file's lock (a second pass at the
    same time gets ``False`` and does nothing).
``audit_line(now, **fields)`` / ``append_audit(path, line)``
    One JSON line per action in the audit log (none without a path: the dry run).
``run_command(argv, timeout, stdin=None)``
    Runs ``argv`` (never a shell); a timeout or a missing program is rc 124 / 127 with the reason.
``short_error(exc)``
    An exception in one line for the log: OCI's status and message when it has them.
``cli(argv, ...)``
    ``--config`` and ``--dry-run``, one pass, its summary on stdout as one JSON line; rc 2 on a
    configuration error, 1 when an action failed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

SKIPPED_LOCKED = "another pass holds the lock"


def load_records(path: str, error: type[Exception]) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # a state file that cannot be read stops the agent: fail closed
        raise error(f"state file {path} cannot be read ({exc}): nothing done") from exc
    return dict(data.get("records") or {})


def save_records(path: str, records: Mapping[str, Any], sync_dir: bool = False) -> None:
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"version": 1, "records": records}, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    if not sync_dir:
        return
    dfd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


@contextlib.contextmanager
def pass_lock(state_file: str) -> Iterator[bool]:
    os.makedirs(os.path.dirname(state_file) or ".", mode=0o700, exist_ok=True)
    lock_fd = os.open(state_file + ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(lock_fd)


def audit_line(now: float, **fields: Any) -> dict[str, Any]:
    return {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), **fields}


def append_audit(path: str | None, line: Mapping[str, Any]) -> None:
    if not path:
        return
    os.makedirs(os.path.dirname(path) or ".", mode=0o750, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, sort_keys=True, default=str) + "\n")


def run_command(argv: Sequence[str], timeout: float, stdin: str | None = None) -> tuple[int, str, str]:
    """Run ``argv`` (never a shell); a timeout or a missing program is rc 124 / 127 with the reason."""
    try:
        res = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]} timed out after {timeout:g} s"
    except OSError as exc:
        return 127, "", f"{argv[0]}: {exc}"
    return res.returncode, res.stdout, res.stderr


def short_error(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    message = getattr(exc, "message", None) or str(exc)
    return (f"{status} " if status else "") + str(message).splitlines()[0][:300]


def cli(
    argv: Sequence[str] | None,
    *,
    prog: str,
    description: str,
    config: str,
    load_config: Callable[[str], dict[str, Any]],
    make_clients: Callable[[Any], Any],
    run_pass: Callable[..., dict[str, Any]],
    errors: tuple[type[Exception], ...],
    hidden: Sequence[str] = (),
) -> int:
    """One pass from the command line; ``hidden``: action keys the summary leaves out."""
    import argparse

    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--config", default=config)
    ap.add_argument("--dry-run", action="store_true", help="print the plan; change nothing")
    args = ap.parse_args(argv)
    try:
        cfg = load_config(args.config)
        out = run_pass(cfg, clients=make_clients(cfg), dry_run=args.dry_run)
    except errors as exc:
        sys.stderr.write(json.dumps({"error": str(exc)}) + "\n")
        return 2
    plan = out["plan"] or {}
    summary = {
        "dry_run": args.dry_run,
        "skipped": out["skipped"],
        "actions": [{k: v for k, v in a.items() if k not in hidden} for a in plan.get("actions", [])],
        "notes": plan.get("notes", []),
        "results": out["results"],
    }
    sys.stdout.write(json.dumps(summary, sort_keys=True, default=str) + "\n")
    return 1 if any(r.get("result") == "error" for r in out["results"]) else 0
