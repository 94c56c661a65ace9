#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_matrix.sh BUILD_ROOT GEN_DIGITS
#
# examples/train/matrix.sh end to end on a tiny matrix: 2 workers, one
# regime (a burst straggler with non-IID shards), BSP and the dynamic
# policy (serene-ctl run against the switch), one seed, 80 iterations, on
# a 16x16 digit-like set gen_digits writes (no network). Checks the
# per-run CSV (header, one row per policy, numeric fields, accuracies in
# [0, 1], time to target -1 or within the JCT), the markdown table (its
# header, one row for the regime with both policies, the best static one
# named), the dynamic run's decision log (SSP(60) from clock 0, BSP for
# the last 10%), the plot when gnuplot is
# installed, and that bad arguments exit 2 with a message. Then
# --retable on a made-up matrix (rank 0 snapshots and final accuracies
# chosen so that each case of the table's not-reached handling occurs):
# the times recomputed, the medians, "n/r" cells, "(k n/r)" counts and the
# dynamic-vs-best column.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BUILD_ROOT GEN_DIGITS" >&2; exit 2; }
BUILD=$1 GEN=$2
here=$(cd "$(dirname "$0")" && pwd)
MATRIX=$here/../../examples/train/matrix.sh
export SERENE_TIMEOUT_MS=10000

# shellcheck source=../common/harness.sh
. "$here/../common/harness.sh"
harness_init train-matrix
HARNESS_LOGS=(out.log m/burst-noniid.log)

"$GEN" "$work/digits.bin" 1000 16 3 || fail "gen_digits failed"
"$MATRIX" --build "$BUILD" --out "$work/m" --data "$work/digits.bin" --workers 2 \
    --regimes burst-noniid --policies bsp,dynamic --seeds 1 --iters 80 --mean-iter-ms 2 \
    --target-acc 0.6 --timeout 60 >"$work/out.log" 2>&1 || fail "matrix.sh exited with $?"
cat "$work/out.log"

csv=$work/m/matrix.csv
[ -s "$csv" ] || fail "no matrix.csv"
awk -F, '
    function bad(m) { print "FAIL: train-matrix: matrix.csv: " m " (line " NR ": " $0 ")"; err = 1; exit 1 }
    NR == 1 {
        if ($0 != "regime,straggler,straggler_ranks,split,policy,seed,jct_s,wait_s,final_test_acc,time_to_target_s,time_to_target3_s,time_to_target_kept_s")
            bad("header")
        next
    }
    {
        if (NF != 12) bad(NF " fields")
        if ($1 != "burst-noniid" || $2 != "burst:3:4:26" || $3 != "1" || $4 != "noniid:0.95") bad("regime columns")
        if ($5 != (NR == 2 ? "bsp" : "dynamic")) bad("policy " $5)
        if ($6 != 1) bad("seed")
        for (i = 7; i <= 12; i++) if ($i !~ /^-?[0-9]+(\.[0-9]+)?$/) bad("field " i " not a number")
        if (!($7 > 0 && $8 >= 0)) bad("JCT or wait")
        if (!($9 >= 0.6 && $9 <= 1)) bad("final accuracy " $9 " not in [0.6, 1]")
        if (!($10 == -1 || ($10 > 0 && $10 <= $7))) bad("time to target " $10 " not -1 nor within the JCT")
        if (!($11 == -1 || ($11 >= $10 && $10 > 0 && $11 <= $7))) bad("held time to target " $11 " not -1 nor in [first, JCT]")
        if ($12 != ($11 >= 0 && $9 >= 0.6 ? $11 : -1)) bad("kept time to target " $12 " is not the held one where the final model reaches 0.6")
    }
    END { if (!err && NR != 3) { print "FAIL: train-matrix: matrix.csv has " NR - 1 " runs, expected 2"; exit 1 } }
' "$csv" || exit 1

md=$work/m/matrix.md
grep -q '^| regime | bsp | dynamic | best static | dynamic vs best |$' "$md" || fail "matrix.md: header"
[ "$(grep -c '^| burst-noniid (burst:3:4:26 on rank 1, noniid:0.95) |' "$md")" = 1 ] ||
    fail "matrix.md: no single row for the regime"
row=$(grep '^| burst-noniid' "$md")
awk -F'|' '{ exit !(NF == 7 && $5 ~ /^ (bsp|- \(none reached\)) $/) }' <<<"$row" ||
    fail "matrix.md: row '$row' lacks a cell per policy or the best static policy"
log=$work/m/burst-noniid/dynamic-s1/ctl.log
[ -f "$log" ] || fail "the dynamic run has no decision log"
# the dynamic policy: the switch started at SSP(60), the controller's
# schedule BSP from 90% of the 80 clocks
grep -q '^kind=schedule clock=-1 old=ssp:60 new=ssp:60 from=0 ' "$log" &&
    grep -q '^kind=schedule clock=-1 old=ssp:60 new=bsp from=72 effective=72 ' "$log" ||
    fail "the dynamic run's decision log lacks SSP(60) from 0 or BSP from 72: $(cat "$log")"
