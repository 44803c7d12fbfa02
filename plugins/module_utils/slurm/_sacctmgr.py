# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Slurm accounting through ``sacctmgr``: read, compare, write only what differs. Pure helpers.

Every call is an argv list (never a shell), run by the modules with ``LC_ALL=C`` (:data:`ENV`).
Reads use ``sacctmgr --noheader --parsable2 show ...`` (Slurm 22.05 has no ``--json``);
writes use ``--immediate``. sacctmgr exits 1 both for "nothing to do" and for real errors, with
messages that differ by release: :data:`MESSAGES` sorts them, and :func:`outcome` says which.

Values are compared as Slurm stores them: names lower-cased (sacctmgr lower-cases account and QOS
names), times in seconds (``2-00:00:00`` == ``48:00:00`` == ``2880``), TRES as ``{name: count}``
with memory in MiB (``mem=1G`` == ``mem=1024``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

ENV = {"LC_ALL": "C", "LANG": "C"}

# Account and QOS names: what sacctmgr stores (lower case) and what slurm.conf and job options can
# carry; Slurm itself refuses names with spaces, commas, '=' or quotes.
_NAME = re.compile(r"^[a-z0-9_][a-z0-9_.-]{0,63}$")
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_MEM = re.compile(r"^(\d+)([KMGTP]?)$", re.IGNORECASE)
UNLIMITED = (None, "", "-1", "UNLIMITED", "INFINITE")


class SacctmgrError(Exception):
    """A refusal or a failed call, with the text to show."""


def check_name(kind: str, name: Any) -> str | None:
    """The problem with a Slurm ``kind`` name (account, qos), or None; names are compared lower-cased."""
    text = str(name or "")
    if not _NAME.match(text.lower()):
        return (
            f"{kind} name {text!r}: use 1-64 letters, digits, '_', '.' or '-', starting with a letter, "
            "digit or '_' (sacctmgr stores it lower-cased)"
        )
    return None


def parse_time(value: Any) -> int | None:
    """Seconds in a Slurm time limit (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``,
    ``D-HH:MM:SS``); None for unlimited. ValueError for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return None if value < 0 else value * 60
    text = str(value if value is not None else "").strip()
    if text.upper() in UNLIMITED:
        return None
    m = _TIME.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)")
    days, a, b, c = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    if days is None:
        if b is None:
            return a * 60  # minutes
        if c is None:
            return a * 60 + int(b)  # minutes:seconds
        return a * 3600 + int(b) * 60 + int(c)
    return int(days) * 86400 + a * 3600 + int(b or 0) * 60 + int(c or 0)


def format_time(seconds: int | None) -> str:
    """``D-HH:MM:SS`` for sacctmgr; ``-1`` (no limit) for None."""
    if seconds is None:
        return "-1"
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"


def _tres_value(name: str, value: Any) -> int:
    text = str(value).strip()
    if name == "mem":
        m = _MEM.match(text)
        if not m:
            raise ValueError(f"TRES mem={text!r}: use MiB or a size with K, M, G, T or P")
        scale = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}[m.group(2).upper()]
        return int(int(m.group(1)) * scale)
    if not re.match(r"^\d+$", text):
        raise ValueError(f"TRES {name}={text!r}: use a whole number")
    return int(text)


def parse_tres(value: Any) -> dict[str, int]:
    """``{"cpu": 64, "gres/gpu": 8}`` from ``cpu=64,gres/gpu=8`` or a mapping; ``-1`` entries dropped."""
    if value in (None, ""):
        return {}
    items = value.items() if isinstance(value, Mapping) else (p.split("=", 1) for p in str(value).split(",") if p)
    out: dict[str, int] = {}
    for key, raw in items:
        name = str(key).strip().lower()
        if not re.match(r"^[a-z][a-z0-9_]*(/[a-z0-9_.:-]+)?$", name):
            raise ValueError(f"TRES name {key!r}: use cpu, mem, node, billing, gres/gpu, gres/gpu:h100, ...")
        if str(raw).strip() in ("-1", "UNLIMITED"):
            continue
        out[name] = _tres_value(name, raw)
    return out


def tres_arg(current: Mapping[str, int], wanted: Mapping[str, int]) -> str:
    """The TRES value that turns ``current`` into ``wanted`` (removed entries as ``=-1``)."""
    names = sorted(set(current) | set(wanted))
    return ",".join(f"{n}={wanted[n]}" if n in wanted else f"{n}=-1" for n in names if current.get(n) != wanted.get(n))


# sacctmgr's messages for exit 1, by what they mean; a message not listed is an error. Seen from
# Slurm 24.11's sacctmgr by hand in the lab: "error: No parent account 'X' on cluster 'C'" (an
# account added under a missing parent), "Nothing added." + "Make sure the accounts requested here
# have been added" (a user added to a missing account), "Nothing new added." (an add of what
# exists), "Job(s) active, cancel job(s) before remove" + "JobID = N ..." lines. The 22.05 wording
# ("Parent account ... doesn't exist") is from its source and not yet seen in the lab.
MESSAGES: tuple[tuple[str, str, str], ...] = (
    (r"No parent account '[^']*' on cluster", "error", "the parent account does not exist"),
    (r"[Pp]arent account .* doesn't exist", "error", "the parent account does not exist"),
    (r"Nothing added\.\s+Make sure the accounts", "error", "an account it names does not exist"),
    (r"Job\(s\) active, cancel job\(s\) before remove", "jobs", "jobs are running or pending under it"),
    (r"Nothing (new )?(added|modified|deleted)", "noop", "nothing to change"),
    (r"Nothing to (add|modify|delete)", "noop", "nothing to change"),
)


def outcome(rc: int, out: str, err: str) -> tuple[str, str]:
    """(``ok``/``noop``/``jobs``/``error``, what it means) for a sacctmgr write's exit and output."""
    text = f"{out}\n{err}"
    if rc == 0:
        return "ok", ""
    for pattern, kind, meaning in MESSAGES:
        if re.search(pattern, text):
            return kind, f"{meaning}: {' '.join(text.split())[:300]}"
    return "error", " ".join(text.split())[:300] or f"exit {rc}"


def job_ids(text: str) -> list[str]:
    """The job ids sacctmgr names when it refuses to remove an association with active jobs."""
    return sorted(set(re.findall(r"JobID\s*=\s*(\d+)", text, flags=re.IGNORECASE)), key=int)


# --------------------------------------------------------------------------------------- QOS

# option: (sacctmgr show column, sacctmgr set key, kind)
QOS_FIELDS: dict[str, tuple[str, str, str]] = {
    "description": ("Description", "Description", "text"),
    "priority": ("Priority", "Priority", "int"),
    "preempt": ("Preempt", "Preempt", "names"),
    "preempt_mode": ("PreemptMode", "PreemptMode", "word"),
    "flags": ("Flags", "Flags", "words"),
    "grp_tres": ("GrpTRES", "GrpTRES", "tres"),
    "max_tres_per_job": ("MaxTRES", "MaxTRESPerJob", "tres"),
    "max_tres_per_user": ("MaxTRESPU", "MaxTRESPerUser", "tres"),
    "max_wall": ("MaxWall", "MaxWall", "time"),
    "max_jobs_per_user": ("MaxJobsPU", "MaxJobsPerUser", "int"),
    "max_submit_jobs_per_user": ("MaxSubmitPU", "MaxSubmitJobsPerUser", "int"),
}
QOS_FLAGS = (
    "DenyOnLimit",
    "EnforceUsageThreshold",
    "NoDecay",
    "NoReserve",
    "OverPartQOS",
    "PartitionMaxNodes",
    "PartitionMinNodes",
    "PartitionTimeLimit",
    "RequiresReservation",
    "UsageFactorSafe",
)
PREEMPT_MODES = ("cluster", "cancel", "requeue", "suspend", "off")


def normalise(kind: str, value: Any) -> Any:
    """A field's value as compared: None means no limit / not set."""
    if kind == "text":  # sacctmgr stores descriptions and organizations lower-cased
        return "" if value is None else str(value).lower()
    if kind == "int":
        text = "" if value is None else str(value).strip()
        return None if text.upper() in UNLIMITED else int(text)
    if kind == "word":
        return str(value or "").strip().lower() or None
    if kind in ("names", "words"):
        parts = value if isinstance(value, (list, tuple)) else str(value or "").split(",")
        items = [str(p).strip() for p in parts if str(p).strip()]
        return sorted(p.lower() for p in items) if kind == "names" else sorted(items, key=str.lower)
    if kind == "tres":
        return parse_tres(value)
    if kind == "time":
        return parse_time(value)
    raise ValueError(kind)


def _set_value(kind: str, current: Any, wanted: Any) -> str:
    if kind == "tres":
        return tres_arg(current or {}, wanted)
    if kind == "time":
        return format_time(wanted)
    if kind == "int":
        return "-1" if wanted is None else str(wanted)
    if kind in ("names", "words"):
        return ",".join(wanted) if wanted else ("-1" if kind == "words" else "")
    return "" if wanted is None else str(wanted)


def qos_show_argv() -> list[str]:
    return [
        "sacctmgr",
        "--noheader",
        "--parsable2",
        "show",
        "qos",
        "format=" + ",".join(["Name"] + [col for col, _k, _t in QOS_FIELDS.values()]),
    ]


def parse_qos(text: str) -> dict[str, dict[str, Any]]:
    """Every QOS from :func:`qos_show_argv`'s output, by name, its fields normalised."""
    columns = list(QOS_FIELDS)
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) < len(columns) + 1:
            raise SacctmgrError(f"unexpected sacctmgr show qos line: {line!r}")
        name = cells[0].strip().lower()
        out[name] = {opt: normalise(QOS_FIELDS[opt][2], cells[i + 1]) for i, opt in enumerate(columns)}
    return out


