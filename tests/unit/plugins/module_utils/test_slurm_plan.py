# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The whole-cluster plan: partial runs never shrink or alter the node list, lost hosts, versions."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import parse_slurm_conf
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._elastic import ElasticError, plan_elastic
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._plan import (
    SlurmPlanError,
    failure_allowance,
    partitions_from_conf,
    plan_cluster,
    preflight_cluster,
)

# What a converged two-GPU-node cluster runs with (written by hand, in the model's format).
LIVE = """\
# Managed by Ansible
ClusterName=lab
SlurmctldHost=ctl
AuthType=auth/munge
CredType=cred/munge
DefMemPerCPU=1875
GresTypes=gpu
InactiveLimit=0
JobAcctGatherFrequency=30
JobAcctGatherType=jobacct_gather/cgroup
KillWait=30
MinJobAge=300
MpiDefault=none
ProctrackType=proctrack/cgroup
PrologFlags=Contain
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmctldDebug=info
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmctldPort=6817
SlurmctldTimeout=120
SlurmdDebug=info
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmdPidFile=/run/slurmd.pid
SlurmdPort=6818
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmdTimeout=300
SlurmUser=slurm
StateSaveLocation=/var/lib/slurm/slurmctld
TaskPlugin=task/cgroup,task/affinity

# Nodes: one line per hardware type
NodeName=gpu[1-2] CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=15000 Gres=gpu:h100:2 \\
 Features=bm_gpu_h100_8

# Partitions
PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE
"""


def record(name: str, memory: int = 15000) -> dict[str, Any]:
    return {
        "name": name,
        "cpus": 8,
        "sockets": 1,
        "cores_per_socket": 4,
        "threads_per_core": 2,
        "real_memory": memory,
        "gpu_type": "h100",
        "gpu_count": 2,
        "gpu_files": ["/dev/nvidia0", "/dev/nvidia1"],
        "features": ["bm_gpu_h100_8"],
    }


def probe(name: str, version: str = "24.11.5", live: str = LIVE, compute: bool = False, **extra: Any) -> dict:
    out: dict[str, Any] = {"slurm_version": version, "live_conf": live, "nvml_plugin": False}
    if compute:
        out["record"] = record(name, **extra)
    return out


CLUSTER: dict[str, Any] = {
    "cluster_name": "lab",
    "partitions": [{"name": "batch", "nodes": "ALL", "default": True, "max_time": "INFINITE"}],
    "config": {"SlurmUser": "slurm"},
    "cgroup": {"CgroupPlugin": "cgroup/v1"},
    "gres_autodetect": "auto",
    "accounting": None,
}


def hosts(in_run: list[str], standing: list[str] | None = None, compute: tuple[str, ...] = ("gpu1", "gpu2")) -> dict:
    return {
        "controllers": ["ctl"],
        "dbd": [],
        "compute": list(compute),
        "login": ["login1"],
        "in_run": in_run,
        "standing": in_run if standing is None else standing,
    }


def node_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("NodeName=")]


def partition_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("PartitionName=")]


# --------------------------------------------------------------------------- --limit


def test_limit_to_one_compute_node_keeps_the_other_node_line() -> None:
    """--limit gpu1: the controller is not in the run; gpu1's own live file still names gpu2."""
    out = plan_cluster(CLUSTER, hosts(["gpu1"]), {"gpu1": probe("gpu1", compute=True)})
    assert node_lines(out["files"]["slurm.conf"]) == [
        "NodeName=gpu[1-2] CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=15000 "
        "Gres=gpu:h100:2 Features=bm_gpu_h100_8"
    ]
    assert out["partial"] is True
    assert out["live_source"] == "gpu1"
    assert out["nodes"]["kept"] == ["gpu2"]
    assert out["nodes"]["outside_run"] == ["ctl", "gpu2", "login1"]
    assert out["plan"]["restart"] == [] and out["plan"]["reconfigure"] is False


def test_limit_never_alters_an_existing_node_line() -> None:
    """A fresh record that differs (memory) does not change the line outside a whole-cluster run."""
    out = plan_cluster(CLUSTER, hosts(["ctl", "gpu1"]), {"ctl": probe("ctl"), "gpu1": probe("gpu1", True, memory=9000)})
    assert "RealMemory=15000" in node_lines(out["files"]["slurm.conf"])[0]
    assert "RealMemory=9000" not in out["files"]["slurm.conf"]


def test_whole_cluster_run_updates_a_node_line() -> None:
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {
        "ctl": probe("ctl"),
        "gpu1": probe("gpu1", compute=True, memory=9000),
        "gpu2": probe("gpu2", compute=True),
        "login1": probe("login1"),
    }
    out = plan_cluster(CLUSTER, hosts(everyone), probes)
    assert out["partial"] is False
    assert node_lines(out["files"]["slurm.conf"]) == [
        "NodeName=gpu1 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=9000 "
        "Gres=gpu:h100:2 Features=bm_gpu_h100_8",
        "NodeName=gpu2 CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=15000 "
        "Gres=gpu:h100:2 Features=bm_gpu_h100_8",
    ]
    assert out["plan"]["reconfigure"] is True  # 24.11: node definitions change with a reconfigure


def test_limit_keeps_the_live_partitions() -> None:
    cluster = dict(CLUSTER, partitions=[{"name": "gpu", "nodes": ["gpu1"], "default": True}])
    out = plan_cluster(cluster, hosts(["gpu1"]), {"gpu1": probe("gpu1", compute=True)})
    assert partition_lines(out["files"]["slurm.conf"]) == ["PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE"]


def test_live_partitions_read_back() -> None:
    text = "PartitionName=debug Nodes=gpu[1-2] MaxTime=30:00 State=UP\nPartitionName=batch Nodes=ALL Default=YES\n"
    assert partitions_from_conf(text) == [
        {"name": "batch", "nodes": "ALL", "default": True},
        {"name": "debug", "nodes": ["gpu[1-2]"], "max_time": "30:00", "options": {"State": "UP"}},
    ]


def test_no_live_configuration_and_no_controller_refuses_naming_the_nodes() -> None:
    with pytest.raises(SlurmPlanError, match=r"node definitions of gpu2 .*cannot be kept"):
        plan_cluster(CLUSTER, hosts(["gpu1"]), {"gpu1": probe("gpu1", live="", compute=True)})


def test_first_install_leaves_an_unreachable_node_for_later() -> None:
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {h: probe(h, live="", compute=h == "gpu1") for h in ("ctl", "gpu1", "login1")}
    out = plan_cluster(CLUSTER, hosts(everyone, standing=["ctl", "gpu1", "login1"]), probes)
    assert out["nodes"]["missing"] == ["gpu2"] and out["nodes"]["lost"] == ["gpu2"]
    assert [line.split()[0] for line in node_lines(out["files"]["slurm.conf"])] == ["NodeName=gpu1"]
    assert "failed or unreachable, not yet defined: gpu2" in out["report"]


# --------------------------------------------------------------------------- lost hosts


