#!/usr/bin/python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_config_check
short_description: Check a candidate Slurm configuration with the installed Slurm before any live file changes
version_added: 0.3.0
description:
  - Writes the candidate files (C(slurm.conf), C(gres.conf), C(cgroup.conf)) into a private temporary
    directory on the host and checks them there; no live file, daemon, pid file, spool or log is touched.
  - Every plugin the candidate names (C(SelectType), C(SchedulerType), each C(TaskPlugin), C(ProctrackType),
    C(AuthType), C(AccountingStorageType), C(TopologyPlugin), C(GresTypes), C(MpiDefault), C(CgroupPlugin)
    in C(cgroup.conf), ...) must exist as C(<type>_<name>.so) in the installed plugin directory
    (C(PluginDir), else the distribution's). A C(<type>/none) is accepted without a file.
  - With O(slurmd=true) it then runs C(slurmd -G -f <candidate>/slurm.conf -N <node>) with C(SLURM_CONF)
    pointing at the candidate, so that gres.conf and cgroup.conf are read from there too, and with the
    candidate's C(SlurmdSpoolDir), C(SlurmdPidFile) and C(SlurmdLogFile) moved into the private directory.
    C(slurmd -G) parses slurm.conf and gres.conf, loads the gres and cgroup plugins (22.05 also the select
    plugin) and exits without starting a daemon. It needs munged running (24.11 creates a credential).
  - Fails, naming the key, the value, the host and Slurm's own message, when the candidate would not load.
  - When every candidate file equals the live one in O(live_dir), nothing is run (C(checked) is empty).
author:
  - oci_gpu.cluster contributors (@oci-gpu)
options:
  files:
    description: The candidate files, file name (C(slurm.conf), C(gres.conf), C(cgroup.conf)) to content.
    type: dict
    required: true
  node_name:
    description: The Slurm node name of this host, for C(slurmd -N).
    type: str
    required: true
  slurmd:
    description: Run C(slurmd -G) on the candidate (a compute host with slurmd installed).
    type: bool
    default: true
  live_dir:
    description: Where the live files are; candidate files equal to them are not checked again.
    type: path
    default: /etc/slurm
  force:
    description: Check even when the candidate equals the live files.
    type: bool
    default: false
  plugin_dirs:
    description: Where to look for plugins when the candidate sets no C(PluginDir); the first that exists.
  timeout:
    description: Seconds C(slurmd -G) may take.
    type: int
    default: 60
extends_documentation_fragment:
  - oci_gpu.cluster._read_only
  - oci_gpu.cluster._slurm_plugin_dirs
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: It only reads live state, so it runs in check mode too and refuses a bad candidate there.
"""

EXAMPLES = r"""
- name: Check the candidate with the installed Slurm
  oci_gpu.cluster.slurm_config_check:
    node_name: "{{ inventory_hostname }}"
    files:
      slurm.conf: "{{ lookup('ansible.builtin.template', 'slurm.conf.j2') }}"
      gres.conf: "{{ lookup('ansible.builtin.template', 'gres.conf.j2') }}"
"""

RETURN = r"""
checked:
  description: What was checked (C(plugins), C(slurmd -G)); empty when the candidate equals the live files.
  returned: always
  type: list
  elements: str
plugin_dir:
  description: The plugin directory the names were looked up in.
  returned: always
  type: str
plugins:
  description: The plugin files the candidate needs, each C(key=value -> file).
  returned: always
  type: list
  elements: str
output:
  description: What C(slurmd -G) printed (its GRES lines), when it ran.
  returned: always
  type: list
  elements: str
"""

import os
import re
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common._files import read_text
from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import PLUGIN_DIRS

# slurm.conf (and cgroup.conf) keys that name plugins: key -> (plugin type, several allowed).
PLUGIN_KEYS = {
    "accountingstoragetype": ("accounting_storage", False),
    "acctgatherenergytype": ("acct_gather_energy", False),
    "acctgatherfilesystemtype": ("acct_gather_filesystem", False),
    "acctgatherinterconnecttype": ("acct_gather_interconnect", False),
    "acctgatherprofiletype": ("acct_gather_profile", False),
    "authalttypes": ("auth", True),
    "authtype": ("auth", False),
    "burstbuffertype": ("burst_buffer", True),
    "cgroupplugin": ("cgroup", False),
    "clifilterplugins": ("cli_filter", True),
    "corespecplugin": ("core_spec", False),
    "credtype": ("cred", False),
    "extsensorstype": ("ext_sensors", False),
    "grestypes": ("gres", True),
    "jobacctgathertype": ("jobacct_gather", False),
    "jobcomptype": ("jobcomp", False),
    "jobcontainertype": ("job_container", False),
    "jobsubmitplugins": ("job_submit", True),
    "launchtype": ("launch", False),
    "mcsplugin": ("mcs", False),
    "mpidefault": ("mpi", False),
    "nodefeaturesplugins": ("node_features", True),
    "powerplugin": ("power", False),
    "preempttype": ("preempt", False),
    "prepplugins": ("prep", True),
    "prioritytype": ("priority", False),
    "proctracktype": ("proctrack", False),
    "schedulertype": ("sched", False),
    "selecttype": ("select", False),
    "sitefactorplugin": ("site_factor", False),
    "switchtype": ("switch", False),
    "taskplugin": ("task", True),
    "topologyplugin": ("topology", False),
}
# Values that name no plugin file.
BUILTIN_VALUES = {"none", "autodetect"}
# Moved into the private directory so that slurmd -G touches nothing of the live node.
PRIVATE_KEYS = ("slurmdspooldir", "slurmdpidfile", "slurmdlogfile")


class CheckError(Exception):
    pass


def global_settings(text: str) -> list[tuple[str, str]]:
    """(Key, value) of each ``Key=value`` line that is not a node, partition or nodeset line."""
    out = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.strip()
        if key.lower() in ("nodename", "partitionname", "nodeset", "downnodes", "frontendname", "switchname"):
            continue
        out.append((key, value.strip()))
    return out


def plugin_files(settings: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(key, value, plugin file) for each plugin the settings name; raises CheckError for a name of
    the wrong type (``SelectType=sched/backfill``)."""
    out = []
    for key, value in settings:
        spec = PLUGIN_KEYS.get(key.lower())
        if spec is None or not value:
            continue
        kind, several = spec
        names = [v.strip() for v in value.split(",")] if several else [value]
        for name in names:
            if not name:
                continue
            given_kind, slash, plugin = name.rpartition("/")
            if not slash:
                given_kind, plugin = kind, name
            if given_kind.replace("-", "_") != kind:
                raise CheckError(f"{key} = {value!r}: {name!r} is not a {kind} plugin (use {kind}/<name>)")
            if plugin.lower() in BUILTIN_VALUES:
                continue
            out.append((key, value, f"{kind}_{plugin}.so"))
    return out


def plugin_dir(settings: list[tuple[str, str]], defaults: list[str]) -> list[str]:
    for key, value in settings:
        if key.lower() == "plugindir" and value:
            return [d for d in value.split(":") if d]
    existing = [d for d in defaults if os.path.isdir(d)]
    return existing[:1]


def private_copy(text: str, private: str) -> str:
    """The candidate slurm.conf with slurmd's spool, pid and log paths inside ``private``."""
    lines = [
        raw for raw in text.splitlines() if raw.split("=", 1)[0].strip().lower() not in PRIVATE_KEYS or "=" not in raw
    ]
    lines += [
        f"SlurmdSpoolDir={private}/spool",
        f"SlurmdPidFile={private}/slurmd.pid",
        f"SlurmdLogFile={private}/slurmd.log",
    ]
    return "\n".join(lines) + "\n"


def slurm_messages(*texts: str) -> list[str]:
    """Slurm's error and fatal lines, without the noise every candidate check prints."""
    noise = ("Domain socket directory", "xcpuinfo_hwloc_topo_load", "Node reconfigured socket/core")
    out = []
    for text in texts:
        for line in text.splitlines():
            if ("error:" in line or "fatal:" in line) and not any(n in line for n in noise) and line not in out:
                out.append(line.strip())
    return out


def named_settings(settings: list[tuple[str, str]], messages: list[str]) -> list[str]:
    """The candidate's settings that Slurm's messages name, by key or by value: ``Key=value``."""
    text = " ".join(messages).lower()

    def said(word: str) -> bool:
        word = word.strip().lower()
        return len(word) >= 3 and re.search(r"(?<![\w/.-])" + re.escape(word) + r"(?![\w/.-])", text) is not None

    out = []
    for key, value in settings:
        if (said(key) or any(said(v) for v in value.split(","))) and f"{key}={value}" not in out:
            out.append(f"{key}={value}")
    return out


def read(path: str) -> str | None:
    return read_text(path, errors="surrogateescape")


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "files": {"type": "dict", "required": True},
            "node_name": {"type": "str", "required": True},
            "slurmd": {"type": "bool", "default": True},
            "live_dir": {"type": "path", "default": "/etc/slurm"},
            "force": {"type": "bool", "default": False},
            "plugin_dirs": {"type": "list", "elements": "path", "default": list(PLUGIN_DIRS)},
            "timeout": {"type": "int", "default": 60},
        },
        supports_check_mode=True,
    )
    p = module.params
    files = {os.path.basename(str(name)): str(content) for name, content in p["files"].items()}
    if "slurm.conf" not in files:
        module.fail_json(msg="slurm_config_check: files must include slurm.conf")
    result = {"changed": False, "checked": [], "plugin_dir": "", "plugins": [], "output": []}
    if not p["force"] and all(read(os.path.join(p["live_dir"], n)) == c for n, c in files.items()):
        module.exit_json(**result)

    where = f"on host {p['node_name']}"
    settings = global_settings(files["slurm.conf"]) + global_settings(files.get("cgroup.conf", ""))
    try:
        needed = plugin_files(settings)
    except CheckError as exc:
        module.fail_json(msg=f"slurm_config: {exc} ({where}); no live file was changed", **result)
    dirs = plugin_dir(settings, p["plugin_dirs"])
    result["plugin_dir"] = ":".join(dirs)
    result["plugins"] = [f"{k}={v} -> {f}" for k, v, f in needed]
    if not dirs:
        module.fail_json(msg=f"slurm_config_check: no Slurm plugin directory {where} ({', '.join(p['plugin_dirs'])})")
    missing = [(k, v, f) for k, v, f in needed if not any(os.path.exists(os.path.join(d, f)) for d in dirs)]
    if missing:
        detail = "; ".join(f"{k} = {v!r} needs {f}" for k, v, f in missing)
        module.fail_json(
            msg=f"slurm_config: {detail}, which the installed Slurm does not have in {result['plugin_dir']} "
            f"({where}); no live file was changed",
            **result,
        )
    result["checked"].append("plugins")

    slurmd = module.get_bin_path("slurmd") if p["slurmd"] else None
    if slurmd:
        private = tempfile.mkdtemp(prefix="oci-gpu-slurm-check.")
        try:
            os.mkdir(os.path.join(private, "spool"), 0o700)
            for name, content in files.items():
                text = private_copy(content, private) if name == "slurm.conf" else content
                with open(os.path.join(private, name), "w", encoding="utf-8", errors="surrogateescape") as handle:
                    handle.write(text)
            conf = os.path.join(private, "slurm.conf")
            rc, out, err = module.run_command(
                ["timeout", str(p["timeout"]), slurmd, "-G", "-f", conf, "-N", p["node_name"]],
                environ_update={"SLURM_CONF": conf},
            )
            log = read(os.path.join(private, "slurmd.log")) or ""
        finally:
            shutil.rmtree(private, ignore_errors=True)
        result["output"] = [ln for ln in out.splitlines() if ln.strip()]
        if rc != 0:
            messages = slurm_messages(err, out, log) or [f"exit {rc}, no message"]
            if any("munge" in m.lower() for m in messages):
                hint = " munged must run on this host for the check (the munge role starts it)."
            else:
                hint = ""
            keys = named_settings(settings, messages)
            named = f" (candidate setting(s) {', '.join(keys)})" if keys else ""
            module.fail_json(
                msg=f"slurm_config: the candidate slurm.conf/gres.conf/cgroup.conf does not load in the installed "
                f"Slurm{named} ({where}, slurmd -G): {' | '.join(messages)}.{hint} No live file was changed.",
                rc=rc,
                **result,
            )
        result["checked"].append("slurmd -G")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
