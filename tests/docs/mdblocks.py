#!/usr/bin/env python3
"""mdblocks.py — the runnable parts of a Markdown page, for tests/docs/tutorial.sh.

  mdblocks.py extract PAGE DIR   writes DIR/NNN.sh (a ```sh block), DIR/NNN.expect (the
                                 ```text block right after it, if any) and DIR/NNN.serve
                                 (marks the ```sh serve block: where the server starts);
                                 prints the number of steps
  mdblocks.py match EXPECT ACTUAL  exit 0 when ACTUAL matches EXPECT, else prints the first
                                 difference and exits 1

Blocks whose info string is neither `sh`, `sh serve` nor `text` (```sh notest, ```yaml) are
not run. In an expected block `…` matches any text within a line, and a line that is only `…`
matches any number of lines. Runs of spaces compare as one space, so a table whose columns
are realigned still matches.
"""
import os
import re
import sys


def blocks(text):
    """(info, body, line) of every fenced block, in order."""
    out, lines, i = [], text.split('\n'), 0
    while i < len(lines):
        m = re.match(r'^```(.*)$', lines[i])
        if not m:
            i += 1
            continue
        start, body, i = i + 1, [], i + 1
        while i < len(lines) and lines[i] != '```':
            body.append(lines[i])
            i += 1
        if i == len(lines):
            sys.exit(f'unterminated block at line {start}')
        out.append((m.group(1).strip(), '\n'.join(body) + '\n', start))
        i += 1
    return out


def extract(page, outdir):
    bs = blocks(open(page, encoding='utf-8').read())
    n = 0
    for k, (info, body, line) in enumerate(bs):
        if info not in ('sh', 'sh serve'):
            continue
        n += 1
        base = os.path.join(outdir, f'{n:03d}')
        with open(base + '.sh', 'w', encoding='utf-8') as f:
            f.write(f'# {os.path.basename(page)}:{line}\n{body}')
        if info == 'sh serve':
            open(base + '.serve', 'w').close()
        nxt = bs[k + 1] if k + 1 < len(bs) else None
        if info == 'sh' and nxt and nxt[0] == 'text':
            with open(base + '.expect', 'w', encoding='utf-8') as f:
                f.write(nxt[1])
    print(n)


def squeeze(line):
    return re.sub(r' +', ' ', line)


def line_re(expect_line):
    expect_line = squeeze(expect_line)
    return re.compile('^' + '.*'.join(re.escape(p) for p in expect_line.split('…')) + '$')


def match_lines(exp, act):
    """True when act matches exp; a line that is only … takes any number of lines."""
    if not exp:
        return not act
    if exp[0] == '…':
        return any(match_lines(exp[1:], act[i:]) for i in range(len(act) + 1))
    return bool(act) and bool(line_re(exp[0]).match(squeeze(act[0]))) and match_lines(exp[1:], act[1:])


def match(expect_file, actual_file):
    exp = open(expect_file, encoding='utf-8').read().rstrip('\n').split('\n')
    act = open(actual_file, encoding='utf-8', errors='replace').read().rstrip('\n').split('\n')
    if match_lines(exp, act):
        return 0
    for i, e in enumerate(exp):
        if e == '…':
            break
        a = act[i] if i < len(act) else '(no more output)'
        if not line_re(e).match(squeeze(a)):
            print(f'  line {i + 1}: expected {e!r}\n  line {i + 1}: got      {a!r}')
            break
    print('  output was:')
    for a in act[:40]:
        print('    ' + a)
    return 1


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == 'extract':
        extract(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == 'match':
        sys.exit(match(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
