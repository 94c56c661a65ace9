#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_pcap.sh - packet tracing (SERENE_PCAP) and serene-dump, end to end.
#
#   test_pcap.sh full SERENE_RUN AR_WORKER SERENE_DUMP PCAP_TWO_CTX
#     Against a real serene-switch ($SERENE_SWITCH_BIN) on 127.0.0.1:
#     allreduce   2 ranks of ar_worker under serene-run, one environment,
#                 SERENE_PCAP=.../ar-r%r.pcap: each rank's file is a pcap
#                 (nanosecond magic, Ethernet); serene-dump reads it to the
#                 end with no malformed or foreign frame; JOIN, JOIN_ACK,
#                 AR_DATA and AR_RESULT all appear; the packets toward the
#                 switch's address equal the rank's pkts_sent (as its
#                 context logs them when it closes) and are
#                 JOIN + AR_DATA (+ AR_PROBE), those from it equal
#                 pkts_recv + rejected and are JOIN_ACK + AR_RESULT
#                 (+ AR_HELD, AR_NAK); every line agrees with
#                 --summary; the ranks' files show different local ports;
#                 tcpdump, when installed, reads them with valid checksums.
#     two-ctx     two contexts in one process (pcap_two_ctx), each with its
#                 own file from one "%r" pattern: both complete and decode.
#     killed      a rank SIGKILLed while it probes (its peer never
#                 comes) leaves a file serene-dump reads to the end.
#     bad path    SERENE_PCAP in a missing directory: serene_ctx_create
#                 fails with SERENE_ERR_CONFIG, logging the path and the
#                 system's reason; a bad '%' token likewise.
#     dump usage  no file: exit 2; a file that is not a pcap: exit 1.
#   test_pcap.sh unsupported AR_WORKER
#     A build without libpcap: SERENE_PCAP makes serene_ctx_create fail
#     with SERENE_ERR_UNSUPPORTED and a message saying why.
#
# Every wait is bounded, the switch is stopped by its PID, the temporary
# directory is removed; a failure prints "FAIL: ..." and exits 1.
set -uo pipefail

MODE=${1:-}
# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init pcap
HARNESS_TAIL=10

# expect_create_error NAME ERRNAME PATTERN... -- ENV... : run ar_worker alone
# (rank 0 of a 1-worker job; the trace opens before any packet is sent) and
# check it fails with ERRNAME and output matching every PATTERN.
expect_create_error() {
    local name=$1 err=$2 pats=() out rc
    shift 2
    while [ "$1" != -- ]; do pats+=("$1"); shift; done
    shift
    out=$(env "$@" SERENE_RANK=0 SERENE_WORLD_SIZE=1 SERENE_TIMEOUT_MS=2000 \
        timeout -k 5 30 "$WORKER" --elems 256 --sizes 10 2>&1)
    rc=$?
    echo "$out" | sed "s/^/    /"
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "$name: ar_worker exited $rc"
    echo "$out" | grep -q "serene_ctx_create: $err" || fail "$name: no $err from serene_ctx_create"
    for p in "${pats[@]}"; do
        echo "$out" | grep -qF -- "$p" || fail "$name: the message lacks '$p'"
    done
    echo "ok: $name: serene_ctx_create failed with $err and said why"
}

