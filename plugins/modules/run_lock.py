#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: run_lock
short_description: One playbook run at a time per cluster - a lock file on the primary controller
version_added: 0.6.0
description:
  - Takes (O(state=acquired)) or gives back (O(state=released)) a lock file on the host the task runs on
    (the C(oci_gpu.cluster.slurm) playbook runs it on the primary controller, for every host of the run).
  - The action plugin names the run - the control host, the ansible-playbook process and its start time, the
    user and the play - so every task of one run shares the lock, and a second run is refused with a
    message naming the run that holds it.
  - A lock is stale when its run is over - the same control host and its ansible-playbook process gone (a run
    that failed or was killed leaves its lock), or older than O(max_age) seconds - or when O(break_lock) is set;
    a stale lock is taken over and the result says whose it was.
  - Taking and taking over happen under an C(flock) on the node, so two runs never both win.
  - In check mode nothing is written; a lock held by another running run still refuses the run.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  path:
    description: The lock file.
    type: path
    default: /var/lib/oci-gpu-cluster/run.lock
  state:
    description:
      - V(acquired) takes the lock (or keeps it, when this run holds it).
      - V(released) removes it when this run holds it.
    type: str
    choices: [acquired, released]
    default: acquired
  max_age:
    description: Seconds after which a lock is stale whoever holds it; V(0) never.
    type: int
    default: 14400
  break_lock:
    description: Take the lock over whoever holds it (after making sure that run is over); the result names it.
    type: bool
    default: false
  wait:
    description:
      - Seconds to wait for a lock another running run holds before refusing (V(0) refuses at once; a site's add-node
        hook that may start runs while others go on sets it). Handled by the action plugin.
    type: int
    default: 0
  _run:
    description: This run, as the action plugin names it on the control host. Set by the action plugin only.
    type: dict
  _replace:
    description: The run whose lock the action plugin judged stale and takes over. Set by the action plugin only.
    type: str
    default: ""
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  action:
    description: The action plugin names the run and judges a held lock on the control host; the module writes.
    support: full
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    description: A run takes the lock and gives it back; neither reports a change.
    support: full
  platform:
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Take the cluster's run lock
  oci_gpu.cluster.run_lock:
    state: acquired
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true

- name: Give the run lock back
  oci_gpu.cluster.run_lock:
    state: released
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true
"""

RETURN = r"""
run:
  description: This run (C(run_id), C(control_host), C(pid), C(start), C(user), C(playbook), C(started_at)).
  returned: always
  type: dict
holder:
  description: What the lock held before this task; empty when it was free.
  returned: always
  type: dict
replaced:
  description: Why the lock of another run was taken over (stale or broken); empty otherwise.
  returned: always
  type: str
taken:
  description: Whether this run holds the lock now (O(state=acquired)).
  returned: when O(state=acquired)
  type: bool
released:
  description: Whether this task removed the lock (O(state=released)).
  returned: when O(state=released)
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common import _run_lock


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "default": "/var/lib/oci-gpu-cluster/run.lock"},
            "state": {"type": "str", "choices": ["acquired", "released"], "default": "acquired"},
            "max_age": {"type": "int", "default": 14400},
            "break_lock": {"type": "bool", "default": False},
            "wait": {"type": "int", "default": 0},
            # set by the action plugin: this run, and the run it judged stale
            "_run": {"type": "dict"},
            "_replace": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    path, run = module.params["path"], module.params["_run"]
    if not run or not run.get("run_id"):
        module.fail_json(msg="run_lock: runs through its action plugin (oci_gpu.cluster.run_lock), which names the run")
    try:
        if module.params["state"] == "released":
            released = _run_lock.release(path, run["run_id"], module.check_mode)
            module.exit_json(changed=False, released=released, run=run, holder={}, replaced="")
        taken, holder = _run_lock.take(path, run, module.params["_replace"], module.check_mode)[:2]
    except OSError as exc:
        module.fail_json(msg=f"run_lock {path}: {exc.strerror or exc}")
    # the lock lives for one run: taking and giving it back leave the node as it was (changed is false)
    module.exit_json(
        changed=False,
        taken=taken,
        run=run,
        holder=holder or {},
        replaced="",
    )


if __name__ == "__main__":
    main()
