#!/usr/bin/env bash
# globals.sh — no mutable state lives outside a named context: every file-scope or function-scope
# variable of src/**/*.c that can be written (a static or an external definition, arrays and
# thread-locals included; const objects and pointer tables declared *const are not) is either
# gone or listed in tests/util/globals.allow ("path symbol  # why", the why also said in a
# comment at the definition). A variable not listed fails, named file:line; a listed one that
# no longer exists fails too, so the list stays the truth. The scanner reads C with comments,
# strings and preprocessor lines blanked; the first checks plant variables it must catch and
# declarations it must not, so the check itself can fail.
set -u
src=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
allow=$src/tests/util/globals.allow
passed=0 failed=0
t() { if "${@:2}"; then passed=$((passed + 1)); echo "ok - $1"; else failed=$((failed + 1)); echo "not ok - $1"; fi; }

# scan ROOT: "path:line: symbol" for each writable variable of ROOT/src/**/*.c that is static
# storage (file scope, or a static local), path relative to ROOT.
scan() {
  python3 - "$1" <<'PY'
import os, re, sys

def strip(text):
    """Comments, string and character literals, and preprocessor lines blanked; newlines kept."""
    out, i, n, bol = [], 0, len(text), True
    blank = lambda s: re.sub(r'[^\n]', ' ', s)
    while i < n:
        c = text[i]
        if bol and c == '#':  # a directive, with its continuation lines
            while i < n and text[i] != '\n':
                if text.startswith('\\\n', i):
                    out.append('\n'); i += 2; continue
                if text.startswith('/*', i):
                    j = text.find('*/', i + 2); j = n if j < 0 else j + 2
                    out.append(blank(text[i:j])); i = j; continue
                out.append(' '); i += 1
            continue
        if text.startswith('//', i):
            j = text.find('\n', i); j = n if j < 0 else j
            out.append(blank(text[i:j])); i = j; continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append(blank(text[i:j])); i = j; continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + blank(text[i + 1:j]) + c); i = j + 1; bol = False; continue
        out.append(c)
        bol = c == '\n' or (bol and c.isspace())
        i += 1
    return ''.join(out)

TOKEN = re.compile(r'[A-Za-z_]\w*|\d[\w.]*|"[^"\n]*"|\'[^\'\n]*\'|\.\.\.|->|[^\s\w]')
IDENT = re.compile(r'[A-Za-z_]')
GROUPS = {'__attribute__', '_Alignas', 'alignas', '__declspec', '_Atomic', 'typeof', '__typeof__', 'asm', '__asm__'}
QUALIFIERS = {'const', 'volatile', 'restrict', '__restrict', '_Atomic'}
NOT_A_DECLARATION = {'typedef', 'extern', '_Static_assert', 'static_assert', ';', '{', '}'}

def tokens(text):
    line, pos = 1, 0
    for m in TOKEN.finditer(text):
        line += text.count('\n', pos, m.start()); pos = m.start()
        yield m.group(), line

def drop_groups(toks):
    """__attribute__((…)), _Alignas(…) and the like out; _Atomic(T) becomes a plain type name."""
    out, i = [], 0
    while i < len(toks):
        if toks[i][0] in GROUPS and i + 1 < len(toks) and toks[i + 1][0] == '(':
            d, j = 0, i + 1
            while j < len(toks):
                d += (toks[j][0] == '(') - (toks[j][0] == ')')
                if d == 0: break
                j += 1
            if toks[i][0] == '_Atomic': out.append(('T', toks[i][1]))
            i = j + 1; continue
        out.append(toks[i]); i += 1
    return out

def drop_bodies(toks):
    """A struct, union or enum body and tag out of the specifiers (neither is the declared
    name); an initialiser (from '=') kept whole."""
    out, d, i = [], 0, 0
    while i < len(toks):
        t = toks[i][0]
        if t == '=' and d == 0: return out + toks[i:]
        if t == '{': d += 1
        elif t == '}': d -= 1
        elif d == 0:
            out.append(toks[i])
            if t in ('struct', 'union', 'enum') and i + 1 < len(toks) and IDENT.match(toks[i + 1][0]): i += 1
        i += 1
    return out

