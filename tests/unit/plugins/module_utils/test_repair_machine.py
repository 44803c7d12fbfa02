# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
"""The repair agent's state machine (repair/_machine.plan_pass): every transition and every guard,
each case written out by hand - the records the last pass left, what this pass read, and the records,
actions and notes expected."""

from __future__ import annotations

import hashlib

import pytest

from ansible_collections.oci_gpu.cluster.plugins.module_utils.repair._machine import (
    DEFAULTS,
    SettingsError,
    observation,
    plan_pass,
    settings_from,
)

NOW = 1_000_000.0
OLD = "ocid1.instance.oc1.lab.old"
NEW = "ocid1.instance.oc1.lab.new"
R = "oci_gpu-repair:"


def slurm(state="IDLE", flags=(), reason="", start="2026-12-05T10:00:00"):
    return {"state": state, "flags": list(flags), "reason": reason, "slurmd_start": start}


def inst(iid=OLD, state="RUNNING", health="HEALTHY", impacted=False):
    return {"id": iid, "state": state, "health": health, "impacted": impacted}


def seen(nodes, instances=None, **kw):
    """Slurm's nodes; every node carries its OLD instance unless ``instances`` says otherwise."""
    if instances is None:
        instances = {n: [inst(OLD)] for n in nodes}
    return observation(nodes, instances, **kw)


def run(records, observed, now=NOW, **settings):
    return plan_pass(records, observed, settings_from(settings), now)


def rec(phase, **kw):
    base = {
        "phase": phase,
        "cause": "gpu-health: gpu_count: 7 of 8 GPUs",
        "attempt": 1,
        "since": NOW - 60,
        "started": NOW - 600,
        "instance_id": OLD,
        "confirmed": True,
        "rebooted": False,
        "reason": f"{R} gpu-health: gpu_count: 7 of 8 GPUs",
    }
    base.update(kw)
    return base


OURS = f"{R} gpu-health: gpu_count: 7 of 8 GPUs"
DRAINED_OURS = slurm("IDLE", ["DRAIN"], OURS + " [slurm@2026-12-05T10:01:00]")


# -- settings ---------------------------------------------------------------------------------------
def test_settings_default_and_checked():
    assert settings_from(None) == DEFAULTS
    assert settings_from({"max_concurrent": 3})["max_concurrent"] == 3
    with pytest.raises(SettingsError, match=r"'max_concurent' is unknown"):
        settings_from({"max_concurent": 3})
    with pytest.raises(SettingsError, match=r"max_concurrent=0 must be a whole number of 1 or more"):
        settings_from({"max_concurrent": 0})
    with pytest.raises(SettingsError, match=r"max_attempts=True"):
        settings_from({"max_attempts": True})
    with pytest.raises(SettingsError, match=r"drain_deadline_s='1h' must be empty or a number"):
        settings_from({"drain_deadline_s": "1h"})
    with pytest.raises(SettingsError, match=r"reboot_causes has a bad pattern '\('"):
        settings_from({"reboot_causes": ["("]})


# -- fail closed ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("observed", "why"),
    [
        (observation(None, {"gpu1": [inst()]}), "Slurm nodes could not be read"),
        (observation({"gpu1": DRAINED_OURS}, None), "OCI instances could not be read"),
        (
            observation({"gpu1": DRAINED_OURS}, {"gpu1": [inst()]}, problems=["ListComputeHosts: 503"]),
            "ListComputeHosts: 503",
        ),
    ],
)
def test_an_incomplete_read_does_nothing_and_keeps_every_record(observed, why):
    records = {"gpu1": rec("drained"), "gpu2": rec("terminating")}
    out = run(records, observed)
    assert out["actions"] == []
    assert out["records"] == records
    assert out["notes"] == [{"node": None, "note": f"nothing done: {why}"}]


# -- faults: which the agent takes, which it never touches -----------------------------------------
def test_a_health_check_drain_starts_a_repair_under_the_agents_own_reason():
    node = slurm("IDLE", ["DRAIN"], "gpu-health: gpu_count: 7 of 8 GPUs [root@2026-12-05T10:00:00]")
    out = run({}, seen({"gpu1": node, "gpu2": slurm()}))
    assert out["actions"] == [{"node": "gpu1", "do": "drain", "reason": OURS}]
    assert out["records"] == {
        "gpu1": {
            "phase": "draining",
            "cause": "gpu-health: gpu_count: 7 of 8 GPUs",
            "attempt": 1,
            "since": NOW,
            "started": NOW,
            "instance_id": OLD,
            "confirmed": False,
            "rebooted": False,
            "reason": OURS,
        }
    }
    assert out["notes"] == [{"node": "gpu1", "note": "repair starts: gpu-health: gpu_count: 7 of 8 GPUs"}]


