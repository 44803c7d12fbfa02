# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_version_info: the release installed, offered and last run, read without changing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import adhoc

# Stand-ins for the package tools the module asks (this machine has no Slurm installed).
DPKG_QUERY = """#!/bin/sh
# dpkg-query -W -f FORMAT PACKAGE; without PACKAGE, the whole listing
case "$#:$4" in
  3:) printf 'slurmctld\tii \nmunge\tii \nslurmd\trc \n' ;;
  *:slurmctld) printf 'ii 22.05.8-4+deb12u3' ;;
  *) exit 1 ;;
esac
"""
APT_CACHE = """#!/bin/sh
[ "$1 $2" = "policy slurm-client" ] || exit 2
printf 'slurm-client:\\n  Installed: 22.05.8-4+deb12u3\\n  Candidate: 24.11.5-4+deb13u1\\n  Version table:\\n'
"""


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("dpkg-query", DPKG_QUERY), ("apt-cache", APT_CACHE)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    # No slurmctld/slurmd/rpm on this PATH: the module falls through to dpkg-query.
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return tmp_path


def test_reads_installed_candidate_and_recorded(tools: Path) -> None:
    record = tools / "slurm-release"
    record.write_text("22.05.8\n")
    result = adhoc.run_module("slurm_version_info", {"record_path": str(record)})
    assert result.get("failed") is not True, result
    assert result["changed"] is False
    assert (result["installed"], result["candidate"], result["recorded"]) == ("22.05.8", "24.11.5", "22.05.8")
    assert (result["installed_package"], result["candidate_package"]) == ("22.05.8-4+deb12u3", "24.11.5-4+deb13u1")
    # The installed_packages fact comes in the same call ("rc": config files only, not installed).
    assert result["ansible_facts"] == {"oci_gpu_installed_packages": ["munge", "slurmctld"]}


def test_a_missing_record_reads_empty(tools: Path) -> None:
    result = adhoc.run_module("slurm_version_info", {"record_path": str(tools / "absent")}, "--check")
    assert result.get("failed") is not True, result
    assert result["recorded"] == "" and result["installed"] == "22.05.8"


def test_a_failed_package_listing_leaves_the_fact_unset(tools: Path) -> None:
    dpkg = tools / "bin" / "dpkg-query"
    dpkg.write_text(DPKG_QUERY.replace("3:) printf", "3:) exit 2; printf"))
    result = adhoc.run_module("slurm_version_info", {"record_path": str(tools / "absent")}, "--check")
    assert result.get("failed") is not True, result
    assert result["installed"] == "22.05.8"
    assert "oci_gpu_installed_packages" not in result.get("ansible_facts", {})


def test_the_offer_is_read_only_when_asked_or_nothing_is_installed(tools: Path) -> None:
    """apt-cache policy is the slow part: a converged run without slurm_upgrade does not need it."""
    apt = tools / "bin" / "apt-cache"
    apt.write_text(APT_CACHE.replace("#!/bin/sh\n", f"#!/bin/sh\ntouch {tools}/apt-cache-ran\n"))
    skipped = adhoc.run_module("slurm_version_info", {"record_path": str(tools / "absent"), "candidate": False})
    assert skipped.get("failed") is not True, skipped
    assert (skipped["installed"], skipped["candidate"], skipped["candidate_package"]) == ("22.05.8", "", "")
    assert not (tools / "apt-cache-ran").exists()
    # Nothing installed: the candidate is the release the host will run, so it is read all the same.
    dpkg = tools / "bin" / "dpkg-query"
    dpkg.write_text(DPKG_QUERY.replace("*:slurmctld) printf 'ii 22.05.8-4+deb12u3' ;;", ""))
    fresh = adhoc.run_module("slurm_version_info", {"record_path": str(tools / "absent"), "candidate": False})
    assert (fresh["installed"], fresh["candidate"]) == ("", "24.11.5")
    assert (tools / "apt-cache-ran").exists()
