#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# matrix.sh - every synchronization policy against every regime (straggler
# pattern x data split), measured as time to a target test accuracy; writes
# a table (CSV and markdown) and a plot.
#
#   examples/train/matrix.sh [--build DIR] [--out DIR] [--data FILE]
#       [--regimes LIST] [--policies LIST] [--seeds LIST] [--workers N]
#       [--iters I] [--lr LR] [--noniid F] [--target-acc A]
#       [--mean-iter-ms T] [--timeout SEC] [--no-plots]
#   examples/train/matrix.sh --retable DIR [--target-acc A] [--no-plots]
#
# --retable DIR runs nothing: it recomputes the times to target of an
# earlier matrix in DIR (its matrix.csv and the runs' rank0.csv) for
# --target-acc, then rewrites matrix.csv, matrix.md and the plot there.
#
# Regimes (comma list of PATTERN-SPLIT, default all ten): PATTERN is
#   none        no delay
#   random      slow:0.15:0.5:2 on every worker (the paper's)
#   persistent  hetero:2 on the last worker (always 2x slower)
#   burst       burst:3:I/20:I/3 on the last worker (3x slower for a third
#               of the run, from iteration I/20 after the warm-up)
#   failure     fail:0.02:MS on the last worker, MS = 250 T: one pause of
#               250 mean iterations, at an iteration drawn with p = 0.02
# and SPLIT is iid (every N-th image) or noniid (serene-train --split
# noniid:F, default F = 0.95: each image goes to the worker owning its
# class, label % N, with probability F). Policies (default
# bsp,ssp3,ssp10,asp,dynamic,allreduce) are demo.sh's. Every run of a seed sees the
# same delays whatever the policy (straggler.h). Rank 0 snapshots its
# weights every 10 iterations; they are scored after the run (not timed).
#
# T, the mean iteration time without stragglers, is measured once (demo.sh's
# calibration, in the first regime) unless --mean-iter-ms gives it, and used
# by every regime. Outputs in --out (default BUILD/train-matrix): REGIME/
# (demo.sh's output for each regime), matrix.csv (one row per run),
# matrix.md (medians over the seeds, per regime and policy), matrix.params
# (the run's parameters, for --retable's caption) and
# time_to_target.png (gnuplot: median time to target and median final
# accuracy per regime and policy). The table's time to target
# (time_to_target_kept_s) is the end of rank 0's first 3 consecutive
# snapshots whose mean test accuracy reaches the target, counted only if
# the job's final model reaches it too: a run whose final model ends below
# the target did not deliver it ("n/r", not reached; -1 in matrix.csv).
# matrix.csv has rank 0's view alone too: time_to_target_s (the first
# snapshot at or above the target) and time_to_target3_s (3 snapshots).
# The default target, 0.925, is explained in README.md. Exit status: 0
# done; 1 a run failed; 2 bad usage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

build=$repo/build out="" data="" seeds=1,2,3 workers=4 iters=600 lr=0.1 noniid=0.95
target=0.925 mean_ms="" timeout=120 plots=1 retable=""
policies=bsp,ssp3,ssp10,asp,dynamic,allreduce
all_regimes=none-iid,random-iid,persistent-iid,burst-iid,failure-iid
all_regimes=$all_regimes,none-noniid,random-noniid,persistent-noniid,burst-noniid,failure-noniid
regimes=$all_regimes
# usage [RC]: the header; --help to stdout with status 0, a usage error to stderr with 2.
usage() { sed -n '4,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&"$((${1:-2} ? 2 : 1))"; exit "${1:-2}"; }
bad() { echo "matrix.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || case $1 in --no-plots | -h | --help) ;; *) bad "$1 needs a value" ;; esac
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --regimes) regimes=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --noniid) noniid=$2; shift 2 ;;
    --target-acc) target=$2; shift 2 ;;
    --mean-iter-ms) mean_ms=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --retable) retable=$2; shift 2 ;;
    --no-plots) plots=0; shift ;;
    -h | --help) usage 0 ;;
    *) echo "matrix.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
