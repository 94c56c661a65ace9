#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# p4/tna through p4c's Tofino back end (Tofino 1, TNA): it must compile
# with no error and write tofino.bin, and the control-plane part of the
# bfrt.json it writes (tables, keys, actions, registers) must equal that
# of p4/tna/bfrt.json, the copy the contract test (conformance-contract-
# tofino) checks serene-ctl against in CI; then serene-ctl's script for the
# conformance job is checked against the fresh bfrt.json too. Prints the
# stages the compiler used and its resources per feature
# (tofino_resources.py: the table in p4/README.md), and checks that the
# ingress parser in the assembly matches EtherType 0x0800, the UDP port and
# the magic (parser_matches). Then, when the Tofino 2
# driver is there too ($P4C_TOFINO2, else p4c-tofino2 on PATH: `p4c
# --target tofino2 --arch t2na`), the same program for Tofino 2: no error,
# tofino2.bin, the same tables. Skipped (77) without the compiler:
# $P4C_TOFINO, else p4c-tofino on PATH (a wrapper for `p4c --target tofino
# --arch tna`, p4/tna/README.md). --update copies the fresh bfrt.json over
# the kept one. The program's IR after the compiler's front and mid end
# (--toJSON, reduced by p4/tna/exec/tna_ir.py) must equal
# p4/tna/exec/serene_tna.ir.json, the program the executed-program tests
# (tna-exec-*) run in CI; --update copies it too.
#   tofino_compile.sh SERENE_CTL SOURCE_ROOT [--update]
set -eu
[ $# -ge 2 ] || { echo "usage: $0 SERENE_CTL SOURCE_ROOT [--update]" >&2; exit 2; }
ctl=$1 root=$2 update=${3:-}
cc=${P4C_TOFINO:-p4c-tofino}
command -v "$cc" >/dev/null 2>&1 || { echo "SKIP: no $cc (p4c with ENABLE_TOFINO, p4/tna/README.md)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/serene-tofino.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
check=$root/tests/conformance/check_bfrt.py
# compile CC OUT BIN WHAT [FLAG]: p4/tna through CC into OUT, which must
# hold pipe/BIN; prints the stages (the log has a block per placement round:
# the last one is the program's) after WHAT.
compile() {
    mkdir -p "$2"
    if ! "$1" -g ${5:+"$5"} -I "$root/p4/tna" -I "$root/p4/include" -o "$2" \
        "$root/p4/tna/serene_tna.p4" >"$2.log" 2>&1; then
        grep -v ': warning' "$2.log" | tail -n 30 >&2
        echo "FAIL: $1 does not compile p4/tna/serene_tna.p4" >&2
        exit 1
    fi
    [ -s "$2/pipe/$3" ] || { echo "FAIL: no $3" >&2; exit 1; }
    grep 'Number of stages for' "$2/pipe/logs/table_summary.log" | tail -n 2 | sed "s/^ */$4: /"
    parser_matches "$2/pipe/serene_tna.bfa" "$4"
}
# parser_matches BFA WHAT: the ingress parser the assembler got must branch
# on the EtherType, the UDP port and the magic with the version: a p4c
# without the match-register fix (upstream PR #5753) drops every select's
# registers and leaves only "*" branches, a parser that takes any frame.
parser_matches() {
    wire=$root/lib/proto/wire.h
    port=$(sed -n 's/^#define SR_WIRE_UDP_PORT \([0-9]*\)u.*/\1/p' "$wire")
    magic=$(sed -n 's/^#define SR_WIRE_MAGIC 0x\([0-9a-fA-F]*\)u.*/\1/p' "$wire")
    version=$(sed -n 's/^#define SR_WIRE_VERSION \([0-9]*\)u.*/\1/p' "$wire")
    [ -n "$port" ] && [ -n "$magic" ] && [ -n "$version" ] || { echo "FAIL: constants not found in $wire" >&2; exit 1; }
    want="0x0800 $(printf '0x%04x 0x%s%02x' "$port" "$magic" "$version" | tr 'A-F' 'a-f')"
    got=$(awk '/^parser ingress:/ { f = 1; next } /^[^ ]/ { f = 0 } f' "$1" |
        sed -n 's/^ *\(0x[0-9a-fA-F]*\):.*/\1/p' | tr 'A-F' 'a-f')
    for v in $want; do
        printf '%s\n' "$got" | grep -qx "$v" || {
            echo "FAIL: $2: the ingress parser never matches $v (branches: $(printf '%s ' $got | head -c 200)); a p4c without PR #5753's parser fix? (p4/tna/README.md)" >&2
            exit 1
        }
    done
    echo "$2: the ingress parser matches EtherType, UDP port and magic+version ($want)"
}
compile "$cc" "$tmp/out" tofino.bin compiled "-Xp4c=--toJSON $tmp/ir.json"
python3 "$root/p4/tna/exec/tna_ir.py" "$tmp/ir.json" "$tmp/ir.lowered.json"
if ! cmp -s "$tmp/ir.lowered.json" "$root/p4/tna/exec/serene_tna.ir.json"; then
    if [ "$update" = --update ]; then
        cp "$tmp/ir.lowered.json" "$root/p4/tna/exec/serene_tna.ir.json"
        echo "updated p4/tna/exec/serene_tna.ir.json"
    else
        echo "FAIL: p4/tna/exec/serene_tna.ir.json is not the program's IR (rerun with --update)" >&2
        exit 1
    fi
fi
echo "compiled: the executed program's IR (p4/tna/exec/serene_tna.ir.json) is this program's"
# The resources per feature (the table p4/README.md shows).
python3 "$root/tests/conformance/tofino_resources.py" "$tmp/out"
python3 "$check" --extract "$tmp/out/bfrt.json" >"$tmp/fresh"
python3 "$check" --extract "$root/p4/tna/bfrt.json" >"$tmp/kept"
if ! cmp -s "$tmp/kept" "$tmp/fresh"; then
    if [ "$update" = --update ]; then
        cp "$tmp/out/bfrt.json" "$root/p4/tna/bfrt.json"
        echo "updated p4/tna/bfrt.json"
    else
        diff -u "$tmp/kept" "$tmp/fresh" | head -n 40 >&2
        echo "FAIL: p4/tna/bfrt.json is not what the program compiles to (rerun with --update)" >&2
        exit 1
    fi
fi
python3 "$check" "$ctl" "$root/p4/conformance/job.conf" "$root/p4/conformance/policy.conf" "$tmp/out/bfrt.json"
cc2=${P4C_TOFINO2:-p4c-tofino2}
if command -v "$cc2" >/dev/null 2>&1; then
    compile "$cc2" "$tmp/out2" tofino2.bin "compiled for Tofino 2"
    python3 "$check" --extract "$tmp/out2/bfrt.json" >"$tmp/fresh2"
    if ! cmp -s "$tmp/fresh" "$tmp/fresh2"; then
        diff -u "$tmp/fresh" "$tmp/fresh2" | head -n 40 >&2
        echo "FAIL: the Tofino 2 program's tables differ from Tofino 1's" >&2
        exit 1
    fi
else
    echo "no $cc2: Tofino 2 not compiled"
fi
