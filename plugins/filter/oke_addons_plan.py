# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.oke_addons_plan: the oke_addons role's add-on plan, in one place."""

from __future__ import annotations

DOCUMENTATION = r"""
name: oke_addons_plan
short_description: Order the OKE managed add-ons, merge their configurations and say what is not offered
version_added: 0.3.0
author: contributors to the oci_gpu.cluster project
description:
  - Takes the C(oci_gpu.cluster.oke_addons) role's add-on list and returns the plan the role applies
    one add-on at a time, in dependency order (Node Feature Discovery, OKE's own GPU plugin, the GPU
    operator, the network operator, then the rest; unknown add-ons last).
  - Each add-on's configurations are the role's defaults (OKE GPU images carry the NVIDIA driver and
    the Mellanox OFED stack, so the operators install neither; the operators' bundled NFD stays off)
    with the user's own over them; the network operator's SR-IOV resource list names one RDMA
    resource per GPU shape with RDMA NICs.
  - The network operator is planned only with O(rdma_enabled) and a GPU shape with RDMA NICs; with
    O(disable_nvidia_gpu_plugin) and the GPU operator asked for, OKE's own GPU plugin is disabled.
  - Input errors (an add-on named twice, a configuration value that is not a string) are found
    without any call; what the cluster's Kubernetes version is not offered only when O(options) is
    given.
positional: _input
options:
  _input:
    description:
      - The add-ons (C(oke_addons_addons)), each with C(name) and optional C(state), C(version),
        C(configurations).
    type: list
    elements: dict
    required: true
  versions:
    description: Pinned versions by add-on name (C(oke_addons_versions)).
    type: dict
  gpu_shapes:
    description: The C(gpu_shapes) that C(oci_gpu.cluster.oke_cluster_info) returns.
    type: list
    elements: dict
  options:
    description:
      - The C(options) that C(oci_gpu.cluster.oke_addon_info) returns for the cluster's Kubernetes version.
      - Omitted, nothing is checked against what OKE offers.
    type: list
    elements: dict
  rdma_enabled:
    description: Plan the network operator where a GPU shape has RDMA NICs.
    type: bool
    default: true
  gpu_driver_enabled:
    description: Let the GPU operator install the NVIDIA driver.
    type: bool
    default: false
  disable_nvidia_gpu_plugin:
    description: Disable OKE's own GPU plugin when the GPU operator is asked for.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Plan the managed add-ons
  ansible.builtin.set_fact:
    planned: >-
      {{ oke_addons_addons | oci_gpu.cluster.oke_addons_plan(versions=oke_addons_versions,
         gpu_shapes=cluster.gpu_shapes, options=offered.options) }}
"""

RETURN = r"""
_value:
  description: The plan and what it was made from.
  type: dict
  contains:
    plan:
      description:
        - Add-ons in the order they are applied, each with C(name), C(state), C(version) (None when
          not pinned), C(configurations) (None when empty) and C(order).
      type: list
      elements: dict
    rdma_shapes:
      description: The GPU shapes with RDMA NICs.
      type: list
      elements: dict
    rdma_resources:
      description: The SR-IOV device plugin's resource list.
      type: list
      elements: dict
    not_offered:
      description: One message per present add-on or version that OKE does not offer.
      type: list
      elements: str
    errors:
      description: Input errors, then the not-offered messages; empty when the plan can be applied.
      type: list
      elements: str
"""

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean


def oke_addons_plan(
    addons: Any,
    versions: Any = None,
    gpu_shapes: Any = None,
    options: Any = None,
    rdma_enabled: Any = True,
    gpu_driver_enabled: Any = False,
    disable_nvidia_gpu_plugin: Any = True,
) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci._oke import plan_addons

    if not isinstance(addons, list) or not all(isinstance(a, Mapping) for a in addons):
        raise AnsibleFilterError(f"oke_addons_plan: oke_addons_addons must be a list of mappings, got {addons!r}")
    return plan_addons(
        [dict(a) for a in addons],
        versions=dict(versions or {}),
        gpu_shapes=list(gpu_shapes or []),
        options=None if options is None else list(options),
        rdma_enabled=boolean(rdma_enabled),
        gpu_driver_enabled=boolean(gpu_driver_enabled),
        disable_nvidia_gpu_plugin=boolean(disable_nvidia_gpu_plugin),
    )


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"oke_addons_plan": oke_addons_plan}
