# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034 # NS_ROOT is read by the callers
# tree_lib.sh - what test_tree.sh and test_tree_bmv2.sh share, sourced after
# their root and tool checks (ROOT set): bench/fabric_net.sh, and
#   tree_init NAME  fab_lifetime NAME: the work directory $tmp, and the
#                   traps that remove everything made (fab_down:
#                   namespaces, links, processes by PID) and the directory;
#   fail MESSAGE    "FAIL: NAME: MESSAGE", the tail of every log, exit 1;
#   NS_ROOT, ns_leaf L, ns_w R  the namespace names of the tree: a root,
#                   leaves 0 and 1, workers 0-3.
# shellcheck source=../../bench/fabric_net.sh
. "$ROOT/bench/fabric_net.sh"
NS_ROOT=hh$$-root
ns_leaf() { echo "hh$$-l$1"; }
ns_w() { echo "hh$$-w$1"; }
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
