#!/usr/bin/env bash
# plain_call.sh — POST /internal/tenants/{t}/graphs/{g}/tools/{tool}/call answers the tool's
# value exactly: a string that looks like a number or like JSON stays a string, objects,
# arrays, numbers and booleans come back as themselves (not re-parsed from the MCP text
# block). Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"

cat >"$GG_TMP/values.yaml" <<'YAML'
version: "1.0"
server: {name: values, version: "1.0.0"}
tools:
  - {name: str_number, description: a string that looks like a number, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '"42"'}, next: exit}, {id: exit, type: exit}]}
  - {name: str_json, description: a string that looks like JSON, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '"{\"a\": [1]}"'}, next: exit}, {id: exit, type: exit}]}
  - {name: str_text, description: plain text, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '"hello " & entry.name'}, next: exit}, {id: exit, type: exit}]}
  - {name: number, description: a number, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '6 * 7'}, next: exit}, {id: exit, type: exit}]}
  - {name: object, description: an object, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '{"n": "1", "list": [1, "2", null]}'}, next: exit}, {id: exit, type: exit}]}
  - {name: array, description: an array, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '["7", 7, {"x": true}]'}, next: exit}, {id: exit, type: exit}]}
  - {name: boolean, description: a boolean, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: 'true'}, next: exit}, {id: exit, type: exit}]}
YAML

gw_cli tenant create acme >/dev/null 2>&1
gw_cli graph put acme values "$GG_TMP/values.yaml" >/dev/null 2>"$GG_TMP/put.err" || { cat "$GG_TMP/put.err"; echo "0 passed, 1 failed"; exit 1; }
gg_start || { echo "0 passed, 1 failed"; exit 1; }

call() { # TOOL [BODY] → "status body"
  local st
  st=$(gg_curl "$GG_TMP/r.json" -X POST --data-binary "${2:-{\}}" "$GG_INT/internal/tenants/acme/graphs/values/tools/$1/call")
  echo "$st $(cat "$GG_TMP/r.json")"
}
t "a string that looks like a number stays a string" eq "$(call str_number)" '200 "42"'
t "a string that looks like JSON stays a string" eq "$(call str_json)" '200 "{\"a\": [1]}"'
t "a plain string" eq "$(call str_text '{"name":"ann"}')" '200 "hello ann"'
t "a number" eq "$(call number)" '200 42'
t "an object" eq "$(call object)" '200 {"n":"1","list":[1,"2",null]}'
t "an array" eq "$(call array)" '200 ["7",7,{"x":true}]'
t "a boolean" eq "$(call boolean)" '200 true'
sid=$(gw_init "$GG_INT/internal/mcp/acme/values" "")
gw_rpc "$GG_TMP/m.json" "$GG_INT/internal/mcp/acme/values" "" "$sid" \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"str_number","arguments":{}}}' >/dev/null
t "the MCP endpoint still sends the string as one raw text block" \
  eq "$(jget "$GG_TMP/m.json" 'json.dumps(d["result"], separators=(",", ":"))')" '{"content":[{"type":"text","text":"42"}]}'
t "server stops cleanly" gw_stop_clean
gg_finish
