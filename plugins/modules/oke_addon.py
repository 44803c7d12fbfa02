#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: oke_addon
short_description: Install, update or disable one OKE managed add-on and wait for it
version_added: 0.1.0
description:
  - Compares the cluster's add-on (version, configurations as key/value) with the wanted one and
    calls C(InstallAddon), C(UpdateAddon) or C(DisableAddon) only when they differ.
  - Before any write, checks the input (every configuration value is a string) and that
    ListAddonOptions offers the add-on, and the version, for the cluster's Kubernetes version.
  - Waits for the work request (O(wait)) and reports the add-on's final state; a failed work
    request fails the task with the add-on's C(addonError) and the work request's errors.
  - An install answered 409 (the add-on appeared meanwhile) adopts the existing add-on and
    updates it only if it differs.
  - Calls use the SDK retry strategy (429 and 5xx with backoff); installs carry a retry token.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  name:
    description: Add-on name as OKE knows it (for example C(NvidiaGpuOperator)).
    type: str
    required: true
  state:
    description:
      - V(present) installs or updates the add-on; V(absent) disables it.
    type: str
    choices: [present, absent]
    default: present
  version:
    description:
      - Add-on version (for example C(v25.3.0)). Must be offered for the cluster's Kubernetes version.
      - When not set, an install takes the service's default and an update keeps the current version.
    type: str
  configurations:
    description:
      - Add-on configuration as key/value; every value must be a string (quote C("true")).
      - When set, the add-on's configuration is made exactly this; when not set, it is not managed.
    type: dict
  remove_existing:
    description: With O(state=absent), also remove the add-on's resources from the cluster (C(isRemoveExistingAddOn)).
    type: bool
    default: true
  wait:
    description: Wait for the work request to end and report the add-on's final state.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the work request (and for an add-on already in transition).
    type: int
    default: 1800
  poll_interval:
    description: Seconds between polls of the work request.
    type: float
    default: 10
extends_documentation_fragment:
  - oci_gpu.cluster._oci_auth
  - oci_gpu.cluster._oci_service
  - oci_gpu.cluster._oke_cluster
  - ansible.builtin.action_common_attributes
seealso:
  - module: oci_gpu.cluster.oke_addon_info
  - module: oci_gpu.cluster.oke_cluster_info
"""

EXAMPLES = r"""
- name: Install the NVIDIA GPU operator for OKE GPU images (driver preinstalled)
  oci_gpu.cluster.oke_addon:
    cluster_id: "{{ oke_cluster_id }}"
    name: NvidiaGpuOperator
    version: v25.3.0
    configurations:
      driver.enabled: "false"
      dcgmExporter.enabled: "true"

- name: Disable OKE's own NVIDIA device plugin
  oci_gpu.cluster.oke_addon:
    cluster_id: "{{ oke_cluster_id }}"
    name: NvidiaGpuPlugin
    state: absent
"""

RETURN = r"""
addon:
  description: The add-on after the change (or as it is, in check mode or without a change); empty when absent.
  returned: always
  type: dict
  contains:
    name:
      description: Add-on name.
      type: str
    version:
      description: Wanted version.
      type: str
    current_installed_version:
      description: Version running in the cluster.
      type: str
    lifecycle_state:
      description: C(ACTIVE), C(NEEDS_ATTENTION), C(CREATING), ...
      type: str
    configurations:
      description: Configuration as key/value.
      type: dict
    addon_error:
      description: The add-on's error (C(code), C(message), C(status)), if any.
      type: dict
  sample:
    name: NvidiaGpuOperator
    version: v25.3.0
    current_installed_version: v25.3.0
    lifecycle_state: ACTIVE
    configurations: {driver.enabled: "false"}
    addon_error: null
action:
  description: What was (or in check mode would be) done.
  returned: always
  type: str
  choices: [install, update, disable, none]
  sample: install
changes:
  description: What differed (C(state), C(version), C(configurations)).
  returned: always
  type: list
  elements: str
  sample: [configurations]
work_request_id:
  description: The work request of the write.
  returned: when a write was made
  type: str
work_request:
  description: The work request at its end (C(status), C(errors) when it failed).
  returned: when a write was made and O(wait=true)
  type: dict
kubernetes_version:
  description: The cluster's Kubernetes version, against which the add-on version was checked.
  returned: always
  type: str
  sample: v1.31.1
