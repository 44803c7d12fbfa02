#!/usr/bin/env python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-only ``nvidia-smi`` stand-in for the oci-gpu-lab (no GPU, no driver).

Installed by the lab as /usr/bin/nvidia-smi inside lab containers; never by a role. It reports the
GPUs listed in /etc/oci-gpu-lab/gpus.json whose fake device /dev/nvidiaN is present and not denied
to the caller: a device the cgroup forbids (EPERM on open) is hidden, as the real tool cannot see it
either. Answers ``-L``, ``--query-gpu=<fields> --format=csv[,noheader][,nounits]``, ``-i``, ``-q``
(short) and the plain summary table.

A node can be told to misbehave, as a failing GPU node would, by a JSON file at FAULT_FILE (under
/run: a reboot clears it): ``{"gpus": 7}`` shows only the first 7 GPUs (one fell off the bus),
``{"exit": 15}`` fails every call with that exit code (nvidia-smi(1): 9 driver not loaded, 12 NVML
missing, 15 a GPU fell off the bus), ``{"fabric": "In Progress"}`` reports that Fabric state.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from typing import Any

GPUS_FILE = os.environ.get("OCI_GPU_LAB_GPUS_FILE", "/etc/oci-gpu-lab/gpus.json")
FAULT_FILE = os.environ.get("OCI_GPU_LAB_SMI_FAULT", "/run/oci-gpu-lab-smi-fault.json")
DRIVER_VERSION = "550.90.07"
CUDA_VERSION = "12.4"

UNITS = {"memory.total": "MiB", "memory.used": "MiB", "memory.free": "MiB", "power.draw": "W", "power.limit": "W"}


def _field(gpu: dict[str, Any], name: str, units: bool) -> str:
    values = {
        "index": gpu["index"],
        "name": gpu["name"],
        "gpu_name": gpu["name"],
        "uuid": gpu["uuid"],
        "gpu_uuid": gpu["uuid"],
        "serial": gpu["serial"],
        "pci.bus_id": gpu["pci_bus_id"],
        "gpu_bus_id": gpu["pci_bus_id"],
        "memory.total": gpu["memory_mib"],
        "memory.used": 0,
        "memory.free": gpu["memory_mib"],
        "driver_version": DRIVER_VERSION,
        "count": gpu["count"],
        "minor_number": gpu["index"],
        "utilization.gpu": "0 %",
        "utilization.memory": "0 %",
        "temperature.gpu": 35,
        "power.draw": "70.00",
        "power.limit": "700.00",
        "compute_mode": "Default",
        "persistence_mode": "Enabled",
        "pstate": "P0",
        "vbios_version": "96.00.89.00.01",
        "ecc.errors.uncorrected.volatile.total": 0,
    }
    key = name.strip().lower()
    if key not in values:
        raise KeyError(name)
    value = values[key]
    if key.startswith("utilization.") and not units:
        value = str(value).split()[0]
    if units and key in UNITS:
        return f"{value} {UNITS[key]}"
    return str(value)


def visible_gpus() -> list[dict[str, Any]]:
    try:
        with open(GPUS_FILE, encoding="utf-8") as fh:
            gpus = json.load(fh)
    except FileNotFoundError:
        return []
    out = []
    for gpu in gpus:
        try:
            fd = os.open(f"/dev/nvidia{gpu['index']}", os.O_RDONLY)
            os.close(fd)
        except OSError as exc:
            # ENXIO/ENODEV: the fake node exists but no driver backs it, which is expected here.
            if exc.errno not in (errno.ENXIO, errno.ENODEV):
                continue
        out.append(gpu)
    for gpu in out:
        gpu["count"] = len(out)
    return out


