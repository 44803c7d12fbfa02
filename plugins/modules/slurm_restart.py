#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_restart
short_description: Restart a Slurm daemon and wait until the cluster has it back
version_added: 0.3.0
description:
  - Restarts C(slurmctld) or C(slurmd) on this host with systemd and waits, up to O(timeout) seconds,
    until Slurm has it back. For C(slurmctld) that is C(scontrol ping) naming this host UP, then every
    node that answered before the restart answering again. For C(slurmd) it is slurmctld reporting a
    new C(SlurmdStartTime) for O(node_name) with the node responding (it re-registered).
  - An administrator's C(DOWN) survives the restart. With C(ReturnToService=2) a DOWN node returns to
    service when its slurmd registers, so before the restart the node is drained with its own reason
    (a drained node gets no job), and after the registration it is set DOWN with that reason again;
    the drain stays, so that a later registration leaves it out of service too. A drained node keeps
    its drain and its reason as Slurm does anyway. The module never resumes a node.
  - Fails, with C(msg) and the daemon's last journal lines, when the unit does not start or the daemon
    does not come back in time; the caller decides about a rollback.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  unit:
    description: The daemon to restart.
    type: str
    required: true
    choices: [slurmctld, slurmd]
  node_name:
    description: >-
      The Slurm node name of this host (C(slurmd)), or the controller's name as C(scontrol ping)
      prints it (C(slurmctld)).
    type: str
    required: true
  conf:
    description: >-
      The slurm.conf C(scontrol) reads (C(SLURM_CONF)); a configless node passes the copy slurmd keeps
      in C(/run/slurm/conf). Unset, C(scontrol) finds its own.
    type: path
  return_to_service:
    description: The cluster's C(ReturnToService); with V(2) an administrator's DOWN is guarded as described.
    type: int
    default: 2
  daemon_reload:
    description: Reload systemd first (a unit drop-in changed).
    type: bool
    default: false
  timeout:
    description: Seconds to wait for the daemon to be back.
    type: int
    default: 180
  poll:
    description: Seconds between two looks at the cluster.
    type: float
    default: 1.0
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reports the restart it would do and changes nothing.
  diff_mode:
    support: none
  idempotent:
    description: A restart is an action; the role calls it from a handler only.
    support: none
  platform:
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Restart slurmd and wait for it to re-register
  oci_gpu.cluster.slurm_restart:
    unit: slurmd
    node_name: "{{ inventory_hostname }}"
    conf: /run/slurm/conf/slurm.conf
"""

RETURN = r"""
seconds:
  description: How long the restart and the wait took.
  returned: always
  type: float
state_before:
  description: The node's state before the restart (C(slurmd)), e.g. C(IDLE+DRAIN).
  returned: always
  type: str
state_after:
  description: The node's state once it re-registered (C(slurmd)).
  returned: always
  type: str
kept_down:
  description: The node was DOWN by an administrator and was set DOWN again with its reason.
  returned: always
  type: bool
journal:
  description: The daemon's last journal lines, when it failed.
  returned: failure
  type: list
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._nodestate import (
    admin_down,
    bare_reason,
    drained,
    parse_show_node,
    responding,
)


