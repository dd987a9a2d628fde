/* gguf.h - a strict reader of GGUF files (versions 2 and 3, little-endian) for tfm-convert.

   GGUF layout (ggml docs/gguf.md):
       u32 magic "GGUF", u32 version, u64 n_tensors, u64 n_kv        (v1 used u32 counts: rejected)
       n_kv x { string key, u32 value_type, value }
       n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
       zero padding to general.alignment (default 32), then the tensor data; offsets are
       relative to the start of the data and aligned.
   A string is u64 length + bytes (no NUL). An array is u32 element type, u64 count, elements.
   Dimensions are reversed against PyTorch: ne[0] is the row length (fastest varying).

   Usage: gguf_parse(bytes, size, &file, err, sizeof err) over a whole file in memory (mapped),
   then gguf_find / gguf_get_* / file.tensors. Every count, length and offset is checked
   against the buffer before use; nothing here trusts the file. gguf_free releases the arrays.
   gguf_dequantize_block decodes one block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (32 elements) or
   Q4_K, Q5_K, Q6_K (256) into floats (layouts documented at the function); tensors of other
   types are refused by gguf_parse, naming the type.
*/
#ifndef GGUF_H
#define GGUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define GGUF_FN static __attribute__((unused))
#else
#define GGUF_FN static
#endif

enum gguf_value_type {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
    GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10,
    GGUF_I64 = 11, GGUF_F64 = 12, GGUF_N_VALUE_TYPES = 13
};

/* ggml tensor types this reader knows the size of (others are rejected by name). */
enum gguf_tensor_type {
    GGUF_TYPE_F32 = 0, GGUF_TYPE_F16 = 1, GGUF_TYPE_Q4_0 = 2, GGUF_TYPE_Q4_1 = 3,
    GGUF_TYPE_Q5_0 = 6, GGUF_TYPE_Q5_1 = 7, GGUF_TYPE_Q8_0 = 8, GGUF_TYPE_Q4_K = 12,
    GGUF_TYPE_Q5_K = 13, GGUF_TYPE_Q6_K = 14, GGUF_TYPE_BF16 = 30
};

#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NAME 64            /* tensor name limit in llama.cpp */
#define GGUF_MAX_KEY 65535
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_COUNT (1u << 24)   /* kv pairs and array elements: far above real files */
#define GGUF_MAX_TENSORS 65536      /* duplicate-name check is quadratic */

typedef struct gguf_string { const char *bytes; uint64_t n_bytes; } gguf_string;

typedef struct gguf_kv {
    gguf_string key;
    uint32_t type;            /* gguf_value_type */
    uint32_t elem_type;       /* for arrays */
    uint64_t n_elems;         /* for arrays */
    const unsigned char *value; /* the value (for arrays: the first element) */
    uint64_t value_bytes;     /* bytes the whole value takes in the file */
} gguf_kv;

typedef struct gguf_tensor {
    char name[GGUF_MAX_NAME + 1];
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* ne[0] = row length; unused dims are 1 */
    uint32_t type;
    uint64_t offset;            /* from the start of the data section */
    uint64_t n_bytes;
    const unsigned char *data;
} gguf_tensor;

typedef struct gguf_file {
    uint32_t version;
    uint64_t n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    uint64_t alignment;
    uint64_t data_offset;
} gguf_file;

/* --- bounded cursor over the file --- */
typedef struct gguf__cur { const unsigned char *p; uint64_t pos, size; bool ok; } gguf__cur;

