# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: the slurm role's whole-cluster plan and its hand-off to every host, at 100 / 500 / 2,000 / 16,000 hosts.

Run by ``make bench``; prints one JSON line per inventory size:
``{"bench":"slurm_plan","hosts":2000,"seconds":…,"role_baseline_seconds":…,"plan_seconds":…,"peak_rss_mib":…,…}``
then one summary line with the growth ratios.

Each size runs ``ansible-playbook`` on a generated inventory (local connections; every compute host
already holds the probe ``slurm_node_info`` would register, with a live slurm.conf as a converged
cluster has). The play imports the role's own ``tasks/plan.yml`` (the same task the role runs), then
one run_once task reads the plan back from the last host's hostvars, proving the hand-off. No file is
written and no per-host module runs. ``seconds`` is the whole ansible-playbook wall time. Two plays on
the same inventory are timed beside it: a facts-free empty play (``baseline_seconds``) and the same
play with the plan's tasks skipped (``role_baseline_seconds``: what ansible-core spends on any role's
tasks at this many hosts, as each task's implicit per-host steps build every host's variables with
the play's host lists - quadratic in the hosts, and no part of the plan). ``plan_seconds`` = seconds -
role_baseline_seconds. ``peak_rss_mib`` is the largest process of any run (``baseline_rss_mib``: of
the two baseline plays).
Targets: 2,000 hosts in under 30 s and 1 GiB (issue 12), 16,000 in under 30 s and 2 GiB (DESIGN.md §7),
growing linearly. ``correct`` says the play read back a plan holding every compute host.
``OCI_GPU_BENCH_SMOKE=1`` (the test command's smoke run) measures 20 and 60 hosts.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SMOKE = os.environ.get("OCI_GPU_BENCH_SMOKE") == "1"
SIZES = (20, 60) if SMOKE else (100, 500, 2000, 16000)
# hosts -> (seconds, peak RSS MiB) the plan must stay under
TARGETS = {2000: (30, 1024), 16000: (30, 2048)}
SHAPES = (("h100", 8, 2063000, 224), ("a100", 8, 2000000, 256), ("l40s", 4, 1000000, 112))


def _record(name: str, kind: int) -> dict:
    gpu, count, memory, cpus = SHAPES[kind]
    return {
        "name": name,
        "cpus": cpus,
        "sockets": 2,
        "cores_per_socket": cpus // 4,
        "threads_per_core": 2,
        "real_memory": memory,
        "gpu_type": gpu,
        "gpu_count": count,
        "gpu_files": [f"/dev/nvidia{i}" for i in range(count)],
        "features": [f"bm_gpu_{gpu}"],
    }


def _kind(index: int, total: int) -> int:
    """Hardware type of the index-th compute host: three blocks, as capacity is bought in batches."""
    return index * len(SHAPES) // total


def _live_conf(computes: list[str]) -> str:
    """A converged cluster's slurm.conf as the role writes it: one node line per hardware type."""
    lines = ["ClusterName=bench", "SlurmctldHost=ctl1", "SlurmUser=slurm", "GresTypes=gpu"]
    for kind, (gpu, count, memory, cpus) in enumerate(SHAPES):
        names = [n for i, n in enumerate(computes) if _kind(i, len(computes)) == kind]
        first, last = names[0][3:], names[-1][3:]
        lines.append(
            f"NodeName=gpu[{first}-{last}] CPUs={cpus} Sockets=2 CoresPerSocket={cpus // 4} ThreadsPerCore=2 "
            f"RealMemory={memory} Gres=gpu:{gpu}:{count} Features=bm_gpu_{gpu}"
        )
    lines.append("PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE")
    return "\n".join(lines) + "\n"


def _inventory(hosts: int) -> dict:
    computes = [f"gpu{i:05d}" for i in range(1, hosts - 1)]
    live = _live_conf(computes)
    common = {"slurm_version": "24.11.5", "nvml_plugin": False, "live_conf": live, "skipped": False}
    compute_hosts = {
        n: {"__slurm_probe": dict(common, record=_record(n, _kind(i, len(computes))))} for i, n in enumerate(computes)
    }
    return {
        "all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
            "children": {
                "slurm_controller": {"hosts": {"ctl1": {"__slurm_probe": common}}},
                "slurm_compute": {"hosts": compute_hosts},
                "slurm_login": {"hosts": {"login1": {"__slurm_probe": common}}},
            },
        }
    }


