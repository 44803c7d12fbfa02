# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""What every OCI module documents: the authentication options (``oci_gpu.cluster._oci_auth``, which
the inventory plugin lists alone), region and endpoint, and the attributes all of them share.

Argument spec: ``_oci_auth.oci_auth_argspec()`` with ``_oci_auth.oci_service_argspec()``.
"""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.doc_fragments._oci_auth import ModuleDocFragment as _OciAuth


class ModuleDocFragment:
    DOCUMENTATION = (
        _OciAuth.DOCUMENTATION
        + r"""
  region:
    description:
      - OCI region to call (for example C(us-ashburn-1)).
      - When not set, the region of the configuration file (or of the instance) is used.
    type: str
  service_endpoint:
    description:
      - API endpoint URL (scheme, host and port) used instead of the region's public one.
      - A test hook (the collection's OCI API emulator); also useful behind a proxy that terminates TLS.
    type: str
requirements:
  - oci (the OCI Python SDK)
attributes:
  check_mode:
    support: full
  platform:
    details: Calls the OCI API from where it runs (usually the control node, C(delegate_to=localhost)).
    support: N/A
    platforms: posix
"""
    )
