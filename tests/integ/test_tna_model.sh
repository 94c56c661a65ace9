#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_tna_model.sh - real workers through the Tofino program's allreduce
# and store rules: serene-switch's model=tna jobs run AR_DATA, AR_PROBE,
# PUSH and PULL on the C model of p4/tna (p4/tna/model, checked against
# the executed program by tna-exec-diff: p4/tna/README.md), 32 values per
# packet, 256 slots and 512 rows of store, with the switch dropping,
# duplicating and reordering packets both ways. Three jobs (ids 0, 1 and
# 2: three register blocks of the one model; each run on a job of its own:
# once, in CI's ASan build, job 0's last run was still bound when its next
# joined, refused JOB_IN_USE), 4 ranks each, one after the other: sizes around a packet and
# past three windows, 32-bit and 16-bit values, every result within its
# bound (ar_worker), packets resent; then job 2's store, 1000 words from
# word 100 (the library pads to the program's whole rows), exact
# (ssp_worker). The switch's MISMATCH
# count is printed: the model answers so a probe of a round older than its
# cell's, which the library's path test (seq 0, trains.c) sends.
#   test_tna_model.sh SERENE_RUN AR_WORKER SSP_WORKER
# Every wait is bounded; a failure prints "FAIL: ..." and exits 1.
set -uo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 SERENE_RUN AR_WORKER SSP_WORKER" >&2
    exit 2
fi
RUN=$1 AR_WORKER=$2 SSP_WORKER=$3 N=4
export SERENE_TIMEOUT_MS=60000
# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init tna-model

start_switch 127.0.0.1:0 --job "0:$N:32:256,model=tna,store=0" \
    --job "1:$N:32:256,model=tna,store=0" --job "2:$N:32:256,model=tna,store=16384" \
    --loss 0.03 --dup 0.03 --reorder 0.03 --seed 7 || fail "serene-switch did not start"
ranks tna-f32 240 "$N" --job 0 -- "$AR_WORKER" --elems 32 \
    --sizes "1,31,32,33,$((32 * 256 * 3 + 5)),100000" --reps 3 --seed 3 --expect-retrans
ranks tna-f16 240 "$N" --job 1 -- "$AR_WORKER" --elems 32 \
    --sizes "1,63,64,65,$((64 * 256 * 3 + 5)),100000" --reps 3 --seed 4 --wire16 --expect-retrans
ranks tna-store 120 "$N" --job 2 -- "$SSP_WORKER" store --iters 20 --offset 100 --count 1000 \
    --capacity 16384 --seed 5 --expect-retrans
[ "$(grep -c 'store: 20 iterations' "$work/tna-store.out")" -eq "$N" ] ||
    fail "tna-store: not every rank reported its 20 iterations"
stop_switch
for f in tna-f32 tna-f16; do
    for r in $(seq 0 $((N - 1))); do
        grep -q "rank $r: 18 calls" "$work/$f.out" || fail "$f: rank $r did not report its 18 calls"
    done
done
sed -n 's/.*\(job=[0-9]*\) .* \(results=[0-9]*\) .* \(mismatches=[0-9]*\) .* \(pushes=[0-9]*\) .* \(pulls=[0-9]*\) .*/    switch: \1 \2 \3 \4 \5/p' \
    "$work/switch.log"
echo "PASS: tna-model: 2 jobs x $N ranks on the Tofino program's allreduce and store model, 3% loss, duplication and reordering"
