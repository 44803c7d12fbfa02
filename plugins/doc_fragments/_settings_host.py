# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""O(host) of the filters that check a host's settings and name the host in every problem they return
(identity_plan, slurm_access_problems)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  host:
    description: The host the settings are for (named in every problem).
    type: str
    required: true
"""
