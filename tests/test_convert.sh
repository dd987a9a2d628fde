#!/bin/sh
# tests/test_convert.sh - build/tfm-convert: header/directory/blob bytes checked with od; the
# GPT-NeoX per-head q/k/v split and the GPT-2 Conv1D transpose + q|k|v thirds on checkpoints
# built here in shell; the real GPT-NeoX-20B and GPT-2 tokenizers ($SHARED); the golden
# checkpoints in tests/data/models (every architecture opened by tfm.h with
# --check, and its logits from build/tfm-generate compared with the float64 reference when that
# program is built); and the error paths (exit status 1, one message, no output and no .tmp left
# behind), hostile JSON included. No Python needed.
cd "$(dirname "$0")/.." || exit 1
CONV=${CONV:-${BIN:-build}/tfm-convert}
SHARED=${SHARED:-../shared}
T=$(mktemp -d "${TMPDIR:-/tmp}/test_convert.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
pass=0; fail=0

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
# expect_eq WHAT GOT WANT
expect_eq() { if [ "$2" = "$3" ]; then ok; else bad "$1: got '$2', want '$3'"; fi; }

if [ ! -x "$CONV" ]; then
  echo "FAIL: $CONV not built (make build/tfm-convert)"
  echo "test_convert: 0 passed, 1 failed"; exit 1
fi

# --- little-endian field readers -------------------------------------------------------------
u32() { od -An -v -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }
i32() { od -An -v -t d4 -j "$2" -N 4 "$1" | tr -d ' '; }
u64() { od -An -v -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }
u8()  { od -An -v -t u1 -j "$2" -N 1 "$1" | tr -d ' '; }
# bytes FILE OFFSET COUNT -> the raw bytes (for short strings)
bytes() { tail -c +$(($2 + 1)) "$1" | head -c "$3"; }
# nonzero FILE OFFSET COUNT -> number of non-zero bytes
nonzero() { od -An -v -t u1 -j "$2" -N "$3" "$1" | tr -s ' ' '\n' | grep -c '^[1-9]'; }
fsize() { wc -c < "$1" | tr -d ' '; }
# dir entry i: name / dtype / rank / shape0 / shape1 / offset / bytes
ent() { echo $((256 + 128 * $2)); }
ename() { bytes "$1" "$(ent "$1" "$2")" 64 | tr -d '\000'; }

# expect_fail WHAT PATTERN -- command...: exit 1, a matching "error:" line, no output files
expect_fail() {
  what=$1; pat=$2; shift 3
  rm -f "$T/out.tfm" "$T/out.tfm.tmp"
  "$@" > "$T/stdout" 2> "$T/stderr"; rc=$?
  if [ "$rc" -ne 1 ]; then bad "$what: exit $rc, want 1"; cat "$T/stderr"; return; fi
  if ! grep -q "error:.*$pat" "$T/stderr"; then bad "$what: no error matching '$pat'"; cat "$T/stderr"; return; fi
  if [ -e "$T/out.tfm" ] || [ -e "$T/out.tfm.tmp" ]; then bad "$what: output left behind"; return; fi
  ok
}

# --- checkpoints written in shell -------------------------------------------------------------
# GPT-NeoX: 1 layer, d_model 8, 2 heads x 4, d_ff 16, vocab 16, rotary_pct 0.5 -> rope_dim 2.
byte() { printf "\\$(( ($1 >> 6) * 100 + (($1 >> 3) & 7) * 10 + ($1 & 7) ))"; } # no fork
f32bytes() { # the 4 little-endian bytes of the float of a non-negative integer < 2^24
  v=$1; bits=0
  if [ "$v" -gt 0 ]; then
    e=0; t=$v; while [ "$t" -gt 1 ]; do t=$((t >> 1)); e=$((e + 1)); done
    bits=$(( ((127 + e) << 23) | ((v << (23 - e)) & 8388607) ))
  fi
  byte $((bits & 255)); byte $(((bits >> 8) & 255)); byte $(((bits >> 16) & 255)); byte $(((bits >> 24) & 255))
}
u64bytes() {
  i=0; while [ $i -lt 8 ]; do byte $((($1 >> (8 * i)) & 255)); i=$((i + 1)); done
}

# mk_st FILE SKIP_NAME SPEC...: a safetensors file; SPEC = "name rows [cols] [pattern]" with
# pattern row (element = its row index), col (= its column index) or zero (default); F32.
mk_st() {
  f=$1; skip=$2; shift 2
  hdr=""; off=0; : > "$f.data"
  for spec in "$@"; do
    # shellcheck disable=SC2086
    set -- $spec; name=$1; r=$2; c=1; pat=zero; shape="[$r]"
    case ${3:-} in [0-9]*) c=$3; shape="[$r, $c]"; pat=${4:-zero} ;; ?*) pat=$3 ;; esac
    [ "$name" = "$skip" ] && continue
    case $pat in
      row|col) i=0; while [ $i -lt "$r" ]; do
          j=0; while [ $j -lt "$c" ]; do
            if [ $pat = row ]; then f32bytes $i; else f32bytes $j; fi; j=$((j + 1)); done
          i=$((i + 1)); done >> "$f.data" ;;
      *) head -c $((4 * r * c)) /dev/zero >> "$f.data" ;;
    esac
    hdr="$hdr${hdr:+, }\"$name\": {\"dtype\": \"F32\", \"shape\": $shape, \"data_offsets\": [$off, $((off + 4 * r * c))]}"
    off=$((off + 4 * r * c))
  done
  hdr="{\"__metadata__\": {\"format\": \"pt\"}, $hdr}"
  { u64bytes ${#hdr}; printf '%s' "$hdr"; cat "$f.data"; } > "$f"
  rm -f "$f.data"
}

# mk_neox DIR [SKIP_NAME]; EXTRA="name rows [cols]" adds one more tensor.
# Every row r of the fused query_key_value weight holds the float r (pattern row), and its bias
# element i holds i, so the per-head split [n_heads, 3, d_head, d_model] shows in the output.
mk_neox() {
  d=$1; mkdir -p "$d"
  cat > "$d/config.json" <<'EOF'
{"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"],
 "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 16,
 "vocab_size": 16, "max_position_embeddings": 32, "layer_norm_eps": 1e-05,
 "hidden_act": "gelu_new", "use_parallel_residual": false, "rotary_pct": 0.5,
 "rotary_emb_base": 10000, "rope_scaling": null, "tie_word_embeddings": false,
 "bos_token_id": 3, "eos_token_id": 3}
EOF
  L=gpt_neox.layers.0
  mk_st "$d/model.safetensors" "${2:-}" "gpt_neox.embed_in.weight 16 8" \
    "$L.input_layernorm.weight 8" "$L.input_layernorm.bias 8" \
    "$L.attention.query_key_value.weight 24 8 row" "$L.attention.query_key_value.bias 24 row" \
    "$L.attention.dense.weight 8 8" "$L.attention.dense.bias 8" \
    "$L.post_attention_layernorm.weight 8" "$L.post_attention_layernorm.bias 8" \
    "$L.mlp.dense_h_to_4h.weight 16 8" "$L.mlp.dense_h_to_4h.bias 16" \
    "$L.mlp.dense_4h_to_h.weight 8 16" "$L.mlp.dense_4h_to_h.bias 8" \
    "gpt_neox.final_layer_norm.weight 8" "gpt_neox.final_layer_norm.bias 8" \
    "embed_out.weight 16 8" "$L.attention.rotary_emb.inv_freq 2" ${EXTRA:+"$EXTRA"}
}

