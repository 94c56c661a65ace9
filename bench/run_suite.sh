#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run_suite.sh - run the benchmark suite and write a markdown table and a
# PNG plot: Serene's allreduce goodput beside OpenMPI's MPI_Allreduce and
# Gloo's ring allreduce, measured in the same run on the same tensors, plus
# the microbenchmarks (quantization vs memcpy, wire pack/unpack, switch
# pipeline pps, push/pull/clock rates).
#
#   bench/run_suite.sh [--quick | --full] [--out DIR] [--build DIR]
#                      [--workers 2,4] [--sizes 256k,1M,...] [--reps R]
#                      [--elems 256,2048] [--dpdk-elems 256,2048] [--transports udp[,dpdk]]
#                      [--dpdk-eal 'EAL ARGS'] [--case-timeout SEC]
#
#   --quick (default)  N = 2, 4; 256 KiB .. 64 MiB; 3 samples per case
#   --full             N = 2, 3, 4; 256 KiB .. 256 MiB; 5 samples per case
#   --build DIR        meson build dir (default: build-bench in the source
#                      tree; configured as a release build if absent)
#   --out DIR          results (default: BUILD/bench-results): results.csv
#                      (every row of every program), table.md, goodput.png,
#                      logs/ (each program's full output)
#   --elems LIST       Serene's values per packet, one run each (default
#                      256,2048: 1 KiB payloads as on a 1500-byte MTU, and
#                      8 KiB as on a 9000-byte jumbo MTU)
#   --dpdk-elems LIST  the same for the dpdk transport (default 256,2048; the
#                      memif rings use 16 KiB buffers, bsize=16384, so that
#                      a frame never spans buffers: see
#                      lib/transport/dpdk/README.md)
#   --transports LIST  Serene transports to measure (default udp, plus dpdk
#                      when the build has the DPDK transport and we are root). dpdk:
#                      every rank on its own DPDK memif port (client) to the
#                      embedded switch's memif server ports (serene-switch
#                      --dpdk), sockets in a fresh temporary directory;
#                      ranks get SERENE_TRANSPORT=dpdk, SERENE_DPDK_PORT and
#                      SERENE_DPDK_EAL_ARGS
#   --dpdk-eal ARGS    EAL arguments of the switch and the ranks (default
#                      '--no-huge -m 256 --no-pci --no-shconf --log-level=warning')
#   --case-timeout S   limit of each program run (default 900 s); a run past
#                      it is killed, its missing cells read "-" and a line
#                      under the table names it
#
# Every program verifies its results after timing; a failed or timed-out
# case is marked in the table and makes the exit status 1 (the table and
# the plot are still written). Needs meson, ninja, gnuplot (Debian
# gnuplot-nox) and, for the peers, openmpi-bin libopenmpi-dev libgloo-dev g++.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=quick BUILD='' OUT='' WORKERS='' SIZES='' REPS='' TRANSPORTS='' ELEMS=256,2048 DPDK_ELEMS=256,2048 CASE_TIMEOUT=900
DPDK_EAL="--no-huge -m 256 --no-pci --no-shconf --log-level=warning"
die() { echo "run_suite: $*" >&2; exit 2; }
# shellcheck source=bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
while [ $# -gt 0 ]; do
    case $1 in
    --quick) MODE=quick ;;
    --full) MODE=full ;;
    --out) OUT=${2:?--out needs a directory}; shift ;;
    --build) BUILD=${2:?--build needs a directory}; shift ;;
    --workers) WORKERS=${2:?--workers needs a list}; shift ;;
    --sizes) SIZES=${2:?--sizes needs a list}; shift ;;
    --reps) REPS=${2:?--reps needs a number}; shift ;;
    --transports) TRANSPORTS=${2:?--transports needs a list}; shift ;;
    --elems) ELEMS=${2:?--elems needs a list}; shift ;;
    --dpdk-elems) DPDK_ELEMS=${2:?--dpdk-elems needs a list}; shift ;;
    --dpdk-eal) DPDK_EAL=${2:?--dpdk-eal needs a value}; shift ;;
    --case-timeout) CASE_TIMEOUT=${2:?--case-timeout needs seconds}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
if [ $MODE = quick ]; then
    : "${WORKERS:=2,4}" "${SIZES:=256k,1M,4M,16M,64M}" "${REPS:=3}"