def test_an_unreachable_compute_host_keeps_its_definition_and_is_named() -> None:
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {"ctl": probe("ctl"), "gpu1": probe("gpu1", compute=True), "login1": probe("login1")}
    cluster = dict(CLUSTER, partitions=[*CLUSTER["partitions"], {"name": "debug", "nodes": "ALL"}])
    out = plan_cluster(cluster, hosts(everyone, standing=["ctl", "gpu1", "login1"]), probes)
    assert out["nodes"]["lost"] == ["gpu2"] and out["nodes"]["kept"] == ["gpu2"]
    assert "gpu[1-2]" in node_lines(out["files"]["slurm.conf"])[0]
    assert "PartitionName=debug Nodes=ALL" in out["files"]["slurm.conf"]  # the change goes ahead
    assert "failed or unreachable, definitions kept: gpu2" in out["report"]


@pytest.mark.parametrize("who", ["ctl", "db1"])
def test_a_lost_controller_or_dbd_host_stops_the_run(who: str) -> None:
    h = hosts(["ctl", "db1", "gpu1", "gpu2"], standing=[x for x in ["ctl", "db1", "gpu1", "gpu2"] if x != who])
    h["dbd"] = ["db1"]
    with pytest.raises(SlurmPlanError, match=rf"\b{who}\b failed or are unreachable"):
        preflight_cluster(CLUSTER, h)


def test_too_many_lost_compute_hosts_stop_the_run() -> None:
    computes = ("gpu1", "gpu2", "gpu3", "gpu4")
    h = hosts(["ctl", *computes], standing=["ctl", "gpu1", "gpu2"], compute=computes)
    lost = r"2 of 4 compute hosts failed or are unreachable \(gpu3, gpu4\).*allows \(1\)"
    with pytest.raises(SlurmPlanError, match=lost):
        preflight_cluster(CLUSTER, h)
    assert preflight_cluster(dict(CLUSTER, max_failed_compute="50%"), h)["nodes"]["lost"] == ["gpu3", "gpu4"]
    assert preflight_cluster(dict(CLUSTER, max_failed_compute=2), h)["nodes"]["lost"] == ["gpu3", "gpu4"]


@pytest.mark.parametrize(
    ("setting", "count", "allowed"),
    [
        ("25%", 3, 1),
        ("25%", 8, 2),
        ("25%", 2000, 500),
        ("10%", 5, 1),
        (0, 5, 0),
        ("0", 5, 0),
        ("3", 2, 3),
        ("100%", 7, 7),
    ],
)
def test_failure_allowance(setting: Any, count: int, allowed: int) -> None:
    assert failure_allowance(setting, count) == allowed


@pytest.mark.parametrize("setting", ["many", "150%", True, "-1", "2.5"])
def test_failure_allowance_refuses_nonsense_naming_the_key(setting: Any) -> None:
    with pytest.raises(ValueError, match="slurm_max_failed_compute is"):
        failure_allowance(setting, 10)


# --------------------------------------------------------------------------- adding nodes


def test_adding_a_node_with_a_limit_on_22_05_refuses_naming_the_slurmd_hosts_left_out() -> None:
    computes = ("gpu1", "gpu2", "gpu3")
    probes = {"ctl": probe("ctl", "22.05.8"), "gpu3": probe("gpu3", "22.05.8", live="", compute=True)}
    refusal = r"adding node\(s\) gpu3 on Slurm 22.05 .* gpu\[1-2\] are outside this run"
    with pytest.raises(SlurmPlanError, match=refusal):
        plan_cluster(CLUSTER, hosts(["ctl", "gpu3"], compute=computes), probes)


def test_adding_a_node_with_a_limit_on_24_11_reconfigures() -> None:
    computes = ("gpu1", "gpu2", "gpu3")
    probes = {"ctl": probe("ctl"), "gpu3": probe("gpu3", live="", compute=True)}
    out = plan_cluster(CLUSTER, hosts(["ctl", "gpu3"], compute=computes), probes)
    assert out["nodes"]["added"] == ["gpu3"]
    assert [line.split()[0] for line in node_lines(out["files"]["slurm.conf"])] == ["NodeName=gpu[1-3]"]
    assert out["plan"]["reconfigure"] is True and out["plan"]["restart"] == []
    assert out["plan"]["added_nodes"] == ["gpu3"]


def test_adding_a_node_on_22_05_over_the_whole_cluster_restarts_every_daemon() -> None:
    computes = ("gpu1", "gpu2", "gpu3")
    probes = {h: probe(h, "22.05.8", compute=h.startswith("gpu")) for h in ("ctl", "gpu1", "gpu2", "login1")}
    probes["gpu3"] = probe("gpu3", "22.05.8", live="", compute=True)
    out = plan_cluster(CLUSTER, hosts(["ctl", "gpu1", "gpu2", "gpu3", "login1"], compute=computes), probes)
    assert out["plan"]["restart"] == ["slurmctld", "slurmd"]


def test_adding_a_node_without_a_controller_refuses() -> None:
    computes = ("gpu1", "gpu2", "gpu3")
    probes = {"gpu1": probe("gpu1", compute=True), "gpu3": probe("gpu3", live="", compute=True)}
    with pytest.raises(SlurmPlanError, match=r"add node\(s\) gpu3 but no controller is in it"):
        plan_cluster(CLUSTER, hosts(["gpu1", "gpu3"], compute=computes), probes)


def test_removing_on_purpose_needs_the_whole_cluster() -> None:
    cluster = dict(CLUSTER, nodes_removed=["gpu2"])
    with pytest.raises(SlurmPlanError, match="slurm_nodes_removed names gpu2, but this run does not hold"):
        plan_cluster(cluster, hosts(["ctl", "gpu1"]), {"ctl": probe("ctl"), "gpu1": probe("gpu1", compute=True)})


# --------------------------------------------------------------------------- version


def test_unknown_version_stops_the_run() -> None:
    with pytest.raises(SlurmPlanError, match="cannot tell the installed Slurm version"):
        everyone = ["ctl", "gpu1", "gpu2"]
        plan_cluster(CLUSTER, hosts(everyone), {h: probe(h, version="") for h in everyone})


def test_the_controllers_version_rules_and_a_mix_is_reported() -> None:
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {
        "ctl": probe("ctl", "23.11.1"),
        "gpu1": probe("gpu1", "22.05.8", compute=True),
        "gpu2": probe("gpu2", "23.11.1", compute=True),
    }
    out = plan_cluster(CLUSTER, hosts(everyone, standing=["ctl", "gpu1", "gpu2"]), probes)
    assert out["version"] == "23.11"
    assert "hosts run different Slurm releases (22.05, 23.11): planned with the rules of 23.11" in out["report"]


def test_without_a_controller_the_oldest_version_rules() -> None:
    probes = {"gpu1": probe("gpu1", "23.11.1", compute=True), "gpu2": probe("gpu2", "22.05.8", compute=True)}
    assert plan_cluster(CLUSTER, hosts(["gpu1", "gpu2"]), probes)["version"] == "22.05"


# --------------------------------------------------------------------------- settings, directories


def test_no_accounting_and_omit_reach_the_model_cleanly() -> None:
    marker = object()
    cluster = dict(CLUSTER, config={"SlurmUser": "slurm", "PrologFlags": marker}, accounting=None)
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {h: probe(h, live="", compute=h.startswith("gpu")) for h in everyone}
    out = plan_cluster(cluster, hosts(everyone), probes, omit_token=marker)
    text = out["files"]["slurm.conf"]
    assert "AccountingStorageType" not in text and "PrologFlags" not in text
    assert "object at 0x" not in repr(out)


