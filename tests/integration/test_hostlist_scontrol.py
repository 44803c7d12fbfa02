# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Cross-check plugins/module_utils/slurm/_hostlist.py against the real Slurm client.

What running scontrol 22.05 this way takes (measured):

* ``show hostnames`` / ``show hostlist`` / ``show hostlistsorted`` need no controller, only a
  slurm.conf it can parse: ``ClusterName`` and ``SlurmctldHost`` are the two keys it insists on
  (without a file it tries DNS SRV records and dies). One call takes about 2 ms.
* ``show hostnames`` exits 0 even for an invalid expression: it prints nothing on stdout and
  ``Invalid hostlist: ...`` on stderr. ``show hostlist /abs/path`` reads the names from a file.
* With commands on stdin, readline echoes each one as ``scontrol: <command>``, which splits the
  output: 2,000 short commands take 0.2 s. Readline redraws a line wider than the "terminal" with
  cursor escapes (TERM=dumb and a huge COLUMNS avoid that) and takes quadratic time over a long
  line, so long commands run as separate processes instead.

Debian's ``slurm-client`` is installed by ``make test`` (tests/setup/apt-packages.txt). Without
it this test fails, unless OCI_GPU_ALLOW_NO_SCONTROL=1 says to skip it.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError, compress, expand

SEED = 20220508
EXPAND_CASES = 1500
COMPRESS_CASES = 1200
PROMPT = "scontrol: "
LONG_COMMAND = 2000


