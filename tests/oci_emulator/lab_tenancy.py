# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tenancy of a running lab: its nodes as OCI instances, for the emulator (TEST ONLY).

Built from the lab's state (``labs/<lab>/lab.json``, written by ``tests/lab/lab up``), so the API and
the lab's IMDS agree: the same instance OCIDs, compartment, availability domain, shapes, defined
tags (``oci-gpu.slurm-role``, ``oci-gpu.cluster``), private IPs and RDMA topology (HPC island /
network block / local block). The GPU nodes with RDMA sit in one cluster network (instance pool);
every node with the lab's ``nfs`` role is a File Storage mount target exporting the lab's exports
(``/home``, ``/apps``) as file systems of the same names.

    python -m tests.oci_emulator.lab_tenancy /var/lib/oci-gpu-lab/labs/demo/lab.json > tenancy.json
"""

from __future__ import annotations

import ipaddress
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .tenancy import EPOCH, ocid


def _iso(ms: Any) -> str:
    if isinstance(ms, (int, float)):
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()
    return str(ms or EPOCH)


def lab_tenancy(lab: dict[str, Any]) -> dict[str, Any]:
    """A tenancy dict (see tenancy.py) whose instances are the lab's nodes."""
    nodes = [n for n in lab["nodes"] if n.get("imds")]
    if not nodes:
        raise ValueError(f"lab {lab.get('name')!r} has no registered nodes (is it up?)")
    name = lab["name"]
    first = nodes[0]["imds"]["instance"]
    region = first["canonicalRegionName"]
    key = first["regionInfo"]["regionKey"]
    tenancy_id = first["tenantId"]
    comp = first["compartmentId"]
    ad = first["availabilityDomain"]
    network = ipaddress.ip_network(nodes[0]["subnet"], strict=False)
    subnet_id = ocid("subnet", key, name, "lab")
    subnet = {
        "id": subnet_id,
        "compartmentId": comp,
        "vcnId": ocid("vcn", key, name),
        "availabilityDomain": None,
        "cidrBlock": str(network),
        "displayName": f"{name}-subnet",
        "dnsLabel": "lab",
        "subnetDomainName": f"lab.{name}.oraclevcn.com",
        "prohibitPublicIpOnVnic": True,
        "prohibitInternetIngress": True,
        "lifecycleState": "AVAILABLE",
        "timeCreated": EPOCH,
        "freeformTags": {},
        "definedTags": {},
        "virtualRouterIp": nodes[0].get("gateway") or str(next(network.hosts())),
        "virtualRouterMac": "00:00:17:00:00:01",
        "routeTableId": ocid("routetable", key, name),
        "securityListIds": [],
        "dhcpOptionsId": ocid("dhcpoptions", key, name),
    }
    instances: list[dict[str, Any]] = []
    rdma_ids: list[str] = []
    for node in nodes:
        doc = node["imds"]["instance"]
        host = node["imds"].get("host") or {}
        inst = {
            "id": doc["id"],
            "compartmentId": doc["compartmentId"],
            "availabilityDomain": doc["availabilityDomain"],
            "faultDomain": doc["faultDomain"],
            "displayName": doc["displayName"],
            "region": region,
            "shape": doc["shape"],
            "shapeConfig": {"gpus": 0, "localDisks": 0, **doc["shapeConfig"]},
            "lifecycleState": "RUNNING",
            "timeCreated": _iso(doc.get("timeCreated")),
            "imageId": doc.get("image"),
            "launchMode": "NATIVE",
            "freeformTags": dict(doc.get("freeformTags") or {}),
            "definedTags": {ns: dict(tags) for ns, tags in (doc.get("definedTags") or {}).items()},
            "systemTags": {},
            "metadata": dict(doc.get("metadata") or {}),
            "extendedMetadata": {},
            "instanceConfigurationId": None,
            "_vnics": [
                {
                    "vnicId": v.get("vnicId"),
                    "subnetId": subnet_id,
                    "privateIp": v["privateIp"],
                    "hostnameLabel": doc.get("hostname") or doc["displayName"],
                    "publicIp": None,
                    "isPrimary": i == 0,
                }
                for i, v in enumerate(node["imds"].get("vnics") or [])
            ],
        }
        topo = host.get("rdmaTopologyData")
        if topo:
            inst["_computeHost"] = {
                "hpcIslandId": topo.get("customerHPCIslandId"),
                "networkBlockId": topo.get("customerNetworkBlock"),
                "localBlockId": topo.get("customerLocalBlock"),
                "gpuMemoryFabricId": topo.get("customerGpuMemoryFabric"),
                "health": "HEALTHY",
            }
            rdma_ids.append(inst["id"])
        instances.append(inst)
    region_data: dict[str, Any] = {
        "key": key,
        "availabilityDomains": [ad],
        "subnets": [subnet],
        "instances": instances,
        "instancePools": [],
        "clusterNetworks": [],
    }
    if rdma_ids:
        pool = {
            "id": ocid("instancepool", key, name, "gpu"),
            "compartmentId": comp,
            "displayName": f"{name}-gpu-pool",
            "instanceConfigurationId": ocid("instanceconfiguration", key, name, "gpu"),
            "lifecycleState": "RUNNING",
            "availabilityDomains": [ad],
            "size": len(rdma_ids),
            "timeCreated": EPOCH,
            "freeformTags": {},
            "definedTags": {},
            "_instanceIds": rdma_ids,
        }
        for inst in instances:
            if inst["id"] in rdma_ids:
                inst["instanceConfigurationId"] = pool["instanceConfigurationId"]
        region_data["instancePools"] = [pool]
        region_data["clusterNetworks"] = [
            {
                "id": ocid("clusternetwork", key, name, "gpu"),
                "compartmentId": comp,
                "displayName": f"{name}-cluster-network",
                "lifecycleState": "RUNNING",
                "timeCreated": EPOCH,
                "timeUpdated": EPOCH,
                "freeformTags": {},
                "definedTags": {},
                "instancePools": [pool["id"]],
            }
        ]
    mount_targets, file_systems, exports = [], [], []
    for node in (n for n in nodes if "nfs" in (n.get("roles") or [])):
        export_set = ocid("exportset", key, name, node["name"])
        mount_targets.append(
            {
                "id": ocid("mounttarget", key, name, node["name"]),
                "compartmentId": comp,
                "availabilityDomain": ad,
                "displayName": f"{node['name']}-mount-target",
                "exportSetId": export_set,
                "lifecycleState": "ACTIVE",
                "subnetId": subnet_id,
                "timeCreated": EPOCH,
                "freeformTags": {"oci_gpu_lab": name},
                "definedTags": {},
                "_ip": node["ip"],
            }
        )
        for export in lab.get("exports") or []:
            fs_id = ocid("filesystem", key, name, node["name"], export)
            file_systems.append(
                {
                    "id": fs_id,
                    "compartmentId": comp,
                    "availabilityDomain": ad,
                    "displayName": export,
                    "lifecycleState": "ACTIVE",
                    "meteredBytes": 0,
                    "timeCreated": EPOCH,
                    "freeformTags": {"oci_gpu_lab": name},
                    "definedTags": {},
                }
            )
            exports.append(
                {
                    "id": ocid("export", key, name, node["name"], export),
                    "exportSetId": export_set,
                    "fileSystemId": fs_id,
                    "path": f"/{export}",
                    "lifecycleState": "ACTIVE",
                    "timeCreated": EPOCH,
                    "_compartmentId": comp,
                }
            )
    region_data.update(mountTargets=mount_targets, fileSystems=file_systems, exports=exports)
    return {
        "tenancy": {"id": tenancy_id, "name": name, "homeRegion": region},
        "compartments": [
            {
                "id": comp,
                "compartmentId": tenancy_id,
                "name": name,
                "description": f"oci-gpu-lab {name}",
                "timeCreated": EPOCH,
                "lifecycleState": "ACTIVE",
                "isAccessible": True,
                "freeformTags": {},
                "definedTags": {},
            }
        ],
        "regions": {region: region_data},
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.oci_emulator.lab_tenancy LAB_JSON", file=sys.stderr)
        return 2
    print(json.dumps(lab_tenancy(json.loads(Path(argv[0]).read_text())), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
