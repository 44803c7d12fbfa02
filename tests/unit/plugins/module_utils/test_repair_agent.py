# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The repair agent's pass (repair/_agent.run_pass) against the OCI emulator through the real ``oci``
SDK, with a Slurm stand-in (``FakeSlurm``: scontrol/sbatch/squeue answers as Slurm gives them, and a
record of every write). What OCI did is read from the emulator's own log and tenancy, never from the
agent's answers."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import oci
import pytest

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ansible_collections.oci_gpu.cluster.plugins.module_utils.repair import _agent  # noqa: E402
from tests.oci_emulator import generate  # noqa: E402
from tests.oci_emulator.testing import running_emulator  # noqa: E402

SHAPE = "BM.GPU.H100.8"
R = "oci_gpu-repair:"


class FakeSlurm:
    """Slurm's side: nodes, reservations and jobs, answering the argv the agent runs."""

    def __init__(self, names: list[str]) -> None:
        self.nodes = {n: {"state": "IDLE", "flags": [], "reason": "", "start": "2026-12-05T10:00:00"} for n in names}
        self.reservations: dict[str, list[str]] = {}
        self.jobs: dict[str, dict[str, str]] = {}
        self.writes: list[list[str]] = []
        self.fail: dict[str, str] = {}  # first argv word after the program -> error text
        self.ping = "Slurmctld(primary) at ctl is UP\n"

    def show_node(self) -> str:
        out = []
        for name, n in self.nodes.items():
            state = n["state"] + ("*" if "NOT_RESPONDING" in n["flags"] else "")
            flags = [f for f in n["flags"] if f != "NOT_RESPONDING"]
            out.append(f"NodeName={name} Arch=x86_64 CoresPerSocket=1")
            out.append(f"   State={'+'.join([state, *flags])} ThreadsPerCore=1")
            out.append(f"   SlurmdStartTime={n['start']}")
            if n["reason"]:
                out.append(f"   Reason={n['reason']} [root@2026-12-05T10:00:00]")
            out.append("")
        return "\n".join(out)

    def __call__(self, argv: list[str], timeout: float) -> tuple[int, str, str]:
        argv = list(argv)
        prog, args = argv[0], argv[1:]
        if args and args[0] in self.fail:
            return 1, "", self.fail[args[0]]
        if prog == "scontrol" and args == ["ping"]:
            return (0 if "is UP" in self.ping else 1), self.ping, ""
        if prog == "scontrol" and args[:2] == ["show", "node"]:
            return 0, self.show_node(), ""
        if prog == "scontrol" and args[:2] == ["show", "job"]:
            job = self.jobs.get(args[-1])
            if job is None:
                return 1, "", "slurm_load_jobs error: Invalid job id specified"
            return 0, f"JobId={args[-1]} JobName=x JobState={job['state']} Reason=None ExitCode={job['exit']}\n", ""
        self.writes.append(argv)
        kv = dict(a.split("=", 1) for a in args if "=" in a)
        if prog == "scontrol" and args[0] == "update":
            node = self.nodes[kv["NodeName"]]
            if kv.get("State") == "DRAIN":
                node["flags"] = sorted(set(node["flags"]) | {"DRAIN"})
                node["reason"] = kv["Reason"]
            elif kv.get("State") == "RESUME":
                node["flags"] = [f for f in node["flags"] if f != "DRAIN"]
                node["reason"] = ""
            return 0, "", ""
        if prog == "scontrol" and args[:2] == ["create", "reservation"]:
            self.reservations[kv["ReservationName"]] = kv["Nodes"].split(",")
            return 0, f"Reservation created: {kv['ReservationName']}\n", ""
        if prog == "scontrol" and args[0] == "delete":
            if self.reservations.pop(kv["ReservationName"], None) is None:
                return 1, "", f"Reservation {kv['ReservationName']} not found"
            return 0, "", ""
        if prog == "sbatch":
            job_id = str(100 + len(self.jobs))
            self.jobs[job_id] = {"state": "RUNNING", "exit": "0:0"}
            return 0, f"{job_id}\n", ""
        if prog == "squeue":
            return 0, "", ""
        if prog == "site-join":  # the site's add-node automation, recorded in writes
            return 0, "", ""
        return 1, "", f"unexpected command {argv}"


