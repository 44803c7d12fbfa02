# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm role's container filters: every setting's problem in one list, a site's own Prolog kept
only when it still runs the role's, pyxis refused when missing or of another release."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.oci_gpu.cluster.plugins.filter.slurm_container_problems import slurm_container_problems
from ansible_collections.oci_gpu.cluster.plugins.filter.slurm_enroot_paths import slurm_enroot_paths
from ansible_collections.oci_gpu.cluster.plugins.filter.slurm_node_files import slurm_node_files
from ansible_collections.oci_gpu.cluster.plugins.filter.slurm_pyxis_problem import slurm_pyxis_problem

ON = {
    "oci_enabled": True,
    "oci_config": {},
    "oci_state_dir": "/run/slurm-oci",
    "pyxis_enabled": True,
    "pyxis_args": {"runtime_path": "/run/pyxis", "container_scope": "job", "sbatch_support": 1},
    "enroot_base_dir": "/mnt/localdisk",
    "enroot_config": {},
    "prolog": "",
    "prolog_dir": "/etc/slurm/prolog.d",
}


def test_the_defaults_pass() -> None:
    assert slurm_container_problems(ON, "22.05") == []
    assert slurm_container_problems(ON, "24.11.5") == []
    assert slurm_container_problems(ON) == []


def test_every_problem_at_once() -> None:
    bad = dict(ON, oci_config={"EnvExclude": "^X="}, pyxis_args={"container_scope": "node"}, enroot_base_dir="rel")
    problems = slurm_container_problems(bad, "22.05.8")
    assert len(problems) == 3, problems
    assert problems[0].startswith("slurm_oci_config.EnvExclude: Slurm 22.05 up to 24.05 does not know")
    assert problems[1].startswith("slurm_pyxis_args.container_scope = 'node'")
    assert problems[2].startswith("slurm_enroot_base_dir = 'rel'")
    # switched off, their settings are not judged
    assert slurm_container_problems(dict(bad, oci_enabled="false", pyxis_enabled=False), "22.05") == []


@pytest.mark.parametrize(
    ("prolog", "ok"),
    [
        ("/etc/slurm/prolog.d/*", True),
        ("/usr/local/sbin/site-prolog,/etc/slurm/prolog.d/oci-gpu-containers.sh", True),
        ("/usr/local/sbin/site-prolog", False),
    ],
)
def test_a_site_prolog_must_still_run_the_roles(prolog, ok) -> None:
    problems = slurm_container_problems(dict(ON, prolog=prolog), "24.11")
    assert (problems == []) is ok, problems
    if not ok:
        assert problems[0].startswith("slurm_config.Prolog = '/usr/local/sbin/site-prolog': the containers need")


OFF_WITH_JOB_MAP = dict(
    ON, oci_enabled=False, pyxis_enabled=False, epilog="", epilog_dir="/etc/slurm/epilog.d", job_map_dir="/run/m"
)


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("prolog", "/etc/slurm/prolog.d/*", True),
        ("prolog", "/usr/local/sbin/site-prolog,/etc/slurm/prolog.d/oci-gpu-job-map.sh", True),
        ("prolog", "/usr/local/sbin/site-prolog", False),
        ("epilog", "/etc/slurm/epilog.d/*", True),
        ("epilog", "/etc/slurm/epilog.d/oci-gpu-job-map.sh, /usr/local/sbin/site-epilog", True),
        ("epilog", "/usr/local/sbin/site-epilog", False),
    ],
)
def test_the_gpu_job_map_keeps_its_prolog_and_epilog(key, value, ok) -> None:
    problems = slurm_container_problems(dict(OFF_WITH_JOB_MAP, **{key: value}), "22.05")
    assert (problems == []) is ok, problems
    if not ok:
        assert len(problems) == 1
        head = f"slurm_config.{key.capitalize()} = '/usr/local/sbin/site-{key}': the GPU job map"
        assert problems[0].startswith(head)
        assert f"/etc/slurm/{key}.d/*" in problems[0] and "slurm_gpu_job_map_dir: ''" in problems[0]
    # with the map off, a site's own scripts are its business
    assert slurm_container_problems(dict(OFF_WITH_JOB_MAP, job_map_dir="", **{key: value}), "22.05") == []


def test_not_a_dict() -> None:
    with pytest.raises(AnsibleFilterError, match="expects a dict"):
        slurm_container_problems(["oci"], "24.11")


def test_pyxis_problem_filter() -> None:
    path = "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"
    assert slurm_pyxis_problem("24.11.5", "24.11.5", path, "gpu1") == ""
    assert "built for Slurm 22.05, but this host runs Slurm 24.11" in slurm_pyxis_problem(
        "22.5.8", "24.11", path, "gpu1"
    )
    assert slurm_pyxis_problem("", "24.11", "", "gpu1", False, ["nvslurm-plugin-pyxis"]).startswith(
        "gpu1: no spank_pyxis.so in Slurm's plugin directories"
    )
    with pytest.raises(AnsibleFilterError, match="cannot read a Slurm version"):
        slurm_pyxis_problem("24.11", "unknown", path, "gpu1")


def test_enroot_paths_filter() -> None:
    assert slurm_enroot_paths("/var/tmp")["ENROOT_RUNTIME_PATH"] == "/var/tmp/enroot/runtime/user-$(id -u)"
    with pytest.raises(AnsibleFilterError, match="absolute directory"):
        slurm_enroot_paths("scratch")


def test_the_node_files_filter_gives_another_role_the_job_map_scripts() -> None:
    """The elastic role writes the GPU job map on the nodes it launches from this filter."""
    out = slurm_node_files({"job_map_dir": "/run/oci-gpu/gpu-jobs"})
    present = {f["path"]: f for f in out["files"] if f["state"] == "present"}
    assert sorted(present) == ["/etc/slurm/epilog.d/oci-gpu-job-map.sh", "/etc/slurm/prolog.d/oci-gpu-job-map.sh"]
    assert all(f["mode"] == "0755" and f["content"].startswith("#!/bin/sh\n") for f in present.values())
    assert "dir=/run/oci-gpu/gpu-jobs\n" in present["/etc/slurm/prolog.d/oci-gpu-job-map.sh"]["content"]
    assert [d["path"] for d in out["directories"]] == ["/etc/slurm/prolog.d", "/etc/slurm/epilog.d"]
    assert [f for f in slurm_node_files({"job_map_dir": ""})["files"] if f["state"] == "present"] == []
    with pytest.raises(AnsibleFilterError, match="expects a dict of settings"):
        slurm_node_files(["job_map_dir"])
