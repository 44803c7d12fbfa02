# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""oci-gpu-lab: podman containers booting systemd that stand in for OCI GPU nodes.

``up`` starts privileged systemd containers on a network the lab owns, gives GPU shapes fake
``/dev/nvidia*`` devices and an ``nvidia-smi`` stand-in, registers every node with the shared IMDS
emulator and writes a static Ansible inventory. ``attach`` does the same for containers someone
else created (molecule). ``down`` removes exactly what ``up`` created. State lives in
``$OCI_GPU_LAB_STATE_DIR`` (default /var/lib/oci-gpu-lab), one directory per lab.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.util
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import images  # noqa: E402
import imds  # noqa: E402

STATE_DIR = Path(os.environ.get("OCI_GPU_LAB_STATE_DIR", "/var/lib/oci-gpu-lab"))
LABEL = "oci_gpu_lab"
NODE_LABEL = "oci_gpu_lab.node"
NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
NODE_RE = re.compile(r"^[a-z][a-z0-9-]{0,40}$")
# A node's RDMA local block in the lab (name:SHAPE@BLOCK): nodes with the same label share one.
BLOCK_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,30}$")
SLURM_ROLES = ("controller", "dbd", "compute", "login")
# "nfs": the node serves the lab's NFS exports with nfs-ganesha (the stand-in for an OCI File Storage
# mount target); it carries no Slurm role.
ROLES = (*SLURM_ROLES, "nfs")
STORAGE_MOUNT = "/var/lib/oci-gpu-lab/storage"
DEFAULT_EXPORTS = ("home", "apps")
# The image's admin user (as on OCI's own images): key login, sudo without a password.
SSH_ADMIN = "opc"
AUTHORIZED_KEYS_DIR = "/etc/ssh/authorized_keys"
SSHD_KEYS_CONF = "/etc/ssh/sshd_config.d/60-oci-gpu-lab-keys.conf"
NVIDIA_MAJOR = 195
NVIDIACTL_MINOR = 255
BOOT_TIMEOUT = 90.0

# nvidia-smi product names and memory (MiB) as the real tool prints them, by (gres type, GB per GPU).
GPU_PRODUCTS: dict[tuple[str, int], tuple[str, int]] = {
    ("h100", 80): ("NVIDIA H100 80GB HBM3", 81559),
    ("h200", 141): ("NVIDIA H200", 143771),
    ("a100", 80): ("NVIDIA A100-SXM4-80GB", 81920),
    ("a100", 40): ("NVIDIA A100-SXM4-40GB", 40960),
    ("a10", 24): ("NVIDIA A10", 23028),
    ("l40s", 48): ("NVIDIA L40S", 46068),
    ("b200", 180): ("NVIDIA B200", 183359),
    ("v100", 16): ("Tesla V100-SXM2-16GB", 16384),
    ("p100", 16): ("Tesla P100-SXM2-16GB", 16384),
}
PCI_BUSES = ("0F", "2D", "44", "5B", "89", "A8", "C0", "D8")


class LabError(SystemExit):
    """A failure explained in plain words (exit status 1)."""

    def __init__(self, msg: str) -> None:
        super().__init__(f"lab: {msg}")


# --------------------------------------------------------------------------- shapes


def _load_shapes() -> ModuleType:
    path = REPO / "plugins" / "module_utils" / "gpu" / "_shapes.py"
    spec = importlib.util.spec_from_file_location("oci_gpu_lab_shapes", path)
    if spec is None or spec.loader is None:
        raise LabError(f"cannot load the collection's shape table {path}")
    mod = importlib.util.module_from_spec(spec)
    # Registered before it runs: its dataclass looks its module up by name.
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


SHAPES = _load_shapes()


def shape_gpus(shape: str) -> int:
    """How many fake NVIDIA devices a node of ``shape`` gets; refuses unknown and non-NVIDIA GPU shapes."""
    info = SHAPES.shape_info(shape)
    if info is None:
        raise LabError(f"unknown shape {shape!r}; the lab knows the shapes in plugins/module_utils/gpu/_shapes.py")
    count = int(SHAPES.gpu_count(shape))
    if count and info.get("gpu_vendor") != "nvidia":
        raise LabError(f"shape {shape!r} has {info.get('gpu_vendor')} GPUs; the lab only fakes NVIDIA devices")
    return count


def gpu_inventory(lab: str, node: str, shape: str) -> list[dict[str, Any]]:
    """The GPUs the nvidia-smi stand-in reports for a node (deterministic UUIDs and serials)."""
    info = SHAPES.shape_info(shape) or {}
    count = shape_gpus(shape)
    model = str(info.get("gpu_model") or "gpu")
    mem_gb = int(info.get("gpu_memory_per_gpu_gb") or 0)
    name, mib = GPU_PRODUCTS.get((model, mem_gb), (f"{info.get('gpu_description') or 'NVIDIA GPU'}", mem_gb * 1024))
    out = []
    for i in range(count):
        h = hashlib.sha256(f"{lab}/{node}/gpu{i}".encode()).hexdigest()
        out.append(
            {
                "index": i,
                "name": name,
                "uuid": f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}",
                "serial": str(int(h[32:44], 16) % 10**13).zfill(13),
                "pci_bus_id": f"00000000:{PCI_BUSES[i % len(PCI_BUSES)]}:00.0"
                if i < len(PCI_BUSES)
                else f"00000000:{0x10 + i:02X}:00.0",
                "memory_mib": mib,
            }
        )
    return out


def default_roles(node: str, shape: str) -> list[str]:
    """Slurm roles by shape and name (its last '-' part, so molecule's 'slurm-trixie-ctl' is a controller)."""
    if shape_gpus(shape):
        return ["compute"]
    node = node.rsplit("-", 1)[-1]
    if node.startswith(("ctl", "controller", "head", "slurmctld")):
        return ["controller", "dbd"]
    if node.startswith("login"):
        return ["login"]
    if node.startswith(("dbd", "db")):
        return ["dbd"]
    if node.startswith(("nfs", "storage", "fss")):
        return ["nfs"]
    return ["compute"]