@pytest.fixture
def lab(tmp_path: Path) -> Any:
    with running_emulator(
        generate(seed=7, hosts=2, compartments=1, regions=1),
        tmp_path,
        launch_delay_s=0.02,
        terminate_delay_s=0.02,
        action_delay_s=0.02,
        launch_topology={"localBlockId": "ocid1.computelocalblock.lab"},
    ) as running:
        tenancy, creds, em = running.tenancy, running.creds, running.emulator
        endpoint = running.endpoints[tenancy.home_region]
        region = tenancy.regions[tenancy.home_region]
        comp = region.instances[0]["compartmentId"]
        cfg_file = tmp_path / "settings.json"
        cfg_file.write_text(
            json.dumps(
                {
                    "cluster": "lab",
                    "controller_name": "ctl",
                    "oci": {
                        "config_file": str(creds.config_file),
                        "config_profile": creds.profile,
                        "service_endpoint": endpoint,
                        "compartment_id": comp,
                    },
                    "state_file": str(tmp_path / "state" / "state.json"),
                    "audit_log": str(tmp_path / "log" / "audit.jsonl"),
                    "machine": {"max_concurrent": 1},
                    "acceptance": {"command": "nvidia-smi -L", "gpus": 8, "time_limit_min": 5, "user": "root"},
                    "join_command": ["site-join", "--node", "{node}", "--ip", "{ip}", "--instance", "{instance_id}"],
                }
            )
        )
        cfg = _agent.load_config(str(cfg_file))
        clients = _agent.make_clients(cfg)
        compute = clients["compute"]
        ids = {}
        for name in ("gpu1", "gpu2", "gpu3"):
            details = oci.core.models.LaunchInstanceDetails(
                compartment_id=comp,
                availability_domain=region.ads[0],
                shape=SHAPE,
                display_name=name,
                create_vnic_details=oci.core.models.CreateVnicDetails(
                    subnet_id=region.subnets[0]["id"], hostname_label=name
                ),
                defined_tags={"oci-gpu": {"cluster": "lab", "slurm-role": "compute"}},
                metadata={"ssh_authorized_keys": "ssh-ed25519 AAAA lab", "user_data": "I2Nsb3VkLWNvbmZpZwo="},
                source_details=oci.core.models.InstanceSourceViaImageDetails(image_id="ocid1.image.oc1..lab"),
            )
            ids[name] = compute.launch_instance(details).data.id
        em.wait_idle()
        slurm = FakeSlurm(["gpu1", "gpu2", "gpu3"])
        yield {"em": em, "cfg": cfg, "clients": clients, "slurm": slurm, "ids": ids, "region": region, "comp": comp}
        em.wait_idle()


def one_pass(lab: dict, now: float, **kw: Any) -> dict[str, Any]:
    out = _agent.run_pass(lab["cfg"], run=lab["slurm"], clients=lab["clients"], now=now, **kw)
    lab["em"].wait_idle()
    return out


def events(lab: dict, kind: str) -> list[dict[str, Any]]:
    return [e for e in lab["em"].compute_log if e["event"] == kind]


def records(lab: dict) -> dict[str, Any]:
    return json.loads(Path(lab["cfg"]["state_file"]).read_text())["records"]


def audit(lab: dict) -> list[dict[str, Any]]:
    path = Path(lab["cfg"]["audit_log"])
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def instance(lab: dict, iid: str) -> dict[str, Any]:
    return lab["region"].by_id[iid]


