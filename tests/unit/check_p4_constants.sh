#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# check_p4_constants.sh - fail when p4/include/wire_constants.p4 is stale.
#
# The P4 program takes every wire constant from that file, and the file is
# generated from lib/proto/wire.h. A change to wire.h without regenerating
# would let the switch and the library disagree on the bytes, so the
# committed file must equal the generator's output exactly.
#
# Usage: check_p4_constants.sh <gen_p4_constants binary> <committed .p4 file>
# Exit: 0 when current, 1 when stale or the generator fails, 99 on bad usage
# (meson's "hard error", so a broken invocation is not read as a stale file).
set -u

if [ "$#" -ne 2 ]; then
    echo "usage: $0 <gen_p4_constants> <wire_constants.p4>" >&2
    exit 99
fi
gen=$1
committed=$2

tmp=$(mktemp "${TMPDIR:-/tmp}/wire_constants.XXXXXX") || exit 99
trap 'rm -f "$tmp"' EXIT

if ! "$gen" >"$tmp"; then
    echo "check_p4_constants: $gen failed (see above)" >&2
    exit 1
fi

if [ ! -f "$committed" ]; then
    echo "p4/include/wire_constants.p4 is missing: generate it with" >&2
    echo "    $gen > $committed" >&2
    exit 1
fi

if ! cmp -s "$committed" "$tmp"; then
    # Show what changed; diff may be absent on minimal systems, cmp is not.
    diff -u "$committed" "$tmp" 2>/dev/null || true
    echo "p4/include/wire_constants.p4 is stale: regenerate with" >&2
    echo "    $gen > $committed" >&2
    exit 1
fi
echo "p4/include/wire_constants.p4 is current"
exit 0
