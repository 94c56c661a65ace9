#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_bmv2_readme.sh BUILD - p4/README.md's BMv2 walk ("Compile, run,
# configure"), run as written: every fenced sh block of that section that
# follows a `<!-- bmv2-walk ... -->` line, in order, one bash script, with
# the repository's root (p4/ and build/ linked to this checkout and BUILD)
# as its working directory. It passes when the three workers print
# "rank R of 3: ... correct" and their exit status 0, and the script ends
# with status 0.
#
# The script runs in namespaces of its own (unshare: network, mount, PID):
# its veth pairs and the thrift port are in a fresh network namespace (lo
# up, as on a host), the names of `ip netns add` in a private tmpfs on
# /run, its files and simple_switch's notification socket in one on /tmp.
# So the README's fixed names (srw0, srsw0, port 9090) meet no other run,
# and when the script ends or is killed (timeout, Ctrl-C, TERM) its
# processes, namespaces and links go with it. Logs: BUILD/bmv2-readme/.
#
# Needs root, p4c-bm2-ss, simple_switch and simple_switch_CLI on PATH (not
# in Debian: p4/README.md), ip, unshare, timeout, and BUILD's
# examples/allreduce_hello and lib/ctl/serene-ctl; exit 77 (skip) without
# them. Exit status: 0 pass, 1 fail, 2 bad usage.
set -uo pipefail

skip() { echo "SKIP: bmv2-readme: $*"; exit 77; }
[ $# -eq 1 ] || { sed -n '3,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
case $1 in -h | --help) sed -n '3,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
BUILD=$(cd "$1" && pwd) || exit 2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
README=$ROOT/p4/README.md
LIMIT=${BMV2_README_TIMEOUT:-600}

[ "$(id -u)" = 0 ] || skip "needs root"
for t in p4c-bm2-ss simple_switch simple_switch_CLI ip unshare timeout; do
    command -v "$t" >/dev/null || skip "$t not on PATH (p4c and BMv2 are not in Debian: p4/README.md)"
done
# The namespace's /tmp is its own: tools found under /tmp would be gone.
for t in p4c-bm2-ss simple_switch simple_switch_CLI; do
    case "$(command -v "$t") $(realpath "$(command -v "$t")")" in
    /tmp/* | *" /tmp/"*) skip "$t is under /tmp, which the test's namespace hides" ;;
    esac
done
for f in examples/allreduce_hello lib/ctl/serene-ctl; do
    [ -x "$BUILD/$f" ] || skip "$BUILD/$f not built"
done

OUT=$BUILD/bmv2-readme
rm -rf "$OUT"
mkdir -p "$OUT" || exit 1

# The section's marked blocks: a fence opened within 2 lines after a
# marker, up to its closing fence.
awk '/^## / { sect = ($0 == "## Compile, run, configure") }
     sect && /^<!-- bmv2-walk/ { marks++; want = 3; next }
     inblk && /^```/ { inblk = 0; blocks++; print ""; next }
     inblk { print; next }
     want && /^```sh$/ { inblk = 1; want = 0; next }
     want { if (--want == 0) { print "marker without a sh block" > "/dev/stderr"; bad = 1 } }
     END { printf "%d %d\n", marks, blocks > "/dev/stderr"; exit (bad || marks == 0 || marks != blocks) }' \
    "$README" >"$OUT/walk.sh" 2>"$OUT/extract.log" ||
    { echo "FAIL: bmv2-readme: the marked blocks of p4/README.md: $(cat "$OUT/extract.log")"; exit 1; }
read -r _ nblocks <"$OUT/extract.log"
echo "bmv2-readme: $nblocks blocks of p4/README.md, $(wc -l <"$OUT/walk.sh") lines ($OUT/walk.sh)"

# Runs in the new namespaces: a host's loopback and /sys, private /run and
# /tmp, the repository's root as the README means it; then the script, as
# it is.
cat >"$OUT/inner.sh" <<'EOF'
set -u
OUT=$1 ROOT=$2 BUILD=$3
unset LD_LIBRARY_PATH MALLOC_PERTURB_   # meson test's: a user's shell has neither
ip link set lo up || exit 1
mount -t tmpfs -o mode=755 serene-run /run && mount -t tmpfs serene-tmp /tmp || exit 1
mount -t sysfs serene-sys /sys || exit 1   # this namespace's interfaces, as on a host
mkdir /tmp/root && ln -s "$ROOT/p4" /tmp/root/p4 && ln -s "$BUILD" /tmp/root/build || exit 1
cd /tmp/root || exit 1
bash -x "$OUT/walk.sh"
st=$?
cp /tmp/serene-bmv2/*.log /tmp/serene-bmv2/*.txt "$OUT/" 2>/dev/null
exit $st
EOF

upid=
cleanup() {
    # unshare's child (PID 1 of the namespace) gets SIGKILL when unshare
    # dies, and takes every process of the namespace with it.
    [ -n "$upid" ] && kill "$upid" 2>/dev/null
    [ -n "$upid" ] && wait "$upid" 2>/dev/null
    upid=
}
trap cleanup EXIT
trap 'echo "bmv2-readme: stopped by a signal"; exit 1' INT TERM

timeout -k 5 "$LIMIT" unshare --net --mount --pid --fork --mount-proc --kill-child \
    bash "$OUT/inner.sh" "$OUT" "$ROOT" "$BUILD" >"$OUT/run.log" 2>&1 &
upid=$!
wait "$upid"
st=$?
upid=

# The script's own output (the trace's '+' lines left out).
grep -v '^+' "$OUT/run.log" | tail -n 20
fail=0
for r in 0 1 2; do
    grep -Eq "^rank $r of 3: grad\[0\] = 6, grad\[999\] = 6000, correct$" "$OUT/run.log" ||
        { echo "FAIL: bmv2-readme: rank $r printed no correct result"; fail=1; }
done
n=$(grep -c '^worker exit status 0$' "$OUT/run.log")
[ "$n" -eq 3 ] || { echo "FAIL: bmv2-readme: $n of 3 workers exited with status 0"; fail=1; }
[ "$st" -eq 0 ] || { echo "FAIL: bmv2-readme: the script ended with status $st (124: over $LIMIT s)"; fail=1; }
if [ "$fail" -ne 0 ]; then
    for f in cli.log switch.log p4c.log; do
        [ -s "$OUT/$f" ] && { echo "--- $f (last lines)"; tail -n 5 "$OUT/$f"; }
    done
    echo "--- run.log (last lines; all of it in $OUT/run.log)"
    tail -n 15 "$OUT/run.log"
    exit 1
fi
echo "PASS: bmv2-readme: p4/README.md's walk as written: 3 workers correct through simple_switch"
