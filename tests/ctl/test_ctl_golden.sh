#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_ctl_golden.sh SERENE_CTL GOLDEN_DIR [--update] - golden tests of
# serene-ctl, compared byte for byte:
#   GOLDEN_DIR/CASE.policy + CASE.job -> CASE.rules (serene-ctl check),
#       CASE.sw, CASE.bmv2, CASE.bfrt (serene-ctl compile --target ...);
#   GOLDEN_DIR/tree*.job -> tree*.tree, and with schedule.policy
#       tree*.tree.bmv2 (serene-ctl tree --target sw, bmv2: each switch's setup);
#   GOLDEN_DIR/errors/NAME.args -> NAME.err: serene-ctl run with those
#       arguments inside errors/, its stderr then "exit STATUS".
# --update rewrites the expected files instead (review the diff!).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 SERENE_CTL GOLDEN_DIR [--update]" >&2; exit 2; }
CTL=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") DIR=$2 UPDATE=${3:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/serene-ctl-golden.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0

check() { # NAME EXPECTED ACTUAL
    n=$((n + 1))
    if [ "$UPDATE" = --update ]; then
        cp "$3" "$2"
    elif ! cmp -s "$2" "$3"; then
        echo "FAIL: $1 differs from $(basename "$2"):"
        diff -u "$2" "$3" | head -n 30
        fails=$((fails + 1))
    fi
}

cd "$DIR" || exit 1
for p in *.policy; do
    c=${p%.policy}
    (cd "$DIR" && "$CTL" check "$p") >"$tmp/$c.rules" 2>&1
    check "$c rules" "$c.rules" "$tmp/$c.rules"
    for t in sw:sw bmv2:bmv2 tofino:bfrt; do
        "$CTL" compile --target "${t%%:*}" --job-file "$c.job" "$p" >"$tmp/$c.${t#*:}" 2>&1
        check "$c ${t%%:*}" "$c.${t#*:}" "$tmp/$c.${t#*:}"
    done
done
for j in tree*.job; do
    "$CTL" tree --job-file "$j" >"$tmp/${j%.job}.tree" 2>&1
    check "${j%.job} tree" "${j%.job}.tree" "$tmp/${j%.job}.tree"
    "$CTL" tree --target bmv2 --job-file "$j" schedule.policy >"$tmp/${j%.job}.tree.bmv2" 2>&1
    check "${j%.job} tree bmv2" "${j%.job}.tree.bmv2" "$tmp/${j%.job}.tree.bmv2"
done
cd "$DIR/errors" || exit 1
for a in *.args; do
    e=${a%.args}
    read -r -a args <"$a"
    { "$CTL" "${args[@]}" 2>&1 >/dev/null; echo "exit $?"; } >"$tmp/$e.err"
    check "error case $e" "$e.err" "$tmp/$e.err"
done
if [ "$fails" -ne 0 ]; then
    echo "FAIL: $fails of $n golden comparisons"
    exit 1
fi
echo "PASS: $n golden comparisons"
