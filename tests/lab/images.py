# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the lab's Debian base images without any registry: debootstrap + ``podman import``.

The mirror is whatever apt on this machine is configured with, read at run time. Images are
tagged ``localhost/oci-gpu-lab/debian:<suite>`` and labelled with a hash of their recipe, so a
second build is a no-op and a changed recipe rebuilds.
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

IMAGE_REPO = "localhost/oci-gpu-lab/debian"
RECIPE_LABEL = "oci_gpu_lab.recipe"
SUITES = ("bookworm", "trixie")
BUILD_ROOT = Path(os.environ.get("OCI_GPU_LAB_BUILD_DIR", "/var/tmp/oci-gpu-lab-build"))

# What every lab node has: systemd as PID 1, what Ansible needs (sshd, python3, python3-apt for
# the apt module, sudo for become) and a few tools roles and people expect on a node.
BASE_PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "python3",
    "python3-apt",
    "sudo",
    "openssh-server",
    "iproute2",
    "iputils-ping",
    "procps",
    "kmod",
    "ca-certificates",
    "less",
    "libnfs-utils",  # the mount.nfs stand-in's real NFSv3 probe (tests/lab/mount_nfs.py)
)

# Downloaded (not installed) into the image's apt cache: the Slurm/storage roles install them
# for real, but without fetching ~100 MB per node. Names missing from a suite are skipped.
PREFETCH_PACKAGES = (
    "munge",
    "slurm-wlm",
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "slurm-client",
    "slurm-wlm-mysql-plugin",
    "mariadb-server",
    "python3-pymysql",
    "nfs-common",
    "mdadm",
    "e2fsprogs",
    "xfsprogs",
    "nfs-ganesha",  # the lab's NFS server (nodes with the "nfs" role)
    "nfs-ganesha-vfs",
)

# Units that make no sense in a container, or that would take the dpkg lock behind a role's back.
MASKED_UNITS = (
    "systemd-modules-load.service",  # trixie fails it on this host (DESIGN §5); no modules in a container
    "systemd-firstboot.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "getty@tty1.service",
    "console-getty.service",
)

# The NoCloud seed step of nodes the lab cloud launches (installed as /usr/local/sbin/oci-gpu-lab-imds-seed).
IMDS_SEED = Path(__file__).resolve().parent / "imds_seed.py"

