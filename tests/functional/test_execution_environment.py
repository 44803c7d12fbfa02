# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The execution-environment metadata, as ansible-builder sees it in the built collection.

The collection is built and installed into an empty collections path, and ``ansible-builder
introspect`` (what ``ansible-builder build`` runs inside the image) lists its dependencies: they
must be exactly the entries of ``requirements.txt`` and ``bindep.txt``, and those must name the
packages below, so that emptying a file or dropping it from the build fails here.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from ansible_harness import ansible_env
from bindep.depends import Depends
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.unit.test_execution_environment import _entries  # noqa: E402

BIN = Path(sys.executable).parent
FROM = "  # from collection oci_gpu.cluster"

PYTHON_NAMES = {"oci", "kubernetes", "oci-cli"}
SYSTEM_NAMES = {"openssh-clients", "openssh-client"}
# Which package each platform family gets (bindep selectors).
SYSTEM_BY_PLATFORM = {"platform:rpm": ["openssh-clients"], "platform:dpkg": ["openssh-client"]}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The collection built from this checkout and installed into an empty collections path."""
    root = tmp_path_factory.mktemp("ee")
    dist, collections = root / "dist", root / "collections"
    subprocess.run(
        [BIN / "ansible-galaxy", "collection", "build", "--force", "--output-path", dist, REPO],
        check=True,
        capture_output=True,
    )
    (tarball,) = dist.glob("oci_gpu-cluster-*.tar.gz")
    with tarfile.open(tarball) as tar:
        members = set(tar.getnames())
    assert {"meta/execution-environment.yml", "requirements.txt", "bindep.txt"} <= members, (
        "the built collection lacks its execution-environment files (galaxy.yml build_ignore?)"
    )
    # Only this path may count: the checkout's own symlink tree would make the install a no-op.
    env = ansible_env(ANSIBLE_COLLECTIONS_PATH=str(collections))
    subprocess.run(
        [BIN / "ansible-galaxy", "collection", "install", "--no-deps", "-p", collections, tarball],
        check=True,
        capture_output=True,
        env=env,
    )
    return collections


@pytest.fixture(scope="module")
def introspected(installed: Path) -> dict[str, list[str]]:
    run = subprocess.run(
        [BIN / "ansible-builder", "introspect", "--sanitize", installed],
        check=True,
        capture_output=True,
        text=True,
    )
    data = yaml.safe_load(run.stdout)
    assert set(data) == {"python", "system"}, run.stdout
    return data


def test_metadata_points_at_the_two_files(installed: Path) -> None:
    path = installed / "ansible_collections/oci_gpu/cluster/meta/execution-environment.yml"
    meta = yaml.safe_load(path.read_text())
    assert meta == {"version": 1, "dependencies": {"python": "requirements.txt", "system": "bindep.txt"}}


@pytest.mark.parametrize(("kind", "filename"), [("python", "requirements.txt"), ("system", "bindep.txt")])
def test_introspect_lists_exactly_the_files_entries(
    introspected: dict[str, list[str]], kind: str, filename: str
) -> None:
    listed = introspected[kind]
    assert all(line.endswith(FROM) for line in listed), listed
    assert sorted(line.removesuffix(FROM) for line in listed) == sorted(_entries(REPO / filename))


def test_python_requirements_name_what_the_code_imports(introspected: dict[str, list[str]]) -> None:
    reqs = [Requirement(line.removesuffix(FROM)) for line in introspected["python"]]
    assert {r.name for r in reqs} == PYTHON_NAMES
    # Every name once: two lines for one package would be two ranges to reconcile.
    assert len(reqs) == len(PYTHON_NAMES)


def test_system_requirements_per_platform(introspected: dict[str, list[str]]) -> None:
    lines = [line.removesuffix(FROM) for line in introspected["system"]]
    assert {line.split()[0] for line in lines} == SYSTEM_NAMES
    depends = Depends("\n".join(lines) + "\n")
    for profile, expected in SYSTEM_BY_PLATFORM.items():
        assert depends.list_all_packages(depends.active_rules([profile])) == expected, profile


def test_readme_execution_environment_is_accepted_by_ansible_builder(tmp_path: Path) -> None:
    """The README's execution-environment.yml makes a build context that installs this collection."""
    section = (REPO / "README.md").read_text().split("### In an execution environment", 1)[1]
    text = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    definition = yaml.safe_load(text)
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    tarball = f"oci_gpu-cluster-{version}.tar.gz"
    assert definition["additional_build_files"] == [{"src": tarball, "dest": "collections"}]
    (tmp_path / "execution-environment.yml").write_text(text)
    (tmp_path / tarball).write_bytes(b"")
    subprocess.run(
        [BIN / "ansible-builder", "create", "-f", "execution-environment.yml", "-c", "context"],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    requirements = yaml.safe_load((tmp_path / "context/_build/requirements.yml").read_text())
    assert requirements == {"collections": [{"name": f"collections/{tarball}", "type": "file"}]}
    assert (tmp_path / "context/_build/collections" / tarball).exists()
