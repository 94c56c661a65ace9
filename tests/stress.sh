#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# stress.sh - the suites a loaded machine must not break: runs the
# integration, torch and fabric suites (meson test) ROUNDS times in a row
# beside two busy loops of normal priority and a niced compile that takes
# one core, and records every failure with its log. A test that passes only
# on a quiet machine fails here. As root (the fabric suite and its
# namespaces need it; the others run as any user).
#
#   tests/stress.sh [--build DIR] [--rounds 10] [--suites integ,torch,fabric]
#                   [--loops 2] [--compile 1|0] [--out DIR]
#
#   --build DIR    the build the suites run from (default build-stress, made
#                  like CI's gcc build: -Dwerror=true, torch and rdma on)
#   --rounds N     how many times each suite runs (each round every suite)
#   --suites LIST  meson suites, comma-separated (e.g. add dpdk)
#   --loops N      busy loops `while :; do :; done` of normal priority
#   --compile 1|0  a niced (19) compile of the library, over and over, on
#                  the last CPU (its own build in OUT/load-build)
#   --out DIR      where the logs go (default DIR/stress): per round
#                  round-K.txt and round-K.json (meson's output and log),
#                  failures/round-K-TEST.log (the failed test's output),
#                  summary.txt
#
# Prints one progress line per round (passed, failed, skipped, seconds,
# load average) and, at the end, each test that failed with its count;
# exits 1 if any test failed in any round, 2 on bad usage. The loops, the
# compile and a round under way are stopped (by PID) on exit, also on
# failure, Ctrl-C and SIGTERM.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-stress ROUNDS=10 SUITES=integ,torch,fabric NLOOPS=2 COMPILE=1 OUT=
die() { echo "stress: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift ;;
    --rounds) ROUNDS=${2:?}; shift ;;
    --suites) SUITES=${2:?}; shift ;;
    --loops) NLOOPS=${2:?}; shift ;;
    --compile) COMPILE=${2:?}; shift ;;
    --out) OUT=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "bad --rounds '$ROUNDS'"
[[ $NLOOPS =~ ^[0-9]+$ ]] || die "bad --loops '$NLOOPS'"
[[ $COMPILE =~ ^[01]$ ]] || die "bad --compile '$COMPILE' (1 or 0)"
[[ $SUITES =~ ^[a-z]+(,[a-z]+)*$ ]] || die "bad --suites '$SUITES'"
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
OUT=${OUT:-$BUILD/stress}
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac

# shellcheck source=../bench/bench_lib.sh
. "$ROOT/bench/bench_lib.sh" # start_loops, stop_loops
LOAD_PID='' MESON_PID=''
stop_load() {
    if [ -n "$MESON_PID" ]; then # a round under way: meson stops its tests
        kill -TERM "$MESON_PID" 2>/dev/null
        wait "$MESON_PID" 2>/dev/null
    fi
    stop_loops
    if [ -n "$LOAD_PID" ]; then
        kill -- -"$LOAD_PID" 2>/dev/null # its own process group: the loop and its ninja
        wait "$LOAD_PID" 2>/dev/null
        LOAD_PID=
    fi
}
trap stop_load EXIT
trap 'exit 130' INT TERM

if [ ! -f "$BUILD/build.ninja" ]; then
    CC=${CC:-gcc} meson setup "$BUILD" "$ROOT" -Dwerror=true -Dtorch=enabled -Drdma=enabled >/dev/null ||
        die "meson setup $BUILD failed"
fi
ninja -C "$BUILD" >/dev/null || die "ninja -C $BUILD failed"
avail=$(meson test -C "$BUILD" --list 2>/dev/null | sed -n 's/^[^:]*:\([^ ]*\) \/ .*/\1/p' | tr '+' '\n' | sort -u)
args=()
IFS=, read -ra SL <<<"$SUITES"
for s in "${SL[@]}"; do
    grep -qx "$s" <<<"$avail" || die "no suite '$s' in $BUILD (it has: $(tr '\n' ' ' <<<"$avail"))"
    args+=(--suite "$s")
