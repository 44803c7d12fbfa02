# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The oci_gpu.cluster.oci inventory: its pure functions, and the fetch against fake APIs (the real
plugin through ansible-inventory: tests/functional/plugins/inventory/test_oci.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ansible_collections.oci_gpu.cluster.plugins.plugin_utils import _oci_inventory as inv
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils import _oci_inventory_hosts as _hosts

T = "ocid1.tenancy.oc1..root"


# ---------------------------------------------------------------------------------------------
# Pure functions
# ---------------------------------------------------------------------------------------------
def comp(cid: str, parent: str, name: str, state: str = "ACTIVE") -> dict[str, Any]:
    return {"id": cid, "compartment_id": parent, "name": name, "lifecycle_state": state}


TREE = [
    comp("c1", T, "prod"),
    comp("c2", "c1", "prod-gpu"),
    comp("c3", "c2", "prod-gpu-a"),
    comp("c4", T, "sandbox"),
    comp("c5", "c4", "sandbox-x"),
    comp("c6", T, "old", "DELETED"),
]


@pytest.mark.parametrize(
    "roots,subtree,exclude,expected",
    [
        (None, True, None, {T, "c1", "c2", "c3", "c4", "c5"}),
        (None, False, None, {T}),
        (["c1"], True, None, {"c1", "c2", "c3"}),
        (["c1", "c4"], False, None, {"c1", "c4"}),
        (None, True, ["sandbox"], {T, "c1", "c2", "c3"}),
        (None, True, ["c2"], {T, "c1", "c4", "c5"}),
    ],
)
def test_select_compartments(roots: Any, subtree: bool, exclude: Any, expected: set[str]) -> None:
    got = inv.select_compartments(T, TREE, roots, subtree, exclude)
    assert {c["id"] for c in got} == expected


def test_matches_dotted_lists_and_prefix() -> None:
    hv = {"oci_shape": "BM.GPU.H100.8", "oci_gpus": 8, "oci_freeform_tags": {"slurm_role": "compute"}}
    assert inv.matches(hv, {"shape": "BM.GPU.H100.8"})
    assert inv.matches(hv, {"oci_gpus": [4, 8]})
    assert inv.matches(hv, {"freeform_tags.slurm_role": "compute"})
    assert not inv.matches(hv, {"freeform_tags.slurm_role": "login"})
    assert not inv.matches(hv, {"oci_gpus": 4, "shape": "BM.GPU.H100.8"})
    assert not inv.matches(hv, {"no_such": "x"})


def _hv(**kw: Any) -> dict[str, Any]:
    base = {
        "oci_gpus": 8,
        "oci_shape": "BM.GPU.H100.8",
        "oci_region": "us-ashburn-1",
        "oci_availability_domain": "Uocm:US-ASHBURN-AD-1",
        "oci_gpu_model": "h100",
        "oci_display_name": "n1",
        "oci_freeform_tags": {},
    }
    base.update(kw)
    return base


