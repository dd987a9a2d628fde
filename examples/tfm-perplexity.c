/* tfm-perplexity - mean cross-entropy and perplexity of a model over a text file.

   build/tfm-perplexity -m model.tfm -f held-out.txt --ctx 256

   Windowing (a reference implementation elsewhere must do exactly the same): tokenize the
   whole file, with one BOS first only when the model asks for it (tfm_config.add_bos, as
   Llama and llama2.c models do); split the ids into consecutive, non-overlapping windows of N
   tokens (the last may be shorter); evaluate each window from position 0; score the
   prediction of token j+1 from the logits at position j for j = 0 .. len-2; average over
   every scored prediction. A window of one token scores nothing.
   Results go to stdout, progress to stderr. Exit status 0 on success, 1 on any failure. */
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

#define DEFAULT_CTX 512 /* window length unless --ctx (capped at the model's n_ctx) */
#define EVAL_BATCH 64   /* positions per tfm_session_eval call: bounds the logits buffer */
#define MAX_THREADS 1024

static const char *const usage =
    "usage: tfm-perplexity [-m MODEL.tfm] -f FILE [--ctx N] [-t THREADS]\n"
    "\n"
    "  -m FILE      model file (.tfm) with a tokenizer (default build/demo.tfm)\n"
    "  -f FILE      text to score\n"
    "  --ctx N      window length in tokens, 2 .. model n_ctx (default: min(n_ctx, 512))\n"
    "  -t N         threads (default: online CPUs, at most 8)\n"
    "  -h, --help   show this help\n"
    "\n"
    "The file is tokenized whole (BOS first only if the model wants it) and cut into\n"
    "consecutive, non-overlapping windows of N tokens (the last may be shorter). Each window is\n"
    "evaluated from position 0; the logits at position j score token j+1. Prints tokens,\n"
    "windows, the mean cross-entropy in nats/token and the perplexity exp(cross-entropy).\n";

static void die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "tfm-perplexity: error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

