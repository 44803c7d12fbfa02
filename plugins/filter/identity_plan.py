# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.identity_plan: the directory settings checked and this host's SSSD domain planned."""

from __future__ import annotations

DOCUMENTATION = r"""
name: identity_plan
short_description: Check the directory (SSSD/LDAP) settings and plan this host's SSSD domain
version_added: 0.5.0
author: contributors to the oci_gpu.cluster project
description:
  - Checks the C(oci_gpu.cluster.identity) role's settings (URIs, CA, DNs, bind credentials together, schema,
    access filters per node role, home directory, check user) and returns every problem, each naming the key,
    the value and the host. The bind password is checked but never quoted.
  - Without problems, returns the host's node role (C(login) for the group C(slurm_login), C(controller) for
    C(slurm_controller) or C(slurm_dbd), else C(compute)), the access filter it gets and the options of its
    SSSD domain in order (without the bind password, which the role's template writes under C(no_log)).
positional: _input, host, groups, ca_path
options:
  _input:
    description: The role's settings, without the C(identity_) prefix.
    type: dict
    required: true
  groups:
    description: The host's groups (its node role).
    type: list
    elements: str
    required: true
  ca_path:
    description: Where the role writes the directory's CA certificate.
    type: str
    required: true
extends_documentation_fragment:
  - oci_gpu.cluster._settings_host
"""

EXAMPLES = r"""
- name: Plan the SSSD domain
  ansible.builtin.set_fact:
    __identity_plan: >-
      {{ settings | oci_gpu.cluster.identity_plan(inventory_hostname, group_names, '/etc/sssd/pki/ca.pem') }}
"""

RETURN = r"""
_value:
  description: C(problems) (a list of strings), C(node_role), C(access_filter), C(domain_options) (pairs) and
    C(home_umask) (for pam_mkhomedir, from C(home_mode)).
  type: dict
"""

from typing import Any


def identity_plan(settings: Any, host: str, groups: Any, ca_path: str) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.identity._identity import plan

    return plan(dict(settings or {}), host, list(groups or []), ca_path)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"identity_plan": identity_plan}