def test_an_unhealthy_oci_host_drains_a_node_slurm_thinks_is_fine():
    out = run({}, seen({"gpu1": slurm("ALLOCATED")}, {"gpu1": [inst(health="UNHEALTHY", impacted=True)]}))
    assert out["actions"] == [
        {"node": "gpu1", "do": "drain", "reason": f"{R} oci-host: UNHEALTHY (impacted components)"}
    ]
    assert out["records"]["gpu1"]["cause"] == "oci-host: UNHEALTHY (impacted components)"
    out = run({}, seen({"gpu1": slurm()}, {"gpu1": [inst(impacted=True)]}))
    assert out["actions"] == [{"node": "gpu1", "do": "drain", "reason": f"{R} oci-host: HEALTHY (impacted components)"}]


@pytest.mark.parametrize(
    "node",
    [
        slurm("IDLE", ["DRAIN"], "disk swap by hand [alice@2026-12-05T09:00:00]"),
        slurm("ALLOCATED", ["DRAIN"], "ticket 4411"),
        slurm("DOWN", [], "cable check"),
        slurm("DOWN", ["NOT_RESPONDING"], ""),
    ],
)
def test_an_administrators_drain_or_down_is_never_acted_on_even_on_a_broken_host(node):
    out = run({}, seen({"gpu1": node}, {"gpu1": [inst(health="UNHEALTHY", impacted=True)]}))
    assert out == {"records": {}, "actions": [], "notes": []}


def test_healthy_nodes_have_no_record_and_no_action():
    out = run({}, seen({"gpu1": slurm(), "gpu2": slurm("MIXED")}))
    assert out == {"records": {}, "actions": [], "notes": []}


def test_two_live_instances_with_the_nodes_name_make_it_untouchable():
    both = {"gpu1": [inst(OLD), inst(NEW, "PROVISIONING")]}
    out = run({"gpu1": rec("terminating")}, seen({"gpu1": DRAINED_OURS}, both))
    assert out["actions"] == []
    assert out["records"] == {"gpu1": rec("terminating")}
    assert out["notes"] == [{"node": "gpu1", "note": "more than one live instance carries this name: nothing done"}]
    # terminated ones do not count
    gone = {"gpu1": [inst(OLD, "TERMINATED"), inst(NEW, "PROVISIONING")]}
    assert (
        run({"gpu1": rec("launching", token="t")}, seen({"gpu1": DRAINED_OURS}, gone))["records"]["gpu1"]["phase"]
        == "joining"
    )


# -- the cap ----------------------------------------------------------------------------------------
def test_three_faults_with_max_concurrent_1_go_one_at_a_time():
    bad = slurm("IDLE", ["DRAIN"], "gpu-health: xid: 79 on 0000:3b:00.0")
    nodes = {"gpu1": bad, "gpu2": bad, "gpu3": bad}
    out = run({}, seen(nodes), max_concurrent=1)
    assert [(a["node"], a["do"]) for a in out["actions"]] == [("gpu1", "drain")]
    assert {n: r["phase"] for n, r in out["records"].items()} == {
        "gpu1": "draining",
        "gpu2": "queued",
        "gpu3": "queued",
    }
    assert out["notes"][1:] == [
        {"node": "gpu2", "note": "queued: 1 node(s) already out of service for repair (max 1)"},
        {"node": "gpu3", "note": "queued: 1 node(s) already out of service for repair (max 1)"},
    ]
    # next pass: gpu1 still repairing -> the queue waits, nothing more is drained
    records = out["records"]
    nodes["gpu1"] = slurm("IDLE", ["DRAIN"], f"{R} gpu-health: xid: 79 on 0000:3b:00.0")
    out = run(records, seen(nodes), max_concurrent=1)
    assert [(a["node"], a["do"]) for a in out["actions"]] == [("gpu1", "reboot")]
    assert out["records"]["gpu2"]["phase"] == "queued" and out["records"]["gpu3"]["phase"] == "queued"
    # gpu1 back in service (acceptance passed) -> gpu2 starts in the same pass, gpu3 still waits
    records = dict(out["records"], gpu1=rec("accepting", job_id="41", reservation="oci_gpu_repair_gpu1"))
    nodes["gpu1"] = slurm("IDLE", ["RESERVED"])
    out = run(records, seen(nodes, jobs={"41": {"state": "COMPLETED", "exit": "0:0"}}), max_concurrent=1)
    assert [(a["node"], a["do"]) for a in out["actions"]] == [("gpu1", "unreserve"), ("gpu2", "drain")]
    assert {n: r["phase"] for n, r in out["records"].items()} == {"gpu2": "draining", "gpu3": "queued"}


