# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
# Do not use this from other collections or standalone plugins/modules!
"""Slurm configuration model: structured cluster data in, ``slurm.conf``/``gres.conf``/``cgroup.conf`` text out.

Pure functions, standard library only, importable on Python 3.8+. Templates print the result after
``{{ ansible_managed | comment }}``; they decide nothing.

Public API
----------
``render_slurm_config(spec, omit_token=None) -> dict``
    Validate ``spec`` and return ``{"slurm.conf": str, "gres.conf": str, "cgroup.conf": str}``.
    Raises :class:`SlurmConfigError` when the spec is invalid. Output is deterministic: the same
    set of nodes and partitions in any input order renders byte-identical text.
``validate_slurm_config(spec, omit_token=None) -> list``
    The problems :func:`render_slurm_config` would refuse, as messages (empty list = valid).
``SlurmConfigError(ValueError)``
    ``.problems`` holds every message; ``str()`` lists them.
``SLURM_CONF_KEYS``, ``CGROUP_CONF_KEYS``, ``NODE_KEYS``, ``PARTITION_KEYS``
    Known keys (canonical spelling) for Slurm 22.05 through 25.x.
``DEFAULT_SLURM_CONF``, ``DEFAULT_CGROUP_CONF``
    The defaults the overrides are merged over.

The spec (a plain dict, as a playbook passes it)
-------------------------------------------------
``cluster_name``  (required) lower-case ``[a-z0-9_-]``.
``controllers``   (required, non-empty) list; first = primary, the rest = backups. Each item a
                  hostname or ``{"name": ..., "address": ...}`` -> ``SlurmctldHost=name(address)``.
``nodes``         list of node records: ``name`` (a hostname or a hostlist expression),
                  ``cpus``, ``sockets``, ``cores_per_socket``, ``threads_per_core``,
                  ``real_memory`` (MiB), ``gpu_type``, ``gpu_count``, ``gpu_files`` (list of device
                  paths and/or hostlist expressions such as ``/dev/nvidia[0-7]``; default
                  ``/dev/nvidia[0-<gpu_count-1>]``), ``features`` (list or comma string),
                  ``weight``, ``address`` (NodeAddr), ``options`` (other NodeName keys).
``partitions``    list: ``name``, ``nodes`` (list of names and/or hostlist expressions, or
                  ``ALL``), ``default`` (bool), ``max_time``, ``options`` (other partition keys).
``config``        slurm.conf overrides merged over :data:`DEFAULT_SLURM_CONF`, keys matched
                  case-insensitively as Slurm does. With memory consumable (``CR_*_Memory``) the
                  model adds ``DefMemPerCPU`` = the smallest node's ``real_memory // cpus``,
                  unless ``config`` sets (or omits) it or sets ``DefMemPerNode``/``DefMemPerGPU``.
``cgroup``        cgroup.conf overrides merged over :data:`DEFAULT_CGROUP_CONF`.
``gres_autodetect`` ``off`` (default: ``File=`` lines), ``nvml``, ``nvidia`` (24.11+) or ``rsmi``.
``accounting``    optional ``{"host", "port", "backup_host", "enforce"}``: slurmdbd accounting,
                  adds ``AccountingStorageTRES=gres/gpu``.

In every override mapping a value equal to ``omit_token`` (or an Ansible omit placeholder string)
drops the key, defaults included. ``None`` or an empty string is refused: say ``omit`` to drop.

Validation collects every problem before failing instead of stopping at the first: a cluster
inventory is edited in one pass, and a run that reveals one typo per attempt wastes a play
against thousands of hosts each time. Messages name the culprit (node, partition, key, value).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible_collections.oci_gpu.cluster.plugins.module_utils.slurm._hostlist import HostlistError, compress, expand


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


__all__ = [
    "CGROUP_CONF_KEYS",
    "DEFAULT_CGROUP_CONF",
    "DEFAULT_SLURM_CONF",
    "NODE_KEYS",
    "PARTITION_KEYS",
    "SLURM_CONF_KEYS",
    "SlurmConfigError",
    "conf_value",
    "conf_value_problem",
    "parse_slurm_conf",
    "private_data_dbd",
    "render_slurm_config",
    "render_slurm_config_with_settings",
    "validate_slurm_config",
]

# Keys that Slurm 22.05 does not know, added by later releases (23.02: SuspendExcStates; 23.11/24.05: HashPlugin,
# PrologTimeout, EpilogTimeout, ...; 24.11/25.05: TLS, certificates, metrics). A unit test checks that 22.05's
# scontrol rejects exactly these and accepts every other key of the tables.
_NEWER_SLURM_CONF_KEYS = _words(
    """
    SuspendExcStates HashPlugin PrologTimeout EpilogTimeout TLSType DataParserParameters MaxBatchRequeue
    CertgenParameters CertgenType CertmgrParameters CertmgrType MetricsType TLSParameters
    """
)
_NEWER_NODE_KEYS = _words("RestrictedCoresPerGPU Topology")
_NEWER_PARTITION_KEYS = _words("ExclusiveTopo MaxCPUsPerSocket PowerDownOnIdle Topology")

# Top-level slurm.conf keys, Slurm 22.05 through 25.x (union: a key some supported release knows is
# accepted). The 22.05 set was checked key by key against Debian 12's scontrol 22.05.8; the later
# additions above come from the release notes. Removed keys that 22.05 still parses stay, so that an old
# site config is not refused here before Slurm itself says what to use instead.
SLURM_CONF_KEYS = (
    _words(
        """
    AccountingStorageBackupHost AccountingStorageEnforce AccountingStorageExternalHost AccountingStorageHost
    AccountingStorageParameters AccountingStoragePass AccountingStoragePort AccountingStorageTRES
    AccountingStorageType AccountingStorageUser AccountingStoreFlags AcctGatherEnergyType
    AcctGatherFilesystemType AcctGatherInterconnectType AcctGatherNodeFreq AcctGatherProfileType
    AllowSpecResourcesUsage AuthAltParameters AuthAltTypes AuthInfo AuthType BackupAddr BackupController
    BatchStartTimeout BcastExclude BcastParameters BurstBufferType CliFilterPlugins ClusterName
    CommunicationParameters CompleteWait ControlAddr ControlMachine CoreSpecPlugin CpuFreqDef CpuFreqGovernors
    CredType DebugFlags DefCpuPerGPU DefMemPerCPU DefMemPerGPU DefMemPerNode DependencyParameters
    DisableRootJobs DownNodes EioTimeout EnforcePartLimits Epilog EpilogMsgTime EpilogSlurmctld ExtSensorsFreq
    ExtSensorsType FairShareDampeningFactor FederationParameters FirstJobId FrontendName GetEnvTimeout
    GpuFreqDef GresTypes GroupUpdateForce GroupUpdateTime HealthCheckInterval HealthCheckNodeState
    HealthCheckProgram InactiveLimit InteractiveStepOptions JobAcctGatherFrequency JobAcctGatherParams
    JobAcctGatherType JobCompHost JobCompLoc JobCompParams JobCompPass JobCompPort JobCompType JobCompUser
    JobContainerType JobFileAppend JobRequeue JobSubmitPlugins KeepAliveTime KillOnBadExit KillWait
    LaunchParameters LaunchType Licenses LogTimeFormat MailDomain MailProg MaxArraySize MaxDBDMsgs MaxJobCount
    MaxJobId MaxMemPerCPU MaxMemPerNode MaxNodeCount MaxStepCount MaxTasksPerNode MCSParameters MCSPlugin
    MessageTimeout MinJobAge MpiDefault MpiParams NodeFeaturesPlugins NodeName NodeSet OverTimeLimit
    PartitionName PluginDir PlugStackConfig PowerParameters PowerPlugin PreemptExemptTime PreemptMode
    PreemptType PrEpParameters PrEpPlugins PriorityCalcPeriod PriorityDecayHalfLife PriorityFavorSmall
    PriorityFlags PriorityMaxAge PriorityParameters PrioritySiteFactorParameters PrioritySiteFactorPlugin
    PriorityType PriorityUsageResetPeriod PriorityWeightAge PriorityWeightAssoc PriorityWeightFairshare
    PriorityWeightJobSize PriorityWeightPartition PriorityWeightQOS PriorityWeightTRES PrivateData ProctrackType
    Prolog PrologEpilogTimeout PrologFlags PrologSlurmctld PropagatePrioProcess PropagateResourceLimits
    PropagateResourceLimitsExcept RebootProgram ReconfigFlags RequeueExit RequeueExitHold ResumeFailProgram
    ResumeProgram ResumeRate ResumeTimeout ResvEpilog ResvOverRun ResvProlog ReturnToService RoutePlugin
    SchedulerParameters SchedulerTimeSlice SchedulerType ScronParameters SelectType SelectTypeParameters
    SlurmctldAddr SlurmctldDebug SlurmctldHost SlurmctldLogFile SlurmctldParameters SlurmctldPidFile
    SlurmctldPlugstack SlurmctldPort SlurmctldPrimaryOffProg SlurmctldPrimaryOnProg SlurmctldSyslogDebug
    SlurmctldTimeout SlurmdDebug SlurmdLogFile SlurmdParameters SlurmdPidFile SlurmdPort SlurmdSpoolDir
    SlurmdSyslogDebug SlurmdTimeout SlurmdUser SlurmSchedLogFile SlurmSchedLogLevel SlurmUser SrunEpilog
    SrunPortRange SrunProlog StateSaveLocation SuspendExcNodes SuspendExcParts SuspendProgram SuspendRate
    SuspendTime SuspendTimeout SwitchParameters SwitchType TaskEpilog TaskPlugin TaskPluginParam TaskProlog
    TCPTimeout TmpFS TopologyParam TopologyPlugin TrackWCKey TreeWidth UnkillableStepProgram
    UnkillableStepTimeout UsePAM VSizeFactor WaitTime X11Parameters
    """
    )
    | _NEWER_SLURM_CONF_KEYS
)

CGROUP_CONF_KEYS = _words(
    """
    AllowedKmemSpace AllowedRAMSpace AllowedSwapSpace CgroupAutomount CgroupMountpoint CgroupPlugin
    ConstrainCores ConstrainDevices ConstrainKmemSpace ConstrainRAMSpace ConstrainSwapSpace EnableControllers
    IgnoreSystemd IgnoreSystemdOnFailure MaxKmemPercent MaxRAMPercent MaxSwapPercent MemorySwappiness
    MinKmemSpace MinRAMSpace SignalChildrenProcesses SystemdTimeout
    """
)

# NodeName keys a record may set through ``options``; the record's own fields own the others.
NODE_KEYS = (
    _words(
        """
    Boards BcastAddr CoreSpecCount CpuBind CPUSpecList MemSpecLimit NodeHostname Port Reason
    SocketsPerBoard State TmpDisk TRESWeights
    """
    )
    | _NEWER_NODE_KEYS
)
_NODE_FIELD_KEYS = {
    "nodename": "name",
    "nodeaddr": "address",
    "cpus": "cpus",
    "procs": "cpus",
    "sockets": "sockets",
    "corespersocket": "cores_per_socket",
    "threadspercore": "threads_per_core",
    "realmemory": "real_memory",
    "gres": "gpu_type/gpu_count",
    "feature": "features",
    "features": "features",
    "weight": "weight",
}

PARTITION_KEYS = (
    _words(
        """
    AllocNodes AllowAccounts AllowGroups AllowQos Alternate CpuBind DefCpuPerGPU DefMemPerCPU DefMemPerGPU
    DefMemPerNode DefaultTime DenyAccounts DenyQos DisableRootJobs ExclusiveUser GraceTime Hidden
    LLN MaxCPUsPerNode MaxMemPerCPU MaxMemPerNode MaxNodes MinNodes OverSubscribe
    OverTimeLimit PreemptMode PriorityJobFactor PriorityTier QOS ReqResv ResumeTimeout
    RootOnly SelectTypeParameters State SuspendTime SuspendTimeout TRESBillingWeights
    """
    )
    | _NEWER_PARTITION_KEYS
)
_PARTITION_FIELD_KEYS = {"partitionname": "name", "nodes": "nodes", "default": "default", "maxtime": "max_time"}

DEFAULT_SLURM_CONF = {
    "AuthType": "auth/munge",
    "CredType": "cred/munge",
    "GresTypes": "gpu",
    "InactiveLimit": 0,
    "JobAcctGatherFrequency": 30,
    "JobAcctGatherType": "jobacct_gather/cgroup",
    "KillWait": 30,
    "MinJobAge": 300,
    "MpiDefault": "none",
    "PrologFlags": "Contain",
    "ProctrackType": "proctrack/cgroup",
    "ReturnToService": 2,
    "SchedulerType": "sched/backfill",
    "SelectType": "select/cons_tres",
    "SelectTypeParameters": "CR_Core_Memory",
    "SlurmUser": "slurm",
    "SlurmctldDebug": "info",
    "SlurmctldLogFile": "/var/log/slurm/slurmctld.log",
    "SlurmctldPidFile": "/run/slurmctld.pid",
    "SlurmctldPort": 6817,
    "SlurmctldTimeout": 120,
    "SlurmdDebug": "info",
    "SlurmdLogFile": "/var/log/slurm/slurmd.log",
    "SlurmdPidFile": "/run/slurmd.pid",
    "SlurmdPort": 6818,
    "SlurmdSpoolDir": "/var/lib/slurm/slurmd",
    "SlurmdTimeout": 300,
    "StateSaveLocation": "/var/lib/slurm/slurmctld",
    "TaskPlugin": "task/cgroup,task/affinity",
}

DEFAULT_CGROUP_CONF = {
    "CgroupPlugin": "autodetect",
    "ConstrainCores": True,
    "ConstrainDevices": True,
    "ConstrainRAMSpace": True,
}

# slurm.conf keys computed from the structured spec; ``config`` may not set them.
_COMPUTED_KEYS = {
    "clustername": "cluster_name",
    "slurmctldhost": "controllers",
    "controlmachine": "controllers",
    "controladdr": "controllers",
    "backupcontroller": "controllers",
    "backupaddr": "controllers",
    "nodename": "nodes",
    "partitionname": "partitions",
    "downnodes": "nodes (options.State and options.Reason)",
    "nodeset": "partitions (hostlist expressions)",
    "frontendname": "nothing (front-end mode is not supported)",
}

# Keys whose value must be a non-negative integer (a subset; Slurm checks the rest).
_NUMERIC_KEYS = frozenset(
    k.lower()
    for k in _words(
        """
    AccountingStoragePort AcctGatherNodeFreq BatchStartTimeout CompleteWait DefCpuPerGPU DefMemPerCPU
    DefMemPerGPU DefMemPerNode EioTimeout EpilogMsgTime FairShareDampeningFactor FirstJobId GetEnvTimeout
    GroupUpdateForce GroupUpdateTime HealthCheckInterval InactiveLimit JobCompPort JobFileAppend JobRequeue
    KillOnBadExit KillWait MaxArraySize MaxDBDMsgs MaxJobCount MaxJobId MaxMemPerCPU MaxMemPerNode MaxNodeCount
    MaxStepCount MaxTasksPerNode MessageTimeout MinJobAge OverTimeLimit PriorityWeightAge PriorityWeightAssoc
    PriorityWeightFairshare PriorityWeightJobSize PriorityWeightPartition PriorityWeightQOS PrologEpilogTimeout
    ResumeRate ResumeTimeout ResvOverRun ReturnToService SchedulerTimeSlice SlurmctldTimeout SlurmdPort
    SlurmdTimeout SlurmSchedLogLevel SuspendRate SuspendTimeout TCPTimeout TreeWidth UnkillableStepTimeout
    VSizeFactor WaitTime
    """
    )
)

# HealthCheckNodeState's words (slurm.conf(5)); NONDRAINED_IDLE needs Slurm 23.02 (the plan checks the release).
HEALTH_CHECK_NODE_STATES = ("ALLOC", "ANY", "CYCLE", "IDLE", "MIXED", "NONDRAINED_IDLE")


def _health_check_node_state_problem(value: Any) -> str | None:
    words = [w.strip() for w in str(value).split(",")]
    bad = [w for w in words if w.upper() not in HEALTH_CHECK_NODE_STATES]
    if bad:
        return "unknown state(s) {} (use {}, comma-separated)".format(
            ", ".join(repr(w) for w in bad), ", ".join(HEALTH_CHECK_NODE_STATES)
        )
    return None


def _health_check_program_problem(value: Any) -> str | None:
    text = str(value)
    if not text.startswith("/") or any(c.isspace() for c in text):
        return "must be an absolute path without spaces (slurmd runs it as root without a shell)"
    return None


# PrivateData's words (slurm.conf(5)); slurmdbd.conf(5) knows only PRIVATE_DATA_DBD of them.
PRIVATE_DATA = ("accounts", "cloud", "events", "jobs", "nodes", "partitions", "reservations", "usage", "users")
PRIVATE_DATA_DBD = ("accounts", "events", "jobs", "reservations", "usage", "users")


def _private_data_problem(value: Any) -> str | None:
    # Slurm skips a word it does not know without a word in any log: a typo would show data.
    bad = [w for w in (w.strip() for w in str(value).split(",")) if w.lower() not in PRIVATE_DATA]
    if bad:
        return "unknown word(s) {} (use {}, comma-separated)".format(
            ", ".join(repr(w) for w in bad), ", ".join(PRIVATE_DATA)
        )
    return None


def private_data_dbd(value: Any) -> str:
    """The words of a slurm.conf PrivateData that slurmdbd.conf's PrivateData knows, in its order."""
    words = {w.strip().lower() for w in str(value or "").split(",")}
    return ",".join(w for w in PRIVATE_DATA_DBD if w in words)


