# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""fss_mount_info through ansible-core: reach the mount targets and read fstab, mounts and owners in one
read-only call."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from . import adhoc

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.unit.plugins.modules.test_fss_mount_info import OPTS, plan  # noqa: E402


def test_a_fstab_written_by_ansible_posix_mount_reads_as_current(tmp_path: Path) -> None:
    fstab = tmp_path / "fstab"
    fstab.write_text("# empty\n")
    point = tmp_path / "home"
    args = {"src": "10.0.0.5:/home", "path": str(point), "fstype": "nfs", "opts": OPTS, "state": "present"}
    written = adhoc.run_module_from("ansible.posix.mount", {**args, "fstab": str(fstab)})
    assert written["changed"] is True, written
    info = adhoc.run_module(
        "fss_mount_info",
        {"mounts": [plan(str(point))], "fstab": str(fstab), "targets": []},
        "--check",
    )
    (state,) = info["mounts"]
    assert state["fstab_current"] is True and state["mounted"] is False, info
    assert info["needs_mount"] == [str(point)] and info["settled"] == [] and info["pending"] is True
    present = adhoc.run_module(
        "fss_mount_info",
        {"mounts": [{**plan(str(point)), "state": "present"}], "fstab": str(fstab)},
    )
    # The mount point does not exist yet: something is still to do.
    assert present["needs_mount"] == [] and present["changed"] is False and present["pending"] is True
    point.mkdir()
    present = adhoc.run_module(
        "fss_mount_info",
        {"mounts": [{**plan(str(point)), "state": "present"}], "fstab": str(fstab)},
    )
    assert present["pending"] is False, present


def test_a_mounted_point_with_its_attributes_is_settled(tmp_path: Path) -> None:
    fstab = tmp_path / "fstab"
    fstab.write_text(f"proc /proc nfs {OPTS} 0 0\n")
    st = os.stat("/proc")
    info = adhoc.run_module(
        "fss_mount_info",
        {"mounts": [{**plan("/proc"), "src": "proc", "owner": str(st.st_uid)}], "fstab": str(fstab)},
    )
    (state,) = info["mounts"]
    assert state["mounted"] is True and state["fstab_current"] is True and state["attributes_current"] is True
    assert info["needs_mount"] == [] and info["settled"] == ["/proc"] and info["pending"] is False
    wrong_mode = adhoc.run_module(
        "fss_mount_info",
        {"mounts": [{**plan("/proc"), "src": "proc", "mode": "0700"}], "fstab": str(fstab)},
    )
    assert wrong_mode["settled"] == [] and wrong_mode["pending"] is True


def test_reach_names_exactly_the_ports_that_refuse() -> None:
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    try:
        info = adhoc.run_module(
            "fss_mount_info",
            {"targets": ["127.0.0.1"], "ports": [listening.getsockname()[1], closed_port], "timeout": 1},
        )
    finally:
        listening.close()
    assert info["unanswered"] == [f"127.0.0.1:{closed_port}"], info
    # A target that does not answer fails the check, not the host's connection (Ansible reads a
    # result key "unreachable" as the host being unreachable).
    assert "unreachable" not in info
