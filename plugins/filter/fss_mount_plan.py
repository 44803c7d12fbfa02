# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.fss_mount_plan: validate File Storage mounts and compute their fstab entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fss_mount_plan
short_description: Validate the fss_mount role's mounts and compute source, options and state
version_added: 0.1.0
author: contributors to the oci_gpu.cluster project
description:
  - Takes the list of mounts the C(oci_gpu.cluster.fss_mount) role was given and returns one entry per
    mount with the NFS source (C(address:/export)), the merged mount options and the wanted state.
  - Options merge left to right (role defaults, the mount timeout, nconnect, the mount's own options);
    a later C(key=value) replaces an earlier one, a later flag replaces its opposite.
  - Fails naming the mount (C(fss_mount_mounts[1].path)), the value and the host for a relative or
    duplicate mount point, a missing address or export, C(soft), an NFS version other than 3, or a
    mount given by OCID that the API did not resolve.
positional: _input
options:
  _input:
    description: The mounts (C(fss_mount_mounts)).
    type: list
    elements: dict
    required: true
  options:
    description: Default mount options.
    type: list
    elements: str
  mount_timeout:
    description: Seconds for C(x-systemd.mount-timeout).
    type: int
    default: 30
  nconnect:
    description: Default C(nconnect); V(0) leaves it out.
    type: int
    default: 0
  resolved:
    description: Exports found through the API, keyed as the role keys them (file system|mount target|export path).
    type: dict
    default: {}
  host:
    description: The host name used in messages.
    type: str
    default: ""
  lookups:
    description:
      - Return, instead of the plan, the OCI API lookups that mounts given by OCID need (one per distinct
        file system / mount target / export path), leaving out those already in O(resolved).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Plan the mounts
  ansible.builtin.set_fact:
    fss_plan: "{{ [{'path': '/home', 'target': '10.0.0.5', 'export_path': '/home'}] | oci_gpu.cluster.fss_mount_plan }}"
  # [{'path': '/home', 'src': '10.0.0.5:/home', 'opts': 'hard,_netdev,nofail,...', 'state': 'mounted', ...}]
"""

RETURN = r"""
_value:
  description: One entry per mount with path, src, address, opts (comma-separated), owner, group, mode and state.
  type: list
  elements: dict
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def fss_mount_plan(
    mounts: Any,
    options: Any = None,
    mount_timeout: int = 30,
    nconnect: int = 0,
    resolved: Any = None,
    host: str = "",
    lookups: bool = False,
) -> list[dict[str, Any]]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.storage._fss import (
        DEFAULT_OPTIONS,
        FssError,
        mount_plan,
        ocid_lookups,
    )

    if not isinstance(mounts, list):
        raise AnsibleFilterError(f"fss_mount_plan: fss_mount_mounts must be a list, got {type(mounts).__name__}")
    if lookups:
        return ocid_lookups([dict(m) if isinstance(m, dict) else m for m in mounts], list(resolved or {}))
    try:
        return mount_plan(
            [dict(m) if isinstance(m, dict) else m for m in mounts],
            options=list(DEFAULT_OPTIONS if options is None else options),
            mount_timeout=int(mount_timeout),
            nconnect=int(nconnect or 0),
            resolved=dict(resolved or {}),
            host=str(host),
        )
    except FssError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"fss_mount_plan": fss_mount_plan}
