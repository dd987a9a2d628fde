#!/bin/sh
# tests/test_bench.sh - tools/tfm-bench on its random `tiny` shape: --help, bad arguments, and
# the --json lines' keys and arithmetic. The expected weight bytes and multiply-adds are worked
# out here from the shape (d_model 256, 4 layers, d_ff 1024, vocab 2048, an untied head), not
# taken from tfm-bench: a prompt computes only its last token's logits, so its GFLOP/s count
# the layer matrices per token and the head once per prompt. Speeds are not checked (a
# benchmark, not a timed test), only that they are positive and the figures agree with them.
cd "$(dirname "$0")/.." || exit 1
B=${BIN:-build}
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if "$B/tfm-bench" --help > "$tmp/help" 2>&1 && grep -q '^usage: tfm-bench' "$tmp/help"; then ok; else bad "--help"; fi
for args in "-p 0" "-t 0" "--type nope" "--kernels nope" "-m $tmp/missing.tfm"; do
  # shellcheck disable=SC2086
  "$B/tfm-bench" $args -n 1 -r 1 > "$tmp/out" 2> "$tmp/err"; rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && [ -s "$tmp/err" ]; then ok; else bad "tfm-bench $args: exit $rc, message: $(head -c 200 "$tmp/err")"; fi
done

# key LINE NAME: the value of "NAME" in one JSON line (numbers and strings)
key() { printf '%s\n' "$1" | sed -n "s/.*\"$2\": \"\{0,1\}\([^,\"}]*\).*/\1/p"; }

layers=$((4 * (4 * 256 * 256 + 2 * 256 * 1024))) head=$((2048 * 256)) n_prompt=16
for ty in f32:4 f16:2; do
  t=${ty%:*} esz=${ty#*:}
  "$B/tfm-bench" --shape tiny --type "$t" -t 1,2 -p "$n_prompt" -n 4 -r 1 --json > "$tmp/json" 2> "$tmp/err" ||
    { bad "--json $t: exit $? $(head -c 200 "$tmp/err")"; continue; }
  if [ "$(wc -l < "$tmp/json")" -eq 2 ]; then ok; else bad "--json $t -t 1,2: $(wc -l < "$tmp/json") lines, not 2"; fi
  th=1
  while IFS= read -r line; do
    missing=""
    for k in model type threads n_prompt n_gen pp_tok_s tg_tok_s weight_bytes bandwidth_gbs decode_efficiency pp_gflops; do
      [ -n "$(key "$line" "$k")" ] || missing="$missing $k"
    done
    if [ -z "$missing" ]; then ok; else bad "--json $t: missing$missing in $line"; continue; fi
    if [ "$(key "$line" model)" = tiny ] && [ "$(key "$line" type)" = "$t" ] && [ "$(key "$line" threads)" = "$th" ] &&
       [ "$(key "$line" n_prompt)" = "$n_prompt" ] && [ "$(key "$line" n_gen)" = 4 ]; then ok; else bad "--json $t: labels in $line"; fi
    wb=$(key "$line" weight_bytes)
    if [ "$wb" = "$(((layers + head) * esz))" ]; then ok; else bad "--json $t: weight_bytes $wb, not $(((layers + head) * esz))"; fi
    if awk -v L="$layers" -v H="$head" -v n="$n_prompt" -v pp="$(key "$line" pp_tok_s)" \
         -v g="$(key "$line" pp_gflops)" -v tg="$(key "$line" tg_tok_s)" -v wb="$wb" -v bw="$(key "$line" bandwidth_gbs)" \
         -v e="$(key "$line" decode_efficiency)" 'BEGIN {
         want = 2 * (L + H / n) * pp / 1e9               # printed with one decimal
         if (pp <= 0 || tg <= 0 || g < want - 0.051 - want * 1e-4 || g > want + 0.051 + want * 1e-4) exit 1
         if (bw > 0 && (e < wb * tg / 1e9 / bw * 0.99 - 0.001 || e > wb * tg / 1e9 / bw * 1.01 + 0.001)) exit 1 }'; then
      ok
    else
      bad "--json $t: pp_gflops / decode_efficiency do not follow from the shape and the speeds: $line"
    fi
    th=$((th + 1))
  done < "$tmp/json"
done

# A file, mapped and read into memory (--no-mmap): the same weights, both runs complete.
if "$B/tfm-convert" tests/data/models/gpt2/model.gguf -o "$tmp/gpt2.tfm" > /dev/null 2> "$tmp/err"; then
  for mode in "" --no-mmap; do
    # shellcheck disable=SC2086
    if "$B/tfm-bench" -m "$tmp/gpt2.tfm" $mode -p 4 -n 2 -r 1 --json > "$tmp/json$mode" 2> "$tmp/err" &&
       [ "$(key "$(cat "$tmp/json$mode")" model)" = "$tmp/gpt2.tfm" ] &&
       awk -v tg="$(key "$(cat "$tmp/json$mode")" tg_tok_s)" 'BEGIN { exit !(tg > 0) }'; then ok; else bad "-m file $mode: $(cat "$tmp/json$mode" "$tmp/err" | head -c 300)"; fi
  done
  w1=$(key "$(cat "$tmp/json")" weight_bytes); w2=$(key "$(cat "$tmp/json--no-mmap")" weight_bytes)
  if [ -n "$w1" ] && [ "$w1" = "$w2" ]; then ok; else bad "-m file: weight_bytes $w1 mapped, $w2 read"; fi
else
  bad "tfm-convert of tests/data/models/gpt2/model.gguf: $(head -c 200 "$tmp/err")"
fi

echo "test_bench: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
