# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gpu_node role's health-check names match the program's (the role through ansible-playbook:
tests/functional/roles/test_gpu_node_role.py)."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _health as _gpu_health

REPO = Path(__file__).resolve().parents[3]


def test_health_check_names_match_the_program() -> None:
    import yaml

    names = yaml.safe_load((REPO / "roles" / "gpu_node" / "vars" / "main.yml").read_text())
    assert names["__gpu_node_health_check_names"] == list(_gpu_health.CHECKS)
