# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Slurm exporter (monitoring/_slurm_exporter) on Slurm's own output. The texts below are the lab's
Slurm 24.11 answers (``scontrol show node --oneliner``, the exporter's ``squeue --Format``, ``sdiag``,
``scontrol ping``) captured from a running lab cluster, with states, reasons and jobs varied to cover a
drained, a down and a powered-down node, GPU jobs of two accounts and pending jobs."""

from __future__ import annotations

import re
import threading
import urllib.request
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.monitoring import _slurm_exporter as ex

TAIL = "ThreadsPerCore=1 TmpDisk=0 Weight={w} Owner=N/A MCS_label=N/A Partitions={p}  BootTime=2026-12-05T10:49:44 "
NODE = (
    "NodeName={n} Arch=x86_64 CoresPerSocket=2  CPUAlloc=1 CPUEfctv=2 CPUTot=2 CPULoad=1.12 "
    "AvailableFeatures=bm_gpu_h100_8 ActiveFeatures=bm_gpu_h100_8 Gres=gpu:h100:8 NodeAddr={n} NodeHostName={n} "
    "Version=24.11.5 OS=Linux 6.18.44-fc-v1252 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=23081 AllocMem=1000 "
    "FreeMem=20787 Sockets=1 Boards=1 State={s} " + TAIL + "SlurmdStartTime=2026-12-06T10:20:56 "
    "LastBusyTime=2026-12-06T10:20:56 ResumeAfterTime=None CfgTRES=cpu=2,mem=23081M,billing=2,gres/gpu=8 "
    "AllocTRES={a} CurrentWatts=0 AveWatts=0 {r}"
)
NODES = "\n".join(
    [
        NODE.format(n="gpu1", s="MIXED", w=1, p="gpu", a="cpu=1,mem=1000M,gres/gpu=2,gres/gpu:h100=2", r=""),
        NODE.format(
            n="gpu2",
            s="IDLE+DRAIN",
            w=1,
            p="gpu,debug",
            a="",
            r=" Reason=gpu-health: gpu_count: 7 of 8 GPUs [root@2026-12-06T10:00:00]",
        ),
        NODE.format(n="gpu3", s="DOWN*", w=1, p="gpu", a="", r=" Reason=Not responding [slurm@2026-12-06T10:01:00]"),
        NODE.format(n="gpu4", s="ALLOCATED", w=1, p="gpu", a="cpu=2,mem=2000M,gres/gpu=8", r=""),
        NODE.format(n="eh-1", s="IDLE+CLOUD+POWERED_DOWN", w=1000, p="gpu", a="", r=""),
    ]
)
JOBS = """\
11|RUNNING|gpu|physics|None|cpu=1,mem=1000M,node=1,billing=1,gres/gpu=2|
12|RUNNING|gpu|chem|None|cpu=2,mem=2000M,node=1,billing=2,gres/gpu=8|
13|PENDING|gpu|chem|Resources|cpu=2,mem=2000M,node=1,billing=2,gres/gpu=8|
14|PENDING|gpu|physics|ReqNodeNotAvail,_UnavailableNodes:gpu[2-3]|cpu=1,mem=1000M,node=1,billing=1|
15|COMPLETING|debug|physics|None|cpu=1,mem=1000M,node=1,billing=1|
"""
SDIAG = """\
*******************************************************
sdiag output at Sun Dec 06 10:20:58 2026 (1796552458)
Data since      Sun Dec 06 10:20:56 2026 (1796552456)
*******************************************************
Server thread count:  3
RPC queue enabled:    0
Agent queue size:     0
Agent count:          0
Agent thread count:   0
DBD Agent queue size: 17

Jobs submitted: 1
Jobs pending:   2
Jobs running:   2

Main schedule statistics (microseconds):
\tLast cycle:   1250
\tMax cycle:    51000
\tTotal cycles: 3
\tMean cycle:   2500
\tMean depth cycle:  1
\tCycles per minute: 3
\tLast queue length: 2

Main scheduler exit:
\tEnd of job queue: 3

Backfilling stats
\tTotal backfilled jobs (since last slurm start): 4
\tTotal backfilled jobs (since last stats cycle start): 0
\tTotal cycles: 2
\tLast cycle when: Sun Dec 06 10:21:28 2026 (1796552488)
\tLast cycle: 800
\tMax cycle:  900
\tMean cycle: 850
\tLast queue length: 1