def _checked(
    label: str,
    fields: Mapping[str, tuple[str, str, str]],
    wanted: Mapping[str, Any],
    norm: Any,
    problems: list[str],
) -> list[tuple[str, Any]]:
    """(option, normalised value) for every given field whose value normalises; the others' problems
    go to ``problems``, naming ``label`` and the option."""
    out = []
    for opt, value in wanted.items():
        if value is None:
            continue
        try:
            out.append((opt, norm(fields[opt][2], value)))
        except ValueError as exc:
            problems.append(f"{label}: {opt}: {exc}")
    return out


def qos_problems(name: Any, wanted: Mapping[str, Any]) -> list[str]:
    """Refusals for a QOS before any call: its name and every given field's value."""
    problems = [p for p in [check_name("QOS", name)] if p]
    for opt, norm in _checked(f"qos {name}", QOS_FIELDS, wanted, normalise, problems):
        if opt == "flags":
            bad = [f for f in norm if f.lower() not in {x.lower() for x in QOS_FLAGS}]
            if bad:
                problems.append(f"qos {name}: flags: unknown {', '.join(bad)} (known: {', '.join(QOS_FLAGS)})")
        if opt == "preempt_mode" and norm not in PREEMPT_MODES:
            problems.append(f"qos {name}: preempt_mode: {wanted[opt]!r} is not one of {', '.join(PREEMPT_MODES)}")
        if opt == "preempt":
            problems.extend(p for p in (check_name("QOS", q) for q in norm) if p)
    return problems


