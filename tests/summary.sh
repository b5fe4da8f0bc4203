#!/usr/bin/env bash
# Adds up the results of `make check` runs into one closing line: N passed, N failed.
# Per test log: a runner's own "N passed, N failed[, N waived]" line counts its cases
# (waived = known conformance gaps listed in a waiver file, reported as skipped);
# check's "Checks: N, Failures: F, Errors: E" counts its unit tests; any other test counts
# as one, by its automake result.
set -u
passed=0 failed=${GG_EXTRA_FAILED:-0} skipped=0
for dir in "$@"; do
  while IFS= read -r trs; do
    log="${trs%.trs}.log"
    res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
    line=$(grep -E '^([A-Za-z0-9_./-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" 2>/dev/null | tail -1)
    chk=$(grep -E 'Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" 2>/dev/null | tail -1)
    if [ -n "$line" ]; then
      p=$(sed -E 's/^([A-Za-z0-9_./-]+: )?([0-9]+) passed.*/\2/' <<<"$line")
      f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
      w=0; grep -qE '[0-9]+ waived' <<<"$line" && w=$(sed -E 's/.* ([0-9]+) waived.*/\1/' <<<"$line")
      # The runners count a waived case under "waived" only, never also under "failed".
      passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + w))
      [ "$res" = FAIL ] || [ "$res" = ERROR ] && [ "$f" -eq 0 ] && failed=$((failed + 1))
    elif [ -n "$chk" ]; then
      n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$chk")
      f=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$chk")
      e=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$chk")
      passed=$((passed + n - f - e)); failed=$((failed + f + e))
      [ "$res" = FAIL ] || [ "$res" = ERROR ] && [ $((f + e)) -eq 0 ] && failed=$((failed + 1))
    else
      case "$res" in
        PASS|XFAIL) passed=$((passed + 1)) ;;
        SKIP) skipped=$((skipped + 1)) ;;
        *) failed=$((failed + 1)) ;;
      esac
    fi
  done < <(find "$dir" -name '*.trs' | sort)
done
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
