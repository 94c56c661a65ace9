#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fabric.sh - allreduce on an emulated rack whose links are the bottleneck:
# Serene (serene-switch in the switch's namespace, one bench_allreduce rank
# per host namespace, udp), Gloo's ring (bench_gloo --chunked 1, one rank
# per host, TCP routed through the switch's namespace) and OpenMPI over TCP
# (mpirun in the switch's namespace, orted launched into the hosts by
# bench/fabric_rsh.sh), through the same shaped links, on the same tensors,
# every result checked. The rack is bench/fabric_net.sh's; it is made per
# worker count and removed on exit, on failure and on Ctrl-C.
#
#   bench/fabric.sh [--quick | --full] [-n 2,4,8] [--rates 100,50] [--sizes 64M]
#                   [--mtu 9000|1500] [--queue BYTES] [--reps R] [--windows 0,32]
#                   [--peers serene,gloo,mpi] [--loss P] [--dup P] [--delay MIN-MAX]
#                   [--seed S] [--switch sw|bmv2] [--build DIR] [--out DIR]
#                   [--case-timeout SEC]
#
#   --quick (default)  N = 4, 64 MiB, links of 100 and 50 Mbit/s, 2 samples
#   --full             N = 2, 4, 8; 16, 64 and 256 MiB; 100 and 50 Mbit/s;
#                      3 samples; windows 0,64,32,16 (about 80 minutes)
#   --rates LIST       link rates in Mbit/s, both directions of every link
#                      (0: unshaped, to see where the CPU is the limit)
#   --mtu M            link MTU (default 9000): Serene packs 2048 values per
#                      packet at 9000 and 256 at 1500 (--elems to override)
#   --queue BYTES      each link end's TBF queue (default 262144, k/M suffixes)
#   --windows LIST     SERENE_WINDOW of the Serene runs (default 0: the
#                      switch's pool of 128 slots); the first is the table's,
#                      the others make the congestion table (quick: 0,32)
#   --loss/--dup P     drop / duplicate each packet with probability P on
#                      every link, each direction (fabric_nfq)
#   --delay MIN-MAX    hold each packet MIN..MAX ms (uniform; reorders)
#   --seed S           the impairments' seed (default 1)
#   --switch bmv2      BMv2 simple_switch in the switch's namespace instead:
#                      its allreduce rate and round trip measured, then 3
#                      workers (-n) check allreduce and the store through it
#                      and report the packets sent against those the data
#                      needs (at most 2x) and each call's time against what
#                      the measured rate allows (at most 3x); the hosts'
#                      UDP GSO stays on (the library tests the path); needs
#                      p4c-bm2-ss, simple_switch and simple_switch_CLI on
#                      PATH (else it says so, exit 77)
#   --build DIR        meson build dir (default build-fabric, release)
#   --out DIR          results (default BUILD/fabric-results): table.md,
#                      results.csv, fabric.png, logs/. table.md's first
#                      table gives per run the time per call, the goodput
#                      and its share of the link rate, the bytes on each
#                      worker's link per call over the tensor each way
#                      (headers and resends included), drops, resends and
#                      CPU; its second, the speed-up over the rings
#   --case-timeout S   bound of each program run (default 900)
#   FABRIC_MPI_MCA     OpenMPI's extra arguments (default: its ring allreduce,
#                      '--mca coll_tuned_use_dynamic_rules 1
#                      --mca coll_tuned_allreduce_algorithm 4'; its own choice
#                      here, Rabenseifner's, took twice the ring's time)
#
# Needs root, iproute2 (ip, tc), meson and ninja; OpenMPI (openmpi-bin
# libopenmpi-dev), Gloo (libgloo-dev g++) and gnuplot (gnuplot-nox) when
# present; iptables and fabric_nfq (libnetfilter-queue-dev) for impairments.
# Exit status: 0, 1 (a case failed or timed out), 2 (setup), 77 (not root,
# or the bmv2 tools missing).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=fabric_net.sh
. "$ROOT/bench/fabric_net.sh"

