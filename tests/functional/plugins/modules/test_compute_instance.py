# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""compute_instance through ansible-core against the OCI API emulator: user_data never shows and the
cluster-tag guard fails the task. The emulated tenancy and the launch arguments are the unit tests'
(tests/unit/plugins/modules/test_compute_instance.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator.testing import run_oci_module  # noqa: E402
from tests.unit.plugins.modules.test_compute_instance import base, compute_tenancy, launch_args  # noqa: E402


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Any]:
    with compute_tenancy(tmp_path) as running:
        yield running


def test_through_ansible_user_data_never_shows_and_the_guard_fails_the_task(lab: Any) -> None:
    rc, task, out = run_oci_module(lab, "compute_instance", launch_args(lab))
    assert rc == 0, out
    assert task["changed"] and task["instance"]["lifecycle_state"] == "RUNNING"
    assert "runcmd" not in out and "touch /tmp/booted" not in out
    rc, task, out = run_oci_module(
        lab, "compute_instance", {**base(lab), "display_name": "lab-gpu-9", "state": "absent", "cluster": "other"}
    )
    assert rc != 0 and "belongs to cluster 'lab' (oci-gpu.cluster), not 'other'" in out
