#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_files
short_description: Write a node's Slurm directories and configuration files in one call
version_added: 0.2.0
description:
  - Creates the directories and writes the files of a Slurm node (slurm.conf, gres.conf,
    cgroup.conf, systemd drop-ins, ...) in one remote call, where one M(ansible.builtin.file) or
    M(ansible.builtin.template) task per item would cost one or two calls each.
  - Directories come first, in the order given; then files, each written to a temporary file in
    its directory, checked with O(files[].validate) when given, and moved into place only when
    its content differs. Owner, group and mode are set when they differ.
  - Reports which files changed (RV(changed_names), RV(changed_paths)), so that a role can notify
    a different handler per file, and a diff per changed file and directory.
  - Not only for Slurm's files - the C(oci_gpu.cluster.gpu_node) role writes C(nccl.conf) and its
    health check with it, for the same one round trip.
  - In check mode nothing is written; a directory that would be created, or an owner that does
    not exist yet (its package is not installed yet), counts as a change instead of an error.
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  node_roles:
    description:
      - The Slurm roles of this node. An item with O(directories[].roles) or O(files[].roles) is
        only applied when one of its roles is in this list; items without roles always are.
    type: list
    elements: str
    default: []
  directories:
    description: Directories to create (with parents) and keep at the given owner, group and mode.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      owner:
        description: Owner name or uid.
        type: str
        default: root
      group:
        description: Group name or gid; defaults to O(directories[].owner).
        type: str
      mode:
        description: Octal mode as a string.
        type: str
        default: "0755"
      roles:
        description: Slurm roles that need this directory; empty means every node.
        type: list
        elements: str
        default: []
  files:
    description: Files to write with the given content.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: A short name for the file, reported in RV(changed_names); defaults to the path.
        type: str
      path:
        description: Absolute path.
        type: path
        required: true
      content:
        description: The whole content; required unless O(files[].state=absent) or O(files[].secret_content).
        type: str
      secret_content:
        description:
          - Instead of O(files[].content), for a file that holds a secret (C(slurmdbd.conf) and its
            database password). It is never returned or logged, and its diff says only whether the
            file changes.
        type: str
      state:
        description:
          - V(absent) removes the file (e.g. a secret a node must not keep); its content is never read or shown.
          - V(absent_if_managed) removes it only when one of its first three lines says
            C(Managed by Ansible (oci_gpu.cluster) - a file the role wrote for a feature now turned off goes,
            a site's own file at that path stays.
        type: str
        choices: [present, absent, absent_if_managed]
        default: present
      owner:
        description: Owner name or uid.
        type: str
        default: root
      group:
        description: Group name or gid; defaults to O(files[].owner).
        type: str
      mode:
        description: Octal mode as a string.
        type: str
        default: "0644"
      diff:
        description:
          - V(false) keeps the file's content out of the diff, which then says only that the file
            changes (a long program the role installs, such as the GPU health check).
        type: bool
        default: true
      validate:
        description:
          - Command that checks the candidate before it replaces the file, with V(%s) for the
            candidate's path, e.g. V(env SLURM_CONF=%s scontrol show hostnames localhost). A non-zero
            exit leaves the live file as it is and fails the task.
        type: str
      roles:
        description: Slurm roles that need this file; empty means every node.
        type: list
        elements: str
        default: []
  record:
    description:
      - A path where the call keeps the list of what it manages (each path, file or directory, and
        whether its content is a secret), written only when that list changes and never in check mode.
      - The node's probe (M(oci_gpu.cluster.slurm_node_info) and M(oci_gpu.cluster.gpu_node_info) option
        C(files_record)) reads it back with the state of each path, and the filter
        R(oci_gpu.cluster.files_not_in_place,ansible_collections.oci_gpu.cluster.files_not_in_place_filter)
        tells from that whether this call would change anything, so that a converged node skips it.
    type: path
extends_documentation_fragment:
  - oci_gpu.cluster._host_files
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Write the Slurm file set
  oci_gpu.cluster.slurm_files:
    node_roles: "{{ slurm_node_roles }}"
    directories:
      - {path: /var/spool/slurmctld, owner: slurm, mode: "0700", roles: [controller]}
    files:
      - name: slurm.conf
        path: /etc/slurm/slurm.conf
        content: "{{ lookup('ansible.builtin.template', 'etc/slurm/slurm.conf.j2') }}"
        validate: env SLURM_CONF=%s scontrol show hostnames localhost
  register: __slurm_files
"""

RETURN = r"""
changed_names:
  description: Names (or paths, where no name was given) of the files that changed or would change.
  returned: always
  type: list
  elements: str
  sample: [slurm.conf]
changed_paths:
  description: Paths of the directories and files that changed or would change.
  returned: always
  type: list
  elements: str
  sample: [/etc/slurm/slurm.conf]
"""

import grp
import os
import pwd
import shlex
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._file_state import (
    managed,
    record_items,
    wanted,
    write_record,
)
from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._files import move_into_place

ITEM_COMMON = {
    "path": {"type": "path", "required": True},
    "owner": {"type": "str", "default": "root"},
    "group": {"type": "str"},
    "roles": {"type": "list", "elements": "str", "default": []},
}


def owner_known(item: dict) -> bool:
    """True when the item's owner and group exist on this host (numeric ids always do)."""
    try:
        if not item["owner"].isdigit():
            pwd.getpwnam(item["owner"])
        group = item["group"] or item["owner"]
        if not group.isdigit():
            grp.getgrnam(group)
    except KeyError:
        return False
    return True


