#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_tna_exec.sh - real workers against the Tofino program executed
# (p4/tna/exec/tna_switch.py: its IR run packet by packet in TNA's
# pipeline, set up by serene-ctl's bfrt_python script for the job file
# below) that drops, duplicates and reorders 3% of the datagrams both
# ways. Three runs of 2 ranks, each on a freshly set up switch (as on a
# Tofino, where a job's block is cleared by its script before a run: a new
# context's round numbers start again at 1): allreduces of 1 to 8197
# 32-bit values, of 63 to 5000 16-bit values, every result within its
# bound (ar_worker); then 5 push/clock/pull rounds of 1000 words from word
# 100 of the store, exact (ssp_worker; the library pads to the program's
# whole rows). The switch prints its datagrams per op and the program's
# ar_ctr.
#   test_tna_exec.sh SERENE_RUN AR_WORKER SSP_WORKER SERENE_CTL SOURCE_ROOT
# Every wait is bounded; a failure prints "FAIL: ..." and exits 1.
set -uo pipefail
if [ $# -ne 5 ]; then
    echo "usage: $0 SERENE_RUN AR_WORKER SSP_WORKER SERENE_CTL SOURCE_ROOT" >&2
    exit 2
fi
RUN=$1 AR_WORKER=$2 SSP_WORKER=$3 CTL=$4 ROOT=$5 N=2
export SERENE_TIMEOUT_MS=60000
# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init tna-exec
HARNESS_LOGS=(tna_switch.log)
tpid=""
on_cleanup() {
    [ -n "$tpid" ] && kill -TERM "$tpid" 2>/dev/null && wait "$tpid" 2>/dev/null
}
# BSP: the store's checks want every rank's pushes of a clock in before
# the pulls after it (p4/conformance/policy.conf starts with SSP(1)).
echo bsp >"$work/bsp.policy"
cat >"$work/job.conf" <<EOF
job = 3
workers = $N
store = 2048
ring = 8
worker.0 = 10.0.0.1:47000
worker.1 = 10.0.0.2:47001
EOF

# tna_switch SEED: a freshly set up executed program; sets port.
tna_switch() {
    rm -f "$work/tport"
    python3 "$ROOT/p4/tna/exec/tna_switch.py" --ir "$ROOT/p4/tna/exec/serene_tna.ir.json" \
        --ctl "$CTL" --job-file "$work/job.conf" --policy "$work/bsp.policy" \
        --port-file "$work/tport" --duration 300 --loss 0.03 --dup 0.03 --reorder 0.03 \
        --seed "$1" >>"$work/tna_switch.log" 2>&1 &
    tpid=$!
    for _ in $(seq 100); do
        [ -s "$work/tport" ] && break
        kill -0 "$tpid" 2>/dev/null || fail "tna_switch.py exited"
        sleep 0.1
    done
    [ -s "$work/tport" ] || fail "tna_switch.py wrote no port in 10 s"
    port=$(cat "$work/tport")
}

# stop_tna: SIGTERM; it prints its counts.
stop_tna() {
    kill -TERM "$tpid" 2>/dev/null
    wait "$tpid" 2>/dev/null
    tpid=""
    tail -n 1 "$work/tna_switch.log" | sed 's/^/    /'
}

tna_switch 1
ranks tna-exec-f32 180 "$N" --job 3 -- "$AR_WORKER" --elems 32 \
    --sizes "1,31,32,33,1000,8197" --reps 2 --seed 3 --expect-retrans
stop_tna
tna_switch 2
ranks tna-exec-f16 180 "$N" --job 3 -- "$AR_WORKER" --elems 32 \
    --sizes "63,64,65,5000" --reps 2 --seed 4 --wire16 --expect-retrans
stop_tna
tna_switch 3
ranks tna-exec-store 180 "$N" --job 3 -- "$SSP_WORKER" store --iters 5 --offset 100 \
    --count 1000 --capacity 2048 --seed 5 --expect-retrans
stop_tna
for r in $(seq 0 $((N - 1))); do
    grep -q "rank $r: 12 calls" "$work/tna-exec-f32.out" ||
        fail "f32: rank $r did not report 12 calls"
    grep -q "rank $r: 8 calls" "$work/tna-exec-f16.out" ||
        fail "f16: rank $r did not report 8 calls"
done
[ "$(grep -c 'store: 5 iterations' "$work/tna-exec-store.out")" -eq "$N" ] ||
    fail "store: not every rank reported its 5 iterations"
echo "PASS: tna-exec: $N ranks on the executed Tofino program, 3% loss, duplication and" \
    "reordering: 32-bit and 16-bit allreduces within bound, the store exact"
