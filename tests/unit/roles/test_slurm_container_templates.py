# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm role's container templates, rendered by ansible-playbook on this host for Slurm 22.05
and 24.11: oci.conf uses only the keys and % patterns of its release (the 22.05 list is what
Debian 12's slurmstepd 22.05.8 carries: `strings /usr/sbin/slurmstepd`), the root prolog runs for
real (sh, in a temporary directory) and makes each user's directories with the right modes, and
pyxis.conf, plugstack.conf, enroot.conf and the sysctl file say what they should. The lab runs
24.11's oci.conf with crun (molecule/_shared/slurm/containers.yml)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
TEMPLATES = REPO / "roles" / "slurm" / "templates"
FILES = {
    "oci.conf": "etc/slurm/oci.conf-{series}.j2",
    "prolog": "etc/slurm/prolog.d/oci-gpu-containers.sh.j2",
    "plugstack.conf": "etc/slurm/plugstack.conf.j2",
    "pyxis.conf": "etc/slurm/plugstack.conf.d/pyxis.conf.j2",
    "enroot.conf": "etc/enroot/enroot.conf.j2",
    "sysctl": "etc/sysctl.d/90-oci-gpu-containers.conf.j2",
}
# Read from Debian 12's slurmstepd (Slurm 22.05.8), not from the code under test.
KEYS_2205 = {
    "ContainerPath",
    "CreateEnvFile",
    "RunTimeCreate",
    "RunTimeDelete",
    "RunTimeKill",
    "RunTimeQuery",
    "RunTimeRun",
    "RunTimeStart",
}


def _render(tmp: Path, series: str, extra: dict[str, Any]) -> dict[str, str]:
    out = tmp / f"out-{series}"
    out.mkdir()
    tasks = [
        {
            "name": "Load the role's defaults",
            "ansible.builtin.include_vars": str(REPO / "roles/slurm/defaults/main.yml"),
        },
        {
            "name": "Render",
            "ansible.builtin.copy": {
                "content": "{{ lookup('ansible.builtin.template', item.value) }}",
                "dest": f"{out}/{{{{ item.key }}}}",
                "mode": "0644",
            },
            "loop": "{{ files | dict2items }}",
        },
    ]
    play = [{"name": "Templates", "hosts": "all", "gather_facts": False, "tasks": tasks}]
    (tmp / "play.yml").write_text(json.dumps(play))
    variables = {
        "files": {k: str(TEMPLATES / v.format(series=series)) for k, v in FILES.items()},
        "__slurm_cluster": {"version": series, "oci_series": series},
        "__slurm_conf_dir": "/etc/slurm",
        "__slurm_oci_prolog": "/etc/slurm/prolog.d/oci-gpu-containers.sh",
        "__slurm_enroot_paths": "{{ slurm_enroot_base_dir | trim | oci_gpu.cluster.slurm_enroot_paths }}",
        "__slurm_pyxis_path": "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so",
        "slurm_oci_enabled": True,
        "slurm_pyxis_enabled": True,
    }
    variables.update(extra)
    (tmp / "vars.json").write_text(json.dumps(variables))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build" / "collections"), ANSIBLE_NOCOLOR="1")
    res = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", "node1,", "-c", "local", str(tmp / "play.yml"),
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"@{tmp / 'vars.json'}"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    return {name: (out / name).read_text() for name in FILES}


def _keys(text: str) -> dict[str, str]:
    return dict(re.match(r'^(\w+)="(.*)"$', line).groups() for line in text.splitlines() if line and line[0] != "#")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, dict[str, str]]:
    base = {"__slurm_userns_now": {"user.max_user_namespaces": "100000", "user.max_mnt_namespaces": "0"}}
    return {s: _render(tmp_path_factory.mktemp(s), s, base) for s in ("22.05", "24.11")}


def test_oci_conf_22_05_has_only_the_keys_and_patterns_22_05_knows(rendered) -> None:
    keys = _keys(rendered["22.05"]["oci.conf"])
    assert set(keys) <= KEYS_2205, keys
    assert set(keys) == {"RunTimeQuery", "RunTimeKill", "RunTimeDelete", "RunTimeRun"}
    assert keys["RunTimeRun"] == "/usr/bin/crun --rootless=true --root=/run/slurm-oci/%u run --bundle %b %n.%u.%j.%s.%t"
    assert all(set(re.findall(r"%(.)", v)) <= set("%@bejnrstu") for v in keys.values())


