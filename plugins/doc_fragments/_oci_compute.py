# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the OCI compute modules (compute_instance, instance_pool) share: the cluster tag guard, the
polling interval and their attributes; a module's own entries refine these.

Argument spec: ``_compute.compute_argspec()``, which also holds O(compartment_id) and O(cluster): each
module documents those itself, since what they name differs."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  cluster_tag:
    description: The defined tag (C(<namespace>.<key>)) that names an instance's cluster.
    type: str
    default: oci-gpu.cluster
  poll_interval:
    description: Seconds between polls.
    type: float
    default: 5
attributes:
  check_mode:
    support: full
    details: Reads only; reports the writes it would make.
  diff_mode:
    support: none
  idempotent:
    description: A second run with the same arguments changes nothing.
    support: full
"""
