# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # worst: set by fabric.sh's wait_all
# fabric_bmv2.sh - bench/fabric.sh --switch bmv2 (sourced by fabric.sh):
# p4/README.md's manual BMv2 recipe as one step on the rack. simple_switch
# runs p4/serene.p4 in the switch's namespace with link R's end hR as port
# R + 1; serene-ctl compiles the job (N workers at their host addresses,
# job 3, store 2048, ring 8) and a BSP policy into simple_switch_CLI
# commands; bench/bmv2_rate.py measures what it serves (allreduce rounds
# from every host at once) and its round trip; then N ar_worker ranks (allreduces of 1
# to 4097 values, checked against the bound, --pace at that rate; then the
# same on 16-bit values), N stale_worker ranks (the stream mode, 8 clocks,
# every sum exact) and N ssp_worker ranks (pushes and pulls, exact) run
# through it, one per host namespace, on the links as fabric.sh shaped them
# (--rates 0: unshaped). Last, a second job is added beside the first with
# p4/bmv2_job.sh, serves a store run and is removed, twice (bmv2_live).
# The line per rank splits the packets it sent into first sends, resends
# and probes; more than twice its first sends, or a call over 3x what the
# measured rate and round trip allow it, fails the run: BMv2 serves a
# few thousand packets per second, and a sender that does not follow that
# rate shows up as resends and probes.
#
# Uses from fabric.sh: ROOT BUILD OUT WORK CASE_TIMEOUT, fab_* (fabric_net.sh).

BMV2_JOB=3 BMV2_ELEMS=32 BMV2_THRIFT=9090 BMV2_LIVE_JOB=2 BMV2_LIVE_TOKEN=5e4e2

# bmv2_job_conf JOB N PORT0 [TOKEN]: the job file of job JOB, N ranks,
# rank R at its host's address and UDP port PORT0 + R (store 2048, ring 8).
bmv2_job_conf() {
    local r
    echo "job = $1"
    echo "workers = $2"
    echo "store = 2048"
    echo "ring = 8"
    [ -n "${4:-}" ] && echo "token = $4"
    for r in $(seq 0 $(($2 - 1))); do echo "worker.$r = $(fab_host_ip "$r"):$(($3 + r))"; done
}

# bmv2_setup N: compile the program (once) and the job's commands.
bmv2_setup() {
    local n=$1 p4c=${P4C_BM2_SS:-p4c-bm2-ss}
    if [ ! -s "$WORK/serene.json" ]; then
        "$p4c" --std p4-16 -o "$WORK/serene.json" "$ROOT/p4/serene.p4" >"$OUT/logs/p4c.log" 2>&1 ||
            { echo "fabric: p4c-bm2-ss failed (logs/p4c.log)" >&2; return 1; }
    fi
    bmv2_job_conf $BMV2_JOB "$n" 47000 >"$WORK/bmv2-job.conf"
    echo bsp >"$WORK/bmv2-policy.conf"
    "$BUILD/lib/ctl/serene-ctl" compile --target bmv2 --job-file "$WORK/bmv2-job.conf" \
        "$WORK/bmv2-policy.conf" >"$WORK/bmv2-cmds.txt" || { echo "fabric: serene-ctl compile failed" >&2; return 1; }
}

# bmv2_start N: simple_switch on h0..h(N-1), configured; sets bmv2_pid.
bmv2_start() {
    local n=$1 r ifs=() ss=${SIMPLE_SWITCH:-simple_switch} cli=${SIMPLE_SWITCH_CLI:-simple_switch_CLI}
    for r in $(seq 0 $((n - 1))); do ifs+=(-i "$((r + 1))@h$r"); done
    # Its own notifications socket (the default is one file for the machine).
    fab_spawn "$OUT/logs/bmv2-n$n.switch.log" "$(fab_ns_sw)" "$ss" --thrift-port $BMV2_THRIFT \
        --notifications-addr "ipc://$WORK/bmv2-notify.ipc" \
        "${ifs[@]}" "$WORK/serene.json"
    bmv2_pid=$FAB_SPAWNED
    # The CLI retries until the switch listens (at most 60 s: a loaded
    # machine starts both slowly).
    "$ROOT/p4/bmv2_configure.sh" "$OUT/logs/bmv2-n$n.cli.log" "$WORK/bmv2-cmds.txt" "$bmv2_pid" 60 \
        ip netns exec "$(fab_ns_sw)" "$cli" --thrift-port $BMV2_THRIFT && return 0
    echo "fabric: could not configure simple_switch (logs/bmv2-n$n.cli.log)" >&2
    return 1
}

