# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Slurm configuration model, tested on the text it renders."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import (
    _COMPUTED_KEYS,
    _NEWER_NODE_KEYS,
    _NEWER_PARTITION_KEYS,
    _NEWER_SLURM_CONF_KEYS,
    NODE_KEYS,
    PARTITION_KEYS,
    SLURM_CONF_KEYS,
    SlurmConfigError,
    parse_slurm_conf,
    private_data_dbd,
    render_slurm_config,
    validate_slurm_config,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError, expand

OMIT = "__omit_place_holder__0123456789abcdef"


def h100(name: str, **extra: Any) -> dict[str, Any]:
    rec = {
        "name": name,
        "sockets": 2,
        "cores_per_socket": 56,
        "threads_per_core": 2,
        "real_memory": 2_000_000,
        "gpu_type": "h100",
        "gpu_count": 8,
        "features": ["h100", "rdma"],
    }
    rec.update(extra)
    return rec


def cpu(name: str, **extra: Any) -> dict[str, Any]:
    rec = {"name": name, "cpus": 16, "real_memory": 64_000, "weight": 10}
    rec.update(extra)
    return rec


def spec(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cluster_name": "lab",
        "controllers": ["ctl1"],
        "nodes": [h100(f"gpu{i:02d}") for i in range(1, 11)] + [cpu(f"cpu{i}") for i in range(1, 4)],
        "partitions": [
            {"name": "gpu", "nodes": ["gpu[01-10]"], "default": True, "max_time": "2-00:00:00"},
            {"name": "cpu", "nodes": ["cpu1", "cpu2", "cpu3"]},
        ],
    }
    base.update(overrides)
    return base


