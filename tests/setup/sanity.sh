#!/usr/bin/env bash
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
#
# ansible-test needs the collection at ansible_collections/<namespace>/<name>. Copy the
# files git knows about (tracked, or new and not ignored) into such a tree under build/ and
# run sanity there, in ansible-test-managed venvs (--venv: no docker, our venv untouched).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dest="$repo/build/sanity/ansible_collections/oci_gpu/cluster"
rm -rf "$repo/build/sanity"
mkdir -p "$dest"
cd "$repo"
git ls-files -z --cached --others --exclude-standard \
  | rsync -a --from0 --files-from=- ./ "$dest/"
cd "$dest"
export PATH="$repo/.venv/bin:$PATH"
exec ansible-test sanity --venv --requirements --python 3.11 --color no "$@"
