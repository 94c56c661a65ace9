#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_tree.sh BUILD - an aggregation tree of software switches in network
# namespaces (p4/README.md, "Trees"): a root and 2 leaves with 2
# workers each, every switch and worker in its own namespace, each link a
# veth pair:
#
#   hhP-w0  hhP-w1        hhP-w2  hhP-w3     workers, ranks 0..3 of 4
#       \    /                \    /         links 10.78.1x.0/24
#      hhP-l0                hhP-l1          leaves, serene-switch local=0-1 / 2-3
#            \              /                links 10.78.1.0/24, 10.78.2.0/24
#               hhP-root                     root, serene-switch: jobs J (4 workers,
#                                            store and barrier) and J+100 (2 leaves)
#
#   1. allreduce exact (ar_worker: 1, 255, 257 and 262144 values, SUM, twice),
#      and the bytes on each leaf-root link, counted by the leaf's interface:
#      between 0.95 and 1.10 times the tensors' bytes each way (2 workers
#      under the leaf, one partial up and one result down per packet); then
#      AVG, divided by the tree's 4 workers.
#   2. with 2% loss and 1% duplication on every link, both ways (bench/
#      fabric_nfq in every namespace, as bench/fabric_net.sh's fab_impair):
#      allreduce exact, with retransmissions;
#   3. the same loss: the SSP store at the root through the leaves
#      (ssp_worker store: pushes applied once, delta and absolute pulls
#      exact across wraps, clocks), with retransmissions;
#   4. the same loss: the barrier at the root under SSP(1), installed on
#      the root's control socket from serene-ctl compile, rank 3 slow: no
#      clock returned before the barrier allowed it (ssp_check).
# The switches' --job arguments come from serene-ctl tree. Each phase uses
# its own job pair, so a LEAVE lost in one cannot hold the next. Needs root (else exit 77) and fabric_nfq (else exit 77 for phases
# 2-3 only: phase 1 still runs). Every wait is bounded; everything made is
# removed, processes stopped by PID (bench/fabric_net.sh's fab_down).
set -uo pipefail
BUILD=${1:?usage: $0 BUILD}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no ip (Debian: iproute2)"; exit 77; }
SW=$BUILD/p4/swswitch/serene-switch
AR=$BUILD/tests/integ/ar_worker
SSP=$BUILD/tests/integ/ssp_worker
SSPCHECK=$BUILD/tests/integ/ssp_check
NFQ=$BUILD/bench/fabric_nfq
CTL=$BUILD/lib/ctl/serene-ctl
for b in "$SW" "$AR" "$SSP" "$SSPCHECK" "$CTL"; do [ -x "$b" ] || { echo "FAIL: no $b"; exit 1; }; done

# shellcheck source=tree_lib.sh
. "$ROOT/tests/fabric/tree_lib.sh"
tree_init tree
PORT=48200
MTU=9000

# link UPPER_NS UPPER_IF LOWER_NS LOWER_IF NET: a veth pair, UPPER .1, LOWER .2.
link() {
    ip link add name "$2" mtu $MTU netns "$1" type veth peer name "$4" mtu $MTU netns "$3" &&
        ip -n "$1" addr add "$5.1/24" dev "$2" && ip -n "$3" addr add "$5.2/24" dev "$4" &&
        ip -n "$1" link set "$2" up && ip -n "$3" link set "$4" up
}

fab_addns "$NS_ROOT" || fail "cannot make namespaces"
for l in 0 1; do
    fab_addns "$(ns_leaf $l)" || fail "cannot make namespaces"
    link "$NS_ROOT" "d$l" "$(ns_leaf $l)" uplink "10.78.$((l + 1))" || fail "cannot make link root-l$l"
done
for r in 0 1 2 3; do
    fab_addns "$(ns_w $r)" || fail "cannot make namespaces"
    link "$(ns_leaf $((r / 2)))" "d$((r % 2))" "$(ns_w $r)" eth0 "10.78.$((10 + r))" ||
        fail "cannot make link l$((r / 2))-w$r"
done

