# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""File Storage exports through the OCI API: the work of ``oci_gpu.cluster.fss_export_info``.

Shared by the module (run wherever a task sends it) and its action plugin (run in the controller's
own process, where the dynamic inventory has already loaded the SDK).

``ARGUMENT_SPEC``, ``REQUIRED_ONE_OF``, ``MUTUALLY_EXCLUSIVE``
    The module's options.
``lookup_exports(params) -> {"exports": [...], "lookups": [...]?}``
    Raises ``FssApiError`` with a message fit for the user.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
from ansible_collections.oci_gpu.cluster.plugins.module_utils.storage import _fss

LOOKUP_KEYS = ("file_system_id", "mount_target_id", "export_path", "compartment_id")

ARGUMENT_SPEC: dict[str, Any] = {
    **_oci_auth.oci_auth_argspec(),
    **_oci_auth.oci_service_argspec(),
    "file_system_id": {"type": "str"},
    "mount_target_id": {"type": "str"},
    "export_path": {"type": "str"},
    "compartment_id": {"type": "str"},
    "lookups": {"type": "list", "elements": "dict"},
}
REQUIRED_ONE_OF = [("file_system_id", "mount_target_id", "lookups")]
MUTUALLY_EXCLUSIVE = [("lookups", "file_system_id"), ("lookups", "mount_target_id")]


class FssApiError(Exception):
    """What went wrong, for the user; ``request_id`` when the API answered with an error."""

    def __init__(self, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


def lookup_exports(p: dict[str, Any]) -> dict[str, Any]:
    if not _oci_auth.HAS_OCI:
        raise FssApiError(f"the 'oci' Python SDK is required on the controller: {_oci_auth.OCI_IMPORT_ERROR}")
    oci = _oci_auth.oci
    asked = p["lookups"] if p.get("lookups") is not None else [{k: p.get(k) for k in LOOKUP_KEYS}]
    for index, lookup in enumerate(asked):
        if not isinstance(lookup, dict) or not (lookup.get("file_system_id") or lookup.get("mount_target_id")):
            raise FssApiError(f"lookups[{index}] = {lookup!r}: give file_system_id and/or mount_target_id")
    try:
        auth = _oci_auth.resolve_auth(p)
        where = (p.get("region"), p.get("service_endpoint"))
        fss = _oci_auth.make_client(oci.file_storage.FileStorageClient, auth, *where)
        vnet = _oci_auth.make_client(oci.core.VirtualNetworkClient, auth, *where)
        found = [
            {
                "key": lookup.get("key"),
                "exports": _fss.read_exports(
                    fss, vnet, oci.util.to_dict, _oci_auth.list_pages, **{k: lookup.get(k) or None for k in LOOKUP_KEYS}
                ),
            }
            for lookup in asked
        ]
    except (_oci_auth.OciAuthError, _fss.FssError) as exc:
        raise FssApiError(str(exc)) from None
    except oci.exceptions.ServiceError as exc:
        raise FssApiError(f"OCI File Storage: {exc.status} {exc.code}: {exc.message}", exc.request_id) from None
    if p.get("lookups") is not None:
        return {"lookups": found, "exports": [r for f in found for r in f["exports"]]}
    return {"exports": found[0]["exports"]}
