#!/usr/bin/env bash
# mcp2026.sh — MCP 2026-07-28 (stateless, per-request _meta) on the same endpoints as the
# session era: the conformance suite's 2026-07-28 requirement set on the internal listener,
# the official SDK v2 client over the public listener with a key, the revision's errors and
# bad input through curl, and the 2025-11-25 session era still served on the same endpoint.
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_conf_setup
KEYR=$(gw_key conf tools:read)
# replicas share the secret (and the database): a requestState sealed by one opens on another
export GRAPHGATE_SESSION_SECRET=mcp2026-test-secret-shared-by-replicas-0123456789
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "fixture graph uploaded" test "$(gw_put_graph "$ADMIN" conf everything "$FIXTURE")" = 201
PUB="$GG_PUB/mcp/conf/everything"
INT="$GG_INT/internal/mcp/conf/everything"
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'

# m26 OUT URL KEY METHOD PARAMS_JSON_WITHOUT_BRACES [curl args] → status (a 2026 request)
m26() {
  local out=$1 url=$2 key=$3 method=$4 params=$5; shift 5
  # the caller's headers first: the gateway reads the first of a repeated header
  local args=("$@" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
              -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $method")
  [ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
  gg_curl "$out" "${args[@]}" --data-binary "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"$method\",\"params\":{$params}}" "$url"
}
# rpc_err STATUS WANT_STATUS FILE CODE: the HTTP status and the JSON-RPC error code, id echoed
rpc_err() {
  [ "$1" = "$2" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['error']['code']==int(sys.argv[2]) and d['id']==77, d" "$3" "$4" \
    || { echo "   got HTTP $1: $(head -c 300 "$3")" >&2; return 1; }
}
R="$GG_TMP/r.json"

# ---- the SDK v2 client, public listener, API key
"$NODE" "$GG_SRCDIR/tests/gateway/sdk2026.mjs" "$PUB" "$KEY" > "$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?

# ---- discover, resultType, caching hints
st=$(m26 "$R" "$PUB" "$KEY" server/discover "$META")
t "server/discover: versions, capabilities, serverInfo in _meta" python3 -c "
import json; d=json.load(open('$R'))['result']
assert d['supportedVersions']==['2026-07-28'] and d['resultType']=='complete' and 'tools' in d['capabilities'], d
assert d['_meta']['io.modelcontextprotocol/serverInfo']['name']=='graphgate-conformance', d"
st=$(m26 "$R" "$PUB" "$KEY" tools/list "$META")
t "tools/list: resultType, ttlMs 0 and cacheScope private by default" python3 -c "
import json; d=json.load(open('$R'))['result']; assert (d['resultType'],d['ttlMs'],d['cacheScope'])==('complete',0,'private'), d"
sed 's/^  version: "1.0.0"$/  version: "1.0.1"\n  cache: { ttlMs: 30000, scope: public }/' "$FIXTURE" > "$GG_TMP/cached.yaml"
t "a graph's server.cache is accepted" test "$(gw_put_graph "$ADMIN" conf cached "$GG_TMP/cached.yaml")" = 201
st=$(m26 "$R" "$GG_PUB/mcp/conf/cached" "$KEY" resources/read "\"uri\":\"test://static-text\",$META" -H 'Mcp-Name: test://static-text')
t "resources/read carries the graph's ttlMs 30000 / public" python3 -c "
import json; d=json.load(open('$R'))['result']; assert (d['ttlMs'],d['cacheScope'])==(30000,'public'), d"
sed 's/^  version: "1.0.0"$/  version: "1.0.1"\n  cache: { ttlMs: 99999999999 }/' "$FIXTURE" > "$GG_TMP/badcache.yaml"
st=$(gw_put_graph "$ADMIN" conf badcache "$GG_TMP/badcache.yaml")
t "server.cache.ttlMs past a day is refused at upload" bash -c "[ $st = 422 ] && grep -q 'server.cache.ttlMs must be' '$GG_TMP/put.json'"

# ---- the revision's errors, in its order, ids echoed
st=$(m26 "$R" "$PUB" "$KEY" server/discover '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}')
t "_meta without clientCapabilities → -32602, HTTP 400" rpc_err "$st" 400 "$R" -32602
st=$(m26 "$R" "$PUB" "$KEY" server/discover "$META" -H 'MCP-Protocol-Version: 2025-11-25')
t "header version differs from _meta → -32020, HTTP 400" rpc_err "$st" 400 "$R" -32020
st=$(m26 "$R" "$PUB" "$KEY" server/discover '"_meta":{"io.modelcontextprotocol/protocolVersion":"2030-01-01","io.modelcontextprotocol/clientCapabilities":{}}' -H 'MCP-Protocol-Version: 2030-01-01')
t "unsupported version → -32022 with data.supported/requested" python3 -c "
import json; d=json.load(open('$R')); assert $st==400 and d['error']['code']==-32022 and d['error']['data']=={'supported':['2026-07-28'],'requested':'2030-01-01'} and d['id']==77, d"
st=$(m26 "$R" "$PUB" "$KEY" tools/list "$META" -H 'Mcp-Method: prompts/list')
t "Mcp-Method differs from the body → -32020" rpc_err "$st" 400 "$R" -32020
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"echo\",\"arguments\":{\"message\":\"x\"},$META" -H 'Mcp-Name: test_simple_text')
t "Mcp-Name differs from params.name → -32020" rpc_err "$st" 400 "$R" -32020
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"echo\",\"arguments\":{\"message\":\"x\"},$META" -H "Mcp-Name: =?base64?$(printf echo | base64)?=")
t "Mcp-Name in the base64 form is decoded" test "$st" = 200
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"test_header_param\",\"arguments\":{\"region\":\"eu\"},$META" -H 'Mcp-Name: test_header_param')
t "x-mcp-header argument without its Mcp-Param header → -32020" rpc_err "$st" 400 "$R" -32020
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"test_header_param\",\"arguments\":{\"region\":\"eu\"},$META" -H 'Mcp-Name: test_header_param' -H 'Mcp-Param-Region: us')
t "Mcp-Param header differing from the argument → -32020" rpc_err "$st" 400 "$R" -32020
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"test_header_param\",\"arguments\":{\"region\":\"eu\"},$META" -H 'Mcp-Name: test_header_param' -H 'Mcp-Param-Region: =?base64?ZXU?=')
t "Mcp-Param with bad base64 padding → -32020" rpc_err "$st" 400 "$R" -32020
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"test_missing_capability\",\"arguments\":{},$META" -H 'Mcp-Name: test_missing_capability')
t "a tool needing sampling the request did not declare → -32021 {requiredCapabilities}" python3 -c "
import json; d=json.load(open('$R')); assert $st==400 and d['error']['code']==-32021 and d['error']['data']=={'requiredCapabilities':{'sampling':{}}}, d"
for m in initialize ping logging/setLevel resources/subscribe; do
  st=$(m26 "$R" "$PUB" "$KEY" "$m" "$META")
  t "$m in the 2026 era → -32601, HTTP 404" rpc_err "$st" 404 "$R" -32601
