# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""installed_packages: the installed package names as a fact, read with dpkg-query."""

from __future__ import annotations

import shutil
import subprocess

import adhoc
import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._packages import dpkg_installed


def test_only_installed_states_count_and_architecture_suffixes_go() -> None:
    out = "munge\tii \nlibc6:amd64\tii \nslurmd\trc \nheld\thi \nbroken\tiU \nnfs-common\tpn \n"
    assert dpkg_installed(out) == ["held", "libc6", "munge"]


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="dpkg-query is not on this host (not Debian)")
def test_the_fact_matches_what_dpkg_says_here() -> None:
    result = adhoc.run_module("installed_packages", {}, "--check")
    names = result["ansible_facts"]["oci_gpu_installed_packages"]
    assert result["changed"] is False
    assert names == sorted(names)
    status = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", "python3"], capture_output=True, text=True, check=True
    )
    assert status.stdout.startswith("ii") and "python3" in names
    assert "no-such-package-here" not in names
