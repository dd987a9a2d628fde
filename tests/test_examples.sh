#!/bin/sh
# The examples build warning-free as C99 and as C++11 (-O2 -Wall -Wextra -Werror; -Wpedantic for
# C), and do what their comments promise, on the demo model:
#   minimal: continues the prompt and exits 0;
#   threads: two sessions on two threads over one model write exactly what a single-threaded
#            greedy tfm-generate writes for each prompt;
#   custom_alloc: model and session fit in the host's arena and 32 tokens allocate nothing;
#   npc: both characters speak, the restored save says what the original said, worst_step_ms;
#   choose: the replies ranked best first, their log-probs equal to log-softmax of tfm-generate's
#           dumped logits (computed here, in Python), the action one of the strings;
#   pak: a model read through tfm_io from a pak continues a prompt as tfm-generate does;
#   tfm-lab: every ablation in the table, the permutation test passing, --json and --plot.
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
M=build/demo.tfm
T=build/test_examples.$$
mkdir -p "$T"; trap 'rm -rf "$T"' EXIT
if [ ! -f "$M" ]; then echo "FAIL: $M missing (make builds it from models/demo)"; echo "0 passed, 1 failed"; exit 1; fi
CC=${CC:-cc}; CXX=${CXX:-c++}; PYTHON=${PYTHON:-/usr/bin/python3}
GEN=${BIN:-build}/tfm-generate
EXAMPLE_CFLAGS=${EXAMPLE_CFLAGS:-} # e.g. sanitizer flags (make sanitize)
for f in examples/*.c; do
  e=$(basename "$f" .c)
  $CC -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror $EXAMPLE_CFLAGS -pthread -I. "$f" -o "$T/$e" -lm && ok || bad "$f does not build as C99"
  $CXX -x c++ -std=c++11 -O2 -Wall -Wextra -Werror -pthread -I. "$f" -o "$T/$e.cpp" -lm && ok || bad "$f does not build as C++11"
done

"$T/minimal" "$M" "In the beginning" > "$T/min.out" 2> "$T/err" && ok || { bad "minimal exit $?"; cat "$T/err"; }
grep -q "^In the beginning." "$T/min.out" && ok || bad "minimal: no continuation"

P1="In the beginning"; P2="And God said"
"$T/threads" "$M" "$P1" "$P2" > "$T/threads.out" 2> "$T/err" && ok || { bad "threads exit $?"; cat "$T/err"; }
i=0
for p in "$P1" "$P2"; do
  $GEN -m "$M" -p "$p" -n 24 --temp 0 -t 1 > "$T/want" 2> /dev/null
  printf '[%d] ' $i > "$T/want.$i"; cat "$T/want" >> "$T/want.$i"
  # the thread's lines: from its "[i] " line up to the next thread's
  awk -v tag="[$i] " -v next_tag="[$((i + 1))] " 'index($0, tag) == 1 {on = 1} index($0, next_tag) == 1 {on = 0} on' "$T/threads.out" > "$T/got.$i"
  if cmp -s "$T/want.$i" "$T/got.$i"; then ok; else bad "thread $i differs from tfm-generate -t 1"; diff "$T/want.$i" "$T/got.$i" | head -5; fi
  i=$((i + 1))
done

if "$T/custom_alloc" "$M" > "$T/alloc.out" 2> "$T/err"; then ok; else bad "custom_alloc exit $?"; cat "$T/err"; fi
grep -q "allocations while generating 32 tokens: 0" "$T/alloc.out" && ok || bad "custom_alloc: allocations while generating"
grep -q "^session (KV cache for 64 positions + scratch): [1-9]" "$T/alloc.out" && ok || bad "custom_alloc: session size"
"$T/custom_alloc" /nonexistent.tfm > /dev/null 2>&1; [ $? -eq 1 ] && ok || bad "custom_alloc on a missing file: exit status"

"$T/npc" "$M" --budget-ms 4 > "$T/npc.out" 2> "$T/err" && ok || { bad "npc exit $?"; cat "$T/err"; }
grep -q "^Alice:." "$T/npc.out" && grep -q "^Bob:." "$T/npc.out" && ok || bad "npc: a character said nothing"
grep -q "restored_same=1 .*worst_step_ms=[0-9]" "$T/npc.out" && ok || bad "npc: the restored save differs, or no worst_step_ms"
grep "worst_step_ms" "$T/npc.out" | sed 's/^/  npc on the demo model: /'

"$T/choose" "$M" > "$T/choose.out" 2> "$T/err" && ok || { bad "choose exit $?"; cat "$T/err"; }
grep -q 'action: "\( went\| smote\| wept\)"' "$T/choose.out" && ok || bad "choose: no action among the choices"
if [ -x "$PYTHON" ]; then
  Q="And God said, Let there be light: and there was"
  n_q=$(build/tfm-tokenize -m "$M" "$Q" | wc -w)
  grep "log-prob" "$T/choose.out" | while read -r rank word lp rest; do
    reply=$(printf '%s' "$rest" | sed 's/^"\(.*\)"$/\1/')
    ids=$(build/tfm-tokenize -m "$M" "$Q$reply" | tr ' ' ',')
    $GEN -m "$M" --tokens "$ids" -n 0 --dump-logits "$T/l.f32" -t 1 > /dev/null 2>&1
    $PYTHON - "$T/l.f32" "$ids" "$n_q" "$lp" <<'PY' || echo "FAIL: choose: \"$reply\" scored $lp, the dumped logits say otherwise"
import math, struct, sys
raw = open(sys.argv[1], "rb").read()
ids = [int(t) for t in sys.argv[2].split(",")]
n_q, want = int(sys.argv[3]), float(sys.argv[4])
nv = len(raw) // 4 // len(ids)
rows = [struct.unpack_from("<%df" % nv, raw, 4 * nv * r) for r in range(len(ids))]
total = 0.0
for i in range(n_q, len(ids)):  # token i from the logits after token i - 1
    row = rows[i - 1]
    m = max(row)
    total += row[ids[i]] - m - math.log(sum(math.exp(x - m) for x in row))
sys.exit(0 if abs(total - want) < 2e-3 else 1)
PY
  done > "$T/choose.check"
  if grep -q FAIL "$T/choose.check"; then bad "$(cat "$T/choose.check")"; else ok; fi
  awk '/log-prob/ {print $3}' "$T/choose.out" | sort -g -r -c && ok || bad "choose: the replies are not ranked best first"
else
  echo "SKIP choose's scores against dumped logits: no $PYTHON"
fi

"$T/pak" "$M" > "$T/pak.out" 2> "$T/err" && ok || { bad "pak exit $?"; cat "$T/err"; }
$GEN -m "$M" -p "In the beginning" -n 12 --temp 0 -t 1 > "$T/want" 2> /dev/null
tail -n 1 "$T/pak.out" > "$T/got"
cmp -s "$T/want" "$T/got" && ok || { bad "pak: the model read from the pak continues differently"; diff "$T/want" "$T/got" | head -4; }
# tfm-lab: the table with every run, the permutation test passing (exit 0), --json that parses
# with the baseline's perplexity below the residual ablation's, and an SVG.
"$T/tfm-lab" "$M" -n 64 --plot "$T/lab.svg" > "$T/lab.out" 2> "$T/err" && ok || { bad "tfm-lab exit $?"; cat "$T/err"; }
grep -q "invariant: PASS" "$T/lab.out" && grep -q "^no residual" "$T/lab.out" && ok || bad "tfm-lab: table or permutation test missing"
grep -q "^<svg" "$T/lab.svg" && grep -q "</svg>" "$T/lab.svg" && ok || bad "tfm-lab --plot: no SVG"
if [ -x "$PYTHON" ]; then
  "$T/tfm-lab" "$M" -n 64 --json | "$PYTHON" -c '
import json, sys
d = json.load(sys.stdin); r = {x["name"]: x for x in d["runs"]}
sys.exit(0 if d["permutation"]["invariant"] and r["baseline"]["ppl"] * 10 < r["no residual"]["ppl"] else 1)' && ok || bad "tfm-lab --json"
fi
echo "test_examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
