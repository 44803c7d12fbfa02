#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: oke_cluster_info
short_description: Read an OKE cluster, its node pools with node states, and its kubeconfig
version_added: 0.1.0
description:
  - Reads the cluster (C(GetCluster)) and its node pools with their nodes (C(ListNodePools),
    C(GetNodePool)), and counts ACTIVE GPU and non-GPU nodes (the shape table decides which
    shapes have GPUs). GPU shapes come with their RDMA facts for the SR-IOV device plugin.
  - With O(kubeconfig_path), writes the cluster's kubeconfig (C(CreateKubeconfig)) there with mode
    C(0600), only when its content differs; that is the only change this module makes.
  - The kubeconfig content is returned only with O(return_kubeconfig=true).
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  node_pools:
    description: Also read the node pools and their nodes.
    type: bool
    default: true
  kubeconfig_path:
    description: Write the kubeconfig here (mode C(0600); parent directory created with C(0700)).
    type: path
  kubeconfig_endpoint:
    description: Which cluster endpoint the kubeconfig points at; the service's default when not set.
    type: str
    choices: [LEGACY_KUBERNETES, PUBLIC_ENDPOINT, PRIVATE_ENDPOINT, VCN_HOSTNAME]
  return_kubeconfig:
    description: Return the kubeconfig content (it names the cluster endpoint and the credential command).
    type: bool
    default: false
extends_documentation_fragment:
  - oci_gpu.cluster._oci_auth
  - oci_gpu.cluster._oci_service
  - oci_gpu.cluster._oke_cluster
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: The kubeconfig file is not written.
  diff_mode:
    support: partial
    details: Says whether the kubeconfig file changes, not its content.
  idempotent:
    description: The kubeconfig file is rewritten only when its content differs.
seealso:
  - module: oci_gpu.cluster.oke_addon
"""

EXAMPLES = r"""
- name: Read the cluster and write its kubeconfig
  oci_gpu.cluster.oke_cluster_info:
    cluster_id: "{{ oke_cluster_id }}"
    kubeconfig_path: ~/.kube/oke-gpu.yaml
  register: oke

- name: Require an ACTIVE non-GPU node
  ansible.builtin.assert:
    that: oke.nodes.non_gpu_active > 0
"""

RETURN = r"""
cluster:
  description: The cluster.
  returned: always
  type: dict
  contains:
    id:
      description: Cluster OCID.
      type: str
    name:
      description: Cluster name.
      type: str
    kubernetes_version:
      description: Kubernetes version of the control plane.
      type: str
    lifecycle_state:
      description: C(ACTIVE), C(UPDATING), ...
      type: str
    compartment_id:
      description: Compartment OCID.
      type: str
    type:
      description: C(BASIC_CLUSTER) or C(ENHANCED_CLUSTER).
      type: str
  sample:
    id: ocid1.cluster.oc1.iad.example
    name: gpu
    kubernetes_version: v1.31.1
    lifecycle_state: ACTIVE
    compartment_id: ocid1.compartment.oc1..example
    type: ENHANCED_CLUSTER
node_pools:
  description: Node pools with shape, GPUs per node (V(-1) unknown), and nodes with their states.
  returned: when O(node_pools=true)
  type: list
  elements: dict
  sample:
    - id: ocid1.nodepool.oc1.iad.example
      name: gpu-pool
      node_shape: BM.GPU.H100.8
      gpus_per_node: 8
      is_gpu: true
      lifecycle_state: ACTIVE
      nodes: [{name: oke-0-1-0, lifecycle_state: ACTIVE, private_ip: 10.250.1.10}]
nodes:
  description: Node counts (C(total), C(active), C(gpu_active), C(non_gpu_active)).
  returned: when O(node_pools=true)
  type: dict
  sample: {total: 4, active: 4, gpu_active: 2, non_gpu_active: 2}
