# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""fss_mount_info's judgement of an fstab line and of a mount's attributes (the module through
ansible-core: tests/functional)."""

from __future__ import annotations

import os
from pathlib import Path

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