def parse_exports(spec: str | None) -> list[str]:
    """``home,apps`` -> ["home", "apps"]: the NFS node's exports (/home, /apps)."""
    names = [e.strip().strip("/") for e in (spec or ",".join(DEFAULT_EXPORTS)).split(",") if e.strip().strip("/")]
    for e in names:
        if not NODE_RE.match(e):
            raise LabError(f"--nfs-exports entry {e!r}: use lower-case letters, digits and '-' (one path level)")
    return names


def parse_block(name: str, shape: str, block: str) -> str:
    """The local block label of ``name:SHAPE@BLOCK``; only RDMA GPU shapes sit in a local block."""
    if not BLOCK_RE.match(block):
        raise LabError(f"node {name!r}: block {block!r}: use lower-case letters, digits and '-' (e.g. b0)")
    info = SHAPES.shape_info(shape) or {}
    if not (shape.startswith("BM.") and info.get("gpu_count") and info.get("rdma_nic_count")):
        raise LabError(
            f"node {name!r}: {shape} has no RDMA fabric, so no local block (@{block}); only bare-metal GPU shapes do"
        )
    return block


def parse_nodes(spec: str, roles_spec: str | None = None) -> list[dict[str, Any]]:
    """``ctl:VM.Standard.E5.Flex,gpu1:BM.GPU.H100.8@b0`` (+ ``ctl=controller+dbd,...``) -> node dicts.

    ``@BLOCK`` places a GPU node in the lab's RDMA local block of that label (nodes with one label
    share it); without it every two GPU nodes, in order, share one.
    """
    roles: dict[str, list[str]] = {}
    for item in filter(None, (roles_spec or "").split(",")):
        node, sep, value = item.partition("=")
        wanted = [r for r in value.split("+") if r and r != "none"]
        bad = [r for r in wanted if r not in ROLES]
        if not sep or not value or bad:
            raise LabError(f"--roles entry {item!r}: write node=role[+role] (roles: {', '.join(ROLES)}) or node=none")
        roles[node] = wanted
    nodes: list[dict[str, Any]] = []
    for item in filter(None, spec.split(",")):
        name, sep, shape = item.partition(":")
        shape, at, block = shape.partition("@")
        if not sep or not shape:
            raise LabError(f"--nodes entry {item!r}: write name:SHAPE[@BLOCK], e.g. gpu1:BM.GPU.H100.8@b0")
        if not NODE_RE.match(name):
            raise LabError(f"node name {name!r}: use lower-case letters, digits and '-', starting with a letter")
        if any(n["name"] == name for n in nodes):
            raise LabError(f"node name {name!r} is given twice")
        node = {"name": name, "shape": shape, "gpus": shape_gpus(shape), "roles": roles.pop(name, None)}
        if at:
            node["block"] = parse_block(name, shape, block)
        nodes.append(node)
    if not nodes:
        raise LabError("--nodes is empty")
    if roles:
        raise LabError(f"--roles names nodes not in --nodes: {', '.join(sorted(roles))}")
    for n in nodes:
        if n["roles"] is None:
            n["roles"] = default_roles(n["name"], n["shape"])
    return nodes


# --------------------------------------------------------------------------- helpers