def test_failed_and_maintenance_nodes_do_not_hold_a_slot():
    records = {
        "gpu1": rec("failed", reason=f"{R} gave up"),
        "gpu2": rec("maintenance", reason=f"{R} maintenance", event_id="e1", reservation="oci_gpu_repair_gpu2"),
    }
    nodes = {
        "gpu1": slurm("IDLE", ["DRAIN"], f"{R} gave up"),
        "gpu2": slurm("IDLE", ["DRAIN"], f"{R} maintenance"),
        "gpu3": slurm("IDLE", ["DRAIN"], "gpu-health: xid: 48 on 0000:3b:00.0"),
    }
    scheduled = {OLD: [{"id": "e1", "state": "STARTED", "start": NOW - 60, "end": NOW + 3600}]}
    out = run(records, seen(nodes, maintenance=scheduled), max_concurrent=1)
    assert {n: r["phase"] for n, r in out["records"].items()} == {
        "gpu1": "failed",
        "gpu2": "maintenance",
        "gpu3": "draining",
    }


def test_a_queued_node_whose_fault_went_away_leaves_the_queue():
    out = run(
        {"gpu1": rec("draining"), "gpu2": rec("queued")},
        seen({"gpu1": DRAINED_OURS | {"state": "MIXED"}, "gpu2": slurm()}),
    )
    assert sorted(out["records"]) == ["gpu1"]
    assert {"node": "gpu2", "note": "dropped from the queue: no fault any more, or an administrator's now"} in out[
        "notes"
    ]


# -- draining: jobs are waited for ------------------------------------------------------------------
def test_draining_waits_for_jobs_for_ever_without_a_deadline():
    busy = slurm("MIXED", ["DRAIN"], OURS)
    out = run({"gpu1": rec("draining", since=NOW - 7 * 86400)}, seen({"gpu1": busy}))
    assert out["actions"] == []
    assert out["records"]["gpu1"]["phase"] == "draining"
    assert out["notes"] == [{"node": "gpu1", "note": "waits for its jobs to end (never killed)"}]
    completing = slurm("IDLE", ["DRAIN", "COMPLETING"], OURS)
    assert run({"gpu1": rec("draining")}, seen({"gpu1": completing}))["records"]["gpu1"]["phase"] == "draining"


def test_a_site_deadline_requeues_the_jobs_once():
    busy = slurm("ALLOCATED", ["DRAIN"], OURS)
    early = run({"gpu1": rec("draining", since=NOW - 100)}, seen({"gpu1": busy}), drain_deadline_s=3600)
    assert early["actions"] == []
    late = run({"gpu1": rec("draining", since=NOW - 3600)}, seen({"gpu1": busy}), drain_deadline_s=3600)
    assert late["actions"] == [{"node": "gpu1", "do": "requeue"}]
    assert late["records"]["gpu1"]["requeued"] == NOW
    again = run(late["records"], seen({"gpu1": busy}), NOW + 60, drain_deadline_s=3600)
    assert again["actions"] == []


def test_drained_when_no_job_runs_and_acted_on_in_the_same_pass():
    out = run({"gpu1": rec("draining")}, seen({"gpu1": DRAINED_OURS}))
    assert out["actions"] == [{"node": "gpu1", "do": "reboot", "instance_id": OLD}]
    assert out["records"]["gpu1"] == rec("rebooting", since=NOW, rebooted=True, slurmd_start="2026-12-05T10:00:00")
    assert out["notes"] == [{"node": "gpu1", "note": "reboot (RESET) for gpu-health: gpu_count: 7 of 8 GPUs"}]


@pytest.mark.parametrize(
    "reason",
    [
        "gpu-health: mounts: /home is not mounted",
        "gpu-health: munge: munge is not running",
        f"{R} gave up after 2 attempt(s): acceptance job 77 FAILED 1:0",
        f"{R} maintenance ocid1.instancemaintenanceevent.x from 1000600",
    ],
)
def test_drains_the_agent_does_not_repair_are_left_to_their_owner(reason):
    # the check resumes its own mount/munge drains; the agent's own "gave up" or maintenance drain
    # without a record (state file lost) stays for a person
    out = run({}, seen({"gpu1": slurm("IDLE", ["DRAIN"], reason)}))
    assert out == {"records": {}, "actions": [], "notes": []}


