#!/usr/bin/env bash
# Install test: `make install prefix=TMP` of the built tree into a temporary prefix, then the
# installed graphgate, run from a folder outside the source and build trees with GG_SRCDIR
# unset, finds its installed data: version, migrate (a probe migration placed only in the
# installed copy proves which folder it read), specs load (names the folder), serve (/ready);
# the man pages graphgate(1) and graphgate.yaml(5) are installed.
# Finally `make uninstall` with the same prefix leaves no file behind.
. "${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"
T=$GG_TMP
P=$T/prefix
DATA=$P/share/graphgate
command -v "${MAKE:-make}" >/dev/null 2>&1 || { echo "SKIP: make not installed"; exit 77; }

# A plain install of the already built tree: no flags inherited from an outer make (a
# DESTDIR or -n there must not leak in), no GRAPHGATE_* configuration.
gg_make() {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u DESTDIR "${MAKE:-make}" -s -C "$GG_BUILDDIR" "$@" \
    prefix="$P" DESTDIR= >"$T/make.out" 2>&1 || { tail -20 "$T/make.out"; return 1; }
}
t "make install prefix=\$tmp succeeds" gg_make install || { echo "$GG_PASSED passed, $GG_FAILED failed"; exit 1; }

same_files() { # installed folder matches the source folder file for file
  (cd "$GG_SRCDIR/$1" && find . -type f | sort) >"$T/src.$1"
  (cd "$DATA/$1" && find . -type f | sort) >"$T/inst.$1"
  [ -s "$T/src.$1" ] && cmp -s "$T/src.$1" "$T/inst.$1" || { diff "$T/src.$1" "$T/inst.$1" | head; return 1; }
}
t "binary installed in bin" test -x "$P/bin/graphgate"
t "migrations installed under share/graphgate" same_files migrations
t "specs installed under share/graphgate" same_files specs
t "schema installed under share/graphgate" same_files schema
c_man() { # c_man SECTION PAGE: installed, generated (placeholders filled), titled
  local f=$P/share/man/man$1/$2.$1
  [ -s "$f" ] && grep -q '^\.TH ' "$f" && ! grep -q '%%[A-Z]*%%' "$f" || { echo "  $f missing or unfilled"; return 1; }
}
t "man page graphgate(1) installed" c_man 1 graphgate
t "man page graphgate.yaml(5) installed" c_man 5 graphgate.yaml

# Everything below runs the installed binary from an unrelated folder, without GG_SRCDIR
# in its environment (the variable stays set in this shell for lib.sh).
mkdir -p "$T/elsewhere" && cd "$T/elsewhere" || exit 1
export -n GG_SRCDIR GG_BUILDDIR
unset GRAPHGATE_CONFIG
GG_BIN=$P/bin/graphgate

c_version() { "$GG_BIN" version >"$T/v.out" 2>&1 && grep -q '[0-9]\+\.[0-9]\+\.[0-9]\+' "$T/v.out" || { cat "$T/v.out"; return 1; }; }
t "installed graphgate version" c_version

# A migration that exists only in the installed copy: applying it shows the installed
# folder was read, not the source tree compiled into the binary as a last resort.
probe=$(ls "$DATA/migrations" | sort | tail -1)
probe_n=$(( 10#${probe%%_*} + 1 ))
probe_file=$(printf '%s/migrations/%04d_install_probe.sql' "$DATA" "$probe_n")
printf 'CREATE TABLE install_probe (id INTEGER PRIMARY KEY);\n' >"$probe_file"
c_migrate() {
  "$GG_BIN" migrate --db "$T/t.db" >"$T/m.out" 2>&1 \
    && grep -q "schema at $(printf %04d "$probe_n")" "$T/m.out" || { cat "$T/m.out"; return 1; }
}
t "installed graphgate migrate reads the installed migrations" c_migrate
c_migrate_check() { "$GG_BIN" migrate --check --db "$T/t.db" >"$T/mc.out" 2>&1 || { cat "$T/mc.out"; return 1; }; }
t "migrate --check: schema current" c_migrate_check

c_specs() {
  "$GG_BIN" specs load --db "$T/t.db" >"$T/s.out" 2>&1 \
    && grep -q "^loaded [1-9][0-9]* node specs from $(cd "$DATA/specs" && pwd -P)" "$T/s.out" \
    || { cat "$T/s.out"; return 1; }
}
t "installed graphgate specs load reads the installed specs" c_specs

c_serve_ready() {
  GG_DB=$T/t.db gg_start || return 1
  local s; s=$(gg_curl "$T/r" "$GG_PUB/ready")
  [ "$s" = 200 ] || { echo "  /ready answered $s"; cat "$T/r"; return 1; }
  gg_stop; [ "$GG_EXIT" = 0 ] || { echo "  serve exited $GG_EXIT"; tail -5 "$T/serve.err"; return 1; }
}
t "installed graphgate serve: /ready 200, clean stop" c_serve_ready

rm -f "$probe_file"
cd "$T" || exit 1
t "make uninstall prefix=\$tmp succeeds" gg_make uninstall
c_nothing_left() { local left; left=$(find "$P" ! -type d 2>/dev/null); [ -z "$left" ] || { echo "$left" | head; return 1; }; }
t "uninstall leaves no file behind" c_nothing_left
gg_finish
