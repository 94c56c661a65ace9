#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fabric_train.sh - a real PyTorch training job on the emulated rack of
# bench/fabric.sh: one torchrun per host namespace (static rendezvous at
# host 0 across the rack), examples/torch/train_e2e.py on every host, the
# links shaped; each system in turn on the same model, seed and shards:
#   gloo-ddp    DDP over Gloo (its ring, TCP routed through the switch's
#               namespace)
#   serene-ddp  DDP over the backend "serene", serene-switch in the
#               switch's namespace
#   serene-ssp:S  serene_torch.SSP over the switch's store, policy ssp:S
#               (bsp for S = 0; a bare serene-ssp takes --staleness)
# with and without the paper's stragglers: each rank, each step, with
# probability P, sleeps U(0.5, 2) x a base, the same for every system:
# --straggle-base MS, or (auto) the median step time of DDP over Gloo
# without stragglers in this run (its compute time if that did not run).
#
#   bench/fabric_train.sh [-n 4] [--rate 100] [--model resnet18|mlp] [--steps 300]
#                         [--batch 32] [--lr 0.05] [--staleness 4] [--straggle 0,0.15]
#                         [--straggle-base auto|MS]
#                         [--systems gloo-ddp,serene-ddp,serene-ssp:0,serene-ssp:4]
#                         [--target-acc 90]
#                         [--eval-every 50] [--mtu 9000] [--queue BYTES]
#                         [--build DIR] [--out DIR] [--case-timeout SEC]
#
# Writes OUT (default BUILD/train-results): table.md (per run: steps per
# second, step time split into compute and communication, time to the
# target accuracy, final accuracy, MB per host link per step), results.csv,
# accuracy.png (test accuracy against wall time, one line per run; with
# gnuplot), runs/SYSTEM-pP/ (train_e2e.py's CSVs) and logs/. A progress
# line per run. The rack is made once and removed on exit, on failure and
# on Ctrl-C. Needs root, iproute2, meson, ninja, torch (Debian python3-torch
# libtorch-dev python3-torchvision); data: examples/train/fetch_data.sh
# (cached; synthetic digits with a note when no source works).
# Exit status: 0, 1 (a run failed), 2 (setup), 77 (not root, or no torch).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=fabric_net.sh
. "$ROOT/bench/fabric_net.sh"

N=4 RATE=100 MODEL=resnet18 STEPS=300 BATCH=32 LR=0.05 STALE=4 STRAGGLE=0,0.15
SYSTEMS=gloo-ddp,serene-ddp,serene-ssp:0,serene-ssp:4 TARGET=90 EVAL=50 MTU=9000 QUEUE=262144
BUILD='' OUT='' CASE_TIMEOUT=2400 SBASE=auto
die() { echo "fabric_train: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    -n) N=${2:?}; shift ;;
    --rate) RATE=${2:?}; shift ;;
    --model) MODEL=${2:?}; shift ;;
    --steps) STEPS=${2:?}; shift ;;
    --batch) BATCH=${2:?}; shift ;;
    --lr) LR=${2:?}; shift ;;
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
    -h | --help) sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
[[ $STRAGGLE =~ ^[0-9.]+(,[0-9.]+)*$ ]] || die "bad --straggle '$STRAGGLE' (probabilities)"
[[ $SBASE =~ ^(auto|[0-9]+(\.[0-9]+)?)$ ]] || die "bad --straggle-base '$SBASE' (auto or ms)"
[[ $SYSTEMS =~ ^(gloo-ddp|serene-ddp|serene-ssp(:[0-9]+)?)(,(gloo-ddp|serene-ddp|serene-ssp(:[0-9]+)?))*$ ]] ||
    die "bad --systems '$SYSTEMS'"
[[ $MTU =~ ^(1500|9000)$ ]] || die "--mtu is 1500 or 9000"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: fabric_train: needs root (network namespaces, tc)"; exit 77; }
fab_check_tools || exit 2
PY=/usr/bin/python3
"$PY" -c 'import torch, torchvision' 2>/dev/null ||
    { echo "SKIP: fabric_train: $PY cannot import torch and torchvision (Debian: python3-torch python3-torchvision libtorch-dev)"; exit 77; }
ELEMS=$([ "$MTU" = 9000 ] && echo 2048 || echo 256)

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
# The SSP store holds the model: 11.2 M words for ResNet-18.
STORE=$([ "$MODEL" = resnet18 ] && echo 12582912 || echo 1048576)

