# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action oci_gpu.cluster.fss_export_info: the lookups in Ansible's own process over a local connection."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.oci_gpu.cluster.plugins.module_utils.oci import _fss_api
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._action import CollectionAction
from ansible_collections.oci_gpu.cluster.plugins.plugin_utils._omit import plain


class ActionModule(CollectionAction):
    """Read-only API calls: run here when the task's host is the controller, else the module there."""

    def act(self, result: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        if self._connection.transport not in ("local", "ansible.builtin.local"):
            result.update(self._execute_module(task_vars=task_vars))
            return result
        validator = ArgumentSpecValidator(
            _fss_api.ARGUMENT_SPEC,
            mutually_exclusive=_fss_api.MUTUALLY_EXCLUSIVE,
            required_one_of=_fss_api.REQUIRED_ONE_OF,
        )
        omitted = object()
        args = {k: v for k, v in plain(self._task.args, omitted).items() if v is not omitted}
        validation = validator.validate(args)
        if validation.error_messages:
            raise AnsibleActionFail("fss_export_info: " + "; ".join(validation.error_messages))
        try:
            found = _fss_api.lookup_exports(validation.validated_parameters)
        except _fss_api.FssApiError as exc:
            result.update(failed=True, msg=str(exc))
            if exc.request_id:
                result["opc_request_id"] = exc.request_id
            return result
        result.update(changed=False, **found)
        return result