def test_directories_follow_the_configuration() -> None:
    cluster = dict(CLUSTER, config={"SlurmUser": "slurm", "SlurmdSpoolDir": "/local/slurmd"})
    probes = {h: probe(h, live="", compute=h.startswith("gpu")) for h in ("ctl", "gpu1", "gpu2")}
    out = plan_cluster(cluster, hosts(["ctl", "gpu1", "gpu2"], compute=("gpu1", "gpu2")), probes)
    dirs = {d["path"]: (d["owner"], d["mode"], d["roles"]) for d in out["directories"]}
    assert dirs["/local/slurmd"] == ("root", "0755", ["compute"])
    assert dirs["/var/lib/slurm/slurmctld"] == ("slurm", "0700", ["controller"])
    assert dirs["/var/log/slurm"] == ("slurm", "0750", ["compute", "controller", "dbd"])
    assert dirs["/etc/slurm"][0] == "root"
    assert "/var/lib/slurm/slurmd" not in dirs
    assert out["settings"]["SlurmdSpoolDir"] == "/local/slurmd"


def test_preflight_refuses_a_bad_description_naming_it() -> None:
    cluster = dict(CLUSTER, partitions=[{"name": "gpu", "nodes": ["nosuch1"]}])
    with pytest.raises(SlurmPlanError, match=r"partition 'gpu' names undefined node\(s\) nosuch1"):
        preflight_cluster(cluster, hosts(["ctl", "gpu1", "gpu2"]))


def test_the_check_host_is_a_standing_compute_host_with_a_record_else_a_controller() -> None:
    """One host judges the candidate with the installed Slurm before any file changes."""
    probes = {"ctl": probe("ctl"), "gpu2": probe("gpu2", compute=True)}
    # gpu1 is in the run but failed before its probe: gpu2, the first with a fresh record, checks.
    out = plan_cluster(CLUSTER, hosts(["ctl", "gpu1", "gpu2", "login1"], ["ctl", "gpu2", "login1"]), probes)
    assert out["check_host"] == "gpu2"
    # No compute host stands: the controller checks the plugin names.
    out = plan_cluster(CLUSTER, hosts(["ctl", "login1"]), {"ctl": probe("ctl")})
    assert out["check_host"] == "ctl"


def test_a_node_taken_out_on_purpose_never_checks_the_candidate() -> None:
    """The candidate no longer defines it: slurmd -G -N <it> would fail on every removal."""
    run = hosts(["ctl", "gpu1", "gpu2", "login1"])
    probes = {h: probe(h, compute=h.startswith("gpu")) for h in run["in_run"]}
    out = plan_cluster(dict(CLUSTER, nodes_removed=["gpu1"]), run, probes)
    assert out["nodes"]["removed"] == ["gpu1"]
    assert out["check_host"] == "gpu2"
    assert "NodeName=gpu2 " in out["files"]["slurm.conf"] and "gpu1" not in out["files"]["slurm.conf"]


# --------------------------------------------------------------------------- topology (issue 16)

NB = "ocid1.computenetworkblock.oc1.iad.aaaaaaaanetblk000001"


def placed(block: int) -> dict[str, str]:
    return {"network_block_id": NB, "local_block_id": f"ocid1.computelocalblock.oc1.iad.aaaaaaaalocblk00000{block}"}


def topo_probes(blocks: dict[str, int], plugins: tuple[str, ...] = ("tree", "block"), **ctl: Any) -> dict:
    probes = {"ctl": {**probe("ctl"), "topology_plugins": list(plugins), **ctl}, "login1": probe("login1")}
    for name, block in blocks.items():
        probes[name] = {**probe(name, compute=True), "topology": placed(block)}
    return probes


FOUR_HOSTS = ("gpu1", "gpu2", "gpu3", "gpu4")
FOUR_BLOCKS = {"gpu1": 1, "gpu2": 1, "gpu3": 2, "gpu4": 2}
EVERYONE = ["ctl", "login1", *FOUR_HOSTS]


def test_topology_block_writes_the_plugin_and_the_file_and_a_block_change_reconfigures() -> None:
    cluster = {**CLUSTER, "topology": "auto"}
    out = plan_cluster(cluster, hosts(EVERYONE, compute=FOUR_HOSTS), topo_probes(FOUR_BLOCKS))
    assert "TopologyPlugin=topology/block" in out["files"]["slurm.conf"].splitlines()
    assert out["files"]["topology.conf"].splitlines()[1:] == [
        "BlockName=local_block_locblk000001 Nodes=gpu[1-2]",
        "BlockName=local_block_locblk000002 Nodes=gpu[3-4]",
        "BlockSizes=2,4",
    ]
    assert out["topology"] == {"mode": "block", "plugin": "topology/block", "blocks": 2, "switches": 2}
    # the plugin is new to the live slurm.conf: every daemon restarts
    assert out["plan"]["restart"] == ["slurmctld", "slurmd"]
    # converged, then gpu2 moves to block 2: the file changes, a reconfigure applies it
    live = out["files"]["slurm.conf"]
    probes = topo_probes({**FOUR_BLOCKS, "gpu2": 2}, live_topology={"topology.conf": out["files"]["topology.conf"]})
    for h in probes:
        probes[h]["live_conf"] = live
    moved = plan_cluster(cluster, hosts(EVERYONE, compute=FOUR_HOSTS), probes)
    assert "BlockName=local_block_locblk000002 Nodes=gpu[2-4]" in moved["files"]["topology.conf"]
    assert moved["plan"]["restart"] == [] and moved["plan"]["reconfigure"] is True
    assert "the topology file changed: reconfigure" in moved["plan"]["reasons"]
    # and the same again changes nothing
    probes["ctl"]["live_topology"] = {"topology.conf": moved["files"]["topology.conf"]}
    again = plan_cluster(cluster, hosts(EVERYONE, compute=FOUR_HOSTS), probes)
    assert again["plan"]["restart"] == [] and again["plan"]["reconfigure"] is False


def test_topology_ids_of_hosts_outside_the_probe_come_from_the_inventory() -> None:
    cluster = {**CLUSTER, "topology": "tree", "topology_inventory": {"gpu3": placed(2), "gpu4": placed(2)}}
    probes = topo_probes({"gpu1": 1, "gpu2": 1})
    probes.update({h: probe(h, compute=True) for h in ("gpu3", "gpu4")})
    out = plan_cluster(cluster, hosts(EVERYONE, compute=FOUR_HOSTS), probes)
    assert "SwitchName=local_block_locblk000002 Nodes=gpu[3-4]" in out["files"]["topology.conf"]
    assert "TopologyPlugin=topology/tree" in out["files"]["slurm.conf"]


def test_topology_block_refuses_a_partition_that_mixes_in_a_cpu_node_naming_it() -> None:
    cluster = {
        **CLUSTER,
        "topology": "block",
        "partitions": [{"name": "batch", "nodes": "ALL", "default": True}],
    }
    probes = topo_probes({"gpu1": 1, "gpu2": 1, "gpu3": 2})
    probes["gpu4"] = probe("gpu4", compute=True)  # a node with no fabric ids
    with pytest.raises(SlurmPlanError, match=r"partition\(s\) batch \(gpu4 in no block\)"):
        plan_cluster(cluster, hosts(EVERYONE, compute=FOUR_HOSTS), probes)


