# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""What a GPU node must have before slurmd (or a kubelet) uses it, judged from what it reports.

Pure Python, standard library only (Python 3.8+): the ``gpu_node_info`` module gathers the facts on
the node and calls :func:`node_problems`; the role refuses a node whose list is not empty. Every
problem names the node, the check, what was expected and what was found. The GPU-count check is
the one ``slurm_node_info`` runs (``slurm/_nodes.gpu_check``), not a second one.

Checks (each can be turned off in ``checks``):

``driver``      the NVIDIA driver is loaded (its version file, else ``nvidia-smi``), and at least
                ``driver_min`` when set
``gpu_count``   the GPU device files match the shape's GPU count (or ``gpu_count``)
``fabric``      on shapes whose GPUs need ``nvidia-fabricmanager`` (HGX boards with NVSwitches) it
                is installed, and once it runs every GPU's fabric state is Completed/Success; on
                GB200/GB300 (``imex``) ``nvidia-imex`` is installed
``peermem``     on RDMA shapes, ``nvidia_peermem`` is loaded when the driver ships it
``rdma_nics``   the shape's RDMA NICs are present (by name) when the shape has a cluster network
``persistence`` every GPU reports persistence mode Enabled (after the role started the daemon)
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes
from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu._health import fabric_problem
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodes import gpu_check

CHECKS = ("driver", "gpu_count", "fabric", "peermem", "rdma_nics", "persistence")

# The services a GPU node may run, by what they are for; "installed" = the unit file exists.
UNITS = {
    "persistence": "nvidia-persistenced",
    "fabricmanager": "nvidia-fabricmanager",
    "imex": "nvidia-imex",
    "dcgm": "nvidia-dcgm",
}


def version_tuple(text: str) -> tuple[int, ...]:
    """``550.90.07`` -> (550, 90, 7); non-numeric parts end the tuple."""
    out = []
    for part in str(text).strip().split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def installed(units: dict[str, dict[str, str]], unit: str) -> bool:
    """A unit systemd knows (its LoadState is not ``not-found``)."""
    state = units.get(unit) or {}
    return bool(state) and state.get("loaded", "") not in ("", "not-found")


def shape_facts(shape: str | None, gpu_count: int | None = None, units: dict | None = None) -> dict[str, Any]:
    """What the shape asks of a node: ``expected_gpus`` (``gpu_count`` when given, else the
    shape's; None when neither says), ``gpu_fabric``, ``rdma_hcas`` (its RDMA NIC names; empty
    without a cluster network) and ``services`` (those of ``units`` installed that the node should
    run, in start order: persistence daemon, the shape's fabric service, DCGM)."""
    rec = _shapes.shape(shape)
    fabric = _shapes.gpu_fabric(shape)
    rdma = list(rec.rdma_hca_names) if rec and rec.rdma_nic_count else []
    wanted = (UNITS["persistence"], UNITS.get(fabric or ""), UNITS["dcgm"])
    return {
        "expected_gpus": gpu_count if gpu_count is not None else _shapes.gpu_count(shape),
        "gpu_fabric": fabric,
        "rdma_hcas": rdma,
        "services": [u for u in wanted if u and installed(units or {}, u)],
    }


