# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action oci_gpu.cluster.run_lock: names this run on the control host, judges a held lock there (whether
its run is over can only be seen where it ran), and has the module take or give back the lock on the node."""

from __future__ import annotations

import getpass
import os
import socket
import time
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.oci_gpu.cluster.plugins.module_utils.common import _run_lock
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._action import CollectionAction

MODULE = "oci_gpu.cluster.run_lock"
_LOCK = "/var/lib/oci-gpu-cluster/run.lock"


def this_run(play: str) -> dict[str, Any]:
    """The ansible-playbook process: a task's action runs in a worker it forked, so it is the parent."""
    pid = os.getppid()
    start = _run_lock.process_start(pid)
    host = socket.gethostname()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    # the run's start, not the task's: every task of one run writes the same record
    boot = time.time() - _uptime()
    started = round(boot + int(start) / os.sysconf("SC_CLK_TCK"), 1) if start else round(time.time(), 1)
    return {
        "run_id": f"{host}:{pid}:{start}",
        "control_host": host,
        "pid": pid,
        "start": start,
        "user": user,
        "play": play,
        "started_at": started,
    }


def _uptime() -> float:
    try:
        with open("/proc/uptime", encoding="utf-8") as fh:
            return float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


class ActionModule(CollectionAction):
    def act(self, result: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        args = dict(self._task.args)
        for private in ("_run", "_replace"):
            if private in args:
                raise AnsibleActionFail(f"run_lock: {private} is set by the action, not by the task")
        run = this_run(str(task_vars.get("ansible_play_name") or ""))
        args["_run"] = run
        wait = int(args.pop("wait", 0) or 0)
        deadline = time.monotonic() + wait
        while True:
            first = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
            if first.get("failed") or args.get("state", "acquired") == "released" or first.get("taken"):
                result.update(first)
                return result
            holder = first.get("holder") or {}
            now = time.time()
            why = _run_lock.stale(holder, run, now, int(args.get("max_age", 14400) or 0), _run_lock.alive_here)
            if not why and boolean(args.get("break_lock", False), strict=False):
                why = "break_lock is set"
            if why or time.monotonic() >= deadline or self._task.check_mode:
                break
            time.sleep(min(5.0, max(0.5, deadline - time.monotonic())))
        if not why:
            where = f"{args.get('path', _LOCK)} on {task_vars.get('ansible_host', task_vars.get('inventory_hostname'))}"
            result.update(
                failed=True,
                run=run,
                holder=holder,
                msg=(
                    f"Another run holds this cluster's lock ({where}): {_run_lock.describe(holder, now)}. "
                    f"One run at a time{f' (waited {wait} s)' if wait else ''}: wait for it to end. If that run is "
                    "over (its control host died), rerun with -e slurm_run_lock_break=true."
                ),
            )
            return result
        args["_replace"] = holder.get("run_id", "")
        second = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        result.update(second)
        if second.get("taken"):
            result["replaced"] = f"took over the lock of {_run_lock.describe(holder, now)}: {why}"
        elif not second.get("failed"):
            # another run took it over first: refuse, naming that run
            taker = _run_lock.describe(second.get("holder") or {}, now)
            result.update(failed=True, msg=f"Another run took this cluster's lock over first: {taker}. One at a time.")
        return result