if [ "$MODE" = unsupported ]; then
    [ $# -eq 2 ] || { echo "usage: $0 unsupported AR_WORKER" >&2; exit 2; }
    WORKER=$2
    expect_create_error "no libpcap" SERENE_ERR_UNSUPPORTED "$work/x.pcap" "without libpcap" -- \
        SERENE_PCAP="$work/x.pcap" SERENE_SWITCH=127.0.0.1:9
    [ -e "$work/x.pcap" ] && fail "a build without libpcap created the trace file"
    echo "PASS: pcap-trace (build without libpcap)"
    exit 0
fi

if [ "$MODE" != full ] || [ $# -ne 5 ]; then
    echo "usage: $0 full SERENE_RUN AR_WORKER SERENE_DUMP PCAP_TWO_CTX" >&2
    echo "       $0 unsupported AR_WORKER" >&2
    exit 2
fi
RUN=$2 WORKER=$3 DUMP=$4 TWO=$5
export SERENE_TIMEOUT_MS=10000

# Job 0: serene-run's ranks; job 1: two contexts in one process; job 2: the
# killed rank (its peer never comes).
start_switch 127.0.0.1:0 --job 0:2 --job 1:2 --job 2:2 || fail "serene-switch exited at startup"
sw="127.0.0.1:$port"

# is_pcap FILE: a pcap header (either byte order, micro- or nanosecond
# magic) with link type 1 (Ethernet).
is_pcap() {
    local h
    h=$(od -An -tx1 -N24 "$1" | tr -d ' \n')
    case ${h:0:8} in
        d4c3b2a1 | 4d3cb2a1) [ "${h:40:8}" = 01000000 ] ;;
        a1b2c3d4 | a1b23c4d) [ "${h:40:8}" = 00000001 ] ;;
        *) return 1 ;;
    esac
}

# decode NAME FILE: serene-dump FILE --summary into $work/NAME.dump; checks
# the file, the exit status, that nothing is malformed or foreign, that the
# four ops appear, and that the lines agree with the summary.
decode() {
    local name=$1 file=$2 d=$work/$1.dump rc op n lines
    [ -s "$file" ] || fail "$name: no trace file $file"
    is_pcap "$file" || fail "$name: $file has no pcap header for Ethernet"
    timeout 30 "$DUMP" "$file" --summary >"$d" 2>"$d.err"
    rc=$?
    cat "$d.err"
    [ $rc -eq 0 ] || fail "$name: serene-dump exited $rc"
    grep -E '^summary: ' "$d" | sed "s/^/    /"
    grep -Eq '^summary: [0-9]+ frames: [0-9]+ serene, 0 not serene, 0 malformed$' "$d" ||
        fail "$name: foreign or malformed frames: $(grep '^summary' "$d")"
    for op in JOIN JOIN_ACK AR_DATA AR_RESULT; do
        n=$(sed -n "s/^  op $op  *\([0-9]*\)$/\1/p" "$d")
        lines=$(grep -c " -> [0-9.:]* $op " "$d")
        [ -n "$n" ] && [ "$n" -gt 0 ] || fail "$name: no $op packet"
        [ "$n" -eq "$lines" ] || fail "$name: $lines $op lines, but the summary says $n"
        echo "    $op: $n"
    done
}

# count_dir FILE DIRECTION: lines of packets to ("to") or from ("from") the
# switch.
count_dir() {
    if [ "$2" = to ]; then
        grep -c " -> $sw " "$1"
    else
        grep -c "^[0-9.]* $sw -> " "$1"
    fi
}
op_count() { sed -n "s/^  op $2  *\([0-9]*\)$/\1/p" "$1" | grep . || echo 0; }

# tcpdump, when installed, is a second reader: every frame must decode with
# "udp sum ok".
tcpdump_check() {
    command -v tcpdump >/dev/null || return 0
    local frames ok
    frames=$(timeout 30 tcpdump -nn -r "$1" 2>/dev/null | wc -l)
    ok=$(timeout 30 tcpdump -nn -vv -r "$1" 2>/dev/null | grep -c 'udp sum ok')
    [ "$frames" -gt 0 ] && [ "$frames" -eq "$ok" ] ||
        fail "tcpdump read $frames frames of $1, $ok with a valid UDP checksum"
    echo "    tcpdump: $frames frames, all with valid checksums"
}

# ---- allreduce: 2 ranks under serene-run ------------------------------------
echo "== allreduce: 2 ranks, SERENE_PCAP=$work/ar-r%r.pcap"
SERENE_LOG_LEVEL=info SERENE_PCAP="$work/ar-r%r.pcap" timeout -k 5 60 "$RUN" -n 2 --switch "$sw" --job 0 -- \
    "$WORKER" --elems 256 --sizes 1,255,257,5000 --reps 2 >"$work/ar.out" 2>&1
