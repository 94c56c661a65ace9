# SPDX-License-Identifier: Apache-2.0
# harness.sh - the shell library of the integration scripts (sourced, not
# run): a temporary directory, failure and skip reports, a real
# serene-switch started and stopped, ranks and other background processes
# started, waited for and stopped. Processes are stopped only by the PIDs
# started here; every wait is bounded; it works under `set -e` too.
#
# The caller runs harness_init NAME first; it may set
#   SWITCH        the serene-switch binary (default: $SERENE_SWITCH_BIN)
#   RUN           serene-run, for ranks
#   CHECK         ssp_check, for kill_stamped and ctl_field
#   NSX           a command prefix that runs the switch elsewhere
#                 (e.g. `ip netns exec NS`)
#   HARNESS_LOGS  files in $work whose tails a failure prints (default:
#                 switch.log), HARNESS_TAIL lines of each (default 20)
# and define on_cleanup, which the exit trap runs once the processes are
# stopped and before $work is removed (to delete namespaces, say).

# harness_init NAME: $work, a temporary directory removed at exit; the exit
# trap stops what is still running; INT and TERM fail the test.
harness_init() {
    HARNESS_NAME=$1
    work=$(mktemp -d "${TMPDIR:-/tmp}/serene-${1//[^A-Za-z0-9_-]/_}.XXXXXX") ||
        { echo "FAIL: $1: cannot create a temporary directory"; exit 1; }
    swpid=""
    bg_pids=()
    trap harness_cleanup EXIT
    trap 'fail "interrupted"' INT TERM
}

# shellcheck disable=SC2317 # run by the EXIT trap
harness_cleanup() {
    # A signal now must not cut the cleanup short, nor `set -e` a failure.
    trap '' INT TERM
    set +e
    stop_pids
    [ -n "$swpid" ] && stop_switch >/dev/null
    if declare -F on_cleanup >/dev/null; then
        on_cleanup
    fi
    rm -rf "$work"
}

# fail MESSAGE: print "FAIL: NAME: MESSAGE" and the logs' tails; exit 1.
fail() {
    local f
    echo "FAIL: $HARNESS_NAME: $*"
    for f in "${HARNESS_LOGS[@]-switch.log}"; do
        [ -f "$work/$f" ] || continue
        echo "---- $f (tail):"
        tail -n "${HARNESS_TAIL:-20}" "$work/$f"
    done
    exit 1
}

skip() {
    echo "SKIP: $*"
    exit 77
}

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# nonce: a random job incarnation number, never 0.
nonce() { echo $(((RANDOM << 15 | RANDOM) + 1)); }

# show FILE TAG: FILE's lines, indented and tagged.
show() { sed "s/^/    [$2] /" "$1"; }

# ---- the switch ------------------------------------------------------------

# start_switch LISTEN ARGS...: serene-switch with a port file and a control
# socket in $work, its output appended to $work/switch.log; sets swpid,
# port and ctl. Returns the switch's status (non-zero) if it exits at
# start-up; fails the test if it is not up within 10 s.
start_switch() {
    local listen=$1 bin=${SWITCH:-${SERENE_SWITCH_BIN:-}}
    shift
    [ -n "$bin" ] && [ -x "$bin" ] || fail "no serene-switch at '$bin' (set SERENE_SWITCH_BIN)"
    ctl=$work/ctl
    rm -f "$work/port" "$ctl"
    "${NSX[@]+"${NSX[@]}"}" "$bin" --listen "$listen" --port-file "$work/port" --control "$ctl" "$@" \
        >>"$work/switch.log" 2>&1 &
    swpid=$!
    for _ in $(seq 200); do
        [ -s "$work/port" ] && [ -S "$ctl" ] && break
        if ! kill -0 "$swpid" 2>/dev/null; then
            wait "$swpid"
            local rc=$?
            swpid=""
            return "$((rc == 0 ? 1 : rc))"
        fi
        sleep 0.05
    done
    if ! [ -s "$work/port" ] || ! [ -S "$ctl" ]; then
        fail "serene-switch wrote no port file or control socket in 10 s"
    fi
    port=$(cat "$work/port")
    echo "serene-switch pid $swpid on ${listen%:*}:$port: $*"
}

# stop_switch: SIGTERM (it prints its counters), SIGKILL after 5 s; reaps it.
stop_switch() {
    [ -n "$swpid" ] || return 0
    kill -TERM "$swpid" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$swpid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$swpid" 2>/dev/null; then
        echo "serene-switch ignored SIGTERM for 5 s; SIGKILL"
        kill -KILL "$swpid" 2>/dev/null
    fi
    wait "$swpid" 2>/dev/null
    swpid=""
}

# ctl_field CMD KEY: the value of KEY= in the switch's answer to CMD on its
# control socket (through `ssp_check ctl`, libserene-ctl's client).
ctl_field() {
    local ans
    ans=$("$CHECK" ctl "$ctl" "$1") || fail "control '$1': $ans"
    sed -n "s/.* $2=\\([^ ]*\\).*/\\1/p" <<<"$ans"
}

# ---- ranks and other processes --------------------------------------------

