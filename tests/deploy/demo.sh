#!/usr/bin/env bash
# demo.sh — deploy/demo (the README's first command) run as a newcomer runs it, on the
# build under test (GG_DEMO_PREBUILT=1: no package check, no build) with a database, a
# sample folder and ports of its own: it prints how to read the man pages it built before
# `make install`, loads every example graph with no extra flag — files.yaml too, its npx
# command allowed and nothing else — and runs the files graph against the real
# @modelcontextprotocol/server-filesystem; Ctrl-C (SIGTERM) stops it cleanly.
. "$GG_SRCDIR/tests/integration/lib.sh"
NPM="$GG_SRCDIR/tests/npm/node_modules"
if [ ! -d "$NPM/@modelcontextprotocol/server-filesystem" ] || ! command -v npx >/dev/null; then
  echo "SKIP: no server-filesystem under tests/npm (run tests/npm-deps.sh) or no npx on PATH"
  exit 77
fi
ports=$(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
read -r PUB_PORT INT_PORT <<<"$ports"
ERR="$GG_TMP/demo.err"
GG_DEMO_PREBUILT=1 GG_BUILD_DIR="$GG_BUILDDIR" GG_DB="$GG_TMP/var/graphgate.db" \
  GG_LISTEN="127.0.0.1:$PUB_PORT" GG_INTERNAL_LISTEN="127.0.0.1:$INT_PORT" \
  bash "$GG_SRCDIR/deploy/demo" >"$GG_TMP/demo.out" 2>"$ERR" &
GG_PID=$! # the demo execs serve: lib.sh's cleanup stops it
# the files graph's run is the demo's last word (npx and the server start on the first call)
for _ in $(seq 1 1200); do
  grep -q "files graph ran\|files graph did not run" "$ERR" 2>/dev/null && break
  kill -0 "$GG_PID" 2>/dev/null || break
  sleep 0.1
done
has() { grep -qF -- "$1" "$ERR" || { echo "   not in the demo's output: $1" >&2; tail -15 "$ERR" >&2; return 1; }; }
t "the demo prints how to read its man pages before make install" has "        man -l $GG_BUILDDIR/man/graphgate.1"
t "... and the page it names is there" test -s "$GG_BUILDDIR/man/graphgate.1"
t "... the configuration page too" has "        man -l $GG_BUILDDIR/man/graphgate.yaml.5"
t "... and that page is there" test -s "$GG_BUILDDIR/man/graphgate.yaml.5"
t "every example graph loaded (files.yaml too: npx is allowed)" bash -c '! grep -q "not loaded" "$0"' "$ERR"
t "... files is served" has "graph files: http://127.0.0.1:$PUB_PORT/mcp/demo/files"
t "the files graph ran against the real filesystem server" \
  has 'files graph ran against @modelcontextprotocol/server-filesystem: list_files {"path":"sample"} → {"files":["hello.txt"],"directories":["notes"]}'
# exactly the one command: a graph starting anything else is refused by the running demo
KEY=$(sed -n 's/^ *admin API key *//p' "$ERR")
cat >"$GG_TMP/other.yaml" <<'YAML'
version: "1.0"
server: {name: other, version: "1.0.0"}
mcpServers:
  x: {command: "npx", args: ["-y", "@modelcontextprotocol/server-everything"]}
tools:
  - name: t
    inputSchema: {type: object}
    nodes: [{id: entry, type: entry, next: c}, {id: c, type: mcp, server: x, tool: echo, args: {}, next: exit}, {id: exit, type: exit}]
YAML
put_other() {
  curl -s -o "$GG_TMP/put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/yaml' --data-binary @"$GG_TMP/other.yaml" \
    "http://127.0.0.1:$PUB_PORT/admin/tenants/demo/graphs/other"
}
eq_status() { [ "$(put_other)" = 422 ] && grep -q policy "$GG_TMP/put.json"; }
t "another npx package is refused (the allowlist is that one command)" eq_status
stopped() {
  kill -TERM "$GG_PID" && wait "$GG_PID"; local rc=$?
  GG_PID=""
  [ $rc -eq 0 ] && ! grep -qE 'Sanitizer|runtime error' "$ERR"
}
t "SIGTERM stops the demo cleanly (exit 0, no sanitizer report)" stopped
gg_finish
