# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The gpu_node role through ansible-playbook on this host, every path pointed at a temp dir.

This host has no GPU, driver, RDMA NIC or systemd as PID 1: the driver version file, nvidia-smi,
the kernel-module list and the RDMA directory are stand-ins under tmp_path, and the service step
has nothing to start (no NVIDIA unit is installed), so gpu_node_services is off and the fabric
check, which needs nvidia-fabricmanager, is turned off. What it proves: the refusal comes before
any file is written and names the node, the check, the expectation and the finding; nccl.conf
holds the shape's published values; the health program is the module_utils file, runs, and reads
the settings the role wrote; a second run and a check-mode run change nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_harness import recap_counts, run_playbook, shown
from gpu_stand_ins import H100_NICS, gpu_node_files, run_health, stand_in

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _health as _gpu_health


def _smi() -> str:
    out = "Driver Version : 550.90.07\n"
    for i in range(8):
        out += f"GPU 00000000:{16 + i:02X}:00.0\n    Persistence Mode : Enabled\n"
    return out


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return gpu_node_files(tmp_path, "nvidia 1 0 - Live 0x0\n", _smi())


def _vars(node: Path, **over) -> dict:
    extra = {
        "gpu_node_shape": "BM.GPU.H100.8",
        "gpu_node_gpu_count": 0,  # this host has no /dev/nvidiaN
        "gpu_node_checks": {"fabric": False},
        "gpu_node_services": False,
        "gpu_node_driver_version_file": str(node / "version"),
        "gpu_node_nvidia_smi": str(node / "nvidia-smi"),
        "gpu_node_device_glob": str(node / "dev" / "nvidia*"),
        "gpu_node_modules_file": str(node / "modules"),
        "gpu_node_rdma_dir": str(node / "ib"),
        "gpu_node_nccl_conf_path": str(node / "etc" / "nccl.conf"),
        "gpu_node_nccl_socket_ifname": "ens300f0np0",
        "gpu_node_health_program": str(node / "sbin" / "oci-gpu-health"),
        "gpu_node_health_config": str(node / "etc" / "oci-gpu" / "health.json"),
        "gpu_node_health_python": sys.executable,
        "gpu_node_health_xid_file": str(node / "kern.log"),
        "gpu_node_health_checks": {"munge": False},
    }
    extra.update(over)
    return extra


def _play(node: Path, extra: dict, *args: str) -> subprocess.CompletedProcess[str]:
    (node / "etc").mkdir(exist_ok=True)
    (node / "sbin").mkdir(exist_ok=True)
    play = [
        {
            "name": "GPU node",
            "hosts": "all",
            "gather_facts": True,
            "gather_subset": ["min", "network"],
            "roles": [{"role": "oci_gpu.cluster.gpu_node"}],
        }
    ]
    return run_playbook(node, play, extra, *args, host="gpu7")


def test_a_missing_nic_is_refused_before_anything_is_written(node: Path) -> None:
    (node / "ib" / "mlx5_3").rmdir()
    res = _play(node, _vars(node))
    assert res.returncode != 0
    assert "node gpu7: rdma_nics: expected the 16 RDMA NICs of BM.GPU.H100.8, found 15; missing mlx5_3" in res.stdout
    assert not (node / "etc" / "nccl.conf").exists() and not (node / "sbin" / "oci-gpu-health").exists()


def test_bad_inputs_are_refused_by_name(node: Path) -> None:
    res = _play(node, _vars(node, gpu_node_health_checks={"xdi": False}, gpu_node_nccl_overrides={"NCCL_X": "a#b"}))
    assert res.returncode != 0
    assert 'gpu_node_health_checks ["xdi"] (known: nvidia_smi, gpu_count, fabric, xid, mounts, munge)' in shown(
        res, stderr=False
    )
    assert not (node / "etc" / "nccl.conf").exists()
    res = _play(node, _vars(node, gpu_node_nccl_overrides={"NCCL_X": "a#b"}))
    assert res.returncode != 0
    assert (
        "gpu_node_nccl_overrides on host gpu7: key NCCL_X: the value may not hold '#', a line break, "
        "a control character or edge spaces" in res.stdout
    )


