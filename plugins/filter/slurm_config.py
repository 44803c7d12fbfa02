# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_config: render Slurm configuration files from structured cluster data."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_config
short_description: Render slurm.conf, gres.conf and cgroup.conf from structured cluster data
version_added: 0.1.0
author: contributors to the oci_gpu.cluster project
description:
  - Validates a cluster description (controllers, node records, partitions, overrides) and renders the
    text of C(slurm.conf), C(gres.conf) and C(cgroup.conf), without the C(ansible_managed) header.
  - Nodes with identical hardware collapse into one C(NodeName=<hostlist>) line, so the output grows with
    the number of node types, not with the number of nodes. Output is deterministic (sorted, no timestamps).
  - Defaults for a GPU cluster are merged under the overrides, for example C(SelectType=select/cons_tres),
    C(SelectTypeParameters=CR_Core_Memory), C(GresTypes=gpu), C(ProctrackType=proctrack/cgroup),
    C(TaskPlugin=task/cgroup,task/affinity); C(cgroup.conf) constrains cores, RAM and devices.
  - With memory consumable, C(DefMemPerCPU) defaults to the smallest node's memory per CPU, so that a job asking
    for no memory does not hold a whole GPU node; setting or omitting it, or setting C(DefMemPerNode) or
    C(DefMemPerGPU), in O(_input.config) replaces that default.
  - With C(SchedulerType=sched/backfill), C(SchedulerParameters) gains C(bf_window) covering the longest finite
    partition C(max_time) (at most 30 days; Slurm's own default is one day, and a longer job starves) and
    C(bf_resolution) of one minute per day of window, unless O(_input.config) sets C(bf_window).
  - C(PrivateData) words are checked (Slurm skips an unknown one without a word, showing what was to be hidden).
  - Refuses an invalid description before anything is written, listing every problem and naming its culprit
    (duplicate node names, a partition naming an undefined node, a GPU count that disagrees with the node's
    device files, an empty controller list, an unknown or conflicting key, invalid numbers, a malformed hostlist).
  - Keys in O(_input.config) and O(_input.cgroup) are matched case-insensitively, as Slurm does, and an unknown
    key is refused with the closest known key as a suggestion.
options:
  _input:
    description: The cluster description.
    type: dict
    required: true
    suboptions:
      cluster_name:
        description: Slurm C(ClusterName); lower case letters, digits, C(_) and C(-).
        type: str
        required: true
      controllers:
        description:
          - slurmctld hosts, primary first, then backups. Each item is a host name or a dict with
            C(name) and C(address), rendered as C(SlurmctldHost=name(address)).
        type: list
        elements: raw
        required: true
      nodes:
        description:
          - Node records. Keys C(name) (a host name or a hostlist expression such as C(gpu[001-016])), C(cpus),
            C(sockets), C(cores_per_socket), C(threads_per_core), C(real_memory) (MiB), C(gpu_type),
            C(gpu_count), C(gpu_files) (device paths or hostlist expressions, default
            C(/dev/nvidia[0-<gpu_count-1>])), C(features), C(weight), C(address) (C(NodeAddr)) and
            C(options) (other C(NodeName) keys such as C(TmpDisk) or C(MemSpecLimit)).
        type: list
        elements: dict
        default: []
      partitions:
        description:
          - Partitions. Keys C(name), C(nodes) (node names and/or hostlist expressions, or C(ALL)),
            C(default) (bool), C(max_time) and C(options) (other partition keys such as C(OverSubscribe)).
        type: list
        elements: dict
        default: []
      config:
        description:
          - C(slurm.conf) overrides merged over the defaults. A value equal to O(omit_token) drops the key.
          - C(ClusterName), C(SlurmctldHost), C(NodeName), C(PartitionName) and similar keys are computed and
            cannot be set here.
        type: dict
        default: {}
      cgroup:
        description:
          - C(cgroup.conf) overrides merged over C(CgroupPlugin=autodetect), C(ConstrainCores=yes),
            C(ConstrainDevices=yes), C(ConstrainRAMSpace=yes). Use C(CgroupPlugin=cgroup/v1) on cgroup v1 hosts.
        type: dict
        default: {}
      gres_autodetect:
        description:
          - C(off) writes C(File=) lines per node type; C(nvml) (Slurm built with NVML), C(nvidia) (Slurm 24.11+)
            and C(rsmi) (AMD) write only C(AutoDetect=).
        type: str
        choices: ["off", nvml, nvidia, rsmi]
        default: "off"
      accounting:
        description:
          - slurmdbd accounting with keys C(host) (required), C(port) (default 6819), C(backup_host) and
            C(enforce) (default C(associations,limits,qos,safe)). Also sets C(AccountingStorageTRES=gres/gpu).
        type: dict
  omit_token:
    description:
      - The value that drops a key from an override mapping; pass Ansible's C(omit). Ansible omit placeholder
        values are recognised without it.
    type: raw
"""

EXAMPLES = r"""
- name: Compute the Slurm configuration files once for the whole cluster
  ansible.builtin.set_fact:
    __slurm_files: "{{ slurm_cluster | oci_gpu.cluster.slurm_config(omit_token=omit) }}"
  vars:
    slurm_cluster:
      cluster_name: lab
      controllers: [ctl1]
      nodes:
        - name: gpu[01-16]
          sockets: 2
          cores_per_socket: 56
          threads_per_core: 2
          real_memory: 2000000
          gpu_type: h100
          gpu_count: 8
          features: [h100, rdma]
      partitions:
        - name: gpu
          nodes: [ALL]
          default: true
          max_time: INFINITE
      config:
        SlurmctldParameters: enable_configless
        PrologFlags: "{{ omit }}"
      cgroup:
        CgroupPlugin: cgroup/v1

- name: Write slurm.conf (templates only print the model)
  ansible.builtin.copy:
    content: "{{ ansible_managed | comment }}\n{{ __slurm_files['slurm.conf'] }}"
    dest: /etc/slurm/slurm.conf
    owner: root
    group: root
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The rendered files, keyed by file name.
  type: dict
  contains:
    slurm.conf:
      description: Text of C(slurm.conf).
      type: str
    gres.conf:
      description: Text of C(gres.conf).
      type: str
    cgroup.conf:
      description: Text of C(cgroup.conf).
      type: str
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def slurm_config(spec: Any, omit_token: Any = None) -> dict[str, str]:
    """Return {"slurm.conf", "gres.conf", "cgroup.conf"} rendered from ``spec``."""
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import (
        SlurmConfigError,
        render_slurm_config,
    )
    from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._omit import plain

    token = omit_token if isinstance(omit_token, str) else None
    marker = token if token is not None else object()
    try:
        return render_slurm_config(plain(spec, marker), omit_token=marker)
    except SlurmConfigError as exc:
        raise AnsibleFilterError(f"slurm_config: {exc}") from exc


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"slurm_config": slurm_config}
