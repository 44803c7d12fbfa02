# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lustre_client role through real ansible-playbook on this host (connection local).

This machine's kernel has no Lustre and it runs Debian, which ships no client: the role's refusal
(and its skip) are tested for real here, in check mode. The files the role writes are tested with
lustre_client_render_root (a directory tree instead of /), including an OCID resolved through the
real oci SDK against the OCI API emulator. Installing a client, loading LNet and mounting are not
tested anywhere (no Lustre-capable kernel, no Lustre server).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.ansible_harness import BIN, ansible_env, recap_counts, run_playbook  # noqa: E402
from tests.oci_emulator import generate  # noqa: E402
from tests.oci_emulator.testing import running_emulator  # noqa: E402

PLAY = [
    {
        "name": "Lustre client",
        "hosts": "all",
        "gather_facts": True,
        "roles": [{"role": "oci_gpu.cluster.lustre_client"}],
    }
]
OPTS = "defaults,_netdev,nofail,x-systemd.automount,x-systemd.mount-timeout=60"


def play(work: Path, extra: dict[str, Any], *args: str) -> tuple[int, str, dict[str, int]]:
    env = ansible_env(
        ANSIBLE_LOCAL_TEMP=str(work / ".tmp"),
        ANSIBLE_HOME=str(work / ".ansible"),
        PATH=f"{BIN}:{os.environ.get('PATH', '')}",
    )
    res = run_playbook(work, PLAY, extra, *args, host="testhost", env=env)
    out = res.stdout + res.stderr
    return res.returncode, out, recap_counts(out, "testhost")


def default_interface() -> str:
    res = subprocess.run(["ip", "-4", "route", "show", "default"], capture_output=True, text=True, check=False)
    match = re.search(r"\bdev (\S+)", res.stdout)
    if not match:
        pytest.skip("this host has no default IPv4 route, so the role's default LNet interface is empty")
    return match.group(1)


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running_emulator(generate(seed=7, hosts=4, compartments=1, regions=1), tmp_path_factory.mktemp("lemu")) as r:
        yield r


def test_render_root_gets_lnet_options_and_fstab_entries_and_a_rerun_changes_nothing(emu: Any, tmp_path: Path) -> None:
    region = emu.tenancy.home_region
    lfs = emu.tenancy.data["regions"][region]["lustreFileSystems"][0]
    root = tmp_path / "root"
    extra = {
        "lustre_client_render_root": str(root),
        "lustre_client_mounts": [
            {"path": "/mnt/lustre", "mgs_nid": "10.0.0.20", "fsname": "lfs1"},
            {"path": "/mnt/oci", "lustre_file_system_id": lfs["id"], "options": ["defaults", "_netdev", "ro"]},
        ],
        "lustre_client_oci_api": {"config_file": str(emu.creds.config_file), "service_endpoint": emu.endpoints[region]},
    }
    rc, out, counts = play(tmp_path, extra, "--diff")
    assert rc == 0, out
    assert counts["changed"] >= 2, out
    conf = (root / "etc/modprobe.d/lustre.conf").read_text().splitlines()
    assert conf[-1] == f"options lnet networks=tcp0({default_interface()})"
    assert conf[0].startswith("#")
    fstab = [
        line.split() for line in (root / "etc/fstab").read_text().splitlines() if line and not line.startswith("#")
    ]
    mgs = f"{lfs['managementServiceAddress']}@{lfs['lnet']}"
    assert fstab == [
        ["10.0.0.20@tcp:/lfs1", "/mnt/lustre", "lustre", OPTS, "0", "0"],
        [f"{mgs}:/{lfs['fileSystemName']}", "/mnt/oci", "lustre", "defaults,_netdev,ro", "0", "0"],
    ]
    assert not Path("/mnt/oci").exists() or not os.path.ismount("/mnt/oci")

    rc, out, counts = play(tmp_path, extra)
    assert rc == 0 and counts["changed"] == 0, out
    rc, out, counts = play(tmp_path, extra, "--check", "--diff")
    assert rc == 0 and counts["changed"] == 0, out

    # o2ib over an explicit interface; the fstab entry removed from the render root only.
    extra["lustre_client_lnet_network"] = "o2ib0"
    extra["lustre_client_lnet_interface"] = "rdma0"
    extra["lustre_client_mounts"][1]["state"] = "absent"
    rc, out, counts = play(tmp_path, extra)
    assert rc == 0, out
    assert (root / "etc/modprobe.d/lustre.conf").read_text().splitlines()[-1] == "options lnet networks=o2ib0(rdma0)"
    assert "/mnt/oci" not in (root / "etc/fstab").read_text()