def test_the_agents_own_drain_without_a_record_is_taken_up_again():
    node = slurm("IDLE", ["DRAIN"], f"{R} gpu-health: fabric: nvidia-imex is not running")
    out = run({}, seen({"gpu1": node}))
    assert out["records"]["gpu1"]["cause"] == "gpu-health: fabric: nvidia-imex is not running"
    assert out["actions"] == []  # the node already carries exactly that reason


# -- administrators win ----------------------------------------------------------------------------
@pytest.mark.parametrize("phase", ["draining", "drained", "rebooting", "terminating", "joining"])
def test_an_administrator_resuming_or_renaming_the_drain_releases_the_repair(phase):
    for node in (slurm("IDLE"), slurm("IDLE", ["DRAIN"], "mine now [bob@2026-12-05T11:00:00]")):
        out = run({"gpu1": rec(phase, new_instance_id=NEW)}, seen({"gpu1": node}))
        assert out["records"] == {}
        assert out["actions"] == []
        assert out["notes"] == [
            {"node": "gpu1", "note": "released: an administrator resumed the node or changed its reason"}
        ]


def test_not_responding_while_the_instance_is_away_is_not_a_release():
    node = slurm("DOWN", ["DRAIN", "NOT_RESPONDING"], "Not responding [slurm@2026-12-05T11:00:00]")
    out = run({"gpu1": rec("launching", token="tok")}, seen({"gpu1": node}, {"gpu1": []}))
    assert out["records"]["gpu1"]["phase"] == "launching"


def test_a_drain_not_seen_yet_is_asked_again_not_released():
    out = run({"gpu1": rec("draining", confirmed=False)}, seen({"gpu1": slurm("IDLE")}))
    assert out["actions"] == [{"node": "gpu1", "do": "drain", "reason": OURS}]
    assert out["records"]["gpu1"]["phase"] == "draining"


# -- reboot -----------------------------------------------------------------------------------------
def test_a_reboot_cures_an_xid_first_and_waits_for_slurmd():
    cause = "gpu-health: xid: 79 on 0000:3b:00.0"
    records = {"gpu1": rec("drained", cause=cause, reason=f"{R} {cause}")}
    node = slurm("IDLE", ["DRAIN"], f"{R} {cause}", start="2026-12-05T10:00:00")
    out = run(records, seen({"gpu1": node}))
    assert out["actions"] == [{"node": "gpu1", "do": "reboot", "instance_id": OLD}]
    r = out["records"]["gpu1"]
    assert (r["phase"], r["rebooted"], r["slurmd_start"]) == ("rebooting", True, "2026-12-05T10:00:00")
    # same slurmd start: not back yet
    wait = run(out["records"], seen({"gpu1": node}), NOW + 30)
    assert wait["actions"] == [] and wait["records"]["gpu1"]["phase"] == "rebooting"
    # slurmd registered again: reserve, resume inside the reservation, acceptance job
    back = slurm("IDLE", ["DRAIN"], f"{R} {cause}", start="2026-12-05T10:07:00")
    out = run(out["records"], seen({"gpu1": back}), NOW + 300)
    assert out["actions"] == [
        {"node": "gpu1", "do": "reserve", "name": "oci_gpu_repair_gpu1", "start": NOW + 300, "end": None},
        {"node": "gpu1", "do": "resume"},
        {"node": "gpu1", "do": "accept", "reservation": "oci_gpu_repair_gpu1"},
    ]
    assert out["records"]["gpu1"]["phase"] == "accepting"


@pytest.mark.parametrize(
    "back",
    [
        # slurmctld marks a node that rebooted without `scontrol reboot` DOWN; the drain and reason stay
        slurm("DOWN", ["DRAIN"], OURS, start="2026-12-05T10:07:00"),
        # a node that had lost its drain reason gets slurmctld's own text
        slurm("DOWN", [], "Node unexpectedly rebooted boot_time=1765015620 last response=1765015600", start="x2"),
    ],
)
def test_slurmctlds_unexpected_reboot_mark_is_the_reboot_coming_back(back):
    records = {"gpu1": rec("rebooting", rebooted=True, slurmd_start="2026-12-05T10:00:00", since=NOW - 60)}
    out = run(records, seen({"gpu1": back}))
    assert [a["do"] for a in out["actions"]] == ["reserve", "resume", "accept"]
    assert out["records"]["gpu1"]["phase"] == "accepting"


