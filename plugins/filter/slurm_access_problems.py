# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_access_problems: the pam_slurm_adopt and REST API settings checked."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_access_problems
short_description: Say what is wrong with a host's pam_slurm_adopt or REST API (slurmrestd, JWT) settings
version_added: 0.5.0
author: contributors to the oci_gpu.cluster project
description:
  - The slurm role's preflight check of who reaches a node and how, before anything changes.
  - With C(pam_adopt), a compute node whose admission list would lock out the user Ansible connects as,
    C(PrologFlags) without C(Contain), or no package known to hold pam_slurm_adopt.
  - A given JWT key that cannot be used (named, never quoted); with C(rest_enabled), slurmrestd without JWT, as
    root or SlurmUser, or with addresses that are not C(unix:/path) or C(host:port).
positional: _input, host
options:
  _input:
    description:
      - C(pam_adopt) (bool), C(connection_user), C(connection_groups), C(admin_users), C(admin_groups),
        C(packages), C(distribution), C(config_overrides) (slurm.conf keys the site sets), C(jwt_key),
        C(jwt_enabled), C(rest_enabled), C(rest_user), C(rest_listen).
    type: dict
    required: true
extends_documentation_fragment:
  - oci_gpu.cluster._settings_host
"""

EXAMPLES = r"""
- name: Check who reaches the node
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join(' ') }}"
  vars:
    __problems: "{{ settings | oci_gpu.cluster.slurm_access_problems(inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: Every problem, each naming the setting, its value (never the JWT key) and the host; empty when none.
  type: list
  elements: str
"""

from typing import Any


def slurm_access_problems(settings: Any, host: str) -> list[str]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._access import pam_adopt_problems, rest_problems

    s = dict(settings or {})
    return (pam_adopt_problems(s, host) if s.get("pam_adopt") else []) + rest_problems(s, host)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"slurm_access_problems": slurm_access_problems}
