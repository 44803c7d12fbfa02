# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""IMDS emulator for the lab: OCI's instance metadata service at 169.254.169.254, per node.

One server per host serves every lab. ``169.254.169.254/32`` sits on each lab network's bridge,
so a container reaches the server through its default route and the server sees the container's
own address; it answers from the node records in ``<state>/labs/*/lab.json``. The documents are
built once per node by :func:`node_documents` (pure, unit-testable) when the node joins a lab.

The server also keeps the address on every lab bridge (podman recreates a bridge without it when
a network's containers all stopped) and exits by itself once no lab is left.
"""

from __future__ import annotations

import argparse
import base64
import glob
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

IMDS_ADDR = "169.254.169.254"
IMDS_PORT = 80
IP_FREEBIND = 15  # linux/in.h: bind before the address is on any interface

# canonical region -> (short region as IMDS prints it, region key)
REGIONS = {
    "us-ashburn-1": ("iad", "IAD"),
    "us-phoenix-1": ("phx", "PHX"),
    "us-chicago-1": ("us-chicago-1", "ORD"),
    "eu-frankfurt-1": ("eu-frankfurt-1", "FRA"),
    "uk-london-1": ("uk-london-1", "LHR"),
    "ap-osaka-1": ("ap-osaka-1", "KIX"),
}


def _hex(*parts: object, length: int = 60) -> str:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:length]


def ocid(kind: str, region_short: str, *parts: object) -> str:
    """A deterministic, OCI-looking OCID (``ocid1.<kind>.oc1.<region>.<unique>``)."""
    return f"ocid1.{kind}.oc1.{region_short}.{_hex(kind, *parts)}"


def region_names(canonical: str) -> tuple[str, str]:
    """(short region, region key) for a canonical region name."""
    if canonical in REGIONS:
        return REGIONS[canonical]
    return canonical, canonical.split("-")[1][:3].upper() if "-" in canonical else canonical[:3].upper()


def node_documents(
    lab: str,
    node: dict[str, Any],
    info: dict[str, Any] | None,
    *,
    region: str = "us-ashburn-1",
    ordinal: int = 0,
    gpu_ordinal: int = 0,
) -> dict[str, Any]:
    """The ``instance``, ``host`` and ``vnics`` documents IMDS serves for one lab node.

    ``node`` needs ``name``, ``shape``, ``roles``, ``ip``, ``mac``, ``gateway``, ``subnet``;
    ``info`` is the collection's shape table entry (``_shapes.shape_info``) or None.
    ``node["block"]`` (``name:SHAPE@BLOCK``) names the GPU node's RDMA local block (and rack): nodes
    with one label share it; without it, ``gpu_ordinal`` (GPU nodes counted in the lab) pairs them up.
    """
    info = info or {}
    short, key = region_names(region)
    name = node["name"]
    bare_metal = info.get("kind") == "bare_metal" or node["shape"].startswith("BM.")
    gpus = int(info.get("gpu_count") or 0)
    if info.get("flex"):
        ocpus = float(node.get("ocpus") or 2)
        memory = float(node.get("memory_gb") or 16)
    else:
        ocpus = float(info.get("ocpus") or 2)
        memory = float(info.get("memory_gb") or 16)
    shape_config: dict[str, Any] = {
        "maxVnicAttachments": 256 if bare_metal else max(2, int(ocpus)),
        "memoryInGBs": memory,
        "networkingBandwidthInGbps": 100.0 if bare_metal else min(40.0, ocpus),
        "ocpus": ocpus,
    }
    if gpus:
        shape_config["gpus"] = gpus
        shape_config["gpuDescription"] = info.get("gpu_description") or ""
    if info.get("nvme_count"):
        shape_config["localDisks"] = int(info["nvme_count"])
        shape_config["localDisksTotalSizeInGBs"] = float(info["nvme_count"] * (info.get("nvme_size_gb") or 0))
    tenancy = ocid("tenancy", "", lab)
    ad_no = 1
    instance = {
        "agentConfig": {
            "allPluginsDisabled": False,
            "managementDisabled": False,
            "monitoringDisabled": False,
            "pluginsConfig": [
                {"desiredState": "ENABLED" if gpus else "DISABLED", "name": "Compute RDMA GPU Monitoring"},
                {"desiredState": "ENABLED" if gpus else "DISABLED", "name": "Compute HPC RDMA Auto-Configuration"},
            ],
        },
        "availabilityDomain": f"LAB:{region.rsplit('-', 1)[0].upper()}-AD-{ad_no}",
        "canonicalRegionName": region,
        "compartmentId": ocid("compartment", "", lab, "compartment"),
        # the lab is one cluster: oci-gpu.cluster is the lab's name (the inventory's cluster scope)
        "definedTags": {
            "Oracle-Tags": {"CreatedBy": "oci-gpu-lab", "CreatedOn": "2026-01-01T00:00:00.000Z"},
            "oci-gpu": {"cluster": lab},
        },
        "displayName": name,
        "faultDomain": f"FAULT-DOMAIN-{ordinal % 3 + 1}",
        "freeformTags": {"oci_gpu_lab": lab},
        "hostname": name,
        "id": ocid("instance", short, lab, name),
        "image": ocid("image", short, "debian", node.get("image", "")),
        "metadata": {
            "ssh_authorized_keys": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE9DSUdQVUxBQk5PVEFSRUFMS0VZ oci-gpu-lab",
            "user_data": base64.b64encode(b"#cloud-config\n{}\n").decode(),
        },
        "ociAdName": f"{short}-ad-{ad_no}",
        "region": short,
        "regionInfo": {
            "realmDomainComponent": "oraclecloud.com",
            "realmKey": "oc1",
            "regionIdentifier": region,
            "regionKey": key,
        },
        "shape": node["shape"],
        "shapeConfig": shape_config,
        "state": "Running",
        "tenantId": tenancy,
        "timeCreated": 1767225600000 + ordinal,
    }
    slurm_roles = [r for r in node.get("roles", []) if r != "nfs"]
    if slurm_roles:
        # node roles as the defined tag an IAM policy protects (issue 15), never a freeform one
        instance["definedTags"]["oci-gpu"]["slurm-role"] = ",".join(slurm_roles)
    if "nfs" in node.get("roles", []):
        instance["freeformTags"]["lab_service"] = "nfs"
    place = node.get("block") or gpu_ordinal // 2
    host: dict[str, Any] = {
        "buildingId": "building:" + _hex(lab, "building", length=64),
        "id": _hex(lab, name, "host", length=64),
        "networkBlockId": _hex(lab, "network-block", length=64),
        "rackId": _hex(lab, name if not gpus else f"rack{place}", "rack", length=64),
    }
    if gpus and bare_metal and info.get("rdma_nic_count"):
        topo = {
            "customerHPCIslandId": ocid("hpcisland", short, lab),
            "customerHostId": ocid("computebaremetalhost", short, lab, name),
            "customerLocalBlock": ocid("computelocalblock", short, lab, place),
            "customerNetworkBlock": ocid("computenetworkblock", short, lab),
        }
        if str(info.get("gpu_model") or "").startswith("gb"):
            topo["customerGpuMemoryFabric"] = ocid("computegpumemoryfabric", short, lab, place)
        host["rdmaTopologyData"] = topo
        host["rdmaFabricData"] = {"ipv6": False, "planes": 2}
    vnic: dict[str, Any] = {
        "vnicId": ocid("vnic", short, lab, name),
        "privateIp": node["ip"],
        "vlanTag": 100 + ordinal,
        "macAddr": node.get("mac", ""),
        "virtualRouterIp": node["gateway"],
        "subnetCidrBlock": node["subnet"],
    }
    if bare_metal:
        vnic["nicIndex"] = 0
    return {"instance": instance, "host": host, "vnics": [vnic]}


def lookup(doc: Any, parts: list[str]) -> Any:
    """Walk a document by IMDS subpath parts (``shapeConfig/gpus``, ``0/privateIp``); KeyError if absent."""
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise KeyError(part)
    return doc


def answer(node: dict[str, Any] | None, client_ip: str, path: str, headers: dict[str, str]) -> tuple[int, str, str]:
    """(status, content type, body) for one request from ``client_ip`` (lab node ``node``), as OCI's IMDS v2."""
    lower = {k.lower(): v for k, v in headers.items()}
    if any(h in lower for h in ("forwarded", "x-forwarded-for", "x-forwarded-host")):
        return 400, "text/plain", "Forwarded requests are not accepted\n"
    path = path.split("?", 1)[0]
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["opc", "v1"] or parts[:1] == ["openstack"]:
        return 404, "text/plain", "IMDSv1 is disabled on lab instances\n"
    if parts[:2] != ["opc", "v2"]:
        return 404, "text/plain", "Not Found\n"
    if lower.get("authorization") != "Bearer Oracle":
        return 401, "text/plain", "Unauthorized: IMDSv2 needs the header 'Authorization: Bearer Oracle'\n"
    if node is None:
        return 404, "text/plain", f"No lab node has the address {client_ip}\n"
    docs = node["imds"]
    rest = parts[2:]
    if not rest:
        return 200, "text/plain", "".join(f"{k}/\n" for k in sorted(docs))
    if rest[0] not in docs:
        return 404, "text/plain", "Not Found\n"
    try:
        value = lookup(docs[rest[0]], rest[1:])
    except KeyError:
        return 404, "text/plain", "Not Found\n"
    if isinstance(value, (dict, list)):
        return 200, "application/json", json.dumps(value, indent=2, sort_keys=True) + "\n"
    if isinstance(value, bool):
        return 200, "text/plain", "true" if value else "false"
    return 200, "text/plain", str(value)


class LabIndex:
    """Node records of every lab under a state directory, reloaded when a lab file changes."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._stamp: tuple[tuple[str, float], ...] = ()
        self._by_ip: dict[str, dict[str, Any]] = {}
        self._labs: list[dict[str, Any]] = []
        self._live: dict[str, dict[str, Any]] = {}
        self._live_checked = 0.0
        self._lock = threading.Lock()

    def _refresh(self) -> None:
        files = sorted(glob.glob(str(self.state_dir / "labs" / "*" / "lab.json")))
        stamp = []
        for f in files:
            try:
                stamp.append((f, os.stat(f).st_mtime))
            except FileNotFoundError:
                continue
        if tuple(stamp) == self._stamp:
            return
        by_ip: dict[str, dict[str, Any]] = {}
        labs = []
        for f, _mtime in stamp:
            try:
                lab = json.loads(Path(f).read_text())
            except (OSError, ValueError):
                continue
            labs.append(lab)
            for node in lab.get("nodes", []):
                if node.get("ip") and node.get("imds"):
                    by_ip[node["ip"]] = node
        self._stamp, self._by_ip, self._labs = tuple(stamp), by_ip, labs

    def nodes_by_ip(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            self._refresh()
            return self._by_ip

    def node_for(self, ip: str) -> dict[str, Any] | None:
        """The node at ``ip``; on a miss, look up the containers' current addresses (a restarted
        container that podman gave a new address) at most every 2 s."""
        with self._lock:
            self._refresh()
            node = self._by_ip.get(ip) or self._live.get(ip)
            if node is None and time.monotonic() - self._live_checked > 2.0:
                self._live_checked = time.monotonic()
                self._live = self._live_addresses()
                node = self._live.get(ip)
            return node

    def _live_addresses(self) -> dict[str, dict[str, Any]]:
        live: dict[str, dict[str, Any]] = {}
        for node in self._by_ip.values():
            fmt = "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}"
            res = subprocess.run(
                ["podman", "inspect", "--format", fmt, node.get("container", "")],
                capture_output=True,
                text=True,
                check=False,
            )
            for addr in res.stdout.split() if res.returncode == 0 else []:
                if addr != node["ip"]:
                    moved = json.loads(json.dumps(node))
                    moved["ip"] = addr
                    for vnic in moved["imds"].get("vnics", [])[:1]:
                        vnic["privateIp"] = addr
                    live[addr] = moved
        return live

    def labs(self) -> list[dict[str, Any]]:
        with self._lock:
            self._refresh()
            return self._labs


def bridge_has_address(bridge: str) -> bool | None:
    """True/False whether ``bridge`` carries the IMDS address; None when the bridge does not exist."""
    res = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", bridge], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        return None
    return f" {IMDS_ADDR}/32 " in res.stdout


def ensure_bridge_address(bridge: str) -> bool:
    """Put 169.254.169.254/32 on ``bridge`` if it exists and lacks it; True when it is there now."""
    has = bridge_has_address(bridge)
    if has is None:
        return False
    if not has:
        subprocess.run(["ip", "addr", "add", f"{IMDS_ADDR}/32", "dev", bridge], capture_output=True, check=False)
    return bool(bridge_has_address(bridge))


class Handler(BaseHTTPRequestHandler):
    server_version = "oci-gpu-lab-imds/1"
    sys_version = ""
    index: LabIndex

    def _reply(self, head_only: bool) -> None:
        ip = self.client_address[0]
        status, ctype, body = answer(self.index.node_for(ip), ip, self.path, dict(self.headers))
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head_only:
            self.wfile.write(data)

    def do_GET(self) -> None:
        self._reply(False)

    def do_HEAD(self) -> None:
        self._reply(True)

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"{time.strftime('%H:%M:%S')} {self.client_address[0]} {format % args}\n")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
        super().server_bind()


def serve(state_dir: Path, addr: str = IMDS_ADDR, port: int = IMDS_PORT, idle_exit: float = 30.0) -> int:
    """Serve until no lab has been left for ``idle_exit`` seconds (0 = forever)."""
    index = LabIndex(state_dir)
    handler = type("LabHandler", (Handler,), {"index": index, "disable_nagle_algorithm": True})
    httpd = Server((addr, port), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    sys.stderr.write(f"imds: serving {addr}:{port} for labs under {state_dir} (pid {os.getpid()})\n")
    empty_since: float | None = None
    try:
        while True:
            labs = index.labs()
            for lab in labs:
                for bridge in lab.get("bridges", []):
                    ensure_bridge_address(bridge)
            if labs:
                empty_since = None
            elif empty_since is None:
                empty_since = time.monotonic()
            elif idle_exit and time.monotonic() - empty_since > idle_exit:
                sys.stderr.write("imds: no lab left, exiting\n")
                return 0
            time.sleep(0.5)
    finally:
        httpd.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="imds", description=__doc__)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--addr", default=IMDS_ADDR)
    parser.add_argument("--port", type=int, default=IMDS_PORT)
    parser.add_argument(
        "--idle-exit", type=float, default=30.0, help="exit after this many seconds without a lab (0: never)"
    )
    args = parser.parse_args(argv)
    return serve(args.state_dir, args.addr, args.port, args.idle_exit)


if __name__ == "__main__":
    sys.exit(main())
