#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_pool_bmv2.sh BUILD [priority|fair] - two shared jobs on BMv2 sharing
# a pool of 4 blocks, the pool run by p4/bmv2_pool.py under the policy
# (p4/README.md, "Shared jobs"), their fallback a serene-switch:
#
#   hhP-w0 hhP-w1   hhP-w2 hhP-w3    job 5 (prio 0): ranks 0-1 at 10.81.0.1-2
#      1\   /2         3\   /4       job 6 (prio 9): ranks 0-1 at 10.81.0.3-4
#           hhP-sw ------5------ hhP-fb   serene-switch at 10.81.0.9:47100
#
# Job 5 starts first and takes the pool; job 6 starts while job 5 runs,
# claims blocks from it (taken at job 5's next round in each slot, summed
# at the fallback) and gets them: under priority all four, under fair
# share at most its share of two while job 5 runs. Checked: every call of
# both jobs within the bound (ar_worker), results from the switch for
# both, job 6 given blocks taken from job 5 (the controller's log), and
# the controller's own checks every period (no lease it did not make,
# never more blocks leased than the pool: exit status 0). Skips (77)
# without root or the BMv2 tools. Every wait is bounded; namespaces and
# processes are removed.
set -uo pipefail
BUILD=${1:?usage: $0 BUILD [priority|fair]}
POLICY=${2:-priority}
case $POLICY in priority | fair) ;; *) echo "usage: $0 BUILD [priority|fair]" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tree_lib.sh
. "$ROOT/tests/fabric/tree_lib.sh"
bmv2_tools
CTL=$BUILD/lib/ctl/serene-ctl AR=$BUILD/tests/integ/ar_worker SW=$BUILD/p4/swswitch/serene-switch
for b in "$CTL" "$AR" "$SW"; do [ -x "$b" ] || { echo "FAIL: no $b"; exit 1; }; done

tree_init pool-bmv2-$POLICY
NS_SW=$NS_ROOT NS_FB=hh$$-fb

"$P4C" --std p4-16 -o "$tmp/serene.json" "$ROOT/p4/serene.p4" >"$tmp/p4c.log" 2>&1 ||
    fail "p4c-bm2-ss could not compile p4/serene.p4"
fab_addns "$NS_SW" || fail "cannot make namespaces"
for r in 0 1 2 3; do bmv2_host "$(ns_w $r)" "10.81.0.$((r + 1))" $((r + 1)) "$NS_SW" 10.81.0.254; done
bmv2_host "$NS_FB" 10.81.0.9 5 "$NS_SW" 10.81.0.254

# jobfile J FIRST_RANK: job J's 2 ranks on switch ports FIRST_RANK + 1, + 2;
# no block of its own (lease = 0): the pool's controller leases them.
jobfile() {
    echo "job = $1"
    echo "workers = 2"
    echo "ring = 8"
    for r in 0 1; do
        echo "worker.$r = 10.81.0.$(($2 + r + 1)):$((47000 + r))"
        echo "worker.$r.port = $(($2 + r + 1))"
    done
    echo "fallback = 10.81.0.9:47100"
    echo "fallback.port = 5"
    echo "lease = 0"
}
jobfile 5 0 >"$tmp/job5.conf"
jobfile 6 2 >"$tmp/job6.conf"
echo bsp >"$tmp/policy.conf"
"$CTL" compile --target bmv2 --job-file "$tmp/job5.conf" "$tmp/policy.conf" >"$tmp/cmds5.txt" ||
    fail "serene-ctl compile --target bmv2"

fab_spawn "$tmp/fallback.log" "$NS_FB" "$SW" --listen 10.81.0.9:47100 \
    --job 5:2:32:64,store=0 --job 6:2:32:64,store=0
fb_pid=$FAB_SPAWNED
fab_spawn "$tmp/switch.log" "$NS_SW" "$SS" --device-id $(($$ % 10000)) --thrift-port 9090 \
    --notifications-addr "ipc://$tmp/notify.ipc" -i 1@d1 -i 2@d2 -i 3@d3 -i 4@d4 -i 5@d5 \
    "$tmp/serene.json"
"$ROOT/p4/bmv2_configure.sh" "$tmp/cli.log" "$tmp/cmds5.txt" "$FAB_SPAWNED" 60 \
    ip netns exec "$NS_SW" "$CLI" --thrift-port 9090 || fail "could not configure simple_switch"
