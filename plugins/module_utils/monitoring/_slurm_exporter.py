# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The collection's Slurm exporter: Slurm's state as Prometheus metrics, from Slurm's own commands.

Self-contained (standard library only, Python 3.8+): the monitoring role installs this file as a
program on the controllers and runs it as a systemd service under SlurmUser, which sees every node
and job whatever ``PrivateData`` hides from others (Slurm 25.11's own metrics endpoint switches itself
off under ``PrivateData``). Each scrape runs, at most once per ``min_interval`` seconds:

- ``scontrol show node --oneliner``: each node's state, flags, drain or down reason, partitions, and its
  GPUs configured and allocated (``CfgTRES``/``AllocTRES`` ``gres/gpu``);
- ``squeue -O ...``: jobs by state, partition and account, pending jobs by reason, GPUs allocated to
  running jobs by partition and account (the tenants are accounts);
- ``sdiag``: the main scheduler's and backfill's cycle times, agent and slurmdbd agent queues;
- ``scontrol ping``: each controller up or down; ``sacctmgr show cluster``: slurmdbd answering.

A command that fails or times out is a metric (``slurm_exporter_command_success{command} 0``) and its
families are left out; the exporter never crashes on Slurm's answer.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_PORT = 9341
SQUEUE_FIELDS = ("JobID", "State", "Partition", "Account", "Reason", "tres-alloc")
COMMANDS: dict[str, list[str]] = {
    "nodes": ["scontrol", "show", "node", "--oneliner"],
    "jobs": ["squeue", "--noheader", "--all", "--Format", ",".join(f"{f}:|" for f in SQUEUE_FIELDS)],
    "sdiag": ["sdiag"],
    "ping": ["scontrol", "ping"],
    "dbd": ["sacctmgr", "--noheader", "--parsable2", "show", "cluster", "format=cluster"],
}

Runner = Callable[[Sequence[str], float], "tuple[int, str, str]"]

# -- parsing ----------------------------------------------------------------------------------------
_KEY = re.compile(r"\s(?=[A-Za-z][A-Za-z0-9_:/]*=)")
_STAMP = re.compile(r"\s*\[[^\]\s@]+@[^\]\s]+\]\s*$")


def parse_node_line(line: str) -> dict[str, str]:
    """One ``scontrol show node --oneliner`` line as key -> value (``Reason`` runs to the line's end,
    without the ``[user@time]`` slurmctld appends)."""
    head, sep, reason = line.partition(" Reason=")
    out: dict[str, str] = {}
    for part in _KEY.split(" " + head.strip()):
        key, eq, value = part.strip().partition("=")
        if eq:
            out[key] = value.strip()
    if sep:
        out["Reason"] = _STAMP.sub("", reason).strip()
    return out


def tres_count(tres: str, key: str = "gres/gpu") -> int:
    """``key``'s count in a TRES string (``cpu=2,mem=2000M,gres/gpu=8``); 0 when absent."""
    for item in (tres or "").split(","):
        name, _eq, value = item.partition("=")
        if name == key:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


def parse_nodes(text: str) -> list[dict[str, Any]]:
    nodes = []
    for line in text.splitlines():
        if not line.startswith("NodeName="):
            continue
        kv = parse_node_line(line)
        words = kv.get("State", "UNKNOWN").split("+")
        base = words[0]
        flags = [w.lower() for w in words[1:]]
        if base.endswith("*"):  # not responding
            base = base[:-1]
            flags.append("not_responding")
        parts = kv.get("Partitions", "")
        nodes.append(
            {
                "name": kv["NodeName"],
                "state": base.lower(),
                "flags": sorted(set(flags)),
                "reason": kv.get("Reason", ""),
                "partitions": [p for p in parts.split(",") if p],
                "gpus": tres_count(kv.get("CfgTRES", "")),
                "gpus_allocated": tres_count(kv.get("AllocTRES", "")),
            }
        )
    return nodes


def node_summary(node: Mapping[str, Any]) -> str:
    """One word for counting: down, drain, powered_down, powering_up, powering_down or Slurm's base state."""
    flags = set(node["flags"])
    if node["state"] == "down" or "not_responding" in flags:
        return "down"
    if "drain" in flags:
        return "drain"
    for flag in ("powered_down", "powering_up", "powering_down"):
        if flag in flags:
            return flag
    return str(node["state"])


def short_reason(reason: str) -> str:
    """A pending reason without the node list Slurm may add (``ReqNodeNotAvail,_UnavailableNodes:eh-2``)."""
    return re.split(r"[,(]", reason.strip(), maxsplit=1)[0].strip() or "None"


