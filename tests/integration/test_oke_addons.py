# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""``ansible-playbook oci_gpu.cluster.oke_addons`` and the oke_* modules against the OCI API emulator,
through the real SDK: converge, idempotence, config change, check mode, failures, gates, bad input.
Write calls are counted at the emulator (its add-on write log), never inferred from Ansible output."""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "tests" / "lab"))

import canary  # noqa: E402

from tests.ansible_harness import run_tool  # noqa: E402
from tests.oci_emulator import generate  # noqa: E402
from tests.oci_emulator.testing import COLLECTIONS, VENV_BIN, Running, ansible_inventory, running_emulator  # noqa: E402

PLAYBOOK = REPO / "playbooks" / "oke_addons.yml"
BUILT_IN_GROUPS = {"v1", "storage.k8s.io/v1"}
WRITE_OPS = {"InstallAddon", "UpdateAddon", "DisableAddon"}


def tenancy() -> dict[str, Any]:
    return generate(seed=11, hosts=2, compartments=1, regions=1, oke_clusters=1)


def region(lab: Running) -> Any:
    return lab.tenancy.regions[lab.tenancy.home_region]


def env_for(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
            "ANSIBLE_LOCAL_TEMP": str(workdir / ".ansible-tmp"),
            "ANSIBLE_HOME": str(workdir / ".ansible-home"),
            "PATH": f"{VENV_BIN}:{env.get('PATH', '')}",
        }
    )
    return env


def base_vars(lab: Running) -> dict[str, Any]:
    return {
        "oke_addons_cluster_id": region(lab).clusters[0]["id"],
        "oke_addons_config_file": str(lab.creds.config_file),
        "oke_addons_service_endpoint": lab.endpoints[lab.tenancy.home_region],
        "oke_addons_k8s_objects_apply": False,
        "oke_addons_poll_interval": 0.1,
        "oke_addons_wait_timeout": 60,
    }


def playbook(lab: Running, extra: dict[str, Any] | None = None, *args: str) -> subprocess.CompletedProcess:
    variables = base_vars(lab)
    variables.update(extra or {})
    path = lab.workdir / f"vars-{len(list(lab.workdir.glob('vars-*.yml')))}.yml"
    path.write_text(yaml.safe_dump(variables))
    return run_tool("ansible-playbook", str(PLAYBOOK), "-e", f"@{path}", *args, env=env_for(lab.workdir))


def recap(run: subprocess.CompletedProcess) -> dict[str, int]:
    found = re.search(r"^localhost\s+:\s+(.*)$", run.stdout, re.M)
    assert found, run.stdout[-3000:] + run.stderr[-2000:]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", found.group(1))}


def module(lab: Running, module_name: str, **args: Any) -> tuple[int, dict[str, Any]]:
    """Run one module with ``ansible localhost -m``; return (rc, its JSON result)."""
    params = {
        "config_file": str(lab.creds.config_file),
        "service_endpoint": lab.endpoints[lab.tenancy.home_region],
        **args,
    }
    argv = ["localhost", "-m", f"oci_gpu.cluster.{module_name}", "-a", json.dumps(params)]
    run = run_tool("ansible", *argv, env=env_for(lab.workdir))
    _head, sep, body = run.stdout.partition(" => ")
    assert sep, run.stdout + run.stderr
    return run.returncode, json.loads(body)


def writes(lab: Running) -> list[tuple[str, str]]:
    return [(w["op"], w["addon"]) for w in lab.emulator.writes()]


RICH_VARS: dict[str, Any] = {
    "oke_addons_fss_storage_classes": [
        {
            "name": "fss-dyn",
            "availability_domain": "Uocm:US-ASHBURN-AD-1",
            "mount_target_id": "ocid1.mounttarget.oc1.iad.mt",
        }
    ],
    "oke_addons_fss_volumes": [
        {
            "name": "home",
            "file_system_id": "ocid1.filesystem.oc1.iad.fs",
            "mount_target_ip": "10.0.0.5",
            "export_path": "/home",
            "namespace": "ml-research",
        }
    ],
    "oke_addons_lustre_volumes": [
        {
            "name": "scratch",
            "mgs_address": "10.0.2.6",
            "fs_name": "lfs",
            "subnet_cidr": "10.0.2.0/24",
            "namespace": "ml-research",
        }
    ],
    "oke_addons_kueue_local_queues": [
        {"namespace": "ml-research", "name": "gpu"},
        {"namespace": "default", "name": "gpu"},
    ],
}


@pytest.fixture(scope="module")
def converged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A fresh cluster: a --check run, then two converges (recaps and write logs kept), left converged."""
    workdir = tmp_path_factory.mktemp("oke")
    with running_emulator(tenancy(), workdir, addon_delay_s=0.2) as lab:
        extra = dict(RICH_VARS, oke_addons_render_dir=str(workdir / "render"))
        out: dict[str, Any] = {"lab": lab, "extra": extra, "render": workdir / "render"}
        out["check"] = playbook(lab, extra, "--check")
        out["check_writes"] = writes(lab)
        out["first"] = playbook(lab, extra)
        out["first_log"] = lab.emulator.writes()
        lab.emulator.reset_counters()
        out["second"] = playbook(lab, extra)
        out["second_writes"] = writes(lab)
        yield out


