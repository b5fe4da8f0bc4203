#!/usr/bin/env bash
# bench/nodespecs/run.sh — wrk on POST /mcp/invoke get_node_details (1 node and 10 nodes)
# against nginx serving the same response bytes from a static file, in one invocation on
# the same machine. Prints req/s for both and graphgate's share of nginx's throughput
# (goal: >= 50%).
#   bash bench/nodespecs/run.sh [BUILD_DIR]     (env: DURATION=5s CONNECTIONS=32 THREADS=2)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-${GG_BUILDDIR:-$SRC/build}}
G=$BUILD/src/graphgate
DURATION=${DURATION:-5s}; CONNECTIONS=${CONNECTIONS:-32}; THREADS=${THREADS:-2}
command -v wrk >/dev/null || { echo "wrk is not installed"; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "nginx is not installed"; exit 1; }
[ -x "$G" ] || { echo "build graphgate first ($G)"; exit 1; }
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^GRAPHGATE_' || true)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gg-bench-specs.XXXXXX")
GG_PID=""; NG_PID=""
cleanup() {
  [ -n "$GG_PID" ] && kill "$GG_PID" 2>/dev/null && wait "$GG_PID" 2>/dev/null
  [ -n "$NG_PID" ] && kill "$NG_PID" 2>/dev/null && wait "$NG_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

# graphgate: temp database, one tenant, one key, no access log (nginx logs nothing either)
"$G" migrate --db "$TMP/gg.db" >/dev/null 2>&1
"$G" tenant create bench --db "$TMP/gg.db" >/dev/null 2>&1
KEY=$("$G" key create --tenant bench --scopes tools:read,tools:execute --db "$TMP/gg.db" 2>/dev/null | tail -1)
GRAPHGATE_LOG_ACCESS=false GRAPHGATE_LOG_LEVEL=warn "$G" serve --db "$TMP/gg.db" --listen 127.0.0.1:0 \
  --internal-listen "" >"$TMP/serve.out" 2>"$TMP/serve.err" &
GG_PID=$!
for _ in $(seq 1 200); do grep -q public "$TMP/serve.out" 2>/dev/null && break; sleep 0.05; done
PUB=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$TMP/serve.out")
[ -n "$PUB" ] || { echo "serve did not start"; cat "$TMP/serve.err"; exit 1; }

ONE='{"name":"get_node_details","arguments":{"nodes":[{"node_type":"AI_AGENT","subtype":"OPENAI_CHATGPT"}]}}'
TEN='{"name":"get_node_details","arguments":{"nodes":[{"node_type":"TRIGGER","subtype":"WEBHOOK"},{"node_type":"AI_AGENT","subtype":"ANTHROPIC_CLAUDE"},{"node_type":"ACTION","subtype":"HTTP_REQUEST"},{"node_type":"EXTERNAL_ACTION","subtype":"SLACK"},{"node_type":"FLOW","subtype":"IF"},{"node_type":"HUMAN_IN_THE_LOOP","subtype":"SLACK_INTERACTION"},{"node_type":"TOOL","subtype":"NOTION_MCP_TOOL"},{"node_type":"MEMORY","subtype":"VECTOR_DATABASE"},{"node_type":"FLOW","subtype":"LOOP"},{"node_type":"GRAPH","subtype":"TRANSFORM"}]}}'

# nginx: the same bytes graphgate answers, as static files; POST allowed on them.
mkdir -p "$TMP/www" "$TMP/ng"
chmod 755 "$TMP" "$TMP/www"   # nginx workers run as an unprivileged user
curl -sf -X POST "$PUB/mcp/invoke" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' -d "$ONE" -o "$TMP/www/one.json"
curl -sf -X POST "$PUB/mcp/invoke" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' -d "$TEN" -o "$TMP/www/ten.json"
chmod 644 "$TMP/www/"*.json
NG_PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])' 2>/dev/null || echo 18999)
cat > "$TMP/ng/nginx.conf" <<NG
worker_processes 2;
daemon off;
pid $TMP/ng/nginx.pid;
error_log $TMP/ng/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $TMP/ng/body; proxy_temp_path $TMP/ng/proxy; fastcgi_temp_path $TMP/ng/fcgi;
  uwsgi_temp_path $TMP/ng/uwsgi; scgi_temp_path $TMP/ng/scgi;
  default_type application/json;
  server {
    listen 127.0.0.1:$NG_PORT;
    root $TMP/www;
    error_page 405 =200 \$uri;
  }
}
NG
"$NGINX" -c "$TMP/ng/nginx.conf" -p "$TMP/ng" &
NG_PID=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$NG_PORT/one.json" -o /dev/null && break; sleep 0.05; done
cmp -s <(curl -s -X POST "http://127.0.0.1:$NG_PORT/one.json" -d "$ONE") "$TMP/www/one.json" || { echo "nginx does not serve the file"; exit 1; }

lua() { # body file → wrk script with method, body and headers
  printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["X-API-Key"] = "%s"\nwrk.body = [[%s]]\n' "$KEY" "$1"
}
lua "$ONE" > "$TMP/one.lua"; lua "$TEN" > "$TMP/ten.lua"
rps() { wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" -s "$1" "$2" | awk '/Requests\/sec/ {print $2} /Non-2xx/ {print "NON2XX " $4 > "/dev/stderr"}'; }

printf '%-34s %12s %12s %8s %10s\n' "case" "graphgate" "nginx" "ratio" "bytes"
for c in one ten; do
  g=$(rps "$TMP/$c.lua" "$PUB/mcp/invoke")
  n=$(rps "$TMP/$c.lua" "http://127.0.0.1:$NG_PORT/$c.json")
  ratio=$(awk -v g="$g" -v n="$n" 'BEGIN { printf "%.0f%%", 100 * g / n }')
  label="get_node_details, $([ $c = one ] && echo 1 node || echo 10 nodes)"
  printf '%-34s %12s %12s %8s %10s\n' "$label" "$g" "$n" "$ratio" "$(wc -c < "$TMP/www/$c.json")"
done
echo "(wrk -t$THREADS -c$CONNECTIONS -d$DURATION, POST with the API key; goal >= 50% of nginx)"
