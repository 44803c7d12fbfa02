# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the OCI API emulator: ``python -m tests.oci_emulator --hosts 500 --state-dir /tmp/emu``.

Writes ``<state-dir>/config`` + ``key.pem`` (an OCI config accepted by the SDK),
``<state-dir>/endpoints.json`` (region -> URL) and ``<state-dir>/tenancy.json`` (the ground
truth), prints the endpoints as one JSON line, and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from . import Emulator, Tenancy, generate, load_tenancy_file, write_oci_config


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.oci_emulator", description=__doc__)
    ap.add_argument("--state-dir", required=True, type=Path)
    ap.add_argument("--tenancy-file", help="JSON/YAML tenancy instead of a generated one")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--compartments", type=int, default=5)
    ap.add_argument("--regions", type=int, default=1)
    ap.add_argument("--subnets-per-region", type=int, default=3)
    ap.add_argument("--vnics-per-host", type=int, default=1)
    ap.add_argument("--public-fraction", type=float, default=0.0)
    ap.add_argument("--stopped-fraction", type=float, default=0.0)
    ap.add_argument("--cluster-compartments", type=int, default=None)
    ap.add_argument("--oke-clusters", type=int, default=0)
    ap.add_argument("--clusters", type=int, default=1, help="Slurm clusters side by side (oci-gpu.cluster tags)")
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    ap.add_argument("--rate-limit", type=float, default=0.0, help="requests/s per region (429 above)")
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--base-port", type=int, default=0, help="first port; regions take consecutive ports")
    args = ap.parse_args(argv)

    if args.tenancy_file:
        data = load_tenancy_file(args.tenancy_file)
    else:
        data = generate(
            seed=args.seed,
            hosts=args.hosts,
            compartments=args.compartments,
            regions=args.regions,
            subnets_per_region=args.subnets_per_region,
            vnics_per_host=args.vnics_per_host,
            public_fraction=args.public_fraction,
            stopped_fraction=args.stopped_fraction,
            cluster_compartments=args.cluster_compartments,
            oke_clusters=args.oke_clusters,
            clusters=args.clusters,
        )
    tenancy = Tenancy(data)
    creds = write_oci_config(args.state_dir, tenancy.id, tenancy.home_region)
    emu = Emulator(
        tenancy,
        {creds.key_id: creds.public_pem},
        latency_s=args.latency_ms / 1000,
        jitter_s=args.jitter_ms / 1000,
        rate_limit_per_s=args.rate_limit,
        fault_rate=args.fault_rate,
    )
    ports = {r: args.base_port + i for i, r in enumerate(tenancy.regions)} if args.base_port else None
    endpoints = emu.start(ports)
    (args.state_dir / "tenancy.json").write_text(json.dumps(data))
    (args.state_dir / "endpoints.json").write_text(json.dumps(endpoints))
    print(
        json.dumps({"endpoints": endpoints, "config_file": str(creds.config_file), "tenancy": tenancy.id}), flush=True
    )
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    emu.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
