#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_dpdk.sh CASE SERENE_RUN AR_WORKER SSP_WORKER SSP_CHECK DPDK_APP SERENE_DUMP
# - the DPDK data path end to end: real serene-switch processes in DPDK
# mode ($SERENE_SWITCH_BIN) and real worker processes on the dpdk
# transport, over virtual devices, without hugepages.
#
#   memif-n2, memif-n3   2 or 3 workers, each on its own net_memif port to
#                        the switch (memif server side in the switch):
#                        allreduce exact within the bound (ar_worker).
#   memif-loss-n2, memif-loss-n3   the same with 5% loss and 2% duplication
#                        injected in the switch: retransmissions must occur.
#   memif-jumbo-n2       2 workers, 2048 elements per packet (8 KiB frames);
#                        memif buffers of 16 KiB (bsize=16384: DPDK 22.11's
#                        memif garbles frames spread over several buffers).
#   memif-zc-n2          memif-jumbo-n2 with the workers' memif clients in
#                        zero-copy mode (zero-copy=yes, their EAL with
#                        --single-file-segments) and rings of 2^11
#                        descriptors (rsize=11) on both ends: the worker's
#                        pool must fill both its rings (a pool sized for
#                        2^10 left the receive ring empty, the switch
#                        dropped every answer and the JOIN timed out).
#   memif-ssp            push/pull/clock over memif: the store under loss
#                        (exact modular sums), then 30 clocks under SSP(1)
#                        with a slow rank, checked by ssp_check.
#   afpacket             2 workers on net_af_packet, each in its own network
#                        namespace on one end of a veth pair whose other end
#                        is in the switch's namespace (net_af_packet there):
#                        allreduce exact. Namespaces and veths are created
#                        here and removed on exit, with names unique to the
#                        run.
#   tap                  1 worker on net_tap, talking through the kernel's
#                        IPv4/UDP stack to serene-switch in UDP mode, all in a
#                        namespace created here: the kernel checks every
#                        frame's checksums on the way in (static neighbour
#                        entry: the dpdk transport does not answer ARP).
#   app-eal              the application calls rte_eal_init itself before
#                        creating its contexts (dpdk_app app-eal), 2 ranks.
#   pcap                 a context on a net_pcap device the library probes
#                        itself (a vdev spec as its port): no switch, so
#                        create times out; the JOIN frames it wrote are read
#                        back by serene-dump with their checksums checked.
#
# Needs root (EAL, af_packet, namespaces): exits 77 (skip) otherwise. Every
# process runs under `timeout`; the switch is stopped by its PID; the
# temporary directory is removed; a failure prints "FAIL: ..." and exits 1.
set -uo pipefail

