# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The GPU node health check: checks, parsers and the drain/resume decision.

Self-contained (standard library, no collection imports, Python 3.8+) because it is also the program
the ``gpu_node`` role installs as Slurm's ``HealthCheckProgram``: the role copies this file with a
``#!/usr/bin/python3`` line in front, and it then runs :func:`main` with the JSON settings file the
role writes (``--config``). Slurm drains nothing by itself, so the program does: a failing check
drains the node with a reason starting with :data:`REASON_PREFIX` and naming the check
(``gpu-health: gpu_count: 7 of 8 GPUs``); a node it drained is resumed once every check passes; a
node drained by anyone else (any other reason) is never touched.

Every input the checks read is a path or a command in the settings, so the tests and the lab's
stand-ins can point them elsewhere. The kernel log is read (never written: in a container it is the
host's, shared by every node) from a file or a command's output.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

REASON_PREFIX = "gpu-health:"

# nvidia-smi's documented exit codes (nvidia-smi(1), RETURN VALUE).
NVIDIA_SMI_EXIT = {
    2: "invalid argument",
    3: "operation not available on this GPU",
    4: "insufficient permissions",
    6: "query unsuccessful",
    8: "external power cables not attached",
    9: "NVIDIA driver is not loaded",
    10: "kernel interrupt problem with a GPU",
    12: "NVML shared library not found",
    13: "NVML does not implement the function",
    14: "infoROM is corrupted",
    15: "a GPU has fallen off the bus",
    255: "other error or internal driver error",
}

# Xids that leave a GPU unusable until a reset or a repair (NVIDIA's Xid catalogue): 48 double-bit
# ECC error, 61/62 internal micro-controller halt, 64 row-remapping failure, 74 NVLink error, 79
# fallen off the bus, 94/95 contained/uncontained ECC error, 119/120 GSP errors, 140 unrecovered
# ECC error. Settable with ``xid_fatal``.
DEFAULT_FATAL_XIDS = (48, 61, 62, 64, 74, 79, 94, 95, 119, 120, 140)

CHECKS = ("nvidia_smi", "gpu_count", "fabric", "xid", "mounts", "munge")

DEFAULTS: dict[str, Any] = {
    "node": "",
    "nvidia_smi": "nvidia-smi",
    "scontrol": "scontrol",
    "systemctl": "systemctl",
    "gpu_count": None,
    "fabric": None,
    "xid_file": "",
    "xid_command": ["journalctl", "--dmesg", "--boot", "--output=cat", "--no-pager"],
    "xid_fatal": list(DEFAULT_FATAL_XIDS),
    "mounts": [],
    "fstab": "/etc/fstab",
    "mountinfo": "/proc/self/mountinfo",
    "stat": "stat",
    "munge_unit": "munge",
    "checks": {},
    "timeout": 10,
}

_XID = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+)")
_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_SECTION = re.compile(r"^(\s*)(\S[^:]*?)\s*:\s*(.*?)\s*$")


def run_command(argv: Sequence[str], timeout: float) -> tuple[int, str]:
    """Run ``argv``; (exit code, stdout and stderr). A missing program is 127, a timeout 124.

    A command that does not answer in time is killed and not waited for: a process stuck in the
    kernel (``stat`` on a dead hard NFS mount, ``nvidia-smi`` on a wedged GPU) may outlive SIGKILL,
    and the check must end anyway."""
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found"
    try:
        out, _err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return 124, f"{argv[0]}: no answer in {timeout:g} s"
    return proc.returncode, out


def smi_exit_problem(rc: int, output: str) -> str | None:
    """What a non-zero nvidia-smi exit code means, or None for 0."""
    if rc == 0:
        return None
    meaning = NVIDIA_SMI_EXIT.get(rc) or ("not installed" if rc == 127 else "no answer" if rc == 124 else "failed")
    last = output.strip().splitlines()[-1] if output.strip() else ""
    return f"nvidia-smi exit {rc}: {meaning}" + (f" ({last[:80]})" if last else "")