done
st=$(m26 "$R" "$PUB" "$KEYR" tools/call "\"name\":\"echo\",\"arguments\":{\"message\":\"x\"},$META" -H 'Mcp-Name: echo')
t "scopes hold in the 2026 era: tools/call with a tools:read key → 403" test "$st" = 403
st=$(m26 "$R" "$PUB" "" server/discover "$META")
t "API keys hold in the 2026 era: no key → 401" test "$st" = 401

# ---- progress and log notifications only when asked
st=$(m26 "$R" "$INT" "" tools/call "\"name\":\"test_logging_tool\",\"arguments\":{},$META" -H 'Mcp-Name: test_logging_tool')
t "no notifications/message without _meta logLevel" bash -c "! grep -q notifications/message '$R' && grep -q resultType '$R'"
LMETA='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug","progressToken":"p1"}'
st=$(m26 "$R" "$INT" "" tools/call "\"name\":\"test_logging_tool\",\"arguments\":{},$LMETA" -H 'Mcp-Name: test_logging_tool')
t "logLevel debug + progressToken: log and progress on the call's own stream" bash -c "grep -q notifications/message '$R' && grep -q notifications/progress '$R'"

# ---- input-required rounds: sealed requestState, bound to graph version, tool and key
EMETA='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'
T=test_input_required_result_elicitation
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},$EMETA" -H "Mcp-Name: $T")
t "an elicit node → input_required with the node's request and a requestState" python3 -c "
import json; d=json.load(open('$R'))['result']
assert d['resultType']=='input_required' and d['inputRequests']['user_name']['method']=='elicitation/create', d
assert d['inputRequests']['user_name']['params']['message']=='What is your name?' and len(d['requestState'])>40, d"
RS=$(jget "$R" "d['result']['requestState']")
ANS='"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ann"}}}'
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$EMETA" -H "Mcp-Name: $T")
t "the answer and the state resume the run at the node" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['resultType']=='complete' and d['content'][0]['text']=='Hello, Ann!', d"
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$EMETA" -H "Mcp-Name: $T")
t "a state is answered once: the same round again → -32602, HTTP 400 (tests/attack/replay.sh)" rpc_err "$st" 400 "$R" -32602
t "... naming the answered round" grep -q 'already answered' "$R"
BAD=$(python3 -c "import sys; s=sys.argv[1]; i=len(s)//2; print(s[:i]+('A' if s[i]!='A' else 'B')+s[i+1:])" "$RS")
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},$ANS,\"requestState\":\"$BAD\",$EMETA" -H "Mcp-Name: $T")
t "a tampered requestState → -32602" rpc_err "$st" 400 "$R" -32602
T2=test_input_required_result_tampered_state
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T2\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$EMETA" -H "Mcp-Name: $T2")
t "another tool's requestState → -32602" rpc_err "$st" 400 "$R" -32602
KEY2=$(gw_key conf tools:read,tools:execute)
st=$(m26 "$R" "$PUB" "$KEY2" tools/call "\"name\":\"$T\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$EMETA" -H "Mcp-Name: $T")
t "another API key's requestState → -32602" rpc_err "$st" 400 "$R" -32602
st=$(m26 "$R" "$INT" "" tools/call "\"name\":\"$T\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$EMETA" -H "Mcp-Name: $T")
t "the internal listener does not take a key's requestState → -32602" rpc_err "$st" 400 "$R" -32602
python3 -c "
import json,sys; print(json.dumps({'jsonrpc':'2.0','id':77,'method':'tools/call','params':{'name':'$T','arguments':{},'requestState':'A'*300000,
 '_meta':{'io.modelcontextprotocol/protocolVersion':'2026-07-28','io.modelcontextprotocol/clientCapabilities':{'elicitation':{}}}}}))" > "$GG_TMP/huge.json"