def _canonical_flags(flags: list[str]) -> list[str]:
    known = {x.lower(): x for x in QOS_FLAGS}
    return sorted((known.get(f.lower(), f) for f in flags), key=str.lower)


def plan_qos(
    name: str, state: str, wanted: Mapping[str, Any], existing: Mapping[str, dict[str, Any]]
) -> dict[str, Any]:
    """What makes QOS ``name`` as wanted: ``argv`` (None: nothing to do), ``before`` / ``after`` (the
    managed fields, for --diff) and ``changes`` (the fields that differ). ``wanted`` holds only the
    fields to manage (others are left as they are)."""
    key = name.lower()
    have = existing.get(key)
    managed = {opt: normalise(QOS_FIELDS[opt][2], v) for opt, v in wanted.items() if v is not None}
    if "flags" in managed:
        managed["flags"] = _canonical_flags(managed["flags"])
    if state == "absent":
        if have is None:
            return {"argv": None, "before": {}, "after": {}, "changes": []}
        return {
            "argv": ["sacctmgr", "--immediate", "delete", "qos", "where", f"name={key}"],
            "before": have,
            "after": {},
            "changes": ["state"],
        }
    before = {opt: have[opt] for opt in managed} if have else {}
    if have is not None:
        have_flags = dict(have, flags=_canonical_flags(have.get("flags") or []))
        changes = sorted(opt for opt, value in managed.items() if have_flags.get(opt) != value)
    else:
        changes = ["state", *sorted(managed)]
    if not changes:
        return {"argv": None, "before": before, "after": managed, "changes": []}
    sets = [
        f"{QOS_FIELDS[opt][1]}={_set_value(QOS_FIELDS[opt][2], (have or {}).get(opt), managed[opt])}"
        for opt in sorted(managed)
        # a new QOS starts without limits: a field left at "none" needs no setting
        if opt in changes and (have is not None or managed[opt] not in (None, [], {}))
    ]
    if have is None:
        argv = ["sacctmgr", "--immediate", "add", "qos", key, *sets]
    else:
        argv = ["sacctmgr", "--immediate", "modify", "qos", "where", f"name={key}", "set", *sets]
    return {"argv": argv, "before": before, "after": managed, "changes": changes}


