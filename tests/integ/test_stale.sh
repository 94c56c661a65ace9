#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_stale.sh CASE SERENE_RUN STALE_WORKER SSP_CHECK - the stream mode
# (serene_stale_start, serene_stale_bound: SSP over the streaming
# allreduce) against a real serene-switch ($SERENE_SWITCH_BIN) on
# 127.0.0.1 that this script starts and stops by PID, with stale_worker
# ranks (stale_worker.c says what each checks: every sum exact, the bound
# clock by clock).
#
#   tofino-params  the switch set to the Tofino program's job values (32
#               words per packet, so 32 values or 64 of 16 bits; 256
#               slots: SR_TNA_ELEMS and SR_TNA_AR_SLOTS of
#               p4/tna/tna_headers.p4) and no store,
#               policy SSP(2); 2 ranks, rank 1 slowed, 3 clocks of
#               ResNet-18's 11,175,370 floats (examples/torch/train_e2e.py's
#               model) on 16-bit values, then 1,000,000 floats on 32-bit:
#               the job's memory in the switch (its status' bytes) is
#               printed, and must be the same for both models and below
#               1 MiB (the allreduce's window, never the model).
#   faults      4 ranks, 300,000 floats, 40 clocks, SSP(3), rank 2 slowed,
#               10% loss, duplication and reordering of every packet the
#               switch sends and receives: every sum exact, the bound kept,
#               packets resent.
#
# Every wait is bounded; a failure prints "FAIL: ..." and exits 1.
set -uo pipefail
if [ $# -ne 4 ]; then
    echo "usage: $0 tofino-params|faults SERENE_RUN STALE_WORKER SSP_CHECK" >&2
    exit 2
fi
CASE=$1 RUN=$2 WORKER=$3 CHECK=$4
export SERENE_TIMEOUT_MS=60000
# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init "stale-$CASE"
root=$(cd "$(dirname "$0")/../.." && pwd)

# tna_value NAME: a #define of the Tofino program's header.
tna_value() {
    sed -n "s/^#define $1 \\([0-9]*\\).*/\\1/p" "$root/p4/tna/tna_headers.p4" | head -n 1
}

# ranks N OUT ARGS...: serene-run N stale_worker ranks against the switch.
ranks() {
    local n=$1 out=$2
    shift 2
    timeout 300 "$RUN" -n "$n" --switch "127.0.0.1:$port" -- "$WORKER" "$@" >"$out" 2>&1
    local rc=$?
    show "$out" ranks
    [ "$rc" -eq 0 ] || fail "serene-run exited with status $rc"
}

case $CASE in
tofino-params)
    elems=$(tna_value SR_TNA_ELEMS) slots=$(tna_value SR_TNA_AR_SLOTS)
    [ -n "$elems" ] && [ -n "$slots" ] || fail "no SR_TNA_ELEMS / SR_TNA_AR_SLOTS in tna_headers.p4"
    start_switch 127.0.0.1:0 --job "0:2:$elems:$slots,store=0,policy=ssp:2" ||
        fail "serene-switch did not start"
    bytes=$(ctl_field "status 0" bytes)
    ranks 2 "$work/big" --count 11175370 --clocks 3 --wire16 --slow-rank 1 --slow-ms 300
    big=$(ctl_field "status 0" bytes)
    ranks 2 "$work/small" --count 1000000 --clocks 3 --slow-rank 1 --slow-ms 100
    small=$(ctl_field "status 0" bytes)
    echo "switch memory for the job ($elems words x $slots slots, no store): $bytes bytes" \
        "before, $big after 11,175,370 floats a clock, $small after 1,000,000"
    [ -n "$bytes" ] && [ "$bytes" = "$big" ] && [ "$big" = "$small" ] ||
        fail "the job's memory in the switch changed with the model"
    [ "$big" -lt 1048576 ] || fail "the job holds $big bytes: more than the allreduce's window"
    grep -q "at most [1-9][0-9]* clocks in flight" "$work/big" ||
        fail "no rank ran ahead under SSP(2)"
    ;;
faults)
    start_switch 127.0.0.1:0 --job "0:4,store=0,policy=ssp:3" --loss 0.1 --dup 0.1 --reorder 0.1 \
        --seed 11 || fail "serene-switch did not start"
    ranks 4 "$work/out" --count 300000 --clocks 40 --slow-rank 2 --slow-ms 15
    stop_switch
    grep -o 'chaos_[a-z_]*=[0-9]*' "$work/switch.log" | tr '\n' ' '
    echo
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
echo "PASS"
