# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The documentation's shape: docs/layout.md names every plugin, role and scenario in the tree, and
nothing else; the README is a landing page (under 250 lines) that links every page under docs/; and
every relative link in the README and docs/ reaches a file (and a heading, where it names one)."""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _layout() -> dict[str, set[str]]:
    text = (REPO / "docs" / "layout.md").read_text()
    block = text.split("```", 2)[1]
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
        f"docs/layout.md {row}: not named {sorted(missing)}; named but absent {sorted(stale)}"
    )


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def _headings(path: Path) -> set[str]:
    out, fence = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"^#{1,6} ", line):
            out.add(_anchor(line.lstrip("#")))
    return out


def test_the_readme_is_a_landing_page_that_links_every_docs_page() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) < 250
    pages = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    assert pages and not [p for p in pages if f"](docs/{p}" not in text]


@pytest.mark.parametrize("doc", ["README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))])
def test_relative_links_reach_a_file_and_heading(doc: str) -> None:
    path = REPO / doc
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _sep, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in _headings(dest)):
            broken.append(target)
    assert not broken, f"{doc}: broken links {broken}"
