# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: render slurm.conf + gres.conf for 10,000 GPU nodes of 6 OCI shapes.

Run by ``make bench``; prints exactly one JSON line:
``{"bench":"slurm_config","nodes":10000,"seconds":…,"slurm_conf_lines":…,"node_partition_lines":…,
"gres_conf_lines":…,"correct":…}`` where ``seconds`` is the best of several full validate+render runs
and ``correct`` says the NodeName lines cover exactly the generated nodes. ``OCI_GPU_BENCH_SMOKE=1``
(the test command's smoke run) renders 300 nodes once. Targets (issue 2): under 1 second,
and under 100 lines for the node and partition section. Node figures come from the collection's
shape table; names have gaps (terminated instances) and arrive shuffled, as an inventory delivers them.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ansible_harness import link_collection

link_collection()

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu._shapes import SHAPES  # noqa: E402
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import render_slurm_config  # noqa: E402
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import expand  # noqa: E402

SMOKE = os.environ.get("OCI_GPU_BENCH_SMOKE") == "1"
NODES = 300 if SMOKE else 10_000
RUNS = 1 if SMOKE else 5
# shape -> (host name prefix, share of every 10,000 nodes)
MIX = {
    shape: (prefix, share * NODES // 10_000)
    for shape, (prefix, share) in {
        "BM.GPU.H100.8": ("h100-", 3000),
        "BM.GPU.H200.8": ("h200-", 2000),
        "BM.GPU.B200.8": ("b200-", 1500),
        "BM.GPU.A100-v2.8": ("a100-", 1500),
        "BM.GPU.L40S.4": ("l40s-", 1000),
        "BM.GPU.A10.4": ("a10-", 1000),
    }.items()
}


def build_spec(seed: int = 2) -> dict[str, Any]:
    rng = random.Random(seed)
    nodes = []
    partitions = []
    for shape, (prefix, count) in MIX.items():
        s = SHAPES[shape]
        # 5% of the index space left unused: instances terminated or never launched
        indices = sorted(rng.sample(range(1, int(count * 1.05) + 1), count))
        names = [f"{prefix}{i:05d}" for i in indices]
        for name in names:
            nodes.append(
                {
                    "name": name,
                    "sockets": s.sockets,
                    "cores_per_socket": s.cores_per_socket,
                    "threads_per_core": s.threads_per_core,
                    # leave 3% of RAM to the OS, as sites do
                    "real_memory": int(s.memory_gb * 1024 * 0.97),
                    "gpu_type": s.gpu_model,
                    "gpu_count": s.gpu_count,
                    "features": [s.gpu_model, shape.lower().replace(".", "_")],
                    "weight": 100 if s.gpu_count == 8 else 10,
                    "options": {"TmpDisk": (s.nvme_count or 0) * (s.nvme_size_gb or 0) * 1000},
                }
            )
        partitions.append({"name": s.gpu_model + "_" + prefix.strip("-"), "nodes": names})
    rng.shuffle(nodes)
    everything = [n["name"] for n in nodes]
    partitions += [
        {"name": "gpu", "nodes": ["ALL"], "default": True, "max_time": "7-00:00:00"},
        {"name": "debug", "nodes": everything[:64], "max_time": 60, "options": {"PriorityTier": 10}},
        {"name": "large", "nodes": everything[: NODES // 2], "options": {"MinNodes": 16, "OverSubscribe": "EXCLUSIVE"}},
    ]
    return {
        "cluster_name": "bench",
        "controllers": ["ctl-1", {"name": "ctl-2", "address": "10.0.0.3"}],
        "nodes": nodes,
        "partitions": partitions,
        "accounting": {"host": "dbd-1"},
        "config": {"SlurmctldParameters": "enable_configless"},
    }


def main() -> int:
    spec = build_spec()
    assert len(spec["nodes"]) == NODES
    best = float("inf")
    out: dict[str, str] = {}
    for _run in range(RUNS):
        start = time.perf_counter()
        out = render_slurm_config(spec)
        best = min(best, time.perf_counter() - start)
    conf = out["slurm.conf"].splitlines()
    section = [line for line in conf if line.startswith(("NodeName=", "PartitionName="))]
    covered = [n for line in conf if line.startswith("NodeName=") for n in expand(line.split()[0][len("NodeName=") :])]
    correct = sorted(covered) == sorted(n["name"] for n in spec["nodes"])
    if not correct:
        print(f"bench_slurm_config: NodeName lines do not cover exactly the {NODES} nodes", file=sys.stderr)
    print(
        json.dumps(
            {
                "bench": "slurm_config",
                "nodes": NODES,
                "seconds": round(best, 4),
                "slurm_conf_lines": len(conf),
                "node_partition_lines": len(section),
                "gres_conf_lines": len(out["gres.conf"].splitlines()),
                "target_s": 1.0,
                "correct": correct,
            },
            separators=(",", ":"),
        )
    )
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