GGUF_FN bool gguf__need(gguf__cur *c, uint64_t n) {
    if (!c->ok || n > c->size - c->pos) c->ok = false;
    return c->ok;
}
GGUF_FN uint64_t gguf__le(const unsigned char *p, int n) {
    uint64_t v = 0;
    int i;
    for (i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
GGUF_FN uint64_t gguf__uint(gguf__cur *c, int n) {
    uint64_t v;
    if (!gguf__need(c, (uint64_t)n)) return 0;
    v = gguf__le(c->p + c->pos, n);
    c->pos += (uint64_t)n;
    return v;
}
GGUF_FN gguf_string gguf__string(gguf__cur *c, uint64_t max_bytes) {
    gguf_string s = {NULL, 0};
    uint64_t n = gguf__uint(c, 8);
    if (n > max_bytes || !gguf__need(c, n)) { c->ok = false; return s; }
    s.bytes = (const char *)(c->p + c->pos);
    s.n_bytes = n;
    c->pos += n;
    return s;
}

GGUF_FN uint64_t gguf__scalar_bytes(uint32_t type) {
    static const unsigned char sizes[GGUF_N_VALUE_TYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < GGUF_N_VALUE_TYPES ? sizes[type] : 0;
}

/* Skip one value of `type`, nested arrays allowed to depth 2 (arrays of arrays are rare). */
GGUF_FN void gguf__skip_value(gguf__cur *c, uint32_t type, int depth) {
    uint64_t i, n, size;
    uint32_t elem;
    if (type == GGUF_STRING) { gguf__string(c, (uint64_t)1 << 32); return; }
    if (type == GGUF_ARRAY) {
        elem = (uint32_t)gguf__uint(c, 4);
        n = gguf__uint(c, 8);
        if (depth > 1 || n > GGUF_MAX_COUNT * 16ull) { c->ok = false; return; }
        size = gguf__scalar_bytes(elem);
        if (size) {
            if (!gguf__need(c, n * size)) return; /* n * size cannot overflow: both small */
            c->pos += n * size;
            return;
        }
        if (elem != GGUF_STRING && elem != GGUF_ARRAY) { c->ok = false; return; }
        for (i = 0; i < n && c->ok; i++) gguf__skip_value(c, elem, depth + 1);
        return;
    }
    size = gguf__scalar_bytes(type);
    if (!size) { c->ok = false; return; }
    gguf__uint(c, (int)size);
}

#define GGUF_QK 32         /* elements per block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 */
#define GGUF_QK_K 256      /* elements per block of the k-quants Q4_K, Q5_K, Q6_K */
#define GGUF_MAX_BLOCK 256 /* the larger of the two */

/* Elements per block of a quantized type (0: not a block type this reader decodes). */
GGUF_FN size_t gguf_block_elems(uint32_t type) {
    switch (type) {
    case GGUF_TYPE_Q4_0: case GGUF_TYPE_Q4_1: case GGUF_TYPE_Q5_0: case GGUF_TYPE_Q5_1:
    case GGUF_TYPE_Q8_0: return GGUF_QK;
    case GGUF_TYPE_Q4_K: case GGUF_TYPE_Q5_K: case GGUF_TYPE_Q6_K: return GGUF_QK_K;
    default: return 0;
    }
}

/* Bytes of one block of a quantized type (0: not a block type this reader decodes). */
GGUF_FN size_t gguf_block_bytes(uint32_t type) {
    switch (type) {
    case GGUF_TYPE_Q4_0: return 18;
    case GGUF_TYPE_Q4_1: return 20;
    case GGUF_TYPE_Q5_0: return 22;
    case GGUF_TYPE_Q5_1: return 24;
    case GGUF_TYPE_Q8_0: return 34;
    case GGUF_TYPE_Q4_K: return 144;
    case GGUF_TYPE_Q5_K: return 176;
    case GGUF_TYPE_Q6_K: return 210;
    default: return 0;
    }
}

/* Bytes of a tensor of this type with ne[0] per row and n elements; 0 if unknown or bad. */
GGUF_FN uint64_t gguf__tensor_bytes(uint32_t type, uint64_t ne0, uint64_t n) {
    uint64_t block = gguf_block_elems(type), bytes = gguf_block_bytes(type);
    if (type == GGUF_TYPE_F32) { block = 1; bytes = 4; }
    if (type == GGUF_TYPE_F16 || type == GGUF_TYPE_BF16) { block = 1; bytes = 2; }
    if (!block || ne0 % block) return 0;
    return n / block * bytes;
}

/* --- dequantization (ggml src/ggml-common.h block layouts; REFERENCE.md D.1) ---
   The first five types cover GGUF_QK = 32 consecutive elements along ne0 and start with a
   little-endian fp16 scale d:
     Q8_0 (34 bytes): d, int8 q[32];                          x[j] = d * q[j]
     Q4_0 (18 bytes): d, u8 qs[16];                           x[j] = d * (nib[j] - 8)
     Q4_1 (20 bytes): d, fp16 m, u8 qs[16];                   x[j] = d * nib[j] + m
     Q5_0 (22 bytes): d, u32 qh, u8 qs[16];                   x[j] = d * (nib[j] | hi[j] << 4) - 16d
     Q5_1 (24 bytes): d, fp16 m, u32 qh, u8 qs[16];           x[j] = d * (nib[j] | hi[j] << 4) + m
   where for j < 16 nib[j] is the LOW nibble of qs[j] and nib[j + 16] the HIGH nibble of qs[j]
   (not element pairs), and hi[j] is bit j of the little-endian u32 qh.
   The k-quants cover GGUF_QK_K = 256 elements in 8 sub-blocks of 32 (Q6_K: 16 of 16):
     Q4_K (144 bytes): fp16 d, fp16 dmin, u8 scales[12], u8 qs[128]
     Q5_K (176 bytes): fp16 d, fp16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]
     Q6_K (210 bytes): u8 ql[128], u8 qh[64], int8 sc[16], fp16 d        (d comes LAST)
   Q4_K/Q5_K: sub-block s has a 6-bit scale sc and min m packed in scales[]: s < 4: sc =
   scales[s] & 63, m = scales[s + 4] & 63; s >= 4: sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6)
   << 4, m = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4. Each 64 elements (sub-blocks 2k,
   2k + 1) read the 32 bytes qs[32k ..]: element l of sub-block 2k is the low nibble of
   qs[32k + l], of sub-block 2k + 1 the high nibble; Q5_K adds bit 2k (resp. 2k + 1) of qh[l]
   as bit 4. x = (d * sc) * q - (dmin * m).
   Q6_K: per 128 elements (half h: ql += 64h, qh += 32h, sc += 8h), for l < 32: element l =
   low nibble of ql[l] | (qh[l] bits 0-1) << 4, l + 32 = low nibble of ql[l + 32] | bits 2-3,
   l + 64 = high nibble of ql[l] | bits 4-5, l + 96 = high nibble of ql[l + 32] | bits 6-7;
   x = (d * sc[e / 16]) * (q - 32), e the element's index in the half. */

GGUF_FN float gguf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
    float f;
    if (exp == 0x1f) x = sign | 0x7f800000u | (mant << 13);          /* inf, NaN */
    else if (exp) x = sign | ((exp + 112u) << 23) | (mant << 13);     /* normal: rebias 15 -> 127 */
    else if (!mant) x = sign;                                         /* +-0 */
    else { /* subnormal: mant * 2^-24, exact in f32 */
        f = (float)mant * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    memcpy(&f, &x, sizeof f);
    return f;
}

/* Sub-block s (0..7) of a Q4_K / Q5_K block: 6-bit scale and min from the 12 packed bytes. */
GGUF_FN void gguf__scale_min_k4(int s, const unsigned char *scales, int *sc, int *m) {
    if (s < 4) {
        *sc = scales[s] & 63;
        *m = scales[s + 4] & 63;
    } else {
        *sc = (scales[s + 4] & 15) | ((scales[s - 4] >> 6) << 4);
        *m = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
    }
}

/* Q4_K or Q5_K (five) block -> 256 floats. */
GGUF_FN void gguf__dequantize_q45_k(const unsigned char *b, bool five, float *out) {
    float d = gguf_f16_to_f32((uint16_t)gguf__le(b, 2));
    float dmin = gguf_f16_to_f32((uint16_t)gguf__le(b + 2, 2));
    const unsigned char *scales = b + 4, *qh = b + 16, *qs = b + (five ? 48 : 16);
    int k, l, sc, m;
    for (k = 0; k < 4; k++) { /* 64 elements: sub-blocks 2k (low nibbles), 2k + 1 (high) */
        const unsigned char *q = qs + 32 * k;
        float d1, m1, d2, m2;
        gguf__scale_min_k4(2 * k, scales, &sc, &m);
        d1 = d * (float)sc;
        m1 = dmin * (float)m;
        gguf__scale_min_k4(2 * k + 1, scales, &sc, &m);
        d2 = d * (float)sc;
        m2 = dmin * (float)m;
        for (l = 0; l < 32; l++) {
            int lo = q[l] & 15, hi = q[l] >> 4;
            if (five) {
                lo |= ((qh[l] >> (2 * k)) & 1) << 4;
                hi |= ((qh[l] >> (2 * k + 1)) & 1) << 4;
            }
            out[64 * k + l] = d1 * (float)lo - m1;
            out[64 * k + 32 + l] = d2 * (float)hi - m2;
        }
    }
}

/* Q6_K block -> 256 floats. */
GGUF_FN void gguf__dequantize_q6_k(const unsigned char *b, float *out) {
    float d = gguf_f16_to_f32((uint16_t)gguf__le(b + 208, 2));
    int h, l;
    for (h = 0; h < 2; h++) {
        const unsigned char *ql = b + 64 * h, *qh = b + 128 + 32 * h, *sc = b + 192 + 8 * h;
        float *y = out + 128 * h;
        for (l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * (float)(int8_t)sc[is] * (float)q1;
            y[l + 32] = d * (float)(int8_t)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)(int8_t)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)(int8_t)sc[is + 6] * (float)q4;
        }
    }
}

/* One block of a quantized type -> gguf_block_elems(type) floats (layouts above); false for
   other types. */
GGUF_FN bool gguf_dequantize_block(uint32_t type, const unsigned char *b, float *out) {
    float d = gguf_f16_to_f32((uint16_t)gguf__le(b, 2)), m = 0.0f;
    const unsigned char *qs;
    uint32_t qh = 0;
    int j;
    switch (type) {
    case GGUF_TYPE_Q4_K: gguf__dequantize_q45_k(b, false, out); return true;
    case GGUF_TYPE_Q5_K: gguf__dequantize_q45_k(b, true, out); return true;
    case GGUF_TYPE_Q6_K: gguf__dequantize_q6_k(b, out); return true;
    case GGUF_TYPE_Q8_0:
        for (j = 0; j < GGUF_QK; j++) out[j] = d * (float)(int8_t)b[2 + j];
        return true;
    case GGUF_TYPE_Q4_0: qs = b + 2; break;
    case GGUF_TYPE_Q4_1: m = gguf_f16_to_f32((uint16_t)gguf__le(b + 2, 2)); qs = b + 4; break;
    case GGUF_TYPE_Q5_0: qh = (uint32_t)gguf__le(b + 2, 4); qs = b + 6; break;
    case GGUF_TYPE_Q5_1:
        m = gguf_f16_to_f32((uint16_t)gguf__le(b + 2, 2));
        qh = (uint32_t)gguf__le(b + 4, 4);
        qs = b + 8;
        break;
    default: return false;
    }
    for (j = 0; j < GGUF_QK / 2; j++) {
        int lo = qs[j] & 0x0f, hi = qs[j] >> 4;
        if (type == GGUF_TYPE_Q5_0 || type == GGUF_TYPE_Q5_1) {
            lo |= (int)((qh >> j) & 1u) << 4;
            hi |= (int)((qh >> (j + 16)) & 1u) << 4;
        }
        if (type == GGUF_TYPE_Q4_0) { lo -= 8; hi -= 8; }
        if (type == GGUF_TYPE_Q5_0) { lo -= 16; hi -= 16; }
        out[j] = d * (float)lo + m;
        out[j + GGUF_QK / 2] = d * (float)hi + m;
    }
    return true;
}

GGUF_FN void gguf_free(gguf_file *f) {
    free(f->kv);
    free(f->tensors);
    memset(f, 0, sizeof *f);
}

#define GGUF__FAIL(...) do { snprintf(err, err_bytes, __VA_ARGS__); gguf_free(f); return false; } while (0)

GGUF_FN bool gguf__key_is(const gguf_kv *kv, const char *key) {
    size_t n = strlen(key);
    return kv->key.n_bytes == n && memcmp(kv->key.bytes, key, n) == 0;
}

GGUF_FN const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
    uint64_t i;
    for (i = 0; i < f->n_kv; i++)
        if (gguf__key_is(&f->kv[i], key)) return &f->kv[i];
    return NULL;
}