[[ $workers =~ ^[0-9]+$ ]] && [ "$workers" -ge 2 ] && [ "$workers" -le 64 ] || bad "--workers: 2..64"
[[ $iters =~ ^[0-9]+$ ]] && [ "$iters" -ge 30 ] || bad "--iters: a number >= 30"
[[ $seeds =~ ^[0-9]+(,[0-9]+)*$ ]] || bad "--seeds: a comma list of numbers"
[[ $noniid =~ ^(0|1|0?\.[0-9]+|1\.0*)$ ]] || bad "--noniid: a fraction in [0, 1]"
[[ $target =~ ^(0?\.[0-9]+|1|1\.0*)$ ]] || bad "--target-acc: an accuracy in (0, 1]"
[ -z "$mean_ms" ] || [[ $mean_ms =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad "--mean-iter-ms: milliseconds"
IFS=, read -r -a reg_list <<<"$regimes"
for r in "${reg_list[@]}"; do
    [[ $r =~ ^(none|random|persistent|burst|failure)-(iid|noniid)$ ]] ||
        bad "--regimes: '$r' is not PATTERN-SPLIT (none|random|persistent|burst|failure, iid|noniid)"
done
if [ -n "$retable" ]; then
    [ -s "$retable/matrix.csv" ] || bad "--retable: $retable/matrix.csv not found"
    out=$retable
fi
[ -n "$out" ] || out=$build/train-matrix
mkdir -p "$out"
out=$(cd "$out" && pwd)
last=$((workers - 1))
plot_args=(--no-plots)
extra=()
[ -n "$data" ] && extra+=(--data "$data")

# regime_args PATTERN SPLIT: demo.sh's options for a regime (needs $mean_ms
# for the failure pause).
regime_args() {
    local strag ranks=""
    case $1 in
    none) strag=none ;;
    random) strag=slow:0.15:0.5:2 ;;
    persistent) strag=hetero:2 ranks=$last ;;
    burst) strag=burst:3:$((iters / 20)):$((iters / 3)) ranks=$last ;;
    failure) strag=fail:0.02:$(awk -v t="$mean_ms" 'BEGIN { printf "%d", 250 * t + 0.5 }') ranks=$last ;;
    esac
    echo "--straggler $strag ${ranks:+--straggler-ranks $ranks} --split"
    [ "$2" = iid ] && echo iid || echo "noniid:$noniid"
}

# run_times RANK0_CSV FINAL_ACC: 'T1,T3,KEPT' for $target, each -1 if not
# reached. T1 (time_to_target_s): rank 0's first snapshot at or above the
# target. T3 (time_to_target3_s): the end of its first 3 consecutive
# snapshots whose mean reaches it (it holds the target over 30 iterations,
# not one lucky snapshot). KEPT (time_to_target_kept_s, the table's): T3
# if the final model (after the end barrier) reaches the target too, else
# -1. Rank 0's snapshots are its own weights while it trains; under ASP
# with non-IID shards the slowest worker's last stale updates, applied
# after the others ended, pull the final model below what rank 0 saw.
run_times() {
    awk -F, -v a="$target" -v fa="$2" '
        NR > 1 && $6 != "" { n++; v[n % 3] = $6
            if (t1 == "" && $6 >= a) t1 = $2
            if (t3 == "" && n >= 3 && (v[0] + v[1] + v[2]) / 3 >= a) t3 = $2 }
        END { if (t1 == "") t1 = -1; if (t3 == "") t3 = -1
              print t1 "," t3 "," ((t3 >= 0 && fa + 0 >= a + 0) ? t3 : -1) }' "$1"
}

