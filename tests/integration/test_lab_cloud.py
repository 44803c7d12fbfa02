# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""oci_gpu.cluster.capacity on the lab cloud, end to end: a Slurm cluster (controller+dbd, one GPU
node running a tick-writing job) grows by a node launched through the OCI API, which comes up idle
and runs a GPU job, and shrinks again (drained, out of slurm.conf, TERMINATED, container gone),
while the job runs on. Around it: --check launches nothing, a capacity error names the shape and
leaves nothing, and a run SIGKILLed during the launch and run again ends with one instance.

OCI calls are counted at the emulator (its counters and tenancy), never inferred from Ansible output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lab"))

import labtest  # noqa: E402

pytestmark = [pytest.mark.slow]

NAME = f"cap{os.getpid() % 100000}"
SHAPE = "BM.GPU.H100.8"
STATE = Path(os.environ.get("OCI_GPU_LAB_STATE_DIR", "/var/lib/oci-gpu-lab")) / "labs" / NAME
TICK_JOB = "i=0; while [ ! -e /var/tmp/cap-stop ]; do echo tick $i; i=$((i+1)); sleep 1; done"


def podman(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=False)


def on_ctl(*cmd: str) -> str:
    res = podman("exec", f"{NAME}-ctl", *cmd)
    assert res.returncode == 0, f"{cmd}: {res.stdout}{res.stderr}"
    return res.stdout.strip()


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.update(
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build" / "collections"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_HOST_KEY_CHECKING="true",
        PATH=f"{Path(sys.executable).parent}:{e.get('PATH', '')}",
    )
    return e


def emulator(info: dict[str, Any], path: str, body: dict[str, Any] | None = None) -> Any:
    url = info["endpoints"][info["region"]] + path
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    labtest.ensure_ready(("trixie",))
    started = time.monotonic()
    up = labtest.run_lab(
        "up", "--name", NAME, "--nodes", f"ctl:VM.Standard.E5.Flex,gpu1:{SHAPE}", "--image", "trixie", "--no-build"
    )
    try:
        assert up.returncode == 0, f"lab up failed:\n{up.stdout}\n{up.stderr}"
        cl = labtest.run_lab("cloud", "up", "--name", NAME)
        assert cl.returncode == 0, cl.stdout + cl.stderr
        info = json.loads(cl.stdout)
        work = tmp_path_factory.mktemp("capacity")
        inv = work / "inventory"
        (inv / "group_vars" / "all").mkdir(parents=True)
        (inv / "lab.oci_gpu.yml").write_text(
            json.dumps(
                {
                    "plugin": "oci_gpu.cluster.oci",
                    "config_file": info["config_file"],
                    "service_endpoint": info["endpoints"],
                    "regions": [info["region"]],
                    "cluster": NAME,
                    "compose": {"ansible_python_interpreter": "'/usr/bin/python3'"},
                }
            )
        )
        (inv / "group_vars" / "all" / "connection.yml").write_text(
            "ansible_user: opc\nansible_become: true\nansible_pipelining: true\n"
            f"ansible_ssh_common_args: -F {STATE / 'ssh_config'}\n"
        )
        for name in ("slurm.yml", "lab.yml"):
            (inv / "group_vars" / "all" / name).symlink_to(REPO / "inventories" / "lab" / "group_vars" / "all" / name)
        capacity = {
            "capacity_shape": SHAPE,
            "capacity_compartment_id": info["compartment_id"],
            "capacity_availability_domain": info["availability_domain"],
            "capacity_subnet_id": info["subnet_id"],
            "capacity_image_id": "ocid1.image.oc1..oci-gpu-lab-debian",
            "capacity_cluster": NAME,
            "capacity_config_file": info["config_file"],
            "capacity_service_endpoint": info["endpoints"][info["region"]],
            "capacity_poll_interval": 0.5,
        }
        (work / "capacity.json").write_text(json.dumps(capacity))
        base = playbook(inv, work, "oci_gpu.cluster.slurm")
        assert base.returncode == 0, base.stdout[-6000:]
        job = on_ctl(
            "sbatch", "--parsable", "-w", "gpu1", "--chdir=/tmp", "-o", "/var/tmp/cap-tick.out", "--wrap", TICK_JOB
        )
        yield {"info": info, "inv": inv, "work": work, "job": job, "base_s": time.monotonic() - started}
    finally:
        down = labtest.run_lab("down", "--name", NAME)
        assert down.returncode == 0, down.stdout + down.stderr
        print(f"\nlab cloud capacity test: {time.monotonic() - started:.0f} s in all")


def playbook(inv: Path, work: Path, target: str, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ansible-playbook", "-i", str(inv), target, *extra],
        capture_output=True,
        text=True,
        env=env(),
        cwd=work,
        timeout=timeout,
        check=False,
    )


