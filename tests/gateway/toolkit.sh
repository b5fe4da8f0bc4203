#!/usr/bin/env bash
# toolkit.sh — the authoring toolkit at /mcp/toolkit through the official SDK client: the
# loop an agent runs (search_nodes on /mcp/nodes → list_downstream_tools (server-everything's
# catalog, cached by an upload; another tenant sees none) → validate_graph with errors at their
# line:col → fixed graph valid → test_jsonata / test_jsonlogic → upload → call the new
# graph's tool on its own endpoint). Attacks: a 3 MB source (graphs.max_bytes) and a 5 MB
# request (body_limit), an endless
# expression (stopped by the time limit), a key without tools:execute (403), no key (401).
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_with_everything
# a graph naming server-everything: its upload fetches and caches the downstream catalog
gw_everything_graph "$GG_TMP/ev.yaml"

# line 13: a JSONata syntax error; line 14: next names a node that does not exist
cat >"$GG_TMP/bad.yaml" <<'YAML'
version: "1.0"
server: {name: "prices", version: "1.0.0"}
tools:
  - name: "total"
    description: "sum of the prices times the rate"
    inputSchema:
      type: object
      properties: {items: {type: array}, rate: {type: number}}
      required: [items]
    nodes:
      - {id: "entry", type: "entry", next: "sum"}
      - id: "sum"
        transform: {expr: '{"total": $sum($.entry.items.price) * }'}
        next: "nowhere"
        type: "transform"
      - {id: "exit", type: "exit"}
YAML
sed -e 's/ \* }/ * ($exists($.entry.rate) ? $.entry.rate : 1)}/' -e 's/"nowhere"/"exit"/' "$GG_TMP/bad.yaml" >"$GG_TMP/good.yaml"

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create beta >/dev/null
BETA=$(gw_key beta tools:read,tools:execute)
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
READ=$(gw_key acme tools:read)
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_BODY_LIMIT=4194304 gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants and keys" gw_cli_clean
t "a graph using server-everything uploads (its catalog is cached)" eq "$(gw_put_graph "$ADMIN" acme ev "$GG_TMP/ev.yaml")" 201

"$NODE" "$GG_SRCDIR/tests/gateway/toolkit.mjs" loop "$GG_PUB" "$KEY" "$GG_TMP/good.yaml" "$GG_TMP/bad.yaml" >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?
# publish what validated, then call it on its own endpoint
t "the validated graph uploads (201)" eq "$(gw_put_graph "$ADMIN" acme prices "$GG_TMP/good.yaml")" 201
"$NODE" "$GG_SRCDIR/tests/gateway/toolkit.mjs" call "$GG_PUB" "$KEY" >"$GG_TMP/sdk2.out" 2>&1
gw_fold "$GG_TMP/sdk2.out" $?
# tenant filter: beta sees none of acme's downstream catalogs
"$NODE" "$GG_SRCDIR/tests/gateway/toolkit.mjs" beta "$GG_PUB" "$BETA" >"$GG_TMP/sdk4.out" 2>&1
gw_fold "$GG_TMP/sdk4.out" $?
# scopes: tools/call needs tools:execute; no key, no answer
"$NODE" "$GG_SRCDIR/tests/gateway/toolkit.mjs" scope "$GG_PUB" "$READ" >"$GG_TMP/sdk3.out" 2>&1
gw_fold "$GG_TMP/sdk3.out" $?
tcall='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_jsonlogic","arguments":{"rule":true}}}'
t "no key → 401" eq "$(gg_curl "$GG_TMP/n.out" -X POST -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' --data-binary "$tcall" "$GG_PUB/mcp/toolkit")" 401
gg_finish