def podman(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(["podman", *args], input=stdin, capture_output=True, text=True, check=False)
    if check and res.returncode != 0:
        err = "\n".join(line for line in res.stderr.splitlines() if "failed to connect to syslog" not in line)
        raise LabError(f"podman {' '.join(args[:3])} ... failed: {err.strip()}")
    return res


def lab_dir(name: str) -> Path:
    return STATE_DIR / "labs" / name


@contextlib.contextmanager
def state_lock() -> Iterator[None]:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / "lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_lab(name: str) -> dict[str, Any] | None:
    path = lab_dir(name) / "lab.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def write_lab(lab: dict[str, Any]) -> None:
    d = lab_dir(lab["name"])
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / "lab.json.tmp"
    tmp.write_text(json.dumps(lab, indent=2, sort_keys=True) + "\n")
    tmp.replace(d / "lab.json")


def all_labs() -> list[str]:
    root = STATE_DIR / "labs"
    return sorted(p.name for p in root.iterdir() if (p / "lab.json").is_file()) if root.is_dir() else []


def check_host() -> None:
    """Fail early, in plain words, when the host lacks what host_prepare.sh sets up."""
    if os.geteuid() != 0:
        raise LabError("run as root: the lab uses rootful podman (privileged systemd containers, device nodes)")
    for tool in ("podman", "ip"):
        if shutil.which(tool) is None:
            raise LabError(f"'{tool}' is not installed; run tests/lab/host_prepare.sh (or: make lab-prepare)")
    unified = Path("/sys/fs/cgroup/unified/cgroup.controllers")
    if unified.is_file() and unified.read_text().strip() and Path("/sys/fs/cgroup/devices").is_dir():
        raise LabError(
            f"cgroup controllers {unified.read_text().strip()!r} sit on cgroup2 while cgroup v1 is in use; "
            "crun refuses that layout. Run tests/lab/host_prepare.sh (it mounts them as v1 hierarchies)."
        )


# --------------------------------------------------------------------------- node setup

# Runs inside a node with its python3: files and device nodes from the JSON on stdin.
NODE_SETUP = r"""
import json, os, stat, subprocess, sys
spec = json.load(sys.stdin)
for cmd in spec.get("pre_commands", []):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
for path, (mode, text) in spec["files"].items():
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)
    os.chmod(path, int(mode, 8))
for dev in spec["remove_devices"]:
    if os.path.exists(dev):
        os.unlink(dev)
for path, major, minor in spec["devices"]:
    try:
        st = os.stat(path)
        if stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == major and os.minor(st.st_rdev) == minor:
            continue
        os.unlink(path)
    except FileNotFoundError:
        pass
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    os.chmod(path, 0o666)
for cmd in spec.get("post_commands", []):
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stdout[-2000:]}{res.stderr[-2000:]}")
"""

# The NFS server of a lab node with the "nfs" role: nfs-ganesha (userspace, so it runs where the
# kernel has no NFS server) exporting STORAGE_MOUNT/nfs/<name> as /<name>, NFSv3 over TCP like OCI
# File Storage. The VFS backend needs file handles, which overlayfs lacks: the exports live on the
# lab's storage volume (a podman volume on the host's filesystem).
GANESHA_CONF = """# Written by tests/lab/lab (test only): the lab's stand-in for an OCI File Storage mount target.
NFS_CORE_PARAM {{
    Protocols = 3, 4;
    mount_path_pseudo = true;
    # A container may not set PR_SET_IO_FLUSHER.
    allow_set_io_flusher_fail = true;
}}
EXPORT_DEFAULTS {{
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Transports = TCP;
}}
{exports}
"""
GANESHA_EXPORT = """EXPORT {{
    Export_Id = {id};
    Path = {path};
    Pseudo = /{name};
    Protocols = 3, 4;
    FSAL {{ Name = VFS; }}
}}"""
# mount.nfs paths by suite (bookworm's nfs-common ships /sbin/mount.nfs, trixie's /usr/sbin/mount.nfs):
# divert both, so the package installs its helper aside and the stand-in stays.
MOUNT_NFS_PATHS = ("/sbin/mount.nfs", "/usr/sbin/mount.nfs")


def ganesha_conf(exports: list[str]) -> str:
    blocks = [
        GANESHA_EXPORT.format(id=i, path=f"{STORAGE_MOUNT}/nfs/{name}", name=name)
        for i, name in enumerate(exports, start=1)
    ]
    return GANESHA_CONF.format(exports="\n".join(blocks))


# Wait (in the node) until the NFS server answers on 2049, at most 30 s.
WAIT_NFS = (
    "import socket, sys, time\n"
    "end = time.monotonic() + 30\n"
    "while time.monotonic() < end:\n"
    "    try:\n"
    "        socket.create_connection(('127.0.0.1', 2049), timeout=1).close(); sys.exit(0)\n"
    "    except OSError:\n"
    "        time.sleep(0.3)\n"
    "sys.exit('nfs-ganesha does not answer on port 2049; see /var/log/ganesha/ganesha.log')\n"
)


# Test-only stand-ins for the gpu_node role's reads (see node_payload).
LAB_RDMA_DIR = "/etc/oci-gpu-lab/infiniband"
# The node's own kernel log for the health check's Xid search: in a container /dev/kmsg and the
# journal's dmesg are the host's, shared by every node, so tests append Xid lines here instead.
LAB_XID_LOG = "/var/log/oci-gpu-lab/kern.log"
# The DCGM exporter stand-in (dcgm_exporter.py), where NVIDIA's datacenter-gpu-manager-exporter puts the real one.
DCGM_EXPORTER = "/usr/bin/dcgm-exporter"
FABRICMANAGER_UNIT = """[Unit]
Description=NVIDIA Fabric Manager (oci-gpu-lab stand-in, test only: it only sleeps)

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
"""


def node_payload(
    lab: str, node: dict[str, Any], exports: list[str] | None = None, pubkey: str | None = None
) -> dict[str, Any]:
    """What goes into a node: node facts, GPU list, the nvidia-smi stand-in, a tmpfiles.d rule and
    the lab's SSH key for root and for opc (the image's admin user, sudo without a password)."""
    gpus = gpu_inventory(lab, node["name"], node["shape"])
    files: dict[str, tuple[str, str]] = {
        "/etc/oci-gpu-lab/node.json": (
            "0644",
            json.dumps(
                {"lab": lab, "name": node["name"], "shape": node["shape"], "gpus": len(gpus), "roles": node["roles"]},
                indent=2,
            )
            + "\n",
        ),
        "/etc/oci-gpu-lab/gpus.json": ("0644", json.dumps(gpus, indent=2) + "\n"),
    }
    devices: list[tuple[str, int, int]] = []
    if gpus:
        # systemd-tmpfiles recreates the nodes at every boot: /dev is a fresh tmpfs after a restart.
        rules = ["# oci-gpu-lab: fake NVIDIA devices (test only; no driver backs them)"]
        for g in gpus:
            rules.append(f"c /dev/nvidia{g['index']} 0666 root root - {NVIDIA_MAJOR}:{g['index']}")
            devices.append((f"/dev/nvidia{g['index']}", NVIDIA_MAJOR, g["index"]))
        rules.append(f"c /dev/nvidiactl 0666 root root - {NVIDIA_MAJOR}:{NVIDIACTL_MINOR}")
        devices.append(("/dev/nvidiactl", NVIDIA_MAJOR, NVIDIACTL_MINOR))
        files["/etc/tmpfiles.d/oci-gpu-lab-nvidia.conf"] = ("0644", "\n".join(rules) + "\n")
        # Debian nodes have python3 but no 'python': give the stand-in their interpreter.
        smi = (HERE / "nvidia_smi.py").read_text().split("\n", 1)[1]
        files["/usr/bin/nvidia-smi"] = ("0755", "#!/usr/bin/python3\n" + smi)
        # and the DCGM exporter stand-in where NVIDIA's package puts the real one (the monitoring role runs it)
        dcgm = (HERE / "dcgm_exporter.py").read_text().split("\n", 1)[1]
        files[DCGM_EXPORTER] = ("0755", "#!/usr/bin/python3\n" + dcgm)
    post: list[list[str]] = []
    rec = SHAPES.shape(node["shape"])
    if gpus and rec is not None:
        # The shape's RDMA NICs by name (the gpu_node role reads gpu_node_rdma_dir; there is no
        # /sys/class/infiniband here), and on NVSwitch shapes a Fabric Manager unit that only sleeps.
        for hca in rec.rdma_hca_names:
            files[f"{LAB_RDMA_DIR}/{hca}"] = ("0644", "")
        files[LAB_XID_LOG] = ("0644", "")
        if rec.gpu_fabric == "fabricmanager":
            files["/etc/systemd/system/nvidia-fabricmanager.service"] = ("0644", FABRICMANAGER_UNIT)
            post.append(["systemctl", "daemon-reload"])
    remove = [] if gpus else ["/usr/bin/nvidia-smi", DCGM_EXPORTER, "/etc/tmpfiles.d/oci-gpu-lab-nvidia.conf"]
    # Every node: the mount.nfs stand-in (the kernel has no NFS client), see mount_nfs.py.
    pre = [["dpkg-divert", "--local", "--rename", "--divert", f"{p}.distrib", "--add", p] for p in MOUNT_NFS_PATHS]
    shim = (HERE / "mount_nfs.py").read_text().split("\n", 1)[1]
    files["/usr/sbin/mount.nfs"] = ("0755", "#!/usr/bin/python3\n" + shim)
    if pubkey:
        # Keys outside the home directories, as many sites keep them: a File Storage export mounted
        # on /home (the demo does) must not lock the admin user out.
        for user in ("root", SSH_ADMIN):
            files[f"{AUTHORIZED_KEYS_DIR}/{user}"] = ("0644", pubkey.strip() + "\n")
        files[SSHD_KEYS_CONF] = ("0644", f"AuthorizedKeysFile {AUTHORIZED_KEYS_DIR}/%u .ssh/authorized_keys\n")
        post.append(["systemctl", "reload-or-restart", "ssh"])
    if "nfs" in node["roles"]:
        names = list(exports or DEFAULT_EXPORTS)
        files["/etc/ganesha/ganesha.conf"] = ("0644", ganesha_conf(names))
        post += [
            ["mkdir", "-p", *[f"{STORAGE_MOUNT}/nfs/{n}" for n in names]],
            [
                "env",
                "DEBIAN_FRONTEND=noninteractive",
                "apt-get",
                "install",
                "-y",
                "-q",
                "-o",
                "Dpkg::Options::=--force-confold",
                "nfs-ganesha",
                "nfs-ganesha-vfs",
            ],
            ["systemctl", "enable", "nfs-ganesha"],
            ["systemctl", "restart", "nfs-ganesha"],
            ["python3", "-c", WAIT_NFS],
        ]
    return {"files": files, "devices": devices, "remove_devices": remove, "pre_commands": pre, "post_commands": post}


def setup_node(lab: str, node: dict[str, Any], exports: list[str] | None = None, extra_keys: str = "") -> None:
    """``extra_keys``: the instance's ``ssh_authorized_keys`` metadata (a launched node), which an OCI image's
    cloud-init gives the default user, as the lab's key is."""
    pubkey = ssh_pubkey(lab).strip() + ("\n" + extra_keys.strip() if extra_keys.strip() else "")
    payload = node_payload(lab, node, exports, pubkey)
    podman("exec", "-i", node["container"], "python3", "-c", NODE_SETUP, stdin=json.dumps(payload))
    node["host_key"] = host_key(node["container"])


# --------------------------------------------------------------------------- SSH


def ssh_key(lab: str) -> Path:
    """The lab's own SSH key pair (made once per lab, removed with it): ``<state>/labs/<lab>/id_ed25519``."""
    key = lab_dir(lab) / "id_ed25519"
    if not key.is_file():
        key.parent.mkdir(parents=True, exist_ok=True)
        for stale in (key, key.with_suffix(".pub")):
            stale.unlink(missing_ok=True)
        res = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"oci-gpu-lab-{lab}", "-f", str(key)],
            capture_output=True,
            text=True,
            check=False,
        )
        if res.returncode != 0:
            raise LabError(f"ssh-keygen failed: {res.stderr.strip()} (install openssh-client: make lab-prepare)")
    return key


