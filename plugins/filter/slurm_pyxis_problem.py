# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_pyxis_problem: refuse a pyxis built for another Slurm release."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_pyxis_problem
short_description: Say why a pyxis plugin does not fit the Slurm release a host runs
version_added: 0.4.0
author: contributors to the oci_gpu.cluster project
description:
  - Takes the release a SPANK plugin was built for (the C(version) that M(oci_gpu.cluster.slurm_plugin_version)
    reads from the plugin itself, or none when the file has no C(plugin_version)) and returns an empty string
    when its major.minor is the running Slurm's, else a message naming both releases, the file and the host.
  - Slurm loads only SPANK plugins of its own release, so a mismatch would fail every job that asks for a container.
positional: _input
options:
  _input:
    description: The plugin's release (V(24.11.5)), or none.
    type: raw
    required: true
  slurm:
    description: The release the host runs.
    type: str
    required: true
  path:
    description: The plugin file, for the message.
    type: str
    required: true
  host:
    description: The host, for the message.
    type: str
    required: true
  found:
    description: Whether the plugin file exists; false - the message says it is missing and names O(packages).
    type: bool
    default: true
  packages:
    description: What C(slurm_pyxis_packages) installs, for the message about a missing plugin.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Refuse a pyxis of another release
  ansible.builtin.assert:
    that: problem | length == 0
    fail_msg: "{{ problem }}"
  vars:
    problem: "{{ pyxis.version | oci_gpu.cluster.slurm_pyxis_problem('24.11.5', pyxis.path, inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: Empty when the releases match, else the refusal.
  type: str
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def slurm_pyxis_problem(built: Any, slurm: Any, path: Any, host: Any, found: Any = True, packages: Any = ()) -> str:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._containers import pyxis_version_problem

    try:
        return pyxis_version_problem(built or None, slurm, str(path or ""), str(host), bool(found), packages)
    except ValueError as exc:
        raise AnsibleFilterError(f"slurm_pyxis_problem: {exc}") from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"slurm_pyxis_problem": slurm_pyxis_problem}
