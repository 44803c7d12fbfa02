# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Attributes of the modules that only read (a module's own attributes refine these).

Where two fragments set the same attribute, the one listed first wins: a module that reads the managed
host lists this one before ansible.builtin.action_common_attributes (so its platform support is full),
the OCI API modules list it after it (their platform is N/A, as oci_gpu.cluster._oci_service says)."""

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
  platform:
    support: full
    platforms: posix
"""
