# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for tests and benchmarks: a running emulator with credentials, and ansible-inventory runs."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..ansible_harness import BIN as VENV_BIN
from ..ansible_harness import COLLECTIONS, JSON_CALLBACK, ansible_env, run_tool
from .keys import Credentials, write_oci_config
from .server import Emulator
from .tenancy import Tenancy

__all__ = ["COLLECTIONS", "VENV_BIN"]


@dataclass
class Running:
    emulator: Emulator
    tenancy: Tenancy
    creds: Credentials
    endpoints: dict[str, str]
    workdir: Path

    def inventory_file(self, name: str = "test", **options: Any) -> Path:
        """Write ``<name>.oci_gpu.yml`` pointing at the emulator; ``options`` are plugin options."""
        doc = {
            "plugin": "oci_gpu.cluster.oci",
            "config_file": str(self.creds.config_file),
            "service_endpoint": dict(self.endpoints),
        }
        doc.update(options)
        path = self.workdir / f"{name}.oci_gpu.yml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path


@contextmanager
def running_emulator(data: dict[str, Any], workdir: Path, **knobs: Any) -> Iterator[Running]:
    tenancy = Tenancy(data)
    creds = write_oci_config(workdir / "oci", tenancy.id, tenancy.home_region)
    emu = Emulator(tenancy, {creds.key_id: creds.public_pem}, **knobs)
    endpoints = emu.start()
    try:
        yield Running(emu, tenancy, creds, endpoints, workdir)
    finally:
        emu.stop()


@dataclass
class InventoryRun:
    rc: int
    stdout: str
    stderr: str
    wall_s: float
    max_rss_mb: float
    cpu_s: float = 0.0

    @property
    def data(self) -> dict[str, Any]:
        """The --list JSON with ansible-core 2.19's ``{"__ansible_unsafe": v}`` markers unwrapped."""
        return _unwrap(json.loads(self.stdout))


def _unwrap(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and "__ansible_unsafe" in value:
            return value["__ansible_unsafe"]
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def inventory_env(path: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment an ansible command reads the inventory ``path`` with: this checkout's
    collection, the oci plugin alone, an unparsed source failing the run."""
    full_env = ansible_env(
        ANSIBLE_INVENTORY_ENABLED="oci_gpu.cluster.oci",
        ANSIBLE_INVENTORY_UNPARSED_FAILED="true",
        ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="true",
        ANSIBLE_DEPRECATION_WARNINGS="false",
        ANSIBLE_LOCAL_TEMP=str(path.parent / ".ansible-tmp"),
        ANSIBLE_HOME=str(path.parent / ".ansible-home"),
    )
    full_env.update(env or {})
    return full_env


def ansible_inventory(path: Path, *extra: str, env: dict[str, str] | None = None, timeout: float = 300) -> InventoryRun:
    """Run the real ``ansible-inventory --list`` on ``path``; returns output, wall time and peak RSS."""
    full_env = inventory_env(path, env)
    # A small launcher process forks ansible-inventory and reports its rusage: Linux counts the
    # memory a child inherits before exec in its peak RSS, so forking from a big test or benchmark
    # process would report that process's size instead of ansible-inventory's.
    with tempfile.NamedTemporaryFile("r", suffix=".json") as usage_file:
        cmd = [sys.executable, "-c", _LAUNCHER, usage_file.name, str(VENV_BIN / "ansible-inventory")]
        start = time.monotonic()
        proc = subprocess.run(
            [*cmd, "-i", str(path), "--list", *extra],
            capture_output=True,
            env=full_env,
            timeout=timeout,
            check=False,
        )
        wall = time.monotonic() - start
        usage = json.loads(usage_file.read() or "{}")
    return InventoryRun(
        proc.returncode,
        proc.stdout.decode(),
        proc.stderr.decode(),
        wall,
        usage.get("maxrss_kb", 0) / 1024,
        usage.get("cpu_s", 0.0),
    )


_LAUNCHER = """
import json, os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_pid, status, ru = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump({"maxrss_kb": ru.ru_maxrss, "cpu_s": ru.ru_utime + ru.ru_stime}, f)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_oci_module(emu: Running, module: str, args: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    """Run one OCI module (``oci_gpu.cluster.<module>``) against the emulator through ``ansible``;
    returns (exit status, the task result, all output)."""
    region = emu.tenancy.home_region
    args = {"config_file": str(emu.creds.config_file), "service_endpoint": emu.endpoints[region], **args}
    return run_module(module, args, emu.workdir)


def run_module(
    module: str, args: dict[str, Any], workdir: Path, timeout: float = 120
) -> tuple[int, dict[str, Any], str]:
    """Run ``oci_gpu.cluster.<module>`` with ``args`` on localhost through ``ansible`` (the JSON
    callback); returns (exit status, the task result, all output)."""
    env = ansible_env(**JSON_CALLBACK, ANSIBLE_LOCAL_TEMP=str(workdir / ".tmp"), ANSIBLE_HOME=str(workdir / ".ansible"))
    res = run_tool(
        "ansible",
        "localhost",
        "-c",
        "local",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-m",
        f"oci_gpu.cluster.{module}",
        "-a",
        json.dumps(args),
        env=env,
        timeout=timeout,
    )
    try:
        out = json.loads(res.stdout)
        task = out["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError):
        task = {}
    return res.returncode, task, res.stdout + res.stderr
