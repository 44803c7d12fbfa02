# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The collection's own table of OCI compute shapes (GPU shapes plus a few CPU ones), and every
fact the collection derives from a shape: GPUs, the Slurm gres type, CPUs, NVMe drives, RDMA NICs.

Derived from the sourced research file ``oci_gpu_shapes.json`` (kept outside the collection); a
unit test compares this table with that file whenever it is present. Fixed shapes are rows of
``_FIXED_SHAPES`` (read by :func:`_fixed`); what a row does not state is :class:`Shape`'s default
(a two-socket x86_64 bare-metal host without GPUs, NVMe or RDMA); ``None`` where no source was
found. Standard library only: this module may run on managed nodes (Python 3.8+).

Unknown shapes, one convention: a name the table lacks has no facts. :func:`shape` and
:func:`shape_info` return None, :func:`gpu_count` returns None (unknown, not 0), and the derived
helpers say "unknown" the same way; only :func:`is_gpu_shape` also judges by the name (``.GPU``).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any


def _hcas(family: str, indexes: str) -> tuple[str, ...]:
    """RDMA HCA names from a family and index ranges: ``_hcas("mlx5", "0-1,3")`` -> mlx5_0, mlx5_1, mlx5_3."""
    out = []
    for part in indexes.split(","):
        low, _sep, high = part.partition("-")
        out.extend(f"{family}_{i}" for i in range(int(low), int(high or low) + 1))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Shape:
    """One shape's facts. ``kind``: bare_metal, vm or vm_flex; ``gpu_model``: the lower-case Slurm
    gres type (``h100``); ``gpu_memory_gb``: the whole shape; ``nvme_size_gb``: per drive, decimal GB;
    ``rdma_speed_gbps``: per port. ``gpu_fabric``: what joins the GPUs' NVLink, and so which service
    must run: ``fabricmanager`` (HGX boards with local NVSwitches, run by nvidia-fabricmanager),
    ``imex`` (GB200/GB300 NVL72 racks, whose NVSwitches sit in the rack: nvidia-imex), None (PCIe
    or direct NVLink, AMD). Flex shapes (``flex``) have ocpus/memory chosen at launch: then
    ``ocpus_min``, ``ocpus_max``, ``memory_gb_max`` and ``memory_gb_max_per_ocpu`` are set and
    ``ocpus``/``memory_gb`` are None."""

    kind: str = "bare_metal"
    cpu_arch: str | None = "x86_64"
    gpu_vendor: str | None = None
    gpu_model: str | None = None
    gpu_description: str | None = None
    gpu_count: int = 0
    gpu_memory_gb: int | None = 0
    gpu_memory_per_gpu_gb: int | None = None
    ocpus: int | None = None
    memory_gb: int | None = None
    sockets: int | None = 2
    cores_per_socket: int | None = None
    threads_per_core: int | None = 2
    nvme_count: int | None = 0
    nvme_size_gb: int | None = None
    rdma_nic_count: int | None = 0
    rdma_speed_gbps: int | None = None
    rdma_hca_names: tuple[str, ...] = ()
    gpu_fabric: str | None = None
    flex: bool = False
    ocpus_min: int | None = None
    ocpus_max: int | None = None
    memory_gb_max: int | None = None
    memory_gb_max_per_ocpu: int | None = None


# The columns of _FIXED_SHAPES, by Shape field; a dict after them in a row holds other fields.
_COLUMNS = (
    "gpu_model",
    "gpu_count",
    "gpu_memory_per_gpu_gb",
    "ocpus",
    "memory_gb",
    "cores_per_socket",
    "nvme_count",
    "nvme_size_gb",
    "rdma_nic_count",
    "rdma_speed_gbps",
    "rdma_hca_names",
)


def _fixed(*row: Any) -> Shape:
    """A shape from one row of :data:`_FIXED_SHAPES`: the :data:`_COLUMNS`, then optionally a dict
    of the other fields that differ from :class:`Shape`'s defaults. A GPU shape's vendor is NVIDIA
    unless the dict says otherwise; the GPU model is written as OCI does (``H100``; None where
    unsourced) and gives the description and, lower-cased, the gres type; the GPU memory of the
    shape is the count times the per-GPU size; HCAs are a family and index ranges as :func:`_hcas`
    takes them (``mlx5 0-1,3``)."""
    fields = {column: row[i] for i, column in enumerate(_COLUMNS)}
    fields.update(row[len(_COLUMNS)] if len(row) > len(_COLUMNS) else {})
    gpus, model, per_gpu = fields["gpu_count"], fields["gpu_model"], fields["gpu_memory_per_gpu_gb"]
    if gpus:
        fields.setdefault("gpu_vendor", "nvidia")
        fields["gpu_memory_gb"] = None if per_gpu is None else gpus * per_gpu
    if model:
        fields["gpu_description"] = f"{fields['gpu_vendor'].upper()} {model}"
        fields["gpu_model"] = model.lower()
    family, _sep, indexes = fields["rdma_hca_names"].partition(" ")
    fields["rdma_hca_names"] = _hcas(family, indexes) if indexes else ()
    return Shape(**fields)


