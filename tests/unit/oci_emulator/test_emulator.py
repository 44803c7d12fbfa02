# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The OCI API emulator answers the unmodified oci SDK: signatures, paging, counters, knobs, OKE add-ons."""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import oci
import pytest

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator import Emulator, Tenancy, generate, load_tenancy_file, write_oci_config  # noqa: E402

NO_RETRY = oci.retry.NoneRetryStrategy()


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tenancy = Tenancy(generate(seed=3, hosts=60, compartments=4, regions=2, oke_clusters=1, public_fraction=0.05))
    creds = write_oci_config(tmp_path_factory.mktemp("creds"), tenancy.id, tenancy.home_region)
    em = Emulator(tenancy, {creds.key_id: creds.public_pem}, addon_delay_s=0.2)
    endpoints = em.start()
    config = oci.config.from_file(str(creds.config_file), creds.profile)
    yield {"em": em, "t": tenancy, "eps": endpoints, "config": config, "creds": creds}
    em.stop()


def client(emu: dict, cls: Any, region: str | None = None, **kw: Any) -> Any:
    region = region or emu["t"].home_region
    kw.setdefault("retry_strategy", NO_RETRY)
    kw.setdefault("circuit_breaker_strategy", oci.circuit_breaker.NoCircuitBreakerStrategy())
    return cls(emu["config"], service_endpoint=emu["eps"][region], **kw)


def host_comp(emu: dict) -> str:
    return emu["t"].compartments[1]["id"]


def test_valid_signature_is_accepted_and_counted(emu: dict) -> None:
    before = emu["em"].counter_snapshot()["by_op"].get("ListInstances", 0)
    res = client(emu, oci.core.ComputeClient).list_instances(host_comp(emu))
    assert res.status == 200 and res.data
    assert emu["em"].counter_snapshot()["by_op"]["ListInstances"] == before + 1


def test_wrong_key_is_rejected_with_401(emu: dict, tmp_path: Path) -> None:
    other = write_oci_config(tmp_path, emu["t"].id, emu["t"].home_region)
    cfg = oci.config.from_file(str(other.config_file))
    cfg["fingerprint"] = emu["creds"].fingerprint  # same keyId, different private key
    c = oci.core.ComputeClient(cfg, service_endpoint=emu["eps"][emu["t"].home_region], retry_strategy=NO_RETRY)
    with pytest.raises(oci.exceptions.ServiceError) as err:
        c.list_instances(host_comp(emu))
    assert err.value.status == 401


def _raw(emu: dict, method: str, path: str, headers: dict[str, str] | None = None, body: bytes | None = None) -> int:
    req = urllib.request.Request(
        emu["eps"][emu["t"].home_region] + path, data=body, method=method, headers=headers or {}
    )
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_unsigned_and_tampered_requests_are_rejected(emu: dict) -> None:
    assert _raw(emu, "GET", f"/20160918/instances?compartmentId={host_comp(emu)}") == 401
    # a correctly signed write whose body was changed after signing
    signer = oci.signer.Signer(emu["t"].id, emu["creds"].user, emu["creds"].fingerprint, str(emu["creds"].key_file))
    from oci._vendor import requests  # the SDK's own vendored copy

    url = emu["eps"][emu["t"].home_region] + "/20180222/clusters/x/addons"
    req = requests.Request("POST", url, json={"addonName": "CertManager"}).prepare()
    signer(req)
    assert requests.Session().send(req).status_code == 404  # signature fine; cluster x does not exist
    req.body = b'{"addonName": "NvidiaGpuOperator"}'
    req.headers["content-length"] = str(len(req.body))
    assert requests.Session().send(req).status_code == 401


