#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# run_valgrind.sh BUILD_DIR - the core unit tests and the integration API
# test under valgrind's memcheck:
#
#   unit:  test_wire, test_quant*, test_reliab, test_pipeline_* but the
#          simulation, test_barrier*
#   integ: test_api (it starts serene-switch from $SERENE_SWITCH_BIN) and
#          isolation (serene-switch fed forged and malformed datagrams);
#          serene-switch runs under memcheck too (--trace-children).
#
# Each runs under
#   valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
# with SERENE_CPU_MASK=1, so no AVX-512 kernel is chosen (valgrind has no
# AVX-512; the build uses no -march=native, so nothing else needs it). A
# test fails when it fails by itself, or when memcheck reports an error or a
# definite leak in any of its processes (every process's ERROR SUMMARY is
# read, since a traced child's exit status is its parent's business).
# (test_quant's CPU-probe check knows that valgrind's CPUID hides AVX-512.)
#
# Takes about 15 s (2 CPUs). Exit status: 0 all clean; 1 a failure; 2 usage.
set -uo pipefail

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v valgrind >/dev/null; then
    echo "FAIL: valgrind not found (Debian: apt-get install valgrind)"
    exit 1
fi
LIMIT_S=${VALGRIND_TEST_TIMEOUT:-120}

logs=$(mktemp -d "${TMPDIR:-/tmp}/serene-valgrind.XXXXXX") || exit 1
trap 'rm -rf "$logs"' EXIT

export SERENE_CPU_MASK=1
export SERENE_VECTORS=$src/tests/vectors
export CMOCKA_MESSAGE_OUTPUT=stdout
export SERENE_SWITCH_BIN=$build/p4/swswitch/serene-switch
export SERENE_LOG_LEVEL=${SERENE_LOG_LEVEL:-warn}

VG=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --num-callers=30 --trace-children=yes)

results=()
failed=0
t_all=$(date +%s%N)

# memcheck_clean NAME: every process's log says 0 errors; prints the totals.
memcheck_clean() {
    local f n errors=0 procs=0 bad=0
    for f in "$logs/$1".vg.*; do
        [ -f "$f" ] || continue
        procs=$((procs + 1))
        n=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$f" | tail -1)
        if [ -z "$n" ]; then
            # memcheck never finished there: the process was killed.
            echo "  $(basename "$f"): no ERROR SUMMARY (killed before memcheck could report?)"
            bad=1
            continue
        fi
        errors=$((errors + n))
    done
    vg_summary="$procs process(es), $errors memcheck error(s)"
    [ "$errors" -eq 0 ] && [ "$bad" -eq 0 ]
}

# run NAME BINARY [ARGS...]
run() {
    local name=$1 bin=$2 t0 rc ms status
    shift 2
    if [ ! -x "$bin" ]; then
        results+=("FAIL  $name: $bin not built (cmocka missing, or tests disabled?)")
        failed=1
        return
    fi
    t0=$(date +%s%N)
    timeout -k 5 "$LIMIT_S" "${VG[@]}" --log-file="$logs/$name.vg.%p" "$bin" "$@" \
        >"$logs/$name.out" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    memcheck_clean "$name"
    local clean=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        status="FAIL  $name: still running after ${LIMIT_S} s under valgrind"
    elif [ "$rc" -eq 0 ] && [ "$clean" -eq 0 ]; then
        status="PASS  $name ($((ms / 1000)).$(printf %03d $((ms % 1000))) s, $vg_summary)"
    else
        status="FAIL  $name (exit $rc, $vg_summary)"
    fi
    results+=("$status")
    echo "$status"
    if [ "${status#FAIL}" != "$status" ]; then
        failed=1
        echo "---- $name: output (tail)"
        tail -n 25 "$logs/$name.out"
        for f in "$logs/$name".vg.*; do
            grep -q "ERROR SUMMARY: 0 errors" "$f" && continue
            echo "---- $name: valgrind log $(basename "$f")"
            grep -v '^==[0-9]*== *$' "$f" | head -n 80
        done
    fi
}

echo "valgrind $(valgrind --version | sed 's/^valgrind-//') on $(uname -m); build $build"
for t in wire quant quant_variants quant_avg reliab pipeline_jobs pipeline_join pipeline_allreduce \
    pipeline_probe pipeline_ssp barrier barrier_model barrier_policy; do
    run "test_$t" "$build/tests/unit/test_$t"
done
run test_api "$build/tests/integ/test_api"
run isolation "$build/tests/integ/isolation" "$SERENE_SWITCH_BIN"

ms=$((($(date +%s%N) - t_all) / 1000000))
echo "==== valgrind summary ($((ms / 1000)).$(printf %03d $((ms % 1000))) s):"
printf '  %s\n' "${results[@]}"
if [ "$failed" -ne 0 ]; then
    echo "FAIL: valgrind: see above"
    exit 1
fi
echo "PASS: valgrind: every test passed with no memcheck error and no definite leak"
exit 0
