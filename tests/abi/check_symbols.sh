#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# libserene.so must export only serene_* symbols (hidden visibility by
# default; SERENE_API marks the public ones), and must export the API.
# usage: check_symbols.sh path/to/libserene.so
set -eu
lib=$1
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
bad=$(printf '%s\n' "$syms" | grep -v '^serene_' | grep -v '^$' || true)
if [ -n "$bad" ]; then
    echo "FAIL: libserene.so exports symbols outside serene_*:"
    printf '  %s\n' $bad
    exit 1
fi
for want in serene_ctx_create serene_ctx_destroy serene_allreduce serene_allreduce_start \
            serene_op_wait serene_op_test serene_strerror serene_err_name serene_version \
            serene_config_init serene_config_from_env serene_config_dump serene_get_stats; do
    if ! printf '%s\n' "$syms" | grep -qx "$want"; then
        echo "FAIL: libserene.so does not export $want"
        exit 1
    fi
done
echo "ok: $(printf '%s\n' "$syms" | wc -l) symbols, all serene_*"
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
case "$soname" in
    libserene.so.[0-9]*) echo "ok: soname $soname" ;;
    *) echo "FAIL: unexpected soname '$soname'"; exit 1 ;;
esac
