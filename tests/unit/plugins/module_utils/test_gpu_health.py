# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU health check: nvidia-smi output and exit codes, Xids, mounts, and the drain decision
(a node it drained is resumed; a node anyone else drained is left alone)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from gpu_stand_ins import run_health, stand_in

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _health as H

# What nvidia-smi -q prints on an H100 host, cut to the lines the checks read (two GPUs).
SMI_Q = """
==============NVSMI LOG==============

Timestamp                                 : Tue Dec  1 10:00:00 2026
Driver Version                            : 550.90.07
CUDA Version                              : 12.4

Attached GPUs                             : 2
GPU 00000000:0F:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Persistence Mode                      : Enabled
    Fabric
        State                             : Completed
        Status                            : Success
    Clocks Event Reasons
        Idle                              : Active
GPU 00000000:2D:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Persistence Mode                      : Disabled
    Fabric
        State                             : {state}
        Status                            : {status}
"""

KERNEL_LOG = """\
[  10.1] nvidia-nvlink: Nvlink Core is being initialized
[ 300.2] NVRM: Xid (PCI:0000:0f:00): 13, pid=4242, name=python, Graphics Exception
[ 301.0] NVRM: Xid (PCI:0000:2d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[ 301.5] NVRM: Xid (PCI:0000:2d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[ 302.0] NVRM: Xid (PCI:0000:0f:00): 48, pid=1, name=x, An uncorrectable double bit error
"""


def _q(state: str = "Completed", status: str = "Success") -> str:
    return SMI_Q.format(state=state, status=status)


def test_parse_smi_query_reads_gpus_persistence_and_fabric() -> None:
    got = H.parse_smi_query(_q("In Progress", "N/A"))
    assert got["gpus"] == ["00000000:0F:00.0", "00000000:2D:00.0"]
    assert got["persistence"] == ["Enabled", "Disabled"]
    assert got["fabric"] == [{"state": "Completed", "status": "Success"}, {"state": "In Progress", "status": "N/A"}]


def test_fabric_problem() -> None:
    assert H.fabric_problem(H.parse_smi_query(_q())["fabric"], 2) is None
    assert H.fabric_problem(H.parse_smi_query(_q("In Progress", "N/A"))["fabric"], 2) == (
        "fabric not ready: GPU 1: In Progress/N/A"
    )
    assert H.fabric_problem([], 8) == "nvidia-smi -q shows no Fabric state"
    assert H.fabric_problem([{"state": "Completed", "status": "Success"}], 8) == "fabric state for 1 of 8 GPUs"


@pytest.mark.parametrize(
    "rc,meaning",
    [
        (9, "NVIDIA driver is not loaded"),
        (12, "NVML shared library not found"),
        (15, "a GPU has fallen off the bus"),
        (127, "not installed"),
        (124, "no answer"),
        (42, "failed"),
    ],
)
def test_smi_exit_codes(rc: int, meaning: str) -> None:
    assert H.smi_exit_problem(rc, "line one\nUnable to determine the device handle\n") == (
        f"nvidia-smi exit {rc}: {meaning} (Unable to determine the device handle)"
    )
    assert H.smi_exit_problem(0, "") is None


def test_fatal_xids_once_each_in_order_and_only_fatal() -> None:
    assert H.fatal_xids(KERNEL_LOG, H.DEFAULT_FATAL_XIDS) == [("PCI:0000:2d:00", 79), ("PCI:0000:0f:00", 48)]
    assert H.fatal_xids(KERNEL_LOG, [13]) == [("PCI:0000:0f:00", 13)]
    assert H.fatal_xids("no xids here", H.DEFAULT_FATAL_XIDS) == []


