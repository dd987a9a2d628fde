/* tfm-bench: prompt and decode speed of tfm.h, reported against what this machine can do.

   Decode reads every weight matrix once per token, so its bound is memory bandwidth: the
   benchmark measures the read bandwidth in the same run and reports decode as a fraction of
   it (weight bytes x tokens/s / bandwidth). Prompt processing is reported as GFLOP/s (2 x
   the weights of the layer matrices x tokens/s, plus the output head's once per prompt: only
   the last token's logits are computed) and, for float weights, against the FMA peak
   measured in the same run. Ratios survive a noisy machine; absolute tokens/s do not. The
   model is a .tfm file (-m) or a random-weight one of a named shape and any weight type
   (--shape, --type).

   usage: tfm-bench --help */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "tools/tfm_write.h"
#include "tools/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MAX_THREAD_COUNTS 8
#define MAX_BATCH 4096    /* tfm_session_desc.n_batch's limit */
#define DEFAULT_BATCH 512 /* llama-bench's default ubatch: a 128-token prompt is one pass in both */
#define POOL_ELEMS ((size_t)1 << 20) /* random weights quantized once, then tiled over the tensors */

typedef struct shape { const char *name; int d_model, n_layers, n_heads, d_ff, n_vocab, n_ctx; } shape;
static const shape SHAPES[] = {
    {"pythia-410m", 1024, 24, 16, 4096, 50304, 2048},
    {"pythia-160m", 768, 12, 12, 3072, 50304, 2048},
    {"gpt2", 768, 12, 12, 3072, 50257, 1024},
    {"tiny", 256, 4, 4, 1024, 2048, 256},
};

static const char USAGE[] =
    "usage: tfm-bench [-m M.tfm | --shape pythia-410m|pythia-160m|gpt2|tiny --type TYPE]\n"
    "                 [-t THREADS[,THREADS...]] [-p PROMPT_TOKENS] [-n DECODE_TOKENS] [-b BATCH] [-r REPEATS]\n"
    "                 [--kernels SET] [--kv f32|f16] [--no-mmap] [--json]\n"
    "Prompt and decode tokens/s of tfm.h, with this machine's read bandwidth and FMA peak\n"
    "measured in the same run. Defaults: pythia-410m, f32, -t 1, -p 128, -n 32, -r 3 (medians).\n"
    "The prompt and the decoded tokens are timed apart, each from an empty cache (as llama-bench's\n"
    "pp and tg tests).\n"
    "  -m FILE      a .tfm file (the shape and type are the file's)\n"
    "  --type TYPE  random weights of TYPE: f32 f16 bf16 q8_0 q4_0 q5_0 q5_1 q4_k q5_k q6_k q4_k_m\n"
    "               (tfm-convert's recipes, so the tensors get the types a converted file would)\n"
    "  -t LIST      one configuration per thread count, e.g. -t 1,2\n"
    "  -b BATCH     prompt tokens per pass over the weights (the session's n_batch); default: the\n"
    "               whole prompt, at most 512 (as llama-bench, whose prompt runs in one ubatch of\n"
    "               up to 512); the library's own default is 64\n"
    "  --kernels S  the kernel set (scalar avx2 avx512 amx neon; default: the best this CPU runs)\n"
    "  --kv f16     a half-precision KV cache\n"
    "  --no-mmap    read -m's file into memory instead of mapping it (llama-bench's -mmp 0)\n"
    "  --json       one JSON object per configuration on its own line (no other output)\n"
    "  --sessions N also decode N sessions side by side with tfm_session_decode_batch (one pass\n"
    "               over the weights per token for all), against one session\n"
    "  --units      the cost of each unit of tfm_session_step (a layer of one token, a layer of\n"
    "               a prompt batch, a slice of the vocabulary projection, a sampling), then\n"
    "               the prompt and -n tokens generated under a per-step --budget-ms B (default 4)\n";

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- machine limits ---- */

/* One thread's sum over [p, p + n): eight independent accumulators, so the adds never limit
   the rate; the compiler vectorizes the lanes. */
