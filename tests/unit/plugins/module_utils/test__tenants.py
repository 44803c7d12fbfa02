# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The tenants model: every problem named by tenant and key, and the plan (expected values written out)."""

from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.tenants._tenants import flavor_name, plan

TIERS = {"high": {"priority": 1000, "max_gpus_per_user": 4}, "standard": {"priority": 100, "max_wall": "1-00:00:00"}}
PHYSICS = {"name": "physics", "members": ["bob", "carol"], "gpus": 2}
CHEM = {"name": "Chem_Lab", "members": ["dave", "bob"], "gpus": 8, "tier": "high", "fairshare": 50}


def test_slurm_plan() -> None:
    out = plan([PHYSICS, CHEM], TIERS, remove_users=["erin", "carol"], remove_tenants=["old"])
    assert out["problems"] == []
    slurm = out["slurm"]
    assert slurm["qos"] == [
        {"name": "high", "priority": 1000, "max_wall": "-1", "max_tres_per_user": {"gres/gpu": 4}, "flags": []},
        {"name": "standard", "priority": 100, "max_wall": "1-00:00:00", "max_tres_per_user": {}, "flags": []},
    ]
    assert slurm["accounts"] == [
        {
            "name": "physics",
            "description": "tenant physics",
            "organization": "physics",
            "fairshare": 2,
            "qos": ["standard"],
            "default_qos": "standard",
            "grp_tres": {"gres/gpu": 2},
            "max_wall": "-1",
        },
        {
            "name": "chem_lab",
            "description": "tenant chem_lab",
            "organization": "chem_lab",
            "fairshare": 50,
            "qos": ["high"],
            "default_qos": "high",
            "grp_tres": {"gres/gpu": 8},
            "max_wall": "-1",
        },
    ]
    assert slurm["users"] == [
        {"name": "bob", "accounts": ["physics", "chem_lab"], "default_account": "physics", "remove_accounts": []},
        # carol is listed for removal but still a physics member: only the other model accounts go
        {
            "name": "carol",
            "accounts": ["physics"],
            "default_account": "physics",
            "remove_accounts": ["chem_lab", "old"],
        },
        {"name": "dave", "accounts": ["chem_lab"], "default_account": "chem_lab", "remove_accounts": []},
        {"name": "erin", "accounts": [], "default_account": None, "remove_accounts": ["chem_lab", "old", "physics"]},
    ]
    assert slurm["remove_accounts"] == ["old"]


def test_a_tenant_with_zero_gpus_gets_one_share() -> None:
    out = plan([dict(PHYSICS, gpus=0)], TIERS)
    assert out["slurm"]["accounts"][0]["fairshare"] == 1 and out["slurm"]["accounts"][0]["grp_tres"] == {"gres/gpu": 0}


def test_oke_plan_splits_by_shape() -> None:
    out = plan(
        [dict(CHEM, namespace="chem", gpus_by_shape={"BM.GPU.H100.8": 6, "BM.GPU.A100-v2.8": 2})],
        TIERS,
        gpu_shapes=["BM.GPU.H100.8", "BM.GPU.A100-v2.8"],
        cohort="research",
    )
    assert out["problems"] == []
    kinds = [(o["kind"], o["metadata"]["name"]) for o in out["oke"]["objects"]]
    assert kinds == [
        ("Namespace", "chem"),
        ("ResourceQuota", "gpu-quota"),
        ("ClusterQueue", "tenant-chem-lab"),
        ("LocalQueue", "gpu"),
    ]
    queue = out["oke"]["objects"][2]
    assert queue["spec"]["cohort"] == "research"
    flavors = {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
        for f in queue["spec"]["resourceGroups"][0]["flavors"]
    }
    # A100-v2.8: 128 OCPUs (256 vCPUs), 2048 GB, 8 GPUs; H100.8: 112 OCPUs, 2048 GB, 8 GPUs
    assert flavors == {
        "bm-gpu-a100-v2-8": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "2"},
        "bm-gpu-h100-8": {"cpu": "168", "memory": "1536Gi", "nvidia.com/gpu": "6"},
    }
    assert out["oke"]["gpus_by_shape"] == {"BM.GPU.A100-v2.8": 2, "BM.GPU.H100.8": 6}


def test_flavor_name_matches_the_oke_addons_role() -> None:
    assert flavor_name("BM.GPU.H100.8") == "bm-gpu-h100-8"


