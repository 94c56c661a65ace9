#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_faults.sh CASE FAULT_WORKER SERENE_RUN SSP_CHECK - fault tests
# against a real serene-switch ($SERENE_SWITCH_BIN) and real fault_worker
# processes (fault_worker.c says what each mode checks).
# SSP_CHECK provides `kill PID MS` (a SIGKILL stamped with CLOCK_MONOTONIC,
# the clock the workers stamp their errors with) and `ctl SOCKET CMD`.
#
#   worker-killed-allreduce
#       3 ranks allreduce 20000 values in a loop (SERENE_TIMEOUT_MS=2000);
#       rank 2 is SIGKILLed mid-run. Ranks 0 and 1 must get
#       SERENE_ERR_TIMEOUT from their pending call after the kill and within
#       the deadline + 1 s of it, and SERENE_ERR_BROKEN from the next call.
#   worker-killed-asp
#       A job under ASP with ring 8: 3 ranks push and clock 5 times, rank 2
#       is SIGKILLed, then ranks 0 and 1 go on: 6 clocks (ring - 2) without
#       a hold, with exact pulls showing the dead rank's word stuck, then
#       the clock at the ring bound is held until its deadline
#       (SERENE_ERR_TIMEOUT) and they end cleanly (exit 0). The switch's
#       control socket shows low stuck at 4 and high at 11.
#   switch-restart
#       2 ranks run allreduce / push / clock / pull rounds (rank 1 with every
#       op of a round started at once); the switch is SIGKILLed and a new
#       one started on the same port at once. Every pending op must return
#       an error after the kill and within the deadline + 1 s of it (the
#       old incarnation's packets reach the new switch and are dropped, not
#       answered); then both ranks join the restarted switch with a new
#       SERENE_JOB_NONCE and run exact rounds.
#   switch-crash
#       A crash of the switch leaves its stack in its log: SIGSEGV sent to
#       a running serene-switch must end it by that signal (status 139),
#       after "serene-switch: fatal signal, stack:" and at least 2 frames
#       on its stderr (skipped where it was built with a sanitizer, which
#       keeps its own report).
#   netem
#       The faults of a netem qdisc, without sch_netem: bench/fabric_net.sh's
#       rack of 3 host namespaces, each with a veth link to the switch's
#       namespace (10.77.x.y addresses inside them only), and on every link,
#       both ways, 10% loss, 10% duplication and a 1-5 ms delay that
#       reorders (fabric_nfq over NFQUEUE, seeded); serene-switch in the
#       switch's namespace, one fault_worker rank (mode exact: every
#       allreduce and every pull exact) in each host's. Every call must end
#       within its deadline, every rank must have resent, and fabric_nfq
#       must have dropped, duplicated and reordered. Without root, ip, tc,
#       iptables or fabric_nfq (Debian libnetfilter-queue-dev) it prints
#       "SKIP: ..." and exits 77. FAULTS_NETEM_DRYRUN=1 runs it on
#       unimpaired links (the plumbing only; it proves nothing about faults).
#
# Every wait is bounded; processes are stopped by PID; namespaces, veths
# and the temporary directory are removed on every exit. A failure prints
# "FAIL: ..." and exits 1.
set -uo pipefail

