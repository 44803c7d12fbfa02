# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_restart and slurm_nodes_drain against stand-ins for scontrol, squeue, scancel and systemctl
(standins/slurm_standin.py): the order of their calls, their refusals and their messages.

The real daemons are in the lab: molecule/_shared/slurm/side_effect.yml restarts slurmd one node
at a time with an administrator's drain and DOWN in place, refuses a removal naming the running
job, and removes a node through the drain step.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from . import adhoc

STANDIN = Path(__file__).with_name("standins") / "slurm_standin.py"


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("scontrol", "squeue", "scancel", "systemctl", "journalctl"):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} {name} "$@"\n')
        script.chmod(0o755)
    state = tmp_path / "state.json"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_STATE", str(state))

    def write(nodes, jobs=(), jobs_end_after=-1, on_restart="register"):
        full = {
            n: {"state": "IDLE", "flags": [], "reason": "", "start": "2026-12-01T10:01:02", **v}
            for n, v in nodes.items()
        }
        state.write_text(
            json.dumps(
                {
                    "nodes": full,
                    "jobs": [list(j) for j in jobs],
                    "jobs_end_after": jobs_end_after,
                    "on_restart": on_restart,
                    "log": [],
                }
            )
        )

    def read():
        return json.loads(state.read_text())

    return write, read


def test_an_admin_down_node_is_down_again_with_its_reason_after_the_restart(cluster) -> None:
    """DOWN+DRAIN: under ReturnToService=2 a later registration leaves it drained, not in service."""
    write, read = cluster
    write({"cpu1": {"state": "DOWN", "reason": "bad DIMM"}})
    out = adhoc.run_module("slurm_restart", {"unit": "slurmd", "node_name": "cpu1", "poll": 0.1})
    assert out.get("failed") is not True, out
    assert out["kept_down"] is True and out["state_before"] == "DOWN"
    node = read()["nodes"]["cpu1"]
    assert (node["state"], node["flags"], node["reason"]) == ("DOWN", ["DRAIN"], "bad DIMM")
    log = read()["log"]
    drain = log.index("scontrol update nodename=cpu1 state=drain reason=bad DIMM")
    restart = log.index("systemctl restart slurmd.service")
    assert drain < restart < log.index("scontrol update nodename=cpu1 state=down reason=bad DIMM")
    assert not [c for c in log if "undrain" in c or "resume" in c]


def test_a_drained_node_is_left_to_slurm_and_never_resumed(cluster) -> None:
    write, read = cluster
    write({"gpu1": {"flags": ["DRAIN"], "reason": "maintenance"}})
    out = adhoc.run_module("slurm_restart", {"unit": "slurmd", "node_name": "gpu1", "poll": 0.1})
    assert out.get("failed") is not True, out
    assert out["kept_down"] is False and out["state_after"] == "IDLE+DRAIN"
    assert not [c for c in read()["log"] if c.startswith("scontrol update")]


def test_a_node_that_does_not_re_register_fails_with_the_journal(cluster) -> None:
    write, _read = cluster
    write({"gpu1": {}}, on_restart="silent")
    out = adhoc.run_module("slurm_restart", {"unit": "slurmd", "node_name": "gpu1", "poll": 0.2, "timeout": 1})
    assert out["failed"] is True
    assert "slurmd on gpu1: it did not re-register with slurmctld within 1 s (state IDLE)" in out["msg"]
    assert out["journal"] == ["slurmd: error: the stand-in's journal line"]


def test_a_failed_unit_start_puts_an_admin_down_back(cluster) -> None:
    write, read = cluster
    write({"cpu1": {"state": "DOWN", "reason": "bad DIMM"}}, on_restart="fail")
    out = adhoc.run_module("slurm_restart", {"unit": "slurmd", "node_name": "cpu1", "poll": 0.1})
    assert out["failed"] is True and "systemctl restart failed: Job for slurmd.service failed" in out["msg"]
    node = read()["nodes"]["cpu1"]
    assert (node["state"], node["flags"], node["reason"]) == ("DOWN", ["DRAIN"], "bad DIMM")


def test_check_mode_restarts_nothing(cluster) -> None:
    write, read = cluster
    write({"gpu1": {}})
    out = adhoc.run_module("slurm_restart", {"unit": "slurmd", "node_name": "gpu1"}, "--check")
    assert out["changed"] is True
    assert "systemctl restart slurmd.service" not in read()["log"]