def ssh_pubkey(lab: str) -> str:
    return ssh_key(lab).with_suffix(".pub").read_text()


def host_key(container: str, timeout: float = 30.0) -> str:
    """The node's own ed25519 host key (made at its first boot), once sshd has it."""
    deadline = time.monotonic() + timeout
    while True:
        res = podman("exec", container, "cat", "/etc/ssh/ssh_host_ed25519_key.pub", check=False)
        if res.returncode == 0 and res.stdout.startswith("ssh-ed25519 "):
            return " ".join(res.stdout.split()[:2])
        if time.monotonic() > deadline:
            raise LabError(f"{container}: no SSH host key after {timeout:.0f} s (is lab-ssh-hostkeys.service there?)")
        time.sleep(0.3)


def ssh_files(lab: dict[str, Any]) -> tuple[str, str]:
    """(known_hosts, ssh_config) for the lab: each node's own host key under its names and address,
    and one ``Host`` entry per node, so ``ssh -F <ssh_config> <node>`` (and Ansible) reach it."""
    key = lab_dir(lab["name"]) / "id_ed25519"
    known = lab_dir(lab["name"]) / "known_hosts"
    hosts, entries = [], []
    for n in lab["nodes"]:
        names = sorted({n["name"], n["container"], n["ip"]})
        hosts.append(f"{','.join(names)} {n['host_key']}")
        entries += [f"Host {' '.join(names)}", f"  HostName {n['ip']}", f"  HostKeyAlias {n['name']}", ""]
    config = [
        f"# Written by tests/lab/lab for lab {lab['name']!r}: ssh -F this-file <node> reaches a node as",
        "# Ansible does (key, known hosts, keepalives; ControlPersist and pipelining come from Ansible).",
        *entries,
        "Host *",
        "  User root",
        f"  IdentityFile {key}",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {known}",
        "  GlobalKnownHostsFile /dev/null",
        "  StrictHostKeyChecking yes",
        "  CheckHostIP no",
        "  ConnectTimeout 10",
        # A hung node (podman pause) ends its connection in ~15 s instead of hanging the run.
        "  ServerAliveInterval 5",
        "  ServerAliveCountMax 3",
        "  LogLevel ERROR",
    ]
    return "\n".join(sorted(set(hosts))) + "\n", "\n".join(config) + "\n"


def write_ssh_files(lab: dict[str, Any], copy_to: str | None = None) -> Path:
    known, config = ssh_files(lab)
    d = lab_dir(lab["name"])
    (d / "known_hosts").write_text(known)
    (d / "ssh_config").write_text(config)
    if copy_to:
        Path(copy_to).parent.mkdir(parents=True, exist_ok=True)
        Path(copy_to).write_text(config)
    return d / "ssh_config"


