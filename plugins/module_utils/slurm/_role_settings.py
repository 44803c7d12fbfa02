# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The slurm role's settings as the plan takes them: the slurm.conf keys the role sets on top of the
model's defaults (the plan's action), the container checks and the systemd files (``plan_cluster``).

Public API
----------
``role_config(site, settings) -> dict``
    The slurm.conf overrides the plan gets: the role's own keys from ``settings`` (``conf_dir``,
    ``configless``, ``state_save_location``, ``health_check``, ``private_data``, ``containers``,
    ``jwt_key_path``), then the site's ``slurm_config``
    (``site``), which wins key by key. A value of the omit placeholder in ``site`` passes through
    (the model drops the key).
``container_settings(containers, site, conf_dir) -> dict``
    What ``container_problems`` reads: the ``containers`` settings, the site's own ``Prolog`` and
    ``Epilog`` (any case) and the role's prolog and epilog directories.
``unit_files(state_save_location, controllers, configless, slurmd_defaults_file) -> dict``
    The systemd drop-ins and defaults the role keeps beside the daemons' units, as slurm_files
    ``directories`` and ``files`` (each with the roles that keep it): slurmctld waits for the file
    system under StateSaveLocation; a configless slurmd starts without slurm.conf and asks the
    controllers for it.
``container_problems(settings, version=None) -> list``
    The container and GPU job map settings Slurm ``version`` would refuse or that would lose the
    role's prolog or epilog, each naming the key and the value (public filter
    ``slurm_container_problems``).

