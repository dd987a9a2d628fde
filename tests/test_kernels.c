/* test_kernels.c - the weight types and the matrix kernels of every instruction set this CPU
   runs: each set's results equal the scalar twin's bit for bit (matrix products of every
   dtype over odd shapes, batches of 1..40 tokens and split row ranges; activation
   quantization; attention's dot, scores and value sums), the scalar twins are within stated bounds of a
   double-precision product of the dequantized weights, and the quantizers' round trips are
   within stated error bounds. Needs nothing from ../shared. */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include <math.h>
#include <stdint.h>

static uint64_t rng_state = 88172645463325252ull;
static double rng_unit(void) { /* [0, 1) */
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static float rng_sym(float scale) { return (float)((rng_unit() * 2.0 - 1.0) * scale); }
static float rng_normal(void) { /* roughly N(0, 1): weights look like this */
    return (float)(sqrt(-2.0 * log(1.0 - rng_unit())) * cos(6.283185307179586 * rng_unit()));
}

static void report(const char *what, double md, double tol) {
    printf("%-58s %.3g (bound %.1g)\n", what, md, tol);
    CHECK_MSG(md <= tol, "%s: %g > %g", what, md, tol);
}

/* Quantized activations for n_b tokens of cols values in the layouts set isa asks for, buffers
   owned by the caller (free_qa). */
static tfm__qacts alloc_qa(tfm__afmt f, int n_b, int cols, const tfm__isa *isa) {
    tfm__qacts qa;
    size_t n_pad = (size_t)(n_b + TFM__GROUP - 1) / TFM__GROUP * TFM__GROUP;
    memset(&qa, 0, sizeof qa);
    qa.block = f == TFM__ACT_Q8 ? TFM__QK : TFM__QK_K;
    qa.sum_len = f == TFM__ACT_Q8 ? TFM__QK : TFM__QK / 2;
    qa.group = TFM__ACT_GROUP(f, n_b, isa->grouped);
    qa.q = (int8_t *)calloc(n_pad * (size_t)cols + 64, 1);
    qa.qt = isa->token_major >> f & 1u ? (int8_t *)calloc(n_pad * (size_t)cols + 64, 1) : NULL;
    qa.d = (float *)calloc(n_pad * (size_t)cols / (size_t)qa.block + 16, sizeof(float));
    qa.s = (int32_t *)calloc(n_pad * (size_t)cols / (size_t)qa.sum_len + 16, sizeof(int32_t));
    return qa;
}
static void free_qa(tfm__qacts *qa) { free(qa->q); free(qa->qt); free(qa->d); free(qa->s); }

/* y [n_b, rows] = W x through one set, rows split in ranges at `split` (Intel's row order) and
   halfway from there to the end (AMD's, 2 rows at once, then 4); on a set that packs a float
   product's input (isa->pack_x), the ranges after split read x packed, the first in place. */
static void run_mm(const tfm__isa *isa, const tfm__tensor *w, const float *x, size_t xs, int n_b, const float *bias,
                   float *y, int split) {
    tfm__afmt f = tfm__dtype_of(w->dtype).act;
    tfm__qacts qa;
    tfm__mm m;
    unsigned char *block = NULL, *scratch = NULL; /* scratch: 64-byte aligned, as a session's */
    float *xp = NULL;
    int n16 = w->cols / TFM__LANES * TFM__LANES, mid = split + (w->rows - split) / 2;
    memset(&qa, 0, sizeof qa);
    if (f == TFM__ACT_F32 && isa->pack_x) {
        xp = (float *)malloc(((size_t)n_b + (size_t)isa->pack_c) * (size_t)(n16 ? n16 : 1) * sizeof(float));
        isa->pack_x(x, xs, n_b, n16, 0, n_b, xp);
    }
    if (f != TFM__ACT_F32) {
        qa = alloc_qa(f, n_b, w->cols, isa);
        isa->quant(x, xs, n_b, w->cols, &qa);
    }
    if (isa->scratch_bytes) {
        block = (unsigned char *)malloc(isa->scratch_bytes(w->cols) + 64);
        scratch = block + (64 - (uintptr_t)block % 64) % 64;
    }
    m.w = w; m.x = x; m.x_stride = xs; m.qa = &qa; m.bias = bias; m.y = y; m.y_stride = (size_t)w->rows; m.n_b = n_b;
    m.pf_run = false; /* every row order: it must not change a bit (Intel's; AMD's 2 and 4 streams) */
    m.streams = 2;
    m.xp = NULL;
    isa->mm[w->dtype](&m, 0, split, scratch);
    m.pf_run = true;
    m.xp = xp;
    isa->mm[w->dtype](&m, split, mid, scratch);
    m.streams = 4;
    isa->mm[w->dtype](&m, mid, w->rows, scratch);
    free(block);
    free(xp);
    if (f != TFM__ACT_F32) free_qa(&qa);
}

/* A random [rows, cols] matrix of a dtype (from N(0,1) floats), and its dequantized copy. */
static tfm__tensor make_matrix(tfm_dtype dt, int rows, int cols, unsigned char **bytes, float **deq) {
    tfm__tensor t;
    size_t rb = tfm_dtype_row_bytes(dt, (size_t)cols), n = (size_t)rows * (size_t)cols, i;
    float *f = (float *)malloc(n * sizeof(float));
    *bytes = (unsigned char *)malloc((size_t)rows * rb + 1);
    *deq = (float *)malloc(n * sizeof(float));
    for (i = 0; i < n; i++) f[i] = rng_normal() * 0.05f;
    CHECK(tfm_dtype_from_f32(dt, f, *bytes, n) == TFM_OK);
    CHECK(tfm_dtype_to_f32(dt, *bytes, *deq, n) == TFM_OK);
    free(f);
    memset(&t, 0, sizeof t);
    t.data = *bytes; t.dtype = dt; t.rows = rows; t.cols = cols; t.row_bytes = rb;
    return t;
}

/* w's rows interleaved by 16 (>>dtype), as a model repacks them for a set whose ilv names
   the dtype; NULL data when its rows are not a multiple of 16. */
static tfm__tensor make_ilv(const tfm__tensor *w, unsigned char **bytes) {
    tfm__tensor t = *w;
    size_t bb = (size_t)tfm__dtype_of(w->dtype).info.block_bytes;
    int r;
    *bytes = NULL;
    if (w->rows % TFM__ILV_ROWS) {
        t.data = NULL;
        return t;
    }
    *bytes = (unsigned char *)malloc((size_t)w->rows * w->row_bytes);
    for (r = 0; r < w->rows; r += TFM__ILV_ROWS)
        tfm__ilv_put(w->dtype, tfm__tensor_at(w, r), w->row_bytes, bb, w->row_bytes / bb, *bytes + (size_t)r * w->row_bytes);
    t.data = *bytes;
    t.ilv = true;
    return t;
}

/* A session sizes the float kernels' task scratch for its widest matrix (tfm__fmm_scratch_bytes):
   every narrower matrix's pass, with its partial sums and its packed rows of 2- or 4-byte
   weights, must fit it too (a pass of 1024 f16 columns holds more bytes than one of 4096). */
static void test_fmm_scratch(void) {
    static const int widest[] = {16, 100, 1024, 1100, 4096, 5000, 14336};
    static const int blocks[][2] = {{3, 4}, {4, 6}, {2, 2}};
    static const size_t l2[] = {256u * 1024u, 512u * 1024u};
    size_t w, b, l, esz;
    int c, bad = 0;
    for (w = 0; w < sizeof widest / sizeof widest[0]; w++)
        for (b = 0; b < 3; b++)
            for (l = 0; l < 2; l++) {
                size_t have = tfm__fmm_scratch_bytes(widest[w], blocks[b][0], blocks[b][1], l2[l], true);
                for (c = 1; c <= widest[w]; c++)
                    for (esz = 2; esz <= 4; esz += 2) {
                        size_t rows = (size_t)tfm__fmm_rows((size_t)c * esz, blocks[b][0], l2[l]);
                        size_t need = tfm__fmm_acc_bytes(c, blocks[b][1]) + rows * (size_t)(c / TFM__LANES * TFM__LANES) * esz;
                        bad += need > have;
                    }
            }
    CHECK(bad == 0);
}

/* Every dtype and every set: bit-equal to the scalar twin for every batch size and row split;
   one token at a time equal to the batch; the scalar twin near double. */
static void test_matmul(void) {
    static const int float_shapes[][2] = {{1, 1}, {5, 7}, {9, 16}, {17, 31}, {33, 100}, {40, 257}, {70, 1100}, {150, 4100}};
    static const int q_shapes[][2] = {{1, 32}, {7, 64}, {17, 96}, {33, 256}, {40, 512}, {23, 416}, {16, 32}, {48, 416}};
    static const int k_shapes[][2] = {{1, 256}, {9, 256}, {33, 512}, {47, 256}, {16, 256}, {48, 512}};
    static const int batches[] = {1, 2, 5, 16, 17, 40};
    int dt;
    tfm__isa scalar;
    tfm__isa_get(TFM__SET_SCALAR, &scalar);
    for (dt = 0; dt < TFM_DTYPE_COUNT; dt++) {
        const int elems = tfm__dtype_of((tfm_dtype)dt).info.block_elems;
        const int (*shapes)[2] = elems == 1 ? float_shapes : elems == TFM__QK ? q_shapes : k_shapes;
        int n_shapes = elems == 1 ? (int)(sizeof float_shapes / sizeof float_shapes[0])
                       : elems == TFM__QK ? (int)(sizeof q_shapes / sizeof q_shapes[0])
                                          : (int)(sizeof k_shapes / sizeof k_shapes[0]);
        int si, bi, i;
        double rel_err = 0.0;
        char what[96];
        int mismatch[8] = {0}, ran[8] = {0}, ran_ilv[8] = {0};
        int ilv_type = dt == TFM_DTYPE_Q8_0 || dt == TFM_DTYPE_Q4_0 || dt == TFM_DTYPE_Q5_0 || dt == TFM_DTYPE_Q5_1 ||
                       dt == TFM_DTYPE_Q6_K || dt == TFM_DTYPE_Q4_K; /* the twin reads these interleaved */
        for (si = 0; si < n_shapes; si++) {
            int R = shapes[si][0], C = shapes[si][1], b, r, k;
            unsigned char *wb;
            float *deq, *bias = (float *)malloc((size_t)R * sizeof(float));
            tfm__tensor w = make_matrix((tfm_dtype)dt, R, C, &wb, &deq), wi;
            unsigned char *wib;
            size_t xs = (size_t)C + 5;
            float *x = (float *)malloc(40 * xs * sizeof(float) + 64);
            float *ref = (float *)malloc(40 * (size_t)R * sizeof(float)), *y = (float *)malloc(40 * (size_t)R * sizeof(float));
            float *y1 = (float *)malloc((size_t)R * sizeof(float));
            for (i = 0; i < (int)(40 * xs); i++) x[i] = rng_normal();
            for (r = 0; r < R; r++) bias[r] = rng_sym(1.0f);
            wi = w;
            wi.data = NULL;
            wib = NULL;
            if (ilv_type) wi = make_ilv(&w, &wib);
            for (bi = 0; bi < (int)(sizeof batches / sizeof batches[0]); bi++) {
                int nb = batches[bi], si2;
                run_mm(&scalar, &w, x + 1, xs, nb, bias, ref, R);
                for (b = 0; b < nb; b++) /* the scalar twin against double on the dequantized weights */
                    for (r = 0; r < R; r++) {
                        double d = bias[r], mag = fabs(bias[r]);
                        for (k = 0; k < C; k++) {
                            d += (double)deq[(size_t)r * C + k] * x[1 + (size_t)b * xs + k];
                            mag += fabs((double)deq[(size_t)r * C + k] * x[1 + (size_t)b * xs + k]);
                        }
                        rel_err = fmax(rel_err, fabs(ref[(size_t)b * R + r] - d) / (mag + 1e-30));
                    }
                for (si2 = 0; si2 < TFM__SET_COUNT; si2++) {
                    tfm__isa set;
                    const tfm__isa *isa = &set;
                    if (!tfm__isa_get(si2, &set) || !tfm__isa_runs(set.name)) continue;
                    ran[si2] = 1;
                    memset(y, 0xff, (size_t)nb * (size_t)R * sizeof(float)); /* NaNs where a kernel writes nothing */
                    run_mm(isa, &w, x + 1, xs, nb, bias, y, R / 2 + (R > 2)); /* split at an odd row */
                    if (memcmp(y, ref, (size_t)nb * (size_t)R * sizeof(float)) != 0) mismatch[si2]++;
                    if (wi.data && ((si2 == TFM__SET_SCALAR && ilv_type) || (set.ilv >> dt & 1u))) { /* rows interleaved: the same bits */
                        memset(y, 0xff, (size_t)nb * (size_t)R * sizeof(float));
                        run_mm(isa, &wi, x + 1, xs, nb, bias, y, R / 2 + 1);
                        if (memcmp(y, ref, (size_t)nb * (size_t)R * sizeof(float)) != 0) mismatch[si2]++;
                        ran_ilv[si2] = 1;
                    }
                    if (nb == 17) /* token by token: the same bits as in the batch */
                        for (b = 0; b < nb; b++) {
                            memset(y1, 0xff, (size_t)R * sizeof(float));
                            run_mm(isa, &w, x + 1 + (size_t)b * xs, xs, 1, bias, y1, R);
                            if (memcmp(y1, ref + (size_t)b * R, (size_t)R * sizeof(float)) != 0) mismatch[si2]++;
                        }
                }
            }
            free(wb); free(wib); free(deq); free(bias); free(x); free(ref); free(y); free(y1);
        }
        for (i = 0; i < TFM__SET_COUNT; i++) {
            tfm__isa set;
            if (!tfm__isa_get(i, &set)) continue;
            if (!ran[i]) {
                printf("  %s: set %s does not run on this CPU, not compared\n", tfm__dtype_of((tfm_dtype)dt).info.name, set.name);
                continue;
            }
            CHECK_MSG(mismatch[i] == 0, "%s on %s: %d runs differ from the scalar twin", tfm__dtype_of((tfm_dtype)dt).info.name,
                      set.name, mismatch[i]);
            CHECK_MSG(ran_ilv[i] == ((i == TFM__SET_SCALAR && ilv_type) || (set.ilv >> dt & 1u)),
                      "%s on %s: interleaved rows %s", tfm__dtype_of((tfm_dtype)dt).info.name, set.name,
                      ran_ilv[i] ? "run though the set does not read them" : "not compared");
        }
        /* Integer kernels quantize activations to 8 bits: |error| <= sum |w x| / 127 per block
           in the worst case, ~1% in practice; float kernels are exact up to rounding. */
        snprintf(what, sizeof what, "%s scalar twin vs double, |err| / sum|w x|", tfm__dtype_of((tfm_dtype)dt).info.name);
        report(what, rel_err, dt <= TFM_DTYPE_BF16 ? 2e-6 : 1e-2);
    }
}

/* The int16 bounds of the pmaddubsw kernels: every weight at its type's largest code (q8_0
   -127, q4_0 15, q5_0 / q5_1 31; q4_k 15 and q5_k 31 times the largest scale, 63) against
   activations that quantize to 127 (and -127), where a sum kept in int16 too long would
   saturate. Every set equal to the scalar twin, and the twin to the exact value (d = 1: a row's
   sum is cols x code x 127 x d_x). The second byte pair of a block is zeroed (q5_1's m, the
   k-quants' dmin). */
static void test_extreme_codes(void) {
    static const struct { tfm_dtype dt; unsigned char fill; int code; } types[] = {
        {TFM_DTYPE_Q8_0, 0x81, -127}, {TFM_DTYPE_Q4_0, 0xff, 15 - 8}, {TFM_DTYPE_Q5_0, 0xff, 31 - 16}, {TFM_DTYPE_Q5_1, 0x00, 31},
        {TFM_DTYPE_Q4_K, 0xff, 15 * 63}, {TFM_DTYPE_Q5_K, 0xff, 31 * 63}};
    enum { R = 48, C_Q = 416, C_K = 512, NB = 17 }; /* columns: 13 blocks of 32, 2 super-blocks of 256 */
    size_t xs = C_K;
    float *x = (float *)malloc((size_t)NB * xs * sizeof(float)), *ref = (float *)malloc((size_t)NB * R * sizeof(float));
    float *y = (float *)malloc((size_t)NB * R * sizeof(float));
    int ti, sign, i, si, nbi;
    for (ti = 0; ti < (int)(sizeof types / sizeof types[0]); ti++)
        for (sign = -1; sign <= 1; sign += 2) {
            tfm__tensor w, wi;
            size_t bb = (size_t)tfm__dtype_of(types[ti].dt).info.block_bytes, j;
            int C = tfm__dtype_of(types[ti].dt).info.block_elems == TFM__QK_K ? C_K : C_Q;
            bool mins = types[ti].dt == TFM_DTYPE_Q5_1 || types[ti].dt == TFM_DTYPE_Q4_K || types[ti].dt == TFM_DTYPE_Q5_K;
            unsigned char *bytes, *ibytes;
            int bad = 0, ran = 0;
            memset(&w, 0, sizeof w);
            w.dtype = types[ti].dt; w.rows = R; w.cols = C; w.row_bytes = tfm_dtype_row_bytes(w.dtype, C);
            bytes = (unsigned char *)malloc((size_t)R * w.row_bytes);
            memset(bytes, types[ti].fill, (size_t)R * w.row_bytes);
            if (w.dtype == TFM_DTYPE_Q5_1) memset(bytes, 0xff, (size_t)R * w.row_bytes); /* codes 31, m = 0 below */
            for (j = 0; j < (size_t)R * w.row_bytes; j += bb) { /* d = 1.0 (f16); q5_1's m, the k-quants' dmin = 0 */
                bytes[j] = 0x00; bytes[j + 1] = 0x3c;
                if (mins) bytes[j + 2] = bytes[j + 3] = 0x00;
            }
            w.data = bytes;
            wi = make_ilv(&w, &ibytes);
            for (i = 0; i < NB * (int)xs; i++) x[i] = (float)sign;
            for (nbi = 0; nbi < 2; nbi++) {
                int nb = nbi ? NB : 1;
                tfm__isa scalar;
                tfm__isa_get(TFM__SET_SCALAR, &scalar);
                run_mm(&scalar, &w, x, xs, nb, NULL, ref, R / 2);
                for (i = 0; i < nb * R; i++) /* codes 127 x d_x = 1/127 per weight: exactly C x code, up to rounding */
                    bad += fabsf(ref[i] - (float)(sign * types[ti].code * C)) > 1e-3f * (float)C * fmaxf(127.0f, fabsf((float)types[ti].code));
                for (si = 0; si < TFM__SET_COUNT; si++) {
                    tfm__isa set;
                    if (!tfm__isa_get(si, &set) || !tfm__isa_runs(set.name)) continue;
                    run_mm(&set, &w, x, xs, nb, NULL, y, R / 2 + 1);
                    bad += memcmp(y, ref, (size_t)nb * R * sizeof(float)) != 0;
                    if (set.ilv >> w.dtype & 1u) {
                        run_mm(&set, &wi, x, xs, nb, NULL, y, R / 2 + 1);
                        bad += memcmp(y, ref, (size_t)nb * R * sizeof(float)) != 0;
                    }
                    ran++;
                }
            }
            CHECK_MSG(bad == 0, "%s, largest codes, activations %+d: %d runs differ", tfm__dtype_of(w.dtype).info.name, sign, bad);
            printf("%s: largest codes x activations %+d: compared on %d sets\n", tfm__dtype_of(w.dtype).info.name, sign, ran / 2);
            free(bytes); free(ibytes);
        }
    free(x); free(ref); free(y);
}

/* Quantizer round trips: RMS error relative to the weights' RMS, N(0, 1) weights. */
static void test_quantizers(void) {
    static const double bound[TFM_DTYPE_COUNT] = {0, 4e-4, 3e-3, 7e-3, 0.12, 0.1, 0.03, 0.05, 0.06, 0.05};
    enum { N = 256 * 64 };
    float *f = (float *)malloc(N * sizeof(float)), *g = (float *)malloc(N * sizeof(float));
    unsigned char *q = (unsigned char *)malloc(N * 4);
    int dt, i;
    for (i = 0; i < N; i++) f[i] = rng_normal();
    for (dt = 0; dt < TFM_DTYPE_COUNT; dt++) {
        double e2 = 0, x2 = 0;
        char what[96];
        CHECK(tfm_dtype_from_f32((tfm_dtype)dt, f, q, N) == TFM_OK);
        CHECK(tfm_dtype_to_f32((tfm_dtype)dt, q, g, N) == TFM_OK);
        for (i = 0; i < N; i++) {
            e2 += ((double)f[i] - g[i]) * ((double)f[i] - g[i]);
            x2 += (double)f[i] * f[i];
        }
        snprintf(what, sizeof what, "%s round trip, relative RMS error", tfm__dtype_of((tfm_dtype)dt).info.name);
        report(what, sqrt(e2 / x2), dt == 0 ? 0.0 : bound[dt]);
    }
    /* zeros stay zeros; a partial block is refused; names round-trip */
    for (i = 0; i < 256; i++) f[i] = 0.0f;
    for (dt = 0; dt < TFM_DTYPE_COUNT; dt++) {
        tfm_dtype back;
        tfm_dtype_info info = tfm_dtype_describe((tfm_dtype)dt);
        int zero = 1;
        CHECK(tfm_dtype_from_f32((tfm_dtype)dt, f, q, 256) == TFM_OK && tfm_dtype_to_f32((tfm_dtype)dt, q, g, 256) == TFM_OK);
        for (i = 0; i < 256; i++) zero &= g[i] == 0.0f;
        CHECK_MSG(zero, "%s: zeros do not round-trip", info.name);
        CHECK(tfm_dtype_from_name(info.name, &back) && back == (tfm_dtype)dt);
        CHECK(tfm_dtype_row_bytes((tfm_dtype)dt, (size_t)info.block_elems * 3) == (size_t)info.block_bytes * 3);
        if (info.block_elems > 1) {
            CHECK(tfm_dtype_row_bytes((tfm_dtype)dt, (size_t)info.block_elems + 1) == 0);
            CHECK(tfm_dtype_from_f32((tfm_dtype)dt, f, q, (size_t)info.block_elems + 1) == TFM_ERR_INVALID_ARG);
        }
    }
    CHECK(!tfm_dtype_from_name("q4_1", NULL) && !tfm_dtype_from_name(NULL, NULL));
    CHECK(tfm_dtype_describe(TFM_DTYPE_COUNT).name == NULL && tfm_dtype_row_bytes(TFM_DTYPE_COUNT, 32) == 0);
    free(f); free(g); free(q);
}

/* Hand-made blocks decode to the values their layout defines (independent of the quantizers). */
static void test_block_layouts(void) {
    unsigned char b[210];
    float out[256];
    int i, ok;
    /* q8_0: d = 0.5 (f16 0x3800), codes -3, 7, ... */
    memset(b, 0, sizeof b);
    b[0] = 0x00; b[1] = 0x38; b[2] = (unsigned char)(signed char)-3; b[3] = 7; b[33] = (unsigned char)(signed char)-127;
    tfm_dtype_to_f32(TFM_DTYPE_Q8_0, b, out, 32);
    CHECK(out[0] == -1.5f && out[1] == 3.5f && out[2] == 0.0f && out[31] == -63.5f);
    /* q4_0: d = 2 (0x4000); byte 0 = 0x9f: weight 0 = low 15 - 8 = 7, weight 16 = high 9 - 8 = 1 */
    memset(b, 0, sizeof b);
    b[0] = 0x00; b[1] = 0x40; b[2] = 0x9f; b[17] = 0x08;
    tfm_dtype_to_f32(TFM_DTYPE_Q4_0, b, out, 32);
    CHECK(out[0] == 14.0f && out[16] == 2.0f && out[15] == 2.0f * (8 - 8) && out[31] == 2.0f * (0 - 8) && out[1] == -16.0f);
    /* q4_k: d = 1, dmin = 0.5; sub-block 0 scale 3 min 2, sub-block 5 scale 0x2a (low nibble
       a in byte 9, top bits 2 in byte 1 >> 6), min 0x15 (nibble 5 in byte 9, top 1 in byte 5) */
    memset(b, 0, sizeof b);
    b[0] = 0x00; b[1] = 0x3c; b[2] = 0x00; b[3] = 0x38;
    b[4] = 3; b[8] = 2;                                /* sub-block 0 */
    b[4 + 1] = (unsigned char)(2 << 6); b[4 + 5] = (unsigned char)(1 << 6); b[4 + 9] = 0x5a; /* sub-block 5 */
    b[16 + 0] = 0x4b;   /* weight 0: low nibble 11; weight 32 (sub-block 1): high nibble 4 */
    b[16 + 64 + 1] = 0xc0; /* chunk 2, byte 1: weight 160 + 1 = 161 (sub-block 5) high nibble 12 */
    tfm_dtype_to_f32(TFM_DTYPE_Q4_K, b, out, 256);
    CHECK(out[0] == 3.0f * 11 - 0.5f * 2 && out[32] == 0.0f && out[161] == 42.0f * 12 - 0.5f * 21);
    /* q6_k: d = 1 at byte 208; scale of sub-block 5 = -2; weight 80 (half 0, k = 2, l = 16):
       low nibble = ql[16] >> 4, high bits = (qh[16] >> 4) & 3 */
    memset(b, 0, sizeof b);
    b[208] = 0x00; b[209] = 0x3c; b[192 + 5] = (unsigned char)(signed char)-2;
    b[16] = 0x70; b[128 + 16] = 0x20; /* code 7 | 2 << 4 = 39 -> 39 - 32 = 7 */
    tfm_dtype_to_f32(TFM_DTYPE_Q6_K, b, out, 256);
    ok = out[80] == -14.0f && out[81] == 64.0f; /* code 0 in sub-block 5: (0 - 32) x -2 */
    for (i = 0; i < 256; i++) ok &= i / 16 == 5 || out[i] == 0.0f; /* scale 0 elsewhere */
    CHECK(ok);
    /* bf16: the top half of an f32; f16 through the table */
    b[0] = 0x80; b[1] = 0x3f; b[2] = 0x00; b[3] = 0x3c;
    tfm_dtype_to_f32(TFM_DTYPE_BF16, b, out, 1);
    tfm_dtype_to_f32(TFM_DTYPE_F16, b + 2, out + 1, 1);
    CHECK(out[0] == 1.0f && out[1] == 1.0f);
}

/* Activation quantizers, dot, attention scores and value sums of every set against the scalar twins, bit for bit. */
static void test_vector_ops(void) {
    enum { MAXN = 300 };
    float *a = (float *)malloc((MAXN + 8) * sizeof(float)), *b = (float *)malloc((MAXN + 8) * sizeof(float));
    float *y1 = (float *)malloc((MAXN + 8) * sizeof(float)), *y2 = (float *)malloc((MAXN + 8) * sizeof(float));
    int si, n, off, i, f;
    for (i = 0; i < MAXN + 8; i++) { a[i] = rng_sym(1.0f); b[i] = rng_sym(1.0f); }
    for (si = 0; si < TFM__SET_COUNT; si++) {
        tfm__isa set;
        const tfm__isa *isa = &set;
        int bad = 0;
        if (!tfm__isa_get(si, &set) || !tfm__isa_runs(set.name)) continue;
        for (n = 0; n <= MAXN; n += (n < 40 ? 1 : 37))
            for (off = 0; off < 4; off++) {
                float d1 = isa->dot(a + off, b + 3 - off % 3, n), d2 = tfm__dot_f32_scalar(a + off, b + 3 - off % 3, n);
                if (memcmp(&d1, &d2, sizeof d1) != 0) bad++;
            }
        { /* attention scores (keys f32 and f16, transposed) and the f16 value sum */
            enum { DH = 24, NK = 70, KS = 75 };
            static float kt[DH * KS + 16], s1[NK], s2[NK]; /* padded as the key cache: reads past a row's end */
            static unsigned char kth[2 * (DH * KS + 16)];
            for (i = 0; i < DH * KS; i++) { kt[i] = rng_sym(1.0f); tfm__wr_u16(kth + 2 * i, tfm__f32_to_f16(kt[i])); }
            for (n = 0; n <= NK; n += 3) {
                isa->scores[0](a, (const unsigned char *)kt, KS, DH, n, s1);
                tfm__scores_scalar(a, kt, KS, DH, n, s2);
                if (memcmp(s1, s2, (size_t)n * sizeof(float)) != 0) bad++;
                isa->scores[1](a + 1, kth, KS, DH - 5, n, s1);
                tfm__scores_h_scalar(a + 1, kth, KS, DH - 5, n, s2);
                if (memcmp(s1, s2, (size_t)n * sizeof(float)) != 0) bad++;
            }
        }
        { /* the value sums (values f32 and f16 in rows VS apart), d_head across the vector paths */
            enum { NV = 40, VS = 150 };
            static float vv[NV * VS];
            static unsigned char vh[2 * NV * VS];
            int dh, h;
            for (i = 0; i < NV * VS; i++) { vv[i] = rng_sym(1.0f); tfm__wr_u16(vh + 2 * i, tfm__f32_to_f16(vv[i])); }
            for (n = 0; n <= NV; n += 7)
                for (dh = 1; dh <= VS; dh += 13)
                    for (h = 0; h < 2; h++) {
                        memcpy(y1, b, (MAXN + 8) * sizeof(float));
                        memcpy(y2, b, (MAXN + 8) * sizeof(float));
                        isa->values[h](a, h ? vh : (const unsigned char *)vv, VS, n, dh, y1 + 1);
                        if (h) tfm__values_h_scalar(a, vh, VS, n, dh, y2 + 1);
                        else tfm__values_scalar(a, (const unsigned char *)vv, VS, n, dh, y2 + 1);
                        if (memcmp(y1, y2, (MAXN + 8) * sizeof(float)) != 0) bad++;
                    }
        }
        for (f = TFM__ACT_Q8; f < TFM__ACT_COUNT; f++) {
            int nbs[3] = {1, 3, 17}, k;
            for (k = 0; k < 3; k++) {
                int cols = 512;
                float *x = (float *)malloc((size_t)nbs[k] * (size_t)cols * sizeof(float));
                tfm__qacts q1 = alloc_qa((tfm__afmt)f, nbs[k], cols, isa), q2 = alloc_qa((tfm__afmt)f, nbs[k], cols, isa);
                size_t n_pad = (size_t)(nbs[k] + TFM__GROUP - 1) / TFM__GROUP * TFM__GROUP;
                for (i = 0; i < nbs[k] * cols; i++) x[i] = rng_normal() * (i % 97 == 0 ? 30.0f : 1.0f);
                isa->quant(x, (size_t)cols, nbs[k], cols, &q1);
                tfm__quant_scalar(x, (size_t)cols, nbs[k], cols, &q2);
                if (nbs[k] == 1) n_pad = 1;
                if (memcmp(q1.q, q2.q, n_pad * (size_t)cols) != 0 ||
                    memcmp(q1.d, q2.d, n_pad * (size_t)cols / (size_t)q1.block * sizeof(float)) != 0 ||
                    memcmp(q1.s, q2.s, n_pad * (size_t)cols / (size_t)q1.sum_len * sizeof(int32_t)) != 0)
                    bad++;
                if (q1.qt && q1.group > 1) { /* token by token in each group: the twin's codes of that token */
                    int t, j;
                    int8_t want[TFM__QK_K];
                    for (t = 0; t < nbs[k]; t++)
                        for (j = 0; j < cols / q1.block; j++) {
                            size_t at = ((size_t)(t / q1.group) * (size_t)(cols / q1.block) + (size_t)j) * (size_t)q1.block * (size_t)q1.group;
                            tfm__qa_codes(&q2, t, j, want);
                            if (memcmp(q1.qt + at + (size_t)(t % q1.group) * (size_t)q1.block, want, (size_t)q1.block) != 0) bad++;
                        }
                }
                free_qa(&q1); free_qa(&q2); free(x);
            }
        }
        CHECK_MSG(bad == 0, "set %s: %d dot / axpy / scores / quantizer results differ from the scalar twins", isa->name, bad);
        printf("set %-8s runs here: dot, axpy, scores and quantizers equal the scalar twins (%s)\n", isa->name,
               bad ? "NO" : "yes");
    }
#ifdef TFM__X86_AVX2
    if (tfm__isa_runs("avx2")) { /* F16C's half -> float agrees with the scalar one on all 65536 halves */
        int mism = 0;
        uint32_t u;
        for (u = 0; u < 65536u; u += 16) {
            unsigned char hv[32];
            float vf[16];
            int k;
            for (k = 0; k < 16; k++) { hv[2 * k] = (unsigned char)((u + (uint32_t)k) & 0xff); hv[2 * k + 1] = (unsigned char)((u + (uint32_t)k) >> 8); }
            tfm__avx2_st(vf, tfm__avx2_ld_h(hv));
            for (k = 0; k < 16; k++) {
                float sf = tfm__rd_f16(hv + 2 * k);
                if (isnan(sf) ? !isnan(vf[k]) : memcmp(&sf, &vf[k], 4) != 0) mism++;
            }
        }
        CHECK_MSG(mism == 0, "%d halves convert differently", mism);
    }
#endif
    printf("build: %s\n", tfm_build_info());
    free(a); free(b); free(y1); free(y2);
}

/* f32 -> f16 for an f16 KV cache: every set's to_f16 equal to tfm__f16_row_from_f32 bit for bit
   (NaNs too) on a sweep through all f32 bit patterns, the specials and the rounding edges (the
   largest half 65504 and the tie above it, the subnormal halves and their ties, f32 subnormals),
   every tail length. */
static void test_to_f16(void) {
    enum { NX = 1 << 16, TAIL = 40 };
    static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7f800000u, 0xff800000u,
                                       0x7f800001u, 0x7fbfffffu, 0x7fc00000u, 0xffc12345u, 0x7fe00001u, 0x477fe000u,
                                       0x477fefffu, 0x477ff000u, 0x477ff001u, 0xc77ff000u, 0x33800000u, 0x33000000u,
                                       0x33000001u, 0x33c00000u, 0x38800000u, 0x387fe000u, 0x387ff000u, 0x38001000u};
    float *x = (float *)malloc(NX * sizeof(float));
    unsigned char *h1 = (unsigned char *)malloc(2 * NX), *h2 = (unsigned char *)malloc(2 * NX);
    int si, i, n;
    for (i = 0; i < NX; i++) { /* every 65537th pattern of all 2^32 (sign, exponent and mantissa all vary) */
        uint32_t u = (uint32_t)i * 65537u + (uint32_t)(i >> 3);
        if (i < (int)(sizeof special / sizeof special[0])) u = special[i];
        memcpy(&x[i], &u, sizeof u);
    }
    for (si = 0; si < TFM__SET_COUNT; si++) {
        tfm__isa set;
        int bad = 0;
        if (!tfm__isa_get(si, &set) || !tfm__isa_runs(set.name)) continue;
        set.to_f16(x, h1, NX);
        tfm__f16_row_from_f32(x, h2, NX);
        for (i = 0; i < NX; i++) bad += memcmp(h1 + 2 * i, h2 + 2 * i, 2) != 0;
        for (n = 0; n <= TAIL; n++) { /* tails: the values past n stay untouched */
            memset(h1, 0xab, 2 * TAIL + 2);
            memset(h2, 0xab, 2 * TAIL + 2);
            set.to_f16(x + 3, h1, (size_t)n);
            tfm__f16_row_from_f32(x + 3, h2, (size_t)n);
            bad += memcmp(h1, h2, 2 * TAIL + 2) != 0;
        }
        CHECK_MSG(bad == 0, "set %s: %d f16 conversions differ from the scalar twin", set.name, bad);
    }
    free(x); free(h1); free(h2);
}