st=$(gg_curl "$R" -X POST -H 'Content-Type: application/json' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' \
  -H "Mcp-Name: $T" -H "Authorization: Bearer $KEY" --data-binary @"$GG_TMP/huge.json" "$PUB")
t "an oversized requestState → -32602 (not decoded)" rpc_err "$st" 400 "$R" -32602
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},$EMETA" -H "Mcp-Name: $T")
RS=$(jget "$R" "d['result']['requestState']") # a fresh round: the one above was answered
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},\"inputResponses\":{\"other\":{\"action\":\"accept\"}},\"requestState\":\"$RS\",$EMETA" -H "Mcp-Name: $T")
t "a missing response asks again (input_required, a new state)" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['resultType']=='input_required' and 'user_name' in d['inputRequests'] and d['requestState']!='$RS', d"
RS=$(jget "$R" "d['result']['requestState']") # the round asked again has its own state
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},\"inputResponses\":{\"user_name\":{\"content\":7}},\"requestState\":\"$RS\",$EMETA" -H "Mcp-Name: $T")
t "a mistyped response asks again" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['resultType']=='input_required', d"
RS=$(jget "$R" "d['result']['requestState']")
gw_put_graph "$ADMIN" conf everything "$GG_TMP/cached.yaml" >/dev/null
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$EMETA" -H "Mcp-Name: $T")
t "a state of the previous graph version → -32602" rpc_err "$st" 400 "$R" -32602
# an ask node: several requests in one round; answers given are kept, the rest asked again
T3=test_input_required_result_multiple_inputs
AMETA='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{},"roots":{}}}'
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T3\",\"arguments\":{},$AMETA" -H "Mcp-Name: $T3")
t "an ask node → one input_required round with its three requests" python3 -c "
import json; d=json.load(open('$R'))['result']; q=d['inputRequests']
assert d['resultType']=='input_required' and {k:v['method'] for k,v in q.items()}=={'user_name':'elicitation/create','greeting':'sampling/createMessage','client_roots':'roots/list'}, d
assert q['greeting']['params']['maxTokens']==50 and q['client_roots']['params']=={}, d"
RS=$(jget "$R" "d['result']['requestState']")
ANS='"inputResponses":{"user_name":{"action":"accept","content":{"name":"Cy"}},"client_roots":{"roots":[{"uri":"file:///r"}]}}'
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T3\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$AMETA" -H "Mcp-Name: $T3")
t "two of three answered → a new round asks only the third" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['resultType']=='input_required' and list(d['inputRequests'])==['greeting'], d"
RS=$(jget "$R" "d['result']['requestState']")
ANS='"inputResponses":{"greeting":{"role":"assistant","content":{"type":"text","text":"Hi"},"model":"m"}}'
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T3\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$AMETA" -H "Mcp-Name: $T3")
t "the last answer completes the run with all three (earlier answers came from the state)" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['resultType']=='complete' and d['content'][0]['text']=='Hi Cy (roots: file:///r)', d"
# the graph sees the client's declared capabilities ($client.capabilities) and routes on them
T4=test_input_required_result_capabilities
SMETA='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}'
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T4\",\"arguments\":{},$SMETA" -H "Mcp-Name: $T4")
t "sampling only declared: a node behind a switch is not required (no -32021), only sampling is asked" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['resultType']=='input_required' and {k:v['method'] for k,v in d['inputRequests'].items()}=={'model_only':'sampling/createMessage'}, d"
RS=$(jget "$R" "d['result']['requestState']")
ANS='"inputResponses":{"model_only":{"role":"assistant","content":{"type":"text","text":"Hey"},"model":"m"}}'
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T4\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$SMETA" -H "Mcp-Name: $T4")
t "... and a transform reads \$client.capabilities" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['content'][0]['text']=='Hey (declared: sampling)', d"
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T4\",\"arguments\":{},$AMETA" -H "Mcp-Name: $T4")
t "elicitation declared too: the switch on \$client takes the ask node (user and model)" python3 -c "
import json; d=json.load(open('$R'))['result']; assert sorted(d['inputRequests'])==['greeting','user_name'], d"
st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T4\",\"arguments\":{},$META" -H "Mcp-Name: $T4")
t "nothing declared: the model-only route fails as the tool's error (no input request it cannot answer)" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['isError'] and 'did not declare' in d['content'][0]['text'], d"
st=$(m26 "$R" "$PUB" "$KEY" prompts/get "\"name\":\"test_input_required_result_prompt\",$EMETA" -H 'Mcp-Name: test_input_required_result_prompt')
t "prompts/get backed by an elicit node → input_required" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['resultType']=='input_required' and 'user_context' in d['inputRequests'], d"

