# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests that start Ansible (ansible, ansible-playbook, ansible-inventory, ansible-doc, ansible-galaxy,
ansible-builder) through tests/ansible_harness.py; the pure Python tests are in tests/unit.

A package, so that a test file here may share its name with the unit tests of the same plugin
(tests/unit/plugins/modules/test_slurm_qos.py beside tests/functional/plugins/modules/test_slurm_qos.py):
pytest imports these as ``functional.plugins.modules.test_slurm_qos``.
"""
