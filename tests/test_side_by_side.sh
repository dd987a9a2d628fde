#!/bin/sh
# tests/test_side_by_side.sh - tools/side_by_side.sh's arithmetic: stand-ins for llama-bench and
# tfm-bench print known figures, run after run; the medians over the pairs, the pair ratios'
# median and range, and a failed run are checked against values worked out by hand. No
# llama.cpp and no model needed (the stand-ins print what the real programs print).
cd "$(dirname "$0")/.." || exit 1
repo=$PWD
pass=0; fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/gguf"
: > "$tmp/gguf/pythia410m-q4_0.gguf"

# Each stand-in prints the next line of its figures file (prompt and decode tokens/s) per call.
cat > "$tmp/bin/llama-bench" <<'EOF'
#!/bin/sh
n=$(cat "$FIG.llama.n" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$FIG.llama.n"
echo "$*" > "$FIG.llama.args"
set -- $(sed -n "${n}p" "$FIG.llama")
echo '"build_commit","model_type","n_prompt","n_gen","avg_ts","stddev_ts"'
echo "\"x\",\"m\",\"128\",\"0\",\"$1\",\"0.5\""
echo "\"x\",\"m\",\"0\",\"32\",\"$2\",\"0.1\""
EOF
cat > "$tmp/bin/tfm-bench" <<'EOF'
#!/bin/sh
n=$(cat "$FIG.tfm.n" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$FIG.tfm.n"
echo "$*" > "$FIG.tfm.args"
set -- $(sed -n "${n}p" "$FIG.tfm")
[ "$1" = none ] && { echo "tfm-bench: cannot open the model" >&2; exit 1; }
echo "threads 2"
echo "  prompt         128 tokens: $1 tokens/s = 1 GFLOP/s = 1% of FMA peak"
echo "  decode         32 tokens: $2 tokens/s = 1 GB/s of weights = 1% of read bandwidth"
EOF
cat > "$tmp/bin/tfm-convert" <<'EOF'
#!/bin/sh
: > "$3"
EOF
chmod +x "$tmp/bin/llama-bench" "$tmp/bin/tfm-bench" "$tmp/bin/tfm-convert"

# run NAME PAIRS: the script over the figures files $tmp/NAME.llama / .tfm; prints its output
run() {
  rm -f "$tmp/$1.llama.n" "$tmp/$1.tfm.n"
  (cd "$tmp" && FIG="$tmp/$1" MMAP=${MMAP:-1} BIN="$tmp/bin" PAIRS=$2 sh "$repo/tools/side_by_side.sh" "$tmp/bin/llama-bench" "$tmp/gguf" q4_0 2 2>&1)
}
check() { # check WHAT EXPECTED ACTUAL
  case $3 in
    *"$2"*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: $1: expected '$2' in: $3" ;;
  esac
}

# Three pairs: prompt ratios 1.50, 1.27, 1.67 (median 1.50), decode 1.20, 1.09, 1.11 (1.11).
printf '100 10\n110 11\n90 9\n' > "$tmp/a.llama"
printf '150 12\n140 12\n150 10\n' > "$tmp/a.tfm"
out=$(run a 3)
check "three pairs: medians" "llama.cpp prompt   100.0 decode  10.00 | tfm.h prompt   150.0 decode  12.00" "$out"
check "three pairs: ratios" "ratio prompt 1.50 (1.27-1.67) decode 1.11 (1.09-1.20)" "$out"
check "three pairs: every run made" "3" "$(cat "$tmp/a.tfm.n")"

# Mapped files unless MMAP=0, which reads them into memory on both sides.
check "mapped: llama-bench" "-mmp 1" "$(cat "$tmp/a.llama.args")"
case $(cat "$tmp/a.tfm.args") in *--no-mmap*) fail=$((fail + 1)); echo "FAIL: mapped: tfm-bench got --no-mmap" ;; *) pass=$((pass + 1)) ;; esac
out=$(MMAP=0 run a 3)
check "MMAP=0: llama-bench" "-mmp 0" "$(cat "$tmp/a.llama.args")"
check "MMAP=0: tfm-bench" "--no-mmap" "$(cat "$tmp/a.tfm.args")"
check "MMAP=0: the same figures" "ratio prompt 1.50 (1.27-1.67) decode 1.11 (1.09-1.20)" "$out"

# Two pairs: the medians are the means of the two.
printf '100 10\n200 20\n' > "$tmp/b.llama"
printf '150 10\n200 40\n' > "$tmp/b.tfm"
out=$(run b 2)
check "two pairs" "llama.cpp prompt   150.0 decode  15.00 | tfm.h prompt   175.0 decode  25.00 | ratio prompt 1.25 (1.00-1.50) decode 1.50 (1.00-2.00)" "$out"

# A tfm-bench run that fails drops its pair; the others still count.
printf '100 10\n100 10\n100 10\n' > "$tmp/c.llama"
printf 'none\n120 11\n130 12\n' > "$tmp/c.tfm"
out=$(run c 3)
check "a failed run is skipped" "ratio prompt 1.25 (1.20-1.30) decode 1.15 (1.10-1.20)" "$out"

# No complete pair at all: said so, and the script fails.
printf '100 10\n' > "$tmp/d.llama"
printf 'none\n' > "$tmp/d.tfm"
out=$(run d 1); rc=$?
check "no pair: message" "no complete pair of runs" "$out"
if [ "$rc" -ne 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: no pair: exit status 0"; fi

echo "test_side_by_side: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
