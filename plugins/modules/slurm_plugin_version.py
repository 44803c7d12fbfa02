#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_plugin_version
short_description: Read the Slurm release a Slurm or SPANK plugin (such as pyxis) was built for
version_added: 0.4.0
description:
  - Finds a plugin (O(path), or the first O(name) in Slurm's plugin directories) and reads the
    C(plugin_version) symbol that C(slurm/spank.h) and Slurm's plugin headers compile into it
    (C(SLURM_VERSION_NUMBER)), from the ELF file itself - the number Slurm compares when it loads the
    plugin. Nothing runs and nothing changes.
  - The C(oci_gpu.cluster.slurm) role refuses a pyxis built for another major.minor than the running
    Slurm before it writes C(plugstack.conf.d/pyxis.conf).
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  path:
    description: The plugin file. Empty - search O(name) in O(dirs).
    type: str
    default: ""
  name:
    description: The plugin's file name to search for when O(path) is empty.
    type: str
    default: spank_pyxis.so
  dirs:
    description:
      - Directories searched in order.
      - Slurm's plugin directories (Debian's and RPM layouts), then where NVIDIA's and source builds of pyxis install.
    type: list
    elements: str
    default:
      - /usr/lib/x86_64-linux-gnu/slurm-wlm
      - /usr/lib/aarch64-linux-gnu/slurm-wlm
      - /usr/lib64/slurm
      - /usr/lib/slurm
      - /usr/lib/x86_64-linux-gnu/slurm
      - /usr/lib/aarch64-linux-gnu/slurm
      - /usr/local/lib/slurm
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Read the release pyxis was built for
  oci_gpu.cluster.slurm_plugin_version:
    name: spank_pyxis.so
  register: pyxis
"""

RETURN = r"""
path:
  description: The plugin file read; empty when none was found.
  returned: always
  type: str
  sample: /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so
found:
  description: Whether the plugin file exists.
  returned: always
  type: bool
version:
  description: major.minor.micro from C(plugin_version); empty when the file has no such symbol.
  returned: always
  type: str
  sample: 24.11.5
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._containers import SPANK_PLUGIN_DIRS, read_plugin


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "str", "default": ""},
            "name": {"type": "str", "default": "spank_pyxis.so"},
            "dirs": {
                "type": "list",
                "elements": "str",
                "default": list(SPANK_PLUGIN_DIRS),
            },
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        read = read_plugin(p["path"], p["name"], p["dirs"])
    except ValueError as exc:
        module.fail_json(msg=f"slurm_plugin_version: {exc}", path=p["path"])
    module.exit_json(changed=False, **read)


if __name__ == "__main__":
    main()
