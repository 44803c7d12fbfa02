# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run every molecule scenario (molecule/*/molecule.yml) with ``molecule test`` in the podman lab."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lab"))

import canary  # noqa: E402
import labtest  # noqa: E402

SCENARIOS = sorted(p.parent.name for p in (REPO / "molecule").glob("*/molecule.yml"))
MOLECULE = Path(sys.executable).parent / "molecule"
# Two scenarios run side by side in make test (tests/setup/integration.sh): each takes up to 1.75 times as long.
TIMEOUT = int(os.environ.get("OCI_GPU_LAB_MOLECULE_TIMEOUT", "3600"))


def _platforms() -> dict[str, list[dict[str, Any]]]:
    out = {}
    for name in SCENARIOS:
        data = yaml.safe_load((REPO / "molecule" / name / "molecule.yml").read_text()) or {}
        out[name] = data.get("platforms") or []
    return out


def test_platform_names_and_networks_are_unique_and_local() -> None:
    """Platform names are global podman container names: two scenarios must never share one."""
    seen: dict[str, str] = {}
    nets: dict[str, str] = {}
    for scenario, platforms in _platforms().items():
        assert platforms, f"{scenario}: no platforms"
        for p in platforms:
            assert p["name"] not in seen, f"platform {p['name']} is in {seen.get(p['name'])} and {scenario}"
            seen[p["name"]] = scenario
            net = p.get("network")
            assert net, f"{scenario}/{p['name']}: give every platform the scenario's own network (IMDS needs it)"
            assert nets.setdefault(net, scenario) == scenario, f"network {net} is shared by {nets[net]} and {scenario}"
            assert str(p.get("image", "")).startswith("localhost/oci-gpu-lab/"), f"{p['name']}: not a lab image"
            assert p.get("pre_build_image") is True and p.get("pull") is False, f"{p['name']}: must not pull or build"


@pytest.fixture(scope="session")
def lab_ready() -> None:
    labtest.ensure_ready()


@pytest.mark.slow
@pytest.mark.molecule
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(
    scenario: str, lab_ready: None, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    started = time.monotonic()
    times = request.config.__dict__.setdefault("oci_gpu_scenario_times", {})
    try:
        if scenario == CANARY_SCENARIO:
            _run_canary_scenario(scenario, tmp_path_factory.mktemp("canary"))
        else:
            _run_scenario(scenario)
    finally:
        times[scenario] = time.monotonic() - started
        request.config.__dict__.setdefault("oci_gpu_figures", []).extend(FIGURES)
        FIGURES.clear()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{MOLECULE.parent}:{env.get('PATH', '')}"
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(REPO / "build" / "collections"))
    env.setdefault("ANSIBLE_COLLECTIONS_SCAN_SYS_PATH", "true")
    env["ANSIBLE_FORCE_COLOR"] = "0"
    env["NO_COLOR"] = "1"
    return env


def _run_scenario(scenario: str) -> None:
    env = _env()
    try:
        res = subprocess.run(
            [str(MOLECULE), "test", "-s", scenario],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        subprocess.run([str(MOLECULE), "destroy", "-s", scenario], cwd=REPO, env=env, capture_output=True, check=False)
        pytest.fail(f"molecule test -s {scenario} ran past {TIMEOUT} s; last output:\n{out[-6000:]}")
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-120:])
        pytest.fail(f"molecule test -s {scenario} failed (exit {res.returncode}); last lines:\n{tail}")


# ---------------------------------------------------------------------------------------------
# The canary scenario (issue 15): secrets that never leak, files that keep their modes
# ---------------------------------------------------------------------------------------------
# slurm_gpu_accounting_bookworm runs molecule's steps one by one so that its first converge can run
# at -vvvv with ANSIBLE_LOG_PATH set, with fresh canaries as the munge key, the accounting
# password and the JWT key (its host_vars read LAB_CANARY_*), and a --check --diff pass and a failing
# pass on two hosts after it; then the scans, the file-mode audit, the scenario's usual steps, a
# password rotation on the running cluster, the heal of an interrupted one, and last a JWT key
# rotation (a run after it with the scenario's key is refused, as it should be).
CANARY_SCENARIO = "slurm_gpu_accounting_bookworm"
# What the canary steps measured: printed at the end of the run (tests/conftest.py), pass or fail.
FIGURES: list[str] = []


def _figure(line: str) -> None:
    print(line)
    FIGURES.append(line)


