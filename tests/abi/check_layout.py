#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_layout.py - the source tree's shape, checked.

1. The #include graph between folders of lib/ and p4/ (a file's folder is
   its node; `#include "x/y.h"` resolved against lib/, include/ and the
   file's own folder is an edge to the header's folder) has no cycle, and
   follows the fixed rules below.
2. No source file over MAX_FILE lines; a public header (include/) may have
   MAX_HEADER: it is the API's reference, every function's contract in
   full (summary, return codes, blocking, threads: tests/docs), as zstd.h
   and nng.h give it.
3. No C or C++ function over MAX_FUNC lines. Tables of data (an
   initializer after '=') are not functions. P4 files are held to the file
   limit only: a control's apply block is the stage list a P4 compiler lays
   out, and it is split only where p4c can check the result.

Usage: check_layout.py SOURCE_ROOT [--graph]   exit 0 ok, 1 violations.
       check_layout.py --self-test   the checker finds what it must find
"""
import os
import re
import subprocess
import sys

MAX_FILE = 800
MAX_HEADER = 1200
MAX_FUNC = 100
SRC_EXT = ('.c', '.h', '.cc', '.cpp', '.p4', '.py', '.sh')
C_EXT = ('.c', '.h', '.cc', '.cpp')
GRAPH_ROOTS = ('lib/', 'p4/', 'include/')

# (from-folder prefix, to-folder prefix, why): edges that must not exist.
FORBIDDEN = [
    ('lib/', 'p4/', 'the library never depends on the switch'),
    ('lib/', 'tests/', 'the library never depends on its tests'),
    ('include/', 'lib/', 'public headers include only public headers'),
    ('lib/proto', 'lib/', 'the wire format depends on nothing else (but lib/common)'),
]
FORBIDDEN_OK = ('lib/proto', 'lib/common')


def tracked(root):
    """The repository's source files: git's list, or a walk of the tree
    (without build folders) where there is no git checkout."""
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True, text=True,
                             check=True).stdout
        files = out.split('\n')
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, subs, names in os.walk(root):
            subs[:] = [s for s in subs if not s.startswith(('.', 'build'))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if f.endswith(SRC_EXT))


def strip_c(text):
    """Comments and string/char literals blanked, line structure kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (min(j, n) - i - 1) + (c if j < n else ''))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def long_functions(text):
    """(first line, length, head) of function bodies over MAX_FUNC lines."""
    s = strip_c(text)
    found, opened = [], []
    line = 1
    for i, c in enumerate(s):
        if c == '\n':
            line += 1
        elif c == '{':
            head = s[max(0, s.rfind('\n', 0, max(0, i - 200))):i]
            head = ' '.join(head.split())
            # namespace and extern "C" blocks only scope names: functions
            # inside them are still top level.
            scope = bool(re.search(r'(\bnamespace\b[\w\s:]*|\bextern\s*"")\s*$', head))
            top = all(o[3] for o in opened)
            opened.append((line, head, top, scope))
        elif c == '}':
            if not opened:
                continue
            start, head, top, scope = opened.pop()
            n = line - start + 1
            if n <= MAX_FUNC or scope:
                continue
            if top and re.search(r'\)\s*(const|noexcept|override|\s)*$', head) \
                    and not re.search(r'=\s*$', head):
                found.append((start, n, head[-70:]))
    return found


def include_edges(root, files):
    edges = {}
    for f in files:
        if not f.endswith(C_EXT) or not f.startswith(GRAPH_ROOTS):
            continue
        src_dir = os.path.dirname(f)
        for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', open(os.path.join(root, f),
                             errors='replace').read(), re.M):
            inc = m.group(1)
            target = None
            for base in (src_dir, 'lib', 'include', 'p4/swswitch', '.'):
                cand = os.path.normpath(os.path.join(base, inc))
                if os.path.exists(os.path.join(root, cand)):
                    target = cand
                    break
            if not target:
                continue  # a generated header (version.h) or a system one
            tdir = os.path.dirname(target)
            if tdir != src_dir:
                edges.setdefault(src_dir, {}).setdefault(tdir, f)
    return edges


def find_cycle(edges):
    state, stack = {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, {})):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if not state.get(v):
                cyc = visit(v)
                if cyc:
                    return cyc
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(edges):
        if not state.get(u):
            cyc = visit(u)
            if cyc:
                return cyc
    return None


def check(root, graph=False):
    files = tracked(root)
    bad = 0
    for f in files:
        text = open(os.path.join(root, f), errors='replace').read()
        nlines = text.count('\n')
        limit = MAX_HEADER if f.startswith('include/') else MAX_FILE
        if nlines > limit:
            print(f'{f}: {nlines} lines (at most {limit})')
            bad += 1
        if f.endswith(C_EXT):
            for start, n, head in long_functions(text):
                print(f'{f}:{start}: a function of {n} lines (at most {MAX_FUNC}): ...{head}')
                bad += 1
    edges = include_edges(root, files)
    for src, tos in sorted(edges.items()):
        for dst, via in sorted(tos.items()):
            for a, b, why in FORBIDDEN:
                if src.startswith(a) and dst.startswith(b) and \
                        not (a == 'lib/proto' and dst.startswith(FORBIDDEN_OK)):
                    print(f'{via}: includes {dst}: {why}')
                    bad += 1
    cyc = find_cycle(edges)
    if cyc:
        print('include cycle between folders: ' + ' -> '.join(cyc))
        for a, b in zip(cyc, cyc[1:]):
            print(f'  {a} -> {b} (e.g. {edges[a][b]})')
        bad += 1
    if graph:
        for src, tos in sorted(edges.items()):
            print(f'{src} -> {", ".join(sorted(tos))}')
    print(f'layout: {len(files)} files, {sum(len(t) for t in edges.values())} folder edges, '
          f'{bad} violation(s)')
    return bad


def self_test():
    """A small tree with one of each violation, then the same tree fixed."""
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        def put(path, text):
            os.makedirs(os.path.dirname(os.path.join(t, path)), exist_ok=True)
            with open(os.path.join(t, path), 'w') as f:
                f.write(text)
        long_body = 'int f(int x)\n{\n' + '    x++;\n' * MAX_FUNC + '    return x;\n}\n'
        table = 'static const int t[] = {\n' + '    1,\n' * (MAX_FUNC + 5) + '};\n'
        put('lib/a/a.h', '#include "b/b.h"\n')
        put('lib/b/b.h', '#include "a/a.h"\n')           # cycle a <-> b
        put('lib/proto/wire.h', '#include "b/b.h"\n')    # proto depends on b
        put('lib/c/long.c', long_body + table)            # one long function
        put('lib/c/big.sh', '#\n' * (MAX_FILE + 1))      # one long file
        put('include/x/doc.h', '\n' * (MAX_FILE + 1))    # a header may be longer
        put('include/x/big.h', '\n' * (MAX_HEADER + 1))  # but not too long
        found = check(t)
        put('lib/b/b.h', '/* nothing */\n')
        put('lib/proto/wire.h', '#include "common/log.h"\n')
        put('lib/common/log.h', '\n')
        put('lib/c/long.c', table)
        put('lib/c/big.sh', '#\n')
        put('include/x/big.h', '\n')
        clean = check(t)
    ok = found == 5 and clean == 0
    print(f'self-test: {found} violations found of 5, {clean} after the fix: '
          f'{"PASS" if ok else "FAIL"}')
    return 0 if ok else 1


def main():
    if sys.argv[1:2] == ['--self-test']:
        return self_test()
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if check(sys.argv[1], '--graph' in sys.argv) else 0


if __name__ == '__main__':
    sys.exit(main())
