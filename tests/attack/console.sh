#!/usr/bin/env bash
# console.sh — hostile drafts at POST /console/api/tenants/{t}/check (the console's only
# route that parses tenant input): alias bombs, self-referencing aliases, deep nesting, an oversized body and a burst
# of checks each end in a bounded error while /health stays fast and memory stays bounded;
# hostile asset names never reach a file. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
code() { [ "$1" = "$2" ] || { echo "   status $1, want $2" >&2; return 1; }; }
diag() { [ "$(jget "$GG_TMP/r.json" "(d['ok'], d['diagnostics'][0]['severity'])")" = "(False, 'error')" ] \
  || { echo "   body: $(head -c 300 "$GG_TMP/r.json")" >&2; return 1; }; }
check() { gg_curl "$GG_TMP/r.json" -X POST -H "Authorization: Bearer $KEY" --data-binary @"$1" "$GG_PUB/console/api/tenants/acme/check"; }

gw_cli tenant create acme >/dev/null 2>&1
KEY=$(gw_key acme graphs:write)
gg_start || { echo "0 passed, 1 failed"; exit 1; }
rss0=$(rss_kb)

# billion laughs: 9 levels of 9 aliases (387M nodes if expanded)
python3 - "$GG_TMP/bomb.yaml" <<'PY'
import sys
lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
for i in range(1, 10):
    lines.append(f'a{i}: &a{i} [' + ','.join([f'*a{i-1}'] * 9) + ']')
lines.append('version: "1.0"')
open(sys.argv[1], 'w').write('\n'.join(lines) + '\n')
PY
t "alias bomb: 200 with an error, not an expansion" code "$(check "$GG_TMP/bomb.yaml")" 200
t "  reported as a diagnostic" diag
t "  /health still fast" health_fast 500

printf 'a: &x [1, *x]\nb: &y {k: *y}\n' >"$GG_TMP/self.yaml"
t "a self-referencing alias: 200 with an error" code "$(check "$GG_TMP/self.yaml")" 200
t "  reported as a diagnostic" diag

python3 -c "print('a: ' + '[' * 20000 + ']' * 20000)" >"$GG_TMP/deep.yaml"
t "20000-deep nesting: 200 with an error" code "$(check "$GG_TMP/deep.yaml")" 200
t "  reported as a diagnostic" diag

head -c $((9 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$GG_TMP/big.yaml"
st=$(check "$GG_TMP/big.yaml")
t "a 9 MiB draft is refused (413) or a bounded error" bash -c "[ '$st' = 413 ] || [ '$st' = 200 ]"

sed 's/next: "incident"/next: "nowhere"/' "$GG_SRCDIR/examples/triage.yaml" >"$GG_TMP/bad.yaml"
ok=0
for _ in $(seq 1 100); do [ "$(check "$GG_TMP/bad.yaml")" = 200 ] && ok=$((ok + 1)); done
t "100 checks in a row all answered" test "$ok" = 100
t "  /health still fast" health_fast 500
rss1=$(rss_kb)
t "memory bounded after the hostile drafts (+$(( (rss1 - rss0) / 1024 )) MiB < 64 MiB)" test $((rss1 - rss0)) -lt 65536

for name in '..%2f..%2fetc%2fpasswd' '%2e%2e' 'console.js%00.html' 'CONSOLE.JS' '.console.js'; do
  st=$(gg_curl "$GG_TMP/a" "$GG_PUB/console/$name")
  t "asset name $name is 404" code "$st" 404
done
t "server alive" alive
t "server stops cleanly" gw_stop_clean
gg_finish
