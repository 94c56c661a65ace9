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
5. Names exist. In the same files, in `code spans` and fenced code blocks
   (a line ending in '\\' joined to the next):
   - a path whose first part is a folder that git tracks at the top
     (bench/, lib/, ...), not build*, or that starts at a folder beside
     the file and ends in one of SOURCE_EXT (swswitch/job_table.c in p4/;
     not an installed path such as serene_torch/bin/ in lib/torch/),
     exists from the root or from the file's folder, or names a build
     target ('NAME' in its folder's meson.build). Left alone: a
     path followed by one of PLACEHOLDER_NEXT (test_<module>.c, udp*) or
     with a placeholder part (1-4 capitals: X.p4, DIR, OUT).
   - after a repository script (bench/x.sh, ./serene.sh, tests/y.py),
     each --option up to the end of its command (|, ;, &, &&, --, #, a
     redirect) occurs in that script or in a script it names ("$@" passed
     on: ./serene.sh demo to examples/train/demo.sh).
6. Help texts reach their end. Every *.sh under bench/ and tests/ with a
   `--help)` case, run as `bash SCRIPT --help` from the root, exits 0 and
   prints the last line of its header (the '#' lines after the first line,
   up to the first other line, without '# '; the last one not blank).
7. No tracker citations. No line of a file of rule 4's kind (any file,
   not only *.md) but the results logs (NOTES.md) matches CITATION
   (the word issue, any case, then a number, '#' or '[': a tag): a
   reader has no tracker, so a comment says what the code guards or why.
8. The public headers document every function. In each of HEADERS, every
   declaration that starts a line with SERENE_API or SERENE_CTL_API comes
   right after a comment of its own (nothing but blanks between) whose
   first line of text is "NAME - summary." (NAME the declared function,
   the summary one line ending in '.'), then lines that start with
   "Returns:", "Blocks:" and "Threads:", in that order; a "Returns:" with
   nothing after it is followed by at least one more indented line (one
   code or value a line). Every SERENE_ERR_X a header names is a code of
   SERENE_ERRNO_MAP, every -EXXX an errno name; every function that a .c
   file under lib/ defines with SERENE_API (the exported symbols) is
   declared in HEADERS[0].

Usage: check_docs.py SOURCE_ROOT   exit 0 ok, 1 violations (one per line).
       check_docs.py --self-test  the checker finds what it must find
"""
import errno
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
# A path-like word: not part of a longer path, URL, variable or option.
PATH_WORD = re.compile(r'(?<![\w$/.{}<>%*=~-])[\w.+-]+(?:/[\w.+-]*)+')
PLACEHOLDER_NEXT = '<>{}*$%'
PLACEHOLDER_PART = re.compile(r'^[A-Z][A-Z0-9_]{0,3}(\.\w+)?$')
OPTION = re.compile(r'^--[a-z][\w-]*')
COMMAND_END = ('|', '||', '&&', ';', '&', '--')
SCRIPT_EXT = ('.sh', '.py')
SOURCE_EXT = ('.c', '.h', '.p4', '.py', '.sh', '.md')
HELP_CASE = re.compile(r'^\s*(-h \| )?--help\)', re.MULTILINE)
HELP_TIMEOUT_S = 30
CITATION = re.compile(r'\bissue ?(#?[0-9]|\[)', re.IGNORECASE)
NOT_CITATION_CHECKED = ('NOTES.md',)
HEADERS = ('include/serene/serene.h', 'include/serene/ctl.h')
DECL = re.compile(r'^(?:SERENE_API|SERENE_CTL_API)\b[^;(]*?(\w+)\s*\(', re.MULTILINE)
EXPORT = re.compile(r'^SERENE_API\b[^;({]*?(\w+)\s*\(', re.MULTILINE)
PARTS = ('Returns:', 'Blocks:', 'Threads:')


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


def repo_files(root):
    """The files git tracks or would track (with no git checkout: every one
    outside hidden and build* folders)."""
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files', '--cached', '--others',
                              '--exclude-standard'], capture_output=True, text=True,
                             check=True).stdout.split('\n')
        files = [f for f in out if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
    if not files:
        for d, subs, names in os.walk(root):
            subs[:] = [s for s in subs if not s.startswith(('.', 'build'))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return [f for f in files if os.path.exists(os.path.join(root, f))]


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


def code_snippets(lines):
    """(line number, text) of each code span and each command of a fenced
    block (a line ending in a backslash joined to the next)."""
    buf, start = '', 0
    for k, (line, in_code) in enumerate(zip(lines, fenced(lines)), 1):
        if in_code:
            if line.lstrip().startswith('```'):
                buf = ''
                continue
            if not buf:
                start = k
            if line.rstrip().endswith('\\'):
                buf += line.rstrip()[:-1] + ' '
                continue
            yield start, buf + line
            buf = ''
        else:
            for span in CODE_SPAN.findall(line):
                yield k, span.strip('`')


def is_build_target(root, rel):
    build = os.path.join(root, os.path.dirname(rel), 'meson.build')
    if not os.path.isfile(build):
        return False
    with open(build, encoding='utf-8') as f:
        return "'%s'" % os.path.basename(rel) in f.read()


def script_text(root, path, seen=None):
    """The script's text and that of the repository scripts it names."""
    seen = set() if seen is None else seen
    if path in seen:
        return ''
    seen.add(path)
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
    out = [text]
    here = os.path.dirname(path)
    for word in re.findall(r'[\w./-]+(?:%s)\b' % '|'.join(re.escape(e) for e in SCRIPT_EXT), text):
        for cand in (os.path.join(root, word), os.path.join(here, os.path.basename(word))):
            if os.path.isfile(cand) and os.path.realpath(cand) != os.path.realpath(path):
                out.append(script_text(root, os.path.realpath(cand), seen))
                break
    return '\n'.join(out)