# Runs inside the debootstrapped tree (chroot). $1 = prefetch package list, space separated.
CONFIGURE_SCRIPT = r"""
set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id /etc/hostname
for unit in $MASKED_UNITS; do ln -sfn /dev/null "/etc/systemd/system/$unit"; done
# Keep what roles download, so a rebuilt node does not fetch it again.
printf 'APT::Keep-Downloaded-Packages "true";\n' > /etc/apt/apt.conf.d/10oci-gpu-lab-keep-debs
printf 'Acquire::Retries "3";\n' > /etc/apt/apt.conf.d/10oci-gpu-lab-retries
apt-get update -q
if [ -n "$PREFETCH" ]; then
  have=""
  for p in $PREFETCH; do
    if apt-cache show "$p" >/dev/null 2>&1; then have="$have $p"
    else echo "prefetch: $p is not in this suite, skipped"; fi
  done
  apt-get install -y -q --download-only $have
fi
rm -f /var/cache/apt/*.bin
# SSH as on an OCI image: key logins only, the admin user opc with passwordless sudo. Host keys are
# made at each node's first boot (lab-ssh-hostkeys.service), so no two nodes share one.
rm -f /etc/ssh/ssh_host_*
mkdir -p /etc/ssh/sshd_config.d
cat > /etc/ssh/sshd_config.d/50-oci-gpu-lab.conf <<'SSHD'
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UseDNS no
MaxSessions 64
MaxStartups 64:30:128
SSHD
# OpenSSH 9.8+ (trixie) penalises an address whose logins fail or time out by refusing it for a
# while; every Ansible connection of the lab comes from one address (the host), so it stays off.
if /usr/sbin/sshd -G -f /dev/null -o PerSourcePenalties=no >/dev/null 2>&1; then
  echo 'PerSourcePenalties no' >> /etc/ssh/sshd_config.d/50-oci-gpu-lab.conf
fi
cat > /etc/systemd/system/lab-ssh-hostkeys.service <<'UNIT'
[Unit]
Description=oci-gpu-lab: this node's own SSH host keys (test only)
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target ssh.service
UNIT
wants=/etc/systemd/system/multi-user.target.wants
mkdir -p $wants
ln -sfn /etc/systemd/system/lab-ssh-hostkeys.service $wants/lab-ssh-hostkeys.service
[ -e $wants/ssh.service ] || ln -sfn /lib/systemd/system/ssh.service $wants/ssh.service
# opc's home is local, outside /home: a File Storage export mounted on /home (the demo's shared
# home) would hide it, and Ansible keeps its remote temporary files there.
useradd --create-home --home-dir /var/lib/opc --shell /bin/bash --uid 1500 opc
printf 'opc ALL=(ALL) NOPASSWD: ALL\n' > /etc/sudoers.d/90-opc
chmod 0440 /etc/sudoers.d/90-opc
# cloud-init, as on an OCI image, but off: only a node the lab cloud launches boots with it
# (tests/lab/cloud.py removes cloud-init.disabled before its first start). Its user_data comes from
# the lab IMDS: a seed step fills the NoCloud datasource from /opc/v2/instance/ at boot (the Oracle
# datasource will not run in a container: it reads the chassis asset tag, which containers lack).
apt-get install -y -q --no-install-recommends cloud-init
touch /etc/cloud/cloud-init.disabled
cat > /etc/cloud/cloud.cfg.d/90-oci-gpu-lab.cfg <<'CFG'
# oci-gpu-lab (test only): the lab's IMDS seeds NoCloud; podman owns the network and the hostname
datasource_list: [NoCloud, None]
network: {config: disabled}
preserve_hostname: true
disable_root: false
ssh_deletekeys: false
ssh_genkeytypes: []
CFG
install -m 0755 /tmp/oci-gpu-lab-imds-seed /usr/local/sbin/oci-gpu-lab-imds-seed
rm -f /tmp/oci-gpu-lab-imds-seed
chmod 0755 /usr/local/sbin/oci-gpu-lab-imds-seed
mkdir -p /etc/systemd/system/cloud-init-local.service.d
printf '[Service]\nExecStartPre=/usr/local/sbin/oci-gpu-lab-imds-seed\n' \
  > /etc/systemd/system/cloud-init-local.service.d/50-oci-gpu-lab-seed.conf
rm -f /var/cache/apt/*.bin
"""


@dataclass
class AptSource:
    """One ``deb`` source as apt sees it."""

    uri: str
    suites: list[str]
    components: list[str] = field(default_factory=list)


def parse_deb822(text: str) -> list[AptSource]:
    """Parse deb822 ``.sources`` text into its ``deb`` entries (disabled stanzas skipped)."""
    out: list[AptSource] = []
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for raw in stanza.splitlines():
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            if raw[0] in " \t" and key:
                fields[key] += " " + raw.strip()
                continue
            key, _sep, value = raw.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
            continue
        for uri in fields.get("uris", "").split():
            out.append(AptSource(uri, fields.get("suites", "").split(), fields.get("components", "").split()))
    return out


