#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_ssp.sh CASE SERENE_RUN SSP_WORKER SSP_CHECK [AR_WORKER] - integration tests of the
# SSP parameter store and barrier: a real serene-switch ($SERENE_SWITCH_BIN)
# on 127.0.0.1 (port 0, --port-file, --control in a temporary directory)
# and 4 real ssp_worker processes.
#
#   barrier     rank 3 slowed (25 ms per iteration, the others 5 ms), 40
#               clocks under BSP, SSP(1), SSP(3) and ASP (one job each):
#               ssp_check verifies from every rank's log that no clock()
#               returned at clock c before every rank had called clock() for
#               c - s; under ASP no rank is ever held. The fast ranks'
#               time in clock() under each policy is printed, not compared:
#               with a straggler in every clock SSP(3) saves them about 3
#               of its delays in 40, less than a loaded machine's noise
#               (what SSP saves a job is measured by ./serene.sh demo).
#   store-loss  push / clock / delta pull / pull / clock for 20 iterations
#               under 5% loss and 2% duplication: exact modular sums across
#               accumulator wraps, range errors, floats, retransmissions.
#   hot-swap    200 clocks with random sleeps while `ssp_check swap` asks,
#               at random clocks, for SSP(3), ASP, then BSP: every rank saw
#               the same policy at every clock, and the changes happened in
#               order at the clocks the switch announced.
#   step        serene_step of 1000 words at word 100 (rows 0-4 of 256, the
#               first and last in part), 30 clocks, rank 3 slowed, under
#               BSP, SSP(2) (read as SERENE_STEP_OTHERS into a local model)
#               and ASP (one job each): every rank checks at every clock
#               that its words hold exactly its own steps and every other
#               word every step of clocks <= c - s (ssp_worker step), and
#               the misuse errors; ssp_check checks the barrier from every
#               rank's log (no step of clock c returned before every rank
#               had begun its step of c - s) and the policy each step saw.
#   step-loss   the same under BSP and SSP(3) with 10% loss, 10%
#               duplication and 10% reordering of every packet the switch
#               sends and receives: the same checks, and packets were
#               resent.
#   tofino-params  the switch set to the Tofino program's job values
#               (SR_TNA_ELEMS values per packet and SR_TNA_AR_SLOTS slots,
#               read from p4/tna/tna_headers.p4: 32 and 256) with 5% loss
#               and 2% duplication, its store (SR_TNA_STORE_ROWS rows of a
#               packet's values; rows=whole: whole rows only, as the
#               program; the library pads requests of any offset and count),
#               and what that program serves: every
#               rank joins with those values from JOIN_ACK (its log line);
#               the barrier under BSP and SSP(3), rank 3 slowed, checked by
#               ssp_check; the store's exact sums; allreduce (AR_WORKER,
#               ar_worker) of sizes around a packet and past 3 windows,
#               each result within its bound.
#   switch-killed  the switch is SIGKILLed ~1 s into a push/clock/pull loop
#               (SERENE_TIMEOUT_MS=2000; ranks 0-1 blocking calls, ranks 2-3
#               the *_start forms): all 4 ranks, run without the launcher so
#               none is stopped early, report SERENE_ERR_TIMEOUT within the
#               deadline + 1 s of the kill and exit 3.
#
# Every wait is bounded; the switch is stopped by its PID; the temporary
# directory is removed; a failure prints "FAIL: ..." and exits 1.
# SSP_SEED repeats a hot-swap schedule (it is printed).
set -uo pipefail

