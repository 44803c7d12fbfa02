# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_node_info: one probe per host (version, live slurm.conf, node record), run by ansible-core."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from . import adhoc
from .test_slurm_plugin_version import GCC, build_plugin

# A slurmd stand-in for the two calls the module makes: -V (version) and -C (layout).
SLURMD = """#!/bin/sh
case "$1" in
  -V) echo "slurm 24.11.5" ;;
  -C) echo "NodeName=gpu1 CPUs=16 Boards=1 SocketsPerBoard=2 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=64000"
      echo "UpTime=0-00:10:00" ;;
  *) exit 2 ;;
esac
"""


def run_module(args: dict, *extra: str) -> dict:
    return adhoc.run_module("slurm_node_info", args, *extra)


@pytest.fixture
def node(tmp_path: Path) -> Path:
    # Only /dev/nvidiaN counts as a GPU (the record tests in test_slurm_nodes.py cover GPUs); these
    # look-alikes must not.
    (tmp_path / "dev").mkdir()
    for name in ("nvidia1", "nvidia0", "nvidiactl"):
        (tmp_path / "dev" / name).write_text("")
    slurmd = tmp_path / "slurmd"
    slurmd.write_text(SLURMD)
    slurmd.chmod(0o755)
    (tmp_path / "slurm.conf").write_text("ClusterName=lab\nNodeName=gpu1 CPUs=16\n")
    return tmp_path


def test_compute_host_probe_reads_version_conf_and_layout(node: Path) -> None:
    result = run_module(
        {
            "name": "gpu1",
            "roles": ["compute"],
            "slurmd_path": str(node / "slurmd"),
            "device_glob": str(node / "dev" / "nvidia*"),
            "gpu_count": 0,
            "conf_paths": [str(node / "absent.conf"), str(node / "slurm.conf")],
            "memory_reserve_mb": 1000,
        }
    )
    assert result.get("failed") is not True, result
    assert result["changed"] is False
    assert result["slurm_version"] == "24.11.5" and result["slurm_version_source"] == "slurmd -V"
    assert result["live_conf"] == "ClusterName=lab\nNodeName=gpu1 CPUs=16\n"
    assert result["live_conf_path"] == str(node / "slurm.conf")
    assert result["record"] == {
        "name": "gpu1",
        "cpus": 16,
        "sockets": 2,
        "cores_per_socket": 4,
        "threads_per_core": 2,
        "real_memory": 63000,
    }


def test_gpu_mismatch_fails_naming_the_node(node: Path) -> None:
    args = {"name": "gpu1", "slurmd_path": str(node / "slurmd"), "device_glob": str(node / "dev" / "nvidia*")}
    result = run_module(dict(args, gpu_count=8))
    assert result["failed"] is True
    assert result["msg"].startswith("node gpu1: slurm_gpu_count promises 8 GPU(s) but the node shows 0 (none)")


def test_compute_host_without_slurmd_fails_but_passes_in_check_mode(node: Path) -> None:
    args = {"name": "gpu1", "slurmd_path": str(node / "no-slurmd"), "device_glob": str(node / "none*")}
    result = run_module(args)
    assert result["failed"] is True and "slurmd is not installed" in result["msg"]
    checked = run_module(args, "--check")
    assert checked.get("failed") is not True, checked
    assert "record" not in checked


@pytest.mark.skipif(shutil.which("slurmctld") is not None, reason="a real slurmctld on this host answers first")
def test_login_host_version_comes_from_the_package_database(node: Path) -> None:
    installed = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "slurm-client"], capture_output=True, text=True, check=False
    )
    if installed.returncode != 0:
        pytest.skip("slurm-client is not installed on this host (tests/setup/apt-packages.txt installs it)")
    result = run_module(_login(node, conf_paths=[str(node / "x")]))
    # Debian versions look like 22.05.8-4+deb12u3: the Slurm version is the part before the '-'.
    assert result["slurm_version"] == installed.stdout.split("-")[0].split(":")[-1]
    assert result["slurm_version_source"] == "dpkg-query"
    assert result["live_conf"] == "" and result["live_conf_path"] == ""
    assert "record" not in result


