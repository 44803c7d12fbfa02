# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Containers on Slurm: oci.conf keys per release, the pyxis release check read from real ELF files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.oci_gpu.cluster.plugins.doc_fragments import _slurm_plugin_dirs
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._containers import (
    SPANK_PLUGIN_DIRS,
    enroot_conf_problems,
    enroot_paths,
    oci_conf_problems,
    oci_series,
    plugin_version,
    pyxis_args_problems,
    pyxis_version_problem,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import PLUGIN_DIRS
from ansible_collections.oci_gpu.cluster.plugins.modules import (
    slurm_config_check,
    slurm_node_info,
    slurm_plugin_version,
)


@pytest.mark.parametrize(
    ("version", "series"),
    [
        ("22.05.8", "22.05"),
        ("23.02", "22.05"),
        ("24.05.1", "22.05"),
        ("24.11.5", "24.11"),
        ("25.05", "24.11"),
        (None, "24.11"),
    ],
)
def test_oci_series(version, series) -> None:
    assert oci_series(version) == series


def test_the_role_defaults_pass_on_both_releases() -> None:
    assert oci_conf_problems({}, "22.05", "/run/slurm-oci") == []
    assert oci_conf_problems({}, "24.11", "/run/slurm-oci") == []


def test_22_05_refuses_what_came_with_24_11() -> None:
    config = {
        "EnvExclude": "^(SLURM_CONF)=",
        "RunTimeRun": "crun --rootless=true --root=/run/user/%U run --bundle %b %n.%u.%j.%s.%t",
        "CreateEnvFile": "newline",
    }
    problems = oci_conf_problems(config, "22.05.8")
    assert len(problems) == 3, problems
    assert "slurm_oci_config.EnvExclude: Slurm 22.05 up to 24.05 does not know this oci.conf key" in problems[0]
    assert "does not replace %U" in problems[1] and "%u" in problems[1]
    assert "CreateEnvFile = 'newline': Slurm 22.05 up to 24.05 takes true, false" in problems[2]
    assert oci_conf_problems(config, "24.11.5") == []


def test_unknown_keys_and_values_are_named() -> None:
    problems = oci_conf_problems(
        {"RunTimeQery": "x", "IgnoreFileConfigJson": "maybe", "RunTimeCreate": "crun create %b", "SrunArgs": 'a"b'},
        "24.11",
        "run/relative",
    )
    joined = " | ".join(problems)
    assert "slurm_oci_state_dir = 'run/relative': give an absolute path" in joined
    assert "slurm_oci_config.RunTimeQery: not an oci.conf key (did you mean RunTimeQuery?)" in joined
    assert "slurm_oci_config.IgnoreFileConfigJson = 'maybe': give true or false" in joined
    assert "RunTimeCreate and RunTimeStart go together" in joined
    assert "no newlines or double quotes" in joined
    assert len(problems) == 5


def test_run_and_create_start_exclude_each_other() -> None:
    both = {"RunTimeRun": "crun run %b", "RunTimeCreate": "crun create %b", "RunTimeStart": "crun start %n"}
    assert any("exclude each other" in p for p in oci_conf_problems(both, "22.05"))
    assert oci_conf_problems({"RunTimeCreate": "crun create %b", "RunTimeStart": "crun start %n"}, "22.05") == []


def test_keys_are_matched_without_case_and_twice_is_refused() -> None:
    assert oci_conf_problems({"containerpath": "/tmp/c"}, "22.05") == []
    assert "given twice" in oci_conf_problems({"ContainerPath": "/a", "containerpath": "/b"}, "24.11")[0]


def test_pyxis_args() -> None:
    assert pyxis_args_problems({"runtime_path": "/run/pyxis", "container_scope": "job", "sbatch_support": True}) == []
    problems = pyxis_args_problems({"container_scope": "node", "runtime": "/x", "sbatch_support": 2})
    assert problems == [
        "slurm_pyxis_args.container_scope = 'node': not a value pyxis takes for container_scope",
        "slurm_pyxis_args.runtime: pyxis knows container_scope, execute_entrypoint, runtime_path, "
        "sbatch_support, use_enroot_load",
        "slurm_pyxis_args.sbatch_support = '2': not a value pyxis takes for sbatch_support",
    ]


def test_enroot_paths_and_problems() -> None:
    paths = enroot_paths("/mnt/localdisk/")
    assert paths["ENROOT_RUNTIME_PATH"] == "/mnt/localdisk/enroot/runtime/user-$(id -u)"
    assert paths["ENROOT_DATA_PATH"] == "/mnt/localdisk/enroot/data/user-$(id -u)"
    assert paths["ENROOT_CACHE_PATH"] == "/mnt/localdisk/enroot/cache/user-$(id -u)"
    assert paths["parents"] == "/mnt/localdisk/enroot/runtime /mnt/localdisk/enroot/data /mnt/localdisk/enroot/cache"
    assert paths["top"] == "/mnt/localdisk/enroot"
    assert enroot_conf_problems("/mnt/localdisk", {"ENROOT_SQUASH_OPTIONS": "-comp lzo"}) == []
    assert enroot_conf_problems("scratch", {"squash": "x"}) == [
        "slurm_enroot_base_dir = 'scratch': give an absolute path without spaces",
        "slurm_enroot_config.squash: enroot.conf keys are ENROOT_ followed by capitals",
    ]


# --- the release a plugin was built for, read from real shared objects ---------------------

GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is missing (tests/setup/apt-packages.txt installs it)")


def _build(tmp_path: Path, name: str, source: str, *flags: str) -> bytes:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / f"{name}.so"
    subprocess.run([GCC, "-shared", "-fPIC", "-nostdlib", *flags, "-o", str(out), str(src)], check=True)
    return out.read_bytes()


SPANK = """
const char plugin_name[] = "pyxis";
const char plugin_type[] = "spank";
const unsigned int plugin_version = (({major}) << 16) | (({minor}) << 8) | ({micro});
const unsigned int spank_plugin_version = 0;
int slurm_spank_init(void *sp, int ac, char **av) {{ return 0; }}
"""


@needs_gcc
@pytest.mark.parametrize(("major", "minor", "micro"), [(22, 5, 8), (24, 11, 5), (25, 5, 0)])
def test_plugin_version_from_a_built_plugin(tmp_path, major, minor, micro) -> None:
    data = _build(tmp_path, "spank_pyxis", SPANK.format(major=major, minor=minor, micro=micro))
    assert plugin_version(data) == (major, minor, micro)


@needs_gcc
def test_plugin_version_of_a_stripped_plugin(tmp_path) -> None:
    data = _build(tmp_path, "stripped", SPANK.format(major=24, minor=11, micro=1), "-s")
    assert plugin_version(data) == (24, 11, 1)


@needs_gcc
def test_a_library_without_plugin_version(tmp_path) -> None:
    data = _build(tmp_path, "other", "const unsigned int other_version = 5;\n")
    assert plugin_version(data) is None


def test_not_an_elf_file() -> None:
    with pytest.raises(ValueError, match="not an ELF file"):
        plugin_version(b"#!/bin/sh\necho not a plugin\n" * 4)


def test_pyxis_version_problem_names_both_releases() -> None:
    path = "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"
    assert pyxis_version_problem("24.11.5", "24.11.3", path, "gpu1") == ""
    message = pyxis_version_problem("22.05.8", "24.11.5", path, "gpu1")
    assert message.startswith("gpu1: pyxis (" + path + ") was built for Slurm 22.05, but this host runs Slurm 24.11")
    assert "no plugin_version symbol" in pyxis_version_problem(None, "24.11", path, "gpu1")
    assert pyxis_version_problem(
        None, "24.11", "", "gpu1", found=False, packages=["enroot", "nvslurm-plugin-pyxis"]
    ) == (
        "gpu1: no spank_pyxis.so in Slurm's plugin directories (slurm_pyxis_packages installs it: enroot, "
        "nvslurm-plugin-pyxis)"
    )
    assert pyxis_version_problem(None, "24.11", "/opt/p.so", "gpu1", found=False) == (
        "gpu1: no /opt/p.so (slurm_pyxis_packages installs it: none given)"
    )


def test_plugin_directories_one_list_each() -> None:
    """Slurm's plugin directories and the SPANK search list live in module_utils; every module's
    documented default is that list (ansible-doc shows what the module searches)."""
    assert PLUGIN_DIRS[:1] == ("/usr/lib/x86_64-linux-gnu/slurm-wlm",)
    assert SPANK_PLUGIN_DIRS[: len(PLUGIN_DIRS)] == PLUGIN_DIRS
    assert set(SPANK_PLUGIN_DIRS) - set(PLUGIN_DIRS) == {
        "/usr/lib/x86_64-linux-gnu/slurm",
        "/usr/lib/aarch64-linux-gnu/slurm",
        "/usr/local/lib/slurm",
    }
    for module, option, expected in (
        (slurm_node_info, "plugin_dirs", PLUGIN_DIRS),
        (slurm_config_check, "plugin_dirs", PLUGIN_DIRS),
        (slurm_plugin_version, "dirs", SPANK_PLUGIN_DIRS),
    ):
        doc = yaml.safe_load(module.DOCUMENTATION)
        fragments = {"oci_gpu.cluster._slurm_plugin_dirs": _slurm_plugin_dirs.ModuleDocFragment.DOCUMENTATION}
        # the module's own entry first, then its fragments in order, as ansible-doc merges them
        entries = [doc["options"][option]]
        entries += [
            yaml.safe_load(fragments[name])["options"].get(option, {})
            for name in doc["extends_documentation_fragment"]
            if name in fragments
        ]
        documented = next(entry["default"] for entry in entries if "default" in entry)
        assert tuple(documented) == expected, module.__name__