if [ $# -lt 4 ] || [ $# -gt 5 ]; then
    echo "usage: $0 barrier|store-loss|hot-swap|switch-killed|step|step-loss|tofino-params SERENE_RUN SSP_WORKER SSP_CHECK [AR_WORKER]" >&2
    exit 2
fi
CASE=$1 RUN=$2 WORKER=$3 CHECK=$4 AR_WORKER=${5:-}
N=4
# Deadline of every library call outside the killed case: a hang fails fast.
export SERENE_TIMEOUT_MS=10000

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init "$CASE"

case_barrier() {
    local pols=(bsp ssp:1 ssp:3 asp) j pol dir out
    local -A wait_ns
    local args=()
    for j in 0 1 2 3; do
        args+=(--job "$j:$N,store=64,policy=${pols[$j]}")
    done
    start_switch 127.0.0.1:0 "${args[@]}" || fail "serene-switch ${args[*]} exited at startup"
    for j in 0 1 2 3; do
        pol=${pols[$j]}
        dir=$work/${pol/:/}
        mkdir "$dir"
        ranks "barrier-${pol/:/}" 60 "$N" --job "$j" -- \
            "$WORKER" clocks --clocks 40 --compute-ms 5 --slow-rank 3 --slow-ms 25 --out "$dir"
        local extra=()
        [ "$pol" = asp ] && extra=(--no-holds)
        out=$(timeout 20 "$CHECK" clocks "$dir" "$N" 40 --expect "$pol" --fast 0,1,2 \
            "${extra[@]+"${extra[@]}"}")
        local crc=$?
        # shellcheck disable=SC2001
        sed "s/^/    /" <<<"$out"
        [ "$crc" -eq 0 ] || fail "barrier under $pol: the logs break the barrier (see above)"
        wait_ns[${pol/:/}]=$(sed -n 's/^fast_wait_ns=//p' <<<"$out")
        [ -n "${wait_ns[${pol/:/}]}" ] || fail "no fast_wait_ns from ssp_check under $pol"
    done
    echo "fast ranks' total wait (ms): BSP $((wait_ns[bsp] / 1000000))" \
        "SSP(1) $((wait_ns[ssp1] / 1000000)) SSP(3) $((wait_ns[ssp3] / 1000000))" \
        "ASP $((wait_ns[asp] / 1000000))"
}

case_store() {
    start_switch 127.0.0.1:0 --job "0:$N,store=2048,policy=bsp" --loss 0.05 --dup 0.02 --seed 7 || fail "serene-switch did not start"
    # 1000 words at 100 span rows 0-4 of 256; floats go to 1110..1409.
    ranks store 60 "$N" -- "$WORKER" store --iters 20 --offset 100 --count 1000 --capacity 2048 \
        --seed 5 --expect-retrans
    [ "$(grep -c 'store: 20 iterations' "$work/store.out")" -eq "$N" ] ||
        fail "not every rank reported its 20 iterations"
}

case_hot_swap() {
    local seed=${SSP_SEED:-$(($(date +%s) % 100000))} dir=$work/swap changes
    echo "seed=$seed (SSP_SEED=$seed repeats the schedule)"
    mkdir "$dir"
    start_switch 127.0.0.1:0 --job "0:$N,store=64,policy=bsp" || fail "serene-switch did not start"
    spawn "$work/swap.out" timeout 40 "$CHECK" swap "$ctl" 0 "$seed"
    local ctlpid=$spawned
    ranks hot-swap 60 "$N" -- "$WORKER" clocks --clocks 200 --jitter-us 4000 --seed "$seed" --out "$dir"
    wait_pid "$ctlpid" 5
    [ "$rc" -eq 124 ] && echo "controller still running after the job: killed"
    sed "s/^/    /" "$work/swap.out"
    [ "$rc" -eq 0 ] || fail "the controller did not get its 3 changes in (exit $rc; see above)"
    changes=$(sed -n 's/^changes=//p' "$work/swap.out")
    timeout 20 "$CHECK" clocks "$dir" "$N" 200 --seq bsp,ssp:3,asp,bsp --changes "$changes" |
        sed "s/^/    /"
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail "the decision logs disagree (see above)"
}

# step_jobs NAME POLICY:STALENESS[:others] ... - one job per policy on the
# switch already started, 4 ranks of `ssp_worker step` each.
step_jobs() {
    local name=$1 j=0 spec pol st others expect out
    shift
    for spec in "$@"; do
        IFS=: read -r pol st others <<<"$spec"
        local extra=() dir=$work/$name-$pol
        mkdir "$dir"
        [ "$others" = others ] && extra=(--others)
        ranks "$name-$pol" 90 "$N" --job "$j" -- "$WORKER" step --clocks 30 --offset 100 \
            --count 1000 --staleness "$st" --compute-ms 2 --slow-rank 3 --slow-ms 8 --out "$dir" \
            "${extra[@]+"${extra[@]}"}"
        [ "$(grep -c 'step: 30 clocks' "$work/$name-$pol.out")" -eq "$N" ] ||
            fail "$name under $pol: not every rank reported its 30 clocks"
        case $st in -1) expect=asp ;; 0) expect=bsp ;; *) expect=ssp:$st ;; esac
        out=$(timeout 20 "$CHECK" clocks "$dir" "$N" 30 --expect "$expect")
        local crc=$?
        # shellcheck disable=SC2001
        sed "s/^/    /" <<<"$out"
        [ "$crc" -eq 0 ] || fail "$name under $pol: the step logs break the barrier (see above)"
        j=$((j + 1))
    done
}

