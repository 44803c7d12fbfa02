# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The monitoring role's files, rendered by Ansible from the role's own templates and defaults, checked
by Prometheus's and Alertmanager's own tools (``promtool``, ``amtool``, unpacked from Debian's packages
by tests/setup/bootstrap.sh into build/prometheus-tools): the rules load and pass their unit tests
(tests/monitoring/oci_gpu.rules.test.yml), the configuration loads, and the receivers' webhook URLs,
which are secrets, never show in the play's output while a bad receiver is refused by name."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_harness import run_playbook

REPO = Path(__file__).resolve().parents[3]
TOOLS = REPO / "build" / "prometheus-tools" / "usr" / "bin"
ROLE = REPO / "roles" / "monitoring"
SECRET = "https://hooks.example.invalid/services/T000/B000/very-secret-token"

pytestmark = pytest.mark.skipif(
    not (TOOLS / "promtool").is_file(), reason="promtool is missing: run tests/setup/bootstrap.sh"
)


def _render(tmp: Path, extra: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The role's three templates into ``tmp`` with the role's defaults, as the role renders them."""
    tasks = [
        {
            "name": f"Render {src}",
            "ansible.builtin.template": {"src": str(ROLE / "templates" / src), "dest": str(tmp / Path(src).stem)},
        }
        for src in (
            "etc/prometheus/rules/oci_gpu.rules.yml.j2",
            "etc/prometheus/prometheus.yml.j2",
            "etc/prometheus/alertmanager.yml.j2",
        )
    ]
    play = [
        {
            "name": "Render",
            "hosts": "all",
            "gather_facts": False,
            "vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / "main.yml")],
            "tasks": [
                {"name": "Check the settings", "ansible.builtin.include_tasks": str(ROLE / "tasks" / "preflight.yml")},
                *tasks,
            ],
        }
    ]
    variables = {
        "__monitoring_rules_file": str(tmp / "oci_gpu.rules.yml"),
        "__monitoring_file_sd_dir": str(tmp),
        **extra,
    }
    return run_playbook(tmp, play, variables, "-vvv", "--diff", host="ctl1")


def _tool(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TOOLS / name), *args], capture_output=True, text=True, cwd=cwd, check=False, timeout=120)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("monitoring")
    (tmp / "node.json").write_text("[]\n")
    (tmp / "slurm.json").write_text("[]\n")
    receivers = [{"name": "oncall", "webhook_url": SECRET}, {"name": "chat", "webhook_url": SECRET + "-2"}]
    res = _render(tmp, {"monitoring_server_hosts": ["ctl1"], "monitoring_receivers": receivers})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    return tmp


def test_the_rules_load_and_pass_their_unit_tests(rendered: Path) -> None:
    res = _tool("promtool", "check", "rules", str(rendered / "oci_gpu.rules.yml"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS: 14 rules found" in res.stdout, res.stdout
    shutil.copy(REPO / "tests" / "monitoring" / "oci_gpu.rules.test.yml", rendered / "oci_gpu.rules.test.yml")
    res = _tool("promtool", "test", "rules", "oci_gpu.rules.test.yml", cwd=rendered)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


def test_prometheus_and_alertmanager_load_their_configuration(rendered: Path) -> None:
    res = _tool("promtool", "check", "config", str(rendered / "prometheus.yml"))
    assert res.returncode == 0, res.stdout + res.stderr
    conf = yaml.safe_load((rendered / "prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in conf["scrape_configs"]}
    assert jobs["node"]["file_sd_configs"][0]["files"] == [str(rendered / "node.json")]
    assert conf["rule_files"] == [str(rendered / "oci_gpu.rules.yml")]
    res = _tool("amtool", "check-config", str(rendered / "alertmanager.yml"))
    assert res.returncode == 0, res.stdout + res.stderr
    am = yaml.safe_load((rendered / "alertmanager.yml").read_text())
    # every receiver gets every alert
    assert [(r["receiver"], r["continue"]) for r in am["route"]["routes"]] == [("oncall", True), ("chat", True)]
    assert am["receivers"][0]["webhook_configs"][0]["url"] == SECRET


def test_a_bad_receiver_is_refused_by_name_and_no_url_is_shown(tmp_path: Path) -> None:
    receivers = [{"name": "oncall", "webhook_url": SECRET}, {"name": "broken", "webhook_url": "ftp://x"}, {}]
    res = _render(tmp_path, {"monitoring_server_hosts": ["ctl1"], "monitoring_receivers": receivers})
    assert res.returncode != 0
    assert "monitoring_receivers entries need a name and an http(s) webhook_url: broken, #2" in res.stdout
    assert "very-secret-token" not in res.stdout + res.stderr
    res = _render(tmp_path, {"monitoring_server_hosts": ["ctl1"], "monitoring_alert_for": {"node_drained": "5 min"}})
    assert res.returncode != 0 and "durations must read like 30s, 5m, 2h: 5 min" in res.stdout
    lacks = "daemon_down, dbd_queue, filesystem, gpu_xid, node_down, repair_stuck, scheduler_cycle, target_down"
    assert f"monitoring_alert_for lacks {lacks} (it needs every key)" in res.stdout


def test_the_dcgm_scrape_job_and_its_collectors_file(rendered: Path) -> None:
    """Prometheus scrapes the GPU nodes' DCGM exporter from the role's file_sd; the fields the dashboards and
    GpuXidReported read are in the collectors file the role writes by default."""
    conf = yaml.safe_load((rendered / "prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in conf["scrape_configs"]}
    assert jobs["dcgm"]["file_sd_configs"][0]["files"] == [str(rendered / "dcgm.json")]
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    fields = set(defaults["monitoring_dcgm_exporter_fields"])
    wanted = set()
    for name in ("oci-gpu-gpu-nodes", "oci-gpu-jobs-tenants"):
        dash = json.loads((ROLE / "files" / "dashboards" / f"{name}.json").read_text())
        for panel in dash["panels"]:
            for target in panel["targets"]:
                wanted |= set(re.findall(r"DCGM_FI_[A-Z_]+", target["expr"]))
    rules = (rendered / "oci_gpu.rules.yml").read_text()
    wanted |= set(re.findall(r"DCGM_FI_[A-Z_]+", rules))
    assert wanted and wanted <= fields, wanted - fields
