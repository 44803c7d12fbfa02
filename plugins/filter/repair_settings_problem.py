# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.repair_settings_problem: why the repair agent's settings are refused."""

from __future__ import annotations

DOCUMENTATION = r"""
name: repair_settings_problem
short_description: Say why the repair agent's state-machine settings are refused
version_added: 0.4.0
author: contributors to the oci_gpu.cluster project
description:
  - Checks the settings exactly as the repair agent does when it starts (unknown keys, counts of 1 or more,
    timeouts above 0, patterns that compile) and returns the first problem, naming the setting and its
    value, or an empty string.
  - The C(oci_gpu.cluster.repair) role's preflight uses it, so bad settings are refused before the host changes.
positional: _input
options:
  _input:
    description:
      - The settings (C(max_concurrent), C(max_attempts), C(drain_deadline_s), C(maintenance_lead_s),
        C(reboot_timeout_s), C(join_timeout_s), C(accept_timeout_s), C(repair_causes), C(reboot_causes)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the repair settings
  ansible.builtin.assert:
    that: "(repair_machine_settings | oci_gpu.cluster.repair_settings_problem) == ''"
"""

RETURN = r"""
_value:
  description: The problem (for example C(repair setting max_concurrent=0 must be a whole number of 1 or more)), or ''.
  type: str
"""

from typing import Any


def repair_settings_problem(settings: Any) -> str:
    # Imported at the first call, not with the file (docs/layout.md, "Filter files import nothing heavy").
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.repair._machine import SettingsError, settings_from

    try:
        settings_from(dict(settings or {}))
    except SettingsError as exc:
        return str(exc)
    return ""


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"repair_settings_problem": repair_settings_problem}
