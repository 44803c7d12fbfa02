# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""File Storage mount planning: option merging, refusals that name key/value/host, OCID lookups."""

from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.storage import _fss


def test_merge_options_later_wins_and_flags_replace_their_opposite() -> None:
    assert _fss.merge_options(["hard", "rsize=1048576", "nofail"], ["rsize=65536", "soft"]) == [
        "rsize=65536",
        "nofail",
        "soft",
    ]
    assert _fss.merge_options(["ro"], ["rw"], None, ["", " nconnect=4 "]) == ["rw", "nconnect=4"]


@pytest.mark.parametrize(
    ("opts", "needle"),
    [
        (["soft"], "'soft'"),
        (["nfsvers=4.1"], "'nfsvers=4.1'"),
        (["rsize=big"], "'rsize=big'"),
        (["nconnect=32"], "nconnect=16"),
        (["x-systemd.mount-timeout=0"], "x-systemd.mount-timeout"),
    ],
)
def test_option_errors_name_the_option(opts: list[str], needle: str) -> None:
    errors = _fss.option_errors(opts)
    assert errors and needle in " ".join(errors)


def test_defaults_are_safe() -> None:
    assert _fss.option_errors(list(_fss.DEFAULT_OPTIONS)) == []
    for must in ("hard", "_netdev", "nofail", "x-systemd.automount", "nfsvers=3", "rsize=1048576", "wsize=1048576"):
        assert must in _fss.DEFAULT_OPTIONS


def test_plan_by_address_merges_timeout_nconnect_and_own_options() -> None:
    plan = _fss.mount_plan(
        [{"path": "/home", "target": "10.0.0.5", "export_path": "/home", "nconnect": 8, "options": ["rsize=65536"]}],
        mount_timeout=20,
        host="gpu1",
    )
    assert plan[0]["src"] == "10.0.0.5:/home"
    opts = plan[0]["opts"].split(",")
    assert "x-systemd.mount-timeout=20" in opts and "nconnect=8" in opts and "rsize=65536" in opts
    assert "rsize=1048576" not in opts and opts[0] == "hard"
    assert plan[0]["state"] == "mounted"


def test_plan_by_ocid_uses_the_resolved_export() -> None:
    mount = {"path": "/apps", "file_system_id": "ocid1.filesystem.x"}
    resolved = {
        _fss.resolution_key(mount): [
            {"mount_target_ip": "10.0.0.9", "export_path": "/apps", "mount_target_name": "mt", "mount_target_id": "m"}
        ]
    }
    plan = _fss.mount_plan([mount], resolved=resolved)
    assert plan[0]["src"] == "10.0.0.9:/apps" and plan[0]["address"] == "10.0.0.9"
    with pytest.raises(_fss.FssError, match=r"fss_mount_mounts\[0\] on gpu1: file system ocid1.filesystem.x"):
        _fss.mount_plan([mount], host="gpu1")


@pytest.mark.parametrize(
    ("mount", "needle"),
    [
        ({"path": "home", "target": "a", "export_path": "/h"}, r"fss_mount_mounts\[0\].path = 'home' on n1"),
        ({"path": "/h", "export_path": "/h"}, r"fss_mount_mounts\[0\].target on n1"),
        ({"path": "/h", "target": "a", "export_path": "h"}, r"fss_mount_mounts\[0\].export_path = 'h' on n1"),
        ({"path": "/h", "target": "a", "export_path": "/h", "state": "gone"}, r"state = 'gone'"),
        ({"path": "/h", "target": "a", "export_path": "/h", "sizee": 1}, r"unknown key\(s\) sizee"),
        ({"path": "/h", "target": "a", "file_system_id": "ocid1.x"}, "either target"),
        ({"path": "/h", "target": "a", "export_path": "/h", "options": ["soft"]}, r"\[0\].options on n1: 'soft'"),
    ],
)
def test_plan_refusals_name_key_value_and_host(mount: dict, needle: str) -> None:
    with pytest.raises(_fss.FssError, match=needle):
        _fss.mount_plan([mount], host="n1")


def test_duplicate_mount_points_are_refused() -> None:
    m = {"path": "/home", "target": "a", "export_path": "/home"}
    with pytest.raises(_fss.FssError, match=r"fss_mount_mounts\[1\].path = '/home'.*fss_mount_mounts\[0\]"):
        _fss.mount_plan([m, dict(m)])


def test_absent_needs_no_address() -> None:
    assert _fss.mount_plan([{"path": "/old", "state": "absent"}])[0]["state"] == "absent"


def test_ocid_lookups_are_deduplicated_and_skip_resolved_and_absent() -> None:
    a = {"path": "/home", "file_system_id": "fs1"}
    b = {"path": "/home2", "file_system_id": "fs1"}
    c = {"path": "/apps", "mount_target_id": "mt1", "export_path": "/apps"}
    d = {"path": "/gone", "file_system_id": "fs9", "state": "absent"}
    e = {"path": "/x", "target": "1.2.3.4", "export_path": "/x"}
    lookups = _fss.ocid_lookups([a, b, c, d, e])
    assert [x["key"] for x in lookups] == ["fs1||", "|mt1|/apps"]
    assert _fss.ocid_lookups([a, c], exclude=["fs1||"]) == [lookups[1]]


def test_export_records_join_exports_with_their_mount_targets() -> None:
    fs = {"fs1": {"id": "fs1", "display_name": "home"}}
    exports = [
        {"id": "e1", "export_set_id": "es1", "file_system_id": "fs1", "path": "/home", "lifecycle_state": "ACTIVE"},
        {"id": "e2", "export_set_id": "es2", "file_system_id": "fs1", "path": "/home", "lifecycle_state": "DELETED"},
    ]
    mts = [
        {"id": "mt1", "display_name": "b", "export_set_id": "es1", "private_ip_ids": ["p1"]},
        {"id": "mt0", "display_name": "a", "export_set_id": "es1", "private_ip_ids": ["p0"]},
        {"id": "mt2", "display_name": "c", "export_set_id": "es2", "private_ip_ids": ["p2"]},
    ]
    recs = _fss.export_records(fs, exports, mts, {"p0": "10.0.0.1", "p1": "10.0.0.2"}.__getitem__)
    assert [(r["mount_target_id"], r["source"]) for r in recs] == [("mt0", "10.0.0.1:/home"), ("mt1", "10.0.0.2:/home")]
    assert _fss.export_records(fs, exports, mts, lambda p: "x", export_path="/other") == []
