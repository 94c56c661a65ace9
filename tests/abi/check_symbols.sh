#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A shared library of the project must export only symbols with its prefix
# (hidden visibility by default; SERENE_API / SERENE_CTL_API mark the
# public ones), must export its API, and must carry a versioned soname
# (libNAME.so.N, NAME taken from the library's file name).
# usage: check_symbols.sh path/to/libNAME.so PREFIX WANTED_SYMBOL...
set -eu
lib=$1
prefix=$2
shift 2
name=$(basename "$lib" | sed 's/\.so.*//')
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
bad=$(printf '%s\n' "$syms" | grep -v "^$prefix" | grep -v '^$' || true)
if [ -n "$bad" ]; then
    echo "FAIL: $name.so exports symbols outside $prefix*:"
    printf '  %s\n' $bad
    exit 1
fi
for want in "$@"; do
    if ! printf '%s\n' "$syms" | grep -qx "$want"; then
        echo "FAIL: $name.so does not export $want"
        exit 1
    fi
done
echo "ok: $(printf '%s\n' "$syms" | wc -l) symbols, all $prefix*"
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
case "$soname" in
    "$name".so.[0-9]*) echo "ok: soname $soname" ;;
    *) echo "FAIL: unexpected soname '$soname'"; exit 1 ;;
esac