def node_problems(name: str, facts: dict[str, Any], settings: dict[str, Any], stage: str = "preflight") -> list[str]:
    """The node's problems. ``facts``: ``driver_version``, ``driver_source``, ``gpu_devices``,
    ``smi`` (``_gpu_health.parse_smi_query`` output, or None when nvidia-smi failed), ``modules``
    (loaded kernel modules), ``peermem_available``, ``rdma_nics`` (names present), ``units``
    (``_systemd`` states). ``settings``: ``shape``, ``gpu_count`` (None: the shape's), ``driver_min``,
    ``checks`` ({check: bool}). ``stage``: ``preflight`` judges what the role cannot fix;
    ``service`` also what its service step should have fixed (fabric state, persistence, peermem)."""
    on = {c: bool((settings.get("checks") or {}).get(c, True)) for c in CHECKS}
    shape = settings.get("shape") or None
    asked = shape_facts(shape)
    out = []

    def problem(check: str, expected: str, found: str) -> None:
        out.append(f"node {name}: {check}: expected {expected}, found {found}")

    version = str(facts.get("driver_version") or "")
    if on["driver"]:
        if not version:
            problem("driver", "the NVIDIA driver loaded", f"none ({facts.get('driver_source') or 'nothing to read'})")
        elif settings.get("driver_min") and version_tuple(version) < version_tuple(settings["driver_min"]):
            problem("driver", f"driver {settings['driver_min']} or later", version)
    if on["gpu_count"]:
        count = settings.get("gpu_count")
        devices = facts.get("gpu_devices") or []
        missing = gpu_check(name, shape, devices, None if count is None else int(count), "gpu_node_gpu_count")
        if missing:
            out.append(f"{missing.replace(f'node {name}: ', f'node {name}: gpu_count: ', 1)}")
        # The device nodes can outlive a GPU that fell off the bus: the driver's view must agree
        # (a node set to show no GPUs is not asked).
        expected = int(count) if count is not None else asked["expected_gpus"]
        smi = facts.get("smi")
        if not missing and smi is not None and expected and len(smi["gpus"]) != expected:
            source = "gpu_node_gpu_count" if count is not None else f"its shape {shape}"
            problem("gpu_count", f"{expected} GPU(s) in nvidia-smi -q ({source})", str(len(smi["gpus"])))
    fabric = asked["gpu_fabric"]
    units = facts.get("units") or {}
    if on["fabric"] and fabric:
        unit = UNITS[fabric]
        if not installed(units, unit):
            problem("fabric", f"{unit} installed (shape {shape} needs it)", "no such service")
        elif stage == "service" and fabric == "fabricmanager":
            smi = facts.get("smi")
            state = fabric_problem(smi["fabric"], len(smi["gpus"])) if smi else "nvidia-smi did not answer"
            if state:
                problem("fabric", "every GPU's fabric state Completed/Success", state)
        elif stage == "service" and (units.get(unit) or {}).get("active") != "active":
            problem("fabric", f"{unit} running", (units.get(unit) or {}).get("active") or "unknown")
    hcas = asked["rdma_hcas"]
    peermem = hcas and facts.get("peermem_available")
    if on["peermem"] and stage == "service" and peermem and "nvidia_peermem" not in (facts.get("modules") or []):
        problem("peermem", "nvidia_peermem loaded (GPUDirect RDMA)", "not loaded")
    if on["rdma_nics"] and hcas:
        present = set(facts.get("rdma_nics") or [])
        absent = [n for n in hcas if n not in present]
        if absent:
            problem(
                "rdma_nics",
                f"the {len(hcas)} RDMA NICs of {shape}",
                f"{len(hcas) - len(absent)}; missing {', '.join(_short(absent))}",
            )
    if on["persistence"] and stage == "service" and facts.get("smi"):
        modes = facts["smi"].get("persistence") or []
        off = [str(i) for i, mode in enumerate(modes) if mode != "Enabled"]
        if off:
            problem("persistence", "persistence mode Enabled on every GPU", f"not on GPU {', '.join(off)}")
    return out


def _short(names: list[str]) -> list[str]:
    return names[:6] + ([f"+{len(names) - 6} more"] if len(names) > 6 else [])


def driver_from_smi(output: str) -> str:
    """The ``Driver Version`` nvidia-smi -q prints, or ""."""
    m = re.search(r"^Driver Version\s*:\s*(\S+)", output, re.M)
    return m.group(1) if m else ""


def default_route_ifname(route_table: str) -> str:
    """The interface of the default IPv4 route with the lowest metric in ``/proc/net/route``, or "".

    Columns: Iface, Destination, Gateway, Flags, RefCnt, Use, Metric, Mask, ... (hex, host order);
    a default route has Destination and Mask 00000000 and the RTF_UP flag (0x1)."""
    best = None
    for line in route_table.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 8 or cols[1] != "00000000" or cols[7] != "00000000":
            continue
        try:
            up, metric = int(cols[3], 16) & 0x1, int(cols[6])
        except ValueError:
            continue
        if up and (best is None or metric < best[0]):
            best = (metric, cols[0])
    return best[1] if best else ""
