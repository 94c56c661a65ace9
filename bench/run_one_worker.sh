#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_one_worker.sh - a one-worker allreduce over dpdk-memif, where the
# switch only echoes: the data path's own ceiling (worker, memif, switch),
# alone and beside busy loops. Runs bench_allreduce under serene-run for
# every values-per-packet and background load, --runs times in turn, and
# prints per case the median over the runs of the goodput (each run itself
# the median of --reps samples), its range, the CPU the job got (its
# processes' threads, from /proc/PID/task/TID/schedstat, read every 0.5 s
# from 1.5 s after the start, past EAL's start-up, to the last reading:
# cores, and Gbps per core, medians over the runs; "-" for a run too short
# to sample, so give --reps 200 or more for them at 2048 values), the
# packets resent in full as a share of all sent, and the 1-minute load
# average at the end of the runs. As root, from the repository root.
#
#   bench/run_one_worker.sh [--build DIR] [--elems 256,2048] [--busy 0,2]
#                           [--size 64M] [--runs 5] [--reps 20] [--copy]
#                           [--slots S] [--rsize LOG2] [--pin together|apart]
#
#   --busy LIST  background loads: that many `sh -c 'while :; do :; done'`
#                loops of normal priority beside each run (stopped by PID)
#   --copy       the worker's memif client copies frames as the server does;
#                by default it runs zero-copy (zero-copy=yes, its EAL with
#                --single-file-segments): memif then maps its mbufs
#   --slots S    the job's slot pool, so the worker's window (default: the
#                switch's, 128)
#   --rsize LOG2 memif rings of 2^LOG2 descriptors on both ends (default:
#                the driver's, 2^10)
#   --pin MODE   where the threads run (taskset; needs CPUs 0 and 1):
#                together: the worker and the switch on CPU 0, the busy
#                loops on CPU 1; apart: the worker on CPU 0, the switch on
#                CPU 1, the loops on 0 and 1 in turn. Default: wherever the
#                scheduler puts them
#
# Logs go to BUILD/one-worker/ (one per run); the table to stdout.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-bench ELEMS=256,2048 BUSY=0,2 SIZE=64M RUNS=5 REPS=20 ZC=1 SLOTS='' RSIZE='' PIN=''
die() { echo "run_one_worker: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift ;;
    --elems) ELEMS=${2:?}; shift ;;
    --busy) BUSY=${2:?}; shift ;;
    --size) SIZE=${2:?}; shift ;;
    --runs) RUNS=${2:?}; shift ;;
    --reps) REPS=${2:?}; shift ;;
    --copy) ZC=0 ;;
    --slots) SLOTS=${2:?}; shift ;;
    --rsize) RSIZE=${2:?}; shift ;;
    --pin) PIN=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
# shellcheck source=bench_lib.sh disable=SC2153 # RUN: set by bench_init
. "$(dirname "$0")/bench_lib.sh"
bench_init one-worker "$BUILD"
client="role=client,bsize=16384" server="role=server,bsize=16384" ceal=$EAL
[ -n "$RSIZE" ] && client+=",rsize=$RSIZE" server+=",rsize=$RSIZE"
slots=()
[ -n "$SLOTS" ] && slots=(--slots "$SLOTS")
[ "$ZC" = 1 ] && client+=",zero-copy=yes" ceal+=" --single-file-segments"
# --pin: serene-run (so the worker) under taskset, the switch it starts
# through a wrapper that puts it on its CPU, the loops on theirs.
pin=() loop_cpus=''
case $PIN in
'') ;;
together | apart)
    command -v taskset >/dev/null || die "--pin needs taskset (Debian: util-linux)"
    taskset -c 0,1 true 2>/dev/null || die "--pin needs CPUs 0 and 1"
    sw_cpu=0 loop_cpus=1
    [ "$PIN" = apart ] && sw_cpu=1 loop_cpus=0,1
    printf '#!/bin/sh\nexec taskset -c %s "%s" "$@"\n' "$sw_cpu" "$SERENE_SWITCH_BIN" >"$TMP/switch.sh"
    chmod +x "$TMP/switch.sh"
    pin=(taskset -c 0 env "SERENE_SWITCH_BIN=$TMP/switch.sh")
    ;;
*) die "--pin takes together or apart, not '$PIN'" ;;
esac
median() { sort -g | awk '{a[NR] = $1} END {print NR ? a[int((NR + 1) / 2)] : "-"}'; }

