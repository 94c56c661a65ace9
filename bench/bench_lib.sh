# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# bench_lib.sh - what run_resends.sh, run_one_worker.sh and run_suite.sh
# share (sourced): the built programs they run, a temporary directory
# removed on exit, busy loops of normal priority beside a case, stopped by
# PID, and the memif ports of a job over DPDK.
#
#   bench_init NAME BUILD   check BUILD's serene-run, bench_allreduce and
#                           serene-switch (sets RUN, BENCH and exports
#                           SERENE_SWITCH_BIN), make BUILD/NAME for the logs
#                           (LOGS, emptied of an earlier run's) and a
#                           temporary directory (TMP); the exit
#                           trap stops the loops and removes TMP
#   start_loops N [CPUS]    N `sh -c 'while :; do :; done'` in the background;
#                           with CPUS (a comma list), loop i on CPU i mod
#                           its length (taskset)
#   stop_loops              stop them (by PID) and wait for them
#   memif_args DIR N EAL    a job of N ranks over DPDK memif, sockets in DIR
#                           (created): sets MEMIF_SW (serene-run's options
#                           for the embedded switch: N server ports) and
#                           MEMIF_ENV (the ranks' environment: one client
#                           port each, %r the rank); 16 KiB buffers
#                           (bsize=16384) for frames over 2 KiB
# Needs die() from the caller.

# shellcheck disable=SC2034 # used by the callers
EAL="--no-huge -m 256 --no-pci --no-shconf --log-level=warning"
LOOPS=()

stop_loops() {
    local p
    for p in "${LOOPS[@]+"${LOOPS[@]}"}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    LOOPS=()
}

start_loops() {
    local i cpus=()
    [ -n "${2:-}" ] && IFS=, read -ra cpus <<<"$2"
    for ((i = 0; i < $1; i++)); do
        if [ ${#cpus[@]} -gt 0 ]; then
            taskset -c "${cpus[i % ${#cpus[@]}]}" sh -c 'while :; do :; done' &
        else
            sh -c 'while :; do :; done' &
        fi
        LOOPS+=($!)
    done
}

bench_init() {
    local name=$1 f
    RUN=$2/lib/launch/serene-run BENCH=$2/bench/bench_allreduce
    export SERENE_SWITCH_BIN=$2/p4/swswitch/serene-switch
    for f in "$RUN" "$BENCH" "$SERENE_SWITCH_BIN"; do [ -x "$f" ] || die "$f was not built"; done
    LOGS=$2/$name
    mkdir -p "$LOGS" || die "cannot create $LOGS"
    rm -f "$LOGS"/*.csv "$LOGS"/*.log "$LOGS"/*.load "$LOGS"/*.cpu # the tables read this run's alone
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/serene-$name.XXXXXX") || die "mktemp failed"
    trap 'stop_loops; rm -rf "$TMP"' EXIT
}

memif_args() {
    local dir=$1 n=$2 eal=$3 r vdevs=""
    mkdir -p "$dir" || die "cannot create $dir"
    for ((r = 0; r < n; r++)); do
        vdevs+=" --vdev=net_memif$r,role=server,bsize=16384,socket=$dir/memif$r"
    done
    MEMIF_SW=(--switch-arg=--dpdk "--switch-arg=$eal$vdevs")
    MEMIF_ENV=(SERENE_TRANSPORT=dpdk SERENE_DPDK_PORT=net_memif0
        "SERENE_DPDK_EAL_ARGS=$eal --vdev=net_memif0,role=client,bsize=16384,socket=$dir/memif%r")
}
