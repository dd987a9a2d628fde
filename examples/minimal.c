/* minimal.c - the quick start of tfm.h as a program: open a model, tokenize a prompt,
   evaluate it, then sample 32 tokens and print them as they come.

   cc -std=c99 -O2 -I. examples/minimal.c -o minimal -lm
   ./minimal model.tfm "In the beginning"       (no arguments: build/demo.tfm, "Hello")                                                  */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <stdio.h>
#include <string.h>

#define N_GENERATE 32
#define MAX_PROMPT 256

/* The library never prints: it hands each failure's detail to a logger (model open) or keeps
   it in tfm_session_last_error (session calls). */
static void log_error(void *user, tfm_result result, const char *message) {
    (void)user;
    fprintf(stderr, "tfm: %s: %s\n", tfm_result_string(result), message);
}

static int fail(const char *what, tfm_result r, const char *detail) {
    fprintf(stderr, "minimal: %s: %s%s%s\n", what, tfm_result_string(r), *detail ? ": " : "",
            detail);
    return 1;
}

int main(int argc, char **argv) {
    const char *prompt = argc > 2 ? argv[2] : "Hello";
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: minimal [MODEL.tfm [PROMPT]]   (default build/demo.tfm, made by make demo)\n");
        return 0;
    }

    tfm_model_desc md; /* all zero means default: C "= {0}", C++ "= {}", or memset (both) */
    memset(&md, 0, sizeof md);
    md.path = argc > 1 ? argv[1] : "build/demo.tfm";
    md.logger.log = log_error;
    tfm_model *model;
    tfm_result r = tfm_model_open(&md, &model);
    if (r != TFM_OK) return fail("open", r, "");
    tfm_config cfg = tfm_model_config(model);

    tfm_session_desc sd;
    memset(&sd, 0, sizeof sd);
    tfm_session *s;
    r = tfm_session_create(model, &sd, &s);
    if (r != TFM_OK) return fail("session", r, "");

    int32_t ids[MAX_PROMPT];
    size_t n_ids = 0, bos = cfg.add_bos ? 1 : 0; /* Llama-style models expect BOS first */
    ids[0] = cfg.bos_id;
    r = tfm_model_tokenize(model, prompt, strlen(prompt), ids + bos, MAX_PROMPT - bos, &n_ids);
    if (r != TFM_OK) return fail("tokenize", r, "no tokenizer, or a prompt over 255 tokens");
    n_ids += bos;
    if (n_ids == 0 || n_ids + N_GENERATE > (size_t)tfm_session_n_ctx(s))
        return fail("prompt", TFM_ERR_INVALID_ARG, "empty, or too long for the context");
    r = tfm_session_eval(s, ids, n_ids, 0, NULL); /* positions 0 .. n_ids-1 */
    if (r != TFM_OK) return fail("eval", r, tfm_session_last_error(s));

    tfm_sampler_desc pd; /* all zero: greedy */
    memset(&pd, 0, sizeof pd);
    pd.n_vocab = cfg.n_tokens < cfg.n_vocab ? cfg.n_tokens : cfg.n_vocab; /* no padding ids */
    pd.temperature = 0.8f;
    pd.top_k = 40;
    pd.seed = 42;
    tfm_sampler *smp;
    r = tfm_sampler_create(&pd, &smp);
    if (r != TFM_OK) return fail("sampler", r, "");

    printf("%s", prompt);
    tfm_utf8_stream stream = {{0}, 0}; /* holds a partial UTF-8 character between tokens */
    char text[1024]; /* >= 3 * (longest token + 4) */
    const float *logits = tfm_session_logits(s);
    int pos = (int)n_ids;
    for (int i = 0; i < N_GENERATE; i++) {
        int32_t next;
        r = tfm_sample(smp, logits, pd.n_vocab, &next);
        if (r != TFM_OK) return fail("sample", r, "");
        if (next == cfg.eos_id) break;
        size_t n_text;
        r = tfm_model_detokenize(model, &stream, next, text, sizeof text, &n_text);
        if (r != TFM_OK) return fail("decode", r, "");
        fwrite(text, 1, n_text, stdout);
        fflush(stdout);
        r = tfm_session_decode(s, next, pos++, &logits); /* the next token's logits */
        if (r != TFM_OK) return fail("eval", r, tfm_session_last_error(s));
    }
    printf("%.*s\n", (int)tfm_utf8_stream_flush(&stream, text, sizeof text), text);

    tfm_sampler_destroy(smp);
    tfm_session_destroy(s);
    tfm_model_close(model);
    return 0;
}
