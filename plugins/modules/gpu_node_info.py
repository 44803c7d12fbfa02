#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_node_info
short_description: Read what a GPU node has (driver, GPUs, fabric, RDMA NICs, services) and judge it
version_added: 0.3.0
description:
  - One read-only call per GPU node. Reads the NVIDIA driver version (O(driver_version_file), else
    C(nvidia-smi -q)), the GPU device files, C(nvidia-smi -q) (GPUs, persistence mode, fabric state),
    the loaded kernel modules (O(modules_file)), whether the driver ships C(nvidia_peermem)
    (C(modinfo)), the RDMA NICs present (O(rdma_dir)) and the state of the NVIDIA services
    (C(nvidia-persistenced), C(nvidia-fabricmanager), C(nvidia-imex), C(nvidia-dcgm)), and the
    interface of the default IPv4 route (C(/proc/net/route)).
  - Returns RV(problems), each naming the node, the check, what was expected and what was found;
    the module itself never fails on them (the role decides), so a check-mode run reports them too.
  - Every path and command can be pointed elsewhere, for tests and for images that install the
    driver in another place.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  name:
    description: The node's name, used in every problem.
    type: str
    required: true
  shape:
    description: The node's OCI shape; empty judges only what needs no shape (driver, given O(gpu_count)).
    type: str
    default: ""
  gpu_count:
    description: GPUs the node must show; V(-1) takes the shape's count.
    type: int
    default: -1
  driver_min:
    description: The lowest driver version accepted (C(550.90.07)); empty accepts any loaded driver.
    type: str
    default: ""
  checks:
    description:
      - "Checks to turn off, as C({check: false}): C(driver), C(gpu_count), C(fabric), C(peermem),
        C(rdma_nics), C(persistence)."
    type: dict
    default: {}
  stage:
    description:
      - V(preflight) judges what no run can fix (driver, GPUs, NICs, missing services); V(service)
        also what the role's service step should have brought up (fabric state, persistence mode,
        C(nvidia_peermem)). RV(service_problems) judges the same facts as V(service) does, whatever
        O(stage) is, so that a role can skip a second read when nothing was left to start.
    type: str
    choices: [preflight, service]
    default: preflight
  driver_version_file:
    description: The loaded driver's version file.
    type: path
    default: /sys/module/nvidia/version
  nvidia_smi:
    description: The C(nvidia-smi) command.
    type: str
    default: nvidia-smi
  device_glob:
    description: The GPU device files.
    type: str
    default: /dev/nvidia*
  modules_file:
    description: The loaded kernel modules.
    type: path
    default: /proc/modules
  rdma_dir:
    description: Where the RDMA NICs appear.
    type: path
    default: /sys/class/infiniband
  route_file:
    description: The kernel's IPv4 routing table, read for RV(default_ifname).
    type: path
    default: /proc/net/route
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - oci_gpu.cluster._files_record
  - ansible.builtin.action_common_attributes
attributes:
  platform:
    support: N/A
"""

EXAMPLES = r"""
- name: Read and judge this GPU node
  oci_gpu.cluster.gpu_node_info:
    name: "{{ inventory_hostname }}"
    shape: BM.GPU.H100.8
    driver_min: "550"
  register: __gpu_node_probe
"""

RETURN = r"""
files_state:
  description: The state of each path of O(files_record), as M(oci_gpu.cluster.slurm_node_info) returns it.
  returned: always
  type: dict
problems:
  description: What is wrong, one line per check; empty when the node passes.
  returned: always
  type: list
  elements: str
  sample: ["node gpu1: gpu_count: its shape BM.GPU.H100.8 promises 8 GPU(s) but the node shows 7 (...)"]
driver_version:
  description: The loaded driver's version; empty when none is loaded.
  returned: always
  type: str
  sample: 550.90.07
driver_source:
  description: Where the version was read (the file, or nvidia-smi), or why it could not be.
  returned: always
  type: str
gpu_devices:
  description: GPU device files found, in numeric order.
  returned: always
  type: list
  elements: str
smi:
  description:
    - From C(nvidia-smi -q), C(gpus) (PCI addresses), C(persistence) and C(fabric) per GPU; null when it failed.
  returned: always
  type: dict
smi_error:
  description: What the C(nvidia-smi) exit code means; empty when it answered.
  returned: always
  type: str
modules:
  description: The NVIDIA and RDMA kernel modules loaded.
  returned: always
  type: list
  elements: str
peermem_available:
  description: Whether the driver ships C(nvidia_peermem).
  returned: always
  type: bool
service_problems:
  description: What O(stage=service) would report now; empty when the NVIDIA services are up as they should be.
  returned: always
  type: list
  elements: str
services_to_start:
  description: The RV(services) that are not both active and enabled, in start order.
  returned: always
  type: list
  elements: str
default_ifname:
  description:
    - The interface of the default IPv4 route with the lowest metric (what Ansible's C(default_ipv4)
      fact names), read without a second fact-gathering call; empty when there is no default route.
  returned: always
  type: str
  sample: eth0
