#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_node_info
short_description: Read what a Slurm host has and runs, in one call
version_added: 0.1.0
description:
  - One read-only call per host for the Slurm role's plan, so the control node computes the whole
    cluster's configuration once from every host's answer.
  - Reads the installed Slurm version from C(slurmctld -V) or C(slurmd -V) (they print before reading
    any configuration), else from the package database (C(dpkg-query), C(rpm)); in check mode on a host
    where Slurm is not installed yet, from the package candidate (C(apt-cache policy)).
  - Reads the live C(slurm.conf) the host runs with (C(/etc/slurm/slurm.conf), or the copy configless
    slurmd keeps under C(/run/slurm/conf)).
  - On compute hosts (O(roles) contains V(compute)), runs C(slurmd -C) for the node's real sockets,
    cores, threads and memory, lists the NVIDIA GPU device files, and returns a node record for the
    Slurm configuration model. Compares the GPUs the node shows with the GPUs its OCI shape promises
    (or O(gpu_count)) and fails naming the node on a mismatch, so a node with a lost GPU never joins
    the cluster with a wrong gres count.
  - Tells whether the installed Slurm has the NVML GPU plugin, so gres autodetection is used only
    where it exists.
  - Reports the topology plugins the installed Slurm has (RV(topology_plugins)) and the live topology
    files (RV(live_topology)); with O(topology_imds_url), on compute hosts, reads the node's place in
    OCI's RDMA fabric from IMDS C(/opc/v2/host/) (the C(Authorization) header set to C(Bearer Oracle)) and fails
    naming the node when it differs from O(topology_expected).
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  topology_imds_url:
    description:
      - IMDS's host document, read on compute hosts for RV(topology); empty reads nothing. A host of a known
        shape that is not a bare-metal GPU shape (no RDMA fabric) reads nothing either.
      - OCI's is C(http://169.254.169.254/opc/v2/host/).
    type: str
    default: ""
  topology_timeout:
    description: Seconds to wait for IMDS.
    type: float
    default: 2
  topology_expected:
    description:
      - The node's fabric ids as the inventory gives them (C(hpc_island_id), C(network_block_id),
        C(local_block_id), C(gpu_memory_fabric_id), C(rack_id)); empty values are ignored.
      - Where IMDS has the same id with another value, the module fails naming the node and both values.
      - When IMDS cannot be read, these are the node's place.
    type: dict
    default: {}
  topology_required:
    description: Fail, naming the node, when IMDS is read but cannot be, and O(topology_expected) is empty.
    type: bool
    default: false
  accounts:
    description:
      - Users whose UID and GID are returned in RV(accounts) (Slurm's SlurmUser). The plan refuses hosts where
        they differ from the primary controller's.
    type: list
    elements: str
    default: [slurm]
  control_time:
    description:
      - The control node's clock (seconds since the epoch) when the task was sent to this host; RV(clock_skew) is
        this host's clock minus it. Omit to skip.
    type: float
  name:
    description: The Slurm node name.
    type: str
    required: true
  units:
    description:
      - Systemd services (without C(.service)) whose state to report in RV(units), read with one
        C(systemctl show); the role skips starting a service that is already active and enabled.
    type: list
    elements: str
    default: []
  roles:
    description: What the host runs; a node record is made only for V(compute).
    type: list
    elements: str
    default: [compute]
  conf_paths:
    description: Where the live C(slurm.conf) is looked for, first found wins.
    type: list
    elements: path
    default: [/etc/slurm/slurm.conf, /run/slurm/conf/slurm.conf]
  conf_set:
    description:
      - The files, beside the live C(slurm.conf), whose SHA-256 is returned in RV(conf_sha256) (empty for a
        missing file); the topology files are added when they exist.
    type: list
    elements: str
    default: [cgroup.conf, gres.conf, slurm.conf, oci.conf, plugstack.conf]
  applied_path:
    description:
      - A file (JSON, file name to SHA-256) where the role records the configuration files the
        daemons of this host last applied; compared with the live files in RV(behind). Empty for none.
    type: path
    default: ""
  dbd_conf:
    description:
      - On a dbd host, the live C(slurmdbd.conf) and the copy the role keeps of the one slurmdbd last started with
        (C([live, applied])); RV(dbd_behind) says whether they differ. Empty for none.
      - Only whether they differ is returned - never a checksum of a file that holds the database password.
    type: list
    elements: path
    default: []
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
  sysctl_dir:
    description: Where the kernel settings are read (C(userns_limits)).
    type: path
    default: /proc/sys
  pam_modules:
    description:
      - PAM modules to look for (for example C(pam_slurm_adopt.so)) in the directories distributions
        install them in; RV(pam_modules) gives each one's path.
    type: list
    elements: str
    default: []
  pam_services:
    description:
      - PAM services (for example C(sshd)) whose stack file under O(pam_dir) to read; RV(pam_services) gives
        each one's text, so that a run whose edits are already in place makes no call to edit it.
    type: list
    elements: str
    default: []
  pam_dir:
    description: Where the PAM service files are.
    type: path
    default: /etc/pam.d
  pyxis_plugin:
    description:
      - Read the pyxis SPANK plugin at this path (empty string - the first C(spank_pyxis.so) in Slurm's
        plugin directories) and the release it was built for; RV(pyxis) gives what was found. Omitted,
        nothing is read.
    type: str
  plugin_dirs:
    description: Directories searched for Slurm plugins (for the NVML plugin check).
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - oci_gpu.cluster._files_record
  - oci_gpu.cluster._slurm_plugin_dirs
  - ansible.builtin.action_common_attributes
attributes:
  platform:
    support: N/A
"""

EXAMPLES = r"""
- name: Read what this host has and runs
  oci_gpu.cluster.slurm_node_info:
    name: "{{ inventory_hostname }}"
    roles: [compute]
    shape: BM.GPU.H100.8
  register: __slurm_probe
"""

RETURN = r"""
files_state:
  description:
    - The state of each path of O(files_record) (empty without it) - C(kind) (C(file), C(directory), C(link),
      C(other) or C(absent)), C(owner), C(group), C(uid), C(gid), C(mode), and for a file C(sha256) and
      C(managed). The digest of a file the record marks as a secret is never read.
  returned: always
  type: dict
record:
  description: The node record for the Slurm configuration model; compute hosts with slurmd installed.
  returned: success
  type: dict
  sample: {"name": "gpu1", "cpus": 224, "sockets": 2, "cores_per_socket": 56, "threads_per_core": 2,
           "real_memory": 2063000, "gpu_type": "h100", "gpu_count": 8,
           "gpu_files": ["/dev/nvidia0", "/dev/nvidia1"], "features": ["bm_gpu_h100_8"]}
units:
  description:
    - Per unit asked in O(units), its C(loaded) (LoadState), C(active) (ActiveState) and
      C(enabled) (UnitFileState).
  returned: always
  type: dict
  sample: {"slurmd": {"loaded": "loaded", "active": "active", "enabled": "enabled"}}
running:
  description: The units of O(units) that are active and enabled.
  returned: always
  type: list
  elements: str
  sample: [slurmd]
gpu_devices:
  description: GPU device files found, in numeric order.
  returned: always
  type: list
  elements: str
slurm_version:
  description: The installed Slurm version; empty when none can be read.
  returned: always
  type: str
  sample: "22.05.8"
slurm_version_source:
  description: Where the version came from (C(slurmctld -V), C(slurmd -V), C(dpkg-query), C(rpm), C(apt-cache)).
  returned: always
  type: str
live_conf:
  description: Text of the live C(slurm.conf); empty when the host has none.
  returned: always
  type: str
live_conf_path:
  description: Where O(conf_paths) found it; empty when the host has none.
  returned: always
  type: str
accounts:
  description: C(uid) and C(gid) of each user of O(accounts) on this host; null for a user it does not have.
  returned: always
  type: dict
  sample: {"slurm": {"uid": 64030, "gid": 64030}}
clock_skew:
  description:
    - This host's clock minus O(control_time), in seconds (plus the time the task took to reach the host);
      null without O(control_time).
  returned: always
  type: float
pam_services:
  description:
    - The text of each of O(pam_services)' stack files; null when it is missing or cannot be read (a role
      then edits it as if it had not read it).
  returned: always
  type: dict
  sample: {"sshd": "@include common-auth\naccount required pam_nologin.so\n"}
