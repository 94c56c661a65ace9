#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_pace.sh - the sender against a slow switch: tests/integ/test_pace.sh's
# scenario (3 unshaped workers, serene-switch behind slow_relay: 3000
# packets per second both directions, a queue of 64) run K times; one
# markdown row per run with what each rank sent against the packets its
# data needs (the worst rank), the worst call's time over what the
# relay's rate allows it, probes and resends summed over the ranks, the
# relay's drops and the 1-minute load average; then the median and the
# worst of the runs. The targets: at most 2x the packets, at most 3x the
# time (so a sender that keeps up with a slow switch neither floods it nor
# stalls; the test checks the packets, this the time too).
#
#   bench/run_pace.sh [--build DIR] [--runs K] [--case relay|trains]
#
#   --build DIR  a meson build with the tests (default build)
#   --runs K     runs (default 10)
#   --case C     relay (default), or trains: the relay also drops every
#                UDP GSO train whole, as BMv2's packet socket does behind
#                a veth pair; each rank's path test at the join finds it
#
# Logs go to BUILD/pace/ (one per run); the table to stdout.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build RUNS=10 CASE=relay
die() { echo "run_pace: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift ;;
    --runs) RUNS=${2:?}; shift ;;
    --case) CASE=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "bad --runs '$RUNS'"
[[ $CASE =~ ^(relay|trains)$ ]] || die "bad --case '$CASE' (relay or trains)"
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || die "no build directory $BUILD"
for b in lib/launch/serene-run tests/integ/ar_worker tests/integ/ssp_worker tests/integ/slow_relay \
    p4/swswitch/serene-switch; do
    [ -x "$BUILD/$b" ] || die "$BUILD/$b was not built"
done
LOGS=$BUILD/pace
mkdir -p "$LOGS"

echo "| run | sent / needed (worst rank) | worst call / rate's allowance | probes | resends | relay drops | load avg |"
echo "|---|---|---|---|---|---|---|"
fails=0
for ((run = 1; run <= RUNS; run++)); do
    echo "run_pace: run $run/$RUNS ($CASE)" >&2
    log=$LOGS/$CASE-$run.log
    (cd "$BUILD" && SERENE_SWITCH_BIN=$BUILD/p4/swswitch/serene-switch SERENE_LOG_LEVEL=warn \
        timeout -k 5 300 "$ROOT/tests/integ/test_pace.sh" "$CASE" lib/launch/serene-run \
        tests/integ/ar_worker tests/integ/ssp_worker tests/integ/slow_relay) >"$log" 2>&1 ||
        { fails=$((fails + 1)); echo "run_pace: run $run failed (see $log)" >&2; }
    # "rank R: pace P/s: sent S packets for N the data needs (Q x); worst call W x ..."
    # and "rank R: C calls, ... retrans T ... probes P ..."; "relay: ... dropped_full=D"
    awk -v run="$run" -v load="$(cut -d' ' -f1 /proc/loadavg)" '
        / pace [0-9]+\/s: sent / { for (i = 1; i < NF; i++) {
                if ($i == "sent") s = $(i + 1); if ($i == "for") nd = $(i + 1)
                if ($i == "call") { w = $(i + 1); sub(/x$/, "", w); if (w + 0 > wc) wc = w + 0 } }
            if (nd > 0 && s / nd > q) q = s / nd }
        / calls, worst call / { for (i = 1; i < NF; i++) {
                if ($i == "retrans") t += $(i + 1); if ($i == "probes") p += $(i + 1) } }
        /relay: forwarded=/ { for (i = 1; i <= NF; i++) if ($i ~ /^dropped_full=/) { d = $i; sub(/.*=/, "", d) } }
        END { printf "| %d | %.2fx | %.2fx | %d | %d | %s | %s |\n", run, q, wc, p, t, d == "" ? "?" : d, load }' "$log"
done | tee "$LOGS/$CASE.md"
awk -F'|' '{ gsub(/[ x]/, "", $3); gsub(/[ x]/, "", $4); q[++m] = $3 + 0; w[m] = $4 + 0 }
    function median(a, m,    i, j, x) {
        for (i = 2; i <= m; i++)
            for (j = i; j > 1 && a[j - 1] > a[j]; j--) { x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END { if (m) printf "\nmedian %.2fx the packets, %.2fx the time; worst %.2fx, %.2fx\n",
                        median(q, m), median(w, m), q[m], w[m] }' "$LOGS/$CASE.md"
echo "(bench/run_pace.sh --case $CASE --runs $RUNS, $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%d))"
[ "$fails" -eq 0 ]
