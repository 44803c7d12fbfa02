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

import cloud  # noqa: E402
import labtest  # noqa: E402

pytestmark = [pytest.mark.slow]

NAME = os.environ.get("OCI_GPU_LAB_DEBUG_KEEP") or f"cap{os.getpid() % 100000}"
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
    # gpu3 and gpu4 are for the repair test's reboots. One RDMA local block for the lab's GPU nodes:
    # with two, the cluster would get a topology, and gpu2 (launched without fabric ids) no place in it
    up = labtest.run_lab(
        "up",
        "--name",
        NAME,
        "--nodes",
        f"ctl:VM.Standard.E5.Flex,gpu1:{SHAPE}@b0,gpu3:{SHAPE}@b0,gpu4:{SHAPE}@b0",
        "--image",
        "trixie",
        "--no-build",
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
        # two elastic nodes from the start (idle~, no instance), for the elastic test; lab timings, by variables
        (inv / "group_vars" / "all" / "elastic.yml").write_text(
            json.dumps(
                {
                    "slurm_elastic_nodesets": [cloud.elastic_nodeset(info, "eh", 2, SHAPE)],
                    "slurm_power_saving": {"suspend_time": 15, "suspend_timeout": 20, "resume_timeout": 240},
                }
            )
        )
        base = playbook(inv, work, "oci_gpu.cluster.slurm")
        assert base.returncode == 0, base.stdout[-6000:]
        job = on_ctl(
            "sbatch", "--parsable", "-w", "gpu1", "--chdir=/tmp", "-o", "/var/tmp/cap-tick.out", "--wrap", TICK_JOB
        )
        yield {"info": info, "inv": inv, "work": work, "job": job, "base_s": time.monotonic() - started}
    finally:
        # OCI_GPU_LAB_DEBUG_KEEP=<name>: the lab stays for debugging by hand (`lab down --name <name>` after)
        if os.environ.get("OCI_GPU_LAB_DEBUG_KEEP") != NAME:
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


class JoinHook:
    """The site's add-node automation, as an AWX-style webhook the repair agent calls (test only): a POST
    to /join/<node> runs the existing add-node path, oci_gpu.cluster.slurm on that node and the
    controllers, in the background, and answers 202 at once."""

    def __init__(self, c: dict[str, Any], host: str) -> None:
        import http.server
        import threading

        hook = self
        self.runs: list[tuple[str, subprocess.CompletedProcess[str]]] = []
        self.threads: list[threading.Thread] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                node = self.path.rsplit("/", 1)[-1]
                t = threading.Thread(target=hook.join, args=(node,), daemon=True)
                t.start()
                hook.threads.append(t)
                self.send_response(202)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.c = c
        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}/join/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def join(self, node: str) -> None:
        res = playbook(
            self.c["inv"],
            self.c["work"],
            "oci_gpu.cluster.slurm",
            "-e",
            f"slurm_play_hosts=slurm_controller:slurm_dbd:{node}",
            # as an add-node hook would: joins may start while another run holds the cluster's lock
            "-e",
            "slurm_run_lock_wait=600",
        )
        self.runs.append((node, res))

    def close(self) -> None:
        self.server.shutdown()
        for t in self.threads:
            t.join(600)


def audit_lines() -> list[dict[str, Any]]:
    out = podman("exec", f"{NAME}-ctl", "cat", "/var/log/oci-gpu-repair/audit.jsonl").stdout
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def node_line(name: str) -> str:
    return on_ctl("scontrol", "-o", "show", "node", name)


def repair_state() -> dict[str, Any]:
    path = json.loads(on_ctl("cat", "/etc/oci-gpu-repair/settings.json"))["state_file"]
    return json.loads(on_ctl("cat", path) or "{}").get("records", {})


def instance_of(c: dict[str, Any], name: str) -> str:
    return next(
        i["id"]
        for i in emulator(c["info"], "/_emulator/instances")
        if i["displayName"] == name and i["lifecycleState"] == "RUNNING"
    )


