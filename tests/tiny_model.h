/* tiny_model.h - a small Llama-shaped .tfm in memory (RMSNorm, gated SiLU FFN, RoPE, tied
   output) with random weights, written by tests/tfm_writer.h: for tests that need a model to
   run, not one checked against a reference (tests/test_hardening.c, tests/test_threads.c).
   Include tfm.h's implementation and tfm_writer.h first. */
#ifndef TINY_MODEL_H
#define TINY_MODEL_H
#include <stdlib.h>
#include <string.h>

typedef struct tiny_spec {
    int n_vocab, n_ctx, n_layers, n_heads, d_model, d_ff;
    int d_head;      /* 0: d_model / n_heads */
    int n_kv_heads;  /* 0: n_heads */
    int no_rope;     /* no position encoding (then any d_head) */
    int dtype;       /* every matrix (a tfm_dtype); vectors are f32 */
    float lnf_scale; /* the final norm's weights (1: ordinary) */
    uint64_t seed;
} tiny_spec;

/* The file in one malloc'ed buffer (NULL when out of memory); *bytes its size. */
static inline unsigned char *tiny_model(const tiny_spec *sp, size_t *bytes) {
    static const char *per_layer[] = {"ln1.w", "wq", "wk", "wv", "wo", "ln2.w", "w_gate", "w_up", "w_down"};
    enum { N_PER = 9, MAX_T = 3 + 9 * 16 };
    char names[MAX_T][32];
    tw_header h;
    tw_tensor t[MAX_T];
    float *v[MAX_T];
    unsigned char *f;
    uint64_t seed = sp->seed ? sp->seed : 12345;
    int i, n = 0, l, k;
    size_t e;
    memset(&h, 0, sizeof h);
    h.arch = TFM_ARCH_LLAMA; h.n_vocab = sp->n_vocab; h.n_ctx = sp->n_ctx; h.n_layers = sp->n_layers;
    h.n_heads = sp->n_heads; h.n_kv_heads = sp->n_kv_heads ? sp->n_kv_heads : sp->n_heads; h.d_model = sp->d_model;
    h.d_head = sp->d_head ? sp->d_head : sp->d_model / sp->n_heads;
    h.d_ff = sp->d_ff; h.rope_dim = sp->no_rope ? 0 : h.d_head; h.theta = 10000.0f; h.eps = 1e-5f; h.norm = TFM_NORM_RMSNORM;
    h.act = TFM_ACT_SILU; h.ffn = TFM_FFN_GATED; h.residual = TFM_RESIDUAL_SEQUENTIAL;
    h.pos = sp->no_rope ? TFM_POS_NONE : TFM_POS_ROPE_HALF;
    if (sp->n_layers > 16) return NULL;
    memset(t, 0, sizeof t);
    for (i = -1; i <= sp->n_layers; i++) { /* tok_embd, the layers, lnf.w */
        for (k = 0; k < (i >= 0 && i < sp->n_layers ? N_PER : 1); k++, n++) {
            int rows = sp->d_model, cols = sp->d_model;
            if (i < 0) { snprintf(names[n], sizeof names[n], "tok_embd"); rows = sp->n_vocab; }
            else if (i == sp->n_layers) { snprintf(names[n], sizeof names[n], "lnf.w"); cols = 0; }
            else {
                snprintf(names[n], sizeof names[n], "blk.%d.%s", i, per_layer[k]);
                if (k == 0 || k == 5) cols = 0;
                if (k == 1) rows = h.n_heads * h.d_head;                /* wq */
                if (k == 2 || k == 3) rows = h.n_kv_heads * h.d_head;   /* wk, wv */
                if (k == 4) cols = h.n_heads * h.d_head;                /* wo */
                if (k == 6 || k == 7) rows = sp->d_ff;
                if (k == 8) cols = sp->d_ff;
            }
            t[n].name = names[n];
            t[n].rows = rows;
            t[n].cols = cols;
            t[n].dtype = cols ? sp->dtype : 0;
            v[n] = (float *)malloc((size_t)rows * (size_t)(cols ? cols : 1) * sizeof(float));
            if (!v[n]) return NULL;
            for (e = 0; e < (size_t)rows * (size_t)(cols ? cols : 1); e++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                v[n][e] = !cols ? (i == sp->n_layers ? sp->lnf_scale : 1.0f) : ((float)(seed >> 40) / 16777216.0f - 0.5f) * 0.2f;
            }
            t[n].v = v[n];
        }
    }
    f = tw_write(&h, t, n, NULL, 0, bytes);
    for (l = 0; l < n; l++) free(v[l]);
    return f;
}

/* The data offset of tensor `name` in a file written by tw_write (0 if absent). */
static inline size_t tiny_offset(const unsigned char *f, const char *name) {
    size_t i, n = (size_t)f[84] | (size_t)f[85] << 8 | (size_t)f[86] << 16 | (size_t)f[87] << 24;
    for (i = 0; i < n; i++) {
        const unsigned char *e = f + 256 + 128 * i;
        if (strcmp((const char *)e, name) == 0) {
            size_t off = 0;
            int b;
            for (b = 7; b >= 0; b--) off = off << 8 | e[104 + b];
            return off;
        }
    }
    return 0;
}
#endif