def test_topology_none_and_partial_runs() -> None:
    out = plan_cluster({**CLUSTER, "topology": "none"}, hosts(EVERYONE, compute=FOUR_HOSTS), topo_probes(FOUR_BLOCKS))
    assert "TopologyPlugin" not in out["files"]["slurm.conf"] and "topology.conf" not in out["files"]
    # a --limit run keeps the live plugin and file, whatever the hosts in it report
    live_conf = LIVE.replace("TaskPlugin=", "TopologyPlugin=topology/tree\nTaskPlugin=")
    live_topo = {
        "topology.conf": "# Managed by Ansible (oci_gpu.cluster.slurm): OCI RDMA topology\n"
        "SwitchName=s Nodes=gpu[1-2]\n"
    }
    probes = {
        "gpu1": {**probe("gpu1", live=live_conf, compute=True), "topology": placed(9), "live_topology": live_topo}
    }
    out = plan_cluster({**CLUSTER, "topology": "auto"}, hosts(["gpu1"]), probes)
    assert out["files"]["topology.conf"] == live_topo["topology.conf"]
    assert "TopologyPlugin=topology/tree" in out["files"]["slurm.conf"]
    assert out["plan"]["restart"] == [] and out["files_absent"] == []
    # switching to none removes the role's own file (topology.yaml would be read whatever slurm.conf says)
    probes = topo_probes(FOUR_BLOCKS, live_topology={**live_topo, "topology.yaml": "site: own\n"})
    out = plan_cluster({**CLUSTER, "topology": "none"}, hosts(EVERYONE, compute=FOUR_HOSTS), probes)
    assert out["files_absent"] == ["topology.conf"]


def test_an_unreachable_node_keeps_its_place_from_the_live_topology() -> None:
    cluster = {**CLUSTER, "topology": "tree"}
    first = plan_cluster(cluster, hosts(EVERYONE, compute=FOUR_HOSTS), topo_probes(FOUR_BLOCKS))
    live_topology = {"topology.conf": first["files"]["topology.conf"]}
    probes = topo_probes(FOUR_BLOCKS, live_topology=live_topology)
    for p in probes.values():
        p["live_conf"] = first["files"]["slurm.conf"]
    del probes["gpu4"]  # unreachable this run: no probe, and the inventory has no ids for it
    out = plan_cluster(
        cluster, hosts(EVERYONE, standing=[h for h in EVERYONE if h != "gpu4"], compute=FOUR_HOSTS), probes
    )
    assert out["files"]["topology.conf"] == first["files"]["topology.conf"]
    assert out["plan"]["reconfigure"] is False and out["plan"]["restart"] == []
    # the same with the block plugin's file
    block = plan_cluster(
        {**CLUSTER, "topology": "block"}, hosts(EVERYONE, compute=FOUR_HOSTS), topo_probes(FOUR_BLOCKS)
    )
    probes = topo_probes(FOUR_BLOCKS, live_topology={"topology.conf": block["files"]["topology.conf"]})
    for p in probes.values():
        p["live_conf"] = block["files"]["slurm.conf"]
    del probes["gpu3"]
    out = plan_cluster(
        {**CLUSTER, "topology": "block"},
        hosts(EVERYONE, standing=[h for h in EVERYONE if h != "gpu3"], compute=FOUR_HOSTS),
        probes,
    )
    assert out["files"]["topology.conf"] == block["files"]["topology.conf"]


# --------------------------------------------------------------------------- health check


@pytest.mark.parametrize(("version", "refused"), [("22.05.8", True), ("23.02.7", False), ("24.11.5", False)])
def test_nondrained_idle_needs_23_02(version: str, refused: bool) -> None:
    everyone = ["ctl", "gpu1", "gpu2"]
    probes = {h: probe(h, version, compute=h.startswith("gpu")) for h in everyone}
    cluster = dict(
        CLUSTER,
        config={
            "HealthCheckProgram": "/usr/local/sbin/oci-gpu-health",
            "HealthCheckNodeState": "NONDRAINED_IDLE,CYCLE",
        },
    )
    if refused:
        with pytest.raises(
            SlurmPlanError, match=r"NONDRAINED_IDLE needs Slurm 23.02 or later, and this cluster runs 22.05"
        ):
            plan_cluster(cluster, hosts(everyone), probes)
    else:
        conf = plan_cluster(cluster, hosts(everyone), probes)["files"]["slurm.conf"]
        assert "HealthCheckNodeState=NONDRAINED_IDLE,CYCLE" in conf.splitlines()


def test_a_health_check_program_change_is_a_reconfigure() -> None:
    everyone = ["ctl", "gpu1", "gpu2"]
    probes = {h: probe(h, compute=h.startswith("gpu")) for h in everyone}
    cluster = dict(CLUSTER, config={"HealthCheckProgram": "/usr/local/sbin/oci-gpu-health", "HealthCheckInterval": 30})
    out = plan_cluster(cluster, hosts(everyone), probes)
    assert "HealthCheckProgram=/usr/local/sbin/oci-gpu-health" in out["files"]["slurm.conf"].splitlines()
    assert out["plan"]["restart"] == [] and out["plan"]["reconfigure"] is True


# --------------------------------------------------------------------------- losses (issue 35 item 2)


def _ha_hosts(controllers: list[str], dbd: list[str]) -> dict:
    everyone = ["ctl", "ctl2", "dbd1", "gpu1", "gpu2", "login1"]
    return {
        "controllers": controllers,
        "dbd": dbd,
        "compute": ["gpu1", "gpu2"],
        "login": ["login1"],
        "in_run": everyone,
        "standing": everyone,
    }


def _converged_ha() -> str:
    """The slurm.conf of a first install with accounting on dbd1 and a backup controller ctl2."""
    cluster = dict(CLUSTER, accounting={"host": "dbd1"})
    everyone = _ha_hosts(["ctl", "ctl2"], ["dbd1"])["in_run"]
    probes = {h: probe(h, live="", compute=h.startswith("gpu")) for h in everyone}
    text = plan_cluster(cluster, _ha_hosts(["ctl", "ctl2"], ["dbd1"]), probes)["files"]["slurm.conf"]
    assert "AccountingStorageType=accounting_storage/slurmdbd" in text and "SlurmctldHost=ctl2" in text
    return text


def _replan(live: str, controllers: list[str], accounting: Any, removed: list[str]) -> dict:
    cluster = dict(CLUSTER, accounting=accounting, removed=removed)
    hosts_ = _ha_hosts(controllers, ["dbd1"] if accounting else [])
    probes = {h: probe(h, live=live, compute=h.startswith("gpu")) for h in hosts_["in_run"]}
    return plan_cluster(cluster, hosts_, probes)


def test_a_dbd_host_gone_from_the_inventory_never_turns_accounting_off() -> None:
    live = _converged_ha()
    with pytest.raises(SlurmPlanError) as err:
        _replan(live, ["ctl", "ctl2"], None, [])
    assert "accounting in slurmdbd on dbd1" in str(err.value) and "'accounting' to slurm_removed" in str(err.value)
    out = _replan(live, ["ctl", "ctl2"], None, ["accounting"])
    assert "AccountingStorageType" not in out["files"]["slurm.conf"]
    # accounting kept: nothing to refuse
    assert _replan(live, ["ctl", "ctl2"], {"host": "dbd1"}, [])["plan"]["restart"] == []


