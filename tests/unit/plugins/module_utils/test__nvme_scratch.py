# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nvme_scratch role's decisions: which drives become scratch, and what is done with them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ansible_collections.oci_gpu.cluster.plugins.filter.nvme_scratch_plan import nvme_scratch_plan
from ansible_collections.oci_gpu.cluster.plugins.module_utils.storage._nvme_scratch import (
    blkid_results,
    fstab_source,
    nvme_candidates,
    parse_blkid_export,
    plan_scratch,
)

XFS = {"TYPE": "xfs", "UUID": "u-xfs", "USAGE": "filesystem"}
EXT4 = {"TYPE": "ext4", "UUID": "u-ext4"}
GPT = {"PTTYPE": "gpt", "PTUUID": "p"}
MEMBER = {"TYPE": "linux_raid_member", "UUID": "u-md"}


def lsblk(*disks: dict[str, Any]) -> str:
    boot = {
        "name": "/dev/sda",
        "type": "disk",
        "mountpoint": None,
        "children": [{"name": "/dev/sda1", "type": "part", "mountpoint": "/"}],
    }
    return json.dumps({"blockdevices": [boot, *disks]})


def disk(name: str, mountpoint: str | None = None, children: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "type": "disk", "size": 3840 * 10**9, "mountpoint": mountpoint}
    if children:
        d["children"] = children
    return d


def md(name: str = "/dev/md0", mountpoint: str | None = None) -> dict[str, Any]:
    return {"name": name, "type": "raid0", "mountpoint": mountpoint}


def nvme(n: int) -> list[str]:
    return [f"/dev/nvme{i}n1" for i in range(n)]


def plan(tree: str, sigs: dict[str, dict[str, str]], **kw: Any) -> dict[str, Any]:
    kw.setdefault("host", "gpu1")
    return plan_scratch(tree, sigs, **kw)


def test_parsers() -> None:
    assert parse_blkid_export("DEVNAME=/dev/x\nUUID=abc\nTYPE=xfs\n") == {
        "DEVNAME": "/dev/x",
        "UUID": "abc",
        "TYPE": "xfs",
    }
    results = [
        {"item": "/dev/a", "rc": 0, "stdout": "TYPE=ext4\nUUID=1"},
        {"item": "/dev/b", "rc": 2, "stdout": ""},
        {"item": "/dev/c", "rc": 8, "stdout": ""},
    ]
    got = blkid_results({"results": results})
    assert got == {
        "/dev/a": {"TYPE": "ext4", "UUID": "1"},
        "/dev/b": {},
        "/dev/c": {"TYPE": "ambivalent (several signatures)"},
    }
    assert fstab_source("# c\nUUID=1 /mnt/localdisk xfs defaults 0 0\n", "/mnt/localdisk") == "UUID=1"
    assert fstab_source("#UUID=1 /mnt/localdisk xfs defaults 0 0\n", "/mnt/localdisk") == ""
    names = [f"/dev/nvme{i}n1" for i in (10, 2, 0, 1)]
    assert nvme_candidates(lsblk(*(disk(n) for n in names), disk("/dev/nvme0n2"))) == [*nvme(3), "/dev/nvme10n1"]


def test_discovery_takes_the_empty_nvme_drives_and_never_the_boot_disk() -> None:
    p = plan(lsblk(*(disk(n) for n in nvme(8))), {}, shape="BM.GPU.H100.8", expected_count=8)
    assert p["errors"] == []
    assert p["devices"] == nvme(8)
    assert (p["layout"], p["target"], p["create_raid"], p["mkfs"]) == ("raid0", "/dev/md0", True, True)
    assert "/dev/sda" not in p["devices"]


def test_discovery_skips_drives_holding_something_and_the_count_check_names_them() -> None:
    tree = lsblk(
        disk("/dev/nvme0n1"),
        disk("/dev/nvme1n1", children=[{"name": "/dev/nvme1n1p1", "type": "part"}]),
        disk("/dev/nvme2n1"),
        disk("/dev/nvme3n1", mountpoint="/data"),
    )
    sigs = {"/dev/nvme1n1": GPT, "/dev/nvme2n1": EXT4}
    p = plan(tree, sigs, shape="BM.GPU4.8")
    assert p["devices"] == ["/dev/nvme0n1"]
    assert set(p["skipped"]) == {"/dev/nvme1n1", "/dev/nvme2n1", "/dev/nvme3n1"}
    [err] = p["errors"]
    assert "host gpu1 (shape BM.GPU4.8) should have 4 NVMe drive(s) for scratch, found 1: /dev/nvme0n1" in err
    assert "/dev/nvme2n1 holds a ext4 signature (UUID u-ext4)" in err
    assert "/dev/nvme3n1 is mounted at /data" in err
    assert p["mkfs"] is False and p["create_raid"] is False


def test_count_check_is_skipped_without_a_shape_and_can_be_given() -> None:
    tree = lsblk(disk("/dev/nvme0n1"))
    assert plan(tree, {})["errors"] == []
    assert plan(tree, {}, shape="")["expected_count"] is None
    assert "should have 2" in plan(tree, {}, expected_count=2)["errors"][0]
    assert plan(tree, {}, shape="BM.GPU.H100.8", check_count=False)["errors"] == []
    unknown = plan(tree, {}, shape="BM.Future.1")
    assert unknown["errors"] == [] and "not in the shape table" in unknown["warnings"][0]


