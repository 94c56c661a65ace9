# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # worst: set by fabric.sh's wait_all
# fabric_bmv2.sh - bench/fabric.sh --switch bmv2 (sourced by fabric.sh):
# p4/README.md's manual BMv2 recipe as one step on the rack. simple_switch
# runs p4/serene.p4 in the switch's namespace with link R's end hR as port
# R + 1; serene-ctl compiles the job (N workers at their host addresses,
# job 3, store 2048, ring 8) and a BSP policy into simple_switch_CLI
# commands; then N ar_worker ranks (allreduces of 1 to 4097 values, checked
# against the bound) and N ssp_worker ranks (pushes and pulls, exact) run
# through it, one per host namespace, on the shaped links. The line per
# program compares the packets each rank sent with the first sends (sent -
# retransmitted): BMv2 forwards about 10^4 packets/s, so a window larger
# than that rate allows shows up as resends.
#
# Uses from fabric.sh: ROOT BUILD OUT WORK CASE_TIMEOUT, fab_* (fabric_net.sh).

BMV2_JOB=3 BMV2_ELEMS=32 BMV2_THRIFT=9090

# bmv2_setup N: compile the program (once) and the job's commands.
bmv2_setup() {
    local n=$1 r p4c=${P4C_BM2_SS:-p4c-bm2-ss}
    if [ ! -s "$WORK/serene.json" ]; then
        "$p4c" --std p4-16 -o "$WORK/serene.json" "$ROOT/p4/serene.p4" >"$OUT/logs/p4c.log" 2>&1 ||
            { echo "fabric: p4c-bm2-ss failed (logs/p4c.log)" >&2; return 1; }
    fi
    {
        echo "job = $BMV2_JOB"
        echo "workers = $n"
        echo "store = 2048"
        echo "ring = 8"
        for r in $(seq 0 $((n - 1))); do echo "worker.$r = $(fab_host_ip "$r"):$((47000 + r))"; done
    } >"$WORK/bmv2-job.conf"
    echo bsp >"$WORK/bmv2-policy.conf"
    "$BUILD/lib/ctl/serene-ctl" compile --target bmv2 --job-file "$WORK/bmv2-job.conf" \
        "$WORK/bmv2-policy.conf" >"$WORK/bmv2-cmds.txt" || { echo "fabric: serene-ctl compile failed" >&2; return 1; }
}

# bmv2_start N: simple_switch on h0..h(N-1), configured; sets bmv2_pid.
bmv2_start() {
    local n=$1 r ifs=() ss=${SIMPLE_SWITCH:-simple_switch} cli=${SIMPLE_SWITCH_CLI:-simple_switch_CLI}
    for r in $(seq 0 $((n - 1))); do ifs+=(-i "$((r + 1))@h$r"); done
    fab_spawn "$OUT/logs/bmv2-n$n.switch.log" "$(fab_ns_sw)" "$ss" --thrift-port $BMV2_THRIFT \
        "${ifs[@]}" "$WORK/serene.json"
    bmv2_pid=$FAB_SPAWNED
    # The CLI retries until the switch listens (bounded: 50 x 0.2 s).
    for _ in $(seq 50); do
        if ip netns exec "$(fab_ns_sw)" "$cli" --thrift-port $BMV2_THRIFT <"$WORK/bmv2-cmds.txt" \
            >"$OUT/logs/bmv2-n$n.cli.log" 2>&1 && ! grep -qi 'error\|invalid' "$OUT/logs/bmv2-n$n.cli.log"; then
            return 0
        fi
        kill -0 "$bmv2_pid" 2>/dev/null || break
        sleep 0.2
    done
    echo "fabric: could not configure simple_switch (logs/bmv2-n$n.cli.log)" >&2
    return 1
}

# bmv2_ranks TAG N PROGRAM ARGS...: one rank per host against BMv2, a run
# of its own (a fresh nonce: the job's next incarnation); sets worst.
bmv2_ranks() {
    local tag=$1 n=$2 r pids=() nonce=$(((RANDOM << 15 | RANDOM) + 1))
    shift 2
    for r in $(seq 0 $((n - 1))); do
        fab_spawn "$OUT/logs/$tag.r$r.log" "$(fab_ns "$r")" env SERENE_RANK="$r" SERENE_WORLD_SIZE="$n" \
            SERENE_JOB=$BMV2_JOB SERENE_SWITCH="$FAB_SWITCH_IP:48200" SERENE_JOB_NONCE=$nonce \
            SERENE_BIND="$(fab_host_ip "$r"):$((47000 + r))" SERENE_TIMEOUT_MS=60000 \
            timeout -k 5 "$CASE_TIMEOUT" "$@"
        pids+=("$FAB_SPAWNED")
    done
    wait_all $((CASE_TIMEOUT + 10)) "${pids[@]}"
}

# bmv2_report TAG N: each rank's packets sent against its first sends.
bmv2_report() {
    local tag=$1 n=$2 r
    for r in $(seq 0 $((n - 1))); do
        sed -n 's/.* sent \([0-9]*\) recv [0-9]* retrans \([0-9]*\).*/\1 \2/p' "$OUT/logs/$tag.r$r.log" | tail -1 |
            awk -v r="$r" -v t="$tag" '{ printf "  %s rank %s: sent %d packets, %d resent, %.2f per first send\n",
                t, r, $1, $2, ($1 > $2) ? $1 / ($1 - $2) : 0 }'
    done | tee -a "$OUT/bmv2.txt"
}

# bmv2_run N RATE: the allreduce and store checks through BMv2.
bmv2_run() {
    local n=$1 rate=$2 tag st=0 t0=$SECONDS
    [ -x "$BUILD/tests/integ/ar_worker" ] && [ -x "$BUILD/tests/integ/ssp_worker" ] ||
        { echo "fabric: --switch bmv2 needs the tests built (ar_worker, ssp_worker)" >&2; return 1; }
    bmv2_setup "$n" && bmv2_start "$n" || return 1
    tag=bmv2-ar-n$n-r$rate
    echo "== BMv2, N=$n, links $rate Mbit/s: allreduce (ar_worker) and store (ssp_worker)" | tee -a "$OUT/bmv2.txt"
    bmv2_ranks "$tag" "$n" "$BUILD/tests/integ/ar_worker" --elems $BMV2_ELEMS --sizes 1,31,33,1000,4097 --reps 2
    [ "$worst" -eq 0 ] || { st=1; echo "  $tag: a rank failed (status $worst; logs/$tag.*)" | tee -a "$OUT/bmv2.txt"; }
    bmv2_report "$tag" "$n"
    tag=bmv2-store-n$n-r$rate
    bmv2_ranks "$tag" "$n" "$BUILD/tests/integ/ssp_worker" store --iters 5 --offset 100 --count 1000 --capacity 2048
    [ "$worst" -eq 0 ] || { st=1; echo "  $tag: a rank failed (status $worst; logs/$tag.*)" | tee -a "$OUT/bmv2.txt"; }
    bmv2_report "$tag" "$n"
    fab_kill_list "$bmv2_pid"
    echo "  $((SECONDS - t0)) s; $([ $st = 0 ] && echo "allreduce within the bound and store exact" || echo FAILED)" |
        tee -a "$OUT/bmv2.txt"
    return $st
}
