# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab's DCGM exporter stand-in (tests/lab/dcgm_exporter.py): the real exporter's names and labels, only
the collected fields, hpc_job from the job mapping directory, and an unknown field refused at start as the
real exporter refuses it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[2] / "lab"
sys.path.insert(0, str(LAB))

import dcgm_exporter  # noqa: E402

GPUS = [
    {
        "index": i,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": f"GPU-{i}",
        "pci_bus_id": f"00000000:{i:02X}:00.0",
        "memory_mib": 81559,
    }
    for i in range(2)
]


@pytest.fixture
def lab_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "gpus.json").write_text(json.dumps(GPUS))
    monkeypatch.setattr(dcgm_exporter, "GPUS_FILE", str(tmp_path / "gpus.json"))
    monkeypatch.setattr(dcgm_exporter, "FAULT_FILE", str(tmp_path / "fault.json"))
    monkeypatch.setattr(dcgm_exporter.os.path, "exists", lambda p: p.startswith("/dev/nvidia") or Path(p).exists())
    (tmp_path / "counters.csv").write_text(
        "# comment\n\nDCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n"
        "DCGM_FI_DEV_XID_ERRORS, gauge, last Xid\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, energy (mJ)\n"
    )
    (tmp_path / "map").mkdir()
    return tmp_path


def _series(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{")]


def test_series_per_gpu_with_the_real_labels_and_jobs_from_the_map(lab_node: Path) -> None:
    (lab_node / "map" / "1").write_text("41\n42\n")
    collectors = dcgm_exporter.read_collectors(str(lab_node / "counters.csv"))
    text = dcgm_exporter.render(collectors, str(lab_node / "map"), "gpu1")
    util = _series(text, "DCGM_FI_DEV_GPU_UTIL")
    assert util == [
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-0",pci_bus_id="00000000:00:00.0",device="nvidia0",'
        'modelName="NVIDIA H100 80GB HBM3",Hostname="gpu1",DCGM_FI_DRIVER_VERSION="550.90.07"} 0',
        'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1",pci_bus_id="00000000:01:00.0",device="nvidia1",'
        'modelName="NVIDIA H100 80GB HBM3",Hostname="gpu1",DCGM_FI_DRIVER_VERSION="550.90.07",hpc_job="41"} 100',
        'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1",pci_bus_id="00000000:01:00.0",device="nvidia1",'
        'modelName="NVIDIA H100 80GB HBM3",Hostname="gpu1",DCGM_FI_DRIVER_VERSION="550.90.07",hpc_job="42"} 100',
    ]
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter" in text
    # only the collected fields
    assert "DCGM_FI_DEV_FB_USED" not in text and "DCGM_FI_DEV_POWER_USAGE" not in text


def test_the_fault_file_hides_gpus_and_sets_an_xid(lab_node: Path) -> None:
    (lab_node / "fault.json").write_text(json.dumps({"gpus": 1, "xid": 79}))
    collectors = dcgm_exporter.read_collectors(str(lab_node / "counters.csv"))
    text = dcgm_exporter.render(collectors, "", "gpu1")
    xid = _series(text, "DCGM_FI_DEV_XID_ERRORS")
    assert len(xid) == 1 and xid[0].startswith('DCGM_FI_DEV_XID_ERRORS{gpu="0"') and xid[0].endswith("} 79")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("DCGM_FI_DEV_NOT_A_FIELD, gauge, x", "unknown DCGM field 'DCGM_FI_DEV_NOT_A_FIELD'"),
        ("DCGM_FI_DEV_GPU_UTIL, histogram, x", "unknown metric type 'histogram'"),
        ("DCGM_FI_DEV_GPU_UTIL gauge", "expected 'FIELD, type, help'"),
    ],
)
def test_a_bad_collectors_line_stops_it(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "c.csv").write_text(line + "\n")
    with pytest.raises(SystemExit, match=message):
        dcgm_exporter.read_collectors(str(tmp_path / "c.csv"))


def test_it_serves_metrics_over_http_with_the_real_options(lab_node: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"OCI_GPU_LAB_GPUS_FILE": str(lab_node / "gpus.json"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [
            sys.executable,
            str(LAB / "dcgm_exporter.py"),
            "--address",
            f"127.0.0.1:{port}",
            "--collectors",
            str(lab_node / "counters.csv"),
            f"--hpc-job-mapping-dir={lab_node / 'map'}",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        body = ""
        for _attempt in range(50):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    body = r.read().decode()
                break
            except OSError:
                time.sleep(0.1)
        # no /dev/nvidia* here: no GPU, no series, but every family is declared
        assert "# TYPE DCGM_FI_DEV_GPU_UTIL gauge" in body
    finally:
        proc.terminate()
        proc.wait(timeout=10)
