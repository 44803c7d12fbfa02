# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make demo` / `make demo-down`: the main job, end to end, on the built-in lab.

up:   the lab (1 controller+dbd, 1 login node, 1 NFS server standing in for OCI File Storage) →
      the lab cloud (the OCI API emulator serving that lab as a tenancy, whose LaunchInstance makes
      lab nodes) → the dynamic inventory (oci_gpu.cluster.oci) → playbooks/capacity.yml launches the
      2 GPU nodes (8 GPUs each) through the OCI API, as on a tenancy → playbooks/slurm.yml (inputs,
      shared storage by file system OCID, the gpu_node role on the GPU nodes, munge, Slurm with
      accounting and the GPU health check; a line per play as it starts) → the lab user →
      playbooks/validate.yml → each GPU node's readiness (tests/demo/readiness.yml) →
      playbooks/repair.yml (the self-repair agent's timer on the controller, and a dry-run pass) →
      playbooks/elastic.yml (two elastic GPU nodes, powered down) and a job that powers one up →
      playbooks/monitoring.yml (Prometheus and Alertmanager on the controller, their addresses) →
      a summary. A second run reuses all of it and shows changed=0.
down: stops the lab cloud and removes the lab (the launched nodes with it).

Everything the demo starts is recorded under the lab's state directory and ended by its id.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "build" / "collections"))

sys.path.insert(0, str(REPO / "tests" / "lab"))

import cloud  # noqa: E402

STATE_DIR = Path(os.environ.get("OCI_GPU_LAB_STATE_DIR", "/var/lib/oci-gpu-lab"))
LAB = os.environ.get("DEMO_LAB", "demo")
IMAGE = os.environ.get("DEMO_IMAGE", "trixie")
# The plain lab nodes; the GPU nodes are launched through the OCI API (playbooks/capacity.yml).
NODES = "ctl:VM.Standard.E5.Flex,login1:VM.Standard.E5.Flex,nfs:VM.Standard.E5.Flex"
ROLES = "ctl=controller+dbd,login1=login,nfs=nfs"
# DEMO_GPU_NODES sets how many (make bench-lab measures 2 and 15: 4 and 17 Slurm hosts).
GPU_NODES = tuple(f"gpu{i}" for i in range(1, int(os.environ.get("DEMO_GPU_NODES", "2")) + 1))
GPU_SHAPE = "BM.GPU.H100.8"
# What a site's image would do at first boot; here it leaves a mark the demo shows.
USER_DATA = "#cloud-config\nruncmd:\n  - [sh, -c, 'echo \"first boot by cloud-init: $(hostname)\" > /etc/motd']\n"
LAB_CLI = REPO / "tests" / "lab" / "lab"
ELASTIC_SET = "eh"  # elastic nodes eh-1, eh-2
VALIDATE_USER = "alice"  # inventories/lab/group_vars/all/lab.yml


def lab_dir() -> Path:
    return STATE_DIR / "labs" / LAB


def demo_dir() -> Path:
    # Beside the lab's state, not inside it: 'lab down' removes its own directory.
    return STATE_DIR / "demo" / LAB


def say(msg: str) -> None:
    print(f"demo: {msg}", flush=True)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.update(
        # bench-lab points this at an older checkout of the collection (DEMO_COLLECTIONS_PATH).
        ANSIBLE_COLLECTIONS_PATH=os.environ.get("DEMO_COLLECTIONS_PATH") or str(REPO / "build" / "collections"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="true",
        ANSIBLE_INJECT_FACT_VARS="false",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_NOCOLOR="1",
        PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "build" / "collections")]),
    )
    return e


def read_lab() -> dict[str, Any] | None:
    path = lab_dir() / "lab.json"
    return json.loads(path.read_text()) if path.is_file() else None


def ensure_lab() -> dict[str, Any]:
    lab = read_lab()
    if lab is None:
        say(f"starting the lab {LAB!r} ({IMAGE}): {NODES}")
        subprocess.run(
            [str(LAB_CLI), "up", "--name", LAB, "--image", IMAGE, "--nodes", NODES, "--roles", ROLES], check=True
        )
        lab = read_lab()
        assert lab is not None
    else:
        say(f"the lab {LAB!r} is up already ({len(lab['nodes'])} nodes): reusing it")
    return lab