t0=$SECONDS
csv=$out/matrix.csv
params=$out/matrix.params
header=regime,straggler,straggler_ranks,split,policy,seed,jct_s,wait_s,final_test_acc
header=$header,time_to_target_s,time_to_target3_s,time_to_target_kept_s
if [ -n "$retable" ]; then
    # the earlier run's parameters, for the table's caption
    # shellcheck disable=SC2034
    workers='?' iters='?' lr='?' noniid='?' mean_ms='?' seeds='?' load='?'
    if [ -f "$params" ]; then
        while IFS='=' read -r k v; do
            [[ $v =~ ^[0-9.,\ ?]*$ ]] || continue
            case $k in workers | iters | lr | noniid | mean_ms | seeds | load) printf -v "$k" '%s' "$v" ;; esac
        done <"$params"
    fi
    [ "$seeds" != '?' ] || seeds=$(tail -n +2 "$csv" | cut -d, -f6 | sort -un | paste -sd,)
    echo "matrix: re-tabling $csv for target test accuracy $target"
    tmp=$csv.tmp
    echo "$header" >"$tmp"
    tail -n +2 "$csv" | while IFS=, read -r reg strag ranks split pol seed jct wait acc _; do
        f=$out/$reg/$pol-s$seed/rank0.csv
        [ -f "$f" ] || { echo "matrix.sh: $f not found" >&2; exit 1; }
        echo "$reg,$strag,$ranks,$split,$pol,$seed,$jct,$wait,$acc,$(run_times "$f" "$acc")"
    done >>"$tmp"
    mv "$tmp" "$csv"
    IFS=, read -r -a pol_list <<<"$(tail -n +2 "$csv" | cut -d, -f5 | awk '!s[$0]++' | paste -sd,)"
