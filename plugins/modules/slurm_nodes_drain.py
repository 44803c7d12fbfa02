#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_nodes_drain
short_description: Drain Slurm nodes and wait for their jobs to end, before they are taken out
version_added: 0.3.0
description:
  - Reads every node once (one C(scontrol show node)), then drains each node of O(nodes) that
    slurmctld knows and that is not drained yet, with O(reason); a node an administrator drained
    keeps its own reason. Nodes slurmctld does not know are skipped.
  - Then waits up to O(timeout) seconds until no job runs on those nodes (C(squeue --nodelist)).
  - When jobs are still there after the wait, fails naming each job, its user and its state, and the
    nodes stay drained (no new job starts there); with O(cancel_jobs=true) it cancels those jobs
    instead (C(scancel)) and waits for them to be gone.
  - Runs where C(scontrol) reaches slurmctld, e.g. on the primary controller.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  nodes:
    description: The Slurm node names to drain.
    type: list
    elements: str
    required: true
  reason:
    description: The drain reason Slurm records.
    type: str
    default: taken out by oci_gpu.cluster (slurm_nodes_removed)
  timeout:
    description: Seconds to wait for the jobs on the nodes to end; V(0) looks once.
    type: int
    default: 300
  cancel_jobs:
    description: Cancel the jobs still running after the wait instead of failing.
    type: bool
    default: false
  poll:
    description: Seconds between two looks at the queue.
    type: float
    default: 2.0
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reports the nodes it would drain and the jobs on them; drains, waits and cancels nothing.
  diff_mode:
    support: none
  idempotent:
    description: Drained nodes are not drained again; a run with no job on the nodes changes nothing more.
    support: full
  platform:
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Drain the nodes taken out on purpose and wait for their jobs
  oci_gpu.cluster.slurm_nodes_drain:
    nodes: [gpu-17, gpu-18]
    timeout: 600
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true
"""

RETURN = r"""
drained:
  description: The nodes this call drained.
  returned: always
  type: list
  elements: str
already_drained:
  description: The nodes that were drained already, each with its reason (C(node (reason))).
  returned: always
  type: list
  elements: str
unknown:
  description: The nodes slurmctld does not know (nothing to drain).
  returned: always
  type: list
  elements: str
jobs:
  description: The jobs on the nodes when the call ended, each C(id (user, state)); cancelled ones included.
  returned: always
  type: list
  elements: str
cancelled:
  description: The job ids this call cancelled.
  returned: always
  type: list
  elements: str
seconds:
  description: How long the call waited.
  returned: always
  type: float
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import (
    bare_reason,
    drained,
    parse_show_node,
)


def parse_jobs(text):
    """``id|user|state`` lines of squeue into [(id, user, state)]."""
    out = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0]:
            out.append(tuple(parts))
    return out


def describe(jobs):
    return [f"{jid} ({user}, {state})" for jid, user, state in jobs]


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "list", "elements": "str", "required": True},
            "reason": {"type": "str", "default": "taken out by oci_gpu.cluster (slurm_nodes_removed)"},
            "timeout": {"type": "int", "default": 300},
            "cancel_jobs": {"type": "bool", "default": False},
            "poll": {"type": "float", "default": 2.0},
        },
        supports_check_mode=True,
    )
    p = module.params
    started = time.monotonic()
    scontrol = module.get_bin_path("scontrol", required=True)
    squeue = module.get_bin_path("squeue", required=True)
    result = {"changed": False, "drained": [], "already_drained": [], "unknown": [], "jobs": [], "cancelled": []}
    wanted = sorted(set(p["nodes"]))
    if not wanted:
        module.exit_json(seconds=0.0, **result)

    rc, out, err = module.run_command([scontrol, "show", "node"])  # one call for the whole cluster
    if rc != 0:
        module.fail_json(msg=f"scontrol show node failed: {err.strip()}", **result)
    cluster = parse_show_node(out)
    known = {name: cluster[name] for name in wanted if name in cluster}
    result["unknown"] = [name for name in wanted if name not in cluster]
    for name, state in known.items():
        if drained(state):
            result["already_drained"].append(f"{name} ({bare_reason(state['reason']) or 'no reason'})")
        else:
            result["drained"].append(name)
    if result["drained"] and not module.check_mode:
        rc, _out, err = module.run_command(
            [scontrol, "update", f"nodename={','.join(result['drained'])}", "state=drain", f"reason={p['reason']}"]
        )
        if rc != 0:
            module.fail_json(msg=f"scontrol could not drain {', '.join(result['drained'])}: {err.strip()}", **result)
    result["changed"] = bool(result["drained"])
    if not known:
        module.exit_json(seconds=round(time.monotonic() - started, 1), **result)

    nodelist = ",".join(sorted(known))

    def jobs_now():
        rc, out, err = module.run_command([squeue, "--noheader", f"--nodelist={nodelist}", "--format=%i|%u|%T"])
        if rc != 0:
            module.fail_json(msg=f"squeue could not list the jobs on {nodelist}: {err.strip()}", **result)
        return parse_jobs(out)

    def wait(deadline):
        jobs = jobs_now()
        while jobs and time.monotonic() < deadline and not module.check_mode:
            time.sleep(p["poll"])
            jobs = jobs_now()
        return jobs

    jobs = wait(started + p["timeout"])
    result["jobs"] = describe(jobs)
    if jobs and not module.check_mode:
        if not p["cancel_jobs"]:
            module.fail_json(
                msg=f"slurm_nodes_removed: node(s) {nodelist} still run job(s) {', '.join(result['jobs'])} after "
                f"{p['timeout']} s; nothing was removed and the nodes stay drained, so no new job starts there. "
                "Run again once the jobs have ended, raise slurm_nodes_removed_timeout, set "
                "slurm_nodes_removed_cancel_jobs: true to cancel them, or keep a node by taking it out of "
                "slurm_nodes_removed and resuming it (scontrol update nodename=<node> state=resume).",
                seconds=round(time.monotonic() - started, 1),
                **result,
            )
        ids = sorted({jid for jid, _user, _state in jobs})
        rc, _out, err = module.run_command([module.get_bin_path("scancel", required=True), *ids])
        if rc != 0:
            module.fail_json(msg=f"scancel {' '.join(ids)} failed: {err.strip()}", **result)
        result["cancelled"] = ids
        result["changed"] = True
        left = wait(time.monotonic() + max(60, p["timeout"]))
        if left:
            module.fail_json(
                msg=f"slurm_nodes_removed: job(s) {', '.join(describe(left))} on {nodelist} were cancelled but "
                "have not ended; nothing was removed",
                seconds=round(time.monotonic() - started, 1),
                **result,
            )
    module.exit_json(seconds=round(time.monotonic() - started, 1), **result)


if __name__ == "__main__":
    main()
