# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Who reaches a Slurm node and how: the pam_slurm_adopt and REST API (slurmrestd, JWT) settings checked.

The slurm role's preflight calls :func:`problems` (filter ``oci_gpu.cluster.slurm_access_problems``)
on every host before anything changes. Each problem names the setting, its value and the host; the
JWT key is judged but never quoted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._munge import key_problem

_LISTEN = re.compile(r"^(unix:/\S+|[^\s:/]+:[0-9]{1,5})$")


def _prolog_flags(overrides: Mapping[str, Any]) -> str:
    """slurm.conf's PrologFlags as the overrides give it (any case), else the role's default, Contain."""
    for key, value in overrides.items():
        if str(key).lower() == "prologflags":
            return str(value)
    return "Contain"


def pam_adopt_problems(s: Mapping[str, Any], host: str) -> list[str]:
    """A lockout of the user Ansible connects as, PrologFlags without Contain, no package to install."""
    out = []
    user, groups = s.get("connection_user", ""), list(s.get("connection_groups") or [])
    admins, admin_groups = list(s.get("admin_users") or []), list(s.get("admin_groups") or [])
    if user not in admins and not set(groups) & set(admin_groups):
        out.append(
            f"slurm_pam_adopt on {host} would lock out {user} (groups: {', '.join(groups)}), the user Ansible "
            f"connects as: add it to slurm_pam_adopt_admin_users (now {', '.join(admins)}) or a group of it to "
            f"slurm_pam_adopt_admin_groups (now {', '.join(admin_groups)}), or set slurm_pam_adopt: false."
        )
    flags = _prolog_flags(s.get("config_overrides") or {})
    if "contain" not in [f.strip() for f in flags.lower().split(",")]:
        out.append(
            f'slurm_config.PrologFlags on {host} is "{flags}": slurm_pam_adopt needs Contain among the flags '
            "(the extern step logins are adopted into); add it, or set slurm_pam_adopt: false."
        )
    if not s.get("packages"):
        out.append(
            f"slurm_pam_adopt_packages on {host} is empty and no package holding pam_slurm_adopt is known for "
            f"{s.get('distribution', '')}: name it, or set slurm_pam_adopt: false."
        )
    return out


def rest_problems(s: Mapping[str, Any], host: str) -> list[str]:
    """A JWT key that cannot be used, slurmrestd without JWT, as a privileged user, or with bad addresses."""
    out = []
    key = s.get("jwt_key") or ""
    why = key_problem(key, "a JWT key") if key else ""
    if why:
        out.append(
            f"slurm_jwt_key on {host} is not usable: {why} (value withheld: it is a secret). Make one with "
            '"head -c 32 /dev/urandom | base64 -w0", or leave it empty to have one made on the first controller.'
        )
    if not s.get("rest_enabled"):
        return out
    if not s.get("jwt_enabled"):
        out.append(
            f"slurm_rest_enabled on {host} needs slurm_jwt_enabled (now false): "
            "slurmrestd takes requests by their token."
        )
    user = s.get("rest_user", "")
    if user in ("root", "slurm", (s.get("config_overrides") or {}).get("SlurmUser", "slurm")):
        out.append(
            f'slurm_rest_user on {host} is "{user}": slurmrestd must not run as root or SlurmUser; '
            "name an unprivileged user."
        )
    listen = list(s.get("rest_listen") or [])
    if not listen or [a for a in listen if not isinstance(a, str) or not _LISTEN.match(a)]:
        quoted = "[" + ", ".join(f'"{a}"' for a in listen) + "]"
        out.append(f"slurm_rest_listen on {host} is {quoted}: each entry is unix:/path or host:port, and one at least.")
    return out