# ---- one execution record across a run's rounds (the three rounds of $T3 above)
for i in $(seq 1 100); do
  gw_cli executions list conf --graph everything --json > "$GG_TMP/ex.json"
  [ "$(jget "$GG_TMP/ex.json" "[e['status'] for e in d['executions'] if e['tool']=='$T3']")" = "['succeeded']" ] && break
  sleep 0.1
done
t "three input-required rounds: one execution record, succeeded" eq "$(jget "$GG_TMP/ex.json" "[e['status'] for e in d['executions'] if e['tool']=='$T3']")" "['succeeded']"
EXID=$(jget "$GG_TMP/ex.json" "[e['id'] for e in d['executions'] if e['tool']=='$T3'][0]")
gw_cli executions show "$EXID" > "$GG_TMP/exn.json"
t "its node records span the rounds (entry, inputs, reply, exit)" eq "$(jget "$GG_TMP/exn.json" "[n.get('node_id', n.get('nodeId')) for n in d['nodes']]")" "['entry', 'inputs', 'reply', 'exit']"
t "a run still waiting for its client is recorded as running (the unanswered round of $T4)" python3 -c "
import json; d=json.load(open('$GG_TMP/ex.json')); st=[e['status'] for e in d['executions'] if e['tool']=='$T4']; assert 'running' in st, st"

