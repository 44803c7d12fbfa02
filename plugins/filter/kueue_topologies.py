# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.kueue_topologies: Kueue Topology objects for OKE's RDMA node labels."""

from __future__ import annotations

DOCUMENTATION = r"""
name: kueue_topologies
short_description: Kueue Topologies for OCI's RDMA fabric, from a cluster's GPU shapes
version_added: 0.4.0
author: contributors to the oci_gpu.cluster project
description:
  - OKE labels RDMA nodes with their C(oci.oraclecloud.com/rdma.hpc_island_id), C(rdma.network_block_id)
    and C(rdma.local_block_id). The levels come from the same model as Slurm's topology
    (R(oci_gpu.cluster.rdma_topology,ansible_collections.oci_gpu.cluster.rdma_topology_filter)) - island and
    network block always, the local block where a shape family's block is at or below it (all but A100,
    whose block is the rack, which OKE does not label) - then C(kubernetes.io/hostname).
  - One Topology per distinct list of levels - C(oci-rdma) down to the local block,
    C(oci-rdma-network-block) for A100 - each naming the shapes whose ResourceFlavor uses it.
positional: _input
options:
  _input:
    description: The GPU shapes of the cluster's RDMA node pools.
    type: list
    elements: str
    required: true
  levels:
    description: Node labels, widest first, to use for every shape instead (one C(oci-rdma) Topology).
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Topologies for H100 and A100 node pools
  ansible.builtin.debug:
    msg: "{{ ['BM.GPU.H100.8', 'BM.GPU.A100-v2.8'] | oci_gpu.cluster.kueue_topologies }}"
"""

RETURN = r"""
_value:
  description: The Topologies, the one with the most levels first.
  type: list
  elements: dict
  contains:
    name:
      description: The Topology's name.
      type: str
    levels:
      description: Node label keys, widest level first.
      type: list
      elements: str
    shapes:
      description: The shapes whose ResourceFlavor names this Topology.
      type: list
      elements: str
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def kueue_topologies(shapes: Any, levels: Any = None) -> list[dict[str, Any]]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _topology

    if isinstance(shapes, (str, dict)) or not hasattr(shapes, "__iter__"):
        raise AnsibleFilterError(f"kueue_topologies: give a list of shape names, got {type(shapes).__name__}")
    if levels is not None and (isinstance(levels, (str, dict)) or not hasattr(levels, "__iter__")):
        raise AnsibleFilterError(f"kueue_topologies: levels must be a list of node labels, got {levels!r}")
    return _topology.kueue_topologies(shapes, levels)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"kueue_topologies": kueue_topologies}
