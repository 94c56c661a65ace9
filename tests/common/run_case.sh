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
# shellcheck source=harness.sh
. "$(dirname "$0")/harness.sh"
harness_init "$name"
HARNESS_LOGS=()
out=$work/out
run_bounded "$limit" "$out" "$@"
cat "$out"
echo "== $name: exit $rc after $((ms / 1000)).$(printf %03d $((ms % 1000)))s (limit ${limit}s)"
hung "$rc" && fail "hit the test's time limit: something hangs"
if [ "$want" = nonzero ]; then
    [ "$rc" -ne 0 ] || fail "expected a non-zero exit"
elif [ "$rc" -ne "$want" ]; then
    fail "expected exit $want, got $rc"
fi
for g in "${greps[@]+"${greps[@]}"}"; do
    grep -Eq -- "$g" "$out" || fail "output lacks /$g/"
done
echo "PASS: $name"
