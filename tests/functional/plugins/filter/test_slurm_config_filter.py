# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The oci_gpu.cluster.slurm_config filter, called through real Ansible (ansible-playbook, ansible-doc)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ansible_harness import QUIET, ansible_env, run_tool

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._config import render_slurm_config

REPO = Path(__file__).resolve().parents[4]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.unit.plugins.filter.test_slurm_config_filter import CLUSTER  # noqa: E402

PLAY = """
- name: Render the Slurm configuration through the filter
  hosts: localhost
  gather_facts: false
  vars:
    cluster: {cluster}
    cluster_overrides:
      config:
        MpiDefault: pmix
        PrologFlags: "{{{{ omit }}}}"
  tasks:
    - name: Compute the files
      ansible.builtin.set_fact:
        __files: "{{{{ spec | oci_gpu.cluster.slurm_config(omit_token=omit) }}}}"
      vars:
        spec: "{{{{ cluster | combine(cluster_overrides, recursive=true) }}}}"
    - name: Write each file the way the roles do
      ansible.builtin.template:
        src: conf.j2
        dest: "{{{{ out }}}}/{{{{ item }}}}"
        mode: "0644"
      loop: ["slurm.conf", "gres.conf", "cgroup.conf"]
"""


def _ansible(tool: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = ansible_env(ANSIBLE_HOME=str(cwd / ".ansible"), **QUIET)
    return run_tool(tool, *args, cwd=cwd, env=env, timeout=180)


def _play(tmp_path: Path, cluster: dict) -> subprocess.CompletedProcess:
    (tmp_path / "conf.j2").write_text("{{ ansible_managed | comment }}\n{{ __files[item] }}")
    (tmp_path / "play.yml").write_text(PLAY.format(cluster=json.dumps(cluster)))
    return _ansible(
        "ansible-playbook",
        [
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"out={tmp_path}",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "play.yml",
        ],
        tmp_path,
    )


def test_filter_renders_through_ansible_playbook(tmp_path):
    proc = _play(tmp_path, CLUSTER)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    drop = object()
    expected = render_slurm_config(dict(CLUSTER, config={"MpiDefault": "pmix", "PrologFlags": drop}), omit_token=drop)
    for name, text in expected.items():
        written = (tmp_path / name).read_text()
        lines = written.splitlines()
        header = 0
        while header < len(lines) and lines[header].startswith("#"):
            header += 1
        assert "Ansible managed" in "\n".join(lines[:header]), "the template adds the ansible_managed header"
        assert lines[header:] == text.splitlines(), name
    conf = (tmp_path / "slurm.conf").read_text()
    assert "PrologFlags" not in conf, "a value of omit drops the key"
    assert "NodeName=gpu[01-04] " in conf and "MpiDefault=pmix" in conf
    assert "CgroupPlugin=cgroup/v1" in (tmp_path / "cgroup.conf").read_text()


def test_filter_error_names_every_culprit(tmp_path):
    bad = json.loads(json.dumps(CLUSTER))
    bad["nodes"].append({"name": "gpu03", "cpus": 4})
    bad["config"] = {"SelectTypeParams": "CR_Core"}
    proc = _play(tmp_path, bad)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "slurm_config" in out
    assert "duplicate node name 'gpu03'" in out
    assert "'SelectTypeParams'" in out and "SelectTypeParameters" in out
    assert not (tmp_path / "slurm.conf").exists(), "nothing is written when the model refuses"


def test_ansible_doc_shows_the_filter(tmp_path):
    proc = _ansible("ansible-doc", ["-t", "filter", "--json", "oci_gpu.cluster.slurm_config"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["oci_gpu.cluster.slurm_config"]
    assert doc["doc"]["name"] == "slurm_config"
    assert {"_input", "omit_token"} <= set(doc["doc"]["options"])
    assert doc["examples"] and doc["return"]
