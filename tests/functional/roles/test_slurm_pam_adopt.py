# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm role's sshd PAM edits (tasks/pam_adopt.yml) through ansible-playbook on a copy of Debian's
/etc/pam.d/sshd in a temporary directory: the node probe reads the stack, an edit that is not in place
is made, and one that is makes no call (the task is skipped, not run to find nothing to do)."""

from __future__ import annotations

import re
from pathlib import Path

from ansible_harness import run_playbook, shown

# Debian 12's /etc/pam.d/sshd, shortened to the lines the role touches and their neighbours.
SSHD = """\
# PAM configuration for the Secure Shell service
@include common-auth
account    required     pam_nologin.so
@include common-account
session [success=ok ignore=ignore module_unknown=ignore default=bad]        pam_selinux.so close
@include common-session
session    optional     pam_motd.so  motd=/run/motd.dynamic
@include common-password
"""
ADOPT = "/usr/lib/x86_64-linux-gnu/security/pam_slurm_adopt.so"
TASKS = ("Admit logins to sshd through a job only", "Keep adopted logins in the job's cgroup")


def _run(tmp: Path, pam_dir: Path, adopt: bool) -> tuple[str, dict[str, str]]:
    stub = tmp / "slurmd"
    stub.write_text('#!/bin/sh\n[ "$1" = -V ] && echo "slurm 24.11.5"\n')
    stub.chmod(0o755)
    play = [
        {
            "name": "Probe, then edit sshd's stack",
            "hosts": "all",
            "gather_facts": True,
            "gather_subset": ["min"],
            "tasks": [
                {
                    "name": "Read the node",
                    "oci_gpu.cluster.slurm_node_info": {
                        "name": "node1",
                        "roles": ["login"],
                        "slurmd_path": str(stub),
                        "pam_services": ["sshd"],
                        "pam_dir": str(pam_dir),
                    },
                    "register": "__slurm_probe",
                },
                {
                    "name": "Edit",
                    "ansible.builtin.include_role": {"name": "oci_gpu.cluster.slurm", "tasks_from": "pam_adopt"},
                },
            ],
        }
    ]
    variables = {
        "slurm_node_roles": ["compute"],
        "slurm_pam_adopt": adopt,
        "__slurm_pam_dir": str(pam_dir),
        "__slurm_pam_account_line": "^@include common-account",
        "__slurm_absent_in_check": False,
        "__slurm_pam_adopt_path": ADOPT,
    }
    res = run_playbook(tmp, play, variables)
    out = shown(res)
    assert res.returncode == 0, out[-3000:]
    status = {}
    for task in TASKS:
        found = re.search(rf"TASK \[[^\]]*{re.escape(task)}\][^\n]*\n+(\w+):", out)
        assert found, out[-3000:]
        status[task] = found.group(1)
    return (pam_dir / "sshd").read_text(), status


def test_an_edit_in_place_makes_no_call_and_one_missing_is_made(tmp_path: Path) -> None:
    pam = tmp_path / "pam.d"
    pam.mkdir()
    (pam / "sshd").write_text(SSHD)
    text, status = _run(tmp_path, pam, adopt=True)
    assert status == dict.fromkeys(TASKS, "changed")
    block = (
        "@include common-account\n"
        "# BEGIN oci_gpu.cluster slurm: nodes only through jobs\n"
        "account sufficient pam_access.so accessfile=/etc/security/access-slurm-adopt.conf\n"
        f"account required {ADOPT} action_no_jobs=deny action_adopt_failure=deny\n"
        "# END oci_gpu.cluster slurm: nodes only through jobs\n"
    )
    assert block in text, text
    assert "@include common-session-noninteractive  # oci_gpu.cluster slurm: was common-session" in text
    assert "\n@include common-session\n" not in text
    again, status = _run(tmp_path, pam, adopt=True)
    assert (again, status) == (text, dict.fromkeys(TASKS, "skipping"))
    # Turned off: the block goes and the session line comes back, once.
    off, status = _run(tmp_path, pam, adopt=False)
    assert (off, status) == (SSHD, dict.fromkeys(TASKS, "changed"))
    assert _run(tmp_path, pam, adopt=False) == (SSHD, dict.fromkeys(TASKS, "skipping"))