pyxis:
  description:
    - With O(pyxis_plugin), the plugin's C(path) (empty when none was found), whether it was C(found), the
      C(version) it was built for (C(major.minor.micro); empty without a C(plugin_version) symbol) and, when
      the file could not be read as a shared object, the C(error). Empty without O(pyxis_plugin).
  returned: always
  type: dict
  sample: {"path": "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so", "found": true, "version": "24.11.5"}
pam_modules:
  description: Each of O(pam_modules) with the path it was found at; empty string when not installed.
  returned: always
  type: dict
  sample: {"pam_slurm_adopt.so": "/lib/x86_64-linux-gnu/security/pam_slurm_adopt.so"}
conf_sha256:
  description: SHA-256 of each file of O(conf_set) beside the live C(slurm.conf) (empty string when missing).
  returned: always
  type: dict
  sample: {"cgroup.conf": "9f2c...", "gres.conf": "", "slurm.conf": "41d0..."}
applied_sha256:
  description: What O(applied_path) records (the files the daemons last applied); empty when none.
  returned: always
  type: dict
behind:
  description: >-
    Whether the live files differ from what the daemons last applied (a run that wrote them was
    interrupted or failed before its restart or reconfigure); false when nothing is recorded.
  returned: always
  type: bool
dbd_behind:
  description: >-
    Whether the live C(slurmdbd.conf) differs from the one slurmdbd last started with (a run that wrote it, or
    changed the database password, was interrupted before slurmdbd restarted); false when no copy is kept yet.
  returned: always
  type: bool