def parse_jobs(text: str) -> list[dict[str, Any]]:
    jobs = []
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) < len(SQUEUE_FIELDS) or not fields[0].strip():
            continue
        job_id, state, partition, account, reason, tres = (f.strip() for f in fields[: len(SQUEUE_FIELDS)])
        jobs.append(
            {
                "id": job_id,
                "state": state.lower(),
                "partition": partition,
                "account": account,
                "reason": short_reason(reason),
                "gpus": tres_count(tres),
            }
        )
    return jobs


_SDIAG_TOP = {
    "Server thread count": "server_threads",
    "Agent queue size": "agent_queue_size",
    "DBD Agent queue size": "dbd_agent_queue_size",
    "Jobs pending": "jobs_pending",
    "Jobs running": "jobs_running",
}
_SDIAG_CYCLE = {
    "Last cycle": "cycle_last_us",
    "Max cycle": "cycle_max_us",
    "Mean cycle": "cycle_mean_us",
    "Total cycles": "cycles",
    "Last queue length": "queue_length",
    "Total backfilled jobs (since last slurm start)": "backfilled_jobs",
}


def parse_sdiag(text: str) -> dict[str, float]:
    """The figures of ``sdiag``: top-level ones by name, the main scheduler's as ``main_*`` and
    backfill's as ``backfill_*`` (``Mean cycle`` appears once a cycle has run)."""
    out: dict[str, float] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        indented = raw[:1] in ("\t", " ")
        if not indented:  # a heading or a top-level figure ends the section before it
            section = "main" if line.startswith("Main schedule statistics") else ""
            section = "backfill" if line.startswith("Backfilling stats") else section
        key, colon, value = line.partition(":")
        words = value.split()
        if not colon or not words:
            continue
        try:
            number = float(words[0])
        except ValueError:
            continue
        key = key.strip()
        if not indented and key in _SDIAG_TOP:
            out[_SDIAG_TOP[key]] = number
        elif indented and section and key in _SDIAG_CYCLE:
            out[f"{section}_{_SDIAG_CYCLE[key]}"] = number
    return out


_PING = re.compile(r"^Slurmctld\((primary|backup\d*)\) at (\S+) is (UP|DOWN)", re.MULTILINE)


def parse_ping(text: str) -> list[tuple[str, str, bool]]:
    """(role, host, up) per controller from ``scontrol ping``."""
    return [(role, host, state == "UP") for role, host, state in _PING.findall(text or "")]


