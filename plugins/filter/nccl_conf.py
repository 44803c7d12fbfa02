# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.nccl_conf: a shape's /etc/nccl.conf, each value with its source."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_conf
short_description: The /etc/nccl.conf of an OCI GPU shape, each value with its source
version_added: 0.3.0
author: contributors to the oci_gpu.cluster project
description:
  - Oracle's published NCCL settings for the shape (C(NCCL_IB_HCA) exact-match lists, C(NCCL_IB_GID_INDEX),
    C(NCCL_IB_TC), C(NCCL_IB_QPS_PER_CONNECTION), ...), then O(overrides), which win; an override of
    null or an empty string removes a key. A shape without published values gets only the overrides,
    and RV(_value.note) says so.
  - Where the source sets C(NCCL_SOCKET_IFNAME) (to a pod network's C(eth0)), O(socket_ifname) replaces it;
    without one the key is left out, since an interface the host lacks stops NCCL's bootstrap.
  - Bad overrides (a lower-case name; a value with C(#), a line break, a control character or edge spaces)
    come back in RV(_value.problems), naming the key and the rule, for a preflight that reports them all.
positional: _input
options:
  _input:
    description: The OCI shape, for example C(BM.GPU.H100.8).
    type: str
    required: true
  overrides:
    description: Settings that replace or remove the table's.
    type: dict
    default: {}
  socket_ifname:
    description: The host's interface for C(NCCL_SOCKET_IFNAME).
    type: str
    default: ""
  header:
    description: Comment lines at the top of the file.
    type: str
    default: Managed by Ansible (oci_gpu.cluster.gpu_node)
"""

EXAMPLES = r"""
- name: Write /etc/nccl.conf for the node's shape
  ansible.builtin.copy:
    content: "{{ (oci_shape | oci_gpu.cluster.nccl_conf(socket_ifname=ifname)).text }}"
  vars:
    ifname: "{{ ansible_facts['default_ipv4']['interface'] }}"
    dest: /etc/nccl.conf
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The file and what went into it.
  type: dict
  contains:
    text:
      description: The file's content.
      type: str
    settings:
      description: One C({key, value, source}) per line.
      type: list
      elements: dict
    problems:
      description: Bad overrides; empty when none.
      type: list
      elements: str
    note:
      description: Why the shape gets no published settings; empty when it does.
      type: str
"""

from typing import Any


def nccl_conf(
    shape: Any,
    overrides: dict[str, Any] | None = None,
    socket_ifname: str = "",
    header: str = "Managed by Ansible (oci_gpu.cluster.gpu_node)",
) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu._nccl import nccl_settings, render_nccl_conf

    result = nccl_settings(str(shape or ""), dict(overrides or {}), str(socket_ifname or "") or None)
    result["text"] = render_nccl_conf(result["settings"], header)
    return result


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"nccl_conf": nccl_conf}
