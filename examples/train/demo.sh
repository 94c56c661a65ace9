#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# demo.sh - the main job: MLP 784-100-10 on MNIST with 4 workers and the
# paper's stragglers, once per synchronization policy, on the embedded
# software switch; prints a summary table and writes PNG plots.
#
#   examples/train/demo.sh [--build DIR] [--out DIR] [--data FILE]
#       [--policies LIST] [--seeds LIST] [--workers N] [--iters I]
#       [--batch B] [--lr LR] [--straggler SPEC] [--straggler-ranks LIST]
#       [--split iid|noniid:F] [--target-acc A] [--eval-every E] [--mean-iter-ms T]
#       [--t-ref clean|bsp-stragglers] [--timeout SEC] [--no-plots]
#       [--calibrate-only]
#
# Policies (comma list, default bsp,ssp10,stream10,asp,dynamic,allreduce):
#   bsp        the switch's barrier with staleness 0
#   sspS       SSP with staleness S (ssp10: the paper's s = 10)
#   streamS    the stream mode under the same policy (SSP(S); stream0 is
#              BSP): the model stays on the workers, each iteration's
#              gradient goes through the streaming allreduce, and a worker
#              applies every sum the switch's bound requires before its
#              next gradient (serene-train --mode stream)
#   asp        no barrier (bounded only by the switch's clock ring, 64)
#   dynamic    starts SSP(60) (nearly ASP); serene-ctl run lowers s to 10
#              once the clock spread stayed under 3 for 20 clocks (the
#              workers run together), raises it back to 60 when some
#              worker was held in over 20% of the samples of 2 clocks (one
#              11 clocks behind: a straggler), and returns to BSP for the last 10% of the
#              clocks, so the final model is everyone's (see README.md)
#   dynbsp     the earlier dynamic policy: starts BSP, raises the staleness
#              by 5 (at most 10) whenever workers were held in more than 30%
#              of the samples over 10 clocks, BSP for the last 10%
#   allreduce  no store: serene_allreduce of the gradients every iteration
# Straggler pattern (default slow:0.15:0.5:2, the paper's): see
# straggler.h. The delays scale with T, the mean iteration time without
# stragglers, measured first by a short BSP calibration run without
# stragglers (unless --mean-iter-ms gives it); every policy and seed then
# uses the same T, and seed k gives every policy the same slow iterations.
# --t-ref bsp-stragglers takes instead for T the mean iteration time of the
# straggling BSP job itself (a fixed point, measured: see README.md), one
# reading of the paper's "mean iteration time".
#
# Outputs in --out (default BUILD/train-demo): POLICY-sSEED/rank<R>.csv and
# .summary (see README.md next to this script), summary.csv (the runs),
# table.txt and table.md (the table, as printed and as markdown),
# accuracy.png (rank 0's test accuracy over time, per policy) and wait.png
# (each worker's cumulative wait), by gnuplot. Exit status: 0 done; 1 a run
# failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

build=$repo/build out="" data="" policies=bsp,ssp10,stream10,asp,dynamic,allreduce seeds=1
workers=4 iters=1000 batch=32 lr=0.05 straggler=slow:0.15:0.5:2 mean_ms="" t_ref=clean timeout=120 plots=1
strag_ranks="" split=iid target=0.91 calib_only=0 eval_every=
# usage [RC]: the header; --help to stdout with status 0, a usage error to stderr with 2.
usage() { sed -n '4,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&"$((${1:-2} ? 2 : 1))"; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --straggler) straggler=$2; shift 2 ;;
    --straggler-ranks) strag_ranks=$2; shift 2 ;;
    --split) split=$2; shift 2 ;;
    --target-acc) target=$2; shift 2 ;;
    --eval-every) eval_every=$2; shift 2 ;;
    --mean-iter-ms) mean_ms=$2; shift 2 ;;
    --t-ref) t_ref=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --no-plots) plots=0; shift ;;
    --calibrate-only) calib_only=1; shift ;;
    -h | --help) usage 0 ;;
    *) echo "demo.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