# What some rows share beyond the columns.
_HGX = {"gpu_fabric": "fabricmanager"}
_NVL72 = {"gpu_fabric": "imex", "cpu_arch": "aarch64", "threads_per_core": None}  # Grace: Arm, one thread a core
_AMD = {"gpu_vendor": "amd"}
_VM = {"kind": "vm", "sockets": 1}
_HOST_UNSOURCED = {"cpu_arch": None, "sockets": None, "threads_per_core": None}

_FIXED_SHAPES: dict[str, tuple] = {
    # GPU model, GPUs, GB per GPU, OCPUs, memory GB, cores per socket, NVMe drives, GB per drive,
    # RDMA NICs, Gbps per port, RDMA HCAs, then optionally the other fields (see _fixed)
    "BM.GPU2.2": ("P100", 2, 16, 28, 192, 14, 0, None, 0, None, ""),
    "BM.GPU3.8": ("V100", 8, 16, 52, 768, 26, 0, None, 0, None, ""),
    "BM.GPU4.8": ("A100", 8, 40, 64, 2048, 32, 4, 6800, 16, 100, "mlx5 0-3,6-17", _HGX),
    "BM.GPU.A10.4": ("A10", 4, 24, 64, 1024, 32, 2, 3840, 0, None, ""),
    "BM.GPU.A100-v2.8": ("A100", 8, 80, 128, 2048, 64, 4, 6800, 16, 100, "mlx5 1-12,14-17", _HGX),
    "BM.GPU.MI300X.8": ("MI300X", 8, 192, 112, 2048, 56, 8, 3840, 8, 400, "mlx5 0,2-5,7-9", _AMD),
    "BM.GPU.MI355X.8": ("MI355X", 8, 288, 128, 3072, 64, 8, 7680, 8, 400, "ionic 0,2-5,7-9", _AMD),
    "BM.GPU.L40S.4": ("L40S", 4, 48, 112, 1024, 56, 2, 3840, 2, 400, "mlx5 0,2"),
    "BM.GPU.H100.8": ("H100", 8, 80, 112, 2048, 56, 16, 3840, 16, 200, "mlx5 0-1,3-10,12-17", _HGX),
    "BM.GPU.H200.8": ("H200", 8, 141, 112, 3072, 56, 8, 3840, 8, 400, "mlx5 0,3-6,9-11", _HGX),
    "BM.GPU.B200.8": ("B200", 8, 180, 128, 4096, 64, 8, 3840, 8, 400, "mlx5 0,3-6,9-11", _HGX),
    "BM.GPU.GB200.4": ("GB200", 4, 192, 144, 960, 72, 4, 7680, 4, 400, "mlx5 0-1,3-4", _NVL72),
    "BM.GPU.GB300.4": ("GB300", 4, 278, 144, 960, 72, 4, 7680, 8, 400, "mlx5 0-3,5-8", _NVL72),
    "VM.GPU.A10.1": ("A10", 1, 24, 15, 240, 15, 0, None, 0, None, "", _VM),
    "VM.GPU.A10.2": ("A10", 2, 24, 30, 480, 30, 0, None, 0, None, "", _VM),
    "BM.GPU.B300.8": ("B300", 8, 268, None, 4096, 64, 8, None, 16, 400, "mlx5 0-1,7-14,16-21", _HGX),
    "BM.GPU.B4.8": ("A100", 8, 40, None, 2048, 64, 4, None, 16, 100, "mlx5 1-12,14-17", _HGX),
    "BM.GPU.GB200-v2.4": ("GB200", 4, 192, None, 960, 72, 4, 7680, 4, 400, "mlx5 0-1,3-4", _NVL72),
    "BM.GPU.GB200-v3.4": ("GB200", 4, 192, None, 960, 72, 4, 7680, 8, 400, "mlx5 0-3,5-8", _NVL72),
    "BM.GPU.MI355X-v1.8": ("MI355X", 8, 288, None, 3072, 64, 8, 7680, 8, 400, "mlx5 0-7", _AMD),
    "BM.GPU.L40S-NC.4": ("L40S", 4, 48, None, 1024, 56, 2, None, None, None, ""),
    "BM.GPU.RTXPRO.8": (None, 8, None, None, None, None, None, None, 8, None, "mlx5 0-3,6-9", _HOST_UNSOURCED),
    "BM.Optimized3.36": (None, 0, None, 36, 512, 18, 1, 3840, 1, 100, "mlx5 2"),
    "BM.Standard.E5.192": (None, 0, None, 192, 2304, 96, 0, None, 0, None, ""),
}

