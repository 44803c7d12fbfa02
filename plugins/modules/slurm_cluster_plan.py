#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_cluster_plan
short_description: The whole cluster's Slurm configuration and restart plan, computed once per run
version_added: 0.2.0
description:
  - An action that runs on the control node only. Run it with C(run_once) and C(register); the result
    reaches every host of the play, so the cluster is computed once, not once per host.
  - O(stage=preflight), before anything changes, checks that the controllers and the slurmdbd hosts are
    standing (not failed, not unreachable), that no more compute hosts are lost than O(max_failed_compute)
    allows, and that the cluster description (node names only) passes the configuration model.
  - O(stage=plan) reads the probe (M(oci_gpu.cluster.slurm_node_info), registered as O(probe_var)) of every
    standing host once and returns the file texts, the node list, the directories, the Slurm version and
    the restart plan.
  - The live node list is read from every controller in the run, or, when none is in the run, from the
    live configuration of any host in the run. A node is never dropped because its host is outside
    C(--limit), failed or unreachable; a run that does not hold the whole cluster never alters an existing
    node or partition line and only adds nodes whose fresh records are in the run. Where adding nodes
    restarts every slurmd (Slurm before 24.11), such a run refuses and names the slurmd hosts left out.
  - Refuses, naming the host, key or value, before any host is touched.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  stage:
    description: V(preflight) before any change (no probes needed), V(plan) after the probes.
    type: str
    choices: [preflight, plan]
    default: plan
  cluster_name:
    description: Slurm C(ClusterName).
    type: str
    required: true
  controllers:
    description: slurmctld hosts, primary first.
    type: list
    elements: str
    required: true
  dbd_hosts:
    description: slurmdbd hosts.
    type: list
    elements: str
    default: []
  compute_hosts:
    description: slurmd hosts.
    type: list
    elements: str
    default: []
  login_hosts:
    description: Login hosts.
    type: list
    elements: str
    default: []
  partitions:
    description: Partitions, as the C(oci_gpu.cluster.slurm_config) filter takes them.
    type: list
    elements: raw
    default: []
  config:
    description:
      - The site's C(slurm.conf) keys (the slurm role's C(slurm_config)); a value of C(omit) drops a key.
      - They win over the keys the settings below give (O(configless), O(state_save_location), O(health_check),
        O(private_data), O(jwt_key_path), and C(Prolog)/C(Epilog) for O(containers)).
    type: raw
    default: {}
  state_save_location:
    description: C(StateSaveLocation); empty keeps the model's default.
    type: str
    default: ""
  health_check:
    description: C(HealthCheckProgram), C(HealthCheckInterval) and C(HealthCheckNodeState), set when C(program) is.
    type: dict
    default: {}
    suboptions:
      program:
        description: The program; empty sets no health check.
        type: str
        default: ""
      interval:
        description: Seconds between runs.
        type: int
        default: 0
      node_state:
        description: The node states it runs on.
        type: str
        default: ANY
  private_data:
    description: C(PrivateData); empty sets none.
    type: str
    default: ""
  jwt_key_path:
    description: The JWT key's path on the controllers; set, C(AuthAltTypes=auth/jwt) names it. Empty - no JWT.
    type: str
    default: ""
  slurmd_defaults_file:
    description: Where a configless slurmd reads its options (C(--conf-server)) from - the OS family's file.
    type: str
    default: /etc/default/slurmd
  cgroup:
    description: C(cgroup.conf) overrides.
    type: raw
    default: {}
  gres_autodetect:
    description:
      - V(auto) (NVML where every compute host has the plugin, else C(File=) lines), V(off), V(nvml),
        V(nvidia) or V(rsmi).
    type: str
    default: auto
  accounting:
    description: slurmdbd accounting (C(host), C(port), C(enforce), C(backup_host)); omit or null without slurmdbd.
    type: raw
  nodes_removed:
    description: Nodes to take out of C(slurm.conf) on purpose (drain them first).
    type: list
    elements: str
    default: []
  removed:
    description:
      - What this run may take away from the live C(slurm.conf) on purpose - V(accounting) (slurmdbd
        accounting) and controller host names (a primary or backup C(SlurmctldHost)).
      - Anything else the live configuration has and the new one lacks is refused, naming it, before any
        file changes.
    type: list
    elements: str
    default: []
  max_failed_compute:
    description:
      - Compute hosts that may fail or be unreachable before the run stops, a count (V(2)) or a
        percentage (V(25%), at least one host).
    type: raw
    default: 25%
  conf_dir:
    description: The Slurm configuration directory.
    type: str
    default: /etc/slurm
  topology:
    description:
      - The Slurm network topology from OCI's RDMA fabric (see the role's C(slurm_topology)).
      - V(auto) - none for at most one block, block where the controller has C(topology_block.so), a GPU
        family with local blocks or memory fabrics is present and no partition mixes nodes in and outside
        blocks, else tree. V(tree), V(block) - that plugin, or a refusal naming why. V(none) - no
        C(TopologyPlugin) line and no topology file.
      - A node's place comes from its probe (IMDS, checked against the inventory on the node), else from the
        inventory's C(oci_hpc_island_id), C(oci_network_block_id), C(oci_local_block_id),
        C(oci_gpu_memory_fabric_id) hostvars.
      - A run that does not hold the whole cluster keeps the live topology.
    type: str
    choices: [auto, tree, block, none]
    default: none
  probe_var:
    description: The variable each host registered M(oci_gpu.cluster.slurm_node_info) as.
    type: str
    default: __slurm_probe
  configless:
    description:
      - Whether compute nodes fetch the configuration from slurmctld (configless); such a node keeps no
        files of its own, and its schedule follows the files the primary controller serves it.
    type: bool
    default: false
  managed_header:
    description: The comment the base files (C(slurm.conf), C(gres.conf), C(cgroup.conf)) start with.
    type: str
    default: ""
  containers:
    description:
      - What C(oci.conf), C(plugstack.conf) and the files every node keeps itself say (the slurm role's
        container and GPU job map settings) - C(oci_enabled), C(pyxis_enabled), C(oci_state_dir), C(oci_runtime),
        C(oci_config), C(pyxis_plugin), C(pyxis_args), C(pyxis_packages), C(enroot_base_dir), C(enroot_config)
        and C(job_map_dir). The root prolog oci.conf names is C(<conf_dir>/prolog.d/oci-gpu-containers.sh).
    type: dict
    default: {}
  last_good_dir:
    description: Where each host keeps the files its daemons run with, for a failed restart to put back.
    type: str
    default: /var/lib/oci-gpu-cluster/slurm-last-good
  max_clock_skew:
    description:
      - Seconds a host's clock may be off the control node's (the probe's C(clock_skew)) before the plan refuses
        it - munge's credential time-to-live, beyond which munge refuses the host's credentials.
      - The plan also refuses hosts whose SlurmUser has another UID or GID than on the first controller (the
        probe's C(accounts)).
    type: int
    default: 300
  elastic_nodesets:
    description:
      - Elastic node sets (the role's C(slurm_elastic_nodesets)) - per shape, C(name) and C(count) give the cloud nodes
        C(<name>-1) .. C(<name>-<count>) (C(State=CLOUD)), the shape their hardware, and the launch keys
        (C(compartment_id), C(availability_domain), C(subnet_id), C(image_id), C(compute_cluster_id) or
        C(instance_pool_id)) where the power-saving agent launches them.
    type: list
    elements: raw
    default: []
  power_saving:
    description:
      - Power-saving settings (the role's C(slurm_power_saving)) - C(suspend_time), C(suspend_timeout),
        C(resume_timeout) (checked to exceed every node set's C(boot_time_s) plus the join), C(resume_rate),
        C(suspend_rate), C(exclude_nodes), C(exclude_partitions), C(program_dir). Used only with node sets.
    type: raw
    default: {}
  memory_reserve_mb:
    description: MiB of each elastic node's memory kept away from jobs (C(RealMemory) is the shape's less this).
    type: int
    default: 1024
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - ansible.builtin.action_common_attributes
attributes:
  action:
    description: Runs on the control node only; it reads the other hosts' probes from hostvars.
    support: full
  bypass_host_loop:
    description: Runs once per host of the play; use C(run_once) so the cluster is planned once.
    support: none
"""

EXAMPLES = r"""
- name: Plan the Slurm configuration for the whole cluster
  oci_gpu.cluster.slurm_cluster_plan:
    cluster_name: lab
    controllers: "{{ groups['slurm_controller'] }}"
    compute_hosts: "{{ groups['slurm_compute'] }}"
    partitions:
      - {name: gpu, nodes: ALL, default: true}
  run_once: true
  register: __slurm_cluster
"""

RETURN = r"""
files:
  description: Text of C(slurm.conf), C(gres.conf), C(cgroup.conf) and the topology file (C(topology.conf), or
    C(topology.yaml) from Slurm 25.05) when there is one, without the C(ansible_managed) header.
  returned: stage=plan
  type: dict
files_absent:
  description: Topology files the role wrote earlier that the chosen topology does not use (to remove).
  returned: stage=plan
  type: list
  elements: str
conf_files:
  description:
    - The configuration files of every host that keeps them, as M(oci_gpu.cluster.slurm_files) entries (C(name),
      C(path), C(content), C(validate) on C(slurm.conf)) with their final content - C(cgroup.conf), C(gres.conf),
      C(slurm.conf) with O(managed_header), the topology file, C(oci.conf) and C(plugstack.conf) when enabled.
      A configless compute node fetches them from slurmctld.
  returned: stage=plan
  type: list
  elements: dict
conf_files_absent:
  description: The role's files this configuration no longer uses, as M(oci_gpu.cluster.slurm_files) entries.
  returned: stage=plan
  type: list
  elements: dict
conf_sha256:
  description: SHA-256 of each of RV(conf_files), by name (what the daemons run with once this run applied them).
  returned: stage=plan
  type: dict
last_good_files:
  description: The copies of the base and topology files a failed restart puts back, as slurm_files entries.
  returned: stage=plan
  type: list
  elements: dict
last_good_names:
  description: The names of the files in RV(last_good_files) that exist in this configuration.
  returned: stage=plan
  type: list
  elements: str
hosts:
  description:
    - Per standing host of the cluster, what its restart schedule needs - C(roles), C(primary),
      C(writes_config), C(first_install), C(running), C(taken_out), C(behind) (its daemons run with older
      files than it has), C(served_changed) (configless - the files slurmd reads at start that the primary
      controller changes in this run). The filter P(oci_gpu.cluster.slurm_schedule#filter) turns one into steps.
  returned: stage=plan
  type: dict
topology:
  description: C(mode) (V(tree), V(block), V(none)), C(plugin) (the C(TopologyPlugin) written, empty for none),
    C(blocks) and C(switches) (leaf switches) of the model.
  returned: stage=plan
  type: dict
settings:
  description: The merged top-level C(slurm.conf) keys (StateSaveLocation, SlurmdSpoolDir, SlurmUser, ports, ...).
  returned: stage=plan
  type: dict
slurm_user:
  description: The user the Slurm daemons run as (C(SlurmUser), C(root) when it is omitted).
  returned: stage=plan
  type: str
dbd_log_dir:
  description: Where slurmdbd logs (beside C(SlurmctldLogFile)).
  returned: stage=plan
  type: str
elastic:
  description: The elastic nodes (C(nodes)), the power-saving agent's node sets by name (C(nodesets)) and the
    power-saving settings (C(settings)); empty lists when there are none.
  returned: stage=plan
  type: dict
dbd_private_data:
  description: The C(PrivateData) of C(slurmdbd.conf) - the words of slurm.conf's that slurmdbd knows; empty for none.
  returned: stage=plan
  type: str
directories:
  description: Directories the configuration implies, each with C(path), C(owner), C(mode) and C(roles).
  returned: stage=plan
  type: list
  elements: dict
version:
  description: The Slurm release the plan follows (the controllers', else the oldest in the run).
  returned: stage=plan
  type: str
  sample: "24.11"
nodes:
  description: C(defined), C(kept), C(orphans), C(missing), C(added), C(removed), C(lost), C(outside_run) node names.
  returned: always
  type: dict
partial:
  description: Whether hosts of the cluster are outside this run (C(--limit)).
  returned: stage=plan
  type: bool
live_source:
  description: The host whose live C(slurm.conf) the plan compares against; empty on a first install.
  returned: stage=plan
  type: str
plan:
  description: C(restart) (daemons, in order), C(reconfigure), C(reasons), C(added_nodes), C(removed_nodes).
  returned: stage=plan
  type: dict
oci_series:
  description: The C(oci.conf) series for the planned release, V(22.05) (up to 24.05) or V(24.11).
  returned: stage=plan
  type: str
unit_directories:
  description: The systemd drop-in directories the role keeps, as M(oci_gpu.cluster.slurm_files) entries with C(roles).
  returned: stage=plan
  type: list
  elements: dict
unit_files:
  description:
    - The systemd drop-ins and defaults the role keeps, as M(oci_gpu.cluster.slurm_files) entries with C(roles) -
      C(slurmctld-dropin) (slurmctld waits for the file system under C(StateSaveLocation)), and with O(configless)
      C(slurmd-dropin) and C(slurmd-defaults) (slurmd starts without C(slurm.conf) and asks the controllers).
  returned: stage=plan
  type: list
  elements: dict
container_problems:
  description:
    - What the container and GPU job map settings (O(containers), and a C(Prolog) or C(Epilog) of O(config)) would
      break on the release the plan follows, one message each naming the key and the value; empty when usable.
  returned: stage=plan
  type: list
  elements: str
report:
  description: Lines for the operator (hosts lost, nodes kept, added or removed).
  returned: stage=plan
  type: list
  elements: str
"""
