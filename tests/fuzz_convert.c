/* fuzz_convert.c - libFuzzer harnesses for tfm-convert's readers, the whole converter run on
   each input as a user runs it (the tools/ sources linked in, its main renamed tfm_convert_main).
   Built once per source (-DFUZZ_SOURCE=...):
     FUZZ_HF       a Hugging Face checkpoint: input = config.json, a NUL byte, model.safetensors
                   (the safetensors reader, config.json through the JSON reader and >>config);
     FUZZ_TOKJSON  input = tokenizer.json, converted with --vocab-only;
     FUZZ_LLAMA2C  input = u32 little-endian n, then n bytes of llama2.c checkpoint, then its
                   tokenizer.bin;
     FUZZ_GGUF     input = a GGUF file (model or vocab-only).
   Whatever the input, the converter must return (exit status 0 or 1), never crash, read out
   of bounds or hang. With -DFUZZ_STRICT also: when it says 0, the file it wrote must open with
   tfm_model_open, and a model must evaluate two tokens and tokenize a text ("the converter's
   output always opens"). Files go to build/fuzz_tmp/PID/. make fuzz builds and runs them
   (FUZZ_STRICT=1 for the strict mode) with -close_fd_mask=2: the converter's error lines are
   dropped, sanitizer reports still printed. */
#include "tfm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_HF 1
#define FUZZ_TOKJSON 2
#define FUZZ_LLAMA2C 3
#define FUZZ_GGUF 4
#ifndef FUZZ_SOURCE
#error "build with -DFUZZ_SOURCE=FUZZ_HF, FUZZ_TOKJSON, FUZZ_LLAMA2C or FUZZ_GGUF"
#endif
#define FUZZ_MAX_SESSION_BYTES ((size_t)64 << 20) /* largest model the strict mode evaluates */

int tfm_convert_main(int argc, char **argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[64];

static void put_file(const char *name, const void *p, size_t n) {
    char path[128];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(p, 1, n, f) != n) abort();
    fclose(f);
}

#ifdef FUZZ_STRICT
/* The written file opens; a model evaluates two tokens; a tokenizer tokenizes. */
static void check_output(const char *path) {
    tfm_model_desc md;
    tfm_model *m = NULL;
    tfm_result r;
    tfm_config c;
    int32_t ids[16];
    size_t n_ids;
    memset(&md, 0, sizeof md);
    md.path = path;
    if ((r = tfm_model_open(&md, &m)) != TFM_OK) {
        fprintf(stdout, "fuzz_convert: tfm-convert said 0 but %s does not open: %s\n", path, tfm_result_string(r));
        abort();
    }
    c = tfm_model_config(m);
    if (c.n_tokens > 0) tfm_model_tokenize(m, "Hello, world 12 <|x|>", 21, ids, 16, &n_ids);
    if (c.n_layers > 0 && (size_t)c.n_vocab * (size_t)c.d_model + (size_t)c.n_layers * (size_t)c.d_ff * 4 < FUZZ_MAX_SESSION_BYTES) {
        tfm_session_desc sd;
        tfm_session *s = NULL;
        memset(&sd, 0, sizeof sd);
        sd.n_ctx = c.n_ctx < 4 ? c.n_ctx : 4;
        if (tfm_session_create(m, &sd, &s) == TFM_OK) {
            ids[0] = 0;
            ids[1] = c.n_vocab > 1 ? 1 : 0;
            r = tfm_session_eval(s, ids, sd.n_ctx < 2 ? sd.n_ctx : 2, 0, NULL);
            if (r != TFM_OK && r != TFM_ERR_NOT_FINITE) abort(); /* NaN weights may pass the converter */
            tfm_session_destroy(s);
        }
    }
    tfm_model_close(m);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char out[128], src[128], tok[128];
    char *argv[8];
    int argc = 0, rc;
    if (!g_dir[0]) {
        snprintf(g_dir, sizeof g_dir, "build/fuzz_tmp/%d", (int)getpid());
        mkdir("build", 0755);
        mkdir("build/fuzz_tmp", 0755);
        mkdir(g_dir, 0755);
    }
    snprintf(out, sizeof out, "%s/out.tfm", g_dir);
    remove(out);
    argv[argc++] = (char *)"tfm-convert";
#if FUZZ_SOURCE == FUZZ_HF
    {
        const uint8_t *nul = (const uint8_t *)memchr(data, 0, size);
        if (!nul) return 0;
        put_file("config.json", data, (size_t)(nul - data));
        put_file("model.safetensors", nul + 1, size - (size_t)(nul + 1 - data));
        snprintf(src, sizeof src, "%s", g_dir);
        argv[argc++] = src;
    }
#elif FUZZ_SOURCE == FUZZ_TOKJSON
    put_file("tokenizer.json", data, size);
    snprintf(src, sizeof src, "%s/tokenizer.json", g_dir);
    argv[argc++] = (char *)"--vocab-only";
    argv[argc++] = src;
#elif FUZZ_SOURCE == FUZZ_LLAMA2C
    {
        size_t n;
        if (size < 4) return 0;
        n = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
        if (n > size - 4) n = size - 4;
        put_file("model.bin", data + 4, n);
        put_file("tokenizer.bin", data + 4 + n, size - 4 - n);
        snprintf(src, sizeof src, "%s/model.bin", g_dir);
        snprintf(tok, sizeof tok, "%s/tokenizer.bin", g_dir);
        argv[argc++] = src;
        argv[argc++] = (char *)"--tokenizer";
        argv[argc++] = tok;
    }
#elif FUZZ_SOURCE == FUZZ_GGUF
    put_file("model.gguf", data, size);
    snprintf(src, sizeof src, "%s/model.gguf", g_dir);
    argv[argc++] = src;
#endif
    (void)tok;
    argv[argc++] = (char *)"-o";
    argv[argc++] = out;
    argv[argc++] = (char *)"--quiet";
    argv[argc] = NULL;
    rc = tfm_convert_main(argc, argv);
    if (rc != 0 && rc != 1) abort();
#ifdef FUZZ_STRICT
    if (rc == 0) check_output(out);
#endif
    return 0;
}
