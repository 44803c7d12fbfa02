# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``oci_gpu.cluster.oci`` inventory plugin's logic, in three parts (the plugin class only glues
them to Ansible):

- ``_oci_inventory_api``: the API wrapper (``SdkApi``: list calls only, every page, slim dicts) and
  the errors;
- ``_oci_inventory_fetch``: ``fetch()``, which turns list calls into a compact, JSON-serialisable
  *raw* dict (the cache payload; it never holds instance metadata, user_data or ssh keys), one
  fetcher per region with one method per phase and a recorder of what failed;
- ``_oci_inventory_hosts``: ``build_hosts()``, which turns raw data plus options into host records
  (name, variables, groups) without touching the network.

This module names what the plugin and the tests use.
"""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._oci_inventory_api import (
    AuthFailure,
    CallFailed,
    InventoryError,
    SdkApi,
)
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._oci_inventory_fetch import (
    fetch,
    select_compartments,
    server_filter_params,
)
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._oci_inventory_hosts import (
    CORE_HOSTVARS,
    RegionIndex,
    build_hosts,
    default_group_names,
    host_vars,
    matches,
    report_gaps,
)

__all__ = [
    "CORE_HOSTVARS",
    "AuthFailure",
    "CallFailed",
    "InventoryError",
    "RegionIndex",
    "SdkApi",
    "build_hosts",
    "default_group_names",
    "fetch",
    "host_vars",
    "matches",
    "report_gaps",
    "select_compartments",
    "server_filter_params",
]
