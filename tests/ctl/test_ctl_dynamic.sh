#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_ctl_dynamic.sh SERENE_CTL SERENE_RUN SERENE_SWITCH CTL_WORKER SSP_CHECK
#
# The dynamic controller end to end: a real serene-switch (--control), 4
# ctl_worker ranks under serene-run --switch (40 ms per clock; rank 3 turns
# straggler, 200 ms per clock, from clock 30 on), and serene-ctl run with
#     bsp
#     when wait_fraction > 0.7 for 10 clocks: staleness += 4 max 8
#     when clock >= 100: bsp
#     stop at clock 130
# Checks:
# - serene-ctl status (line and --json) and the unknown-job message;
# - the controller raised the staleness, and only after the straggler
#   appeared (every reactive decision measured at clock >= 30);
# - the fast ranks (0-2) waited less per clock in the clocks right after the
#   first raise took effect than in the clocks just before it;
# - clocks 100..129 ran under BSP;
# - ssp_check clocks: every rank logged the same (mode, s) at every clock,
#   the barrier held, and the policy went exactly through the controller's
#   decisions at the effective clocks it logged.
# Every wait is bounded; processes are stopped by PID; a failure prints
# "FAIL: ..." and exits 1.
set -uo pipefail
[ $# -eq 5 ] || { echo "usage: $0 SERENE_CTL SERENE_RUN SERENE_SWITCH CTL_WORKER SSP_CHECK" >&2; exit 2; }
CTL=$1 RUN=$2 SWITCH=$3 WORKER=$4 CHECK=$5
N=4 CLOCKS=130 SLOW_AFTER=30 FIXED=100
export SERENE_TIMEOUT_MS=10000

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init ctl-dynamic
HARNESS_LOGS=(ctl.log ctl.err switch.log)
HARNESS_TAIL=15

start_switch 127.0.0.1:0 --job "0:$N,store=64,policy=bsp" || fail "serene-switch exited at startup"

# Monitoring before the job runs, and the unknown-job message.
line=$("$CTL" status --control "$ctl" --job 0) || fail "serene-ctl status failed"
echo "status: $line"
json=$("$CTL" status --control "$ctl" --job 0 --json) || fail "serene-ctl status --json failed"
echo "json: $json"
case $json in *'"high": 4294967295'*'"mode": "bsp"'*'"rules": [{"from": 0, "to": null'*) ;;
    *) fail "unexpected JSON status" ;; esac
err=$("$CTL" status --control "$ctl" --job 9 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 2 ] && [ "$err" = "serene-ctl: unknown job 9: the switch at $ctl has jobs: 0" ] ||
    fail "unknown job: exit $rc, message '$err'"

# The straggler holds the others about 160 ms of its 200: a wait fraction
# near 0.8. Ranks that a busy machine schedules late hold the others some
# ms of their 40 (at load 10, a third of 20 ms: 0.62 over 10 clocks), far
# from 0.7 for 10 clocks in a row: over 90 ms late every clock.
cat >"$work/policy" <<POL
bsp
when wait_fraction > 0.7 for 10 clocks: staleness += 4 max 8
when clock >= $FIXED: bsp
stop at clock $CLOCKS
POL
spawn "$work/ctl.out" --stderr "$work/ctl.err" timeout -k 5 60 "$CTL" run --control "$ctl" \
    --job 0 "$work/policy" --interval 5 --duration 50 --log "$work/ctl.log"
ctlpid=$spawned

mkdir "$work/logs"
run_bounded 60 "$work/ranks.out" "$RUN" -n "$N" --switch "127.0.0.1:$port" --job 0 -- \
    "$WORKER" --clocks "$CLOCKS" --out "$work/logs" --compute-ms 40 --slow-rank 3 --slow-ms 200 \
    --slow-after "$SLOW_AFTER"
sed 's/^/    /' "$work/ranks.out"
[ "$rc" -eq 0 ] || fail "serene-run exited with $rc"
wait_pid "$ctlpid" 65
cat "$work/ctl.out"
grep -v '^job 0: low' "$work/ctl.err" | sed 's/^/    /'
[ "$rc" -eq 0 ] || fail "serene-ctl run exited with $rc"
echo "---- decisions:"
sed 's/^/    /' "$work/ctl.log"

# The controller's reactive decisions: clock, new policy, effective clock.
mapfile -t dec < <(sed -n 's/^kind=reactive clock=\([0-9-]*\) old=[^ ]* new=\([^ ]*\) from=[0-9]* effective=\([0-9]*\) .*/\1 \2 \3/p' "$work/ctl.log")
[ "${#dec[@]}" -ge 1 ] || fail "the controller never raised the staleness"
seq=bsp changes=""
for d in "${dec[@]}"; do
    read -r c pol e <<<"$d"
    [ "$c" -ge "$SLOW_AFTER" ] || fail "a reactive change at clock $c, before the straggler appeared at $SLOW_AFTER"
    seq="$seq,$pol" changes="$changes${changes:+,}$e"
done
read -r c1 pol1 e1 <<<"${dec[0]}"
case $pol1 in ssp:[1-9]*) ;; *) fail "the first change ($pol1) did not raise the staleness" ;; esac
[ "${seq##*,}" = bsp ] || { seq="$seq,bsp" changes="$changes,$FIXED"; }
echo "policy sequence $seq at clocks $changes"

# Fast ranks' mean wait per clock just before vs just after the first raise.
s1=${pol1#ssp:}
after=$((s1 < 4 ? s1 : 4))
waits=$(awk -F, -v e="$e1" -v a="$after" '
    FNR > 1 && $1 ~ /^[0-9]+$/ {
        w = ($3 - $2) / 1e6
        if ($1 >= e - 5 && $1 < e) { b += w; nb++ }
        if ($1 >= e && $1 < e + a) { f += w; nf++ }
    }
    END { if (nb && nf) printf "%.3f %.3f\n", b / nb, f / nf }' \
    "$work/logs/rank0.csv" "$work/logs/rank1.csv" "$work/logs/rank2.csv")
read -r before after_ms <<<"$waits"
[ -n "${after_ms:-}" ] || fail "no clocks around the raise at $e1"
echo "fast ranks' mean wait per clock: ${before} ms in the 5 clocks before clock $e1, ${after_ms} ms in the $after after"
awk -v b="$before" -v a="$after_ms" 'BEGIN { exit !(a < b) }' ||
    fail "the fast ranks did not wait less after the raise (${after_ms} ms vs ${before} ms)"

# The last clocks under BSP, on every rank.
for r in $(seq 0 $((N - 1))); do
    bad=$(awk -F, -v f="$FIXED" 'FNR > 1 && $1 ~ /^[0-9]+$/ && $1 >= f && ($4 != "BSP" || $5 != 0) {
        print "clock " $1 " under " $4 "(" $5 ")"; exit }' "$work/logs/rank$r.csv")
    [ -z "$bad" ] || fail "rank $r ran $bad, at or after clock $FIXED"
done

# Consistency across ranks, the barrier, and the changes where logged.
timeout 20 "$CHECK" clocks "$work/logs" "$N" "$CLOCKS" --seq "$seq" --changes "$changes" \
    --fast 0,1,2 | sed 's/^/    /'
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "the ranks' decision logs disagree (see above)"
echo "PASS: ctl-dynamic"