# --------------------------------------------------------------------------------------- accounts

# option: (column in `show account` or `show assoc`, sacctmgr set key, kind); the first two are the
# account's own, the rest its association's (the account's line in the cluster's tree).
ACCOUNT_FIELDS: dict[str, tuple[str, str, str]] = {
    "description": ("Descr", "Description", "text"),
    "organization": ("Org", "Organization", "text"),
    "parent": ("ParentName", "Parent", "name"),
    "fairshare": ("Share", "Fairshare", "share"),
    "default_qos": ("DefaultQOS", "DefaultQOS", "name"),
    "qos": ("QOS", "QOS", "names"),
    "grp_tres": ("GrpTRES", "GrpTRES", "tres"),
    "max_tres_per_job": ("MaxTRES", "MaxTRES", "tres"),
    "max_wall": ("MaxWall", "MaxWall", "time"),
    "max_jobs": ("MaxJobs", "MaxJobs", "int"),
}
_OWN = ("description", "organization")


def _norm_account(kind: str, value: Any) -> Any:
    if kind == "name":
        return str(value or "").strip().lower() or None
    if kind == "share":
        text = str(value if value is not None else "").strip().lower()
        if text == "parent" or text in ("", "-1"):
            return "parent" if text == "parent" else None
        if not re.match(r"^\d+$", text):
            raise ValueError(f"{value!r} is not a whole number of shares or 'parent'")
        return int(text)
    return normalise(kind, value)


def _account_value(kind: str, current: Any, value: Any) -> str:
    if kind == "name":
        return value or ""
    if kind == "share":
        return "parent" if value == "parent" else ("-1" if value is None else str(value))
    return _set_value(kind, current, value)


def account_show_argv(name: str) -> list[list[str]]:
    """The two reads for account ``name``: the account itself, then its associations."""
    key = name.lower()
    own = [
        "sacctmgr",
        "--noheader",
        "--parsable2",
        "show",
        "account",
        "where",
        f"name={key}",
        "format=Account,Descr,Org",
    ]
    cols = ["Cluster", "Account", "User"] + [ACCOUNT_FIELDS[o][0] for o in ACCOUNT_FIELDS if o not in _OWN]
    assoc = [
        "sacctmgr",
        "--noheader",
        "--parsable2",
        "show",
        "association",
        "where",
        f"account={key}",
        "format=" + ",".join(cols),
    ]
    return [own, assoc]


def parse_account(own_text: str, assoc_text: str, cluster: str = "") -> dict[str, Any] | None:
    """Account fields from the two reads (None when it does not exist), and ``users``: the user
    associations under it. With several clusters, ``cluster`` chooses the association (else the first)."""
    own = [line.split("|") for line in own_text.splitlines() if line.strip()]
    if not own:
        return None
    out: dict[str, Any] = {
        "description": own[0][1] if len(own[0]) > 1 else "",
        "organization": own[0][2] if len(own[0]) > 2 else "",
    }
    assoc_opts = [o for o in ACCOUNT_FIELDS if o not in _OWN]
    users: list[str] = []
    chosen: list[str] | None = None
    for line in assoc_text.splitlines():
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) < 3 + len(assoc_opts):
            raise SacctmgrError(f"unexpected sacctmgr show association line: {line!r}")
        if cells[2]:
            users.append(cells[2])
        elif chosen is None and (not cluster or cells[0] == cluster):
            chosen = cells
    for i, opt in enumerate(assoc_opts):
        out[opt] = _norm_account(ACCOUNT_FIELDS[opt][2], chosen[3 + i]) if chosen else None
    out["users"] = sorted(set(users))
    return out