PLAY = """\
- name: Plan the whole cluster once and hand it to every host
  hosts: slurm_controller:slurm_compute:slurm_login
  gather_facts: false
  tasks:
    - name: Plan (the slurm role's own tasks/plan.yml)
      ansible.builtin.import_role:
        name: oci_gpu.cluster.slurm
        tasks_from: plan.yml
      vars:
        slurm_partitions: [{name: batch, nodes: ALL, default: true, max_time: INFINITE}]
        slurm_cgroup_config: {CgroupPlugin: cgroup/v1}
      when: {plan}

    - name: Read the plan back from the last host
      ansible.builtin.assert:
        that:
          - hostvars[ansible_play_hosts[-1]]['__slurm_cluster']['nodes']['defined'] | length == {computes}
          - hostvars[ansible_play_hosts[-1]]['__slurm_cluster']['files']['slurm.conf'] is search('NodeName=gpu')
      run_once: true
      when: {plan}
"""
PLAYBOOK = PLAY.replace("{plan}", "true")
# The same play with the plan's tasks skipped: what ansible-core spends on a role's tasks at this
# many hosts whatever they do (a role's implicit role_complete step runs per host, each building
# the host's variables with the play's host lists: quadratic in the hosts). The plan's cost is
# the difference.
ROLE_BASELINE = PLAY.replace("{plan}", "false")

BASELINE = """\
- name: The same hosts, nothing to do
  hosts: slurm_controller:slurm_compute:slurm_login
  gather_facts: false
  tasks:
    - name: One run_once no-op
      ansible.builtin.debug:
        msg: baseline
      run_once: true
"""


def _run(playbook: Path, inventory: Path) -> tuple[float, bool]:
    env = dict(os.environ)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(REPO / "build" / "collections"))
    env["ANSIBLE_COLLECTIONS_SCAN_SYS_PATH"] = "true"
    env["ANSIBLE_HOST_KEY_CHECKING"] = "false"
    env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.builtin.null"
    env["ANSIBLE_INJECT_FACT_VARS"] = "false"
    start = time.perf_counter()
    res = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        print(
            f"bench_slurm_plan: ansible-playbook failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}", file=sys.stderr
        )
    return elapsed, res.returncode == 0


def one(hosts: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-slurm-plan-") as tmp:
        inv = Path(tmp) / "inventory.json"
        inv.write_text(json.dumps(_inventory(hosts)))
        book = Path(tmp) / "plan.yml"
        book.write_text(PLAYBOOK.replace("{computes}", str(hosts - 2)))
        base = Path(tmp) / "baseline.yml"
        base.write_text(BASELINE)
        baseline = _run(base, inv)[0]
        role_base = Path(tmp) / "role-baseline.yml"
        role_base.write_text(ROLE_BASELINE.replace("{computes}", str(hosts - 2)))
        role_baseline = _run(role_base, inv)[0]
        rss_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        # the play's last task asserts the plan read back from the last host holds every compute host
        seconds, correct = _run(book, inv)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "bench": "slurm_plan",
        "hosts": hosts,
        "seconds": round(seconds, 2),
        "baseline_seconds": round(baseline, 2),
        "role_baseline_seconds": round(role_baseline, 2),
        "plan_seconds": round(seconds - role_baseline, 2),
        "peak_rss_mib": round(rss / 1024, 1),
        "baseline_rss_mib": round(rss_before / 1024, 1),
        "seconds_per_host_ms": round(1000 * seconds / hosts, 2),
        "correct": correct,
    }


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]))), flush=True)
        return
    results = []
    for hosts in SIZES:
        # A fresh process per size, so that peak RSS belongs to that size alone.
        cmd = [sys.executable, __file__, "--one", str(hosts)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        line = json.loads(out.stdout.strip().splitlines()[-1])
        results.append(line)
        print(json.dumps(line), flush=True)
    small, large = results[0], results[-1]
    growth = large["seconds"] / small["seconds"]
    by_size = {r["hosts"]: r for r in results}
    print(
        json.dumps(
            {
                "bench": "slurm_plan_summary",
                "hosts_ratio": large["hosts"] / small["hosts"],
                "seconds_ratio": round(growth, 2),
                "targets": {str(h): {"seconds": s, "rss_mib": m} for h, (s, m) in TARGETS.items()},
                "within_target": all(
                    by_size[h]["seconds"] < s and by_size[h]["peak_rss_mib"] < m
                    for h, (s, m) in TARGETS.items()
                    if h in by_size
                ),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
