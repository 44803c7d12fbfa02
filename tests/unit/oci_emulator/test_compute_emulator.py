# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The emulator as a small cloud, through the unmodified oci SDK: launch, lifecycle, retry tokens,
terminate, actions, tags, pools, compute clusters, host health, maintenance events, injected faults,
and the lab hook's part in each (a recording stand-in here; the lab's own hook makes containers)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import oci
import pytest

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator import Emulator, Tenancy, generate, write_oci_config  # noqa: E402

NO_RETRY = oci.retry.NoneRetryStrategy()
SHAPE = "BM.GPU.H100.8"


class RecordingHook:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.fail_launch = False
        self.lock = threading.Lock()

    def launch(self, region: str, instance: dict[str, Any]) -> None:
        with self.lock:
            self.calls.append(("launch", instance["displayName"], instance["lifecycleState"]))
        if self.fail_launch:
            raise RuntimeError("lab image missing")

    def terminate(self, region: str, instance: dict[str, Any]) -> None:
        with self.lock:
            self.calls.append(("terminate", instance["displayName"], instance["lifecycleState"]))

    def action(self, region: str, instance: dict[str, Any], action: str) -> None:
        with self.lock:
            self.calls.append((action, instance["displayName"], instance["lifecycleState"]))


@pytest.fixture
def cloud(tmp_path: Path) -> Any:
    tenancy = Tenancy(generate(seed=5, hosts=6, compartments=2, regions=1))
    creds = write_oci_config(tmp_path, tenancy.id, tenancy.home_region)
    em = Emulator(tenancy, {creds.key_id: creds.public_pem}, launch_delay_s=0.05, terminate_delay_s=0.05)
    em.compute_hook = RecordingHook()
    eps = em.start()
    config = oci.config.from_file(str(creds.config_file), creds.profile)
    region = tenancy.regions[tenancy.home_region]

    def client(cls: Any = oci.core.ComputeClient, retry: Any = NO_RETRY) -> Any:
        return cls(
            config,
            service_endpoint=eps[tenancy.home_region],
            retry_strategy=retry,
            circuit_breaker_strategy=oci.circuit_breaker.NoCircuitBreakerStrategy(),
        )

    yield {"em": em, "r": region, "client": client, "comp": region.instances[0]["compartmentId"]}
    em.wait_idle()
    em.stop()


def details(cloud: dict, name: str = "gpu-new-1", **kw: Any) -> Any:
    r = cloud["r"]
    return oci.core.models.LaunchInstanceDetails(
        compartment_id=cloud["comp"],
        availability_domain=r.ads[0],
        shape=SHAPE,
        display_name=name,
        create_vnic_details=oci.core.models.CreateVnicDetails(subnet_id=r.subnets[0]["id"], hostname_label=name),
        defined_tags={"oci-gpu": {"cluster": "lab", "slurm-role": "compute"}},
        freeform_tags={"team": "hpc"},
        metadata={"ssh_authorized_keys": "ssh-ed25519 AAAA lab", "user_data": "I2Nsb3VkLWNvbmZpZwo="},
        source_details=oci.core.models.InstanceSourceViaImageDetails(image_id="ocid1.image.oc1..lab"),
        **kw,
    )


def wait_state(compute: Any, iid: str, state: str, timeout: float = 10) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        inst = compute.get_instance(iid).data
        if inst.lifecycle_state == state:
            return inst
        time.sleep(0.02)
    raise AssertionError(f"{iid} never reached {state} (is {inst.lifecycle_state})")


def launch_running(cloud: dict, compute: Any, local_block: str | None = None) -> tuple[Any, Any]:
    """A launched instance once RUNNING, and its compute host: one of ``local_block`` when given, else None."""
    if local_block:
        cloud["em"].knobs.update(launch_topology={"localBlockId": local_block})
    inst = compute.launch_instance(details(cloud)).data
    wait_state(compute, inst.id, "RUNNING")
    return inst, next((h for h in cloud["r"].compute_hosts if h["instanceId"] == inst.id), None)


