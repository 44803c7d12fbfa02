# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure parts of the podman lab (tests/lab): node specs, IMDS documents and answers, apt sources, nvidia-smi."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

LAB = Path(__file__).resolve().parents[2] / "lab"
sys.path.insert(0, str(LAB))

import images  # noqa: E402
import imds  # noqa: E402
import labctl  # noqa: E402

# ----------------------------------------------------------------------------- node specs


@pytest.mark.parametrize(
    ("shape", "gpus"),
    [
        ("BM.GPU.H100.8", 8),
        ("BM.GPU.A100-v2.8", 8),
        ("BM.GPU.L40S.4", 4),
        ("VM.GPU.A10.1", 1),
        ("VM.Standard.E5.Flex", 0),
    ],
)
def test_shape_gpus_follow_the_collections_shape_table(shape: str, gpus: int) -> None:
    assert labctl.shape_gpus(shape) == gpus == labctl.SHAPES.gpu_count(shape)


@pytest.mark.parametrize(
    ("shape", "message"), [("BM.GPU.NOPE.8", "unknown shape"), ("BM.GPU.MI300X.8", "only fakes NVIDIA")]
)
def test_shape_gpus_refuses_what_the_lab_cannot_fake(shape: str, message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        labctl.shape_gpus(shape)


def test_parse_nodes_defaults_and_explicit_roles() -> None:
    nodes = labctl.parse_nodes(
        "ctl:VM.Standard.E5.Flex,gpu1:BM.GPU.H100.8,login1:VM.Standard.E5.Flex,cpu1:BM.Optimized3.36"
    )
    assert [(n["name"], n["gpus"], n["roles"]) for n in nodes] == [
        ("ctl", 0, ["controller", "dbd"]),
        ("gpu1", 8, ["compute"]),
        ("login1", 0, ["login"]),
        ("cpu1", 0, ["compute"]),
    ]
    nodes = labctl.parse_nodes(
        "a:VM.Standard.E5.Flex,b:BM.GPU.L40S.4,c:VM.Standard.E5.Flex", "a=controller+login,c=none"
    )
    assert [n["roles"] for n in nodes] == [["controller", "login"], ["compute"], []]
    assert labctl.parse_nodes("nfs:VM.Standard.E5.Flex")[0]["roles"] == ["nfs"]
    assert labctl.parse_nodes("nfs:VM.Standard.E5.Flex", "nfs=none")[0]["roles"] == []


def test_exports_and_ganesha_config():
    assert labctl.parse_exports(None) == ["home", "apps"]
    assert labctl.parse_exports("/scratch, apps/") == ["scratch", "apps"]
    with pytest.raises(labctl.LabError, match="'a/b'"):
        labctl.parse_exports("a/b")
    conf = labctl.ganesha_conf(["home", "apps"])
    assert "Export_Id = 2;" in conf and "Pseudo = /apps;" in conf
    assert "Path = /var/lib/oci-gpu-lab/storage/nfs/home;" in conf


def test_payload_diverts_mount_nfs_and_sets_up_the_nfs_server():
    node = labctl.parse_nodes("nfs1:VM.Standard.E5.Flex")[0]
    payload = labctl.node_payload("lab", node, ["home"])
    assert [
        "dpkg-divert",
        "--local",
        "--rename",
        "--divert",
        "/sbin/mount.nfs.distrib",
        "--add",
        "/sbin/mount.nfs",
    ] in (payload["pre_commands"])
    assert payload["files"]["/usr/sbin/mount.nfs"][1].startswith("#!/usr/bin/python3\n")
    assert "Pseudo = /home;" in payload["files"]["/etc/ganesha/ganesha.conf"][1]
    assert any("nfs-ganesha" in cmd for cmd in payload["post_commands"])
    compute = labctl.node_payload("lab", labctl.parse_nodes("c1:VM.Standard.E5.Flex")[0])
    assert compute["post_commands"] == [] and "/etc/ganesha/ganesha.conf" not in compute["files"]
    assert labctl.parse_nodes("slurm-trixie-ctl:VM.Standard.E5.Flex")[0]["roles"] == ["controller", "dbd"]


@pytest.mark.parametrize(
    ("spec", "roles", "message"),
    [
        ("gpu1", None, "write name:SHAPE"),
        ("Gpu1:BM.GPU.H100.8", None, "lower-case"),
        ("a:VM.Standard.E5.Flex,a:VM.Standard.E5.Flex", None, "given twice"),
        ("a:VM.Standard.E5.Flex", "b=compute", "not in --nodes"),
        ("a:VM.Standard.E5.Flex", "a=boss", "roles: controller"),
        ("a:VM.Standard.E5.Flex", "a=", "node=none"),
        ("", None, "empty"),
        ("g:BM.GPU.H100.8@B0", None, "block 'B0'"),
        ("g:BM.GPU.H100.8@", None, "block ''"),
        ("c:VM.Standard.E5.Flex@b0", None, "no RDMA fabric"),
        ("g:VM.GPU.A10.1@b0", None, "no RDMA fabric"),
    ],
)
def test_parse_nodes_refuses_bad_input(spec: str, roles: str | None, message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        labctl.parse_nodes(spec, roles)


def test_gpu_inventory_is_deterministic_and_shaped_like_nvidia_smi() -> None:
    gpus = labctl.gpu_inventory("lab", "gpu1", "BM.GPU.H100.8")
    assert gpus == labctl.gpu_inventory("lab", "gpu1", "BM.GPU.H100.8")
    assert [g["index"] for g in gpus] == list(range(8))
    assert {g["name"] for g in gpus} == {"NVIDIA H100 80GB HBM3"}
    assert len({g["uuid"] for g in gpus}) == 8
    assert all(g["uuid"].startswith("GPU-") and len(g["uuid"]) == 40 for g in gpus)
    assert gpus != labctl.gpu_inventory("lab", "gpu2", "BM.GPU.H100.8")


def test_node_payload_makes_devices_only_for_gpu_shapes() -> None:
    gpu = labctl.node_payload("lab", {"name": "g", "shape": "BM.GPU.L40S.4", "roles": ["compute"]})
    assert gpu["devices"] == [(f"/dev/nvidia{i}", 195, i) for i in range(4)] + [("/dev/nvidiactl", 195, 255)]
    rules = gpu["files"]["/etc/tmpfiles.d/oci-gpu-lab-nvidia.conf"][1]
    assert "c /dev/nvidia3 0666 root root - 195:3" in rules and "195:255" in rules
    mode, smi = gpu["files"]["/usr/bin/nvidia-smi"]
    assert mode == "0755" and smi.startswith("#!/usr/bin/python3\n") and "def main(" in smi
    mode, dcgm = gpu["files"][labctl.DCGM_EXPORTER]
    assert mode == "0755" and dcgm.startswith("#!/usr/bin/python3\n") and "def render(" in dcgm
    # L40S: two RDMA NICs, no NVSwitch (no Fabric Manager stand-in)
    assert sorted(p for p in gpu["files"] if p.startswith(labctl.LAB_RDMA_DIR)) == [
        f"{labctl.LAB_RDMA_DIR}/mlx5_0",
        f"{labctl.LAB_RDMA_DIR}/mlx5_2",
    ]
    assert "/etc/systemd/system/nvidia-fabricmanager.service" not in gpu["files"]
    h100 = labctl.node_payload("lab", {"name": "h", "shape": "BM.GPU.H100.8", "roles": ["compute"]})
    assert len([p for p in h100["files"] if p.startswith(labctl.LAB_RDMA_DIR)]) == 16
    assert "ExecStart=/bin/sleep infinity" in h100["files"]["/etc/systemd/system/nvidia-fabricmanager.service"][1]
    assert ["systemctl", "daemon-reload"] in h100["post_commands"]
    assert h100["files"][labctl.LAB_XID_LOG] == ("0644", "")
    cpu = labctl.node_payload("lab", {"name": "c", "shape": "VM.Standard.E5.Flex", "roles": ["login"]})
    assert cpu["devices"] == [] and "/usr/bin/nvidia-smi" not in cpu["files"]
    assert not any(p.startswith(labctl.LAB_RDMA_DIR) for p in cpu["files"]) and labctl.LAB_XID_LOG not in cpu["files"]
    assert "/usr/bin/nvidia-smi" in cpu["remove_devices"] and labctl.DCGM_EXPORTER in cpu["remove_devices"]
    assert labctl.DCGM_EXPORTER not in cpu["files"]


def test_inventory_text_groups_nodes_by_slurm_role() -> None:
    yaml = pytest.importorskip("yaml")
    lab = {
        "name": "t",
        "nodes": [
            {
                "name": "ctl",
                "container": "t-ctl",
                "shape": "VM.Standard.E5.Flex",
                "gpus": 0,
                "roles": ["controller", "dbd"],
            },
            {
                "name": "gpu1",
                "container": "t-gpu1",
                "shape": "BM.GPU.H100.8",
                "gpus": 8,
                "roles": ["compute"],
                "ip": "10.0.0.2",
            },
        ],
    }
    inv = yaml.safe_load(labctl.inventory_text(lab))
    # SSH by default, as production: the node's address, opc with become, the lab's ssh_config.
    assert inv["all"]["vars"]["ansible_connection"] == "ssh"
    assert inv["all"]["vars"]["ansible_user"] == "opc"
    assert inv["all"]["vars"]["ansible_become"] is True
    assert inv["all"]["vars"]["ansible_pipelining"] is True
    assert inv["all"]["vars"]["ansible_ssh_common_args"] == f"-F {labctl.lab_dir('t') / 'ssh_config'}"
    assert inv["all"]["hosts"]["gpu1"]["ansible_host"] == "10.0.0.2"
    podman_inv = yaml.safe_load(labctl.inventory_text({**lab, "connection": "podman"}))
    assert podman_inv["all"]["vars"]["ansible_connection"] == "containers.podman.podman"
    assert "ansible_user" not in podman_inv["all"]["vars"]
    assert podman_inv["all"]["hosts"]["gpu1"]["ansible_host"] == "t-gpu1"
    assert inv["all"]["hosts"]["gpu1"]["oci_gpu_lab_gpu_count"] == 8
    assert set(inv["all"]["children"]["slurm_dbd"]["hosts"]) == {"ctl"}
    assert set(inv["all"]["children"]["slurm_compute"]["hosts"]) == {"gpu1"}
    assert inv["all"]["children"]["slurm_login"]["hosts"] == {}


# ----------------------------------------------------------------------------- IMDS


def _node(name: str = "gpu1", shape: str = "BM.GPU.H100.8", ip: str = "10.89.0.12") -> dict[str, Any]:
    return {
        "name": name,
        "shape": shape,
        "roles": ["compute"],
        "ip": ip,
        "mac": "02:00:00:00:00:01",
        "gateway": "10.89.0.1",
        "subnet": "10.89.0.0/24",
    }


def _docs(node: dict[str, Any], gpu_ordinal: int = 0) -> dict[str, Any]:
    return imds.node_documents("lab", node, labctl.SHAPES.shape_info(node["shape"]), gpu_ordinal=gpu_ordinal)


def test_gpu_node_documents_carry_shape_gpus_and_rdma_topology() -> None:
    docs = _docs(_node())
    inst, host, vnics = docs["instance"], docs["host"], docs["vnics"]
    assert inst["shape"] == "BM.GPU.H100.8"
    assert inst["shapeConfig"]["gpus"] == 8 and inst["shapeConfig"]["ocpus"] == 112.0
    assert inst["canonicalRegionName"] == "us-ashburn-1" and inst["region"] == "iad"
    assert inst["availabilityDomain"] == "LAB:US-ASHBURN-AD-1"
    assert inst["id"].startswith("ocid1.instance.oc1.iad.")
    assert inst["definedTags"]["oci-gpu"] == {"cluster": "lab", "slurm-role": "compute"}
    assert "slurm_role" not in inst["freeformTags"]
    topo = host["rdmaTopologyData"]
    assert {"customerHPCIslandId", "customerNetworkBlock", "customerLocalBlock", "customerHostId"} <= set(topo)
    assert len(host["rackId"]) == 64
    assert vnics == [
        {
            "vnicId": vnics[0]["vnicId"],
            "privateIp": "10.89.0.12",
            "vlanTag": 100,
            "macAddr": "02:00:00:00:00:01",
            "virtualRouterIp": "10.89.0.1",
            "subnetCidrBlock": "10.89.0.0/24",
            "nicIndex": 0,
        }
    ]


def test_gpu_nodes_share_island_and_pair_up_in_local_blocks() -> None:
    blocks = [_docs(_node(f"g{i}"), gpu_ordinal=i)["host"]["rdmaTopologyData"] for i in range(4)]
    assert len({b["customerHPCIslandId"] for b in blocks}) == 1
    assert len({b["customerNetworkBlock"] for b in blocks}) == 1
    assert blocks[0]["customerLocalBlock"] == blocks[1]["customerLocalBlock"] != blocks[2]["customerLocalBlock"]


def test_a_block_label_places_gpu_nodes_whatever_their_order() -> None:
    nodes = labctl.parse_nodes("g1:BM.GPU.H100.8@x,g2:BM.GPU.H100.8@y,g3:BM.GPU.H100.8@x,g4:BM.GPU.H100.8")
    assert [n.get("block") for n in nodes] == ["x", "y", "x", None]
    docs = [_docs({**_node(n["name"]), **n}, gpu_ordinal=i) for i, n in enumerate(nodes)]
    local = [d["host"]["rdmaTopologyData"]["customerLocalBlock"] for d in docs]
    racks = [d["host"]["rackId"] for d in docs]
    assert local[0] == local[2] != local[1] and racks[0] == racks[2] != racks[1]
    # without a label, the node pairs up by its GPU ordinal as before (g4 is the fourth: pair 1)
    assert local[3] == _docs(_node("other"), gpu_ordinal=3)["host"]["rdmaTopologyData"]["customerLocalBlock"]
    assert local[3] not in local[:3]


def test_place_moves_gpu_nodes_to_other_blocks_in_the_imds_answers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(labctl, "STATE_DIR", tmp_path)
    nodes = labctl.parse_nodes("ctl:VM.Standard.E5.Flex,g1:BM.GPU.H100.8@b0,g2:BM.GPU.H100.8@b0,g3:BM.GPU.H100.8@b1")
    for i, n in enumerate(nodes):
        n.update(_node(n["name"], n["shape"], ip=f"10.89.0.{11 + i}"), **{k: n[k] for k in ("roles", "gpus")})
    lab = {"name": "t", "region": "us-ashburn-1", "nodes": nodes}
    labctl.imds_documents(lab, "us-ashburn-1")
    labctl.write_lab(lab)

    def blocks() -> dict[str, str]:
        saved = labctl.read_lab("t") or {}
        return {
            n["name"]: n["imds"]["host"]["rdmaTopologyData"]["customerLocalBlock"]
            for n in saved["nodes"]
            if "rdmaTopologyData" in n["imds"]["host"]
        }

    before = blocks()
    assert before["g1"] == before["g2"] != before["g3"]
    assert labctl.main(["place", "--name", "t", "g2@b1"]) == 0
    after = blocks()
    assert after["g1"] == before["g1"] and after["g2"] == after["g3"] == before["g3"]
    assert "g2 local block b1" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no RDMA fabric"):
        labctl.main(["place", "--name", "t", "ctl@b0"])
    with pytest.raises(SystemExit, match="NODE@BLOCK for a node of lab 't'"):
        labctl.main(["place", "--name", "t", "g9@b0"])
    with pytest.raises(SystemExit, match="no lab 'nope'"):
        labctl.main(["place", "--name", "nope", "g1@b0"])
    assert blocks() == after


def test_cpu_node_documents_have_no_gpus_and_no_rdma() -> None:
    docs = _docs(_node("ctl", "VM.Standard.E5.Flex"))
    assert "gpus" not in docs["instance"]["shapeConfig"]
    assert "rdmaTopologyData" not in docs["host"]
    assert "nicIndex" not in docs["vnics"][0]
    nfs = imds.node_documents("lab", {**_node("nfs", "VM.Standard.E5.Flex"), "roles": ["nfs"]}, None)
    assert "slurm-role" not in nfs["instance"]["definedTags"]["oci-gpu"]
    assert nfs["instance"]["freeformTags"]["lab_service"] == "nfs"


AUTH = {"Authorization": "Bearer Oracle"}


@pytest.mark.parametrize(
    ("path", "headers", "status", "body"),
    [
        ("/opc/v2/instance/shape", AUTH, 200, "BM.GPU.H100.8"),
        ("/opc/v2/instance/shapeConfig/gpus", AUTH, 200, "8"),
        ("/opc/v2/instance/definedTags/oci-gpu/slurm-role", AUTH, 200, "compute"),
        ("/opc/v2/vnics/0/privateIp", AUTH, 200, "10.89.0.12"),
        ("/opc/v2/instance/shape", {}, 401, None),
        ("/opc/v2/instance/shape", {"authorization": "Bearer Other"}, 401, None),
        ("/opc/v2/instance/nope", AUTH, 404, None),
        ("/opc/v2/identity/cert.pem", AUTH, 404, None),
        ("/opc/v1/instance/", {}, 404, None),
        ("/opc/v2/instance/", {**AUTH, "X-Forwarded-For": "1.2.3.4"}, 400, None),
    ],
)
def test_answer_paths_auth_and_plain_text(path: str, headers: dict[str, str], status: int, body: str | None) -> None:
    node = {"imds": _docs(_node())}
    got = imds.answer(node, "10.89.0.12", path, headers)
    assert got[0] == status
    if body is not None:
        assert got[2] == body


def test_answer_json_documents_and_unknown_client() -> None:
    node = {"imds": _docs(_node())}
    status, ctype, body = imds.answer(node, "10.89.0.12", "/opc/v2/host/", AUTH)
    assert (status, ctype) == (200, "application/json") and "rdmaTopologyData" in json.loads(body)
    assert imds.answer(None, "10.9.9.9", "/opc/v2/instance/", AUTH)[0] == 404


def test_lab_index_maps_addresses_across_labs(tmp_path: Path) -> None:
    for lab, ip in (("a", "10.89.0.11"), ("b", "10.89.1.11")):
        d = tmp_path / "labs" / lab
        d.mkdir(parents=True)
        node = {**_node(ip=ip), "imds": _docs(_node(ip=ip))}
        (d / "lab.json").write_text(json.dumps({"name": lab, "nodes": [node], "bridges": []}))
    index = imds.LabIndex(tmp_path)
    assert set(index.nodes_by_ip()) == {"10.89.0.11", "10.89.1.11"}
    (tmp_path / "labs" / "a" / "lab.json").unlink()
    assert set(index.nodes_by_ip()) == {"10.89.1.11"}


# ----------------------------------------------------------------------------- apt sources / recipe


def test_apt_sources_deb822_and_one_line() -> None:
    deb822 = (
        "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
        "Types: deb-src\nURIs: http://src.invalid/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: bookworm-security\nComponents: main\n"
    )
    one = "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://other.invalid/debian trixie main contrib\n"
    sources = images.parse_deb822(deb822) + images.parse_one_line(one)
    assert [(s.uri, s.suites) for s in sources] == [
        ("http://mirror.invalid/debian", ["bookworm", "bookworm-updates"]),
        ("http://mirror.invalid/debian-security", ["bookworm-security"]),
        ("http://other.invalid/debian", ["trixie"]),
    ]
    assert images.debian_mirrors(sources) == ("http://mirror.invalid/debian", "http://mirror.invalid/debian-security")
    with pytest.raises(SystemExit, match="no plain Debian suite"):
        images.debian_mirrors(images.parse_deb822(deb822.split("\n\n")[2]))


def test_recipe_hash_changes_with_the_recipe_only() -> None:
    a = images.recipe_hash(images.recipe("trixie"))
    assert a == images.recipe_hash(images.recipe("trixie"))
    assert a != images.recipe_hash(images.recipe("bookworm"))
    assert a != images.recipe_hash(images.recipe("trixie", prefetch=False))


# ----------------------------------------------------------------------------- nvidia-smi stand-in


def _smi(tmp_path: Path, *args: str, count: int = 2) -> subprocess.CompletedProcess[str]:
    gpus = labctl.gpu_inventory("lab", "n", "BM.GPU.H100.8")[:count]
    (tmp_path / "gpus.json").write_text(json.dumps(gpus))
    # Outside a lab node /dev/nvidiaN do not exist: the stand-in must then report nothing.
    env = {"OCI_GPU_LAB_GPUS_FILE": str(tmp_path / "gpus.json"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, str(LAB / "nvidia_smi.py"), *args], capture_output=True, text=True, env=env, check=False
    )


def test_nvidia_smi_reports_nothing_without_device_nodes(tmp_path: Path) -> None:
    res = _smi(tmp_path, "-L")
    assert res.returncode == 6 and "No devices were found" in res.stdout


def test_nvidia_smi_fields_and_formats(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(LAB))
    import nvidia_smi

    gpu = {**labctl.gpu_inventory("lab", "n", "BM.GPU.H100.8")[0], "count": 8}
    assert nvidia_smi._field(gpu, "memory.total", True) == "81559 MiB"
    assert nvidia_smi._field(gpu, "memory.total", False) == "81559"
    assert nvidia_smi._field(gpu, "pci.bus_id", True) == "00000000:0F:00.0"
    assert nvidia_smi._field(gpu, "name", True) == "NVIDIA H100 80GB HBM3"
    with pytest.raises(KeyError):
        nvidia_smi._field(gpu, "clocks.bogus", True)
    gpus = labctl.gpu_inventory("lab", "n", "BM.GPU.H100.8")[:2]
    monkeypatch.setattr(nvidia_smi, "visible_gpus", lambda: [dict(g, count=2) for g in gpus])
    capsys.readouterr()
    assert nvidia_smi.main(["--query-gpu=index,uuid,memory.total", "--format=csv,noheader"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{g['index']}, {g['uuid']}, 81559 MiB" for g in gpus]
    assert nvidia_smi.main(["--query-gpu=index,memory.total", "--format=csv,nounits", "-i", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == ["index, memory.total", "1, 81559"]
    assert nvidia_smi.main(["-L"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"GPU 1: NVIDIA H100 80GB HBM3 (UUID: {gpus[1]['uuid']})"
    assert nvidia_smi.main(["--query-gpu=index,bogus", "--format=csv"]) == 2
    assert nvidia_smi.main(["--query-gpu=index"]) == 2


def test_nvidia_smi_faults_as_the_health_check_reads_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sys.path.insert(0, str(LAB))
    import nvidia_smi

    from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _health as _gpu_health

    gpus = labctl.gpu_inventory("lab", "n", "BM.GPU.H100.8")
    monkeypatch.setattr(nvidia_smi, "visible_gpus", lambda: [dict(g, count=8) for g in gpus])
    monkeypatch.setattr(nvidia_smi, "FAULT_FILE", str(tmp_path / "fault.json"))
    settings = dict(_gpu_health.DEFAULTS, gpu_count=8, fabric="fabricmanager", checks={"xid": False, "munge": False})

    def health(fault: dict | None) -> list[str]:
        (tmp_path / "fault.json").unlink(missing_ok=True)
        if fault is not None:
            (tmp_path / "fault.json").write_text(json.dumps(fault))
        capsys.readouterr()
        rc = nvidia_smi.main(["-q"])
        return _gpu_health.run_checks(settings, lambda argv, timeout: (rc, capsys.readouterr().out))

    assert health(None) == []
    assert health({"gpus": 7}) == ["gpu_count: 7 of 8 GPUs"]
    assert health({"exit": 15}) == [
        "nvidia_smi: nvidia-smi exit 15: a GPU has fallen off the bus (Unable to determine the device handle for "
        f"GPU{gpus[-1]['pci_bus_id']}: Unknown Error)"
    ]
    assert health({"fabric": "In Progress"})[0].startswith("fabric: fabric not ready: GPU 0: In Progress/N/A, GPU 1: ")
    (tmp_path / "fault.json").write_text(json.dumps({"gpus": 7}))
    assert nvidia_smi.main(["--query-gpu=count", "--format=csv,noheader"]) == 0
    assert capsys.readouterr().out.splitlines() == ["7"] * 7


class _Started(Exception):
    pass


@pytest.mark.parametrize(
    ("tagged", "force", "builds"),
    [("same", False, False), ("old", False, True), (None, False, True), ("same", True, True)],
)
def test_build_is_a_noop_only_for_an_unchanged_recipe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tagged: str | None, force: bool, builds: bool
) -> None:
    digest = images.recipe_hash(images.recipe("trixie"))
    monkeypatch.setattr(images, "BUILD_ROOT", tmp_path)
    monkeypatch.setattr(images, "current_hash", lambda suite: digest if tagged == "same" else tagged)
    monkeypatch.setattr(
        images, "host_apt_sources", lambda: [images.AptSource("http://mirror.invalid/debian", ["trixie"])]
    )
    monkeypatch.setattr(images.shutil, "which", lambda tool: f"/usr/bin/{tool}")

    def fake_run(cmd: list[str], log: Path, **kwargs: object) -> None:
        assert cmd[0] == "debootstrap" and "trixie" in cmd and "http://mirror.invalid/debian" in cmd
        raise _Started

    monkeypatch.setattr(images, "_run", fake_run)
    if builds:
        with pytest.raises(_Started):
            images.build("trixie", force=force, quiet=True)
        assert not list(tmp_path.glob("trixie-*")), "the build directory must be removed after a failure"
    else:
        assert images.build("trixie", force=force, quiet=True)["built"] is False


def test_ssh_files_pin_each_nodes_own_host_key_under_its_names() -> None:
    lab = {
        "name": "t",
        "nodes": [
            {"name": "ctl", "container": "t-ctl", "ip": "10.0.0.11", "host_key": "ssh-ed25519 AAAActl"},
            {"name": "gpu1", "container": "t-gpu1", "ip": "10.0.0.12", "host_key": "ssh-ed25519 AAAAgpu"},
        ],
    }
    known, config = labctl.ssh_files(lab)
    assert known.splitlines() == [
        "10.0.0.11,ctl,t-ctl ssh-ed25519 AAAActl",
        "10.0.0.12,gpu1,t-gpu1 ssh-ed25519 AAAAgpu",
    ]
    assert "Host 10.0.0.12 gpu1 t-gpu1\n  HostName 10.0.0.12\n  HostKeyAlias gpu1\n" in config
    assert "  StrictHostKeyChecking yes\n" in config
    assert f"  UserKnownHostsFile {labctl.lab_dir('t') / 'known_hosts'}\n" in config
    assert f"  IdentityFile {labctl.lab_dir('t') / 'id_ed25519'}\n" in config


def test_payload_gives_root_and_opc_the_labs_key() -> None:
    node = labctl.parse_nodes("c1:VM.Standard.E5.Flex")[0]
    payload = labctl.node_payload("lab", node, pubkey="ssh-ed25519 AAAAkey oci-gpu-lab-lab\n")
    # Outside /home: a File Storage export mounted there must not hide opc's key.
    for user in ("root", "opc"):
        assert payload["files"][f"/etc/ssh/authorized_keys/{user}"] == ("0644", "ssh-ed25519 AAAAkey oci-gpu-lab-lab\n")
    conf = payload["files"]["/etc/ssh/sshd_config.d/60-oci-gpu-lab-keys.conf"][1]
    assert conf == "AuthorizedKeysFile /etc/ssh/authorized_keys/%u .ssh/authorized_keys\n"
    assert ["systemctl", "reload-or-restart", "ssh"] in payload["post_commands"]
    assert not any("authorized_keys" in p for p in labctl.node_payload("lab", node)["files"])
