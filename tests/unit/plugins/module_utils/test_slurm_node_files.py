# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The files every node keeps itself (module_utils/slurm/_node_files.py) and the container files slurmctld
serves (oci.conf, plugstack.conf: slurm/_containers.py), for Slurm 22.05 and 24.11: oci.conf uses only
the keys and % patterns of its release (the 22.05 list is what Debian 12's slurmstepd 22.05.8 carries:
`strings /usr/sbin/slurmstepd`), the root prolog runs for real (sh, in a temporary directory) and makes
each user's directories with the right modes, the GPU job map's prolog and epilog run for real, and
pyxis.conf, plugstack.conf, enroot.conf and the sysctl file say what they should. The lab runs 24.11's
oci.conf with crun (molecule/_shared/slurm/containers.yml)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._containers import (
    oci_conf_text,
    plugstack_conf_text,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._node_files import (
    host_node_files,
    node_files,
)

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
# The role's defaults (roles/slurm/defaults/main.yml), with the enroot base on local NVMe scratch.
SETTINGS = {
    "oci_enabled": True,
    "pyxis_enabled": True,
    "oci_state_dir": "/run/slurm-oci",
    "pyxis_plugin": "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so",
    "pyxis_args": {"runtime_path": "/run/pyxis", "container_scope": "job", "sbatch_support": 1},
    "enroot_base_dir": "/mnt/localdisk",
    "enroot_config": {},
    "job_map_dir": "/run/oci-gpu/gpu-jobs",
}
NAMES = {
    "prolog": "prolog oci-gpu-containers.sh",
    "pyxis.conf": "plugstack.conf.d/pyxis.conf",
    "enroot.conf": "enroot.conf",
    "sysctl": "sysctl containers",
    "job-map-prolog": "prolog oci-gpu-job-map.sh",
    "job-map-epilog": "epilog oci-gpu-job-map.sh",
}


def _render(series: str, own_oci: dict[str, Any] | None = None, userns: dict[str, Any] | None = None) -> dict[str, str]:
    shared = node_files(SETTINGS, series, "/etc/slurm")["files"]
    per_host = host_node_files(SETTINGS, series, "/etc/slurm", {"userns_limits": userns or {}})
    by_name = {f["name"]: f["content"] for f in shared + per_host}
    rendered = {key: by_name[name] for key, name in NAMES.items()}
    # oci.conf and plugstack.conf come with the plan as well (slurmctld serves them)
    prolog = "/etc/slurm/prolog.d/oci-gpu-containers.sh"
    rendered["oci.conf"] = oci_conf_text(series, "/run/slurm-oci", "/usr/bin/crun", own_oci or {}, prolog)
    rendered["plugstack.conf"] = plugstack_conf_text("/etc/slurm")
    return rendered


def _keys(text: str) -> dict[str, str]:
    return dict(re.match(r'^(\w+)="(.*)"$', line).groups() for line in text.splitlines() if line and line[0] != "#")


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, str]]:
    userns = {"user.max_user_namespaces": "100000", "user.max_mnt_namespaces": "0"}
    return {s: _render(s, userns=userns) for s in ("22.05", "24.11")}


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


def test_own_keys_replace_the_role_lines() -> None:
    own = {"RunTimeCreate": "crun create --bundle %b %n", "RunTimeStart": "crun start %n", "CreateEnvFile": False}
    keys = _keys(_render("22.05", own_oci=own)["oci.conf"])
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
    (tmp_path / "run").mkdir()  # /run is always there; the base directory too
    for _job in range(2):  # a second job of the same user finds them made
        res = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr
    # Jobs of one user starting together on a node: many prologs at once, none may fail.
    for round_ in range(5):
        root = tmp_path / f"race{round_}"
        racing = script.replace(str(tmp_path), str(root))
        (root / "run").mkdir(parents=True)
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
    assert base == "/mnt/localdisk"


