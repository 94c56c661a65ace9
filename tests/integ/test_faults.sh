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
#   netem
#       Needs root, `ip netns` and sch_netem: two network namespaces joined
#       by a veth pair (10.x addresses inside them only), netem with 10%
#       loss, 10% duplication, 25% reordering and 2 ms +- 1 ms delay on both
#       ends; serene-switch in one namespace, serene-run with 3 fault_worker
#       ranks (mode exact: every allreduce and every pull exact, no call past
#       its deadline) in the other. Without root, `ip netns` or netem it
#       prints "SKIP: ..." and exits 77. FAULTS_NETEM_DRYRUN=1 runs the case
#       without the qdisc (to check the namespace plumbing where netem is
#       missing); that run proves nothing about faults.
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
CASE=$1 WORKER=$2 RUN=$3 CHECK=$4

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init "$CASE"
HARNESS_TAIL=12
start=$(date +%s%N)
pids=() # the ranks of the running case, by rank
netns=()
veth=""
NSX=() # command prefix that runs the switch inside a namespace (netem case)

# shellcheck disable=SC2317 # run by the exit trap, once every process is stopped
on_cleanup() {
    local p
    for p in "${netns[@]+"${netns[@]}"}"; do
        ip netns del "$p" 2>/dev/null
    done
    [ -n "$veth" ] && ip link del "$veth" 2>/dev/null
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

# ---- netem --------------------------------------------------------------------------

case_netem() {
    local sfx ns_sw ns_wk if_sw if_wk net ip_sw ip_wk qd rc_run out
    local spec="loss 10% duplicate 10% reorder 25% 50% delay 2ms 1ms"
    [ "$(id -u)" -eq 0 ] || skip "netem case: needs root (network namespaces, tc)"
    if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
        skip "netem case: no ip or tc (Debian: iproute2)"
    fi
    sfx=$$
    ns_sw=srf-sw-$sfx
    ns_wk=srf-wk-$sfx
    if_sw=srfs$sfx
    if_wk=srfw$sfx
    net=10.213.$((sfx % 250))
    ip_sw=$net.1
    ip_wk=$net.2
    ip netns add "$ns_sw" 2>"$work/ip.err" || skip "netem case: ip netns add: $(cat "$work/ip.err")"
    netns+=("$ns_sw")
    ip netns add "$ns_wk" 2>"$work/ip.err" || skip "netem case: ip netns add: $(cat "$work/ip.err")"
    netns+=("$ns_wk")
    ip link add "$if_sw" type veth peer name "$if_wk" 2>"$work/ip.err" || skip "netem case: veth: $(cat "$work/ip.err")"
    veth=$if_sw
    ip link set "$if_sw" netns "$ns_sw" || fail "cannot move $if_sw into $ns_sw"
    veth=$if_wk # the end still in this namespace, if the next move fails
    ip link set "$if_wk" netns "$ns_wk" || fail "cannot move $if_wk into $ns_wk"
    veth=""
    { ip -n "$ns_sw" addr add "$ip_sw/30" dev "$if_sw" && ip -n "$ns_wk" addr add "$ip_wk/30" dev "$if_wk" &&
        ip -n "$ns_sw" link set "$if_sw" up && ip -n "$ns_wk" link set "$if_wk" up &&
        ip -n "$ns_sw" link set lo up && ip -n "$ns_wk" link set lo up; } || fail "cannot set up the veth pair"
    if [ "${FAULTS_NETEM_DRYRUN:-0}" = 1 ]; then
        echo "DRY RUN (FAULTS_NETEM_DRYRUN=1): no qdisc; this run checks the plumbing only"
    else
        for qd in "$ns_sw $if_sw" "$ns_wk $if_wk"; do
            # shellcheck disable=SC2086
            if ! ip netns exec ${qd% *} tc qdisc add dev ${qd#* } root netem $spec 2>"$work/tc.err"; then
                skip "netem unavailable (tc qdisc add dev ${qd#* } root netem: $(tr '\n' ' ' <"$work/tc.err"))"
            fi
        done
        echo "netem on both ends: $spec"
        ip netns exec "$ns_sw" tc qdisc show dev "$if_sw" | sed 's/^/    /'
    fi
    NSX=(ip netns exec "$ns_sw")
    start_switch "$ip_sw:0" --job "0:3,store=4096" || fail "serene-switch did not start in $ns_sw"
    echo "switch in $ns_sw at $ip_sw:$port; workers in $ns_wk at $ip_wk"
    out=$work/run.out
    # serene-run uses our switch (--switch) and stops its ranks on its own
    # --timeout; `timeout` bounds serene-run itself.
    # In the background, so that a signal to this script is handled at once.
    spawn "$out" ip netns exec "$ns_wk" env SERENE_TIMEOUT_MS=20000 \
        timeout -k 5 200 "$RUN" -n 3 --switch "$ip_sw:$port" --timeout 180 -- \
        "$WORKER" exact --rounds 4 --sizes 1,255,257,20000 --words 600
    wait "$spawned"
    rc_run=$?
    forget_pid "$spawned"
    sed 's/^/    /' "$out"
    [ "$rc_run" -eq 0 ] || fail "serene-run exited with $rc_run (124: it hung)"
    [ "$(grep -c 'every allreduce and pull exact' "$out")" -eq 3 ] || fail "not every rank reported exact results"
    if [ "${FAULTS_NETEM_DRYRUN:-0}" != 1 ] && ! grep -Eq 'retrans [1-9]' "$out"; then
        fail "no retransmissions under 10% loss: was netem in the path?"
    fi
    stop_switch
    grep -E '^serene-switch: (job=0|switch) ' "$work/switch.log" | sed 's/^/    /'
}

case $CASE in
    worker-killed-allreduce) case_worker_killed_allreduce ;;
    worker-killed-asp) case_worker_killed_asp ;;
    switch-restart) case_switch_restart ;;
    netem) case_netem ;;
    *) echo "unknown case $CASE" >&2; exit 2 ;;
esac
stop_switch
echo "PASS: faults-$CASE in $(ms_since "$start") ms"
exit 0
