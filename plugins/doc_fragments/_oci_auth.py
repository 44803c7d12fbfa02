# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Authentication options shared by the inventory plugin and the OCI modules."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  auth_type:
    description:
      - How to authenticate to the OCI API.
      - V(api_key) reads an OCI SDK/CLI configuration file (O(config_file), O(config_profile)).
      - V(instance_principal) uses the identity of the OCI instance the controller runs on;
        the tenancy then comes from O(tenancy) or the instance's certificate.
    type: str
    choices: [api_key, instance_principal]
    default: api_key
  config_file:
    description:
      - Path of the OCI configuration file used with O(auth_type=api_key).
      - When not set, the environment variable E(OCI_CONFIG_FILE) is used, then C(~/.oci/config).
    type: path
  config_profile:
    description:
      - Profile (section) of O(config_file) to use.
      - When not set, the environment variable E(OCI_CONFIG_PROFILE) is used, then C(DEFAULT).
    type: str
  tenancy:
    description:
      - Tenancy OCID. Read from the configuration file with O(auth_type=api_key); needed with
        O(auth_type=instance_principal) only when the tenancy cannot be taken from the instance certificate.
    type: str
"""
