# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: oci
short_description: OCI compute instances as inventory, grouped for GPU clusters, from list calls only
version_added: 0.1.0
description:
  - Reads compute instances from Oracle Cloud Infrastructure and groups them the way a GPU cluster
    needs them - by shape, region, availability domain, cluster network, instance pool, HPC island,
    network block, C(gpu)/C(cpu), and the Slurm groups from the defined tag O(slurm_role_tag)
    within the cluster O(cluster).
  - Uses list calls only. Compartments once (whole subtree), then per region and compartment one paged
    C(ListInstances) and one paged C(ListVnicAttachments), one paged C(ListPrivateIps) (and one
    C(GetSubnet)) per subnet, plus list-shaped enrichments (C(ListComputeHosts) for topology, pools
    and cluster networks only where instances carry an instance configuration, and public IPs only for
    VNICs in subnets that allow them). No per-host call for private-only hosts.
  - Fails when any call fails after the SDK's retries (429 and 5xx are retried with backoff), naming the
    region, compartment or subnet and the call, unless O(allow_partial=true).
  - Never exposes instance C(metadata), C(user_data) or SSH keys.
  - Inventory files must end in C(.oci_gpu.yml) or C(.oci_gpu.yaml).
requirements:
  - oci (the OCI Python SDK) on the controller
extends_documentation_fragment:
  - constructed
  - inventory_cache
  - oci_gpu.cluster._oci_auth
