# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.files_not_in_place: what a slurm_files call would change, from the probe's read."""

from __future__ import annotations

DOCUMENTATION = r"""
name: files_not_in_place
short_description: The paths a slurm_files call would change, told from the node's probe without the call
version_added: 0.6.0
author: contributors to the oci_gpu.cluster project
description:
  - Compares the directories and files a C(oci_gpu.cluster.slurm_files) call would apply with their state as
    the node's probe read it (RV(oci_gpu.cluster.slurm_node_info#module:files_state) or
    RV(oci_gpu.cluster.gpu_node_info#module:files_state), from the record the last call kept with its option
    C(record)), and returns the paths the call would change. An empty list means the call would change
    nothing, so a converged node can skip it and save the round trip.
  - It compares as the module does - the items for the node's roles, content by SHA-256, owner and group by
    name or number (the group defaults to the owner), the mode's permission bits, C(absent) and
    C(absent_if_managed).
  - Where it cannot tell, it names the path, and the call runs - a path the record does not hold (a new
    file, or no record yet), a secret's content (never digested by the probe), a mode not in octal, a
    symbolic link.
positional: _input, node_roles, state
options:
  _input:
    description: C(directories) and C(files), as the C(oci_gpu.cluster.slurm_files) module takes them.
    type: dict
    required: true
  node_roles:
    description: The node's Slurm roles (the module's C(node_roles)).
    type: list
    elements: str
    default: []
  state:
    description: The probe's C(files_state).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Write the files only where the probe found one that differs
  oci_gpu.cluster.slurm_files:
    files: "{{ my_files }}"
    record: /var/lib/oci-gpu-cluster/my-files.json
  when: >-
    {'files': my_files} | oci_gpu.cluster.files_not_in_place([], my_probe.files_state) | length > 0
"""

RETURN = r"""
_value:
  description: The paths the call would change or that the probe's read cannot vouch for; empty when none.
  type: list
  elements: str
"""

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError


def files_not_in_place(manifest: Any, node_roles: Any = None, state: Any = None) -> list[str]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._file_state import not_in_place

    if not isinstance(manifest, Mapping):
        raise AnsibleFilterError(f"files_not_in_place expects a dict of directories and files, got {manifest!r}")
    if state is not None and not isinstance(state, Mapping):
        raise AnsibleFilterError(f"files_not_in_place: state must be the probe's files_state (a dict), got {state!r}")
    return not_in_place(
        list(manifest.get("directories") or []),
        list(manifest.get("files") or []),
        list(node_roles or []),
        dict(state or {}),
    )


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"files_not_in_place": files_not_in_place}
