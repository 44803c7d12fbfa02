# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The roles' input checks through ansible-playbook on this host: each refusal names key, value, host.

Only the preflight task files run (connection local, nothing changes on this host).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from ansible_harness import run_playbook, shown

GOOD_KEY = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9w"  # 42 bytes


def preflight(tmp_path: Path, role: str, extra: dict) -> subprocess.CompletedProcess[str]:
    play = [
        {
            "name": "Preflight only",
            "hosts": "all",
            "gather_facts": True,
            "gather_subset": ["min"],
            "tasks": [
                {
                    "name": "Run the checks",
                    "ansible.builtin.include_role": {"name": f"oci_gpu.cluster.{role}", "tasks_from": "preflight"},
                }
            ],
        }
    ]
    return run_playbook(tmp_path, play, extra, host="node7")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"munge_key": "not base64!", "munge_key_source_host": "node7"}, "munge_key on host node7 is not usable"),
        (
            {"munge_key": "QUJD", "munge_key_source_host": "node7"},
            "munge_key on host node7 is not usable: key decodes to 3 bytes; munge needs 32 to 1024",
        ),
        ({"munge_key": "", "munge_key_source_host": "ctl9"}, "munge_key_source_host 'ctl9' (seen from host node7)"),
    ],
    ids=["bad-key", "short-key", "source-not-in-play"],
)
def test_munge_refusals_name_the_key_and_the_host(tmp_path: Path, extra: dict, expected: str) -> None:
    res = preflight(tmp_path, "munge", extra)
    out = shown(res)
    assert res.returncode != 0 and expected in out, out
    assert "not base64!" not in out  # a key, even a bad one, is never echoed


def test_munge_accepts_a_good_key_and_an_empty_one_with_a_source_in_the_play(tmp_path: Path) -> None:
    good = (
        {"munge_key": GOOD_KEY, "munge_key_source_host": "ctl9"},
        {"munge_key": "", "munge_key_source_host": "node7"},
    )
    for extra in good:
        res = preflight(tmp_path, "munge", extra)
        assert res.returncode == 0, res.stdout + res.stderr


def test_slurm_spec_refuses_bad_types_and_choices_at_once(tmp_path: Path) -> None:
    res = preflight(
        tmp_path,
        "slurm",
        {
            "slurm_controller_hosts": ["node7"],
            "slurm_node_roles": ["compute"],
            "slurm_gpu_count": "eight",
            "slurm_gres_autodetect": "nvlm",
        },
    )
    out = shown(res)
    assert res.returncode != 0, out
    # Types and choices: the role's argument spec, through its preflight entry point, all at once.
    assert "fatal: [node7]" in out and 'argument_spec_name": "preflight"' in out, out
    # ansible-core 2.17 and 2.18 name the type as <class 'str'>.
    type_error = r"argument 'slurm_gpu_count' is of type (str|<class 'str'>) and we were unable to convert to int"
    assert re.search(type_error, out), out
    assert "value of slurm_gres_autodetect must be one of: auto, off, nvml, nvidia, rsmi, got: nvlm" in out, out


def test_slurm_reports_every_problem_the_spec_cannot_see_at_once(tmp_path: Path) -> None:
    res = preflight(
        tmp_path,
        "slurm",
        {
            "slurm_controller_hosts": ["node7"],
            "slurm_node_roles": ["compute", "gpu"],
            "slurm_restart_batch": 0,
        },
    )
    out = shown(res)
    assert res.returncode != 0, out
    assert 'slurm_node_roles on host node7 is ["compute", "gpu"]' in out, out
    assert "slurm_restart_batch on host node7 is 0: it must be a whole number, 1 or more" in out, out


def slurm_preflight(tmp_path: Path, role: str, extra: dict) -> subprocess.CompletedProcess[str]:
    """The slurm role's checks on node7, its only controller, in one node role."""
    return preflight(tmp_path, "slurm", {"slurm_controller_hosts": ["node7"], "slurm_node_roles": [role], **extra})


def slurm_task_said(out: str, task: str, status: str) -> bool:
    """Whether the slurm role's task ``task`` printed ``status`` (ok, skipping, changed) for node7."""
    return (
        re.search(rf"TASK \[oci_gpu\.cluster\.slurm : {re.escape(task)}\][^\n]*\n+{status}: \[node7\]", out) is not None
    )


