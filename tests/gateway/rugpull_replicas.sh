#!/usr/bin/env bash
# rugpull_replicas.sh — an approved definition change reaches every replica: two `graphgate
# serve` replicas on one throwaway PostgreSQL cluster (pg_virtualenv), a review proxy graph
# of a real SDK server (rugpull_srv.mjs) that changes its tool; the change is approved
# through replica 1 and our SDK client connected to replica 2 gets
# notifications/tools/list_changed within a second and lists the new definition (the pins
# generation's NOTIFY wakes replica 2's watcher, which recompiles) — only the approving
# tenant's graphs: tenant other's proxy graph of the same server, compiled on replica 2 too,
# is not recompiled (graphgate_downstream_pins_tenant_recompiles_total moves by one).
# Prints "N passed, N failed".
if [ -z "${GG_PG_INNER:-}" ]; then
  . "${GG_SRCDIR:-$(dirname "$0")/../..}/tests/lib_pg.sh"
  if ! gg_pg_installed; then
    echo "SKIP: PostgreSQL server or pg_virtualenv not installed (tests/deps.sh installs postgresql-15, postgresql-common)"
    exit 77
  fi
  log=$(mktemp "${TMPDIR:-/tmp}/gg-pg-rugpull.XXXXXX")
  GG_PG_INNER=1 gg_pg_venv -o shared_buffers=32MB -o max_connections=60 bash "$0" "$@" 2>"$log"
  rc=$?
  [ $rc -eq 0 ] || { echo "--- pg_virtualenv / cluster log (tail)"; tail -15 "$log"; }
  rm -f "$log"
  exit $rc
fi
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
exec 2>&1
gw_need_sdk
. "$GG_SRCDIR/tests/gateway/lib_listen.sh" # wait_for
createdb ggpin || { echo "createdb failed"; echo "0 passed, 1 failed"; exit 1; }
URL="postgresql:///ggpin"
gw_cli() { "$GG_BIN" "$@" --database-url "$URL"; }
"$GG_BIN" migrate --database-url "$URL" >/dev/null 2>&1
gw_cli_run tenant create acme >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
gw_cli_run tenant create other >/dev/null
OKEY=$(gw_key other graphs:write,tools:read)

"$NODE" "$GG_SRCDIR/tests/gateway/rugpull_srv.mjs" plain >"$GG_TMP/srv.log" 2>&1 &
SRV_PID=$!
R=$(gw_wait_port "$GG_TMP/srv.log" $SRV_PID)
ROOT_TMP=$GG_TMP PIDS=() PUBS=() INTS=()
cleanup_all() {
  kill "$SRV_PID" 2>/dev/null
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
  done
  GG_TMP=$ROOT_TMP GG_PID=""
  gg_cleanup
}
trap cleanup_all EXIT
export GRAPHGATE_SESSION_SECRET=rugpull-replicas-secret-shared-by-both-0123456789 GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1
for n in 1 2; do
  GG_TMP="$ROOT_TMP/r$n"; mkdir -p "$GG_TMP"
  GRAPHGATE_HISTORY_REPLICA_ID="r$n" gg_start --database-url "$URL" || { echo "replica $n did not start"; echo "0 passed, 1 failed"; exit 1; }
  PIDS+=("$GG_PID") PUBS+=("$GG_PUB") INTS+=("$GG_INT")
  GG_PID="" GG_TMP=$ROOT_TMP
done
t "two replicas on one PostgreSQL database" test "${#PUBS[@]}" = 2

cat >"$GG_TMP/rv.yaml" <<YAML
version: "1.0"
server: {name: "rv", version: "1.0.0"}
mcpServers:
  rs: {type: "streamableHttp", url: "http://127.0.0.1:$R/mcp"}
proxy:
  - {server: "rs", tools: "all"}
YAML
GG_PUB=${PUBS[0]}
t "the review proxy graph is accepted through replica 1" eq "$(gw_put_graph "$ADMIN" acme rv "$GG_TMP/rv.yaml")" 201
# replica 2 serves it (compiled there on first use from the store, pins included)
t "... and served by replica 2" wait_for eval 'curl -s -o /dev/null -w "%{http_code}" -X POST "${PUBS[1]}/mcp/acme/rv" -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream" -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}" | grep -q 200 && echo True'
t "other's proxy graph of the same server is accepted" eq "$(gw_put_graph "$OKEY" other rv "$GG_TMP/rv.yaml")" 201
init2() { curl -s -o /dev/null -w "%{http_code}" -X POST "${PUBS[1]}/mcp/$1/rv" -H "Authorization: Bearer $2" -H "Content-Type: application/json" \
  -H "Accept: application/json, text/event-stream" \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'; }
t "... and compiled on replica 2 too" eq "$(init2 other "$OKEY")" 200
recompiles() { curl -sS "${INTS[1]}/metrics" | awk '$1 == "graphgate_downstream_pins_tenant_recompiles_total" {print $2}'; }
BEFORE=$(recompiles)
t "replica 2 counts the tenants it recompiled after approvals" test -n "$BEFORE"
curl -fsS -X POST "http://127.0.0.1:$R/poison?n=1" >/dev/null
change() {
  gg_curl "$GG_TMP/ds.json" -H "Authorization: Bearer $ADMIN" "${PUBS[0]}/admin/tenants/acme/downstream" >/dev/null
  jget "$GG_TMP/ds.json" "(lambda c: $1)(next((x for x in d.get('changes', []) if x['server'] == 'rs' and x['tool'] == 'add'), None))"
}
t "the server's change is pending" wait_for change 'c is not None and c["status"] == "pending"'
ID=$(change 'c["id"]')
"$NODE" "$GG_SRCDIR/tests/gateway/rugpull.mjs" "${PUBS[1]}/mcp/acme/rv" "$KEY" \
  "${PUBS[0]}/admin/tenants/acme/downstream/changes/$ID/approve" "$ADMIN" "Adds two numbers" "(v1)" "${INTS[1]}/metrics" \
  >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?
t "replica 2 recompiled acme's pinned graphs only, not other's (tenants recompiled: $BEFORE → $(recompiles))" \
  eq "$(recompiles)" "$((BEFORE + 1))"
gg_finish