def account_problems(name: Any, wanted: Mapping[str, Any]) -> list[str]:
    """Refusals for an account before any call: names, values, and a default QOS outside its QOS list."""
    problems = [p for p in [check_name("account", name)] if p]
    for opt, norm in _checked(f"account {name}", ACCOUNT_FIELDS, wanted, _norm_account, problems):
        kind = ACCOUNT_FIELDS[opt][2]
        if kind == "name" and norm:
            problems.extend(p for p in [check_name("account" if opt == "parent" else "QOS", norm)] if p)
        if kind == "names":
            problems.extend(p for p in (check_name("QOS", q) for q in norm) if p)
    qos, default = wanted.get("qos"), wanted.get("default_qos")
    if qos is not None and default and str(default).lower() not in [str(q).lower() for q in qos]:
        problems.append(f"account {name}: default_qos {default!r} is not in its qos list {list(qos)}")
    return problems


def plan_account(
    name: str, state: str, wanted: Mapping[str, Any], have: Mapping[str, Any] | None, cluster: str = ""
) -> dict[str, Any]:
    """The one sacctmgr write (``argv``, None for none) that makes account ``name`` as wanted, with
    ``before``/``after`` (managed fields) and ``changes``."""
    key = name.lower()
    where = ["where", f"name={key}"] + ([f"cluster={cluster}"] if cluster else [])
    if state == "absent":
        if have is None:
            return {"argv": None, "before": {}, "after": {}, "changes": []}
        return {
            "argv": ["sacctmgr", "--immediate", "delete", "account", *where],
            "before": {k: v for k, v in have.items() if k != "users"},
            "after": {},
            "changes": ["state"],
        }
    managed = {o: _norm_account(ACCOUNT_FIELDS[o][2], v) for o, v in wanted.items() if v is not None}
    if have is None:
        sets = [
            f"{ACCOUNT_FIELDS[o][1]}={_account_value(ACCOUNT_FIELDS[o][2], None, v)}"
            for o, v in sorted(managed.items())
            if v not in (None, [], {})
        ]
        argv = ["sacctmgr", "--immediate", "add", "account", key, *sets] + ([f"Cluster={cluster}"] if cluster else [])
        return {"argv": argv, "before": {}, "after": managed, "changes": ["state", *sorted(managed)]}
    before = {o: have.get(o) for o in managed}
    changes = sorted(o for o, v in managed.items() if have.get(o) != v)
    if not changes:
        return {"argv": None, "before": before, "after": managed, "changes": []}
    sets = [f"{ACCOUNT_FIELDS[o][1]}={_account_value(ACCOUNT_FIELDS[o][2], have.get(o), managed[o])}" for o in changes]
    argv = ["sacctmgr", "--immediate", "modify", "account", *where, "set", *sets]
    return {"argv": argv, "before": before, "after": managed, "changes": changes}


# ------------------------------------------------------------------------------ the modules' run


def new_module(module_class: Any, options: Mapping[str, Any], association: bool = False) -> Any:
    """The module (``module_class``, AnsibleModule) with the shared options (:data:`BASE_ARGS`, and
    :data:`ASSOC_ARGS` for an ``association``) and its own ``options``; every one runs in check mode."""
    spec = {**BASE_ARGS, **(ASSOC_ARGS if association else {}), **options}
    return module_class(argument_spec=spec, supports_check_mode=True)


def refuse(module: Any, problems: list[str], result: dict[str, Any]) -> None:
    """Fail the module naming every problem at once, before anything is read; nothing when none."""
    if problems:
        module.fail_json(msg="; ".join(problems), **result)


def parsed(module: Any, parse: Any, *args: Any, result: dict[str, Any]) -> Any:
    """``parse(*args)``, or fail the module with the :class:`SacctmgrError` it raised."""
    try:
        return parse(*args)
    except SacctmgrError as exc:
        module.fail_json(msg=str(exc), **result)