dbd_copy_current:
  description: >-
    Whether the copy is kept as the role keeps it - the same content as the live C(slurmdbd.conf), owned by root,
    mode 0600 - so that a run which changes neither needs not copy it again.
  returned: always
  type: bool
nvml_plugin:
  description: Whether the installed Slurm has the NVML GPU plugin (C(gpu_nvml.so)).
  returned: always
  type: bool
userns_limits:
  description:
    - The node's user namespace limits (C(user.max_user_namespaces), C(user.max_mnt_namespaces)),
      which rootless containers need; C(null) where the kernel has no such setting.
  returned: always
  type: dict
  sample: {"user.max_user_namespaces": 63704, "user.max_mnt_namespaces": 63704}
topology_plugins:
  description: The topology plugins the installed Slurm has (C(topology_<name>.so)), by name.
  returned: always
  type: list
  elements: str
  sample: [block, default, tree]
live_topology:
  description: Text of C(topology.conf) and C(topology.yaml) beside the live C(slurm.conf), those that exist.
  returned: always
  type: dict
topology:
  description: The node's fabric ids (IMDS's, else O(topology_expected)); empty off the fabric.
  returned: compute hosts with O(topology_imds_url)
  type: dict
  sample: {"hpc_island_id": "ocid1.computehpcisland...", "local_block_id": "ocid1.computelocalblock..."}
topology_source:
  description: Where RV(topology) comes from - V(imds), V(inventory), V(imds+inventory) or V(none).
  returned: compute hosts with O(topology_imds_url)
  type: str
imds_error:
  description: Why IMDS could not be read; empty when it was.
  returned: compute hosts with O(topology_imds_url)
  type: str
"""

import glob
import hashlib
import os
import pwd
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._file_state import read_state
from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._files import read_record, read_text
from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._systemd import running, unit_states
from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci._imds import node_topology
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._containers import read_plugin
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._installed import (
    candidate_version,
    installed_version,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodes import (
    gpu_check,
    gpu_devices_sorted,
    node_record,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._topology import TOPOLOGY_FILES
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import PLUGIN_DIRS


def _slurm_version(module: AnsibleModule, slurmd: str | None) -> tuple[str, str]:
    """(version, source): the daemons first (no config needed), then the package database; in check
    mode on a fresh host, the version the install step would bring."""
    found = installed_version(module, slurmd)
    if not found[0] and module.check_mode:
        found = candidate_version(module)
    return found


def file_sha256(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return ""


def applied_record(path: str) -> dict[str, str]:
    """The role's record of the files the daemons applied; {} when missing or unreadable."""
    return read_record(path)


def dbd_copy_state(paths: list[str]) -> tuple[bool, bool]:
    """(behind, current) for the live slurmdbd.conf (``paths[0]``) and the copy of the one slurmdbd last
    started with (``paths[1]``), each file hashed once. Behind: both present and different (False without
    a copy, none kept yet, or without a live file). Current: both present and equal, the copy root's,
    mode 0600."""
    if len(paths) != 2 or not all(os.path.isfile(p) for p in paths):
        return False, False
    if file_sha256(paths[0]) != file_sha256(paths[1]):
        return True, False
    copy = os.stat(paths[1])
    return False, copy.st_uid == 0 and copy.st_mode & 0o777 == 0o600


