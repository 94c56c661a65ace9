#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_step.sh - what one SSP step (serene_step: push, clock and pull of an
# iteration, pipelined) costs against the synchronous allreduce of the
# same floats a data-parallel user would run instead: bench_store's
# allreduce/float and step/bsp cases, timed in the same run, for every
# transport, worker count and size; one markdown row per case with both
# medians and their ratio (the target: step at most 1.1x the allreduce),
# and the 1-minute load average when the case ended.
#
#   bench/run_step.sh [--build DIR] [--transports udp,dpdk] [--workers 2,4]
#                     [--words 79510,1048576,11000000] [--reps 7] [--runs 3]
#
#   --words LIST  floats per call: the demo's MLP (79,510), 1 Mi, and about
#                 ResNet-18 (11 M); the store is sized for them
#   --reps N      timed samples per run of a case (medians); a sample is 10
#                 calls up to 1 Mi floats, 2 above
#   --runs K      runs of each case (each its own job, the pair timed in
#                 it): the row gives the medians over the runs of both times
#                 and of their ratio (one slow run, e.g. while the scheduler
#                 puts the busy-polling DPDK ranks on one core, moves no
#                 median)
#   dpdk          every rank on its own memif port to the embedded switch,
#                 as bench/run_suite.sh runs it (needs root)
#
# Logs go to BUILD/step/ (one per case); the table to stdout.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-bench TRANSPORTS=udp,dpdk WORKERS=2,4 WORDS=79510,1048576,11000000 REPS=7 RUNS=3
die() { echo "run_step: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift ;;
    --transports) TRANSPORTS=${2:?}; shift ;;
    --workers) WORKERS=${2:?}; shift ;;
    --words) WORDS=${2:?}; shift ;;
    --reps) REPS=${2:?}; shift ;;
    --runs) RUNS=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "bad --reps '$REPS'"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "bad --runs '$RUNS'"
[[ $WORDS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "bad --words '$WORDS'"
# shellcheck source=bench_lib.sh disable=SC2153 # RUN: set by bench_init
. "$(dirname "$0")/bench_lib.sh"
bench_init step "$BUILD"
STORE_BENCH=$BUILD/bench/bench_store
[ -x "$STORE_BENCH" ] || die "$STORE_BENCH was not built"

echo "| transport | N | floats | allreduce (ms) | step (ms) | step / allreduce | runs' ratios | load avg |"
echo "|---|---|---|---|---|---|---|---|"
IFS=, read -ra TS <<<"$TRANSPORTS"
IFS=, read -ra NS <<<"$WORKERS"
IFS=, read -ra WS <<<"$WORDS"
total=$((${#TS[@]} * ${#NS[@]} * ${#WS[@]})) k=0 fails=0
for t in "${TS[@]}"; do
    for n in "${NS[@]}"; do
        for w in "${WS[@]}"; do
            k=$((k + 1))
            tag=$t-n$n-w$w
            iters=10
            [ "$w" -gt 1048576 ] && iters=2
            rows=()
            for ((run = 1; run <= RUNS; run++)); do
                echo "run_step: [$k/$total] $t N=$n $w floats, run $run/$RUNS" >&2
                env_=(SERENE_TRANSPORT=udp) sw=()
                if [ "$t" = dpdk ]; then
                    memif_args "$TMP/$tag-r$run" "$n" "$EAL"
                    sw=("${MEMIF_SW[@]}") env_=("${MEMIF_ENV[@]}")
                fi
                if ! timeout -k 10 900 env "${env_[@]}" "$RUN" -n "$n" --no-prefix --timeout 880 \
                    --store $((w + 256)) "${sw[@]+"${sw[@]}"}" -- "$STORE_BENCH" --csv --small 256 \
                    --large 256 --step "$w" --reps "$REPS" --warmup 1 --iters "$iters" \
                    >"$LOGS/$tag-r$run.csv" 2>"$LOGS/$tag-r$run.log"; then
                    echo "run_step: $t N=$n $w floats: run $run failed (see $LOGS/$tag-r$run.log)" >&2
                    continue
                fi
                # "allreduce_median step_median" of this run, if it verified
                rows+=("$(awk -F, '{ gsub(/"/, "") } $1 == "allreduce" { ar = $5 }
                    $1 == "step" && $9 == "ok" { st = $5 } END { if (ar && st) print ar, st }' \
                    "$LOGS/$tag-r$run.csv")")
            done
            load=$(cut -d' ' -f1 /proc/loadavg)
            printf '%s\n' "${rows[@]+"${rows[@]}"}" | awk -v t="$t" -v n="$n" -v w="$w" -v load="$load" \
                -v runs="$RUNS" '
                function median(a, m,    i, j, x) {
                    for (i = 2; i <= m; i++)
                        for (j = i; j > 1 && a[j - 1] > a[j]; j--) { x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
                    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
                }
                NF == 2 { m++; ar[m] = $1; st[m] = $2; q[m] = $2 / $1; qs = qs (qs ? " " : "") sprintf("%.2f", $2 / $1) }
                END {
                    if (m < runs) { printf "| %s | %d | %d | FAILED: %d of %d runs | | | | |\n", t, n, w, m, runs; exit 1 }
                    printf "| %s | %d | %d | %.3f | %.3f | %.2f | %s | %s |\n", t, n, w, median(ar, m) * 1e3,
                           median(st, m) * 1e3, median(q, m), qs, load }' || fails=$((fails + 1))
        done
    done
done
echo
echo "(bench/run_step.sh --reps $REPS --runs $RUNS, $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%d); each time the median of $REPS samples in a run, then over the runs)"
[ "$fails" -eq 0 ]
