# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""One run at a time (issue 43 item 7): two real ansible-playbook runs of the action plugin - the second
refused while the first holds the lock, a dead run's lock taken over."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

from ansible_harness import start_playbook


def _playbook(tmp: Path, name: str, lock: Path, pause: float) -> Path:
    play = [
        {
            "name": f"Run {name}",
            "hosts": "all",
            "gather_facts": False,
            "tasks": [
                {"name": "Take the lock", "oci_gpu.cluster.run_lock": {"path": str(lock)}, "register": "lock"},
                {"name": "Show", "ansible.builtin.debug": {"msg": "REPLACED {{ lock.replaced }}"}},
                {"name": "Hold it", "ansible.builtin.wait_for": {"timeout": pause}, "when": pause > 0},
                {"name": "Give it back", "oci_gpu.cluster.run_lock": {"path": str(lock), "state": "released"}},
            ],
        }
    ]
    path = tmp / f"{name}.yml"
    path.write_text(json.dumps(play))
    return path


def _start(playbook: Path) -> subprocess.Popen[str]:
    return start_playbook(playbook)


def _wait_for(lock: Path) -> None:
    """Until the first run holds the lock (at most 30 s)."""
    for _attempt in range(300):
        if lock.exists():
            return
        time.sleep(0.1)


def test_a_second_run_is_refused_and_a_dead_runs_lock_taken_over(tmp_path: Path) -> None:
    lock = tmp_path / "run.lock"
    first = _start(_playbook(tmp_path, "first", lock, pause=25))
    _wait_for(lock)
    holder = json.loads(lock.read_text())
    assert holder["pid"] == first.pid and holder["control_host"] == socket.gethostname()
    second = _start(_playbook(tmp_path, "second", lock, pause=0))
    out = second.communicate(timeout=120)[0]
    assert second.returncode != 0, out
    assert f"Another run holds this cluster's lock ({lock} on node1): run {holder['run_id']}" in out
    assert f"ansible-playbook process {first.pid} on {socket.gethostname()}" in out
    first.kill()  # the first run dies holding the lock
    first.communicate(timeout=30)
    assert json.loads(lock.read_text())["run_id"] == holder["run_id"]
    third = _start(_playbook(tmp_path, "third", lock, pause=0))
    out = third.communicate(timeout=120)[0]
    assert third.returncode == 0, out
    assert f"REPLACED took over the lock of run {holder['run_id']}" in out
    assert f"its ansible-playbook process {first.pid} on {socket.gethostname()} is gone" in out
    assert not lock.exists()


def test_a_run_that_may_wait_gets_the_lock_when_the_first_ends(tmp_path: Path) -> None:
    lock = tmp_path / "run.lock"
    first = _start(_playbook(tmp_path, "first", lock, pause=6))
    _wait_for(lock)
    waiting = tmp_path / "waiting.yml"
    play = json.loads(_playbook(tmp_path, "w", lock, pause=0).read_text())
    play[0]["tasks"][0]["oci_gpu.cluster.run_lock"]["wait"] = 60
    waiting.write_text(json.dumps(play))
    started = time.monotonic()
    second = _start(waiting)
    out = second.communicate(timeout=120)[0]
    assert second.returncode == 0, out
    first.communicate(timeout=60)
    assert first.returncode == 0
    assert time.monotonic() - started > 2 and not lock.exists()