static void log_to_stderr(void *user, tfm_result result, const char *message) {
    (void)user;
    fprintf(stderr, "tfm-perplexity: %s: %s\n", tfm_result_string(result), message);
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

static char *read_file(const char *path, size_t *n_bytes) {
    FILE *f = fopen(path, "rb");
    size_t n = 0, cap = 1 << 16, got;
    char *buf = (char *)malloc(cap);
    if (!f) die("cannot read '%s': %s", path, strerror(errno));
    if (!buf) die("out of memory");
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap && !(buf = (char *)realloc(buf, cap *= 2))) die("out of memory");
    }
    if (ferror(f)) die("cannot read '%s'", path);
    fclose(f);
    *n_bytes = n;
    return buf;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *model_path = DEFAULT_MODEL, *path = NULL;
    long n_win = 0, n_threads = 0;
    int i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); return 0; }
        else if (!strcmp(a, "-m")) model_path = str_arg(argc, argv, &i);
        else if (!strcmp(a, "-f")) path = str_arg(argc, argv, &i);
        else if (!strcmp(a, "--ctx")) n_win = long_arg(argc, argv, &i, 2, TFM_MAX_CTX);
        else if (!strcmp(a, "-t")) n_threads = long_arg(argc, argv, &i, 1, MAX_THREADS);
        else die("unknown argument '%s' (see --help)", a);
    }
    if (!path) die("-f FILE is required (see --help)");
    if (n_threads == 0) {
        long n_cpu = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n_cpu < 1 ? 1 : n_cpu > 8 ? 8 : n_cpu;
    }

    tfm_model_desc md;

    memset(&md, 0, sizeof md); /* all zero: defaults */
    md.path = model_path;
    md.logger.log = log_to_stderr;
    tfm_model *model;
    tfm_result r = tfm_model_open(&md, &model);
    if (r != TFM_OK) die("cannot open model '%s': %s", model_path, tfm_result_string(r));
    tfm_config cfg = tfm_model_config(model);
    if (cfg.n_layers == 0) die("'%s' has no weights (a vocab-only file?)", model_path);
    if (cfg.n_tokens == 0) die("'%s' has no tokenizer", model_path);
    fprintf(stderr, "model: %d layers, d_model %d, %d heads, n_vocab %d, n_ctx %d, %s\n",
            cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_vocab, cfg.n_ctx,
            cfg.dtype == TFM_DTYPE_F16 ? "f16" : "f32");
    fprintf(stderr, "build: %s, threads: %ld\n", tfm_build_info(), n_threads);
    if (n_win == 0) n_win = cfg.n_ctx < DEFAULT_CTX ? cfg.n_ctx : DEFAULT_CTX;
    if (n_win > cfg.n_ctx) die("--ctx %ld is past the model's context (%d)", n_win, cfg.n_ctx);

    /* Tokenize the whole file, after BOS when the model wants one: count, then fill. */
    size_t text_bytes, n_ids = 0;
    char *text = read_file(path, &text_bytes);
    r = tfm_model_tokenize(model, text, text_bytes, NULL, 0, &n_ids);
    if (r != TFM_OK && r != TFM_ERR_INVALID_ARG) die("tokenize: %s", tfm_result_string(r));
    size_t bos = cfg.add_bos ? 1 : 0;
    int32_t *ids = (int32_t *)malloc((n_ids + 1 + bos) * sizeof *ids);
    if (!ids) die("out of memory");
    if (bos) ids[0] = cfg.bos_id;
    if ((r = tfm_model_tokenize(model, text, text_bytes, ids + bos, n_ids + 1, &n_ids)) != TFM_OK)
        die("tokenize: %s", tfm_result_string(r));
    n_ids += bos;
    if (n_ids < 2) die("'%s' has %zu tokens; at least 2 are needed", path, n_ids);
    size_t n_windows = (n_ids + (size_t)n_win - 1) / (size_t)n_win;

    /* A session just long enough for one window. */
    tfm_session_desc sd;
    memset(&sd, 0, sizeof sd); /* all zero: defaults */
    sd.n_ctx = (int)n_win;
    sd.n_threads = (int)n_threads;
    tfm_session *session;
    if ((r = tfm_session_create(model, &sd, &session)) != TFM_OK)
        die("cannot create session: %s", tfm_result_string(r));
    float *logits = (float *)malloc((size_t)EVAL_BATCH * (size_t)cfg.n_vocab * sizeof *logits);
    if (!logits) die("out of memory");

    bool progress = isatty(STDERR_FILENO); /* a running figure, on a terminal only */
    double sum_nats = 0.0, t0 = now_seconds();
    size_t n_scored = 0, w;
    for (w = 0; w < n_windows; w++) {
        const int32_t *win = ids + w * (size_t)n_win;
        size_t rest = n_ids - w * (size_t)n_win;
        int len = rest < (size_t)n_win ? (int)rest : (int)n_win, j0, j;
        /* Positions 0..len-2 predict something; the last position's logits are not needed. */
        for (j0 = 0; j0 < len - 1; j0 += EVAL_BATCH) {
            int n = len - 1 - j0 < EVAL_BATCH ? len - 1 - j0 : EVAL_BATCH;
            r = tfm_session_eval(session, win + j0, n, j0, logits); /* j0 = 0 rewinds the cache */
            if (r != TFM_OK)
                die("window %zu: %s: %s", w, tfm_result_string(r), tfm_session_last_error(session));
            for (j = 0; j < n; j++) { /* logits row j (position j0 + j) predicts the next id */
                const float *row = logits + (size_t)j * (size_t)cfg.n_vocab;
                sum_nats += (double)tfm_cross_entropy(row, cfg.n_vocab, win[j0 + j + 1]);
            }
            n_scored += (size_t)n;
        }
        if (progress)
            fprintf(stderr, "\rwindow %zu/%zu: %.4f nats/token so far", w + 1, n_windows,
                    n_scored ? sum_nats / (double)n_scored : 0.0);
    }
    double seconds = now_seconds() - t0;
    fprintf(stderr, "%s%zu predictions in %.2f s (%.1f tokens/s)\n", progress ? "\n" : "",
            n_scored, seconds, seconds > 0 ? (double)n_scored / seconds : 0.0);

    double ce = sum_nats / (double)n_scored;
    printf("tokens: %zu\n", n_ids);
    printf("windows: %zu\n", n_windows);
    printf("cross-entropy: %.6f nats/token\n", ce);
    printf("perplexity: %.6f\n", exp(ce));

    free(logits);
    free(ids);
    free(text);
    tfm_session_destroy(session);
    tfm_model_close(model);
    return 0;
}
