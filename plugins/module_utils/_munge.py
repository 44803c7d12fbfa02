# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The munge key's one decoder: the munge_key module writes what it returns, and the munge role's
preflight (filter oci_gpu.cluster.munge_key_problem) refuses what it refuses, with the same words.

Messages never quote the key.
"""

from __future__ import annotations

import base64
import binascii

MIN_KEY_BYTES = 32
MAX_KEY_BYTES = 1024


def decode_key(text: str) -> bytes:
    """Return the key bytes (whitespace ignored) or raise ValueError saying why."""
    compact = "".join(text.split())
    try:
        raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("key is not valid base64") from None
    if not MIN_KEY_BYTES <= len(raw) <= MAX_KEY_BYTES:
        raise ValueError(f"key decodes to {len(raw)} bytes; munge needs {MIN_KEY_BYTES} to {MAX_KEY_BYTES}")
    return raw


def key_problem(text: object) -> str:
    """Why ``text`` is not a usable key, or "" when it is."""
    if not isinstance(text, str):
        return f"key is a {type(text).__name__}, not base64 text"
    try:
        decode_key(text)
    except ValueError as exc:
        return str(exc)
    return ""
