#!/bin/sh
# tests/fuzz.sh - builds and runs every libFuzzer harness (make fuzz runs it):
#   fuzz_load        the .tfm reader (tests/fuzz_load.c), seeded with build/models/*.tfm
#   fuzz_tokenizer   the library's tokenizer (tests/fuzz_tokenizer.c), its own seeds
#   fuzz_chat        chat templates (tests/fuzz_chat.c), tests/data/chat/templates
#   fuzz_json        tfm-convert's JSON reader (tests/fuzz_json.c), tests/fuzz/json + the repo's JSON
#   fuzz_gguf        tfm-convert's GGUF reader (tests/fuzz_gguf.c), tests/data/gguf + model GGUFs
#   fuzz_convert_hf, _tokjson, _llama2c, _gguf   the whole converter (tests/fuzz_convert.c) on a
#                    Hugging Face checkpoint (config.json NUL model.safetensors from tests/data),
#                    a tokenizer.json (--vocab-only), a llama2.c checkpoint + tokenizer.bin
#                    (tests/fuzz/llama2c) and a GGUF file
# FUZZ_SECONDS=N per target (default 60). FUZZ_STRICT=1: the converter harnesses also require
# that every file the converter says it wrote opens, evaluates and tokenizes. FUZZ_TARGETS="a b"
# runs only those. Corpora grow in build/fuzz_NAME_corpus (seeds copied in first). Prints one
# line per target: runs, corpus files and bytes; exits non-zero if a target found a failure
# (its crash-* input is left in build/). Without clang's libFuzzer runtime it skips (exit 0).
cd "$(dirname "$0")/.." || exit 1
SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"load tokenizer chat json gguf convert_hf convert_tokjson convert_llama2c convert_gguf"}
FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -I."
mkdir -p build/fuzz_obj || exit 1
if ! command -v clang >/dev/null; then echo "SKIP fuzz: clang not installed"; exit 0; fi
if ! printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return (int)(d && n) * 0; }\n' |
     clang -fsanitize=fuzzer,address -x c - -o build/fuzz_obj/probe 2>/dev/null; then
  echo "SKIP fuzz: clang has no libFuzzer / ASan runtime here (libclang-rt-14-dev)"; exit 0
fi
OMP=$(printf 'int main(void){return 0;}' | clang -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
STRICT=${FUZZ_STRICT:+-DFUZZ_STRICT}
failed=0

# The converter's units, built once for the four converter harnesses.
build_converter() {
  [ -f build/fuzz_obj/.converter$STRICT ] && return 0
  for u in tfm-convert convert_gguf convert_llama2c tfm_write quant; do
    clang -g -O1 -fsanitize=fuzzer-no-link,address,undefined $OMP -I. -Dmain=tfm_convert_main \
      -c tools/$u.c -o build/fuzz_obj/$u.o || return 1
  done
  rm -f build/fuzz_obj/.converter*; : > build/fuzz_obj/.converter$STRICT
}

# seed NAME: fill build/fuzz_NAME_corpus with its seeds (kept between runs).
seed() {
  c=build/fuzz_$1_corpus; mkdir -p "$c"
  case $1 in
    load) cp build/models/*.tfm "$c"/ 2>/dev/null ;;
    tokenizer) clang -DFUZZ_SEED_MAIN -I. tests/fuzz_tokenizer.c -o build/fuzz_obj/tok_seeds -lm && build/fuzz_obj/tok_seeds "$c" ;;
    chat) cp tests/data/chat/templates/*.jinja "$c"/ ;;
    json) cp tests/fuzz/json/* "$c"/; for f in tests/data/models/*/config.json tests/data/tokenizer/*.json; do
            cp "$f" "$c/$(echo "$f" | tr / _)"; done ;;
    gguf|convert_gguf) cp tests/data/gguf/tok/*.gguf tests/data/gguf/quant/*.gguf "$c"/
            for f in tests/data/models/*/model*.gguf tests/data/modern/*/model.gguf; do
              cp "$f" "$c/$(basename "$(dirname "$f")")-$(basename "$f")"; done ;;
    convert_hf) for d in tests/data/models/*/ tests/data/modern/*/; do
            [ -f "$d/config.json" ] && [ -f "$d/model.safetensors" ] &&
              { cat "$d/config.json"; printf '\0'; cat "$d/model.safetensors"; } > "$c/$(basename "$d")"; done ;;
    convert_tokjson) cp tests/data/tokenizer/*.json "$c"/; for d in tests/data/models/*/; do
            [ -f "$d/tokenizer.json" ] && cp "$d/tokenizer.json" "$c/$(basename "$d").json"; done ;;
    convert_llama2c) cp tests/fuzz/llama2c/* "$c"/ ;;
  esac
}

for t in $TARGETS; do
  bin=build/fuzz_$t
  start=$(date +%s)
  case $t in
    convert_*)
      src=$(echo "${t#convert_}" | tr a-z A-Z)
      build_converter && clang $FLAGS $OMP $STRICT -DFUZZ_SOURCE=FUZZ_$src tests/fuzz_convert.c build/fuzz_obj/tfm-convert.o \
        build/fuzz_obj/convert_gguf.o build/fuzz_obj/convert_llama2c.o build/fuzz_obj/tfm_write.o build/fuzz_obj/quant.o \
        -o "$bin" -lm || { echo "FAIL fuzz_$t: does not build"; failed=$((failed + 1)); continue; }
      opts="-close_fd_mask=2 -max_len=400000" ;;
    *) clang $FLAGS tests/fuzz_$t.c -o "$bin" -lm || { echo "FAIL fuzz_$t: does not build"; failed=$((failed + 1)); continue; }
      opts="" ;;
  esac
  seed "$t"
  log=build/fuzz_$t.log
  "$bin" -max_total_time="$SECONDS_EACH" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 $opts \
    -artifact_prefix=build/fuzz_"$t"- build/fuzz_"$t"_corpus > "$log" 2>&1; rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  files=$(ls build/fuzz_"$t"_corpus | wc -l); bytes=$(du -sb build/fuzz_"$t"_corpus | cut -f1)
  if [ "$rc" -ne 0 ]; then
    failed=$((failed + 1)); echo "FAIL fuzz_$t (exit $rc): see $log"; grep -E 'ERROR|SUMMARY|does not open' "$log" | head -5
  fi
  echo "fuzz_$t: ${runs:-?} runs in ${SECONDS_EACH} s, corpus $files files, $bytes bytes ($(($(date +%s) - start)) s with the build)"
done
[ "$failed" -eq 0 ]
