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

PROGRAMS = build/tfm-convert build/tfm-generate build/tfm-tokenize build/tfm-perplexity build/tfm-bench build/tfm-chat build/tfm-lab
TESTS    = $(patsubst tests/%.c,build/%,$(wildcard tests/test_*.c))

.PHONY: all test test-models sanitize test-nosimd valgrind tsan thread-check check-compile unicode-check demo lab bench fuzz clean
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

build/test_%: tests/test_%.c tests/check.h tests/alloc.h tests/tfm_writer.h tests/tok_data.h tests/tiny_model.h tfm.h | build
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
	@if command -v clang >/dev/null; then echo "clang $(STRICT) -I. -c build/impl.c"; \
	  clang $(STRICT) -I. -c build/impl.c -o build/impl_clang.o || exit 1; \
	else echo "SKIP clang compile check: clang not installed"; fi
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

# The .tfm files the tests read (tests/test_neon.sh and tests/test_windows.sh build them when run
# alone).
test-models: $(TEST_MODELS) $(DEMO_MODEL)

test: all $(TESTS) $(TEST_MODELS) $(DEMO_MODEL) check-compile
	@SHARED=$(SHARED) sh tests/run.sh $(TESTS)

# Address and undefined-behaviour sanitizers over the same test programs, and over the tools and
# CLIs, which the shell suites then run (BIN=build/san).
SAN_FLAGS = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_TESTS = $(patsubst build/%,build/san/%,$(TESTS))
SAN_PROGRAMS = $(patsubst build/%,build/san/%,$(PROGRAMS))
build/san/test_%: tests/test_%.c tests/check.h tests/alloc.h tests/tfm_writer.h tests/tok_data.h tests/tiny_model.h tfm.h
	@mkdir -p build/san
	$(CC) $(SAN_FLAGS) $(OPENMP) $(WARN) -I. -o $@ $< $(LDLIBS)
build/san/tfm-convert: $(CONVERT_SRC) tools/convert.h tools/tfm_write.h tools/json.h tools/gguf.h tools/quant.h tfm.h
	@mkdir -p build/san
	$(CC) $(SAN_FLAGS) $(OPENMP) $(WARN) -I. -o $@ $(CONVERT_SRC) $(LDLIBS)
build/san/tfm-bench: tools/tfm-bench.c tools/tfm_write.c tools/quant.c tfm.h
	@mkdir -p build/san
	$(CC) $(SAN_FLAGS) $(OPENMP) $(WARN) -I. -o $@ tools/tfm-bench.c tools/tfm_write.c tools/quant.c $(LDLIBS)
build/san/%: examples/%.c tfm.h
	@mkdir -p build/san
	$(CC) $(SAN_FLAGS) $(OPENMP) $(WARN) -I. -o $@ $< $(LDLIBS)
sanitize: all $(SAN_TESTS) $(SAN_PROGRAMS) $(TEST_MODELS) $(DEMO_MODEL) | build
	@SHARED=$(SHARED) SAN=1 BIN=build/san EXAMPLE_CFLAGS="$(SAN_FLAGS)" sh tests/run.sh $(SAN_TESTS)

# The test programs with TFM_NO_SIMD (the scalar kernels only: what a compiler or CPU without
# the vector sets runs).
NOSIMD_TESTS = $(patsubst build/%,build/nosimd/%,$(TESTS))
build/nosimd/test_%: tests/test_%.c tests/check.h tests/alloc.h tests/tfm_writer.h tests/tok_data.h tests/tiny_model.h tfm.h
	@mkdir -p build/nosimd
	$(CC) $(CFLAGS_ALL) -DTFM_NO_SIMD -o $@ $< $(LDLIBS)
test-nosimd: all $(NOSIMD_TESTS) $(TEST_MODELS) $(DEMO_MODEL)
	@SHARED=$(SHARED) SAN=1 sh tests/run.sh $(NOSIMD_TESTS)

# One end-to-end generation (the demo model, or a test model without it) under valgrind's
# memcheck: every read of the mapped file and the session, no leak. The binary is built for
# the baseline x86-64 (valgrind has no AVX-512); the kernel set is then what valgrind's CPU
# offers. Skipped with a message when valgrind is missing.
VG_MODEL = $(if $(DEMO_MODEL),build/demo.tfm,build/models/neox_tok.tfm)
valgrind: $(TEST_MODELS) $(DEMO_MODEL) | build
	@if ! command -v valgrind >/dev/null; then echo "SKIP valgrind: not installed"; else \
	  mkdir -p build/vg && $(CC) -O2 -g $(WARN) -I. -o build/vg/tfm-generate examples/tfm-generate.c $(LDLIBS) && \
	  echo "== valgrind build/vg/tfm-generate -m $(VG_MODEL) -p \"$(DEMO_PROMPT)\" -n 12 --temp 0.8 --seed 7" && \
	  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    build/vg/tfm-generate -m $(VG_MODEL) -p "$(DEMO_PROMPT)" -n 12 --temp 0.8 --seed 7 -t 1 && \
	  echo "valgrind: 1 passed, 0 failed"; fi