mk_neox "$T/neox"
if "$CONV" "$T/neox" -o "$T/neox.tfm" 2> "$T/err"; then ok; else bad "convert shell checkpoint"; cat "$T/err"; fi
F=$T/neox.tfm
grep -q "warning:.*token ids only" "$T/err" && ok || bad "no warning for a checkpoint without tokenizer"
expect_eq magic "$(bytes "$F" 0 7)" "TFMODEL"
expect_eq "magic NUL" "$(u8 "$F" 7)" 0
expect_eq format_version "$(u32 "$F" 8)" 2
expect_eq header_bytes "$(u32 "$F" 12)" 256
expect_eq arch "$(u32 "$F" 16)" 1
expect_eq n_vocab "$(u32 "$F" 20)" 16
expect_eq n_ctx "$(u32 "$F" 24)" 32
expect_eq n_layers "$(u32 "$F" 28)" 1
expect_eq n_heads "$(u32 "$F" 32)" 2
expect_eq n_kv_heads "$(u32 "$F" 36)" 2
expect_eq d_model "$(u32 "$F" 40)" 8
expect_eq d_head "$(u32 "$F" 44)" 4
expect_eq d_ff "$(u32 "$F" 48)" 16
expect_eq rope_dim "$(u32 "$F" 52)" 2
expect_eq "rope_theta bits (10000.0f)" "$(u32 "$F" 56)" 1176256512
expect_eq "norm_eps bits (1e-5f)" "$(u32 "$F" 60)" 925353388
expect_eq norm "$(u32 "$F" 64)" 0
expect_eq "act (gelu_new = tanh)" "$(u32 "$F" 68)" 1
expect_eq ffn "$(u32 "$F" 72)" 0
expect_eq "residual (sequential)" "$(u32 "$F" 76)" 0
expect_eq "pos (rope half)" "$(u32 "$F" 80)" 1
expect_eq n_tensors "$(u32 "$F" 84)" 20
expect_eq tensor_dir_offset "$(u64 "$F" 88)" 256
expect_eq "tokenizer_offset (none)" "$(u64 "$F" 96)" 0
expect_eq "tokenizer_bytes (none)" "$(u64 "$F" 104)" 0
expect_eq "header version-2 fields (all default) and reserved bytes" "$(nonzero "$F" 112 144)" 0
names=""; i=0; while [ $i -lt 20 ]; do names="$names $(ename "$F" $i)"; i=$((i + 1)); done
expect_eq "tensor order" "$names" " tok_embd blk.0.ln1.w blk.0.ln1.b blk.0.wq blk.0.wk blk.0.wv blk.0.bq blk.0.bk blk.0.bv blk.0.wo blk.0.bo blk.0.ln2.w blk.0.ln2.b blk.0.w_up blk.0.b_up blk.0.w_down blk.0.b_down lnf.w lnf.b output.w"
# every entry: 64-byte aligned, inside the file, reserved zero; the last one ends the file
i=0; aligned=1; inside=1; resv=0; end=0
while [ $i -lt 20 ]; do
  e=$(ent "$F" $i); o=$(u64 "$F" $((e + 104))); b=$(u64 "$F" $((e + 112)))
  [ $((o % 64)) -eq 0 ] || aligned=0
  [ $((o + b)) -le "$(fsize "$F")" ] || inside=0
  resv=$((resv + $(nonzero "$F" $((e + 88)) 16) + $(nonzero "$F" $((e + 120)) 8)))
  end=$((o + b)); i=$((i + 1))
done
expect_eq "data offsets aligned" $aligned 1
expect_eq "data inside the file" $inside 1
expect_eq "directory reserved bytes" $resv 0
expect_eq "file ends with the last tensor" "$end" "$(fsize "$F")"
# wk: [8, 8] f32, row i = head i/4, k rows -> source row (h*3 + 1)*4 + i%4
e=$(ent "$F" 4)
expect_eq "wk dtype/rank/shape" "$(u32 "$F" $((e + 64))) $(u32 "$F" $((e + 68))) $(u64 "$F" $((e + 72))) $(u64 "$F" $((e + 80))) $(u64 "$F" $((e + 96)))" "0 2 8 8 0"
o=$(u64 "$F" $((e + 104)))
expect_eq "wk rows (per-head split)" "$(od -An -v -t f4 -w32 -j "$o" -N 256 "$F" | awk '{printf " %s", $1}')" " 4 5 6 7 16 17 18 19"
o=$(u64 "$F" $(($(ent "$F" 3) + 104)))
expect_eq "wq rows" "$(od -An -v -t f4 -w32 -j "$o" -N 256 "$F" | awk '{printf " %s", $8}')" " 0 1 2 3 12 13 14 15"
e=$(ent "$F" 8); o=$(u64 "$F" $((e + 104)))
expect_eq "bv rank/shape/bytes" "$(u32 "$F" $((e + 68))) $(u64 "$F" $((e + 72))) $(u64 "$F" $((e + 112)))" "1 8 32"
expect_eq "bv values" "$(od -An -v -t f4 -j "$o" -N 32 "$F" | tr -s ' \n' ' ')" " 8 9 10 11 20 21 22 23 "

