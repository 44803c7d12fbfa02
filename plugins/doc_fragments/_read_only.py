# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Attributes of the modules that only read (a module's own attributes refine these)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
    details: It only reads, so it runs the same in check mode.
  diff_mode:
    support: none
  idempotent:
    description: It only reads; it never changes anything.
    support: full
"""