def test_check_mode_on_a_fresh_cluster_makes_no_write_call(converged: dict[str, Any]) -> None:
    run = converged["check"]
    assert run.returncode == 0, run.stdout[-3000:]
    assert recap(run)["changed"] > 0
    assert converged["check_writes"] == []


def test_converges_then_second_run_changes_nothing(converged: dict[str, Any]) -> None:
    first, second = converged["first"], converged["second"]
    assert first.returncode == 0, first.stdout[-4000:]
    assert recap(first)["changed"] >= 6 and recap(first)["failed"] == 0
    assert second.returncode == 0, second.stdout[-4000:]
    assert recap(second)["changed"] == 0, second.stdout[-4000:]
    assert converged["second_writes"] == []
    addons = region(converged["lab"]).addons[region(converged["lab"]).clusters[0]["id"]]
    assert {n: a["lifecycleState"] for n, a in addons.items()} == {
        "NodeFeatureDiscovery": "ACTIVE",
        "NvidiaGpuOperator": "ACTIVE",
        "NvidiaNetworkOperator": "ACTIVE",
        "CertManager": "ACTIVE",
        "KubernetesMetricsServer": "ACTIVE",
    }
    gpu = {c["key"]: c["value"] for c in addons["NvidiaGpuOperator"]["configurations"]}
    assert gpu["driver.enabled"] == "false" and gpu["dcgmExporter.enabled"] == "true"
    net = {c["key"]: c["value"] for c in addons["NvidiaNetworkOperator"]["configurations"]}
    resources = json.loads(net["sriovDevicePlugin.resources"])
    assert resources == [
        {
            "resourcePrefix": "nvidia.com",
            "resourceName": "rdma_bm_gpu_h100_8",
            "selectors": {"vendors": ["15b3"], "devices": ["101e"], "drivers": ["mlx5_core"], "isRdma": True},
        }
    ]


def test_configure_tag_alone_runs_its_checks_in_check_mode_and_changes_nothing(converged: dict[str, Any]) -> None:
    """--tags oke_addons_configure runs the preflight it needs (read-only calls), not the add-on step."""
    lab = converged["lab"]
    before = len(writes(lab))
    run = playbook(lab, converged["extra"], "--check", "--tags", "oke_addons_configure")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert recap(run)["changed"] == 0, run.stdout[-3000:]
    assert "oke_addons : Check the cluster is ACTIVE]" in run.stdout
    assert "oke_addons : Render the Kubernetes objects]" in run.stdout
    assert "oke_addons : Apply each managed add-on after the ones it depends on]" not in run.stdout
    assert len(writes(lab)) == before


