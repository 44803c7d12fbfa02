#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_qos
short_description: Manage a Slurm QOS (quality of service) in the accounting database
version_added: 0.3.0
description:
  - Reads the QOS with C(sacctmgr --noheader --parsable2 show qos) and writes only the fields that
    differ (C(sacctmgr --immediate add/modify/delete qos)), with C(LC_ALL=C). A second identical run
    makes no write.
  - Only the options given are managed; fields left out keep what they have. Names are compared
    lower-cased, as sacctmgr stores them; times as seconds (V(2-00:00:00), V(48:00:00) and V(2880)
    are the same limit); TRES as counts, memory in MiB.
  - Every name and value is checked before the first call. Runs where C(sacctmgr) reaches slurmdbd,
    for example on the controller.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  name:
    description: The QOS name (stored lower-cased).
    type: str
    required: true
  description:
    description: Free text shown by C(sacctmgr show qos).
    type: str
  priority:
    description: The QOS's priority factor (C(Priority)).
    type: int
  preempt:
    description: QOS names jobs of this QOS may preempt; V([]) clears the list.
    type: list
    elements: str
  preempt_mode:
    description: C(PreemptMode).
    type: str
    choices: [cluster, cancel, requeue, suspend, "off"]
  flags:
    description:
      - The QOS flags, the whole set (for example V(DenyOnLimit), V(NoReserve), V(PartitionTimeLimit)); V([]) clears
        them.
    type: list
    elements: str
  grp_tres:
    description:
      - 'Limits for all jobs of the QOS together, as C(name=count) (C(cpu=256,gres/gpu=16)) or a mapping
        (C({gres/gpu: 16})). The whole set is managed - a TRES left out loses its limit; V({}) clears all.'
    type: raw
  max_tres_per_job:
    description: C(MaxTRESPerJob), as for O(grp_tres).
    type: raw
  max_tres_per_user:
    description: 'C(MaxTRESPerUser), as for O(grp_tres) (for example C({gres/gpu: 4})).'
    type: raw
  max_wall:
    description: C(MaxWall), a Slurm time (minutes, C(HH:MM:SS), C(D-HH:MM:SS)); V(-1) removes the limit.
    type: str
  max_jobs_per_user:
    description: C(MaxJobsPerUser); V(-1) removes the limit.
    type: int
  max_submit_jobs_per_user:
    description: C(MaxSubmitJobsPerUser); V(-1) removes the limit.
    type: int
extends_documentation_fragment:
  - oci_gpu.cluster._sacctmgr  # first: its platform attribute wins over the common one
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: A QOS for short GPU jobs, at most 4 GPUs per user
  oci_gpu.cluster.slurm_qos:
    name: gpu-short
    priority: 100
    max_wall: "04:00:00"
    max_tres_per_user: {gres/gpu: 4}
    flags: [DenyOnLimit]
  run_once: true
  delegate_to: "{{ groups['slurm_controller'][0] }}"
"""

RETURN = r"""
name:
  description: The QOS name as sacctmgr stores it.
  returned: always
  type: str
changes:
  description: The fields the run changed (or would change in check mode); C(state) when it was created or deleted.
  returned: always
  type: list
  elements: str
commands:
  description: The sacctmgr calls that wrote (or, in check mode, would write).
  returned: always
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._sacctmgr import (
    PREEMPT_MODES,
    QOS_FIELDS,
    field_args,
    new_module,
    parse_qos,
    parsed,
    plan_qos,
    qos_problems,
    qos_show_argv,
    read,
    refuse,
    report,
    runner,
    write,
)


def main() -> None:
    module = new_module(AnsibleModule, field_args(QOS_FIELDS, preempt_mode={"choices": list(PREEMPT_MODES)}))
    p = module.params
    wanted = {opt: p[opt] for opt in QOS_FIELDS}
    name = str(p["name"])
    result = {"changed": False, "name": name.lower(), "changes": [], "commands": []}
    refuse(module, qos_problems(name, wanted if p["state"] == "present" else {}), result)
    run = runner(module)
    (out,) = read(module, run, [qos_show_argv()], result)
    plan = parsed(module, lambda: plan_qos(name, p["state"], wanted, parse_qos(out)), result=result)
    report(module, plan, result)
    write(module, run, plan["argv"], f"qos {name.lower()}", result, None)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