def ensure_cloud(lab: dict[str, Any]) -> dict[str, Any]:
    """The lab cloud (tests/lab/cloud.py): the OCI API over this lab; LaunchInstance makes lab nodes."""
    running = cloud.cloud_info(LAB)
    info = cloud.start(LAB)
    verb = "is running" if running else "started"
    say(f"the lab cloud {verb} (pid {info['pid']}): OCI API for tenancy {info['tenancy']} at {info['endpoints']}")
    return info


def launch_gpu_nodes(inventory: Path, info: dict[str, Any]) -> tuple[float, list[str]]:
    """playbooks/capacity.yml launches the GPU nodes through the OCI API (launch only: slurm.yml runs next)."""
    region = info["region"]
    extra = {
        "capacity_add": list(GPU_NODES),
        "capacity_slurm": False,
        "capacity_shape": GPU_SHAPE,
        "capacity_compartment_id": info["compartment_id"],
        "capacity_availability_domain": info["availability_domain"],
        "capacity_subnet_id": info["subnet_id"],
        "capacity_image_id": "ocid1.image.oc1..oci-gpu-lab-debian",
        "capacity_cluster": LAB,
        "capacity_config_file": info["config_file"],
        "capacity_service_endpoint": info["endpoints"][region],
        "capacity_user_data": USER_DATA,
        "capacity_poll_interval": 1,
    }
    path = demo_dir() / "capacity-vars.json"
    path.write_text(json.dumps(extra, indent=1))
    # always this checkout's collection: the capacity playbook is what makes the nodes
    return playbook(inventory, "oci_gpu.cluster.capacity", "capacity.log", "-e", f"@{path}", current=True)


