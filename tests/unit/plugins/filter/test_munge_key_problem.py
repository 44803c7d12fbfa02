# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""munge_key_problem: the preflight refuses what the munge_key module would refuse, never quoting it."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.oci_gpu.cluster.plugins.filter.munge_key_problem import munge_key_problem
from ansible_collections.oci_gpu.cluster.plugins.modules.munge_key import decode_key

KEY_32 = base64.b64encode(bytes(range(32))).decode()
KEY_1024 = base64.b64encode(bytes(1024)).decode()


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        (KEY_32, ""),
        (KEY_1024, ""),
        (KEY_32[:20] + "\n  " + KEY_32[20:], ""),
        (base64.b64encode(bytes(31)).decode(), "key decodes to 31 bytes; munge needs 32 to 1024"),
        (base64.b64encode(bytes(1025)).decode(), "key decodes to 1025 bytes; munge needs 32 to 1024"),
        ("not base64!", "key is not valid base64"),
        (KEY_32[:-1], "key is not valid base64"),
        ("   ", "key decodes to 0 bytes; munge needs 32 to 1024"),
        (12345, "key is a int, not base64 text"),
    ],
    ids=["32", "1024", "wrapped", "31", "1025", "not-base64", "bad-padding", "blank", "number"],
)
def test_problem_matches_the_module_decoder(key: object, problem: str) -> None:
    assert munge_key_problem(key) == problem
    if isinstance(key, str):
        if problem:
            with pytest.raises(ValueError, match=problem):
                decode_key(key)
        else:
            assert 32 <= len(decode_key(key)) <= 1024
    if isinstance(key, str) and key.strip() and problem:
        assert key.strip() not in problem


def test_the_message_names_who_needs_the_key() -> None:
    short = "QUFBQUFBQUFBQUFBQUFBQQ=="  # 16 bytes
    assert munge_key_problem(short) == "key decodes to 16 bytes; munge needs 32 to 1024"
    assert munge_key_problem(short, "a JWT key") == "key decodes to 16 bytes; a JWT key needs 32 to 1024"
