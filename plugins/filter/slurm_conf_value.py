# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_conf_value: one value written the way Slurm's parser reads it back."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_conf_value
short_description: Write one value for slurm.conf or slurmdbd.conf so that Slurm reads it back unchanged
version_added: 0.3.0
author: contributors to the oci_gpu.cluster project
description:
  - Slurm's configuration parser cuts a line at an unescaped C(#), drops each backslash that escapes the
    next character, and reads a quoted value as C("[^"]*"). This filter escapes backslashes and C(#) and
    quotes a value that holds whitespace or a backslash, so a password such as C(a#b c\d) survives.
  - A value no escaping can carry (a double quote, a line break, a control character, leading or trailing
    whitespace) fails, naming O(name) and the rule but never the value (it may be a password).
  - With O(check=true) it returns that problem as text instead (empty when the value is fine), for a
    preflight that reports every problem at once.
positional: _input
options:
  _input:
    description: The value.
    type: str
    required: true
  name:
    description: The variable the value comes from, for messages.
    type: str
    default: value
  check:
    description: Return the problem (or an empty string) instead of the written value.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Write the database password into slurmdbd.conf
  ansible.builtin.copy:
    content: "StoragePass={{ db_password | oci_gpu.cluster.slurm_conf_value(name='db_password') }}\n"
    dest: /etc/slurm/slurmdbd.conf
    mode: "0600"
  no_log: true
"""

RETURN = r"""
_value:
  description: The value as it goes into the file, or with O(check=true) the problem ('' when none).
  type: str
"""

from typing import Any

from ansible.errors import AnsibleFilterError


def slurm_conf_value(value: Any, name: str = "value", check: bool = False) -> str:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import conf_value, conf_value_problem

    text = "" if value is None else str(value)
    if check:
        problem = conf_value_problem(text)
        return f"{name} cannot be written into a Slurm configuration file: {problem}" if problem else ""
    try:
        return conf_value(text)
    except ValueError as exc:
        raise AnsibleFilterError(f"{name} cannot be written into a Slurm configuration file: {exc}") from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"slurm_conf_value": slurm_conf_value}
