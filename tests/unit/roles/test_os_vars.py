# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""One OS-variables rule in every role that manages a node: the same lookup, ending in default.yml,
and a default.yml that sets every variable the distribution files set."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
# Written out here: the lookup every role's preflight makes, most specific first.
LOOKUP = [
    "{{ ansible_facts['distribution'] }}_{{ ansible_facts['distribution_major_version'] }}.yml",
    "{{ ansible_facts['os_family'] }}_{{ ansible_facts['distribution_major_version'] }}.yml",
    "{{ ansible_facts['os_family'] }}.yml",
    "default.yml",
]
NODE_ROLES = ["fss_mount", "identity", "lustre_client", "munge", "nvme_scratch", "slurm"]


def test_the_node_roles_are_every_role_but_the_control_node_one() -> None:
    # oke_addons runs on the control node against the OCI API; gpu_node installs no package and
    # reads the same paths and units on every distribution; tenants calls sacctmgr, which Slurm's
    # packages put on the path everywhere; repair runs on the controller, which is Debian (bookworm,
    # trixie) only, and installs python3-venv, and elastic through repair's install; monitoring installs
    # Debian's prometheus packages (bookworm, trixie): none loads OS variables.
    assert sorted(p.name for p in (REPO / "roles").iterdir()) == sorted(
        [*NODE_ROLES, "gpu_node", "oke_addons", "tenants", "repair", "elastic", "monitoring"]
    )


@pytest.mark.parametrize("role", NODE_ROLES)
def test_the_lookup_is_the_same_in_every_role(role: str) -> None:
    tasks = yaml.safe_load((REPO / "roles" / role / "tasks" / "preflight.yml").read_text())
    first = tasks[0]
    assert "ansible.builtin.include_vars" in first, f"{role}: the preflight's first task loads the OS variables"
    candidates = first["vars"][f"__{role}_vars_candidates"]
    assert candidates == {"files": LOOKUP, "paths": ["{{ role_path }}/vars"]}


@pytest.mark.parametrize("role", NODE_ROLES)
def test_default_sets_what_every_distribution_file_sets(role: str) -> None:
    vars_dir = REPO / "roles" / role / "vars"
    default = set(yaml.safe_load((vars_dir / "default.yml").read_text()) or {})
    for path in sorted(vars_dir.glob("*.yml")):
        if path.name in ("main.yml", "default.yml"):
            continue
        keys = set(yaml.safe_load(path.read_text()) or {})
        assert keys <= default, f"{role}: {path.name} sets {sorted(keys - default)}, which default.yml does not"
