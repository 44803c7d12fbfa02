# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: what one Ansible worker pays for its first lookup of a collection filter.

ansible-core's filter loader imports every file under ``plugins/filter/`` for one lookup, in each
worker process (one per task and host), so the cost is paid per task and host wherever a task
templates one of the collection's filters (docs/layout.md, "Filter files import nothing heavy").
Each run is a fresh interpreter set up as a worker is (ansible imported, the collection finder
installed); it times the lookup of ``oci_gpu.cluster.munge_key_problem`` and, for scale in the same
run, of the builtin ``ansible.builtin.to_json``. Prints one JSON line:
``{"bench":"filter_lookup","runs":…,"collection_ms":…,"builtin_ms":…,"ratio":…,"filter_files":…,
"heavy_modules":0,"correct":true}``, medians over the runs; ``correct`` is that no module_util and no
``oci`` module came with the lookup. ``OCI_GPU_BENCH_SMOKE=1`` runs 2 interpreters instead of 9.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ansible_harness import COLLECTIONS, link_collection, run_tool

SMOKE = os.environ.get("OCI_GPU_BENCH_SMOKE") == "1"
RUNS = 2 if SMOKE else 9

_WORKER = """
import json, sys, time
import ansible.template, ansible.plugins.loader
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
from ansible.plugins.loader import filter_loader
start = time.perf_counter()
filter_loader.get("ansible.builtin.to_json")
builtin = time.perf_counter() - start
before = set(sys.modules)
start = time.perf_counter()
filter_loader.get("oci_gpu.cluster.munge_key_problem")
collection = time.perf_counter() - start
loaded = set(sys.modules) - before
print(json.dumps({
    "builtin": builtin,
    "collection": collection,
    "filter_files": len([m for m in loaded if ".plugins.filter." in m]),
    "heavy": sorted(m for m in loaded if ".plugins.module_utils." in m or m == "oci" or m.startswith("oci.")),
}))
"""


def one_run() -> dict:
    res = run_tool("python", "-c", _WORKER, str(COLLECTIONS), timeout=120)
    if res.returncode != 0:
        raise SystemExit(res.stderr)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    link_collection()
    runs = [one_run() for _run in range(RUNS)]
    collection_ms = statistics.median(r["collection"] for r in runs) * 1000
    builtin_ms = statistics.median(r["builtin"] for r in runs) * 1000
    heavy = sorted({m for r in runs for m in r["heavy"]})
    line = {
        "bench": "filter_lookup",
        "runs": RUNS,
        "collection_ms": round(collection_ms, 1),
        "builtin_ms": round(builtin_ms, 1),
        "ratio": round(collection_ms / builtin_ms, 2) if builtin_ms else None,
        "filter_files": runs[0]["filter_files"],
        "heavy_modules": len(heavy),
        "correct": not heavy and runs[0]["filter_files"] >= 20,
    }
    print(json.dumps(line))
    return 0 if line["correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
