#!/usr/bin/env bash
# Adds up the results of `make check` runs into one closing line: N passed, N failed[, N skipped].
# Per test log: a runner's own "N passed, N failed[, N waived][, N skipped]" line counts its
# cases (waived = known conformance gaps listed in a waiver file, reported as skipped);
# check's "Checks: N, Failures: F, Errors: E" counts its unit tests; any other test counts
# as one, by its automake result. Before the closing line: subtotals per kind (unit tests,
# integration checks, conformance cases, differential cases) and every skip with its reason.
# Only the tests the build directory's Makefile lists (or its gg-tests.list) are read (a nested distcheck tree or a
# log left by a removed test is not this run's result).
set -u
passed=0 failed=${GG_EXTRA_FAILED:-0} skipped=0
declare -A kp kf ks
kinds="unit integration conformance differential"
for k in $kinds; do kp[$k]=0; kf[$k]=0; ks[$k]=0; done
reasons=$(mktemp); trap 'rm -f "$reasons"' EXIT

# kind_of TRS CHECK-LINE: conformance and differential runners by name, test programs
# (a check "Checks:" line, or a compiled test) are unit tests, scripts integration checks
kind_of() {
  case $1 in
    */cases/*.trs) echo integration ;; # tests/cases/NAME.case logs as NAME.log
    */jsonata/suite.sh.trs|*/jsonlogic/suite-*.trs|*/gateway/conformance_client.sh.trs) echo conformance ;;
    *-diff.sh.trs|*/differential.sh.trs) echo differential ;;
    *.sh.trs) if [ -n "$2" ]; then echo unit; else echo integration; fi ;;
    *) echo unit ;;
  esac
}
# the .trs files of the tests DIR's Makefile runs (every .trs when the list is unavailable)
trs_of() {
  local logs
  # a build that ran a chosen subset (tests/run-all's GG_TESTS) lists it in gg-tests.list
  if [ -f "$1/gg-tests.list" ]; then
    for t in $(cat "$1/gg-tests.list"); do
      t=${t%.case} # tests/cases/NAME.case logs as NAME.log (TEST_EXTENSIONS)
      if [ -f "$1/$t.trs" ]; then echo "$1/$t.trs"
      else echo "$1/$t: did not run (no result file)" >&2; echo "missing"; fi
    done
    return
  fi
  logs=$(printf 'gg-print-test-logs:\n\t@echo $(TEST_LOGS)\n' \
    | make -s -C "$1" -f Makefile -f - gg-print-test-logs 2>/dev/null)
  if [ -n "$logs" ]; then
    for l in $logs; do
      case $l in *.log) ;; *) continue ;; esac # (not what a Makefile refresh may print)
      if [ -f "$1/${l%.log}.trs" ]; then echo "$1/${l%.log}.trs"
      else echo "$1/${l%.log}: did not run (no result file)" >&2; echo "missing"; fi
    done
  else
    find "$1" -name '*.trs' | sort
  fi
}
count() { # kind passed failed skipped
  kp[$1]=$((kp[$1] + $2)); kf[$1]=$((kf[$1] + $3)); ks[$1]=$((ks[$1] + $4))
  passed=$((passed + $2)); failed=$((failed + $3)); skipped=$((skipped + $4))
}
for dir in "$@"; do
  while IFS= read -r trs; do
    [ "$trs" = missing ] && { count integration 0 1 0; continue; }
    log="${trs%.trs}.log"
    name=${trs#"$dir"/}; name=${name%.trs}
    res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
    line=$(grep -E '^([A-Za-z0-9_./-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" 2>/dev/null | tail -1)
    chk=$(grep -E 'Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" 2>/dev/null | tail -1)
    k=$(kind_of "$trs" "$chk")
    # skip reasons: a skipped test's "SKIP: why", a runner's "# SKIP why" lines
    grep -hE '^(SKIP:? |# SKIP |skip - |skip [0-9]+ - )' "$log" 2>/dev/null | grep -vE '\(exit status: 77\)$' \
      | sed -E "s|^(SKIP:? \|# SKIP \|skip [0-9]+ - )||; s|^skip - (.*) # SKIP (.*)|\1: \2|; s|^|$dir/$name: |" >>"$reasons"
    if [ -n "$line" ]; then
      p=$(sed -E 's/^([A-Za-z0-9_./-]+: )?([0-9]+) passed.*/\2/' <<<"$line")
      f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
      w=0; grep -qE '[0-9]+ waived' <<<"$line" && w=$(sed -E 's/.* ([0-9]+) waived.*/\1/' <<<"$line")
      s=0; grep -qE '[0-9]+ skipped' <<<"$line" && s=$(sed -E 's/.* ([0-9]+) skipped.*/\1/' <<<"$line")
      # The runners count a waived case under "waived" only, never also under "failed".
      [ "$w" -gt 0 ] && echo "$dir/$name: $w cases waived (known differences, listed in the log)" >>"$reasons"
      [ "$res" = FAIL ] || [ "$res" = ERROR ] && [ "$f" -eq 0 ] && f=1
      count "$k" "$p" "$f" $((w + s))
    elif [ -n "$chk" ]; then
      n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$chk")
      f=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$chk")
      e=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$chk")
      fe=$((f + e))
      [ "$res" = FAIL ] || [ "$res" = ERROR ] && [ "$fe" -eq 0 ] && fe=1
      count "$k" $((n - f - e)) "$fe" 0
    else
      case "$res" in
        PASS|XFAIL) count "$k" 1 0 0 ;;
        SKIP) count "$k" 0 0 1
              grep -qE '^(SKIP|# SKIP)' "$log" 2>/dev/null || echo "$dir/$name: (no reason printed)" >>"$reasons" ;;
        *) count "$k" 0 1 0 ;;
      esac
    fi
  done < <(trs_of "$dir")
done
for k in $kinds; do
  line="  $k: ${kp[$k]} passed, ${kf[$k]} failed"
  [ "${ks[$k]}" -gt 0 ] && line="$line, ${ks[$k]} skipped"
  echo "$line"
done
if [ -s "$reasons" ]; then echo "skipped:"; sed 's/^/  /' "$reasons"; fi
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
