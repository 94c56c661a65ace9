#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fabric_train.sh - a real PyTorch training job on the emulated rack of
# bench/fabric.sh: one torchrun per host namespace (static rendezvous at
# host 0 across the rack), examples/torch/train_e2e.py on every host, the
# links shaped; each system in turn on the same model, seed and shards:
#   gloo-ddp         DDP over Gloo (its ring, TCP routed through the
#                    switch's namespace), float32 values
#   gloo-ddp-fp16    the same with torch's fp16_compress_hook: the baseline a
#                    practitioner on slow links tunes (2 bytes a value)
#   serene-ddp       DDP over the backend "serene", serene-switch in the
#                    switch's namespace, 32-bit values
#   serene-ddp16     the same, float32 gradients as 16-bit values on the wire
#                    (SERENE_WIRE_BITS=16)
#   serene-ddp-fp16  DDP over "serene" with torch's fp16_compress_hook
#   serene-ssp:S     serene_torch.SSP over the switch's store, policy ssp:S
#                    (bsp for S = 0; a bare serene-ssp takes --staleness):
#                    plain SGD, so under --momentum M it runs momentum 0
#                    at lr / (1 - M), the same long-run step
#   serene-stream:S  serene_torch.StaleSync: SSP over the streaming
#                    allreduce, 16-bit values, policy ssp:S (likewise)
# with and without the paper's stragglers: each rank, each step, with
# probability P, sleeps U(0.5, 2) x a base, the same for every system and
# seed: --straggle-base MS, or (auto) the median over the seeds of the
# median step time of the baseline (gloo-ddp-fp16 if it runs, else
# gloo-ddp) without stragglers in this run (each rank's compute time if
# neither ran). The p = 0 block runs first; each block runs every seed of
# --seeds (train_e2e.py's --seed: initial weights, shards, stragglers), the
# systems in --systems order for the 1st, 3rd, ... seed and in reverse for
# the 2nd, 4th, ..., so that no system always runs first or last.
#
#   bench/fabric_train.sh [-n 4] [--rate 100] [--model resnet18|mlp] [--steps 300]
#                         [--batch 32] [--lr 0.05] [--momentum 0] [--seeds 1]
#                         [--staleness 4] [--straggle 0,0.15] [--straggle-base auto|MS]
#                         [--systems gloo-ddp,gloo-ddp-fp16,serene-ddp,serene-ddp16,serene-ssp:4]
#                         [--target-acc 90] [--eval-every 50] [--mtu 9000] [--queue BYTES]
#                         [--build DIR] [--out DIR] [--case-timeout SEC]
#
# Writes OUT (default BUILD/train-results): results.csv (one row per run:
# system, seed, straggle p and base, lr, momentum, bits per value on the wire,
# steps per second, step time split into compute and communication, time
# to the target accuracy interpolated between evaluations and at the first
# evaluation that reached it, final accuracy, MB per host link per step,
# wall time), table.md (one row per system and p: the medians over the
# seeds with their min-max, the seeds' count, and against the baseline of
# the same p: the speed-up in steps per second, the MB per link, and with
# stragglers how much sooner the target is reached; its header: date,
# commit, the command line, the setup, the load average sampled every 30 s
# during the runs), accuracy.png (test accuracy against wall time: every
# run as a thin line, one colour per system and p, dashed with stragglers;
# with gnuplot), runs/SYSTEM-pP-seedK/ (train_e2e.py's CSVs) and logs/. A
# progress line per run, with an ETA. The rack is made once and removed on
# exit, on failure and on Ctrl-C. Needs root, iproute2, meson, ninja, torch
# (Debian python3-torch libtorch-dev python3-torchvision); data:
# examples/train/fetch_data.sh (cached; synthetic digits with a note when no
# source works).
# Exit status: 0, 1 (a run failed), 2 (setup), 77 (not root, or no torch).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=fabric_net.sh
. "$ROOT/bench/fabric_net.sh"

CMDLINE=$0 # as typed, an argument quoted only where a shell needs it
for a in "$@"; do
    [[ $a =~ ^[][A-Za-z0-9_./,:=+@%^-]+$ ]] && CMDLINE+=" $a" || CMDLINE+=" '${a//\'/\'\\\'\'}'"
