# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_container_problems: what is wrong with the slurm role's container settings."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_container_problems
short_description: Check the slurm role's container settings (oci.conf, enroot, pyxis) for a Slurm release
version_added: 0.4.0
author: contributors to the oci_gpu.cluster project
description:
  - Takes the role's container settings and returns one message per problem, each naming the variable and
    its value; an empty list when they are usable.
  - With O(version) (the release the plan follows) C(slurm_oci_config) is checked against that release's
    C(oci.conf) keys and C(%) patterns (22.05 has no C(%U), C(%m), C(%p), no C(EnvExclude), ...); without it,
    against the newest (before Slurm is installed).
  - A C(Prolog) of the site's own in C(slurm_config) must still run the role's prolog (the directory glob
    or the script, in a comma-separated list), since the containers need the directories it makes.
  - With the GPU job map on (C(job_map_dir), the slurm role's C(slurm_gpu_job_map_dir)) the same holds for its
    prolog and its epilog; a C(Prolog) or C(Epilog) of the site's own must keep the glob or the script.
positional: _input
options:
  _input:
    description:
      - C(oci_enabled), C(oci_config), C(oci_state_dir), C(pyxis_enabled), C(pyxis_args), C(enroot_base_dir),
        C(enroot_config), C(prolog) (the C(Prolog) of C(slurm_config), empty when it sets none), C(prolog_dir),
        C(epilog) and C(epilog_dir) (likewise for C(Epilog)), C(job_map_dir) (empty when the GPU job map is off).
    type: dict
    required: true
  version:
    description: The Slurm release (V(22.05), V(24.11), ...); omitted before Slurm is installed.
    type: str
"""

EXAMPLES = r"""
- name: Check the container settings
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join(' ') }}"
  vars:
    problems: >-
      {{ {'oci_enabled': true, 'oci_config': {'EnvExclude': '^X='}}
         | oci_gpu.cluster.slurm_container_problems('22.05') }}
"""

RETURN = r"""
_value:
  description: One message per problem.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError


def slurm_container_problems(settings, version=None):
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._role_settings import container_problems

    if not isinstance(settings, dict):
        raise AnsibleFilterError(f"slurm_container_problems expects a dict of settings, got {settings!r}")
    return container_problems(settings, version)


class FilterModule:
    def filters(self):
        return {"slurm_container_problems": slurm_container_problems}
