# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm's upgrade window (issue 43 item 8), with expectations written out from Slurm's upgrade
guide: slurmdbd and slurmctld read the state of at most two earlier releases, three from 24.11;
slurmd may not be newer than slurmctld; slurmdbd may not be older than slurmctld."""

from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._plan import SlurmPlanError, preflight_cluster
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import (
    releases_between,
    upgrade_path,
    version_problems,
)


@pytest.mark.parametrize(
    ("old", "new", "steps"),
    [
        ("22.05", "22.05.9", 0),
        ("22.05", "23.02", 1),
        ("22.05", "23.11", 2),
        ("22.05", "24.11", 4),
        ("23.02", "24.11", 3),
        ("24.11", "25.05", 1),
        ("25.11", "26.05", 1),  # after the table: May and November
        ("25.05", "26.11", 3),
        ("24.11", "23.11", -2),
    ],
)
def test_releases_between(old: str, new: str, steps: int) -> None:
    assert releases_between(old, new) == steps


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ("22.05", "23.11", ["22.05", "23.11"]),
        ("22.05", "24.11", ["22.05", "23.11", "24.11"]),
        ("23.02", "24.11", ["23.02", "24.11"]),
        ("23.02", "24.05", ["23.02", "24.05"]),
        ("21.08", "25.05", ["21.08", "23.02", "24.11", "25.05"]),
        ("24.11", "26.11", ["24.11", "26.05", "26.11"]),
    ],
)
def test_upgrade_path_takes_the_longest_steps_slurm_supports(old: str, new: str, path: list[str]) -> None:
    assert upgrade_path(old, new) == path


def host(roles: list[str], installed: str = "", candidate: str = "", recorded: str = "") -> dict:
    return {"roles": roles, "installed": installed, "candidate": candidate, "recorded": recorded}


CTL = ["controller", "dbd"]


def test_the_same_release_everywhere_is_fine_with_or_without_upgrade() -> None:
    hosts = {
        "ctl": host(CTL, "22.05.8", "22.05.8", "22.05.8"),
        "gpu1": host(["compute"], "22.05.8", "22.05.9"),
        "login": host(["login"], "22.05.8", "22.05.8"),
    }
    assert version_problems(hosts, upgrade=False) == []
    assert version_problems(hosts, upgrade=True) == []


def test_debian_13_packages_offered_are_ignored_unless_the_run_upgrades() -> None:
    hosts = {"ctl": host(CTL, "22.05.8", "24.11.5"), "gpu1": host(["compute"], "22.05.8", "24.11.5")}
    assert version_problems(hosts, upgrade=False) == []
    assert version_problems(hosts, upgrade=True) == [
        "host ctl: this run would upgrade Slurm 22.05 to 24.11 (slurm_upgrade); that is 4 releases on, and "
        "Slurm 24.11 reads the state and the accounting database of at most 3 releases back: upgrade through "
        "22.05 -> 23.11 -> 24.11, one step per run",
        "host gpu1: this run would upgrade Slurm 22.05 to 24.11 (slurm_upgrade); that is 4 releases on, and "
        "Slurm 24.11 reads the state and the accounting database of at most 3 releases back: upgrade through "
        "22.05 -> 23.11 -> 24.11, one step per run",
    ]


def test_a_supported_step_upgrades() -> None:
    hosts = {"ctl": host(CTL, "23.02.7", "24.11.5"), "gpu1": host(["compute"], "23.02.7", "24.11.5")}
    assert version_problems(hosts, upgrade=True) == []


def test_packages_upgraded_outside_the_role_are_seen_from_the_record() -> None:
    hosts = {"ctl": host(CTL, "24.11.5", "24.11.5", recorded="22.05.8")}
    assert version_problems(hosts, upgrade=False) == [
        "host ctl: its Slurm packages were changed outside this role: the daemons last ran 22.05, the packages "
        "are 24.11; that is 4 releases on, and Slurm 24.11 reads the state and the accounting database of at "
        "most 3 releases back: upgrade through 22.05 -> 23.11 -> 24.11, one step per run (put 22.05 back first)"
    ]


def test_a_downgrade_is_refused() -> None:
    problems = version_problems({"ctl": host(CTL, "23.11.1", "23.11.1", recorded="24.05.2")}, upgrade=False)
    assert problems == [
        "host ctl: its Slurm packages were changed outside this role: the daemons last ran 24.05, the packages "
        "are 23.11; Slurm cannot go back a release (the state files and the accounting database 24.05 wrote "
        "are not readable by 23.11): put 24.05 back"
    ]


def test_a_new_node_of_a_newer_release_is_refused_by_name() -> None:
    hosts = {"ctl": host(CTL, "22.05.8", "22.05.8"), "gpu3": host(["compute"], "", "24.11.5")}
    assert version_problems(hosts, upgrade=False) == [
        "host gpu3: Slurm 24.11 would be newer than the controllers' 22.05; slurmd and the client commands may "
        "not be newer than slurmctld: install 22.05 on gpu3, or upgrade the controllers first"
    ]


def test_slurmdbd_older_than_slurmctld_and_slurmd_too_far_behind() -> None:
    hosts = {
        "ctl": host(["controller"], "24.11.5"),
        "dbd": host(["dbd"], "24.05.1"),
        "gpu1": host(["compute"], "22.05.8"),
        "gpu2": host(["compute"], "23.02.7"),
    }
    assert version_problems(hosts, upgrade=False) == [
        "host dbd: slurmdbd would run 24.05, older than slurmctld's 24.11: slurmdbd must be upgraded first",
        "host gpu1: Slurm 22.05 is more than 3 releases behind the controllers' 24.11, which no longer talk to it: "
        "upgrade it through 22.05 -> 23.11 -> 24.11",
    ]


def test_the_preflight_refuses_before_anything_changes() -> None:
    cluster = {"cluster_name": "lab", "partitions": [{"name": "gpu", "nodes": "ALL", "default": True}]}
    hosts = {
        "controllers": ["ctl"],
        "dbd": ["ctl"],
        "compute": ["gpu1"],
        "login": [],
        "in_run": ["ctl", "gpu1"],
        "standing": ["ctl", "gpu1"],
    }
    versions = {
        "ctl": {"installed": "22.05.8", "candidate": "22.05.8", "recorded": ""},
        "gpu1": {"installed": "", "candidate": "24.11.5", "recorded": ""},
    }
    assert preflight_cluster(cluster, hosts, versions={"ctl": versions["ctl"]})["nodes"]["lost"] == []
    with pytest.raises(SlurmPlanError) as err:
        preflight_cluster(cluster, hosts, versions=versions)
    assert "host gpu1: Slurm 24.11 would be newer than the controllers' 22.05" in str(err.value)