def parse_one_line(text: str) -> list[AptSource]:
    """Parse classic ``sources.list`` lines (``deb [opts] uri suite comp...``)."""
    out: list[AptSource] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        words = line.split()[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words.pop(0)
            words = words[1:]
        if len(words) >= 2:
            out.append(AptSource(words[0], [words[1]], words[2:]))
    return out


def host_apt_sources(root: str = "/etc/apt") -> list[AptSource]:
    """Every ``deb`` source this machine's apt is configured with."""
    sources: list[AptSource] = []
    one_line = [os.path.join(root, "sources.list"), *sorted(glob.glob(os.path.join(root, "sources.list.d", "*.list")))]
    for path in one_line:
        if os.path.isfile(path):
            sources += parse_one_line(Path(path).read_text(encoding="utf-8", errors="replace"))
    for path in sorted(glob.glob(os.path.join(root, "sources.list.d", "*.sources"))):
        sources += parse_deb822(Path(path).read_text(encoding="utf-8", errors="replace"))
    return sources


def debian_mirrors(sources: list[AptSource]) -> tuple[str, str | None]:
    """(archive URI, security URI or None) taken from apt's configuration."""
    archive = security = None
    for src in sources:
        for suite in src.suites:
            if suite.endswith("-security") and security is None:
                security = src.uri.rstrip("/")
            elif "-" not in suite and "/" not in suite and archive is None and src.uri.startswith("http"):
                archive = src.uri.rstrip("/")
    if archive is None:
        raise SystemExit(
            "lab images: apt on this machine has no plain Debian suite (like 'bookworm') in "
            "/etc/apt/sources.list or /etc/apt/sources.list.d/*.sources; the images are built from that mirror."
        )
    return archive, security


def suite_exists(uri: str, suite: str) -> bool:
    """True when the mirror serves ``dists/<suite>/`` (checked with a HEAD on its Release file)."""
    for name in ("InRelease", "Release"):
        req = urllib.request.Request(f"{uri}/dists/{suite}/{name}", method="HEAD")
        try:
            with urllib.request.urlopen(req, timeout=15) as resp:
                if resp.status == 200:
                    return True
        except (urllib.error.URLError, TimeoutError, OSError):
            continue
    return False


def image_sources(suite: str, archive: str, security: str | None) -> str:
    """The image's own deb822 apt sources: the suite, plus -updates and -security where served."""
    suites = [suite] + [s for s in (f"{suite}-updates",) if suite_exists(archive, s)]
    text = (
        f"Types: deb\nURIs: {archive}\nSuites: {' '.join(suites)}\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
    if security and suite_exists(security, f"{suite}-security"):
        text += (
            f"\nTypes: deb\nURIs: {security}\nSuites: {suite}-security\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        )
    return text


def recipe(suite: str, prefetch: bool = True) -> dict[str, object]:
    """Everything that decides an image's content (the mirror does not: it serves the same suite)."""
    return {
        "suite": suite,
        "variant": "minbase",
        "packages": list(BASE_PACKAGES),
        "prefetch": list(PREFETCH_PACKAGES) if prefetch else [],
        "masked": list(MASKED_UNITS),
        "configure": CONFIGURE_SCRIPT,
        "imds_seed": IMDS_SEED.read_text(),
        "format": 1,
    }


def recipe_hash(rec: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(rec, sort_keys=True).encode()).hexdigest()[:16]


def image_ref(suite: str) -> str:
    return f"{IMAGE_REPO}:{suite}"


def _podman(*args: str, check: bool = True, capture: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], check=check, text=True, capture_output=capture)


def current_hash(suite: str) -> str | None:
    """The recipe hash of the image now tagged for ``suite``, or None when there is none."""
    res = _podman(
        "image", "inspect", "--format", '{{ index .Labels "' + RECIPE_LABEL + '" }}', image_ref(suite), check=False
    )
    if res.returncode != 0:
        return None
    return res.stdout.strip() or None


def _run(cmd: list[str], log: Path, **kwargs: object) -> None:
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        res = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False, **kwargs)  # type: ignore[call-overload]
    if res.returncode != 0:
        tail = "".join(log.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)[-25:])
        raise SystemExit(f"lab images: {' '.join(cmd[:3])} ... failed (exit {res.returncode}); log {log}:\n{tail}")


def _chroot_mounts(root: Path) -> list[Path]:
    mounted = []
    for fs, target, opts in (("proc", "proc", []), ("sysfs", "sys", ["-o", "ro"]), ("devpts", "dev/pts", [])):
        path = root / target
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", fs, *opts, fs, str(path)], check=True)
        mounted.append(path)
    return mounted