if [ $# -ne 4 ]; then
    echo "usage: $0 worker-killed-allreduce|worker-killed-asp|switch-restart|netem" \
        "FAULT_WORKER SERENE_RUN SSP_CHECK" >&2
    exit 2
fi
# shellcheck disable=SC2034 # RUN: no case starts ranks through serene-run now
CASE=$1 WORKER=$2 RUN=$3 CHECK=$4

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init "$CASE"
HARNESS_TAIL=12
start=$(date +%s%N)
pids=() # the ranks of the running case, by rank
fabric=0 # the netem case's rack is up (bench/fabric_net.sh): on_cleanup removes it
read -r main_pid _ </proc/self/stat
NSX=()   # command prefix that runs the switch inside a namespace (netem case)

# shellcheck disable=SC2317 # run by the exit trap, once every process is stopped
on_cleanup() {
    local me
    read -r me _ </proc/self/stat # not in a child that ran the trap before its exec
    [ "$fabric" = 1 ] && [ "$me" = "$main_pid" ] && fab_down
}

# check_after_kill FILE RANK DEADLINE_MS: every "returned NAME at T ns" of
# FILE came after the kill and within DEADLINE_MS + 1 s of it, none OK.
check_after_kill() {
    local f=$1 r=$2 deadline=$3 t bad=0 first="" last=""
    while read -r t; do
        [ -z "$first" ] && first=$t
        last=$t
        if [ "$t" -le "$kill_ns" ]; then
            echo "FAIL: rank $r: a call failed $(((kill_ns - t) / 1000000)) ms before the kill"
            bad=1
        elif [ $(((t - kill_ns) / 1000000)) -gt $((deadline + 1000)) ]; then
            echo "FAIL: rank $r: a pending call returned $(((t - kill_ns) / 1000000)) ms after the kill, past the ${deadline} ms deadline + 1 s"
            bad=1
        fi
    done < <(sed -n 's/.* returned [A-Z_]* at \([0-9]*\) ns after.*/\1/p' "$f")
    if [ -z "$first" ]; then
        echo "FAIL: rank $r reported no failed call"
        return 1
    fi
    if grep -q ' returned SERENE_OK at ' "$f"; then
        echo "FAIL: rank $r: an op succeeded after the kill"
        bad=1
    fi
    [ "$bad" -eq 0 ] && echo "rank $r: pending calls ended $(((first - kill_ns) / 1000000))..$(((last - kill_ns) / 1000000)) ms after the kill (deadline $deadline ms)"
    return "$bad"
}

# ---- worker-killed-allreduce ------------------------------------------------

case_worker_killed_allreduce() {
    local n=3 victim=2 deadline=2000 r bad=0
    start_switch 127.0.0.1:0 --job 0:$n || fail "serene-switch did not start"
    export SERENE_TIMEOUT_MS=$deadline SERENE_WORLD_SIZE=$n SERENE_JOB=0
    export SERENE_SWITCH=127.0.0.1:$port SERENE_JOB_NONCE
    SERENE_JOB_NONCE=$(nonce)
    for r in $(seq 0 $((n - 1))); do
        spawn "$work/rank$r.out" env SERENE_RANK="$r" "$WORKER" ar-loop --count 20000
        pids[r]=$spawned
    done
    for r in $(seq 0 $((n - 1))); do
        wait_grep "$work/rank$r.out" "^rank $r: call 3 ok" 20 || {
            show "$work/rank$r.out" "$r"
            fail "rank $r did not complete 3 allreduces in 20 s"
        }
    done
    kill_stamped "${pids[victim]}" 0
    echo "rank $victim (pid ${pids[victim]}) killed mid-run"
    for r in 0 1; do
        wait_pid "${pids[r]}" $((deadline / 1000 + 10))
        show "$work/rank$r.out" "$r"
        if [ "$rc" -ne 3 ]; then
            echo "FAIL: rank $r exited with $rc, want 3 (SERENE_ERR_TIMEOUT within its deadline, then SERENE_ERR_BROKEN)"
            bad=1
        elif ! grep -q "returned SERENE_ERR_TIMEOUT at" "$work/rank$r.out" ||
            ! grep -q "the next call returned SERENE_ERR_BROKEN" "$work/rank$r.out"; then
            echo "FAIL: rank $r: no TIMEOUT then BROKEN in its output"
            bad=1
        else
            check_after_kill "$work/rank$r.out" "$r" "$deadline" || bad=1
        fi
    done
    pids=()
    [ "$bad" -eq 0 ] || fail "the survivors of a killed rank did not fail as documented"
}

# ---- worker-killed-asp --------------------------------------------------------

case_worker_killed_asp() {
    local n=3 victim=2 k=5 ring=8 deadline=2000 r bad=0 low high
    start_switch 127.0.0.1:0 --job "0:$n,store=64,ring=$ring,policy=asp" || fail "serene-switch did not start"
    export SERENE_TIMEOUT_MS=$deadline SERENE_WORLD_SIZE=$n SERENE_JOB=0
    export SERENE_SWITCH=127.0.0.1:$port SERENE_JOB_NONCE
    SERENE_JOB_NONCE=$(nonce)
    for r in $(seq 0 $((n - 1))); do
        spawn "$work/rank$r.out" env SERENE_RANK="$r" "$WORKER" asp --before $k --ring $ring \
            --go-file "$work/go" --victim $victim
        pids[r]=$spawned
    done
    for r in $(seq 0 $((n - 1))); do
        wait_grep "$work/rank$r.out" "^rank $r: $k clocks done" 20 || {
            show "$work/rank$r.out" "$r"
            fail "rank $r did not finish $k clocks in 20 s"
        }
    done
    kill_stamped "${pids[victim]}" 0
    low=$(ctl_field "status 0" low)
    high=$(ctl_field "status 0" high)
    echo "rank $victim killed after $k clocks; the switch: low=$low high=$high"
    if [ "$low" != $((k - 1)) ] || [ "$high" != $((k - 1)) ]; then
        fail "before the survivors go on: low=$low high=$high, want $((k - 1)) and $((k - 1))"
    fi
    touch "$work/go"
    for r in 0 1; do
        wait_pid "${pids[r]}" $((deadline / 1000 + 15))
        show "$work/rank$r.out" "$r"
        if [ "$rc" -ne 0 ]; then
            echo "FAIL: rank $r exited with $rc, want 0"
            bad=1
        fi
    done
    pids=()
    [ "$bad" -eq 0 ] || fail "the survivors under ASP did not go on as documented"
    low=$(ctl_field "status 0" low)
    high=$(ctl_field "status 0" high)
    echo "after: low=$low (the dead rank's last clock) high=$high (the clock held at the ring bound)"
    if [ "$low" != $((k - 1)) ] || [ "$high" != $((k + ring - 2)) ]; then
        fail "after: low=$low high=$high, want $((k - 1)) and $((k + ring - 2))"
    fi
}

# ---- switch-restart ---------------------------------------------------------------

case_switch_restart() {
    local n=2 deadline=2000 r bad=0 n1 n2
    start_switch 127.0.0.1:0 --job "0:$n,store=1024" || fail "serene-switch did not start"
    n1=$(nonce)
    n2=$(((n1 + 7919) % 4294967295 + 1))
    export SERENE_TIMEOUT_MS=$deadline SERENE_WORLD_SIZE=$n SERENE_JOB=0
    export SERENE_SWITCH=127.0.0.1:$port SERENE_JOB_NONCE=$n1
    for r in 0 1; do
        local nb=()
        [ "$r" -eq 1 ] && nb=(--nonblocking)
        spawn "$work/rank$r.out" env SERENE_RANK="$r" "$WORKER" restart --go-file "$work/go" \
            --new-nonce "$n2" --sizes 20000 --words 300 "${nb[@]+"${nb[@]}"}"
        pids[r]=$spawned
    done
    for r in 0 1; do
        wait_grep "$work/rank$r.out" "^rank $r: round 3 ok" 20 || {
            show "$work/rank$r.out" "$r"
            fail "rank $r did not complete 3 rounds in 20 s"
        }
    done
    kill_t0=$(date +%s%N)
    kill_stamped "$swpid" 0
    swpid=""
    # At once on the same port: the ranks' retransmissions reach the new
    # switch, which does not know them. The port may take a moment to free.
    for _ in $(seq 20); do
        start_switch "127.0.0.1:$port" --job "0:$n,store=1024" && break
        sleep 0.1
    done
    [ -n "$swpid" ] || fail "could not start serene-switch again on port $port"
    echo "restarted $(ms_since "$kill_t0") ms after the kill"
    for r in 0 1; do
        wait_grep "$work/rank$r.out" "^rank $r: phase 1 ended" $((deadline / 1000 + 10)) || {
            show "$work/rank$r.out" "$r"
            fail "rank $r: its pending calls did not end within the deadline + 10 s of the kill"
        }
    done
    touch "$work/go"
    for r in 0 1; do
        wait_pid "${pids[r]}" 30
        show "$work/rank$r.out" "$r"
        if [ "$rc" -ne 0 ]; then
            echo "FAIL: rank $r exited with $rc, want 0"
            bad=1
        fi
        check_after_kill "$work/rank$r.out" "$r" "$deadline" || bad=1
    done
    pids=()
    [ "$bad" -eq 0 ] || fail "the pending calls or the new incarnation failed"
    if [ "$(ctl_field "status 0" nonce)" != "$n2" ] || [ "$(ctl_field "status 0" bound)" != 2 ]; then
        fail "the restarted switch does not show the new incarnation: $("$CHECK" ctl "$ctl" status 0)"
    fi
    stop_switch
    grep -E "^serene-switch: job=0 " "$work/switch.log" | sed 's/^/    /'
    grep -Eq "^serene-switch: job=0 .* nonce=$n2 .* resets=1 " "$work/switch.log" ||
        fail "the restarted switch's counters do not show one new incarnation"
    # The old incarnation's retransmissions reached the new switch, which
    # dropped them unanswered: that is why the pending calls timed out.
    grep -Eq "^serene-switch: job=0 .* nonce=$n2 .* dropped_unbound=[1-9]" "$work/switch.log" ||
        fail "the restarted switch dropped nothing from the old incarnation: did its packets reach it?"
}

# ---- netem (on the fabric) ------------------------------------------------------

case_netem() {
    local r rc_run bad=0 worst dl nfq stats seed=7 n=3
    [ "$(id -u)" -eq 0 ] || skip "netem case: needs root (network namespaces, tc, iptables)"
    if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
        skip "netem case: no ip or tc (Debian: iproute2)"
    fi
    nfq=${FABRIC_NFQ:-$(dirname "${SERENE_SWITCH_BIN:-.}")/../../bench/fabric_nfq}
    [ -x "$nfq" ] || skip "netem case: no fabric_nfq at $nfq (Debian libnetfilter-queue-dev, then rebuild)"
    command -v iptables >/dev/null || skip "netem case: no iptables (Debian: iptables)"
    # shellcheck source=../../bench/fabric_net.sh
    . "$(dirname "$0")/../../bench/fabric_net.sh"
    fab_init "srft$$" "$work"
    fabric=1
    fab_up $n 1500 sw || fail "cannot make the rack (namespaces, veth links)"
    if [ "${FAULTS_NETEM_DRYRUN:-0}" = 1 ]; then
        echo "DRY RUN (FAULTS_NETEM_DRYRUN=1): unimpaired links; this run checks the plumbing only"
    else
        fab_impair 0.1 0.1 1-5 $seed "$nfq" || fail "cannot impair the links (fabric_nfq, iptables NFQUEUE)"
        echo "every link, both ways: 10% loss, 10% duplication, 1-5 ms delay (reordering), seed $seed"
    fi
    NSX=(ip netns exec "$(fab_ns_sw)")
    start_switch "$FAB_SWITCH_IP:0" --job "0:$n,store=4096" || fail "serene-switch did not start in $(fab_ns_sw)"
    echo "switch in $(fab_ns_sw) at $FAB_SWITCH_IP:$port; ranks in $(fab_ns 0) .. $(fab_ns $((n - 1)))"
    export SERENE_JOB_NONCE
    SERENE_JOB_NONCE=$(nonce)
    for r in $(seq 0 $((n - 1))); do
        spawn "$work/rank$r.out" ip netns exec "$(fab_ns "$r")" env SERENE_RANK="$r" SERENE_WORLD_SIZE=$n \
            SERENE_SWITCH="$FAB_SWITCH_IP:$port" SERENE_TIMEOUT_MS=20000 \
            timeout -k 5 200 "$WORKER" exact --rounds 4 --sizes 1,255,257,20000 --words 600
        pids[r]=$spawned
    done
    for r in $(seq 0 $((n - 1))); do
        wait_pid "${pids[r]}" 210
        rc_run=$rc
        show "$work/rank$r.out" "$r"
        if [ "$rc_run" -ne 0 ]; then
            echo "FAIL: rank $r exited with $rc_run (124: it hung)"
            bad=1
            continue
        fi
        grep -q 'every allreduce and pull exact' "$work/rank$r.out" || { echo "FAIL: rank $r: not exact"; bad=1; }
        worst=$(sed -n 's/.* worst \([0-9]*\)\.[0-9]* ms (deadline \([0-9]*\) ms).*/\1 \2/p' "$work/rank$r.out")
        dl=${worst#* }
        worst=${worst% *}
        if [ -z "$worst" ] || [ "$worst" -ge "$dl" ]; then
            echo "FAIL: rank $r: a call took ${worst:-?} ms, past its deadline of ${dl:-?} ms"
            bad=1
        fi
        if [ "${FAULTS_NETEM_DRYRUN:-0}" != 1 ] && ! grep -Eq 'retrans [1-9]' "$work/rank$r.out"; then
            echo "FAIL: rank $r: no retransmissions under 10% loss: were the faults in the path?"
            bad=1
        fi
    done
    pids=()
    stop_switch
    grep -E '^serene-switch: (job=0|switch) ' "$work/switch.log" | sed 's/^/    /'
    fab_stop_pids
    if [ "${FAULTS_NETEM_DRYRUN:-0}" != 1 ]; then
        stats=$(fab_impair_stats)
        echo "fabric_nfq, every namespace: $stats"
        [[ $stats =~ dropped=[1-9] ]] && [[ $stats =~ duplicated=[1-9] ]] && [[ $stats =~ reordered=[1-9] ]] ||
            { echo "FAIL: the links dropped, duplicated or reordered nothing"; bad=1; }
    fi
    [ "$bad" -eq 0 ] || fail "not every allreduce and pull was exact within its deadline on the impaired links"
}

case_switch_crash() {
    local st=0
    start_switch 127.0.0.1:0 --job 0:2 || fail "serene-switch did not start"
    kill -SEGV "$swpid"
    for _ in $(seq 50); do kill -0 "$swpid" 2>/dev/null || break; sleep 0.1; done
    wait "$swpid" || st=$?
    swpid=
    grep -q 'Sanitizer' "$work/switch.log" && skip "a sanitizer build reports crashes itself"
    [ "$st" -eq 139 ] || fail "serene-switch ended with status $st after SIGSEGV, not 139"
    grep -q '^serene-switch: fatal signal, stack:$' "$work/switch.log" || fail "no stack report in the switch's log"
    [ "$(grep -c 'serene-switch(+0x' "$work/switch.log")" -ge 2 ] || fail "fewer than 2 frames of serene-switch in the report"
    sed -n '/fatal signal/,$p' "$work/switch.log" | head -n 4 | sed 's/^/    /'
}

case $CASE in
    worker-killed-allreduce) case_worker_killed_allreduce ;;
    switch-crash) case_switch_crash ;;
    worker-killed-asp) case_worker_killed_asp ;;
    switch-restart) case_switch_restart ;;
    netem) case_netem ;;
    *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
stop_switch
echo "PASS: faults-$CASE in $(ms_since "$start") ms"
exit 0
