# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The elastic capacity agent (power/_agent) against the OCI emulator through the real ``oci`` SDK,
with a Slurm stand-in answering ``scontrol`` as Slurm does for cloud nodes and an SSH stand-in that
records what the bootstrap sends. What OCI did is read from the emulator, never from the agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ansible_collections.oci_gpu.cluster.plugins.module_utils.power import _agent, _request  # noqa: E402
from tests.oci_emulator import Emulator, Tenancy, generate, write_oci_config  # noqa: E402

SHAPE = "BM.GPU.H100.8"
NODES = ["eh-1", "eh-2"]
MUNGE = b"\x01secret-munge-key\xff" * 8


class FakeSlurm:
    """Cloud nodes as scontrol shows them, and every write; ``ssh`` calls are recorded with their stdin."""

    def __init__(self) -> None:
        self.nodes = {n: {"state": "IDLE", "flags": ["CLOUD", "POWERED_DOWN"], "reason": ""} for n in NODES}
        self.nodes["gpu1"] = {"state": "IDLE", "flags": [], "reason": ""}
        self.writes: list[list[str]] = []
        self.ssh: list[tuple[list[str], str]] = []
        self.fail_show = ""
        self.ping = "Slurmctld(primary) at ctl is UP\n"
        self.ssh_answer: dict[str, tuple[int, str, str]] = {}  # address -> what the join answers

    def __call__(self, argv: list[str], timeout: float, stdin: str | None) -> tuple[int, str, str]:
        argv = list(argv)
        if argv[0] == "ssh":
            self.ssh.append((argv, stdin or ""))
            return self.ssh_answer.get(argv[-2].split("@")[-1], (0, "", ""))
        if argv[1:] == ["ping"]:
            return (0 if "is UP" in self.ping else 1), self.ping, ""
        if argv[1:3] == ["show", "node"]:
            if self.fail_show:
                return 1, "", self.fail_show
            out = []
            for name, n in self.nodes.items():
                out.append(
                    f"NodeName={name} Arch=x86_64\n   State={'+'.join([n['state'], *n['flags']])} ThreadsPerCore=1"
                )
                if n["reason"]:
                    out.append(f"   Reason={n['reason']} [slurm@2026-12-06T10:00:00]")
            return 0, "\n".join(out) + "\n", ""
        self.writes.append(argv)
        kv = dict(a.split("=", 1) for a in argv[2:] if "=" in a)
        node = self.nodes[kv["NodeName"]]
        if kv.get("State") == "DRAIN":
            node.update(flags=[*node["flags"], "DRAIN"], reason=kv["Reason"])
        elif kv.get("State") == "DOWN":
            node.update(state="DOWN", flags=["CLOUD"], reason=kv["Reason"])
        elif kv.get("State") == "POWER_DOWN_FORCE":  # back to IDLE: Slurm 24.11 clears a drain here
            node.update(state="IDLE", flags=["CLOUD", "POWERED_DOWN"], reason=kv["Reason"])
        return 0, "", ""

    def powering_up(self, *names: str) -> None:
        for n in names:
            self.nodes[n].update(state="ALLOCATED", flags=["CLOUD", "POWERING_UP"])


