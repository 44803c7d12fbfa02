# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Directory users through SSSD: the settings checked and this host's sssd.conf planned, in one place.

The identity role's preflight calls :func:`plan` (filter ``oci_gpu.cluster.identity_plan``) once per
host: every problem at once, each naming the key, the value and the host, and the options of the
SSSD domain for this host (its node role picks its access filter). The bind password is checked
but never returned or quoted: the template writes it, under ``no_log``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A host's node role, in the order a host in several groups takes it (a login node that is also
# a controller keeps the login node's access filter: users log in there).
NODE_ROLES = ("login", "controller", "compute")
FILTER_KEYS = (*NODE_ROLES, "all")
SCHEMAS = ("rfc2307", "rfc2307bis", "IPA", "AD")

_URI = re.compile(r"^ldaps?://[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?/?$")
_DN = re.compile(r"^[A-Za-z][A-Za-z0-9-]*=[^,=\n]+(,\s*[A-Za-z][A-Za-z0-9-]*=[^,=\n]+)*$")
_LOGIN = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
_DOMAIN = re.compile(r"^[A-Za-z0-9_.-]+$")
_MODE = re.compile(r"^0?[0-7]{3}$")


def node_role(groups: Any) -> str:
    """The node role a host's groups give it: login, controller (or dbd host), else compute."""
    names = set(groups or [])
    if "slurm_login" in names:
        return "login"
    if names & {"slurm_controller", "slurm_dbd"}:
        return "controller"
    return "compute"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _filter_problem(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        return f"{key}={value!r}: an LDAP filter in parentheses, like (memberOf=cn=hpc,ou=groups,dc=example,dc=edu)"
    if "\n" in value or not (value.startswith("(") and value.endswith(")")) or not _balanced(value):
        return f"{key}={value!r}: an LDAP filter starts with '(', ends with ')' and balances its parentheses"
    return ""


def problems(s: Mapping[str, Any], host: str) -> list[str]:
    """Every problem of the settings ``s`` (the role's inputs without the ``identity_`` prefix)."""
    out: list[str] = []

    def bad(key: str, why: str) -> None:
        out.append(f"identity_{key} on {host}: {why}")

    uris = s.get("ldap_uris")
    if not isinstance(uris, list) or not uris:
        bad("ldap_uris", f"{uris!r}: a list of one or more ldaps:// (or ldap://, with StartTLS) URIs")
    else:
        for uri in uris:
            if not isinstance(uri, str) or not _URI.match(uri):
                bad("ldap_uris", f"{uri!r} is not an ldaps://host[:port] or ldap://host[:port] URI")
    ca = s.get("ldap_ca_cert", "")
    if not isinstance(ca, str) or (
        ca and ("-----BEGIN CERTIFICATE-----" not in ca or "-----END CERTIFICATE-----" not in ca)
    ):
        bad("ldap_ca_cert", "is not PEM text (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)")
    for key in ("ldap_search_base", "ldap_user_search_base", "ldap_group_search_base", "ldap_bind_dn"):
        value = s.get(key, "")
        required = key == "ldap_search_base"
        if not isinstance(value, str) or ((value or required) and not _DN.match(value)):
            bad(key, f"{value!r} is not a DN like ou=people,dc=example,dc=edu")
    dn, password = s.get("ldap_bind_dn", ""), s.get("ldap_bind_password", "")
    if not isinstance(password, str):
        bad("ldap_bind_password", "must be a string (its value is not shown)")
    elif bool(dn) != bool(password):
        why = "is set without identity_ldap_bind_dn" if password else f"is empty, but identity_ldap_bind_dn={dn!r}"
        bad("ldap_bind_password", why)
    elif password != password.strip() or "\n" in password:
        why = "has a line break or spaces at either end, which sssd.conf cannot hold (its value is not shown)"
        bad("ldap_bind_password", why)
    if s.get("ldap_schema") not in SCHEMAS:
        bad("ldap_schema", f"{s.get('ldap_schema')!r}: one of {', '.join(SCHEMAS)}")
    filters = s.get("access_filter", {})
    if not isinstance(filters, Mapping):
        bad("access_filter", f"{filters!r}: a mapping of node role ({', '.join(FILTER_KEYS)}) to an LDAP filter")
    else:
        for role, value in filters.items():
            if role not in FILTER_KEYS:
                bad("access_filter", f"{role!r} is not a node role ({', '.join(FILTER_KEYS)})")
            elif why := _filter_problem(role, value):
                bad("access_filter", why)
    home = s.get("home_dir", "")
    if not isinstance(home, str) or (home and (not home.startswith("/") or re.search(r"\s", home))):
        bad("home_dir", f"{home!r}: empty (the directory's homeDirectory) or an absolute path like /home/%u")
    mode = s.get("home_mode", "")
    if not isinstance(mode, str) or not _MODE.match(mode):
        bad("home_mode", f"{mode!r}: an octal mode in quotes, like '0700'")
    user = s.get("check_user", "")
    if not isinstance(user, str) or (user and not _LOGIN.match(user)):
        bad("check_user", f"{user!r} is not a login name")
    domain = s.get("domain", "")
    if not isinstance(domain, str) or not _DOMAIN.match(domain):
        bad("domain", f"{domain!r}: letters, digits, '_', '.', '-'")
    return out


def domain_options(s: Mapping[str, Any], role: str, ca_path: str) -> list[list[str]]:
    """The ``[domain/...]`` options, in order, for a host of node role ``role`` (no bind password)."""
    filters = s.get("access_filter") or {}
    access = filters.get(role, filters.get("all", ""))
    uris = list(s["ldap_uris"])
    opts: list[list[str]] = [
        ["id_provider", "ldap"],
        ["auth_provider", "ldap"],
        ["access_provider", "ldap" if access else "permit"],
    ]
    if access:
        opts += [["ldap_access_order", "filter"], ["ldap_access_filter", access]]
    opts += [["ldap_uri", ", ".join(uris)], ["ldap_search_base", s["ldap_search_base"]]]
    for key in ("ldap_user_search_base", "ldap_group_search_base"):
        if s.get(key):
            opts.append([key, s[key]])
    opts.append(["ldap_schema", s["ldap_schema"]])
    # UIDs and GIDs are the directory's own numbers, the same on every node (never mapped from SIDs)
    opts.append(["ldap_id_mapping", "false"])
    if any(u.startswith("ldap://") for u in uris):
        opts.append(["ldap_id_use_start_tls", "true"])
    opts.append(["ldap_tls_reqcert", "demand"])
    if s.get("ldap_ca_cert"):
        opts.append(["ldap_tls_cacert", ca_path])
    if s.get("ldap_bind_dn"):
        opts += [["ldap_default_bind_dn", s["ldap_bind_dn"]], ["ldap_default_authtok_type", "password"]]
    opts.append(["cache_credentials", "true" if s.get("cache_credentials") else "false"])
    if s.get("home_dir"):
        opts.append(["override_homedir", s["home_dir"]])
    opts.append(["enumerate", "false"])
    return opts


def plan(s: Mapping[str, Any], host: str, groups: Any, ca_path: str) -> dict[str, Any]:
    """The problems and, when there are none, this host's node role, access filter and domain options."""
    found = problems(s, host)
    role = node_role(groups)
    if found:
        return {"problems": found, "node_role": role, "access_filter": "", "domain_options": []}
    opts = domain_options(s, role, ca_path)
    access = dict(opts).get("ldap_access_filter", "")
    umask = f"{0o777 & ~int(s['home_mode'], 8):04o}"
    return {"problems": [], "node_role": role, "access_filter": access, "domain_options": opts, "home_umask": umask}
