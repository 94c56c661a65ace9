#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bmv2_configure.sh LOG CMDS PID SECONDS CLI [ARGS...] - configure a
# simple_switch that is starting: run `CLI ARGS < CMDS` (e.g.
# simple_switch_CLI --thrift-port P, or ip netns exec NS simple_switch_CLI
# ...) until it succeeds with no error in its output (LOG), while the
# switch (PID) lives, for at most SECONDS seconds: a loaded machine can take
# many seconds to start the switch and the CLI. Exit 0 when configured, 1
# when not (LOG has the CLI's last answer), 2 on bad usage.
[ $# -ge 5 ] || { echo "usage: $0 LOG CMDS PID SECONDS CLI [ARGS...]" >&2; exit 2; }
log=$1 cmds=$2 pid=$3 secs=$4
shift 4
case $secs in '' | *[!0-9]*) echo "$0: bad SECONDS '$secs'" >&2; exit 2 ;; esac
end=$(($(date +%s) + secs))
while :; do
    if "$@" <"$cmds" >"$log" 2>&1 && ! grep -qi 'error\|invalid' "$log"; then
        exit 0
    fi
    kill -0 "$pid" 2>/dev/null || { echo "(the switch, pid $pid, exited)" >>"$log"; exit 1; }
    [ "$(date +%s)" -lt "$end" ] || { echo "(not configured within $secs s)" >>"$log"; exit 1; }
    sleep 0.2
done
