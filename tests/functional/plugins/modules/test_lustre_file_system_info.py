# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""lustre_file_system_info through real Ansible and the real oci SDK against the OCI API emulator."""

from __future__ import annotations

from typing import Any

MODULE = "lustre_file_system_info"  # what the run_module fixture runs


def truth(emu: Any) -> dict[str, Any]:
    region = emu.tenancy.home_region
    return emu.tenancy.data["regions"][region]["lustreFileSystems"][0]


def test_by_id_returns_the_mount_source(emu: Any, run_module: Any) -> None:
    lfs = truth(emu)
    rc, task, out = run_module({"lustre_file_system_id": lfs["id"]})
    assert rc == 0, out
    assert task["changed"] is False
    [rec] = task["lustre_file_systems"]
    assert rec["id"] == lfs["id"]
    assert rec["file_system_name"] == lfs["fileSystemName"]
    assert rec["management_service_address"] == lfs["managementServiceAddress"]
    assert rec["lnet"] == lfs["lnet"]
    assert rec["lifecycle_state"] == "ACTIVE"
    assert rec["mount_spec"] == f"{lfs['managementServiceAddress']}@{lfs['lnet']}:/{lfs['fileSystemName']}"
    assert emu.emulator.counter_snapshot()["by_op"].get("GetLustreFileSystem", 0) >= 1


def test_by_compartment_and_display_name(emu: Any, run_module: Any) -> None:
    lfs = truth(emu)
    rc, task, out = run_module({"compartment_id": lfs["compartmentId"], "display_name": lfs["displayName"]})
    assert rc == 0, out
    assert [r["id"] for r in task["lustre_file_systems"]] == [lfs["id"]]
    rc, task, out = run_module({"compartment_id": lfs["compartmentId"], "display_name": "no-such-name"})
    assert rc == 0, out
    assert task["lustre_file_systems"] == []


def test_unknown_id_fails_naming_it(emu: Any, run_module: Any) -> None:
    rc, task, out = run_module({"lustre_file_system_id": "ocid1.lustrefilesystem.oc1..missing"})
    assert rc != 0
    assert "ocid1.lustrefilesystem.oc1..missing" in task.get("msg", ""), out
    assert "404" in task["msg"]


def test_id_and_compartment_are_mutually_exclusive(emu: Any, run_module: Any) -> None:
    rc, task, out = run_module({"lustre_file_system_id": "a", "compartment_id": "b"})
    assert rc != 0
    assert "mutually exclusive" in task.get("msg", ""), out
