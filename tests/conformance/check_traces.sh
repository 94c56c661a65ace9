#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerate the conformance traces from the scenarios into a temporary
# directory and require them byte for byte equal to the committed ones in
# p4/traces (the pcap files and the control steps, NAME.ctl), so the traces
# never drift from the software switch.
#   check_traces.sh SR_CONFORM TRACES_DIR JOB POLICY CONSTANTS
# Regenerate after a deliberate change with
#   SR_CONFORM gen JOB POLICY CONSTANTS p4/traces
set -eu
[ $# -eq 5 ] || { echo "usage: $0 SR_CONFORM TRACES_DIR JOB POLICY CONSTANTS" >&2; exit 2; }
tool=$1 traces=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tool" gen "$3" "$4" "$5" "$tmp" >/dev/null
status=0
for f in "$tmp"/*.pcap "$tmp"/*.ctl; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    if ! cmp -s "$f" "$traces/$name"; then
        echo "p4/traces/$name is stale: regenerate with: $tool gen $3 $4 $5 $traces" >&2
        status=1
    fi
done
# shellcheck disable=SC2012 # names the tool wrote
[ "$(ls "$traces" | grep -c '\.pcap$\|\.ctl$')" -eq "$(ls "$tmp" | grep -c '\.pcap$\|\.ctl$')" ] || {
    echo "p4/traces holds other pcap or ctl files than the scenarios make" >&2; status=1; }
[ $status -eq 0 ] && echo "traces current: $(ls "$tmp" | wc -l) files"
exit $status
