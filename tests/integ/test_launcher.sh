#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_launcher.sh SERENE_RUN LAUNCHER_CHILD [AR_WORKER] - integration test
# of serene-run.
#
# Checks the environment each rank gets, the output relay, supervision
# (failure, signals, SIGKILL escalation, --timeout, naming a rank that left
# early as the cause of a failure), command-line errors, and the embedded
# switch's start and stop. AR_WORKER (tests/integ/ar_worker.c) runs the one
# check with a real allreduce: a rank leaves and its peer times out. Every run is bounded by
# `timeout`; every failed check says what it expected and shows the run's
# output; the script exits 1 if any check failed.
#
# The embedded-switch checks use $SERENE_SWITCH_BIN, which the meson test
# sets to the real serene-switch of the build tree. Run by hand without it,
# they use a fake switch and say so. Switch failure modes (exits at once,
# never reports its port, dies mid-job, ignores SIGTERM) always use fakes:
# a real switch does not fail on demand.
set -euo pipefail

if [ $# -ne 2 ] && [ $# -ne 3 ]; then
    echo "usage: $0 SERENE_RUN LAUNCHER_CHILD [AR_WORKER]" >&2
    exit 2
fi
RUN=$1
CHILD=$2
AR_WORKER=${3:-}
EXT=127.0.0.1:9 # --switch for checks that need no switch: ranks never talk to it

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init launcher
# fail below counts and goes on: an interrupted run must still stop here.
trap 'echo "FAIL: launcher: interrupted"; exit 1' INT TERM
mkdir "$work/tmp"
export TMPDIR=$work/tmp # where serene-run makes its port-file directory
failures=0
section_start=0

# ok MESSAGE: report a section passed, if none of its checks failed.
ok() {
    if [ "$failures" -eq "$section_start" ]; then echo "ok: $*"; else echo "not ok: $*"; fi
    section_start=$failures
}

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
    if [ -n "${name:-}" ]; then
        echo "---- $name: exit $rc after ${ms} ms; stdout (tail):"
        tail -n 15 "$work/$name.out" | cut -c1-200
        echo "---- $name: stderr (tail):"
        tail -n 15 "$work/$name.err" | cut -c1-200
        echo "----"
    fi
}

# sr NAME LIMIT_S ARGS...: run serene-run; sets rc, ms, out, err.
sr() {
    name=$1
    local limit=$2 t0
    shift 2
    out=$work/$name.out
    err=$work/$name.err
    t0=$(date +%s%N)
    rc=0
    timeout -k 5 "$limit" "$RUN" "$@" >"$out" 2>"$err" </dev/null || rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
}

expect_rc() { [ "$rc" -eq "$1" ] || fail "$name: exit status $rc, expected $1"; }
# expect FILE ERE DESCRIPTION
expect() { grep -Eq -- "$2" "$1" || fail "$name: $3: no line matches /$2/ in $(basename "$1")"; }
expect_not() { ! grep -Eq -- "$2" "$1" || fail "$name: $3: a line matches /$2/ in $(basename "$1")"; }
faster_than() { [ "$ms" -lt "$1" ] || fail "$name: took $ms ms, expected < $1 ms"; }

