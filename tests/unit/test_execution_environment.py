# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The execution-environment metadata the collection ships: the oci range in requirements.txt.

What ansible-builder makes of the built collection is tested in tests/functional/test_execution_environment.py.
"""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]


def _entries(path: Path) -> list[str]:
    """Non-comment lines, as ansible-builder reads them (trailing comments dropped; the functional
    tests read them so too)."""
    lines = [line.split(" #", 1)[0].strip() for line in path.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_oci_range_holds_the_tested_sdk_and_needs_lustre() -> None:
    (oci,) = [Requirement(e) for e in _entries(REPO / "requirements.txt") if Requirement(e).name == "oci"]
    pinned = [Requirement(e) for e in _entries(REPO / "tests/requirements.txt") if e.startswith("oci==")]
    assert pinned, "tests/requirements.txt pins no oci"
    tested = Version(str(pinned[0].specifier).removeprefix("=="))
    assert tested in oci.specifier
    # 2.149.0 has no oci.lustre_file_storage, which lustre_file_system_info calls.
    assert Version("2.149.0") not in oci.specifier
    assert Version("2.150.0") in oci.specifier
