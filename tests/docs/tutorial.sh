#!/usr/bin/env bash
# docs/tutorial.md run for real: every ```sh block, in order, in one shell (so variables
# carry over), in a fresh directory, against a graphgate serve this test starts where the
# page says to start one (the ```sh serve block); each block's stdout must match the ```text
# block after it (tests/docs/mdblocks.py: `…` is any text). The page's addresses become the
# test server's: build/src/graphgate → the binary under test, 127.0.0.1:8080/8081 → the
# free ports it got. So the tutorial cannot drift from what graphgate does.
. "${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
PAGE="$GG_SRCDIR/docs/tutorial.md"
STEPS="$GG_TMP/steps"
WORK="$GG_TMP/work"
mkdir -p "$STEPS" "$WORK"
N=$(python3 "$GG_SRCDIR/tests/docs/mdblocks.py" extract "$PAGE" "$STEPS") || { echo "0 passed, 1 failed"; exit 1; }
t "the tutorial has runnable steps ($N) and one place that starts the server" \
  test "$N" -ge 10 -a "$(ls "$STEPS"/*.serve 2>/dev/null | wc -l)" = 1

# The page's names for things, as the test has them. GG_PUB/GG_INT are known only once the
# server runs, so a step is rewritten right before it runs.
rewrite() {
  sed -e "s|^gg=build/src/graphgate\$|gg='$GG_BIN'|" \
      -e "s|http://127\.0\.0\.1:8080|$GG_PUB|g" -e "s|http://127\.0\.0\.1:8081|$GG_INT|g" "$1"
}
# …and back in what a step printed, so expected blocks can show the page's addresses.
unrewrite() {
  [ -n "$GG_PUB" ] || { cat "$1"; return; }
  sed -e "s|$GG_PUB|http://127.0.0.1:8080|g" -e "s|$GG_INT|http://127.0.0.1:8081|g" "$1"
}

cd "$WORK" || exit 1
started=""
for f in "$STEPS"/*.sh; do
  step=${f%.sh}
  where=$(head -1 "$f" | sed 's/^# //')
  if [ -e "$step.serve" ]; then
    # the server the page starts in a second terminal: same database, free ports
    GG_DB="$WORK/var/tutorial.db"
    grep -q 'serve --db var/tutorial.db' "$f" && started=1
    t "$where: the page starts serve on the tutorial's database" test -n "$started"
    gg_start || { t "$where: graphgate serve starts" false; gg_finish; }
    continue
  fi
  rewrite "$f" >"$step.run"
  # run in this shell: later steps use the variables earlier ones set
  # shellcheck disable=SC1090
  source "$step.run" >"$step.raw" 2>"$step.err"
  rc=$?
  unrewrite "$step.raw" >"$step.out"
  ok_step() {
    [ "$rc" = 0 ] || { echo "  exit $rc; stderr:"; tail -5 "$step.err"; return 1; }
    [ ! -e "$step.expect" ] || python3 "$GG_SRCDIR/tests/docs/mdblocks.py" match "$step.expect" "$step.out"
  }
  t "$where: $(sed -n 2p "$f" | cut -c1-70)" ok_step
done
t "a server was started where the page says" test -n "$started"

# README's example graph does what the README's comment next to it says.
readme_example() {
  python3 - "$GG_SRCDIR/README.md" >"$WORK/readme-hello.yaml" <<'PY' || return 1
import re, sys
m = re.search(r'^## A graph\n.*?^```yaml\n(.*?)^```', open(sys.argv[1], encoding='utf-8').read(), re.S | re.M)
sys.exit('README.md: no yaml block under "## A graph"') if not m else print(m.group(1), end='')
PY
  local args want got
  args=$(sed -n "s/^\$gg run hello.yaml greet --args '\([^']*\)'.*/\1/p" "$GG_SRCDIR/README.md")
  want=$(sed -n "s/^\$gg run hello.yaml greet --args '[^']*' *# \({.*}\),.*/\1/p" "$GG_SRCDIR/README.md")
  [ -n "$args" ] && [ -n "$want" ] ||
    { echo "  README.md: no '\$gg run hello.yaml greet --args ARGS   # RESULT, ...' line"; return 1; }
  got=$("$GG_BIN" run "$WORK/readme-hello.yaml" greet --args "$args" 2>&1)
  [ "$got" = "$want" ] || { echo "  expected $want, got $got"; return 1; }
}
t "README.md's example graph runs and answers what the README says" readme_example
gg_finish
