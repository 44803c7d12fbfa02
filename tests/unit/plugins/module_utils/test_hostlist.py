# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm hostlist library: every syntax feature, every refusal, and properties of compress.

Agreement with the real ``scontrol`` is checked in tests/integration/test_hostlist_scontrol.py.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import (
    MAX_EXPANSION,
    MAX_NUMBER,
    HostlistError,
    compress,
    expand,
    expand_many,
)

COLLECTIONS = Path(__file__).resolve().parents[4] / "build" / "collections"

# ---------------------------------------------------------------------------------------------
# expand
# ---------------------------------------------------------------------------------------------

EXPAND_CASES = [
    # plain names and separators
    ("", []),
    (" ,\t, ", []),
    ("login1", ["login1"]),
    ("head", ["head"]),
    ("a,b c\td", ["a", "b", "c", "d"]),
    (",n1,,n2,", ["n1", "n2"]),
    ("n1,n1", ["n1", "n1"]),
    # one bracket
    ("n[1-3]", ["n1", "n2", "n3"]),
    ("n[7]", ["n7"]),
    ("n[0-0]", ["n0"]),
    ("n[1-3,7,10-12]", ["n1", "n2", "n3", "n7", "n10", "n11", "n12"]),
    ("n[3,1-2]", ["n3", "n1", "n2"]),
    ("n[1-3,2],n2", ["n1", "n2", "n3", "n2", "n2"]),
    ("[1-3]", ["1", "2", "3"]),
    ("/dev/nvidia[0-3]", ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"]),
    ("gpu[1-2],login1", ["gpu1", "gpu2", "login1"]),
    ("n1[0-2]", ["n10", "n11", "n12"]),
    # zero padding: the width of lo decides
    ("gpu[001-003]", ["gpu001", "gpu002", "gpu003"]),
    ("n[08-10]", ["n08", "n09", "n10"]),
    ("n[098-101]", ["n098", "n099", "n100", "n101"]),
    ("n[001-9]", ["n001", "n002", "n003", "n004", "n005", "n006", "n007", "n008", "n009"]),
    ("n[9-010]", ["n9", "n10"]),
    ("n[00]", ["n00"]),
    ("n[010]", ["n010"]),
    ("n[1,01,001]", ["n1", "n01", "n001"]),
    ("n[9-10,09-10]", ["n9", "n10", "n09", "n10"]),
    # several brackets, text between them, Slurm's order
    (
        "rack[1-2]-gpu[01-03]",
        ["rack1-gpu01", "rack1-gpu02", "rack1-gpu03", "rack2-gpu01", "rack2-gpu02", "rack2-gpu03"],
    ),
    ("n[1-2][3-4]", ["n13", "n14", "n23", "n24"]),
    ("n[1-2,5]x[3-4,7]", ["n1x3", "n1x4", "n1x7", "n2x3", "n2x4", "n2x7", "n5x3", "n5x4", "n5x7"]),
    ("n[1-2]x[3]", ["n1x3", "n2x3"]),
    ("n[01-2]x[2-03]", ["n01x2", "n01x3", "n02x2", "n02x3"]),
    ("a[1-2]b[3-4]c[5-6]", ["a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"]),
    ("a[1-2]b[3]c[4-5]d[6]", ["a1b3c4d6", "a2b3c4d6", "a1b3c5d6", "a2b3c5d6"]),
    ("r[1-2]_b[1],x", ["r1_b1", "r2_b1", "x"]),
    # limits that are still fine
    ("n[0-65535]", [f"n{i}" for i in range(65536)]),
    (f"n{MAX_NUMBER}", [f"n{MAX_NUMBER}"]),
    (f"n[{MAX_NUMBER}]", [f"n{MAX_NUMBER}"]),
    ("n[00000000000000000000000001-2]", ["n00000000000000000000000001", "n00000000000000000000000002"]),
]


@pytest.mark.parametrize(("expr", "names"), EXPAND_CASES, ids=[c[0][:40] or "empty" for c in EXPAND_CASES])
def test_expand(expr: str, names: list[str]) -> None:
    assert expand(expr) == names


def test_expand_three_brackets_order() -> None:
    """The last bracket varies fastest, then the first, then the second (Slurm's recursion)."""
    names = expand("n[1-3]x[2-3]y[5-6]z[7-8]")
    assert names[:6] == ["n1x2y5z7", "n1x2y5z8", "n2x2y5z7", "n2x2y5z8", "n3x2y5z7", "n3x2y5z8"]
    assert names[6] == "n1x3y5z7"
    assert names[12] == "n1x2y6z7"
    assert len(names) == len(set(names)) == 24


EXPAND_ERRORS = [
    ("gpu[3-1]", "range start 3 is greater than end 1"),
    ("n[1-2]-ib", "text '-ib' after the last bracket"),
    ("n[1-2]x[3-4]y", "text 'y' after the last bracket"),
    ("n[", "'[' without a closing ']'"),
    ("n[1-2", "'[' without a closing ']'"),
    ("n]", "']' at position 2 without a matching '['"),
    ("a]b[1-2]", "']' at position 2 without a matching '['"),
    ("n[1-2]]", "']' at position 7 without a matching '['"),
    ("n[[1-2]]", "'[' at position 3 inside another bracket"),
    ("n[]", "empty brackets '[]'"),
    ("n[1-2]x[]", "empty brackets '[]'"),
    ("n[1,,2]", "empty item in [1,,2]"),
    ("n[1,]", "empty item in [1,]"),
    ("n[,1]", "empty item in [,1]"),
    ("n[a-b]", "bad range 'a-b' in [a-b]"),
    ("n[1-]", "bad range '1-' in [1-]"),
    ("n[-1]", "bad range '-1' in [-1]"),
    ("n[1--3]", "bad range '1--3'"),
    ("n[1-2-3]", "bad range '1-2-3'"),
    ("n[+1-2]", "bad range '+1-2'"),
    ("n[ 1-2]", "bad range ' 1-2'"),
    ("n[1-2 ]", "bad range '1-2 '"),
    ("n[0x10]", "bad range '0x10'"),
    ("n[0-65536]", "range 0-65536 has 65537 hosts; Slurm allows at most 65536"),
    ("a[0-40000,0-40000]b[1]", "[0-40000,0-40000] has 80002 hosts; Slurm allows at most 65536 in a bracket before"),
    ("n[99999999999999999999]", "number 99999999999999999999 is too large for Slurm"),
    (f"n[1-{MAX_NUMBER + 1}]", f"number {MAX_NUMBER + 1} is too large"),
    (f"n{MAX_NUMBER + 1}", f"number {MAX_NUMBER + 1} is too large"),
    ("a[0-1023]b[0-1023]c[0-1]", f"expands to 2097152 names, more than the {MAX_EXPANSION} allowed"),
    ("x\ny", "'\\n' is not allowed in a host name"),
    ("x\r", "'\\r' is not allowed"),
    ("n\u00a0[1-2]", "'\\xa0' is not allowed"),
    ("n\x00", "'\\x00' is not allowed"),
]


@pytest.mark.parametrize(("expr", "reason"), EXPAND_ERRORS, ids=[repr(c[0])[:40] for c in EXPAND_ERRORS])
def test_expand_refuses(expr: str, reason: str) -> None:
    with pytest.raises(HostlistError) as err:
        expand(expr)
    message = str(err.value)
    assert message.startswith("hostlist "), message
    assert reason in message
    assert err.value.reason in message
    assert err.value.expression == expr


def test_error_quotes_whole_expression_and_the_bad_name() -> None:
    with pytest.raises(HostlistError) as err:
        expand("login1,gpu[3-1]")
    assert str(err.value) == 'hostlist "login1,gpu[3-1]": in "gpu[3-1]": range start 3 is greater than end 1'
    assert isinstance(err.value, ValueError)


def test_error_message_for_exact_example() -> None:
    with pytest.raises(HostlistError, match=r'^hostlist "gpu\[3-1\]": range start 3 is greater than end 1$'):
        expand("gpu[3-1]")


def test_error_quotes_long_expression_shortened() -> None:
    with pytest.raises(HostlistError) as err:
        expand("n" * 500 + "[2-1]")
    assert len(str(err.value)) < 600
    assert "..." in str(err.value)


def test_expand_limit_inside_one_bracket() -> None:
    with pytest.raises(HostlistError, match=r"has more than the 1048576 names allowed"):
        expand("n[" + ",".join(["0-65535"] * 17) + "]")


def test_expand_total_limit_across_names() -> None:
    expr = ",".join(["n[0-65535]"] * 17)
    with pytest.raises(HostlistError, match="more than the 1048576 names allowed"):
        expand(expr)


@pytest.mark.parametrize("value", [None, 5, b"n[1-2]", ["n1"]])
def test_expand_refuses_non_strings(value: object) -> None:
    with pytest.raises(HostlistError, match="expected a string"):
        expand(value)  # type: ignore[arg-type]


def test_expand_many() -> None:
    assert expand_many(["n[1-2]", "m1", "", "n1"]) == ["n1", "n2", "m1", "n1"]
    assert expand_many("n[1-2],m1") == ["n1", "n2", "m1"]
    assert expand_many(x for x in ["a[1-2]"]) == ["a1", "a2"]
    assert expand_many([]) == []
    with pytest.raises(HostlistError, match=r'hostlist "n\[2-1\]"'):
        expand_many(["n1", "n[2-1]"])
    with pytest.raises(HostlistError, match="expected a string or a list of strings"):
        expand_many(7)  # type: ignore[arg-type]
    with pytest.raises(HostlistError, match="expected a string, got int"):
        expand_many(["n1", 7])  # type: ignore[list-item]


# ---------------------------------------------------------------------------------------------
# compress
# ---------------------------------------------------------------------------------------------

COMPRESS_CASES = [
    ([], ""),
    (["gpu001"], "gpu001"),
    (["login"], "login"),
    (["n3", "n1", "n2", "n1"], "n[1-3]"),
    (["gpu001", "gpu002", "gpu003", "gpu004", "login1"], "gpu[001-004],login1"),
    (["n1", "n2", "n3", "n7", "n10", "n11", "n12"], "n[1-3,7,10-12]"),
    # widths: n1 and n01 are different hosts
    (["n1", "n01"], "n1,n01"),
    (["n1", "n01", "n001"], "n[1,01,001]"),
    (["n1", "n2", "n01", "n02"], "n[1-2,01-02]"),
    (["n9", "n10", "n09", "n010", "n1", "n01"], "n[1,01,9-10,09,010]"),
    # a padded run continues into unpadded numbers, as in gpu[098-101]
    (["n098", "n099", "n100", "n101"], "n[098-101]"),
    (["n08", "n09", "n10", "n11"], "n[08-11]"),
    (["n099", "n100", "n098", "n10", "n09"], "n[09-10,098-100]"),
    (["n008", "n009", "n10"], "n[008-009,10]"),
    (["n090", "n091", "n092", "n093"] + [f"n{i}" for i in range(95, 106)], "n[090-093,95-105]"),
    ([f"n{i:03d}" for i in range(90, 100)] + [f"n{i}" for i in range(95, 106)], "n[090-105,95-99]"),
    # names without a trailing number are never bracketed (Slurm 22.05 refuses n[1-2]-ib)
    (["gpu1-ib", "gpu2-ib"], "gpu1-ib,gpu2-ib"),
    (["a", "c1", "b", "c"], "a,b,c,c1"),
    # separate names when shorter than a bracket
    (["n1", "n5"], "n1,n5"),
    (["n1", "n5", "n9"], "n[1,5,9]"),
    (["ab1", "ab5"], "ab[1,5]"),
    (["1", "5"], "1,5"),
    (["n0", "n1"], "n0,n1"),
    (["n0", "n1", "n2"], "n[0-2]"),
    (["1", "2"], "1,2"),
    (["1", "2", "3"], "[1-3]"),
    (["1", "2", "3", "7"], "[1-3,7]"),
    # a second bracket for an inner number
    (["rack1-gpu01", "rack1-gpu02", "rack2-gpu01", "rack2-gpu02"], "rack[1-2]-gpu[01-02]"),
    ([f"rack{r}-gpu{g:02d}" for r in range(1, 626) for g in range(1, 17)], "rack[1-625]-gpu[01-16]"),
    (["rack1-gpu01", "rack1-gpu02", "rack2-gpu01"], "rack1-gpu[01-02],rack2-gpu01"),
    (["r1-g5", "r2-g5", "r3-g5"], "r[1-3]-g[5]"),
    (["a1b5", "a2b5"], "a1b5,a2b5"),
    (["r1-g1", "r01-g1", "r1-g2", "r01-g2"], "r[1,01]-g[1-2]"),
    (["r1-n2-g3", "r1-n3-g3", "r2-n2-g3"], "r1-n[2-3]-g[3],r2-n2-g3"),
    # natural order of terms: numbers by value
    (["n10", "m2", "n9x1", "n9x2", "n2"], "m2,n2,n9x[1-2],n10"),
    (["b2", "b10", "a10"], "a10,b2,b10"),
    (["bb2", "bb10", "a10"], "a10,bb[2,10]"),
]


@pytest.mark.parametrize(("names", "expected"), COMPRESS_CASES, ids=[c[1][:40] or "empty" for c in COMPRESS_CASES])
def test_compress(names: list[str], expected: str) -> None:
    assert compress(names) == expected
    assert compress(reversed(names)) == expected
    assert sorted(expand(expected)) == sorted(set(names))


COMPRESS_ERRORS = [
    ([""], 'host name "": empty'),
    (["n1", "a,b"], "host name \"a,b\": ',' is not allowed in a host name (expand hostlist expressions"),
    (["n[1-2]"], "'[' is not allowed in a host name (expand hostlist expressions before compressing)"),
    (["n]"], "']' is not allowed"),
    (["a b"], "' ' is not allowed"),
    (["a\tb"], "'\\t' is not allowed"),
    (["a\n"], "'\\n' is not allowed"),
    (["a\x7f"], "'\\x7f' is not allowed"),
    ([f"n{MAX_NUMBER + 1}"], f"number {MAX_NUMBER + 1} is too large for Slurm"),
    (["n1", 5], "host name 5: expected a string, got int"),
    (["n1", None], "host name None: expected a string, got NoneType"),
]


@pytest.mark.parametrize(("names", "reason"), COMPRESS_ERRORS, ids=[repr(c[0])[:40] for c in COMPRESS_ERRORS])
def test_compress_refuses(names: list[object], reason: str) -> None:
    with pytest.raises(HostlistError) as err:
        compress(names)  # type: ignore[arg-type]
    assert reason in str(err.value)


@pytest.mark.parametrize("value", ["n1,n2", b"n1", {"n1": 1}, 5, None])
def test_compress_refuses_non_lists(value: object) -> None:
    with pytest.raises(HostlistError, match="expected a list of host names"):
        compress(value)  # type: ignore[arg-type]


def test_compress_accepts_any_iterable() -> None:
    assert compress(iter(["gpu2", "gpu1"])) == "gpu[1-2]"
    assert compress(("gpu2", "gpu1")) == "gpu[1-2]"
    assert compress({"gpu2", "gpu1"}) == "gpu[1-2]"


def test_compress_max_number_is_fine() -> None:
    assert compress([f"gpu{MAX_NUMBER}", f"gpu{MAX_NUMBER - 1}"]) == f"gpu[{MAX_NUMBER - 1}-{MAX_NUMBER}]"


def test_compress_same_string_in_every_process() -> None:
    """Set and dict order vary with PYTHONHASHSEED; the output must not (templates stay idempotent)."""
    script = (
        "import random, sys\n"
        f"sys.path.insert(0, {str(COLLECTIONS)!r})\n"
        "from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import compress\n"
        "rng = random.Random(3)\n"
        "names = [f'{p}{rng.randint(0, 300):0{rng.randint(1, 4)}d}' for p in ('n', 'x-', '') for _i in range(200)]\n"
        "names += [f'r{r}-g{s:02d}' for r in range(1, 4) for s in range(1, 9)] + ['a', 'b', 'c']\n"
        "print(compress(names))\n"
    )
    outputs = set()
    for seed in ("1", "2", "3"):
        proc = subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.add(proc.stdout)
    assert len(outputs) == 1
    assert "r[1-3]-g[01-08]" in outputs.pop()


# ---------------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------------

PREFIXES = ["gpu", "n", "node-", "", "a.b", "rack1-gpu", "rack2-gpu", "rack10-gpu", "r01-g", "r1-g", "x_"]


@st.composite
def host_sets(draw: st.DrawFn, max_names: int = 5000) -> list[str]:
    """1..max_names names: runs with holes, mixed prefixes and zero padding, racks, plain names.

    Hypothesis draws the shape (prefixes, runs, widths, hole ratio); a seeded PRNG fills in the
    holes and the per-name padding, which keeps generating thousands of names cheap.
    """
    prefixes = draw(st.lists(st.sampled_from(PREFIXES), min_size=1, max_size=5, unique=True))
    blocks = draw(
        st.lists(
            st.tuples(
                st.sampled_from(prefixes),
                st.integers(0, 12000) | st.sampled_from([0, 1, 8, 95, 998, 9995]),
                st.integers(1, 1500) | st.sampled_from([1000, 2500, 5000]),
                st.sampled_from([1.0, 0.95, 0.7, 0.3]),
            ),
            min_size=1,
            max_size=6,
        )
    )
    widths = draw(st.lists(st.integers(0, 6), min_size=1, max_size=3))  # 0 = unpadded
    rnd = random.Random(draw(st.integers(0, 2**32)))
    names: list[str] = []
    for prefix, start, length, keep in blocks:
        for value in range(start, start + length):
            if keep == 1.0 or rnd.random() < keep:
                names.append(prefix + str(value).zfill(rnd.choice(widths)))
    names.append(rnd.choice(prefixes) + draw(st.sampled_from(["", "-ib", "login", "x"])) + "z")
    if draw(st.booleans()):
        names += [f"rack{r}-n{s:02d}" for r in range(1, rnd.randint(2, 9)) for s in range(1, rnd.randint(2, 20))]
    rnd.shuffle(names)
    return names[:max_names]


PROPERTY_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@PROPERTY_SETTINGS
@given(host_sets())
def test_expand_of_compress_is_the_set(names: list[str]) -> None:
    expanded = expand(compress(names))
    assert len(expanded) == len(set(expanded)), "compress produced an expression with duplicates"
    assert sorted(expanded) == sorted(set(names))


@PROPERTY_SETTINGS
@given(host_sets(), st.integers(0, 2**32))
def test_compress_is_canonical(names: list[str], seed: int) -> None:
    rnd = random.Random(seed)
    shuffled = names + rnd.sample(names, min(len(names), 20))  # duplicates too
    rnd.shuffle(shuffled)
    assert compress(shuffled) == compress(names)


@PROPERTY_SETTINGS
@given(host_sets())
def test_compress_is_idempotent_through_expand(names: list[str]) -> None:
    once = compress(names)
    assert compress(expand(once)) == once


@PROPERTY_SETTINGS
@given(host_sets(max_names=300))
def test_compress_never_longer_than_the_plain_list(names: list[str]) -> None:
    assert len(compress(names)) <= len(",".join(set(names)))


NAME_CHARS = st.sampled_from("ab-_.09")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(NAME_CHARS, min_size=1, max_size=8), min_size=1, max_size=40))
def test_compress_round_trips_arbitrary_small_names(names: list[str]) -> None:
    """Short names over a tiny alphabet hit the corners: empty prefixes, 0, 00, digits inside."""
    expanded = expand(compress(names))
    assert sorted(expanded) == sorted(set(names))
    assert compress(expanded) == compress(names)