def lines(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def keyvals(text: str) -> dict[str, str]:
    """Top-level Key=value lines of slurm.conf/cgroup.conf (SlurmctldHost repeats, so it is left out)."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith(("#", "SlurmctldHost=", "NodeName=", "PartitionName=")):
            key, _sep, value = line.partition("=")
            assert key not in out, f"{key} rendered twice"
            out[key] = value
    return out


def refusal(data: dict[str, Any], omit_token: Any = None) -> str:
    with pytest.raises(SlurmConfigError) as info:
        render_slurm_config(data, omit_token=omit_token)
    assert info.value.problems, "a refusal must carry its problems"
    return str(info.value)


def hostlist_error(expr: str) -> str:
    with pytest.raises(HostlistError) as info:
        expand(expr)
    return str(info.value)


# ----------------------------------------------------------------------------------------------- defaults


def test_defaults_for_a_gpu_cluster():
    out = render_slurm_config(spec(controllers=["ctl1", {"name": "ctl2", "address": "10.0.0.2"}]))
    assert set(out) == {"slurm.conf", "gres.conf", "cgroup.conf"}
    conf = out["slurm.conf"]
    kv = keyvals(conf)
    assert conf.splitlines()[0] == "ClusterName=lab"
    assert lines(conf, "SlurmctldHost=") == ["SlurmctldHost=ctl1", "SlurmctldHost=ctl2(10.0.0.2)"]
    expected = {
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_Core_Memory",
        "GresTypes": "gpu",
        "ProctrackType": "proctrack/cgroup",
        "TaskPlugin": "task/cgroup,task/affinity",
        "AuthType": "auth/munge",
        "SchedulerType": "sched/backfill",
    }
    assert {k: kv.get(k) for k in expected} == expected
    assert "AccountingStorageTRES" not in kv, "no accounting configured, so no TRES line"
    assert "ansible" not in conf.lower(), "the template adds the ansible_managed header, not the model"
    assert keyvals(out["cgroup.conf"]) == {
        "CgroupPlugin": "autodetect",
        "ConstrainCores": "yes",
        "ConstrainDevices": "yes",
        "ConstrainRAMSpace": "yes",
    }


def test_top_level_keys_are_sorted_and_known():
    conf = render_slurm_config(spec())["slurm.conf"]
    keys = [line.split("=", 1)[0] for line in conf.split("\n\n", maxsplit=1)[0].splitlines()[2:]]
    assert keys == sorted(keys, key=str.lower)
    assert set(keys) <= SLURM_CONF_KEYS


def test_accounting_adds_slurmdbd_and_gpu_tres():
    kv = keyvals(render_slurm_config(spec(accounting={"host": "dbd1", "backup_host": "dbd2"}))["slurm.conf"])
    assert kv["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert kv["AccountingStorageHost"] == "dbd1"
    assert kv["AccountingStorageBackupHost"] == "dbd2"
    assert kv["AccountingStoragePort"] == "6819"
    assert kv["AccountingStorageTRES"] == "gres/gpu"
    assert "qos" in kv["AccountingStorageEnforce"]


def test_accounting_through_overrides_also_gets_gpu_tres_unless_given():
    conf = render_slurm_config(spec(config={"AccountingStorageType": "accounting_storage/slurmdbd"}))["slurm.conf"]
    assert keyvals(conf)["AccountingStorageTRES"] == "gres/gpu"
    conf = render_slurm_config(
        spec(accounting={"host": "dbd1"}, config={"accountingstoragetres": "gres/gpu,license/matlab"})
    )["slurm.conf"]
    assert keyvals(conf)["AccountingStorageTRES"] == "gres/gpu,license/matlab"


# ---------------------------------------------------------------------------------- tenants: backfill, PrivateData


@pytest.mark.parametrize(
    ("times", "config", "expected"),
    [
        # the base spec's longest partition is 2 days: bf_window covers it, one minute's resolution per day
        (None, {}, "bf_window=2880,bf_resolution=120"),
        (["7-00:00:00", "30:00"], {}, "bf_window=10080,bf_resolution=420"),
        (["90-00:00:00"], {}, "bf_window=43200,bf_resolution=1800"),  # Slurm's limit: 30 days
        (["1-00:00:00", "INFINITE"], {}, None),  # within Slurm's default day; INFINITE does not count
        (["48:00:00"], {"SchedulerParameters": "defer"}, "defer,bf_window=2880,bf_resolution=120"),
        (["7-00:00:00"], {"schedulerparameters": "bf_window=100"}, "bf_window=100"),
        (["7-00:00:00"], {"SchedulerParameters": "bf_resolution=600"}, "bf_resolution=600,bf_window=10080"),
        (["7-00:00:00"], {"SchedulerType": "sched/builtin"}, None),
    ],
)
def test_backfill_window_covers_the_longest_partition(times, config, expected):
    s = spec(config=config)
    if times is not None:
        s["partitions"] = [
            {"name": f"p{i}", "nodes": ["gpu01"], "max_time": t, "default": i == 0} for i, t in enumerate(times)
        ]
    assert keyvals(render_slurm_config(s)["slurm.conf"]).get("SchedulerParameters") == expected


def test_private_data_words_are_checked():
    assert (
        keyvals(render_slurm_config(spec(config={"PrivateData": "jobs,usage,users"}))["slurm.conf"])["PrivateData"]
        == "jobs,usage,users"
    )
    problems = validate_slurm_config(spec(config={"PrivateData": "jobs,usgae"}))
    assert problems == [
        "config.PrivateData = 'jobs,usgae': unknown word(s) 'usgae' (use accounts, cloud, events, jobs, nodes, "
        "partitions, reservations, usage, users, comma-separated)"
    ]


def test_slurmdbd_gets_the_private_data_words_it_knows():
    assert private_data_dbd("jobs,nodes,usage,Users,partitions") == "jobs,usage,users"
    assert private_data_dbd("") == "" and private_data_dbd(None) == ""


# ----------------------------------------------------------------------------------------------- overrides


def test_overrides_replace_defaults_case_insensitively_in_canonical_spelling():
    out = render_slurm_config(
        spec(
            config={
                "selecttypeparameters": "CR_CPU_Memory",
                "SlurmctldParameters": ["enable_configless", "idle_on_node_suspend"],
                "DisableRootJobs": True,
                "JobCompLoc": "/var/log/slurm/job comp.txt",
            },
            cgroup={"CgroupPlugin": "cgroup/v1", "ConstrainSwapSpace": False, "allowedramspace": 95},
        )
    )
    kv = keyvals(out["slurm.conf"])
    assert kv["SelectTypeParameters"] == "CR_CPU_Memory"
    assert "selecttypeparameters" not in kv
    assert kv["SlurmctldParameters"] == "enable_configless,idle_on_node_suspend"
    assert kv["DisableRootJobs"] == "YES"
    assert kv["JobCompLoc"] == '"/var/log/slurm/job comp.txt"', "values with spaces are quoted"
    cg = keyvals(out["cgroup.conf"])
    assert cg["CgroupPlugin"] == "cgroup/v1"
    assert cg["ConstrainSwapSpace"] == "no"
    assert cg["AllowedRAMSpace"] == "95"


@pytest.mark.parametrize("token", [OMIT, object()])
def test_omit_drops_a_key_default_or_not(token):
    out = render_slurm_config(
        spec(
            config={"PrologFlags": token, "MpiDefault": "pmix", "JobAcctGatherType": token},
            cgroup={"ConstrainRAMSpace": token},
        ),
        omit_token=token,
    )
    kv = keyvals(out["slurm.conf"])
    assert "PrologFlags" not in kv
    assert "JobAcctGatherType" not in kv
    assert kv["MpiDefault"] == "pmix"
    assert "ConstrainRAMSpace" not in keyvals(out["cgroup.conf"])


def test_ansible_omit_placeholder_is_recognised_without_a_token():
    kv = keyvals(render_slurm_config(spec(config={"PrologFlags": OMIT}))["slurm.conf"])
    assert "PrologFlags" not in kv


def test_hash_in_a_value_is_escaped():
    kv = keyvals(render_slurm_config(spec(config={"MailProg": "/usr/bin/mail#x"}))["slurm.conf"])
    assert kv["MailProg"] == "/usr/bin/mail\\#x"


# ----------------------------------------------------------------------------------------------- nodes


def test_identical_nodes_collapse_into_one_line_per_hardware_type():
    conf = render_slurm_config(spec())["slurm.conf"]
    assert lines(conf, "NodeName=") == [
        "NodeName=cpu[1-3] CPUs=16 RealMemory=64000 Weight=10",
        "NodeName=gpu[01-10] CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2000000 "
        "Gres=gpu:h100:8 Features=h100,rdma",
    ]


def test_a_hardware_difference_splits_the_group():
    nodes = [h100(f"gpu{i:02d}") for i in range(1, 11)]
    nodes[4]["real_memory"] = 1_900_000  # one DIMM short: gpu05 must be described on its own
    conf = render_slurm_config(spec(nodes=nodes, partitions=[]))["slurm.conf"]
    node_lines = lines(conf, "NodeName=")
    assert [line.split()[0] for line in node_lines] == ["NodeName=gpu05", "NodeName=gpu[01-04,06-10]"]


def test_node_record_may_be_a_hostlist_expression():
    one_by_one = render_slurm_config(spec())
    grouped = render_slurm_config(spec(nodes=[h100("gpu[01-10]"), cpu("cpu[1-3]")]))
    assert grouped == one_by_one


def test_cpus_are_derived_from_topology_and_may_count_cores_only():
    conf = render_slurm_config(spec(nodes=[h100("gpu01", cpus=112)], partitions=[]))["slurm.conf"]
    assert "CPUs=112 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2" in conf


def test_node_options_and_addresses():
    nodes = [
        h100("gpu01", address="10.0.1.1", options={"TmpDisk": 3_000_000, "memspeclimit": 16384}),
        h100("gpu02", address="10.0.1.2", options={"TmpDisk": 3_000_000, "MemSpecLimit": 16384}),
    ]
    conf = render_slurm_config(spec(nodes=nodes, partitions=[]))["slurm.conf"]
    (line,) = lines(conf, "NodeName=")
    assert line.startswith("NodeName=gpu[01-02] NodeAddr=10.0.1.1,10.0.1.2 CPUs=224")
    assert line.endswith("MemSpecLimit=16384 TmpDisk=3000000")


def test_partitions_are_compressed_and_carry_options():
    data = spec()
    data["partitions"] = [
        {"name": "gpu", "nodes": ["gpu03", "gpu01", "gpu02", "gpu[04-10]"], "default": True, "max_time": "infinite"},
        {"name": "all", "nodes": "ALL", "options": {"OverSubscribe": "EXCLUSIVE", "priorityTier": 10}},
        {"name": "mixed", "nodes": ["cpu[1-3]", "gpu01"]},
    ]
    conf = render_slurm_config(data)["slurm.conf"]
    assert lines(conf, "PartitionName=") == [
        "PartitionName=all Nodes=ALL OverSubscribe=EXCLUSIVE PriorityTier=10",
        "PartitionName=gpu Nodes=gpu[01-10] Default=YES MaxTime=INFINITE",
        "PartitionName=mixed Nodes=cpu[1-3],gpu01",
    ]


# ----------------------------------------------------------------------------------------------- gres.conf


def test_gres_conf_file_lines_per_gpu_type():
    nodes = [h100(f"gpu{i:02d}") for i in range(1, 5)]
    nodes += [
        h100("a10-1", gpu_type="a10", gpu_count=4, gpu_files=["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia[2-3]"]),
        h100("a10-2", gpu_type="a10", gpu_count=4, gpu_files="/dev/nvidia[0-3]"),
        cpu("cpu1"),
        h100("plain1", gpu_type=None, gpu_count=2),
    ]
    gres = render_slurm_config(spec(nodes=nodes, partitions=[]))["gres.conf"]
    assert gres.splitlines() == [
        "AutoDetect=off",
        "NodeName=a10-[1-2] Name=gpu Type=a10 File=/dev/nvidia[0-3]",
        "NodeName=gpu[01-04] Name=gpu Type=h100 File=/dev/nvidia[0-7]",
        "NodeName=plain1 Name=gpu File=/dev/nvidia[0-1]",
    ]
    conf = render_slurm_config(spec(nodes=nodes, partitions=[]))["slurm.conf"]
    assert "Gres=gpu:2" in conf and "Gres=gpu:a10:4" in conf


@pytest.mark.parametrize("mode", ["nvml", "nvidia", "rsmi"])
def test_gres_autodetect_writes_only_the_autodetect_line(mode):
    gres = render_slurm_config(spec(gres_autodetect=mode))["gres.conf"]
    assert gres == f"AutoDetect={mode}\n"


# ----------------------------------------------------------------------------------------------- refusals


def _dup() -> dict[str, Any]:
    return spec(nodes=[h100("gpu[01-10]"), cpu("gpu07")])


REFUSALS = [
    ("duplicate node", _dup, ["'gpu07'", "'gpu[01-10]'", "'gpu07'"]),
    (
        "undefined partition node",
        lambda: spec(partitions=[{"name": "debug", "nodes": ["gpu[09-12]", "cpu1"]}]),
        ["partition 'debug'", "gpu[11-12]"],
    ),
    (
        "gpu count vs files",
        lambda: spec(nodes=[h100("gpu01", gpu_files="/dev/nvidia[0-3]")], partitions=[]),
        ["node 'gpu01'", "gpu_count=8", "4 device(s)"],
    ),
    ("empty controllers", lambda: spec(controllers=[]), ["controllers is empty"]),
    ("missing controllers", lambda: {k: v for k, v in spec().items() if k != "controllers"}, ["controllers"]),
    (
        "unknown key",
        lambda: spec(config={"SelectTypeParameter": "CR_Core"}),
        ["'SelectTypeParameter'", "SelectTypeParameters"],
    ),
    ("unknown cgroup key", lambda: spec(cgroup={"ConstrainDevice": True}), ["'ConstrainDevice'", "ConstrainDevices"]),
    ("same key twice", lambda: spec(config={"SelectType": "a", "selecttype": "b"}), ["'SelectType'", "'selecttype'"]),
    ("computed NodeName", lambda: spec(config={"NodeName": "x"}), ["'NodeName'", "nodes"]),
    ("computed PartitionName", lambda: spec(config={"PartitionName": "x"}), ["'PartitionName'", "partitions"]),
    ("computed SlurmctldHost", lambda: spec(config={"slurmctldhost": "x"}), ["'slurmctldhost'", "controllers"]),
    ("legacy ControlMachine", lambda: spec(config={"ControlMachine": "x"}), ["'ControlMachine'", "controllers"]),
    ("computed ClusterName", lambda: spec(config={"ClusterName": "x"}), ["'ClusterName'", "cluster_name"]),
    (
        "negative memory",
        lambda: spec(nodes=[cpu("cpu1", real_memory=-1)], partitions=[]),
        ["node 'cpu1'", "real_memory"],
    ),
    ("memory not a number", lambda: spec(nodes=[cpu("cpu1", real_memory="lots")], partitions=[]), ["'lots'"]),
    (
        "cpus vs topology",
        lambda: spec(nodes=[h100("gpu01", cpus=200)], partitions=[]),
        ["node 'gpu01'", "cpus=200", "2*56*2=224"],
    ),
    ("negative gpu count", lambda: spec(nodes=[h100("gpu01", gpu_count=-8)], partitions=[]), ["gpu01", "gpu_count"]),
    ("gpu type without gpus", lambda: spec(nodes=[cpu("cpu1", gpu_type="h100")], partitions=[]), ["cpu1", "h100"]),
    ("negative numeric key", lambda: spec(config={"SlurmdTimeout": -5}), ["SlurmdTimeout", "-5"]),
    ("GresTypes without gpu", lambda: spec(config={"GresTypes": "shard"}), ["GresTypes", "gpu"]),
    ("two defaults", lambda: spec(partitions=[{"name": p, "nodes": "ALL", "default": True} for p in "ab"]), ["a, b"]),
    ("partition twice", lambda: spec(partitions=[{"name": "a", "nodes": "ALL"}] * 2), ["partition 'a'", "twice"]),
    ("partition without nodes", lambda: spec(partitions=[{"name": "a", "nodes": []}]), ["partition 'a'", "nodes"]),
    ("line break in a value", lambda: spec(config={"MailProg": "a\nNodeName=evil"}), ["MailProg", "line break"]),
    ("None is not omit", lambda: spec(config={"MailProg": None}), ["MailProg", "omit"]),
    ("bad cluster name", lambda: spec(cluster_name="My Cluster"), ["'My Cluster'"]),
    ("unknown node field", lambda: spec(nodes=[cpu("cpu1", gpus=8)], partitions=[]), ["cpu1", "'gpus'", "gpu_count"]),
    ("unknown top-level key", lambda: spec(partition=[]), ["'partition'", "partitions"]),
    ("bad autodetect", lambda: spec(gres_autodetect="cuda"), ["gres_autodetect", "'cuda'"]),
    (
        "node option owned by a field",
        lambda: spec(nodes=[cpu("cpu1", options={"Gres": "gpu:1"})], partitions=[]),
        ["cpu1", "Gres"],
    ),
    (
        "unknown partition option",
        lambda: spec(partitions=[{"name": "a", "nodes": "ALL", "options": {"MaxTim": 5}}]),
        ["'MaxTim'"],
    ),
    ("whitespace in a node name", lambda: spec(nodes=[cpu("gpu 01")], partitions=[]), ["'gpu 01'", "whitespace"]),
    ("bad max_time", lambda: spec(partitions=[{"name": "a", "nodes": "ALL", "max_time": "forever"}]), ["'forever'"]),
    (
        "unknown health-check state",
        lambda: spec(config={"HealthCheckNodeState": "IDLE,DRAINED"}),
        ["HealthCheckNodeState = 'IDLE,DRAINED'", "'DRAINED'", "NONDRAINED_IDLE"],
    ),
    (
        "relative health-check program",
        lambda: spec(config={"HealthCheckProgram": "oci-gpu-health"}),
        ["HealthCheckProgram = 'oci-gpu-health'", "absolute path"],
    ),
    (
        "health-check program with arguments",
        lambda: spec(config={"HealthCheckProgram": "/usr/sbin/nhc -t 50"}),
        ["HealthCheckProgram", "without spaces"],
    ),
    ("negative health-check interval", lambda: spec(config={"HealthCheckInterval": -1}), ["HealthCheckInterval", "-1"]),
]


def test_health_check_keys_render_as_given():
    conf = render_slurm_config(
        spec(
            config={
                "HealthCheckProgram": "/usr/local/sbin/oci-gpu-health",
                "HealthCheckInterval": 30,
                "HealthCheckNodeState": "ANY,CYCLE",
            }
        )
    )["slurm.conf"]
    values = keyvals(conf)
    assert values["HealthCheckProgram"] == "/usr/local/sbin/oci-gpu-health"
    assert values["HealthCheckInterval"] == "30"
    assert values["HealthCheckNodeState"] == "ANY,CYCLE"


@pytest.mark.parametrize(("case", "make", "needles"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_name_the_culprit(case, make, needles):
    message = refusal(make())
    for needle in needles:
        assert needle in message, f"{case}: {needle!r} missing from {message!r}"


@pytest.mark.parametrize(
    ("where", "expr"),
    [("name", "gpu[01-"), ("partition", "gpu[3-1]"), ("gpu_files", "/dev/nvidia[0-x]")],
)
def test_malformed_hostlists_propagate_the_hostlist_error(where, expr):
    data = spec()
    if where == "name":
        data["nodes"].append(cpu(expr))
    elif where == "partition":
        data["partitions"].append({"name": "bad", "nodes": [expr]})
    else:
        data["nodes"] = [h100("gpu01", gpu_files=expr)]
        data["partitions"] = []
    message = refusal(data)
    assert expr in message
    assert hostlist_error(expr) in message


def test_every_problem_is_reported_at_once():
    data = spec(controllers=[], config={"Bogus": 1}, nodes=[cpu("cpu1"), cpu("cpu1")], partitions=[])
    problems = validate_slurm_config(data)
    assert len(problems) == 3, problems
    message = refusal(data)
    assert message.startswith("invalid Slurm configuration, 3 problems:")
    assert all(p in message for p in problems)


def test_a_long_problem_list_is_capped():
    data = spec(nodes=[cpu(f"n{i}") for i in range(40)] * 2, partitions=[])
    message = refusal(data)
    assert "40 problems" in message and "and 15 more" in message


def test_valid_spec_has_no_problems_and_input_is_not_modified():
    data = spec(config={"PrologFlags": OMIT})
    before = copy.deepcopy(data)
    assert validate_slurm_config(data) == []
    render_slurm_config(data)
    assert data == before


# ----------------------------------------------------------------------------------------------- determinism


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_input_order_does_not_change_the_output(data):
    base = spec(
        config={"MpiDefault": "pmix", "SlurmctldParameters": "enable_configless", "PrologFlags": OMIT},
        cgroup={"CgroupPlugin": "cgroup/v1", "ConstrainSwapSpace": True},
        nodes=[h100(f"gpu{i:02d}") for i in range(1, 11)]
        + [cpu(f"cpu{i}", features=["b", "a", "c"]) for i in range(1, 4)]
        + [h100("a10-1", gpu_type="a10", gpu_count=4)],
        partitions=[
            {"name": "gpu", "nodes": ["gpu[01-10]"], "default": True},
            {"name": "cpu", "nodes": ["cpu1", "cpu2", "cpu3"], "options": {"OverSubscribe": "NO", "MaxNodes": 2}},
            {"name": "all", "nodes": ["ALL"]},
        ],
    )
    expected = render_slurm_config(base)
    shuffled = dict(base)
    shuffled["nodes"] = [
        dict(rec, features=data.draw(st.permutations(rec["features"]))) if "features" in rec else rec
        for rec in data.draw(st.permutations(base["nodes"]))
    ]
    shuffled["partitions"] = data.draw(st.permutations(base["partitions"]))
    shuffled["config"] = dict(data.draw(st.permutations(list(base["config"].items()))))
    shuffled["cgroup"] = dict(data.draw(st.permutations(list(base["cgroup"].items()))))
    assert render_slurm_config(dict(data.draw(st.permutations(list(shuffled.items()))))) == expected


@settings(max_examples=25, deadline=None)
@given(numbers=st.sets(st.integers(min_value=0, max_value=3000), min_size=1, max_size=300))
def test_node_lines_cover_exactly_the_defined_nodes(numbers):
    names = [f"gpu{n:04d}" for n in sorted(numbers)]
    nodes = [h100(n) if i % 3 else cpu(n) for i, n in enumerate(names)]
    out = render_slurm_config(spec(nodes=nodes, partitions=[{"name": "all", "nodes": names}]))
    node_lines = lines(out["slurm.conf"], "NodeName=")
    assert len(node_lines) <= 2
    covered = [n for line in node_lines for n in expand(line.split()[0].split("=", 1)[1])]
    assert sorted(covered) == names
    (part,) = lines(out["slurm.conf"], "PartitionName=")
    assert sorted(expand(part.split()[1].split("=", 1)[1])) == names


# ----------------------------------------------------------------------------------------------- real Slurm


needs_scontrol = pytest.mark.skipif(
    shutil.which("scontrol") is None, reason="needs Debian's slurm-client (scontrol) on this machine"
)


def scontrol_parse(path: Path, text: str) -> subprocess.CompletedProcess:
    """Let the real scontrol read ``text`` as slurm.conf (it parses the whole file before any subcommand)."""
    path.write_text(text)
    env = dict(os.environ, SLURM_CONF=str(path))
    return subprocess.run(
        ["scontrol", "show", "hostnames", "n1"], env=env, capture_output=True, text=True, timeout=30, check=False
    )


@needs_scontrol
def test_key_tables_match_what_slurm_2205_parses(tmp_path):
    """Every table key 22.05 should know is not 'unrecognized' by Debian 12's scontrol; the newer ones are."""
    head = "ClusterName=x\nSlurmctldHost=localhost\n"
    cases = [
        (k, f"{k}=1\nNodeName=n1 CPUs=2\nPartitionName=p Nodes=n1\n", k in _NEWER_SLURM_CONF_KEYS)
        for k in sorted(SLURM_CONF_KEYS)
        if k.lower() not in _COMPUTED_KEYS
    ]
    cases += [
        (k, f"NodeName=n1 CPUs=2 {k}=1\nPartitionName=p Nodes=n1\n", k in _NEWER_NODE_KEYS) for k in sorted(NODE_KEYS)
    ]
    cases += [
        (k, f"NodeName=n1 CPUs=2\nPartitionName=p Nodes=n1 {k}=1\n", k in _NEWER_PARTITION_KEYS)
        for k in sorted(PARTITION_KEYS)
    ]
    wrong = []
    for key, body, newer in cases:
        proc = scontrol_parse(tmp_path / "slurm.conf", head + body)
        unknown = f"unrecognized key: {key}" in proc.stderr
        if unknown != newer:
            wrong.append(f"{key}: {'rejected' if unknown else 'accepted'} by 22.05 ({proc.stderr.strip()[:80]})")
    assert wrong == []


@needs_scontrol
def test_real_scontrol_parses_a_large_config_with_long_lines(tmp_path):
    import random

    rng = random.Random(7)
    names = [f"gpu{i:05d}" for i in sorted(rng.sample(range(1, 3000), 2000))]
    nodes = [h100(n) if i % 2 else cpu(n) for i, n in enumerate(names)]
    text = render_slurm_config(spec(nodes=nodes, partitions=[{"name": "all", "nodes": names[::3]}]))["slurm.conf"]
    assert max(len(line) for line in text.splitlines()) > 4096, "the case must exercise long lines"
    proc = scontrol_parse(tmp_path / "slurm.conf", text)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@needs_scontrol
def test_real_scontrol_parses_the_rendered_slurm_conf(tmp_path):
    data = spec(
        controllers=["ctl1", {"name": "ctl2", "address": "10.0.0.2"}],
        accounting={"host": "dbd1"},
        config={"SlurmctldParameters": "enable_configless", "JobCompLoc": "/var/log/slurm/job comp.txt"},
        nodes=[h100("gpu[01-10]", options={"TmpDisk": 100}), cpu("cpu[1-3]")],
    )
    data["partitions"].append({"name": "all", "nodes": "ALL", "options": {"OverSubscribe": "NO", "MaxNodes": 4}})
    conf = tmp_path / "slurm.conf"
    conf.write_text(render_slurm_config(data)["slurm.conf"])
    env = dict(os.environ, SLURM_CONF=str(conf))
    proc = subprocess.run(
        ["scontrol", "show", "hostnames", "gpu[09-10]"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "error" not in proc.stderr.lower(), proc.stderr
    assert proc.stdout.split() == ["gpu09", "gpu10"]
    # and the check can fail: an unknown key is fatal for the same scontrol
    conf.write_text(conf.read_text() + "NoSuchKey=1\n")
    proc = subprocess.run(
        ["scontrol", "show", "hostnames", "x1"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode != 0 and "NoSuchKey" in proc.stderr


JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10)
    | st.text(max_size=6)
    | st.sampled_from(["ALL", OMIT, "n[1-2]", "a["]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    field=st.sampled_from(
        ["cluster_name", "controllers", "nodes", "partitions", "config", "cgroup", "gres_autodetect", "accounting"]
    ),
    node_field=st.sampled_from(
        ["name", "cpus", "sockets", "gpu_count", "gpu_files", "features", "weight", "options", "address"]
    ),
    junk=JUNK,
)
def test_any_malformed_input_is_refused_cleanly_or_rendered(field, node_field, junk):
    """Whatever a playbook passes, the model either renders or raises SlurmConfigError, never a crash."""
    data = spec()
    data[field] = junk
    data["nodes"] = data["nodes"] if field == "nodes" else [dict(data["nodes"][0], **{node_field: junk})]
    data["partitions"] = data["partitions"] if field == "partitions" else []
    try:
        out = render_slurm_config(data)
    except SlurmConfigError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
    else:
        assert set(out) == {"slurm.conf", "gres.conf", "cgroup.conf"}


def test_default_memory_per_cpu_is_the_smallest_nodes_share() -> None:
    # h100: 224 CPUs, 2,000,000 MiB -> 8928; cpu: 16 CPUs, 64,000 MiB -> 4000.
    conf = keyvals(render_slurm_config(spec())["slurm.conf"])
    assert conf["DefMemPerCPU"] == "4000"
    only_gpu = spec(nodes=[h100("gpu01")], partitions=[{"name": "gpu", "nodes": "ALL"}])
    assert keyvals(render_slurm_config(only_gpu)["slurm.conf"])["DefMemPerCPU"] == str(2_000_000 // 224)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"DefMemPerCPU": 1024}, {"DefMemPerCPU": "1024"}),
        ({"defmempercpu": OMIT}, {}),
        ({"DefMemPerGPU": 65536}, {"DefMemPerGPU": "65536"}),
        ({"DefMemPerNode": 8192}, {"DefMemPerNode": "8192"}),
        ({"SelectTypeParameters": "CR_Core"}, {}),
    ],
)
def test_default_memory_per_cpu_gives_way_to_the_config(config: dict[str, Any], expected: dict[str, str]) -> None:
    conf = keyvals(render_slurm_config(spec(config=config), omit_token=OMIT)["slurm.conf"])
    assert {k: v for k, v in conf.items() if k.startswith("DefMemPer")} == expected


def test_parse_slurm_conf_splits_keys_nodes_partitions() -> None:
    text = (
        "ClusterName=lab\nSlurmctldHost=ctl\nGresTypes=gpu  # trailing comment\n# a comment\nSlurmctldHost=ctl2\n"
        "NodeName=gpu[1-2] CPUs=8 \\\n  Gres=gpu:h100:8\nNodeName=cpu1 CPUs=4\n"
        "PartitionName=gpu Nodes=gpu[1-2] Default=YES\nJobCompPass=pa\\#ss\n"
    )
    conf = parse_slurm_conf(text)
    assert conf["keys"] == {
        "clustername": "lab",
        "slurmctldhost": "ctl,ctl2",
        "grestypes": "gpu",
        "jobcomppass": "pa\\#ss",
    }
    assert conf["nodes"] == {"gpu[1-2]": "CPUs=8 Gres=gpu:h100:8", "cpu1": "CPUs=4"}
    assert conf["partitions"] == {"gpu": "Default=YES Nodes=gpu[1-2]"}
    assert parse_slurm_conf(None) == {"keys": {}, "nodes": {}, "partitions": {}}
