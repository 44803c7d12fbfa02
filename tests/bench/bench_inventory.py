# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark of the oci_gpu.cluster.oci inventory against the OCI API emulator.

Each scenario starts the emulator in its own process (``python -m tests.oci_emulator``), runs the
real ``ansible-inventory -i <file> --list``, and prints one JSON line:
``{"scenario", "hosts", "requests", "lower_bound_requests", "wall_s", "max_rss_mb", "correct", ...}``.
``lower_bound_requests`` is DESIGN.md §7's list-call formula 1 + 2·C·R + subnets; ``requests`` comes
from the emulator's counters; ``correct`` compares every host, IP, GPU count and group membership
with the generator's ground truth.

``--oracle-model`` also counts what a per-host call pattern like Oracle's ``oracle.oci.oci`` plugin
needs (a model written here, not Oracle's code: per compartment x region ListInstances, then per host
GetInstance + ListVnicAttachments + GetVnic + GetSubnet, serially), measured on a small host count at
the same latency and extrapolated linearly per host.

Usage: python tests/bench/bench_inventory.py [S M L M-throttled M-base] [--no-oracle-model]
``OCI_GPU_BENCH_SMOKE=1`` (the test command's smoke run): the ``smoke`` scenario (60 hosts, 2 regions,
no latency) and the per-host model on 10 hosts of it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "build" / "collections"))

from tests.oci_emulator.testing import _unwrap, ansible_inventory  # noqa: E402

SMOKE = os.environ.get("OCI_GPU_BENCH_SMOKE") == "1"
SCENARIOS: dict[str, dict[str, Any]] = {
    "smoke": {"hosts": 60, "compartments": 4, "regions": 2, "latency_ms": 0},
    "S": {"hosts": 500, "compartments": 10, "regions": 1, "latency_ms": 0},
    "M": {"hosts": 5000, "compartments": 51, "regions": 3, "latency_ms": 30},
    "L": {"hosts": 20000, "compartments": 201, "regions": 3, "latency_ms": 30},
    "M-throttled": {"hosts": 5000, "compartments": 51, "regions": 3, "latency_ms": 30, "rate_limit": 20},
    # M with the list-shaped enrichments off: only the calls DESIGN.md's formula counts
    "M-base": {
        "hosts": 5000,
        "compartments": 51,
        "regions": 3,
        "latency_ms": 30,
        "options": {"compute_hosts": False, "cluster_networks": False, "public_ips": False},
    },
}
# the shape of every scenario's tenancy: 4 subnets per region (3 private GPU subnets, 1 public for
# login hosts), 1 in 1000 hosts public, 2 % stopped, cluster networks in 4 training compartments
COMMON = {
    "subnets_per_region": 4,
    "public_fraction": 0.001,
    "stopped_fraction": 0.02,
    "cluster_compartments": 4,
    "seed": 42,
}


