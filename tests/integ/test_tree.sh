#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_tree.sh CASE AR_WORKER SSP_WORKER - an aggregation tree of real
# serene-switches on loopback (p4/README.md, "Trees"): a root (jobs 5, 7
# and 9 of the 4 workers: store and barrier; jobs 6, 8 and 10 of the 2
# leaves) and 2 leaves (jobs 5, 7 and 9, workers 0-1 and 2-3), 4 real worker processes, no privileges (the
# namespace version, with loss on real links, is tests/fabric's
# fabric-tree). Runs in the integ suite, so under the sanitizers too.
#
#   faults       every switch drops 5%, duplicates 2% and reorders 5% of
#                what it receives and sends (--loss --dup --reorder): the
#                allreduce within the bound, the SSP store exact, with
#                retransmissions, and SSP steps (relayed to the root, rows
#                relayed down) holding every step of their clock.
#   root-killed  the root is SIGKILLed while the ranks are in a long
#                allreduce (SERENE_TIMEOUT_MS=2000): each leaf keeps
#                answering its workers' probes AR_HELD, yet every rank
#                returns SERENE_ERR_TIMEOUT within its deadline + 1 s (as
#                the rank times its call) and none runs 10 s.
#
# Every wait is bounded; switches and ranks are stopped by PID; a failure
# prints "FAIL: ..." and exits 1.
set -uo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 faults|root-killed AR_WORKER SSP_WORKER" >&2
    exit 2
fi
CASE=$1 AR=$2 SSP=$3
# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init "tree-$CASE"
HARNESS_LOGS=(root.log l0.log l1.log w0.log w1.log w2.log w3.log)
SW=${SERENE_SWITCH_BIN:-}
[ -n "$SW" ] && [ -x "$SW" ] || fail "no serene-switch at '$SW' (set SERENE_SWITCH_BIN)"

# tree FAULT_ARGS...: the root and the leaves, each with FAULT_ARGS; sets
# root_pid and leaf_port[0..1].
tree() {
    local l rp
    spawn "$work/root.log" "$SW" --listen 127.0.0.1:0 --port-file "$work/root.port" \
        --job 5:4,store=4096 --job 6:2,store=0 --job 7:4,store=4096 --job 8:2,store=0 \
        --job 9:4,store=4096 --job 10:2,store=0 "$@" --seed 1
    root_pid=$spawned
    wait_grep "$work/root.port" '^[0-9]+$' 10 || fail "the root did not start"
    rp=$(cat "$work/root.port")
    for l in 0 1; do
        spawn "$work/l$l.log" "$SW" --listen 127.0.0.1:0 --port-file "$work/l$l.port" \
            --job "5:4,store=0,local=$((2 * l))-$((2 * l + 1)),up=127.0.0.1:$rp,upjob=6,member=$l" \
            --job "7:4,store=0,local=$((2 * l))-$((2 * l + 1)),up=127.0.0.1:$rp,upjob=8,member=$l" \
            --job "9:4,store=0,local=$((2 * l))-$((2 * l + 1)),up=127.0.0.1:$rp,upjob=10,member=$l" \
            "$@" --seed $((2 + l))
        wait_grep "$work/l$l.port" '^[0-9]+$' 10 || fail "leaf $l did not start"
        leaf_port[l]=$(cat "$work/l$l.port")
    done
}

# ranks JOB TIMEOUT_MS CMD...: the 4 ranks on their leaves; sets pids.
ranks() {
    local job=$1 t=$2 r n
    shift 2
    n=$(nonce)
    pids=()
    for r in 0 1 2 3; do
        spawn "$work/w$r.log" env SERENE_TIMEOUT_MS="$t" SERENE_JOB="$job" SERENE_RANK=$r \
            SERENE_WORLD_SIZE=4 SERENE_SWITCH="127.0.0.1:${leaf_port[r / 2]}" SERENE_JOB_NONCE="$n" "$@"
        pids+=("$spawned")
    done
}

# wait_ranks LIMIT_S: every rank reaped; all=0 iff all exited 0.
wait_ranks() {
    local r
    all=0
    for r in 0 1 2 3; do
        wait_pid "${pids[$r]}" "$1"
        [ "$rc" = 0 ] || all=1
        statuses[r]=$rc
        tail -n 1 "$work/w$r.log"
    done
}

case $CASE in
faults)
    tree --loss 0.05 --dup 0.02 --reorder 0.05
    ranks 5 30000 "$AR" --elems 256 --sizes 1,255,257,100000 --reps 2 --seed 31 --expect-retrans
    wait_ranks 120
    [ "$all" = 0 ] || fail "allreduce through the tree with faults at every switch"
    # Another job: a LEAVE lost to the faults would keep job 5 in use
    # until its lease lapses.
    ranks 7 30000 "$SSP" store --iters 6 --offset 100 --count 600 --capacity 4096 --expect-retrans --seed 32
    wait_ranks 120
    [ "$all" = 0 ] || fail "the SSP store through the tree with faults at every switch"
    ranks 9 30000 "$SSP" step --clocks 10 --offset 100 --count 600 --staleness 0 --seed 34
    wait_ranks 120
    [ "$all" = 0 ] || fail "SSP steps through the tree with faults at every switch"
    ;;
root-killed)
    tree
    ranks 5 2000 "$AR" --elems 256 --sizes 4000000 --reps 50 --seed 33
    for r in 0 1 2 3; do # joined, however busy the machine ...
        wait_grep "$work/w$r.log" "^rank $r/4: joined in" 30 || fail "rank $r did not join in 30 s"
    done
    sleep 0.5 # ... and in its calls of 16 MiB
    kill -KILL "$root_pid"
    t0=$(date +%s%N)
    wait_ranks 10
    took=$(ms_since "$t0")
    for r in 0 1 2 3; do
        grep -q 'SERENE_ERR_TIMEOUT' "$work/w$r.log" || fail "rank $r did not report SERENE_ERR_TIMEOUT"
        [ "${statuses[r]}" != 124 ] || fail "rank $r still ran 10 s after the root was killed"
        # The deadline, timed around the call by the rank itself (its
        # line "call N took T ms, deadline D ms" past D + 1 s); the time
        # to here also counts the processes' exit (ASan's leak check).
        ! grep -q 'took [0-9]* ms, deadline' "$work/w$r.log" ||
            fail "rank $r: $(grep -m1 'took [0-9]* ms, deadline' "$work/w$r.log")"
    done
    echo "every rank returned SERENE_ERR_TIMEOUT at its deadline; all exited $took ms after the root's death"
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
stop_pids
for f in root l0 l1; do
    grep -o ' job=[0-9]* .*' "$work/$f.log" | tr ' ' '\n' |
        grep -E '^(job|results|shadow_replies|held|naks|pushes|clocks|up_[a-z]+|down_relayed)=' | tr '\n' ' ' |
        sed "s/^/$f: /"
    echo
done
echo "PASS: tree-$CASE"