FABRIC_MPI_MCA=${FABRIC_MPI_MCA---mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4}
MODE=quick NS_LIST='' RATES='' SIZES='' MTU=9000 QUEUE=262144 REPS='' WINDOWS='' ELEMS=''
PEERS=serene,gloo,mpi LOSS=0 DUP=0 DELAY=0 SEED=1 KIND=sw BUILD='' OUT='' CASE_TIMEOUT=900
die() { echo "fabric: $*" >&2; exit 2; }
to_bytes() { # 64M -> 67108864
    local v=${1%[kKmMgG]} u=${1: -1}
    case $u in k | K) echo $((v << 10)) ;; m | M) echo $((v << 20)) ;; g | G) echo $((v << 30)) ;; *) echo "$1" ;; esac
}
while [ $# -gt 0 ]; do
    case $1 in
    --quick) MODE=quick ;;
    --full) MODE=full ;;
    -n) NS_LIST=${2:?-n needs a list}; shift ;;
    --rates) RATES=${2:?}; shift ;;
    --sizes) SIZES=${2:?}; shift ;;
    --mtu) MTU=${2:?}; shift ;;
    --queue) QUEUE=$(to_bytes "${2:?}"); shift ;;
    --reps) REPS=${2:?}; shift ;;
    --windows) WINDOWS=${2:?}; shift ;;
    --elems) ELEMS=${2:?}; shift ;;
    --peers) PEERS=${2:?}; shift ;;
    --loss) LOSS=${2:?}; shift ;;
    --dup) DUP=${2:?}; shift ;;
    --delay) DELAY=${2:?}; shift ;;
    --seed) SEED=${2:?}; shift ;;
    --switch) KIND=${2:?}; shift ;;
    --build) BUILD=${2:?}; shift ;;
    --out) OUT=${2:?}; shift ;;
    --case-timeout) CASE_TIMEOUT=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
if [ $MODE = quick ]; then
    : "${NS_LIST:=4}" "${SIZES:=64M}" "${RATES:=100,50}" "${REPS:=2}" "${WINDOWS:=0,32}"
else
    : "${NS_LIST:=2,4,8}" "${SIZES:=16M,64M,256M}" "${RATES:=100,50}" "${REPS:=3}" "${WINDOWS:=0,64,32,16}"
