# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one place that builds an Ansible environment for the tests and runs Ansible in it.

Every test that starts ``ansible``, ``ansible-playbook`` or ``ansible-doc`` goes through here
(directly, or through the fixtures in tests/conftest.py), so the collections path, the settings the
collection is held to (``inject_facts_as_vars: false``) and the caller-independence (no inherited
``ANSIBLE_*``) are written once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BUILD_COLLECTIONS = REPO / "build" / "collections"
COLLECTIONS = Path(os.environ.get("OCI_GPU_TEST_COLLECTIONS", str(BUILD_COLLECTIONS)))
BIN = Path(sys.executable).parent


def link_collection() -> Path:
    """Make this checkout importable as ``ansible_collections.oci_gpu.cluster``: the collection lives
    at the repository root, reached through a symlink tree under ``build/collections`` that goes on
    ``sys.path`` (for the tests, the benchmarks and the Ansible runs alike)."""
    link = BUILD_COLLECTIONS / "ansible_collections" / "oci_gpu" / "cluster"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # a concurrent run won the race
            os.symlink(REPO, link)
    if str(BUILD_COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(BUILD_COLLECTIONS))
    return BUILD_COLLECTIONS


def ansible_env(**overrides: str) -> dict[str, str]:
    """This process's environment without the caller's ``ANSIBLE_*`` settings, plus the collection's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="true",  # ansible.posix and friends from the `ansible` package
        ANSIBLE_INJECT_FACT_VARS="false",  # roles read facts only as ansible_facts['x']
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_RETRY_FILES_ENABLED="0",
    )
    env.update(overrides)
    return env


QUIET = {"ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0"}
JSON_CALLBACK = {"ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"}


def run_tool(
    tool: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """An Ansible command line tool (``ansible-doc``, ``ansible-playbook``...) from this Python's venv."""
    return subprocess.run(
        [str(BIN / tool), *args],
        env=env or ansible_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def playbook_argv(play: Path, *args: str, host: str = "node1", variables: Path | None = None) -> list[str]:
    """``ansible-playbook`` on one host over the local connection with this Python, ``-e @variables``."""
    argv = [str(BIN / "ansible-playbook"), "-i", f"{host},", "-c", "local", str(play)]
    argv += ["-e", f"ansible_python_interpreter={sys.executable}"]
    if variables is not None:
        argv += ["-e", f"@{variables}"]
    return [*argv, *args]


def write_playbook(
    tmp: Path, plays: list[dict[str, Any]], variables: dict[str, Any] | None = None, name: str = "play"
) -> tuple[Path, Path | None]:
    """``tmp/<name>.yml`` and, when there are variables, ``tmp/vars.json``."""
    play = tmp / f"{name}.yml"
    play.write_text(json.dumps(plays))
    if variables is None:
        return play, None
    (tmp / "vars.json").write_text(json.dumps(variables))
    return play, tmp / "vars.json"


def run_playbook(
    tmp: Path,
    plays: list[dict[str, Any]],
    variables: dict[str, Any] | None = None,
    *args: str,
    host: str = "node1",
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Write ``plays`` (and ``variables``) under ``tmp`` and run them on ``host``, locally."""
    play, vars_file = write_playbook(tmp, plays, variables)
    return subprocess.run(
        playbook_argv(play, *args, host=host, variables=vars_file),
        capture_output=True,
        text=True,
        env=env or ansible_env(),
        timeout=timeout,
        check=False,
    )


def start_playbook(play: Path, host: str = "node1") -> subprocess.Popen[str]:
    """``run_playbook`` in the background, stdout and stderr as one stream."""
    return subprocess.Popen(
        playbook_argv(play, host=host), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ansible_env()
    )


def shown(res: subprocess.CompletedProcess[str], stderr: bool = True) -> str:
    """What the run printed (``stderr=False``: its stdout only). ansible-core 2.17 and 2.18 show a failure
    only as its result's JSON, so their quotes in a message come escaped (2.19 also prints the message itself)."""
    return (res.stdout + (res.stderr if stderr else "")).replace('\\"', '"')


def recap_counts(out: str, host: str) -> dict[str, int]:
    """``host``'s line of the PLAY RECAP in a run's output as numbers (``{"ok": 5, "changed": 0, ...}``);
    ``{}`` when there is none."""
    line = re.search(rf"^{re.escape(host)}\s+:\s+(.*)$", out, re.M)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line.group(1))} if line else {}


def args_option(args: dict[str, Any]) -> list[str]:
    """``-a <json>``; none for a module without arguments ("-a {}" is not read as JSON)."""
    return ["-a", json.dumps(args)] if args else []


def run_adhoc(
    module: str, *argv: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """``ansible localhost -m <module> <argv>`` with the json callback: (localhost's result, the run)."""
    proc = run_tool(
        "ansible", "localhost", "-c", "local", "-m", module, *argv, env=env or ansible_env(**JSON_CALLBACK), cwd=cwd
    )
    start = proc.stdout.find("{")
    assert start >= 0, f"ansible printed no JSON (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    data = json.loads(proc.stdout[start:])
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"], proc


def run_module(module: str, args: dict[str, Any], *extra: str) -> dict[str, Any]:
    """A module's result for localhost, by its full name (``ansible.posix.mount``)."""
    return run_adhoc(module, *args_option(args), *extra)[0]
