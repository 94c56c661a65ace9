#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_resends.sh - how many packets Serene's allreduce resends with no
# injected loss: bench_allreduce under serene-run for every transport,
# worker count, size and background load, one markdown row per case with
# the goodput, the packets resent in full and the probes, each as a share
# of all packets the ranks sent (summed over the ranks), and the 1-minute
# load average when the case ended. Waiting is not loss: the target is at most
# 1% resent.
#
#   bench/run_resends.sh [--build DIR] [--transports udp,dpdk] [--workers 1,2,4]
#                        [--sizes 16M,64M] [--elems 256] [--busy 0,2] [--reps 3]
#
#   --busy LIST   background loads: that many `sh -c 'while :; do :; done'`
#                 loops of normal priority run beside each case (stopped by
#                 PID after it)
#   dpdk          every rank on its own memif port to the embedded switch,
#                 as bench/run_suite.sh runs it (needs root)
#
# Logs go to BUILD/resends/ (one per case); the table to stdout.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-bench TRANSPORTS=udp,dpdk WORKERS=1,2,4 SIZES=16M,64M ELEMS=256 BUSY=0,2 REPS=3
die() { echo "run_resends: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift ;;
    --transports) TRANSPORTS=${2:?}; shift ;;
    --workers) WORKERS=${2:?}; shift ;;
    --sizes) SIZES=${2:?}; shift ;;
    --elems) ELEMS=${2:?}; shift ;;
    --busy) BUSY=${2:?}; shift ;;
    --reps) REPS=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
# shellcheck source=bench_lib.sh disable=SC2153 # RUN: set by bench_init
. "$(dirname "$0")/bench_lib.sh"
bench_init resends "$BUILD"

echo "| transport | values/pkt | N | size | busy loops | load avg | Gbps | packets sent | resent | resent % | probes % |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
IFS=, read -ra TS <<<"$TRANSPORTS"
IFS=, read -ra NS <<<"$WORKERS"
IFS=, read -ra ES <<<"$ELEMS"
IFS=, read -ra LS <<<"$BUSY"
for busy in "${LS[@]}"; do
    for t in "${TS[@]}"; do
        for e in "${ES[@]}"; do
            for n in "${NS[@]}"; do
                tag=$t-e$e-n$n-busy$busy
                env_=(SERENE_TRANSPORT=udp) sw=()
                if [ "$t" = dpdk ]; then
                    memif_args "$TMP/$tag" "$n" "$EAL"
                    sw=("${MEMIF_SW[@]}") env_=("${MEMIF_ENV[@]}")
                fi
                start_loops "$busy"
                timeout -k 10 900 env "${env_[@]}" "$RUN" -n "$n" --elems "$e" --no-prefix \
                    --timeout 900 "${sw[@]}" -- "$BENCH" --sizes "$SIZES" --reps "$REPS" \
                    --warmup 1 --csv >"$LOGS/$tag.csv" 2>"$LOGS/$tag.log"
                rc=$?
                load=$(cut -d' ' -f1 /proc/loadavg)
                stop_loops
                [ $rc -eq 0 ] || echo "run_resends: $tag failed (status $rc, $LOGS/$tag.log)" >&2
                grep '^"allreduce"' "$LOGS/$tag.csv" | while IFS=, read -r _ _ size _ _ _ _ _ ok extra; do
                    kv() { echo "$extra" | tr -d '"' | tr ' ' '\n' | sed -n "s/^$1=//p"; }
                    echo "| $t | $e | $n | $((size >> 20)) MiB | $busy | $load | $(kv gbps) | $(kv sent) |" \
                        "$(kv resent) | $(kv retrans_pct) | $(kv probes_pct) |$([ "$ok" = ok ] || echo " $ok")"
                done
            done
        done
    done
done
