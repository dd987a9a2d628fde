#!/bin/sh
# test_demo.sh - tfm-perplexity on the demo model reproduces the float64 reference cross-entropy
# of models/demo/reference/heldout.txt (windows of 64 tokens; models/demo/train_demo.py wrote it).
# Run from the repository root after `make build/demo.tfm build/tfm-perplexity`.
REF=models/demo/reference
MODEL=build/demo.tfm
PPL=build/tfm-perplexity
passed=0; failed=0
ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
summary() { echo "test_demo.sh: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

if [ ! -f $REF/heldout_ce.txt ]; then
  echo "SKIP: $REF/heldout_ce.txt missing (models/demo not present)"; summary
fi
for f in $MODEL $PPL; do
  [ -f $f ] || { fail "$f missing: run make $MODEL $PPL"; summary; }
done

out=$($PPL -m $MODEL -f $REF/heldout.txt --ctx 64 2>/dev/null); rc=$?
[ $rc -eq 0 ] && ok || fail "$PPL exited with $rc"
ce=$(printf '%s\n' "$out" | sed -n 's/^cross-entropy: \([0-9.eE+-]*\) nats\/token$/\1/p' | head -n 1)
want=$(cat $REF/heldout_ce.txt)
if [ -z "$ce" ]; then
  fail "no 'cross-entropy: X nats/token' line in the output:"; printf '%s\n' "$out"
else
  ok
  echo "held-out cross-entropy --ctx 64: $ce nats/token, reference $want"
  if awk -v a="$ce" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.005 * b) }'; then
    ok
  else
    fail "cross-entropy $ce differs from the reference $want by more than 0.5%"
  fi
fi
summary
