#!/bin/sh
# Windows: the header builds with mingw-w64 (strict C99 warnings, and C++11 when its g++ is
# installed), and the test programs, cross-compiled, pass under wine64 (model files opened by
# path go through CreateFileMapping; test_embed checks that they are mapped, not read).
# Skipped, saying so, without x86_64-w64-mingw32-gcc or wine (Debian: gcc-mingw-w64-x86-64,
# wine64). Built with -march=native like the native tests: mingw-w64's libm fmaf is not a
# single rounding, so its scalar kernel twin (compiled without FMA instructions) differs from
# the vector kernels. A program that prints no summary line at all runs once more, with NOTE
# lines that show wine's last output; a second such run fails.
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# Runs build/win/$1.exe under wine: its output in out, exit code in rc, summary line in line.
run_exe() {
  out=$(SHARED="$SHARED" "$WINE" "$W/$1.exe" 2>&1); rc=$?
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
}
MINGW=x86_64-w64-mingw32-gcc
WINE=$(command -v wine64 || command -v wine)
if ! command -v $MINGW > /dev/null || [ -z "$WINE" ]; then
  echo "SKIP test_windows: needs $MINGW and wine64 (apt-get install gcc-mingw-w64-x86-64 wine64)"
  echo "test_windows: 0 passed, 0 failed"; exit 0
fi
W=build/win
mkdir -p "$W"
export WINEDEBUG=-all WINEPREFIX="$PWD/build/wineprefix"
STRICT="-std=c99 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wconversion -Wsign-conversion -Wstrict-prototypes -Wmissing-prototypes -Wdouble-promotion"
printf '#define TFM_IMPLEMENTATION\n#include "tfm.h"\n' > "$W/impl.c"
$MINGW $STRICT -I. -c "$W/impl.c" -o "$W/impl.o" && ok || bad "tfm.h does not build with $MINGW $STRICT"
$MINGW $STRICT -DTFM_NO_SIMD -DTFM_NO_MMAP -I. -c "$W/impl.c" -o "$W/impl_nosimd.o" && ok || bad "TFM_NO_SIMD TFM_NO_MMAP build"
if command -v x86_64-w64-mingw32-g++ > /dev/null; then
  cp "$W/impl.c" "$W/impl.cpp"
  x86_64-w64-mingw32-g++ -std=c++11 -Wall -Wextra -Werror -fno-exceptions -fno-rtti -I. -c "$W/impl.cpp" -o "$W/impl_cpp.o" \
    && ok || bad "tfm.h does not build as C++11 with mingw-w64"
else
  echo "SKIP mingw-w64 C++ build: no x86_64-w64-mingw32-g++ (g++-mingw-w64-x86-64)"
fi
# The model files test_models and test_demo read, as in tests/test_neon.sh.
MAKEFLAGS= make -s test-models > /dev/null || bad "make test-models"
for t in test_core test_embed test_kernels test_models test_tokenizer test_demo; do
  if ! $MINGW -std=c99 -O2 -march=native -Wall -Wextra -Wpedantic -Werror -I. "tests/$t.c" -o "$W/$t.exe" -lm; then
    bad "$t does not build with mingw-w64"; continue
  fi
  run_exe "$t"
  if [ -z "$line" ]; then
    # No summary at all: the program never ran to its end. Show what wine printed and run it
    # once more, saying so (a CI run once saw test_demo exit 1 here with no output of its own,
    # then pass in every later run; a failure twice in a row still fails).
    echo "NOTE: $t printed no summary under wine (exit $rc); its last lines:"
    printf '%s\n' "$out" | tail -n 5 | sed 's/^/NOTE:   /'
    run_exe "$t"
    [ -z "$line" ] && printf '%s\n' "$out" | tail -n 5 | sed 's/^/NOTE:   /'
  fi
  printf '%s\n' "$out" | grep -E '^FAIL|^SKIP' | head -5
  if [ "$rc" -eq 0 ] && [ -n "$line" ]; then ok; echo "  under wine: $line"; else bad "$t under wine (exit $rc): $line"; fi
done
echo "test_windows: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