# PIDs the child printed in its env lines.
child_pids() { sed -nE 's/^(\[[0-9]+\] )?env pid=([0-9]+) .*/\2/p' "$out"; }
expect_gone() {
    local pid
    for pid in "$@"; do
        ! kill -0 "$pid" 2>/dev/null || fail "$name: process $pid is still running"
    done
}
children_gone() { # every rank that printed its env line
    local pids
    mapfile -t pids < <(child_pids)
    expect_gone "${pids[@]}"
}
fake_pid() { sed -nE 's/^\[switch\] fake pid ([0-9]+)$/\1/p' "$err"; }
switch_pid() { sed -nE 's/^serene-run: serene-switch \(pid ([0-9]+)\) listening on .*/\1/p' "$err"; }
switch_addr() { sed -nE 's/^serene-run: serene-switch \(pid [0-9]+\) listening on (.*)$/\1/p' "$err"; }
udp_bound() { awk -v p=":$(printf '%04X' "$1")" 'NR > 1 && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' /proc/net/udp; }
tmp_empty() { [ -z "$(ls -A "$work/tmp")" ] || fail "$name: left in TMPDIR: $(ls -A "$work/tmp")"; }
# Every stderr line is ours, a rank's, or the switch's.
stderr_tagged() {
    if grep -Evq '^(serene-run: |\[[0-9]+\] |\[switch\] )' "$err"; then
        fail "$name: untagged stderr line: $(grep -Ev '^(serene-run: |\[[0-9]+\] |\[switch\] )' "$err" | head -n 1)"
    fi
}

# ---- A fake serene-switch with the real CLI, for the failure modes --------
fake=$work/fake-switch
cat >"$fake" <<'EOF'
#!/usr/bin/env bash
# --listen ADDR --port-file FILE --job SPEC [extra...]; FAKE_MODE picks a failure.
[ -z "${FAKE_ARGS:-}" ] || printf '%s\n' "$@" >"$FAKE_ARGS"
[ -z "${FAKE_ARGS:-}" ] || printf '%s\n' "${SERENE_JOB_TOKEN:-unset}" >"$FAKE_ARGS.token"
echo "fake pid $$"
# Deaf to SIGTERM before the port file says it is up: serene-run may stop
# it as soon as the ranks are done, which a busy machine makes early.
[ "${FAKE_MODE:-ok}" != stubborn ] || trap '' TERM
while [ $# -gt 0 ]; do
    case $1 in --port-file) pf=$2; shift ;; esac
    shift
done
case ${FAKE_MODE:-ok} in
exit) echo "fake: bad job" >&2; exit 3 ;;
silent) exec sleep 100 ;;
esac
echo 4321 >"$pf.tmp" && mv "$pf.tmp" "$pf" # the real switch's atomic write
echo "fake listening on 127.0.0.1:4321" >&2
case ${FAKE_MODE:-ok} in
dies) sleep 0.3; exit 0 ;;
stubborn) exec sleep 100 ;; # SIG_IGN (set above) survives exec
*) exec sleep 100 ;;
esac
EOF
chmod +x "$fake"

if [ -n "${SERENE_SWITCH_BIN:-}" ]; then
    [ -x "$SERENE_SWITCH_BIN" ] || { echo "FAIL: SERENE_SWITCH_BIN=$SERENE_SWITCH_BIN is not executable"; exit 1; }
    real_switch=1
    echo "embedded-switch checks use $SERENE_SWITCH_BIN"
else
    real_switch=0
    export SERENE_SWITCH_BIN=$fake
    echo "NOTE: SERENE_SWITCH_BIN is not set; embedded-switch checks use a fake serene-switch"
fi

# ---- Environment, nonce, embedded switch lifecycle -----------------------
name="env"
out=$work/$name.out err=$work/$name.err rc=0 ms=0
t0=$(date +%s%N)
spawn "$out" --stderr "$err" "$RUN" -n 4 --job 7 -- "$CHILD" --sleep-rank 0 --ms 1500
bg=$spawned
# Bounded by time, not tries: a loaded machine starts the switch slowly.
# serene-run's own line, not the switch's "[switch] ... listening on",
# which serene-run may copy out before it writes its own.
end=$((SECONDS + 30))
until [ -n "$(switch_pid)" ] || [ $SECONDS -ge $end ]; do sleep 0.1; done
sw=$(switch_pid)
port=$(switch_addr | sed 's/.*://')
if [ -z "$sw" ]; then
    fail "$name: no 'serene-switch (pid P) listening on ADDR' line within 30 s"
