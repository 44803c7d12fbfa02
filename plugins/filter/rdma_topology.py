# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.rdma_topology: OCI's RDMA fabric as Slurm's tree and blocks."""

from __future__ import annotations

DOCUMENTATION = r"""
name: rdma_topology
short_description: OCI's RDMA fabric (HPC island, network block, local block, rack, GPU memory fabric) as Slurm topology
version_added: 0.4.0
author: contributors to the oci_gpu.cluster project
description:
  - Builds one model of the fabric from host records and renders it for Slurm's C(topology/tree) and
    C(topology/block) plugins and for C(topology.yaml) (Slurm 25.05 and later).
  - The levels used below the network block depend on the GPU family - the local block for H100, H200,
    B200, B300, MI300X, MI355X and L40S; the rack for A100; the local block and the GPU memory fabric for
    GB200 and GB300.
  - Names are Slurm-legal, at most 64 characters, C(<level>_<last 12 characters of the id>) as the inventory's
    groups, hashed where two ids of a level would share a name; they do not depend on the hosts' order.
  - A missing id is allowed; the node then sits under a C(<parent>_none) switch in the tree and in no block.
positional: _input
options:
  _input:
    description:
      - Host records, each a dict with C(name), optional C(shape), and any of C(hpc_island_id),
        C(network_block_id), C(local_block_id), C(rack_id), C(gpu_memory_fabric_id) (the inventory's
        hostvars names, with or without their C(oci_) prefix, C(oci_shape) too).
      - Or a dict of such records by host name (their C(name) is then the key).
      - A host whose record lacks an id its block's other hosts report takes theirs; two hosts placing
        one block under different parents fail the filter, naming both.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Write topology.conf for the block plugin
  ansible.builtin.copy:
    content: "{{ (hosts | oci_gpu.cluster.rdma_topology).block_conf }}"
    dest: /etc/slurm/topology.conf
    mode: "0644"
  vars:
    # name -> that host's variables (oci_shape, oci_hpc_island_id, ... from the oci_gpu.cluster.oci inventory)
    hosts: "{{ dict(groups['slurm_compute'] | zip(groups['slurm_compute'] | map('extract', hostvars))) }}"
"""

RETURN = r"""
_value:
  description: The model.
  type: dict
  contains:
    root:
      description: The tree's root switch.
      type: str
    switches:
      description: Every switch, with C(switches) (its children) or C(nodes) (a hostlist) and C(count).
      type: list
    blocks:
      description: The blocks in aggregation order (same island and network block side by side), each
        with C(name), C(nodes) (a hostlist) and C(count).
      type: list
    block_sizes:
      description: C(BlockSizes) - the smallest block, then doublings up to the block nodes' count.
      type: list
    unblocked:
      description: Hosts in no block (no id at their family's block level).
      type: list
    placement:
      description: Per host, the name of each level it has (C(hpc_island), C(network_block), ...).
      type: dict
    tree_conf:
      description: topology.conf for topology/tree.
      type: str
    block_conf:
      description: topology.conf for topology/block.
      type: str
    topology_yaml:
      description: topology.yaml's topologies (tree and block; the block one is the cluster default
        when there are blocks).
      type: list
"""

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError


def rdma_topology(hosts: Any) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _topology

    if isinstance(hosts, Mapping):
        hosts = [
            {**dict(record), "name": name} if isinstance(record, Mapping) else record for name, record in hosts.items()
        ]
    if not isinstance(hosts, list) or not all(isinstance(h, Mapping) for h in hosts):
        raise AnsibleFilterError(
            "rdma_topology: give a list of host dicts (name, shape, topology ids) or a dict of them by host name"
        )
    try:
        model = _topology.build(hosts)
    except _topology.TopologyError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    model["tree_conf"] = _topology.topology_conf(model, "tree")
    model["block_conf"] = _topology.topology_conf(model, "block")
    model["topology_yaml"] = _topology.topology_yaml(model, "block" if model["blocks"] else "tree")
    return model


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"rdma_topology": rdma_topology}