# ThreadSanitizer over the thread tests (tests/test_threads.c: many sessions on one model, host
# threads coming and going, OpenMP teams and a host parallel_for), built with gcc and with clang,
# each with -fopenmp. tests/tsan.supp says what it suppresses and why. A compiler, or its TSan
# or OpenMP runtime, that is missing is skipped with a message; a report fails.
TSAN_OPTS = suppressions=$(CURDIR)/tests/tsan.supp ignore_noninstrumented_modules=1 halt_on_error=1 exitcode=66
tsan: | build
	@for cc in gcc clang; do \
	  if ! command -v $$cc >/dev/null; then echo "SKIP tsan $$cc: not installed"; continue; fi; \
	  if ! printf 'int main(void){return 0;}' | $$cc -fsanitize=thread -fopenmp -x c - -o build/tsan_probe 2>/dev/null; then \
	    echo "SKIP tsan $$cc: no ThreadSanitizer or OpenMP runtime for it (libclang-rt-14-dev, libomp-14-dev)"; continue; fi; \
	  echo "== tsan $$cc -fopenmp: build/tsan_$$cc"; \
	  $$cc -O1 -g -fsanitize=thread -fopenmp $(WARN) -I. -o build/tsan_$$cc tests/test_threads.c $(LDLIBS) || exit 1; \
	  TSAN_OPTIONS="$(TSAN_OPTS)" build/tsan_$$cc || exit 1; \
	done

# The thread tests built by clang -fopenmp (LLVM's libomp: the runtime of Android, macOS and iOS
# builds); skipped with a message when clang or libomp is missing.
thread-check: | build
	@if ! command -v clang >/dev/null; then echo "SKIP thread-check: clang not installed"; \
	elif ! printf '#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}' | clang -fopenmp -x c - -o build/omp_probe 2>/dev/null; then \
	  echo "SKIP thread-check: no OpenMP runtime for clang (libomp-14-dev)"; \
	else echo "== clang -fopenmp: build/test_threads_clang"; \
	  clang $(OPT) -fopenmp $(WARN) -I. -o build/test_threads_clang tests/test_threads.c $(LDLIBS) && build/test_threads_clang; fi

# The demo: convert the small model that ships in models/demo (the same path real Hugging Face
# checkpoints take) and sample from it with a fixed prompt and seed.
DEMO_PROMPT ?= And God said
demo: all build/demo.tfm
	@echo "== build/tfm-generate -m build/demo.tfm -p \"$(DEMO_PROMPT)\" -n 160 --temp 0.8 --top-k 40 --repeat-penalty 1.1 --seed 42"
	@build/tfm-generate -m build/demo.tfm -p "$(DEMO_PROMPT)" -n 160 --temp 0.8 --top-k 40 \
	  --repeat-penalty 1.1 --seed 42

# The lab on the demo model: every ablation's table (README "Why it works, measured") and the
# chart models/demo/lab.svg, rewritten (examples/tfm-lab.c).
lab: build/tfm-lab build/demo.tfm
	build/tfm-lab build/demo.tfm --plot models/demo/lab.svg

# libFuzzer (clang) over every reader: the .tfm loader, the tokenizer, chat templates, and
# tfm-convert's JSON, GGUF, safetensors (Hugging Face), tokenizer.json and llama2.c readers
# (tests/fuzz.sh lists the harnesses and their seeds). FUZZ_SECONDS=N per target; FUZZ_STRICT=1
# also requires that every file the converter writes opens. Skips without clang's libFuzzer.
FUZZ_SECONDS ?= 60
fuzz: $(TEST_MODELS) | build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_STRICT=$(FUZZ_STRICT) FUZZ_TARGETS="$(FUZZ_TARGETS)" sh tests/fuzz.sh

clean:
	rm -rf build

# A renderer for the chat-template checks and goldens (tests/gen/check_chat_templates.sh).
build/chat_render: tests/chat_render.c tfm.h | build
	$(CC) $(CFLAGS_ALL) -o $@ $< $(LDLIBS)
