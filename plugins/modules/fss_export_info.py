#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: fss_export_info
short_description: Resolve OCI File Storage file systems and mount targets to NFS sources
version_added: 0.1.0
description:
  - Reads the exports of an OCI File Storage file system and/or mount target and returns, for each
    export and mount target serving it, the mount target's private IP and the NFS source
    (C(10.0.0.5:/home)) to mount.
  - Read-only; the C(oci_gpu.cluster.fss_mount) role calls it once per play for mounts given by OCID.
  - Over a local connection (C(delegate_to) V(localhost)) its action plugin does the lookups inside
    Ansible's own process, where the C(oci_gpu.cluster.oci) inventory has already loaded the C(oci)
    SDK, which saves a Python start and the SDK's import per call. Delegated to another host it runs
    there as a module.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  file_system_id:
    description: OCID of the file system. With it alone, every mount target exporting it is returned.
    type: str
  mount_target_id:
    description: OCID of the mount target. With it alone, every export of its export set is returned.
    type: str
  export_path:
    description: Return only the export with this path (for example C(/home)).
    type: str
  compartment_id:
    description:
      - Compartment searched for mount targets when only O(file_system_id) is given.
      - Default is the file system's compartment; set it when mount targets live in a network compartment.
    type: str
  lookups:
    description:
      - Several lookups in one call (one API client, one module run), instead of O(file_system_id),
        O(mount_target_id), O(export_path) and O(compartment_id). Each carries those keys and a
        C(key) of its own choosing, returned with its exports in RV(lookups).
      - The C(oci_gpu.cluster.fss_mount) role resolves all of a play's mounts given by OCID this way.
    type: list
    elements: dict
extends_documentation_fragment:
  - oci_gpu.cluster._oci_auth
  - oci_gpu.cluster._oci_service
  - ansible.builtin.action_common_attributes
  - oci_gpu.cluster._read_only
notes:
  - The mount target's address is its first private IP (C(GetPrivateIp)); a hostname label is not needed.
"""

EXAMPLES = r"""
- name: Resolve the home file system
  oci_gpu.cluster.fss_export_info:
    file_system_id: ocid1.filesystem.oc1.iad.aaaaexample
    compartment_id: ocid1.compartment.oc1..network
  delegate_to: localhost
  run_once: true
  register: home_fs

- name: Mount it
  ansible.posix.mount:
    src: "{{ home_fs.exports[0].source }}"
    path: /home
    fstype: nfs
    opts: hard,_netdev,nofail,nfsvers=3
    state: mounted
"""

RETURN = r"""
exports:
  description: One record per (export, mount target), sorted by export path then mount target name.
  returned: success
  type: list
  elements: dict
  contains:
    file_system_id: {description: OCID of the file system., type: str, returned: always}
    file_system_name: {description: Display name of the file system., type: str, returned: always}
    export_id: {description: OCID of the export., type: str, returned: always}
    export_path: {description: Path of the export., type: str, returned: always, sample: /home}
    mount_target_id: {description: OCID of the mount target., type: str, returned: always}
    mount_target_name: {description: Display name of the mount target., type: str, returned: always}
    mount_target_ip: {description: Private IP of the mount target., type: str, returned: always, sample: 10.0.0.5}
    source: {description: What to mount., type: str, returned: always, sample: "10.0.0.5:/home"}
lookups:
  description: With O(lookups), per lookup in order, its C(key) and its C(exports) (records as in RV(exports)).
  returned: with O(lookups)
  type: list
  elements: dict
  sample: [{"key": "home", "exports": [{"export_path": "/home", "source": "10.0.0.5:/home"}]}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _fss_api


def main() -> None:
    module = AnsibleModule(
        argument_spec=_fss_api.ARGUMENT_SPEC,
        required_one_of=_fss_api.REQUIRED_ONE_OF,
        mutually_exclusive=_fss_api.MUTUALLY_EXCLUSIVE,
        supports_check_mode=True,
    )
    try:
        found = _fss_api.lookup_exports(module.params)
    except _fss_api.FssApiError as exc:
        extra = {"opc_request_id": exc.request_id} if exc.request_id else {}
        module.fail_json(msg=str(exc), **extra)
    module.exit_json(changed=False, **found)


if __name__ == "__main__":
    main()
