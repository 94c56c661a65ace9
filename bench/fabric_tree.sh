#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fabric_tree.sh - allreduce on an emulated two-level rack whose leaf-root
# links are the bottleneck: 4 workers, 2 under each of 2 leaves, under a
# root (network namespaces, veth links; the leaf-root links shaped with TBF
# at each end, so both ways; the worker links unshaped), three systems on
# the same links and tensors, every result checked:
#
#   tree     serene-switch in each leaf and in the root (p4/README.md,
#            "Trees"): a leaf sends one partial up and gets one result down
#   single   one serene-switch in the root; the leaves only route: each
#            leaf-root link carries its 2 workers' packets
#   gloo     Gloo's ring (bench_gloo --chunked 1), routed the same way
#
#   hhP-w0 hhP-w1   hhP-w2 hhP-w3     10.78.1R.2, default via the leaf
#        \  /            \  /
#       hhP-l0          hhP-l1        leaves: forward, and serene-switch (tree)
#           \  RATE   RATE /          10.78.L+1.0/24, TBF RATE Mbit/s both ends
#             hhP-root                serene-switch (tree's root, or single)
#
#   bench/fabric_tree.sh [--build DIR] [--rates 100] [--size 16M] [--reps 3]
#                        [--mtu 9000|1500] [--queue BYTES] [--window W]
#                        [--case-timeout S]
#
# --window: SERENE_WINDOW of the Serene runs (default 32, as fabric.sh's
# congestion table: the default pool of 128 jumbo packets overflows a
# 256 KiB link queue).
#
# Prints one line per case: median and best seconds per call, and the bytes
# per call on each leaf-root link over the tensor (up, down; the larger of
# the two links), counted by the leaf's interface; and the load average;
# then a markdown table of the medians, a row per rate (bench/README.md).
# Needs root, iproute2, a built tree (meson; bench_allreduce, serene-switch,
# serene-ctl, and bench_gloo if Gloo is wanted). Exit 0, 1 (a case failed),
# 2 (setup), 77 (not root).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=fabric_net.sh
. "$ROOT/bench/fabric_net.sh"
BUILD=$ROOT/build RATES=100 SIZE=16M REPS=3 MTU=9000 QUEUE=262144 CASE_TIMEOUT=600 WINDOW=32
die() { echo "fabric_tree: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift ;;
    --rates) RATES=${2:?}; shift ;;
    --size) SIZE=${2:?}; shift ;;
    --reps) REPS=${2:?}; shift ;;
    --mtu) MTU=${2:?}; shift ;;
    --queue) QUEUE=${2:?}; shift ;;
    --case-timeout) CASE_TIMEOUT=${2:?}; shift ;;
    --window) WINDOW=${2:?}; shift ;;
    -h | --help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
[[ $RATES =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "bad --rates '$RATES' (Mbit/s)"
[[ $SIZE =~ ^[1-9][0-9]*[kKmM]?$ ]] || die "bad --size '$SIZE'"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "bad --reps"
[[ $MTU =~ ^(1500|9000)$ ]] || die "--mtu is 1500 or 9000"
[[ $QUEUE =~ ^[1-9][0-9]*$ ]] || die "bad --queue"
[[ $WINDOW =~ ^[0-9]+$ ]] || die "bad --window"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: fabric_tree: needs root (network namespaces, tc)"; exit 77; }
fab_check_tools || exit 2
BUILD=$(cd "$BUILD" && pwd) || die "no build directory $BUILD"
SW=$BUILD/p4/swswitch/serene-switch BA=$BUILD/bench/bench_allreduce BG=$BUILD/bench/bench_gloo
CTL=$BUILD/lib/ctl/serene-ctl
for f in "$SW" "$BA" "$CTL"; do [ -x "$f" ] || die "$f was not built"; done
[ "$MTU" = 9000 ] && ELEMS=2048 || ELEMS=256
case $SIZE in *[kK]) BYTES=$((${SIZE%?} << 10)) ;; *[mM]) BYTES=$((${SIZE%?} << 20)) ;; *) BYTES=$SIZE ;; esac
CALLS=$((REPS + 1)) # bench_*: --warmup 1, then REPS samples of one call

fab_lifetime fabric_tree "hh$$" || die "cannot make a work directory"
WORK=$FAB_DIR
NS_ROOT=hh$$-root
ns_leaf() { echo "hh$$-l$1"; }
ns_w() { echo "hh$$-w$1"; }

