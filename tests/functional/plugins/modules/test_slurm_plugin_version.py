# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_plugin_version through ansible-core: the release a plugin was built for, read from a shared
object gcc builds here with a plugin_version (as slurm/spank.h's SPANK_PLUGIN sets it), found by
path or in a list of directories; a missing file is reported, a file that is not ELF fails."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .adhoc import run_module

GCC = shutil.which("gcc")
STANDIN = Path(__file__).resolve().parents[3] / "lab" / "standins" / "spank_pyxis.c"
pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is missing (tests/setup/apt-packages.txt installs it)")


def build_plugin(directory: Path, major: int, minor: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / "spank_pyxis.so"
    subprocess.run(
        [GCC, "-shared", "-fPIC", "-nostdlib", f"-DMAJOR={major}", f"-DMINOR={minor}", "-o", str(out), str(STANDIN)],
        check=True,
    )
    return out


def test_by_path_and_by_search(tmp_path) -> None:
    old = build_plugin(tmp_path / "a", 22, 5)
    got = run_module("slurm_plugin_version", {"path": str(old)}, "--check")
    assert (got["found"], got["version"], got["path"], got["changed"]) == (True, "22.05.0", str(old), False)
    new = build_plugin(tmp_path / "b", 24, 11)
    found = run_module(
        "slurm_plugin_version", {"dirs": [str(tmp_path / "none"), str(tmp_path / "b"), str(tmp_path / "a")]}
    )
    assert (found["path"], found["version"]) == (str(new), "24.11.0")


def test_missing_and_not_elf(tmp_path) -> None:
    missing = run_module("slurm_plugin_version", {"dirs": [str(tmp_path)]})
    assert (missing["found"], missing["path"], missing["version"]) == (False, "", "")
    text = tmp_path / "spank_pyxis.so"
    text.write_text("#!/bin/sh\n" * 10)
    bad = run_module("slurm_plugin_version", {"path": str(text)})
    assert bad["failed"] is True and "not an ELF file" in bad["msg"]
