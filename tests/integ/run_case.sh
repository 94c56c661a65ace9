#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Run one integration case under a hard time limit, check its exit status
# and, optionally, that its output holds given lines.
# usage: run_case.sh NAME EXPECTED_STATUS LIMIT_SEC [--grep PATTERN]... -- COMMAND...
#   EXPECTED_STATUS: a number, or "nonzero"
set -uo pipefail
name=$1 want=$2 limit=$3
shift 3
greps=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
        --grep) greps+=("$2"); shift 2 ;;
        *) echo "run_case: bad argument $1"; exit 2 ;;
    esac
done
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s%N)
timeout -k 5 "$limit" "$@" >"$out" 2>&1
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
elapsed=$((ms / 1000)).$(printf %03d $((ms % 1000)))
cat "$out"
echo "== $name: exit $rc after ${elapsed}s (limit ${limit}s)"
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "FAIL: $name hit the test's time limit: something hangs"
    exit 1
fi
if [ "$want" = nonzero ]; then
    [ $rc -ne 0 ] || { echo "FAIL: $name: expected a non-zero exit"; exit 1; }
elif [ $rc -ne "$want" ]; then
    echo "FAIL: $name: expected exit $want, got $rc"
    exit 1
fi
for g in "${greps[@]+"${greps[@]}"}"; do
    if ! grep -Eq -- "$g" "$out"; then
        echo "FAIL: $name: output lacks /$g/"
        exit 1
    fi
done
echo "PASS: $name"