# --type f16: matrices f16 (exact small integers), vectors stay f32
if "$CONV" "$T/neox" -o "$T/neox16.tfm" --type f16 --quiet 2> "$T/err"; then ok; else bad "convert --type f16"; cat "$T/err"; fi
F=$T/neox16.tfm; e=$(ent "$F" 4); o=$(u64 "$F" $((e + 104)))
expect_eq "f16 wk dtype/bytes" "$(u32 "$F" $((e + 64))) $(u64 "$F" $((e + 112)))" "1 128"
expect_eq "f16 wk rows" "$(od -An -v -t x2 -w16 -j "$o" -N 128 "$F" | awk '{printf " %s", $1}')" " 4400 4500 4600 4700 4c00 4c40 4c80 4cc0"
e=$(ent "$F" 7)
expect_eq "f16 file: bk stays f32" "$(u32 "$F" $((e + 64))) $(u64 "$F" $((e + 112)))" "0 32"
expect_eq "f16 file: tok_embd f16" "$(u32 "$F" $(($(ent "$F" 0) + 64)))" 1

# GPT-2 (names prefixed "transformer.", as re-saved from GPT2LMHeadModel): Conv1D weights are
# stored [in, out]. c_attn.weight element [k][n] = n (pattern col), so after the transpose and
# the q|k|v thirds split, row r of wk is all 8 + r; mlp.c_proj.weight [32, 8] element [k][n] = k
# (pattern row), so every row of w_down [8, 32] reads 0 1 .. 31.
mkdir -p "$T/gpt2"
cat > "$T/gpt2/config.json" <<'EOF'
{"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 1, "n_inner": null, "vocab_size": 16,
 "n_positions": 8, "layer_norm_epsilon": 1e-05, "activation_function": "gelu_new",
 "scale_attn_weights": true, "bos_token_id": 15, "eos_token_id": 15}
EOF
H=transformer.h.0
mk_st "$T/gpt2/model.safetensors" "" "transformer.wte.weight 16 8" "transformer.wpe.weight 8 8" \
  "$H.ln_1.weight 8" "$H.ln_1.bias 8" "$H.attn.c_attn.weight 8 24 col" "$H.attn.c_attn.bias 24 row" \
  "$H.attn.c_proj.weight 8 8" "$H.attn.c_proj.bias 8" "$H.ln_2.weight 8" "$H.ln_2.bias 8" \
  "$H.mlp.c_fc.weight 8 32 col" "$H.mlp.c_fc.bias 32" "$H.mlp.c_proj.weight 32 8 row" \
  "$H.mlp.c_proj.bias 8" "transformer.ln_f.weight 8" "transformer.ln_f.bias 8" "$H.attn.masked_bias 1"
if "$CONV" "$T/gpt2" -o "$T/gpt2.tfm" --quiet 2> "$T/err"; then ok; else bad "convert shell gpt2"; cat "$T/err"; fi
F=$T/gpt2.tfm
expect_eq "gpt2 arch n_ctx d_ff rope_dim pos residual" "$(u32 "$F" 16) $(u32 "$F" 24) $(u32 "$F" 48) $(u32 "$F" 52) $(u32 "$F" 80) $(u32 "$F" 76)" "2 8 32 0 3 0"
names=""; i=0; while [ $i -lt "$(u32 "$F" 84)" ]; do names="$names $(ename "$F" $i)"; i=$((i + 1)); done
expect_eq "gpt2 tensors (tied: no output.w)" "$names" " tok_embd pos_embd blk.0.ln1.w blk.0.ln1.b blk.0.wq blk.0.wk blk.0.wv blk.0.bq blk.0.bk blk.0.bv blk.0.wo blk.0.bo blk.0.ln2.w blk.0.ln2.b blk.0.w_up blk.0.b_up blk.0.w_down blk.0.b_down lnf.w lnf.b"
o=$(u64 "$F" $(($(ent "$F" 5) + 104)))
expect_eq "gpt2 wk column 0 (transposed thirds)" "$(od -An -v -t f4 -w32 -j "$o" -N 256 "$F" | awk '{printf " %s", $1}')" " 8 9 10 11 12 13 14 15"
expect_eq "gpt2 wk column 7" "$(od -An -v -t f4 -w32 -j "$o" -N 256 "$F" | awk '{printf " %s", $8}')" " 8 9 10 11 12 13 14 15"
o=$(u64 "$F" $(($(ent "$F" 9) + 104)))
expect_eq "gpt2 bv" "$(od -An -v -t f4 -j "$o" -N 32 "$F" | tr -s ' \n' ' ')" " 16 17 18 19 20 21 22 23 "
e=$(ent "$F" 16); o=$(u64 "$F" $((e + 104)))
expect_eq "gpt2 w_down shape" "$(u64 "$F" $((e + 72))) $(u64 "$F" $((e + 80)))" "8 32"
expect_eq "gpt2 w_down row 7 (transposed)" "$(od -An -v -t f4 -w128 -j $((o + 7 * 128)) -N 128 "$F" | tr -s ' \n' ' ')" " 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 "
if "$CONV" "$T/gpt2" -o "$T/gpt2-16.tfm" --type f16 --quiet 2> "$T/err"; then ok; else bad "convert shell gpt2 f16"; cat "$T/err"; fi
F=$T/gpt2-16.tfm
expect_eq "gpt2 f16: pos_embd stays f32, tok_embd and wk f16" "$(u32 "$F" $(($(ent "$F" 1) + 64))) $(u32 "$F" $(($(ent "$F" 0) + 64))) $(u32 "$F" $(($(ent "$F" 5) + 64)))" "0 1 1"
o=$(u64 "$F" $(($(ent "$F" 5) + 104)))
expect_eq "gpt2 f16 wk column 0" "$(od -An -v -t x2 -w16 -j "$o" -N 128 "$F" | awk '{printf " %s", $1}')" " 4800 4880 4900 4980 4a00 4a80 4b00 4b80"

