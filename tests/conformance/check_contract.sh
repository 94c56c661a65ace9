#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The BMv2 command file serene-ctl compiles and the v1model program must
# agree (CI cannot run p4c or simple_switch): every table, action and
# register the command file names is declared in p4/ under that global
# name, and every table_add passes as many action parameters as the action
# declares (range tables add a priority after them).
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
    mc_mgrp_create|mc_node_create|mc_node_associate|mirroring_add) ;;
    *) fail "unknown command $cmd" ;;
    esac
done <"$tmp/cmds"
[ $status -eq 0 ] && echo "contract: $n table and register commands match p4/serene.p4"
exit $status