def test_default_groups_gpu_topology_and_slurm_roles() -> None:
    warnings: list[str] = []
    groups = inv.default_group_names(
        _hv(
            oci_cluster_network_name="cn-a",
            oci_cluster_network_id="ocid1.clusternetwork.oc1.iad.x",
            oci_instance_pool_id="ocid1.instancepool.oc1.iad.abc",
            oci_instance_pool_name="pool-a",
            oci_hpc_island_id="ocid1.computehpcisland.oc1.iad.aaaaislandid0001",
            oci_network_block_id="ocid1.computenetworkblock.oc1.iad.aaaablockid00002",
            oci_local_block_id="ocid1.computelocalblock.oc1.iad.aaaalocalblk0003",
            oci_gpu_memory_fabric_id="ocid1.computegpumemoryfabric.oc1.iad.aaaanvl72fab0004",
            oci_defined_tags={"oci-gpu": {"slurm-role": "compute, login bogus"}},
        ),
        warnings.append,
    )
    assert groups[:2] == ["oci", "gpu"]
    for g in (
        "shape_BM_GPU_H100_8",
        "region_us_ashburn_1",
        "ad_us_ashburn_ad_1",
        "gpu_h100",
        "cluster_network_cn_a",
        "instance_pool_pool_a",
        "hpc_island_islandid0001",
        "network_block_blockid00002",
        "local_block_localblk0003",
        "gpu_memory_fabric_nvl72fab0004",
        "slurm_compute",
        "slurm_login",
    ):
        assert g in groups
    assert len(warnings) == 1 and "bogus" in warnings[0]
    # tag namespaces and keys are case-insensitive in OCI
    cpu = inv.default_group_names(
        _hv(oci_gpus=0, oci_gpu_model=None, oci_defined_tags={"OCI-GPU": {"Slurm-Role": "controller"}})
    )
    assert "cpu" in cpu and "gpu" not in cpu and "slurm_controller" in cpu


SLURM_GROUPS = ("slurm_controller", "slurm_dbd", "slurm_compute", "slurm_login")


def _tagged(name: str, defined: dict[str, Any] | None = None, freeform: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": f"ocid1.instance.oc1.iad.{name}",
        "display_name": name,
        "shape": "BM.GPU.H100.8",
        "lifecycle_state": "RUNNING",
        "compartment_id": "c1",
        "availability_domain": "Uocm:US-ASHBURN-AD-1",
        "freeform_tags": freeform or {},
        "defined_tags": {"oci-gpu": defined} if defined else {},
    }


def _slurm(instances: list[dict[str, Any]], **opts: Any) -> tuple[dict[str, set[str]], list[str]]:
    warnings: list[str] = []
    ips = {i["id"]: f"10.0.0.{n + 1}" for n, i in enumerate(instances)}
    hosts = inv.build_hosts(_raw(instances, ips), {"hostnames": ["display_name"], **opts}, warnings.append)
    return {h["name"]: {g for g in h["groups"] if g in SLURM_GROUPS} for h in hosts}, warnings


def test_a_freeform_role_tag_alone_gives_no_slurm_group_and_says_so() -> None:
    # the attack of issue 15: anyone who may update an instance can set a freeform tag
    groups, warnings = _slurm(
        [
            _tagged("ctl", {"slurm-role": "controller,dbd", "cluster": "a"}),
            _tagged("rogue", freeform={"slurm_role": "login"}),
        ]
    )
    assert groups == {"ctl": {"slurm_controller", "slurm_dbd"}, "rogue": set()}
    assert len(warnings) == 1 and "rogue" in warnings[0] and "freeform_slurm_roles" in warnings[0]


def test_freeform_roles_only_with_the_opt_in_and_a_warning_once() -> None:
    instances = [
        _tagged("ctl", {"slurm-role": "controller"}),
        _tagged("old1", freeform={"slurm_role": "compute"}),
        _tagged("old2", freeform={"slurm_role": "compute"}),
        # the defined tag wins over a freeform one on the same host
        _tagged("both", {"slurm-role": "compute"}, freeform={"slurm_role": "login"}),
    ]
    groups, warnings = _slurm(instances, freeform_slurm_roles=True)
    assert groups == {
        "ctl": {"slurm_controller"},
        "old1": {"slurm_compute"},
        "old2": {"slurm_compute"},
        "both": {"slurm_compute"},
    }
    assert len(warnings) == 1
    assert "old1, old2" in warnings[0] and "2 host(s)" in warnings[0] and "both" not in warnings[0]


