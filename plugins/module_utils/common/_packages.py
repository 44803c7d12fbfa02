# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The names of the installed packages, fast (modules on the node).

Pure Python, standard library only, importable on Python 3.8+.

``list_installed(module)``
    The sorted names of the packages installed on the host, from ``dpkg-query`` (Debian, Ubuntu) or
    ``rpm`` (Oracle Linux, RHEL), with an empty reason; ``None`` and the reason when neither lists
    them. The ``installed_packages`` module fails on that and returns the names as a fact;
    ``slurm_version_info`` sets the same fact (when it can) in the call the slurm role's preflight
    makes anyway, so that the roles after it need no read of their own.
``dpkg_installed(output)``
    The installed names in ``dpkg-query -W -f '${binary:Package}\\t${db:Status-Abbrev}\\n'``
    output: "ii" and "hi" count, "rc" (config files only) and half-installed states do not.
"""

from __future__ import annotations

from typing import Any


def dpkg_installed(output: str) -> list[str]:
    """Names from ``dpkg-query -W -f '${binary:Package}\\t${db:Status-Abbrev}\\n'``, installed ones only."""
    names = set()
    for line in output.splitlines():
        name, _sep, status = line.partition("\t")
        # "ii " installed, "hi " held and installed; "rc " is config-files only.
        if len(status) >= 2 and status[1] == "i" and name:
            names.add(name.split(":", 1)[0])
    return sorted(names)


def list_installed(module: Any) -> tuple[list[str] | None, str]:
    """(sorted names of the installed packages, "") or (None, why they could not be listed)."""
    dpkg = module.get_bin_path("dpkg-query")
    rpm = module.get_bin_path("rpm")
    if dpkg:
        rc, out, err = module.run_command([dpkg, "-W", "-f", "${binary:Package}\t${db:Status-Abbrev}\n"])
        names = dpkg_installed(out) if rc == 0 else None
    elif rpm:
        rc, out, err = module.run_command([rpm, "-qa", "--queryformat", "%{NAME}\n"])
        names = sorted({line.strip() for line in out.splitlines() if line.strip()}) if rc == 0 else None
    else:
        return None, "neither dpkg-query nor rpm is on this host"
    return names, "" if names is not None else f"listing the packages failed (exit {rc}): {err.strip()}"