def wait_ssh(lab: dict[str, Any], timeout: float = 30.0) -> None:
    """Fail, in plain words, unless every node answers ``ssh root@node true`` and ``ssh opc@node sudo -n true``."""
    config = lab_dir(lab["name"]) / "ssh_config"

    def probe(n: dict[str, Any]) -> None:
        deadline = time.monotonic() + timeout
        for user, cmd in (("root", "true"), (SSH_ADMIN, "sudo -n true")):
            while True:
                res = subprocess.run(
                    ["ssh", "-F", str(config), "-o", "BatchMode=yes", "-l", user, n["name"], cmd],
                    capture_output=True,
                    text=True,
                    check=False,
                    stdin=subprocess.DEVNULL,
                )
                if res.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise LabError(f"{n['name']}: ssh as {user} failed: {res.stderr.strip() or res.returncode}")
                time.sleep(0.5)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(probe, lab["nodes"]))


def wait_booted(container: str, timeout: float = BOOT_TIMEOUT) -> str:
    """Wait until systemd in ``container`` finished booting; returns its state (running/degraded)."""
    deadline = time.monotonic() + timeout
    state = "unknown"
    while time.monotonic() < deadline:
        res = podman("exec", container, "systemctl", "is-system-running", check=False)
        state = res.stdout.strip() or res.stderr.strip()
        if state in ("running", "degraded"):
            return state
        time.sleep(0.5)
    raise LabError(f"{container}: systemd did not finish booting in {timeout:.0f} s (state {state!r})")


def container_net(container: str) -> dict[str, str]:
    """IP, MAC, gateway, subnet and network name of a container's first network."""
    data = json.loads(podman("inspect", "--format", "json", container).stdout)[0]
    nets = data["NetworkSettings"]["Networks"] or {}
    if not nets:
        raise LabError(f"{container} has no network; lab nodes need a bridge network")
    net_name, net = sorted(nets.items())[0]
    netinfo = json.loads(podman("network", "inspect", net_name).stdout)[0]
    subnets = netinfo.get("subnets") or []
    subnet = next((s["subnet"] for s in subnets if ":" not in s["subnet"]), "")
    return {
        "ip": net["IPAddress"],
        "mac": net.get("MacAddress", ""),
        "gateway": net.get("Gateway", ""),
        "subnet": subnet,
        "network": net_name,
        "bridge": netinfo.get("network_interface", ""),
    }


def node_addresses(network: str, count: int) -> list[str]:
    """``count`` host addresses from the network's IPv4 subnet, from .11 on (the gateway is .1)."""
    netinfo = json.loads(podman("network", "inspect", network).stdout)[0]
    subnet = next((s["subnet"] for s in netinfo.get("subnets") or [] if ":" not in s["subnet"]), None)
    if subnet is None:
        raise LabError(f"network {network!r} has no IPv4 subnet")
    hosts = list(ipaddress.ip_network(subnet).hosts())[10 : 10 + count]
    if len(hosts) < count:
        raise LabError(f"subnet {subnet} of {network!r} is too small for {count} nodes")
    return [str(h) for h in hosts]


def register(lab: dict[str, Any], region: str) -> None:
    """Fill each node's network facts and IMDS documents in ``lab`` (in place)."""
    bridges = set(lab.get("bridges", []))
    for node in lab["nodes"]:
        node.update(container_net(node["container"]))
        bridges.add(node["bridge"])
    lab["bridges"] = sorted(b for b in bridges if b)
    imds_documents(lab, region)


def imds_documents(lab: dict[str, Any], region: str) -> None:
    """(Re)build each node's IMDS documents in ``lab`` from its record (in place)."""
    gpu_ordinal = 0
    for ordinal, node in enumerate(lab["nodes"]):
        info = SHAPES.shape_info(node["shape"])
        node["imds"] = imds.node_documents(
            lab["name"], node, info, region=region, ordinal=ordinal, gpu_ordinal=gpu_ordinal
        )
        launched = node.get("launched")
        if launched:  # a node the lab cloud launched: IMDS tells what the OCI API knows of it
            node["imds"]["instance"].update(launched["instance"])
            topo = node["imds"]["host"].get("rdmaTopologyData")
            if topo is not None and launched.get("topology"):
                topo.update({k: v for k, v in launched["topology"].items() if v})
        if node["gpus"]:
            gpu_ordinal += 1


# --------------------------------------------------------------------------- IMDS server


def imds_pid() -> int | None:
    """PID of the running IMDS server this state directory started, or None."""
    pidfile = STATE_DIR / "imds" / "imds.pid"
    try:
        pid = int(pidfile.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    if any(part.endswith(b"imds.py") for part in cmdline) and str(STATE_DIR).encode() in cmdline:
        return pid
    return None


def ensure_imds(bridges: list[str]) -> int:
    for bridge in bridges:
        if not imds.ensure_bridge_address(bridge):
            raise LabError(f"could not put {imds.IMDS_ADDR}/32 on bridge {bridge!r} (is it up?)")
    pid = imds_pid()
    if pid:
        return pid
    d = STATE_DIR / "imds"
    d.mkdir(parents=True, exist_ok=True)
    log = open(d / "imds.log", "a")  # noqa: SIM115 - handed to the detached child
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "imds.py"), "--state-dir", str(STATE_DIR)],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    log.close()
    (d / "imds.pid").write_text(f"{proc.pid}\n")
    # Ready when it answers (401 without the header is an answer).
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"the IMDS server exited at once (status {proc.returncode}); see {d / 'imds.log'}")
        try:
            urllib.request.urlopen(f"http://{imds.IMDS_ADDR}/opc/v2/", timeout=1)
        except urllib.error.HTTPError:
            return proc.pid
        except OSError:
            time.sleep(0.1)
            continue
        return proc.pid
    raise LabError(f"the IMDS server did not answer within 10 s; see {d / 'imds.log'}")


def stop_imds_if_idle() -> int | None:
    """Stop the IMDS server when no lab is left; returns the PID it stopped."""
    if all_labs():
        return None
    pid = imds_pid()
    if pid is None:
        return None
    os.kill(pid, signal.SIGTERM)
    for _attempt in range(50):
        if not Path(f"/proc/{pid}").exists():
            break
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    (STATE_DIR / "imds" / "imds.pid").unlink(missing_ok=True)
    return pid


