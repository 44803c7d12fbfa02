#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: compute_instance
short_description: Launch or terminate one OCI compute instance of a cluster, and wait for it
version_added: 0.3.0
description:
  - Finds the instance by O(instance_id), or by O(display_name) among the compartment's instances that
    are not terminating or terminated. Two live instances of one name fail the task, naming both.
  - With O(state=present) and no such instance, calls C(LaunchInstance) (standalone, into a compute
    cluster with O(compute_cluster_id), and attached to O(instance_pool_id) once running), with the
    defined tags O(cluster_tag) = O(cluster) and O(slurm_role_tag) = O(slurm_roles), then waits for
    C(RUNNING) and, with O(wait_for_ssh), for its SSH port. An instance of that name that exists is
    adopted as it is (never relaunched, resized or retagged), so a rerun after an interrupted run
    makes no second instance.
  - Every launch carries an C(opc-retry-token), which the SDK's retries reuse, so a retried request
    makes no second instance. Throttling and transient server errors are retried with backoff;
    capacity and quota errors (500 C(InternalError) "Out of host capacity", 400 C(LimitExceeded)) are
    not, and fail naming the shape, the availability domain and OCI's message. A launch that OCI ends
    C(TERMINATED) before it runs fails the same way and leaves nothing running.
  - With O(state=absent), calls C(TerminateInstance) (or C(DetachInstancePoolInstance) with
    C(isAutoTerminate) and C(isDecrementSize) when the instance is in O(instance_pool_id)) and waits
    for C(TERMINATED). B(An instance whose defined tag O(cluster_tag) is not O(cluster) is never
    terminated); the task fails naming it, its tag and the cluster. The same guard refuses to adopt
    such an instance with O(state=present).
  - Any read that fails ends the task before a write; nothing is terminated on a guess.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  compartment_id:
    description: OCID of the compartment the instance is (or is to be) in.
    type: str
    required: true
  cluster:
    description:
      - Name of the cluster the instance belongs to, the value of the defined tag O(cluster_tag).
      - A launch sets it; a terminate or an adoption requires it.
    type: str
    required: true
  cluster_tag:
    description:
      - The defined tag (C(<namespace>.<key>)) that names an instance's cluster.
      - The same as the inventory plugin's C(cluster_tag).
  display_name:
    description:
      - Display name of the instance; what a launch names it and how it is found.
      - Required without O(instance_id).
    type: str
  instance_id:
    description: OCID of an existing instance (for O(state=absent), or to adopt one with O(state=present)).
    type: str
  state:
    description: V(present) launches the instance if it does not exist; V(absent) terminates it.
    type: str
    choices: [present, absent]
    default: present
  availability_domain:
    description: Availability domain to launch in (for example C(Uocm:US-ASHBURN-AD-1)). Required to launch.
    type: str
  fault_domain:
    description: Fault domain to launch in; OCI picks one when not set.
    type: str
  shape:
    description: Shape to launch (for example C(BM.GPU.H100.8)). Required to launch.
    type: str
  subnet_id:
    description: OCID of the subnet of the primary VNIC. Required to launch.
    type: str
  image_id:
    description: OCID of the image to boot. Required to launch.
    type: str
  hostname_label:
    description: Hostname label of the primary VNIC; defaults to O(display_name) in OCI.
    type: str
  compute_cluster_id:
    description: OCID of the compute cluster (RDMA network) to launch into.
    type: str
  instance_pool_id:
    description:
      - OCID of an instance pool (for example a cluster network's pool). A launched instance is attached
        to it once running; a terminate detaches it with C(isDecrementSize) and C(isAutoTerminate).
    type: str
  slurm_roles:
    description: Slurm roles a launch tags the instance with (O(slurm_role_tag)), for the inventory plugin.
    type: list
    elements: str
    default: [compute]
  slurm_role_tag:
    description: The defined tag (C(<namespace>.<key>)) of the Slurm roles.
    type: str
    default: oci-gpu.slurm-role
  defined_tags:
    description:
      - "More defined tags for a launch (C({namespace: {key: value}}))."
      - O(cluster_tag) and O(slurm_role_tag) are added to them.
    type: dict
  freeform_tags:
    description: Freeform tags for a launch.
    type: dict
  ssh_authorized_keys:
    description: Public SSH keys for the image's default user (metadata C(ssh_authorized_keys)).
    type: str
  user_data:
    description:
      - cloud-init user data (plain text; the module encodes it in base64 for metadata C(user_data)).
      - Never returned; the result lists only metadata key names.
    type: str
  metadata:
    description: Other instance metadata (string values).
    type: dict
  wait:
    description: Wait for C(RUNNING) after a launch, and for C(TERMINATED) after a terminate.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the instance (and for SSH).
    type: int
    default: 1800
  wait_for_ssh:
    description: After C(RUNNING), wait until the instance's private IP accepts TCP connections on O(ssh_port).
    type: bool
    default: false
  ssh_port:
    description: Port O(wait_for_ssh) checks.
    type: int
    default: 22
extends_documentation_fragment:
  - oci_gpu.cluster._oci_auth
  - oci_gpu.cluster._oci_service
  - oci_gpu.cluster._oci_compute
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Reads only; reports the launch or terminate it would make.
seealso:
  - module: oci_gpu.cluster.instance_pool
  - plugin: oci_gpu.cluster.oci
    plugin_type: inventory
notes:
  - A capacity error is common for GPU bare metal. The task fails at once so a playbook can try another
    availability domain or shape; nothing is left behind.
"""

EXAMPLES = r"""
- name: Launch a GPU node for cluster "hpc" and wait until it answers on SSH
  oci_gpu.cluster.compute_instance:
    compartment_id: "{{ compartment_ocid }}"
    cluster: hpc
    display_name: hpc-gpu-17
    availability_domain: Uocm:US-ASHBURN-AD-1
    shape: BM.GPU.H100.8
    subnet_id: "{{ private_subnet_ocid }}"
    image_id: "{{ gpu_image_ocid }}"
    compute_cluster_id: "{{ compute_cluster_ocid }}"
    ssh_authorized_keys: "{{ lookup('ansible.builtin.file', '~/.ssh/id_ed25519.pub') }}"
    wait_for_ssh: true
  delegate_to: localhost

- name: Terminate it (refused unless it carries oci-gpu.cluster = hpc)
  oci_gpu.cluster.compute_instance:
    compartment_id: "{{ compartment_ocid }}"
    cluster: hpc
    display_name: hpc-gpu-17
    state: absent
  delegate_to: localhost
"""

RETURN = r"""
instance:
  description: The instance after the change (or as it is in check mode); empty when there is none.
  returned: always
  type: dict
  contains:
    id:
      description: Instance OCID.
      type: str
    display_name:
      description: Display name.
      type: str
    lifecycle_state:
      description: C(RUNNING), C(PROVISIONING), C(TERMINATED), ...
      type: str
    shape:
      description: Shape.
      type: str
    private_ip:
      description: Private IP of the primary VNIC (when running).
      type: str
    hostname_label:
      description: Hostname label of the primary VNIC.
      type: str
    defined_tags:
      description: Defined tags.
      type: dict
    metadata_keys:
      description: Names of the metadata keys (values, C(user_data) among them, are not returned).
      type: list
      elements: str
  sample:
    id: ocid1.instance.oc1.iad.example
    display_name: hpc-gpu-17
    lifecycle_state: RUNNING
    shape: BM.GPU.H100.8
    private_ip: 10.0.3.17
operation:
  description: What was (or in check mode would be) done.
  returned: always
  type: str
  choices: [launch, terminate, detach_terminate, adopt, none]
  sample: launch
work_request_id:
  description: The work request of the write, when OCI answered with one.
  returned: when a write was made
  type: str
ssh_wait_s:
  description: Seconds from C(RUNNING) until the SSH port answered.
  returned: when O(wait_for_ssh=true) and the instance was waited for
  type: float
"""

import uuid
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _compute as _oci_compute


def argument_spec() -> dict[str, Any]:
    spec = _oci_compute.compute_argspec()
    spec.update(
        {
            "display_name": {"type": "str"},
            "instance_id": {"type": "str"},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "availability_domain": {"type": "str"},
            "fault_domain": {"type": "str"},
            "shape": {"type": "str"},
            "subnet_id": {"type": "str"},
            "image_id": {"type": "str"},
            "hostname_label": {"type": "str"},
            "compute_cluster_id": {"type": "str"},
            "instance_pool_id": {"type": "str"},
            "slurm_roles": {"type": "list", "elements": "str", "default": ["compute"]},
            "slurm_role_tag": {"type": "str", "default": _oci_compute.DEFAULT_ROLE_TAG},
            "defined_tags": {"type": "dict"},
            "freeform_tags": {"type": "dict"},
            "ssh_authorized_keys": {"type": "str", "no_log": False},
            "user_data": {"type": "str", "no_log": True},
            "metadata": {"type": "dict"},
            "wait": {"type": "bool", "default": True},
            "wait_timeout": {"type": "int", "default": 1800},
            "wait_for_ssh": {"type": "bool", "default": False},
            "ssh_port": {"type": "int", "default": 22},
        }
    )
    return spec


def build_module() -> AnsibleModule:
    return AnsibleModule(
        argument_spec=argument_spec(),
        supports_check_mode=True,
        required_one_of=[("display_name", "instance_id")],
    )


def _find(c: dict[str, Any], p: dict[str, Any]) -> dict[str, Any] | None:
    if p["instance_id"]:
        inst = _oci_compute.get_instance(c["compute"], p["instance_id"])
        if inst is not None and inst.get("lifecycle_state") == "TERMINATED":
            return None
        return inst
    return _oci_compute.find_by_name(c["compute"], p["compartment_id"], p["display_name"])


def _launch(c: dict[str, Any], p: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    oci = _oci_auth.oci
    models = oci.core.models
    details = models.LaunchInstanceDetails(
        compartment_id=p["compartment_id"],
        availability_domain=p["availability_domain"],
        fault_domain=p["fault_domain"],
        shape=p["shape"],
        display_name=p["display_name"],
        compute_cluster_id=p["compute_cluster_id"],
        create_vnic_details=models.CreateVnicDetails(
            subnet_id=p["subnet_id"], hostname_label=p["hostname_label"], assign_public_ip=False
        ),
        source_details=models.InstanceSourceViaImageDetails(image_id=p["image_id"]),
        defined_tags=_oci_compute.merged_tags(p),
        freeform_tags=p["freeform_tags"],
        metadata=_oci_compute.launch_metadata(p),
    )
    try:
        resp = c["compute"].launch_instance(
            details, opc_retry_token=uuid.uuid4().hex, retry_strategy=_oci_compute.launch_retry_strategy()
        )
    except oci.exceptions.ServiceError as exc:
        if _oci_compute.is_capacity_error(exc.status, exc.code, exc.message):
            raise _oci_compute.ComputeError(
                f"no capacity to launch {p['display_name']!r}: shape {p['shape']} in {p['availability_domain']}:"
                f" OCI answered {exc.status} {exc.code}: {exc.message}",
                status=exc.status,
                code=exc.code,
                opc_request_id=exc.request_id,
            ) from exc
        raise
    return _oci_compute.to_dict(resp.data), resp.headers.get("opc-work-request-id")


def run(module: AnsibleModule) -> dict[str, Any]:
    p = module.params
    _oci_compute.split_tag(p["cluster_tag"], "cluster_tag")
    if p["state"] == "present" and not p["instance_id"]:
        errors = _oci_compute.launch_input_errors(p)
        if errors:
            raise _oci_compute.ComputeError("; ".join(errors))
    c = _oci_compute.clients(p)
    result: dict[str, Any] = {"changed": False, "operation": "none", "instance": {}}
    current = _find(c, p)

    if p["state"] == "absent":
        if current is None:
            return result
        problem = _oci_compute.ownership_problem(current, p["cluster"], p["cluster_tag"])
        if problem:
            raise _oci_compute.ComputeError(problem, instance=_oci_compute.instance_view(current))
        in_pool = bool(p["instance_pool_id"]) and current.get("instance_configuration_id") is not None
        result.update(changed=True, operation="detach_terminate" if in_pool else "terminate")
        result["instance"] = _oci_compute.instance_view(current)
        if module.check_mode or (current.get("lifecycle_state") == "TERMINATING" and not p["wait"]):
            return result
        if current.get("lifecycle_state") != "TERMINATING":
            if in_pool:
                details = _oci_auth.oci.core.models.DetachInstancePoolInstanceDetails(
                    instance_id=current["id"], is_decrement_size=True, is_auto_terminate=True
                )
                resp = c["management"].detach_instance_pool_instance(p["instance_pool_id"], details)
                result["work_request_id"] = resp.headers.get("opc-work-request-id")
            else:
                c["compute"].terminate_instance(current["id"], preserve_boot_volume=False)
        if p["wait"]:
            current = _oci_compute.wait_state(
                c["compute"], current["id"], ("TERMINATED",), p["wait_timeout"], p["poll_interval"]
            )
        result["instance"] = _oci_compute.instance_view(current)
        return result

    if current is not None:
        problem = _oci_compute.ownership_problem(current, p["cluster"], p["cluster_tag"])
        if problem:
            raise _oci_compute.ComputeError(problem, instance=_oci_compute.instance_view(current))
        result["operation"] = "adopt" if current.get("lifecycle_state") != "RUNNING" else "none"
    elif p["instance_id"]:
        raise _oci_compute.ComputeError(f"instance {p['instance_id']} does not exist (or is terminated)")
    elif module.check_mode:
        result.update(changed=True, operation="launch")
        return result
    else:
        current, result["work_request_id"] = _launch(c, p)
        result.update(changed=True, operation="launch")

    if p["wait"] and not module.check_mode:
        current = _oci_compute.wait_state(
            c["compute"], current["id"], ("RUNNING", "STOPPED"), p["wait_timeout"], p["poll_interval"]
        )
        if current.get("lifecycle_state") == "TERMINATED":
            errors = _oci_compute.work_request_errors(c["work_requests"], result.get("work_request_id"))
            raise _oci_compute.ComputeError(
                f"launch of {p['display_name'] or current['id']!r} (shape {p['shape']} in {p['availability_domain']})"
                f" ended TERMINATED before it ran: {'; '.join(errors) or 'OCI gave no reason'}",
                instance=_oci_compute.instance_view(current),
            )
    vnic = None
    if current.get("lifecycle_state") == "RUNNING":
        vnic = _oci_compute.primary_vnic(c["compute"], c["network"], current)
        if p["instance_pool_id"] and current.get("instance_configuration_id") is None and not module.check_mode:
            details = _oci_auth.oci.core.models.AttachInstancePoolInstanceDetails(instance_id=current["id"])
            c["management"].attach_instance_pool_instance(p["instance_pool_id"], details)
            current = _oci_compute.get_instance(c["compute"], current["id"]) or current
            result["changed"] = True
        if p["wait"] and p["wait_for_ssh"] and vnic and not module.check_mode:
            result["ssh_wait_s"] = round(
                _oci_compute.wait_for_ssh(vnic["private_ip"], p["ssh_port"], p["wait_timeout"], p["poll_interval"]), 1
            )
    result["instance"] = _oci_compute.instance_view(current, vnic)
    return result


def main() -> None:
    _oci_auth.run_module(build_module(), run, lambda p: f" (instance {p['display_name'] or p['instance_id']})")


if __name__ == "__main__":
    main()
