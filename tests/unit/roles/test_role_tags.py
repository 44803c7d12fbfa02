# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Role tags select steps that work on their own: read statically from the task files.

``--tags <role>_configure`` (or any other sub-tag) must run the checks and the plan the step needs,
so the steps every later step reads (the preflight; Slurm's probe and plan) carry every sub-tag of
their role; an include passes its tags on to what it includes (``apply``); every task file is
reached from main.yml or a handler. The playbooks' ``include_role`` steps do the same. A run of
each role with ``--check --tags <role>_configure`` is in the lab (storage_shared_bookworm's verify)
and in tests/integration/test_oke_addons.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = sorted(p.name for p in (REPO / "roles").iterdir() if (p / "tasks" / "main.yml").is_file())

# Written out here, not derived from the files under test: each role's step tags, and the task
# files whose results later steps read (they must run whichever step is asked for).
SUB_TAGS = {
    "fss_mount": {"install", "configure"},
    "gpu_node": {"configure", "service"},
    "lustre_client": {"install", "configure", "service"},
    "munge": {"install", "configure", "service"},
    "nvme_scratch": {"install", "configure", "service"},
    "oke_addons": {"install", "configure"},
    "slurm": {"install", "configure", "service"},
    "tenants": {"configure"},
    "repair": {"install", "configure"},
    "elastic": {"install", "configure"},
    "monitoring": {"install", "configure", "service"},
    "identity": {"install", "configure", "service"},
}
READ_BY_LATER_STEPS = {
    "slurm": {
        "preflight.yml": {"install", "configure", "service"},
        "probe.yml": {"configure", "service"},
        "plan.yml": {"configure", "service"},
    },
}
INCLUDES = ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks")


def _tasks(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every task of a task list, blocks opened (a block's tags are its tasks' tags too)."""
    out = []
    for item in items or []:
        if "block" in item:
            inherited = set(item.get("tags", []))
            for sub in _tasks(item["block"]) + _tasks(item.get("rescue", [])) + _tasks(item.get("always", [])):
                out.append({**sub, "tags": sorted(inherited | set(sub.get("tags", [])))})
        else:
            out.append(item)
    return out


def _include(task: dict[str, Any]) -> tuple[str, set[str], set[str] | None] | None:
    """(file, the include's tags, its apply tags or None for an import) of an import/include task."""
    for key in INCLUDES:
        if key in task:
            args = task[key]
            args = {"file": args} if isinstance(args, str) else args
            apply = None if key.endswith("import_tasks") else set((args.get("apply") or {}).get("tags", []))
            name = args["file"]
            return name, set(task.get("tags", [])), apply
    return None


def _load(path: Path) -> list[dict[str, Any]]:
    return _tasks(yaml.safe_load(path.read_text()) or [])


def test_the_roles_are_the_ones_written_out_here() -> None:
    assert set(ROLES) == set(SUB_TAGS)


@pytest.mark.parametrize("role", ROLES)
def test_main_steps_carry_the_role_tag_and_the_tags_their_results_are_read_by(role: str) -> None:
    tags = {f"{role}_{step}" for step in SUB_TAGS[role]}
    needs = {"preflight.yml": SUB_TAGS[role], **READ_BY_LATER_STEPS.get(role, {})}
    steps = [inc for inc in map(_include, _load(REPO / "roles" / role / "tasks" / "main.yml")) if inc]
    assert {step[0] for step in steps} >= set(needs), f"{role}: main.yml lacks a step of {sorted(needs)}"
    seen = set()
    for name, own, apply in steps:
        assert role in own, f"{role}: main.yml's step {name} lacks the tag {role}"
        assert own - {role} <= tags, f"{role}: {name} has tags {sorted(own)} outside {sorted(tags)}"
        want = {role} | {f"{role}_{step}" for step in needs.get(name, set())}
        assert own >= want, f"{role}: {name} runs under {sorted(own)}; it must also run under {sorted(want - own)}"
        if apply is not None:
            assert apply == own, (
                f"{role}: the include of {name} applies {sorted(apply)} to its tasks, not {sorted(own)}"
            )
        seen |= own
    assert seen - {role} == tags, f"{role}: main.yml's steps use {sorted(seen)}, not every one of {sorted(tags)}"


@pytest.mark.parametrize("role", ROLES)
def test_nested_includes_pass_their_tags_on_and_every_task_file_is_reached(role: str) -> None:
    tasks_dir = REPO / "roles" / role / "tasks"
    reached = {"main.yml"}
    for path in sorted(tasks_dir.glob("*.yml")):
        for inc in map(_include, _load(path)):
            if not inc:
                continue
            name, own, apply = inc
            reached.add(name)
            if path.name != "main.yml" and apply is not None:
                # An include's own tags come from the step that imports its file; what it includes
                # gets only the apply tags, which must keep the role's.
                assert role in apply, f"{role}: {path.name} includes {name} applying {sorted(apply)}, without {role}"
                assert not own or apply == own, (
                    f"{role}: {path.name} includes {name} applying {sorted(apply)}, not {sorted(own)}"
                )
    handlers = REPO / "roles" / role / "handlers" / "main.yml"
    if handlers.is_file():
        reached |= {inc[0] for inc in map(_include, _load(handlers)) if inc}
    # entry points the playbooks include by name (the slurm role's run lock)
    entries = [s[2]["ansible.builtin.include_role"].get("tasks_from") for s in _playbook_role_steps() if s[1] == role]
    reached |= {f"{name}.yml" for name in entries if name}
    assert {p.name for p in tasks_dir.glob("*.yml")} == reached, f"{role}: task files nothing includes"


def _playbook_role_steps() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in sorted((REPO / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()) or []:
            for task in _tasks(play.get("tasks", [])):
                args = task.get("ansible.builtin.include_role")
                if args:
                    out.append((path.name, args["name"].rsplit(".", 1)[-1], task))
    return out


def test_there_are_playbook_role_steps_to_check() -> None:
    assert {step[1] for step in _playbook_role_steps()} >= {"munge", "slurm", "fss_mount", "nvme_scratch"}


@pytest.mark.parametrize("step", _playbook_role_steps(), ids=lambda s: f"{s[0]}:{s[2]['name']}")
def test_playbook_role_steps_run_under_each_of_their_roles_tags(step: tuple[str, str, dict[str, Any]]) -> None:
    role, task = step[1], step[2]
    args = task["ansible.builtin.include_role"]
    own, apply = set(task.get("tags", [])), set((args.get("apply") or {}).get("tags", []))
    if (role, args.get("tasks_from")) == ("slurm", "run_lock"):
        # one run at a time holds for a run with any tags: the lock is taken and given back under all of them
        assert own == apply == {"always"}, f"{task['name']}: the run lock runs under {sorted(own)}, not always"
        return
    tags = {role} | {f"{role}_{s}" for s in SUB_TAGS[role]}
    assert own == tags, f"{task['name']}: include_role runs under {sorted(own)}, not every tag of {role}"
    if args.get("tasks_from") in (None, "main"):
        # The role's own tasks carry its sub-tags; the include adds only the role tag.
        assert apply == {role}, f"{task['name']}: apply tags {sorted(apply)}"
    else:
        assert args["tasks_from"] == "preflight", (
            f"{task['name']}: tasks_from {args['tasks_from']} (validated entry: preflight)"
        )
        assert apply == tags, f"{task['name']}: preflight's tasks run under {sorted(apply)}, not {sorted(tags)}"