/* Any integer-typed value (counts may be stored as u32 or u64), or a bool. */
GGUF_FN bool gguf_get_int(const gguf_file *f, const char *key, int64_t *out) {
    const gguf_kv *kv = gguf_find(f, key);
    uint64_t v;
    if (!kv) return false;
    switch (kv->type) {
    case GGUF_U8: case GGUF_BOOL: *out = kv->value[0]; return true;
    case GGUF_I8: *out = (int8_t)kv->value[0]; return true;
    case GGUF_U16: *out = (int64_t)gguf__le(kv->value, 2); return true;
    case GGUF_I16: *out = (int16_t)gguf__le(kv->value, 2); return true;
    case GGUF_U32: *out = (int64_t)gguf__le(kv->value, 4); return true;
    case GGUF_I32: *out = (int32_t)(uint32_t)gguf__le(kv->value, 4); return true;
    case GGUF_U64: case GGUF_I64:
        v = gguf__le(kv->value, 8);
        if (kv->type == GGUF_U64 && v > (uint64_t)INT64_MAX) return false;
        memcpy(out, &v, sizeof v);
        return true;
    default: return false;
    }
}

GGUF_FN bool gguf_get_float(const gguf_file *f, const char *key, double *out) {
    const gguf_kv *kv = gguf_find(f, key);
    uint32_t u32;
    uint64_t u64;
    float f32;
    int64_t i;
    if (!kv) return false;
    if (kv->type == GGUF_F32) {
        u32 = (uint32_t)gguf__le(kv->value, 4);
        memcpy(&f32, &u32, 4);
        *out = f32;
        return true;
    }
    if (kv->type == GGUF_F64) {
        u64 = gguf__le(kv->value, 8);
        memcpy(out, &u64, 8);
        return true;
    }
    if (gguf_get_int(f, key, &i)) { *out = (double)i; return true; }
    return false;
}

