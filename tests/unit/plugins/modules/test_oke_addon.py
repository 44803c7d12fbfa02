# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""oke_addon's run() with a fake Container Engine client: 409 adoption, check mode, no-op."""

from __future__ import annotations

from typing import Any

import oci
import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _oke
from ansible_collections.oci_gpu.cluster.plugins.modules import oke_addon

CID = "ocid1.cluster.oc1.iad.aaaaexample"


class Resp:
    def __init__(self, data: Any = None, headers: dict | None = None) -> None:
        self.data, self.headers = data, headers or {}


class FakeClient:
    """GetAddon answers from ``self.addon`` (None: 404) unless ``hide_first_get`` hides it once."""

    def __init__(self, addon: dict | None, hide_first_get: bool = False) -> None:
        self.addon, self.hide, self.writes = addon, hide_first_get, []

    def get_cluster(self, cid: str) -> Resp:
        return Resp({"id": cid, "kubernetes_version": "v1.31.1", "compartment_id": "c"})

    def get_addon(self, cid: str, name: str) -> Resp:
        if self.addon is None or self.hide:
            self.hide = False
            raise oci.exceptions.ServiceError(404, "NotAuthorizedOrNotFound", {}, "not found")
        return Resp(dict(self.addon))

    def install_addon(self, cid: str, details: Any, **kw: Any) -> Resp:
        self.writes.append(("install", details.addon_name, kw.get("opc_retry_token")))
        if self.addon is not None:
            raise oci.exceptions.ServiceError(409, "Conflict", {}, "Addon already exists")
        self.addon = {
            "name": details.addon_name,
            "version": details.version,
            "lifecycle_state": "ACTIVE",
            "configurations": [],
        }
        return Resp(headers={"opc-work-request-id": "wr1"})

    def update_addon(self, cid: str, name: str, details: Any, **kw: Any) -> Resp:
        self.writes.append(("update", name, {c.key: c.value for c in details.configurations or []}))
        self.addon["configurations"] = [{"key": c.key, "value": c.value} for c in details.configurations or []]
        return Resp(headers={"opc-work-request-id": "wr2"})

    def get_work_request(self, wid: str) -> Resp:
        return Resp({"id": wid, "status": "SUCCEEDED", "compartment_id": "c"})


class FakeModule:
    def __init__(self, check_mode: bool = False, **params: Any) -> None:
        self.check_mode, self._diff = check_mode, True
        self.params = {
            "cluster_id": CID,
            "name": "CertManager",
            "state": "present",
            "version": "v1.15.3",
            "configurations": None,
            "remove_existing": True,
            "wait": True,
            "wait_timeout": 5,
            "poll_interval": 0.01,
            **params,
        }


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(client: FakeClient) -> FakeClient:
        monkeypatch.setattr(_oke, "ce_client", lambda params: client)
        monkeypatch.setattr(_oke, "to_dict", lambda m: m if isinstance(m, dict | list) else oci.util.to_dict(m))
        options = [{"name": "CertManager", "versions": [{"version_number": "v1.15.3"}]}]
        monkeypatch.setattr(_oke, "addon_options", lambda client, k8s, name=None: options)
        return client

    return install


def test_install_answered_409_adopts_and_updates_only_the_difference(fake: Any) -> None:
    existing = {"name": "CertManager", "version": "v1.15.3", "lifecycle_state": "ACTIVE", "configurations": []}
    client = fake(FakeClient(existing, hide_first_get=True))
    result = oke_addon.run(FakeModule(configurations={"numOfReplicas": "2"}))
    assert [w[:2] for w in client.writes] == [("install", "CertManager"), ("update", "CertManager")]
    assert client.writes[0][2]  # the install carried a retry token
    assert result["changed"] and result["action"] == "update" and result["work_request_id"] == "wr2"


def test_install_answered_409_for_an_identical_addon_changes_nothing(fake: Any) -> None:
    existing = {"name": "CertManager", "version": "v1.15.3", "lifecycle_state": "ACTIVE", "configurations": []}
    client = fake(FakeClient(existing, hide_first_get=True))
    result = oke_addon.run(FakeModule())
    assert [w[:2] for w in client.writes] == [("install", "CertManager")]
    assert not result["changed"] and result["action"] == "none"


def test_check_mode_makes_no_write(fake: Any) -> None:
    client = fake(FakeClient(None))
    result = oke_addon.run(FakeModule(check_mode=True))
    assert client.writes == [] and result["changed"] and result["action"] == "install"
    assert result["diff"]["before"] == {} and result["diff"]["after"]["version"] == "v1.15.3"


def test_unknown_addon_fails_before_any_write(fake: Any) -> None:
    client = fake(FakeClient(None))
    with pytest.raises(_oke.OkeError, match="'CertManagr' is not an OKE add-on"):
        oke_addon.run(FakeModule(name="CertManagr"))
    assert client.writes == []


def test_needs_attention_without_a_change_fails_with_the_error(fake: Any) -> None:
    broken = {
        "name": "CertManager",
        "version": "v1.15.3",
        "lifecycle_state": "NEEDS_ATTENTION",
        "configurations": [],
        "addon_error": {"code": "x", "message": "webhook not ready", "status": "500"},
    }
    client = fake(FakeClient(broken))
    with pytest.raises(_oke.OkeError, match="NEEDS_ATTENTION: webhook not ready"):
        oke_addon.run(FakeModule())
    assert client.writes == []