CANARY_CTL, CANARY_GPU, CANARY_LOGIN = "slurm-bw-ctl", "slurm-bw-gpu1", "slurm-bw-login1"
CANARY_NODES = ("slurm-bw-ctl", "slurm-bw-gpu1", "slurm-bw-gpu2", "slurm-bw-cpu1", "slurm-bw-login1")
# Where a leak would land on a node: temp dirs (Ansible's remote tmp included), logs, home dirs.
NODE_LEAK_ROOTS = ["/tmp", "/var/tmp", "/root/.ansible", "/home", "/var/log", "/run/log"]
# Where the accounting password must not be on a compute or login node.
NODE_NO_PASSWORD_ROOTS = ["/etc", "/var/lib/slurm", "/var/spool", "/run", "/var/log", "/tmp", "/var/tmp", "/root"]


def _molecule(
    step: str, scenario: str, env: dict[str, str], out: Path, *ansible_args: str, expect_ok: bool = True
) -> subprocess.CompletedProcess[str]:
    cmd = [str(MOLECULE), step, "-s", scenario]
    if ansible_args:
        cmd += ["--", *ansible_args]
    res = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    out.write_text(res.stdout + "\n--- stderr ---\n" + res.stderr)
    if expect_ok and res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-120:])
        pytest.fail(f"molecule {step} -s {scenario} {' '.join(ansible_args)} failed (exit {res.returncode}):\n{tail}")
    return res


def _podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, timeout=120)


def _run_canary_scenario(scenario: str, work: Path) -> None:
    munge, password = canary.munge_key_canary(), canary.password_canary()
    jwt = canary.munge_key_canary("jwt_key")
    # the directory's bind password (issue 41 part 1): in sssd.conf on every node, nowhere else
    ldap = canary.password_canary("ldap_password")
    pats = canary.patterns([munge, password, jwt, ldap])
    env = _env()
    env.update(
        {
            "LAB_CANARY_MUNGE_KEY": munge.value,
            "LAB_CANARY_DB_PASSWORD": password.value,
            "LAB_CANARY_JWT_KEY": jwt.value,
            "LAB_CANARY_LDAP_PASSWORD": ldap.value,
            "ANSIBLE_LOG_PATH": str(work / "ansible.log"),
            "ANSIBLE_LOCAL_TEMP": str(work / "ansible-local-tmp"),
        }
    )
    started = time.time()
    try:
        _molecule("destroy", scenario, env, work / "destroy0.out")
        _molecule("syntax", scenario, env, work / "syntax.out")
        two = f"--limit={CANARY_CTL},{CANARY_GPU}"
        with canary.CmdlineSampler(pats) as sampler:
            t0 = time.monotonic()
            _molecule("converge", scenario, env, work / "converge.out", "-vvvv")
            t1 = time.monotonic()
            _molecule(
                "converge",
                scenario,
                env,
                work / "check.out",
                "-vvvv",
                "--check",
                "--diff",
                "--tags=munge,slurm_configure",
                two,
            )
            t2 = time.monotonic()
            # fails in the configure step, after munge has its key and the password is loaded
            failed = _molecule(
                "converge",
                scenario,
                env,
                work / "fail.out",
                "-vvvv",
                "--tags=munge,slurm_configure",
                two,
                '--extra-vars={"slurm_config": {"SelectType": "select/nonexistent"}}',
                expect_ok=False,
            )
            t3 = time.monotonic()
        assert failed.returncode != 0 and "select/nonexistent" in failed.stdout, failed.stdout[-3000:]
        _canary_scans(work, pats, sampler, started)
        _file_mode_audit()
        _figure(
            f"canary passes: converge -vvvv {t1 - t0:.0f} s, --check --diff {t2 - t1:.0f} s, "
            f"forced failure {t3 - t2:.0f} s"
        )
        _molecule("idempotence", scenario, env, work / "idempotence.out")
        _molecule("side-effect", scenario, env, work / "side_effect.out")
        _molecule("verify", scenario, env, work / "verify.out")
        _rotate_password(scenario, env, work, password)
        _heal_interrupted_rotation(scenario, env, work)
        # last: a run after it would be refused, as it should be (the scenario's slurm_jwt_key is the old key)
        _rotate_jwt_key(scenario, env, work)
    finally:
        _molecule("destroy", scenario, env, work / "destroy.out", expect_ok=False)