# ---- a second replica (same secret, same database) finishes a round the first started
SAVE_TMP=$GG_TMP SAVE_PID=$GG_PID SAVE_PUB=$GG_PUB SAVE_INT=$GG_INT
GG_TMP="$SAVE_TMP/b"; mkdir -p "$GG_TMP"
if gg_start; then
  PUB_B="$GG_PUB/mcp/conf/everything" PID_B=$GG_PID
  GG_TMP=$SAVE_TMP GG_PID=$SAVE_PID GG_PUB=$SAVE_PUB GG_INT=$SAVE_INT
  st=$(m26 "$R" "$PUB" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},$EMETA" -H "Mcp-Name: $T")
  RS=$(jget "$R" "d['result']['requestState']")
  ANS='"inputResponses":{"user_name":{"action":"accept","content":{"name":"Bo"}}}'
  st=$(m26 "$R" "$PUB_B" "$KEY" tools/call "\"name\":\"$T\",\"arguments\":{},$ANS,\"requestState\":\"$RS\",$EMETA" -H "Mcp-Name: $T")
  t "a round started on one replica completes on another" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['content'][0]['text']=='Hello, Bo!', d"
  kill -TERM "$PID_B"; wait "$PID_B"; rc_b=$?
  t "the second replica stops cleanly" bash -c "[ $rc_b = 0 ] && ! grep -qE 'Sanitizer|runtime error' '$SAVE_TMP/b/serve.err'"
else
  GG_TMP=$SAVE_TMP GG_PID=$SAVE_PID GG_PUB=$SAVE_PUB GG_INT=$SAVE_INT
  t "a second replica starts" false
fi

# ---- mixed eras
SID=$(gw_init "$PUB" "$KEY")
st=$(m26 "$R" "$PUB" "$KEY" tools/list "$META" -H "Mcp-Session-Id: $SID")
t "a 2026 request inside a session → -32600, HTTP 400" rpc_err "$st" 400 "$R" -32600
st=$(gw_rpc "$R" "$PUB" "$KEY" "$SID" '{"jsonrpc":"2.0","id":5,"method":"tools/list"}' -H 'MCP-Protocol-Version: 2025-11-25')
t "the session era still answers on the same endpoint" bash -c "[ $st = 200 ] && grep -q '\"echo\"' '$R' && ! grep -q resultType '$R'"
st=$(gw_rpc "$R" "$PUB" "$KEY" "$SID" '{"jsonrpc":"2.0","id":6,"method":"server/discover","params":{}}' -H 'MCP-Protocol-Version: 2025-11-25')
t "server/discover without _meta is a 2026 request (-32602), not a session one" test "$st" = 400

# ---- subscriptions/listen: the acknowledgement first, then list_changed on a new version
LIS="$GG_TMP/listen.txt"
curl -sN --max-time 20 -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: subscriptions/listen' -H "Authorization: Bearer $KEY" \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":\"sub-1\",\"method\":\"subscriptions/listen\",\"params\":{$META,\"notifications\":{\"toolsListChanged\":true,\"resourceSubscriptions\":[\"test://static-text\"]}}}" \
  "$PUB" > "$LIS" 2>/dev/null &
LPID=$!
for i in $(seq 1 100); do grep -q acknowledged "$LIS" 2>/dev/null && break; sleep 0.1; done
gw_put_graph "$ADMIN" conf everything "$GG_TMP/cached.yaml" >/dev/null
for i in $(seq 1 100); do grep -q resources/updated "$LIS" 2>/dev/null && break; sleep 0.1; done
kill "$LPID" 2>/dev/null; wait "$LPID" 2>/dev/null
t "listen: acknowledgement first, list_changed and resources/updated, subscription id on each" python3 -c "
import json
ev=[json.loads(l[5:]) for l in open('$LIS') if l.startswith('data:')]
assert ev and ev[0]['method']=='notifications/subscriptions/acknowledged', ev
ms=[e['method'] for e in ev]
assert 'notifications/tools/list_changed' in ms and 'notifications/resources/updated' in ms, ms
assert all(e['params']['_meta']['io.modelcontextprotocol/subscriptionId']=='sub-1' for e in ev), ev"