def build(suite: str, *, force: bool = False, prefetch: bool = True, quiet: bool = False) -> dict[str, object]:
    """Build (or keep) the image for ``suite``; returns what happened with timings and size."""
    if suite not in SUITES:
        raise SystemExit(f"lab images: unknown suite {suite!r}; choose one of {', '.join(SUITES)}")
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    # One build per suite at a time: a second caller waits, then finds the image up to date.
    with open(BUILD_ROOT / f"{suite}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(suite, force=force, prefetch=prefetch, quiet=quiet)


def _build_locked(suite: str, *, force: bool, prefetch: bool, quiet: bool) -> dict[str, object]:
    rec = recipe(suite, prefetch)
    digest = recipe_hash(rec)
    if not force and current_hash(suite) == digest:
        return {"suite": suite, "image": image_ref(suite), "recipe": digest, "built": False, "seconds": 0.0}
    for tool in ("debootstrap", "podman", "mount", "chroot"):
        if shutil.which(tool) is None:
            raise SystemExit(f"lab images: '{tool}' is not installed; run tests/lab/host_prepare.sh first")
    archive, security = debian_mirrors(host_apt_sources())
    start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f"{suite}-{digest}-", dir=BUILD_ROOT))
    log = work / "build.log"
    root = work / "rootfs"
    mounted: list[Path] = []
    try:
        if not quiet:
            print(f"lab images: debootstrap {suite} from apt's configured mirror (log {log})", flush=True)
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                "--components=main",
                "--include=" + ",".join(BASE_PACKAGES),
                "--keyring=/usr/share/keyrings/debian-archive-keyring.gpg",
                suite,
                str(root),
                archive,
            ],
            log,
        )
        (root / "etc/apt/sources.list").unlink(missing_ok=True)
        (root / "etc/apt/sources.list.d").mkdir(parents=True, exist_ok=True)
        (root / "etc/apt/sources.list.d/debian.sources").write_text(image_sources(suite, archive, security))
        resolv = root / "etc/resolv.conf"
        resolv.unlink(missing_ok=True)
        shutil.copyfile("/etc/resolv.conf", resolv)
        # Debian nodes have python3 but no 'python' (the file's own shebang, for ansible-test)
        seed = "#!/usr/bin/python3\n" + IMDS_SEED.read_text().split("\n", 1)[1]
        (root / "tmp/oci-gpu-lab-imds-seed").write_text(seed)
        mounted = _chroot_mounts(root)
        env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "MASKED_UNITS": " ".join(MASKED_UNITS),
            "PREFETCH": " ".join(rec["prefetch"]),  # type: ignore[arg-type]
        }
        _run(["chroot", str(root), "/bin/sh", "-c", CONFIGURE_SCRIPT], log, env=env)
        for path in reversed(mounted):
            subprocess.run(["umount", str(path)], check=True)
        mounted = []
        resolv.unlink()
        if not quiet:
            print(f"lab images: importing {image_ref(suite)}", flush=True)
        tag = f"{IMAGE_REPO}:{suite}-{digest}"
        with subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE) as tar:
            imp = subprocess.run(
                [
                    "podman",
                    "import",
                    "--change",
                    'CMD ["/sbin/init"]',
                    "--change",
                    "STOPSIGNAL SIGRTMIN+3",
                    "--change",
                    "ENV container=podman",
                    "--change",
                    f"LABEL {RECIPE_LABEL}={digest}",
                    "--message",
                    f"oci-gpu-lab debian {suite} recipe {digest}",
                    "-",
                    tag,
                ],
                stdin=tar.stdout,
                capture_output=True,
                text=True,
                check=False,
            )
        if imp.returncode != 0:
            raise SystemExit(f"lab images: podman import failed: {imp.stderr.strip()}")
        old = _podman("image", "inspect", "--format", "{{.Id}}", image_ref(suite), check=False).stdout.strip()
        _podman("tag", tag, image_ref(suite))
        if old:
            new = _podman("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip()
            if old != new:
                # Only an image of ours that no container uses any more; in use, it stays.
                _podman("rmi", old, check=False)
    finally:
        for path in reversed(mounted):
            subprocess.run(["umount", "-l", str(path)], check=False)
        if not any(os.path.ismount(str(root / p)) for p in ("proc", "sys", "dev/pts")):
            shutil.rmtree(work, ignore_errors=True)
    seconds = round(time.monotonic() - start, 1)
    size = _podman("image", "inspect", "--format", "{{.Size}}", image_ref(suite)).stdout.strip()
    return {
        "suite": suite,
        "image": image_ref(suite),
        "recipe": digest,
        "built": True,
        "seconds": seconds,
        "size_mb": round(int(size or 0) / 1e6),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lab images", description=__doc__)
    parser.add_argument("suites", nargs="*", default=list(SUITES), help="suites to build (default: all)")
    parser.add_argument("--force", action="store_true", help="rebuild even when the recipe is unchanged")
    parser.add_argument("--no-prefetch", action="store_true", help="do not pre-download the Slurm/storage .debs")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("lab images: must run as root (debootstrap, chroot, rootful podman)")
    for suite in args.suites:
        res = build(suite, force=args.force, prefetch=not args.no_prefetch)
        state = f"built in {res['seconds']} s, {res['size_mb']} MB" if res["built"] else "up to date"
        print(f"lab images: {res['image']} (recipe {res['recipe']}): {state}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
