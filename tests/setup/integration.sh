#!/usr/bin/env bash
# Copyright: contributors to the oci_gpu.cluster project
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The integration tests in two pytest runs at once (make test's last stage).
#
# Why: a lab scenario keeps this 2-core machine about 40 % idle (SSH round trips, systemd, sleeps in
# the day-2 proofs), so two of them side by side finish well before the same two one after the other.
# The lab is built for it: every scenario and lab has its own containers and network
# (test_platform_names_and_networks_are_unique_and_local), and labctl takes a lock around the
# shared IMDS emulator.
#
# Measured (2026-12-07, b9e2e6d, with other work on the machine): 3,124 s side by side against 3,539 s
# one after the other in the run before; each scenario takes about 1.75 times as long beside another
# (trixie 1,762 s, bookworm 1,905 s), which is why a scenario's time limit is 3,600 s
# (OCI_GPU_LAB_MOLECULE_TIMEOUT). On an otherwise idle machine (fresh clone, 2026-12-07) the stage took
# 2,334 s: stream a 2,334 s (trixie 1,321 s), stream b 2,096 s (bookworm 1,419 s). The runs are balanced
# by those times:
#   stream a: the trixie and storage scenarios, then the lab-cloud module (capacity, repair, elastic);
#   stream b: everything else (bookworm with its canary steps, HA, lab_imds and the rest).
# Each line of output carries its stream's name; each run prints its own summary, durations and
# scenario times. The script fails if either run fails (pytest's 5, "no test collected", counts as
# a pass, as in make pytest). OCI_GPU_INTEGRATION_SERIAL=1 runs the same tests one after the other.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

A_TESTS=(
  "tests/integration/test_molecule.py::test_molecule_scenario[slurm_gpu_accounting_trixie]"
  "tests/integration/test_molecule.py::test_molecule_scenario[storage_shared_bookworm]"
  "tests/integration/test_lab_cloud.py"
)
B_ARGS=(
  tests/integration
  "--deselect=${A_TESTS[0]}"
  "--deselect=${A_TESTS[1]}"
  "--ignore=${A_TESTS[2]}"
)
PYTEST=(pytest --durations=12 "$@")
export OCI_GPU_LAB_REQUIRED=1

ok() { [ "$1" -eq 0 ] || [ "$1" -eq 5 ]; }

if [ "${OCI_GPU_INTEGRATION_SERIAL:-0}" = 1 ]; then
  "${PYTEST[@]}" tests/integration
  rc=$?
  ok "$rc"
  exit $?
fi

started=$(date +%s)
pids=()
stop() {
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null; done
  wait
  exit 130
}
trap stop INT TERM

# Each stream in its own process group (set -m), so an interrupt can end it by its id.
set -m
( "${PYTEST[@]}" "${A_TESTS[@]}" 2>&1 | sed -u 's/^/a| /'; exit "${PIPESTATUS[0]}" ) &
pids+=($!)
( "${PYTEST[@]}" "${B_ARGS[@]}" 2>&1 | sed -u 's/^/b| /'; exit "${PIPESTATUS[0]}" ) &
pids+=($!)
set +m

wait "${pids[0]}"
rc_a=$?
wait "${pids[1]}"
rc_b=$?
echo "integration: stream a exit $rc_a, stream b exit $rc_b, $(($(date +%s) - started)) s wall"
ok "$rc_a" && ok "$rc_b"
