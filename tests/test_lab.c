/* test_lab.c - the ablation switches (tfm_ablation) and the inspection hook (tfm_stats) in the
   session desc, on the demo model (build/demo.tfm, made by `make`) and on tiny random models
   (tests/tiny_model.h), checked against what the transformer's design implies:
     - defaults and identity settings change no logit (bit for bit), nor does the hook;
     - the hook's sums do not depend on the thread count, nor a session's ablations on the
       sessions it is batched with (batched decode, bounded steps);
     - without positions and with attention both ways, the last token's output does not depend
       on the order of the tokens before it (up to rounding); with positions it does;
     - attention entropy falls as the score scale grows; without 1/sqrt(d_head) the score
       variance grows with d_head, with it it stays put;
     - removing the residual connection makes perplexity collapse;
     - with the causal mask off, the logits depend on how the prompt is split into evals.
   Usage: build/test_lab [model.tfm]   (run from the repository root) */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "tfm_writer.h"
#include "tiny_model.h"
#include <math.h>

#define DEMO_PATH "build/demo.tfm"
#define TEXT_PATH "models/demo/reference/heldout.txt"
#define MAX_IDS 2048
#define N_PROMPT 24     /* tokens of the prompt the logit tests evaluate */
#define N_SCORE 160     /* tokens whose cross-entropy the perplexity test takes */
#define PERM_TOL 2e-3   /* rounding of a reordered softmax sum, in logits */
#define PERM_MIN 5e-2   /* a logit change that is not rounding */

static const char fallback_text[] =
    "In the beginning God created the heaven and the earth. And the earth was without form, and void; "
    "and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters.";

static char *read_text(const char *path, size_t *n_out) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NULL; }
    buf = (char *)malloc((size_t)n);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    *n_out = (size_t)n;
    return buf;
}

/* A session with the given ablation (and hook), n_threads, n_batch; NULL on failure. */
static tfm_session *open_session(const tfm_model *m, const tfm_ablation *ab, const tfm_stats *st, int n_threads,
                                 int n_batch) {
    tfm_session_desc sd;
    tfm_session *s = NULL;
    memset(&sd, 0, sizeof sd);
    if (ab) sd.ablation = *ab;
    if (st) sd.stats = *st;
    sd.n_threads = n_threads;
    sd.n_batch = n_batch;
    if (tfm_session_create(m, &sd, &s) != TFM_OK) return NULL;
    return s;
}

/* logits [n, n_vocab] of ids at positions 0..n-1 in one eval; 0 on success. */
static int eval_all(const tfm_model *m, const tfm_ablation *ab, const tfm_stats *st, int n_threads, int n_batch,
                    const int32_t *ids, size_t n, float *logits) {
    tfm_session *s = open_session(m, ab, st, n_threads, n_batch);
    int rc = !s || tfm_session_eval(s, ids, n, 0, logits) != TFM_OK;
    tfm_session_destroy(s);
    return rc;
}

/* Mean cross-entropy (nats per token) of ids[1..n) given what comes before; NAN on failure. */
static double cross_entropy(const tfm_model *m, const tfm_ablation *ab, const int32_t *ids, size_t n) {
    tfm_session *s = open_session(m, ab, NULL, 2, 0);
    float *lp = (float *)malloc(n * sizeof(float));
    double sum = 0.0;
    size_t i;
    if (!s || !lp || tfm_session_score(s, ids, n, 0, lp) != TFM_OK) sum = NAN;
    for (i = 1; i < n; i++) sum -= (double)lp[i];
    free(lp);
    tfm_session_destroy(s);
    return sum / (double)(n - 1);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double md = 0.0;
    size_t i;
    for (i = 0; i < n; i++) md = fmax(md, fabs((double)a[i] - (double)b[i]));
    return md;
}

/* Statistics buffers for a model: layers [n_layers], heads [n_layers * n_heads], zeroed. */
typedef struct lab_stats {
    tfm_stats st;
    size_t n_layers, n_heads;
} lab_stats;

