# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Per-shape NCCL/RCCL settings for ``/etc/nccl.conf`` and their sources.

NCCL reads ``/etc/nccl.conf`` (``KEY=VALUE`` lines, ``#`` comments) at init; an environment variable
of the same name wins over the file, so jobs can still override any value. The values are Oracle's
published recommendations per bare-metal GPU shape (SOURCE); a shape that is not listed gets no
settings, and :func:`nccl_settings` says so. ``NCCL_IB_HCA`` lists start with ``=`` (exact-match
names, so ``mlx5_1`` does not also pick ``mlx5_10``..``mlx5_17``). Where the source sets
``NCCL_SOCKET_IFNAME`` (to the pod network's ``eth0``), the host's own interface (its default-route
one) replaces it, and without one the key is left out: a name the host lacks stops NCCL's bootstrap.
The AMD MI355X shapes are left out: their settings name an RCCL network plugin and HCA names that
Oracle's sources disagree on (ionic_* against mlx5_*). Standard library only: this module may run
on managed nodes (Python 3.8+).
"""

from __future__ import annotations

import re
from typing import Any

SOURCE = "oracle-quickstart/oci-hpc-oke docs/recommended-nccl-rccl-parameters-by-shape.md"

_IB_COMMON = (
    ("NCCL_IB_GID_INDEX", "3"),
    ("NCCL_IB_TC", "41"),
    ("NCCL_IB_SL", "0"),
    ("NCCL_IB_TIMEOUT", "22"),
    ("NCCL_IB_SPLIT_DATA_ON_QPS", "0"),
)
_A100 = (
    *_IB_COMMON,
    ("NCCL_IB_QPS_PER_CONNECTION", "4"),
)
_HOPPER = (
    *_IB_COMMON,
    ("NCCL_CUMEM_ENABLE", "0"),
    ("NCCL_IGNORE_CPU_AFFINITY", "1"),
    ("NCCL_SOCKET_IFNAME", "eth0"),
)

# GB200 and GB200-v2 share one list (the source lists them apart, with the same values); the
# source gives their NCCL_IB_HCA without the exact-match '='.
_GB200 = (
    ("NCCL_MNNVL_ENABLE", "1"),
    ("NCCL_CUMEM_ENABLE", "1"),
    ("NCCL_NVLS_ENABLE", "1"),
    ("NCCL_NET_PLUGIN", "sys"),
    ("NCCL_SOCKET_IFNAME", "eth0"),
    ("NCCL_IB_HCA", "mlx5_0,mlx5_1,mlx5_3,mlx5_4"),
)


def _hca(family: str, indexes: str) -> tuple[str, str]:
    return ("NCCL_IB_HCA", "=" + ",".join(f"{family}_{i}" for i in indexes.split(",")))


# shape -> ((key, value), ...) in the order the source lists them where it matters (NCCL_IB_HCA's
# order is the order NCCL uses the NICs in).
NCCL_BY_SHAPE: dict[str, tuple[tuple[str, str], ...]] = {
    "BM.GPU4.8": (*_A100, _hca("mlx5", "0,2,6,8,10,12,14,16,1,3,7,9,11,13,15,17")),
    "BM.GPU.A100-v2.8": (*_A100, _hca("mlx5", "1,2,3,4,5,6,7,8,14,15,16,17,9,10,11,12")),
    "BM.GPU.B4.8": (*_A100, _hca("mlx5", "1,2,3,4,5,6,7,8,14,15,16,17,9,10,11,12")),
    "BM.GPU.H100.8": (*_HOPPER, _hca("mlx5", "0,1,3,4,5,6,7,8,9,10,12,13,14,15,16,17")),
    "BM.GPU.H200.8": (*_HOPPER, _hca("mlx5", "0,3,4,5,6,9,10,11")),
    "BM.GPU.B200.8": (*_HOPPER, _hca("mlx5", "0,3,4,5,6,9,10,11")),
    "BM.GPU.B300.8": (*_HOPPER, _hca("mlx5", "0,1,7,8,9,10,11,12,13,14,16,17,18,19,20,21")),
    "BM.GPU.GB200.4": _GB200,
    "BM.GPU.GB200-v2.4": _GB200,
    "BM.GPU.GB200-v3.4": (
        *_IB_COMMON,
        ("NCCL_IB_QPS_PER_CONNECTION", "1"),
        ("NCCL_CUMEM_ENABLE", "1"),
        ("NCCL_MNNVL_ENABLE", "1"),
        ("NCCL_NET_GDR_C2C", "1"),
        ("NCCL_NET_PLUGIN", "none"),
        _hca("mlx5", "0,1,2,3,5,6,7,8"),
    ),
    "BM.GPU.GB300.4": (
        *_IB_COMMON,
        ("NCCL_IB_QPS_PER_CONNECTION", "4"),
        ("NCCL_CUMEM_ENABLE", "1"),
        ("NCCL_MNNVL_ENABLE", "1"),
        ("NCCL_NVLS_ENABLE", "1"),
        ("NCCL_NET_GDR_C2C", "1"),
        ("NCCL_NET_PLUGIN", "none"),
        ("NCCL_BUFFSIZE", "16777216"),
        ("NCCL_DMABUF_ENABLE", "1"),
        ("NCCL_SOCKET_IFNAME", "eth0"),
        _hca("mlx5", "0,1,2,3,5,6,7,8"),
    ),
    "BM.GPU.MI300X.8": (
        *_IB_COMMON,
        ("NCCL_IB_QPS_PER_CONNECTION", "1"),
        ("NCCL_CUMEM_ENABLE", "0"),
        ("NCCL_PXN_DISABLE", "0"),
        ("NCCL_NET_PLUGIN", "none"),
        _hca("mlx5", "0,2,3,4,5,7,8,9"),
    ),
}

# What every listed shape also gets from the source.
COMMON = (("NCCL_DEBUG", "WARN"),)

_KEY = re.compile(r"^[A-Z][A-Z0-9_]*$")
_BAD_VALUE = re.compile(r"[\x00-\x1f\x7f#]")


def nccl_settings(
    shape: str | None,
    overrides: dict[str, Any] | None = None,
    socket_ifname: str | None = None,
) -> dict[str, Any]:
    """The ``/etc/nccl.conf`` settings of ``shape``: ``settings`` (a list of ``{key, value, source}``),
    ``problems`` (bad overrides, each naming the key and the rule) and ``note`` (why a shape gets
    nothing). ``overrides`` win over the table; a value of None or ``""`` removes a key.
    ``socket_ifname`` is the host's interface for ``NCCL_SOCKET_IFNAME`` where the source sets one."""
    table = NCCL_BY_SHAPE.get(shape or "")
    rows: dict[str, dict[str, str]] = {}
    note = ""
    if table is None:
        note = f"no published NCCL settings for shape {shape or '(none)'}: /etc/nccl.conf gets only overrides"
    else:
        for key, value in (*COMMON, *table):
            rows[key] = {"key": key, "value": value, "source": f"{SOURCE} ({shape})"}
        if "NCCL_SOCKET_IFNAME" in rows:
            if socket_ifname:
                rows["NCCL_SOCKET_IFNAME"] = {
                    "key": "NCCL_SOCKET_IFNAME",
                    "value": socket_ifname,
                    "source": "the host's default-route interface (the source names the pod network's eth0)",
                }
            else:
                del rows["NCCL_SOCKET_IFNAME"]
    problems = []
    for key, value in (overrides or {}).items():
        if not isinstance(key, str) or not _KEY.match(key):
            problems.append(f"key {key!r}: an NCCL setting name is upper-case letters, digits and '_'")
            continue
        if value is None or value == "":
            rows.pop(key, None)
            continue
        if isinstance(value, bool):
            value = int(value)
        text = str(value)
        if _BAD_VALUE.search(text) or text != text.strip():
            problems.append(f"key {key}: the value may not hold '#', a line break, a control character or edge spaces")
            continue
        rows[key] = {"key": key, "value": text, "source": "override"}
    return {"settings": list(rows.values()), "problems": problems, "note": note}


def render_nccl_conf(settings: list[dict[str, str]], header: str) -> str:
    """``/etc/nccl.conf`` text: the header as comments, then one ``KEY=VALUE`` line per setting with
    its source as the comment above it."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for row in settings:
        lines.append(f"# {row['source']}")
        lines.append(f"{row['key']}={row['value']}")
    return "\n".join(lines) + "\n"