GGUF_FN bool gguf_get_string(const gguf_file *f, const char *key, gguf_string *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type != GGUF_STRING) return false;
    out->n_bytes = gguf__le(kv->value, 8);
    out->bytes = (const char *)kv->value + 8;
    return true;
}

/* Element i of a string array (index checked; walks the array: O(i)). Use gguf_string_iter
   for whole arrays. */
typedef struct gguf_string_iter { const unsigned char *p; uint64_t left; } gguf_string_iter;
GGUF_FN bool gguf_string_array(const gguf_file *f, const char *key, gguf_string_iter *it, uint64_t *n) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type != GGUF_ARRAY || kv->elem_type != GGUF_STRING) return false;
    it->p = kv->value;
    it->left = kv->n_elems;
    *n = kv->n_elems;
    return true;
}
/* Strings were bounds-checked by gguf_parse, so walking them again needs no checks. */
GGUF_FN gguf_string gguf_string_next(gguf_string_iter *it) {
    gguf_string s = {NULL, 0};
    if (!it->left) return s;
    s.n_bytes = gguf__le(it->p, 8);
    s.bytes = (const char *)it->p + 8;
    it->p += 8 + s.n_bytes;
    it->left--;
    return s;
}

/* Parse the header, metadata and tensor infos of a whole GGUF file held in memory. */
GGUF_FN bool gguf_parse(const unsigned char *bytes, uint64_t size, gguf_file *f, char *err, size_t err_bytes) {
    gguf__cur c;
    uint64_t i, j, n_elems, end, start;
    int64_t align = GGUF_DEFAULT_ALIGNMENT;
    gguf_string name;
    memset(f, 0, sizeof *f);
    c.p = bytes; c.pos = 0; c.size = size; c.ok = true;
    if (size < 24 || memcmp(bytes, "GGUF", 4) != 0) GGUF__FAIL("not a GGUF file (bad magic)");
    c.pos = 4;
    f->version = (uint32_t)gguf__uint(&c, 4);
    if (f->version == 0x02000000u || f->version == 0x03000000u)
        GGUF__FAIL("big-endian GGUF (version %u byte-swapped) is not supported", (unsigned)(f->version >> 24));
    if (f->version != 2 && f->version != 3)
        GGUF__FAIL("GGUF version %u is not supported (2 and 3 are)", (unsigned)f->version);
    f->n_tensors = gguf__uint(&c, 8);
    f->n_kv = gguf__uint(&c, 8);
    /* each kv takes at least 13 bytes (key length, type, a 1-byte value) and each tensor info
       at least 32: larger counts cannot fit, so they never size an allocation */
    if (f->n_tensors > GGUF_MAX_TENSORS || f->n_kv > GGUF_MAX_COUNT || f->n_kv > size / 13 ||
        f->n_tensors > size / 32)
        GGUF__FAIL("GGUF counts out of range (%llu tensors, %llu keys)",
                   (unsigned long long)f->n_tensors, (unsigned long long)f->n_kv);
    f->kv = (gguf_kv *)calloc(f->n_kv ? f->n_kv : 1, sizeof *f->kv);
    f->tensors = (gguf_tensor *)calloc(f->n_tensors ? f->n_tensors : 1, sizeof *f->tensors);
    if (!f->kv || !f->tensors) GGUF__FAIL("out of memory");
    for (i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        kv->key = gguf__string(&c, GGUF_MAX_KEY);
        kv->type = (uint32_t)gguf__uint(&c, 4);
        start = c.pos;
        if (!c.ok) GGUF__FAIL("GGUF metadata %llu: truncated", (unsigned long long)i);
        kv->value = bytes + start;
        if (kv->type == GGUF_ARRAY) {
            kv->elem_type = (uint32_t)gguf__uint(&c, 4);
            kv->n_elems = gguf__uint(&c, 8);
            kv->value = bytes + c.pos;
            c.pos = start;
        }
        gguf__skip_value(&c, kv->type, 0);
        if (!c.ok) GGUF__FAIL("GGUF metadata '%.*s': bad or truncated value",
                              (int)(kv->key.n_bytes > 200 ? 200 : kv->key.n_bytes), kv->key.bytes);
        kv->value_bytes = c.pos - start;
    }
    if (gguf_find(f, "general.alignment") && !gguf_get_int(f, "general.alignment", &align))
        GGUF__FAIL("general.alignment is not an integer");
    if (align < 8 || align > 65536 || (align & (align - 1)))
        GGUF__FAIL("general.alignment %lld is not a power of two in 8..65536", (long long)align);
    f->alignment = (uint64_t)align;
    for (i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        name = gguf__string(&c, GGUF_MAX_NAME);
        t->n_dims = (uint32_t)gguf__uint(&c, 4);
        if (!c.ok) GGUF__FAIL("GGUF tensor %llu: truncated info", (unsigned long long)i);
        if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
            GGUF__FAIL("GGUF tensor %.*s: %u dims", (int)name.n_bytes, name.bytes, (unsigned)t->n_dims);
        if (memchr(name.bytes, '\0', (size_t)name.n_bytes))
            GGUF__FAIL("GGUF tensor %llu: the name contains a NUL byte", (unsigned long long)i);
        memcpy(t->name, name.bytes, (size_t)name.n_bytes);
        t->name[name.n_bytes] = '\0';
        n_elems = 1;
        for (j = 0; j < GGUF_MAX_DIMS; j++) {
            t->ne[j] = j < t->n_dims ? gguf__uint(&c, 8) : 1;
            if (t->ne[j] == 0 || t->ne[j] > ((uint64_t)1 << 40) / n_elems)
                GGUF__FAIL("GGUF tensor %s: bad dimension", t->name);
            n_elems *= t->ne[j];
        }
        t->type = (uint32_t)gguf__uint(&c, 4);
        t->offset = gguf__uint(&c, 8);
        if (!c.ok) GGUF__FAIL("GGUF tensor %s: truncated info", t->name);
        t->n_bytes = gguf__tensor_bytes(t->type, t->ne[0], n_elems);
        if (!t->n_bytes)
            GGUF__FAIL("GGUF tensor %s: ggml type %u is not supported (F32, F16, BF16, Q4_0, "
                       "Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K), or its rows of %llu do not "
                       "fill its blocks (32 or 256 elements)",
                       t->name, (unsigned)t->type, (unsigned long long)t->ne[0]);
        if (t->offset % f->alignment) GGUF__FAIL("GGUF tensor %s: misaligned offset", t->name);
    }
    f->data_offset = (c.pos + f->alignment - 1) / f->alignment * f->alignment;
    for (i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        if (f->data_offset > size || t->offset > size - f->data_offset ||
            t->n_bytes > size - f->data_offset - t->offset)
            GGUF__FAIL("GGUF tensor %s: data past the end of the file", t->name);
        end = f->data_offset + t->offset;
        t->data = bytes + end;
        for (j = 0; j < i; j++)
            if (strcmp(f->tensors[j].name, t->name) == 0) GGUF__FAIL("GGUF tensor %s appears twice", t->name);
    }
    return true;
}

#endif