def split_top(toks, sep):
    parts, d = [[]], 0
    for t in toks:
        d += (t[0] in '([{') - (t[0] in ')]}')
        if d == 0 and t[0] == sep: parts.append([]); continue
        parts[-1].append(t)
    return parts

def variables(decl):
    """(name, line, writable) for each object a declaration (without its storage class and ';')
    declares; functions declare none."""
    found, spec_const = [], None
    for k, part in enumerate(split_top(drop_bodies(drop_groups(decl)), ',')):
        p = split_top(part, '=')[0]
        paren = next((i for i, t in enumerate(p) if t[0] == '('), None)
        if paren is not None and not (paren + 1 < len(p) and p[paren + 1][0] == '*'):
            if paren > 0 and IDENT.match(p[paren - 1][0]): continue  # a function
        if paren is not None:  # (*name)(…) or (*name)[…]: a pointer
            inner, d = [], 0
            for t in p[paren:]:
                d += (t[0] == '(') - (t[0] == ')'); inner.append(t)
                if d == 0: break
            ids = [t for t in inner if IDENT.match(t[0]) and t[0] not in QUALIFIERS]
            if not ids: continue
            stars = [i for i, t in enumerate(inner) if t[0] == '*']
            found.append((ids[-1][0], ids[-1][1], 'const' not in [t[0] for t in inner[stars[-1] + 1:]]))
            continue
        head = [t for t in p[:next((i for i, t in enumerate(p) if t[0] == '['), len(p))]]
        ids = [t for t in head if IDENT.match(t[0])]
        if not ids or ids[-1][0] in ('struct', 'union', 'enum'): continue  # a type, no object
        words = [t[0] for t in head]
        if k == 0:
            first = next((i for i, w in enumerate(words) if w == '*'), len(words))
            spec_const = 'const' in words[:first]
        stars = [i for i, w in enumerate(words) if w == '*']
        writable = 'const' not in words[stars[-1] + 1:] if stars else not spec_const
        found.append((ids[-1][0], ids[-1][1], writable))
    return found

def scan(text):
    """(line, name, in_function) of the writable static-storage variables of one file."""
    toks, out = list(tokens(strip(text))), []
    depth, i, start, blocks, prev = 0, 0, True, [], None
    while i < len(toks):
        t = toks[i][0]
        if start and (t == 'static' or (depth == 0 and t not in NOT_A_DECLARATION)):
            j, d, decl = i + (t == 'static'), 0, []
            while j < len(toks):  # to the ';' ending it, or a function's body
                u = toks[j][0]
                if u in '([': d += 1
                elif u in ')]': d -= 1
                elif u == '{':
                    if d == 0 and not any(x[0] == '=' for x in decl): break
                    d += 1
                elif u == '}': d -= 1
                elif u == ';' and d == 0: break
                decl.append(toks[j]); j += 1
            if j < len(toks) and toks[j][0] == '{' and decl and decl[-1][0] != ')':
                d = 0  # a struct, union or enum body in the specifiers: take it, on to ';'
                while j < len(toks):
                    u = toks[j][0]; d += (u in '([{') - (u in ')]}')
                    decl.append(toks[j]); j += 1
                    if d == 0 and u == '}': break
                while j < len(toks) and toks[j][0] != ';':
                    decl.append(toks[j]); j += 1
            if j < len(toks) and toks[j][0] == ';' and not {'typedef', 'extern'} & {x[0] for x in decl}:
                out += [(line, name, depth > 0) for name, line, writable in variables(decl) if writable]
        # where a declaration may start: after ';' or a block's braces (a function body, a
        # compound statement), not inside a type's body or an initialiser
        if t == '{':
            blocks.append(prev in (')', '{', ';', '}', 'else', 'do', ':', None) and not (blocks and not blocks[-1] and prev != ')'))
            depth += 1; start = blocks[-1]
        elif t == '}':
            depth -= 1; start = blocks.pop() if blocks else True
        else:
            start = t == ';' and (not blocks or blocks[-1])
        prev = t; i += 1
    return out

