#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_ssp.sh - start a serene-switch whose job 0 runs the SSP policy, then
# the SSP helper test under serene-run against it; stop the switch (by PID).
# usage: run_ssp.sh SWITCH_LIB SERENE_SWITCH SERENE_RUN PYTHON TEST_PY [ARGS...]
set -uo pipefail
lib=$1 SWITCH=$2 run=$3 py=$4
shift 4
S=2
work=$(mktemp -d)
swpid=""
fail() { echo "FAIL: $*"; cat "$work/switch.log" 2>/dev/null; stop_switch; rm -rf "$work"; exit 1; }
# shellcheck source=../integ/switch_lib.sh
. "$lib"
trap 'stop_switch; rm -rf "$work"' EXIT
start_switch 127.0.0.1:0 --job "0:2,policy=ssp:$S" || fail "serene-switch did not start"
timeout 150 "$run" -n 2 --switch "127.0.0.1:$port" -- "$py" "$@" --staleness "$S"
rc=$?
[ "$rc" -eq 0 ] || fail "serene-run exited with status $rc"
echo "PASS"