# ---- the conformance suite, 2026-07-28 requirement set, on the internal listener
CONF="$NPM/@modelcontextprotocol/conformance/dist/index.js"
timeout 600 "$NODE" "$CONF" server --url "$INT" --requirements 2026-07-28 > "$GG_TMP/conf.out" 2>&1
sed -n '/^Total:/,$p' "$GG_TMP/conf.out" | head -1 | sed 's/^/  conformance 2026-07-28 checks: /'
# the score: the summary's scenarios less those the requirement set does not score (the tasks
# extension, the pending ones), each passed with no failed check — all 37 of them required
conf_score() {
  python3 - "$GG_TMP/conf.out" <<'PY'
import re, sys
text = open(sys.argv[1], encoding='utf-8').read()
summary = text.split('=== SUMMARY ===', 1)[1].split('\nTotal:', 1)[0]
ran = {name: mark for mark, name in re.findall(r'^([✓✗]) (\S+): \d+ passed, \d+ failed', summary, re.M)}
tail = text.split('Not scored for 2026-07-28:', 1)
unscored = set(re.findall(r'^  [✓✗] (\S+) \(', tail[1], re.M)) if len(tail) > 1 else set()
scored = [n for n in ran if n not in unscored]
passed = [n for n in scored if ran[n] == '✓']
print(f"  conformance 2026-07-28 scored: {len(passed)}/{len(scored)}" +
      "".join(f"\n    failing: {n}" for n in scored if ran[n] != '✓'))
sys.exit(0 if len(scored) == 37 and len(passed) == 37 else 1)
PY
}
t "conformance 2026-07-28: 37/37 scored scenarios pass" conf_score
# every scenario this gateway implements passes (what is left is listed as "not yet")
for s in server-stateless completion-complete tools-list tools-call-simple-text tools-call-image tools-call-audio \
         tools-call-embedded-resource tools-call-mixed-content tools-call-error tools-call-with-progress \
         server-sse-multiple-streams resources-list resources-read-text resources-read-binary resources-templates-read \
         sep-2164-resource-not-found prompts-list prompts-get-simple prompts-get-with-args prompts-get-embedded-resource \
         prompts-get-with-image dns-rebinding-protection caching input-required-result-unsupported-methods \
         input-required-result-validate-input input-required-result-ignore-extra-params \
         input-required-result-missing-input-response input-required-result-basic-elicitation \
         input-required-result-basic-sampling input-required-result-request-state input-required-result-multi-round \
         input-required-result-non-tool-request input-required-result-multiple-input-requests input-required-result-capability-check input-required-result-basic-list-roots input-required-result-result-type input-required-result-tampered-state \
         json-schema-2020-12 http-header-validation \
         http-custom-header-server-validation \
         tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input \
         tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications tasks-required-task-error \
         tasks-mrtr-composition; do
  t "conformance 2026-07-28 $s" grep -qE "^✓ $s: [0-9]+ passed, 0 failed" "$GG_TMP/conf.out"
done
grep -E '^✗' "$GG_TMP/conf.out" | sort -u | sed 's/^/    not yet: /'
# tasks-status-notifications, run by name: the pinned suite's harness for it is pending a
# rewrite against subscriptions/listen, so it reports its one check SKIPPED whatever the server
# sends; the checks it describes (taskId, status, the DetailedTask inlined on terminal statuses,
# on the subscriptions/listen stream) run in sdk_task_listen.mjs and tasks2026.sh. Should a newer
# pin run real checks, this line flips and points there.
timeout 120 "$NODE" "$CONF" server --url "$INT" --scenario tasks-status-notifications > "$GG_TMP/conf-tsn.out" 2>&1
echo "  tasks-status-notifications by name: $(sed "s/\x1b\[[0-9;]*m//g" "$GG_TMP/conf-tsn.out" | grep -m1 -oE '(SKIPPED|SUCCESS|FAILURE)[^"]{0,120}' | head -1)"
t "conformance tasks-status-notifications by name: no failed check (the pinned harness skips it)" \
  bash -c "! grep -qE 'FAILURE|[1-9][0-9]* failed' '$GG_TMP/conf-tsn.out' && grep -q 'pending subscriptions/listen rewrite' '$GG_TMP/conf-tsn.out'"
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
