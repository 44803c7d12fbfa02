# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""One run at a time (issue 43 item 7): the lock's take/take-over/release on the node and the staleness
judged on the control host (two real ansible-playbook runs: tests/functional)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common import _run_lock


def _run(n: int, host: str = "ws1", start: str = "100") -> dict:
    return {"run_id": f"{host}:{n}:{start}", "control_host": host, "pid": n, "start": start, "user": "ops",
            "play": "Check inputs", "started_at": 1000.0}  # fmt: skip


def test_take_take_over_and_release(tmp_path: Path) -> None:
    path = str(tmp_path / "state" / "run.lock")
    a, b = _run(11), _run(22)
    assert _run_lock.take(path, a) == (True, None, False)
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert _run_lock.take(path, a)[0] is True  # the same run, a second task: still its own
    taken, holder, replaced = _run_lock.take(path, b)
    assert (taken, holder["run_id"], replaced) == (False, "ws1:11:100", False)
    # a take-over names the run it replaces: another run's lock is never replaced by mistake
    assert _run_lock.take(path, b, replace="ws1:99:100")[0] is False
    assert _run_lock.take(path, b, replace="ws1:11:100") == (True, holder, True)
    assert json.loads(Path(path).read_text())["run_id"] == "ws1:22:100"
    assert _run_lock.release(path, "ws1:11:100") is False  # not a's any more
    assert _run_lock.release(path, "ws1:22:100") is True and not os.path.exists(path)
    assert _run_lock.release(path, "ws1:22:100") is False


def test_check_mode_writes_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "none" / "run.lock")
    assert _run_lock.take(path, _run(1), check=True) == (True, None, False)
    assert not (tmp_path / "none").exists()
    _run_lock.take(path, _run(1))
    before = sorted(os.listdir(tmp_path / "none"))
    assert _run_lock.take(path, _run(2), check=True)[0] is False
    assert _run_lock.release(path, "ws1:1:100", check=True) is True
    assert sorted(os.listdir(tmp_path / "none")) == before and os.path.exists(path)


def test_stale_only_when_the_run_is_over() -> None:
    me = _run(5)
    holder = _run(7)
    alive = {(7, "100")}

    def judge(h: dict, now: float, max_age: int = 3600) -> str:
        return _run_lock.stale(h, me, now, max_age, lambda p, s: (p, s) in alive)

    assert judge(holder, 2000.0) == ""  # the same control host, running
    alive.clear()
    assert judge(holder, 2000.0) == "its ansible-playbook process 7 on ws1 is gone"
    # a pid the kernel gave again is another process
    alive.add((7, "555"))
    assert judge(holder, 2000.0).startswith("its ansible-playbook process 7")
    # another control host: its processes cannot be seen from here; only the age tells
    other = _run(7, host="ws2")
    assert judge(other, 2000.0) == ""
    assert judge(other, 1000.0 + 3601) == "it is older than 3600 s"
    assert judge(other, 1000.0 + 3601, max_age=0) == ""
    assert judge({"run_id": "unreadable"}, 2000.0) == "the lock file cannot be read"


def test_process_start_reads_this_process() -> None:
    start = _run_lock.process_start(os.getpid())
    assert start.isdigit() and _run_lock.alive_here(os.getpid(), start)
    assert not _run_lock.alive_here(os.getpid(), str(int(start) + 1))
    assert _run_lock.process_start(2**22 + 12345) == ""
