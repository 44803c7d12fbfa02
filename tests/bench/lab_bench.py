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
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("DEMO_LAB", "benchlab")
sys.path.insert(0, str(REPO / "tests" / "demo"))

import demo  # noqa: E402

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


def _line(name: str, seconds: float, recap: list[str]) -> dict:
    per_host = _tasks_per_host(recap)
    line = {
        "bench": "lab",
        "run": name,
        "seconds": round(seconds, 1),
        "changed": _changed(recap),
        "tasks_per_host": per_host,
        "max_tasks_per_host": max(per_host.values()) if per_host else 0,
    }
    print(json.dumps(line), flush=True)
    return line


def main() -> int:
    started = time.monotonic()
    demo.cmd_down(None)
    try:
        lab = demo.ensure_lab()
        emu = demo.ensure_emulator(lab)
        inventory = demo.write_inventory(lab, emu)
        with tempfile.TemporaryDirectory(prefix="lab-bench-") as tmp:
            facts_play = Path(tmp) / "facts.yml"
            facts_play.write_text(FACTS_PLAY)
            demo.playbook(inventory, str(facts_play), "facts-warmup.log")  # first contact: python caches
            facts = _line("facts_only", *demo.playbook(inventory, str(facts_play), "facts.log"))
        first = _line("first_converge", *demo.playbook(inventory, "oci_gpu.cluster.slurm", "slurm-first.log"))
        rerun = _line("idempotent_rerun", *demo.playbook(inventory, "oci_gpu.cluster.slurm", "slurm-rerun.log"))
        print(
            json.dumps(
                {
                    "bench": "lab_summary",
                    "hosts": len(facts["tasks_per_host"]),
                    "facts_seconds": facts["seconds"],
                    "first_seconds": first["seconds"],
                    "rerun_seconds": rerun["seconds"],
                    "rerun_changed": rerun["changed"],
                    "rerun_over_facts": round(rerun["seconds"] / facts["seconds"], 1),
                    "first_over_facts": round(first["seconds"] / facts["seconds"], 1),
                    "rerun_max_tasks_per_host": rerun["max_tasks_per_host"],
                    "wall_seconds": round(time.monotonic() - started, 1),
                }
            ),
            flush=True,
        )
    finally:
        if os.environ.get("BENCH_LAB_KEEP") != "1":
            demo.cmd_down(None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
