# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The oci_gpu.cluster.oci inventory: pure functions, then the real plugin through ansible-inventory
against the OCI API emulator (the unmodified oci SDK is the client)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible.release import __version__ as ANSIBLE_CORE_VERSION

from ansible_collections.oci_gpu.cluster.plugins.plugin_utils import _oci_inventory as inv
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils import _oci_inventory_hosts as _hosts

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator import generate, write_oci_config  # noqa: E402
from tests.oci_emulator.testing import VENV_BIN, ansible_inventory, inventory_env, running_emulator  # noqa: E402

T = "ocid1.tenancy.oc1..root"


def said(stderr: str, *texts: str) -> bool:
    """Whether ``stderr`` holds every text. ansible-core 2.17 and 2.18 wrap a warning at 79 columns,
    inside a long OCID too, so whitespace counts on neither side."""
    flat = "".join(stderr.split())
    return all("".join(text.split()) in flat for text in texts)


def flush_cache_run(path: Path, tmp_path: Path) -> int:
    """Read the inventory with its cache flushed; the exit code. ansible-inventory takes --flush-cache
    from ansible-core 2.19 on; before, ansible-playbook's reaches the plugin the same way."""
    if tuple(int(p) for p in ANSIBLE_CORE_VERSION.split(".")[:2]) >= (2, 19):
        return ansible_inventory(path, "--flush-cache").rc
    play = tmp_path / "noop.yml"
    play.write_text("- hosts: all\n  gather_facts: false\n  tasks: []\n")
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(path), "--flush-cache", "--list-hosts", str(play)]
    return subprocess.run(cmd, env=inventory_env(path), capture_output=True, check=False).returncode


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


# ---------------------------------------------------------------------------------------------
# The real plugin through ansible-inventory against the emulator
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    data = generate(
        seed=5,
        hosts=120,
        compartments=6,
        regions=2,
        public_fraction=0.05,
        stopped_fraction=0.1,
        cluster_network_size=16,
        # GB200 too, whose hosts also have a GPU memory fabric
        gpu_shapes={"BM.GPU.H100.8": 5, "BM.GPU.H200.8": 3, "BM.GPU.A100-v2.8": 2, "BM.GPU.GB200.4": 2},
    )
    with running_emulator(data, tmp_path_factory.mktemp("oci-lab")) as running:
        yield running


def expected_hosts(running: Any, states: tuple[str, ...] = ("RUNNING",)) -> dict[str, dict[str, Any]]:
    """Ground truth straight from the tenancy data (independent of the plugin's code)."""
    out = {}
    for region, rdata in running.tenancy.data["regions"].items():
        for i in rdata["instances"]:
            if i["lifecycleState"] in states:
                v0 = i["_vnics"][0]
                out[v0["hostnameLabel"]] = {
                    "ip": v0["privateIp"],
                    "public": v0["publicIp"],
                    "gpus": i["shapeConfig"]["gpus"],
                    "inst": i,
                    "region": region,
                }
    return out


