# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Plain data from what Ansible hands a filter or an action, with its omit sentinel kept recognisable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["plain"]


def plain(value: Any, omit_token: Any) -> Any:
    """Copy Ansible's lazy containers into plain ones; ansible-core 2.19's Omit sentinel becomes
    ``omit_token`` (the configuration model drops a key whose value is it, as it does for omit's
    placeholder string)."""
    if type(value).__name__ == "_OmitType":
        return omit_token
    if isinstance(value, Mapping):
        return {k: plain(v, omit_token) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, omit_token) for v in value]
    return value
