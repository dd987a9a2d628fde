#!/bin/sh
# tests/test_llama2c.sh - llama2.c checkpoints through build/tfm-convert, proven against what
# llama2.c's run.c itself computes on stories260K ($SHARED/models/stories260K.ref, README.txt):
#   - logits of all 69 positions of tokens.txt (BOS first) within 1e-4 of logits.f32, f32 and
#     (looser, stated below) f16; the greedy ids of tokens.txt;
#   - greedy text for "Once upon a time" and "Lily wanted" character for character (run.c -n
#     counts positions including the prompt: -n here = 200 - prompt tokens after BOS);
#   - encode.txt (run.c's ids, with BOS, no EOS) against build/tfm-tokenize;
#   - version 1 ("ak42") and unshared-classifier files rebuilt here from the version 0 one;
#   - hostile files: truncated, one byte too long, bad headers, bad tokenizers: exit 1, an
#     "error:" line, nothing left behind.
# Run from the project root after `make` (make test does). Prints "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
SHARED=${SHARED:-../shared}
BIN=${BIN:-build}
CONV=$BIN/tfm-convert GEN=$BIN/tfm-generate TOK=$BIN/tfm-tokenize PPL=$BIN/tfm-perplexity
MODELS=$SHARED/models
REF=$MODELS/stories260K.ref
BIN0=$MODELS/stories260K.bin
TOKBIN=$MODELS/tok512.bin
pass=0; fail=0

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
expect_eq() { if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }

if [ ! -f "$BIN0" ] || [ ! -f "$TOKBIN" ] || [ ! -f "$REF/logits.f32" ]; then
  echo "SKIP test_llama2c: $MODELS/stories260K.bin, tok512.bin or stories260K.ref not found"
  echo "test_llama2c: 0 passed, 0 failed"; exit 0
