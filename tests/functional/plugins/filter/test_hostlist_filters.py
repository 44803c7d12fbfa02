# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hostlist filters, called through a real `ansible` run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ansible_harness import JSON_CALLBACK, QUIET, ansible_env, run_adhoc

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import compress, expand


def run_debug(tmp_path: Path, msg: str, variables: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """`ansible localhost -m debug -a msg=...`; returns (rc, the host's result) from the json callback."""
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    env = ansible_env(**JSON_CALLBACK, **QUIET)
    # cwd: no ansible.cfg from the caller's directory
    result, proc = run_adhoc(
        "ansible.builtin.debug", "-e", f"@{tmp_path / 'vars.json'}", "-a", f"msg={msg}", env=env, cwd=tmp_path
    )
    assert proc.stdout.lstrip().startswith("{"), f"ansible printed more than its JSON:\n{proc.stdout}\n{proc.stderr}"
    return proc.returncode, result


EXPRESSIONS = [
    "gpu[001-004],login1",
    "n[1-3,7,10-12]",
    "rack[1-2]-gpu[01-04]",
    "a[1-2]b[3-4]c[5-6]",
    "n[08-10] n[1,01]",
    ["n[1-2]", "m1", "n1"],
    "",
]
NAME_LISTS = [
    ["gpu003", "gpu001", "gpu002", "gpu001", "login1"],
    [f"rack{r}-gpu{g:02d}" for r in range(1, 5) for g in range(1, 9)],
    ["n9", "n10", "n09", "n010", "n1", "n01"],
    ["gpu1-ib", "gpu2-ib", "head"],
    [],
]


def test_filters_through_ansible(tmp_path: Path) -> None:
    rc, result = run_debug(
        tmp_path,
        "{{ {'expanded': exprs | map('oci_gpu.cluster.hostlist_expand') | list,"
        " 'compressed': lists | map('oci_gpu.cluster.hostlist_compress') | list,"
        " 'group': groups['all'] | oci_gpu.cluster.hostlist_compress,"
        " 'round_trip': (lists[1] | oci_gpu.cluster.hostlist_compress | oci_gpu.cluster.hostlist_expand | sort) } }}",
        {"exprs": EXPRESSIONS, "lists": NAME_LISTS},
    )
    assert rc == 0, result
    msg = result["msg"]
    assert msg["expanded"] == [expand(e) if isinstance(e, str) else expand(",".join(e)) for e in EXPRESSIONS]
    assert msg["expanded"][0] == ["gpu001", "gpu002", "gpu003", "gpu004", "login1"]
    assert msg["compressed"] == [compress(names) for names in NAME_LISTS]
    assert msg["compressed"][:2] == ["gpu[001-003],login1", "rack[1-4]-gpu[01-08]"]
    assert msg["group"] == ""  # implicit localhost only: `all` is empty
    assert msg["round_trip"] == sorted(NAME_LISTS[1])


@pytest.mark.parametrize(
    ("msg", "variables", "error"),
    [
        (
            "{{ 'gpu[3-1]' | oci_gpu.cluster.hostlist_expand }}",
            {},
            'hostlist "gpu[3-1]": range start 3 is greater than end 1',
        ),
        (
            "{{ bad | oci_gpu.cluster.hostlist_expand }}",
            {"bad": ["n1", "n[1-2]-ib"]},
            "text '-ib' after the last bracket",
        ),
        ("{{ ['n1', 'a,b'] | oci_gpu.cluster.hostlist_compress }}", {}, "host name \"a,b\": ',' is not allowed"),
        ("{{ 'n[1-2]' | oci_gpu.cluster.hostlist_compress }}", {}, "expected a list of host names, got str"),
    ],
    ids=["expand-range", "expand-suffix", "compress-comma", "compress-string"],
)
def test_filter_errors_through_ansible(tmp_path: Path, msg: str, variables: dict[str, Any], error: str) -> None:
    rc, result = run_debug(tmp_path, msg, variables)
    assert rc != 0
    assert result.get("failed") is True
    assert error in result["msg"], result["msg"]
