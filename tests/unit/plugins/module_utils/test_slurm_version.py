# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._schedule import with_file_changes
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import (
    behaviour,
    change_plan,
    parse_version,
)

BOTH = ["slurmctld", "slurmd"]
BASE = """\
ClusterName=lab
SlurmctldHost=ctl
GresTypes=gpu
SelectType=select/cons_tres
MaxJobCount=10000
SlurmdTimeout=300
NodeName=gpu[1-2] CPUs=2 RealMemory=1000 Gres=gpu:h100:8
NodeName=cpu1 CPUs=2 RealMemory=1000
PartitionName=gpu Nodes=ALL Default=YES
"""


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("slurm 22.05.8", (22, 5)),
        ("slurm-wlm 24.11.5", (24, 11)),
        ("25.05", (25, 5)),
        ((23, 11), (23, 11)),
    ],
)
def test_parse_version(text, expected) -> None:
    assert parse_version(text) == expected


def test_parse_version_refuses_garbage() -> None:
    with pytest.raises(ValueError, match="'no version here'"):
        parse_version("no version here")


def test_behaviour_rows() -> None:
    assert behaviour("22.05.8")["bad_config_kills_slurmctld"] is True
    assert behaviour("23.02.7")["bad_config_kills_slurmctld"] is True
    assert behaviour("23.11.1")["bad_config_kills_slurmctld"] is False
    assert behaviour("24.05.4")["node_change"] == "restart"
    assert behaviour("24.11.5")["node_change"] == "reconfigure"
    assert behaviour("25.05.0")["node_change"] == "reconfigure"
    with pytest.raises(ValueError, match=r"21\.08 is older"):
        behaviour("21.08.8")


FILE_FLAGS = {"gres_changed": "gres.conf", "cgroup_changed": "cgroup.conf", "dbd_changed": "slurmdbd.conf"}

# (version, old, new, kwargs: the files that changed on the host) -> (restart, reconfigure)
CASES = [
    ("first install", "22.05", None, BASE, {}, [], False),
    ("first install with gres", "22.05", "", BASE, {"gres_changed": True, "cgroup_changed": True}, [], False),
    ("no change", "22.05", BASE, BASE, {}, [], False),
    ("plain key", "22.05", BASE, edit(BASE, "SlurmdTimeout=300", "SlurmdTimeout=600"), {}, [], True),
    ("ctld-only key", "22.05", BASE, edit(BASE, "MaxJobCount=10000", "MaxJobCount=20000"), {}, ["slurmctld"], False),
    # JWT on (issue 41): slurmctld loads auth plugins and reads the key only when it starts
    (
        "jwt turned on",
        "22.05",
        BASE,
        BASE + "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key=/etc/slurm/jwt_hs256.key\n",
        {},
        ["slurmctld"],
        False,
    ),
    (
        "all-daemon key",
        "24.11",
        BASE,
        edit(BASE, "GresTypes=gpu", "GresTypes=gpu,shard"),
        {},
        ["slurmctld", "slurmd"],
        False,
    ),
    ("partition added", "22.05", BASE, BASE + "PartitionName=debug Nodes=cpu1\n", {}, [], True),
    ("node added 22.05", "22.05", BASE, edit(BASE, "gpu[1-2]", "gpu[1-3]"), {}, BOTH, False),
    ("node added 24.05", "24.05", BASE, edit(BASE, "gpu[1-2]", "gpu[1-3]"), {}, BOTH, False),
    ("node added 24.11", "24.11", BASE, edit(BASE, "gpu[1-2]", "gpu[1-3]"), {}, [], True),
    (
        "node redefined 23.11",
        "23.11",
        BASE,
        edit(BASE, "cpu1 CPUs=2", "cpu1 CPUs=4"),
        {},
        ["slurmctld", "slurmd"],
        False,
    ),
    ("node redefined 25.05", "25.05", BASE, edit(BASE, "cpu1 CPUs=2", "cpu1 CPUs=4"), {}, [], True),
    ("gres only", "22.05", BASE, BASE, {"gres_changed": True}, ["slurmd"], False),
    ("cgroup only", "24.11", BASE, BASE, {"cgroup_changed": True}, ["slurmd"], False),
    ("dbd only", "22.05", BASE, BASE, {"dbd_changed": True}, ["slurmdbd"], False),
    # containers: slurmstepd reads oci.conf and the SPANK plugin stack; slurmd restarts on both releases
    ("oci.conf 22.05", "22.05", BASE, BASE, {"files_changed": ["oci.conf"]}, ["slurmd"], False),
    ("oci.conf 24.11", "24.11", BASE, BASE, {"files_changed": ["oci.conf"]}, ["slurmd"], False),
    (
        "pyxis",
        "24.11",
        BASE,
        BASE,
        {"files_changed": ["plugstack.conf", "plugstack.conf.d/pyxis.conf"]},
        ["slurmd"],
        False,
    ),
    ("oci.conf first install", "24.11", "", BASE, {"files_changed": ["oci.conf"]}, [], False),
    (
        "prolog added",
        "22.05",
        BASE,
        BASE + "Prolog=/etc/slurm/prolog.d/*\n",
        {"files_changed": ["oci.conf"]},
        ["slurmd"],
        True,
    ),
    ("unrelated file", "22.05", BASE, BASE, {"files_changed": ["slurmd-dropin"]}, [], False),
    # tenants: PrivateData is re-read on a reconfigure; slurmdbd.conf's copy needs slurmdbd restarted
    ("private data", "22.05", BASE, BASE + "PrivateData=jobs,usage,users\n", {"dbd_changed": True}, ["slurmdbd"], True),
    (
        "enforcement",
        "22.05",
        BASE + "AccountingStorageEnforce=associations\n",
        BASE + "AccountingStorageEnforce=associations,limits,qos,safe\n",
        {},
        ["slurmctld"],
        False,
    ),
    ("backfill window", "24.11", BASE, BASE + "SchedulerParameters=bf_window=10080,bf_resolution=420\n", {}, [], True),
    (
        "everything, in order",
        "22.05",
        BASE,
        edit(BASE, "GresTypes=gpu", "GresTypes=gpu,shard"),
        {"dbd_changed": True, "gres_changed": True},
        ["slurmdbd", "slurmctld", "slurmd"],
        False,
    ),
]