class Scontrol:
    def __init__(self, path: str, env: dict[str, str]) -> None:
        self.path = path
        self.env = env

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.path, *args], env=self.env, capture_output=True, text=True, timeout=60, check=False)

    def lines(self, *args: str) -> list[str]:
        proc = self.run(*args)
        assert proc.returncode == 0, f"scontrol {' '.join(args)[:200]} failed: {proc.stderr[-2000:]}"
        return proc.stdout.splitlines()

    def many(self, commands: Sequence[str]) -> list[list[str]]:
        """Each command's stdout lines. Short commands share one interactive scontrol; readline
        takes quadratic time over a long line, so long ones run one process each, in parallel."""
        short = [i for i, cmd in enumerate(commands) if len(cmd) <= LONG_COMMAND]
        long = [i for i, cmd in enumerate(commands) if len(cmd) > LONG_COMMAND]
        results: list[list[str]] = [[] for _i in commands]
        for i, out in zip(short, self.batch([commands[i] for i in short]), strict=True):
            results[i] = out
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for i, out in zip(long, pool.map(lambda i: self.lines(*commands[i].split(" ")), long), strict=True):
                results[i] = out
        return results

    def batch(self, commands: Sequence[str]) -> list[list[str]]:
        """Run commands through one interactive scontrol; return each command's stdout lines.

        No command may contain whitespace other than the single spaces between its words (scontrol
        splits the line into words, and readline would treat a tab as completion).
        """
        for cmd in commands:
            assert "\n" not in cmd and "\t" not in cmd, cmd
        proc = subprocess.run(
            [self.path],
            input="".join(cmd + "\n" for cmd in commands),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, f"scontrol batch failed ({proc.returncode}): {proc.stderr[-2000:]}"
        results: list[list[str]] = []
        pending = iter(commands)
        expected = PROMPT + next(pending, "")
        for line in proc.stdout.split("\n"):
            if line == expected:
                results.append([])
                expected = PROMPT + next(pending, "\0")
            elif line in ("", PROMPT.rstrip(), PROMPT):
                continue
            elif not results:
                raise AssertionError(f"scontrol printed {line!r} before echoing the first command")
            else:
                results[-1].append(line)
        assert len(results) == len(commands), (
            f"scontrol echoed {len(results)} of {len(commands)} commands; is it built without readline?"
        )
        return results


@pytest.fixture(scope="module")
def scontrol(tmp_path_factory: pytest.TempPathFactory) -> Scontrol:
    path = shutil.which("scontrol")
    if path is None:
        if os.environ.get("OCI_GPU_ALLOW_NO_SCONTROL") == "1":
            pytest.skip("scontrol is not installed (Debian package slurm-client); OCI_GPU_ALLOW_NO_SCONTROL=1")
        pytest.fail(
            "scontrol not found: Debian package slurm-client is not installed. `make test` installs it "
            "(tests/setup/apt-packages.txt); or run `apt-get install slurm-client`. "
            "Set OCI_GPU_ALLOW_NO_SCONTROL=1 to skip this cross-check.",
            pytrace=False,
        )
    conf = Path(tmp_path_factory.mktemp("slurm")) / "slurm.conf"
    conf.write_text("ClusterName=hostlist-check\nSlurmctldHost=localhost\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    env["SLURM_CONF"] = str(conf)
    # readline echoes each command; on a "terminal" narrower than the line it redraws it with
    # cursor escapes. A dumb, very wide terminal keeps every echo on one clean line.
    env.update(TERM="dumb", COLUMNS="100000000", LINES="24", INPUTRC="/dev/null")
    return Scontrol(path, env)


def _mismatches(failures: list[str], total: int) -> str:
    shown = "\n".join(failures[:15])
    return f"{len(failures)} of {total} cases differ from scontrol (first {min(15, len(failures))}):\n{shown}"


# --------------------------------------------------------------------------------------------
# generators
# --------------------------------------------------------------------------------------------

_BOUNDARIES = (0, 1, 7, 9, 10, 11, 98, 99, 100, 101, 999, 1000, 9999, 10000)


def _number(rng: random.Random) -> int:
    if rng.random() < 0.6:
        return max(0, rng.choice(_BOUNDARIES) + rng.randint(-3, 3))
    return rng.randint(0, 20000)


def _digits(rng: random.Random, value: int) -> str:
    """The value written unpadded, or zero-padded to a random larger width."""
    if rng.random() < 0.5:
        return str(value)
    return str(value).zfill(len(str(value)) + rng.randint(0, 3))


def _text(rng: random.Random, digits: bool = True) -> str:
    alphabet = "abgnpux-_." + ("0123456789" if digits else "")
    return "".join(rng.choice(alphabet) for _i in range(rng.randint(1, 6)))


def _item(rng: random.Random, span: int) -> str:
    lo = _number(rng)
    if rng.random() < 0.35:
        return _digits(rng, lo)
    hi = lo + rng.randint(0, span)
    hi_s = _digits(rng, hi) if rng.random() < 0.3 else str(hi)
    return f"{_digits(rng, lo)}-{hi_s}"


def _bracket(rng: random.Random, span: int) -> str:
    return "[" + ",".join(_item(rng, span) for _i in range(rng.choice((1, 1, 2, 3, 4)))) + "]"


def _token(rng: random.Random) -> str:
    brackets = rng.choice((0, 1, 1, 1, 2, 2, 3, 4))
    if brackets == 0:
        return _text(rng) + (str(_number(rng)) if rng.random() < 0.7 else "")
    span = {1: 150, 2: 12, 3: 4, 4: 2}[brackets]
    token = (_text(rng) if rng.random() < 0.9 else "") + _bracket(rng, span)
    for _i in range(brackets - 1):
        token += (_text(rng) if rng.random() < 0.85 else "") + _bracket(rng, span)
    return token


def _expression(rng: random.Random) -> str:
    while True:
        expr = ",".join(_token(rng) for _i in range(rng.choice((1, 1, 2, 3))))
        if len(expand(expr)) <= 3000:
            return expr


def _names(rng: random.Random) -> list[str]:
    """A host list with mixed prefixes, padding, racks, names without numbers and duplicates."""
    prefixes = rng.sample(
        ["gpu", "n", "node-", "cn", "a.b", "x_", "gpu-", "bm-gpu-a100-", "r1-g", "r01-g", "r2-g"], rng.randint(1, 4)
    )
    size = rng.choice((1, 2, 3, 5, 10, 30, 100, 300, 1000, 3000))
    names: list[str] = []
    if rng.random() < 0.25:  # a rack grid, maybe with holes
        racks, slots, width = rng.randint(1, 12), rng.randint(1, 18), rng.choice((1, 2, 3))
        rack_pad = rng.choice((1, 2))
        names += [
            f"rack{str(r).zfill(rack_pad)}-gpu{str(s).zfill(width)}"
            for r in range(1, racks + 1)
            for s in range(1, slots + 1)
            if rng.random() < 0.95
        ]
    blocks = [(rng.choice(prefixes), _number(rng), rng.randint(1, 400)) for _i in range(rng.randint(1, 4))]
    while len(names) < size:
        roll = rng.random()
        if roll < 0.03:
            names.append(rng.choice(prefixes) + _text(rng, digits=False))  # no trailing number
        elif roll < 0.05:
            names.append(f"{rng.choice(prefixes)}{_number(rng)}-ib")
        elif roll < 0.25:
            names.append(rng.choice(prefixes) + _digits(rng, _number(rng)))
        else:
            prefix, start, length = rng.choice(blocks)
            value = start + rng.randrange(length)
            names.append(prefix + (str(value) if rng.random() < 0.7 else _digits(rng, value)))
    if rng.random() < 0.3:
        names += rng.choices(names, k=rng.randint(1, 5))  # duplicates
    rng.shuffle(names)
    return names


# --------------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------------


def test_scontrol_needs_no_controller(scontrol: Scontrol) -> None:
    proc = scontrol.run("show", "hostnames", "gpu[001-003]")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["gpu001", "gpu002", "gpu003"]


def test_expand_matches_scontrol_hostnames(scontrol: Scontrol) -> None:
    rng = random.Random(SEED)
    exprs = [_expression(rng) for _i in range(EXPAND_CASES)]
    exprs += ["rack[1-2]-gpu[01-04]", "a[1-2]b[3-4]c[5-6]", "a[1-2]b[3]c[4-5]d[6]", "n[1-2][3-4]", "[1-3]"]
    theirs = scontrol.many([f"show hostnames {e}" for e in exprs])
    failures = []
    for expr, slurm in zip(exprs, theirs, strict=True):
        if not slurm:
            failures.append(f"{expr}: scontrol refused it (ours: {len(expand(expr))} names)")
        elif expand(expr) != slurm:
            ours = expand(expr)
            first = next(
                (i for i, (a, b) in enumerate(zip(ours, slurm, strict=False)) if a != b), min(len(ours), len(slurm))
            )
            failures.append(f"{expr}: ours {len(ours)} names, scontrol {len(slurm)}, first difference at {first}")
    assert not failures, _mismatches(failures, len(exprs))


def test_compress_no_longer_than_scontrol_hostlist(scontrol: Scontrol, tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    cases = [_names(rng) for _i in range(COMPRESS_CASES)]
    ours = [compress(names) for names in cases]
    commands = []
    for i, (names, compressed) in enumerate(zip(cases, ours, strict=True)):
        # `show hostlist /path` reads the names from a file, which keeps the command line short.
        listing = tmp_path / f"names-{i}"
        listing.write_text("\n".join(names) + "\n")
        commands += [f"show hostlist {listing}", f"show hostlistsorted {listing}", f"show hostnames {compressed}"]
    results = scontrol.many(commands)
    failures = []
    for i, (names, compressed) in enumerate(zip(cases, ours, strict=True)):
        hostlist, hostlist_sorted, hostnames = results[3 * i : 3 * i + 3]
        slurm_best = min((h[0] for h in (hostlist, hostlist_sorted)), key=len)
        label = f"{len(set(names))} names -> {compressed[:120]!r}"
        if len(compressed) > len(slurm_best):
            failures.append(f"{label}: {len(compressed)} chars, scontrol {len(slurm_best)}: {slurm_best[:120]!r}")
        if hostnames != expand(compressed):
            failures.append(f"{label}: scontrol expands it differently from our expand()")
        if len(hostnames) != len(set(hostnames)) or set(hostnames) != set(names):
            failures.append(f"{label}: scontrol reads back a different set ({len(hostnames)} names)")
    assert not failures, _mismatches(failures, len(cases))


def test_compress_matches_slurm_on_examples(scontrol: Scontrol) -> None:
    """Hand-picked inputs where Slurm's widths and order are subtle: never longer, same set."""
    cases = [
        "n9,n10,n09,n010,n1,n01",
        "n099,n100,n098,n10,n09",
        "n08,n09,n10,n11",
        "n008,n009,n10",
        "n98,n99,n100,n098,n099",
        "rack1-gpu01,rack1-gpu02,rack2-gpu01,rack2-gpu02",
        "gpu1-ib,gpu2-ib,gpu3",
        "1,2,3,007",
    ]
    results = scontrol.batch([f"show hostlistsorted {c}" for c in cases])
    for case, (slurm,) in zip(cases, results, strict=True):
        ours = compress(case.split(","))
        assert len(ours) <= len(slurm), (case, ours, slurm)
        assert sorted(expand(ours)) == sorted(set(case.split(","))), (case, ours)


@pytest.mark.parametrize(
    "expr",
    [
        "n[3-1]",
        "n[1-2]-ib",
        "n[1-2]x",
        "n[]",
        "n[a-b]",
        "n[1,,2]",
        "n[1,]",
        "n[-1]",
        "n[1--3]",
        "n[1-2-3]",
        "n[1-2]]",
        "a[1-2]b]c[3]",
        "n[0-65536]",
        "a[0-40000,0-40000]b[1]",
        "n[1-2]x[]",
    ],
)
def test_both_refuse_malformed(scontrol: Scontrol, expr: str) -> None:
    proc = scontrol.run("show", "hostnames", expr)
    assert proc.stdout == "", f"scontrol accepted {expr!r}: {proc.stdout!r}"
    assert "Invalid hostlist" in proc.stderr
    with pytest.raises(HostlistError) as err:
        expand(expr)
    assert f'"{expr}"' in str(err.value)


@pytest.mark.parametrize(
    ("expr", "slurm_reads"),
    [
        ("n[1-]", ["n1"]),
        ("n[ 1-2]", ["n01", "n02"]),
        ("n[+1-2]", ["n01", "n02"]),
        ("n[1", ["n]"]),
        ("a]b[1-2]", ["a]b1", "a]b2"]),
        ("n[[1-2]", ["n[1", "n[2"]),
        ("x[99999999999999999999]", ["x18446744073709551615"]),
    ],
)
def test_slurm_leniency_we_refuse(scontrol: Scontrol, expr: str, slurm_reads: list[str]) -> None:
    """Slurm reads these oddly instead of refusing them; we refuse (documented in _hostlist.py)."""
    assert scontrol.run("show", "hostnames", expr).stdout.split("\n")[:-1] == slurm_reads
    with pytest.raises(HostlistError):
        expand(expr)


def test_separators_match_scontrol(scontrol: Scontrol) -> None:
    expr = " a b\tc,,d[1-2] ,e "
    assert expand(expr) == scontrol.run("show", "hostnames", expr).stdout.split()
    assert expand(expr) == ["a", "b", "c", "d1", "d2", "e"]
