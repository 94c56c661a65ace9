#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_memif_churn.sh FAULT_WORKER SSP_CHECK MEMIF_FLOOD [CYCLES [SECONDS]]
# - memif clients connecting, running and leaving, cleanly or not, while
# one serene-switch --dpdk ($SERENE_SWITCH_BIN) keeps running: the switch
# must survive every connect and disconnect and keep serving exact results.
# A segfault of serene-switch here is the memif reconnect crash that
# dpdk_guard.c prevents (EAL's interrupt thread unmapped a leaving client's
# memory while the switch's loop copied frames out of it or into it).
#
# The switch has 6 memif servers (one socket each; 16 KiB buffers, jobs of
# 2048 values per packet: 8 KiB frames, which take the switch longest to
# copy). Ports 0-2 serve job 0 (3 workers), ports 3-4 job 1 (2 workers),
# port 5 memif_flood. Job 1 is the steady job: its two ranks run
# `fault_worker exact` rounds the whole time (a new run, new nonce,
# whenever one ends), so the switch keeps receiving and sending while
# other clients leave. Cycles take turns:
#   - clean: 3 new processes (new memif clients, new nonce) run a short
#     `fault_worker exact` on job 0 (allreduce, push, clock, pull, clock,
#     each checked exactly), send LEAVE and exit; the switch's `status 0`
#     must then show the cycle's nonce and 3 bound;
#   - abrupt: the same 3, with a long run; once every rank reported a
#     round, they are SIGKILLed mid-call, in a random order with random
#     gaps (0-20 ms), so their memif clients vanish without a word,
#     often while the switch sends to them;
#   - flood: memif_flood, 8 times in a row, connects to port 5, fills
#     its ring with 8 KiB frames for 10-50 ms and stops its port with the
#     ring still full: the switch is copying its frames when the client
#     leaves (before the fix, one such leave in 10 to 20 crashed the
#     switch).
# After each clean or abrupt cycle job 0 must have no live binding within
# the lease (0.3 s) + 10 s (so the next run's new nonce is admitted), and
# at least half the clean runs none right away (their LEAVEs were read);
# after every cycle the switch must still run (a crash fails the test
# with its exit status; its log shows the stack). At the end the steady
# job's last run must be exact, and the switch's counters show DPDK
# traffic and no answer without a learnt route; dpdk_unmap_waits counts
# the unmaps that had to wait for a burst in progress.
#
# CYCLES (default 36) cycles, or fewer when SECONDS (default 40) run out
# first (a loaded machine); at least one flood cycle must fit. The
# hour-long form: `test_memif_churn.sh FAULT_WORKER SSP_CHECK MEMIF_FLOOD 600
# 3600`. MEMIF_CHURN_CPU=N pins the switch to CPU N (see below).
#
# Needs root (DPDK's EAL without hugepages, memif): exits 77 (skip)
# otherwise. Processes are stopped by their PIDs; every wait is bounded;
# the temporary directory is removed. A failure prints "FAIL: ..." and
# exits 1.
set -uo pipefail

