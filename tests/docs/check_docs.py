#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_docs.py - the documentation's shape, checked.

The manuals are README.md, bench/README.md, examples/train/README.md and
p4/README.md. They say how to use a thing and show its current figures;
the history of runs lives in the dated results logs (NOTES.md), which
rules 1-3 do not apply to. Rules:

1. Length. `wc -l` of each manual (its count of newlines) is at most
   LIMITS[path].
2. No story of past runs. No line of a manual matches STORY (the issue's
   `grep -niE 'earlier|before (this|the) change|was tried'`): write it in
   the present tense, or move it to a NOTES.md.
3. Every results table names its command. A table is a run of lines that
   start with '|' whose second line is a delimiter row (|---|...), outside
   fenced code blocks. It is a results table when one of its body rows has
   at least FIGURE_CELLS cells that, with their `code spans` removed, hold
   a figure: a decimal number (2.12, 0.9325) or a percentage (98%). Such a
   table must show a command in its own rows, in the COMMAND_ABOVE lines
   above its header or in the COMMAND_BELOW lines below its last row. A
   command is a `code span` on one line, or a line inside a fenced code
   block, whose text starts with one of COMMAND_PREFIXES and whose first
   word does not end in '/' or in one of NOT_COMMAND_EXT
   (`bench/README.md` and `build/train-demo/table.md` are files, not
   commands; `serene-switch` alone names a program, not a run).
4. Links resolve. In every *.md file that git tracks or would track (with
   no git checkout: every one outside hidden and build* folders), each
   relative markdown link [text](target) outside code (not http:, https:,
   mailto:) points to an existing file or folder, relative to the linking
   file's folder; a '#anchor' on a .md target (or a bare '#anchor' in the
   same file) must be the GitHub slug of one of the target's headings
   (lowercased, code marks and punctuation but '-' and '_' dropped, spaces
   to '-', a repeated heading's slug suffixed -1, -2, ...).

Usage: check_docs.py SOURCE_ROOT   exit 0 ok, 1 violations (one per line).
       check_docs.py --self-test  the checker finds what it must find
"""
import os
import re
import subprocess
import sys
import tempfile

LIMITS = {
    'README.md': 350,
    'bench/README.md': 400,
    'examples/train/README.md': 300,
    'p4/README.md': 400,
}
STORY = re.compile(r'earlier|before (this|the) change|was tried', re.IGNORECASE)
FIGURE = re.compile(r'\d\.\d|\d%')
FIGURE_CELLS = 2
COMMAND_ABOVE = 8
COMMAND_BELOW = 4
COMMAND_PREFIXES = ('./serene.sh', './build/', './p4/', 'bench/', 'build', 'BUILD/', 'examples/',
                    'tests/', 'p4/', 'meson test', '$B/', 'python3 ', 'torchrun ')
NOT_COMMAND_EXT = ('.md', '.c', '.h', '.p4', '.csv', '.png', '.txt', '.conf', '.pcap', '.json')
CODE_SPAN = re.compile(r'`[^`]*`')
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')


def fenced(lines):
    """Per line: True inside a ``` block (the fence lines themselves too)."""
    out, inside = [], False
    for line in lines:
        if line.lstrip().startswith('```'):
            out.append(True)
            inside = not inside
        else:
            out.append(inside)
    return out


def is_command(text):
    text = text.strip()
    if not text.startswith(COMMAND_PREFIXES):
        return False
    first = text.split()[0]
    return not first.endswith('/') and not first.endswith(NOT_COMMAND_EXT)


def has_command(lines, code):
    for line, in_code in zip(lines, code):
        if in_code and not line.lstrip().startswith('```') and is_command(line):
            return True
        if any(is_command(span.strip('`')) for span in CODE_SPAN.findall(line)):
            return True
    return False


def tables(lines, code):
    """(first, last) line indices of each markdown table outside code."""
    out, i = [], 0
    while i < len(lines):
        if (not code[i] and lines[i].startswith('|') and i + 1 < len(lines)
                and re.match(r'^\|\s*:?-{3,}', lines[i + 1])):
            j = i + 1
            while j + 1 < len(lines) and lines[j + 1].startswith('|'):
                j += 1
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


def is_results(lines, first, last):
    for row in lines[first + 2:last + 1]:
        cells = CODE_SPAN.sub('', row.replace('\\|', '')).strip().strip('|').split('|')
        if sum(1 for c in cells if FIGURE.search(c)) >= FIGURE_CELLS:
            return True
    return False


def check_manual(root, rel):
    errs = []
    path = os.path.join(root, rel)
    if not os.path.exists(path):
        return ['%s: missing' % rel]
    with open(path, encoding='utf-8') as f:
        text = f.read()
    lines = text.split('\n')
    n = text.count('\n')
    if n > LIMITS[rel]:
        errs.append('%s: %d lines, limit %d' % (rel, n, LIMITS[rel]))
    for k, line in enumerate(lines, 1):
        if STORY.search(line):
            errs.append('%s:%d: a story of past runs (move it to a NOTES.md): %s'
                        % (rel, k, line.strip()))
    code = fenced(lines)
    for first, last in tables(lines, code):
        if not is_results(lines, first, last):
            continue
        lo, hi = max(0, first - COMMAND_ABOVE), min(len(lines), last + 1 + COMMAND_BELOW)
        if not has_command(lines[lo:hi], code[lo:hi]):
            errs.append('%s:%d: a results table that names no command within %d lines above '
                        'or %d below' % (rel, first + 1, COMMAND_ABOVE, COMMAND_BELOW))
    return errs


def slug(heading):
    s = heading.strip().lower().replace('`', '')
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def anchors(path):
    out, seen = set(), {}
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    for line, in_code in zip(lines, fenced(lines)):
        m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
        if m and not in_code:
            s = slug(m.group(1))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else '%s-%d' % (s, k))
    return out


