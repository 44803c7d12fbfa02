# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""OCI authentication and client construction shared by the inventory plugin and the OCI modules.

The matching documentation is the doc fragment ``oci_gpu.cluster._oci_auth``; ``oci_auth_argspec()``
is its argument spec. The ``oci`` SDK is imported lazily so this file imports (and compiles on
Python 3.8) where the SDK is missing; ``HAS_OCI`` / ``OCI_IMPORT_ERROR`` tell callers.
"""

from __future__ import annotations

import os
from typing import Any

# ``oci`` is imported at its first use, not with this file: every Ansible worker that looks up one of
# the collection's filters imports every filter file, and some of them reach this file; the SDK alone
# took 0.2 to 0.4 s there, per task and host (a third of a converged Slurm run's CPU, measured with
# py-spy). ``_auth.oci``, ``HAS_OCI`` and ``OCI_IMPORT_ERROR`` still read as module attributes.
_SDK_NAMES = ("oci", "HAS_OCI", "OCI_IMPORT_ERROR")


def _sdk() -> Any:
    """The ``oci`` package (None where it is missing), imported on the first call."""
    g = globals()
    if "HAS_OCI" not in g:
        try:
            import oci as sdk  # type: ignore[import-untyped]

            g.update(oci=sdk, HAS_OCI=True, OCI_IMPORT_ERROR=None)
        except ImportError as exc:  # pragma: no cover - depends on the controller
            g.update(oci=None, HAS_OCI=False, OCI_IMPORT_ERROR=exc)
    return g["oci"]


def __getattr__(name: str) -> Any:
    if name in _SDK_NAMES:
        _sdk()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


AUTH_TYPES = ("api_key", "instance_principal")


def oci_auth_argspec() -> dict[str, Any]:
    """The AnsibleModule argument spec of the shared authentication options."""
    return {
        "auth_type": {"type": "str", "choices": list(AUTH_TYPES), "default": "api_key"},
        "config_file": {"type": "path"},
        "config_profile": {"type": "str"},
        "tenancy": {"type": "str"},
    }


class OciAuthError(Exception):
    """Configuration or credential problem, with a message fit for the user."""


def resolve_auth(params: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Return ``{"config": dict, "signer": signer-or-None, "tenancy": str, "region": str-or-None}``.

    ``params`` holds the shared options (missing keys mean "not set").
    """
    oci = _sdk()
    if oci is None:
        raise OciAuthError(f"the 'oci' Python SDK is required: {globals()['OCI_IMPORT_ERROR']}")
    env = os.environ if env is None else env
    auth_type = params.get("auth_type") or "api_key"
    if auth_type == "api_key":
        path = params.get("config_file") or env.get("OCI_CONFIG_FILE") or "~/.oci/config"
        profile = params.get("config_profile") or env.get("OCI_CONFIG_PROFILE") or "DEFAULT"
        path = os.path.expanduser(path)
        try:
            config = oci.config.from_file(file_location=path, profile_name=profile)
            oci.config.validate_config(config)
        except (oci.exceptions.ConfigFileNotFound, oci.exceptions.ProfileNotFound) as exc:
            raise OciAuthError(f"OCI config {path!r} profile {profile!r}: {exc}") from exc
        except (oci.exceptions.InvalidConfig, oci.exceptions.InvalidKeyFilePath) as exc:
            raise OciAuthError(f"OCI config {path!r} profile {profile!r} is invalid: {exc}") from exc
        tenancy = params.get("tenancy") or config["tenancy"]
        return {"config": config, "signer": None, "tenancy": tenancy, "region": config.get("region")}
    if auth_type == "instance_principal":
        try:
            signer = oci.auth.signers.InstancePrincipalsSecurityTokenSigner()
        except Exception as exc:  # the SDK raises several types while reaching the metadata service
            raise OciAuthError(f"instance principal authentication failed: {exc}") from exc
        tenancy = params.get("tenancy") or signer.tenancy_id
        return {"config": {"region": signer.region}, "signer": signer, "tenancy": tenancy, "region": signer.region}
    raise OciAuthError(f"auth_type must be one of {', '.join(AUTH_TYPES)}, got {auth_type!r}")


