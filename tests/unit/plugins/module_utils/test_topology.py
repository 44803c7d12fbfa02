# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The RDMA topology model (module_utils/gpu/_topology.py): written-out examples per GPU family, then
properties over random clusters (every node once, legal and stable names, valid block sizes)."""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _topology as topo
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm import _hostlist

ISLAND = "ocid1.computehpcisland.oc1.iad.aaaaaaaaisland000001"
NB = "ocid1.computenetworkblock.oc1.iad.aaaaaaaanetblk000001"


def lb(n: int) -> str:
    return f"ocid1.computelocalblock.oc1.iad.aaaaaaaallocblk00000{n}"


def h100(name: str, block: int) -> dict[str, Any]:
    return {
        "name": name,
        "shape": "BM.GPU.H100.8",
        "hpc_island_id": ISLAND,
        "network_block_id": NB,
        "local_block_id": lb(block),
    }


def test_h100_cluster_in_two_local_blocks_with_a_cpu_node() -> None:
    hosts = [h100(f"gpu{i}", i // 2) for i in range(1, 5)] + [{"name": "login1", "shape": "VM.Standard.E5.Flex"}]
    random.Random(3).shuffle(hosts)
    model = topo.build(hosts)
    assert topo.topology_conf(model, "tree").splitlines()[1:] == [
        "SwitchName=hpc_island_island000001 Switches=network_block_netblk000001",
        "SwitchName=local_block_locblk000000 Nodes=gpu1",
        "SwitchName=local_block_locblk000001 Nodes=gpu[2-3]",
        "SwitchName=local_block_locblk000002 Nodes=gpu4",
        "SwitchName=network_block_netblk000001 Switches=local_block_locblk000000,local_block_locblk000001,"
        "local_block_locblk000002",
        "SwitchName=oci_fabric Switches=hpc_island_island000001,oci_fabric_none",
        "SwitchName=oci_fabric_none Nodes=login1",
    ]
    assert topo.topology_conf(model, "block").splitlines()[1:] == [
        "BlockName=local_block_locblk000000 Nodes=gpu1",
        "BlockName=local_block_locblk000001 Nodes=gpu[2-3]",
        "BlockName=local_block_locblk000002 Nodes=gpu4",
        "BlockSizes=1,2,4",
    ]
    assert model["unblocked"] == ["login1"]
    assert model["placement"]["gpu2"] == {
        "hpc_island": "hpc_island_island000001",
        "network_block": "network_block_netblk000001",
        "local_block": "local_block_locblk000001",
    }


def test_a100_blocks_are_racks_and_gb200_blocks_are_memory_fabrics() -> None:
    hosts = [
        {"name": "a1", "shape": "BM.GPU.A100-v2.8", "network_block_id": NB, "rack_id": "f" * 52 + "rack00000001"},
        {"name": "a2", "shape": "BM.GPU.A100-v2.8", "network_block_id": NB, "rack_id": "f" * 52 + "rack00000001"},
        {
            "name": "g1",
            "shape": "BM.GPU.GB200.4",
            "network_block_id": NB,
            "local_block_id": lb(1),
            "gpu_memory_fabric_id": "ocid1.computegpumemoryfabric.oc1.iad.aaaafabric000001",
        },
    ]
    model = topo.build(hosts)
    assert [(b["name"], b["nodes"]) for b in model["blocks"]] == [
        ("gpu_memory_fabric_fabric000001", "g1"),
        ("rack_rack00000001", "a1,a2"),  # _hostlist's shortest form
    ]
    assert model["block_sizes"] == [1, 2]
    # the GB200 host's memory fabric sits under its local block, under the network block
    tree = {s["name"]: s.get("switches") or s["nodes"] for s in model["switches"]}
    assert tree["local_block_locblk000001"] == ["gpu_memory_fabric_fabric000001"]
    assert tree["network_block_netblk000001"] == ["local_block_locblk000001", "rack_rack00000001"]


def test_ids_that_share_a_short_name_are_hashed_apart() -> None:
    a, b = "ocid1.computelocalblock.oc1.iad.aaaa" + "x" * 12, "ocid1.computelocalblock.oc1.phx.bbbb" + "x" * 12
    names = topo.level_names("local_block", [a, b, lb(7)])
    assert names[lb(7)] == "local_block_locblk000007"
    assert names[a] != names[b] and all(re.fullmatch(r"local_block_[0-9a-f]{12}", names[i]) for i in (a, b))


def test_block_sizes_start_at_the_smallest_block_and_double() -> None:
    assert topo.block_sizes([8, 8, 8, 8]) == [8, 16, 32]
    assert topo.block_sizes([18, 18, 17]) == [17, 34]
    assert topo.block_sizes([]) == []


@pytest.mark.parametrize(
    "hosts,needle",
    [
        ([{"name": "a"}, {"name": "a"}], "host a is listed twice"),
        ([{"name": "bad name"}], "invalid host name 'bad name'"),
        ([{"shape": "BM.GPU.H100.8"}], "invalid host name None"),
    ],
)
def test_bad_host_lists_are_refused_by_name(hosts: list[dict[str, Any]], needle: str) -> None:
    with pytest.raises(topo.TopologyError, match=re.escape(needle)):
        topo.build(hosts)


def test_one_block_under_two_parents_is_refused_naming_both_hosts() -> None:
    other = "ocid1.computenetworkblock.oc1.iad.aaaaaaaanetblk000002"
    hosts = [h100("gpu1", 1), {**h100("gpu2", 1), "network_block_id": other}, h100("gpu3", 2)]
    with pytest.raises(topo.TopologyError) as err:
        topo.build(hosts)
    assert str(err.value) == (
        f"topology: local block {lb(1)} is under two network blocks: {NB} (host gpu1) and {other} (host gpu2)"
    )


def test_a_host_missing_an_id_takes_it_from_the_hosts_of_its_block() -> None:
    partial = {k: v for k, v in h100("gpu2", 1).items() if k != "network_block_id"}
    model = topo.build([h100("gpu1", 1), partial])
    assert model["placement"]["gpu2"] == model["placement"]["gpu1"]
    assert {s["name"]: s.get("nodes") for s in model["switches"]}["local_block_locblk000001"] == "gpu[1-2]"


def test_kueue_levels_follow_the_families() -> None:
    labels = "oci.oraclecloud.com/rdma."
    assert topo.kueue_levels(["BM.GPU.H100.8"]) == [
        labels + "hpc_island_id",
        labels + "network_block_id",
        labels + "local_block_id",
        "kubernetes.io/hostname",
    ]
    # A100's block is the rack, which OKE does not label
    assert topo.kueue_levels(["BM.GPU.A100-v2.8"]) == [
        labels + "hpc_island_id",
        labels + "network_block_id",
        "kubernetes.io/hostname",
    ]


def test_kueue_topologies_one_per_level_list() -> None:
    labels = "oci.oraclecloud.com/rdma."
    got = topo.kueue_topologies(["BM.GPU.A100-v2.8", "BM.GPU.H100.8", "BM.GPU.H200.8", "BM.GPU.H100.8"])
    assert got == [
        {
            "name": "oci-rdma",
            "levels": [
                labels + "hpc_island_id",
                labels + "network_block_id",
                labels + "local_block_id",
                "kubernetes.io/hostname",
            ],
            "shapes": ["BM.GPU.H100.8", "BM.GPU.H200.8"],
        },
        {
            "name": "oci-rdma-network-block",
            "levels": [labels + "hpc_island_id", labels + "network_block_id", "kubernetes.io/hostname"],
            "shapes": ["BM.GPU.A100-v2.8"],
        },
    ]
    # the user's levels serve every shape in one Topology
    assert topo.kueue_topologies(["BM.GPU.A100-v2.8"], ["a", "b"]) == [
        {"name": "oci-rdma", "levels": ["a", "b"], "shapes": ["BM.GPU.A100-v2.8"]}
    ]
    assert topo.kueue_topologies([]) == []


SHAPES = ["BM.GPU.H100.8", "BM.GPU.A100-v2.8", "BM.GPU.GB200.4", "VM.Standard.E5.Flex", "BM.GPU.MI300X.8"]


@st.composite
def clusters(draw: Any) -> list[dict[str, Any]]:
    """A consistent fabric (each block under one parent, as OCI reports it), hosts placed in it, and
    any of each host's ids dropped (a record the API or IMDS gave only in part)."""
    oid = "ocid1.x.oc1.iad.{}{:012d}".format
    islands = [oid("is", i) for i in range(draw(st.integers(1, 3)))]
    nbs = {oid("nb", i): draw(st.sampled_from(islands)) for i in range(draw(st.integers(1, 4)))}
    lbs = {oid("lb", i): draw(st.sampled_from(sorted(nbs))) for i in range(draw(st.integers(1, 6)))}
    racks = {oid("rk", i): draw(st.sampled_from(sorted(nbs))) for i in range(draw(st.integers(1, 4)))}
    fabrics = {oid("mf", i): draw(st.sampled_from(sorted(lbs))) for i in range(draw(st.integers(1, 4)))}
    hosts = []
    for i in range(draw(st.integers(min_value=1, max_value=60))):
        mf = draw(st.sampled_from(sorted(fabrics)))
        lb_ = draw(st.sampled_from(sorted(lbs))) if draw(st.booleans()) else fabrics[mf]
        rk = draw(st.sampled_from(sorted(racks)))
        nb = lbs[lb_] if draw(st.booleans()) else racks[rk]
        if nb != lbs[lb_]:  # an A100-like host: its rack decides, its local block follows the rack's block
            lb_ = next((k for k, v in sorted(lbs.items()) if v == nb), None)
            mf = next((k for k, v in sorted(fabrics.items()) if v == lb_), None)
        elif racks[rk] != nb:
            rk = next((k for k, v in sorted(racks.items()) if v == nb), None)
        full = {
            "hpc_island_id": nbs[nb],
            "network_block_id": nb,
            "local_block_id": lb_,
            "rack_id": rk,
            "gpu_memory_fabric_id": mf if lb_ and fabrics.get(mf) == lb_ else None,
        }
        host: dict[str, Any] = {"name": f"node{i:03d}", "shape": draw(st.sampled_from(SHAPES))}
        host.update({k: v for k, v in full.items() if v and draw(st.integers(0, 4))})
        hosts.append(host)
    return hosts


NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")


@settings(max_examples=150, deadline=None)
@given(clusters(), st.randoms(use_true_random=False))
def test_properties_of_any_cluster(hosts: list[dict[str, Any]], rnd: random.Random) -> None:
    model = topo.build(hosts)
    names = {h["name"] for h in hosts}
    # every node under exactly one leaf switch, and in at most one block
    leaves = [n for s in model["switches"] if "nodes" in s for n in _hostlist.expand(s["nodes"])]
    assert sorted(leaves) == sorted(names)
    in_blocks = [n for b in model["blocks"] for n in _hostlist.expand(b["nodes"])]
    assert len(in_blocks) == len(set(in_blocks)) and set(in_blocks) | set(model["unblocked"]) == names
    # one root, every other switch the child of exactly one switch, none holding switches and nodes
    parents = [c for s in model["switches"] for c in s.get("switches", [])]
    assert sorted(parents) == sorted(s["name"] for s in model["switches"] if s["name"] != topo.ROOT)
    assert all(("nodes" in s) != ("switches" in s) for s in model["switches"])
    # legal names; block sizes valid for slurmctld
    assert all(NAME.match(s["name"]) for s in model["switches"]) and all(NAME.match(b["name"]) for b in model["blocks"])
    sizes = model["block_sizes"]
    if model["blocks"]:
        assert all(b["count"] >= sizes[0] for b in model["blocks"])
        assert all(later == 2 * earlier for earlier, later in itertools.pairwise(sizes))
        assert sizes[-1] <= model["block_nodes"]
    else:
        assert sizes == []
    # the same hosts in any order give the same model
    shuffled = list(hosts)
    rnd.shuffle(shuffled)
    assert topo.build(shuffled) == model


