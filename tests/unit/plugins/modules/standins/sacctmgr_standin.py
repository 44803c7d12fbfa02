# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-only sacctmgr stand-in for QOS: a JSON state file (FAKE_SACCTMGR_STATE) and a log of every
call (FAKE_SACCTMGR_LOG, one JSON argv per line). It prints ``show qos`` rows as Slurm 24.11 does
(``--noheader --parsable2``: MaxWall as ``D-HH:MM:SS``, TRES as ``name=count`` with memory as
``mem=NG`` for whole GiB) and applies ``add``/``modify``/``delete qos`` as sacctmgr would, exiting
1 with "Nothing modified" when a modify changes nothing, as the real one does."""

from __future__ import annotations

import json
import os
import sys

COLUMNS = [
    "Name",
    "Description",
    "Priority",
    "Preempt",
    "PreemptMode",
    "Flags",
    "GrpTRES",
    "MaxTRES",
    "MaxTRESPU",
    "MaxWall",
    "MaxJobsPU",
    "MaxSubmitPU",
]
SET_KEYS = {
    "description": "Description",
    "priority": "Priority",
    "preempt": "Preempt",
    "preemptmode": "PreemptMode",
    "flags": "Flags",
    "grptres": "GrpTRES",
    "maxtresperjob": "MaxTRES",
    "maxtresperuser": "MaxTRESPU",
    "maxwall": "MaxWall",
    "maxjobsperuser": "MaxJobsPU",
    "maxsubmitjobsperuser": "MaxSubmitPU",
}
NEW = {
    "Description": "",
    "Priority": "0",
    "Preempt": "",
    "PreemptMode": "cluster",
    "Flags": "",
    "GrpTRES": "",
    "MaxTRES": "",
    "MaxTRESPU": "",
    "MaxWall": "",
    "MaxJobsPU": "",
    "MaxSubmitPU": "",
}


def _wall(text: str) -> str:
    if text == "-1":
        return ""
    days, _sep, rest = text.rpartition("-")
    h, m, s = [*rest.split(":"), "0", "0"][:3]
    seconds = int(days or 0) * 86400 + int(h) * 3600 + int(m) * 60 + int(s)
    d, r = divmod(seconds, 86400)
    return (f"{d}-" if d else "") + f"{r // 3600:02d}:{r % 3600 // 60:02d}:{r % 60:02d}"


def _tres(old: str, change: str) -> str:
    have = dict(p.split("=", 1) for p in old.split(",") if p)
    for part in change.split(","):
        name, value = part.split("=", 1)
        if value == "-1":
            have.pop(name, None)
        elif name == "mem" and int(value) % 1024 == 0:
            have[name] = f"{int(value) // 1024}G"
        else:
            have[name] = value
    return ",".join(f"{k}={have[k]}" for k in sorted(have))


def apply(row: dict, key: str, value: str) -> None:
    col = SET_KEYS[key.lower()]
    if col in ("GrpTRES", "MaxTRES", "MaxTRESPU"):
        row[col] = _tres(row[col], value)
    elif col == "MaxWall":
        row[col] = _wall(value)
    elif col == "Flags":
        row[col] = "" if value == "-1" else value
    elif value == "-1":
        row[col] = ""
    else:
        row[col] = value


def main(argv: list[str]) -> int:
    state_file, log_file = os.environ["FAKE_SACCTMGR_STATE"], os.environ["FAKE_SACCTMGR_LOG"]
    with open(log_file, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(argv) + "\n")
    qos = {}
    if os.path.exists(state_file):
        with open(state_file, encoding="utf-8") as fh:
            qos = json.load(fh)
    words = [a for a in argv if a not in ("--immediate", "-i", "--noheader", "-n", "--parsable2", "-P")]
    if words[:2] == ["show", "qos"]:
        fields = words[2].split("=", 1)[1].split(",")
        assert fields == COLUMNS, fields
        for name in sorted(qos):
            print("|".join([name] + [qos[name][c] for c in COLUMNS[1:]]))
        return 0
    if words[:2] == ["add", "qos"]:
        name = words[2]
        if name in qos:
            print(" Nothing new added.")
            return 1
        qos[name] = dict(NEW, Description=name)
        for kv in words[3:]:
            apply(qos[name], *kv.split("=", 1))
    elif words[:2] == ["modify", "qos"]:
        name = words[3].split("=", 1)[1]
        before = dict(qos.get(name, {}))
        for kv in words[words.index("set") + 1 :]:
            apply(qos[name], *kv.split("=", 1))
        if qos.get(name) == before:
            print(" Nothing modified")
            return 1
    elif words[:2] == ["delete", "qos"]:
        name = words[3].split("=", 1)[1]
        if qos.pop(name, None) is None:
            print(" Nothing deleted")
            return 1
    else:
        print(f"fake sacctmgr: not modelled: {argv}", file=sys.stderr)
        return 2
    with open(state_file, "w", encoding="utf-8") as fh:
        json.dump(qos, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
