# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""A GPU node's files for the tests on a host without one: a BM.GPU.H100.8's RDMA NICs, its driver
version file, its kernel-module list, stand-in commands (nvidia-smi, scontrol...), and the GPU health
program run with them first on PATH."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

H100_NICS = [f"mlx5_{i}" for i in (0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 17)]


def gpu_node_files(path: Path, modules: str, smi: str) -> Path:
    """``path`` with ``version`` (550.90.07), ``modules`` (``/proc/modules``), ``ib/<nic>`` for each
    of H100_NICS, and ``nvidia-smi``, a script that prints ``smi``."""
    (path / "version").write_text("550.90.07\n")
    (path / "modules").write_text(modules)
    (path / "ib").mkdir()
    for nic in H100_NICS:
        (path / "ib" / nic).mkdir()
    stand_in(path / "nvidia-smi", "cat <<'EOF'\n" + smi + "EOF")
    return path


def stand_in(path: Path, body: str) -> Path:
    """An executable ``/bin/sh`` script at ``path`` that runs ``body``."""
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def run_health(argv: list[str], *path_dirs: Path) -> subprocess.CompletedProcess[str]:
    """The GPU health program, ``argv``, with ``path_dirs`` first on PATH; it must exit 0."""
    env = dict(os.environ, PATH=os.pathsep.join([*map(str, path_dirs), os.environ["PATH"]]))
    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=60)
    assert res.returncode == 0, res.stderr
    return res