def write_inventory(lab: dict[str, Any], emu: dict[str, Any]) -> Path:
    """A real `*.oci_gpu.yml` pointed at the lab cloud, and the group_vars a site would write: SSH to
    each node's private IP (the inventory's ansible_host) as opc with become, pipelining. The one
    lab-specific line is which key and known_hosts SSH uses (the lab's own ssh_config)."""
    inv = demo_dir() / "inventory"
    (inv / "group_vars" / "all").mkdir(parents=True, exist_ok=True)
    region = next(iter(emu["endpoints"]))
    (inv / "demo.oci_gpu.yml").write_text(
        "# Written by `make demo`: the dynamic inventory, pointed at the lab cloud's OCI API.\n"
        "plugin: oci_gpu.cluster.oci\n"
        f"config_file: {emu['config_file']}\n"
        f"service_endpoint: {json.dumps(emu['endpoints'])}\n"
        f"regions: [{region}]\n"
        "# Slurm roles come from the defined tag oci-gpu.slurm-role of the hosts in this cluster\n"
        f"cluster: {LAB}\n"
        "compose:\n"
        "  ansible_python_interpreter: \"'/usr/bin/python3'\"\n"
    )
    (inv / "group_vars" / "all" / "connection.yml").write_text(
        "---\n# Written by `make demo`: how a site reaches OCI nodes (ansible_host is the private IP).\n"
        "ansible_user: opc\n"
        "ansible_become: true\n"
        "ansible_pipelining: true\n"
        "# The lab's own key and known_hosts: the one difference from a real tenancy.\n"
        f"ansible_ssh_common_args: -F {lab_dir() / 'ssh_config'}\n"
    )
    # gpu_node.yml: where the lab's GPU stand-ins sit (RDMA NIC names, the Xid log); monitoring.yml: the DCGM
    # exporter stand-in is already on the GPU nodes
    for name in ("slurm.yml", "lab.yml", "gpu_node.yml", "monitoring.yml"):
        link = inv / "group_vars" / "all" / name
        if not link.is_symlink():
            link.symlink_to(REPO / "inventories" / "lab" / "group_vars" / "all" / name)
    # the GPU nodes run the gpu_node role (checks, nccl.conf, the health program) and every slurmd
    # runs its health check, as a site with GPU nodes would set it
    (inv / "group_vars" / "slurm_compute.yml").write_text(
        "---\n# Written by `make demo`: GPU node checks, nccl.conf and the health program before slurmd.\n"
        "gpu_node_enabled: true\n"
    )
    (inv / "group_vars" / "all" / "health.yml").write_text(
        "---\n# Written by `make demo`: slurm.conf is the same on every host; slurmd runs the check.\n"
        "slurm_health_check_program: /usr/local/sbin/oci-gpu-health\n"
    )
    # two elastic GPU nodes, powered down until a job needs them (docs/elastic.md); sorts after slurm.yml,
    # so its partitions are the ones used
    elastic: dict[str, Any] = {
        "slurm_elastic_nodesets": [cloud.elastic_nodeset(emu, ELASTIC_SET, 2, GPU_SHAPE)],
        "slurm_power_saving": {"suspend_time": 300, "resume_timeout": 240},
        "slurm_partitions": [
            {"name": "gpu", "nodes": "ALL", "default": True, "max_time": "1:00:00"},
            {"name": "elastic", "nodes": f"{ELASTIC_SET}-[1-2]", "max_time": "1:00:00"},
        ],
    }
    (inv / "group_vars" / "all" / "slurm_elastic.yml").write_text(
        "---\n# Written by `make demo`: elastic capacity, launched through the OCI API when a job needs it.\n"
        + json.dumps(elastic, indent=2)
        + "\n"
    )
    tenancy = json.loads((cloud.cloud_dir(LAB) / "tenancy.json").read_text())
    fs = {f["displayName"]: f["id"] for f in tenancy["regions"][region]["fileSystems"]}
    storage = {
        "fss_mount_oci_api": {"config_file": emu["config_file"], "service_endpoint": emu["endpoints"][region]},
        "fss_mount_mounts": [
            {"path": "/home", "file_system_id": fs["home"]},
            {"path": "/opt/apps", "file_system_id": fs["apps"], "owner": "root", "group": "root", "mode": "0755"},
        ],
    }
    (inv / "group_vars" / "all" / "storage.yml").write_text(
        "---\n# Written by `make demo`: shared storage by File Storage OCID, resolved through the OCI API.\n"
        + json.dumps(storage, indent=2)
        + "\n"
    )
    return inv / "demo.oci_gpu.yml"


RECAP_RE = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")


def playbook(
    inventory: Path, target: str, log_name: str, *extra: str, current: bool = False, progress: bool = False
) -> tuple[float, list[str]]:
    """Run one playbook, its output to a log; return (seconds, recap lines). Fails loudly.
    ``current``: with this checkout's collection even where DEMO_COLLECTIONS_PATH names another.
    ``progress``: print a line as each play starts (its name and the seconds so far)."""
    log_path = demo_dir() / log_name
    start = time.monotonic()
    run_env = env()
    if current:
        run_env["ANSIBLE_COLLECTIONS_PATH"] = str(REPO / "build" / "collections")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            ["ansible-playbook", "-i", str(inventory), target, *extra],
            cwd=REPO,
            env=run_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if progress and line.startswith("PLAY [") and not line.startswith("PLAY RECAP"):
                play = line[len("PLAY [") :].split("] ", 1)[0].rstrip("]*")
                print(f"  {time.monotonic() - start:4.0f} s  {play}", flush=True)
        returncode = proc.wait()
    seconds = time.monotonic() - start
    text = log_path.read_text()
    recap = [ln for ln in text.split("PLAY RECAP")[-1].splitlines()[1:] if RECAP_RE.match(ln.strip())]
    if returncode != 0:
        print(text[-6000:])
        raise SystemExit(f"demo: {target} failed (exit {returncode}); full log: {log_path}")
    return seconds, [" ".join(ln.split()) for ln in recap]