else
    : "${WORKERS:=2,3,4}" "${SIZES:=256k,1M,4M,16M,64M,256M}" "${REPS:=5}"
fi
[[ $WORKERS =~ ^[0-9]+(,[0-9]+)*$ ]] || die "bad --workers '$WORKERS'"
[[ $SIZES =~ ^[0-9]+[kKmMgG]?(,[0-9]+[kKmMgG]?)*$ ]] || die "bad --sizes '$SIZES'"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "bad --reps '$REPS'"
[[ $ELEMS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "bad --elems '$ELEMS'"
[[ $DPDK_ELEMS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "bad --dpdk-elems '$DPDK_ELEMS'"
[[ $CASE_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "bad --case-timeout '$CASE_TIMEOUT'"
[ -z "$TRANSPORTS" ] || [[ $TRANSPORTS =~ ^(udp|dpdk)(,(udp|dpdk))*$ ]] || die "bad --transports '$TRANSPORTS' (udp, dpdk)"
for t in meson ninja timeout awk; do
    command -v $t >/dev/null || die "$t not found"
done

BUILD=${BUILD:-$ROOT/build-bench}
OUT=${OUT:-$BUILD/bench-results}
if [ ! -f "$BUILD/build.ninja" ]; then
    echo "== configuring $BUILD (release)"
    meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null || die "meson setup failed"
fi
echo "== building $BUILD"
ninja -C "$BUILD" >/dev/null || die "build failed (run ninja -C $BUILD to see why)"
B=$BUILD/bench
RUN=$BUILD/lib/launch/serene-run
export SERENE_SWITCH_BIN=$BUILD/p4/swswitch/serene-switch
for f in "$B/bench_allreduce" "$B/bench_quant" "$B/bench_switch_udp" "$RUN" "$SERENE_SWITCH_BIN"; do
    [ -x "$f" ] || die "$f was not built (meson option bench disabled?)"
done
mkdir -p "$OUT/logs" || die "cannot create $OUT"
rm -f "$OUT"/logs/*.csv "$OUT"/logs/*.log "$OUT"/logs/*.dat "$OUT"/logs/*.gp "$OUT/results.csv" "$OUT/table.md" "$OUT/goodput.png"

HAVE_DPDK=0
grep -q 'libsr_dpdk\.a' "$BUILD/build.ninja" && HAVE_DPDK=1
if [ -z "$TRANSPORTS" ]; then
    TRANSPORTS=udp
    if [ $HAVE_DPDK = 1 ] && [ "$(id -u)" -eq 0 ]; then
        TRANSPORTS=udp,dpdk
    else
        echo "run_suite: dpdk-memif cases left out: $([ $HAVE_DPDK = 1 ] && echo "DPDK needs root" ||
            echo "this build has no DPDK transport (Debian dpdk-dev)")" >&2
    fi
elif [[ $TRANSPORTS == *dpdk* ]] && [ $HAVE_DPDK = 0 ]; then
    die "--transports dpdk: this build has no DPDK transport (Debian dpdk-dev, meson -Ddpdk=enabled)"
fi
MPIRUN=$(command -v mpirun || true)
HAVE_MPI=0 HAVE_GLOO=0
[ -x "$B/bench_mpi" ] && [ -n "$MPIRUN" ] && HAVE_MPI=1
[ -x "$B/bench_gloo" ] && HAVE_GLOO=1
[ $HAVE_MPI = 1 ] || echo "run_suite: no OpenMPI peer (install openmpi-bin libopenmpi-dev, rebuild)" >&2
[ $HAVE_GLOO = 1 ] || echo "run_suite: no Gloo peer (install libgloo-dev g++, rebuild)" >&2

# ---- running cases --------------------------------------------------------
FAILS=0 NCASE=0 TOTAL=0
IFS=, read -ra NS <<<"$WORKERS"
IFS=, read -ra TS <<<"$TRANSPORTS"
IFS=, read -ra ES_UDP <<<"$ELEMS"
IFS=, read -ra ES_DPDK <<<"$DPDK_ELEMS"
TOTAL=3
for t in "${TS[@]}"; do
    [ "$t" = dpdk ] && TOTAL=$((TOTAL + ${#NS[@]} * (${#ES_DPDK[@]} + 1)))
    [ "$t" = udp ] && TOTAL=$((TOTAL + ${#NS[@]} * (${#ES_UDP[@]} + 1)))
done
TOTAL=$((TOTAL + ${#NS[@]} * (1 + 2 * HAVE_MPI + HAVE_GLOO)))

# run_case TAG DESCRIPTION -- command...: stdout (CSV) to logs/TAG.csv,
# stderr (human lines) to logs/TAG.log; bounded by CASE_TIMEOUT.
run_case() {
    local tag=$1 desc=$2
    shift 3
    NCASE=$((NCASE + 1))
    printf '[%2d/%d] %-58s ' "$NCASE" "$TOTAL" "$desc"
    local t0=$SECONDS rc=0
    timeout -k 10 "$CASE_TIMEOUT" "$@" >"$OUT/logs/$tag.csv" 2>"$OUT/logs/$tag.log" || rc=$?
    if [ $rc -eq 0 ]; then
        echo "ok ($((SECONDS - t0)) s)"
    else
        FAILS=$((FAILS + 1))
        [ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "TIMEOUT after $((SECONDS - t0)) s" >>"$OUT/logs/$tag.log"
        echo "FAILED (status $rc, $((SECONDS - t0)) s; see logs/$tag.log)"
    fi
    return 0
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== suite: $MODE, workers $WORKERS, sizes $SIZES, $REPS samples, transports $TRANSPORTS -> $OUT"
run_case quant "quant kernels vs memcpy, 64 MiB" -- "$B/bench_quant" --size 64M --reps $((REPS * 2 + 1)) --csv
run_case wire "wire pack/unpack, ns per packet" -- "$B/bench_wire" --reps $((REPS * 2 + 1)) --csv
run_case switch "switch pipeline, packets/s on one core" -- "$B/bench_switch" --reps $((REPS * 2 + 1)) --csv

ar_args=(--sizes "$SIZES" --reps "$REPS" --warmup 2 --csv)
MEMIF_DIR=
trap '[ -n "$MEMIF_DIR" ] && rm -rf "$MEMIF_DIR"' EXIT
# dpdk_setup TAG N: memif sockets for this run; sets SW_ARGS (for serene-run)
# and DPDK_ENV (for the ranks).
dpdk_setup() {
    local tag=$1 n=$2
    [ -n "$MEMIF_DIR" ] || MEMIF_DIR=$(mktemp -d "${TMPDIR:-/tmp}/serene-bench.XXXXXX") || die "mktemp failed"
    memif_args "$MEMIF_DIR/$tag" "$n" "$DPDK_EAL"
    SW_ARGS=("${MEMIF_SW[@]}") DPDK_ENV=("${MEMIF_ENV[@]}")
}

for n in "${NS[@]}"; do
    run_case "switch-udp-n$n" "serene-switch over UDP, blaster playing N=$n" -- "$RUN" -n 1 --no-prefix \
        --timeout "$CASE_TIMEOUT" --switch-arg=--job "--switch-arg=1:$n" -- "$B/bench_switch_udp" --job 1 \
        --workers "$n" --reps $((REPS * 2 + 1)) --csv
    for t in "${TS[@]}"; do
        if [ "$t" = dpdk ]; then ES=("${ES_DPDK[@]}"); else ES=("${ES_UDP[@]}"); fi
        for e in "${ES[@]}"; do
            tag=ar-serene-$t-e$e-n$n
            SW_ARGS=() DPDK_ENV=(SERENE_TRANSPORT=udp)
            [ "$t" = dpdk ] && dpdk_setup "$tag" "$n"
            run_case "$tag" "allreduce serene-$t, $e values/packet, N=$n" -- env "${DPDK_ENV[@]}" \
                "$RUN" -n "$n" --elems "$e" --no-prefix --timeout "$CASE_TIMEOUT" "${SW_ARGS[@]}" -- \
                "$B/bench_allreduce" "${ar_args[@]}"
        done
        tag=store-$t-n$n
        SW_ARGS=() DPDK_ENV=(SERENE_TRANSPORT=udp)
        [ "$t" = dpdk ] && dpdk_setup "$tag" "$n"
        run_case "$tag" "push/pull/clock rates, serene-$t, N=$n" -- env "${DPDK_ENV[@]}" \
            "$RUN" -n "$n" --no-prefix --timeout "$CASE_TIMEOUT" "${SW_ARGS[@]}" -- \
            "$B/bench_store" --reps "$REPS" --csv
    done
    if [ $HAVE_MPI = 1 ]; then
        run_case "ar-mpi-shm-n$n" "allreduce OpenMPI btl vader (shared memory) N=$n" -- "$MPIRUN" --allow-run-as-root \
            --oversubscribe -np "$n" --mca pml ob1 --mca btl self,vader "$B/bench_mpi" "${ar_args[@]}"
        run_case "ar-mpi-tcp-n$n" "allreduce OpenMPI btl tcp over loopback N=$n" -- "$MPIRUN" --allow-run-as-root \
            --oversubscribe -np "$n" --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo \
            "$B/bench_mpi" "${ar_args[@]}"
    fi
    if [ $HAVE_GLOO = 1 ]; then
        run_case "ar-gloo-n$n" "allreduce Gloo ring, tcp on 127.0.0.1 N=$n" -- "$B/bench_gloo" -n "$n" \
            --timeout "$CASE_TIMEOUT" "${ar_args[@]}"
    fi
done

# ---- results.csv: every row, with the program that wrote it ----------------
{
    echo "program,name,variant,size_bytes,reps,median_s,best_s,median_gbps,best_gbps,verified,extra"
    for f in "$OUT"/logs/*.csv; do
        awk -v p="$(basename "$f" .csv)" 'NR > 1 && NF { print p "," $0 }' "$f"
    done
} >"$OUT/results.csv"

# ---- table.md ------------------------------------------------------------
# CSV fields: name and variant and extra are quoted and hold no commas.
exec 3>"$OUT/table.md"
{
    echo "## Serene benchmark suite ($MODE)"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)," \
        "$(nproc) cores, load average $LOAD0 at the start and $(cut -d' ' -f1-3 /proc/loadavg) at the end (other work on the host skews every figure);" \
        "$(sed -n 's/^# cpu: .*serene cpu flags: /SIMD: /p' "$OUT/logs/quant.log" | head -1);" \
        "commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)." \
        "Command: \`bench/run_suite.sh --$MODE\` (workers $WORKERS, sizes $SIZES, $REPS samples per case;" \
        "Serene transports $TRANSPORTS; values per packet: udp $ELEMS, dpdk $DPDK_ELEMS)."
    echo
    echo "### Allreduce goodput (Gbps of float32 gradient data, median)"
    echo
    echo "Goodput = elements x 32 bit / time per call, out of place SUM, every result checked."
    echo "Peers on the same tensors in the same run: OpenMPI \`MPI_Allreduce\` over shared memory"
    echo "(btl vader: no network stack) and over TCP on loopback (btl tcp), Gloo ring allreduce over"
    echo "TCP on 127.0.0.1 (in place: its time includes a copy of the input). Serene crosses the"
    echo "kernel UDP stack (udp) or DPDK memif (dpdk) and the software switch, all on the same host."
    echo
} >&3
awk -F, -v out="$OUT/table.ar" '
    function unq(s) { gsub(/"/, "", s); return s }
    function human(b) {
        if (b >= 1073741824) return sprintf("%g GiB", b / 1073741824)
        if (b >= 1048576) return sprintf("%g MiB", b / 1048576)
        if (b >= 1024) return sprintf("%g KiB", b / 1024)
        return b " B"
    }
    function sort(a, k,   i, j, t) {
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
            if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    }
    # program tags: ar-serene-udp-e256-n2, ar-mpi-shm-n2, ar-mpi-tcp-n2, ar-gloo-n2
    FNR > 1 && unq($2) == "allreduce" && $1 ~ /^ar-.*-n[0-9]+$/ {
        impl = $1; sub(/^ar-/, "", impl); sub(/-n[0-9]+$/, "", impl)
        n = $1; sub(/.*-n/, "", n); n += 0; s = $4 + 0
        g[impl SUBSEP n SUBSEP s] = (unq($10) == "ok") ? sprintf("%.3f", $8 * 8) : "FAILED"
        ws[n] = 1; sz[s] = 1
        if (impl ~ /^serene-/) ser[impl] = 1
    }
    END {
        print "| size | N | Serene | Serene Gbps | MPI shm | MPI tcp | Gloo | x MPI shm | x MPI tcp | x Gloo |" > out
        print "|---|---|---|---|---|---|---|---|---|---|" > out
        k = 0; for (n in ws) nl[++k] = n + 0; nn = k; sort(nl, nn)
        k = 0; for (s in sz) sl[++k] = s + 0; ns = k; sort(sl, ns)
        k = 0; for (v in ser) { e = v; sub(/.*-e/, "", e); t = v; sub(/-e[0-9]+$/, "", t); il[++k] = sprintf("%s %08d %s", t, e, v) }; ni = k; sort(il, ni)
        for (a = 1; a <= ns; a++) for (b = 1; b <= nn; b++) for (c = 1; c <= ni; c++) {
            s = sl[a]; n = nl[b]; v = il[c]; sub(/.* /, "", v)
            sg = g[v SUBSEP n SUBSEP s]; if (sg == "") sg = "-"
            lab = v; sub(/^serene-/, "", lab); e = lab; sub(/.*-e/, "", e); sub(/-e[0-9]+$/, "", lab)
            line = "| " human(s) " | " n " | " lab ", " e " values/pkt | " sg
            split("mpi-shm mpi-tcp gloo", peers, " ")
            for (p = 1; p <= 3; p++) { pg[p] = g[peers[p] SUBSEP n SUBSEP s]; if (pg[p] == "") pg[p] = "-"; line = line " | " pg[p] }
            for (p = 1; p <= 3; p++)
                line = line " | " ((sg + 0 > 0 && pg[p] + 0 > 0) ? sprintf("%.2f", sg / pg[p]) : "-")
            print line " |" > out
        }
    }' "$OUT/results.csv"
cat "$OUT/table.ar" >&3
rm -f "$OUT/table.ar"
for f in "$OUT"/logs/*.log; do
    if grep -q "TIMEOUT after" "$f"; then
        echo "- $(basename "$f" .log): timed out after ${CASE_TIMEOUT} s (its missing cells read -)" >&3
    fi
done

{
    echo
    echo "### Microbenchmarks"
    echo
    echo "| benchmark | case | median | note |"
    echo "|---|---|---|---|"
} >&3
awk -F, '
    function unq(s) { gsub(/"/, "", s); return s }
    function kv(extra, key,   a, i, n) {
        n = split(extra, a, " ")
        for (i = 1; i <= n; i++) if (index(a[i], key "=") == 1) return substr(a[i], length(key) + 2)
        return ""
    }
    FNR == 1 { next }
    {
        p = $1; nm = unq($2); v = unq($3); x = unq($11); ok = unq($10) == "FAILED" ? " **FAILED**" : ""
        if (p == "quant")
            printf "| quant, 64 MiB | %s %s | %.2f GB/s | %s%s%s |\n", nm, v, $8, (kv(x, "vs_memcpy") != "" ? kv(x, "vs_memcpy") "x memcpy" : ""), (kv(x, "memcpy_ref") == "adjacent" ? " (memcpy measured just before)" : ""), ok
        else if (p == "wire")
            printf "| wire | %s %s | %s ns/packet | %s Mpps%s |\n", nm, v, kv(x, "ns_per_pkt"), kv(x, "Mpps"), ok
        else if (p == "switch")
            printf "| switch pipeline, 1 core | N=%s | %s Mpps | %s ns/packet, %s Gelem/s aggregated%s |\n", kv(x, "workers"), kv(x, "Mpps"), kv(x, "ns_per_pkt"), kv(x, "agg_Gelems_per_s"), ok
        else if (p ~ /^switch-udp/)
            printf "| serene-switch process over UDP | N=%s | %s Mpps in | %s ns/packet; 1 KiB payloads%s |\n", kv(x, "workers"), kv(x, "Mpps"), kv(x, "ns_per_pkt"), ok
        else if (p ~ /^store/) {
            t = (p ~ /dpdk/) ? "dpdk" : "udp"
            if (nm == "clock")
                printf "| store, N=%s, %s | clock (BSP) | %s calls/s | %s us per call%s |\n", kv(x, "workers"), t, kv(x, "calls_per_s"), kv(x, "us_per_call"), ok
            else if (nm == "allreduce" || nm == "step")
                printf "| store, N=%s, %s | %s %s words | %s us per call | %s%s |\n", kv(x, "workers"), t, (nm == "step" ? "step (" v ")" : nm), kv(x, "words"), kv(x, "us_per_call"), (nm == "step" ? kv(x, "vs_allreduce") "x the allreduce" : "peer of the step"), ok
            else
                printf "| store, N=%s, %s | %s %s words | %s calls/s | %s words/s%s |\n", kv(x, "workers"), t, nm, kv(x, "words"), kv(x, "calls_per_s"), kv(x, "words_per_s"), ok
        }
    }' "$OUT/results.csv" >&3
best=$(awk -F, '$1 == "quant" && $2 ~ /roundtrip/ {
        n = split($11, a, /[" ]/)
        for (i = 1; i <= n; i++) if (a[i] ~ /^vs_memcpy=/) { x = substr(a[i], 11) + 0 }
        if (x > b) { b = x; v = $3 } }
        END { gsub(/"/, "", v); if (b) printf "%.2f %s", b, v }' "$OUT/results.csv")
if [ -n "$best" ]; then
    echo >&3
    echo "Quantize + dequantize packet by packet with the best kernel (${best#* }): ${best%% *}x memcpy on 64 MiB" \
        "(target 0.8x)." >&3
fi
exec 3>&-

# ---- goodput.png: one panel per worker count, one line per implementation
# (the same colour for an implementation in every panel) -----------------
if command -v gnuplot >/dev/null; then
    impls=() gp="$OUT/logs/plot.gp"
    for f in "$OUT"/logs/ar-*.csv; do
        [ -s "$f" ] || continue
        tag=$(basename "$f" .csv)
        awk -F, 'NR > 1 && $9 ~ /ok/ { print $3, $7 * 8 }' "$f" >"$OUT/logs/$tag.dat"
        impl=${tag#ar-}
        impl=${impl%-n*}
        [[ " ${impls[*]} " == *" $impl "* ]] || impls+=("$impl")
    done
    {
        echo "set terminal pngcairo size $((420 * ${#NS[@]} + 80)),560 noenhanced"
        echo "set output '$OUT/goodput.png'"
        echo "set multiplot layout 1,${#NS[@]} title 'Allreduce goodput on one host ($MODE run; Gbps of float32 data, median)'"
        echo "set logscale xy 2"
        echo "set format x '%.0b %BB'"
        echo "set xtics rotate by -30"
        echo "set rmargin 5"
        echo "set grid"
        echo "set key top left font ',8'"
        echo "set xlabel 'tensor size'"
        echo "set ylabel 'Gbps'"
        # one y range for all panels: whole powers of 2 around every point
        cat "$OUT"/logs/ar-*.dat 2>/dev/null | awk '$2 > 0 {
            if (!n++ || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
            END { if (!n) { print "set yrange [0.0625:16]"; exit }
                  a = 2 ^ int(log(lo) / log(2) - (lo < 1)); b = 2 ^ (int(log(hi) / log(2)) + 1)
                  printf "set yrange [%g:%g]\n", a, b }'
        for n in "${NS[@]}"; do
            echo "set title 'N = $n'"
            plot=() k=0
            for impl in "${impls[@]}"; do
                k=$((k + 1))
                d="$OUT/logs/ar-$impl-n$n.dat"
                [ -s "$d" ] && plot+=("'$d' using 1:2 with linespoints linetype $k pointtype $k title '$impl'")
            done
            if [ ${#plot[@]} -gt 0 ]; then
                (IFS=,; echo "plot ${plot[*]}")
            else
                echo "set label 1 'no results' at graph 0.4, graph 0.5; plot NaN notitle; unset label 1"
            fi
        done
        echo "unset multiplot"
    } >"$gp"
    gnuplot "$gp" 2>"$OUT/logs/plot.log" || { echo "run_suite: gnuplot failed (logs/plot.log)" >&2; FAILS=$((FAILS + 1)); }
else
    echo "run_suite: gnuplot not found (Debian: gnuplot-nox): no goodput.png" >&2
    FAILS=$((FAILS + 1))
fi

echo "== wrote $OUT/table.md, $OUT/goodput.png, $OUT/results.csv"
cat "$OUT/table.md"
if [ $FAILS -gt 0 ]; then
    echo "run_suite: $FAILS case(s) failed or timed out" >&2
    exit 1
fi
exit 0
