#!/bin/sh
# docker-entrypoint.sh — the container's entry point (deploy/Dockerfile).
#
#   (no arguments) | serve [FLAGS]   graphgate serve (migrations run at its start)
#   -FLAG ...                         graphgate serve -FLAG ...
#   migrate | tenant | key | graph | executions | specs | eval | run | version [ARGS]
#                                     that graphgate command (e.g. the Kubernetes migration Job)
#   anything else                     run as a command (a shell for debugging)
#
# Secrets from files (Docker/Kubernetes secrets mounted as files): for each VAR among
# GRAPHGATE_SESSION_SECRET, GRAPHGATE_AUTH_KEY_PEPPER and GRAPHGATE_DATABASE_URL,
# VAR_FILE=/path sets VAR to the file's content (trailing newline dropped); setting both
# is an error. GRAPHGATE_REQUIRE_SHARED=true (set it when running several replicas)
# refuses to serve without a session secret and a key pepper: replicas with random
# per-process secrets would reject each other's sessions. These variables are removed
# before graphgate starts. GRAPHGATE_BIN overrides the binary (tests).
set -eu
bin=${GRAPHGATE_BIN:-/usr/local/bin/graphgate}

die() { echo "docker-entrypoint: $*" >&2; exit 1; }

# from_file VAR: VAR_FILE → VAR
from_file() {
  eval "f=\${${1}_FILE:-}; v=\${${1}:-}"
  [ -n "$f" ] || return 0
  [ -z "$v" ] || die "both $1 and ${1}_FILE are set"
  [ -r "$f" ] || die "${1}_FILE: cannot read $f"
  v=$(cat "$f") # command substitution drops the trailing newline(s)
  [ -n "$v" ] || die "${1}_FILE: $f is empty"
  export "$1=$v"
  unset "${1}_FILE"
}
for var in GRAPHGATE_SESSION_SECRET GRAPHGATE_AUTH_KEY_PEPPER GRAPHGATE_DATABASE_URL; do from_file "$var"; done

require=${GRAPHGATE_REQUIRE_SHARED:-false}
unset GRAPHGATE_REQUIRE_SHARED GRAPHGATE_BIN

serve() {
  if [ "$require" = true ]; then
    [ -n "${GRAPHGATE_SESSION_SECRET:-}" ] || die "GRAPHGATE_REQUIRE_SHARED: set GRAPHGATE_SESSION_SECRET (the same on every replica)"
    [ -n "${GRAPHGATE_AUTH_KEY_PEPPER:-}" ] || die "GRAPHGATE_REQUIRE_SHARED: set GRAPHGATE_AUTH_KEY_PEPPER (the same on every replica)"
  fi
  exec "$bin" serve "$@" # exec: SIGTERM reaches graphgate, which drains and exits 0
}

if [ $# -eq 0 ]; then serve; fi
case "$1" in
  serve) shift; serve "$@" ;;
  -*) serve "$@" ;;
  migrate|tenant|key|graph|executions|specs|eval|run|version) exec "$bin" "$@" ;;
  *) exec "$@" ;;
esac
