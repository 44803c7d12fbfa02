# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_node_info's reading of systemctl show (the probe through ansible-core: tests/functional)."""

from __future__ import annotations


def test_unit_states_are_read_per_unit_from_one_systemctl_show() -> None:
    from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._systemd import unit_states_from_show

    out = (
        "Id=slurmd.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\n\n"
        "Id=slurmctld.service\nLoadState=not-found\nActiveState=inactive\nUnitFileState=\n"
    )
    states = unit_states_from_show(out, ["slurmd", "slurmctld", "mariadb"])
    assert states == {
        "slurmd": {"loaded": "loaded", "active": "active", "enabled": "enabled"},
        "slurmctld": {"loaded": "not-found", "active": "inactive", "enabled": ""},
    }
    assert unit_states_from_show("", ["slurmd"]) == {}
