/* tfm_writer.h - the tests' own .tfm writer, written from the FILE FORMAT comment at the top of
   tfm.h and independent of tools/tfm_write.c ON PURPOSE: tfm.h's reader is then checked
   against a second implementation of the format, so a misreading that one writer shares with
   the reader cannot hide. It is the only one in tests/ (test_core.c, test_tokenizer.c).

   Layout: the 256-byte header, the 128-byte directory entries, then the tokenizer blob (if
   any) and each tensor, every part at the next multiple of 64 bytes; the file is padded with
   zeros to a multiple of 64 after the last tensor. Matrices are f32, or f16 when asked, or any
   tfm_dtype (.dtype: converted by tfm.h's own tfm_dtype_from_f32, so include tfm.h's
   implementation first; for tests of what the reader does with such files, not of the block
   layouts); vectors are always f32, as the format requires. */
#ifndef TFM_WRITER_H
#define TFM_WRITER_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TW_HEADER_BYTES 256
#define TW_ENTRY_BYTES 128
#define TW_ALIGN 64

typedef struct tw_header { /* the configuration fields, in header order (tfm.h's enums) */
    int arch, n_vocab, n_ctx, n_layers, n_heads, n_kv_heads, d_model, d_head, d_ff, rope_dim;
    float theta, eps;
    int norm, act, ffn, residual, pos;
} tw_header;

typedef struct tw_tensor {
    const char *name;
    int rows, cols;  /* cols 0: a vector of rows elements */
    int f16;         /* a matrix stored as f16 (v holds values exact in f16) */
    const float *v;  /* rows * max(cols, 1) values, row-major */
    int dtype;       /* a matrix of this tfm_dtype (0: f32, or f16 with .f16) */
} tw_tensor;

static inline void tw_put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static inline void tw_put_u64(unsigned char *p, uint64_t v) { tw_put_u32(p, (uint32_t)v); tw_put_u32(p + 4, (uint32_t)(v >> 32)); }
static inline void tw_put_f32(unsigned char *p, float f) { uint32_t u; memcpy(&u, &f, 4); tw_put_u32(p, u); }
static inline size_t tw_align(size_t n) { return (n + TW_ALIGN - 1) & ~(size_t)(TW_ALIGN - 1); }

