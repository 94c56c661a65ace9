#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Each public header must compile on its own, as C11 and as C++, with
# strict warnings: no missing includes, no C-only constructs in C++.
# usage: check_headers.sh SRC_INCLUDE_DIR BUILD_INCLUDE_DIR
set -eu
src=$1
gen=$2
cc=${CC:-cc}
cxx=${CXX:-c++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for h in "$src"/serene/*.h "$gen"/serene/*.h; do
    name=serene/$(basename "$h")
    printf '#include <%s>\nint serene_header_check_;\n' "$name" > "$tmp/t.c"
    if ! $cc -std=c11 -pedantic -Wall -Wextra -Werror -I"$src" -I"$gen" -c "$tmp/t.c" -o "$tmp/t.o"; then
        echo "FAIL: $name does not compile alone as C11"; fail=1
    fi
    cp "$tmp/t.c" "$tmp/t.cc"
    if ! $cxx -std=c++11 -pedantic -Wall -Wextra -Werror -I"$src" -I"$gen" -c "$tmp/t.cc" -o "$tmp/t.o"; then
        echo "FAIL: $name does not compile alone as C++11"; fail=1
    fi
    [ $fail -eq 0 ] && echo "ok: $name (C11, C++11)"
done
exit $fail
