# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.tenants_plan: the tenants model checked and planned once."""

from __future__ import annotations

DOCUMENTATION = r"""
name: tenants_plan
short_description: Check the research-group tenants model and plan its Slurm accounting and OKE objects
version_added: 0.3.0
author: contributors to the oci_gpu.cluster project
description:
  - Takes C(oci_gpu_tenants) and returns every problem in it (each naming the tenant and the key),
    or the plan the C(oci_gpu.cluster.tenants) role applies.
  - Slurm, one QOS per tier (priority, C(MaxWall), C(MaxTRESPerUser=gres/gpu)), one account per
    tenant (C(GrpTRES=gres/gpu) = its GPU quota, fairshare, the tier's QOS as its only and default
    QOS, C(MaxWall)), each member's associations; members listed in O(remove_users) lose the
    associations with model accounts they are no longer a member of, and nothing else is removed.
  - OKE, per tenant, a namespace with Pod Security labels, a RoleBinding of its IAM group to
    O(oke_role) in that namespace, a ResourceQuota on C(requests.nvidia.com/gpu) and a Kueue
    ClusterQueue (in one cohort, so idle quota is borrowed) with a LocalQueue C(gpu) in the namespace.
positional: _input
options:
  _input:
    description: The tenants (C(oci_gpu_tenants)); see the role's documentation for their keys.
    type: list
    elements: dict
    required: true
  tiers:
    description:
      - Priority tiers by name (C(tenants_tiers)), each with C(priority), C(max_wall), C(max_gpus_per_user), C(flags).
    type: dict
    required: true
  gpu_shapes:
    description: The OKE cluster's GPU shapes (one ResourceFlavor each).
    type: list
    elements: str
  cohort:
    description: The Kueue cohort of the tenants' ClusterQueues.
    type: str
    default: oci-gpu
  remove_users:
    description: Users whose associations with model accounts they are no longer a member of are removed.
    type: list
    elements: str
  remove_tenants:
    description: Former tenants whose Slurm accounts are removed.
    type: list
    elements: str
  oke_role:
    description: The ClusterRole a tenant's IAM group is bound to in its namespace.
    type: str
    default: edit
  directory:
    description:
      - What the controller's name service says of the plan's C(lookup) (the M(oci_gpu.cluster.directory_info)
        result and C(host), the controller's name).
      - With it, a member or group the controller does not know is a problem naming the tenant, and each
        group's members become members of the tenant on Slurm. Without it, groups are not expanded.
    type: dict
"""

EXAMPLES = r"""
- name: Plan the tenants
  ansible.builtin.set_fact:
    planned: "{{ oci_gpu_tenants | oci_gpu.cluster.tenants_plan(tenants_tiers, gpu_shapes=['BM.GPU.H100.8']) }}"
"""

RETURN = r"""
_value:
  description: The problems, or the plan.
  type: dict
  contains:
    problems:
      description: Every problem in the model; when not empty, C(slurm) and C(oke) are empty.
      type: list
      elements: str
    slurm:
      description: C(qos), C(accounts), C(users) (the modules' options) and C(remove_accounts).
      type: dict
    oke:
      description: C(objects) (the Kubernetes objects), C(gpus_by_shape) (the tenants' GPUs per shape) and C(cohort).
      type: dict
    lookup:
      description: C(users) (every member) and C(groups) (every group) to look up on the controller.
      type: dict
"""

from typing import Any


def tenants_plan(
    tenants: Any,
    tiers: Any = None,
    gpu_shapes: Any = None,
    cohort: Any = "oci-gpu",
    remove_users: Any = None,
    remove_tenants: Any = None,
    oke_role: Any = "edit",
    directory: Any = None,
) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.tenants._tenants import plan

    return plan(
        tenants,
        tiers,
        gpu_shapes=gpu_shapes or [],
        cohort=str(cohort or ""),
        remove_users=[] if remove_users is None else remove_users,
        remove_tenants=[] if remove_tenants is None else remove_tenants,
        oke_role=str(oke_role or ""),
        directory=directory,
    )


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"tenants_plan": tenants_plan}