def test_first_run_writes_in_dependency_order_with_gates(converged: dict[str, Any]) -> None:
    log = converged["first_log"]
    assert [(w["op"], w["addon"]) for w in log] == [
        ("InstallAddon", "NodeFeatureDiscovery"),
        ("DisableAddon", "NvidiaGpuPlugin"),
        ("InstallAddon", "NvidiaGpuOperator"),
        ("InstallAddon", "NvidiaNetworkOperator"),
        ("InstallAddon", "CertManager"),
        ("InstallAddon", "KubernetesMetricsServer"),
    ]
    by_addon = {w["addon"]: w for w in log}
    assert by_addon["NvidiaGpuOperator"]["addonStates"]["NodeFeatureDiscovery"] == "ACTIVE"
    assert "NvidiaGpuPlugin" not in by_addon["NvidiaGpuOperator"]["addonStates"]
    assert by_addon["NvidiaNetworkOperator"]["addonStates"]["NvidiaGpuOperator"] == "ACTIVE"
    assert all(w["retryToken"] for w in log if w["op"] == "InstallAddon")


def load_rendered(render: Path) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(render.glob("*.yaml")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def test_rendered_built_in_objects_validate_offline(converged: dict[str, Any]) -> None:
    k8s = region(converged["lab"]).clusters[0]["kubernetesVersion"]  # v1.31.1
    target = ".".join(k8s.lstrip("v").split(".")[:2]) + ".0"
    docs = load_rendered(converged["render"])
    kinds = sorted(d["kind"] for d in docs if d["apiVersion"] in BUILT_IN_GROUPS)
    assert kinds == ["Namespace"] + ["PersistentVolume"] * 2 + ["PersistentVolumeClaim"] * 2 + ["StorageClass"] * 2
    for doc in docs:
        if doc["apiVersion"] in BUILT_IN_GROUPS:
            kubernetes_validate.validate(doc, target, strict=True)
    drivers = {d["spec"]["csi"]["driver"] for d in docs if d["kind"] == "PersistentVolume"}
    assert drivers == {"fss.csi.oraclecloud.com", "lustre.csi.oraclecloud.com"}
    provisioners = {d["provisioner"] for d in docs if d["kind"] == "StorageClass"}
    assert provisioners == {"fss.csi.oraclecloud.com", "lustre.csi.oraclecloud.com"}


def test_rendered_objects_follow_least_privilege(converged: dict[str, Any]) -> None:
    """Every object the role renders: Pod Security on each namespace (privileged only for the RDMA
    network's), no binding to cluster-admin, no wildcard or escalating RBAC, no unpinned image."""
    docs = load_rendered(converged["render"])
    assert docs
    for doc in docs:
        kind, meta = doc["kind"], doc.get("metadata") or {}
        if kind == "Namespace":
            labels = meta.get("labels") or {}
            rdma_ns = RICH_VARS.get("oke_addons_rdma_network_namespace", "default")
            allowed = (
                ("baseline", "restricted", "privileged") if meta["name"] == rdma_ns else ("baseline", "restricted")
            )
            assert labels.get("pod-security.kubernetes.io/enforce") in allowed, meta
            assert labels.get("pod-security.kubernetes.io/warn") == "restricted", meta
        if kind in ("ClusterRoleBinding", "RoleBinding"):
            assert doc["roleRef"]["name"] != "cluster-admin", meta
        if kind in ("ClusterRole", "Role"):
            for rule in doc.get("rules") or []:
                assert "*" not in rule.get("verbs", []) and "*" not in rule.get("resources", []), meta
                assert not {"escalate", "bind", "impersonate"} & set(rule.get("verbs", [])), meta
        for image in re.findall(r"image:\s*(\S+)", yaml.safe_dump(doc)):
            assert ("@sha256:" in image or ":" in image.rsplit("/", 1)[-1]) and not image.endswith(":latest"), image


def test_rendered_custom_resources_are_well_formed(converged: dict[str, Any]) -> None:
    docs = [d for d in load_rendered(converged["render"]) if d["apiVersion"] not in BUILT_IN_GROUPS]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    assert {k: len(v) for k, v in by_kind.items()} == {
        "HostDeviceNetwork": 1,
        "Topology": 1,
        "ResourceFlavor": 1,
        "ClusterQueue": 1,
        "LocalQueue": 2,
    }
    (net,) = by_kind["HostDeviceNetwork"]
    assert net["apiVersion"] == "mellanox.com/v1alpha1" and net["spec"]["resourceName"] == "rdma_bm_gpu_h100_8"
    assert json.loads(net["spec"]["ipam"])["type"] == "whereabouts"
    (topo,) = by_kind["Topology"]
    assert topo["apiVersion"] == "kueue.x-k8s.io/v1alpha1"
    # H100: the shared RDMA model's levels down to the local block, then the host (OKE's own labels)
    assert [lvl["nodeLabel"] for lvl in topo["spec"]["levels"]] == [
        "oci.oraclecloud.com/rdma.hpc_island_id",
        "oci.oraclecloud.com/rdma.network_block_id",
        "oci.oraclecloud.com/rdma.local_block_id",
        "kubernetes.io/hostname",
    ]
    assert topo["metadata"]["name"] == "oci-rdma"
    (flavor,) = by_kind["ResourceFlavor"]
    assert flavor["spec"]["nodeLabels"] == {"node.kubernetes.io/instance-type": "BM.GPU.H100.8"}
    assert flavor["spec"]["topologyName"] == topo["metadata"]["name"]
    (cq,) = by_kind["ClusterQueue"]
    group = cq["spec"]["resourceGroups"][0]
    assert group["flavors"][0]["name"] == flavor["metadata"]["name"]
    quotas = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert (
        quotas["nvidia.com/gpu"] == "16"
        and [r["name"] for r in group["flavors"][0]["resources"]] == group["coveredResources"]
    )
    assert {(q["metadata"]["namespace"], q["spec"]["clusterQueue"]) for q in by_kind["LocalQueue"]} == {
        ("ml-research", cq["metadata"]["name"]),
        ("default", cq["metadata"]["name"]),
    }
    for d in docs:
        assert d["apiVersion"].count("/") == 1 and d["metadata"]["name"]


def test_configuration_change_updates_exactly_that_addon(converged: dict[str, Any]) -> None:
    lab = converged["lab"]
    addons = [{"name": n} for n in ("NodeFeatureDiscovery", "NvidiaGpuOperator", "NvidiaNetworkOperator")]
    addons += [{"name": "CertManager", "configurations": {"numOfReplicas": "2"}}, {"name": "KubernetesMetricsServer"}]
    extra = dict(converged["extra"], oke_addons_addons=addons)
    lab.emulator.reset_counters()
    check = playbook(lab, extra, "--check", "--diff")
    assert check.returncode == 0 and recap(check)["changed"] == 1, check.stdout[-3000:]
    assert '"numOfReplicas": "2"' in check.stdout
    assert writes(lab) == []
    run = playbook(lab, extra)
    assert run.returncode == 0 and recap(run)["changed"] == 1, run.stdout[-3000:]
    assert writes(lab) == [("UpdateAddon", "CertManager")]
    cm = region(lab).addons[region(lab).clusters[0]["id"]]["CertManager"]
    assert cm["configurations"] == [{"key": "numOfReplicas", "value": "2"}] and cm["lifecycleState"] == "ACTIVE"


def test_failed_gpu_operator_fails_with_its_error_and_stops_the_network_operator(tmp_path: Path) -> None:
    message = "nvidia-driver-daemonset: CrashLoopBackOff on oke-0-1-0"
    with running_emulator(tenancy(), tmp_path, addon_delay_s=0.1, addon_failures={"NvidiaGpuOperator": message}) as lab:
        run = playbook(lab)
        assert run.returncode != 0 and recap(run)["failed"] == 1
        assert message in run.stdout
        ops = writes(lab)
        assert ("InstallAddon", "NvidiaGpuOperator") in ops
        assert ("InstallAddon", "NvidiaNetworkOperator") not in ops and ("InstallAddon", "CertManager") not in ops
        # the module alone says the same, with the add-on's state
        rc, out = module(
            lab, "oke_addon", cluster_id=region(lab).clusters[0]["id"], name="NvidiaGpuOperator", poll_interval=0.1
        )
        assert rc != 0 and message in out["msg"] and out["addon"]["lifecycle_state"] == "NEEDS_ATTENTION"


def test_no_managed_addon_while_no_non_gpu_node_is_active(tmp_path: Path) -> None:
    with running_emulator(tenancy(), tmp_path, addon_delay_s=0.1) as lab:
        for pool in region(lab).node_pools:
            if not pool["nodeShape"].startswith("BM.GPU"):
                for node in pool["nodes"]:
                    node["lifecycleState"] = "CREATING"
        run = playbook(lab)
        assert run.returncode != 0 and "has no ACTIVE non-GPU node" in run.stdout
        assert writes(lab) == []


def test_throttled_calls_are_retried(tmp_path: Path) -> None:
    with running_emulator(tenancy(), tmp_path, addon_delay_s=0.1, rate_limit_per_s=2) as lab:
        rc, out = module(
            lab,
            "oke_addon",
            cluster_id=region(lab).clusters[0]["id"],
            name="CertManager",
            version="v1.15.3",
            poll_interval=0.1,
        )
        counts = lab.emulator.counter_snapshot()["by_op"]
        assert rc == 0, out
        assert out["changed"] and out["addon"]["lifecycle_state"] == "ACTIVE"
        assert sum(v for k, v in counts.items() if k.endswith(":429")) > 0, counts
        assert counts["InstallAddon"] - counts.get("InstallAddon:429", 0) == 1


@pytest.fixture(scope="module")
def old_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A cluster on Kubernetes v1.29.1, where the newest add-on versions are not offered."""
    data = tenancy()
    for rdata in data["regions"].values():
        for cluster in rdata["clusters"]:
            cluster["kubernetesVersion"] = "v1.29.1"
    with running_emulator(data, tmp_path_factory.mktemp("oke-old")) as lab:
        yield lab


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"oke_addons_addons": [{"name": "NvidiaGpuOperatr"}]}, "add-on NvidiaGpuOperatr is unknown"),
        (
            {"oke_addons_addons": [{"name": "NvidiaGpuOperator", "version": "v25.3.0"}]},
            "add-on NvidiaGpuOperator version v25.3.0 (offered: v24.9.0)",
        ),
        (
            {"oke_addons_addons": [{"name": "NvidiaGpuOperator", "configurations": {"driver.enabled": False}}]},
            "oke_addons_addons[NvidiaGpuOperator].configurations[driver.enabled] = false",
        ),
        ({"oke_addons_cluster_id": ""}, "oke_addons_cluster_id is missing"),
    ],
    ids=["unknown-addon", "version-not-offered", "non-string-value", "missing-cluster-ocid"],
)
def test_bad_input_fails_before_any_write_naming_the_item(old_cluster: Running, extra: dict, needle: str) -> None:
    old_cluster.emulator.reset_counters()
    run = playbook(old_cluster, extra)
    assert run.returncode != 0
    assert needle in run.stdout, run.stdout[-3000:]
    assert writes(old_cluster) == []


def refusal(lab: Running, **args: Any) -> str:
    """oke_addon on the lab's cluster, counters reset first: it must fail; its message."""
    lab.emulator.reset_counters()
    rc, out = module(lab, "oke_addon", cluster_id=region(lab).clusters[0]["id"], **args)
    assert rc != 0, out
    return out["msg"]


def test_module_refuses_a_non_string_value_before_any_call(old_cluster: Running) -> None:
    msg = refusal(old_cluster, name="CertManager", configurations={"numOfReplicas": 2})
    assert "'numOfReplicas' has a int value 2" in msg
    assert old_cluster.emulator.counter_snapshot()["requests"] == 0


def test_module_refuses_a_version_not_offered_before_any_write(old_cluster: Running) -> None:
    msg = refusal(old_cluster, name="NodeFeatureDiscovery", version="v0.17.2")
    assert "version 'v0.17.2' is not offered for Kubernetes v1.29.1" in msg
    assert writes(old_cluster) == []


def test_cluster_info_writes_a_private_kubeconfig_once(old_cluster: Running) -> None:
    path = old_cluster.workdir / "kube" / "config"
    cid = region(old_cluster).clusters[0]["id"]
    rc, out = module(old_cluster, "oke_cluster_info", cluster_id=cid, kubeconfig_path=str(path))
    assert rc == 0 and out["changed"] and "kubeconfig" not in out
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and "kind: Config" in path.read_text()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert out["nodes"] == {"total": 4, "active": 4, "gpu_active": 2, "non_gpu_active": 2}
    assert out["gpu_shapes"][0]["shape"] == "BM.GPU.H100.8"
    rc, again = module(old_cluster, "oke_cluster_info", cluster_id=cid, kubeconfig_path=str(path), node_pools=False)
    assert rc == 0 and not again["changed"]


def test_the_oci_api_key_never_leaks_at_vvvv(converged: dict[str, Any]) -> None:
    """The OCI API private key as a canary (issue 15): the SDK signs every call with it. A --check
    --diff run, a failing run (a cluster the tenancy does not have, after the key signed its first
    call) and the inventory plugin, all at -vvvv with ANSIBLE_LOG_PATH set; no form of the key in
    their output, the log, Ansible's temp dir or what they wrote under /tmp and /var/tmp."""
    lab = converged["lab"]
    pem = lab.creds.key_file.read_text()
    body = "".join(line for line in pem.splitlines() if "-----" not in line)
    der = base64.b64decode(body)
    key = canary.Canary("oci_api_key", pem, (body.encode(), pem.splitlines()[5].encode(), der, der.hex().encode()))
    pats = canary.patterns([key])
    started = time.time()
    log = lab.workdir / "canary-ansible.log"
    env = {"ANSIBLE_LOG_PATH": str(log)}
    with canary.CmdlineSampler(pats) as sampler:
        runs = [
            _run_with_env(lab, converged["extra"], env, "-vvvv", "--check", "--diff"),
            _run_with_env(
                lab, {**converged["extra"], "oke_addons_cluster_id": "ocid1.cluster.oc1.iad.nosuch"}, env, "-vvvv"
            ),
        ]
        inventory = ansible_inventory(lab.inventory_file("canary"), "-vvvv", env=env)
    assert runs[0].returncode == 0, runs[0].stdout[-3000:]
    assert runs[1].returncode != 0 and "nosuch" in runs[1].stdout, runs[1].stdout[-3000:]
    assert inventory.rc == 0 and '"hostvars"' in inventory.stdout, inventory.stderr[-2000:]
    assert log.stat().st_size > 10_000
    seen = "\n".join(r.stdout + r.stderr for r in runs) + inventory.stdout + inventory.stderr
    hits = [k for k, v in pats.items() if v.decode(errors="replace") in seen]
    scan = canary.scan_here(
        [str(lab.workdir), "/tmp", "/var/tmp"],
        pats,
        since=started - 5,
        skip=(str(REPO), str(lab.creds.key_file.parent)),
    )
    print(
        f"OCI key canary: output {len(seen)} chars, {scan.files} files, {scan.bytes} bytes scanned, "
        f"{len(hits) + len(scan.hits)} hits; /proc/*/cmdline {sampler.samples} samples, {len(sampler.hits)} hits"
    )
    assert scan.files > 0 and not hits and not scan.hits and not sampler.hits, (hits, scan.hits, sampler.hits)


def _run_with_env(lab: Running, extra: dict[str, Any], env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    variables = dict(base_vars(lab), **extra)
    path = lab.workdir / f"vars-canary-{len(list(lab.workdir.glob('vars-canary-*.yml')))}.yml"
    path.write_text(yaml.safe_dump(variables))
    return run_tool("ansible-playbook", str(PLAYBOOK), "-e", f"@{path}", *args, env={**env_for(lab.workdir), **env})


def test_with_tenants_the_shared_queue_joins_their_cohort_without_gpus(converged: dict[str, Any]) -> None:
    """The README's tenants example (oci_gpu_tenants) through both roles: the oke_addons shared queue
    joins the tenants' cohort with no GPUs of its own; the tenants' queues name the flavor oke_addons
    made and hold their GPUs; every built-in object validates offline."""
    lab, workdir = converged["lab"], converged["render"].parent
    tenants = [
        {"name": "physics", "members": ["bob"], "gpus": 6, "oke_iam_group": "ocid1.group.oc1..aaaaphysics"},
        {"name": "chem", "members": ["dave"], "gpus": 4, "tier": "high"},
    ]
    render = workdir / "render-tenants"
    extra = dict(converged["extra"], oke_addons_render_dir=str(render), oci_gpu_tenants=tenants)
    run = playbook(lab, extra, "--tags", "oke_addons_configure")
    assert run.returncode == 0, run.stdout[-3000:]
    (vars_path,) = [p for p in lab.workdir.glob("vars-*.yml") if "render-tenants" in p.read_text()]
    env = env_for(lab.workdir)
    tenants_vars = {
        "tenants_hosts": "localhost",
        "tenants_slurm_enabled": False,
        "tenants_oke_render_dir": str(render),
        "tenants_oke_gpu_shapes": ["BM.GPU.H100.8"],
    }
    tenants_play = str(REPO / "playbooks" / "tenants.yml")
    tenants_run = run_tool(
        "ansible-playbook", tenants_play, "-e", f"@{vars_path}", "-e", json.dumps(tenants_vars), env=env
    )
    assert tenants_run.returncode == 0, tenants_run.stdout[-3000:]
    docs = load_rendered(render)
    queues = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterQueue"}
    assert sorted(queues) == ["gpu", "tenant-chem", "tenant-physics"]
    assert {q["spec"]["cohort"] for q in queues.values()} == {"oci-gpu"}
    (flavor,) = [d["metadata"]["name"] for d in docs if d["kind"] == "ResourceFlavor"]

    def gpus(queue: dict[str, Any]) -> dict[str, str]:
        return {
            f["name"]: next(r["nominalQuota"] for r in f["resources"] if r["name"] == "nvidia.com/gpu")
            for f in queue["spec"]["resourceGroups"][0]["flavors"]
        }

    assert gpus(queues["gpu"]) == {flavor: "0"}
    assert gpus(queues["tenant-physics"]) == {flavor: "6"} and gpus(queues["tenant-chem"]) == {flavor: "4"}
    k8s = region(lab).clusters[0]["kubernetesVersion"]
    target = ".".join(k8s.lstrip("v").split(".")[:2]) + ".0"
    built_in = [d for d in docs if d["apiVersion"] in BUILT_IN_GROUPS | {"rbac.authorization.k8s.io/v1"}]
    assert {d["kind"] for d in built_in} >= {"Namespace", "RoleBinding", "ResourceQuota"}
    for doc in built_in:
        kubernetes_validate.validate(doc, target, strict=True)