@pytest.mark.parametrize(("left", "gone"), [(["ctl"], "ctl2"), (["ctl2"], "ctl")])
def test_a_controller_gone_from_the_inventory_is_never_dropped(left: list[str], gone: str) -> None:
    live = _converged_ha()
    with pytest.raises(SlurmPlanError) as err:
        _replan(live, left, {"host": "dbd1"}, [])
    assert f"would drop {gone} " in str(err.value) and f"slurm_removed ('{gone}')" in str(err.value)
    out = _replan(live, left, {"host": "dbd1"}, [gone])
    assert f"SlurmctldHost={gone}\n" not in out["files"]["slurm.conf"]
    assert "slurmctld" in out["plan"]["restart"]


# --------------------------------------------------------------------------- files and per-host inputs

HEADER = "#\n# Ansible managed\n#\n"


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_the_plan_gives_the_files_with_their_final_content_and_the_last_good_copies() -> None:
    cluster = dict(CLUSTER, managed_header=HEADER, conf_dir="/etc/slurm")
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {h: probe(h, compute=h.startswith("gpu")) for h in everyone}
    out = plan_cluster(cluster, hosts(everyone), probes)
    files = {f["name"]: f for f in out["conf_files"]}
    assert list(files) == ["cgroup.conf", "gres.conf", "slurm.conf"]
    assert files["slurm.conf"]["content"] == HEADER + out["files"]["slurm.conf"]
    assert files["slurm.conf"]["path"] == "/etc/slurm/slurm.conf"
    assert files["slurm.conf"]["validate"].startswith("env SLURM_CONF=%s scontrol")
    assert out["conf_sha256"]["gres.conf"] == _sha(HEADER + out["files"]["gres.conf"])
    # containers off: the role's own oci.conf goes (a site's own stays: absent_if_managed)
    assert out["conf_files_absent"] == [
        {"name": "oci.conf", "path": "/etc/slurm/oci.conf", "state": "absent_if_managed"}
    ]
    good = {f["name"]: f for f in out["last_good_files"]}
    assert good["last-good slurm.conf"]["content"] == files["slurm.conf"]["content"]
    assert good["last-good topology.conf"] == {
        "name": "last-good topology.conf",
        "path": "/var/lib/oci-gpu-cluster/slurm-last-good/topology.conf",
        "state": "absent",
    }
    assert out["last_good_names"] == ["cgroup.conf", "gres.conf", "slurm.conf"]


def test_containers_add_oci_conf_and_plugstack_conf_for_the_release() -> None:
    cluster = dict(
        CLUSTER,
        containers={
            "oci_enabled": True,
            "pyxis_enabled": True,
            "oci_state_dir": "/run/slurm-oci",
            "oci_runtime": "/usr/bin/crun",
            "oci_config": {},
        },
    )
    out = plan_cluster(cluster, hosts(["ctl"]), {"ctl": probe("ctl", version="22.05.8")})
    files = {f["name"]: f["content"] for f in out["conf_files"]}
    assert 'RunTimeRun="/usr/bin/crun --rootless=true --root=/run/slurm-oci/%u run --bundle %b %n.%u.%j.%s.%t"' in (
        files["oci.conf"].splitlines()
    )
    assert "include /etc/slurm/plugstack.conf.d/*.conf" in files["plugstack.conf"].splitlines()
    assert out["conf_files_absent"] == []


CONTAINERS = {
    "oci_enabled": True,
    "pyxis_enabled": True,
    "oci_state_dir": "/run/slurm-oci",
    "oci_runtime": "/usr/bin/crun",
    "pyxis_plugin": "",
    "pyxis_args": {"runtime_path": "/run/pyxis"},
    "pyxis_packages": ["nvslurm-plugin-pyxis"],
    "enroot_base_dir": "/mnt/localdisk",
    "job_map_dir": "/run/oci-gpu/gpu-jobs",
}
PYXIS_SO = "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"


def test_the_plan_gives_each_node_its_own_files_with_the_rest() -> None:
    """The prologs, the epilog and enroot.conf are the same everywhere; pyxis.conf names the plugin each
    host's probe found, and the sysctl file keeps a limit the host already had above the role's."""
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {h: probe(h, compute=h.startswith("gpu")) for h in everyone}
    probes["gpu1"]["pyxis"] = {"path": PYXIS_SO, "found": True, "version": "24.11.5"}
    probes["gpu1"]["userns_limits"] = {"user.max_user_namespaces": 200000, "user.max_mnt_namespaces": 0}
    probes["gpu2"]["pyxis"] = {"path": "/opt/pyxis/spank_pyxis.so", "found": True, "version": "24.11.1"}
    out = plan_cluster(dict(CLUSTER, containers=CONTAINERS), hosts(everyone), probes)
    shared = {f["name"]: f for f in out["node_files"]}
    assert sorted(shared) == [
        "enroot.conf",
        "epilog oci-gpu-job-map.sh",
        "prolog oci-gpu-containers.sh",
        "prolog oci-gpu-job-map.sh",
    ]
    assert shared["prolog oci-gpu-containers.sh"]["path"] == "/etc/slurm/prolog.d/oci-gpu-containers.sh"
    assert (shared["prolog oci-gpu-containers.sh"]["mode"], shared["enroot.conf"]["roles"]) == ("0755", ["compute"])
    assert "ENROOT_DATA_PATH /mnt/localdisk/enroot/data/user-$(id -u)" in shared["enroot.conf"]["content"].splitlines()
    assert [d["path"] for d in out["node_directories"]] == [
        "/etc/slurm/prolog.d",
        "/etc/slurm/epilog.d",
        "/etc/slurm/plugstack.conf.d",
        "/etc/enroot",
    ]
    own = {h: {f["name"]: f["content"] for f in out["hosts"][h]["node_files"]} for h in everyone}
    assert own["gpu1"]["plugstack.conf.d/pyxis.conf"].splitlines()[1] == f"required {PYXIS_SO} runtime_path=/run/pyxis"
    assert own["gpu2"]["plugstack.conf.d/pyxis.conf"].splitlines()[1] == (
        "required /opt/pyxis/spank_pyxis.so runtime_path=/run/pyxis"
    )
    assert own["gpu1"]["sysctl containers"].splitlines()[2:] == [
        "user.max_user_namespaces = 200000",
        "user.max_mnt_namespaces = 65536",
    ]
    assert own["gpu2"]["sysctl containers"].splitlines()[2:] == [
        "user.max_user_namespaces = 65536",
        "user.max_mnt_namespaces = 65536",
    ]
    # Turned off: the role's own files go, a site's stay (absent_if_managed), and nothing per host.
    off = plan_cluster(dict(CLUSTER, containers={}), hosts(everyone), probes)
    assert {f["name"]: f["state"] for f in off["node_files"]} == {
        "prolog oci-gpu-containers.sh": "absent_if_managed",
        "prolog oci-gpu-job-map.sh": "absent_if_managed",
        "epilog oci-gpu-job-map.sh": "absent_if_managed",
        "enroot.conf": "absent_if_managed",
        "plugstack.conf.d/pyxis.conf": "absent_if_managed",
        "sysctl containers": "absent_if_managed",
    }
    assert off["node_directories"] == [] and off["hosts"]["gpu1"]["node_files"] == []


