#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fabric_report.sh OUT "RUN DESCRIPTION" - bench/fabric.sh's table and plot,
# from OUT/results.csv (one row per measured run, columns in fabric.sh's
# HDR): OUT/table.md (two markdown tables: every run, Serene with each of
# its windows; Serene against the ring beside 2(N-1)/N) and
# OUT/fabric.png (gnuplot, when present: the speed-up over Gloo against N,
# and the bytes each worker put on its link per call against N).
set -uo pipefail
OUT=$1 DESC=$2
CSV=$OUT/results.csv
[ -s "$CSV" ] || { echo "fabric_report: no $CSV" >&2; exit 1; }

{
    echo "## Allreduce on an emulated rack (bench/fabric.sh)"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)," \
        "$(nproc) cores; ${DESC//$'\n'/ }."
    echo
    echo "Per call: time (median), goodput = tensor bits / time, and its fraction of the link rate;"
    echo "bytes the busiest worker's link carried per call up (worker to switch) and down, over the"
    echo "tensor size S, Ethernet, IP and UDP/TCP headers included (eth0's counters, so resent and"
    echo "duplicated packets count, packets the queue dropped do not); TBF drops on all links"
    echo "(up/down); resends (Serene: packets resent in full, and probes, in % of the packets all"
    echo "ranks sent; TCP: RetransSegs of all hosts); CPU: the"
    echo "share of the machine's cores the run's own processes used (ranks, switch; not OpenMPI's,"
    echo "whose ranks run under daemons it detaches), and the share busy with anything (other work"
    echo "on the host included; OpenMPI's ranks poll, so it is near 100% with them). Serene's window:"
    echo "SERENE_WINDOW packets in flight per worker (pool: the switch's 128 slots)."
    echo
    echo "| N | link | size | system | s/call | goodput | of link | up/S | down/S | drops | resends | CPU ours / all |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F, 'NR > 1 {
        link = $3 > 0 ? $3 " Mbit/s" : "unshaped"
        res = $1 == "serene" ? $20 "%" ($26 != "" ? " + " $26 "% probes" : "") : $19
        ok = $24 == "ok" ? "" : " **" $24 "**"
        sys = $1 == "gloo" ? "Gloo ring" : $1 == "mpi" ? "OpenMPI" : "Serene, window " ($6 == 0 ? "pool" : $6)
        printf "| %d | %s | %d MiB | %s%s | %.3f | %.3f Gbps | %s | %.3f | %.3f | %d/%d | %s | %s / %d%% |\n",
            $2, link, $5 / 1048576, sys, ok, $8, $10, ($3 > 0 ? sprintf("%.0f%%", 100 * $11) : "-"),
            $14, $15, $17, $18, res, ($1 == "mpi" ? "-" : $22 "%"), $23 }' "$CSV"
    echo
    echo "### Serene against the ring"
    echo
    echo "Speed-up = the peer's time / Serene's time; where the links are the bottleneck the best"
    echo "possible speed-up over a bandwidth-optimal ring is 2(N-1)/N, the ratio of the bytes each"
    echo "puts on a link (up/S)."
    echo
    echo "| N | link | size | Serene window | Serene / Gloo | Serene / OpenMPI | 2(N-1)/N | up/S Serene | Gloo | OpenMPI |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    awk -F, 'NR > 1 {
        k = $2 SUBSEP $3 SUBSEP $5
        if ($1 == "serene") { kw = k SUBSEP $6; if (!(kw in seen)) { seen[kw] = 1; order[++nk] = kw } }
        if ($24 == "ok") { if ($1 == "serene") { ts[k, $6] = $8; us[k, $6] = $14 } else { t[k, $1] = $8; up[k, $1] = $14 } } }
    function ratio(x, y) { return (x > 0 && y > 0) ? sprintf("%.2f", x / y) : "-" }
    function u(v) { return v != "" ? sprintf("%.3f", v) : "-" }
    END { for (i = 1; i <= nk; i++) { split(order[i], f, SUBSEP); k = f[1] SUBSEP f[2] SUBSEP f[3]
        printf "| %d | %s | %d MiB | %s | %s | %s | %.2f | %s | %s | %s |\n", f[1], (f[2] > 0 ? f[2] " Mbit/s" : "unshaped"),
            f[3] / 1048576, (f[4] == 0 ? "pool" : f[4]), ratio(t[k, "gloo"], ts[k, f[4]]), ratio(t[k, "mpi"], ts[k, f[4]]),
            2 * (f[1] - 1) / f[1], u(us[k, f[4]]), u(up[k, "gloo"]), u(up[k, "mpi"]) } }' "$CSV"
} >"$OUT/table.md"