"""

import uuid
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _oke


def build_module() -> AnsibleModule:
    spec = _oke.oke_cluster_argspec()
    spec.update(
        {
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "version": {"type": "str"},
            "configurations": {"type": "dict"},
            "remove_existing": {"type": "bool", "default": True},
            "wait": {"type": "bool", "default": True},
            "wait_timeout": {"type": "int", "default": 1800},
            "poll_interval": {"type": "float", "default": 10},
        }
    )
    return AnsibleModule(argument_spec=spec, supports_check_mode=True)


def write(module: AnsibleModule, client: Any, action: str, cluster_id: str, desired: dict[str, Any]) -> str:
    """Make the write; return the work request id. An install answered 409 raises _Exists."""
    oci = _oci_auth.oci
    models = oci.container_engine.models
    name = desired["name"]
    configs = _oke.dict_to_configs(desired["configurations"]) if desired["configurations"] is not None else None
    configs = [models.AddonConfiguration(**c) for c in configs] if configs is not None else None
    if action == "install":
        details = models.InstallAddonDetails(addon_name=name, version=desired["version"], configurations=configs)
        try:
            resp = client.install_addon(cluster_id, details, opc_retry_token=uuid.uuid4().hex)
        except oci.exceptions.ServiceError as exc:
            if exc.status == 409:
                raise _Exists() from exc
            raise
    elif action == "update":
        details = models.UpdateAddonDetails(version=desired["version"], configurations=configs)
        resp = client.update_addon(cluster_id, name, details)
    else:
        resp = client.disable_addon(cluster_id, name, module.params["remove_existing"])
    return resp.headers.get("opc-work-request-id")


class _Exists(Exception):
    pass


def run(module: AnsibleModule) -> dict[str, Any]:
    p = module.params
    cluster_id, name = p["cluster_id"], p["name"]
    desired = {
        "name": name,
        "state": p["state"],
        "version": p["version"],
        "configurations": p["configurations"],
    }
    # input errors first: nothing is called for a bad request
    errors = _oke.validate_configurations(name, p["configurations"])
    bad_id = _oke.validate_cluster_id(cluster_id)
    if bad_id:
        errors.insert(0, bad_id)
    if errors:
        raise _oke.OkeError("; ".join(errors))

    client = _oke.ce_client(p)
    cluster = _oke.get_cluster(client, cluster_id)
    k8s = cluster.get("kubernetes_version")
    result: dict[str, Any] = {"changed": False, "kubernetes_version": k8s, "work_request_id": None}
    if p["state"] == "present":
        errors = _oke.check_addon_request(name, p["version"], p["configurations"], _oke.addon_options(client, k8s), k8s)
        if errors:
            raise _oke.OkeError("; ".join(errors), kubernetes_version=k8s)

    current = _oke.wait_addon_settled(client, cluster_id, name, p["wait_timeout"], p["poll_interval"])
    plan = _oke.plan_addon(_oke.addon_view(current), desired)
    if plan["action"] is None and current is not None and current.get("lifecycle_state") in _oke.FAILED_STATES:
        view = _oke.addon_view(current)
        text = (view["addon_error"] or {}).get("message", "no error text")
        raise _oke.OkeError(
            f"add-on {name} is {view['lifecycle_state']}: {text}",
            addon=view,
            kubernetes_version=k8s,
        )
    if plan["action"] is not None and not module.check_mode:
        try:
            wr_id = write(module, client, plan["action"], cluster_id, desired)
        except _Exists:
            # someone (or an earlier, interrupted run) installed it meanwhile: adopt it
            current = _oke.wait_addon_settled(client, cluster_id, name, p["wait_timeout"], p["poll_interval"])
            if current is None:
                raise _oke.OkeError(
                    f"add-on {name}: InstallAddon answered 409 but GetAddon finds no such add-on"
                ) from None
            plan = _oke.plan_addon(_oke.addon_view(current), desired)
            wr_id = write(module, client, plan["action"], cluster_id, desired) if plan["action"] else None
        result["work_request_id"] = wr_id
        if wr_id and p["wait"]:
            wr = _oke.wait_work_request(client, wr_id, p["wait_timeout"], p["poll_interval"])
            result["work_request"] = wr
            current = _oke.get_addon(client, cluster_id, name)
            if wr.get("status") != "SUCCEEDED":
                view = _oke.addon_view(current) or {}
                texts = [(view.get("addon_error") or {}).get("message")] + [
                    e.get("message") for e in wr.get("errors", [])
                ]
                detail = "; ".join(dict.fromkeys(t for t in texts if t)) or "no error text"
                raise _oke.OkeError(
                    f"add-on {name}: {plan['action']} work request {wr_id} {wr.get('status')}: {detail}",
                    addon=view,
                    work_request=wr,
                    work_request_id=wr_id,
                    kubernetes_version=k8s,
                )
        elif wr_id:
            current = _oke.get_addon(client, cluster_id, name)
    result["changed"] = plan["action"] is not None
    result["action"] = plan["action"] or "none"
    result["changes"] = plan["changes"]
    result["addon"] = _oke.addon_view(current) or {}
    if module._diff:
        result["diff"] = plan["diff"]
    return result


def main() -> None:
    _oci_auth.run_module(build_module(), run, lambda p: f" on add-on {p['name']}")


if __name__ == "__main__":
    main()
