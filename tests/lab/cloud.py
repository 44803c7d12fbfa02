# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab cloud: the OCI API emulator serving a running lab, whose launches make lab nodes (TEST ONLY).

``lab cloud up --name LAB`` starts one emulator process for the lab: its tenancy is the lab
(``lab_tenancy``), and its compute hook turns an instance that ``LaunchInstance`` made into a lab
node: a container from the lab's image on the lab's network at the instance's private IP,
registered with the lab IMDS under the instance's OCID, display name, tags, metadata and RDMA
local block, with the GPU stand-ins its shape needs. At boot the node runs its ``user_data`` with
Debian's real cloud-init (NoCloud datasource, seeded at boot from the lab IMDS by
``oci-gpu-lab-imds-seed``; cloud-init's Oracle datasource refuses to run in a container, where it
cannot read the chassis asset tag). ``TerminateInstance`` removes the container and the node's
record; STOP, START and (SOFT)RESET stop, start and restart it (a lab node of ``lab up`` too).

Records are written before containers are made and removed after they are gone, so a crash leaves
a node record with ``cloud_state`` ``launching`` or ``terminating``; ``lab status`` names these and
any container of the lab without a record (orphans), and the next ``lab cloud up`` finishes them:
a half-launched node is removed (its instance never ran), a half-terminated one is removed.