def test_no_slurmd_after_the_reboot_timeout_means_replace():
    records = {"gpu1": rec("rebooting", rebooted=True, slurmd_start="2026-12-05T10:00:00", since=NOW - 900)}
    node = slurm("DOWN", ["DRAIN", "NOT_RESPONDING"], OURS)
    out = run(records, seen({"gpu1": node}))
    assert out["records"]["gpu1"]["phase"] == "drained"
    out = run(out["records"], seen({"gpu1": node}), NOW + 60)
    assert [a["do"] for a in out["actions"]] == ["report_host", "terminate"]


# -- replace ----------------------------------------------------------------------------------------
POOL = "ocid1.instancepool.oc1..p"


def test_a_cluster_networks_pool_member_is_held_drained_never_terminated():
    records = {"gpu1": rec("drained")}
    pooled = dict(inst(OLD), pool=POOL, cluster_network="ocid1.clusternetwork.oc1..cn")
    out = run(records, seen({"gpu1": DRAINED_OURS}, {"gpu1": [pooled]}), reboot_causes=[])
    why = (
        f"instance {OLD} is in cluster network ocid1.clusternetwork.oc1..cn (pool {POOL}), "
        "whose members only the pool launches: replace it there"
    )
    assert out["actions"] == [{"node": "gpu1", "do": "drain", "reason": f"{R} gave up: {why}"[:200]}]
    assert out["records"]["gpu1"]["phase"] == "failed" and out["records"]["gpu1"]["last_error"] == why
    # a reboot is still tried first for a cause a reboot cures: the pool keeps the instance
    cause = "gpu-health: xid: Xid 79 on PCI:0000:d8:00"
    records = {"gpu1": rec("drained", cause=cause, reason=f"{R} {cause}")}
    node = slurm("IDLE", ["DRAIN"], f"{R} {cause}")
    out = run(records, seen({"gpu1": node}, {"gpu1": [pooled]}))
    assert out["actions"] == [{"node": "gpu1", "do": "reboot", "instance_id": OLD}]


def test_a_pool_member_is_detached_relaunched_and_attached_back_to_its_pool():
    down = slurm("DOWN", ["DRAIN", "NOT_RESPONDING"], OURS)
    member = dict(inst(OLD), pool=POOL)
    # detached with the pool shrinking (the pool launches no replacement of its own), OCI terminates it
    out = run({"gpu1": rec("drained")}, seen({"gpu1": DRAINED_OURS}, {"gpu1": [member]}), reboot_causes=[])
    assert out["actions"] == [
        {"node": "gpu1", "do": "report_host", "instance_id": OLD, "text": "gpu-health: gpu_count: 7 of 8 GPUs"},
        {"node": "gpu1", "do": "detach", "pool": POOL, "instance_id": OLD},
    ]
    records = out["records"]
    assert (records["gpu1"]["phase"], records["gpu1"]["pool"]) == ("terminating", POOL)
    # still a member (the detach failed): detached again, never terminated behind the pool's back
    out = run(records, seen({"gpu1": down}, {"gpu1": [member]}), NOW + 30)
    assert out["actions"] == [{"node": "gpu1", "do": "detach", "pool": POOL, "instance_id": OLD}]
    # out of the pool but still running: an ordinary terminate
    out = run(records, seen({"gpu1": down}, {"gpu1": [inst(OLD)]}), NOW + 60)
    assert out["actions"] == [{"node": "gpu1", "do": "terminate", "instance_id": OLD}]
    out = run(records, seen({"gpu1": down}, {"gpu1": []}), NOW + 90)
    assert [a["do"] for a in out["actions"]] == ["launch"]
    out = run(out["records"], seen({"gpu1": down}, {"gpu1": [inst(NEW, "PROVISIONING")]}), NOW + 120)
    assert out["records"]["gpu1"]["phase"] == "joining" and out["actions"] == []
    # RUNNING: attached to the pool again (each pass until the pool lists it), and joined once
    out = run(out["records"], seen({"gpu1": down}, {"gpu1": [inst(NEW)]}), NOW + 150)
    assert out["actions"] == [
        {"node": "gpu1", "do": "attach", "pool": POOL, "instance_id": NEW},
        {"node": "gpu1", "do": "join", "instance_id": NEW},
    ]
    out = run(out["records"], seen({"gpu1": down}, {"gpu1": [inst(NEW)]}), NOW + 180)
    assert out["actions"] == [{"node": "gpu1", "do": "attach", "pool": POOL, "instance_id": NEW}]
    back = slurm("IDLE", ["DRAIN"], OURS, start="2026-12-05T11:00:00")
    out = run(out["records"], seen({"gpu1": back}, {"gpu1": [dict(inst(NEW), pool=POOL)]}), NOW + 210)
    assert [a["do"] for a in out["actions"]] == ["reserve", "resume", "accept"]