# spawn OUT [--stderr ERR] COMMAND...: COMMAND in the background, its
# output to OUT (its stderr to ERR if given); sets spawned to its PID,
# which the exit trap stops if it still runs.
spawn() {
    local out=$1
    shift
    if [ "$1" = --stderr ]; then
        local err=$2
        shift 2
        "$@" >"$out" 2>"$err" &
    else
        "$@" >"$out" 2>&1 &
    fi
    spawned=$!
    bg_pids+=("$spawned")
}

# forget_pid PID: PID was reaped; the exit trap must not signal it.
forget_pid() {
    local p keep=()
    for p in "${bg_pids[@]+"${bg_pids[@]}"}"; do
        [ "$p" = "$1" ] || keep+=("$p")
    done
    bg_pids=("${keep[@]+"${keep[@]}"}")
}

# stop_pids: SIGTERM every process spawned here that still runs (`timeout`
# passes it on to what it runs), SIGKILL what is left after 2 s; reap.
stop_pids() {
    local p alive
    for p in "${bg_pids[@]+"${bg_pids[@]}"}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for _ in $(seq 40); do
        alive=0
        for p in "${bg_pids[@]+"${bg_pids[@]}"}"; do
            kill -0 "$p" 2>/dev/null && alive=1
        done
        [ "$alive" -eq 1 ] || break
        sleep 0.05
    done
    for p in "${bg_pids[@]+"${bg_pids[@]}"}"; do
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    bg_pids=()
}

# wait_pid PID LIMIT_S: reap PID (spawned here); rc = its status, or 124
# after SIGKILL when it still ran after LIMIT_S seconds.
wait_pid() {
    for _ in $(seq $(($2 * 20))); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.05
    done
    rc=0
    if kill -0 "$1" 2>/dev/null; then
        kill -KILL "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
        rc=124
    else
        wait "$1" || rc=$?
    fi
    forget_pid "$1"
}

# wait_grep FILE REGEX LIMIT_S: until FILE has a line matching REGEX.
wait_grep() {
    for _ in $(seq $(($3 * 20))); do
        grep -Eq -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# kill_stamped PID DELAY_MS: after DELAY_MS, SIGKILL PID through
# `ssp_check kill`, which stamps it with CLOCK_MONOTONIC, the clock the
# workers stamp their errors with: sets kill_ns. Then waits until PID is
# gone. PID is disowned first, so bash neither reports the kill nor keeps
# it for `wait`; its SIGCHLD handler still reaps it.
kill_stamped() {
    disown "$1" 2>/dev/null
    "$CHECK" kill "$1" "$2" >"$work/kill.out" 2>&1 || { cat "$work/kill.out"; fail "could not kill $1"; }
    cat "$work/kill.out"
    forget_pid "$1"
    kill_ns=$(sed -n 's/^killed [0-9]* at \([0-9]*\) ns$/\1/p' "$work/kill.out")
    [ -n "$kill_ns" ] || fail "no kill time from ssp_check"
    for _ in $(seq 100); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.05
    done
    fail "pid $1 still there 5 s after SIGKILL"
}

# kill_scattered SEED GAP PID...: SIGKILL each PID (spawned here), in an
# order shuffled by SEED, with a random gap of 0..GAP-1 centiseconds (GAP
# <= 10) after each; then wait until all are gone (5 s at most, or fail).
# Disowned first, as in kill_stamped. Returns 1 with `early` set to the
# argument index (0-based) of a PID that had ended before its SIGKILL.
kill_scattered() {
    local seed=$1 gap=$2 p i
    shift 2
    local ps=("$@")
    for i in $(seq 0 $((${#ps[@]} - 1)) | shuf --random-source=<(yes "$seed")); do
        p=${ps[i]}
        kill -0 "$p" 2>/dev/null || { early=$i; return 1; }
        disown "$p" 2>/dev/null
        kill -KILL "$p"
        forget_pid "$p"
        sleep "0.0$((RANDOM % gap))"
    done
    for p in "${ps[@]}"; do
        for _ in $(seq 100); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.05
        done
        kill -0 "$p" 2>/dev/null && fail "pid $p still there 5 s after SIGKILL"
    done
    return 0
}

# hung RC: RC is what `timeout` returns when it had to stop its command.
hung() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }

# run_bounded LIMIT_S OUT COMMAND...: COMMAND under `timeout -k 5 LIMIT_S`,
# its output to OUT; sets rc and ms.
run_bounded() {
    local limit=$1 out=$2 t0
    shift 2
    t0=$(date +%s%N)
    timeout -k 5 "$limit" "$@" >"$out" 2>&1
    rc=$?
    ms=$(ms_since "$t0")
}

# ranks NAME LIMIT_S N [serene-run options] -- PROGRAM ARGS...: N ranks
# under serene-run ($RUN) against our switch; output in $work/NAME.out
# (and shown); sets rc and ms; fails unless serene-run exits 0.
ranks() {
    local name=$1 limit=$2 n=$3
    shift 3
    run_bounded "$limit" "$work/$name.out" "$RUN" -n "$n" --switch "127.0.0.1:$port" "$@"
    sed "s/^/    /" "$work/$name.out"
    echo "$name: serene-run exit $rc after $ms ms"
    hung "$rc" && fail "$name: hit its ${limit} s limit: something hangs"
    [ "$rc" -eq 0 ] || fail "$name: serene-run exited with $rc"
}
