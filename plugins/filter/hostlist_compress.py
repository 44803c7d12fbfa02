# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.hostlist_compress: host names to a canonical Slurm hostlist expression."""

from __future__ import annotations

DOCUMENTATION = r"""
name: hostlist_compress
short_description: Compress host names into a canonical Slurm hostlist expression
version_added: 0.1.0
author: contributors to the oci_gpu.cluster project
description:
  - Turns a list of host names into a Slurm hostlist expression such as C(gpu[001-004,010],login1),
    for C(NodeName=), C(Nodes=) and the like.
  - The input is treated as a set. Duplicates are dropped and the order does not matter, so the same hosts
    always give the same string (a template that uses it changes only when the hosts change).
  - The result is never longer than what C(scontrol show hostlist) prints for the same names, and reads back
    in Slurm 22.05 and later as exactly these names. Zero padding is kept exact (C(n1) and C(n01) are
    different hosts). Names that differ only in an inner number share a second bracket
    (C(rack[1-2]-gpu[01-04])), which Slurm does not do itself.
  - Names are ordered naturally (numbers by value); inside a bracket by value, then width.
  - Fails on a name Slurm could not read back (empty, or with a comma, bracket, whitespace or control
    character). Expand hostlist expressions with P(oci_gpu.cluster.hostlist_expand#filter) first.
positional: _input
options:
  _input:
    description: Host names.
    type: list
    elements: str
    required: true
seealso:
  - plugin: oci_gpu.cluster.hostlist_expand
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Print the compute group as one hostlist
  ansible.builtin.debug:
    msg: "{{ groups['slurm_compute'] | oci_gpu.cluster.hostlist_compress }}"

- name: Order and duplicates do not matter
  ansible.builtin.debug:
    msg: "{{ ['gpu003', 'gpu001', 'gpu002', 'gpu001', 'login1'] | oci_gpu.cluster.hostlist_compress }}"
  # gpu[001-003],login1

- name: Racks fold into a second bracket
  ansible.builtin.debug:
    msg: "{{ ['rack1-gpu01', 'rack1-gpu02', 'rack2-gpu01', 'rack2-gpu02'] | oci_gpu.cluster.hostlist_compress }}"
  # rack[1-2]-gpu[01-02]
"""

RETURN = r"""
_value:
  description: The hostlist expression; an empty string for an empty list.
  type: str
"""

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError


def hostlist_compress(value: Any) -> str:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError, compress

    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise AnsibleFilterError(
            f"hostlist_compress: expected a list of host names, got {type(value).__name__}"
            + (" (use hostlist_expand to turn an expression into a list)" if isinstance(value, str) else "")
        )
    try:
        return compress(list(value))
    except HostlistError as exc:
        raise AnsibleFilterError(f"hostlist_compress: {exc}") from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"hostlist_compress": hostlist_compress}
