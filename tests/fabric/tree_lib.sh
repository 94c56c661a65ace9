# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034 # NS_ROOT is read by the callers
# tree_lib.sh - what test_tree.sh, test_tree_bmv2.sh and test_share_bmv2.sh
# share, sourced with ROOT set: bench/fabric_net.sh, and
#   tree_init NAME  fab_lifetime NAME: the work directory $tmp, and the
#                   traps that remove everything made (fab_down:
#                   namespaces, links, processes by PID) and the directory;
#   fail MESSAGE    "FAIL: NAME: MESSAGE", the tail of every log, exit 1;
#   NS_ROOT, ns_leaf L, ns_w R  the namespace names of the tree: a root,
#                   leaves 0 and 1, workers 0-3;
#   bmv2_tools      the BMv2 tools, or a skip;
#   bmv2_host       a host namespace on a switch namespace's port.
# shellcheck source=../../bench/fabric_net.sh
. "$ROOT/bench/fabric_net.sh"
NS_ROOT=hh$$-root
ns_leaf() { echo "hh$$-l$1"; }
ns_w() { echo "hh$$-w$1"; }
# bmv2_tools: P4C, SS and CLI (p4c-bm2-ss, simple_switch, simple_switch_CLI,
# or $P4C_BM2_SS, $SIMPLE_SWITCH, $SIMPLE_SWITCH_CLI); exit 77 (skip)
# without root or without one of them or ip.
bmv2_tools() {
    local t
    P4C=${P4C_BM2_SS:-p4c-bm2-ss} SS=${SIMPLE_SWITCH:-simple_switch} CLI=${SIMPLE_SWITCH_CLI:-simple_switch_CLI}
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
    for t in "$P4C" "$SS" "$CLI" ip; do
        command -v "$t" >/dev/null 2>&1 || { echo "SKIP: $t not found"; exit 77; }
    done
}
# bmv2_host NS ADDR PORT SW_NS SW_ADDR: namespace NS with eth0 at ADDR/24,
# the peer of switch SW_NS's port d<PORT>; SW_ADDR through a static
# neighbour (BMv2 answers no ARP). gso_max_segs 1: the host's kernel cuts
# UDP GSO trains into datagrams before the veth (bench/fabric_net.sh says
# why BMv2 needs it).
bmv2_host() {
    local mac=02:53:45:00:00:fe # p4/include/constants.p4's SR_P4_SWITCH_MAC
    fab_addns "$1" || fail "cannot make namespace $1"
    ip link add name eth0 netns "$1" type veth peer name "d$3" netns "$4" &&
        ip -n "$1" link set eth0 gso_max_segs 1 && ip -n "$1" addr add "$2/24" dev eth0 &&
        ip -n "$1" link set eth0 up && ip -n "$4" link set "d$3" up &&
        ip -n "$1" neigh add "$5" lladdr $mac dev eth0 || fail "the link of $1"
}
tree_init() {
    TREE_NAME=$1
    fab_lifetime "$1" "hh$$" || exit 1
    tmp=$FAB_DIR
}
fail() {
    echo "FAIL: $TREE_NAME: $*"
    for f in "$tmp"/*.log; do echo "== $f"; tail -n 20 "$f"; done
    exit 1
}