def test_the_files_for_each_role_with_their_modes_and_what_goes_when_turned_off() -> None:
    on = node_files(SETTINGS, "24.11", "/etc/slurm")
    got = {f["name"]: (f["path"], f["roles"], f.get("mode", ""), f["state"]) for f in on["files"]}
    assert got == {
        "prolog oci-gpu-containers.sh": ("/etc/slurm/prolog.d/oci-gpu-containers.sh", ["compute"], "0755", "present"),
        "prolog oci-gpu-job-map.sh": ("/etc/slurm/prolog.d/oci-gpu-job-map.sh", ["compute"], "0755", "present"),
        "epilog oci-gpu-job-map.sh": ("/etc/slurm/epilog.d/oci-gpu-job-map.sh", ["compute"], "0755", "present"),
        "enroot.conf": ("/etc/enroot/enroot.conf", ["compute"], "", "present"),
    }
    per_host = host_node_files(SETTINGS, "24.11", "/etc/slurm", {})
    host = {f["name"]: (f["path"], f["roles"], f["state"]) for f in per_host}
    assert host == {
        "plugstack.conf.d/pyxis.conf": ("/etc/slurm/plugstack.conf.d/pyxis.conf", [], "present"),
        "sysctl containers": ("/etc/sysctl.d/90-oci-gpu-containers.conf", ["compute"], "present"),
    }
    # crun alone: its prolog and the sysctl file, no pyxis or enroot file; no job map: no epilog directory.
    crun = dict(SETTINGS, pyxis_enabled=False, job_map_dir=" ")
    files = {f["name"]: f["state"] for f in node_files(crun, "24.11", "/etc/slurm")["files"]}
    assert files == {
        "prolog oci-gpu-containers.sh": "present",
        "prolog oci-gpu-job-map.sh": "absent_if_managed",
        "epilog oci-gpu-job-map.sh": "absent_if_managed",
        "enroot.conf": "absent_if_managed",
        "plugstack.conf.d/pyxis.conf": "absent_if_managed",
    }
    assert [f["name"] for f in host_node_files(crun, "24.11", "/etc/slurm", {})] == ["sysctl containers"]
    assert [d["path"] for d in node_files(crun, "24.11", "/etc/slurm")["directories"]] == ["/etc/slurm/prolog.d"]
    prolog = node_files(crun, "24.11", "/etc/slurm")["files"][0]["content"]
    assert "enroot" not in prolog.split("set -eu", 1)[1]
    assert 'userdir /run/slurm-oci /run/slurm-oci/"$SLURM_JOB_UID"' in prolog


