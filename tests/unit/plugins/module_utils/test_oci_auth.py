# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared OCI auth: the argument spec matches the doc fragment, config files resolve, clients retry."""

from __future__ import annotations

import sys
from pathlib import Path

import oci
import pytest
import yaml

from ansible_collections.oci_gpu.cluster.plugins.doc_fragments._oci_auth import ModuleDocFragment
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator import write_oci_config  # noqa: E402


def test_argspec_mirrors_the_doc_fragment() -> None:
    doc = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    spec = _oci_auth.oci_auth_argspec()
    assert set(doc) == set(spec)
    for name, opt in doc.items():
        assert spec[name]["type"] == opt["type"], name
        assert spec[name].get("default") == opt.get("default"), name
        assert spec[name].get("choices") == opt.get("choices"), name


def test_resolve_api_key_config(tmp_path: Path) -> None:
    creds = write_oci_config(tmp_path, "ocid1.tenancy.oc1..t", "us-ashburn-1", profile="LAB")
    auth = _oci_auth.resolve_auth({"config_file": str(creds.config_file), "config_profile": "LAB"}, {})
    assert auth["tenancy"] == "ocid1.tenancy.oc1..t" and auth["region"] == "us-ashburn-1"
    # the environment names the file and profile when the options do not
    env = {"OCI_CONFIG_FILE": str(creds.config_file), "OCI_CONFIG_PROFILE": "LAB"}
    assert _oci_auth.resolve_auth({}, env)["tenancy"] == "ocid1.tenancy.oc1..t"


@pytest.mark.parametrize(
    "params,match",
    [
        ({"config_file": "/nonexistent/config"}, "/nonexistent/config"),
        ({"config_profile": "NOPE"}, "NOPE"),
        ({"auth_type": "password"}, "auth_type must be one of"),
    ],
)
def test_resolve_errors_name_the_problem(tmp_path: Path, params: dict, match: str) -> None:
    creds = write_oci_config(tmp_path, "ocid1.tenancy.oc1..t", "us-ashburn-1")
    params = {"config_file": str(creds.config_file), **params}
    with pytest.raises(_oci_auth.OciAuthError, match=match):
        _oci_auth.resolve_auth(params, {})


def test_clients_get_the_retry_strategy_and_no_circuit_breaker(tmp_path: Path) -> None:
    creds = write_oci_config(tmp_path, "ocid1.tenancy.oc1..t", "us-ashburn-1")
    auth = _oci_auth.resolve_auth({"config_file": str(creds.config_file)}, {})
    client = _oci_auth.make_client(oci.core.ComputeClient, auth, "eu-frankfurt-1", "http://127.0.0.1:1")
    assert client.retry_strategy is oci.retry.DEFAULT_RETRY_STRATEGY
    assert client.base_client.circuit_breaker_strategy is None or isinstance(
        client.base_client.circuit_breaker_strategy, oci.circuit_breaker.NoCircuitBreakerStrategy
    )
    assert client.base_client.endpoint.startswith("http://127.0.0.1:1")
    short = _oci_auth.retry_strategy(2, 0.5)
    assert short.checkers.checkers[0].max_attempts == 2 and short.max_wait_between_calls_seconds == 0.5


class _Failed(Exception):
    pass


class _Module:
    def __init__(self) -> None:
        self.params = {"name": "NvidiaGpuOperator"}

    def exit_json(self, **kwargs: object) -> None:
        raise AssertionError(f"exited: {kwargs}")

    def fail_json(self, **kwargs: object) -> None:
        raise _Failed(kwargs)


@pytest.mark.parametrize("context", [" on add-on NvidiaGpuOperator", lambda p: f" on add-on {p['name']}"])
def test_run_module_names_the_object_in_an_api_error(context: object) -> None:
    """The context is a text, or made from the module's parameters (the modules' one-line main())."""

    def run(_module: object) -> dict:
        raise oci.exceptions.ServiceError(404, "NotAuthorizedOrNotFound", {"opc-request-id": "req-1"}, "gone")

    with pytest.raises(_Failed) as info:
        _oci_auth.run_module(_Module(), run, context)
    assert info.value.args[0] == {
        "msg": "OCI API error on add-on NvidiaGpuOperator: 404 NotAuthorizedOrNotFound: gone",
        "status": 404,
        "code": "NotAuthorizedOrNotFound",
        "opc_request_id": "req-1",
    }
