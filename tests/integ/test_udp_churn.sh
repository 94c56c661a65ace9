#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_udp_churn.sh FAULT_WORKER SSP_CHECK [KILLS [SECONDS]]
# - the workers of one job SIGKILLed mid-call and restarted, again and
# again, on one serene-switch over UDP ($SERENE_SWITCH_BIN, loopback): the
# switch must keep serving each new run of the job exactly, and leak
# nothing of the dead ones (bindings, slots, barrier entries).
#
# Job 0 has 3 workers, a store and the default barrier (BSP), and the
# switch a lease of 0.2 s. Each cycle is a new run: 3 new `fault_worker
# exact --progress` processes with a new nonce (allreduces of 1, 255, 257
# and 20000 values, push, clock, pull, clock, every result checked
# exactly). Once every rank has finished a round (exact: a new run was
# served right), the ranks are SIGKILLed in a random order, with random
# gaps of 0-90 ms, so the first dies mid-call and the others mid-call
# while waiting for it or still sending. Then the switch's `status 0` must
# show no live binding within the lease + 10 s (no LEAVE came: their
# bindings lapse), and the next run joins. Every tenth run, and the last,
# runs to its end instead (12 rounds, exit 0, exact).
#
# Afterwards `status 0` must show the last run's nonce, its 3 workers
# bound and none live, no allreduce slot with a round in progress
# (slots_open=0), no barrier ring entry (ring_entries=0) and low = high;
# and the switch's counters at exit one new incarnation per run
# (resets), at least 3 lapsed bindings per killed run (lapsed), and no
# JOIN refused as JOB_IN_USE (each run waited for the last one's lease).
#
# KILLS (default 200) killed runs, or fewer when SECONDS (default 45) run
# out first (a loaded machine); at least 10 must fit. The full count is
# the default; the meson test passes a time budget that keeps it under a
# minute. Every wait is bounded; processes are stopped by their PIDs; the
# temporary directory is removed. A failure prints "FAIL: ..." and exits 1.
set -uo pipefail

