# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""compute_instance and instance_pool against the OCI API emulator through the real SDK, called in this
process: launch, adoption, idempotence, check mode, capacity errors, the cluster-tag guard, retry-token
replay under throttling and 5xx, pools. Writes are counted at the emulator, never inferred from the result."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import oci
import pytest

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _compute as _oci_compute  # noqa: E402
from ansible_collections.oci_gpu.cluster.plugins.modules import compute_instance, instance_pool  # noqa: E402
from tests.oci_emulator import generate  # noqa: E402
from tests.oci_emulator.testing import running_emulator  # noqa: E402

SHAPE = "BM.GPU.H100.8"
WRITES = (
    "LaunchInstance",
    "TerminateInstance",
    "UpdateInstancePool",
    "AttachInstancePoolInstance",
    "DetachInstancePoolInstance",
)


class FakeModule:
    def __init__(self, spec: dict[str, Any], check_mode: bool = False, **params: Any) -> None:
        self.check_mode, self._diff = check_mode, False
        self.params = {k: v.get("default") for k, v in spec.items()}
        self.params.update(params)


@contextmanager
def compute_tenancy(tmp_path: Path) -> Iterator[Any]:
    """The emulator with a small tenancy that launches and terminates at once (the functional test of
    compute_instance, tests/functional/plugins/modules/test_compute_instance.py, runs it too)."""
    with running_emulator(
        generate(seed=9, hosts=4, compartments=1, regions=1), tmp_path, launch_delay_s=0.05, terminate_delay_s=0.05
    ) as running:
        try:
            yield running
        finally:
            running.emulator.wait_idle()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Any]:
    with compute_tenancy(tmp_path) as running:
        yield running


def region(lab: Any) -> Any:
    return lab.tenancy.regions[lab.tenancy.home_region]


def base(lab: Any) -> dict[str, Any]:
    r = region(lab)
    return {
        "config_file": str(lab.creds.config_file),
        "service_endpoint": lab.endpoints[lab.tenancy.home_region],
        "compartment_id": r.instances[0]["compartmentId"],
        "cluster": "lab",
        "poll_interval": 0.02,
        "wait_timeout": 20,
    }


def launch_args(lab: Any, name: str = "lab-gpu-9", **kw: Any) -> dict[str, Any]:
    r = region(lab)
    return {
        **base(lab),
        "display_name": name,
        "availability_domain": r.ads[0],
        "shape": SHAPE,
        "subnet_id": r.subnets[0]["id"],
        "image_id": "ocid1.image.oc1..lab",
        "user_data": "#cloud-config\nruncmd: [touch /tmp/booted]\n",
        **kw,
    }


def ci(lab: Any, check_mode: bool = False, **params: Any) -> dict[str, Any]:
    return compute_instance.run(FakeModule(compute_instance.argument_spec(), check_mode, **params))


def writes(lab: Any) -> dict[str, int]:
    by_op = lab.emulator.counter_snapshot()["by_op"]
    return {op: by_op[op] for op in WRITES if by_op.get(op)}


def named(lab: Any, name: str) -> list[dict[str, Any]]:
    return [i for i in region(lab).instances if i.get("displayName") == name]


def test_launch_waits_for_running_tags_it_and_a_rerun_changes_nothing(lab: Any) -> None:
    out = ci(lab, **launch_args(lab))
    assert (out["changed"], out["operation"]) == (True, "launch")
    inst = out["instance"]
    assert inst["lifecycle_state"] == "RUNNING" and inst["private_ip"] and inst["hostname_label"] == "lab-gpu-9"
    rec = named(lab, "lab-gpu-9")[0]
    assert rec["definedTags"] == {"oci-gpu": {"cluster": "lab", "slurm-role": "compute"}}
    assert rec["metadata"]["user_data"] != "(set)" and "user_data" in inst["metadata_keys"]
    assert "runcmd" not in str(out)  # the user data is never returned
    assert writes(lab) == {"LaunchInstance": 1}
    again = ci(lab, **launch_args(lab))
    assert (again["changed"], again["operation"], again["instance"]["id"]) == (False, "none", inst["id"])
    assert writes(lab) == {"LaunchInstance": 1}


def test_check_mode_launches_nothing(lab: Any) -> None:
    out = ci(lab, check_mode=True, **launch_args(lab))
    assert (out["changed"], out["operation"], out["instance"]) == (True, "launch", {})
    assert writes(lab) == {} and named(lab, "lab-gpu-9") == []