else
    kill -0 "$sw" 2>/dev/null || fail "$name: switch $sw is not running while ranks run"
    if [ "$real_switch" = 1 ]; then
        udp_bound "$port" || fail "$name: nothing bound to UDP port $port while the job runs"
    fi
fi
wait_pid "$bg" 15
[ "$rc" -ne 124 ] || fail "$name: serene-run still running after 15 s"
ms=$((($(date +%s%N) - t0) / 1000000))
expect_rc 0
for r in 0 1 2 3; do
    expect "$out" "^\[$r\] env pid=[0-9]+ SERENE_RANK=$r SERENE_LOCAL_RANK=$r SERENE_WORLD_SIZE=4 SERENE_JOB=7 SERENE_JOB_NONCE=[1-9][0-9]* SERENE_SWITCH=127\.0\.0\.1:[0-9]+$" "rank $r's environment"
    expect "$err" "^\[$r\] stderr of rank $r$" "rank $r's stderr line"
done
nonces=$(sed -nE 's/.* SERENE_JOB_NONCE=([0-9]+) .*/\1/p' "$out" | sort -u)
[ "$(echo "$nonces" | wc -l)" -eq 1 ] || fail "$name: ranks got different nonces: $nonces"
addrs=$(sed -nE 's/.* SERENE_SWITCH=([^ ]+)$/\1/p' "$out" | sort -u)
if [ -z "$sw" ] || [ "$addrs" != "$(switch_addr)" ]; then
    fail "$name: ranks' SERENE_SWITCH ($addrs) is not the switch's address ($(switch_addr))"
fi
expect "$err" '^serene-run: 4 ranks finished in [0-9]+\.[0-9]{2} s$' "summary line"
expect_not "$err" 'left first' "ranks 1-3 ended early, but the job succeeded"
stderr_tagged
[ "$real_switch" = 1 ] || expect "$err" '^\[switch\] fake listening on 127\.0\.0\.1:4321$' "switch stderr prefixed"
if [ -n "$sw" ]; then expect_gone "$sw"; fi
if [ "$real_switch" = 1 ] && [ -n "$port" ] && udp_bound "$port"; then
    fail "$name: UDP port $port still bound after serene-run exited"
fi
tmp_empty
first_nonce=$nonces
sr env2 20 -n 2 -- "$CHILD"
expect_rc 0
second_nonce=$(sed -nE 's/.* SERENE_JOB_NONCE=([0-9]+) .*/\1/p' "$out" | sort -u)
[ "$first_nonce" != "$second_nonce" ] || fail "$name: two launches got the same nonce $first_nonce"
expect_gone "$(switch_pid)"
ok "environment, nonce, embedded switch ($([ "$real_switch" = 1 ] && echo real || echo fake))"

# ---- Output relay ---------------------------------------------------------
sr prefix 30 -n 3 --switch $EXT -- "$CHILD" --lines 500 --partial --long 150000 -- a 'b c'
expect_rc 0
for r in 0 1 2; do
    n=$(grep -Ec "^\[$r\] line [0-9]+ of rank $r$" "$out" || true)
    [ "$n" -eq 500 ] || fail "$name: rank $r: $n of 500 stdout lines arrived"
    seqs=$(sed -nE "s/^\[$r\] line ([0-9]+) of rank $r$/\1/p" "$out" | tr '\n' ' ')
    [ "$seqs" = "$(seq -s ' ' 0 499) " ] || fail "$name: rank $r's lines are out of order"
    expect "$out" "^\[$r\] partial $r$" "rank $r's last line without newline"
    expect "$out" "^\[$r\] args <a>\|<b c>$" "rank $r's arguments"
    expect "$err" "^\[$r\] stderr of rank $r$" "rank $r's stderr prefixed"
    xs=$(grep -E "^\[$r\] x+$" "$out" | awk '{ n += length($2); if (length($2) > 65536) big = 1 } END { print n + 0, NR, big + 0 }' || true)
    [ "$xs" = "150000 3 0" ] || fail "$name: rank $r's 150000-byte line came as (bytes, pieces, oversize) = ($xs), expected (150000 3 0)"
