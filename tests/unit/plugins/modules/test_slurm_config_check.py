# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_config_check's pure parts: plugin settings and their files, the private copy slurmd -G reads and
Slurm's messages (the module through ansible-core: tests/functional)."""

from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.modules.slurm_config_check import (
    CheckError,
    global_settings,
    named_settings,
    plugin_files,
    private_copy,
)

CONF = """\
# comment
ClusterName=lab
SelectType=select/cons_tres
TaskPlugin=task/cgroup,task/affinity
GresTypes=gpu
MpiDefault=pmix
SwitchType=switch/none
SlurmdSpoolDir=/var/spool/slurmd
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=gpu[1-2] CPUs=4 SelectType=ignored
PartitionName=gpu Nodes=ALL Default=YES
"""


def test_every_plugin_setting_maps_to_its_file_and_none_needs_none() -> None:
    files = plugin_files(global_settings(CONF) + global_settings("CgroupPlugin=autodetect\n"))
    assert [f for _k, _v, f in files] == [
        "select_cons_tres.so",
        "task_cgroup.so",
        "task_affinity.so",
        "gres_gpu.so",
        "mpi_pmix.so",
    ]
    assert plugin_files([("CgroupPlugin", "cgroup/v2")]) == [("CgroupPlugin", "cgroup/v2", "cgroup_v2.so")]


def test_a_plugin_of_the_wrong_type_is_refused_by_key_and_value() -> None:
    with pytest.raises(CheckError, match=r"SelectType = 'sched/backfill': 'sched/backfill' is not a select plugin"):
        plugin_files([("SelectType", "sched/backfill")])


def test_the_private_copy_moves_spool_pid_and_log_and_keeps_the_rest() -> None:
    copy = private_copy(CONF, "/tmp/p")
    assert "SlurmdSpoolDir=/var/spool/slurmd" not in copy and "/var/log/slurm" not in copy
    assert copy.endswith(
        "SlurmdSpoolDir=/tmp/p/spool\nSlurmdPidFile=/tmp/p/slurmd.pid\nSlurmdLogFile=/tmp/p/slurmd.log\n"
    )
    assert "NodeName=gpu[1-2] CPUs=4 SelectType=ignored" in copy and "TaskPlugin=task/cgroup,task/affinity" in copy


def test_slurm_messages_name_the_settings_they_are_about() -> None:
    settings = global_settings(CONF + "SelectTypeParameters=CR_Bogus\nSlurmctldHost=ctl\n")
    assert named_settings(settings, ["slurmd: error: Bad SelectTypeParameter: CR_Bogus"]) == [
        "SelectTypeParameters=CR_Bogus"
    ]
    assert named_settings(settings, ["slurmd: fatal: Can't find plugin for select/cons_tres"]) == [
        "SelectType=select/cons_tres"
    ]
    assert named_settings(settings, ["slurmctld: something else"]) == []