# Value checks for keys whose mistakes Slurm reports only in a daemon's log, or not at all (lower-case keys).
_VALUE_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "healthchecknodestate": _health_check_node_state_problem,
    "healthcheckprogram": _health_check_program_problem,
    "privatedata": _private_data_problem,
}

GRES_AUTODETECT = ("off", "nvml", "nvidia", "rsmi")
_SPEC_KEYS = (
    "accounting",
    "cgroup",
    "cluster_name",
    "config",
    "controllers",
    "gres_autodetect",
    "nodes",
    "partitions",
)
_NODE_RECORD_KEYS = (
    "address",
    "cores_per_socket",
    "cpus",
    "features",
    "gpu_count",
    "gpu_files",
    "gpu_type",
    "name",
    "options",
    "real_memory",
    "sockets",
    "threads_per_core",
    "weight",
)
# Names people reach for, mapped to the record field they mean (string distance alone would say gpus -> cpus).
_NODE_FIELD_HINTS = {
    "gpus": "gpu_count",
    "gpu": "gpu_count",
    "gres": "gpu_type/gpu_count",
    "memory": "real_memory",
    "mem": "real_memory",
    "realmemory": "real_memory",
    "cores": "cores_per_socket",
    "threads": "threads_per_core",
    "feature": "features",
    "nodename": "name",
    "nodeaddr": "address",
}
_PARTITION_RECORD_KEYS = ("default", "max_time", "name", "nodes", "options")
_ACCOUNTING_KEYS = ("backup_host", "enforce", "host", "port")

