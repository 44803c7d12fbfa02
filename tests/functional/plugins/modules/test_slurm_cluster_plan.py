# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action slurm_cluster_plan through the slurm role's own tasks/plan.yml, run by ansible-playbook
on two local hosts carrying their probes: the slurm.conf keys the role's settings give (the site's
slurm_config winning key by key), the systemd drop-ins and the container checks come from the plan.
Expected values written out by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ansible_harness import run_tool, shown

RECORD = {
    "name": "gpu1",
    "cpus": 224,
    "sockets": 2,
    "cores_per_socket": 56,
    "threads_per_core": 2,
    "real_memory": 2063000,
    "gpu_type": "h100",
    "gpu_count": 8,
    "gpu_files": [f"/dev/nvidia{i}" for i in range(8)],
    "features": ["bm_gpu_h100"],
}
PROBE = {"slurm_version": "24.11.5", "nvml_plugin": False, "live_conf": "", "skipped": False}


def _plan(tmp: Path, settings: dict) -> dict:
    inventory = {
        "all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
            "children": {
                "slurm_controller": {"hosts": {"ctl1": {"__slurm_probe": PROBE}}},
                "slurm_compute": {"hosts": {"gpu1": {"__slurm_probe": dict(PROBE, record=RECORD)}}},
            },
        }
    }
    out = tmp / "plan.json"
    play = [
        {
            "name": "Plan",
            "hosts": "all",
            "gather_facts": False,
            "vars": {
                "slurm_cluster_name": "lab",
                "slurm_controller_hosts": ["ctl1"],
                "slurm_compute_hosts": ["gpu1"],
                "slurm_partitions": [{"name": "gpu", "nodes": "ALL", "default": True}],
                **settings,
            },
            "tasks": [
                {
                    "name": "Plan",
                    "ansible.builtin.import_role": {"name": "oci_gpu.cluster.slurm", "tasks_from": "plan.yml"},
                },
                {
                    "name": "Keep the plan",
                    "ansible.builtin.copy": {
                        "content": "{{ __slurm_cluster | to_json }}",
                        "dest": str(out),
                        "mode": "0600",
                    },
                    "run_once": True,
                },
            ],
        }
    ]
    (tmp / "inventory.json").write_text(json.dumps(inventory))
    (tmp / "play.yml").write_text(json.dumps(play))
    res = run_tool("ansible-playbook", "-i", str(tmp / "inventory.json"), str(tmp / "play.yml"))
    assert res.returncode == 0, shown(res)[-3000:]
    return json.loads(out.read_text())


def test_the_role_settings_become_slurm_conf_keys_and_the_site_wins(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        {
            "slurm_configless": True,
            "slurm_health_check_program": "/usr/local/sbin/oci-gpu-health",
            "slurm_health_check_interval": 300,
            "slurm_private_data": "jobs",
            "slurm_state_save_location": "/shared/slurmctld",
            "slurm_config": {"HealthCheckInterval": 60},
        },
    )
    conf = plan["files"]["slurm.conf"].splitlines()
    for line in (
        "SlurmctldParameters=enable_configless",
        "HealthCheckProgram=/usr/local/sbin/oci-gpu-health",
        "HealthCheckInterval=60",
        "HealthCheckNodeState=ANY",
        "PrivateData=jobs",
        "StateSaveLocation=/shared/slurmctld",
    ):
        assert line in conf, plan["files"]["slurm.conf"]
    assert "HealthCheckInterval=300" not in conf
    assert plan["container_problems"] == []
    units = {f["name"]: f for f in plan["unit_files"]}
    assert sorted(units) == ["slurmctld-dropin", "slurmd-defaults", "slurmd-dropin"]
    assert units["slurmd-defaults"]["path"] == "/etc/default/slurmd"
    assert units["slurmd-defaults"]["content"].endswith('SLURMD_OPTIONS="--conf-server ctl1"\n')
    assert units["slurmctld-dropin"]["content"].endswith("RequiresMountsFor=/shared/slurmctld\n")
    assert [d["path"] for d in plan["unit_directories"]] == [
        "/etc/systemd/system/slurmctld.service.d",
        "/etc/systemd/system/slurmd.service.d",
    ]


def test_a_site_prolog_that_drops_the_job_map_prolog_is_a_container_problem(tmp_path: Path) -> None:
    plan = _plan(tmp_path, {"slurm_gpu_job_map_dir": "/run/oci-gpu-jobs", "slurm_config": {"Prolog": "/site/p.sh"}})
    assert "Prolog=/site/p.sh" in plan["files"]["slurm.conf"].splitlines()
    assert "Epilog=/etc/slurm/epilog.d/*" in plan["files"]["slurm.conf"].splitlines()
    assert plan["container_problems"] == [
        "slurm_config.Prolog = '/site/p.sh': the GPU job map (slurm_gpu_job_map_dir) needs the role's prolog; or set "
        "slurm_gpu_job_map_dir: ''. Add /etc/slurm/prolog.d/* (and put your script in /etc/slurm/prolog.d) or "
        "/etc/slurm/prolog.d/oci-gpu-job-map.sh to the comma-separated list"
    ]
    assert [f["name"] for f in plan["unit_files"]] == ["slurmctld-dropin"]
    # the model's own default, where no state_save_location is set
    assert plan["unit_files"][0]["content"].endswith("RequiresMountsFor=/var/lib/slurm/slurmctld\n")