def test_the_repair_agent_replaces_a_faulted_node_and_loses_no_job(cluster: dict[str, Any]) -> None:
    """A GPU fault on gpu2 while it runs a job, and Xid faults on gpu3 and gpu4 at the same moment,
    with repair_max_concurrent 1. gpu2 first: drained with the agent's reason, its job completes
    with every tick, then it is reported and terminated; the agent is killed while its relaunch
    hangs, and the next pass relaunches once (new OCID, same NodeName and address); the site's
    add-node path joins it, a GPU job in a reservation on gpu2 only accepts it, and it is back idle.
    gpu3 and gpu4 wait queued meanwhile, then are rebooted (OCI RESET) and accepted one at a time.
    A maintenance event 10 minutes out drains and reserves gpu3 before its window, and its end
    returns gpu3. The tick job on gpu1 runs on untouched. Per-step times are printed."""
    info, region = cluster["info"], cluster["info"]["region"]
    gateway = info["node_endpoints"][region].split("//", 1)[1].rsplit(":", 1)[0]
    key = cloud.repair_settings(info, NAME)["repair_oci_api_key"]
    hook = JoinHook(cluster, gateway)
    try:
        settings = {
            **cloud.repair_settings(info, NAME),
            "repair_interval_s": 2,
            "repair_max_concurrent": 1,
            # an Xid is rebooted first (gpu3, gpu4); a lost GPU is replaced (gpu2)
            "repair_reboot_causes": ["gpu-health: xid:"],
            "repair_acceptance_command": "nvidia-smi -L",
            "repair_acceptance_gpus": 8,
            "repair_join_command": [
                "/usr/bin/python3",
                "-c",
                "import sys, urllib.request as u; u.urlopen(u.Request(sys.argv[1], method='POST'), timeout=30)",
                hook.url + "{node}",
            ],
        }
        (cluster["work"] / "repair.json").write_text(json.dumps(settings))
        started = time.monotonic()
        res = playbook(
            cluster["inv"], cluster["work"], "oci_gpu.cluster.repair", "-e", f"@{cluster['work'] / 'repair.json'}"
        )
        assert res.returncode == 0, res.stdout[-6000:]
        print(f"\nrepair agent installed: {time.monotonic() - started:.0f} s")
        assert key["key_file"] not in res.stdout and "PRIVATE KEY" not in res.stdout
        dry = playbook(
            cluster["inv"], cluster["work"], "oci_gpu.cluster.repair", "-e", "repair_pass=dry-run", "--check"
        )
        assert dry.returncode == 0 and "dry_run" in dry.stdout, dry.stdout[-4000:]
        plan = json.loads(
            on_ctl("/usr/local/sbin/oci-gpu-repair", "--config", "/etc/oci-gpu-repair/settings.json", "--dry-run")
        )
        assert plan["dry_run"] is True and plan["actions"] == [] and plan["skipped"] is None, plan

        # OCI answering 503: a fault is seen, nothing is done, the audit log says why
        emulator(info, "/_emulator/knobs", {"route_errors": {"ListInstances": 503}})
        on_ctl("scontrol", "update", "NodeName=gpu2", "State=DRAIN", "Reason=gpu-health: gpu_count: 7 of 8 GPUs")
        end = time.monotonic() + 60
        while time.monotonic() < end and not any(a["action"] == "pass" for a in audit_lines()):
            time.sleep(1)
        blind = [a for a in audit_lines() if a["action"] == "pass"]
        assert blind and blind[0]["result"] == "nothing done" and "ListInstances: 503" in blind[0]["problems"][0], blind
        assert "Reason=gpu-health: gpu_count" in node_line("gpu2")
        on_ctl("scontrol", "update", "NodeName=gpu2", "State=RESUME")  # before OCI answers again
        emulator(info, "/_emulator/knobs", {"route_errors": {}})
        # an administrator's drain on a broken host is never acted on
        gpu1_id = next(
            i["id"]
            for i in emulator(info, "/_emulator/instances")
            if i["displayName"] == "gpu1" and i["lifecycleState"] == "RUNNING"
        )
        on_ctl("scontrol", "update", "NodeName=gpu1", "State=DRAIN", "Reason=lab-admin: cable check")
        emulator(info, "/_emulator/host-health", {"instanceId": gpu1_id, "health": "UNHEALTHY"})

        old = [
            i["id"]
            for i in emulator(info, "/_emulator/instances")
            if i["displayName"] == "gpu2" and i["lifecycleState"] == "RUNNING"
        ]
        assert len(old) == 1
        ip_before = on_ctl("scontrol", "-o", "show", "node", "gpu2").split("NodeAddr=")[1].split()[0]
        tick = "/var/lib/oci-gpu-lab/storage/repair-tick.out"
        job = on_ctl(
            "sbatch",
            "--parsable",
            "-w",
            "gpu2",
            "--chdir=/tmp",
            "-o",
            tick,
            "--wrap",
            "for i in $(seq 0 19); do echo tick $i; sleep 1; done",
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and on_ctl("squeue", "-h", "-j", job, "-o", "%T") != "RUNNING":
            time.sleep(0.5)
        rebooted_ids = {n: instance_of(cluster, n) for n in ("gpu3", "gpu4")}
        # the relaunch will hang until the agent is killed (and never take effect)
        emulator(info, "/_emulator/knobs", {"route_stall_s": {"LaunchInstance": 90}})
        t0, t0_wall = time.monotonic(), time.time()
        # three faults at once, as gpu_node's health check writes them: a lost GPU, two Xids
        on_ctl("scontrol", "update", "NodeName=gpu2", "State=DRAIN", "Reason=gpu-health: gpu_count: 7 of 8 GPUs")
        for n in ("gpu3", "gpu4"):
            on_ctl(
                "scontrol", "update", f"NodeName={n}", "State=DRAIN", "Reason=gpu-health: xid: Xid 79 on PCI:0000:d8:00"
            )
        steps: dict[str, float] = {}

        def wait(label: str, done: Any, limit: float) -> None:
            end = time.monotonic() + limit
            while time.monotonic() < end:
                if done():
                    steps[label] = time.monotonic() - t0
                    return
                time.sleep(1)
            raise AssertionError(
                f"{label}: not within {limit:.0f} s; audit: {audit_lines()[-6:]}; node: {node_line('gpu2')}"
            )

        wait(
            "drained with the agent's reason",
            lambda: "Reason=oci_gpu-repair: gpu-health: gpu_count" in node_line("gpu2"),
            60,
        )
        # the job on gpu2 runs on to its end: never killed
        assert on_ctl("squeue", "-h", "-j", job, "-o", "%T") == "RUNNING"
        # one slot: gpu3 and gpu4 wait, queued, with the health check's reasons
        wait(
            "gpu3 and gpu4 queued",
            lambda: (
                repair_state().get("gpu2", {}).get("phase") in ("draining", "drained", "terminating")
                and [repair_state().get(n, {}).get("phase") for n in ("gpu3", "gpu4")] == ["queued", "queued"]
            ),
            20,
        )
        assert all("Reason=gpu-health: xid: Xid 79" in node_line(n) for n in ("gpu3", "gpu4"))
        wait("job on gpu2 done", lambda: on_ctl("squeue", "-h", "-j", job, "-o", "%T") == "", 60)
        wait(
            "old instance terminated",
            lambda: (
                not any(
                    i["id"] == old[0] and i["lifecycleState"] != "TERMINATED"
                    for i in emulator(info, "/_emulator/instances")
                )
            ),
            120,
        )
        # the agent is killed between the terminate and the relaunch (its launch request hangs)
        wait("relaunch hangs", lambda: emulator(info, "/_emulator/stalled").get("LaunchInstance", 0) >= 1, 60)
        on_ctl("systemctl", "kill", "--signal=SIGKILL", "oci-gpu-repair.service")
        emulator(info, "/_emulator/knobs", {"route_stall_s": {}})
        assert repair_state()["gpu2"]["phase"] == "launching" and live(cluster, "gpu2") == []
        wait(
            "relaunched and RUNNING",
            lambda: any(
                i["displayName"] == "gpu2" and i["lifecycleState"] == "RUNNING" and i["id"] != old[0]
                for i in emulator(info, "/_emulator/instances")
            ),
            240,
        )
        wait("joined (slurmd registered)", lambda: any(a["action"] == "accept" for a in audit_lines()), 420)
        wait(
            "accepted and back in service",
            lambda: (
                on_ctl("sinfo", "-h", "-n", "gpu2", "-o", "%T") == "idle"
                and not any(a["action"] == "unreserve" and a["result"] != "ok" for a in audit_lines())
                and any(a["action"] == "unreserve" for a in audit_lines())
            ),
            240,
        )
        total = time.monotonic() - t0

        def back(n: str) -> bool:
            return on_ctl("sinfo", "-h", "-n", n, "-o", "%T") == "idle" and any(
                a["action"] == "unreserve" and a.get("node") == n for a in audit_lines()
            )

        wait("gpu3 rebooted and back", lambda: back("gpu3"), 180)
        wait("gpu4 rebooted and back", lambda: back("gpu4"), 180)
        print("repair steps (s from the fault): " + json.dumps({k: round(v) for k, v in steps.items()}))
        print(f"repair fault to back in service: {total:.0f} s (gpu2, replaced)")
        # one node out of service for repair at a time, in the audit log's order
        out: set[str] = set()
        for a in audit_lines():
            if a.get("node") in ("gpu2", "gpu3", "gpu4"):
                if a["action"] == "unreserve":
                    out.discard(a["node"])
                else:
                    out.add(a["node"])
                assert len(out) <= 1, f"{sorted(out)} out of service at once: {a}"
        for n in ("gpu3", "gpu4"):
            assert [(a["action"], a["result"]) for a in audit_lines() if a.get("node") == n] == [
                ("drain", "ok"),
                ("reboot", "ok"),
                ("reserve", "ok"),
                ("resume", "ok"),
                ("accept", "ok"),
                ("unreserve", "ok"),
            ]
        resets = [e for e in emulator(info, "/_emulator/compute-log") if e["event"] == "action"]
        assert sorted((e["instanceId"], e["action"]) for e in resets) == sorted(
            (i, "RESET") for i in rebooted_ids.values()
        )
        assert {n: instance_of(cluster, n) for n in ("gpu3", "gpu4")} == rebooted_ids
        launched = [e for e in emulator(info, "/_emulator/compute-log") if e["event"] == "launch"]
        assert [e["displayName"] for e in launched if e["time"] >= t0_wall] == ["gpu2"]

        # a maintenance event 10 minutes out: gpu3 drained and reserved before its window, then back
        start = time.time() + 600
        event = emulator(
            info,
            "/_emulator/maintenance",
            {
                "instanceId": rebooted_ids["gpu3"],
                "timeWindowStart": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(start)),
            },
        )
        m0 = time.monotonic()
        wait(
            "maintenance: drained", lambda: f"Reason=oci_gpu-repair: maintenance {event['id']}" in node_line("gpu3"), 30
        )
        res_line = on_ctl("scontrol", "-o", "show", "reservation", "oci_gpu_repair_gpu3")
        assert "Nodes=gpu3 " in res_line and "MAINT" in res_line, res_line
        assert time.time() < start - 500, "not before the window"
        emulator(info, "/_emulator/maintenance", {"instanceId": event["id"], "lifecycleState": "SUCCEEDED"})
        wait(
            "maintenance over: gpu3 back",
            lambda: (
                on_ctl("sinfo", "-h", "-n", "gpu3", "-o", "%T") == "idle"
                and "oci_gpu_repair_gpu3" not in on_ctl("scontrol", "show", "reservation")
            ),
            30,
        )
        print(f"repair maintenance drain, reserve and return: {time.monotonic() - m0:.0f} s")

        new = [
            i["id"]
            for i in emulator(info, "/_emulator/instances")
            if i["displayName"] == "gpu2" and i["lifecycleState"] == "RUNNING"
        ]
        assert len(new) == 1 and new != old
        assert on_ctl("scontrol", "-o", "show", "node", "gpu2").split("NodeAddr=")[1].split()[0] == ip_before
        log = [e for e in emulator(info, "/_emulator/compute-log") if e.get("instanceId") == old[0]]
        assert any(e["event"] == "host-report" for e in log) and any(e["event"] == "terminate" for e in log)
        # gpu2's job: every tick, COMPLETED; gpu1's job untouched
        ticks = [int(t.split()[1]) for t in on_ctl("cat", tick).splitlines() if t.startswith("tick ")]
        assert ticks == list(range(20))
        assert on_ctl("sacct", "-n", "-X", "-j", job, "-o", "State").split() == ["COMPLETED"]
        assert job_state(cluster) == "RUNNING"
        actions = [(a["action"], a["result"]) for a in audit_lines() if a.get("node") == "gpu2"]
        assert actions == [
            ("drain", "ok"),
            ("report_host", "ok"),
            ("terminate", "ok"),
            ("launch", "ok"),
            ("join", "ok"),
            ("reserve", "ok"),
            ("resume", "ok"),
            ("accept", "ok"),
            ("unreserve", "ok"),
        ], actions
        assert [r[0] for r in hook.runs] == ["gpu2"] and hook.runs[0][1].returncode == 0
        assert "Reason=lab-admin: cable check" in node_line("gpu1")
        assert not [a for a in audit_lines() if a.get("node") == "gpu1"]
        assert on_ctl("scontrol", "show", "reservation").startswith("No reservations")
    finally:
        hook.close()
        podman("exec", f"{NAME}-ctl", "systemctl", "stop", "oci-gpu-repair.timer")
        emulator(info, "/_emulator/knobs", {"route_errors": {}, "route_stall_s": {}})
        for i in emulator(info, "/_emulator/instances"):
            if i["displayName"] == "gpu1" and i["lifecycleState"] == "RUNNING":
                emulator(info, "/_emulator/host-health", {"instanceId": i["id"], "health": "HEALTHY"})
        podman("exec", f"{NAME}-ctl", "scontrol", "update", "NodeName=gpu1", "State=RESUME")


