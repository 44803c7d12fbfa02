# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one of the collection's modules on localhost with ansible-core, as a task would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
ANSIBLE = Path(sys.executable).with_name("ansible")


def args_option(args: dict) -> list[str]:
    """``-a <json>``; none for a module without arguments ("-a {}" is not read as JSON)."""
    return ["-a", json.dumps(args)] if args else []


def run_module(module: str, args: dict, *extra: str) -> dict:
    """The module's result for localhost (``ansible localhost -m oci_gpu.cluster.<module>``)."""
    return run_module_from(f"oci_gpu.cluster.{module}", args, *extra)


def run_module_from(module: str, args: dict, *extra: str) -> dict:
    """Any module's result for localhost, by its full name (``ansible.posix.mount``)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "build" / "collections"), ANSIBLE_STDOUT_CALLBACK="json")
    env["ANSIBLE_LOAD_CALLBACK_PLUGINS"] = "1"
    proc = subprocess.run(
        [str(ANSIBLE), "localhost", "-c", "local", "-m", module, *args_option(args), *extra],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    data = json.loads(proc.stdout[proc.stdout.index("{") :])
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]
