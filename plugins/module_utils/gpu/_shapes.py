# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The collection's own table of OCI compute shapes (GPU shapes plus a few CPU ones), and every
fact the collection derives from a shape: GPUs, the Slurm gres type, CPUs, NVMe drives, RDMA NICs.

Derived from the sourced research file ``oci_gpu_shapes.json`` (kept outside the collection); a
unit test compares this table with that file whenever it is present. A record states only what
differs from :class:`Shape`'s defaults (a two-socket x86_64 bare-metal host without GPUs, NVMe or
RDMA); ``None`` where no source was found. Standard library only: this module may run on managed
nodes (Python 3.8+).

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


SHAPES: dict[str, Shape] = {
    "BM.GPU2.2": Shape(
        gpu_vendor="nvidia",
        gpu_model="p100",
        gpu_description="NVIDIA P100",
        gpu_count=2,
        gpu_memory_gb=32,
        gpu_memory_per_gpu_gb=16,
        ocpus=28,
        memory_gb=192,
        cores_per_socket=14,
    ),
    "BM.GPU3.8": Shape(
        gpu_vendor="nvidia",
        gpu_model="v100",
        gpu_description="NVIDIA V100",
        gpu_count=8,
        gpu_memory_gb=128,
        gpu_memory_per_gpu_gb=16,
        ocpus=52,
        memory_gb=768,
        cores_per_socket=26,
    ),
    "BM.GPU4.8": Shape(
        gpu_vendor="nvidia",
        gpu_model="a100",
        gpu_description="NVIDIA A100",
        gpu_count=8,
        gpu_memory_gb=320,
        gpu_memory_per_gpu_gb=40,
        ocpus=64,
        memory_gb=2048,
        cores_per_socket=32,
        nvme_count=4,
        nvme_size_gb=6800,
        rdma_nic_count=16,
        rdma_speed_gbps=100,
        rdma_hca_names=_hcas("mlx5", "0-3,6-17"),
        gpu_fabric="fabricmanager",
    ),
    "BM.GPU.A10.4": Shape(
        gpu_vendor="nvidia",
        gpu_model="a10",
        gpu_description="NVIDIA A10",
        gpu_count=4,
        gpu_memory_gb=96,
        gpu_memory_per_gpu_gb=24,
        ocpus=64,
        memory_gb=1024,
        cores_per_socket=32,
        nvme_count=2,
        nvme_size_gb=3840,
    ),
    "BM.GPU.A100-v2.8": Shape(
        gpu_vendor="nvidia",
        gpu_model="a100",
        gpu_description="NVIDIA A100",
        gpu_count=8,
        gpu_memory_gb=640,
        gpu_memory_per_gpu_gb=80,
        ocpus=128,
        memory_gb=2048,
        cores_per_socket=64,
        nvme_count=4,
        nvme_size_gb=6800,
        rdma_nic_count=16,
        rdma_speed_gbps=100,
        rdma_hca_names=_hcas("mlx5", "1-12,14-17"),
        gpu_fabric="fabricmanager",
    ),
    "BM.GPU.MI300X.8": Shape(
        gpu_vendor="amd",
        gpu_model="mi300x",
        gpu_description="AMD MI300X",
        gpu_count=8,
        gpu_memory_gb=1536,
        gpu_memory_per_gpu_gb=192,
        ocpus=112,
        memory_gb=2048,
        cores_per_socket=56,
        nvme_count=8,
        nvme_size_gb=3840,
        rdma_nic_count=8,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0,2-5,7-9"),
    ),
    "BM.GPU.MI355X.8": Shape(
        gpu_vendor="amd",
        gpu_model="mi355x",
        gpu_description="AMD MI355X",
        gpu_count=8,
        gpu_memory_gb=2304,
        gpu_memory_per_gpu_gb=288,
        ocpus=128,
        memory_gb=3072,
        cores_per_socket=64,
        nvme_count=8,
        nvme_size_gb=7680,
        rdma_nic_count=8,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("ionic", "0,2-5,7-9"),
    ),
    "BM.GPU.L40S.4": Shape(
        gpu_vendor="nvidia",
        gpu_model="l40s",
        gpu_description="NVIDIA L40S",
        gpu_count=4,
        gpu_memory_gb=192,
        gpu_memory_per_gpu_gb=48,
        ocpus=112,
        memory_gb=1024,
        cores_per_socket=56,
        nvme_count=2,
        nvme_size_gb=3840,
        rdma_nic_count=2,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0,2"),
    ),
    "BM.GPU.H100.8": Shape(
        gpu_vendor="nvidia",
        gpu_model="h100",
        gpu_description="NVIDIA H100",
        gpu_count=8,
        gpu_memory_gb=640,
        gpu_memory_per_gpu_gb=80,
        ocpus=112,
        memory_gb=2048,
        cores_per_socket=56,
        nvme_count=16,
        nvme_size_gb=3840,
        rdma_nic_count=16,
        rdma_speed_gbps=200,
        rdma_hca_names=_hcas("mlx5", "0-1,3-10,12-17"),
        gpu_fabric="fabricmanager",
    ),
    "BM.GPU.H200.8": Shape(
        gpu_vendor="nvidia",
        gpu_model="h200",
        gpu_description="NVIDIA H200",
        gpu_count=8,
        gpu_memory_gb=1128,
        gpu_memory_per_gpu_gb=141,
        ocpus=112,
        memory_gb=3072,
        cores_per_socket=56,
        nvme_count=8,
        nvme_size_gb=3840,
        rdma_nic_count=8,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0,3-6,9-11"),
        gpu_fabric="fabricmanager",
    ),
    "BM.GPU.B200.8": Shape(
        gpu_vendor="nvidia",
        gpu_model="b200",
        gpu_description="NVIDIA B200",
        gpu_count=8,
        gpu_memory_gb=1440,
        gpu_memory_per_gpu_gb=180,
        ocpus=128,
        memory_gb=4096,
        cores_per_socket=64,
        nvme_count=8,
        nvme_size_gb=3840,
        rdma_nic_count=8,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0,3-6,9-11"),
        gpu_fabric="fabricmanager",
    ),
    "BM.GPU.GB200.4": Shape(
        cpu_arch="aarch64",
        gpu_vendor="nvidia",
        gpu_model="gb200",
        gpu_description="NVIDIA GB200",
        gpu_count=4,
        gpu_memory_gb=768,
        gpu_memory_per_gpu_gb=192,
        ocpus=144,
        memory_gb=960,
        cores_per_socket=72,
        threads_per_core=None,
        nvme_count=4,
        nvme_size_gb=7680,
        rdma_nic_count=4,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0-1,3-4"),
        gpu_fabric="imex",
    ),
    "BM.GPU.GB300.4": Shape(
        cpu_arch="aarch64",
        gpu_vendor="nvidia",
        gpu_model="gb300",
        gpu_description="NVIDIA GB300",
        gpu_count=4,
        gpu_memory_gb=1112,
        gpu_memory_per_gpu_gb=278,
        ocpus=144,
        memory_gb=960,
        cores_per_socket=72,
        threads_per_core=None,
        nvme_count=4,
        nvme_size_gb=7680,
        rdma_nic_count=8,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0-3,5-8"),
        gpu_fabric="imex",
    ),
    "VM.GPU.A10.1": Shape(
        kind="vm",
        gpu_vendor="nvidia",
        gpu_model="a10",
        gpu_description="NVIDIA A10",
        gpu_count=1,
        gpu_memory_gb=24,
        gpu_memory_per_gpu_gb=24,
        ocpus=15,
        memory_gb=240,
        sockets=1,
        cores_per_socket=15,
    ),
    "VM.GPU.A10.2": Shape(
        kind="vm",
        gpu_vendor="nvidia",
        gpu_model="a10",
        gpu_description="NVIDIA A10",
        gpu_count=2,
        gpu_memory_gb=48,
        gpu_memory_per_gpu_gb=24,
        ocpus=30,
        memory_gb=480,
        sockets=1,
        cores_per_socket=30,
    ),
    "BM.GPU.B300.8": Shape(
        gpu_vendor="nvidia",
        gpu_model="b300",
        gpu_description="NVIDIA B300",
        gpu_count=8,
        gpu_memory_gb=2144,
        gpu_memory_per_gpu_gb=268,
        memory_gb=4096,
        cores_per_socket=64,
        nvme_count=8,
        rdma_nic_count=16,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0-1,7-14,16-21"),
        gpu_fabric="fabricmanager",
    ),
    "BM.GPU.B4.8": Shape(
        gpu_vendor="nvidia",
        gpu_model="a100",
        gpu_description="NVIDIA A100",
        gpu_count=8,
        gpu_memory_gb=320,
        gpu_memory_per_gpu_gb=40,
        memory_gb=2048,
        cores_per_socket=64,
        nvme_count=4,
        rdma_nic_count=16,
        rdma_speed_gbps=100,
        rdma_hca_names=_hcas("mlx5", "1-12,14-17"),
        gpu_fabric="fabricmanager",
    ),
    "BM.GPU.GB200-v2.4": Shape(
        cpu_arch="aarch64",
        gpu_vendor="nvidia",
        gpu_model="gb200",
        gpu_description="NVIDIA GB200",
        gpu_count=4,
        gpu_memory_gb=768,
        gpu_memory_per_gpu_gb=192,
        memory_gb=960,
        cores_per_socket=72,
        threads_per_core=None,
        nvme_count=4,
        nvme_size_gb=7680,
        rdma_nic_count=4,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0-1,3-4"),
        gpu_fabric="imex",
    ),
    "BM.GPU.GB200-v3.4": Shape(
        cpu_arch="aarch64",
        gpu_vendor="nvidia",
        gpu_model="gb200",
        gpu_description="NVIDIA GB200",
        gpu_count=4,
        gpu_memory_gb=768,
        gpu_memory_per_gpu_gb=192,
        memory_gb=960,
        cores_per_socket=72,
        threads_per_core=None,
        nvme_count=4,
        nvme_size_gb=7680,
        rdma_nic_count=8,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0-3,5-8"),
        gpu_fabric="imex",
    ),
    "BM.GPU.MI355X-v1.8": Shape(
        gpu_vendor="amd",
        gpu_model="mi355x",
        gpu_description="AMD MI355X",
        gpu_count=8,
        gpu_memory_gb=2304,
        gpu_memory_per_gpu_gb=288,
        memory_gb=3072,
        cores_per_socket=64,
        nvme_count=8,
        nvme_size_gb=7680,
        rdma_nic_count=8,
        rdma_speed_gbps=400,
        rdma_hca_names=_hcas("mlx5", "0-7"),
    ),
    "BM.GPU.L40S-NC.4": Shape(
        gpu_vendor="nvidia",
        gpu_model="l40s",
        gpu_description="NVIDIA L40S",
        gpu_count=4,
        gpu_memory_gb=192,
        gpu_memory_per_gpu_gb=48,
        memory_gb=1024,
        cores_per_socket=56,
        nvme_count=2,
        rdma_nic_count=None,
    ),
    "BM.GPU.RTXPRO.8": Shape(
        cpu_arch=None,
        gpu_vendor="nvidia",
        gpu_count=8,
        gpu_memory_gb=None,
        sockets=None,
        threads_per_core=None,
        nvme_count=None,
        rdma_nic_count=8,
        rdma_hca_names=_hcas("mlx5", "0-3,6-9"),
    ),
    "VM.Standard.E5.Flex": Shape(
        kind="vm_flex", sockets=1, flex=True, ocpus_min=1, ocpus_max=126, memory_gb_max=1049, memory_gb_max_per_ocpu=64
    ),
    "BM.Optimized3.36": Shape(
        ocpus=36,
        memory_gb=512,
        cores_per_socket=18,
        nvme_count=1,
        nvme_size_gb=3840,
        rdma_nic_count=1,
        rdma_speed_gbps=100,
        rdma_hca_names=_hcas("mlx5", "2"),
    ),
    "BM.Standard.E5.192": Shape(ocpus=192, memory_gb=2304, cores_per_socket=96),
}

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