def runner(module: Any) -> Any:
    """``run(argv)`` for a module: sacctmgr found on the node, ``LC_ALL=C``."""
    sacctmgr = module.get_bin_path("sacctmgr", required=True)
    return lambda argv: module.run_command([sacctmgr, *argv[1:]], environ_update=ENV)


def report(module: Any, plan: Mapping[str, Any], result: dict[str, Any]) -> None:
    """Put a plan (one write as ``argv``, or several as ``argvs``) into the result (changes, diff,
    commands); exit when it writes nothing or in check mode."""
    argvs = plan["argvs"] if "argvs" in plan else [plan["argv"]] if plan["argv"] is not None else []
    result["changes"] = plan["changes"]
    if module._diff:
        result["diff"] = {"before": plan["before"], "after": plan["after"]}
    if not argvs:
        module.exit_json(**result)
    result["changed"] = True
    result["commands"] = list(argvs)
    if module.check_mode:
        module.exit_json(**result)


# ------------------------------------------------------------------------------------------ users

# The user's own fields, then those of each of its associations (one per account).
USER_FIELDS: dict[str, tuple[str, str, str]] = {
    "default_account": ("DefaultAccount", "DefaultAccount", "name"),
    "admin_level": ("AdminLevel", "AdminLevel", "admin"),
}
USER_ASSOC_FIELDS: dict[str, tuple[str, str, str]] = {
    "qos": ("QOS", "QOS", "names"),
    "default_qos": ("DefaultQOS", "DefaultQOS", "name"),
    "grp_tres": ("GrpTRES", "GrpTRES", "tres"),
    "max_tres_per_job": ("MaxTRES", "MaxTRES", "tres"),
    "max_wall": ("MaxWall", "MaxWall", "time"),
    "max_jobs": ("MaxJobs", "MaxJobs", "int"),
}
ADMIN_LEVELS = ("none", "operator", "administrator")
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\$?$")


def _norm_user(kind: str, value: Any) -> Any:
    if kind == "admin":
        text = str(value or "none").strip().lower()
        if text not in ADMIN_LEVELS:
            raise ValueError(f"{value!r} is not one of None, Operator, Administrator")
        return text
    return _norm_account(kind, value)


def user_show_argv(name: str) -> list[list[str]]:
    """The two reads for user ``name``: the user, then its associations."""
    own = ["sacctmgr", "--noheader", "--parsable2", "show", "user", "where", f"name={name}"]
    own.append("format=User,DefaultAccount,AdminLevel")
    cols = ["Cluster", "Account", "User"] + [c for c, _k, _t in USER_ASSOC_FIELDS.values()]
    assoc = ["sacctmgr", "--noheader", "--parsable2", "show", "association", "where", f"user={name}"]
    return [own, [*assoc, "format=" + ",".join(cols)]]


def parse_user(own_text: str, assoc_text: str, cluster: str = "") -> dict[str, Any] | None:
    """The user's fields and ``accounts`` ({account: association fields}); None when it does not exist."""
    own = [line.split("|") for line in own_text.splitlines() if line.strip()]
    if not own:
        return None
    if len(own[0]) < 3:
        raise SacctmgrError(f"unexpected sacctmgr show user line: {own_text.strip()!r}")
    out: dict[str, Any] = {
        "default_account": _norm_user("name", own[0][1]),
        "admin_level": _norm_user("admin", own[0][2]),
        "accounts": {},
    }
    opts = list(USER_ASSOC_FIELDS)
    for line in assoc_text.splitlines():
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) < 3 + len(opts):
            raise SacctmgrError(f"unexpected sacctmgr show association line: {line!r}")
        if cluster and cells[0] != cluster:
            continue
        out["accounts"].setdefault(
            cells[1].lower(),
            {o: _norm_account(USER_ASSOC_FIELDS[o][2], cells[3 + i]) for i, o in enumerate(opts)},
        )
    return out