def parse_smi_query(output: str) -> dict[str, Any]:
    """From ``nvidia-smi -q``: the GPUs (one ``GPU <PCI address>`` section each), their persistence
    modes and their Fabric state/status (H100 and later print a ``Fabric`` section per GPU; older
    boards none)."""
    gpus: list[dict[str, Any]] = []
    section = ""
    for line in output.splitlines():
        gpu = _GPU.match(line)
        if gpu:
            gpus.append({"pci": gpu.group(1), "persistence": None, "fabric": None})
            section = ""
            continue
        if not gpus or not line.strip():
            continue
        m = _SECTION.match(line)
        indent = len(line) - len(line.lstrip())
        if not m:  # a section header: a line without ':'
            if indent <= 4:
                section = line.strip()
                if section == "Fabric":
                    gpus[-1]["fabric"] = {}
            continue
        key, value = m.group(2), m.group(3)
        if key == "Persistence Mode" and indent <= 4:
            gpus[-1]["persistence"] = value
        elif section == "Fabric" and key in ("State", "Status"):
            gpus[-1]["fabric"][key.lower()] = value
    return {
        "gpus": [g["pci"] for g in gpus],
        "persistence": [g["persistence"] for g in gpus],
        "fabric": [g["fabric"] for g in gpus if g["fabric"] is not None],
    }


def fabric_problem(fabric: list[dict[str, str]], expected_gpus: int | None) -> str | None:
    """Each GPU's fabric must be ``Completed`` with status ``Success``."""
    if not fabric:
        return "nvidia-smi -q shows no Fabric state"
    bad = [
        f"GPU {i}: {f.get('state', '?')}/{f.get('status', '?')}"
        for i, f in enumerate(fabric)
        if (f.get("state"), f.get("status")) != ("Completed", "Success")
    ]
    if bad:
        return "fabric not ready: " + ", ".join(bad[:4]) + (f" (+{len(bad) - 4} more)" if len(bad) > 4 else "")
    if expected_gpus and len(fabric) < expected_gpus:
        return f"fabric state for {len(fabric)} of {expected_gpus} GPUs"
    return None


def fatal_xids(lines: str, fatal: Sequence[int]) -> list[tuple[str, int]]:
    """(PCI address, Xid) of every fatal Xid event in kernel log text, in order, once each."""
    seen: list[tuple[str, int]] = []
    wanted = {int(x) for x in fatal}
    for m in _XID.finditer(lines):
        event = (m.group(1), int(m.group(2)))
        if event[1] in wanted and event not in seen:
            seen.append(event)
    return seen


def node_state(scontrol_output: str) -> tuple[list[str], str]:
    """(state flags, reason) from ``scontrol show node -o NAME``; ([], "") when not found."""
    state = re.search(r"(?:^|\s)State=(\S+)", scontrol_output)
    reason = re.search(r"(?:^|\s)Reason=(.*?)(?:\s+\w+=|$)", scontrol_output)
    flags = state.group(1).replace("*", "").split("+") if state else []
    text = reason.group(1).strip() if reason else ""
    return flags, re.sub(r"\s*\[[^\]]*\]$", "", text)


def decide(flags: Sequence[str], reason: str, problems: Sequence[str], unknown: Sequence[str] = ()) -> tuple[str, str]:
    """("drain", reason) / ("resume", "") / ("none", why) for a node in state ``flags`` with
    ``reason``, given the failing checks and those that could not be judged (``unknown``: no drain
    for them, and no resume while they last)."""
    drained = any(f in ("DRAIN", "DRAINED", "DRAINING") for f in flags)
    ours = reason.startswith(REASON_PREFIX)
    if drained and not ours:
        return "none", "drained by someone else: left alone"
    if problems:
        text = f"{REASON_PREFIX} {problems[0]}" + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
        text = text.replace('"', "'")[:200]
        if drained and reason == text:
            return "none", "already drained for this"
        return "drain", text
    if unknown:
        return "none", "cannot tell: " + "; ".join(unknown)[:200]
    if drained:
        return "resume", ""
    return "none", "healthy"


def run_checks(
    settings: dict[str, Any], runner: Callable[[Sequence[str], float], tuple[int, str]] = run_command
) -> list[str]:
    """Every enabled check's problem, as ``check: detail`` lines."""
    return check_all(settings, runner)[0]