The emulator listens on every address: nodes reach it at the lab network's gateway, the host at
127.0.0.1 (``cloud.json`` in the lab's state directory names both, with the OCI config file).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
for p in (str(HERE), str(REPO)):
    if p not in sys.path:
        sys.path.insert(0, p)

import imds  # noqa: E402
import labctl  # noqa: E402

from tests.oci_emulator import Emulator, Tenancy, write_oci_config  # noqa: E402
from tests.oci_emulator.lab_tenancy import lab_tenancy  # noqa: E402

ROLE_TAG = ("oci-gpu", "slurm-role")
CLOUD_INIT_DISABLED = "etc/cloud/cloud-init.disabled"
# where launched nodes get their addresses: above the lab's own (.11 on) and podman's (.2 on)
FIRST_HOST = 100


def cloud_dir(lab: str) -> Path:
    return labctl.lab_dir(lab) / "cloud"


def cloud_info(lab: str) -> dict[str, Any] | None:
    try:
        info = json.loads((cloud_dir(lab) / "cloud.json").read_text())
    except (OSError, ValueError):
        return None
    pid = int(info.get("pid") or 0)
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return info if b"cloud.py" in cmdline else None


def repair_settings(info: dict[str, Any], cluster: str) -> dict[str, Any]:
    """The repair role's variables that point its agent at this lab cloud: the OCI API the nodes
    reach, with the lab's API key (instance principal on OCI), and the SDK wheels carried from the
    host (lab nodes have no PyPI of their own)."""
    import configparser

    region = info["region"]
    conf = configparser.ConfigParser()
    conf.read(info["config_file"])
    key = dict(conf["DEFAULT"])
    return {
        "repair_cluster": cluster,
        "repair_oci": {
            "auth_type": "api_key",
            "region": region,
            "service_endpoint": info["node_endpoints"][region],
            "compartment_id": info["compartment_id"],
        },
        "repair_oci_api_key": {k: key[k] for k in ("user", "fingerprint", "tenancy", "region", "key_file")},
        "repair_sdk_from": "control_node",
    }


def elastic_settings(info: dict[str, Any], cluster: str) -> dict[str, Any]:
    """The elastic role's variables that point its agent at this lab cloud (as repair_settings does)."""
    r = repair_settings(info, cluster)
    return {
        "elastic_cluster": cluster,
        "elastic_oci": {k: v for k, v in r["repair_oci"].items() if k != "compartment_id"},
        "elastic_oci_api_key": r["repair_oci_api_key"],
        "elastic_sdk_from": r["repair_sdk_from"],
    }


def elastic_nodeset(info: dict[str, Any], name: str, count: int, shape: str) -> dict[str, Any]:
    """A node set that launches into this lab cloud, sized to a lab container (2 CPUs, a little memory)."""
    return {
        "name": name,
        "count": count,
        "shape": shape,
        "compartment_id": info["compartment_id"],
        "availability_domain": info["availability_domain"],
        "subnet_id": info["subnet_id"],
        "image_id": "ocid1.image.oc1..oci-gpu-lab-debian",
        "cpus": 2,
        "sockets": 1,
        "cores_per_socket": 2,
        "threads_per_core": 1,
        "real_memory": 2000,
        # a lab node boots in seconds; the lab's ResumeTimeout is set from this
        "boot_time_s": 60,
    }


def _log(msg: str) -> None:
    print(f"lab cloud: {msg}", flush=True)


def _network(lab: dict[str, Any]) -> dict[str, str]:
    """The lab network's name, bridge, gateway and subnet (from the lab record or its first node)."""
    name = lab.get("network") or next((n.get("network") for n in lab["nodes"] if n.get("network")), "")
    if not name:
        raise labctl.LabError(f"lab {lab['name']!r} has no network record")
    info = json.loads(labctl.podman("network", "inspect", name).stdout)[0]
    subnet = next((s for s in info.get("subnets") or [] if ":" not in s["subnet"]), None)
    if subnet is None:
        raise labctl.LabError(f"network {name!r} has no IPv4 subnet")
    return {
        "network": name,
        "bridge": info.get("network_interface", ""),
        "gateway": subnet.get("gateway", ""),
        "subnet": subnet["subnet"],
    }


def launched_id(node: dict[str, Any]) -> str | None:
    """The OCID of the instance the lab cloud launched as this node (None: a node made otherwise)."""
    return ((node.get("launched") or {}).get("instance") or {}).get("id")


def launch_overrides(inst: dict[str, Any]) -> dict[str, Any]:
    """What a launched node's IMDS documents take from its OCI instance record."""
    host = inst.get("_computeHost") or {}
    return {
        "instance": {
            "id": inst["id"],
            "displayName": inst["displayName"],
            "compartmentId": inst["compartmentId"],
            "availabilityDomain": inst["availabilityDomain"],
            "faultDomain": inst.get("faultDomain"),
            "definedTags": inst.get("definedTags") or {},
            "freeformTags": inst.get("freeformTags") or {},
            "metadata": inst.get("metadata") or {},
            "image": inst.get("imageId") or "",
        },
        "topology": {
            "customerHPCIslandId": host.get("hpcIslandId"),
            "customerNetworkBlock": host.get("networkBlockId"),
            "customerLocalBlock": host.get("localBlockId"),
        }
        if host
        else {},
    }


class LabHook:
    """The emulator's compute hook for one lab (see the module docstring)."""

    def __init__(self, lab_name: str) -> None:
        self.lab = lab_name
        self.lock = threading.Lock()

    # -- records ---------------------------------------------------------------------------------
    def _update(self, fn: Any) -> dict[str, Any]:
        with labctl.state_lock():
            lab = labctl.read_lab(self.lab)
            if lab is None:
                raise labctl.LabError(f"lab {self.lab!r} is not up")
            fn(lab)
            labctl.imds_documents(lab, lab.get("region") or "us-ashburn-1")
            labctl.write_lab(lab)
            return lab

    def _node(self, lab: dict[str, Any], instance_id: str) -> dict[str, Any] | None:
        return next(
            (n for n in lab["nodes"] if (n.get("launched") or {}).get("instance", {}).get("id") == instance_id), None
        )

    # -- hook ------------------------------------------------------------------------------------
    def launch(self, region: str, inst: dict[str, Any]) -> None:
        vnic = (inst.get("_vnics") or [{}])[0]
        name = str(vnic.get("hostnameLabel") or inst["displayName"])
        if not labctl.NODE_RE.match(name):
            raise labctl.LabError(f"hostname {name!r} cannot be a lab node name")
        tag = (inst.get("definedTags") or {}).get(ROLE_TAG[0]) or {}
        roles = [r.strip() for r in str(tag.get(ROLE_TAG[1]) or "compute").replace(" ", ",").split(",") if r.strip()]
        container = f"{self.lab}-{name}"
        node: dict[str, Any] = {
            "name": name,
            "shape": inst["shape"],
            "roles": roles,
            "gpus": labctl.shape_gpus(inst["shape"]),
            "container": container,
            "ip": vnic["privateIp"],
            "mac": "",
            "launched": launch_overrides(inst),
            "cloud_state": "launching",
            "host_key": "",
        }
        started = time.monotonic()

        def add(lab: dict[str, Any]) -> None:
            if any(n["name"] == name for n in lab["nodes"]):
                raise labctl.LabError(f"lab {self.lab!r} already has a node named {name!r}")
            if labctl.podman("container", "exists", container, check=False).returncode == 0:
                raise labctl.LabError(f"a container named {container!r} already exists")
            node.update(_network(lab))
            lab["nodes"].append(node)

        with self.lock:
            lab = self._update(add)  # the record first: a crash from here on leaves a named leftover
        try:
            image = (
                lab.get("image")
                or labctl.podman("inspect", "--format", "{{.ImageName}}", lab["nodes"][0]["container"]).stdout.strip()
            )
            labctl.ensure_imds([node["bridge"]])
            volume = lab.get("volume")
            if volume and labctl.podman("volume", "exists", volume, check=False).returncode != 0:
                volume = None
            labctl.podman(*labctl.container_args(self.lab, node, image, volume, create=True))
            self._enable_cloud_init(container)
            labctl.podman("start", container)
            labctl.wait_booted(container)
            keys = str((inst.get("metadata") or {}).get("ssh_authorized_keys") or "")
            labctl.setup_node(self.lab, node, lab.get("exports"), extra_keys=keys)
            cloud_init = self._cloud_init_status(container)
            net = labctl.container_net(container)

            def done(lab: dict[str, Any]) -> None:
                rec = self._node(lab, inst["id"])
                if rec is None:
                    raise labctl.LabError(f"node {name!r} vanished from lab {self.lab!r} while it booted")
                rec.update(net, host_key=node["host_key"], cloud_state="running", cloud_init=cloud_init)
                lab["bridges"] = sorted(set(lab.get("bridges", [])) | {net["bridge"]})

            with self.lock:
                lab = self._update(done)
            labctl.write_ssh_files(lab)
        except BaseException:
            self._remove(inst["id"], container)
            raise
        _log(f"launched {name} ({inst['shape']}, {node['ip']}) as {container} in {time.monotonic() - started:.1f} s")

    def _enable_cloud_init(self, container: str) -> None:
        """The image keeps cloud-init off (lab nodes made by 'lab up' or molecule); a launched node
        boots with it on, as an OCI image does."""
        root = labctl.podman("mount", container).stdout.strip()
        try:
            (Path(root) / CLOUD_INIT_DISABLED).unlink(missing_ok=True)
        finally:
            labctl.podman("unmount", container, check=False)

    @staticmethod
    def _cloud_init_status(container: str) -> str:
        res = labctl.podman("exec", container, "cloud-init", "status", "--wait", check=False)
        return (res.stdout.strip().splitlines() or ["status: unknown"])[-1].split(":", 1)[-1].strip()

    def _remove(self, instance_id: str, container: str) -> None:
        def mark(lab: dict[str, Any]) -> None:
            rec = self._node(lab, instance_id)
            if rec is not None:
                rec["cloud_state"] = "terminating"

        def drop(lab: dict[str, Any]) -> None:
            lab["nodes"] = [
                n for n in lab["nodes"] if (n.get("launched") or {}).get("instance", {}).get("id") != instance_id
            ]

        with self.lock:
            self._update(mark)
        if labctl.podman("container", "exists", container, check=False).returncode == 0:
            labctl.podman("rm", "--force", "--time", "5", container)
        with self.lock:
            lab = self._update(drop)
        if all(n.get("host_key") for n in lab["nodes"]):
            labctl.write_ssh_files(lab)

    def terminate(self, region: str, inst: dict[str, Any]) -> None:
        lab = labctl.read_lab(self.lab) or {"nodes": []}
        node = self._node(lab, inst["id"])
        if node is None:
            _log(f"terminate {inst['id']}: no lab node (never launched here); nothing to remove")
            return
        self._remove(inst["id"], node["container"])
        _log(f"terminated {node['name']} ({inst['id']}): container {node['container']} removed")

    def action(self, region: str, inst: dict[str, Any], action: str) -> None:
        lab = labctl.read_lab(self.lab) or {"nodes": []}
        # a launched node, or one of the lab's own (its instance is the lab tenancy's, by IMDS id)
        node = self._node(lab, inst["id"]) or next(
            (n for n in lab["nodes"] if (n.get("imds") or {}).get("instance", {}).get("id") == inst["id"]), None
        )
        if node is None:
            return
        container = node["container"]
        if action in ("STOP", "SOFTSTOP"):
            labctl.podman("stop", "--time", "10" if action == "SOFTSTOP" else "1", container)
        elif action == "START":
            labctl.podman("start", container)
            labctl.wait_booted(container)
        else:  # SOFTRESET, RESET
            labctl.podman("restart", "--time", "10" if action == "SOFTRESET" else "1", container)
            labctl.wait_booted(container)
        _log(f"{action} {node['name']} ({container})")


def finish_interrupted(lab_name: str) -> list[str]:
    """Remove the nodes a crash left half-launched or half-terminated; returns what was removed."""
    hook = LabHook(lab_name)
    lab = labctl.read_lab(lab_name) or {"nodes": []}
    done = []
    for node in list(lab["nodes"]):
        if node.get("launched") and node.get("cloud_state") != "running":
            hook._remove(node["launched"]["instance"]["id"], node["container"])
            done.append(f"{node['name']} ({node['cloud_state']})")
    return done


def orphans(lab: dict[str, Any]) -> list[str]:
    """Containers of the lab without a node record, and launched nodes that are not settled."""
    known = {n["container"] for n in lab["nodes"]}
    out = [f"container {c} has no node record" for c in labctl._containers_labelled(lab["name"]) if c not in known]
    out += [
        f"node {n['name']} is {n['cloud_state']} (a lab cloud stopped half-way)"
        for n in lab["nodes"]
        if n.get("launched") and n.get("cloud_state") != "running"
    ]
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


def serve(lab_name: str, port: int) -> int:
    lab = labctl.read_lab(lab_name)
    if lab is None:
        raise labctl.LabError(f"no lab {lab_name!r} (start it first)")
    for item in finish_interrupted(lab_name):
        _log(f"removed {item}")
    lab = labctl.read_lab(lab_name) or lab
    data = lab_tenancy(lab)
    tenancy = Tenancy(data)
    d = cloud_dir(lab_name)
    creds = write_oci_config(d, tenancy.id, tenancy.home_region)
    emu = Emulator(
        tenancy,
        {creds.key_id: creds.public_pem},
        launch_delay_s=0.0,
        terminate_delay_s=0.0,
        action_delay_s=0.0,
        launch_first_host=FIRST_HOST,
    )
    region = tenancy.regions[tenancy.home_region]
    gpu_host = next(iter(region.compute_hosts), None)
    if gpu_host:  # a launched GPU node joins the lab's first local block, as into a compute cluster
        emu.knobs.launch_topology = {
            k: gpu_host[k] for k in ("hpcIslandId", "networkBlockId", "localBlockId") if gpu_host.get(k)
        }
    else:  # no GPU node yet: the block the lab's IMDS gives its first GPU nodes
        short = imds.region_names(tenancy.home_region)[0]
        emu.knobs.launch_topology = {
            "hpcIslandId": imds.ocid("hpcisland", short, lab_name),
            "networkBlockId": imds.ocid("computenetworkblock", short, lab_name),
            "localBlockId": imds.ocid("computelocalblock", short, lab_name, 0),
        }
    emu.compute_hook = LabHook(lab_name)
    emu.start({tenancy.home_region: port}, host="0.0.0.0")
    net = _network(lab)
    info = {
        "pid": os.getpid(),
        "lab": lab_name,
        "port": port,
        "region": tenancy.home_region,
        "endpoints": {tenancy.home_region: f"http://127.0.0.1:{port}"},
        "node_endpoints": {tenancy.home_region: f"http://{net['gateway']}:{port}"},
        "config_file": str(creds.config_file),
        "tenancy": tenancy.id,
        "compartment_id": data["compartments"][0]["id"],
        "subnet_id": region.subnets[0]["id"],
        "availability_domain": region.ads[0],
        "instance_pool_id": region.instance_pools[0]["id"] if region.instance_pools else None,
    }
    (d / "tenancy.json").write_text(json.dumps(data))
    tmp = d / "cloud.json.tmp"
    tmp.write_text(json.dumps(info, indent=1))
    tmp.replace(d / "cloud.json")
    _log(f"serving lab {lab_name!r} at {info['endpoints']} (nodes: {info['node_endpoints']})")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    emu.wait_idle(timeout=120)
    emu.stop()
    (d / "cloud.json").unlink(missing_ok=True)
    return 0


def start(lab_name: str, port: int = 0, timeout: float = 20.0) -> dict[str, Any]:
    """Start the lab cloud in the background (or find it running); returns cloud.json's content."""
    info = cloud_info(lab_name)
    if info:
        return info
    d = cloud_dir(lab_name)
    d.mkdir(parents=True, exist_ok=True)
    (d / "cloud.json").unlink(missing_ok=True)
    log = open(d / "cloud.log", "a")  # noqa: SIM115 - handed to the detached child
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__)), "serve", "--name", lab_name, "--port", str(port or _free_port())],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        cwd=str(REPO),
    )
    log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise labctl.LabError(f"the lab cloud exited at once (status {proc.returncode}); see {d / 'cloud.log'}")
        info = cloud_info(lab_name)
        if info:
            return info
        time.sleep(0.1)
    raise labctl.LabError(f"the lab cloud did not start within {timeout:.0f} s; see {d / 'cloud.log'}")


def stop(lab_name: str, timeout: float = 130.0) -> int | None:
    """Stop the lab's cloud (it finishes the launches and terminations under way); returns its PID."""
    info = cloud_info(lab_name)
    if info is None:
        return None
    pid = int(info["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    return pid


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="lab cloud", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("action", choices=("up", "down", "status", "serve"))
    ap.add_argument("--name", default="lab")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    if args.action == "serve":
        return serve(args.name, args.port)
    if args.action == "up":
        print(json.dumps(start(args.name, args.port)))
        return 0
    if args.action == "down":
        pid = stop(args.name)
        print(f"lab cloud: stopped (pid {pid})" if pid else f"lab cloud: none running for lab {args.name!r}")
        return 0
    info = cloud_info(args.name)
    lab = labctl.read_lab(args.name)
    print(json.dumps({"cloud": info, "orphans": orphans(lab) if lab else []}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