def test_a_pyxis_missing_or_of_another_release_is_refused_by_host_before_any_change() -> None:
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {h: probe(h, compute=h.startswith("gpu")) for h in everyone}
    probes["gpu1"]["pyxis"] = {"path": PYXIS_SO, "found": True, "version": "22.05.8"}
    probes["gpu2"]["pyxis"] = {"path": "", "found": False, "version": ""}
    probes["login1"]["pyxis"] = {"path": PYXIS_SO, "found": True, "version": "24.11.5"}
    with pytest.raises(SlurmPlanError) as err:
        plan_cluster(dict(CLUSTER, containers=CONTAINERS), hosts(everyone), probes)
    text = str(err.value)
    assert f"gpu1: pyxis ({PYXIS_SO}) was built for Slurm 22.05, but this host runs Slurm 24.11" in text
    assert "gpu2: no spank_pyxis.so in Slurm's plugin directories (slurm_pyxis_packages installs it: " in text
    assert "login1" not in text
    # A file that is not a shared object: named, with the setting to check.
    probes["gpu2"]["pyxis"] = {"path": "/opt/x.so", "found": True, "version": "", "error": "cannot read /opt/x.so: bad"}
    probes["gpu1"]["pyxis"]["version"] = "24.11.2"
    with pytest.raises(SlurmPlanError, match=r"gpu2: pyxis cannot read /opt/x.so: bad \(check slurm_pyxis_plugin\)"):
        plan_cluster(dict(CLUSTER, containers=CONTAINERS), hosts(everyone), probes)
    # Not read (check mode before the packages are installed, or pyxis off): nothing to judge.
    del probes["gpu2"]["pyxis"]
    assert plan_cluster(dict(CLUSTER, containers=CONTAINERS), hosts(everyone), probes)["version"] == "24.11"


def test_per_host_inputs_behind_and_what_the_primary_serves_configless_nodes() -> None:
    """configless: gpu1 kept the files of an earlier reconfigure (behind: its base files differ from
    the controller's live ones); the controller's live gres.conf differs from the plan's, so each
    configless slurmd hears that gres.conf changes (served_changed); login1 writes its own files."""
    cluster = dict(CLUSTER, managed_header=HEADER, configless=True)
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    first = plan_cluster(cluster, hosts(everyone), {h: probe(h, compute=h.startswith("gpu")) for h in everyone})
    sha = first["conf_sha256"]
    ctl_live = {"cgroup.conf": sha["cgroup.conf"], "gres.conf": "old", "slurm.conf": sha["slurm.conf"]}
    probes = {
        "ctl": dict(probe("ctl"), live_conf_path="/etc/slurm/slurm.conf", conf_sha256=ctl_live, running=["slurmctld"]),
        "gpu1": dict(
            probe("gpu1", compute=True),
            live_conf_path="/run/slurm/conf/slurm.conf",
            conf_sha256=dict(ctl_live, **{"slurm.conf": "an older one"}),
            running=["slurmd"],
        ),
        "gpu2": dict(probe("gpu2", compute=True), live_conf_path="/run/slurm/conf/slurm.conf", conf_sha256=ctl_live),
        "login1": dict(probe("login1"), behind=True),
    }
    out = plan_cluster(cluster, hosts(everyone), probes)
    h = out["hosts"]
    assert (h["ctl"]["primary"], h["ctl"]["writes_config"], h["ctl"]["behind"]) == (True, True, False)
    assert (h["gpu1"]["writes_config"], h["gpu1"]["behind"], h["gpu1"]["served_changed"]) == (
        False,
        True,
        ["gres.conf"],
    )
    assert (h["gpu2"]["behind"], h["gpu2"]["served_changed"], h["gpu2"]["running"]) == (False, ["gres.conf"], [])
    assert (h["login1"]["writes_config"], h["login1"]["behind"], h["login1"]["served_changed"]) == (True, True, [])
    assert h["ctl"]["roles"] == ["controller"] and h["gpu1"]["roles"] == ["compute"]


def test_per_host_inputs_only_for_standing_hosts_and_nothing_served_without_the_primary() -> None:
    """--limit gpu1,gpu2,login1 with login1 unreachable: only the standing hosts get an entry."""
    cluster = dict(CLUSTER, configless=True)
    out = plan_cluster(
        cluster,
        hosts(["gpu1", "gpu2", "login1"], standing=["gpu1", "gpu2"]),
        {"gpu1": probe("gpu1", compute=True), "gpu2": probe("gpu2", compute=True)},
    )
    assert sorted(out["hosts"]) == ["gpu1", "gpu2"]
    assert out["hosts"]["gpu1"]["served_changed"] == []


# --------------------------------------------------------------------------- ids and clocks (issue 43 items 3, 6)


def _ids(slurm: int, munge: int = 101) -> dict:
    return {"slurm": {"uid": slurm, "gid": slurm}, "munge": {"uid": munge, "gid": munge + 1}}


def test_a_host_whose_slurm_uid_differs_from_the_controllers_is_refused_by_name() -> None:
    """Every user the probes report is compared with the first controller's (the role reports SlurmUser);
    a host that reports another user's ids only is not judged for slurm."""
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {h: dict(probe(h, compute=h.startswith("gpu")), accounts=_ids(64030)) for h in everyone}
    probes["gpu2"]["accounts"] = _ids(999)
    probes["login1"]["accounts"] = _ids(64030, munge=105)
    with pytest.raises(SlurmPlanError) as err:
        plan_cluster(CLUSTER, hosts(everyone), probes)
    assert err.value.problems == [
        "user munge has UID 105 (GID 106) on login1 but UID 101 (GID 102) on ctl: every Slurm host needs the "
        "same UID and GID for it. Give munge the same UID and GID everywhere (usermod -u, groupmod -g, then "
        "chown its files) and run again",
        "user slurm has UID 999 (GID 999) on gpu2 but UID 64030 (GID 64030) on ctl: every Slurm host needs the "
        "same UID and GID for it. Give slurm the same UID and GID everywhere (usermod -u, groupmod -g, then "
        "chown its files) and run again",
    ]
    only_slurm = {h: dict(probes[h], accounts={"slurm": probes[h]["accounts"]["slurm"]}) for h in everyone}
    with pytest.raises(SlurmPlanError) as err:
        plan_cluster(CLUSTER, hosts(everyone), only_slurm)
    assert [p.split(" has ")[0] for p in err.value.problems] == ["user slurm"]


def test_two_controllers_with_different_slurm_uids_are_refused_naming_the_shared_state() -> None:
    """HA: the backup's slurm UID differs; today each controller re-owns StateSaveLocation to its own."""
    h = dict(hosts(["ctl", "ctl2", "gpu1", "gpu2"], compute=("gpu1", "gpu2")), controllers=["ctl", "ctl2"])
    probes = {n: dict(probe(n, compute=n.startswith("gpu")), accounts=_ids(64030)) for n in h["in_run"]}
    probes["ctl2"]["accounts"] = _ids(64031)
    with pytest.raises(
        SlurmPlanError,
        match=r"user slurm has UID 64031 \(GID 64031\) on ctl2 but UID 64030 "
        r"\(GID 64030\) on ctl: .*the controllers share StateSaveLocation, owned by that UID: "
        r"after a failover ctl2 could not read the state",
    ):
        plan_cluster(CLUSTER, h, probes)