# -- exposition -------------------------------------------------------------------------------------
def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Prometheus text exposition (version 0.0.4): families in the order first written."""

    def __init__(self) -> None:
        self.families: dict[str, tuple[str, str, list[str]]] = {}

    def add(self, name: str, kind: str, doc: str, value: float, **labels: Any) -> None:
        fam = self.families.setdefault(name, (kind, doc, []))
        label = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        number = repr(float(value)) if isinstance(value, float) and not float(value).is_integer() else str(int(value))
        fam[2].append(f"{name}{{{label}}} {number}" if label else f"{name} {number}")

    def text(self) -> str:
        out = []
        for name, (kind, doc, samples) in self.families.items():
            out.append(f"# HELP {name} {doc}")
            out.append(f"# TYPE {name} {kind}")
            out.extend(samples)
        return "\n".join(out) + "\n"


def _count(items: Iterable[tuple[Any, ...]]) -> dict[tuple[Any, ...], int]:
    out: dict[tuple[Any, ...], int] = {}
    for key in items:
        out[key] = out.get(key, 0) + 1
    return out


def node_metrics(m: Metrics, nodes: list[dict[str, Any]]) -> None:
    for n in nodes:
        flags = set(n["flags"])
        m.add(
            "slurm_node_info",
            "gauge",
            "A node, its base state, flags and partitions (always 1).",
            1,
            node=n["name"],
            state=n["state"],
            flags=",".join(n["flags"]),
            partitions=",".join(n["partitions"]),
        )
        for name, what, on in (
            ("slurm_node_drained", "drained or draining", "drain" in flags),
            ("slurm_node_down", "down or not responding", n["state"] == "down" or "not_responding" in flags),
        ):
            help_text = f"1 when the node is {what}, with Slurm's reason."
            m.add(name, "gauge", help_text, int(on), node=n["name"], reason=n["reason"] if on else "")
        m.add(
            "slurm_node_powered_down",
            "gauge",
            "1 when power saving has the node powered down (an elastic node with no instance).",
            int("powered_down" in flags),
            node=n["name"],
        )
        m.add("slurm_node_gpus", "gauge", "GPUs the node is configured with.", n["gpus"], node=n["name"])
        m.add("slurm_node_gpus_allocated", "gauge", "GPUs allocated to jobs.", n["gpus_allocated"], node=n["name"])
    parts: dict[str, list[dict[str, Any]]] = {}
    for n in nodes:
        for p in n["partitions"]:
            parts.setdefault(p, []).append(n)
    for (partition, summary), count in sorted(
        _count((p, node_summary(n)) for p, members in parts.items() for n in members).items()
    ):
        m.add(
            "slurm_partition_nodes",
            "gauge",
            "Nodes per partition by state (down, drain, powered_down, powering_up, powering_down or Slurm's).",
            count,
            partition=partition,
            state=summary,
        )
    for partition, members in sorted(parts.items()):
        total = sum(n["gpus"] for n in members)
        alloc = sum(n["gpus_allocated"] for n in members)
        usable = sum(n["gpus"] - n["gpus_allocated"] for n in members if node_summary(n) not in ("down", "drain"))
        m.add("slurm_partition_gpus", "gauge", "GPUs on the partition's nodes.", total, partition=partition)
        m.add("slurm_partition_gpus_allocated", "gauge", "GPUs allocated to jobs.", alloc, partition=partition)
        m.add(
            "slurm_partition_gpus_idle",
            "gauge",
            "GPUs a job could get now or by powering a node up: not allocated, on nodes neither down nor drained.",
            max(0, usable),
            partition=partition,
        )


def job_metrics(m: Metrics, jobs: list[dict[str, Any]]) -> None:
    for (state, partition, account), count in sorted(
        _count((j["state"], j["partition"], j["account"]) for j in jobs).items()
    ):
        m.add(
            "slurm_jobs",
            "gauge",
            "Jobs by state, partition and account.",
            count,
            state=state,
            partition=partition,
            account=account,
        )
    for (partition, reason), count in sorted(
        _count((j["partition"], j["reason"]) for j in jobs if j["state"] == "pending").items()
    ):
        m.add(
            "slurm_jobs_pending_reason",
            "gauge",
            "Pending jobs by partition and Slurm's reason.",
            count,
            partition=partition,
            reason=reason,
        )
    gpus: dict[tuple[str, str], int] = {}
    for j in jobs:
        if j["state"] == "running":
            key = (j["partition"], j["account"])
            gpus[key] = gpus.get(key, 0) + j["gpus"]
    for (partition, account), count in sorted(gpus.items()):
        m.add(
            "slurm_account_gpus_allocated",
            "gauge",
            "GPUs allocated to running jobs by partition and account (tenant).",
            count,
            partition=partition,
            account=account,
        )


_SDIAG_METRICS = (
    ("server_threads", "slurm_server_threads", "slurmctld's active threads.", 1),
    ("agent_queue_size", "slurm_agent_queue_size", "slurmctld's outgoing RPCs waiting.", 1),
    (
        "dbd_agent_queue_size",
        "slurm_dbd_agent_queue_size",
        "Messages for slurmdbd waiting (grows while it is away).",
        1,
    ),
    ("main_cycle_last_us", "slurm_scheduler_cycle_last_seconds", "The main scheduler's last cycle.", 1e6),
    ("main_cycle_max_us", "slurm_scheduler_cycle_max_seconds", "The main scheduler's longest cycle.", 1e6),
    ("main_cycle_mean_us", "slurm_scheduler_cycle_mean_seconds", "The main scheduler's mean cycle.", 1e6),
    ("main_queue_length", "slurm_scheduler_queue_length", "Jobs in the main scheduler's last queue.", 1),
    ("backfill_cycle_last_us", "slurm_backfill_cycle_last_seconds", "Backfill's last cycle.", 1e6),
    ("backfill_cycle_max_us", "slurm_backfill_cycle_max_seconds", "Backfill's longest cycle.", 1e6),
    ("backfill_cycle_mean_us", "slurm_backfill_cycle_mean_seconds", "Backfill's mean cycle.", 1e6),
    ("backfill_backfilled_jobs", "slurm_backfilled_jobs", "Jobs started by backfill since slurmctld started.", 1),
)


def sdiag_metrics(m: Metrics, figures: Mapping[str, float]) -> None:
    for key, name, doc, scale in _SDIAG_METRICS:
        if key in figures:
            m.add(name, "gauge", doc, figures[key] / scale)


# -- collecting -------------------------------------------------------------------------------------
def run_command(argv: Sequence[str], timeout: float) -> tuple[int, str, str]:
    try:
        res = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]}: no answer in {timeout:g} s"
    except OSError as exc:
        return 127, "", f"{argv[0]}: {exc.strerror}"
    return res.returncode, res.stdout, res.stderr


def collect(run: Runner = run_command, timeout: float = 10.0, commands: Mapping[str, list[str]] | None = None) -> str:
    """One scrape's text. Every command is timed and its success exported; a failed one adds nothing else."""
    cmds = dict(COMMANDS if commands is None else commands)
    m = Metrics()
    started = time.monotonic()
    status: list[tuple[str, bool, float]] = []
    answers: dict[str, str] = {}
    for name, argv in cmds.items():
        t0 = time.monotonic()
        rc, out, _err = run(argv, timeout)
        ok = rc == 0 or (name == "ping" and bool(parse_ping(out)))
        status.append((name, ok, time.monotonic() - t0))
        if ok:
            answers[name] = out
    if "nodes" in answers:
        node_metrics(m, parse_nodes(answers["nodes"]))
    if "jobs" in answers:
        job_metrics(m, parse_jobs(answers["jobs"]))
    if "sdiag" in answers:
        sdiag_metrics(m, parse_sdiag(answers["sdiag"]))
    if "ping" in answers:
        for role, host, up in parse_ping(answers["ping"]):
            m.add(
                "slurm_controller_up",
                "gauge",
                "1 when the controller answers scontrol ping.",
                int(up),
                host=host,
                role=role,
            )
    if "dbd" in cmds:
        m.add("slurm_dbd_up", "gauge", "1 when slurmdbd answers sacctmgr.", int("dbd" in answers))
    for name, ok, _secs in status:
        m.add(
            "slurm_exporter_command_success",
            "gauge",
            "1 when the Slurm command behind these metrics answered.",
            int(ok),
            command=name,
        )
    for name, _ok, secs in status:
        m.add("slurm_exporter_command_seconds", "gauge", "How long the command took.", round(secs, 4), command=name)
    m.add(
        "slurm_exporter_scrape_seconds",
        "gauge",
        "How long the whole scrape took.",
        round(time.monotonic() - started, 4),
    )
    return m.text()


