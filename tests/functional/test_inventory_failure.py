# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""A failed OCI inventory never ends in a run that "succeeded" on no hosts (issue "The audit's
remaining day-2 risks", item 5).

Under Ansible's default settings an inventory source that fails to parse is only a warning: with
the OCI API unreachable or a bad config file, the inventory is empty, every play matches no host and
``ansible-playbook`` exits 0. The playbooks that act on the cluster stop instead, naming the group
and the setting that makes such a failure an error. Seen failing on a750660 (no such check): both
playbooks exited 0 with "skipping: no hosts matched".
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ansible_harness import ansible_env, run_tool


def _run(tmp_path: Path, playbook: str, inventory_text: str, *extra: str) -> subprocess.CompletedProcess[str]:
    inventory = tmp_path / "cluster.oci_gpu.yml"
    inventory.write_text(inventory_text)
    # Ansible's default, whatever the caller's environment says
    env = ansible_env(ANSIBLE_INVENTORY_UNPARSED_FAILED="false")
    return run_tool("ansible-playbook", "-i", str(inventory), playbook, *extra, env=env, cwd=tmp_path)


BROKEN = """\
plugin: oci_gpu.cluster.oci
config_file: {config}
regions: [us-ashburn-1]
"""


@pytest.mark.parametrize("playbook", ["oci_gpu.cluster.slurm", "oci_gpu.cluster.validate"])
def test_a_failed_inventory_stops_the_run_and_says_so(tmp_path: Path, playbook: str) -> None:
    res = _run(tmp_path, playbook, BROKEN.format(config=tmp_path / "no-such-oci-config"))
    out = res.stdout + res.stderr
    assert "Unable to parse" in out, out[-3000:]  # Ansible's own warning: the inventory failed
    assert res.returncode != 0, out[-3000:]
    assert "The inventory has no host in the group slurm_controller (0 host(s) in all)" in out, out[-3000:]
    assert "ANSIBLE_INVENTORY_UNPARSED_FAILED=true" in out
    assert "Nothing was changed" in out


def test_the_check_passes_when_the_cluster_is_there(tmp_path: Path) -> None:
    """--check on a static inventory whose hosts cannot be reached: the inventory check passes (the
    run then stops on the unreachable controller, as it should - after the check)."""
    static = "slurm_controller:\n  hosts:\n    ctl:\n      ansible_host: 192.0.2.1\n      ansible_connection: ssh\n"
    res = _run(tmp_path, "oci_gpu.cluster.slurm", static, "--check", "-e", "ansible_ssh_timeout=1")
    out = res.stdout + res.stderr
    assert "Check that the inventory holds the cluster" in out, out[-3000:]
    assert "The inventory has no host" not in out, out[-3000:]
