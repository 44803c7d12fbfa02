# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_host_errors: every problem with one host's Slurm inputs, each naming variable, value and host."""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.filter.slurm_host_errors import slurm_host_errors

GOOD = {
    "controller_hosts": ["ctl"],
    "node_roles": ["compute"],
    "gpu_count": -1,
    "node_shape": "BM.GPU.H100.8",
    "dbd_user": "slurm",
    "dbd_password_set": None,
}


def test_good_inputs_have_no_errors() -> None:
    assert slurm_host_errors("gpu1", GOOD) == []
    assert slurm_host_errors("gpu1", {**GOOD, "gpu_count": "8", "node_shape": ""}) == []
    assert slurm_host_errors("gpu1", {**GOOD, "restart_batch": "4", "nodes_removed_timeout": 0}) == []
    assert slurm_host_errors("ctl", {**GOOD, "node_roles": ["controller", "dbd"], "dbd_password_set": True}) == []


def test_each_problem_names_the_variable_the_value_and_the_host() -> None:
    cases = {
        "controller_hosts": ([], "slurm_controller_hosts (seen from host gpu1) is []"),
        "node_roles": (["compute", "gpu"], 'slurm_node_roles on host gpu1 is ["compute", "gpu"]'),
        "gpu_count": ("eight", 'slurm_gpu_count on host gpu1 is "eight"'),
        "node_shape": (8, "slurm_node_shape on host gpu1 is 8"),
        "dbd_password_set": (False, "slurm_dbd_storage_password on host gpu1 is empty"),
        "restart_batch": (0, "slurm_restart_batch on host gpu1 is 0: it must be a whole number, 1 or more"),
        "restart_timeout": ("soon", 'slurm_restart_timeout on host gpu1 is "soon"'),
        "nodes_removed_timeout": (-5, "slurm_nodes_removed_timeout on host gpu1 is -5"),
    }
    for key, (value, start) in cases.items():
        (message,) = slurm_host_errors("gpu1", {**GOOD, key: value})
        assert message.startswith(start), (key, message)


def test_strings_where_lists_belong_and_several_problems_at_once() -> None:
    errors = slurm_host_errors("gpu1", {**GOOD, "controller_hosts": "ctl", "node_roles": "compute", "gpu_count": -2})
    assert [e.split(" ", 1)[0] for e in errors] == ["slurm_controller_hosts", "slurm_node_roles"]
    # A host whose roles are unusable is not judged as a compute host.
    errors = slurm_host_errors("gpu1", {**GOOD, "gpu_count": True, "restart_batch": 0})
    assert [e.split(" ", 1)[0] for e in errors] == ["slurm_gpu_count", "slurm_restart_batch"]


def test_compute_only_checks_skip_other_roles_and_bad_inputs_say_so() -> None:
    assert slurm_host_errors("login1", {**GOOD, "node_roles": ["login"], "gpu_count": "x", "node_shape": 1}) == []
    assert slurm_host_errors("h", "nope") == ['slurm_host_errors: the inputs of host h are "nope", not a dict']


def test_every_role_of_the_host_needs_packages() -> None:
    packages = {"controller": ["slurmctld"], "dbd": [], "compute": ["slurmd"], "login": []}
    inputs = {
        **GOOD,
        "node_roles": ["controller", "dbd", "compute"],
        "packages": packages,
        "distribution": "Gentoo 2.17",
    }
    assert slurm_host_errors("ctl", inputs) == [
        "slurm_packages_dbd on host ctl is []: no Slurm packages are known for Gentoo 2.17; name the packages "
        "that give this host's dbd role (for example slurmctld and slurm-client on Debian)."
    ]
    assert slurm_host_errors("ctl", {**inputs, "packages": {**packages, "dbd": ["slurmdbd"]}}) == []
