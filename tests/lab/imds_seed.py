#!/usr/bin/env python
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""oci-gpu-lab (TEST ONLY): seed cloud-init's NoCloud datasource from the lab IMDS at boot.

Installed in the lab images as /usr/local/sbin/oci-gpu-lab-imds-seed and run before
cloud-init-local.service (a drop-in's ExecStartPre) on nodes the lab cloud launched. It reads
/opc/v2/instance/ as cloud-init's Oracle datasource does on OCI (which will not run in a container)
and writes the instance's OCID, hostname and base64-decoded ``metadata.user_data`` as a NoCloud seed.
"""

import base64
import json
import os
import time
import urllib.request

URL = "http://169.254.169.254/opc/v2/instance/"
SEED = "/var/lib/cloud/seed/nocloud"


def main() -> int:
    req = urllib.request.Request(URL, headers={"Authorization": "Bearer Oracle"})
    doc = None
    for _attempt in range(60):
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                doc = json.load(resp)
            break
        except OSError:
            time.sleep(0.5)
    if doc is None:
        raise SystemExit(f"oci-gpu-lab-imds-seed: {URL} did not answer")
    meta = doc.get("metadata") or {}
    user_data = base64.b64decode(meta["user_data"]).decode() if meta.get("user_data") else "#cloud-config\n{}\n"
    os.makedirs(SEED, exist_ok=True)
    with open(os.path.join(SEED, "meta-data"), "w") as f:
        f.write(f"instance-id: {doc['id']}\nlocal-hostname: {doc.get('hostname') or doc['displayName']}\n")
    with open(os.path.join(SEED, "user-data"), "w") as f:
        f.write(user_data)
    print(f"oci-gpu-lab-imds-seed: seeded {doc['id']} ({len(user_data)} bytes of user_data)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
