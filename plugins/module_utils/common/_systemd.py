# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""The state of systemd services, read with one ``systemctl show`` call (modules on the node).

Pure Python, standard library only, importable on Python 3.8+.

``unit_states_from_show(output, units) -> {unit: {"loaded", "active", "enabled"}}``
    Parses ``systemctl show -p Id -p LoadState -p ActiveState -p UnitFileState u1.service ...``.
``unit_states(module, units)``
    Runs that command through an AnsibleModule; ``{}`` without systemd or without units.
``running(states)``
    The units that are active and enabled: a role skips starting them again.
"""

from __future__ import annotations

PROPERTIES = ("Id", "LoadState", "ActiveState", "UnitFileState")


def unit_states_from_show(output, units):
    """systemctl prints one block per unit, in the order asked, separated by a blank line."""
    blocks = [b for b in output.strip().split("\n\n") if b.strip()] if output.strip() else []
    out = {}
    for index, block in enumerate(blocks[: len(units)]):  # as many as systemctl answered
        fields = dict(line.partition("=")[::2] for line in block.splitlines() if "=" in line)
        unit_id = fields.get("Id", "")
        unit = unit_id[: -len(".service")] if unit_id.endswith(".service") and unit_id[:-8] in units else units[index]
        out[unit] = {
            "loaded": fields.get("LoadState", ""),
            "active": fields.get("ActiveState", ""),
            "enabled": fields.get("UnitFileState", ""),
        }
    return out


def unit_states(module, units):
    """The state of each unit of ``units`` (service names without ``.service``)."""
    systemctl = module.get_bin_path("systemctl")
    if not units or not systemctl:
        return {}
    props = [arg for prop in PROPERTIES for arg in ("-p", prop)]
    rc, out, _err = module.run_command([systemctl, "show", *props, "--", *[f"{u}.service" for u in units]])
    return unit_states_from_show(out, list(units)) if rc == 0 else {}


def running(states):
    """The units that are active and enabled, in the order of ``states``."""
    return [u for u, st in states.items() if st["active"] == "active" and st["enabled"] == "enabled"]