def missing_paths(root, folder, snippet, tops):
    """The path-like words of one snippet that name no file (rule 5)."""
    out = []
    for m in PATH_WORD.finditer(snippet):
        word = m.group(0).rstrip('.,:;')
        after = snippet[m.start() + len(word):m.start() + len(word) + 1]
        path = word[2:] if word.startswith('./') else word
        parts = path.split('/')
        if (after and after in PLACEHOLDER_NEXT) or parts[0].startswith('build') or \
                any(PLACEHOLDER_PART.match(p) for p in parts):
            continue
        beside = parts[0] not in ('', '.', '..') and path.endswith(SOURCE_EXT) and \
            os.path.isdir(os.path.join(root, folder, parts[0]))
        if parts[0] not in tops and not beside:
            continue
        if not any(os.path.exists(os.path.join(root, base, path)) or
                   is_build_target(root, os.path.join(base, path)) for base in ('', folder)):
            out.append(word)
    return out


def unknown_options(root, folder, snippet, texts):
    """(script, option) for each --option of one snippet that its script
    and the scripts it names never mention (rule 5)."""
    out, script = [], None
    for tok in snippet.replace('|', ' | ').replace(';', ' ; ').split():
        if tok in COMMAND_END or tok.startswith(('#', '>', '<', '2>')):
            script = None
            continue
        path = tok[2:] if tok.startswith('./') else tok
        if path.endswith(SCRIPT_EXT) and ('/' in path or path == 'serene.sh'):
            cands = (os.path.join(root, path), os.path.join(root, folder, path))
            script = next((os.path.realpath(c) for c in cands if os.path.isfile(c)), None)
            continue
        m = OPTION.match(tok)
        if script and m:
            if script not in texts:
                texts[script] = script_text(root, script)
            if not re.search(re.escape(m.group(0)) + r'(?![\w-])', texts[script]):
                out.append((os.path.relpath(script, root), m.group(0)))
    return out


def check_names(root, rel, tops, texts):
    errs = []
    folder = os.path.dirname(rel)
    with open(os.path.join(root, rel), encoding='utf-8') as f:
        lines = f.read().split('\n')
    for k, snippet in code_snippets(lines):
        for word in missing_paths(root, folder, snippet, tops):
            errs.append('%s:%d: names a file that does not exist: %s' % (rel, k, word))
        for script, opt in unknown_options(root, folder, snippet, texts):
            errs.append('%s:%d: %s has no option %s' % (rel, k, script, opt))
    return errs


def header_last_line(path):
    last = None
    with open(path, encoding='utf-8', errors='replace') as f:
        for k, line in enumerate(f):
            if k == 0:
                continue
            if not line.startswith('#'):
                break
            text = re.sub(r'^# ?', '', line.rstrip('\n')).strip()
            if text:
                last = text
    return last