def check_all(
    settings: dict[str, Any], runner: Callable[[Sequence[str], float], tuple[int, str]] = run_command
) -> tuple[list[str], list[str]]:
    """(problems, cannot tell): every enabled check's problem, and what could not be judged (a mount
    that does not answer in time), each as ``check: detail`` lines. Only problems drain."""
    on = {name: settings["checks"].get(name, True) for name in CHECKS}
    timeout = float(settings["timeout"])
    problems: list[str] = []
    unknown: list[str] = []
    expected = settings.get("gpu_count")
    if on["nvidia_smi"] or on["gpu_count"] or on["fabric"]:
        rc, out = runner([settings["nvidia_smi"], "-q"], timeout)
        problem = smi_exit_problem(rc, out)
        if problem:
            if on["nvidia_smi"]:
                problems.append(f"nvidia_smi: {problem}")
        else:
            query = parse_smi_query(out)
            found = len(query["gpus"])
            if on["gpu_count"] and expected is not None and found != int(expected):
                problems.append(f"gpu_count: {found} of {expected} GPUs")
            if on["fabric"] and settings.get("fabric") == "fabricmanager":
                # A missing GPU is the count check's to report when it runs, not the fabric's too.
                problem = fabric_problem(query["fabric"], None if on["gpu_count"] else expected)
                if problem:
                    problems.append(f"fabric: {problem}")
    if on["fabric"] and settings.get("fabric") == "imex":
        rc, _out = runner([settings["systemctl"], "is-active", "--quiet", "nvidia-imex"], timeout)
        if rc != 0:
            problems.append("fabric: nvidia-imex is not running")
    if on["xid"]:
        text, problem = _kernel_log(settings, runner, timeout)
        if problem:
            problems.append(f"xid: {problem}")
        else:
            events = fatal_xids(text, settings["xid_fatal"])
            if events:
                shown = ", ".join(f"Xid {x} on {pci}" for pci, x in events[:3])
                problems.append(f"xid: {shown}" + (f" (+{len(events) - 3} more)" if len(events) > 3 else ""))
    if on["mounts"] and settings["mounts"]:
        listed = fstab_mount_points(settings["fstab"])
        table = mount_table(settings["mountinfo"])
        for mount in settings["mounts"]:
            wanted = str(mount.get("path", "")).rstrip("/") or "/" if isinstance(mount, dict) else ""
            if isinstance(mount, dict) and mount.get("if_in_fstab") and wanted not in listed:
                continue
            problem, cannot_tell = mount_state(mount, table, settings["stat"], runner, timeout)
            if problem:
                problems.append(f"mounts: {problem}")
            if cannot_tell:
                unknown.append(f"mounts: {cannot_tell}")
    if on["munge"] and settings.get("munge_unit"):
        rc, _out = runner([settings["systemctl"], "is-active", "--quiet", settings["munge_unit"]], timeout)
        if rc != 0:
            problems.append(f"munge: {settings['munge_unit']} is not running")
    return problems, unknown


def _kernel_log(
    settings: dict[str, Any], runner: Callable[[Sequence[str], float], tuple[int, str]], timeout: float
) -> tuple[str, str | None]:
    if settings.get("xid_file"):
        try:
            with open(settings["xid_file"], encoding="utf-8", errors="replace") as fh:
                return fh.read(), None
        except OSError as exc:
            return "", f"cannot read {settings['xid_file']}: {exc.strerror}"
    rc, out = runner(settings["xid_command"], timeout)
    if rc != 0:
        return "", f"{settings['xid_command'][0]} exit {rc}"
    return out, None