if [ $# -ne 7 ]; then
    echo "usage: $0 CASE SERENE_RUN AR_WORKER SSP_WORKER SSP_CHECK DPDK_APP SERENE_DUMP" >&2
    exit 2
fi
CASE=$1 RUN=$2 AR=$3 SSPW=$4 CHECK=$5 APP=$6 DUMP=$7
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: $CASE: DPDK virtual devices and namespaces need root"
    exit 77
fi

# No hugepages, no PCI scan, no shared config files (each process is its
# own primary), quiet unless something is wrong.
EAL="--no-huge -m 256 --no-pci --no-shconf --log-level=warning"
MEMIF_OPT=""  # extra memif vdev arguments, both sides
CLIENT_OPT="" CLIENT_EAL=""  # the workers' only: memif arguments, EAL arguments
export SERENE_TIMEOUT_MS=30000 SERENE_TRANSPORT=dpdk
# The library logs its port line and counters at info.
export SERENE_LOG_LEVEL=${SERENE_LOG_LEVEL:-info}

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init "$CASE"
netns=()

# shellcheck disable=SC2317 # run by the exit trap, once every process is stopped
on_cleanup() {
    local ns
    for ns in "${netns[@]+"${netns[@]}"}"; do
        ip netns del "$ns" 2>/dev/null
    done
}

# memif_switch N ARGS...: a switch in DPDK mode with N memif servers, one
# socket per worker: $work/memif<r>.
memif_switch() {
    local n=$1 vdevs="" r
    shift
    for r in $(seq 0 $((n - 1))); do
        vdevs+=" --vdev=net_memif$r,role=server,socket=$work/memif$r$MEMIF_OPT"
    done
    start_switch 127.0.0.1:0 --dpdk "$EAL$vdevs" "$@" || fail "serene-switch did not start"
    grep -q "on dpdk" "$work/switch.log" || fail "the switch is not in DPDK mode"
}

# The worker side of memif_switch: rank r is a memif client on socket r.
memif_worker_env() {
    export SERENE_DPDK_EAL_ARGS="$EAL$CLIENT_EAL --vdev=net_memif0,role=client,socket=$work/memif%r$MEMIF_OPT$CLIENT_OPT"
    export SERENE_DPDK_PORT=net_memif0
}

# The switch's counters at exit must show DPDK traffic and no frame it
# could not route.
check_switch_dpdk() {
    stop_switch
    local line
    line=$(grep "serene-switch: switch " "$work/switch.log" | tail -1)
    echo "switch: $line" | tr ' ' '\n' | grep -E '^(dpdk_|chaos_rx_dropped|chaos_tx_dropped)' |
        tr '\n' ' '
    echo
    [[ $line =~ dpdk_rx=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
        fail "the switch received nothing on its DPDK ports"
    [[ $line =~ dpdk_tx_no_route=0 ]] || fail "the switch had answers with no learnt route"
}

case_memif() {
    local n=$1 loss=$2 elems=${3:-256} extra=() wargs=()
    if [ "$loss" = 1 ]; then
        extra=(--loss 0.05 --dup 0.02 --seed "$n")
        wargs=(--expect-retrans)
    fi
    memif_switch "$n" --job "0:$n:$elems" "${extra[@]+"${extra[@]}"}"
    memif_worker_env
    ranks "allreduce-n$n" 240 "$n" -- "$AR" --elems "$elems" \
        --sizes "1,$((elems - 1)),$((elems + 1)),1000000,$elems" --reps 3 \
        --seed "$((n + 20))" "${wargs[@]+"${wargs[@]}"}"
    [ "$(grep -c 'dpdk: port 0 (net_memif0) up' "$work/allreduce-n$n.out")" -eq "$n" ] ||
        fail "not every rank reported its memif port up"
    check_switch_dpdk
}

case_ssp() {
    local n=3 dir=$work/clocks
    memif_switch "$n" --job "0:$n,store=2048,policy=bsp" --job "1:$n,store=64,policy=ssp:1" \
        --loss 0.05 --dup 0.02 --seed 9
    memif_worker_env
    ranks store 120 "$n" --job 0 -- "$SSPW" store --iters 20 --offset 100 --count 1000 \
        --capacity 2048 --seed 5 --expect-retrans
    [ "$(grep -c 'store: 20 iterations' "$work/store.out")" -eq "$n" ] ||
        fail "not every rank reported its 20 store iterations"
    mkdir "$dir"
    ranks clocks 120 "$n" --job 1 -- "$SSPW" clocks --clocks 30 --compute-ms 2 --slow-rank 2 \
        --slow-ms 10 --out "$dir"
    timeout 20 "$CHECK" clocks "$dir" "$n" 30 --expect ssp:1 --fast 0,1 | sed "s/^/    /"
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail "the clock logs break SSP(1) (see above)"
    check_switch_dpdk
}

case_afpacket() {
    local id n=2 r vdevs=""
    id=$(printf '%x' $$)
    local swns=srdpdk-sw-$id
    command -v ip >/dev/null || { echo "SKIP: afpacket: no ip(8)"; exit 77; }
    # Root without CAP_SYS_ADMIN (some containers) cannot: like no root.
    ip netns add "$swns" || { echo "SKIP: afpacket: cannot create network namespaces here"; exit 77; }
    netns+=("$swns")
    ip -n "$swns" link set lo up
    for r in $(seq 0 $((n - 1))); do
        local wns=srdpdk-w$r-$id
        ip netns add "$wns" || fail "cannot create namespace $wns"
        netns+=("$wns")
        ip -n "$wns" link set lo up
        # One veth pair per worker: sw<r> in the switch's namespace, eth0 in
        # the worker's; no IP addresses, so the kernels stay out of the way.
        ip link add "sw$r" netns "$swns" type veth peer name eth0 netns "$wns" ||
            fail "cannot create the veth pair of worker $r"
        for ns in "$swns" "$wns"; do
            ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
        done
        ip -n "$swns" link set "sw$r" up
        ip -n "$wns" link set eth0 up
        vdevs+=" --vdev=net_af_packet$r,iface=sw$r"
    done
    NSX=(ip netns exec "$swns")
    start_switch 10.9.0.1:0 --dpdk "$EAL$vdevs" --job "0:$n" || fail "serene-switch did not start"
    NSX=()
    # serene-run gives each rank SERENE_SWITCH=127.0.0.1:PORT; the wrapper
    # enters the rank's namespace and addresses the switch at 10.9.0.1.
    ranks afpacket 180 "$n" -- /bin/sh -c 'exec ip netns exec "srdpdk-w$SERENE_RANK-$0" env \
        SERENE_SWITCH=10.9.0.1:48200 SERENE_BIND=10.9.1.$((SERENE_RANK + 2)):40000 \
        SERENE_DPDK_EAL_ARGS="$1 --vdev=net_af_packet0,iface=eth0" SERENE_DPDK_PORT=net_af_packet0 \
        "$2" --elems 256 --sizes 1,255,257,300000,256 --reps 3 --seed 31' "$id" "$EAL" "$AR"
    [ "$(grep -c 'dpdk: port 0 (net_af_packet0) up' "$work/afpacket.out")" -eq "$n" ] ||
        fail "not every rank reported its af_packet port up"
    check_switch_dpdk
}

case_tap() {
    local id ns mac=02:00:5e:00:53:02
    id=$(printf '%x' $$)
    ns=srdpdk-tap-$id
    command -v ip >/dev/null || { echo "SKIP: tap: no ip(8)"; exit 77; }
    [ -c /dev/net/tun ] || { echo "SKIP: tap: no /dev/net/tun"; exit 77; }
    ip netns add "$ns" || { echo "SKIP: tap: cannot create network namespaces here"; exit 77; }
    netns+=("$ns")
    ip -n "$ns" link set lo up
    NSX=(ip netns exec "$ns")
    start_switch 0.0.0.0:0 --job 0:1 || fail "serene-switch (udp) did not start"
    NSX=()
    # The worker creates the tap device; its address and the neighbour
    # entry can only be set once it exists.
    spawn "$work/tap.out" ip netns exec "$ns" env SERENE_RANK=0 SERENE_WORLD_SIZE=1 SERENE_JOB=0 \
        SERENE_SWITCH="10.9.2.1:$port" SERENE_BIND=10.9.2.2:40000 \
        SERENE_DPDK_EAL_ARGS="$EAL --vdev=net_tap0,iface=srtap0,mac=$mac" SERENE_DPDK_PORT=net_tap0 \
        timeout -k 5 120 "$AR" --elems 256 --sizes 1,257,200000 --reps 2 --seed 41
    local wpid=$spawned up=0
    for _ in $(seq 200); do
        ip -n "$ns" link show srtap0 >/dev/null 2>&1 && { up=1; break; }
        kill -0 "$wpid" 2>/dev/null || break
        sleep 0.05
    done
    [ "$up" = 1 ] || { wait_pid "$wpid" 10; cat "$work/tap.out"; fail "the worker created no srtap0"; }
    ip -n "$ns" addr add 10.9.2.1/24 dev srtap0 &&
        ip -n "$ns" link set srtap0 up &&
        ip -n "$ns" neigh replace 10.9.2.2 lladdr "$mac" dev srtap0 nud permanent ||
        fail "cannot configure srtap0"
    wait_pid "$wpid" 130
    sed "s/^/    /" "$work/tap.out"
    [ "$rc" -eq 0 ] || fail "the worker on net_tap exited with $rc"
    grep -q 'dpdk: port 0 (net_tap0) up' "$work/tap.out" || fail "no net_tap0 port line"
    stop_switch
    grep -q "udp_rx_oversize=0 udp_rx_errors=0" "$work/switch.log" || fail "switch UDP errors"
}

case_app_eal() {
    memif_switch 2 --job 0:2 --job 1:2
    unset SERENE_DPDK_EAL_ARGS SERENE_DPDK_PORT
    ranks app-eal 120 2 -- "$APP" app-eal "$EAL --vdev=net_memif0,role=client,socket=$work/memif%r" \
        net_memif0
    [ "$(grep -c 'app-owned EAL: PASS' "$work/app-eal.out")" -eq 2 ] ||
        fail "not every rank passed"
    grep -q "EAL already initialized by the application" "$work/app-eal.out" ||
        fail "the library did not report using the application's EAL"
    check_switch_dpdk
}

case_pcap() {
    # An empty capture (global header only, Ethernet) for the device's RX.
    printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x01\x00\x00\x00' \
        >"$work/empty.pcap"
    SERENE_TIMEOUT_MS=1500 SERENE_SWITCH=10.9.0.1:48200 SERENE_BIND=10.9.1.2:40000 \
        SERENE_DPDK_EAL_ARGS="$EAL" timeout -k 5 60 "$APP" join-only \
        "net_pcap0,rx_pcap=$work/empty.pcap,tx_pcap=$work/out.pcap" >"$work/pcap.out" 2>&1
    rc=$?
    sed "s/^/    /" "$work/pcap.out"
    [ "$rc" -eq 0 ] || fail "dpdk_app join-only exited with $rc"
    timeout 20 "$DUMP" "$work/out.pcap" >"$work/dump.out" 2>&1 || {
        cat "$work/dump.out"
        fail "serene-dump cannot read the capture"
    }
    sed -n '1,3p' "$work/dump.out" | sed "s/^/    /"
    local joins
    joins=$(grep -c '10.9.1.2:40000 -> 10.9.0.1:48200 JOIN ' "$work/dump.out")
    [ "$joins" -ge 1 ] || fail "no JOIN frame from 10.9.1.2:40000 to 10.9.0.1:48200 in the capture"
    [ "$(grep -vc ' JOIN ' "$work/dump.out")" -eq 0 ] || fail "frames other than JOIN, or bad ones"
    echo "pcap: $joins JOIN frames written by net_pcap, all valid"
}

case $CASE in
memif-n2) case_memif 2 0 ;;
memif-n3) case_memif 3 0 ;;
memif-loss-n2) case_memif 2 1 ;;
memif-loss-n3) case_memif 3 1 ;;
memif-jumbo-n2) MEMIF_OPT=,bsize=16384 case_memif 2 0 2048 ;;
memif-zc-n2)
    MEMIF_OPT=,bsize=16384,rsize=11 CLIENT_OPT=,zero-copy=yes CLIENT_EAL=" --single-file-segments"
    case_memif 2 0 2048
    ;;
memif-ssp) case_ssp ;;
afpacket) case_afpacket ;;
tap) case_tap ;;
app-eal) case_app_eal ;;
pcap) case_pcap ;;
*) echo "unknown case $CASE" >&2; exit 2 ;;
esac
echo "PASS: $CASE"
