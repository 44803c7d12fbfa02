# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The munge key's one decoder: the munge_key module writes what it returns, and the munge role's
preflight (filter oci_gpu.cluster.munge_key_problem) refuses what it refuses, with the same words.

Messages never quote the key.
"""

from __future__ import annotations

import base64
import binascii

MIN_KEY_BYTES = 32
MAX_KEY_BYTES = 1024


def decode_key(text: str, user: str = "munge") -> bytes:
    """Return the key bytes (whitespace ignored) or raise ValueError saying why (``user``: who needs it)."""
    compact = "".join(text.split())
    try:
        raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("key is not valid base64") from None
    if not MIN_KEY_BYTES <= len(raw) <= MAX_KEY_BYTES:
        raise ValueError(f"key decodes to {len(raw)} bytes; {user} needs {MIN_KEY_BYTES} to {MAX_KEY_BYTES}")
    return raw


def key_problem(text: object, user: str = "munge") -> str:
    """Why ``text`` is not a usable key for ``user`` (munge, a JWT key), or "" when it is."""
    if not isinstance(text, str):
        return f"key is a {type(text).__name__}, not base64 text"
    try:
        decode_key(text, user)
    except ValueError as exc:
        return str(exc)
    return ""


def swap_problem(states: dict, source: str, rotate: bool) -> str:
    """Why writing the key would replace the cluster's own munge key, or "" when it would not.

    ``states``: per host in the run, what the munge_key module read in check mode (``key_changed``,
    ``current_digest``, ``recorded``). A host that would get another key holds the cluster's key when
    this role recorded it there, or when other hosts share it (munge's package makes each fresh host
    a key of its own). Replacing that key is a rotation: only with ``rotate``."""
    changing = {
        host: state
        for host, state in states.items()
        if isinstance(state, dict) and state.get("key_changed") and state.get("current_digest")
    }
    held: dict[str, int] = {}
    for state in changing.values():
        held[state["current_digest"]] = held.get(state["current_digest"], 0) + 1
    cluster = sorted(h for h, s in changing.items() if s.get("recorded") or held[s["current_digest"]] > 1)
    if not cluster or rotate:
        return ""
    shown = ", ".join(cluster[:20]) + (f" (+{len(cluster) - 20} more)" if len(cluster) > 20 else "")
    return (
        f"this run would replace the munge key on {len(cluster)} host(s) that hold the cluster's key ({shown}: "
        f"written there by this role, or shared by several hosts) with another one (munge_key, or when it is "
        f"empty the key on {source}). Nothing was changed: a key swap makes the hosts stop trusting each "
        f"other and running jobs end NODE_FAIL. If {source} was rebuilt or reinstalled, give the cluster's "
        "key in munge_key or put it back on that host; to change the key on purpose, set munge_key_rotate: "
        "true and run over every host at once (README, 'Rotating the munge key')."
    )
