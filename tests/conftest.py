# SPDX-License-Identifier: GPL-3.0-or-later
"""Make the repository importable as ``ansible_collections.oci_gpu.cluster``.

The collection lives at the repository root; tests import it by its real
namespace through a symlink tree under ``build/collections`` (tests/ansible_harness.py).
"""

from __future__ import annotations

from ansible_harness import link_collection

link_collection()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """What the canary steps measured and each molecule scenario's wall time, at the end of the run
    (tests/integration/test_molecule.py)."""
    figures = config.__dict__.get("oci_gpu_figures") or []
    if figures:
        terminalreporter.section("lab figures")
        for line in figures:
            terminalreporter.write_line(line)
    times = config.__dict__.get("oci_gpu_scenario_times") or {}
    if not times:
        return
    terminalreporter.section("molecule scenario times")
    for scenario, seconds in sorted(times.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:7.0f} s  {scenario}")
    terminalreporter.write_line(f"{sum(times.values()):7.0f} s  all {len(times)} scenarios")