# Jobs: phase P uses job P (4 workers) and P + 100 at the root (the
# leaves); serene-ctl writes every switch's --job arguments from a job file
# that describes the tree (lib/ctl/README.md, "Trees").
root_jobs=() leaf0_jobs=() leaf1_jobs=()
for p in 1 2 3 4 5; do
    printf '%s\n' "job = $p" "workers = 4" "store = 8192" "elems = 256" "slots = 64" \
        "upjob = $((p + 100))" "leaf.0 = 0-1" "leaf.0.up = 10.78.1.1:$PORT" \
        "leaf.1 = 2-3" "leaf.1.up = 10.78.2.1:$PORT" >"$tmp/job$p.conf"
    "$CTL" tree --job-file "$tmp/job$p.conf" >"$tmp/tree$p.txt" || fail "serene-ctl tree refused job $p"
    read -r -a a <<<"$(sed -n 's/^root //p' "$tmp/tree$p.txt")" && root_jobs+=("${a[@]}")
    read -r -a a <<<"$(sed -n 's/^leaf\.0 //p' "$tmp/tree$p.txt")" && leaf0_jobs+=("${a[@]}")
    read -r -a a <<<"$(sed -n 's/^leaf\.1 //p' "$tmp/tree$p.txt")" && leaf1_jobs+=("${a[@]}")
done
cat "$tmp/tree1.txt"
fab_spawn "$tmp/root.log" "$NS_ROOT" "$SW" --listen "0.0.0.0:$PORT" --port-file "$tmp/root.port" \
    --control "$tmp/root.sock" "${root_jobs[@]}"
fab_spawn "$tmp/l0.log" "$(ns_leaf 0)" "$SW" --listen "0.0.0.0:$PORT" --port-file "$tmp/l0.port" "${leaf0_jobs[@]}"
fab_spawn "$tmp/l1.log" "$(ns_leaf 1)" "$SW" --listen "0.0.0.0:$PORT" --port-file "$tmp/l1.port" "${leaf1_jobs[@]}"
for _ in $(seq 100); do
    [ -s "$tmp/root.port" ] && [ -s "$tmp/l0.port" ] && [ -s "$tmp/l1.port" ] && break
    sleep 0.1
done
[ -s "$tmp/root.port" ] && [ -s "$tmp/l0.port" ] && [ -s "$tmp/l1.port" ] || fail "a switch did not start"

# ranks JOB NAME CMD...: 4 ranks, each in its namespace, bounded; rc = 0 iff all passed.
ranks() {
    local job=$1 name=$2 r pids=() nonce=$((RANDOM * 32768 + RANDOM + 1))
    shift 2
    for r in 0 1 2 3; do
        fab_spawn "$tmp/$name-w$r.log" "$(ns_w $r)" env SERENE_TIMEOUT_MS=30000 SERENE_JOB="$job" \
            SERENE_RANK=$r SERENE_WORLD_SIZE=4 SERENE_SWITCH="10.78.$((10 + r)).1:$PORT" \
            SERENE_JOB_NONCE=$nonce "$@"
        pids+=("$FAB_SPAWNED")
    done
    local all=0
    for r in 0 1 2 3; do
        fab_wait "${pids[$r]}" 150
        [ "$rc" = 0 ] || { echo "rank $r of $name exited $rc"; all=1; }
    done
    for r in 0 1 2 3; do tail -n 1 "$tmp/$name-w$r.log"; done
    rc=$all
}

# bytes NS IF: "tx rx" of the interface.
bytes() {
    ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_bytes" "/sys/class/net/$2/statistics/rx_bytes" | tr '\n' ' '
}

# ---- 1. exact, and the bytes on the leaf-root links ----------------------------
SIZES=1,255,257,262144
REPS=2
tensor=$(( (1 + 255 + 257 + 262144) * 4 * REPS ))
declare -A before
for l in 0 1; do before[$l]=$(bytes "$(ns_leaf $l)" uplink); done
w0_before=$(bytes "$(ns_w 0)" eth0)
ranks 1 exact "$AR" --elems 256 --sizes $SIZES --reps $REPS --seed 11
[ "$rc" = 0 ] || fail "allreduce through the tree"
read -r wtx0 wrx0 <<<"$w0_before"
read -r wtx1 wrx1 <<<"$(bytes "$(ns_w 0)" eth0)"
for l in 0 1; do
    read -r tx0 rx0 <<<"${before[$l]}"
    read -r tx1 rx1 <<<"$(bytes "$(ns_leaf $l)" uplink)"
    up=$(awk -v b=$((tx1 - tx0)) -v t=$tensor 'BEGIN { printf "%.3f", b / t }')
    down=$(awk -v b=$((rx1 - rx0)) -v t=$tensor 'BEGIN { printf "%.3f", b / t }')
    echo "leaf $l - root link: $((tx1 - tx0)) bytes up ($up x the tensors), $((rx1 - rx0)) down ($down x); 2 workers under the leaf"
    awk -v u="$up" -v d="$down" 'BEGIN { exit !(u >= 0.95 && u <= 1.10 && d >= 0.95 && d <= 1.10) }' ||
        fail "leaf $l's link to the root carried $up / $down x the tensors (want 0.95..1.10 each way)"
