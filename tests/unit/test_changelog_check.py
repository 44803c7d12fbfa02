# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/setup/changelog_check.py against throw-away git repositories: its baseline and verdict."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tests" / "setup" / "changelog_check.py"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
_EDITS = itertools.count()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=GIT_ENV
    ).stdout


def write(repo: Path, path: str, text: str = "x\n") -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)


def commit(repo: Path, *paths: str, message: str = "change") -> None:
    for path in paths:
        write(repo, path, f"{path} {message} {next(_EDITS)}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def check(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--repo", str(repo)], capture_output=True, text=True, env=GIT_ENV, check=False
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main with a plugin, a role, a fragment and a README; HEAD on branch ``work`` at main."""
    git(tmp_path, "init", "-q", "-b", "main")
    write(tmp_path, "changelogs/changelog.yaml", "---\nancestor: null\nreleases: {}\n")
    commit(tmp_path, "plugins/modules/a.py", "roles/r/tasks/main.yml", "changelogs/fragments/old.yml", "README.md")
    git(tmp_path, "checkout", "-q", "-b", "work")
    return tmp_path


def test_plugin_change_without_fragment_fails_naming_the_files(repo: Path) -> None:
    commit(repo, "plugins/modules/a.py", "roles/r/tasks/main.yml", "README.md")
    run = check(repo)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "merge-base with main" in run.stderr
    assert "plugins/modules/a.py" in run.stderr
    assert "roles/r/tasks/main.yml" in run.stderr
    assert "README.md" not in run.stderr


def test_plugin_change_with_a_new_fragment_passes(repo: Path) -> None:
    commit(repo, "plugins/modules/a.py", "changelogs/fragments/new.yml")
    run = check(repo)
    assert run.returncode == 0, run.stderr
    assert "ok against the merge-base with main" in run.stdout


def test_a_changed_fragment_counts(repo: Path) -> None:
    commit(repo, "roles/r/tasks/main.yml", "changelogs/fragments/old.yml")
    assert check(repo).returncode == 0


def test_a_deleted_fragment_does_not_count(repo: Path) -> None:
    write(repo, "plugins/modules/a.py", "edited\n")
    (repo / "changelogs/fragments/old.yml").unlink()
    assert check(repo).returncode == 1


def test_docs_only_change_passes(repo: Path) -> None:
    commit(repo, "README.md", "roles_not_a_role.md", "tests/unit/test_x.py")
    assert check(repo).returncode == 0


def test_uncommitted_and_untracked_changes_count(repo: Path) -> None:
    write(repo, "plugins/filter/new_filter.py")
    run = check(repo)
    assert run.returncode == 1
    assert "plugins/filter/new_filter.py" in run.stderr
    write(repo, "changelogs/fragments/new-filter.yml")
    assert check(repo).returncode == 0


def test_on_main_only_uncommitted_work_is_judged(repo: Path) -> None:
    # A plugin change committed on main without a fragment is history: CI's fresh clone of main
    # has nothing to judge. Uncommitted work on main still is.
    git(repo, "checkout", "-q", "main")
    commit(repo, "plugins/modules/a.py", message="on main")
    assert check(repo).returncode == 0
    write(repo, "roles/r/tasks/main.yml", "edited\n")
    run = check(repo)
    assert run.returncode == 1
    assert "roles/r/tasks/main.yml" in run.stderr
    assert "plugins/modules/a.py" not in run.stderr


def test_origin_main_wins_over_main(repo: Path) -> None:
    # origin/main ahead of the local main: changes already on origin/main are not this branch's.
    git(repo, "checkout", "-q", "main")
    commit(repo, "plugins/modules/a.py", message="upstream")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    git(repo, "checkout", "-q", "work")
    git(repo, "merge", "-q", "--ff-only", "origin/main")
    run = check(repo)
    assert run.returncode == 0, run.stderr
    assert "merge-base with origin/main" in run.stdout


def test_release_tag_is_the_baseline_once_there_is_one(repo: Path) -> None:
    commit(repo, "plugins/modules/a.py", "changelogs/fragments/new.yml", message="feature")
    write(repo, "changelogs/changelog.yaml", "---\nancestor: null\nreleases:\n  0.1.0: {}\n  0.2.0: {}\n")
    (repo / "changelogs/fragments/new.yml").unlink()
    (repo / "changelogs/fragments/old.yml").unlink()
    commit(repo, message="release 0.2.0")
    git(repo, "tag", "v0.2.0")
    assert "release tag v0.2.0" in check(repo).stdout
    commit(repo, "plugins/modules/a.py", message="after the release")
    run = check(repo)
    assert run.returncode == 1
    assert "release tag v0.2.0" in run.stderr


def test_a_release_without_its_tag_falls_back_to_main(repo: Path) -> None:
    write(repo, "changelogs/changelog.yaml", "---\nancestor: null\nreleases:\n  0.1.0: {}\n")
    commit(repo, message="release notes, not tagged")
    assert "merge-base with main" in check(repo).stdout


def test_no_main_branch_is_an_error(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    commit(tmp_path, "README.md")
    run = check(tmp_path)
    assert run.returncode == 2
    assert "neither origin/main nor main" in run.stderr
