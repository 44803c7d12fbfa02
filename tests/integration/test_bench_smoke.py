# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every benchmark `make bench` runs, in its smoke mode (OCI_GPU_BENCH_SMOKE=1: small sizes, a few
seconds each), so none can stop working unnoticed. Only that each runs, prints its JSON lines and,
where a line carries ``correct``, that it is true: the figures themselves belong to `make bench`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHES = sorted((REPO / "tests" / "bench").glob("bench_*.py"))


def test_make_bench_runs_each_of_these() -> None:
    """The smoke list is `make bench`'s own: the Makefile runs every tests/bench/bench_*.py."""
    assert len(BENCHES) >= 4, BENCHES
    assert "tests/bench/bench_*.py" in (REPO / "Makefile").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("bench", BENCHES, ids=[b.stem for b in BENCHES])
def test_benchmark_smoke(bench: Path) -> None:
    env = dict(os.environ, OCI_GPU_BENCH_SMOKE="1", PYTHONHASHSEED="0")
    run = subprocess.run(
        [sys.executable, str(bench)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, run.stdout
    named = [line.get("bench") or line.get("scenario") for line in lines]
    assert all(named), lines
    wrong = [line for line in lines if "correct" in line and line["correct"] is not True]
    assert wrong == []