# Job 6 on the running switch, as an operator adds one (its own multicast
# handles: serene-ctl's assume a fresh switch).
ip netns exec "$NS_SW" env SIMPLE_SWITCH_CLI="$CLI" "$ROOT/p4/bmv2_job.sh" add --ctl "$CTL" \
    --thrift-port 9090 --job-file "$tmp/job6.conf" --policy "$tmp/policy.conf" \
    --state "$tmp/job6.state" >"$tmp/job6.log" 2>&1 || fail "bmv2_job.sh add job 6"
kill -0 "$fb_pid" 2>/dev/null || fail "the fallback serene-switch exited"

fab_spawn "$tmp/pool.log" "$NS_SW" python3 "$ROOT/p4/bmv2_pool.py" --blocks 200-203 \
    --policy "$POLICY" --duration 200 5:0 6:9 -- "$CLI" --thrift-port 9090
pool_pid=$FAB_SPAWNED

# ranks J FIRST SIZES REPS: job J's 2 ranks (pids in jpids).
jpids=()
ranks() {
    local r nonce=$((RANDOM * 32768 + RANDOM + 1))
    for r in 0 1; do
        fab_spawn "$tmp/j$1-w$r.log" "$(ns_w $(($2 + r)))" env SERENE_TIMEOUT_MS=60000 \
            SERENE_JOB="$1" SERENE_RANK=$r SERENE_WORLD_SIZE=2 SERENE_SWITCH=10.81.0.254:48200 \
            SERENE_BIND="10.81.0.$(($2 + r + 1)):$((47000 + r))" SERENE_JOB_NONCE=$nonce \
            "$AR" --elems 32 --sizes "$3" --reps "$4" --seed "$1"
        jpids+=("$FAB_SPAWNED")
    done
}
ranks 5 0 20000,4097 8
# Job 6 once job 5 holds the whole pool (the controller's log), 30 s at most.
for _ in $(seq 300); do
    [ "$(grep -c 'grant block .* to job 5 ' "$tmp/pool.log")" -ge 4 ] && break
    sleep 0.1
done
[ "$(grep -c 'grant block .* to job 5 ' "$tmp/pool.log")" -ge 4 ] ||
    fail "job 5 was not given the pool's 4 blocks"
ranks 6 2 20000,4097 4

all=0
for k in 0 1 2 3; do
    fab_wait "${jpids[$k]}" 240
    [ "$rc" = 0 ] || { echo "rank $((k % 2)) of job $((5 + k / 2)) exited $rc"; all=1; }
done
for j in 5 6; do
    for r in 0 1; do
        line=$(grep "^rank $r: " "$tmp/j$j-w$r.log" | tail -n 1)
        echo "job $j $line"
        sw=$(sed -n 's/.* results switch \([0-9]*\) fallback \([0-9]*\)$/\1/p' <<<"$line")
        [ "${sw:-0}" -gt 0 ] || { echo "job $j rank $r: no result from the switch"; all=1; }
    done
done
kill "$pool_pid" 2>/dev/null
fab_wait "$pool_pid" 20
prc=$rc
grep -E 'takes|back|window|error|stopped' "$tmp/pool.log" | head -n 20
[ "$all" = 0 ] || fail "the jobs' calls"
[ "$prc" = 0 ] || fail "bmv2_pool.py exited $prc"
grep -q 'job 6 slot .* takes job 5 slot' "$tmp/pool.log" || fail "job 6 claimed no block from job 5"
grep -q 'grant block .* to job 6 ' "$tmp/pool.log" || fail "job 6 was given no block"
taken=$(grep -c 'job 6 slot .* takes job 5' "$tmp/pool.log")
# Fair share: job 6 claims up to its share (2 of 4) while job 5 runs. Job
# 5 may claim back up to its own share: when it pauses for --idle-ms, its
# quiet blocks go back to the pool, and it is below its share.
[ "$POLICY" = priority ] || [ "$taken" -le 2 ] || fail "job 6 claimed $taken blocks, its share is 2"
back=$(grep -c 'job 5 slot .* takes job 6' "$tmp/pool.log")
[ "$POLICY" = priority ] || [ "$back" -le 2 ] || fail "job 5 claimed $back blocks, its share is 2"
echo "PASS: pool-bmv2 $POLICY: $(grep -c 'grant block' "$tmp/pool.log") grants, $taken blocks" \
    "claimed from job 5, $back from job 6"