def test_a_gpu_fault_is_drained_replaced_accepted_and_returned(lab: dict) -> None:
    slurm, old = lab["slurm"], lab["ids"]["gpu1"]
    slurm.nodes["gpu1"].update(flags=["DRAIN"], reason="gpu-health: fabric: nvidia-imex is not running")
    slurm.nodes["gpu2"].update(state="ALLOCATED")  # a job runs on gpu2 throughout
    t = 1_000_000.0
    one_pass(lab, t)
    assert slurm.nodes["gpu1"]["reason"] == f"{R} gpu-health: fabric: nvidia-imex is not running"
    assert records(lab)["gpu1"]["phase"] == "draining"

    one_pass(lab, t + 60)  # drained -> report the host, terminate the recorded instance
    assert [e["instanceId"] for e in events(lab, "host-report")] == [old]
    assert [e["instanceId"] for e in events(lab, "terminate")] == [old]
    rec = records(lab)["gpu1"]
    assert rec["phase"] == "terminating"
    assert rec["template"]["hostname_label"] == "gpu1" and rec["template"]["private_ip"]
    assert "ComputeInstanceHostActions" not in rec["template"]["defined_tags"]
    old_ip = rec["template"]["private_ip"]
    assert instance(lab, old)["lifecycleState"] == "TERMINATED"
    assert instance(lab, old)["definedTags"]["oci-gpu"] == {"cluster": "lab", "slurm-role": "compute"}

    one_pass(lab, t + 120)  # gone -> relaunch: same name, hostname label and private IP
    launches = events(lab, "launch")[3:]  # the fixture launched three
    assert len(launches) == 1
    assert (launches[0]["displayName"], launches[0]["privateIp"]) == ("gpu1", old_ip)
    new = launches[0]["instanceId"]
    assert instance(lab, new)["definedTags"] == {"oci-gpu": {"cluster": "lab", "slurm-role": "compute"}}

    one_pass(lab, t + 180)
    assert records(lab)["gpu1"]["phase"] == "joining"
    one_pass(lab, t + 240)  # RUNNING: the site's join command, once, with the node's address
    assert [w for w in slurm.writes if w[0] == "site-join"] == [
        ["site-join", "--node", "gpu1", "--ip", old_ip, "--instance", new]
    ]
    one_pass(lab, t + 270)  # slurmd not back yet: waits, no second join
    assert records(lab)["gpu1"]["phase"] == "joining"
    assert len([w for w in slurm.writes if w[0] == "site-join"]) == 1
    slurm.nodes["gpu1"]["start"] = "2026-12-05T10:20:00"  # the new node's slurmd registers
    one_pass(lab, t + 300)
    rec = records(lab)["gpu1"]
    assert rec["phase"] == "accepting" and rec["instance_id"] == new and rec["job_id"] == "100"
    assert slurm.reservations == {"oci_gpu_repair_gpu1": ["gpu1"]}
    assert slurm.nodes["gpu1"]["flags"] == []  # resumed inside the reservation
    sbatch = next(w for w in slurm.writes if w[0] == "sbatch")
    assert "--reservation=oci_gpu_repair_gpu1" in sbatch and "--nodelist=gpu1" in sbatch and "--gres=gpu:8" in sbatch

    slurm.jobs["100"] = {"state": "COMPLETED", "exit": "0:0"}
    one_pass(lab, t + 360)
    assert records(lab) == {}
    assert slurm.reservations == {}
    # gpu2 was never touched; one instance per node name is alive
    assert all("NodeName=gpu2" not in " ".join(w) for w in slurm.writes)
    live = [i for i in lab["region"].instances if i["lifecycleState"] not in ("TERMINATED", "TERMINATING")]
    assert sorted(i["displayName"] for i in live if i["displayName"] in ("gpu1", "gpu2", "gpu3")) == [
        "gpu1",
        "gpu2",
        "gpu3",
    ]
    assert [(a["node"], a["action"], a["result"]) for a in audit(lab)] == [
        ("gpu1", "drain", "ok"),
        ("gpu1", "report_host", "ok"),
        ("gpu1", "terminate", "ok"),
        ("gpu1", "launch", "ok"),
        ("gpu1", "join", "ok"),
        ("gpu1", "reserve", "ok"),
        ("gpu1", "resume", "ok"),
        ("gpu1", "accept", "ok"),
        ("gpu1", "unreserve", "ok"),
    ]


def test_oci_unreachable_means_nothing_is_done_and_the_log_says_why(lab: dict) -> None:
    slurm = lab["slurm"]
    slurm.nodes["gpu1"].update(flags=["DRAIN"], reason=f"{R} gpu-health: fabric: nvidia-imex is not running")
    one_pass(lab, 1_000_000.0)  # draining (the node already carries the agent's reason)
    lab["em"].knobs.update(route_errors={"ListInstances": 503})
    before = len(lab["em"].compute_log)
    out = one_pass(lab, 1_000_060.0)
    assert out["results"] == []
    assert "ListInstances: 503" in out["skipped"]
    assert len(lab["em"].compute_log) == before  # no terminate, no report, nothing
    assert records(lab)["gpu1"]["phase"] == "draining"
    assert audit(lab)[-1]["action"] == "pass" and audit(lab)[-1]["result"] == "nothing done"
    assert "ListInstances: 503" in audit(lab)[-1]["problems"][0]
    # Slurm unreadable: the same
    lab["em"].knobs.update(route_errors={})
    slurm.fail["show"] = "slurm_load_node error: Unable to contact slurm controller"
    out = one_pass(lab, 1_000_120.0)
    assert out["results"] == [] and "Unable to contact slurm controller" in out["skipped"]
    assert events(lab, "terminate") == []
    # no controller answers ping: nothing either; a backup's agent stands by while the primary is up
    slurm.fail.pop("show")
    slurm.ping = "Slurmctld(primary) at ctl is DOWN\nSlurmctld(backup) at ctl2 is DOWN\n"
    out = one_pass(lab, 1_000_130.0)
    assert out["skipped"] == "scontrol ping: no controller is UP" and audit(lab)[-1]["result"] == "nothing done"
    slurm.ping = "Slurmctld(primary) at ctl is UP\nSlurmctld(backup) at ctl2 is UP\n"
    backup = {**lab["cfg"], "controller_name": "ctl2"}
    out = _agent.run_pass(backup, run=slurm, clients=lab["clients"], now=1_000_140.0)
    assert out["skipped"] == "standby: ctl is the controller in charge, not ctl2"
    assert events(lab, "terminate") == []


