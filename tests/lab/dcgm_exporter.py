#!/usr/bin/env python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-only ``dcgm-exporter`` stand-in for the oci-gpu-lab (no GPU, no DCGM).

Installed by the lab as /usr/bin/dcgm-exporter on GPU nodes (where NVIDIA's package puts the real one);
never by a role. It takes the real exporter's options that the monitoring role passes
(``-a/--address``, ``-f/--collectors``, ``--hpc-job-mapping-dir``, and their DCGM_EXPORTER_LISTEN,
DCGM_EXPORTER_COLLECTORS and DCGM_HPC_JOB_MAPPING_DIR forms) and serves /metrics as the real one does:
one series per GPU and collected field, with the real metric names (the DCGM field names) and labels
(``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname``, ``DCGM_FI_DRIVER_VERSION``).

The collectors file is read as the real one reads it (``FIELD, type, help`` lines, ``#`` comments); a field
this stand-in does not know stops it at start, as an unknown field stops the real one. With a job mapping
directory, a GPU whose file (named by the GPU's index) lists job ids gets one copy of each series per job
with ``hpc_job="<id>"``, as the real exporter's HPC job mapping does.

The values are made up but follow the lab: the GPUs are those in /etc/oci-gpu-lab/gpus.json whose fake
device is present (as the nvidia-smi stand-in shows them; its fault file's ``{"gpus": N}`` hides the rest),
a GPU with a job is busy (utilization 100 %, memory in use, power and temperature up) and an idle one is
not, and the fault file's ``{"xid": N}`` shows Xid N on the last GPU.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GPUS_FILE = os.environ.get("OCI_GPU_LAB_GPUS_FILE", "/etc/oci-gpu-lab/gpus.json")
FAULT_FILE = os.environ.get("OCI_GPU_LAB_SMI_FAULT", "/run/oci-gpu-lab-smi-fault.json")
DEFAULT_COLLECTORS = "/etc/dcgm-exporter/default-counters.csv"
DRIVER_VERSION = "550.90.07"
STARTED = time.monotonic()


def _busy(job: bool, idle: float, busy: float) -> float:
    return busy if job else idle


# The fields this stand-in serves: name -> value(gpu, busy).
FIELDS: dict[str, Any] = {
    "DCGM_FI_DEV_GPU_UTIL": lambda g, b: _busy(b, 0, 100),
    "DCGM_FI_DEV_MEM_COPY_UTIL": lambda g, b: _busy(b, 0, 40),
    "DCGM_FI_DEV_ENC_UTIL": lambda g, b: 0,
    "DCGM_FI_DEV_DEC_UTIL": lambda g, b: 0,
    "DCGM_FI_DEV_FB_USED": lambda g, b: _busy(b, 0, int(g["memory_mib"] * 0.6)),
    "DCGM_FI_DEV_FB_FREE": lambda g, b: g["memory_mib"] - _busy(b, 0, int(g["memory_mib"] * 0.6)),
    "DCGM_FI_DEV_GPU_TEMP": lambda g, b: _busy(b, 35, 62),
    "DCGM_FI_DEV_MEMORY_TEMP": lambda g, b: _busy(b, 38, 66),
    "DCGM_FI_DEV_POWER_USAGE": lambda g, b: _busy(b, 72.5, 612.0),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": lambda g, b: int((time.monotonic() - STARTED) * 72500),
    "DCGM_FI_DEV_SM_CLOCK": lambda g, b: _busy(b, 345, 1980),
    "DCGM_FI_DEV_MEM_CLOCK": lambda g, b: 2619,
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": lambda g, b: 0,
    "DCGM_FI_DEV_XID_ERRORS": lambda g, b: g.get("xid", 0),
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": lambda g, b: 0,
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": lambda g, b: 0,
    "DCGM_FI_DEV_RETIRED_DBE": lambda g, b: 0,
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": lambda g, b: 0,
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": lambda g, b: _busy(b, 0.0, 0.93),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": lambda g, b: _busy(b, 0.0, 0.71),
    "DCGM_FI_PROF_DRAM_ACTIVE": lambda g, b: _busy(b, 0.0, 0.55),
}


def read_collectors(path: str) -> list[tuple[str, str, str]]:
    """(field, type, help) per line of a collectors CSV; SystemExit on a field or type it cannot serve."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise SystemExit(f"dcgm-exporter (lab stand-in): cannot read the collectors file {path}: {exc}") from None
    out = []
    for n, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3:
            raise SystemExit(f"dcgm-exporter (lab stand-in): {path}:{n}: expected 'FIELD, type, help': {line!r}")
        field, kind, text = parts
        if field not in FIELDS:
            raise SystemExit(f"dcgm-exporter (lab stand-in): {path}:{n}: unknown DCGM field {field!r}")
        if kind not in ("gauge", "counter", "label"):
            raise SystemExit(f"dcgm-exporter (lab stand-in): {path}:{n}: unknown metric type {kind!r}")
        out.append((field, kind, text))
    return out


def _json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def visible_gpus() -> list[dict[str, Any]]:
    out = []
    for gpu in _json(GPUS_FILE) or []:
        if os.path.exists(f"/dev/nvidia{gpu['index']}"):
            out.append(dict(gpu))
    fault = _json(FAULT_FILE)
    if isinstance(fault, dict):
        if "gpus" in fault:
            out = [g for g in out if g["index"] < int(fault["gpus"])]
        if fault.get("xid") and out:
            out[-1]["xid"] = int(fault["xid"])
    return out


def job_map(directory: str) -> dict[str, list[str]]:
    """GPU index -> the job ids in its mapping file (one per line), as the real exporter reads them."""
    out: dict[str, list[str]] = {}
    if not directory:
        return out
    try:
        names = os.listdir(directory)
    except OSError:
        return out
    for name in names:
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as fh:
                jobs = [line.strip() for line in fh if line.strip()]
        except OSError:
            continue
        if jobs:
            out[name] = jobs
    return out


def _label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(collectors: list[tuple[str, str, str]], mapping_dir: str, hostname: str) -> str:
    gpus = visible_gpus()
    jobs = job_map(mapping_dir)
    lines = []
    for field, kind, text in collectors:
        if kind == "label":
            continue
        lines.append(f"# HELP {field} {text}")
        lines.append(f"# TYPE {field} {kind}")
        for gpu in gpus:
            running = jobs.get(str(gpu["index"]), [])
            value = FIELDS[field](gpu, bool(running))
            labels = {
                "gpu": gpu["index"],
                "UUID": gpu["uuid"],
                "pci_bus_id": gpu["pci_bus_id"],
                "device": f"nvidia{gpu['index']}",
                "modelName": gpu["name"],
                "Hostname": hostname,
                "DCGM_FI_DRIVER_VERSION": DRIVER_VERSION,
            }
            for job in running or [None]:
                series = dict(labels, hpc_job=job) if job else labels
                inner = ",".join(f'{k}="{_label(v)}"' for k, v in series.items())
                lines.append(f"{field}{{{inner}}} {value}")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str]) -> dict[str, str]:
    opts = {
        "address": os.environ.get("DCGM_EXPORTER_LISTEN", ":9400"),
        "collectors": os.environ.get("DCGM_EXPORTER_COLLECTORS", DEFAULT_COLLECTORS),
        "mapping": os.environ.get("DCGM_HPC_JOB_MAPPING_DIR", ""),
    }
    names = {
        "-a": "address",
        "--address": "address",
        "-f": "collectors",
        "--collectors": "collectors",
        "-p": "mapping",
        "--hpc-job-mapping-dir": "mapping",
    }
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, _sep, value = arg.partition("=")
        if key in names and _sep:
            opts[names[key]] = value
        elif arg in names and i + 1 < len(argv):
            i += 1
            opts[names[arg]] = argv[i]
        elif arg in ("-h", "--help"):
            print("dcgm-exporter (oci-gpu-lab stand-in): -a ADDR -f COLLECTORS.csv --hpc-job-mapping-dir DIR")
            raise SystemExit(0)
        else:
            raise SystemExit(f"dcgm-exporter (lab stand-in): unknown option {arg!r}")
        i += 1
    return opts


def main(argv: list[str]) -> int:
    opts = parse_args(argv)
    collectors = read_collectors(opts["collectors"])
    host, _sep, port = opts["address"].rpartition(":")
    hostname = socket.gethostname()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = render(collectors, opts["mapping"], hostname).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, int(port)), Handler)
    print(f"dcgm-exporter (lab stand-in): serving {len(collectors)} fields on {opts['address']}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