@pytest.fixture
def lab(tmp_path: Path) -> Any:
    tenancy = Tenancy(generate(seed=7, hosts=1, compartments=1, regions=1))
    creds = write_oci_config(tmp_path / "oci", tenancy.id, tenancy.home_region)
    em = Emulator(tenancy, {creds.key_id: creds.public_pem}, launch_delay_s=0.02, terminate_delay_s=0.02)
    endpoint = em.start()[tenancy.home_region]
    region = tenancy.regions[tenancy.home_region]
    comp = region.instances[0]["compartmentId"]
    (tmp_path / "id_ed25519.pub").write_text("ssh-ed25519 AAAAC3lab root@ctl\n")
    (tmp_path / "munge.key").write_bytes(MUNGE)
    spool = tmp_path / "spool"
    spool.mkdir()
    cfg_file = tmp_path / "settings.json"
    cfg_file.write_text(
        json.dumps(
            {
                "cluster": "lab",
                "controllers": ["ctl"],
                "controller_name": "ctl",
                "oci": {
                    "config_file": str(creds.config_file),
                    "config_profile": creds.profile,
                    "service_endpoint": endpoint,
                },
                "nodesets": {
                    "eh": {
                        "nodes": "eh-[1-2]",
                        "shape": SHAPE,
                        "compartment_id": comp,
                        "availability_domain": region.ads[0],
                        "subnet_id": region.subnets[0]["id"],
                        "image_id": "ocid1.image.oc1..lab",
                    }
                },
                "spool_dir": str(spool),
                "state_file": str(tmp_path / "state" / "state.json"),
                "audit_log": str(tmp_path / "log" / "audit.jsonl"),
                "ssh_key": str(tmp_path / "id_ed25519"),
                "munge_key": str(tmp_path / "munge.key"),
                "orphan_grace_s": 60,
            }
        )
    )
    cfg = _agent.load_config(str(cfg_file))
    out = {"em": em, "cfg": cfg, "clients": _agent.make_clients(cfg), "slurm": FakeSlurm(), "region": region}
    yield out
    em.wait_idle()
    em.stop()


def one_pass(lab: dict, now: float) -> dict[str, Any]:
    out = _agent.run_pass(lab["cfg"], run=lab["slurm"], clients=lab["clients"], now=now)
    lab["em"].wait_idle()
    return out


def live(lab: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for inst in lab["region"].instances:
        if inst["id"].startswith("ocid1.instance.") and inst["lifecycleState"] not in ("TERMINATING", "TERMINATED"):
            out.setdefault(inst["displayName"], []).append(inst["id"])
    return {k: v for k, v in out.items() if k in NODES}


def launches(lab: dict) -> list[dict[str, Any]]:
    return [e for e in lab["em"].compute_log if e["event"] == "launch"]


def audit(lab: dict) -> list[dict[str, Any]]:
    path = Path(lab["cfg"]["audit_log"])
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def request(lab: dict, action: str, hostlist: str) -> None:
    assert _request.program_main(action, [hostlist], spool_dir=lab["cfg"]["spool_dir"]) == 0


def test_resume_launches_once_bootstraps_and_suspend_terminates(lab: dict) -> None:
    slurm, t = lab["slurm"], 1_000_000.0
    slurm.powering_up(*NODES)
    request(lab, "resume", "eh-[1-2]")
    request(lab, "resume", "eh-1")  # a second resume for a node already launching
    one_pass(lab, t)
    assert sorted(live(lab)) == NODES and all(len(v) == 1 for v in live(lab).values())
    inst = next(i for i in lab["region"].instances if i["displayName"] == "eh-1")
    assert inst["definedTags"]["oci-gpu"] == {"cluster": "lab", "slurm-role": "elastic"}
    assert inst["metadata"]["ssh_authorized_keys"] == "ssh-ed25519 AAAAC3lab root@ctl"
    assert inst["_vnics"][0]["hostnameLabel"] == "eh-1"
    assert not list(Path(lab["cfg"]["spool_dir"]).iterdir())  # the requests were taken in

    one_pass(lab, t + 5)  # RUNNING with an address: the bootstrap over SSH, the key on stdin only
    assert len(slurm.ssh) == 2
    argv, stdin = slurm.ssh[0]
    key_b64 = __import__("base64").b64encode(MUNGE).decode()
    assert key_b64 in stdin and key_b64 not in " ".join(argv) and "secret" not in " ".join(argv)
    assert 'SLURMD_OPTIONS="--conf-server ctl -N eh-' in stdin
    known = [a.split("=", 1)[1] for a in argv if a.startswith("UserKnownHostsFile=")]
    assert [Path(k).name for k in known] == [inst["id"]]  # trust on first use, per instance
    states = json.loads(Path(lab["cfg"]["state_file"]).read_text())["records"]
    assert {n: r["phase"] for n, r in states.items()} == {"eh-1": "up", "eh-2": "up"}
    assert all(key_b64 not in json.dumps(line) for line in audit(lab))

    request(lab, "resume", "eh-1")  # a resume for a node that has its instance: no launch
    one_pass(lab, t + 10)
    assert len(launches(lab)) == 2 and len(slurm.ssh) == 2

    for n in NODES:  # idle past SuspendTime: slurmctld powers them down and runs SuspendProgram
        slurm.nodes[n].update(state="IDLE", flags=["CLOUD", "POWERING_DOWN"])
    request(lab, "suspend", "eh-[1-2]")
    one_pass(lab, t + 600)
    assert live(lab) == {}
    one_pass(lab, t + 605)
    assert json.loads(Path(lab["cfg"]["state_file"]).read_text())["records"] == {}
    assert [a["action"] for a in audit(lab) if a["node"] == "eh-2"] == ["launch", "bootstrap", "terminate"]


def test_a_settled_pass_reads_no_addresses(lab: dict) -> None:
    """Once the nodes are up, a reconcile pass costs ListInstances: no VNIC lookups per running node."""
    slurm, t = lab["slurm"], 1_500_000.0
    slurm.powering_up(*NODES)
    request(lab, "resume", "eh-[1-2]")
    one_pass(lab, t)
    one_pass(lab, t + 5)
    for n in NODES:
        slurm.nodes[n].update(state="IDLE", flags=["CLOUD"])
    before = lab["em"].counter_snapshot()["by_op"]
    one_pass(lab, t + 10)
    after = lab["em"].counter_snapshot()["by_op"]
    spent = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}
    assert spent == {"ListInstances": 1}, spent


