# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_change_plan: restart or reconfigure, as the Slurm version requires."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_change_plan
short_description: Which Slurm daemons a configuration change must restart, by Slurm version
version_added: 0.1.0
author: contributors to the oci_gpu.cluster project
description:
  - Compares the live and the new C(slurm.conf) and says, from one table keyed by Slurm major
    version, whether C(scontrol reconfigure) suffices or which daemons need a restart, in the
    order C(slurmdbd), C(slurmctld), C(slurmd).
  - Adding or removing nodes needs every daemon restarted before 24.11 and only a reconfigure
    from 24.11; some keys (for example C(SelectType), C(GresTypes)) always need restarts.
options:
  _input:
    description: Text of the live C(slurm.conf); empty on a first install (nothing to plan).
    type: str
    required: true
  new:
    description: Text of the new C(slurm.conf).
    type: str
    required: true
  version:
    description: The running Slurm version, for example C(22.05.8).
    type: str
    required: true
  gres_changed:
    description: Whether C(gres.conf) changed on this host.
    type: bool
    default: false
  cgroup_changed:
    description: Whether C(cgroup.conf) changed on this host.
    type: bool
    default: false
  dbd_changed:
    description: Whether C(slurmdbd.conf) changed on this host.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Plan the restarts for this change
  ansible.builtin.set_fact:
    __slurm_plan: "{{ __old_conf | oci_gpu.cluster.slurm_change_plan(__new_conf, '22.05.8') }}"
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    restart:
      description: Daemons to restart, in order.
      type: list
      elements: str
    reconfigure:
      description: Whether C(scontrol reconfigure) is needed (false when slurmctld restarts anyway).
      type: bool
    reasons:
      description: Why, one line per change.
      type: list
      elements: str
    added_nodes:
      description: Nodes the change adds.
      type: list
      elements: str
    removed_nodes:
      description: Nodes the change removes.
      type: list
      elements: str
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def slurm_change_plan(
    old: Any,
    new: Any,
    version: Any,
    gres_changed: bool = False,
    cgroup_changed: bool = False,
    dbd_changed: bool = False,
) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._schedule import with_file_changes
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import change_plan

    try:
        changed = (["gres.conf"] if gres_changed else []) + (["cgroup.conf"] if cgroup_changed else [])
        changed += ["slurmdbd.conf"] if dbd_changed else []
        return with_file_changes(
            change_plan(str(old or ""), str(new or ""), str(version)), changed, first_install=not str(old or "")
        )
    except (HostlistError, ValueError) as exc:
        raise AnsibleFilterError(f"slurm_change_plan: {exc}") from exc


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"slurm_change_plan": slurm_change_plan}
