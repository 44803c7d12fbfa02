# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""O(files_record) of the probes that read back what a slurm_files call manages (slurm_node_info,
gpu_node_info), documented once."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  files_record:
    description:
      - The record a C(oci_gpu.cluster.slurm_files) call keeps (its option C(record)); RV(files_state) gives
        the state of every path in it, for the filter C(oci_gpu.cluster.files_not_in_place). Empty reads
        nothing.
    type: path
    default: ""
"""
