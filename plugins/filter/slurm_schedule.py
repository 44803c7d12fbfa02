# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_schedule: the restarts and reconfigure one host needs, in order."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_schedule
short_description: The Slurm daemons one host restarts or reconfigures after its files were written, and why
version_added: 0.3.0
author: contributors to the oci_gpu.cluster project
description:
  - From the names of the files a host's apply changed (M(oci_gpu.cluster.slurm_files)'s C(changed_names)), the
    host's entry of M(oci_gpu.cluster.slurm_cluster_plan)'s C(hosts) and the cluster-wide C(plan), the ordered
    steps - slurmdbd restart, slurmctld restart, reconfigure (primary controller), slurmd restart - each with its
    handler name and reasons. The slurm role notifies the handlers it names.
  - One Python function owns the decision; the role holds no rule of its own.
options:
  _input:
    description: The names of the files that changed (or would, in check mode) on this host.
    type: list
    elements: str
    required: true
  host:
    description: This host's entry of the plan's C(hosts).
    type: dict
    required: true
  plan:
    description: The plan's C(plan) (the cluster-wide restart and reconfigure decision).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Schedule the restarts and the reconfigure this host needs
  ansible.builtin.debug:
    msg: "{{ __slurm_schedule.reasons }}"
  changed_when: __slurm_schedule.handlers | length > 0
  notify: "{{ __slurm_schedule.handlers }}"
  vars:
    __slurm_schedule: >-
      {{ __slurm_files.changed_names
         | oci_gpu.cluster.slurm_schedule(__slurm_cluster.hosts[inventory_hostname], __slurm_cluster.plan) }}
"""

RETURN = r"""
_value:
  description: The schedule.
  type: dict
  contains:
    steps:
      description: C(daemon), C(action) (V(restart), V(reconfigure)), C(handler) and C(reasons) of each step, in order.
      type: list
      elements: dict
    handlers:
      description: The handler names of the steps, in order.
      type: list
      elements: str
    reasons:
      description: One line per step.
      type: list
      elements: str
"""

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError


def slurm_schedule(changed: Any, host: Any, plan: Any) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._schedule import host_schedule

    if not isinstance(host, Mapping) or not isinstance(plan, Mapping):
        raise AnsibleFilterError("slurm_schedule: host and plan must be the plan's mappings")
    return host_schedule(host, plan, [str(n) for n in changed or []])


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"slurm_schedule": slurm_schedule}
