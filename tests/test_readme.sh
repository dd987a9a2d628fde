#!/bin/sh
# Every C snippet of README.md compiles as C99 (-Wall -Wextra -Wpedantic -Werror) and as C++11
# (-Wall -Wextra -Werror), each on its own (compile only; the examples are the whole programs).
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0
CC=${CC:-cc}; CXX=${CXX:-c++}
T=build/test_readme.$$
mkdir -p "$T"; trap 'rm -rf "$T"' EXIT
awk -v dir="$T" '/^```c$/ {n++; on = 1; next} /^```$/ {on = 0} on {print > (dir "/snippet" n ".c")}' README.md
n=0
for f in "$T"/snippet*.c; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  if $CC -std=c99 -Wall -Wextra -Wpedantic -Werror -I. -c "$f" -o "$f.o" 2> "$f.err"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: README snippet $(basename "$f") as C99:"; head -5 "$f.err"; fi
  if $CXX -x c++ -std=c++11 -Wall -Wextra -Werror -I. -c "$f" -o "$f.o" 2> "$f.err"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: README snippet $(basename "$f") as C++11:"; head -5 "$f.err"; fi
done
[ "$n" -ge 6 ] || { fail=$((fail + 1)); echo "FAIL: only $n C snippets found in README.md"; }
echo "test_readme: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
