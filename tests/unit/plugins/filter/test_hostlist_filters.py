# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hostlist filters, called directly (through a real `ansible` run: tests/functional)."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.oci_gpu.cluster.plugins.filter.hostlist_compress import FilterModule as CompressModule
from ansible_collections.oci_gpu.cluster.plugins.filter.hostlist_compress import hostlist_compress
from ansible_collections.oci_gpu.cluster.plugins.filter.hostlist_expand import FilterModule as ExpandModule
from ansible_collections.oci_gpu.cluster.plugins.filter.hostlist_expand import hostlist_expand


def test_filter_modules_register_one_filter_each() -> None:
    assert list(ExpandModule().filters()) == ["hostlist_expand"]
    assert list(CompressModule().filters()) == ["hostlist_compress"]


def test_filters_directly() -> None:
    assert hostlist_expand("n[1-2]") == ["n1", "n2"]
    assert hostlist_expand(("n[1-2]", "m")) == ["n1", "n2", "m"]
    assert hostlist_compress(["n2", "gpu1", "gpu2"]) == "gpu[1-2],n2"
    assert hostlist_compress(x for x in ["a1"]) == "a1"


@pytest.mark.parametrize(
    ("func", "value", "error"),
    [
        (hostlist_expand, "n[", "hostlist_expand: hostlist \"n[\": '[' without a closing ']'"),
        (hostlist_expand, 5, "hostlist_expand: expected a hostlist expression or a list of them, got int"),
        (hostlist_expand, {"a": 1}, "got dict"),
        (hostlist_expand, None, "got NoneType"),
        (hostlist_compress, "gpu1", "use hostlist_expand to turn an expression into a list"),
        (hostlist_compress, {"a": 1}, "expected a list of host names, got dict"),
        (hostlist_compress, [""], 'hostlist_compress: host name "": empty'),
        (hostlist_compress, 3, "got int"),
    ],
)
def test_filter_errors_directly(func: Any, value: Any, error: str) -> None:
    with pytest.raises(AnsibleFilterError) as err:
        func(value)
    assert error in str(err.value)
