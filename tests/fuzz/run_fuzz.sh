#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# run_fuzz.sh FUZZER SEEDS ARTIFACTS [LIBFUZZER-ARGS...]
#
# Runs one libFuzzer target for a bounded time ($FUZZ_TIME seconds, default
# 20) on a copy of its seed corpus SEEDS in a temporary directory, so the
# committed corpus never changes. Prints the final stats (executions per
# second, coverage as cov: and ft:) and exits non-zero on any crash, leak,
# sanitizer report, timeout (-timeout, 5 s per input) or memory blow-up
# (-rss_limit_mb); the input that did it is kept in ARTIFACTS and shown in
# hex. Extra arguments go to the fuzzer (-dict=..., -max_len=...).
set -u

if [ $# -lt 3 ]; then
    echo "usage: $0 FUZZER SEEDS ARTIFACTS [LIBFUZZER-ARGS...]" >&2
    exit 2
fi
fuzzer=$1
seeds=$2
artifacts=$3
shift 3
time=${FUZZ_TIME:-20}
name=$(basename "$fuzzer")

if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
    echo "$name: no seed corpus in $seeds" >&2
    exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/serene-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
cp -R "$seeds" "$tmp/corpus" || exit 2
mkdir -p "$tmp/crash" "$artifacts" || exit 2

# UBSan reports are fatal (meson's b_sanitize=undefined compiles them as
# recoverable); leaks are reported by libFuzzer's own -detect_leaks.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS="abort_on_error=0:symbolize=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

"$fuzzer" -max_total_time="$time" -timeout=5 -rss_limit_mb=1024 -print_final_stats=1 \
    -artifact_prefix="$tmp/crash/" "$@" "$tmp/corpus" >"$tmp/log" 2>&1
rc=$?

done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$tmp/log" | tail -n 1)
echo "$name: $(ls "$seeds" | wc -l) seeds, ${time}s, exit $rc"
[ -n "$done_line" ] && echo "$name: $done_line"
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
    "$tmp/log" | sed "s/^/$name: /"

if [ $rc -ne 0 ] || [ -z "$done_line" ]; then
    echo "$name: FAILED; the fuzzer's log:" >&2
    # The report, not the thousands of progress lines before it.
    grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED)' "$tmp/log" | tail -n 120 >&2
    for f in "$tmp"/crash/*; do
        [ -f "$f" ] || continue
        cp "$f" "$artifacts/" && echo "$name: input kept as $artifacts/$(basename "$f"):" >&2
        od -An -tx1 -v "$f" | head -n 64 >&2
    done
    exit 1
fi
exit 0