class EmulatorProcess:
    def __init__(self, state: Path, params: dict[str, Any]) -> None:
        args = [sys.executable, "-m", "tests.oci_emulator", "--state-dir", str(state)]
        for k, v in {**COMMON, **params}.items():
            if v is None:
                continue
            args += [f"--{k.replace('_', '-')}", str(v)]
        self.proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            raise RuntimeError("emulator did not start")
        self.info = json.loads(line)
        self.endpoints: dict[str, str] = self.info["endpoints"]
        self.state = state

    def counters(self) -> dict[str, Any]:
        # every region's server shares one counter table: any endpoint answers for all
        url = next(iter(self.endpoints.values()))
        return json.load(urllib.request.urlopen(url + "/_emulator/counters"))

    def reset(self) -> None:
        url = next(iter(self.endpoints.values()))
        urllib.request.urlopen(urllib.request.Request(url + "/_emulator/reset", method="POST", data=b""))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def truth(data: dict[str, Any], enriched: bool = True, public: bool = False) -> dict[str, dict[str, Any]]:
    """Expected hosts (RUNNING) with IP, GPUs and groups, straight from the generated tenancy."""
    out = {}
    shape_gpus = {}
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes

    for region, r in data["regions"].items():
        pool_of = {iid: p for p in r["instancePools"] for iid in p["_instanceIds"]}
        cn_of = {cn["instancePools"][0]: cn for cn in r["clusterNetworks"]}
        for i in r["instances"]:
            if i["lifecycleState"] != "RUNNING":
                continue
            v = i["_vnics"][0]
            gpus = i["shapeConfig"]["gpus"]
            shape_gpus[i["shape"]] = _shapes.gpu_count(i["shape"])
            groups = {"gpu" if gpus else "cpu", "shape_" + i["shape"].replace(".", "_").replace("-", "_")}
            groups.add("region_" + region.replace("-", "_"))
            role = i["definedTags"].get("oci-gpu", {}).get("slurm-role")
            if role:
                groups.add("slurm_" + role)
            pool = pool_of.get(i["id"]) if enriched else None
            if pool:
                groups.add("instance_pool_" + pool["displayName"].replace("-", "_"))
                groups.add("cluster_network_" + cn_of[pool["id"]]["displayName"].replace("-", "_"))
            host = i.get("_computeHost") if enriched else None
            if host:
                groups.add("hpc_island_" + host["hpcIslandId"][-12:])
                groups.add("network_block_" + host["networkBlockId"][-12:])
            public_ip = v["publicIp"] if public else None
            out[v["hostnameLabel"]] = {"ip": v["privateIp"], "gpus": gpus, "groups": groups, "public": public_ip}
    return out


def check(inv: dict[str, Any], expected: dict[str, dict[str, Any]]) -> list[str]:
    problems = []
    hv = inv["_meta"]["hostvars"]
    if set(hv) != set(expected):
        problems.append(f"hosts differ: missing {len(set(expected) - set(hv))}, extra {len(set(hv) - set(expected))}")
    members: dict[str, set[str]] = {}
    for g, body in inv.items():
        for h in body.get("hosts", []) if isinstance(body, dict) else []:
            members.setdefault(h, set()).add(g)
    checked = {g for e in expected.values() for g in e["groups"]}
    for name, e in expected.items():
        v = hv.get(name)
        if v is None:
            continue
        if (
            v.get("oci_private_ip") != e["ip"]
            or v.get("oci_gpus") != e["gpus"]
            or v.get("oci_public_ip") != e["public"]
        ):
            problems.append(f"{name}: vars differ")
        got = members.get(name, set()) & (checked | {g for g in members.get(name, set()) if g.startswith("slurm_")})
        if got != e["groups"]:
            problems.append(f"{name}: groups {sorted(got ^ e['groups'])} differ")
    return problems[:10]


def lower_bound(data: dict[str, Any]) -> int:
    comps = len(data["compartments"]) + 1
    regions = len(data["regions"])
    subnets = sum(len({v["subnetId"] for i in r["instances"] for v in i["_vnics"]}) for r in data["regions"].values())
    return 1 + 2 * comps * regions + subnets


def run_scenario(name: str, params: dict[str, Any], workdir: Path) -> dict[str, Any]:
    state = workdir / name
    emu_params = {k: v for k, v in params.items() if k not in ("latency_ms", "rate_limit", "options")}
    emu_params["latency_ms"] = params.get("latency_ms", 0)
    emu_params["rate_limit"] = params.get("rate_limit", 0)
    emu = EmulatorProcess(state, emu_params)
    try:
        data = json.loads((state / "tenancy.json").read_text())
        inv_file = state / f"bench_{name}.oci_gpu.yml"
        inv_file.write_text(
            json.dumps(
                {
                    "plugin": "oci_gpu.cluster.oci",
                    "config_file": emu.info["config_file"],
                    "service_endpoint": emu.endpoints,
                    **params.get("options", {}),
                }
            )
        )
        emu.reset()
        run = ansible_inventory(inv_file, timeout=1800)
        counters = emu.counters()
        result: dict[str, Any] = {
            "scenario": name,
            "hosts": sum(len(r["instances"]) for r in data["regions"].values()),
            "requests": counters["requests"] - sum(v for k, v in counters["by_op"].items() if k.endswith(":429")),
            "requests_incl_429": counters["requests"],
            "lower_bound_requests": lower_bound(data),
            "wall_s": round(run.wall_s, 2),
            "max_rss_mb": round(run.max_rss_mb, 1),
            "cpu_s": round(run.cpu_s, 2),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "correct": False,
            "requests_by_op": dict(sorted(counters["by_op"].items())),
        }
        if run.rc != 0:
            result["error"] = run.stderr[-500:]
            return result
        enriched = params.get("options", {}).get("compute_hosts", True)
        public = params.get("options", {}).get("public_ips", False)
        problems = check(_unwrap(json.loads(run.stdout)), truth(data, enriched, public))
        result["correct"] = not problems
        if problems:
            result["problems"] = problems
        return result
    finally:
        emu.stop()


