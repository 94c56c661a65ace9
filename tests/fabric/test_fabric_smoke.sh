#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_fabric_smoke.sh BUILD - one short run of bench/fabric.sh: N = 2 on
# 100 Mbit/s links, 4 MiB tensors, Serene with its default window and with
# 32 packets, and the peers this build has (Gloo, OpenMPI). It must exit 0
# with every result checked, write the table and the CSV, put at most 1.05x
# the tensor on each worker's link each way with the window of 32 (headers
# included), and leave no namespace behind. Needs root (else exit 77).
set -uo pipefail
BUILD=${1:?usage: $0 BUILD}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fabric-smoke.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
    local tag f
    # The failed cases' logs (fabric.sh names them), before the trap removes them.
    for tag in $(sed -n 's/.*FAILED (.*logs\/\([^ ]*\)\.\*)$/\1/p' "$tmp/log" 2>/dev/null); do
        for f in "$tmp/out/logs/$tag".*; do
            [ -f "$f" ] && { echo "== $f (its end)"; tail -n 20 "$f"; }
        done
    done
    echo "FAIL: fabric-smoke: $*"
    exit 1
}

timeout -k 10 240 "$ROOT/bench/fabric.sh" --build "$BUILD" --out "$tmp/out" -n 2 --rates 100 --sizes 4M \
    --reps 1 --windows 0,32 --case-timeout 60 >"$tmp/log" 2>&1 &
pid=$!
wait $pid
rc=$?
cat "$tmp/log"
[ $rc -eq 0 ] || fail "fabric.sh exited $rc"
csv=$tmp/out/results.csv
[ -s "$tmp/out/table.md" ] && [ -s "$csv" ] || fail "no table.md or results.csv"
awk -F, 'NR > 1 && $24 != "ok" { bad = 1 } END { exit bad }' "$csv" || fail "a result was not checked ok"
awk -F, 'NR > 1 && $1 == "serene" && $6 == 32 { n++; if ($14 > 1.05 || $15 > 1.05) bad = 1 }
    END { exit (n == 1 && !bad) ? 0 : 1 }' "$csv" || fail "Serene put more than 1.05x the tensor on a link"
ip netns list | grep -q "^srf$pid-" && fail "namespaces of the run are left"
echo "PASS: fabric-smoke"
