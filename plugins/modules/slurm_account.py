#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_account
short_description: Manage a Slurm account and its association in the accounting database
version_added: 0.3.0
description:
  - Reads the account (C(sacctmgr --noheader --parsable2 show account)) and its association
    (C(show association)) and makes the one write that brings the fields given to what is asked
    (C(sacctmgr --immediate add/modify/delete account)), with C(LC_ALL=C). A second identical run
    makes no write.
  - Only the options given are managed. Names are compared lower-cased, as sacctmgr stores them;
    times as seconds; TRES as counts, memory in MiB.
  - Slurm refuses to delete an account while jobs run or wait under it; the module then fails
    naming those jobs, unless O(cancel_jobs) is set. Deleting an account also deletes the user
    associations under it (listed in RV(users)).
  - Runs where C(sacctmgr) reaches slurmdbd, for example on the controller.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  name:
    description: The account name (stored lower-cased).
    type: str
    required: true
  cluster:
    description: The cluster whose association is managed; empty lets sacctmgr choose (every cluster for an add).
    type: str
    default: ""
  parent:
    description: The parent account (Slurm's default for a new account is V(root)).
    type: str
  description:
    description: The account's description.
    type: str
  organization:
    description: The account's organization.
    type: str
  fairshare:
    description: Fairshare shares, a whole number, or V(parent) to use the parent's.
    type: raw
  cancel_jobs:
    description: With O(state=absent), cancel the account's running and pending jobs first instead of failing.
    type: bool
    default: false
extends_documentation_fragment:
  - oci_gpu.cluster._sacctmgr  # first: its platform attribute wins over the common one
  - ansible.builtin.action_common_attributes
  - oci_gpu.cluster._sacctmgr.association
"""

EXAMPLES = r"""
- name: A research group's account with 8 GPUs between its jobs
  oci_gpu.cluster.slurm_account:
    name: physics
    description: Physics department
    organization: university
    fairshare: 100
    qos: [normal, gpu-short]
    default_qos: normal
    grp_tres: {gres/gpu: 8}
  run_once: true
  delegate_to: "{{ groups['slurm_controller'][0] }}"
"""

RETURN = r"""
name:
  description: The account name as sacctmgr stores it.
  returned: always
  type: str
changes:
  description: The fields the run changed (or would change in check mode); C(state) when it was created or deleted.
  returned: always
  type: list
  elements: str
commands:
  description: The sacctmgr (and scancel) calls that wrote, or in check mode would write.
  returned: always
  type: list
  elements: list
users:
  description: The users with an association under the account when the run began.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._sacctmgr import (
    ACCOUNT_FIELDS,
    account_problems,
    account_show_argv,
    field_args,
    new_module,
    parse_account,
    parsed,
    plan_account,
    read,
    refuse,
    report,
    runner,
    write,
)


def main() -> None:
    module = new_module(AnsibleModule, field_args(ACCOUNT_FIELDS), association=True)
    p = module.params
    wanted = {opt: p[opt] for opt in ACCOUNT_FIELDS}
    name = str(p["name"])
    key = name.lower()
    result = {"changed": False, "name": key, "changes": [], "commands": [], "users": []}
    refuse(module, account_problems(name, wanted if p["state"] == "present" else {}), result)
    run = runner(module)
    texts = read(module, run, account_show_argv(name), result)
    have = parsed(module, parse_account, texts[0], texts[1], p["cluster"], result=result)
    result["users"] = (have or {}).get("users", [])
    plan = plan_account(name, p["state"], wanted, have, p["cluster"])
    parent = str(p["parent"] or "").lower()
    if "parent" in plan["changes"] and parent != "root":
        # sacctmgr 24.11 answers a modify to a missing parent with "Modified account associations"
        # and exit 0, changing nothing: the parent is looked up first.
        (found,) = read(module, run, [account_show_argv(parent)[0]], result)
        if not found.strip():
            module.fail_json(msg=f"account {key}: parent account {parent!r} does not exist", **result)
    report(module, plan, result)
    cancel = ["scancel", f"--account={key}"] if p["cancel_jobs"] and p["state"] == "absent" else None
    write(module, run, plan["argv"], f"account {key}", result, cancel)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
