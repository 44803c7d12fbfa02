# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: hostlist compression (module_utils/slurm/_hostlist.py), which slurm.conf's node and partition
lines and every report of node names go through, on 10,000 names of four kinds: a run without holes,
random numbers with holes, racks of 16 and names with no number to share.

Run by ``make bench``; prints one JSON line per kind:
``{"bench":"hostlist_compress","names":"run","count":10000,"seconds":…,"target_s":0.5,"correct":true}``
where ``seconds`` is the best of several runs (measured about 20 ms; the target only catches an
accidental quadratic) and ``correct`` says that expanding the result gives the names back, each once.
``OCI_GPU_BENCH_SMOKE=1`` (the test command's smoke run) uses 1,000 names once.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ansible_harness import link_collection

link_collection()

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import compress, expand  # noqa: E402

SMOKE = os.environ.get("OCI_GPU_BENCH_SMOKE") == "1"
COUNT = 1000 if SMOKE else 10000
RUNS = 1 if SMOKE else 5
TARGET_S = 0.5


def workloads() -> dict[str, list[str]]:
    rng = random.Random(7)
    racks = COUNT // 16
    return {
        "run": [f"gpu{i:05d}" for i in range(COUNT)],
        "holes": [f"gpu{rng.randint(0, 10 * COUNT):05d}" for _i in range(COUNT)],
        "racks": [f"rack{r}-gpu{g:02d}" for r in range(1, racks + 1) for g in range(1, 17)],
        "no_numbers": [f"host-{rng.getrandbits(40):x}x" for _i in range(COUNT)],
    }


def main() -> int:
    ok = True
    for kind, names in workloads().items():
        best = float("inf")
        for _run in range(RUNS):
            start = time.perf_counter()
            text = compress(names)
            best = min(best, time.perf_counter() - start)
        correct = sorted(expand(text)) == sorted(set(names))
        line = {
            "bench": "hostlist_compress",
            "names": kind,
            "count": len(names),
            "seconds": round(best, 4),
            "target_s": TARGET_S,
            "correct": correct,
        }
        print(json.dumps(line))
        ok = ok and correct and best < TARGET_S
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