@pytest.mark.parametrize(("label", "version", "old", "new", "kwargs", "restart", "reconfigure"), CASES)
def test_change_plan(label, version, old, new, kwargs, restart, reconfigure) -> None:
    """slurm.conf's change across the cluster (change_plan), with what the changed files of a host add
    (slurm/_schedule.with_file_changes, what the public filter slurm_change_plan answers)."""
    changed = list(kwargs.get("files_changed", []))
    changed += [name for key, name in FILE_FLAGS.items() if kwargs.get(key)]
    plan = with_file_changes(change_plan(old, new, version), changed, first_install=not old)
    assert plan["restart"] == restart, (label, plan["reasons"])
    assert plan["reconfigure"] is reconfigure, (label, plan["reasons"])
    if restart or reconfigure:
        assert plan["reasons"], label


def test_change_plan_reports_added_and_removed_nodes() -> None:
    plan = change_plan(BASE, edit(BASE, "gpu[1-2]", "gpu[2-3]"), "24.11")
    assert plan["added_nodes"] == ["gpu3"]
    assert plan["removed_nodes"] == ["gpu1"]


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_change_plan_names_what_would_end_running_jobs(version) -> None:
    """A partition gone or renamed, and a kept node whose resources change, end the jobs in or on them
    (issue 35 item 4): the plan names them for the role's job check; scheduler-only words do not."""
    renamed = edit(BASE, "PartitionName=gpu", "PartitionName=batch")
    assert change_plan(BASE, renamed, version)["removed_partitions"] == ["gpu"]
    added = BASE + "PartitionName=debug Nodes=cpu1\n"
    assert change_plan(BASE, added, version)["removed_partitions"] == []
    assert change_plan(added, BASE, version)["removed_partitions"] == ["debug"]
    smaller = edit(BASE, "NodeName=gpu[1-2] CPUs=2 RealMemory=1000", "NodeName=gpu[1-2] CPUs=2 RealMemory=900")
    assert change_plan(BASE, smaller, version)["resized_nodes"] == ["gpu1", "gpu2"]
    one_gres = edit(
        BASE,
        "NodeName=gpu[1-2] CPUs=2 RealMemory=1000 Gres=gpu:h100:8",
        "NodeName=gpu1 CPUs=2 RealMemory=1000 Gres=gpu:h100:8\nNodeName=gpu2 CPUs=2 RealMemory=1000 Gres=gpu:h100:4",
    )
    assert change_plan(BASE, one_gres, version)["resized_nodes"] == ["gpu2"]
    featured = edit(
        BASE, "NodeName=cpu1 CPUs=2 RealMemory=1000", "NodeName=cpu1 CPUs=2 RealMemory=1000 Weight=5 Features=x"
    )
    plan = change_plan(BASE, featured, version)
    assert (plan["resized_nodes"], plan["removed_partitions"]) == ([], [])
    assert plan["reasons"]
