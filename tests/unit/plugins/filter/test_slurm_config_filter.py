# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The oci_gpu.cluster.slurm_config filter, called directly (through ansible-playbook and ansible-doc:
tests/functional)."""

from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.filter.slurm_config import FilterModule, slurm_config
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import render_slurm_config

CLUSTER = {
    "cluster_name": "lab",
    "controllers": ["ctl1"],
    "nodes": [
        {
            "name": "gpu[01-04]",
            "sockets": 2,
            "cores_per_socket": 56,
            "threads_per_core": 2,
            "real_memory": 2000000,
            "gpu_type": "h100",
            "gpu_count": 8,
            "features": ["h100"],
        },
        {"name": "cpu1", "cpus": 8, "real_memory": 16000},
    ],
    "partitions": [{"name": "gpu", "nodes": ["gpu[01-04]"], "default": True}, {"name": "all", "nodes": "ALL"}],
    "config": {"MpiDefault": "pmix"},
    "cgroup": {"CgroupPlugin": "cgroup/v1"},
}


def test_filter_function_directly():
    assert FilterModule().filters()["slurm_config"] is slurm_config
    assert slurm_config(CLUSTER) == render_slurm_config(CLUSTER)
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="controllers is empty"):
        slurm_config(dict(CLUSTER, controllers=[]))
