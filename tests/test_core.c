/* test_core.c - the core of tfm.h: kernels against double-precision references, SIMD against
   scalar twins, whole models (written here, in memory, with random weights) against a naive
   double-precision forward, the KV cache, threads, corrupt files, allocation failures and the
   sampler. Needs nothing from ../shared. */
#if defined(__unix__) || defined(__APPLE__)
#define _POSIX_C_SOURCE 200809L
#define CORE_PTHREADS 1
#include <pthread.h>
#include <unistd.h>
#endif
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "alloc.h"
#include "tfm_writer.h"
#include <math.h>
#include <stdint.h>

enum { BATCH = 16 }; /* n_batch of the cancellation test: 20 tokens span two batches */

/* ---- small helpers ------------------------------------------------------------------------- */

static uint64_t rng_state = 88172645463325252ull;
static void rng_seed(uint64_t s) { rng_state = s ? s : 1; }
static double rng_unit(void) { /* [0, 1) */
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static float rng_sym(float scale) { return (float)((rng_unit() * 2.0 - 1.0) * scale); }

static double maxdiff_f(const float *a, const double *b, int n) {
    double m = 0.0;
    int i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d; /* NaN propagates as a failure */
    }
    return m;
}

static void report(const char *what, double md, double tol) {
    printf("%-44s maxdiff %.3g (tol %.1g)\n", what, md, tol);
    CHECK_MSG(md <= tol, "%s: maxdiff %g > %g", what, md, tol);
}

/* ---- the logger keeps the last message --------------------------------------------------- */

typedef struct last_log { char text[512]; int count; tfm_result result; } last_log;
static void log_keep(void *user, tfm_result r, const char *msg) {
    last_log *l = (last_log *)user;
    snprintf(l->text, sizeof l->text, "%s", msg);
    l->count++;
    l->result = r;
}

/* ---- random-weight models, written by the tests' own writer (tests/tfm_writer.h) ---------- */

typedef struct spec {
    int n_vocab, n_ctx, n_layers, n_heads, n_kv_heads, d_model, d_head, d_ff, rope_dim;
    float theta, eps;
    int norm, act, ffn, residual, pos;
    int tied, bias, out_bias, f16;
    uint64_t seed;
    const char *label;
} spec;

#define MAX_T 512
typedef struct wtensor { char name[64]; int rows, cols; float *v; } wtensor; /* cols 0: vector */
typedef struct wmodel { spec sp; wtensor t[MAX_T]; int n; } wmodel;

static void add_tensor(wmodel *m, const char *name, int rows, int cols, float scale, float offset) {
    wtensor *t = &m->t[m->n++];
    size_t n = (size_t)rows * (size_t)(cols ? cols : 1), i;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->rows = rows;
    t->cols = cols;
    t->v = (float *)malloc(n * sizeof(float));
    for (i = 0; i < n; i++) {
        t->v[i] = offset + rng_sym(scale);
        if (cols && m->sp.f16) { /* the reference uses exactly the stored halves */
            uint16_t h = tw_f32_to_f16(t->v[i]);
            t->v[i] = tfm__f16_to_f32(h);
        }
    }
}

static const float *find(const wmodel *m, const char *name) {
    int i;
    for (i = 0; i < m->n; i++)
        if (strcmp(m->t[i].name, name) == 0) return m->t[i].v;
    return NULL;
}

static void build_model(wmodel *m, const spec *sp) {
    int l, d = sp->d_model, q = sp->n_heads * sp->d_head, kv = sp->n_kv_heads * sp->d_head;
    char nm[64];
    memset(m, 0, sizeof *m);
    m->sp = *sp;
    rng_seed(sp->seed);
    add_tensor(m, "tok_embd", sp->n_vocab, d, 1.0f, 0.0f);
    if (sp->pos == TFM_POS_LEARNED) add_tensor(m, "pos_embd", sp->n_ctx, d, 0.5f, 0.0f);
    for (l = 0; l < sp->n_layers; l++) {
#define T(suffix, r, c, sc, off) (snprintf(nm, sizeof nm, "blk.%d.%s", l, suffix), add_tensor(m, nm, r, c, sc, off))
        T("ln1.w", d, 0, 0.2f, 1.0f);
        if (sp->norm == TFM_NORM_LAYERNORM) T("ln1.b", d, 0, 0.2f, 0.0f);
        T("wq", q, d, 1.0f / sqrtf((float)d), 0.0f);
        T("wk", kv, d, 1.0f / sqrtf((float)d), 0.0f);
        T("wv", kv, d, 1.0f / sqrtf((float)d), 0.0f);
        T("wo", d, q, 1.0f / sqrtf((float)q), 0.0f);
        if (sp->bias) { T("bq", q, 0, 0.2f, 0.0f); T("bk", kv, 0, 0.2f, 0.0f); T("bv", kv, 0, 0.2f, 0.0f); T("bo", d, 0, 0.1f, 0.0f); }
        if (sp->residual != TFM_RESIDUAL_PARALLEL_SHARED) {
            T("ln2.w", d, 0, 0.2f, 1.0f);
            if (sp->norm == TFM_NORM_LAYERNORM) T("ln2.b", d, 0, 0.2f, 0.0f);
        }
        T("w_up", sp->d_ff, d, 1.5f / sqrtf((float)d), 0.0f);
        if (sp->bias) T("b_up", sp->d_ff, 0, 0.2f, 0.0f);
        if (sp->ffn == TFM_FFN_GATED) {
            T("w_gate", sp->d_ff, d, 1.5f / sqrtf((float)d), 0.0f);
            if (sp->bias) T("b_gate", sp->d_ff, 0, 0.2f, 0.0f);
        }
        T("w_down", d, sp->d_ff, 1.0f / sqrtf((float)sp->d_ff), 0.0f);
        if (sp->bias) T("b_down", d, 0, 0.1f, 0.0f);
#undef T
    }
    add_tensor(m, "lnf.w", d, 0, 0.2f, 1.0f);
    if (sp->norm == TFM_NORM_LAYERNORM) add_tensor(m, "lnf.b", d, 0, 0.2f, 0.0f);
    if (!sp->tied) add_tensor(m, "output.w", sp->n_vocab, d, 2.0f / sqrtf((float)d), 0.0f);
    if (sp->out_bias) add_tensor(m, "output.b", sp->n_vocab, 0, 0.5f, 0.0f);
}

static void free_model(wmodel *m) {
    int i;
    for (i = 0; i < m->n; i++) free(m->t[i].v);
    m->n = 0;
}

/* The whole file in one malloc'ed buffer, by the tests' own writer (tests/tfm_writer.h). */
static unsigned char *write_model(const wmodel *m, size_t *out_bytes) {
    const spec *sp = &m->sp;
    tw_header h;
    tw_tensor t[MAX_T];
    unsigned char *f;
    int i;
    memset(&h, 0, sizeof h);
    h.n_vocab = sp->n_vocab; h.n_ctx = sp->n_ctx; h.n_layers = sp->n_layers; h.n_heads = sp->n_heads;
    h.n_kv_heads = sp->n_kv_heads; h.d_model = sp->d_model; h.d_head = sp->d_head; h.d_ff = sp->d_ff;
    h.rope_dim = sp->rope_dim; h.theta = sp->theta; h.eps = sp->eps; h.norm = sp->norm; h.act = sp->act;
    h.ffn = sp->ffn; h.residual = sp->residual; h.pos = sp->pos;
    for (i = 0; i < m->n; i++) {
        t[i].name = m->t[i].name;
        t[i].rows = m->t[i].rows;
        t[i].cols = m->t[i].cols;
        t[i].f16 = sp->f16;
        t[i].v = m->t[i].v;
        t[i].dtype = 0;
    }
    f = tw_write(&h, t, m->n, NULL, 0, out_bytes);
    if (!f) { fprintf(stderr, "test_core: out of memory\n"); exit(1); }
    return f;
}

static tfm_result open_mem(const unsigned char *data, size_t bytes, tfm_model **out, last_log *lg) {
    tfm_model_desc md;
    memset(&md, 0, sizeof md);
    md.data = data;
    md.data_bytes = bytes;
    if (lg) { md.logger.log = log_keep; md.logger.user = lg; }
    return tfm_model_open(&md, out);
}

/* ---- naive double-precision forward over a whole sequence (no cache) ----------------------- */