def test_node_state_reads_flags_and_reason_without_the_stamp() -> None:
    line = (
        "NodeName=gpu1 Arch=x86_64 CoresPerSocket=56 State=IDLE+DRAIN ThreadsPerCore=2 "
        "Partitions=gpu Reason=gpu-health: gpu_count: 7 of 8 GPUs [slurm@2026-12-01T10:00:00]"
    )
    assert H.node_state(line) == (["IDLE", "DRAIN"], "gpu-health: gpu_count: 7 of 8 GPUs")
    assert H.node_state("NodeName=gpu1 State=MIXED* Partitions=gpu") == (["MIXED"], "")
    assert H.node_state("Node gpu9 not found") == ([], "")


@pytest.mark.parametrize(
    "flags,reason,problems,want",
    [
        (["IDLE"], "", [], ("none", "healthy")),
        (["IDLE"], "", ["xid: Xid 79 on PCI:0000:2d:00"], ("drain", "gpu-health: xid: Xid 79 on PCI:0000:2d:00")),
        (["MIXED"], "", ["a", "b", "c"], ("drain", "gpu-health: a (+2 more)")),
        (["IDLE", "DRAIN"], "gpu-health: a", ["a"], ("none", "already drained for this")),
        (["IDLE", "DRAIN"], "gpu-health: a", ["b"], ("drain", "gpu-health: b")),
        (["IDLE", "DRAIN"], "gpu-health: a", [], ("resume", "")),
        (["IDLE", "DRAIN"], "lab-admin-drain", [], ("none", "drained by someone else: left alone")),
        (["IDLE", "DRAIN"], "lab-admin-drain", ["a"], ("none", "drained by someone else: left alone")),
        (["DOWN", "DRAIN"], "hw repair", ["a"], ("none", "drained by someone else: left alone")),
    ],
)
def test_decide(flags: list[str], reason: str, problems: list[str], want: tuple[str, str]) -> None:
    assert H.decide(flags, reason, problems) == want


class FakeNode:
    """Answers the commands the checks run, by argv[0] and the first argument."""

    def __init__(
        self,
        smi: tuple[int, str],
        munge: int = 0,
        imex: int = 0,
        kernel: str = "",
        node: str = "",
        stat: tuple[int, str] = (0, "nfs\n"),
    ) -> None:
        self.smi, self.munge, self.imex, self.kernel, self.stat = smi, munge, imex, kernel, stat
        self.node = node or "NodeName=gpu1 State=IDLE Partitions=gpu"
        self.calls: list[list[str]] = []

    def __call__(self, argv, timeout):
        argv = list(argv)
        self.calls.append(argv)
        assert timeout == 10
        if argv[0] == "nvidia-smi":
            return self.smi
        if argv[0] == "systemctl":
            return (self.imex if argv[-1] == "nvidia-imex" else self.munge), ""
        if argv[0] == "journalctl":
            return 0, self.kernel
        if argv[:2] == ["scontrol", "show"]:
            return 0, self.node
        if argv[:2] == ["scontrol", "update"]:
            return 0, ""
        if argv[:3] == ["stat", "--file-system", "--format=%T"]:
            return self.stat
        raise AssertionError(argv)


def _settings(**over) -> dict:
    settings = dict(H.DEFAULTS, node="gpu1", gpu_count=2, fabric="fabricmanager")
    settings.update(over)
    return settings


def test_run_checks_healthy_node() -> None:
    node = FakeNode((0, _q()))
    assert H.run_checks(_settings(), node) == []
    assert [c[0] for c in node.calls] == ["nvidia-smi", "journalctl", "systemctl"]


def test_run_checks_every_fault() -> None:
    one_gpu = _q().split("GPU 00000000:2D:00.0", maxsplit=1)[0]
    node = FakeNode((0, one_gpu), munge=3, kernel=KERNEL_LOG)
    assert H.run_checks(_settings(gpu_count=8, mounts=["/nonexistent-mount"]), node) == [
        "gpu_count: 1 of 8 GPUs",
        "xid: Xid 79 on PCI:0000:2d:00, Xid 48 on PCI:0000:0f:00",
        "mounts: /nonexistent-mount is not mounted",
        "munge: munge is not running",
    ]