def markdown_files(root):
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files', '--cached', '--others',
                              '--exclude-standard', '*.md'], capture_output=True, text=True,
                             check=True).stdout.split('\n')
        files = [f for f in out if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
    if not files:
        for d, subs, names in os.walk(root):
            subs[:] = [s for s in subs if not s.startswith(('.', 'build'))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith('.md')]
    return sorted(f for f in files if os.path.exists(os.path.join(root, f)))


def check_links(root, rel):
    errs = []
    path = os.path.join(root, rel)
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    for k, (line, in_code) in enumerate(zip(lines, fenced(lines)), 1):
        if in_code:
            continue
        for target in LINK.findall(CODE_SPAN.sub('', line)):
            if re.match(r'^[a-z]+:', target):
                continue
            file_part, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            if not os.path.exists(dest):
                errs.append('%s:%d: link to a missing file: %s' % (rel, k, target))
            elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
                errs.append('%s:%d: link to a missing heading: %s' % (rel, k, target))
    return errs


def check(root):
    errs = []
    for rel in LIMITS:
        errs += check_manual(root, rel)
    for rel in markdown_files(root):
        errs += check_links(root, rel)
    return errs


SELF_CASES = {
    # name: (file, text, the message the checker must give, or None when clean)
    'clean': ('README.md', '# T\n\n## Runs\n\n`bench/run_x.sh --runs 3`:\n\n| a | b | c |\n'
              '|---|---|---|\n| x | 1.5 | 20% |\n\n[runs](#runs) [b](bench/README.md)\n'
              '| var | default |\n|---|---|\n| `SERENE_X` | 0, 1 |\n', None),
    'long': ('p4/README.md', 'x\n' * 401, '401 lines, limit 400'),
    'story': ('README.md', 'An earlier run gave 3.\n', 'a story of past runs'),
    'story2': ('README.md', 'What was tried first.\n', 'a story of past runs'),
    'no-command': ('README.md', 'Text.\n\n| a | b |\n|---|---|\n| 2.5 | 3% |\n',
                   'names no command'),
    'file-not-command': ('README.md', '`bench/README.md`:\n\n| a | b |\n|---|---|\n| 2.5 | 3% |\n',
                         'names no command'),
    'command-below': ('README.md', '| a | b |\n|---|---|\n| 2.5 | 3% |\n\n```sh\n'
                      'bench/fabric.sh -n 2\n```\n', None),
    'command-far': ('README.md', '`bench/fabric.sh`\n' + '\n' * 9 + '| a | b |\n|---|---|\n'
                    '| 2.5 | 3% |\n', 'names no command'),
    'broken-file': ('README.md', 'See [x](lib/nope.md).\n', 'link to a missing file'),
    'broken-anchor': ('README.md', '## A b\n\nSee [x](#a-c).\n', 'link to a missing heading'),
    'program-not-command': ('README.md', 'One `serene-switch`:\n\n| a | b |\n|---|---|\n'
                            '| 2.5 | 3% |\n', 'names no command'),
    'split-span': ('README.md', '`bench/x.sh --a\nb`:\n\n| a | b |\n|---|---|\n| 2.5 | 3% |\n',
                   'names no command'),
    'table-in-code': ('README.md', '```\n| a | b |\n|---|---|\n| 2.5 | 3% |\n```\n', None),
    'dup-anchor': ('README.md', '## R\n\n## R\n\n[x](#r-1) [y](README.md#r)\n', None),
    'good-anchor': ('README.md', '## A `b`, c\n\nSee [x](#a-b-c) and `[y](nope)`.\n', None),
}


def self_test():
    bad = 0
    for name, (rel, text, want) in SELF_CASES.items():
        with tempfile.TemporaryDirectory() as root:
            for m in LIMITS:
                os.makedirs(os.path.join(root, os.path.dirname(m)), exist_ok=True)
                with open(os.path.join(root, m), 'w', encoding='utf-8') as f:
                    f.write('# x\n')
            os.makedirs(os.path.join(root, 'bench'), exist_ok=True)
            with open(os.path.join(root, rel), 'w', encoding='utf-8') as f:
                f.write(text)
            errs = check(root)
            ok = (not errs) if want is None else any(want in e for e in errs)
            if not ok:
                bad += 1
                print('self-test %s: want %s, got %s' % (name, want or 'no error', errs))
    print('self-test: %d of %d cases as expected' % (len(SELF_CASES) - bad, len(SELF_CASES)))
    return 1 if bad else 0


def main(argv):
    if len(argv) == 2 and argv[1] == '--self-test':
        return self_test()
    if len(argv) != 2:
        print(__doc__.split('Usage: ')[1], file=sys.stderr)
        return 2
    errs = check(argv[1])
    for e in errs:
        print(e)
    print('check_docs: %d problem(s)' % len(errs))
    return 1 if errs else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