fi
for p in "$CONV" "$GEN" "$TOK" "$PPL"; do
  [ -x "$p" ] || { echo "FAIL: $p not built"; echo "test_llama2c: 0 passed, 1 failed"; exit 1; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/test_llama2c.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

# --- byte helpers ---------------------------------------------------------------------------
u32() { od -An -v -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }
i32() { od -An -v -t d4 -j "$2" -N 4 "$1" | tr -d ' '; }
f32() { od -An -v -t f4 -j "$2" -N 4 "$1" | tr -d ' '; }
u64() { od -An -v -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }
fsize() { wc -c < "$1" | tr -d ' '; }
byte() { printf "\\$(( ($1 >> 6) * 100 + (($1 >> 3) & 7) * 10 + ($1 & 7) ))"; }
i32bytes() { for v in "$@"; do u=$((v & 4294967295))
  byte $((u & 255)); byte $(((u >> 8) & 255)); byte $(((u >> 16) & 255)); byte $((u >> 24)); done; }
# range FILE OFFSET BYTES: the raw bytes
range() { tail -c +$(($2 + 1)) "$1" | head -c "$3"; }
# maxdiff A B N_VOCAB: "maxdiff worst_row rows" of two float32 files of [rows, N_VOCAB]
maxdiff() {
  od -An -v -t f4 "$1" | tr -s ' ' '\n' | grep -v '^$' > "$T/a.txt"
  od -An -v -t f4 "$2" | tr -s ' ' '\n' | grep -v '^$' > "$T/b.txt"
  paste "$T/a.txt" "$T/b.txt" | awk -v nv="$3" '
    { d = $1 - $2; if (d < 0) d = -d; r = int((NR - 1) / nv); if (d > row[r]) row[r] = d }
    END { m = 0; w = 0; for (i = 0; i < NR / nv; i++) if (row[i] > m) { m = row[i]; w = i }
          printf "%.3g %d %d\n", m, w, NR / nv }'
}
# le X Y: X <= Y as numbers
le() { awk -v x="$1" -v y="$2" 'BEGIN { exit !(x + 0 <= y + 0) }'; }

# expect_fail WHAT PATTERN -- command...: exit 1, a matching "error:" line, no output left
expect_fail() {
  what=$1; pat=$2; shift 3
  rm -f "$T/bad.tfm" "$T/bad.tfm.tmp"
  "$@" > "$T/stdout" 2> "$T/stderr"; rc=$?
  if [ "$rc" -ne 1 ]; then bad "$what: exit $rc, want 1"; cat "$T/stderr"; return; fi
  if ! grep -q "error:.*$pat" "$T/stderr"; then
    bad "$what: no error matching '$pat'"; cat "$T/stderr"; return; fi
  if [ -e "$T/bad.tfm" ] || [ -e "$T/bad.tfm.tmp" ]; then bad "$what: output left behind"; return; fi
  ok
}

# --- convert (f32), with --check ------------------------------------------------------------
M=$T/s.tfm
if "$CONV" "$BIN0" --tokenizer "$TOKBIN" -o "$M" --check > "$T/check" 2> "$T/err" &&
   grep -q "check: ok" "$T/check"; then ok; else bad "convert stories260K: $(cat "$T/err" "$T/check")"; fi
[ -f "$M" ] || { echo "test_llama2c: $pass passed, $((fail + 1)) failed"; exit 1; }

# header: arch llama, vocab, ctx, layers, heads, kv heads (GQA), dims, rope, eps, kinds
expect_eq "header ints" "$(for o in 16 20 24 28 32 36 40 44 48 52; do printf '%s ' "$(u32 "$M" $o)"; done)" \
  "3 512 512 5 8 4 64 8 172 8 "
expect_eq "rope_theta" "$(f32 "$M" 56)" "10000"
expect_eq "norm_eps" "$(f32 "$M" 60)" "1e-05"
expect_eq "norm act ffn residual pos" \
  "$(for o in 64 68 72 76 80; do printf '%s ' "$(u32 "$M" $o)"; done)" "1 2 1 0 2 "
expect_eq "tensors (tied: no output.w)" "$(u32 "$M" 84)" "47"
B=$(u64 "$M" 96)
expect_eq "tokenizer kind n_tokens n_merges flags" \
  "$(for o in 0 4 8 12; do printf '%s ' "$(u32 "$M" $((B + o)))"; done)" "2 512 0 6 "
expect_eq "bos eos unk pad" "$(for o in 20 24 28 32; do printf '%s ' "$(i32 "$M" $((B + o)))"; done)" \
  "1 2 0 -1 "

# --- logits of the 69 reference positions -----------------------------------------------------
IDS=$(tail -n 1 "$REF/tokens.txt")
NV=512
"$GEN" -m "$M" --tokens "$IDS" -n 0 -t 1 --dump-logits "$T/l32.f32" > /dev/null 2> "$T/err" ||
  bad "dump logits: $(cat "$T/err")"
set -- $(maxdiff "$T/l32.f32" "$REF/logits.f32" $NV)
echo "f32 logits vs llama2.c run.c: maxdiff $1 over $3 positions (worst position $2)"
expect_eq "f32 logit rows" "$3" "69"
if le "$1" 1e-4; then ok; else bad "f32 logits maxdiff $1 > 1e-4 (position $2)"; fi

# greedy ids (a model converted without --tokenizer prints ids): tokens.txt = 5 prompt + 64
if "$CONV" "$BIN0" -o "$T/ids.tfm" --quiet 2> "$T/err" && grep -q "warning:.*token ids only" "$T/err"
then ok; else bad "no --tokenizer: a warning expected: $(cat "$T/err")"; fi
expect_eq "no tokenizer: n_tokens 0" "$(u64 "$T/ids.tfm" 104)" "0"
"$GEN" -m "$T/ids.tfm" --tokens "$(echo "$IDS" | cut -d' ' -f1-5)" -n 64 --temp 0 -t 1 \
  > "$T/ids.out" 2> "$T/err" || bad "greedy ids: $(cat "$T/err")"
expect_eq "greedy ids = tokens.txt" "$(tr -s ' \n' '  ' < "$T/ids.out" | sed 's/ *$//')" "$IDS"

# --- greedy text as run.c prints it -----------------------------------------------------------
greedy() { # PROMPT N_PROMPT_AFTER_BOS FILE
  "$GEN" -m "$M" -p "$1" -n $((200 - $2)) --temp 0 -t 1 > "$T/greedy.out" 2> "$T/err" ||
    bad "greedy '$1': $(cat "$T/err")"
  if cmp -s "$T/greedy.out" "$3"; then ok; else
    bad "greedy '$1' differs from $(basename "$3"): $(cmp "$T/greedy.out" "$3")"; fi
}
greedy "Once upon a time" 4 "$REF/greedy_once_upon_a_time.txt"
expect_eq "prompt 'Lily wanted' ids" "$("$TOK" -m "$M" "Lily wanted")" "317 391 266"
greedy "Lily wanted" 3 "$REF/greedy_lily_wanted.txt"
grep -q "prompt: 4 tokens" "$T/err" && ok || bad "-p puts BOS first: $(cat "$T/err")"

# a generated BOS ends the text, as in run.c (stories260K starts each story with BOS; with this
# seed the first story ends within 500 tokens and used to print "<s>" and go on)
"$GEN" -m "$M" -p "Once upon a time" -n 500 --temp 1 --seed 3 -t 1 > "$T/s.out" 2> "$T/err" ||
  bad "sampling: $(cat "$T/err")"
if grep -q "<s>" "$T/s.out"; then bad "a generated BOS was printed instead of ending the text"
else ok; fi

# --- encode.txt: run.c's ids with BOS, no EOS; --add-special wraps in BOS ... EOS -------------
n=0
while IFS="$(printf '\t')" read -r text ids; do
  n=$((n + 1))
  expect_eq "encode '$text' --add-special" "$("$TOK" -m "$M" --add-special "$text")" "$ids 2"
  expect_eq "encode '$text'" "1 $("$TOK" -m "$M" "$text")" "$ids"
done < "$REF/encode.txt"
expect_eq "encode.txt cases" "$n" "3"
expect_eq "decode BOS EOS" "$("$TOK" -m "$M" --decode "1 403 407 2")" "<s> Once upon</s>"

# tfm-perplexity puts one BOS first
printf 'Once upon a time, there was a little girl named Lily.' > "$T/text.txt"
n_text=$("$TOK" -m "$M" -f "$T/text.txt" | wc -w | tr -d ' ')
"$PPL" -m "$M" -f "$T/text.txt" -t 1 > "$T/ppl" 2> "$T/err" || bad "perplexity: $(cat "$T/err")"
expect_eq "perplexity tokens = BOS + text" "$(sed -n 's/^tokens: //p' "$T/ppl")" "$((n_text + 1))"

# --- f16 --------------------------------------------------------------------------------------
"$CONV" "$BIN0" --tokenizer "$TOKBIN" -o "$T/s16.tfm" --type f16 --quiet 2> "$T/err" ||
  bad "convert f16: $(cat "$T/err")"
"$GEN" -m "$T/s16.tfm" --tokens "$IDS" -n 0 -t 1 --dump-logits "$T/l16.f32" > /dev/null 2>&1 ||
  bad "f16 logits"
set -- $(maxdiff "$T/l16.f32" "$REF/logits.f32" $NV)
echo "f16 logits vs llama2.c run.c (f32): maxdiff $1 over $3 positions (worst position $2)"
if le "$1" 0.02; then ok; else bad "f16 logits maxdiff $1 > 0.02 (position $2)"; fi

# --- version 1 and unshared classifiers, rebuilt from the version 0 file ----------------------
# v0 layout (bytes): header 28, embedding E, attention norms AN, wq Q, wk K, wv K, wo Q,
# FFN norms AN, w1 F, w2 F, w3 F, final norm D4, RoPE tables R.
D=64 H=172 L=5 KV=32 V=512 S=512 HS=8
E=$((V * D * 4)) AN=$((L * D * 4)) Q=$((L * D * D * 4)) K=$((L * KV * D * 4)) F=$((L * H * D * 4))
D4=$((D * 4)) R=$((2 * S * HS / 2 * 4))
expect_eq "stories260K.bin size from its header" "$(fsize "$BIN0")" \
  "$((28 + E + 2 * AN + 2 * Q + 2 * K + 3 * F + D4 + R))"
o_emb=28; o_an=$((o_emb + E)); o_wq=$((o_an + AN)); o_fn=$((o_wq + 2 * Q + 2 * K))
o_w1=$((o_fn + AN)); o_fin=$((o_w1 + 3 * F))
v1() { # SHARED_BYTE: a v1 file on stdout (classifier = a copy of the embedding when unshared)
  printf '24ka'; i32bytes 1 $D $H $L 8 4 $V $S; byte "$1"; head -c $((256 - 37)) /dev/zero
  range "$BIN0" $o_an $AN; range "$BIN0" $o_fn $AN; range "$BIN0" $o_fin $D4
  range "$BIN0" $o_emb $E; range "$BIN0" $o_wq $((2 * Q + 2 * K)); range "$BIN0" $o_w1 $((3 * F))
  [ "$1" = 1 ] || range "$BIN0" $o_emb $E
}
v1 1 > "$T/v1.bin"
"$CONV" "$T/v1.bin" --tokenizer "$TOKBIN" -o "$T/v1.tfm" --quiet 2> "$T/err" || bad "v1: $(cat "$T/err")"
if cmp -s "$T/v1.tfm" "$M"; then ok; else bad "v1 shared: .tfm differs from the v0 one"; fi

v1 0 > "$T/v1u.bin"
"$CONV" "$T/v1u.bin" --tokenizer "$TOKBIN" -o "$T/v1u.tfm" --quiet 2> "$T/err" ||
  bad "v1 unshared: $(cat "$T/err")"
{ i32bytes $D $H $L 8 4 -$V $S; tail -c +29 "$BIN0"; range "$BIN0" $o_emb $E; } > "$T/v0u.bin"
"$CONV" "$T/v0u.bin" --tokenizer "$TOKBIN" -o "$T/v0u.tfm" --quiet 2> "$T/err" ||
  bad "v0 unshared: $(cat "$T/err")"
if cmp -s "$T/v0u.tfm" "$T/v1u.tfm"; then ok; else bad "unshared: v0 and v1 .tfm differ"; fi
expect_eq "unshared: 48 tensors (output.w)" "$(u32 "$T/v0u.tfm" 84)" "48"
"$GEN" -m "$T/v0u.tfm" --tokens "$IDS" -n 0 -t 1 --dump-logits "$T/lu.f32" > /dev/null 2>&1 ||
  bad "unshared logits"
set -- $(maxdiff "$T/lu.f32" "$REF/logits.f32" $NV)
if le "$1" 1e-4; then ok; else bad "unshared classifier logits maxdiff $1 > 1e-4"; fi

# --- hostile checkpoints and tokenizers -------------------------------------------------------
O=$T/bad.tfm
head -c $(($(fsize "$BIN0") - 4)) "$BIN0" > "$T/trunc.bin"
expect_fail "truncated by 4 bytes" "means exactly 1056540" -- "$CONV" "$T/trunc.bin" -o "$O"
head -c 20000 "$BIN0" > "$T/trunc.bin"
expect_fail "truncated to 20000 bytes" "truncated" -- "$CONV" "$T/trunc.bin" -o "$O"
{ cat "$BIN0"; printf 'x'; } > "$T/long.bin"
expect_fail "one byte too many" "1056541 bytes" -- "$CONV" "$T/long.bin" -o "$O"
head -c 27 "$BIN0" > "$T/short.bin"
expect_fail "shorter than a header" "shorter than a llama2.c header" -- "$CONV" "$T/short.bin" -o "$O"
hdr() { { i32bytes "$@"; tail -c +29 "$BIN0"; } > "$T/hdr.bin"; }
hdr 0 $H $L 8 4 $V $S
expect_fail "dim 0" "not a llama2.c version 0" -- "$CONV" "$T/hdr.bin" -o "$O"
hdr $D $H $L 8 3 $V $S
expect_fail "heads not a multiple of kv heads" "n_kv_heads 3" -- "$CONV" "$T/hdr.bin" -o "$O"
hdr $D $H $L 7 7 $V $S
expect_fail "dim not a multiple of heads" "n_heads 7" -- "$CONV" "$T/hdr.bin" -o "$O"
hdr $D $H $L 8 4 $V -1
expect_fail "negative seq_len" "seq_len -1" -- "$CONV" "$T/hdr.bin" -o "$O"
hdr $D $H 100000 8 4 $V $S
expect_fail "100000 layers" "layer count out of the supported range" -- "$CONV" "$T/hdr.bin" -o "$O"
hdr 2147483640 2147483647 512 4 4 -2147483647 2147483647
expect_fail "huge dims" "vocab_size out of the supported range" -- "$CONV" "$T/hdr.bin" -o "$O"
hdr $D $H 6 8 4 $V $S
expect_fail "one layer more than the data" "means exactly" -- "$CONV" "$T/hdr.bin" -o "$O"
{ printf '24ka'; i32bytes 2; tail -c +9 "$T/v1.bin"; } > "$T/v2.bin"
expect_fail "version 2 (int8)" "version 2 is not supported" -- "$CONV" "$T/v2.bin" -o "$O"
{ head -c 36 "$T/v1.bin"; byte 7; tail -c +38 "$T/v1.bin"; } > "$T/v1f.bin"
expect_fail "shared_classifier 7" "shared_classifier byte is 7" -- "$CONV" "$T/v1f.bin" -o "$O"
{ head -c 36 "$T/v1.bin"; byte 0; tail -c +38 "$T/v1.bin"; } > "$T/v1f.bin"
expect_fail "v1 unshared without a classifier" "means exactly" -- "$CONV" "$T/v1f.bin" -o "$O"
head -c 200 "$T/v1.bin" > "$T/v1s.bin"
expect_fail "v1 header cut short" "256-byte" -- "$CONV" "$T/v1s.bin" -o "$O"

head -c 3000 "$TOKBIN" > "$T/tok.bin"
expect_fail "truncated tokenizer" "tok.bin: token [0-9]*: the file ends" -- \
  "$CONV" "$BIN0" --tokenizer "$T/tok.bin" -o "$O"
{ cat "$TOKBIN"; i32bytes 0 1; printf 'x'; } > "$T/tok.bin"
expect_fail "tokenizer with a token too many" "bytes left after the model's 512 tokens" -- \
  "$CONV" "$BIN0" --tokenizer "$T/tok.bin" -o "$O"
{ i32bytes 0; tail -c +5 "$TOKBIN"; } > "$T/tok.bin"
expect_fail "max_token_length 0" "no positive max_token_length" -- \
  "$CONV" "$BIN0" --tokenizer "$T/tok.bin" -o "$O"
{ i32bytes 3; tail -c +5 "$TOKBIN"; } > "$T/tok.bin"
expect_fail "token longer than max_token_length" "outside 0..max_token_length" -- \
  "$CONV" "$BIN0" --tokenizer "$T/tok.bin" -o "$O"
{ head -c 4 "$TOKBIN"; i32bytes 2139095040; tail -c +9 "$TOKBIN"; } > "$T/tok.bin"
expect_fail "infinite score" "token 0 has a score that is not finite" -- \
  "$CONV" "$BIN0" --tokenizer "$T/tok.bin" -o "$O"
expect_fail "missing tokenizer" "cannot open" -- "$CONV" "$BIN0" --tokenizer "$T/none.bin" -o "$O"
expect_fail "--tokenizer without value" "needs a value" -- "$CONV" "$BIN0" -o "$O" --tokenizer
mkdir -p "$T/dir"
expect_fail "--tokenizer with a directory" "--tokenizer is for llama2.c" -- \
  "$CONV" "$T/dir" --tokenizer "$TOKBIN" -o "$O"

echo "test_llama2c: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