def repair_vars(emu: dict[str, Any]) -> Path:
    """The repair agent's settings for this lab: the lab cloud's OCI API with its API key (instance
    principal on OCI), acceptance by the GPU health check (the default) on all 8 GPUs, the SDK
    wheels carried from this machine."""
    settings = {
        **cloud.repair_settings(emu, LAB),
        "repair_acceptance_gpus": 8,
    }
    path = demo_dir() / "repair-vars.json"
    path.write_text(json.dumps(settings, indent=1))
    return path


def elastic_vars(emu: dict[str, Any]) -> Path:
    """The elastic agent's settings for this lab: the lab cloud's OCI API, a pass every 2 s, and slurmd -b
    (a container reports the host's boot time, docs/lab.md)."""
    settings = {**cloud.elastic_settings(emu, LAB), "elastic_interval_s": 2, "elastic_slurmd_options": "-b"}
    path = demo_dir() / "elastic-vars.json"
    path.write_text(json.dumps(settings, indent=1))
    return path


def power_up_job(ctl: str, timeout: float = 240) -> str:
    """Submit a job to the elastic partition; the line that says how long it took to run there."""

    def run(*cmd: str) -> str:
        return subprocess.run(["podman", "exec", ctl, *cmd], capture_output=True, text=True, check=False).stdout.strip()

    # a node still up from an earlier run (SuspendTime not yet past) takes the job without powering up
    awake = [
        ln.split()[0]
        for ln in run("sinfo", "-h", "-N", "-p", "elastic", "-o", "%N %T").splitlines()
        if ln.split()[-1] in ("idle", "mixed", "allocated")
    ]
    t0 = time.monotonic()
    job = run("sbatch", "--parsable", "-p", "elastic", "-N1", "--chdir=/tmp", "--wrap", "hostname; sleep 5")
    if not job.isdigit():
        return f"elastic: sbatch failed: {job!r}"
    state, node = "", ""
    while time.monotonic() - t0 < timeout:
        state, _sep, node = run("squeue", "-h", "-j", job, "-o", "%T %N").partition(" ")
        if state in ("RUNNING", "COMPLETING", ""):
            break
        time.sleep(1)
    if state not in ("RUNNING", "COMPLETING", ""):
        return f"elastic: job {job} still {state} after {timeout:.0f} s"
    took = time.monotonic() - t0
    if node in awake:
        return f"elastic: job {job} ran on {node} (still up from an earlier job) {took:.0f} s after sbatch"
    return f"elastic: job {job} powered {node or 'its node'} up and ran {took:.0f} s after sbatch"


def monitoring_summary(ctl: str, timeout: float = 60) -> str:
    """Prometheus's targets (up of all, waiting up to ``timeout`` for the first scrapes) and its firing alerts."""
    query = (
        "import json, urllib.request as u\n"
        "t = json.load(u.urlopen('http://127.0.0.1:9090/api/v1/targets'))['data']['activeTargets']\n"
        "a = json.load(u.urlopen('http://127.0.0.1:9090/api/v1/alerts'))['data']['alerts']\n"
        "print(sum(x['health'] == 'up' for x in t), len(t), ','.join(sorted({x['labels']['alertname'] for x in a "
        "if x['state'] == 'firing'})) or 'none')\n"
    )
    end = time.monotonic() + timeout
    words: list[str] = []
    while time.monotonic() < end:
        out = subprocess.run(
            ["podman", "exec", ctl, "python3", "-c", query], capture_output=True, text=True, check=False
        )
        words = out.stdout.split()
        if len(words) == 3 and words[1] != "0" and words[0] == words[1]:
            break
        time.sleep(2)
    if len(words) != 3:
        return "Prometheus does not answer"
    return f"Prometheus: {words[0]} of {words[1]} targets up; alerts firing: {words[2]}"


def summary_from(log_path: Path) -> list[str]:
    """The msg lines of validate.yml's last debug task ('Summarise the validation')."""
    text = log_path.read_text()
    part = text.rsplit("Summarise the validation", 1)[-1]
    m = re.search(r'"msg": \[(.*?)\n\s*\]', part, re.S)
    if not m:
        return []
    return [json.loads(x.strip().rstrip(",")) for x in m.group(1).strip().splitlines() if x.strip()]