def test_remove_drains_takes_the_node_out_and_terminates_it(cluster: dict[str, Any]) -> None:
    res = capacity(cluster, "-e", '{"capacity_remove": ["gpu2"]}')
    assert res.returncode == 0, res.stdout[-6000:]
    assert "Drain the nodes taken out on purpose and wait for their jobs] ***\nchanged: [ctl]" in res.stdout
    assert podman("container", "exists", f"{NAME}-gpu2").returncode == 1
    assert live(cluster, "gpu2") == []
    assert "gpu2" not in on_ctl("sinfo", "-h", "-N", "-o", "%N").split()
    assert "NodeName=gpu2" not in on_ctl("cat", "/etc/slurm/slurm.conf")
    log = emulator(cluster["info"], "/_emulator/compute-log")
    terminated = [e["instanceId"] for e in log if e["event"] == "terminate"]
    assert len(terminated) == len(set(terminated)) and terminated[-1] not in terminated[:-1]
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


def eh_instances(c: dict[str, Any]) -> dict[str, list[str]]:
    """The live instances of the elastic nodes, by name, as the emulator holds them."""
    out: dict[str, list[str]] = {}
    for i in emulator(c["info"], "/_emulator/instances"):
        if i["displayName"].startswith("eh-") and i["lifecycleState"] not in ("TERMINATING", "TERMINATED"):
            out.setdefault(i["displayName"], []).append(i["id"])
    return out


