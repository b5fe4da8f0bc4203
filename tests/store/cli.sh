#!/usr/bin/env bash
# The store commands of the real binary: migrate, tenant, key — outputs, exit codes
# (0 ok, 1 runtime failure, 2 usage/invalid input), configuration precedence, migration
# integrity, and working while `graphgate serve` runs on the same database.
. "${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"

db="$GG_TMP/gg.db"
out="$GG_TMP/out" err="$GG_TMP/err"
gg() { "$GG_BIN" "$@" >"$out" 2>"$err"; }
rc_is() { local want=$1; shift; gg "$@"; local rc=$?; [ "$rc" -eq "$want" ] || { echo "  rc=$rc, stderr: $(head -3 "$err")"; return 1; }; }
out_has() { grep -qE -- "$1" "$out" || { echo "  stdout lacks /$1/:"; head -5 "$out"; return 1; }; }
quiet() { "$@" >/dev/null; }
err_has() { grep -qE -- "$1" "$err" || { echo "  stderr lacks /$1/:"; head -5 "$err"; return 1; }; }

t "migrate applies 0001 on a new database" rc_is 0 migrate --db "$db"
latest=$(cd "$GG_SRCDIR/migrations" && ls [0-9][0-9][0-9][0-9]_*.sql | tail -1 | cut -c1-4)
t "  and says so" out_has "[1-9][0-9]* migration\(s\) applied, schema at $latest"
t "migrate again applies nothing" rc_is 0 migrate --db "$db"
t "  and says so" out_has "0 migration\(s\) applied"
t "migrate --check on a current schema" rc_is 0 migrate --check --db "$db"
t "migrate --help" rc_is 0 migrate --help
t "  prints usage on stdout" out_has "usage: graphgate migrate"
t "migrate with an unknown option is a usage error" rc_is 2 migrate --bogus --db "$db"
t "migrate --db without a value" rc_is 2 migrate --db

# Migration integrity: a copy of the migrations that we then change.
cp -R "$GG_SRCDIR/migrations" "$GG_TMP/mig" && chmod -R u+w "$GG_TMP/mig"
t "migrate with --migrations" rc_is 0 migrate --db "$GG_TMP/m.db" --migrations "$GG_TMP/mig"
printf '\n-- edited later\n' >>"$GG_TMP/mig/0001_initial.sql"
t "a changed migration stops migrate (exit 1)" rc_is 1 migrate --db "$GG_TMP/m.db" --migrations "$GG_TMP/mig"
t "  naming the file" err_has "0001_initial.sql was changed after it was applied"
t "  and stops the other store commands too" rc_is 1 tenant list --db "$GG_TMP/m.db" --migrations "$GG_TMP/mig"

t "tenant create" rc_is 0 tenant create acme --db "$db"
t "tenant create of an existing tenant" rc_is 2 tenant create acme --db "$db"
t "tenant name with capitals refused" rc_is 2 tenant create Acme --db "$db"
t "reserved tenant name refused" rc_is 2 tenant create admin --db "$db"
t "  with the reason" err_has "reserved"
t "tenant without a subcommand" rc_is 2 tenant --db "$db"
t "tenant create without a name" rc_is 2 tenant create --db "$db"

t "key create" rc_is 0 key create --tenant acme --scopes tools:read,tools:execute --name ci --db "$db"
t "  prints only the key on stdout" bash -c "[ \$(wc -l <'$out') -eq 1 ] && grep -qE '^gg_[0-9a-f]{16}_[A-Za-z0-9_-]{43}\$' '$out'"
key=$(cat "$out")
id=${key:3:16}
t "key list shows the key without its secret" rc_is 0 key list --tenant acme --json --db "$db"
t "  by id" out_has "\"id\": \"$id\""
t "  and never the secret" bash -c "! grep -q -- '${key:20}' '$out'"
t "key create without --scopes" rc_is 2 key create --tenant acme --db "$db"
t "key create with an unknown scope" rc_is 2 key create --tenant acme --scopes tools:write --db "$db"
t "  names it" err_has "unknown scope 'tools:write'"
t "key create for an unknown tenant" rc_is 2 key create --tenant nobody --scopes admin --db "$db"
t "key revoke of an unknown id" rc_is 2 key revoke 0000000000000000 --db "$db"

