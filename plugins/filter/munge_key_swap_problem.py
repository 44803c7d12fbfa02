# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.munge_key_swap_problem: whether a run would replace the cluster's munge key."""

from __future__ import annotations

DOCUMENTATION = r"""
name: munge_key_swap_problem
short_description: Say whether writing a munge key would replace the key the cluster's hosts share
version_added: 0.5.0
author: contributors to the oci_gpu.cluster project
description:
  - Takes, per host of the run, what C(oci_gpu.cluster.munge_key) reported in check mode (C(key_changed),
    C(current_digest), C(recorded)), and returns why the run would replace the cluster's key, or an empty
    string.
  - A host that would get another key holds the cluster's key when the role recorded it there, or when
    other hosts that would change hold the same one (munge's package gives each fresh host a key of its
    own). Replacing that key is a rotation, allowed only with O(rotate).
  - The C(oci_gpu.cluster.munge) role runs it once per run, before any host's key changes.
positional: _input, source, rotate
options:
  _input:
    description: Host name to the munge_key module's check-mode result.
    type: dict
    required: true
  source:
    description: Where the key to write comes from when munge_key is empty (for the message).
    type: str
    required: true
  rotate:
    description: Replacing the cluster's key is wanted (munge_key_rotate).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Refuse to replace the cluster's munge key unless asked
  ansible.builtin.assert:
    that: (states | oci_gpu.cluster.munge_key_swap_problem('ctl1', false)) == ''
"""

RETURN = r"""
_value:
  description: Why the run is refused, naming the hosts; an empty string when it may go on.
  type: str
"""

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean


def munge_key_swap_problem(states: Any, source: Any, rotate: Any = False) -> str:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._munge import swap_problem

    if not isinstance(states, dict):
        raise AnsibleFilterError(f"munge_key_swap_problem: expected host -> result, got {type(states).__name__}")
    return swap_problem(states, str(source), boolean(rotate, strict=True))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"munge_key_swap_problem": munge_key_swap_problem}