static int stats_alloc(lab_stats *ls, const tfm_config *c) {
    ls->n_layers = (size_t)c->n_layers;
    ls->n_heads = (size_t)c->n_layers * (size_t)c->n_heads;
    ls->st.layers = (tfm_layer_stats *)calloc(ls->n_layers, sizeof(tfm_layer_stats));
    ls->st.heads = (tfm_head_stats *)calloc(ls->n_heads, sizeof(tfm_head_stats));
    return ls->st.layers && ls->st.heads;
}

static void stats_free(lab_stats *ls) {
    free(ls->st.layers);
    free(ls->st.heads);
}

/* Mean over queries of a head-stat field, over layer l's heads (l < 0: every layer). */
static double head_mean(const lab_stats *ls, int n_heads, int l, size_t field_offset) {
    double sum = 0.0, n = 0.0, v;
    size_t i;
    for (i = 0; i < ls->n_heads; i++) {
        if (l >= 0 && (int)(i / (size_t)n_heads) != l) continue;
        memcpy(&v, (const char *)&ls->st.heads[i] + field_offset, sizeof v);
        sum += v;
        n += ls->st.heads[i].n_queries;
    }
    return n > 0.0 ? sum / n : NAN;
}

/* A host parallel_for that runs the tasks last to first: any order must give the same sums. */
static void reversed_for(void *user, int n_tasks, tfm_task_fn task, void *task_ctx) {
    int i;
    (void)user;
    for (i = n_tasks - 1; i >= 0; i--) task(task_ctx, i);
}

/* Defaults, identity settings and the hook: the same logits bit for bit; the hook's sums the
   same for 1 and 2 threads and for one batch or several. */
static void test_identity(const tfm_model *m, const int32_t *ids, size_t n) {
    tfm_config c = tfm_model_config(m);
    size_t nl = n * (size_t)c.n_vocab;
    float *base = (float *)malloc(nl * sizeof(float)), *other = (float *)malloc(nl * sizeof(float));
    tfm_ablation ab;
    lab_stats a, b;
    CHECK(base && other && stats_alloc(&a, &c) && stats_alloc(&b, &c));
    if (!base || !other || !a.st.layers || !b.st.layers) return;
    CHECK(eval_all(m, NULL, NULL, 1, 0, ids, n, base) == 0);
    memset(&ab, 0, sizeof ab);
    ab.score_scale = 1.0f;
    ab.heads_kept = ~(uint64_t)0;
    CHECK(eval_all(m, &ab, NULL, 2, 0, ids, n, other) == 0);
    CHECK_MSG(memcmp(base, other, nl * sizeof(float)) == 0, "identity ablations: maxdiff %g",
              max_abs_diff(base, other, nl));
    CHECK(eval_all(m, NULL, &a.st, 2, 0, ids, n, other) == 0);
    CHECK_MSG(memcmp(base, other, nl * sizeof(float)) == 0, "hook on: maxdiff %g", max_abs_diff(base, other, nl));
    CHECK(eval_all(m, NULL, &b.st, 1, 5, ids, n, other) == 0); /* 1 thread, batches of 5 rows */
    CHECK(memcmp(a.st.heads, b.st.heads, a.n_heads * sizeof(tfm_head_stats)) == 0);
    CHECK(a.st.layers[0].n_rows == (double)n && a.st.heads[0].n_queries == (double)n);
    CHECK(a.st.layers[c.n_layers - 1].rms_out > 0.0 && a.st.layers[0].n_act == (double)n * c.d_ff);
    /* rows' RMS summed in a fixed order: equal for any thread count; batches only regroup rows */
    memset(b.st.layers, 0, b.n_layers * sizeof(tfm_layer_stats));
    CHECK(eval_all(m, NULL, &b.st, 1, 0, ids, n, other) == 0);
    CHECK(memcmp(a.st.layers, b.st.layers, a.n_layers * sizeof(tfm_layer_stats)) == 0);
    { /* the tasks in reverse order, through the host's parallel_for (4 threads' worth of tasks) */
        tfm_session_desc sd;
        tfm_session *s = NULL;
        memset(&sd, 0, sizeof sd);
        memset(b.st.layers, 0, b.n_layers * sizeof(tfm_layer_stats));
        memset(b.st.heads, 0, b.n_heads * sizeof(tfm_head_stats));
        sd.stats = b.st;
        sd.n_threads = 4;
        sd.parallel_for = reversed_for;
        CHECK(tfm_session_create(m, &sd, &s) == TFM_OK && tfm_session_eval(s, ids, n, 0, other) == TFM_OK);
        tfm_session_destroy(s);
        CHECK(memcmp(base, other, nl * sizeof(float)) == 0);
        CHECK(memcmp(a.st.heads, b.st.heads, a.n_heads * sizeof(tfm_head_stats)) == 0);
        CHECK(memcmp(a.st.layers, b.st.layers, a.n_layers * sizeof(tfm_layer_stats)) == 0);
    }
    stats_free(&a);
    stats_free(&b);
    free(base);
    free(other);
}

