# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_config_check: plugin names against the installed plugin directory, and the private copy slurmd -G reads.

``slurmd -G`` itself runs in the lab's Slurm scenarios (molecule/_shared/slurm/bad_input.yml), where
slurmd and munged exist; this host has only Slurm's client and plugins.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from . import adhoc

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.unit.plugins.modules.test_slurm_config_check import CONF  # noqa: E402

DEBIAN_PLUGINS = Path("/usr/lib/x86_64-linux-gnu/slurm-wlm")


@pytest.mark.skipif(not DEBIAN_PLUGINS.is_dir(), reason=f"no Slurm plugins on this host ({DEBIAN_PLUGINS})")
def test_against_the_plugins_installed_here(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    good = CONF.replace("MpiDefault=pmix\n", "")
    ok = adhoc.run_module(
        "slurm_config_check",
        {
            "node_name": "gpu1",
            "slurmd": False,
            "live_dir": str(live),
            "files": {"slurm.conf": good},
        },
        "--check",
    )
    assert ok.get("failed") is not True, ok
    assert ok["checked"] == ["plugins"] and ok["plugin_dir"] == str(DEBIAN_PLUGINS)
    bad = adhoc.run_module(
        "slurm_config_check",
        {
            "node_name": "gpu1",
            "slurmd": False,
            "live_dir": str(live),
            "files": {"slurm.conf": good.replace("select/cons_tres", "select/nonexistent")},
        },
    )
    assert bad["failed"] is True
    assert "SelectType = 'select/nonexistent' needs select_nonexistent.so" in bad["msg"]
    assert "on host gpu1" in bad["msg"] and "no live file was changed" in bad["msg"]


def test_a_candidate_equal_to_the_live_files_is_not_checked_again(tmp_path: Path) -> None:
    conf = "SelectType=select/nonexistent\n"
    (tmp_path / "slurm.conf").write_text(conf)

    def check(**extra: object) -> dict:
        args = {
            "node_name": "n",
            "live_dir": str(tmp_path),
            "plugin_dirs": [str(tmp_path)],
            "files": {"slurm.conf": conf},
        }
        return adhoc.run_module("slurm_config_check", {**args, **extra})

    same = check()
    assert same.get("failed") is not True and same["checked"] == [], same
    forced = check(force=True)
    assert forced["failed"] is True and "select_nonexistent.so" in forced["msg"]
    (tmp_path / "select_nonexistent.so").write_text("")
    again = check(force=True, slurmd=False)
    assert again.get("failed") is not True and again["checked"] == ["plugins"], again
