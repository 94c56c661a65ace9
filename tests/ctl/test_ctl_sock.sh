#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_ctl_sock.sh SERENE_SWITCH CTL_PROBE - serene-switch's control socket
# against a live switch (tests/ctl/ctl_probe.c is the client):
# - the socket file is created with mode 0600, or 0660 and its group with
#   --ctl-group; --ctl-group without --control, or an unknown group, is a
#   usage error;
# - 200 idle connections do not delay a `status` beyond 1 s;
# - a line of 256 bytes or more gets its error reply, also when its
#   newline comes in a second write after the switch has answered;
# - a peer of another uid is refused: by the file mode, and (with the mode
#   widened by hand) by the peer-credential check; a member of the
#   --ctl-group group is let in (needs root and setpriv, else skipped);
# - `policy J MODE from F`: F must lie within 2^30 clocks of low, in serial
#   arithmetic, either way;
# - `help` and --help list every command, reset included.
# Every command is bounded by `timeout`; only the switches started here are
# stopped, by PID (tests/common/harness.sh).
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 SERENE_SWITCH CTL_PROBE" >&2
    exit 2
fi
SWITCH=$1
PROBE=$2

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init ctl-sock

# probe ARGS...: ctl_probe under a 10 s bound; sets got (its output).
probe() {
    got=$(timeout -k 2 10 "$PROBE" "$@" 2>&1) || true
}
# as_uid UID GID GROUPS ARGS...: the probe copy in $work run as UID.
as_uid() {
    local uid=$1 gid=$2 groups=$3
    shift 3
    local g=(--clear-groups)
    [ -n "$groups" ] && g=(--groups "$groups")
    got=$(timeout -k 2 10 setpriv --reuid "$uid" --regid "$gid" "${g[@]}" "$work/probe" "$@" \
        2>&1) || true
}
expect() { # WHAT REGEX: $got must match
    grep -Eq -- "$2" <<<"$got" || fail "$1: got '$got', expected /$2/"
    echo "ok: $1: $got"
}

# ---- the command line and --help --------------------------------------------
help=$("$SWITCH" --help)
for word in jobs 'status JOB' 'reset JOB' 'policy JOB bsp\|asp\|ssp' help --ctl-group \
    'mode 0600'; do
    grep -q -- "$word" <<<"$help" || fail "--help does not mention '$word'"
done
echo "ok: --help lists jobs, status, reset, policy, help and --ctl-group"
rc=0
"$SWITCH" --job 0:1 --ctl-group 0 >"$work/usage.err" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "needs --control" "$work/usage.err" ||
    fail "--ctl-group without --control: exit $rc, $(cat "$work/usage.err")"
rc=0
"$SWITCH" --job 0:1 --control "$work/x" --ctl-group no-such-group-Zq9 >"$work/usage.err" 2>&1 ||
    rc=$?
[ "$rc" -eq 2 ] && grep -q "not a group name or gid" "$work/usage.err" ||
    fail "--ctl-group no-such-group: exit $rc, $(cat "$work/usage.err")"
echo "ok: --ctl-group usage errors exit 2"

# ---- mode 0600, many idle clients, long lines, the 'from' rule --------------------
start_switch 127.0.0.1:0 --job 0:2 --job 5:1
mode=$(stat -c '%a %u' "$ctl")
[ "$mode" = "600 $(id -u)" ] || fail "control socket mode and owner '$mode', expected '600 $(id -u)'"
echo "ok: control socket mode 0600, owned by uid $(id -u)"

probe idle "$ctl" 200 "status 0"
expect "200 idle connections, then status" '^connected=200 reply: ok job=0 workers=2 '
ms=$(sed -n 's/.* ms=\([0-9]*\)$/\1/p' <<<"$got")
[ -n "$ms" ] && [ "$ms" -lt 1000 ] || fail "status behind 200 idle connections took ${ms:-?} ms"
# More idle connections than the switch holds: each newcomer evicts the
# oldest, so the last one is served at once.
probe idle "$ctl" 300 "jobs"
expect "300 idle connections (more than the switch holds), then jobs" '^connected=300 reply: ok 0 5 '
ms=$(sed -n 's/.* ms=\([0-9]*\)$/\1/p' <<<"$got")
[ -n "$ms" ] && [ "$ms" -lt 1000 ] || fail "jobs behind 300 idle connections took ${ms:-?} ms"

probe send "$ctl" @255
expect "a 255-byte line" "^reply: error unknown command 'x{32}'"
for n in 256 257 300 5000; do
    probe send "$ctl" "@$n"
    expect "a $n-byte line, its newline sent after the reply" \
        '^reply: error command longer than 255 bytes$'