def file_args(item: dict, path: str) -> dict:
    return {
        "path": path,
        "mode": item["mode"],
        "owner": item["owner"],
        "group": item["group"] or item["owner"],
        "secontext": None,
        "attributes": None,
    }


def state_diff(path: str, before: str, after: str) -> dict:
    return {
        "before_header": path,
        "after_header": path,
        "before": {"path": path, "state": before},
        "after": {"path": path, "state": after},
    }


def read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "node_roles": {"type": "list", "elements": "str", "default": []},
            "directories": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {**ITEM_COMMON, "mode": {"type": "str", "default": "0755"}},
            },
            "files": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    **ITEM_COMMON,
                    "name": {"type": "str"},
                    "content": {"type": "str"},
                    "secret_content": {"type": "str", "no_log": True},
                    "state": {
                        "type": "str",
                        "choices": ["present", "absent", "absent_if_managed"],
                        "default": "present",
                    },
                    "mode": {"type": "str", "default": "0644"},
                    "diff": {"type": "bool", "default": True},
                    "validate": {"type": "str"},
                },
            },
            "record": {"type": "path"},
        },
        supports_check_mode=True,
    )
    roles = module.params["node_roles"]
    changed_paths: list[str] = []
    changed_names: list[str] = []
    diffs: list[dict] = []
    created_in_check: set[str] = set()

    for item in wanted(module.params["directories"], roles):
        path = item["path"]
        existed = os.path.isdir(path)
        if os.path.exists(path) and not existed:
            module.fail_json(msg=f"slurm_files: {path} exists and is not a directory")
        if not existed:
            diffs.append(state_diff(path, "absent", "directory"))
            if module.check_mode:
                created_in_check.add(path)
                changed_paths.append(path)
                continue
            try:
                os.makedirs(path, exist_ok=True)
            except OSError as exc:
                module.fail_json(msg=f"slurm_files: cannot create directory {path}: {exc}")
        if module.check_mode and not owner_known(item):
            changed_paths.append(path)
            continue
        if not owner_known(item):
            module.fail_json(msg=f"slurm_files: directory {path}: owner {item['owner']!r} or group does not exist")
        if module.set_fs_attributes_if_different(file_args(item, path), not existed) and path not in changed_paths:
            changed_paths.append(path)

    for item in wanted(module.params["files"], roles):
        path = item["path"]
        name = item["name"] or path
        if item["state"] == "absent_if_managed":
            if not os.path.isfile(path) or not managed(path):
                continue
            item = {**item, "state": "absent"}
        if item["state"] == "absent":
            if os.path.lexists(path):
                if module._diff:
                    diffs.append(state_diff(path, "file", "absent"))
                if not module.check_mode:
                    os.unlink(path)
                changed_paths.append(path)
                changed_names.append(name)
            continue
        secret = item["secret_content"] is not None
        if (item["content"] is None) == (not secret):
            module.fail_json(msg=f"slurm_files: {path}: give content or secret_content, not both (or state: absent)")
        directory = os.path.dirname(path)
        current = None if directory in created_in_check else read_text(path)
        content = item["secret_content"] if secret else item["content"]
        content_changed = current != content
        attrs_changed = False
        if content_changed and module._diff:
            if secret or not item["diff"]:
                withheld = "(content withheld: it holds a secret)\n" if secret else "(content not shown)\n"
                diffs.append(
                    {
                        "before_header": path,
                        "after_header": path,
                        "before": "" if current is None else withheld,
                        "after": "(changed) " + withheld,
                    }
                )
            else:
                diffs.append({"before_header": path, "after_header": path, "before": current or "", "after": content})
        if module.check_mode:
            if not content_changed and current is not None:
                attrs_changed = (
                    module.set_fs_attributes_if_different(file_args(item, path), False) if owner_known(item) else True
                )
        else:
            if not owner_known(item):
                module.fail_json(msg=f"slurm_files: file {path}: owner {item['owner']!r} or group does not exist")
            if content_changed:
                if not os.path.isdir(directory):
                    module.fail_json(msg=f"slurm_files: {path}: directory {directory} does not exist")
                fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.")
                try:
                    with os.fdopen(fd, "wb") as handle:
                        handle.write(content.encode("utf-8", errors="surrogateescape"))
                    module.set_fs_attributes_if_different(file_args(item, tmp), False)
                    if item["validate"]:
                        if "%s" not in item["validate"]:
                            module.fail_json(msg=f"slurm_files: {path}: validate must contain %s: {item['validate']}")
                        argv = [a.replace("%s", tmp) for a in shlex.split(item["validate"])]
                        rc, out, err = module.run_command(argv)
                        if rc != 0:
                            module.fail_json(
                                msg=f"slurm_files: {path}: the candidate failed validation ({item['validate']}, "
                                f"exit {rc}); the live file is unchanged",
                                stdout=out,
                                stderr=err,
                                rc=rc,
                            )
                except BaseException:
                    if os.path.exists(tmp):
                        os.unlink(tmp)
                    raise
                move_into_place(module, tmp, path)
            attrs_changed = module.set_fs_attributes_if_different(file_args(item, path), False)
        if content_changed or attrs_changed:
            changed_paths.append(path)
            changed_names.append(name)

    if module.params["record"] and not module.check_mode:
        # What this call manages, for the probe of the next run (module_utils/common/_file_state.py):
        # bookkeeping, not a change of the node's files.
        items = record_items(module.params["directories"], module.params["files"], roles)
        try:
            write_record(module.params["record"], items, module)
        except OSError as exc:
            module.fail_json(msg=f"slurm_files: cannot write the record {module.params['record']}: {exc}")
    result = {"changed": bool(changed_paths), "changed_paths": changed_paths, "changed_names": changed_names}
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
