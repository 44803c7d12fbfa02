# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The podman lab end to end: two nodes up, SSH as opc with become, devices and IMDS per node, restart,
down leaves nothing."""

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
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "lab"))

import labtest  # noqa: E402

from tests.oci_emulator.testing import run_module  # noqa: E402

pytestmark = [pytest.mark.slow]

NAME = f"pyt{os.getpid() % 100000}"
GPU_SHAPE = "BM.GPU.L40S.4"
CPU_SHAPE = "VM.Standard.E5.Flex"

IMDS_PROBE = r"""
import json, sys, urllib.error, urllib.request
out = {}
for key, path, auth in (
    ("instance", "/opc/v2/instance/", True),
    ("shape", "/opc/v2/instance/shape", True),
    ("host", "/opc/v2/host/", True),
    ("vnics", "/opc/v2/vnics/", True),
    ("noauth", "/opc/v2/instance/", False),
):
    req = urllib.request.Request("http://169.254.169.254" + path)
    if auth:
        req.add_header("Authorization", "Bearer Oracle")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            body = resp.read().decode()
            out[key] = {"status": resp.status, "body": body}
    except urllib.error.HTTPError as exc:
        out[key] = {"status": exc.code, "body": ""}
print(json.dumps(out))
"""


def podman(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=False)


def imds_from(container: str) -> dict[str, Any]:
    res = podman("exec", container, "python3", "-c", IMDS_PROBE)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def devices(container: str) -> list[tuple[str, int, int]]:
    res = podman("exec", container, "sh", "-c", "stat -c '%n %t %T' /dev/nvidia* 2>/dev/null; true")
    out = []
    for line in res.stdout.splitlines():
        name, major, minor = line.split()
        out.append((name, int(major, 16), int(minor, 16)))
    return sorted(out)


@pytest.fixture(scope="module")
def lab() -> Iterator[dict[str, Any]]:
    labtest.ensure_ready(("trixie",))
    before = {
        "containers": labtest.podman_names("ps"),
        "networks": labtest.podman_names("network"),
        "labs": labtest.run_lab("status", "--json").stdout,
    }
    start = time.monotonic()
    up = labtest.run_lab(
        "up", "--name", NAME, "--nodes", f"ctl:{CPU_SHAPE},gpu1:{GPU_SHAPE}", "--image", "trixie", "--no-build"
    )
    seconds = time.monotonic() - start
    try:
        assert up.returncode == 0, f"lab up failed:\n{up.stdout}\n{up.stderr}"
        status = json.loads(labtest.run_lab("status", "--name", NAME, "--json").stdout)
        yield {"status": status["labs"][0], "imds_pid": status["imds_pid"], "before": before, "seconds": seconds}
    finally:
        down = labtest.run_lab("down", "--name", NAME)
        assert down.returncode == 0, f"lab down failed:\n{down.stdout}\n{down.stderr}"


def test_up_is_fast_and_writes_an_inventory(lab: dict[str, Any]) -> None:
    assert lab["seconds"] < 120, f"2-node lab took {lab['seconds']:.1f} s"
    inv_path = Path(os.environ.get("OCI_GPU_LAB_STATE_DIR", "/var/lib/oci-gpu-lab")) / "labs" / NAME / "inventory.yml"
    res = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(inv_path), "--list"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["slurm_compute"]["hosts"] == ["gpu1"]
    assert data["slurm_controller"]["hosts"] == ["ctl"]
    hostvars = data["_meta"]["hostvars"]
    gpu1 = next(n for n in lab["status"]["nodes"] if n["name"] == "gpu1")
    assert hostvars["gpu1"]["ansible_host"] == gpu1["ip"]
    assert hostvars["gpu1"]["oci_gpu_lab_gpu_count"] == 4
    assert hostvars["ctl"]["ansible_connection"] == "ssh"
    assert (hostvars["ctl"]["ansible_user"], hostvars["ctl"]["ansible_become"]) == ("opc", True)


def test_ansible_reaches_the_nodes_by_ssh_as_opc_with_become(lab: dict[str, Any]) -> None:
    """The inventory's SSH settings work: opc logs in with the lab's key, sudo makes it root, and
    each node's host key was checked against the lab's known_hosts (strict), not accepted blindly."""
    state = Path(os.environ.get("OCI_GPU_LAB_STATE_DIR", "/var/lib/oci-gpu-lab")) / "labs" / NAME
    res = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible"),
            "-i",
            str(state / "inventory.yml"),
            "all",
            "-m",
            "ansible.builtin.command",
            "-a",
            "id -un",
            "-o",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(line.split(" |")[0] for line in res.stdout.splitlines() if "(stdout) root" in line) == ["ctl", "gpu1"]
    # Every node has a host key of its own, and only the lab's known_hosts vouches for it.
    keys = {line.split()[-1] for line in (state / "known_hosts").read_text().splitlines()}
    assert len(keys) == 2
    wrong = state / "known_hosts.wrong"
    wrong.write_text(
        "".join(f"{n['ip']} {n['host_key'].replace(n['host_key'][-8:], 'AAAAAAAA')}\n" for n in lab["status"]["nodes"])
    )
    gpu1 = next(n for n in lab["status"]["nodes"] if n["name"] == "gpu1")
    bad = subprocess.run(
        [
            "ssh",
            "-F",
            str(state / "ssh_config"),
            "-o",
            f"UserKnownHostsFile={wrong}",
            "-o",
            "HostKeyAlias=" + gpu1["ip"],
            gpu1["ip"],
            "true",
        ],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    wrong.unlink()
    assert bad.returncode == 255, bad.stderr


def test_gpu_node_has_its_shapes_devices_and_nvidia_smi(lab: dict[str, Any]) -> None:
    devs = devices(f"{NAME}-gpu1")
    assert devs == sorted([(f"/dev/nvidia{i}", 195, i) for i in range(4)] + [("/dev/nvidiactl", 195, 255)])
    smi = podman("exec", f"{NAME}-gpu1", "nvidia-smi", "-L")
    assert smi.returncode == 0
    assert [line.split(":")[0] for line in smi.stdout.splitlines()] == [f"GPU {i}" for i in range(4)]
    assert all("NVIDIA L40S (UUID: GPU-" in line for line in smi.stdout.splitlines())
    q = podman("exec", f"{NAME}-gpu1", "nvidia-smi", "--query-gpu=index,memory.total", "--format=csv,noheader")
    assert q.stdout.splitlines() == [f"{i}, 46068 MiB" for i in range(4)]


def test_cpu_node_has_no_gpu(lab: dict[str, Any]) -> None:
    assert devices(f"{NAME}-ctl") == []
    assert podman("exec", f"{NAME}-ctl", "sh", "-c", "command -v nvidia-smi").returncode != 0


def test_imds_answers_each_node_for_itself(lab: dict[str, Any]) -> None:
    nodes = {n["name"]: n for n in lab["status"]["nodes"]}
    for name, shape, gpus in (("gpu1", GPU_SHAPE, 4), ("ctl", CPU_SHAPE, 0)):
        got = imds_from(f"{NAME}-{name}")
        assert got["noauth"]["status"] == 401
        assert got["instance"]["status"] == 200
        inst = json.loads(got["instance"]["body"])
        assert inst["shape"] == shape
        assert inst["displayName"] == inst["hostname"] == name
        assert inst["shapeConfig"].get("gpus", 0) == gpus
        roles = "compute" if gpus else "controller,dbd"
        assert inst["definedTags"]["oci-gpu"] == {"cluster": NAME, "slurm-role": roles}
        assert "slurm_role" not in inst["freeformTags"]
        assert got["shape"]["body"] == shape
        host = json.loads(got["host"]["body"])
        assert ("rdmaTopologyData" in host) == bool(gpus)
        vnics = json.loads(got["vnics"]["body"])
        assert vnics[0]["privateIp"] == nodes[name]["ip"]


def test_gpu_node_keeps_devices_and_address_across_restart(lab: dict[str, Any]) -> None:
    container = f"{NAME}-gpu1"
    assert podman("restart", "--time", "3", container).returncode == 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = podman("exec", container, "systemctl", "is-system-running").stdout.strip()
        if state in ("running", "degraded"):
            break
        time.sleep(0.5)
    assert len(devices(container)) == 5
    inst = json.loads(imds_from(container)["instance"]["body"])
    assert inst["shape"] == GPU_SHAPE


# -- the lab cloud: the OCI API over this lab, whose launches become lab nodes ----------------------
LAUNCH_SHAPE = "BM.GPU.H100.8"
USER_DATA = "#cloud-config\nruncmd:\n  - [sh, -c, 'echo \"$(hostname) ran its user_data\" > /var/tmp/user-data-ran']\n"


def cloud(*args: str) -> dict[str, Any]:
    res = labtest.run_lab("cloud", *args, "--name", NAME)
    assert res.returncode == 0, f"lab cloud {args} failed:\n{res.stdout}\n{res.stderr}"
    return json.loads(res.stdout) if res.stdout.strip().startswith("{") else {}


def module(info: dict[str, Any], name: str, args: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    """Run oci_gpu.cluster.<name> through ansible against the lab cloud; (rc, task result, output)."""
    args = {
        "config_file": info["config_file"],
        "service_endpoint": info["endpoints"][info["region"]],
        "compartment_id": info["compartment_id"],
        "cluster": NAME,
        "poll_interval": 0.5,
        "wait_timeout": 180,
        **args,
    }
    return run_module(name, args, Path(info["config_file"]).parent, timeout=400)


def launch_args(info: dict[str, Any], name: str, **kw: Any) -> dict[str, Any]:
    return {
        "display_name": name,
        "availability_domain": info["availability_domain"],
        "shape": LAUNCH_SHAPE,
        "subnet_id": info["subnet_id"],
        "image_id": "ocid1.image.oc1..lab",
        "user_data": USER_DATA,
        "wait_for_ssh": True,
        **kw,
    }


def lab_record() -> dict[str, Any]:
    return json.loads(labtest.run_lab("status", "--name", NAME, "--json").stdout)["labs"][0]


def test_lab_cloud_launches_a_node_that_boots_runs_its_user_data_and_terminates(lab: dict[str, Any]) -> None:
    info = cloud("up")
    assert info["node_endpoints"][info["region"]].startswith("http://")
    started = time.monotonic()
    rc, task, out = module(info, "compute_instance", launch_args(info, "gpu9"))
    launch_s = time.monotonic() - started
    assert rc == 0, out
    inst = task["instance"]
    assert (task["operation"], inst["lifecycle_state"]) == ("launch", "RUNNING")
    print(f"lab cloud: gpu9 launch to SSH in {launch_s:.1f} s (module run, ansible start-up included)")
    container = f"{NAME}-gpu9"
    node = next(n for n in lab_record()["nodes"] if n["name"] == "gpu9")
    assert (node["container"], node["ip"], node["cloud_state"]) == (container, inst["private_ip"], "running")
    assert node["cloud_init"] == "done", node
    # cloud-init ran the instance's user_data at boot (seeded from IMDS)
    ran = podman("exec", container, "cat", "/var/tmp/user-data-ran")
    assert ran.returncode == 0 and ran.stdout.strip() == "gpu9 ran its user_data", ran.stdout + ran.stderr
    # IMDS tells the node what the OCI API knows of it: OCID, tags, shape, the lab's RDMA block
    docs = imds_from(container)
    doc = json.loads(docs["instance"]["body"])
    assert (doc["id"], doc["shape"], doc["displayName"]) == (inst["id"], LAUNCH_SHAPE, "gpu9")
    assert doc["definedTags"]["oci-gpu"] == {"cluster": NAME, "slurm-role": "compute"}
    gpu1 = next(n for n in lab["status"]["nodes"] if n["name"] == "gpu1")
    if gpu1["imds"]["host"].get("rdmaTopologyData"):
        host = json.loads(docs["host"]["body"])
        want = gpu1["imds"]["host"]["rdmaTopologyData"]["customerLocalBlock"]
        assert host["rdmaTopologyData"]["customerLocalBlock"] == want
    assert len(devices(container)) == 9  # 8 GPUs and nvidiactl, as the shape has
    # the dynamic inventory finds it as a compute node of this cluster
    inv = Path(info["config_file"]).parent / "inv.oci_gpu.yml"
    inv.write_text(
        json.dumps(
            {
                "plugin": "oci_gpu.cluster.oci",
                "config_file": info["config_file"],
                "service_endpoint": info["endpoints"],
                "cluster": NAME,
            }
        )
    )
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build" / "collections"))
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(inv), "--list"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    groups = json.loads(listed.stdout)
    assert "gpu9" in groups["slurm_compute"]["hosts"], groups["slurm_compute"]
    host = groups["_meta"]["hostvars"]["gpu9"]["ansible_host"]
    assert (host.get("__ansible_unsafe") if isinstance(host, dict) else host) == inst["private_ip"]
    # STOP and START through the OCI API stop and start the node
    import oci

    compute = oci.core.ComputeClient(
        oci.config.from_file(info["config_file"]), service_endpoint=info["endpoints"][info["region"]]
    )
    for action, state, running in (("STOP", "STOPPED", "false"), ("START", "RUNNING", "true")):
        compute.instance_action(inst["id"], action)
        oci.wait_until(compute, compute.get_instance(inst["id"]), "lifecycle_state", state, max_wait_seconds=120)
        assert podman("inspect", "--format", "{{.State.Running}}", container).stdout.strip() == running
    assert len(devices(container)) == 9 and json.loads(imds_from(container)["instance"]["body"])["id"] == inst["id"]
    # a rerun launches nothing
    rc, task, out = module(info, "compute_instance", launch_args(info, "gpu9"))
    assert rc == 0 and task["changed"] is False and task["instance"]["id"] == inst["id"], out
    # terminate: TERMINATED, the container and the node record gone
    rc, task, out = module(info, "compute_instance", {"display_name": "gpu9", "state": "absent"})
    assert rc == 0 and task["instance"]["lifecycle_state"] == "TERMINATED", out
    assert podman("container", "exists", container).returncode == 1
    assert "gpu9" not in [n["name"] for n in lab_record()["nodes"]]
    assert lab_record()["orphans"] == []


def test_lab_cloud_capacity_error_leaves_no_node(lab: dict[str, Any]) -> None:
    info = cloud("up")
    knobs = {
        "route_faults": {
            "LaunchInstance": {"status": 500, "code": "InternalError", "message": "Out of host capacity.", "times": 1}
        }
    }
    req = urllib.request.Request(
        f"{info['endpoints'][info['region']]}/_emulator/knobs", data=json.dumps(knobs).encode(), method="POST"
    )
    urllib.request.urlopen(req, timeout=5).read()
    rc, _task, out = module(info, "compute_instance", launch_args(info, "gpu8"))
    assert rc != 0 and "Out of host capacity." in out and LAUNCH_SHAPE in out and info["availability_domain"] in out
    assert podman("container", "exists", f"{NAME}-gpu8").returncode == 1
    assert "gpu8" not in [n["name"] for n in lab_record()["nodes"]]


def test_lab_cloud_killed_mid_launch_is_named_then_cleaned(lab: dict[str, Any]) -> None:
    """SIGKILL the cloud while it boots a node: lab status names the half-made node; the next
    'lab cloud up' removes it (its instance never ran) and a launch of that name then works."""
    info = cloud("up")
    rc, task, out = module(info, "compute_instance", launch_args(info, "gpu7", wait=False, wait_for_ssh=False))
    assert rc == 0 and task["instance"]["lifecycle_state"] == "PROVISIONING", out
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and podman("container", "exists", f"{NAME}-gpu7").returncode != 0:
        time.sleep(0.1)
    os.kill(int(info["pid"]), signal.SIGKILL)
    status = lab_record()
    assert any("gpu7 is launching" in o for o in status["orphans"]), status["orphans"]
    info = cloud("up")
    assert podman("container", "exists", f"{NAME}-gpu7").returncode == 1
    assert lab_record()["orphans"] == []
    rc, task, out = module(info, "compute_instance", launch_args(info, "gpu7", wait_for_ssh=False))
    assert rc == 0 and task["operation"] == "launch" and task["instance"]["lifecycle_state"] == "RUNNING", out
    rc, task, out = module(info, "compute_instance", {"display_name": "gpu7", "state": "absent"})
    assert rc == 0 and task["instance"]["lifecycle_state"] == "TERMINATED", out
    # a container of the lab without a node record is named too
    image = podman("inspect", "--format", "{{.ImageName}}", f"{NAME}-ctl").stdout.strip()
    stray = f"{NAME}-stray"
    assert podman("create", "--label", f"oci_gpu_lab={NAME}", "--name", stray, image, "true").returncode == 0
    try:
        assert f"container {stray} has no node record" in lab_record()["orphans"]
    finally:
        podman("rm", "--force", stray)


def test_down_leaves_nothing_behind(lab: dict[str, Any]) -> None:
    """Runs last in this module: take the lab down early; nothing of it may remain, nothing else may go.

    Other labs or molecule scenarios may start or stop meanwhile (several people share a host), so
    the check is by this lab's names and by the other labs that are still up.
    """
    down = labtest.run_lab("down", "--name", NAME)
    assert down.returncode == 0, down.stderr
    containers, networks = labtest.podman_names("ps"), labtest.podman_names("network")
    assert not {c for c in containers if c.startswith(f"{NAME}-")}, containers
    assert f"{NAME}-net" not in networks
    assert not labtest.podman_names("ps", label=f"oci_gpu_lab={NAME}")
    status = json.loads(labtest.run_lab("status", "--json").stdout)
    assert NAME not in [x["name"] for x in status["labs"]]
    for other in status["labs"]:
        if other.get("containers_created"):
            assert {n["container"] for n in other["nodes"]} <= containers, f"lab {other['name']} lost containers"
    before_labs = json.loads(lab["before"]["labs"])["labs"]
    if not before_labs and not status["labs"]:
        assert status["imds_pid"] is None
        assert not Path(f"/proc/{lab['imds_pid']}").exists(), "IMDS server still running after the last lab"
    again = labtest.run_lab("down", "--name", NAME)
    assert again.returncode == 0 and "nothing to remove" in again.stdout