# --------------------------------------------------------------------------- inventory


def _y(value: Any) -> str:
    return json.dumps(value)


CONNECTIONS = ("ssh", "podman")


def connection_vars(lab: dict[str, Any]) -> list[str]:
    """Inventory vars that say how Ansible reaches the nodes.

    ``ssh`` (the default) is how production reaches OCI nodes: the image's admin user ``opc`` with
    ``become``, the lab's key and known_hosts (through its ssh_config), pipelining, ControlPersist
    (Ansible's default ssh_args). ``podman`` execs into the containers: no sshd needed, no pipelining.
    """
    if lab.get("connection", "ssh") == "podman":
        return ["    ansible_connection: containers.podman.podman"]
    return [
        "    ansible_connection: ssh",
        f"    ansible_user: {SSH_ADMIN}",
        "    ansible_become: true",
        "    ansible_pipelining: true",
        f"    ansible_ssh_common_args: {_y('-F ' + str(lab_dir(lab['name']) / 'ssh_config'))}",
    ]


def inventory_text(lab: dict[str, Any]) -> str:
    """A static YAML inventory: how to reach each node (SSH or podman), per-node lab vars, Slurm groups."""
    podman_conn = lab.get("connection", "ssh") == "podman"
    lines = [
        f"# Written by tests/lab/lab for lab {lab['name']!r}; regenerated by every 'lab up' / 'lab attach'.",
        "all:",
        "  vars:",
        *connection_vars(lab),
        "    ansible_python_interpreter: /usr/bin/python3",
        f"    oci_gpu_lab_name: {_y(lab['name'])}",
        "  hosts:",
    ]
    for n in lab["nodes"]:
        lines += [
            f"    {n['name']}:",
            f"      ansible_host: {_y(n['container'] if podman_conn else n.get('ip', ''))}",
            f"      oci_gpu_lab_shape: {_y(n['shape'])}",
            f"      oci_gpu_lab_gpu_count: {n['gpus']}",
            f"      oci_gpu_lab_slurm_roles: {_y(n['roles'])}",
            f"      oci_gpu_lab_private_ip: {_y(n.get('ip', ''))}",
        ]
    lines.append("  children:")
    nfs = [n["name"] for n in lab["nodes"] if "nfs" in n["roles"]]
    lines.append("    lab_nfs:")
    lines.append("      hosts:" + ("" if nfs else " {}"))
    lines += [f"        {m}: {{}}" for m in nfs]
    for role in SLURM_ROLES:
        members = [n["name"] for n in lab["nodes"] if role in n["roles"]]
        lines.append(f"    slurm_{role}:")
        lines.append("      hosts:" + ("" if members else " {}"))
        lines += [f"        {m}: {{}}" for m in members]
    return "\n".join(lines) + "\n"


def write_inventory(lab: dict[str, Any], extra: str | None) -> Path:
    path = lab_dir(lab["name"]) / "inventory.yml"
    text = inventory_text(lab)
    path.write_text(text)
    if extra:
        Path(extra).parent.mkdir(parents=True, exist_ok=True)
        Path(extra).write_text(text)
    return path


# --------------------------------------------------------------------------- commands


def container_args(lab: str, node: dict[str, Any], image: str, volume: str | None, create: bool = False) -> list[str]:
    """podman arguments that make one lab node (``run --detach``, or ``create`` to start it later)."""
    args = ["create"] if create else ["run", "--detach"]
    args += ["--ip", node["ip"], "--name", node["container"], "--hostname", node["name"]]
    args += ["--network", node["network"], "--network-alias", node["name"]]
    if volume:
        args += ["--volume", f"{volume}:{STORAGE_MOUNT}"]
    args += ["--privileged", "--systemd=always", "--label", f"{LABEL}={lab}", "--label", f"{NODE_LABEL}={node['name']}"]
    return [*args, image, "/sbin/init"]