root = sys.argv[1]
for dirpath, dirs, files in sorted(os.walk(os.path.join(root, 'src'))):
    dirs.sort()
    for f in sorted(files):
        if f.endswith('.c'):
            path = os.path.join(dirpath, f)
            for line, name, local in scan(open(path, encoding='utf-8', errors='replace').read()):
                print(f"{os.path.relpath(path, root)}:{line}: {name}{' (a static local)' if local else ''}")
PY
}

# unlisted FOUND: the found variables the allow list does not name ("path symbol")
listed() { sed 's/#.*//' "$allow" | awk 'NF >= 2 { print $1 " " $2 }' | sort -u; }
unlisted() { awk -v ok="$(listed)" 'BEGIN { n = split(ok, l, "\n"); for (i = 1; i <= n; i++) is[l[i]] = 1 }
                 NF { split($0, a, ":"); if (!((a[1] " " $2) in is)) print }' <<<"$1" | grep .; }
# stale FOUND: allow list entries naming no variable found
stale() { comm -23 <(listed) <(awk -F': ' '{ split($1, a, ":"); split($2, b, " "); print a[1] " " b[1] }' <<<"$1" | sort -u) | grep .; }

# The scanner against planted code: what it must catch, and what it must not.
plant=$(mktemp -d)
trap 'rm -rf "$plant"' EXIT
mkdir -p "$plant/src/x"
cat >"$plant/src/x/planted.c" <<'C'
#include <stdatomic.h>
static int counter;                          /* caught: line 2 */
static char buf[64] = "x;{";                 /* caught: line 3 */
static const char *names[] = {"a", "b"};     /* caught: the pointers can be rewritten */
static void (*hook)(int);                    /* caught: a function pointer */
int exported_total = 0;                      /* caught: external, writable */
static struct { int a; const char *b; } cfg = {1, "("}; /* caught */
static _Atomic(int) flag, *flagp;            /* caught twice */
static const int K = 3;
static const char *const OK[] = {"a", "b"};
static const struct { const char *s; int (*fn)(int); } TABLE[] = {{"a", 0}};
static int f(int x);
extern int elsewhere;
typedef struct node { int v; } node;
struct tagged { int v; };
enum { A, B };
static void (*const fixed)(int) = 0;
// static int commented;
/* static int also_commented; */
static int f(int x) {
    static int calls;                        /* caught: a static local, line 21 */
    static const char digits[] = "0123";
    int local = x;
    for (int i = 0; i < 2; i++) { static long seen; seen += i; } /* caught */
    return local + digits[0] + calls;
}
#define MACRO static int in_a_macro;
C
want='src/x/planted.c:2: counter
src/x/planted.c:3: buf
src/x/planted.c:4: names
src/x/planted.c:5: hook
src/x/planted.c:6: exported_total
src/x/planted.c:7: cfg
src/x/planted.c:8: flag
src/x/planted.c:8: flagp
src/x/planted.c:21: calls (a static local)
src/x/planted.c:24: seen (a static local)'
got=$(scan "$plant")
[ "$got" = "$want" ] || diff <(echo "$want") <(echo "$got") | sed 's/^/  /'
t "the scanner finds exactly the planted writable variables (consts, functions, types, comments, macros aside)" test "$got" = "$want"
t "a planted variable not in the allow list fails the check" test -n "$(unlisted "$got")"

# The tree.
t "the allow list exists: $allow" test -r "$allow"
found=$(scan "$src")
t "the scanner ran over $src/src" test -n "$found"
bad=$(unlisted "$found")
[ -n "$bad" ] && echo "$bad" | sed 's/$/ — move it into its subsystem'"'"'s context, or list it in tests\/util\/globals.allow with why/; s/^/  /'
t "every writable static-storage variable of src/ is in tests/util/globals.allow" test -z "$bad"
old=$(stale "$found")
[ -n "$old" ] && echo "$old" | sed 's/^/  listed but not found: /'
t "every entry of tests/util/globals.allow names a variable that exists" test -z "$old"
why=$(grep -vE '^\s*(#|$)' "$allow" | grep -vE '^\S+\s+\S+\s+#\s*\S')
[ -n "$why" ] && echo "$why" | sed 's/^/  no "# why": /'
t "every entry of tests/util/globals.allow says why" test -z "$why"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
