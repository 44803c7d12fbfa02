# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""What pytest needs from the lab: is this host ready, and are the images built.

A host that cannot run the lab at all (not root, no podman) skips with the reason, unless
``OCI_GPU_LAB_REQUIRED=1`` (set by ``make test``) turns that into a failure. A host that has
podman but was not prepared fails with the fix to run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAB = HERE / "lab"
REPO = HERE.parent.parent


def required() -> bool:
    return os.environ.get("OCI_GPU_LAB_REQUIRED", "") not in ("", "0", "false", "no")


def missing_reason() -> str | None:
    """Why this host cannot run the lab at all, or None."""
    if os.geteuid() != 0:
        return "the podman lab needs root (rootful podman, privileged systemd containers)"
    if shutil.which("podman") is None:
        return "podman is not installed (run: make lab-prepare, i.e. tests/lab/host_prepare.sh)"
    return None


def ensure_ready(suites: tuple[str, ...] = ("trixie", "bookworm")) -> None:
    """Skip/fail as described above, then build the images (a no-op when cached)."""
    import pytest

    reason = missing_reason()
    if reason:
        if required():
            pytest.fail(f"OCI_GPU_LAB_REQUIRED is set but {reason}")
        pytest.skip(reason)
    check = subprocess.run(
        ["bash", str(HERE / "host_prepare.sh"), "--check"], capture_output=True, text=True, check=False
    )
    if check.returncode != 0:
        pytest.fail(f"this host is not prepared for the lab; run: make lab-prepare\n{check.stdout}{check.stderr}")
    build = subprocess.run(
        [sys.executable, str(HERE / "images.py"), *suites], capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        pytest.fail(f"building the lab images failed:\n{build.stdout[-3000:]}{build.stderr[-3000:]}")


def run_lab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LAB), *args], capture_output=True, text=True, timeout=timeout, check=False)


def podman_names(kind: str, label: str | None = None) -> set[str]:
    """Names of all containers (``kind='ps'``) or networks (``kind='network'``), optionally by label."""
    if kind == "ps":
        cmd = ["podman", "ps", "-a", "--format", "{{.Names}}"]
    else:
        cmd = ["podman", "network", "ls", "--format", "{{.Name}}"]
    if label:
        cmd += ["--filter", f"label={label}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return set(out.split())