def test_launch_walks_provisioning_to_running_and_is_listed_with_its_vnic(cloud: dict) -> None:
    compute = cloud["client"]()
    resp = compute.launch_instance(details(cloud))
    inst = resp.data
    assert inst.lifecycle_state == "PROVISIONING"
    assert resp.headers.get("opc-work-request-id") and resp.headers.get("opc-request-id")
    assert inst.defined_tags == {"oci-gpu": {"cluster": "lab", "slurm-role": "compute"}}
    assert inst.metadata["user_data"] == "I2Nsb3VkLWNvbmZpZwo="
    running = wait_state(compute, inst.id, "RUNNING")
    assert running.shape == SHAPE and running.display_name == "gpu-new-1"
    # the hook saw the instance while it was still PROVISIONING: RUNNING comes after the node is made
    assert cloud["em"].compute_hook.calls == [("launch", "gpu-new-1", "PROVISIONING")]
    listed = compute.list_instances(cloud["comp"], display_name="gpu-new-1").data
    assert [i.id for i in listed] == [inst.id]
    atts = compute.list_vnic_attachments(cloud["comp"], instance_id=inst.id).data
    vnic = (
        oci.core.VirtualNetworkClient(
            cloud["client"]().base_client.config,
            service_endpoint=compute.base_client.endpoint.rsplit("/", 1)[0],
            retry_strategy=NO_RETRY,
        )
        .get_vnic(atts[0].vnic_id)
        .data
    )
    assert vnic.hostname_label == "gpu-new-1" and vnic.private_ip
    addresses = [p["ipAddress"] for p in cloud["r"].private_ips]
    assert addresses.count(vnic.private_ip) == 1  # a fresh address, not another node's
    wr = (
        oci.work_requests.WorkRequestClient(
            compute.base_client.config,
            service_endpoint=compute.base_client.endpoint.rsplit("/", 1)[0],
            retry_strategy=NO_RETRY,
        )
        .get_work_request(resp.headers["opc-work-request-id"])
        .data
    )
    assert wr.status == "SUCCEEDED" and wr.operation_type == "LaunchInstance"


def test_the_same_retry_token_returns_the_same_instance(cloud: dict) -> None:
    compute = cloud["client"]()
    first = compute.launch_instance(details(cloud), opc_retry_token="tok-1").data
    again = compute.launch_instance(details(cloud), opc_retry_token="tok-1").data
    assert again.id == first.id
    with pytest.raises(oci.exceptions.ServiceError) as err:
        compute.launch_instance(details(cloud, name="other"), opc_retry_token="tok-1")
    assert err.value.status == 409
    named = [i for i in cloud["r"].instances if i["displayName"] in ("gpu-new-1", "other")]
    assert len(named) == 1


def test_the_sdk_retry_after_a_throttle_reuses_its_token(cloud: dict) -> None:
    # the first LaunchInstance is answered 429 after nothing was made; the SDK's retry carries
    # the token it generated, and exactly one instance results
    cloud["em"].knobs.update(route_faults={"LaunchInstance": {"status": 429, "times": 1}})
    retry = oci.retry.RetryStrategyBuilder(
        max_attempts=3, retry_max_wait_between_calls_seconds=0.1
    ).get_retry_strategy()
    inst = cloud["client"](retry=retry).launch_instance(details(cloud)).data
    counts = cloud["em"].counter_snapshot()["by_op"]
    assert counts["LaunchInstance:429"] == 1 and counts["LaunchInstance"] == 2
    assert [i["id"] for i in cloud["r"].instances if i["displayName"] == "gpu-new-1"] == [inst.id]


def test_capacity_error_as_oci_sends_it_creates_nothing(cloud: dict) -> None:
    cloud["em"].knobs.update(
        route_faults={"LaunchInstance": {"status": 500, "code": "InternalError", "message": "Out of host capacity."}}
    )
    before = len(cloud["r"].instances)
    with pytest.raises(oci.exceptions.ServiceError) as err:
        cloud["client"]().launch_instance(details(cloud))
    assert (err.value.status, err.value.code, err.value.message) == (500, "InternalError", "Out of host capacity.")
    assert len(cloud["r"].instances) == before and cloud["em"].compute_hook.calls == []