def cmd_up(args: argparse.Namespace) -> int:
    name = args.name
    if not NAME_RE.match(name):
        raise LabError(f"lab name {name!r}: use lower-case letters, digits and '-' (max 31), starting with a letter")
    nodes = parse_nodes(args.nodes, args.roles)
    check_host()
    start = time.monotonic()
    image = images.image_ref(args.image)
    if not args.no_build:
        res = images.build(args.image)
        if res["built"]:
            print(f"lab: built {image} in {res['seconds']} s ({res['size_mb']} MB)", flush=True)
    elif images.current_hash(args.image) is None:
        raise LabError(f"image {image} does not exist; run: tests/lab/lab images {args.image}")
    network = f"{name}-net"
    volume = f"{name}-storage"
    exports = parse_exports(args.nfs_exports)
    with state_lock():
        if read_lab(name) is not None:
            raise LabError(f"lab {name!r} is already up (see 'lab status --name {name}'); run 'lab down --name {name}'")
        for n in nodes:
            n["container"] = f"{name}-{n['name']}"
            if podman("container", "exists", n["container"], check=False).returncode == 0:
                raise LabError(f"a container named {n['container']!r} already exists and is not this lab's")
        net_exists = podman("network", "exists", network, check=False).returncode == 0
        if net_exists:
            labels = json.loads(podman("network", "inspect", network).stdout)[0].get("labels") or {}
            if labels.get(LABEL) != name:
                raise LabError(f"a podman network named {network!r} exists and is not this lab's")
        lab: dict[str, Any] = {
            "name": name,
            "image": image,
            "region": args.region,
            "network": network,
            "network_created": True,
            "containers_created": True,
            "nodes": nodes,
            "bridges": [],
            "exports": exports,
            "volume": volume,
            "connection": args.connection,
            "created": time.time(),
        }
        # Record intent first: a failure half-way leaves a state 'down' can clean up.
        write_lab(lab)
        try:
            if not net_exists:
                podman("network", "create", "--label", f"{LABEL}={name}", network)
            # The lab's shared storage: what the NFS node exports and what the mount.nfs stand-in binds.
            if podman("volume", "exists", volume, check=False).returncode != 0:
                podman("volume", "create", "--label", f"{LABEL}={name}", volume)
            # Fixed addresses: a restarted node keeps its IP, so IMDS, inventory and tenancy stay true.
            for n, ip in zip(nodes, node_addresses(network, len(nodes)), strict=True):
                n["ip"] = ip
            for n in nodes:
                podman(*container_args(name, {**n, "network": network}, image, volume))
            ssh_key(name)  # once, before the nodes are set up in parallel
            with ThreadPoolExecutor(max_workers=8) as pool:
                list(pool.map(lambda n: wait_booted(n["container"]), nodes))
                list(pool.map(lambda n: setup_node(name, n, exports), nodes))
            register(lab, args.region)
            write_lab(lab)
            write_ssh_files(lab)
            wait_ssh(lab)
            pid = ensure_imds(lab["bridges"])
        except BaseException:
            print(f"lab: 'up' failed; the partial lab stays for inspection: 'lab down --name {name}' removes it")
            raise
        inv = write_inventory(lab, args.inventory)
    print_status(lab, pid)
    print(f"lab: inventory {inv}" + (f" (copied to {args.inventory})" if args.inventory else ""))
    print(f"lab: {len(nodes)} node(s) up in {time.monotonic() - start:.1f} s")
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    """Make existing containers (molecule's) lab nodes: fake devices, nvidia-smi, IMDS records."""
    check_host()
    nodes = parse_nodes(args.nodes, args.roles)
    with state_lock():
        lab = read_lab(args.name) or {
            "name": args.name,
            "image": "",
            "region": args.region,
            "network": "",
            "network_created": False,
            "containers_created": False,
            "nodes": [],
            "bridges": [],
            "created": time.time(),
        }
        given = parse_exports(args.nfs_exports) if args.nfs_exports else None
        lab["exports"] = given or lab.get("exports", list(DEFAULT_EXPORTS))
        if lab.get("containers_created"):
            raise LabError(f"lab {args.name!r} was made by 'lab up'; attach containers to a lab of their own")
        by_name = {n["name"]: n for n in lab["nodes"]}
        for n in nodes:
            n["container"] = n["name"]
            if podman("container", "exists", n["container"], check=False).returncode != 0:
                raise LabError(f"no container named {n['container']!r} to attach")
            by_name[n["name"]] = n
        lab["nodes"] = [by_name[k] for k in sorted(by_name)]
        ssh_key(args.name)  # once, before the nodes are set up in parallel
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda n: wait_booted(n["container"]), nodes))
            list(pool.map(lambda n: setup_node(args.name, n, lab["exports"]), nodes))
        register(lab, lab.get("region") or args.region)
        write_lab(lab)
        write_ssh_files(lab, args.ssh_config)
        wait_ssh(lab)
        pid = ensure_imds(lab["bridges"])
        write_inventory(lab, args.inventory)
    print_status(lab, pid)
    return 0


def cmd_place(args: argparse.Namespace) -> int:
    """Move GPU nodes of a lab to other local blocks (as a host moved in OCI's fabric would be):
    their IMDS answers change at once; the containers are not touched."""
    with state_lock():
        lab = read_lab(args.name)
        if lab is None:
            raise LabError(f"no lab {args.name!r}")
        by_name = {n["name"]: n for n in lab["nodes"]}
        for item in filter(None, args.placement.split(",")):
            name, at, block = item.partition("@")
            if not at or name not in by_name:
                known = ", ".join(sorted(by_name))
                raise LabError(f"placement {item!r}: write NODE@BLOCK for a node of lab {args.name!r} ({known})")
            by_name[name]["block"] = parse_block(name, by_name[name]["shape"], block)
        imds_documents(lab, lab.get("region") or "us-ashburn-1")
        write_lab(lab)
    for n in lab["nodes"]:
        topo = n["imds"]["host"].get("rdmaTopologyData")
        if topo:
            print(f"lab: {n['name']} local block {n.get('block') or '(default)'} {topo['customerLocalBlock']}")
    return 0


def _containers_labelled(name: str) -> list[str]:
    out = podman("ps", "-a", "--filter", f"label={LABEL}={name}", "--format", "{{.Names}}", check=False).stdout
    return [c for c in out.split() if c]


def _volumes_labelled(name: str) -> list[str]:
    out = podman("volume", "ls", "--filter", f"label={LABEL}={name}", "--format", "{{.Name}}", check=False).stdout
    return [c for c in out.split() if c]


def _networks_labelled(name: str) -> list[str]:
    out = podman("network", "ls", "--filter", f"label={LABEL}={name}", "--format", "{{.Name}}", check=False).stdout
    return [c for c in out.split() if c]


