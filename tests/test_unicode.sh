#!/bin/sh
# tests/test_unicode.sh - tfm.h's >>unicode tables are exactly what tools/gen_unicode.py generates
# (make unicode-check runs the same). Python standard library only, no network, about a second;
# skipped without /usr/bin/python3 or when its unicodedata has another Unicode version.
cd "$(dirname "$0")/.." || exit 1
PY=${PY:-/usr/bin/python3}
if [ ! -x "$PY" ]; then
  echo "SKIP: $PY not found: tfm.h's Unicode tables not regenerated"; echo "test_unicode: 0 passed, 0 failed"; exit 0
fi
out=$("$PY" tools/gen_unicode.py --check tfm.h 2>&1); rc=$?
case $rc in
  0) echo "test_unicode: 1 passed, 0 failed" ;;
  2) echo "SKIP: $out"; echo "test_unicode: 0 passed, 0 failed" ;;
  *) echo "FAIL: $out"; echo "test_unicode: 0 passed, 1 failed"; exit 1 ;;
esac
