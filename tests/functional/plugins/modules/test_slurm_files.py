# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_files: a node's Slurm directories and files in one call, run by ansible-core."""

from __future__ import annotations

import json
from pathlib import Path

from . import adhoc


def run_module(args: dict, *extra: str) -> dict:
    return adhoc.run_module("slurm_files", args, *extra)


def file_set(root: Path) -> dict:
    return {
        "node_roles": ["compute"],
        "directories": [
            {"path": str(root / "etc"), "mode": "0755"},
            {"path": str(root / "spool"), "mode": "0700", "roles": ["compute"]},
            {"path": str(root / "state"), "mode": "0700", "roles": ["controller"]},
        ],
        "files": [
            {"name": "gres.conf", "path": str(root / "etc" / "gres.conf"), "content": "AutoDetect=off\n"},
            {"name": "slurm.conf", "path": str(root / "etc" / "slurm.conf"), "content": "ClusterName=lab\n"},
            {"name": "ctld", "path": str(root / "ctld.conf"), "content": "x\n", "roles": ["controller"]},
        ],
    }


def test_check_mode_writes_nothing_then_a_run_writes_what_it_reported(tmp_path: Path) -> None:
    args = file_set(tmp_path)
    check = run_module(args, "--check", "--diff")
    assert check["changed"] is True
    assert check["changed_names"] == ["gres.conf", "slurm.conf"]
    assert not (tmp_path / "etc").exists()
    assert [d["after"] for d in check["diff"] if d["after_header"].endswith("slurm.conf")] == ["ClusterName=lab\n"]

    first = run_module(args)
    assert first["changed_names"] == ["gres.conf", "slurm.conf"]
    assert (tmp_path / "etc" / "slurm.conf").read_text() == "ClusterName=lab\n"
    assert oct((tmp_path / "spool").stat().st_mode & 0o777) == "0o700"
    # Items for roles this node does not have are left alone.
    assert not (tmp_path / "state").exists()
    assert not (tmp_path / "ctld.conf").exists()

    again = run_module(args, "--diff")
    assert (again["changed"], again["changed_names"], again["changed_paths"]) == (False, [], [])


def test_only_the_changed_file_is_named_and_its_diff_shown(tmp_path: Path) -> None:
    args = file_set(tmp_path)
    run_module(args)
    args["files"][0]["content"] = "AutoDetect=nvml\n"
    (tmp_path / "etc" / "slurm.conf").chmod(0o600)
    result = run_module(args, "--diff")
    assert result["changed_names"] == ["gres.conf", "slurm.conf"]
    gres = next(d for d in result["diff"] if d["after_header"].endswith("gres.conf"))
    assert (gres["before"], gres["after"]) == ("AutoDetect=off\n", "AutoDetect=nvml\n")
    # slurm.conf changed by mode only: named, no content diff.
    assert not any(d["after_header"].endswith("slurm.conf") for d in result["diff"])
    assert oct((tmp_path / "etc" / "slurm.conf").stat().st_mode & 0o777) == "0o644"


def test_a_candidate_that_fails_validation_never_replaces_the_live_file(tmp_path: Path) -> None:
    args = file_set(tmp_path)
    run_module(args)
    args["files"][1]["content"] = "ClusterName=broken\n"
    args["files"][1]["validate"] = "grep -q ClusterName=lab %s"
    result = run_module(args)
    assert result.get("failed") is True
    assert "failed validation" in result["msg"] and "slurm.conf" in result["msg"]
    assert (tmp_path / "etc" / "slurm.conf").read_text() == "ClusterName=lab\n"
    assert [p.name for p in (tmp_path / "etc").iterdir() if p.name.startswith(".")] == []


def test_an_unknown_owner_fails_a_real_run_but_is_a_change_in_check_mode(tmp_path: Path) -> None:
    args = {"directories": [{"path": str(tmp_path / "log"), "owner": "no-such-user-here"}]}
    check = run_module(args, "--check")
    assert (check.get("failed"), check["changed"]) == (None, True)
    real = run_module(args)
    assert real.get("failed") is True and "no-such-user-here" in real["msg"]


def test_state_absent_removes_a_file_without_reading_it(tmp_path: Path) -> None:
    secret = tmp_path / "slurmdbd.conf"
    secret.write_text("StoragePass=hunter2\n")
    args = {"files": [{"name": "slurmdbd.conf", "path": str(secret), "state": "absent"}]}
    check = run_module(args, "--check", "--diff")
    assert check["changed_names"] == ["slurmdbd.conf"] and secret.exists()
    assert "hunter2" not in json.dumps(check)
    removed = run_module(args)
    assert removed["changed_names"] == ["slurmdbd.conf"] and not secret.exists()
    assert run_module(args)["changed"] is False


