# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The oci_gpu.cluster.oci inventory: the real plugin through ansible-inventory against the OCI API emulator
(the unmodified oci SDK is the client)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible.release import __version__ as ANSIBLE_CORE_VERSION

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oci_emulator import generate, write_oci_config  # noqa: E402
from tests.oci_emulator.testing import VENV_BIN, ansible_inventory, inventory_env, running_emulator  # noqa: E402
from tests.unit.plugins.inventory.test_oci import SLURM_GROUPS  # noqa: E402


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
