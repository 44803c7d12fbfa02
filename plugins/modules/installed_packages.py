#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: installed_packages
short_description: List the names of the installed packages, fast, as a fact
version_added: 0.2.0
description:
  - Sets the fact C(oci_gpu_installed_packages), the sorted names of the packages installed on the
    host, read with C(dpkg-query) (Debian, Ubuntu) or C(rpm) (Oracle Linux, RHEL).
  - The collection's roles call it once per run and skip their package task when nothing is
    missing, which saves a package manager call per role on a converged node.
    M(ansible.builtin.package_facts) gives more (versions, sources) but loads the whole apt cache
    with python-apt on Debian, about a second of CPU per host; C(dpkg-query) takes milliseconds.
  - A package in the C(dpkg) states "config-files" or "half-installed" does not count as installed.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options: {}
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - oci_gpu.cluster._packages_fact
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Read the installed packages once
  oci_gpu.cluster.installed_packages:
  when: ansible_facts.oci_gpu_installed_packages is not defined

- name: Install what is missing
  ansible.builtin.package:
    name: "{{ wanted }}"
  when: wanted | difference(ansible_facts.oci_gpu_installed_packages) | length > 0
"""

RETURN = r"""
ansible_facts:
  description: The fact this module sets.
  returned: always
  type: dict
  contains:
    oci_gpu_installed_packages:
      description: Sorted names of the installed packages.
      type: list
      elements: str
      sample: [munge, slurmd]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._packages import list_installed


def main() -> None:
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    names, problem = list_installed(module)
    if names is None:
        module.fail_json(msg=f"installed_packages: {problem}")
    module.exit_json(changed=False, ansible_facts={"oci_gpu_installed_packages": names})


if __name__ == "__main__":
    main()