@pytest.mark.parametrize(
    ("tenants", "kwargs", "problem"),
    [
        ([dict(PHYSICS, gpu=2)], {}, "tenant physics: unknown key 'gpu'"),
        ([{"name": "x", "members": []}], {}, "tenant x: gpus is required"),
        ([dict(PHYSICS, members=["Bob"])], {}, "tenant physics: members: 'Bob' is not a login name"),
        ([dict(PHYSICS, members=["bob", "bob"])], {}, "tenant physics: members: listed twice: bob"),
        ([dict(PHYSICS, gpus=True)], {}, "tenant physics: gpus: True is not a whole number"),
        ([dict(PHYSICS, tier="gold")], {}, "tenant physics: tier: 'gold' is not one of tenants_tiers (high, standard)"),
        ([dict(PHYSICS, max_wall="2 days")], {}, "tenant physics: max_wall: '2 days' is not a Slurm time"),
        (
            [dict(PHYSICS, namespace="kube-system")],
            {},
            "tenant physics: namespace: 'kube-system' belongs to Kubernetes",
        ),
        (
            [dict(PHYSICS, oke_iam_group="physicists")],
            {},
            "tenant physics: oke_iam_group: 'physicists' is not an IAM group OCID",
        ),
        (
            [dict(PHYSICS, gpus_by_shape={"BM.GPU.H100.8": 1})],
            {},
            "tenant physics: gpus_by_shape adds up to 1, not gpus=2",
        ),
        ([dict(PHYSICS, gpus_by_shape={"VM.Standard.E5.Flex": 2})], {}, "'VM.Standard.E5.Flex' is not a GPU shape"),
        ([PHYSICS, dict(PHYSICS, members=[])], {}, "tenant physics: name 'physics' is also tenant physics's"),
        (
            [PHYSICS, dict(CHEM, namespace="physics")],
            {},
            "tenant Chem_Lab: namespace 'physics' is also tenant physics's",
        ),
        ([PHYSICS], {"remove_tenants": ["physics"]}, "tenants_remove: 'physics' is still in oci_gpu_tenants"),
        ([PHYSICS], {"remove_users": ["Bad User"]}, "tenants_remove_users: 'Bad User' is not a valid name"),
        ([PHYSICS], {"gpu_shapes": ["BM.GPU.NOPE"]}, "tenants_oke_gpu_shapes: 'BM.GPU.NOPE' is not a GPU shape"),
        ([PHYSICS], {"cohort": "Bad Cohort"}, "tenants_oke_cohort: 'Bad Cohort' is not a Kueue cohort name"),
        ({"physics": PHYSICS}, {}, "oci_gpu_tenants must be a list of tenants, got dict"),
    ],
)
def test_problems_name_the_tenant_and_key(tenants, kwargs, problem) -> None:
    out = plan(tenants, TIERS, **kwargs)
    assert any(problem in p for p in out["problems"]), out["problems"]
    assert out["slurm"] == {} and out["oke"] == {}


def test_bad_tiers_are_named() -> None:
    out = plan([PHYSICS], {"standard": {"priority": "high", "max_gpus": 2}})
    assert out["problems"] == [
        "tenants_tiers.standard: unknown key 'max_gpus' (known: flags, max_gpus_per_user, max_wall, priority)",
        "tenants_tiers.standard.priority: 'high' is not a whole number",
    ]


DORA = {"uid": 20001, "gid": 20001, "home": "/home/dora"}


def test_the_plan_says_what_to_look_up_and_groups_add_their_members_on_slurm() -> None:
    research = {"name": "research", "members": ["dora"], "groups": ["gpu-research"], "gpus": 1}
    first = plan([research, PHYSICS], TIERS, directory={"host": "ctl", "users": {}, "groups": {}})
    assert first["lookup"] == {"users": ["bob", "carol", "dora"], "groups": ["gpu-research"]}
    directory = {
        "host": "ctl",
        "users": {"dora": DORA, "bob": DORA, "carol": DORA, "erin": DORA},
        "groups": {"gpu-research": {"gid": 20100, "members": ["erin", "dora"]}},
    }
    out = plan([research, PHYSICS], TIERS, directory=directory)
    assert out["problems"] == []
    assert [(u["name"], u["accounts"]) for u in out["slurm"]["users"]] == [
        ("bob", ["physics"]),
        ("carol", ["physics"]),
        ("dora", ["research"]),
        ("erin", ["research"]),
    ]


def test_unknown_members_and_groups_are_refused_by_name_and_host() -> None:
    research = {"name": "research", "members": ["dora", "zed"], "groups": ["gpu-research", "nope"], "gpus": 1}
    directory = {
        "host": "slurm-bw-ctl",
        "users": {"dora": DORA, "zed": None, "ghost": None},
        "groups": {"gpu-research": {"gid": 20100, "members": ["ghost"]}, "nope": None},
    }
    out = plan([research], TIERS, directory=directory)
    assert out["problems"] == [
        "tenant research: members: 'zed' is not a user slurm-bw-ctl knows (neither its local files nor its directory)",
        "tenant research: groups: 'gpu-research' lists 'ghost', who is not a user slurm-bw-ctl knows",
        "tenant research: groups: 'nope' is not a group slurm-bw-ctl knows",
    ]
    assert out["slurm"] == {}


def test_without_a_directory_lookup_groups_are_not_expanded() -> None:
    out = plan([{"name": "research", "members": ["dora"], "groups": ["gpu-research"], "gpus": 1}], TIERS)
    assert out["problems"] == []
    assert [u["name"] for u in out["slurm"]["users"]] == ["dora"]
    bad = plan([{"name": "research", "members": [], "groups": "gpu-research", "gpus": 1}], TIERS)
    assert bad["problems"] == ["tenant research: groups: a list of directory group names, got 'gpu-research'"]
