#!/usr/bin/env bash
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Prepare this machine for the oci-gpu-lab (idempotent; safe to run any number of times):
#   1. Debian packages: podman with netavark + aardvark-dns (named networks with DNS), crun,
#      debootstrap, iptables (netavark's NAT), iproute2 (the IMDS address on lab bridges).
#   2. Container rlimits within this host's hard limits (containers.conf drop-in).
#   3. cgroup layout: a controller left on cgroup2 while cgroup v1 is in use (hybrid) makes crun
#      refuse every container; such controllers are mounted as v1 hierarchies.
# Options: --check  only report what is missing (exit 1 if anything is).
set -euo pipefail

CHECK_ONLY=0
[[ "${1:-}" == "--check" ]] && CHECK_ONLY=1
PACKAGES=(podman netavark aardvark-dns crun conmon debootstrap iptables iproute2 debian-archive-keyring python3 tar openssh-client)
CONF_DIR=/etc/containers/containers.conf.d
CONF=$CONF_DIR/50-oci-gpu-lab.conf
NPROC_CAP=32768 # podman lowers its own RLIMIT_NPROC to this before starting conmon (measured)
problems=0

say() { printf 'lab prepare: %s\n' "$*"; }
fail() {
	printf 'lab prepare: ERROR: %s\n' "$*" >&2
	exit 1
}
todo() {
	say "needed: $*"
	problems=1
}

[[ $(id -u) -eq 0 ]] || fail "run as root: the lab uses rootful podman with privileged systemd containers."
[[ -r /etc/debian_version ]] || fail "this script supports Debian (12 or newer) only; found no /etc/debian_version."
command -v apt-get >/dev/null || fail "apt-get not found; the lab installs its tools with apt."

# 1. packages ----------------------------------------------------------------------------------
missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	if ((CHECK_ONLY)); then
		todo "Debian packages ${missing[*]}"
	else
		say "installing ${missing[*]}"
		if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/oci-gpu-lab-apt.log 2>&1; then
			apt-get update -q >>/tmp/oci-gpu-lab-apt.log 2>&1 || true
			apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/oci-gpu-lab-apt.log 2>&1 ||
				fail "apt-get could not install ${missing[*]}; see /tmp/oci-gpu-lab-apt.log"
		fi
	fi
fi

# 2. rlimits -------------------------------------------------------------------------------------
# Root here may lack CAP_SYS_RESOURCE: a container asking for more than the hard limit fails with
# "setrlimit RLIMIT_NOFILE: Operation not permitted". Ask for exactly what the host allows.
hard_nofile=$(ulimit -Hn)
hard_nproc=$(ulimit -Hu)
[[ $hard_nofile == unlimited ]] && hard_nofile=1048576
[[ $hard_nproc == unlimited || $hard_nproc -gt $NPROC_CAP ]] && hard_nproc=$NPROC_CAP
want=$(printf '# Written by tests/lab/host_prepare.sh (oci-gpu-lab): rlimits within this host'"'"'s hard limits.\n[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n\n[network]\nnetwork_backend = "netavark"\n' \
	"$hard_nofile" "$hard_nofile" "$hard_nproc" "$hard_nproc")
if [[ ! -f $CONF ]] || [[ "$(cat "$CONF")" != "$want" ]]; then
	if ((CHECK_ONLY)); then
		todo "$CONF with default_ulimits nofile=$hard_nofile nproc=$hard_nproc"
	else
		mkdir -p "$CONF_DIR"
		printf '%s\n' "$want" >"$CONF"
		say "wrote $CONF (nofile=$hard_nofile, nproc=$hard_nproc)"
	fi
fi

# 3. cgroups -------------------------------------------------------------------------------------
if [[ -d /sys/fs/cgroup/devices ]]; then
	# cgroup v1 (or hybrid). Controllers still on cgroup2 make crun refuse: move them to v1.
	v2ctl=""
	[[ -r /sys/fs/cgroup/unified/cgroup.controllers ]] && v2ctl=$(cat /sys/fs/cgroup/unified/cgroup.controllers)
	for c in $v2ctl; do
		if [[ -n $(cat /sys/fs/cgroup/unified/cgroup.subtree_control 2>/dev/null) ]]; then
			fail "cgroup2 delegates controllers ($(cat /sys/fs/cgroup/unified/cgroup.subtree_control)); cannot move '$c' to v1. Use runc instead: set runtime = \"runc\" under [engine] in $CONF."
		fi
		if ((CHECK_ONLY)); then
			todo "mount the '$c' controller as a cgroup v1 hierarchy at /sys/fs/cgroup/$c"
			continue
		fi
		mkdir -p "/sys/fs/cgroup/$c"
		mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c" ||
			fail "could not mount the '$c' cgroup controller as v1 at /sys/fs/cgroup/$c (crun would refuse the hybrid layout)."
		say "mounted the '$c' controller as a cgroup v1 hierarchy (crun refuses hybrid layouts)"
	done
fi

# 4. smoke checks --------------------------------------------------------------------------------
if ((CHECK_ONLY)); then
	((problems)) && exit 1
	say "host is ready"
	exit 0
fi
podman info --format '{{.Host.NetworkBackend}} {{.Host.OCIRuntime.Name}} {{.Host.CgroupsVersion}}' >/tmp/oci-gpu-lab-podman-info 2>/dev/null ||
	fail "'podman info' failed; run it by hand to see why."
read -r backend runtime cgv </tmp/oci-gpu-lab-podman-info
[[ $backend == netavark ]] || fail "podman uses the '$backend' network backend; the lab needs netavark (named networks with DNS)."
say "ready: podman $(podman version --format '{{.Client.Version}}' 2>/dev/null), network $backend, runtime $runtime, cgroups $cgv, nofile=$hard_nofile nproc=$hard_nproc"