def test_single_drive_fresh_then_converged() -> None:
    fresh = plan(lsblk(disk("/dev/nvme0n1")), {})
    assert (fresh["layout"], fresh["target"], fresh["mkfs"], fresh["uuid"]) == ("single", "/dev/nvme0n1", True, "")
    done = plan(
        lsblk(disk("/dev/nvme0n1", mountpoint="/mnt/localdisk")),
        {"/dev/nvme0n1": XFS},
        mounted={"filesystems": [{"source": "/dev/nvme0n1", "target": "/mnt/localdisk", "fstype": "xfs"}]},
    )
    assert done["errors"] == []
    assert (done["devices"], done["mkfs"], done["uuid"], done["mounted"]) == (["/dev/nvme0n1"], False, "u-xfs", True)


def test_own_filesystem_left_unmounted_is_found_through_fstab() -> None:
    p = plan(lsblk(disk("/dev/nvme0n1")), {"/dev/nvme0n1": XFS}, fstab="UUID=u-xfs /mnt/localdisk xfs defaults 0 0\n")
    assert p["errors"] == [] and p["devices"] == ["/dev/nvme0n1"] and p["mkfs"] is False


def test_converged_raid_is_kept_and_its_members_are_ours() -> None:
    tree = lsblk(*(disk(n, children=[md(mountpoint="/mnt/localdisk")]) for n in nvme(4)))
    sigs = dict.fromkeys(nvme(4), MEMBER) | {"/dev/md0": XFS}
    p = plan(tree, sigs, shape="BM.GPU4.8")
    assert p["errors"] == []
    assert (p["layout"], p["create_raid"], p["mkfs"], p["uuid"]) == ("raid0", False, False, "u-xfs")


@pytest.mark.parametrize("force", [False, True])
def test_explicit_drive_with_a_foreign_filesystem(force: bool) -> None:
    p = plan(lsblk(disk("/dev/nvme0n1")), {"/dev/nvme0n1": EXT4}, devices=["/dev/nvme0n1"], force=force)
    if force:
        assert p["errors"] == [] and p["wipe"] == ["/dev/nvme0n1"] and p["mkfs"] is True
        assert "erasing a ext4 signature" in p["warnings"][0]
    else:
        [err] = p["errors"]
        assert err.startswith("host gpu1: /dev/nvme0n1 holds a ext4 signature (UUID u-ext4)")
        assert "nvme_scratch_force: true" in err
        assert p["mkfs"] is False and p["wipe"] == []


def test_mounted_drive_is_never_formatted_even_with_force() -> None:
    p = plan(
        lsblk(disk("/dev/nvme0n1", mountpoint="/data")), {"/dev/nvme0n1": EXT4}, devices=["/dev/nvme0n1"], force=True
    )
    assert "is mounted at /data" in p["errors"][0]
    assert p["mkfs"] is False and p["wipe"] == []


def test_several_drives_without_md_are_refused() -> None:
    p = plan(lsblk(*(disk(n) for n in nvme(2))), {}, md_available=False)
    [err] = p["errors"]
    assert "host gpu1: 2 drives (/dev/nvme0n1, /dev/nvme1n1) need an md RAID0 at /dev/md0" in err
    assert "no md driver (/proc/mdstat is absent)" in err
    assert p["create_raid"] is False and p["mkfs"] is False
    assert plan(lsblk(disk("/dev/nvme0n1")), {}, md_available=False)["errors"] == []


def test_raid_refusals() -> None:
    partial = lsblk(disk("/dev/nvme0n1", children=[md()]), disk("/dev/nvme1n1"))
    err = plan(partial, {"/dev/nvme0n1": MEMBER, "/dev/md0": XFS})["errors"][0]
    assert "/dev/md0 is built from /dev/nvme0n1 but /dev/nvme1n1 would join it" in err
    busy = lsblk(disk("/dev/nvme0n1"), disk("/dev/nvme1n1"), md())
    assert "/dev/md0 already exists" in plan(busy, {})["errors"][0]
    foreign_md = lsblk(*(disk(n, children=[md()]) for n in nvme(2)))
    sigs = dict.fromkeys(nvme(2), MEMBER) | {"/dev/md0": EXT4}
    assert "/dev/md0 holds a ext4 signature" in plan(foreign_md, sigs)["errors"][0]
    forced = plan(foreign_md, sigs, force=True)
    assert forced["errors"] == [] and forced["mkfs"] is True and forced["create_raid"] is False


def test_explicit_device_must_exist_and_mount_point_must_be_free() -> None:
    assert (
        "names /dev/nvme9n1, which is not a block device there"
        in plan(lsblk(), {}, devices=["/dev/nvme9n1"])["errors"][0]
    )
    p = plan(
        lsblk(disk("/dev/nvme0n1")),
        {},
        mounted=json.dumps({"filesystems": [{"source": "/dev/sdb", "target": "/mnt/localdisk"}]}),
    )
    assert "/mnt/localdisk already has /dev/sdb mounted, not /dev/nvme0n1" in p["errors"][0]


def test_no_drive_found_is_a_warning_without_a_shape() -> None:
    p = plan(lsblk(), {})
    assert p["errors"] == [] and p["layout"] == "none" and "no free NVMe drive found" in p["warnings"][0]


def test_filter_wrapper_casts_its_inputs() -> None:
    p = nvme_scratch_plan(lsblk(disk("/dev/nvme0n1")), [], "gpu1", expected_count="1", devices=("/dev/nvme0n1",))
    assert p["errors"] == [] and p["expected_count"] == 1
