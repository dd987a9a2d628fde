/* test_modern.c - tfm.h against float64 references of today's small models (issue 9).

   For each tiny checkpoint tests/data/modern/NAME (tests/gen/make_modern_models.py, see its
   README), the Makefile converts the Hugging Face folder with build/tfm-convert into
   build/modern/NAME.tfm and, where the folder has one, its model.gguf into
   build/modern/NAME-gguf.tfm. This test opens each and checks, against logits.f32 (the float64
   NumPy forward written from the transformers modeling file):
     - the whole sequence in one eval, within F32_BOUND;
     - one token at a time: bit-identical to the one-call eval;
     - 2 threads bit-identical to 1;
     - the features each model exercises really run: the same file with one feature switched
       off in its header, layer table or divisor tensor (window, soft-caps, embedding scale,
       attention scale, RoPE divisors, local RoPE base, NoPE layers) moves the logits by more
       than FEATURE_MIN from the reference; a test that passes with the feature off is no test;
     - a sliding-window layer keeps a ring of window + batch - 1 cache rows; a rewind the ring
       cannot serve is refused, one it can serve gives the reference logits;
     - phi3 (longrope): a session of n_ctx <= original_max_position_embeddings uses the short
       factors (logits.f32, 24 tokens), a longer one the long factors (logits_long.f32, 48). */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "tfm_writer.h"

#include <math.h>

#define DATA_DIR "tests/data/modern/"
#define BUILD_DIR "build/modern/"
#define MAX_TOKENS 64
/* A correct f32 forward measures 1.4e-6..5.5e-6 on these models; the generator asserts that
   each feature moves the float64 logits by > 1e-2, so 1e-4 separates the two by 100x each way. */
#define F32_BOUND 1e-4
#define FEATURE_MIN 1e-2

enum { /* features to switch off, one at a time */
    F_WINDOW = 1, F_ATTN_CAP = 2, F_LOGIT_CAP = 4, F_EMBED = 8, F_SCALE = 16, F_ROPE_FREQS = 32,
    F_LOCAL = 64, F_NOPE = 128
};
#define N_FEATURES 8
static const char *const feature_names[N_FEATURES] = {"window", "attn soft-cap", "logit soft-cap", "embed scale",
                                                      "attn scale", "rope divisors", "local rope base", "NoPE"};

typedef struct modern_case {
    const char *name;
    int gguf;           /* the folder has model.gguf */
    int n_ctx;          /* session n_ctx (0: the model's) */
    int window;         /* tfm_config.sliding_window the file must give */
    unsigned features;  /* F_* that must matter */
    int qk_norm, post_norms, rope_scaled;
} modern_case;

static const modern_case CASES[] = {
    {"llama3", 1, 0, 0, F_ROPE_FREQS, 0, 0, 1},
    {"llama_linear", 1, 0, 0, F_ROPE_FREQS, 0, 0, 1},
    {"qwen2", 1, 0, 0, 0, 0, 0, 0}, /* sliding_window set, use_sliding_window false: none */
    {"qwen2_swa", 0, 0, 6, F_WINDOW, 0, 0, 0},
    {"qwen3", 1, 0, 0, 0, 1, 0, 0},
    {"gemma2", 1, 0, 5, F_WINDOW | F_ATTN_CAP | F_LOGIT_CAP | F_EMBED, 0, 1, 0},
    {"gemma3", 1, 0, 6, F_WINDOW | F_EMBED | F_ROPE_FREQS | F_LOCAL, 1, 1, 1},
    {"gemma3_qpas", 0, 0, 6, F_WINDOW | F_SCALE | F_LOGIT_CAP, 1, 1, 0},
    {"gemma3_mm", 0, 0, 6, F_WINDOW, 1, 1, 1},
    {"phi3", 1, 32, 12, F_WINDOW | F_ROPE_FREQS, 0, 0, 1},
    {"mistral", 0, 0, 8, F_WINDOW, 0, 0, 0}, /* head_dim 12: the default scale 1/sqrt(12) */
    {"smollm3", 0, 0, 0, F_NOPE, 0, 0, 0},
};

typedef struct golden {
    int32_t ids[MAX_TOKENS];
    int n_ids;
    float *logits; /* [n_ids, n_vocab] */
} golden;

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

