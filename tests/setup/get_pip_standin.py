# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Offline stand-in for pip's ``get-pip.py`` bootstrap script (test set-up only).

``ansible-test sanity`` builds virtual environments for some tests and downloads
``get-pip.py`` from a host our machines cannot reach. tests/setup/sanity.sh copies this
file into ansible-test's cache under the name it looks for. It installs pip with
``ensurepip`` in a child process (ensurepip ignores pip's configuration in its own process),
then runs ``pip install`` with the arguments get-pip.py was given, so the package index
settings in the machine's pip configuration files apply.
"""

from __future__ import annotations

import subprocess
import sys

GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}


def main() -> int:
    subprocess.run([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"], check=True)
    args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
    return subprocess.run([sys.executable, "-m", "pip", "install", *args], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
