# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The canary scanner of the secrets test (tests/lab/canary.py): every form of a canary is found,
files modified before the run and skipped paths are not read, and the counts are of what was read."""

from __future__ import annotations

import base64
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "lab"))

import canary  # noqa: E402


def test_every_form_of_each_canary_is_a_hit(tmp_path: Path) -> None:
    key, pw = canary.munge_key_canary(), canary.password_canary()
    assert "#" in pw.value and " " in pw.value and "\\" in pw.value
    forms = {
        "raw.txt": f"password: {pw.value}\n".encode(),
        "b64.txt": b"x" + base64.b64encode(pw.value.encode()) + b"y",
        "hex.txt": pw.value.encode().hex().encode(),
        "cut.txt": ("AccountingPass=" + pw.value.split("#")[0]).encode(),
        "conf.txt": b"StoragePass=" + pw.forms()["form1"],
        "key.bin": base64.b64decode(key.value),
        "keytext.txt": key.value.encode(),
        "clean.txt": b"nothing to see",
    }
    for name, data in forms.items():
        (tmp_path / name).write_bytes(data)
    res = canary.scan_here([str(tmp_path)], canary.patterns([key, pw]))
    assert res.files == len(forms) and res.bytes == sum(len(d) for d in forms.values())
    hit_files = {Path(h.split(": ")[0]).name for h in res.hits}
    assert hit_files == set(forms) - {"clean.txt"}
    assert f"{tmp_path / 'key.bin'}: munge_key/form0" in res.hits


def test_old_files_and_skipped_paths_are_not_read(tmp_path: Path) -> None:
    pw = canary.password_canary()
    old, skipped = tmp_path / "old.log", tmp_path / "src" / "vars.yml"
    skipped.parent.mkdir()
    for path in (old, skipped):
        path.write_text(pw.value)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    res = canary.scan_here([str(tmp_path)], canary.patterns([pw]), since=time.time() - 60, skip=(str(skipped.parent),))
    assert res.files == 0 and res.hits == []
    res = canary.scan_here([str(tmp_path), str(tmp_path / "missing")], canary.patterns([pw]))
    assert res.files == 2 and len(res.hits) >= 2


def test_the_sampler_sees_a_canary_on_a_command_line() -> None:
    import subprocess

    pw = canary.password_canary()
    with canary.CmdlineSampler(canary.patterns([pw]), interval=0.05) as sampler:
        token = pw.value.split("#")[0].strip()
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)", token])
        proc.wait()
    assert sampler.samples > 3 and any("db_password/form0" in h for h in sampler.hits)
