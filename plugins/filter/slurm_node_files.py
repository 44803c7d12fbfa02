# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_node_files: the files every Slurm node keeps itself, from the slurm role's settings."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_node_files
short_description: The files every Slurm node keeps itself (prologs, epilog, enroot.conf)
version_added: 0.6.0
author: contributors to the oci_gpu.cluster project
description:
  - Returns the directories and files that every node keeps itself, as the slurm role writes them (a
    configless slurmd fetches none of them) - the root prolog that makes the container runtimes' per-user
    directories, the GPU job map's prolog and epilog (for NVIDIA's DCGM exporter) and C(enroot.conf) - so that
    another role (elastic, for the nodes it launches) writes the very same files.
  - A feature that is off gives its files with C(state=absent_if_managed) and no content.
positional: _input, version, conf_dir
options:
  _input:
    description:
      - The container and job map settings, as the slurm role's plan takes them - C(oci_enabled),
        C(oci_state_dir), C(pyxis_enabled), C(enroot_base_dir), C(enroot_config) and C(job_map_dir) (empty
        for no GPU job map).
    type: dict
    required: true
  version:
    description: The Slurm release (C(24.11)); the prolog names crun's state directory by user on 22.05.
    type: str
    default: "24.11"
  conf_dir:
    description: Slurm's configuration directory.
    type: str
    default: /etc/slurm
"""

EXAMPLES = r"""
- name: The GPU job map's scripts for a node the elastic agent launches
  ansible.builtin.debug:
    msg: >-
      {{ ({'job_map_dir': '/run/oci-gpu/gpu-jobs'} | oci_gpu.cluster.slurm_node_files).files
         | selectattr('state', 'equalto', 'present') | map(attribute='path') }}
"""

RETURN = r"""
_value:
  description:
    - C(directories) (path, owner, mode, roles) and C(files) (name, path, roles, mode, content, state), as the
      C(oci_gpu.cluster.slurm_files) module takes them.
  type: dict
"""

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError


def slurm_node_files(settings: Any, version: Any = "24.11", conf_dir: Any = "/etc/slurm") -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._node_files import node_files

    if not isinstance(settings, Mapping):
        raise AnsibleFilterError(f"slurm_node_files expects a dict of settings, got {settings!r}")
    return node_files(settings, str(version or "24.11"), str(conf_dir or "/etc/slurm"))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"slurm_node_files": slurm_node_files}
