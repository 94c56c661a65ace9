#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_stale.sh - the stream mode (serene_torch.StaleSync, test_stale.py) on
# 3 ranks under serene-run, against a serene-switch this script starts and
# stops (by PID) with 10% loss and 10% duplication on every packet.
# usage: run_stale.sh SERENE_SWITCH SERENE_RUN SERENE_CTL PYTHON TEST_PY CASE
#   CASE ssp0, ssp2, ssp4: the job's policy is SSP(s) (BSP for 0), 60 clocks.
#   CASE same4: SSP(4), every rank on the same batches: the model after
#   sync() must be a local SGD's (the lookahead; STALE_LOOKAHEAD=none shows
#   the check failing without it).
#   CASE swap: the job starts under BSP; when rank 0 has ended clock 15,
#   `serene-ctl run` installs SSP(4), and when it has ended clock 35, BSP
#   again, each from the next clock above the switch's high; test_stale.py
#   checks every rank switched at the same two clocks (80 clocks).
set -uo pipefail
[ $# -eq 6 ] || { echo "usage: $0 SERENE_SWITCH SERENE_RUN SERENE_CTL PYTHON TEST_PY ssp0|ssp2|ssp4|same4|swap" >&2; exit 2; }
SWITCH=$1 run=$2 sctl=$3 py=$4 test_py=$5 case=$6
# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init "torch-stale-$case"
faults=(--loss 0.1 --dup 0.1 --seed 7)
case $case in
ssp[0-9]) s=${case#ssp}; pol=$([ "$s" = 0 ] && echo bsp || echo "ssp:$s"); steps=60; extra=() ;;
same4) s=4; pol=ssp:4; steps=60; extra=(--same-data ${STALE_LOOKAHEAD:+--lookahead "$STALE_LOOKAHEAD"}) ;;
swap) s=0; pol=bsp; steps=80; extra=(--expect-switch) ;;
*) fail "unknown case $case" ;;
esac
start_switch 127.0.0.1:0 --job "0:3,policy=$pol" "${faults[@]}" || fail "serene-switch did not start"
spawn "$work/ranks.log" timeout 200 "$run" -n 3 --switch "127.0.0.1:$port" -- \
    "$py" "$test_py" --staleness "$s" --steps "$steps" --dir "$work" "${extra[@]}"
ranks=$spawned
# clock_reached N: rank 0 has ended clock N (it writes its last clock to
# $work/clock); bounded by 120 s.
clock_reached() {
    local i
    for i in $(seq 2400); do
        [ -s "$work/clock" ] && [ "$(cat "$work/clock")" -ge "$1" ] && return 0
        kill -0 "$ranks" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
# set_policy MODE...: serene-ctl run with a one-line policy, installed from
# the next clock above high; the run ends after 1 s (--duration).
set_policy() {
    echo "$*" >"$work/policy.txt"
    "$sctl" run --control "$ctl" --job 0 --duration 1 "$work/policy.txt" >>"$work/ctl.log" 2>&1 ||
        { cat "$work/ctl.log"; fail "serene-ctl run '$*' failed"; }
    echo "serene-ctl installed '$*' when rank 0 was at clock $(cat "$work/clock")"
}
if [ "$case" = swap ]; then
    clock_reached 15 || fail "rank 0 never reached clock 15"
    set_policy ssp 4
    clock_reached 35 || fail "rank 0 never reached clock 35"
    set_policy bsp
fi
wait "$ranks"
rc=$?
forget_pid "$ranks"
show "$work/ranks.log" ranks
[ "$rc" -eq 0 ] || fail "serene-run exited with status $rc"
stop_switch
grep -o 'chaos_[a-z_]*=[0-9]*' "$work/switch.log" | tr '\n' ' '
echo
echo "PASS"
