# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every role input is in defaults/main.yml once and in meta/argument_specs.yml with the same default."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES = sorted(p for p in (Path(__file__).resolve().parents[3] / "roles").iterdir() if (p / "defaults").is_dir())


def test_there_are_roles_to_check() -> None:
    assert {p.name for p in ROLES} >= {"munge", "slurm"}


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_argument_specs_mirror_defaults(role: Path) -> None:
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
    options = specs["options"]
    assert sorted(defaults) == sorted(options), f"{role.name}: defaults and argument_specs list different inputs"
    for key, value in defaults.items():
        assert key.startswith(f"{role.name}_"), f"{role.name}: input {key} lacks the role prefix"
        spec = options[key]
        assert spec.get("description"), f"{role.name}: {key} has no description"
        assert spec.get("default") == value, f"{role.name}: {key} default differs: {spec.get('default')!r} != {value!r}"
    for attr in ("check_mode", "diff_mode", "idempotent"):
        assert attr in specs.get("attributes", {}), f"{role.name}: argument_specs lacks attribute {attr}"


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_meta_main_is_not_standalone(role: Path) -> None:
    meta = yaml.safe_load((role / "meta" / "main.yml").read_text())
    assert meta["galaxy_info"]["standalone"] is False


# playbooks/slurm.yml runs these roles with rolespec_validate: false, because its first play validated
# the same options through the preflight entry point: the two specs must stay the same.
@pytest.mark.parametrize("name", ["gpu_node", "munge", "slurm"])
def test_the_preflight_spec_validates_what_main_would(name: str) -> None:
    role = next(p for p in ROLES if p.name == name)
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert specs["preflight"]["options"] == specs["main"]["options"]
    playbook = (role.parents[1] / "playbooks" / "slurm.yml").read_text()
    assert f"name: oci_gpu.cluster.{name}\n" in playbook


def test_the_slurm_playbook_skips_only_validations_its_first_play_made() -> None:
    plays = yaml.safe_load((ROLES[0].parents[1] / "playbooks" / "slurm.yml").read_text())
    first = yaml.safe_dump(plays[1])
    unvalidated = []
    for play in plays[2:]:
        for task in play.get("tasks", []):
            for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
                args = task.get(key)
                if args and args.get("rolespec_validate") is False:
                    unvalidated.append(args["name"])
    assert sorted(unvalidated) == ["oci_gpu.cluster.gpu_node", "oci_gpu.cluster.munge", "oci_gpu.cluster.slurm"]
    for name in unvalidated:
        assert f"name: {name}\n" in first and "tasks_from: preflight" in first
