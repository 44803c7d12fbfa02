# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's action plugins' common base: no files to transfer, check mode supported, and
``run`` hands the subclass's ``act`` the base result and the task's variables."""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

__all__ = ["CollectionAction"]


class CollectionAction(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        return self.act(result, task_vars)

    def act(self, result: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError
