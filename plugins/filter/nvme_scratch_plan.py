# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.nvme_scratch_plan: which NVMe drives become scratch, and what to do."""

from __future__ import annotations

DOCUMENTATION = r"""
name: nvme_scratch_plan
short_description: Decide how the nvme_scratch role turns local NVMe drives into one scratch filesystem
version_added: 0.1.0
author: contributors to the oci_gpu.cluster project
description:
  - Reads what the node's probes found (C(lsblk -J), C(blkid -p -o export) per device,
    C(findmnt -J) at the mount point) and decides which drives to use (the given ones, or the
    NVMe namespaces that hold nothing), the layout (one drive, or an md RAID0), whether to create
    the array and the filesystem, and which refusals apply.
  - It never chooses a drive with partitions, a mount elsewhere or a foreign signature by
    discovery, and refuses to format one that was named explicitly unless O(force) is set.
options:
  _input:
    description: The output of C(lsblk -J -b -p -o NAME,TYPE,SIZE,MOUNTPOINT) (text or parsed).
    type: raw
    required: true
  blkid:
    description: Registered loop results of C(blkid -p -o export) over the candidate devices, or a dict device → output.
    type: raw
    required: true
  host:
    description: The host name used in messages.
    type: str
    required: true
  devices:
    description: Devices to use; empty means discover free NVMe namespaces.
    type: list
    elements: str
    default: []
  raid_device:
    description: The md device of the RAID0.
    type: str
    default: /dev/md0
  fstype:
    description: Filesystem type (C(xfs) or C(ext4)).
    type: str
    default: xfs
  force:
    description: Erase foreign signatures on explicitly named devices.
    type: bool
    default: false
  mount_path:
    description: The scratch mount point.
    type: str
    default: /mnt/localdisk
  mounted:
    description: Output of C(findmnt -J --mountpoint) for the mount point (registered result or text).
    type: raw
  md_available:
    description: Whether the kernel has the md driver (C(/proc/mdstat) exists).
    type: bool
    default: true
  shape:
    description: The host's OCI shape, for the expected drive count.
    type: str
    default: ""
  expected_count:
    description: Drives expected; V(-1) means the shape's NVMe count.
    type: int
    default: -1
  check_count:
    description: Whether to compare the chosen drives with the expected count.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Decide the scratch layout
  ansible.builtin.set_fact:
    __plan: >-
      {{ __lsblk.stdout | oci_gpu.cluster.nvme_scratch_plan(blkid=__blkid.results, host=inventory_hostname,
         mounted=__findmnt, md_available=__mdstat.stat.exists, shape='BM.GPU.H100.8') }}
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    errors:
      description: Refusals, each naming host, device and what was found. The role fails on any.
      type: list
      elements: str
    warnings:
      description: Notes (drives skipped by discovery, signatures erased with force).
      type: list
      elements: str
    devices:
      description: Drives chosen.
      type: list
      elements: str
    skipped:
      description: NVMe drives discovery left out, with the reason.
      type: dict
    layout:
      description: C(none), C(single) or C(raid0).
      type: str
    target:
      description: The device that carries the filesystem.
      type: str
    create_raid:
      description: Whether to create the md RAID0.
      type: bool
    mkfs:
      description: Whether to make the filesystem.
      type: bool
    wipe:
      description: Devices whose signatures are erased first (only with force).
      type: list
      elements: str
    uuid:
      description: UUID of the existing scratch filesystem (empty before it is made).
      type: str
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def nvme_scratch_plan(lsblk: Any, blkid: Any, host: str, **kwargs: Any) -> dict[str, Any]:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.storage._nvme_scratch import plan_scratch

    try:
        if kwargs.get("devices") is not None:
            kwargs["devices"] = [str(d) for d in kwargs["devices"]]
        if kwargs.get("expected_count") is not None:
            kwargs["expected_count"] = int(kwargs["expected_count"])
        return plan_scratch(lsblk, blkid, host=str(host), **kwargs)
    except (ValueError, TypeError, KeyError) as exc:
        raise AnsibleFilterError(f"nvme_scratch_plan: {exc}") from exc


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"nvme_scratch_plan": nvme_scratch_plan}