def test_an_elastic_agents_instance_is_in_slurm_elastic_never_slurm_compute() -> None:
    """The elastic agent tags its launches ``slurm-role: elastic``: a slurm playbook run while one is up
    must not take it for a static compute host (its plan refuses a node that is both)."""
    warnings: list[str] = []
    ips = {"ocid1.instance.oc1.iad.eh-1": "10.0.0.9", "ocid1.instance.oc1.iad.gpu1": "10.0.0.8"}
    instances = [
        _tagged("eh-1", {"slurm-role": "elastic", "cluster": "a"}),
        _tagged("gpu1", {"slurm-role": "compute", "cluster": "a"}),
    ]
    hosts = inv.build_hosts(_raw(instances, ips), {"hostnames": ["display_name"]}, warnings.append)
    groups = {h["name"]: set(h["groups"]) for h in hosts}
    assert "slurm_elastic" in groups["eh-1"] and not groups["eh-1"] & set(SLURM_GROUPS)
    assert "slurm_compute" in groups["gpu1"] and warnings == []


def test_two_clusters_in_one_tenancy_stay_apart() -> None:
    instances = [
        _tagged("a-ctl", {"slurm-role": "controller", "cluster": "a"}),
        _tagged("a-gpu", {"slurm-role": "compute", "cluster": "a"}),
        _tagged("b-ctl", {"slurm-role": "controller", "cluster": "b"}),
        _tagged("b-gpu", {"slurm-role": "compute", "cluster": "b"}),
        _tagged("stray", {"slurm-role": "login"}),
        _tagged("plain"),
    ]
    groups, warnings = _slurm(instances, cluster="a")
    assert groups == {
        "a-ctl": {"slurm_controller"},
        "a-gpu": {"slurm_compute"},
        "b-ctl": set(),
        "b-gpu": set(),
        "stray": set(),
        "plain": set(),
    }
    # the other cluster is expected in a shared tenancy; a role without any cluster is worth a word
    assert len(warnings) == 1 and "stray" in warnings[0] and "b-ctl" not in warnings[0]
    # the freeform opt-in still needs the defined cluster tag
    ff = [_tagged("ff", {"cluster": "b"}, freeform={"slurm_role": "login"})]
    assert _slurm([*instances[:2], *ff], cluster="a", freeform_slurm_roles=True)[0]["ff"] == set()
    # without a scope, two clusters fail the inventory by name instead of merging
    with pytest.raises(inv.InventoryError, match=r"2 clusters \(a: a-ctl, a-gpu; b: b-ctl, b-gpu\).*option cluster"):
        _slurm(instances[:4])
    with pytest.raises(inv.InventoryError, match=r"\(no oci-gpu.cluster tag\): stray"):
        _slurm([*instances[:2], instances[4]])
    # one cluster (or none at all) needs no scope
    assert _slurm(instances[:2])[0]["a-gpu"] == {"slurm_compute"}


def test_role_and_cluster_tags_are_configurable_and_checked() -> None:
    inst = {**_tagged("n1"), "defined_tags": {"hpc": {"role": "compute", "site": "x"}}}
    groups = _slurm([inst], slurm_role_tag="hpc.role", cluster_tag="hpc.site", cluster="x")[0]
    assert groups == {"n1": {"slurm_compute"}}
    for bad in ("slurm-role", "oci-gpu.", "a.b.c", "oci gpu.role"):
        with pytest.raises(inv.InventoryError, match=r"slurm_role_tag: .* <tag namespace>\.<tag key>"):
            _slurm([inst], slurm_role_tag=bad)


def _raw(instances: list[dict[str, Any]], ips: dict[str, str] | None = None) -> dict[str, Any]:
    ips = ips or {}
    atts = [
        {
            "instance_id": i["id"],
            "vnic_id": "v-" + i["id"],
            "subnet_id": "s1",
            "lifecycle_state": "ATTACHED",
            "nic_index": 0,
        }
        for i in instances
        if i["id"] in ips
    ]
    pips = [
        {
            "id": "p-" + iid,
            "vnic_id": "v-" + iid,
            "ip_address": ip,
            "hostname_label": None,
            "is_primary": True,
            "subnet_id": "s1",
        }
        for iid, ip in ips.items()
    ]
    return {
        "tenancy": T,
        "regions": ["r1"],
        "compartments": {},
        "per_region": {
            "r1": {
                "instances": instances,
                "attachments": atts,
                "private_ips": pips,
                "subnets": {},
                "compute_hosts": [],
                "pools": {},
                "public_ips": {},
            }
        },
    }