def test_a_fault_no_reboot_cures_is_reported_then_terminated_by_the_recorded_ocid():
    cause = "gpu-health: fabric: nvidia-imex is not running"
    node = slurm("IDLE", ["DRAIN"], f"{R} {cause}")
    out = run({"gpu1": rec("drained", cause=cause, reason=f"{R} {cause}")}, seen({"gpu1": node}))
    assert out["actions"] == [
        {"node": "gpu1", "do": "report_host", "instance_id": OLD, "text": cause},
        {"node": "gpu1", "do": "terminate", "instance_id": OLD},
    ]
    assert out["records"]["gpu1"]["phase"] == "terminating"
    assert out["records"]["gpu1"]["slurmd_start"] == "2026-12-05T10:00:00"


def test_drained_does_nothing_when_another_instance_now_carries_the_name():
    out = run({"gpu1": rec("drained")}, seen({"gpu1": DRAINED_OURS}, {"gpu1": [inst(NEW)]}))
    assert out["actions"] == []
    assert out["notes"] == [
        {"node": "gpu1", "note": f"the instance carrying this name changed ({OLD} -> {NEW}): nothing done"}
    ]


def test_terminating_waits_repeats_only_for_the_same_ocid_then_launches_with_a_fixed_token():
    records = {"gpu1": rec("terminating")}
    down = slurm("DOWN", ["DRAIN", "NOT_RESPONDING"], OURS)
    out = run(records, seen({"gpu1": down}, {"gpu1": [inst(OLD, "TERMINATING")]}))
    assert out["actions"] == []
    out = run(records, seen({"gpu1": down}, {"gpu1": [inst(OLD, "RUNNING")]}))
    assert out["actions"] == [{"node": "gpu1", "do": "terminate", "instance_id": OLD}]
    out = run(records, seen({"gpu1": down}, {"gpu1": [inst(OLD, "TERMINATED")]}))
    token = "oci-gpu-repair-" + hashlib.sha256(f"gpu1|1|{OLD}".encode()).hexdigest()[:32]
    assert out["actions"] == [{"node": "gpu1", "do": "launch", "token": token, "old_instance_id": OLD}]
    assert out["records"]["gpu1"]["phase"] == "launching"
    assert out["records"]["gpu1"]["token"] == token


def test_killed_between_terminate_and_relaunch_the_next_pass_launches_once():
    # the agent persisted "launching" with its token and died before (or after) the call
    token = "oci-gpu-repair-" + hashlib.sha256(f"gpu1|1|{OLD}".encode()).hexdigest()[:32]
    records = {"gpu1": rec("launching", token=token)}
    down = slurm("DOWN", ["DRAIN", "NOT_RESPONDING"], OURS)
    out = run(records, seen({"gpu1": down}, {"gpu1": [inst(OLD, "TERMINATED")]}))
    assert out["actions"] == [{"node": "gpu1", "do": "launch", "token": token, "old_instance_id": OLD}]
    # OCI took it (the retry token replays the same instance): adopted, no further launch
    out = run(records, seen({"gpu1": down}, {"gpu1": [inst(NEW, "PROVISIONING")]}))
    assert out["actions"] == []
    assert out["records"]["gpu1"]["phase"] == "joining"
    assert out["records"]["gpu1"]["new_instance_id"] == NEW
    again = run(out["records"], seen({"gpu1": down}, {"gpu1": [inst(NEW, "RUNNING")]}), NOW + 30)
    assert all(a["do"] not in ("launch", "terminate") for a in again["actions"])


def test_a_node_whose_instance_is_already_gone_is_relaunched_without_a_terminate():
    out = run({"gpu1": rec("drained")}, seen({"gpu1": DRAINED_OURS}, {"gpu1": [inst(OLD, "TERMINATED")]}))
    assert [a["do"] for a in out["actions"]] == ["launch"]