@pytest.mark.slow
def test_inventory_groups_and_hostvars_match_the_tenancy(lab: Any) -> None:
    lab.emulator.reset_counters()  # the fixture is shared: count this run alone
    run = ansible_inventory(lab.inventory_file("basic"))
    assert run.rc == 0, run.stderr
    data = run.data
    hv = data["_meta"]["hostvars"]
    truth = expected_hosts(lab)
    assert set(hv) == set(truth)
    fabric_groups: dict[str, set[str]] = {p: set() for p in ("hpc_island_", "network_block_", "local_block_")}
    fabric_groups["gpu_memory_fabric_"] = set()
    for name, t in truth.items():
        assert hv[name]["oci_private_ip"] == t["ip"] == hv[name]["ansible_host"]
        assert hv[name]["oci_gpus"] == t["gpus"]
        assert "oci_public_ip" not in hv[name]  # the default mode makes no per-host public-IP lookup
        assert hv[name]["oci_lifecycle_state"] == "RUNNING"
        role = t["inst"]["definedTags"].get("oci-gpu", {}).get("slurm-role")
        slurm = {
            g
            for g in ("slurm_controller", "slurm_dbd", "slurm_compute", "slurm_login")
            if name in data.get(g, {}).get("hosts", [])
        }
        assert slurm == ({f"slurm_{role}"} if role else set()), (name, role)
        assert name in data["gpu" if t["gpus"] else "cpu"]["hosts"]
        host = t["inst"].get("_computeHost")
        if host:
            assert hv[name].get("oci_hpc_island_id") == host["hpcIslandId"]
            assert hv[name].get("oci_network_block_id") == host["networkBlockId"]
            # a group per fabric level: <level>_<last 12 characters of the id>
            for prefix, key in (
                ("hpc_island_", "hpcIslandId"),
                ("network_block_", "networkBlockId"),
                ("local_block_", "localBlockId"),
                ("gpu_memory_fabric_", "gpuMemoryFabricId"),
            ):
                if host[key]:
                    assert name in data[prefix + host[key][-12:]]["hosts"], (name, prefix)
                    fabric_groups[prefix].add(prefix + host[key][-12:])
    # every level present, GB200's memory fabric included, and no fabric group beyond the tenancy's
    assert all(fabric_groups.values()), fabric_groups
    for prefix, wanted in fabric_groups.items():
        assert {g for g in data if g.startswith(prefix)} == wanted, prefix
    # cluster networks: membership equals the pools' instance lists
    for rdata in lab.tenancy.data["regions"].values():
        for pool in rdata["instancePools"]:
            members = {i["_vnics"][0]["hostnameLabel"] for i in rdata["instances"] if i["id"] in pool["_instanceIds"]}
            members &= set(truth)
            group = data.get("instance_pool_" + pool["displayName"].replace("-", "_"), {}).get("hosts", [])
            assert set(group) == members
    assert "slurm_controller" in data and "slurm_login" in data
    # list calls only: no per-host GetInstance/GetVnic/public-IP lookup
    by_op = lab.emulator.counter_snapshot()["by_op"]
    assert "GetInstance" not in by_op and "GetVnic" not in by_op
    assert "GetPublicIpByPrivateIpId" not in by_op
    assert lab.emulator.counter_snapshot()["requests"] > 0


@pytest.mark.slow
def test_public_ips_when_asked_for(lab: Any) -> None:
    run = ansible_inventory(lab.inventory_file("public", public_ips=True))
    assert run.rc == 0, run.stderr
    hv = run.data["_meta"]["hostvars"]
    truth = expected_hosts(lab)
    assert any(t["public"] for t in truth.values()), "the test tenancy has no public host"
    for name, t in truth.items():
        assert hv[name].get("oci_public_ip") == t["public"], name


@pytest.mark.slow
def test_no_metadata_or_keys_in_output(lab: Any) -> None:
    run = ansible_inventory(lab.inventory_file("secrets", lifecycle_states=[]))
    assert run.rc == 0, run.stderr
    for needle in ("ssh-rsa", "SECRET", "user_data", "ssh_authorized_keys", "metadata"):
        assert needle not in run.stdout


@pytest.mark.slow
def test_lifecycle_states_and_hostnames_option(lab: Any) -> None:
    run = ansible_inventory(
        lab.inventory_file("stopped", lifecycle_states=["RUNNING", "STOPPED"], hostnames=["private_ip"])
    )
    assert run.rc == 0, run.stderr
    truth = expected_hosts(lab, ("RUNNING", "STOPPED"))
    assert set(run.data["_meta"]["hostvars"]) == {t["ip"] for t in truth.values()}
    assert any(t["inst"]["lifecycleState"] == "STOPPED" for t in truth.values())


@pytest.mark.slow
@pytest.mark.parametrize("status", [500, 403])
def test_failing_compartment_fails_the_inventory_by_name(lab: Any, status: int) -> None:
    bad = lab.tenancy.compartments[2]["id"]
    lab.emulator.knobs.update(compartment_errors={bad: status})
    try:
        run = ansible_inventory(lab.inventory_file(f"strict{status}", retry_max_attempts=2, retry_max_wait=0.5))
    finally:
        lab.emulator.knobs.update(compartment_errors={})
    assert run.rc != 0
    assert said(run.stderr, bad, "ListInstances", f"({status})"), run.stderr


@pytest.mark.slow
def test_partial_mode_warns_and_returns_the_rest(lab: Any) -> None:
    bad = lab.tenancy.compartments[2]["id"]
    lab.emulator.knobs.update(compartment_errors={bad: 404})
    try:
        run = ansible_inventory(lab.inventory_file("partial", allow_partial=True))
    finally:
        lab.emulator.knobs.update(compartment_errors={})
    assert run.rc == 0, run.stderr
    assert said(run.stderr, "partial inventory", bad), run.stderr
    truth = {n for n, t in expected_hosts(lab).items() if t["inst"]["compartmentId"] != bad}
    assert set(run.data["_meta"]["hostvars"]) == truth


