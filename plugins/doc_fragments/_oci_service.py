# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Region and endpoint options, and the platform attribute, of the OCI modules.

Argument spec: ``_oci_auth.oci_service_argspec()``.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
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
  platform:
    details: Calls the OCI API from where it runs (usually the control node, C(delegate_to=localhost)).
    support: N/A
    platforms: posix
"""
