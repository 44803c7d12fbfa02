# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the OKE modules that act on one cluster (oke_addon, oke_cluster_info) share: the cluster, and
their attributes; a module's own entries refine these.

Argument spec: ``_oke.oke_cluster_argspec()``."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  cluster_id:
    description: OCID of the OKE cluster.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    details: Reads only; no write call is made.
  diff_mode:
    support: full
  idempotent:
    description: A second run with the same arguments changes nothing.
    support: full
"""
