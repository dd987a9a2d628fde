#!/bin/sh
# The embedding examples (examples/threads.c, examples/custom_alloc.c) build warning-free and do
# what their comments promise, on the demo model:
#   threads: two sessions on two threads over one model write exactly what a single-threaded
#            greedy tfm-generate writes for each prompt;
#   custom_alloc: model and session fit in the host's arena and 32 tokens allocate nothing.
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
M=build/demo.tfm
T=build/test_examples.$$
mkdir -p "$T"; trap 'rm -rf "$T"' EXIT
if [ ! -f "$M" ]; then echo "FAIL: $M missing (make builds it from models/demo)"; echo "0 passed, 1 failed"; exit 1; fi
CC=${CC:-cc}
GEN=${BIN:-build}/tfm-generate
EXAMPLE_CFLAGS=${EXAMPLE_CFLAGS:-} # e.g. sanitizer flags (make sanitize)
$CC -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror $EXAMPLE_CFLAGS -pthread -I. examples/threads.c -o "$T/threads" -lm && ok || bad "threads.c does not build"
$CC -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror $EXAMPLE_CFLAGS -I. examples/custom_alloc.c -o "$T/custom_alloc" -lm && ok || bad "custom_alloc.c does not build"

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
echo "test_examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