def test_a_capacity_error_downs_the_node_with_the_reason_and_leaves_no_instance(lab: dict) -> None:
    lab["em"].knobs.route_faults = {
        "LaunchInstance": {"status": 500, "code": "InternalError", "message": "Out of host capacity."}
    }
    lab["slurm"].powering_up("eh-1")
    request(lab, "resume", "eh-1")
    one_pass(lab, 2_000_000.0)
    node = lab["slurm"].nodes["eh-1"]
    assert node["state"] == "DOWN"
    assert node["reason"] == (
        f"oci_gpu-power: no capacity for {SHAPE} in {lab['cfg']['nodesets']['eh']['availability_domain']}: "
        "Out of host capacity."
    )
    assert live(lab) == {} and launches(lab) == []
    one_pass(lab, 2_000_010.0)  # down by the agent: no launch loop
    assert launches(lab) == [] and json.loads(Path(lab["cfg"]["state_file"]).read_text())["records"] == {}


def test_a_pass_that_cannot_read_slurm_does_nothing_and_keeps_the_requests(lab: dict) -> None:
    lab["slurm"].fail_show = "slurm_load_node error: Unable to contact slurm controller"
    request(lab, "resume", "eh-1")
    out = one_pass(lab, 3_000_000.0)
    assert out["skipped"].startswith("scontrol show node: rc 1") and launches(lab) == []
    assert len(list(Path(lab["cfg"]["spool_dir"]).iterdir())) == 1
    assert audit(lab)[-1]["result"] == "nothing done"


def test_reconcile_terminates_an_orphan_after_grace_and_powers_down_a_node_without_instance(lab: dict) -> None:
    slurm, t = lab["slurm"], 4_000_000.0
    slurm.powering_up("eh-1")
    request(lab, "resume", "eh-1")
    one_pass(lab, t)
    one_pass(lab, t + 5)
    # slurmctld lost the node (restarted, state gone): powered down, no request, the instance runs on
    slurm.nodes["eh-1"].update(state="IDLE", flags=["CLOUD", "POWERED_DOWN"])
    created = next(i for i in lab["region"].instances if i["displayName"] == "eh-1")["timeCreated"]
    assert created  # the grace counts from the instance's creation
    out = one_pass(lab, 1e12)  # long past the grace
    assert live(lab) == {}
    assert next(a for a in out["results"] if a["action"] == "terminate")["why"] == "reconcile: the node is powered down"
    # a node Slurm counts as up, with no instance and nothing under way: powered down
    slurm.nodes["eh-2"].update(state="IDLE", flags=["CLOUD"])
    one_pass(lab, 1e12 + 5)
    assert slurm.writes[-1][:4] == ["scontrol", "update", "NodeName=eh-2", "State=POWER_DOWN_FORCE"]


