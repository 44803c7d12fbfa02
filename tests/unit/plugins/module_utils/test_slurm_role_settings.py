# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm role's settings as the plan takes them (module_utils/slurm/_role_settings.py): the
slurm.conf keys the role sets, in the order it has always merged them, with the site's keys on top;
what the container check reads. Expected values written out by hand."""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._role_settings import (
    container_problems,
    container_settings,
    role_config,
    unit_files,
)

OFF = {"oci_enabled": False, "pyxis_enabled": False, "job_map_dir": ""}


def _config(site: dict, **settings: object) -> dict:
    """role_config with the plan's options as keywords."""
    return role_config(site, settings)


def test_no_settings_leave_the_site_keys_alone() -> None:
    assert _config({}, conf_dir="/etc/slurm", containers=OFF) == {}
    assert _config({"MaxJobCount": 5000}, conf_dir="/etc/slurm") == {"MaxJobCount": 5000}


def test_every_setting_gives_its_keys_in_the_role_order() -> None:
    out = _config(
        {"MaxJobCount": 5000},
        conf_dir="/etc/slurm/",
        configless=True,
        state_save_location="/shared/slurmctld",
        health_check={"program": "/usr/sbin/nhc", "interval": 300, "node_state": "IDLE"},
        private_data="jobs,usage",
        containers={"oci_enabled": True, "pyxis_enabled": False, "job_map_dir": "/run/gpu-jobs"},
        jwt_key_path="/etc/slurm/jwt_hs256.key",
    )
    assert list(out.items()) == [
        ("SlurmctldParameters", "enable_configless"),
        ("StateSaveLocation", "/shared/slurmctld"),
        ("HealthCheckProgram", "/usr/sbin/nhc"),
        ("HealthCheckInterval", 300),
        ("HealthCheckNodeState", "IDLE"),
        ("PrivateData", "jobs,usage"),
        ("Prolog", "/etc/slurm/prolog.d/*"),
        ("Epilog", "/etc/slurm/epilog.d/*"),
        ("AuthAltTypes", "auth/jwt"),
        ("AuthAltParameters", "jwt_key=/etc/slurm/jwt_hs256.key"),
        ("MaxJobCount", 5000),
    ]


def test_the_site_wins_key_by_key() -> None:
    site = {
        "Prolog": "/site/prolog.sh",
        "HealthCheckInterval": 60,
        "SlurmctldParameters": "enable_configless,idle_on_node_suspend",
    }
    out = _config(
        site,
        conf_dir="/etc/slurm",
        configless=True,
        health_check={"program": "/usr/sbin/nhc", "interval": 300, "node_state": "ANY"},
        containers={"pyxis_enabled": "yes"},
    )
    assert out == {
        "SlurmctldParameters": "enable_configless,idle_on_node_suspend",
        "HealthCheckProgram": "/usr/sbin/nhc",
        "HealthCheckInterval": 60,
        "HealthCheckNodeState": "ANY",
        "Prolog": "/site/prolog.sh",
    }


def test_an_omitted_site_key_passes_through_for_the_model_to_drop() -> None:
    omitted = object()
    out = _config({"Prolog": omitted}, conf_dir="/etc/slurm", containers={"oci_enabled": True})
    assert out == {"Prolog": omitted}
    # and the container check does not read the placeholder as a prolog of the site's
    assert container_settings({"oci_enabled": True}, {"Prolog": omitted}, "/etc/slurm")["prolog"] == ""


def test_a_health_check_without_a_program_and_containers_off_set_nothing() -> None:
    out = _config(
        {},
        conf_dir="/etc/slurm",
        health_check={"program": "", "interval": 300, "node_state": "ANY"},
        containers={"oci_enabled": "false", "pyxis_enabled": "no", "job_map_dir": "  "},
    )
    assert out == {}


def test_only_the_job_map_sets_an_epilog_and_pyxis_alone_a_prolog() -> None:
    assert _config({}, conf_dir="/etc/slurm", containers={"job_map_dir": "/run/gpu-jobs"}) == {
        "Prolog": "/etc/slurm/prolog.d/*",
        "Epilog": "/etc/slurm/epilog.d/*",
    }
    assert _config({}, conf_dir="/etc/slurm", containers={"pyxis_enabled": True}) == {"Prolog": "/etc/slurm/prolog.d/*"}


def test_container_settings_read_the_site_prolog_and_epilog_in_any_case() -> None:
    containers = {"oci_enabled": True, "job_map_dir": "/run/gpu-jobs"}
    site = {"prolog": "/site/a.sh", "EPILOG": "/site/b.sh", "MaxJobCount": 1}
    assert container_settings(containers, site, "/etc/slurm") == {
        "oci_enabled": True,
        "job_map_dir": "/run/gpu-jobs",
        "prolog": "/site/a.sh",
        "prolog_dir": "/etc/slurm/prolog.d",
        "epilog": "/site/b.sh",
        "epilog_dir": "/etc/slurm/epilog.d",
    }


def test_a_site_prolog_that_drops_the_role_prolog_is_a_problem_naming_key_and_value() -> None:
    pyxis = {"pyxis_enabled": True, "enroot_base_dir": "/var/lib/enroot", "enroot_config": {}}
    settings = container_settings(pyxis, {"Prolog": "/site/a.sh"}, "/etc/slurm")
    assert container_problems(settings, "24.11") == [
        "slurm_config.Prolog = '/site/a.sh': the containers need the role's prolog, which makes each job user's "
        "runtime directories. Add /etc/slurm/prolog.d/* (and put your script in /etc/slurm/prolog.d) or "
        "/etc/slurm/prolog.d/oci-gpu-containers.sh to the comma-separated list"
    ]
    kept = container_settings(pyxis, {"Prolog": "/site/a.sh,/etc/slurm/prolog.d/*"}, "/etc/slurm")
    assert container_problems(kept, "24.11") == []


def test_slurmctld_waits_for_its_state_file_system() -> None:
    assert unit_files("/shared/slurmctld", ["ctl1", "ctl2"], False, "/etc/default/slurmd") == {
        "directories": [{"path": "/etc/systemd/system/slurmctld.service.d", "roles": ["controller"]}],
        "files": [
            {
                "name": "slurmctld-dropin",
                "path": "/etc/systemd/system/slurmctld.service.d/oci-gpu-state.conf",
                "roles": ["controller"],
                "content": "# Managed by Ansible (oci_gpu.cluster.slurm)\n[Unit]\n"
                "RequiresMountsFor=/shared/slurmctld\n",
            }
        ],
    }


def test_a_configless_slurmd_starts_without_slurm_conf_and_asks_the_controllers() -> None:
    out = unit_files("/var/spool/slurmctld", ["ctl1", "ctl2"], True, "/etc/sysconfig/slurmd")
    assert out["directories"][1:] == [{"path": "/etc/systemd/system/slurmd.service.d", "roles": ["compute"]}]
    assert out["files"][1:] == [
        {
            "name": "slurmd-dropin",
            "path": "/etc/systemd/system/slurmd.service.d/oci-gpu-configless.conf",
            "roles": ["compute"],
            "content": "# Managed by Ansible (oci_gpu.cluster.slurm)\n[Unit]\nConditionPathExists=\n",
        },
        {
            "name": "slurmd-defaults",
            "path": "/etc/sysconfig/slurmd",
            "roles": ["compute"],
            "content": '# Managed by Ansible (oci_gpu.cluster.slurm)\nSLURMD_OPTIONS="--conf-server ctl1,ctl2"\n',
        },
    ]