# --type recipes on rows that are not whole blocks fall back as llama-quantize does: q4_k to
# q5_0, q5_k to q5_1, q6_k to q8_0 (32 columns: whole 32-blocks, not 256-blocks), then to f16
# (8 columns: no whole blocks at all); a notice names each matrix (7). GPT-2 shell of width 32
# (and the width-8 one above): tok_embd (its tied output head too, so q4_k gives it the head's
# q6_k, as llama-quantize does), wq, w_down (64 columns; 32 in the width-8 shell); dtype ids
# f16 1, q8_0 3, q5_0 8, q5_1 9.
mkdir -p "$T/gpt2w"
sed 's/"n_embd": 8/"n_embd": 32/; s/"n_inner": null/"n_inner": 64/' "$T/gpt2/config.json" > "$T/gpt2w/config.json"
mk_st "$T/gpt2w/model.safetensors" "" "transformer.wte.weight 16 32" "transformer.wpe.weight 8 32" \
  "$H.ln_1.weight 32" "$H.ln_1.bias 32" "$H.attn.c_attn.weight 32 96" "$H.attn.c_attn.bias 96" \
  "$H.attn.c_proj.weight 32 32" "$H.attn.c_proj.bias 32" "$H.ln_2.weight 32" "$H.ln_2.bias 32" \
  "$H.mlp.c_fc.weight 32 64" "$H.mlp.c_fc.bias 64" "$H.mlp.c_proj.weight 64 32" \
  "$H.mlp.c_proj.bias 32" "transformer.ln_f.weight 32" "transformer.ln_f.bias 32"
recipe_dtypes() { # DIR TYPE -> "tok_embd wq w_down notices"
  if "$CONV" "$1" -o "$T/recipe.tfm" --type "$2" 2> "$T/err" > /dev/null; then
    F=$T/recipe.tfm
    echo "$(u32 "$F" $(($(ent "$F" 0) + 64))) $(u32 "$F" $(($(ent "$F" 4) + 64))) $(u32 "$F" $(($(ent "$F" 16) + 64))) $(grep -c "are not whole $2 blocks" "$T/err")"
  else echo "convert failed: $(cat "$T/err")"; fi
}
expect_eq "--type q4_k, 32 columns: head q6_k -> q8_0, the rest q5_0" "$(recipe_dtypes "$T/gpt2w" q4_k)" "3 8 8 7"
expect_eq "--type q4_k_m, 32 columns: the same" "$(recipe_dtypes "$T/gpt2w" q4_k_m)" "3 8 8 7"
expect_eq "--type q5_k, 32 columns: q5_1" "$(recipe_dtypes "$T/gpt2w" q5_k)" "9 9 9 7"
expect_eq "--type q6_k, 32 columns: q8_0" "$(recipe_dtypes "$T/gpt2w" q6_k)" "3 3 3 7"
expect_eq "--type q4_k, 8 columns: f16 (w_down's 32: q5_0)" "$(recipe_dtypes "$T/gpt2" q4_k)" "1 1 8 7"
expect_eq "--type q8_0, 32 columns: whole blocks, no notice" "$(recipe_dtypes "$T/gpt2w" q8_0)" "3 3 3 0"

# the other architectures' golden checkpoints (tests/data/models, tests/gen/make_arch_models.py):
# header fields per architecture, and tfm.h must open each file (--check)
# arch_case DIR "arch n_kv_heads d_head rope_dim norm ffn residual pos theta_bits" LAST_TENSOR
# End to end, when build/tfm-generate exists: its logits on tokens.txt against logits.f32 (the
# float64 reference); a correct conversion lands at ~1e-6, a plausible mistake at >= 9e-4.
GEN=${GEN:-${BIN:-build}/tfm-generate}
LOGITS_BOUND=1e-4
floats() { od -An -v -t f4 "$1" | tr -s ' ' '\n' | grep -v '^$'; }
logits_maxdiff() { # MODEL DIR REFERENCE -> max |diff|, or "failed"
  "$GEN" -m "$1" --tokens "$(cat "$2/tokens.txt")" -n 0 -t 1 --dump-logits "$T/logits" > /dev/null 2>&1 ||
    { echo failed; return; }
  floats "$T/logits" > "$T/a"; floats "$3" > "$T/b"
  [ "$(wc -l < "$T/a")" -eq "$(wc -l < "$T/b")" ] || { echo failed; return; }
  paste "$T/a" "$T/b" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g", m }'
}
check_logits() { # WHAT MODEL DIR REFERENCE
  [ -x "$GEN" ] || return
  m=$(logits_maxdiff "$2" "$3" "$4")
  if [ "$m" != failed ] && awk "BEGIN { exit !($m <= $LOGITS_BOUND) }"; then ok; echo "    $1 logits maxdiff $m"
  else bad "$1: logits maxdiff $m > $LOGITS_BOUND"; fi
}
arch_case() {
  d=tests/data/models/$1
  [ -f "$d/config.json" ] || { echo "SKIP: $d not found"; return; }
  F=$T/arch_$1.tfm
  if "$CONV" "$d" -o "$F" --quiet --check > "$T/out" 2> "$T/err" && grep -q "check: ok" "$T/out"; then ok
  else bad "convert --check $1"; cat "$T/err" "$T/out"; return; fi
  expect_eq "$1 header" "$(u32 "$F" 16) $(u32 "$F" 36) $(u32 "$F" 44) $(u32 "$F" 52) $(u32 "$F" 64) $(u32 "$F" 72) $(u32 "$F" 76) $(u32 "$F" 80) $(u32 "$F" 56)" "$2"
  expect_eq "$1 last tensor" "$(ename "$F" $(($(u32 "$F" 84) - 1)))" "$3"
  check_logits "$1" "$F" "$d" "$d/logits.f32"
}
[ -x "$GEN" ] || echo "SKIP: $GEN not built: no end-to-end logits check of the converted architectures"
arch_case gpt2 "2 4 8 0 0 0 0 3 0" lnf.b
arch_case gpt2_prefixed "2 4 4 0 0 0 0 3 0" lnf.b
arch_case gpt_neox "1 2 16 4 0 0 1 1 1176256512" output.w
arch_case llama_tied "3 2 8 8 1 1 0 1 1176256512" lnf.w
arch_case llama_untied "3 2 8 8 1 1 0 1 1223959552" output.w
arch_case phi "4 4 12 4 0 0 2 1 1176256512" output.b
arch_case gptj "5 4 8 4 0 0 2 2 1176256512" output.b
arch_case starcoder2 "6 2 8 8 0 0 0 1 1203982336" lnf.b
if [ -f tests/data/models/gpt2/logits_f16.f32 ]; then # f16 matrices (Conv1D transposed, then rounded)
  if "$CONV" tests/data/models/gpt2 -o "$T/gpt2-f16.tfm" --type f16 --quiet 2> "$T/err"; then ok; else bad "gpt2 --type f16"; fi
  check_logits gpt2-f16 "$T/gpt2-f16.tfm" tests/data/models/gpt2 tests/data/models/gpt2/logits_f16.f32