def oracle_model(params: dict[str, Any], workdir: Path, sample_hosts: int) -> dict[str, Any]:
    """Count and time a per-host call pattern (a model of oracle.oci.oci, not its code)."""
    import oci

    scaled = dict(params)
    ratio = params["hosts"] / sample_hosts
    scaled["hosts"] = sample_hosts
    state = workdir / "oracle-model"
    emu = EmulatorProcess(state, {k: v for k, v in scaled.items() if k != "rate_limit"})
    try:
        cfg = oci.config.from_file(emu.info["config_file"])
        data = json.loads((state / "tenancy.json").read_text())
        emu.reset()
        start = time.monotonic()
        ident = oci.identity.IdentityClient(cfg, service_endpoint=next(iter(emu.endpoints.values())))
        comps = [data["tenancy"]["id"]] + [
            c.id
            for c in oci.pagination.list_call_get_all_results(
                ident.list_compartments, data["tenancy"]["id"], compartment_id_in_subtree=True
            ).data
        ]
        for url in emu.endpoints.values():
            compute = oci.core.ComputeClient(cfg, service_endpoint=url)
            net = oci.core.VirtualNetworkClient(cfg, service_endpoint=url)
            for comp in comps:
                for inst in oci.pagination.list_call_get_all_results(compute.list_instances, comp).data:
                    if inst.lifecycle_state != "RUNNING":
                        continue
                    compute.get_instance(inst.id)
                    for att in compute.list_vnic_attachments(comp, instance_id=inst.id).data:
                        vnic = net.get_vnic(att.vnic_id).data
                        net.get_subnet(vnic.subnet_id)
        wall = time.monotonic() - start
        counters = emu.counters()
        per_host_requests = counters["requests"] - 1 - len(comps) * len(emu.endpoints)
        extrapolated = round(1 + len(comps) * len(emu.endpoints) + per_host_requests * ratio)
        return {
            "scenario": "oracle-model",
            "model": "a model of oracle.oci.oci's per-host pattern (not its code): per host GetInstance + "
            "ListVnicAttachments + GetVnic + GetSubnet, serial",
            "sample_hosts": sample_hosts,
            "sample_requests": counters["requests"],
            "sample_wall_s": round(wall, 1),
            "extrapolated_hosts": params["hosts"],
            "extrapolated_requests": extrapolated,
            # serial calls: the measured time per call times the extrapolated number of calls
            "extrapolated_wall_s": round(wall / counters["requests"] * extrapolated),
        }
    finally:
        emu.stop()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenarios", nargs="*", default=["smoke"] if SMOKE else ["S", "M", "L", "M-throttled", "M-base"])
    ap.add_argument(
        "--oracle-model", action=argparse.BooleanOptionalAction, default=True, help="also run the per-host model"
    )
    ap.add_argument("--oracle-sample-hosts", type=int, default=10 if SMOKE else 150)
    args = ap.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    with tempfile.TemporaryDirectory(prefix="bench-inventory-") as tmp:
        for name in args.scenarios:
            print(json.dumps(run_scenario(name, SCENARIOS[name], Path(tmp))), flush=True)
        if args.oracle_model:
            model = SCENARIOS["smoke" if SMOKE else "M"]
            print(json.dumps(oracle_model(model, Path(tmp), args.oracle_sample_hosts)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
