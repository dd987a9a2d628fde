#!/bin/sh
# Runs every test program given and the shell suites, then prints the total "N passed, N failed".
# Each program prints its own "name: N passed, N failed" line; skips are reported as SKIP lines,
# notes (a retried run, say) as NOTE lines.
# SAN=1: the programs are a sanitizer (or other special) build; the shell suites then run only
# when BIN names that build's command-line programs (BIN=build/san), and not test_neon.sh
# (qemu), test_windows.sh (wine) or test_unicode.sh (Python): they build or run their own
# programs, the same in every pass, so they test nothing such a build changes.
passed=0; failed=0; log=build/test.log
: > "$log"
for t in "$@"; do
  [ -x "$t" ] || continue
  echo "== $t"
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out" | tee -a "$log" | grep -E 'FAIL|SKIP|NOTE|maxdiff|passed,|ERROR|runtime error' || true
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  p=$(printf '%s' "$line" | sed -E 's/(.* )?([0-9]+) passed.*/\2/'); f=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  [ -n "$line" ] || { p=0; f=1; echo "$t printed no summary (exit $rc)"; }
  [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
  passed=$((passed + p)); failed=$((failed + f))
done
if [ -z "$SAN" ] || [ -n "$BIN" ]; then
  for sh in tests/test_*.sh; do
    [ -f "$sh" ] || continue
    case "$sh" in tests/test_neon.sh|tests/test_windows.sh|tests/test_unicode.sh) [ -n "$SAN" ] && continue;; esac
    echo "== $sh${BIN:+ (BIN=$BIN)}"
    out=$(SHARED="$SHARED" BIN="${BIN:-build}" sh "$sh" 2>&1); rc=$?
    printf '%s\n' "$out" | tee -a "$log" | grep -E 'FAIL|SKIP|NOTE|maxdiff|passed,|ERROR|runtime error' || true
    line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$line" | sed -E 's/(.* )?([0-9]+) passed.*/\2/'); f=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
    [ -n "$line" ] || { p=0; f=1; echo "$sh printed no summary (exit $rc)"; }
    [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
    passed=$((passed + p)); failed=$((failed + f))
  done
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
