# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""A GPU node's files for the tests on a host without one: a BM.GPU.H100.8's RDMA NICs, its driver
version file, its kernel-module list and an nvidia-smi that prints what the test gives it."""

from __future__ import annotations

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
    program = path / "nvidia-smi"
    program.write_text("#!/bin/sh\ncat <<'EOF'\n" + smi + "EOF\n")
    program.chmod(0o755)
    return path
