#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_wheel.sh PYTHON SOURCE_ROOT TEST_PG - the path a PyTorch user takes:
# a fresh virtual environment of PYTHON (the interpreter that imports
# torch) with --system-site-packages, `pip install --no-index
# --no-build-isolation SOURCE_ROOT` (pyproject.toml: the wheel serene_torch,
# built offline by meson-python, with the system's torch), then
# the backend test TEST_PG under torchrun with that environment's python
# and nothing of the build tree: no PYTHONPATH, no SERENE_SWITCH_BIN (rank 0
# starts the serene-switch the wheel holds). The environment lives in a
# temporary directory, removed on exit.
set -euo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 PYTHON SOURCE_ROOT TEST_PG" >&2
    exit 2
fi
py=$1 src=$2 test_pg=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/serene-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "SKIP: $py has no venv/ensurepip (Debian: apt-get install python3-venv python3-pip)"
    exit 77
fi
if ! "$py" -c 'import mesonpy' 2>/dev/null; then
    echo "SKIP: $py has no meson-python, pyproject.toml's build back end (Debian: apt-get install python3-mesonpy)"
    exit 77
fi
echo "venv: $py -m venv --system-site-packages $work/env"
"$py" -m venv --system-site-packages "$work/env"
echo "pip install --no-index --no-build-isolation $src (a meson build: minutes)"
t0=$(date +%s)
# The build's own directories, not the caller's meson variables.
env -u PYTHONPATH -u MESON_BUILD_ROOT -u MESON_SOURCE_ROOT \
    "$work/env/bin/pip" install --no-index --no-build-isolation --no-cache-dir "$src" \
    >"$work/pip.log" 2>&1 || {
    tail -n 40 "$work/pip.log"
    echo "FAIL: pip install exited non-zero (above: the end of its log)"
    exit 1
}
echo "installed in $(($(date +%s) - t0)) s: $(grep -o 'Successfully installed .*' "$work/pip.log")"
# Built by meson-python (its WHEEL file says Generator: meson), not by hand.
dist=$(echo "$work"/env/lib/python3*/site-packages/serene_torch-*.dist-info)
grep -q '^Generator: meson$' "$dist/WHEEL" || {
    echo "FAIL: the wheel was not built by meson-python: $(cat "$dist/WHEEL")"
    exit 1
}
echo "wheel: $(grep -h '^Tag:' "$dist/WHEEL"), files: $(cut -d, -f1 "$dist/RECORD" | grep '^serene_torch/' | grep -v __pycache__ | tr '\n' ' ')"
cd "$work"
where=$(env -u PYTHONPATH "$work/env/bin/python" -c \
    'import serene_torch.embedded_switch as e, serene_torch as s; print(s.__file__, e.find_switch())')
echo "imports: $where"
case $where in
    "$work/env/"*" $work/env/"*) ;;
    *) echo "FAIL: serene_torch or its switch is not the installed one: $where"; exit 1 ;;
esac
env -u PYTHONPATH -u SERENE_SWITCH_BIN "$work/env/bin/python" -m torch.distributed.run \
    --rdzv_backend c10d --rdzv_endpoint localhost:0 --rdzv_id serene-wheel --nnodes 1 \
    --nproc_per_node 2 --max_restarts 0 --redirects 1 --tee 1 --log_dir "$work/logs" \
    "$test_pg"
echo "PASS: the installed serene_torch under torchrun"