def _heal_interrupted_rotation(scenario: str, env: dict[str, str], work: Path) -> None:
    """Issue 43 item 2: a rotation stopped after it wrote slurmdbd.conf and changed the password in MariaDB, before
    slurmdbd restarted. slurmdbd keeps its old connection, so accounting looks fine until its next reconnect;
    the next run must restart it (the copy of the file it runs with differs), or that reconnect fails."""
    third = "rotatedplain3"  # plain: its slurmdbd.conf line is the value itself
    _podman("exec", CANARY_CTL, "sed", "-i", f"s/^StoragePass=.*/StoragePass={third}/", "/etc/slurm/slurmdbd.conf")
    alter = f"--execute=ALTER USER 'slurm'@'localhost' IDENTIFIED BY '{third}'"
    _podman("exec", CANARY_CTL, "mysql", "--batch", alter)
    extra = work / "rotate3.yml"
    extra.write_text(json.dumps({"slurm_dbd_storage_password": third}))
    extra.chmod(0o600)
    t0 = time.monotonic()
    _molecule("converge", scenario, env, work / "rotate3.out", f"--limit={CANARY_CTL}", f"--extra-vars=@{extra}")
    seconds = time.monotonic() - t0
    out = (work / "rotate3.out").read_text()
    assert "Restart slurmdbd, which runs with an older slurmdbd.conf than the file" in out, out[-3000:]
    # the reconnect an interrupted rotation would break: MariaDB restarts, slurmdbd must log in again
    _podman("exec", CANARY_CTL, "systemctl", "restart", "mariadb")
    listed: list[str] = []
    for _attempt in range(20):
        sacctmgr = ["sacctmgr", "--noheader", "--parsable2", "list", "cluster", "format=cluster"]
        listed = _podman("exec", CANARY_CTL, *sacctmgr, check=False).stdout.split()
        if listed == ["lab"]:
            break
        time.sleep(3)
    assert listed == ["lab"], f"slurmdbd lost the database after MariaDB restarted: {listed}"
    _figure(f"interrupted rotation healed: {seconds:.0f} s; slurmdbd restarted and reconnects after MariaDB restarts")


def _canary_scans(work: Path, pats: dict[str, bytes], sampler: canary.CmdlineSampler, started: float) -> None:
    total = canary.ScanResult()
    # this machine: the passes' output, the log file, Ansible's local temp dir, and what the run
    # wrote under /tmp and /var/tmp (this checkout's own files are source, not output)
    here = canary.scan_here([str(work), "/tmp", "/var/tmp"], pats, since=started - 5, skip=(str(REPO),))
    total.add(here)
    log = work / "ansible.log"
    assert log.is_file() and log.stat().st_size > 100_000, "ANSIBLE_LOG_PATH wrote no log at -vvvv"
    assert "<slurm-bw-ctl> SSH: EXEC" in log.read_text(errors="replace"), "the log is not at -vvvv"
    for node in CANARY_NODES:
        total.add(canary.scan_node(node, NODE_LEAK_ROOTS, pats, since=started - 5))
    # the password is on the dbd host only: anywhere on a compute or login node is a leak
    pw = {k: v for k, v in pats.items() if k.startswith("db_password/")}
    for node in CANARY_NODES[1:]:
        total.add(canary.scan_node(node, NODE_NO_PASSWORD_ROOTS, pw))
    _figure(
        f"canary scan: {total.files} files, {total.bytes} bytes, {len(total.hits)} hits; /proc/*/cmdline: "
        f"{sampler.samples} samples, {sampler.processes} command lines, {sampler.bytes} bytes, {len(sampler.hits)} hits"
    )
    assert sampler.samples > 20, "the command-line sampler hardly ran"
    assert not total.hits and not sampler.hits, sorted(total.hits) + sorted(sampler.hits)