USERNS_SYSCTLS = ("user.max_user_namespaces", "user.max_mnt_namespaces")


def _sysctl(root: str, key: str) -> int | None:
    """A kernel setting as a number, read under ``root`` (``/proc/sys``); None where there is none."""
    try:
        with open(os.path.join(root, *key.split(".")), encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def topology_plugins(plugin_dirs: list[str]) -> list[str]:
    """Names of the topology plugins in the first plugin directory that exists (``tree``, ``block``...)."""
    for directory in plugin_dirs:
        if os.path.isdir(directory):
            found = glob.glob(os.path.join(directory, "topology_*.so"))
            return sorted(os.path.basename(f)[len("topology_") : -len(".so")] for f in found)
    return []


def _account(user: str) -> dict[str, int] | None:
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    return {"uid": entry.pw_uid, "gid": entry.pw_gid}


def _live_conf(paths: list[str]) -> tuple[str, str]:
    for path in paths:
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read(), path
    return "", ""


# Where distributions install PAM modules (Debian's multiarch directory, EL's lib64), in search order.
PAM_DIRS = (
    "/lib/security",
    "/usr/lib/security",
    "/lib/*/security",
    "/usr/lib/*/security",
    "/lib64/security",
    "/usr/lib64/security",
)


def pam_module_path(module_name: str) -> str:
    """The first path of ``module_name`` in :data:`PAM_DIRS`; "" when it is in none."""
    for pattern in PAM_DIRS:
        for directory in sorted(glob.glob(pattern)):
            path = os.path.join(directory, module_name)
            if os.path.exists(path):
                return path
    return ""


def _pyxis(path: str) -> dict:
    """What read_plugin finds of pyxis; an unreadable file is named for the plan to refuse."""
    try:
        return read_plugin(path, "spank_pyxis.so")
    except ValueError as exc:
        return {"path": path, "found": True, "version": "", "error": str(exc)}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "roles": {"type": "list", "elements": "str", "default": ["compute"]},
            "conf_paths": {
                "type": "list",
                "elements": "path",
                "default": ["/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf"],
            },
            "shape": {"type": "str", "default": ""},
            "gpu_count": {"type": "int", "default": -1},
            "gpu_type": {"type": "str", "default": ""},
            "features": {"type": "list", "elements": "str", "default": []},
            "weight": {"type": "int", "default": 0},
            "memory_reserve_mb": {"type": "int", "default": 0},
            "units": {"type": "list", "elements": "str", "default": []},
            "conf_set": {
                "type": "list",
                "elements": "str",
                "default": ["cgroup.conf", "gres.conf", "slurm.conf", "oci.conf", "plugstack.conf"],
            },
            "applied_path": {"type": "path", "default": ""},
            "dbd_conf": {"type": "list", "elements": "path", "default": []},
            "device_glob": {"type": "str", "default": "/dev/nvidia*"},
            "slurmd_path": {"type": "path", "default": "slurmd"},
            "plugin_dirs": {"type": "list", "elements": "path", "default": list(PLUGIN_DIRS)},
            "sysctl_dir": {"type": "path", "default": "/proc/sys"},
            "pam_modules": {"type": "list", "elements": "str", "default": []},
            "pyxis_plugin": {"type": "str"},
            "pam_services": {"type": "list", "elements": "str", "default": []},
            "pam_dir": {"type": "path", "default": "/etc/pam.d"},
            "topology_imds_url": {"type": "str", "default": ""},
            "topology_timeout": {"type": "float", "default": 2},
            "topology_expected": {"type": "dict", "default": {}},
            "topology_required": {"type": "bool", "default": False},
            "accounts": {"type": "list", "elements": "str", "default": ["slurm"]},
            "control_time": {"type": "float"},
            "files_record": {"type": "path", "default": ""},
        },
        supports_check_mode=True,
    )
    p = module.params
    # The clock first, before anything slow runs.
    skew = None if p["control_time"] is None else round(time.time() - p["control_time"], 1)
    name = p["name"]
    devices = gpu_devices_sorted(glob.glob(p["device_glob"]))
    nvml = any(os.path.exists(os.path.join(d, "gpu_nvml.so")) for d in p["plugin_dirs"])
    slurmd = module.get_bin_path(p["slurmd_path"]) if not os.path.isabs(p["slurmd_path"]) else p["slurmd_path"]
    if slurmd and not os.path.exists(slurmd):
        slurmd = None
    version, source = _slurm_version(module, slurmd)
    live_conf, live_path = _live_conf(p["conf_paths"])
    live_dir = os.path.dirname(live_path)
    conf_sha = {n: file_sha256(os.path.join(live_dir, n)) if live_dir else "" for n in p["conf_set"]}
    applied = applied_record(p["applied_path"])
    live_topology = {}
    for topo_name in TOPOLOGY_FILES:
        topo_path = os.path.join(live_dir, topo_name) if live_dir else ""
        if topo_path and os.path.isfile(topo_path):
            with open(topo_path, encoding="utf-8", errors="replace") as handle:
                live_topology[topo_name] = handle.read()
            conf_sha[topo_name] = file_sha256(topo_path)
    units = unit_states(module, p["units"])
    dbd_behind, dbd_copy_current = dbd_copy_state(p["dbd_conf"])
    result = {
        "changed": False,
        "units": units,
        "running": running(units),
        "gpu_devices": devices,
        "nvml_plugin": nvml,
        "slurm_version": version,
        "slurm_version_source": source,
        "live_conf": live_conf,
        "live_conf_path": live_path,
        "conf_sha256": conf_sha,
        "applied_sha256": applied,
        # Only the files the record names: a file the role never wrote (a site's own topology.conf,
        # or one a record from before the topology existed does not list) never makes a node behind.
        "behind": bool(applied) and bool(live_path) and any(conf_sha.get(k, "") != v for k, v in applied.items()),
        "dbd_behind": dbd_behind,
        "dbd_copy_current": dbd_copy_current,
        "topology_plugins": topology_plugins(p["plugin_dirs"]),
        "live_topology": live_topology,
        "userns_limits": {key: _sysctl(p["sysctl_dir"], key) for key in USERNS_SYSCTLS},
        "accounts": {user: _account(user) for user in p["accounts"]},
        "clock_skew": skew,
        "pam_modules": {module_name: pam_module_path(module_name) for module_name in p["pam_modules"]},
        "pyxis": {} if p["pyxis_plugin"] is None else _pyxis(p["pyxis_plugin"]),
        "pam_services": {svc: read_text(os.path.join(p["pam_dir"], svc)) for svc in p["pam_services"]},
        "files_state": read_state(p["files_record"]),
    }
    if "compute" not in p["roles"]:
        module.exit_json(**result)
    # Only bare-metal GPU shapes sit in the RDMA fabric: a known other shape reads nothing.
    in_fabric = not p["shape"] or _shapes.shape(p["shape"]) is None or _shapes.is_bare_metal_gpu(p["shape"])
    if p["topology_imds_url"] and not in_fabric:
        result.update(topology={}, topology_source="none", imds_error="")
    elif p["topology_imds_url"]:
        placed = node_topology(
            name,
            p["topology_expected"],
            p["topology_imds_url"],
            p["topology_timeout"],
            p["topology_required"],
            open_url,
        )
        if "failed" in placed:
            module.fail_json(msg=placed["failed"], **result)
        result.update(topology=placed["topology"], topology_source=placed["source"], imds_error=placed["imds_error"])

    expected = None if p["gpu_count"] < 0 else p["gpu_count"]
    problem = gpu_check(name, p["shape"] or None, devices, expected)
    if problem:
        module.fail_json(msg=problem, **result)
    if not slurmd:
        if module.check_mode:
            # Check mode on a fresh host: slurmd would be installed; there is no layout to read yet.
            module.exit_json(**result)
        module.fail_json(msg=f"node {name}: slurmd is not installed ({p['slurmd_path']})", **result)
    rc, out, err = module.run_command([slurmd, "-C"])
    if rc != 0:
        module.fail_json(msg=f"node {name}: 'slurmd -C' failed: {err.strip() or out.strip()}", **result)
    try:
        result["record"] = node_record(
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
        module.fail_json(msg=f"node {name}: {exc}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
