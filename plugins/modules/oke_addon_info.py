#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: oke_addon_info
short_description: List an OKE cluster's add-ons and the add-on versions offered for its Kubernetes version
version_added: 0.1.0
description:
  - With O(cluster_id), lists the cluster's add-ons (C(ListAddons)), or reads one with its
    configurations (C(GetAddon)) when O(name) is set.
  - Lists the add-ons OKE offers and their versions (C(ListAddonOptions)) for O(kubernetes_version),
    else for the cluster's Kubernetes version.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  cluster_id:
    description: OCID of the OKE cluster. Required unless O(kubernetes_version) is set.
    type: str
  name:
    description: Only this add-on (with its configurations).
    type: str
  kubernetes_version:
    description: Kubernetes version for the offered versions (for example C(v1.31.1)); default the cluster's.
    type: str
  options:
    description: Also list the add-ons and versions OKE offers.
    type: bool
    default: true
extends_documentation_fragment:
  - oci_gpu.cluster._oci_auth
  - oci_gpu.cluster._oci_service
  - ansible.builtin.action_common_attributes
  - oci_gpu.cluster._read_only
seealso:
  - module: oci_gpu.cluster.oke_addon
"""

EXAMPLES = r"""
- name: Read the GPU operator add-on
  oci_gpu.cluster.oke_addon_info:
    cluster_id: "{{ oke_cluster_id }}"
    name: NvidiaGpuOperator
  register: gpu_operator

- name: List add-on versions offered for Kubernetes v1.31.1
  oci_gpu.cluster.oke_addon_info:
    kubernetes_version: v1.31.1
"""

RETURN = r"""
addons:
  description:
    - The cluster's add-ons (all, or the one named; empty when it is not installed).
    - C(configurations) is filled only when O(name) is set (ListAddons does not return it).
  returned: when O(cluster_id) is set
  type: list
  elements: dict
  sample:
    - name: NvidiaGpuOperator
      version: v25.3.0
      current_installed_version: v25.3.0
      lifecycle_state: ACTIVE
      configurations: {driver.enabled: "false"}
      addon_error: null
      time_created: "2025-01-01T00:00:00+00:00"
kubernetes_version:
  description: The Kubernetes version the offered versions were listed for.
  returned: always
  type: str
  sample: v1.31.1
options:
  description: Add-ons OKE offers, each with the versions that support RV(kubernetes_version).
  returned: when O(options=true)
  type: list
  elements: dict
  sample:
    - name: NvidiaGpuOperator
      is_essential: false
      versions:
        - version: v25.3.0
          kubernetes_version_filters: {minimal_version: v1.30.0}
          configuration_keys: [driver.enabled, toolkit.enabled]
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _oke


def option_view(opt: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": opt.get("name"),
        "is_essential": bool(opt.get("is_essential")),
        "versions": [
            {
                "version": v.get("version_number"),
                "kubernetes_version_filters": {
                    k: val for k, val in (v.get("kubernetes_version_filters") or {}).items() if val
                },
                "configuration_keys": [c.get("key") for c in v.get("configurations") or []],
            }
            for v in opt.get("versions") or []
        ],
    }


def run(module: AnsibleModule) -> dict[str, Any]:
    p = module.params
    if p["cluster_id"]:
        bad = _oke.validate_cluster_id(p["cluster_id"])
        if bad:
            raise _oke.OkeError(bad)
    client = _oke.ce_client(p)
    result: dict[str, Any] = {"changed": False}
    k8s = p["kubernetes_version"]
    if p["cluster_id"]:
        cluster = _oke.get_cluster(client, p["cluster_id"])
        k8s = k8s or cluster.get("kubernetes_version")
        if p["name"]:
            found = _oke.get_addon(client, p["cluster_id"], p["name"])
            addons = [found] if found else []
        else:
            addons = _oke.list_all(client.list_addons, p["cluster_id"])
        views = [_oke.addon_view(a) for a in addons]
        if not p["name"]:
            for v in views:
                v["configurations"] = None
        result["addons"] = views
    result["kubernetes_version"] = k8s
    if p["options"]:
        result["options"] = [option_view(o) for o in _oke.addon_options(client, k8s, p["name"])]
    return result


def main() -> None:
    spec = _oke.oke_argspec()
    spec.update(
        {
            "cluster_id": {"type": "str"},
            "name": {"type": "str"},
            "kubernetes_version": {"type": "str"},
            "options": {"type": "bool", "default": True},
        }
    )
    module = AnsibleModule(
        argument_spec=spec, supports_check_mode=True, required_one_of=[("cluster_id", "kubernetes_version")]
    )
    _oci_auth.run_module(module, run)


if __name__ == "__main__":
    main()
