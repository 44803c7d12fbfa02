# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nvme_scratch role for real on loop devices in a one-node lab container.

The node's shape is BM.Optimized3.36 (one NVMe drive in the shape table), so the expected-count
check runs for real. This kernel has no md driver, so the RAID0 path is tested only up to its
refusal; mdadm --create itself is not exercised anywhere here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lab"))

import labtest  # noqa: E402
from ansible_harness import BIN, ansible_env, recap_counts, run_tool  # noqa: E402

pytestmark = [pytest.mark.slow]

NAME = f"nv-{os.getpid() % 100000}"
CONTAINER = f"{NAME}-n1"
SHAPE = "BM.Optimized3.36"
STATE = Path(os.environ.get("OCI_GPU_LAB_STATE_DIR", "/var/lib/oci-gpu-lab"))
PLAY = """
- name: Local NVMe scratch
  hosts: all
  gather_facts: true
  roles:
    - role: oci_gpu.cluster.nvme_scratch
"""


def sh(cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", "exec", CONTAINER, "sh", "-c", cmd], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    labtest.ensure_ready(("bookworm",))
    work = tmp_path_factory.mktemp("nvme_scratch")
    loops: list[str] = []
    try:
        up = labtest.run_lab("up", "--name", NAME, "--nodes", f"n1:{SHAPE}", "--image", "bookworm", "--no-build")
        if up.returncode != 0:
            pytest.fail(f"lab up failed:\n{up.stdout}\n{up.stderr}")
        for i in range(3):
            res = sh(f"truncate -s 320M /var/tmp/disk{i}.img && losetup -f --show /var/tmp/disk{i}.img")
            if res.returncode != 0:
                pytest.fail(f"no loop device in the lab container: {res.stderr}")
            loops.append(res.stdout.strip())
        (work / "play.yml").write_text(PLAY)
        yield {"loops": loops, "work": work, "inventory": STATE / "labs" / NAME / "inventory.yml"}
    finally:
        # Loop devices belong to the host kernel: detach them before the container goes.
        sh("umount /mnt/localdisk /mnt/other 2>/dev/null; true")
        for loop in loops:
            sh(f"losetup -d {loop}")
        down = labtest.run_lab("down", "--name", NAME)
        assert down.returncode == 0, f"lab down failed:\n{down.stdout}\n{down.stderr}"


def play(lab: dict[str, Any], extra: dict[str, Any], *args: str) -> tuple[int, str, dict[str, int]]:
    env = ansible_env(ANSIBLE_LOCAL_TEMP=str(lab["work"] / ".tmp"), PATH=f"{BIN}:{os.environ.get('PATH', '')}")
    playbook = str(lab["work"] / "play.yml")
    res = run_tool("ansible-playbook", "-i", str(lab["inventory"]), playbook, "-e", json.dumps(extra), *args, env=env)
    out = res.stdout + res.stderr
    return res.returncode, out, recap_counts(out, "n1")


def blkid(dev: str) -> str:
    return sh(f"blkid -p -o export {dev}").stdout


def test_check_mode_on_a_fresh_host_changes_nothing(lab: dict[str, Any]) -> None:
    disk = lab["loops"][0]
    rc, out, counts = play(lab, {"nvme_scratch_devices": [disk]}, "--check", "--diff")
    assert rc == 0, out
    assert counts["failed"] == 0 and counts["changed"] > 0, out
    assert "TYPE=" not in blkid(disk)
    assert "/mnt/localdisk" not in sh("cat /etc/fstab").stdout


def test_one_drive_is_formatted_mounted_by_uuid_and_a_rerun_changes_nothing(lab: dict[str, Any]) -> None:
    disk = lab["loops"][0]
    extra = {"nvme_scratch_devices": [disk]}
    rc, out, counts = play(lab, extra)
    assert rc == 0, out
    assert counts["changed"] >= 3, out
    probe = blkid(disk)
    assert "TYPE=xfs" in probe, probe
    uuid = re.search(r"^UUID=(\S+)$", probe, re.M).group(1)
    fstab = [line.split() for line in sh("cat /etc/fstab").stdout.splitlines() if "/mnt/localdisk" in line]
    assert fstab == [
        [f"UUID={uuid}", "/mnt/localdisk", "xfs", "defaults,noatime,nofail,x-systemd.device-timeout=30s", "0", "0"]
    ]
    assert sh("findmnt -n -o SOURCE,FSTYPE /mnt/localdisk").stdout.split() == [disk, "xfs"]
    assert sh("stat -c %a /mnt/localdisk").stdout.strip() == "1777"
    assert sh("echo keep > /mnt/localdisk/data.txt").returncode == 0

    rc, out, counts = play(lab, extra)
    assert rc == 0, out
    assert counts["changed"] == 0, out
    assert sh("cat /mnt/localdisk/data.txt").stdout.strip() == "keep"
    assert re.search(r"^UUID=(\S+)$", blkid(disk), re.M).group(1) == uuid

    rc, out, counts = play(lab, extra, "--check", "--diff")
    assert rc == 0 and counts["changed"] == 0, out


def test_a_drive_with_a_foreign_filesystem_is_refused_then_erased_with_force(lab: dict[str, Any]) -> None:
    disk = lab["loops"][1]
    assert sh(f"mkfs.ext4 -q -F {disk}").returncode == 0
    extra: dict[str, Any] = {"nvme_scratch_devices": [disk], "nvme_scratch_mount_path": "/mnt/other"}
    rc, out, counts = play(lab, extra)
    assert rc != 0
    assert counts["changed"] == 0, out
    assert f"host n1: {disk} holds a ext4 signature" in out, out
    assert "nvme_scratch_force" in out
    assert "TYPE=ext4" in blkid(disk)

    extra["nvme_scratch_force"] = True
    rc, out, counts = play(lab, extra)
    assert rc == 0, out
    assert "TYPE=xfs" in blkid(disk)
    assert sh("findmnt -n -o SOURCE /mnt/other").stdout.strip() == disk
    sh("umount /mnt/other")


def test_several_drives_without_the_md_driver_are_refused_before_any_change(lab: dict[str, Any]) -> None:
    assert sh("test -e /proc/mdstat").returncode != 0, "this host has md: the refusal cannot be tested here"
    disks = lab["loops"][1:3]
    sh(f"wipefs -a -q {disks[0]}")
    rc, out, counts = play(
        lab, {"nvme_scratch_devices": disks, "nvme_scratch_expected_count": 2, "nvme_scratch_mount_path": "/mnt/other"}
    )
    assert rc != 0
    assert counts["changed"] == 0, out
    assert "has no md driver (/proc/mdstat is absent)" in out, out
    assert f"{disks[0]}, {disks[1]}" in out
    assert sh("command -v mdadm").returncode != 0, "mdadm was installed although the play was refused"


def test_discovery_checks_the_drive_count_against_the_shape(lab: dict[str, Any]) -> None:
    rc, out, counts = play(lab, {"nvme_scratch_mount_path": "/mnt/other"})
    assert rc != 0
    assert counts["changed"] == 0, out
    assert f"host n1 (shape {SHAPE}) should have 1 NVMe drive(s) for scratch, found 0" in out, out
