#!/bin/sh
# The NEON kernel set on AArch64, run under qemu-user: test_kernels (every NEON kernel equals
# its scalar twin bit for bit, with and without the dot-product extension), test_core and
# test_models (whole models within their bounds, every set giving the same logits). Needs
# Debian's gcc-aarch64-linux-gnu and qemu-user; skipped, saying so, without them.
cd "$(dirname "$0")/.." || exit 1
CC=aarch64-linux-gnu-gcc
QEMU="qemu-aarch64 -L /usr/aarch64-linux-gnu"
if ! command -v $CC >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
  echo "SKIP: NEON tests need $CC and qemu-aarch64 (apt-get install gcc-aarch64-linux-gnu qemu-user)"
  echo "test_neon: 0 passed, 0 failed"; exit 0
fi
T=build/neon; mkdir -p "$T"
pass=0; fail=0
run() { # name, extra cflags, qemu cpu
  if ! $CC -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror $2 -I. "tests/$1.c" -o "$T/$1$3" -lm -lpthread; then
    fail=$((fail + 1)); echo "FAIL: $1 ($2) does not build for AArch64"; return
  fi
  out=$($QEMU ${4:+-cpu $4} "$T/$1$3" 2>&1); rc=$?
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  printf '%s\n' "$out" | grep -E 'FAIL|set .* runs here' | sed "s/^/  [$1$3] /"
  if [ $rc -eq 0 ] && [ -n "$line" ]; then pass=$((pass + 1)); echo "  $1$3 under qemu: $line"
  else fail=$((fail + 1)); echo "FAIL: $1$3 under qemu (exit $rc): $line"; fi
}
# The model files test_models reads, when the script runs alone (under make test they are up to
# date); MAKEFLAGS cleared so a run under make -j2 does not ask for the parent's jobserver.
MAKEFLAGS= make -s test-models > /dev/null || { fail=$((fail + 1)); echo "FAIL: make test-models"; }
run test_kernels "" ""
run test_kernels "-march=armv8.2-a+dotprod" "_dotprod" max
run test_models "" ""
run test_core "-fno-tree-vectorize" "" # gcc 12's AArch64 vectorizer crashes (ICE) on a test loop
echo "test_neon: $pass passed, $fail failed"
[ $fail -eq 0 ]
