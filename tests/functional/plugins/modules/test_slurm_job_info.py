# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_job_info through ansible-core: an unreadable queue fails."""

from __future__ import annotations

import sys
from pathlib import Path

from . import adhoc


def test_an_unreadable_queue_fails(tmp_path, monkeypatch) -> None:
    squeue = tmp_path / "squeue"
    squeue.write_text("#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller' >&2\nexit 1\n")
    squeue.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{Path(sys.executable).parent}:/usr/bin:/bin")
    out = adhoc.run_module("slurm_job_info", {"partitions": ["gpu"]})
    assert out.get("failed") and "Unable to contact slurm controller" in out["msg"]
    assert adhoc.run_module("slurm_job_info", {})["jobs"] == []
