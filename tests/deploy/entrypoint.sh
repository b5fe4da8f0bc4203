#!/usr/bin/env bash
# entrypoint.sh — deploy/docker-entrypoint.sh run by itself against the real binary (no
# container): commands dispatch, secrets from *_FILE, the shared-secret requirement, and
# serve reached through it (SQLite) answering /health and /ready, stopping on SIGTERM.
. "$GG_SRCDIR/tests/integration/lib.sh"
EP="$GG_SRCDIR/deploy/docker-entrypoint.sh"
export GRAPHGATE_BIN="$GG_BIN" GRAPHGATE_DATABASE_PATH="$GG_TMP/ep.db"

t "sh -n: valid POSIX shell" sh -n "$EP"
t "a graphgate command runs graphgate (version)" bash -c '"$0" version | grep -q graphgate' "$EP"
t "migrate through the entrypoint" bash -c '"$0" migrate >/dev/null 2>&1 && "$0" migrate --check >/dev/null 2>&1' "$EP"
t "other commands run as given" eq "$("$EP" echo hello)" hello
printf 'from-a-file-0123456789-0123456789-x\n' > "$GG_TMP/secret"
t "VAR_FILE sets VAR (trailing newline dropped)" \
  eq "$(GRAPHGATE_SESSION_SECRET_FILE="$GG_TMP/secret" "$EP" sh -c 'echo "[$GRAPHGATE_SESSION_SECRET]"')" \
  "[from-a-file-0123456789-0123456789-x]"
t "... and the _FILE variable is not passed on" \
  eq "$(GRAPHGATE_SESSION_SECRET_FILE="$GG_TMP/secret" "$EP" sh -c 'echo "${GRAPHGATE_SESSION_SECRET_FILE:-unset}"')" unset
t "VAR and VAR_FILE both set: refused" \
  bash -c '! GRAPHGATE_AUTH_KEY_PEPPER=x GRAPHGATE_AUTH_KEY_PEPPER_FILE="$1" "$0" version 2>/dev/null' "$EP" "$GG_TMP/secret"
t "an unreadable VAR_FILE: refused" bash -c '! GRAPHGATE_DATABASE_URL_FILE=/nonexistent "$0" version 2>/dev/null' "$EP"
t "GRAPHGATE_REQUIRE_SHARED without a session secret: serve refused" \
  bash -c '! GRAPHGATE_REQUIRE_SHARED=true "$0" serve --listen 127.0.0.1:0 --internal-listen "" 2>"$1" && grep -q GRAPHGATE_SESSION_SECRET "$1"' "$EP" "$GG_TMP/req.err"
t "... nor without a key pepper" \
  bash -c '! GRAPHGATE_REQUIRE_SHARED=true GRAPHGATE_SESSION_SECRET=0123456789abcdef0123456789abcdef "$0" serve --listen 127.0.0.1:0 2>"$1" && grep -q GRAPHGATE_AUTH_KEY_PEPPER "$1"' "$EP" "$GG_TMP/req.err"

# serve through the entrypoint, with the shared secrets from files
printf '0123456789abcdef-pepper\n' > "$GG_TMP/pepper"
GRAPHGATE_REQUIRE_SHARED=true GRAPHGATE_SESSION_SECRET_FILE="$GG_TMP/secret" GRAPHGATE_AUTH_KEY_PEPPER_FILE="$GG_TMP/pepper" \
  "$EP" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 >"$GG_TMP/serve.out" 2>"$GG_TMP/serve.err" &
GG_PID=$!
up() {
  local i
  for i in $(seq 1 200); do grep -q internal "$GG_TMP/serve.out" 2>/dev/null && break; sleep 0.05; done
  GG_PUB=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$GG_TMP/serve.out")
  [ -n "$GG_PUB" ] || { tail -5 "$GG_TMP/serve.err" >&2; return 1; }
  for i in $(seq 1 100); do curl -fsS --max-time 2 "$GG_PUB/ready" >/dev/null 2>&1 && return 0; sleep 0.05; done
  return 1
}
t "serve (flags only) starts through the entrypoint; /ready on the public port" up
t "/health on the public port (the image's HEALTHCHECK)" curl -fsS --max-time 2 "$GG_PUB/health" -o /dev/null
t "graphgate itself got no entrypoint variable" bash -c '! grep -q "unknown variable" "$0"' "$GG_TMP/serve.err"
t "the serving process is graphgate (exec: signals reach it)" \
  bash -c '[ "$(readlink /proc/$0/exe)" = "$(readlink -f "$1")" ]' "$GG_PID" "$GG_BIN"
gg_stop
t "SIGTERM: exit 0" eq "$GG_EXIT" 0
gg_finish
