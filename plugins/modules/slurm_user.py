#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_user
short_description: Manage a Slurm user and its associations in the accounting database
version_added: 0.3.0
description:
  - Reads the user (C(sacctmgr --noheader --parsable2 show user)) and its associations (C(show
    association)), then makes only the writes needed, in order - associations added, the user's own
    fields, the associations' fields, associations removed. A second identical run makes no write.
  - An association not named in O(accounts) is kept; only those in O(remove_accounts) are removed, so no
    accounting record goes silently.
  - Slurm refuses to remove an association while its jobs run or wait; the module then fails naming
    the jobs, unless O(cancel_jobs) is set.
  - Runs where C(sacctmgr) reaches slurmdbd, for example on the controller.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  name:
    description: The user's login name.
    type: str
    required: true
  state:
    description: V(present) creates or updates the user; V(absent) removes the user and every association.
    type: str
    choices: [present, absent]
    default: present
  cluster:
    description: The cluster whose associations are managed; empty lets sacctmgr choose.
    type: str
    default: ""
  accounts:
    description: Accounts the user must have an association under (others it has are kept).
    type: list
    elements: str
  remove_accounts:
    description: Accounts whose association of this user is removed.
    type: list
    elements: str
    default: []
  default_account:
    description: The user's default account; one of O(accounts) when both are given (a new user gets the first).
    type: str
  admin_level:
    description: C(AdminLevel).
    type: str
    choices: [None, Operator, Administrator]
  cancel_jobs:
    description: Cancel the user's jobs under an association being removed instead of failing.
    type: bool
    default: false
extends_documentation_fragment:
  - oci_gpu.cluster._sacctmgr  # first: its platform attribute wins over the common one
  - ansible.builtin.action_common_attributes
  - oci_gpu.cluster._sacctmgr.association
"""

EXAMPLES = r"""
- name: Alice in physics (default) and chemistry, at most 2 GPUs at a time
  oci_gpu.cluster.slurm_user:
    name: alice
    accounts: [physics, chemistry]
    default_account: physics
    grp_tres: {gres/gpu: 2}
  run_once: true
  delegate_to: "{{ groups['slurm_controller'][0] }}"
"""

RETURN = r"""
changes:
  description: What the run changed (or would in check mode) - C(state), fields, C(account NAME) added or removed.
  returned: always
  type: list
  elements: str
commands:
  description: The sacctmgr (and scancel) calls that wrote, or in check mode would write.
  returned: always
  type: list
  elements: list
accounts:
  description: The accounts the user had an association under when the run began.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._sacctmgr import (
    USER_ASSOC_FIELDS,
    USER_FIELDS,
    new_module,
    parse_user,
    parsed,
    plan_user,
    read,
    refuse,
    report,
    runner,
    user_problems,
    user_show_argv,
    write,
)


def main() -> None:
    module = new_module(
        AnsibleModule,
        {
            "accounts": {"type": "list", "elements": "str"},
            "remove_accounts": {"type": "list", "elements": "str", "default": []},
            "default_account": {"type": "str"},
            "admin_level": {"type": "str", "choices": ["None", "Operator", "Administrator"]},
        },
        association=True,
    )
    p = module.params
    name = p["name"]
    wanted = {o: p[o] for o in {**USER_FIELDS, **USER_ASSOC_FIELDS}}
    result = {"changed": False, "changes": [], "commands": [], "accounts": []}
    present = p["state"] == "present"
    accounts = p["accounts"] if present else None
    refuse(module, user_problems(name, wanted if present else {}, accounts, p["remove_accounts"]), result)
    run = runner(module)
    texts = read(module, run, user_show_argv(name), result)
    have = parsed(module, parse_user, texts[0], texts[1], p["cluster"], result=result)
    result["accounts"] = sorted((have or {}).get("accounts") or {})
    if present and have is None and not p["accounts"] and p["accounts"] is not None and p["remove_accounts"]:
        module.exit_json(**result)  # only removals asked, of a user accounting does not have: nothing to do
    if present and have is None and not p["accounts"]:
        module.fail_json(msg=f"user {name}: a new user needs accounts (at least one)", **result)
    plan = plan_user(name, p["state"], wanted, p["accounts"], p["remove_accounts"], have, p["cluster"])
    report(module, plan, result)
    for argv in plan["argvs"]:
        removes = argv[2] == "delete"
        account = next((a.split("=", 1)[1] for a in argv if a.startswith("account=")), "")
        cancel = None
        if removes and p["cancel_jobs"]:
            cancel = ["scancel", f"--user={name}"] + ([f"--account={account}"] if account else [])
        write(module, run, argv, f"user {name}" + (f" in account {account}" if account else ""), result, cancel)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
