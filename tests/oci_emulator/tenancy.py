# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tenancy state for the OCI API emulator: a data model, a seeded generator, and a file loader.

A tenancy is a plain dict (what ``generate()`` returns and what a JSON/YAML tenancy file holds)::

    {"tenancy": {"id": ..., "name": ..., "homeRegion": ...},
     "compartments": [Compartment, ...],          # every compartment except the root
     "regions": {"us-ashburn-1": {
         "key": "IAD", "availabilityDomains": ["Xyzz:US-ASHBURN-AD-1", ...],
         "subnets": [Subnet], "instances": [Instance + "_vnics" + "_computeHost"],
         "instancePools": [InstancePool + "_instanceIds"], "clusterNetworks": [ClusterNetwork],
         "clusters": [...], "nodePools": [...], "addonOptions": [...],
         "mountTargets": [...], "fileSystems": [...], "exports": [...], "lustreFileSystems": [...]}}}

Records use the API's camelCase JSON. Keys starting with ``_`` are emulator-only and never
served. ``Tenancy`` derives VNIC attachments, VNICs, private/public IPs and compute hosts from
each instance's ``_vnics`` / ``_computeHost``, so a hand-written file (the lab, issue 6) only
needs instances with addresses.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import threading
from pathlib import Path
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes

REGIONS = [
    ("us-ashburn-1", "IAD"),
    ("us-phoenix-1", "PHX"),
    ("eu-frankfurt-1", "FRA"),
    ("uk-london-1", "LHR"),
    ("ap-tokyo-1", "NRT"),
    ("us-chicago-1", "ORD"),
]
EPOCH = "2026-01-01T00:00:00.000000+00:00"
SLURM_ROLES = ("controller", "dbd", "login")


def ocid(kind: str, region_key: str, *parts: Any) -> str:
    """A deterministic, realistic-looking OCID."""
    digest = hashlib.sha256("/".join(str(p) for p in (kind, region_key, *parts)).encode()).hexdigest()[:60]
    realm_region = region_key.lower() if region_key else ""
    return f"ocid1.{kind}.oc1.{realm_region}.aaaaaaaa{digest}"


def _ad_names(region: str, count: int = 3) -> list[str]:
    # "us-ashburn-1" -> "Uocm:US-ASHBURN-AD-1" (the real form: region name without its number)
    base = region.rsplit("-", 1)[0].upper()
    return [f"Uocm:{base}-AD-{i}" for i in range(1, count + 1)]


# ---------------------------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------------------------
DEFAULT_GPU_SHAPES = {"BM.GPU.H100.8": 5, "BM.GPU.H200.8": 3, "BM.GPU.A100-v2.8": 2, "BM.GPU.MI300X.8": 1}