if [ $# -lt 3 ] || [ $# -gt 5 ]; then
    echo "usage: $0 FAULT_WORKER SSP_CHECK MEMIF_FLOOD [CYCLES [SECONDS]]" >&2
    exit 2
fi
FW=$1 CHECK=$2 FLOOD=$3 CYCLES=${4:-36} BUDGET_S=${5:-40}
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: memif-churn: DPDK virtual devices need root"
    exit 77
fi

EAL="--no-huge -m 256 --no-pci --no-shconf --log-level=warning"
# Jumbo frames (2048 values, 8 KiB): a frame takes the switch longer to
# copy out of a memif ring or into one, which is when a client that goes
# away matters. memif buffers of 16 KiB on both ends (test_dpdk.sh,
# memif-jumbo-n2: DPDK 22.11's memif garbles frames spread over buffers).
MEMIF_OPT=,bsize=16384 ELEMS=2048
CHURN_N=3 STEADY_N=2
FLOOD_PORT=$((CHURN_N + STEADY_N)) # the switch's port for memif_flood
FLOOD_ROUNDS=8
LEASE_S=0.3
WAIT_S=60 # a run's processes end within this (they end in a few seconds)

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init memif-churn
HARNESS_TAIL=30
RANDOM=34 # the delays and kill orders repeat from run to run
steady=()        # PIDs of the steady job's current run
steady_runs=0
abrupt=0 clean=0 floods=0 left=0

# switch_alive WHEN: fail with the switch's exit status if it is gone.
switch_alive() {
    kill -0 "$swpid" 2>/dev/null && return 0
    local st=0
    wait "$swpid" || st=$?
    swpid=""
    fail "serene-switch died (exit status $st$([ "$st" -gt 128 ] && echo ", signal $((st - 128))")) $1"
}

# worker OUT JOB RANK N NONCE ARGS...: a fault_worker exact process on the
# dpdk transport, memif client of socket (JOB * CHURN_N + RANK); sets
# spawned. Its source address is its own (10.34.JOB.RANK+1): the switch
# routes answers by it. Not under timeout(1): a SIGKILL must reach the
# worker itself.
worker() {
    local out=$1 job=$2 r=$3 n=$4 nonce=$5
    shift 5
    spawn "$out" env SERENE_RANK="$r" SERENE_WORLD_SIZE="$n" SERENE_JOB="$job" \
        SERENE_JOB_NONCE="$nonce" SERENE_SWITCH="127.0.0.1:$port" \
        SERENE_BIND="10.34.$job.$((r + 1)):40000" SERENE_TRANSPORT=dpdk SERENE_TIMEOUT_MS=20000 \
        SERENE_DPDK_EAL_ARGS="$EAL --vdev=net_memif0,role=client,socket=$work/memif$((job * CHURN_N + r))$MEMIF_OPT" \
        SERENE_DPDK_PORT=net_memif0 "$FW" exact "$@"
}

# steady_tick: start the steady job's next run once its last one ended
# (exact, exit 0) and its bindings are gone; the first call starts the
# first run.
steady_tick() {
    local r p
    for p in "${steady[@]+"${steady[@]}"}"; do
        kill -0 "$p" 2>/dev/null && return 0
    done
    steady_end
    job_idle 1 "the steady job's run $steady_runs ended"
    local nonce
    nonce=$(nonce)
    steady=()
    for r in $(seq 0 $((STEADY_N - 1))); do
        worker "$work/steady$r.out" 1 "$r" "$STEADY_N" "$nonce" --rounds 40 --words 3000 \
            --sizes 1,2049,40000
        steady+=("$spawned")
    done
    steady_runs=$((steady_runs + 1))
}

# steady_end: reap the steady job's run (bounded); it must have been exact.
steady_end() {
    local r bad=""
    for r in "${!steady[@]}"; do
        wait_pid "${steady[r]}" "$WAIT_S"
        if [ "$rc" -ne 0 ] || ! grep -q 'every allreduce and pull exact' "$work/steady$r.out"; then
            bad+=" $r (exit $rc)"
        fi
    done
    if [ -n "$bad" ]; then
        for r in "${!steady[@]}"; do
            show "$work/steady$r.out" "steady $r"
        done
        fail "run $steady_runs of the steady job: rank$bad not exact"
    fi
    steady=()
}

# job_idle JOB WHY: JOB has no live binding within the lease + 10 s, so
# its next run (a new nonce) may join. A run that ended cleanly sent LEAVE,
# but a memif client may close before the switch read its last frame: its
# binding then lapses with the lease, like a killed run's.
job_idle() {
    for _ in $(seq 200); do
        [ "$(ctl_field "status $1" live)" = 0 ] && return 0
        sleep 0.05
    done
    fail "job $1 still has live bindings 10 s after $2: $("$CHECK" ctl "$ctl" status "$1")"
}

# flood_cycle C: memif_flood on the flood port, FLOOD_ROUNDS times: it
# connects, fills the ring for 10-50 ms and stops its port with the ring
# still full, so the switch is copying its frames when the client leaves.
flood_cycle() {
    local c=$1
    spawn "$work/flood.out" "$FLOOD" \
        "$EAL --vdev=net_memif0,role=client,socket=$work/memif$FLOOD_PORT$MEMIF_OPT" net_memif0 \
        "127.0.0.1:$port" 10.34.9.1:40000 "$((10 + RANDOM % 41))" "$FLOOD_ROUNDS"
    wait_pid "$spawned" "$WAIT_S"
    [ "$rc" -eq 0 ] || {
        show "$work/flood.out" flood
        switch_alive "in cycle $c, while memif_flood ran"
        fail "cycle $c: memif_flood exited with $rc"
    }
    switch_alive "in cycle $c, after memif_flood left with its ring full"
    floods=$((floods + 1))
}

# churn_cycle C ABRUPT: job 0's cycle C (see the header).
churn_cycle() {
    local c=$1 kill_them=$2 nonce r pids=()
    nonce=$(nonce)
    for r in $(seq 0 $((CHURN_N - 1))); do
        if [ "$kill_them" = 1 ]; then
            worker "$work/churn$r.out" 0 "$r" "$CHURN_N" "$nonce" --rounds 500 --progress \
                --words 5000 --sizes 1,2047,2049,200000
        else
            worker "$work/churn$r.out" 0 "$r" "$CHURN_N" "$nonce" --rounds 2 --words 3000 \
                --sizes 1,2049,30000
        fi
        pids+=("$spawned")
    done
    if [ "$kill_them" = 1 ]; then
        for r in $(seq 0 $((CHURN_N - 1))); do
            wait_grep "$work/churn$r.out" "^rank $r: round 0 ok" "$WAIT_S" || {
                show "$work/churn$r.out" "$r"
                switch_alive "in cycle $c, before rank $r finished a round"
                fail "cycle $c: rank $r did not finish a round in $WAIT_S s"
            }
        done
        sleep "0.0$((RANDOM % 4))$((RANDOM % 10))"
        # A random order, a random gap: some die while others still send.
        kill_scattered "$c" 3 "${pids[@]}" || {
            show "$work/churn$early.out" "$early"
            fail "cycle $c: rank $early ended before its SIGKILL"
        }
        switch_alive "in cycle $c, after $CHURN_N memif clients were SIGKILLed"
        job_idle 0 "cycle $c's run was killed"
        abrupt=$((abrupt + 1))
        return 0
    fi
    for r in $(seq 0 $((CHURN_N - 1))); do
        wait_pid "${pids[r]}" "$WAIT_S"
        if [ "$rc" -ne 0 ] || ! grep -q 'every allreduce and pull exact' "$work/churn$r.out"; then
            show "$work/churn$r.out" "$r"
            switch_alive "in cycle $c"
            fail "cycle $c: rank $r exited with $rc, not exact"
        fi
    done
    switch_alive "in cycle $c, after $CHURN_N memif clients left"
    local st
    st=$("$CHECK" ctl "$ctl" status 0) || fail "control 'status 0': $st"
    [[ $st =~ \ bound=$CHURN_N\  ]] && [[ $st =~ \ nonce=$nonce\  ]] ||
        fail "cycle $c: after a clean run, want nonce=$nonce bound=$CHURN_N: $st"
    [[ $st =~ \ live=0\  ]] && left=$((left + 1)) # every LEAVE read before the lease
    job_idle 0 "cycle $c's run ended"
    clean=$((clean + 1))
}

vdevs=""
for p in $(seq 0 "$FLOOD_PORT"); do
    vdevs+=" --vdev=net_memif$p,role=server,socket=$work/memif$p$MEMIF_OPT"
done
# MEMIF_CHURN_CPU=N pins the switch (its data path and EAL's interrupt
# thread) to CPU N: the interrupt thread then preempts the data path at
# any point of a burst.
[ -n "${MEMIF_CHURN_CPU:-}" ] && NSX=(taskset -c "$MEMIF_CHURN_CPU")
start_switch 127.0.0.1:0 --dpdk "$EAL$vdevs" --lease "$LEASE_S" \
    --job "0:$CHURN_N:$ELEMS,store=65536" --job "1:$STEADY_N:$ELEMS,store=65536" || fail "serene-switch did not start"
grep -q "on dpdk" "$work/switch.log" || fail "the switch is not in DPDK mode"

t0=$(date +%s%N)
c=0
while [ "$c" -lt "$CYCLES" ] && [ "$(ms_since "$t0")" -lt $((BUDGET_S * 1000)) ]; do
    steady_tick
    case $((c % 3)) in
    0) churn_cycle "$c" 0 ;;
    1) churn_cycle "$c" 1 ;;
    *) flood_cycle "$c" ;;
    esac
    c=$((c + 1))
