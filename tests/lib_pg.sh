# tests/lib_pg.sh — the one way tests and benchmarks start a throwaway PostgreSQL cluster
# (sourced, not run). pg_virtualenv keeps its cluster, password file and logs under $TMPDIR,
# and initdb reads that password file as the postgres user: a TMPDIR inside the checkout is
# unreadable to postgres whenever the clone sits in a private (0700) directory, so the
# cluster gets a fresh world-traversable directory of its own under /tmp instead, removed on
# exit. The command itself still sees the caller's TMPDIR.

# gg_pg_installed → 0 when pg_virtualenv and a PostgreSQL server are installed.
gg_pg_installed() {
  command -v pg_virtualenv >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

# gg_pg_venv [pg_virtualenv options] [--] COMMAND ARGS... → runs COMMAND with the cluster's PG*
# variables set (pg_virtualenv -t: a temporary cluster directory even as root); returns its
# status. As root the cluster's port and name are shared, so root runs take turns on a lock.
gg_pg_venv() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ] && [ "${1#-}" != "$1" ]; do
    case $1 in
      -o|-c|-i|-v|-p) opts+=("$1" "$2"); shift 2 ;;
      *) opts+=("$1"); shift ;;
    esac
  done
  [ "${1:-}" != -- ] || shift
  ( # a subshell, so the cleanup trap is its own and never replaces the caller's
    dir=$(mktemp -d /tmp/gg-pg.XXXXXX) || exit 1
    trap 'rm -rf "$dir"' EXIT
    trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
    chmod 755 "$dir"
    lock=()
    [ "$(id -u)" != 0 ] || lock=(flock /tmp/graphgate-pg_virtualenv.lock)
    TMPDIR=$dir "${lock[@]}" pg_virtualenv -t "${opts[@]}" env TMPDIR="${TMPDIR:-/tmp}" "$@"
  )
}
