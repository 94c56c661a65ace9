#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_ssp.sh - start a serene-switch whose job 0 runs the SSP policy, then
# the SSP helper test under serene-run against it; stop the switch (by PID).
# usage: run_ssp.sh SERENE_SWITCH SERENE_RUN PYTHON TEST_PY [ARGS...]
set -uo pipefail
SWITCH=$1 run=$2 py=$3
shift 3
S=2
# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init torch-ssp
start_switch 127.0.0.1:0 --job "0:2,policy=ssp:$S" || fail "serene-switch did not start"
timeout 150 "$run" -n 2 --switch "127.0.0.1:$port" -- "$py" "$@" --staleness "$S"
rc=$?
[ "$rc" -eq 0 ] || fail "serene-run exited with status $rc"
stop_switch
echo "PASS"