rc=$?
sed "s/^/    /" "$work/ar.out"
[ $rc -eq 0 ] || fail "allreduce: serene-run exited $rc"
ports=()
for r in 0 1; do
    f=$work/ar-r$r.pcap
    echo "-- rank $r: $f ($(stat -c %s "$f" 2>/dev/null) bytes)"
    decode "ar-r$r" "$f"
    d=$work/ar-r$r.dump
    # The counts the context logs when it closes (its data path stopped):
    # the worker's own snapshot after its last call can miss answers still
    # on their way to it (a probe's, under load), which the trace then holds.
    stats=$(grep -E "^\[$r\] serene\[$r\]: info: closing: sent [0-9]+ recv [0-9]+ rejected [0-9]+ " "$work/ar.out") ||
        fail "rank $r logged no closing counts"
    sent=$(echo "$stats" | sed 's/.* sent \([0-9]*\) recv.*/\1/')
    recv=$(echo "$stats" | sed 's/.* recv \([0-9]*\) .*/\1/')
    rej=$(echo "$stats" | sed 's/.* rejected \([0-9]*\) .*/\1/')
    to=$(count_dir "$d" to)
    from=$(count_dir "$d" from)
    frames=$(grep -c '^[0-9]*\.[0-9]* ' "$d")
    echo "    to the switch $to (pkts_sent $sent), from it $from (pkts_recv $recv + rejected $rej), $frames frames"
    [ "$to" -eq "$sent" ] || fail "rank $r: $to packets to the switch in the trace, pkts_sent $sent"
    [ "$from" -eq $((recv + rej)) ] ||
        fail "rank $r: $from packets from the switch in the trace, pkts_recv + rejected $((recv + rej))"
    [ $((to + from)) -eq "$frames" ] || fail "rank $r: frames neither to nor from $sw"
    [ "$to" -eq $(($(op_count "$d" JOIN) + $(op_count "$d" AR_DATA) + $(op_count "$d" AR_PROBE))) ] ||
        fail "rank $r: packets to the switch are not all JOIN, AR_DATA or AR_PROBE"
    [ "$from" -eq $(($(op_count "$d" JOIN_ACK) + $(op_count "$d" AR_RESULT) +
        $(op_count "$d" AR_HELD) + $(op_count "$d" AR_NAK))) ] ||
        fail "rank $r: packets from the switch are not all JOIN_ACK, AR_RESULT, AR_HELD or AR_NAK"
    grep -q " -> $sw JOIN job=0 worker=$r " "$d" || fail "rank $r: no JOIN of worker $r"
    # One local endpoint per rank: the socket's real address and port.
    src=$(sed -n "s/^[0-9.]* \([0-9.:]*\) -> $sw .*/\1/p" "$d" | sort -u)
    [ "$(echo "$src" | wc -l)" -eq 1 ] || fail "rank $r: several source endpoints: $src"
    ports+=("$src")
    echo "    local endpoint $src"
    tcpdump_check "$f"
done
[ "${ports[0]}" != "${ports[1]}" ] || fail "both ranks' traces show the same local endpoint"
echo "ok: allreduce traces match the ranks' statistics"
echo "    first lines of rank 0's decode:"
head -n 6 "$work/ar-r0.dump" | sed "s/^/      /"

# ---- two contexts in one process --------------------------------------------
echo "== two-ctx: two contexts in one process, pattern $work/two-%r.pcap"
SERENE_SWITCH=$sw SERENE_JOB=1 timeout -k 5 60 "$TWO" "$work/two-%r.pcap" 3000 \
    >"$work/two.out" 2>&1