def cmd_down(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise LabError("run as root")
    name = args.name
    removed: list[str] = []
    import cloud  # the lab cloud launches nodes: stop it first, so it makes none while the lab goes

    pid = cloud.stop(name)
    if pid:
        removed.append(f"lab cloud (pid {pid})")
    with state_lock():
        lab = read_lab(name)
        containers = _containers_labelled(name)
        networks = _networks_labelled(name)
        if lab and lab.get("containers_created"):
            containers = sorted(set(containers) | {n["container"] for n in lab["nodes"]})
        if lab and lab.get("network_created"):
            networks = sorted(set(networks) | {lab["network"]})
        for c in containers:
            if podman("container", "exists", c, check=False).returncode == 0:
                podman("rm", "--force", "--time", "3", c)
                removed.append(f"container {c}")
        for net in networks:
            if podman("network", "exists", net, check=False).returncode == 0:
                podman("network", "rm", net)
                removed.append(f"network {net}")
        for vol in _volumes_labelled(name):
            podman("volume", "rm", "--force", vol)
            removed.append(f"volume {vol}")
        if lab and not lab.get("network_created"):
            # Someone else's bridge: take back only the address the lab put there.
            for bridge in lab.get("bridges", []):
                if imds.bridge_has_address(bridge):
                    subprocess.run(["ip", "addr", "del", f"{imds.IMDS_ADDR}/32", "dev", bridge], check=False)
                    removed.append(f"address {imds.IMDS_ADDR} on {bridge}")
        if lab_dir(name).exists():
            shutil.rmtree(lab_dir(name))
            removed.append(f"state {lab_dir(name)}")
        pid = stop_imds_if_idle()
        if pid:
            removed.append(f"IMDS server (pid {pid})")
    if not removed and lab is None:
        print(f"lab: nothing to remove for lab {name!r}")
    for item in removed:
        print(f"lab: removed {item}")
    return 0


def print_status(lab: dict[str, Any], pid: int | None) -> None:
    states = {}
    out = podman("ps", "-a", "--format", "json", check=False).stdout or "[]"
    for entry in json.loads(out):
        for cname in entry.get("Names") or []:
            states[cname] = entry.get("State", "?")
    print(f"lab {lab['name']}: network {lab.get('network') or '-'} bridges {','.join(lab.get('bridges', [])) or '-'}")
    print(f"  {'node':<16} {'container':<28} {'state':<9} {'ip':<15} {'shape':<22} gpus roles")
    for n in lab["nodes"]:
        print(
            f"  {n['name']:<16} {n['container']:<28} {states.get(n['container'], 'missing'):<9} "
            f"{n.get('ip', '-'):<15} {n['shape']:<22} {n['gpus']:>4} {'+'.join(n['roles'])}"
        )
    print(f"  IMDS: http://{imds.IMDS_ADDR}/opc/v2/ " + (f"(server pid {pid})" if pid else "(server not running)"))
    import cloud

    info = cloud.cloud_info(lab["name"])
    if info:
        print(f"  OCI API (lab cloud, pid {info['pid']}): {info['endpoints']}; nodes use {info['node_endpoints']}")
    for item in cloud.orphans(lab):
        print(f"  ORPHAN: {item}")


def cmd_status(args: argparse.Namespace) -> int:
    names = [args.name] if args.name else all_labs()
    labs = [lab for lab in (read_lab(n) for n in names) if lab]
    if args.json:
        import cloud

        for lab in labs:
            lab["orphans"] = cloud.orphans(lab)
            lab["cloud"] = cloud.cloud_info(lab["name"])
        print(json.dumps({"labs": labs, "imds_pid": imds_pid()}, indent=2))
        return 0 if labs or not args.name else 1
    if not labs:
        print("lab: no lab is up" if not args.name else f"lab: no lab named {args.name!r}")
        return 0 if not args.name else 1
    for lab in labs:
        print_status(lab, imds_pid())
        print(f"  inventory: {lab_dir(lab['name']) / 'inventory.yml'}")
    return 0


def cmd_cloud(args: argparse.Namespace) -> int:
    import cloud

    return cloud.main(args.rest)


def cmd_images(args: argparse.Namespace) -> int:
    return images.main(args.rest)


def cmd_prepare(args: argparse.Namespace) -> int:
    return subprocess.run(["bash", str(HERE / "host_prepare.sh"), *args.rest], check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lab", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start a lab")
    up.add_argument("--name", default="lab", help="lab name: prefix of its containers and network (default: lab)")
    up.add_argument(
        "--nodes",
        required=True,
        help="name:SHAPE[@BLOCK],... e.g. ctl:VM.Standard.E5.Flex,gpu1:BM.GPU.H100.8@b0 (@BLOCK: the GPU node's "
        "RDMA local block; default: every two GPU nodes share one)",
    )
    up.add_argument(
        "--roles",
        help="node=role[+role],... (controller, dbd, compute, login, or none); default: ctl*=controller+dbd, "
        "login*=login, nfs*=nfs (the NFS server), else compute",
    )
    up.add_argument("--image", default="trixie", choices=images.SUITES)
    up.add_argument("--region", default="us-ashburn-1")
    up.add_argument("--inventory", help="also write the inventory to this path")
    up.add_argument("--no-build", action="store_true", help="fail instead of building a missing image")
    up.add_argument("--nfs-exports", help="exports of nfs nodes, e.g. home,apps (the default): /home, /apps")
    up.add_argument(
        "--connection",
        choices=CONNECTIONS,
        default="ssh",
        help="how the inventory reaches the nodes: ssh (default; as opc with become, pipelining) or podman (exec)",
    )
    up.set_defaults(func=cmd_up)
    at = sub.add_parser("attach", help="make existing containers lab nodes (node name = container name)")
    at.add_argument("--name", required=True)
    at.add_argument("--nodes", required=True, help="container:SHAPE[@BLOCK],...")
    at.add_argument("--roles")
    at.add_argument("--region", default="us-ashburn-1")
    at.add_argument("--inventory")
    at.add_argument("--nfs-exports", help="exports of nfs nodes (default home,apps)")
    at.add_argument("--ssh-config", help="also write the lab's ssh_config to this path (molecule's inventory uses it)")
    at.set_defaults(func=cmd_attach)
    pl = sub.add_parser("place", help="move GPU nodes to other RDMA local blocks: NODE@BLOCK,... (IMDS answers change)")
    pl.add_argument("--name", required=True)
    pl.add_argument("placement", help="NODE@BLOCK,... e.g. gpu2@b1,gpu3@b0")
    pl.set_defaults(func=cmd_place)
    down = sub.add_parser("down", help="remove a lab: its containers, network, state and (if last) the IMDS server")
    down.add_argument("--name", default="lab")
    down.set_defaults(func=cmd_down)
    st = sub.add_parser("status", help="show labs")
    st.add_argument("--name")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)
    cl = sub.add_parser("cloud", help="the lab's OCI API: up, down, status (see cloud.py --help)", add_help=False)
    cl.add_argument("rest", nargs=argparse.REMAINDER)
    cl.set_defaults(func=cmd_cloud)
    im = sub.add_parser("images", help="build the base images (see images.py --help)", add_help=False)
    im.add_argument("rest", nargs=argparse.REMAINDER)
    im.set_defaults(func=cmd_images)
    pr = sub.add_parser("prepare", help="prepare this host (host_prepare.sh)", add_help=False)
    pr.add_argument("rest", nargs=argparse.REMAINDER)
    pr.set_defaults(func=cmd_prepare)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
