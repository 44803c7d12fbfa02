#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: fss_mount_info
short_description: Read, in one call, whether a host can reach its NFS mount targets and how its mounts stand
version_added: 0.3.0
description:
  - For the mounts the C(oci_gpu.cluster.fss_mount_plan) filter planned, says per mount point whether
    C(/etc/fstab) already holds the planned entry, whether it is mounted, whether the mount point
    exists and whether it has the planned owner, group and mode; and tries a TCP connection to every
    mount target address on every port asked, retrying until the timeout.
  - Read-only. The C(oci_gpu.cluster.fss_mount) role calls it once per host, before any host
    changes, and then calls M(ansible.posix.mount) and M(ansible.builtin.file) only for the mounts
    that need it, so that a converged host costs one remote call instead of one per mount and step.
  - An fstab entry counts as current when exactly one line names the mount point and its source,
    type C(nfs), options, dump and pass fields are those M(ansible.posix.mount) would write.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  mounts:
    description:
      - The planned mounts, as C(oci_gpu.cluster.fss_mount_plan) returns them.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The mount point.
        type: path
        required: true
      src:
        description: The NFS source (C(address:/export)); empty when absent.
        type: str
        default: ""
      opts:
        description: The mount options, separated by commas.
        type: str
        default: defaults
      state:
        description: The wanted state.
        type: str
        choices: [mounted, present, absent]
        default: mounted
      owner:
        description: The wanted owner of the mounted export (name or uid).
        type: str
      group:
        description: The wanted group of the mounted export (name or gid).
        type: str
      mode:
        description: The wanted mode (octal); a symbolic mode always counts as not current.
        type: raw
      address:
        description: Ignored (the plan carries it).
        type: str
  fstype:
    description: The file system type the entries have.
    type: str
    default: nfs
  fstab:
    description: The fstab file.
    type: path
    default: /etc/fstab
  targets:
    description: Addresses to reach (the mount targets).
    type: list
    elements: str
    default: []
  ports:
    description: TCP ports to reach on each of O(targets).
    type: list
    elements: int
    default: [111, 2049]
  timeout:
    description: Seconds to keep trying each address and port (connections are tried in parallel).
    type: int
    default: 5
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Reach the mount targets and read the mounts
  oci_gpu.cluster.fss_mount_info:
    mounts: "{{ fss_plan }}"
    targets: "{{ fss_plan | map(attribute='address') | select | unique }}"
    ports: [111, 2049]
    timeout: 5
  register: fss_state

- name: Mount what is not mounted as planned
  ansible.posix.mount:
    src: "{{ item.src }}"
    path: "{{ item.path }}"
    fstype: nfs
    opts: "{{ item.opts }}"
    state: "{{ item.state }}"
  loop: "{{ fss_plan }}"
  when: item.path in fss_state.needs_mount
"""

RETURN = r"""
unanswered:
  description:
    - The C(address:port) pairs that did not accept a TCP connection within O(timeout).
    - Not named C(unreachable), a key by which Ansible would mark the host itself unreachable.
  returned: always
  type: list
  elements: str
  sample: ["10.0.0.5:2049"]
mounts:
  description: Per mount of O(mounts), in order.
  returned: always
  type: list
  elements: dict
  contains:
    path: {description: The mount point., type: str, returned: always}
    exists: {description: Whether the mount point exists., type: bool, returned: always}
    mounted: {description: Whether something is mounted on it., type: bool, returned: always}
    fstab_current: {description: Whether fstab holds exactly the planned entry., type: bool, returned: always}
    attributes_current:
      description: Whether owner, group and mode are as planned (true when none is planned).
      type: bool
      returned: always
needs_mount:
  description: >-
    Mount points whose fstab entry or mount state is not what O(mounts[].state) asks (for C(absent):
    an entry or a mount is still there).
  returned: always
  type: list
  elements: str
settled:
  description: Mount points mounted as planned whose owner, group and mode are already as planned.
  returned: always
  type: list
  elements: str
pending:
  description: >-
    Whether anything is left to do: a mount point to create, an entry to mount or write, or the
    owner, group or mode of a mounted export to set.
  returned: always
  type: bool
"""

import grp
import os
import pwd
import re
import socket
import stat
import time
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """fstab escapes spaces and tabs in paths as octal (\\040)."""
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def fstab_entries(text: str) -> dict[str, list[list[str]]]:
    """Mount point -> every line's fields (source, mount point, type, options, dump, pass)."""
    out: dict[str, list[list[str]]] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = stripped.split()
        if len(fields) < 2:
            continue
        # A line without all six fields is never current: ansible.posix.mount rewrites it whole.
        fields = ([_unescape(f) for f in fields] + [""] * 6)[:6]
        out.setdefault(fields[1], []).append(fields)
    return out


