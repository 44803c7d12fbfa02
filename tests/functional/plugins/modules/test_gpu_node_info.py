# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_node_info run by ansible-core against stand-in paths."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from . import adhoc

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gpu_stand_ins import H100_NICS, gpu_node_files  # noqa: E402

from tests.unit.plugins.modules.test_gpu_node_info import ROUTES, _smi  # noqa: E402

# ------------------------------------------------------------------ the module, run by ansible-core


@pytest.fixture
def node(tmp_path: Path) -> Path:
    # GPU device files count only under /dev (see test_slurm_nodes.py): these stand-ins never do,
    # so the module tests give gpu_count and see the node show none.
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidia0").write_text("")
    modules = "nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 2 - Live 0x0\next4 1 1 - Live 0x0\n"
    return gpu_node_files(tmp_path, modules, _smi(8))


def _args(node: Path, **over) -> dict:
    args = {
        "name": "gpu1",
        "shape": "BM.GPU.H100.8",
        "driver_version_file": str(node / "version"),
        "nvidia_smi": str(node / "nvidia-smi"),
        "device_glob": str(node / "dev" / "nvidia*"),
        "modules_file": str(node / "modules"),
        "rdma_dir": str(node / "ib"),
        "gpu_count": 0,
    }
    args.update(over)
    return args


def test_module_reads_the_node(node: Path) -> None:
    (node / "route").write_text(ROUTES)
    result = adhoc.run_module("gpu_node_info", _args(node, route_file=str(node / "route")))
    assert result.get("failed") is not True, result
    assert result["changed"] is False
    assert result["driver_version"] == "550.90.07" and result["driver_source"] == str(node / "version")
    assert result["gpu_devices"] == []
    assert result["smi"]["persistence"] == ["Enabled"] * 8 and result["smi_error"] == ""
    assert result["modules"] == ["nvidia", "nvidia_peermem"]
    assert result["rdma_nics"] == sorted(H100_NICS)
    # this machine has no nvidia-fabricmanager unit (or no systemd): the shape needs one
    assert result["problems"] == [
        "node gpu1: fabric: expected nvidia-fabricmanager installed (shape BM.GPU.H100.8 needs it), "
        "found no such service"
    ]
    assert result["default_ifname"] == "eth0"
    # What the service stage would say, read in the same call; nothing installed is left to start.
    assert result["service_problems"] == result["problems"] and result["services_to_start"] == []


def test_module_without_a_driver_reads_nvidia_smi_and_reports_its_exit(node: Path) -> None:
    (node / "version").unlink()
    result = adhoc.run_module("gpu_node_info", _args(node, checks={"fabric": False}))
    assert result["driver_version"] == "550.90.07" and result["driver_source"] == "nvidia-smi -q"
    assert result["problems"] == []
    (node / "nvidia-smi").write_text(
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate'\nexit 9\n"
    )
    result = adhoc.run_module("gpu_node_info", _args(node, checks={"fabric": False}))
    assert result["smi"] is None
    assert result["smi_error"].startswith("nvidia-smi exit 9: NVIDIA driver is not loaded")
    assert result["problems"] == [
        f"node gpu1: driver: expected the NVIDIA driver loaded, found none (no {node / 'version'}; "
        + result["smi_error"]
        + ")"
    ]


def test_module_gpu_count(node: Path) -> None:
    result = adhoc.run_module("gpu_node_info", _args(node, gpu_count=8, checks={"fabric": False}))
    assert result["problems"] == [
        "node gpu1: gpu_count: gpu_node_gpu_count promises 8 GPU(s) but the node shows 0 (none)"
    ]


def test_module_refuses_an_unknown_check(node: Path) -> None:
    result = adhoc.run_module("gpu_node_info", _args(node, checks={"fabirc": False}))
    assert result["failed"] is True
    assert result["msg"] == "node gpu1: checks: unknown check(s) fabirc"
