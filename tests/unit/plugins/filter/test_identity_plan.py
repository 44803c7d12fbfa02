# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The identity role's plan: directory settings refused by key, value and host; the SSSD domain per node role."""

from __future__ import annotations

from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.filter.identity_plan import identity_plan

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
SECRET = "s3cret #bind"


def _settings(**over: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "ldap_uris": ["ldaps://ldap1.example.edu", "ldaps://ldap2.example.edu:636"],
        "ldap_ca_cert": CA,
        "ldap_search_base": "dc=example,dc=edu",
        "ldap_user_search_base": "ou=people,dc=example,dc=edu",
        "ldap_group_search_base": "",
        "ldap_schema": "rfc2307",
        "ldap_bind_dn": "cn=sssd,ou=services,dc=example,dc=edu",
        "ldap_bind_password": SECRET,
        "access_filter": {"login": "(memberOf=cn=hpc,ou=groups,dc=example,dc=edu)", "all": "(uid=admin*)"},
        "home_dir": "",
        "home_mode": "0700",
        "domain": "site",
        "cache_credentials": True,
        "check_user": "dora",
    }
    s.update(over)
    return s


def _plan(groups: list[str], **over: Any) -> dict[str, Any]:
    return identity_plan(_settings(**over), "gpu-7", groups, "/etc/sssd/pki/ca.pem")


def test_a_login_node_gets_its_filter_and_every_option_in_order() -> None:
    plan = _plan(["slurm_login", "all_hosts"])
    assert plan["problems"] == []
    assert plan["node_role"] == "login"
    assert plan["access_filter"] == "(memberOf=cn=hpc,ou=groups,dc=example,dc=edu)"
    assert plan["home_umask"] == "0077"
    assert plan["domain_options"] == [
        ["id_provider", "ldap"],
        ["auth_provider", "ldap"],
        ["access_provider", "ldap"],
        ["ldap_access_order", "filter"],
        ["ldap_access_filter", "(memberOf=cn=hpc,ou=groups,dc=example,dc=edu)"],
        ["ldap_uri", "ldaps://ldap1.example.edu, ldaps://ldap2.example.edu:636"],
        ["ldap_search_base", "dc=example,dc=edu"],
        ["ldap_user_search_base", "ou=people,dc=example,dc=edu"],
        ["ldap_schema", "rfc2307"],
        ["ldap_id_mapping", "false"],
        ["ldap_tls_reqcert", "demand"],
        ["ldap_tls_cacert", "/etc/sssd/pki/ca.pem"],
        ["ldap_default_bind_dn", "cn=sssd,ou=services,dc=example,dc=edu"],
        ["ldap_default_authtok_type", "password"],
        ["cache_credentials", "true"],
        ["enumerate", "false"],
    ]


def test_the_bind_password_is_never_in_the_plan() -> None:
    assert SECRET not in repr(_plan(["slurm_compute"]))
    bad = _plan(["slurm_compute"], ldap_bind_password=" " + SECRET + "\n")
    assert bad["problems"] == [
        "identity_ldap_bind_password on gpu-7: has a line break or spaces at either end, which sssd.conf cannot hold "
        "(its value is not shown)"
    ]
    assert SECRET not in repr(bad)


def test_node_roles_pick_their_filter_or_all_or_none() -> None:
    assert _plan(["slurm_compute"])["access_filter"] == "(uid=admin*)"
    assert _plan(["slurm_dbd"])["node_role"] == "controller"
    assert _plan(["slurm_controller", "slurm_login"])["node_role"] == "login"
    open_compute = _plan(["slurm_compute"], access_filter={"login": "(uid=a)"})
    assert open_compute["access_filter"] == ""
    assert ["access_provider", "permit"] in open_compute["domain_options"]
    assert not [o for o in open_compute["domain_options"] if o[0].startswith("ldap_access")]


def test_ldap_uris_use_starttls_and_an_anonymous_bind_has_no_bind_options() -> None:
    plan = _plan(["slurm_compute"], ldap_uris=["ldap://ldap1"], ldap_bind_dn="", ldap_bind_password="", ldap_ca_cert="")
    keys = [o[0] for o in plan["domain_options"]]
    assert ["ldap_id_use_start_tls", "true"] in plan["domain_options"]
    assert ["ldap_tls_reqcert", "demand"] in plan["domain_options"]
    assert "ldap_tls_cacert" not in keys and "ldap_default_bind_dn" not in keys


def test_home_dir_overrides_the_directory() -> None:
    plan = _plan(["slurm_compute"], home_dir="/mnt/home/%u", home_mode="0750")
    assert ["override_homedir", "/mnt/home/%u"] in plan["domain_options"]
    assert plan["home_umask"] == "0027"


def test_every_problem_is_named_at_once_with_key_value_and_host() -> None:
    plan = _plan(
        ["slurm_compute"],
        ldap_uris=["ldaps://ldap1.example.edu", "https://ldap2"],
        ldap_ca_cert="not a cert",
        ldap_search_base="example.edu",
        ldap_bind_dn="cn=sssd,dc=example,dc=edu",
        ldap_bind_password="",
        ldap_schema="rfc2037",
        access_filter={"gpu": "(uid=a)", "login": "memberOf=cn=hpc", "compute": "((uid=a)"},
        home_dir="home/%u",
        home_mode="700x",
        check_user="Dora Explorer",
        domain="my site",
    )
    assert plan["problems"] == [
        "identity_ldap_uris on gpu-7: 'https://ldap2' is not an ldaps://host[:port] or ldap://host[:port] URI",
        "identity_ldap_ca_cert on gpu-7: is not PEM text (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)",
        "identity_ldap_search_base on gpu-7: 'example.edu' is not a DN like ou=people,dc=example,dc=edu",
        "identity_ldap_bind_password on gpu-7: is empty, but identity_ldap_bind_dn='cn=sssd,dc=example,dc=edu'",
        "identity_ldap_schema on gpu-7: 'rfc2037': one of rfc2307, rfc2307bis, IPA, AD",
        "identity_access_filter on gpu-7: 'gpu' is not a node role (login, controller, compute, all)",
        "identity_access_filter on gpu-7: login='memberOf=cn=hpc': an LDAP filter starts with '(', ends with ')' "
        "and balances its parentheses",
        "identity_access_filter on gpu-7: compute='((uid=a)': an LDAP filter starts with '(', ends with ')' "
        "and balances its parentheses",
        "identity_home_dir on gpu-7: 'home/%u': empty (the directory's homeDirectory) or an absolute path "
        "like /home/%u",
        "identity_home_mode on gpu-7: '700x': an octal mode in quotes, like '0700'",
        "identity_check_user on gpu-7: 'Dora Explorer' is not a login name",
        "identity_domain on gpu-7: 'my site': letters, digits, '_', '.', '-'",
    ]
    assert plan["domain_options"] == []


def test_empty_uris_and_a_password_without_a_dn_are_refused() -> None:
    plan = _plan(["slurm_compute"], ldap_uris=[], ldap_bind_dn="")
    assert plan["problems"] == [
        "identity_ldap_uris on gpu-7: []: a list of one or more ldaps:// (or ldap://, with StartTLS) URIs",
        "identity_ldap_bind_password on gpu-7: is set without identity_ldap_bind_dn",
    ]
