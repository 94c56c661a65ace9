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
# bsp,ssp3,ssp10,asp,dynamic) are demo.sh's. Every run of a seed sees the
# same delays whatever the policy (straggler.h). Rank 0 snapshots its
# weights every 10 iterations; they are scored after the run (not timed).
#
# T, the mean iteration time without stragglers, is measured once (demo.sh's
# calibration, in the first regime) unless --mean-iter-ms gives it, and used
# by every regime. Outputs in --out (default BUILD/train-matrix): REGIME/
# (demo.sh's output for each regime), matrix.csv (one row per run),
# matrix.md (medians over the seeds, per regime and policy) and
# time_to_target.png (gnuplot: median time to target and median final
# accuracy per regime and policy). The table's time to target is the end of
# rank 0's first 3 consecutive snapshots whose mean test accuracy reaches
# the target (time_to_target3_s; time_to_target_s, the first single
# snapshot at or above it, is in matrix.csv too). Exit status: 0 done; 1 a
# run failed; 2 bad usage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

build=$repo/build out="" data="" seeds=1,2,3 workers=4 iters=600 lr=0.1 noniid=0.95
target=0.91 mean_ms="" timeout=120 plots=1
policies=bsp,ssp3,ssp10,asp,dynamic
all_regimes=none-iid,random-iid,persistent-iid,burst-iid,failure-iid
all_regimes=$all_regimes,none-noniid,random-noniid,persistent-noniid,burst-noniid,failure-noniid
regimes=$all_regimes
usage() { sed -n '8,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
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
    --no-plots) plots=0; shift ;;
    -h | --help) usage ;;
    *) echo "matrix.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