# link UPPER_NS UPPER_IF LOWER_NS LOWER_IF NET: veth, UPPER .1, LOWER .2.
link() {
    ip link add name "$2" mtu "$MTU" netns "$1" type veth peer name "$4" mtu "$MTU" netns "$3" &&
        ip -n "$1" addr add "$5.1/24" dev "$2" && ip -n "$3" addr add "$5.2/24" dev "$4" &&
        ip -n "$1" link set "$2" up && ip -n "$3" link set "$4" up
}
fab_addns "$NS_ROOT" || die "cannot make namespaces"
ip netns exec "$NS_ROOT" sysctl -qw net.ipv4.ip_forward=1 || die "ip_forward"
for l in 0 1; do
    fab_addns "$(ns_leaf $l)" || die "cannot make namespaces"
    ip netns exec "$(ns_leaf $l)" sysctl -qw net.ipv4.ip_forward=1 || die "ip_forward"
    link "$NS_ROOT" "d$l" "$(ns_leaf $l)" uplink "10.78.$((l + 1))" || die "link root-l$l"
    ip -n "$(ns_leaf $l)" route add default via "10.78.$((l + 1)).1" || die "route"
done
for r in 0 1 2 3; do
    l=$((r / 2))
    fab_addns "$(ns_w $r)" || die "cannot make namespaces"
    link "$(ns_leaf $l)" "d$((r % 2))" "$(ns_w $r)" eth0 "10.78.$((10 + r))" || die "link l$l-w$r"
    ip -n "$(ns_w $r)" route add default via "10.78.$((10 + r)).1" || die "route"
    ip -n "$NS_ROOT" route add "10.78.$((10 + r)).0/24" via "10.78.$((l + 1)).2" || die "route"
done

# shape RATE: TBF at both ends of each leaf-root link.
shape() {
    local l
    for l in 0 1; do
        tc -n "$NS_ROOT" qdisc replace dev "d$l" root tbf rate "${1}mbit" burst 64kb limit "$QUEUE" &&
            tc -n "$(ns_leaf $l)" qdisc replace dev uplink root tbf rate "${1}mbit" burst 64kb limit "$QUEUE" ||
            die "tc"
    done
}
# uplink_bytes: "tx0 rx0 tx1 rx1" of the leaves' uplinks.
uplink_bytes() {
    local l s=/sys/class/net/uplink/statistics
    for l in 0 1; do ip netns exec "$(ns_leaf $l)" cat $s/tx_bytes $s/rx_bytes; done | tr '\n' ' '
}

# ranks TAG PROGRAM ARGS...: one process per worker namespace, bounded;
# @RANK@ in the arguments is replaced per rank; sets worst.
# shellcheck disable=SC2154 # rc: set by fab_wait
ranks() {
    local tag=$1 r pids=() a
    shift
    worst=0
    for r in 0 1 2 3; do
        local args=()
        for a in "$@"; do args+=("${a//@RANK@/$r}"); done
        fab_spawn "$WORK/$tag.r$r.csv" "$(ns_w $r)" timeout -k 5 "$CASE_TIMEOUT" "${args[@]}"
        pids+=("$FAB_SPAWNED")
    done
    for r in 0 1 2 3; do
        fab_wait "${pids[$r]}" $((CASE_TIMEOUT + 10))
        [ $worst -eq 0 ] && worst=$rc
    done
}

# report TAG RATE BEFORE AFTER: the case's line from rank 0's CSV.
report() {
    local tag=$1 rate=$2 line
    line=$(awk -F, '$1 ~ /^"allreduce"$/ { print; exit }' "$WORK/$tag.r0.csv")
    [ -n "$line" ] && [ "$worst" = 0 ] || { echo "  $tag: FAILED (status $worst)"; tail -n 5 "$WORK/$tag.r0.csv"; FAILS=$((FAILS + 1)); return; }
    [ -n "${FABRIC_TREE_DEBUG:-}" ] && echo "$line"
    echo "$line" | awk -F, -v tag="$tag" -v rate="$rate" -v b0="$3" -v b1="$4" -v size="$BYTES" -v calls=$CALLS '{
        split(b0, x, " "); split(b1, y, " ")
        up = (y[1] - x[1] > y[3] - x[3] ? y[1] - x[1] : y[3] - x[3]) / calls / size
        down = (y[2] - x[2] > y[4] - x[4] ? y[2] - x[2] : y[4] - x[4]) / calls / size
        gsub(/"/, "", $9)
        printf "  %-6s %4d Mbit/s  median %7.3f s  best %7.3f s  leaf-root link per call: up %.3fx down %.3fx  %s\n",
            tag, rate, $5, $6, up, down, $9
        printf "%s %d %.3f %.3f %.3f\n", tag, rate, $5, up, down >> rows }' rows="$WORK/rows"
}