done
expect_not "$out" 'stderr of' "stderr kept off stdout"
if grep -Evq '^\[[0-2]\] ' "$out"; then fail "$name: unprefixed stdout line"; fi
stderr_tagged
ok "output prefixing, ordering, partial and long lines"

sr noprefix 20 -n 2 --switch $EXT --no-prefix -- "$CHILD" --lines 2
expect_rc 0
expect "$out" '^env pid=[0-9]+ SERENE_RANK=1 ' "unprefixed env line"
expect "$out" '^line 1 of rank 0$' "unprefixed line"
expect_not "$out" '^\[' "no prefix on stdout"
expect "$err" '^stderr of rank 1$' "unprefixed stderr"
ok "--no-prefix"

# ---- Supervision ------------------------------------------------------------
sr fail 30 -n 4 --switch $EXT -- "$CHILD" --fail-rank 2 --fail-after 300 --code 3 --sleep-rank -1
expect_rc 3
expect "$err" '^serene-run: rank 2 exited with status 3$' "failure report"
expect "$err" '^serene-run: 4 ranks finished in .* \(exit status 3\)$' "summary line"
expect_not "$err" 'left first' "the first rank to end is the failure itself"
faster_than 2500
[ "$(child_pids | wc -l)" -eq 4 ] || fail "$name: expected 4 env lines"
children_gone
ok "failing rank stops the others (${ms} ms)"

sr signal 30 -n 2 --switch $EXT -- "$CHILD" --fail-rank 1 --fail-after 200 --signal 9 --sleep-rank -1
expect_rc 137
expect "$err" '^serene-run: rank 1 killed by signal SIGKILL$' "signal report"
faster_than 2500
children_gone
ok "rank killed by a signal"

sr escalate 30 -n 3 --switch $EXT -- "$CHILD" --fail-rank 0 --fail-after 500 --code 5 --sleep-rank -1 --ignore-term
expect_rc 5
expect "$err" '^serene-run: rank [12] \(pid [0-9]+\) still running [0-9]+ ms after SIGTERM; sending SIGKILL$' "SIGKILL escalation"
[ "$ms" -ge 3000 ] || fail "$name: took $ms ms: SIGKILL came before the 3 s grace"
faster_than 8000
children_gone
ok "SIGKILL after the grace period (${ms} ms)"

sr timeout 30 -n 2 --switch $EXT --timeout 1 -- "$CHILD" --sleep-rank -1
expect_rc 124
expect "$err" '^serene-run: timeout of 1 s exceeded; stopping the job$' "timeout message"
expect_not "$err" 'left first' "no rank ended before the timeout"
faster_than 2900
children_gone
ok "--timeout (${ms} ms)"

