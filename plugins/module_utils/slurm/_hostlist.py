# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Slurm hostlist expressions: expand ``gpu[001-128]`` to names and compress names back.

Pure Python, standard library only, importable on Python 3.8+.

Public API
----------
``expand(expr) -> list[str]``
    The host names of one expression, in the order and with the duplicates that
    ``scontrol show hostnames`` prints.
``expand_many(exprs) -> list[str]``
    ``expand`` of each expression, concatenated (the same as joining them with commas).
``compress(names) -> str``
    A canonical expression for a set of names: never longer than ``scontrol show hostlist``
    prints for the same names in any order, and valid for Slurm 22.05 and later.
``HostlistError(ValueError)``
    Raised for a malformed expression or an unusable name; the message quotes it and says what
    is wrong. ``.expression`` and ``.reason`` hold the two parts.

Slurm's behaviour, measured with ``scontrol`` from Debian 12's Slurm 22.05.8
------------------------------------------------------------------------------
* Names are separated by commas, spaces or tabs; empty items are skipped (``",n1,,n2,"``).
  Commas inside brackets belong to the bracket.
* A bracket holds comma-separated numbers and ``lo-hi`` ranges, printed in the order written,
  duplicates kept: ``n[1-3,2],n2`` -> n1 n2 n3 n2 n2.
* Zero padding comes from the width of ``lo`` only: ``n[08-10]`` -> n08 n09 n10,
  ``n[1-010]`` -> n1 .. n10, ``n[001-9]`` -> n001 .. n009.
* A name may hold several brackets; text between them is part of the name
  (``rack[1-2]-gpu[01-04]``, ``n[1-2][3-4]`` -> n13 n14 n23 n24). The last bracket must end the
  name: ``n[1-2]-ib`` is "Invalid hostlist" (slurm.conf(5): "unit[0-31]rack" is invalid).
* Order with several brackets: the last bracket varies fastest; the others nest from right to
  left, so the second-to-last varies slowest. Two brackets give the natural order
  (``rack1-gpu01, rack1-gpu02, ..., rack2-gpu01``); ``a[1-2]b[3-4]c[5-6]`` gives
  a1b3c5 a1b3c6 a2b3c5 a2b3c6 a1b4c5 ... (``b`` outermost, then ``a``, then ``c``).
* One range may hold at most 65536 hosts (``n[0-65535]`` is fine, ``n[0-65536]`` is refused), and
  each bracket before the last at most 65536 in total.
* ``show hostlist`` keeps the input order and the duplicates, and joins only neighbours:
  ``n3,n1,n2`` -> ``n[3,1-2]``, ``n1,n1,n2`` -> ``n[1,1-2]``. ``show hostlistsorted`` sorts but
  keeps duplicates. Neither ever writes more than one bracket per name:
  ``rack1-gpu01,rack1-gpu02,rack2-gpu01`` -> ``rack1-gpu[01-02],rack2-gpu01``, and a name that
  does not end in digits is never compressed (``gpu1-ib,gpu2-ib`` stays as it is).
* Widths mix inside one bracket: ``n9,n10,n09,n010`` -> ``n[9-10,09,010]``; ``n1`` and ``n01``
  are different hosts.