# The threads of PID's descendants: their /proc/C/task/T directories.
job_tasks() {
    local c
    for c in $(pgrep -P "$1"); do
        printf '%s\n' /proc/"$c"/task/*
        job_tasks "$c"
    done
}
# cpu_watch PID OUT: 1.5 s after PID (the job) started, take its threads,
# then read their schedstat every 0.5 s (shell builtins: the sampling itself
# costs next to nothing) while all of them live; OUT gets the CPU they ran
# from the first reading to the last complete one, in cores ("-" if the
# run was too short for two readings).
cpu_watch() {
    local pid=$1 out=$2 tasks first=() last=() now=() t0 t1='' tn ns i ok
    sleep 1.5
    mapfile -t tasks < <(job_tasks "$pid")
    t0=$EPOCHREALTIME
    for i in "${!tasks[@]}"; do
        read -r ns _ 2>/dev/null <"${tasks[i]}/schedstat" || { echo - >"$out"; return; }
        first[i]=$ns
    done
    while [ ${#tasks[@]} -gt 0 ] && kill -0 "$pid" 2>/dev/null; do
        sleep 0.5
        tn=$EPOCHREALTIME ok=1
        for i in "${!tasks[@]}"; do
            read -r ns _ 2>/dev/null <"${tasks[i]}/schedstat" || { ok=0; break; }
            now[i]=$ns
        done
        [ $ok = 1 ] || break
        t1=$tn last=("${now[@]}")
    done
    if [ -z "$t1" ]; then
        echo - >"$out"
        return
    fi
    ns=0
    for i in "${!tasks[@]}"; do ns=$((ns + last[i] - first[i])); done
    awk -v ns="$ns" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", ns / 1e9 / (b - a) }' >"$out"
}

IFS=, read -ra ES <<<"$ELEMS"
IFS=, read -ra LS <<<"$BUSY"
for run in $(seq "$RUNS"); do
    for busy in "${LS[@]}"; do
        for e in "${ES[@]}"; do
            tag=e$e-busy$busy-run$run
            start_loops "$busy" "$loop_cpus"
            timeout -k 10 600 "${pin[@]+"${pin[@]}"}" env SERENE_TRANSPORT=dpdk SERENE_DPDK_PORT=net_memif0 \
                "SERENE_DPDK_EAL_ARGS=$ceal --vdev=net_memif0,$client,socket=$TMP/$tag.sock" \
                "$RUN" -n 1 --elems "$e" "${slots[@]}" --no-prefix --timeout 600 --switch-arg=--dpdk \
                "--switch-arg=$EAL --vdev=net_memif0,$server,socket=$TMP/$tag.sock" \
                -- "$BENCH" --sizes "$SIZE" --reps "$REPS" --warmup 1 --csv >"$LOGS/$tag.csv" 2>"$LOGS/$tag.log" &
            job=$!
            cpu_watch "$job" "$LOGS/$tag.cpu" &
            watch=$!
            wait "$job"
            rc=$?
            wait "$watch"
            cut -d' ' -f1 /proc/loadavg >"$LOGS/$tag.load"
            stop_loops
            [ $rc -eq 0 ] || echo "run_one_worker: $tag failed (status $rc, $LOGS/$tag.log)" >&2
        done
    done
done

kv() { grep -h '^"allreduce"' "$@" | grep -o "[ \"]$K=[0-9.e+]*" | cut -d= -f2; }
echo "| values/pkt | busy loops | runs | Gbps, median | Gbps, range | job CPU, cores | Gbps per core |" \
    "resent % (max) | load avg |"
echo "|---|---|---|---|---|---|---|---|---|"
for busy in "${LS[@]}"; do
    for e in "${ES[@]}"; do
        f=("$LOGS"/e"$e"-busy"$busy"-run*.csv)
        g=$(K=gbps kv "${f[@]}")
        # Per run with a reading: "CORES", then " GBPS_PER_CORE" where it has a goodput.
        cpu=$(for c in "${f[@]}"; do
            cores=$(cat "${c%.csv}.cpu" 2>/dev/null) gb=$(K=gbps kv "$c")
            [ -n "$cores" ] && [ "$cores" != - ] && awk -v g="$gb" -v c="$cores" \
                'BEGIN { printf "%s", c; if (g != "" && c > 0) printf " %.2f", g / c; print "" }'
        done)
        echo "| $e | $busy | $(echo "$g" | grep -c .) | $(echo "$g" | median) |" \
            "$(echo "$g" | sort -g | head -1)-$(echo "$g" | sort -g | tail -1) |" \
            "$(echo "$cpu" | awk 'NF {print $1}' | median) |" \
            "$(echo "$cpu" | awk 'NF == 2 {print $2}' | median) |" \
            "$(K=retrans_pct kv "${f[@]}" | sort -g | tail -1) |" \
            "$(cat "$LOGS"/e"$e"-busy"$busy"-run*.load | sort -g | sed -n '1p;$p' | paste -sd-) |"
    done
done
