# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test credentials: an RSA key pair plus an OCI config file the unmodified SDK accepts."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


@dataclass
class Credentials:
    config_file: Path
    profile: str
    key_file: Path
    public_pem: bytes
    key_id: str
    tenancy: str
    user: str
    fingerprint: str


def fingerprint_of(public_pem: bytes) -> str:
    """OCI's key fingerprint: MD5 of the DER public key, colon-separated."""
    der = serialization.load_pem_public_key(public_pem).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    digest = hashlib.md5(der).hexdigest()
    return ":".join(digest[i : i + 2] for i in range(0, 32, 2))


def write_oci_config(
    directory: str | Path,
    tenancy: str,
    region: str,
    *,
    profile: str = "DEFAULT",
    user: str = "ocid1.user.oc1..aaaaaaaaemulatoruser",
    key_size: int = 2048,
) -> Credentials:
    """Generate a key pair and write ``config`` + ``key.pem`` into ``directory`` (mode 0600)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=key_size)
    key_file = d / "key.pem"
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    os.chmod(key_file, 0o600)
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    fp = fingerprint_of(public_pem)
    config = d / "config"
    config.write_text(
        f"[{profile}]\nuser={user}\nfingerprint={fp}\nkey_file={key_file}\ntenancy={tenancy}\nregion={region}\n"
    )
    os.chmod(config, 0o600)
    return Credentials(config, profile, key_file, public_pem, f"{tenancy}/{user}/{fp}", tenancy, user, fp)
