# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_conf_value: a value written into slurm.conf/slurmdbd.conf reads back unchanged through
Slurm's parser rules, re-implemented here from Slurm's parse_config.c (_strip_comments: a '#' after
an even number of backslashes ends the line; _strip_escapes: a backslash keeps the next character;
the key=value regex: a quoted value is "[^"]*", else up to whitespace)."""

from __future__ import annotations

import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.oci_gpu.cluster.plugins.filter.slurm_conf_value import slurm_conf_value
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import render_slurm_config


def slurm_reads(line: str) -> str:
    """The value Slurm's parser takes from ``Key=<value>``."""
    backslashes = 0
    for i, c in enumerate(line):
        if c == "#" and backslashes % 2 == 0:
            line = line[:i]
            break
        backslashes = backslashes + 1 if c == "\\" else 0
    out, i = [], 0
    while i < len(line):
        if line[i] == "\\":
            i += 1
        if i < len(line):
            out.append(line[i])
        i += 1
    match = re.match(r'^\s*[\w.]+\s*=\s*(("([^"]*)")|([^\s]+))(\s|$)', "".join(out))
    assert match, line
    return match.group(3) if match.group(3) is not None else match.group(4)


@pytest.mark.parametrize(
    "value, written",
    [
        ("plain", "plain"),
        ("a#b c\\d", '"a\\#b c\\\\d"'),
        ("ends\\", '"ends\\\\"'),
        ("#start", "\\#start"),
        ("two  spaces", '"two  spaces"'),
    ],
)
def test_values_are_escaped_and_read_back_unchanged(value: str, written: str) -> None:
    assert slurm_conf_value(value) == written
    assert slurm_reads(f"StoragePass={written}") == value


@pytest.mark.parametrize(
    "value, rule",
    [
        ('say "hi"', "double quote"),
        ("two\nlines", "line break"),
        ("tab\there", "control character"),
        (" padded", "whitespace"),
    ],
)
def test_values_no_escaping_carries_are_refused_by_name_without_the_value(value: str, rule: str) -> None:
    with pytest.raises(AnsibleFilterError, match=f"slurm_dbd_storage_password cannot be written.*{rule}") as exc:
        slurm_conf_value(value, name="slurm_dbd_storage_password")
    assert value.strip() not in str(exc.value)
    problem = slurm_conf_value(value, name="slurm_dbd_storage_password", check=True)
    assert rule in problem and value.strip() not in problem
    assert slurm_conf_value("fine # value", check=True) == ""


SPEC = {
    "cluster_name": "lab",
    "controllers": ["ctl"],
    "nodes": [{"name": "gpu1", "cpus": 4, "real_memory": 4000}],
    "partitions": [{"name": "batch", "nodes": "ALL"}],
}


@pytest.mark.parametrize("key", ["AccountingStoragePass", "JobCompPass"])
def test_passwords_are_refused_in_slurm_conf_naming_the_key_not_the_value(key: str) -> None:
    with pytest.raises(ValueError, match=f"config.{key}: a password does not belong in slurm.conf") as exc:
        render_slurm_config({**SPEC, "config": {key: "s3cret-canary"}})
    assert "s3cret-canary" not in str(exc.value)


def test_a_munge_socket_path_is_what_accounting_storage_pass_may_hold() -> None:
    conf = render_slurm_config({**SPEC, "config": {"AccountingStoragePass": "/var/run/munge/global.socket.2"}})
    assert "AccountingStoragePass=/var/run/munge/global.socket.2\n" in conf["slurm.conf"]
