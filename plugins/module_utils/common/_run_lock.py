# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""One playbook run at a time per cluster: a lock file on the primary controller.

Pure Python, standard library only, importable on Python 3.8+.

A run is named by its control host, the ansible-playbook process id and that process's start time
(``run_id`` ``host:pid:start``), so a process id the kernel gave again is another run.

``take(path, owner, replace="", check=False) -> (taken, holder, replaced)``
    On the node (the module): creates the lock atomically, or takes it over when it holds ``replace``
    (the run the caller judged stale), under an flock so two runs never both win.
``release(path, run_id, check=False) -> bool``
    Removes the lock when this run holds it (a lock another run took over is left).
``stale(holder, me, now, max_age, alive) -> str``
    On the control host (the action): why the holder's run is over, or "" when it may still be running:
    the same control host and its process gone (``alive(pid, start)`` false), or older than ``max_age`` s.
``describe(holder, now) -> str``
    The holder for a message: run, user, play, age.
"""

from __future__ import annotations

import fcntl
import json
import os

FIELDS = ("run_id", "control_host", "pid", "start", "user", "play", "started_at")


def _read(path):
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"run_id": "unreadable", "control_host": "?", "pid": 0}
    return data if isinstance(data, dict) else {"run_id": "unreadable", "control_host": "?", "pid": 0}


def _write(path, owner):
    tmp = f"{path}.{os.getpid()}.new"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({k: owner.get(k) for k in FIELDS}, fh, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


class _Guard:
    """An flock on ``<path>.flock`` for the read-decide-write of one take or release."""

    def __init__(self, path):
        self.path = path + ".flock"
        self.fd = -1

    def __enter__(self):
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)
        return False


def take(path, owner, replace="", check=False):
    """(taken, holder, replaced): ``holder`` is the lock's content before (None when there was none)."""
    if check:  # reads only: no lock file, no flock file
        holder = _read(path)
        if holder is None or holder.get("run_id") == owner["run_id"]:
            return True, holder, False
        replaced = bool(replace and holder.get("run_id") == replace)
        return replaced, holder, replaced
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, mode=0o755, exist_ok=True)
    with _Guard(path):
        holder = _read(path)
        if holder is None:
            if not check:
                _write(path, owner)
            return True, None, False
        if holder.get("run_id") == owner["run_id"]:
            return True, holder, False
        if replace and holder.get("run_id") == replace:
            if not check:
                _write(path, owner)
            return True, holder, True
        return False, holder, False


def release(path, run_id, check=False):
    if not os.path.exists(path):
        return False
    if check:
        return (_read(path) or {}).get("run_id") == run_id
    with _Guard(path):
        holder = _read(path)
        if holder is None or holder.get("run_id") != run_id:
            return False
        if not check:
            os.unlink(path)
        return True


def stale(holder, me, now, max_age, alive):
    if holder.get("run_id") == "unreadable":
        return "the lock file cannot be read"
    started = float(holder.get("started_at") or 0)
    if max_age and started and now - started > max_age:
        return f"it is older than {int(max_age)} s"
    if holder.get("control_host") == me.get("control_host"):
        pid, start = int(holder.get("pid") or 0), str(holder.get("start") or "")
        if not alive(pid, start):
            return f"its ansible-playbook process {pid} on {holder.get('control_host')} is gone"
    return ""


def describe(holder, now):
    started = float(holder.get("started_at") or 0)
    age = f", started {int(now - started)} s ago" if started else ""
    return (
        f"run {holder.get('run_id')} (ansible-playbook process {holder.get('pid')} on {holder.get('control_host')}, "
        f"user {holder.get('user') or '?'}, play {holder.get('play') or '?'!r}{age})"
    )


def process_start(pid):
    """The start time of process ``pid`` in clock ticks since boot (``/proc/<pid>/stat`` field 22); "" if none."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="utf-8") as fh:
            stat = fh.read()
    except (OSError, ValueError):
        return ""
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


def alive_here(pid, start):
    """Whether process ``pid`` on this host is still the one that started at ``start``."""
    return bool(pid) and process_start(pid) == str(start)