def test_a_provisioning_instance_of_that_name_is_adopted_not_duplicated(lab: Any) -> None:
    # what a rerun after a run killed during the launch finds: the instance, still PROVISIONING
    # (3 s: the second call must come before it runs, also on a loaded machine; it waits the rest)
    lab.emulator.knobs.update(launch_delay_s=3)
    first = ci(lab, **launch_args(lab, wait=False))
    assert first["instance"]["lifecycle_state"] == "PROVISIONING"
    out = ci(lab, **launch_args(lab))
    assert (out["changed"], out["operation"]) == (False, "adopt")
    assert out["instance"]["lifecycle_state"] == "RUNNING" and len(named(lab, "lab-gpu-9")) == 1
    assert writes(lab) == {"LaunchInstance": 1}


def test_capacity_error_names_the_shape_and_ad_and_leaves_nothing(lab: Any) -> None:
    lab.emulator.knobs.update(
        route_faults={"LaunchInstance": {"status": 500, "code": "InternalError", "message": "Out of host capacity."}}
    )
    args = launch_args(lab)
    with pytest.raises(_oci_compute.ComputeError) as err:
        ci(lab, **args)
    msg = err.value.message
    assert SHAPE in msg and args["availability_domain"] in msg and "Out of host capacity." in msg
    # not retried: a capacity error is an answer, not a glitch
    assert lab.emulator.counter_snapshot()["by_op"]["LaunchInstance:500"] == 1
    assert named(lab, "lab-gpu-9") == []


def test_a_launch_ended_by_oci_fails_with_the_work_request_error(lab: Any) -> None:
    lab.emulator.knobs.update(launch_async_failures={SHAPE: "Out of host capacity."})
    with pytest.raises(_oci_compute.ComputeError) as err:
        ci(lab, **launch_args(lab))
    assert "ended TERMINATED" in err.value.message and "Out of host capacity." in err.value.message
    assert [i["lifecycleState"] for i in named(lab, "lab-gpu-9")] == ["TERMINATED"]


def test_throttling_and_5xx_are_retried_with_one_token_and_make_one_instance(lab: Any) -> None:
    lab.emulator.knobs.update(
        route_faults={"LaunchInstance": {"status": 429, "times": 2}, "GetInstance": {"status": 503, "times": 2}}
    )
    out = ci(lab, **launch_args(lab))
    assert out["instance"]["lifecycle_state"] == "RUNNING" and len(named(lab, "lab-gpu-9")) == 1
    by_op = lab.emulator.counter_snapshot()["by_op"]
    assert by_op["LaunchInstance:429"] == 2 and by_op["GetInstance:503"] == 2


def test_a_lost_answer_is_replayed_by_its_retry_token(lab: Any) -> None:
    # the first LaunchInstance makes the instance but its answer is "lost" (a 500 the SDK retries):
    # the retry carries the same opc-retry-token, and the emulator answers with the same instance
    lab.emulator.knobs.update(route_faults={"GetInstance": {"status": 500, "code": "InternalServerError", "times": 1}})
    tokens: list[str] = []
    orig = lab.emulator._replay

    def spy(op: str, body: Any, make: Any) -> Any:
        headers = lab.emulator.request_ctx.headers
        tokens.append(headers.get("opc-retry-token"))
        answer = orig(op, body, make)
        if len(tokens) == 1:
            raise RuntimeError("connection reset after the instance was made")
        return answer

    lab.emulator._replay = spy
    out = ci(lab, **launch_args(lab))
    assert len(tokens) == 2 and tokens[0] == tokens[1] and tokens[0]
    assert out["instance"]["lifecycle_state"] == "RUNNING"
    assert len(named(lab, "lab-gpu-9")) == 1
    assert any(e["event"] == "replay" for e in lab.emulator.compute_log)


def test_terminate_refuses_an_instance_of_another_cluster_or_untagged(lab: Any) -> None:
    ci(lab, **launch_args(lab, cluster="other"))
    with pytest.raises(_oci_compute.ComputeError) as err:
        ci(lab, **base(lab), display_name="lab-gpu-9", state="absent")
    assert "belongs to cluster 'other'" in err.value.message and "lab-gpu-9" in err.value.message
    untagged = region(lab).instances[0]
    untagged["definedTags"] = {"other-namespace": {"cluster": "lab"}}
    with pytest.raises(_oci_compute.ComputeError) as err:
        ci(lab, **base(lab), instance_id=untagged["id"], state="absent")
    assert "has no defined tag oci-gpu.cluster" in err.value.message
    assert "TerminateInstance" not in writes(lab)
    assert untagged["lifecycleState"] == "RUNNING"