@pytest.mark.slow
def test_a_cached_partial_inventory_warns_every_time_it_is_served(lab: Any, tmp_path: Path) -> None:
    bad = lab.tenancy.compartments[2]["id"]
    cache = {"cache": True, "cache_plugin": "ansible.builtin.jsonfile", "cache_connection": str(tmp_path / "cache")}
    path = lab.inventory_file("partial-cached", allow_partial=True, **cache)
    lab.emulator.knobs.update(compartment_errors={bad: 404})
    try:
        first = ansible_inventory(path)
    finally:
        lab.emulator.knobs.update(compartment_errors={})
    assert first.rc == 0 and said(first.stderr, "partial inventory", bad), first.stderr
    lab.emulator.reset_counters()
    second = ansible_inventory(path)
    assert lab.emulator.counter_snapshot()["requests"] == 0  # served from the cache
    assert second.rc == 0 and said(second.stderr, "partial inventory", bad), second.stderr
    assert second.data["_meta"]["hostvars"] == first.data["_meta"]["hostvars"]


@pytest.mark.slow
def test_429_is_retried_to_a_complete_inventory(lab: Any) -> None:
    lab.emulator.knobs.update(rate_limit_per_s=5.0)
    lab.emulator.reset_counters()
    try:
        run = ansible_inventory(lab.inventory_file("throttled"))
    finally:
        lab.emulator.knobs.update(rate_limit_per_s=0.0)
    assert run.rc == 0, run.stderr
    assert set(run.data["_meta"]["hostvars"]) == set(expected_hosts(lab))
    assert any(k.endswith(":429") for k in lab.emulator.counter_snapshot()["by_op"]), "the rate limit never hit"


@pytest.mark.slow
def test_wrong_key_fails_at_once_with_401(lab: Any, tmp_path: Path) -> None:
    other = write_oci_config(tmp_path / "other", lab.tenancy.id, lab.tenancy.home_region)
    path = lab.inventory_file("badkey", config_file=str(other.config_file))
    run = ansible_inventory(path)
    assert run.rc != 0 and "401" in run.stderr


@pytest.mark.slow
def test_cache_serves_the_second_run_without_api_calls(lab: Any, tmp_path: Path) -> None:
    path = lab.inventory_file(
        "cached", cache=True, cache_plugin="ansible.builtin.jsonfile", cache_connection=str(tmp_path / "cache")
    )
    first = ansible_inventory(path)
    assert first.rc == 0, first.stderr
    lab.emulator.reset_counters()
    second = ansible_inventory(path)
    assert second.rc == 0, second.stderr
    assert lab.emulator.counter_snapshot()["requests"] == 0
    assert second.data["_meta"]["hostvars"] == first.data["_meta"]["hostvars"]
    assert flush_cache_run(path, tmp_path) == 0 and lab.emulator.counter_snapshot()["requests"] > 0


def test_extended_hostvars_are_computed_but_exported_only_on_request() -> None:
    raw = _raw([_inst("i1", "a")], {"i1": "10.0.0.1"})
    core = inv.build_hosts(raw, {})[0]
    assert "oci_gpu_model" not in core["vars"] and core["all_vars"]["oci_gpu_model"] == "h100"
    assert set(core["vars"]) <= inv.CORE_HOSTVARS
    full = inv.build_hosts(raw, {"extended_hostvars": True})[0]
    assert full["vars"]["oci_gpu_model"] == "h100"


@pytest.mark.slow
def test_compose_and_keyed_groups_see_every_computed_var(lab: Any) -> None:
    path = lab.inventory_file(
        "composed",
        compose={"slurm_gres": "'gpu:' ~ oci_gpu_model ~ ':' ~ oci_gpus if oci_gpus else ''"},
        keyed_groups=[{"key": "oci_compartment_name", "prefix": "comp"}],
        groups={"healthy_gpu": "oci_host_health | default('') == 'HEALTHY'"},
    )
    run = ansible_inventory(path)
    assert run.rc == 0, run.stderr
    data = run.data
    hv = data["_meta"]["hostvars"]
    gpu = [n for n, v in hv.items() if v["oci_gpus"]]
    assert gpu and all(hv[n]["slurm_gres"] == f"gpu:{lab_model(lab, n)}:{hv[n]['oci_gpus']}" for n in gpu)
    assert all("oci_gpu_model" not in v for v in hv.values())
    assert any(g.startswith("comp_team") for g in data)
    bm = {n for n in gpu if hv[n]["oci_shape"].startswith("BM.")}
    assert bm and set(data["healthy_gpu"]["hosts"]) == bm