done
ranks 4 avg "$AR" --elems 256 --sizes 1000,70000 --reps 1 --avg --seed 14
[ "$rc" = 0 ] || fail "allreduce AVG through the tree (divided by the tree's 4 workers)"
echo "worker 0 - leaf link: $((wtx1 - wtx0)) bytes up ($(awk -v b=$((wtx1 - wtx0)) -v t=$tensor 'BEGIN { printf "%.3f", b / t }') x), $((wrx1 - wrx0)) down"

# ---- 2, 3. loss and duplication on every link ----------------------------------
if [ ! -x "$NFQ" ] || ! command -v iptables >/dev/null; then
    echo "SKIP: phases 2-3 need fabric_nfq (Debian libnetfilter-queue-dev) and iptables"
    exit 77
fi
i=0
for ns in "$NS_ROOT" "$(ns_leaf 0)" "$(ns_leaf 1)" "$(ns_w 0)" "$(ns_w 1)" "$(ns_w 2)" "$(ns_w 3)"; do
    rm -f "$tmp/nfq-$ns.ready"
    fab_spawn "$tmp/nfq-$ns.log" "$ns" "$NFQ" --queue 0 --loss 0.02 --dup 0.01 --mark "$FAB_MARK" \
        --seed $((700 + i)) --ready "$tmp/nfq-$ns.ready"
    i=$((i + 1))
    for _ in $(seq 100); do
        [ -e "$tmp/nfq-$ns.ready" ] && break
        sleep 0.05
    done
    [ -e "$tmp/nfq-$ns.ready" ] || fail "fabric_nfq did not start in $ns"
    # Every IPv4 packet leaving on a link (not lo), both ends of each link.
    ip netns exec "$ns" iptables -t mangle -A POSTROUTING ! -o lo -m mark ! --mark "$FAB_MARK" \
        -j NFQUEUE --queue-num 0 || fail "iptables NFQUEUE rule failed in $ns"
done

ranks 2 loss "$AR" --elems 256 --sizes 1,255,257,65536 --reps 2 --seed 12 --expect-retrans
[ "$rc" = 0 ] || fail "allreduce through the tree with loss on every link"
ranks 3 ssp "$SSP" store --iters 8 --offset 100 --count 600 --capacity 8192 --expect-retrans --seed 13
[ "$rc" = 0 ] || fail "the SSP store through the tree with loss on every link"

# The barrier at the root, under the same loss: the policy goes to the
# root's control socket (serene-ctl compile --target sw), rank 3 is slow,
# and ssp_check verifies SSP(1) from every rank's log.
echo "ssp 1" >"$tmp/ssp1.policy"
"$CTL" compile --target sw --job-file "$tmp/job5.conf" "$tmp/ssp1.policy" >"$tmp/ssp1.cmds" ||
    fail "serene-ctl compile"
while read -r line; do
    # shellcheck disable=SC2086 # one command line, split into its words
    ip netns exec "$NS_ROOT" "$SSPCHECK" ctl "$tmp/root.sock" $line >/dev/null ||
        fail "the root refused '$line'"
done <"$tmp/ssp1.cmds"
mkdir -p "$tmp/clocks"
ranks 5 barrier "$SSP" clocks --clocks 30 --out "$tmp/clocks" --compute-ms 2 --slow-rank 3 --slow-ms 10
[ "$rc" = 0 ] || fail "the barrier through the tree with loss on every link"
timeout 20 "$SSPCHECK" clocks "$tmp/clocks" 4 30 --expect ssp:1 || fail "SSP(1) not kept through the tree"

fab_stop_pids
# The switches' counters that tell the tree's story, per job.
for f in root l0 l1; do
    awk -v f=$f '/ job=/ { o = f; for (i = 2; i <= NF; i++) if ($i ~ /^(job|workers|results|shadow_replies|held|naks|pushes|clocks|releases|up_[a-z]+|down_relayed)=/) o = o " " $i; print o }' "$tmp/$f.log"
done
cat "$tmp"/nfq-*.log | grep "^fabric_nfq:"
echo "PASS: tree"
