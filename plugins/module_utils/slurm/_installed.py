# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The Slurm release a host has installed and the one its package manager would install.

Public API
----------
``installed_version(module, slurmd=None) -> (version, source)``
    The daemons first (``slurmctld -V``, ``slurmd -V``: no configuration needed), then the package
    database (dpkg-query, rpm); ``("", "")`` when Slurm is not installed.
``candidate_version(module) -> (version, source)``
    What ``apt-cache policy`` / ``dnf`` would install for ``slurm-client`` / ``slurm``.
``package_versions(module) -> (installed, candidate)``
    The same two as the package manager writes them (``22.05.8-4+deb12u3``): a new Debian revision
    (a security fix) is an upgrade too.
"""

from __future__ import annotations

import os
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import version_from_output

# Packages whose version is Slurm's, in the order they are asked.
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "slurm-wlm-basic-plugins", "slurm", "slurm-slurmd")


def installed_version(module: Any, slurmd: str | None = None) -> tuple[str, str]:
    """(version, source) of the installed Slurm; ``("", "")`` when none."""
    for binary in ("slurmctld", "slurmd"):
        path = slurmd if binary == "slurmd" and slurmd else module.get_bin_path(binary)
        if path and os.path.exists(path):
            rc, out, _err = module.run_command([path, "-V"])
            found = version_from_output(out) if rc == 0 else ""
            if found:
                return found, f"{binary} -V"
    dpkg = module.get_bin_path("dpkg-query")
    if dpkg:
        for pkg in PACKAGES:
            rc, out, _err = module.run_command([dpkg, "-W", "-f", "${db:Status-Abbrev}${Version}", pkg])
            if rc == 0 and out.startswith("ii"):
                found = version_from_output(out[3:])
                if found:
                    return found, "dpkg-query"
    rpm = module.get_bin_path("rpm")
    if rpm:
        for pkg in PACKAGES:
            rc, out, _err = module.run_command([rpm, "-q", "--qf", "%{VERSION}", pkg])
            found = version_from_output(out) if rc == 0 else ""
            if found:
                return found, "rpm"
    return "", ""


def _apt_policy(module: Any) -> tuple[str, str]:
    """(installed, candidate) of slurm-client as ``apt-cache policy`` writes them; "(none)" -> ""."""
    apt_cache = module.get_bin_path("apt-cache")
    found = {"installed": "", "candidate": ""}
    rc, out, _err = module.run_command([apt_cache, "policy", "slurm-client"])
    for line in out.splitlines() if rc == 0 else []:
        key, _sep, value = line.strip().partition(":")
        if key.lower() in found and not found[key.lower()]:
            value = value.strip()
            found[key.lower()] = "" if value.startswith("(") else value
    return found["installed"], found["candidate"]


def _rpm_versions(module: Any) -> tuple[str, str]:
    installed = candidate = ""
    rpm = module.get_bin_path("rpm")
    if rpm:
        rc, out, _err = module.run_command([rpm, "-q", "--qf", "%{VERSION}-%{RELEASE}", "slurm"])
        installed = out.strip() if rc == 0 else ""
    dnf = module.get_bin_path("dnf") or module.get_bin_path("yum")
    if dnf:
        rc, out, _err = module.run_command(
            [dnf, "-q", "--cacheonly", "repoquery", "--latest-limit=1", "--qf", "%{version}-%{release}", "slurm"]
        )
        candidate = out.strip().splitlines()[-1] if rc == 0 and out.strip() else ""
    return installed, candidate


def package_versions(module: Any) -> tuple[str, str]:
    """(installed, candidate) package versions of Slurm (from the cached indexes; no download)."""
    if module.get_bin_path("apt-cache"):
        return _apt_policy(module)
    return _rpm_versions(module)


def candidate_version(module: Any) -> tuple[str, str]:
    """(version, source) the package manager would install (from its cached indexes; no download)."""
    if module.get_bin_path("apt-cache"):
        found = version_from_output(_apt_policy(module)[1])
        return (found, "apt-cache") if found else ("", "")
    found = version_from_output(_rpm_versions(module)[1])
    return (found, "dnf") if found else ("", "")
