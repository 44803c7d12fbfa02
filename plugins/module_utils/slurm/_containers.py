# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Containers on Slurm, as pure functions: Slurm's own OCI support (oci.conf) and enroot + pyxis.

Public API
----------
``oci_series(version) -> str``
    Which oci.conf template serves a Slurm release: ``"22.05"`` (22.05 up to 24.05: the keys
    22.05 knows, which every later release reads too) or ``"24.11"`` (24.11 and later).
``oci_conf_text(version, state_dir, runtime, config, prolog) -> str``
    oci.conf for that release: the role's rootless crun lines (per-user state directory), then
    ``slurm_oci_config``'s own keys, which replace the role's (RunTimeCreate/RunTimeStart replace
    RunTimeRun).
``plugstack_conf_text(conf_dir) -> str``
    plugstack.conf: it includes plugstack.conf.d, which every node keeps itself.
``oci_conf_problems(config, version=None, state_dir="") -> list``
    What is wrong with ``slurm_oci_config`` (keys merged over the role's crun lines) for that
    release; ``version=None`` checks against the newest keys (before Slurm is installed).
``plugin_version(data) -> tuple | None``
    The ``plugin_version`` a Slurm plugin (a SPANK plugin such as pyxis included) was built
    with, read from the ELF file's bytes: ``(major, minor, micro)``; ``None`` without it.
``read_plugin(path, name, dirs) -> dict``
    Finds a plugin (the path given, else the name in the first directory that has it) and reads it:
    ``path``, ``found`` and ``version``.
``pyxis_version_problem(plugin, slurm, path, host) -> str``
    Empty when pyxis was built for the running Slurm's major.minor, else the refusal naming both.
``enroot_paths(base) -> dict`` / ``enroot_conf_problems(...)`` / ``pyxis_args_problems(...)``
    enroot's per-user runtime, data and cache paths under a base directory, and the checks of
    the role's enroot and pyxis settings.

Facts these encode (the releases' slurmstepd and oci.conf man page, read from Debian's packages):

* 22.05 knows ``ContainerPath``, ``CreateEnvFile`` (true/false) and ``RunTimeCreate``,
  ``RunTimeDelete``, ``RunTimeKill``, ``RunTimeQuery``, ``RunTimeRun``, ``RunTimeStart``, with
  the patterns ``%% %@ %b %e %j %n %r %s %t %u``; ``RunTimeRun`` excludes Create/Start, and with
  it Query, Kill and Delete must all be set ("oci.conf present but missing required options").
* 24.11 adds ``EnvExclude``, ``RunTimeEnvExclude``, ``IgnoreFileConfigJson``, ``DisableHooks``,
  ``DisableCleanup``, ``MountSpoolDir``, ``SrunPath``, ``SrunArgs``, ``Debug``, ``FileDebug``,
  ``StdIODebug``, ``SyslogDebug``, and the patterns ``%U %m %p``; its ``CreateEnvFile`` takes
  ``null``, ``newline``, ``disabled`` (and true/false as before).
* Every release serves oci.conf to configless slurmd; slurmstepd reads it for each step, and the
  role restarts slurmd on a change (slurm/_version.SLURMD_RESTART_FILES).
* SPANK plugins carry ``plugin_version = SLURM_VERSION_NUMBER`` ((major << 16) | (minor << 8) |
  micro) from the slurm/spank.h they were built with; Slurm refuses a plugin of another release.
"""

from __future__ import annotations

import difflib
import os
import re
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._version import PLUGIN_DIRS, parse_version

__all__ = [
    "OCI_KEYS",
    "enroot_conf_problems",
    "enroot_paths",
    "oci_conf_problems",
    "oci_conf_text",
    "oci_series",
    "plugin_version",
    "plugstack_conf_text",
    "pyxis_args_problems",
    "pyxis_version_problem",
    "read_plugin",
]

_RUNTIME_KEYS = ("RunTimeCreate", "RunTimeDelete", "RunTimeKill", "RunTimeQuery", "RunTimeRun", "RunTimeStart")
_KEYS_2205 = ("ContainerPath", "CreateEnvFile", *_RUNTIME_KEYS)
_KEYS_2411 = (
    *_KEYS_2205,
    "Debug",
    "DisableCleanup",
    "DisableHooks",
    "EnvExclude",
    "FileDebug",
    "IgnoreFileConfigJson",
    "MountSpoolDir",
    "RunTimeEnvExclude",
    "SrunArgs",
    "SrunPath",
    "StdIODebug",
    "SyslogDebug",
)
# The keys each template series knows, and the % patterns its RunTime* commands may use.
OCI_KEYS = {"22.05": _KEYS_2205, "24.11": _KEYS_2411}
_PATTERNS = {"22.05": "%@bejnrstu", "24.11": "%@bejmnprstuU"}
_CREATE_ENV = {"22.05": ("true", "false"), "24.11": ("true", "false", "null", "newline", "disabled")}
_BOOL_KEYS = ("DisableCleanup", "IgnoreFileConfigJson")
_BOOL_WORDS = ("true", "false", "yes", "no", "1", "0")
_PATTERN_RE = re.compile(r"%(.)")


def _version(value: Any) -> tuple[int, int] | None:
    return None if value is None or value == "" else parse_version(value)


def oci_series(version: Any) -> str:
    """The oci.conf template a release uses: '22.05' before 24.11, '24.11' from it on."""
    ver = _version(version)
    return "24.11" if ver is None or ver >= (24, 11) else "22.05"


_MANAGED = "# Managed by Ansible (oci_gpu.cluster.slurm)"
# The per-user state directory: 22.05 has no %U (uid), so it goes by user name there.
_STATE_PATTERN = {"22.05": "%u", "24.11": "%U"}
_RUNTIME_COMMANDS = (
    ("RunTimeQuery", "state %n.%u.%j.%s.%t"),
    ("RunTimeKill", "kill -a %n.%u.%j.%s.%t"),
    ("RunTimeDelete", "delete --force %n.%u.%j.%s.%t"),
    ("RunTimeRun", "run --bundle %b %n.%u.%j.%s.%t"),
)
_ENV_EXCLUDE = "^(SLURM_CONF|SLURM_CONF_SERVER)="


def _oci_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def oci_conf_text(version: Any, state_dir: str, runtime: str, config: Mapping[str, Any] | None, prolog: str) -> str:
    """oci.conf for a Slurm release (module doc): what configless nodes fetch from slurmctld."""
    series = oci_series(version)
    pattern = _STATE_PATTERN[series]
    crun = f"{runtime} --rootless=true --root={state_dir}/{pattern}"
    if series == "24.11":
        head = (
            f"{_MANAGED}: Slurm OCI containers with rootless crun.\n"
            f"# Slurm {version} reads the oci.conf keys of 24.11 (the state directory is per uid, %U,\n"
        )
        defaults = [("EnvExclude", _ENV_EXCLUDE), ("RunTimeEnvExclude", _ENV_EXCLUDE)]
    else:
        head = (
            f"{_MANAGED}: Slurm OCI containers with rootless crun.\n"
            f"# Slurm {version} reads the oci.conf keys of 22.05 (no %U: the state directory is per user name,\n"
        )
        defaults = []
    head += f"# made by the prolog {prolog}). srun --container=<bundle> runs the bundle as the job's user.\n"
    defaults += [(key, f"{crun} {command}") for key, command in _RUNTIME_COMMANDS]
    own = dict(config or {})
    own_lower = {str(k).lower() for k in own}
    create = "runtimecreate" in own_lower
    lines = [
        f'{key}="{value}"'
        for key, value in defaults
        if key.lower() not in own_lower and not (create and key == "RunTimeRun")
    ]
    lines += [f'{key}="{_oci_value(value)}"' for key, value in own.items()]
    return head + "".join(line + "\n" for line in lines)


def plugstack_conf_text(conf_dir: str) -> str:
    """plugstack.conf (module doc)."""
    return (
        f"{_MANAGED}: SPANK plugins. slurmctld serves this file to\n"
        "# configless nodes, not the files it includes: every node keeps plugstack.conf.d itself.\n"
        f"include {conf_dir}/plugstack.conf.d/*.conf\n"
    )


def _canon(series: str) -> dict[str, str]:
    return {k.lower(): k for k in OCI_KEYS[series]}


def oci_conf_problems(config: Any, version: Any = None, state_dir: Any = "") -> list[str]:
    """Problems with slurm_oci_config (and slurm_oci_state_dir) for a release; [] when fine."""
    problems: list[str] = []
    series = oci_series(version)
    label = f"Slurm {series}" + (" and later" if series == "24.11" else " up to 24.05")
    state = str(state_dir or "")
    if state_dir is not None and state_dir != "" and (not state.startswith("/") or any(c.isspace() for c in state)):
        problems.append(f"slurm_oci_state_dir = {state!r}: give an absolute path without spaces")
    if config in (None, ""):
        return problems
    if not isinstance(config, Mapping):
        return [*problems, f"slurm_oci_config must be a mapping of oci.conf keys to values, got {config!r}"]
    canon = _canon(series)
    newest = _canon("24.11")
    seen: dict[str, str] = {}
    for raw_key, value in config.items():
        key = str(raw_key)
        proper = canon.get(key.lower())
        if proper is None:
            if key.lower() in newest:
                problems.append(f"slurm_oci_config.{key}: {label} does not know this oci.conf key (it came with 24.11)")
            else:
                close = difflib.get_close_matches(key, OCI_KEYS["24.11"], n=1, cutoff=0.7)
                hint = f" (did you mean {close[0]}?)" if close else ""
                problems.append(f"slurm_oci_config.{key}: not an oci.conf key{hint}")
            continue
        if proper in seen:
            problems.append(f"slurm_oci_config.{key}: given twice (also as {seen[proper]})")
            continue
        seen[proper] = key
        text = "" if value is None else str(value)
        if isinstance(value, bool):
            text = "true" if value else "false"
        if "\n" in text or '"' in text:
            problems.append(f"slurm_oci_config.{key} = {text!r}: no newlines or double quotes in an oci.conf value")
            continue
        if proper.startswith("RunTime") and proper != "RunTimeEnvExclude":
            bad = sorted({m for m in _PATTERN_RE.findall(text) if m not in _PATTERNS[series]})
            if bad or (text.rstrip().endswith("%") and not text.rstrip().endswith("%%")):
                shown = ", ".join("%" + b for b in bad) or "a lone %"
                problems.append(
                    f"slurm_oci_config.{key} = {text!r}: {label} does not replace {shown} "
                    f"(it knows {' '.join('%' + p for p in _PATTERNS[series])})"
                )
        if proper == "CreateEnvFile" and text.lower() not in _CREATE_ENV[series]:
            problems.append(
                f"slurm_oci_config.CreateEnvFile = {text!r}: {label} takes {', '.join(_CREATE_ENV[series])}"
            )
        if proper in _BOOL_KEYS and text.lower() not in _BOOL_WORDS:
            problems.append(f"slurm_oci_config.{key} = {text!r}: give true or false")
    # The role's lines use RunTimeRun; a user's RunTimeCreate/RunTimeStart replace it (both or neither).
    create_start = [k for k in ("RunTimeCreate", "RunTimeStart") if k in seen]
    if len(create_start) == 1:
        problems.append(
            f"slurm_oci_config.{seen[create_start[0]]}: RunTimeCreate and RunTimeStart go together "
            "(they replace the role's RunTimeRun)"
        )
    if create_start and "RunTimeRun" in seen:
        problems.append(
            "slurm_oci_config: RunTimeRun and RunTimeCreate/RunTimeStart exclude each other (slurmstepd "
            "refuses the oci.conf)"
        )
    return problems


# --- SPANK plugins (pyxis) ----------------------------------------------------------------


# Where a SPANK plugin such as pyxis may lie: Slurm's own plugin directories, then the ones NVIDIA's
# and source builds of pyxis install into (slurm_plugin_version's default).
SPANK_PLUGIN_DIRS = (
    *PLUGIN_DIRS,
    "/usr/lib/x86_64-linux-gnu/slurm",
    "/usr/lib/aarch64-linux-gnu/slurm",
    "/usr/local/lib/slurm",
)


def plugin_version(data: bytes) -> tuple[int, int, int] | None:
    """(major, minor, micro) of the ``plugin_version`` symbol in an ELF shared object, or None.

    Reads the dynamic symbol table (64- and 32-bit, either byte order) and the symbol's four bytes
    from the section that holds them. Raises ValueError when the bytes are not an ELF file.
    """
    if len(data) < 52 or data[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    try:
        if is64:
            (shoff,) = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        else:
            (shoff,) = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
        sections = []
        for i in range(shnum):
            base = shoff + i * shentsize
            if is64:
                _n, stype, _f, addr, off, size, link, _i, _a, entsize = struct.unpack_from(
                    end + "IIQQQQIIQQ", data, base
                )
            else:
                _n, stype, _f, addr, off, size, link, _i, _a, entsize = struct.unpack_from(
                    end + "IIIIIIIIII", data, base
                )
            sections.append((stype, addr, off, size, link, entsize))
        for stype, _addr, off, size, link, entsize in sections:
            if stype not in (11, 2) or not entsize:  # SHT_DYNSYM, SHT_SYMTAB
                continue
            str_off = sections[link][2]
            for pos in range(off, off + size, entsize):
                if is64:
                    name_at, _info, _other, shndx, value, sym_size = struct.unpack_from(end + "IBBHQQ", data, pos)
                else:
                    name_at, value, sym_size, _info, _other, shndx = struct.unpack_from(end + "IIIBBH", data, pos)
                stop = data.index(b"\x00", str_off + name_at)
                if (
                    data[str_off + name_at : stop] != b"plugin_version"
                    or sym_size != 4
                    or not 0 < shndx < len(sections)
                ):
                    continue
                s_type, s_addr, s_off, _s_size, _l, _e = sections[shndx]
                if s_type == 8:  # SHT_NOBITS: a zero-filled variable
                    return None
                (number,) = struct.unpack_from(end + "I", data, s_off + value - s_addr)
                return number >> 16, (number >> 8) & 0xFF, number & 0xFF
    except (struct.error, ValueError, IndexError) as exc:
        raise ValueError(f"not a readable ELF file: {exc}") from exc
    return None


def read_plugin(path: str, name: str, dirs: Iterable[str] = SPANK_PLUGIN_DIRS) -> dict[str, Any]:
    """Find a Slurm plugin - ``path``, else ``name`` in the first of ``dirs`` that has it - and read the
    release it was built for: ``path`` ("" when none was found), ``found`` and ``version``
    (``major.minor.micro``; "" when the file has no ``plugin_version``). Raises ValueError, naming the
    file, when it cannot be read as an ELF file."""
    if not path:
        path = next((os.path.join(d, name) for d in dirs if os.path.isfile(os.path.join(d, name))), "")
    if not path or not os.path.isfile(path):
        return {"path": path or "", "found": False, "version": ""}
    try:
        with open(path, "rb") as handle:
            found = plugin_version(handle.read())
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc
    return {"path": path, "found": True, "version": f"{found[0]}.{found[1]:02d}.{found[2]}" if found else ""}


def pyxis_version_problem(plugin: Any, slurm: Any, path: str, host: str, found: bool = True, packages: Any = ()) -> str:
    """Refuse a missing pyxis, or one built for another Slurm release than the one this host runs."""
    if not found:
        where = path or "spank_pyxis.so in Slurm's plugin directories"
        given = ", ".join(map(str, packages or ())) or "none given"
        return f"{host}: no {where} (slurm_pyxis_packages installs it: {given})"
    if plugin is None:
        return (
            f"{host}: {path} has no plugin_version symbol: it is not a Slurm SPANK plugin built with "
            "slurm/spank.h (check slurm_pyxis_plugin)"
        )
    built = _version(plugin)
    running = _version(slurm)
    if built is None or running is None or built != running:
        b = f"{built[0]}.{built[1]:02d}" if built else "unknown"
        r = f"{running[0]}.{running[1]:02d}" if running else "unknown"
        return (
            f"{host}: pyxis ({path}) was built for Slurm {b}, but this host runs Slurm {r}: Slurm loads only "
            f"SPANK plugins of its own release; install the pyxis package built for Slurm {r}"
        )
    return ""


# --- enroot -------------------------------------------------------------------------------

_ENROOT_DIRS = ("runtime", "data", "cache")


def enroot_paths(base: str) -> dict[str, str]:
    """enroot's per-user directories under base: ENROOT_{RUNTIME,DATA,CACHE}_PATH, their parents and
    ``top`` (<base>/enroot, which holds the parents: root's alone, made by the prolog).

    The values keep enroot's own shell syntax ($(id -u)), which enroot expands per user.
    """
    root = str(base).rstrip("/") + "/enroot"
    out = {f"ENROOT_{d.upper()}_PATH": f"{root}/{d}/user-$(id -u)" for d in _ENROOT_DIRS}
    out["top"] = root
    out["parents"] = " ".join(f"{root}/{d}" for d in _ENROOT_DIRS)
    return out


def enroot_conf_problems(base: Any, config: Any) -> list[str]:
    problems = []
    if not isinstance(base, str) or not base.startswith("/") or any(c.isspace() for c in base):
        problems.append(f"slurm_enroot_base_dir = {base!r}: give an absolute path without spaces")
    if config not in (None, ""):
        if not isinstance(config, Mapping):
            problems.append(f"slurm_enroot_config must be a mapping of ENROOT_* settings, got {config!r}")
        else:
            for key, value in config.items():
                if not re.match(r"^ENROOT_[A-Z0-9_]+$", str(key)):
                    problems.append(f"slurm_enroot_config.{key}: enroot.conf keys are ENROOT_ followed by capitals")
                elif "\n" in str(value):
                    problems.append(f"slurm_enroot_config.{key}: no newlines in a value")
    return problems


_PYXIS_ARGS = {
    "runtime_path": re.compile(r"^/\S*$"),
    "execute_entrypoint": re.compile(r"^[01]$"),
    "container_scope": re.compile(r"^(job|global)$"),
    "sbatch_support": re.compile(r"^[01]$"),
    "use_enroot_load": re.compile(r"^[01]$"),
}


def pyxis_args_problems(args: Any) -> list[str]:
    """Problems with slurm_pyxis_args (the plugin's arguments in plugstack.conf.d/pyxis.conf)."""
    if not isinstance(args, Mapping):
        return [f"slurm_pyxis_args must be a mapping of pyxis arguments, got {args!r}"]
    problems = []
    for key, value in args.items():
        text = ("1" if value else "0") if isinstance(value, bool) else str(value)
        pattern = _PYXIS_ARGS.get(str(key))
        if pattern is None:
            problems.append(f"slurm_pyxis_args.{key}: pyxis knows {', '.join(sorted(_PYXIS_ARGS))}")
        elif not pattern.match(text):
            problems.append(f"slurm_pyxis_args.{key} = {text!r}: not a value pyxis takes for {key}")
    return problems
