# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""fss_mount_info: reach the mount targets and read fstab, mounts and owners in one read-only call."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import adhoc

from ansible_collections.oci_gpu.cluster.plugins.modules.fss_mount_info import (
    attributes_current,
    fstab_current,
    fstab_entries,
)

OPTS = "hard,_netdev,nofail,nfsvers=3"


def plan(path: str, **kw) -> dict:
    return {"path": path, "src": "10.0.0.5:/home", "opts": OPTS, "state": "mounted", **kw}


def test_an_entry_is_current_only_when_one_full_line_matches() -> None:
    text = (
        "# comment\n"
        f"10.0.0.5:/home /home nfs {OPTS} 0 0\n"
        f"10.0.0.5:/apps /opt/my\\040apps nfs {OPTS} 0 0\n"
        "10.0.0.5:/short /short nfs hard\n"
        f"10.0.0.5:/a /twice nfs {OPTS} 0 0\n10.0.0.5:/a /twice nfs {OPTS} 0 0\n"
    )
    entries = fstab_entries(text)
    assert fstab_current(entries, plan("/home"), "nfs")
    assert fstab_current(entries, {**plan("/opt/my apps"), "src": "10.0.0.5:/apps"}, "nfs")
    assert not fstab_current(entries, plan("/home", opts=OPTS + ",nconnect=4"), "nfs")
    assert not fstab_current(entries, plan("/home", src="10.0.0.6:/home"), "nfs")
    # Without dump and pass ansible.posix.mount rewrites the line: not current.
    assert not fstab_current(entries, {**plan("/short"), "src": "10.0.0.5:/short", "opts": "hard"}, "nfs")
    assert not fstab_current(entries, {**plan("/twice"), "src": "10.0.0.5:/a"}, "nfs")
    assert not fstab_current(entries, plan("/nowhere"), "nfs")
    assert fstab_current(entries, {"path": "/nowhere", "src": "", "opts": "", "state": "absent"}, "nfs")
    assert not fstab_current(entries, {"path": "/home", "src": "", "opts": "", "state": "absent"}, "nfs")


def test_attributes_compare_owner_group_and_octal_mode(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o750)
    os.chmod(d, 0o750)
    st = d.stat()
    assert attributes_current(st, {"owner": None, "group": None, "mode": None})
    assert attributes_current(st, {"owner": str(st.st_uid), "group": str(st.st_gid), "mode": "0750"})
    assert attributes_current(st, {"mode": "750"})
    assert not attributes_current(st, {"mode": "0755"})
    assert not attributes_current(st, {"owner": str(st.st_uid + 1)})
    assert not attributes_current(st, {"owner": "no-such-user-here"})
    assert not attributes_current(st, {"mode": "u=rwx,g=rx"})  # symbolic: the file task decides
    assert not attributes_current(None, {"mode": "0755"})


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