def retry_strategy(max_attempts: int | None = None, max_wait_s: float | None = None) -> Any:
    """The SDK's default retry strategy (429, 409 IncorrectState, 5xx; decorrelated-jitter backoff),
    optionally with fewer attempts or a shorter longest wait between attempts."""
    oci = _sdk()
    if max_attempts is None and max_wait_s is None:
        return oci.retry.DEFAULT_RETRY_STRATEGY
    return (
        oci.retry.RetryStrategyBuilder(
            max_attempts=max_attempts or 8,
            retry_max_wait_between_calls_seconds=30 if max_wait_s is None else max_wait_s,
        )
        .add_max_attempts(max_attempts or 8)
        .add_total_elapsed_time(600)
        .add_service_error_check(
            service_error_retry_config=oci.retry.retry_checkers.RETRYABLE_STATUSES_AND_CODES,
            service_error_retry_on_any_5xx=True,
        )
        .get_retry_strategy()
    )


def make_client(
    client_cls: Any,
    auth: dict[str, Any],
    region: str | None = None,
    endpoint: str | None = None,
    retry: Any = None,
) -> Any:
    """An SDK client for ``region`` (or ``endpoint``) with a retry strategy (default: the SDK's, with
    backoff and retry tokens on writes) and without the SDK's circuit breaker, which would turn a burst
    of throttling into hard failures that the retry strategy is meant to absorb."""
    oci = _sdk()
    config = dict(auth["config"])
    if region:
        config["region"] = region
    kwargs: dict[str, Any] = {
        "retry_strategy": retry or oci.retry.DEFAULT_RETRY_STRATEGY,
        "circuit_breaker_strategy": oci.circuit_breaker.NoCircuitBreakerStrategy(),
    }
    if auth.get("signer") is not None:
        kwargs["signer"] = auth["signer"]
    if endpoint:
        kwargs["service_endpoint"] = endpoint
    return client_cls(config, **kwargs)


def oci_service_argspec() -> dict[str, Any]:
    """Argument spec of O(region) / O(service_endpoint) (doc fragment ``oci_gpu.cluster._oci_service``)."""
    return {"region": {"type": "str"}, "service_endpoint": {"type": "str"}}


# -- what every OCI module shares: errors, SDK models as dicts, paging, main() -----------------------
class OciModuleError(Exception):
    """A failure with a message fit for the user; ``details`` go into the module's result."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message, self.details = message, details


def to_dict(model: Any) -> Any:
    """An SDK model (or list of them) as snake_case dicts."""
    return _sdk().util.to_dict(model)


def list_pages(method: Any, *args: Any, **kwargs: Any) -> list[Any]:
    """Every page of a list call, as the SDK's models (a collection answer, ``{items: [...]}``, is
    unwrapped). Pages here, with the client's own retry strategy only: the SDK's pager
    (``oci.pagination.list_call_get_all_results``) wraps each page in its default strategy as well,
    so one 503 became 8 x the client's attempts (measured: 24 requests, 127 s)."""
    items: list[Any] = []
    page = None
    while True:
        resp = method(*args, page=page, **kwargs) if page else method(*args, **kwargs)
        data = resp.data
        if not isinstance(data, list) and hasattr(data, "items"):
            data = data.items
        items += list(data)
        page = resp.next_page
        if not page:
            return items


def list_all(method: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """Every page of a list call (:func:`list_pages`), as dicts."""
    return [to_dict(d) for d in list_pages(method, *args, **kwargs)]


def run_module(module: Any, run: Any, error_context: Any = "") -> None:
    """The shared main() of the OCI modules: the SDK check, ``run(module)``, and one mapping of
    errors to ``fail_json`` (``error_context``, a text or a function of the module's parameters that
    returns one, goes into the message of an API error)."""
    from ansible.module_utils.basic import missing_required_lib

    if callable(error_context):
        error_context = error_context(module.params)
    oci = _sdk()
    if oci is None:
        module.fail_json(msg=missing_required_lib("oci"), exception=str(globals()["OCI_IMPORT_ERROR"]))
    try:
        module.exit_json(**run(module))
    except OciModuleError as exc:
        module.fail_json(msg=exc.message, **exc.details)
    except OciAuthError as exc:
        module.fail_json(msg=str(exc))
    except oci.exceptions.ServiceError as exc:
        module.fail_json(
            msg=f"OCI API error{error_context}: {exc.status} {exc.code}: {exc.message}",
            status=exc.status,
            code=exc.code,
            opc_request_id=exc.request_id,
        )
