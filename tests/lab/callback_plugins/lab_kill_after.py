# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""TEST ONLY: SIGKILL ansible-playbook right after a named task ended on every host.

The lab's "interrupted run" step (molecule/_shared/slurm/side_effect.yml) enables it to stop a run
at the worst moment for the slurm role: the configuration files are written, no restart or
reconfigure has run. ``LAB_KILL_AFTER_TASK`` names the task; when the task after it starts, the
process kills itself with SIGKILL (no handler, no cleanup, as a lost control node or an operator's
kill -9 would leave it).
"""

from __future__ import annotations

import os
import signal

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: lab_kill_after
type: aggregate
short_description: TEST ONLY - kill ansible-playbook after a named task
description:
  - Kills the ansible-playbook process with SIGKILL when the task after the one named by the
    environment variable C(LAB_KILL_AFTER_TASK) starts.
requirements:
  - enable in callbacks_enabled
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "lab_kill_after"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._target = os.environ.get("LAB_KILL_AFTER_TASK", "")
        self._armed = False

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._armed:
            os.kill(os.getpid(), signal.SIGKILL)
        if self._target and task.get_name().endswith(self._target):
            self._armed = True

    def v2_playbook_on_handler_task_start(self, task):
        if self._armed:
            os.kill(os.getpid(), signal.SIGKILL)
