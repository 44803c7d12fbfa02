# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Pure decisions of the nvme_scratch role: which NVMe drives become scratch and what to do with them.

The role probes (``lsblk -J``, ``blkid -p -o export``, ``findmnt -J``) and hands the raw output here;
these functions only read it and decide, so every refusal is unit-tested without a disk. Standard
library only (Python 3.8+).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.gpu import _shapes

NVME_NAMESPACE = re.compile(r"^/dev/nvme[0-9]+n1$")
SCRATCH_FSTYPES = ("xfs", "ext4")
# blkid -p exit codes: 0 found a signature, 2 found nothing (or no such device), 8 ambivalent
# (several signatures on one device).
BLKID_FOUND, BLKID_NOTHING, BLKID_AMBIVALENT = 0, 2, 8


# ---------------------------------------------------------------------------------------------
# Probe parsing
# ---------------------------------------------------------------------------------------------
def parse_blkid_export(text: str) -> dict[str, str]:
    """``blkid -p -o export`` output as a dict (``TYPE``, ``UUID``, ``PTTYPE``, ``USAGE``, ...)."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _load_json(value: Any, key: str) -> Any:
    if isinstance(value, (dict, list)):
        return value
    text = (value or "").strip()
    if not text:
        return {key: []}
    return json.loads(text)


def lsblk_devices(lsblk: Any) -> dict[str, dict[str, Any]]:
    """Every block device in ``lsblk -J -p -o NAME,TYPE,SIZE,MOUNTPOINT`` output, by path, with
    ``children`` (names) and ``parents`` (names) filled in."""
    data = _load_json(lsblk, "blockdevices")
    out: dict[str, dict[str, Any]] = {}

    def walk(node: dict[str, Any], parent: str | None) -> None:
        name = node.get("name") or ""
        rec = out.setdefault(
            name,
            {
                "name": name,
                "type": node.get("type") or "",
                "size": node.get("size"),
                "mountpoint": node.get("mountpoint"),
                "children": [],
                "parents": [],
            },
        )
        if parent and parent not in rec["parents"]:
            rec["parents"].append(parent)
        for child in node.get("children") or []:
            cname = child.get("name") or ""
            if cname not in rec["children"]:
                rec["children"].append(cname)
            walk(child, name)

    for top in data.get("blockdevices") or []:
        walk(top, None)
    return out


def nvme_candidates(lsblk: Any) -> list[str]:
    """The NVMe namespaces (``/dev/nvmeXn1``) that lsblk lists as whole disks, in natural order."""
    devs = lsblk_devices(lsblk)
    names = [n for n, d in devs.items() if NVME_NAMESPACE.match(n) and d["type"] == "disk" and not d["parents"]]
    return sorted(names, key=lambda n: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", n)])


def blkid_results(results: list[dict[str, Any]] | dict[str, Any]) -> dict[str, dict[str, str] | None]:
    """Registered loop results of ``blkid -p -o export {{ item }}`` → ``{device: signature dict}``.

    An empty dict means no signature; ``{"TYPE": "ambivalent"}`` means several signatures."""
    if isinstance(results, dict) and "results" in results:
        results = results["results"]
    if isinstance(results, dict):  # already {device: text-or-dict}
        return {k: (v if isinstance(v, dict) else parse_blkid_export(v)) for k, v in results.items()}
    out: dict[str, dict[str, str] | None] = {}
    for res in results or []:
        if res.get("skipped"):
            continue
        dev = res.get("item")
        rc = res.get("rc")
        if rc == BLKID_AMBIVALENT:
            out[dev] = {"TYPE": "ambivalent (several signatures)"}
        elif rc == BLKID_NOTHING:
            out[dev] = {}
        else:
            out[dev] = parse_blkid_export(res.get("stdout", ""))
    return out


def fstab_source(fstab: str, mount_path: str) -> str:
    """The source (``UUID=...``, ``/dev/...``) of the active fstab line for ``mount_path``, or ''."""
    for line in (fstab or "").splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) >= 2 and fields[1] == mount_path:
            return fields[0]
    return ""


def findmnt_source(findmnt: Any) -> dict[str, Any] | None:
    """The first filesystem of ``findmnt -J --mountpoint PATH`` output (None when nothing is mounted)."""
    if isinstance(findmnt, dict) and "stdout" in findmnt:
        findmnt = findmnt["stdout"]
    data = _load_json(findmnt, "filesystems")
    fss = data.get("filesystems") or []
    return fss[0] if fss else None


# ---------------------------------------------------------------------------------------------
# nvme_scratch
# ---------------------------------------------------------------------------------------------
def _signature(sig: dict[str, str] | None) -> str:
    """What a device holds, in words (empty when it holds nothing)."""
    if not sig:
        return ""
    if sig.get("TYPE"):
        return f"a {sig['TYPE']} signature" + (f" (UUID {sig['UUID']})" if sig.get("UUID") else "")
    if sig.get("PTTYPE"):
        return f"a {sig['PTTYPE']} partition table"
    return "an unknown signature " + ", ".join(f"{k}={v}" for k, v in sorted(sig.items()) if k != "DEVNAME")


def plan_scratch(
    lsblk: Any,
    blkid: Any,
    *,
    host: str,
    devices: list[str] | None = None,
    raid_device: str = "/dev/md0",
    fstype: str = "xfs",
    force: bool = False,
    mount_path: str = "/mnt/localdisk",
    mounted: Any = None,
    md_available: bool = True,
    fstab: str = "",
    shape: str = "",
    expected_count: int = -1,
    check_count: bool = True,
) -> dict[str, Any]:
    """Decide what ``nvme_scratch`` does on one host.

    ``devices`` empty means discover the free NVMe namespaces. Returns ``errors`` (refusals, each
    naming host, device and what was found; the role fails on any before changing anything),
    ``warnings``, ``devices`` (chosen), ``skipped`` ({device: why}), ``layout`` (none | single |
    raid0), ``target`` (the device that carries the filesystem), ``create_raid``, ``mkfs``,
    ``wipe`` (devices whose signatures are erased first, only with ``force``), ``uuid`` (of the
    existing filesystem, else empty), ``mounted`` (the target is mounted at ``mount_path``),
    ``expected_count`` (None when not checked).
    """
    devs = lsblk_devices(lsblk)
    sigs = blkid_results(blkid)
    mnt = findmnt_source(mounted) if mounted is not None else None
    in_fstab = fstab_source(fstab, mount_path)
    errors: list[str] = []
    warnings: list[str] = []
    skipped: dict[str, str] = {}
    discovered = not devices
    members_of_ours: list[str] = []

    if fstype not in SCRATCH_FSTYPES:
        errors.append(f"nvme_scratch_fstype on host {host} is {fstype!r}: use one of {', '.join(SCRATCH_FSTYPES)}.")

    def mounted_elsewhere(name: str) -> str | None:
        point = devs.get(name, {}).get("mountpoint")
        if point and point != mount_path:
            return point
        for child in devs.get(name, {}).get("children", []):
            cpoint = devs.get(child, {}).get("mountpoint")
            if cpoint and cpoint != mount_path:
                return cpoint
        return None

    def is_ours(name: str, sig: dict[str, str]) -> bool:
        """Already part of this scratch: the filesystem mounted at mount_path, or a member of raid_device."""
        if raid_device in devs.get(name, {}).get("children", []):
            members_of_ours.append(name)
            return True
        if mnt and mnt.get("source") == name:
            return True
        # Made by an earlier run but not mounted now (a failed mount at boot, say): fstab names it.
        return bool(sig.get("UUID") and in_fstab == f"UUID={sig['UUID']}")

    chosen: list[str] = []
    if discovered:
        for name in nvme_candidates(lsblk):
            sig = sigs.get(name) or {}
            where = mounted_elsewhere(name)
            if devs[name]["children"] and not is_ours(name, sig):
                skipped[name] = "has partitions or holders: " + ", ".join(devs[name]["children"])
            elif where:
                skipped[name] = f"is mounted at {where}"
            elif is_ours(name, sig):
                chosen.append(name)
            elif sig:
                skipped[name] = "holds " + _signature(sig)
            else:
                chosen.append(name)
    else:
        for name in devices or []:
            if name not in devs:
                errors.append(
                    f"nvme_scratch_devices on host {host} names {name}, which is not a block device there "
                    f"(lsblk lists {', '.join(sorted(devs)) or 'none'})."
                )
                continue
            sig = sigs.get(name) or {}
            where = mounted_elsewhere(name)
            if where:
                errors.append(
                    f"nvme_scratch_devices on host {host}: {name} is mounted at {where}; it is never "
                    f"formatted, not even with nvme_scratch_force."
                )
            elif is_ours(name, sig):
                chosen.append(name)
            elif devs[name]["children"] and not force:
                errors.append(
                    f"nvme_scratch_devices on host {host}: {name} has partitions or holders "
                    f"({', '.join(devs[name]['children'])}); refusing to overwrite it without nvme_scratch_force: true."
                )
            else:
                chosen.append(name)
        if len(set(devices or [])) != len(devices or []):
            errors.append(f"nvme_scratch_devices on host {host} lists a device twice: {devices}.")

    # Expected count from the shape (or given), on the devices this run would use.
    expected: int | None = None
    if check_count:
        if expected_count is not None and int(expected_count) >= 0:
            expected = int(expected_count)
        elif shape:
            rec = _shapes.shape(shape)
            if rec is None:
                warnings.append(f"shape {shape} of host {host} is not in the shape table: NVMe count not checked.")
            elif rec.nvme_count is not None:
                expected = int(rec.nvme_count)
        if expected is not None and len(chosen) != expected:
            why = "".join(f"; {d} {w}" for d, w in skipped.items())
            errors.append(
                f"host {host} (shape {shape or 'not given'}) should have {expected} NVMe drive(s) for "
                f"scratch, found {len(chosen)}: {', '.join(chosen) or 'none'}{why}. Replace the failed drive, "
                f"name the drives in nvme_scratch_devices and set nvme_scratch_expected_count."
            )

    layout = "none" if not chosen else ("single" if len(chosen) == 1 else "raid0")
    target = chosen[0] if layout == "single" else (raid_device if layout == "raid0" else "")
    create_raid = False
    wipe: list[str] = []

    # Foreign signatures on the chosen devices (explicit lists only: discovery skipped them).
    for name in chosen:
        sig = sigs.get(name) or {}
        if not sig or name in members_of_ours:
            continue
        if layout == "single" and sig.get("TYPE") == fstype and not sig.get("PTTYPE"):
            continue  # the scratch filesystem itself (kept; a rerun changes nothing)
        if force:
            wipe.append(name)
            warnings.append(f"nvme_scratch_force: erasing {_signature(sig)} on {name} of host {host}.")
        else:
            errors.append(
                f"host {host}: {name} holds {_signature(sig)}, not an empty drive or a {fstype} scratch "
                f"filesystem; refusing to format it. Set nvme_scratch_force: true to erase it (its data is lost)."
            )

    if layout == "raid0":
        if not md_available:
            errors.append(
                f"host {host}: {len(chosen)} drives ({', '.join(chosen)}) need an md RAID0 at {raid_device}, "
                f"but this kernel has no md driver (/proc/mdstat is absent). Load the md/raid0 modules, or "
                f"give one drive in nvme_scratch_devices."
            )
        ours = [n for n in chosen if n in members_of_ours]
        if ours and len(ours) != len(chosen):
            joining = ", ".join(sorted(set(chosen) - set(ours)))
            errors.append(
                f"host {host}: {raid_device} is built from {', '.join(ours)} but {joining} "
                f"would join it; a RAID0 cannot grow without being rebuilt (all data lost). Rebuild it by hand "
                f"or list only its members in nvme_scratch_devices."
            )
        create_raid = not ours
        if create_raid and raid_device in devs:
            errors.append(
                f"host {host}: {raid_device} already exists but is not built from {', '.join(chosen)}; "
                f"set nvme_scratch_raid_device to a free md device."
            )

    mkfs = False
    uuid = ""
    is_mounted = bool(mnt and target and mnt.get("source") == target)
    if target:
        tsig = {} if create_raid else (sigs.get(target) or {})
        if layout == "single" and target in wipe:
            tsig = {}
        if not tsig:
            mkfs = True
        elif tsig.get("TYPE") == fstype:
            uuid = tsig.get("UUID", "")
        elif layout == "raid0":
            if force:
                mkfs = True
                warnings.append(f"nvme_scratch_force: reformatting {raid_device} ({_signature(tsig)}) on host {host}.")
            else:
                errors.append(
                    f"host {host}: {raid_device} holds {_signature(tsig)}, not {fstype}; refusing to reformat it. "
                    f"Set nvme_scratch_force: true to erase it (its data is lost)."
                )
        if mnt and mnt.get("source") and mnt.get("source") != target:
            errors.append(
                f"host {host}: {mount_path} already has {mnt.get('source')} mounted, not {target}; unmount it "
                f"or choose another nvme_scratch_mount_path."
            )
        if is_mounted and mkfs:
            errors.append(f"host {host}: {target} is mounted at {mount_path}; refusing to format a mounted device.")
    elif discovered:
        warnings.append(
            f"host {host}: no free NVMe drive found; no scratch filesystem made"
            + ("".join(f"; {d} {w}" for d, w in skipped.items()) or "")
            + "."
        )

    return {
        "errors": errors,
        "warnings": warnings,
        "discovered": discovered,
        "devices": chosen,
        "skipped": skipped,
        "layout": layout,
        "target": target,
        "create_raid": create_raid and not errors,
        "mkfs": mkfs and not errors,
        "wipe": wipe if not errors else [],
        "uuid": uuid,
        "mounted": is_mounted,
        "expected_count": expected,
    }
