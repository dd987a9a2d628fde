/* test_models.c - tfm.h against independent float64 references on real Hugging Face layouts.

   For each golden checkpoint tests/data/models/NAME (made by tests/gen/make_test_models.py, see its
   README), the Makefile converts the folder with build/tfm-convert into build/models/NAME.tfm
   (f32) and build/models/NAME-f16.tfm. This test opens both and compares tfm.h's logits with
   logits.f32 (float64 NumPy reference, tests/gen/ref_gpt_neox.py):
     - the whole token sequence at once (tfm_session_eval with logits_all),
     - one token at a time (tfm_session_decode), and a rewind to the middle of the sequence,
     - a 2-thread session and a host parallel_for that runs tasks in reverse order: both must be
       bit-identical to the 1-thread session,
     - the converted config (residual, rotary dims, base, act, tied head) against what the
       checkpoint says, so a converter mistake is named rather than seen as a logit diff,
     - for neox_tok: tokenize(text.txt) == tokens.txt and the token bytes spell the NFC text.
   A missing build output is a failure: the Makefile builds them before the tests run. */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"

#include <math.h>

#define DATA_DIR "tests/data/models/"
#define BUILD_DIR "build/models/"
#define MAX_TOKENS 64
/* f32 .tfm vs the float64 reference. A correct forward measures 1.4e-6..5.5e-6 here; the
   smallest plausible mistake (tanh GELU for erf, or layer_norm_eps 1e-5 for 1e-6) moves the
   logits by 1.4e-3..2.3e-3 (ref_gpt_neox.py --diagnose), so 1e-3 would catch it by a hair and
   1e-4 catches it 14x over while leaving 18x of room for rounding. */
#define F32_BOUND 1e-4

/* What the converted model must say, taken from each config.json (see the README table). */
typedef struct model_case {
    const char *name;
    double f16_bound;    /* ~3x the f16-weight effect, F32_BOUND if none (README "Tolerances") */
    int n_layers, d_model, n_heads, d_ff, n_vocab, rope_dim;
    float rope_theta, norm_eps;
    tfm_act act;
    tfm_residual residual;
    bool tied_output;
    bool has_tokenizer;
} model_case;

static const model_case CASES[] = {
    {"neox_par", 1.5e-2, 2, 64, 4, 256, 160, 4, 10000.0f, 1e-5f, TFM_ACT_GELU_ERF,
     TFM_RESIDUAL_PARALLEL, false, false},
    {"neox_seq", F32_BOUND, 3, 64, 4, 256, 136, 8, 500.0f, 1e-6f, TFM_ACT_GELU_ERF,
     TFM_RESIDUAL_SEQUENTIAL, true, false},
    {"neox_shard", F32_BOUND, 2, 64, 4, 256, 112, 16, 10000.0f, 1e-5f, TFM_ACT_GELU_TANH,
     TFM_RESIDUAL_PARALLEL, false, false},
    {"neox_tok", 1e-2, 2, 32, 4, 128, 320, 2, 10000.0f, 1e-5f, TFM_ACT_GELU_ERF,
     TFM_RESIDUAL_PARALLEL, false, true},
};

/* The golden data of one model. */
typedef struct golden {
    int32_t ids[MAX_TOKENS];
    int n_ids;
    float *logits; /* [n_ids, n_vocab] */
} golden;

/* Whole file into a malloc'd buffer (NUL-terminated for convenience); NULL if unreadable. */
static char *read_file(const char *path, size_t *n_bytes) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = (char *)malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        if (buf) {
            buf[n] = '\0';
            *n_bytes = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

static bool load_golden(const model_case *mc, golden *g) {
    char path[256], *text, *p, *end;
    size_t n_bytes = 0;
    snprintf(path, sizeof path, DATA_DIR "%s/tokens.txt", mc->name);
    text = read_file(path, &n_bytes);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) return false;
    g->n_ids = 0;
    for (p = text;; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (g->n_ids < MAX_TOKENS) g->ids[g->n_ids] = (int32_t)v;
        g->n_ids++;
    }
    free(text);
    CHECK_MSG(g->n_ids > 0 && g->n_ids <= MAX_TOKENS, "%s: %d ids", path, g->n_ids);
    if (g->n_ids <= 0 || g->n_ids > MAX_TOKENS) return false;
    snprintf(path, sizeof path, DATA_DIR "%s/logits.f32", mc->name);
    g->logits = (float *)read_file(path, &n_bytes);
    CHECK_MSG(g->logits && n_bytes == (size_t)g->n_ids * (size_t)mc->n_vocab * sizeof(float),
              "%s: %zu bytes, expected %d x %d floats", path, n_bytes, g->n_ids, mc->n_vocab);
    return g->logits && n_bytes == (size_t)g->n_ids * (size_t)mc->n_vocab * sizeof(float);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0.0;
    size_t i;
    (void)check_shared_dir; /* everything here is in the repository: nothing to skip */
    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN propagates as the worst case */
    }
    return m;
}