def test_the_daemons_are_behind_when_the_live_files_differ_from_what_they_applied(node: Path) -> None:
    import hashlib
    import json

    conf = node / "slurm.conf"
    (node / "gres.conf").write_text("AutoDetect=off\n")
    applied = node / "applied.json"
    args = _login(node, conf_paths=[str(conf)], applied_path=str(applied))
    first = run_module(args, "--check")
    want = {
        "cgroup.conf": "",
        "gres.conf": hashlib.sha256(b"AutoDetect=off\n").hexdigest(),
        "slurm.conf": hashlib.sha256(conf.read_bytes()).hexdigest(),
        # the containers' files, absent here
        "oci.conf": "",
        "plugstack.conf": "",
    }
    assert first["conf_sha256"] == want
    # Nothing recorded yet (a cluster set up before the record existed): not behind.
    assert first["applied_sha256"] == {} and first["behind"] is False
    applied.write_text(json.dumps(want))
    assert run_module(args, "--check")["behind"] is False
    # A run wrote slurm.conf and stopped before its restart: the record is older than the file.
    conf.write_text("ClusterName=lab\nNodeName=gpu1 CPUs=32\n")
    later = run_module(args, "--check")
    assert later["behind"] is True and later["applied_sha256"] == want
    applied.write_text("not json")
    assert run_module(args, "--check")["behind"] is False
    # oci.conf written (containers turned on) but not yet applied: behind; recorded: not.
    conf.write_text("ClusterName=lab\n")
    (conf.parent / "oci.conf").write_text('RunTimeRun="crun run %b"\n')
    record = {k: v for k, v in want.items() if k not in ("oci.conf", "plugstack.conf")}
    record["slurm.conf"] = hashlib.sha256(b"ClusterName=lab\n").hexdigest()
    applied.write_text(json.dumps(record))
    assert run_module(args, "--check")["behind"] is False  # a file the record does not name: not behind
    record["oci.conf"] = hashlib.sha256(b'RunTimeRun="crun run %b"\n').hexdigest()
    applied.write_text(json.dumps(dict(record, **{"oci.conf": "0" * 64})))
    assert run_module(args, "--check")["behind"] is True
    applied.write_text(json.dumps(record))
    assert run_module(args, "--check")["behind"] is False


# --------------------------------------------------------------------------- topology (issue 16)

ISLAND = "ocid1.computehpcisland.oc1.iad.aaaaaaaaisland000001"
LOCAL = "ocid1.computelocalblock.oc1.iad.aaaaaaaalocblk000001"