rdma_nics:
  description: RDMA NIC names present.
  returned: always
  type: list
  elements: str
units:
  description: Per NVIDIA service, C(loaded), C(active) and C(enabled).
  returned: always
  type: dict
services:
  description:
    - The installed services the node should run, in start order - C(nvidia-persistenced), the fabric
      service its shape needs (RV(gpu_fabric)), C(nvidia-dcgm).
  returned: always
  type: list
  elements: str
expected_gpus:
  description: GPUs the node must show (O(gpu_count), else the shape's); null when neither says.
  returned: always
  type: int
gpu_fabric:
  description: The shape's GPU fabric service kind, C(fabricmanager) or C(imex); null when it needs none.
  returned: always
  type: str
rdma_shape:
  description: Whether the shape has RDMA NICs (a cluster network).
  returned: always
  type: bool
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._file_state import read_state
from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._systemd import running, unit_states
from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu._health import parse_smi_query, smi_exit_problem
from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu._node import (
    CHECKS,
    UNITS,
    default_route_ifname,
    driver_from_smi,
    node_problems,
    shape_facts,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodes import gpu_devices_sorted


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "shape": {"type": "str", "default": ""},
            "gpu_count": {"type": "int", "default": -1},
            "driver_min": {"type": "str", "default": ""},
            "checks": {"type": "dict", "default": {}},
            "stage": {"type": "str", "default": "preflight", "choices": ["preflight", "service"]},
            "driver_version_file": {"type": "path", "default": "/sys/module/nvidia/version"},
            "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
            "device_glob": {"type": "str", "default": "/dev/nvidia*"},
            "modules_file": {"type": "path", "default": "/proc/modules"},
            "rdma_dir": {"type": "path", "default": "/sys/class/infiniband"},
            "route_file": {"type": "path", "default": "/proc/net/route"},
            "files_record": {"type": "path", "default": ""},
        },
        supports_check_mode=True,
    )
    p = module.params
    unknown = sorted(set(p["checks"]) - set(CHECKS))
    if unknown:
        module.fail_json(msg=f"node {p['name']}: checks: unknown check(s) {', '.join(unknown)}")
    smi_bin = module.get_bin_path(p["nvidia_smi"]) if not os.path.isabs(p["nvidia_smi"]) else p["nvidia_smi"]
    smi, smi_error, smi_out = None, "nvidia-smi is not installed", ""
    if smi_bin and os.path.exists(smi_bin):
        rc, smi_out, err = module.run_command([smi_bin, "-q"])
        smi_error = smi_exit_problem(rc, smi_out + err) or ""
        smi = None if smi_error else parse_smi_query(smi_out)
    version = _read(p["driver_version_file"]).strip()
    source = p["driver_version_file"] if version else f"no {p['driver_version_file']}"
    if not version and smi is not None:
        version, source = driver_from_smi(smi_out), "nvidia-smi -q"
    if not version and smi_error:
        source += f"; {smi_error}"
    modules = sorted(
        line.split()[0]
        for line in _read(p["modules_file"]).splitlines()
        if line.split() and (line.startswith("nvidia") or line.startswith(("mlx5", "ib_", "rdma")))
    )
    modinfo = module.get_bin_path("modinfo")
    peermem = bool(modinfo) and module.run_command([modinfo, "-n", "nvidia_peermem"])[0] == 0
    rdma = sorted(os.listdir(p["rdma_dir"])) if os.path.isdir(p["rdma_dir"]) else []
    facts = {
        "driver_version": version,
        "driver_source": source,
        "gpu_devices": gpu_devices_sorted(glob.glob(p["device_glob"])),
        "smi": smi,
        "smi_error": smi_error,
        "modules": modules,
        "peermem_available": peermem,
        "rdma_nics": rdma,
        "units": unit_states(module, list(UNITS.values())),
    }
    settings = {
        "shape": p["shape"],
        "gpu_count": None if p["gpu_count"] < 0 else p["gpu_count"],
        "driver_min": p["driver_min"],
        "checks": p["checks"],
    }
    problems = node_problems(p["name"], facts, settings, p["stage"])
    service_problems = problems if p["stage"] == "service" else node_problems(p["name"], facts, settings, "service")
    asked = shape_facts(p["shape"] or None, settings["gpu_count"], facts["units"])
    up = running(facts["units"])
    module.exit_json(
        changed=False,
        problems=problems,
        service_problems=service_problems,
        expected_gpus=asked["expected_gpus"],
        gpu_fabric=asked["gpu_fabric"],
        services=asked["services"],
        services_to_start=[unit for unit in asked["services"] if unit not in up],
        default_ifname=default_route_ifname(_read(p["route_file"])),
        rdma_shape=bool(asked["rdma_hcas"]),
        files_state=read_state(p["files_record"]),
        **facts,
    )


if __name__ == "__main__":
    main()
