# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tenants role through ansible-playbook on this host: Slurm accounting through the sacctmgr
stand-in (tests/functional/conftest.py; the lab runs it against real slurmdbd), the OKE objects rendered
and validated offline. What it proves: a bad model is refused naming the tenant, the key and the
host before any sacctmgr call; the first run writes QOS, accounts and users; a second run makes no
write (counted at the stand-in); removals happen only when listed; the rendered objects validate
at the Kubernetes version OKE runs, and each tenant's queue holds its GPUs."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from ansible_harness import run_playbook

TENANTS = [
    {
        "name": "physics",
        "members": ["bob", "carol"],
        "gpus": 2,
        "oke_iam_group": "ocid1.group.oc1..aaaaphysics",
        "description": "Physics department",
    },
    {"name": "chem", "members": ["dave", "bob"], "gpus": 8, "tier": "high", "max_wall": "2-00:00:00"},
]


def _play(tmp: Path, extra: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    play = [{"name": "Tenants", "hosts": "all", "gather_facts": False, "roles": [{"role": "oci_gpu.cluster.tenants"}]}]
    # the model's users do not exist on this machine: the member lookup has its own test below
    variables = {
        "tenants_slurm_enabled": True,
        "tenants_check_members": False,
        "tenants_oke_render_dir": str(tmp / "render"),
    }
    variables.update(extra)
    return run_playbook(tmp, play, variables, *args, host="ctl1")


def _changed(out: str) -> int:
    line = next(line for line in out.splitlines() if line.startswith("ctl1"))
    return int(line.split("changed=")[1].split()[0])


def test_a_bad_model_is_refused_before_any_sacctmgr_call(tmp_path: Path, sacctmgr: Any) -> None:
    bad = [dict(TENANTS[0], gpus="two"), dict(TENANTS[1], tier="gold")]
    res = _play(tmp_path, {"oci_gpu_tenants": bad})
    assert res.returncode != 0
    assert "oci_gpu_tenants (as ctl1 sees it): tenant physics: gpus: 'two' is not a whole number" in res.stdout
    assert "tenant chem: tier: 'gold' is not one of tenants_tiers (high, low, standard)" in res.stdout
    assert sacctmgr.calls() == []
    assert not (tmp_path / "render").exists()


def test_a_member_or_group_this_host_does_not_know_is_refused_before_any_sacctmgr_call(
    tmp_path: Path, sacctmgr: Any
) -> None:
    # root and its group are known to every machine's name service; the others to none
    model = [
        {"name": "ops", "members": ["root", "no-such-user-7f3a"], "groups": ["root", "no-such-group-7f3a"], "gpus": 1}
    ]
    res = _play(tmp_path, {"oci_gpu_tenants": model, "tenants_check_members": True})
    assert res.returncode != 0
    assert (
        "oci_gpu_tenants (as ctl1 sees it): tenant ops: members: 'no-such-user-7f3a' is not a user ctl1 knows "
        "(neither its local files nor its directory); "
        "tenant ops: groups: 'no-such-group-7f3a' is not a group ctl1 knows"
    ) in res.stdout, res.stdout
    assert sacctmgr.calls() == []

    known = [{"name": "ops", "members": ["root"], "groups": ["root"], "gpus": 1}]
    res = _play(tmp_path, {"oci_gpu_tenants": known, "tenants_check_members": True})
    assert res.returncode == 0, res.stdout
    assert sorted(sacctmgr.state()["users"]) == ["root"]


def test_slurm_accounting_written_once_then_left_alone(tmp_path: Path, sacctmgr: Any) -> None:
    res = _play(tmp_path, {"oci_gpu_tenants": TENANTS})
    assert res.returncode == 0, res.stdout + res.stderr
    state = sacctmgr.state()
    assert {q: state["qos"][q]["Priority"] for q in ("high", "standard", "low")} == {
        "high": "1000",
        "standard": "100",
        "low": "10",
    }
    physics, chem = state["accounts"]["physics"], state["accounts"]["chem"]
    assert physics["GrpTRES"] == "gres/gpu=2" and physics["QOS"] == "standard" and physics["DefaultQOS"] == "standard"
    assert chem["GrpTRES"] == "gres/gpu=8" and chem["QOS"] == "high" and chem["MaxWall"] == "2-00:00:00"
    assert physics["Share"] == "2" and chem["Share"] == "8"
    users = state["users"]
    assert sorted(users["bob"]["assocs"]) == ["chem", "physics"] and users["bob"]["DefaultAccount"] == "physics"
    assert sorted(users["dave"]["assocs"]) == ["chem"] and sorted(users["carol"]["assocs"]) == ["physics"]
    first = len(sacctmgr.writes())
    assert first > 0

    again = _play(tmp_path, {"oci_gpu_tenants": TENANTS})
    assert again.returncode == 0, again.stdout
    assert _changed(again.stdout) == 0
    assert len(sacctmgr.writes()) == first, sacctmgr.writes()[first:]

    # bob leaves chem: without a removal listed his association stays; listed, it goes
    moved = [TENANTS[0], dict(TENANTS[1], members=["dave"])]
    kept = _play(tmp_path, {"oci_gpu_tenants": moved})
    assert kept.returncode == 0 and sorted(sacctmgr.state()["users"]["bob"]["assocs"]) == ["chem", "physics"]
    gone = _play(tmp_path, {"oci_gpu_tenants": moved, "tenants_remove_users": ["bob", "nobody"]})
    assert gone.returncode == 0, gone.stdout
    assert sorted(sacctmgr.state()["users"]["bob"]["assocs"]) == ["physics"]
    assert "nobody" not in sacctmgr.state()["users"]


def test_check_mode_writes_nothing(tmp_path: Path, sacctmgr: Any) -> None:
    res = _play(tmp_path, {"oci_gpu_tenants": TENANTS}, "--check", "--diff")
    assert res.returncode == 0, res.stdout
    assert _changed(res.stdout) > 0
    assert sacctmgr.writes() == []


def _rendered(tmp: Path) -> list[dict[str, Any]]:
    path = tmp / "render" / "tenants.yaml"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_oke_objects_validate_offline_and_carry_the_quota(tmp_path: Path, sacctmgr: Any) -> None:
    res = _play(tmp_path, {"oci_gpu_tenants": TENANTS, "tenants_oke_gpu_shapes": ["BM.GPU.H100.8"]})
    assert res.returncode == 0, res.stdout
    docs = _rendered(tmp_path)
    by = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}
    for doc in docs:
        if doc["apiVersion"] in ("v1", "rbac.authorization.k8s.io/v1"):
            kubernetes_validate.validate(doc, "1.31.0", strict=True)
    assert sorted(k for k in by if k[0] == "Namespace") == [("Namespace", "", "chem"), ("Namespace", "", "physics")]
    assert by[("Namespace", "", "physics")]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    binding = by[("RoleBinding", "physics", "physics-edit")]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}
    assert binding["subjects"][0]["name"] == "ocid1.group.oc1..aaaaphysics"
    assert not [k for k in by if k[0] == "RoleBinding" and k[1] == "chem"]  # chem names no IAM group
    assert by[("ResourceQuota", "physics", "gpu-quota")]["spec"]["hard"] == {"requests.nvidia.com/gpu": "2"}
    assert by[("ResourceQuota", "chem", "gpu-quota")]["spec"]["hard"] == {"requests.nvidia.com/gpu": "8"}
    queues = {n: d for (k, _ns, n), d in by.items() if k == "ClusterQueue"}
    assert sorted(queues) == ["tenant-chem", "tenant-physics"]
    assert {q["spec"]["cohort"] for q in queues.values()} == {"oci-gpu"}
    (flavor,) = queues["tenant-physics"]["spec"]["resourceGroups"][0]["flavors"]
    # an H100.8 host: 112 OCPUs (224 vCPUs), 2048 GB, 8 GPUs -> per GPU 28 CPUs and 256 Gi
    assert flavor == {
        "name": "bm-gpu-h100-8",
        "resources": [
            {"name": "cpu", "nominalQuota": "56"},
            {"name": "memory", "nominalQuota": "512Gi"},
            {"name": "nvidia.com/gpu", "nominalQuota": "2"},
        ],
    }
    assert queues["tenant-physics"]["spec"]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "physics"}
    }
    assert by[("LocalQueue", "chem", "gpu")]["spec"] == {"clusterQueue": "tenant-chem"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"tenants_oke_gpu_shapes": ["BM.GPU.H100.8", "BM.GPU.A100-v2.8"]},
            "tenant physics: the OKE cluster has several GPU shapes (BM.GPU.H100.8, BM.GPU.A100-v2.8): "
            "say how the quota splits with gpus_by_shape",
        ),
        ({"tenants_remove": ["chem"]}, "tenants_remove: 'chem' is still in oci_gpu_tenants"),
        ({"tenants_oke_apply": True}, "tenants_oke_apply is true on ctl1 but tenants_oke_kubeconfig is empty"),
    ],
)
def test_oke_and_removal_inputs_are_refused(tmp_path: Path, sacctmgr: Any, extra: dict, message: str) -> None:
    res = _play(tmp_path, {"oci_gpu_tenants": TENANTS, **extra})
    assert res.returncode != 0
    assert message in res.stdout
    assert sacctmgr.calls() == []
