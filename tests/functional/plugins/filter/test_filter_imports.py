# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Looking up one of the collection's filters, as an Ansible worker does, imports no module_utils and
no ``oci`` SDK (docs/layout.md, "Filter files import nothing heavy")."""

from __future__ import annotations

import json

from ansible_harness import COLLECTIONS, run_tool

# A fresh interpreter, set up as ansible-core sets up a worker: the collection finder, then the
# filter loader, which imports every filter file of the collection for one lookup.
_PROBE = """
import json, sys
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
from ansible.plugins.loader import filter_loader
before = set(sys.modules)
found = filter_loader.get("oci_gpu.cluster.munge_key_problem")
loaded = sorted(set(sys.modules) - before)
value = found.j2_function("not base64!")
print(json.dumps({
    "filter_files": [m for m in loaded if ".plugins.filter." in m],
    "heavy": [m for m in loaded if ".plugins.module_utils." in m or ".plugins.plugin_utils." in m
              or m == "oci" or m.startswith("oci.")],
    "value": value,
    "after_call": [m for m in sys.modules if m.endswith("module_utils.slurm._munge")],
}))
"""


def test_one_filter_lookup_imports_every_filter_file_but_nothing_they_use_until_called() -> None:
    res = run_tool("python", "-c", _PROBE, str(COLLECTIONS), timeout=120)
    assert res.returncode == 0, res.stderr
    seen = json.loads(res.stdout.strip().splitlines()[-1])
    # The loader really went through every filter file (what makes their imports matter) ...
    assert len(seen["filter_files"]) >= 20, seen["filter_files"]
    # ... and none of them pulled in a module_util or the SDK at import.
    assert seen["heavy"] == []
    # The filter still works: its module_util comes in at the first call.
    assert seen["value"] == "key is not valid base64"
    assert seen["after_call"] == ["ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._munge"]
