# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The OCI API emulator with a small generated tenancy, one per test module, for the OCI read modules, and
the module each test file is about run against it."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator import generate  # noqa: E402
from tests.oci_emulator.testing import run_oci_module, running_emulator  # noqa: E402


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A running emulator: seed 3, four hosts, two compartments, one region."""
    data = generate(seed=3, hosts=4, compartments=2, regions=1)
    with running_emulator(data, tmp_path_factory.mktemp("emu")) as running:
        yield running


@pytest.fixture
def run_module(emu: Any, request: pytest.FixtureRequest) -> Callable[[dict[str, Any]], tuple[int, dict[str, Any], str]]:
    """``run_module(args)``: the test file's module (its ``MODULE``) through Ansible against ``emu``;
    returns (exit status, the task result, all output)."""
    return functools.partial(run_oci_module, emu, request.module.MODULE)
