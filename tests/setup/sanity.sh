#!/usr/bin/env bash
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
#
# ansible-test needs the collection at ansible_collections/<namespace>/<name>. Copy the
# files git knows about (tracked, or new and not ignored) into such a tree outside the
# repository (inside it, ansible-test would ask this repository's git for the file list) and
# run sanity there, in ansible-test-managed venvs (--venv: no docker, our venv untouched).
#
# Usage: sanity.sh [--bin BIN_DIR] [ansible-test sanity options]. BIN_DIR holds the ansible-test
# to run (default .venv/bin); tests/setup/core_matrix.sh passes each older version's venv.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin="$repo/.venv/bin"
if [ "${1:-}" = --bin ]; then
  bin=$2
  shift 2
fi

# ansible-test's pip bootstrap, offline: the stand-in, under the name this ansible-test looks for.
pip_ver=$("$bin/python" - <<'PY'
import re, ansible_test, pathlib
src = pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
print(re.search(r"pip='([0-9.]+)'", src.read_text()).group(1))
PY
)
mkdir -p "$HOME/.ansible/test/cache"
install -m 0644 "$repo/tests/setup/get_pip_standin.py" "$HOME/.ansible/test/cache/get_pip_${pip_ver//./_}.py"

top=$(mktemp -d "${TMPDIR:-/tmp}/oci_gpu-sanity.XXXXXX")
trap 'rm -rf "$top"' EXIT
dest="$top/ansible_collections/oci_gpu/cluster"
mkdir -p "$dest"
cd "$repo"
git ls-files -z --cached --others --exclude-standard \
  | rsync -a --from0 --files-from=- ./ "$dest/"
cd "$dest"
export PATH="$bin:$PATH"
ansible-test sanity --venv --requirements --python 3.11 --color no "$@"