# path -> (owner, group, octal mode), written out from what each daemon needs
FILE_MODES = {
    "/etc/munge/munge.key": ("munge", "munge", "400"),
    "/etc/munge": ("munge", "munge", "700"),
    "/etc/slurm/slurm.conf": ("root", "root", "644"),
    # the scenario runs slurm_topology: tree (issue 16)
    "/etc/slurm/topology.conf": ("root", "root", "644"),
    "/etc/slurm/slurmdbd.conf": ("slurm", "slurm", "600"),
    # the scenario runs slurm_rest_enabled (issue 41): the JWT key, on the controller and dbd host only
    "/etc/slurm/jwt_hs256.key": ("slurm", "root", "600"),
    "/var/lib/slurm/slurmctld": ("slurm", "slurm", "700"),
    "/var/lib/slurm/slurmd": ("root", "root", "755"),
    # the copy of the slurmdbd.conf slurmdbd runs with (issue 43 item 2): root's alone, it holds the password
    "/var/lib/oci-gpu-cluster/slurmdbd-applied.conf": ("root", "root", "600"),
    # the scenario's hosts take their users from the directory (issue 41): sssd.conf holds the bind password
    "/etc/sssd/sssd.conf": ("root", "root", "600"),
}
FILES_BY_NODE = {
    CANARY_CTL: [
        "/etc/munge/munge.key",
        "/etc/munge",
        "/etc/slurm/slurm.conf",
        "/etc/slurm/topology.conf",
        "/etc/slurm/slurmdbd.conf",
        "/etc/slurm/jwt_hs256.key",
        "/var/lib/slurm/slurmctld",
        "/var/lib/oci-gpu-cluster/slurmdbd-applied.conf",
        "/etc/sssd/sssd.conf",
    ],
    CANARY_GPU: [
        "/etc/munge/munge.key",
        "/etc/munge",
        "/etc/slurm/slurm.conf",
        "/etc/slurm/topology.conf",
        "/var/lib/slurm/slurmd",
        "/etc/sssd/sssd.conf",
    ],
    CANARY_LOGIN: ["/etc/munge/munge.key", "/etc/munge", "/etc/slurm/slurm.conf", "/etc/sssd/sssd.conf"],
}


def _file_mode_audit() -> None:
    rows = []
    for node, paths in FILES_BY_NODE.items():
        stat = _podman("exec", node, "stat", "-c", "%n %U %G %a", *paths).stdout.split("\n")
        for line in filter(None, stat):
            path, owner, group, mode = line.split()
            rows.append((node, path, owner, group, mode))
    _figure("file-mode audit:\n" + "\n".join(f"  {n:16} {p:28} {o}:{g} {m}" for n, p, o, g, m in rows))
    problems = [
        f"{n}:{p} is {o}:{g} {m}, want {':'.join(FILE_MODES[p][:2])} {FILE_MODES[p][2]}"
        for n, p, o, g, m in rows
        if (o, g, m) != FILE_MODES[p]
    ]
    assert len(rows) == sum(len(p) for p in FILES_BY_NODE.values()) and not problems, problems
    for node in CANARY_NODES[1:]:
        assert _podman("exec", node, "test", "-e", "/etc/slurm/slurmdbd.conf", check=False).returncode == 1, node
        assert _podman("exec", node, "test", "-e", "/etc/slurm/jwt_hs256.key", check=False).returncode == 1, node
    read = _podman("exec", "--user", _lab_user()[1], CANARY_LOGIN, "cat", "/etc/munge/munge.key", check=False)
    assert read.returncode != 0 and "Permission denied" in read.stderr, (read.returncode, read.stderr)
    daemons = _podman("exec", CANARY_LOGIN, "systemctl", "is-active", "slurmd", "slurmdbd", "slurmctld", check=False)
    assert daemons.stdout.split() == ["inactive", "inactive", "inactive"], daemons.stdout


def _rotate_password(scenario: str, env: dict[str, str], work: Path, old: canary.Canary) -> None:
    """A new accounting password on the running cluster: MariaDB and slurmdbd change together."""
    new = canary.password_canary("rotated")
    extra = work / "rotate.yml"
    extra.write_text(json.dumps({"slurm_dbd_storage_password": new.value}))
    extra.chmod(0o600)
    t0 = time.monotonic()
    _molecule("converge", scenario, env, work / "rotate.out", f"--limit={CANARY_CTL}", f"--extra-vars=@{extra}")
    seconds = time.monotonic() - t0
    clusters = _podman("exec", CANARY_CTL, "sacctmgr", "--noheader", "--parsable2", "list", "cluster", "format=cluster")
    assert clusters.stdout.split() == ["lab"], clusters.stdout
    login = ["exec", "--env", "MYSQL_PWD", CANARY_CTL, "mysql", "--user=slurm", "--batch", "--execute=SELECT 1"]
    os.environ["MYSQL_PWD"] = new.value
    try:
        assert _podman(*login, check=False).returncode == 0, "MariaDB does not take the new password"
        os.environ["MYSQL_PWD"] = old.value
        assert _podman(*login, check=False).returncode != 0, "MariaDB still takes the old password"
    finally:
        os.environ.pop("MYSQL_PWD", None)
    conf = _podman("exec", CANARY_CTL, "cat", "/etc/slurm/slurmdbd.conf").stdout
    assert new.forms()["form1"].decode() in conf and old.value.split("#")[0] not in conf
    _figure(f"password rotation: {seconds:.0f} s; sacctmgr lists the cluster; MariaDB takes only the new password")