_OMIT_PREFIX = "__omit_place_holder__"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CLUSTER_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_GRES_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_TIME_RE = re.compile(r"^(?:INFINITE|UNLIMITED|\d+(?:-\d+)?(?::\d+){0,2})$", re.IGNORECASE)
_MAX_REPORTED = 25
_BF_WINDOW_DEFAULT = 1440  # minutes
_BF_WINDOW_MAX = 43200


def _minutes(text: str) -> int:
    """Minutes in a partition MaxTime (rounded up); 0 for INFINITE/UNLIMITED."""
    if text.upper() in ("INFINITE", "UNLIMITED"):
        return 0
    days, _sep, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:  # D-HH[:MM[:SS]]
        parts += [0] * (3 - len(parts))
        seconds = int(days) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    elif len(parts) == 1:  # MM
        seconds = parts[0] * 60
    elif len(parts) == 2:  # MM:SS
        seconds = parts[0] * 60 + parts[1]
    else:  # HH:MM:SS
        seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return -(-seconds // 60)


def conf_value_problem(value: str) -> str:
    """Why ``value`` cannot be one value of a slurm.conf/slurmdbd.conf line ('' when it can). The
    message never repeats the value (it may be a password)."""
    if "\n" in value or "\r" in value:
        return "it contains a line break, which would start a new configuration line"
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "it contains a control character"
    if '"' in value:
        return 'it contains a double quote, which Slurm\'s parser cannot read inside a value ("[^"]*")'
    if value != value.strip():
        return "it starts or ends with whitespace, which Slurm's parser drops"
    return ""


def conf_value(value: str) -> str:
    """``value`` written so that Slurm's parser reads it back unchanged: it cuts a line at an
    unescaped ``#`` and drops every ``\\`` that escapes the next character, so ``\\`` and ``#`` are
    escaped, and a value with whitespace or a backslash is quoted (the line then never ends in a
    backslash, which would continue it). Raises ValueError (without the value) when it cannot be."""
    problem = conf_value_problem(value)
    if problem:
        raise ValueError(problem)
    text = value.replace("\\", "\\\\").replace("#", "\\#")
    return f'"{text}"' if any(c.isspace() or c == "\\" for c in value) else text


class SlurmConfigError(ValueError):
    """The spec cannot be rendered; ``problems`` lists every reason, each naming its culprit."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        shown = self.problems[:_MAX_REPORTED]
        more = len(self.problems) - len(shown)
        if len(self.problems) == 1:
            text = "invalid Slurm configuration: " + self.problems[0]
        else:
            text = f"invalid Slurm configuration, {len(self.problems)} problems:\n"
            text += "\n".join("- " + p for p in shown)
            if more:
                text += f"\n- ... and {more} more"
        super().__init__(text)


def render_slurm_config(spec: Mapping[str, Any], omit_token: Any = None) -> dict[str, str]:
    """Validate ``spec`` and render ``slurm.conf``, ``gres.conf`` and ``cgroup.conf`` (see module doc)."""
    model = _Model(spec, omit_token)
    if model.problems:
        raise SlurmConfigError(model.problems)
    return model.render()


def render_slurm_config_with_settings(
    spec: Mapping[str, Any],
    omit_token: Any = None,
    extra_keys: Callable[[dict[str, str], dict[str, list[str]]], Mapping[str, str]] | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """Like :func:`render_slurm_config`, plus the merged top-level slurm.conf keys (canonical spelling).

    The settings are the one place the roles read paths, users and ports from (StateSaveLocation,
    SlurmdSpoolDir, SlurmUser, log files, ports), defaults and overrides merged.

    ``extra_keys(settings, partitions)``, given the merged keys and each partition's node names
    (``ALL`` expanded), returns keys to add before rendering (the topology plugin, decided from
    the partitions); it may raise :class:`SlurmConfigError`.
    """
    model = _Model(spec, omit_token)
    if model.problems:
        raise SlurmConfigError(model.problems)
    if extra_keys is not None:
        model.slurm_conf.update(extra_keys(dict(model.slurm_conf), model.partition_members()))
    return model.render(), dict(model.slurm_conf)


def validate_slurm_config(spec: Mapping[str, Any], omit_token: Any = None) -> list[str]:
    """Return the problems :func:`render_slurm_config` would refuse (empty list when the spec is valid)."""
    return list(_Model(spec, omit_token).problems)


# --------------------------------------------------------------------------------------------- helpers


def _canon_table(keys: Iterable[str]) -> dict[str, str]:
    return {k.lower(): k for k in keys}


def _identity(keys: Iterable[str]) -> dict[str, str]:
    return {k: k for k in keys}


_SLURM_CANON = _canon_table(SLURM_CONF_KEYS)
_CGROUP_CANON = _canon_table(CGROUP_CONF_KEYS)
_NODE_CANON = _canon_table(NODE_KEYS)
_PARTITION_CANON = _canon_table(PARTITION_KEYS)


def _suggest(key: str, canon: Mapping[str, str]) -> str:
    close = difflib.get_close_matches(key.lower(), list(canon), n=1, cutoff=0.6)
    return f" (did you mean '{canon[close[0]]}'?)" if close else ""


def _as_int(value: Any) -> int | None:
    """An int from an int or a decimal string (inventory values often arrive as strings); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r"^-?\d+$", value.strip()):
        return int(value.strip())
    return None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("yes", "true", "on", "1"):
            return True
        if low in ("no", "false", "off", "0"):
            return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    return None