# What the storage roles would mount on the node (gpu_node_health_mounts defaults to it).
STORAGE = {
    "fss_mount_mounts": [
        {"path": "/home", "target": "10.0.0.5", "export_path": "/home"},
        {"path": "/apps", "target": "10.0.0.5", "export_path": "/apps", "options": ["ro", "hard"]},
        {"path": "/archive", "target": "10.0.0.5", "export_path": "/archive", "state": "present"},
    ],
    "lustre_client_mounts": [{"path": "/lustre", "mgs_nid": "10.0.0.9@tcp", "fsname": "lfs", "options": "rw"}],
    "nvme_scratch_mount_path": "/scratch",
}


def test_converge_idempotence_check_mode_and_the_installed_program(node: Path) -> None:
    res = _play(node, _vars(node, gpu_node_nccl_overrides={"NCCL_DEBUG": "INFO"}, **STORAGE))
    assert res.returncode == 0, res.stdout[-3000:]
    conf = (node / "etc" / "nccl.conf").read_text()
    assert conf.startswith("# Managed by Ansible (oci_gpu.cluster.gpu_node)\n")
    lines = [line for line in conf.splitlines() if not line.startswith("#")]
    assert "NCCL_DEBUG=INFO" in lines and "NCCL_SOCKET_IFNAME=ens300f0np0" in lines
    assert "NCCL_IB_HCA==" + ",".join(H100_NICS) in lines
    assert "NCCL_IB_GID_INDEX=3" in lines and "NCCL_IB_TC=41" in lines
    settings = json.loads((node / "etc" / "oci-gpu" / "health.json").read_text())
    assert settings["node"] == "gpu7" and settings["gpu_count"] == 0 and settings["fabric"] == "fabricmanager"
    assert settings["xid_fatal"] == list(_gpu_health.DEFAULT_FATAL_XIDS)
    # the storage roles' mounts, by default: File Storage and Lustre as mounted, NVMe scratch while fstab names it
    assert settings["mounts"] == [
        {"path": "/home", "writable": True},
        {"path": "/apps", "writable": False},
        {"path": "/lustre", "writable": True},
        {"path": "/scratch", "writable": True, "if_in_fstab": True},
    ]
    program = node / "sbin" / "oci-gpu-health"
    assert program.stat().st_mode & 0o777 == 0o755
    text = program.read_text()
    assert text == f"#!{sys.executable}\n" + Path(_gpu_health.__file__).read_text()
    # the installed program, run as Slurm would, against this settings file (report only)
    (node / "kern.log").write_text("NVRM: Xid (PCI:0000:0f:00): 79, pid=1, name=x, GPU has fallen off the bus.\n")
    stand_in(node / "sbin" / "scontrol", "echo 'NodeName=gpu7 State=IDLE Partitions=gpu'")
    settings["nvidia_smi"] = str(node / "nvidia-smi")
    checks = {"munge": False, "fabric": False, "mounts": False}
    (node / "health-test.json").write_text(json.dumps({**settings, "checks": checks}))
    ran = run_health([str(program), "--config", str(node / "health-test.json"), "--no-drain"], node / "sbin", node)
    assert ran.stdout.strip() == ("gpu-health: gpu7: drain (gpu-health: gpu_count: 8 of 0 GPUs (+1 more))"), ran.stdout

    again = _play(node, _vars(node, gpu_node_nccl_overrides={"NCCL_DEBUG": "INFO"}, **STORAGE))
    assert again.returncode == 0 and recap_counts(again.stdout, "gpu7")["changed"] == 0, again.stdout[-3000:]
    check = _play(node, _vars(node), "--check", "--diff")
    assert check.returncode == 0, check.stdout[-3000:]
    assert "-NCCL_DEBUG=INFO" in check.stdout and "+NCCL_DEBUG=WARN" in check.stdout
    assert "NCCL_DEBUG=INFO" in (node / "etc" / "nccl.conf").read_text()