/* tokens file + logits file of one folder; n_vocab from the logits size. */
static int load_golden(const char *name, const char *tokens, const char *logits, golden *g, int *n_vocab) {
    char path[256], *text, *p, *end;
    size_t n_bytes = 0;
    snprintf(path, sizeof path, DATA_DIR "%s/%s", name, tokens);
    text = read_file(path, &n_bytes);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) return 0;
    g->n_ids = 0;
    for (p = text;; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (g->n_ids < MAX_TOKENS) g->ids[g->n_ids] = (int32_t)v;
        g->n_ids++;
    }
    free(text);
    CHECK_MSG(g->n_ids > 0 && g->n_ids <= MAX_TOKENS, "%s: %d ids", path, g->n_ids);
    if (g->n_ids <= 0 || g->n_ids > MAX_TOKENS) return 0;
    snprintf(path, sizeof path, DATA_DIR "%s/%s", name, logits);
    g->logits = (float *)read_file(path, &n_bytes);
    CHECK_MSG(g->logits && n_bytes % ((size_t)g->n_ids * sizeof(float)) == 0, "%s: %zu bytes", path, n_bytes);
    if (!g->logits) return 0;
    *n_vocab = (int)(n_bytes / ((size_t)g->n_ids * sizeof(float)));
    return 1;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0.0;
    size_t i;
    (void)check_shared_dir; /* everything here is in the repository: nothing to skip */
    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

static void log_to_stderr(void *user, tfm_result r, const char *msg) {
    fprintf(stderr, "    [%s] %s: %s\n", (const char *)user, tfm_result_string(r), msg);
}

static tfm_result open_mem(const unsigned char *data, size_t bytes, const char *label, tfm_model **m) {
    tfm_model_desc md;
    memset(&md, 0, sizeof md);
    md.data = data;
    md.data_bytes = bytes;
    md.logger.log = log_to_stderr;
    md.logger.user = (void *)(size_t)label;
    return tfm_model_open(&md, m);
}

