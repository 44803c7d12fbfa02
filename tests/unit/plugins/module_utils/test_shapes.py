# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's shape table agrees with the sourced research file and answers lookups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes

# shared/ sits beside the checkout (CI lays a copy there too).
_REPO = Path(__file__).resolve().parents[4]
SHAPES_JSON = next(
    (
        p
        for p in (
            _REPO.parent / "shared" / "data" / "oci_gpu_shapes.json",
            Path("/work/shared/data/oci_gpu_shapes.json"),
        )
        if p.exists()
    ),
    _REPO.parent / "shared" / "data" / "oci_gpu_shapes.json",
)
MODULE = Path(_shapes.__file__)


def _research() -> dict:
    if not SHAPES_JSON.exists():
        pytest.skip(f"research file {SHAPES_JSON} is not on this machine; table cannot be cross-checked")
    data = json.loads(SHAPES_JSON.read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def test_table_covers_every_researched_shape() -> None:
    assert set(_shapes.SHAPES) == set(_research())


@pytest.mark.parametrize(
    "field,path",
    [
        ("gpu_vendor", ("gpu_vendor",)),
        ("gpu_model", ("gpu_model",)),
        ("gpu_memory_gb", ("gpu_memory_gb",)),
        ("sockets", ("sockets",)),
        ("cores_per_socket", ("cores_per_socket",)),
        ("threads_per_core", ("threads_per_core",)),
        ("nvme_size_gb", ("local_nvme", "size_gb")),
        ("rdma_speed_gbps", ("rdma_nics", "speed_gbps")),
    ],
)
def test_field_matches_research(field: str, path: tuple) -> None:
    for name, row in _research().items():
        value = row
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        assert getattr(_shapes.SHAPES[name], field) == value, (name, field)


def test_counts_and_sizes_match_research() -> None:
    for name, row in _research().items():
        ours = _shapes.shape_info(name)
        assert ours["gpu_count"] == (row["gpu_count"] or 0), name
        nvme = row.get("local_nvme")
        assert ours["nvme_count"] == (nvme["count"] if nvme else None), name
        rdma = row.get("rdma_nics")
        assert ours["rdma_nic_count"] == (rdma["count"] if rdma else None), name
        assert list(ours["rdma_hca_names"]) == list((rdma or {}).get("hca_names") or []), name
        if isinstance(row["ocpus"], dict):
            assert ours["flex"] and ours["ocpus"] is None and ours["ocpus_max"] == row["ocpus"]["max"], name
        else:
            assert ours["ocpus"] == row["ocpus"] and ours["memory_gb"] == row["memory_gb"], name


def test_lookups() -> None:
    h100 = _shapes.shape_info("BM.GPU.H100.8")
    assert h100 is not None
    assert (h100["gpu_vendor"], h100["gpu_model"], h100["gpu_count"]) == ("nvidia", "h100", 8)
    assert _shapes.gpu_count("BM.GPU.H100.8") == 8
    assert _shapes.gpu_count("BM.GPU.MI300X.8") == 8
    assert _shapes.gpu_count("VM.GPU.A10.1") == 1
    assert _shapes.gpu_count("VM.Standard.E5.Flex") == 0
    assert _shapes.gpu_count("BM.Standard.E5.192") == 0
    assert _shapes.gpu_count("No.Such.Shape") is None  # unknown, not 0
    assert _shapes.gpu_count(None) is None
    assert _shapes.shape_info("No.Such.Shape") is None
    assert _shapes.gres_type("BM.GPU.H200.8") == "h200"
    assert _shapes.gres_type("BM.Optimized3.36") is None
    assert _shapes.is_gpu_shape("BM.GPU.Future.8") and not _shapes.is_gpu_shape("VM.Standard.E5.Flex")


def test_shape_info_returns_a_copy() -> None:
    row = _shapes.shape_info("BM.GPU.H100.8")
    assert row is not None
    row["gpu_count"] = 0
    assert _shapes.gpu_count("BM.GPU.H100.8") == 8


def test_records_state_only_what_differs_and_are_frozen() -> None:
    h100 = _shapes.shape("BM.GPU.H100.8")
    assert h100 is not None and h100.kind == "bare_metal" and h100.sockets == 2 and h100.threads_per_core == 2
    assert h100.rdma_hca_names[:3] == ("mlx5_0", "mlx5_1", "mlx5_3") and len(h100.rdma_hca_names) == 16
    with pytest.raises(AttributeError):
        h100.gpu_count = 4  # type: ignore[misc]
    assert _shapes._hcas("ionic", "0,2-4") == ("ionic_0", "ionic_2", "ionic_3", "ionic_4")


def test_unknown_shapes_have_no_facts() -> None:
    for name in ("BM.GPU.Future.99", "VM.Standard9.Flex", "", None):
        assert _shapes.shape(name) is None and _shapes.shape_info(name) is None
        assert _shapes.gpu_count(name) is None and _shapes.gres_type(name) is None
        assert _shapes.threads(name) is None and _shapes.rdma_profile(name) is None
    assert _shapes.is_gpu_shape("BM.GPU.Future.99") and not _shapes.is_gpu_shape("VM.Standard9.Flex")
    assert _shapes.is_bare_metal_gpu("BM.GPU.Future.99") and not _shapes.is_bare_metal_gpu("VM.GPU.Future.1")
    assert not _shapes.is_gpu_shape(None) and not _shapes.is_bare_metal_gpu("")


def test_derived_facts() -> None:
    assert _shapes.gpu_count("VM.Standard.E5.Flex") == 0 and not _shapes.is_gpu_shape("VM.Standard.E5.Flex")
    assert _shapes.is_bare_metal_gpu("BM.GPU.H100.8") and not _shapes.is_bare_metal_gpu("VM.GPU.A10.1")
    assert _shapes.threads("BM.GPU.H100.8") == 224 and _shapes.threads("VM.Standard.E5.Flex") is None
    assert _shapes.rdma_profile("VM.Standard.E5.Flex") is None
    assert _shapes.rdma_profile("BM.GPU.A10.4") is None  # no RDMA NICs
    mi355x = _shapes.rdma_profile("BM.GPU.MI355X.8")
    assert mi355x is not None
    assert (mi355x["rdma_vendor_id"], mi355x["rdma_vf_device_id"], mi355x["rdma_driver"]) == ("1dd8", "1003", "ionic")
    h100 = _shapes.rdma_profile("BM.GPU.H100.8")
    assert h100 == {
        "rdma_nic_count": 16,
        "rdma_speed_gbps": 200,
        "rdma_hca_names": [f"mlx5_{i}" for i in (0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 17)],
        "rdma_vendor_id": "15b3",
        "rdma_vf_device_id": "101e",
        "rdma_driver": "mlx5_core",
        "rdma_resource_name": "rdma_bm_gpu_h100_8",
    }
