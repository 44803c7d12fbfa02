# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run one of the collection's modules on localhost with ansible-core, as a task would (through the
one harness, tests/ansible_harness.py)."""

from __future__ import annotations

from ansible_harness import args_option
from ansible_harness import run_module as run_module_from

__all__ = ["args_option", "run_module", "run_module_from"]


def run_module(module: str, args: dict, *extra: str) -> dict:
    """The module's result for localhost (``ansible localhost -m oci_gpu.cluster.<module>``)."""
    return run_module_from(f"oci_gpu.cluster.{module}", args, *extra)
