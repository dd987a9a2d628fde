/* tfm-generate - generate text from a .tfm model, streaming it to stdout.

   build/tfm-generate -m model.tfm -p "In the beginning" -n 64 --temp 0.8 --seed 1

   The prompt is echoed first so the output reads as a continuation; statistics and the reason
   generation stopped go to stderr. Exit status 0 on success, 1 on any bad argument or failure. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sysconf */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MODEL "build/demo.tfm" /* the model make demo converts from models/demo */

#define DUMP_BATCH 64       /* prompt positions per tfm_session_eval call when dumping logits */
#define MAX_COUNT (1L << 30) /* bound for -n and --top-k */
#define MAX_THREADS 1024

static const char *const usage =
    "usage: tfm-generate [-m MODEL.tfm] (-p PROMPT | --tokens ID,ID,...) [options]\n"
    "\n"
    "  -m FILE               model file (.tfm; default build/demo.tfm, made by make demo)\n"
    "  -p TEXT               prompt text (needs a model with a tokenizer; BOS goes first\n"
    "                        when the model expects it, as Llama models do)\n"
    "  --tokens LIST         prompt as token ids, separated by commas or spaces\n"
    "  -n N                  tokens to generate (default 128; 0: evaluate the prompt only)\n"
    "  --temp T              temperature (default 0.8; 0: greedy)\n"
    "  --top-k K             keep the K most likely tokens (default 40; 0: off)\n"
    "  --top-p P             keep the smallest set with probability mass >= P, in (0,1]\n"
    "                        (default 0.95; 1: off)\n"
    "  --min-p P             drop tokens with p < P * p_max, in [0,1] (default 0: off)\n"
    "  --repeat-penalty R    penalize the last 64 tokens, >= 0 (default 1.0; 0 or 1: off)\n"
    "  --seed N              sampler seed (default: from the clock)\n"
    "  -t N                  threads (default: online CPUs, at most 8)\n"
    "  --dump-logits FILE    write the logits of every evaluated position (prompt, then\n"
    "                        generated) as raw little-endian float32 [positions, n_vocab]\n"
    "  -h, --help            show this help\n"
    "\n"
    "Generation stops at the end-of-text token (or BOS, for models that put BOS before each\n"
    "text: a new text begins), after N tokens, or when the context is full.\n"
    "With --tokens on a model without a tokenizer, token ids are printed instead of text.\n";

static void die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "tfm-generate: error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

/* The library's detail line for each failure (model open). */
static void log_to_stderr(void *user, tfm_result result, const char *message) {
    (void)user;
    fprintf(stderr, "tfm-generate: %s: %s\n", tfm_result_string(result), message);
}

static void check_session(tfm_result r, const tfm_session *s, const char *what) {
    if (r != TFM_OK) die("%s: %s: %s", what, tfm_result_string(r), tfm_session_last_error(s));
}

/* The value after the flag argv[*i]; steps *i over it. */
static const char *str_arg(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) die("missing value for %s", argv[*i]);
    return argv[++*i];
}

static long long_arg(int argc, char **argv, int *i, long lo, long hi) {
    const char *flag = argv[*i], *s = str_arg(argc, argv, i);
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE) die("%s: '%s' is not an integer", flag, s);
    if (v < lo || v > hi) die("%s: %s is outside [%ld, %ld]", flag, s, lo, hi);
    return v;
}

static float float_arg(int argc, char **argv, int *i) {
    const char *flag = argv[*i], *s = str_arg(argc, argv, i);
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        die("%s: '%s' is not a number", flag, s);
    return (float)v;
}

static uint64_t seed_arg(int argc, char **argv, int *i) {
    const char *s = str_arg(argc, argv, i);
    char *end;
    unsigned long long v;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno == ERANGE)
        die("--seed: '%s' is not a non-negative integer", s);
    return (uint64_t)v;
}