fi

# --- tokenizers ($SHARED) ---------------------------------------------------------------------
# blob_field FILE FIELD_OFFSET; tok_text FILE ID; tok_attr FILE ID (uses the blob layout of tfm.h)
blob_layout() {
  B=$(u64 "$1" 96); NT=$(u32 "$1" $((B + 4))); NM=$(u32 "$1" $((B + 8)))
  ATTRS=$((B + 64 + 8 * NT + 4)); MERGES=$(((ATTRS + NT + 3 - B) / 4 * 4 + B)); TEXT=$((MERGES + 12 * NM))
}
tok_text() { a=$(u32 "$1" $((B + 64 + 4 * $2))); z=$(u32 "$1" $((B + 68 + 4 * $2))); bytes "$1" $((TEXT + a)) $((z - a)); }
tok_attr() { u8 "$1" $((ATTRS + $2)); }
merge() { echo "$(u32 "$1" $((MERGES + 12 * $2))) $(u32 "$1" $((MERGES + 12 * $2 + 4))) $(u32 "$1" $((MERGES + 12 * $2 + 8)))"; }
merge_consistent() { # text(merged) = text(left) . text(right)
  set -- "$1" $(merge "$1" "$2")
  [ "$(tok_text "$1" "$4")" = "$(tok_text "$1" "$2")$(tok_text "$1" "$3")" ]
}

if [ -f "$SHARED/tokenizers/gpt-neox-20b/tokenizer.json" ]; then
  F=$T/neox-vocab.tfm
  if "$CONV" --vocab-only "$SHARED/tokenizers/gpt-neox-20b" -o "$F" --quiet 2> "$T/err"; then ok; else bad "neox vocab-only"; cat "$T/err"; fi
  expect_eq "vocab-only n_layers" "$(u32 "$F" 28)" 0
  expect_eq "vocab-only n_tensors" "$(u32 "$F" 84)" 0
  expect_eq "vocab-only n_vocab" "$(u32 "$F" 20)" 50277
  expect_eq "blob offset (aligned)" "$(u64 "$F" 96)" 256
  expect_eq "blob ends the file" $(($(u64 "$F" 96) + $(u64 "$F" 104))) "$(fsize "$F")"
  blob_layout "$F"
  expect_eq "neox kind n_tokens n_merges flags(NFC) pretok" "$(u32 "$F" "$B") $NT $NM $(u32 "$F" $((B + 12))) $(u32 "$F" $((B + 16)))" "1 50277 50009 1 1"
  expect_eq "neox bos eos unk pad" "$(i32 "$F" $((B + 20))) $(i32 "$F" $((B + 24))) $(i32 "$F" $((B + 28))) $(i32 "$F" $((B + 32)))" "0 0 -1 -1"
  expect_eq "neox blob reserved" "$(nonzero "$F" $((B + 40)) 24)" 0
  expect_eq "neox text_bytes" "$(u32 "$F" $((B + 36)))" $(($(fsize "$F") - TEXT))
  expect_eq "neox token 12092" "$(tok_text "$F" 12092)" "Hello"
  expect_eq "neox token 1533 (raw space)" "$(tok_text "$F" 1533)" " world"
  expect_eq "neox token 0" "$(tok_text "$F" 0)" "<|endoftext|>"
  expect_eq "neox token 50276 (two spaces)" "$(tok_text "$F" 50276 | od -An -t x1 | tr -d ' ')" "2020"
  expect_eq "neox attrs 0 1 50276 12092" "$(tok_attr "$F" 0) $(tok_attr "$F" 1) $(tok_attr "$F" 50276) $(tok_attr "$F" 12092)" "3 3 2 0"
  expect_eq "neox merge 0 (U+0120 U+0120)" "$(merge "$F" 0)" "209 209 245"
  for m in 0 1 777 50008; do merge_consistent "$F" $m && ok || bad "neox merge $m is not left+right"; done
  # --check: tfm.h opens the vocab-only file and tokenizes a sample back to its bytes
  if "$CONV" --vocab-only "$SHARED/tokenizers/gpt-neox-20b" -o "$F" --quiet --check > "$T/out" 2> "$T/err" &&
     grep -q '" -> 12092 1533 13 ' "$T/out" && grep -q "check: ok" "$T/out"; then ok; else bad "neox --check"; cat "$T/err" "$T/out"; fi
else
  echo "SKIP: $SHARED/tokenizers/gpt-neox-20b not found (set SHARED)"
fi

