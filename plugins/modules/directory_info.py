#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: directory_info
short_description: Look users and groups up the way the host's daemons do (NSS, so SSSD too)
version_added: 0.5.0
description:
  - Looks each user and group up through the host's name service switch (the local files, then SSSD
    where the C(oci_gpu.cluster.identity) role set it up), the way slurmctld and slurmd resolve them,
    and the members of each group found as well.
  - The C(oci_gpu.cluster.tenants) role calls it on the controller before any accounting write, so a
    member or group the cluster does not know is refused by name.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  users:
    description: Login names.
    type: list
    elements: str
    default: []
  groups:
    description: Group names; their members are looked up as users too.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Look the tenants' members up on the controller
  oci_gpu.cluster.directory_info:
    users: [dora, bob]
    groups: [gpu-research]
  register: found
"""

RETURN = r"""
users:
  description: Each user asked for or found in a group, with its UID, GID and home, or null when unknown.
  returned: always
  type: dict
  sample: {dora: {uid: 20001, gid: 20001, home: /home/dora}, bob: null}
groups:
  description: Each group asked for, with its GID and members (the group's member list), or null when unknown.
  returned: always
  type: dict
  sample: {gpu-research: {gid: 20100, members: [dora]}}
"""

import grp
import pwd
from collections.abc import Callable
from typing import Any

from ansible.module_utils.basic import AnsibleModule


def lookup(
    users: list[str],
    groups: list[str],
    getpwnam: Callable[[str], Any] = pwd.getpwnam,
    getgrnam: Callable[[str], Any] = grp.getgrnam,
) -> dict[str, Any]:
    """``{"users": {name: {uid, gid, home} | None}, "groups": {name: {gid, members} | None}}``."""
    found_groups: dict[str, Any] = {}
    names = list(dict.fromkeys(users))
    for name in dict.fromkeys(groups):
        try:
            entry = getgrnam(name)
        except KeyError:
            found_groups[name] = None
            continue
        found_groups[name] = {"gid": entry.gr_gid, "members": list(entry.gr_mem)}
        names.extend(m for m in entry.gr_mem if m not in names)
    found_users: dict[str, Any] = {}
    for name in names:
        try:
            entry = getpwnam(name)
        except KeyError:
            found_users[name] = None
            continue
        found_users[name] = {"uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir}
    return {"users": found_users, "groups": found_groups}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "users": {"type": "list", "elements": "str", "default": []},
            "groups": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    module.exit_json(changed=False, **lookup(module.params["users"], module.params["groups"]))


if __name__ == "__main__":
    main()