def _inst(iid: str, name: str | None, state: str = "RUNNING", shape: str = "BM.GPU.H100.8") -> dict[str, Any]:
    return {
        "id": iid,
        "display_name": name,
        "lifecycle_state": state,
        "shape": shape,
        "compartment_id": "c1",
        "shape_config": {"gpus": 8 if "GPU" in shape else 0},
        "freeform_tags": {},
    }


def test_hostnames_preference_for_private_only_hosts() -> None:
    raw = _raw([_inst("i1", None), _inst("i2", "gpu-2")], {"i1": "10.0.0.1", "i2": "10.0.0.2"})
    hosts = inv.build_hosts(raw, {"hostnames": ["public_ip", "hostname_label", "private_ip"], "lifecycle_states": []})
    assert [h["name"] for h in hosts] == ["10.0.0.1", "10.0.0.2"]
    assert all(h["vars"]["ansible_host"] == h["vars"]["oci_private_ip"] for h in hosts)
    hosts = inv.build_hosts(raw, {})
    assert [h["name"] for h in hosts] == ["10.0.0.1", "gpu-2"]


def test_instance_without_private_ip_is_kept_and_reported() -> None:
    warnings: list[str] = []
    raw = _raw([_inst("i1", "a"), _inst("i2", "b")], {"i1": "10.0.0.1"})
    hosts = inv.build_hosts(raw, {}, warnings.append)
    assert [h["name"] for h in hosts] == ["a", "b"]
    assert any("no private IP" in w and "i2" in w for w in warnings)


def test_duplicate_hostnames_fail_unless_allowed() -> None:
    raw = _raw([_inst("i1", "same"), _inst("i2", "same")], {"i1": "10.0.0.1", "i2": "10.0.0.2"})
    with pytest.raises(inv.InventoryError, match="duplicate hostnames: same"):
        inv.build_hosts(raw, {"hostnames": ["display_name"]})
    warnings: list[str] = []
    hosts = inv.build_hosts(raw, {"hostnames": ["display_name"], "allow_duplicate_hostnames": True}, warnings.append)
    assert len(hosts) == 2 and warnings


def test_lifecycle_and_include_exclude_filters() -> None:
    raw = _raw(
        [_inst("i1", "a"), _inst("i2", "b", "STOPPED"), _inst("i3", "c", shape="VM.Standard.E5.Flex")],
        {"i1": "10.0.0.1", "i2": "10.0.0.2", "i3": "10.0.0.3"},
    )

    def names(o: dict[str, Any]) -> list[str]:
        return [h["name"] for h in inv.build_hosts(raw, o)]

    assert names({"lifecycle_states": ["RUNNING"]}) == ["a", "c"]
    assert names({"lifecycle_states": []}) == ["a", "b", "c"]
    assert names({"lifecycle_states": [], "include_filters": [{"gpus": 8}]}) == ["a", "b"]
    assert names({"lifecycle_states": [], "exclude_filters": [{"lifecycle_state": "STOPPED"}]}) == ["a", "c"]


