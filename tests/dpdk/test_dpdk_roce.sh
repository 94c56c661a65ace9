#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# serene-switch over DPDK takes RoCEv2 frames and answers in RoCEv2: the
# conformance input p4/traces/roce.in.pcap (frames as a worker's UC QP
# emits them for the rdma transport) is replayed into a net_pcap port, and
# what the switch sends out of it must be p4/traces/roce.out.pcap, field by
# field (tests/dpdk/roce_compare.py: ICRCs checked; the JOIN_ACK's proof
# cookie and the MACs aside). The job is the conformance job
# (p4/conformance/job.conf with the P4 program's 32 values and 64 slots).
#   test_dpdk_roce.sh TRACES_DIR
# Needs root (DPDK virtual devices) and python3: skips (77) otherwise.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 TRACES_DIR" >&2; exit 2; }
traces=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/harness.sh"
harness_init dpdk-roce
[ "$(id -u)" -eq 0 ] || skip "DPDK virtual devices need root"
command -v python3 >/dev/null || skip "python3 not installed"

EAL="--no-huge -m 256 --no-pci --no-shconf --log-level=warning"
EAL+=" --vdev=net_pcap0,rx_pcap=$traces/roce.in.pcap,tx_pcap=$work/out.pcap"
want=$(python3 -c "import sys; sys.path.insert(0, '$here/../conformance')
from check_roce_tshark import frames; print(len(list(frames('$traces/roce.out.pcap'))))")
start_switch 10.0.0.254:48200 --dpdk "$EAL" --stats-interval 0.2 \
    --job "3:3:32:64,store=256,ring=8,token=5e4e70c3a11ab1e5" ||
    fail "serene-switch did not start (status $?)"
# net_pcap reads the whole input at once; wait (10 s at most) for the answers.
for _ in $(seq 100); do
    grep -q "dpdk_roce_tx=$want " "$work/switch.log" && break
    sleep 0.1
done
stop_switch
grep -o "dpdk_roce_rx=[0-9]* dpdk_roce_bad=[0-9]* dpdk_roce_tx=[0-9]*" "$work/switch.log" | tail -1
python3 "$here/roce_compare.py" "$traces/roce.out.pcap" "$work/out.pcap" ||
    fail "serene-switch's RoCEv2 answers differ from p4/traces/roce.out.pcap"
echo "PASS: dpdk-roce"
