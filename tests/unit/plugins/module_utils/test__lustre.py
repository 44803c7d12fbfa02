# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lustre_client role's decisions: NIDs, mount specs and the fstab entries."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.oci_gpu.cluster.plugins.filter.lustre_client_mounts import lustre_client_mounts
from ansible_collections.oci_gpu.cluster.plugins.module_utils.storage._lustre import (
    lustre_mount_spec,
    lustre_mounts,
    lustre_nid,
)


def test_nids_and_mount_specs() -> None:
    assert lustre_nid("10.0.0.20") == "10.0.0.20@tcp"
    assert lustre_nid("10.0.0.20@o2ib1", "tcp") == "10.0.0.20@o2ib1"
    assert lustre_nid("10.0.0.20:10.0.0.21", "o2ib") == "10.0.0.20@o2ib:10.0.0.21@o2ib"
    assert lustre_nid("10.0.0.20,10.1.0.20@o2ib") == "10.0.0.20@tcp,10.1.0.20@o2ib"
    assert lustre_mount_spec("10.0.0.20", "lfs1") == "10.0.0.20@tcp:/lfs1"


def test_mounts_with_defaults_and_resolved_ids() -> None:
    resolved = {"ocid1.lfs": {"management_service_address": "10.0.255.20", "file_system_name": "lfs9", "lnet": "tcp"}}
    got = lustre_mounts(
        [
            {"path": "/mnt/a", "mgs_nid": "10.0.0.20@tcp", "fsname": "lfs1"},
            {"path": "/mnt/b", "lustre_file_system_id": "ocid1.lfs", "options": ["ro", "_netdev"], "state": "present"},
        ],
        host="gpu1",
        resolved=resolved,
        mount_timeout=30,
    )
    assert got["errors"] == []
    a, b = got["mounts"]
    assert a == {
        "path": "/mnt/a",
        "src": "10.0.0.20@tcp:/lfs1",
        "fstype": "lustre",
        "opts": "defaults,_netdev,nofail,x-systemd.automount,x-systemd.mount-timeout=30",
        "state": "mounted",
        "fsname": "lfs1",
        "mgs_nid": "10.0.0.20@tcp",
    }
    assert (b["src"], b["opts"], b["state"]) == ("10.0.255.20@tcp:/lfs9", "ro,_netdev", "present")


@pytest.mark.parametrize(
    ("mount", "message"),
    [
        ({"path": "/mnt/a", "fsname": "x"}, "give mgs_nid (e.g. 10.0.0.20@tcp) and fsname, or lustre_file_system_id"),
        ({"path": "/mnt/a", "lustre_file_system_id": "ocid1.gone"}, "ocid1.gone was not resolved through the OCI API"),
        ({"path": "/mnt/a", "mgs_nid": "1.2.3.4", "fsname": ""}, "fsname is ''"),
        ({"path": "/mnt/a", "mgs_nid": "1.2.3.4", "fsname": "x", "lnet": "eth"}, "lnet is 'eth'"),
        ({"path": "/", "mgs_nid": "1.2.3.4", "fsname": "x"}, "path is '/'"),
        ({"path": "/mnt/a", "mgs_nid": "1.2.3.4", "fsname": "x", "state": "on"}, "state is 'on'"),
        ({"path": "/mnt/a", "mgs_nid": "1.2.3.4", "fsname": "x", "opts": "ro"}, "unknown key(s) opts"),
        ({"path": "/mnt/a", "lustre_file_system_id": "ocid1.lfs", "fsname": "other"}, "fsname other differs from lfs9"),
    ],
)
def test_mount_refusals_name_host_index_and_value(mount: dict[str, Any], message: str) -> None:
    resolved = {"ocid1.lfs": {"management_service_address": "10.0.255.20", "file_system_name": "lfs9"}}
    errors = lustre_client_mounts([mount], "gpu1", resolved=resolved)["errors"]
    assert errors and message in errors[0]
    assert errors[0].startswith("lustre_client_mounts[0] on host gpu1")


def test_absent_mount_needs_no_source_and_duplicates_are_refused() -> None:
    got = lustre_mounts([{"path": "/mnt/a", "state": "absent"}], host="h")
    assert got["errors"] == [] and got["mounts"][0]["src"] == ""
    dup = lustre_mounts([{"path": "/mnt/a", "mgs_nid": "1.1.1.1", "fsname": "a"}] * 2, host="h")
    assert "path /mnt/a is mounted twice" in dup["errors"][0]
    assert "must be a list" in lustre_mounts("nope", host="h")["errors"][0]


def test_first_pass_lists_ocids_and_checks_everything_else() -> None:
    mounts = [
        {"path": "/mnt/a", "lustre_file_system_id": "ocid1.a"},
        {"path": "/mnt/b", "lustre_file_system_id": "ocid1.a", "state": "absent"},
        {"path": "/mnt/c", "mgs_nid": "1.1.1.1", "lustre_file_system_id": "ocid1.c"},
    ]
    first = lustre_mounts(mounts, host="h")
    assert first["to_resolve"] == ["ocid1.a"]
    assert [e for e in first["errors"] if "not resolved" in e] == []
    assert "gives both mgs_nid" in first["errors"][0]