def generate(
    *,
    seed: int = 1,
    hosts: int = 100,
    compartments: int = 5,
    regions: int = 1,
    subnets_per_region: int = 3,
    vnics_per_host: int = 1,
    public_fraction: float = 0.0,
    stopped_fraction: float = 0.0,
    cpu_fraction: float = 0.1,
    gpu_shapes: dict[str, int] | None = None,
    cluster_network_fraction: float = 0.5,
    cluster_network_size: int = 64,
    cluster_compartments: int | None = None,
    hosts_per_network_block: int = 32,
    hosts_per_local_block: int = 8,
    network_blocks_per_island: int = 4,
    slurm_controllers: int = 1,
    clusters: int = 1,
    oke_clusters: int = 0,
    storage: bool = True,
    tenancy_name: str = "emulated",
) -> dict[str, Any]:
    """A deterministic tenancy. ``compartments`` counts the root; children nest up to 3 levels.

    Layout: the root holds no instances; one child compartment is ``network`` (subnets, no hosts);
    GPU hosts spread over the remaining compartments round-robin by region; cluster networks live in
    the first ``cluster_compartments`` host compartments (default: all). Public IPs only on hosts in
    the per-region public subnet (the edge/login hosts), which get ``public_fraction`` of hosts.
    """
    rng = random.Random(seed)
    shapes_w = gpu_shapes or DEFAULT_GPU_SHAPES
    shape_names = list(shapes_w)
    shape_weights = [shapes_w[s] for s in shape_names]
    region_list = REGIONS[:regions]
    tenancy_id = ocid("tenancy", "", tenancy_name, seed)
    home = region_list[0][0]

    comps: list[dict[str, Any]] = []
    parents = [tenancy_id]
    for i in range(1, compartments):
        # a tree: the first 5 children under the root, then each new compartment under an earlier one
        parent = tenancy_id if i <= 5 else comps[(i - 6) % max(1, len(comps))]["id"]
        name = "network" if i == 1 else f"team{i:03d}"
        cid = ocid("compartment", "", tenancy_name, seed, i)
        comps.append(
            {
                "id": cid,
                "compartmentId": parent,
                "name": name,
                "description": f"emulated compartment {name}",
                "timeCreated": EPOCH,
                "lifecycleState": "ACTIVE",
                "isAccessible": True,
                "freeformTags": {},
                "definedTags": {},
            }
        )
        parents.append(cid)
    network_comp = comps[0]["id"] if comps else tenancy_id
    host_comps = [c["id"] for c in comps[1:]] or [tenancy_id]
    n_cluster_comps = (
        len(host_comps) if cluster_compartments is None else max(1, min(cluster_compartments, len(host_comps)))
    )

    out: dict[str, Any] = {
        "tenancy": {"id": tenancy_id, "name": tenancy_name, "homeRegion": home},
        "compartments": comps,
        "regions": {},
    }
    comp_shape = {c: rng.choices(shape_names, shape_weights)[0] for c in host_comps}
    n_public = round(hosts * public_fraction)
    n_cpu = round(hosts * cpu_fraction)
    host_no = 0
    for r_index, (region, key) in enumerate(region_list):
        ads = _ad_names(region)
        rdata: dict[str, Any] = {"key": key, "availabilityDomains": ads}
        vcn = ocid("vcn", key, seed, region)
        subnets = []
        for s in range(subnets_per_region):
            public = s == subnets_per_region - 1 and n_public > 0
            label = "pub" if public else f"gpu{s}"
            cidr_base = 10 * 256 + r_index * 16 + s  # 10.<r*16+s>.0.0/16 -> unique per region/subnet
            subnets.append(
                {
                    "id": ocid("subnet", key, seed, region, s),
                    "compartmentId": network_comp,
                    "vcnId": vcn,
                    "availabilityDomain": None,
                    "cidrBlock": f"{cidr_base // 256}.{cidr_base % 256}.0.0/16",
                    "displayName": f"{label}-subnet",
                    "dnsLabel": label,
                    "subnetDomainName": f"{label}.vcn{r_index}.oraclevcn.com",
                    "prohibitPublicIpOnVnic": not public,
                    "prohibitInternetIngress": not public,
                    "lifecycleState": "AVAILABLE",
                    "timeCreated": EPOCH,
                    "freeformTags": {},
                    "definedTags": {},
                    "virtualRouterIp": f"{cidr_base // 256}.{cidr_base % 256}.0.1",
                    "virtualRouterMac": "00:00:17:00:00:01",
                    "routeTableId": ocid("routetable", key, seed, region),
                    "securityListIds": [],
                    "dhcpOptionsId": ocid("dhcpoptions", key, seed, region),
                }
            )
        rdata["subnets"] = subnets
        private_subnets = [s for s in subnets if s["prohibitPublicIpOnVnic"]] or subnets
        public_subnets = [s for s in subnets if not s["prohibitPublicIpOnVnic"]]
        ip_next = {s["id"]: 10 for s in subnets}
        instances: list[dict[str, Any]] = []
        pools: list[dict[str, Any]] = []
        cns: list[dict[str, Any]] = []
        # hosts of this region
        r_hosts = hosts // len(region_list) + (1 if r_index < hosts % len(region_list) else 0)
        r_public = n_public // len(region_list) + (1 if r_index < n_public % len(region_list) else 0)
        r_cpu = n_cpu // len(region_list) + (1 if r_index < n_cpu % len(region_list) else 0)
        roles_left = {
            c: list(SLURM_ROLES[: 1 + (1 if slurm_controllers else 0)]) if slurm_controllers else []
            for c in range(clusters)
        }
        open_cn: dict[str, Any] = {}
        for h in range(r_hosts):
            host_no += 1
            comp = host_comps[h % len(host_comps)]
            is_public = h < r_public
            is_cpu = is_public or h < r_public + r_cpu
            # one GPU shape per compartment (teams run one kind of node), chosen by weight
            shape = "VM.Standard.E5.Flex" if is_cpu else comp_shape[comp]
            info = _shapes.shape_info(shape) or {}
            name = f"{'login' if is_public else ('cpu' if is_cpu else 'gpu')}-{key.lower()}-{h:05d}"
            ad = ads[h % len(ads)] if is_cpu else ads[0]
            stopped = not is_cpu and rng.random() < stopped_fraction
            # the Slurm cluster and role as the defined tags oci-gpu.cluster / oci-gpu.slurm-role (issue 15);
            # with clusters > 1 the region's hosts alternate between clusters <tenancy>-1, <tenancy>-2, ...
            c = h % clusters
            tags: dict[str, str] = {"cluster": tenancy_name if clusters == 1 else f"{tenancy_name}-{c + 1}"}
            if is_public:
                tags["slurm-role"] = "login"
            elif is_cpu and roles_left[c]:
                tags["slurm-role"] = roles_left[c].pop(0)
            elif not is_cpu:
                tags["slurm-role"] = "compute"
            iid = ocid("instance", key, seed, region, h)
            gpus = int(info.get("gpu_count") or 0)
            shape_config = {
                "ocpus": float(info.get("ocpus") or 4),
                "memoryInGBs": float(info.get("memory_gb") or 32),
                "vcpus": int((info.get("ocpus") or 4) * (info.get("threads_per_core") or 2)),
                "gpus": gpus,
                "gpuDescription": info.get("gpu_description") if gpus else None,
                "localDisks": int(info.get("nvme_count") or 0),
                "localDisksTotalSizeInGBs": float((info.get("nvme_count") or 0) * (info.get("nvme_size_gb") or 0))
                or None,
                "networkingBandwidthInGbps": 100.0 if not is_cpu else 4.0,
                "maxVnicAttachments": 256 if not is_cpu else 4,
                "processorDescription": "emulated",
            }
            subnet_pool = public_subnets if is_public else private_subnets
            vnics = []
            for v in range(vnics_per_host):
                sn = subnet_pool[(h + v) % len(subnet_pool)]
                n = ip_next[sn["id"]]
                ip_next[sn["id"]] += 1
                net = sn["cidrBlock"].split("/")[0].split(".")
                vnics.append(
                    {
                        "subnetId": sn["id"],
                        "privateIp": f"{net[0]}.{net[1]}.{n // 250}.{n % 250 + 2}",
                        "hostnameLabel": name if v == 0 else f"{name}-v{v}",
                        "publicIp": (f"203.0.{r_index}.{h % 250 + 2}" if (is_public and v == 0) else None),
                        "isPrimary": v == 0,
                    }
                )
            inst = {
                "id": iid,
                "compartmentId": comp,
                "availabilityDomain": ad,
                "faultDomain": f"FAULT-DOMAIN-{h % 3 + 1}",
                "displayName": name,
                "region": region,
                "shape": shape,
                "shapeConfig": shape_config,
                "lifecycleState": "STOPPED" if stopped else "RUNNING",
                "timeCreated": EPOCH,
                "imageId": ocid("image", key, "ol8-gpu"),
                "launchMode": "NATIVE",
                "freeformTags": {"team": comp[-6:]},
                "definedTags": {"hpc": {"team": comp[-6:], "cost_center": f"cc{h % 7}"}, "oci-gpu": tags},
                "systemTags": {},
                "metadata": {
                    "ssh_authorized_keys": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQSECRET emulator@example",
                    "user_data": "I2Nsb3VkLWNvbmZpZwpTRUNSRVQ=",
                },
                "extendedMetadata": {},
                "instanceConfigurationId": None,
                "_vnics": vnics,
            }
            if info.get("kind") == "bare_metal" and gpus:
                nb = h // hosts_per_network_block
                inst["_computeHost"] = {
                    "hpcIslandId": ocid("computehpcisland", key, seed, region, nb // network_blocks_per_island),
                    "networkBlockId": ocid("computenetworkblock", key, seed, region, nb),
                    "localBlockId": ocid("computelocalblock", key, seed, region, h // hosts_per_local_block),
                    # GB200/GB300 (NVL72): 18 hosts of 4 GPUs share one NVLink domain
                    "gpuMemoryFabricId": (
                        ocid("computegpumemoryfabric", key, seed, region, h // 18)
                        if info.get("gpu_model") in ("gb200", "gb300")
                        else None
                    ),
                    "health": "HEALTHY",
                }
                # cluster networks: only RDMA shapes, only in the first cluster compartments
                rdma = int(info.get("rdma_nic_count") or 0)
                comp_idx = host_comps.index(comp)
                if rdma and comp_idx < n_cluster_comps and rng.random() < cluster_network_fraction:
                    cn = open_cn.get(comp + shape)
                    if cn is None or len(cn["_pool"]["_instanceIds"]) >= cluster_network_size:
                        n_cn = len(cns)
                        pool = {
                            "id": ocid("instancepool", key, seed, region, "pool", n_cn),
                            "compartmentId": comp,
                            "displayName": f"pool-{key.lower()}-{n_cn}",
                            "instanceConfigurationId": ocid("instanceconfiguration", key, seed, region, n_cn),
                            "lifecycleState": "RUNNING",
                            "availabilityDomains": [ad],
                            "size": 0,
                            "timeCreated": EPOCH,
                            "freeformTags": {},
                            "definedTags": {},
                            "_instanceIds": [],
                        }
                        cn = {
                            "id": ocid("clusternetwork", key, seed, region, n_cn),
                            "compartmentId": comp,
                            "displayName": f"cn-{key.lower()}-{n_cn}",
                            "lifecycleState": "RUNNING",
                            "timeCreated": EPOCH,
                            "timeUpdated": EPOCH,
                            "freeformTags": {},
                            "definedTags": {},
                            "_pool": pool,
                        }
                        pools.append(pool)
                        cns.append(cn)
                        open_cn[comp + shape] = cn
                    pool = cn["_pool"]
                    pool["_instanceIds"].append(iid)
                    pool["size"] = len(pool["_instanceIds"])
                    inst["instanceConfigurationId"] = pool["instanceConfigurationId"]
            instances.append(inst)
        for cn in cns:
            cn["instancePools"] = [cn.pop("_pool")["id"]]
        rdata["instances"] = instances
        rdata["instancePools"] = pools
        rdata["clusterNetworks"] = cns
        if oke_clusters:
            rdata.update(_generate_oke(key, seed, region, host_comps[0], oke_clusters, subnets[0]["id"], ads))
        if storage:
            rdata.update(_generate_storage(key, seed, region, network_comp, subnets[0], ads))
        out["regions"][region] = rdata
    return out


def _generate_oke(key: str, seed: int, region: str, comp: str, count: int, subnet: str, ads: list[str]) -> dict:
    clusters, node_pools = [], []
    for c in range(count):
        cid = ocid("cluster", key, seed, region, c)
        clusters.append(
            {
                "id": cid,
                "name": f"oke-{key.lower()}-{c}",
                "compartmentId": comp,
                "vcnId": ocid("vcn", key, seed, region),
                "kubernetesVersion": "v1.31.1",
                "lifecycleState": "ACTIVE",
                "type": "ENHANCED_CLUSTER",
                "freeformTags": {},
                "definedTags": {},
                "endpoints": {"privateEndpoint": f"10.0.0.{10 + c}:6443"},
            }
        )
        for p, (shape, size) in enumerate((("VM.Standard.E5.Flex", 2), ("BM.GPU.H100.8", 2))):
            pid = ocid("nodepool", key, seed, region, c, p)
            nodes = [
                {
                    "id": ocid("instance", key, seed, region, "oke", c, p, n),
                    "name": f"oke-{c}-{p}-{n}",
                    "kubernetesVersion": "v1.31.1",
                    "availabilityDomain": ads[0],
                    "subnetId": subnet,
                    "nodePoolId": pid,
                    "faultDomain": f"FAULT-DOMAIN-{n % 3 + 1}",
                    "privateIp": f"10.250.{c * 8 + p}.{n + 10}",
                    "lifecycleState": "ACTIVE",
                    "lifecycleDetails": "",
                    "freeformTags": {},
                    "definedTags": {},
                }
                for n in range(size)
            ]
            node_pools.append(
                {
                    "id": pid,
                    "clusterId": cid,
                    "compartmentId": comp,
                    "name": f"{'gpu' if p else 'system'}-pool",
                    "kubernetesVersion": "v1.31.1",
                    "nodeShape": shape,
                    "lifecycleState": "ACTIVE",
                    "freeformTags": {},
                    "definedTags": {},
                    "nodes": nodes,
                }
            )
    # OKE installs its essential NVIDIA device plugin on every cluster; the GPU operator replaces it
    addons = {
        c["id"]: {
            "NvidiaGpuPlugin": {
                "name": "NvidiaGpuPlugin",
                "version": "v0.16.2",
                "currentInstalledVersion": "v0.16.2",
                "timeCreated": EPOCH,
                "lifecycleState": "ACTIVE",
                "configurations": [],
                "addonError": None,
            }
        }
        for c in clusters
    }
    return {"clusters": clusters, "nodePools": node_pools, "addons": addons, "addonOptions": default_addon_options()}


def default_addon_options() -> list[dict[str, Any]]:
    """OKE add-on catalogue with versions and Kubernetes version compatibility."""

    def version(number: str, min_k8s: str, configs: list[tuple[str, str]]) -> dict[str, Any]:
        return {
            "status": "ACTIVE",
            "versionNumber": number,
            "description": f"version {number}",
            "kubernetesVersionFilters": {
                "minimalVersion": min_k8s,
                "maximumVersion": None,
                "exactKubernetesVersions": [],
            },
            "configurations": [
                {"key": k, "value": v, "isRequired": False, "displayName": k, "description": k} for k, v in configs
            ],
        }

    # name -> ([(version, minimal Kubernetes version)], configuration keys with their defaults); keys
    # follow the upstream charts the OKE add-ons package (OKE's own names are not all documented)
    catalogue: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {
        "NvidiaGpuOperator": (
            [("v24.9.0", "v1.28.0"), ("v25.3.0", "v1.30.0")],
            [
                ("driver.enabled", "true"),
                ("toolkit.enabled", "true"),
                ("devicePlugin.enabled", "true"),
                ("dcgmExporter.enabled", "true"),
                ("migManager.enabled", "false"),
                ("nfd.enabled", "true"),
                ("gfd.enabled", "true"),
            ],
        ),
        "NvidiaNetworkOperator": (
            [("v24.10.0", "v1.28.0"), ("v25.1.0", "v1.30.0")],
            [
                ("nfd.enabled", "true"),
                ("ofedDriver.deploy", "false"),
                ("sriovDevicePlugin.deploy", "false"),
                ("sriovDevicePlugin.resources", "[]"),
                ("secondaryNetwork.deploy", "false"),
            ],
        ),
        "NodeFeatureDiscovery": ([("v0.16.6", "v1.28.0"), ("v0.17.2", "v1.30.0")], [("numOfReplicas", "1")]),
        "ClusterAutoscaler": (
            [("v1.30.3", "v1.30.0"), ("v1.31.1", "v1.31.0")],
            [("nodes", ""), ("numOfReplicas", "1"), ("scaleDownUnneededTime", "10m")],
        ),
        "CertManager": ([("v1.15.3", "v1.28.0")], [("numOfReplicas", "1")]),
        "KubernetesMetricsServer": ([("v0.7.2", "v1.28.0")], [("numOfReplicas", "1")]),
        "NvidiaGpuPlugin": ([("v0.16.2", "v1.28.0")], [("isDcgmExporterEnabled", "false")]),
    }
    options = []
    for name, (versions, configs) in catalogue.items():
        options.append(
            {
                "name": name,
                "addonSchemaVersion": "v1",
                "addonGroup": "community" if name != "NvidiaGpuPlugin" else "essential",
                "lifecycleState": "ACTIVE",
                "description": name,
                "isEssential": name == "NvidiaGpuPlugin",
                "versions": [version(v, k, configs) for v, k in versions],
                "freeformTags": {},
                "definedTags": {},
                "systemTags": {},
                "timeCreated": EPOCH,
            }
        )
    return options


def _generate_storage(key: str, seed: int, region: str, comp: str, subnet: dict, ads: list[str]) -> dict:
    net = subnet["cidrBlock"].split("/")[0].split(".")
    mt_ip = f"{net[0]}.{net[1]}.255.10"
    mt_id = ocid("mounttarget", key, seed, region)
    export_set = ocid("exportset", key, seed, region)
    fs = [
        {
            "id": ocid("filesystem", key, seed, region, name),
            "compartmentId": comp,
            "availabilityDomain": ads[0],
            "displayName": name,
            "lifecycleState": "ACTIVE",
            "meteredBytes": 0,
            "timeCreated": EPOCH,
            "freeformTags": {},
            "definedTags": {},
        }
        for name in ("home", "apps")
    ]
    return {
        "mountTargets": [
            {
                "id": mt_id,
                "compartmentId": comp,
                "availabilityDomain": ads[0],
                "displayName": "fss-mt",
                "exportSetId": export_set,
                "lifecycleState": "ACTIVE",
                "subnetId": subnet["id"],
                "timeCreated": EPOCH,
                "freeformTags": {},
                "definedTags": {},
                "_ip": mt_ip,
            }
        ],
        "fileSystems": fs,
        "exports": [
            {
                "id": ocid("export", key, seed, region, f["displayName"]),
                "exportSetId": export_set,
                "fileSystemId": f["id"],
                "path": "/" + f["displayName"],
                "lifecycleState": "ACTIVE",
                "timeCreated": EPOCH,
                "_compartmentId": comp,
            }
            for f in fs
        ],
        "lustreFileSystems": [
            {
                "id": ocid("lustrefilesystem", key, seed, region),
                "compartmentId": comp,
                "availabilityDomain": ads[0],
                "displayName": "scratch",
                "fileSystemName": "lfs1",
                "lifecycleState": "ACTIVE",
                "capacityInGBs": 31200,
                "subnetId": subnet["id"],
                "performanceTier": "MBPS_PER_TB_125",
                "managementServiceAddress": f"{net[0]}.{net[1]}.255.20",
                "lnet": "tcp",
                "majorVersion": "2.15",
                "timeCreated": EPOCH,
                "timeUpdated": EPOCH,
                "freeformTags": {},
                "definedTags": {},
            }
        ],
    }


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------
def load_tenancy_file(path: str | Path) -> dict[str, Any]:
    """Read a tenancy description from JSON or YAML (YAML needs PyYAML, which ansible-core brings)."""
    text = Path(path).read_text()
    if str(path).endswith((".yml", ".yaml")):
        import yaml

        return yaml.safe_load(text)
    return json.loads(text)


def public_view(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not k.startswith("_")}


class RegionState:
    """One region's records plus the indexes the routes filter by."""

    def __init__(self, tenancy_id: str, name: str, data: dict[str, Any]) -> None:
        self.name = name
        self.key = data.get("key") or name.split("-")[1][:3].upper()
        self.ads = list(data.get("availabilityDomains") or _ad_names(name))
        self.subnets = [dict(s) for s in data.get("subnets", [])]
        self.instances: list[dict[str, Any]] = []
        self.vnic_attachments: list[dict[str, Any]] = []
        self.vnics: dict[str, dict[str, Any]] = {}
        self.private_ips: list[dict[str, Any]] = []
        self.public_ips: list[dict[str, Any]] = []
        self.compute_hosts: list[dict[str, Any]] = []
        self.instance_pools = [dict(p) for p in data.get("instancePools", [])]
        self.cluster_networks = [dict(c) for c in data.get("clusterNetworks", [])]
        self.clusters = [dict(c) for c in data.get("clusters", [])]
        self.node_pools = [dict(p) for p in data.get("nodePools", [])]
        self.addon_options = [dict(o) for o in data.get("addonOptions", [])]
        # cluster id -> addon name -> Addon (+ emulator-only timing keys)
        self.addons: dict[str, dict[str, dict[str, Any]]] = copy.deepcopy(data.get("addons") or {})
        self.work_requests: dict[str, dict[str, Any]] = {}
        self.mount_targets = [dict(m) for m in data.get("mountTargets", [])]
        self.file_systems = [dict(f) for f in data.get("fileSystems", [])]
        self.exports = [dict(e) for e in data.get("exports", [])]
        self.lustre_file_systems = [dict(f) for f in data.get("lustreFileSystems", [])]
        self.compute_clusters = [dict(c) for c in data.get("computeClusters", [])]
        self.maintenance_events: list[dict[str, Any]] = [dict(e) for e in data.get("maintenanceEvents", [])]
        self.compute_work_requests: dict[str, dict[str, Any]] = {}
        subnet_by_id = {s["id"]: s for s in self.subnets}
        for inst in data.get("instances", []):
            self._add_instance(dict(inst), subnet_by_id)
        for mt in self.mount_targets:
            # a mount target owns a private IP in its subnet
            pip_id = ocid("privateip", self.key, mt["id"])
            mt.setdefault("privateIpIds", [pip_id])
            self.private_ips.append(
                {
                    "id": pip_id,
                    "ipAddress": mt.get("_ip", "10.255.255.10"),
                    "subnetId": mt["subnetId"],
                    "vnicId": None,
                    "hostnameLabel": mt.get("displayName"),
                    "isPrimary": True,
                    "compartmentId": mt["compartmentId"],
                    "availabilityDomain": mt.get("availabilityDomain"),
                    "displayName": mt.get("displayName"),
                    "timeCreated": EPOCH,
                    "freeformTags": {},
                    "definedTags": {},
                }
            )
        self.by_id: dict[str, dict[str, Any]] = {}
        for coll in (
            self.subnets,
            self.instances,
            self.vnic_attachments,
            self.private_ips,
            self.compute_hosts,
            self.instance_pools,
            self.cluster_networks,
            self.clusters,
            self.node_pools,
            self.mount_targets,
            self.file_systems,
            self.exports,
            self.lustre_file_systems,
            self.compute_clusters,
        ):
            for rec in coll:
                self.by_id[rec["id"]] = rec
        self.by_id.update(self.vnics)
        self.lock = threading.RLock()
        self.reindex()

    def reindex(self) -> None:
        def group(records: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
            idx: dict[str, list[dict[str, Any]]] = {}
            for r in records:
                idx.setdefault(r.get(key), []).append(r)
            return idx

        self.instances_by_comp = group(self.instances, "compartmentId")
        self.attachments_by_comp = group(self.vnic_attachments, "compartmentId")
        self.private_ips_by_subnet = group(self.private_ips, "subnetId")
        self.private_ips_by_vnic = group(self.private_ips, "vnicId")
        self.public_ip_by_private = {p["privateIpId"]: p for p in self.public_ips}

    def add_instance(self, inst: dict[str, Any]) -> None:
        """Add one instance after start-up (a launch): its VNICs, private IPs and compute host too."""
        before = (len(self.vnic_attachments), len(self.private_ips), len(self.public_ips), len(self.compute_hosts))
        self._add_instance(inst, {s["id"]: s for s in self.subnets})
        self.by_id[inst["id"]] = inst
        for coll, start in zip(
            (self.vnic_attachments, self.private_ips, self.public_ips, self.compute_hosts), before, strict=True
        ):
            for rec in coll[start:]:
                self.by_id[rec["id"]] = rec
        self.by_id.update(self.vnics)
        self.reindex()

    def _add_instance(self, inst: dict[str, Any], subnet_by_id: dict[str, dict[str, Any]]) -> None:
        vnics = inst.get("_vnics") or []
        inst.setdefault("region", self.name)
        inst.setdefault("lifecycleState", "RUNNING")
        inst.setdefault("faultDomain", "FAULT-DOMAIN-1")
        inst.setdefault("availabilityDomain", self.ads[0])
        inst.setdefault("freeformTags", {})
        inst.setdefault("definedTags", {})
        inst.setdefault("timeCreated", EPOCH)
        if "shapeConfig" not in inst:
            info = _shapes.shape_info(inst.get("shape")) or {}
            gpus = int(info.get("gpu_count") or 0)
            inst["shapeConfig"] = {
                "ocpus": float(info.get("ocpus") or 2),
                "memoryInGBs": float(info.get("memory_gb") or 16),
                "gpus": gpus,
                "gpuDescription": info.get("gpu_description") if gpus else None,
                "localDisks": int(info.get("nvme_count") or 0),
            }
        self.instances.append(inst)
        for n, v in enumerate(vnics):
            vnic_id = v.get("vnicId") or ocid("vnic", self.key, inst["id"], n)
            subnet = subnet_by_id.get(v["subnetId"], {})
            attached = inst["lifecycleState"] not in ("TERMINATED", "PROVISIONING")
            self.vnic_attachments.append(
                {
                    "id": ocid("vnicattachment", self.key, inst["id"], n),
                    "instanceId": inst["id"],
                    "vnicId": vnic_id,
                    "subnetId": v["subnetId"],
                    "compartmentId": inst["compartmentId"],
                    "availabilityDomain": inst["availabilityDomain"],
                    "displayName": f"vnicattachment{n}",
                    "lifecycleState": "ATTACHED"
                    if attached
                    else ("ATTACHING" if inst["lifecycleState"] == "PROVISIONING" else "DETACHED"),
                    "nicIndex": 0,
                    # the primary VNIC is attached at launch, secondary ones later
                    "timeCreated": EPOCH.replace("00:00:00", f"00:00:{n:02d}"),
                    "vlanTag": 0,
                }
            )
            pip_id = ocid("privateip", self.key, inst["id"], n)
            self.private_ips.append(
                {
                    "id": pip_id,
                    "ipAddress": v["privateIp"],
                    "subnetId": v["subnetId"],
                    "vnicId": vnic_id,
                    "hostnameLabel": v.get("hostnameLabel"),
                    "isPrimary": True,
                    "compartmentId": inst["compartmentId"],
                    "availabilityDomain": inst["availabilityDomain"],
                    "displayName": v.get("privateIp"),
                    "timeCreated": EPOCH,
                    "freeformTags": {},
                    "definedTags": {},
                    "cidrPrefixLength": int(str(subnet.get("cidrBlock", "x/24")).split("/")[1]),
                    "ipState": "ASSIGNED",
                    "lifetime": "EPHEMERAL",
                }
            )
            self.vnics[vnic_id] = {
                "id": vnic_id,
                "compartmentId": inst["compartmentId"],
                "availabilityDomain": inst["availabilityDomain"],
                "displayName": f"{inst.get('displayName')}-vnic{n}",
                "hostnameLabel": v.get("hostnameLabel"),
                "isPrimary": bool(v.get("isPrimary", n == 0)),
                "lifecycleState": "AVAILABLE",
                "macAddress": f"02:00:17:{len(self.vnics) >> 16 & 255:02x}:{len(self.vnics) >> 8 & 255:02x}:{n:02x}",
                "privateIp": v["privateIp"],
                "publicIp": v.get("publicIp"),
                "subnetId": v["subnetId"],
                "skipSourceDestCheck": False,
                "timeCreated": EPOCH,
                "freeformTags": {},
                "definedTags": {},
                "nsgIds": [],
            }
            if v.get("publicIp"):
                self.public_ips.append(
                    {
                        "id": ocid("publicip", self.key, inst["id"], n),
                        "ipAddress": v["publicIp"],
                        "privateIpId": pip_id,
                        "assignedEntityId": pip_id,
                        "assignedEntityType": "PRIVATE_IP",
                        "availabilityDomain": inst["availabilityDomain"],
                        "compartmentId": inst["compartmentId"],
                        "displayName": v["publicIp"],
                        "lifecycleState": "ASSIGNED",
                        "lifetime": "EPHEMERAL",
                        "scope": "AVAILABILITY_DOMAIN",
                        "timeCreated": EPOCH,
                        "freeformTags": {},
                        "definedTags": {},
                    }
                )
        host = inst.get("_computeHost")
        if host:
            self.compute_hosts.append(
                {
                    "id": host.get("id") or ocid("computehost", self.key, inst["id"]),
                    "compartmentId": inst["compartmentId"],
                    "availabilityDomain": inst["availabilityDomain"],
                    "faultDomain": inst["faultDomain"],
                    "displayName": inst.get("displayName"),
                    "shape": inst.get("shape"),
                    "instanceId": inst["id"],
                    "hpcIslandId": host.get("hpcIslandId"),
                    "networkBlockId": host.get("networkBlockId"),
                    "localBlockId": host.get("localBlockId"),
                    "gpuMemoryFabricId": host.get("gpuMemoryFabricId"),
                    "health": host.get("health", "HEALTHY"),
                    "lifecycleState": "OCCUPIED" if inst["lifecycleState"] != "TERMINATED" else "AVAILABLE",
                    "timeCreated": EPOCH,
                    "timeUpdated": EPOCH,
                    "freeformTags": {},
                    "definedTags": {},
                }
            )


class Tenancy:
    """The emulator's whole state: identity data plus one ``RegionState`` per subscribed region."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        ten = data["tenancy"]
        self.id: str = ten["id"]
        self.name: str = ten.get("name", "emulated")
        self.compartments: list[dict[str, Any]] = [dict(c) for c in data.get("compartments", [])]
        for c in self.compartments:
            c.setdefault("lifecycleState", "ACTIVE")
            c.setdefault("timeCreated", EPOCH)
            c.setdefault("description", c.get("name", ""))
            c.setdefault("compartmentId", self.id)
        self.regions: dict[str, RegionState] = {
            name: RegionState(self.id, name, rdata) for name, rdata in data.get("regions", {}).items()
        }
        self.home_region: str = ten.get("homeRegion") or next(iter(self.regions))
        self.children: dict[str, list[dict[str, Any]]] = {}
        for c in self.compartments:
            self.children.setdefault(c["compartmentId"], []).append(c)

    def subtree(self, root: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        stack = [root]
        while stack:
            for child in self.children.get(stack.pop(), []):
                out.append(child)
                stack.append(child["id"])
        return out

    def region_key(self, region: str) -> str:
        return self.regions[region].key