if [ -f "$SHARED/tokenizers/gpt2/vocab.json" ]; then
  F=$T/gpt2-vocab.tfm
  if "$CONV" --vocab-only "$SHARED/tokenizers/gpt2" -o "$F" --quiet 2> "$T/err"; then ok; else bad "gpt2 vocab-only"; cat "$T/err"; fi
  blob_layout "$F"
  expect_eq "gpt2 kind n_tokens n_merges flags pretok" "$(u32 "$F" "$B") $NT $NM $(u32 "$F" $((B + 12))) $(u32 "$F" $((B + 16)))" "1 50257 50000 0 1"
  expect_eq "gpt2 bos eos" "$(i32 "$F" $((B + 20))) $(i32 "$F" $((B + 24)))" "50256 50256"
  expect_eq "gpt2 token 15496" "$(tok_text "$F" 15496)" "Hello"
  expect_eq "gpt2 token 198 (newline)" "$(tok_text "$F" 198 | od -An -t x1 | tr -d ' ')" "0a"
  expect_eq "gpt2 token 220 (space)" "$(tok_text "$F" 220 | od -An -t x1 | tr -d ' ')" "20"
  expect_eq "gpt2 attrs 50256 15496" "$(tok_attr "$F" 50256) $(tok_attr "$F" 15496)" "3 0"
  for m in 0 1 4999 49999; do merge_consistent "$F" $m && ok || bad "gpt2 merge $m is not left+right"; done
  # the same vocabulary through tokenizer.json with ["a","b"] array merges would need python to
  # build; the array spelling is covered with a hand-written tokenizer below.
else
  echo "SKIP: $SHARED/tokenizers/gpt2 not found (set SHARED)"
fi

# a hand-written tokenizer.json: array merges, an added special token beyond the vocab, bytes
# outside ASCII (U+0120 = space, U+010A = newline, U+00E9 = byte 0xE9). Without a single-byte
# token for every byte UTF-8 uses, tfm.h refuses the vocabulary, and so does the converter
# (nothing written); with the rest of the byte alphabet from id 8 on it converts.
mkdir -p "$T/tj"
tj_json() { # $1: the vocabulary entries after the six of the test
  printf '%s\n' '{"version": "1.0", "added_tokens": [{"id": 6, "content": "<|end\u007c>", "special": true},' \
    '  {"id": 7, "content": "\t\t", "special": false}],' \
    ' "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},' \
    " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"\\u0120\": 2, \"\\u0120a\": 3, \"\\u0120ab\": 4, \"\\u010a\\u00e9\": 5$1}," \
    '   "merges": [["\u0120", "a"], ["\u0120a", "b"]]}}'
}
# the byte-level alphabet (GPT-2's bytes_to_unicode) of every byte but a, b, space, C0, C1, F5..FF
BYTES=$(awk 'BEGIN { n = 0; id = 8
  for (b = 0; b < 256; b++) {
    printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174
    cp = printable ? b : 256 + n++
    if (b == 97 || b == 98 || b == 32 || b == 192 || b == 193 || b >= 245) continue
    printf ", \"\\u%04x\": %d", cp, id++ } }')
tj_json "" > "$T/tj/tokenizer.json"
F=$T/tj.tfm
rm -f "$F"
if "$CONV" --vocab-only "$T/tj" -o "$F" --quiet 2> "$T/err"; then bad "hand-written tokenizer.json without byte tokens converted"
elif grep -q 'no single-byte token for byte 0x00' "$T/err" && [ ! -f "$F" ]; then ok
else bad "hand-written tokenizer.json without byte tokens: $(cat "$T/err")"; fi
tj_json "$BYTES" > "$T/tj/tokenizer.json"
if "$CONV" --vocab-only "$T/tj" -o "$F" --quiet 2> "$T/err"; then ok; else bad "hand-written tokenizer.json"; cat "$T/err"; fi
blob_layout "$F"
expect_eq "tj n_tokens n_merges flags" "$NT $NM $(u32 "$F" $((B + 12)))" "248 2 0"
expect_eq "tj bos/eos (no <|endoftext|>)" "$(i32 "$F" $((B + 20))) $(i32 "$F" $((B + 24)))" "-1 -1"
expect_eq "tj merges" "$(merge "$F" 0) / $(merge "$F" 1)" "2 0 3 / 3 1 4"
expect_eq "tj token 4 raw" "$(tok_text "$F" 4)" " ab"
expect_eq "tj token 5 raw bytes" "$(tok_text "$F" 5 | od -An -t x1 | tr -d ' ')" "0ae9"
expect_eq "tj added special" "$(tok_text "$F" 6) $(tok_attr "$F" 6)" "<|end|> 3"
expect_eq "tj added plain" "$(tok_text "$F" 7 | od -An -t x1 | tr -d ' ') $(tok_attr "$F" 7)" "0909 2"

# --- the GPT-NeoX golden checkpoints (tests/data/models/neox_*, tests/gen/make_test_models.py) --
found=0
for d in tests/data/models/neox_*/; do
  [ -f "$d/config.json" ] || continue
  found=1; name=$(basename "$d")
  if "$CONV" "$d" -o "$T/$name.tfm" --quiet 2> "$T/err"; then ok; else bad "convert $name"; cat "$T/err"; continue; fi
  layers=$(sed -n 's/.*"num_hidden_layers": *\([0-9]*\).*/\1/p' "$d/config.json")
  expect_eq "$name n_layers" "$(u32 "$T/$name.tfm" 28)" "$layers"
  if [ -f "$d/tokenizer.json" ]; then
    [ "$(u64 "$T/$name.tfm" 104)" -gt 0 ] && ok || bad "$name: no tokenizer blob"
  fi
done
[ $found = 1 ] || echo "SKIP: no tests/data/models/neox_*/config.json"
if [ -f tests/data/models/neox_seq/config.json ]; then # tied, F16 source, rope_parameters
  F=$T/neox_seq.tfm; n=$(u32 "$F" 84)
  expect_eq "neox_seq: no output.w when tied" "$(ename "$F" $((n - 1)))" "lnf.b"
  expect_eq "neox_seq: rope_dim, residual" "$(u32 "$F" 52) $(u32 "$F" 76)" "8 0"
fi
if [ -f tests/data/models/neox_par/config.json ]; then
  if "$CONV" tests/data/models/neox_par -o "$T/check.tfm" --quiet --check > "$T/out" 2> "$T/err" &&
     grep -q "n_layers 2" "$T/out"; then ok; else bad "--check on neox_par"; cat "$T/err" "$T/out"; fi
fi