Pure Python: the standard library, and ``slurm/_node_files`` for how the role's files read the
settings (Ansible's ``bool``), where its prologs and epilogs live and their managed header.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._containers import (
    enroot_conf_problems,
    oci_conf_problems,
    pyxis_args_problems,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._node_files import (
    CONTAINERS_PROLOG,
    JOB_MAP_SCRIPT,
    MANAGED,
    containers_on,
    enabled,
    epilog_dir,
    job_map_dir,
    prolog_dir,
)


def role_config(site: Mapping[str, Any] | None, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The role's keys from ``settings`` (the plan's options: ``conf_dir``, ``configless``,
    ``state_save_location``, ``health_check``, ``private_data``, ``containers``, ``jwt_key_path``),
    in the order the role has always merged them, then ``site``."""
    containers = settings.get("containers") or {}
    health = settings.get("health_check") or {}
    conf_dir = str(settings.get("conf_dir") or "/etc/slurm").rstrip("/")
    job_map = bool(job_map_dir(containers))
    state_save_location = settings.get("state_save_location") or ""
    private_data = settings.get("private_data") or ""
    jwt_key_path = settings.get("jwt_key_path") or ""
    out: dict[str, Any] = {}
    if settings.get("configless"):
        out["SlurmctldParameters"] = "enable_configless"
    if state_save_location:
        out["StateSaveLocation"] = state_save_location
    if health.get("program"):
        out["HealthCheckProgram"] = health["program"]
        out["HealthCheckInterval"] = int(health.get("interval") or 0)
        out["HealthCheckNodeState"] = health.get("node_state")
    if private_data:
        out["PrivateData"] = private_data
    if containers_on(containers) or job_map:
        out["Prolog"] = f"{prolog_dir(conf_dir)}/*"
    if job_map:
        out["Epilog"] = f"{epilog_dir(conf_dir)}/*"
    if jwt_key_path:
        out["AuthAltTypes"] = "auth/jwt"
        out["AuthAltParameters"] = f"jwt_key={jwt_key_path}"
    out.update(site or {})
    return out


def _site_value(site: Mapping[str, Any] | None, key: str) -> str:
    """The site's value of a slurm.conf ``key`` in any case (slurm.conf keys are case-insensitive)."""
    for name, value in (site or {}).items():
        if str(name).lower() == key.lower():
            return value if isinstance(value, str) else ""  # omitted: the model drops the key
    return ""


def container_settings(containers: Mapping[str, Any] | None, site: Mapping[str, Any] | None, conf_dir: str) -> dict:
    conf_dir = str(conf_dir).rstrip("/")
    return dict(
        containers or {},
        prolog=_site_value(site, "prolog"),
        prolog_dir=prolog_dir(conf_dir),
        epilog=_site_value(site, "epilog"),
        epilog_dir=epilog_dir(conf_dir),
    )


def container_problems(settings: Mapping[str, Any], version: Any = None) -> list[str]:
    problems: list[str] = []
    oci = enabled(settings, "oci_enabled")
    pyxis = enabled(settings, "pyxis_enabled")
    if oci:
        problems.extend(
            oci_conf_problems(settings.get("oci_config") or {}, version or None, settings.get("oci_state_dir", ""))
        )
    if pyxis:
        problems.extend(pyxis_args_problems(settings.get("pyxis_args") or {}))
        problems.extend(enroot_conf_problems(settings.get("enroot_base_dir"), settings.get("enroot_config")))
    prolog = str(settings.get("prolog") or "").strip()
    if (oci or pyxis) and prolog:
        why = "the containers need the role's prolog, which makes each job user's runtime directories"
        where = str(settings.get("prolog_dir") or "").rstrip("/")
        problems.extend(_keeps("Prolog", prolog, where, CONTAINERS_PROLOG, why))
    if job_map_dir(settings):
        why = "the GPU job map (slurm_gpu_job_map_dir) needs the role's {}; or set slurm_gpu_job_map_dir: ''"
        for key in ("Prolog", "Epilog"):
            value = str(settings.get(key.lower()) or "").strip()
            where = str(settings.get(f"{key.lower()}_dir") or "").rstrip("/")
            if value:
                problems.extend(_keeps(key, value, where, JOB_MAP_SCRIPT, why.format(key.lower())))
    return problems


def _keeps(key: str, value: str, directory: str, script: str, why: str) -> list[str]:
    """A problem when a site's own ``key`` (a comma-separated list) runs neither the role's glob nor its script."""
    if {f"{directory}/*", f"{directory}/{script}"} & {p.strip() for p in value.split(",")}:
        return []
    return [
        f"slurm_config.{key} = {value!r}: {why}. Add {directory}/* (and put your script in {directory}) or "
        f"{directory}/{script} to the comma-separated list"
    ]


_UNIT_DIR = "/etc/systemd/system/{}.service.d"


def unit_files(
    state_save_location: str, controllers: list[str], configless: bool, slurmd_defaults_file: str
) -> dict[str, list[dict[str, Any]]]:
    directories: list[dict[str, Any]] = [{"path": _UNIT_DIR.format("slurmctld"), "roles": ["controller"]}]
    # slurmctld started before the mount would write its state to the bare directory
    files: list[dict[str, Any]] = [
        {
            "name": "slurmctld-dropin",
            "path": _UNIT_DIR.format("slurmctld") + "/oci-gpu-state.conf",
            "roles": ["controller"],
            "content": f"{MANAGED}\n[Unit]\nRequiresMountsFor={state_save_location}\n",
        }
    ]
    if configless:
        # Debian 12's slurmd unit refuses to start without slurm.conf: an empty assignment resets the list
        directories.append({"path": _UNIT_DIR.format("slurmd"), "roles": ["compute"]})
        files.append(
            {
                "name": "slurmd-dropin",
                "path": _UNIT_DIR.format("slurmd") + "/oci-gpu-configless.conf",
                "roles": ["compute"],
                "content": f"{MANAGED}\n[Unit]\nConditionPathExists=\n",
            }
        )
        files.append(
            {
                "name": "slurmd-defaults",
                "path": slurmd_defaults_file,
                "roles": ["compute"],
                "content": f'{MANAGED}\nSLURMD_OPTIONS="--conf-server {",".join(controllers)}"\n',
            }
        )
    return {"directories": directories, "files": files}