static float sum_block(const float *p, size_t n) {
    float a[8] = {0};
    size_t i;
    int k;
    for (i = 0; i + 8 <= n; i += 8)
        for (k = 0; k < 8; k++) a[k] += p[i + (size_t)k];
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

/* Best-of-3 read bandwidth in GB/s over a buffer far larger than the caches, each of n threads
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
        if ((double)n * sizeof *buf / dt > best) best = (double)n * sizeof *buf / dt;
        sum += s;
    }
    free(buf);
    return sum < 0 ? 0.0 : best / 1e9;
}

/* How many of the model's matrices the kernels read interleaved (repacked at open, >>dtype). */
static void print_repacked(tfm_model *model) {
    int i, n = 0, n_ilv = 0;
    for (i = 0; i < tfm__n_matrices(model); i++) {
        const tfm__tensor *t = tfm__model_matrix(model, i);
        n += t->data != NULL;
        n_ilv += t->data && t->ilv;
    }
    printf("repacked         %d of %d matrices interleaved for the kernels at open\n", n_ilv, n);
}

/* FMA peak in GFLOP/s per kernel set: N independent 16-lane fma chains per thread, written
   with tfm.h's own vector layer (the operations its float kernels use). N: enough chains to
   cover the fma latency on two ports and few enough to stay in registers (AVX2: 6 vectors =
   12 of its 16 registers; 8 spilled and read ~35% low on Zen 3). */
#define PEAK_CHAINS_avx2 6
#define PEAK_CHAINS_avx512 8
#define PEAK_CHAINS_neon 8
#define PEAK_LOOP(P, T)                                                                             \
    T static float peak_##P(long iters) {                                                          \
        tfm__##P##_v a[PEAK_CHAINS_##P], m = tfm__##P##_set1(0.999999f), c = tfm__##P##_set1(1e-7f); \
        long i;                                                                                     \
        int k;                                                                                      \
        for (k = 0; k < PEAK_CHAINS_##P; k++) a[k] = tfm__##P##_set1(1.0f);                         \
        for (i = 0; i < iters; i++)                                                                 \
            TFM__UNROLL for (k = 0; k < PEAK_CHAINS_##P; k++) a[k] = tfm__##P##_fma(a[k], m, c);    \
        for (k = 1; k < PEAK_CHAINS_##P; k++) a[0] = tfm__##P##_fma(a[k], m, a[0]);                 \
        return tfm__##P##_sum(a[0]);                                                                \
    }
#ifdef TFM__X86_AVX2
PEAK_LOOP(avx2, TFM__T_AVX2)
#endif
#ifdef TFM__X86_AVX512
PEAK_LOOP(avx512, TFM__T_AVX512)
#endif
#ifdef TFM__NEON
PEAK_LOOP(neon, )
#endif

/* The chains of a set's loop (0: not measured). */
static int peak_chains(const char *set) {
    (void)set;
#ifdef TFM__X86_AVX512
    if (!strcmp(set, "avx512") || !strcmp(set, "amx")) return PEAK_CHAINS_avx512;
#endif
#ifdef TFM__X86_AVX2
    if (!strcmp(set, "avx2")) return PEAK_CHAINS_avx2;
#endif
#ifdef TFM__NEON
    if (!strcmp(set, "neon")) return PEAK_CHAINS_neon;
#endif
    return 0;
}

static float peak_set(const char *set, long iters) {
#ifdef TFM__X86_AVX512
    if (!strcmp(set, "avx512") || !strcmp(set, "amx")) return peak_avx512(iters);
#endif
#ifdef TFM__X86_AVX2
    if (!strcmp(set, "avx2")) return peak_avx2(iters);
#endif
#ifdef TFM__NEON
    if (!strcmp(set, "neon")) return peak_neon(iters);
#endif
    (void)set;
    (void)iters;
    return -1.0f; /* scalar: not measured */
}

static double fma_peak(const tfm__isa *isa, int n_threads) {
    long iters = 20000000;
    double t0 = now(), dt;
    float sink = 0.0f;
    (void)n_threads;
#pragma omp parallel num_threads(n_threads) reduction(+ : sink)
    sink += peak_set(isa->name, iters);
    dt = now() - t0;
    return sink < 0 ? 0.0 : (double)iters * peak_chains(isa->name) * TFM__LANES * 2 * n_threads / dt / 1e9;
}

/* ---- a random-weight model in memory, laid out by tools/tfm_write.c ---- */
typedef struct tensor_spec { char name[64]; int rows, cols, layer; tq_role role; } tensor_spec; /* cols 0: vector */

static int list_tensors(const shape *s, tensor_spec *t) {
    static const char *const vec_d[] = {"ln1.w", "ln1.b", "ln2.w", "ln2.b", "bq", "bk", "bv", "bo", "b_down"};
    static const char *const mat_dd[] = {"wq", "wk", "wv", "wo"};
    int n = 0, l, i, d = s->d_model;
#define ADD(r, c, lay, ro, ...) \
    (snprintf(t[n].name, 64, __VA_ARGS__), t[n].rows = (r), t[n].cols = (c), t[n].layer = (lay), t[n].role = (ro), n++)
    ADD(s->n_vocab, d, -1, TQ_ROLE_OTHER, "tok_embd");
    for (l = 0; l < s->n_layers; l++) {
        for (i = 0; i < 9; i++) ADD(d, 0, l, TQ_ROLE_OTHER, "blk.%d.%s", l, vec_d[i]);
        for (i = 0; i < 4; i++) ADD(d, d, l, i == 2 ? TQ_ROLE_V : TQ_ROLE_OTHER, "blk.%d.%s", l, mat_dd[i]);
        ADD(s->d_ff, d, l, TQ_ROLE_OTHER, "blk.%d.w_up", l);
        ADD(s->d_ff, 0, l, TQ_ROLE_OTHER, "blk.%d.b_up", l);
        ADD(d, s->d_ff, l, TQ_ROLE_DOWN, "blk.%d.w_down", l);
    }
    ADD(d, 0, -1, TQ_ROLE_OTHER, "lnf.w");
    ADD(d, 0, -1, TQ_ROLE_OTHER, "lnf.b");
    ADD(s->n_vocab, d, -1, TQ_ROLE_OUTPUT, "output.w");
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

/* Random weights ~ uniform(+-0.05) (norm weights near 1, biases 0): a pool quantized once per
   dtype, tiled over each matrix (the addresses differ, so caches gain nothing from the repeat). */
static void fill_tensor(const tensor_spec *t, tfm_dtype dt, const unsigned char *pool, size_t pool_bytes,
                        unsigned char *p, size_t bytes) {
    size_t k;
    if (!t->cols) {
        for (k = 0; k < (size_t)t->rows; k++) {
            float v = strstr(t->name, ".w") ? 1.0f + 0.01f * (float)(k % 7) : 0.0f;
            memcpy(p + 4 * k, &v, 4);
        }
        return;
    }
    (void)dt;
    for (k = 0; k < bytes; k += pool_bytes) memcpy(p + k, pool, bytes - k < pool_bytes ? bytes - k : pool_bytes);
}

static unsigned char *make_model(const shape *s, const char *type, size_t *out_bytes, void **raw) {
    tensor_spec *t = (tensor_spec *)calloc((size_t)s->n_layers * 16 + 8, sizeof *t);
    tfmw_tensor *e = (tfmw_tensor *)calloc((size_t)s->n_layers * 16 + 8, sizeof *e);
    float *f = (float *)malloc(POOL_ELEMS * sizeof(float));
    unsigned char *pool[TFM_DTYPE_COUNT] = {0}, *p = NULL;
    size_t pool_bytes[TFM_DTYPE_COUNT] = {0}, k;
    uint32_t rng = 12345u;
    uint64_t at;
    int n, i;
    *raw = NULL;
    if (!t || !e || !f) goto done;
    for (k = 0; k < POOL_ELEMS; k++) {
        rng = rng * 1664525u + 1013904223u;
        f[k] = ((float)(rng >> 8) / 16777216.0f - 0.5f) * 0.1f;
    }
    n = list_tensors(s, t);
    at = tfmw_dir_end((size_t)n);
    for (i = 0; i < n; i++) {
        tfm_dtype dt = t[i].cols ? tq_matrix_dtype(type, t[i].role, t[i].layer, s->n_layers, t[i].cols, NULL)
                                 : TFM_DTYPE_F32;
        e[i].name = t[i].name;
        e[i].dtype = (uint32_t)dt;
        e[i].rank = t[i].cols ? 2 : 1;
        e[i].shape[0] = (uint64_t)t[i].rows;
        e[i].shape[1] = (uint64_t)t[i].cols;
        e[i].data_bytes = (uint64_t)t[i].rows * tfm_dtype_row_bytes(dt, (size_t)(t[i].cols ? t[i].cols : 1));
        e[i].data_offset = tfmw_place(&at, e[i].data_bytes);
        if (t[i].cols && !pool[dt]) { /* POOL_ELEMS is whole blocks of every dtype */
            pool_bytes[dt] = tfm_dtype_row_bytes(dt, POOL_ELEMS);
            pool[dt] = (unsigned char *)malloc(pool_bytes[dt]);
            if (!pool[dt] || tfm_dtype_from_f32(dt, f, pool[dt], POOL_ELEMS) != TFM_OK) goto done;
        }
    }
    *raw = calloc((size_t)at + 64, 1); /* zeroed: reserved bytes and padding must be zero */
    if (*raw) {
        p = (unsigned char *)*raw + (64 - (uintptr_t)*raw % 64) % 64;
        neox_header(s, (uint32_t)n, p);
        for (i = 0; i < n; i++) {
            tfmw_entry_bytes(p + TFMW_HEADER_BYTES + (size_t)i * TFMW_DIR_ENTRY_BYTES, &e[i]);
            fill_tensor(&t[i], (tfm_dtype)e[i].dtype, pool[e[i].dtype], pool_bytes[e[i].dtype], p + e[i].data_offset,
                        (size_t)e[i].data_bytes);
        }
        *out_bytes = (size_t)at;
    }
done:
    for (i = 0; i < TFM_DTYPE_COUNT; i++) free(pool[i]);
    free(f);
    free(t);
    free(e);
    return p;
}

/* ---- what one token reads and computes ---- */

static double matrix_bytes(const tfm__tensor *w) { return w->data ? (double)w->rows * (double)w->row_bytes : 0.0; }
static double matrix_params(const tfm__tensor *w) { return w->data ? (double)w->rows * (double)w->cols : 0.0; }

/* Bytes of weight matrices one decoded token reads (every layer matrix and the output head;
   the embedding only one row of) and the multiply-adds it does in them, head_macs of them in
   the head (a prompt runs it once, for its last token's logits). */
static void per_token(const tfm_model *m, double *bytes, double *macs, double *head_macs) {
    int l;
    *bytes = matrix_bytes(&m->w_out);
    *macs = *head_macs = matrix_params(&m->w_out);
    for (l = 0; l < m->config.n_layers; l++) {
        const tfm__layer *L = &m->layers[l];
        const tfm__tensor *t[7];
        int i;
        t[0] = &L->wq; t[1] = &L->wk; t[2] = &L->wv; t[3] = &L->wo; t[4] = &L->w_up; t[5] = &L->w_gate; t[6] = &L->w_down;
        for (i = 0; i < 7; i++) {
            *bytes += matrix_bytes(t[i]);
            *macs += matrix_params(t[i]);
        }
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void log_line(void *user, tfm_result r, const char *msg) { (void)user; fprintf(stderr, "tfm: %s: %s\n", tfm_result_string(r), msg); }

typedef struct args {
    const char *path, *type, *kernels;
    const shape *sh;
    int threads[MAX_THREAD_COUNTS], n_thread_counts, n_prompt, n_gen, n_batch, repeats, json, sessions, units, no_mmap;
    double budget_ms;
    tfm_dtype kv;
} args;

static int parse_threads(const char *v, args *a) {
    a->n_thread_counts = 0;
    while (*v) {
        char *end;
        long t = strtol(v, &end, 10);
        if (end == v || t < 1 || t > 256 || a->n_thread_counts == MAX_THREAD_COUNTS) return 0;
        a->threads[a->n_thread_counts++] = (int)t;
        v = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return 0;
    }
    return a->n_thread_counts > 0;
}

static int parse_args(int argc, char **argv, args *a) {
    int i;
    size_t k;
    memset(a, 0, sizeof *a);
    a->sh = &SHAPES[0];
    a->type = "f32";
    a->threads[0] = 1;
    a->n_thread_counts = 1;
    a->n_prompt = 128;
    a->n_gen = 32;
    a->repeats = 3;
    a->kv = TFM_DTYPE_F32;
    a->budget_ms = 4.0;
    for (i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) { fputs(USAGE, stdout); exit(0); }
        if (!strcmp(o, "--json")) { a->json = 1; continue; }
        if (!strcmp(o, "--units")) { a->units = 1; continue; }
        if (!strcmp(o, "--no-mmap")) { a->no_mmap = 1; continue; }
        if (!v) { fprintf(stderr, "tfm-bench: %s needs a value (see --help)\n", o); return 0; }
        i++;
        if (!strcmp(o, "--shape")) {
            for (k = 0; k < sizeof SHAPES / sizeof SHAPES[0] && strcmp(SHAPES[k].name, v); k++) {}
            if (k == sizeof SHAPES / sizeof SHAPES[0]) { fprintf(stderr, "tfm-bench: unknown shape %s\n", v); return 0; }
            a->sh = &SHAPES[k];
        } else if (!strcmp(o, "--type")) {
            if (!tq_type_valid(v)) { fprintf(stderr, "tfm-bench: unknown --type %s (see --help)\n", v); return 0; }
            a->type = v;
        } else if (!strcmp(o, "--kernels")) a->kernels = v;
        else if (!strcmp(o, "--kv")) {
            if (strcmp(v, "f32") && strcmp(v, "f16")) { fprintf(stderr, "tfm-bench: --kv f32|f16\n"); return 0; }
            a->kv = strcmp(v, "f16") ? TFM_DTYPE_F32 : TFM_DTYPE_F16;
        } else if (!strcmp(o, "-m")) a->path = v;
        else if (!strcmp(o, "-t")) {
            if (!parse_threads(v, a)) { fprintf(stderr, "tfm-bench: -t takes 1..256, comma-separated\n"); return 0; }
        } else if (!strcmp(o, "-n")) a->n_gen = atoi(v);
        else if (!strcmp(o, "-p")) a->n_prompt = atoi(v);
        else if (!strcmp(o, "-b")) a->n_batch = atoi(v);
        else if (!strcmp(o, "-r")) a->repeats = atoi(v);
        else if (!strcmp(o, "--sessions")) a->sessions = atoi(v);
        else if (!strcmp(o, "--budget-ms")) a->budget_ms = atof(v);
        else { fprintf(stderr, "tfm-bench: unknown option %s (see --help)\n", o); return 0; }
    }
    if (a->n_gen < 1 || a->n_prompt < 1 || a->repeats < 1 || a->repeats > 100 || a->sessions < 0 ||
        a->sessions > 64 || !(a->budget_ms > 0.0) || a->n_batch < 0 || a->n_batch > MAX_BATCH) {
        fprintf(stderr, "tfm-bench: -n and -p must be >= 1, -b 1..%d, -r 1..100, --sessions 0..64, --budget-ms > 0\n", MAX_BATCH);
        return 0;
    }
    if (!a->n_batch) a->n_batch = a->n_prompt < DEFAULT_BATCH ? a->n_prompt : DEFAULT_BATCH;
    return 1;
}

/* One configuration: median prompt and decode times over a->repeats runs (after a warm-up). */
static int run_config(const tfm_model *m, const args *a, int n_threads, double *t_prompt, double *t_gen) {
    tfm_config c = tfm_model_config(m);
    tfm_session_desc sd;
    tfm_session *s = NULL;
    double tp[100], tg[100];
    int32_t *ids = (int32_t *)malloc((size_t)(a->n_prompt + a->n_gen) * sizeof *ids);
    int rep, i, ok = 1;
    memset(&sd, 0, sizeof sd);
    sd.n_threads = n_threads;
    sd.n_ctx = a->n_prompt + a->n_gen;
    sd.n_batch = a->n_batch;
    sd.kv_dtype = a->kv;
    if (!ids || sd.n_ctx > c.n_ctx) {
        fprintf(stderr, "tfm-bench: -p + -n (%d) exceeds the model's n_ctx %d\n", sd.n_ctx, c.n_ctx);
        free(ids);
        return 0;
    }
    if (tfm_session_create(m, &sd, &s) != TFM_OK) { free(ids); return 0; }
    for (i = 0; i < a->n_prompt + a->n_gen; i++) ids[i] = (int32_t)(((long)i * 7919 + 13) % c.n_vocab);
    for (rep = -1; rep < a->repeats && ok; rep++) { /* rep -1: warm-up (page faults, caches) */
        double t0 = now();
        ok = tfm_session_eval(s, ids, a->n_prompt, 0, NULL) == TFM_OK;
        if (rep >= 0) tp[rep] = now() - t0;
        t0 = now(); /* decode from an empty cache (positions 0..n_gen-1, over the prompt's), as llama-bench's tg test */
        for (i = 0; i < a->n_gen && ok; i++) ok = tfm_session_decode(s, ids[a->n_prompt + i], i, NULL) == TFM_OK;
        if (rep >= 0) tg[rep] = now() - t0;
    }
    if (!ok) fprintf(stderr, "tfm-bench: eval failed: %s\n", tfm_session_last_error(s));
    if (ok) {
        *t_prompt = median(tp, a->repeats);
        *t_gen = median(tg, a->repeats);
    }
    tfm_session_destroy(s);
    free(ids);
    return ok;
}

/* N sessions, each after a short prompt, decoding a->n_gen tokens side by side in one pass per
   token (tfm_session_decode_batch): median seconds per batched step. */
static int run_sessions(const tfm_model *m, const args *a, int n_threads, int n, double *t_step) {
    enum { PROMPT = 16 };
    tfm_config c = tfm_model_config(m);
    tfm_session_desc sd;
    tfm_session *s[64] = {0};
    int32_t ids[PROMPT], tok[64];
    double t[100];
    int i, k, rep, ok = 1;
    memset(&sd, 0, sizeof sd);
    sd.n_threads = n_threads;
    sd.n_ctx = PROMPT + a->n_gen * (a->repeats + 1) + 1;
    sd.n_batch = n > 16 ? n : 16;
    sd.kv_dtype = a->kv;
    for (i = 0; i < n && ok; i++) {
        for (k = 0; k < PROMPT; k++) ids[k] = (int32_t)((k * 31 + i * 7 + 5) % c.n_vocab);
        ok = tfm_session_create(m, &sd, &s[i]) == TFM_OK && tfm_session_eval(s[i], ids, PROMPT, 0, NULL) == TFM_OK;
        tok[i] = ids[0];
    }
    for (rep = -1; rep < a->repeats && ok; rep++) {
        double t0 = now();
        for (k = 0; k < a->n_gen && ok; k++) ok = tfm_session_decode_batch(s, tok, n) == TFM_OK;
        if (rep >= 0) t[rep] = (now() - t0) / a->n_gen;
    }
    if (!ok) fprintf(stderr, "tfm-bench: batched decode failed: %s\n", s[0] ? tfm_session_last_error(s[0]) : "");
    else *t_step = median(t, a->repeats);
    for (i = 0; i < n; i++) tfm_session_destroy(s[i]);
    return ok;
}

/* Unit costs of tfm_session_step, and a prompt plus generation under a per-step time budget. */
static int run_units(const tfm_model *m, const args *a, int n_threads) {
    tfm_config c = tfm_model_config(m);
    tfm_session_desc sd;
    tfm_session *s = NULL;
    tfm_sampler_desc pd;
    tfm_sampler *smp = NULL;
    tfm_job_desc job;
    tfm_step_info info;
    int32_t *ids = (int32_t *)malloc((size_t)a->n_prompt * sizeof *ids);
    double layer1[512], layerb[512], slice[4096], steps[8192], worst = 0.0, t0;
    int n_layer1 = 0, n_layerb = 0, n_slice = 0, n_steps = 0, i, k, ok = 1, n_slices;
    if (!ids) return 0;
    memset(&sd, 0, sizeof sd);
    sd.n_threads = n_threads;
    sd.n_ctx = a->n_prompt + a->n_gen + 2;
    sd.kv_dtype = a->kv;
    memset(&pd, 0, sizeof pd);
    pd.n_vocab = c.n_vocab; pd.temperature = 0.8f; pd.top_k = 40; pd.top_p = 0.95f; pd.seed = 1;
    for (i = 0; i < a->n_prompt; i++) ids[i] = (int32_t)(((long)i * 7919 + 13) % c.n_vocab);
    if (sd.n_ctx > c.n_ctx || tfm_session_create(m, &sd, &s) != TFM_OK || tfm_sampler_create(&pd, &smp) != TFM_OK) {
        free(ids);
        tfm_session_destroy(s);
        return 0;
    }
    /* unit by unit: a prompt batch of 64 (layers), then one token at a time (layers, slices) */
    memset(&job, 0, sizeof job);
    job.tokens = ids;
    job.n_tokens = (size_t)(a->n_prompt < 64 ? a->n_prompt : 64);
    ok = tfm_session_start(s, &job) == TFM_OK;
    for (k = 0; ok && k < c.n_layers; k++) {
        t0 = now();
        ok = tfm_session_step(s, 1, 0, &info) == TFM_OK;
        layerb[n_layerb++] = now() - t0;
    }
    ok = ok && tfm_session_step(s, 0, 0, &info) == TFM_OK; /* its projection */
    for (i = 0; ok && i < 8; i++) {
        job.tokens = ids + 64 % a->n_prompt;
        job.n_tokens = 1;
        ok = tfm_session_start(s, &job) == TFM_OK;
        for (k = 0; ok && tfm_session_job(s).status == TFM_JOB_RUNNING; k++) {
            t0 = now();
            ok = tfm_session_step(s, 1, 0, &info) == TFM_OK;
            if (k < c.n_layers && n_layer1 < 512) layer1[n_layer1++] = now() - t0;
            else if (n_slice < 4096) slice[n_slice++] = now() - t0;
        }
    }
    n_slices = n_slice / 8;
    if (ok) {
        double med_b = median(layerb, n_layerb), med_1 = median(layer1, n_layer1), med_s = median(slice, n_slice);
        printf("  units          layer of a %d-token batch: median %.2f ms, max %.2f ms\n", (int)(a->n_prompt < 64 ? a->n_prompt : 64),
               1e3 * med_b, 1e3 * layerb[n_layerb - 1]); /* median() sorted them */
        printf("                 layer of 1 token: median %.2f ms, max %.2f ms\n", 1e3 * med_1, 1e3 * layer1[n_layer1 - 1]);
        printf("                 vocabulary slice (%d slices of %d rows): median %.3f ms, max %.3f ms\n", n_slices,
               s->slice_rows, 1e3 * med_s, 1e3 * slice[n_slice - 1]);
        for (k = 0; k < 32; k++) { /* a sampling unit: the sampler over the vocabulary */
            int32_t tok;
            t0 = now();
            tfm_sample(smp, tfm_session_logits(s), c.n_vocab, &tok);
            steps[k] = now() - t0;
        }
        med_s = median(steps, 32);
        printf("                 sampling (temperature 0.8, top-k 40, top-p 0.95): median %.3f ms, max %.3f ms\n",
               1e3 * med_s, 1e3 * steps[31]);
    }
    /* the prompt and a->n_gen sampled tokens under the budget, step by step */
    tfm_session_eval(s, NULL, 0, 0, NULL);
    memset(&job, 0, sizeof job);
    job.tokens = ids; job.n_tokens = (size_t)a->n_prompt; job.n_generate = a->n_gen; job.sampler = smp;
    job.no_stop_at_eos = true;
    ok = ok && tfm_session_start(s, &job) == TFM_OK;
    t0 = now();
    while (ok && tfm_session_job(s).status == TFM_JOB_RUNNING && n_steps < 8192) {
        double t1 = now(), dt;
        ok = tfm_session_step(s, 0, (int)(a->budget_ms * 1000.0), &info) == TFM_OK;
        dt = now() - t1;
        steps[n_steps++] = dt;
        if (dt > worst) worst = dt;
    }
    if (ok) {
        double total = now() - t0, med = median(steps, n_steps);
        printf("  budget %.1f ms  %d-token prompt + %d generated in %d steps (%.2f s): worst step %.2f ms, median %.2f ms\n",
               a->budget_ms, a->n_prompt, a->n_gen, n_steps, total, 1e3 * worst, 1e3 * med);
    }
    tfm_sampler_destroy(smp);
    tfm_session_destroy(s);
    free(ids);
    return ok;
}

int main(int argc, char **argv) {
    args a;
    unsigned char *mem = NULL;
    void *raw = NULL;
    size_t mem_bytes = 0;
    tfm_model_desc md;
    tfm_model *model;
    tfm_config c;
    const char *label, *type_label;
    double bytes, macs, head_macs;
    int ti;
    if (!parse_args(argc, argv, &a)) return 1;
    memset(&md, 0, sizeof md);
    md.logger.log = log_line;
    md.kernels = a.kernels;
    if (a.path) {
        md.path = a.path;
        md.no_mmap = a.no_mmap != 0;
        label = a.path;
    } else {
        if (!a.json) fprintf(stderr, "building a random %s model (%s)...\n", a.sh->name, a.type);
        mem = make_model(a.sh, a.type, &mem_bytes, &raw);
        if (!mem) { fprintf(stderr, "tfm-bench: out of memory\n"); return 1; }
        md.data = mem;
        md.data_bytes = mem_bytes;
        label = a.sh->name;
    }
    if (tfm_model_open(&md, &model) != TFM_OK) { free(raw); return 1; }
    c = tfm_model_config(model);
    type_label = a.path ? tfm_dtype_describe(c.dtype).name : a.type;
    per_token(model, &bytes, &macs, &head_macs);
    if (!a.json) {
        printf("build            %s\n", tfm_build_info());
        if (model->isa.pf_run)
            printf("kernels          %s (one-token reads: rows in streams far apart, %d at once for floats, or the next rows "
                   "as one run, for AMD)\n", model->isa.name, model->isa.streams);
        else
            printf("kernels          %s (one-token reads: each row's next line prefetched)\n", model->isa.name);
        printf("model            %s %s: %d layers, d_model %d, d_ff %d, vocab %d; %.1f MB of matrices per token\n", label,
               type_label, c.n_layers, c.d_model, c.d_ff, c.n_vocab, bytes / 1e6);
        print_repacked(model);
    }
    for (ti = 0; ti < a.n_thread_counts; ti++) {
        int nt = a.threads[ti];
        double bw, peak, t_prompt = 0, t_gen = 0, pp, tg, eff, gflops;
        if (!a.json) fprintf(stderr, "measuring %d thread(s)...\n", nt);
        bw = read_bandwidth(nt);
        peak = fma_peak(&model->isa, nt);
        if (!run_config(model, &a, nt, &t_prompt, &t_gen)) {
            tfm_model_close(model);
            free(raw);
            return 1;
        }
        pp = a.n_prompt / t_prompt;
        tg = a.n_gen / t_gen;
        eff = bw > 0 ? bytes * tg / 1e9 / bw : 0.0;
        gflops = 2.0 * (macs - head_macs + head_macs / a.n_prompt) * pp / 1e9; /* the head once per prompt */
        if (a.json) {
            printf("{\"model\": \"%s\", \"type\": \"%s\", \"kernels\": \"%s\", \"threads\": %d, \"n_prompt\": %d, "
                   "\"n_gen\": %d, \"n_batch\": %d, \"repeats\": %d, \"pp_tok_s\": %.2f, \"tg_tok_s\": %.2f, \"weight_bytes\": %.0f, "
                   "\"bandwidth_gbs\": %.2f, \"decode_efficiency\": %.3f, \"pp_gflops\": %.1f, \"fma_peak_gflops\": %.1f}\n",
                   label, type_label, model->isa.name, nt, a.n_prompt, a.n_gen, a.n_batch, a.repeats, pp, tg, bytes, bw, eff,
                   gflops, peak);
        } else {
            printf("threads %d\n", nt);
            printf("  read bandwidth %.1f GB/s, FMA peak %.0f GFLOP/s (%s)\n", bw, peak, model->isa.name);
            printf("  prompt         %d tokens: %.1f tokens/s = %.0f GFLOP/s", a.n_prompt, pp, gflops);
            if (c.dtype <= TFM_DTYPE_BF16 && peak > 0) printf(" = %.0f%% of FMA peak", 100.0 * gflops / peak);
            printf(" (passes of %d tokens)", a.n_batch);
            printf("\n  decode         %d tokens: %.2f tokens/s = %.1f GB/s of weights = %.0f%% of read bandwidth\n",
                   a.n_gen, tg, bytes * tg / 1e9, 100.0 * eff);
        }
        if (a.sessions > 0) {
            double t_batch = 0.0;
            if (!run_sessions(model, &a, nt, a.sessions, &t_batch)) { tfm_model_close(model); free(raw); return 1; }
            if (a.json)
                printf("{\"threads\": %d, \"sessions\": %d, \"batch_step_ms\": %.3f, \"one_token_ms\": %.3f}\n", nt,
                       a.sessions, 1e3 * t_batch, 1e3 / tg);
            else
                printf("  %d sessions    one batched decode step %.2f ms (%.1f tokens/s in all) = %.2fx one session's "
                       "token (%.2f ms)\n", a.sessions, 1e3 * t_batch, a.sessions / t_batch, t_batch * tg, 1e3 / tg);
        }
        if (a.units && !a.json && !run_units(model, &a, nt)) { tfm_model_close(model); free(raw); return 1; }
        fflush(stdout);
    }
    tfm_model_close(model);
    free(raw);
    return 0;
}
