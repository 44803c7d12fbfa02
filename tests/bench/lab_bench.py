# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make bench-lab` (needs podman): the demo's cluster, first converge and idempotent rerun, beside facts.

Brings up the demo's lab under its own name (``benchlab``: 1 controller+dbd, 2 GPU nodes, 1 login
node, 1 NFS node) with the OCI API emulator and the dynamic inventory, exactly as ``make demo``
does, and times in one run, on the same hosts:

- a facts-only play (``gather_subset: [min]``, what ``playbooks/slurm.yml`` gathers);
- the first run of ``oci_gpu.cluster.slurm``;
- the idempotent rerun.

Prints one JSON line per figure and a summary line with the ratios
(``{"bench":"lab_summary","rerun_over_facts":…,"first_over_facts":…}``), then removes the lab
(``BENCH_LAB_KEEP=1`` keeps it; ``DEMO_LAB=demo`` makes it ``make demo``'s own, removed by
``make demo-down``). Tasks per host come from the recap (ok + skipped + failed).

With ``BENCH_LAB_BASE=<git rev>`` (the Makefile sets the previous release) it then does the same
on a fresh lab with that revision of the collection (a git worktree), and prints
``{"bench":"lab_vs_base",...}``: both measured in one run, on the same machine and connection.
Targets (issue "fast converge"): rerun_over_facts <= 6, first_seconds <= 180.
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

# The targets of the "fast converge" issue, on the demo's 4 Slurm nodes.
RERUN_OVER_FACTS_TARGET = 6
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
        "run": name,
        "seconds": round(seconds, 1),
        "changed": _changed(recap),
        "tasks_per_host": per_host,
        "max_tasks_per_host": max(per_host.values()) if per_host else 0,
    }
    print(json.dumps(line), flush=True)
    return line


def measure(label: str) -> dict:
    """One fresh lab: facts-only play, first converge, idempotent rerun; the lab is removed after."""
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
        rerun = _line(label, "idempotent_rerun", *demo.playbook(inventory, "oci_gpu.cluster.slurm", "slurm-rerun.log"))
    finally:
        if os.environ.get("BENCH_LAB_KEEP") != "1":
            demo.cmd_down(None)
    return {
        "collection": label,
        "hosts": len(facts["tasks_per_host"]),
        "facts_seconds": facts["seconds"],
        "first_seconds": first["seconds"],
        "rerun_seconds": rerun["seconds"],
        "rerun_changed": rerun["changed"],
        "rerun_over_facts": round(rerun["seconds"] / facts["seconds"], 1),
        "first_over_facts": round(first["seconds"] / facts["seconds"], 1),
        "rerun_max_tasks_per_host": rerun["max_tasks_per_host"],
        "rerun_target_met": rerun["seconds"] <= RERUN_OVER_FACTS_TARGET * facts["seconds"],
        "first_target_met": first["seconds"] <= FIRST_SECONDS_TARGET,
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


def main() -> int:
    started = time.monotonic()
    base = os.environ.get("BENCH_LAB_BASE", "")
    results = [measure("current")]
    if base:
        # The same lab (SSH, same nodes) run by the earlier collection: the ratio comes from one run.
        with base_collection(base) as path:
            os.environ["DEMO_COLLECTIONS_PATH"] = str(path)
            try:
                results.append(measure(f"base {base}"))
            finally:
                del os.environ["DEMO_COLLECTIONS_PATH"]
    for summary in results:
        summary["wall_seconds"] = round(time.monotonic() - started, 1)
        print(json.dumps({"bench": "lab_summary", **summary}), flush=True)
    if len(results) == 2:
        cur, old = results
        print(
            json.dumps(
                {
                    "bench": "lab_vs_base",
                    "base": base,
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
