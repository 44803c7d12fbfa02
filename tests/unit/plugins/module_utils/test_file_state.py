# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""module_utils/common/_file_state.py: telling, from the probe's read, whether slurm_files would change anything."""

from __future__ import annotations

import grp
import json
import os
import pwd
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.oci_gpu.cluster.plugins.filter.files_not_in_place import files_not_in_place
from ansible_collections.oci_gpu.cluster.plugins.module_utils.common import _file_state as fs

# the digest of "ClusterName=lab\n", from sha256sum (printf 'ClusterName=lab\n' | sha256sum)
REAL_SHA = "c7c1708e21b681c0b9697b0bebd83cd72e60208d3fce8f5aa684c7e667d7da54"


def file_now(sha: str | None, mode: str = "0644", owner: str = "root", uid: int = 0, **extra: object) -> dict:
    return {
        "kind": "file",
        "owner": owner,
        "group": owner,
        "uid": uid,
        "gid": uid,
        "mode": mode,
        "sha256": sha,
        **extra,
    }


def dir_now(mode: str = "0755", owner: str = "root", uid: int = 0) -> dict:
    return {"kind": "directory", "owner": owner, "group": owner, "uid": uid, "gid": uid, "mode": mode}


CONF = {"path": "/etc/slurm/slurm.conf", "content": "ClusterName=lab\n"}


@pytest.mark.parametrize(
    ("item", "now", "named"),
    [
        # content, owner, group and mode as wanted: nothing to do
        (CONF, file_now(REAL_SHA), False),
        # another content
        (CONF, file_now("0" * 64), True),
        # the mode differs (0644 is the default)
        (CONF, file_now(REAL_SHA, mode="0600"), True),
        ({**CONF, "mode": "0600"}, file_now(REAL_SHA, mode="0600"), False),
        # an owner by name, or by number
        ({**CONF, "owner": "slurm"}, file_now(REAL_SHA, owner="slurm", uid=64030), False),
        ({**CONF, "owner": "64030"}, file_now(REAL_SHA, owner="slurm", uid=64030), False),
        ({**CONF, "owner": "slurm"}, file_now(REAL_SHA), True),
        # the group defaults to the owner; given, it is compared on its own
        ({**CONF, "owner": "root", "group": "slurm"}, file_now(REAL_SHA), True),
        # a mode not in octal cannot be compared: the call runs
        ({**CONF, "mode": "u=rw,g=r,o=r"}, file_now(REAL_SHA), True),
        # a directory, a link or nothing where a file should be
        (CONF, dir_now(), True),
        (CONF, {"kind": "link"}, True),
        (CONF, {"kind": "absent"}, True),
        # a path the record did not hold
        (CONF, None, True),
        # a secret is never digested: the call runs, even where the probe had a digest
        ({"path": "/etc/slurm/slurmdbd.conf", "secret_content": "x\n", "mode": "0600"}, file_now(None, "0600"), True),
        (
            {"path": "/etc/slurm/slurmdbd.conf", "secret_content": "ClusterName=lab\n"},
            file_now(REAL_SHA),
            True,
        ),
        # absent wants the path gone
        ({"path": "/etc/slurm/slurmdbd.conf", "state": "absent"}, {"kind": "absent"}, False),
        ({"path": "/etc/slurm/slurmdbd.conf", "state": "absent"}, file_now(None), True),
        # absent_if_managed: a managed file goes, a site's own file stays
        ({"path": "/etc/slurm/x", "state": "absent_if_managed"}, file_now("1" * 64, managed=True), True),
        ({"path": "/etc/slurm/x", "state": "absent_if_managed"}, file_now("1" * 64, managed=False), False),
        ({"path": "/etc/slurm/x", "state": "absent_if_managed"}, {"kind": "absent"}, False),
    ],
)
def test_a_file_is_named_when_the_call_would_change_it_or_the_read_cannot_tell(
    item: dict, now: dict | None, named: bool
) -> None:
    state = {} if now is None else {item["path"]: now}
    assert fs.not_in_place([], [item], [], state) == ([item["path"]] if named else [])


@pytest.mark.parametrize(
    ("item", "now", "named"),
    [
        ({"path": "/var/spool/slurmd"}, dir_now(), False),
        ({"path": "/var/spool/slurmd", "mode": "0700"}, dir_now(), True),
        ({"path": "/var/spool/slurmd", "mode": "0700", "owner": "slurm"}, dir_now("0700", "slurm", 64030), False),
        ({"path": "/var/spool/slurmd"}, file_now(REAL_SHA, mode="0755"), True),
        ({"path": "/var/spool/slurmd"}, None, True),
    ],
)
def test_a_directory_is_named_unless_it_is_there_as_wanted(item: dict, now: dict | None, named: bool) -> None:
    state = {} if now is None else {item["path"]: now}
    assert fs.not_in_place([item], [], [], state) == ([item["path"]] if named else [])


