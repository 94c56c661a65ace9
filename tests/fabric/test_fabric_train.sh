#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_fabric_train.sh BUILD - one short run of bench/fabric_train.sh: 2
# hosts on 100 Mbit/s links, the MLP for 20 steps, DDP over Gloo, DDP over
# Serene and SSP(1) over the store, without and with stragglers (p = 0.3).
# It must exit 0 and write the table, the CSV (6 runs, every final test
# accuracy at least 50%, the stragglers' base DDP over Gloo's step time of
# the same run) and the plot when gnuplot is there, and leave no namespace.
# Needs root and the torch extension in BUILD (else exit 77).
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

before=$(ip netns list | grep -c '^srt')
timeout -k 10 400 "$ROOT/bench/fabric_train.sh" --build "$BUILD" --out "$tmp/out" -n 2 --rate 100 \
    --model mlp --steps 20 --eval-every 10 --lr 0.1 --straggle 0,0.3 --target-acc 30 \
    --systems gloo-ddp,serene-ddp,serene-ssp:1 --case-timeout 120 >"$tmp/log" 2>&1 &
pid=$!
wait $pid
rc=$?
cat "$tmp/log"
[ $rc -eq 0 ] || fail "fabric_train.sh exited $rc"
csv=$tmp/out/results.csv
[ -s "$tmp/out/table.md" ] && [ -s "$csv" ] || fail "no table.md or results.csv"
[ "$(tail -n +2 "$csv" | wc -l)" -eq 6 ] || fail "$(tail -n +2 "$csv" | wc -l) runs in results.csv, want 6"
[ "$(grep -c '^| ' "$tmp/out/table.md")" -eq 7 ] || fail "table.md has not a row per run"
awk -F, 'NR > 1 && ($9 + 0 < 50 || $4 + 0 <= 0) { bad = 1 } END { exit bad }' "$csv" ||
    fail "a run's final accuracy is below 50% or its rate is 0"
base=$(awk -F, '$1 == "gloo-ddp" && $2 + 0 == 0 { print $5 }' "$csv")
awk -F, -v b="$base" 'NR > 1 && $2 + 0 > 0 && $3 != b { bad = 1 } END { exit bad }' "$csv" ||
    fail "a straggler run's base is not DDP over Gloo's step time ($base ms)"
grep -q '^| serene-ssp:1 | 0.3 |' "$tmp/out/table.md" || fail "no SSP(1) run with stragglers"
if command -v gnuplot >/dev/null; then
    [ -s "$tmp/out/accuracy.png" ] || fail "gnuplot is there and accuracy.png is not"
fi
[ "$(ip netns list | grep -c '^srt')" -le "$before" ] || fail "namespaces of the run are left"
echo "PASS: fabric-train"