# A rank that returns early (status 0) leaves its peers waiting; the first
# of them to give up is the failure, but the rank that left is the cause.
sr leave 30 -n 3 --switch $EXT -- "$CHILD" --leave-rank 1 --fail-rank 0 --fail-after 500 --code 3 --sleep-rank -1
expect_rc 3
expect "$err" '^serene-run: rank 0 exited with status 3$' "failure report"
expect "$err" '^serene-run: rank 1 left first: it exited with status 0 after [0-9]+\.[0-9]{2} s while ranks 0,2 were still running, the likely cause of the failure; then rank 0 exited with status 3 after [0-9]+\.[0-9]{2} s, 1 rank stopped by serene-run$' "rank 1 named as the cause"
expect "$err" '^serene-run: 3 ranks finished in .* \(exit status 3\)$' "summary line"
children_gone
sr leave-timeout 30 -n 3 --switch $EXT --timeout 1 -- "$CHILD" --leave-rank 2 --sleep-rank -1
expect_rc 124
expect "$err" '^serene-run: rank 2 left first: it exited with status 0 after [0-9]+\.[0-9]{2} s while ranks 0,1 were still running, the likely cause of the failure; then 2 ranks stopped by serene-run$' "rank 2 named when --timeout ends the job"
children_gone
if [ -n "$AR_WORKER" ] && [ "$real_switch" = 1 ]; then
    # The real thing: rank 1 exits 0 before joining; rank 0's allreduce
    # times out after SERENE_TIMEOUT_MS and it exits 3 (ar_worker's
    # --expect-timeout status).
    SERENE_TIMEOUT_MS=2000 sr leave-allreduce 30 -n 2 -- "$AR_WORKER" --elems 256 --sizes 1000 --absent-rank 1 --expect-timeout
    expect_rc 3
    expect "$out" '^\[0\] rank 0: allreduce returned SERENE_ERR_TIMEOUT after [0-9]+ ms \(deadline 2000 ms\): as expected$' "rank 0 timed out"
    expect "$err" '^serene-run: rank 0 exited with status 3$' "failure report"
    expect "$err" '^serene-run: rank 1 left first: it exited with status 0 after [0-9]+\.[0-9]{2} s while rank 0 was still running, the likely cause of the failure; then rank 0 exited with status 3 after [0-9]+\.[0-9]{2} s$' "rank 1 named as the cause"
    faster_than 10000
    ok "a rank that left early is named as the cause (allreduce timeout, ${ms} ms)"
else
    ok "a rank that left early is named as the cause (allreduce case skipped: no AR_WORKER or real switch)"
fi

# serene-run's own SIGTERM/SIGINT, with the embedded switch running.
launcher_signal() { # NAME SIGNAL WANT
    name=$1
    out=$work/$name.out err=$work/$name.err rc=0 ms=0
    local t0 pre=()
    # Background jobs of a script start with SIGINT ignored; give it back.
    if [ "$2" = INT ]; then pre=(env --default-signal=INT); fi
    spawn "$out" --stderr "$err" "${pre[@]}" "$RUN" -n 3 -- "$CHILD" --sleep-rank -1
    local bg=$spawned
    local end=$((SECONDS + 30))
    until [ "$(child_pids | wc -l)" -eq 3 ] || [ $SECONDS -ge $end ]; do sleep 0.1; done
    t0=$(date +%s%N)
    kill -"$2" "$bg"
    wait_pid "$bg" 5
    [ "$rc" -ne 124 ] || fail "$name: serene-run still running 5 s after SIG$2"
    ms=$((($(date +%s%N) - t0) / 1000000))
    faster_than 2500 # ranks and switch die of SIGTERM: no 3 s SIGKILL grace
    expect_rc "$3"
    expect "$err" "^serene-run: got SIG$2; stopping the job$" "signal noticed"
    children_gone
    expect_gone "$(switch_pid)"
    [ -n "$(switch_pid)" ] || fail "$name: no switch started"
    tmp_empty
}
launcher_signal sigterm TERM 143
if env --default-signal=INT true 2>/dev/null; then
    launcher_signal sigint INT 130
    ok "SIGTERM and SIGINT to serene-run stop ranks and switch"
else
    ok "SIGTERM to serene-run stops ranks and switch (SIGINT skipped: env lacks --default-signal)"
fi

# ---- Programs that cannot run ---------------------------------------------
sr noent 20 -n 3 -- /nonexistent/program
expect_rc 127
expect "$err" '^serene-run: cannot execute /nonexistent/program: No such file or directory$' "ENOENT message"
expect_gone "$(switch_pid)"
tmp_empty
sr noent-path 20 -n 2 --switch $EXT -- serene-no-such-program-here
expect_rc 127
expect "$err" '^serene-run: cannot execute serene-no-such-program-here: No such file or directory$' "PATH lookup"
printf '#!/bin/sh\n' >"$work/not-exec"
chmod -x "$work/not-exec"
sr noexec 20 -n 2 --switch $EXT -- "$work/not-exec"
expect_rc 126
expect "$err" 'cannot execute .*/not-exec: Permission denied$' "EACCES message"
ok "missing program 127, not executable 126"

