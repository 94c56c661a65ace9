#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_share_bmv2.sh BUILD - a shared job on BMv2 with real workers
# (p4/README.md, "Shared jobs"): simple_switch running p4/serene.p4, set up
# by `serene-ctl compile --target bmv2` from a job file with a fallback and
# 2 of the job's 64 slots leased (blocks 200 and 201), and the fallback
# aggregator a serene-switch on a host:
#
#   hhP-w0 hhP-w1 hhP-w2          workers: eth0 10.80.0.(R+1), port 47000 + R
#      1\    |2   /3
#        hhP-sw ---4--- hhP-fb    simple_switch (10.80.0.254); serene-switch
#                                 at 10.80.0.9:47100 holding the same job,
#                                 2% loss, 1% duplication and reordering
#
# ar_worker on 3 ranks (32 values per packet, the program's lanes): every
# call within the bound, the first (20000 values at the full window of 64
# slots) summed partly in the leased blocks and partly at the fallback;
# the later calls take the window the results announce (2). Before the
# run the control plane takes slot 1's block back (take_reg): its first
# round goes to the fallback and hands the block over, and slot 1's rounds
# stay there. Checked: each rank's exit status, that each counted results
# from the switch and from the fallback (serene_get_stats), and that slot
# 1's lease was cleared by the handover while slot 0 kept its block.
# Skips (77) without root or without p4c-bm2-ss, simple_switch and
# simple_switch_CLI (not in Debian: CI skips it; p4/patches/README.md
# builds them). Every wait is bounded; namespaces and processes are removed
# (bench/fabric_net.sh's fab_down).
set -uo pipefail
BUILD=${1:?usage: $0 BUILD}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tree_lib.sh
. "$ROOT/tests/fabric/tree_lib.sh"
bmv2_tools
CTL=$BUILD/lib/ctl/serene-ctl AR=$BUILD/tests/integ/ar_worker SW=$BUILD/p4/swswitch/serene-switch
for b in "$CTL" "$AR" "$SW"; do [ -x "$b" ] || { echo "FAIL: no $b"; exit 1; }; done

tree_init share-bmv2
NS_SW=$NS_ROOT NS_FB=hh$$-fb
TOKEN=5e4e70c3a11ab1e5

"$P4C" --std p4-16 -o "$tmp/serene.json" "$ROOT/p4/serene.p4" >"$tmp/p4c.log" 2>&1 ||
    fail "p4c-bm2-ss could not compile p4/serene.p4"

fab_addns "$NS_SW" || fail "cannot make namespaces"
for r in 0 1 2; do bmv2_host "$(ns_w $r)" "10.80.0.$((r + 1))" $((r + 1)) "$NS_SW" 10.80.0.254; done
bmv2_host "$NS_FB" 10.80.0.9 4 "$NS_SW" 10.80.0.254

{
    echo "job = 6"
    echo "workers = 3"
    echo "ring = 8"
    echo "token = $TOKEN"
    for r in 0 1 2; do echo "worker.$r = 10.80.0.$((r + 1)):$((47000 + r))"; done
    echo "fallback = 10.80.0.9:47100"
    echo "lease = 2"
    echo "lease.first = 200"
} >"$tmp/job.conf"
echo bsp >"$tmp/policy.conf"
"$CTL" compile --target bmv2 --job-file "$tmp/job.conf" "$tmp/policy.conf" >"$tmp/cmds.txt" ||
    fail "serene-ctl compile --target bmv2"

# The fallback: the same job, 32 values and 64 slots as the program's, with
# faults on what it answers and receives.
fab_spawn "$tmp/fallback.log" "$NS_FB" "$SW" --listen 10.80.0.9:47100 --job 6:3:32:64,store=0 \
    --loss 0.02 --dup 0.01 --reorder 0.01 --seed 31
fb_pid=$FAB_SPAWNED
fab_spawn "$tmp/switch.log" "$NS_SW" "$SS" --device-id $(($$ % 10000)) --thrift-port 9090 \
    --notifications-addr "ipc://$tmp/notify.ipc" -i 1@d1 -i 2@d2 -i 3@d3 -i 4@d4 "$tmp/serene.json"
"$ROOT/p4/bmv2_configure.sh" "$tmp/cli.log" "$tmp/cmds.txt" "$FAB_SPAWNED" 60 \
    ip netns exec "$NS_SW" "$CLI" --thrift-port 9090 || fail "could not configure simple_switch"
kill -0 "$fb_pid" 2>/dev/null || fail "the fallback serene-switch exited"
# cli CMD...: the switch's answers to simple_switch_CLI commands.
cli() { printf '%s\n' "$@" | ip netns exec "$NS_SW" "$CLI" --thrift-port 9090 2>&1; }
# reg NAME INDEX: the register's value.
reg() { cli "register_read $1 $2" | sed -n "s/.*$1\[$2\] *= *\([0-9]*\).*/\1/p"; }
# The control plane takes slot 1's block back before the run (job 6:
# register block 2, slot entry 2 * 64 + 1): the slot's first round goes to
# the fallback and hands the block over when it completes.
[ "$(reg lease_reg 129)" = 202 ] || fail "slot 1 is not leased block 201 ($(reg lease_reg 129))"
cli "register_write take_reg 129 1" >/dev/null

pids=() nonce=$((RANDOM * 32768 + RANDOM + 1)) all=0
for r in 0 1 2; do
    fab_spawn "$tmp/w$r.log" "$(ns_w $r)" env SERENE_TIMEOUT_MS=60000 SERENE_JOB=6 \
        SERENE_RANK=$r SERENE_WORLD_SIZE=3 SERENE_SWITCH=10.80.0.254:48200 \
        SERENE_BIND="10.80.0.$((r + 1)):$((47000 + r))" SERENE_JOB_TOKEN=$TOKEN \
        SERENE_JOB_NONCE=$nonce "$AR" --elems 32 --sizes 20000,1,33,1000,4097 --reps 2 --seed 41
    pids+=("$FAB_SPAWNED")
done
for r in 0 1 2; do
    fab_wait "${pids[$r]}" 240
    [ "$rc" = 0 ] || { echo "rank $r exited $rc"; all=1; }
    line=$(grep "^rank $r: " "$tmp/w$r.log" | tail -n 1)
    echo "$line"
    sw=$(sed -n 's/.* results switch \([0-9]*\) fallback \([0-9]*\)$/\1/p' <<<"$line")
    fb=$(sed -n 's/.* results switch \([0-9]*\) fallback \([0-9]*\)$/\2/p' <<<"$line")
    [ "${sw:-0}" -gt 0 ] && [ "${fb:-0}" -gt 0 ] ||
        { echo "rank $r: results from the switch '$sw', from the fallback '$fb': want both"; all=1; }
done
[ "$all" = 0 ] || fail "allreduce of a shared job through BMv2 and its fallback"
lease=$(reg lease_reg 129) take=$(reg take_reg 129)
echo "slot 1 after the run: lease $lease, take $take (0 0: the block was handed over)"
[ "$lease" = 0 ] && [ "$take" = 0 ] || fail "slot 1's block was not handed over"
[ "$(reg lease_reg 128)" = 201 ] || fail "slot 0 lost its block"
echo "PASS: share-bmv2"