# bmv2_spawn TAG N JOB PORT0 PROGRAM ARGS...: one rank per host against
# BMv2, rank R of job JOB from UDP port PORT0 + R, a run of its own (a
# fresh nonce: the job's next incarnation); sets spawned (their pids).
bmv2_spawn() {
    local tag=$1 n=$2 job=$3 port0=$4 r nonce=$(((RANDOM << 15 | RANDOM) + 1))
    shift 4
    spawned=()
    for r in $(seq 0 $((n - 1))); do
        fab_spawn "$OUT/logs/$tag.r$r.log" "$(fab_ns "$r")" env SERENE_RANK="$r" SERENE_WORLD_SIZE="$n" \
            SERENE_JOB="$job" SERENE_SWITCH="$FAB_SWITCH_IP:48200" SERENE_JOB_NONCE=$nonce \
            SERENE_BIND="$(fab_host_ip "$r"):$((port0 + r))" SERENE_TIMEOUT_MS=60000 \
            timeout -k 5 "$CASE_TIMEOUT" "$@"
        spawned+=("$FAB_SPAWNED")
    done
}

# bmv2_ranks TAG N PROGRAM ARGS...: the job's ranks, to the end; sets worst.
bmv2_ranks() {
    local tag=$1 n=$2
    shift 2
    bmv2_spawn "$tag" "$n" $BMV2_JOB 47000 "$@"
    wait_all $((CASE_TIMEOUT + 10)) "${spawned[@]}"
}

# bmv2_report TAG N MS: each rank's packets sent split into first sends,
# packets resent in full and header-only probes (a probe is no first send),
# and what the switch moved: the ranks' packets sent plus received over
# the run's wall time (ranks start and end together). Fails when a rank
# sent more than twice its first sends (what its data needs).
bmv2_report() {
    local tag=$1 n=$2 ms=$3 r
    for r in $(seq 0 $((n - 1))); do
        # "... sent S recv R retrans T ... probes P ...": the last such line
        awk '/ sent [0-9]+ recv [0-9]+ retrans [0-9]+/ {
                s = r = t = p = 0
                for (i = 1; i < NF; i++) {
                    if ($i == "sent") s = $(i + 1); else if ($i == "recv") r = $(i + 1)
                    else if ($i == "retrans") t = $(i + 1); else if ($i == "probes") p = $(i + 1)
                }
                last = s " " t " " p " " r }
             END { if (last != "") print last }' "$OUT/logs/$tag.r$r.log"
    done | awk -v t="$tag" -v s="$ms" -v n="$n" '
        { first = $1 - $2 - $3
          printf "  %s rank %d: sent %d packets: %d first sends, %d resent, %d probes; %.2f per first send\n",
                 t, NR - 1, $1, first, $2, $3, (first > 0 ? $1 / first : 0); io += $1 + $4
          if (first <= 0 || $1 > 2 * first) bad++ }
        END { if (s > 0) printf "  %s: %d packets through the switch in %.2f s (%.0f/s)\n", t, io, s / 1000, io * 1000 / s
              if (NR < n || bad) { printf "  %s: %d of %d ranks sent more than twice their first sends\n", t, bad + n - NR, n; exit 1 } }' |
        tee -a "$OUT/bmv2.txt"
    return "${PIPESTATUS[1]}"
}

# bmv2_tables: the switch's entry counts and multicast groups, one line.
bmv2_tables() {
    local t cli=${SIMPLE_SWITCH_CLI:-simple_switch_CLI}
    for t in job_table worker_table rank_table policy_table; do echo "table_num_entries $t"; done |
        { cat; echo mc_dump; } | ip netns exec "$(fab_ns_sw)" "$cli" --thrift-port $BMV2_THRIFT 2>&1 |
        sed -n 's/^RuntimeCmd: \([0-9][0-9]*\)$/\1/p; s/^\(mgrp([0-9]*)\)$/\1/p' | paste -sd' '
}

