# SPDX-License-Identifier: Apache-2.0
# switch_lib.sh - start and stop a real serene-switch for the integration
# scripts (sourced, not run). The caller sets $SWITCH (the binary), $work (a
# temporary directory it owns) and a fail function; optionally NSX, a
# command prefix that runs the switch elsewhere (e.g. `ip netns exec NS`).
# The switch's output is appended to $work/switch.log. Processes are
# stopped by PID only.

# start_switch LISTEN ARGS...: serene-switch with a port file and a control
# socket in $work; sets swpid, port and ctl. Returns the switch's status
# (non-zero) if it exits at start-up; fails the test if it is not up within
# 10 s.
start_switch() {
    local listen=$1
    shift
    ctl=$work/ctl
    rm -f "$work/port" "$ctl"
    "${NSX[@]+"${NSX[@]}"}" "$SWITCH" --listen "$listen" --port-file "$work/port" --control "$ctl" "$@" \
        >>"$work/switch.log" 2>&1 &
    swpid=$!
    for _ in $(seq 200); do
        [ -s "$work/port" ] && [ -S "$ctl" ] && break
        if ! kill -0 "$swpid" 2>/dev/null; then
            wait "$swpid"
            local rc=$?
            swpid=""
            return "$((rc == 0 ? 1 : rc))"
        fi
        sleep 0.05
    done
    if ! [ -s "$work/port" ] || ! [ -S "$ctl" ]; then
        fail "serene-switch wrote no port file or control socket in 10 s"
    fi
    port=$(cat "$work/port")
    echo "serene-switch pid $swpid on ${listen%:*}:$port: $*"
}

# stop_switch: SIGTERM (it prints its counters), SIGKILL after 5 s; reaps it.
stop_switch() {
    [ -n "$swpid" ] || return 0
    kill -TERM "$swpid" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$swpid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$swpid" 2>/dev/null; then
        echo "serene-switch ignored SIGTERM for 5 s; SIGKILL"
        kill -KILL "$swpid" 2>/dev/null
    fi
    wait "$swpid" 2>/dev/null
    swpid=""
}