def test_a_removal_with_running_jobs_is_refused_naming_them(cluster) -> None:
    write, read = cluster
    write({"gpu1": {}, "gpu2": {}}, jobs=[("41", "alice", "RUNNING", "gpu1"), ("42", "bob", "RUNNING", "gpu2")])
    out = adhoc.run_module("slurm_nodes_drain", {"nodes": ["gpu1", "ghost"], "timeout": 0})
    assert out["failed"] is True
    assert "node(s) gpu1 still run job(s) 41 (alice, RUNNING) after 0 s" in out["msg"]
    assert "42" not in out["msg"]
    assert out["unknown"] == ["ghost"] and out["drained"] == ["gpu1"]
    assert read()["nodes"]["gpu1"]["flags"] == ["DRAIN"] and read()["nodes"]["gpu2"]["flags"] == []


def test_a_removal_waits_for_the_jobs_and_keeps_an_admin_reason(cluster) -> None:
    write, read = cluster
    write(
        {"gpu1": {"flags": ["DRAIN"], "reason": "RMA"}, "gpu2": {}},
        jobs=[("41", "alice", "RUNNING", "gpu1")],
        jobs_end_after=2,
    )
    out = adhoc.run_module("slurm_nodes_drain", {"nodes": ["gpu1", "gpu2"], "timeout": 30, "poll": 0.1})
    assert out.get("failed") is not True, out
    assert out["already_drained"] == ["gpu1 (RMA)"] and out["drained"] == ["gpu2"] and out["jobs"] == []
    assert read()["nodes"]["gpu1"]["reason"] == "RMA"
    assert len([c for c in read()["log"] if c.startswith("squeue")]) == 3


def test_a_removal_told_to_cancel_cancels_only_the_jobs_on_those_nodes(cluster) -> None:
    write, read = cluster
    write({"gpu1": {}, "gpu2": {}}, jobs=[("41", "alice", "RUNNING", "gpu1"), ("42", "bob", "RUNNING", "gpu2")])
    out = adhoc.run_module("slurm_nodes_drain", {"nodes": ["gpu1"], "timeout": 0, "cancel_jobs": True, "poll": 0.1})
    assert out.get("failed") is not True, out
    assert out["cancelled"] == ["41"] and out["changed"] is True
    assert read()["jobs"] == [["42", "bob", "RUNNING", "gpu2"]]


def test_admin_down_nodes_are_held_drained_and_set_down_again_after_the_restarts(cluster, tmp_path) -> None:
    write, read = cluster
    record = tmp_path / "held.json"
    write(
        {
            "gpu1": {"state": "DOWN", "reason": "bad DIMM"},
            "gpu2": {"flags": ["DRAIN"], "reason": "RMA"},
            "cpu1": {"state": "DOWN", "reason": "fan"},
            "cpu2": {},
        }
    )
    held = adhoc.run_module("slurm_admin_down", {"action": "hold", "state_file": str(record)})
    assert held.get("failed") is not True, held
    assert held["held"] == {"gpu1": "bad DIMM", "cpu1": "fan"} and held["changed"] is True
    assert json.loads(record.read_text()) == {"cpu1": "fan", "gpu1": "bad DIMM"}
    nodes = read()["nodes"]
    assert nodes["gpu1"]["flags"] == ["DRAIN"] and nodes["gpu1"]["reason"] == "bad DIMM"
    assert nodes["gpu2"]["reason"] == "RMA" and nodes["cpu2"]["flags"] == []

    # A slurmctld restart: every slurmd registers; ReturnToService=2 turns DOWN+DRAIN into IDLE+DRAIN.
    state = read()
    for node in state["nodes"].values():
        if node["state"] == "DOWN":
            node["state"] = "IDLE"
    # Meanwhile an administrator resumed cpu1.
    state["nodes"]["cpu1"].update(flags=[], reason="")
    Path(os.environ["STANDIN_STATE"]).write_text(json.dumps(state))

    released = adhoc.run_module("slurm_admin_down", {"action": "release", "state_file": str(record)})
    assert released.get("failed") is not True, released
    assert released["released"] == ["gpu1"] and released["changed_by_admin"] == ["cpu1"]
    nodes = read()["nodes"]
    assert (nodes["gpu1"]["state"], nodes["gpu1"]["flags"], nodes["gpu1"]["reason"]) == ("DOWN", ["DRAIN"], "bad DIMM")
    assert (nodes["cpu1"]["state"], nodes["cpu1"]["flags"]) == ("IDLE", [])
    assert not record.exists()
    again = adhoc.run_module("slurm_admin_down", {"action": "release", "state_file": str(record)})
    assert again["changed"] is False


def test_nothing_is_held_below_return_to_service_2(cluster, tmp_path) -> None:
    write, read = cluster
    write({"gpu1": {"state": "DOWN", "reason": "bad DIMM"}})
    out = adhoc.run_module(
        "slurm_admin_down", {"action": "hold", "state_file": str(tmp_path / "h.json"), "return_to_service": 1}
    )
    assert out["changed"] is False and out["held"] == {}
    assert read()["nodes"]["gpu1"]["flags"] == []
