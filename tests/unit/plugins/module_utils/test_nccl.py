# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Per-shape /etc/nccl.conf settings: the published values, their sources, overrides, refusals."""

from __future__ import annotations

# BM.GPU.H100.8 as oracle-quickstart/oci-hpc-oke docs/recommended-nccl-rccl-parameters-by-shape.md
from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _nccl, _shapes

# BM.GPU.H100.8 as oracle-quickstart/oci-hpc-oke docs/recommended-nccl-rccl-parameters-by-shape.md
# lists it, written out here (NCCL_SOCKET_IFNAME there is the pod network's eth0).
H100_PUBLISHED = {
    "NCCL_DEBUG": "WARN",
    "NCCL_CUMEM_ENABLE": "0",
    "NCCL_IB_SPLIT_DATA_ON_QPS": "0",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_9,mlx5_10,mlx5_12,mlx5_13,"
    "mlx5_14,mlx5_15,mlx5_16,mlx5_17",
    "NCCL_IB_TC": "41",
    "NCCL_IB_SL": "0",
    "NCCL_IB_TIMEOUT": "22",
    "NCCL_IGNORE_CPU_AFFINITY": "1",
}
A100_V2_HCA = (
    "=mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8,"
    "mlx5_14,mlx5_15,mlx5_16,mlx5_17,mlx5_9,mlx5_10,mlx5_11,mlx5_12"
)


def _values(result: dict) -> dict[str, str]:
    return {row["key"]: row["value"] for row in result["settings"]}


def test_h100_matches_the_published_values_with_the_host_interface() -> None:
    got = _nccl.nccl_settings("BM.GPU.H100.8", socket_ifname="ens300f0np0")
    assert got["problems"] == [] and got["note"] == ""
    assert _values(got) == {**H100_PUBLISHED, "NCCL_SOCKET_IFNAME": "ens300f0np0"}
    sources = {row["key"]: row["source"] for row in got["settings"]}
    assert sources["NCCL_IB_HCA"] == f"{_nccl.SOURCE} (BM.GPU.H100.8)"
    assert sources["NCCL_SOCKET_IFNAME"].startswith("the host's default-route interface")


def test_without_a_host_interface_no_socket_ifname() -> None:
    assert _values(_nccl.nccl_settings("BM.GPU.H100.8")) == H100_PUBLISHED


def test_a100_v2_hca_order_and_no_socket_setting() -> None:
    got = _values(_nccl.nccl_settings("BM.GPU.A100-v2.8", socket_ifname="eth9"))
    assert got["NCCL_IB_HCA"] == A100_V2_HCA
    assert got["NCCL_IB_QPS_PER_CONNECTION"] == "4"
    assert "NCCL_SOCKET_IFNAME" not in got


def test_every_exact_hca_list_names_the_shapes_rdma_nics() -> None:
    """An exact-match list that names a NIC the shape table does not have would hide a typo."""
    for shape, rows in _nccl.NCCL_BY_SHAPE.items():
        hca = dict(rows)["NCCL_IB_HCA"].lstrip("=").split(",")
        assert set(hca) <= set(_shapes.SHAPES[shape].rdma_hca_names), shape
        assert len(hca) == len(set(hca)), shape


def test_unlisted_shape_gets_only_overrides_and_says_so() -> None:
    got = _nccl.nccl_settings("BM.GPU.L40S.4", overrides={"NCCL_DEBUG": "INFO"})
    assert got["note"] == "no published NCCL settings for shape BM.GPU.L40S.4: /etc/nccl.conf gets only overrides"
    assert got["settings"] == [{"key": "NCCL_DEBUG", "value": "INFO", "source": "override"}]
    assert _nccl.nccl_settings(None)["note"].startswith("no published NCCL settings for shape (none)")


def test_overrides_replace_remove_and_refuse() -> None:
    got = _nccl.nccl_settings(
        "BM.GPU.H100.8",
        overrides={
            "NCCL_DEBUG": "INFO",
            "NCCL_IB_TC": None,
            "NCCL_CUMEM_ENABLE": "",
            "NCCL_NET_GDR_LEVEL": 5,
            "NCCL_IB_PCI_RELAXED_ORDERING": True,
            "nccl_lower": "1",
            "NCCL_BAD": "1\nNCCL_IB_HCA=mlx5_99",
            "NCCL_HASH": "a#b",
        },
    )
    values = _values(got)
    assert values["NCCL_DEBUG"] == "INFO" and "NCCL_IB_TC" not in values and "NCCL_CUMEM_ENABLE" not in values
    assert values["NCCL_NET_GDR_LEVEL"] == "5" and values["NCCL_IB_PCI_RELAXED_ORDERING"] == "1"
    assert "NCCL_BAD" not in values and "NCCL_HASH" not in values
    assert got["problems"] == [
        "key 'nccl_lower': an NCCL setting name is upper-case letters, digits and '_'",
        "key NCCL_BAD: the value may not hold '#', a line break, a control character or edge spaces",
        "key NCCL_HASH: the value may not hold '#', a line break, a control character or edge spaces",
    ]


def test_render() -> None:
    text = _nccl.render_nccl_conf(
        [{"key": "NCCL_DEBUG", "value": "WARN", "source": "src"}, {"key": "NCCL_IB_TC", "value": "41", "source": "s2"}],
        "Managed by Ansible\n\nline three",
    )
    assert text == "# Managed by Ansible\n#\n# line three\n# src\nNCCL_DEBUG=WARN\n# s2\nNCCL_IB_TC=41\n"


def test_gpu_fabric_per_shape() -> None:
    fabric = {name: _shapes.gpu_fabric(name) for name in _shapes.SHAPES}
    assert {n for n, f in fabric.items() if f == "fabricmanager"} == {
        "BM.GPU4.8",
        "BM.GPU.A100-v2.8",
        "BM.GPU.B4.8",
        "BM.GPU.H100.8",
        "BM.GPU.H200.8",
        "BM.GPU.B200.8",
        "BM.GPU.B300.8",
    }
    assert {n for n, f in fabric.items() if f == "imex"} == {
        "BM.GPU.GB200.4",
        "BM.GPU.GB200-v2.4",
        "BM.GPU.GB200-v3.4",
        "BM.GPU.GB300.4",
    }
    assert _shapes.gpu_fabric("BM.GPU.L40S.4") is None and _shapes.gpu_fabric("BM.GPU.Nonexistent") is None
