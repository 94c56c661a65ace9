# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034 # globals read by the callers (FAB_*, rc)
# fabric_net.sh - the emulated rack of bench/fabric.sh, as a shell library
# (sourced, not run; bash). The tests in tests/fabric source it too.
#
#   N host namespaces TAG-h0..TAG-h(N-1), each with one veth link, eth0,
#   to the switch namespace TAG-sw, where its end is named h0..h(N-1):
#
#     TAG-hR  eth0 10.77.(R+1).2/24 ===== hR 10.77.(R+1).1/24  TAG-sw
#             default via 10.77.(R+1).1                         lo 10.77.0.1/32
#                                                               ip_forward=1
#   - fab_up --switch sw: the switch namespace routes IPv4 between the
#     hosts (for Gloo and OpenMPI) and serene-switch listens on 10.77.0.1;
#   - fab_up --switch bmv2: the switch namespace has no addresses:
#     simple_switch owns h0..h(N-1) as ports 1..N; hosts reach its address
#     10.77.0.254 through a static neighbour entry (it answers no ARP).
#   - fab_shape RATE QUEUE: TBF on both ends of every link (each end's
#     egress, so both directions), RATE Mbit/s with a queue of QUEUE bytes;
#   - fab_impair: iptables sends every IPv4 packet leaving on a fabric link
#     (both ends) to NFQUEUE 0 of its namespace, served by one fabric_nfq per
#     namespace (loss, duplication, delay, reordering; seeded per namespace).
#
# Nothing is ever made in the caller's namespace: each veth pair is created
# with both ends already in their namespaces, and every address lives in
# them. fab_down stops the processes started through fab_spawn (by PID),
# then any process left inside our namespaces (what those started, by PID,
# from `ip netns pids`), and deletes the namespaces, which takes their
# links, qdiscs and firewall tables with them. Every process started here
# carries FABRIC_TAG=TAG in its environment, so a test can show that none
# outlives the fabric.
#
# Globals: FAB_TAG, FAB_DIR (work files, made and removed by the caller),
# FAB_N, FAB_NETNS (namespaces made so far), FAB_PIDS (processes spawned),
# FAB_SWITCH_IP, FAB_MARK.

FAB_MARK=0x5e
FAB_SUBNET=10.77.0.0/16

fab_log() { echo "fabric: $*" >&2; }

# fab_init TAG DIR
fab_init() {
    FAB_TAG=$1 FAB_DIR=$2 FAB_N=0 FAB_NETNS=() FAB_PIDS=() FAB_SWITCH_IP=10.77.0.1 FAB_KIND=sw
}

# fab_lifetime NAME TAG: a script's rack from here to its exit: the work
# directory FAB_DIR (TMPDIR/serene-NAME.XXXXXX), fab_init TAG on it,
# FABRIC_TAG exported, and traps that remove the rack (fab_down) and the
# directory on exit and on INT, TERM and HUP (exit 130, "NAME: interrupted").
# Only the shell that called it removes them: a child that gets a signal
# before its exec runs the traps too and must not delete the rack under the
# caller (/proc/self is read by the process itself: bash's BASHPID can still
# hold the parent's pid in a trap right after a fork).
fab_lifetime() {
    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/serene-$1.XXXXXX") || { fab_log "mktemp failed"; return 1; }
    fab_init "$2" "$dir"
    read -r FAB_MAIN_PID _ </proc/self/stat
    export FABRIC_TAG=$FAB_TAG
    trap fab_cleanup EXIT
    # shellcheck disable=SC2064 # NAME now, in the message
    trap "echo '$1: interrupted; removing the rack' >&2; exit 130" INT TERM HUP
}

# shellcheck disable=SC2317 # run by fab_lifetime's exit trap
fab_cleanup() {
    local me
    read -r me _ </proc/self/stat
    [ "$me" = "${FAB_MAIN_PID:-}" ] || return 0
    trap '' INT TERM HUP
    fab_down
    rm -rf "$FAB_DIR"
}

fab_ns_sw() { echo "$FAB_TAG-sw"; }
fab_ns() { echo "$FAB_TAG-h$1"; }
fab_host_ip() { echo "10.77.$(($1 + 1)).2"; }

# fab_check_tools: ip, tc; fails with a message when one is missing.
fab_check_tools() {
    local t
    [ "$(id -u)" -eq 0 ] || { fab_log "needs root (network namespaces, tc)"; return 1; }
    for t in ip tc; do
        command -v $t >/dev/null || { fab_log "no $t (Debian: iproute2)"; return 1; }
    done
}

fab_addns() {
    ip netns add "$1" || return 1
    FAB_NETNS+=("$1")
    ip -n "$1" link set lo up
}