class FakeApi:
    """An in-memory Api; ``fail`` maps (call, scope) to a CallFailed."""

    tenancy = T
    home_region = "r1"

    def __init__(self, fail: dict[tuple[str, str], inv.CallFailed] | None = None) -> None:
        self.fail = fail or {}
        self.calls: list[tuple[str, str]] = []

    def _hit(self, call: str, scope: str) -> None:
        self.calls.append((call, scope))
        if (call, scope) in self.fail:
            raise self.fail[(call, scope)]

    def region_subscriptions(self) -> list[str]:
        self._hit("ListRegionSubscriptions", T)
        return ["r1"]

    def compartments(self) -> list[dict[str, Any]]:
        self._hit("ListCompartments", T)
        return [comp("c1", T, "prod"), comp("c2", T, "empty")]

    def list_instances(self, region: str, cid: str, state: str | None, filters: Any = None) -> list[dict[str, Any]]:
        self._hit("ListInstances", cid)
        self.filters = filters
        return [_inst("i1", "a")] if cid == "c1" else []

    def list_vnic_attachments(self, region: str, cid: str, ad: str | None = None) -> list[dict[str, Any]]:
        self._hit("ListVnicAttachments", cid)
        return [{"instance_id": "i1", "vnic_id": "v1", "subnet_id": "s1", "lifecycle_state": "ATTACHED"}]

    def list_private_ips(self, region: str, sid: str) -> list[dict[str, Any]]:
        self._hit("ListPrivateIps", sid)
        return [{"id": "p1", "vnic_id": "v1", "ip_address": "10.0.0.1", "is_primary": True, "subnet_id": sid}]

    def get_subnet(self, region: str, sid: str) -> dict[str, Any]:
        self._hit("GetSubnet", sid)
        return {"id": sid, "prohibit_public_ip_on_vnic": True, "subnet_domain_name": "s1.vcn.oraclevcn.com"}

    def list_compute_hosts(self, region: str, cid: str, subtree: bool) -> list[dict[str, Any]]:
        self._hit("ListComputeHosts", cid)
        return [{"id": "h1", "instance_id": "i1", "hpc_island_id": "ocid1.x.island1", "network_block_id": None}]


def test_fetch_uses_list_calls_only_and_skips_empty_compartments() -> None:
    api = FakeApi()
    raw = inv.fetch(api, {"lifecycle_states": ["RUNNING"]})
    calls = [c for c, _scope in api.calls]
    assert calls.count("ListInstances") == 3  # root, c1, c2
    assert api.calls.count(("ListVnicAttachments", "c1")) == 1 and calls.count("ListVnicAttachments") == 1
    assert ("ListPrivateIps", "s1") in api.calls and ("ListComputeHosts", T) in api.calls
    hosts = inv.build_hosts(raw, {})
    assert hosts[0]["vars"]["oci_private_ip"] == "10.0.0.1"
    assert "oci_fqdn" not in hosts[0]["vars"]  # no hostname label: no FQDN, and unset vars are left out
    assert "hpc_island_island1" in hosts[0]["groups"]


def test_fabric_groups_of_ids_with_one_tail_are_hashed_apart() -> None:
    tail = "sharedtail01"
    hosts = [
        {"name": n, "all_vars": {"oci_local_block_id": f"ocid1.computelocalblock.oc1.{r}.aaaa{tail}"}, "groups": []}
        for n, r in (("a", "iad"), ("b", "phx"))
    ]
    hosts.append({"name": "c", "all_vars": {"oci_local_block_id": "ocid1.x.oc1.iad.aaaaother0000001"}, "groups": []})
    for h in hosts:
        h["groups"] = inv.default_group_names({"oci_region": "r", **h["all_vars"]})
    assert "local_block_" + tail in hosts[0]["groups"] and "local_block_" + tail in hosts[1]["groups"]
    _hosts._fabric_names_apart(hosts)
    blocks = [[g for g in h["groups"] if g.startswith("local_block_")] for h in hosts]
    assert blocks[2] == ["local_block_other0000001"]
    hashed = re.compile(r"local_block_[0-9a-f]{12}")
    assert blocks[0] != blocks[1] and all(len(b) == 1 and hashed.fullmatch(b[0]) for b in blocks[:2])


def test_fetch_strict_names_region_compartment_and_call() -> None:
    api = FakeApi({("ListInstances", "c2"): inv.CallFailed(500, "InternalServerError", "boom")})
    with pytest.raises(inv.InventoryError, match=r"region r1 c2: ListInstances failed \(500\)"):
        inv.fetch(api, {})