# The GPU model of each shape the emulated tenancy launches (OCI's shape names), written out here
# rather than read from the shape table the plugin uses.
LAB_GPU_MODELS = {
    "BM.GPU.H100.8": "h100",
    "BM.GPU.H200.8": "h200",
    "BM.GPU.A100-v2.8": "a100",
    "BM.GPU.MI300X.8": "mi300x",
    "BM.GPU.GB200.4": "gb200",
}


def lab_model(lab: Any, name: str) -> str:
    for rdata in lab.tenancy.data["regions"].values():
        for i in rdata["instances"]:
            if i["_vnics"][0]["hostnameLabel"] == name:
                return LAB_GPU_MODELS[i["shape"]]
    raise AssertionError(name)


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


@pytest.mark.slow
def test_example_inventory_file_works_against_the_emulator(lab: Any) -> None:
    import yaml

    example = yaml.safe_load((REPO / "inventories" / "example.oci_gpu.yml").read_text())
    assert example["plugin"] == "oci_gpu.cluster.oci"
    example.pop("plugin")
    run = ansible_inventory(lab.inventory_file("example", **example))
    assert run.rc == 0, run.stderr
    data = run.data
    gpu = [n for n, v in data["_meta"]["hostvars"].items() if v["oci_gpus"]]
    assert gpu and all(data["_meta"]["hostvars"][n]["slurm_gres"].startswith("gpu:") for n in gpu)
    assert data["cluster_emulated"]["hosts"] and "slurm_controller" in data


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


@pytest.mark.slow
def test_unauthorized_enrichment_warns_and_keeps_every_host(lab: Any) -> None:
    lab.emulator.knobs.update(route_errors={"ListComputeHosts": 404})
    try:
        run = ansible_inventory(lab.inventory_file("nohosts"))
    finally:
        lab.emulator.knobs.update(route_errors={})
    assert run.rc == 0, run.stderr
    assert "ListComputeHosts not authorized (404)" in run.stderr and "compute_hosts: false" in run.stderr
    data = run.data
    assert set(data["_meta"]["hostvars"]) == set(expected_hosts(lab))
    assert not any(g.startswith("hpc_island_") for g in data)


def test_server_filters_become_list_instances_parameters() -> None:
    assert inv.server_filter_params({"availability_domain": "Uocm:X-AD-1", "display_name": None}) == {
        "availabilityDomain": "Uocm:X-AD-1"
    }
    with pytest.raises(inv.InventoryError, match="unknown key 'shape'"):
        inv.server_filter_params({"shape": "BM.GPU.H100.8"})
    api = FakeApi()
    inv.fetch(api, {"server_filters": {"display_name": "a"}})
    assert api.filters == {"displayName": "a"}


@pytest.mark.slow
def test_server_side_availability_domain_filter(lab: Any) -> None:
    ad = lab.tenancy.regions[lab.tenancy.home_region].ads[1]
    lab.emulator.reset_counters()
    run = ansible_inventory(lab.inventory_file("ad", server_filters={"availability_domain": ad}))
    assert run.rc == 0, run.stderr
    want = {n for n, t in expected_hosts(lab).items() if t["inst"]["availabilityDomain"] == ad}
    assert want and set(run.data["_meta"]["hostvars"]) == want