[[ $workers =~ ^[0-9]+$ ]] && [ "$workers" -ge 2 ] && [ "$workers" -le 64 ] || bad "--workers: 2..64"
[[ $iters =~ ^[0-9]+$ ]] && [ "$iters" -ge 30 ] || bad "--iters: a number >= 30"
[[ $seeds =~ ^[0-9]+(,[0-9]+)*$ ]] || bad "--seeds: a comma list of numbers"
[[ $noniid =~ ^(0|1|0?\.[0-9]+|1\.0*)$ ]] || bad "--noniid: a fraction in [0, 1]"
[ -z "$mean_ms" ] || [[ $mean_ms =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad "--mean-iter-ms: milliseconds"
IFS=, read -r -a reg_list <<<"$regimes"
for r in "${reg_list[@]}"; do
    [[ $r =~ ^(none|random|persistent|burst|failure)-(iid|noniid)$ ]] ||
        bad "--regimes: '$r' is not PATTERN-SPLIT (none|random|persistent|burst|failure, iid|noniid)"
done
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

t0=$SECONDS
nreg=${#reg_list[@]}
IFS=, read -r -a seed_list <<<"$seeds"
IFS=, read -r -a pol_list <<<"$policies"
echo "matrix: $nreg regime(s) x ${#pol_list[@]} policies x ${#seed_list[@]} seed(s), $workers workers," \
    "$iters iterations, lr $lr, target test accuracy $target"
csv=$out/matrix.csv
echo "regime,straggler,straggler_ranks,split,policy,seed,jct_s,wait_s,final_test_acc,time_to_target_s,time_to_target3_s" >"$csv"
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
    # time_to_target3_s: the end of the first 3 consecutive snapshots of
    # rank 0 whose mean test accuracy reaches the target (it holds the
    # target over 30 iterations, not one lucky snapshot); -1 if never.
    while IFS=, read -r pol seed rest; do
        t3=$(awk -F, -v a="$target" 'NR > 1 && $6 != "" { n++; v[n % 3] = $6
                if (n >= 3 && (v[0] + v[1] + v[2]) / 3 >= a) { print $2; found = 1; exit } }
            END { if (!found) print -1 }' "$out/$reg/$pol-s$seed/rank0.csv")
        echo "$reg,$strag,$ranks,${targs[${#targs[@]} - 1]},$pol,$seed,$(cut -d, -f1-4 <<<"$rest"),$t3"
    done < <(tail -n +2 "$out/$reg/summary.csv") >>"$csv"
done

# ---- the table: medians over seeds, per regime and policy --------------
# A run that missed the target counts as infinitely slow in the median.
# "vs best static": the policy's median time to target over the best
# static policy's (every policy but dynamic) in the same regime.
md=$out/matrix.md
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
awk -F, -v target="$target" -v seeds="$seeds" -v load="$load" -v iters="$iters" -v lr="$lr" \
    -v workers="$workers" -v T="$mean_ms" -v noniid="$noniid" '
    function median(list,    a, n, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    NR == 1 { next }
    {
        r = $1; p = $5
        if (!(r in seen)) { seen[r] = 1; regs[++nr] = r; desc[r] = $2 ($3 != "" ? " on rank " $3 : "") ", " $4 }
        if (!((r, p) in have)) { have[r, p] = 1; if (!(p in pseen)) { pseen[p] = 1; pols[++np] = p } }
        tt[r, p] = tt[r, p] " " ($11 < 0 ? 1e9 : $11)
        acc[r, p] = acc[r, p] " " $9; jct[r, p] = jct[r, p] " " $7
        if ($11 < 0) miss[r, p]++
    }
    END {
        printf "Time to %s test accuracy (s: rank 0, the first 3 consecutive snapshots, 10 iterations apart, averaging it), median over seeds %s; in brackets the final test accuracy and the JCT (s).\n", target, seeds
        printf "%d workers, %d iterations, lr %s, non-IID F = %s, T = %s ms; load average at the end: %s.\n\n", workers, iters, lr, noniid, T, load
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
                if (p !~ /^dyn/ && T_[p] < best) { best = T_[p]; bp = p }
            }
            printf "| %s (%s) |", r, desc[r]
            for (i = 1; i <= np; i++) {
                p = pols[i]
                if (!((r, p) in have)) { printf " |"; continue }
                t = T_[p] >= 1e9 ? "missed" : sprintf("%.2f", T_[p])
                if (miss[r, p] && T_[p] < 1e9) t = t " (" miss[r, p] " missed)"
                mark = T_[p] < 1e9 && ((p !~ /^dyn/ && p == bp) || (p ~ /^dyn/ && T_[p] <= best)) ? "**" : ""
                printf " %s%s%s [%.4f, %.2f] |", mark, t, mark, A_[p], J_[p]
            }
            vs = "-"
            if (("dynamic" in T_) && (r, "dynamic") in have && best < 1e9 && T_["dynamic"] < 1e9)
                vs = sprintf("%+.1f%%", 100 * (T_["dynamic"] - best) / best)
            printf " %s | %s |\n", best < 1e9 ? bp : "- (all missed)", vs
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
        awk -F, -v col="$1" '
            function median(list,    a, n, i, j, t) {
                n = split(list, a, " ")
                for (i = 2; i <= n; i++)
                    for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
                return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            }
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
    medians 11 >"$out/time_to_target.dat"
    medians 9 >"$out/final_accuracy.dat"
    # the accuracy axis from 0.05 under the lowest median, in steps of 0.05
    afloor=$(awk 'NR > 1 { for (i = 2; i <= NF; i++) if ($i != "NaN" && (m == "" || $i < m)) m = $i }
        END { f = int((m == "" ? 0 : m) * 20) / 20 - 0.05; printf "%.2f", f < 0 ? 0 : f }' \
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
set title 'Time to $target test accuracy, held over 3 snapshots (median over seeds $seeds; no bar: missed)'
set ylabel 'seconds'
set yrange [0:*]
plot for [i=2:$((np + 1))] '$out/time_to_target.dat' using i:xtic(1) title columnheader(i)
set title 'Final test accuracy (median over seeds $seeds)'
set ylabel 'test accuracy'
set yrange [$afloor:*]
set key bottom left
plot for [i=2:$((np + 1))] '$out/final_accuracy.dat' using i:xtic(1) title columnheader(i)
unset multiplot
EOF
    echo "plot: $out/time_to_target.png"
fi