# fab_link R MTU: host R's namespace and its veth link to the switch.
fab_link() {
    local r=$1 mtu=$2 h sw
    h=$(fab_ns "$r") sw=$(fab_ns_sw)
    fab_addns "$h" || return 1
    ip link add name eth0 mtu "$mtu" netns "$h" type veth peer name "h$r" mtu "$mtu" netns "$sw" || return 1
    ip -n "$h" addr add "$(fab_host_ip "$r")/24" dev eth0 &&
        ip -n "$h" link set eth0 up && ip -n "$sw" link set "h$r" up || return 1
    if [ "$FAB_KIND" = sw ]; then
        ip -n "$sw" addr add "10.77.$((r + 1)).1/24" dev "h$r" &&
            ip -n "$h" route add default via "10.77.$((r + 1)).1"
    else
        # The host's offloads stay as the kernel sets them: a UDP GSO train
        # crosses veth uncut and BMv2's packet socket drops it whole, which
        # the library's path test finds at the first burst (it then sends
        # one datagram per packet; lib/engine/trains.c).
        ip -n "$h" route add "$FAB_SWITCH_IP/32" dev eth0 &&
            ip -n "$h" neigh add "$FAB_SWITCH_IP" lladdr 02:53:45:00:00:fe dev eth0
    fi
}

# fab_up N MTU [sw|bmv2]: the namespaces and links, unshaped.
fab_up() {
    local n=$1 mtu=$2 r sw
    FAB_KIND=${3:-sw}
    [ "$FAB_KIND" = sw ] && FAB_SWITCH_IP=10.77.0.1 || FAB_SWITCH_IP=10.77.0.254
    sw=$(fab_ns_sw)
    fab_addns "$sw" || return 1
    if [ "$FAB_KIND" = sw ]; then
        ip -n "$sw" addr add "$FAB_SWITCH_IP/32" dev lo &&
            ip netns exec "$sw" sysctl -qw net.ipv4.ip_forward=1 || return 1
    fi
    for r in $(seq 0 $((n - 1))); do
        fab_link "$r" "$mtu" || { fab_log "cannot make link $r"; return 1; }
    done
    FAB_N=$n
}

# fab_shape RATE_MBIT QUEUE_BYTES: TBF on both ends of every link; rate 0
# removes the shaping. The bucket holds 64 KiB: a TSO segment fits, and a
# burst lasts ~5 ms at 100 Mbit/s, nothing over a transfer of seconds.
fab_shape() {
    local rate=$1 queue=$2 r sw
    sw=$(fab_ns_sw)
    for r in $(seq 0 $((FAB_N - 1))); do
        if [ "$rate" = 0 ]; then
            tc -n "$(fab_ns "$r")" qdisc del dev eth0 root 2>/dev/null
            tc -n "$sw" qdisc del dev "h$r" root 2>/dev/null
            continue
        fi
        tc -n "$(fab_ns "$r")" qdisc replace dev eth0 root tbf rate "${rate}mbit" burst 64kb limit "$queue" &&
            tc -n "$sw" qdisc replace dev "h$r" root tbf rate "${rate}mbit" burst 64kb limit "$queue" || return 1
    done
}

# fab_spawn OUT NS COMMAND...: COMMAND in namespace NS (empty: here), in
# the background with FABRIC_TAG set, output to OUT; sets FAB_SPAWNED. The
# child drops the caller's traps before it execs: a signal in between must
# not run the caller's cleanup in the child.
fab_spawn() {
    local out=$1 ns=$2
    shift 2
    if [ -n "$ns" ]; then
        (trap - EXIT INT TERM HUP && exec ip netns exec "$ns" env FABRIC_TAG="$FAB_TAG" "$@" >"$out" 2>&1) &
    else
        (trap - EXIT INT TERM HUP && exec env FABRIC_TAG="$FAB_TAG" "$@" >"$out" 2>&1) &
    fi
    FAB_SPAWNED=$!
    FAB_PIDS+=("$FAB_SPAWNED")
}