fi
[ "$KIND" = bmv2 ] && [ "$NS_LIST" = 4 ] && NS_LIST=3
[[ $NS_LIST =~ ^[0-9]+(,[0-9]+)*$ ]] || die "bad -n '$NS_LIST'"
[[ $RATES =~ ^[0-9]+(,[0-9]+)*$ ]] || die "bad --rates '$RATES' (Mbit/s)"
[[ $SIZES =~ ^[0-9]+[kKmMgG]?(,[0-9]+[kKmMgG]?)*$ ]] || die "bad --sizes '$SIZES'"
[[ $MTU =~ ^(1500|9000)$ ]] || die "--mtu is 1500 or 9000"
[[ $QUEUE =~ ^[1-9][0-9]*$ ]] || die "bad --queue"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "bad --reps '$REPS'"
[[ $WINDOWS =~ ^[0-9]+(,[0-9]+)*$ ]] || die "bad --windows '$WINDOWS'"
[[ $CASE_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "bad --case-timeout"
[[ $SEED =~ ^[0-9]+$ ]] || die "bad --seed"
[[ $KIND =~ ^(sw|bmv2)$ ]] || die "--switch is sw or bmv2"
[[ $DELAY =~ ^(0|[0-9.]+-[0-9.]+)$ ]] || die "bad --delay '$DELAY' (MIN-MAX ms)"
for n in ${NS_LIST//,/ }; do [ "$n" -ge 2 ] && [ "$n" -le 32 ] || die "-n: 2..32 workers"; done
[ -n "$ELEMS" ] || { [ "$MTU" = 9000 ] && ELEMS=2048 || ELEMS=256; }
IMPAIRED=0
[ "$LOSS" != 0 ] || [ "$DUP" != 0 ] || [ "$DELAY" != 0 ] && IMPAIRED=1

if [ "$KIND" = bmv2 ]; then
    for t in "${P4C_BM2_SS:-p4c-bm2-ss}" "${SIMPLE_SWITCH:-simple_switch}" "${SIMPLE_SWITCH_CLI:-simple_switch_CLI}"; do
        command -v "$t" >/dev/null || { echo "SKIP: fabric --switch bmv2: $t not on PATH (BMv2 is not in Debian; p4/README.md)"; exit 77; }
    done
fi
[ "$(id -u)" -eq 0 ] || { echo "SKIP: fabric: needs root (network namespaces, tc)"; exit 77; }
fab_check_tools || exit 2
for t in meson ninja timeout awk; do command -v $t >/dev/null || die "$t not found"; done

# ---- build ------------------------------------------------------------------
BUILD=${BUILD:-$ROOT/build-fabric}
mkdir -p "$BUILD" && BUILD=$(cd "$BUILD" && pwd) || die "cannot use $BUILD"
OUT=${OUT:-$BUILD/fabric-results}
if [ ! -f "$BUILD/build.ninja" ]; then
    echo "== configuring $BUILD (release)"
    meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null || die "meson setup failed"
fi
echo "== building $BUILD"
# only what the rack runs (those of them this configuration has)
mapfile -t TARGETS < <(ninja -C "$BUILD" -t targets all 2>/dev/null | sed 's/:.*//' | grep -xE \
    'bench/(bench_allreduce|bench_gloo|bench_mpi|fabric_nfq)|p4/swswitch/serene-switch|tests/integ/(ar|ssp)_worker|lib/ctl/serene-ctl')
ninja -C "$BUILD" "${TARGETS[@]}" >/dev/null || die "build failed (run ninja -C $BUILD to see why)"
B=$BUILD/bench SWITCH=$BUILD/p4/swswitch/serene-switch NFQ=$BUILD/bench/fabric_nfq
for f in "$B/bench_allreduce" "$SWITCH"; do [ -x "$f" ] || die "$f was not built"; done
MPIRUN=$(command -v mpirun || true)
if [[ ,$PEERS, == *,gloo,* ]] && [ ! -x "$B/bench_gloo" ]; then
    echo "fabric: no bench_gloo (Debian libgloo-dev g++, then rebuild): no Gloo" >&2
    PEERS=${PEERS//gloo/}
fi
if [[ ,$PEERS, == *,mpi,* ]] && { [ ! -x "$B/bench_mpi" ] || [ -z "$MPIRUN" ]; }; then
    echo "fabric: no bench_mpi or mpirun (Debian openmpi-bin libopenmpi-dev, then rebuild): no OpenMPI" >&2
    PEERS=${PEERS//mpi/}
fi
if [ $IMPAIRED = 1 ] && [ ! -x "$NFQ" ]; then
    die "impairments need $NFQ (Debian libnetfilter-queue-dev, then rebuild) and iptables"
fi

# ---- the rack's lifetime ----------------------------------------------------
mkdir -p "$OUT/logs" || die "cannot create $OUT"
rm -f "$OUT"/logs/* "$OUT/results.csv" "$OUT/table.md" "$OUT/fabric.png"
fab_lifetime fabric "srf$$" || die "cannot make a work directory"
WORK=$FAB_DIR
FAILS=0
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# cpu_snap: the machine's busy and total jiffies, the CPU seconds of the
# processes this script started and reaped (bash's `times`: ranks, switch,
# mpirun and what they waited for), and the time.
cpu_snap() {
    printf '%s ' "$(fab_cpu_jiffies)"
    times >"$WORK/times" # here, not in a pipeline's subshell (which has no children)
    awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.3f ", s }' "$WORK/times"
    date +%s.%N
}

# test hook: FABRIC_TEST_DIE_AT=STEP fails the run there, as a bug would
test_die() { [ "${FABRIC_TEST_DIE_AT:-}" = "$1" ] && { echo "fabric: FABRIC_TEST_DIE_AT=$1: failing here" >&2; exit 3; }; return 0; }

# wait_all LIMIT PID...: reap every PID; sets worst (0, or the first
# non-zero status).
# shellcheck disable=SC2154 # rc: set by fab_wait
wait_all() {
    local limit=$1 p
    shift
    worst=0
    for p in "$@"; do
        fab_wait "$p" "$limit"
        [ $worst -eq 0 ] && worst=$rc
    done
}

# ---- one measured run ---------------------------------------------------------
# A run: counters before, the program on every host, counters after; then
# record SYSTEM N RATE SIZE WINDOW CSVFILE EXTRA appends a results.csv row.
HDR=system,n,rate_mbit,mtu,size_bytes,window,calls,median_s,best_s,gbps,link_frac,tx_per_call_max,rx_per_call_max,tx_over_size,rx_over_size,tx_pkts_per_call_max,drops_up,drops_down,tcp_retrans,serene_retrans_pct,udp_buf_errors,cpu_ours_pct,cpu_busy_pct,verified,note,serene_probes_pct
snap() {
    fab_counters >"$WORK/cnt.$1"
    cpu_snap >"$WORK/cpu.$1"
}
record() {
    local sys=$1 n=$2 rate=$3 size=$4 win=$5 csv=$6 note=$7 calls=$((REPS + 1)) line
    line=$(awk -F, 'NR > 1 && $1 ~ /allreduce/ { print; exit }' "$csv" 2>/dev/null)
    paste -d' ' "$WORK/cnt.0" "$WORK/cnt.1" | awk -v sys="$sys" -v n="$n" -v rate="$rate" -v mtu="$MTU" \
        -v size="$size" -v win="$win" -v calls=$calls -v line="$line" -v note="$note" \
        -v cpu0="$(cat "$WORK/cpu.0")" -v cpu1="$(cat "$WORK/cpu.1")" -v ncpu="$(nproc)" '
        function kv(s, k,   a, i, m) { m = split(s, a, /[ "]/); for (i = 1; i <= m; i++) if (index(a[i], k "=") == 1) return substr(a[i], length(k) + 2); return "" }
        {   tx = ($11 - $2) / calls; rx = ($12 - $3) / calls; tp = ($13 - $4) / calls
            if (tx > txm) txm = tx; if (rx > rxm) rxm = rx; if (tp > tpm) tpm = tp
            up += $15 - $6; down += $16 - $7; tcp += $17 - $8; udp += $18 - $9 }
        END {
            split(line, f, ","); med = f[5] + 0; best = f[6] + 0; ok = f[9]; gsub(/"/, "", ok)
            if (line == "") { ok = "FAILED"; med = 0 }
            split(cpu0, c0, " "); split(cpu1, c1, " ")
            busy = (c1[2] > c0[2]) ? 100 * (c1[1] - c0[1]) / (c1[2] - c0[2]) : 0
            ours = (c1[4] > c0[4]) ? 100 * (c1[3] - c0[3]) / ((c1[4] - c0[4]) * ncpu) : 0
            gbps = med > 0 ? size * 8 / med / 1e9 : 0
            printf "%s,%d,%d,%d,%d,%d,%d,%.6f,%.6f,%.4f,%.4f,%.0f,%.0f,%.4f,%.4f,%.1f,%d,%d,%d,%s,%d,%.0f,%.0f,%s,%s,%s\n",
                sys, n, rate, mtu, size, win, calls, med, best, gbps, (rate > 0 ? gbps * 1000 / rate : 0),
                txm, rxm, txm / size, rxm / size, tpm, up, down, tcp, kv(f[10], "retrans_pct"), udp, ours, busy, ok, note, kv(f[10], "probes_pct") }' \
        >>"$OUT/results.csv"
}

# run_serene N RATE SIZE WINDOW TAG
run_serene() {
    local n=$1 rate=$2 size=$3 win=$4 tag=$5 r pids=() nonce=$((RANDOM << 15 | RANDOM)) sw_pid
    rm -f "$WORK/port"
    fab_spawn "$OUT/logs/$tag.switch.log" "$(fab_ns_sw)" "$SWITCH" --listen "$FAB_SWITCH_IP:48200" \
        --port-file "$WORK/port" --job "0:$n:$ELEMS"
    sw_pid=$FAB_SPAWNED
    for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
    [ -s "$WORK/port" ] || { echo "serene-switch did not start" >>"$OUT/logs/$tag.log"; return 1; }
    snap 0
    for r in $(seq 0 $((n - 1))); do
        fab_spawn "$OUT/logs/$tag.r$r.log" "$(fab_ns "$r")" env SERENE_RANK="$r" SERENE_WORLD_SIZE="$n" \
            SERENE_SWITCH="$FAB_SWITCH_IP:48200" SERENE_JOB_NONCE=$nonce SERENE_WINDOW="$win" \
            SERENE_TIMEOUT_MS=$((CASE_TIMEOUT * 1000 / 2)) \
            timeout -k 5 "$CASE_TIMEOUT" sh -c 'exec "$@" 2>>"$0.err"' "$OUT/logs/$tag.r$r" \
            "$B/bench_allreduce" --sizes "$size" --reps "$REPS" --warmup 1 --iters 1 --csv
        pids+=("$FAB_SPAWNED")
    done
    test_die serene
    wait_all $((CASE_TIMEOUT + 10)) "${pids[@]}"
    fab_kill_list "$sw_pid" # it exits at once; its CPU time counts
    snap 1
    cp "$OUT/logs/$tag.r0.log" "$OUT/logs/$tag.csv"
    return $worst
}

# run_gloo N RATE SIZE TAG: one bench_gloo --rank per host, FileStore in WORK.
run_gloo() {
    local n=$1 size=$3 tag=$4 r pids=() store
    store=$(mktemp -d "$WORK/gloo.XXXXXX")
    snap 0
    for r in $(seq 0 $((n - 1))); do
        fab_spawn "$OUT/logs/$tag.r$r.log" "$(fab_ns "$r")" timeout -k 5 "$CASE_TIMEOUT" sh -c \
            'exec "$@" 2>>"$0.err"' "$OUT/logs/$tag.r$r" "$B/bench_gloo" -n "$n" --rank "$r" \
            --host "$(fab_host_ip "$r")" --store "$store" --chunked 1 --timeout "$CASE_TIMEOUT" \
            --sizes "$size" --reps "$REPS" --warmup 1 --iters 1 --csv
        pids+=("$FAB_SPAWNED")
    done
    wait_all $((CASE_TIMEOUT + 10)) "${pids[@]}"
    snap 1
    rm -rf "$store"
    cp "$OUT/logs/$tag.r0.log" "$OUT/logs/$tag.csv"
    return $worst
}

# run_mpi N RATE SIZE TAG: mpirun in the switch's namespace, ranks in the hosts.
run_mpi() {
    local n=$1 size=$3 tag=$4 r hosts=""
    for r in $(seq 0 $((n - 1))); do hosts+="${hosts:+,}$(fab_ns "$r"):1"; done
    snap 0
    fab_spawn "$OUT/logs/$tag.log" "$(fab_ns_sw)" timeout -k 5 "$CASE_TIMEOUT" sh -c \
        'exec "$@" >"$0.csv"' "$OUT/logs/$tag" "$MPIRUN" --allow-run-as-root -np "$n" --host "$hosts" \
        --mca plm_rsh_agent "$ROOT/bench/fabric_rsh.sh" --mca pml ob1 --mca btl self,tcp $FABRIC_MPI_MCA \
        --mca btl_tcp_if_include "$FAB_SUBNET" --mca oob_tcp_if_include "$FAB_SUBNET" \
        "$B/bench_mpi" --sizes "$size" --reps "$REPS" --warmup 1 --iters 1 --csv
    wait_all $((CASE_TIMEOUT + 10)) "$FAB_SPAWNED"
    snap 1
    return $worst
}

# measure SYSTEM N RATE SIZE WINDOW: one run, its row, its progress line.
NCASE=0
measure() {
    local sys=$1 n=$2 rate=$3 size=$4 win=$5 tag t0=$SECONDS st=0
    tag=$sys-n$n-r$rate-s$size-w$win
    NCASE=$((NCASE + 1))
    printf '[%2d] %-8s N=%-2s %5s Mbit/s %5d MiB window %-4s ' "$NCASE" "$sys" "$n" \
        "$([ "$rate" = 0 ] && echo none || echo "$rate")" $((size >> 20)) "$win"
    case $sys in
    serene) run_serene "$n" "$rate" "$size" "$win" "$tag" || st=$? ;;
    gloo) run_gloo "$n" "$rate" "$size" "$tag" || st=$? ;;
    mpi) run_mpi "$n" "$rate" "$size" "$tag" || st=$? ;;
    esac
    record "$sys" "$n" "$rate" "$size" "$win" "$OUT/logs/$tag.csv" "$([ $st = 124 ] && echo timeout)"
    if [ $st -ne 0 ] || [ "$(tail -1 "$OUT/results.csv" | cut -d, -f24)" != ok ]; then
        FAILS=$((FAILS + 1))
        echo "FAILED (status $st, $((SECONDS - t0)) s; logs/$tag.*)"
    else
        tail -1 "$OUT/results.csv" | awk -F, -v t=$((SECONDS - t0)) '{ printf "%7.3f s/call %6.3f Gbps (%3.0f%% of link)  up %.3fx  down %.3fx  (%d s)\n", $8, $10, 100 * $11, $14, $15, t }'
    fi
}

# ---- BMv2 -----------------------------------------------------------------------
# shellcheck source=fabric_bmv2.sh
[ "$KIND" = bmv2 ] && . "$ROOT/bench/fabric_bmv2.sh"

# ---- the runs ----------------------------------------------------------------------
if [ "$KIND" = bmv2 ]; then
    echo "== fabric --switch bmv2: N $NS_LIST; links $RATES Mbit/s, MTU $MTU, queue $QUEUE B;" \
        "impairments: loss $LOSS dup $DUP delay $DELAY ms seed $SEED -> $OUT"
else
    echo "== fabric: $MODE; N $NS_LIST; links $RATES Mbit/s, MTU $MTU, queue $QUEUE B; sizes $SIZES;" \
        "$REPS samples; Serene windows $WINDOWS, $ELEMS values/packet; peers ${PEERS//,,/,};" \
        "impairments: loss $LOSS dup $DUP delay $DELAY ms seed $SEED -> $OUT"
fi
echo "$HDR" >"$OUT/results.csv"
for n in ${NS_LIST//,/ }; do
    fab_up "$n" "$MTU" "$KIND" || die "cannot make the rack (N=$n)"
    if [ $IMPAIRED = 1 ]; then
        fab_impair "$LOSS" "$DUP" "$DELAY" "$SEED" "$NFQ" || die "cannot impair the links"
    fi
    test_die rack
    for rate in ${RATES//,/ }; do
        fab_shape "$rate" "$QUEUE" || die "tc: cannot shape the links to $rate Mbit/s"
        if [ "$KIND" = bmv2 ]; then
            bmv2_run "$n" "$rate" || FAILS=$((FAILS + 1))
            continue
        fi
        for s in ${SIZES//,/ }; do
            size=$(to_bytes "$s")
            first=1
            for w in ${WINDOWS//,/ }; do
                # the other windows: the congestion table, at the first size only
                [ $first = 1 ] || [ "$s" = "${SIZES%%,*}" ] || continue
                [[ ,$PEERS, == *,serene,* ]] && measure serene "$n" "$rate" "$size" "$w"
                first=0
            done
            [[ ,$PEERS, == *,gloo,* ]] && measure gloo "$n" "$rate" "$size" 0
            [[ ,$PEERS, == *,mpi,* ]] && measure mpi "$n" "$rate" "$size" 0
        done
    done
    fab_stop_pids
    [ $IMPAIRED = 1 ] && echo "impairments (all namespaces): $(fab_impair_stats)" | tee -a "$OUT/impair.txt"
    fab_down
done
[ "$KIND" = bmv2 ] && { echo "== BMv2 results in $OUT/logs"; exit $((FAILS > 0)); }

LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
"$ROOT/bench/fabric_report.sh" "$OUT" "fabric.sh --$MODE; N $NS_LIST; MTU $MTU; queue $QUEUE B per link end;
$REPS samples + 1 warm-up per case; Serene $ELEMS values/packet; load average $LOAD0 at the start and $LOAD1 at the end;
impairments: loss $LOSS, dup $DUP, delay $DELAY ms (seed $SEED); commit $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)" ||
    FAILS=$((FAILS + 1))
cat "$OUT/table.md"
[ $FAILS -eq 0 ] || { echo "fabric: $FAILS case(s) failed or timed out" >&2; exit 1; }
exit 0