/* The activations: every set's act (and attention's exp_rows) equal to its scalar twin bit for bit (NaN lanes: NaN)
   on a grid through the range, the ends of e^x and specials, gated and not, every tail length;
   the scalar twins within stated bounds of double precision (exp, erfc, the three activations). */
static double gelu_erf_ref(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double gelu_tanh_ref(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x))); }
static double silu_ref(double x) { return x / (1.0 + exp(-x)); }
static int same_bits(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

static void test_activations(void) {
    enum { N = 4096 + 13 };
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 87.9f, 88.0f, 88.01f, -87.33654f, -87.34f,
                                     -88.5f, 1e-30f, -1e-30f, 1e30f, -1e30f, 3.9e-39f, 12.5f, -12.5f, 9.2f, -9.2f};
    float *x = (float *)malloc(N * sizeof(float)), *g = (float *)malloc(N * sizeof(float));
    float *y1 = (float *)malloc(N * sizeof(float)), *y2 = (float *)malloc(N * sizeof(float));
    double e_exp = 0.0, e_erfc = 0.0, e_erfc2 = 0.0, e_act[3] = {0.0, 0.0, 0.0};
    int si, i, a, gated, n;
    char what[96];
    for (i = 0; i < N; i++) x[i] = i < 20 ? specials[i] : (float)(-40.0 + 80.0 * (i - 20) / (N - 21));
    for (i = 0; i < N; i++) g[i] = rng_sym(3.0f);
    for (si = 0; si < TFM__SET_COUNT; si++) {
        tfm__isa set;
        int bad = 0;
        if (!tfm__isa_get(si, &set) || !tfm__isa_runs(set.name)) continue;
        for (a = 0; a < 3; a++)
            for (gated = 0; gated < 2; gated++)
                for (n = 0; n <= 40; n += 1 + (n > 20) * 7) {
                    int len = n == 40 ? N : n;
                    memcpy(y1, gated ? g : x, N * sizeof(float));
                    memcpy(y2, gated ? g : x, N * sizeof(float));
                    (set.act)((tfm_act)a, y1, gated ? x : NULL, (size_t)len);
                    tfm__act_rows_scalar((tfm_act)a, y2, gated ? x : NULL, (size_t)len);
                    for (i = 0; i < N; i++) bad += !same_bits(y1[i], y2[i]);
                }
        CHECK_MSG(bad == 0, "set %s: %d activation values differ from the scalar twin", set.name, bad);
        printf("set %-8s activations (gelu, gelu_tanh, silu) equal the scalar twin (%s)\n", set.name, bad ? "NO" : "yes");
        bad = 0;
        for (a = 0; a < 3; a++) { /* attention's e^(x - shift): no shift, a softmax's max, past the far end */
            static const float shifts[3] = {0.0f, 12.5f, -60.0f};
            for (n = 0; n <= 40; n += 1 + (n > 20) * 7) {
                int len = n == 40 ? N : n;
                memcpy(y1, x, N * sizeof(float));
                memcpy(y2, x, N * sizeof(float));
                (set.exp_rows)(y1, shifts[a], (size_t)len);
                tfm__exp_rows_scalar(y2, shifts[a], (size_t)len);
                for (i = 0; i < N; i++) bad += !same_bits(y1[i], y2[i]);
            }
        }
        CHECK_MSG(bad == 0, "set %s: %d e^(x - shift) values differ from the scalar twin", set.name, bad);
        printf("set %-8s attention's e^(x - shift) equals the scalar twin (%s)\n", set.name, bad ? "NO" : "yes");
    }
    for (i = 0; i < 200001; i++) { /* the scalar twins against double */
        float v = (float)(-87.3 + 175.3 * i / 200000.0), z = (float)(10.0 * i / 200000.0), w = (float)(-30.0 + 60.0 * i / 200000.0);
        double r = exp((double)v), c = erfc((double)z), ref[3];
        double f[3];
        if (r > 1.2e-38) e_exp = fmax(e_exp, fabs((double)tfm__exp(v) - r) / r);
        if (c > 1.2e-38) e_erfc = fmax(e_erfc, fabs((double)tfm__erfc_pos(z) - c) / c);
        if (z <= 2.0f) e_erfc2 = fmax(e_erfc2, fabs((double)tfm__erfc_pos(z) - c) / c);
        ref[TFM_ACT_GELU_ERF] = gelu_erf_ref(w); ref[TFM_ACT_GELU_TANH] = gelu_tanh_ref(w); ref[TFM_ACT_SILU] = silu_ref(w);
        f[TFM_ACT_GELU_ERF] = tfm__gelu_erf(w); f[TFM_ACT_GELU_TANH] = tfm__gelu_tanh(w); f[TFM_ACT_SILU] = tfm__silu(w);
        for (a = 0; a < 3; a++) e_act[a] = fmax(e_act[a], fabs(f[a] - ref[a]) / fmax(fabs((double)w), 1e-3));
    }
    report("tfm__exp vs double, relative, [-87.3, 88]", e_exp, 5e-7);
    report("tfm__erfc_pos vs double, relative, [0, 2]", e_erfc2, 6e-7);
    /* e^(-z^2) inherits the rounding of z^2: half an ulp of 100 is 3.8e-6 */
    report("tfm__erfc_pos vs double, relative, [0, 10]", e_erfc, 5e-6);
    for (a = 0; a < 3; a++) {
        snprintf(what, sizeof what, "activation %d vs double, |err| / max(|x|, 1e-3), [-30, 30]", a);
        report(what, e_act[a], 5e-7);
    }
    CHECK(isnan(tfm__exp(NAN)) && tfm__exp(-100.0f) == 0.0f && tfm__exp(89.0f) == INFINITY && tfm__exp(0.0f) == 1.0f);
    CHECK(isnan(tfm__gelu_erf(NAN)) && isnan(tfm__silu(NAN)) && isnan(tfm__gelu_tanh(NAN)));
    CHECK(tfm__gelu_erf(INFINITY) == INFINITY && tfm__silu(INFINITY) == INFINITY && tfm__silu(-100.0f) == 0.0f);
    free(x); free(g); free(y1); free(y2);
}

int main(void) {
    test_block_layouts();
    test_fmm_scratch();
    test_quantizers();
    test_vector_ops();
    test_to_f16();
    test_activations();
    test_matmul();
    test_extreme_codes();
    return check_summary("test_kernels");
}
