#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# share.sh - a job mix on one shared switch, ATP/ESA style: jobs of 4
# workers arrive over time (seeded gaps, sizes, repetitions and
# priorities), each running its allreduce calls through one serene-switch
# whose pool holds 2 jobs at full window (each job's window is --slots,
# 16 by default; 2 x --slots blocks of 256 words), with a fallback
# aggregator (a second serene-switch) on a host whose one link carries
# every worker's packets of the rounds it sums, as a parameter server's
# does. Each seed's mix runs once per policy, the policies in
# alternating order from seed to seed:
#   static    today's reservation: a job starts once a block for every
#             slot is free (first come, first served; it waits before)
#             and holds them for its whole run
#   first     blocks leased as rounds start, first come; returned idle
#   fair      as first, and a job below its share takes blocks back
#   priority  as first, and a job takes blocks from lower priorities
# Two networks (--net):
#   rack      (default) bench/fabric_net.sh's emulated rack: each worker
#             on a host of its own, the fallback on one more, every link
#             shaped to --rate Mbit/s (TBF, 256 KiB queue), the switch in
#             its namespace; needs root
#   loopback  every process on 127.0.0.1, the fallback behind slow_relay
#             at --fallback-pps packets per second; on a machine of few
#             cores the processes then compete for the CPU rather than
#             for links, so it shows the mechanism more than the policies
# Per run: every job's completion time (arrival to its last rank's exit,
# a wait for its reservation included), their mean and maximum, the
# pool's utilisation (blocks held over blocks, sampled every 0.2 s while
# jobs run), the rounds and bytes that went through the fallback (each
# round: 4 contributions up and 4 results down, header + 1 KiB), and how
# busy the shared switch's process (cores) and the machine's CPUs (share
# of all) were, and the share of the run's time (0.2 s steps) the CPUs
# were 90% busy or more: then the emulation measures the CPUs, not the
# switch's memory.
# table.md: medians over the seeds (min-max), the mean JCT against
# static's, and each job's worst ratio to its own time under static in
# the same seed.
#
#   bench/share.sh [--build DIR] [--net rack|loopback] [--seeds 1,2,3,4,5,6]
#                  [--policies LIST] [--jobs J] [--rate MBIT] [--size N] [--slots S]
#                  [--prio MODE]
#                  [--pool-idle SEC]
#                  [--fallback-pps P] [--out DIR]
#
#   --build DIR        a meson build with the tests (default build)
#   --net NET          rack (default) or loopback
#   --seeds LIST       mixes (default 1,2,3,4,5,6)
#   --policies LIST    default static,first,fair,priority
#   --jobs J           jobs per mix (default 8; 1..15 on the rack)
#   --rate MBIT        the rack's links (default 12: the rate at which the
#                      mix leaves this 2-core machine's CPUs unsaturated;
#                      at 50 they are saturated a third of the time, see
#                      the table's last columns)
#   --size N           the big jobs' floats per call (default 262144 on
#                      the rack, 4194304 on loopback); the others' a
#                      quarter of it
#   --slots S          each job's window (default 16); the pool holds 2
#                      jobs at full window (2 S blocks)
#   --prio MODE        random (default: 0..2 per job, seeded) or arrival
#                      (the earlier a job arrives, the higher its priority,
#                      as a queue ranks it)
#   --pool-idle SEC    the switch's --pool-idle (default 0.25: 2.5 times
#                      the workers' longest resend interval, rto_max)
#   --fallback-pps P   loopback: the fallback's packets per second, both
#                      ways (default 50000)
#   --out DIR          results.csv, runs.csv, table.md and logs (default
#                      BUILD/share)
#
# A job's calls are 4 to 12 allreduces of --size floats (a quarter of it
# for half the jobs). Exit status: 0; 1 a
# job failed (its sums outside the bound, or a timeout); 2 bad usage or a
# missing binary.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build NET=rack SEEDS=1,2,3,4,5,6 POLICIES=static,first,fair,priority JOBS=8 RATE=12 PPS=50000 IDLE=0.25 PRIO=random OUT= BIG= SLOTS=16
die() { echo "share: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift ;;
    --net) NET=${2:?}; shift ;;
    --seeds) SEEDS=${2:?}; shift ;;
    --policies) POLICIES=${2:?}; shift ;;
    --jobs) JOBS=${2:?}; shift ;;
    --rate) RATE=${2:?}; shift ;;
    --size) BIG=${2:?}; shift ;;
    --slots) SLOTS=${2:?}; shift ;;
    --pool-idle) IDLE=${2:?}; shift ;;
    --prio) PRIO=${2:?}; shift ;;
    --fallback-pps) PPS=${2:?}; shift ;;
    --out) OUT=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