SHAPES: dict[str, Shape] = {name: _fixed(*row) for name, row in _FIXED_SHAPES.items()}
SHAPES["VM.Standard.E5.Flex"] = Shape(
    kind="vm_flex", sockets=1, flex=True, ocpus_min=1, ocpus_max=126, memory_gb_max=1049, memory_gb_max_per_ocpu=64
)

# RDMA NIC families by the HCA name prefix: PCI vendor id, the id of the virtual function the
# SR-IOV device plugin hands to pods, and the kernel driver.
RDMA_NIC_FAMILIES = {
    "mlx5": {"vendor": "15b3", "vf_device": "101e", "driver": "mlx5_core"},
    "ionic": {"vendor": "1dd8", "vf_device": "1003", "driver": "ionic"},
}


def shape(name: str | None) -> Shape | None:
    """The record of ``name`` (exact OCI spelling), or None for an unknown shape."""
    return SHAPES.get(name or "")


def shape_info(name: str | None) -> dict[str, Any] | None:
    """The record of ``name`` as a new dict, or None for an unknown shape."""
    rec = shape(name)
    return dataclasses.asdict(rec) if rec is not None else None


def gpu_count(name: str | None) -> int | None:
    """GPUs a shape carries: 0 for CPU shapes, None for an unknown name."""
    rec = shape(name)
    return rec.gpu_count if rec is not None else None


def is_gpu_shape(name: str | None) -> bool:
    """True when the shape carries at least one GPU; an unknown name with ``.GPU`` in it counts."""
    rec = shape(name)
    if rec is not None:
        return rec.gpu_count > 0
    return bool(name) and ".GPU" in str(name).upper()


def is_bare_metal_gpu(name: str | None) -> bool:
    """A bare-metal GPU shape (the ones with a compute host and an RDMA fabric); an unknown name
    counts when it starts with ``BM.`` and names a GPU."""
    rec = shape(name)
    if rec is not None:
        return rec.kind == "bare_metal" and rec.gpu_count > 0
    return bool(name) and str(name).startswith("BM.") and is_gpu_shape(name)


def gpu_fabric(name: str | None) -> str | None:
    """``fabricmanager``, ``imex`` or None (see :class:`Shape`); None for an unknown shape too."""
    rec = shape(name)
    return rec.gpu_fabric if rec is not None else None


def gres_type(name: str | None) -> str | None:
    """The Slurm gres type (lower-case GPU model) of a GPU shape; None for other or unknown shapes."""
    rec = shape(name)
    return rec.gpu_model if rec is not None and rec.gpu_count else None


def threads(name: str | None) -> int | None:
    """Hardware threads of a fixed shape (what Kubernetes counts as CPUs); None when the table does
    not say (unknown or flex shapes). An x86 OCPU is one core with two threads; Ampere A1 OCPUs are
    single-threaded cores."""
    rec = shape(name)
    if rec is None or not rec.ocpus:
        return None
    return int(rec.ocpus) * int(rec.threads_per_core or 2)


def rdma_profile(name: str | None) -> dict[str, Any] | None:
    """RDMA facts of a shape for the SR-IOV device plugin, or None when it has no RDMA NICs of a
    known family (or is unknown)."""
    rec = shape(name)
    if rec is None or not rec.rdma_nic_count or not rec.rdma_hca_names:
        return None
    nic = RDMA_NIC_FAMILIES.get(re.sub(r"_\d+$", "", rec.rdma_hca_names[0]))
    if nic is None:
        return None
    return {
        "rdma_nic_count": int(rec.rdma_nic_count),
        "rdma_speed_gbps": rec.rdma_speed_gbps,
        "rdma_hca_names": list(rec.rdma_hca_names),
        "rdma_vendor_id": nic["vendor"],
        "rdma_vf_device_id": nic["vf_device"],
        "rdma_driver": nic["driver"],
        "rdma_resource_name": "rdma_" + re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_"),
    }
