#!/bin/sh
# tests/test_convert_robust.sh - tfm-convert on sources that are wrong in one way each
# (tests/convert_cases.py writes them; see its docstring): it must exit 1 with a message naming
# the problem and leave no output file, or, for the controls, exit 0 with a file that tfm.h
# opens (--check). Also: a FIFO where a source file should be is refused at once (it blocked
# forever), and every file the converter does write passes the header's own checks (it used
# to exit 0 on files tfm_model_open then refused as corrupt).
# Run from the repository root after `make build/tfm-convert`; BIN=dir tests another build.
cd "$(dirname "$0")/.." || exit 1
CONV=${BIN:-build}/tfm-convert
PY=${PYTHON:-/usr/bin/python3}
W=build/test_convert_robust.$$
passed=0; failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
summary() { rm -rf "$W"; echo "test_convert_robust: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }
[ -x "$CONV" ] || { fail "$CONV not built"; summary; }
if ! [ -x "$PY" ] && ! command -v "$PY" >/dev/null; then echo "SKIP: $PY not found (needed to write the cases)"; summary; fi
mkdir -p "$W" && "$PY" tests/convert_cases.py "$W/in" || { fail "tests/convert_cases.py failed"; summary; }

# ok NAME ARGS...: exit 0 and the file opens (--check); refused NAME PATTERN ARGS...: exit 1,
# stderr matches PATTERN (grep -E), no output file.
ok() {
  n=$1; shift
  rm -f "$W/out.tfm"
  if timeout 60 "$CONV" "$@" -o "$W/out.tfm" --quiet --check > "$W/log" 2>&1 && [ -f "$W/out.tfm" ]; then pass
  else fail "$n: expected a converted file: $(head -c 300 "$W/log")"; fi
}
refused() {
  n=$1; pat=$2; shift 2
  rm -f "$W/out.tfm"
  timeout 60 "$CONV" "$@" -o "$W/out.tfm" --quiet > "$W/log" 2>&1; rc=$?
  if [ "$rc" -eq 1 ] && [ ! -f "$W/out.tfm" ] && grep -Eq "$pat" "$W/log"; then pass
  else fail "$n: expected exit 1 with /$pat/ and no file, got exit $rc: $(head -c 300 "$W/log")"; fi
}

I=$W/in
ok "control: tiny llama" "$I/hf_ok"
ok "control: tiny llama --type f16" "$I/hf_ok" --type f16
ok "70000.0 as bf16" "$I/hf_big" --type bf16
ok "70000.0 as f32" "$I/hf_big"
refused "70000.0 as f16" "q_proj.*(65504|f16)" "$I/hf_big" --type f16
ok "70000.0 as q8_0 (its block scale, 551, is finite in f16)" "$I/hf_big" --type q8_0
refused "NaN weight" "q_proj.*NaN" "$I/hf_nan"
refused "NaN weight --type q4_0" "q_proj.*NaN" "$I/hf_nan" --type q4_0
refused "+inf weight" "q_proj.*(inf|Inf)" "$I/hf_inf" --type bf16
refused "model_type with a NUL" "model_type" "$I/hf_type_nul"
refused "intermediate_size 0" "intermediate_size" "$I/hf_ff_zero"
refused "num_key_value_heads 0" "num_key_value_heads" "$I/hf_kv_zero"
refused "rope_theta 1e-50 (0 as float)" "rope" "$I/hf_theta_tiny"
refused "safetensors without tensors" "tensor" "$I/hf_no_tensors"
ok "control: tokenizer.json" --vocab-only "$I/tok_ok.json"
refused "vocabulary without the byte 0x01" "byte 0x01" --vocab-only "$I/tok_no_byte.json"
refused "added token with empty content" "." --vocab-only "$I/tok_empty_added.json"
refused "added token over a merged byte token" "." --vocab-only "$I/tok_added_byte.json"
ok "control: GGUF Q8_0 model" "$I/gguf_ok.gguf"
refused "GGUF Q8_0 block with a NaN scale" "NaN" "$I/gguf_nan.gguf"
refused "GGUF Q8_0 block with a NaN scale --type f16" "NaN" "$I/gguf_nan.gguf" --type f16
refused "GGUF vocabulary token spelled \"\"" "." --vocab-only "$I/gguf_empty_token.gguf"

# FIFOs where files should be: refused at once, never a blocked read
mkdir -p "$W/fifo_hf" && cp "$I/hf_ok/model.safetensors" "$W/fifo_hf/" && mkfifo "$W/fifo_hf/config.json"
refused "config.json is a FIFO" "regular file|FIFO" "$W/fifo_hf"
rm -f "$W/fifo_hf/config.json" && cp "$I/hf_ok/config.json" "$W/fifo_hf/" && rm "$W/fifo_hf/model.safetensors" &&
  mkfifo "$W/fifo_hf/model.safetensors"
refused "model.safetensors is a FIFO" "regular file|FIFO" "$W/fifo_hf"
mkfifo "$W/fifo.gguf" "$W/fifo.json" "$W/fifo.bin"
refused "a FIFO as the GGUF" "regular file|FIFO" "$W/fifo.gguf"
refused "a FIFO as the tokenizer.json" "regular file|FIFO" --vocab-only "$W/fifo.json"
refused "a FIFO as the llama2.c checkpoint" "regular file|FIFO" "$W/fifo.bin"
summary
