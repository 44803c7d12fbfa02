#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_admin_down
short_description: Keep administrators' DOWN nodes DOWN through Slurm restarts and reconfigures
version_added: 0.3.0
description:
  - With C(ReturnToService=2) a DOWN node returns to service when its slurmd registers, and a
    slurmctld restart or a 24.11 C(scontrol reconfigure) makes every slurmd register again, so an
    administrator's DOWN would end with the next configuration change.
  - O(action=hold) drains every node that is DOWN without the DRAIN flag, with its own reason (a
    drained node gets no job), and records node and reason in O(state_file). Nodes recorded by an
    earlier hold that was never released stay recorded.
  - O(action=release) sets each recorded node DOWN again with its reason, unless an administrator
    changed the node in between (resumed it, or gave it another reason; such a node is left as it is
    and named in C(changed_by_admin)). The drain stays. Under C(ReturnToService=2) any later
    registration of a running slurmd (slurmctld asks for them from time to time) returns a plain
    DOWN node to service, while a DOWN+DRAIN node only becomes drained, out of service with its
    reason, until an administrator resumes it. Then O(state_file) is removed.
  - Runs where C(scontrol) reaches slurmctld, e.g. on the primary controller.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  action:
    description: Hold the DOWN nodes before restarts, or release them afterwards.
    type: str
    required: true
    choices: [hold, release]
  state_file:
    description: Where the held nodes and their reasons are kept between the two actions.
    type: path
    default: /var/lib/oci-gpu-cluster/slurm-held-down.json
  return_to_service:
    description: The cluster's C(ReturnToService); below V(2) nothing needs holding and V(hold) only releases leftovers.
    type: int
    default: 2
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reports the nodes it would hold or release; changes nothing.
  diff_mode:
    support: none
  idempotent:
    description: >-
      A second hold finds the nodes drained and holds nothing new; a release without a record
      changes nothing.
    support: full
  platform:
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Hold the administrators' DOWN nodes
  oci_gpu.cluster.slurm_admin_down:
    action: hold
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true
"""

RETURN = r"""
held:
  description: The nodes on record after the call, node name to reason.
  returned: always
  type: dict
released:
  description: The nodes set DOWN again (and still drained) by a release.
  returned: always
  type: list
  elements: str
changed_by_admin:
  description: Recorded nodes an administrator changed in between, left as they are.
  returned: always
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._files import move_into_place, read_record
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import (
    admin_down,
    bare_reason,
    drained,
    parse_show_node,
)


def write_record(module, path, record):
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
    move_into_place(module, tmp, path)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "required": True, "choices": ["hold", "release"]},
            "state_file": {"type": "path", "default": "/var/lib/oci-gpu-cluster/slurm-held-down.json"},
            "return_to_service": {"type": "int", "default": 2},
        },
        supports_check_mode=True,
    )
    p = module.params
    scontrol = module.get_bin_path("scontrol", required=True)
    record = read_record(p["state_file"])
    result = {"changed": False, "held": dict(record), "released": [], "changed_by_admin": []}

    def update(names, **fields):
        argv = [scontrol, "update", f"nodename={','.join(names)}", *[f"{k}={v}" for k, v in fields.items()]]
        rc, _out, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg=f"scontrol update {' '.join(argv[2:])} failed: {err.strip()}", **result)

    rc, out, err = module.run_command([scontrol, "show", "node"])
    if rc != 0:
        module.fail_json(msg=f"scontrol show node failed: {err.strip()}", **result)
    nodes = parse_show_node(out)

    if p["action"] == "hold":
        fresh = {}
        if p["return_to_service"] == 2:
            fresh = {
                name: bare_reason(st["reason"]) or "DOWN (kept by oci_gpu.cluster)"
                for name, st in nodes.items()
                if admin_down(st) and name not in record
            }
        if fresh:
            result["held"].update(fresh)
            result["changed"] = True
            if not module.check_mode:
                write_record(module, p["state_file"], result["held"])
                for name, reason in sorted(fresh.items()):
                    update([name], state="drain", reason=reason)
        module.exit_json(**result)

    for name, reason in sorted(record.items()):
        st = nodes.get(name)
        if st is None:
            continue  # taken out of the cluster meanwhile
        if not drained(st) or bare_reason(st["reason"]) != reason:
            result["changed_by_admin"].append(name)
            continue
        result["released"].append(name)
        if not module.check_mode:
            update([name], state="down", reason=reason)
    if result["released"] and not module.check_mode:
        rc, out, _err = module.run_command([scontrol, "show", "node", ",".join(result["released"])])
        now = parse_show_node(out) if rc == 0 else {}
        for name in result["released"]:
            st = now.get(name, {})
            if not drained(st) or bare_reason(st.get("reason", "")) != record[name]:
                module.fail_json(
                    msg=f"node {name} was held DOWN ({record[name]}) but is now {st.get('state')} "
                    f"{'+'.join(st.get('flags', []))} with reason {st.get('reason', '')!r}",
                    **result,
                )
    if record:
        result["changed"] = True
        result["held"] = {}
        if not module.check_mode:
            os.unlink(p["state_file"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
