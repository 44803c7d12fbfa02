# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make demo` prints the dynamic inventory as one row per host with all its groups (the graph
listed group members without their group headers, so a host seemed to repeat)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _demo():
    spec = importlib.util.spec_from_file_location("demo", REPO / "tests" / "demo" / "demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_inventory_table_has_one_row_per_host_with_every_group() -> None:
    listing = {
        "_meta": {
            "hostvars": {
                "gpu1": {"ansible_host": {"__ansible_unsafe": "10.0.0.3"}, "oci_shape": "BM.GPU.H100.8"},
                "ctl": {"ansible_host": "10.0.0.2", "oci_shape": "VM.Standard.E5.Flex"},
                "gpu2": {"ansible_host": "10.0.0.4", "oci_shape": "BM.GPU.H100.8"},
            }
        },
        "all": {"children": ["ungrouped", "slurm_compute", "slurm_controller", "slurm_dbd", "oci_ad_1"]},
        "slurm_compute": {"hosts": ["gpu1", "gpu2"]},
        "slurm_controller": {"hosts": ["ctl"]},
        "slurm_dbd": {"hosts": ["ctl"]},
        "oci_ad_1": {"hosts": ["ctl", "gpu1", "gpu2"]},
        "gpu_h100": {"hosts": ["gpu1", "gpu2"]},
    }
    assert _demo().inventory_table(listing) == [
        "every host is in: oci_ad_1",
        "host  address   shape                groups",
        "ctl   10.0.0.2  VM.Standard.E5.Flex  slurm_controller, slurm_dbd",
        "gpu1  10.0.0.3  BM.GPU.H100.8        slurm_compute, gpu_h100",
        "gpu2  10.0.0.4  BM.GPU.H100.8        slurm_compute, gpu_h100",
    ]