# fab_impair LOSS DUP DELAY SEED NFQ_BIN: impair every link both ways
# (DELAY "MIN-MAX" in ms, or 0). One fabric_nfq per namespace, seed
# SEED * 100 + its index; waits until each has bound its queue.
fab_impair() {
    local loss=$1 dup=$2 delay=$3 seed=$4 bin=$5 i=0 ns dev args
    [ -x "$bin" ] || { fab_log "no fabric_nfq at '$bin' (Debian libnetfilter-queue-dev, then rebuild)"; return 1; }
    command -v iptables >/dev/null || { fab_log "no iptables (Debian: iptables)"; return 1; }
    args=(--queue 0 --loss "$loss" --dup "$dup" --mark "$FAB_MARK")
    [ "$delay" = 0 ] || args+=(--delay "$delay")
    for ns in "$(fab_ns_sw)" $(for r in $(seq 0 $((FAB_N - 1))); do fab_ns "$r"; done); do
        dev=eth0
        [ "$ns" = "$(fab_ns_sw)" ] && dev=h+
        rm -f "$FAB_DIR/nfq-$ns.ready"
        fab_spawn "$FAB_DIR/nfq-$ns.log" "$ns" "$bin" "${args[@]}" --seed $((seed * 100 + i)) \
            --ready "$FAB_DIR/nfq-$ns.ready"
        i=$((i + 1))
        for _ in $(seq 100); do
            [ -e "$FAB_DIR/nfq-$ns.ready" ] && break
            kill -0 "$FAB_SPAWNED" 2>/dev/null || break
            sleep 0.05
        done
        [ -e "$FAB_DIR/nfq-$ns.ready" ] || { cat "$FAB_DIR/nfq-$ns.log" >&2; fab_log "fabric_nfq did not start in $ns"; return 1; }
        # No --queue-bypass: without fabric_nfq a packet goes nowhere, so
        # an impaired run can never pass on unimpaired links.
        ip netns exec "$ns" iptables -t mangle -A POSTROUTING -o "$dev" -m mark ! --mark "$FAB_MARK" \
            -j NFQUEUE --queue-num 0 || { fab_log "iptables NFQUEUE rule failed in $ns"; return 1; }
    done
}

# fab_impair_stats: the fabric_nfq counter lines, summed over namespaces
# (after fab_stop_pids).
fab_impair_stats() {
    cat "$FAB_DIR"/nfq-*.log 2>/dev/null | awk '/^fabric_nfq: queue=/ {
        for (i = 3; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2]; if (!(kv[1] in o)) { o[kv[1]] = ++k; n[k] = kv[1] } } }
        END { for (i = 1; i <= k; i++) printf "%s%s=%d", (i > 1 ? " " : ""), n[i], s[n[i]]; print "" }'
}

# fab_wait PID LIMIT_S: reap PID; rc = its status, 124 if still running
# after LIMIT_S (then killed).
fab_wait() {
    local i
    for i in $(seq $(($2 * 10))); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    rc=0
    if kill -0 "$1" 2>/dev/null; then
        kill -KILL "$1" 2>/dev/null
        wait "$1" 2>/dev/null
        rc=124
    else
        wait "$1" || rc=$?
    fi
}

# fab_kill_list PID...: SIGTERM, then SIGKILL what is left after 3 s.
fab_kill_list() {
    local p alive
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null
    for _ in $(seq 30); do
        alive=0
        for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive = 1 ] || break
        sleep 0.1
    done
    kill -KILL "$@" 2>/dev/null
    for p in "$@"; do wait "$p" 2>/dev/null; done
    return 0
}

# fab_stop_pids: stop what fab_spawn started.
fab_stop_pids() {
    fab_kill_list "${FAB_PIDS[@]+"${FAB_PIDS[@]}"}"
    FAB_PIDS=()
}

# fab_down: processes, then namespaces (with their links, qdiscs, rules).
fab_down() {
    local ns pids
    fab_stop_pids
    for ns in "${FAB_NETNS[@]+"${FAB_NETNS[@]}"}"; do
        # What our processes started in there (orted, say): ours too.
        pids=$(ip netns pids "$ns" 2>/dev/null)
        # shellcheck disable=SC2086
        [ -z "$pids" ] || fab_kill_list $pids
        ip netns del "$ns" || fab_log "could not delete namespace $ns"
    done
    FAB_NETNS=()
    FAB_N=0
}

# fab_counters: one line per host link, "R tx_bytes rx_bytes tx_packets
# rx_packets up_drops down_drops tcp_retrans udp_errors" (eth0's counters,
# the TBF drops of both ends, RetransSegs and the UDP buffer errors of the
# host's namespace).
fab_counters() {
    local r h s d up down
    for r in $(seq 0 $((FAB_N - 1))); do
        h=$(fab_ns "$r")
        s=/sys/class/net/eth0/statistics
        d=$(ip netns exec "$h" cat $s/tx_bytes $s/rx_bytes $s/tx_packets $s/rx_packets | tr '\n' ' ')
        up=$(tc -n "$h" -s qdisc show dev eth0 | sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -1)
        down=$(tc -n "$(fab_ns_sw)" -s qdisc show dev "h$r" 2>/dev/null | sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -1)
        echo "$r $d ${up:-0} ${down:-0} $(ip netns exec "$h" awk '
            /^Tcp: [0-9]/ { t = $13 } /^Udp: [0-9]/ { u = $6 + $7 } END { print t + 0, u + 0 }' /proc/net/snmp)"
    done
}

# fab_cpu_jiffies: "BUSY TOTAL", the jiffies of all the machine's CPUs so
# far (/proc/stat: busy is user, nice, system, irq, softirq and steal; the
# total adds idle and iowait).
fab_cpu_jiffies() {
    awk '/^cpu / { printf "%d %d\n", $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat
}
