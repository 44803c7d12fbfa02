# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""lustre_file_system_info's record: the MGS NID and the mount source (the module through real Ansible
against the OCI API emulator: tests/functional)."""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.modules.lustre_file_system_info import lustre_record


def test_record_carries_the_mgs_nid_and_the_mount_source() -> None:
    rec = lustre_record(
        {"id": "ocid1.lfs", "management_service_address": "10.0.255.20", "lnet": "tcp", "file_system_name": "lfs1"}
    )
    assert rec["mgs_nid"] == "10.0.255.20@tcp"
    assert rec["mount_spec"] == "10.0.255.20@tcp:/lfs1"
    assert lustre_record({"id": "x", "management_service_address": None})["mount_spec"] == ""