def user_problems(name: Any, wanted: Mapping[str, Any], accounts: Any, remove: Any) -> list[str]:
    """Refusals for a user before any call."""
    problems = []
    if not _USER.match(str(name or "")):
        problems.append(f"user name {name!r}: use the login name (letters, digits, '_', '.', '-')")
    label = f"user {name}"
    fields = {**USER_FIELDS, **USER_ASSOC_FIELDS}
    norms = dict(_checked(label, fields, wanted, _norm_user, problems))
    for acct in list(accounts or []) + list(remove or []):
        problems.extend(p for p in [check_name("account", acct)] if p)
    wanted_accounts = [str(a).lower() for a in accounts or []]
    both = sorted(set(wanted_accounts) & {str(a).lower() for a in remove or []})
    if both:
        problems.append(f"{label}: {', '.join(both)} both in accounts and remove_accounts")
    default = norms.get("default_account")
    if default and accounts is not None and default not in wanted_accounts:
        problems.append(f"{label}: default_account {default!r} is not in its accounts {wanted_accounts}")
    if default and default in {str(a).lower() for a in remove or []}:
        problems.append(f"{label}: default_account {default!r} is in remove_accounts")
    qos, default_qos = norms.get("qos"), norms.get("default_qos")
    if qos is not None and default_qos and default_qos not in qos:
        problems.append(f"{label}: default_qos {default_qos!r} is not in its qos list {qos}")
    return problems


def _user_sets(have: Mapping[str, Any], wanted: Mapping[str, Any], opts: list[str]) -> list[str]:
    return [
        f"{USER_ASSOC_FIELDS[o][1]}={_account_value(USER_ASSOC_FIELDS[o][2], have.get(o), wanted[o])}" for o in opts
    ]


def plan_user(
    name: str,
    state: str,
    wanted: Mapping[str, Any],
    accounts: list[str] | None,
    remove: list[str] | None,
    have: Mapping[str, Any] | None,
    cluster: str = "",
) -> dict[str, Any]:
    """The sacctmgr writes (``argvs``, in order) that make user ``name`` as wanted: associations added,
    the user's fields, the associations' fields, associations removed (only those in ``remove``)."""
    where_cluster = [f"cluster={cluster}"] if cluster else []
    if state == "absent":
        if have is None:
            return {"argvs": [], "before": {}, "after": {}, "changes": []}
        argv = ["sacctmgr", "--immediate", "delete", "user", "where", f"name={name}", *where_cluster]
        return {"argvs": [argv], "before": dict(have), "after": {}, "changes": ["state"]}
    own = {o: _norm_user(USER_FIELDS[o][2], v) for o, v in wanted.items() if o in USER_FIELDS and v is not None}
    assoc = {
        o: _norm_user(USER_ASSOC_FIELDS[o][2], v) for o, v in wanted.items() if o in USER_ASSOC_FIELDS and v is not None
    }
    have_accounts = dict((have or {}).get("accounts") or {})
    wanted_accounts = [a.lower() for a in accounts or []]
    adding = [a for a in wanted_accounts if a not in have_accounts]
    removing = sorted(a.lower() for a in remove or [] if a.lower() in have_accounts)
    argvs: list[list[str]] = []
    changes: list[str] = []
    if adding:
        sets = [f"Account={','.join(adding)}"]
        if have is None:
            default = own.get("default_account") or adding[0]
            sets.append(f"DefaultAccount={default}")
            sets += [f"AdminLevel={own['admin_level']}"] if own.get("admin_level") not in (None, "none") else []
            sets += _user_sets({}, assoc, [o for o in sorted(assoc) if assoc[o] not in (None, [], {})])
        argvs.append(
            ["sacctmgr", "--immediate", "add", "user", name, *sets, *([f"Cluster={cluster}"] if cluster else [])]
        )
        changes += ["state"] if have is None else [f"account {a}" for a in adding]
    if have is not None:
        own_changes = sorted(o for o, v in own.items() if have.get(o) != v)
        if own_changes:
            sets = [f"{USER_FIELDS[o][1]}={own[o]}" for o in own_changes]
            argvs.append(["sacctmgr", "--immediate", "modify", "user", "where", f"name={name}", "set", *sets])
            changes += own_changes
        # the associations this run keeps (the wanted ones, else every one it has)
        kept = [a for a in (wanted_accounts or sorted(have_accounts)) if a in have_accounts and a not in removing]
        for acct in kept:
            diff = sorted(o for o, v in assoc.items() if have_accounts[acct].get(o) != v)
            if diff:
                sets = _user_sets(have_accounts[acct], assoc, diff)
                where = ["where", f"name={name}", f"account={acct}", *where_cluster]
                argvs.append(["sacctmgr", "--immediate", "modify", "user", *where, "set", *sets])
                changes += [f"{acct}: {o}" for o in diff]
        if adding and assoc:
            # the associations just added take the managed fields too
            sets = _user_sets({}, assoc, sorted(assoc))
            for acct in adding:
                where = ["where", f"name={name}", f"account={acct}", *where_cluster]
                argvs.append(["sacctmgr", "--immediate", "modify", "user", *where, "set", *sets])
        for acct in removing:
            argvs.append(
                [
                    "sacctmgr",
                    "--immediate",
                    "delete",
                    "user",
                    "where",
                    f"name={name}",
                    f"account={acct}",
                    *where_cluster,
                ]
            )
            changes.append(f"account {acct} removed")
    before = {} if have is None else {**{o: have.get(o) for o in own}, "accounts": sorted(have_accounts)}
    after_accounts = sorted((set(have_accounts) | set(adding)) - set(removing))
    return {"argvs": argvs, "before": before, "after": {**own, "accounts": after_accounts}, "changes": changes}