def test_debian_without_a_client_is_refused_before_any_change(tmp_path: Path) -> None:
    if Path("/etc/debian_version").exists() is False or Path("/etc/lsb-release").exists():
        pytest.skip("this refusal is for Debian hosts (Debian ships no Lustre client)")
    modinfo = shutil.which("modinfo", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if Path("/sys/module/lustre").exists() or (
        modinfo and subprocess.run([modinfo, "lustre"], capture_output=True, check=False).returncode == 0
    ):
        pytest.skip("this host's kernel has a lustre module")
    mounts = [{"path": "/mnt/lustre", "mgs_nid": "10.0.0.20@tcp", "fsname": "lfs1"}]
    rc, out, counts = play(tmp_path, {"lustre_client_mounts": mounts}, "--check")
    assert rc != 0
    assert counts["changed"] == 0, out
    assert f"with kernel {platform.release()}, for which no Lustre client is available" in out, out
    assert "host testhost runs Debian" in out
    assert "Debian ships no Lustre client" in out

    rc, out, counts = play(
        tmp_path, {"lustre_client_mounts": mounts, "lustre_client_skip_unsupported": True}, "--check"
    )
    assert rc == 0, out
    assert counts["changed"] == 0, out
    assert "WARNING: lustre_client: host testhost runs Debian" in out
    assert "Skipped (lustre_client_skip_unsupported: true)" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"lustre_client_mounts": [{"path": "/mnt/x", "mgs": "10.0.0.1", "fsname": "a"}]}, "mgs"),
        ({"lustre_client_mounts": [{"path": "/mnt/x", "mgs_nid": "10.0.0.1", "fsname": "a", "state": "up"}]}, "state"),
        ({"lustre_client_lnet_network": "ethernet"}, 'lustre_client_lnet_network is "ethernet"'),
        (
            {"lustre_client_mounts": [{"path": "/mnt/x", "mgs_nid": "10.0.0.1", "fsname": "much-too-long"}]},
            "lustre_client_mounts[0] on host testhost: fsname is 'much-too-long'",
        ),
        (
            {"lustre_client_mounts": [{"path": "/mnt/x", "mgs_nid": "10.0.0.1", "lustre_file_system_id": "ocid1.x"}]},
            "gives both mgs_nid (10.0.0.1) and lustre_file_system_id (ocid1.x)",
        ),
        (
            {"lustre_client_mounts": [{"path": "relative", "mgs_nid": "10.0.0.1", "fsname": "a"}]},
            "lustre_client_mounts[0] on host testhost: path is 'relative'",
        ),
    ],
    ids=["unknown-key", "bad-state", "bad-network", "long-fsname", "nid-and-ocid", "relative-path"],
)
def test_bad_input_is_refused_naming_key_and_value(tmp_path: Path, extra: dict[str, Any], message: str) -> None:
    extra = {"lustre_client_render_root": str(tmp_path / "root"), **extra}
    rc, out, counts = play(tmp_path, extra)
    assert rc != 0
    assert counts.get("changed", 0) == 0, out
    assert message in out, out
    assert not (tmp_path / "root").exists()
