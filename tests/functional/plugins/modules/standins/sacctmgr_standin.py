# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test-only sacctmgr stand-in for QOS and accounts (and scancel, called with --as-scancel): a JSON
state file (FAKE_SACCTMGR_STATE) and a log of every
call (FAKE_SACCTMGR_LOG, one JSON argv per line). It prints ``show qos`` rows as Slurm 24.11 does
(``--noheader --parsable2``: MaxWall as ``D-HH:MM:SS``, TRES as ``name=count`` with memory as
``mem=NG`` for whole GiB) and applies ``add``/``modify``/``delete qos`` as sacctmgr would, exiting
1 with "Nothing modified" when a modify changes nothing. Messages, lower-cased descriptions and
the job lines of a refused removal are as Slurm 24.11's sacctmgr printed them in the lab. Accounts keep their
association fields; ``jobs`` in the state (account: [job ids]) makes a delete fail as Slurm's does
while jobs are active, and scancel --account=NAME ends them."""

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


ASSOC_COLUMNS = ["ParentName", "Share", "DefaultQOS", "QOS", "GrpTRES", "MaxTRES", "MaxWall", "MaxJobs"]
ACCOUNT_SET = {
    "description": "Descr",
    "organization": "Org",
    "parent": "ParentName",
    "fairshare": "Share",
    "defaultqos": "DefaultQOS",
    "qos": "QOS",
    "grptres": "GrpTRES",
    "maxtres": "MaxTRES",
    "maxwall": "MaxWall",
    "maxjobs": "MaxJobs",
}


def set_account(acct: dict, key: str, value: str) -> None:
    col = ACCOUNT_SET[key.lower()]
    if col in ("GrpTRES", "MaxTRES"):
        acct[col] = _tres(acct[col], value)
    elif col == "MaxWall":
        acct[col] = _wall(value)
    elif value == "-1":
        acct[col] = ""
    else:
        acct[col] = value


def accounts(state: dict, words: list[str]) -> int:
    accts, jobs = state.setdefault("accounts", {}), state.setdefault("jobs", {})
    if words[:2] == ["show", "account"]:
        name = words[3].split("=", 1)[1]
        if name in accts:
            print(f"{name}|{accts[name]['Descr']}|{accts[name]['Org']}")
        return 0
    if words[:2] == ["show", "association"]:
        name = words[3].split("=", 1)[1]
        assert words[4] == "format=Cluster,Account,User," + ",".join(ASSOC_COLUMNS), words[4]
        if name in accts:
            print("|".join(["lab", name, ""] + [accts[name][c] for c in ASSOC_COLUMNS]))
            for user in accts[name].get("users", []):
                print("|".join(["lab", name, user, name, "1", "", accts[name]["QOS"], "", "", "", ""]))
        return 0
    if words[:2] == ["add", "account"]:
        name = words[2]
        new = {
            "Descr": name,
            "Org": name,
            "ParentName": "root",
            "Share": "1",
            "DefaultQOS": "",
            "QOS": "normal",
            "GrpTRES": "",
            "MaxTRES": "",
            "MaxWall": "",
            "MaxJobs": "",
        }
        for kv in words[3:]:
            set_account(new, *kv.split("=", 1))
        if new["ParentName"] != "root" and new["ParentName"] not in accts:
            print(f" error: No parent account '{new['ParentName']}' on cluster 'lab'")
            return 1
        new["Descr"], new["Org"] = new["Descr"].lower(), new["Org"].lower()
        accts[name] = new
        return 0
    name = words[3].split("=", 1)[1]
    if words[:2] == ["modify", "account"]:
        before = dict(accts[name])
        for kv in words[words.index("set") + 1 :]:
            key, value = kv.split("=", 1)
            if key == "Parent" and value != "root" and value not in accts:
                # 24.11: a missing parent is ignored, with exit 0
                print(" Modified account associations...")
                continue
            set_account(accts[name], key, value)
        if accts[name] == before:
            print(" Nothing modified")
            return 1
        return 0
    if words[:2] == ["delete", "account"]:
        if jobs.get(name):
            print(" Error with request: Job(s) active, cancel job(s) before remove")
            for job in jobs[name]:
                print(f"  JobID = {job:<10} C = lab        A = {name:<10} U = alice    ")
            return 1
        accts.pop(name)
        return 0
    return 2


USER_ASSOC = ["QOS", "DefaultQOS", "GrpTRES", "MaxTRES", "MaxWall", "MaxJobs"]


def users(state: dict, words: list[str]) -> int:
    """Users: {name: {DefaultAccount, AdminLevel, assocs: {account: {USER_ASSOC...}}}}; jobs by "user/account"."""
    table, jobs = state.setdefault("users", {}), state.setdefault("jobs", {})
    where = dict(w.split("=", 1) for w in words[3 : words.index("set") if "set" in words else len(words)] if "=" in w)
    if words[:2] == ["show", "user"]:
        user = table.get(where["name"])
        if user:
            print(f"{where['name']}|{user['DefaultAccount']}|{user['AdminLevel']}")
        return 0
    if words[:2] == ["show", "association"]:
        assert words[-1] == "format=Cluster,Account,User," + ",".join(USER_ASSOC), words[-1]
        for acct, row in sorted(table.get(where["user"], {}).get("assocs", {}).items()):
            print("|".join(["lab", acct, where["user"]] + [row[c] for c in USER_ASSOC]))
        return 0
    if words[:2] == ["add", "user"]:
        name, sets = words[2], dict(w.split("=", 1) for w in words[3:])
        missing = [a for a in sets["Account"].split(",") if a not in state.get("accounts", {})]
        if missing:
            print(f"No account {missing[0]} on cluster lab, skipping.\nNothing added.")
            print(
                "Make sure the accounts requested here have been added to the system/cluster. (sacctmgr add account...)"
            )
            return 1
        user = table.setdefault(
            name, {"DefaultAccount": sets.get("DefaultAccount", ""), "AdminLevel": "None", "assocs": {}}
        )
        user["AdminLevel"] = {"operator": "Operator", "administrator": "Administrator"}.get(
            sets.get("AdminLevel", "").lower(), user["AdminLevel"]
        )
        for acct in sets["Account"].split(","):
            row = {"QOS": "normal", "DefaultQOS": "", "GrpTRES": "", "MaxTRES": "", "MaxWall": "", "MaxJobs": ""}
            for key in ("QOS", "DefaultQOS", "GrpTRES", "MaxTRES", "MaxWall", "MaxJobs"):
                if key in sets:
                    set_account(row, key, sets[key])
            user["assocs"][acct] = row
        return 0
    name = where["name"]
    if words[:2] == ["modify", "user"]:
        user = table[name]
        before = json.dumps(user, sort_keys=True)
        for kv in words[words.index("set") + 1 :]:
            key, value = kv.split("=", 1)
            if key in ("DefaultAccount", "AdminLevel"):
                user[key] = (
                    {"operator": "Operator", "administrator": "Administrator", "none": "None"}.get(value.lower(), value)
                    if key == "AdminLevel"
                    else value
                )
            else:
                for acct, row in user["assocs"].items():
                    if where.get("account", acct) == acct:
                        set_account(row, key, value)
        if json.dumps(user, sort_keys=True) == before:
            print(" Nothing modified")
            return 1
        return 0
    if words[:2] == ["delete", "user"]:
        active = [
            j
            for key, ids in jobs.items()
            for j in ids
            if key.split("/")[0] == name and where.get("account", key.split("/")[1]) == key.split("/")[1]
        ]
        if active:
            print(" Error with request: Job(s) active, cancel job(s) before remove")
            for job in active:
                print(f"  JobID = {job:<10} C = lab        A = {where.get('account', '')} U = {name}    ")
            return 1
        if "account" in where:
            table[name]["assocs"].pop(where["account"])
        else:
            table.pop(name)
        return 0
    return 2


def scontrol(state: dict, argv: list[str]) -> int:
    """Reservations as 24.11's scontrol keeps and prints them (Flags gain SPEC_NODES when nodes are named)."""
    resv = state.setdefault("reservations", {})
    if argv[:2] == ["show", "reservation"]:
        r = resv.get(argv[2])
        if r is None:
            print(f"Reservation {argv[2]} not found", file=sys.stderr)
            return 1
        print(
            " ".join(
                f"{k}={r[k]}"
                for k in (
                    "ReservationName",
                    "StartTime",
                    "Duration",
                    "Nodes",
                    "PartitionName",
                    "Flags",
                    "Users",
                    "Accounts",
                    "State",
                )
            )
        )
        return 0
    sets = {}
    for arg in argv[1:]:
        key, _eq, value = arg.partition("=")
        sets[key] = value
    if argv[:2] == ["create", "reservation"]:
        name = sets.pop("ReservationName")
        flags = [f for f in sets.get("Flags", "").split(",") if f] + (["SPEC_NODES"] if sets.get("Nodes") else [])
        resv[name] = {
            "ReservationName": name,
            "StartTime": "2026-12-03T12:00:00",
            "Duration": sets["Duration"],
            "Nodes": sets.get("Nodes", "(null)"),
            "PartitionName": sets.get("PartitionName", "(null)"),
            "Flags": ",".join(flags) or "(null)",
            "Users": sets.get("Users", "(null)"),
            "Accounts": sets.get("Accounts", "(null)"),
            "State": "ACTIVE",
        }
        return 0
    name = sets.pop("ReservationName")
    if argv[0] == "delete":
        resv.pop(name)
        return 0
    if argv[0] == "update":
        r = resv[name]
        for key, value in sets.items():
            if key in ("Flags+", "Flags-"):
                have = [f for f in r["Flags"].split(",") if f and f != "(null)"]
                have = have + value.split(",") if key == "Flags+" else [f for f in have if f not in value.split(",")]
                r["Flags"] = ",".join(have) or "(null)"
            else:
                r[key] = value
        return 0
    return 2


