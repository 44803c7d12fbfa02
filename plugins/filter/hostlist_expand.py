# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.hostlist_expand: Slurm hostlist expression(s) to host names."""

from __future__ import annotations

DOCUMENTATION = r"""
name: hostlist_expand
short_description: Expand a Slurm hostlist expression into host names
version_added: 0.1.0
author: contributors to the oci_gpu.cluster project
description:
  - Expands a Slurm hostlist expression such as C(gpu[001-004],login1) into the list of host names,
    exactly as C(scontrol show hostnames) prints them, in the same order and with the same duplicates.
  - "Supports Slurm's full syntax: names separated by commas, spaces or tabs; numbers, ranges and comma
    lists in brackets (C(n[1-3,7,10-12])); zero padding taken from the width of the first number of a range
    (C(gpu[001-128])); several brackets in one name with text between them (C(rack[1-2]-gpu[01-04]), expanded
    in Slurm's order); names without numbers."
  - As in Slurm, the last bracket must end the name (C(n[1-2]-ib) is refused). Where Slurm silently reads
    nonsense (C(n[1-]), C(n[ 1-2]), an unclosed C([)), this filter fails instead.
  - A list of expressions is expanded one after the other and the names concatenated.
  - 'Fails with a message that quotes the expression and says what is wrong, for example
    C(hostlist "gpu[3-1]": range start 3 is greater than end 1).'
positional: _input
options:
  _input:
    description: A hostlist expression, or a list of them.
    type: raw
    required: true
seealso:
  - plugin: oci_gpu.cluster.hostlist_compress
    plugin_type: filter
"""

EXAMPLES = r"""
- name: List the GPU nodes one by one
  ansible.builtin.debug:
    msg: "{{ 'gpu[001-004],login1' | oci_gpu.cluster.hostlist_expand }}"
  # ['gpu001', 'gpu002', 'gpu003', 'gpu004', 'login1']

- name: Several brackets in one name
  ansible.builtin.debug:
    msg: "{{ 'rack[1-2]-gpu[01-02]' | oci_gpu.cluster.hostlist_expand }}"
  # ['rack1-gpu01', 'rack1-gpu02', 'rack2-gpu01', 'rack2-gpu02']

- name: Expand a list of expressions and count the hosts
  ansible.builtin.debug:
    msg: "{{ ['n[1-3,7]', 'n[10-12]'] | oci_gpu.cluster.hostlist_expand | length }}"
  # 7
"""

RETURN = r"""
_value:
  description: The host names, in Slurm's order, duplicates kept.
  type: list
  elements: str
"""

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError


def hostlist_expand(value: Any) -> list[str]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import (
        HostlistError,
        expand,
        expand_many,
    )

    if isinstance(value, (Mapping, bytes)) or not (isinstance(value, str) or hasattr(value, "__iter__")):
        raise AnsibleFilterError(
            f"hostlist_expand: expected a hostlist expression or a list of them, got {type(value).__name__}"
        )
    try:
        return expand(value) if isinstance(value, str) else expand_many(list(value))
    except HostlistError as exc:
        raise AnsibleFilterError(f"hostlist_expand: {exc}") from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"hostlist_expand": hostlist_expand}
