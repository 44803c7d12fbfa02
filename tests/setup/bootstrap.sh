#!/usr/bin/env bash
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Everything `make test` and `make demo` need on a fresh Debian 12 machine, as root:
# Debian packages from tests/setup/apt-packages.txt and the pinned venv in .venv (sanity.sh puts
# the offline pip bootstrap stand-in where its ansible-test looks). Idempotent: a second run
# changes nothing and takes seconds.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
python=${PYTHON:-python3}
venv="$repo/.venv"
stamp_dir="$repo/build/stamps"
mkdir -p "$stamp_dir"

die() { echo "bootstrap: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (it installs Debian packages)"

# --- Debian packages --------------------------------------------------------------------
mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' tests/setup/apt-packages.txt)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed: check the machine's apt sources"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || die "apt-get install failed for: ${missing[*]}"
fi

# --- promtool and amtool, unpacked from Debian's packages (the monitoring role's rule and
# configuration tests); nothing is installed, so no daemon lands on this machine
tools="$repo/build/prometheus-tools"
if [ ! -x "$tools/usr/bin/promtool" ] || [ ! -x "$tools/usr/bin/amtool" ]; then
  echo "bootstrap: unpacking promtool and amtool into $tools"
  dl=$(mktemp -d)
  (cd "$dl" && apt-get download -qq prometheus prometheus-alertmanager >/dev/null 2>&1) \
    || { apt-get update -qq && (cd "$dl" && apt-get download -qq prometheus prometheus-alertmanager >/dev/null 2>&1); } \
    || die "apt-get download failed for prometheus, prometheus-alertmanager: check the machine's apt sources"
  for deb in "$dl"/*.deb; do dpkg-deb -x "$deb" "$tools"; done
  rm -rf "$dl"
  if [ ! -x "$tools/usr/bin/promtool" ] || [ ! -x "$tools/usr/bin/amtool" ]; then
    die "no promtool or amtool in the packages"
  fi
fi

# --- Python venv with pinned tools --------------------------------------------------------
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "$python is $("$python" -V 2>&1); Python 3.11 or newer is required"
req_hash=$(sha256sum tests/requirements.txt | cut -c1-16)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp_dir/venv" 2>/dev/null)" != "$req_hash" ]; then
  echo "bootstrap: creating $venv from tests/requirements.txt"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r tests/requirements.txt
  echo "$req_hash" > "$stamp_dir/venv"
fi

echo "bootstrap: ready (ansible-core $("$venv/bin/python" -c "import ansible.release as r; print(r.__version__)"))"