def test_fetch_partial_warns_and_keeps_the_rest() -> None:
    api = FakeApi({("ListInstances", "c2"): inv.CallFailed(404, "NotAuthorizedOrNotFound", "nope")})
    warnings: list[str] = []
    raw = inv.fetch(api, {"allow_partial": True}, warnings.append)
    assert len(raw["errors"]) == 1 and warnings == []
    hosts = inv.build_hosts(raw, {"allow_partial": True}, warnings.append)
    assert [h["name"] for h in hosts] == ["a"]
    assert len(warnings) == 1 and "c2" in warnings[0] and "partial inventory (allow_partial)" in warnings[0]
    # The same raw data again (as the cache serves it) warns again; without allow_partial it fails.
    inv.build_hosts(raw, {"allow_partial": True}, warnings.append)
    assert len(warnings) == 2 and warnings[1] == warnings[0]
    with pytest.raises(inv.InventoryError, match=r"region r1 c2: ListInstances failed \(404\).*allow_partial: true"):
        inv.build_hosts(raw, {})


def test_fetch_401_fails_at_once() -> None:
    api = FakeApi({("ListInstances", "c1"): inv.CallFailed(401, "NotAuthenticated", "bad key")})
    with pytest.raises(inv.AuthFailure, match="401"):
        inv.fetch(api, {"allow_partial": True})


def test_extended_hostvars_are_computed_but_exported_only_on_request() -> None:
    raw = _raw([_inst("i1", "a")], {"i1": "10.0.0.1"})
    core = inv.build_hosts(raw, {})[0]
    assert "oci_gpu_model" not in core["vars"] and core["all_vars"]["oci_gpu_model"] == "h100"
    assert set(core["vars"]) <= inv.CORE_HOSTVARS
    full = inv.build_hosts(raw, {"extended_hostvars": True})[0]
    assert full["vars"]["oci_gpu_model"] == "h100"


class PoolApi(FakeApi):
    """c1 holds i1..i4 launched from configurations; pools and cluster networks as given."""

    def __init__(self, cns: list[dict[str, Any]], pools: list[dict[str, Any]], members: dict[str, list[str]]) -> None:
        super().__init__()
        self.cns, self.pools, self.members = cns, pools, members

    def list_instances(self, region: str, cid: str, state: str | None, filters: Any = None) -> list[dict[str, Any]]:
        self._hit("ListInstances", cid)
        if cid != "c1":
            return []
        out = []
        for n, cfg in enumerate(["cfgA", "cfgA", "cfgB", None], start=1):
            i = _inst(f"i{n}", f"h{n}")
            i["instance_configuration_id"] = cfg
            out.append(i)
        return out

    def list_vnic_attachments(self, region: str, cid: str, ad: str | None = None) -> list[dict[str, Any]]:
        self._hit("ListVnicAttachments", cid)
        return []

    def list_cluster_networks(self, region: str, cid: str) -> list[dict[str, Any]]:
        self._hit("ListClusterNetworks", cid)
        return self.cns

    def list_instance_pools(self, region: str, cid: str) -> list[dict[str, Any]]:
        self._hit("ListInstancePools", cid)
        return self.pools

    def list_instance_pool_instances(self, region: str, cid: str, pool: str) -> list[str]:
        self._hit("ListInstancePoolInstances", pool)
        return self.members[pool]


def _pool(pid: str, cfg: str, size: int) -> dict[str, Any]:
    return {
        "id": pid,
        "display_name": pid,
        "instance_configuration_id": cfg,
        "size": size,
        "lifecycle_state": "RUNNING",
    }


def _groups(api: PoolApi, **opts: Any) -> dict[str, list[str]]:
    raw = inv.fetch(api, {"compute_hosts": False, **opts})
    return {
        h["name"]: sorted(g for g in h["groups"] if g.startswith(("instance_pool", "cluster_network")))
        for h in inv.build_hosts(raw, {}, lambda m: None)
    }