class Restart:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.env = {"SLURM_CONF": self.p["conf"]} if self.p["conf"] else {}
        self.scontrol = module.get_bin_path("scontrol", required=True)
        self.systemctl = module.get_bin_path("systemctl", required=True)
        self.result = {"changed": False, "seconds": 0.0, "state_before": "", "state_after": "", "kept_down": False}
        self.started = time.monotonic()

    def run(self, argv):
        return self.module.run_command(argv, environ_update=self.env)

    def nodes(self, names=None):
        rc, out, _err = self.run([self.scontrol, "show", "node", *([names] if names else [])])
        return parse_show_node(out) if rc == 0 else {}

    def update(self, **fields):
        argv = [self.scontrol, "update", f"nodename={self.p['node_name']}"]
        argv += [f"{k}={v}" for k, v in fields.items()]
        rc, _out, err = self.run(argv)
        if rc != 0:
            self.fail(f"scontrol update {' '.join(argv[3:])} failed: {err.strip()}")

    def unit_state(self):
        _rc, out, _err = self.module.run_command([self.systemctl, "is-active", f"{self.p['unit']}.service"])
        return out.strip()

    def fail(self, msg):
        unit = self.p["unit"]
        _rc, out, _err = self.module.run_command(
            ["journalctl", f"--unit={unit}", "--lines=20", "--no-pager", "--output=cat"]
        )
        self.result["seconds"] = round(time.monotonic() - self.started, 1)
        self.module.fail_json(msg=f"{unit} on {self.p['node_name']}: {msg}", journal=out.splitlines(), **self.result)

    def restart(self):
        if self.p["daemon_reload"]:
            self.module.run_command([self.systemctl, "daemon-reload"])
        rc, _out, err = self.module.run_command([self.systemctl, "restart", f"{self.p['unit']}.service"])
        self.result["changed"] = True
        return rc, err.strip()

    def wait(self, ready, what):
        deadline = self.started + self.p["timeout"]
        while True:
            done, detail = ready()
            if done:
                return detail
            if self.unit_state() in ("failed", "inactive"):
                self.fail(f"the unit is {self.unit_state()} after its restart ({detail})")
            if time.monotonic() >= deadline:
                self.fail(f"{what} within {self.p['timeout']} s ({detail})")
            time.sleep(self.p["poll"])

    def slurmctld(self):
        name = self.p["node_name"]
        before = [n for n, st in self.nodes().items() if responding(st)]
        if self.module.check_mode:
            self.module.exit_json(**dict(self.result, changed=True))
        rc, err = self.restart()
        if rc != 0:
            self.fail(f"systemctl restart failed: {err}")

        def answers():
            _rc, out, _err = self.run([self.scontrol, "ping"])
            return f"at {name} is UP" in out, out.strip() or "no answer"

        self.wait(answers, "it did not answer scontrol ping")

        def nodes_back():
            now = self.nodes()
            gone = [n for n in before if n in now and not responding(now[n])]
            return not gone, f"not answering yet: {', '.join(gone)}"

        self.wait(nodes_back, "nodes that answered before the restart did not answer again")

    def slurmd(self):
        name = self.p["node_name"]
        before = self.nodes(name).get(name, {})
        self.result["state_before"] = "+".join([before.get("state", ""), *before.get("flags", [])])
        guard = bool(before) and admin_down(before) and self.p["return_to_service"] == 2
        reason = bare_reason(before.get("reason", "")) or "DOWN before a restart by oci_gpu.cluster"
        if self.module.check_mode:
            self.module.exit_json(**dict(self.result, changed=True, kept_down=guard))
        if guard:
            self.update(state="drain", reason=reason)
        rc, err = self.restart()
        if rc != 0:
            if guard:
                self.put_down(reason)
            self.fail(f"systemctl restart failed: {err}")

        def registered():
            node = self.nodes(name).get(name, {})
            state = "+".join([node.get("state", "?"), *node.get("flags", [])])
            fresh = node.get("slurmd_start", "") not in ("", before.get("slurmd_start", ""))
            return bool(node) and fresh and responding(node), f"state {state}"

        detail = self.wait(registered, "it did not re-register with slurmctld")
        if guard:
            self.put_down(reason)
            detail = "state " + self.state_text()
            self.result["kept_down"] = True
        self.result["state_after"] = detail.replace("state ", "", 1)

    def state_text(self):
        node = self.nodes(self.p["node_name"]).get(self.p["node_name"], {})
        return "+".join([node.get("state", "?"), *node.get("flags", [])])

    def put_down(self, reason):
        """Back to the administrator's DOWN, with the reason; the drain this module added stays (under
        ReturnToService=2 a later registration would return a plain DOWN node to service)."""
        self.update(state="down", reason=reason)
        node = self.nodes(self.p["node_name"]).get(self.p["node_name"], {})
        if not drained(node) or bare_reason(node.get("reason", "")) != reason:
            self.fail(f"the node was DOWN ({reason}) before the restart and could not be set DOWN again")


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "unit": {"type": "str", "required": True, "choices": ["slurmctld", "slurmd"]},
            "node_name": {"type": "str", "required": True},
            "conf": {"type": "path"},
            "return_to_service": {"type": "int", "default": 2},
            "daemon_reload": {"type": "bool", "default": False},
            "timeout": {"type": "int", "default": 180},
            "poll": {"type": "float", "default": 1.0},
        },
        supports_check_mode=True,
    )
    job = Restart(module)
    getattr(job, module.params["unit"])()
    job.result["seconds"] = round(time.monotonic() - job.started, 1)
    module.exit_json(**job.result)


if __name__ == "__main__":
    main()