gpu_shapes:
  description:
    - One record per GPU shape in the node pools, with node and GPU counts.
    - C(rdma) holds the shape's RDMA facts for the SR-IOV device plugin, null without RDMA.
  returned: when O(node_pools=true)
  type: list
  elements: dict
  sample:
    - shape: BM.GPU.H100.8
      gpus_per_node: 8
      gpu_model: h100
      nodes: 2
      active_nodes: 2
      gpus_active: 16
      rdma:
        rdma_nic_count: 8
        rdma_vendor_id: "15b3"
        rdma_vf_device_id: "101e"
        rdma_resource_name: rdma_bm_gpu_h100_8
kubeconfig_path:
  description: Where the kubeconfig was written.
  returned: when O(kubeconfig_path) is set
  type: str
kubeconfig:
  description: The kubeconfig content.
  returned: when O(return_kubeconfig=true)
  type: str
"""

import os
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _oke


def cluster_view(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": c.get("id"),
        "name": c.get("name"),
        "kubernetes_version": c.get("kubernetes_version"),
        "lifecycle_state": c.get("lifecycle_state"),
        "compartment_id": c.get("compartment_id"),
        "vcn_id": c.get("vcn_id"),
        "type": c.get("type"),
        "endpoints": c.get("endpoints") or {},
    }


def fetch_kubeconfig(client: Any, cluster_id: str, endpoint: str | None) -> str:
    models = _oci_auth.oci.container_engine.models
    details = models.CreateClusterKubeconfigContentDetails(token_version="2.0.0", endpoint=endpoint)
    resp = client.create_kubeconfig(cluster_id, create_cluster_kubeconfig_content_details=details)
    data = resp.data
    raw = data.content if hasattr(data, "content") else data
    return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)


def write_private(module: AnsibleModule, path: str, text: str) -> bool:
    """Write ``text`` to ``path`` with mode 0600 unless it is already there; True when changed."""
    try:
        with open(path, encoding="utf-8") as handle:
            same = handle.read() == text
        if same and (os.stat(path).st_mode & 0o777) == 0o600:
            return False
    except FileNotFoundError:
        same = False
    if module.check_mode:
        return True
    if same:
        os.chmod(path, 0o600)
        return True
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".kubeconfig.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        os.unlink(tmp)
        module.fail_json(msg=f"cannot write {path}: {exc}")
    module.atomic_move(tmp, path)
    os.chmod(path, 0o600)
    return True


def run(module: AnsibleModule) -> dict[str, Any]:
    p = module.params
    bad = _oke.validate_cluster_id(p["cluster_id"])
    if bad:
        raise _oke.OkeError(bad)
    client = _oke.ce_client(p)
    cluster = _oke.get_cluster(client, p["cluster_id"])
    result: dict[str, Any] = {"changed": False, "cluster": cluster_view(cluster)}
    if p["node_pools"]:
        summaries = _oke.list_all(client.list_node_pools, cluster["compartment_id"], cluster_id=p["cluster_id"])
        pools = [_oke.to_dict(client.get_node_pool(s["id"]).data) for s in summaries]
        result.update(_oke.summarise_node_pools(pools))
    if p["kubeconfig_path"] or p["return_kubeconfig"]:
        text = fetch_kubeconfig(client, p["cluster_id"], p["kubeconfig_endpoint"])
        if p["kubeconfig_path"]:
            path = p["kubeconfig_path"]
            existed = os.path.exists(path)
            result["changed"] = write_private(module, path, text)
            result["kubeconfig_path"] = path
            if module._diff:
                result["diff"] = {
                    "before_header": path,
                    "after_header": path,
                    "before": "(kubeconfig, content withheld)\n" if existed else "",
                    "after": "(kubeconfig, content withheld)\n" if result["changed"] or existed else "",
                }
        if p["return_kubeconfig"]:
            result["kubeconfig"] = text
    return result


def main() -> None:
    spec = _oke.oke_cluster_argspec()
    spec.update(
        {
            "node_pools": {"type": "bool", "default": True},
            "kubeconfig_path": {"type": "path"},
            "kubeconfig_endpoint": {
                "type": "str",
                "choices": ["LEGACY_KUBERNETES", "PUBLIC_ENDPOINT", "PRIVATE_ENDPOINT", "VCN_HOSTNAME"],
            },
            "return_kubeconfig": {"type": "bool", "default": False},
        }
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    _oci_auth.run_module(module, run)


if __name__ == "__main__":
    main()
