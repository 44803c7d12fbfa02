#!/usr/bin/env bash
# Test only: offers this lab node's installed Slurm packages again, as a newer point release
# (<version>+lab1), from a local package repository, so that the slurm role's slurm_upgrade runs a
# real package upgrade: Debian ships one Slurm per release, so no newer one exists to upgrade to.
# The binaries are Debian's own (apt-get download), only the version in each package's control
# file changes (and the exact-version dependencies between Slurm's packages with it). Uncompressed
# (-Znone): the repository is gone with the container.
set -euo pipefail
repo=/var/lib/oci-gpu-lab/point-release
rm -rf "$repo"
mkdir -p "$repo/unpacked"
cd "$repo/unpacked"
mapfile -t pkgs < <(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' 'slurm*' 'libslurm*' 'libpmi*' \
  'libpam-slurm*' 2>/dev/null | awk '$1 == "ii" { print $2 }')
old=$(dpkg-query -W -f '${Version}' slurm-client)
new="${old}+lab1"
apt-get download -qq -o APT::Sandbox::User=root "${pkgs[@]}"
for deb in *.deb; do
  dir=${deb%.deb}
  dpkg-deb -R "$deb" "$dir"
  sed -i -e "s/^Version: .*/Version: ${new}/" -e "s/(= ${old})/(= ${new})/g" "$dir/DEBIAN/control"
  dpkg-deb -Znone --build "$dir" "$repo/${dir%%_*}_${new}_$(dpkg-deb -f "$deb" Architecture).deb" >/dev/null
done
cd "$repo"
rm -rf unpacked
# The index apt reads (dpkg-scanpackages is in dpkg-dev, not on a lab node).
for deb in *.deb; do
  dpkg-deb -f "$deb"
  printf 'Filename: ./%s\nSize: %s\nSHA256: %s\n\n' "$deb" "$(stat -c %s "$deb")" "$(sha256sum "$deb" | cut -d' ' -f1)"
done > Packages
echo "deb [trusted=yes] file:$repo ./" > /etc/apt/sources.list.d/lab-point-release.list
apt-get update -qq -o Dir::Etc::sourcelist=sources.list.d/lab-point-release.list \
  -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
apt-cache policy slurm-client | sed -n 's/^ *Candidate: //p'
