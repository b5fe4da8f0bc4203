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
# tasks/update completes it with the downstream's result (also sent to replica B, which
# forwards it to this one, the holder), tasks/cancel cancels the downstream's call (also on
# B), a client without the capability gets the refusal, and an update after the run's end
# fails the task clearly. With cluster.internal_url on each replica, a retry reaching
# replica B is forwarded to A, which holds the run (relay_forward.mjs: rounds across replicas,
# the answer consumed once, the holder's progress and log messages streamed through, the
# forwarding header ignored on the public listener and never forwarded twice, another
# tenant's key refused); a holder that went away gives a clear error at once, one that never
# answers an error within the run's time left, and a bad cluster.internal_url keeps serve from
# starting; nothing leaks (sanitizers).
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_relay.sh"
relay_srv_start
BPID=
CPID=
DPID=
trap 'kill -CONT $DPID 2>/dev/null; kill $SRV $BPID $CPID $DPID 2>/dev/null; gg_cleanup' EXIT

SHORT_MS=3000
LIMIT="executionLimits: {maxExecutionTimeMs: $SHORT_MS}"
RELAY=$(relay_http 30000)
relay_graph px "$RELAY" "$(relay_proxy_section relay)"
# the same behind a run time limit of SHORT_MS: a round nobody answers ends with it
relay_graph short "$RELAY" "$(relay_proxy_section relay)" "$LIMIT"
# a task-capable tool whose mcp node relays (relay_srv's never: one form elicitation, then its
# answer as the result); tkshort the same under a run time limit of SHORT_MS
ASKED="tools:
$(relay_tool asked "a downstream tool that asks its client, as a task when the client takes one" "{type: object}" \
  "$(relay_mcp_node never '{}' 'relay: true')" "taskSupport: optional")"
relay_graph tk "$RELAY" "$ASKED"
relay_graph tkshort "$RELAY" "$ASKED" "$LIMIT"
# an argument mirrored in a header (x-mcp-header): a forward carries the header along
relay_graph hdr "$RELAY" "tools:
$(relay_tool regional "a downstream tool that asks its client, its region argument mirrored in a header" \
    "{type: object, properties: {region: {type: string, x-mcp-header: Region}}}" "$(relay_mcp_node never '{}' 'relay: true')")"
relay_quick_graph