def test_a_clock_beyond_munges_ttl_is_refused_and_a_missing_user_or_report_is_not_judged() -> None:
    everyone = ["ctl", "gpu1", "gpu2", "login1"]
    probes = {h: dict(probe(h, compute=h.startswith("gpu")), accounts=_ids(64030), clock_skew=1.5) for h in everyone}
    probes["gpu1"]["clock_skew"] = -412.0
    probes["gpu2"]["accounts"] = {"slurm": None, "munge": None}  # before its packages made the users
    del probes["login1"]["clock_skew"]
    with pytest.raises(SlurmPlanError) as err:
        plan_cluster(CLUSTER, hosts(everyone), probes)
    assert err.value.problems == [
        "the clocks of 1 host(s) are further off the control node's than munge's credential TTL (300 s): "
        "gpu1 -412 s; munge refuses their credentials, so Slurm would not work there. Set their clocks "
        "(chrony/NTP) and run again"
    ]
    probes["gpu1"]["clock_skew"] = 299.0
    assert plan_cluster(CLUSTER, hosts(everyone), probes)["nodes"]["defined"] == ["gpu1", "gpu2"]
    assert (
        plan_cluster(
            dict(CLUSTER, max_clock_skew=600),
            hosts(everyone),
            dict(probes, gpu1=dict(probes["gpu1"], clock_skew=-412.0)),
        )["version"]
        == "24.11"
    )


# --------------------------------------------------------------------------- elastic node sets

OCID = "ocid1.{}.oc1.iad.aaaa{}"


def nodeset(**over: Any) -> dict[str, Any]:
    ns = {
        "name": "eh100",
        "count": 2,
        "shape": "BM.GPU.H100.8",
        "compartment_id": OCID.format("compartment", "c1"),
        "availability_domain": "Uocm:US-ASHBURN-AD-1",
        "subnet_id": OCID.format("subnet", "s1"),
        "image_id": OCID.format("image", "i1"),
    }
    ns.update(over)
    return ns


def cluster(**over: Any) -> dict[str, Any]:
    return {**CLUSTER, "elastic_nodesets": [nodeset()], "power_saving": {}, "memory_reserve_mb": 1024, **over}


TWO_GPU_RUN = ["ctl", "gpu1", "gpu2", "login1"]


def whole_run() -> tuple[dict, dict]:
    probes = {"ctl": probe("ctl"), "login1": probe("login1")}
    probes.update({h: probe(h, compute=True) for h in ("gpu1", "gpu2")})
    return hosts(TWO_GPU_RUN), probes


def test_cloud_nodes_come_from_the_shape_and_static_nodes_are_never_suspended() -> None:
    out = plan_cluster(cluster(), *whole_run())
    text = out["files"]["slurm.conf"]
    lines = node_lines(text)
    # 112 OCPUs x 2 threads, 2 TB less the reserve, eight H100s from the shape table
    assert (
        "NodeName=eh100-[1-2] CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2096128 "
        "Gres=gpu:h100:8 Features=bm_gpu_h100_8,eh100,elastic Weight=1000 State=CLOUD"
    ) in lines
    keys = parse_slurm_conf(text)["keys"]
    assert keys["suspendexcnodes"] == "gpu[1-2]"
    assert keys["resumeprogram"] == "/usr/local/sbin/oci-gpu-power-resume"
    assert keys["suspendprogram"] == "/usr/local/sbin/oci-gpu-power-suspend"
    assert keys["resumefailprogram"] == "/usr/local/sbin/oci-gpu-power-resume-fail"
    assert (keys["resumetimeout"], keys["suspendtime"], keys["suspendtimeout"]) == ("1800", "600", "300")
    # 24.11 takes a cloud node's address from its registration by itself (cloud_reg_addrs is defunct there)
    assert keys["slurmctldparameters"] == "enable_configless,idle_on_node_suspend"
    assert keys["privatedata"] == "cloud"
    assert keys["treewidth"] == "65533"
    # gres.conf names the cloud nodes' devices (no NVML plugin on the lab hosts)
    assert "NodeName=eh100-[1-2] Name=gpu Type=h100 File=/dev/nvidia[0-7]" in out["files"]["gres.conf"]
    assert out["nodes"]["added"] == ["eh100-1", "eh100-2"]
    assert out["elastic"]["nodes"] == ["eh100-1", "eh100-2"]
    agent = out["elastic"]["nodesets"]["eh100"]
    assert agent["nodes"] == "eh100-[1-2]" and agent["subnet_id"] == OCID.format("subnet", "s1")
    # adding nodes on 24.11 is a reconfigure; the new SlurmctldParameters restart slurmctld alone
    assert out["plan"]["restart"] == ["slurmctld"]
    assert "nodes added or removed: reconfigure (24.11+)" in out["plan"]["reasons"]


def test_the_site_keeps_its_own_words_and_configless() -> None:
    c = cluster(config={"SlurmUser": "slurm", "SlurmctldParameters": "enable_configless", "PrivateData": "jobs"})
    keys = parse_slurm_conf(plan_cluster(c, *whole_run())["files"]["slurm.conf"])["keys"]
    assert keys["slurmctldparameters"] == "enable_configless,idle_on_node_suspend"
    assert keys["privatedata"] == "jobs,cloud"
    h, probes = whole_run()
    old = {k: {**v, "slurm_version": "22.05.8"} for k, v in probes.items()}
    keys = parse_slurm_conf(plan_cluster(c, h, old)["files"]["slurm.conf"])["keys"]
    assert keys["slurmctldparameters"] == "enable_configless,cloud_reg_addrs,idle_on_node_suspend"


def test_a_partial_run_keeps_the_cloud_state_of_a_live_line() -> None:
    live = LIVE.replace(
        "# Partitions",
        "NodeName=eh100-[1-2] CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=15000 "
        "Gres=gpu:h100:2 Features=eh100,elastic Weight=1000 State=CLOUD\n\n# Partitions",
    )
    out = plan_cluster(
        cluster(),
        hosts(["ctl", "gpu1"]),
        {"ctl": probe("ctl", live=live), "gpu1": probe("gpu1", live=live, compute=True)},
    )
    line = next(x for x in node_lines(out["files"]["slurm.conf"]) if x.startswith("NodeName=eh100"))
    assert line.endswith("State=CLOUD") and "RealMemory=15000" in line


def test_a_node_set_taken_out_of_the_settings_keeps_its_nodes() -> None:
    live = LIVE.replace(
        "# Partitions",
        "NodeName=eh100-[1-2] CPUs=8 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=15000 "
        "Weight=1000 State=CLOUD\n\n# Partitions",
    )
    h, probes = whole_run()
    probes = {k: {**v, "live_conf": live} for k, v in probes.items()}
    out = plan_cluster(cluster(elastic_nodesets=[]), h, probes)
    assert any(
        x.startswith("NodeName=eh100-[1-2]") and x.endswith("State=CLOUD")
        for x in node_lines(out["files"]["slurm.conf"])
    )
    assert out["nodes"]["orphans"] == ["eh100-1", "eh100-2"]


