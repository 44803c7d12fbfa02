# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one owner of the restart decision (slurm/_schedule.host_schedule): each case written out by
hand from Slurm's rules (DESIGN.md, _slurm_version's table) - the host, the cluster-wide plan, the
files that changed on the host, and the steps expected, in order."""

from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._schedule import (
    host_inputs,
    host_schedule,
    with_file_changes,
)

NOTHING = {"restart": [], "reconfigure": False, "reasons": []}
RECONF = {"restart": [], "reconfigure": True, "reasons": ["SlurmdTimeout changed: reconfigure"]}
CTLD = {"restart": ["slurmctld"], "reconfigure": False, "reasons": ["MaxJobCount changed: slurmctld restarts"]}
ALL = {
    "restart": ["slurmctld", "slurmd"],
    "reconfigure": False,
    "reasons": ["GresTypes changed: slurmctld and every slurmd restart"],
}


def host(roles, **kw):
    base = {
        "primary": False,
        "configless": False,
        "live_conf": True,
        "running": ["slurmctld", "slurmd", "slurmdbd", "mariadb"],
        "taken_out": False,
        "behind": False,
    }
    base.update(kw)
    return host_inputs("h", roles, **base)


def steps(entry, plan, changed):
    return [(s["daemon"], s["action"]) for s in host_schedule(entry, plan, changed)["steps"]]


CASES = [
    # label, host, plan, changed, expected steps
    ("converged controller", host(["controller", "dbd"], primary=True), NOTHING, [], []),
    ("converged compute", host(["compute"]), NOTHING, [], []),
    ("slurmdbd.conf on a running slurmdbd", host(["dbd"]), NOTHING, ["slurmdbd.conf"], [("slurmdbd", "restart")]),
    (
        "slurmdbd.conf on a first start",
        host(["dbd"], running=[]),
        NOTHING,
        ["slurmdbd.conf"],
        [],
    ),
    (
        "ctld key on the controller",
        host(["controller"], primary=True),
        CTLD,
        ["slurm.conf"],
        [("slurmctld", "restart")],
    ),
    # a key only slurmctld reads does not concern slurmd: the plan restarts what it concerns
    ("ctld key on a compute node", host(["compute"]), CTLD, ["slurm.conf"], []),
    (
        "plain key: the primary reconfigures",
        host(["controller"], primary=True),
        RECONF,
        ["slurm.conf"],
        [("reconfigure", "reconfigure")],
    ),
    ("plain key: a backup controller does not", host(["controller"]), RECONF, ["slurm.conf"], []),
    ("plain key on a compute node", host(["compute"]), RECONF, ["slurm.conf"], []),
    ("all-daemon key on a compute node", host(["compute"]), ALL, ["slurm.conf"], [("slurmd", "restart")]),
    ("gres.conf alone", host(["compute"]), NOTHING, ["gres.conf"], [("slurmd", "restart")]),
    ("oci.conf alone", host(["compute"]), NOTHING, ["oci.conf"], [("slurmd", "restart")]),
    ("pyxis.conf alone", host(["compute"]), NOTHING, ["plugstack.conf.d/pyxis.conf"], [("slurmd", "restart")]),
    ("the slurmd drop-in", host(["compute"]), NOTHING, ["slurmd-dropin"], [("slurmd", "restart")]),
    ("the slurmctld drop-in alone", host(["controller"], primary=True), NOTHING, ["slurmctld-dropin"], []),
    ("slurm.conf that nothing else delivers", host(["compute"]), NOTHING, ["slurm.conf"], [("slurmd", "restart")]),
    ("first install of a compute node", host(["compute"], live_conf=False), ALL, ["gres.conf", "slurm.conf"], []),
    ("a node taken out on purpose", host(["compute"], taken_out=True), ALL, ["slurm.conf"], []),
    (
        "slurmctld behind its files",
        host(["controller"], primary=True, behind=True),
        NOTHING,
        [],
        [("slurmctld", "restart")],
    ),
    ("slurmd behind its files", host(["compute"], behind=True), NOTHING, [], [("slurmd", "restart")]),
    (
        "one host with every role, every change, in Slurm's order",
        host(["controller", "dbd", "compute"], primary=True),
        ALL,
        ["slurmdbd.conf", "gres.conf", "slurm.conf"],
        [("slurmdbd", "restart"), ("slurmctld", "restart"), ("slurmd", "restart")],
    ),
    # configless: the primary controller serves gres.conf; a reconfigure hands it out, then slurmd restarts
    (
        "configless: gres.conf on the primary controller",
        host(["controller"], primary=True, configless=True),
        NOTHING,
        ["gres.conf"],
        [("reconfigure", "reconfigure")],
    ),
    (
        "configless: gres.conf while slurmctld restarts anyway",
        host(["controller"], primary=True, configless=True),
        CTLD,
        ["gres.conf", "slurm.conf"],
        [("slurmctld", "restart")],
    ),
    (
        "configless: gres.conf while slurmctld is not running yet",
        host(["controller"], primary=True, configless=True, running=[]),
        NOTHING,
        ["gres.conf"],
        [],
    ),
    (
        "configless: a compute node follows what the primary serves",
        host(["compute"], configless=True, served_changed=["gres.conf", "slurm.conf"]),
        NOTHING,
        [],
        [("slurmd", "restart")],
    ),
    (
        "configless: slurm.conf alone reaches slurmd through the reconfigure",
        host(["compute"], configless=True, served_changed=["slurm.conf"]),
        RECONF,
        [],
        [],
    ),
    (
        "configless: the slurmd defaults file",
        host(["compute"], configless=True),
        NOTHING,
        ["slurmd-defaults"],
        [("slurmd", "restart")],
    ),
]


@pytest.mark.parametrize(("label", "entry", "plan", "changed", "expected"), CASES, ids=[c[0] for c in CASES])
def test_host_schedule(label, entry, plan, changed, expected) -> None:
    assert steps(entry, plan, changed) == expected, label


def test_each_step_names_its_handler_and_why() -> None:
    got = host_schedule(host(["compute"], behind=True), RECONF, ["gres.conf", "slurmd-dropin"])
    assert got["handlers"] == ["Restart slurmd"]
    assert got["steps"][0]["reasons"] == [
        "SlurmdTimeout changed: reconfigure",
        "gres.conf changed: slurmd restarts",
        "slurmd unit settings changed: slurmd restarts",
        "slurmd runs with older files than these (an earlier run stopped before applying them)",
    ]
    assert got["reasons"] == ["slurmd restart: " + "; ".join(got["steps"][0]["reasons"])]
    ctl = host_schedule(host(["controller"], primary=True, configless=True), NOTHING, ["cgroup.conf", "gres.conf"])
    assert ctl["handlers"] == ["Reconfigure Slurm"]
    assert ctl["steps"][0]["reasons"] == ["cgroup.conf, gres.conf changed: slurmctld serves them to configless nodes"]
    outdated = host_schedule(host(["compute"]), NOTHING, ["slurm.conf"])
    assert outdated["steps"][0]["reasons"] == ["this node had an outdated configuration"]


def test_host_inputs_configless_roles() -> None:
    compute = host_inputs("gpu1", ["compute"], False, True, True, ["slurmd"], False, False, ["gres.conf"])
    assert (compute["writes_config"], compute["served_changed"]) == (False, ["gres.conf"])
    login = host_inputs("login1", ["login"], False, True, True, [], False, False, ["gres.conf"])
    assert (login["writes_config"], login["served_changed"]) == (True, [])
    plain = host_inputs("gpu1", ["compute"], False, False, False, [], False, False, ["gres.conf"])
    assert (plain["writes_config"], plain["first_install"], plain["served_changed"]) == (True, True, [])


def test_with_file_changes_for_the_public_filter() -> None:
    assert with_file_changes(NOTHING, ["slurmdbd.conf", "gres.conf"])["restart"] == ["slurmdbd", "slurmd"]
    assert with_file_changes(CTLD, ["cgroup.conf"])["restart"] == ["slurmctld", "slurmd"]
    assert with_file_changes(NOTHING, ["gres.conf"], first_install=True)["restart"] == []
    assert with_file_changes(NOTHING, ["slurmd-dropin"])["restart"] == []