relay_tenants other
KEY2=$(gw_key acme tools:read,tools:execute)
export GRAPHGATE_SESSION_SECRET=relay-test-secret-0123456789-0123456789-0123456789
# each replica's internal listener on a known port, named by its cluster.internal_url
free_port() { "$NODE" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
AIP=$(free_port); BIP=$(free_port); CIP=$(free_port); DIP=$(free_port)
GRAPHGATE_CLUSTER_INTERNAL_URL=http://127.0.0.1:$AIP GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 relay_start --internal-listen 127.0.0.1:$AIP
t "setup: tenants and keys" gw_cli_clean
t "the proxy graph is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201
t "the proxy graph with a short time limit is accepted" eq "$(gw_put_graph "$ADMIN" acme short "$GG_TMP/short.yaml")" 201
t "the other tenant's graph is accepted" eq "$(gw_put_graph "$OADMIN" other quick "$GG_TMP/quick.yaml")" 201
t "the header graph is accepted" eq "$(gw_put_graph "$ADMIN" acme hdr "$GG_TMP/hdr.yaml")" 201
t "the task graphs are accepted" eq "$(gw_put_graph "$ADMIN" acme tk "$GG_TMP/tk.yaml") $(gw_put_graph "$ADMIN" acme tkshort "$GG_TMP/tkshort.yaml")" "201 201"
# replica B: the same database and secret, its own ports (a task parked on this one is
# answered or cancelled there)
start_replica() { # NAME INTERNAL_PORT → its pid in RPID, public base in RPUB
  GRAPHGATE_CLUSTER_INTERNAL_URL=http://127.0.0.1:$2 GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 gw_serve "$GG_TMP/$1" \
    --internal-listen 127.0.0.1:$2
  RPID=$GW_SRV_PID RPUB=$GW_SRV_PUB
}
start_replica b "$BIP"; BPID=$RPID; BPUB=$RPUB
t "replica B started" test -n "$BPUB"

"$NODE" "$GG_SRCDIR/tests/gateway/sdk_relay2026.mjs" "$GG_PUB/mcp/acme/px" "$GG_PUB/mcp/acme/short" "$KEY" \
  "$GG_PUB/mcp/other/quick" "$OKEY" "http://127.0.0.1:$PORT/status" "$SHORT_MS" "$GG_PUB/mcp/acme/tk" "$GG_PUB/mcp/acme/tkshort" \
  "$BPUB/mcp/acme/tk" >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?
# a retry on B of a round whose run A holds: forwarded to A
"$NODE" "$GG_SRCDIR/tests/gateway/relay_forward.mjs" main "$GG_PUB" "$BPUB" "http://127.0.0.1:$BIP/internal" "$KEY" "$KEY2" "$OKEY" \
  "http://127.0.0.1:$PORT/status" >"$GG_TMP/fwd.out" 2>&1
gw_fold "$GG_TMP/fwd.out" $? fwd
# the holder gone (replica C parked the run, then stopped): the retry on B fails at once,
# clearly, naming no URL
start_replica c "$CIP"; CPID=$RPID
t "replica C started" test -n "$RPUB"
"$NODE" "$GG_SRCDIR/tests/gateway/relay_forward.mjs" round "$RPUB" "$KEY" >"$GG_TMP/c_round.json"
t "a round on replica C" test -n "$(jget "$GG_TMP/c_round.json" 'd["state"]')"
kill -TERM $CPID; wait $CPID
"$NODE" "$GG_SRCDIR/tests/gateway/relay_forward.mjs" retry "$BPUB" "$KEY" "$(jget "$GG_TMP/c_round.json" 'd["state"]')" \
  "$(jget "$GG_TMP/c_round.json" 'd["key"]')" >"$GG_TMP/c_retry.json"
jget "$GG_TMP/c_retry.json" 'd["answer"]' >"$GG_TMP/c_answer.json"
t "holder down: the retry on B gets -32603 saying the holder did not answer" \
  eq "$(jget "$GG_TMP/c_answer.json" 'd["error"]["code"], "did not answer" in d["error"]["message"] or "cannot be reached" in d["error"]["message"]')" "-32603 True"
t "... naming no URL or address" eq "$(grep -c "127.0.0.1\|http" "$GG_TMP/c_answer.json")" 0
t "... at once (under 3 s)" test "$(jget "$GG_TMP/c_retry.json" 'd["ms"]')" -lt 3000
# a holder that takes the forward and never answers (replica D, stopped with SIGSTOP): the
# forward ends with the run's time left (SHORT_MS from the first call, plus 2 s of slack for
# the replicas' clocks), not request_timeout (60 s)
start_replica d "$DIP"; DPID=$RPID
"$NODE" "$GG_SRCDIR/tests/gateway/relay_forward.mjs" round "$RPUB" "$KEY" short >"$GG_TMP/d_round.json"
t "a round on replica D (the graph with a ${SHORT_MS} ms time limit)" test -n "$(jget "$GG_TMP/d_round.json" 'd["state"]')"
kill -STOP $DPID
"$NODE" "$GG_SRCDIR/tests/gateway/relay_forward.mjs" retry "$BPUB" "$KEY" "$(jget "$GG_TMP/d_round.json" 'd["state"]')" \
  "$(jget "$GG_TMP/d_round.json" 'd["key"]')" short >"$GG_TMP/d_retry.json"
kill -CONT $DPID; kill -TERM $DPID; wait $DPID; DPID=
jget "$GG_TMP/d_retry.json" 'd["answer"]' >"$GG_TMP/d_answer.json"
t "holder silent: the forward ends with -32603 (HTTP 504) saying it did not answer in time" \
  eq "$(jget "$GG_TMP/d_answer.json" 'd["error"]["code"], "in time" in d["error"]["message"]') $(jget "$GG_TMP/d_retry.json" 'd["status"]')" "-32603 True 504"
dms=$(jget "$GG_TMP/d_retry.json" 'd["ms"]')
t "... within the run's time left (${dms} ms, under $((SHORT_MS + 4000)))" test "${dms:-99999}" -lt $((SHORT_MS + 4000))
# a holder with one execution slot for the tenant (replica E; DPID, so the trap ends it): its
# refusal's Retry-After comes back through B, and a client of B that goes away during a
# plain-JSON forward gets the run cancelled on E (relay_gone.mjs)
EIP=$(free_port)
GRAPHGATE_TENANTS_MAX_CONCURRENT_EXECUTIONS=1 start_replica e "$EIP"; DPID=$RPID
"$NODE" "$GG_SRCDIR/tests/gateway/relay_gone.mjs" "$RPUB" "http://127.0.0.1:$EIP" "$BPUB" "$KEY" "$ADMIN" >"$GG_TMP/gone.out" 2>&1
gw_fold "$GG_TMP/gone.out" $? gone
kill -TERM $DPID; wait $DPID; DPID=
# a cluster.internal_url that is no http(s) URL: serve refuses to start, naming the key
GRAPHGATE_CLUSTER_INTERNAL_URL=ftp://x timeout 20 "$GG_BIN" serve --db "$GG_DB" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 \
  >"$GG_TMP/bad.out" 2>"$GG_TMP/bad.err"
t "a bad cluster.internal_url: serve refuses to start, naming the key" test $? -ne 0 -a -n "$(grep -l cluster.internal_url "$GG_TMP/bad.err" "$GG_TMP/bad.out")"
kill -TERM $BPID; for i in $(seq 1 400); do kill -0 $BPID 2>/dev/null || break; sleep 0.05; done
wait $BPID; BRC=$?; BPID=
t "replica B stops cleanly (exit 0)" eq "$BRC" 0
# a round left waiting at shutdown (its downstream call open for 30 s more): the server
# still stops at once and cleanly
relay_call26 "$GG_TMP/held.json" "$GG_PUB/mcp/acme/px" r_never '{}' '{"elicitation":{"form":{}}}' 9 >/dev/null
t "a round left waiting" eq "$(jget "$GG_TMP/held.json" 'd["result"]["resultType"]')" input_required
t0=$(date +%s)
t "server stops cleanly with a round waiting (exit 0, no sanitizer report)" gw_stop_clean
t "... and at once (under 10 s)" test $(($(date +%s) - t0)) -lt 10
gg_finish
