# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.lustre_client_mounts: validated fstab entries for Lustre mounts."""

from __future__ import annotations

DOCUMENTATION = r"""
name: lustre_client_mounts
short_description: Validate Lustre mounts and build their fstab entries
version_added: 0.1.0
author: contributors to the oci_gpu.cluster project
description:
  - Checks each mount of C(lustre_client_mounts) and builds its mount source
    C(<mgs nid>:/<fsname>) (for example C(10.0.255.20@tcp:/lfs1)) and options.
  - A mount that names a C(lustre_file_system_id) takes the MGS address, LNet network and
    fsname from O(resolved) (the records M(oci_gpu.cluster.lustre_file_system_info) returned).
options:
  _input:
    description:
      - The mounts, each with C(path), C(mgs_nid) + C(fsname) or C(lustre_file_system_id), and
        optional C(options), C(state), C(lnet).
    type: list
    elements: dict
    required: true
  host:
    description: The host name used in messages.
    type: str
    required: true
  resolved:
    description:
      - Lustre file system records by OCID.
      - Not given means not looked up yet; OCIDs are then listed in C(to_resolve) and everything else is checked.
    type: dict
  default_options:
    description: Options of a mount that gives none (C(x-systemd.automount) and the mount timeout are added).
    type: str
    default: defaults,_netdev,nofail
  mount_timeout:
    description: Seconds for C(x-systemd.mount-timeout=).
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Build the Lustre fstab entries
  ansible.builtin.set_fact:
    __mounts: "{{ lustre_client_mounts | oci_gpu.cluster.lustre_client_mounts(host=inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: C(errors) (list of messages naming host, mount and value) and C(mounts).
  type: dict
  contains:
    errors:
      description: Refusals.
      type: list
      elements: str
    to_resolve:
      description: Lustre file system OCIDs the mounts name.
      type: list
      elements: str
    mounts:
      description: Entries with C(path), C(src), C(fstype), C(opts), C(state), C(fsname), C(mgs_nid).
      type: list
      elements: dict
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def lustre_client_mounts(mounts: Any, host: str, **kwargs: Any) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.storage._lustre import lustre_mounts

    try:
        resolved = kwargs.pop("resolved", None)
        return lustre_mounts(mounts, host=str(host), resolved=None if resolved is None else dict(resolved), **kwargs)
    except (ValueError, TypeError) as exc:
        raise AnsibleFilterError(f"lustre_client_mounts: {exc}") from exc


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"lustre_client_mounts": lustre_client_mounts}
