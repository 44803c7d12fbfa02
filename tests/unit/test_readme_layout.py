# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The README's layout section names every plugin, role and scenario in the tree, and nothing else."""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _layout() -> dict[str, set[str]]:
    text = (REPO / "README.md").read_text()
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    rows: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        head = re.match(r"^(\S+/)\s+(.*)$", line)
        if head:
            current = head.group(1)
            rows[current] = head.group(2)
        elif current and line.startswith(" "):
            rows[current] += " " + line.strip()
    # Names are the comma-separated words before any parenthesised remark.
    return {
        key: {re.sub(r"\.py$", "", w.split()[0]) for w in re.sub(r"\([^)]*\)", "", value).split(",") if w.strip()}
        for key, value in rows.items()
    }


@pytest.mark.parametrize(
    ("row", "folder", "pattern"),
    [
        ("plugins/modules/", "plugins/modules", "*.py"),
        ("plugins/action/", "plugins/action", "*.py"),
        ("plugins/filter/", "plugins/filter", "*.py"),
        ("plugins/module_utils/", "plugins/module_utils", "*/*.py"),
        ("plugins/plugin_utils/", "plugins/plugin_utils", "*.py"),
        ("plugins/inventory/", "plugins/inventory", "*.py"),
        ("roles/", "roles", "*"),
        ("molecule/", "molecule", "[!_]*"),
    ],
)
def test_layout_row_names_exactly_the_tree(row: str, folder: str, pattern: str) -> None:
    named = _layout()[row]
    # module_utils/<group>/_name.py is named group/_name (the same stem may live in two groups)
    files = {
        str(p.relative_to(REPO / folder).with_suffix("")) if "/" in pattern else p.stem if p.suffix == ".py" else p.name
        for p in (REPO / folder).glob(pattern)
        if p.name != "__init__.py"
    }
    assert files, f"nothing under {folder}"
    missing = {f for f in files if not any(fnmatch(f, n) for n in named)}
    stale = {n for n in named if not any(fnmatch(f, n) for f in files)}
    assert not missing and not stale, (
        f"README layout {row}: not named {sorted(missing)}; named but absent {sorted(stale)}"
    )