def main(argv: list[str]) -> int:
    state_file, log_file = os.environ["FAKE_SACCTMGR_STATE"], os.environ["FAKE_SACCTMGR_LOG"]
    with open(log_file, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(argv) + "\n")
    state: dict = {}
    if os.path.exists(state_file):
        with open(state_file, encoding="utf-8") as fh:
            state = json.load(fh)
    qos = state.setdefault("qos", {})
    if argv[:1] == ["--as-scontrol"]:
        rc = scontrol(state, argv[1:])
        with open(state_file, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
        return rc
    if argv[:1] == ["--as-scancel"]:
        opts = dict(a[2:].split("=", 1) for a in argv[1:])
        if "user" in opts:  # jobs are kept as "user/account"
            for key in [k for k in state.get("jobs", {}) if "/" in k]:
                user, acct = key.split("/")
                if user == opts["user"] and opts.get("account", acct) == acct:
                    state["jobs"].pop(key)
        else:
            state.get("jobs", {}).pop(opts["account"], None)
        with open(state_file, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
        return 0
    words = [a for a in argv if a not in ("--immediate", "-i", "--noheader", "-n", "--parsable2", "-P")]
    is_user = len(words) > 1 and (
        words[1] == "user"
        or (words[1] == "association" and "where" in words and words[words.index("where") + 1].startswith("user="))
    )
    if is_user or (len(words) > 1 and words[1] in ("account", "association")):
        rc = users(state, words) if is_user else accounts(state, words)
        if words[0] != "show":
            with open(state_file, "w", encoding="utf-8") as fh:
                json.dump(state, fh)
        return rc
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
        qos[name]["Description"] = qos[name]["Description"].lower()
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
        json.dump(state, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