def test_pool_membership_by_configuration_skips_per_pool_calls() -> None:
    pa, pb = _pool("pA", "cfgA", 2), _pool("pB", "cfgB", 4)
    api = PoolApi(
        [{"id": "cn1", "display_name": "cn1", "instance_pools": [pa]}], [pa, pb], {"pA": ["i1", "i2"], "pB": ["i3"]}
    )
    groups = _groups(api)
    assert groups["h1"] == groups["h2"] == ["cluster_network_cn1", "instance_pool_pA"]
    assert groups["h3"] == ["instance_pool_pB"] and groups["h4"] == []
    calls = [c for c, _scope in api.calls]
    assert "ListInstancePoolInstances" not in calls and calls.count("ListInstancePools") == 1


def test_pool_membership_falls_back_to_member_lists_when_ambiguous() -> None:
    # two pools share cfgA: only their member lists can tell which host is where
    pa, pa2 = _pool("pA", "cfgA", 1), _pool("pA2", "cfgA", 1)
    api = PoolApi(
        [{"id": "cn1", "display_name": "cn1", "instance_pools": [pa, pa2]}], [], {"pA": ["i1"], "pA2": ["i2"]}
    )
    groups = _groups(api)
    assert groups["h1"] == ["cluster_network_cn1", "instance_pool_pA"]
    assert groups["h2"] == ["cluster_network_cn1", "instance_pool_pA2"]
    assert [c for c, _scope in api.calls].count("ListInstancePoolInstances") == 2
    # a pool smaller than the hosts carrying its configuration is also read exactly
    small = _pool("pS", "cfgA", 1)
    api = PoolApi([{"id": "cn2", "display_name": "cn2", "instance_pools": [small]}], [], {"pS": ["i1"]})
    groups = _groups(api)
    assert groups["h1"] == ["cluster_network_cn2", "instance_pool_pS"] and groups["h2"] == []
    api = PoolApi(
        [{"id": "cn3", "display_name": "cn3", "instance_pools": [_pool("pE", "cfgA", 9)]}], [], {"pE": ["i1"]}
    )
    assert _groups(api, exact_pool_membership=True)["h2"] == []


def test_primary_vnic_is_the_first_attached_and_secondaries_are_listed() -> None:
    raw = _raw([_inst("i1", "a")], {"i1": "10.0.0.1"})
    data = raw["per_region"]["r1"]
    data["attachments"][0]["time_created"] = "2026-01-01T00:00:00Z"
    # a secondary VNIC attached later, listed first
    data["attachments"].insert(
        0,
        {
            "instance_id": "i1",
            "vnic_id": "v2",
            "subnet_id": "s2",
            "lifecycle_state": "ATTACHED",
            "time_created": "2026-01-02T00:00:00Z",
        },
    )
    data["private_ips"].append(
        {"id": "p2", "vnic_id": "v2", "ip_address": "10.9.0.1", "hostname_label": "a-rdma", "is_primary": True}
    )
    hv = inv.build_hosts(raw, {})[0]["vars"]
    assert hv["oci_private_ip"] == "10.0.0.1"
    assert [v["private_ip"] for v in hv["oci_vnics"]] == ["10.0.0.1", "10.9.0.1"]


def test_server_filters_become_list_instances_parameters() -> None:
    assert inv.server_filter_params({"availability_domain": "Uocm:X-AD-1", "display_name": None}) == {
        "availabilityDomain": "Uocm:X-AD-1"
    }
    with pytest.raises(inv.InventoryError, match="unknown key 'shape'"):
        inv.server_filter_params({"shape": "BM.GPU.H100.8"})
    api = FakeApi()
    inv.fetch(api, {"server_filters": {"display_name": "a"}})
    assert api.filters == {"displayName": "a"}