done
N=4 RATE=100 MODEL=resnet18 STEPS=300 BATCH=32 LR=0.05 MOMENTUM=0 SEEDS=1 STALE=4 STRAGGLE=0,0.15
SYSTEMS=gloo-ddp,gloo-ddp-fp16,serene-ddp,serene-ddp16,serene-ssp:4 TARGET=90 EVAL=50 MTU=9000
QUEUE=262144 BUILD='' OUT='' CASE_TIMEOUT=2400 SBASE=auto
die() { echo "fabric_train: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    -n) N=${2:?}; shift ;;
    --rate) RATE=${2:?}; shift ;;
    --model) MODEL=${2:?}; shift ;;
    --steps) STEPS=${2:?}; shift ;;
    --batch) BATCH=${2:?}; shift ;;
    --lr) LR=${2:?}; shift ;;
    --momentum) MOMENTUM=${2:?}; shift ;;
    --seeds) SEEDS=${2:?}; shift ;;
    --staleness) STALE=${2:?}; shift ;;
    --straggle) STRAGGLE=${2:?}; shift ;;
    --straggle-base) SBASE=${2:?}; shift ;;
    --systems) SYSTEMS=${2:?}; shift ;;
    --target-acc) TARGET=${2:?}; shift ;;
    --eval-every) EVAL=${2:?}; shift ;;
    --mtu) MTU=${2:?}; shift ;;
    --queue) QUEUE=${2:?}; shift ;;
    --build) BUILD=${2:?}; shift ;;
    --out) OUT=${2:?}; shift ;;
    --case-timeout) CASE_TIMEOUT=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -ge 2 ] && [ "$N" -le 16 ] || die "-n: 2..16 workers"
