# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""O(plugin_dirs) of the modules that look for Slurm's plugins (slurm_node_info, slurm_config_check),
documented once; its default is module_utils/slurm/_version.py's PLUGIN_DIRS (a unit test compares
them). Each module says what it searches them for."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  plugin_dirs:
    type: list
    elements: path
    default:
      - /usr/lib/x86_64-linux-gnu/slurm-wlm
      - /usr/lib/aarch64-linux-gnu/slurm-wlm
      - /usr/lib64/slurm
      - /usr/lib/slurm
"""