# --- error paths ------------------------------------------------------------------------------
O=$T/out.tfm
expect_fail "missing dir" "cannot open.*config.json" -- "$CONV" "$T/nope" -o "$O"
cp -r "$T/neox" "$T/e1"; sed -i 's/"gpt_neox"/"mamba"/' "$T/e1/config.json"
expect_fail "unsupported model_type" 'model_type "mamba" is not supported' -- "$CONV" "$T/e1" -o "$O"
mk_neox "$T/e2" gpt_neox.layers.0.mlp.dense_4h_to_h.bias
expect_fail "missing tensor" "missing tensor gpt_neox.layers.0.mlp.dense_4h_to_h.bias (expected shape \[8\])" -- "$CONV" "$T/e2" -o "$O"
cp -r "$T/neox" "$T/e3"; sed -i 's/"intermediate_size": 16/"intermediate_size": 32/' "$T/e3/config.json"
expect_fail "wrong shape" "dense_h_to_4h.weight: shape \[16, 8\] in the checkpoint, expected \[32, 8\]" -- "$CONV" "$T/e3" -o "$O"
cp -r "$T/neox" "$T/e4"; s=$(fsize "$T/neox/model.safetensors")
head -c $((s - 10)) "$T/neox/model.safetensors" > "$T/e4/model.safetensors"
expect_fail "truncated data" "truncated" -- "$CONV" "$T/e4" -o "$O"
head -c 100 "$T/neox/model.safetensors" > "$T/e4/model.safetensors"
expect_fail "truncated header" "header size" -- "$CONV" "$T/e4" -o "$O"
head -c 5 "$T/neox/model.safetensors" > "$T/e4/model.safetensors"
expect_fail "truncated length" "too short" -- "$CONV" "$T/e4" -o "$O"
EXTRA="gpt_neox.layers.1.mlp.extra.weight 4" mk_neox "$T/e5"
expect_fail "unused tensor" "gpt_neox.layers.1.mlp.extra.weight.*not used" -- "$CONV" "$T/e5" -o "$O"
cp -r "$T/neox" "$T/e6"; sed -i 's/"rope_scaling": null/"rope_scaling": {"type": "yarn", "factor": 2.0}/' "$T/e6/config.json"
expect_fail "rope_scaling yarn" 'rope scaling type "yarn" is not supported (supported: linear, llama3, longrope)' -- "$CONV" "$T/e6" -o "$O"
sed -i 's/"type": "yarn"/"rope_type": "dynamic"/' "$T/e6/config.json"
expect_fail "rope_scaling dynamic" 'rope scaling type "dynamic" is not supported' -- "$CONV" "$T/e6" -o "$O"
cp -r "$T/neox" "$T/e7"; sed -i 's/"rotary_pct": 0.5/"rotary_pct": 0.25/' "$T/e7/config.json"
expect_fail "odd rope_dim" "must be even" -- "$CONV" "$T/e7" -o "$O"
cp -r "$T/neox" "$T/e8"; sed -i 's/"gelu_new"/"relu"/' "$T/e8/config.json"
expect_fail "unsupported act" '"relu" is not supported' -- "$CONV" "$T/e8" -o "$O"
cp -r "$T/neox" "$T/e9"; sed -i 's/"dtype": "F32", "shape": \[16, 8\]/"dtype": "F16", "shape": [16, 8]/' "$T/e9/model.safetensors"
expect_fail "dtype size vs shape" "bytes for dtype F16" -- "$CONV" "$T/e9" -o "$O"
cp -r "$T/neox" "$T/e10"; sed -i 's/"num_hidden_layers": 1/"num_hidden_layers": "1"/' "$T/e10/config.json"
expect_fail "wrong config type" '"num_hidden_layers" must be a non-negative integer' -- "$CONV" "$T/e10" -o "$O"
# a layer count past TFM_MAX_LAYERS is refused as soon as it is read, before the per-layer
# tables (window, RoPE kind) are filled: qwen2's sizes, Gemma's own
mkdir "$T/e10q" "$T/e10g"
sed 's/"num_hidden_layers": 2,/"num_hidden_layers": 100000,/' tests/data/modern/qwen2/config.json > "$T/e10q/config.json"
sed 's/"num_hidden_layers": 3,/"num_hidden_layers": 513,/' tests/data/modern/gemma2/config.json > "$T/e10g/config.json"
expect_fail "qwen2 100000 layers" "layer count 100000 out of the supported range" -- "$CONV" "$T/e10q" -o "$O"
expect_fail "gemma2 513 layers" "layer count 513 out of the supported range" -- "$CONV" "$T/e10g" -o "$O"
cp -r "$T/neox" "$T/e11"; cp "$SHARED/tokenizers/gpt2/vocab.json" "$SHARED/tokenizers/gpt2/merges.txt" "$T/e11/" 2>/dev/null &&
  expect_fail "tokenizer larger than vocab_size" "50257 tokens but vocab_size is 16" -- "$CONV" "$T/e11" -o "$O"
cp -r "$T/gpt2" "$T/e12"; sed -i 's/"scale_attn_weights": true/"scale_attn_weights": true, "scale_attn_by_inverse_layer_idx": true/' "$T/e12/config.json"
expect_fail "gpt2 scaled attention" "attention scaling" -- "$CONV" "$T/e12" -o "$O"
cp -r "$T/gpt2" "$T/e13"; sed -i 's/"n_embd": 8/"n_embd": 8, "tie_word_embeddings": false/' "$T/e13/config.json"
expect_fail "gpt2 untied without lm_head" "missing tensor lm_head.weight (expected shape \[16, 8\])" -- "$CONV" "$T/e13" -o "$O"
if [ -f tests/data/models/phi/config.json ]; then
  cp -r tests/data/models/phi "$T/e14"; sed -i 's/"qk_layernorm": false/"qk_layernorm": true/' "$T/e14/config.json"
  expect_fail "phi qk_layernorm" "qk_layernorm" -- "$CONV" "$T/e14" -o "$O"