Latency for 1000 calls to gettimeofday(): 22 microseconds
"""
PING = "Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is DOWN\n"


def fake(answers: dict[str, tuple[int, str]]) -> Any:
    def run(argv: list[str], timeout: float) -> tuple[int, str, str]:
        for name, cmd in ex.COMMANDS.items():
            if list(argv) == cmd:
                rc, out = answers.get(name, (1, ""))
                return rc, out, "" if rc == 0 else f"{argv[0]}: error"
        raise AssertionError(f"unexpected command {argv}")

    return run


OK = {"nodes": (0, NODES), "jobs": (0, JOBS), "sdiag": (0, SDIAG), "ping": (1, PING), "dbd": (0, "lab\n")}


def samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _sp, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_nodes_states_reasons_and_gpus() -> None:
    got = samples(ex.collect(fake(OK)))
    assert got['slurm_node_drained{node="gpu2",reason="gpu-health: gpu_count: 7 of 8 GPUs"}'] == 1
    assert got['slurm_node_drained{node="gpu1",reason=""}'] == 0
    assert got['slurm_node_down{node="gpu3",reason="Not responding"}'] == 1
    assert got['slurm_node_powered_down{node="eh-1"}'] == 1
    assert got['slurm_node_info{node="gpu2",state="idle",flags="drain",partitions="gpu,debug"}'] == 1
    assert got['slurm_node_gpus_allocated{node="gpu1"}'] == 2
    # the partition: 40 GPUs, 10 allocated; idle leaves out the drained and the down node (16)
    assert got['slurm_partition_gpus{partition="gpu"}'] == 40
    assert got['slurm_partition_gpus_allocated{partition="gpu"}'] == 10
    assert got['slurm_partition_gpus_idle{partition="gpu"}'] == 40 - 10 - 16
    assert got['slurm_partition_nodes{partition="gpu",state="drain"}'] == 1
    assert got['slurm_partition_nodes{partition="gpu",state="down"}'] == 1
    assert got['slurm_partition_nodes{partition="gpu",state="powered_down"}'] == 1
    assert got['slurm_partition_nodes{partition="debug",state="drain"}'] == 1


def test_jobs_pending_reasons_and_gpus_per_account() -> None:
    got = samples(ex.collect(fake(OK)))
    assert got['slurm_jobs{state="running",partition="gpu",account="chem"}'] == 1
    assert got['slurm_jobs{state="pending",partition="gpu",account="physics"}'] == 1
    assert got['slurm_jobs{state="completing",partition="debug",account="physics"}'] == 1
    # the node list Slurm adds to a reason is left out: one series per reason
    assert got['slurm_jobs_pending_reason{partition="gpu",reason="ReqNodeNotAvail"}'] == 1
    assert got['slurm_jobs_pending_reason{partition="gpu",reason="Resources"}'] == 1
    assert got['slurm_account_gpus_allocated{partition="gpu",account="chem"}'] == 8
    assert got['slurm_account_gpus_allocated{partition="gpu",account="physics"}'] == 2


def test_scheduler_queues_and_controllers() -> None:
    got = samples(ex.collect(fake(OK)))
    assert got["slurm_dbd_agent_queue_size"] == 17 and got["slurm_server_threads"] == 3
    assert got["slurm_scheduler_cycle_last_seconds"] == 0.00125
    assert got["slurm_scheduler_cycle_mean_seconds"] == 0.0025
    assert got["slurm_backfill_cycle_last_seconds"] == 0.0008
    assert got["slurm_backfill_cycle_mean_seconds"] == 0.00085
    assert got["slurm_backfilled_jobs"] == 4
    # scontrol ping exits 1 when a controller is down: its answer still counts
    assert got['slurm_controller_up{host="ctl1",role="primary"}'] == 1
    assert got['slurm_controller_up{host="ctl2",role="backup"}'] == 0
    assert got['slurm_exporter_command_success{command="ping"}'] == 1
    assert got["slurm_dbd_up"] == 1


def test_a_failing_command_is_a_metric_and_its_families_are_left_out() -> None:
    text = ex.collect(fake({**OK, "jobs": (1, ""), "dbd": (1, ""), "sdiag": (124, "")}))
    got = samples(text)
    assert got['slurm_exporter_command_success{command="jobs"}'] == 0
    assert got['slurm_exporter_command_success{command="sdiag"}'] == 0
    assert got['slurm_exporter_command_success{command="nodes"}'] == 1
    assert got["slurm_dbd_up"] == 0
    assert not any(k.startswith(("slurm_jobs", "slurm_scheduler_")) for k in got)
    assert any(k.startswith("slurm_node_info") for k in got)


def test_the_exposition_is_valid_text_format() -> None:
    """Every family has one HELP and one TYPE line before its samples; label values are escaped."""
    nodes = NODES.replace("Not responding", 'Not "responding"\\ now')
    text = ex.collect(fake({**OK, "nodes": (0, nodes)}))
    seen: set[str] = set()
    current = ""
    for line in text.splitlines():
        if line.startswith("# HELP "):
            current = line.split()[2]
            assert current not in seen
            seen.add(current)
        elif line.startswith("# TYPE "):
            assert line.split()[2] == current and line.split()[3] == "gauge"
        else:
            assert re.match(r"^[a-z_]+(\{.*\})? -?[0-9.e-]+$", line), line
            assert line.split("{")[0].split(" ")[0] == current
    assert 'reason="Not \\"responding\\"\\\\ now"' in text


def test_the_exporter_serves_the_last_collection_and_runs_the_commands_once_per_interval() -> None:
    calls: list[str] = []
    run = fake(OK)

    def counting(argv: list[str], timeout: float) -> tuple[int, str, str]:
        calls.append(argv[0])
        return run(argv, timeout)

    exporter = ex.Exporter(run=counting, min_interval=60)
    exporter.start()
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), exporter.handler())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        for _scrape in range(3):
            with urllib.request.urlopen(url, timeout=10) as resp:
                assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                body = resp.read().decode()
        assert 'slurm_node_drained{node="gpu2"' in body
        assert len(calls) == len(ex.COMMANDS)  # three scrapes, one run of each command
        assert "slurm_exporter_collected_timestamp_seconds " in body
    finally:
        server.shutdown()
        server.server_close()