def _pool(lab: dict, *members: str) -> dict[str, Any]:
    pool = {
        "id": "ocid1.instancepool.oc1..lab-gpu",
        "compartmentId": lab["comp"],
        "displayName": "lab-gpu-pool",
        "lifecycleState": "RUNNING",
        "size": len(members),
        "_instanceIds": [lab["ids"][m] for m in members],
    }
    lab["region"].instance_pools.append(pool)
    lab["region"].by_id[pool["id"]] = pool
    return pool


def test_a_pool_member_is_detached_relaunched_and_attached_back_and_an_unread_pool_does_nothing(lab: dict) -> None:
    """OCI relaunches a pool's member terminated behind its back: gpu3 leaves its pool with the size
    one less (OCI terminates it), and its relaunch joins the pool again - one instance, never two."""
    slurm, old = lab["slurm"], lab["ids"]["gpu3"]
    pool = _pool(lab, "gpu3")
    slurm.nodes["gpu3"].update(flags=["DRAIN"], reason="gpu-health: fabric: nvidia-imex is not running")
    lab["em"].knobs.update(route_errors={"ListInstancePoolInstances": 503})
    out = one_pass(lab, 1_000_000.0)
    assert out["results"] == [] and "ListInstancePools: 503" in out["skipped"]
    lab["em"].knobs.update(route_errors={})
    t = 1_000_060.0
    one_pass(lab, t)  # draining
    one_pass(lab, t + 60)  # drained: reported, detached (size - 1, auto-terminate)
    detach = events(lab, "pool-detach")
    assert [(e["instanceId"], e["isDecrementSize"], e["isAutoTerminate"]) for e in detach] == [(old, True, True)]
    assert events(lab, "terminate") == [] and pool["size"] == 0
    assert instance(lab, old)["lifecycleState"] == "TERMINATED"
    one_pass(lab, t + 120)  # gone: relaunched standalone, same name
    new = events(lab, "launch")[-1]["instanceId"]
    assert instance(lab, new)["displayName"] == "gpu3"
    one_pass(lab, t + 180)  # launched -> joining
    one_pass(lab, t + 240)  # RUNNING: attached back to the pool, the site's join run
    assert [e["instanceId"] for e in events(lab, "pool-attach")] == [new]
    assert pool["_instanceIds"] == [new] and pool["size"] == 1
    assert [a["action"] for a in audit(lab) if a.get("node") == "gpu3"] == [
        "drain",
        "report_host",
        "detach",
        "launch",
        "attach",
        "join",
    ]


def test_a_cluster_networks_member_is_rebooted_but_never_replaced(lab: dict) -> None:
    slurm, region = lab["slurm"], lab["region"]
    pool = _pool(lab, "gpu3")
    region.cluster_networks.append(
        {
            "id": "ocid1.clusternetwork.oc1..lab",
            "compartmentId": lab["comp"],
            "displayName": "lab-cn",
            "lifecycleState": "RUNNING",
            "instancePools": [pool["id"]],
        }
    )
    slurm.nodes["gpu3"].update(flags=["DRAIN"], reason="gpu-health: fabric: nvidia-imex is not running")
    one_pass(lab, 1_000_000.0)  # draining
    one_pass(lab, 1_000_060.0)  # drained: held, with the reason saying why
    assert events(lab, "terminate") == [] and events(lab, "pool-detach") == [] and events(lab, "host-report") == []
    assert records(lab)["gpu3"]["phase"] == "failed"
    assert slurm.nodes["gpu3"]["reason"].startswith(
        f"{R} gave up: instance {lab['ids']['gpu3']} is in cluster network ocid1.clusternetwork.oc1..lab"
    )


