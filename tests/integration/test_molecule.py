# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run every molecule scenario (molecule/*/molecule.yml) with ``molecule test`` in the podman lab."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lab"))

import labtest  # noqa: E402

SCENARIOS = sorted(p.parent.name for p in (REPO / "molecule").glob("*/molecule.yml"))
MOLECULE = Path(sys.executable).parent / "molecule"
TIMEOUT = int(os.environ.get("OCI_GPU_LAB_MOLECULE_TIMEOUT", "2400"))


def _platforms() -> dict[str, list[dict[str, Any]]]:
    out = {}
    for name in SCENARIOS:
        data = yaml.safe_load((REPO / "molecule" / name / "molecule.yml").read_text()) or {}
        out[name] = data.get("platforms") or []
    return out


def test_platform_names_and_networks_are_unique_and_local() -> None:
    """Platform names are global podman container names: two scenarios must never share one."""
    seen: dict[str, str] = {}
    nets: dict[str, str] = {}
    for scenario, platforms in _platforms().items():
        assert platforms, f"{scenario}: no platforms"
        for p in platforms:
            assert p["name"] not in seen, f"platform {p['name']} is in {seen.get(p['name'])} and {scenario}"
            seen[p["name"]] = scenario
            net = p.get("network")
            assert net, f"{scenario}/{p['name']}: give every platform the scenario's own network (IMDS needs it)"
            assert nets.setdefault(net, scenario) == scenario, f"network {net} is shared by {nets[net]} and {scenario}"
            assert str(p.get("image", "")).startswith("localhost/oci-gpu-lab/"), f"{p['name']}: not a lab image"
            assert p.get("pre_build_image") is True and p.get("pull") is False, f"{p['name']}: must not pull or build"


@pytest.fixture(scope="session")
def lab_ready() -> None:
    labtest.ensure_ready()


@pytest.mark.slow
@pytest.mark.molecule
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario: str, lab_ready: None, request: pytest.FixtureRequest) -> None:
    started = time.monotonic()
    times = request.config.__dict__.setdefault("oci_gpu_scenario_times", {})
    try:
        _run_scenario(scenario)
    finally:
        times[scenario] = time.monotonic() - started


def _run_scenario(scenario: str) -> None:
    env = dict(os.environ)
    env["PATH"] = f"{MOLECULE.parent}:{env.get('PATH', '')}"
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", str(REPO / "build" / "collections"))
    env.setdefault("ANSIBLE_COLLECTIONS_SCAN_SYS_PATH", "true")
    env["ANSIBLE_FORCE_COLOR"] = "0"
    env["NO_COLOR"] = "1"
    try:
        res = subprocess.run(
            [str(MOLECULE), "test", "-s", scenario],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        subprocess.run([str(MOLECULE), "destroy", "-s", scenario], cwd=REPO, env=env, capture_output=True, check=False)
        pytest.fail(f"molecule test -s {scenario} ran past {TIMEOUT} s; last output:\n{out[-6000:]}")
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-120:])
        pytest.fail(f"molecule test -s {scenario} failed (exit {res.returncode}); last lines:\n{tail}")