@pytest.fixture(scope="module")
def two_clusters(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One tenancy, one region, two Slurm clusters (emulated-1, emulated-2) side by side, plus a
    host of cluster 1 whose role is only a freeform tag (what anyone who may update it can set)."""
    data = generate(seed=8, hosts=24, compartments=3, regions=1, public_fraction=0.1, cpu_fraction=0.3, clusters=2)
    untagged = [
        i
        for i in data["regions"]["us-ashburn-1"]["instances"]
        if i["definedTags"]["oci-gpu"]["cluster"] == "emulated-1" and "slurm-role" not in i["definedTags"]["oci-gpu"]
    ]
    assert untagged, "the emulator gave cluster 1 no host without a role"
    rogue = untagged[0]
    rogue["freeformTags"]["slurm_role"] = "login"
    with running_emulator(data, tmp_path_factory.mktemp("oci-two")) as running:
        yield running, rogue["_vnics"][0]["hostnameLabel"]


def _expected_slurm(running: Any, cluster: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for rdata in running.tenancy.data["regions"].values():
        for i in rdata["instances"]:
            tag = i["definedTags"]["oci-gpu"]
            if i["lifecycleState"] == "RUNNING" and tag["cluster"] == cluster and "slurm-role" in tag:
                out.setdefault("slurm_" + tag["slurm-role"], set()).add(i["_vnics"][0]["hostnameLabel"])
    return out


@pytest.mark.slow
def test_two_clusters_side_by_side_through_ansible_inventory(two_clusters: Any) -> None:
    running, rogue = two_clusters
    for cluster in ("emulated-1", "emulated-2"):
        run = ansible_inventory(running.inventory_file(cluster.replace("-", "_"), cluster=cluster))
        assert run.rc == 0, run.stderr
        got = {g: set(run.data[g]["hosts"]) for g in SLURM_GROUPS if g in run.data}
        want = _expected_slurm(running, cluster)
        assert got == want and {"slurm_controller", "slurm_compute", "slurm_login"} <= set(want)
        assert rogue not in set().union(*got.values())
        # every host of the tenancy is still listed; only the Slurm groups are scoped
        assert len(run.data["_meta"]["hostvars"]) == 24
    # Ansible may wrap a warning's lines
    assert "freeform tag slurm_role but not the defined tag oci-gpu.slurm-role" in " ".join(run.stderr.split())
    # no scope: the two clusters fail by name instead of merging
    run = ansible_inventory(running.inventory_file("unscoped"))
    assert run.rc != 0
    err = " ".join(run.stderr.split())
    assert "belong to 2 clusters (emulated-1:" in err and "set the option cluster" in err
    # the opt-in trusts the freeform tag, within the defined cluster scope, and warns once
    run = ansible_inventory(running.inventory_file("optin", cluster="emulated-1", freeform_slurm_roles=True))
    assert run.rc == 0, run.stderr
    assert rogue in run.data["slurm_login"]["hosts"]
    assert run.stderr.count("freeform_slurm_roles is on") == 1


# ---------------------------------------------------------------------------------------------
# Strings from the API are data: no ansible-core version templates them (issue 35, item 5)
# ---------------------------------------------------------------------------------------------
HOSTILE_PLAY = """\
- name: Use every API-sourced string the way playbooks do
  hosts: all
  gather_facts: false
  tasks:
    - name: Show them
      ansible.builtin.debug:
        msg: >-
          {{ inventory_hostname }} {{ oci_display_name }} {{ oci_freeform_tags }}
          {{ oci_defined_tags }} {{ label }} {{ team }} {{ group_names }}
"""


@pytest.mark.slow
def test_display_names_and_tags_are_never_templated(tmp_path: Path) -> None:
    """An instance whose display name, freeform tag and defined tag hold a pipe lookup: reading the
    inventory (the example's keyed_groups, compose and keyed groups over the tags) and a play that
    prints each value run nothing on the control node, and the values arrive unchanged."""
    data = generate(seed=35, hosts=4, compartments=2, regions=1, gpu_shapes={"BM.GPU.H100.8": 1})
    marks = {k: tmp_path / f"pwned-{k}" for k in ("name", "freeform", "defined")}
    evil = {k: "{{ lookup('pipe', 'touch " + str(p) + "') }}" for k, p in marks.items()}
    inst = next(i for r in data["regions"].values() for i in r["instances"] if i["lifecycleState"] == "RUNNING")
    inst["displayName"] = evil["name"]
    inst["freeformTags"]["team"] = evil["freeform"]
    inst["definedTags"]["hpc"]["team"] = evil["defined"]
    with running_emulator(data, tmp_path / "emu") as running:
        path = running.inventory_file(
            "hostile",
            hostnames=["display_name", "id"],
            compose={"label": "oci_display_name", "team": "oci_freeform_tags.team"},
            keyed_groups=[
                {"key": "oci_defined_tags['oci-gpu'].cluster | default('none')", "prefix": "cluster"},
                {"key": "oci_freeform_tags.team", "prefix": "ff"},
                {"key": "oci_defined_tags.hpc.team", "prefix": "dt"},
                {"key": "oci_display_name", "prefix": "dn"},
            ],
        )
        listed = ansible_inventory(path)
        assert listed.rc == 0, listed.stderr
        hv = listed.data["_meta"]["hostvars"]
        assert evil["name"] in hv, sorted(hv)
        assert hv[evil["name"]]["oci_display_name"] == evil["name"]
        assert hv[evil["name"]]["label"] == evil["name"]
        assert hv[evil["name"]]["team"] == evil["freeform"]
        assert hv[evil["name"]]["oci_defined_tags"]["hpc"]["team"] == evil["defined"]
        play = tmp_path / "hostile.yml"
        play.write_text(HOSTILE_PLAY)
        cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(path), str(play)]
        ran = subprocess.run(cmd, env=inventory_env(path), capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "lookup('pipe'" in ran.stdout
    assert [k for k, p in marks.items() if p.exists()] == []