static void ref_norm(const spec *sp, const double *x, const float *w, const float *b, double *out) {
    int d = sp->d_model, i;
    double mean = 0.0, var = 0.0;
    if (sp->norm == TFM_NORM_RMSNORM) {
        for (i = 0; i < d; i++) var += x[i] * x[i];
        for (i = 0; i < d; i++) out[i] = x[i] / sqrt(var / d + (double)sp->eps) * (double)w[i];
        return;
    }
    for (i = 0; i < d; i++) mean += x[i];
    mean /= d;
    for (i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= d;
    for (i = 0; i < d; i++) out[i] = (x[i] - mean) / sqrt(var + (double)sp->eps) * (double)w[i] + (b ? (double)b[i] : 0.0);
}

static void ref_matvec(const float *w, const float *b, const double *x, int rows, int cols, double *y) {
    int r, c;
    for (r = 0; r < rows; r++) {
        double s = b ? (double)b[r] : 0.0;
        for (c = 0; c < cols; c++) s += (double)w[(size_t)r * (size_t)cols + (size_t)c] * x[c];
        y[r] = s;
    }
}

static double ref_act(int act, double x) {
    if (act == TFM_ACT_SILU) return x / (1.0 + exp(-x));
    if (act == TFM_ACT_GELU_TANH) return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double ref_alibi_slope(int n_heads, int h) {
    int p = 1;
    while (p * 2 <= n_heads) p *= 2;
    if (h < p) return pow(2.0, -8.0 * (h + 1) / p);
    return pow(2.0, -8.0 * (2 * (h - p) + 1) / (2.0 * p));
}

static void ref_rope(double *v, int rope_dim, int pos, double theta, int interleaved) {
    int j, half = rope_dim / 2;
    for (j = 0; j < half; j++) {
        double ang = pos * pow(theta, -2.0 * j / rope_dim), c = cos(ang), s = sin(ang);
        int ia = interleaved ? 2 * j : j, ib = interleaved ? 2 * j + 1 : j + half;
        double a = v[ia], b = v[ib];
        v[ia] = a * c - b * s;
        v[ib] = a * s + b * c;
    }
}

static const float *lt(const wmodel *m, int l, const char *suffix) {
    char nm[64];
    snprintf(nm, sizeof nm, "blk.%d.%s", l, suffix);
    return find(m, nm);
}

static void ref_ffn(const wmodel *m, int l, const double *in, double *out, double *up, double *gate) {
    const spec *sp = &m->sp;
    int i;
    ref_matvec(lt(m, l, "w_up"), lt(m, l, "b_up"), in, sp->d_ff, sp->d_model, up);
    if (sp->ffn == TFM_FFN_GATED) {
        ref_matvec(lt(m, l, "w_gate"), lt(m, l, "b_gate"), in, sp->d_ff, sp->d_model, gate);
        for (i = 0; i < sp->d_ff; i++) up[i] *= ref_act(sp->act, gate[i]);
    } else {
        for (i = 0; i < sp->d_ff; i++) up[i] = ref_act(sp->act, up[i]);
    }
    ref_matvec(lt(m, l, "w_down"), lt(m, l, "b_down"), up, sp->d_model, sp->d_ff, out);
}

/* logits [T, n_vocab] for tokens[0..T) evaluated from scratch. */
static void ref_forward(const wmodel *m, const int32_t *tok, int T, double *logits) {
    const spec *sp = &m->sp;
    int d = sp->d_model, qd = sp->n_heads * sp->d_head, kvd = sp->n_kv_heads * sp->d_head, dh = sp->d_head;
    int t, l, i, h, s, group = sp->n_heads / sp->n_kv_heads;
    int rope = sp->pos == TFM_POS_ROPE_HALF || sp->pos == TFM_POS_ROPE_INTERLEAVED;
    double *X = (double *)calloc((size_t)T * d, sizeof(double)), *A = (double *)calloc((size_t)T * d, sizeof(double));
    double *B = (double *)calloc((size_t)T * d, sizeof(double)), *O = (double *)calloc((size_t)T * d, sizeof(double));
    double *F = (double *)calloc((size_t)d, sizeof(double));
    double *Q = (double *)calloc((size_t)T * qd, sizeof(double)), *K = (double *)calloc((size_t)T * kvd, sizeof(double));
    double *V = (double *)calloc((size_t)T * kvd, sizeof(double)), *att = (double *)calloc((size_t)qd, sizeof(double));
    double *sc = (double *)calloc((size_t)T, sizeof(double)), *up = (double *)calloc((size_t)sp->d_ff, sizeof(double));
    double *gate = (double *)calloc((size_t)sp->d_ff, sizeof(double));
    const float *emb = find(m, "tok_embd"), *pe = find(m, "pos_embd");
    const float *wout = sp->tied ? emb : find(m, "output.w");
    for (t = 0; t < T; t++)
        for (i = 0; i < d; i++) {
            double v = emb[(size_t)tok[t] * d + i];
            if (sp->pos == TFM_POS_LEARNED) v += pe[(size_t)t * d + i];
            if (sp->pos == TFM_POS_SINUSOIDAL) {
                double ang = t / pow(10000.0, (double)(i - i % 2) / d);
                v += i % 2 ? cos(ang) : sin(ang);
            }
            X[t * d + i] = v;
        }
    for (l = 0; l < sp->n_layers; l++) {
        for (t = 0; t < T; t++) {
            ref_norm(sp, X + t * d, lt(m, l, "ln1.w"), lt(m, l, "ln1.b"), A + t * d);
            ref_matvec(lt(m, l, "wq"), lt(m, l, "bq"), A + t * d, qd, d, Q + t * qd);
            ref_matvec(lt(m, l, "wk"), lt(m, l, "bk"), A + t * d, kvd, d, K + t * kvd);
            ref_matvec(lt(m, l, "wv"), lt(m, l, "bv"), A + t * d, kvd, d, V + t * kvd);
            for (h = 0; h < sp->n_heads && rope; h++) ref_rope(Q + t * qd + h * dh, sp->rope_dim, t, sp->theta, sp->pos == TFM_POS_ROPE_INTERLEAVED);
            for (h = 0; h < sp->n_kv_heads && rope; h++) ref_rope(K + t * kvd + h * dh, sp->rope_dim, t, sp->theta, sp->pos == TFM_POS_ROPE_INTERLEAVED);
        }
        for (t = 0; t < T; t++) {
            for (h = 0; h < sp->n_heads; h++) {
                const double *qh = Q + t * qd + h * dh;
                int kh = h / group;
                double mx = -1e300, sum = 0.0;
                for (s = 0; s <= t; s++) {
                    double dot = 0.0;
                    for (i = 0; i < dh; i++) dot += qh[i] * K[s * kvd + kh * dh + i];
                    sc[s] = dot / sqrt((double)dh);
                    if (sp->pos == TFM_POS_ALIBI) sc[s] += ref_alibi_slope(sp->n_heads, h) * (s - t);
                    if (sc[s] > mx) mx = sc[s];
                }
                for (s = 0; s <= t; s++) { sc[s] = exp(sc[s] - mx); sum += sc[s]; }
                for (i = 0; i < dh; i++) {
                    double acc = 0.0;
                    for (s = 0; s <= t; s++) acc += sc[s] / sum * V[s * kvd + kh * dh + i];
                    att[h * dh + i] = acc;
                }
            }
            ref_matvec(lt(m, l, "wo"), lt(m, l, "bo"), att, d, qd, O + t * d);
        }
        for (t = 0; t < T; t++) {
            double *x = X + t * d;
            if (sp->residual == TFM_RESIDUAL_SEQUENTIAL) {
                for (i = 0; i < d; i++) x[i] += O[t * d + i];
                ref_norm(sp, x, lt(m, l, "ln2.w"), lt(m, l, "ln2.b"), B + t * d);
                ref_ffn(m, l, B + t * d, F, up, gate);
            } else if (sp->residual == TFM_RESIDUAL_PARALLEL) {
                ref_norm(sp, x, lt(m, l, "ln2.w"), lt(m, l, "ln2.b"), B + t * d);
                ref_ffn(m, l, B + t * d, F, up, gate);
                for (i = 0; i < d; i++) x[i] += O[t * d + i];
            } else {
                ref_ffn(m, l, A + t * d, F, up, gate);
                for (i = 0; i < d; i++) x[i] += O[t * d + i];
            }
            for (i = 0; i < d; i++) x[i] += F[i];
        }
    }
    for (t = 0; t < T; t++) {
        ref_norm(sp, X + t * d, find(m, "lnf.w"), find(m, "lnf.b"), A + t * d);
        ref_matvec(wout, find(m, "output.b"), A + t * d, sp->n_vocab, d, logits + (size_t)t * sp->n_vocab);
    }
    free(X); free(A); free(B); free(O); free(F); free(Q); free(K); free(V); free(att); free(sc); free(up); free(gate);
}

/* ---- model specs used below ----------------------------------------------------------------- */

static spec base_spec(void) {
    spec s;
    memset(&s, 0, sizeof s);
    s.n_vocab = 37; s.n_ctx = 24; s.n_layers = 2; s.n_heads = 4; s.n_kv_heads = 4;
    s.d_model = 32; s.d_head = 8; s.d_ff = 48; s.rope_dim = 8; s.theta = 10000.0f; s.eps = 1e-5f;
    s.seed = 1234;
    return s;
}

#define N_SPECS 8
static spec make_spec(int which) {
    spec s = base_spec();
    s.seed = 1000u + (uint64_t)which;
    switch (which) {
    case 0: /* GPT-NeoX: two norms in parallel, partial half-split RoPE, biases, untied */
        s.label = "neox parallel, partial rope_half";
        s.norm = TFM_NORM_LAYERNORM; s.act = TFM_ACT_GELU_ERF; s.residual = TFM_RESIDUAL_PARALLEL;
        s.pos = TFM_POS_ROPE_HALF; s.rope_dim = 4; s.bias = 1; break;
    case 1: /* GPT-2: sequential, learned positions, tied output */
        s.label = "gpt2 sequential, learned, tied, f16";
        s.act = TFM_ACT_GELU_TANH; s.pos = TFM_POS_LEARNED; s.rope_dim = 0; s.bias = 1; s.tied = 1; s.f16 = 1; break;
    case 2: /* Llama: RMSNorm, SwiGLU, interleaved RoPE, GQA, f16 */
        s.label = "llama rmsnorm+gated, GQA, f16";
        s.norm = TFM_NORM_RMSNORM; s.act = TFM_ACT_SILU; s.ffn = TFM_FFN_GATED; s.pos = TFM_POS_ROPE_INTERLEAVED;
        s.n_kv_heads = 2; s.f16 = 1; break;
    case 3: /* Phi: one shared norm, partial RoPE, output bias */
        s.label = "phi parallel shared, output.b";
        s.act = TFM_ACT_GELU_TANH; s.residual = TFM_RESIDUAL_PARALLEL_SHARED; s.pos = TFM_POS_ROPE_HALF;
        s.rope_dim = 4; s.bias = 1; s.out_bias = 1; break;
    case 4: /* ALiBi with a non-power-of-two head count and one kv head (MQA) */
        s.label = "alibi 6 heads, MQA, tied";
        s.n_heads = 6; s.n_kv_heads = 1; s.d_head = 6; s.pos = TFM_POS_ALIBI; s.rope_dim = 0; s.tied = 1; break;
    case 5: /* sinusoidal positions, odd d_model, gated GELU, f16 */
        s.label = "sinusoidal, odd d_model, geglu, f16";
        s.d_model = 31; s.n_heads = 3; s.n_kv_heads = 3; s.d_head = 10; s.pos = TFM_POS_SINUSOIDAL; s.rope_dim = 0;
        s.ffn = TFM_FFN_GATED; s.f16 = 1; s.norm = TFM_NORM_RMSNORM; break;
    case 6: /* GPT-J: interleaved partial RoPE, shared norm, f16 */
        s.label = "gptj interleaved partial rope, f16";
        s.act = TFM_ACT_GELU_TANH; s.residual = TFM_RESIDUAL_PARALLEL_SHARED; s.pos = TFM_POS_ROPE_INTERLEAVED;
        s.rope_dim = 4; s.f16 = 1; s.bias = 1; break;
    default: /* no positions at all, d_ff not a multiple of 8, 3 layers */
        s.label = "no positions, 3 layers";
        s.n_layers = 3; s.d_ff = 45; s.pos = TFM_POS_NONE; s.rope_dim = 0; s.norm = TFM_NORM_RMSNORM; break;
    }
    return s;
}

static void make_tokens(int32_t *tok, int n, int n_vocab, uint64_t seed) {
    int i;
    rng_seed(seed);
    for (i = 0; i < n; i++) tok[i] = (int32_t)(rng_unit() * n_vocab);
}

/* ---- kernel tests --------------------------------------------------------------------------- */

static void test_kernels(void) {
    enum { N = 67 };
    float x[N], w[N], b[N], out[N];
    double ref[N], mean = 0, var = 0, ss = 0, md;
    int i, j, si;
    rng_seed(7);
    for (i = 0; i < N; i++) { x[i] = rng_sym(3.0f) + 0.5f; w[i] = rng_sym(1.0f); b[i] = rng_sym(1.0f); }
    /* layernorm */
    for (i = 0; i < N; i++) mean += x[i];
    mean /= N;
    for (i = 0; i < N; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= N;
    for (i = 0; i < N; i++) ref[i] = (x[i] - mean) / sqrt(var + 1e-5) * w[i] + b[i];
    tfm__layernorm(out, x, w, b, N, 1e-5f);
    report("layernorm", maxdiff_f(out, ref, N), 1e-5);
    memcpy(out, x, sizeof x); /* in place */
    tfm__layernorm(out, out, w, b, N, 1e-5f);
    report("layernorm in place", maxdiff_f(out, ref, N), 1e-5);
    /* rmsnorm */
    for (i = 0; i < N; i++) ss += (double)x[i] * x[i];
    for (i = 0; i < N; i++) ref[i] = x[i] / sqrt(ss / N + 1e-6) * w[i];
    tfm__rmsnorm(out, x, w, N, 1e-6f);
    report("rmsnorm", maxdiff_f(out, ref, N), 1e-5);
    /* activations over [-8, 8] */
    {
        double me = 0, mt = 0, ms = 0;
        for (i = 0; i <= 1600; i++) {
            float v = -8.0f + 0.01f * (float)i;
            me = fmax(me, fabs((double)tfm__gelu_erf(v) - ref_act(TFM_ACT_GELU_ERF, v)));
            mt = fmax(mt, fabs((double)tfm__gelu_tanh(v) - ref_act(TFM_ACT_GELU_TANH, v)));
            ms = fmax(ms, fabs((double)tfm__silu(v) - ref_act(TFM_ACT_SILU, v)));
        }
        report("gelu erf", me, 1e-5);
        report("gelu tanh", mt, 1e-5);
        report("silu", ms, 1e-5);
        /* the two GELU forms really differ (so a mixed-up dispatch would be seen) */
        CHECK(fabs((double)tfm__gelu_erf(-1.5f) - (double)tfm__gelu_tanh(-1.5f)) > 1e-4);
    }
    /* softmax, including huge logits */
    {
        double sum = 0, mx = -1e300;
        for (i = 0; i < N; i++) { out[i] = x[i] * 100.0f; mx = fmax(mx, out[i]); }
        for (i = 0; i < N; i++) sum += exp((double)out[i] - mx);
        for (i = 0; i < N; i++) ref[i] = exp((double)out[i] - mx) / sum;
        for (si = 0; si < TFM__SET_COUNT; si++) { /* each set's e^x */
            tfm__isa set;
            char what[64];
            if (!tfm__isa_get(si, &set) || !tfm__isa_runs(set.name)) continue;
            for (i = 0; i < N; i++) out[i] = x[i] * 100.0f;
            tfm__softmax_inplace(&set, out, N);
            snprintf(what, sizeof what, "softmax (logits up to 350), set %s", set.name);
            report(what, maxdiff_f(out, ref, N), 1e-6);
        }
    }
    /* RoPE: half-split and interleaved, full and partial, at several positions */
    {
        int dims[3] = {16, 8, 2}, pos_list[3] = {0, 5, 1000}, inter, k, p;
        double mdr = 0;
        float *cs = (float *)malloc(1001 * 8 * sizeof(float)), *sn = (float *)malloc(1001 * 8 * sizeof(float));
        for (inter = 0; inter < 2; inter++)
            for (k = 0; k < 3; k++) {
                tfm__rope_tables(cs, sn, 1001, dims[k], 10000.0f, NULL, 1.0f);
                for (p = 0; p < 3; p++) {
                    double v[16];
                    float vf[16];
                    for (j = 0; j < 16; j++) { vf[j] = rng_sym(1.0f); v[j] = vf[j]; }
                    ref_rope(v, dims[k], pos_list[p], 10000.0, inter);
                    tfm__rope(vf, dims[k], cs + (size_t)pos_list[p] * (size_t)(dims[k] / 2),
                              sn + (size_t)pos_list[p] * (size_t)(dims[k] / 2), inter != 0);
                    mdr = fmax(mdr, maxdiff_f(vf, v, 16));
                }
            }
        report("rope half+interleaved, full+partial", mdr, 1e-5);
        /* the dims past rope_dim must be untouched, and the pairing matters */
        {
            float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c2[8];
            memcpy(c2, a, sizeof a);
            tfm__rope_tables(cs, sn, 4, 4, 10000.0f, NULL, 1.0f);
            tfm__rope(a, 4, cs + 3 * 2, sn + 3 * 2, false);
            tfm__rope(c2, 4, cs + 3 * 2, sn + 3 * 2, true);
            CHECK(a[4] == 5 && a[7] == 8 && c2[5] == 6);
            CHECK(fabsf(a[1] - c2[1]) > 1e-3f);
            /* half-split at pos 3: pair (0,2) turns by 3 rad */
            CHECK(fabs(a[0] - (1 * cos(3.0) - 3 * sin(3.0))) < 1e-5);
        }
        /* per-frequency divisors (rope_scaling) and the cos/sin multiplier (longrope) */
        {
            float div[4] = {1.0f, 2.5f, 8.0f, 3.25f};
            double mdd = 0;
            tfm__rope_tables(cs, sn, 1001, 8, 500.0f, div, 1.25f);
            for (p = 0; p < 3; p++)
                for (j = 0; j < 4; j++) {
                    double ang = (double)pos_list[p] * pow(500.0, -2.0 * j / 8.0) / div[j];
                    mdd = fmax(mdd, fabs(cs[pos_list[p] * 4 + j] - 1.25 * cos(ang)));
                    mdd = fmax(mdd, fabs(sn[pos_list[p] * 4 + j] - 1.25 * sin(ang)));
                }
            report("rope tables with divisors and mscale", mdd, 1e-6);
        }
        free(cs);
        free(sn);
    }
    /* ALiBi slopes: power of two and not (paper / HF build_alibi_tensor values) */
    {
        float sl[12];
        double want12[12] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
                             0.70710678118654752, 0.35355339059327376, 0.17677669529663688, 0.08838834764831845};
        tfm__alibi_slopes(sl, 8);
        md = 0;
        for (i = 0; i < 8; i++) md = fmax(md, fabs(sl[i] - want12[i]));
        tfm__alibi_slopes(sl, 12);
        for (i = 0; i < 12; i++) md = fmax(md, fabs(sl[i] - want12[i]));
        tfm__alibi_slopes(sl, 6); /* p = 4: 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3 */
        md = fmax(md, fabs(sl[0] - 0.25) + fabs(sl[3] - 0.00390625) + fabs(sl[4] - 0.5) + fabs(sl[5] - 0.125));
        report("alibi slopes (8, 12, 6 heads)", md, 1e-7);
    }
    /* sinusoidal table */
    {
        int d = 13, n_ctx = 50;
        float *pe = (float *)malloc((size_t)(d * n_ctx) * sizeof(float));
        md = 0;
        tfm__sinusoid_table(pe, n_ctx, d);
        for (i = 0; i < n_ctx; i++)
            for (j = 0; j < d; j++) {
                double ang = i / pow(10000.0, (double)(j - j % 2) / d);
                md = fmax(md, fabs(pe[i * d + j] - (j % 2 ? cos(ang) : sin(ang))));
            }
        report("sinusoidal positions (d 13)", md, 1e-6);
        free(pe);
    }
}

/* float64 attention of q over keys/values rows first..t of k, v ([*, kvd], column col),
   scale, soft-cap (0 none) and slope. */
static void ref_attention(const float *q, const float *k, const float *v, int kvd, int col, int dh, int first,
                          int t, double scale, double cap, double slope, double *out) {
    double sc[64], mx = -1e300, sum = 0;
    int i, j;
    for (j = first; j <= t; j++) {
        double dot = 0;
        for (i = 0; i < dh; i++) dot += (double)q[i] * k[j * kvd + col + i];
        dot *= scale;
        if (cap > 0) dot = cap * tanh(dot / cap);
        sc[j - first] = dot + slope * (double)(j - t);
        mx = fmax(mx, sc[j - first]);
    }
    for (j = first; j <= t; j++) { sc[j - first] = exp(sc[j - first] - mx); sum += sc[j - first]; }
    for (i = 0; i < dh; i++) {
        out[i] = 0;
        for (j = first; j <= t; j++) out[i] += sc[j - first] / sum * v[j * kvd + col + i];
    }
}

/* a sliding window over a ring cache: position p in row p % R, the query at t sees
   t - W + 1..t (the runs wrap), with a scale and a soft-cap */
static void test_attention_window(void) {
    enum { NT = 40, R = 11, W = 7, DH = 8, KVD = 2 * DH };
    float k[NT * KVD], v[NT * KVD], kr[R * KVD], vr[R * KVD], q[DH], out[DH], scores[R]; /* kr: [kv head][d][row] */
    double ref[DH], md = 0;
    int i, t, c;
    tfm__isa scalar;
    tfm__isa_get(TFM__SET_SCALAR, &scalar);
    rng_seed(9);
    for (i = 0; i < NT * KVD; i++) { k[i] = rng_sym(1.0f); v[i] = rng_sym(1.0f); }
    for (i = 0; i < DH; i++) q[i] = rng_sym(3.0f);
    for (c = 0; c < 2; c++)
        for (t = 0; t < NT; t++) {
            tfm__kv_span sp;
            int first = t >= W ? t - W + 1 : 0;
            for (i = 0; i < KVD; i++) { kr[(i / DH * DH + i % DH) * R + t % R] = k[t * KVD + i]; vr[(t % R) * KVD + i] = v[t * KVD + i]; }
            sp.kt = (const unsigned char *)(kr + DH * R); sp.v = (const unsigned char *)(vr + DH);
            sp.rows = R; sp.kv_dim = KVD; sp.f16 = false;
            sp.n = t - first + 1;
            sp.s0 = first % R;
            sp.n0 = sp.n < R - sp.s0 ? sp.n : R - sp.s0;
            tfm__attention_head(&scalar, q, &sp, DH, 0.3f, c ? 1.5f : 0.0f, 0.0f, scores, out);
            ref_attention(q, k, v, KVD, DH, DH, first, t, 0.3f, c ? 1.5 : 0.0, 0.0, ref);
            md = fmax(md, maxdiff_f(out, ref, DH));
        }
    report("attention window over a wrapping ring, scale, soft-cap", md, 1e-6);
}

/* attention for one query over a cache, GQA head mapping, ALiBi slope */
static void test_attention(void) {
    tfm__isa scalar;
    enum { NP = 9, DH = 12, NKV = 2, KVD = NKV * DH, KS = NP + 3 };
    float k[NP * KVD], v[NP * KVD], kt[NKV * DH * KS], q[DH], out[DH], scores[NP];
    unsigned char kt_h[2 * NKV * DH * KS], v_h[2 * NP * KVD];
    double ref[DH], sc[NP], mx, sum, md = 0;
    int kvh, i, j, slope_i, half;
    float slopes[2] = {0.0f, 0.3f};
    tfm__isa_get(TFM__SET_SCALAR, &scalar);
    rng_seed(5);
    for (i = 0; i < NP * KVD; i++) { k[i] = rng_sym(1.0f); v[i] = rng_sym(1.0f); }
    for (i = 0; i < DH; i++) q[i] = rng_sym(2.0f);
    for (half = 0; half < 2; half++) {
        if (half) /* the f16 cache: the reference uses the rounded values */
            for (i = 0; i < NP * KVD; i++) {
                k[i] = tfm__f16_to_f32(tfm__f32_to_f16(k[i]));
                v[i] = tfm__f16_to_f32(tfm__f32_to_f16(v[i]));
                tfm__wr_u16(v_h + 2 * i, tfm__f32_to_f16(v[i]));
            }
        for (kvh = 0; kvh < NKV; kvh++) /* keys transposed: [kv head][d][position], rows KS apart */
            for (i = 0; i < DH; i++)
                for (j = 0; j < NP; j++) {
                    kt[(kvh * DH + i) * KS + j] = k[j * KVD + kvh * DH + i];
                    tfm__wr_u16(kt_h + 2 * ((kvh * DH + i) * KS + j), tfm__f32_to_f16(k[j * KVD + kvh * DH + i]));
                }
        for (slope_i = 0; slope_i < 2; slope_i++)
            for (kvh = 0; kvh < NKV; kvh++) {
                mx = -1e300; sum = 0;
                for (j = 0; j < NP; j++) {
                    double dot = 0;
                    for (i = 0; i < DH; i++) dot += (double)q[i] * k[j * KVD + kvh * DH + i];
                    sc[j] = dot / sqrt((double)DH) + slopes[slope_i] * (double)(j - (NP - 1));
                    mx = fmax(mx, sc[j]);
                }
                for (j = 0; j < NP; j++) { sc[j] = exp(sc[j] - mx); sum += sc[j]; }
                for (i = 0; i < DH; i++) {
                    ref[i] = 0;
                    for (j = 0; j < NP; j++) ref[i] += sc[j] / sum * v[j * KVD + kvh * DH + i];
                }
                {
                    tfm__kv_span sp;
                    sp.kt = half ? kt_h + 2 * kvh * DH * KS : (const unsigned char *)(kt + kvh * DH * KS);
                    sp.v = half ? v_h + 2 * kvh * DH : (const unsigned char *)(v + kvh * DH);
                    sp.rows = KS; sp.kv_dim = KVD; sp.f16 = half != 0; sp.s0 = 0; sp.n0 = NP; sp.n = NP;
                    tfm__attention_head(&scalar, q, &sp, DH, 1.0f / sqrtf((float)DH), 0.0f, slopes[slope_i], scores, out);
                }
                md = fmax(md, maxdiff_f(out, ref, DH));
            }
    }
    report("attention (kv head column, alibi slope, f32 and f16 cache)", md, 1e-6);
}

/* ---- whole models --------------------------------------------------------------------------- */

enum { SEQ = 20 };

/* Run tokens through a session: all at once, one by one, and with a rewind; compare all three
   with each other (exactly) and with the double reference. */
static void test_model_spec(const spec *sp) {
    wmodel wm;
    unsigned char *file;
    size_t bytes;
    tfm_model *model = NULL;
    tfm_session *s = NULL;
    tfm_session_desc sd;
    int32_t tok[SEQ];
    int nv = sp->n_vocab, i;
    float *all = (float *)malloc((size_t)SEQ * nv * sizeof(float)), *one = (float *)malloc((size_t)SEQ * nv * sizeof(float));
    double *ref = (double *)malloc((size_t)SEQ * nv * sizeof(double));
    char what[128];
    tfm_config c;
    build_model(&wm, sp);
    file = write_model(&wm, &bytes);
    make_tokens(tok, SEQ, nv, sp->seed);
    {
        last_log lg;
        memset(&lg, 0, sizeof lg);
        CHECK_MSG(open_mem(file, bytes, &model, &lg) == TFM_OK, "%s: %s", sp->label, lg.text);
    }
    if (!model) goto done;
    c = tfm_model_config(model);
    CHECK(c.n_layers == sp->n_layers && c.d_model == sp->d_model && c.n_kv_heads == sp->n_kv_heads);
    CHECK(c.tied_output == (sp->tied != 0));
    CHECK(c.dtype == (sp->f16 ? TFM_DTYPE_F16 : TFM_DTYPE_F32));
    CHECK(c.n_tokens == 0 && c.bos_id == -1 && c.eos_id == -1);
    memset(&sd, 0, sizeof sd);
    CHECK(tfm_session_create(model, &sd, &s) == TFM_OK);
    if (!s) goto done;
    CHECK(tfm_session_n_ctx(s) == sp->n_ctx);
    /* all at once */
    CHECK(tfm_session_eval(s, tok, SEQ, 0, all) == TFM_OK);
    CHECK(tfm_session_n_past(s) == SEQ);
    CHECK(memcmp(tfm_session_logits(s), all + (size_t)(SEQ - 1) * nv, (size_t)nv * sizeof(float)) == 0);
    ref_forward(&wm, tok, SEQ, ref);
    {
        double md = 0, scale = 0;
        for (i = 0; i < SEQ * nv; i++) { md = fmax(md, fabs(all[i] - ref[i])); scale = fmax(scale, fabs(ref[i])); }
        snprintf(what, sizeof what, "model: %s", sp->label);
        report(what, md, 2e-5 * (1 + scale));
        CHECK(scale > 0.5); /* the logits are not trivially small */
    }
    /* 19 tokens without logits_all (a batch and an odd remainder): the same last logits */
    CHECK(tfm_session_eval(s, tok, SEQ - 1, 0, NULL) == TFM_OK);
    CHECK(memcmp(tfm_session_logits(s), all + (size_t)(SEQ - 2) * nv, (size_t)nv * sizeof(float)) == 0);
    /* one by one through the cache, from a fresh start (pos 0 rewinds) */
    for (i = 0; i < SEQ; i++) {
        const float *lg = NULL;
        CHECK(tfm_session_decode(s, tok[i], i, &lg) == TFM_OK);
        if (lg) memcpy(one + (size_t)i * nv, lg, (size_t)nv * sizeof(float));
    }
    CHECK_MSG(memcmp(one, all, (size_t)SEQ * nv * sizeof(float)) == 0, "%s: one-by-one differs from all-at-once", sp->label);
    /* rewind to 7 and evaluate the rest with different tokens, then back to the original */
    {
        int32_t other[SEQ];
        for (i = 0; i < SEQ; i++) other[i] = (tok[i] + 5) % nv;
        CHECK(tfm_session_eval(s, other + 7, SEQ - 7, 7, NULL) == TFM_OK);
        CHECK(memcmp(tfm_session_logits(s), all + (size_t)(SEQ - 1) * nv, (size_t)nv * sizeof(float)) != 0);
        CHECK(tfm_session_eval(s, tok + 7, SEQ - 7, 7, one + (size_t)7 * nv) == TFM_OK);
        CHECK_MSG(memcmp(one, all, (size_t)SEQ * nv * sizeof(float)) == 0, "%s: rewind differs", sp->label);
    }
done:
    tfm_session_destroy(s);
    tfm_model_close(model);
    free(file); free(all); free(one); free(ref);
    free_model(&wm);
}

/* ---- threads ------------------------------------------------------------------------------ */

static int pf_calls;
static void pf_reverse(void *user, int n_tasks, tfm_task_fn task, void *ctx) { /* any order must do */
    int i;
    (void)user;
    pf_calls++;
    for (i = n_tasks - 1; i >= 0; i--) task(ctx, i);
}

#ifdef CORE_PTHREADS
typedef struct pf_half { int n_tasks; tfm_task_fn task; void *ctx; } pf_half;
static void *pf_odd(void *arg) {
    pf_half *p = (pf_half *)arg;
    int i;
    for (i = 1; i < p->n_tasks; i += 2) p->task(p->ctx, i);
    return NULL;
}
static void pf_pthread(void *user, int n_tasks, tfm_task_fn task, void *ctx) { /* evens here, odds on a thread */
    pthread_t th;
    pf_half p;
    int i;
    (void)user;
    p.n_tasks = n_tasks; p.task = task; p.ctx = ctx;
    if (pthread_create(&th, NULL, pf_odd, &p) != 0) { for (i = 0; i < n_tasks; i++) task(ctx, i); return; }
    for (i = 0; i < n_tasks; i += 2) task(ctx, i);
    pthread_join(th, NULL);
}
#endif

#ifdef CORE_PTHREADS
static pthread_t caller_thread;
static int abort_calls, abort_foreign;
static bool abort_where(void *user) { /* never cancels; records which thread asked */
    (void)user;
    abort_calls++;
    if (!pthread_equal(pthread_self(), caller_thread)) abort_foreign++;
    return false;
}
#endif

static void eval_with(const tfm_model *model, const tfm_session_desc *sd, const int32_t *tok, int n, float *out) {
    tfm_session *s = NULL;
    CHECK(tfm_session_create(model, sd, &s) == TFM_OK);
    if (!s) return;
    CHECK(tfm_session_eval(s, tok, n, 0, out) == TFM_OK);
    tfm_session_destroy(s);
}

#ifdef CORE_PTHREADS
typedef struct worker { const tfm_model *model; const int32_t *tok; int n; float *out; int ok; } worker;
static void *worker_run(void *arg) {
    worker *w = (worker *)arg;
    tfm_session *s = NULL;
    int i;
    w->ok = tfm_session_create(w->model, NULL, &s) == TFM_OK;
    for (i = 0; w->ok && i < 3; i++) w->ok = tfm_session_eval(s, w->tok, w->n, 0, w->out) == TFM_OK;
    tfm_session_destroy(s);
    return NULL;
}
#endif

static void test_threads(void) {
    spec sp = make_spec(2);
    wmodel wm;
    unsigned char *file;
    size_t bytes, nb;
    tfm_model *model = NULL;
    tfm_session_desc sd;
    int32_t tok[SEQ];
    float *a, *b;
    sp.d_model = 64; sp.d_ff = 160; sp.n_vocab = 300; /* enough rows to split */
    build_model(&wm, &sp);
    file = write_model(&wm, &bytes);
    make_tokens(tok, SEQ, sp.n_vocab, 3);
    nb = (size_t)SEQ * (size_t)sp.n_vocab * sizeof(float);
    a = (float *)malloc(nb);
    b = (float *)malloc(nb);
    CHECK(open_mem(file, bytes, &model, NULL) == TFM_OK);
    if (model) {
        memset(&sd, 0, sizeof sd);
        eval_with(model, &sd, tok, SEQ, a);
        sd.n_threads = 2;
        memset(b, 0, nb);
#ifdef CORE_PTHREADS
        sd.should_abort = abort_where;
        caller_thread = pthread_self();
#endif
        eval_with(model, &sd, tok, SEQ, b);
        CHECK_MSG(memcmp(a, b, nb) == 0, "2 threads differ from 1");
#ifdef CORE_PTHREADS
        CHECK(abort_calls > 0 && abort_foreign == 0); /* callbacks run on the calling thread */
        sd.should_abort = NULL;
#endif
        sd.parallel_for = pf_reverse;
        pf_calls = 0;
        memset(b, 0, nb);
        eval_with(model, &sd, tok, SEQ, b);
        CHECK_MSG(memcmp(a, b, nb) == 0, "parallel_for (reverse order) differs");
        CHECK(pf_calls > 0);
#ifdef CORE_PTHREADS
        sd.parallel_for = pf_pthread;
        memset(b, 0, nb);
        eval_with(model, &sd, tok, SEQ, b);
        CHECK_MSG(memcmp(a, b, nb) == 0, "parallel_for on two pthreads differs");
        { /* two threads, each with its own session on one model */
            pthread_t th[2];
            worker w[2];
            int i;
            for (i = 0; i < 2; i++) {
                w[i].model = model; w[i].tok = tok; w[i].n = SEQ; w[i].ok = 0;
                w[i].out = (float *)malloc(nb);
                CHECK(pthread_create(&th[i], NULL, worker_run, &w[i]) == 0);
            }
            for (i = 0; i < 2; i++) {
                pthread_join(th[i], NULL);
                CHECK(w[i].ok);
                CHECK_MSG(memcmp(w[i].out, a, nb) == 0, "thread %d: logits differ", i);
                free(w[i].out);
            }
        }
#else
        printf("SKIP pthread tests (not a unix build)\n");
#endif
        tfm_model_close(model);
    }
    free(a); free(b); free(file);
    free_model(&wm);
}

/* ---- corrupt files ------------------------------------------------------------------------ */

/* Open a damaged copy: must fail with want (or any error when want is TFM_OK), never crash.
   On an unexpected success the model is run once so the sanitizers see its use. */
static void expect_fail(const unsigned char *file, size_t bytes, tfm_result want, const char *what) {
    tfm_model *m = NULL;
    last_log lg;
    unsigned char *copy = (unsigned char *)malloc(bytes ? bytes : 1);
    tfm_result r;
    memset(&lg, 0, sizeof lg);
    memcpy(copy, file, bytes);
    r = open_mem(copy, bytes, &m, &lg);
    if (want == TFM_OK) CHECK_MSG(r != TFM_OK, "%s: opened", what);
    else CHECK_MSG(r == want, "%s: got %s, want %s (%s)", what, tfm_result_string(r), tfm_result_string(want), lg.text);
    CHECK_MSG(r == TFM_OK || (m == NULL && lg.count >= 1 && lg.text[0]), "%s: no log line or model set", what);
    tfm_model_close(m);
    free(copy);
}

static unsigned char *dup_file(const unsigned char *f, size_t bytes) {
    unsigned char *c = (unsigned char *)malloc(bytes);
    memcpy(c, f, bytes);
    return c;
}

/* entry of the tensor with this name */
static unsigned char *entry_of(unsigned char *f, const char *name) {
    uint32_t n = tfm__rd_u32(f + 84), i;
    for (i = 0; i < n; i++)
        if (strcmp((const char *)f + 256 + 128 * i, name) == 0) return f + 256 + 128 * i;
    return NULL;
}

static void test_corrupt(void) {
    spec sp = make_spec(0);
    wmodel wm;
    unsigned char *f, *c, *e;
    size_t bytes, cut;
    tfm_model *m = NULL;
    last_log lg;
    int n_ok = 0;
    sp.n_layers = 1;
    build_model(&wm, &sp);
    f = write_model(&wm, &bytes);
    CHECK(open_mem(f, bytes, &m, NULL) == TFM_OK);
    tfm_model_close(m);
    m = NULL;
    /* every prefix truncation */
    for (cut = 0; cut < bytes; cut++) {
        unsigned char *p = (unsigned char *)malloc(cut ? cut : 1);
        tfm_result r;
        memcpy(p, f, cut);
        r = open_mem(p, cut, &m, NULL);
        if (r == TFM_OK) { n_ok++; tfm_model_close(m); m = NULL; }
        free(p);
    }
    CHECK_MSG(n_ok == 0, "%d of %zu truncations opened", n_ok, bytes);
    printf("truncations: %zu prefixes, all rejected: %s\n", bytes, n_ok ? "no" : "yes");
    c = dup_file(f, bytes); c[0] = 'X'; expect_fail(c, bytes, TFM_ERR_BAD_MAGIC, "bad magic"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, TFM_FORMAT_VERSION + 1); expect_fail(c, bytes, TFM_ERR_BAD_VERSION, "a newer version"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 0); expect_fail(c, bytes, TFM_ERR_BAD_VERSION, "version 0"); free(c);
    /* this file is version 1: bytes from 112 on are reserved there, fields in version 2 */
    c = dup_file(f, bytes); tw_put_f32(c + 116, 0.5f); expect_fail(c, bytes, TFM_ERR_CORRUPT, "v1 reserved byte 116"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); CHECK(open_mem(c, bytes, &m, NULL) == TFM_OK); tfm_model_close(m); m = NULL; free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_u32(c + 112, 4); expect_fail(c, bytes, TFM_ERR_UNSUPPORTED, "unknown flag"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_f32(c + 120, NAN); expect_fail(c, bytes, TFM_ERR_CORRUPT, "attn_softcap NaN"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_f32(c + 116, -1.0f); expect_fail(c, bytes, TFM_ERR_CORRUPT, "attn_scale < 0"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_f32(c + 128, INFINITY); expect_fail(c, bytes, TFM_ERR_CORRUPT, "embed_scale inf"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_u32(c + 140, 0x7fffffffu); expect_fail(c, bytes, TFM_ERR_CORRUPT, "rope_orig_ctx huge"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_u32(c + 112, TFM_FLAG_QK_NORM); expect_fail(c, bytes, TFM_ERR_CORRUPT, "qk norm tensors missing"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_u64(c + 144, bytes - 8); expect_fail(c, bytes, TFM_ERR_CORRUPT, "layer table past the end"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_u64(c + 144, 260); expect_fail(c, bytes, TFM_ERR_CORRUPT, "layer table misaligned, over the directory"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_u64(c + 144, UINT64_MAX - 7); expect_fail(c, bytes, TFM_ERR_CORRUPT, "layer table offset wraps"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 8, 2); tw_put_u64(c + 144, tfm__rd_u64(entry_of(c, "blk.0.wq") + 104));
    expect_fail(c, bytes, TFM_ERR_CORRUPT, "layer table entries of weights (reserved bytes set)"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 12, 128); expect_fail(c, bytes, TFM_ERR_CORRUPT, "header_bytes"); free(c);
    c = dup_file(f, bytes); c[200] = 1; expect_fail(c, bytes, TFM_ERR_CORRUPT, "reserved header byte"); free(c);
    c = dup_file(f, bytes); c[255] = 1; expect_fail(c, bytes, TFM_ERR_CORRUPT, "last reserved header byte"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 28, 100000); expect_fail(c, bytes, TFM_ERR_CORRUPT, "huge n_layers"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 40, 0xffffffffu); expect_fail(c, bytes, TFM_ERR_CORRUPT, "huge d_model"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 20, 0x7fffffffu); expect_fail(c, bytes, TFM_ERR_CORRUPT, "huge n_vocab"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 24, 0); expect_fail(c, bytes, TFM_ERR_CORRUPT, "n_ctx 0"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 36, 3); expect_fail(c, bytes, TFM_ERR_CORRUPT, "n_heads % n_kv_heads"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 52, 3); expect_fail(c, bytes, TFM_ERR_CORRUPT, "odd rope_dim"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 52, 10); expect_fail(c, bytes, TFM_ERR_CORRUPT, "rope_dim > d_head"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 80, 6); expect_fail(c, bytes, TFM_ERR_CORRUPT, "pos enum"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 64, 2); expect_fail(c, bytes, TFM_ERR_CORRUPT, "norm enum"); free(c);
    c = dup_file(f, bytes); tw_put_f32(c + 60, 0.0f); expect_fail(c, bytes, TFM_ERR_CORRUPT, "eps 0"); free(c);
    c = dup_file(f, bytes); tw_put_f32(c + 60, NAN); expect_fail(c, bytes, TFM_ERR_CORRUPT, "eps NaN"); free(c);
    c = dup_file(f, bytes); tw_put_f32(c + 56, INFINITY); expect_fail(c, bytes, TFM_ERR_CORRUPT, "theta inf"); free(c);
    c = dup_file(f, bytes); tw_put_u32(c + 84, 0xffffffu); expect_fail(c, bytes, TFM_ERR_CORRUPT, "n_tensors huge"); free(c);
    c = dup_file(f, bytes); tw_put_u64(c + 88, 512); expect_fail(c, bytes, TFM_ERR_CORRUPT, "dir offset"); free(c);
    c = dup_file(f, bytes); tw_put_u64(c + 96, bytes - 8); tw_put_u64(c + 104, 16); expect_fail(c, bytes, TFM_ERR_CORRUPT, "tokenizer past end"); free(c);
    c = dup_file(f, bytes); tw_put_u64(c + 96, 64); tw_put_u64(c + 104, 16); expect_fail(c, bytes, TFM_ERR_CORRUPT, "tokenizer over header"); free(c);
    c = dup_file(f, bytes); tw_put_u64(c + 96, 1024); expect_fail(c, bytes, TFM_ERR_CORRUPT, "tokenizer offset without bytes"); free(c);
    c = dup_file(f, bytes); tw_put_u64(c + 104, UINT64_MAX); tw_put_u64(c + 96, 4096); expect_fail(c, bytes, TFM_ERR_CORRUPT, "tokenizer bytes wrap"); free(c);
    /* directory entries */
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u64(e + 104, bytes); expect_fail(c, bytes, TFM_ERR_CORRUPT, "offset past end"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u64(e + 104, UINT64_MAX - 63); expect_fail(c, bytes, TFM_ERR_CORRUPT, "offset wraps"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u64(e + 104, tfm__rd_u64(e + 104) + 4); expect_fail(c, bytes, TFM_ERR_CORRUPT, "misaligned offset"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u64(e + 104, 0); expect_fail(c, bytes, TFM_ERR_CORRUPT, "data over the header"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u64(e + 72, 1ull << 40); tw_put_u64(e + 80, 1ull << 40); expect_fail(c, bytes, TFM_ERR_CORRUPT, "overflowing shape"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u64(e + 72, 1ull << 31); tw_put_u64(e + 80, 1ull << 31); tw_put_u64(e + 112, 0); expect_fail(c, bytes, TFM_ERR_CORRUPT, "bytes * 4 wraps"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u64(e + 80, 16); tw_put_u64(e + 72, 64); expect_fail(c, bytes, TFM_ERR_CORRUPT, "shape vs config (same bytes)"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u64(e + 112, tfm__rd_u64(e + 112) - 4); expect_fail(c, bytes, TFM_ERR_CORRUPT, "data_bytes vs shape"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u32(e + 64, TFM_DTYPE_COUNT); expect_fail(c, bytes, TFM_ERR_UNSUPPORTED, "unknown dtype"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u32(e + 68, 0); expect_fail(c, bytes, TFM_ERR_CORRUPT, "rank 0"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u32(e + 68, 5); expect_fail(c, bytes, TFM_ERR_CORRUPT, "rank 5"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); tw_put_u32(e + 68, 3); expect_fail(c, bytes, TFM_ERR_CORRUPT, "rank 3 with dim 0"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); e[120] = 1; expect_fail(c, bytes, TFM_ERR_CORRUPT, "entry reserved"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); memset(e, 'a', 64); expect_fail(c, bytes, TFM_ERR_CORRUPT, "name without NUL"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); e[40] = 'x'; expect_fail(c, bytes, TFM_ERR_CORRUPT, "name padding"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); e[4] = '1'; expect_fail(c, bytes, TFM_ERR_CORRUPT, "layer index out of range"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wq"); memcpy(e, "blk.00.wq", 9); expect_fail(c, bytes, TFM_ERR_CORRUPT, "leading zero layer"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wk"); memcpy(e, "blk.0.wq", 8); expect_fail(c, bytes, TFM_ERR_CORRUPT, "duplicate name"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wk"); memcpy(e, "blk.0.xx", 8); expect_fail(c, bytes, TFM_ERR_CORRUPT, "unknown name"); free(c);
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.bq"); tw_put_u32(e + 64, 1); tw_put_u64(e + 112, tfm__rd_u64(e + 112) / 2); expect_fail(c, bytes, TFM_ERR_CORRUPT, "f16 vector"); free(c);
    /* a missing tensor: drop the last directory entry (lnf.b is optional, so drop output.w's slot by renaming) */
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.w_down"); memset(e, 0, 64); memcpy(e, "pos_embd", 8);
    memset(&lg, 0, sizeof lg);
    CHECK(open_mem(c, bytes, &m, &lg) == TFM_ERR_CORRUPT);
    CHECK_MSG(strstr(lg.text, "blk.0.w_down") != NULL && strstr(lg.text, "missing") != NULL, "log: %s", lg.text);
    free(c);
    /* a tensor the config does not use: RMSNorm has no ln1.b */
    c = dup_file(f, bytes); tw_put_u32(c + 64, TFM_NORM_RMSNORM);
    memset(&lg, 0, sizeof lg);
    CHECK(open_mem(c, bytes, &m, &lg) == TFM_ERR_CORRUPT);
    CHECK_MSG(strstr(lg.text, "not used") != NULL, "log: %s", lg.text);
    free(c);
    /* a config change that needs no other tensors opens fine */
    c = dup_file(f, bytes); tw_put_u32(c + 80, TFM_POS_ALIBI);
    CHECK(open_mem(c, bytes, &m, NULL) == TFM_OK);
    tfm_model_close(m);
    m = NULL;
    free(c);
    /* shape message names the tensor, the shape and the expectation */
    c = dup_file(f, bytes); e = entry_of(c, "blk.0.wo"); tw_put_u64(e + 72, 16); tw_put_u64(e + 80, 64);
    memset(&lg, 0, sizeof lg);
    CHECK(open_mem(c, bytes, &m, &lg) == TFM_ERR_CORRUPT);
    CHECK_MSG(strcmp(lg.text, "tensor blk.0.wo: shape [16,64], expected [32,32]") == 0, "log: %s", lg.text);
    free(c);
    /* header and directory bit flips: an error or a model that runs, never a crash */
    {
        size_t i;
        int bit, opened = 0;
        size_t n_bytes = 256 + 128 * (size_t)tfm__rd_u32(f + 84); /* header + whole directory */
        for (i = 0; i < n_bytes; i++)
            for (bit = 0; bit < 8; bit++) {
                tfm_session *s = NULL;
                int32_t t0 = 0;
                c = dup_file(f, bytes);
                c[i] ^= (unsigned char)(1u << bit);
                if (open_mem(c, bytes, &m, NULL) == TFM_OK) {
                    opened++;
                    tfm_session_desc sd;
                    memset(&sd, 0, sizeof sd);
                    sd.n_ctx = 4; /* a flipped n_ctx must not make this test slow */
                    if (tfm_session_create(m, &sd, &s) == TFM_OK) CHECK(tfm_session_eval(s, &t0, 1, 0, NULL) == TFM_OK);
                    tfm_session_destroy(s);
                    tfm_model_close(m);
                    m = NULL;
                }
                free(c);
            }
        printf("bit flips: %d of %d still open (float values, arch field, shape-free bits), all ran\n", opened,
               (int)n_bytes * 8);
        /* random multi-byte damage: 1-4 bytes set to random or boundary values */
        opened = 0;
        rng_seed(2024);
        for (i = 0; i < 4000; i++) {
            static const unsigned char edge[6] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0x40};
            tfm_session *s = NULL;
            int k, n_hits = 1 + (int)(rng_unit() * 4);
            c = dup_file(f, bytes);
            for (k = 0; k < n_hits; k++) {
                size_t at = (size_t)(rng_unit() * (double)n_bytes);
                c[at] = rng_unit() < 0.5 ? edge[(int)(rng_unit() * 6)] : (unsigned char)(rng_unit() * 256);
            }
            if (open_mem(c, bytes, &m, NULL) == TFM_OK) {
                tfm_session_desc sd;
                int32_t t0 = 1;
                opened++;
                memset(&sd, 0, sizeof sd);
                sd.n_ctx = 4;
                if (tfm_session_create(m, &sd, &s) == TFM_OK) CHECK(tfm_session_eval(s, &t0, 1, 0, NULL) == TFM_OK);
                tfm_session_destroy(s);
                tfm_model_close(m);
                m = NULL;
            }
            free(c);
        }
        printf("random damage: %d of 4000 still open, all ran\n", opened);
    }
    free(f);
    free_model(&wm);
}

/* ---- API edges ---------------------------------------------------------------------------- */

static int abort_after;
static bool abort_cb(void *user) { (void)user; return abort_after-- <= 0; }

static void test_api(void) {
    spec sp = make_spec(1);
    wmodel wm;
    unsigned char *f;
    size_t bytes;
    tfm_model *m = NULL;
    tfm_session *s = NULL;
    tfm_session_desc sd;
    tfm_model_desc md;
    tfm_allocator half;
    int32_t tok[30] = {1, 2, 3};
    float *lg;
    int i;
    const char *seen[10];
    last_log lgk; /* the model's logger also receives session errors */
    build_model(&wm, &sp);
    f = write_model(&wm, &bytes);
    lg = (float *)malloc((size_t)sp.n_vocab * 30 * sizeof(float));
    /* result strings */
    for (i = 0; i <= TFM_ERR_CANCELLED; i++) {
        int j;
        seen[i] = tfm_result_string((tfm_result)i);
        CHECK(seen[i] != NULL && seen[i][0]);
        for (j = 0; j < i; j++) CHECK(strcmp(seen[i], seen[j]) != 0);
    }
    CHECK(tfm_result_string((tfm_result)99) != NULL);
    CHECK(strstr(tfm_build_info(), "avx2+fma") || strstr(tfm_build_info(), "neon") || strstr(tfm_build_info(), "scalar"));
    /* NULL and bad arguments */
    CHECK(tfm_model_open(NULL, &m) == TFM_ERR_INVALID_ARG && m == NULL);
    memset(&md, 0, sizeof md);
    CHECK(tfm_model_open(&md, NULL) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_INVALID_ARG); /* no source */
    md.data = f; md.data_bytes = bytes; md.path = "x.tfm";
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_INVALID_ARG); /* two sources */
    md.path = NULL;
    half.alloc = test_alloc_fn; half.free = NULL; half.user = NULL;
    md.allocator = half;
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_INVALID_ARG);
    md.allocator.alloc = NULL;
    md.data = f + 1; md.data_bytes = bytes - 1;
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_INVALID_ARG); /* misaligned borrowed memory */
    md.data = f; md.data_bytes = 100;
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_CORRUPT);
    md.data_bytes = 0;
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_CORRUPT);
    tfm_model_close(NULL);
    tfm_session_destroy(NULL);
    tfm_sampler_destroy(NULL);
    CHECK(tfm_session_create(NULL, NULL, &s) == TFM_ERR_INVALID_ARG && s == NULL);
    CHECK(tfm_session_eval(NULL, tok, 1, 0, NULL) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_logits(NULL) == NULL && tfm_session_n_past(NULL) == 0);
    CHECK(tfm_model_config(NULL).n_layers == 0);
    memset(&lgk, 0, sizeof lgk);
    CHECK(open_mem(f, bytes, &m, &lgk) == TFM_OK && lgk.count == 0);
    if (!m) goto done;
    CHECK(tfm_session_create(m, NULL, NULL) == TFM_ERR_INVALID_ARG);
    memset(&sd, 0, sizeof sd);
    sd.allocator = half;
    CHECK(tfm_session_create(m, &sd, &s) == TFM_ERR_INVALID_ARG);
    memset(&sd, 0, sizeof sd);
    sd.n_ctx = -1;
    CHECK(tfm_session_create(m, &sd, &s) == TFM_ERR_INVALID_ARG);
    sd.n_ctx = 0;
    sd.n_threads = 0x7fffffff; /* n_threads * tasks per thread would overflow an int */
    sd.parallel_for = pf_reverse;
    CHECK(tfm_session_create(m, &sd, &s) == TFM_ERR_INVALID_ARG && s == NULL);
    sd.n_threads = 0;
    sd.parallel_for = NULL;
    sd.n_ctx = sp.n_ctx + 1; /* learned positions: no more than the model has */
    CHECK(tfm_session_create(m, &sd, &s) == TFM_ERR_INVALID_ARG);
    sd.n_ctx = 8;
    sd.should_abort = abort_cb;
    CHECK(tfm_session_create(m, &sd, &s) == TFM_OK);
    if (!s) goto done;
    abort_after = 1000;
    CHECK(tfm_session_n_ctx(s) == 8);
    CHECK(tfm_session_eval(s, tok, 3, 0, NULL) == TFM_OK && tfm_session_last_error(s)[0] == '\0');
    /* context full: nothing evaluated, n_past unchanged */
    CHECK(tfm_session_eval(s, tok, 6, 3, NULL) == TFM_ERR_CONTEXT_FULL);
    CHECK(tfm_session_n_past(s) == 3 && tfm_session_last_error(s)[0] != '\0');
    CHECK(tfm_session_eval(s, tok, 5, 3, NULL) == TFM_OK && tfm_session_n_past(s) == 8);
    CHECK(tfm_session_eval(s, tok, 1, 8, NULL) == TFM_ERR_CONTEXT_FULL);
    CHECK(tfm_session_eval(s, tok, 30, 0, NULL) == TFM_ERR_CONTEXT_FULL);
    CHECK(tfm_session_eval(s, tok, 0x7fffffff, 8, NULL) == TFM_ERR_CONTEXT_FULL); /* pos + n: no int overflow */
    CHECK(strstr(tfm_session_last_error(s), "8..2147483654") != NULL);
    CHECK(tfm_session_eval(s, tok, 1, 0x7fffffff, NULL) == TFM_ERR_INVALID_ARG);
    /* bad token ids, positions, counts */
    tok[1] = sp.n_vocab;
    CHECK(tfm_session_eval(s, tok, 3, 0, NULL) == TFM_ERR_INVALID_ARG);
    CHECK(strstr(tfm_session_last_error(s), "token") != NULL);
    CHECK(lgk.count > 0 && lgk.result == TFM_ERR_INVALID_ARG && strcmp(lgk.text, tfm_session_last_error(s)) == 0);
    CHECK(tfm_session_n_past(s) == 8); /* nothing evaluated */
    tok[1] = -1;
    CHECK(tfm_session_eval(s, tok, 3, 0, NULL) == TFM_ERR_INVALID_ARG);
    tok[1] = 2;
    CHECK(tfm_session_eval(s, NULL, 3, 0, NULL) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_eval(s, tok, -1, 0, NULL) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_eval(s, tok, 1, -1, NULL) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_eval(s, tok, 1, 9, NULL) == TFM_ERR_INVALID_ARG); /* pos > n_past */
    CHECK(tfm_session_eval(s, NULL, 0, 2, NULL) == TFM_OK && tfm_session_n_past(s) == 2); /* rewind only */
    CHECK(tfm_session_eval(s, tok, 1, 3, NULL) == TFM_ERR_INVALID_ARG); /* past the rewind */
    /* cancellation between layers: the batch in flight is not counted */
    abort_after = 1; /* 2 layers: cancelled before layer 1 of the only batch */
    CHECK(tfm_session_eval(s, tok, 3, 0, NULL) == TFM_ERR_CANCELLED);
    CHECK(tfm_session_n_past(s) == 0 && strstr(tfm_session_last_error(s), "cancel") != NULL);
    abort_after = 1000;
    CHECK(tfm_session_eval(s, tok, 3, 0, lg) == TFM_OK && tfm_session_n_past(s) == 3);
    tfm_session_destroy(s);
    s = NULL;
    sd.n_ctx = 0;
    sd.n_batch = BATCH;
    CHECK(tfm_session_create(m, &sd, &s) == TFM_OK);
    if (s) {
        for (i = 0; i < 30; i++) tok[i] = i % sp.n_vocab;
        abort_after = 2; /* the first batch of BATCH runs, the second is cancelled */
        CHECK(tfm_session_eval(s, tok, 20, 0, NULL) == TFM_ERR_CANCELLED);
        CHECK(tfm_session_n_past(s) == BATCH);
        abort_after = 1000;
        CHECK(tfm_session_eval(s, tok + BATCH, 20 - BATCH, BATCH, NULL) == TFM_OK);
        CHECK(tfm_session_n_past(s) == 20);
        tfm_session_destroy(s);
        s = NULL;
    }
done:
    tfm_model_close(m);
    free(f); free(lg);
    free_model(&wm);
}

/* vocab-only files, and path loading (mmap and read) */
static void test_files(void) {
    spec sp = make_spec(3);
    wmodel wm;
    unsigned char *f, *head;
    tw_header vocab_only;
    size_t bytes;
    tfm_model *m = NULL, *m2 = NULL;
    tfm_session *s = NULL;
    tfm_model_desc md;
    last_log lg;
    int32_t tok[4] = {3, 1, 4, 1};
    memset(&vocab_only, 0, sizeof vocab_only);
    vocab_only.n_vocab = 50;
    head = tw_write(&vocab_only, NULL, 0, NULL, 0, &bytes); /* the 256-byte header alone */
    if (!head || bytes != 256) { CHECK(head != NULL && bytes == 256); free(head); return; }
    CHECK(open_mem(head, 256, &m, NULL) == TFM_OK);
    if (m) {
        memset(&lg, 0, sizeof lg);
        CHECK(tfm_model_config(m).n_layers == 0);
        CHECK(tfm_session_create(m, NULL, &s) == TFM_ERR_UNSUPPORTED && s == NULL);
        tfm_model_close(m);
        m = NULL;
    }
    tw_put_u32(head + 84, 1); /* a vocab-only file with a tensor is not vocab-only */
    CHECK(open_mem(head, 256, &m, NULL) != TFM_OK);
    build_model(&wm, &sp);
    f = write_model(&wm, &bytes);
#ifndef TFM_NO_STDIO
    {
        char path[256];
        FILE *fp;
        float a[64], b[64];
        int mode;
#ifdef CORE_PTHREADS
        snprintf(path, sizeof path, "/tmp/tfm_test_core_%d.tfm", (int)getpid());
#else
        snprintf(path, sizeof path, "tfm_test_core.tfm");
#endif
        fp = fopen(path, "wb");
        CHECK(fp != NULL);
        if (fp) { CHECK(fwrite(f, 1, bytes, fp) == bytes); fclose(fp); }
        CHECK(open_mem(f, bytes, &m, NULL) == TFM_OK);
        if (m && tfm_session_create(m, NULL, &s) == TFM_OK) {
            CHECK(tfm_session_eval(s, tok, 4, 0, NULL) == TFM_OK);
            memcpy(a, tfm_session_logits(s), (size_t)sp.n_vocab * sizeof(float));
            tfm_session_destroy(s);
            s = NULL;
        }
        for (mode = 0; mode < 2; mode++) {
            test_alloc ac;
            memset(&ac, 0, sizeof ac);
            memset(&md, 0, sizeof md);
            md.path = path;
            md.no_mmap = mode == 1;
            md.allocator = test_allocator(&ac);
            CHECK(tfm_model_open(&md, &m2) == TFM_OK);
            if (m2 && tfm_session_create(m2, NULL, &s) == TFM_OK) {
                CHECK(tfm_session_eval(s, tok, 4, 0, NULL) == TFM_OK);
                memcpy(b, tfm_session_logits(s), (size_t)sp.n_vocab * sizeof(float));
                CHECK_MSG(memcmp(a, b, (size_t)sp.n_vocab * sizeof(float)) == 0, "path mode %d differs", mode);
                tfm_session_destroy(s);
                s = NULL;
            }
            tfm_model_close(m2);
            m2 = NULL;
            CHECK(ac.live == 0);
        }
        tfm_model_close(m);
        m = NULL;
        remove(path);
        memset(&md, 0, sizeof md);
        memset(&lg, 0, sizeof lg);
        md.path = "/nonexistent/dir/model.tfm";
        md.logger.log = log_keep;
        md.logger.user = &lg;
        CHECK(tfm_model_open(&md, &m) == TFM_ERR_IO && m == NULL && lg.count == 1);
        md.path = "tests"; /* a directory: an i/o error, not an allocation of its "size" */
        lg.count = 0;
        CHECK(tfm_model_open(&md, &m) == TFM_ERR_IO && m == NULL && lg.count == 1);
        md.no_mmap = true;
        lg.count = 0;
        CHECK(tfm_model_open(&md, &m) == TFM_ERR_IO && m == NULL && lg.count == 1);
    }
#else
    memset(&md, 0, sizeof md);
    md.path = "model.tfm";
    CHECK(tfm_model_open(&md, &m2) == TFM_ERR_UNSUPPORTED && m2 == NULL);
    (void)tok;
#endif
    /* RoPE models may run a longer context than they were trained for (the caller's choice) */
    CHECK(open_mem(f, bytes, &m, NULL) == TFM_OK);
    if (m) {
        tfm_session_desc sd;
        int32_t many[40];
        int i;
        memset(&sd, 0, sizeof sd);
        sd.n_ctx = 2 * sp.n_ctx;
        for (i = 0; i < 40; i++) many[i] = i % sp.n_vocab;
        CHECK(tfm_session_create(m, &sd, &s) == TFM_OK);
        if (s) CHECK(tfm_session_eval(s, many, 40, 0, NULL) == TFM_OK && tfm_session_n_past(s) == 40);
        tfm_session_destroy(s);
        s = NULL;
        tfm_model_close(m);
        m = NULL;
    }
    free(f);
    free(head);
    free_model(&wm);
}

/* Fail allocation N for every N: a clean error and nothing leaked; then a counting allocator
   shows that eval and tfm_sample allocate nothing. */
static void test_alloc_failures(void) {
    spec sp = make_spec(2);
    wmodel wm;
    unsigned char *f;
    size_t bytes;
    int n, total = -1, i;
    int32_t tok[5] = {1, 2, 3, 4, 5}, next;
    build_model(&wm, &sp);
    f = write_model(&wm, &bytes);
    for (n = 0; n < 64; n++) {
        test_alloc ac;
        tfm_model_desc md;
        tfm_session_desc sd;
        tfm_sampler_desc pd;
        tfm_model *m = NULL;
        tfm_session *s = NULL;
        tfm_sampler *smp = NULL;
        tfm_result r;
        memset(&ac, 0, sizeof ac);
        ac.fail_at = n + 1; /* allocation n (0-based) fails */
        memset(&md, 0, sizeof md);
        md.data = f; md.data_bytes = bytes; md.allocator = test_allocator(&ac);
        memset(&sd, 0, sizeof sd);
        sd.allocator = test_allocator(&ac);
        memset(&pd, 0, sizeof pd);
        pd.n_vocab = sp.n_vocab; pd.temperature = 0.9f; pd.top_k = 5; pd.top_p = 0.9f; pd.repeat_penalty = 1.2f;
        pd.allocator = test_allocator(&ac);
        r = tfm_model_open(&md, &m);
        if (r == TFM_OK) r = tfm_session_create(m, &sd, &s);
        if (r == TFM_OK) r = tfm_sampler_create(&pd, &smp);
        if (r == TFM_OK) {
            long before = ac.n_alloc;
            CHECK(tfm_session_eval(s, tok, 5, 0, NULL) == TFM_OK);
            for (i = 0; i < 20; i++) CHECK(tfm_sample(smp, tfm_session_logits(s), sp.n_vocab, &next) == TFM_OK);
            CHECK(tfm_session_decode(s, next, 5, NULL) == TFM_OK);
            CHECK_MSG(ac.n_alloc == before, "eval/sample allocated %ld times", ac.n_alloc - before);
            total = n;
        } else {
            CHECK_MSG(r == TFM_ERR_OUT_OF_MEMORY, "fail at %d: %s", n, tfm_result_string(r));
            CHECK(smp == NULL && (m != NULL || s == NULL));
        }
        tfm_sampler_destroy(smp);
        tfm_session_destroy(s);
        tfm_model_close(m);
        CHECK_MSG(ac.live == 0, "fail at %d: %ld blocks leaked", n, ac.live);
        if (r == TFM_OK) break;
    }
    printf("allocation failures: every one of the first %d allocations failed cleanly\n", total);
    CHECK(total > 2);
    free(f);
    free_model(&wm);
}

/* ---- sampler ------------------------------------------------------------------------------ */

static tfm_sampler *make_sampler(int n_vocab, float temp, int top_k, float top_p, float min_p, float pen, uint64_t seed) {
    tfm_sampler_desc d;
    tfm_sampler *s = NULL;
    memset(&d, 0, sizeof d);
    d.n_vocab = n_vocab; d.temperature = temp; d.top_k = top_k; d.top_p = top_p; d.min_p = min_p;
    d.repeat_penalty = pen; d.seed = seed;
    CHECK(tfm_sampler_create(&d, &s) == TFM_OK);
    return s;
}

static void test_sampler(void) {
    enum { NV = 1000, DRAWS = 4000 };
    float *lg = (float *)malloc(NV * sizeof(float)), *copy = (float *)malloc(NV * sizeof(float));
    double *p = (double *)malloc(NV * sizeof(double)), sum = 0;
    int *count = (int *)calloc(NV, sizeof(int));
    int32_t t, seq1[50], seq2[50], argmax = 0;
    tfm_sampler *s;
    tfm_sampler_desc d;
    int i, bad, k;
    rng_seed(77);
    for (i = 0; i < NV; i++) { lg[i] = rng_sym(4.0f); if (lg[i] > lg[argmax]) argmax = i; }
    memcpy(copy, lg, NV * sizeof(float));
    /* desc validation */
    memset(&d, 0, sizeof d);
    CHECK(tfm_sampler_create(&d, &s) == TFM_ERR_INVALID_ARG && s == NULL); /* n_vocab 0 */
    CHECK(tfm_sampler_create(NULL, &s) == TFM_ERR_INVALID_ARG);
    d.n_vocab = NV; d.temperature = -1.0f;
    CHECK(tfm_sampler_create(&d, &s) == TFM_ERR_INVALID_ARG);
    d.temperature = 1.0f; d.top_p = 1.5f;
    CHECK(tfm_sampler_create(&d, &s) == TFM_ERR_INVALID_ARG);
    d.top_p = 0.5f; d.top_k = -2;
    CHECK(tfm_sampler_create(&d, &s) == TFM_ERR_INVALID_ARG);
    d.top_k = 0; d.min_p = NAN;
    CHECK(tfm_sampler_create(&d, &s) == TFM_ERR_INVALID_ARG);
    /* greedy (zero desc + n_vocab) = argmax; top-k 1 = argmax */
    s = make_sampler(NV, 0.0f, 0, 0.0f, 0.0f, 0.0f, 0);
    CHECK(tfm_sample(s, lg, NV, &t) == TFM_OK && t == argmax);
    CHECK(tfm_sample(s, lg, NV + 1, &t) == TFM_ERR_INVALID_ARG && t == -1);
    CHECK(tfm_sample(s, NULL, NV, &t) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_sample(s, lg, 0, &t) == TFM_ERR_INVALID_ARG);
    tfm_sampler_destroy(s);
    s = make_sampler(NV, 1.5f, 1, 0.0f, 0.0f, 0.0f, 3);
    for (i = 0, bad = 0; i < 100; i++) { tfm_sample(s, lg, NV, &t); bad += t != argmax; }
    CHECK(bad == 0);
    tfm_sampler_destroy(s);
    CHECK(memcmp(lg, copy, NV * sizeof(float)) == 0); /* logits never written */
    /* same seed, same sequence; another seed, another sequence */
    for (k = 0; k < 3; k++) {
        s = make_sampler(NV, 1.0f, 0, 0.0f, 0.0f, 1.3f, k == 2 ? 12345 : 42);
        for (i = 0; i < 50; i++) tfm_sample(s, lg, NV, k == 0 ? &seq1[i] : &seq2[i]);
        tfm_sampler_destroy(s);
        if (k == 1) CHECK(memcmp(seq1, seq2, sizeof seq1) == 0);
        if (k == 2) CHECK(memcmp(seq1, seq2, sizeof seq1) != 0);
    }
    CHECK(memcmp(lg, copy, NV * sizeof(float)) == 0);
    /* top-k: only the k best are ever drawn, and all of them appear */
    {
        float thr;
        int above = 0;
        s = make_sampler(NV, 1.0f, 10, 0.0f, 0.0f, 0.0f, 9);
        memset(count, 0, NV * sizeof(int));
        for (i = 0; i < DRAWS; i++) { tfm_sample(s, lg, NV, &t); count[t]++; }
        tfm_sampler_destroy(s);
        thr = lg[argmax];
        for (i = 0; i < NV; i++) { /* the 10th largest value */
            int j, n_greater = 0;
            for (j = 0; j < NV; j++) n_greater += lg[j] > lg[i];
            if (n_greater == 9) thr = lg[i];
        }
        for (i = 0, bad = 0; i < NV; i++) {
            if (count[i] && lg[i] < thr) bad++;
            if (lg[i] >= thr) above += count[i] > 0;
        }
        CHECK_MSG(bad == 0, "top-k drew %d excluded tokens", bad);
        CHECK_MSG(above == 10, "top-k drew %d of the 10 kept tokens", above);
    }
    /* top-p: the excluded tail is never drawn */
    {
        double cum = 0, thr_p = 0;
        int32_t *order = (int32_t *)malloc(NV * sizeof(int32_t));
        for (i = 0; i < NV; i++) { p[i] = exp(lg[i]); sum += p[i]; order[i] = i; }
        tfm__select_top(lg, order, NV, NV); /* sorted descending (tested here too) */
        for (i = 1; i < NV; i++) CHECK(lg[order[i - 1]] >= lg[order[i]]);
        for (i = 0; i < NV; i++) { cum += p[order[i]] / sum; if (cum >= 0.5) { thr_p = p[order[i]]; break; } }
        s = make_sampler(NV, 1.0f, 0, 0.5f, 0.0f, 0.0f, 10);
        memset(count, 0, NV * sizeof(int));
        for (i = 0; i < DRAWS; i++) { tfm_sample(s, lg, NV, &t); count[t]++; }
        tfm_sampler_destroy(s);
        for (i = 0, bad = 0; i < NV; i++) if (count[i] && p[i] < thr_p) bad++;
        CHECK_MSG(bad == 0, "top-p drew %d excluded tokens", bad);
        CHECK(count[argmax] > 0);
        free(order);
    }
    /* min-p: p >= 0.2 p_max only; and the frequencies follow the renormalized probabilities */
    {
        double kept = 0, chi = 0;
        int df = -1;
        s = make_sampler(NV, 1.0f, 0, 0.0f, 0.2f, 0.0f, 11);
        memset(count, 0, NV * sizeof(int));
        for (i = 0; i < DRAWS * 5; i++) { tfm_sample(s, lg, NV, &t); count[t]++; }
        tfm_sampler_destroy(s);
        for (i = 0, bad = 0; i < NV; i++) {
            if (lg[i] - lg[argmax] < logf(0.2f)) bad += count[i] > 0;
            else kept += exp(lg[i] - lg[argmax]);
        }
        CHECK_MSG(bad == 0, "min-p drew %d excluded tokens", bad);
        for (i = 0; i < NV; i++)
            if (lg[i] - lg[argmax] >= logf(0.2f)) {
                double e = DRAWS * 5 * exp(lg[i] - lg[argmax]) / kept;
                chi += (count[i] - e) * (count[i] - e) / e;
                df++;
            }
        printf("min-p frequencies: chi-square %.1f with %d degrees of freedom\n", chi, df);
        CHECK(chi < 2.0 * df + 60.0); /* mean df, sd sqrt(2 df); a wrong distribution gives thousands */
    }
    /* repetition penalty: a dominant token is pushed below another after it was accepted */
    {
        float two[3] = {2.0f, 1.5f, -1.0f};
        s = make_sampler(3, 0.0f, 0, 0.0f, 0.0f, 2.0f, 0);
        CHECK(tfm_sample(s, two, 3, &t) == TFM_OK && t == 0); /* accepted: now penalized 2 -> 1 */
        CHECK(tfm_sample(s, two, 3, &t) == TFM_OK && t == 1); /* 1.5 > 1; both now in the window */
        CHECK(tfm_sample(s, two, 3, &t) == TFM_OK && t == 0); /* 1 > 0.75 */
        tfm_sampler_destroy(s);
        two[0] = -0.5f; two[1] = -0.6f; two[2] = -5.0f;
        s = make_sampler(3, 0.0f, 0, 0.0f, 0.0f, 1.5f, 0);
        tfm_sampler_accept(s, 0); /* negative logits are multiplied: -0.75 < -0.6 */
        tfm_sampler_accept(s, 0); /* twice in the window: still penalized once */
        CHECK(tfm_sample(s, two, 3, &t) == TFM_OK && t == 1);
        tfm_sampler_accept(s, 1);
        CHECK(tfm_sample(s, two, 3, &t) == TFM_OK && t == 0); /* -0.75 > -0.9 */
        tfm_sampler_destroy(s);
        CHECK(two[0] == -0.5f);
    }
    /* a tiny temperature is (almost) greedy, never garbage; +inf is certain */
    {
        float inf4[4] = {0.0f, INFINITY, 3.0f, INFINITY};
        s = make_sampler(NV, 1e-30f, 0, 0.0f, 0.0f, 0.0f, 5);
        for (i = 0, bad = 0; i < 50; i++) { tfm_sample(s, lg, NV, &t); bad += t != argmax; }
        CHECK(bad == 0);
        tfm_sampler_destroy(s);
        s = make_sampler(4, 0.7f, 0, 0.0f, 0.0f, 0.0f, 5);
        CHECK(tfm_sample(s, inf4, 4, &t) == TFM_OK && t == 1);
        tfm_sampler_destroy(s);
    }
    /* -inf logits are never drawn; NaN logits are refused (tests/test_hardening.c has more) */
    {
        float odd[4] = {-INFINITY, -INFINITY, 0.0f, 1.0f};
        s = make_sampler(4, 1.0f, 0, 0.0f, 0.0f, 0.0f, 5);
        for (i = 0, bad = 0; i < 200; i++) { bad += tfm_sample(s, odd, 4, &t) != TFM_OK || t < 2; }
        CHECK(bad == 0);
        odd[0] = NAN;
        CHECK(tfm_sample(s, odd, 4, &t) == TFM_ERR_INVALID_ARG && t == -1);
        tfm_sampler_destroy(s);
    }
    free(lg); free(copy); free(p); free(count);
}

/* softmax, log-softmax and cross-entropy on the API */
static void test_logit_math(void) {
    float lg[5] = {1000.0f, 1001.0f, 999.0f, -1e30f, 1000.5f}, pr[5], lp[5];
    double ref_lse = 1001.0 + log(exp(-1.0) + 1.0 + exp(-2.0) + exp(-0.5)), sum = 0;
    int i;
    tfm_softmax(lg, pr, 5);
    tfm_log_softmax(lg, lp, 5);
    for (i = 0; i < 5; i++) sum += pr[i];
    CHECK(fabs(sum - 1.0) < 1e-6 && pr[3] == 0.0f);
    CHECK(fabs(lp[1] - (1001.0 - ref_lse)) < 1e-4);
    CHECK(fabs(tfm_cross_entropy(lg, 5, 2) - (ref_lse - 999.0)) < 1e-4);
    CHECK(isnan(tfm_cross_entropy(lg, 5, 5)) && isnan(tfm_cross_entropy(lg, 5, -1)) && isnan(tfm_cross_entropy(NULL, 5, 0)));
    tfm_softmax(NULL, pr, 5); /* no crash */
}

int main(void) {
    int i;
    (void)check_shared_dir; /* this suite needs nothing from ../shared */
    test_kernels();
    test_attention();
    test_attention_window();
    for (i = 0; i < N_SPECS; i++) {
        spec sp = make_spec(i);
        test_model_spec(&sp);
    }
    test_threads();
    test_api();
    test_files();
    test_alloc_failures();
    test_corrupt();
    test_sampler();
    test_logit_math();
    return check_summary("test_core");
}