def _text(value: Any) -> str:
    """A hostvar from ``ansible-inventory --list`` (ansible-core 2.19 wraps untrusted strings)."""
    if isinstance(value, dict) and "__ansible_unsafe" in value:
        value = value["__ansible_unsafe"]
    return "" if value is None else str(value)


def inventory_table(listing: dict[str, Any]) -> list[str]:
    """``ansible-inventory --list`` as one row per host: its address, shape and groups (the Slurm ones
    first), so each host shows once with every group it is in; groups every host is in come once,
    above the table."""
    hostvars = listing.get("_meta", {}).get("hostvars", {})
    groups: dict[str, list[str]] = {h: [] for h in hostvars}
    for group, body in listing.items():
        if group in ("_meta", "all", "ungrouped") or not isinstance(body, dict):
            continue
        for host in body.get("hosts", []):
            groups.setdefault(host, []).append(group)
    shared = set.intersection(*(set(g) for g in groups.values())) if len(groups) > 1 else set()
    rows = [("host", "address", "shape", "groups")]
    for host in sorted(groups):
        hv = hostvars.get(host, {})
        names = sorted(set(groups[host]) - shared, key=lambda g: (not g.startswith("slurm_"), g))
        rows.append((host, _text(hv.get("ansible_host")), _text(hv.get("oci_shape")), ", ".join(names)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    out = [f"every host is in: {', '.join(sorted(shared))}"] if shared else []
    return out + [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}" for r in rows]


def cmd_up(_args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    lab = ensure_lab()
    s_lab = time.monotonic() - t0
    say(f"lab: {s_lab:.0f} s")
    emu = ensure_cloud(lab)
    inventory = write_inventory(lab, emu)
    say(f"launching the GPU nodes {', '.join(GPU_NODES)} ({GPU_SHAPE}) through the OCI API: playbooks/capacity.yml ...")
    s_cap, cap_recap = launch_gpu_nodes(inventory, emu)
    launched = RECAP_RE.match(next((r for r in cap_recap if r.startswith("localhost")), "")) if cap_recap else None
    first_boot = subprocess.run(
        ["podman", "exec", f"{LAB}-{GPU_NODES[0]}", "cat", "/etc/motd"], capture_output=True, text=True, check=False
    ).stdout.strip()
    say(
        f"capacity.yml: {s_cap:.0f} s ({'launched' if launched and int(launched.group(3)) else 'already running'});"
        f" {GPU_NODES[0]} says: {first_boot or '(no first-boot mark)'}"
    )
    t_inv = time.monotonic()
    listing = json.loads(
        subprocess.run(
            ["ansible-inventory", "-i", str(inventory), "--list"], env=env(), capture_output=True, text=True, check=True
        ).stdout
    )
    say(f"dynamic inventory {inventory} ({time.monotonic() - t_inv:.1f} s):")
    print("  " + "\n  ".join(inventory_table(listing)))
    say("running playbooks/slurm.yml (inputs → shared storage → GPU nodes → munge → Slurm) ...")
    s_site, recap = playbook(inventory, "oci_gpu.cluster.slurm", "slurm.log", progress=True)
    changed = sum(int(RECAP_RE.match(r).group(3)) for r in recap if RECAP_RE.match(r))
    say(f"slurm.yml: {s_site:.0f} s, changed={changed} in all")
    print("  " + "\n  ".join(recap))
    s_user, _recap = playbook(inventory, str(REPO / "tests" / "lab" / "lab_user.yml"), "lab_user.log")
    say("running playbooks/validate.yml ...")
    s_val, _recap = playbook(
        inventory,
        "oci_gpu.cluster.validate",
        "validate.log",
        "-v",
        "-e",
        f"validate_user={VALIDATE_USER}",
        "-e",
        f"validate_shared_path=/home/{VALIDATE_USER}",
    )
    ctl = next(n["container"] for n in lab["nodes"] if "controller" in n["roles"])
    sinfo = subprocess.run(["podman", "exec", ctl, "sinfo"], capture_output=True, text=True, check=False).stdout
    say("sinfo on the controller:")
    print("  " + "\n  ".join(sinfo.splitlines()))
    say(f"validation ({s_val:.0f} s):")
    for line in summary_from(demo_dir() / "validate.log"):
        print(f"  - {line}")
    s_ready, _recap = playbook(inventory, str(REPO / "tests" / "demo" / "readiness.yml"), "readiness.log")
    say("GPU node readiness (the gpu_node role's checks, read again; the health check in check-only mode):")
    for line in (demo_dir() / "readiness.log").read_text().splitlines():
        if '"msg": "readiness ' in line:
            print("  " + line.split('"msg": "readiness ', 1)[1].rstrip('"'))
    say("running playbooks/repair.yml (the self-repair agent and its timer on the controller) ...")
    s_rep, _recap = playbook(
        inventory, "oci_gpu.cluster.repair", "repair.log", "-e", f"@{repair_vars(emu)}", progress=True
    )
    timer = subprocess.run(
        ["podman", "exec", ctl, "systemctl", "list-timers", "--no-pager", "oci-gpu-repair.timer"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    plan = subprocess.run(
        ["podman", "exec", ctl, "/usr/local/sbin/oci-gpu-repair", "--dry-run"],
        capture_output=True,
        text=True,
        check=False,
    )
    say(f"repair.yml: {s_rep:.0f} s; the agent's timer and a dry-run pass (what it would do now):")
    print("  " + "\n  ".join([*timer.splitlines()[:2], (plan.stdout or plan.stderr).strip()]))
    say("running playbooks/elastic.yml (Slurm power saving launches and terminates OCI instances) ...")
    s_ela, _recap = playbook(inventory, "oci_gpu.cluster.elastic", "elastic.log", "-e", f"@{elastic_vars(emu)}")
    say(f"elastic.yml: {s_ela:.0f} s; a job on the elastic partition:")
    print("  " + power_up_job(ctl))
    sinfo = subprocess.run(
        ["podman", "exec", ctl, "sinfo", "-p", "elastic"], capture_output=True, text=True, check=False
    ).stdout
    print("  " + "\n  ".join(sinfo.splitlines()))
    say("running playbooks/monitoring.yml (node exporter, the Slurm exporter, Prometheus, Alertmanager) ...")
    s_mon, _recap = playbook(inventory, "oci_gpu.cluster.monitoring", "monitoring.log")
    ctl_ip = next(n["ip"] for n in lab["nodes"] if "controller" in n["roles"])
    say(f"monitoring.yml: {s_mon:.0f} s; {monitoring_summary(ctl)}")
    print(f"  Prometheus http://{ctl_ip}:9090  Alertmanager http://{ctl_ip}:9093  (from this machine)")
    say(
        f"done in {time.monotonic() - t0:.0f} s (lab {s_lab:.0f} s, GPU nodes via the OCI API {s_cap:.0f} s, "
        f"slurm.yml {s_site:.0f} s, lab user {s_user:.0f} s, validate {s_val:.0f} s, readiness {s_ready:.0f} s, "
        f"repair agent {s_rep:.0f} s, elastic {s_ela:.0f} s, monitoring {s_mon:.0f} s)."
        f" Logs: {demo_dir()}. Run again: make demo (changed=0). Tear down: make demo-down"
    )
    return 0


def cmd_down(_args: argparse.Namespace) -> int:
    pid = cloud.stop(LAB)
    if pid:
        say(f"stopped the lab cloud (pid {pid})")
    if (
        read_lab() is not None
        or subprocess.run(
            ["podman", "ps", "-a", "-q", "--filter", f"label=oci_gpu_lab={LAB}"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    ):
        subprocess.run([str(LAB_CLI), "down", "--name", LAB], check=True)
    if demo_dir().exists():
        shutil.rmtree(demo_dir())
        say(f"removed {demo_dir()}")
    say("nothing of the demo is left")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="demo", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("up").set_defaults(func=cmd_up)
    sub.add_parser("down").set_defaults(func=cmd_down)
    args = ap.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
