# tfm.h - build the tools, examples and tests. `make`, `make test`, `make demo`, `make sanitize`.
CC       ?= cc
CXX      ?= c++
OPT      ?= -O2 -march=native
OPENMP   ?= $(shell printf 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
WARN      = -std=c99 -Wall -Wextra -Wpedantic -Werror
STRICT    = $(WARN) -Wshadow -Wconversion -Wsign-conversion -Wstrict-prototypes \
            -Wmissing-prototypes -Wdouble-promotion
CFLAGS   ?=
CFLAGS_ALL = $(OPT) $(OPENMP) $(WARN) -I. $(CFLAGS)
LDLIBS    = -lm
SHARED   ?= ../shared
PYTHON   ?= /usr/bin/python3

PROGRAMS = build/tfm-convert build/tfm-generate build/tfm-tokenize build/tfm-perplexity build/tfm-bench build/tfm-chat
TESTS    = $(patsubst tests/%.c,build/%,$(wildcard tests/test_*.c))

.PHONY: all test sanitize check-compile unicode-check demo bench fuzz clean
all: $(PROGRAMS)

# Golden test checkpoints (Hugging Face layout, tests/data/models/NAME/, every architecture)
# converted with the same tool users run: build/models/NAME.tfm (f32) and NAME-f16.tfm.
TEST_MODELS := $(patsubst tests/data/models/%/config.json,build/models/%.tfm,$(wildcard tests/data/models/*/config.json))
TEST_MODELS += $(patsubst %.tfm,%-f16.tfm,$(TEST_MODELS))
DEMO_MODEL  = $(if $(wildcard models/demo/config.json),build/demo.tfm)
# Today's small models (tests/data/modern, tests/test_modern.c): each Hugging Face folder and,
# where it has one, its model.gguf.
TEST_MODELS += $(patsubst tests/data/modern/%/config.json,build/modern/%.tfm,$(wildcard tests/data/modern/*/config.json))
TEST_MODELS += $(patsubst tests/data/modern/%/model.gguf,build/modern/%-gguf.tfm,$(wildcard tests/data/modern/*/model.gguf))

TEST_MODELS += build/modern/tok_gemma.tfm build/modern/tok_phi3.tfm

build/modern/tok_%.tfm: tests/data/tokenizer/%.json build/tfm-convert
	@mkdir -p build/modern
	build/tfm-convert --vocab-only tests/data/tokenizer/$*.json -o $@ --quiet

build/modern/%-gguf.tfm: tests/data/modern/%/model.gguf build/tfm-convert
	@mkdir -p build/modern
	build/tfm-convert tests/data/modern/$*/model.gguf -o $@ --quiet

build/modern/%.tfm: tests/data/modern/%/config.json tests/data/modern/%/model.safetensors build/tfm-convert
	@mkdir -p build/modern
	build/tfm-convert tests/data/modern/$* -o $@ --quiet

build/models/%-f16.tfm: tests/data/models/%/config.json build/tfm-convert
	@mkdir -p build/models
	build/tfm-convert tests/data/models/$* -o $@ --type f16 --quiet

build/models/%.tfm: tests/data/models/%/config.json build/tfm-convert
	@mkdir -p build/models
	build/tfm-convert tests/data/models/$* -o $@ --quiet

build/demo.tfm: models/demo/config.json models/demo/model.safetensors models/demo/tokenizer.json build/tfm-convert
	build/tfm-convert models/demo -o $@ --type f16

build:
	@mkdir -p build

# tfm-convert: the Hugging Face path and the shared core, the GGUF and llama2.c importers.
CONVERT_SRC = tools/tfm-convert.c tools/convert_gguf.c tools/convert_llama2c.c tools/tfm_write.c tools/quant.c
build/tfm-convert: $(CONVERT_SRC) tools/convert.h tools/tfm_write.h tools/json.h tools/gguf.h tfm.h | build
	$(CC) $(CFLAGS_ALL) -o $@ $(CONVERT_SRC) $(LDLIBS)

build/tfm-bench: tools/tfm-bench.c tools/tfm_write.c tools/tfm_write.h tools/quant.c tools/quant.h tfm.h | build
	$(CC) $(CFLAGS_ALL) -o $@ tools/tfm-bench.c tools/tfm_write.c tools/quant.c $(LDLIBS)

# Speed against this machine's measured bandwidth and FMA peak (not a test: numbers only).
BENCH_ARGS ?= --shape pythia-410m --type f32 -t 2
bench: build/tfm-bench
	build/tfm-bench $(BENCH_ARGS)

build/%: examples/%.c tfm.h | build
	$(CC) $(CFLAGS_ALL) -o $@ $< $(LDLIBS)

build/test_%: tests/test_%.c tests/check.h tests/tfm_writer.h tests/tok_data.h tfm.h | build
	$(CC) $(CFLAGS_ALL) -o $@ $< $(LDLIBS)

# The header must compile warning-free as strict C99 (gcc and clang), as C++11, and with its
# build switches; CI also greps the object for mutable globals.
check-compile: | build
	@printf '#define TFM_IMPLEMENTATION\n#include "tfm.h"\n' > build/impl.c
	@cp build/impl.c build/impl.cpp
	$(CC) $(STRICT) -I. -c build/impl.c -o build/impl.o
	$(CC) $(STRICT) -DTFM_NO_SIMD -DTFM_NO_MMAP -I. -c build/impl.c -o build/impl_nosimd.o
	$(CC) $(STRICT) -DTFM_STATIC -I. -c build/impl.c -o build/impl_static.o
	$(CC) $(STRICT) -DTFM_NO_STDIO -I. -c build/impl.c -o build/impl_nostdio.o
	$(CC) $(STRICT) -DTFM_NO_NFC -I. -c build/impl.c -o build/impl_nonfc.o
	@nm build/impl.o | grep -q tfm__uc_decomp && ! nm build/impl_nonfc.o | grep -q 'tfm__uc_decomp\|tfm__nfc_' \
	  || { echo 'TFM_NO_NFC must leave the NFC tables and code out'; exit 1; }
	@printf 'int tfm_unit2(void);\nint main(void){return tfm_unit2();}\n' > build/static_main.c
	@printf '#define TFM_STATIC\n#define TFM_IMPLEMENTATION\n#include "tfm.h"\nint tfm_unit2(void);\nint tfm_unit2(void){return tfm_result_string(TFM_OK)[0] == 0;}\n' > build/static2.c
	$(CC) $(STRICT) -DTFM_STATIC -I. -c build/impl.c -o build/static1.o
	$(CC) $(STRICT) -I. -c build/static2.c -o build/static2.o
	$(CC) $(STRICT) -c build/static_main.c -o build/static_main.o
	$(CC) build/static1.o build/static2.o build/static_main.o -o build/static_link -lm
	$(CC) $(STRICT) -fopenmp -I. -c build/impl.c -o build/impl_omp.o
	if command -v clang >/dev/null; then clang $(STRICT) -I. -c build/impl.c -o build/impl_clang.o; fi
	$(CXX) -std=c++11 -Wall -Wextra -Werror -fno-exceptions -fno-rtti -I. -c build/impl.cpp -o build/impl_cpp.o
	$(CC) $(STRICT) -I. -c tests/hygiene.c -o build/hygiene.o
	@awk '/^#if defined\(TFM_IMPLEMENTATION\) && !defined\(TFM_IMPLEMENTATION_INCLUDED\)/ {on = 1} \
	  on && /^[ \t]*#[ \t]*define[ \t]/ { sub(/^[ \t]*#[ \t]*define[ \t]+/, ""); sub(/[^A-Za-z_0-9].*/, ""); \
	  if ($$0 !~ /^(TFM__|TFM_IMPLEMENTATION_INCLUDED$$|TFM_MALLOC$$|TFM_FREE$$|TFM_ASSERT$$|TFM_MAX_|TFM_SLICE_BYTES$$)/) \
	  { print "internal macro without the TFM__ prefix: " $$0; bad = 1 } } END { exit bad }' tfm.h
	@! nm build/impl.o | awk '$$2 ~ /^[BbDdCc]$$/ {print "mutable global: " $$3; bad=1} END {exit !bad}'

# tfm.h's >>unicode tables regenerated (Python standard library, no network) and compared; the
# tests run the same through tests/test_unicode.sh. --update instead of --check rewrites them.
unicode-check:
	$(PYTHON) tools/gen_unicode.py --check tfm.h

test: all $(TESTS) $(TEST_MODELS) $(DEMO_MODEL) check-compile
	@SHARED=$(SHARED) sh tests/run.sh $(TESTS)

# Address and undefined-behaviour sanitizers over the same test programs.
sanitize: all $(TEST_MODELS) $(DEMO_MODEL) | build
	@mkdir -p build/san
	@for t in $(TESTS); do n=$$(basename $$t); \
	  $(CC) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all $(WARN) -I. \
	    -o build/san/$$n tests/$$n.c $(LDLIBS) || exit 1; done
	@SHARED=$(SHARED) SAN=1 sh tests/run.sh $(patsubst build/%,build/san/%,$(TESTS))

# The demo: convert the small model that ships in models/demo (the same path real Hugging Face
# checkpoints take) and sample from it with a fixed prompt and seed.
DEMO_PROMPT ?= And God said
demo: all build/demo.tfm
	@echo "== build/tfm-generate -m build/demo.tfm -p \"$(DEMO_PROMPT)\" -n 160 --temp 0.8 --top-k 40 --repeat-penalty 1.1 --seed 42"
	@build/tfm-generate -m build/demo.tfm -p "$(DEMO_PROMPT)" -n 160 --temp 0.8 --top-k 40 \
	  --repeat-penalty 1.1 --seed 42

# libFuzzer (clang) over the .tfm reader, the tokenizer and chat templates, seeded with the test
# models and the test templates.
FUZZ_SECONDS ?= 60
fuzz: $(TEST_MODELS) | build
	clang -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz_load.c -o build/fuzz_load -lm
	clang -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz_tokenizer.c -o build/fuzz_tokenizer -lm
	clang -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz_chat.c -o build/fuzz_chat -lm
	@mkdir -p build/fuzz_load_corpus build/fuzz_tokenizer_corpus build/fuzz_chat_corpus
	cp build/models/*.tfm build/fuzz_load_corpus/
	cp tests/data/chat/templates/*.jinja build/fuzz_chat_corpus/
	build/fuzz_load -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 build/fuzz_load_corpus
	build/fuzz_tokenizer -max_total_time=$(FUZZ_SECONDS) build/fuzz_tokenizer_corpus
	build/fuzz_chat -max_total_time=$(FUZZ_SECONDS) build/fuzz_chat_corpus

clean:
	rm -rf build

# A renderer for the chat-template checks and goldens (tests/gen/check_chat_templates.sh).
build/chat_render: tests/chat_render.c tfm.h | build
	$(CC) $(CFLAGS_ALL) -o $@ $< $(LDLIBS)