Where Slurm is lenient with nonsense, this module refuses instead, so that an expression it
accepts is one Slurm reads the same way: ``n[1-]`` (Slurm: n1), ``n[ 1-2]`` and ``n[+1-2]``
(Slurm: n01 n02), an unclosed ``n[1`` (Slurm: ``n]``), a stray ``]``, a nested ``[``, numbers
above 18446744073709551614 (Slurm wraps or crashes), and any whitespace other than a separating
space or tab. One expression may expand to at most 1,048,576 names (Slurm has no limit and will
try to allocate billions).

Compression
-----------
``compress`` treats its input as a set: duplicates are dropped, input order does not matter, and
the same set always gives the same string. Names are split into a prefix and trailing digits as
Slurm does; every prefix gets one bracket whose ranges are chosen to minimise the length
(a padded run such as ``098-099`` may continue into ``100-105``, as Slurm does), except where
separate names are shorter: ``n1,n5`` rather than ``n[1,5]``, ``n0,n1`` rather than ``n[0-1]``
(Slurm prints either form, depending on the input order). When the
prefixes themselves differ only in their last number and share the same bracket, they fold into
a second bracket (``rack[1-2]-gpu[01-04]``), which Slurm reads back in the same order; this is
never done when it would not shorten the result. Terms are ordered by their first name in natural
order (numbers compared by value), and inside a bracket by value, then width.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import product
from typing import TYPE_CHECKING

__all__ = ["MAX_EXPANSION", "MAX_NUMBER", "MAX_RANGE", "HostlistError", "compress", "expand", "expand_many"]

# Slurm's MAX_RANGE / MAX_PREFIX_CNT (64K hosts per range, per bracket before the last).
MAX_RANGE = 65536
# Slurm keeps numbers in an unsigned long and loops with ``j <= hi``: hi == ULONG_MAX never ends.
MAX_NUMBER = 2**64 - 2
# Our own guard: one expression, at most this many names.
MAX_EXPANSION = 1 << 20

_SEPARATORS = ", \t"
_DIGITS = "0123456789"
_ITEM_RE = re.compile(r"([0-9]+)(?:-([0-9]+))?\Z")
_BAD_NAME_CHAR_RE = re.compile(r"[\s,\[\]]")
_DIGIT_RUN_RE = re.compile(r"([0-9]+)")
_LAST_DIGIT_RUN_RE = re.compile(r"(.*?)([0-9]+)([^0-9]*)\Z", re.DOTALL)
_QUOTE_LIMIT = 200

if TYPE_CHECKING:  # annotations stay strings; Python 3.8 cannot subscript tuple at run time
    # A range of numbers printed with one width: (width, lo, hi); width 1 means unpadded.
    _Range = tuple[int, int, int]


class HostlistError(ValueError):
    """A malformed hostlist expression or an unusable host name."""

    def __init__(self, expression: object, reason: str, kind: str = "hostlist") -> None:
        self.expression = expression
        self.reason = reason
        super().__init__(f"{kind} {_quote(expression)}: {reason}")


def _quote(value: object) -> str:
    if not isinstance(value, str):
        return repr(value)
    if len(value) > _QUOTE_LIMIT:
        value = value[:_QUOTE_LIMIT] + "..."
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fmt(value: int, width: int) -> str:
    return str(value).zfill(width)


# ----------------------------------------------------------------------------------------------
# expand
# ----------------------------------------------------------------------------------------------


def _tokens(expr: str) -> list[str]:
    """Split at top-level separators; commas inside brackets stay in the token."""
    tokens = []
    start = 0
    depth = 0
    for i, ch in enumerate(expr):
        if ch == "[":
            if depth:
                raise HostlistError(expr, f"'[' at position {i + 1} inside another bracket")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(expr, f"']' at position {i + 1} without a matching '['")
            depth = 0
        elif ch in _SEPARATORS and not depth:
            if i > start:
                tokens.append(expr[start:i])
            start = i + 1
    if depth:
        raise HostlistError(expr, "'[' without a closing ']'")
    if len(expr) > start:
        tokens.append(expr[start:])
    return tokens


def _check_text(expr: str, token: str, text: str) -> None:
    bad = _BAD_NAME_CHAR_RE.search(text)
    if bad is not None or not text.isprintable():
        char = bad.group(0) if bad is not None else next(c for c in text if not c.isprintable())
        raise HostlistError(expr, _in(expr, token, f"{char!r} is not allowed in a host name"))


def _in(expr: str, token: str, reason: str) -> str:
    return reason if token == expr else f"in {_quote(token)}: {reason}"


def _check_number(expr: str, token: str, digits: str) -> int:
    value = int(digits)
    if value > MAX_NUMBER:
        raise HostlistError(expr, _in(expr, token, f"number {digits} is too large for Slurm (max {MAX_NUMBER})"))
    return value


def _bracket_values(expr: str, token: str, body: str, last: bool) -> list[str]:
    if body == "":
        raise HostlistError(expr, _in(expr, token, "empty brackets '[]'"))
    values: list[str] = []
    for item in body.split(","):
        match = _ITEM_RE.match(item)
        if match is None:
            what = f"empty item in [{body}]" if item == "" else f"bad range {item!r} in [{body}]"
            raise HostlistError(expr, _in(expr, token, f"{what}: expected a number or lo-hi, e.g. 7 or 001-128"))
        lo_s, hi_s = match.group(1), match.group(2)
        lo = _check_number(expr, token, lo_s)
        hi = lo if hi_s is None else _check_number(expr, token, hi_s)
        if lo > hi:
            raise HostlistError(expr, _in(expr, token, f"range start {lo} is greater than end {hi}"))
        if hi - lo + 1 > MAX_RANGE:
            raise HostlistError(
                expr, _in(expr, token, f"range {item} has {hi - lo + 1} hosts; Slurm allows at most {MAX_RANGE}")
            )
        width = len(lo_s)
        values.extend(_fmt(v, width) for v in range(lo, hi + 1))
        if len(values) > MAX_EXPANSION:
            raise HostlistError(expr, _in(expr, token, f"[{body}] has more than the {MAX_EXPANSION} names allowed"))
    if not last and len(values) > MAX_RANGE:
        raise HostlistError(
            expr,
            _in(
                expr,
                token,
                f"[{body}] has {len(values)} hosts; Slurm allows at most {MAX_RANGE} in a bracket before the last",
            ),
        )
    return values


def _expand_token(expr: str, token: str) -> list[str]:
    if "[" not in token:
        _check_text(expr, token, token)
        stem = token.rstrip(_DIGITS)
        if len(stem) < len(token):
            _check_number(expr, token, token[len(stem) :])
        return [token]
    # texts[0] [b0] texts[1] [b1] ... texts[k-1] [b(k-1)] texts[k]
    pieces = re.split(r"\[([^\]]*)\]", token)
    texts = pieces[0::2]
    bodies = pieces[1::2]
    if texts[-1]:
        raise HostlistError(
            expr,
            _in(
                expr,
                token,
                f"text {texts[-1]!r} after the last bracket; Slurm requires a name to end with its last range "
                "(list such names separately)",
            ),
        )
    for text in texts[:-1]:
        if text:
            _check_text(expr, token, text)
    last = len(bodies) - 1
    values = [_bracket_values(expr, token, body, i == last) for i, body in enumerate(bodies)]
    total = 1
    for vals in values:
        total *= len(vals)
    if total > MAX_EXPANSION:
        raise HostlistError(expr, _in(expr, token, f"expands to {total} names, more than the {MAX_EXPANSION} allowed"))
    if len(bodies) == 1:
        prefix = texts[0]
        return [prefix + v for v in values[0]]
    # Slurm's order: the last bracket varies fastest, the others nest from right to left
    # (the second-to-last is the outermost loop).
    k = len(bodies)
    order = [*range(k - 2, -1, -1), k - 1]
    names = []
    parts = [""] * (2 * k)
    for combo in product(*(values[i] for i in order)):
        for pos, i in enumerate(order):
            parts[2 * i] = texts[i]
            parts[2 * i + 1] = combo[pos]
        names.append("".join(parts))
    return names


def expand(expr: str) -> list[str]:
    """Expand one hostlist expression the way ``scontrol show hostnames`` does.

    Order and duplicates are kept (``"n[1-2],n1"`` -> ``["n1", "n2", "n1"]``); an empty or
    blank expression gives ``[]``. Raises :class:`HostlistError` for a malformed expression.
    """
    if not isinstance(expr, str):
        raise HostlistError(expr, f"expected a string, got {type(expr).__name__}")
    names: list[str] = []
    for token in _tokens(expr):
        names.extend(_expand_token(expr, token))
        if len(names) > MAX_EXPANSION:
            raise HostlistError(expr, f"expands to more than the {MAX_EXPANSION} names allowed")
    return names


def expand_many(exprs: Iterable[str]) -> list[str]:
    """Expand several expressions (or one string) and concatenate the names, duplicates kept."""
    if isinstance(exprs, str):
        return expand(exprs)
    if isinstance(exprs, (bytes, dict)) or not hasattr(exprs, "__iter__"):
        raise HostlistError(exprs, f"expected a string or a list of strings, got {type(exprs).__name__}")
    names: list[str] = []
    for expr in exprs:
        names.extend(expand(expr))
    return names


# ----------------------------------------------------------------------------------------------
# compress
# ----------------------------------------------------------------------------------------------


def _natural_key(name: str) -> tuple[object, ...]:
    parts = _DIGIT_RUN_RE.split(name)
    return tuple((int(p), len(p)) if i % 2 else p for i, p in enumerate(parts))


def _runs(values: Sequence[int]) -> list[list[int]]:
    """Sorted distinct values -> maximal runs of consecutive values as [lo, hi]."""
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][1] == v - 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return runs


