# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sacctmgr stand-in (plugins/modules/standins/sacctmgr_standin.py) on PATH, for the accounting
modules and the tenants role."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

STANDIN = Path(__file__).parent / "plugins" / "modules" / "standins" / "sacctmgr_standin.py"


class Standin:
    """The stand-in's files: its state (``state()``) and the writes it was asked for (``writes()``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def state(self) -> dict:
        return json.loads((self.root / "state.json").read_text())

    def set_state(self, state: dict) -> None:
        (self.root / "state.json").write_text(json.dumps(state))

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in (self.root / "calls.log").read_text().splitlines()]

    def writes(self) -> list[list[str]]:
        return [c for c in self.calls() if "show" not in c]


@pytest.fixture
def sacctmgr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Standin:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "sacctmgr").write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} "$@"\n')
    (bindir / "sacctmgr").chmod(0o755)
    (bindir / "scancel").write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} --as-scancel "$@"\n')
    (bindir / "scancel").chmod(0o755)
    (bindir / "scontrol").write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} --as-scontrol "$@"\n')
    (bindir / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SACCTMGR_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("FAKE_SACCTMGR_LOG", str(tmp_path / "calls.log"))
    (tmp_path / "calls.log").write_text("")
    return Standin(tmp_path)
