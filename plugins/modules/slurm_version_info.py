#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_version_info
short_description: Read the Slurm release a host has, would install, and last ran
version_added: 0.6.0
description:
  - Reads the installed Slurm version (C(slurmctld -V), C(slurmd -V), else the package database),
    the version the package manager would install from its cached indexes (C(apt-cache policy),
    C(dnf repoquery --cacheonly)), and the release the daemons ran when the C(oci_gpu.cluster.slurm)
    role last applied (O(record_path)). Nothing is downloaded and nothing changes.
  - Also sets the fact C(oci_gpu_installed_packages), as M(oci_gpu.cluster.installed_packages) does, in
    the same call, so that the roles that run after the slurm role's preflight need no read of their own.
    When the packages cannot be listed the fact is left unset (and the module does not fail).
  - The role's preflight compares them across the cluster before any package changes
    (Slurm's upgrade window, its daemons' order), and refuses by host and with the supported path.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  candidate:
    description:
      - Read what the package manager would install (RV(candidate), RV(candidate_package)) and the installed
        package's version (RV(installed_package)) even when Slurm is installed. V(false) skips that read
        (C(apt-cache policy) costs about half a second of CPU) unless Slurm is not installed, where the
        candidate is the release the host will run; the three are then empty.
    type: bool
    default: true
  record_path:
    description: The file where the role records the release the daemons last ran; missing means unknown.
    type: path
    default: /var/lib/oci-gpu-cluster/slurm-release
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - oci_gpu.cluster._packages_fact
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Read the Slurm releases of this host
  oci_gpu.cluster.slurm_version_info:
  register: slurm_versions
"""

RETURN = r"""
installed:
  description: The installed Slurm version; empty when Slurm is not installed.
  returned: always
  type: str
  sample: 22.05.8
candidate:
  description: The version the package manager would install; empty when it offers none or was not asked (O(candidate)).
  returned: always
  type: str
  sample: 24.11.5
installed_package:
  description: The installed package version as the package manager writes it; empty when none or not asked.
  returned: always
  type: str
  sample: 22.05.8-4+deb12u3
candidate_package:
  description:
    - The package version the package manager would install; a new Debian revision is an upgrade too. Empty
      when not read (O(candidate)).
  returned: always
  type: str
  sample: 22.05.8-4+deb12u4
recorded:
  description: The release the daemons ran when the role last applied; empty when not recorded.
  returned: always
  type: str
  sample: 22.05.8
ansible_facts:
  description:
    - C(oci_gpu_installed_packages), the sorted names of the installed packages, as
      M(oci_gpu.cluster.installed_packages) sets it.
  returned: when the packages could be listed
  type: dict
  sample: {"oci_gpu_installed_packages": ["munge", "slurmd"]}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._packages import list_installed
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._installed import (
    installed_version,
    package_versions,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import version_from_output


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "record_path": {"type": "path", "default": "/var/lib/oci-gpu-cluster/slurm-release"},
            "candidate": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    try:
        with open(module.params["record_path"], encoding="utf-8") as handle:
            recorded = version_from_output(handle.read(200))
    except OSError:
        recorded = ""
    installed = installed_version(module)[0]
    # Installed and no upgrade asked for: what the repositories offer changes nothing this run decides.
    read = module.params["candidate"] or not installed
    installed_package, candidate_package = package_versions(module) if read else ("", "")
    names = list_installed(module)[0]
    module.exit_json(
        changed=False,
        installed=installed,
        candidate=version_from_output(candidate_package),
        installed_package=installed_package,
        candidate_package=candidate_package,
        recorded=recorded,
        # Without a listing the fact stays unset, and each role reads it itself (installed_packages).
        ansible_facts={} if names is None else {"oci_gpu_installed_packages": names},
    )


if __name__ == "__main__":
    main()
