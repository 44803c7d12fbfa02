# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure OKE helpers: configurations, input checks, the add-on plan, node-pool summary, waits."""

from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _oke

CID = "ocid1.cluster.oc1.iad.aaaaaaaaexample"

OPTIONS = [
    {"name": "NvidiaGpuOperator", "versions": [{"version_number": "v24.9.0"}, {"version_number": "v25.3.0"}]},
    {"name": "CertManager", "versions": [{"version_number": "v1.15.3"}]},
]


def test_configurations_round_trip_sorted() -> None:
    configs = [{"key": "b", "value": "2"}, {"key": "a", "value": "1"}]
    as_dict = _oke.configs_to_dict(configs)
    assert as_dict == {"a": "1", "b": "2"}
    assert _oke.dict_to_configs(as_dict) == [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}]
    assert _oke.configs_to_dict(None) == {} and _oke.dict_to_configs(None) == []


@pytest.mark.parametrize(
    ("configs", "needle"),
    [
        ({"driver.enabled": False}, "'driver.enabled' has a bool value False"),
        ({"numOfReplicas": 2}, "'numOfReplicas' has a int value 2"),
        ({"x": None}, "'x' has a NoneType"),
        (["a"], "must be a mapping"),
    ],
)
def test_non_string_configuration_values_are_named(configs: object, needle: str) -> None:
    errors = _oke.validate_configurations("NvidiaGpuOperator", configs)
    assert len(errors) == 1 and needle in errors[0] and "NvidiaGpuOperator" in errors[0]


def test_string_configurations_pass() -> None:
    assert _oke.validate_configurations("X", {"a": "true", "b": ""}) == []
    assert _oke.validate_configurations("X", None) == []


@pytest.mark.parametrize(
    ("value", "ok"),
    [(CID, True), ("", False), (None, False), ("ocid1.instance.oc1.iad.x", False), ("cluster", False)],
)
def test_cluster_id(value: object, ok: bool) -> None:
    assert (_oke.validate_cluster_id(value) is None) is ok


@pytest.mark.parametrize(
    ("k8s", "filters", "ok"),
    [
        ("v1.31.1", {"minimalVersion": "v1.30.0"}, True),
        ("v1.29.9", {"minimalVersion": "v1.30.0"}, False),
        ("v1.31.1", {"minimalVersion": "v1.28.0", "maximumVersion": "v1.30.0"}, False),
        ("v1.31.1", {"exactKubernetesVersions": ["v1.31.1"]}, True),
        ("v1.31.2", {"exact_kubernetes_versions": ["v1.31.1"]}, False),
        ("v1.31.1", None, True),
    ],
)
def test_kubernetes_version_filters(k8s: str, filters: dict | None, ok: bool) -> None:
    assert _oke.kubernetes_version_ok(k8s, filters) is ok


def test_check_addon_request_names_unknown_addon_and_unoffered_version() -> None:
    unknown = _oke.check_addon_request("NvidiaGpuOperatr", None, None, OPTIONS, "v1.31.1")
    assert unknown and "'NvidiaGpuOperatr' is not an OKE add-on" in unknown[0] and "NvidiaGpuOperator" in unknown[0]
    bad_version = _oke.check_addon_request("CertManager", "v9.9.9", None, OPTIONS, "v1.31.1")
    assert bad_version == [
        "add-on CertManager: version 'v9.9.9' is not offered for Kubernetes v1.31.1 (offered: v1.15.3)"
    ]
    assert _oke.check_addon_request("NvidiaGpuOperator", "v25.3.0", {"a": "b"}, OPTIONS, "v1.31.1") == []
    assert _oke.check_addon_request("Anything", "v0", None, None, None) == []


def view(version: str = "v1", configs: dict | None = None, state: str = "ACTIVE") -> dict:
    return {"name": "A", "version": version, "lifecycle_state": state, "configurations": configs or {}}


@pytest.mark.parametrize(
    ("current", "desired", "action", "changes"),
    [
        (None, {"name": "A", "version": "v1", "configurations": None}, "install", ["state"]),
        (view(), {"name": "A", "version": "v1", "configurations": None}, None, []),
        (view(), {"name": "A", "version": None, "configurations": None}, None, []),
        (view(), {"name": "A", "version": "v2", "configurations": None}, "update", ["version"]),
        (view(configs={"a": "1"}), {"name": "A", "version": "v1", "configurations": {"a": "1"}}, None, []),
        (
            view(configs={"a": "1"}),
            {"name": "A", "version": "v1", "configurations": {"a": "2"}},
            "update",
            ["configurations"],
        ),
        (view(configs={"a": "1", "b": "2"}), {"name": "A", "configurations": {"a": "1"}}, "update", ["configurations"]),
        (view(configs={"a": "1"}), {"name": "A", "configurations": None}, None, []),
        (view(), {"name": "A", "state": "absent"}, "disable", ["state"]),
        (None, {"name": "A", "state": "absent"}, None, []),
    ],
)
def test_plan(current: dict | None, desired: dict, action: str | None, changes: list[str]) -> None:
    plan = _oke.plan_addon(current, desired)
    assert plan["action"] == action and plan["changes"] == changes
    if action is None:
        assert plan["diff"]["before"] == plan["diff"]["after"]
    else:
        assert plan["diff"]["before"] != plan["diff"]["after"]