def test_terminate_waits_for_terminated_check_mode_first_and_a_rerun_changes_nothing(lab: Any) -> None:
    ci(lab, **launch_args(lab))
    dry = ci(lab, check_mode=True, **base(lab), display_name="lab-gpu-9", state="absent")
    assert (dry["changed"], dry["operation"]) == (True, "terminate") and "TerminateInstance" not in writes(lab)
    out = ci(lab, **base(lab), display_name="lab-gpu-9", state="absent")
    assert (out["changed"], out["instance"]["lifecycle_state"]) == (True, "TERMINATED")
    again = ci(lab, **base(lab), display_name="lab-gpu-9", state="absent")
    assert again["changed"] is False and writes(lab)["TerminateInstance"] == 1


def test_a_failed_listing_fails_closed(lab: Any) -> None:
    ci(lab, **launch_args(lab))
    lab.emulator.knobs.update(route_errors={"ListInstances": 403})
    with pytest.raises(oci.exceptions.ServiceError) as err:
        ci(lab, **base(lab), display_name="lab-gpu-9", state="absent")
    assert err.value.status == 403
    assert "TerminateInstance" not in writes(lab)


def test_missing_launch_keys_fail_before_any_call(lab: Any) -> None:
    with pytest.raises(_oci_compute.ComputeError) as err:
        ci(lab, **base(lab), display_name="x", shape=SHAPE)
    for key in ("availability_domain", "subnet_id", "image_id"):
        assert key in err.value.message
    assert lab.emulator.counter_snapshot()["requests"] == 0


def test_launch_into_the_pool_then_remove_by_detach_and_terminate(lab: Any) -> None:
    pool = region(lab).instance_pools[0]
    size = pool["size"]
    out = ci(lab, **launch_args(lab, instance_pool_id=pool["id"]))
    assert out["instance"]["id"] in pool["_instanceIds"] and pool["size"] == size + 1
    gone = ci(lab, **base(lab), display_name="lab-gpu-9", state="absent", instance_pool_id=pool["id"])
    assert gone["operation"] == "detach_terminate" and gone["instance"]["lifecycle_state"] == "TERMINATED"
    assert out["instance"]["id"] not in pool["_instanceIds"] and pool["size"] == size
    assert writes(lab) == {"LaunchInstance": 1, "AttachInstancePoolInstance": 1, "DetachInstancePoolInstance": 1}


def ip(lab: Any, check_mode: bool = False, **params: Any) -> dict[str, Any]:
    return instance_pool.run(FakeModule(instance_pool.argument_spec(), check_mode, **params))


def test_instance_pool_grows_refuses_to_shrink_and_guards_detach(lab: Any) -> None:
    pool = region(lab).instance_pools[0]
    args = {**base(lab), "instance_pool_id": pool["id"]}
    read = ip(lab, **args)
    assert read["changed"] is False and read["pool"]["size"] == pool["size"] == len(read["pool"]["instances"])
    with pytest.raises(_oci_compute.ComputeError) as err:
        ip(lab, **args, size=pool["size"] - 1)
    assert "name them in detach" in err.value.message
    foreign = pool["_instanceIds"][0]
    region(lab).by_id[foreign]["definedTags"] = {"oci-gpu": {"cluster": "prod"}}
    with pytest.raises(_oci_compute.ComputeError) as err:
        ip(lab, **args, detach=[foreign], terminate_detached=True)
    assert "belongs to cluster 'prod'" in err.value.message and writes(lab) == {}
    assert region(lab).by_id[foreign]["lifecycleState"] == "RUNNING"
    dry = ip(lab, check_mode=True, **args, size=pool["size"] + 2)
    assert dry["actions"] == [f"resize {pool['size']} -> {pool['size'] + 2}"] and writes(lab) == {}
    grown = ip(lab, **args, size=pool["size"] + 2)
    assert grown["changed"] and pool["size"] == grown["pool"]["size"]
    assert ip(lab, **args, size=pool["size"])["changed"] is False
