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