# bmv2_live N RATE: jobs come and go on the running switch. While job
# BMV2_JOB runs allreduces, job BMV2_LIVE_JOB (its own register block,
# admission token, worker ports 47100 + R) is added with p4/bmv2_job.sh,
# serves a store run, and is removed: the tables and groups are as before
# and its block is clean, so it is added and serves a run a second time.
# Job BMV2_JOB must still be running at each removal, and stay exact.
bmv2_live() {
    local n=$1 rate=$2 tag=bmv2-live-n$n-r$rate st=0 main k before after p
    local job=bmv2-live-job.conf state=$WORK/bmv2-live.state
    bmv2_job_conf $BMV2_LIVE_JOB "$n" 47100 $BMV2_LIVE_TOKEN >"$WORK/$job"
    before=$(bmv2_tables)
    bmv2_spawn "$tag-main" "$n" $BMV2_JOB 47000 "$BUILD/tests/integ/ar_worker" --elems $BMV2_ELEMS \
        --sizes 1000,4097 --reps 40
    main=("${spawned[@]}")
    for k in 1 2; do
        ip netns exec "$(fab_ns_sw)" "$ROOT/p4/bmv2_job.sh" add --thrift-port $BMV2_THRIFT \
            --job-file "$WORK/$job" --state "$state" --ctl "$BUILD/lib/ctl/serene-ctl" >>"$OUT/logs/$tag.log" 2>&1 ||
            { echo "  $tag: bmv2_job.sh add failed (logs/$tag.log)" | tee -a "$OUT/bmv2.txt"; st=1; break; }
        bmv2_spawn "$tag-$k" "$n" $BMV2_LIVE_JOB 47100 env SERENE_JOB_TOKEN=$BMV2_LIVE_TOKEN \
            "$BUILD/tests/integ/ssp_worker" store --iters 5 --offset 100 --count 1000 --capacity 2048
        wait_all $((CASE_TIMEOUT + 10)) "${spawned[@]}"
        [ "$worst" -eq 0 ] || { st=1; echo "  $tag-$k: a rank of job $BMV2_LIVE_JOB failed (status $worst)" | tee -a "$OUT/bmv2.txt"; }
        for p in "${main[@]}"; do
            kill -0 "$p" 2>/dev/null ||
                { st=1; echo "  $tag: job $BMV2_JOB's run ended before job $BMV2_LIVE_JOB's removal $k" | tee -a "$OUT/bmv2.txt"; break; }
        done
        ip netns exec "$(fab_ns_sw)" "$ROOT/p4/bmv2_job.sh" remove --thrift-port $BMV2_THRIFT \
            --state "$state" >>"$OUT/logs/$tag.log" 2>&1 ||
            { echo "  $tag: bmv2_job.sh remove failed (logs/$tag.log)" | tee -a "$OUT/bmv2.txt"; st=1; break; }
        after=$(bmv2_tables)
        [ "$after" = "$before" ] ||
            { st=1; echo "  $tag: after removal $k the switch has [$after], before [$before]" | tee -a "$OUT/bmv2.txt"; }
    done
    wait_all $((CASE_TIMEOUT + 10)) "${main[@]}"
    [ "$worst" -eq 0 ] || { st=1; echo "  $tag: a rank of job $BMV2_JOB failed (status $worst)" | tee -a "$OUT/bmv2.txt"; }
    "$ROOT/p4/bmv2_job.sh" check-json "$WORK/serene.json" >>"$OUT/logs/$tag.log" 2>&1 ||
        { st=1; echo "  $tag: p4/bmv2_job.sh does not clear every register (logs/$tag.log)" | tee -a "$OUT/bmv2.txt"; }
    echo "  $tag: job $BMV2_LIVE_JOB added, run exact, removed twice beside job $BMV2_JOB's run;" \
        "tables and groups [$after] as before: $([ $st = 0 ] && echo ok || echo FAILED)" | tee -a "$OUT/bmv2.txt"
    return $st
}

