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
# named), the dynamic run's decision log, the plot when gnuplot is
# installed, and that bad arguments exit 2 with a message.
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
        if ($0 != "regime,straggler,straggler_ranks,split,policy,seed,jct_s,wait_s,final_test_acc,time_to_target_s,time_to_target3_s")
            bad("header")
        next
    }
    {
        if (NF != 11) bad(NF " fields")
        if ($1 != "burst-noniid" || $2 != "burst:3:4:26" || $3 != "1" || $4 != "noniid:0.95") bad("regime columns")
        if ($5 != (NR == 2 ? "bsp" : "dynamic")) bad("policy " $5)
        if ($6 != 1) bad("seed")
        for (i = 7; i <= 11; i++) if ($i !~ /^-?[0-9]+(\.[0-9]+)?$/) bad("field " i " not a number")
        if (!($7 > 0 && $8 >= 0)) bad("JCT or wait")
        if (!($9 >= 0.6 && $9 <= 1)) bad("final accuracy " $9 " not in [0.6, 1]")
        if (!($10 == -1 || ($10 > 0 && $10 <= $7))) bad("time to target " $10 " not -1 nor within the JCT")
        if (!($11 == -1 || ($11 >= $10 && $10 > 0 && $11 <= $7))) bad("held time to target " $11 " not -1 nor in [first, JCT]")
    }
    END { if (!err && NR != 3) { print "FAIL: train-matrix: matrix.csv has " NR - 1 " runs, expected 2"; exit 1 } }
' "$csv" || exit 1

md=$work/m/matrix.md
grep -q '^| regime | bsp | dynamic | best static | dynamic vs best |$' "$md" || fail "matrix.md: header"
[ "$(grep -c '^| burst-noniid (burst:3:4:26 on rank 1, noniid:0.95) |' "$md")" = 1 ] ||
    fail "matrix.md: no single row for the regime"
row=$(grep '^| burst-noniid' "$md")
awk -F'|' '{ exit !(NF == 7 && $5 ~ /^ (bsp|- \(all missed\)) $/) }' <<<"$row" ||
    fail "matrix.md: row '$row' lacks a cell per policy or the best static policy"
[ -f "$work/m/burst-noniid/dynamic-s1/ctl.log" ] ||
    fail "the dynamic run has no decision log"
if command -v gnuplot >/dev/null 2>&1; then
    [ -s "$work/m/time_to_target.png" ] || fail "gnuplot is installed but no time_to_target.png"
fi

# bad arguments
for a in "--regimes slow-iid" "--seeds x" "--workers 1" "--iters 5" "--noniid 2"; do
    # shellcheck disable=SC2086
    "$MATRIX" --build "$BUILD" --out "$work/bad" $a >"$work/bad.log" 2>&1
    rc=$?
    [ "$rc" = 2 ] && grep -q '^matrix.sh: ' "$work/bad.log" || fail "matrix.sh $a: exit $rc: $(cat "$work/bad.log")"
done
echo "train-matrix: ok"
