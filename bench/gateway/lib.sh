# bench/gateway/lib.sh — what run.sh and scaling.sh share, sourced by both: the scratch folder
# and its clean-up, a database with the bench tenant and its keys, a graphgate server's
# addresses, the switch example uploaded and an MCP session on it checked with one call, and
# nginx serving that call's answer bytes. The caller sets bin (the graphgate binary) and
# example (the switch example's YAML) before using them.

# bench_start PREFIX TOOL... → tmp, a fresh folder removed at exit, when every TOOL is installed,
# $bin is built and $example is there (exit 77 / 1 / 77 otherwise); the pids added to
# bench_pids are killed at exit. GRAPHGATE_* variables of the caller's environment are unset:
# the scripts set their own.
bench_start() {
  local prefix=$1 need var; shift
  for need in "$@"; do command -v "$need" >/dev/null || { echo "bench: $need not installed"; exit 77; }; done
  [ -x "$bin" ] || { echo "bench: $bin not built"; exit 1; }
  [ -f "$example" ] || { echo "bench: npm peers missing (run tests/npm-deps.sh)"; exit 77; }
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/$prefix.XXXXXX")
  bench_pids=()
  trap bench_cleanup EXIT
  while IFS='=' read -r var _; do unset "$var"; done < <(env | grep '^GRAPHGATE_' || true)
}
bench_cleanup() {
  local p
  for p in "${bench_pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}

# bench_keys FILE DB_FLAGS... → the database migrated, with tenant bench; FILE holds an admin
# key (line 1) and a key that may call tools (line 2)
bench_keys() {
  local file=$1; shift
  "$bin" migrate "$@" >/dev/null 2>&1
  "$bin" tenant create bench "$@" >/dev/null 2>&1
  { "$bin" key create --tenant bench --scopes admin "$@" 2>/dev/null | grep '^gg_'
    "$bin" key create --tenant bench --scopes tools:read,tools:execute "$@" 2>/dev/null | grep '^gg_'; } >"$file"
}

# bench_sqlite_keys → bench_keys on $tmp/gg.db; admin and key, its two keys
bench_sqlite_keys() {
  bench_keys "$tmp/keys" --db "$tmp/gg.db"
  admin=$(sed -n 1p "$tmp/keys") key=$(sed -n 2p "$tmp/keys")
}

# bench_listening TRIES ERR_FILE → pub and int, the listeners the server writing $tmp/serve.out
# printed (polled TRIES times, 50 ms apart); exit 1 with ERR_FILE's tail when it did not start
bench_listening() {
  for _ in $(seq "$1"); do grep -q internal "$tmp/serve.out" 2>/dev/null && break; sleep 0.05; done
  pub=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$tmp/serve.out")
  int=$(sed -n 's|^ *internal *\(http://[^ ]*\)/$|\1|p' "$tmp/serve.out")
  [ -n "$pub" ] || { echo "bench: graphgate did not start"; tail -20 "$2"; exit 1; }
}

# bench_serve DURABILITY N CPUS ERR_FILE SERVE_FLAGS... → pid of a `graphgate serve` in the
# background, pinned to CPUS (taskset), with 2N HTTP threads and 2N workers, the access log
# off and the caps that defend tenants from each other lifted (one tenant, thousands of
# connections from one address, no queue or in-flight cap): the load of scaling.sh and
# keepalive_stall.sh. It writes its listeners to $tmp/serve.out and its errors to ERR_FILE.
bench_serve() {
  local durability=$1 n=$2 cpus=$3 err=$4; shift 4
  : >"$tmp/serve.out"
  GRAPHGATE_LOG_ACCESS=false GRAPHGATE_HISTORY_DURABILITY=$durability GRAPHGATE_WORKERS=$((2 * n)) \
    GRAPHGATE_HTTP_THREADS=$((2 * n)) GRAPHGATE_HTTP_MAX_CONNECTIONS=4096 \
    GRAPHGATE_HTTP_MAX_CONNECTIONS_PER_IP=4096 GRAPHGATE_TENANTS_MAX_CONCURRENT_EXECUTIONS=0 \
    GRAPHGATE_TENANTS_MAX_QUEUED=0 GRAPHGATE_TENANTS_MAX_RUNNING=$((2 * n)) taskset -c "$cpus" "$bin" serve "$@" \
    --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 >"$tmp/serve.out" 2>"$err" &
  pid=$!
  bench_pids+=("$pid")
}

# bench_graph PUB ADMIN_KEY PUT_FILE → the switch example uploaded as bench/switch, once per
# database: PUT_FILE (the upload's answer) says it was done
bench_graph() {
  [ -f "$3" ] && return
  local code
  code=$(curl -s -o "$3" -w '%{http_code}' -X PUT -H "Authorization: Bearer $2" \
    -H 'Content-Type: application/yaml' --data-binary @"$example" "$1/admin/tenants/bench/graphs/switch")
  [ "$code" = 201 ] || { echo "bench: graph upload failed ($code)"; cat "$3"; exit 1; }
}

# bench_initialize URL TOKEN → the session id an MCP initialize at URL answers (empty if none)
bench_initialize() {
  curl -s -D - -o /dev/null -H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' "$1" \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
    | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' | tr -d '\r'
}

# bench_session PUB KEY → url and sid of a session on bench/switch; $tmp/answer.json holds the
# answer to one tools/call, checked (exit 1 when there is no session or the answer is wrong)
bench_session() {
  url="$1/mcp/bench/switch"
  sid=$(bench_initialize "$url" "$2")
  [ -n "$sid" ] || { echo "bench: no session"; exit 1; }
  curl -s -H "Authorization: Bearer $2" -H "Mcp-Session-Id: $sid" -H 'Content-Type: application/json' "$url" \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_switch","arguments":{"value":42}}}' >"$tmp/answer.json"
  grep -q '"result":"high"' "$tmp/answer.json" || { echo "bench: unexpected answer"; cat "$tmp/answer.json"; exit 1; }
}

# bench_nginx_pids → nginx's master ($npid) and its workers, its children read from /proc (the
# bundle of bundle.sh brings no pgrep)
bench_nginx_pids() {
  echo "$npid"
  awk -v pp="$npid" '{s = $0; sub(/^.*\) /, "", s); split(s, f, " "); if (f[2] == pp) print $1}' /proc/[0-9]*/stat 2>/dev/null
}

# bench_nginx WORKERS CONNECTIONS [PREFIX...] → nport and npid of an nginx (started through
# PREFIX, e.g. taskset -c 0-1) serving $tmp/www, where answer.json is $tmp/answer.json's bytes
bench_nginx() {
  local workers=$1 conns=$2; shift 2
  mkdir -p "$tmp/www"
  cp "$tmp/answer.json" "$tmp/www/answer.json"
  nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # as root, workers run as root too: the default "nobody" may not exist (the device machine)
  local user=""; [ "$(id -u)" = 0 ] && user="user root;"
  cat >"$tmp/nginx.conf" <<NGX
$user
worker_processes $workers;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err;
events { worker_connections $conns; }
http {
  access_log off;
  client_body_temp_path $tmp; proxy_temp_path $tmp; fastcgi_temp_path $tmp; uwsgi_temp_path $tmp; scgi_temp_path $tmp;
  server { listen 127.0.0.1:$nport; root $tmp/www; default_type application/json; }
}
NGX
  "$@" nginx -c "$tmp/nginx.conf" -p "$tmp" >/dev/null 2>&1 &
  npid=$!
  bench_pids+=("$npid")
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$nport/answer.json" >/dev/null 2>&1 && break; sleep 0.05; done
}