def test_terminate_walks_to_terminated_detaches_and_frees_the_host(cloud: dict) -> None:
    compute = cloud["client"]()
    inst, host = launch_running(cloud, compute, "ocid1.computelocalblock.oc1..lb1")
    assert host["localBlockId"] == "ocid1.computelocalblock.oc1..lb1" and host["lifecycleState"] == "OCCUPIED"
    assert compute.terminate_instance(inst.id).status == 204
    assert compute.get_instance(inst.id).data.lifecycle_state in ("TERMINATING", "TERMINATED")
    wait_state(compute, inst.id, "TERMINATED")
    assert ("terminate", "gpu-new-1", "TERMINATING") in cloud["em"].compute_hook.calls
    atts = compute.list_vnic_attachments(cloud["comp"], instance_id=inst.id).data
    assert [a.lifecycle_state for a in atts] == ["DETACHED"]
    assert host["lifecycleState"] == "AVAILABLE" and host["instanceId"] is None
    # a second terminate is a no-op, as OCI's is
    assert compute.terminate_instance(inst.id).status == 204


def test_a_failed_lab_hook_ends_the_launch_terminated(cloud: dict) -> None:
    cloud["em"].compute_hook.fail_launch = True
    compute = cloud["client"]()
    inst = compute.launch_instance(details(cloud)).data
    wait_state(compute, inst.id, "TERMINATED")
    assert "lab image missing" in cloud["r"].by_id[inst.id]["_hookError"]


def test_stop_start_and_reset_walk_their_states(cloud: dict) -> None:
    compute = cloud["client"]()
    inst, _host = launch_running(cloud, compute)
    with pytest.raises(oci.exceptions.ServiceError) as err:
        compute.instance_action(inst.id, "START")  # running: no-op answered with the instance
        compute.instance_action(inst.id, "FLY")
    assert err.value.status == 400
    assert compute.instance_action(inst.id, "STOP").data.lifecycle_state == "STOPPING"
    wait_state(compute, inst.id, "STOPPED")
    with pytest.raises(oci.exceptions.ServiceError) as err:
        compute.instance_action(inst.id, "RESET")
    assert (err.value.status, err.value.code) == (409, "IncorrectState")
    assert compute.instance_action(inst.id, "START").data.lifecycle_state == "STARTING"
    wait_state(compute, inst.id, "RUNNING")
    assert compute.instance_action(inst.id, "RESET").data.lifecycle_state == "STOPPING"
    wait_state(compute, inst.id, "RUNNING")
    actions = [c[0] for c in cloud["em"].compute_hook.calls]
    assert actions == ["launch", "STOP", "START", "RESET"]


def test_update_instance_sets_tags_and_takes_the_host_report(cloud: dict) -> None:
    compute = cloud["client"]()
    inst, _host = launch_running(cloud, compute)
    tags = {"oci-gpu": {"cluster": "lab"}, "ComputeInstanceHostActions": {"CustomerReportedHostStatus": "UNHEALTHY"}}
    out = compute.update_instance(inst.id, oci.core.models.UpdateInstanceDetails(defined_tags=tags)).data
    assert out.defined_tags == tags
    assert any(e["event"] == "host-report" and e["report"] == "UNHEALTHY" for e in cloud["em"].compute_log)