def capacity(c: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return playbook(c["inv"], c["work"], "oci_gpu.cluster.capacity", "-e", f"@{c['work'] / 'capacity.json'}", *extra)


def launches(c: dict[str, Any]) -> int:
    return int(emulator(c["info"], "/_emulator/counters")["by_op"].get("LaunchInstance", 0))


def live(c: dict[str, Any], name: str) -> list[str]:
    """States of the instances named ``name`` that the OCI API holds and that are not TERMINATED."""
    return [
        i["lifecycleState"]
        for i in emulator(c["info"], "/_emulator/instances")
        if i["displayName"] == name and i["lifecycleState"] != "TERMINATED"
    ]


def job_state(c: dict[str, Any]) -> str:
    return on_ctl("squeue", "-h", "-j", c["job"], "-o", "%T")


def test_check_mode_launches_nothing(cluster: dict[str, Any]) -> None:
    before = launches(cluster)
    res = capacity(cluster, "--check", "-e", '{"capacity_add": ["gpu2"]}')
    assert res.returncode == 0, res.stdout[-4000:]
    assert launches(cluster) == before
    assert podman("container", "exists", f"{NAME}-gpu2").returncode == 1


def test_a_capacity_error_names_the_shape_and_leaves_nothing(cluster: dict[str, Any]) -> None:
    info = cluster["info"]
    emulator(
        info,
        "/_emulator/knobs",
        {
            "route_faults": {
                "LaunchInstance": {
                    "status": 500,
                    "code": "InternalError",
                    "message": "Out of host capacity.",
                    "times": 1,
                }
            }
        },
    )
    res = capacity(cluster, "-e", '{"capacity_add": ["gpu2"]}')
    assert res.returncode != 0
    assert "Out of host capacity." in res.stdout and SHAPE in res.stdout and info["availability_domain"] in res.stdout
    assert podman("container", "exists", f"{NAME}-gpu2").returncode == 1
    assert live(cluster, "gpu2") == []
    assert job_state(cluster) == "RUNNING"


def test_a_run_killed_during_the_launch_and_run_again_adds_one_node_that_runs_gpu_jobs(cluster: dict[str, Any]) -> None:
    before = launches(cluster)
    proc = subprocess.Popen(
        [
            "ansible-playbook",
            "-i",
            str(cluster["inv"]),
            "oci_gpu.cluster.capacity",
            "-e",
            f"@{cluster['work'] / 'capacity.json'}",
            "-e",
            '{"capacity_add": ["gpu2"]}',
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
        cwd=cluster["work"],
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and launches(cluster) == before:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert launches(cluster) == before + 1, "the launch was not made before the kill"
    started = time.monotonic()
    res = capacity(cluster, "-e", '{"capacity_add": ["gpu2"]}')
    add_s = time.monotonic() - started
    assert res.returncode == 0, res.stdout[-6000:]
    print(f"\ncapacity add after a kill: {add_s:.0f} s")
    # one instance of that name, made by the first run and adopted by the second
    assert launches(cluster) == before + 1 and live(cluster, "gpu2") == ["RUNNING"]
    lab = json.loads((STATE / "lab.json").read_text())
    assert [n["name"] for n in lab["nodes"] if n["name"] == "gpu2"] == ["gpu2"]
    assert on_ctl("sinfo", "-h", "-n", "gpu2", "-o", "%T") == "idle"
    out = on_ctl("srun", "-w", "gpu2", "--gres=gpu:1", "--chdir=/tmp", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
    assert out == "0"
    assert job_state(cluster) == "RUNNING"


def test_remove_drains_takes_the_node_out_and_terminates_it(cluster: dict[str, Any]) -> None:
    res = capacity(cluster, "-e", '{"capacity_remove": ["gpu2"]}')
    assert res.returncode == 0, res.stdout[-6000:]
    assert "Drain the nodes taken out on purpose and wait for their jobs] ***\nchanged: [ctl]" in res.stdout
    assert podman("container", "exists", f"{NAME}-gpu2").returncode == 1
    assert live(cluster, "gpu2") == []
    assert "gpu2" not in on_ctl("sinfo", "-h", "-N", "-o", "%N").split()
    assert "NodeName=gpu2" not in on_ctl("cat", "/etc/slurm/slurm.conf")
    counters = emulator(cluster["info"], "/_emulator/counters")["by_op"]
    assert counters.get("TerminateInstance") == 1
    assert job_state(cluster) == "RUNNING"
    # the tick job ran on through every step: no gap in its ticks, then it ends COMPLETED
    on_ctl("touch", "/var/tmp/cap-stop")
    podman("exec", f"{NAME}-gpu1", "touch", "/var/tmp/cap-stop")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and job_state(cluster):
        time.sleep(0.5)
    ticks = podman("exec", f"{NAME}-gpu1", "cat", "/var/tmp/cap-tick.out").stdout.split("\n")
    numbers = [int(t.split()[1]) for t in ticks if t.startswith("tick ")]
    assert numbers == list(range(len(numbers))) and len(numbers) > 30
    state = on_ctl("sacct", "-n", "-X", "-j", cluster["job"], "-o", "State").split()
    assert state == ["COMPLETED"]
