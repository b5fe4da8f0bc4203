#!/usr/bin/env bash
# Manual pages against what they describe, so neither can drift:
# - every key of the configuration loader's table (the `{"name", T_...}` rows under src/) is
#   documented in deploy/graphgate.yaml, every key documented there is one the loader takes,
#   and the real binary loads the file; graphgate.yaml(5) is generated from that file by
#   man/yaml2man.awk, is current, and has an entry for every key;
# - every command, subcommand and flag that `graphgate ... --help` prints, and every flag
#   src/cli/*.c parses, is in graphgate(1), and every flag graphgate(1) names is one some
#   --help prints;
# - both pages format without a warning (groff -ww, else mandoc -T lint).
# A failure lists the keys, commands or flags missing on each side.
. "${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"
T=$GG_TMP
YAML=$GG_SRCDIR/deploy/graphgate.yaml
GEN=$GG_SRCDIR/man/yaml2man.awk
MAN1=$GG_BUILDDIR/man/graphgate.1
MAN5=$GG_BUILDDIR/man/graphgate.yaml.5
AWK=${AWK:-awk}

# ---- configuration keys ------------------------------------------------------------------

# The loader's key table: one `{"dotted.name", T_TYPE, ...}` row per key (wherever the
# configuration code lives under src/).
grep -rhoE --include='*.c' '^[[:space:]]*\{"[A-Za-z0-9_.]+", T_[A-Z_]+,' "$GG_SRCDIR/src" \
  | sed -E 's/^[[:space:]]*\{"([^"]+)".*/\1/' | sort -u >"$T/loader.keys"
LC_ALL=C $AWK -v mode=keys -f "$GEN" "$YAML" 2>"$T/gen.err" | sort >"$T/yaml.keys"

c_table_found() {
  [ "$(wc -l <"$T/loader.keys")" -ge 10 ] && return 0
  echo "  found $(wc -l <"$T/loader.keys") rows like {\"key\", T_TYPE, ...} under src/: the key table's shape changed; update this test"
  return 1
}
t "the configuration loader's key table is found under src/ ($(wc -l <"$T/loader.keys") keys)" c_table_found

c_yaml_parses() { [ -s "$T/yaml.keys" ] || { cat "$T/gen.err"; return 1; }; }
t "man/yaml2man.awk reads deploy/graphgate.yaml ($(wc -l <"$T/yaml.keys") keys)" c_yaml_parses

c_loader_keys_documented() {
  local missing; missing=$(comm -23 "$T/loader.keys" "$T/yaml.keys")
  [ -z "$missing" ] && return 0
  echo "  keys the loader accepts but deploy/graphgate.yaml does not document (add each with a"
  echo "  comment above it and its default; graphgate.yaml(5) is generated from that file):"
  echo "$missing" | sed 's/^/    /'
  return 1
}
t "every key the loader accepts is documented in deploy/graphgate.yaml" c_loader_keys_documented

c_documented_keys_accepted() {
  local extra; extra=$(comm -13 "$T/loader.keys" "$T/yaml.keys")
  [ -z "$extra" ] && return 0
  echo "  keys deploy/graphgate.yaml documents but the loader's table does not have:"
  echo "$extra" | sed 's/^/    /'
  return 1
}
t "every key documented in deploy/graphgate.yaml is in the loader's table" c_documented_keys_accepted

# The binary itself takes the whole file (an unknown key or a bad value is exit 2).
c_binary_loads_yaml() {
  "$GG_BIN" migrate --config "$YAML" --db "$T/cfg.db" >"$T/cfg.out" 2>&1 || { cat "$T/cfg.out"; return 1; }
}
t "graphgate loads deploy/graphgate.yaml as its configuration" c_binary_loads_yaml

# ---- graphgate.yaml(5) ---------------------------------------------------------------------

version=$("$GG_BIN" version | sed -n '1s/^graphgate //p')
c_man5_current() {
  [ -s "$MAN5" ] || { echo "  $MAN5 was not built"; return 1; }
  LC_ALL=C $AWK -v version="$version" -f "$GEN" "$YAML" >"$T/fresh.5" || return 1
  cmp -s "$T/fresh.5" "$MAN5" || { echo "  $MAN5 differs from what deploy/graphgate.yaml gives now:"; diff "$MAN5" "$T/fresh.5" | head; return 1; }
}
t "graphgate.yaml(5) is generated from the current deploy/graphgate.yaml" c_man5_current

c_man5_every_key() {
  local k missing=""
  while read -r k; do
    grep -qF "\\fB\\%$k\\fR (default: " "$MAN5" || missing="$missing $k"
  done <"$T/loader.keys"
  [ -z "$missing" ] && return 0
  echo "  keys without an entry in graphgate.yaml(5):$missing"
  return 1
}
t "graphgate.yaml(5) has an entry (default, environment variable) for every key" c_man5_every_key

