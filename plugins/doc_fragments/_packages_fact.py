# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fact C(oci_gpu_installed_packages) as an attribute of the modules that set it (installed_packages,
slurm_version_info; the list comes from module_utils/common/_packages.py)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  facts:
    description: Sets C(oci_gpu_installed_packages).
    support: full
"""