@pytest.mark.parametrize(
    ("over", "power", "expect"),
    [
        ({"count": 0}, {}, "slurm_elastic_nodesets[0].count = 0 (set for ctl): must be a whole number"),
        ({"name": "GPU_1"}, {}, "slurm_elastic_nodesets[0].name = 'GPU_1' (set for ctl)"),
        ({"subnet_id": "subnet-1"}, {}, "slurm_elastic_nodesets[0].subnet_id = 'subnet-1' (set for ctl): not an OCID"),
        ({"image_id": None}, {}, "slurm_elastic_nodesets[0].image_id = None (set for ctl): required"),
        (
            {"shape": "BM.Made.Up"},
            {},
            "'BM.Made.Up' (set for ctl): not in the collection's shape table, so set cpus and real_memory",
        ),
        ({"colour": "red"}, {}, "slurm_elastic_nodesets[0].colour (set for ctl): unknown key"),
        ({"name": "gpu", "count": 2}, {}, "node gpu-1 is also"),
        (
            {},
            {"resume_timeout": 60},
            "slurm_power_saving.resume_timeout = 60 (set for ctl): below the boot time of node set 'eh100' "
            "(1200 s for BM.GPU.H100.8) plus 120 s",
        ),
        ({"boot_time_s": 30}, {"resume_timeout": 150}, ""),
        ({}, {"suspend_tiem": 5}, "slurm_power_saving.suspend_tiem (set for ctl): unknown key"),
        (
            {
                "compute_cluster_id": OCID.format("computecluster", "x"),
                "instance_pool_id": OCID.format("instancepool", "y"),
            },
            {},
            "both set",
        ),
    ],
)
def test_bad_values_are_refused_before_anything_changes(over: dict, power: dict, expect: str) -> None:
    c = cluster(elastic_nodesets=[nodeset(**over)], power_saving=power, where="set for ctl")
    if over.get("name") == "gpu":
        c = cluster(elastic_nodesets=[nodeset(**over)], where="set for ctl")
        h = hosts(["ctl", "gpu-1"], compute=("gpu-1",))
    else:
        h = hosts(TWO_GPU_RUN)
    if not expect:
        preflight_cluster(c, h)
        return
    with pytest.raises(SlurmPlanError) as err:
        preflight_cluster(c, h)
    assert expect in str(err.value), str(err.value)


def test_power_keys_in_slurm_config_are_refused() -> None:
    with pytest.raises(ElasticError, match=r"slurm_config.SuspendTime \(x\): set by slurm_power_saving"):
        plan_elastic([nodeset()], {}, [], {"SuspendTime": 5}, where="x")


def test_no_node_sets_no_power_keys() -> None:
    out = plan_cluster(cluster(elastic_nodesets=[]), *whole_run())
    assert "ResumeProgram" not in out["files"]["slurm.conf"] and out["elastic"]["nodes"] == []


def test_overrides_fit_a_node_to_its_hardware() -> None:
    out = plan_elastic(
        [nodeset(cpus=2, sockets=1, threads_per_core=1, real_memory=3000, gpu_count=2, weight=5)], {}, []
    )
    rec = out["records"][0]
    assert (rec["cpus"], rec["cores_per_socket"], rec["real_memory"], rec["gpu_count"], rec["weight"]) == (
        2,
        2,
        3000,
        2,
        5,
    )
    assert rec["gpu_files"] == ["/dev/nvidia0", "/dev/nvidia1"]


def test_a_node_removed_on_purpose_is_not_in_suspend_exc_nodes() -> None:
    """SuspendExcNodes names only nodes slurm.conf defines: a removed one would be an unknown name there."""
    h, probes = whole_run()
    out = plan_cluster(cluster(nodes_removed=["gpu2"]), h, probes)
    keys = parse_slurm_conf(out["files"]["slurm.conf"])["keys"]
    assert keys["suspendexcnodes"] == "gpu1" and out["nodes"]["removed"] == ["gpu2"]


def test_elastic_nodes_of_a_compute_cluster_get_a_switch_of_their_own_and_no_block() -> None:
    """Part 4 of issue 39: the topology model places elastic nodes before they exist. A node set launched
    into a compute cluster shares its RDMA fabric: one island-level switch named by the cluster's OCID, so
    a job stays inside it; their leaf is unknown until launch, so no block (auto picks tree, block is
    refused naming the partition that mixes them in)."""
    cc = OCID.format("computecluster", "cc0000000001")
    c = cluster(topology="auto", elastic_nodesets=[nodeset(compute_cluster_id=cc)])
    out = plan_cluster(c, hosts(EVERYONE, compute=FOUR_HOSTS), topo_probes(FOUR_BLOCKS))
    lines = out["files"]["topology.conf"].splitlines()
    assert out["topology"]["plugin"] == "topology/tree"
    assert "SwitchName=hpc_island_cc0000000001 Nodes=eh100-[1-2]" in lines
    assert "SwitchName=oci_fabric Switches=hpc_island_cc0000000001,oci_fabric_none" in lines
    assert "SwitchName=local_block_locblk000001 Nodes=gpu[1-2]" in lines
    # a node set without a compute cluster: with the hosts that report no place
    out = plan_cluster(cluster(topology="tree"), hosts(EVERYONE, compute=FOUR_HOSTS), topo_probes(FOUR_BLOCKS))
    assert "SwitchName=oci_fabric_none_nodes Nodes=eh100-[1-2]" in out["files"]["topology.conf"].splitlines()
    with pytest.raises(SlurmPlanError, match=r"partition\(s\) batch \(eh100-1, eh100-2 in no block\)"):
        plan_cluster(
            cluster(topology="block", elastic_nodesets=[nodeset(compute_cluster_id=cc)]),
            hosts(EVERYONE, compute=FOUR_HOSTS),
            topo_probes(FOUR_BLOCKS),
        )


def test_the_check_is_needed_unless_the_check_host_runs_the_candidate_already() -> None:
    """A converged rerun makes no slurm_config_check call: the check host's probe hashes equal the candidate's."""
    run = hosts(["ctl", "gpu1", "gpu2", "login1"])
    probes = {h: probe(h, compute=h.startswith("gpu")) for h in run["in_run"]}
    first = plan_cluster(CLUSTER, run, probes)
    assert first["check_host"] == "gpu1" and first["check_needed"] is True  # no live files read
    assert first["check_live_dir"] == "/etc/slurm"
    live = {f["name"]: hashlib.sha256(f["content"].encode()).hexdigest() for f in first["conf_files"]}
    probes["gpu1"] = {**probes["gpu1"], "live_conf_path": "/etc/slurm/slurm.conf", "conf_sha256": live}
    assert plan_cluster(CLUSTER, run, probes)["check_needed"] is False
    # One file differs, or one is missing: checked.
    other = {**live, "gres.conf": hashlib.sha256(b"Name=gpu\n").hexdigest()}
    probes["gpu1"]["conf_sha256"] = other
    assert plan_cluster(CLUSTER, run, probes)["check_needed"] is True
    probes["gpu1"]["conf_sha256"] = {k: v for k, v in live.items() if k != "cgroup.conf"}
    assert plan_cluster(CLUSTER, run, probes)["check_needed"] is True
    # A configless slurmd is checked against /run/slurm/conf: the same files under /etc do not count.
    probes["gpu1"]["conf_sha256"] = live
    configless = dict(CLUSTER, configless=True)
    out = plan_cluster(configless, run, probes)
    assert (out["check_needed"], out["check_live_dir"]) == (True, "/run/slurm/conf")
    probes["gpu1"]["live_conf_path"] = "/run/slurm/conf/slurm.conf"
    assert plan_cluster(configless, run, probes)["check_needed"] is False
