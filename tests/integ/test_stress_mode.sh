#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_stress_mode.sh BUILD - tests/stress.sh as a user runs it, made small:
# two rounds of the docs suite beside one busy loop, no compile. Checks the
# round lines, the summary and the exit status, that the busy loop is
# stopped when it returns, that two runs on one build at once each count
# their own rounds, and that bad usage exits 2 with a message.
set -uo pipefail
BUILD=${1:?usage: test_stress_mode.sh BUILD}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STRESS=$ROOT/tests/stress.sh
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; sed 's/^/  | /' "$TMP/out" 2>/dev/null; exit 1; }

"$STRESS" --build "$BUILD" --rounds 2 --suites docs --loops 1 --compile 0 --out "$TMP/logs" \
    >"$TMP/out" 2>&1 &
pid=$!
# The loop is the script's child while it runs: find it by its parent.
loop=
for _ in $(seq 100); do
    loop=$(pgrep -P "$pid" -f 'while :; do :; done' | head -1)
    [ -n "$loop" ] && break
    sleep 0.1
done
wait "$pid"
rc=$?
[ "$rc" -eq 0 ] || fail "exit status $rc, 0 expected"
[ -n "$loop" ] || fail "no busy loop seen while it ran"
kill -0 "$loop" 2>/dev/null && fail "busy loop $loop still runs after the script returned"
for r in 1 2; do
    grep -Eq "^stress: round $r/2: 2 passed, 0 failed, 0 skipped, [0-9]+ s, load [0-9.]+$" "$TMP/out" ||
        fail "no line for round $r"
done
grep -q '^stress: 2 rounds: 4 passed, 0 failed$' "$TMP/out" || fail "no closing line"
[ -f "$TMP/logs/round-2.txt" ] || fail "no output of round 2"
[ -f "$TMP/logs/round-2.json" ] || fail "no meson log of round 2"
[ -f "$TMP/logs/summary.txt" ] || fail "no summary.txt"

# Two runs at once on the same build (as when this test runs inside a
# round): each reads its own rounds' logs.
two=(--build "$BUILD" --rounds 2 --suites docs --loops 0 --compile 0)
"$STRESS" "${two[@]}" --out "$TMP/a" >"$TMP/out-a" 2>&1 &
pid_a=$!
"$STRESS" "${two[@]}" --out "$TMP/b" >"$TMP/out-b" 2>&1 &
pid_b=$!
wait "$pid_a"
rc_a=$?
wait "$pid_b"
rc_b=$?
for k in a b; do
    [ "$k" = a ] && rc=$rc_a || rc=$rc_b
    [ "$rc" -eq 0 ] || { cp "$TMP/out-$k" "$TMP/out"; fail "concurrent run $k: exit status $rc"; }
    grep -q '^stress: 2 rounds: 4 passed, 0 failed$' "$TMP/out-$k" ||
        { cp "$TMP/out-$k" "$TMP/out"; fail "concurrent run $k: no closing line with 4 passed"; }
done

for bad in "--rounds 0" "--loops x" "--compile 2" "--suites nosuch" "--bogus"; do
    # shellcheck disable=SC2086 # the options split on purpose
    "$STRESS" --build "$BUILD" $bad --out "$TMP/bad" >"$TMP/out" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || fail "'$bad': exit status $rc, 2 expected"
    grep -q '^stress: ' "$TMP/out" || fail "'$bad': no message"
done
echo "stress mode: 2 rounds, closing line, loop stopped, two runs at once, 5 bad usages refused"