def test_joining_waits_for_slurmd_then_accepts_and_times_out_into_another_attempt():
    records = {"gpu1": rec("joining", new_instance_id=NEW, slurmd_start="2026-12-05T10:00:00")}
    down = slurm("DOWN", ["DRAIN", "NOT_RESPONDING"], OURS, start="2026-12-05T10:00:00")
    out = run(records, seen({"gpu1": down}, {"gpu1": [inst(NEW, "PROVISIONING")]}))
    assert out["actions"] == [] and out["records"]["gpu1"]["phase"] == "joining"
    # RUNNING: the site's join, once
    out = run(records, seen({"gpu1": down}, {"gpu1": [inst(NEW, "RUNNING")]}))
    assert out["actions"] == [{"node": "gpu1", "do": "join", "instance_id": NEW}]
    assert out["records"]["gpu1"]["join_sent"] == NOW
    again = run(out["records"], seen({"gpu1": down}, {"gpu1": [inst(NEW, "RUNNING")]}), NOW + 30)
    assert again["actions"] == [] and again["records"]["gpu1"]["phase"] == "joining"
    up = slurm("IDLE", ["DRAIN"], OURS, start="2026-12-05T10:09:00")
    out = run(records, seen({"gpu1": up}, {"gpu1": [inst(NEW, "RUNNING")]}))
    assert [a["do"] for a in out["actions"]] == ["reserve", "resume", "accept"]
    assert out["records"]["gpu1"]["instance_id"] == NEW
    late = dict(records["gpu1"], since=NOW - 1800, join_sent=NOW - 1700)
    out = run({"gpu1": late}, seen({"gpu1": down}, {"gpu1": [inst(NEW, "RUNNING")]}))
    assert out["records"]["gpu1"]["phase"] == "drained"
    assert out["records"]["gpu1"]["attempt"] == 2
    text = f"{R} attempt 2: {NEW} did not join Slurm in 1800 s"
    assert out["actions"] == [{"node": "gpu1", "do": "drain", "reason": text}]


# -- acceptance ------------------------------------------------------------------------------------
ACC = rec("accepting", job_id="77", reservation="oci_gpu_repair_gpu1", instance_id=NEW)


def test_a_passed_acceptance_returns_the_node_and_drops_the_record():
    out = run({"gpu1": ACC}, seen({"gpu1": slurm("IDLE")}, jobs={"77": {"state": "COMPLETED", "exit": "0:0"}}))
    assert out["records"] == {}
    assert out["actions"] == [{"node": "gpu1", "do": "unreserve", "name": "oci_gpu_repair_gpu1"}]


def test_a_failed_acceptance_drains_again_then_gives_up_after_max_attempts():
    jobs = {"77": {"state": "FAILED", "exit": "1:0"}}
    out = run({"gpu1": ACC}, seen({"gpu1": slurm("IDLE")}, jobs=jobs), max_attempts=2)
    assert out["actions"] == [
        {"node": "gpu1", "do": "unreserve", "name": "oci_gpu_repair_gpu1"},
        {"node": "gpu1", "do": "drain", "reason": f"{R} attempt 2: acceptance job 77 FAILED 1:0"},
    ]
    r = out["records"]["gpu1"]
    assert (r["phase"], r["attempt"], r["rebooted"], r["confirmed"]) == ("drained", 2, True, False)
    out = run({"gpu1": dict(ACC, attempt=2)}, seen({"gpu1": slurm("IDLE")}, jobs=jobs), max_attempts=2)
    text = f"{R} gave up after 2 attempt(s): acceptance job 77 FAILED 1:0"
    assert out["actions"][-1] == {"node": "gpu1", "do": "drain", "reason": text}
    assert out["records"]["gpu1"]["phase"] == "failed"
    # it stays drained, pass after pass, and takes no slot
    failed = slurm("IDLE", ["DRAIN"], text)
    out = run(out["records"], seen({"gpu1": failed}), NOW + 60)
    assert out["actions"] == []
    assert out["notes"] == [{"node": "gpu1", "note": "stays drained: repair attempts spent"}]
    # an administrator resumes it: released
    out = run(out["records"], seen({"gpu1": slurm("IDLE")}), NOW + 120)
    assert out["records"] == {} and out["actions"] == []


def test_the_health_check_draining_the_node_during_acceptance_fails_it():
    node = slurm("IDLE", ["DRAIN"], "gpu-health: gpu_count: 7 of 8 GPUs")
    out = run({"gpu1": ACC}, seen({"gpu1": node}, jobs={"77": {"state": "RUNNING"}}))
    assert out["records"]["gpu1"]["phase"] == "drained"
    assert out["records"]["gpu1"]["last_error"] == "acceptance: gpu-health: gpu_count: 7 of 8 GPUs"


def test_an_administrator_draining_during_acceptance_releases_it():
    node = slurm("IDLE", ["DRAIN"], "hands off [bob@2026-12-05T11:00:00]")
    out = run({"gpu1": ACC}, seen({"gpu1": node}, jobs={"77": {"state": "RUNNING"}}))
    assert out["records"] == {}
    assert out["actions"] == [{"node": "gpu1", "do": "unreserve", "name": "oci_gpu_repair_gpu1"}]