rc=$?
sed "s/^/    /" "$work/two.out"
[ $rc -eq 0 ] || fail "two-ctx: pcap_two_ctx exited $rc"
for r in 0 1; do
    decode "two-$r" "$work/two-$r.pcap"
    d=$work/two-$r.dump
    sent=$(sed -n "s/^ctx $r: sent \([0-9]*\) .*/\1/p" "$work/two.out")
    to=$(count_dir "$d" to)
    [ -n "$sent" ] && [ "$to" -eq "$sent" ] || fail "two-ctx: ctx $r sent $sent, its trace has $to"
    grep -q " -> $sw JOIN job=1 worker=$r " "$d" || fail "two-ctx: trace $r lacks worker $r's JOIN"
    grep -q " worker=$((1 - r)) " "$d" && fail "two-ctx: trace $r holds the other context's packets"
done
echo "ok: two contexts wrote one trace each"

# ---- killed mid-run ----------------------------------------------------------
echo "== killed: rank 0 of job 2 alone (its peer never comes), SIGKILLed while it probes"
# No `timeout` around it: the SIGKILL must reach the worker itself. Its own
# deadline (30 s) and cleanup bound it.
spawn "$work/killed.out" env SERENE_PCAP="$work/killed.pcap" SERENE_SWITCH="$sw" SERENE_JOB=2 \
    SERENE_RANK=0 SERENE_WORLD_SIZE=2 SERENE_TIMEOUT_MS=30000 "$WORKER" --elems 256 --sizes 100000
bgpid=$spawned
seen=0
for _ in $(seq 100); do
    # The file is being written: read it whole (grep -c), whatever the status.
    # Waiting for the peer, its timers send header-only probes.
    n=$("$DUMP" "$work/killed.pcap" 2>/dev/null | grep -c ' AR_PROBE .*flags=0x01')
    if [ "${n:-0}" -gt 0 ]; then
        seen=1
        break
    fi
    sleep 0.1
done
kill -KILL "$bgpid" 2>/dev/null
wait "$bgpid" 2>/dev/null
rc=$?
forget_pid "$bgpid"
[ $seen -eq 1 ] || fail "killed: no AR_PROBE in the trace within 10 s"
[ $rc -eq 137 ] || fail "killed: the worker exited $rc before the SIGKILL"
timeout 30 "$DUMP" "$work/killed.pcap" --summary >"$work/killed.dump" 2>&1 ||
    { cat "$work/killed.dump"; fail "killed: serene-dump cannot read the trace of a killed process"; }
grep '^summary' "$work/killed.dump" | sed "s/^/    /"
grep -Eq '^summary: [0-9]+ frames: [0-9]+ serene, 0 not serene, 0 malformed$' "$work/killed.dump" ||
    fail "killed: malformed frames"
[ "$(op_count "$work/killed.dump" AR_RESULT)" -eq 0 ] || fail "killed: a result without the peer"
echo "ok: the trace of a SIGKILLed process reads to its end"

# ---- bad paths ----------------------------------------------------------------
echo "== bad paths"
expect_create_error "missing directory" SERENE_ERR_CONFIG "$work/no-such-dir/x.pcap" \
    "No such file or directory" -- SERENE_PCAP="$work/no-such-dir/x.pcap" SERENE_SWITCH=$sw
expect_create_error "bad token" SERENE_ERR_CONFIG "must be followed by 'r'" -- \
    SERENE_PCAP="$work/x%q.pcap" SERENE_SWITCH=$sw

# ---- serene-dump's own errors -------------------------------------------------
echo "== serene-dump usage"
"$DUMP" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "serene-dump without a file exited $rc, not 2"
echo "not a capture" >"$work/not.pcap"
out=$("$DUMP" "$work/not.pcap" 2>&1)
rc=$?
echo "    $out"
[ $rc -eq 1 ] && echo "$out" | grep -qF "$work/not.pcap" ||
    fail "serene-dump on a non-pcap file exited $rc"
echo "ok: serene-dump exits 2 on bad usage, 1 on an unreadable file"

stop_switch
echo "PASS: pcap-trace"
exit 0