def fault() -> dict[str, Any]:
    """The injected fault (FAULT_FILE), or {} for a healthy node."""
    try:
        with open(FAULT_FILE, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def main(argv: list[str]) -> int:
    broken = fault()
    gpus = visible_gpus()
    if "gpus" in broken:
        gpus = [g for g in gpus if g["index"] < int(broken["gpus"])]
        for gpu in gpus:
            gpu["count"] = len(gpus)
    if broken.get("exit"):
        bus = gpus[-1]["pci_bus_id"] if gpus else "00000000:00:00.0"
        print(f"Unable to determine the device handle for GPU{bus}: Unknown Error")
        return int(broken["exit"])
    fabric_state = str(broken.get("fabric", "Completed"))
    fabric_status = "Success" if fabric_state == "Completed" else "N/A"
    query = fmt = None
    select: set[int] | None = None
    list_mode = summary_q = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-L", "--list-gpus"):
            list_mode = True
        elif arg.startswith("--query-gpu="):
            query = arg.split("=", 1)[1]
        elif arg == "--query-gpu" and i + 1 < len(argv):
            i += 1
            query = argv[i]
        elif arg.startswith("--format="):
            fmt = arg.split("=", 1)[1]
        elif arg in ("-i", "--id") and i + 1 < len(argv):
            i += 1
            select = {int(x) for x in argv[i].split(",") if x.strip().isdigit()}
        elif arg.startswith("--id="):
            select = {int(x) for x in arg.split("=", 1)[1].split(",") if x.strip().isdigit()}
        elif arg in ("-q", "--query"):
            summary_q = True
        elif arg in ("-h", "--help"):
            print("nvidia-smi (oci-gpu-lab stand-in): -L | --query-gpu=FIELDS --format=csv[,noheader][,nounits]")
            return 0
        elif arg == "--version":
            print(
                f"NVIDIA-SMI version  : {DRIVER_VERSION} (oci-gpu-lab stand-in)\nCUDA Version        : {CUDA_VERSION}"
            )
            return 0
        else:
            print(f'Invalid combination of input arguments: "{arg}" is not supported by the oci-gpu-lab stand-in.')
            return 2
        i += 1
    if select is not None:
        gpus = [g for g in gpus if g["index"] in select]
    if not gpus:
        print("No devices were found")
        return 6
    if list_mode:
        for g in gpus:
            print(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})")
        return 0
    if query is not None:
        opts = set((fmt or "").split(","))
        if "csv" not in opts:
            print('"--format" must be given with "--query-gpu" (csv)')
            return 2
        fields = [f.strip() for f in query.split(",") if f.strip()]
        try:
            rows = [[_field(g, f, "nounits" not in opts) for f in fields] for g in gpus]
        except KeyError as exc:
            print(f'Field "{exc.args[0]}" is not a valid field to query.')
            return 2
        if "noheader" not in opts:
            print(", ".join(f + (f" [{UNITS[f]}]" if f in UNITS and "nounits" not in opts else "") for f in fields))
        for row in rows:
            print(", ".join(row))
        return 0
    if summary_q:
        print(f"Driver Version                            : {DRIVER_VERSION}\nCUDA Version : {CUDA_VERSION}")
        print(f"Attached GPUs                             : {len(gpus)}")
        for g in gpus:
            print(f"GPU {g['pci_bus_id']}\n    Product Name : {g['name']}\n    GPU UUID : {g['uuid']}")
            print(f"    Minor Number : {g['index']}\n    Persistence Mode : Enabled")
            print(f"    FB Memory Usage\n        Total : {g['memory_mib']} MiB")
            print(f"    Fabric\n        State : {fabric_state}\n        Status : {fabric_status}")
        return 0
    print(f"| NVIDIA-SMI {DRIVER_VERSION}   Driver Version: {DRIVER_VERSION}   CUDA Version: {CUDA_VERSION} |")
    for g in gpus:
        print(f"|   {g['index']}  {g['name']:<28} On | {g['pci_bus_id']} Off | 0MiB / {g['memory_mib']}MiB |")
    print("| No running processes found (oci-gpu-lab stand-in) |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
