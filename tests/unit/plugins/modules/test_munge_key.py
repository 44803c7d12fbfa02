# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

import base64

import pytest

from ansible_collections.oci_gpu.cluster.plugins.modules.munge_key import decode_key


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("not base64!", "not valid base64"),
        (base64.b64encode(b"x" * 31).decode(), "decodes to 31 bytes"),
        (base64.b64encode(b"x" * 1025).decode(), "decodes to 1025 bytes"),
        ("QUJD", "decodes to 3 bytes"),
    ],
)
def test_decode_key_refuses(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error) as info:
        decode_key(text)
    assert text not in str(info.value)


def test_decode_key_ignores_whitespace() -> None:
    raw = bytes(range(256)) * 4
    text = base64.b64encode(raw).decode()
    wrapped = "\n".join(text[i : i + 76] for i in range(0, len(text), 76))
    assert decode_key(wrapped) == raw


def _s(digest: str, recorded: bool = False) -> dict:
    return {"key_changed": True, "current_digest": digest, "recorded": recorded}


@pytest.mark.parametrize(
    ("states", "rotate", "named"),
    [
        # a first install: every host holds its package's own key
        ({"ctl": {"key_changed": False, "current_digest": "a"}, "n1": _s("b"), "n2": _s("c")}, False, []),
        # a rebuilt controller: the others share the old cluster key
        (
            {"ctl": {"key_changed": False, "current_digest": "new"}, "n1": _s("old"), "n2": _s("old")},
            False,
            ["n1", "n2"],
        ),
        # two hosts: the other one's key was written by the role
        ({"ctl": {"key_changed": False, "current_digest": "new"}, "n1": _s("old", True)}, False, ["n1"]),
        # a rotation asked for
        ({"ctl": {"key_changed": False, "current_digest": "new"}, "n1": _s("old"), "n2": _s("old")}, True, []),
        # a host without a key yet, a skipped read
        ({"ctl": {"skipped": True}, "n1": {"key_changed": True, "current_digest": None}}, False, []),
    ],
)
def test_swap_problem(states, rotate, named) -> None:
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._munge import swap_problem

    problem = swap_problem(states, "ctl", rotate)
    assert bool(problem) == bool(named)
    if named:
        assert f"on {len(named)} host(s) that hold the cluster's key ({', '.join(named)}:" in problem
        assert "munge_key_rotate: true" in problem and "the key on ctl" in problem