def test_acceptance_waits_for_its_job_resubmits_a_lost_one_and_times_out():
    node = slurm("IDLE", ["RESERVED"])
    out = run({"gpu1": ACC}, seen({"gpu1": node}, jobs={"77": {"state": "RUNNING"}}))
    assert out["actions"] == [] and out["records"]["gpu1"]["phase"] == "accepting"
    out = run({"gpu1": dict(ACC, job_id=None)}, seen({"gpu1": node}))
    assert out["actions"] == [{"node": "gpu1", "do": "accept", "reservation": "oci_gpu_repair_gpu1"}]
    out = run({"gpu1": dict(ACC, since=NOW - 900)}, seen({"gpu1": node}, jobs={"77": {"state": "PENDING"}}))
    assert out["records"]["gpu1"]["last_error"] == "acceptance job 77 not done in 900 s"


# -- maintenance -----------------------------------------------------------------------------------
def event(state="SCHEDULED", start=NOW + 600, end=NOW + 600 + 4 * 3600):
    return {"id": "ocid1.instancemaintenanceevent.x", "state": state, "start": start, "end": end}


def test_a_maintenance_window_within_the_lead_drains_and_reserves_before_it():
    out = run({}, seen({"gpu1": slurm("MIXED")}, maintenance={OLD: [event()]}))
    reason = f"{R} maintenance ocid1.instancemaintenanceevent.x from {int(NOW + 600)}"
    assert out["actions"] == [
        {"node": "gpu1", "do": "drain", "reason": reason},
        {
            "node": "gpu1",
            "do": "reserve",
            "name": "oci_gpu_repair_gpu1",
            "start": NOW,
            "end": NOW + 600 + 4 * 3600,
        },
    ]
    assert out["records"]["gpu1"]["phase"] == "maintenance"
    # beyond the lead: nothing yet
    assert run({}, seen({"gpu1": slurm()}, maintenance={OLD: [event(start=NOW + 3 * 3600)]}))["actions"] == []
    # an event that is over (or cancelled) starts nothing
    assert run({}, seen({"gpu1": slurm()}, maintenance={OLD: [event("SUCCEEDED")]}))["actions"] == []


def test_after_maintenance_the_node_is_resumed_and_unreserved():
    reason = f"{R} maintenance ocid1.instancemaintenanceevent.x from {int(NOW + 600)}"
    records = {
        "gpu1": rec(
            "maintenance", reason=reason, event_id="ocid1.instancemaintenanceevent.x", reservation="oci_gpu_repair_gpu1"
        )
    }
    node = slurm("IDLE", ["DRAIN", "MAINT", "RESERVED"], reason)
    out = run(records, seen({"gpu1": node}, maintenance={OLD: [event("STARTED")]}))
    assert out["actions"] == []
    out = run(records, seen({"gpu1": node}, maintenance={OLD: [event("SUCCEEDED")]}))
    assert out["actions"] == [
        {"node": "gpu1", "do": "unreserve", "name": "oci_gpu_repair_gpu1"},
        {"node": "gpu1", "do": "resume"},
    ]
    assert out["records"] == {}


def test_a_maintenance_record_from_its_first_pass_waits_then_returns_the_node():
    """Chained from the record the first pass makes (no hand-made record): confirmed, waits, returns."""
    first = run({}, seen({"gpu1": slurm("IDLE")}, maintenance={OLD: [event()]}))
    reason = f"{R} maintenance ocid1.instancemaintenanceevent.x from {int(NOW + 600)}"
    node = slurm("IDLE", ["DRAIN", "MAINT", "RESERVED"], reason + " [root@2026-12-05T10:01:00]")
    out = run(first["records"], seen({"gpu1": node}, maintenance={OLD: [event()]}), NOW + 3)
    assert out["actions"] == [] and out["records"]["gpu1"]["confirmed"] is True
    out = run(out["records"], seen({"gpu1": node}, maintenance={OLD: [event("SUCCEEDED")]}), NOW + 6)
    assert out["actions"] == [
        {"node": "gpu1", "do": "unreserve", "name": "oci_gpu_repair_gpu1"},
        {"node": "gpu1", "do": "resume"},
    ]
    assert out["records"] == {}


# -- odd records -----------------------------------------------------------------------------------
def test_a_record_for_a_node_slurm_no_longer_knows_is_kept_untouched():
    out = run({"gpu9": rec("joining", new_instance_id=NEW)}, seen({"gpu1": slurm()}))
    assert out["records"] == {"gpu9": rec("joining", new_instance_id=NEW)}
    assert out["actions"] == []