/* Every ablation changes the logits; bad fields are refused. */
static void test_each_changes(const tfm_model *m, const int32_t *ids, size_t n) {
    tfm_config c = tfm_model_config(m);
    size_t nl = n * (size_t)c.n_vocab;
    float *base = (float *)malloc(nl * sizeof(float)), *other = (float *)malloc(nl * sizeof(float));
    tfm_ablation ab;
    tfm_session *s;
    int k;
    CHECK(base && other && eval_all(m, NULL, NULL, 2, 0, ids, n, base) == 0);
    for (k = 0; k < 10 && base && other; k++) {
        memset(&ab, 0, sizeof ab);
        switch (k) {
        case 0: ab.no_attn_scale = true; break;
        case 1: ab.score_scale = 2.0f; break;
        case 2: ab.no_positions = true; break;
        case 3: ab.no_attn = true; break;
        case 4: ab.no_ffn = true; break;
        case 5: ab.no_norm = true; break;
        case 6: ab.no_act = true; break;
        case 7: ab.heads_kept = 1; break;
        case 8: ab.no_causal = true; break;
        default: ab.no_residual = true; break;
        }
        CHECK(eval_all(m, &ab, NULL, 2, 0, ids, n, other) == 0);
        CHECK_MSG(max_abs_diff(base, other, nl) > 1e-3, "ablation %d changes nothing", k);
    }
    memset(&ab, 0, sizeof ab);
    ab.score_scale = -1.0f;
    CHECK(open_session(m, &ab, NULL, 1, 0) == NULL);
    ab.score_scale = NAN;
    CHECK(open_session(m, &ab, NULL, 1, 0) == NULL);
    ab.score_scale = 1.0f;
    s = open_session(m, &ab, NULL, 1, 0);
    CHECK(s != NULL);
    tfm_session_destroy(s);
    free(base);
    free(other);
}

/* Batched decode: an ablated session beside a plain one; each gets its own logits, bit for
   bit those of decoding alone. */
static void test_batched(const tfm_model *m, const int32_t *ids, size_t n) {
    tfm_config c = tfm_model_config(m);
    tfm_ablation ab;
    tfm_session *s[2], *alone[2];
    size_t nv = (size_t)c.n_vocab;
    int i, k;
    memset(&ab, 0, sizeof ab);
    ab.no_norm = true;
    ab.heads_kept = 2;
    ab.no_positions = true;
    for (i = 0; i < 2; i++) {
        s[i] = open_session(m, i ? &ab : NULL, NULL, 2, 0);
        alone[i] = open_session(m, i ? &ab : NULL, NULL, 1, 0);
        CHECK(s[i] && alone[i]);
        if (!s[i] || !alone[i]) return;
        CHECK(tfm_session_eval(s[i], ids, n - 3, 0, NULL) == TFM_OK);
        CHECK(tfm_session_eval(alone[i], ids, n - 3, 0, NULL) == TFM_OK);
    }
    for (k = 0; k < 3; k++) {
        int32_t tok[2];
        const float *l;
        tok[0] = tok[1] = ids[n - 3 + (size_t)k];
        CHECK(tfm_session_decode_batch(s, tok, 2) == TFM_OK);
        for (i = 0; i < 2; i++) {
            CHECK(tfm_session_decode(alone[i], tok[i], (int)n - 3 + k, &l) == TFM_OK);
            CHECK_MSG(memcmp(l, tfm_session_logits(s[i]), nv * sizeof(float)) == 0, "batched session %d step %d", i, k);
        }
    }
    CHECK(max_abs_diff(tfm_session_logits(s[0]), tfm_session_logits(s[1]), nv) > 1e-3);
    for (i = 0; i < 2; i++) {
        tfm_session_destroy(s[i]);
        tfm_session_destroy(alone[i]);
    }
}