def test_oci_conf_24_11_uses_uid_and_env_exclude(rendered) -> None:
    keys = _keys(rendered["24.11"]["oci.conf"])
    assert keys["EnvExclude"] == keys["RunTimeEnvExclude"] == "^(SLURM_CONF|SLURM_CONF_SERVER)="
    assert keys["RunTimeKill"] == "/usr/bin/crun --rootless=true --root=/run/slurm-oci/%U kill -a %n.%u.%j.%s.%t"


def test_own_keys_replace_the_role_lines(tmp_path) -> None:
    own = {"RunTimeCreate": "crun create --bundle %b %n", "RunTimeStart": "crun start %n", "CreateEnvFile": False}
    keys = _keys(_render(tmp_path, "22.05", {"slurm_oci_config": own, "__slurm_userns_now": {}})["oci.conf"])
    assert "RunTimeRun" not in keys
    assert keys["RunTimeCreate"] == "crun create --bundle %b %n"
    assert keys["CreateEnvFile"] == "false"


@pytest.mark.parametrize(("series", "name_var"), [("22.05", "root"), ("24.11", str(os.getuid()))])
def test_the_prolog_makes_each_users_directories(rendered, tmp_path, series, name_var) -> None:
    script = rendered[series]["prolog"]
    assert subprocess.run(["sh", "-n"], input=script, text=True, check=False).returncode == 0
    # Run it for real, with its directories moved under tmp_path.
    script = script.replace("/run/slurm-oci", f"{tmp_path}/run/slurm-oci").replace(
        "/var/tmp/enroot", f"{tmp_path}/enroot"
    )
    script = script.replace("/mnt/localdisk/enroot", f"{tmp_path}/enroot")
    env = dict(os.environ, SLURM_JOB_UID=str(os.getuid()), SLURM_JOB_USER="root")
    for _job in range(2):  # a second job of the same user finds them made
        res = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr
    # Jobs of one user starting together on a node: many prologs at once, none may fail.
    for round_ in range(5):
        root = tmp_path / f"race{round_}"
        racing = script.replace(str(tmp_path), str(root))
        procs = [
            subprocess.Popen(["sh", "-c", racing], env=env, stderr=subprocess.PIPE, text=True) for _job in range(8)
        ]
        errors = [p.communicate()[1] for p in procs if p.wait() != 0]
        assert not errors, errors
    parent = tmp_path / "run" / "slurm-oci"
    assert stat.S_IMODE(parent.stat().st_mode) == 0o755
    assert stat.S_IMODE((parent / name_var).stat().st_mode) == 0o700
    for kind in ("runtime", "data", "cache"):
        own = tmp_path / "enroot" / kind / f"user-{os.getuid()}"
        assert stat.S_IMODE(own.stat().st_mode) == 0o700, own
        assert stat.S_IMODE(own.parent.stat().st_mode) == 0o755


def test_pyxis_and_enroot_files(rendered) -> None:
    files = rendered["24.11"]
    assert "include /etc/slurm/plugstack.conf.d/*.conf" in files["plugstack.conf"].splitlines()
    assert (
        "required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so runtime_path=/run/pyxis container_scope=job "
        "sbatch_support=1"
    ) in files["pyxis.conf"].splitlines()
    enroot = dict(line.split(" ", 1) for line in files["enroot.conf"].splitlines() if line and line[0] != "#")
    base = enroot["ENROOT_DATA_PATH"].split("/enroot/")[0]
    assert enroot == {
        "ENROOT_RUNTIME_PATH": f"{base}/enroot/runtime/user-$(id -u)",
        "ENROOT_DATA_PATH": f"{base}/enroot/data/user-$(id -u)",
        "ENROOT_CACHE_PATH": f"{base}/enroot/cache/user-$(id -u)",
    }
    assert base in ("/mnt/localdisk", "/var/tmp")


def test_the_sysctl_file_never_lowers_a_limit(rendered) -> None:
    lines = [line for line in rendered["24.11"]["sysctl"].splitlines() if line and line[0] != "#"]
    assert lines == ["user.max_user_namespaces = 100000", "user.max_mnt_namespaces = 65536"]