def test_a_node_left_powering_up_without_a_request_is_launched(lab: dict) -> None:
    """slurmctld restarted while a resume was in flight and the request never came: the node still shows
    POWERING_UP, so the pass launches it (once)."""
    lab["slurm"].powering_up("eh-2")
    one_pass(lab, 5_000_000.0)
    one_pass(lab, 5_000_001.0)
    assert list(live(lab)) == ["eh-2"] and len(launches(lab)) == 1


def test_the_programs_refuse_a_bad_hostlist(lab: dict, capsys: Any) -> None:
    assert _request.program_main("resume", ["eh-[1-"], spool_dir=lab["cfg"]["spool_dir"]) == 1
    assert "bad hostlist" in capsys.readouterr().err
    assert _request.program_main("resume", [], spool_dir=lab["cfg"]["spool_dir"]) == 2


def test_only_the_controller_in_charge_acts(lab: dict) -> None:
    """The agent runs on every controller: with the primary down the backup's agent acts, the primary's
    waits with the requests kept; with no controller answering, nothing is done (fail closed)."""
    slurm, t = lab["slurm"], 6_000_000.0
    slurm.ping = "Slurmctld(primary) at ctl is DOWN\nSlurmctld(backup) at ctl2 is UP\n"
    slurm.powering_up("eh-1")
    request(lab, "resume", "eh-1")
    out = one_pass(lab, t)
    assert out["skipped"] == "standby: ctl2 is the controller in charge, not ctl"
    assert launches(lab) == [] and len(list(Path(lab["cfg"]["spool_dir"]).iterdir())) == 1
    slurm.ping = "Slurmctld(primary) at ctl is DOWN\nSlurmctld(backup) at ctl2 is DOWN\n"
    out = one_pass(lab, t + 1)
    assert out["skipped"] == "scontrol ping: no controller is UP" and launches(lab) == []
    assert audit(lab)[-1]["result"] == "nothing done"
    slurm.ping = "Slurmctld(primary) at ctl is DOWN\nSlurmctld(backup) at ctl2 is UP\n"
    backup = {**lab["cfg"], "controller_name": "ctl2.lab.example"}  # the same state and spool, as if ctl2's
    _agent.run_pass(backup, run=slurm, clients=lab["clients"], now=t + 2)
    lab["em"].wait_idle()
    assert list(live(lab)) == ["eh-1"] and len(launches(lab)) == 1


def test_a_suspend_request_never_terminates_a_node_with_jobs(lab: dict) -> None:
    """A suspend request that waited (the agent was down or standing by) while Slurm resumed the node for
    a job: the job's node stays."""
    slurm, t = lab["slurm"], 7_000_000.0
    slurm.powering_up("eh-1")
    request(lab, "resume", "eh-1")
    one_pass(lab, t)
    one_pass(lab, t + 5)
    slurm.nodes["eh-1"].update(state="ALLOCATED", flags=["CLOUD"])
    request(lab, "suspend", "eh-1")
    out = one_pass(lab, t + 10)
    assert list(live(lab)) == ["eh-1"]
    assert "eh-1: suspend ignored: Slurm shows jobs on it (ALLOCATED)" in out["plan"]["notes"]


