#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `meson install` must deliver a usable SDK: the versioned library, serene.pc,
# the headers, serene-switch and serene-run. Install into a scratch DESTDIR,
# build the example against it through pkg-config alone, and run it with the
# installed launcher, which must find the installed switch next to itself.
# usage: check_install.sh BUILD_DIR EXAMPLE_SOURCE
set -euo pipefail
build=$1
example=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
fail() { echo "FAIL: $*"; exit 1; }
pc=$(find "$dest" -name serene.pc | head -n 1)
[ -n "$pc" ] || fail "serene.pc not installed"
lib=$(find "$dest" -name 'libserene.so.1' | head -n 1)
[ -n "$lib" ] || fail "libserene.so.1 not installed"
bindir=$(dirname "$(find "$dest" -name serene-run -type f | head -n 1)")
[ -x "$bindir/serene-run" ] && [ -x "$bindir/serene-switch" ] || fail "serene-run/serene-switch not installed together"
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest
flags=$(pkg-config --cflags --libs serene) || fail "pkg-config cannot read serene.pc"
# shellcheck disable=SC2086
${CC:-cc} -std=c11 -Wall -Werror -o "$dest/hello" "$example" $flags -lm || fail "cannot build against the installed SDK"
echo "ok: built the example with: pkg-config --cflags --libs serene -> $flags"
unset SERENE_SWITCH_BIN
out=$(LD_LIBRARY_PATH=$(dirname "$lib") timeout 60 "$bindir/serene-run" -n 2 -- "$dest/hello" 2>&1) || { echo "$out"; fail "installed launcher run failed"; }
echo "$out"
echo "$out" | grep -q '^\[1\] rank 1 of 2: .* correct' || fail "unexpected output from the installed run"
echo "ok: installed serene-run started the installed serene-switch and 2 ranks"
