# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.capacity_plan: the nodes a capacity run launches and removes."""

from __future__ import annotations

DOCUMENTATION = r"""
name: capacity_plan
short_description: Decide the nodes a capacity run launches and removes, and every reason to refuse
version_added: 0.3.0
author: contributors to the oci_gpu.cluster project
description:
  - Used once per run by the C(oci_gpu.cluster.capacity) playbook, on the control node.
  - Names to launch come from C(add) (a list) or from C(pattern) (with C({n})) for a count, taking the
    lowest indices whose names are not inventory hosts yet.
  - Only compute nodes found through OCI (with an C(oci_id)) are removed; controllers, dbd and login
    hosts never are. More than C(max_add) or C(max_remove) nodes at once is refused.
positional: _input, inventory
options:
  _input:
    description: The request, C(add) (count or list), C(pattern), C(remove) (list), C(max_add), C(max_remove).
    type: dict
    required: true
  inventory:
    description: C(hosts) (all), C(compute), C(protected) (controllers, dbd, login) and C(oci_ids) (host to OCID).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Plan two more GPU nodes
  ansible.builtin.set_fact:
    plan: "{{ {'add': 2, 'pattern': 'gpu{n}', 'remove': []} | oci_gpu.cluster.capacity_plan(inv) }}"
"""

RETURN = r"""
_value:
  description: C(add) (names), C(remove) (C(name), C(instance_id)) and C(errors) (messages; empty when it may go on).
  type: dict
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def capacity_plan(request: Any, inventory: Any) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci._capacity import plan

    if not isinstance(request, dict) or not isinstance(inventory, dict):
        raise AnsibleFilterError("capacity_plan: expected a request mapping and an inventory mapping")
    return plan(dict(request), dict(inventory))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"capacity_plan": capacity_plan}
