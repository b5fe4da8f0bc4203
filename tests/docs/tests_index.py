#!/usr/bin/env python3
"""tests_index.py — the per-folder tables of tests/README.md, from each test's own header.

  tests_index.py SRCDIR            prints the tables (paste them under "## Every test")
  tests_index.py SRCDIR --check    exit 1 naming every test file README.md does not link

A test file is a .sh, .c or .case file in a tests/ folder (helpers named lib_* and the
fixtures and npm folders are not tests). Its line is the first sentence of its header
comment, so a test that explains itself is indexed by that explanation."""
import glob
import os
import re
import sys

SKIP_DIRS = ('fixtures', 'npm')


def test_files(src):
    for d in sorted(glob.glob(os.path.join(src, 'tests', '*', ''))):
        if os.path.basename(d.rstrip('/')) in SKIP_DIRS:
            continue
        for f in sorted(glob.glob(d + '*')):
            if f.endswith(('.sh', '.c', '.case')) and not os.path.basename(f).startswith('lib_'):
                yield d, f


def first_sentence(path):
    out = []
    for line in open(path, errors='replace').read().splitlines()[:14]:
        if line.startswith('#!'):
            continue
        m = re.match(r'^(#|//|/\*+| \*)\s?(.*)$', line)
        if not m:
            if out:
                break
            continue
        text = m.group(2).rstrip('*/ ').strip()
        if not text and out:
            break
        if text:
            out.append(text)
    s = re.sub(r'^\S+\s+—\s+', '', ' '.join(out))
    s = re.sub(r'^Unit tests for ', '', s)
    m = re.match(r'(.+?[.:;])(\s|$)', s)
    s = m.group(1) if m else s
    if len(s) > 170:
        s = s[:167].rsplit(' ', 1)[0] + ' …'
    return s.rstrip(':;').replace('|', '\\|')


def tables(src):
    cur = None
    for d, f in test_files(src):
        if d != cur:
            if cur:
                print()
            cur = d
            print('### `tests/%s`\n\n| file | what it checks |\n|---|---|' % os.path.basename(d.rstrip('/')))
        rel = os.path.relpath(f, os.path.join(src, 'tests'))
        print('| [`%s`](%s) | %s |' % (os.path.basename(f), rel, first_sentence(f)))


def check(src):
    readme = open(os.path.join(src, 'tests', 'README.md')).read()
    missing = [os.path.relpath(f, src) for _, f in test_files(src)
               if '](%s)' % os.path.relpath(f, os.path.join(src, 'tests')) not in readme]
    for m in missing:
        print('not in tests/README.md:', m)
    return not missing


if __name__ == '__main__':
    if '--check' in sys.argv:
        sys.exit(0 if check(sys.argv[1]) else 1)
    tables(sys.argv[1])