/* All tokens in one eval (n_ctx, n_threads); malloc'd [n_ids, n_vocab], NULL on failure. */
static float *eval_all(const tfm_model *m, const golden *g, int n_vocab, int n_ctx, int n_threads, const char *label) {
    tfm_session_desc sd;
    tfm_session *s = NULL;
    float *out = (float *)calloc((size_t)g->n_ids * (size_t)n_vocab, sizeof(float));
    tfm_result r;
    memset(&sd, 0, sizeof sd);
    sd.n_ctx = n_ctx;
    sd.n_threads = n_threads;
    r = tfm_session_create(m, &sd, &s);
    if (r == TFM_OK && out) r = tfm_session_eval(s, g->ids, g->n_ids, 0, out);
    CHECK_MSG(r == TFM_OK && out, "%s: eval: %s %s", label, tfm_result_string(r), s ? tfm_session_last_error(s) : "");
    tfm_session_destroy(s);
    if (r != TFM_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* Token by token must give the one-call logits bit for bit. */
static void check_decode(const tfm_model *m, const golden *g, int n_vocab, int n_ctx, const float *one,
                         const char *label) {
    tfm_session_desc sd;
    tfm_session *s = NULL;
    tfm_result r;
    int t, same = 1;
    memset(&sd, 0, sizeof sd);
    sd.n_ctx = n_ctx;
    r = tfm_session_create(m, &sd, &s);
    for (t = 0; r == TFM_OK && t < g->n_ids; t++) {
        const float *lg = NULL;
        r = tfm_session_decode(s, g->ids[t], t, &lg);
        if (r == TFM_OK && memcmp(lg, one + (size_t)t * (size_t)n_vocab, (size_t)n_vocab * sizeof(float)) != 0) {
            if (same) fprintf(stderr, "    %s: position %d differs by %.3g\n", label, t,
                              max_abs_diff(lg, one + (size_t)t * (size_t)n_vocab, (size_t)n_vocab));
            same = 0;
        }
    }
    CHECK_MSG(r == TFM_OK && same, "%s: token-by-token decode is not bit-identical to one eval (%s)", label,
              tfm_result_string(r));
    tfm_session_destroy(s);
}

/* --- switching a feature off in a copy of the file ---------------------------------------- */

/* Data of the tensor called name, or NULL; *n its f32 count. */
static unsigned char *tensor_data(unsigned char *file, const char *name, size_t *n) {
    uint32_t i, n_tensors = tfm__rd_u32(file + 84);
    for (i = 0; i < n_tensors; i++) {
        unsigned char *e = file + 256 + 128 * (size_t)i;
        if (strcmp((const char *)e, name) == 0) {
            *n = (size_t)tfm__rd_u64(e + 112) / 4;
            return file + tfm__rd_u64(e + 104);
        }
    }
    return NULL;
}

/* Switch feature f off; 0 when the file has nothing to switch. */
static int switch_off(unsigned char *file, unsigned f) {
    uint64_t table = tfm__rd_u64(file + 144);
    uint32_t l, n_layers = tfm__rd_u32(file + 28);
    size_t n = 0, i;
    int k, changed = 0;
    static const char *const freq_names[2] = {"rope_freqs", "rope_freqs_long"};
    switch (f) {
    case F_WINDOW:
    case F_NOPE:
        for (l = 0; table && l < n_layers; l++) {
            unsigned char *e = file + table + 16 * (size_t)l + (f == F_WINDOW ? 0 : 4);
            if (tfm__rd_u32(e) != 0 && (f == F_WINDOW || tfm__rd_u32(e) == 2)) {
                tw_put_u32(e, 0);
                changed = 1;
            }
        }
        return changed;
    case F_ATTN_CAP: tw_put_f32(file + 120, 0.0f); return 1;
    case F_LOGIT_CAP: tw_put_f32(file + 124, 0.0f); return 1;
    case F_EMBED: tw_put_f32(file + 128, 0.0f); return 1;
    case F_SCALE: tw_put_f32(file + 116, 0.0f); return 1;
    case F_LOCAL: tw_put_f32(file + 132, 0.0f); return 1;
    case F_ROPE_FREQS:
        for (k = 0; k < 2; k++) {
            unsigned char *d = tensor_data(file, freq_names[k], &n);
            for (i = 0; d && i < n; i++) tw_put_f32(d + 4 * i, 1.0f);
            changed |= d != NULL;
        }
        return changed;
    default: return 0;
    }
}

static void check_features(const modern_case *mc, const unsigned char *file, size_t bytes, const golden *g,
                           int n_vocab, const char *label) {
    int k;
    for (k = 0; k < N_FEATURES; k++) {
        unsigned f = 1u << k;
        unsigned char *copy;
        tfm_model *m = NULL;
        float *lg = NULL;
        double d = 0.0;
        if (!(mc->features & f)) continue;
        copy = (unsigned char *)malloc(bytes);
        if (!copy) continue;
        memcpy(copy, file, bytes);
        CHECK_MSG(switch_off(copy, f), "%s: nothing to switch off for %s", label, feature_names[k]);
        if (open_mem(copy, bytes, label, &m) == TFM_OK) lg = eval_all(m, g, n_vocab, mc->n_ctx, 1, label);
        if (lg) d = max_abs_diff(lg, g->logits, (size_t)g->n_ids * (size_t)n_vocab);
        printf("    %-16s %-16s off: maxdiff %.3g (must be > %g)\n", label, feature_names[k], d, FEATURE_MIN);
        CHECK_MSG(lg && d > FEATURE_MIN, "%s: %s switched off still matches the reference (%g)", label,
                  feature_names[k], d);
        free(lg);
        tfm_model_close(m);
        free(copy);
    }
}

/* The ring of a windowed layer: window + n_batch - 1 rows (n_batch 4 here, so the 40 tokens
   wrap it several times, batches cut at the wrap); the whole run gives the reference; a rewind
   too far back is refused, one within the ring gives the reference again. */
static void check_ring(const modern_case *mc, const tfm_model *m, const golden *g, int n_vocab, const char *label) {
    tfm_session_desc sd;
    tfm_session *s = NULL;
    float *rest = (float *)calloc((size_t)g->n_ids * (size_t)n_vocab, sizeof(float));
    double d_all = INFINITY;
    int l, ring_layers = 0, ok_rows = 1, back = g->n_ids - mc->window / 2;
    tfm_result r;
    memset(&sd, 0, sizeof sd);
    sd.n_ctx = mc->n_ctx ? mc->n_ctx : 128;
    sd.n_batch = 4;
    r = tfm_session_create(m, &sd, &s);
    CHECK(r == TFM_OK && rest);
    if (r != TFM_OK || !rest) {
        free(rest);
        return;
    }
    for (l = 0; l < m->config.n_layers; l++) {
        int w = m->layers[l].window, want = w && w + s->n_batch - 1 < s->n_ctx ? w + s->n_batch - 1 : s->n_ctx;
        ring_layers += s->kv[l].rows < s->n_ctx;
        ok_rows &= s->kv[l].rows == want;
    }
    CHECK_MSG(ok_rows && ring_layers > 0, "%s: %d ring layers, rows as expected: %d", label, ring_layers, ok_rows);
    r = tfm_session_eval(s, g->ids, g->n_ids, 0, rest);
    CHECK(r == TFM_OK);
    if (r == TFM_OK) d_all = max_abs_diff(rest, g->logits, (size_t)g->n_ids * (size_t)n_vocab);
    CHECK_MSG(d_all <= F32_BOUND, "%s: through the ring with n_batch 4: maxdiff %g", label, d_all);
    r = tfm_session_eval(s, g->ids + 1, 1, 1, NULL); /* the window before position 1 is long gone */
    CHECK_MSG(r == TFM_ERR_INVALID_ARG && strstr(tfm_session_last_error(s), "sliding-window"),
              "%s: rewind to 1: %s %s", label, tfm_result_string(r), tfm_session_last_error(s));
    CHECK(tfm_session_n_past(s) == g->n_ids);
    r = tfm_session_eval(s, g->ids + back, g->n_ids - back, back, rest);
    CHECK_MSG(r == TFM_OK, "%s: rewind to %d: %s %s", label, back, tfm_result_string(r), tfm_session_last_error(s));
    if (r == TFM_OK) {
        double d = max_abs_diff(rest, g->logits + (size_t)back * (size_t)n_vocab,
                                (size_t)(g->n_ids - back) * (size_t)n_vocab);
        printf("    %-16s ring: %d windowed layers of %d rows, n_batch 4: maxdiff %.3g; rewind to %d: %.3g\n", label,
               ring_layers, s->kv[0].rows < s->n_ctx ? s->kv[0].rows : s->kv[m->config.n_layers - 1].rows, d_all,
               back, d);
        CHECK_MSG(d <= F32_BOUND, "%s: rewind within the ring: maxdiff %g", label, d);
    }
    r = tfm_session_eval(s, g->ids, 3, 0, NULL); /* back to the start always works */
    CHECK(r == TFM_OK);
    tfm_session_destroy(s);
    free(rest);
}

static void check_config(const modern_case *mc, const tfm_config *c, const char *label) {
    CHECK_MSG(c->sliding_window == mc->window && c->qk_norm == (mc->qk_norm != 0) &&
              c->post_norms == (mc->post_norms != 0) && c->rope_scaled == (mc->rope_scaled != 0),
              "%s: sliding_window %d (want %d), qk_norm %d, post_norms %d, rope_scaled %d", label,
              c->sliding_window, mc->window, (int)c->qk_norm, (int)c->post_norms, (int)c->rope_scaled);
}

static void run_file(const modern_case *mc, const golden *g, int n_vocab, const char *suffix) {
    char path[256], label[64];
    unsigned char *file;
    size_t bytes = 0;
    tfm_model *m = NULL;
    float *one = NULL, *two = NULL;
    size_t n_all = (size_t)g->n_ids * (size_t)n_vocab;
    double d = INFINITY;
    snprintf(path, sizeof path, BUILD_DIR "%s%s.tfm", mc->name, suffix);
    snprintf(label, sizeof label, "%s%s", mc->name, suffix);
    file = (unsigned char *)read_file(path, &bytes);
    CHECK_MSG(file != NULL, "%s missing (the Makefile builds it from " DATA_DIR "%s)", path, mc->name);
    if (!file) return;
    if (open_mem(file, bytes, label, &m) != TFM_OK || m->config.n_vocab != n_vocab) {
        CHECK_MSG(0, "%s: does not open, or n_vocab differs from the logits' %d", label, n_vocab);
        tfm_model_close(m);
        free(file);
        return;
    }
    check_config(mc, &m->config, label);
    one = eval_all(m, g, n_vocab, mc->n_ctx, 1, label);
    if (one) d = max_abs_diff(one, g->logits, n_all);
    printf("    %-16s maxdiff %.3g (bound %g)\n", label, d, F32_BOUND);
    CHECK_MSG(d <= F32_BOUND, "%s: maxdiff %g > %g", label, d, F32_BOUND);
    if (one) check_decode(m, g, n_vocab, mc->n_ctx, one, label);
    two = eval_all(m, g, n_vocab, mc->n_ctx, 2, label);
    CHECK_MSG(one && two && memcmp(one, two, n_all * sizeof(float)) == 0, "%s: 2 threads differ from 1", label);
    check_features(mc, file, bytes, g, n_vocab, label);
    if (mc->window && !mc->n_ctx) check_ring(mc, m, g, n_vocab, label);
    free(one);
    free(two);
    tfm_model_close(m);
    free(file);
}

/* phi3's long run: n_ctx 64 > original 32 takes the long factors for all 48 tokens; the short
   run in such a session is then NOT the short-factor reference (the session rule). */
static void run_phi3_long(const char *suffix, const golden *short_g) {
    char path[256], label[64];
    golden g;
    int n_vocab = 0;
    tfm_model_desc md;
    tfm_model *m = NULL;
    float *lg;
    memset(&g, 0, sizeof g);
    snprintf(path, sizeof path, BUILD_DIR "phi3%s.tfm", suffix);
    snprintf(label, sizeof label, "phi3%s long", suffix);
    if (!load_golden("phi3", "tokens_long.txt", "logits_long.f32", &g, &n_vocab)) return;
    memset(&md, 0, sizeof md);
    md.path = path;
    if (tfm_model_open(&md, &m) == TFM_OK) {
        double d = INFINITY, d_short = 0.0;
        lg = eval_all(m, &g, n_vocab, 64, 1, label);
        if (lg) d = max_abs_diff(lg, g.logits, (size_t)g.n_ids * (size_t)n_vocab);
        free(lg);
        lg = eval_all(m, short_g, n_vocab, 64, 1, label);
        if (lg) d_short = max_abs_diff(lg, short_g->logits, (size_t)short_g->n_ids * (size_t)n_vocab);
        free(lg);
        printf("    %-16s %d tokens, n_ctx 64: maxdiff %.3g; the 24-token run at n_ctx 64 (long factors) "
               "vs its short-factor reference %.3g\n", label, g.n_ids, d, d_short);
        CHECK_MSG(d <= F32_BOUND, "%s: maxdiff %g", label, d);
        CHECK_MSG(d_short > FEATURE_MIN, "%s: n_ctx 64 did not switch to the long factors", label);
    }
    CHECK_MSG(m != NULL, "%s: cannot open %s", label, path);
    tfm_model_close(m);
    free(g.logits);
}

/* Undo the golden files' escapes (\\ \n \t \r) in place; the new length. */
static size_t unescape(char *s, size_t n) {
    size_t i, o = 0;
    for (i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char c = s[++i];
            s[o++] = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        } else {
            s[o++] = s[i];
        }
    }
    return o;
}

/* Gemma's and Phi-3's tokenizer shapes (tests/gen/make_modern_tokenizers.js): every text of
   NAME_hf.txt ("text => ids", from Hugging Face tokenizers) tokenizes to the same ids. */
static void check_tokenizer(const char *name) {
    char path[256], *text, *line, *next;
    size_t n = 0;
    tfm_model_desc md;
    tfm_model *m = NULL;
    int n_cases = 0, n_ok = 0;
    snprintf(path, sizeof path, BUILD_DIR "tok_%s.tfm", name);
    memset(&md, 0, sizeof md);
    md.path = path;
    CHECK_MSG(tfm_model_open(&md, &m) == TFM_OK, "%s: cannot open (the Makefile converts tests/data/tokenizer/%s.json)",
              path, name);
    snprintf(path, sizeof path, "tests/data/tokenizer/%s_hf.txt", name);
    text = read_file(path, &n);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    for (line = text; m && line && *line; line = next) {
        char *sep, *p, *end;
        int32_t want[256], got[256];
        size_t n_want = 0, n_got = 0, n_text;
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        sep = strstr(line, " => ");
        while (sep && strstr(sep + 1, " => ")) sep = strstr(sep + 1, " => "); /* the last one */
        if (!sep) continue;
        for (p = sep + 4; n_want < 256; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p) break;
            want[n_want++] = (int32_t)v;
            if (*end == ',') end++;
        }
        n_text = unescape(line, (size_t)(sep - line));
        n_cases++;
        if (tfm_model_tokenize(m, line, n_text, got, 256, &n_got) == TFM_OK && n_got == n_want &&
            memcmp(got, want, n_got * sizeof got[0]) == 0)
            n_ok++;
        else
            fprintf(stderr, "    %s: \"%.*s\": %zu ids, Hugging Face %zu\n", name, (int)n_text, line, n_got, n_want);
    }
    printf("    tokenizer %-8s %d of %d texts give Hugging Face's ids\n", name, n_ok, n_cases);
    CHECK_MSG(n_cases > 20 && n_ok == n_cases, "%s: %d of %d texts match", name, n_ok, n_cases);
    free(text);
    tfm_model_close(m);
}

int main(void) {
    size_t i;
    check_tokenizer("gemma");
    check_tokenizer("phi3");
    for (i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        golden g;
        int n_vocab = 0;
        memset(&g, 0, sizeof g);
        printf("  %s\n", CASES[i].name);
        if (load_golden(CASES[i].name, "tokens.txt", "logits.f32", &g, &n_vocab)) {
            run_file(&CASES[i], &g, n_vocab, "");
            if (CASES[i].gguf) run_file(&CASES[i], &g, n_vocab, "-gguf");
            if (strcmp(CASES[i].name, "phi3") == 0) {
                run_phi3_long("", &g);
                run_phi3_long("-gguf", &g);
            }
        }
        free(g.logits);
    }
    return check_summary("test_modern");
}
