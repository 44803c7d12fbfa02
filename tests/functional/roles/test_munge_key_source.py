# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The munge role's key read (tasks/configure.yml) through ansible-playbook on this machine: with no
munge_key the key source host's key is the cluster key, and where that host's key cannot be read the
run stops naming the path, the host and why (the read itself is no_log)."""

from __future__ import annotations

from pathlib import Path

from ansible_harness import run_playbook, shown


def _configure(tmp: Path, key_path: Path) -> str:
    play = [
        {
            "name": "Read the cluster key",
            "hosts": "all",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Key",
                    "ansible.builtin.include_role": {"name": "oci_gpu.cluster.munge", "tasks_from": "configure"},
                }
            ],
        }
    ]
    variables = {"munge_key": "", "munge_key_source_host": "node1", "__munge_key_path": str(key_path)}
    res = run_playbook(tmp, play, variables)
    out = shown(res)
    assert res.returncode != 0, out[-3000:]
    return out


def test_an_unreadable_source_key_stops_the_run_naming_path_host_and_reason(tmp_path: Path) -> None:
    missing = tmp_path / "munge" / "munge.key"
    out = _configure(tmp_path, missing)
    assert f"{missing} could not be read on node1 (munge_key is empty" in out, out[-3000:]
    # slurp's own reason, which the no_log read hides
    assert f"(File not found: {missing})" in out, out[-3000:]
    assert "TASK [oci_gpu.cluster.munge : Check that the cluster key and this host's key could be read]" in out