def check_help(root, files):
    errs = []
    scripts = sorted(f for f in files if f.startswith(('bench/', 'tests/')) and f.endswith('.sh'))
    for rel in scripts:
        path = os.path.join(root, rel)
        with open(path, encoding='utf-8', errors='replace') as f:
            if not HELP_CASE.search(f.read()):
                continue
        last = header_last_line(path)
        try:
            r = subprocess.run(['bash', path, '--help'], cwd=root, capture_output=True, text=True,
                               timeout=HELP_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            errs.append('%s: --help ran past %d s' % (rel, HELP_TIMEOUT_S))
            continue
        if r.returncode != 0:
            errs.append('%s: --help exits %d' % (rel, r.returncode))
        elif last and last not in [l.strip() for l in (r.stdout + r.stderr).split('\n')]:
            errs.append('%s: --help stops before the header\'s last line: %s' % (rel, last))
    return errs


def check_citations(root, files):
    errs = []
    for rel in files:
        if os.path.basename(rel) in NOT_CITATION_CHECKED:
            continue
        try:
            with open(os.path.join(root, rel), encoding='utf-8') as f:
                lines = f.read().split('\n')
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        for k, line in enumerate(lines, 1):
            if CITATION.search(line):
                errs.append('%s:%d: cites the tracker (say what it guards): %s'
                            % (rel, k, line.strip()[:80]))
    return errs


def comment_lines(comment):
    """The text lines of one /* ... */ comment, without the comment marks."""
    out = []
    for line in comment[2:-2].split('\n'):
        line = line.strip()
        line = line[1:] if line.startswith('*') else line
        out.append(line[1:] if line.startswith(' ') else line)
    while out and not out[0].strip():
        out.pop(0)
    return out


def check_doc(rel, k, name, lines):
    """Rule 8 for the comment (its text lines) above function name."""
    errs, where = [], '%s:%d: %s' % (rel, k, name)
    if not lines or not re.match(r'^%s - \S.*\.$' % re.escape(name), lines[0]):
        return ['%s: the comment does not open with "%s - summary." on one line'
                % (where, name)]
    at = []
    for part in PARTS:
        hits = [i for i, l in enumerate(lines) if l.startswith(part)]
        if not hits:
            errs.append('%s: no "%s" part' % (where, part))
        at.append(hits[0] if hits else None)
    if None not in at and not at[0] < at[1] < at[2]:
        errs.append('%s: "Returns:", "Blocks:" and "Threads:" out of order' % where)
    r = at[0]
    if r is not None and not lines[r][len('Returns:'):].strip() and \
            not (r + 1 < len(lines) and lines[r + 1].startswith('  ') and
                 not lines[r + 1].lstrip().startswith(PARTS)):
        errs.append('%s: "Returns:" lists nothing' % where)
    return errs


def check_headers(root, files):
    errs, declared = [], set()
    codes = None
    for rel in HEADERS:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            errs.append('%s: missing' % rel)
            continue
        with open(path, encoding='utf-8') as f:
            text = f.read()
        m = re.search(r'#define SERENE_ERRNO_MAP\(X\)(.*?)\n\n', text, re.DOTALL)
        if m:
            codes = set(re.findall(r'X\((\w+),', m.group(1)))
        for m in DECL.finditer(text):
            name, k = m.group(1), text.count('\n', 0, m.start()) + 1
            declared.add(name)
            before = text[:m.start()].rstrip()
            start = before.rfind('/*')
            if not before.endswith('*/') or start < 0:
                errs.append('%s:%d: %s has no doc comment right above it' % (rel, k, name))
                continue
            errs += check_doc(rel, k, name, comment_lines(before[start:]))
        for k, line in enumerate(text.split('\n'), 1):
            line = re.sub(r'"[^"]*"', '', line)  # a name in quotes is text, not a code
            for code in re.findall(r'\bSERENE_ERR_([A-Z][A-Z0-9_]*[A-Z0-9])\b', line):
                if codes is not None and code not in codes:
                    errs.append('%s:%d: SERENE_ERR_%s is no code of SERENE_ERRNO_MAP'
                                % (rel, k, code))
            for name in re.findall(r'(?<![\w-])-(E[A-Z0-9]+)\b', line):
                if not hasattr(errno, name):
                    errs.append('%s:%d: -%s is no errno name' % (rel, k, name))
    for rel in files:
        if not (rel.startswith('lib/') and rel.endswith('.c')):
            continue
        with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
            for m in EXPORT.finditer(f.read()):
                if m.group(1) not in declared:
                    errs.append('%s: exports %s, which %s does not declare'
                                % (rel, m.group(1), HEADERS[0]))
    return errs


def check(root):
    errs = []
    for rel in LIMITS:
        errs += check_manual(root, rel)
    files = repo_files(root)
    tops = {f.split('/')[0] for f in files if '/' in f and not f.startswith('build')}
    texts = {}
    for rel in sorted(f for f in files if f.endswith('.md')):
        errs += check_links(root, rel)
        errs += check_names(root, rel, tops, texts)
    errs += check_help(root, files)
    errs += check_citations(root, files)
    errs += check_headers(root, files)
    return errs


HELP_GOOD = ('#!/bin/bash\n# h.sh - a script.\n#\n#   bench/h.sh [--runs K]\n#\n'
             '# Exit status: 0, 2 (bad usage).\nset -u\ncase $1 in\n'
             '    -h | --help) awk \'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }\' '
             '"$0"; exit 0 ;;\nesac\n')
HEADER_GOOD = ('#define SERENE_ERRNO_MAP(X) \\\n    X(INVAL, 1, "invalid") \\\n'
               '    X(BUSY, 13, "busy")\n\n'
               '/* serene_a - do a.\n * Returns:\n *   0                 done\n'
               ' *   SERENE_ERR_BUSY   busy\n * Blocks: no.\n * Threads: any. */\n'
               'SERENE_API int serene_a(int x,\n                        int y);\n\n'
               '/*\n * serene_b - do b.\n *\n * More.\n * Returns: a count.\n'
               ' * Blocks: until done.\n * Threads: one at a time.\n */\n'
               'SERENE_API size_t serene_b(void);\n')
CTL_GOOD = ('/* serene_ctl_c - do c.\n * Returns:\n *   -EINVAL  bad\n * Blocks: no.\n'
            ' * Threads: any. */\nSERENE_CTL_API int serene_ctl_c(void);\n')
SELF_FILES = {'bench/run_x.sh': '#!/bin/bash\n# x\ncase $1 in --runs) ;; esac\n',
              'bench/fabric.sh': '#!/bin/bash\n# x\ncase $1 in -n) ;; esac\n',
              'lib/a.c': 'SERENE_API int serene_a(int x, int y)\n{\n    return x + y;\n}\n',
              'p4/swswitch/b.c': '', HEADERS[0]: HEADER_GOOD, HEADERS[1]: CTL_GOOD}
SELF_CASES = {
    # name: (file, text, the message the checker must give, or None when clean[,
    #        more files]); every case also has SELF_FILES
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
    'missing-path': ('README.md', 'See `lib/nothere.c`.\n', 'names a file that does not exist'),
    'missing-in-code': ('README.md', '```sh\nls lib/a.c lib/b.c\n```\n', 'does not exist: lib/b.c'),
    'missing-beside': ('p4/README.md', '`swswitch/nope.c` beside `swswitch/b.c`\n',
                       'does not exist: swswitch/nope.c'),
    'installed-beside': ('p4/README.md', '`swswitch/bin/`, `swswitch/x.so`, `swswitch/b.c`\n',
                         None),
    'names-ok': ('README.md', '`lib/a.c`, `./lib/`, `swswitch/b.c` is not here, `bench/tool` '
                 '(built), `lib/X.c`, `tests/unit/test_<m>.c`, `lib/q*`, `build/x/y`, '
                 '`$B/lib/z`, `https://x.org/lib/z`, [a](lib/a.c)\n', None,
                 {'bench/meson.build': "executable('tool', 'tool.c')\n"}),
    'bad-option': ('README.md', '```sh\nbench/run_x.sh --runs 3 \\\n    --foo 1\n```\n',
                   'bench/run_x.sh has no option --foo'),
    'options-ok': ('README.md', '`./bench/run_x.sh --runs=3 | grep --count x; ls --all`, '
                   '`bench/run_x.sh -- prog --any` and `./serene.sh demo --seeds 1`\n', None,
                   {'serene.sh': '#!/bin/bash\nexamples/demo.sh "$@"\n',
                    'examples/demo.sh': '#!/bin/bash\n# --seeds LIST\n'}),
    'citation': ('README.md', '# x\n', 'cites the tracker',
                 {'lib/c.c': '/* the crash of Iss' 'ue 34 */\n'}),
    'citation-tag': ('README.md', '# x\n', 'cites the tracker',
                     {'bench/b.sh': '# iss' 'ue [pace]\n'}),
    'citation-log': ('README.md', 'An issue of timing; issues 3.\n', None,
                     {'bench/NOTES.md': 'iss' 'ue 18, item 3\n'}),
    'help-ok': ('README.md', '# x\n', None, {'bench/h.sh': HELP_GOOD}),
    'help-short': ('README.md', '# x\n', "stops before the header's last line: Exit status",
                   {'bench/h.sh': HELP_GOOD.replace("awk 'NR > 2 && !/^#/ { exit } NR > 2 "
                                                    "{ sub(/^# ?/, \"\"); print }'",
                                                    "sed -n '3,4p'")}),
    'help-exit': ('README.md', '# x\n', '--help exits 2',
                  {'tests/h.sh': HELP_GOOD.replace('exit 0', 'exit 2')}),
    'header-no-returns': (HEADERS[0], HEADER_GOOD.replace(' * Returns: a count.\n', ''),
                          'serene_b: no "Returns:" part'),
    'header-no-blocks': (HEADERS[1], CTL_GOOD.replace(' * Blocks: no.\n', ''),
                         'serene_ctl_c: no "Blocks:" part'),
    'header-no-threads': (HEADERS[0], HEADER_GOOD.replace(' * Threads: any. */', ' */'),
                          'serene_a: no "Threads:" part'),
    'header-order': (HEADERS[0], HEADER_GOOD.replace(' * Blocks: until done.\n', '').replace(
        ' */\nSERENE_API size_t', ' * Blocks: until done.\n */\nSERENE_API size_t'),
                     'out of order'),
    'header-empty-returns': (HEADERS[1], CTL_GOOD.replace(' *   -EINVAL  bad\n', ''),
                             '"Returns:" lists nothing'),
    'header-no-comment': (HEADERS[0], HEADER_GOOD + 'SERENE_API void serene_c(void);\n',
                          'serene_c has no doc comment'),
    'header-shared': (HEADERS[0], HEADER_GOOD + '/* serene_c - c and d.\n * Returns: 0.\n'
                      ' * Blocks: no.\n * Threads: any. */\nSERENE_API void serene_c(void);\n'
                      'SERENE_API void serene_d(void);\n', 'serene_d has no doc comment'),
    'header-wrong-name': (HEADERS[0], HEADER_GOOD.replace('serene_a - do a.', 'serene_x - do a.'),
                          'serene_a: the comment does not open with'),
    'header-two-line-summary': (HEADERS[0], HEADER_GOOD.replace('serene_a - do a.',
                                                                'serene_a - do a\n * and more.'),
                                'serene_a: the comment does not open with'),
    'header-unknown-code': (HEADERS[0], HEADER_GOOD.replace('SERENE_ERR_BUSY   busy',
                                                            'SERENE_ERR_BUSSY  busy'),
                            'SERENE_ERR_BUSSY is no code'),
    'header-unknown-errno': (HEADERS[1], CTL_GOOD.replace('-EINVAL', '-EINVALID'),
                             '-EINVALID is no errno name'),
    'header-export-undeclared': ('README.md', '# x\n', 'exports serene_d, which',
                                 {'lib/d.c': 'SERENE_API int serene_d(void)\n{\n    return 0;\n}\n'}),
}


def self_test():
    bad = 0
    for name, case in SELF_CASES.items():
        rel, text, want = case[:3]
        files = dict((m, '# x\n') for m in LIMITS)
        files.update(SELF_FILES)
        files.update(case[3] if len(case) > 3 else {})
        files[rel] = text
        with tempfile.TemporaryDirectory() as root:
            for path, body in files.items():
                os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(root, path), 'w', encoding='utf-8') as f:
                    f.write(body)
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
