# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Everything that ships to managed nodes parses with the oldest node Python the support matrix
names (README: Python 3.8): every module and every module_utils file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OLDEST_NODE_PYTHON = (3, 8)
NODE_FILES = sorted((REPO / "plugins" / "modules").glob("*.py")) + sorted(
    (REPO / "plugins" / "module_utils").glob("**/*.py")
)


def test_the_support_matrix_names_the_oldest_node_python() -> None:
    assert "Python 3.8 or newer on the node" in (REPO / "README.md").read_text()
    assert len(NODE_FILES) > 20


@pytest.mark.parametrize("path", NODE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_node_code_parses_with_the_oldest_node_python(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path), feature_version=OLDEST_NODE_PYTHON)
    # PEP 604/585 annotations (str | None, list[str]) only parse on 3.8 as strings.
    annotations = [
        ann
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for ann in [fn.returns, *(a.annotation for a in [*fn.args.args, *fn.args.kwonlyargs])]
        if ann is not None
    ]
    uses_new_annotations = any(isinstance(n, (ast.BinOp, ast.Subscript)) for a in annotations for n in ast.walk(a))
    if uses_new_annotations:
        assert "from __future__ import annotations" in path.read_text(), path.name
