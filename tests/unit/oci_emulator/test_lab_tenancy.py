# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""A lab as a tenancy: the FSS lookup finds the lab's NFS node behind its exports (ansible-inventory
against the same tenancy: tests/functional/oci_emulator/test_lab_tenancy.py)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
for p in (REPO, REPO / "tests" / "lab"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import imds  # noqa: E402
import labctl  # noqa: E402

from tests.oci_emulator.lab_tenancy import lab_tenancy  # noqa: E402
from tests.oci_emulator.testing import running_emulator  # noqa: E402


def fake_lab() -> dict[str, Any]:
    """What 'lab up' records for the demo's nodes plus a third GPU node, two placed in one local block by
    label (gpu2@b1, gpu3@b1) and gpu1 by its GPU ordinal (addresses as podman gives them)."""
    nodes = labctl.parse_nodes(
        "ctl:VM.Standard.E5.Flex,gpu1:BM.GPU.H100.8,gpu2:BM.GPU.H100.8@b1,gpu3:BM.GPU.H100.8@b1,"
        "login1:VM.Standard.E5.Flex,nfs:VM.Standard.E5.Flex",
        "ctl=controller+dbd,gpu1=compute,gpu2=compute,gpu3=compute,login1=login,nfs=nfs",
    )
    gpu_ordinal = 0
    for i, node in enumerate(nodes):
        node.update(
            container=f"demo-{node['name']}",
            ip=f"10.89.3.{11 + i}",
            mac=f"02:00:00:00:00:{i:02x}",
            gateway="10.89.3.1",
            subnet="10.89.3.0/24",
        )
        node["imds"] = imds.node_documents(
            "demo", node, labctl.SHAPES.shape_info(node["shape"]), ordinal=i, gpu_ordinal=gpu_ordinal
        )
        gpu_ordinal += 1 if node["gpus"] else 0
    return {"name": "demo", "region": "us-ashburn-1", "nodes": nodes, "exports": ["home", "apps"]}


@contextlib.contextmanager
def lab_world(workdir: Path) -> Iterator[tuple[dict[str, Any], Any]]:
    """The fake lab and the emulator serving it as a tenancy (the functional tests start it too)."""
    lab = fake_lab()
    with running_emulator(lab_tenancy(lab), workdir) as running:
        yield lab, running


def test_the_nfs_node_is_the_mount_target_of_the_lab_exports(tmp_path: Path) -> None:
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.storage import _fss

    with lab_world(tmp_path) as (lab, running):
        auth = _oci_auth.resolve_auth({"config_file": str(running.creds.config_file)})
        endpoint = running.endpoints["us-ashburn-1"]
        oci = _oci_auth.oci
        fss = _oci_auth.make_client(oci.file_storage.FileStorageClient, auth, None, endpoint)
        vnet = _oci_auth.make_client(oci.core.VirtualNetworkClient, auth, None, endpoint)
        region = lab_tenancy(lab)["regions"]["us-ashburn-1"]
        nfs_ip = next(n["ip"] for n in lab["nodes"] if n["name"] == "nfs")
        for fs in region["fileSystems"]:
            (rec,) = _fss.read_exports(
                fss,
                vnet,
                oci.util.to_dict,
                lambda method, **kw: oci.pagination.list_call_get_all_results(method, **kw).data,
                file_system_id=fs["id"],
            )
            assert rec["source"] == f"{nfs_ip}:/{fs['displayName']}"
