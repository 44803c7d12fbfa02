# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make bench-lab` (needs podman): the demo's cluster, first converge and idempotent rerun, beside facts.

Brings up the demo's lab under its own name (``benchlab``: 1 controller+dbd, 2 GPU nodes, 1 login
node, 1 NFS node) with the OCI API emulator and the dynamic inventory, exactly as ``make demo``
does, and times in one run, on the same hosts:

- a facts-only play (``gather_subset: [min]``, what ``playbooks/slurm.yml`` gathers);
- the first run of ``oci_gpu.cluster.slurm``;
- the idempotent rerun (the fastest of ``BENCH_LAB_RERUNS``, default 3; all of them are printed too).

Prints one JSON line per figure and a summary line with the ratios
(``{"bench":"lab_summary","rerun_over_facts":…,"first_over_facts":…}``), then removes the lab
(``BENCH_LAB_KEEP=1`` keeps it; ``DEMO_LAB=demo`` makes it ``make demo``'s own, removed by
``make demo-down``). Tasks per host come from the recap (ok + skipped + failed).

It does so at each size of ``BENCH_LAB_SIZES`` (GPU nodes launched through the OCI API; default
``2,15``: 4 and 17 Slurm hosts with the controller and the login node) and prints
``{"bench":"lab_scale",...}``: how facts, first converge and rerun grow with the node count.

