#!/usr/bin/env bash
# run.sh — the libFuzzer targets in CI: each runs for GG_FUZZ_SECONDS (10) on a copy of its
# seed corpus (tests/fuzz/corpus/<target>), after replaying every crash reproducer kept in
# tests/fuzz/crashes/<target>/ (each must now pass). A failure leaves the crashing input in
# the build's tests/fuzz/artifacts/ and prints its path.
#
# Where the targets come from: a build configured with --enable-fuzzing has them; the plain
# build compiles them in its own fuzz-build/ folder (CC=clang, configured once, incremental
# afterwards) when clang can link libFuzzer. The sanitizer build skips (the plain build's run
# covers it; the targets carry ASan+UBSan themselves), as does a machine without clang.
set -u
B=${GG_BUILDDIR:-$(pwd)}
S=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SECS=${GG_FUZZ_SECONDS:-10}
TARGETS="graph jsonrpc jsonlogic jsonschema config jsonata"
passed=0 failed=0
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

F="$B/tests/fuzz"
if [ ! -x "$F/graph_fuzz" ]; then
  if grep -q -- '--enable-sanitizers' "$B/config.status" 2>/dev/null; then
    echo "SKIP: the sanitizer build leaves the fuzzers to the plain build"; exit 77
  fi
  CLANG=$(command -v clang || true)
  [ -n "$CLANG" ] || { echo "SKIP: clang is not installed (libFuzzer targets need it)"; exit 77; }
  printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$B/fuzz-probe.c"
  if ! "$CLANG" -fsanitize=fuzzer "$B/fuzz-probe.c" -o "$B/fuzz-probe" >/dev/null 2>&1; then
    rm -f "$B/fuzz-probe.c" "$B/fuzz-probe"
    echo "SKIP: clang cannot link libFuzzer (-fsanitize=fuzzer)"; exit 77
  fi
  rm -f "$B/fuzz-probe.c" "$B/fuzz-probe"
  FB="$B/fuzz-build"
  mkdir -p "$FB"
  if [ ! -f "$FB/Makefile" ]; then
    (cd "$FB" && CC="$CLANG" "$S/configure" -q --enable-fuzzing --with-shared="${GG_SHARED:-$S/../shared}" >"$FB/configure.out" 2>&1) \
      || { tail -20 "$FB/configure.out"; echo "0 passed, 1 failed"; exit 1; }
  fi
  progs=""; for t in $TARGETS; do progs="$progs tests/fuzz/${t}_fuzz"; done
  # shellcheck disable=SC2086
  make -C "$FB" -s $progs >"$FB/make.out" 2>&1 || { tail -30 "$FB/make.out"; echo "0 passed, 1 failed"; exit 1; }
  F="$FB/tests/fuzz"
fi

ART="$B/tests/fuzz/artifacts"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gg-fuzz.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$ART"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:allocator_may_return_null=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in $TARGETS; do
  bin="$F/${t}_fuzz"
  [ -x "$bin" ] || { echo "not ok - $t: no target $bin"; failed=$((failed + 1)); continue; }
  crashes=("$S/tests/fuzz/crashes/$t"/*)
  if [ -e "${crashes[0]}" ]; then
    if "$bin" -rss_limit_mb=2048 -timeout=20 "${crashes[@]}" >"$WORK/$t.replay" 2>&1; then
      echo "ok - $t: ${#crashes[@]} crash reproducer(s) pass"; passed=$((passed + 1))
    else
      echo "not ok - $t: a crash reproducer fails again"; tail -30 "$WORK/$t.replay"; failed=$((failed + 1))
    fi
  fi
  mkdir -p "$WORK/$t"
  # new inputs go to the scratch folder; the seeds are read from the source tree
  # a fixed seed makes a CI run replay the same inputs as a longer local run with that seed
  if "$bin" -seed="${GG_FUZZ_SEED:-1}" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix="$ART/$t-" "$WORK/$t" "$S/tests/fuzz/corpus/$t" >"$WORK/$t.log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/$t.log" | tail -1)
    echo "ok - $t: ${SECS}s, ${execs:-?} executions, corpus $(ls "$S/tests/fuzz/corpus/$t" | wc -l) seeds + $(ls "$WORK/$t" | wc -l) new"
    passed=$((passed + 1))
  else
    echo "not ok - $t: the fuzzer found a failure (input saved under $ART/$t-*)"
    grep -E -A25 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' "$WORK/$t.log" | head -40
    failed=$((failed + 1))
  fi
done
finish