@pytest.fixture
def imds() -> Any:
    """A real HTTP server answering /opc/v2/host/ as OCI's IMDS does, only with its header."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    doc = {
        "id": "host-1",
        "rackId": "9" * 64,
        "rdmaTopologyData": {"customerHPCIslandId": ISLAND, "customerLocalBlock": LOCAL},
    }
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the http.server API names it
            seen.append(self.headers.get("Authorization", ""))
            ok = self.path == "/opc/v2/host/" and self.headers.get("Authorization") == "Bearer Oracle"
            body = json.dumps(doc if ok else {"code": "NotAuthenticated"}).encode()
            self.send_response(200 if ok else 401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/opc/v2/host/", seen
    server.shutdown()
    server.server_close()


def _compute(node: Path, **extra: Any) -> dict:
    return {
        "name": "gpu1",
        "roles": ["compute"],
        "slurmd_path": str(node / "slurmd"),
        "device_glob": str(node / "dev" / "nvidia*"),
        "gpu_count": 0,
        "conf_paths": [str(node / "slurm.conf")],
        **extra,
    }


def _login(node: Path, **extra: Any) -> dict:
    """A login host without slurmd: its version comes from the package database."""
    return {"name": "login1", "roles": ["login"], "slurmd_path": str(node / "no-slurmd"), **extra}


def test_the_node_place_comes_from_imds_and_must_agree_with_the_inventory(node: Path, imds: Any) -> None:
    url, seen = imds
    out = run_module(_compute(node, topology_imds_url=url, topology_expected={"hpc_island_id": ISLAND}))
    assert out.get("failed") is not True, out
    assert out["topology"] == {"hpc_island_id": ISLAND, "local_block_id": LOCAL, "rack_id": "9" * 64}
    assert out["topology_source"] == "imds+inventory" and out["imds_error"] == "" and seen == ["Bearer Oracle"]
    other = "ocid1.computelocalblock.oc1.iad.aaaaaaaalocblk000002"
    bad = run_module(_compute(node, topology_imds_url=url, topology_expected={"local_block_id": other}))
    assert bad["failed"] is True
    assert bad["msg"] == (
        "node gpu1: the inventory and the node's IMDS place it differently in the RDMA fabric: "
        f"oci_local_block_id is {other} in the inventory, but IMDS (rdmaTopologyData.customerLocalBlock) "
        f"says {LOCAL}. Refresh the inventory cache, or fix the hostvars that set these ids"
    )


def test_off_oci_the_inventory_places_the_node_or_a_required_topology_fails_by_name(node: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/opc/v2/host/"
    args = _compute(node, topology_imds_url=url, topology_timeout=1)
    soft = run_module(args)
    assert soft.get("failed") is not True and soft["topology"] == {} and soft["topology_source"] == "none"
    assert f"cannot read OCI's instance metadata at {url} within 1 s" in soft["imds_error"]
    placed = run_module({**args, "topology_expected": {"local_block_id": LOCAL, "rack_id": ""}})
    assert placed["topology"] == {"local_block_id": LOCAL} and placed["topology_source"] == "inventory"
    hard = run_module({**args, "topology_required": True})
    assert hard["failed"] is True and hard["msg"].startswith(f"node gpu1: cannot read OCI's instance metadata at {url}")
    assert "set slurm_topology: none" in hard["msg"]
    # a CPU shape is in no RDMA fabric: IMDS is not read, nothing is required
    cpu = run_module({**args, "topology_required": True, "shape": "VM.Standard.E5.Flex"})
    assert cpu.get("failed") is not True and (cpu["topology"], cpu["imds_error"]) == ({}, "")


def test_topology_plugins_and_live_topology_files_are_reported(node: Path) -> None:
    import json

    plugins = node / "plugins"
    plugins.mkdir()
    for name in ("topology_tree.so", "topology_block.so", "topology_default.so", "select_cons_tres.so"):
        (plugins / name).write_text("")
    (node / "topology.conf").write_text("SwitchName=s1 Nodes=gpu1\n")
    applied = node / "applied.json"
    args = _login(
        node,
        conf_paths=[str(node / "slurm.conf")],
        plugin_dirs=[str(node / "absent"), str(plugins)],
        applied_path=str(applied),
    )
    out = run_module(args, "--check")
    assert out["topology_plugins"] == ["block", "default", "tree"]
    assert out["live_topology"] == {"topology.conf": "SwitchName=s1 Nodes=gpu1\n"}
    # a record that does not name topology.conf (the site's own, or a record from before) is not behind
    applied.write_text(json.dumps({k: v for k, v in out["conf_sha256"].items() if k != "topology.conf"}))
    assert run_module(args, "--check")["behind"] is False
    applied.write_text(json.dumps(out["conf_sha256"]))
    (node / "topology.conf").write_text("SwitchName=s1 Nodes=gpu[1-2]\n")
    assert run_module(args, "--check")["behind"] is True


def test_user_namespace_limits_are_read_for_rootless_containers(node: Path) -> None:
    sysctl = node / "sys"
    (sysctl / "user").mkdir(parents=True)
    (sysctl / "user" / "max_user_namespaces").write_text("15000\n")
    args = _login(node, sysctl_dir=str(sysctl))
    out = run_module(args, "--check")
    assert out["userns_limits"] == {"user.max_user_namespaces": 15000, "user.max_mnt_namespaces": None}
    # this machine's own kernel has both settings
    real = run_module({**args, "sysctl_dir": "/proc/sys"}, "--check")["userns_limits"]
    assert sorted(real) == ["user.max_mnt_namespaces", "user.max_user_namespaces"]
    assert all(isinstance(v, int) for v in real.values()), real


def test_the_slurm_and_munge_accounts_and_the_clock_are_read(node: Path) -> None:
    """Issue 43 items 3 and 6: the ids the plan compares across hosts, and this host's clock against the
    control node's time as the task left it (here: the same machine, an hour ahead on purpose)."""
    import pwd
    import time

    root = pwd.getpwnam("root")
    sent = time.time() - 3600
    result = run_module(
        {
            "name": "login1",
            "roles": ["login"],
            "slurmd_path": str(node / "slurmd"),
            "conf_paths": [str(node / "slurm.conf")],
            "accounts": ["root", "no-such-user-oci-gpu"],
            "control_time": sent,
        }
    )
    assert result.get("failed") is not True, result
    assert result["accounts"] == {"root": {"uid": root.pw_uid, "gid": root.pw_gid}, "no-such-user-oci-gpu": None}
    assert 3600 <= result["clock_skew"] < 3600 + 120
    assert (
        run_module({"name": "login1", "roles": ["login"], "conf_paths": [str(node / "slurm.conf")]})["clock_skew"]
        is None
    )


