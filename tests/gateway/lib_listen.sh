# lib_listen.sh — helpers of the listen-stream tests (listen.sh, listen_tenant.sh), sourced
# after lib_gw.sh. The downstream is listen_srv.mjs, whose GET /status says how many
# sessions, open GET streams and GETs it has seen.

# listen_srv MODE → starts listen_srv.mjs in MODE; prints its port (empty when it did not
# start). Called as $(listen_srv ...), so in a subshell: its pid goes to a file, not a
# variable, for listen_stop_all.
listen_srv() {
  "$NODE" "$GG_SRCDIR/tests/gateway/listen_srv.mjs" "$1" >"$GG_TMP/srv_$1.log" 2>&1 &
  echo $! >>"$GG_TMP/listen.pids"
  gw_wait_port "$GG_TMP/srv_$1.log" $!
}
# listen_stop_all → stops every server listen_srv started (the tests' EXIT trap, before
# gg_cleanup removes GG_TMP)
listen_stop_all() {
  [ -f "$GG_TMP/listen.pids" ] || return 0
  # shellcheck disable=SC2046
  kill $(cat "$GG_TMP/listen.pids") 2>/dev/null
  return 0
}
# status PORT EXPR → EXPR over the downstream's /status as d
status() { python3 -c "import json,sys; d=json.load(sys.stdin); print($2)" < <(curl -sS "http://127.0.0.1:$1/status"); }
# wait_for CMD... → true once CMD prints True (polled every 0.1 s, at most 30 s)
wait_for() {
  for _ in $(seq 1 300); do [ "$("$@" 2>/dev/null)" = True ] && return 0; sleep 0.1; done
  return 1
}
# metric NAME_WITH_LABELS → its value in /metrics (empty when absent)
metric() { curl -sS "$GG_INT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# metric_at_least VALUE [MIN=1] → prints True/False, and says so by its exit status too
metric_at_least() { python3 -c "ok = ${2:-1} <= ${1:-0}; print(ok); raise SystemExit(0 if ok else 1)"; }
# proxy_yaml FILE PORT → a proxy graph of the SDK server at PORT (tools: all, prefix l_)
proxy_yaml() {
  cat >"$1" <<YAML
version: "1.0"
server: {name: "px", version: "1.0.0"}
mcpServers:
  live: {type: "streamableHttp", url: "http://127.0.0.1:$2/mcp", on_change: follow}
proxy:
  - {server: "live", tools: "all", prefix: "l_"}
YAML
}
# proxy_lists URL KEY SID TOOL → True when TOOL is in the tools/list of the proxy graph at URL
proxy_lists() {
  gw_rpc "$GG_TMP/tl.json" "$1" "$2" "$3" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >/dev/null
  python3 -c "
import json,sys; t=open(sys.argv[1]).read(); data=[l[5:] for l in t.splitlines() if l.startswith('data:')]
print(sys.argv[2] in [x['name'] for x in json.loads(data[-1] if data else t)['result']['tools']])" "$GG_TMP/tl.json" "$4"
}
