#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_job_info
short_description: List the Slurm jobs in given partitions or on given nodes
version_added: 0.5.0
description:
  - Reads the queue once (C(squeue --all), every job that is pending, running, suspended, completing
    or configuring) and returns the jobs submitted to one of O(partitions) or placed on one of O(nodes).
  - The slurm role runs it on the primary controller before any file changes, when the plan would
    remove a partition or change what a node has (Slurm would end those jobs), so the role refuses and
    names them.
  - Fails when C(squeue) cannot answer, so a caller never takes an unreadable queue for an empty one.
  - Runs where C(squeue) reaches slurmctld, e.g. on the primary controller.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  partitions:
    description: Partition names; a pending job submitted to several partitions counts for each.
    type: list
    elements: str
    default: []
  nodes:
    description: Node names (no hostlist expressions); a job counts when it holds one of them.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Read-only; the same answer in check mode.
  idempotent:
    description: Reads only.
"""

EXAMPLES = r"""
- name: List the jobs a partition change would end
  oci_gpu.cluster.slurm_job_info:
    partitions: [debug]
    nodes: [gpu1, gpu2]
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true
  register: __jobs
"""

RETURN = r"""
jobs:
  description: The matching jobs, in the order of their ids.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: The job id (array and het job ids as squeue prints them).
      type: str
    user:
      description: The job's user.
      type: str
    state:
      description: The job state (RUNNING, PENDING, ...).
      type: str
    partition:
      description: The partition(s) of the job.
      type: str
    nodes:
      description: The nodes the job holds, a hostlist; empty while pending.
      type: str
    why:
      description: What matched, e.g. C(partition debug) or C(on gpu1).
      type: str
described:
  description: One line per job, C(<id> (<user>, <state>, <why>)), for messages.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError, expand

FORMAT = "%i|%u|%T|%P|%N"


def matching_jobs(text: str, partitions: list[str], nodes: list[str]) -> list[dict[str, str]]:
    """The jobs of ``squeue --format=%i|%u|%T|%P|%N`` output in one of ``partitions`` or on one of ``nodes``."""
    wanted_parts, wanted_nodes = set(partitions), set(nodes)
    out = []
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 5 or not fields[0]:
            continue
        jid, user, state, partition, nodelist = fields
        why = [f"partition {p}" for p in partition.split(",") if p in wanted_parts]
        try:
            held = expand(nodelist) if nodelist and nodelist not in ("(null)", "n/a") else []
        except HostlistError:
            held = [nodelist]
        why += [f"on {n}" for n in held if n in wanted_nodes]
        if why:
            out.append(
                {
                    "id": jid,
                    "user": user,
                    "state": state,
                    "partition": partition,
                    "nodes": nodelist,
                    "why": ", ".join(why),
                }
            )
    return sorted(out, key=lambda j: (len(j["id"]), j["id"]))


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "partitions": {"type": "list", "elements": "str", "default": []},
            "nodes": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    if not p["partitions"] and not p["nodes"]:
        module.exit_json(changed=False, jobs=[], described=[])
    squeue = module.get_bin_path("squeue", required=True)
    rc, out, err = module.run_command([squeue, "--all", "--noheader", f"--format={FORMAT}"])
    if rc != 0:
        module.fail_json(msg=f"squeue could not list the jobs (exit {rc}): {err.strip()}", jobs=[], described=[])
    jobs = matching_jobs(out, p["partitions"], p["nodes"])
    described = [f"{j['id']} ({j['user']}, {j['state']}, {j['why']})" for j in jobs]
    module.exit_json(changed=False, jobs=jobs, described=described)


if __name__ == "__main__":
    main()
