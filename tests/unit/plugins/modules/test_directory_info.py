# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""directory_info: users and groups through NSS, group members looked up as users, unknown ones as None."""

from __future__ import annotations

import grp
import pwd
from types import SimpleNamespace

from ansible_collections.oci_gpu.cluster.plugins.modules.directory_info import lookup

PASSWD = {
    "dora": SimpleNamespace(pw_uid=20001, pw_gid=20001, pw_dir="/home/dora"),
    "erin": SimpleNamespace(pw_uid=20003, pw_gid=20100, pw_dir="/home/erin"),
}
GROUPS = {"gpu-research": SimpleNamespace(gr_gid=20100, gr_mem=["erin", "ghost", "dora"])}


def _pw(name: str) -> SimpleNamespace:
    return PASSWD[name]


def _gr(name: str) -> SimpleNamespace:
    return GROUPS[name]


def test_users_and_group_members_are_looked_up_and_unknown_ones_are_none() -> None:
    assert lookup(["dora", "bob", "dora"], ["gpu-research", "nogroup"], _pw, _gr) == {
        "users": {
            "dora": {"uid": 20001, "gid": 20001, "home": "/home/dora"},
            "bob": None,
            "erin": {"uid": 20003, "gid": 20100, "home": "/home/erin"},
            "ghost": None,
        },
        "groups": {"gpu-research": {"gid": 20100, "members": ["erin", "ghost", "dora"]}, "nogroup": None},
    }


def test_the_real_name_service_answers_for_root_and_not_for_a_made_up_name() -> None:
    found = lookup(["root", "no-such-user-7f3a"], ["root", "no-such-group-7f3a"], pwd.getpwnam, grp.getgrnam)
    assert found["users"]["root"] == {"uid": 0, "gid": 0, "home": "/root"}
    assert found["users"]["no-such-user-7f3a"] is None
    assert found["groups"]["root"]["gid"] == 0
    assert found["groups"]["no-such-group-7f3a"] is None
