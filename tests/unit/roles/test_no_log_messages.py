# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""``no_log`` hides a secret, and with it the task's own error: a user would read "the output has
been hidden" instead of what is wrong (issue 15). So every ``no_log`` task in a role lets its
failure through to a later ``assert`` in the same file that reads the registered result and says
what failed (without the secret). Read statically from the task files; the lab's canary passes
(tests/integration/test_molecule.py) run them for real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]


def _tasks(items: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items or []:
        out.append(item)
        for key in ("block", "rescue", "always"):
            out.extend(_tasks(item.get(key)))
    return out


def _no_log_tasks() -> list[tuple[str, int, dict[str, Any], list[dict[str, Any]]]]:
    found = []
    for path in sorted((REPO / "roles").glob("*/tasks/*.yml")):
        tasks = _tasks(yaml.safe_load(path.read_text()))
        for i, task in enumerate(tasks):
            if task.get("no_log") is True:
                found.append((str(path.relative_to(REPO)), i, task, tasks[i + 1 :]))
    return found


NO_LOG_TASKS = _no_log_tasks()


def test_the_roles_have_no_log_tasks() -> None:
    # the munge key (read, written, credentials) and the accounting database user
    assert len(NO_LOG_TASKS) >= 5


@pytest.mark.parametrize(
    "path,index,task,later", NO_LOG_TASKS, ids=[f"{entry[0]}:{entry[2].get('name')}" for entry in NO_LOG_TASKS]
)
def test_a_no_log_task_reports_its_failure_in_a_later_assert(
    path: str, index: int, task: dict[str, Any], later: list[dict[str, Any]]
) -> None:
    register = task.get("register")
    assert register, f"{path}: {task.get('name')!r} has no_log but registers nothing a later task could report"
    lets_failure_through = task.get("ignore_errors") is True or task.get("failed_when") is False
    assert lets_failure_through, (
        f"{path}: {task.get('name')!r} fails with its output hidden; let the failure through "
        "(ignore_errors: true or failed_when: false) and report it in an assert"
    )
    asserts = [t for t in later if "ansible.builtin.assert" in t and register in str(t["ansible.builtin.assert"])]
    assert asserts, f"{path}: no assert after {task.get('name')!r} reads {register}"
    for a in asserts:
        body = a["ansible.builtin.assert"]
        assert a.get("no_log") is not True, f"{path}: the assert on {register} hides its own message"
        assert "fail_msg" in body or "msg" in body, f"{path}: the assert on {register} says nothing"