fi
if [ -f tests/data/models/neox_shard/model.safetensors.index.json ]; then # sharded checkpoints
  S=tests/data/models/neox_shard
  cp -r $S "$T/e15"; sed -i 's/"gpt_neox.embed_in.weight": "model-00001/"gpt_neox.embed_in.weight": "model-00002/' "$T/e15/model.safetensors.index.json"
  expect_fail "index names the wrong shard" "gpt_neox.embed_in.weight is not in model-00002\|listed in model-00002" -- "$CONV" "$T/e15" -o "$O"
  cp -r $S "$T/e16"; rm "$T/e16/model-00002-of-00002.safetensors"
  expect_fail "missing shard" "cannot open.*model-00002-of-00002.safetensors" -- "$CONV" "$T/e16" -o "$O"
  cp -r $S "$T/e17"; sed -i 's|"embed_out.weight": "model-00002|"embed_out.weight": "../model-00002|' "$T/e17/model.safetensors.index.json"
  expect_fail "shard outside the folder" "must be a plain file name" -- "$CONV" "$T/e17" -o "$O"
fi
cp -r "$T/neox" "$T/e18"; sed -i 's/"data_offsets": \[0, 512\]/"data_offsets": [4, 516]/' "$T/e18/model.safetensors"
expect_fail "tensor data not tiling the buffer" "leaves a hole\|overlaps" -- "$CONV" "$T/e18" -o "$O"
cp -r "$T/neox" "$T/e19"; sed -i '0,/"dtype": "F32", "shape": \[8\]/s//"dtype": "I32", "shape": [8]/' "$T/e19/model.safetensors"
expect_fail "integer dtype for a weight" "dtype I32 is not supported" -- "$CONV" "$T/e19" -o "$O"
rm -f "$T/e4/model.safetensors"
expect_fail "no safetensors" "no model.safetensors" -- "$CONV" "$T/e4" -o "$O"
expect_fail "bad --type" "expected f32 f16 bf16 q8_0 q4_0 q5_0 q5_1 q4_k q5_k q6_k or q4_k_m" -- "$CONV" "$T/neox" -o "$O" --type q4
expect_fail "no -o" "need a source" -- "$CONV" "$T/neox"
expect_fail "unknown option" "unknown option" -- "$CONV" "$T/neox" -o "$O" --fast

# hostile JSON, in config.json and in tokenizer.json
hostile() { # NAME JSON PATTERN
  cp -r "$T/neox" "$T/h"; printf '%s' "$2" > "$T/h/config.json"
  expect_fail "config: $1" "$3" -- "$CONV" "$T/h" -o "$O"
  rm -rf "$T/h"; mkdir -p "$T/h"; printf '%s' "$2" > "$T/h/tokenizer.json"
  expect_fail "tokenizer: $1" "$3" -- "$CONV" --vocab-only "$T/h" -o "$O"
  rm -rf "$T/h"
}
deep=$(i=0; while [ $i -lt 200 ]; do printf '['; i=$((i + 1)); done)
hostile "deep nesting" "{\"a\": $deep" "nesting too deep"
hostile "bad escape" '{"model_type": "gpt\q"}' "bad escape"
hostile "lone surrogate" '{"model_type": "\ud800x"}' "surrogate"
hostile "bad hex" '{"model_type": "\u12g4"}' "bad hex digit"
hostile "truncated" '{"model_type": "gpt_neox", "hidden_size": 8' "unexpected end of input"
hostile "unterminated string" '{"model_type": "gpt_ne' "unterminated string"
hostile "trailing text" '{"model_type": "gpt_neox"} x' "text after the JSON value"
hostile "leading zero" '{"hidden_size": 08}' "expected ','"
hostile "bad number" '{"hidden_size": -}' "bad number"
hostile "control char" "$(printf '{"model_type": "a\tb"}')" "control character"
hostile "invalid UTF-8" "$(printf '{"model_type": "\377"}')" "invalid UTF-8"
hostile "overlong UTF-8" "$(printf '{"model_type": "\300\257"}')" "invalid UTF-8"
hostile "trailing comma" '{"a": 1,}' "expected a string key"
hostile "empty" '' "unexpected end of input"

# tokenizer errors
mkdir -p "$T/t1"; sed 's/\["\\u0120a", "b"\]/["\\u0120a", "zz"]/' "$T/tj/tokenizer.json" > "$T/t1/tokenizer.json"
expect_fail "merge of an unknown token" '"zz" is not in the vocab' -- "$CONV" --vocab-only "$T/t1" -o "$O"
sed 's/"a": 0, "b": 1/"a": 0, "b": 0/' "$T/tj/tokenizer.json" > "$T/t1/tokenizer.json"
expect_fail "duplicate id" "token id 0 is used twice" -- "$CONV" --vocab-only "$T/t1" -o "$O"
sed 's/"\\u010a\\u00e9": 5/"\\u0800": 5/' "$T/tj/tokenizer.json" > "$T/t1/tokenizer.json"
expect_fail "not byte-level" "not spelled in the byte-level alphabet" -- "$CONV" --vocab-only "$T/t1" -o "$O"
sed 's/"normalizer": null/"normalizer": {"type": "NFKC"}/' "$T/tj/tokenizer.json" > "$T/t1/tokenizer.json"
expect_fail "unsupported normalizer" "normalizer NFKC is not supported" -- "$CONV" --vocab-only "$T/t1" -o "$O"
sed 's/"add_prefix_space": false/"add_prefix_space": true/' "$T/tj/tokenizer.json" > "$T/t1/tokenizer.json"
expect_fail "add_prefix_space" "add_prefix_space = true is not supported" -- "$CONV" --vocab-only "$T/t1" -o "$O"
sed 's/"b": 1,/"b": 99999999,/' "$T/tj/tokenizer.json" > "$T/t1/tokenizer.json"
expect_fail "huge id" "id must be an integer below" -- "$CONV" --vocab-only "$T/t1" -o "$O"
rm "$T/t1/tokenizer.json"
expect_fail "vocab-only without tokenizer" "no tokenizer.json" -- "$CONV" --vocab-only "$T/t1" -o "$O"

# --help
if "$CONV" --help > "$T/out" 2>&1 && grep -q -- "--vocab-only" "$T/out"; then ok; else bad "--help"; fi

echo "test_convert: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
