# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action oci_gpu.cluster.slurm_cluster_plan: the whole cluster's Slurm plan, once per run, on the controller."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci._imds import FIELDS
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._plan import (
    DEFAULT_MAX_FAILED_COMPUTE,
    SlurmPlanError,
    plan_cluster,
    preflight_cluster,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._role_settings import role_config
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._action import CollectionAction
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._omit import plain

ARGUMENT_SPEC: dict[str, Any] = {
    "stage": {"type": "str", "choices": ["preflight", "plan"], "default": "plan"},
    "cluster_name": {"type": "str", "required": True},
    "controllers": {"type": "list", "elements": "str", "required": True},
    "dbd_hosts": {"type": "list", "elements": "str", "default": []},
    "compute_hosts": {"type": "list", "elements": "str", "default": []},
    "login_hosts": {"type": "list", "elements": "str", "default": []},
    "partitions": {"type": "list", "elements": "raw", "default": []},
    # the site's slurm.conf keys (slurm_config): they win over the role's own, which the settings below give
    "config": {"type": "raw", "default": {}},
    "state_save_location": {"type": "str", "default": ""},
    "health_check": {
        "type": "dict",
        "default": {},
        "options": {
            "program": {"type": "str", "default": ""},
            "interval": {"type": "int", "default": 0},
            "node_state": {"type": "str", "default": "ANY"},
        },
    },
    "private_data": {"type": "str", "default": ""},
    "jwt_key_path": {"type": "str", "default": ""},
    # the file the configless slurmd reads its options from (the OS family's)
    "slurmd_defaults_file": {"type": "str", "default": "/etc/default/slurmd"},
    "cgroup": {"type": "raw", "default": {}},
    "gres_autodetect": {"type": "str", "default": "auto"},
    "accounting": {"type": "raw"},
    "nodes_removed": {"type": "list", "elements": "str", "default": []},
    "removed": {"type": "list", "elements": "str", "default": []},
    "max_failed_compute": {"type": "raw", "default": DEFAULT_MAX_FAILED_COMPUTE},
    "conf_dir": {"type": "str", "default": "/etc/slurm"},
    "topology": {"type": "str", "choices": ["auto", "tree", "block", "none"], "default": "none"},
    "probe_var": {"type": "str", "default": "__slurm_probe"},
    # preflight: each host's registered slurm_version_info result, and whether this run upgrades
    "versions_var": {"type": "str", "default": ""},
    "upgrade": {"type": "bool", "default": False},
    # configless compute nodes fetch the configuration from slurmctld (SlurmctldParameters=enable_configless)
    "configless": {"type": "bool", "default": False},
    # the header the base files start with (the role's ansible_managed, as a comment)
    "managed_header": {"type": "str", "default": ""},
    # oci.conf, plugstack.conf and the files every node keeps (slurm/_node_files): oci_enabled, pyxis_enabled,
    # oci_state_dir, oci_runtime, oci_config, pyxis_plugin, pyxis_args, pyxis_packages, enroot_base_dir,
    # enroot_config, job_map_dir
    "containers": {"type": "raw", "default": {}},
    "last_good_dir": {"type": "str", "default": "/var/lib/oci-gpu-cluster/slurm-last-good"},
    # elastic capacity (slurm/_elastic): node sets of cloud nodes and the power-saving settings
    "elastic_nodesets": {"type": "list", "elements": "raw", "default": []},
    "power_saving": {"type": "raw", "default": {}},
    "memory_reserve_mb": {"type": "int", "default": 1024},
    # a host whose clock is further off the control node's is refused (munge's credential TTL)
    "max_clock_skew": {"type": "int", "default": 300},
}
# The inventory's fabric ids (oci_gpu.cluster.oci hostvars) -> the topology model's keys, from the
# table the node-side check against IMDS uses.
TOPOLOGY_HOSTVARS = {var: key for key, (_imds_path, var) in FIELDS.items()}


class ActionModule(CollectionAction):
    """Reads every standing host's probe once and returns the plan (register it with run_once)."""

    _requires_connection = False

    def act(self, result: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        marker = object()
        validation = ArgumentSpecValidator(ARGUMENT_SPEC).validate(plain(self._task.args, marker))
        if validation.error_messages:
            raise AnsibleActionFail("slurm_cluster_plan: " + "; ".join(validation.error_messages))
        args = validation.validated_parameters
        keys = ("cluster_name", "partitions", "config", "cgroup", "gres_autodetect", "nodes_removed", "removed")
        more = ("max_failed_compute", "conf_dir", "topology", "configless", "managed_header", "last_good_dir")
        more += ("max_clock_skew", "elastic_nodesets", "power_saving", "memory_reserve_mb", "slurmd_defaults_file")
        cluster = {k: args[k] for k in (*keys, *more)}
        cluster["where"] = f"set for {task_vars.get('inventory_hostname', 'the control node')}"
        cluster["containers"] = args["containers"] if isinstance(args["containers"], Mapping) else {}
        site = args["config"] if isinstance(args["config"], Mapping) else {}
        if site is args["config"]:  # else the model names the site's config that is not a mapping
            cluster["config"] = role_config(site, {**args, "containers": cluster["containers"]})
        # No slurmdbd: null, empty or omit.
        cluster["accounting"] = args["accounting"] if isinstance(args["accounting"], Mapping) else None
        hosts = {
            "controllers": args["controllers"],
            "dbd": args["dbd_hosts"],
            "compute": args["compute_hosts"],
            "login": args["login_hosts"],
            "in_run": list(task_vars.get("ansible_play_hosts_all") or []),
            "standing": list(task_vars.get("ansible_play_hosts") or []),
        }
        try:
            if args["stage"] == "preflight":
                versions = self._probes(task_vars, hosts, args["versions_var"]) if args["versions_var"] else None
                plan = preflight_cluster(cluster, hosts, omit_token=marker, versions=versions, upgrade=args["upgrade"])
            else:
                probes = self._probes(task_vars, hosts, args["probe_var"])
                if args["topology"] != "none":
                    cluster["topology_inventory"] = self._inventory_topology(task_vars, hosts["compute"])
                plan = plan_cluster(cluster, hosts, probes, omit_token=marker)
        except SlurmPlanError as exc:
            raise AnsibleActionFail(f"slurm_cluster_plan: {exc}") from None
        result.update(plan)
        result["changed"] = False
        return result

    @staticmethod
    def _inventory_topology(task_vars: Mapping[str, Any], compute: list[str]) -> dict[str, dict[str, str]]:
        """The fabric ids the inventory gives each compute host (raw: plain strings, read once)."""
        hostvars = task_vars.get("hostvars")
        out: dict[str, dict[str, str]] = {}
        if hostvars is None:
            return out
        for host in compute:
            try:
                data = hostvars.raw_get(host) if hasattr(hostvars, "raw_get") else hostvars.get(host)
            except KeyError:
                continue
            if not isinstance(data, Mapping):
                continue
            ids = {
                key: str(data[var])
                for var, key in TOPOLOGY_HOSTVARS.items()
                if isinstance(data.get(var), str) and data[var]
            }
            if ids:
                out[host] = ids
        return out

    @staticmethod
    def _probes(task_vars: Mapping[str, Any], hosts: Mapping[str, Any], var: str) -> dict[str, Any]:
        """Each standing cluster host's probe, read once (raw: a registered result needs no templating)."""
        hostvars = task_vars.get("hostvars")
        wanted = set(hosts["controllers"]) | set(hosts["dbd"]) | set(hosts["compute"]) | set(hosts["login"])
        probes: dict[str, Any] = {}
        if hostvars is None:
            return probes
        for host in hosts["standing"]:
            if host not in wanted:
                continue
            data = hostvars.raw_get(host) if hasattr(hostvars, "raw_get") else hostvars.get(host)
            probe = data.get(var) if isinstance(data, Mapping) else None
            if isinstance(probe, Mapping) and not probe.get("skipped") and not probe.get("failed"):
                probes[host] = probe
        return probes