# the markdown table of the cases in $WORK/rows (system rate median up down)
table() {
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?');" \
        "$SIZE, MTU $MTU, window $WINDOW, $REPS samples; load average $LOAD0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end:"
    echo
    echo "| leaf-root links | tree | single switch | Gloo ring | single / tree | Gloo / tree |" \
        "bytes per leaf-root link / tensor (up, down): tree, single, Gloo |"
    echo "|---|---|---|---|---|---|---|"
    awk '{ t[$1, $2] = $3; b[$1, $2] = sprintf("%.3f/%.3f", $4, $5); if (!($2 in seen)) { seen[$2] = 1; r[++n] = $2 } }
        function s(x) { return x == "" ? "-" : x " s" }
        function q(x, y) { return (x != "" && y != "" && y + 0 > 0) ? sprintf("%.2f", x / y) : "-" }
        function c(x) { return x == "" ? "-" : x }
        END { for (i = 1; i <= n; i++) { k = r[i]
            printf "| %d Mbit/s | %s | %s | %s | %s | %s | %s, %s, %s |\n", k, s(t["tree", k]), s(t["single", k]),
                s(t["gloo", k]), q(t["single", k], t["tree", k]), q(t["gloo", k], t["tree", k]),
                c(b["tree", k]), c(b["single", k]), c(b["gloo", k]) } }' "$WORK/rows"
}

FAILS=0
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$WORK/rows"
echo "== fabric_tree: 4 workers, 2 leaves; $SIZE ($BYTES B), $REPS samples + 1 warm-up;" \
    "MTU $MTU, $ELEMS values/packet, Serene window $WINDOW; queue $QUEUE B; load average $LOAD0"
printf '%s\n' "job = 0" "workers = 4" "store = 0" "elems = $ELEMS" "slots = 128" "upjob = 100" \
    "leaf.0 = 0-1" "leaf.0.up = 10.78.1.1:48200" "leaf.1 = 2-3" "leaf.1.up = 10.78.2.1:48200" >"$WORK/job.conf"
"$CTL" tree --job-file "$WORK/job.conf" >"$WORK/tree.txt" || die "serene-ctl tree"
read -r -a ROOT_JOBS <<<"$(sed -n 's/^root //p' "$WORK/tree.txt")"
read -r -a LEAF0_JOBS <<<"$(sed -n 's/^leaf\.0 //p' "$WORK/tree.txt")"
read -r -a LEAF1_JOBS <<<"$(sed -n 's/^leaf\.1 //p' "$WORK/tree.txt")"
for rate in ${RATES//,/ }; do
    shape "$rate"
    for sys in tree single gloo; do
        nonce=$((RANDOM << 15 | RANDOM))
        case $sys in
        tree | single)
            sw_pids=()
            if [ $sys = tree ]; then
                fab_spawn "$WORK/$sys-root.log" "$NS_ROOT" "$SW" --listen 0.0.0.0:48200 "${ROOT_JOBS[@]}"
                sw_pids+=("$FAB_SPAWNED")
                fab_spawn "$WORK/$sys-l0.log" "$(ns_leaf 0)" "$SW" --listen 0.0.0.0:48200 "${LEAF0_JOBS[@]}"
                sw_pids+=("$FAB_SPAWNED")
                fab_spawn "$WORK/$sys-l1.log" "$(ns_leaf 1)" "$SW" --listen 0.0.0.0:48200 "${LEAF1_JOBS[@]}"
                sw_pids+=("$FAB_SPAWNED")
            else
                # bound to one address: its answers come from the address
                # every worker sends to, whichever link they leave by
                fab_spawn "$WORK/$sys-root.log" "$NS_ROOT" "$SW" --listen 10.78.1.1:48200 --job "0:4:$ELEMS,store=0"
                sw_pids+=("$FAB_SPAWNED")
            fi
            sleep 0.5
            b0=$(uplink_bytes)
            # tree: each rank's leaf (10.78.1R.1); single: the root, routed (10.78.1.1)
            ranks "$sys" env SERENE_RANK=@RANK@ SERENE_WORLD_SIZE=4 SERENE_JOB_NONCE=$nonce SERENE_WINDOW="$WINDOW" \
                SERENE_TIMEOUT_MS=$((CASE_TIMEOUT * 500)) sh -c 'r=$SERENE_RANK; if [ "$0" = tree ]; then
                    export SERENE_SWITCH=10.78.$((10 + r)).1:48200; else export SERENE_SWITCH=10.78.1.1:48200; fi
                    exec "$@"' "$sys" "$BA" --sizes "$BYTES" --reps "$REPS" --warmup 1 --iters 1 --csv
            b1=$(uplink_bytes)
            fab_kill_list "${sw_pids[@]}"
            ;;
        gloo)
            [ -x "$BG" ] || { echo "  gloo: no bench_gloo in $BUILD (Debian libgloo-dev g++): skipped"; continue; }
            mkdir -p "$WORK/gloo-store.$rate"
            b0=$(uplink_bytes)
            ranks "$sys" "$BG" -n 4 --rank @RANK@ --host "10.78.1@RANK@.2" --store "$WORK/gloo-store.$rate" \
                --chunked 1 --timeout "$CASE_TIMEOUT" --sizes "$BYTES" --reps "$REPS" --warmup 1 --iters 1 --csv
            b1=$(uplink_bytes)
            ;;
        esac
        report "$sys" "$rate" "$b0" "$b1"
    done
done
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
table
[ $FAILS -eq 0 ] || exit 1
exit 0
