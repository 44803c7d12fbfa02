# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_qos's helpers (_sacctmgr): Slurm's value formats, the one write a change needs, refusals before
any call, sacctmgr's exit-1 messages (the module through ansible-core: tests/functional)."""

from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm import _sacctmgr as S

# sacctmgr --noheader --parsable2 show qos format=Name,Description,...,MaxSubmitPU, as 24.11 prints
# a fresh cluster's normal QOS and one with limits.
SHOW = """\
normal|Normal QOS default|0||cluster|||||||
gpu-long|long gpu jobs|10|normal|cluster|DenyOnLimit,NoReserve|gres/gpu=16|cpu=64,mem=512G|gres/gpu=8|2-00:00:00|4|20
"""


def test_times_and_tres_compare_as_slurm_stores_them() -> None:
    assert S.parse_time("2-00:00:00") == S.parse_time("48:00:00") == S.parse_time("2880") == 172800
    assert S.parse_time("90:30") == 5430 and S.parse_time("1-12") == 129600 and S.parse_time(30) == 1800
    assert S.parse_time("-1") is None and S.parse_time("UNLIMITED") is None and S.parse_time("") is None
    assert S.format_time(172800) == "2-00:00:00" and S.format_time(None) == "-1"
    with pytest.raises(ValueError, match="'two days' is not a Slurm time"):
        S.parse_time("two days")
    assert S.parse_tres("cpu=64,mem=512G,gres/gpu=8") == {"cpu": 64, "mem": 524288, "gres/gpu": 8}
    assert S.parse_tres({"GRES/GPU": 4, "mem": "2048"}) == {"gres/gpu": 4, "mem": 2048}
    assert S.parse_tres("gres/gpu=-1") == {} and S.parse_tres(None) == {}
    assert S.tres_arg({"cpu": 64, "gres/gpu": 8}, {"gres/gpu": 4}) == "cpu=-1,gres/gpu=4"
    with pytest.raises(ValueError, match="TRES gres/gpu='four'"):
        S.parse_tres({"gres/gpu": "four"})


def test_show_output_parses_into_normalised_fields() -> None:
    qos = S.parse_qos(SHOW)
    assert sorted(qos) == ["gpu-long", "normal"]
    assert qos["gpu-long"] == {
        "description": "long gpu jobs",
        "priority": 10,
        "preempt": ["normal"],
        "preempt_mode": "cluster",
        "flags": ["DenyOnLimit", "NoReserve"],
        "grp_tres": {"gres/gpu": 16},
        "max_tres_per_job": {"cpu": 64, "mem": 524288},
        "max_tres_per_user": {"gres/gpu": 8},
        "max_wall": 172800,
        "max_jobs_per_user": 4,
        "max_submit_jobs_per_user": 20,
    }
    assert qos["normal"]["max_wall"] is None and qos["normal"]["grp_tres"] == {}
    with pytest.raises(S.SacctmgrError, match="unexpected sacctmgr show qos line"):
        S.parse_qos("broken|line\n")


def test_plan_writes_only_what_differs() -> None:
    have = S.parse_qos(SHOW)
    same = {"max_wall": "48:00:00", "max_tres_per_user": "gres/gpu=8", "flags": ["noreserve", "DENYONLIMIT"]}
    assert S.plan_qos("GPU-Long", "present", same, have)["argv"] is None
    plan = S.plan_qos("gpu-long", "present", {"max_tres_per_user": {"gres/gpu": 4}, "max_wall": -1}, have)
    assert plan["argv"] == [
        "sacctmgr",
        "--immediate",
        "modify",
        "qos",
        "where",
        "name=gpu-long",
        "set",
        "MaxTRESPerUser=gres/gpu=4",
        "MaxWall=-1",
    ]
    assert plan["changes"] == ["max_tres_per_user", "max_wall"]
    assert plan["before"] == {"max_tres_per_user": {"gres/gpu": 8}, "max_wall": 172800}
    assert plan["after"] == {"max_tres_per_user": {"gres/gpu": 4}, "max_wall": None}
    new = S.plan_qos("Short", "present", {"priority": 5, "grp_tres": {}, "max_wall": "4:00:00"}, have)
    assert new["argv"] == ["sacctmgr", "--immediate", "add", "qos", "short", "MaxWall=0-04:00:00", "Priority=5"]
    gone = S.plan_qos("gpu-long", "absent", {}, have)
    assert gone["argv"] == ["sacctmgr", "--immediate", "delete", "qos", "where", "name=gpu-long"]
    assert S.plan_qos("nosuch", "absent", {}, have)["argv"] is None
    cleared = S.plan_qos("gpu-long", "present", {"flags": [], "preempt": [], "grp_tres": {}}, have)
    assert cleared["argv"][-3:] == ["Flags=-1", "GrpTRES=gres/gpu=-1", "Preempt="]


def test_refusals_name_the_qos_the_field_and_the_value() -> None:
    assert S.qos_problems("g", {"flags": ["DenyOnLimits"], "max_wall": "soon", "preempt_mode": "kill"}) == [
        "qos g: max_wall: 'soon' is not a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)",
        "qos g: flags: unknown DenyOnLimits (known: " + ", ".join(S.QOS_FLAGS) + ")",
        "qos g: preempt_mode: 'kill' is not one of cluster, cancel, requeue, suspend, off",
    ]


@pytest.mark.parametrize(
    ("rc", "out", "kind"),
    [
        (0, "", "ok"),
        (1, " Nothing modified\n", "noop"),
        (1, " Nothing new added.\n", "noop"),
        # as 24.11 printed them in the lab
        (1, " error: No parent account 'science' on cluster 'lab'\n", "error"),
        (
            1,
            "No account nosuch on cluster lab, skipping.\nNothing added.\nMake sure the accounts requested here have "
            "been added to the system/cluster. (sacctmgr add account...)\n",
            "error",
        ),
        (1, " Error with request: Job(s) active, cancel job(s) before remove\n  JobID = 2          C = lab\n", "jobs"),
        (1, " Parent account 'nosuch' doesn't exist.\n", "error"),  # 22.05's source, not yet seen in the lab
        (1, " Unknown option: Bogus=1\n", "error"),
    ],
)
def test_sacctmgr_exit_1_means_nothing_to_do_or_an_error(rc: int, out: str, kind: str) -> None:
    assert S.outcome(rc, out, "")[0] == kind


def test_job_ids_in_a_refused_removal() -> None:
    text = (
        " Error with request: Job(s) active, cancel job(s) before remove\n"
        "  JobID = 12         C = lab        A = physics    U = opc      \n"
        "  JobID = 9          C = lab        A = physics    U = alice    \n"
    )
    assert S.job_ids(text) == ["9", "12"]