def test_the_filters_take_hostvars_by_name_and_refuse_other_input() -> None:
    from ansible.errors import AnsibleFilterError

    from ansible_collections.oci_gpu.cluster.plugins.filter.kueue_topologies import kueue_topologies
    from ansible_collections.oci_gpu.cluster.plugins.filter.rdma_topology import rdma_topology

    hostvars = {
        "gpu1": {"oci_shape": "BM.GPU.H100.8", "oci_network_block_id": NB, "oci_local_block_id": lb(1)},
        "gpu2": {"oci_shape": "BM.GPU.H100.8", "oci_network_block_id": NB, "oci_local_block_id": lb(2)},
    }
    model = rdma_topology(hostvars)
    assert model["block_conf"].splitlines()[1:] == [
        "BlockName=local_block_locblk000001 Nodes=gpu1",
        "BlockName=local_block_locblk000002 Nodes=gpu2",
        "BlockSizes=1,2",
    ]
    assert [t["cluster_default"] for t in model["topology_yaml"]] == [False, True]
    with pytest.raises(AnsibleFilterError, match="a list of host dicts"):
        rdma_topology("gpu1")
    with pytest.raises(AnsibleFilterError, match="invalid host name 'bad name'"):
        rdma_topology([{"name": "bad name"}])
    with pytest.raises(AnsibleFilterError, match="got str"):
        kueue_topologies("BM.GPU.H100.8")