/* Bounded steps: an ablated job and a plain one stepped together one unit at a time, in passes
   of 8 rows that mix both sessions' prompt rows; each job's logits are bit for bit its session's
   alone (an eval of the same n_batch). */
static void test_steps(const tfm_model *m, const int32_t *ids, size_t n) {
    tfm_config c = tfm_model_config(m);
    size_t nl = n * (size_t)c.n_vocab;
    tfm_ablation ab;
    tfm_session *s[2];
    tfm_job_desc job[2];
    float *got[2], *want = (float *)malloc(nl * sizeof(float));
    int i, guard;
    memset(&ab, 0, sizeof ab);
    ab.no_ffn = true;
    ab.heads_kept = 5;
    ab.score_scale = 0.5f;
    for (i = 0; i < 2; i++) {
        got[i] = (float *)malloc(nl * sizeof(float));
        s[i] = open_session(m, i ? &ab : NULL, NULL, 2, 8);
        CHECK(got[i] && s[i]);
        if (!got[i] || !s[i] || !want) return;
        memset(&job[i], 0, sizeof job[i]);
        job[i].tokens = ids;
        job[i].n_tokens = n;
        job[i].logits_all = got[i];
        CHECK(tfm_session_start(s[i], &job[i]) == TFM_OK);
    }
    for (guard = 0; guard < 10000; guard++) {
        if (tfm_session_job(s[0]).status != TFM_JOB_RUNNING && tfm_session_job(s[1]).status != TFM_JOB_RUNNING) break;
        CHECK(tfm_session_step_batch(s, 2, 1, 0, NULL) == TFM_OK);
    }
    for (i = 0; i < 2; i++) {
        CHECK(tfm_session_job(s[i]).status == TFM_JOB_DONE);
        CHECK(eval_all(m, i ? &ab : NULL, NULL, 1, 8, ids, n, want) == 0);
        CHECK_MSG(memcmp(want, got[i], nl * sizeof(float)) == 0, "stepped job %d: maxdiff %g", i,
                  max_abs_diff(want, got[i], nl));
        tfm_session_destroy(s[i]);
        free(got[i]);
    }
    free(want);
}

/* The first n - 1 tokens reversed, the last kept: its logits with positions and the causal mask,
   and without positions with attention both ways (then a set: invariant). */
static void test_permutation(const tfm_model *m, const int32_t *ids, size_t n) {
    tfm_config c = tfm_model_config(m);
    size_t nv = (size_t)c.n_vocab, i;
    int32_t perm[MAX_IDS];
    float *a = (float *)malloc(n * nv * sizeof(float)), *b = (float *)malloc(n * nv * sizeof(float));
    tfm_ablation ab;
    double d_pos, d_nopos;
    CHECK(a && b && n <= MAX_IDS);
    if (!a || !b || n > MAX_IDS) return;
    for (i = 0; i + 1 < n; i++) perm[i] = ids[n - 2 - i];
    perm[n - 1] = ids[n - 1];
    CHECK(eval_all(m, NULL, NULL, 2, 0, ids, n, a) == 0 && eval_all(m, NULL, NULL, 2, 0, perm, n, b) == 0);
    d_pos = max_abs_diff(a + (n - 1) * nv, b + (n - 1) * nv, nv);
    memset(&ab, 0, sizeof ab);
    ab.no_positions = true;
    ab.no_causal = true;
    CHECK(eval_all(m, &ab, NULL, 2, 0, ids, n, a) == 0 && eval_all(m, &ab, NULL, 2, 0, perm, n, b) == 0);
    d_nopos = max_abs_diff(a + (n - 1) * nv, b + (n - 1) * nv, nv);
    printf("permutation: last-token logits move %.3g with positions, %.3g without (maxdiff)\n", d_pos, d_nopos);
    CHECK_MSG(d_pos > PERM_MIN, "with positions the order must matter: %g", d_pos);
    CHECK_MSG(d_nopos < PERM_TOL, "without positions (both ways) the order must not: %g", d_nopos);
    free(a);
    free(b);
}