def _range_len(width: int, lo: int, hi: int) -> int:
    n = len(_fmt(lo, width))
    if hi != lo:
        n += 1 + len(_fmt(hi, width))
    return n


def _plan_natural_run(b: int, c: int, tops: dict[int, tuple[int, int]]) -> list[tuple[int, int, int | None]]:
    """Cover the unpadded run [b, c] at least cost.

    ``tops`` maps p = 10**(w-1) to (w, a) when the padded width-w class has a run [a, p-1]: that
    run may continue into p, p+1, ... (``098-099`` + ``100-105`` = ``098-105``). Returns segments
    (lo, hi, attach_width or None for a stand-alone unpadded range).
    """
    points = sorted(p for p in tops if b <= p <= c)

    def standalone(lo: int, hi: int) -> tuple[int, int]:
        return (_range_len(1, lo, hi) + 1, 1)  # +1: the comma that separates it

    def attached(p: int, hi: int) -> tuple[int, int]:
        w, a = tops[p]
        return (_range_len(w, a, hi) - _range_len(w, a, p - 1), 0)

    def add(x: tuple[int, int], y: tuple[int, int]) -> tuple[int, int]:
        return (x[0] + y[0], x[1] + y[1])

    # best[i]: cheapest cover of [points[i], c] whose first segment attaches at points[i].
    best: list[tuple[tuple[int, int], list[tuple[int, int, int | None]]]] = [((0, 0), [])] * len(points)
    for i in range(len(points) - 1, -1, -1):
        p = points[i]
        w = tops[p][0]
        options = [(attached(p, c), [(p, c, w)])]
        for j in range(i + 1, len(points)):
            cost, plan = best[j]
            options.append((add(attached(p, points[j] - 1), cost), [(p, points[j] - 1, w), *plan]))
        best[i] = min(options, key=lambda o: o[0])
    options = [(standalone(b, c), [(b, c, None)])]
    for i, p in enumerate(points):
        cost, plan = best[i]
        if p > b:
            cost, plan = add(standalone(b, p - 1), cost), [(b, p - 1, None), *plan]
        options.append((cost, plan))
    return min(options, key=lambda o: o[0])[1]


