/* tfm-bench: decode and prompt speed of tfm.h, reported against what this machine can do.

   Decode reads every weight once per token, so its bound is memory bandwidth: the benchmark
   measures the read bandwidth in the same run and reports decode as a fraction of it
   (weight bytes x tokens/s / bandwidth). Prompt processing is reported against the FMA peak
   (2 x parameters x tokens/s / peak FLOP/s). Ratios survive a noisy machine; absolute
   tokens/s do not. The model is a random-weight one of a named shape (or a .tfm file).

   usage: tfm-bench [--shape pythia-410m|pythia-160m|gpt2|tiny] [--type f32|f16] [-m M.tfm]
                    [-t THREADS] [-n DECODE_TOKENS] [-p PROMPT_TOKENS] */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "tools/tfm_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

typedef struct shape { const char *name; int d_model, n_layers, n_heads, d_ff, n_vocab, n_ctx; } shape;
static const shape SHAPES[] = {
    {"pythia-410m", 1024, 24, 16, 4096, 50304, 2048},
    {"pythia-160m", 768, 12, 12, 3072, 50304, 2048},
    {"gpt2", 768, 12, 12, 3072, 50257, 1024},
    {"tiny", 256, 4, 4, 1024, 2048, 256},
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One thread's sum over [p, p + n): vector loads into 8 independent accumulators so the adds
   never limit the rate (a scalar float sum is latency-bound at ~1 float per cycle). */
static float sum_block(const float *p, size_t n) {
#if defined(__AVX2__)
    __m256 a[8];
    float out[8], s = 0.0f;
    size_t i;
    int k;
    for (k = 0; k < 8; k++) a[k] = _mm256_setzero_ps();
    for (i = 0; i + 64 <= n; i += 64)
        for (k = 0; k < 8; k++) a[k] = _mm256_add_ps(a[k], _mm256_loadu_ps(p + i + 8 * k));
    for (k = 1; k < 8; k++) a[0] = _mm256_add_ps(a[0], a[k]);
    _mm256_storeu_ps(out, a[0]);
    for (k = 0; k < 8; k++) s += out[k];
    return s;
#else
    float a[8] = {0};
    size_t i;
    int k;
    for (i = 0; i + 8 <= n; i += 8)
        for (k = 0; k < 8; k++) a[k] += p[i + (size_t)k];
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
#endif
}

/* Best-of-3 read bandwidth over a buffer far larger than the caches, with n threads each
   reading its own contiguous share (as decode reads its share of weight rows). */
static double read_bandwidth(int n_threads) {
    size_t n = (size_t)1 << 28, i; /* 1 GiB of floats */
    float *buf = (float *)malloc(n * sizeof *buf);
    double best = 0.0, sum = 0.0;
    int rep;
    if (!buf) return 0.0;
    for (i = 0; i < n; i++) buf[i] = (float)(i & 7);
    for (rep = 0; rep < 3; rep++) {
        double t0 = now(), s = 0.0, dt;
        int t;
        (void)n_threads;
#pragma omp parallel for num_threads(n_threads) reduction(+ : s) schedule(static)
        for (t = 0; t < n_threads; t++) s += (double)sum_block(buf + n / (size_t)n_threads * (size_t)t, n / (size_t)n_threads);
        dt = now() - t0;
        sum += s;
        if ((double)(n * sizeof *buf) / dt > best) best = (double)(n * sizeof *buf) / dt;
    }
    free(buf);
    return sum < 0 ? 0.0 : best / 1e9;
}

/* FMA peak in GFLOP/s: independent FMA chains in registers, per thread, summed. */
static double fma_peak(int n_threads) {
#if defined(__AVX2__) && defined(__FMA__)
    double t0 = now(), dt, flops;
    long iters = 20000000;
    float sink = 0.0f;
    (void)n_threads;
#pragma omp parallel num_threads(n_threads) reduction(+ : sink)
    {
        __m256 a0 = _mm256_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
        float out[8];
        long i;
        for (i = 0; i < iters; i++) {
            a0 = _mm256_fmadd_ps(a0, m, c); a1 = _mm256_fmadd_ps(a1, m, c);
            a2 = _mm256_fmadd_ps(a2, m, c); a3 = _mm256_fmadd_ps(a3, m, c);
            a4 = _mm256_fmadd_ps(a4, m, c); a5 = _mm256_fmadd_ps(a5, m, c);
            a6 = _mm256_fmadd_ps(a6, m, c); a7 = _mm256_fmadd_ps(a7, m, c);
        }
        a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
        _mm256_storeu_ps(out, a0);
        sink += out[0];
    }
    dt = now() - t0;
    flops = (double)iters * 8 * 8 * 2 * n_threads;
    return sink == 12345.0f ? 0.0 : flops / dt / 1e9;
#else
    (void)n_threads;
    return 0.0;
#endif
}

/* ---- a random-weight .tfm in memory, laid out by tools/tfm_write.c ---- */
typedef struct tensor_spec { char name[64]; int rows, cols; } tensor_spec; /* cols 0: vector */

static int list_tensors(const shape *s, tensor_spec *t) {
    int n = 0, l, d = s->d_model;
#define ADD(nm, r, c) (snprintf(t[n].name, 64, "%s", nm), t[n].rows = (r), t[n].cols = (c), n++)
    char nm[64];
    ADD("tok_embd", s->n_vocab, d);
    for (l = 0; l < s->n_layers; l++) {
        static const char *vec_d[] = {"ln1.w", "ln1.b", "ln2.w", "ln2.b", "bq", "bk", "bv", "bo", "b_down"};
        static const char *mat_dd[] = {"wq", "wk", "wv", "wo"};
        int i;
        for (i = 0; i < 9; i++) { snprintf(nm, 64, "blk.%d.%s", l, vec_d[i]); ADD(nm, d, 0); }
        for (i = 0; i < 4; i++) { snprintf(nm, 64, "blk.%d.%s", l, mat_dd[i]); ADD(nm, d, d); }
        snprintf(nm, 64, "blk.%d.w_up", l); ADD(nm, s->d_ff, d);
        snprintf(nm, 64, "blk.%d.b_up", l); ADD(nm, s->d_ff, 0);
        snprintf(nm, 64, "blk.%d.w_down", l); ADD(nm, d, s->d_ff);
    }
    ADD("lnf.w", d, 0);
    ADD("lnf.b", d, 0);
    ADD("output.w", s->n_vocab, d);
#undef ADD
    return n;
}

/* The header of a GPT-NeoX model (parallel residual, rotary on a quarter of each head). */
static void neox_header(const shape *s, uint32_t n_tensors, unsigned char *out) {
    tfmw_header h;
    memset(&h, 0, sizeof h);
    h.arch = TFM_ARCH_GPT_NEOX;
    h.n_vocab = (uint32_t)s->n_vocab;
    h.n_ctx = (uint32_t)s->n_ctx;
    h.n_layers = (uint32_t)s->n_layers;
    h.n_heads = h.n_kv_heads = (uint32_t)s->n_heads;
    h.d_model = (uint32_t)s->d_model;
    h.d_head = (uint32_t)(s->d_model / s->n_heads);
    h.d_ff = (uint32_t)s->d_ff;
    h.rope_dim = h.d_head / 4;
    h.rope_theta = 10000.0f;
    h.norm_eps = 1e-5f;
    h.norm = TFM_NORM_LAYERNORM;
    h.act = TFM_ACT_GELU_ERF;
    h.ffn = TFM_FFN_PLAIN;
    h.residual = TFM_RESIDUAL_PARALLEL;
    h.pos = TFM_POS_ROPE_HALF;
    h.n_tensors = n_tensors;
    tfmw_header_bytes(out, &h);
}

/* Weights uniform in +-0.05 (norm weights near 1); f16 ones random small halves. */
static void fill_tensor(const tensor_spec *t, int half, unsigned char *p, uint32_t *rng) {
    size_t count = (size_t)t->rows * (size_t)(t->cols ? t->cols : 1), k;
    for (k = 0; k < count; k++) {
        float v;
        *rng = *rng * 1664525u + 1013904223u;
        v = ((float)(*rng >> 8) / 16777216.0f - 0.5f) * 0.1f;
        if (strstr(t->name, ".w") && !t->cols) v += 1.0f; /* norm weights near 1 */
        if (half) { uint16_t h = (uint16_t)((0x2000u + (*rng >> 22)) | (*rng & 0x8000u)); memcpy(p + 2 * k, &h, 2); }
        else memcpy(p + 4 * k, &v, 4);
    }
}

static unsigned char *make_model(const shape *s, tfm_dtype dtype, size_t *out_bytes, double *weight_bytes, void **raw) {
    tensor_spec *t = (tensor_spec *)calloc((size_t)s->n_layers * 16 + 8, sizeof *t);
    tfmw_tensor *e = (tfmw_tensor *)calloc((size_t)s->n_layers * 16 + 8, sizeof *e);
    int n, i;
    uint64_t at;
    uint32_t rng = 12345u;
    unsigned char *p = NULL;
    *raw = NULL;
    if (!t || !e) { free(t); free(e); return NULL; }
    n = list_tensors(s, t);
    at = tfmw_dir_end((size_t)n);
    *weight_bytes = 0;
    for (i = 0; i < n; i++) {
        int half = t[i].cols && dtype == TFM_DTYPE_F16;
        e[i].name = t[i].name;
        e[i].dtype = half ? TFM_DTYPE_F16 : TFM_DTYPE_F32;
        e[i].rank = t[i].cols ? 2 : 1;
        e[i].shape[0] = (uint64_t)t[i].rows;
        e[i].shape[1] = (uint64_t)t[i].cols;
        e[i].data_bytes = (uint64_t)t[i].rows * (uint64_t)(t[i].cols ? t[i].cols : 1) * (half ? 2u : 4u);
        e[i].data_offset = tfmw_place(&at, e[i].data_bytes);
        if (strcmp(t[i].name, "tok_embd") != 0) *weight_bytes += (double)e[i].data_bytes;
    }
    *raw = calloc((size_t)at + 64, 1); /* zeroed: reserved bytes and padding must be zero */
    if (*raw) {
        p = (unsigned char *)*raw + (64 - (uintptr_t)*raw % 64) % 64;
        neox_header(s, (uint32_t)n, p);
        for (i = 0; i < n; i++) {
            tfmw_entry_bytes(p + TFMW_HEADER_BYTES + (size_t)i * TFMW_DIR_ENTRY_BYTES, &e[i]);
            fill_tensor(&t[i], e[i].dtype == TFM_DTYPE_F16, p + e[i].data_offset, &rng);
        }
        *out_bytes = (size_t)at;
    }
    free(t);
    free(e);
    return p;
}

static void log_line(void *user, tfm_result r, const char *msg) { (void)user; fprintf(stderr, "tfm: %s: %s\n", tfm_result_string(r), msg); }

int main(int argc, char **argv) {
    const shape *sh = &SHAPES[0];
    const char *path = NULL;
    tfm_dtype dtype = TFM_DTYPE_F32;
    int n_threads = 1, n_decode = 32, n_prompt = 64, i;
    unsigned char *mem = NULL;
    void *raw = NULL;
    size_t mem_bytes = 0;
    double weight_bytes = 0, bw, peak, t0, t_prompt, t_decode, n_params;
    tfm_model_desc md;
    tfm_model *model;
    tfm_session_desc sd;
    tfm_session *s;
    tfm_config c;
    int32_t *ids;
    tfm_result r;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t k;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: tfm-bench [--shape pythia-410m|pythia-160m|gpt2|tiny] [--type f32|f16] [-m M.tfm]\n"
                   "                 [-t THREADS] [-n DECODE_TOKENS] [-p PROMPT_TOKENS]\n"
                   "Measures read bandwidth and FMA peak, then prompt and decode tokens/s of tfm.h on a\n"
                   "random-weight model of the shape (default pythia-410m, f32, 1 thread, -n 32 -p 64),\n"
                   "or of the -m file (then --shape/--type are ignored and decode has no bandwidth ratio).\n");
            return 0;
        }
        if (!v) { fprintf(stderr, "tfm-bench: %s needs a value (see --help)\n", a); return 1; }
        i++;
        if (!strcmp(a, "--shape")) {
            for (k = 0; k < sizeof SHAPES / sizeof SHAPES[0] && strcmp(SHAPES[k].name, v); k++) {}
            if (k == sizeof SHAPES / sizeof SHAPES[0]) { fprintf(stderr, "tfm-bench: unknown shape %s\n", v); return 1; }
            sh = &SHAPES[k];
        } else if (!strcmp(a, "--type")) {
            if (strcmp(v, "f32") && strcmp(v, "f16")) { fprintf(stderr, "tfm-bench: --type f32|f16\n"); return 1; }
            dtype = strcmp(v, "f16") ? TFM_DTYPE_F32 : TFM_DTYPE_F16;
        } else if (!strcmp(a, "-m")) path = v;
        else if (!strcmp(a, "-t")) n_threads = atoi(v);
        else if (!strcmp(a, "-n")) n_decode = atoi(v);
        else if (!strcmp(a, "-p")) n_prompt = atoi(v);
        else { fprintf(stderr, "tfm-bench: unknown option %s (see --help)\n", a); return 1; }
    }
    if (n_threads < 1 || n_decode < 1 || n_prompt < 1) { fprintf(stderr, "tfm-bench: -t, -n, -p must be >= 1\n"); return 1; }
    memset(&md, 0, sizeof md);
    md.logger.log = log_line;
    if (path) md.path = path;
    else {
        fprintf(stderr, "building a random %s model (%s)...\n", sh->name, dtype == TFM_DTYPE_F16 ? "f16" : "f32");
        mem = make_model(sh, dtype, &mem_bytes, &weight_bytes, &raw);
        if (!mem) { fprintf(stderr, "tfm-bench: out of memory\n"); return 1; }
        md.data = mem;
        md.data_bytes = mem_bytes;
    }
    if ((r = tfm_model_open(&md, &model)) != TFM_OK) { free(raw); return 1; }
    c = tfm_model_config(model);
    if (path) weight_bytes = 0; /* unknown split: report tokens/s only */
    memset(&sd, 0, sizeof sd);
    sd.n_threads = n_threads;
    sd.n_ctx = n_prompt + n_decode < c.n_ctx ? n_prompt + n_decode : c.n_ctx;
    if (n_prompt + n_decode > sd.n_ctx) { fprintf(stderr, "tfm-bench: -p + -n exceeds n_ctx %d\n", c.n_ctx); return 1; }
    if (tfm_session_create(model, &sd, &s) != TFM_OK) { tfm_model_close(model); free(raw); return 1; }
    ids = (int32_t *)malloc((size_t)n_prompt * sizeof *ids);
    for (i = 0; i < n_prompt; i++) ids[i] = (int32_t)((i * 7919) % c.n_vocab);
    fprintf(stderr, "measuring bandwidth and FMA peak with %d thread(s)...\n", n_threads);
    bw = read_bandwidth(n_threads);
    peak = fma_peak(n_threads);
    t0 = now();
    r = tfm_session_eval(s, ids, n_prompt, 0, NULL);
    t_prompt = now() - t0;
    t0 = now();
    for (i = 0; i < n_decode && r == TFM_OK; i++) {
        const float *lg;
        r = tfm_session_decode(s, ids[i % n_prompt], n_prompt + i, &lg);
    }
    t_decode = now() - t0;
    if (r != TFM_OK) { fprintf(stderr, "tfm-bench: eval failed: %s\n", tfm_session_last_error(s)); return 1; }
    n_params = (double)c.n_layers * (4.0 * c.d_model * c.d_model + 2.0 * c.d_model * c.d_ff) + (double)c.n_vocab * c.d_model;
    printf("build            %s, %d thread(s)\n", tfm_build_info(), n_threads);
    printf("model            %s %s: %d layers, d_model %d, d_ff %d, vocab %d\n", path ? path : sh->name,
           c.dtype == TFM_DTYPE_F16 ? "f16" : "f32", c.n_layers, c.d_model, c.d_ff, c.n_vocab);
    printf("read bandwidth   %.1f GB/s\n", bw);
    printf("FMA peak         %.0f GFLOP/s (AVX2)\n", peak);
    printf("prompt           %d tokens: %.1f tokens/s", n_prompt, n_prompt / t_prompt);
    if (peak > 0) printf(" = %.1f%% of FMA peak", 100.0 * 2.0 * n_params * n_prompt / t_prompt / (peak * 1e9));
    printf("\ndecode           %d tokens: %.2f tokens/s", n_decode, n_decode / t_decode);
    if (weight_bytes > 0)
        printf(" = %.1f GB/s of weights = %.0f%% of read bandwidth", weight_bytes * n_decode / t_decode / 1e9,
               100.0 * weight_bytes * n_decode / t_decode / 1e9 / bw);
    printf("\n");
    free(ids);
    tfm_session_destroy(s);
    tfm_model_close(model);
    free(raw);
    return 0;
}