/* Attention entropy (layer 0: the same inputs for every scale) falls as the scale grows. */
static void test_entropy_scale(const tfm_model *m, const int32_t *ids, size_t n) {
    static const float scales[] = {0.25f, 0.5f, 1.0f, 2.0f, 4.0f};
    tfm_config c = tfm_model_config(m);
    float *logits = (float *)malloc(n * (size_t)c.n_vocab * sizeof(float));
    double prev = INFINITY, h;
    tfm_ablation ab;
    lab_stats ls;
    int k;
    CHECK(logits && stats_alloc(&ls, &c));
    if (!logits || !ls.st.heads) return;
    for (k = 0; k < 5; k++) {
        memset(ls.st.layers, 0, ls.n_layers * sizeof(tfm_layer_stats));
        memset(ls.st.heads, 0, ls.n_heads * sizeof(tfm_head_stats));
        memset(&ab, 0, sizeof ab);
        ab.score_scale = scales[k];
        CHECK(eval_all(m, &ab, &ls.st, 2, 0, ids, n, logits) == 0);
        h = head_mean(&ls, c.n_heads, 0, offsetof(tfm_head_stats, entropy));
        printf("score scale %.2f: layer-0 entropy %.4f nats, max weight %.3f\n", (double)scales[k], h,
               head_mean(&ls, c.n_heads, 0, offsetof(tfm_head_stats, max_weight)));
        CHECK_MSG(h < prev, "entropy must fall with the scale: %g after %g", h, prev);
        prev = h;
    }
    stats_free(&ls);
    free(logits);
}

/* Tiny models of one d_model and growing d_head: layer-0 score variance without the
   1/sqrt(d_head) scale grows about as d_head; with it, it stays within a small factor. */
static void test_variance_dhead(void) {
    static const int dheads[] = {8, 32, 128};
    double var_raw[3], var_scaled[3];
    int k, i, rep;
    int32_t ids[32];
    for (i = 0; i < 32; i++) ids[i] = (int32_t)((i * 37 + 11) % 64);
    for (k = 0; k < 3; k++) {
        tiny_spec sp;
        tfm_model_desc md;
        tfm_model *m = NULL;
        size_t bytes = 0;
        unsigned char *file;
        memset(&sp, 0, sizeof sp);
        sp.n_vocab = 64; sp.n_ctx = 64; sp.n_layers = 1; sp.n_heads = 2; sp.d_model = 64; sp.d_ff = 64;
        sp.d_head = dheads[k]; sp.lnf_scale = 1.0f; sp.seed = 77;
        file = tiny_model(&sp, &bytes);
        memset(&md, 0, sizeof md);
        md.data = file;
        md.data_bytes = bytes;
        CHECK(file && tfm_model_open(&md, &m) == TFM_OK);
        for (rep = 0; rep < 2 && m; rep++) {
            tfm_config c = tfm_model_config(m);
            float *logits = (float *)malloc(32 * (size_t)c.n_vocab * sizeof(float));
            tfm_ablation ab;
            lab_stats ls;
            CHECK(logits && stats_alloc(&ls, &c));
            memset(&ab, 0, sizeof ab);
            ab.no_attn_scale = rep == 0;
            CHECK(logits && eval_all(m, &ab, &ls.st, 1, 0, ids, 32, logits) == 0);
            (rep == 0 ? var_raw : var_scaled)[k] = head_mean(&ls, c.n_heads, 0, offsetof(tfm_head_stats, score_var));
            stats_free(&ls);
            free(logits);
        }
        tfm_model_close(m);
        free(file);
        printf("d_head %3d: score variance %.4g without 1/sqrt(d_head), %.4g with\n", dheads[k], var_raw[k],
               var_scaled[k]);
    }
    CHECK_MSG(var_raw[1] > 2.0 * var_raw[0] && var_raw[2] > 2.0 * var_raw[1], "%g %g %g", var_raw[0], var_raw[1],
              var_raw[2]);
    CHECK_MSG(var_raw[2] / var_raw[0] > 6.0, "variance x%g for d_head x16", var_raw[2] / var_raw[0]);
    CHECK_MSG(var_scaled[2] / var_scaled[0] < 3.0 && var_scaled[2] / var_scaled[0] > 1.0 / 3.0, "scaled: x%g",
              var_scaled[2] / var_scaled[0]);
}

