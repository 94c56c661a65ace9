#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# libserene-ctl.so must export only serene_ctl_* symbols (hidden visibility
# by default) and carry a versioned soname.
# usage: check_ctl_symbols.sh path/to/libserene-ctl.so
set -eu
lib=$1
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
bad=$(printf '%s\n' "$syms" | grep -v '^serene_ctl_' | grep -v '^$' || true)
if [ -n "$bad" ]; then
    echo "FAIL: libserene-ctl.so exports symbols outside serene_ctl_*:"
    printf '  %s\n' $bad
    exit 1
fi
for want in serene_ctl_policy_parse serene_ctl_emit serene_ctl_controller_step \
            serene_ctl_status_parse serene_ctl_sw_command serene_ctl_job_parse; do
    printf '%s\n' "$syms" | grep -qx "$want" || { echo "FAIL: $want is not exported"; exit 1; }
done
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
case "$soname" in
    libserene-ctl.so.[0-9]*) echo "ok: $(printf '%s\n' "$syms" | wc -l) symbols, all serene_ctl_*; soname $soname" ;;
    *) echo "FAIL: unexpected soname '$soname'"; exit 1 ;;
esac