def _compress_numbers(digit_strings: Iterable[str]) -> list[_Range]:
    """Distinct digit strings -> shortest list of (width, lo, hi) ranges, sorted by (lo, width)."""
    natural: list[int] = []
    padded: dict[int, list[int]] = {}
    for s in digit_strings:
        if len(s) > 1 and s[0] == "0":
            padded.setdefault(len(s), []).append(int(s))
        else:
            natural.append(int(s))
    padded_runs = {w: _runs(sorted(vals)) for w, vals in padded.items()}
    tops: dict[int, tuple[int, int]] = {}
    for w, runs in padded_runs.items():
        p = 10 ** (w - 1)
        if runs[-1][1] == p - 1:
            tops[p] = (w, runs[-1][0])
    ranges: list[_Range] = []
    extended: dict[int, int] = {}  # width -> new hi of its top run
    for b, c in _runs(sorted(natural)):
        for lo, hi, w in _plan_natural_run(b, c, tops) if tops else [(b, c, None)]:
            if w is None:
                ranges.append((1, lo, hi))
            else:
                extended[w] = hi
    for w, runs in padded_runs.items():
        if w in extended:
            runs[-1][1] = extended[w]
        ranges.extend((w, lo, hi) for lo, hi in runs)
    ranges.sort(key=lambda r: (r[1], r[0]))
    return ranges


def _ranges_text(ranges: Sequence[_Range]) -> str:
    return ",".join(_fmt(lo, w) if lo == hi else f"{_fmt(lo, w)}-{_fmt(hi, w)}" for w, lo, hi in ranges)