def test_secret_content_is_written_but_never_shown(tmp_path: Path) -> None:
    secret = "StoragePass=s3cr3t-Dbd-pw\n"
    args = {
        "node_roles": ["dbd"],
        "files": [
            {"name": "slurmdbd.conf", "path": str(tmp_path / "slurmdbd.conf"), "secret_content": secret, "mode": "0600"}
        ],
    }
    for extra in (("--check", "--diff"), ("--diff", "-vvv")):
        result = run_module(args, *extra)
        assert result["changed_names"] == ["slurmdbd.conf"]
        assert "s3cr3t-Dbd-pw" not in json.dumps(result), result
        assert "withheld" in result["diff"][0]["after"]
    assert (tmp_path / "slurmdbd.conf").read_text() == secret
    assert oct((tmp_path / "slurmdbd.conf").stat().st_mode & 0o777) == "0o600"
    assert run_module(args, "--diff")["changed"] is False
    both = run_module({**args, "files": [{**args["files"][0], "content": "x\n"}]})
    assert both.get("failed") and "not both" in both["msg"]


def test_a_file_can_keep_its_content_out_of_the_diff(tmp_path: Path) -> None:
    program = {"name": "health program", "path": str(tmp_path / "health"), "mode": "0755", "diff": False}
    args = {"files": [{**program, "content": "#!/usr/bin/python3\nprint('old')\n"}]}
    first = run_module(args, "--diff")
    assert first["changed_names"] == ["health program"]
    assert "print" not in json.dumps(first["diff"]) and "not shown" in first["diff"][0]["after"]
    args = {"files": [{**program, "content": "#!/usr/bin/python3\nprint('new')\n"}]}
    second = run_module(args, "--diff")
    assert second["changed_names"] == ["health program"] and "print" not in json.dumps(second["diff"])
    assert (tmp_path / "health").read_text() == "#!/usr/bin/python3\nprint('new')\n"
    assert run_module(args, "--diff")["changed"] is False


def test_the_record_lets_the_probe_vouch_for_a_converged_node(tmp_path: Path) -> None:
    """slurm_files keeps a record of what it manages; the probe reads it back, and the filter
    files_not_in_place tells from that read alone whether the call would change anything."""
    from ansible_collections.oci_gpu.cluster.plugins.filter.files_not_in_place import files_not_in_place

    args = {**file_set(tmp_path), "record": str(tmp_path / "rec" / "files.json")}

    def probe() -> dict:
        res = adhoc.run_module("slurm_node_info", {"name": "n1", "roles": ["login"], "files_record": args["record"]})
        assert "files_state" in res, res
        return res["files_state"]

    run_module(args, "--check")
    assert not (tmp_path / "rec").exists(), "check mode keeps no record"
    assert probe() == {}
    assert files_not_in_place(args, args["node_roles"], {}) == [str(tmp_path / "etc"), str(tmp_path / "spool")] + [
        str(tmp_path / "etc" / n) for n in ("gres.conf", "slurm.conf")
    ]
    assert run_module(args)["changed"] is True
    # the items of other roles are not in the record
    assert sorted(probe()) == sorted([str(tmp_path / p) for p in ("etc", "spool", "etc/gres.conf", "etc/slurm.conf")])
    assert files_not_in_place(args, args["node_roles"], probe()) == []
    # a file edited by hand, and a mode changed, are named; the call puts them back
    (tmp_path / "etc" / "gres.conf").write_text("AutoDetect=nvml\n")
    (tmp_path / "spool").chmod(0o755)
    assert files_not_in_place(args, args["node_roles"], probe()) == [
        str(tmp_path / "spool"),
        str(tmp_path / "etc" / "gres.conf"),
    ]
    assert run_module(args)["changed_paths"] == [str(tmp_path / "spool"), str(tmp_path / "etc" / "gres.conf")]
    assert files_not_in_place(args, args["node_roles"], probe()) == []
    # a file the manifest gains is not in the record yet: the call runs
    args["files"].append({"name": "cgroup.conf", "path": str(tmp_path / "etc" / "cgroup.conf"), "content": "x\n"})
    assert files_not_in_place(args, args["node_roles"], probe()) == [str(tmp_path / "etc" / "cgroup.conf")]
