# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""installed_packages: dpkg-query's lines to installed package names (the module through ansible-core:
tests/functional)."""

from __future__ import annotations

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._packages import dpkg_installed


def test_only_installed_states_count_and_architecture_suffixes_go() -> None:
    out = "munge\tii \nlibc6:amd64\tii \nslurmd\trc \nheld\thi \nbroken\tiU \nnfs-common\tpn \n"
    assert dpkg_installed(out) == ["held", "libc6", "munge"]