def test_slurmdbd_is_behind_when_its_file_differs_from_the_copy_it_runs_with(node: Path) -> None:
    """Issue 43 item 2: a rotation stopped after slurmdbd.conf was written and before slurmdbd restarted. Only
    whether they differ comes back: never a checksum of a file holding the database password."""
    live, copy = node / "slurmdbd.conf", node / "applied" / "slurmdbd-applied.conf"
    args = {"name": "ctl", "roles": ["controller", "dbd"], "slurmd_path": str(node / "slurmd"),
            "conf_paths": [str(node / "slurm.conf")], "dbd_conf": [str(live), str(copy)]}  # fmt: skip
    live.write_text("StoragePass=old-secret\n")
    first = run_module(args)
    assert first["dbd_behind"] is False  # no copy kept yet (a cluster from before the copy): not behind
    copy.parent.mkdir()
    copy.write_text("StoragePass=old-secret\n")
    copy.chmod(0o644)
    same = run_module(args)
    assert same["dbd_behind"] is False
    assert same["dbd_copy_current"] is False  # same content, but readable by all
    copy.chmod(0o600)
    assert run_module(args)["dbd_copy_current"] is (os.getuid() == 0)  # as the role keeps it (root's, 0600)
    live.write_text("StoragePass=new-secret\n")  # the interrupted run wrote the file
    later = run_module(args)
    assert later["dbd_behind"] is True and later["dbd_copy_current"] is False
    assert "secret" not in str(later) and "StoragePass" not in str(later)
    assert run_module(dict(args, dbd_conf=[]))["dbd_behind"] is False


def test_pam_modules_are_found_where_the_distribution_installs_them(node: Path) -> None:
    args = {"name": "login1", "roles": ["login"], "slurmd_path": str(node / "slurmd")}
    result = run_module({**args, "pam_modules": ["pam_unix.so", "pam_no_such_module.so"]}, "--check")
    assert result.get("failed") is not True, result
    found = result["pam_modules"]["pam_unix.so"]
    # pam_unix is part of every Debian and EL system (libpam-modules, pam).
    assert found.endswith("/security/pam_unix.so") and Path(found).is_file()
    assert result["pam_modules"]["pam_no_such_module.so"] == ""
    bare = run_module(args, "--check")
    assert (bare["pam_modules"], bare["pam_services"]) == ({}, {})
    (node / "pam.d").mkdir()
    (node / "pam.d" / "sshd").write_text("@include common-account\n")
    read = run_module({**args, "pam_services": ["sshd", "nosuch"], "pam_dir": str(node / "pam.d")}, "--check")
    assert read["pam_services"] == {"sshd": "@include common-account\n", "nosuch": None}


@pytest.mark.skipif(GCC is None, reason="gcc is missing (tests/setup/apt-packages.txt installs it)")
def test_pyxis_is_read_only_when_asked_and_an_unreadable_file_is_named(node: Path) -> None:
    """The plan refuses a pyxis of another release (slurm/_node_files.pyxis_problems) from what this read."""
    args = {"name": "login1", "roles": ["login"], "slurmd_path": str(node / "slurmd")}
    plugin = build_plugin(node / "plugins", 22, 5)
    got = run_module({**args, "pyxis_plugin": str(plugin)}, "--check")
    assert got["pyxis"] == {"path": str(plugin), "found": True, "version": "22.05.0"}
    assert run_module(args, "--check")["pyxis"] == {}
    text = node / "not-elf.so"
    text.write_text("#!/bin/sh\n" * 10)
    bad = run_module({**args, "pyxis_plugin": str(text)}, "--check")
    assert bad.get("failed") is not True, bad
    assert (bad["pyxis"]["found"], bad["pyxis"]["version"]) == (True, "")
    assert bad["pyxis"]["error"].startswith(f"cannot read {text}: not an ELF file")
    missing = run_module({**args, "pyxis_plugin": str(node / "none.so")}, "--check")
    assert missing["pyxis"] == {"path": str(node / "none.so"), "found": False, "version": ""}