done
rm -rf "$OUT"
mkdir -p "$OUT/failures" || die "cannot make $OUT"

if [ "$COMPILE" = 1 ]; then
    lb=$OUT/load-build
    meson setup "$lb" "$ROOT" -Dtests=disabled -Dbench=disabled -Dexamples=disabled \
        -Dtorch=disabled -Ddpdk=disabled >/dev/null || die "meson setup of the compile load failed"
    cpu=$(($(nproc) - 1))
    setsid nice -n 19 taskset -c "$cpu" sh -c \
        "while :; do ninja -C '$lb' -t clean >/dev/null; ninja -C '$lb' -j1 >/dev/null; done" &
    LOAD_PID=$!
fi
start_loops "$NLOOPS"
echo "stress: $ROUNDS rounds of suites $SUITES from $BUILD beside $NLOOPS busy loops" \
    "and $([ "$COMPILE" = 1 ] && echo "a niced compile on CPU $cpu" || echo "no compile"); logs in $OUT"

declare -A FAILS=()
total_fail=0 total_pass=0
for ((r = 1; r <= ROUNDS; r++)); do
    t0=$(date +%s)
    # A log name of this run's own: another stress run on BUILD (e.g. the
    # stress-mode test inside a round) must not write into this one's.
    base=stress-$$-round-$r
    meson test -C "$BUILD" --no-rebuild --logbase "$base" "${args[@]}" >"$OUT/round-$r.txt" 2>&1 &
    MESON_PID=$!
    wait "$MESON_PID"
    MESON_PID=
    json=$OUT/round-$r.json
    mv "$BUILD/meson-logs/$base.json" "$json" 2>/dev/null ||
        die "round $r: meson wrote no $BUILD/meson-logs/$base.json (see $OUT/round-$r.txt)"
    rm -f "$BUILD/meson-logs/$base.txt"
    read -r pass fail skip failed < <(python3 - "$json" "$OUT/failures" "$r" <<'EOF'
import json, re, sys
path, fdir, rnd = sys.argv[1:4]
p = f = s = 0
names = []
for line in open(path):
    t = json.loads(line)
    res = t["result"]
    if res == "OK":
        p += 1
    elif res in ("SKIP", "EXPECTEDFAIL"):
        s += 1
    else:
        f += 1
        name = t["name"].split(" / ")[-1]
        names.append(name)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        with open(f"{fdir}/round-{rnd}-{safe}.log", "w") as o:
            o.write(f"{t['name']}: {res} after {t['duration']:.1f} s\n")
            o.write(t.get("stdout") or "")
            o.write(t.get("stderr") or "")
print(p, f, s, ",".join(names) or "-")
EOF
    )
    [ -n "${pass:-}" ] || die "round $r: cannot read $json"
    total_pass=$((total_pass + pass)) total_fail=$((total_fail + fail))
    if [ "$failed" != - ]; then
        IFS=, read -ra FL <<<"$failed"
        for n in "${FL[@]}"; do FAILS[$n]=$((${FAILS[$n]:-0} + 1)); done
    fi
    printf 'stress: round %d/%d: %d passed, %d failed, %d skipped, %d s, load %s%s\n' "$r" "$ROUNDS" \
        "$pass" "$fail" "$skip" $(($(date +%s) - t0)) "$(cut -d' ' -f1 /proc/loadavg)" \
        "$([ "$failed" != - ] && echo " (failed: $failed)")" | tee -a "$OUT/summary.txt"
done
{
    echo "stress: $ROUNDS rounds: $total_pass passed, $total_fail failed"
    for n in "${!FAILS[@]}"; do echo "  $n failed in ${FAILS[$n]} of $ROUNDS rounds (logs: $OUT/failures/round-*-$n.log)"; done
} | tee -a "$OUT/summary.txt"
[ "$total_fail" -eq 0 ]