case_step() {
    start_switch 127.0.0.1:0 --job "0:$N,store=2048,policy=bsp" \
        --job "1:$N,store=2048,policy=ssp:2" --job "2:$N,store=2048,policy=asp" ||
        fail "serene-switch did not start"
    step_jobs step bsp:0 ssp2:2:others asp:-1
}

case_step_loss() {
    start_switch 127.0.0.1:0 --job "0:$N,store=2048,policy=bsp" \
        --job "1:$N,store=2048,policy=ssp:3" --loss 0.1 --dup 0.1 --reorder 0.1 --seed 11 ||
        fail "serene-switch did not start"
    step_jobs step-loss bsp:0 ssp3:3
    grep -q 'resent [1-9]' "$work/step-loss-bsp.out" "$work/step-loss-ssp3.out" ||
        fail "10% loss, yet no rank resent a packet"
}

case_tofino_params() {
    local h e s rows j r
    h=$(dirname "$0")/../../p4/tna/tna_headers.p4
    e=$(sed -n 's/^#define SR_TNA_ELEMS \([0-9]*\).*/\1/p' "$h")
    s=$(sed -n 's/^#define SR_TNA_AR_SLOTS \([0-9]*\).*/\1/p' "$h")
    rows=$(sed -n 's/^#define SR_TNA_STORE_ROWS \([0-9]*\).*/\1/p' "$h")
    if [ -z "$e" ] || [ -z "$s" ] || [ -z "$rows" ]; then
        fail "no SR_TNA_ELEMS / SR_TNA_AR_SLOTS / SR_TNA_STORE_ROWS in $h"
    fi
    echo "the Tofino program's job values: $e values per packet, $s slots, a store of $rows rows of $e"
    start_switch 127.0.0.1:0 --job "0:$N:$e:$s,store=$((rows * e)),policy=bsp,rows=whole" \
        --job "1:$N:$e:$s,store=$((rows * e)),policy=ssp:3,rows=whole" \
        --job "2:$N:$e:$s,store=$((rows * e)),policy=bsp,rows=whole" \
        --job "3:$N:$e:$s,policy=bsp" --loss 0.05 --dup 0.02 --seed 9 ||
        fail "serene-switch did not start"
    export SERENE_LOG_LEVEL=info
    for j in 0 1; do
        local pol=bsp out crc
        [ "$j" -eq 1 ] && pol=ssp:3
        mkdir "$work/clocks$j"
        ranks "tofino-clocks$j" 90 "$N" --job "$j" -- "$WORKER" clocks --clocks 40 --compute-ms 2 \
            --slow-rank 3 --slow-ms 8 --out "$work/clocks$j"
        out=$(timeout 20 "$CHECK" clocks "$work/clocks$j" "$N" 40 --expect "$pol")
        crc=$?
        # shellcheck disable=SC2001
        sed "s/^/    /" <<<"$out"
        [ "$crc" -eq 0 ] || fail "barrier under $pol: the logs break the barrier (see above)"
    done
    # The store as the program serves it: whole rows only (rows=whole, as
    # JOIN_ACK says), so the library pads each request to its row: rows 3
    # to 34 exactly, then 1000 words from word 100 (rows 3 to 34, both
    # ends partial), and 20 words across two rows near the end (the
    # worker also pushes 300 words after them and keeps the last 5 at 0).
    local st
    for st in "$((3 * e)):$((32 * e))" "100:1000" "$((rows * e - 398)):20"; do
        ranks "tofino-store-${st%%:*}" 90 "$N" --job 2 -- "$WORKER" store --iters 20 \
            --offset "${st%%:*}" --count "${st##*:}" --capacity $((rows * e)) --seed 5 \
            --expect-retrans
        [ "$(grep -c 'store: 20 iterations' "$work/tofino-store-${st%%:*}.out")" -eq "$N" ] ||
            fail "store at $st: not every rank reported its 20 iterations"
    done
    for r in $(seq 0 $((N - 1))); do
        grep -q "joined job 2 as worker $r/$N: .*, store in whole rows" "$work"/tofino-store-100.out ||
            fail "worker $r of job 2 did not log a store in whole rows from JOIN_ACK"
    done
    # Allreduce at the program's values per packet and slots, under loss:
    # sizes around a packet and past a window of slots, each result within
    # its bound (ar_worker).
    [ -n "$AR_WORKER" ] || fail "tofino-params needs AR_WORKER (the 5th argument)"
    ranks tofino-allreduce 120 "$N" --job 3 -- "$AR_WORKER" --elems "$e" \
        --sizes "1,$((e - 1)),$e,$((e + 1)),$((e * s * 3 + 5))" --reps 3 --seed 4 --expect-retrans
    for j in 0 1 2 3; do
        for r in $(seq 0 $((N - 1))); do
            grep -q "joined job $j as worker $r/$N: $e elements per packet, pool $s," \
                "$work"/tofino-*.out ||
                fail "worker $r of job $j did not log a join with $e values per packet and pool $s"
        done
    done
}

