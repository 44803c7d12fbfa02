#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_reservation
short_description: Create, update or delete a Slurm reservation
version_added: 0.3.0
description:
  - Reads the reservation (C(scontrol show reservation NAME --oneliner); "not found" means there is none)
    and makes the one C(scontrol create), C(update) or C(delete reservation) that brings the options
    given to what is asked. A second identical run makes no write.
  - Nodes compare as host sets, users and accounts as sets, times as seconds. A O(start_time) of
    V(now) is used only to create; an existing reservation's start is never moved to now.
  - O(maintenance) makes a maintenance window - C(Flags=MAINT,IGNORE_JOBS) - no new job starts on
    its nodes, and it can be made while they still run jobs.
  - Runs where C(scontrol) reaches slurmctld as root or SlurmUser, for example on the controller.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  name:
    description: The reservation name.
    type: str
    required: true
  nodes:
    description: Nodes, as a hostlist (C(gpu[1-4])) or a list.
    type: raw
  start_time:
    description:
      - C(now), C(now+N[minutes|hours|days]) or C(YYYY-MM-DDTHH:MM[:SS]); a new reservation starts now by default.
    type: str
  duration:
    description: How long it lasts, a Slurm time (minutes, C(HH:MM:SS), C(D-HH:MM:SS)).
    type: str
  users:
    description: Users who may run in it (C(root) for a maintenance window).
    type: list
    elements: str
  accounts:
    description: Accounts whose users may run in it.
    type: list
    elements: str
  partition:
    description: The partition whose nodes it takes, when O(nodes) is not given.
    type: str
  flags:
    description: Reservation flags, the whole set (for example V(MAINT), V(IGNORE_JOBS), V(DAILY)).
    type: list
    elements: str
  maintenance:
    description: Without O(flags), use C(MAINT,IGNORE_JOBS).
    type: bool
    default: false
extends_documentation_fragment:
  - oci_gpu.cluster._sacctmgr  # first: its platform attribute wins over the common one
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Keep new jobs off gpu3 for a two-hour maintenance
  oci_gpu.cluster.slurm_reservation:
    name: maint-gpu3
    nodes: gpu3
    duration: "02:00:00"
    users: [root]
    maintenance: true
  run_once: true
  delegate_to: "{{ groups['slurm_controller'][0] }}"

- name: Release it after the work
  oci_gpu.cluster.slurm_reservation:
    name: maint-gpu3
    state: absent
  run_once: true
  delegate_to: "{{ groups['slurm_controller'][0] }}"
"""

RETURN = r"""
changes:
  description: The fields the run changed (or would change in check mode); C(state) when created or deleted.
  returned: always
  type: list
  elements: str
commands:
  description: The scontrol call that wrote, or in check mode would write.
  returned: always
  type: list
  elements: list
reservation:
  description: The reservation as scontrol showed it when the run began (empty when there was none).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._reservation import (
    not_found,
    parse,
    plan,
    problems,
    show_argv,
    wanted_fields,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._sacctmgr import ENV, new_module, refuse, report


def main() -> None:
    module = new_module(
        AnsibleModule,
        {
            "nodes": {"type": "raw"},
            "start_time": {"type": "str"},
            "duration": {"type": "str"},
            "users": {"type": "list", "elements": "str"},
            "accounts": {"type": "list", "elements": "str"},
            "partition": {"type": "str"},
            "flags": {"type": "list", "elements": "str"},
            "maintenance": {"type": "bool", "default": False},
        },
    )
    p = module.params
    name = p["name"]
    result = {"changed": False, "changes": [], "commands": [], "reservation": {}}
    refuse(module, problems(name, p), result)
    scontrol = module.get_bin_path("scontrol", required=True)
    rc, out, err = module.run_command([scontrol, *show_argv(name)[1:]], environ_update=ENV)
    if rc != 0 and not not_found(rc, out, err):
        module.fail_json(msg=f"scontrol show reservation {name} failed: {(err or out).strip()[:300]}", **result)
    have = None if rc != 0 else parse(out)
    result["reservation"] = have or {}
    todo = plan(name, p["state"], wanted_fields(p), have)
    report(module, todo, result)
    rc, out, err = module.run_command([scontrol, *todo["argv"][1:]], environ_update=ENV)
    if rc != 0:
        module.fail_json(msg=f"reservation {name}: {' '.join(todo['argv'])}: {(err or out).strip()[:300]}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