[[ $RATE =~ ^[0-9]+$ ]] || die "bad --rate '$RATE' (Mbit/s; 0: unshaped)"
[[ $MODEL =~ ^(resnet18|mlp)$ ]] || die "--model is resnet18 or mlp"
for v in "$STEPS" "$BATCH" "$EVAL" "$CASE_TIMEOUT" "$QUEUE"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || die "bad count '$v'"
done
[[ $STALE =~ ^[0-9]+$ ]] || die "bad --staleness '$STALE'"
[[ $MOMENTUM =~ ^(0*|0*\.[0-9]+)$ ]] || die "bad --momentum '$MOMENTUM' (0 <= M < 1)"
[[ $SEEDS =~ ^[0-9]+(,[0-9]+)*$ ]] || die "bad --seeds '$SEEDS' (integers, comma-separated)"
[[ $STRAGGLE =~ ^[0-9.]+(,[0-9.]+)*$ ]] || die "bad --straggle '$STRAGGLE' (probabilities)"
[[ $SBASE =~ ^(auto|[0-9]+(\.[0-9]+)?)$ ]] || die "bad --straggle-base '$SBASE' (auto or ms)"
SYS_RE='(gloo-ddp(-fp16)?|serene-ddp(16|-fp16)?|serene-(ssp|stream)(:[0-9]+)?)'
[[ $SYSTEMS =~ ^$SYS_RE(,$SYS_RE)*$ ]] || die "bad --systems '$SYSTEMS' (see --help)"
[[ $MTU =~ ^(1500|9000)$ ]] || die "--mtu is 1500 or 9000"
# The systems as labels (serene-ssp:S, serene-stream:S), each once.
LABELS=() BASESYS=''
for x in ${SYSTEMS//,/ }; do
    [[ $x =~ ^serene-(ssp|stream)$ ]] && x=$x:$STALE
    [[ " ${LABELS[*]} " == *" $x "* ]] && die "--systems names $x twice"
    LABELS+=("$x")
done
for x in gloo-ddp gloo-ddp-fp16; do [[ " ${LABELS[*]} " == *" $x "* ]] && BASESYS=$x; done
mapfile -t PS < <(tr ',' '\n' <<<"$STRAGGLE" | sort -g -u)
mapfile -t SEED_LIST < <(tr ',' '\n' <<<"$SEEDS")
[ "$(printf '%s\n' "${SEED_LIST[@]}" | sort -u | wc -l)" -eq ${#SEED_LIST[@]} ] || die "--seeds names a seed twice"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: fabric_train: needs root (network namespaces, tc)"; exit 77; }
fab_check_tools || exit 2
PY=/usr/bin/python3
"$PY" -c 'import torch, torchvision' 2>/dev/null ||
    { echo "SKIP: fabric_train: $PY cannot import torch and torchvision (Debian: python3-torch python3-torchvision libtorch-dev)"; exit 77; }
ELEMS=$([ "$MTU" = 9000 ] && echo 2048 || echo 256)
TABLE=$ROOT/bench/fabric_train_table.py

# ---- build and data ---------------------------------------------------------
BUILD=${BUILD:-$ROOT/build-fabric}
mkdir -p "$BUILD" && BUILD=$(cd "$BUILD" && pwd) || die "cannot use $BUILD"
OUT=${OUT:-$BUILD/train-results}
if [ ! -f "$BUILD/build.ninja" ]; then
    echo "== configuring $BUILD (release)"
    meson setup "$BUILD" "$ROOT" --buildtype=release >/dev/null || die "meson setup failed"
fi
echo "== building $BUILD"
ninja -C "$BUILD" p4/swswitch/serene-switch lib/torch/serene_torch/serene_torch_ops.so >/dev/null ||
    die "build failed (run ninja -C $BUILD; the torch extension needs libtorch-dev)"
SWITCH=$BUILD/p4/swswitch/serene-switch
DATA=()
if digits=$("$ROOT/examples/train/fetch_data.sh" 2>"$BUILD/fetch_data.log" | tail -n 1) &&
    [ -f "$digits" ] && [[ $digits != *8x8* ]]; then
    DATA=(--data "$digits")
else
    echo "fabric_train: no MNIST digits (see $BUILD/fetch_data.log): synthetic digits instead" >&2
    DATA=(--synthetic)
fi
# The SSP store holds the model (serene-ssp): 11.2 M words for ResNet-18.
# The other serene systems use no store; the same job spec serves them.
STORE=$([ "$MODEL" = resnet18 ] && echo 12582912 || echo 1048576)

# ---- the rack -----------------------------------------------------------------
mkdir -p "$OUT/logs" "$OUT/runs" || die "cannot create $OUT"
rm -rf "$OUT"/logs/* "$OUT"/runs/* "$OUT/results.csv" "$OUT/table.md" "$OUT/accuracy.png"
fab_lifetime fabric_train "srt$$" || die "cannot make a work directory"
WORK=$FAB_DIR
# The load average every 30 s until the table (stopped by PID; the rack's
# exit trap stops it on failure).
# shellcheck disable=SC2016 # $s is the inner shell's
fab_spawn "$WORK/load" "" bash -c 'trap "kill \$s 2>/dev/null; exit 0" TERM
    while :; do cut -d" " -f1 /proc/loadavg; sleep 30 & s=$!; wait $s; done'
LOAD_PID=$FAB_SPAWNED
echo "== rack: $N hosts, links of $RATE Mbit/s, MTU $MTU; $MODEL, $STEPS steps of $BATCH per rank"
fab_up "$N" "$MTU" sw || die "cannot make the rack"
fab_shape "$RATE" "$QUEUE" || die "cannot shape the links"

# run LABEL P SEED BASE_MS: one training run on every host; appends results.csv.
FAILS=0
run() {
    local label=$1 sys=${1%%:*} p=$2 seed=$3 base=$4 s=$STALE r pids=() sw_pid='' pol=bsp t0=$SECONDS
    [[ $label == *:* ]] && s=${label#*:} && [ "$s" != 0 ] && pol=ssp:$s
    local tag=${label/:/-s}-p$p-seed$seed lr=$LR mom=$MOMENTUM
    # The store's SSP is plain SGD (each worker adds -lr/N x grad): under
    # --momentum M it takes the same long-run step, lr / (1 - M).
    [ "$sys" = serene-ssp ] && lr=$(awk -v l="$LR" -v m="$MOMENTUM" 'BEGIN { print l / (1 - m) }') mom=0
    local dir=$OUT/runs/$tag
    mkdir -p "$dir"
    if [[ $sys != gloo-* ]]; then
        rm -f "$WORK/port"
        fab_spawn "$OUT/logs/$tag.switch.log" "$(fab_ns_sw)" "$SWITCH" --listen "$FAB_SWITCH_IP:48200" \
            --port-file "$WORK/port" --job "0:$N:$ELEMS,store=$STORE,policy=$pol"
        sw_pid=$FAB_SPAWNED
        for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
        if [ ! -s "$WORK/port" ]; then
            echo "fabric_train: $tag: serene-switch did not start (log $OUT/logs/$tag.switch.log)"
            fab_kill_list "$sw_pid"
            FAILS=$((FAILS + 1))
            return 1
        fi
    fi
    fab_counters >"$WORK/cnt.0"
    for r in $(seq 0 $((N - 1))); do
        fab_spawn "$OUT/logs/$tag.h$r.log" "$(fab_ns "$r")" env OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=eth0 \
            PYTHONPATH="$BUILD/lib/torch:$ROOT/examples/torch" SERENE_SWITCH="$FAB_SWITCH_IP:48200" \
            SERENE_JOB=0 SERENE_LOG_LEVEL=warn SERENE_TIMEOUT_MS=$((CASE_TIMEOUT * 500)) \
            timeout -k 5 "$CASE_TIMEOUT" "$PY" -m torch.distributed.run --nnodes "$N" \
            --nproc_per_node 1 --node_rank "$r" --master_addr "$(fab_host_ip 0)" --master_port 29517 \
            --max_restarts 0 --redirects 1 --tee 1 --log_dir "$WORK/tr-$tag-$r" \
            "$ROOT/examples/torch/train_e2e.py" "${DATA[@]}" --system "$sys" --staleness "$s" \
            --model "$MODEL" --steps "$STEPS" --batch "$BATCH" --lr "$lr" --momentum "$mom" \
            --seed "$seed" --straggle-p "$p" --straggle-base-ms "$base" \
            --eval-every "$EVAL" --target-acc "$TARGET" --out "$dir"
        pids+=("$FAB_SPAWNED")
    done
    # Every rank ends, or the first to fail ends the run: the others
    # would wait for it until torchrun's timeouts.
    local worst=0 left end=$((SECONDS + CASE_TIMEOUT + 10))
    while :; do
        left=0
        for r in "${pids[@]}"; do
            if kill -0 "$r" 2>/dev/null; then
                left=1
            elif [ $worst -eq 0 ]; then
                wait "$r" || worst=$?
            fi
        done
        [ $left = 0 ] || [ $worst -ne 0 ] || [ $SECONDS -ge $end ] && break
        sleep 0.5
    done
    [ $left = 1 ] && [ $worst -eq 0 ] && worst=124
    fab_kill_list "${pids[@]}"
    fab_counters >"$WORK/cnt.1"
    [ -n "$sw_pid" ] && fab_kill_list "$sw_pid"
    if [ $worst -ne 0 ] || [ ! -s "$dir/summary.txt" ]; then
        echo "fabric_train: $tag FAILED (status $worst; logs $OUT/logs/$tag.*)"
        tail -n 5 "$OUT/logs/$tag.h0.log"
        FAILS=$((FAILS + 1))
        return 1
    fi
    # MB per host link per step: the busiest link's bytes each way.
    local mb
    mb=$(paste -d' ' "$WORK/cnt.0" "$WORK/cnt.1" | awk -v steps="$STEPS" '
        { tx = $11 - $2; rx = $12 - $3; if (tx > m) m = tx; if (rx > m) m = rx }
        END { printf "%.2f", m / steps / 1e6 }')
    { cat "$dir/summary.txt"; echo "link_mb_per_step=$mb"; } |
        awk -F= -v label="$label" -v cols="$COLS" '{ v[$1] = $2 } END {
            v["system"] = label; n = split(cols, c, ",")
            for (i = 1; i <= n; i++) printf "%s%s", v[c[i]], (i < n ? "," : "\n") }' >>"$OUT/results.csv"
    echo "fabric_train: $tag done in $((SECONDS - t0)) s: $(tail -n 1 "$OUT/results.csv")"
}

COLS=system,seed,straggle_p,straggle_base_ms,lr,momentum,wire_bits,steps_per_s,step_ms,compute_ms,comm_ms
COLS+=,time_to_target_s,time_to_target_eval_s,final_acc,link_mb_per_step,wall_s
echo "$COLS" >"$OUT/results.csv"
total=$((${#PS[@]} * ${#SEED_LIST[@]} * ${#LABELS[@]})) k=0 t_runs=$SECONDS base_ms='' base_txt=-
for p in "${PS[@]}"; do
    b=0
    if [[ ! $p =~ ^0*\.?0*$ ]]; then
        if [ -z "$base_ms" ]; then
            # Once, after the p = 0 block: the same base for every system and seed.
            base_ms=$SBASE base_txt="$SBASE ms (--straggle-base)"
            if [ "$SBASE" = auto ]; then
                base_ms=$([ -n "$BASESYS" ] && "$PY" "$TABLE" base "$OUT/results.csv" "$BASESYS")
                if [ -n "$base_ms" ]; then
                    base_txt="$base_ms ms ($BASESYS's step time at p = 0, median over the seeds)"
                else
                    base_ms=0 base_txt="each rank's compute time (no gloo-ddp or gloo-ddp-fp16 at p = 0)"
                fi
            fi
            echo "== straggle base: $base_txt"
        fi
        b=$base_ms
    fi
    for i in "${!SEED_LIST[@]}"; do
        order=("${LABELS[@]}")
        [ $((i % 2)) = 1 ] && mapfile -t order < <(printf '%s\n' "${LABELS[@]}" | tac)
        for label in "${order[@]}"; do
            eta=''
            [ $k -gt 0 ] && eta="; ETA $(date -d "@$(($(date +%s) + (SECONDS - t_runs) * (total - k) / k))" +%H:%M)"
            k=$((k + 1))
            echo "== run $k/$total: $label, stragglers p=$p, seed ${SEED_LIST[$i]} ($(date +%H:%M:%S)$eta)"
            run "$label" "$p" "${SEED_LIST[$i]}" "$b"
        done
    done
done

# ---- the table and the plot ---------------------------------------------------
fab_kill_list "$LOAD_PID"
cut -d' ' -f1 /proc/loadavg >>"$WORK/load"
{
    echo "$(date '+%Y-%m-%d %H:%M %Z'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo
    echo "    $CMDLINE"
    echo
    echo "N = $N, $MODEL, $STEPS steps of $BATCH per rank, lr $LR, momentum $MOMENTUM, links $RATE Mbit/s" \
        "(MTU $MTU), target $TARGET%, seeds $SEEDS; straggle base: $base_txt; load average" \
        "$(sort -g "$WORK/load" | awk '{ v[NR] = $1 } END {
            printf "%.2f/%.2f/%.2f (min/median/max of %d samples, every 30 s)", v[1],
                (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR], NR }')"
    echo
    "$PY" "$TABLE" table "$OUT/results.csv" --systems "$(IFS=,; echo "${LABELS[*]}")" \
        --baseline "$BASESYS" --target "$TARGET"
} >"$OUT/table.md"
cat "$OUT/table.md"
if command -v gnuplot >/dev/null; then
    plots=()
    declare -A color=()
    for d in "$OUT"/runs/*/; do
        [ -s "$d/evals.csv" ] || continue
        key=$(basename "$d") key=${key%-seed*} title="notitle"
        [ -z "${color[$key]:-}" ] && color[$key]=$((${#color[@]} + 1)) title="title '$key'"
        plots+=("'$d/evals.csv' using 2:3 with lines lw 1 lc ${color[$key]} dt $([[ $key =~ -p0*\.?0*$ ]] && echo 1 || echo 2) $title")
    done
    if [ ${#plots[@]} -gt 0 ]; then
        gnuplot -e "set terminal pngcairo size 900,560; set output '$OUT/accuracy.png'; set datafile separator ',';
            set xlabel 'wall time of the timed loop (s)'; set ylabel 'test accuracy (%)';
            set title 'N = $N, $MODEL, $RATE Mbit/s links, seeds $SEEDS (one line per run)'; set key bottom right;
            plot $(IFS=,; echo "${plots[*]}")" 2>"$OUT/logs/gnuplot.err" && echo "plot: $OUT/accuracy.png"
    fi
fi
echo "results: $OUT/table.md, $OUT/results.csv"
[ $FAILS -eq 0 ] || exit 1