# A REST request as the lab user from the login node (TEST ONLY): slurmrestd on the controller's TCP
# port (the scenario's slurm_rest_listen), the token from the environment, never a command line.
REST_PING = """
import json, os, urllib.error, urllib.request
req = urllib.request.Request("http://slurm-bw-ctl:6820/slurm/v0.0.38/ping", headers={
    "X-SLURM-USER-NAME": os.environ["LAB_USER"], "X-SLURM-USER-TOKEN": os.environ["LAB_TOKEN"]})
try:
    with urllib.request.urlopen(req, timeout=20) as res:
        status, body = res.status, json.load(res)
except urllib.error.HTTPError as exc:
    status, body = exc.code, {}
print(json.dumps({"status": status, "errors": len(body.get("errors") or []), "pings": body.get("pings") or []}))
"""


def _lab_user() -> tuple[str, str]:
    """The canary scenario's lab user and UID: a directory user, so podman (which reads only the node's
    /etc/passwd) is given the number."""
    found = yaml.safe_load((REPO / "inventories/lab/group_vars/lab_directory.yml").read_text())
    return found["lab_slurm_user"], str(found["lab_slurm_uid"])


def _token(uid: str) -> str:
    out = _podman("exec", "--user", uid, CANARY_LOGIN, "scontrol", "token", "lifespan=900").stdout.strip()
    assert out.startswith("SLURM_JWT="), "scontrol token gave no token"
    return out.split("=", 1)[1]


def _rest_ping(user: str, uid: str, token: str) -> dict[str, Any]:
    os.environ["LAB_TOKEN"] = token
    try:
        res = _podman(
            "exec",
            "--user",
            uid,
            "--env",
            "LAB_TOKEN",
            "--env",
            f"LAB_USER={user}",
            CANARY_LOGIN,
            "python3",
            "-c",
            REST_PING,
        )
    finally:
        os.environ.pop("LAB_TOKEN", None)
    return json.loads(res.stdout)


def _answered(ping: dict[str, Any]) -> bool:
    return ping["status"] == 200 and ping["errors"] == 0 and bool(ping["pings"])


def _rotate_jwt_key(scenario: str, env: dict[str, str], work: Path) -> None:
    """Issue 41: a new JWT key on the running cluster while a job runs - made on the controller this time
    (slurm_jwt_key empty): a token from before is refused, a new one is taken, the job completes."""
    user, uid = _lab_user()
    job = _podman(
        "exec",
        "--user",
        uid,
        CANARY_LOGIN,
        "sbatch",
        "--parsable",
        "--output=/dev/null",
        f"--chdir=/home/{user}",
        "--wrap",
        "sleep 40",
    ).stdout.strip()
    old = _token(uid)
    assert _answered(_rest_ping(user, uid, old)), "slurmrestd does not take a fresh token"
    key_before = _podman("exec", CANARY_CTL, "sha256sum", "/etc/slurm/jwt_hs256.key").stdout.split()[0]
    t0 = time.monotonic()
    _molecule(
        "converge",
        scenario,
        env,
        work / "jwt-rotate.out",
        f"--limit={CANARY_CTL}",
        "--tags=slurm_configure",
        '--extra-vars={"slurm_jwt_key": "", "slurm_jwt_key_rotate": true}',
    )
    seconds = time.monotonic() - t0
    key_after = _podman("exec", CANARY_CTL, "sha256sum", "/etc/slurm/jwt_hs256.key").stdout.split()[0]
    refused = _rest_ping(user, uid, old)
    taken = _rest_ping(user, uid, _token(uid))
    assert key_after != key_before, "the JWT key did not change"
    assert not _answered(refused), f"a token made with the old key is still taken: {refused}"
    assert _answered(taken), f"a token made with the new key is refused: {taken}"
    deadline = time.monotonic() + 120
    while True:
        state = _podman(
            "exec", CANARY_CTL, "sacct", "--noheader", "--parsable2", "-X", "-j", job, "--format=State,ExitCode"
        ).stdout.strip()
        if (state and not state.startswith(("RUNNING", "PENDING"))) or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert state == "COMPLETED|0:0", f"job {job} across the key rotation: {state}"
    _figure(
        f"JWT key rotation: {seconds:.0f} s with job {job} running; the old token refused "
        f"(HTTP {refused['status']}, {refused['errors']} errors), a new one taken; the job completed"
    )
