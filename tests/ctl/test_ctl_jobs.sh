#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_ctl_jobs.sh SERENE_CTL SERENE_RUN SERENE_SWITCH AR_WORKER SSP_CHECK
#
# Jobs come and go on a running serene-switch, through its control socket
# (`job add SPEC`, `job remove JOB [force]`) and serene-ctl's `job add` and
# `job remove`:
# - the switch starts with job 1 only; an exact allreduce run of 2 ranks on
#   job 1 starts, and runs until the test has done everything below;
# - while it runs, job 2 is added with a 256 MiB store and a token; its
#   reported bytes and the switch's VmSize grow by the store at least, its
#   resident memory by less than a sixteenth of it (the pages untouched);
# - an exact allreduce run of 2 ranks on job 2 (SERENE_JOB_TOKEN) passes
#   while job 1's run is still going;
# - `job remove 1` is refused while job 1's workers are live;
# - job 2 is removed: the switch's VmSize drops by the store at least,
#   `jobs` lists job 1 only, `status 2` is an unknown job, and a run on job
#   2 fails with SERENE_ERR_NOJOB (its JOIN answered UNKNOWN_JOB);
# - job 1's run ends exact, never disturbed.
# Every wait is bounded; processes are stopped by PID (tests/common/harness.sh).
set -uo pipefail
[ $# -eq 5 ] || { echo "usage: $0 SERENE_CTL SERENE_RUN SERENE_SWITCH AR_WORKER SSP_CHECK" >&2; exit 2; }
CTL=$1 RUN=$2 SWITCH=$3 WORKER=$4 CHECK=$5
STORE=67108864 # words: 256 MiB
export SERENE_TIMEOUT_MS=10000

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init ctl-jobs
HARNESS_LOGS=(switch.log job1.out job2.out)

help=$("$SWITCH" --help)
for word in 'job add SPEC' 'job remove JOB \[force\]'; do
    grep -q -- "$word" <<<"$help" || fail "--help does not mention '$word'"
done
echo "ok: --help lists job add and job remove"

raw() { # CMD: the switch's reply line to CMD (ssp_check prints "CMD -> REPLY")
    { "$CHECK" ctl "$ctl" "$1" 2>&1 || true; } | sed 's/^.* -> //'
}
vmsize() { sed -n 's/^VmSize:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$swpid/status"; }
vmrss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$swpid/status"; }
job1_alive() { kill -0 "$job1" 2>/dev/null || fail "job 1's run ended before $1"; }

# meson's MALLOC_PERTURB_ makes glibc's calloc write every byte it returns,
# which `job add` of a large store does not otherwise do: not for the switch.
MALLOC_PERTURB_='' start_switch 127.0.0.1:0 --job 1:2:256 || fail "serene-switch exited at startup"
[ "$(raw jobs)" = "ok 1" ] || fail "jobs at start: '$(raw jobs)', expected 'ok 1'"

# Job 1 runs through everything below, however long that takes on a busy
# machine: its ranks stop together after the rep in which job1.stop
# appears (at most 2000 reps of 5 calls, minutes here).
spawn "$work/job1.out" timeout -k 5 200 "$RUN" -n 2 --job 1 --switch "127.0.0.1:$port" -- \
    "$WORKER" --elems 256 --sizes 1,255,257,1048576,256 --reps 2000 --seed 11 --until "$work/job1.stop"
job1=$spawned
for _ in $(seq 400); do
    grep -q " live=2 " <<<"$(raw "status 1")" && break
    job1_alive "its ranks joined"
    sleep 0.05
done
grep -q " live=2 " <<<"$(raw "status 1")" || fail "job 1's ranks did not join in 20 s"

# ---- add job 2 while job 1 runs --------------------------------------------
vm0=$(vmsize) rss0=$(vmrss)
t0=$(date +%s%N)
out=$("$CTL" job add --control "$ctl" "2:2:256,store=$STORE,token=5eed") ||
    fail "serene-ctl job add: exit $?, $out"
add_ms=$(ms_since "$t0")
vm1=$(vmsize) rss1=$(vmrss)
echo "ok: job add in $add_ms ms (serene-ctl included), resident memory +$((rss1 - rss0)) kB: $out"
# The store is mapped, not touched (calloc'ed pages), so the add costs the
# same whatever the store's size: far less resident than the store.
[ $((rss1 - rss0)) -lt $((STORE * 4 / 1024 / 16)) ] ||
    fail "job add of a 256 MiB store made $((rss1 - rss0)) kB resident (touched its pages)"
grep -Eq "^ok job=2 added workers=2 elems=256 .* store=$STORE .* token=set bytes=[0-9]+$" \
    <<<"$out" || fail "job add reply '$out'"
bytes=$(sed -n 's/.* bytes=\([0-9]*\)$/\1/p' <<<"$out")
[ "$bytes" -ge $((STORE * 4)) ] || fail "job 2 reports $bytes bytes, less than its store"
[ $((vm1 - vm0)) -ge $((STORE * 4 / 1024)) ] ||
    fail "VmSize grew by $((vm1 - vm0)) kB at job add, expected >= $((STORE * 4 / 1024))"
echo "ok: job 2 holds $bytes bytes; the switch's VmSize grew from $vm0 to $vm1 kB"
[ "$(raw jobs)" = "ok 1 2" ] || fail "jobs after add: '$(raw jobs)'"
out=$("$CTL" job add --control "$ctl" "2:1" 2>&1) && fail "a second job add 2 passed: $out"
grep -q "exists already" <<<"$out" || fail "second job add 2: '$out'"
out=$("$CTL" job add --control "$ctl" "3:1,ring=3" 2>&1)
[ $? -eq 2 ] && grep -q "ring '3' in '3:1,ring=3' is not a power of 2" <<<"$out" ||
    fail "bad spec: '$out'"
echo "ok: job add refuses a taken id and a bad spec"

# ---- a run on job 2, job 1 still running -----------------------------------
job1_alive "job 2's run started"
SERENE_JOB_TOKEN=5eed ranks job2 60 2 --job 2 -- \
    "$WORKER" --elems 256 --sizes 1,255,257,1048576,256 --reps 3 --seed 22
job1_alive "job 2's run ended"
st=$(raw "status 2")
grep -q " bound=2 .* live=0 " <<<"$st" || fail "job 2 after its run: '$st'"
echo "ok: job 2's run exact beside job 1's"

# ---- remove: refused while live, then job 2 freed --------------------------
out=$("$CTL" job remove --control "$ctl" --job 1 2>&1) && fail "job remove 1 passed while live"
grep -q "job 1 has 2 live workers" <<<"$out" || fail "job remove 1 while live: '$out'"
echo "ok: job remove 1 refused while its run is live: $out"
out=$("$CTL" job remove --control "$ctl" --job 2) || fail "job remove 2: $out"
vm2=$(vmsize)
grep -q "^ok job=2 removed freed=$bytes live=0$" <<<"$out" || fail "job remove 2 reply '$out'"
[ $((vm1 - vm2)) -ge $((STORE * 4 / 1024)) ] ||
    fail "VmSize dropped by $((vm1 - vm2)) kB at job remove, expected >= $((STORE * 4 / 1024))"
echo "ok: $out; VmSize from $vm1 to $vm2 kB"
[ "$(raw jobs)" = "ok 1" ] || fail "jobs after remove: '$(raw jobs)'"
[ "$(raw "status 2")" = "error unknown job 2" ] || fail "status 2 after remove: '$(raw "status 2")'"
out=$("$CTL" job remove --control "$ctl" --job 2 2>&1)
[ $? -eq 2 ] && grep -q "unknown job 2" <<<"$out" || fail "job remove 2 again: '$out'"
run_bounded 30 "$work/join2.out" env SERENE_JOB_TOKEN=5eed "$RUN" -n 1 --job 2 \
    --switch "127.0.0.1:$port" -- "$WORKER" --elems 256 --sizes 1 --reps 1
[ "$rc" -ne 0 ] && grep -q "SERENE_ERR_NOJOB" "$work/join2.out" ||
    fail "a run on removed job 2: exit $rc, $(cat "$work/join2.out")"
echo "ok: a JOIN to removed job 2 is refused: $(grep -m1 NOJOB "$work/join2.out")"

# ---- job 1 ends exact --------------------------------------------------------
job1_alive "job 2 was removed"
touch "$work/job1.stop"
wait_pid "$job1" 90
sed "s/^/    /" "$work/job1.out"
[ "$rc" -eq 0 ] || fail "job 1's run: exit $rc"
calls=$(sed -n 's/^\[0\] rank 0: \([0-9]*\) calls, .*/\1/p' "$work/job1.out")
[ -n "$calls" ] && [ "$calls" -ge 5 ] && [ $((calls % 5)) -eq 0 ] && [ "$calls" -lt 10000 ] ||
    fail "job 1's run: rank 0 made '${calls}' calls, whole reps of 5 and fewer than 2000 reps expected"
echo "ok: job 1's run ended exact after $calls calls, through job 2's add, run and remove"
