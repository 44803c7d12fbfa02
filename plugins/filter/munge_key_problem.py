# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.munge_key_problem: why a munge key cannot be used, without quoting it."""

from __future__ import annotations

DOCUMENTATION = r"""
name: munge_key_problem
short_description: Say why a base64 munge key cannot be used, never quoting the key
version_added: 0.3.0
author: contributors to the oci_gpu.cluster project
description:
  - Decodes the key exactly as the C(oci_gpu.cluster.munge_key) module does (whitespace ignored,
    strict base64, 32 to 1024 bytes once decoded) and returns why it is refused, or an empty string
    when it can be written.
  - The C(oci_gpu.cluster.munge) role's preflight uses it, so a key is refused before any host
    changes, in the words the module would use.
positional: _input, user
options:
  _input:
    description: The key, base64-encoded.
    type: str
    required: true
  user:
    description: Who needs the key, in the message (the slurm role checks its JWT key with V(a JWT key)).
    type: str
    default: munge
"""

EXAMPLES = r"""
- name: Check the munge key
  ansible.builtin.assert:
    that: (munge_key | oci_gpu.cluster.munge_key_problem) == ''
    fail_msg: "munge_key: {{ munge_key | oci_gpu.cluster.munge_key_problem }}"
    quiet: true
"""

RETURN = r"""
_value:
  description:
    - Why the key is refused (for example C(key decodes to 20 bytes; munge needs 32 to 1024)), or an
      empty string.
  type: str
"""

from typing import Any


def munge_key_problem(key: Any, user: str = "munge") -> str:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._munge import key_problem

    return key_problem(key, user)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"munge_key_problem": munge_key_problem}