def test_host_health_and_maintenance_events_are_knobs(cloud: dict) -> None:
    compute = cloud["client"]()
    inst, host = launch_running(cloud, compute, "lb")
    assert compute.get_compute_host(host["id"]).data.health == "HEALTHY"
    cloud["em"].set_host_health(inst.id, "UNHEALTHY")
    assert compute.get_compute_host(host["id"]).data.health == "UNHEALTHY"
    listed = compute.list_compute_hosts(cloud["comp"], compute_host_health="UNHEALTHY").data.items
    assert [h.id for h in listed] == [host["id"]]
    assert compute.list_instance_maintenance_events(cloud["comp"], instance_id=inst.id).data == []
    cloud["em"].schedule_maintenance(inst.id, maintenanceReason="HARDWARE_REPLACEMENT")
    events = compute.list_instance_maintenance_events(cloud["comp"], instance_id=inst.id).data
    assert [(e.instance_id, e.lifecycle_state, e.maintenance_reason) for e in events] == [
        (inst.id, "SCHEDULED", "HARDWARE_REPLACEMENT")
    ]
    cloud["em"].update_maintenance(events[0].id, lifecycleState="SUCCEEDED")
    events = compute.list_instance_maintenance_events(cloud["comp"], instance_id=inst.id).data
    assert [e.lifecycle_state for e in events] == ["SUCCEEDED"]
    with pytest.raises(KeyError):
        cloud["em"].update_maintenance("ocid1.instancemaintenanceevent.oc1..none", lifecycleState="SUCCEEDED")


def test_a_stalled_launch_answers_503_late_and_launches_nothing(cloud: dict) -> None:
    compute = cloud["client"]()
    cloud["em"].knobs.update(route_stall_s={"LaunchInstance": 0.3})
    before = len(cloud["r"].instances)
    started = time.monotonic()
    with pytest.raises(oci.exceptions.ServiceError) as err:
        compute.launch_instance(details(cloud))
    assert err.value.status == 503 and time.monotonic() - started >= 0.3
    assert len(cloud["r"].instances) == before and cloud["em"].stalled == {"LaunchInstance": 1}
    assert not [c for c in cloud["em"].compute_hook.calls if c[0] == "launch"]


def test_pools_resize_attach_and_detach_with_auto_terminate(cloud: dict) -> None:
    compute = cloud["client"]()
    mgmt = cloud["client"](oci.core.ComputeManagementClient)
    pool = cloud["r"].instance_pools[0]
    size = pool["size"]
    assert (
        mgmt.update_instance_pool(pool["id"], oci.core.models.UpdateInstancePoolDetails(size=size + 1)).data.size
        == size + 1
    )
    inst, _host = launch_running(cloud, compute)
    att = mgmt.attach_instance_pool_instance(
        pool["id"], oci.core.models.AttachInstancePoolInstanceDetails(instance_id=inst.id)
    )
    assert att.data.instance_pool_id == pool["id"] and inst.id in pool["_instanceIds"]
    listed = mgmt.list_instance_pool_instances(cloud["comp"], pool["id"]).data
    assert inst.id in [i.id for i in listed]
    resp = mgmt.detach_instance_pool_instance(
        pool["id"],
        oci.core.models.DetachInstancePoolInstanceDetails(
            instance_id=inst.id, is_decrement_size=True, is_auto_terminate=True
        ),
    )
    assert resp.status == 202 and resp.headers.get("opc-work-request-id")
    wait_state(compute, inst.id, "TERMINATED")
    assert inst.id not in pool["_instanceIds"] and pool["size"] == len(pool["_instanceIds"])
    with pytest.raises(oci.exceptions.ServiceError) as err:
        mgmt.detach_instance_pool_instance(
            pool["id"], oci.core.models.DetachInstancePoolInstanceDetails(instance_id=inst.id)
        )
    assert err.value.status == 404


def test_launch_into_a_compute_cluster(cloud: dict) -> None:
    compute = cloud["client"]()
    cc = compute.create_compute_cluster(
        oci.core.models.CreateComputeClusterDetails(
            compartment_id=cloud["comp"], availability_domain=cloud["r"].ads[0], display_name="lab-cc"
        )
    ).data
    assert cc.lifecycle_state == "ACTIVE"
    inst = compute.launch_instance(details(cloud, compute_cluster_id=cc.id)).data
    assert cloud["r"].by_id[inst.id]["_computeClusterId"] == cc.id
    with pytest.raises(oci.exceptions.ServiceError) as err:
        compute.launch_instance(details(cloud, name="x", compute_cluster_id="ocid1.computecluster.oc1..none"))
    assert err.value.status == 404
    assert [c.id for c in compute.list_compute_clusters(cloud["comp"]).data.items] == [cc.id]