def test_paging_with_opc_next_page_and_limit_bounds(emu: dict) -> None:
    c = client(emu, oci.core.ComputeClient)
    comp = host_comp(emu)
    every = c.list_instances(comp, limit=1000).data
    seen, page, pages = [], None, 0
    while True:
        resp = c.list_instances(comp, limit=4, **({"page": page} if page else {}))
        pages += 1
        assert len(resp.data) <= 4
        seen += [i.id for i in resp.data]
        page = resp.next_page
        if not page:
            break
    assert seen == [i.id for i in every] and pages == -(-len(every) // 4) > 1
    with pytest.raises(oci.exceptions.ServiceError) as err:
        c.list_instances(comp, limit=1001)
    assert err.value.status == 400


def test_list_routes_answer_the_sdk(emu: dict) -> None:
    t = emu["t"]
    ident = client(emu, oci.identity.IdentityClient)
    comps = ident.list_compartments(t.id, compartment_id_in_subtree=True, access_level="ACCESSIBLE").data
    assert len(comps) == len(t.compartments)
    assert {r.region_name for r in ident.list_region_subscriptions(t.id).data} == set(t.regions)
    c = client(emu, oci.core.ComputeClient)
    atts = c.list_vnic_attachments(host_comp(emu), limit=1000).data
    net = client(emu, oci.core.VirtualNetworkClient)
    vnic = net.get_vnic(atts[0].vnic_id).data
    ips = net.list_private_ips(subnet_id=atts[0].subnet_id, limit=1000).data
    assert vnic.private_ip in {p.ip_address for p in ips}
    assert net.get_subnet(atts[0].subnet_id).data.cidr_block
    hosts = c.list_compute_hosts(t.id, compute_host_in_subtree=True, limit=1000).data.items
    assert hosts and all(h.hpc_island_id and h.network_block_id for h in hosts)
    gpu = [i for i in c.list_instances(host_comp(emu), limit=1000).data if i.shape.startswith("BM.GPU")]
    assert gpu and all(i.shape_config.gpus > 0 for i in gpu)


def test_counters_endpoint_and_reset(emu: dict) -> None:
    base = emu["eps"][emu["t"].home_region]
    client(emu, oci.core.ComputeClient).list_instances(host_comp(emu))
    snap = json.load(urllib.request.urlopen(base + "/_emulator/counters"))
    assert snap["by_region"][emu["t"].home_region]["ListInstances"] >= 1
    urllib.request.urlopen(urllib.request.Request(base + "/_emulator/reset", method="POST", data=b""))
    assert json.load(urllib.request.urlopen(base + "/_emulator/counters"))["requests"] == 0


def test_latency_knob_delays_answers(emu: dict) -> None:
    c = client(emu, oci.core.ComputeClient)
    emu["em"].knobs.update(latency_s=0.15)
    try:
        start = time.monotonic()
        c.list_instances(host_comp(emu))
        assert time.monotonic() - start >= 0.15
    finally:
        emu["em"].knobs.update(latency_s=0.0)


def test_rate_limit_answers_429(emu: dict) -> None:
    c = client(emu, oci.core.ComputeClient)
    emu["em"].knobs.update(rate_limit_per_s=2.0)
    statuses = []
    try:
        for _attempt in range(6):
            try:
                statuses.append(c.list_instances(host_comp(emu)).status)
            except oci.exceptions.ServiceError as exc:
                statuses.append(exc.status)
    finally:
        emu["em"].knobs.update(rate_limit_per_s=0.0)
    assert 429 in statuses and 200 in statuses


def test_fault_rate_and_compartment_errors(emu: dict) -> None:
    c = client(emu, oci.core.ComputeClient)
    emu["em"].knobs.update(fault_rate=1.0)
    try:
        with pytest.raises(oci.exceptions.ServiceError) as err:
            c.list_instances(host_comp(emu))
        assert err.value.status == 500
    finally:
        emu["em"].knobs.update(fault_rate=0.0)
    emu["em"].knobs.update(compartment_errors={host_comp(emu): 403})
    try:
        with pytest.raises(oci.exceptions.ServiceError) as err:
            c.list_vnic_attachments(host_comp(emu))
        assert err.value.status == 403
        assert c.list_instances(emu["t"].compartments[2]["id"]).status == 200
    finally:
        emu["em"].knobs.update(compartment_errors={})


def test_generator_is_deterministic() -> None:
    a = json.dumps(generate(seed=9, hosts=50, compartments=5, regions=2), sort_keys=True)
    b = json.dumps(generate(seed=9, hosts=50, compartments=5, regions=2), sort_keys=True)
    c = json.dumps(generate(seed=10, hosts=50, compartments=5, regions=2), sort_keys=True)
    assert a == b and a != c


def test_tenancy_file_derives_vnics_and_private_ips(tmp_path: Path) -> None:
    doc = """
tenancy: {id: ocid1.tenancy.oc1..lab, name: lab, homeRegion: us-ashburn-1}
compartments: [{id: ocid1.compartment.oc1..c1, name: lab, compartmentId: ocid1.tenancy.oc1..lab}]
regions:
  us-ashburn-1:
    subnets: [{id: ocid1.subnet.oc1.iad.s1, compartmentId: ocid1.compartment.oc1..c1, cidrBlock: 10.89.0.0/24,
               subnetDomainName: lab.vcn.oraclevcn.com, prohibitPublicIpOnVnic: true}]
    instances:
      - id: ocid1.instance.oc1.iad.gpu1
        compartmentId: ocid1.compartment.oc1..c1
        displayName: gpu1
        shape: BM.GPU.H100.8
        definedTags: {oci-gpu: {slurm-role: compute, cluster: lab}}
        _vnics: [{subnetId: ocid1.subnet.oc1.iad.s1, privateIp: 10.89.0.11, hostnameLabel: gpu1}]
        _computeHost:
          hpcIslandId: ocid1.computehpcisland.oc1.iad.i1
          networkBlockId: ocid1.computenetworkblock.oc1.iad.b1
"""
    path = tmp_path / "lab.yml"
    path.write_text(doc)
    t = Tenancy(load_tenancy_file(path))
    r = t.regions["us-ashburn-1"]
    assert r.instances[0]["shapeConfig"]["gpus"] == 8
    assert [p["ipAddress"] for p in r.private_ips] == ["10.89.0.11"]
    assert r.vnic_attachments[0]["instanceId"] == "ocid1.instance.oc1.iad.gpu1"
    assert r.compute_hosts[0]["hpcIslandId"] == "ocid1.computehpcisland.oc1.iad.i1"


def test_oke_addon_lifecycle_with_work_requests(emu: dict) -> None:
    t = emu["t"]
    ce = client(emu, oci.container_engine.ContainerEngineClient)
    cluster = t.regions[t.home_region].clusters[0]
    options = ce.list_addon_options(cluster["kubernetesVersion"]).data
    assert {o.name for o in options} >= {"NvidiaGpuOperator", "NvidiaNetworkOperator"}
    details = oci.container_engine.models.InstallAddonDetails(addon_name="CertManager", version="v1.15.3")
    resp = ce.install_addon(cluster["id"], details)
    wr = resp.headers["opc-work-request-id"]
    assert ce.get_addon(cluster["id"], "CertManager").data.lifecycle_state == "CREATING"
    with pytest.raises(oci.exceptions.ServiceError) as err:
        ce.install_addon(cluster["id"], details)
    assert err.value.status == 409
    time.sleep(0.3)
    assert ce.get_work_request(wr).data.status == "SUCCEEDED"
    assert ce.get_addon(cluster["id"], "CertManager").data.lifecycle_state == "ACTIVE"
    emu["em"].knobs.update(addon_failures={"KubernetesMetricsServer": "image pull failed"})
    try:
        resp = ce.install_addon(
            cluster["id"], oci.container_engine.models.InstallAddonDetails(addon_name="KubernetesMetricsServer")
        )
    finally:
        emu["em"].knobs.update(addon_failures={})
    time.sleep(0.3)
    addon = ce.get_addon(cluster["id"], "KubernetesMetricsServer").data
    assert addon.lifecycle_state == "NEEDS_ATTENTION" and "image pull" in addon.addon_error.message
    assert ce.get_work_request(resp.headers["opc-work-request-id"]).data.status == "FAILED"
    ce.disable_addon(cluster["id"], "CertManager", is_remove_existing_add_on=True)
    time.sleep(0.3)
    assert "CertManager" not in {a.name for a in ce.list_addons(cluster["id"]).data}