def _is_seq(value: Any) -> bool:
    return isinstance(value, (list, tuple))


class _Model:
    """One validation pass over the spec; keeps the normalised data ``render`` prints."""

    def __init__(self, spec: Any, omit_token: Any) -> None:
        self.problems: list[str] = []
        self._omit_token = omit_token
        self._expand_cache: dict[str, list[str]] = {}
        self.cluster_name = ""
        self.controllers: list[str] = []
        self.slurm_conf: dict[str, str] = {}
        self.cgroup_conf: dict[str, str] = {}
        self.autodetect = "off"
        # hardware signature -> names; signature -> gres.conf (type, files); name -> address
        self.groups: dict[tuple, list[str]] = {}
        self.addresses: dict[str, str] = {}
        self.partitions: list[tuple[str, str, list[tuple[str, str]]]] = []
        self.has_gpus = False

        if not isinstance(spec, Mapping):
            self.problems.append(f"the spec must be a mapping, got {type(spec).__name__}")
            return
        for key in sorted(spec, key=str):
            if key not in _SPEC_KEYS:
                self.problems.append(f"unknown top-level key '{key}'{_suggest(str(key), _identity(_SPEC_KEYS))}")
        self._cluster(spec.get("cluster_name"))
        self._controllers(spec.get("controllers"))
        self._gres_autodetect(spec.get("gres_autodetect", "off"))
        defined = self._nodes(spec.get("nodes", []))
        self._partitions(spec.get("partitions", []), defined)
        self._slurm_conf(spec.get("config", {}), spec.get("accounting"))
        self._cgroup_conf(spec.get("cgroup", {}))

    # ------------------------------------------------------------------ small utilities

    def _is_omit(self, value: Any) -> bool:
        if self._omit_token is not None and (
            value is self._omit_token or (isinstance(value, str) and value == self._omit_token)
        ):
            return True
        return isinstance(value, str) and value.startswith(_OMIT_PREFIX)

    def _expand(self, expr: str, where: str) -> list[str] | None:
        cached = self._expand_cache.get(expr)
        if cached is not None:
            return cached
        try:
            names = expand(expr)
        except HostlistError as exc:
            self.problems.append(f"{where}: malformed hostlist '{expr}': {exc}")
            return None
        self._expand_cache[expr] = names
        return names

    def _value(self, value: Any, where: str, yes: str = "YES", no: str = "NO") -> str | None:
        """Render one configuration value, or record why it cannot be rendered."""
        if value is None or (isinstance(value, str) and value.strip() == ""):
            self.problems.append(f"{where} has no value (use omit to drop the key)")
            return None
        if isinstance(value, bool):
            return yes if value else no
        if isinstance(value, (int, float)):
            return str(value)
        if _is_seq(value):
            parts = [self._value(v, where, yes, no) for v in value]
            if any(p is None for p in parts):
                return None
            return ",".join(p for p in parts if p is not None)
        if not isinstance(value, str):
            self.problems.append(f"{where}: cannot render a {type(value).__name__} value {value!r}")
            return None
        if "\n" in value or "\r" in value:
            self.problems.append(f"{where}: value {value!r} contains a line break")
            return None
        text = value.strip().replace("\\", "\\\\").replace("#", "\\#")
        if any(c.isspace() or c == "\\" for c in value.strip()):
            if '"' in text:
                self.problems.append(f"{where}: value {value!r} has both whitespace and a double quote")
                return None
            text = f'"{text}"'
        return text

    def _int_field(self, rec: Mapping[str, Any], field: str, where: str, minimum: int) -> int | None:
        if field not in rec or rec[field] is None:
            return None
        value = _as_int(rec[field])
        if value is None:
            self.problems.append(f"{where}: {field} must be an integer, got {rec[field]!r}")
            return None
        if value < minimum:
            self.problems.append(f"{where}: {field} must be >= {minimum}, got {value}")
            return None
        return value

    def _options(
        self, options: Any, where: str, canon: Mapping[str, str], owned: Mapping[str, str], what: str
    ) -> tuple[tuple[str, str], ...]:
        """Validate an ``options`` mapping of extra Slurm keys; return sorted (Key, value) pairs."""
        if options is None:
            return ()
        if not isinstance(options, Mapping):
            self.problems.append(f"{where}: options must be a mapping, got {type(options).__name__}")
            return ()
        seen: dict[str, str] = {}
        out: dict[str, str] = {}
        for key in sorted(options, key=str):
            low = str(key).lower()
            if low in seen:
                self.problems.append(f"{where}: key given twice as '{seen[low]}' and '{key}'")
                continue
            seen[low] = str(key)
            if low in owned:
                self.problems.append(f"{where}: options.{key} conflicts with the record field '{owned[low]}'")
                continue
            if low not in canon:
                self.problems.append(f"{where}: unknown {what} key '{key}'{_suggest(str(key), canon)}")
                continue
            value = options[key]
            if self._is_omit(value):
                continue
            text = self._value(value, f"{where}: {canon[low]}")
            if text is not None:
                out[canon[low]] = text
        return tuple(sorted(out.items()))

    # ------------------------------------------------------------------ sections

    def _cluster(self, name: Any) -> None:
        if not isinstance(name, str) or not name:
            self.problems.append(f"cluster_name is required (a non-empty string), got {name!r}")
        elif not _CLUSTER_RE.match(name):
            self.problems.append(
                f"cluster_name '{name}' must be lower case letters, digits, '_' or '-' (Slurm lower-cases it)"
            )
        else:
            self.cluster_name = name

    def _controllers(self, controllers: Any) -> None:
        if isinstance(controllers, str):
            controllers = [controllers]
        if not _is_seq(controllers) or not controllers:
            self.problems.append("controllers is empty: give at least one slurmctld host (the first is the primary)")
            return
        seen: set[str] = set()
        for i, item in enumerate(controllers):
            where = f"controllers[{i}]"
            address = None
            if isinstance(item, Mapping):
                extra = sorted(set(item) - {"name", "address"}, key=str)
                if extra:
                    self.problems.append(
                        "{}: unknown key(s) {} (allowed: name, address)".format(where, ", ".join(extra))
                    )
                name, address = item.get("name"), item.get("address")
            else:
                name = item
            if not isinstance(name, str) or not _NAME_RE.match(name):
                self.problems.append(f"{where}: invalid controller host name {name!r}")
                continue
            if name in seen:
                self.problems.append(f"{where}: controller '{name}' is listed twice")
                continue
            seen.add(name)
            if address is not None and (not isinstance(address, str) or not re.match(r"^[A-Za-z0-9.:_-]+$", address)):
                self.problems.append(f"{where}: invalid address {address!r} for controller '{name}'")
                continue
            self.controllers.append(f"{name}({address})" if address else name)

    def _gres_autodetect(self, mode: Any) -> None:
        if mode is False:  # YAML `off` parses as a boolean
            mode = "off"
        if not isinstance(mode, str) or mode.lower() not in GRES_AUTODETECT:
            self.problems.append("gres_autodetect must be one of {}, got {!r}".format(", ".join(GRES_AUTODETECT), mode))
            return
        self.autodetect = mode.lower()

    def _nodes(self, nodes: Any) -> set[str]:
        defined: dict[str, str] = {}  # name -> which record defined it
        if nodes is None:
            nodes = []
        if not _is_seq(nodes):
            self.problems.append(f"nodes must be a list of node records, got {type(nodes).__name__}")
            return set()
        for i, rec in enumerate(nodes):
            label = f"nodes[{i}]"
            if not isinstance(rec, Mapping):
                self.problems.append(f"{label}: a node record must be a mapping, got {rec!r}")
                continue
            name = rec.get("name")
            if not isinstance(name, str) or not name.strip():
                self.problems.append(f"{label}: name is required, got {name!r}")
                continue
            where = f"node '{name}'"
            unknown = sorted(set(rec) - set(_NODE_RECORD_KEYS), key=str)
            for key in unknown:
                hint = _NODE_FIELD_HINTS.get(str(key).lower())
                suggestion = f" (did you mean '{hint}'?)" if hint else _suggest(str(key), _identity(_NODE_RECORD_KEYS))
                self.problems.append(f"{where}: unknown node field '{key}'{suggestion}")
            if any(c.isspace() for c in name.strip()):
                self.problems.append(f"{where}: a node name cannot contain whitespace")
                continue
            names = self._expand(name.strip(), where)
            if names is None:
                continue
            bad = [n for n in names if not _NAME_RE.match(n) or n.upper() in ("ALL", "DEFAULT")]
            if bad:
                self.problems.append(f"{where}: invalid node name '{bad[0]}'")
                continue
            signature = self._node_signature(rec, where)
            for n in names:
                if n in defined:
                    self.problems.append(
                        f"duplicate node name '{n}': defined by node '{defined[n]}' and by node '{name}'"
                    )
                    continue
                defined[n] = name
            address = rec.get("address")
            if address is not None:
                if len(names) != 1:
                    self.problems.append(f"{where}: address needs a record for a single node, not a hostlist")
                elif not isinstance(address, str) or not re.match(r"^[A-Za-z0-9.:_-]+$", address):
                    self.problems.append(f"{where}: invalid address {address!r}")
                else:
                    self.addresses[names[0]] = address
            if signature is not None:
                key = (*signature, address is not None)
                self.groups.setdefault(key, []).extend(names)
        return set(defined)

    def _node_signature(self, rec: Mapping[str, Any], where: str) -> tuple | None:
        before = len(self.problems)
        cpus = self._int_field(rec, "cpus", where, 1)
        sockets = self._int_field(rec, "sockets", where, 1)
        cores = self._int_field(rec, "cores_per_socket", where, 1)
        threads = self._int_field(rec, "threads_per_core", where, 1)
        memory = self._int_field(rec, "real_memory", where, 1)
        weight = self._int_field(rec, "weight", where, 0)
        gpu_count = self._int_field(rec, "gpu_count", where, 0) or 0
        if sockets is not None and cores is not None:
            full = sockets * cores * (threads or 1)
            if cpus is None:
                cpus = full
            elif cpus not in (full, sockets * cores):
                self.problems.append(
                    f"{where}: cpus={cpus} disagrees with sockets*cores_per_socket*threads_per_core="
                    f"{sockets}*{cores}*{threads or 1}={full}"
                )
        elif cpus is not None and threads is not None and cpus % threads:
            self.problems.append(f"{where}: cpus={cpus} is not a multiple of threads_per_core={threads}")

        gpu_type = rec.get("gpu_type")
        if gpu_type is not None and (not isinstance(gpu_type, str) or not _GRES_TYPE_RE.match(gpu_type)):
            self.problems.append(f"{where}: invalid gpu_type {gpu_type!r}")
            gpu_type = None
        if gpu_type and not gpu_count:
            self.problems.append(f"{where}: gpu_type '{gpu_type}' given but gpu_count is 0")
        files: tuple[str, ...] = ()
        raw_files = rec.get("gpu_files")
        if raw_files is not None:
            if isinstance(raw_files, str):
                raw_files = [raw_files]
            if not _is_seq(raw_files) or not all(isinstance(f, str) and f for f in raw_files):
                self.problems.append(f"{where}: gpu_files must be a list of device paths, got {raw_files!r}")
            else:
                expanded: list[str] = []
                for f in raw_files:
                    got = self._expand(f, f"{where}: gpu_files")
                    if got is not None:
                        expanded.extend(got)
                if len(set(expanded)) != len(expanded):
                    self.problems.append(f"{where}: gpu_files lists a device twice")
                if len(expanded) != gpu_count:
                    self.problems.append(
                        f"{where}: gpu_count={gpu_count} but gpu_files name {len(expanded)} device(s) "
                        f"({','.join(raw_files)})"
                    )
                files = tuple(sorted(expanded))
        elif gpu_count:
            files = tuple(f"/dev/nvidia{i}" for i in range(gpu_count))

        features = rec.get("features") or []
        if isinstance(features, str):
            features = features.split(",")
        if not _is_seq(features) or not all(isinstance(f, str) for f in features):
            self.problems.append(f"{where}: features must be a list of strings, got {features!r}")
            features = []
        feats = tuple(sorted({f.strip() for f in features if f.strip()}))
        for f in feats:
            if not re.match(r"^[A-Za-z0-9_.:+-]+$", f):
                self.problems.append(f"{where}: invalid feature {f!r}")

        options = self._options(rec.get("options"), where, _NODE_CANON, _NODE_FIELD_KEYS, "NodeName")
        if len(self.problems) != before:
            return None
        if gpu_count:
            self.has_gpus = True
        gres = ""
        if gpu_count:
            gres = f"gpu:{gpu_type}:{gpu_count}" if gpu_type else f"gpu:{gpu_count}"
        return (cpus, sockets, cores, threads, memory, gres, feats, weight, options, gpu_type or "", files)

    def _partitions(self, partitions: Any, defined: set[str]) -> None:
        if partitions is None:
            partitions = []
        if not _is_seq(partitions):
            self.problems.append(f"partitions must be a list, got {type(partitions).__name__}")
            return
        seen: set[str] = set()
        defaults: list[str] = []
        for i, rec in enumerate(partitions):
            if not isinstance(rec, Mapping):
                self.problems.append(f"partitions[{i}]: a partition must be a mapping, got {rec!r}")
                continue
            name = rec.get("name")
            if not isinstance(name, str) or not _NAME_RE.match(name) or name.upper() == "DEFAULT":
                self.problems.append(f"partitions[{i}]: invalid partition name {name!r}")
                continue
            where = f"partition '{name}'"
            if name in seen:
                self.problems.append(f"{where} is defined twice")
                continue
            seen.add(name)
            for key in sorted(set(rec) - set(_PARTITION_RECORD_KEYS), key=str):
                self.problems.append(
                    f"{where}: unknown partition field '{key}'" + _suggest(str(key), _identity(_PARTITION_RECORD_KEYS))
                )
            nodes_text = self._partition_nodes(rec.get("nodes"), where, defined)
            attrs: list[tuple[str, str]] = []
            is_default = _as_bool(rec.get("default", False))
            if is_default is None:
                self.problems.append("{}: default must be a boolean, got {!r}".format(where, rec.get("default")))
            elif is_default:
                defaults.append(name)
                attrs.append(("Default", "YES"))
            max_time = rec.get("max_time")
            if max_time is not None and not self._is_omit(max_time):
                text = str(max_time) if _as_int(max_time) is not None else max_time
                if not isinstance(text, str) or not _TIME_RE.match(text) or text.startswith("-"):
                    self.problems.append(f"{where}: invalid max_time {max_time!r}")
                else:
                    attrs.append(("MaxTime", text.upper() if text.isalpha() else text))
            attrs.extend(self._options(rec.get("options"), where, _PARTITION_CANON, _PARTITION_FIELD_KEYS, "partition"))
            if nodes_text is not None:
                self.partitions.append((name, nodes_text, attrs))
        if len(defaults) > 1:
            self.problems.append("more than one default partition: {}".format(", ".join(sorted(defaults))))

    def _partition_nodes(self, nodes: Any, where: str, defined: set[str]) -> str | None:
        if isinstance(nodes, str):
            nodes = [nodes]
        if not _is_seq(nodes) or not nodes or not all(isinstance(n, str) and n.strip() for n in nodes):
            self.problems.append(f"{where}: nodes must be a non-empty list of node names or hostlists, got {nodes!r}")
            return None
        if [n.strip() for n in nodes] == ["ALL"]:
            return "ALL"
        members: set[str] = set()
        ok = True
        for expr in nodes:
            names = self._expand(expr.strip(), where)
            if names is None:
                ok = False
                continue
            members.update(names)
        if not ok:
            return None
        if "ALL" in members:
            self.problems.append(f"{where}: ALL cannot be combined with other node names")
            return None
        missing = members - defined
        if missing:
            self.problems.append(f"{where} names undefined node(s) {compress(sorted(missing))}")
            return None
        return compress(sorted(members))

    def _merge(
        self,
        base: Mapping[str, Any],
        overrides: Any,
        canon: Mapping[str, str],
        section: str,
        yes: str,
        no: str,
        check: Callable[[str, Any], bool],
    ) -> dict[str, str]:
        merged: dict[str, Any] = dict(base)
        if overrides is None:
            overrides = {}
        if not isinstance(overrides, Mapping):
            self.problems.append(f"{section} must be a mapping of keys to values, got {type(overrides).__name__}")
            overrides = {}
        seen: dict[str, str] = {}
        for key in sorted(overrides, key=str):
            low = str(key).lower()
            if low in seen:
                self.problems.append(
                    f"{section}: key given twice as '{seen[low]}' and '{key}' (Slurm keys are case-insensitive)"
                )
                continue
            seen[low] = str(key)
            if low not in canon:
                self.problems.append(f"{section}: unknown key '{key}'{_suggest(str(key), canon)}")
                continue
            if not check(low, key):
                continue
            value = overrides[key]
            if self._is_omit(value):
                merged.pop(canon[low], None)
            else:
                merged[canon[low]] = value
        out: dict[str, str] = {}
        for key in sorted(merged, key=str.lower):
            value = merged[key]
            where = f"{section}.{key}"
            number = _as_int(value)
            if key.lower() in _NUMERIC_KEYS and (number is None or number < 0):
                self.problems.append(f"{where} must be a non-negative integer, got {value!r}")
                continue
            problem = _VALUE_CHECKS[key.lower()](value) if key.lower() in _VALUE_CHECKS else None
            if problem:
                self.problems.append(f"{where} = {value!r}: {problem}")
                continue
            text = self._value(value, where, yes, no)
            if text is not None:
                out[key] = text
        return out

    def _slurm_conf(self, config: Any, accounting: Any) -> None:
        base: dict[str, Any] = dict(DEFAULT_SLURM_CONF)
        if accounting is not None:
            if not isinstance(accounting, Mapping) or not isinstance(accounting.get("host"), str):
                self.problems.append(f"accounting must be a mapping with at least 'host', got {accounting!r}")
            else:
                for key in sorted(set(accounting) - set(_ACCOUNTING_KEYS), key=str):
                    self.problems.append(
                        "accounting: unknown key '{}' (allowed: {})".format(key, ", ".join(_ACCOUNTING_KEYS))
                    )
                base["AccountingStorageType"] = "accounting_storage/slurmdbd"
                base["AccountingStorageHost"] = accounting["host"]
                base["AccountingStoragePort"] = accounting.get("port", 6819)
                base["AccountingStorageEnforce"] = accounting.get("enforce", "associations,limits,qos,safe")
                if accounting.get("backup_host"):
                    base["AccountingStorageBackupHost"] = accounting["backup_host"]

        def check(low: str, key: str) -> bool:
            if low in _COMPUTED_KEYS:
                self.problems.append(f"config: '{key}' is computed by the model; set {_COMPUTED_KEYS[low]} instead")
                return False
            return True

        # A job that asks for no memory gets the node's whole memory when memory is consumable,
        # so a one-GPU job would hold an eight-GPU node alone. Default to an even share per CPU
        # of the smallest node, unless the config chooses DefMemPerNode or DefMemPerGPU instead
        # (a DefMemPerCPU in the config replaces or omits this default in the merge).
        given = {str(k).lower(): v for k, v in config.items()} if isinstance(config, Mapping) else {}
        select_params = str(given.get("selecttypeparameters", base["SelectTypeParameters"])).lower()
        shares = [
            memory // cpus
            for cpus, _sockets, _cores, _threads, memory, *_rest in self.groups
            if isinstance(cpus, int) and isinstance(memory, int)
        ]
        if (
            shares
            and min(shares) > 0
            and "memory" in select_params
            and not {"defmempernode", "defmempergpu"} & set(given)
        ):
            base["DefMemPerCPU"] = min(shares)
        merged = self._merge(base, config, _SLURM_CANON, "config", "YES", "NO", check)
        for key, value in merged.items():
            low = key.lower()
            if low == "jobcomppass" or (low == "accountingstoragepass" and not str(value).startswith("/")):
                self.problems.append(
                    f"config.{key}: a password does not belong in slurm.conf, which every node and user can read "
                    "(and --diff shows); "
                    + (
                        "the accounting database password is slurm_dbd_storage_password (slurmdbd.conf, 0600 on the "
                        "dbd host), and AccountingStoragePass takes only a munge socket path"
                        if low == "accountingstoragepass"
                        else "keep job completion credentials out of slurm.conf (use accounting through slurmdbd)"
                    )
                )
        if merged.get("AccountingStorageType", "").endswith("/slurmdbd") and "AccountingStorageTRES" not in merged:
            merged["AccountingStorageTRES"] = "gres/gpu"
            merged = {k: merged[k] for k in sorted(merged, key=str.lower)}
        backfill = self._backfill(merged)
        if backfill:
            merged["SchedulerParameters"] = backfill
            merged = {k: merged[k] for k in sorted(merged, key=str.lower)}
        if self.has_gpus and "gpu" not in [t.strip() for t in merged.get("GresTypes", "").split(",")]:
            self.problems.append(
                "config.GresTypes={!r} lacks 'gpu' but nodes have GPUs".format(merged.get("GresTypes", "(omitted)"))
            )
        self.slurm_conf = merged

    def _backfill(self, merged: Mapping[str, str]) -> str | None:
        """SchedulerParameters with a backfill window covering the longest partition MaxTime, or None
        when nothing needs adding. The backfill scheduler plans no job further ahead than bf_window
        (Slurm's default: one day), so longer jobs starve; its resolution grows with the window (one
        minute per day), keeping the scheduler's work per cycle the same. INFINITE partitions do not
        count, a bf_window the config sets wins, and Slurm's limit is 30 days."""
        if merged.get("SchedulerType", "") != "sched/backfill":
            return None
        longest = max(
            (_minutes(v) for _n, _nodes, attrs in self.partitions for k, v in attrs if k == "MaxTime"), default=0
        )
        params = [p for p in merged.get("SchedulerParameters", "").split(",") if p]
        names = {p.split("=", 1)[0].strip().lower() for p in params}
        if longest <= _BF_WINDOW_DEFAULT or "bf_window" in names:
            return None
        window = min(longest, _BF_WINDOW_MAX)
        params.append(f"bf_window={window}")
        if "bf_resolution" not in names:
            params.append(f"bf_resolution={60 * -(-window // _BF_WINDOW_DEFAULT)}")
        return ",".join(params)

    def _cgroup_conf(self, cgroup: Any) -> None:
        self.cgroup_conf = self._merge(
            DEFAULT_CGROUP_CONF, cgroup, _CGROUP_CANON, "cgroup", "yes", "no", lambda low, key: True
        )

    # ------------------------------------------------------------------ rendering

    def partition_members(self) -> dict[str, list[str]]:
        """Each partition's node names, ``ALL`` expanded to every defined node."""
        everyone = sorted(n for names in self.groups.values() for n in names)
        return {
            name: everyone if nodes_text == "ALL" else expand(nodes_text)
            for name, nodes_text, _attrs in self.partitions
        }

    def render(self) -> dict[str, str]:
        node_lines = self._node_lines()
        return {
            "slurm.conf": self._render_slurm_conf(node_lines),
            "gres.conf": self._render_gres_conf(node_lines),
            "cgroup.conf": "".join("{}={}\n".format(*kv) for kv in self.cgroup_conf.items()),
        }

    def _node_lines(self) -> list[tuple[str, tuple, list[str]]]:
        """(compressed hostlist, signature, names) per hardware group, sorted by hostlist."""
        out = [(compress(names), key, names) for key, names in self.groups.items()]
        out.sort(key=lambda item: item[0])
        return out

    def _render_slurm_conf(self, node_lines: list[tuple[str, tuple, list[str]]]) -> str:
        lines = [f"ClusterName={self.cluster_name}"]
        lines.extend(f"SlurmctldHost={c}" for c in self.controllers)
        lines.extend("{}={}".format(*kv) for kv in self.slurm_conf.items())
        lines.append("")
        lines.append("# Nodes: one line per hardware type")
        for hostlist, key, _names in node_lines:
            cpus, sockets, cores, threads, memory, gres, feats, weight, options, _type, _files, has_addr = key
            parts = [f"NodeName={hostlist}"]
            if has_addr:
                parts.append("NodeAddr={}".format(",".join(self.addresses[n] for n in expand(hostlist))))
            for label, value in (
                ("CPUs", cpus),
                ("Sockets", sockets),
                ("CoresPerSocket", cores),
                ("ThreadsPerCore", threads),
                ("RealMemory", memory),
                ("Gres", gres or None),
                ("Features", ",".join(feats) or None),
                ("Weight", weight),
            ):
                if value is not None:
                    parts.append(f"{label}={value}")
            parts.extend("{}={}".format(*kv) for kv in options)
            lines.append(" ".join(parts))
        lines.append("")
        lines.append("# Partitions")
        for name, nodes, attrs in sorted(self.partitions):
            parts = [f"PartitionName={name}", f"Nodes={nodes}"]
            parts.extend("{}={}".format(*kv) for kv in attrs)
            lines.append(" ".join(parts))
        return "\n".join(lines) + "\n"

    def _render_gres_conf(self, node_lines: list[tuple[str, tuple, list[str]]]) -> str:
        lines = [f"AutoDetect={self.autodetect}"]
        if self.autodetect == "off":
            by_gres: dict[tuple[str, tuple[str, ...]], list[str]] = {}
            for _hostlist, key, names in node_lines:
                gpu_type, files = key[9], key[10]
                if files:
                    by_gres.setdefault((gpu_type, files), []).extend(names)
            rendered = []
            for (gpu_type, files), names in by_gres.items():
                parts = [f"NodeName={compress(names)}", "Name=gpu"]
                if gpu_type:
                    parts.append(f"Type={gpu_type}")
                parts.append(f"File={compress(files)}")
                rendered.append(" ".join(parts))
            lines.extend(sorted(rendered))
        return "\n".join(lines) + "\n"