def write(module: Any, run: Any, argv: list[str], label: str, result: dict[str, Any], cancel: list[str] | None) -> None:
    """Make one sacctmgr write, or fail the module naming ``label``. A removal Slurm refuses for
    active jobs fails naming them, unless ``cancel`` (a scancel argv) is given: then those jobs are
    cancelled and the write retried while they leave the queue (up to a minute)."""
    rc, out, err = run(argv)
    kind, meaning = outcome(rc, out, err)
    if kind == "jobs" and cancel:
        scancel = module.get_bin_path("scancel", required=True)
        result["commands"].append(cancel)
        rc2, _out, err2 = module.run_command([scancel, *cancel[1:]], environ_update=ENV)
        if rc2 != 0:
            module.fail_json(msg=f"{label}: {' '.join(cancel)} failed: {err2.strip()[:300]}", **result)
        for _try in range(30):
            time.sleep(2)
            rc, out, err = run(argv)
            kind, meaning = outcome(rc, out, err)
            if kind != "jobs":
                break
    if kind == "jobs":
        jobs = job_ids(f"{out}\n{err}")
        module.fail_json(
            msg=f"{label}: not removed, job(s) {', '.join(jobs) or '(ids not shown)'} run or wait under it; "
            "end them, or set cancel_jobs: true",
            jobs=jobs,
            **result,
        )
    if kind != "ok":
        module.fail_json(msg=f"{label}: sacctmgr {' '.join(argv[2:])}: {meaning}", **result)


def read(module: Any, run: Any, argvs: list[list[str]], result: dict[str, Any]) -> list[str]:
    """The output of each read, or fail the module naming the read."""
    texts = []
    for argv in argvs:
        rc, out, err = run(argv)
        if rc != 0:
            module.fail_json(msg=f"sacctmgr {' '.join(argv[3:5])} failed: {(err or out).strip()[:300]}", **result)
        texts.append(out)
    return texts


# The option type of each field kind (a list is of strings); any other kind is a string.
_KIND_TYPES = {"int": "int", "names": "list", "words": "list", "tres": "raw", "share": "raw"}


def field_args(fields: Mapping[str, tuple[str, str, str]], **refine: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The argument spec of the options in a fields table (``*_FIELDS``), by their kind; ``refine``
    adds to an option's entry (``preempt_mode={"choices": [...]}``)."""
    spec: dict[str, dict[str, Any]] = {}
    for opt, (_column, _key, kind) in fields.items():
        arg_type = _KIND_TYPES.get(kind, "str")
        spec[opt] = {"type": arg_type, **({"elements": "str"} if arg_type == "list" else {}), **refine.get(opt, {})}
    return spec


# The modules' shared options (their documentation says each).
BASE_ARGS: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
}
ASSOC_ARGS: dict[str, dict[str, Any]] = {
    "cluster": {"type": "str", "default": ""},
    **field_args(USER_ASSOC_FIELDS),
    "cancel_jobs": {"type": "bool", "default": False},
}
