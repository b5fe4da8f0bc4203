#!/usr/bin/env bash
# relay2026.sh — a downstream's requests to its client relayed to a 2026-07-28 caller as
# input-required rounds (exec.c relay_park, provider.c acall_park): the SDK server of
# relay.sh (relay_srv.mjs) behind proxy graphs, called by the official SDK v2 client and by a
# raw JSON-RPC client (sdk_relay2026.mjs): form and URL elicitation, sampling and roots
# complete; a client without the capability → -32601 to the downstream; an altered or reused
# requestState → -32602; a round nobody answers ends with the downstream's call within the
# run's time limit (its work cancelled, another tenant's calls unaffected, a late retry told to
# call again); a cancelled retry cancels the downstream's work; the downstream's progress and
# log messages follow the call holding the run (the first call's token before the question,
# the retry's after it, increasing over the whole run, nothing from while it waits between
# rounds, each at its request's log level); a downstream's question during a task call (tk:
# an mcp node with relay: true, taskSupport optional) turns the task input_required with it,
# tasks/update completes it with the downstream's result, tasks/cancel cancels the
# downstream's call, a client without the capability gets the refusal, and an update after
# the run's end or on replica B (same store) fails the task clearly while this replica
# cancels the downstream's call; nothing leaks (sanitizers).
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk

"$NODE" "$GG_SRCDIR/tests/gateway/relay_srv.mjs" >"$GG_TMP/srv.log" 2>&1 &
SRV=$!
BPID=
trap 'kill $SRV $BPID 2>/dev/null; gg_cleanup' EXIT
for _ in $(seq 1 300); do grep -q '^PORT ' "$GG_TMP/srv.log" && break; sleep 0.1; done
PORT=$(sed -n 's/^PORT //p' "$GG_TMP/srv.log")
[ -n "$PORT" ] || { echo "the downstream did not start: $(head -5 "$GG_TMP/srv.log")"; echo "0 passed, 1 failed"; exit 1; }

SHORT_MS=3000
cat >"$GG_TMP/px.yaml" <<YAML
version: "1.0"
server: {name: "px", version: "1.0.0"}
mcpServers:
  relay: {type: "streamableHttp", url: "http://127.0.0.1:$PORT/mcp", timeout: 30000}
proxy:
  - {server: "relay", tools: "all", prefix: "r_"}
YAML
# the same behind a run time limit of SHORT_MS: a round nobody answers ends with it
cat >"$GG_TMP/short.yaml" <<YAML
version: "1.0"
server: {name: "short", version: "1.0.0"}
executionLimits: {maxExecutionTimeMs: $SHORT_MS}
mcpServers:
  relay: {type: "streamableHttp", url: "http://127.0.0.1:$PORT/mcp", timeout: 30000}
proxy:
  - {server: "relay", tools: "all", prefix: "r_"}
YAML
# a task-capable tool whose mcp node relays (relay_srv's never: one form elicitation, then its
# answer as the result); tkshort the same under a run time limit of SHORT_MS
for g in tk tkshort; do
  lim=""; [ "$g" = tkshort ] && lim="executionLimits: {maxExecutionTimeMs: $SHORT_MS}"
  cat >"$GG_TMP/$g.yaml" <<YAML
version: "1.0"
server: {name: "$g", version: "1.0.0"}
$lim
mcpServers:
  relay: {type: "streamableHttp", url: "http://127.0.0.1:$PORT/mcp", timeout: 30000}
tools:
  - name: asked
    description: a downstream tool that asks its client, as a task when the client takes one
    taskSupport: optional
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: relay, tool: never, args: {}, relay: true, next: exit}
      - {id: exit, type: exit}
YAML
done
cat >"$GG_TMP/quick.yaml" <<'YAML'
version: "1.0"
server: {name: "quick", version: "1.0.0"}
tools:
  - name: quick
    description: computes only
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: r}
      - {id: r, type: transform, transform: {expr: '"done"'}, next: exit}
      - {id: exit, type: exit}
YAML

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create other >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
OADMIN=$(gw_key other admin)
OKEY=$(gw_key other tools:read,tools:execute)
export GRAPHGATE_SESSION_SECRET=relay-test-secret-0123456789-0123456789-0123456789
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants and keys" gw_cli_clean
t "the proxy graph is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201
t "the proxy graph with a short time limit is accepted" eq "$(gw_put_graph "$ADMIN" acme short "$GG_TMP/short.yaml")" 201
t "the other tenant's graph is accepted" eq "$(gw_put_graph "$OADMIN" other quick "$GG_TMP/quick.yaml")" 201
t "the task graphs are accepted" eq "$(gw_put_graph "$ADMIN" acme tk "$GG_TMP/tk.yaml") $(gw_put_graph "$ADMIN" acme tkshort "$GG_TMP/tkshort.yaml")" "201 201"
# replica B: the same database and secret, its own ports (a task parked on this one is
# answered or cancelled there)
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 "$GG_BIN" serve --db "$GG_DB" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 \
  >"$GG_TMP/b.out" 2>"$GG_TMP/b.err" &
BPID=$!
for i in $(seq 1 600); do grep -q internal "$GG_TMP/b.out" 2>/dev/null && break; kill -0 $BPID 2>/dev/null || break; sleep 0.05; done
BPUB=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$GG_TMP/b.out")
t "replica B started" test -n "$BPUB"

GG_NPM="$NM" "$NODE" "$GG_SRCDIR/tests/gateway/sdk_relay2026.mjs" "$GG_PUB/mcp/acme/px" "$GG_PUB/mcp/acme/short" "$KEY" \
  "$GG_PUB/mcp/other/quick" "$OKEY" "http://127.0.0.1:$PORT/status" "$SHORT_MS" "$GG_PUB/mcp/acme/tk" "$GG_PUB/mcp/acme/tkshort" \
  "$BPUB/mcp/acme/tk" >"$GG_TMP/sdk.out" 2>&1
sed 's/^/  sdk: /' "$GG_TMP/sdk.out" | grep -v ' passed, '
sp=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$GG_TMP/sdk.out"); sf=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$GG_TMP/sdk.out")
GG_PASSED=$((GG_PASSED + ${sp:-0})); GG_FAILED=$((GG_FAILED + ${sf:-1}))
kill -TERM $BPID; for i in $(seq 1 400); do kill -0 $BPID 2>/dev/null || break; sleep 0.05; done
wait $BPID; BRC=$?; BPID=
t "replica B stops cleanly (exit 0)" eq "$BRC" 0
# a round left waiting at shutdown (its downstream call open for 30 s more): the server
# still stops at once and cleanly
M26='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}'
st=$(gg_curl "$GG_TMP/held.json" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: r_never' -H "Authorization: Bearer $KEY" \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"r_never\",\"arguments\":{},$M26}}" \
  "$GG_PUB/mcp/acme/px")
t "a round left waiting" eq "$(jget "$GG_TMP/held.json" 'd["result"]["resultType"]')" input_required
t0=$(date +%s)
t "server stops cleanly with a round waiting (exit 0, no sanitizer report)" gw_stop_clean
t "... and at once (under 10 s)" test $(($(date +%s) - t0)) -lt 10
gg_finish
