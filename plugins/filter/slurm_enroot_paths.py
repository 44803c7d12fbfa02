# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_enroot_paths: enroot's per-user directories under a base directory."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_enroot_paths
short_description: enroot's per-user runtime, data and cache paths under a base directory
version_added: 0.4.0
author: contributors to the oci_gpu.cluster project
description:
  - Returns C(ENROOT_RUNTIME_PATH), C(ENROOT_DATA_PATH) and C(ENROOT_CACHE_PATH) for C(enroot.conf)
    (C(<base>/enroot/<kind>/user-$(id -u)), which enroot expands for each user), C(top) (C(<base>/enroot))
    and C(parents), the three parent directories separated by spaces. The role's root prolog makes
    C(top) and the parents (root's alone, 0755; a planted link or another owner is refused) with each
    job user's own directory (0700) inside.
positional: _input
options:
  _input:
    description: The base directory (local NVMe scratch, e.g. C(/mnt/localdisk)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Show where enroot keeps a user's containers
  ansible.builtin.debug:
    msg: "{{ ('/mnt/localdisk' | oci_gpu.cluster.slurm_enroot_paths).ENROOT_DATA_PATH }}"
"""

RETURN = r"""
_value:
  description: C(ENROOT_RUNTIME_PATH), C(ENROOT_DATA_PATH), C(ENROOT_CACHE_PATH), C(top) and C(parents).
  type: dict
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def slurm_enroot_paths(base: Any) -> dict[str, str]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._containers import enroot_paths

    if not isinstance(base, str) or not base.startswith("/"):
        raise AnsibleFilterError(f"slurm_enroot_paths: expected an absolute directory, got {base!r}")
    return enroot_paths(base)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"slurm_enroot_paths": slurm_enroot_paths}