def fstab_current(entries: dict[str, list[list[str]]], mount: dict, fstype: str) -> bool:
    lines = entries.get(mount["path"], [])
    if mount["state"] == "absent":
        return not lines
    if len(lines) != 1:
        return False
    src, _path, kind, opts, dump, passno = lines[0]
    return (src, kind, opts, dump, passno) == (mount["src"], fstype, mount["opts"] or "defaults", "0", "0")


def _wanted_id(value, by_name, field: str):
    if value is None or str(value) == "":
        return None
    text = str(value)
    if text.isdigit():
        return int(text)
    try:
        return getattr(by_name(text), field)
    except KeyError:
        return -1  # unknown here: the file task will say so


def attributes_current(st: os.stat_result | None, mount: dict) -> bool:
    owner, group, mode = mount.get("owner"), mount.get("group"), mount.get("mode")
    if all(v is None or str(v) == "" for v in (owner, group, mode)):
        return True
    if st is None:
        return False
    uid = _wanted_id(owner, pwd.getpwnam, "pw_uid")
    gid = _wanted_id(group, grp.getgrnam, "gr_gid")
    if uid is not None and uid != st.st_uid:
        return False
    if gid is not None and gid != st.st_gid:
        return False
    if mode is not None and str(mode) != "":
        text = str(mode) if not isinstance(mode, int) else oct(mode)[2:]
        if not re.fullmatch(r"0?[0-7]{3,4}", text):
            return False  # symbolic: let the file task decide
        if int(text, 8) != stat.S_IMODE(st.st_mode):
            return False
    return True


def reach(address: str, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            with socket.create_connection((address, port), timeout=max(0.5, min(left, timeout))):
                return True
        except OSError:
            if time.monotonic() + 1 > deadline:
                return False
            time.sleep(1)


def unanswered(targets: list[str], ports: list[int], timeout: float) -> list[str]:
    pairs = [(t, p) for t in dict.fromkeys(targets) if t for p in ports]
    if not pairs:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(pairs))) as pool:
        answered = list(pool.map(lambda pair: reach(pair[0], pair[1], timeout), pairs))
    return [f"{t}:{p}" for (t, p), ok in zip(pairs, answered, strict=True) if not ok]


def mount_states(mounts: list[dict], fstab_text: str, fstype: str) -> list[dict]:
    entries = fstab_entries(fstab_text)
    out = []
    for m in mounts:
        path = m["path"]
        try:
            st = os.stat(path)
        except OSError:
            st = None
        mounted = st is not None and os.path.ismount(path)
        out.append(
            {
                "path": path,
                "state": m["state"],
                "exists": st is not None,
                "mounted": mounted,
                "fstab_current": fstab_current(entries, m, fstype),
                "attributes_current": attributes_current(st, m),
            }
        )
    return out


def needs_mount(state: dict) -> bool:
    if state["state"] == "absent":
        return not state["fstab_current"] or state["mounted"]
    if state["state"] == "present":
        return not state["fstab_current"]
    return not (state["fstab_current"] and state["mounted"])


def main() -> None:
    mount_spec = {
        "path": {"type": "path", "required": True},
        "src": {"type": "str", "default": ""},
        "opts": {"type": "str", "default": "defaults"},
        "state": {"type": "str", "choices": ["mounted", "present", "absent"], "default": "mounted"},
        "owner": {"type": "str"},
        "group": {"type": "str"},
        "mode": {"type": "raw"},
        "address": {"type": "str"},
    }
    module = AnsibleModule(
        argument_spec={
            "mounts": {"type": "list", "elements": "dict", "default": [], "options": mount_spec},
            "fstype": {"type": "str", "default": "nfs"},
            "fstab": {"type": "path", "default": "/etc/fstab"},
            "targets": {"type": "list", "elements": "str", "default": []},
            "ports": {"type": "list", "elements": "int", "default": [111, 2049]},
            "timeout": {"type": "int", "default": 5},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        with open(p["fstab"], encoding="utf-8", errors="replace") as handle:
            fstab_text = handle.read()
    except FileNotFoundError:
        fstab_text = ""
    except OSError as exc:
        module.fail_json(msg=f"cannot read {p['fstab']}: {exc}")
    states = mount_states(p["mounts"], fstab_text, p["fstype"])
    needs = [s["path"] for s in states if needs_mount(s)]
    settled = [s["path"] for s in states if s["state"] == "mounted" and s["mounted"] and s["attributes_current"]]
    missing = [s["path"] for s in states if s["state"] != "absent" and not s["exists"]]
    unsettled = [s["path"] for s in states if s["state"] == "mounted" and s["path"] not in settled]
    module.exit_json(
        changed=False,
        unanswered=unanswered(p["targets"], p["ports"], max(1, p["timeout"])),
        mounts=states,
        needs_mount=needs,
        settled=settled,
        pending=bool(needs or missing or unsettled),
    )


if __name__ == "__main__":
    main()