# -- reading a slurm.conf back (the live file a run compares with, the change plan's input) --------
def _logical_lines(text: str):
    """Lines without comments, continuation lines joined; a ``#`` after a backslash is text, as in
    Slurm's own parser (and in the values conf_value writes)."""
    pending = ""
    for raw in (text or "").splitlines():
        line = _COMMENT.split(raw, 1)[0].rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            yield line
    if pending.strip():
        yield pending.strip()


_COMMENT = re.compile(r"(?<!\\)#")


def parse_slurm_conf(text: str | None) -> dict[str, dict[str, str]]:
    """Split slurm.conf text into ``{"keys": {lower-key: value}, "nodes": {name: definition},
    "partitions": {name: definition}}`` (definitions with their words sorted)."""
    keys: dict[str, str] = {}
    nodes: dict[str, str] = {}
    partitions: dict[str, str] = {}
    for line in _logical_lines(text or ""):
        first, _sep, rest = line.partition(" ")
        key, _eq, value = first.partition("=")
        lower = key.lower()
        if lower == "nodename":
            nodes[value] = " ".join(sorted(rest.split()))
        elif lower == "partitionname":
            partitions[value] = " ".join(sorted(rest.split()))
        elif lower == "slurmctldhost":
            keys[lower] = (keys[lower] + "," + line.split("=", 1)[1]) if lower in keys else line.split("=", 1)[1]
        else:
            keys[lower] = line.split("=", 1)[1].strip() if "=" in line else ""
    return {"keys": keys, "nodes": nodes, "partitions": partitions}