def _prefix_terms(prefix: str, ranges: Sequence[_Range]) -> list[str]:
    """The shortest terms for one prefix: one bracket, or separate names when that is shorter.

    Separate names can only win when ``len(prefix) * (count - 1) < 2``: ``n1,n5`` beats ``n[1,5]``
    and ``1,2`` beats ``[1-2]`` (Slurm prints both forms, depending on the input order). On a tie
    the bracket stays.
    """
    count = sum(hi - lo + 1 for _w, lo, hi in ranges)
    if count == 1:
        return [prefix + _fmt(ranges[0][1], ranges[0][0])]
    bracket = prefix + "[" + _ranges_text(ranges) + "]"
    if len(prefix) * (count - 1) < 2:
        names = [prefix + _fmt(v, w) for w, lo, hi in ranges for v in range(lo, hi + 1)]
        if sum(len(n) for n in names) + count - 1 < len(bracket):
            return names
    return [bracket]


def _check_name(name: object) -> str:
    if not isinstance(name, str):
        raise HostlistError(name, f"expected a string, got {type(name).__name__}", kind="host name")
    if not name:
        raise HostlistError(name, "empty", kind="host name")
    bad = _BAD_NAME_CHAR_RE.search(name)
    if bad is not None or not name.isprintable():
        char = bad.group(0) if bad is not None else next(c for c in name if not c.isprintable())
        hint = " (expand hostlist expressions before compressing)" if char in "[]," else ""
        raise HostlistError(name, f"{char!r} is not allowed in a host name{hint}", kind="host name")
    return name


def compress(names: Iterable[str]) -> str:
    """The canonical hostlist expression for a set of host names.

    Duplicates are dropped and order is ignored; an empty input gives ``""``. Raises
    :class:`HostlistError` for a name Slurm could not read back (empty, or containing a comma,
    bracket, whitespace or control character, or a number above :data:`MAX_NUMBER`).
    """
    if isinstance(names, (str, bytes, dict)) or not hasattr(names, "__iter__"):
        raise HostlistError(names, f"expected a list of host names, got {type(names).__name__}", kind="host names")
    unique = set()
    for name in names:
        unique.add(_check_name(name))

    by_prefix: dict[str, list[str]] = {}
    terms: list[tuple[tuple[object, ...], str]] = []  # (sort key, text)
    for name in unique:
        prefix = name.rstrip(_DIGITS)
        if len(prefix) == len(name):
            terms.append((_natural_key(name), name))
            continue
        digits = name[len(prefix) :]
        if int(digits) > MAX_NUMBER:
            raise HostlistError(name, f"number {digits} is too large for Slurm (max {MAX_NUMBER})", kind="host name")
        by_prefix.setdefault(prefix, []).append(digits)

    # Second bracket: prefixes equal but for their last number, with identical brackets.
    folds: dict[tuple[str, str, tuple[_Range, ...]], list[str]] = {}
    plain: list[tuple[str, list[_Range]]] = []
    for prefix, digit_strings in by_prefix.items():
        ranges = _compress_numbers(digit_strings)
        match = _LAST_DIGIT_RUN_RE.match(prefix)
        if match is None:
            plain.append((prefix, ranges))
        else:
            head, digits, tail = match.groups()
            folds.setdefault((head, tail, tuple(ranges)), []).append(digits)
    for (head, tail, ranges_t), outer in folds.items():
        ranges = list(ranges_t)
        if len(outer) > 1:
            outer_ranges = _compress_numbers(outer)
            folded = f"{head}[{_ranges_text(outer_ranges)}]{tail}[{_ranges_text(ranges)}]"
            unfolded = [t for d in outer for t in _prefix_terms(head + d + tail, ranges)]
            if len(folded) < sum(len(t) for t in unfolded) + len(unfolded) - 1:
                first = head + _fmt(outer_ranges[0][1], outer_ranges[0][0]) + tail + _fmt(ranges[0][1], ranges[0][0])
                terms.append((_natural_key(first), folded))
                continue
        plain.extend((head + d + tail, ranges) for d in outer)
    for prefix, ranges in plain:
        for text in _prefix_terms(prefix, ranges):
            first = text if "[" not in text else prefix + _fmt(ranges[0][1], ranges[0][0])
            terms.append((_natural_key(first), text))
    terms.sort(key=lambda t: t[0])
    return ",".join(text for _key, text in terms)
