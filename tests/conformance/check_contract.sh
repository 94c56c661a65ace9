#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The BMv2 command file serene-ctl compiles and the v1model program must
# agree (CI cannot run p4c or simple_switch): every table, action and
# register the command file names is declared in p4/ under that global
# name, and every table_add passes as many action parameters as the action
# declares (range tables add a priority after them); a job's STEP_RESP
# mirror session (mirroring_add_mc S G) is the program's
# SR_P4_STEP_SESSION0 + job id mod SR_P4_MAX_JOBS, to the job's group; a
# shared job's fallback session (mirroring_add S P) is SR_P4_FB_SESSION0 +
# job id mod SR_P4_MAX_JOBS, to the port of its share_table entry.
# With `tree`, JOB is a tree: the command files of all its switches
# (serene-ctl tree --target bmv2), "# switch NAME" lines between them.
#   check_contract.sh SERENE_CTL JOB POLICY P4DIR [tree]
set -eu
[ $# -eq 4 ] || [ $# -eq 5 ] || { echo "usage: $0 SERENE_CTL JOB POLICY P4DIR [tree]" >&2; exit 2; }
ctl=$1 job=$2 policy=$3 p4=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "${5:-}" = tree ]; then
    "$ctl" tree --target bmv2 --job-file "$job" "$policy" | grep -v '^# switch ' >"$tmp/cmds"
else
    "$ctl" compile --target bmv2 --job-file "$job" "$policy" >"$tmp/cmds"
fi
# All P4 sources as one line per declaration-ish chunk.
cat "$p4"/serene.p4 "$p4"/include/*.p4 | tr '\n' ' ' >"$tmp/src"
status=0
fail() { echo "contract: $*" >&2; status=1; }
has() { grep -q -- "$1" "$tmp/src"; }
# Parameters of action $1: count of commas + 1 in its parameter list (0 if empty).
nparams() {
    sig=$(sed -n "s/.*@name(\"\\.$1\") action $1(\\([^)]*\\)).*/\\1/p" "$tmp/src")
    if [ -z "$(echo "$sig" | tr -d ' ')" ]; then echo 0; else echo "$sig" | awk -F, '{ print NF }'; fi
}
define() { sed -n "s/^#define $1 \([0-9]*\).*/\1/p" "$p4/include/constants.p4"; }
session0=$(define SR_P4_STEP_SESSION0) jobs=$(define SR_P4_MAX_JOBS) fb0=$(define SR_P4_FB_SESSION0)
[ -n "$session0" ] && [ -n "$jobs" ] && [ -n "$fb0" ] ||
    fail "no SR_P4_STEP_SESSION0 / SR_P4_MAX_JOBS / SR_P4_FB_SESSION0 in constants.p4"
# job, group and store words of every set_job (a tree's switches each have one).
sed -n 's/^table_add job_table set_job \([0-9]*\) => [^ ]* [^ ]* [^ ]* \([0-9]*\) \([0-9]*\) .*/\1 \3 \2/p' \
    "$tmp/cmds" >"$tmp/groups"
n=0
while read -r cmd a b rest; do
    case $cmd in
    table_add)
        has "@name(\"\\.$a\") table $a " || fail "no table $a"
        has "@name(\"\\.$b\") action $b(" || { fail "no action $b"; continue; }
        args=$(echo "$rest" | sed 's/.*=> *//' | wc -w)
        want=$(nparams "$b")
        range=$(echo "$rest" | sed 's/=>.*//' | grep -c -- '->' || true)
        [ "$range" -gt 0 ] && want=$((want + 1))
        [ "$args" -eq "$want" ] || fail "$a $b: $args values, the program wants $want"
        n=$((n + 1)) ;;
    register_write)
        has "@name(\"\\.$a\") register<" || fail "no register $a"
        n=$((n + 1)) ;;
    mirroring_add_mc)
        # A job with a store whose session and group match (a tree's
        # leaves' job has none).
        if ! awk -v s="$a" -v g="$b" -v s0="$session0" -v m="$jobs" \
            '$2 == g && s0 + $1 % m == s { ok = 1 } END { exit !ok }' "$tmp/groups"; then
            fail "mirroring_add_mc $a $b: no job with group $b and session $session0 + id mod $jobs"
        fi
        n=$((n + 1)) ;;
    mc_mgrp_create|mc_node_create|mc_node_associate|mirroring_add) ;;
    *) fail "unknown command $cmd" ;;
    esac
done <"$tmp/cmds"
# Every job with a store has its session.
while read -r j g st; do
    [ "$st" -eq 0 ] || grep -q "^mirroring_add_mc $((session0 + j % jobs)) $g\$" "$tmp/cmds" ||
        fail "job $j: no mirroring_add_mc $((session0 + j % jobs)) $g (its STEP_RESP session)"
done <"$tmp/groups"
# Every shared job has its fallback's session.
sed -n 's/^table_add share_table set_share \([0-9]*\) => [^ ]* [0-9]* \([0-9]*\) .*/\1 \2/p' \
    "$tmp/cmds" >"$tmp/shared"
while read -r j port; do
    grep -q "^mirroring_add $((fb0 + j % jobs)) $port\$" "$tmp/cmds" ||
        fail "job $j: no mirroring_add $((fb0 + j % jobs)) $port (its fallback session)"
    n=$((n + 1))
done <"$tmp/shared"
[ $status -eq 0 ] && echo "contract: $n table, register and session commands match p4/serene.p4"
exit $status
