#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: lustre_file_system_info
short_description: Read OCI File Storage with Lustre file systems and their mount source
version_added: 0.1.0
description:
  - Reads one Lustre file system by OCID, or the Lustre file systems of a compartment (optionally
    by display name), from the OCI File Storage with Lustre service.
  - Returns for each its MGS address, LNet network, fsname and the mount source a client needs
    (C(<mgs>@<lnet>:/<fsname>)), as the C(oci_gpu.cluster.lustre_client) role uses it.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  lustre_file_system_id:
    description: OCID of one Lustre file system.
    type: str
  compartment_id:
    description: OCID of the compartment whose Lustre file systems are listed.
    type: str
  display_name:
    description: With O(compartment_id), only the file systems with this display name.
    type: str
  lifecycle_state:
    description: With O(compartment_id), only the file systems in this state (for example C(ACTIVE)).
    type: str
extends_documentation_fragment:
  - oci_gpu.cluster._oci_auth
  - oci_gpu.cluster._oci_service
  - ansible.builtin.action_common_attributes
  - oci_gpu.cluster._read_only
"""

EXAMPLES = r"""
- name: Read a Lustre file system's mount source
  oci_gpu.cluster.lustre_file_system_info:
    lustre_file_system_id: ocid1.lustrefilesystem.oc1.iad.example
  register: __lfs
  delegate_to: localhost
  run_once: true

- name: Mount it
  ansible.posix.mount:
    path: /mnt/lustre
    src: "{{ __lfs.lustre_file_systems[0].mount_spec }}"
    fstype: lustre
    opts: defaults,_netdev,nofail,x-systemd.automount,x-systemd.mount-timeout=60
    state: mounted

- name: Every active Lustre file system named scratch in a compartment
  oci_gpu.cluster.lustre_file_system_info:
    compartment_id: ocid1.compartment.oc1..example
    display_name: scratch
    lifecycle_state: ACTIVE
    config_profile: hpc
"""

RETURN = r"""
lustre_file_systems:
  description: The Lustre file systems found (empty when a compartment has none).
  returned: success
  type: list
  elements: dict
  contains:
    id:
      description: OCID.
      type: str
    display_name:
      description: Display name.
      type: str
    compartment_id:
      description: Compartment OCID.
      type: str
    availability_domain:
      description: Availability domain.
      type: str
    file_system_name:
      description: The Lustre fsname.
      type: str
      sample: lfs1
    management_service_address:
      description: IPv4 address of the management service (MGS).
      type: str
      sample: 10.0.255.20
    lnet:
      description: LNet network of the MGS NID.
      type: str
      sample: tcp
    mgs_nid:
      description: The MGS NID.
      type: str
      sample: 10.0.255.20@tcp
    mount_spec:
      description: The mount source for clients.
      type: str
      sample: 10.0.255.20@tcp:/lfs1
    lifecycle_state:
      description: Lifecycle state.
      type: str
      sample: ACTIVE
    capacity_in_gbs:
      description: Capacity in GB.
      type: int
    major_version:
      description: Lustre major version of the service.
      type: str
    subnet_id:
      description: Subnet of the file system.
      type: str
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci._auth import (
    HAS_OCI,
    OciAuthError,
    list_pages,
    make_client,
    oci,
    oci_auth_argspec,
    oci_service_argspec,
    resolve_auth,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.storage._lustre import lustre_mount_spec, lustre_nid

FIELDS = (
    "id",
    "display_name",
    "compartment_id",
    "availability_domain",
    "file_system_name",
    "management_service_address",
    "lnet",
    "lifecycle_state",
    "capacity_in_gbs",
    "major_version",
    "subnet_id",
)


def lustre_record(data: dict[str, Any]) -> dict[str, Any]:
    """An SDK record (snake_case dict) → the returned record, with the MGS NID and mount source."""
    rec = {k: data.get(k) for k in FIELDS}
    lnet = rec.get("lnet") or "tcp"
    mgs = rec.get("management_service_address") or ""
    rec["mgs_nid"] = lustre_nid(mgs, lnet) if mgs else ""
    rec["mount_spec"] = lustre_mount_spec(mgs, rec.get("file_system_name") or "", lnet) if mgs else ""
    return rec


def main() -> None:
    argument_spec = oci_auth_argspec()
    argument_spec.update(oci_service_argspec())
    argument_spec.update(
        lustre_file_system_id={"type": "str"},
        compartment_id={"type": "str"},
        display_name={"type": "str"},
        lifecycle_state={"type": "str"},
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        mutually_exclusive=[("lustre_file_system_id", "compartment_id")],
        required_one_of=[("lustre_file_system_id", "compartment_id")],
        supports_check_mode=True,
    )
    if not HAS_OCI:
        module.fail_json(msg="the 'oci' Python SDK is required on the host that runs this module")
    p = module.params
    try:
        auth = resolve_auth(p)
    except OciAuthError as exc:
        module.fail_json(msg=str(exc))
    client = make_client(
        oci.lustre_file_storage.LustreFileStorageClient, auth, region=p["region"], endpoint=p["service_endpoint"]
    )
    try:
        if p["lustre_file_system_id"]:
            items = [client.get_lustre_file_system(p["lustre_file_system_id"]).data]
        else:
            kwargs = {k: p[k] for k in ("display_name", "lifecycle_state") if p[k]}
            items = list_pages(client.list_lustre_file_systems, compartment_id=p["compartment_id"], **kwargs)
    except oci.exceptions.ServiceError as exc:
        what = p["lustre_file_system_id"] or f"compartment {p['compartment_id']}"
        module.fail_json(msg=f"reading Lustre file system(s) of {what} failed: {exc.status} {exc.code}: {exc.message}")
    records = [lustre_record(oci.util.to_dict(item)) for item in items]
    module.exit_json(changed=False, lustre_file_systems=records)


if __name__ == "__main__":
    main()
