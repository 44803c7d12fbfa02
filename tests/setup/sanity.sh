#!/usr/bin/env bash
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
#
# ansible-test needs the collection at ansible_collections/<namespace>/<name>. Copy the
# files git knows about (tracked, or new and not ignored) into such a tree outside the
# repository (inside it, ansible-test would ask this repository's git for the file list) and
# run sanity there, in ansible-test-managed venvs (--venv: no docker, our venv untouched).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
top=$(mktemp -d "${TMPDIR:-/tmp}/oci_gpu-sanity.XXXXXX")
trap 'rm -rf "$top"' EXIT
dest="$top/ansible_collections/oci_gpu/cluster"
mkdir -p "$dest"
cd "$repo"
git ls-files -z --cached --others --exclude-standard \
  | rsync -a --from0 --files-from=- ./ "$dest/"
cd "$dest"
export PATH="$repo/.venv/bin:$PATH"
ansible-test sanity --venv --requirements --python 3.11 --color no "$@"