# ---- the rack -----------------------------------------------------------------
mkdir -p "$OUT/logs" "$OUT/runs" || die "cannot create $OUT"
rm -rf "$OUT"/logs/* "$OUT"/runs/* "$OUT/results.csv" "$OUT/table.md" "$OUT/accuracy.png"
fab_lifetime fabric_train "srt$$" || die "cannot make a work directory"
WORK=$FAB_DIR
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== rack: $N hosts, links of $RATE Mbit/s, MTU $MTU; $MODEL, $STEPS steps of $BATCH per rank"
fab_up "$N" "$MTU" sw || die "cannot make the rack"
fab_shape "$RATE" "$QUEUE" || die "cannot shape the links"

# run SYSTEM P: one training run on every host; appends results.csv.
FAILS=0
run() {
    local sys=${1%%:*} p=$2 s=$STALE label=$1 r pids=() sw_pid='' pol=bsp t0=$SECONDS
    [[ $1 == *:* ]] && s=${1#*:}
    [ "$sys" = serene-ssp ] && label=serene-ssp:$s && [ "$s" != 0 ] && pol=ssp:$s
    local tag=${label/:/-s}-p$p base=0
    if [ "$p" != 0 ] && [ "$p" != 0.0 ]; then
        base=$SBASE
        [ "$base" = auto ] && base=$(awk -F, '$1 == "gloo-ddp" && $2 + 0 == 0 { print $5 }' \
            "$OUT/results.csv" | head -n 1)
        base=${base:-0}
    fi
    local dir=$OUT/runs/$tag
    mkdir -p "$dir"
    if [ "$sys" != gloo-ddp ]; then
        rm -f "$WORK/port"
        fab_spawn "$OUT/logs/$tag.switch.log" "$(fab_ns_sw)" "$SWITCH" --listen "$FAB_SWITCH_IP:48200" \
            --port-file "$WORK/port" --job "0:$N:$ELEMS,store=$STORE,policy=$pol"
        sw_pid=$FAB_SPAWNED
        for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
        [ -s "$WORK/port" ] || { echo "fabric_train: $tag: serene-switch did not start"; return 1; }
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
            --model "$MODEL" --steps "$STEPS" --batch "$BATCH" --lr "$LR" --straggle-p "$p" \
            --straggle-base-ms "$base" \
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
        awk -F= -v OFS== -v label="$label" '{ v[$1] = $2; k[++n] = $1 } END {
            printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", label, v["straggle_p"], v["straggle_base_ms"], v["steps_per_s"],
                v["step_ms"], v["compute_ms"], v["comm_ms"], v["time_to_target_s"], v["final_acc"],
                v["link_mb_per_step"], v["wall_s"] }' >>"$OUT/results.csv"
    echo "fabric_train: $tag done in $((SECONDS - t0)) s: $(tail -n 1 "$OUT/results.csv")"
}

echo "system,straggle_p,straggle_base_ms,steps_per_s,step_ms,compute_ms,comm_ms,time_to_target_s,final_acc,link_mb_per_step,wall_s" \
    >"$OUT/results.csv"
total=$(($(tr ',' '\n' <<<"$STRAGGLE" | wc -l) * $(tr ',' '\n' <<<"$SYSTEMS" | wc -l))) k=0
for p in ${STRAGGLE//,/ }; do
    for sys in ${SYSTEMS//,/ }; do
        k=$((k + 1))
        echo "== run $k/$total: $sys, stragglers p=$p ($(date +%H:%M:%S))"
        run "$sys" "$p"
    done
done

# ---- the table and the plot ---------------------------------------------------
{
    echo "N = $N, $MODEL, $STEPS steps of $BATCH per rank, lr $LR, links $RATE Mbit/s (MTU $MTU)," \
        "target $TARGET%; load average before: $LOAD0, after: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| system | stragglers p | straggle base ms | steps/s | step ms | compute ms | comm ms | time to ${TARGET}% (s) | final acc % | MB per link per step |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    tail -n +2 "$OUT/results.csv" | awk -F, '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, ($2 + 0 ? $3 : "-"), $4, $5, $6, $7, $8, $9, $10 }'
} >"$OUT/table.md"
cat "$OUT/table.md"
if command -v gnuplot >/dev/null; then
    plots=()
    for d in "$OUT"/runs/*/; do
        [ -s "$d/evals.csv" ] && plots+=("'$d/evals.csv' every ::1 using 2:3 with linespoints title '$(basename "$d")'")
    done
    if [ ${#plots[@]} -gt 0 ]; then
        gnuplot -e "set terminal pngcairo size 900,560; set output '$OUT/accuracy.png'; set datafile separator ',';
            set xlabel 'wall time of the timed loop (s)'; set ylabel 'test accuracy (%)';
            set title 'N = $N, $MODEL, $RATE Mbit/s links'; set key bottom right;
            plot $(IFS=,; echo "${plots[*]}")" 2>"$OUT/logs/gnuplot.err" && echo "plot: $OUT/accuracy.png"
    fi
fi
echo "results: $OUT/table.md, $OUT/results.csv"
[ $FAILS -eq 0 ] || exit 1
