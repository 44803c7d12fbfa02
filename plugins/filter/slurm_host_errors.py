# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter oci_gpu.cluster.slurm_host_errors: what is wrong with one host's Slurm inputs, all at once."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_host_errors
short_description: Check one host's Slurm role inputs and say everything that is wrong with them
version_added: 0.3.0
author: contributors to the oci_gpu.cluster project
description:
  - Takes the host's name and a dict of its inputs, and returns one message per problem, each naming
    the variable, its value and the host; an empty list when everything is usable.
  - The C(oci_gpu.cluster.slurm) role's preflight asserts that the list is empty, so a host with
    several mistakes hears of all of them in one run, from one task.
  - It checks C(slurm_controller_hosts) (a non-empty list), C(slurm_node_roles) (a non-empty list of
    controller, dbd, compute, login), on compute hosts C(slurm_gpu_count) (a whole number or -1)
    and C(slurm_node_shape) (a string), C(slurm_restart_batch) and C(slurm_restart_timeout) (whole numbers, 1 or more),
    C(slurm_nodes_removed_timeout) (a whole number), that every role of the host has packages to
    install (a distribution the role has no variables file for has none until C(slurm_packages_<role>)
    name them), and on accounting hosts that a database
    password is set (only whether it is set, and what C(oci_gpu.cluster.slurm_conf_value) found
    wrong with it, are passed in) and that the database name and user are safe names.
  - Types and choices are the role's argument spec's to check (its C(main) and C(preflight) entry
    points); this filter checks what a spec cannot say, such as ranges and names.
positional: _input
options:
  _input:
    description: The host name used in messages.
    type: str
    required: true
  inputs:
    description:
      - C(controller_hosts), C(node_roles), C(gpu_count), C(node_shape), C(restart_batch),
        C(restart_timeout), C(nodes_removed_timeout), C(packages) (role to package list),
        C(distribution) (for the message), C(dbd_db), C(dbd_user),
        C(dbd_password_set) (a boolean, so the password stays out of the filter) and
        C(dbd_password_problem) (text, empty when the password can be written).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check this host's inputs
  ansible.builtin.assert:
    that: errors | length == 0
    fail_msg: "{{ errors | join(' ') }}"
  vars:
    errors: >-
      {{ inventory_hostname | oci_gpu.cluster.slurm_host_errors({'controller_hosts': slurm_controller_hosts,
         'node_roles': slurm_node_roles, 'restart_batch': slurm_restart_batch}) }}
"""

RETURN = r"""
_value:
  description: One message per problem, in the order above.
  type: list
  elements: str
"""

import json
import re
from collections.abc import Mapping
from typing import Any

VALID_ROLES = ("controller", "dbd", "compute", "login")
SAFE_DB_NAME = r"[A-Za-z0-9_]{1,64}"
SAFE_DB_USER = r"[A-Za-z0-9_-]{1,80}"


def _show(value: Any) -> str:
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def host_errors(host: str, inputs: Mapping[str, Any]) -> list[str]:
    errors = []
    controllers = inputs.get("controller_hosts")
    if not _is_list(controllers) or not controllers:
        errors.append(
            f"slurm_controller_hosts (seen from host {host}) is {_show(controllers)}: give at least one "
            "controller, e.g. put a host in the slurm_controller group."
        )
    roles = inputs.get("node_roles")
    if not _is_list(roles) or not roles or set(map(str, roles)) - set(VALID_ROLES):
        errors.append(
            f"slurm_node_roles on host {host} is {_show(roles)}: it must be a non-empty list of "
            f"{', '.join(VALID_ROLES)}. Put the host in one of the groups slurm_controller, slurm_dbd, "
            "slurm_compute, slurm_login, or set slurm_node_roles."
        )
    roles = list(roles) if _is_list(roles) else []
    if "compute" in roles:
        gpus = inputs.get("gpu_count", -1)
        if isinstance(gpus, bool) or not re.fullmatch(r"-1|[0-9]+", str(gpus)):
            errors.append(
                f"slurm_gpu_count on host {host} is {_show(gpus)}: it must be a whole number of GPUs "
                "(0 or more), or -1 to take the count from the shape."
            )
        shape = inputs.get("node_shape", "")
        if not isinstance(shape, str):
            errors.append(
                f"slurm_node_shape on host {host} is {_show(shape)}: give an OCI shape name such as "
                "BM.GPU.H100.8, or an empty string."
            )
    for key, least in (("restart_batch", 1), ("restart_timeout", 1), ("nodes_removed_timeout", 0)):
        value = inputs.get(key, least)
        if isinstance(value, bool) or not re.fullmatch(r"[0-9]+", str(value)) or int(value) < least:
            errors.append(f"slurm_{key} on host {host} is {_show(value)}: it must be a whole number, {least} or more.")
    packages = inputs.get("packages")
    if isinstance(packages, Mapping):
        for role in roles:
            if role in VALID_ROLES and not packages.get(role):
                errors.append(
                    f"slurm_packages_{role} on host {host} is {_show(packages.get(role))}: no Slurm packages are known "
                    f"for {inputs.get('distribution') or 'this distribution'}; name the packages that give this "
                    f"host's {role} role (for example slurmctld and slurm-client on Debian)."
                )
    if inputs.get("dbd_password_set") is False:
        errors.append(
            f"slurm_dbd_storage_password on host {host} is empty: the dbd host needs the password of the "
            f"accounting database user {inputs.get('dbd_user', 'slurm')} (keep it in Ansible Vault)."
        )
    if inputs.get("dbd_password_set") is not None:  # a dbd host with accounting
        if inputs.get("dbd_password_problem"):
            errors.append(f"On host {host}: {inputs['dbd_password_problem']}.")
        for key, value, pattern in (
            ("slurm_dbd_storage_db", inputs.get("dbd_db", "slurm_acct_db"), SAFE_DB_NAME),
            ("slurm_dbd_storage_user", inputs.get("dbd_user", "slurm"), SAFE_DB_USER),
        ):
            if not isinstance(value, str) or not re.fullmatch(pattern, value):
                errors.append(
                    f"{key} on host {host} is {_show(value)}: use letters, digits and _ only"
                    f"{' and -' if pattern == SAFE_DB_USER else ''}, at most "
                    f"{64 if pattern == SAFE_DB_NAME else 80} characters (it reaches a MariaDB grant)."
                )
    return errors


def slurm_host_errors(host: Any, inputs: Any) -> list[str]:
    if not isinstance(inputs, Mapping):
        return [f"slurm_host_errors: the inputs of host {host} are {_show(inputs)}, not a dict"]
    return host_errors(str(host), inputs)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"slurm_host_errors": slurm_host_errors}
