#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_train.sh SERENE_TRAIN SERENE_RUN SERENE_SWITCH GEN_DIGITS
#
# A short version of the main job (examples/train): 2 ranks of serene-train
# on a 16x16 digit-like set that gen_digits writes (no network), under
# serene-run with its embedded switch.
#   1. store mode (BSP), slow_worker stragglers on rank 1: every rank exits
#      0; per rank the CSV has the fixed header, one row per iteration with
#      11 numeric fields (accuracies only on snapshot rows, in [0, 1]),
#      iterations 1..N, times increasing, waits >= 0 and the cumulative wait
#      their running sum; the summary has its keys, saturations=0 and the
#      same final accuracy on both ranks; the loss falls (mean of the last
#      10 iterations below 60% of the first 10) and the final model beats
#      chance by far; rank 1 straggled, rank 0 did not.
#   2. the same in allreduce mode, with one 30 ms failure pause per rank.
#   3. SSP(3) on a switch this script starts, with a heterogeneous straggler.
#   3c. the stream mode under SSP(3), 16-bit values, on a switch with no
#      store, rank 0 straggling.
#   3b. a transient burst (burst:F:START:LEN) with a non-IID split, and
#      rank 0's loss in the --metrics file (serene-ctl run --metrics).
#   4. errors: missing and truncated data file, bad straggler spec, a store
#      too small for the model (each with its message and exit status).
# Every run is bounded by serene-run --timeout; processes are stopped by
# PID. A failure prints "FAIL: ..." and exits 1.
set -uo pipefail
[ $# -eq 4 ] || { echo "usage: $0 SERENE_TRAIN SERENE_RUN SERENE_SWITCH GEN_DIGITS" >&2; exit 2; }
TRAIN=$1 RUN=$2 SWITCH=$3 GEN=$4
ITERS=60
export SERENE_TIMEOUT_MS=10000 SERENE_SWITCH_BIN=$SWITCH

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init train
HARNESS_LOGS=(out.log)

"$GEN" "$work/digits.bin" 1000 16 3 || fail "gen_digits failed"
common=(--data "$work/digits.bin" --iters "$ITERS" --batch 16 --lr 0.05 --eval-every 10
    --train-eval 200)

# check_run DIR NAME: the outputs of a 2-rank run in DIR.
check_run() {
    local dir=$1 name=$2 r
    for r in 0 1; do
        local csv=$dir/rank$r.csv sum=$dir/rank$r.summary
        [ -s "$csv" ] && [ -s "$sum" ] || fail "$name: rank $r wrote no CSV or summary"
        awk -F, -v n="$ITERS" -v name="$name rank $r" '
            function bad(m) { print "FAIL: train: " name ": " m " (line " NR ": " $0 ")"; err = 1; exit 1 }
            NR == 1 {
                if ($0 != "iter,time_s,loss,batch_acc,train_acc,test_acc,compute_s,straggle_s," \
                          "comm_s,wait_s,cum_wait_s") bad("header")
                next
            }
            {
                if (NF != 11) bad(NF " fields")
                for (i = 1; i <= 11; i++)
                    if (!(i == 5 || i == 6) && $i !~ /^[0-9]+(\.[0-9]+)?$/) bad("field " i " not a number")
                if ($1 != NR - 1) bad("iteration " $1 " at row " NR - 1)
                if ($2 <= last_t) bad("time does not increase")
                last_t = $2
                snap = ($1 % 10 == 0 || $1 == n)
                for (i = 5; i <= 6; i++) {
                    if (snap && !($i ~ /^[01]\.[0-9]+$/ && $i <= 1))
                        bad("accuracy " i " missing or outside [0,1] on a snapshot row")
                    if (!snap && $i != "") bad("accuracy on a row without snapshot")
                }
                cum += $10
                if ($11 + 1e-5 < cum || $11 - 1e-5 > cum) bad("cum_wait_s is not the running sum of wait_s")
                if ($1 <= 10) first += $3
                if ($1 > n - 10) lastl += $3
                strag += $8
            }
            END {
                if (err) exit 1
                if (NR - 1 != n) { print "FAIL: train: " name ": " NR - 1 " rows, expected " n; exit 1 }
                printf "%s: loss %.3f (first 10) -> %.3f (last 10), straggled %.3f s\n", name, first / 10, lastl / 10, strag
                if (!(lastl < 0.6 * first)) { print "FAIL: train: " name ": the loss did not fall"; exit 1 }
                print strag > "/dev/stderr"
            }' "$csv" 2>"$dir/strag$r" || fail "$name: rank $r CSV"
        local key
        for key in rank world mode iters mean_iter_ms straggler delayed_iters delay_s start_ns \
            end_ns wall_s cum_wait_s final_test_acc time_to_target_s saturations; do
            grep -q "^$key=" "$sum" || fail "$name: rank $r summary lacks $key"
        done
        grep -qx "saturations=0" "$sum" || fail "$name: rank $r saturated the store's fixed point"
    done
    local a0 a1
    a0=$(sed -n 's/^final_test_acc=//p' "$dir/rank0.summary")
    a1=$(sed -n 's/^final_test_acc=//p' "$dir/rank1.summary")
    [ "$a0" = "$a1" ] || fail "$name: ranks end with different models ($a0, $a1)"
    awk -v a="$a0" 'BEGIN { exit !(a >= 0.5) }' || fail "$name: final test accuracy $a0 < 0.5"
    echo "$name: final test accuracy $a0"
}

# 1. store mode under the embedded switch's BSP, rank 1 straggling.
mkdir "$work/store"
"$RUN" -n 2 --timeout 120 -- "$TRAIN" "${common[@]}" --out "$work/store" --mode store \
    --straggler slow:0.3:0.5:2 --straggler-ranks 1 --warmup 5 >"$work/out.log" 2>&1 ||
    fail "store run exited with $?"
check_run "$work/store" store
grep -qx "delayed_iters=0" "$work/store/rank0.summary" || fail "rank 0 straggled though not listed"
awk '{ exit !($1 > 0) }' "$work/store/strag1" || fail "rank 1 never straggled (p=0.3, 55 iterations)"

# 2. allreduce mode.
mkdir "$work/ar"
"$RUN" -n 2 --timeout 120 -- "$TRAIN" "${common[@]}" --out "$work/ar" --mode allreduce \
    --straggler fail:0.5:30 >"$work/out.log" 2>&1 ||
    fail "allreduce run exited with $?"
check_run "$work/ar" allreduce
for r in 0 1; do # failure: exactly one pause of 30 ms
    awk '{ exit !($1 > 0.0299 && $1 < 0.0301) }' "$work/ar/strag$r" ||
        fail "allreduce rank $r: failure pauses add up to $(cat "$work/ar/strag$r") s, not one of 0.03 s"
done
grep -qx "mode=allreduce" "$work/ar/rank0.summary" || fail "allreduce summary mode"

# 3. SSP(3) on our own switch, heterogeneous straggler on rank 0.
start_switch 127.0.0.1:0 --job "0:2:2048,store=65536,policy=ssp:3" || fail "serene-switch exited at start"
mkdir "$work/ssp"
"$RUN" -n 2 --switch "127.0.0.1:$port" --timeout 120 -- "$TRAIN" "${common[@]}" \
    --out "$work/ssp" --straggler hetero:2 --straggler-ranks 0 --mean-iter-ms 3 >"$work/out.log" 2>&1 ||
    fail "ssp run exited with $?"
stop_switch
check_run "$work/ssp" ssp3

# 3c. the stream mode (SSP(3) over the streaming allreduce, 16-bit values)
# on the same kind of switch, rank 0 straggling: the same checks, so both
# ranks end with the same model.
start_switch 127.0.0.1:0 --job "0:2:2048,store=0,policy=ssp:3" || fail "serene-switch exited at start"
mkdir "$work/stream"
"$RUN" -n 2 --switch "127.0.0.1:$port" --timeout 120 -- "$TRAIN" "${common[@]}" \
    --out "$work/stream" --mode stream --wire-bits 16 --straggler slow:0.3:0.5:2 \
    --straggler-ranks 0 --mean-iter-ms 3 >"$work/out.log" 2>&1 || fail "stream run exited with $?"
stop_switch
check_run "$work/stream" stream3
grep -qx "mode=stream" "$work/stream/rank0.summary" || fail "stream summary mode"

# 3b. a transient burst on rank 1 (3x, delay calls 10..24: iterations 16..30
# after a warm-up of 5) with a non-IID split that gives each rank only its
# own classes (label % 2): rank 1 straggles at exactly those iterations,
# rank 0 never; rank 0's shard holds only even classes, rank 1's only odd.
mkdir "$work/burst"
"$RUN" -n 2 --timeout 120 -- "$TRAIN" "${common[@]}" --out "$work/burst" --warmup 5 \
    --straggler burst:3:10:15 --straggler-ranks 1 --mean-iter-ms 2 --split noniid:1 \
    --metrics "$work/burst/metrics" \
    >"$work/out.log" 2>&1 || fail "burst run exited with $?"
check_run "$work/burst" burst
got=$(awk -F, 'NR > 1 && $8 > 0 { printf "%s%s", sep, $1; sep = " " }' "$work/burst/rank1.csv")
[ "$got" = "$(seq -s ' ' 16 30)" ] || fail "burst: rank 1 delayed at iterations '$got', not 16..30"
awk -F, 'NR > 1 && $8 > 0 && ($8 < 0.0039 || $8 > 0.0041) { exit 1 }' "$work/burst/rank1.csv" ||
    fail "burst: a delay is not (3 - 1) x 2 ms"
grep -qx "delayed_iters=0" "$work/burst/rank0.summary" || fail "burst: rank 0 straggled"
c0=$(sed -n 's/^shard_classes=//p' "$work/burst/rank0.summary")
c1=$(sed -n 's/^shard_classes=//p' "$work/burst/rank1.summary")
own() { # COUNTS RANK: every class c has images in the shard iff c % 2 == RANK
    awk -v l="$1" -v r="$2" 'BEGIN { n = split(l, a, ","); if (n < 2) exit 1
        for (c = 0; c < n; c++) if ((a[c + 1] > 0) != (c % 2 == r)) exit 1 }'
}
own "$c0" 0 && own "$c1" 1 ||
    fail "noniid:1 shards: rank 0 classes $c0, rank 1 classes $c1 (expected even / odd classes only)"
