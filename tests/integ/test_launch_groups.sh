#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_launch_groups.sh SERENE_RUN - nothing a rank starts outlives
# serene-run. Each rank is a wrapper script that starts a long-lived child
# (sleep 300) and records its PID in a file; after serene-run exits, every
# recorded child must be gone, whether the wrapper
# - exits at once, leaving its child behind (serene-run exits 0),
# - waits for it and serene-run hits its --timeout (124),
# - waits for it while another rank fails (that rank's status),
# - waits for it and serene-run gets SIGTERM (143),
# - left a child that ignores SIGTERM (SIGKILL after the grace period).
# And rank 0, in a group of its own, still reads a terminal on stdin (with
# script(1), else skipped).
# The ranks need no switch (--switch 127.0.0.1:9: they never talk to it),
# except in the last case, which uses the embedded one. Every run is
# bounded by `timeout`; the exit trap kills, by recorded PID, any child
# that a failed check left running.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 SERENE_RUN" >&2
    exit 2
fi
RUN=$1

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init launch-groups
HARNESS_LOGS=(run.err)

# The children recorded in $work/child.*: still there (and still a sleep
# of ours, not a reused PID)?
alive_children() {
    local f pid
    for f in "$work"/child.*; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        [ -n "$pid" ] || continue
        if kill -0 "$pid" 2>/dev/null && grep -q '^sleep' "/proc/$pid/cmdline" 2>/dev/null; then
            echo "$pid"
        fi
    done
}
# shellcheck disable=SC2317 # run by the exit trap
on_cleanup() {
    local pid
    for pid in $(alive_children); do
        kill -KILL "$pid" 2>/dev/null || true
    done
}

cat >"$work/wrap.sh" <<'WRAP'
#!/bin/sh
# wrap.sh MODE: a rank through a wrapper; its real work is a child.
# stubborn: deaf to SIGTERM before the fork, so the child is from its
# first instant (serene-run may signal the group as soon as this exits).
[ "$1" != stubborn ] || trap '' TERM
sleep 300 &
echo $! >"$WORK/child.$SERENE_RANK.tmp"
mv "$WORK/child.$SERENE_RANK.tmp" "$WORK/child.$SERENE_RANK"
case $1 in
exit | stubborn) exit 0 ;;
fail) if [ "$SERENE_RANK" = 1 ]; then sleep 0.5; exit 3; fi; wait ;;
*) wait ;;
esac
WRAP
chmod +x "$work/wrap.sh"
export WORK=$work

# case NAME RC LIMIT_S SERENE_RUN_ARGS...: run it, expect RC, then no child left.
case_() {
    local name=$1 want=$2 limit=$3 t0 rc=0 left
    shift 3
    rm -f "$work"/child.*
    t0=$(date +%s%N)
    timeout -k 5 "$limit" "$RUN" "$@" >"$work/run.out" 2>"$work/run.err" </dev/null || rc=$?
    local ms
    ms=$(ms_since "$t0")
    [ "$(find "$work" -name 'child.[0-9]' | wc -l)" -eq 2 ] ||
        fail "$name: the wrappers did not record two children"
    left=$(alive_children | tr '\n' ' ')
    [ -z "$left" ] || fail "$name: children $left outlived serene-run (exit $rc after $ms ms)"
    [ "$rc" -eq "$want" ] || fail "$name: serene-run exit $rc, expected $want"
    echo "ok: $name: serene-run exit $rc after $ms ms, no child left"
}

EXT=(--switch 127.0.0.1:9)
case_ "wrapper exits, its child stays" 0 30 -n 2 "${EXT[@]}" -- "$work/wrap.sh" exit
grep -q 'exited and left processes in its group; stopping them' "$work/run.err" ||
    fail "no note about the processes left in a rank's group"
case_ "--timeout while wrappers wait" 124 30 -n 2 --timeout 1 "${EXT[@]}" -- "$work/wrap.sh" wait
case_ "another rank fails" 3 30 -n 2 "${EXT[@]}" -- "$work/wrap.sh" fail

# serene-run itself gets SIGTERM once both children are recorded.
rm -f "$work"/child.*
"$RUN" -n 2 "${EXT[@]}" -- "$work/wrap.sh" wait >"$work/run.out" 2>"$work/run.err" </dev/null &
runpid=$!
bg_pids+=("$runpid")
for _ in $(seq 200); do
    [ "$(find "$work" -name 'child.[0-9]' | wc -l)" -eq 2 ] && break
    sleep 0.05
done
kill -TERM "$runpid"
wait_pid "$runpid" 20
left=$(alive_children | tr '\n' ' ')
[ -z "$left" ] || fail "SIGTERM: children $left outlived serene-run (exit $rc)"
[ "$rc" -eq 143 ] || fail "SIGTERM: serene-run exit $rc, expected 143"
echo "ok: serene-run got SIGTERM: exit $rc, no child left"

# A child that ignores SIGTERM, and the embedded switch (when the build's
# serene-switch is given) stopped after it.
case_ "a child ignores SIGTERM" 0 30 -n 2 -- "$work/wrap.sh" stubborn
grep -q 'process group still runs .* after SIGTERM; sending SIGKILL' "$work/run.err" ||
    fail "no SIGKILL note for the child that ignores SIGTERM"
# Rank 0 in a group of its own still reads a terminal on stdin: its group
# is handed the terminal (a background group's read would stop it).
if command -v script >/dev/null; then
    got=$(printf 'hello\n' | timeout -k 2 20 script -qec "'$RUN' -n 2 ${EXT[*]} -- sh -c \
        'if [ \$SERENE_RANK = 0 ]; then read x; echo got \$x; fi'" /dev/null 2>&1) || true
    grep -q '\[0\] got hello' <<<"$got" || fail "rank 0 did not read its terminal: $got"
    echo "ok: rank 0 reads a line from a terminal"
else
    echo "skip: rank 0 on a terminal (no script(1))"
fi
echo "PASS: launch-groups"
