#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_pace.sh CASE SERENE_RUN AR_WORKER SSP_WORKER SLOW_RELAY - the sender
# against a slow switch: a real serene-switch on 127.0.0.1 behind
# slow_relay, which serves 3000 packets per second (both directions) from a
# queue of 64 and drops what overflows, as BMv2 serves a few thousand; 3
# real workers, unshaped, no privileges.
#
#   relay    allreduces of 1 to 4097 values at 32 values per packet: every
#            result within the bound, and each worker sends at most twice
#            the packets the data needs, probes and resends included
#            (ar_worker --pace; each call's time over the rate's allowance
#            is reported, and checked under SERENE_PACE_STRICT=1); then a
#            store run (push, pull, clock; 129 rows a call) exact through
#            the same relay, the workers sending at most 1.6x the requests
#            and clocks they need (the congestion window: 1.2-1.4x with it,
#            1.8-1.9x with the engine's whole window in flight), and steps
#            of 64 rows (BSP): the workers send at most 3.5x the
#            pieces they need, probes and resends included (the
#            congestion window, as for the allreduce: a full window of 64
#            pieces from 3 workers would overflow the relay's queue every
#            clock). A bound against a flood, not the figure: with the
#            window 1.3-2.2x in most runs, 2.53x and 2.85x in one CI run
#            of a slow hour (whose store run also neared its bound); 2.4-3.9x
#            without it.
#            No rank warns that the path drops trains.
#   trains   the relay also drops every UDP GSO train whole, as
#            simple_switch's packet socket does behind a veth pair: each
#            rank's path test at the join (lib/engine/trains.c) finds it,
#            says so once, sends one datagram per packet from then on, and
#            the same calls and bounds hold.
#
# Every wait is bounded; the switch and the relay are stopped by PID; a
# failure prints "FAIL: ..." and exits 1.
set -uo pipefail

if [ $# -ne 5 ]; then
    echo "usage: $0 relay|trains SERENE_RUN AR_WORKER SSP_WORKER SLOW_RELAY" >&2
    exit 2
fi
CASE=$1 RUN=$2 AR=$3 SSP=$4 RELAY=$5
N=3 PPS=3000
export SERENE_TIMEOUT_MS=30000

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init "pace-$CASE"
HARNESS_LOGS=(switch.log relay.log)

start_switch 127.0.0.1:0 --job "0:$N:32,store=8192" --job "1:$N:32,store=8192" ||
    fail "serene-switch did not start"
relay_args=(--to "127.0.0.1:$port" --port-file "$work/relay.port" --pps "$PPS" --queue 64
    --max-seconds 200)
[ "$CASE" = trains ] && relay_args+=(--drop-trains)
spawn "$work/relay.log" "$RELAY" "${relay_args[@]}"
relay_pid=$spawned
wait_grep "$work/relay.port" '^[0-9]+$' 10 || fail "slow_relay did not start"
switch_port=$port
port=$(cat "$work/relay.port") # the ranks talk to the relay
echo "slow_relay pid $relay_pid on 127.0.0.1:$port, $PPS packets/s, queue 64 -> switch :$switch_port"

ranks allreduce 180 "$N" --job 0 -- "$AR" --elems 32 --sizes 1,31,32,33,255,1024,4097 --reps 2 \
    --seed 41 --pace "$PPS"
[ "$(grep -c 'pace 3000/s' "$work/allreduce.out")" -eq "$N" ] ||
    fail "not every rank reported its pace"
warned=$(grep -c 'drops UDP GSO trains whole' "$work/allreduce.out")
if [ "$CASE" = trains ]; then
    [ "$warned" -eq "$N" ] || fail "$warned of $N ranks said that the path drops trains"
else
    [ "$warned" -eq 0 ] || fail "$warned ranks said that a path that passes trains drops them"
fi
STORE_ITERS=4 STORE_OFFSET=100 STORE_WORDS=4096
ranks store 180 "$N" --job 1 -- "$SSP" store --iters "$STORE_ITERS" --offset "$STORE_OFFSET" \
    --count "$STORE_WORDS" --capacity 8192 --seed 42
[ "$(grep -c "store: $STORE_ITERS iterations" "$work/store.out")" -eq "$N" ] ||
    fail "not every rank reported its store iterations"
# Each iteration: a push and three pulls of the range's rows, two clocks.
rows=$(((STORE_OFFSET + STORE_WORDS - 1) / 32 - STORE_OFFSET / 32 + 1))
need=$((STORE_ITERS * (4 * rows + 2))) total=0 nsent=0
while read -r r sent; do
    echo "rank $r: store iterations sent $sent packets for $need requests"
    total=$((total + sent)) nsent=$((nsent + 1))
done < <(sed -n 's/.*rank \([0-9]*\): store iterations sent \([0-9]*\) packets$/\1 \2/p' \
    "$work/store.out")
[ "$nsent" -eq "$N" ] || fail "$nsent of $N ranks reported the packets of their store iterations"
[ $((5 * total)) -le $((8 * N * need)) ] ||
    fail "the ranks sent $total packets for $N x $need store requests (more than 1.6x)"
STEP_CLOCKS=8 STEP_WORDS=2048
ranks step 180 "$N" --job 1 -- "$SSP" step --clocks "$STEP_CLOCKS" --offset 0 \
    --count "$STEP_WORDS" --staleness 0
[ "$(grep -c "step: $STEP_CLOCKS clocks" "$work/step.out")" -eq "$N" ] ||
    fail "not every rank reported its steps"
# The bound is on the ranks' sum: the last rank to reach a row pays for
# its peers' queue, and which rank that is varies.
need=$((STEP_CLOCKS * STEP_WORDS / 32)) total=0 nsent=0
while read -r r sent; do
    echo "rank $r: steps sent $sent packets for $need pieces"
    total=$((total + sent)) nsent=$((nsent + 1))
done < <(sed -n 's/.*rank \([0-9]*\): steps sent \([0-9]*\) packets$/\1 \2/p' "$work/step.out")
[ "$nsent" -eq "$N" ] || fail "$nsent of $N ranks reported the packets of their steps"
[ $((2 * total)) -le $((7 * N * need)) ] ||
    fail "the ranks sent $total packets for $N x $need pieces of steps (more than 3.5x)"
kill -TERM "$relay_pid" 2>/dev/null
wait_pid "$relay_pid" 5
sed "s/^/    /" "$work/relay.log"
echo "PASS: pace-$CASE"