# bmv2_rate N: BMv2's packet rate (in and out together) for allreduce
# rounds under a full queue, every host running the same rounds at once
# (bench/bmv2_rate.py, 16 slots per host), and its round trip with an
# empty queue (the hosts' median); sets bmv2_pps (0 when it failed) and
# bmv2_rtt_us.
bmv2_rate() {
    local n=$1 r pids=() sum=0 line rtts=() nonce=$(((RANDOM << 15 | RANDOM) + 1))
    for r in $(seq 0 $((n - 1))); do
        fab_spawn "$OUT/logs/bmv2-rate.r$r.log" "$(fab_ns "$r")" timeout -k 5 30 python3 \
            "$ROOT/bench/bmv2_rate.py" --bind "$(fab_host_ip "$r"):$((47000 + r))" \
            --to "$FAB_SWITCH_IP:48200" --job $BMV2_JOB --worker "$r" --nonce "$nonce" --seconds 2 --window 16
        pids+=("$FAB_SPAWNED")
    done
    wait_all 40 "${pids[@]}"
    for r in $(seq 0 $((n - 1))); do
        line=$(grep -o '[0-9]* packets/s' "$OUT/logs/bmv2-rate.r$r.log")
        line=${line%% *}
        sum=$((sum + ${line:-0}))
        line=$(grep -o 'rtt [0-9]* us' "$OUT/logs/bmv2-rate.r$r.log")
        line=${line#rtt }
        rtts+=("${line%% *}")
    done
    bmv2_pps=$sum
    bmv2_rtt_us=$(printf '%s\n' "${rtts[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] + 0 }')
    echo "  BMv2 serves $bmv2_pps packets/s of allreduce rounds ($n hosts at once, in and out counted);" \
        "round trip $bmv2_rtt_us us with an empty queue" | tee -a "$OUT/bmv2.txt"
    [ "$bmv2_pps" -gt 0 ]
}

# bmv2_run N RATE: the allreduce and store checks through BMv2.
bmv2_run() {
    local n=$1 rate=$2 tag st=0 t0=$SECONDS t1
    [ -x "$BUILD/tests/integ/ar_worker" ] && [ -x "$BUILD/tests/integ/ssp_worker" ] ||
        { echo "fabric: --switch bmv2 needs the tests built (ar_worker, ssp_worker)" >&2; return 1; }
    bmv2_setup "$n" && bmv2_start "$n" || return 1
    tag=bmv2-ar-n$n-r$rate
    echo "== BMv2, N=$n, links $rate Mbit/s: allreduce (ar_worker) and store (ssp_worker)" | tee -a "$OUT/bmv2.txt"
    bmv2_rate "$n" || { echo "  bmv2_rate: no answer (logs/bmv2-rate.*)" | tee -a "$OUT/bmv2.txt"; st=1; }
    t1=$(date +%s%3N)
    # ar_worker --pace: at most 2x the packets the data needs, and no call
    # over 3x what BMv2's rate and round trip allow it (SERENE_PACE_STRICT,
    # 1 unless set: the tests set 0, the time being a speed target)
    bmv2_ranks "$tag" "$n" env SERENE_PACE_STRICT="${SERENE_PACE_STRICT:-1}" "$BUILD/tests/integ/ar_worker" --elems $BMV2_ELEMS \
        --sizes 1,31,32,33,255,1024,4097 --reps 2 --pace "$((bmv2_pps > 0 ? bmv2_pps : 1000))" \
        --pace-rtt-us "${bmv2_rtt_us:-0}"
    [ "$worst" -eq 0 ] || { st=1; echo "  $tag: a rank failed (status $worst; logs/$tag.*)" | tee -a "$OUT/bmv2.txt"; }
    grep -h ' pace [0-9]*/s: ' "$OUT"/logs/"$tag".r*.log | sed 's/^/  /' | tee -a "$OUT/bmv2.txt"
    bmv2_report "$tag" "$n" $(($(date +%s%3N) - t1)) || st=1
    # 16-bit values (SERENE_WIRE16): the same sizes and those about a
    # packet of 16-bit values (64, two a word), within their bound.
    tag=bmv2-ar16-n$n-r$rate
    t1=$(date +%s%3N)
    bmv2_ranks "$tag" "$n" "$BUILD/tests/integ/ar_worker" --elems $BMV2_ELEMS \
        --sizes 1,31,32,33,63,64,65,255,1024,4097 --reps 2 --wire16
    [ "$worst" -eq 0 ] || { st=1; echo "  $tag: a rank failed (status $worst; logs/$tag.*)" | tee -a "$OUT/bmv2.txt"; }
    bmv2_report "$tag" "$n" $(($(date +%s%3N) - t1)) || st=1
    # The stream mode (SSP over the streaming allreduce, stale_worker): every
    # clock's sum exact on every rank, so the replicas are identical.
    if [ -x "$BUILD/tests/integ/stale_worker" ]; then
        tag=bmv2-stream-n$n-r$rate
        t1=$(date +%s%3N)
        bmv2_ranks "$tag" "$n" "$BUILD/tests/integ/stale_worker" --count 4097 --clocks 8 --wire16 \
            --slow-rank 1 --slow-ms 50
        [ "$worst" -eq 0 ] || { st=1; echo "  $tag: a rank failed (status $worst; logs/$tag.*)" | tee -a "$OUT/bmv2.txt"; }
        grep -h 'clocks of' "$OUT"/logs/"$tag".r*.log | sed 's/^/  /' | tee -a "$OUT/bmv2.txt"
    fi
    tag=bmv2-store-n$n-r$rate
    t1=$(date +%s%3N)
    bmv2_ranks "$tag" "$n" "$BUILD/tests/integ/ssp_worker" store --iters 5 --offset 100 --count 1000 --capacity 2048
    [ "$worst" -eq 0 ] || { st=1; echo "  $tag: a rank failed (status $worst; logs/$tag.*)" | tee -a "$OUT/bmv2.txt"; }
    bmv2_report "$tag" "$n" $(($(date +%s%3N) - t1)) || st=1
    bmv2_live "$n" "$rate" || st=1
    fab_kill_list "$bmv2_pid"
    echo "  $((SECONDS - t0)) s; $([ $st = 0 ] && echo "allreduce (32- and 16-bit) within the bound, stream mode and store exact" || echo FAILED)" |
        tee -a "$OUT/bmv2.txt"
    return $st
}
