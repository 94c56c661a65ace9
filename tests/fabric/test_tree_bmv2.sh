#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_tree_bmv2.sh BUILD - the tree of fabric-tree on BMv2: three
# simple_switch instances running p4/serene.p4 (a root and 2 leaves, 2
# workers each), configured with the command files `serene-ctl tree
# --target bmv2` writes (p4/README.md and lib/ctl/README.md, "Trees"):
#
#   hhP-w0 hhP-w1   hhP-w2 hhP-w3    workers: eth0 10.79.1R.2, source port 47000 + R,
#      1\   /2         1\   /2       the leaf at 10.79.L.254 through a static neighbour
#      hhP-l0           hhP-l1       simple_switch: port 1, 2 to its workers, 3 up
#           3\         /3
#            1\       /2
#             hhP-root               simple_switch: port K + 1 to leaf K; 10.79.0.1
#
# allreduce (ar_worker, 32 values per packet: the program's lanes) within the
# bound, and the SSP store (ssp_worker store, store 2048) exact, through the
# tree. Skips (77) without root or without p4c-bm2-ss, simple_switch and
# simple_switch_CLI (they are not in Debian: CI skips it; see p4/README.md
# for building them; on the development machine, with them built, it
# passes). Every wait is bounded; namespaces and processes are removed
# (bench/fabric_net.sh's fab_down).
set -uo pipefail
BUILD=${1:?usage: $0 BUILD}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tree_lib.sh
. "$ROOT/tests/fabric/tree_lib.sh"
bmv2_tools
CTL=$BUILD/lib/ctl/serene-ctl AR=$BUILD/tests/integ/ar_worker SSP=$BUILD/tests/integ/ssp_worker
for b in "$CTL" "$AR" "$SSP"; do [ -x "$b" ] || { echo "FAIL: no $b"; exit 1; }; done

tree_init tree-bmv2
SWITCH_MAC=02:53:45:00:00:fe # p4/include/constants.p4's SR_P4_SWITCH_MAC
MTU=1500

"$P4C" --std p4-16 -o "$tmp/serene.json" "$ROOT/p4/serene.p4" >"$tmp/p4c.log" 2>&1 ||
    fail "p4c-bm2-ss could not compile p4/serene.p4"

fab_addns "$NS_ROOT" || fail "cannot make namespaces"
for l in 0 1; do
    fab_addns "$(ns_leaf $l)" || fail "cannot make namespaces"
    ip link add name "d$l" mtu $MTU netns "$NS_ROOT" type veth peer name uplink mtu $MTU \
        netns "$(ns_leaf $l)" || fail "cannot make link root-l$l"
    ip -n "$NS_ROOT" link set "d$l" up && ip -n "$(ns_leaf $l)" link set uplink up || fail "link up"
done
for r in 0 1 2 3; do
    l=$((r / 2)) w=$(ns_w $r)
    fab_addns "$w" || fail "cannot make namespaces"
    ip link add name eth0 mtu $MTU netns "$w" type veth peer name "d$((r % 2))" mtu $MTU \
        netns "$(ns_leaf $l)" || fail "cannot make link l$l-w$r"
    # gso_max_segs 1: the worker's kernel cuts UDP GSO trains into datagrams
    # before the veth (bench/fabric_net.sh says why BMv2 needs it).
    ip -n "$w" link set eth0 gso_max_segs 1 &&
        ip -n "$w" addr add "10.79.$((10 + r)).2/24" dev eth0 && ip -n "$w" link set eth0 up &&
        ip -n "$(ns_leaf $l)" link set "d$((r % 2))" up &&
        ip -n "$w" route add "10.79.$((l + 1)).254/32" dev eth0 &&
        ip -n "$w" neigh add "10.79.$((l + 1)).254" lladdr $SWITCH_MAC dev eth0 || fail "worker $r's link"
done

