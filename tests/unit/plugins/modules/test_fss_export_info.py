# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""fss_export_info through real Ansible and the real oci SDK against the OCI API emulator."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator import generate  # noqa: E402
from tests.oci_emulator.testing import run_oci_module, running_emulator  # noqa: E402

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    data = generate(seed=3, hosts=4, compartments=2, regions=1)
    with running_emulator(data, tmp_path_factory.mktemp("fss-emu")) as running:
        yield running


def run_module(emu: Any, args: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    return run_oci_module(emu, "fss_export_info", args)


def region_data(emu: Any) -> dict[str, Any]:
    return emu.tenancy.data["regions"][emu.tenancy.home_region]


def test_file_system_id_resolves_to_the_mount_target_ip_and_export(emu: Any) -> None:
    data = region_data(emu)
    home = next(f for f in data["fileSystems"] if f["displayName"] == "home")
    rc, task, text = run_module(emu, {"file_system_id": home["id"]})
    assert rc == 0, text
    (rec,) = task["exports"]
    assert rec["mount_target_ip"] == data["mountTargets"][0]["_ip"]
    assert rec["export_path"] == "/home" and rec["file_system_name"] == "home"
    assert rec["source"] == f"{data['mountTargets'][0]['_ip']}:/home"
    assert task["changed"] is False


def test_mount_target_id_lists_every_export_or_the_one_asked(emu: Any) -> None:
    mt = region_data(emu)["mountTargets"][0]
    rc, task, text = run_module(emu, {"mount_target_id": mt["id"]})
    assert rc == 0, text
    assert [r["export_path"] for r in task["exports"]] == ["/apps", "/home"]
    rc, task, text = run_module(emu, {"mount_target_id": mt["id"], "export_path": "/apps"})
    assert rc == 0, text
    assert [r["file_system_name"] for r in task["exports"]] == ["apps"]


def test_unknown_export_path_and_missing_ids_fail_clearly(emu: Any) -> None:
    mt = region_data(emu)["mountTargets"][0]
    rc, task, text = run_module(emu, {"mount_target_id": mt["id"], "export_path": "/nope"})
    assert rc != 0 and "no active export found" in task.get("msg", text) and "/nope" in task.get("msg", text)
    rc, task, text = run_module(emu, {})
    assert rc != 0 and "file_system_id" in task.get("msg", text)
    rc, task, text = run_module(emu, {"file_system_id": "ocid1.filesystem.oc1.iad.doesnotexist"})
    assert rc != 0 and "404" in task.get("msg", text)