# ---- Command-line errors --------------------------------------------------
bad() { # EXPECTED-MESSAGE-ERE ARGS...
    local want=$1
    shift
    sr usage 10 "$@"
    expect_rc 2
    expect "$err" "^serene-run: $want" "message for: $*"
    expect "$err" '^usage: serene-run -n N ' "usage line for: $*"
}
bad '-n N is required' "$CHILD"
bad "-n: '0' is not a number in 1\.\.64" -n 0 "$CHILD"
bad "-n: '65' is not a number in 1\.\.64" -n 65 "$CHILD"
bad "-n: 'x' is not a number" -n x "$CHILD"
bad "option '-n' needs an argument" -n
bad "--job: '65536' is not a number in 0\.\.65535" -n 1 --job 65536 "$CHILD"
bad "unknown option '--bogus'" -n 1 --bogus "$CHILD"
bad "unknown option '-x'" -n 1 -x "$CHILD"
bad 'missing PROGRAM' -n 2
bad 'missing PROGRAM' -n 2 --
bad "--switch: 'nocolon' is not HOST:PORT" -n 1 --switch nocolon "$CHILD"
bad "--switch: 'host:0' is not HOST:PORT" -n 1 --switch host:0 "$CHILD"
bad "--switch: ':48200' is not HOST:PORT" -n 1 --switch :48200 "$CHILD"
bad "--switch: 'h:70000' is not HOST:PORT" -n 1 --switch h:70000 "$CHILD"
bad "--switch: 'h:\+5' is not HOST:PORT" -n 1 --switch h:+5 "$CHILD"
bad "--switch: 'h: 5' is not HOST:PORT" -n 1 --switch 'h: 5' "$CHILD"
bad "-n: '\+2' is not a number" -n +2 "$CHILD"
bad "--timeout: '-1' is not a number of seconds" -n 1 --timeout -1 "$CHILD"
bad "--elems: '0' is not a number" -n 1 --elems 0 "$CHILD"
bad '--switch-arg, --elems, --slots and --store configure the embedded switch' -n 1 --switch h:1 --switch-arg x "$CHILD"
bad '--store: .999999999. is not a number in 0..268435456' -n 1 --store 999999999 "$CHILD"
sr help 10 --help
expect_rc 0
expect "$out" '^usage: serene-run -n N ' "--help usage"
# PROGRAM's own options are not serene-run's.
sr progopts 20 -n 1 --switch $EXT "$CHILD" -- -n --bogus
expect_rc 0
expect "$out" '^\[0\] args <-n>\|<--bogus>$' "PROGRAM's options passed through"
ok "command-line errors exit 2 with a message and the usage line"

# ---- Switch CLI and failure modes (fake switches) -------------------------
FAKE_ARGS=$work/args SERENE_SWITCH_BIN=$fake sr swargs 20 -n 3 --job 5 --elems 512 --slots 64 \
    --switch-arg --extra1 --switch-arg 'x y' -- "$CHILD"
