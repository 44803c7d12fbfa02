#!/usr/bin/env bash
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Build the collection tarball, install it into an empty collections path (dependencies come
# from the `ansible` package: Galaxy is not reachable) and check that ansible-doc shows every
# plugin the repository has.
#
# Usage: build_check.sh [BIN_DIR]. BIN_DIR holds the ansible-core to check with (default .venv/bin,
# whose tarball stays in build/dist); tests/setup/core_matrix.sh passes each older version's venv.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
bin=${1:-$repo/.venv/bin}
[ -x "$bin/ansible-galaxy" ] || { echo "build: no ansible-galaxy in $bin"; exit 1; }
export PATH="$bin:$PATH"
core=$("$bin/python" -c 'import ansible.release as r; print(r.__version__)')
install_path=$(mktemp -d "${TMPDIR:-/tmp}/oci_gpu-install.XXXXXX")
trap 'rm -rf "$install_path"' EXIT
if [ $# -eq 0 ]; then
  out="$repo/build/dist"
  rm -rf "$out"
  mkdir -p "$out"
else
  out="$install_path/dist"  # another version's run: nothing kept, and runs side by side never meet
fi
ansible-galaxy collection build --force --output-path "$out" >/dev/null
tarball=$(ls "$out"/oci_gpu-cluster-*.tar.gz)
echo "build: $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB) with ansible-core $core"

# The tarball must not carry test-only or generated files.
leaked=$(tar -tzf "$tarball" | grep -E '^(tests|molecule|\.venv|build|\.ci)/|__pycache__|\.pyc$' || true)
[ -z "$leaked" ] || { echo "build: tarball carries test-only or generated files:"; echo "$leaked"; exit 1; }

export ANSIBLE_COLLECTIONS_PATH="$install_path/collections"
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=true
ansible-galaxy collection install --no-deps -p "$install_path/collections" "$tarball" >/dev/null

# One ansible-doc --json call per plugin type. ansible-doc exits 0 for a plugin it cannot find
# (ansible-core 2.19 only warns), so every name must come back as an entry with its doc.
checked=0
doc_check() {  # <type> <name>...
  local type=$1; shift
  ansible-doc --json -t "$type" "$@" >"$install_path/doc.json" 2>"$install_path/err" || {
    echo "build: ansible-doc -t $type failed on the installed collection:"; cat "$install_path/err"; exit 1; }
  python3 - "$install_path/doc.json" "$type" "$@" <<'PY' || { cat "$install_path/err"; exit 1; }
import json, sys
path, kind, names = sys.argv[1], sys.argv[2], sys.argv[3:]
data = json.load(open(path))
key = "entry_points" if kind == "role" else "doc"
missing = [n for n in names if not (data.get(n) or {}).get(key)]
if missing:
    print(f"build: ansible-doc -t {kind} shows no documentation for {', '.join(missing)} in the installed collection")
    sys.exit(1)
PY
  checked=$((checked + $#))
}
for type_dir in filter inventory modules lookup test callback connection; do
  [ -d "plugins/$type_dir" ] || continue
  case "$type_dir" in modules) type=module ;; *) type=$type_dir ;; esac
  names=()
  for f in "plugins/$type_dir"/*.py; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .py)
    case "$name" in _*) continue ;; esac
    names+=("oci_gpu.cluster.$name")
  done
  [ "${#names[@]}" -eq 0 ] || doc_check "$type" "${names[@]}"
done
roles=()
for r in roles/*/; do
  [ -d "$r" ] || continue
  name=$(basename "$r")
  case "$name" in _*) continue ;; esac
  roles+=("oci_gpu.cluster.$name")
done
[ "${#roles[@]}" -eq 0 ] || doc_check role "${roles[@]}"
[ "$checked" -gt 0 ] || { echo "build: found no plugins or roles to check"; exit 1; }
echo "build: installed into an empty collections path; ansible-doc $core shows all $checked plugins and roles"
