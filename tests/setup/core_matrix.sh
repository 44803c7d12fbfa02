#!/usr/bin/env bash
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The ansible-core matrix. meta/runtime.yml claims ansible-core 2.17 and 2.18 besides the 2.19 in
# .venv, which runs every other check. Each older version gets its own venv,
# build/core-matrix/<version>/venv: tests/requirements-core-<version>.txt (ansible-core and the
# `ansible` release built on it, whose collections are the dependencies) plus the test tools at
# tests/requirements.txt's pins. In it run:
#   build   build -> install into an empty path -> ansible-doc of every plugin and role (build_check.sh)
#   sanity  the ansible-test sanity tests that judge the collection by that version's rules (below)
#   tests   the functional tests that run the collection through ansible-core (core_matrix_tests.txt)
# The versions run side by side, one core each, and each step prints its time.
#
# Usage: core_matrix.sh [VERSION...]   (default: every tests/requirements-core-<version>.txt)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
python=${PYTHON:-python3}
pip="$repo/.venv/bin/pip"
[ -x "$pip" ] || { echo "core-matrix: no $pip; run make setup first"; exit 1; }
export ANSIBLE_COLLECTIONS_PATH="$repo/build/collections"
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=true

versions=("$@")
if [ "${#versions[@]}" -eq 0 ]; then
  for f in tests/requirements-core-*.txt; do
    v=${f#tests/requirements-core-}
    versions+=("${v%.txt}")
  done
fi

# What the chosen tests import besides ansible, at the pins everything else uses.
tools=(pytest hypothesis oci jmespath netaddr cryptography)
tool_reqs=$(grep -E "^($(IFS='|'; echo "${tools[*]}"))(==.*)?$" tests/requirements.txt)
[ "$(wc -l <<<"$tool_reqs")" -eq "${#tools[@]}" ] \
  || { echo "core-matrix: tests/requirements.txt does not name each of: ${tools[*]}"; exit 1; }
mapfile -t chosen_tests < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' tests/setup/core_matrix_tests.txt)
# The sanity tests whose verdict is the version's own: the documentation and argument-spec schema
# (validate-modules, ansible-doc, action-plugin-docs), what plugins may import (import) and the
# meta/runtime.yml schema (runtime-metadata). The others judge the code alone (pylint, pep8,
# compile, yamllint, the file checks) and run under 2.19 in `make sanity`; pylint alone would add
# about a minute a version.
sanity_tests=(--test action-plugin-docs --test ansible-doc --test import --test runtime-metadata --test validate-modules)

seconds_since() { local now=${EPOCHREALTIME/./}; printf '%.1f' "$(( now - $1 ))e-6"; }

# step <version> <name> <command...>: run the command, then print its time and verdict.
step() {
  local v=$1 name=$2 t0=${EPOCHREALTIME/./} rc=0
  shift 2
  "$@" || rc=$?
  printf 'core-matrix %s: %-5s %6s s %s\n' "$v" "$name" "$(seconds_since "$t0")" \
    "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")"
  return "$rc"
}

# make_venv <version> <dir>: (re)create the venv when it is missing or its requirements changed.
make_venv() {
  local v=$1 dir=$2 want
  want=$({ cat "tests/requirements-core-$v.txt"; echo "$tool_reqs"; } | sha256sum | cut -c1-16)
  if [ -x "$dir/venv/bin/python" ] && [ "$(cat "$dir/venv.stamp" 2>/dev/null)" = "$want" ]; then
    echo "venv: $dir/venv is up to date"
    return 0
  fi
  rm -rf "$dir/venv" "$dir/venv.stamp" "$dir/pycache"
  "$python" -m venv --without-pip "$dir/venv"
  # .venv's pip installs into it (no pip of its own to bootstrap), from pip's cache of wheels after
  # the first time. --no-compile: the `ansible` package and oci are 40,000 files, of which the tests
  # import a few hundred; Python writes those into $dir/pycache as they are first imported.
  # shellcheck disable=SC2086  # one requirement a word
  "$pip" --python "$dir/venv/bin/python" install -q --no-compile \
    -r "tests/requirements-core-$v.txt" $tool_reqs >"$dir/pip.log" 2>&1 \
    || { grep -v 'is ignored: it is neither a file nor a directory' "$dir/pip.log"; return 1; }
  echo "$want" >"$dir/venv.stamp"
}

run_tests() {
  local dir=$1 tmp rc=0
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/oci_gpu-core-matrix.XXXXXX")
  PATH="$dir/venv/bin:$PATH" "$dir/venv/bin/python" -m pytest -q -p no:cacheprovider --basetemp "$tmp" \
    "${chosen_tests[@]}" || rc=$?
  rm -rf "$tmp"
  return "$rc"
}

one_version() {
  local v=$1 dir="$repo/build/core-matrix/$1"
  # Bytecode of what is imported, written once into the version's own cache (outside the checkout),
  # also where the environment sets PYTHONDONTWRITEBYTECODE (as this machine's does): without it
  # every ansible process would compile ansible-core and oci again, twice the time.
  unset PYTHONDONTWRITEBYTECODE
  export PYTHONPYCACHEPREFIX="$dir/pycache"
  [ -f "tests/requirements-core-$v.txt" ] || { echo "core-matrix: no tests/requirements-core-$v.txt"; return 1; }
  step "$v" venv make_venv "$v" "$dir" || return 1
  local core
  core=$("$dir/venv/bin/python" -c 'import ansible.release as r; print(r.__version__)')
  [[ $core == "$v".* ]] || { echo "core-matrix: $dir/venv has ansible-core $core, not $v"; return 1; }
  step "$v" build bash tests/setup/build_check.sh "$dir/venv/bin" || return 1
  # The first version checks sanity before its tests, the others after, so they seldom wait on
  # the lock: ansible-test keeps its venvs in ~/.ansible/test/venv, some shared between versions.
  if [ "$2" -ne 0 ]; then step "$v" tests run_tests "$dir" || return 1; fi
  step "$v" sanity flock "$repo/build/core-matrix/sanity.lock" \
    bash tests/setup/sanity.sh --bin "$dir/venv/bin" "${sanity_tests[@]}" || return 1
  if [ "$2" -eq 0 ]; then step "$v" tests run_tests "$dir" || return 1; fi
}

t0=${EPOCHREALTIME/./}
pids=()
for v in "${versions[@]}"; do
  mkdir -p "build/core-matrix/$v"
  one_version "$v" "${#pids[@]}" >"build/core-matrix/$v/log" 2>&1 &
  pids+=($!)
done
failed=()
for i in "${!versions[@]}"; do
  v=${versions[$i]}
  wait "${pids[$i]}" || failed+=("$v")
  echo "=== ansible-core $v (build/core-matrix/$v/log)"
  cat "build/core-matrix/$v/log"
done
echo "=== step times"
for v in "${versions[@]}"; do grep '^core-matrix ' "build/core-matrix/$v/log" || true; done
echo "core-matrix: ansible-core ${versions[*]} in $(seconds_since "$t0") s (side by side)"
[ "${#failed[@]}" -eq 0 ] || { echo "core-matrix: FAILED under ansible-core ${failed[*]}"; exit 1; }