def test_only_the_items_for_the_node_roles_count() -> None:
    ctld = {"path": "/var/spool/slurmctld", "mode": "0700", "roles": ["controller"]}
    conf = {**CONF, "roles": ["compute", "login"]}
    state = {CONF["path"]: file_now(REAL_SHA)}
    # the controller's directory is not this compute node's: nothing to do
    assert fs.not_in_place([ctld], [conf], ["compute"], state) == []
    assert fs.not_in_place([ctld], [conf], ["controller"], state) == ["/var/spool/slurmctld"]


def test_the_record_round_trip_on_real_files(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=lab\n")
    conf.chmod(0o644)
    secret = tmp_path / "slurmdbd.conf"
    secret.write_text("StoragePass=s3cr3t\n")
    secret.chmod(0o600)
    spool = tmp_path / "spool"
    spool.mkdir(mode=0o700)
    spool.chmod(0o700)
    me = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    directories = [{"path": str(spool), "mode": "0700", "owner": me, "group": group}]
    files = [
        {**CONF, "path": str(conf), "owner": me, "group": group},
        {"path": str(secret), "secret_content": "StoragePass=s3cr3t\n", "mode": "0600", "owner": me, "group": group},
        {"path": str(tmp_path / "gone.conf"), "state": "absent"},
    ]
    record = tmp_path / "rec" / "files.json"
    assert fs.read_state(str(record)) == {}
    assert fs.write_record(str(record), fs.record_items(directories, files, [])) is True
    # the same list again: not rewritten
    assert fs.write_record(str(record), fs.record_items(directories, files, [])) is False
    assert oct(record.stat().st_mode & 0o777) == "0o644"
    assert json.loads(record.read_text())["items"][2] == {"path": str(secret), "kind": "file", "secret": True}

    state = fs.read_state(str(record))
    assert state[str(conf)]["sha256"] == REAL_SHA and state[str(conf)]["mode"] == "0644"
    assert state[str(conf)]["owner"] == me and state[str(conf)]["managed"] is False
    # the secret's content is never digested
    assert state[str(secret)]["sha256"] is None and "s3cr3t" not in json.dumps(state)
    assert state[str(spool)] == {
        "kind": "directory",
        "uid": os.getuid(),
        "gid": os.getgid(),
        "owner": me,
        "group": group,
        "mode": "0700",
    }
    assert state[str(tmp_path / "gone.conf")] == {"kind": "absent"}
    # all as wanted but the secret, which the probe cannot vouch for
    assert fs.not_in_place(directories, files, [], state) == [str(secret)]
    assert fs.not_in_place(directories, files[:1] + files[2:], [], state) == []

    conf.write_text("ClusterName=other\n")
    spool.chmod(0o755)
    state = fs.read_state(str(record))
    assert fs.not_in_place(directories, files[:1], [], state) == [str(spool), str(conf)]


@pytest.mark.parametrize("text", ["", "not json", '{"version": 2, "items": []}', '{"items": 3}', "[1, 2]"])
def test_an_unreadable_or_foreign_record_reads_as_none(tmp_path: Path, text: str) -> None:
    record = tmp_path / "files.json"
    record.write_text(text)
    assert fs.read_state(str(record)) == {}


def test_a_managed_file_is_told_by_its_first_three_lines(tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.write_text("#!/bin/sh\n# Managed by Ansible (oci_gpu.cluster slurm role)\nexit 0\n")
    assert fs.managed(str(path)) is True
    path.write_text("a\nb\nc\n# Managed by Ansible (oci_gpu.cluster slurm role)\n")
    assert fs.managed(str(path)) is False
    assert fs.managed(str(tmp_path / "missing")) is False


def test_the_filter_takes_the_module_s_arguments() -> None:
    manifest = {"directories": [], "files": [CONF]}
    assert files_not_in_place(manifest, [], {CONF["path"]: file_now(REAL_SHA)}) == []
    assert files_not_in_place(manifest) == [CONF["path"]]
    with pytest.raises(AnsibleFilterError, match="expects a dict"):
        files_not_in_place([CONF])
    with pytest.raises(AnsibleFilterError, match="files_state"):
        files_not_in_place(manifest, [], ["x"])
