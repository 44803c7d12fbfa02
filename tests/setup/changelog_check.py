# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fail when ``plugins/`` or ``roles/`` changed without a changelog fragment (run by ``make lint``).

The rule:

* Baseline: the tag of the newest release in ``changelogs/changelog.yaml`` (tag ``X`` or ``vX``),
  when the file lists a release and such a tag exists; otherwise the merge-base of HEAD with the
  main branch (``origin/main`` when that ref exists, else ``main``).
* Changes: what differs between the baseline and the working tree (commits since the baseline,
  staged and unstaged edits), plus untracked files that git does not ignore.
* Verdict: when any change is under ``plugins/`` or ``roles/``, at least one ``.yml``/``.yaml``
  file under ``changelogs/fragments/`` must be among the changes, added or modified. A change users
  do not see takes a fragment with only a ``trivial:`` entry.

On a branch this judges the branch's work. When HEAD is the baseline (main itself, as in CI's
fresh clone of main, or a release tag) only uncommitted work remains to judge, and a clean
checkout passes: the check guards work before it is merged, not main's history.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml
from packaging.version import InvalidVersion, Version

WATCHED = ("plugins/", "roles/")
FRAGMENTS = "changelogs/fragments/"


class CheckError(Exception):
    """The baseline cannot be found; the message says what was looked for."""


def git(repo: Path, *args: str) -> str:
    run = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise CheckError(f"git {' '.join(args)}: {run.stderr.strip()}")
    return run.stdout


def _ref_commit(repo: Path, ref: str) -> str | None:
    run = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "-q", "--verify", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return run.stdout.strip() if run.returncode == 0 else None


def release_tag(repo: Path) -> str | None:
    """The tag of the newest release that changelog.yaml lists and git has, if any."""
    path = repo / "changelogs" / "changelog.yaml"
    if not path.exists():
        return None
    releases = (yaml.safe_load(path.read_text()) or {}).get("releases") or {}
    versions = []
    for name in releases:
        try:
            versions.append(Version(str(name)))
        except InvalidVersion:
            continue
    for version in sorted(versions, reverse=True):
        for tag in (str(version), f"v{version}"):
            if _ref_commit(repo, f"refs/tags/{tag}"):
                return tag
    return None


def baseline(repo: Path) -> tuple[str, str]:
    """(commit, how it was chosen)."""
    tag = release_tag(repo)
    if tag:
        return _ref_commit(repo, f"refs/tags/{tag}") or "", f"release tag {tag}"
    for branch in ("refs/remotes/origin/main", "refs/heads/main"):
        if _ref_commit(repo, branch):
            base = git(repo, "merge-base", "HEAD", branch).strip()
            return base, f"merge-base with {branch.split('/', 2)[2]}"
    raise CheckError("no release tag from changelogs/changelog.yaml and neither origin/main nor main exists")


def changed_paths(repo: Path, base: str) -> list[tuple[str, str]]:
    """(status letter, path) for every change from ``base`` to the working tree; untracked = ``A``."""
    out = []
    for line in git(repo, "diff", "--name-status", "--no-renames", base).splitlines():
        status, path = line.split("\t", 1)
        out.append((status[0], path))
    out.extend(("A", path) for path in git(repo, "ls-files", "--others", "--exclude-standard").splitlines())
    return out


def judge(changes: list[tuple[str, str]]) -> list[str]:
    """The watched paths that changed, when no fragment was added or modified; else ``[]``."""
    watched = sorted({path for _status, path in changes if path.startswith(WATCHED)})
    fragment = any(
        status != "D" and path.startswith(FRAGMENTS) and path.endswith((".yml", ".yaml")) for status, path in changes
    )
    return [] if fragment else watched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args(argv)
    try:
        base, how = baseline(args.repo)
        missing = judge(changed_paths(args.repo, base))
    except CheckError as exc:
        print(f"changelog check: {exc}", file=sys.stderr)
        return 2
    where = f"{how} ({base[:12]})"
    if missing:
        shown = "\n".join(f"  {path}" for path in missing)
        print(
            f"changelog check: plugins/ or roles/ changed since the {where} without a new or changed "
            f"fragment under {FRAGMENTS}:\n{shown}\n"
            "Add one (see changelogs/config.yaml for the sections; only `trivial:` for a change users do not see).",
            file=sys.stderr,
        )
        return 1
    print(f"changelog check: ok against the {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