# Configuration: file < environment < flags; unknown keys rejected with their position.
printf 'database:\n  path: %s\n  bogus: 1\n' "$db" >"$GG_TMP/bad.yaml"
t "unknown config key is a usage error" rc_is 2 tenant list --config "$GG_TMP/bad.yaml"
t "  reported with file:line:col" err_has "bad.yaml:3:3: invalid_config: unknown configuration key 'database.bogus'"
printf 'database:\n  path: %s\n' "$GG_TMP/from-file.db" >"$GG_TMP/good.yaml"
t "the file's database is used" rc_is 0 tenant create fromfile --config "$GG_TMP/good.yaml"
t "the environment overrides the file" quiet env GRAPHGATE_DATABASE_PATH="$db" "$GG_BIN" tenant create fromenv --config "$GG_TMP/good.yaml"
t "  (so fromenv is in the env database)" bash -c "'$GG_BIN' tenant list --db '$db' | grep -q fromenv"
t "a flag overrides the environment" quiet env GRAPHGATE_DATABASE_PATH="$GG_TMP/nowhere.db" "$GG_BIN" tenant create fromflag --config "$GG_TMP/good.yaml" --db "$db"
t "  (so fromflag is in the flag database)" bash -c "'$GG_BIN' tenant list --db '$db' | grep -q fromflag"
t "GRAPHGATE_CONFIG names the file" env GRAPHGATE_CONFIG="$GG_TMP/good.yaml" bash -c "'$GG_BIN' tenant list | grep -q fromfile"

# Commands that read a database refuse a path that does not exist (a typo must not read,
# and leave behind, an empty database); only migrate, serve and tenant create create one.
missing="$GG_TMP/typo/missing.db"
for c in "tenant list" "tenant delete acme" "key list" "key revoke k1" "executions list" "executions show x" \
         "graph list acme" "graph activate acme g 1" "specs list"; do
  # shellcheck disable=SC2086
  t "$c on a missing database: exit 1" rc_is 1 $c --db "$missing"
  t "  names the path and how to create it" err_has "database $missing does not exist.*graphgate migrate"
done
t "  nothing was created" test ! -e "$GG_TMP/typo"
t "GRAPHGATE_DATABASE_PATH to a missing file: refused too" bash -c "! GRAPHGATE_DATABASE_PATH='$missing' '$GG_BIN' tenant list 2>/dev/null"
t "migrate creates it" rc_is 0 migrate --db "$missing"
t "  then reading works" rc_is 0 tenant list --db "$missing"

# While serve runs on the same database.
if gg_start --db "$db"; then
  t "tenant create while serve runs" rc_is 0 tenant create beta --db "$db"
  t "key create while serve runs" rc_is 0 key create --tenant beta --scopes admin --db "$db"
  t "key revoke while serve runs" rc_is 0 key revoke "$id" --db "$db"
  t "  key list shows it revoked" bash -c "'$GG_BIN' key list --tenant acme --db '$db' | grep -q revoked"
  pids=""
  for n in 1 2 3 4 5 6; do "$GG_BIN" tenant create "par-$n" --db "$db" >/dev/null 2>"$GG_TMP/par-$n.err" & pids="$pids $!"; done
  okall=0; for p in $pids; do wait "$p" || okall=1; done
  t "six concurrent CLI writers while serve runs" test "$okall" -eq 0
  t "  all six tenants exist" bash -c "[ \$('$GG_BIN' tenant list --db '$db' | grep -c '^par-') -eq 6 ]"
  t "serve is still ready" bash -c "curl -fsS --max-time 5 '$GG_PUB/ready' >/dev/null"
  gg_stop
  t "serve stops cleanly" test "$GG_EXIT" -eq 0
else
  t "serve starts on the CLI's database" false
fi
t "tenant delete" rc_is 0 tenant delete acme --db "$db"
t "tenant delete of a missing tenant" rc_is 2 tenant delete acme --db "$db"
gg_finish