def test_a_missing_gpu_is_the_fabric_checks_only_when_the_count_check_is_off() -> None:
    one_gpu = _q().split("GPU 00000000:2D:00.0", maxsplit=1)[0]
    quiet = {"xid": False, "munge": False}
    assert H.run_checks(_settings(checks=quiet), FakeNode((0, one_gpu))) == ["gpu_count: 1 of 2 GPUs"]
    assert H.run_checks(_settings(checks=dict(quiet, gpu_count=False)), FakeNode((0, one_gpu))) == [
        "fabric: fabric state for 1 of 2 GPUs"
    ]


def test_run_checks_smi_failure_and_switches() -> None:
    node = FakeNode((15, "Unable to determine the device handle for GPU0000:2D:00.0: Unknown Error"))
    assert H.run_checks(_settings(), node) == [
        "nvidia_smi: nvidia-smi exit 15: a GPU has fallen off the bus (Unable to determine the device handle "
        "for GPU0000:2D:00.0: Unknown Error)"
    ]
    off = {"nvidia_smi": False, "gpu_count": False, "fabric": False, "xid": False, "munge": False}
    node = FakeNode((15, ""), munge=3, kernel=KERNEL_LOG)
    assert H.run_checks(_settings(checks=off), node) == []
    assert node.calls == []


