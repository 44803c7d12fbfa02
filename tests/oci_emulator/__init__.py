# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""A test-only emulator of the OCI REST API (standard library + cryptography)."""

from __future__ import annotations

import sys
from pathlib import Path

# The tenancy generator uses the collection's shape table; make the collection importable when
# the emulator runs outside pytest (python -m tests.oci_emulator).
_COLLECTIONS = Path(__file__).resolve().parents[2] / "build" / "collections"
if _COLLECTIONS.is_dir() and str(_COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(_COLLECTIONS))

from .keys import Credentials, write_oci_config  # noqa: E402
from .server import Emulator, Knobs  # noqa: E402
from .tenancy import Tenancy, generate, load_tenancy_file  # noqa: E402

__all__ = ["Credentials", "Emulator", "Knobs", "Tenancy", "generate", "load_tenancy_file", "write_oci_config"]