def test_killed_after_oci_took_the_launch_the_next_pass_adopts_and_launches_nothing(lab: dict, monkeypatch) -> None:
    slurm, old = lab["slurm"], lab["ids"]["gpu1"]
    slurm.nodes["gpu1"].update(flags=["DRAIN"], reason="gpu-health: fabric: nvidia-imex is not running")
    one_pass(lab, 1_000_000.0)
    one_pass(lab, 1_000_060.0)
    assert instance(lab, old)["lifecycleState"] == "TERMINATED"
    real_launch = _agent.Actor.launch

    def launch_then_die(self, node, rec, **kw):
        real_launch(self, node, rec, **kw)
        raise SystemExit("killed")  # the agent dies before it records the new OCID

    monkeypatch.setattr(_agent.Actor, "launch", launch_then_die)
    with pytest.raises(SystemExit):
        one_pass(lab, 1_000_120.0)
    monkeypatch.setattr(_agent.Actor, "launch", real_launch)
    assert records(lab)["gpu1"]["phase"] == "launching"
    assert "new_instance_id" not in records(lab)["gpu1"]
    one_pass(lab, 1_000_180.0)
    one_pass(lab, 1_000_240.0)
    assert len(events(lab, "launch")) == 4  # three from the fixture, one relaunch
    assert records(lab)["gpu1"]["phase"] == "joining"


def test_killed_before_the_launch_call_the_next_pass_launches_once_with_the_same_token(lab: dict, monkeypatch) -> None:
    slurm = lab["slurm"]
    slurm.nodes["gpu1"].update(flags=["DRAIN"], reason="gpu-health: fabric: nvidia-imex is not running")
    one_pass(lab, 1_000_000.0)
    one_pass(lab, 1_000_060.0)

    def die(self, node, rec, **kw):
        raise SystemExit("killed")

    monkeypatch.setattr(_agent.Actor, "launch", die)
    with pytest.raises(SystemExit):
        one_pass(lab, 1_000_120.0)
    monkeypatch.undo()
    token = records(lab)["gpu1"]["token"]
    one_pass(lab, 1_000_180.0)
    one_pass(lab, 1_000_240.0)
    assert len(events(lab, "launch")) == 4
    assert records(lab)["gpu1"]["token"] == token
    assert records(lab)["gpu1"]["phase"] == "joining"


def test_three_faults_with_max_concurrent_1_are_replaced_one_at_a_time(lab: dict) -> None:
    slurm = lab["slurm"]
    for name in ("gpu1", "gpu2", "gpu3"):
        slurm.nodes[name].update(flags=["DRAIN"], reason="gpu-health: fabric: nvlink down")
    one_pass(lab, 1_000_000.0)
    one_pass(lab, 1_000_060.0)
    phases = {n: r["phase"] for n, r in records(lab).items()}
    assert phases == {"gpu1": "terminating", "gpu2": "queued", "gpu3": "queued"}
    assert [e["instanceId"] for e in events(lab, "terminate")] == [lab["ids"]["gpu1"]]


def test_an_unhealthy_host_drains_its_node_and_an_administrators_drain_is_left_alone(lab: dict) -> None:
    slurm, em = lab["slurm"], lab["em"]
    slurm.nodes["gpu2"].update(flags=["DRAIN"], reason="swapping a cable")
    em.set_host_health(lab["ids"]["gpu1"], "UNHEALTHY")
    em.set_host_health(lab["ids"]["gpu2"], "UNHEALTHY")
    one_pass(
        lab,
        1_000_000.0,
    )
    assert slurm.nodes["gpu1"]["reason"] == f"{R} oci-host: UNHEALTHY (impacted components)"
    assert slurm.nodes["gpu2"]["reason"] == "swapping a cable"
    assert sorted(records(lab)) == ["gpu1"]


def test_a_maintenance_event_drains_and_reserves_the_node_before_its_window(lab: dict) -> None:
    slurm, em = lab["slurm"], lab["em"]
    now = float(int(time.time()))
    start = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now + 600))
    ev = em.schedule_maintenance(lab["ids"]["gpu3"], timeWindowStart=start, startWindowDuration="PT2H")
    slurm.nodes["gpu3"]["state"] = "MIXED"
    one_pass(lab, now)
    assert "DRAIN" in slurm.nodes["gpu3"]["flags"]
    assert slurm.nodes["gpu3"]["reason"].startswith(f"{R} maintenance ocid1.instancemaintenanceevent")
    assert slurm.reservations == {"oci_gpu_repair_gpu3": ["gpu3"]}
    create = next(w for w in slurm.writes if w[1:3] == ["create", "reservation"])
    assert create[-2:] == ["Duration=131", "Flags=MAINT,IGNORE_JOBS"]  # 10 min + 2 h, and one more
    one_pass(lab, now + 60)  # waits for the window
    assert "DRAIN" in slurm.nodes["gpu3"]["flags"] and records(lab)["gpu3"]["phase"] == "maintenance"
    em.update_maintenance(ev["id"], lifecycleState="SUCCEEDED")
    one_pass(lab, now + 120)  # over: the reservation goes, the node is back
    assert slurm.reservations == {} and slurm.nodes["gpu3"]["flags"] == [] and records(lab) == {}