def test_slurm_pam_adopt_refuses_to_lock_out_the_connection_user_and_a_prolog_without_contain(
    tmp_path: Path,
) -> None:
    """Nodes only through jobs: both refusals at once, before anything changes, naming key, value and host."""
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    res = slurm_preflight(
        tmp_path,
        "compute",
        {
            "slurm_pam_adopt_admin_users": ["lab-admin"],
            "slurm_pam_adopt_admin_groups": ["lab-admins"],
            "slurm_config": {"PrologFlags": "X11"},
        },
    )
    out = shown(res)
    assert res.returncode != 0, out
    assert f"slurm_pam_adopt on node7 would lock out {user} (groups: " in out, out
    assert "slurm_pam_adopt_admin_users (now lab-admin)" in out, out
    assert "slurm_pam_adopt_admin_groups (now lab-admins)" in out, out
    assert 'slurm_config.PrologFlags on node7 is "X11": slurm_pam_adopt needs Contain' in out, out


def test_slurm_pam_adopt_admits_an_administrator_by_group_and_contain_among_flags(tmp_path: Path) -> None:
    group = subprocess.run(["id", "-gn"], capture_output=True, text=True, check=True).stdout.strip()
    res = slurm_preflight(
        tmp_path,
        "compute",
        {
            "slurm_pam_adopt_admin_users": ["lab-admin"],
            "slurm_pam_adopt_admin_groups": [group],
            "slurm_config": {"prologflags": "X11, contain"},
        },
    )
    out = shown(res)
    # The check ran and passed; the run goes on to the next task.
    assert slurm_task_said(out, "Check this host's Slurm inputs", "ok"), out
    assert "would lock out" not in out and "needs Contain" not in out, out


def test_slurm_pam_adopt_needs_no_call_when_ansible_user_is_an_administrator(tmp_path: Path) -> None:
    """ansible_user (above the play's remote_user and -u) is the user Ansible connects as: listed among the
    administrators, it keeps access whatever its groups, and the preflight does not ask the host."""
    res = slurm_preflight(
        tmp_path,
        "compute",
        {
            "ansible_user": "lab-admin",
            "slurm_pam_adopt_admin_users": ["lab-admin"],
            "slurm_pam_adopt_admin_groups": ["lab-admins"],
            "slurm_config": {"PrologFlags": "Contain"},
        },
    )
    out = shown(res)
    assert slurm_task_said(out, "Read the user Ansible connects as, and its groups", "skipping"), out
    assert slurm_task_said(out, "Check this host's Slurm inputs", "ok"), out


def test_slurm_rest_settings_are_refused_at_once_and_the_key_never_shown(tmp_path: Path) -> None:
    res = slurm_preflight(
        tmp_path,
        "controller",
        {
            "slurm_rest_enabled": True,
            "slurm_jwt_key": "c2hvcnQta2V5LXNlY3JldA==",  # "short-key-secret": 16 bytes
            "slurm_rest_user": "slurm",
            "slurm_rest_listen": ["unix:/run/slurmrestd.socket", "http://0.0.0.0:6820"],
        },
    )
    out = shown(res)
    assert res.returncode != 0, out
    assert "slurm_jwt_key on node7 is not usable: key decodes to 16 bytes; a JWT key needs 32 to 1024" in out, out
    assert 'slurm_rest_user on node7 is "slurm": slurmrestd must not run as root or SlurmUser' in out, out
    assert 'slurm_rest_listen on node7 is ["unix:/run/slurmrestd.socket", "http://0.0.0.0:6820"]' in out, out
    assert "c2hvcnQta2V5LXNlY3JldA" not in out and "short-key-secret" not in out


def test_slurm_rest_needs_jwt(tmp_path: Path) -> None:
    res = slurm_preflight(
        tmp_path,
        "controller",
        {
            "slurm_rest_enabled": True,
            "slurm_jwt_enabled": False,
        },
    )
    out = shown(res)
    assert res.returncode != 0, out
    assert "slurm_rest_enabled on node7 needs slurm_jwt_enabled (now false)" in out, out