die() { echo "demo.sh: $*" >&2; exit 1; }
[[ $workers =~ ^[0-9]+$ ]] && [ "$workers" -ge 1 ] && [ "$workers" -le 64 ] || die "--workers: 1..64"
[[ $iters =~ ^[0-9]+$ ]] && [ "$iters" -ge 20 ] || die "--iters: a number >= 20"
[[ $timeout =~ ^[0-9]+$ ]] && [ "$timeout" -ge 1 ] || die "--timeout: seconds >= 1"
[[ $seeds =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--seeds: a comma list of numbers"
[[ $t_ref =~ ^(clean|bsp-stragglers)$ ]] || die "--t-ref: clean or bsp-stragglers"
[[ $split =~ ^(iid|noniid:(0|1|0?\.[0-9]+|1\.0*))$ ]] || die "--split: iid or noniid:F (0 <= F <= 1)"
[[ $target =~ ^(0?\.[0-9]+|1|1\.0*)$ ]] || die "--target-acc: an accuracy in (0, 1]"
[ -z "$strag_ranks" ] || [[ $strag_ranks =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--straggler-ranks: a comma list of ranks"
[ -z "$mean_ms" ] || [[ $mean_ms =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--mean-iter-ms: milliseconds"
IFS=, read -r -a pol_list <<<"$policies"
for p in "${pol_list[@]}"; do
    [[ $p =~ ^(bsp|asp|dynamic|dynbsp|allreduce|ssp[0-9]+|stream[0-9]+)$ ]] ||
        die "--policies: '$p' is not bsp, sspS, streamS, asp, dynamic, dynbsp or allreduce"
    if [[ $p =~ ^ssp([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -gt 62 ]; then
        die "--policies: $p: the switch's ring of 64 allows s <= 62"
    fi
done
TRAIN=$build/examples/train/serene-train RUN=$build/lib/launch/serene-run
SWITCH=$build/p4/swswitch/serene-switch CTL=$build/lib/ctl/serene-ctl
for b in "$TRAIN" "$RUN" "$SWITCH"; do
    [ -x "$b" ] || die "$b not found: build first (meson setup $build && ninja -C $build)"
done
case ,$policies, in *,dynamic,* | *,dynbsp,*) [ -x "$CTL" ] || die "$CTL not found (the dynamic policy needs serene-ctl)" ;; esac
if [ -z "$data" ]; then
    data=$("$here/fetch_data.sh" | tail -n1) || die "no data set (see the fetch_data.sh message)"
fi
[ -f "$data" ] || die "--data: $data not found"
[ -n "$out" ] || out=$build/train-demo
mkdir -p "$out"
out=$(cd "$out" && pwd)
tty=0
[ -t 1 ] && tty=1
# Offline accuracy snapshots: about 25 per run unless --eval-every.
[ -n "$eval_every" ] || eval_every=$(((iters + 24) / 25))
[[ $eval_every =~ ^[0-9]+$ ]] && [ "$eval_every" -ge 1 ] || die "--eval-every: iterations >= 1"

swpid="" ctlpid="" runpid=""
stop_pid() { # PID: SIGTERM, SIGKILL after 5 s, reap
    [ -n "$1" ] || return 0
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
cleanup() { stop_pid "$runpid"; stop_pid "$ctlpid"; stop_pid "$swpid"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_switch DIR POLICY: a serene-switch for one run, its control socket
# and port file in DIR; sets swpid and port.
start_switch() {
    local dir=$1 spec=$2
    rm -f "$dir/port" "$dir/ctl"
    "$SWITCH" --listen 127.0.0.1:0 --port-file "$dir/port" --control "$dir/ctl" \
        --job "0:$workers:2048,store=131072,ring=64,policy=$spec" >"$dir/switch.log" 2>&1 &
    swpid=$!
    for _ in $(seq 200); do
        [ -s "$dir/port" ] && [ -S "$dir/ctl" ] && break
        kill -0 "$swpid" 2>/dev/null || die "serene-switch exited at start (see $dir/switch.log)"
        sleep 0.05
    done
    [ -s "$dir/port" ] && [ -S "$dir/ctl" ] || die "serene-switch not up in 10 s"
    port=$(cat "$dir/port")
}

# run_one NAME POLICY SEED STRAGGLER T_MS [ITERS]: one training job; its
# files in $out/NAME. Shows one progress line.
run_one() {
    local name=$1 pol=$2 seed=$3 strag=$4 tms=$5 n=${6:-$iters}
    local dir=$out/$name spec=bsp mode=store
    rm -rf "$dir"
    mkdir -p "$dir"
    case $pol in
    bsp | dynbsp) spec=bsp ;;
    dynamic) spec=ssp:60 ;;
    asp) spec=asp ;;
    ssp*) spec=ssp:${pol#ssp} ;;
    stream*) mode=stream spec=$([ "${pol#stream}" = 0 ] && echo bsp || echo "ssp:${pol#stream}") ;;
    allreduce) mode=allreduce ;;
    esac
    start_switch "$dir" "$spec"
    if [ "$pol" = dynamic ]; then
        # Starts nearly asynchronous (s = 60, ASP's 62 less 2): nobody waits
        # for a straggler from clock 0 on. Once the clock spread stayed
        # under 3 for 20 clocks (the workers run together), s drops to 10,
        # which costs no waiting then and bounds how stale a late straggler's
        # updates get; a worker held in over 20% of the samples of 2 clocks
        # (one 11 or more clocks behind: a straggler, not the host's
        # jitter) puts s back to 60. BSP for the last 10% of the clocks: the
        # final model is then everyone's, not a lagging worker's alone
        # (with non-IID shards those last stale updates cost ASP 2-5 points).
        cat >"$dir/policy" <<EOF
ssp 60
when wait_fraction > 0.2 for 2 clocks: staleness += 50 max 60
when spread < 3 for 20 clocks: staleness -= 50 min 10
when clock >= $((n * 9 / 10)): bsp
stop at clock $n
EOF
    elif [ "$pol" = dynbsp ]; then
        cat >"$dir/policy" <<EOF
bsp
when wait_fraction > 0.3 for 10 clocks: staleness += 5 max 10
when clock >= $((n * 9 / 10)): bsp
stop at clock $n
EOF
    fi
    if [ -f "$dir/policy" ]; then
        "$CTL" run --control "$dir/ctl" --job 0 "$dir/policy" --interval 10 \
            --duration "$timeout" --log "$dir/ctl.log" >"$dir/ctl.out" 2>"$dir/ctl.err" &
        ctlpid=$!
    fi
    local targs=(--data "$data" --out "$dir" --mode "$mode" --iters "$n" --batch "$batch"
        --lr "$lr" --straggler "$strag" --seed "$seed" --eval-every "$eval_every"
        --train-eval 500 --test-eval 1000 --split "$split" --target-acc "$target")
    [ -n "$tms" ] && targs+=(--mean-iter-ms "$tms")
    [ -n "$strag_ranks" ] && [ "$strag" != none ] && targs+=(--straggler-ranks "$strag_ranks")
    local t0=$SECONDS
    SERENE_TIMEOUT_MS=20000 "$RUN" -n "$workers" --switch "127.0.0.1:$port" --timeout "$timeout" \
        -- "$TRAIN" "${targs[@]}" >"$dir/ranks.log" 2>&1 &
    runpid=$!
    local last="" shown=-1
    while kill -0 "$runpid" 2>/dev/null; do
        sleep 0.5
        local p
        p=$(grep -o 'progress [0-9]*' "$dir/ranks.log" 2>/dev/null | tail -n1 | cut -d' ' -f2) || true
        [ -n "$p" ] || p=0
        [ "$p" = "$last" ] && continue
        last=$p
        local el=$((SECONDS - t0)) eta="?"
        [ "$p" -gt 0 ] && eta=$((el * (n - p) / p))
        if [ "$tty" = 1 ]; then
            printf '\r  %-16s iteration %5d/%d  %3ds elapsed, eta %ss   ' "$name" "$p" "$n" "$el" "$eta"
        elif [ $((p * 4 / n)) -gt "$shown" ]; then
            shown=$((p * 4 / n))
            printf '  %-16s iteration %5d/%d  %3ds elapsed\n' "$name" "$p" "$n" "$el"
        fi
    done
    local rc=0
    wait "$runpid" || rc=$?
    runpid=""
    [ "$tty" = 1 ] && printf '\r%80s\r' ""
    if [ -n "$ctlpid" ]; then
        stop_pid "$ctlpid"
        ctlpid=""
    fi
    stop_pid "$swpid"
    swpid=""
    if [ "$rc" -ne 0 ]; then
        tail -n 20 "$dir/ranks.log" >&2
        die "$name: serene-run exited with $rc (logs in $dir)"
    fi
    for ((r = 0; r < workers; r++)); do
        [ -s "$dir/rank$r.summary" ] || die "$name: rank $r wrote no summary"
    done
    printf '  %-16s done in %ds\n' "$name" "$((SECONDS - t0))"
}

# Calibration: the mean iteration time without stragglers, under BSP.
if [ -z "$mean_ms" ]; then
    echo "calibration: $workers workers, BSP, no stragglers, 200 iterations"
    run_one calibrate bsp 1 none "" 200
    # iterations 21..200 (the first ones warm caches and sockets), all ranks
    mean_ms=$(awk -F, 'FNR == 21 { a = $2 } FNR == 201 { s += ($2 - a) * 1000 / 180; n++ }
        END { printf "%.3f", s / n }' "$out"/calibrate/rank*.csv)
fi
if [ "$t_ref" = bsp-stragglers ]; then
    # T as the mean iteration time of the straggling BSP job itself: with
    # delays scaled by T, BSP's iteration is b + a T (b: without
    # stragglers, measured above); one BSP run with delays scaled by b
    # measures a, and T = b + a T gives T = b / (1 - a).
    echo "without stragglers b = $mean_ms ms; T reference: BSP's own mean iteration time with"
    echo "stragglers, T = b + a T: measuring a"
    run_one calibrate-a bsp 1 "$straggler" "$mean_ms" 300
    mean_ms=$(awk -F, -v b="$mean_ms" 'FNR == 21 { t = $2 } FNR == 301 { m += ($2 - t) * 1000 / 280; n++ }
        END { m /= n; a = (m - b) / b; if (a >= 0.95 || a < 0) exit 1
              printf "%.3f", b / (1 - a) }' "$out"/calibrate-a/rank*.csv) ||
        die "the BSP slope is outside [0, 0.95): no fixed point for T"
    echo "mean iteration time T = $mean_ms ms (BSP's own, with stragglers)"
else
    echo "mean iteration time without stragglers T = $mean_ms ms"
fi
[ "$calib_only" = 0 ] || exit 0
echo "stragglers: $straggler"

IFS=, read -r -a seed_list <<<"$seeds"
for s in "${seed_list[@]}"; do
    for p in "${pol_list[@]}"; do
        run_one "$p-s$s" "$p" "$s" "$straggler" "$mean_ms"
    done
done

# ---- the table -------------------------------------------------------
# Per run: JCT = last rank's end - first rank's start (wall clock, the same
# host); wait = the ranks' cumulative waiting summed; accuracy = the final
# model's test accuracy (every rank pulls the same one); time to target =
# rank 0's first snapshot at or above the target.
summary=$out/summary.csv
echo "policy,seed,jct_s,wait_s,final_test_acc,time_to_target_s,iter_ms,straggles" >"$summary"
for s in "${seed_list[@]}"; do
    for p in "${pol_list[@]}"; do
        awk -F= -v pol="$p" -v seed="$s" -v iters="$iters" '
            $1 == "start_ns" { if (!st || $2 < st) st = $2 }
            $1 == "end_ns" { if ($2 > en) en = $2 }
            $1 == "cum_wait_s" { w += $2 }
            $1 == "final_test_acc" { if (FILENAME ~ /rank0\./) acc = $2 }
            $1 == "time_to_target_s" { if (FILENAME ~ /rank0\./) tta = $2 }
            $1 == "straggler" { strag = $2 }
            END { jct = (en - st) / 1e9
                  printf "%s,%s,%.3f,%.3f,%s,%s,%.3f,%s\n", pol, seed, jct, w, acc, tta,
                         jct * 1000 / iters, strag }' "$out/$p-s$s"/rank*.summary >>"$summary"
    done
done
echo
awk -F, '
    function median(list,    a, n, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    NR == 1 { next }
    { k = $1; if (!(k in n)) order[++np] = k; n[k]++
      jct[k] = jct[k] " " $3; w[k] = w[k] " " $4; acc[k] = acc[k] " " $5
      if ($6 < 0) miss[k]++; else tt[k] = tt[k] " " $6
      if (!(k in lo) || $3 < lo[k]) lo[k] = $3; if ($3 > hi[k]) hi[k] = $3 }
    END {
        printf "%-10s %8s %13s %8s %8s %8s %8s %8s %8s %8s %10s\n", "policy", "JCT (s)", "(min-max)",
               "vs BSP", "vs AR", "wait (s)", "vs BSP", "test acc", "vs BSP", "vs AR",
               "to " target " (s)"
        printf "| policy | JCT (s) | (min-max) | vs BSP | vs AR | wait (s) | vs BSP | test acc | " \
               "vs BSP | vs AR | to %s (s) |\n|---|---|---|---|---|---|---|---|---|---|---|\n", target >md
        for (i = 1; i <= np; i++) {
            k = order[i]; J[k] = median(jct[k]); W[k] = median(w[k]); A[k] = median(acc[k])
        }
        # Against BSP through the store, and against the synchronous
        # allreduce a data-parallel user would run instead ("AR").
        bj = J["bsp"]; bw = W["bsp"]; ba = A["bsp"]; rj = J["allreduce"]; ra = A["allreduce"]
        for (i = 1; i <= np; i++) {
            k = order[i]
            cj = bj ? sprintf("%+.1f%%", 100 * (J[k] - bj) / bj) : "-"
            rcj = rj ? sprintf("%+.1f%%", 100 * (J[k] - rj) / rj) : "-"
            cw = bw ? sprintf("%+.1f%%", 100 * (W[k] - bw) / bw) : "-"
            ca = ba ? sprintf("%+.2fpt", 100 * (A[k] - ba)) : "-"
            rca = ra ? sprintf("%+.2fpt", 100 * (A[k] - ra)) : "-"
            t = miss[k] ? sprintf("%d missed", miss[k]) : sprintf("%.2f", median(tt[k]))
            rng = n[k] > 1 ? sprintf("(%.2f-%.2f)", lo[k], hi[k]) : ""
            printf "%-10s %8.2f %13s %8s %8s %8.2f %8s %8.4f %8s %8s %10s\n", k, J[k], rng, cj,
                   rcj, W[k], cw, A[k], ca, rca, t
            printf "| %s | %.2f | %s | %s | %s | %.2f | %s | %.4f | %s | %s | %s |\n", k, J[k], rng,
                   cj, rcj, W[k], cw, A[k], ca, rca, t >md
        }
    }' target="$target" md="$out/table.md" "$summary" | tee "$out/table.txt"
nseeds=${#seed_list[@]}
note="$workers workers, $iters iterations, batch $batch, lr $lr, split $split, stragglers $straggler${strag_ranks:+ on ranks $strag_ranks},
 T = $mean_ms ms ($t_ref);
 medians over $nseeds seed(s): $seeds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "($note; per run: $summary)"
# The markdown table names its command, commit and date (README.md quotes it).
printf '\n(`examples/train/demo.sh --seeds %s`, %s, %s, %s)\n' "$seeds" \
    "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')" "$(date -u +%Y-%m-%d)" \
    "$(tr '\n' ' ' <<<"$note")" >>"$out/table.md"

# ---- the plots -------------------------------------------------------
if [ "$plots" = 1 ]; then
    if ! command -v gnuplot >/dev/null 2>&1; then
        echo "gnuplot not found: no plots (apt-get install gnuplot-nox)"
        exit 0
    fi
    s1=${seed_list[0]}
    term="pngcairo size 1100,700 font 'sans,10'"
    gnuplot -e "set terminal $term" >/dev/null 2>&1 || term="png size 1100,700"
    acc_plot=""
    for p in "${pol_list[@]}"; do
        f=$out/$p-s$s1/rank0.csv
        acc_plot="$acc_plot${acc_plot:+, }'$f' using 2:(\$6) with linespoints title '$p'"
    done
    gnuplot <<EOF || echo "gnuplot failed: no accuracy plot"
set terminal $term
set output '$out/accuracy.png'
set datafile separator ','
set datafile missing ''
set title 'Test accuracy over time (rank 0, seed $s1; stragglers $straggler)'
set xlabel 'time since start (s)'
set ylabel 'test accuracy'
set key bottom right
set grid
plot $acc_plot
EOF
    {
        echo "set terminal $term"
        echo "set output '$out/wait.png'"
        echo "set datafile separator ','"
        np=${#pol_list[@]}
        cols=$((np < 3 ? np : 3))
        echo "set multiplot layout $(((np + 2) / 3)),$cols title 'Cumulative waiting time per worker (seed $s1)'"
        ymax=$(awk -F, 'FNR > 1 && $11 > m { m = $11 } END { print m * 1.05 + 0.001 }' \
            "$out"/*-s"$s1"/rank*.csv)
        echo "set yrange [0:$ymax]"
        echo "set grid"
        echo "set key top left"
        echo "set xlabel 'iteration'"
        echo "set ylabel 'waited (s)'"
        echo "set xtics $((iters / 2))"
        for p in "${pol_list[@]}"; do
            echo "set title '$p'"
            line=""
            for ((r = 0; r < workers; r++)); do
                line="$line${line:+, }'$out/$p-s$s1/rank$r.csv' using 1:11 with lines title 'worker $r'"
            done
            echo "plot $line"
        done
        echo "unset multiplot"
    } | gnuplot || echo "gnuplot failed: no waiting-time plot"
    echo "plots: $out/accuracy.png $out/wait.png"
fi
