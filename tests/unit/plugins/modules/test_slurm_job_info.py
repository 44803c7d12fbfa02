# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_job_info: which jobs a partition removal or a node's new resources would end, from squeue's
output as a table. The lab runs it against real Slurm (molecule/_shared/slurm/side_effect.yml); an
unreadable queue through ansible-core: tests/functional."""

from __future__ import annotations

import pytest

from ansible_collections.oci_gpu.cluster.plugins.modules.slurm_job_info import matching_jobs

# squeue --all --noheader --format=%i|%u|%T|%P|%N, as Slurm 24.11 prints it
QUEUE = """\
12|alice|RUNNING|gpu|gpu[1-2]
13|bob|PENDING|gpu,debug|
14|carol|RUNNING|debug|cpu1
15_3|dave|RUNNING|batch|gpu3
100|erin|COMPLETING|batch|gpu2
"""


@pytest.mark.parametrize(
    ("partitions", "nodes", "expected"),
    [
        (["debug"], [], [("13", "partition debug"), ("14", "partition debug")]),
        ([], ["gpu2"], [("12", "on gpu2"), ("100", "on gpu2")]),
        (["gpu"], ["gpu1", "gpu3"], [("12", "partition gpu, on gpu1"), ("13", "partition gpu"), ("15_3", "on gpu3")]),
        (["nothere"], ["gpu9"], []),
    ],
)
def test_jobs_in_partitions_or_on_nodes(partitions, nodes, expected) -> None:
    assert [(j["id"], j["why"]) for j in matching_jobs(QUEUE, partitions, nodes)] == expected
