# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The OCI API emulator with a small generated tenancy, one per test module, for the OCI read modules."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator import generate  # noqa: E402
from tests.oci_emulator.testing import running_emulator  # noqa: E402


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A running emulator: seed 3, four hosts, two compartments, one region."""
    data = generate(seed=3, hosts=4, compartments=2, regions=1)
    with running_emulator(data, tmp_path_factory.mktemp("emu")) as running:
        yield running
