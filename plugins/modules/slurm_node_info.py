#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_node_info
short_description: Read a node's real CPU, memory and GPU layout for its Slurm node definition
version_added: 0.1.0
description:
  - Runs C(slurmd -C) for the node's real sockets, cores, threads and memory, lists the NVIDIA
    GPU device files the node has, and returns a node record for the Slurm configuration model
    (the C(oci_gpu.cluster.slurm_config) filter).
  - Compares the GPUs the node shows with the GPUs its OCI shape promises (or O(gpu_count))
    and fails naming the node on a mismatch, so a node with a lost GPU never joins the cluster
    with a wrong gres count.
  - Tells whether the installed Slurm has the NVML GPU plugin, so gres autodetection is used only
    where it exists.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  name:
    description: The Slurm node name.
    type: str
    required: true
  shape:
    description: The node's OCI shape (for example C(BM.GPU.H100.8)); empty when unknown.
    type: str
    default: ""
  gpu_count:
    description:
      - GPUs the node must show. Overrides the shape's count; V(-1) means take it from the shape
        (and skip the check when the shape is unknown).
    type: int
    default: -1
  gpu_type:
    description: Gres type; default is the shape's GPU model (for example C(h100)).
    type: str
    default: ""
  features:
    description: Extra node features. The shape (lower case, dots as underscores) is always added.
    type: list
    elements: str
    default: []
  weight:
    description: Node weight; omitted when V(0).
    type: int
    default: 0
  memory_reserve_mb:
    description: MiB of the reported memory kept away from jobs (for the OS and daemons).
    type: int
    default: 0
  device_glob:
    description: Where GPU device files are looked for.
    type: str
    default: /dev/nvidia*
  slurmd_path:
    description: The slurmd binary.
    type: path
    default: slurmd
  plugin_dirs:
    description: Directories searched for Slurm plugins (for the NVML plugin check).
    type: list
    elements: path
    default:
      - /usr/lib/x86_64-linux-gnu/slurm-wlm
      - /usr/lib/aarch64-linux-gnu/slurm-wlm
      - /usr/lib64/slurm
      - /usr/lib/slurm
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    description: A second run with the same arguments changes nothing.
    support: full
  platform:
    support: N/A
    platforms: posix
"""

EXAMPLES = r"""
- name: Read this node's layout
  oci_gpu.cluster.slurm_node_info:
    name: "{{ inventory_hostname }}"
    shape: BM.GPU.H100.8
  register: __slurm_node
"""

RETURN = r"""
record:
  description: The node record for the Slurm configuration model.
  returned: success
  type: dict
  sample: {"name": "gpu1", "cpus": 224, "sockets": 2, "cores_per_socket": 56, "threads_per_core": 2,
           "real_memory": 2063000, "gpu_type": "h100", "gpu_count": 8,
           "gpu_files": ["/dev/nvidia0", "/dev/nvidia1"], "features": ["bm_gpu_h100_8"]}
gpu_devices:
  description: GPU device files found, in numeric order.
  returned: always
  type: list
  elements: str
slurm_version:
  description: The version C(slurmd -V) prints.
  returned: success
  type: str
  sample: "22.05.8"
nvml_plugin:
  description: Whether the installed Slurm has the NVML GPU plugin (C(gpu_nvml.so)).
  returned: always
  type: bool
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils._slurm_nodes import (
    gpu_check,
    gpu_devices_sorted,
    node_record,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "shape": {"type": "str", "default": ""},
            "gpu_count": {"type": "int", "default": -1},
            "gpu_type": {"type": "str", "default": ""},
            "features": {"type": "list", "elements": "str", "default": []},
            "weight": {"type": "int", "default": 0},
            "memory_reserve_mb": {"type": "int", "default": 0},
            "device_glob": {"type": "str", "default": "/dev/nvidia*"},
            "slurmd_path": {"type": "path", "default": "slurmd"},
            "plugin_dirs": {
                "type": "list",
                "elements": "path",
                "default": [
                    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
                    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
                    "/usr/lib64/slurm",
                    "/usr/lib/slurm",
                ],
            },
        },
        supports_check_mode=True,
    )
    p = module.params
    name = p["name"]
    devices = gpu_devices_sorted(glob.glob(p["device_glob"]))
    nvml = any(os.path.exists(os.path.join(d, "gpu_nvml.so")) for d in p["plugin_dirs"])
    expected = None if p["gpu_count"] < 0 else p["gpu_count"]
    problem = gpu_check(name, p["shape"] or None, devices, expected)
    if problem:
        module.fail_json(msg=problem, gpu_devices=devices, nvml_plugin=nvml)

    slurmd = module.get_bin_path(p["slurmd_path"]) if not os.path.isabs(p["slurmd_path"]) else p["slurmd_path"]
    if not slurmd or not os.path.exists(slurmd):
        module.fail_json(msg=f"node {name}: slurmd is not installed ({p['slurmd_path']})", gpu_devices=devices)
    rc, out, err = module.run_command([slurmd, "-C"])
    if rc != 0:
        module.fail_json(msg=f"node {name}: 'slurmd -C' failed: {err.strip() or out.strip()}", gpu_devices=devices)
    version = module.run_command([slurmd, "-V"])[1]
    try:
        record = node_record(
            name,
            out,
            devices,
            shape=p["shape"] or None,
            gpu_type=p["gpu_type"] or None,
            features=p["features"],
            weight=p["weight"] or None,
            memory_reserve_mb=p["memory_reserve_mb"],
        )
    except ValueError as exc:
        module.fail_json(msg=f"node {name}: {exc}", gpu_devices=devices)
    module.exit_json(
        changed=False,
        record=record,
        gpu_devices=devices,
        slurm_version=version.strip().split()[-1] if version.strip() else "",
        nvml_plugin=nvml,
    )


if __name__ == "__main__":
    main()
