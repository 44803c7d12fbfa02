# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""move_into_place: a new secret file is never, even for a moment, more open than the mode its
writer gave it (AnsibleModule.atomic_move gives a created file the umask's mode first)."""

from __future__ import annotations

import os
import stat
import tempfile

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._files import move_into_place


class NoSelinux:
    def selinux_enabled(self) -> bool:
        return False


def test_a_created_file_keeps_the_writers_mode_the_moment_it_appears(tmp_path) -> None:
    old = os.umask(0o022)
    try:
        fd, tmp = tempfile.mkstemp(dir=tmp_path)
        os.write(fd, b"secret")
        os.close(fd)
        os.chmod(tmp, 0o400)
        dest = tmp_path / "munge.key"
        move_into_place(NoSelinux(), tmp, str(dest))
        assert stat.S_IMODE(dest.stat().st_mode) == 0o400
        assert dest.read_bytes() == b"secret" and not os.path.exists(tmp)
    finally:
        os.umask(old)


def test_atomic_move_would_open_a_created_file_to_the_umask(tmp_path) -> None:
    """Why the helper exists: ansible-core's atomic_move chmods a new file to 0666 & ~umask."""
    from ansible.module_utils import basic

    module = basic.AnsibleModule.__new__(basic.AnsibleModule)
    module._selinux_enabled = False
    module.selinux_enabled = lambda: False  # type: ignore[method-assign]
    module.params = {"unsafe_writes": False}
    old = os.umask(0o022)
    try:
        fd, tmp = tempfile.mkstemp(dir=tmp_path)
        os.close(fd)
        os.chmod(tmp, 0o400)
        dest = tmp_path / "slurmdbd.conf"
        module.atomic_move(tmp, str(dest))
        assert stat.S_IMODE(dest.stat().st_mode) == 0o644
    finally:
        os.umask(old)
