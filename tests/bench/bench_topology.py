# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark: the RDMA topology model (module_utils/gpu/_topology.py) for 2,000 H100 hosts in 8 HPC
islands x 64 local blocks, with topology.conf rendered for the tree and the block plugin.

Run by ``make bench``; prints exactly one JSON line:
``{"bench":"topology_model","hosts":2000,"islands":8,"local_blocks":64,"seconds":…,...}`` where
``seconds`` is the best of several runs of build + both renders (target, issue 16: under 1 s).
``OCI_GPU_BENCH_SMOKE=1`` (the test command's smoke run) builds 256 hosts once.
Hosts arrive shuffled, with 2 % of them missing their network block id (filled from their block).
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

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _topology as topo  # noqa: E402
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import expand  # noqa: E402

SMOKE = os.environ.get("OCI_GPU_BENCH_SMOKE") == "1"
HOSTS, ISLANDS, BLOCKS, NETWORK_BLOCKS_PER_ISLAND = (256 if SMOKE else 2000), 8, 64, 4
RUNS = 1 if SMOKE else 5


def hosts(seed: int = 16) -> list[dict[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(HOSTS):
        block = i * BLOCKS // HOSTS
        island = block * ISLANDS // BLOCKS
        nb = island * NETWORK_BLOCKS_PER_ISLAND + block % NETWORK_BLOCKS_PER_ISLAND
        host = {
            "name": f"gpu-{i + 1:05d}",
            "shape": "BM.GPU.H100.8",
            "hpc_island_id": f"ocid1.computehpcisland.oc1.iad.anuwc{island:019d}",
            "network_block_id": f"ocid1.computenetworkblock.oc1.iad.anuwc{nb:019d}",
            "local_block_id": f"ocid1.computelocalblock.oc1.iad.anuwc{block:019d}",
        }
        if rng.random() < 0.02:
            del host["network_block_id"]
        out.append(host)
    rng.shuffle(out)
    return out


def main() -> int:
    records = hosts()
    best = float("inf")
    for _run in range(RUNS):
        start = time.perf_counter()
        model = topo.build(records)
        tree, block = topo.topology_conf(model, "tree"), topo.topology_conf(model, "block")
        best = min(best, time.perf_counter() - start)
    line = {
        "bench": "topology_model",
        "hosts": HOSTS,
        "islands": ISLANDS,
        "local_blocks": len(model["blocks"]),
        "seconds": round(best, 4),
        "target_s": 1.0,
        "tree_lines": len(tree.splitlines()),
        "block_lines": len(block.splitlines()),
        "block_sizes": model["block_sizes"],
        "unblocked": len(model["unblocked"]),
        "correct": line_ok(model, records),
    }
    print(json.dumps(line))
    return 0 if best < 1.0 and line["correct"] else 1


def line_ok(model: dict, records: list[dict[str, str]]) -> bool:
    """The blocks are exactly the generated local blocks: the same host sets, none left over."""
    want: dict[str, set[str]] = {}
    for r in records:
        want.setdefault(r["local_block_id"], set()).add(r["name"])
    got = sorted(sorted(expand(b["nodes"])) for b in model["blocks"])
    return not model["unblocked"] and got == sorted(sorted(v) for v in want.values())


if __name__ == "__main__":
    sys.exit(main())
