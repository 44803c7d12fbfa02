# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The repair role's preflight filter: the agent's own settings check, in its words."""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.filter.repair_settings_problem import repair_settings_problem


def test_good_settings_have_no_problem() -> None:
    assert repair_settings_problem({"max_concurrent": 2, "drain_deadline_s": None, "reboot_causes": []}) == ""
    assert repair_settings_problem(None) == ""


def test_a_bad_setting_is_named_with_its_value() -> None:
    assert repair_settings_problem({"max_concurrent": 0}) == (
        "repair setting max_concurrent=0 must be a whole number of 1 or more"
    )
    assert repair_settings_problem({"repair_causes": ["gpu-health: (xid"]}).startswith(
        "repair setting repair_causes has a bad pattern 'gpu-health: (xid'"
    )
    assert repair_settings_problem({"join_timeout_s": -5}) == (
        "repair setting join_timeout_s=-5 must be a number of seconds above 0"
    )
