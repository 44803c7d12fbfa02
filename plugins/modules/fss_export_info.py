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
extends_documentation_fragment:
  - oci_gpu.cluster._oci_auth
  - oci_gpu.cluster._oci_service
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    description: Read-only; never changes anything.
    support: full
  platform:
    support: N/A
    platforms: posix
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
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils import _fss, _oci_auth


def _list_all(method, **kwargs):
    return _oci_auth.oci.pagination.list_call_get_all_results(method, **kwargs).data


def main() -> None:
    spec = _oci_auth.oci_auth_argspec()
    spec.update(_oci_auth.oci_service_argspec())
    spec.update(
        file_system_id={"type": "str"},
        mount_target_id={"type": "str"},
        export_path={"type": "str"},
        compartment_id={"type": "str"},
    )
    module = AnsibleModule(
        argument_spec=spec,
        required_one_of=[("file_system_id", "mount_target_id")],
        supports_check_mode=True,
    )
    p = module.params
    if not _oci_auth.HAS_OCI:
        module.fail_json(msg=f"the 'oci' Python SDK is required on the controller: {_oci_auth.OCI_IMPORT_ERROR}")
    oci = _oci_auth.oci
    try:
        auth = _oci_auth.resolve_auth(p)
        fss = _oci_auth.make_client(oci.file_storage.FileStorageClient, auth, p["region"], p["service_endpoint"])
        vnet = _oci_auth.make_client(oci.core.VirtualNetworkClient, auth, p["region"], p["service_endpoint"])
        records = _fss.read_exports(
            fss,
            vnet,
            oci.util.to_dict,
            _list_all,
            file_system_id=p["file_system_id"],
            mount_target_id=p["mount_target_id"],
            export_path=p["export_path"],
            compartment_id=p["compartment_id"],
        )
    except (_oci_auth.OciAuthError, _fss.FssError) as exc:
        module.fail_json(msg=str(exc))
    except oci.exceptions.ServiceError as exc:
        module.fail_json(msg=f"OCI File Storage: {exc.status} {exc.code}: {exc.message}", opc_request_id=exc.request_id)
    module.exit_json(changed=False, exports=records)


if __name__ == "__main__":
    main()