c_man5_described() { # a key entry without any text would pass the checks above
  local bare
  bare=$($AWK 'want && (/^\.TQ$/ || /^\\fB/) { next }
              want { if ($0 ~ /^\./) print key; want = 0 }
              /^\.TP$/ { tp = 1; next }
              tp && /^\\fB/ { key = $0; sub(/\\fR.*/, "", key); sub(/^\\fB(\\%)?/, "", key); want = 1 }
              { tp = 0 }' "$MAN5")
  [ -z "$bare" ] && return 0
  echo "  entries with no description (add a comment above the key in deploy/graphgate.yaml):"
  echo "$bare" | sed 's/^/    /'
  return 1
}
t "every graphgate.yaml(5) entry has a description" c_man5_described

# ---- graphgate(1) --------------------------------------------------------------------------

# The page's text with troff escapes removed, for plain searches.
plain() { sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\&//g' -e 's/\\(dq/"/g' "$1"; }
[ -s "$MAN1" ] && plain "$MAN1" >"$T/man1.txt"

# Every --help text: the top level, each command, each `graph` subcommand.
helps() {
  "$GG_BIN" --help
  local c s
  for c in $("$GG_BIN" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
    "$GG_BIN" "$c" --help
  done
  for s in $("$GG_BIN" graph --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
    "$GG_BIN" graph "$s" --help
  done
}
c_helps() {
  helps >"$T/help.txt" 2>"$T/help.err" || { echo "  a --help exited non-zero:"; cat "$T/help.err"; return 1; }
  [ -s "$MAN1" ] || { echo "  $MAN1 was not built"; return 1; }
}
t "graphgate --help of every command and graph subcommand runs; graphgate(1) is built" c_helps

c_commands_documented() {
  local c missing=""
  for c in $("$GG_BIN" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
    grep -q "^\.SS \"graphgate $c\b" "$T/man1.txt" || missing="$missing $c"
  done
  # "graphgate CMD SUB" on usage lines (SUB in lowercase: a subcommand, not a placeholder)
  while read -r cs; do
    grep -qF "$cs" "$T/man1.txt" || missing="$missing '$cs'"
  done < <(grep -oE 'graphgate [a-z]+ [a-z]+\b' "$T/help.txt" | sed 's/^graphgate //' | sort -u)
  [ -z "$missing" ] && return 0
  echo "  commands or subcommands of --help without a section or entry in graphgate(1):$missing"
  return 1
}
t "every command and subcommand in --help is in graphgate(1)" c_commands_documented

flags_of() { grep -oE '(^|[^a-zA-Z0-9-])--[a-z][a-z-]*' "$1" | sed 's/^[^-]*//' | sort -u; }
c_flags_documented() {
  flags_of "$T/help.txt" >"$T/help.flags"
  local missing; missing=$(comm -23 "$T/help.flags" <(flags_of "$T/man1.txt"))
  [ -z "$missing" ] && return 0
  echo "  flags printed by --help but not described in graphgate(1):" $missing
  return 1
}
t "every flag printed by --help is in graphgate(1)" c_flags_documented

c_man_flags_exist() {
  # --version is the one flag no usage text lists: it must work.
  "$GG_BIN" --version >/dev/null || { echo "  graphgate --version failed"; return 1; }
  local stale; stale=$(comm -23 <(flags_of "$T/man1.txt") <( (cat "$T/help.flags"; echo --version) | sort -u))
  [ -z "$stale" ] && return 0
  echo "  flags graphgate(1) names that no --help prints (removed or renamed?):" $stale
  return 1
}
t "every flag graphgate(1) names is printed by some --help" c_man_flags_exist

# Flags the parsers compare against (string literals "--x" in src/cli/*.c): a flag a parser
# takes but no usage text prints would pass the checks above.
c_parser_flags_documented() {
  local files; files=$(ls "$GG_SRCDIR"/src/cli/*.c 2>/dev/null)
  [ -n "$files" ] || { echo "  no src/cli/*.c: the CLI moved; update this test"; return 1; }
  # shellcheck disable=SC2086
  grep -ohE '"--[a-z][a-z-]*[="]' $files | sed -E 's/^"//; s/[="]$//' | sort -u >"$T/src.flags"
  local missing; missing=$(comm -23 "$T/src.flags" <(flags_of "$T/man1.txt"))
  [ -z "$missing" ] && return 0
  echo "  flags src/cli/*.c parses but graphgate(1) does not describe:" $missing
  return 1
}
t "every flag src/cli/*.c parses is in graphgate(1)" c_parser_flags_documented

c_man1_filled() { ! grep -n '%%[A-Z]*%%' "$MAN1"; }
t "graphgate(1) has its version and data folder filled in" c_man1_filled

# ---- formatting ----------------------------------------------------------------------------

lint() { # lint PAGE: warnings on stderr/stdout fail
  if command -v groff >/dev/null 2>&1; then
    groff -man -ww -z "$1" >"$T/lint" 2>&1
  else
    mandoc -T lint -W warning "$1" >"$T/lint" 2>&1
  fi
  [ ! -s "$T/lint" ] || { cat "$T/lint"; return 1; }
}
if command -v groff >/dev/null 2>&1 || command -v mandoc >/dev/null 2>&1; then
  t "graphgate(1) formats without warnings" lint "$MAN1"
  t "graphgate.yaml(5) formats without warnings" lint "$MAN5"
else
  gg_skip "graphgate(1) and graphgate.yaml(5) format without warnings" "neither groff nor mandoc installed" 2
fi

gg_finish