def test_plan_diff_shows_configuration_change() -> None:
    plan = _oke.plan_addon(view(configs={"a": "1"}), {"name": "A", "version": "v1", "configurations": {"a": "2"}})
    assert plan["diff"]["before"]["configurations"] == {"a": "1"}
    assert plan["diff"]["after"]["configurations"] == {"a": "2"}


def test_addon_view_flattens_configurations_and_error() -> None:
    raw = {
        "name": "X",
        "version": "v1",
        "lifecycle_state": "NEEDS_ATTENTION",
        "configurations": [{"key": "k", "value": "v"}],
        "addon_error": {"code": "c", "message": "boom", "status": "500"},
    }
    got = _oke.addon_view(raw)
    assert got["configurations"] == {"k": "v"} and got["addon_error"]["message"] == "boom"
    assert _oke.addon_view(None) is None


def pool(name: str, shape: str, states: list[str]) -> dict:
    return {
        "id": f"ocid1.nodepool.{name}",
        "name": name,
        "node_shape": shape,
        "nodes": [{"name": f"{name}-{i}", "lifecycle_state": s} for i, s in enumerate(states)],
    }


def test_summarise_node_pools_counts_gpu_and_non_gpu_nodes() -> None:
    out = _oke.summarise_node_pools(
        [
            pool("system", "VM.Standard.E5.Flex", ["ACTIVE", "CREATING"]),
            pool("gpu", "BM.GPU.H100.8", ["ACTIVE", "ACTIVE", "FAILING"]),
        ]
    )
    assert out["nodes"] == {"total": 5, "active": 3, "gpu_active": 2, "non_gpu_active": 1}
    assert [p["is_gpu"] for p in out["node_pools"]] == [False, True]
    (h100,) = out["gpu_shapes"]
    assert h100["shape"] == "BM.GPU.H100.8" and h100["gpus_active"] == 16 and h100["active_nodes"] == 2
    assert h100["rdma"]["rdma_vendor_id"] == "15b3" and h100["rdma"]["rdma_resource_name"] == "rdma_bm_gpu_h100_8"


def test_no_active_non_gpu_node() -> None:
    out = _oke.summarise_node_pools(
        [pool("system", "VM.Standard.E5.Flex", ["CREATING"]), pool("g", "BM.GPU.A10.4", ["ACTIVE"])]
    )
    assert out["nodes"]["non_gpu_active"] == 0 and out["nodes"]["gpu_active"] == 1


def test_shape_gpus_marks_an_unknown_gpu_shape() -> None:
    assert _oke.shape_gpus("BM.GPU.Future.99") == -1 and _oke.shape_gpus("VM.Standard3.Flex") == 0
    assert _oke.shape_gpus("BM.GPU.H100.8") == 8 and _oke.shape_gpus("VM.Standard.E5.Flex") == 0


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


class FakeResponse:
    def __init__(self, data: object) -> None:
        self.data = data


class FakeClient:
    """GetWorkRequest answers IN_PROGRESS ``pending`` times, then ``final``."""

    def __init__(self, pending: int, final: str) -> None:
        self.pending, self.final, self.calls = pending, final, 0

    def get_work_request(self, wid: str) -> FakeResponse:
        self.calls += 1
        status = "IN_PROGRESS" if self.calls <= self.pending else self.final
        return FakeResponse({"id": wid, "status": status, "compartment_id": "c"})

    def list_work_request_errors(self, comp: str, wid: str) -> FakeResponse:
        return FakeResponse([{"code": "AddonInstallFailed", "message": "image pull failed"}])


@pytest.fixture
def plain_to_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_oke, "to_dict", dict)


@pytest.mark.usefixtures("plain_to_dict")
def test_wait_work_request_polls_until_done() -> None:
    client, clock = FakeClient(3, "SUCCEEDED"), FakeClock()
    wr = _oke.wait_work_request(client, "wr1", timeout=10, interval=1, clock=clock)
    assert wr["status"] == "SUCCEEDED" and client.calls == 4 and clock.now == 3 and "errors" not in wr


@pytest.mark.usefixtures("plain_to_dict")
def test_wait_work_request_collects_errors_of_a_failed_request() -> None:
    wr = _oke.wait_work_request(FakeClient(0, "FAILED"), "wr1", timeout=10, interval=1, clock=FakeClock())
    assert wr["errors"][0]["message"] == "image pull failed"


@pytest.mark.usefixtures("plain_to_dict")
def test_wait_work_request_times_out() -> None:
    with pytest.raises(_oke.OkeError, match="still IN_PROGRESS after 5 s"):
        _oke.wait_work_request(FakeClient(100, "SUCCEEDED"), "wr1", timeout=5, interval=1, clock=FakeClock())