grep -qx "split=noniid:1" "$work/burst/rank0.summary" || fail "burst: summary lacks split=noniid:1"
# --metrics: rank 0's "CLOCK LOSS" lines, one per snapshot (every 10
# iterations: clocks 9, 19, ..., 59), the mean loss of those iterations,
# falling from the first to the last.
awk -v n="$ITERS" '
    { if (NF != 2 || $1 != 10 * NR - 1 || !($2 > 0)) { print "FAIL: train: metrics line " NR ": " $0; exit 1 }
      if (NR == 1) first = $2; last = $2 }
    END { if (NR != n / 10) { print "FAIL: train: " NR " metrics lines, expected " n / 10; exit 1 }
          if (!(last < first)) { print "FAIL: train: metrics loss " first " -> " last " did not fall"; exit 1 } }
' "$work/burst/metrics" || exit 1
echo "burst + noniid:1: rank 1 delayed at 16..30; shards by class $c0 / $c1"

# 4. errors.
expect_error() { # NAME STATUS PATTERN COMMAND...
    local name=$1 want=$2 pat=$3 rc
    shift 3
    "$@" >"$work/out.log" 2>&1
    rc=$?
    [ "$rc" -eq "$want" ] || fail "$name: exit $rc, expected $want"
    grep -q -- "$pat" "$work/out.log" || fail "$name: no message matching '$pat'"
    echo "$name: exit $rc, $(grep -m1 -- "$pat" "$work/out.log")"
}
expect_error "bad straggler" 2 "is not none, slow:P:MIN:MAX" \
    "$TRAIN" --data x --out "$work" --straggler slow:2:1:1
