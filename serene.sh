#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# serene.sh - the README's commands, runnable as root on a fresh Debian 12.
#   ./serene.sh demo   build, then run the main job: MLP training with stragglers
#                      under BSP, SSP(10), ASP, dynamic and allreduce (4 ranks,
#                      embedded software switch); prints the table, writes plots
#   ./serene.sh test   build and run the whole test suite: gcc -Werror (unit, ABI,
#                      integration), clang -Werror (unit, ABI), gcc with ASan+UBSan
#                      (unit, integration), clang libFuzzer targets (bounded time)
#   ./serene.sh stress [tests/stress.sh args]
#                      the integration, torch and fabric suites 10 times beside
#                      two busy loops and a niced compile; each failure logged
#   ./serene.sh bench [--quick|--full] [run_suite.sh args]
#                      release build, then the benchmark suite beside OpenMPI
#                      and Gloo (build-bench/bench-results/{table.md,goodput.png})
# Each installs the Debian packages it needs when they are missing.
set -euo pipefail
cd "$(dirname "$0")"

PKGS_BUILD=(build-essential pkg-config meson ninja-build libcmocka-dev libpcap-dev clang binutils iproute2)
PKGS_DEMO=(python3 gnuplot-nox) # and npm, unless one is on PATH (nodesource's)
PKGS_BENCH=(g++ openmpi-bin libopenmpi-dev libgloo-dev gnuplot-nox dpdk-dev libnetfilter-queue-dev iptables)
PKGS_TEST=(libclang-rt-14-dev valgrind tcpdump dpdk-dev g++ python3-torch libtorch-dev python3-numpy
    libnetfilter-queue-dev iptables # these two: link faults on the emulated rack (bench/fabric_nfq)
    libibverbs-dev tshark # the rdma transport; tshark decodes the RoCEv2 traces
    python3-torchvision # examples/torch/train_e2e.py's ResNet-18
    python3-venv python3-pip python3-mesonpy) # pip-install-torchrun: `pip install .` (meson-python) into a venv

need_pkgs() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "serene.sh: installing ${missing[*]}"
        if [ "$(id -u)" -ne 0 ]; then
            echo "serene.sh: missing packages and not root: run as root or install: ${missing[*]}" >&2
            exit 1
        fi
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

setup_build() { # dir, extra meson args...
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@"
    else
        meson configure "$dir" "$@" >/dev/null
    fi
    ninja -C "$dir"
}

# Run meson test, keep its summary counts for the closing line.
PASSED=0
FAILED=0
run_suites() { # dir, meson test args...
    local dir=$1 rc=0
    shift
    meson test -C "$dir" --print-errorlogs "$@" || rc=$?
    local log="$dir/meson-logs/testlog.json"
    if [ -f "$log" ]; then
        PASSED=$((PASSED + $(grep -c '"result": "OK"' "$log" || true)))
        FAILED=$((FAILED + $(grep -Ec '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)))
    fi
    return $rc
}

cmd=${1:-}
case $cmd in
demo)
    need_pkgs "${PKGS_BUILD[@]}" "${PKGS_DEMO[@]}"
    command -v npm >/dev/null || need_pkgs npm
    setup_build build -Dbuildtype=release
    shift
    examples/train/demo.sh --build build "$@"
    ;;
test)
    need_pkgs "${PKGS_BUILD[@]}" "${PKGS_TEST[@]}"
    status=0
    echo "=== gcc, -Werror: unit, abi and integration suites"
    CC=gcc setup_build build-ci-gcc -Dwerror=true -Dtorch=enabled -Drdma=enabled || status=1
    [ $status -eq 0 ] && { run_suites build-ci-gcc || status=1; }
    echo "=== valgrind memcheck: core unit tests, test_api and isolation (gcc build)"
    if tests/valgrind/run_valgrind.sh build-ci-gcc; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        status=1
    fi
    echo "=== clang, -Werror: unit and abi suites"
    if CC=clang setup_build build-ci-clang -Dwerror=true -Dtorch=disabled; then
        run_suites build-ci-clang --suite unit --suite abi || status=1
    else
        status=1
    fi
    echo "=== gcc, AddressSanitizer + UndefinedBehaviorSanitizer: unit and integration suites"
    if CC=gcc setup_build build-ci-asan -Dwerror=true -Dtorch=disabled -Db_sanitize=address,undefined -Db_lundef=false; then
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
            run_suites build-ci-asan --suite unit --suite integ || status=1
    else
        status=1
    fi
    echo "=== clang libFuzzer + ASan + UBSan: each fuzz target for ${FUZZ_TIME:-20} s"
    if CC=clang setup_build build-ci-fuzz -Dfuzz=enabled -Dtorch=disabled -Db_sanitize=address,undefined \
        -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link -Dwerror=true; then
        run_suites build-ci-fuzz --suite fuzz || status=1
    else
        status=1
    fi
    echo "$PASSED passed, $FAILED failed"
    exit $status
    ;;
stress)
    need_pkgs "${PKGS_BUILD[@]}" "${PKGS_TEST[@]}"
    shift
    exec tests/stress.sh "$@"
    ;;
bench)
    need_pkgs "${PKGS_BUILD[@]}" "${PKGS_BENCH[@]}"
    shift
    exec bench/run_suite.sh "$@"
    ;;
*)
    echo "usage: $0 demo|test|stress|bench [args]" >&2
    exit 2
    ;;
esac