/* On a failure, keep tfm.h's logits for tests/gen/ref_gpt_neox.py --diagnose. */
static void dump_logits(const char *name, const char *label, const float *logits, size_t n) {
    char path[256];
    FILE *f;
    snprintf(path, sizeof path, BUILD_DIR "%s.got.f32", label);
    f = fopen(path, "wb");
    if (!f) return;
    if (fwrite(logits, sizeof(float), n, f) == n)
        fprintf(stderr, "    wrote %s; /usr/bin/python3 tests/gen/ref_gpt_neox.py --diagnose %s%s %s\n", path,
                DATA_DIR, name, path);
    fclose(f);
}

static void log_to_stderr(void *user, tfm_result r, const char *msg) {
    fprintf(stderr, "    [%s] %s: %s\n", (const char *)user, tfm_result_string(r), msg);
}

/* A host job system stand-in that runs the tasks in reverse order. */
static void reverse_parallel_for(void *user, int n_tasks, tfm_task_fn task, void *task_ctx) {
    int i;
    (void)user;
    for (i = n_tasks - 1; i >= 0; i--) task(task_ctx, i);
}

static void check_config(const model_case *mc, const char *label, tfm_config c) {
    CHECK_MSG(c.arch == TFM_ARCH_GPT_NEOX, "%s: arch %d", label, (int)c.arch);
    CHECK_MSG(c.n_layers == mc->n_layers && c.d_model == mc->d_model && c.n_heads == mc->n_heads &&
              c.n_kv_heads == mc->n_heads && c.d_head == mc->d_model / mc->n_heads &&
              c.d_ff == mc->d_ff && c.n_vocab == mc->n_vocab && c.n_ctx == 64,
              "%s: layers %d d_model %d heads %d/%d d_head %d d_ff %d vocab %d ctx %d", label,
              c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.d_head, c.d_ff, c.n_vocab, c.n_ctx);
    CHECK_MSG(c.rope_dim == mc->rope_dim && c.pos == TFM_POS_ROPE_HALF, "%s: rope_dim %d (want %d), pos %d",
              label, c.rope_dim, mc->rope_dim, (int)c.pos);
    CHECK_MSG(fabsf(c.rope_theta - mc->rope_theta) <= 1e-3f * mc->rope_theta, "%s: rope_theta %g (want %g)",
              label, (double)c.rope_theta, (double)mc->rope_theta);
    CHECK_MSG(fabsf(c.norm_eps - mc->norm_eps) <= 1e-3f * mc->norm_eps, "%s: norm_eps %g (want %g)", label,
              (double)c.norm_eps, (double)mc->norm_eps);
    CHECK_MSG(c.norm == TFM_NORM_LAYERNORM && c.ffn == TFM_FFN_PLAIN, "%s: norm %d ffn %d", label, (int)c.norm,
              (int)c.ffn);
    CHECK_MSG(c.act == mc->act, "%s: act %d (want %d)", label, (int)c.act, (int)mc->act);
    CHECK_MSG(c.residual == mc->residual, "%s: residual %d (want %d)", label, (int)c.residual,
              (int)mc->residual);
    CHECK_MSG(c.tied_output == mc->tied_output, "%s: tied_output %d", label, (int)c.tied_output);
}

