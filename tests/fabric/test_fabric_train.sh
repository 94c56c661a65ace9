#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_fabric_train.sh BUILD - one short run of bench/fabric_train.sh: 2
# hosts on 100 Mbit/s links, the MLP for 20 steps with momentum, two seeds,
# DDP over Gloo with and without the fp16 compression hook, DDP over
# Serene with 16-bit values, the store's SSP(1) and the stream mode's
# SSP(1), without and with stragglers (p = 0.3).
# It must exit 0 and write:
#   - results.csv: a seed column, 2 runs (seeds 1 and 2) per system and p,
#     every final test accuracy at least 50%, the bits per value (32 for
#     gloo-ddp and the store, 16 for the others), lr 0.1 and momentum 0.5
#     (the store: plain SGD at lr 0.1 / (1 - 0.5) = 0.2), the stragglers' base the median over
#     the seeds of gloo-ddp-fp16's step time at p = 0;
#   - the runs in alternating order: each p's seed 1 in --systems order,
#     its seed 2 in reverse (the progress lines);
#   - table.md: its header (commit, command line, load average) and one
#     row per (system, p), each with 2 seeds and gloo-ddp-fp16's at 1.00x;
#   - the plot when gnuplot is there;
# and leave no namespace. Needs root and the torch extension in BUILD
# (else exit 77).
set -uo pipefail
BUILD=${1:?usage: $0 BUILD}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
ls "$BUILD"/lib/torch/serene_torch/serene_torch_ops*.so >/dev/null 2>&1 ||
    { echo "SKIP: no torch extension in $BUILD (-Dtorch=enabled, libtorch-dev)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fabric-train.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: fabric-train: $*"
    for f in "$tmp"/out/logs/*.h0.log; do
        [ -f "$f" ] && { echo "== $f (its end)"; tail -n 15 "$f"; }
    done
    exit 1
}
SYSTEMS=gloo-ddp,gloo-ddp-fp16,serene-ddp16,serene-ssp:1,serene-stream:1

before=$(ip netns list | grep -c '^srt')
timeout -k 10 560 "$ROOT/bench/fabric_train.sh" --build "$BUILD" --out "$tmp/out" -n 2 --rate 100 \
    --model mlp --steps 20 --eval-every 5 --lr 0.1 --momentum 0.5 --seeds 1,2 --straggle 0.3,0 \
    --target-acc 30 --systems "$SYSTEMS" --case-timeout 120 >"$tmp/log" 2>&1 &
pid=$!
wait $pid
rc=$?
cat "$tmp/log"
[ $rc -eq 0 ] || fail "fabric_train.sh exited $rc"
csv=$tmp/out/results.csv table=$tmp/out/table.md
[ -s "$table" ] && [ -s "$csv" ] || fail "no table.md or results.csv"
# col NAME: that column of results.csv, after "system,straggle_p,seed,".
col() {
    awk -F, -v want="$1" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { print $c["system"] "," ($c["straggle_p"] + 0) "," $c["seed"] "," $c[want] }' "$csv"
}
head -n 1 "$csv" | tr ',' '\n' | grep -qx seed || fail "results.csv has no seed column"
nsys=$(tr ',' '\n' <<<"$SYSTEMS" | wc -l) runs=$((4 * nsys))
[ "$(tail -n +2 "$csv" | wc -l)" -eq $runs ] || fail "$(tail -n +2 "$csv" | wc -l) runs in results.csv, want $runs"
for s in ${SYSTEMS//,/ }; do
    for p in 0 0.3; do
        [ "$(col seed | grep -c "^$s,$p,")" -eq 2 ] || fail "$s at p = $p: not 2 runs"
        [ "$(col seed | grep "^$s,$p," | cut -d, -f3 | sort -u | tr '\n' ' ')" = "1 2 " ] ||
            fail "$s at p = $p: not seeds 1 and 2"
        [ "$(grep -c "^| $s | $p | 2 |" "$table")" -eq 1 ] || fail "table.md: not one row of 2 seeds for $s, p = $p"
    done
done
[ "$(grep -c '^| ' "$table")" -eq $((2 * nsys + 1)) ] || fail "table.md has not one row per (system, p)"
col final_acc | awk -F, '$4 + 0 < 50 { bad = 1 } END { exit bad }' || fail "a run's final accuracy is below 50%"
col steps_per_s | awk -F, '$4 + 0 <= 0 { bad = 1 } END { exit bad }' || fail "a run's rate is 0"
col wire_bits | awk -F, '$4 != ($1 ~ /^(gloo-ddp|serene-ssp:1)$/ ? 32 : 16) { bad = 1 } END { exit bad }' ||
    fail "bits per value: want 32 for gloo-ddp and serene-ssp, 16 for the others"
col momentum | awk -F, '$4 + 0 != ($1 == "serene-ssp:1" ? 0 : 0.5) { bad = 1 } END { exit bad }' ||
    fail "a run's momentum is not 0.5 (0 for the store)"
col lr | awk -F, '$4 + 0 != ($1 == "serene-ssp:1" ? 0.2 : 0.1) { bad = 1 } END { exit bad }' ||
    fail "a run's lr is not 0.1 (0.2 for the store)"
base=$(col step_ms | awk -F, '$1 == "gloo-ddp-fp16" && $2 == 0 { print $4 }' | sort -g |
    awk '{ v[NR] = $1 } END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
col straggle_base_ms | awk -F, -v b="$base" '$2 > 0 && $4 != b { bad = 1 } END { exit bad }' ||
    fail "a straggler run's base is not gloo-ddp-fp16's median step time at p = 0 ($base ms)"
# The order: p ascending (0 first, whatever --straggle's order), then per p
# seed 1 forwards, seed 2 backwards.
want=$(for p in 0 0.3; do
    printf "%s,$p,1\n" ${SYSTEMS//,/ }
    printf "%s,$p,2\n" ${SYSTEMS//,/ } | tac
done)
got=$(sed -n 's/^== run [0-9]*\/'"$runs"': \([^,]*\), stragglers p=\([0-9.]*\), seed \([0-9]*\) .*/\1,\2,\3/p' "$tmp/log")
[ "$got" = "$want" ] || fail "the runs' order is not the alternating one: $(tr '\n' ' ' <<<"$got")"
grep -q '^.*, commit [0-9a-f?]' "$table" && grep -q -- '--seeds 1,2' "$table" &&
    grep -q 'load average [0-9.]*/[0-9.]*/[0-9.]* (min/median/max' "$table" ||
    fail "table.md's header lacks the commit, the command line or the load average"
grep -q '^| gloo-ddp-fp16 | 0.3 | 2 | .* | 1.00x | 1.00x | 0.0% |$' "$table" ||
    fail "table.md: the baseline's row is not 1.00x, 1.00x, 0.0% sooner"
if command -v gnuplot >/dev/null; then
    [ -s "$tmp/out/accuracy.png" ] || fail "gnuplot is there and accuracy.png is not"
fi
[ "$(ip netns list | grep -c '^srt')" -le "$before" ] || fail "namespaces of the run are left"
echo "PASS: fabric-train"