if [ $# -lt 2 ] || [ $# -gt 4 ]; then
    echo "usage: $0 FAULT_WORKER SSP_CHECK [KILLS [SECONDS]]" >&2
    exit 2
fi
FW=$1 CHECK=$2 KILLS=${3:-200} BUDGET_S=${4:-45}
N=3 LEASE_S=0.2 WAIT_S=60 CLEAN_EVERY=10 MIN_KILLS=10

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init udp-churn
HARNESS_TAIL=30
RANDOM=34 # the delays and kill orders repeat from run to run
runs=0 kills=0 cleans=0 left_open=0 left_ring=0

# run_start NONCE ARGS...: the N ranks of a new run; sets pids.
run_start() {
    local nonce=$1 r
    shift
    pids=()
    for r in $(seq 0 $((N - 1))); do
        spawn "$work/rank$r.out" env SERENE_RANK="$r" SERENE_WORLD_SIZE="$N" SERENE_JOB=0 \
            SERENE_JOB_NONCE="$nonce" SERENE_SWITCH="127.0.0.1:$port" SERENE_TIMEOUT_MS=20000 \
            "$FW" exact "$@"
        pids+=("$spawned")
    done
    runs=$((runs + 1))
}

# status_field KEY: KEY= of `status 0`.
status_field() { ctl_field "status 0" "$1"; }

# job_idle WHY: no live binding within the lease + 10 s.
job_idle() {
    for _ in $(seq 200); do
        [ "$(status_field live)" = 0 ] && return 0
        sleep 0.05
    done
    fail "job 0 still has live bindings 10 s after $1: $("$CHECK" ctl "$ctl" status 0)"
}

# killed_run C: cycle C's run, SIGKILLed mid-call once every rank finished
# a round.
killed_run() {
    local c=$1 r st
    run_start "$(nonce)" --progress --rounds 100000 --sizes 1,255,257,20000 --words 300
    for r in $(seq 0 $((N - 1))); do
        wait_grep "$work/rank$r.out" "^rank $r: round 0 ok" "$WAIT_S" || {
            show "$work/rank$r.out" "$r"
            fail "run $runs: rank $r did not finish an exact round in $WAIT_S s"
        }
    done
    sleep "0.0$((RANDOM % 4))$((RANDOM % 10))"
    kill_scattered "$c" 10 "${pids[@]}" || {
        show "$work/rank$early.out" "$early"
        fail "run $runs: rank $early ended before its SIGKILL"
    }
    kills=$((kills + 1))
    # What the dead run left (cleared when the next run joins): shown, not
    # asserted (a kill between two calls leaves nothing).
    st=$("$CHECK" ctl "$ctl" status 0) || fail "control 'status 0': $st"
    [[ $st =~ \ slots_open=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] && left_open=$((left_open + 1))
    [[ $st =~ \ ring_entries=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] && left_ring=$((left_ring + 1))
    job_idle "run $runs was killed"
}

# clean_run: a run to its end, every rank exact.
clean_run() {
    local r nonce
    nonce=$(nonce)
    run_start "$nonce" --rounds 12 --sizes 1,255,257,20000 --words 300
    for r in $(seq 0 $((N - 1))); do
        wait_pid "${pids[r]}" "$WAIT_S"
        if [ "$rc" -ne 0 ] || ! grep -q 'every allreduce and pull exact' "$work/rank$r.out"; then
            show "$work/rank$r.out" "$r"
            fail "run $runs (clean, after $kills killed): rank $r exited with $rc, not exact"
        fi
    done
    cleans=$((cleans + 1))
    last_nonce=$nonce
    job_idle "run $runs ended"
}

start_switch 127.0.0.1:0 --lease "$LEASE_S" --job "0:$N,store=4096" || fail "serene-switch did not start"
t0=$(date +%s%N)
c=0
while [ "$kills" -lt "$KILLS" ] && [ "$(ms_since "$t0")" -lt $((BUDGET_S * 1000)) ]; do
    if [ $((c % CLEAN_EVERY)) -eq $((CLEAN_EVERY - 1)) ]; then
        clean_run
    else
        killed_run "$c"
    fi
    c=$((c + 1))
done
clean_run
echo "udp-churn: $runs runs in $(ms_since "$t0") ms: $kills SIGKILLed mid-call ($((N * kills))" \
    "workers; $left_open left a round open, $left_ring a barrier entry, until the next run)," \
    "$cleans ran to their end exact"
[ "$kills" -ge "$MIN_KILLS" ] || fail "only $kills killed runs fit in $BUDGET_S s (a slow machine?)"

st=$("$CHECK" ctl "$ctl" status 0) || fail "control 'status 0': $st"
echo "status 0: $st"
want=("nonce=$last_nonce" "bound=$N" "live=0" "slots_open=0" "ring_entries=0")
for w in "${want[@]}"; do
    [[ $st =~ \ $w( |$) ]] || fail "after the last run, status 0 lacks $w: something of a dead run is left"
done
[[ $st =~ \ low=([0-9]+)\  ]] && low=${BASH_REMATCH[1]}
[[ $st =~ \ high=([0-9]+)\  ]] && high=${BASH_REMATCH[1]}
[ -n "${low:-}" ] && [ "$low" = "${high:-}" ] || fail "after the last run, low=${low:-?} high=${high:-?}"

stop_switch
line=$(grep -E '^serene-switch: job=0 ' "$work/switch.log" | tail -1)
echo "$line" | tr ' ' '\n' | grep -E '^(resets|lapsed|in_use_refused|leaves|joins)=' | tr '\n' ' '
echo
[[ $line =~ \ resets=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -eq "$runs" ] ||
    fail "the switch counted ${BASH_REMATCH[1]:-?} new incarnations for $runs runs"
[[ $line =~ \ lapsed=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge $((N * kills)) ] ||
    fail "the switch counted ${BASH_REMATCH[1]:-?} lapsed bindings, fewer than the $((N * kills)) killed workers"
[[ $line =~ \ in_use_refused=0 ]] || fail "a run's JOIN was refused as JOB_IN_USE"
! grep -Eq 'Sanitizer|runtime error' "$work/switch.log" || fail "the sanitizers reported on the switch"
echo "PASS: udp-churn"