With ``BENCH_LAB_BASE=<git rev>`` (the Makefile sets the previous release) it then does the same
on a fresh lab with that revision of the collection (a git worktree), and prints
``{"bench":"lab_vs_base",...}``: both measured in one run, on the same machine and connection.
Targets: rerun_over_facts <= 6 at 4 hosts (issue "fast converge"), <= 3 at 17 hosts (issue "one
plan from Python to the hosts"), first_seconds <= 180 at 4 hosts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("DEMO_LAB", "benchlab")
sys.path.insert(0, str(REPO / "tests" / "demo"))

import demo  # noqa: E402

# rerun/facts by Slurm host count (the nearest count at or below a measured one applies), and the
# first converge of the demo's 4 Slurm nodes.
RERUN_OVER_FACTS_TARGETS = {4: 6, 17: 3}
FIRST_SECONDS_TARGET = 180

FACTS_PLAY = """\
- name: Gather what playbooks/slurm.yml gathers, nothing else
  hosts: slurm_controller:slurm_dbd:slurm_compute:slurm_login
  gather_facts: true
  gather_subset: [min]
  tasks: []
"""


def _tasks_per_host(recap: list[str]) -> dict[str, int]:
    out = {}
    for line in recap:
        fields = dict(kv.split("=", 1) for kv in line.split()[2:] if "=" in kv)
        out[line.split()[0]] = int(fields.get("ok", 0)) + int(fields.get("skipped", 0)) + int(fields.get("failed", 0))
    return out


def _changed(recap: list[str]) -> int:
    return sum(int(demo.RECAP_RE.match(r).group(3)) for r in recap if demo.RECAP_RE.match(r))


def _line(label: str, name: str, seconds: float, recap: list[str]) -> dict:
    per_host = _tasks_per_host(recap)
    line = {
        "bench": "lab",
        "collection": label,
        "gpu_nodes": len(demo.GPU_NODES),
        "run": name,
        "seconds": round(seconds, 1),
        "changed": _changed(recap),
        "tasks_per_host": per_host,
        "max_tasks_per_host": max(per_host.values()) if per_host else 0,
    }
    print(json.dumps(line), flush=True)
    return line


def _rerun_target(hosts: int) -> float:
    return RERUN_OVER_FACTS_TARGETS[max([n for n in RERUN_OVER_FACTS_TARGETS if n <= hosts] or [4])]


def measure(label: str, gpu_nodes: int) -> dict:
    """One fresh lab: facts-only play, first converge, idempotent rerun; the lab is removed after."""
    demo.GPU_NODES = tuple(f"gpu{i}" for i in range(1, gpu_nodes + 1))
    demo.cmd_down(None)
    try:
        lab = demo.ensure_lab()
        emu = demo.ensure_cloud(lab)
        inventory = demo.write_inventory(lab, emu)
        demo.launch_gpu_nodes(inventory, emu)  # the GPU nodes come through the OCI API, as in make demo
        with tempfile.TemporaryDirectory(prefix="lab-bench-") as tmp:
            facts_play = Path(tmp) / "facts.yml"
            facts_play.write_text(FACTS_PLAY)
            demo.playbook(inventory, str(facts_play), "facts-warmup.log")  # first contact: python caches
            # The fastest of three: the machine is shared and a single short run is noisy.
            runs = [demo.playbook(inventory, str(facts_play), f"facts-{i}.log") for i in range(3)]
            facts = _line(label, "facts_only", *min(runs, key=lambda r: r[0]))
        first = _line(label, "first_converge", *demo.playbook(inventory, "oci_gpu.cluster.slurm", "slurm-first.log"))
        # The fastest of BENCH_LAB_RERUNS (3) reruns, as for facts: a single short run is noisy here.
        reruns = [demo.playbook(inventory, "oci_gpu.cluster.slurm", f"slurm-rerun-{i}.log") for i in range(_reruns())]
        rerun = _line(label, "idempotent_rerun", *min(reruns, key=lambda r: r[0]))
        rerun["all_seconds"] = sorted(round(r[0], 1) for r in reruns)
    finally:
        if os.environ.get("BENCH_LAB_KEEP") != "1":
            demo.cmd_down(None)
    hosts = len(facts["tasks_per_host"])
    rerun_per_host = rerun["tasks_per_host"]
    return {
        "collection": label,
        "hosts": hosts,
        "facts_seconds": facts["seconds"],
        "first_seconds": first["seconds"],
        "rerun_seconds": rerun["seconds"],
        "rerun_all_seconds": rerun["all_seconds"],
        "rerun_changed": rerun["changed"],
        "rerun_over_facts": round(rerun["seconds"] / facts["seconds"], 1),
        "first_over_facts": round(first["seconds"] / facts["seconds"], 1),
        "first_max_tasks_per_host": first["max_tasks_per_host"],
        "rerun_max_tasks_per_host": rerun["max_tasks_per_host"],
        "rerun_mean_tasks_per_host": round(sum(rerun_per_host.values()) / max(1, len(rerun_per_host)), 1),
        "rerun_target": _rerun_target(hosts),
        "rerun_target_met": rerun["seconds"] <= _rerun_target(hosts) * facts["seconds"],
        "first_target_met": first["seconds"] <= FIRST_SECONDS_TARGET if hosts <= 4 else None,
    }


@contextlib.contextmanager
def base_collection(rev: str):
    """A git worktree of ``rev`` laid out as ansible_collections/oci_gpu/cluster; removed after."""
    tmp = Path(tempfile.mkdtemp(prefix="lab-bench-base-"))
    tree = tmp / "ansible_collections" / "oci_gpu" / "cluster"
    tree.parent.mkdir(parents=True)
    git = ["git", "-C", str(REPO), "worktree"]
    subprocess.run([*git, "add", "--detach", str(tree), rev], check=True, capture_output=True)
    try:
        yield tmp
    finally:
        subprocess.run([*git, "remove", "--force", str(tree)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def _reruns() -> int:
    return max(1, int(os.environ.get("BENCH_LAB_RERUNS", "3")))


def _sizes() -> list[int]:
    return [int(x) for x in os.environ.get("BENCH_LAB_SIZES", "2,15").split(",") if x.strip()]


def main() -> int:
    started = time.monotonic()
    base = os.environ.get("BENCH_LAB_BASE", "")
    results = [measure("current", n) for n in _sizes()]
    if base:
        # The same lab (SSH, same nodes) run by the earlier collection: the ratio comes from one run.
        with base_collection(base) as path:
            os.environ["DEMO_COLLECTIONS_PATH"] = str(path)
            try:
                results.extend(measure(f"base {base}", n) for n in _sizes())
            finally:
                del os.environ["DEMO_COLLECTIONS_PATH"]
    for summary in results:
        summary["wall_seconds"] = round(time.monotonic() - started, 1)
        print(json.dumps({"bench": "lab_summary", **summary}), flush=True)
    current = [r for r in results if r["collection"] == "current"]
    if len(current) > 1:
        small, big = current[0], current[-1]
        print(
            json.dumps(
                {
                    "bench": "lab_scale",
                    "hosts": [small["hosts"], big["hosts"]],
                    "facts_growth": round(big["facts_seconds"] / small["facts_seconds"], 2),
                    "first_growth": round(big["first_seconds"] / small["first_seconds"], 2),
                    "rerun_growth": round(big["rerun_seconds"] / small["rerun_seconds"], 2),
                    "rerun_over_facts": [small["rerun_over_facts"], big["rerun_over_facts"]],
                    "rerun_mean_tasks_per_host": [small["rerun_mean_tasks_per_host"], big["rerun_mean_tasks_per_host"]],
                    "rerun_target_met": all(r["rerun_target_met"] for r in current),
                }
            ),
            flush=True,
        )
    for cur in current:
        old = next((r for r in results if r["collection"] != "current" and r["hosts"] == cur["hosts"]), None)
        if old is None:
            continue
        print(
            json.dumps(
                {
                    "bench": "lab_vs_base",
                    "base": base,
                    "hosts": cur["hosts"],
                    "rerun_speedup": round(old["rerun_seconds"] / cur["rerun_seconds"], 2),
                    "first_speedup": round(old["first_seconds"] / cur["first_seconds"], 2),
                    "rerun_tasks_per_host": [cur["rerun_max_tasks_per_host"], old["rerun_max_tasks_per_host"]],
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
