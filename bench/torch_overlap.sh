#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# torch_overlap.sh [BUILD_DIR] [--nproc N] [ARGS...] - run
# bench/torch_overlap.py under torchrun --standalone --nproc_per_node N
# (default 2; python3 -m torch.distributed.run of the Python that imports
# torch), with the build's serene_torch and serene-switch (default
# BUILD_DIR: build). ARGS go to torch_overlap.py (--layers, --width,
# --bucket-mb, --iters, --rounds, --json, ...). OMP_NUM_THREADS defaults
# to 1: the ranks and the switch share the cores.
# --redirects 1 --tee 1: Debian's torchrun fails with its default 0 under
# Python 3.11; the rank logs go to a temporary directory, removed at exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    build=$1
    shift
fi
nproc=2
if [ "${1:-}" = --nproc ]; then
    [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null ||
        { echo "torch_overlap.sh: --nproc needs a rank count >= 1" >&2; exit 2; }
    nproc=$2
    shift 2
fi
build=$(cd "$build" && pwd)
[ -d "$build/lib/torch/serene_torch" ] ||
    { echo "torch_overlap.sh: no $build/lib/torch (configure with -Dtorch=enabled)" >&2; exit 1; }
py=/usr/bin/python3
"$py" -c 'import torch' 2>/dev/null || py=python3
logs=$(mktemp -d "${TMPDIR:-/tmp}/serene-overlap.XXXXXX")
trap 'rm -rf "$logs"' EXIT
export PYTHONPATH=$build/lib/torch${PYTHONPATH:+:$PYTHONPATH}
export SERENE_SWITCH_BIN=$build/p4/swswitch/serene-switch
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
unset SERENE_SWITCH
"$py" -m torch.distributed.run --standalone --nproc_per_node "$nproc" --max_restarts 0 \
    --redirects 1 --tee 1 --log_dir "$logs" "$here/torch_overlap.py" "$@"
