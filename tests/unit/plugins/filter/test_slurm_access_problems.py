# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_access_problems: pam_slurm_adopt and REST API settings refused by setting, value and host."""

from __future__ import annotations

from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.filter.slurm_access_problems import slurm_access_problems

GOOD: dict[str, Any] = {
    "pam_adopt": True,
    "connection_user": "opc",
    "connection_groups": ["opc", "adm"],
    "admin_users": ["root", "opc"],
    "admin_groups": ["sudo"],
    "packages": ["libpam-slurm-adopt"],
    "distribution": "Debian",
    "config_overrides": {"prologflags": "X11,Contain"},
    "jwt_key": "",
    "jwt_enabled": True,
    "rest_enabled": True,
    "rest_user": "slurmrestd",
    "rest_listen": ["unix:/run/slurmrestd/slurmrestd.socket", "0.0.0.0:6820"],
}


def test_good_settings_have_no_problem() -> None:
    assert slurm_access_problems(GOOD, "gpu-1") == []
    # an administrator by group; PrologFlags unset is the role's default, Contain
    assert slurm_access_problems(dict(GOOD, admin_users=[], admin_groups=["adm"], config_overrides={}), "gpu-1") == []


def test_a_lockout_a_prolog_without_contain_and_no_package_are_named() -> None:
    bad = dict(GOOD, admin_users=["lab-admin"], admin_groups=[], config_overrides={"PrologFlags": "X11"}, packages=[])
    assert slurm_access_problems(bad, "gpu-1") == [
        "slurm_pam_adopt on gpu-1 would lock out opc (groups: opc, adm), the user Ansible connects as: add it to "
        "slurm_pam_adopt_admin_users (now lab-admin) or a group of it to slurm_pam_adopt_admin_groups (now ), "
        "or set slurm_pam_adopt: false.",
        'slurm_config.PrologFlags on gpu-1 is "X11": slurm_pam_adopt needs Contain among the flags (the extern step '
        "logins are adopted into); add it, or set slurm_pam_adopt: false.",
        "slurm_pam_adopt_packages on gpu-1 is empty and no package holding pam_slurm_adopt is known for Debian: "
        "name it, or set slurm_pam_adopt: false.",
    ]
    assert slurm_access_problems(dict(bad, pam_adopt=False), "gpu-1") == []


def test_rest_problems_are_named_and_the_key_is_never_quoted() -> None:
    key = "QUFBQUFBQUFBQUFBQUFBQQ=="  # 16 bytes
    bad = dict(GOOD, jwt_key=key, jwt_enabled=False, rest_user="slurm", rest_listen=["http://0.0.0.0:6820"])
    found = slurm_access_problems(bad, "ctl")
    assert found == [
        "slurm_jwt_key on ctl is not usable: key decodes to 16 bytes; a JWT key needs 32 to 1024 (value withheld: it "
        'is a secret). Make one with "head -c 32 /dev/urandom | base64 -w0", or leave it empty to have one made on '
        "the first controller.",
        "slurm_rest_enabled on ctl needs slurm_jwt_enabled (now false): slurmrestd takes requests by their token.",
        'slurm_rest_user on ctl is "slurm": slurmrestd must not run as root or SlurmUser; name an unprivileged user.',
        'slurm_rest_listen on ctl is ["http://0.0.0.0:6820"]: each entry is unix:/path or host:port, and one at least.',
    ]
    assert key not in " ".join(found)
    assert slurm_access_problems(dict(GOOD, rest_listen=[]), "ctl") == [
        "slurm_rest_listen on ctl is []: each entry is unix:/path or host:port, and one at least."
    ]
    # SlurmUser named in slurm_config counts as SlurmUser
    assert slurm_access_problems(dict(GOOD, rest_user="slurmsvc", config_overrides={"SlurmUser": "slurmsvc"}), "ctl")