if ! command -v gnuplot >/dev/null; then
    echo "fabric_report: gnuplot not found (Debian: gnuplot-nox): no fabric.png" >&2
    exit 0
fi
# speedup-RATE-wWIN.dat: N speed-up (one series per link rate and Serene
# window, a point per size); bytes.dat: N up/S of serene gloo mpi (0: none)
rm -f "$OUT"/logs/speedup-*.dat "$OUT/logs/bytes.dat"
awk -F, 'NR > 1 && $24 == "ok" {
        k = $2 " " $3 " " $5; keys[k] = 1
        if ($1 == "serene") { ts[k, $6] = $8; wins[$6] = 1; if (!(k in us)) us[k] = $14 } else { t[k, $1] = $8; up[k, $1] = $14 } }
    END { for (k in keys) { split(k, f, " ")
        for (w in wins) if (ts[k, w] > 0 && t[k, "gloo"] > 0)
            printf "%s %.4f\n", f[1], t[k, "gloo"] / ts[k, w] > (out "/speedup-" f[2] "-w" w ".dat")
        printf "%s %s %s %s\n", f[1], us[k] + 0, up[k, "gloo"] + 0, up[k, "mpi"] + 0 > (out "/bytes.dat") } }' \
    out="$OUT/logs" "$CSV"
touch "$OUT/logs/bytes.dat"
series=() k=0
for f in "$OUT"/logs/speedup-*.dat; do
    [ -e "$f" ] || continue
    r=${f##*/speedup-} && r=${r%.dat} && w=${r#*-w} && r=${r%-w*}
    k=$((k + 1))
    series+=("'$f' using 1:2 with points pt $((k + 4)) ps 1.4 title '$([ "$r" = 0 ] && echo unshaped || echo "$r Mbit/s"), window $([ "$w" = 0 ] && echo pool || echo "$w")'")
done
[ ${#series[@]} -gt 0 ] || series=("NaN notitle")
cat >"$OUT/logs/fabric.gp" <<EOF
set terminal pngcairo size 1100,480 noenhanced
set output '$OUT/fabric.png'
set multiplot layout 1,2 title 'Allreduce on shaped links (bench/fabric.sh)'
set grid
set key top left font ',9'
set xrange [1.5:8.5]
set xlabel 'workers N'
set title 'speed-up of Serene over the Gloo ring'
set ylabel 'Gloo time / Serene time'
set yrange [0:2.2]
plot 2*(x-1)/x with lines lw 2 title '2(N-1)/N (links the bottleneck)', $(IFS=,; echo "${series[*]}")
set title 'bytes per call on a worker link, up, over the tensor size'
set ylabel 'bytes / tensor size'
plot 1 with lines dt 2 title 'in-network aggregation: 1', 2*(x-1)/x with lines dt 2 title 'ring: 2(N-1)/N', \
     '$OUT/logs/bytes.dat' using 1:(\$2 > 0 ? \$2 : 1/0) with points pt 7 ps 1.3 title 'Serene', \
     '' using 1:(\$3 > 0 ? \$3 : 1/0) with points pt 5 title 'Gloo ring (chunked)', \
     '' using 1:(\$4 > 0 ? \$4 : 1/0) with points pt 9 title 'OpenMPI'
unset multiplot
EOF
gnuplot "$OUT/logs/fabric.gp" 2>"$OUT/logs/plot.log" || { echo "fabric_report: gnuplot failed (logs/plot.log)" >&2; exit 1; }
echo "== wrote $OUT/table.md, $OUT/fabric.png, $CSV"
