#!/bin/sh
# tests/test_gguf.sh - tfm-convert FILE.gguf (tools/convert_gguf.c) end to end:
#  - every tests/data/models/*/model*.gguf converts (--check) and build/tfm-generate's logits on
#    tokens.txt match the folder's float64 reference (logits.f32; logits_f16.f32 for the F16
#    file; logits_q8.f32 for Q8_0, converted with --type f32: the dequantization is exact, so the
#    same 1e-4 bound; converted as they are, the Q8_0 blocks are copied and run by the integer
#    kernels, which also quantize the activations to 8 bits: bound QBOUND), and match the logits
#    of the safetensors (Hugging Face path) conversion of the same weights;
#  - header fields that differ from the Hugging Face path on purpose (llama: interleaved RoPE;
#    gpt2: untied duplicate head) and the ones that must not (rope base, rotary dims, eps);
#  - phi2 and starcoder2 GGUF files made here by tests/gen/gguf_write.py (not committed; skipped
#    without /usr/bin/python3 + NumPy), a k-quant (Q4_K/Q5_K/Q6_K) twin of tests/data/gguf/quant, and
#    llama2.c's stories260K + tok512 ($SHARED) as a llama GGUF against llama2.c's own logits
#    and against the llama2.c import path;
#  - tokenizers from GGUF metadata (tests/data/gguf/tok, README there): byte-level BPE
#    ids equal the Hugging Face path's on the same tokenizer.json, pre "starcoder" ids equal
#    Hugging Face tokenizers' own (digits_hf.txt), SentencePiece (llama2.c's tok512 as
#    llama.cpp would store it) ids equal run.c's encode.txt; --vocab-only; a model file with a
#    tokenizer;
#  - hostile files: truncated at many lengths, bad magic and version, huge counts, lengths and
#    offsets, unsupported types and values, missing / duplicate / mis-shaped tensors: exit 1,
#    one error line, no output, never a crash (also under ASan/UBSan when cc has them).
cd "$(dirname "$0")/.." || exit 1
CONV=${CONV:-${BIN:-build}/tfm-convert}
GEN=${GEN:-${BIN:-build}/tfm-generate}
TOK=${TOK:-${BIN:-build}/tfm-tokenize}
SHARED=${SHARED:-../shared}
PY=/usr/bin/python3
A=tests/data/models
T=$(mktemp -d "${TMPDIR:-/tmp}/test_gguf.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
expect_eq() { if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }

for p in "$CONV" "$GEN" "$TOK"; do
  [ -x "$p" ] || { echo "FAIL: $p not built (make)"; echo "test_gguf: 0 passed, 1 failed"; exit 1; }
done

# --- little-endian fields, byte patches, string offsets -------------------------------------
u32() { od -An -v -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }
fsize() { wc -c < "$1" | tr -d ' '; }
byte() { printf "\\$(( ($1 >> 6) * 100 + (($1 >> 3) & 7) * 10 + ($1 & 7) ))"; }
# put FILE OFFSET NBYTES VALUE: little-endian integer (up to 2^63-1) over NBYTES bytes
put() {
  i=0; while [ $i -lt "$3" ]; do byte $((($4 >> (8 * i)) & 255)); i=$((i + 1)); done |
    dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# at FILE STRING: byte offset of the first occurrence (empty if none)
at() { LC_ALL=C grep -obUa -- "$2" "$1" | head -n 1 | cut -d: -f1; }
# subst FILE FROM TO: replace the first occurrence, same length
subst() { o=$(at "$1" "$2"); [ -n "$o" ] && printf '%s' "$3" | dd of="$1" bs=1 seek="$o" conv=notrunc status=none; }
# tensor-info fields of NAME: n_dims at name end, ne[] after it, then type and offset
tinfo() { o=$(at "$1" "$2"); echo $((o + ${#2})); }

# --- logits -------------------------------------------------------------------------------------
BOUND=1e-4
QBOUND=0.25 # quantized weights run as they are: activations quantized to 8 bits per block too
QBOUND_K=0.6 # k-quants: activations in blocks of 256 (as llama.cpp's Q8_K): ~3% of the largest
             # logit (12.9) on the random k-quant fixture
floats() { od -An -v -t f4 "$1" | tr -s ' ' '\n' | grep -v '^$'; }
maxdiff() { # A.f32 B.f32 -> max |diff| or "failed" (different lengths)
  floats "$1" > "$T/a"; floats "$2" > "$T/b"
  [ -s "$T/a" ] && [ "$(wc -l < "$T/a")" -eq "$(wc -l < "$T/b")" ] || { echo failed; return; }
  paste "$T/a" "$T/b" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g", m }'
}
dump() { # MODEL DIR OUT: logits of DIR/tokens.txt
  "$GEN" -m "$1" --tokens "$(cat "$2/tokens.txt")" -n 0 -t 1 --dump-logits "$3" > /dev/null 2> "$T/gen.err" ||
    { cat "$T/gen.err"; : > "$3"; }
}
within() { [ "$2" != failed ] && awk "BEGIN { exit !($2 <= $3) }"; } # WHAT VALUE BOUND
report() { # WHAT VALUE BOUND
  if within "$1" "$2" "$3"; then ok; echo "    $1 maxdiff $2"; else bad "$1: maxdiff $2 > $3"; fi
}

# gguf_case GGUF DIR REF [--type f16]: convert, --check, logits against REF and against the
# safetensors conversion of DIR (with --type f16 too when the GGUF holds F16 matrices)
gguf_case() {
  g=$1; d=$2; ref=$3; shift 3
  case $g in *-f16.gguf) st="--type f16" ;; *) st="$*" ;; esac
  n=$(basename "$d")-$(basename "$g" .gguf)$(echo "$*" | tr -d ' -')
  F=$T/$n.tfm
  if "$CONV" "$g" -o "$F" --quiet --check "$@" > "$T/out" 2> "$T/err" && grep -q "check: ok" "$T/out"; then ok
  else bad "convert --check $g $*"; cat "$T/err" "$T/out"; return; fi
  dump "$F" "$d" "$T/$n.logits"
  b=$BOUND
  if [ $# -eq 0 ]; then case $g in *q8_0.gguf) b=$QBOUND; expect_eq "$n: blk.0.wq stays q8_0 (dtype 3)" "$(u32 "$F" $(($(at "$F" blk.0.wq) + 64)))" 3 ;; esac; fi
  report "$n vs $(basename "$ref")" "$(maxdiff "$T/$n.logits" "$ref")" "$b"
  sl="$T/$(basename "$d")-st$st.logits"
  if [ ! -f "$sl" ]; then
    # shellcheck disable=SC2086
    "$CONV" "$d" -o "$T/st.tfm" --quiet $st 2> "$T/err" || { bad "safetensors conversion of $d"; return; }
    dump "$T/st.tfm" "$d" "$sl"
  fi
  case $g in *q8_0*) return ;; esac # other weights than the safetensors file
  report "$n vs safetensors path${st:+ $st}" "$(maxdiff "$T/$n.logits" "$sl")" "$BOUND"
}

n_files=0
for g in $A/*/model*.gguf; do
  d=$(dirname "$g")
  case $g in
    *-f16.gguf) ref=$d/logits_f16.f32 ;;
    *-q8_0.gguf) ref=$d/logits_q8.f32 ;;
    *) ref=$d/logits.f32 ;;
  esac
  [ -f "$ref" ] || continue
  gguf_case "$g" "$d" "$ref"
  case $g in *-q8_0.gguf) gguf_case "$g" "$d" "$ref" --type f32 ;; esac # decoded exactly
  n_files=$((n_files + 1))
done
expect_eq "GGUF files found" "$n_files" 7
# --type f16 from an F32 GGUF = the F16 file's reference (same round-to-nearest-even)
gguf_case $A/gpt2/model.gguf $A/gpt2 $A/gpt2/logits_f16.f32 --type f16
# the Q8_0 files really hold other weights: far from the F32 reference
dump "$T/llama_tied-model-q8_0.tfm" $A/llama_tied "$T/q8.logits"
m=$(maxdiff "$T/q8.logits" $A/llama_tied/logits.f32)
if [ "$m" != failed ] && ! within q8 "$m" 1e-3; then ok; echo "    llama_tied q8_0 vs logits.f32 (F32 weights) maxdiff $m (expected > 1e-3)"
else bad "llama_tied q8_0 vs logits.f32: $m, expected > 1e-3"; fi

# every block type: random Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 blocks and BF16/F16 matrices against the
# same weights decoded by an independent NumPy decoder into an all-F32 file (gguf_write.py
# --quant-fixture): decoded with --type f32, equal logits (the .tfm files are byte-identical
# unless the compiler fuses d*q + m into an FMA); as they are (Q4_0 / Q5_0 / Q5_1 / Q8_0 blocks
# copied and run natively, Q4_1 requantized to q8_0 with a notice each), within QBOUND
Q=tests/data/gguf/quant
for f in quant f32; do
  if "$CONV" $Q/model-$f.gguf -o "$T/q-$f.tfm" --quiet --check --type f32 > "$T/out" 2> "$T/err" && grep -q "check: ok" "$T/out"; then ok
  else bad "convert $Q/model-$f.gguf"; cat "$T/err"; fi
  dump "$T/q-$f.tfm" $Q "$T/q-$f.logits"
done
report "gguf_quant blocks (--type f32) vs NumPy-decoded F32" "$(maxdiff "$T/q-quant.logits" "$T/q-f32.logits")" 1e-5
cmp -s "$T/q-quant.tfm" "$T/q-f32.tfm" && echo "    gguf_quant: .tfm files byte-identical"
if "$CONV" $Q/model-quant.gguf -o "$T/q-native.tfm" --quiet --check > "$T/out" 2> "$T/err" && grep -q "check: ok" "$T/out"; then ok
else bad "convert $Q/model-quant.gguf as it is"; cat "$T/err"; fi
n_req=$(grep -c "requantized to q8_0" "$T/err")
expect_eq "gguf_quant: a notice for each Q4_1 matrix (3)" "$n_req" 3
dt() { u32 "$T/q-native.tfm" $(($(at "$T/q-native.tfm" "$1") + 64)); }
expect_eq "gguf_quant: Q5_0 / Q5_1 kept (blk.i.wq dtype 8, blk.i.wk 9)" "$(dt blk.0.wq) $(dt blk.1.wq) $(dt blk.0.wk) $(dt blk.1.wk)" "8 8 9 9"
dump "$T/q-native.tfm" $Q "$T/q-native.logits"
report "gguf_quant blocks native vs NumPy-decoded F32" "$(maxdiff "$T/q-native.logits" "$T/q-f32.logits")" $QBOUND
"$CONV" $Q/model-quant.gguf -o "$T/q-f16.tfm" --quiet --type f16 2> /dev/null; dump "$T/q-f16.tfm" $Q "$T/q-f16.logits"
report "gguf_quant --type f16 vs F32" "$(maxdiff "$T/q-f16.logits" "$T/q-f32.logits")" 1e-2

# header: arch n_kv_heads d_head rope_dim norm act ffn residual pos rope_theta(bits) n_tensors-relevant
hdr() { F=$T/$1.tfm; echo "$(u32 "$F" 16) $(u32 "$F" 36) $(u32 "$F" 44) $(u32 "$F" 48) $(u32 "$F" 52) $(u32 "$F" 56) $(u32 "$F" 60) $(u32 "$F" 64) $(u32 "$F" 68) $(u32 "$F" 72) $(u32 "$F" 76) $(u32 "$F" 80)"; }
has() { LC_ALL=C grep -q -a -- "$2" "$T/$1.tfm" && echo yes || echo no; }
#                                   arch kv dh dff rd theta       eps        norm act ffn res pos
expect_eq "gpt2 header"         "$(hdr gpt2-model)"         "2 4 8 128 0 0 925353388 0 1 0 0 3"
expect_eq "gpt_neox header"     "$(hdr gpt_neox-model)"     "1 2 16 64 4 1176256512 925353388 0 0 0 1 1"
expect_eq "llama_tied header"   "$(hdr llama_tied-model)"   "3 2 8 64 8 1176256512 925353388 1 2 1 0 2"
expect_eq "llama_untied header" "$(hdr llama_untied-model)" "3 2 8 64 8 1223959552 925353388 1 2 1 0 2"
cp $A/gpt_neox/model.gguf "$T/seq.gguf"; put "$T/seq.gguf" $(($(at "$T/seq.gguf" gptneox.use_parallel_residual) + 29 + 4)) 1 0
"$CONV" "$T/seq.gguf" -o "$T/seq.tfm" --quiet 2> "$T/err" || bad "gptneox use_parallel_residual false"
expect_eq "gptneox use_parallel_residual false -> sequential" "$(u32 "$T/seq.tfm" 76)" 0
expect_eq "gpt2 keeps the duplicate head (untied)" "$(has gpt2-model output.w)" yes
expect_eq "llama_tied has no output.w" "$(has llama_tied-model output.w)" no
expect_eq "gpt2 pos_embd stays f32 with --type f16" "$(od -An -t u4 -j $(($(at "$T/gpt2-modeltypef16.tfm" pos_embd) + 64)) -N 4 "$T/gpt2-modeltypef16.tfm" | tr -d ' ')" 0

# --- phi2 and starcoder2: GGUF files written here (llama.cpp's layout, tests/gen/gguf_write.py) -
if [ -x "$PY" ] && "$PY" -c "import numpy" 2> /dev/null; then
  for a in phi starcoder2; do
    if "$PY" tests/gen/gguf_write.py $A/$a "$T/$a.gguf" > /dev/null 2> "$T/err"; then
      gguf_case "$T/$a.gguf" $A/$a $A/$a/logits.f32
    else bad "gguf_write.py $a"; cat "$T/err"; fi
  done
  expect_eq "phi2 header" "$(hdr phi-phi)" "4 4 12 64 4 1176256512 925353388 0 1 0 2 1"
  expect_eq "starcoder2 header" "$(hdr starcoder2-starcoder2)" "6 2 8 64 8 1203982336 925353388 0 1 0 0 1"
  # k-quants (Q4_K, Q5_K, Q6_K need rows of 256: a 1.9 MB fixture, so made here, not committed)
  mkdir -p "$T/kq"
  if "$PY" tests/gen/gguf_write.py --kquant-fixture "$T/kq" 2> "$T/err"; then
    for f in quant f32; do
      "$CONV" "$T/kq/model-$f.gguf" -o "$T/k-$f.tfm" --quiet --type f32 2> "$T/err" || { bad "convert k-quant $f"; cat "$T/err"; }
      dump "$T/k-$f.tfm" "$T/kq" "$T/k-$f.logits"
    done
    report "Q4_K/Q5_K/Q6_K blocks (--type f32) vs NumPy-decoded F32" "$(maxdiff "$T/k-quant.logits" "$T/k-f32.logits")" 1e-5
    "$CONV" "$T/kq/model-quant.gguf" -o "$T/k-native.tfm" --quiet 2> "$T/err" || { bad "convert k-quant as it is"; cat "$T/err"; }
    dump "$T/k-native.tfm" "$T/kq" "$T/k-native.logits" # Q4_K / Q5_K / Q6_K blocks copied
    report "Q4_K/Q5_K/Q6_K blocks native vs NumPy-decoded F32" "$(maxdiff "$T/k-native.logits" "$T/k-f32.logits")" $QBOUND_K
  else bad "gguf_write.py --kquant-fixture"; cat "$T/err"; fi
  # llama2.c's stories260K + tok512 as a llama GGUF: logits of llama2.c's own run (69
  # positions, stories260K.ref) and of the llama2.c import path on the same checkpoint
  M=$SHARED/models
  if [ -f "$M/stories260K.bin" ] && [ -f "$M/stories260K.ref/logits.f32" ]; then
    if "$PY" tests/gen/gguf_write.py --from-llama2c "$M/stories260K.bin" "$M/tok512.bin" "$T/s260.gguf" 2> "$T/err" &&
       "$CONV" "$T/s260.gguf" -o "$T/s260.tfm" --quiet --check > "$T/out" 2> "$T/err" &&
       grep -q "n_tokens 512, bos 1, eos 2" "$T/out"; then ok; else bad "stories260K GGUF"; cat "$T/err"; fi
    mkdir -p "$T/s260" && sed -n 2p "$M/stories260K.ref/tokens.txt" > "$T/s260/tokens.txt"
    dump "$T/s260.tfm" "$T/s260" "$T/s260.logits"
    report "stories260K GGUF vs llama2.c run.c (69 positions)" "$(maxdiff "$T/s260.logits" "$M/stories260K.ref/logits.f32")" "$BOUND"
    if "$CONV" "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$T/s260-l2c.tfm" --quiet 2> "$T/err"; then
      dump "$T/s260-l2c.tfm" "$T/s260" "$T/s260-l2c.logits"
      report "stories260K GGUF vs llama2.c import path" "$(maxdiff "$T/s260.logits" "$T/s260-l2c.logits")" 1e-5
      expect_eq "stories260K ids: GGUF vs llama2.c import" "$("$TOK" -m "$T/s260.tfm" "Lily wanted to play.")" "$("$TOK" -m "$T/s260-l2c.tfm" "Lily wanted to play.")"
    else echo "SKIP: llama2.c import of stories260K failed: $(head -c 200 "$T/err")"; fi
  else
    echo "SKIP: $M/stories260K.bin not found"
  fi
else
  echo "SKIP: no /usr/bin/python3 with NumPy: phi2 / starcoder2 / stories260K GGUF not generated"
fi

# --- tokenizers from GGUF metadata ----------------------------------------------------------
K=tests/data/gguf/tok
# byte-level BPE: the same tokenizer.json through the Hugging Face path and through GGUF
"$CONV" --vocab-only tests/data/models/neox_tok/tokenizer.json -o "$T/hf_vocab.tfm" --quiet 2> "$T/err" || bad "HF vocab"
if "$CONV" --vocab-only $K/neox_vocab.gguf -o "$T/gg_vocab.tfm" --quiet --check > "$T/out" 2> "$T/err" &&
   grep -q "check: ok" "$T/out"; then ok; else bad "--vocab-only neox_vocab.gguf"; cat "$T/err"; fi
expect_eq "neox vocab: n_tokens" "$(u32 "$T/gg_vocab.tfm" 20)" 300
nl='
'
for text in "The fox's den: 2026 foxes, café!" "   the dog  ran<|endoftext|>the end" \
            "Hello  world   x${nl}${nl}  tabs	and 'quotes' don't I'll 123456" "<|padding|><|endoftext|> <|endoftext|>x" \
            "ünïcödé — 日本語 🙂 ﬁ" ""; do
  want=$("$TOK" -m "$T/hf_vocab.tfm" "$text" 2>&1); got=$("$TOK" -m "$T/gg_vocab.tfm" "$text" 2>&1)
  if [ -n "$want" ] || [ -z "$text" ]; then expect_eq "neox ids of '$text'" "$got" "$want"
  else bad "HF-path ids of '$text' empty"; fi
done
back=$("$TOK" -m "$T/gg_vocab.tfm" --decode "$("$TOK" -m "$T/gg_vocab.tfm" "ünïcödé  x<|endoftext|>")")
expect_eq "neox decode round trip" "$back" "ünïcödé  x<|endoftext|>"
expect_eq "neox bos/eos" "$(u32 "$T/gg_vocab.tfm" $(($(u32 "$T/gg_vocab.tfm" 96) + 20))) $(u32 "$T/gg_vocab.tfm" $(($(u32 "$T/gg_vocab.tfm" 96) + 24)))" "0 0"
# no NFC on the GGUF path (llama.cpp's gpt-2 pre-tokenizer has none): decomposed text differs
want=$("$TOK" -m "$T/hf_vocab.tfm" "cafe$(printf '\314\201')"); got=$("$TOK" -m "$T/gg_vocab.tfm" "cafe$(printf '\314\201')")
if [ "$want" != "$got" ]; then ok; else bad "GGUF path unexpectedly NFC-normalizes"; fi

# pre "starcoder" (digits one by one, then GPT-2): tests/data/tokenizer/digits.json as GGUF,
# against Hugging Face tokenizers' own ids for it (digits_hf.txt: "text => id,id,...", \n \t)
D=tests/data/tokenizer
if "$CONV" --vocab-only $K/digits_vocab.gguf -o "$T/digits.tfm" --quiet --check > "$T/out" 2> "$T/err" &&
   grep -q "check: ok" "$T/out"; then ok; else bad "--vocab-only digits_vocab.gguf"; cat "$T/err"; fi
expect_eq "digits blob pretok" "$(u32 "$T/digits.tfm" $(($(u32 "$T/digits.tfm" 96) + 16)))" 2
n_case=0; n_bad=0
while IFS= read -r line; do
  text=${line% => *}; want=$(echo "${line##* => }" | tr ',' ' ')
  printf '%b' "$text" > "$T/text"; got=$("$TOK" -m "$T/digits.tfm" -f "$T/text" 2>&1)
  n_case=$((n_case + 1))
  if [ "$got" != "$want" ]; then n_bad=$((n_bad + 1)); [ $n_bad -le 3 ] && echo "digits '$text': got '$got', want '$want'"; fi
done < $D/digits_hf.txt
expect_eq "digits_hf.txt cases ($n_case) differing" "$n_bad" 0

# SentencePiece: llama2.c's tok512 stored as llama.cpp does; ids as run.c computes them
if "$CONV" --vocab-only $K/tok512_vocab.gguf -o "$T/spm.tfm" --quiet --check > "$T/out" 2> "$T/err" &&
   grep -q "check: ok" "$T/out"; then ok; else bad "--vocab-only tok512_vocab.gguf"; cat "$T/err" "$T/out"; fi
B=$(u32 "$T/spm.tfm" 96)
expect_eq "spm blob kind flags bos eos unk" "$(u32 "$T/spm.tfm" "$B") $(u32 "$T/spm.tfm" $((B + 12))) $(u32 "$T/spm.tfm" $((B + 20))) $(u32 "$T/spm.tfm" $((B + 24))) $(u32 "$T/spm.tfm" $((B + 28)))" "2 6 1 2 0"
# llama.cpp's pre-tokenizer names: "llama-bpe" (same length as "starcoder") is Llama-3's
# pattern with whole-word vocabulary hits (pretok 3, flag 32)
cp $K/digits_vocab.gguf "$T/l3.gguf"; subst "$T/l3.gguf" starcoder llama-bpe
if "$CONV" --vocab-only "$T/l3.gguf" -o "$T/l3.tfm" --quiet 2> "$T/err"; then
  B3=$(u32 "$T/l3.tfm" 96)
  expect_eq "llama-bpe pretok, flags" "$(u32 "$T/l3.tfm" $((B3 + 16))) $(( $(u32 "$T/l3.tfm" $((B3 + 12))) & 32 ))" "3 32"
else bad "--vocab-only with tokenizer.ggml.pre llama-bpe"; cat "$T/err"; fi
E=$SHARED/models/stories260K.ref/encode.txt
if [ -f "$E" ]; then cases=$(cat "$E"); else # run.c's output, copied from that file
  cases="Once upon a time	1 403 407 261 378
Lily wanted to play.	1 317 391 266 267 337 426
Hello world!	1 346 306 414 263 304 341 443"
fi
n=0
printf '%s\n' "$cases" | while IFS='	' read -r text ids; do
  [ -n "$text" ] || continue
  got=$("$TOK" -m "$T/spm.tfm" --add-special "$text")
  # run.c adds BOS only; --add-special adds BOS and EOS (2)
  if [ "$got" = "$ids 2" ]; then echo ok; else echo "FAIL: tok512 '$text': got '$got', want '$ids 2'"; fi
done > "$T/spm.res"
n_ok=$(grep -c '^ok' "$T/spm.res"); grep FAIL "$T/spm.res"
expect_eq "tok512 encode.txt cases" "$n_ok" 3
back=$("$TOK" -m "$T/spm.tfm" --decode "$("$TOK" -m "$T/spm.tfm" "Once upon a café €")")
expect_eq "spm decode (dummy prefix kept, byte tokens)" "$back" " Once upon a café €"

# a model with its tokenizer: neox_tok (Q8_0 weights) + its tokenizer.json as GGUF metadata
if "$CONV" $K/neox_tok-q8_0.gguf -o "$T/neox_tok.tfm" --quiet --check > "$T/out" 2> "$T/err" &&
   grep -q "n_tokens 300, bos 0, eos 0" "$T/out" && grep -q "check: ok" "$T/out"; then ok
else bad "neox_tok-q8_0.gguf with tokenizer"; cat "$T/err" "$T/out"; fi
"$CONV" tests/data/models/neox_tok -o "$T/neox_tok_st.tfm" --quiet 2> /dev/null
t1=$("$GEN" -m "$T/neox_tok.tfm" -p "the dog  ran<|endoftext|>" -n 4 -t 1 2>&1 | head -n 1)
expect_eq "neox_tok GGUF prompt ids" "$("$TOK" -m "$T/neox_tok.tfm" "the dog  ran<|endoftext|>")" "$("$TOK" -m "$T/neox_tok_st.tfm" "the dog  ran<|endoftext|>")"
[ -n "$t1" ] && ok || bad "tfm-generate -p on the GGUF model"
dump "$T/neox_tok.tfm" tests/data/models/neox_tok "$T/nt.logits"
m=$(maxdiff "$T/nt.logits" tests/data/models/neox_tok/logits.f32)
if [ "$m" != failed ] && within q8 "$m" 0.5 && ! within q8 "$m" 1e-3; then ok; echo "    neox_tok Q8_0 vs F32 reference maxdiff $m (quantization error, expected in 1e-3..0.5)"
else bad "neox_tok Q8_0 vs F32 reference: $m, expected in 1e-3..0.5"; fi

# --- hostile files ----------------------------------------------------------------------------
expect_fail() { # WHAT PATTERN CONVERT-ARGS... : exit 1, an error line matching, no output
  what=$1; pat=$2; shift 2
  rm -f "$T/o.tfm" "$T/o.tfm.tmp"
  $RUN "$@" -o "$T/o.tfm" > "$T/stdout" 2> "$T/stderr"; rc=$?
  if [ "$rc" -ne 1 ]; then bad "$what: exit $rc, want 1"; head -c 600 "$T/stderr"; return; fi
  if ! grep -q "error:.*$pat" "$T/stderr"; then bad "$what: no error matching '$pat'"; cat "$T/stderr"; return; fi
  if [ -e "$T/o.tfm" ] || [ -e "$T/o.tfm.tmp" ]; then bad "$what: output left behind"; return; fi
  ok
}
RUN=$CONV
if echo 'int main(void){return 0;}' > "$T/s.c" && cc -fsanitize=address,undefined "$T/s.c" -o "$T/s" 2> /dev/null &&
   cc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -std=c99 -I. -o "$T/conv-san" \
     tools/tfm-convert.c tools/convert_gguf.c tools/convert_llama2c.c tools/tfm_write.c -lm 2> "$T/err"; then
  RUN=$T/conv-san; echo "    hostile files under ASan/UBSan"
fi
L=$A/llama_tied/model.gguf
mut() { cp "$1" "$T/m.gguf"; }
mut $L; subst "$T/m.gguf" GGUF GGUX;                  expect_fail "bad magic" "bad magic" "$T/m.gguf"
mut $L; put "$T/m.gguf" 4 4 1;                       expect_fail "version 1" "version 1 is not supported" "$T/m.gguf"
mut $L; put "$T/m.gguf" 4 4 4;                       expect_fail "version 4" "version 4" "$T/m.gguf"
mut $L; put "$T/m.gguf" 4 4 50331648;                expect_fail "big-endian" "big-endian GGUF" "$T/m.gguf"
mut $L; put "$T/m.gguf" 8 8 1099511627776;           expect_fail "2^40 tensors" "counts out of range" "$T/m.gguf"
mut $L; put "$T/m.gguf" 16 8 1099511627776;          expect_fail "2^40 keys" "counts out of range" "$T/m.gguf"
mut $L; put "$T/m.gguf" 16 8 9223372036854775807;    expect_fail "2^63 keys" "counts out of range" "$T/m.gguf"
mut $L; put "$T/m.gguf" 24 8 4611686018427387904;    expect_fail "huge key length" "truncated" "$T/m.gguf"
o=$(tinfo $L token_embd.weight)
mut $L; put "$T/m.gguf" $((o + 4 + 16 + 4)) 8 1099511627776; expect_fail "offset past the end" "past the end" "$T/m.gguf"
mut $L; put "$T/m.gguf" $((o + 4 + 16 + 4)) 8 9223372036854775776; expect_fail "offset near 2^63" "past the end" "$T/m.gguf"
mut $L; put "$T/m.gguf" $((o + 4 + 16 + 4)) 8 1;     expect_fail "misaligned offset" "misaligned" "$T/m.gguf"
mut $L; put "$T/m.gguf" $((o + 4 + 16)) 4 12;        expect_fail "Q4_K rows of 32" "type 12 .*rows of 32 do not" "$T/m.gguf"
mut $L; put "$T/m.gguf" $((o + 4 + 16)) 4 11;        expect_fail "Q3_K tensor" "type 11 is not supported" "$T/m.gguf"
mut $L; put "$T/m.gguf" $((o + 4 + 16)) 4 99;        expect_fail "type 99" "type 99" "$T/m.gguf"
mut $L; put "$T/m.gguf" "$o" 4 5;                    expect_fail "5 dims" "5 dims" "$T/m.gguf"
mut $L; put "$T/m.gguf" $((o + 4)) 8 0;              expect_fail "zero dim" "bad dimension" "$T/m.gguf"
mut $L; put "$T/m.gguf" $((o + 4)) 8 4611686018427387904; expect_fail "huge dim" "bad dimension" "$T/m.gguf"
o=$(tinfo $L blk.0.attn_q.weight)
mut $L; put "$T/m.gguf" $((o + 4 + 8)) 8 16;         expect_fail "mis-shaped attn_q" "shape \[16, 32\].*expected \[32, 32\]" "$T/m.gguf"
mut $L; subst "$T/m.gguf" output_norm.weight output_norx.weight; expect_fail "missing output_norm" "missing tensor output_norm.weight" "$T/m.gguf"
mut $L; subst "$T/m.gguf" blk.1.ffn_up.weight blk.0.ffn_up.weight; expect_fail "duplicate tensor" "appears twice" "$T/m.gguf"
mut $L; subst "$T/m.gguf" blk.1.ffn_up.weight blk.2.ffn_up.weight; expect_fail "block 1 -> 2" "missing tensor blk.1.ffn_up" "$T/m.gguf"
mut $A/llama_untied/model.gguf; subst "$T/m.gguf" output.weight output.weighx; expect_fail "unknown tensor" "output.weighx is not used" "$T/m.gguf"
mut $L; put "$T/m.gguf" $(($(at "$T/m.gguf" llama.block_count) + 21)) 4 3
expect_fail "block_count 3, 2 blocks" "missing tensor blk.2" "$T/m.gguf"
# a layer count past TFM_MAX_LAYERS is refused before the layer table is filled (phi3, gemma2)
mut tests/data/modern/phi3/model.gguf; put "$T/m.gguf" $(($(at "$T/m.gguf" phi3.block_count) + 20)) 4 100000
expect_fail "phi3 block_count 100000" "layer count 100000 out of the supported range" "$T/m.gguf"
mut tests/data/modern/gemma2/model.gguf; put "$T/m.gguf" $(($(at "$T/m.gguf" gemma2.block_count) + 22)) 4 513
expect_fail "gemma2 block_count 513" "layer count 513 out of the supported range" "$T/m.gguf"
mut $L; subst "$T/m.gguf" "llama.attention.layer_norm_rms_epsilon" "llama.attention.layer_norm_rms_epsilox"
expect_fail "no rms eps" "missing metadata key llama.attention.layer_norm_rms_epsilon" "$T/m.gguf"
mut $L; subst "$T/m.gguf" "llama.block_count" "llama.block_counx"; expect_fail "no block_count" "block_count" "$T/m.gguf"
mut $L; put "$T/m.gguf" $(($(at "$T/m.gguf" llama.attention.head_count_kv) + 33)) 4 3; expect_fail "kv heads 3" "heads" "$T/m.gguf"
mut $L; subst "$T/m.gguf" general.architecture general.architecturf; expect_fail "no architecture" "no general.architecture" "$T/m.gguf"
mut $L; put "$T/m.gguf" $(($(at "$T/m.gguf" llama.block_count) + 17)) 4 6; expect_fail "block_count as f32" "block_count must be a non-negative integer" "$T/m.gguf"
o=$(at $L general.architecture); mut $L; printf 'llamb' | dd of="$T/m.gguf" bs=1 seek=$((o + 20 + 4 + 8)) conv=notrunc status=none
expect_fail "unknown architecture" "\"llamb\" is not supported" "$T/m.gguf"
mut $L; put "$T/m.gguf" $(($(at "$T/m.gguf" general.alignment) + 17 + 4)) 4 48; expect_fail "alignment 48" "alignment 48" "$T/m.gguf"
mut $L; put "$T/m.gguf" $(($(at "$T/m.gguf" llama.attention.head_count_kv) + 29)) 4 13; expect_fail "value type 13" "bad or truncated value" "$T/m.gguf"
expect_fail "--vocab-only without tokenizer" "no tokenizer" --vocab-only $L
expect_fail "--tokenizer with GGUF" "is GGUF" $L --tokenizer tests/data/gguf/tok/tok512_vocab.gguf
: > "$T/empty.gguf"; expect_fail "empty file" "bad magic" "$T/empty.gguf"
expect_fail "missing file" "cannot open" "$T/none.gguf"
# tokenizer metadata
V=$K/neox_vocab.gguf
mut $V; subst "$T/m.gguf" gpt-2 gpt-3;                expect_fail "pre gpt-3" "tokenizer.ggml.pre \"gpt-3\" is not supported" --vocab-only "$T/m.gguf"
mut $K/digits_vocab.gguf; subst "$T/m.gguf" starcoder starcodex; expect_fail "pre starcodex" "\"starcodex\" is not supported" --vocab-only "$T/m.gguf"
mut $V; subst "$T/m.gguf" gpt-2 phi-2; "$CONV" --vocab-only "$T/m.gguf" -o "$T/phi2v.tfm" --quiet 2> "$T/err"
expect_eq "pre phi-2 = gpt-2 (same blob)" "$(cmp "$T/phi2v.tfm" "$T/gg_vocab.tfm" && echo same)" same
mut $V; subst "$T/m.gguf" tokenizer.ggml.pre tokenizer.ggml.prx; "$CONV" --vocab-only "$T/m.gguf" -o "$T/nopre.tfm" --quiet 2> "$T/err"
expect_eq "pre absent: warning, GPT-2 pattern" "$(grep -c "warning:.*pre is absent" "$T/err") $(cmp "$T/nopre.tfm" "$T/gg_vocab.tfm" && echo same)" "1 same"
o=$(at $V tokenizer.ggml.model); mut $V; printf 'bert' | dd of="$T/m.gguf" bs=1 seek=$((o + 20 + 4 + 8)) conv=notrunc status=none
expect_fail "tokenizer model bert" "\"bert\" is not supported" --vocab-only "$T/m.gguf"
mut $V; put "$T/m.gguf" $(($(at "$T/m.gguf" tokenizer.ggml.bos_token_id) + 27 + 4)) 4 300; expect_fail "bos 300" "bos_token_id = 300" --vocab-only "$T/m.gguf"
mut $V; subst "$T/m.gguf" "Ġthe" "Ġthf";               expect_fail "merge of a non-token" "not in the vocab" --vocab-only "$T/m.gguf"
mut $V; put "$T/m.gguf" $(($(at "$T/m.gguf" tokenizer.ggml.token_type) + 33)) 8 299; expect_fail "token_type count 299" "GGUF metadata" --vocab-only "$T/m.gguf"
mut $V; put "$T/m.gguf" $(($(at "$T/m.gguf" tokenizer.ggml.tokens) + 29)) 8 1152921504606846976; expect_fail "2^60 tokens" "bad or truncated" --vocab-only "$T/m.gguf"
S=$K/tok512_vocab.gguf
mut $S; subst "$T/m.gguf" "<0x41>" "<0xZ1>";            expect_fail "bad byte token" "not <0xNN>" --vocab-only "$T/m.gguf"
mut $S; subst "$T/m.gguf" tokenizer.ggml.scores tokenizer.ggml.scorex; expect_fail "spm without scores" "scores is required" --vocab-only "$T/m.gguf"
mut $S; put "$T/m.gguf" $(($(at "$T/m.gguf" tokenizer.ggml.scores) + 37)) 4 2139095040; expect_fail "infinite score" "not finite" --vocab-only "$T/m.gguf"
# truncated at every length up to 128, every 13 bytes up to 2000, then every 401 bytes: a
# file that ends before its last tensor's data must fail (the final < 32 bytes are padding)
for f in $L $S; do
  size=$(fsize "$f"); len=0; n_bad=0; n_tried=0
  while [ $len -lt "$size" ]; do
    head -c $len "$f" > "$T/t.gguf"
    rm -f "$T/o.tfm"
    if [ "$f" = "$S" ]; then $RUN --vocab-only "$T/t.gguf" -o "$T/o.tfm" > /dev/null 2> "$T/stderr"; rc=$?
    else $RUN "$T/t.gguf" -o "$T/o.tfm" > /dev/null 2> "$T/stderr"; rc=$?; fi
    n_tried=$((n_tried + 1))
    if [ $rc -ne 1 ] && [ $len -lt $((size - 32)) ] || [ $rc -gt 1 ] || { [ $rc -eq 1 ] && ! grep -q "error:" "$T/stderr"; }; then
      n_bad=$((n_bad + 1)); [ $n_bad -le 3 ] && { echo "truncated $f at $len: exit $rc"; head -c 300 "$T/stderr"; }
    fi
    if [ $len -lt 128 ]; then len=$((len + 1)); elif [ $len -lt 2000 ]; then len=$((len + 13)); else len=$((len + 401)); fi
  done
  expect_eq "truncations of $(basename "$f") ($n_tried lengths) failing cleanly" "$n_bad" 0
done

echo "test_gguf: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