else
    nreg=${#reg_list[@]}
    IFS=, read -r -a seed_list <<<"$seeds"
    IFS=, read -r -a pol_list <<<"$policies"
    echo "matrix: $nreg regime(s) x ${#pol_list[@]} policies x ${#seed_list[@]} seed(s), $workers workers," \
        "$iters iterations, lr $lr, target test accuracy $target"
    echo "$header" >"$csv"
    k=0
    for reg in "${reg_list[@]}"; do
        k=$((k + 1))
        pat=${reg%-*} split=${reg#*-}
        if [ -z "$mean_ms" ]; then
            echo "[calibration] T: $workers workers, BSP, no stragglers"
            "$here/demo.sh" --build "$build" --out "$out/calibration" --workers "$workers" \
                --iters 200 --lr "$lr" --timeout "$timeout" "${extra[@]}" --calibrate-only \
                >"$out/calibration.log" 2>&1 || { tail -n 20 "$out/calibration.log" >&2; exit 1; }
            mean_ms=$(sed -n 's/^mean iteration time without stragglers T = \([0-9.]*\) ms$/\1/p' \
                "$out/calibration.log")
            [ -n "$mean_ms" ] || { echo "matrix.sh: no T in $out/calibration.log" >&2; exit 1; }
            echo "[calibration] T = $mean_ms ms"
        fi
        # shellcheck disable=SC2207
        targs=($(regime_args "$pat" "$split"))
        echo "[$k/$nreg] $reg: ${targs[*]} ($((SECONDS - t0)) s so far)"
        "$here/demo.sh" --build "$build" --out "$out/$reg" --policies "$policies" --seeds "$seeds" \
            --workers "$workers" --iters "$iters" --lr "$lr" --target-acc "$target" --eval-every 10 \
            --mean-iter-ms "$mean_ms" --timeout "$timeout" "${extra[@]}" "${plot_args[@]}" \
            "${targs[@]}" >"$out/$reg.log" 2>&1 &
        dpid=$!
        # one progress line per finished run
        shown=0
        while kill -0 "$dpid" 2>/dev/null; do
            sleep 0.5
            n=$(grep -c ' done in ' "$out/$reg.log" 2>/dev/null) || true
            while [ "$shown" -lt "${n:-0}" ]; do
                shown=$((shown + 1))
                grep ' done in ' "$out/$reg.log" | sed -n "${shown}p" | sed "s/^ */  /"
            done
        done
        wait "$dpid" || { tail -n 20 "$out/$reg.log" >&2; echo "matrix.sh: $reg failed (log: $out/$reg.log)" >&2; exit 1; }
        grep ' done in ' "$out/$reg.log" | sed -n "$((shown + 1)),\$p" | sed "s/^ */  /"
        strag=${targs[1]} ranks=""
        [ "${targs[2]}" = --straggler-ranks ] && ranks=${targs[3]}
        while IFS=, read -r pol seed jct wait acc _; do
            echo "$reg,$strag,$ranks,${targs[${#targs[@]} - 1]},$pol,$seed,$jct,$wait,$acc,$(run_times \
                "$out/$reg/$pol-s$seed/rank0.csv" "$acc")"
        done < <(tail -n +2 "$out/$reg/summary.csv") >>"$csv"
    done
    load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
    printf 'workers=%s\niters=%s\nlr=%s\nnoniid=%s\nmean_ms=%s\nseeds=%s\nload=%s\n' \
        "$workers" "$iters" "$lr" "$noniid" "$mean_ms" "$seeds" "$load" >"$params"
fi

# ---- the table: medians over seeds, per regime and policy --------------
# median(LIST): the median of a space-separated list of numbers, for the
# table's and the plot's awk programs; 1e9 stands for not reached, and a
# median of an even count whose upper middle is 1e9 is 1e9 (n/r).
awk_median='
function median(list,    a, n, i, j, t, lo, hi) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    if (n % 2) return a[(n + 1) / 2]
    lo = a[n / 2] + 0; hi = a[n / 2 + 1] + 0
    return hi >= 1e9 ? 1e9 : (lo + hi) / 2
}
'
# A run that did not reach the target (rank 0 never held it, or the final
# model ended below it) counts as infinitely slow in the median; a median
# that lands on such a run is "n/r" (not reached), never a number: with
# an even number of seeds, either middle run not reached makes it n/r.
# "(k n/r)" after a reached median: k seeds did not reach it. "vs best
# static": the dynamic policy's median time to target over the best static
# policy's (every policy but dynamic and dynbsp) in the same regime; n/r
# if the dynamic policy did not reach it.
md=$out/matrix.md
awk -F, -v target="$target" -v seeds="$seeds" -v load="$load" -v iters="$iters" -v lr="$lr" \
    -v workers="$workers" -v T="$mean_ms" -v noniid="$noniid" "$awk_median"'
    NR == 1 { next }
    {
        r = $1; p = $5
        if (!(r in seen)) { seen[r] = 1; regs[++nr] = r; desc[r] = $2 ($3 != "" ? " on rank " $3 : "") ", " $4 }
        if (!((r, p) in have)) { have[r, p] = 1; if (!(p in pseen)) { pseen[p] = 1; pols[++np] = p } }
        tt[r, p] = tt[r, p] " " ($12 < 0 ? 1e9 : $12)
        acc[r, p] = acc[r, p] " " $9; jct[r, p] = jct[r, p] " " $7
        if ($12 < 0) miss[r, p]++
    }
    END {
        printf "Time to %s test accuracy (s), median over seeds %s: the end of rank 0'"'"'s first 3 consecutive snapshots (10 iterations apart) averaging at least %s, if the final model reaches %s too; n/r: not reached (the median run never held it, or its final model ended below it). In brackets the median final test accuracy and the JCT (s).\n", target, seeds, target, target
        printf "%s workers, %s iterations, lr %s, non-IID F = %s, T = %s ms; load average at the end: %s.\n\n", workers, iters, lr, noniid, T, load
        printf "| regime |"
        for (i = 1; i <= np; i++) printf " %s |", pols[i]
        printf " best static | dynamic vs best |\n|---|"
        for (i = 1; i <= np; i++) printf "---|"
        printf "---|---|\n"
        for (j = 1; j <= nr; j++) {
            r = regs[j]; best = 1e18; bp = "-"
            for (i = 1; i <= np; i++) {
                p = pols[i]
                if (!((r, p) in have)) continue
                T_[p] = median(tt[r, p]); A_[p] = median(acc[r, p]); J_[p] = median(jct[r, p])
                if (p !~ /^dyn/ && T_[p] < 1e9 && T_[p] < best) { best = T_[p]; bp = p }
            }
            printf "| %s (%s) |", r, desc[r]
            for (i = 1; i <= np; i++) {
                p = pols[i]
                if (!((r, p) in have)) { printf " |"; continue }
                t = T_[p] >= 1e9 ? "n/r" : sprintf("%.2f", T_[p])
                if (miss[r, p] && T_[p] < 1e9) t = t " (" miss[r, p] " n/r)"
                mark = T_[p] < 1e9 && ((p !~ /^dyn/ && p == bp) || (p ~ /^dyn/ && T_[p] <= best)) ? "**" : ""
                printf " %s%s%s [%.4f, %.2f] |", mark, t, mark, A_[p], J_[p]
            }
            vs = "-"
            if ((r, "dynamic") in have && best < 1e9)
                vs = T_["dynamic"] >= 1e9 ? "n/r" : sprintf("%+.1f%%", 100 * (T_["dynamic"] - best) / best)
            printf " %s | %s |\n", best < 1e9 ? bp : "- (none reached)", vs
            delete T_
        }
    }' "$csv" >"$md"
cat "$md"
echo "per run: $csv; table: $md; $((SECONDS - t0)) s in all"

# ---- the plot: median time to target and final accuracy per regime ----
if [ "$plots" = 1 ]; then
    if ! command -v gnuplot >/dev/null 2>&1; then
        echo "gnuplot not found: no plot (apt-get install gnuplot-nox)"
        exit 0
    fi
    # COLUMN of matrix.csv -> one row per regime, one column per policy
    medians() {
        awk -F, -v col="$1" "$awk_median"'
            NR == 1 { next }
            { r = $1; p = $5
              if (!(r in seen)) { seen[r] = 1; regs[++nr] = r }
              if (!(p in ps)) { ps[p] = 1; pols[++np] = p }
              v[r, p] = v[r, p] " " ($col < 0 ? 1e9 : $col) }
            END {
                printf "regime"; for (i = 1; i <= np; i++) printf " %s", pols[i]; printf "\n"
                for (j = 1; j <= nr; j++) {
                    printf "%s", regs[j]
                    for (i = 1; i <= np; i++) { m = median(v[regs[j], pols[i]]); printf " %s", (m >= 1e9 ? "NaN" : m) }
                    printf "\n"
                }
            }' "$csv"
    }
    medians 12 >"$out/time_to_target.dat"
    medians 9 >"$out/final_accuracy.dat"
    # the accuracy axis from 0.05 under the lowest median or the target,
    # in steps of 0.05
    afloor=$(awk -v m="$target" 'NR > 1 { for (i = 2; i <= NF; i++) if ($i != "NaN" && $i < m) m = $i }
        END { f = int(m * 20) / 20 - 0.05; printf "%.2f", f < 0 ? 0 : f }' \
        "$out/final_accuracy.dat")
    term="pngcairo size 1200,900 font 'sans,10'"
    gnuplot -e "set terminal $term" >/dev/null 2>&1 || term="png size 1200,900"
    np=${#pol_list[@]}
    gnuplot <<EOF || echo "gnuplot failed: no plot"
set terminal $term
set output '$out/time_to_target.png'
set multiplot layout 2,1
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -20
set key top left
set grid ytics
set title 'Time to $target test accuracy, held over 3 snapshots and by the final model (median over seeds $seeds; no bar: not reached)'
set ylabel 'seconds'
set yrange [0:*]
plot for [i=2:$((np + 1))] '$out/time_to_target.dat' using i:xtic(1) title columnheader(i)
set title 'Final test accuracy (median over seeds $seeds; dashed: the target $target)'
set ylabel 'test accuracy'
set yrange [$afloor:*]
set key below horizontal
set arrow 1 from graph 0, first $target to graph 1, first $target nohead dashtype 2 linewidth 2 front
plot for [i=2:$((np + 1))] '$out/final_accuracy.dat' using i:xtic(1) title columnheader(i)
unset multiplot
EOF
    echo "plot: $out/time_to_target.png"
fi