{
    echo "job = 3"
    echo "workers = 4"
    echo "store = 2048"
    echo "ring = 8"
    echo "elems = 32"
    echo "slots = 64"
    echo "upjob = 2" # job blocks are job id mod 4 (SR_P4_MAX_JOBS): 3 and 2 apart
    echo "root = 10.79.0.1:48200"
    for l in 0 1; do
        echo "leaf.$l = $((2 * l))-$((2 * l + 1))"
        echo "leaf.$l.addr = 10.79.$((l + 1)).254:48200"
    done
    for r in 0 1 2 3; do echo "worker.$r = 10.79.$((10 + r)).2:$((47000 + r))"; done
} >"$tmp/job.conf"
echo bsp >"$tmp/policy.conf"
"$CTL" tree --target bmv2 --job-file "$tmp/job.conf" "$tmp/policy.conf" >"$tmp/cmds.txt" ||
    fail "serene-ctl tree --target bmv2"
awk -v d="$tmp" '/^# switch / { f = d "/cmds-" $3 ".txt"; next } { print > f }' "$tmp/cmds.txt"

# start NS NAME ID PORT_ARGS...: simple_switch in NS, configured from
# cmds-NAME.txt. Each instance has its own device id and notifications
# socket (by default /tmp/bmv2-ID-notifications.ipc, one file for all
# namespaces and all runs on the machine).
start() {
    local ns=$1 name=$2 id=$3 pid
    shift 3
    fab_spawn "$tmp/$name.switch.log" "$ns" "$SS" --device-id "$id" --thrift-port 9090 \
        --notifications-addr "ipc://$tmp/$name.notify.ipc" "$@" "$tmp/serene.json"
    pid=$FAB_SPAWNED
    "$ROOT/p4/bmv2_configure.sh" "$tmp/$name.cli.log" "$tmp/cmds-$name.txt" "$pid" 60 \
        ip netns exec "$ns" "$CLI" --thrift-port 9090 && return 0
    fail "could not configure simple_switch $name ($name.cli.log)"
}
start "$NS_ROOT" root $((($$ % 10000) * 3)) -i 1@d0 -i 2@d1
start "$(ns_leaf 0)" leaf.0 $((($$ % 10000) * 3 + 1)) -i 1@d0 -i 2@d1 -i 3@uplink
start "$(ns_leaf 1)" leaf.1 $((($$ % 10000) * 3 + 2)) -i 1@d0 -i 2@d1 -i 3@uplink

# ranks NAME CMD...: 4 ranks, each in its namespace, bounded; rc = 0 iff all passed.
ranks() {
    local name=$1 r pids=() nonce=$((RANDOM * 32768 + RANDOM + 1)) all=0
    shift
    for r in 0 1 2 3; do
        fab_spawn "$tmp/$name-w$r.log" "$(ns_w $r)" env SERENE_TIMEOUT_MS=60000 SERENE_JOB=3 \
            SERENE_RANK=$r SERENE_WORLD_SIZE=4 SERENE_SWITCH="10.79.$((r / 2 + 1)).254:48200" \
            SERENE_BIND="10.79.$((10 + r)).2:$((47000 + r))" SERENE_JOB_NONCE=$nonce "$@"
        pids+=("$FAB_SPAWNED")
    done
    for r in 0 1 2 3; do
        fab_wait "${pids[$r]}" 240
        [ "$rc" = 0 ] || { echo "rank $r of $name exited $rc"; all=1; }
        tail -n 1 "$tmp/$name-w$r.log"
    done
    rc=$all
}

ranks ar "$AR" --elems 32 --sizes 1,31,33,1000,4097 --reps 2 --seed 21
[ "$rc" = 0 ] || fail "allreduce through the BMv2 tree"
ranks ssp "$SSP" store --iters 5 --offset 100 --count 1000 --capacity 2048 --seed 22
[ "$rc" = 0 ] || fail "the SSP store through the BMv2 tree"
echo "PASS: tree-bmv2"
