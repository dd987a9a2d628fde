#!/bin/sh
# test_demo.sh - tfm-perplexity on the demo model reproduces the float64 reference cross-entropy
# of models/demo/reference/heldout.txt (windows of 64 tokens; models/demo/train_demo.py wrote it),
# and the quantized conversions stay close to it: perplexity of tfm-convert --type q8_0 within
# 0.5% of the f32 conversion's, q5_0 / q5_1 within 1%, q4_0 / q4_k / q4_k_m / q6_k within 3%.
# Run from the repository root after `make build/demo.tfm build/tfm-perplexity build/tfm-convert`.
REF=models/demo/reference
MODEL=build/demo.tfm
PPL=${BIN:-build}/tfm-perplexity
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
# quantized conversions of the same checkpoint: perplexity against f32's
CONV=${BIN:-build}/tfm-convert
T=$(mktemp -d "${TMPDIR:-/tmp}/test_demo.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
ppl() { $PPL -m "$1" -f $REF/heldout.txt --ctx 64 2>/dev/null | sed -n 's/^perplexity: \([0-9.eE+-]*\)$/\1/p' | head -n 1; }
if [ -x $CONV ] && [ -d models/demo ]; then
  base=""
  for t in f32 q8_0 q6_k q5_1 q5_0 q4_k_m q4_k q4_0; do
    if ! $CONV models/demo -o "$T/$t.tfm" --type $t --quiet 2> "$T/err"; then fail "convert --type $t"; cat "$T/err"; continue; fi
    p=$(ppl "$T/$t.tfm")
    [ -n "$p" ] || { fail "no perplexity for $t"; continue; }
    if [ $t = f32 ]; then base=$p; ok; echo "perplexity f32: $p"; continue; fi
    case $t in q8_0) bound=0.005 ;; q5_*) bound=0.01 ;; *) bound=0.03 ;; esac
    rel=$(awk -v a="$p" -v b="$base" 'BEGIN { printf "%.5f", (a - b) / b }')
    echo "perplexity $t: $p ($rel relative to f32, bound +-$bound; $(wc -c < "$T/$t.tfm" | tr -d ' ') bytes)"
    if awk -v r="$rel" -v b="$bound" 'BEGIN { if (r < 0) r = -r; exit !(r <= b) }'; then ok
    else fail "$t perplexity $p is $rel away from f32's $base (bound $bound)"; fi
  done
fi
summary
