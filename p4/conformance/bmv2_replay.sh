#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The acceptance test of p4/serene.p4: compile it with p4c-bm2-ss, and for
# each conformance scenario start a fresh simple_switch on pcap files
# (--use-files), configure it with the commands serene-ctl compiles from
# p4/conformance/job.conf and policy.conf, replay the scenario's input
# frames on the workers' ports and compare what comes out of each port with
# the trace the software switch produced (sr-conform compare).
#
#   p4/conformance/bmv2_replay.sh BUILDDIR [SCENARIO...]
#
# BUILDDIR is a meson build directory of this repository (for sr-conform and
# serene-ctl). p4c-bm2-ss, simple_switch and simple_switch_CLI are taken
# from PATH, or from $P4C_BM2_SS, $SIMPLE_SWITCH and $SIMPLE_SWITCH_CLI.
# A scenario with control steps (traces/NAME.ctl: share-take) cannot run
# from files, which simple_switch reads all at once: it runs live, as root,
# on veth pairs in a network namespace of its own (bmv2_live.py sends each
# frame and the steps' commands between them); without root it is skipped.
# Work files go to a mktemp directory, kept (and named) when a check fails.
# Exit status: 0 every scenario agrees, 1 a difference, 2 a setup failure,
# 77 the BMv2 tools are missing.
set -u
[ $# -ge 1 ] || { echo "usage: $0 BUILDDIR [SCENARIO...]" >&2; exit 2; }
build=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
p4dir=$(dirname "$here")
scenarios=${*:-allreduce ssp incarnation roce step share share-take}
p4c=${P4C_BM2_SS:-p4c-bm2-ss}
ss=${SIMPLE_SWITCH:-simple_switch}
cli=${SIMPLE_SWITCH_CLI:-simple_switch_CLI}
conform=$build/p4/sr-conform
ctl=$build/lib/ctl/serene-ctl
common="$here/job.conf $here/policy.conf $p4dir/include/constants.p4"
policy=$here/policy.conf
waits="4 12 30"   # simple_switch --use-files: seconds before it reads the pcaps
step_s=0.02       # per input frame: ample (--use-files does not wait between frames)

for t in "$p4c" "$ss" "$cli"; do
    command -v "$t" >/dev/null 2>&1 || { echo "SKIP: $t not found" >&2; exit 77; }
done
[ -x "$conform" ] && [ -x "$ctl" ] || { echo "$build: no sr-conform or serene-ctl built" >&2; exit 2; }

tmp=$(mktemp -d)
ss_pid='' live_ns=''
cleanup() {
    [ -n "$ss_pid" ] && kill "$ss_pid" 2>/dev/null
    [ -n "$live_ns" ] && ip netns del "$live_ns" 2>/dev/null
}
trap cleanup EXIT INT TERM

echo "compiling $p4dir/serene.p4"
if ! "$p4c" --std p4-16 -o "$tmp/serene.json" "$p4dir/serene.p4" >"$tmp/p4c.log" 2>&1; then
    cat "$tmp/p4c.log" >&2
    echo "p4c-bm2-ss failed" >&2
    exit 2
fi
echo "compiled: $(grep -c 'warning' "$tmp/p4c.log") warnings (in $tmp/p4c.log while the run lasts)"

# live SCENARIO DIR PORTS: run the scenario on a live simple_switch (see
# above), in namespace $live_ns: its outputs in DIR/PORT_out.pcap, the
# switch left running (ss_pid). Returns 0, 77 (no root: skipped) or 2
# (setup failed).
live() {
    local sc=$1 d=$2 ports=$3 p ifs='' hosts=''
    if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
        echo "SKIP: $sc: its control steps need a live switch on veth pairs (root, ip)"
        return 77
    fi
    live_ns=srlive$$
    ip netns add "$live_ns" && ip -n "$live_ns" link set lo up || return 2
    # No IPv6 on the links: the kernel would send its own frames on them.
    ip netns exec "$live_ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
        net.ipv6.conf.default.disable_ipv6=1 || return 2
    for p in $ports; do
        ip -n "$live_ns" link add "swp$p" type veth peer name "hp$p" &&
            ip -n "$live_ns" link set "swp$p" up && ip -n "$live_ns" link set "hp$p" up || return 2
        ifs="$ifs -i $p@swp$p" hosts="$hosts $p=hp$p"
    done
    thrift=$port_base
    port_base=$((port_base + 1))
    # shellcheck disable=SC2086
    ip netns exec "$live_ns" "$ss" --thrift-port $thrift --log-file "$d/switch" --log-flush \
        --notifications-addr "ipc://$d/notify.ipc" $ifs "$tmp/serene.json" >"$d/switch.out" 2>&1 &
    ss_pid=$!
    "$p4dir/bmv2_configure.sh" "$d/cli.out" "$d/commands.txt" "$ss_pid" 30 \
        ip netns exec "$live_ns" "$cli" --thrift-port $thrift ||
        { echo "$sc: could not configure simple_switch (see $d/cli.out)" >&2; return 2; }
    # shellcheck disable=SC2086
    ip netns exec "$live_ns" python3 "$here/bmv2_live.py" "$d" "$p4dir/traces/$sc.ctl" \
        "$p4dir/traces/$sc.out.pcap" "$cli" --thrift-port $thrift -- $hosts || return 2
}

# replay_files SCENARIO DIR PORTS: simple_switch --use-files on DIR's
# PORT_in.pcap files: its outputs in DIR/PORT_out.pcap, the switch left
# running (ss_pid). Returns 0, or 2 (not configured in time).
replay_files() {
    local sc=$1 d=$2 ports=$3 p ifs='' n frames ok='' wait_s start last i now
    for p in $ports; do ifs="$ifs -i $p@$d/$p"; done
    n=$(wc -c <"$p4dir/traces/$sc.in.pcap")
    frames=$(awk "BEGIN { print int($n / 100) + 1 }")
    # The switch reads the pcaps wait_s seconds after it starts, and must be
    # configured by then: a loaded machine can take longer to start it and
    # the CLI, so a missed start is tried again with a longer wait (4, 12,
    # 30 s); only the configuration is retried, never the replay.
    ok=
    for wait_s in $waits; do
        thrift=$port_base
        port_base=$((port_base + 1))
        rm -f "$d"/*_out.pcap
        start=$(date +%s)
        # shellcheck disable=SC2086
        # Its own notifications socket: the default, /tmp/bmv2-0-notifications.ipc,
        # is one file for every simple_switch on the machine.
        "$ss" --use-files $wait_s --thrift-port $thrift --log-file "$d/switch" --log-flush \
            --notifications-addr "ipc://$d/notify.ipc" \
            $ifs "$tmp/serene.json" >"$d/switch.out" 2>&1 &
        ss_pid=$!
        if "$p4dir/bmv2_configure.sh" "$d/cli.out" "$d/commands.txt" "$ss_pid" $((wait_s - 1)) \
            "$cli" --thrift-port $thrift && [ $(($(date +%s) - start)) -lt $wait_s ]; then
            ok=1; break
        fi
        echo "$sc: simple_switch not configured within $wait_s s (see $d/cli.out)" >&2
        kill "$ss_pid" 2>/dev/null; wait "$ss_pid" 2>/dev/null; ss_pid=
    done
    if [ -z "$ok" ]; then
        echo "$sc: could not configure simple_switch in time" >&2
        return 2
    fi
    # Wait for the replay: wait_s, one step per frame (at most n/100 frames
    # of 100 bytes or more), and a margin; then until the output files
    # stop growing (at most 30 s more: a loaded machine is slower).
    sleep "$(awk "BEGIN { print $wait_s + $frames * $step_s + 2 }")"
    last='' i=0
    while [ $i -lt 60 ]; do
        now=$(cat "$d"/*_out.pcap 2>/dev/null | wc -c)
        [ "$now" = "$last" ] && break
        last=$now i=$((i + 1))
        sleep 0.5
    done
}

status=0 skipped=
port_base=$((20000 + $$ % 20000))
for sc in $scenarios; do
    d=$tmp/$sc
    mkdir -p "$d"
    # The scenario's job (its own, as share's, or job.conf's), compiled; a
    # port of it is each worker's and a shared job's fallback's: each has
    # a clone session of its number (mirroring_add P P).
    # shellcheck disable=SC2086
    job=$("$conform" job $common "$sc") || exit 2
    "$ctl" compile --target bmv2 --job-file "$job" "$policy" >"$d/commands.txt" || exit 2
    ports=$(sed -n 's/^mirroring_add \([0-9]*\) \1$/\1/p' "$d/commands.txt")
    if grep -q '^table_add share_table' "$d/commands.txt"; then
        ports="$ports $(sed -n 's/^table_add share_table set_share [0-9]* => [^ ]* [0-9]* \([0-9]*\) .*/\1/p' \
            "$d/commands.txt")"
    fi
    # shellcheck disable=SC2086
    "$conform" split $common "$sc" "$p4dir/traces" "$d" || exit 2
    run_in= # how the CLI reaches the switch: its namespace, if live
    if [ -f "$p4dir/traces/$sc.ctl" ]; then
        live "$sc" "$d" "$ports"
        rc=$?
        [ $rc -eq 77 ] && { skipped="$skipped $sc"; continue; }
        [ $rc -eq 0 ] || { status=2; break; }
        run_in="ip netns exec $live_ns"
    else
        replay_files "$sc" "$d" "$ports" || { status=2; break; }
    fi
    # What the scenario must leave in registers, where frames cannot show
    # it (NAME.regs: REGISTER INDEX VALUE lines; share's: the leased blocks).
    regs_bad=0
    if [ -f "$here/$sc.regs" ]; then
        grep -v '^#' "$here/$sc.regs" | while read -r reg idx want; do
            [ -n "$reg" ] || continue
            # shellcheck disable=SC2086
            got=$(echo "register_read $reg $idx" | $run_in "$cli" --thrift-port "$thrift" 2>&1 |
                sed -n "s/.*$reg\[$idx\] *= *\([0-9]*\).*/\1/p")
            if [ "$got" = "$want" ]; then
                echo "$sc: ${reg}[$idx] = $got"
            else
                echo "$sc: ${reg}[$idx] is '$got', want $want" >&2
                echo bad >"$d/regs_bad"
            fi
        done
        [ -f "$d/regs_bad" ] && regs_bad=1
    fi
    kill "$ss_pid" 2>/dev/null; wait "$ss_pid" 2>/dev/null; ss_pid=
    [ -n "$live_ns" ] && { ip netns del "$live_ns"; live_ns=; }
    # shellcheck disable=SC2086
    "$conform" compare $common "$sc" "$p4dir/traces" "$d"
    rc=$?
    [ $rc -eq 0 ] && [ $regs_bad -eq 1 ] && rc=1
    [ $rc -eq 0 ] || { [ $rc -eq 1 ] && status=1 || status=2; }
done
if [ $status -eq 0 ]; then
    echo "PASS: simple_switch reproduces the traces of: $scenarios${skipped:+ but$skipped (skipped)}"
    rm -rf "$tmp"
else
    echo "FAIL: work files kept in $tmp" >&2
fi
exit $status