def test_a_path_with_spaces_or_quotes_is_quoted_for_the_shell(tmp_path) -> None:
    odd = str(tmp_path / "it's a dir")
    settings = dict(SETTINGS, oci_state_dir=odd + "/oci", enroot_base_dir=odd, job_map_dir=odd + "/map")
    files = {f["name"]: f["content"] for f in node_files(settings, "24.11", "/etc/slurm")["files"]}
    for name in ("prolog oci-gpu-containers.sh", "prolog oci-gpu-job-map.sh", "epilog oci-gpu-job-map.sh"):
        assert subprocess.run(["sh", "-n"], input=files[name], text=True, check=False).returncode == 0, name
    res = subprocess.run(
        ["sh", "-c", files["prolog oci-gpu-job-map.sh"]],
        env=dict(os.environ, SLURM_JOB_ID="9", SLURM_JOB_GPUS="2"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert (Path(odd) / "map" / "2").read_text() == "9\n"


def test_the_sysctl_file_never_lowers_a_limit(rendered) -> None:
    lines = [line for line in rendered["24.11"]["sysctl"].splitlines() if line and line[0] != "#"]
    assert lines == ["user.max_user_namespaces = 100000", "user.max_mnt_namespaces = 65536"]


def _as_user(uid: int, script: str) -> None:
    """Run ``script`` with sh as an ordinary user (uid and gid ``uid``, no supplementary groups)."""
    cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sh", "-ec", script]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr


@pytest.fixture
def scratch() -> Any:
    """A world-writable sticky base directory, as local NVMe scratch (nvme_scratch_mount_mode 1777) or
    /var/tmp are, under /var/tmp so that ordinary users can reach it."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="oci-gpu-prolog-", dir="/var/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path)


ALICE, BOB = 4242, 4243


@pytest.mark.skipif(os.geteuid() != 0, reason="the prolog runs as root; planting needs setpriv as root")
@pytest.mark.parametrize("plant", ["symlink to a root directory", "parent owned by another user"])
def test_the_prolog_never_hands_a_user_anything_outside_the_base(rendered, scratch, plant) -> None:
    """A job user who plants <base>/enroot/runtime/user-<uid> -> a root directory would get it chowned
    (chown follows links); a parent another user made would let that user swap the job user's
    directory. The prolog refuses both, says so, and changes no owner."""
    (scratch / "run").mkdir()
    victim = scratch / "victim"
    victim.mkdir(mode=0o755)
    (victim / "passwd").write_text("root:x:0:0\n")
    base = scratch / "base"
    base.mkdir()
    base.chmod(0o1777)
    if plant.startswith("symlink"):
        _as_user(ALICE, f"mkdir -p {base}/enroot/runtime; ln -s {victim} {base}/enroot/runtime/user-{ALICE}")
    else:
        _as_user(BOB, f"mkdir -p {base}/enroot/data; chmod 0755 {base}/enroot {base}/enroot/data")
    script = rendered["24.11"]["prolog"].replace("/run/slurm-oci", f"{scratch}/run/slurm-oci")
    script = script.replace("/mnt/localdisk/enroot", f"{base}/enroot")
    env = dict(os.environ, SLURM_JOB_UID=str(ALICE), SLURM_JOB_USER="alice", SLURM_JOB_ID="7")
    res = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=False)
    assert (victim.stat().st_uid, (victim / "passwd").stat().st_uid) == (0, 0)
    assert res.returncode != 0, "the prolog accepted a planted path"
    assert f"{base}/enroot" in res.stderr and "refused" in res.stderr, res.stderr
    handed = [str(p) for p in scratch.rglob("*") if not p.is_symlink() and p.lstat().st_uid == ALICE]
    # hers: what she planted, and crun's state directory the prolog made first
    assert [p for p in handed if not p.startswith((f"{base}/enroot", f"{scratch}/run/slurm-oci/{ALICE}"))] == []
    if plant.startswith("parent"):
        assert not (base / "enroot" / "data" / f"user-{ALICE}").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the prolog runs as root and chowns to the job user")
def test_the_prolog_makes_root_owned_parents_under_a_world_writable_base(rendered, scratch) -> None:
    (scratch / "run").mkdir()
    script = rendered["24.11"]["prolog"].replace("/run/slurm-oci", f"{scratch}/run/slurm-oci")
    script = script.replace("/mnt/localdisk/enroot", f"{scratch}/enroot")
    env = dict(os.environ, SLURM_JOB_UID=str(ALICE), SLURM_JOB_USER="alice", SLURM_JOB_ID="8")
    res = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    top = scratch / "enroot"
    assert (top.stat().st_uid, stat.S_IMODE(top.stat().st_mode)) == (0, 0o755)
    for kind in ("runtime", "data", "cache"):
        own = top / kind / f"user-{ALICE}"
        assert (own.parent.stat().st_uid, stat.S_IMODE(own.parent.stat().st_mode)) == (0, 0o755)
        assert (own.stat().st_uid, stat.S_IMODE(own.stat().st_mode)) == (ALICE, 0o700)
    # the user may now write in their own directory only
    _as_user(ALICE, f"touch {top}/runtime/user-{ALICE}/ok")
    denied = subprocess.run(
        ["setpriv", f"--reuid={ALICE}", f"--regid={ALICE}", "--clear-groups", "touch", f"{top}/runtime/x"],
        capture_output=True,
        check=False,
    )
    assert denied.returncode != 0


# --------------------------------------------------------------------------- the GPU job map (DCGM's hpc_job)
def _run(script: str, job: str, gpus: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SLURM_JOB_ID=job)
    env.pop("SLURM_JOB_GPUS", None)
    if gpus is not None:
        env["SLURM_JOB_GPUS"] = gpus
    return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=False)


def _map(directory: Path) -> dict[str, list[str]]:
    return {p.name: p.read_text().split() for p in sorted(directory.iterdir()) if p.name.isdigit()}


def test_the_job_map_follows_jobs_onto_and_off_their_gpus(rendered, tmp_path) -> None:
    """The prolog lists each job under its GPUs (the DCGM exporter's mapping files), the epilog takes it out;
    two jobs on one GPU (shards) are both listed, and a job without GPUs writes nothing."""
    default = "/run/oci-gpu/gpu-jobs"
    mapdir = tmp_path / "run" / "gpu-jobs"
    prolog = rendered["22.05"]["job-map-prolog"]
    epilog = rendered["22.05"]["job-map-epilog"]
    assert f"dir={default}\n" in prolog and f"dir={default}\n" in epilog
    prolog, epilog = prolog.replace(default, str(mapdir)), epilog.replace(default, str(mapdir))
    assert _run(prolog, "40", None).returncode == 0 and not mapdir.exists()
    assert _run(prolog, "41", "0,3").returncode == 0
    assert _run(prolog, "42", "3").returncode == 0
    assert _map(mapdir) == {"0": ["41"], "3": ["41", "42"]}
    assert stat.S_IMODE(mapdir.stat().st_mode) == 0o755
    assert _run(epilog, "41", None).returncode == 0
    assert _map(mapdir) == {"3": ["42"]}
    assert _run(epilog, "42", "3").returncode == 0
    assert _map(mapdir) == {}


def test_the_job_map_never_fails_a_job_and_never_follows_a_link(rendered, tmp_path) -> None:
    default = "/run/oci-gpu/gpu-jobs"
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "gpu-jobs"
    link.symlink_to(target)
    prolog = rendered["24.11"]["job-map-prolog"].replace(default, str(link))
    epilog = rendered["24.11"]["job-map-epilog"].replace(default, str(link))
    res = _run(prolog, "43", "1,x")
    assert res.returncode == 0, res.stderr
    assert list(target.iterdir()) == []
    (target / "1").write_text("43\n")
    assert _run(epilog, "43", "1").returncode == 0
    assert (target / "1").read_text() == "43\n"
    # a path that cannot be made (its parent is a file): logged, the job starts
    (tmp_path / "file").write_text("")
    res = _run(rendered["24.11"]["job-map-prolog"].replace(default, str(tmp_path / "file" / "map")), "44", "0")
    assert res.returncode == 0, res.stderr
