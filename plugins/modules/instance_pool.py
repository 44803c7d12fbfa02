#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: instance_pool
short_description: Read, grow, attach to or detach from one OCI instance pool of a cluster
version_added: 0.3.0
description:
  - Reads the instance pool and its instances (C(GetInstancePool), C(ListInstancePoolInstances)).
  - O(size) grows the pool (C(UpdateInstancePool)). A smaller size is refused, because OCI would pick
    which instances to terminate; name them in O(detach) instead.
  - O(attach) adds running instances (C(AttachInstancePoolInstance)); O(detach) removes named instances
    (C(DetachInstancePoolInstance) with C(isDecrementSize)), terminating them with O(terminate_detached).
  - Every instance attached or detached must carry the defined tag O(cluster_tag) = O(cluster), and so
    must the pool when it carries that tag at all; anything else fails the task before any write,
    naming the instance and its tag.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  instance_pool_id:
    description: OCID of the instance pool (a cluster network's pool, for example).
    type: str
    required: true
  compartment_id:
    description: OCID of the pool's compartment.
    type: str
    required: true
  cluster:
    description: Name of the cluster, the value of the defined tag O(cluster_tag) every instance changed must carry.
    type: str
    required: true
  size:
    description: The pool's size; only growing is done (see the description).
    type: int
  attach:
    description: OCIDs of running instances to attach (those already in the pool are skipped).
    type: list
    elements: str
    default: []
  detach:
    description: OCIDs of instances to detach (those not in the pool are skipped).
    type: list
    elements: str
    default: []
  terminate_detached:
    description: Terminate the instances O(detach) removes (C(isAutoTerminate)).
    type: bool
    default: false
  wait:
    description: Wait for each detach's work request to end.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for each work request.
    type: int
    default: 1800
extends_documentation_fragment:
  - oci_gpu.cluster._oci_auth
  - oci_gpu.cluster._oci_service
  - oci_gpu.cluster._oci_compute
  - ansible.builtin.action_common_attributes
seealso:
  - module: oci_gpu.cluster.compute_instance
"""

EXAMPLES = r"""
- name: Read the cluster network's pool
  oci_gpu.cluster.instance_pool:
    instance_pool_id: "{{ pool_ocid }}"
    compartment_id: "{{ compartment_ocid }}"
    cluster: hpc
  delegate_to: localhost
  register: pool

- name: Remove two broken nodes from the pool and terminate them
  oci_gpu.cluster.instance_pool:
    instance_pool_id: "{{ pool_ocid }}"
    compartment_id: "{{ compartment_ocid }}"
    cluster: hpc
    detach: [ocid1.instance.oc1.iad.one, ocid1.instance.oc1.iad.two]
    terminate_detached: true
  delegate_to: localhost
"""

RETURN = r"""
pool:
  description: The pool after the changes (as it is, in check mode).
  returned: always
  type: dict
  contains:
    id:
      description: Pool OCID.
      type: str
    display_name:
      description: Display name.
      type: str
    size:
      description: Size.
      type: int
    lifecycle_state:
      description: C(RUNNING), C(SCALING), ...
      type: str
    instances:
      description: The pool's instances (C(id), C(display_name), C(state)).
      type: list
      elements: dict
actions:
  description: The writes made (or in check mode, that would be made), in order.
  returned: always
  type: list
  elements: str
  sample: ["resize 4 -> 6", "attach ocid1.instance.oc1.iad.example"]
"""

import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _compute as _oci_compute


def argument_spec() -> dict[str, Any]:
    spec = _oci_compute.compute_argspec()
    spec.update(
        {
            "instance_pool_id": {"type": "str", "required": True},
            "size": {"type": "int"},
            "attach": {"type": "list", "elements": "str", "default": []},
            "detach": {"type": "list", "elements": "str", "default": []},
            "terminate_detached": {"type": "bool", "default": False},
            "wait": {"type": "bool", "default": True},
            "wait_timeout": {"type": "int", "default": 1800},
        }
    )
    return spec


def build_module() -> AnsibleModule:
    return AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)


def _read(c: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    pool = _oci_compute.to_dict(c["management"].get_instance_pool(p["instance_pool_id"]).data)
    members = _oci_compute.list_all(
        c["management"].list_instance_pool_instances, p["compartment_id"], p["instance_pool_id"]
    )
    pool["instances"] = [
        {"id": m["id"], "display_name": m.get("display_name"), "state": m.get("state")} for m in members
    ]
    return pool


def _view(pool: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "display_name", "size", "lifecycle_state", "instances", "instance_configuration_id")
    return {k: pool.get(k) for k in keys}


def _wait_work_request(c: dict[str, Any], wid: str | None, p: dict[str, Any]) -> None:
    if not wid or not p["wait"]:
        return
    end = time.monotonic() + p["wait_timeout"]
    while True:
        wr = _oci_compute.to_dict(c["work_requests"].get_work_request(wid).data)
        if wr.get("status") in ("SUCCEEDED", "FAILED", "CANCELED"):
            if wr["status"] != "SUCCEEDED":
                errors = _oci_compute.work_request_errors(c["work_requests"], wid)
                raise _oci_compute.ComputeError(
                    f"work request {wid} ({wr.get('operation_type')}) {wr['status']}:"
                    f" {'; '.join(errors) or 'no reason given'}"
                )
            return
        if time.monotonic() >= end:
            raise _oci_compute.ComputeError(f"work request {wid} still {wr.get('status')} after {p['wait_timeout']} s")
        time.sleep(p["poll_interval"])


def run(module: AnsibleModule) -> dict[str, Any]:
    p = module.params
    _oci_compute.split_tag(p["cluster_tag"], "cluster_tag")
    if p["size"] is not None and p["size"] < 0:
        raise _oci_compute.ComputeError(f"size {p['size']} must be 0 or more")
    both = sorted(set(p["attach"]) & set(p["detach"]))
    if both:
        raise _oci_compute.ComputeError(f"instances both in attach and detach: {', '.join(both)}")
    c = _oci_compute.clients(p)
    pool = _read(c, p)
    if _oci_compute.tag_value(pool, p["cluster_tag"]) not in (None, p["cluster"]):
        raise _oci_compute.ComputeError(
            f"instance pool {pool.get('display_name')!r} belongs to cluster"
            f" {_oci_compute.tag_value(pool, p['cluster_tag'])!r}, not {p['cluster']!r}"
        )
    members = {m["id"] for m in pool["instances"]}
    to_attach = [i for i in dict.fromkeys(p["attach"]) if i not in members]
    to_detach = [i for i in dict.fromkeys(p["detach"]) if i in members]
    # every guard before the first write
    problems = []
    for iid in to_attach + to_detach:
        inst = _oci_compute.get_instance(c["compute"], iid)
        if inst is None:
            problems.append(f"instance {iid} does not exist")
            continue
        problem = _oci_compute.ownership_problem(inst, p["cluster"], p["cluster_tag"])
        if problem:
            problems.append(problem)
        elif iid in to_attach and inst.get("lifecycle_state") != "RUNNING":
            problems.append(
                f"instance {inst.get('display_name')!r} ({iid}) is {inst.get('lifecycle_state')}, not RUNNING"
            )
    if p["size"] is not None and p["size"] < pool["size"]:
        problems.append(
            f"size {p['size']} is smaller than the pool's {pool['size']}: OCI would choose which instances to"
            " terminate; name them in detach instead"
        )
    if problems:
        raise _oci_compute.ComputeError("; ".join(problems), pool=_view(pool))

    actions = []
    if p["size"] is not None and p["size"] > pool["size"]:
        actions.append(f"resize {pool['size']} -> {p['size']}")
    actions += [f"attach {i}" for i in to_attach]
    actions += [f"detach{' and terminate' if p['terminate_detached'] else ''} {i}" for i in to_detach]
    result: dict[str, Any] = {"changed": bool(actions), "actions": actions, "pool": _view(pool)}
    if not actions or module.check_mode:
        return result
    models = _oci_auth.oci.core.models
    mgmt = c["management"]
    if p["size"] is not None and p["size"] > pool["size"]:
        mgmt.update_instance_pool(p["instance_pool_id"], models.UpdateInstancePoolDetails(size=p["size"]))
    for iid in to_attach:
        mgmt.attach_instance_pool_instance(
            p["instance_pool_id"], models.AttachInstancePoolInstanceDetails(instance_id=iid)
        )
    for iid in to_detach:
        details = models.DetachInstancePoolInstanceDetails(
            instance_id=iid, is_decrement_size=True, is_auto_terminate=p["terminate_detached"]
        )
        resp = mgmt.detach_instance_pool_instance(p["instance_pool_id"], details)
        _wait_work_request(c, resp.headers.get("opc-work-request-id"), p)
    result["pool"] = _view(_read(c, p))
    return result


def main() -> None:
    _oci_auth.run_module(build_module(), run, lambda p: f" (instance pool {p['instance_pool_id']})")


if __name__ == "__main__":
    main()