expect_rc 0
want=$(printf '%s\n' --listen 127.0.0.1:0 --port-file "$work/tmp/serene-run.XXXXXX/port" --job 5:3:512:64,token=env:SERENE_JOB_TOKEN --extra1 'x y')
got=$(sed -E 's/serene-run\.[A-Za-z0-9]{6}/serene-run.XXXXXX/' "$work/args")
[ "$got" = "$want" ] || fail "$name: switch argv is [$(tr '\n' ' ' <<<"$got")], expected [$(tr '\n' ' ' <<<"$want")]"
expect "$out" 'SERENE_SWITCH=127\.0\.0\.1:4321$' "ranks get the reported port"
expect "$err" '^\[switch\] fake pid [0-9]+$' "switch stdout relayed with prefix"
expect_not "$out" 'fake' "switch output kept off stdout"
# The admission token: 16 hex digits in the switch's environment (not its
# argv), the same in every rank's, and fresh per launch.
tok1=$(cat "$work/args.token")
[[ $tok1 =~ ^[0-9a-f]{16}$ ]] || fail "$name: the switch's SERENE_JOB_TOKEN is '$tok1', not 16 hex digits"
grep -q "$tok1" "$work/args" && fail "$name: the token is on the switch's command line"
rtok=$(sed -nE 's/^\[[0-9]+\] token SERENE_JOB_TOKEN=(.*)$/\1/p' "$out" | sort -u)
[ "$rtok" = "$tok1" ] || fail "$name: ranks' SERENE_JOB_TOKEN ($rtok) is not the switch's ($tok1)"
FAKE_ARGS=$work/args SERENE_SWITCH_BIN=$fake sr swargs2 20 -n 2 --slots 64 -- "$CHILD"
grep -qx '0:2:256:64,token=env:SERENE_JOB_TOKEN' "$work/args" || fail "$name: --slots alone gives job $(grep : "$work/args" | tail -n 1), expected 0:2:256:64,token=env:SERENE_JOB_TOKEN"
[ "$(cat "$work/args.token")" != "$tok1" ] || fail "$name: two launches got the same token $tok1"
FAKE_ARGS=$work/args SERENE_SWITCH_BIN=$fake sr swargs3 20 -n 2 -- "$CHILD"
grep -qx '0:2,token=env:SERENE_JOB_TOKEN' "$work/args" || fail "$name: plain job spec is not 0:2,token=env:SERENE_JOB_TOKEN"
ok "switch command line"

FAKE_MODE=exit SERENE_SWITCH_BIN=$fake sr swexit 20 -n 2 -- "$CHILD"
expect_rc 1
expect "$err" '^serene-run: switch \(pid [0-9]+\) exited with status 3 before reporting its port$' "switch exit report"
expect "$err" '^\[switch\] fake: bad job$' "switch stderr prefixed"
expect_not "$out" 'env pid=' "no rank started"
tmp_empty

FAKE_MODE=silent SERENE_SWITCH_BIN=$fake sr swsilent 30 -n 2 -- "$CHILD"
expect_rc 1
expect "$err" '^serene-run: switch \(pid [0-9]+\) did not report its port within 10 s$' "startup timeout"
if [ "$ms" -lt 10000 ] || [ "$ms" -ge 15000 ]; then fail "$name: gave up after $ms ms, expected 10 s"; fi
expect_gone "$(fake_pid)"
tmp_empty

FAKE_MODE=dies SERENE_SWITCH_BIN=$fake sr swdies 20 -n 2 -- "$CHILD" --sleep-rank -1 --ms 1500
expect_rc 0
expect "$err" '^serene-run: switch \(pid [0-9]+\) exited with status 0 while ranks were running; they will time out$' "switch death reported"
[ "$ms" -ge 1400 ] || fail "$name: ranks were not supervised to their end ($ms ms)"

FAKE_MODE=stubborn SERENE_SWITCH_BIN=$fake sr swstubborn 20 -n 1 -- "$CHILD"
expect_rc 0
expect "$err" '^serene-run: switch \(pid [0-9]+\) still running [0-9]+ ms after SIGTERM; sending SIGKILL$' "switch SIGKILL"
expect_gone "$(fake_pid)"

SERENE_SWITCH_BIN=$work/not-exec sr swbad 20 -n 1 -- "$CHILD"
expect_rc 1
expect "$err" "^serene-run: SERENE_SWITCH_BIN=.*/not-exec is not an executable file$" "bad SERENE_SWITCH_BIN"
ok "switch failure modes"

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all launcher checks passed"