def fstab_mount_points(path: str) -> set[str]:
    """The mount points an fstab names (an unreadable or missing file names none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return set()
    fields = (line.split() for line in lines if line.strip() and not line.lstrip().startswith("#"))
    return {f[1].replace("\\040", " ").rstrip("/") or "/" for f in fields if len(f) >= 2}


def _unescape(field: str) -> str:
    """A mountinfo path field: spaces, tabs, newlines and backslashes come octal-escaped (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_table(path: str) -> dict[str, dict[str, Any]]:
    """Mount point -> {fstype, options} from a mountinfo file, the last mount on a point winning (it
    hides the ones below). Read from the kernel's table: nothing under a mount point is touched, so a
    dead server cannot block it. An unreadable file gives an empty table."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return {}
    table: dict[str, dict[str, Any]] = {}
    for line in lines:
        head, _sep, tail = line.partition(" - ")
        fields = head.split()
        if len(fields) < 6:
            continue
        point = _unescape(fields[4]).rstrip("/") or "/"
        table[point] = {"fstype": (tail.split() or [""])[0], "options": set(fields[5].split(","))}
    return table


def mount_state(
    mount: Any,
    table: dict[str, dict[str, Any]],
    stat: str,
    runner: Callable[[Sequence[str], float], tuple[int, str]],
    timeout: float,
) -> tuple[str | None, str | None]:
    """(problem, cannot tell) for one mount (a path, or ``{path, writable}``).

    Mounted: the kernel's table lists it. Answering: ``stat --file-system`` in a child process, in
    ``timeout`` seconds (a dead hard mount blocks whoever touches it: the check itself never does).
    Writable: mounted read-write; nothing is written, so a root-squashed export (where root may not
    write) is not mistaken for a broken one. A mount that does not answer in time cannot be judged:
    that is said, and the node is not drained for it (a slow server would otherwise drain every node)."""
    path = mount if isinstance(mount, str) else str(mount.get("path", ""))
    writable = True if isinstance(mount, str) else bool(mount.get("writable", True))
    point = path.rstrip("/") or "/"
    entry = table.get(point)
    if entry is None:
        return f"{path} is not mounted", None
    rc, out = runner([stat, "--file-system", "--format=%T", point], timeout)
    if rc == 124:
        return None, f"{path} does not answer in {timeout:g} s (cannot tell)"
    if rc != 0:
        return f"{path} cannot be read ({out.strip()[:120] or f'stat exit {rc}'})", None
    if writable and "ro" in entry["options"]:
        return f"{path} is mounted read-only", None
    return None, None


def load_settings(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        given = json.load(fh)
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"{path}: unknown settings {', '.join(unknown)}")
    settings = dict(DEFAULTS)
    settings.update(given)
    settings["node"] = settings["node"] or socket.gethostname().split(".")[0]
    return settings


def _say(stream: Any, line: str) -> None:
    # The program's output goes to slurmd's log (or the caller's terminal), never to Ansible: this
    # file runs as a program, not as module code, when it writes.
    stream.write(line + "\n")


def main(
    argv: Sequence[str] | None = None, runner: Callable[[Sequence[str], float], tuple[int, str]] = run_command
) -> int:
    parser = argparse.ArgumentParser(description="GPU node health check (Slurm HealthCheckProgram)")
    parser.add_argument("--config", default="/etc/oci-gpu/health.json")
    parser.add_argument("--no-drain", action="store_true", help="report only; change no node state")
    parser.add_argument(
        "--check-only",
        action="store_true",
        help="run the checks only (no scontrol): exit 1 when one fails (the repair agent's acceptance job)",
    )
    args = parser.parse_args(argv)
    # slurmd runs the program with a bare environment: find scontrol, systemctl and the rest.
    os.environ.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    try:
        settings = load_settings(args.config)
    except (OSError, ValueError) as exc:
        _say(sys.stderr, f"gpu-health: {exc}")
        return 2
    problems, unknown = check_all(settings, runner)
    if args.check_only:
        for line in problems + [f"cannot tell: {u}" for u in unknown]:
            _say(sys.stdout, f"gpu-health: {settings['node']}: {line}")
        _say(sys.stdout, f"gpu-health: {settings['node']}: " + ("failed" if problems or unknown else "passed"))
        return 1 if problems or unknown else 0
    timeout = float(settings["timeout"])
    rc, out = runner([settings["scontrol"], "show", "node", "--oneliner", settings["node"]], timeout)
    if rc != 0:
        _say(sys.stderr, f"gpu-health: {settings['node']}: scontrol exit {rc}; problems: {problems or 'none'}")
        return 1
    flags, reason = node_state(out)
    action, detail = decide(flags, reason, problems, unknown)
    node = settings["node"]
    if action != "none" and not args.no_drain:
        update = [settings["scontrol"], "update", f"NodeName={node}"]
        update += ["State=DRAIN", f"Reason={detail}"] if action == "drain" else ["State=RESUME"]
        rc, out = runner(update, timeout)
        if rc != 0:
            _say(sys.stderr, f"gpu-health: {node}: scontrol update exit {rc}: {out.strip()[:200]}")
            return 1
    _say(sys.stdout, f"gpu-health: {node}: {action}" + (f" ({detail})" if detail else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