/* Perplexity: the residual ablation collapses it; each branch off raises it. */
static void test_perplexity(const tfm_model *m, const int32_t *ids, size_t n) {
    tfm_ablation ab;
    double base, no_res, no_attn, no_ffn;
    memset(&ab, 0, sizeof ab);
    base = cross_entropy(m, NULL, ids, n);
    ab.no_residual = true;
    no_res = cross_entropy(m, &ab, ids, n);
    ab.no_residual = false;
    ab.no_attn = true;
    no_attn = cross_entropy(m, &ab, ids, n);
    ab.no_attn = false;
    ab.no_ffn = true;
    no_ffn = cross_entropy(m, &ab, ids, n);
    printf("perplexity: baseline %.2f, no residual %.1f, no attention %.1f, no FFN %.1f\n", exp(base), exp(no_res),
           exp(no_attn), exp(no_ffn));
    CHECK_MSG(base > 0.5 && base < 6.0, "baseline cross-entropy %g", base);
    CHECK_MSG(exp(no_res) > 10.0 * exp(base), "no residual: ppl %g vs %g", exp(no_res), exp(base));
    CHECK(no_attn > base + 0.5 && no_ffn > base + 0.1);
}

/* The causal mask off: one eval of the prompt is not the same as two (the cache holds keys
   that saw the future); with the mask the split changes nothing beyond rounding. */
static void test_causal_split(const tfm_model *m, const int32_t *ids, size_t n) {
    tfm_config c = tfm_model_config(m);
    size_t nv = (size_t)c.n_vocab, half = n / 2;
    float *a = (float *)malloc(n * nv * sizeof(float)), *b = (float *)malloc(n * nv * sizeof(float));
    int pass;
    for (pass = 0; pass < 2 && a && b; pass++) {
        tfm_ablation ab;
        tfm_session *s;
        double d;
        memset(&ab, 0, sizeof ab);
        ab.no_causal = pass == 1;
        CHECK(eval_all(m, &ab, NULL, 1, 0, ids, n, a) == 0);
        s = open_session(m, &ab, NULL, 1, 0);
        CHECK(s && tfm_session_eval(s, ids, half, 0, NULL) == TFM_OK &&
              tfm_session_eval(s, ids + half, n - half, (int)half, b + half * nv) == TFM_OK);
        tfm_session_destroy(s);
        d = max_abs_diff(a + (n - 1) * nv, b + (n - 1) * nv, nv);
        printf("causal mask %s: one eval vs two, last logits maxdiff %.3g\n", pass ? "off" : "on", d);
        if (pass == 0) CHECK(d < PERM_TOL);
        else CHECK(d > PERM_MIN);
    }
    free(a);
    free(b);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : DEMO_PATH;
    tfm_model_desc md;
    tfm_model *m = NULL;
    int32_t ids[MAX_IDS];
    size_t n_ids = 0, text_bytes = 0;
    char *text;
    test_variance_dhead();
    memset(&md, 0, sizeof md);
    md.path = path;
    if (tfm_model_open(&md, &m) != TFM_OK) {
        printf("SKIP demo-model lab tests: %s does not open (run `make`)\n", path);
        return check_summary("test_lab");
    }
    text = read_text(TEXT_PATH, &text_bytes);
    if (tfm_model_tokenize(m, text ? text : fallback_text, text ? text_bytes : sizeof fallback_text - 1, ids,
                           MAX_IDS, &n_ids) != TFM_OK && n_ids <= MAX_IDS) n_ids = 0;
    free(text);
    if (n_ids > MAX_IDS) n_ids = MAX_IDS;
    CHECK(n_ids >= N_PROMPT);
    if (n_ids >= N_PROMPT) {
        test_identity(m, ids, N_PROMPT);
        test_each_changes(m, ids, N_PROMPT);
        test_batched(m, ids, N_PROMPT);
        test_steps(m, ids, N_PROMPT);
        test_permutation(m, ids, N_PROMPT);
        test_entropy_scale(m, ids, N_PROMPT);
        test_causal_split(m, ids, N_PROMPT);
        test_perplexity(m, ids, n_ids < N_SCORE ? n_ids : N_SCORE);
    }
    tfm_model_close(m);
    return check_summary("test_lab");
}