def test_a_gpu_node_passes_the_health_check_before_slurmd_or_is_downed_and_terminated(lab: dict) -> None:
    """Part 4 of issue 39: the join gives a GPU node the gpu_node role's health check (the program, and
    settings naming the node, the shape's GPU count and fabric) and starts slurmd only once it passes. A
    node that fails is set DOWN with the check's reason (Slurm requeues its job) and its instance is
    terminated; the agent's reason keeps the next resume off it."""
    import base64

    slurm, t = lab["slurm"], 8_000_000.0
    cfg = {
        **lab["cfg"],
        "health": {
            "program": "/usr/local/sbin/oci-gpu-health",
            "config": "/etc/oci-gpu/health.json",
            "python": "/usr/bin/python3",
            "settings": {"xid_file": "/var/log/kern.log", "mounts": ["/home"], "checks": {}, "timeout": 10},
        },
    }
    slurm.powering_up(*NODES)
    request(lab, "resume", "eh-[1-2]")
    _agent.run_pass(cfg, run=slurm, clients=lab["clients"], now=t)
    lab["em"].wait_idle()
    eh2_ip = next(i for i in lab["region"].instances if i["displayName"] == "eh-2")["_vnics"][0]["privateIp"]
    slurm.ssh_answer[eh2_ip] = (86, "gpu-health: eh-2: gpu_count: 7 of 8 GPUs\ngpu-health: eh-2: failed\n", "")
    out = _agent.run_pass(cfg, run=slurm, clients=lab["clients"], now=t + 5)
    lab["em"].wait_idle()
    joins = {argv[-2].split("@")[-1]: stdin for argv, stdin in slurm.ssh}
    stdin = next(s for ip, s in joins.items() if ip != eh2_ip)
    env = dict(ln.split("=", 1) for ln in stdin.splitlines()[:3])
    program = base64.b64decode(env["HEALTH_PROGRAM_B64"]).decode()
    settings = json.loads(base64.b64decode(env["HEALTH_CONFIG_B64"]))
    assert program.startswith("#!/usr/bin/python3\n") and "def check_all(" in program
    assert settings["node"] == "eh-1" and settings["gpu_count"] == 8 and settings["fabric"] == "fabricmanager"
    assert settings["mounts"] == ["/home"] and settings["xid_file"] == "/var/log/kern.log"
    # the check runs before slurmd starts, and a failure stops the join there
    script = stdin[stdin.index("set -eu") :]
    assert script.index("--check-only || exit 86") < script.index("systemctl restart --no-block slurmd")
    reason = "oci_gpu-power: gpu-health at join: gpu_count: 7 of 8 GPUs"
    assert slurm.writes[-1] == ["scontrol", "update", "NodeName=eh-2", "State=DOWN", f"Reason={reason}"]
    assert slurm.nodes["eh-2"]["state"] == "DOWN"
    done = {r["node"]: r for r in out["results"] if r["action"] == "bootstrap"}
    assert "gpu_count: 7 of 8 GPUs; node down, terminate ocid1.instance." in done["eh-2"]["detail"]
    assert "after the GPU health check passed" in done["eh-1"]["detail"]
    assert list(live(lab)) == ["eh-1"]
    # the next passes neither relaunch it nor bootstrap anything again
    _agent.run_pass(cfg, run=slurm, clients=lab["clients"], now=t + 10)
    _agent.run_pass(cfg, run=slurm, clients=lab["clients"], now=t + 15)
    lab["em"].wait_idle()
    assert list(live(lab)) == ["eh-1"] and len(launches(lab)) == 2 and len(slurm.ssh) == 2
    assert "eh-2" not in json.loads(Path(lab["cfg"]["state_file"]).read_text())["records"]


def test_node_files_are_written_before_slurmd_and_bad_ones_refused(lab: dict, tmp_path: Path) -> None:
    """The join writes the slurm role's job map scripts (slurm.conf's Prolog/Epilog globs fail every job on a
    node where they match nothing); the shell lines run for real here."""
    target = tmp_path / "etc" / "slurm" / "prolog.d" / "oci-gpu-job-map.sh"
    cfg = dict(lab["cfg"], node_files=[{"path": str(target), "mode": "0755", "content": "#!/bin/sh\necho 'it's'\n"}])
    lines = _agent.node_files_script(cfg)
    assert subprocess.run(["sh", "-ec", lines], check=False).returncode == 0
    assert target.read_text() == "#!/bin/sh\necho 'it's'\n" and oct(target.stat().st_mode & 0o777) == "0o755"
    script = _agent.BOOTSTRAP.replace("@NODE_FILES@", lines)
    assert script.index(str(target)) < script.index("SLURMD_OPTIONS")
    for bad, message in (
        ({"path": "etc/x", "mode": "0755"}, "an absolute path"),
        ({"path": "/etc/slurm/../x", "mode": "0755"}, "an absolute path"),
        ({"path": "/etc/x; rm -rf /", "mode": "0755"}, "an absolute path"),
        ({"path": "/etc/x", "mode": "u+x"}, "not an octal mode"),
    ):
        with pytest.raises(_agent.AgentError, match=message):
            _agent.node_files_script(dict(lab["cfg"], node_files=[bad]))
    assert _agent.node_files_script(lab["cfg"]) == ""
