# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The repair role copies the agent's code to the controller file by file (``__repair_files``): every
collection module the agent imports, directly or not, must be in that list, or the agent dies on the
controller with an ImportError that only a lab run would show."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
UTILS = REPO / "plugins" / "module_utils"
PREFIX = "ansible_collections.oci_gpu.cluster.plugins.module_utils."


def _imports(rel: str) -> set[str]:
    tree = ast.parse((UTILS / rel).read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            mod = node.module[len(PREFIX) :]
            if "." in mod:  # from ...module_utils.slurm._reservation import NAME
                found.add(mod.replace(".", "/") + ".py")
            else:  # from ...module_utils.oci import _auth
                found |= {f"{mod}/{alias.name}.py" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name[len(PREFIX) :].replace(".", "/") + ".py" for a in node.names if a.name.startswith(PREFIX)}
    return found


def test_the_agents_files_are_its_whole_import_closure() -> None:
    listed = yaml.safe_load((REPO / "roles" / "repair" / "vars" / "main.yml").read_text())["__repair_files"]
    seen: set[str] = set()
    todo = ["repair/_agent.py", "power/_agent.py"]  # the repair agent's, and the elastic role's
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        todo += sorted(_imports(rel) - seen)
    assert seen == set(listed), f"missing: {sorted(seen - set(listed))}; not needed: {sorted(set(listed) - seen)}"
