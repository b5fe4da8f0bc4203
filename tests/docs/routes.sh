#!/usr/bin/env bash
# docs/rest.md against the route table the server really builds: `graphgate serve
# --print-routes` (the same install_subsystems as serve, printed instead of bound) lists
# METHOD PATTERN LISTENERS; rest.md documents each route as a `### METHOD[, METHOD…] PATTERN`
# section under `## Public listener`, `## Internal listener` or `## Both listeners`. Every
# registered route must be documented with its method, pattern and listener, and every
# documented one must exist.
. "${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
PAGE="$GG_SRCDIR/docs/rest.md"

"$GG_BIN" serve --db "$GG_TMP/routes.db" --print-routes >"$GG_TMP/routes.txt" 2>"$GG_TMP/routes.err"
rc=$?
t "serve --print-routes exits 0" test "$rc" = 0
t "serve --print-routes lists the routes (METHOD PATTERN LISTENERS)" \
  grep -qx 'PUT /admin/tenants/{t}/graphs/{g} public' "$GG_TMP/routes.txt"
t "serve --print-routes binds nothing and starts no server" \
  sh -c "! grep -q serving '$GG_TMP/routes.txt'"

# documented routes, one "METHOD PATTERN LISTENERS" line each, from the page's sections
python3 - "$PAGE" >"$GG_TMP/documented.txt" 2>"$GG_TMP/doc.err" <<'EOF'
import re, sys
listener = None
sections = {'Public listener': 'public', 'Internal listener': 'internal', 'Both listeners': 'public,internal'}
for n, line in enumerate(open(sys.argv[1], encoding='utf-8'), 1):
    m = re.match(r'^## (.*)$', line.rstrip('\n'))
    if m:
        listener = sections.get(m.group(1))
        continue
    m = re.match(r'^### ((?:[A-Z]+, )*[A-Z]+) (/\S*)$', line.rstrip('\n'))
    if not m:
        if re.match(r'^### [A-Z]+[ ,]', line):
            sys.exit(f'rest.md:{n}: a route heading must be "### METHOD[, METHOD] /pattern": {line.strip()}')
        continue
    if not listener:
        sys.exit(f'rest.md:{n}: route {m.group(2)} is not under a listener section')
    for method in m.group(1).split(', '):
        print(f'{method} {m.group(2)} {listener}')
EOF
t "rest.md's route headings parse" test $? = 0 -a -s "$GG_TMP/documented.txt"
[ -s "$GG_TMP/doc.err" ] && cat "$GG_TMP/doc.err"

sort -u "$GG_TMP/routes.txt" >"$GG_TMP/registered.sorted"
sort "$GG_TMP/documented.txt" >"$GG_TMP/documented.sorted"
undocumented() {
  local missing; missing=$(comm -23 "$GG_TMP/registered.sorted" "$GG_TMP/documented.sorted")
  [ -z "$missing" ] || { echo "  registered but not in docs/rest.md:"; sed 's/^/    /' <<<"$missing"; return 1; }
}
nonexistent() {
  local extra; extra=$(comm -13 "$GG_TMP/registered.sorted" "$GG_TMP/documented.sorted")
  [ -z "$extra" ] || { echo "  in docs/rest.md but not registered:"; sed 's/^/    /' <<<"$extra"; return 1; }
}
once() {
  local dups; dups=$(uniq -d "$GG_TMP/documented.sorted")
  [ -z "$dups" ] || { echo "  documented twice:"; sed 's/^/    /' <<<"$dups"; return 1; }
}
t "every registered route ($(wc -l <"$GG_TMP/registered.sorted")) is documented with its method, pattern and listener" undocumented
t "every documented route exists" nonexistent
t "no route is documented twice" once

# Each route section has a curl example or says what its MCP endpoint is (no empty stubs).
python3 - "$PAGE" >"$GG_TMP/thin.txt" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding='utf-8').read()
for sec in re.split(r'\n(?=### )', text)[1:]:
    head, _, body = sec.partition('\n')
    if re.match(r'^### [A-Z]', head) and len(body.strip()) < 30:
        print(head)
EOF
t "every route section says something" test ! -s "$GG_TMP/thin.txt"
[ -s "$GG_TMP/thin.txt" ] && cat "$GG_TMP/thin.txt"
gg_finish