static inline uint16_t tw_f32_to_f16(float f) { /* round to nearest even; normal and subnormal range */
    uint32_t x, sign, mant, half, rem;
    int exp;
    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000u;
    exp = (int)((x >> 23) & 0xffu) - 127 + 15;
    mant = x & 0x7fffffu;
    if (((x >> 23) & 0xffu) == 0xffu) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        int shift;
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        shift = 14 - exp;
        half = mant >> shift;
        rem = mant & ((1u << shift) - 1u);
        if (rem > (1u << (shift - 1)) || (rem == (1u << (shift - 1)) && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    half = ((uint32_t)exp << 10) | (mant >> 13);
    rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
    return (uint16_t)(sign | half);
}

/* The stored dtype of t and its data bytes. */
static inline uint32_t tw_dtype(const tw_tensor *t) { return !t->cols ? 0u : t->dtype ? (uint32_t)t->dtype : t->f16 ? 1u : 0u; }
static inline size_t tw_bytes(const tw_tensor *t) {
    size_t n = (size_t)t->rows * (size_t)(t->cols ? t->cols : 1);
#ifdef TFM_IMPLEMENTATION_INCLUDED
    if (tw_dtype(t) > 1) return (size_t)t->rows * tfm_dtype_row_bytes((tfm_dtype)t->dtype, (size_t)t->cols);
#endif
    return n * (tw_dtype(t) == 1 ? 2u : 4u);
}

static inline void tw_write_header(unsigned char *f, const tw_header *h, int n_tensors, size_t blob_at,
                                   size_t blob_bytes) {
    memcpy(f, "TFMODEL", 8); /* with its NUL */
    tw_put_u32(f + 8, 1); tw_put_u32(f + 12, TW_HEADER_BYTES); tw_put_u32(f + 16, (uint32_t)h->arch);
    tw_put_u32(f + 20, (uint32_t)h->n_vocab); tw_put_u32(f + 24, (uint32_t)h->n_ctx);
    tw_put_u32(f + 28, (uint32_t)h->n_layers); tw_put_u32(f + 32, (uint32_t)h->n_heads);
    tw_put_u32(f + 36, (uint32_t)h->n_kv_heads); tw_put_u32(f + 40, (uint32_t)h->d_model);
    tw_put_u32(f + 44, (uint32_t)h->d_head); tw_put_u32(f + 48, (uint32_t)h->d_ff);
    tw_put_u32(f + 52, (uint32_t)h->rope_dim); tw_put_f32(f + 56, h->theta); tw_put_f32(f + 60, h->eps);
    tw_put_u32(f + 64, (uint32_t)h->norm); tw_put_u32(f + 68, (uint32_t)h->act); tw_put_u32(f + 72, (uint32_t)h->ffn);
    tw_put_u32(f + 76, (uint32_t)h->residual); tw_put_u32(f + 80, (uint32_t)h->pos); tw_put_u32(f + 84, (uint32_t)n_tensors);
    tw_put_u64(f + 88, TW_HEADER_BYTES); tw_put_u64(f + 96, blob_at); tw_put_u64(f + 104, blob_bytes);
}

/* The whole file in one calloc'ed buffer (NULL when out of memory); *out_bytes its size. */
static inline unsigned char *tw_write(const tw_header *h, const tw_tensor *t, int n_tensors, const void *blob,
                                      size_t blob_bytes, size_t *out_bytes) {
    size_t at = tw_align(TW_HEADER_BYTES + (size_t)n_tensors * TW_ENTRY_BYTES), blob_at = 0, total, off;
    unsigned char *f;
    int i;
    if (blob_bytes) { blob_at = at; at += blob_bytes; }
    for (i = 0; i < n_tensors; i++) at = tw_align(at) + tw_bytes(&t[i]);
    total = n_tensors ? tw_align(at) : at;
    f = (unsigned char *)calloc(1, total ? total : 1);
    if (!f) return NULL;
    tw_write_header(f, h, n_tensors, blob_at, blob_bytes);
    if (blob_bytes) memcpy(f + blob_at, blob, blob_bytes);
    off = blob_bytes ? blob_at + blob_bytes : TW_HEADER_BYTES + (size_t)n_tensors * TW_ENTRY_BYTES;
    for (i = 0; i < n_tensors; i++) {
        unsigned char *e = f + TW_HEADER_BYTES + (size_t)i * TW_ENTRY_BYTES;
        size_t n = (size_t)t[i].rows * (size_t)(t[i].cols ? t[i].cols : 1), k;
        uint32_t dtype = tw_dtype(&t[i]);
        off = tw_align(off);
        memcpy(e, t[i].name, strlen(t[i].name)); /* < 64 bytes, NUL-padded */
        tw_put_u32(e + 64, dtype);
        tw_put_u32(e + 68, t[i].cols ? 2u : 1u);
        tw_put_u64(e + 72, (uint64_t)t[i].rows);
        if (t[i].cols) tw_put_u64(e + 80, (uint64_t)t[i].cols);
        tw_put_u64(e + 104, off);
        tw_put_u64(e + 112, tw_bytes(&t[i]));
#ifdef TFM_IMPLEMENTATION_INCLUDED
        if (dtype > 1) tfm_dtype_from_f32((tfm_dtype)dtype, t[i].v, f + off, n);
#endif
        for (k = 0; k < n && dtype <= 1; k++) {
            if (dtype == 1) { uint16_t x = tw_f32_to_f16(t[i].v[k]); f[off + 2 * k] = (unsigned char)x; f[off + 2 * k + 1] = (unsigned char)(x >> 8); }
            else tw_put_f32(f + off + 4 * k, t[i].v[k]);
        }
        off += tw_bytes(&t[i]);
    }
    *out_bytes = total;
    return f;
}
#endif
