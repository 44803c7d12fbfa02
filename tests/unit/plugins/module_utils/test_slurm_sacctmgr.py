# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The main() skeleton the accounting modules share (slurm_qos, slurm_account, slurm_user,
slurm_reservation): their options, a bad name refused alike, a refusal before any read, a parse error
as the failure."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._sacctmgr import (
    ASSOC_ARGS,
    BASE_ARGS,
    SacctmgrError,
    account_problems,
    field_args,
    new_module,
    parsed,
    qos_problems,
    refuse,
)


class Failed(Exception):
    pass


class FakeModule:
    def __init__(self, argument_spec: dict[str, Any] | None = None, supports_check_mode: bool = False) -> None:
        self.argument_spec, self.supports_check_mode = argument_spec, supports_check_mode

    def fail_json(self, **kwargs: Any) -> None:
        raise Failed(kwargs)


def test_new_module_has_the_shared_options_then_its_own() -> None:
    plain = new_module(FakeModule, {"priority": {"type": "int"}})
    assert plain.argument_spec == {**BASE_ARGS, "priority": {"type": "int"}}
    assert plain.supports_check_mode is True
    assoc = new_module(FakeModule, {"parent": {"type": "str"}}, association=True)
    assert assoc.argument_spec == {**BASE_ARGS, **ASSOC_ARGS, "parent": {"type": "str"}}


def test_field_args_give_each_kind_its_option_type() -> None:
    fields = {"a": ("A", "A", "int"), "b": ("B", "B", "names"), "c": ("C", "C", "tres"), "d": ("D", "D", "time")}
    assert field_args(fields, d={"choices": ["x"]}) == {
        "a": {"type": "int"},
        "b": {"type": "list", "elements": "str"},
        "c": {"type": "raw"},
        "d": {"type": "str", "choices": ["x"]},
    }


@pytest.mark.parametrize(
    ("problems", "kind", "name"), [(account_problems, "account", "phys ics"), (qos_problems, "QOS", "gpu short")]
)
def test_a_bad_name_is_refused_in_the_same_words_by_each_record(problems: Any, kind: str, name: str) -> None:
    assert problems(name, {}) == [
        f"{kind} name {name!r}: use 1-64 letters, digits, '_', '.' or '-', starting with a letter, digit or '_' "
        "(sacctmgr stores it lower-cased)"
    ]


def test_refuse_names_every_problem_with_the_result() -> None:
    refuse(FakeModule(), [], {"changed": False})  # nothing to refuse: returns
    with pytest.raises(Failed) as info:
        refuse(FakeModule(), ["name: empty", "priority: not a number"], {"changed": False})
    assert info.value.args[0] == {"msg": "name: empty; priority: not a number", "changed": False}


def test_parsed_returns_the_value_or_fails_with_the_refusal() -> None:
    assert parsed(FakeModule(), lambda a, b: a + b, 1, 2, result={}) == 3

    def bad(_text: str) -> None:
        raise SacctmgrError("qos gpu: unknown flag")

    with pytest.raises(Failed) as info:
        parsed(FakeModule(), bad, "x", result={"commands": []})
    assert info.value.args[0] == {"msg": "qos gpu: unknown flag", "commands": []}
