#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_fabric_cleanup.sh BUILD - bench/fabric.sh leaves nothing behind when
# a run fails or is interrupted while its ranks run in the rack:
#   die      FABRIC_TEST_DIE_AT=serene: the script fails (exit 3) right
#            after starting Serene's ranks, as a bug would;
#   sigint   Ctrl-C: SIGINT to the script's whole process group while the
#            ranks run (exit 130);
#   sigterm  SIGTERM to the script alone while the ranks run (exit 130).
# The links are impaired too when fabric_nfq and iptables are there, so its
# processes and rules are part of what must go. After each: no namespace
# of the run (srfPID-*), no process carrying its
# FABRIC_TAG, its temporary directory gone, and this namespace's links and
# nftables tables as before. Needs root (else SKIP, exit 77). Every wait is
# bounded; only the fabric.sh runs started here are signalled, by PID.
set -uo pipefail
BUILD=${1:?usage: $0 BUILD}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null && command -v tc >/dev/null || { echo "SKIP: no ip or tc (iproute2)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fabric-cleanup.XXXXXX") || exit 1
pid=""
cleanup() {
    # a run still going when this test fails: stop it; its trap cleans up
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && sleep 3
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted"; exit 1' INT TERM
set -m # background runs get their own process group, and keep SIGINT

state() { # this namespace's links and nftables tables
    ip -o link show | awk -F': ' '{ print $2 }' | sort
    command -v nft >/dev/null && nft list tables 2>/dev/null | sort
}
state >"$tmp/before"
impair=()
[ -x "$BUILD/bench/fabric_nfq" ] && command -v iptables >/dev/null && impair=(--loss 0.01 --delay 0-1)

# rank_runs TAG: a rank (bench_allreduce) runs in TAG-h1.
rank_runs() {
    local p
    for p in $(ip netns pids "$1-h1" 2>/dev/null); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = bench_allreduce ] && return 0
    done
    return 1
}

# leftovers TAG: what a run of that tag left; prints it, fails if any.
leftovers() {
    local tag=$1 bad=0 p
    if ip netns list | grep -q "^$tag-"; then
        echo "left behind: namespaces $(ip netns list | grep "^$tag-" | tr '\n' ' ')"
        bad=1
    fi
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = $$ ] && continue
        if grep -qazx "FABRIC_TAG=$tag" "$p/environ" 2>/dev/null; then
            echo "left behind: pid ${p#/proc/} ($(tr '\0' ' ' <"$p/cmdline" | cut -c1-100))"
            bad=1
        fi
    done
    if [ -n "$(ls -A "$tmp/run" 2>/dev/null)" ]; then
        echo "left behind: $(ls "$tmp/run")"
        bad=1
    fi
    state >"$tmp/after"
    if ! cmp -s "$tmp/before" "$tmp/after"; then
        echo "this namespace changed:"
        diff "$tmp/before" "$tmp/after"
        bad=1
    fi
    return $bad
}

# one CASE: start fabric.sh (long enough to be caught mid-run), wait until
# its ranks run in the rack, then fail or signal it; check its status and
# what it left.
run_case() {
    local case=$1 want tag rc
    rm -rf "$tmp/run" && mkdir -p "$tmp/run"
    local env=(TMPDIR="$tmp/run")
    [ "$case" = die ] && env+=(FABRIC_TEST_DIE_AT=serene)
    env "${env[@]}" "$ROOT/bench/fabric.sh" --build "$BUILD" --out "$tmp/out" -n 2 --rates 20 \
        --sizes 64M --reps 2 --windows 0 --peers serene --case-timeout 120 "${impair[@]+"${impair[@]}"}" \
        >"$tmp/$case.log" 2>&1 &
    pid=$!
    tag=srf$pid
    for _ in $(seq 300); do # 30 s: the build is done, the rack takes a second
        rank_runs "$tag" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [ "$case" = die ] || rank_runs "$tag" ||
        { cat "$tmp/$case.log"; echo "FAIL: $case: no rank ever ran in $tag-h1"; exit 1; }
    case $case in
    sigint) kill -INT -- "-$pid"; want=130 ;;
    sigterm) kill -TERM "$pid"; want=130 ;;
    die) want=3 ;;
    esac
    for _ in $(seq 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        cat "$tmp/$case.log"
        echo "FAIL: $case: fabric.sh still runs 30 s later"
        exit 1
    fi
    wait "$pid"
    rc=$?
    pid=""
    sed 's/^/    /' "$tmp/$case.log" | tail -n 6
    [ "$rc" -eq "$want" ] || { echo "FAIL: $case: fabric.sh exited $rc, want $want"; exit 1; }
    leftovers "$tag" || { echo "FAIL: $case: the run left things behind"; exit 1; }
    echo "ok: $case (exit $rc): no namespace, process, file, link or table left"
}

for c in die sigint sigterm; do
    run_case $c
done
echo "PASS: fabric-cleanup"