case_killed() {
    local deadline=2000 r
    local pids=()
    start_switch 127.0.0.1:0 --job "0:$N,store=64,policy=bsp" || fail "serene-switch did not start"
    export SERENE_TIMEOUT_MS=$deadline SERENE_WORLD_SIZE=$N SERENE_JOB=0
    export SERENE_SWITCH=127.0.0.1:$port SERENE_JOB_NONCE
    SERENE_JOB_NONCE=$(nonce)
    local t0
    t0=$(date +%s%N)
    for r in $(seq 0 $((N - 1))); do
        local nb=()
        [ "$r" -ge 2 ] && nb=(--nonblocking)
        spawn "$work/rank$r.out" env SERENE_RANK="$r" timeout -k 2 20 "$WORKER" killed "${nb[@]+"${nb[@]}"}"
        pids+=("$spawned")
    done
    kill_stamped "$swpid" 1000
    swpid=""
    local bad=0
    for r in $(seq 0 $((N - 1))); do
        wait_pid "${pids[$r]}" 30
        show "$work/rank$r.out" "$r"
        if [ "$rc" -ne 3 ]; then
            local why="its pending call did not end with SERENE_ERR_TIMEOUT by its deadline"
            [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && why="it still hung 20 s after it started"
            echo "FAIL: rank $r exited with $rc, want 3: $why"
            bad=1
            continue
        fi
        # Every op that was pending (one call, or three started ops) must
        # have returned after the kill and within the deadline + 1 s of it.
        local first_t last_t it
        first_t=$(sed -n 's/.* returned [A-Z_]* at \([0-9]*\) ns after.*/\1/p' "$work/rank$r.out" | sort -n | head -1)
        last_t=$(sed -n 's/.* returned [A-Z_]* at \([0-9]*\) ns after.*/\1/p' "$work/rank$r.out" | sort -n | tail -1)
        it=$(sed -n 's/.*returned SERENE_ERR_TIMEOUT at .*, iteration \([0-9]*\)$/\1/p' "$work/rank$r.out" | head -1)
        if [ -z "$first_t" ] || [ -z "$it" ]; then
            echo "FAIL: rank $r exited 3 without reporting its timed-out call"
            bad=1
        elif [ "$first_t" -le "$kill_ns" ] || [ "$it" -lt 1 ]; then
            echo "FAIL: rank $r: a call failed before the switch was killed, or it never ran"
            bad=1
        elif [ $(((last_t - kill_ns) / 1000000)) -gt $((deadline + 1000)) ]; then
            echo "FAIL: rank $r: a pending call returned $(((last_t - kill_ns) / 1000000)) ms after the kill, past the ${deadline} ms deadline + 1 s"
            bad=1
        else
            echo "rank $r: pending calls ended $(((first_t - kill_ns) / 1000000))..$(((last_t - kill_ns) / 1000000)) ms after the kill"
        fi
    done
    echo "all ranks done $(ms_since "$t0") ms after they started"
    [ "$bad" -eq 0 ] || fail "not every rank's pending call ended with an error by its deadline"
    # Each rank timed its own calls against the deadline above; this only
    # catches a run that hangs (on a busy machine the processes' start and
    # exit take seconds).
    [ "$(ms_since "$t0")" -lt 30000 ] || fail "the run took 30 s or more"
}

start=$(date +%s%N)
case $CASE in
    barrier) case_barrier ;;
    store-loss) case_store ;;
    hot-swap) case_hot_swap ;;
    switch-killed) case_killed ;;
    step) case_step ;;
    step-loss) case_step_loss ;;
    tofino-params) case_tofino_params ;;
    *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
stop_switch
echo "---- switch.log (tail):"
tail -n 8 "$work/switch.log"
echo "PASS: ssp-$CASE in $(ms_since "$start") ms"
exit 0
