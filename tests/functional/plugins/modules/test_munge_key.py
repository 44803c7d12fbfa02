# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

import base64
import os
from pathlib import Path

from ansible_harness import run_adhoc


def run_module(args: str, *extra: str) -> tuple[dict, str]:
    result, proc = run_adhoc("oci_gpu.cluster.munge_key", "-a", args, *extra)
    return result, proc.stdout + proc.stderr


def test_module_writes_exact_bytes_idempotently_and_never_shows_the_key(tmp_path: Path) -> None:
    raw = os.urandom(1024)
    key = base64.b64encode(raw).decode()
    path = tmp_path / "munge.key"
    args = f"key={key} path={path} mode=0400"

    result, out = run_module(args, "--check", "--diff", "-vvv")
    assert result["changed"] is True and not path.exists()
    assert key not in out and key[:40] not in out

    result, out = run_module(args, "--diff", "-vvv")
    assert result["changed"] is True and result["key_changed"] is True
    assert path.read_bytes() == raw
    assert oct(path.stat().st_mode & 0o777) == "0o400"
    assert key not in out and key[:40] not in out

    result = run_module(args)[0]
    assert result["changed"] is False

    path.chmod(0o644)
    result = run_module(args)[0]
    assert result["changed"] is True and result["key_changed"] is False
    assert oct(path.stat().st_mode & 0o777) == "0o400"


def test_module_fails_on_bad_key_without_quoting_it(tmp_path: Path) -> None:
    bad = "c2hvcnQ="  # "short": 5 bytes
    result, out = run_module(f"key={bad} path={tmp_path / 'k'}")
    assert result.get("failed") is True
    assert "decodes to 5 bytes" in result["msg"]
    assert bad not in out
    assert not (tmp_path / "k").exists()


def test_module_records_the_key_it_wrote_and_reports_what_was_there(tmp_path: Path) -> None:
    """A digest of the key the host held, and whether the role's record says it wrote that key: what the
    munge role's swap check reads from every host in check mode. Never the key."""
    import hashlib

    package_key, cluster_key = os.urandom(1024), os.urandom(1024)
    path, record = tmp_path / "munge.key", tmp_path / "state" / "munge-key.sha256"
    path.write_bytes(package_key)  # what munge's package made on install
    args = f"key={base64.b64encode(cluster_key).decode()} path={path} record_path={record}"

    result = run_module(args, "--check")[0]
    assert result["current_digest"] == hashlib.sha256(package_key).hexdigest()[:16]
    assert (result["key_changed"], result["recorded"], record.exists()) == (True, False, False)

    result = run_module(args)[0]
    assert path.read_bytes() == cluster_key
    assert record.read_text().strip() == hashlib.sha256(cluster_key).hexdigest()[:16]
    assert oct(record.stat().st_mode & 0o777) == "0o600"

    result = run_module(args, "--check")[0]
    assert (result["changed"], result["key_changed"], result["recorded"]) == (False, False, True)
    other = f"key={base64.b64encode(os.urandom(64)).decode()} path={path} record_path={record}"
    result = run_module(other, "--check")[0]
    assert (result["key_changed"], result["recorded"]) == (True, True)


def test_a_credential_is_decoded_in_the_same_call_and_never_shown(tmp_path: Path, monkeypatch) -> None:
    # A stand-in unmunge: decodes only the credential "MUNGE:good", as munged with the same key would.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "unmunge").write_text('#!/bin/sh\n[ "$(cat)" = "MUNGE:good" ]\n')
    (bin_dir / "unmunge").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    key = base64.b64encode(os.urandom(32)).decode()
    args = f"key={key} path={tmp_path / 'munge.key'} mode=0400"

    assert run_module(args, "--check")[0]["credential_decoded"] is None
    result, out = run_module(f"{args} credential=MUNGE:good", "--check", "-vvv")
    assert result["credential_decoded"] is True
    assert "MUNGE:good" not in out
    assert run_module(f"{args} credential=MUNGE:other", "--check")[0]["credential_decoded"] is False
