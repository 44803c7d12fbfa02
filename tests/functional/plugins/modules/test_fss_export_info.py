# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""fss_export_info through real Ansible and the real oci SDK against the OCI API emulator."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[4]
MODULE = "fss_export_info"  # what the run_module fixture runs


def region_data(emu: Any) -> dict[str, Any]:
    return emu.tenancy.data["regions"][emu.tenancy.home_region]


def test_file_system_id_resolves_to_the_mount_target_ip_and_export(emu: Any, run_module: Any) -> None:
    data = region_data(emu)
    home = next(f for f in data["fileSystems"] if f["displayName"] == "home")
    rc, task, text = run_module({"file_system_id": home["id"]})
    assert rc == 0, text
    (rec,) = task["exports"]
    assert rec["mount_target_ip"] == data["mountTargets"][0]["_ip"]
    assert rec["export_path"] == "/home" and rec["file_system_name"] == "home"
    assert rec["source"] == f"{data['mountTargets'][0]['_ip']}:/home"
    assert task["changed"] is False


def test_mount_target_id_lists_every_export_or_the_one_asked(emu: Any, run_module: Any) -> None:
    mt = region_data(emu)["mountTargets"][0]
    rc, task, text = run_module({"mount_target_id": mt["id"]})
    assert rc == 0, text
    assert [r["export_path"] for r in task["exports"]] == ["/apps", "/home"]
    rc, task, text = run_module({"mount_target_id": mt["id"], "export_path": "/apps"})
    assert rc == 0, text
    assert [r["file_system_name"] for r in task["exports"]] == ["apps"]


def test_unknown_export_path_and_missing_ids_fail_clearly(emu: Any, run_module: Any) -> None:
    mt = region_data(emu)["mountTargets"][0]
    rc, task, text = run_module({"mount_target_id": mt["id"], "export_path": "/nope"})
    assert rc != 0 and "no active export found" in task.get("msg", text) and "/nope" in task.get("msg", text)
    rc, task, text = run_module({})
    assert rc != 0 and "file_system_id" in task.get("msg", text)
    rc, task, text = run_module({"file_system_id": "ocid1.filesystem.oc1.iad.doesnotexist"})
    assert rc != 0 and "404" in task.get("msg", text)


def test_several_lookups_in_one_call_keep_their_keys_and_order(emu: Any, run_module: Any) -> None:
    data = region_data(emu)
    fs = {f["displayName"]: f["id"] for f in data["fileSystems"]}
    mt = data["mountTargets"][0]
    lookups = [
        {"key": "apps-by-fs", "file_system_id": fs["apps"]},
        {"key": "home-by-mt", "mount_target_id": mt["id"], "export_path": "/home", "path": "/home"},
    ]
    rc, task, text = run_module({"lookups": lookups})
    assert rc == 0, text
    assert [item["key"] for item in task["lookups"]] == ["apps-by-fs", "home-by-mt"]
    assert [r["source"] for r in task["lookups"][0]["exports"]] == [f"{mt['_ip']}:/apps"]
    assert [r["source"] for r in task["lookups"][1]["exports"]] == [f"{mt['_ip']}:/home"]
    # Each answer is what the single-lookup form returns for the same question.
    rc, single, text = run_module({"file_system_id": fs["apps"]})
    assert rc == 0, text
    assert single["exports"] == task["lookups"][0]["exports"]


def test_lookups_refuse_an_entry_without_ids_and_mixing_with_single_options(emu: Any, run_module: Any) -> None:
    rc, task, text = run_module({"lookups": [{"key": "x", "export_path": "/home"}]})
    assert rc != 0 and "lookups[0]" in task.get("msg", text)
    fs = region_data(emu)["fileSystems"][0]["id"]
    rc, task, text = run_module({"lookups": [{"key": "x", "file_system_id": fs}], "file_system_id": fs})
    assert rc != 0 and "mutually exclusive" in task.get("msg", text)


def test_the_module_run_as_on_a_remote_host_answers_as_the_in_process_action(
    emu: Any, run_module: Any, tmp_path: Path
) -> None:
    """Over a local connection the action plugin does the lookups; delegated elsewhere the module
    runs there. Run the module file itself, as Ansible runs it on a host, and compare."""
    import json
    import os
    import subprocess

    home = next(f for f in region_data(emu)["fileSystems"] if f["displayName"] == "home")
    region = emu.tenancy.home_region
    args = {
        "config_file": str(emu.creds.config_file),
        "service_endpoint": emu.endpoints[region],
        "lookups": [{"key": "home", "file_system_id": home["id"]}],
    }
    (tmp_path / "args.json").write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=str(REPO / "build" / "collections"))
    proc = subprocess.run(
        [sys.executable, str(REPO / "plugins" / "modules" / "fss_export_info.py"), str(tmp_path / "args.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    as_module = json.loads(proc.stdout)
    rc, as_action, text = run_module({"lookups": args["lookups"]})
    assert rc == 0, text
    assert as_module["lookups"] == as_action["lookups"] and as_module["lookups"][0]["exports"]