done
probe send "$ctl" "status 5"
expect "status after the long lines" '^reply: ok job=5 workers=1 '

# low is 4294967295 before clock 0 completes: from may be 2^30 either side.
probe send "$ctl" "policy 5 bsp from 1073741823"
expect "from = low + 2^30" '^reply: ok job=5 effective=1073741823$'
probe send "$ctl" "policy 5 bsp from 1073741824"
expect "from = low + 2^30 + 1" \
    '^reply: error from 1073741824 is more than 2\^30 clocks past low 4294967295$'
# Until the fix, low + 2^31 .. low + 2^32 - 2^30 - 1 were applied at once.
probe send "$ctl" "policy 5 bsp from 2147483646"
expect "from = low + 2^31 - 1" '^reply: error from 2147483646 is more than 2\^30 clocks past low'
probe send "$ctl" "policy 5 bsp from 2147483647"
expect "from = low + 2^31 (as int32: 2^31 before low)" \
    '^reply: error from 2147483647 is more than 2\^30 clocks before low 4294967295$'
probe send "$ctl" "policy 5 bsp from 2147483648"
expect "from = low + 2^31 + 1 (2^31 - 1 before low)" \
    '^reply: error from 2147483648 is more than 2\^30 clocks before low 4294967295$'
probe send "$ctl" "policy 5 bsp from 3221225470"
expect "from = low - 2^30 - 1" '^reply: error from 3221225470 is more than 2\^30 clocks before low'
probe send "$ctl" "policy 5 asp from 3221225471"
expect "from = low - 2^30: as soon as possible" '^reply: ok job=5 effective=0$'
probe send "$ctl" "help"
expect "help" '^reply: ok commands: jobs \| status JOB \| reset JOB \| policy JOB .* \| help$'

# ---- other uids ------------------------------------------------------------------
other_uids=0
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
    setpriv --reuid 65534 --regid 65534 --clear-groups true 2>/dev/null; then
    other_uids=1
fi
if [ "$other_uids" -eq 1 ]; then
    cp "$PROBE" "$work/probe"
    chmod 755 "$work/probe"
    chmod 711 "$work" # others may reach the socket; its own mode decides
    as_uid 65534 65534 "" send "$ctl" jobs
    expect "uid 65534, mode 0600" '^connect: Permission denied$'
    chmod 666 "$ctl" # past the file mode: the peer-credential check decides
    as_uid 65534 65534 "" send "$ctl" jobs
    expect "uid 65534, mode widened to 0666" \
        '^reply: error permission denied: uid 65534 may not use this control socket$'
    probe send "$ctl" jobs
    expect "our own uid, after the refusal" '^reply: ok 0 5$'
fi
stop_switch
grep -Eq 'ctl_too_long=4 ' "$work/switch.log" || fail "switch counters: ctl_too_long is not 4"
grep -Eq 'ctl_evicted=[1-9]' "$work/switch.log" || fail "switch counters: nothing evicted"
if [ "$other_uids" -eq 1 ]; then
    grep -Eq 'ctl_refused=1 ' "$work/switch.log" || fail "switch counters: ctl_refused is not 1"
fi
echo "ok: the switch counted 4 long lines, evictions and the refusals"

# ---- --ctl-group ------------------------------------------------------------------
if [ "$other_uids" -eq 0 ]; then
    echo "SKIP (in part): peers of other uids need root and setpriv"
    exit 0
fi
start_switch 127.0.0.1:0 --job 0:1 --ctl-group 65534
mode=$(stat -c '%a %g' "$ctl")
[ "$mode" = "660 65534" ] || fail "--ctl-group 65534: mode and group '$mode', expected '660 65534'"
echo "ok: --ctl-group 65534: mode 0660, group 65534"
as_uid 12345 12345 65534 send "$ctl" jobs
expect "uid 12345 with supplementary group 65534" '^reply: ok 0$'
as_uid 12345 65534 "" send "$ctl" jobs
expect "uid 12345 with primary group 65534" '^reply: ok 0$'
as_uid 12345 12345 "" send "$ctl" jobs
expect "uid 12345 outside the group" '^connect: Permission denied$'
chmod 666 "$ctl"
as_uid 12345 12345 "" send "$ctl" jobs
expect "uid 12345 outside the group, mode widened to 0666" \
    '^reply: error permission denied: uid 12345 may not use this control socket$'
stop_switch
echo "PASS: ctl-sock"