expect_error "metrics unwritable" 1 "cannot write --metrics $work/none/m" \
    "$RUN" -n 1 --timeout 60 -- "$TRAIN" --data "$work/digits.bin" --out "$work" --metrics "$work/none/m"
expect_error "bad burst" 2 "burst:F:START:LEN" \
    "$TRAIN" --data x --out "$work" --straggler burst:3:1.5:10
expect_error "bad split" 2 "is not iid or noniid:F" \
    "$TRAIN" --data x --out "$work" --split noniid
expect_error "split out of range" 2 "noniid:F: '1.5' is not a number" \
    "$TRAIN" --data x --out "$work" --split noniid:1.5
expect_error "missing data" 1 "cannot open $work/none" \
    "$RUN" -n 1 --timeout 60 -- "$TRAIN" --data "$work/none" --out "$work"
head -c 5000 "$work/digits.bin" >"$work/short.bin"
expect_error "truncated data" 1 "is truncated" \
    "$RUN" -n 1 --timeout 60 -- "$TRAIN" --data "$work/short.bin" --out "$work"
printf 'SRDIGIT0xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' >"$work/bad.bin"
expect_error "not a digit set" 1 "no SRDIGIT1 header" \
    "$RUN" -n 1 --timeout 60 -- "$TRAIN" --data "$work/bad.bin" --out "$work"
start_switch 127.0.0.1:0 --job "0:1,store=1000" || fail "serene-switch exited at start"
expect_error "store too small" 1 "the switch's store holds 1000 words" \
    "$RUN" -n 1 --switch "127.0.0.1:$port" --timeout 60 -- "$TRAIN" \
    --data "$work/digits.bin" --out "$work"
stop_switch
echo "PASS: train"