options:
  plugin:
    description: Marks the file as this plugin's.
    type: str
    required: true
    choices: [oci_gpu.cluster.oci]
  regions:
    description:
      - Regions to read, for example C(us-ashburn-1).
      - Empty (the default) means every region the tenancy subscribes to (one C(ListRegionSubscriptions) call).
    type: list
    elements: str
    default: []
  compartments:
    description:
      - Compartment OCIDs to read. Empty (the default) means the tenancy (root compartment).
    type: list
    elements: str
    default: []
  compartment_subtree:
    description: Also read every active compartment below O(compartments).
    type: bool
    default: true
  exclude_compartments:
    description: Compartments (OCIDs or names) to skip, together with everything below them.
    type: list
    elements: str
    default: []
  lifecycle_states:
    description:
      - Instance lifecycle states to include. With exactly one state the filter runs server-side.
      - An empty list includes every state.
    type: list
    elements: str
    default: [RUNNING]
  server_filters:
    description:
      - Filters the API applies in C(ListInstances) (and C(ListVnicAttachments) for the AD), so fewer
        instances travel. Keys - V(availability_domain) (for example C(Uocm:US-ASHBURN-AD-1); it exists in
        one region, the others then return nothing), V(display_name) (exact), V(compute_cluster_id),
        V(capacity_reservation_id).
    type: dict
    default: {}
  include_filters:
    description:
      - Keep only hosts matching at least one of these dicts. Each key is a host variable (the
        C(oci_) prefix may be left out; dotted keys reach into dicts such as C(freeform_tags.slurm_role));
        each value is a value or a list of accepted values.
    type: list
    elements: dict
    default: []
  exclude_filters:
    description: Drop hosts matching any of these dicts (same form as O(include_filters)); applied after it.
    type: list
    elements: dict
    default: []
  hostnames:
    description:
      - Ordered preference of sources for the inventory hostname; the first one a host has is used,
        and the instance OCID is always the last resort.
      - The default suits private-only GPU nodes (no public IP needed). V(fqdn) is
        C(hostname_label.subnet_domain_name).
    type: list
    elements: str
    choices: [display_name, hostname_label, fqdn, private_ip, public_ip, id]
    default: [hostname_label, display_name, private_ip, id]
  ansible_host:
    description: Ordered preference of sources for C(ansible_host).
    type: list
    elements: str
    choices: [private_ip, fqdn, public_ip, hostname_label, display_name]
    default: [private_ip, fqdn, public_ip]
  allow_duplicate_hostnames:
    description:
      - Warn instead of failing when two instances get the same hostname (the later one merges into the earlier).
    type: bool
    default: false
  allow_partial:
    description:
      - Return what could be read when some calls fail after retries, with a warning that names what is
        missing, instead of failing. A 401 always fails at once.
      - A partial result kept in the inventory cache warns each time it is served, and is refused once
        this option is false.
    type: bool
    default: false
  slurm_role_tag:
    description:
      - The defined tag, as C(<tag namespace>.<tag key>), whose value gives a host's Slurm roles
        (V(controller), V(dbd), V(compute), V(login); several separated by commas or spaces). It fills the
        C(slurm_controller), C(slurm_dbd), C(slurm_compute) and C(slurm_login) groups.
      - V(elastic) marks an instance the elastic agent launched for a powered-up Slurm node; it fills
        C(slurm_elastic), which the slurm playbook never configures (Slurm's power saving owns those nodes).
      - A defined tag can only be set by those an IAM policy lets C(use) its tag namespace, so a user who
        may merely update an instance cannot make it a controller or a login node (and get the munge key).
      - Names are matched without regard to case, as OCI does.
    type: str
    default: oci-gpu.slurm-role
  cluster_tag:
    description:
      - The defined tag, as C(<tag namespace>.<tag key>), that names the cluster a host belongs to.
    type: str
    default: oci-gpu.cluster
  cluster:
    description:
      - The cluster this inventory is for. Only hosts whose O(cluster_tag) has this value get Slurm groups;
        hosts of other clusters in the tenancy stay in the other groups (shape, region, ...) with no Slurm role.
      - When unset, the hosts carrying O(slurm_role_tag) must all belong to one cluster (or none); hosts of two
        clusters fail the inventory, naming the clusters, instead of merging into one set of Slurm groups.
    type: str
  freeform_slurm_roles:
    description:
      - Also take Slurm roles from the freeform tag C(slurm_role) of hosts that lack O(slurm_role_tag).
      - Anyone allowed to update an instance can set a freeform tag, so this trusts every such user with the
        cluster's munge key. For a move to defined tags only; each run warns once, naming the hosts.
      - O(cluster) still applies, through the defined O(cluster_tag) (a freeform one would reopen the hole).
    type: bool
    default: false
  default_groups:
    description: Create the built-in groups (C(oci), C(gpu), C(cpu), C(shape_*), C(region_*), C(ad_*),
      C(gpu_<model>), C(cluster_network_*), C(instance_pool_*), C(hpc_island_*), C(network_block_*),
      C(local_block_*), C(gpu_memory_fabric_*), C(slurm_controller), C(slurm_dbd), C(slurm_compute), C(slurm_login),
      C(slurm_elastic)).
    type: bool
    default: true
  extended_hostvars:
    description:
      - Also set C(oci_compartment_name), C(oci_fqdn), C(oci_subnet_id), C(oci_image_id), C(oci_gpu_model),
        C(oci_gpu_vendor), C(oci_local_disks), C(oci_rdma_nics), C(oci_cluster_network_name),
        C(oci_instance_pool_name), C(oci_compute_host_id), C(oci_gpu_memory_fabric_id) and C(oci_host_health).
      - They are always available to O(include_filters), O(exclude_filters), O(compose), O(groups) and
        O(keyed_groups); this only decides whether they become host variables. Each variable costs
        Ansible time per host, which shows at thousands of hosts.
    type: bool
    default: false
  compute_hosts:
    description:
      - Read C(ListComputeHosts) (whole subtree, per region) for HPC island, network block, local block
        and health of bare-metal GPU hosts.
    type: bool
    default: true
  cluster_networks:
    description:
      - Read instance pools and cluster networks in compartments whose instances carry an instance configuration.
    type: bool
    default: true
  exact_pool_membership:
    description:
      - Always read each pool's members with C(ListInstancePoolInstances).
      - By default that call is skipped for a pool that is the only live pool in its compartment launching
        from its instance configuration, when the instances carrying that configuration do not outnumber
        the pool's size (the usual case, where each pool has its own configuration). An instance launched
        outside the pool from the same configuration could then be counted as a member; set this to be sure.
    type: bool
    default: false
  public_ips:
    description:
      - Look up public IPs and subnet DNS domains (for V(fqdn)) - one C(GetSubnet) plus one C(ListSubnets)
        per compartment and VCN holding the hosts' subnets, then one call per primary private IP in subnets
        that allow public IPs (private-only GPU subnets cost nothing here).
      - Off by default, so the default mode makes no per-host call; GPU nodes are reached on their private IPs.
        Turn it on for C(oci_public_ip), C(oci_fqdn) and the V(public_ip) / V(fqdn) choices of O(hostnames)
        and O(ansible_host).
    type: bool
    default: false
  retry_max_attempts:
    description: Attempts per API call (429, 5xx and connection errors are retried with backoff).
    type: int
    default: 8
  retry_max_wait:
    description: Longest wait between two attempts, in seconds.
    type: float
    default: 30
  max_workers:
    description: Concurrent API calls per region.
    type: int
    default: 8
  limit:
    description: Page size of list calls (1-1000).
    type: int
    default: 1000
  service_endpoint:
    description:
      - Map of region to API endpoint URL (scheme, host and port) used instead of the public OCI endpoints.
      - A test hook (the collection's OCI API emulator); also useful behind a proxy that terminates TLS.
    type: dict
    default: {}
"""

EXAMPLES = r"""
# gpu.oci_gpu.yml: every running instance in every subscribed region, default groups
plugin: oci_gpu.cluster.oci

---
# training.oci_gpu.yml: two regions, one compartment tree, GPU hosts only, Slurm groups by tag
plugin: oci_gpu.cluster.oci
config_file: ~/.oci/config
config_profile: PROD
regions: [us-ashburn-1, eu-frankfurt-1]
compartments:
  - ocid1.compartment.oc1..aaaaaaaatraining
exclude_compartments: [sandbox]
include_filters:
  - oci_gpus: [4, 8]
  - defined_tags.oci-gpu.slurm-role: [controller, dbd, login]
cluster: training-a
keyed_groups:
  - key: oci_freeform_tags.team | default('none')
    prefix: team
compose:
  slurm_gres: "'gpu:' ~ oci_gpu_model ~ ':' ~ oci_gpus if oci_gpus else ''"

---
# from-bastion.oci_gpu.yml: instance principal on an OCI bastion, stopped hosts too, cached
plugin: oci_gpu.cluster.oci
auth_type: instance_principal
lifecycle_states: [RUNNING, STOPPED]
hostnames: [fqdn, private_ip]
max_workers: 16
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/oci_gpu_inventory
cache_timeout: 600

---
# partial.oci_gpu.yml: keep going when a compartment is unreadable (a warning names it)
plugin: oci_gpu.cluster.oci
allow_partial: true
compute_hosts: false
groups:
  h100: oci_shape == 'BM.GPU.H100.8'
"""

import os
import time
from typing import Any

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _auth as _oci_auth
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils import _oci_inventory as inv

OPTION_NAMES = (
    "regions",
    "compartments",
    "compartment_subtree",
    "exclude_compartments",
    "lifecycle_states",
    "server_filters",
    "include_filters",
    "exclude_filters",
    "hostnames",
    "ansible_host",
    "allow_duplicate_hostnames",
    "allow_partial",
    "default_groups",
    "slurm_role_tag",
    "cluster_tag",
    "cluster",
    "freeform_slurm_roles",
    "extended_hostvars",
    "compute_hosts",
    "cluster_networks",
    "exact_pool_membership",
    "public_ips",
    "max_workers",
    "limit",
)


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "oci_gpu.cluster.oci"

    def verify_file(self, path: str) -> bool:
        return super().verify_file(path) and path.endswith((".oci_gpu.yml", ".oci_gpu.yaml"))

    def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        opts = {name: self.get_option(name) for name in OPTION_NAMES}
        limit = opts["limit"]
        if not 1 <= int(limit) <= 1000:
            raise AnsibleParserError(f"{path}: limit must be between 1 and 1000, got {limit}")

        cache_key = self.get_cache_key(path)
        use_cache = bool(self.get_option("cache")) and cache
        update_cache = bool(self.get_option("cache")) and not cache
        raw = None
        started = time.monotonic()
        if use_cache:
            try:
                raw = self._cache[cache_key]
            except KeyError:
                update_cache = True
        if raw is None:
            raw = self._fetch(opts)
        if update_cache:
            self._cache[cache_key] = raw

        fetched = time.monotonic()
        try:
            hosts = inv.build_hosts(raw, opts, self.display.warning)
        except inv.InventoryError as exc:
            raise AnsibleError(f"{path}: {exc}") from exc
        built = time.monotonic()
        self._populate(hosts)
        self.display.vv(
            f"oci_gpu.cluster.oci: {len(hosts)} hosts; fetch {fetched - started:.2f}s, "
            f"build {built - fetched:.2f}s, populate {time.monotonic() - built:.2f}s"
        )

    def _fetch(self, opts: dict[str, Any]) -> dict[str, Any]:
        if not _oci_auth.HAS_OCI:
            raise AnsibleError(
                f"the oci_gpu.cluster.oci inventory needs the 'oci' Python SDK: {_oci_auth.OCI_IMPORT_ERROR}"
            )
        params = {k: self.get_option(k) for k in ("auth_type", "config_file", "config_profile", "tenancy")}
        try:
            auth = _oci_auth.resolve_auth(params, dict(os.environ))
        except _oci_auth.OciAuthError as exc:
            raise AnsibleError(str(exc)) from exc
        retry = _oci_auth.retry_strategy(self.get_option("retry_max_attempts"), self.get_option("retry_max_wait"))
        api = inv.SdkApi(auth, self.get_option("service_endpoint") or {}, opts["limit"], retry)
        try:
            return inv.fetch(api, opts, self.display.warning)
        except inv.InventoryError as exc:
            raise AnsibleError(f"oci_gpu.cluster.oci: {exc}") from exc

    def _populate(self, hosts: list[dict[str, Any]]) -> None:
        strict = self.get_option("strict")
        compose, groups, keyed = self.get_option("compose"), self.get_option("groups"), self.get_option("keyed_groups")
        known: set[str] = set()
        for host in hosts:
            # Names and tags are whatever anyone allowed to rename an instance wrote: data, never a
            # template (ansible-core 2.17 and 2.18 would render them where the OCI keys live).
            name = wrap_var(host["name"])
            for group in host["groups"]:
                if group not in known:
                    self.inventory.add_group(group)
                    known.add(group)
            self.inventory.add_host(name, group=host["groups"][0] if host["groups"] else None)
            for group in host["groups"][1:]:
                self.inventory.add_child(group, name)
            for key, value in host["vars"].items():
                self.inventory.set_variable(name, key, wrap_var(value))
            if compose or groups or keyed:
                hostvars = wrap_var(host["all_vars"])
                self._set_composite_vars(compose, hostvars, name, strict=strict)
                self._add_host_to_composed_groups(groups, hostvars, name, strict=strict)
                self._add_host_to_keyed_groups(keyed, hostvars, name, strict=strict)