if command -v gnuplot >/dev/null 2>&1; then
    [ -s "$work/m/time_to_target.png" ] || fail "gnuplot is installed but no time_to_target.png"
fi

# --retable on a made-up matrix, target 0.9. snaps FILE T FINAL: rank 0's
# CSV, a snapshot every 0.1 s up to 1.0 s (rows without one between),
# test accuracy 0.80 before T and 0.96 from T on: the mean of 3 snapshots
# first reaches 0.9 at T + 0.1 (0.3 at the earliest: 3 snapshots); FINAL:
# the final model's accuracy.
r=$work/re
snaps() {
    mkdir -p "$(dirname "$1")"
    awk -v t="$2" 'BEGIN { print "iter,time_s,loss,batch_acc,train_acc,test_acc,compute_s,straggle_s,comm_s,wait_s,cum_wait_s"
        for (i = 1; i <= 10; i++) {
            printf "%d,%.2f,1,0.5,,,0,0,0,0,0\n", 2 * i - 1, i / 10 - 0.05
            printf "%d,%.1f,1,0.5,0.5,%s,0,0,0,0,0\n", 2 * i, i / 10, (i / 10 >= t - 1e-9 ? "0.96" : "0.80")
        } }' >"$1"
}
echo "regime,straggler,straggler_ranks,split,policy,seed,jct_s,wait_s,final_test_acc,time_to_target_s,time_to_target3_s" >"$r.csv"
# REGIME POLICY SEED T FINAL
while read -r reg pol seed t fa; do
    snaps "$r/$reg/$pol-s$seed/rank0.csv" "$t"
    echo "$reg,${reg%-iid},,iid,$pol,$seed,1.000,0,$fa,9,9" >>"$r.csv"
done <<'EOF'
none-iid bsp 1 0.3 0.95
none-iid bsp 2 0.4 0.95
none-iid bsp 3 0.5 0.95
none-iid asp 1 0.1 0.95
none-iid asp 2 0.1 0.85
none-iid asp 3 0.1 0.85
none-iid dynamic 1 0.2 0.95
none-iid dynamic 2 0.2 0.95
none-iid dynamic 3 0.2 0.85
burst-iid bsp 1 0.3 0.95
burst-iid bsp 2 0.3 0.95
burst-iid asp 1 0.1 0.85
burst-iid asp 2 0.1 0.85
burst-iid dynamic 1 0.1 0.95
burst-iid dynamic 2 0.1 0.85
failure-iid bsp 1 2.0 0.95
failure-iid asp 1 0.1 0.85
failure-iid dynamic 1 0.1 0.95
EOF
mv "$r.csv" "$r/matrix.csv"
"$MATRIX" --retable "$r" --target-acc 0.9 --no-plots >"$work/re.log" 2>&1 || fail "--retable exited with $?: $(cat "$work/re.log")"
# the recomputed columns: first snapshot, 3 snapshots, kept (final model)
exp=$(printf '%s\n' none-iid,bsp,1,0.3,0.4,0.4 none-iid,asp,2,0.1,0.3,-1 none-iid,dynamic,3,0.2,0.3,-1 \
    burst-iid,dynamic,1,0.1,0.3,0.3 failure-iid,bsp,1,-1,-1,-1)
got=$(awk -F, 'NR > 1 { print $1 "," $5 "," $6 "," $10 "," $11 "," $12 }' "$r/matrix.csv" | grep -xF "$exp")
[ "$got" = "$exp" ] || fail "--retable: matrix.csv columns: expected '$exp', got '$got' in $(cat "$r/matrix.csv")"
for row in '| none-iid (none, iid) | **0.50** [0.9500, 1.00] | n/r [0.8500, 1.00] | **0.30 (1 n/r)** [0.9500, 1.00] | bsp | -40.0% |' \
    '| burst-iid (burst, iid) | **0.40** [0.9500, 1.00] | n/r [0.8500, 1.00] | n/r [0.9000, 1.00] | bsp | n/r |' \
    '| failure-iid (failure, iid) | n/r [0.9500, 1.00] | n/r [0.8500, 1.00] | **0.30** [0.9500, 1.00] | - (none reached) | - |'; do
    grep -qxF "$row" "$r/matrix.md" || fail "--retable: matrix.md lacks the row '$row': $(cat "$r/matrix.md")"
done
grep -q 'median over seeds 1,2,3:' "$r/matrix.md" || fail "--retable: matrix.md does not name the seeds"

# bad arguments
for a in "--regimes slow-iid" "--seeds x" "--workers 1" "--iters 5" "--noniid 2" "--target-acc x" \
    "--retable $work/none"; do
    # shellcheck disable=SC2086
    "$MATRIX" --build "$BUILD" --out "$work/bad" $a >"$work/bad.log" 2>&1
    rc=$?
    [ "$rc" = 2 ] && grep -q '^matrix.sh: ' "$work/bad.log" || fail "matrix.sh $a: exit $rc: $(cat "$work/bad.log")"
done
echo "train-matrix: ok"