def test_the_dry_run_plans_what_the_real_pass_does_and_changes_nothing(lab: dict) -> None:
    slurm = lab["slurm"]
    slurm.nodes["gpu1"].update(flags=["DRAIN"], reason=f"{R} gpu-health: fabric: nvidia-imex is not running")
    one_pass(lab, 1_000_000.0)
    writes, log = list(slurm.writes), len(lab["em"].compute_log)
    state = Path(lab["cfg"]["state_file"]).read_text()
    dry = one_pass(lab, 1_000_060.0, dry_run=True)
    assert slurm.writes == writes and len(lab["em"].compute_log) == log
    assert Path(lab["cfg"]["state_file"]).read_text() == state
    assert [(a["node"], a["do"]) for a in dry["plan"]["actions"]] == [("gpu1", "report_host"), ("gpu1", "terminate")]
    real = one_pass(lab, 1_000_060.0)
    assert real["plan"]["actions"] == dry["plan"]["actions"]


def test_a_second_pass_while_one_holds_the_lock_does_nothing(lab: dict) -> None:
    import fcntl
    import os

    path = lab["cfg"]["state_file"] + ".lock"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        lab["slurm"].nodes["gpu1"].update(flags=["DRAIN"], reason="gpu-health: xid: 79")
        out = one_pass(lab, 1_000_000.0)
    finally:
        os.close(fd)
    assert out["skipped"] == "another pass holds the lock"
    assert lab["slurm"].writes == []


def test_terminate_refuses_an_instance_without_the_cluster_tag(lab: dict) -> None:
    foreign = next(i["id"] for i in lab["region"].instances if i["id"] not in lab["ids"].values())
    actor = _agent.Actor(lab["cfg"], lab["slurm"], lab["clients"], 1_000_000.0)
    with pytest.raises(
        _agent.AgentError, match=r"belongs to cluster 'emulated' \(oci-gpu\.cluster\), not 'lab': it is left alone"
    ):
        actor.terminate("gpuX", {}, instance_id=foreign)
    assert events(lab, "terminate") == []


def test_settings_errors_name_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"cluster": "lab", "oci": {"compartment_id": "c"}, "machine": {"max_concurrent": 0}}))
    with pytest.raises(_agent.AgentError, match=r"s.json: repair setting max_concurrent=0"):
        _agent.load_config(str(path))
    path.write_text(json.dumps({"cluster": "lab"}))
    with pytest.raises(_agent.AgentError, match=r"oci.compartment_id is required"):
        _agent.load_config(str(path))


def test_an_elastic_agents_instance_is_never_repaired(lab: dict) -> None:
    """An instance the elastic agent launched (role tag ``elastic``) failing its health check at join is
    Slurm's to power down and the elastic agent's to terminate: the repair agent neither drains it into a
    repair nor replaces it, while a static node with the same fault is repaired."""
    slurm = lab["slurm"]
    instance(lab, lab["ids"]["gpu3"])["definedTags"]["oci-gpu"]["slurm-role"] = "elastic"
    for name in ("gpu1", "gpu3"):
        slurm.nodes[name].update(flags=["DRAIN"], reason="gpu-health: gpu_count: 7 of 8 GPUs")
    slurm.nodes["gpu3"]["flags"] = ["CLOUD", "DRAIN"]  # State=CLOUD in slurm.conf
    one_pass(lab, 1_000_000.0)
    one_pass(lab, 1_000_060.0)
    assert sorted(records(lab)) == ["gpu1"]
    touched = {e["instanceId"] for e in lab["em"].compute_log if e["event"] not in ("launch", "running")}
    assert lab["ids"]["gpu1"] in touched and lab["ids"]["gpu3"] not in touched
    assert slurm.nodes["gpu3"]["reason"] == "gpu-health: gpu_count: 7 of 8 GPUs"