/* "12,345 6" -> ids; every id must be in [0, n_vocab). Returns the count (malloc'd *out). */
static int parse_ids(const char *s, int n_vocab, int32_t **out) {
    size_t n = 0, cap = 16;
    int32_t *ids = (int32_t *)malloc(cap * sizeof *ids);
    if (!ids) die("out of memory");
    for (;;) {
        char *end;
        long v;
        while (*s == ',' || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
        if (*s == '\0') break;
        errno = 0;
        v = strtol(s, &end, 10);
        if (end == s || errno == ERANGE || (*end && !strchr(", \t\r\n", *end)))
            die("--tokens: '%s' is not a list of integers", s);
        if (v < 0 || v >= n_vocab) die("--tokens: token id %ld is outside [0, %d)", v, n_vocab);
        if (n == cap && !(ids = (int32_t *)realloc(ids, (cap *= 2) * sizeof *ids))) die("out of memory");
        ids[n++] = (int32_t)v;
        s = end;
    }
    *out = ids;
    return (int)n;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Print one token: its text through the UTF-8 stream, or its id when there is no tokenizer. */
static void emit(const tfm_model *model, const tfm_config *cfg, tfm_utf8_stream *stream,
                 int32_t id, char **buf, size_t *buf_cap) {
    const char *bytes;
    size_t n_bytes, need, n_out;
    tfm_result r;
    if (cfg->n_tokens == 0) {
        printf("%d ", (int)id);
    } else if (id < cfg->n_tokens) { /* ids of a padded vocab past the tokenizer print nothing */
        if ((r = tfm_model_token_piece(model, id, &bytes, &n_bytes)) != TFM_OK)
            die("token %d: %s", (int)id, tfm_result_string(r));
        need = 3 * (n_bytes + 4); /* held bytes + this token, each possibly U+FFFD */
        if (need > *buf_cap && !(*buf = (char *)realloc(*buf, *buf_cap = need))) die("out of memory");
        if ((r = tfm_model_detokenize(model, stream, id, *buf, *buf_cap, &n_out)) != TFM_OK)
            die("decode token %d: %s", (int)id, tfm_result_string(r));
        fwrite(*buf, 1, n_out, stdout);
    }
    fflush(stdout);
}

static void write_logits(FILE *f, const char *path, const float *logits, size_t n) {
    if (f && fwrite(logits, sizeof *logits, n, f) != n) die("%s: write failed", path);
}

int main(int argc, char **argv) {
    const char *model_path = DEFAULT_MODEL, *prompt = NULL, *tokens_arg = NULL, *dump_path = NULL;
    long n_predict = 128, n_threads = 0;
    float temp = 0.8f, top_p = 0.95f, min_p = 0.0f, repeat_penalty = 1.0f;
    long top_k = 40;
    uint64_t seed = (uint64_t)time(NULL);
    int i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); return 0; }
        else if (!strcmp(a, "-m")) model_path = str_arg(argc, argv, &i);
        else if (!strcmp(a, "-p")) prompt = str_arg(argc, argv, &i);
        else if (!strcmp(a, "--tokens")) tokens_arg = str_arg(argc, argv, &i);
        else if (!strcmp(a, "-n")) n_predict = long_arg(argc, argv, &i, 0, MAX_COUNT);
        else if (!strcmp(a, "--temp")) temp = float_arg(argc, argv, &i);
        else if (!strcmp(a, "--top-k")) top_k = long_arg(argc, argv, &i, 0, MAX_COUNT);
        else if (!strcmp(a, "--top-p")) top_p = float_arg(argc, argv, &i);
        else if (!strcmp(a, "--min-p")) min_p = float_arg(argc, argv, &i);
        else if (!strcmp(a, "--repeat-penalty")) repeat_penalty = float_arg(argc, argv, &i);
        else if (!strcmp(a, "--seed")) seed = seed_arg(argc, argv, &i);
        else if (!strcmp(a, "-t")) n_threads = long_arg(argc, argv, &i, 1, MAX_THREADS);
        else if (!strcmp(a, "--dump-logits")) dump_path = str_arg(argc, argv, &i);
        else die("unknown argument '%s' (see --help)", a);
    }
    if ((prompt != NULL) == (tokens_arg != NULL)) die("give one of -p PROMPT and --tokens LIST");
    if (temp < 0.0f) die("--temp must be >= 0");
    if (!(top_p > 0.0f && top_p <= 1.0f)) die("--top-p must be in (0, 1]");
    if (min_p < 0.0f || min_p > 1.0f) die("--min-p must be in [0, 1]");
    if (repeat_penalty < 0.0f) die("--repeat-penalty must be >= 0");
    if (n_threads == 0) {
        long n_cpu = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n_cpu < 1 ? 1 : n_cpu > 8 ? 8 : n_cpu;
    }

    /* Open the model. The logger prints the library's detail; we add the headline. */
    tfm_model_desc md;
    memset(&md, 0, sizeof md); /* all zero: defaults */
    md.path = model_path;
    md.logger.log = log_to_stderr;
    tfm_model *model;
    tfm_result r = tfm_model_open(&md, &model);
    if (r != TFM_OK) die("cannot open model '%s': %s", model_path, tfm_result_string(r));
    tfm_config cfg = tfm_model_config(model);
    if (cfg.n_layers == 0) die("'%s' has no weights (a vocab-only file?)", model_path);
    fprintf(stderr, "model: %d layers, d_model %d, %d heads, n_vocab %d, n_ctx %d, %s\n",
            cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_vocab, cfg.n_ctx,
            cfg.dtype == TFM_DTYPE_F16 ? "f16" : "f32");
    fprintf(stderr, "build: %s, threads: %ld, seed: %llu\n", tfm_build_info(), n_threads,
            (unsigned long long)seed);
    /* Sample only among ids the tokenizer knows when the vocab is padded past it. */
    int n_sample = cfg.n_tokens > 0 && cfg.n_tokens < cfg.n_vocab ? cfg.n_tokens : cfg.n_vocab;

    /* The prompt as token ids: tokenize -p (two calls: count, then fill) or parse --tokens. */
    int32_t *prompt_ids;
    int n_prompt;
    if (tokens_arg) {
        n_prompt = parse_ids(tokens_arg, cfg.n_vocab, &prompt_ids);
    } else {
        size_t n_ids = 0, text_bytes = strlen(prompt);
        if (cfg.n_tokens == 0) die("the model has no tokenizer: give the prompt with --tokens");
        r = tfm_model_tokenize(model, prompt, text_bytes, NULL, 0, &n_ids);
        if (r != TFM_OK && r != TFM_ERR_INVALID_ARG) die("tokenize: %s", tfm_result_string(r));
        int bos = cfg.add_bos; /* the model saw BOS before every text in training */
        if (!(prompt_ids = (int32_t *)malloc((n_ids + 2) * sizeof *prompt_ids))) die("out of memory");
        if (bos) prompt_ids[0] = cfg.bos_id;
        r = tfm_model_tokenize(model, prompt, text_bytes, prompt_ids + bos, n_ids + 1, &n_ids);
        if (r != TFM_OK) die("tokenize: %s", tfm_result_string(r));
        n_prompt = (int)n_ids + bos;
    }
    if (n_prompt == 0) { /* an empty prompt starts from BOS (or EOS, GPT-2's document separator) */
        int32_t start = cfg.bos_id >= 0 ? cfg.bos_id : cfg.eos_id;
        if (start < 0) die("the prompt is empty and the model has no BOS/EOS token to start from");
        prompt_ids[0] = start;
        n_prompt = 1;
    }

    tfm_session_desc sd;

    memset(&sd, 0, sizeof sd); /* all zero: defaults */
    sd.n_threads = (int)n_threads;
    tfm_session *session;
    if ((r = tfm_session_create(model, &sd, &session)) != TFM_OK)
        die("cannot create session: %s", tfm_result_string(r));
    int n_ctx = tfm_session_n_ctx(session);
    if (n_prompt > n_ctx) die("the prompt has %d tokens; the context holds %d", n_prompt, n_ctx);

    tfm_sampler_desc pd;

    memset(&pd, 0, sizeof pd); /* all zero: defaults */
    pd.n_vocab = n_sample;
    pd.temperature = temp;
    pd.top_k = (int)top_k;
    pd.top_p = top_p;
    pd.min_p = min_p;
    pd.repeat_penalty = repeat_penalty;
    pd.seed = seed;
    tfm_sampler *sampler;
    if ((r = tfm_sampler_create(&pd, &sampler)) != TFM_OK)
        die("cannot create sampler: %s", tfm_result_string(r));
    for (i = 0; i < n_prompt; i++) tfm_sampler_accept(sampler, prompt_ids[i]);

    FILE *dump = NULL;
    float *dump_buf = NULL;
    if (dump_path) {
        if (!(dump = fopen(dump_path, "wb")))
            die("cannot write '%s': %s", dump_path, strerror(errno));
        if (!(dump_buf = (float *)malloc((size_t)DUMP_BATCH * (size_t)cfg.n_vocab * sizeof *dump_buf)))
            die("out of memory");
    }

    /* Echo the prompt, through the same UTF-8 stream the generated tokens go through. */
    tfm_utf8_stream stream = {{0}, 0};
    char *text = NULL;
    size_t text_cap = 0;
    if (prompt) { fputs(prompt, stdout); fflush(stdout); }
    else for (i = 0; i < n_prompt; i++) emit(model, &cfg, &stream, prompt_ids[i], &text, &text_cap);

    /* Evaluate the prompt in one call, or in batches whose logits_all are dumped. */
    int batch = dump ? DUMP_BATCH : n_prompt;
    double t0 = now_seconds();
    for (i = 0; i < n_prompt; i += batch) {
        int n = n_prompt - i < batch ? n_prompt - i : batch;
        check_session(tfm_session_eval(session, prompt_ids + i, n, i, dump_buf), session, "prompt");
        write_logits(dump, dump_path, dump_buf, (size_t)n * (size_t)cfg.n_vocab);
    }
    double t_prompt = now_seconds() - t0;

    /* Generate: each sampled token takes the next position, which must fit in the context. */
    int pos = n_prompt, n_gen = 0;
    const char *stop = "-n tokens generated";  /* or why it ended sooner */
    const float *logits = tfm_session_logits(session);
    t0 = now_seconds();
    while (n_gen < n_predict) {
        int32_t next;
        if (pos >= n_ctx) { stop = "the context is full"; break; }
        if ((r = tfm_sample(sampler, logits, n_sample, &next)) != TFM_OK)
            die("sample: %s", tfm_result_string(r));
        if (next == cfg.eos_id || (cfg.add_bos && next == cfg.bos_id)) { /* as llama2.c run.c */
            stop = "end of text";
            break;
        }
        emit(model, &cfg, &stream, next, &text, &text_cap);
        n_gen++;
        if (n_gen == n_predict && !dump) break; /* its logits would be unused */
        check_session(tfm_session_decode(session, next, pos, &logits), session, "decode");
        write_logits(dump, dump_path, logits, (size_t)cfg.n_vocab);
        pos++;
    }
    double t_gen = now_seconds() - t0;

    char tail[16];
    fwrite(tail, 1, tfm_utf8_stream_flush(&stream, tail, sizeof tail), stdout);
    putchar('\n');
    fflush(stdout);
    if (dump && fclose(dump) != 0) die("%s: write failed", dump_path);
    fprintf(stderr, "stop: %s (%d of %d positions used)\n",
            n_predict == 0 ? "-n 0, the prompt only" : stop, pos, n_ctx);
    fprintf(stderr, "prompt: %d tokens, %.1f tokens/s\n", n_prompt,
            t_prompt > 0 ? n_prompt / t_prompt : 0.0);
    fprintf(stderr, "generation: %d tokens, %.1f tokens/s\n", n_gen,
            t_gen > 0 ? n_gen / t_gen : 0.0);

    free(text);
    free(dump_buf);
    free(prompt_ids);
    tfm_sampler_destroy(sampler);
    tfm_session_destroy(session);
    tfm_model_close(model);
    return 0;
}