[[ $NET =~ ^(rack|loopback)$ ]] || die "bad --net '$NET' (rack or loopback)"
[[ $SEEDS =~ ^[0-9]+(,[0-9]+)*$ ]] || die "bad --seeds '$SEEDS'"
[[ $POLICIES =~ ^(static|first|fair|priority)(,(static|first|fair|priority))*$ ]] ||
    die "bad --policies '$POLICIES' (static, first, fair, priority)"
[[ $JOBS =~ ^[1-9][0-9]?$ ]] && [ "$JOBS" -le 32 ] || die "bad --jobs '$JOBS' (1..32)"
[ "$NET" = loopback ] || [ "$JOBS" -le 15 ] || die "--jobs $JOBS: the rack has hosts for 15 jobs"
[[ $RATE =~ ^[1-9][0-9]*$ ]] || die "bad --rate '$RATE'"
[[ $PPS =~ ^[1-9][0-9]*$ ]] || die "bad --fallback-pps '$PPS'"
[[ $PRIO =~ ^(random|arrival)$ ]] || die "bad --prio '$PRIO' (random or arrival)"
PRIO_ARRIVAL=0
[ "$PRIO" = random ] || PRIO_ARRIVAL=1
[[ $IDLE =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "bad --pool-idle '$IDLE'"
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || die "no build directory $BUILD"
SW=$BUILD/p4/swswitch/serene-switch RUN=$BUILD/lib/launch/serene-run
AR=$BUILD/tests/integ/ar_worker RELAY=$BUILD/tests/integ/slow_relay CTL=$BUILD/lib/ctl/serene-ctl
for b in "$SW" "$RUN" "$AR" "$RELAY" "$CTL"; do [ -x "$b" ] || die "$b was not built"; done
OUT=${OUT:-$BUILD/share}
mkdir -p "$OUT/logs" || die "cannot create $OUT"
[[ $SLOTS =~ ^[1-9][0-9]{0,2}$ ]] && [ "$SLOTS" -le 256 ] || die "bad --slots '$SLOTS' (1 to 256)"
BLOCKS=$((2 * SLOTS)) ELEMS=256
[ -n "$BIG" ] || { [ "$NET" = rack ] && BIG=262144 || BIG=4194304; }
[[ $BIG =~ ^[1-9][0-9]{0,8}$ ]] || die "bad --size '$BIG' (1 to 999999999 floats)"

# The mix of a seed: "JOB ARRIVAL_MS SIZE REPS PRIO" lines.
plan() {
    awk -v seed="$1" -v n="$JOBS" -v big="$BIG" -v byarr="$PRIO_ARRIVAL" 'BEGIN {
        srand(seed); t = 0
        for (j = 1; j <= n; j++) {
            size = rand() < 0.5 ? big / 4 : big
            reps = 4 + int(rand() * 9)
            prio = int(rand() * 3)
            if (byarr) prio = n - j + 1
            printf "%d %d %d %d %d\n", j, t, size, reps, prio
            t += 100 + int(rand() * 800)
        }
    }'
}

wait_port() {
    for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.05; done
    return 1
}

# free_blocks D: the pool's free blocks now.
free_blocks() {
    "$CTL" pool --control "$1/ctl" --raw | sed -n 's/.* free=\([0-9]*\).*/\1/p'
}

# reserved D J: wait (at most 10 s) until job J holds its window.
reserved() {
    for _ in $(seq 500); do
        "$CTL" pool --control "$1/ctl" --raw | grep -Eq "[=,]$2:$SLOTS:" && return 0
        sleep 0.02
    done
    return 1
}

# switches D POLICY: the fallback and the shared switch; sets SH (the
# shared switch's address), SHPID (its process) and procs.
switches() {
    local d=$1 pol=$2 fbjobs=() shjobs=() j arr size reps prio fb
    while read -r j arr size reps prio; do
        fbjobs+=(--job "$j:4:$ELEMS:$SLOTS,store=0")
    done <"$d/plan"
    if [ "$NET" = rack ]; then
        fab_spawn "$d/fallback.log" "$(fab_ns "$FBHOST")" "$SW" --listen "$(fab_host_ip "$FBHOST"):48300" \
            --port-file "$d/fb.port" "${fbjobs[@]}"
        procs+=("$FAB_SPAWNED")
        fb=$(fab_host_ip "$FBHOST"):48300
    else
        "$SW" --listen 127.0.0.1:0 --port-file "$d/fb.port" "${fbjobs[@]}" 2>"$d/fallback.log" &
        procs+=($!)
        wait_port "$d/fb.port" || die "the fallback did not start ($d/fallback.log)"
        "$RELAY" --to "127.0.0.1:$(cat "$d/fb.port")" --port-file "$d/relay.port" --pps "$PPS" \
            --queue 512 --max-seconds 900 >"$d/relay.log" 2>&1 &
        procs+=($!)
        wait_port "$d/relay.port" || die "the relay did not start ($d/relay.log)"
        fb=127.0.0.1:$(cat "$d/relay.port")
    fi
    wait_port "$d/fb.port" || die "the fallback did not start ($d/fallback.log)"
    while read -r j arr size reps prio; do
        shjobs+=(--job "$j:4:$ELEMS:$SLOTS,store=0,fallback=$fb,prio=$prio")
    done <"$d/plan"
    if [ "$NET" = rack ]; then
        fab_spawn "$d/shared.log" "$(fab_ns_sw)" "$SW" --listen "$FAB_SWITCH_IP:48200" \
            --port-file "$d/sh.port" --control "$d/ctl" --pool "$BLOCKS:$ELEMS:$pol" --pool-idle "$IDLE" "${shjobs[@]}"
        procs+=("$FAB_SPAWNED") SHPID=$FAB_SPAWNED
        SH=$FAB_SWITCH_IP:48200
    else
        "$SW" --listen 127.0.0.1:0 --port-file "$d/sh.port" --control "$d/ctl" \
            --pool "$BLOCKS:$ELEMS:$pol" --pool-idle "$IDLE" "${shjobs[@]}" 2>"$d/shared.log" &
        procs+=($!) SHPID=$!
    fi
    wait_port "$d/sh.port" || die "the shared switch did not start ($d/shared.log)"
    [ "$NET" = rack ] || SH=127.0.0.1:$(cat "$d/sh.port")
}

# job D J SIZE REPS: job J's 4 ranks (on the rack, on hosts 4(J-1)..4J-1);
# sets JP to a PID (a child of this shell) that exits, 0 or not, once
# every rank has, having written the time it saw the last exit (ns) to
# D/jobJ.end: the run loop polls every 0.2 s, too coarse for a job of 1 s.
job() {
    local d=$1 j=$2 size=$3 reps=$4 r
    if [ "$NET" != rack ]; then
        (
            trap - EXIT INT TERM HUP
            env -u SERENE_JOB_TOKEN SERENE_TIMEOUT_MS=120000 "$RUN" -n 4 --job "$j" --switch "$SH" \
                --timeout 600 -- "$AR" --elems "$ELEMS" --sizes "$size" --reps "$reps" --seed "$j" \
                >"$d/job$j.log" 2>&1
            rc=$?
            date +%s%N >"$d/job$j.end"
            exit $rc
        ) </dev/null >/dev/null 2>&1 &
        JP=$!
        return
    fi
    (
        trap - EXIT INT TERM HUP
        rp=() rc=0 nonce=$((RANDOM << 15 | RANDOM | 1))
        for r in 0 1 2 3; do
            ip netns exec "$(fab_ns $((4 * (j - 1) + r)))" env FABRIC_TAG="$FAB_TAG" SERENE_RANK=$r \
                SERENE_WORLD_SIZE=4 SERENE_JOB="$j" SERENE_SWITCH="$SH" SERENE_JOB_NONCE=$nonce \
                SERENE_TIMEOUT_MS=120000 timeout -k 5 600 "$AR" --elems "$ELEMS" --sizes "$size" \
                --reps "$reps" --seed "$j" >"$d/job$j.r$r.log" 2>&1 &
            rp+=($!)
        done
        for p in "${rp[@]}"; do wait "$p" || rc=1; done
        date +%s%N >"$d/job$j.end"
        cat "$d/job$j".r?.log >"$d/job$j.log"
        exit $rc
    ) </dev/null >/dev/null 2>&1 &
    JP=$!
}

# run SEED POLICY: one mix under one policy; appends to results.csv and runs.csv.
run() {
    local seed=$1 pol=$2 d=$OUT/logs/$1-$2 t0 j arr size reps prio k
    local -A jpid jarr
    rm -rf "$d" && mkdir -p "$d"
    plan "$seed" >"$d/plan"
    procs=()
    switches "$d" "$pol"
    t0=$(date +%s%N)
    local cpu0 sw0 cpuprev cpunow satur=0 ticks=0 b0 b1 t0c t1c
    cpu0=$(fab_cpu_jiffies) sw0=$(proc_ticks "$SHPID") cpuprev=$cpu0
    local pending running=0 fails=0 samples=0 used=0 line free now
    pending=$(wc -l <"$d/plan")
    exec 3<"$d/plan"
    read -r j arr size reps prio <&3 || j=
    while [ "$pending" -gt 0 ] || [ "$running" -gt 0 ]; do
        now=$((($(date +%s%N) - t0) / 1000000))
        while [ -n "$j" ] && [ "$arr" -le "$now" ]; do
            # static: today's reservation, so a job starts once its whole
            # window is free, first come first served (it waits meanwhile).
            [ "$pol" != static ] || [ "$(free_blocks "$d")" -ge "$SLOTS" ] || break
            job "$d" "$j" "$size" "$reps"
            jpid[$j]=$JP
            jarr[$j]=$arr
            [ "$pol" != static ] || reserved "$d" "$j" || echo "share: job $j took no reservation" >&2
            pending=$((pending - 1)) running=$((running + 1))
            read -r j arr size reps prio <&3 || j=
        done
        for k in "${!jpid[@]}"; do
            kill -0 "${jpid[$k]}" 2>/dev/null && continue
            wait "${jpid[$k]}" || { fails=$((fails + 1)); echo "share: job $k failed ($d/job$k.log)" >&2; }
            now=$(cat "$d/job$k.end" 2>/dev/null) || now=$(date +%s%N)
            now=$(((now - t0) / 1000000))
            echo "$seed,$pol,$k,${jarr[$k]},$((now - ${jarr[$k]}))" >>"$OUT/results.csv"
            unset "jpid[$k]"
            running=$((running - 1))
        done
        if [ "$running" -gt 0 ] && line=$("$CTL" pool --control "$d/ctl" --raw 2>/dev/null); then
            free=$(sed -n 's/.* free=\([0-9]*\).*/\1/p' <<<"$line")
            samples=$((samples + 1)) used=$((used + BLOCKS - free))
            echo "$line" >"$d/pool.last"
            echo "$((($(date +%s%N) - t0) / 1000000)) $line" >>"$d/pool.log"
        fi
        # the CPUs' busy share since the last pass; 90% or more is saturated
        cpunow=$(fab_cpu_jiffies)
        read -r b0 t0c b1 t1c <<<"$cpuprev $cpunow"
        ticks=$((ticks + t1c - t0c))
        [ $((100 * (b1 - b0))) -lt $((90 * (t1c - t0c))) ] || satur=$((satur + t1c - t0c))
        cpuprev=$cpunow
        # 0.2 s, less when the next job arrives sooner (it starts within a
        # few ms), 0.05 s while a job waits for its reservation.
        now=$((($(date +%s%N) - t0) / 1000000))
        if [ -n "$j" ] && [ "$arr" -le "$now" ]; then
            sleep 0.05
        elif [ -n "$j" ] && [ $((arr - now)) -lt 200 ]; then
            sleep "$(printf '0.%03d' $((arr - now)))"
        else
            sleep 0.2
        fi
    done
    exec 3<&-
    line=$("$CTL" pool --control "$d/ctl" --raw 2>/dev/null) && echo "$line" >"$d/pool.last"
    local away wall swcpu cpu
    away=$(sed 's/.* jobs=//; s/,/\n/g' "$d/pool.last" | awk -F: '{s += $4} END {print s + 0}')
    wall=$(($(date +%s%N) - t0))
    swcpu=$(awk -v a="$sw0" -v b="$(proc_ticks "$SHPID")" -v w="$wall" -v hz="$(getconf CLK_TCK)" \
        'BEGIN {printf "%.2f", (b - a) / hz / (w / 1e9)}')
    cpu=$(awk -v a="$cpu0" -v b="$(fab_cpu_jiffies)" 'BEGIN {
        split(a, x); split(b, y); t = y[2] - x[2]; printf "%.2f", t ? (y[1] - x[1]) / t : 0 }')
    stop_procs
    echo "$seed,$pol,$(awk -v u="$used" -v s="$samples" -v b="$BLOCKS" \
        'BEGIN {printf "%.3f", s ? u / (s * b) : 0}'),$away,$((away * 8 * (28 + 4 * ELEMS))),$fails,$(cut -d' ' -f1 /proc/loadavg),$swcpu,$cpu,$(awk -v a="$satur" -v t="$ticks" 'BEGIN {printf "%.2f", t ? a / t : 0}')" \
        >>"$OUT/runs.csv"
    [ "$fails" -eq 0 ]
}

# proc_ticks PID: the process's user + system clock ticks so far (0 when gone).
proc_ticks() {
    local f
    f=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    awk '{ print $12 + $13 }' <<<"$f"
}

stop_procs() {
    for p in "${procs[@]+"${procs[@]}"}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${procs[@]+"${procs[@]}"}"; do wait "$p" 2>/dev/null; done
    procs=()
}

procs=()
# shellcheck source=fabric_net.sh
. "$ROOT/bench/fabric_net.sh" # the rack, and fab_cpu_jiffies on loopback too
if [ "$NET" = rack ]; then
    fab_check_tools || die "the rack needs root, ip and tc"
    fab_lifetime share "srs$$" || die "cannot make a work directory"
    FBHOST=$((4 * JOBS))
    fab_up $((FBHOST + 1)) 1500 sw || die "cannot make the rack"
    fab_shape "$RATE" 262144 || die "tc: cannot shape the links to $RATE Mbit/s"
else
    trap stop_procs EXIT
fi
trap 'exit 1' INT TERM

echo "seed,policy,job,arrival_ms,jct_ms" >"$OUT/results.csv"
echo "seed,policy,utilisation,fallback_rounds,fallback_bytes,failed_jobs,load1,switch_cpu,machine_cpu,saturated" >"$OUT/runs.csv"
IFS=, read -ra seeds <<<"$SEEDS"
IFS=, read -ra pols <<<"$POLICIES"
status=0 i=0
for seed in "${seeds[@]}"; do
    order=("${pols[@]}")
    if [ $((i % 2)) -eq 1 ]; then # alternate the order from seed to seed
        order=()
        for ((k = ${#pols[@]} - 1; k >= 0; k--)); do order+=("${pols[$k]}"); done
    fi
    for pol in "${order[@]}"; do
        echo "share: seed $seed, $pol (load $(cut -d' ' -f1 /proc/loadavg))" >&2
        run "$seed" "$pol" || status=1
    done
    i=$((i + 1))
done
python3 "$ROOT/bench/share_table.py" "$OUT" >"$OUT/table.md" || status=1
cat "$OUT/table.md"
echo "share: results in $OUT/table.md, $OUT/results.csv, $OUT/runs.csv" >&2
exit "$status"