def eh_containers() -> list[str]:
    names = podman("ps", "-a", "--format", "{{.Names}}").stdout.split()
    return sorted(n for n in names if n.startswith(f"{NAME}-eh-"))


def eh_launches(c: dict[str, Any]) -> list[str]:
    log = emulator(c["info"], "/_emulator/compute-log")
    return [e["displayName"] for e in log if e["event"] == "launch" and str(e.get("displayName")).startswith("eh-")]


def power_audit() -> list[dict[str, Any]]:
    out = podman("exec", f"{NAME}-ctl", "cat", "/var/log/oci-gpu-power/audit.jsonl").stdout
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def flags(node: str) -> str:
    return node_line(node).split("State=", 1)[1].split()[0]


def test_elastic_nodes_power_up_for_a_job_and_nothing_is_orphaned(cluster: dict[str, Any]) -> None:
    """Two elastic nodes start idle~ with no instance. sbatch -N2 on them: both are launched, slurmctld is
    restarted while the resume is in flight, the nodes join (configless, no edit elsewhere) and the job
    completes; a second resume for a running node launches nothing; after SuspendTime both are terminated
    and their containers are gone. A capacity error downs the node with the shape and OCI's message, the
    job is requeued and no instance remains. Orphans are counted after each step: 0."""
    info, work = cluster["info"], cluster["work"]
    settings = {
        **cloud.elastic_settings(info, NAME),
        "elastic_interval_s": 2,
        "elastic_orphan_grace_s": 20,
        # a container reports the host's boot time: slurmd -b says it booted, or slurmctld waits for a boot
        # that never comes (a powering-up node must report a boot newer than the resume)
        "elastic_slurmd_options": "-b",
    }
    (work / "elastic.json").write_text(json.dumps(settings))
    started = time.monotonic()
    res = playbook(cluster["inv"], work, "oci_gpu.cluster.elastic", "-e", f"@{work / 'elastic.json'}")
    assert res.returncode == 0, res.stdout[-6000:]
    assert "PRIVATE KEY" not in res.stdout and settings["elastic_oci_api_key"]["key_file"] not in res.stdout
    print(f"\nelastic installed: {time.monotonic() - started:.0f} s")
    steps: dict[str, float] = {}
    orphans: dict[str, int] = {}
    try:
        for n in ("eh-1", "eh-2"):
            assert "POWERED_DOWN" in flags(n) and "CLOUD" in flags(n), node_line(n)
        assert eh_instances(cluster) == {} and eh_containers() == []
        conf = on_ctl("cat", "/etc/slurm/slurm.conf")
        # static nodes are never powered down (gpu2 may be there too: the capacity test adds and removes it)
        exc = next(x for x in conf.splitlines() if x.startswith("SuspendExcNodes="))
        assert exc.startswith("SuspendExcNodes=gpu[1") and "eh" not in exc and "ResumeTimeout=240" in conf, exc

        t0 = time.monotonic()
        job = on_ctl(
            "sbatch",
            "--parsable",
            "-N2",
            "-w",
            "eh-[1-2]",
            "--chdir=/tmp",
            "-o",
            "/var/tmp/eh.out",
            "--wrap",
            "srun hostname; sleep 3",
        )
        end = time.monotonic() + 60
        while time.monotonic() < end and not all("POWERING_UP" in flags(n) for n in ("eh-1", "eh-2")):
            time.sleep(0.5)
        assert all("POWERING_UP" in flags(n) for n in ("eh-1", "eh-2")), (
            node_line("eh-1") + on_ctl("tail", "-n", "25", "/var/log/slurm/slurmctld.log") + str(power_audit()[-5:])
        )
        podman("exec", f"{NAME}-ctl", "systemctl", "restart", "slurmctld")  # a resume in flight
        end = time.monotonic() + 240
        while time.monotonic() < end and on_ctl("squeue", "-h", "-j", job, "-o", "%T") in ("PENDING", "CONFIGURING"):
            time.sleep(1)
        steps["idle~ to job running"] = time.monotonic() - t0
        assert on_ctl("squeue", "-h", "-j", job, "-o", "%T") in ("RUNNING", "COMPLETING", ""), power_audit()[-6:]
        # a second resume for a node that has its instance launches nothing
        on_ctl("runuser", "-u", "slurm", "--", "/usr/local/sbin/oci-gpu-power-resume", "eh-1")
        end = time.monotonic() + 60
        while time.monotonic() < end and on_ctl("sacct", "-n", "-X", "-j", job, "-o", "State").strip() != "COMPLETED":
            time.sleep(1)
        assert on_ctl("sacct", "-n", "-X", "-j", job, "-o", "State").split() == ["COMPLETED"]
        out = podman("exec", f"{NAME}-eh-1", "cat", "/var/tmp/eh.out").stdout.split()
        assert sorted(out) == ["eh-1", "eh-2"], out
        # each passed the gpu_node health check at join, with settings naming it and its shape's GPUs
        health = json.loads(podman("exec", f"{NAME}-eh-2", "cat", "/etc/oci-gpu/health.json").stdout)
        assert (health["node"], health["gpu_count"], health["fabric"]) == ("eh-2", 8, "fabricmanager"), health
        joins = [a for a in power_audit() if a["action"] == "bootstrap" and a.get("result") == "ok"]
        assert sorted(a["node"] for a in joins if "after the GPU health check passed" in a["detail"]) == [
            "eh-1",
            "eh-2",
        ], joins
        time.sleep(3)
        assert sorted(eh_launches(cluster)) == ["eh-1", "eh-2"]  # one launch each, the restart and resume included
        orphans["after the job"] = sum(len(v) - 1 for v in eh_instances(cluster).values())

        t1 = time.monotonic()
        end = time.monotonic() + 120
        while time.monotonic() < end and (eh_instances(cluster) or eh_containers()):
            time.sleep(1)
        steps["idle to terminated"] = time.monotonic() - t1
        assert eh_instances(cluster) == {} and eh_containers() == [], power_audit()[-6:]
        end = time.monotonic() + 60
        while time.monotonic() < end and not all("POWERED_DOWN" in flags(n) for n in ("eh-1", "eh-2")):
            time.sleep(1)
        assert all("POWERED_DOWN" in flags(n) for n in ("eh-1", "eh-2")), node_line("eh-1")
        orphans["after suspend"] = len(eh_instances(cluster)) + len(eh_containers())

        # OCI has no capacity: the node is down with the shape and OCI's message, the job waits, nothing runs
        emulator(
            info,
            "/_emulator/knobs",
            {
                "route_faults": {
                    "LaunchInstance": {"status": 500, "code": "InternalError", "message": "Out of host capacity."}
                }
            },
        )
        t2 = time.monotonic()
        job2 = on_ctl("sbatch", "--parsable", "-w", "eh-1", "--chdir=/tmp", "--wrap", "hostname")
        end = time.monotonic() + 60
        while time.monotonic() < end and not node_line("eh-1").split("State=", 1)[1].startswith("DOWN"):
            time.sleep(1)
        steps["capacity error to node down"] = time.monotonic() - t2
        line = node_line("eh-1")
        assert line.split("State=", 1)[1].startswith("DOWN"), line
        assert f"Reason=oci_gpu-power: no capacity for {SHAPE} in {info['availability_domain']}: Out of host" in line
        assert on_ctl("squeue", "-h", "-j", job2, "-o", "%T") == "PENDING"
        # no instance, and no launch beyond the job's two (OCI answered the third with its error)
        assert eh_instances(cluster) == {} and sorted(eh_launches(cluster)) == ["eh-1", "eh-2"]
        on_ctl("scancel", job2)
        orphans["after the capacity error"] = len(eh_instances(cluster)) + len(eh_containers())

        # a node that fails the GPU health check at join: slurmd never starts, the node is down with the
        # check's reason, its job waits, and its instance is terminated
        emulator(info, "/_emulator/knobs", {"route_faults": {}})
        missing = "/srv/oci-gpu-not-mounted"
        res = playbook(
            cluster["inv"],
            work,
            "oci_gpu.cluster.elastic",
            "-e",
            f"@{work / 'elastic.json'}",
            "-e",
            json.dumps({"elastic_health_mounts": [missing]}),
        )
        assert res.returncode == 0, res.stdout[-4000:]
        t3 = time.monotonic()
        job3 = on_ctl("sbatch", "--parsable", "-w", "eh-2", "--chdir=/tmp", "--wrap", "hostname")
        end = time.monotonic() + 120
        while time.monotonic() < end and "gpu-health at join" not in node_line("eh-2"):
            time.sleep(1)
        line = node_line("eh-2")
        assert f"Reason=oci_gpu-power: gpu-health at join: mounts: {missing}" in line, line + str(power_audit()[-4:])
        end = time.monotonic() + 120
        while time.monotonic() < end and (eh_instances(cluster) or eh_containers()):
            time.sleep(1)
        steps["failed health check to released"] = time.monotonic() - t3
        assert eh_instances(cluster) == {} and eh_containers() == [], power_audit()[-4:]
        time.sleep(5)  # a pass or two later: still down, nothing launched again
        line = node_line("eh-2")
        assert line.split("State=", 1)[1].startswith("DOWN"), line
        assert on_ctl("squeue", "-h", "-j", job3, "-o", "%T") == "PENDING"
        assert sorted(eh_launches(cluster)) == ["eh-1", "eh-2", "eh-2"], eh_launches(cluster)
        on_ctl("scancel", job3)
        orphans["after a failed health check"] = len(eh_instances(cluster)) + len(eh_containers())
        assert orphans == {
            "after the job": 0,
            "after suspend": 0,
            "after the capacity error": 0,
            "after a failed health check": 0,
        }, orphans
        actions = [(a.get("node"), a["action"], a.get("result")) for a in power_audit() if a.get("node")]
        assert ("eh-1", "launch", "ok") in actions and ("eh-1", "terminate", "ok") in actions, actions
        for label, secs in steps.items():
            print(f"elastic: {label}: {secs:.0f} s")
        print(f"elastic: orphans {orphans}")
    finally:
        emulator(info, "/_emulator/knobs", {"route_faults": {}})
        podman("exec", f"{NAME}-ctl", "systemctl", "stop", "oci-gpu-power.timer", "oci-gpu-power.path")