/* Evaluate all tokens in a session made from desc; NULL on failure (reported). */
static float *eval_all(const tfm_model *model, const tfm_session_desc *sd, const golden *g, int n_vocab,
                       const char *label) {
    tfm_session *s = NULL;
    tfm_result r = tfm_session_create(model, sd, &s);
    float *out = (float *)calloc((size_t)g->n_ids * (size_t)n_vocab, sizeof(float));
    CHECK_MSG(r == TFM_OK && out, "%s: session_create: %s", label, tfm_result_string(r));
    if (r != TFM_OK || !out) {
        free(out);
        return NULL;
    }
    r = tfm_session_eval(s, g->ids, g->n_ids, 0, out);
    CHECK_MSG(r == TFM_OK, "%s: eval: %s %s", label, tfm_result_string(r), tfm_session_last_error(s));
    if (r == TFM_OK) {
        const float *last = tfm_session_logits(s);
        CHECK_MSG(tfm_session_n_past(s) == g->n_ids, "%s: n_past %d", label, tfm_session_n_past(s));
        CHECK_MSG(last && memcmp(last, out + (size_t)(g->n_ids - 1) * (size_t)n_vocab,
                                 (size_t)n_vocab * sizeof(float)) == 0,
                  "%s: tfm_session_logits differs from the last row of logits_all", label);
    }
    tfm_session_destroy(s);
    if (r != TFM_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* One token at a time, then rewind to the middle and evaluate the rest again; max diff. */
static double decode_diff(const tfm_model *model, const golden *g, int n_vocab, const char *label) {
    tfm_session_desc sd;
    tfm_session *s = NULL;
    tfm_result r;
    double worst = 0.0, d;
    int t, half = g->n_ids / 2;
    float *rest = (float *)calloc((size_t)g->n_ids * (size_t)n_vocab, sizeof(float));
    memset(&sd, 0, sizeof sd);
    r = tfm_session_create(model, &sd, &s);
    CHECK_MSG(r == TFM_OK && rest, "%s: session_create: %s", label, tfm_result_string(r));
    if (r != TFM_OK || !rest) {
        free(rest);
        return INFINITY;
    }
    for (t = 0; t < g->n_ids; t++) {
        const float *logits = NULL;
        r = tfm_session_decode(s, g->ids[t], t, &logits);
        CHECK_MSG(r == TFM_OK && logits, "%s: decode at %d: %s %s", label, t, tfm_result_string(r),
                  tfm_session_last_error(s));
        if (r != TFM_OK || !logits) break;
        d = max_abs_diff(logits, g->logits + (size_t)t * (size_t)n_vocab, (size_t)n_vocab);
        if (!(d <= worst)) worst = d;
    }
    if (r == TFM_OK) { /* rewind: positions half.. again, on top of the cached 0..half-1 */
        r = tfm_session_eval(s, g->ids + half, g->n_ids - half, half, rest);
        CHECK_MSG(r == TFM_OK, "%s: rewind eval: %s", label, tfm_result_string(r));
        if (r == TFM_OK) {
            d = max_abs_diff(rest, g->logits + (size_t)half * (size_t)n_vocab,
                             (size_t)(g->n_ids - half) * (size_t)n_vocab);
            printf("    %-16s rewind to %d: maxdiff %.3g\n", label, half, d);
            if (!(d <= worst)) worst = d;
        }
    }
    if (r != TFM_OK) worst = INFINITY;
    tfm_session_destroy(s);
    free(rest);
    return worst;
}

static void check_tokenizer(const model_case *mc, const tfm_model *model, const golden *g) {
    /* text.txt after NFC: the decomposed e + U+0301 becomes U+00E9 (C3 A9) */
    static const char nfc_text[] = "The fox's den: 2026 foxes, caf\xc3\xa9!\n   the dog  ran<|endoftext|>the end";
    char path[256], *text, decoded[256];
    int32_t ids[MAX_TOKENS];
    size_t n_text = 0, n_ids = 0, n_dec = 0;
    int i;
    tfm_config c = tfm_model_config(model);
    tfm_result r;
    CHECK_MSG(c.n_tokens == 300 && c.bos_id == 0 && c.eos_id == 0, "%s: n_tokens %d bos %d eos %d", mc->name,
              c.n_tokens, (int)c.bos_id, (int)c.eos_id);
    snprintf(path, sizeof path, DATA_DIR "%s/text.txt", mc->name);
    text = read_file(path, &n_text);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) return;
    r = tfm_model_tokenize(model, text, n_text, ids, MAX_TOKENS, &n_ids);
    CHECK_MSG(r == TFM_OK && n_ids == (size_t)g->n_ids && memcmp(ids, g->ids, n_ids * sizeof ids[0]) == 0,
              "%s: tokenize(text.txt) gives %zu ids (%s), tokens.txt has %d", mc->name, n_ids,
              tfm_result_string(r), g->n_ids);
    printf("    %-16s tokenize(text.txt): %zu ids, tokens.txt has %d\n", mc->name, n_ids, g->n_ids);
    if (r == TFM_OK) {
        for (i = 0; i < (int)n_ids && i < g->n_ids; i++)
            if (ids[i] != g->ids[i]) {
                fprintf(stderr, "    first difference at %d: %d, want %d\n", i, (int)ids[i], (int)g->ids[i]);
                break;
            }
    }
    free(text);
    for (i = 0; i < g->n_ids; i++) {
        const char *bytes = NULL;
        size_t nb = 0;
        r = tfm_model_token_piece(model, g->ids[i], &bytes, &nb);
        if (r != TFM_OK || n_dec + nb > sizeof decoded) break;
        memcpy(decoded + n_dec, bytes, nb);
        n_dec += nb;
    }
    CHECK_MSG(r == TFM_OK && n_dec == sizeof nfc_text - 1 && memcmp(decoded, nfc_text, n_dec) == 0,
              "%s: token bytes of tokens.txt do not spell the NFC text (%zu bytes, %s)", mc->name, n_dec,
              tfm_result_string(r));
}

/* Every kernel set this CPU runs gives the logits `best` gave, bit for bit. */
static void check_kernel_sets(const char *path, const char *label, const tfm_session_desc *sd, const golden *g,
                              int n_vocab, const float *best) {
    static const char *const sets[] = {"scalar", "avx2", "avx512", "amx", "neon"};
    size_t i, n_all = (size_t)g->n_ids * (size_t)n_vocab;
    for (i = 0; best && i < sizeof sets / sizeof sets[0]; i++) {
        tfm_model_desc md;
        tfm_model *m = NULL;
        float *out;
        memset(&md, 0, sizeof md);
        md.path = path;
        md.kernels = sets[i];
        if (tfm_model_open(&md, &m) != TFM_OK) continue; /* not compiled in, or not this CPU */
        out = eval_all(m, sd, g, n_vocab, label);
        CHECK_MSG(out && memcmp(out, best, n_all * sizeof(float)) == 0, "%s: kernels %s differ (maxdiff %g)", label,
                  sets[i], out ? max_abs_diff(out, best, n_all) : -1.0);
        free(out);
        tfm_model_close(m);
    }
}

/* An f16 KV cache: close to the f32 one, and one call equals token by token bit for bit. */
static void check_f16_cache(const tfm_model *model, const char *label, const golden *g, int n_vocab,
                            const float *f32_cache) {
    tfm_session_desc sd;
    tfm_session *s = NULL;
    size_t n_all = (size_t)g->n_ids * (size_t)n_vocab;
    float *all, *steps = (float *)calloc(n_all, sizeof(float));
    int t, same = 1;
    memset(&sd, 0, sizeof sd);
    sd.kv_dtype = TFM_DTYPE_F16;
    all = eval_all(model, &sd, g, n_vocab, label);
    if (all && f32_cache) { /* f16 keeps 11 significant bits: bound 0.2% of the largest logit */
        double d = max_abs_diff(all, f32_cache, n_all), top = 0.0, lim;
        size_t i;
        for (i = 0; i < n_all; i++) top = fabs(f32_cache[i]) > top ? fabs(f32_cache[i]) : top;
        lim = 0.002 * top;
        printf("    %-16s f16 KV cache vs f32: maxdiff %.3g (bound %.3g)\n", label, d, lim);
        CHECK_MSG(d <= lim, "%s: f16 cache maxdiff %g > %g", label, d, lim);
    }
    if (all && steps && tfm_session_create(model, &sd, &s) == TFM_OK) {
        for (t = 0; t < g->n_ids && same; t++) {
            const float *lg = NULL;
            same = tfm_session_decode(s, g->ids[t], t, &lg) == TFM_OK && lg &&
                   memcmp(lg, all + (size_t)t * (size_t)n_vocab, (size_t)n_vocab * sizeof(float)) == 0;
        }
        CHECK_MSG(same, "%s: f16 cache: token by token differs from one call at %d", label, t - 1);
        tfm_session_destroy(s);
    }
    free(all);
    free(steps);
}

static void run_file(const model_case *mc, const golden *g, const char *suffix, double bound) {
    char path[256], label[64];
    tfm_model_desc md;
    tfm_session_desc sd;
    tfm_model *model = NULL;
    tfm_result r;
    float *one = NULL, *two = NULL, *rev = NULL;
    size_t n_all = (size_t)g->n_ids * (size_t)mc->n_vocab;
    double d_eval = INFINITY, d_dec;
    snprintf(path, sizeof path, BUILD_DIR "%s%s.tfm", mc->name, suffix);
    snprintf(label, sizeof label, "%s%s", mc->name, suffix);
    memset(&md, 0, sizeof md);
    md.path = path;
    md.logger.log = log_to_stderr;
    md.logger.user = label;
    r = tfm_model_open(&md, &model);
    CHECK_MSG(r == TFM_OK, "%s: tfm_model_open: %s (the Makefile builds it from " DATA_DIR "%s)", path,
              tfm_result_string(r), mc->name);
    if (r != TFM_OK) return;
    check_config(mc, label, tfm_model_config(model));
    if (tfm_model_config(model).n_vocab != mc->n_vocab) {
        tfm_model_close(model);
        return;
    }

    memset(&sd, 0, sizeof sd);
    sd.n_threads = 1;
    one = eval_all(model, &sd, g, mc->n_vocab, label);
    if (one) d_eval = max_abs_diff(one, g->logits, n_all);
    d_dec = decode_diff(model, g, mc->n_vocab, label);
    printf("    %-16s maxdiff eval %.3g  decode %.3g  (bound %.3g)\n", label, d_eval, d_dec, bound);
    CHECK_MSG(d_eval <= bound, "%s: eval maxdiff %g > %g", label, d_eval, bound);
    if (one && !(d_eval <= bound)) dump_logits(mc->name, label, one, n_all);
    CHECK_MSG(d_dec <= bound, "%s: decode maxdiff %g > %g", label, d_dec, bound);

    sd.n_threads = 2;
    two = eval_all(model, &sd, g, mc->n_vocab, label);
    CHECK_MSG(one && two && memcmp(one, two, n_all * sizeof(float)) == 0,
              "%s: 2 threads differ from 1 thread (maxdiff %g)", label,
              one && two ? max_abs_diff(one, two, n_all) : -1.0);
    sd.n_threads = 1;
    sd.parallel_for = reverse_parallel_for;
    rev = eval_all(model, &sd, g, mc->n_vocab, label);
    CHECK_MSG(one && rev && memcmp(one, rev, n_all * sizeof(float)) == 0,
              "%s: a reverse-order parallel_for changes the logits (maxdiff %g)", label,
              one && rev ? max_abs_diff(one, rev, n_all) : -1.0);

    sd.parallel_for = NULL;
    check_kernel_sets(path, label, &sd, g, mc->n_vocab, one);
    check_f16_cache(model, label, g, mc->n_vocab, one);

    if (mc->has_tokenizer && suffix[0] == '\0') check_tokenizer(mc, model, g);
    free(one);
    free(two);
    free(rev);
    tfm_model_close(model);
}

int main(void) {
    size_t i;
    (void)check_shared_dir; /* everything here is in the repository: nothing to skip */
    for (i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        golden g;
        memset(&g, 0, sizeof g);
        printf("  %s\n", CASES[i].name);
        if (load_golden(&CASES[i], &g)) {
            run_file(&CASES[i], &g, "", F32_BOUND);
            run_file(&CASES[i], &g, "-f16", CASES[i].f16_bound);
        }
        free(g.logits);
    }
    return check_summary("test_models");
}