done
steady_end
switch_alive "at the end"
echo "memif-churn: $c cycles in $(ms_since "$t0") ms: $clean clean runs ($left with every LEAVE read), $abrupt runs SIGKILLed" \
    "mid-call ($((CHURN_N * abrupt)) clients), $((FLOOD_ROUNDS * floods)) floods left with a" \
    "full ring;" \
    "$steady_runs runs of the steady job"
[ "$floods" -ge 1 ] || fail "only $c cycles fit in $BUDGET_S s: no flood cycle (a slow machine?)"
# A clean worker's LEAVE reaches the switch (the dpdk transport gives its
# last frames a moment before it stops its port): half the clean runs at
# least, so that a loaded machine's late reads do not fail it (before
# that grace, 2 of 12).
[ $((2 * left)) -ge "$clean" ] || fail "only $left of $clean clean runs had every LEAVE read"
stop_switch
line=$(grep "serene-switch: switch " "$work/switch.log" | tail -1)
echo "switch: $line" | tr ' ' '\n' | grep -E '^dpdk_' | tr '\n' ' '
echo
[[ $line =~ dpdk_rx=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
    fail "the switch received nothing on its DPDK ports"
[[ $line =~ dpdk_tx_no_route=0 ]] || fail "the switch had answers with no learnt route"
! grep -Eq 'Sanitizer|runtime error' "$work/switch.log" || fail "the sanitizers reported on the switch"
echo "PASS: memif-churn"
