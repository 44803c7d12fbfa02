# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the modules that keep a Slurm record (slurm_qos, slurm_account, slurm_user, slurm_reservation)
share: read first, write only what differs (a module's own entries refine these)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  state:
    description: V(present) creates or updates it; V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
    details: Reads what Slurm has and reports the write it would make; writes and cancels nothing.
  diff_mode:
    support: full
    details: The managed fields before and after.
  idempotent:
    description: A second run with the same options reads what Slurm has and makes no write.
    support: full
  platform:
    support: full
    platforms: posix
"""

    # The limits of an association (slurm_account, slurm_user), as sacctmgr names them.
    ASSOCIATION = r"""
options:
  qos:
    description: The QOS the association may use, the whole list.
    type: list
    elements: str
  default_qos:
    description: The association's default QOS; must be in O(qos) when both are given.
    type: str
  grp_tres:
    description:
      - 'Limits for all jobs of the association together, as C(name=count) or a mapping (C({gres/gpu: 8})). The
        whole set is managed - a TRES left out loses its limit; V({}) clears all.'
    type: raw
  max_tres_per_job:
    description: C(MaxTRES) per job, as for O(grp_tres).
    type: raw
  max_wall:
    description: C(MaxWall) per job, a Slurm time; V(-1) removes the limit.
    type: str
  max_jobs:
    description: C(MaxJobs) running at once per user of the association; V(-1) removes the limit.
    type: int
"""
