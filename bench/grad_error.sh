#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# grad_error.sh - bench/grad_error.py under torchrun on this host: the error
# of Serene's 16-bit and 32-bit allreduce, of float16 through Serene and
# through Gloo (DDP's fp16_compress_hook), and of bfloat16 sums, on
# ResNet-18's real gradients (grad_error.py says how each is measured).
#
#   bench/grad_error.sh [--build DIR] [--nproc 4] [--points 0,20,60] [--batch 32]
#                       [--elems 2048] [--out FILE.md]
#
# A serene-switch this script starts on 127.0.0.1 (and stops by PID) with
# --elems words per packet (2048, as the rack of bench/fabric_train.sh at
# MTU 9000: the block of one exponent is that many 32-bit values, or twice
# as many 16-bit ones, two to a word), the MNIST digits of
# examples/train/fetch_data.sh. Prints the table (and writes --out, default
# BUILD/grad-error.md). Needs Debian's python3-torch, libtorch-dev and
# python3-torchvision, and a build with the torch extension.
# Exit status: 0; 1 the run failed; 2 bad usage or no build.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build NPROC=4 POINTS=0,20,60 BATCH=32 OUT='' ELEMS=2048
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift ;;
    --nproc) NPROC=${2:?}; shift ;;
    --points) POINTS=${2:?}; shift ;;
    --batch) BATCH=${2:?}; shift ;;
    --elems) ELEMS=${2:?}; shift ;;
    --out) OUT=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "grad_error: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ $NPROC =~ ^[1-9][0-9]*$ ]] || { echo "grad_error: bad --nproc '$NPROC'" >&2; exit 2; }
[[ $ELEMS =~ ^[1-9][0-9]*$ ]] || { echo "grad_error: bad --elems '$ELEMS'" >&2; exit 2; }
ops=$BUILD/lib/torch/serene_torch/serene_torch_ops.so
[ -f "$ops" ] && [ -x "$BUILD/p4/swswitch/serene-switch" ] ||
    { echo "grad_error: no torch extension or serene-switch in $BUILD (meson setup -Dtorch=enabled)" >&2; exit 2; }
OUT=${OUT:-$BUILD/grad-error.md}
data=$("$ROOT/examples/train/fetch_data.sh" 2>/dev/null | tail -n 1)
[ -f "$data" ] || { echo "grad_error: no digit set (examples/train/fetch_data.sh)" >&2; exit 1; }
logs=$(mktemp -d "${TMPDIR:-/tmp}/grad-error.XXXXXX")
swpid=''
trap '[ -n "$swpid" ] && kill "$swpid" 2>/dev/null; rm -rf "$logs"' EXIT
"$BUILD/p4/swswitch/serene-switch" --listen 127.0.0.1:0 --port-file "$logs/port" \
    --job "0:$NPROC:$ELEMS" >"$logs/switch.log" 2>&1 &
swpid=$!
for _ in $(seq 100); do [ -s "$logs/port" ] && break; sleep 0.05; done
[ -s "$logs/port" ] || { cat "$logs/switch.log"; echo "grad_error: serene-switch did not start" >&2; exit 1; }
echo "grad_error: $NPROC ranks, $ELEMS words per packet, points $POINTS;" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
GRAD_ERROR_ELEMS=$ELEMS SERENE_SWITCH=127.0.0.1:$(cat "$logs/port") PYTHONPATH=$BUILD/lib/torch OMP_NUM_THREADS=1 \
    SERENE_LOG_LEVEL=warn timeout 1800 /usr/bin/python3 -m torch.distributed.run \
    --rdzv_backend c10d --rdzv_endpoint localhost:0 --rdzv_id grad-error --nnodes 1 \
    --nproc_per_node "$NPROC" --max_restarts 0 --redirects 1 --tee 1 --log_dir "$logs" \
    "$ROOT/bench/grad_error.py" --data "$data" --points "$POINTS" --batch "$BATCH" --out "$OUT" \
    2>&1 | grep -v -e 'Warning' -e 'warnings.warn' -e '^\[default[1-9]' | sed 's/^\[default0\]://'
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || { echo "grad_error: torchrun exited with status $rc" >&2; exit 1; }
printf '\n(`bench/grad_error.sh --nproc %s --points %s --elems %s`, %s, %s, load average after: %s)\n' \
    "$NPROC" "$POINTS" "$ELEMS" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "$(date -u +%Y-%m-%d)" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT"
echo "table: $OUT"
