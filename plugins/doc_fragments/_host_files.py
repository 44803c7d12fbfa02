# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Attributes of the modules that write files on the managed host (munge_key, slurm_files); a module's
own attributes refine these. List it before ansible.builtin.action_common_attributes: the first
fragment's value wins."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    description: A second run with the same arguments changes nothing.
    support: full
  platform:
    support: N/A
    platforms: posix
"""
