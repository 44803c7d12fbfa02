# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_nodes: the node list to render, never shrunk by a missing host."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_nodes
short_description: Decide the Slurm node list from fresh node records and the live slurm.conf
version_added: 0.1.0
author: contributors to the oci_gpu.cluster project
description:
  - Takes the fresh node records of the compute hosts that answered in this play (from
    M(oci_gpu.cluster.slurm_node_info)) and the live C(slurm.conf), and returns the node list
    for the C(oci_gpu.cluster.slurm_config) filter.
  - A compute host without a fresh record (unreachable, failed, or outside C(--limit)) keeps
    its definition from the live C(slurm.conf). A node in the live file that is no longer a
    compute host stays unless it is listed in O(remove). A node vanishing from C(slurm.conf)
    ends its running job with C(NODE_FAIL), so nothing is removed by omission.
options:
  _input:
    description: The names of the compute hosts.
    type: list
    elements: str
    required: true
  fresh:
    description:
      - Fresh node records, as a list of records (each with C(name)) or a dict keyed by host name.
        Hosts without one may be left out.
    type: raw
    required: true
  old_conf:
    description: Text of the live C(slurm.conf); empty on a first install.
    type: str
    default: ""
  remove:
    description: Nodes to take out on purpose (drain them first).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Decide the node list
  ansible.builtin.set_fact:
    __slurm_nodes: >-
      {{ slurm_compute_hosts | oci_gpu.cluster.slurm_nodes(fresh=__records, old_conf=__old_conf) }}
"""

RETURN = r"""
_value:
  description: The decision.
  type: dict
  contains:
    nodes:
      description: Node records to render, sorted by name.
      type: list
      elements: dict
    kept:
      description: Compute hosts without a fresh record that keep their live definition.
      type: list
      elements: str
    missing:
      description: Compute hosts without a fresh record and without a live definition (left out).
      type: list
      elements: str
    removed:
      description: Live nodes removed because O(remove) names them.
      type: list
      elements: str
    orphans:
      description: Live nodes that are no longer compute hosts and were kept.
      type: list
      elements: str
"""

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError


def slurm_nodes(compute_hosts: Any, fresh: Any, old_conf: Any = "", remove: Any = ()) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodes import merge_nodes

    if isinstance(fresh, Mapping):
        records = {str(k): dict(v) for k, v in fresh.items() if v}
    else:
        records = {str(r["name"]): dict(r) for r in fresh or [] if r}
    try:
        return merge_nodes(
            [str(h) for h in compute_hosts or []],
            records,
            str(old_conf or ""),
            [str(n) for n in remove or []],
        )
    except (HostlistError, ValueError) as exc:
        raise AnsibleFilterError(f"slurm_nodes: {exc}") from exc


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"slurm_nodes": slurm_nodes}