class Exporter:
    """Serves ``/metrics`` from the last collection. A background thread collects every ``min_interval``
    seconds, so a scrape never waits on a busy slurmctld and the commands run at one pace however many
    scrape; ``slurm_exporter_collected_timestamp_seconds`` tells how fresh the answer is."""

    def __init__(self, run: Runner = run_command, timeout: float = 10.0, min_interval: float = 10.0) -> None:
        self.run, self.timeout, self.min_interval = run, timeout, min_interval
        self.cond = threading.Condition()
        self.text: str | None = None

    def collect_once(self) -> str:
        text = collect(self.run, self.timeout)
        stamp = Metrics()
        stamp.add(
            "slurm_exporter_collected_timestamp_seconds",
            "gauge",
            "When the commands behind this answer ran (Unix time).",
            round(time.time(), 3),
        )
        return text + stamp.text()

    def _loop(self) -> None:
        while True:
            text = self.collect_once()
            with self.cond:
                self.text = text
                self.cond.notify_all()
            time.sleep(self.min_interval)

    def start(self) -> None:
        threading.Thread(target=self._loop, name="collect", daemon=True).start()

    def metrics(self, wait: float = 60.0) -> str:
        """The last collection (waiting up to ``wait`` seconds for the first)."""
        with self.cond:
            self.cond.wait_for(lambda: self.text is not None, timeout=wait)
            return self.text or ""

    def handler(self) -> type[BaseHTTPRequestHandler]:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404, "only /metrics")
                    return
                body = exporter.metrics().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="oci-gpu-slurm-exporter", description="Slurm's state as Prometheus metrics.")
    ap.add_argument("--listen", default=f"0.0.0.0:{DEFAULT_PORT}", help="address:port (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds each Slurm command may take")
    ap.add_argument("--min-interval", type=float, default=10.0, help="seconds between two runs of the commands")
    ap.add_argument("--once", action="store_true", help="print one scrape and exit")
    args = ap.parse_args(argv)
    exporter = Exporter(timeout=args.timeout, min_interval=args.min_interval)
    if args.once:
        sys.stdout.write(exporter.collect_once())
        return 0
    exporter.start()
    host, _colon, port = args.listen.rpartition(":")
    server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), exporter.handler())
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