def test_run_checks_imex_and_kernel_log_file(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text(KERNEL_LOG)
    node = FakeNode((0, _q()), imex=3)
    got = H.run_checks(_settings(fabric="imex", xid_file=str(log), xid_fatal=[13]), node)
    assert got == ["fabric: nvidia-imex is not running", "xid: Xid 13 on PCI:0000:0f:00"]
    got = H.run_checks(_settings(fabric=None, xid_file=str(tmp_path / "missing")), FakeNode((0, _q())))
    assert got == [f"xid: cannot read {tmp_path / 'missing'}: No such file or directory"]


def test_a_scratch_mount_is_judged_only_while_fstab_names_it(tmp_path: Path) -> None:
    fstab = tmp_path / "fstab"
    scratch = {"path": "/nonexistent-scratch/", "writable": True, "if_in_fstab": True}
    settings = _settings(mounts=[scratch], fstab=str(fstab), checks={"xid": False, "munge": False})
    assert H.run_checks(settings, FakeNode((0, _q()))) == []  # no fstab at all
    fstab.write_text("# /nonexistent-scratch is not here yet\nUUID=1 / ext4 defaults 0 1\n")
    assert H.run_checks(settings, FakeNode((0, _q()))) == []
    fstab.write_text("UUID=1 / ext4 defaults 0 1\n/dev/md0 /nonexistent-scratch xfs defaults,nofail 0 2\n")
    assert H.run_checks(settings, FakeNode((0, _q()))) == ["mounts: /nonexistent-scratch/ is not mounted"]
    assert H.fstab_mount_points(str(fstab)) == {"/", "/nonexistent-scratch"}
    assert H.fstab_mount_points(str(tmp_path / "missing")) == set()


# The kernel's mount table as /proc/self/mountinfo prints it (written by hand): /home over NFS
# read-write, /opt/apps read-only, a scratch path with a space, and / itself.
MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:45 / /home rw,relatime shared:20 - nfs 10.0.0.5:/home rw,vers=3,hard,proto=tcp
41 22 0:46 / /opt/apps ro,relatime shared:21 - nfs 10.0.0.5:/apps ro,vers=3,hard
42 22 259:1 / /mnt/local\\040disk rw,noatime shared:22 - xfs /dev/md0 rw
"""


def _mounts(tmp_path: Path, mounts: list, **over) -> dict:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    quiet = {"nvidia_smi": False, "gpu_count": False, "fabric": False, "xid": False, "munge": False}
    return _settings(mounts=mounts, mountinfo=str(info), checks=quiet, **over)


def test_mount_table_reads_the_kernels_table(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    table = H.mount_table(str(info))
    assert sorted(table) == ["/", "/home", "/mnt/local disk", "/opt/apps"]
    assert table["/home"]["fstype"] == "nfs" and "rw" in table["/home"]["options"]
    assert "ro" in table["/opt/apps"]["options"]
    assert H.mount_table(str(tmp_path / "missing")) == {}


def test_mounts_judged_from_the_table_and_a_bounded_stat(tmp_path: Path) -> None:
    """Mounted, answering and read-write where it must be written: judged without touching the mount
    from the check's own process, and without writing a file."""
    node = FakeNode((0, ""))
    mounts = ["/home", {"path": "/opt/apps", "writable": False}, "/mnt/local disk/", "/scratch"]
    problems, unknown = H.check_all(_mounts(tmp_path, mounts), node)
    assert problems == ["mounts: /scratch is not mounted"]
    assert unknown == []
    assert [c[-1] for c in node.calls] == ["/home", "/opt/apps", "/mnt/local disk"]
    read_only = H.check_all(_mounts(tmp_path, [{"path": "/opt/apps", "writable": True}]), FakeNode((0, "")))
    assert read_only == (["mounts: /opt/apps is mounted read-only"], [])
    stale = H.check_all(_mounts(tmp_path, ["/home"]), FakeNode((0, ""), stat=(1, "stat: Stale file handle\n")))
    assert stale == (["mounts: /home cannot be read (stat: Stale file handle)"], [])


def test_a_hung_mount_is_cannot_tell_and_drains_nothing(tmp_path: Path, capsys) -> None:
    """A hard mount whose server is gone blocks whoever touches it: stat gets no answer in time (124).
    That is 'cannot tell', not 'broken': no drain (a slow file server must not drain every node), and
    a node the check drained earlier is not resumed while it lasts. Seen failing on a750660, which
    drained ("is not mounted" or a write error) or hung in os.path.ismount."""
    hung = FakeNode((0, ""), stat=(124, "stat: no answer in 10 s"))
    problems, unknown = H.check_all(_mounts(tmp_path, ["/home"]), hung)
    assert problems == [] and unknown == ["mounts: /home does not answer in 10 s (cannot tell)"]
    assert H.decide(["IDLE"], "", [], unknown) == (
        "none",
        "cannot tell: mounts: /home does not answer in 10 s (cannot tell)",
    )
    assert H.decide(["IDLE", "DRAIN"], "gpu-health: a", [], unknown)[0] == "none"
    assert H.decide(["IDLE"], "", ["xid: Xid 79"], unknown)[0] == "drain"
    config = tmp_path / "health.json"
    config.write_text(
        json.dumps(
            {
                "node": "gpu1",
                "mounts": ["/home"],
                "mountinfo": str(tmp_path / "mountinfo"),
                "checks": {"nvidia_smi": False, "gpu_count": False, "fabric": False, "xid": False, "munge": False},
            }
        )
    )
    assert H.main(["--config", str(config)], hung) == 0
    assert not [c for c in hung.calls if c[:2] == ["scontrol", "update"]]
    assert "gpu-health: gpu1: none (cannot tell: mounts: /home does not answer" in capsys.readouterr().out


def test_a_root_squashed_export_is_never_written(tmp_path: Path, monkeypatch) -> None:
    """root may not write into a root-squashed export: writing a probe file there as root fails with
    EACCES although the mount is fine. The check writes nothing. Seen failing on a750660, which wrote
    .gpu-health.<host> into the mount and drained the node on the EACCES."""
    real_open = open
    writes = []

    def squashed(path, mode="r", *args, **kwargs):
        if any(m in mode for m in "wax+"):
            writes.append(path)
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(H, "open", squashed, raising=False)
    settings = _mounts(tmp_path, ["/"])
    assert H.check_all(settings, FakeNode((0, ""))) == ([], [])
    assert writes == []


def test_run_command_gives_up_on_a_command_that_does_not_answer() -> None:
    rc, out = H.run_command(["sleep", "30"], 0.2)
    assert (rc, out) == (124, "sleep: no answer in 0.2 s")
    assert H.run_command(["no-such-program-oci-gpu"], 1) == (127, "no-such-program-oci-gpu: not found")
    assert H.run_command(["sh", "-c", "echo hi; exit 3"], 5) == (3, "hi\n")


def _config(tmp_path: Path, **over) -> str:
    path = tmp_path / "health.json"
    path.write_text(json.dumps({"node": "gpu1", "gpu_count": 2, "fabric": "fabricmanager", **over}))
    return str(path)


def test_main_drains_with_the_prefix_and_resumes_only_its_own(tmp_path: Path, capsys) -> None:
    sick = FakeNode((0, _q("In Progress", "N/A")))
    assert H.main(["--config", _config(tmp_path)], sick) == 0
    assert sick.calls[-1] == [
        "scontrol",
        "update",
        "NodeName=gpu1",
        "State=DRAIN",
        "Reason=gpu-health: fabric: fabric not ready: GPU 1: In Progress/N/A",
    ]
    assert "gpu1: drain (gpu-health: fabric" in capsys.readouterr().out

    ours = "NodeName=gpu1 State=IDLE+DRAIN Reason=gpu-health: fabric: x [slurm@2026-12-01T10:00:00]"
    healed = FakeNode((0, _q()), node=ours)
    assert H.main(["--config", _config(tmp_path)], healed) == 0
    assert healed.calls[-1] == ["scontrol", "update", "NodeName=gpu1", "State=RESUME"]

    admin = "NodeName=gpu1 State=IDLE+DRAIN Reason=lab-admin-drain [root@2026-12-01T10:00:00]"
    left = FakeNode((0, _q()), node=admin)
    assert H.main(["--config", _config(tmp_path)], left) == 0
    assert not any(c[:2] == ["scontrol", "update"] for c in left.calls)
    assert "drained by someone else" in capsys.readouterr().out

    report = FakeNode((0, _q("In Progress", "N/A")))
    assert H.main(["--config", _config(tmp_path), "--no-drain"], report) == 0
    assert not any(c[:2] == ["scontrol", "update"] for c in report.calls)


def test_main_refuses_unknown_settings(tmp_path: Path, capsys) -> None:
    assert H.main(["--config", _config(tmp_path, gpu_cuont=8)], FakeNode((0, _q()))) == 2
    assert "unknown settings gpu_cuont" in capsys.readouterr().err


def test_runs_as_a_program_with_real_commands(tmp_path: Path) -> None:
    """The file is the installed program: run it with stand-in commands on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls"
    for name, body in {
        "nvidia-smi": "exit 9",
        "journalctl": "exit 0",
        "systemctl": "exit 0",
        "scontrol": f'echo "$*" >> {calls}; [ "$1" = show ] && echo "NodeName=gpu1 State=IDLE"; exit 0',
    }.items():
        stand_in(bindir / name, body)
    run_health([sys.executable, H.__file__, "--config", _config(tmp_path)], bindir)
    assert calls.read_text().splitlines()[-1] == (
        "update NodeName=gpu1 State=DRAIN Reason=gpu-health: nvidia_smi: nvidia-smi exit 9: NVIDIA driver is not loaded"
    )


def test_check_only_exits_1_on_a_failing_check_and_runs_no_scontrol(tmp_path: Path, capsys) -> None:
    """The repair agent's acceptance job runs the checks this way: its exit status is the verdict."""
    sick = FakeNode((0, _q("In Progress", "N/A")))
    assert H.main(["--config", _config(tmp_path), "--check-only"], sick) == 1
    assert not any(c[0] == "scontrol" for c in sick.calls)
    out = capsys.readouterr().out
    assert "gpu1: fabric: fabric not ready: GPU 1: In Progress/N/A" in out and out.rstrip().endswith("gpu1: failed")
    healthy = FakeNode((0, _q()))
    assert H.main(["--config", _config(tmp_path), "--check-only"], healthy) == 0
    assert capsys.readouterr().out.rstrip().endswith("gpu1: passed")
