/* tfm-convert - Hugging Face checkpoint (config.json + safetensors + tokenizer) to .tfm.

   USAGE
       tfm-convert MODEL_DIR -o out.tfm [--type f32|f16] [--quiet] [--check]
       tfm-convert --vocab-only SRC -o vocab.tfm   SRC: tokenizer.json, or a dir holding it or
                                                   vocab.json + merges.txt
       tfm-convert MODEL.bin [--tokenizer tokenizer.bin] -o out.tfm [--type f32|f16] [--quiet]
                   [--check]                   a llama2.c checkpoint (tools/convert_llama2c.c)
       tfm-convert FILE.gguf -o out.tfm [--type f32|f16] [--quiet] [--check]
       tfm-convert --vocab-only FILE.gguf -o vocab.tfm   GGUF (tools/convert_gguf.c)
       tfm-convert --help

   model_type: gpt_neox, gpt2, llama, phi, gptj, starcoder2. Source dtypes F32, F16, BF16;
   matrices are written as --type (default f32), vectors (norms, biases) and learned position
   tables always f32. f32 -> f16 rounds to nearest even (subnormals, inf and NaN included).

   Writes exactly the format documented at the top of tfm.h (header, tensor directory,
   tokenizer blob, 64-byte aligned tensor data, every field little-endian and written byte by
   byte; the header, directory and layout through tools/tfm_write.c, shared with tfm-bench). Tensor data is streamed one tensor at a time in chunks; the output goes to OUT.tmp,
   renamed to OUT only when everything succeeded. Every failure is one "tfm-convert: error:"
   line (naming the file, key or tensor, and both shapes on a mismatch) and exit status 1.

   ADDING AN ARCHITECTURE (see >>arch): one tc_arch entry =
     - a config reader: config.json keys -> tc_hparams (the .tfm header fields), with the
       typed helpers of >>config (missing/null -> default, wrong type -> error) and
       tc_cfg_rope for RoPE (rope_parameters, then legacy keys, then defaults);
     - a tensor table: HF name (printf %d = layer) -> .tfm name(s), the expected checkpoint
       shape in symbolic dims (TC_DIM_*), presence flags (TC_IF_ATTN_BIAS, TC_IF_MLP_BIAS,
       TC_IF_UNTIED), a layout op (copy, fused q/k/v split per head or in thirds) and
       TC_CONV1D for weights stored [in, out];
     - buffer suffixes to skip, and optional name prefixes ("transformer.").
   The checkpoint reader, the row-gather writer and the tokenizer are shared by all of them.
   The same architecture in GGUF is one gg_archs entry in tools/convert_gguf.c.

   Policy: a checkpoint tensor that no table entry uses (and that is not a known buffer) is an
   ERROR, so a half-understood checkpoint never turns silently into a wrong model. A present
   output head with tie_word_embeddings true is ignored with a warning, as Hugging Face does.

   SECTIONS: >>util >>safetensors >>config >>arch >>plan >>tokenizer >>writer >>check >>main
   The shared types and calls are declared in tools/convert.h, which the other importers use:
   tools/convert_gguf.c (GGUF files) and tools/convert_llama2c.c (llama2.c checkpoints,
   tokenizer.bin). */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "tools/convert.h"
#include "tools/gguf.h"
#include "tools/tfm_write.h"
#include "tools/quant.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if TFM_MAX_LAYERS != TC_MAX_LAYERS
#error "tools/convert.h's TC_MAX_LAYERS (the size of tc_hparams' layer table) must be tfm.h's TFM_MAX_LAYERS"
#endif

/* >>util -----------------------------------------------------------------------------------------
   Messages, whole-file reads, paths; tfm.h's own readers for the other units. */

#define TC_MAX_ST_HEADER_BYTES 100000000u         /* as the reference safetensors reader */
#define TC_CHUNK_BYTES ((size_t)4 << 20)          /* tensor data is streamed in chunks */
#define TC_LOG_BYTES 512                          /* one detail line from tfm.h's logger */
#define TC_PROGRESS_MIN_BYTES ((uint64_t)32 << 20) /* smaller outputs print no progress */

void tc_error(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "tfm-convert: error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

void tc_warn(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "tfm-convert: warning: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

char *tc_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = (char *)malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* dir + "/" + name, malloc'ed. */
static char *tc_path(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = (char *)malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* Something (a file, a FIFO, ...) is at path; reading it is tc_fopen's business. stat never
   blocks, where a probing fopen waits forever on a FIFO. */
static int tc_file_exists(const char *path) {
#if defined(__unix__) || defined(__APPLE__)
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
#else
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
#endif
}

/* fopen(path, "rb") for a regular file only: a FIFO, device or directory is refused (with a
   message unless quiet) before anything is read, as reading a FIFO blocks forever. */
FILE *tc_fopen(const char *path, int quiet) {
#if defined(__unix__) || defined(__APPLE__)
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK), regular; /* opening a FIFO O_NONBLOCK returns */
    if (fd < 0) return NULL;
    regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    close(fd);
    if (!regular) {
        if (!quiet) tc_error("%s: not a regular file (a FIFO, device or directory)", path);
        errno = EINVAL;
        return NULL;
    }
    return fopen(path, "rb");
#else
    (void)quiet;
    return fopen(path, "rb");
#endif
}

/* Size of an open file; leaves the position at the start. */
int tc_file_bytes(FILE *f, const char *path, uint64_t *out) {
    long end;
    if (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        tc_error("%s: cannot determine the file size", path);
        return 0;
    }
    *out = (uint64_t)end;
    return 1;
}

static int tc_seek(FILE *f, uint64_t offset, const char *path) {
    if (offset > (uint64_t)LONG_MAX || fseek(f, (long)offset, SEEK_SET) != 0) {
        tc_error("%s: cannot seek to byte %llu", path, (unsigned long long)offset);
        return 0;
    }
    return 1;
}

static int tc_read_at(FILE *f, const char *path, uint64_t offset, void *dst, size_t bytes) {
    if (!tc_seek(f, offset, path)) return 0;
    if (fread(dst, 1, bytes, f) != bytes) {
        tc_error("%s: short read of %lu bytes at byte %llu (truncated file?)", path,
                 (unsigned long)bytes, (unsigned long long)offset);
        return 0;
    }
    return 1;
}

/* Reads a whole file (NUL-terminated) of at most max_bytes. */
int tc_read_file(const char *path, size_t max_bytes, char **out, size_t *out_bytes) {
    FILE *f = tc_fopen(path, 0);
    uint64_t n;
    char *buf;
    *out = NULL;
    if (!f) {
        tc_error("cannot open %s: %s", path, strerror(errno));
        return 0;
    }
    if (!tc_file_bytes(f, path, &n)) { fclose(f); return 0; }
    if (n > max_bytes) {
        tc_error("%s: %llu bytes, more than the %lu allowed", path, (unsigned long long)n,
                 (unsigned long)max_bytes);
        fclose(f);
        return 0;
    }
    buf = (char *)malloc((size_t)n + 1);
    if (!buf) { tc_error("out of memory reading %s", path); fclose(f); return 0; }
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        tc_error("%s: read failed", path);
        free(buf);
        fclose(f);
        return 0;
    }
    fclose(f);
    buf[n] = '\0';
    *out = buf;
    *out_bytes = (size_t)n;
    return 1;
}

static int tc_read_json(const char *path, json_doc *doc) {
    char *text, err[160];
    size_t n;
    int ok;
    if (!tc_read_file(path, TC_MAX_JSON_BYTES, &text, &n)) return 0;
    ok = json_parse(text, n, doc, err, sizeof err);
    free(text);
    if (!ok) tc_error("%s: %s", path, err);
    return ok;
}

uint32_t tc_rd_u32(const unsigned char *p) { return tfm__rd_u32(p); }
float tc_rd_f32(const unsigned char *p) { return tfm__rd_f32(p); }
uint32_t tc_max_vocab(void) { return (uint32_t)TFM_MAX_VOCAB; }

int tc_map_open(const char *path, tc_map *m) {
    tfm_model_desc md;
    tfm_allocator a;
    tfm__file *f = (tfm__file *)calloc(1, sizeof *f);
    memset(m, 0, sizeof *m);
    memset(&md, 0, sizeof md);
    memset(&a, 0, sizeof a);
    md.path = path;
    if (!f || tfm__file_open(&md, &a, NULL, f) != TFM_OK) {
        free(f);
        return 0;
    }
    m->data = f->data;
    m->data_bytes = f->data_bytes;
    m->file = f;
    return 1;
}

void tc_map_close(tc_map *m) {
    tfm_allocator a;
    memset(&a, 0, sizeof a);
    if (m->file) tfm__file_close((tfm__file *)m->file, &a);
    free(m->file);
    memset(m, 0, sizeof *m);
}

/* a * b for sizes from files; 0 on overflow. */
static int tc_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

static void tc_shape_str(char *buf, size_t cap, int rank, const uint64_t *shape) {
    size_t o = 0;
    int i;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (i = 0; i < rank && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%llu", i ? ", " : "", (unsigned long long)shape[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}


/* >>safetensors ----------------------------------------------------------------------------------
   A checkpoint is one model.safetensors or the shards named by model.safetensors.index.json.
   Each header is validated in full before any data is read: size, JSON, dtype and shape
   against the byte range, ranges inside the file, no overlaps and no holes. */

static const struct { const char *name; unsigned bits; } tc_st_dtypes[] = {
    {"F32", 32}, {"F16", 16}, {"BF16", 16}, {"F64", 64}, {"I64", 64}, {"U64", 64}, {"I32", 32},
    {"U32", 32}, {"I16", 16}, {"U16", 16}, {"I8", 8}, {"U8", 8}, {"BOOL", 8}, {"C64", 64},
    {"F8_E4M3", 8}, {"F8_E5M2", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"F8_E8M0", 8},
};

void tc_checkpoint_free(tc_checkpoint *c) {
    int i;
    for (i = 0; i < c->n_shards; i++) {
        if (c->shards[i].file) fclose(c->shards[i].file);
        free(c->shards[i].path);
        json_free(&c->shards[i].header);
    }
    free(c->shards);
    free(c->tensors);
    memset(c, 0, sizeof *c);
}

static int tc_cmp_tensor_name(const void *a, const void *b) {
    return strcmp(((const tc_tensor *)a)->name, ((const tc_tensor *)b)->name);
}

static int tc_cmp_tensor_offset(const void *a, const void *b) {
    const tc_tensor *x = *(const tc_tensor *const *)a, *y = *(const tc_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : 0;
}

tc_tensor *tc_find_tensor(const tc_checkpoint *c, const char *name) {
    tc_tensor key;
    key.name = name;
    if (c->n_tensors == 0) return NULL; /* tensors is NULL: bsearch and qsort may not see it */
    return (tc_tensor *)bsearch(&key, c->tensors, c->n_tensors, sizeof key, tc_cmp_tensor_name);
}

/* One header entry {"dtype", "shape", "data_offsets"} into t; data_bytes = the buffer size. */
static int tc_st_entry(const json_doc *d, const json_node *e, const char *path, uint64_t data_start,
                       uint64_t data_bytes, tc_tensor *t) {
    const json_node *dt = json_get(d, e, "dtype"), *sh = json_get(d, e, "shape");
    const json_node *offs = json_get(d, e, "data_offsets"), *v;
    uint64_t n = 1, begin, end, need = 0;
    unsigned bits = 0;
    size_t i;
    if (e->type != JSON_OBJECT || !dt || dt->type != JSON_STRING || !sh || sh->type != JSON_ARRAY ||
        !offs || offs->type != JSON_ARRAY || offs->n_children != 2) {
        tc_error("%s: tensor %s: header entry needs dtype, shape and data_offsets [begin, end]",
                 path, t->name);
        return 0;
    }
    for (i = 0; i < sizeof tc_st_dtypes / sizeof tc_st_dtypes[0]; i++)
        if (json_str_is(d, dt, tc_st_dtypes[i].name)) bits = tc_st_dtypes[i].bits;
    if (!bits) {
        tc_error("%s: tensor %s: unknown or unsupported dtype %s", path, t->name, json_str(d, dt));
        return 0;
    }
    t->dtype_name = json_str(d, dt);
    t->dtype = strcmp(t->dtype_name, "F32") == 0 ? TC_F32 : strcmp(t->dtype_name, "F16") == 0 ? TC_F16
             : strcmp(t->dtype_name, "BF16") == 0 ? TC_BF16 : TC_OTHER;
    if (sh->n_children > TC_MAX_RANK) {
        tc_error("%s: tensor %s: rank %u is too large", path, t->name, sh->n_children);
        return 0;
    }
    t->rank = (int)sh->n_children;
    for (i = 0, v = json_first(d, sh); v; v = json_next(d, v), i++) {
        if (v->type != JSON_NUMBER || !v->is_uint || !tc_mul_u64(n, v->u, &n)) {
            tc_error("%s: tensor %s: bad shape", path, t->name);
            return 0;
        }
        t->shape[i] = v->u;
    }
    v = json_first(d, offs);
    if (v->type != JSON_NUMBER || !v->is_uint || json_next(d, v)->type != JSON_NUMBER ||
        !json_next(d, v)->is_uint) {
        tc_error("%s: tensor %s: data_offsets must be two non-negative integers", path, t->name);
        return 0;
    }
    begin = v->u;
    end = json_next(d, v)->u;
    if (begin > end || end > data_bytes) {
        tc_error("%s: tensor %s: data_offsets [%llu, %llu] outside the %llu data bytes (truncated file?)",
                 path, t->name, (unsigned long long)begin, (unsigned long long)end,
                 (unsigned long long)data_bytes);
        return 0;
    }
    if (!tc_mul_u64(n, bits / 8u, &need) || need != end - begin) {
        tc_error("%s: tensor %s: %llu bytes for dtype %s and %llu elements, data_offsets give %llu",
                 path, t->name, (unsigned long long)need, t->dtype_name, (unsigned long long)n,
                 (unsigned long long)(end - begin));
        return 0;
    }
    t->offset = data_start + begin;
    t->bytes = end - begin;
    return 1;
}

int tc_add_tensor(tc_checkpoint *c, tc_tensor *t) {
    if (c->n_tensors == c->cap_tensors) {
        size_t cap = c->cap_tensors ? c->cap_tensors * 2 : 64;
        tc_tensor *g = (tc_tensor *)realloc(c->tensors, cap * sizeof *g);
        if (!g) { tc_error("out of memory"); return 0; }
        c->tensors = g;
        c->cap_tensors = cap;
    }
    c->tensors[c->n_tensors++] = *t;
    return 1;
}

/* Data ranges of one shard must tile [0, data_bytes) exactly. */
static int tc_st_check_tiling(tc_checkpoint *c, size_t first, uint64_t data_start,
                              uint64_t data_bytes, const char *path) {
    size_t n = c->n_tensors - first, i;
    const tc_tensor **order;
    uint64_t at = data_start;
    if (n == 0) return data_bytes == 0 || (tc_error("%s: data bytes but no tensors", path), 0);
    order = (const tc_tensor **)malloc(n * sizeof *order);
    if (!order) { tc_error("out of memory"); return 0; }
    for (i = 0; i < n; i++) order[i] = &c->tensors[first + i];
    qsort(order, n, sizeof *order, tc_cmp_tensor_offset);
    for (i = 0; i < n; i++) {
        if (order[i]->offset != at) {
            tc_error("%s: tensor %s: data %s (byte %llu, expected %llu)", path, order[i]->name,
                     order[i]->offset < at ? "overlaps the previous tensor" : "leaves a hole",
                     (unsigned long long)order[i]->offset, (unsigned long long)at);
            free(order);
            return 0;
        }
        at += order[i]->bytes;
    }
    free(order);
    if (at != data_start + data_bytes) {
        tc_error("%s: %llu bytes after the last tensor", path,
                 (unsigned long long)(data_start + data_bytes - at));
        return 0;
    }
    return 1;
}

static int tc_st_open(tc_checkpoint *c, const char *path) {
    tc_shard *s;
    unsigned char len8[8];
    uint64_t file_bytes, header_bytes, data_bytes;
    char *text, err[160];
    const json_node *root, *m;
    size_t first = c->n_tensors;
    tc_shard *g = (tc_shard *)realloc(c->shards, (size_t)(c->n_shards + 1) * sizeof *g);
    if (!g) { tc_error("out of memory"); return 0; }
    c->shards = g;
    s = &c->shards[c->n_shards++];
    memset(s, 0, sizeof *s);
    s->path = tc_strdup(path);
    if (!s->path) { tc_error("out of memory"); return 0; }
    s->file = tc_fopen(path, 0);
    if (!s->file) { tc_error("cannot open %s: %s", path, strerror(errno)); return 0; }
    if (!tc_file_bytes(s->file, path, &file_bytes)) return 0;
    if (file_bytes < 8 || fread(len8, 1, 8, s->file) != 8) {
        tc_error("%s: too short for a safetensors file (%llu bytes)", path, (unsigned long long)file_bytes);
        return 0;
    }
    header_bytes = (uint64_t)len8[0] | ((uint64_t)len8[1] << 8) | ((uint64_t)len8[2] << 16) |
                   ((uint64_t)len8[3] << 24) | ((uint64_t)len8[4] << 32) | ((uint64_t)len8[5] << 40) |
                   ((uint64_t)len8[6] << 48) | ((uint64_t)len8[7] << 56);
    if (header_bytes < 2 || header_bytes > TC_MAX_ST_HEADER_BYTES || header_bytes > file_bytes - 8) {
        tc_error("%s: bad safetensors header size %llu (file has %llu bytes; truncated?)", path,
                 (unsigned long long)header_bytes, (unsigned long long)file_bytes);
        return 0;
    }
    text = (char *)malloc((size_t)header_bytes + 1);
    if (!text) { tc_error("out of memory"); return 0; }
    if (fread(text, 1, (size_t)header_bytes, s->file) != (size_t)header_bytes) {
        tc_error("%s: short read of the header", path);
        free(text);
        return 0;
    }
    if (text[0] != '{') {
        tc_error("%s: the safetensors header does not start with '{'", path);
        free(text);
        return 0;
    }
    if (!json_parse(text, (size_t)header_bytes, &s->header, err, sizeof err)) {
        tc_error("%s: header: %s", path, err);
        free(text);
        return 0;
    }
    free(text);
    root = json_at(&s->header, 0);
    data_bytes = file_bytes - 8 - header_bytes;
    for (m = json_first(&s->header, root); m; m = json_next(&s->header, m)) {
        tc_tensor t;
        memset(&t, 0, sizeof t);
        t.name = json_key_str(&s->header, m);
        if (strcmp(t.name, "__metadata__") == 0) continue;
        if (strlen(t.name) != m->key_bytes) {
            tc_error("%s: a tensor name contains a NUL byte", path);
            return 0;
        }
        t.shard = c->n_shards - 1;
        if (!tc_st_entry(&s->header, m, path, 8 + header_bytes, data_bytes, &t)) return 0;
        if (!tc_add_tensor(c, &t)) return 0;
    }
    return tc_st_check_tiling(c, first, 8 + header_bytes, data_bytes, path);
}

/* Sorts by name and rejects duplicates (across shards too). */
int tc_checkpoint_index(tc_checkpoint *c) {
    size_t i;
    if (c->n_tensors > 1) qsort(c->tensors, c->n_tensors, sizeof *c->tensors, tc_cmp_tensor_name); /* none: NULL */
    for (i = 1; i < c->n_tensors; i++)
        if (strcmp(c->tensors[i - 1].name, c->tensors[i].name) == 0) {
            tc_error("tensor %s appears twice in the checkpoint", c->tensors[i].name);
            return 0;
        }
    return 1;
}

static int tc_load_sharded(tc_checkpoint *c, const char *dir, const char *index_path) {
    json_doc idx;
    const json_node *wm, *e;
    int ok = 0, i;
    if (!tc_read_json(index_path, &idx)) return 0;
    wm = json_get(&idx, json_at(&idx, 0), "weight_map");
    if (!wm || wm->type != JSON_OBJECT || wm->n_children == 0) {
        tc_error("%s: no weight_map object", index_path);
        goto done;
    }
    for (e = json_first(&idx, wm); e; e = json_next(&idx, e)) { /* open each shard once */
        const char *file = json_str(&idx, e);
        char *path;
        int seen = 0;
        if (e->type != JSON_STRING || e->str_bytes == 0 || strchr(file, '/') || strchr(file, '\\') ||
            strlen(file) != e->str_bytes) {
            tc_error("%s: weight_map entry %s must be a plain file name", index_path, json_key_str(&idx, e));
            goto done;
        }
        path = tc_path(dir, file);
        if (!path) { tc_error("out of memory"); goto done; }
        for (i = 0; i < c->n_shards; i++) seen |= strcmp(c->shards[i].path, path) == 0;
        if (!seen && !tc_st_open(c, path)) { free(path); goto done; }
        free(path);
    }
    if (!tc_checkpoint_index(c)) goto done;
    for (e = json_first(&idx, wm); e; e = json_next(&idx, e)) { /* the map must be right */
        const tc_tensor *t = tc_find_tensor(c, json_key_str(&idx, e));
        const char *file = json_str(&idx, e), *sp;
        if (!t) {
            tc_error("%s: tensor %s is not in %s", index_path, json_key_str(&idx, e), file);
            goto done;
        }
        sp = c->shards[t->shard].path;
        if (strlen(sp) < e->str_bytes || strcmp(sp + strlen(sp) - e->str_bytes, file) != 0) {
            tc_error("%s: tensor %s is listed in %s but found in %s", index_path, t->name, file, sp);
            goto done;
        }
    }
    ok = 1;
done:
    json_free(&idx);
    return ok;
}

static int tc_checkpoint_load(tc_checkpoint *c, const char *dir) {
    char *single = tc_path(dir, "model.safetensors");
    char *index = tc_path(dir, "model.safetensors.index.json");
    int ok = 0;
    memset(c, 0, sizeof *c);
    if (!single || !index) { tc_error("out of memory"); goto done; }
    if (tc_file_exists(single)) ok = tc_st_open(c, single) && tc_checkpoint_index(c);
    else if (tc_file_exists(index)) ok = tc_load_sharded(c, dir, index);
    else tc_error("%s: no model.safetensors or model.safetensors.index.json "
                  "(pytorch_model.bin is not read; re-save the model with safetensors)", dir);
done:
    free(single);
    free(index);
    return ok;
}

/* >>config ---------------------------------------------------------------------------------------
   Typed reads of config.json keys. A key that is absent or null takes the default; a key with
   the wrong type is an error naming it. */

#define TC_TWO_PI 6.283185307179586 /* a RoPE frequency f turns once per 2 pi / f positions */

struct tc_cfg {
    const json_doc *doc;
    const json_node *obj;
    const char *path;
};

static const json_node *tc_cfg_node(const tc_cfg *c, const char *key) {
    const json_node *n = json_get(c->doc, c->obj, key);
    return n && n->type != JSON_NULL ? n : NULL;
}

static int tc_cfg_uint(const tc_cfg *c, const char *key, int required, uint32_t def, uint32_t *out) {
    const json_node *n = tc_cfg_node(c, key);
    if (!n) {
        if (required) tc_error("%s: missing \"%s\"", c->path, key);
        *out = def;
        return !required;
    }
    if (n->type != JSON_NUMBER || !n->is_uint || n->u > 0x7fffffffu) {
        tc_error("%s: \"%s\" must be a non-negative integer", c->path, key);
        return 0;
    }
    *out = (uint32_t)n->u;
    return 1;
}

static int tc_cfg_float(const tc_cfg *c, const char *key, double def, double *out) {
    const json_node *n = tc_cfg_node(c, key);
    if (!n) { *out = def; return 1; }
    if (n->type != JSON_NUMBER) {
        tc_error("%s: \"%s\" must be a number", c->path, key);
        return 0;
    }
    *out = n->num;
    return 1;
}

static int tc_cfg_bool(const tc_cfg *c, const char *key, int def, int *out) {
    const json_node *n = tc_cfg_node(c, key);
    if (!n) { *out = def; return 1; }
    if (n->type != JSON_TRUE && n->type != JSON_FALSE) {
        tc_error("%s: \"%s\" must be true or false", c->path, key);
        return 0;
    }
    *out = n->type == JSON_TRUE;
    return 1;
}

static int tc_cfg_string(const tc_cfg *c, const char *key, const char *def, const char **out) {
    const json_node *n = tc_cfg_node(c, key);
    if (!n) { *out = def; return 1; }
    if (n->type != JSON_STRING || strlen(json_str(c->doc, n)) != n->str_bytes) {
        tc_error("%s: \"%s\" must be a string without NUL bytes", c->path, key);
        return 0;
    }
    *out = json_str(c->doc, n);
    return 1;
}

/* The first of: sub-object member, then each legacy top-level key, then the default. */
static int tc_cfg_float_chain(const tc_cfg *c, const tc_cfg *sub, const char *sub_key,
                              const char *const *keys, double def, double *out) {
    if (sub && tc_cfg_node(sub, sub_key)) return tc_cfg_float(sub, sub_key, def, out);
    for (; *keys; keys++)
        if (tc_cfg_node(c, *keys)) return tc_cfg_float(c, *keys, def, out);
    *out = def;
    return 1;
}

/* Hugging Face hidden_act / activation_function values. */
static int tc_parse_act(const tc_cfg *c, const char *key, const char *name, uint32_t *act) {
    if (strcmp(name, "gelu") == 0) *act = TFM_ACT_GELU_ERF;
    else if (strcmp(name, "gelu_new") == 0 || strcmp(name, "gelu_fast") == 0 ||
             strcmp(name, "gelu_pytorch_tanh") == 0) *act = TFM_ACT_GELU_TANH;
    else if (strcmp(name, "silu") == 0 || strcmp(name, "swish") == 0) *act = TFM_ACT_SILU;
    else {
        tc_error("%s: \"%s\": \"%s\" is not supported (gelu, gelu_new, gelu_fast, "
                 "gelu_pytorch_tanh, silu)", c->path, key, name);
        return 0;
    }
    return 1;
}

/* A config sub-object as a tc_cfg (NULL obj: absent); an error unless it is an object. */
static int tc_cfg_sub(const tc_cfg *c, const char *key, tc_cfg *sub) {
    const json_node *n = tc_cfg_node(c, key);
    sub->doc = c->doc;
    sub->obj = n;
    sub->path = c->path;
    if (n && n->type != JSON_OBJECT) {
        tc_error("%s: \"%s\" must be an object", c->path, key);
        return 0;
    }
    return 1;
}

/* A list of rope_dim / 2 positive numbers (longrope's short_factor / long_factor). */
static int tc_cfg_factor_list(const tc_cfg *s, const char *key, uint32_t n, float *out) {
    const json_node *a = tc_cfg_node(s, key), *e;
    uint32_t i = 0;
    if (!a || a->type != JSON_ARRAY) {
        tc_error("%s: rope scaling \"%s\" must be a list of %u numbers", s->path, key, n);
        return 0;
    }
    for (e = json_first(s->doc, a); e; e = json_next(s->doc, e), i++)
        if (i >= n || e->type != JSON_NUMBER || !(e->num > 0.0 && e->num < 1e30)) break;
        else out[i] = (float)e->num;
    if (e || i != n) {
        tc_error("%s: rope scaling \"%s\" must be a list of %u positive numbers (rope_dim / 2)", s->path, key, n);
        return 0;
    }
    return 1;
}

/* rope_scaling (or a rope_parameters of another type than default) as per-frequency divisors
   of the global RoPE table, as modeling_rope_utils.py computes the inverse frequencies:
     linear:   every frequency / factor
     llama3:   wavelength 2 pi / f below original / high_freq_factor kept, above original /
               low_freq_factor divided by factor, in between f * ((1 - s) / factor + s) with
               s = (original / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
     longrope: frequency j / short_factor[j]; past original_max_position_embeddings (a session
               with a larger n_ctx) / long_factor[j]; cos and sin times attention_factor
               (default sqrt(1 + ln(factor) / ln(original)), factor = max / original)
   Other types (yarn, dynamic, ...) are refused by name. */
static int tc_rope_scaling(const tc_cfg *c, const tc_cfg *s, double theta, tc_hparams *hp) {
    const char *type = "default";
    double factor = 0.0, lo, hi, orig_d, att;
    uint32_t half = hp->rope_dim / 2, j, orig;
    if (!tc_cfg_string(s, "type", "default", &type) || !tc_cfg_string(s, "rope_type", type, &type) ||
        !tc_cfg_float(s, "factor", 0.0, &factor))
        return 0;
    if (strcmp(type, "default") == 0) return 1;
    if (half > TC_MAX_ROPE_FREQS) {
        tc_error("%s: rope scaling with %u rotary dims is not supported (at most %d)", c->path, hp->rope_dim,
                 2 * TC_MAX_ROPE_FREQS);
        return 0;
    }
    if (strcmp(type, "linear") == 0 || strcmp(type, "llama3") == 0) {
        if (!(factor >= 1.0 && factor < 1e6)) {
            tc_error("%s: rope scaling \"%s\" needs a factor >= 1 (got %g)", c->path, type, factor);
            return 0;
        }
        for (j = 0; j < half; j++) hp->rope_freqs[j] = (float)factor;
        hp->n_rope_freqs = half;
        if (strcmp(type, "linear") == 0) return 1;
        if (!tc_cfg_float(s, "low_freq_factor", 1.0, &lo) || !tc_cfg_float(s, "high_freq_factor", 4.0, &hi) ||
            !tc_cfg_uint(s, "original_max_position_embeddings", 1, 0, &orig))
            return 0;
        if (!(lo > 0.0 && hi > lo) || orig == 0) {
            tc_error("%s: rope scaling llama3: low_freq_factor %g, high_freq_factor %g, original %u out of range",
                     c->path, lo, hi, orig);
            return 0;
        }
        for (j = 0; j < half; j++) {
            double f = pow(theta, -2.0 * (double)j / (double)hp->rope_dim), wavelen = TC_TWO_PI / f;
            double sm = ((double)orig / wavelen - lo) / (hi - lo);
            if (wavelen < (double)orig / hi) hp->rope_freqs[j] = 1.0f;
            else if (wavelen <= (double)orig / lo) hp->rope_freqs[j] = (float)(1.0 / ((1.0 - sm) / factor + sm));
        }
        return 1;
    }
    if (strcmp(type, "longrope") == 0 || strcmp(type, "su") == 0) {
        if (!tc_cfg_uint(c, "original_max_position_embeddings", 0, 0, &orig) ||
            !tc_cfg_uint(s, "original_max_position_embeddings", 0, orig, &orig) ||
            !tc_cfg_factor_list(s, "short_factor", half, hp->rope_freqs) ||
            !tc_cfg_factor_list(s, "long_factor", half, hp->rope_freqs_long))
            return 0;
        if (orig == 0) {
            tc_error("%s: rope scaling longrope needs original_max_position_embeddings", c->path);
            return 0;
        }
        orig_d = (double)orig;
        if (factor == 0.0) factor = (double)hp->n_ctx / orig_d;
        att = factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log(orig_d));
        if (!tc_cfg_float(s, "attention_factor", att, &att)) return 0;
        if (!(att > 0.0 && att < 1e6)) {
            tc_error("%s: rope scaling longrope attention_factor %g out of range", c->path, att);
            return 0;
        }
        hp->n_rope_freqs = half;
        hp->has_rope_freqs_long = 1;
        hp->rope_orig_ctx = orig;
        hp->rope_attn_factor = (float)att;
        return 1;
    }
    tc_error("%s: rope scaling type \"%s\" is not supported (supported: linear, llama3, longrope)", c->path, type);
    return 0;
}

/* RoPE as Hugging Face describes it today (rope_parameters) or in legacy keys; rope_dim =
   int(d_head * fraction), which must be even. Scaling from rope_scaling (or rope_parameters'
   rope_type) through tc_rope_scaling. */
static int tc_cfg_rope(const tc_cfg *c, const char *const *theta_keys, const char *const *pct_keys,
                       double def_theta, double def_pct, tc_hparams *hp) {
    const json_node *rp;
    tc_cfg sub, scaling;
    double theta, pct, dims;
    if (!tc_cfg_sub(c, "rope_parameters", &sub) || !tc_cfg_sub(c, "rope_scaling", &scaling)) return 0;
    rp = sub.obj;
    if (!tc_cfg_float_chain(c, rp ? &sub : NULL, "rope_theta", theta_keys, def_theta, &theta) ||
        !tc_cfg_float_chain(c, rp ? &sub : NULL, "partial_rotary_factor", pct_keys, def_pct, &pct))
        return 0;
    if (!(theta > 0.0 && theta < 1e30) || !(pct > 0.0 && pct <= 1.0)) {
        tc_error("%s: rope theta %g / rotary fraction %g out of range", c->path, theta, pct);
        return 0;
    }
    dims = (double)hp->d_head * pct;
    hp->rope_dim = (uint32_t)dims; /* Python int(): truncation */
    if (hp->rope_dim == 0 || hp->rope_dim % 2 != 0) {
        tc_error("%s: rotary dims int(%u * %g) = %u must be even and > 0", c->path, hp->d_head, pct,
                 hp->rope_dim);
        return 0;
    }
    hp->rope_theta = (float)theta;
    if (scaling.obj) return tc_rope_scaling(c, &scaling, theta, hp);
    return rp ? tc_rope_scaling(c, &sub, theta, hp) : 1;
}

/* Which layers are sliding-window ("sliding_attention") layers: the config's layer_types when
   it has one (then *found = 1), else sliding is left as the caller's rule filled it. */
static int tc_cfg_layer_types(const tc_cfg *c, const tc_hparams *hp, unsigned char *sliding, int *found) {
    const json_node *a = tc_cfg_node(c, "layer_types"), *e = NULL;
    uint32_t i = 0;
    int bad = 0;
    *found = a != NULL;
    if (!a) return 1;
    if (a->type == JSON_ARRAY)
        for (e = json_first(c->doc, a); e && !bad; e = json_next(c->doc, e), i++) {
            const char *v = e->type == JSON_STRING ? json_str(c->doc, e) : "";
            if (i >= hp->n_layers) bad = 1;
            else if (strcmp(v, "sliding_attention") == 0) sliding[i] = 1;
            else if (strcmp(v, "full_attention") == 0) sliding[i] = 0;
            else bad = 1;
        }
    if (a->type != JSON_ARRAY || bad || i != hp->n_layers) {
        tc_error("%s: \"layer_types\" must list \"sliding_attention\" or \"full_attention\" for each of "
                 "the %u layers", c->path, hp->n_layers);
        return 0;
    }
    return 1;
}

/* The layer table: sliding layers get window (0: none) and, when local_rope, the local RoPE
   table (base rope_theta_local, no scaling). */
void tc_set_layers(tc_hparams *hp, const unsigned char *sliding, uint32_t window, int local_rope) {
    uint32_t i;
    for (i = 0; i < hp->n_layers; i++) {
        hp->window[i] = sliding[i] ? window : 0;
        if (sliding[i] && local_rope) hp->rope_kind[i] = TFM__ROPE_LOCAL;
        if (hp->window[i] || hp->rope_kind[i]) hp->has_layer_table = 1;
    }
}

/* The layer count, checked as soon as it is read: per-layer loops fill tc_hparams' layer table
   (and arrays of TC_MAX_LAYERS) before tc_validate_hparams runs. */
int tc_check_layers(const tc_hparams *hp, const char *path) {
    if (hp->n_layers >= 1 && hp->n_layers <= TC_MAX_LAYERS) return 1;
    tc_error("%s: layer count %u out of the supported range (1..%d)", path, hp->n_layers, TC_MAX_LAYERS);
    return 0;
}

/* Limits tfm.h enforces when it opens the file; checked here so errors appear early. */
int tc_validate_hparams(const tc_hparams *hp, const char *path) {
    const char *bad = NULL;
    if (hp->n_layers < 1 || hp->n_layers > TFM_MAX_LAYERS) bad = "layer count";
    else if (hp->n_vocab < 1 || hp->n_vocab > TFM_MAX_VOCAB) bad = "vocab_size";
    else if (hp->n_ctx < 1 || hp->n_ctx > TFM_MAX_CTX) bad = "context length";
    else if (hp->d_model < 1 || hp->d_model > TFM_MAX_DIM) bad = "hidden size";
    else if (hp->d_ff < 1 || hp->d_ff > TFM_MAX_DIM) bad = "intermediate size";
    else if (hp->n_heads < 1 || hp->n_kv_heads < 1 || hp->n_heads % hp->n_kv_heads) bad = "head counts";
    else if (hp->d_head < 1 || (uint64_t)hp->n_heads * hp->d_head > TFM_MAX_DIM) bad = "head size";
    else if (hp->rope_dim > hp->d_head || hp->rope_dim % 2) bad = "rotary dims";
    else if (hp->rope_dim && !(hp->rope_theta > 0.0f && hp->rope_theta < INFINITY))
        bad = "rope base (rope_theta, as a float)"; /* 1e-50 is finite as a double, 0 as a float */
    else if (!(hp->norm_eps > 0.0f && hp->norm_eps < 1.0f)) bad = "norm epsilon";
    if (bad) tc_error("%s: %s out of the supported range", path, bad);
    return bad == NULL;
}

/* >>arch -----------------------------------------------------------------------------------------
   Per-architecture tables: how config.json keys become header fields, and how checkpoint
   tensors become .tfm tensors. Shapes are written in symbolic dims resolved from tc_hparams. */

/* n_heads / n_kv_heads / d_head (head_dim 0: d_model / n_heads), checked for consistency. */
static int tc_heads(const tc_cfg *c, tc_hparams *hp, uint32_t head_dim) {
    if (hp->n_heads == 0 || hp->n_kv_heads == 0 || hp->n_heads % hp->n_kv_heads != 0 ||
        (head_dim == 0 && hp->d_model % hp->n_heads != 0)) {
        tc_error("%s: %u attention heads / %u key-value heads do not divide hidden size %u", c->path,
                 hp->n_heads, hp->n_kv_heads, hp->d_model);
        return 0;
    }
    hp->d_head = head_dim ? head_dim : hp->d_model / hp->n_heads;
    return 1;
}

/* The size keys of config.json, in the two spellings Hugging Face models use. */
typedef struct tc_size_keys {
    const char *d_model, *n_heads, *n_layers, *d_ff, *n_ctx;
    int d_ff_required; /* GPT-2's n_inner may be null: 4 * d_model */
} tc_size_keys;
static const tc_size_keys tc_keys_hf = {"hidden_size", "num_attention_heads", "num_hidden_layers",
                                        "intermediate_size", "max_position_embeddings", 1};
static const tc_size_keys tc_keys_gpt2 = {"n_embd", "n_head", "n_layer", "n_inner", "n_positions", 0};

/* d_model, n_heads, n_layers, d_ff (4 * d_model when optional and null), n_vocab, n_ctx, and
   n_kv_heads: num_key_value_heads when the architecture has GQA (null: n_heads), else n_heads. */
static int tc_cfg_sizes(const tc_cfg *c, const tc_size_keys *k, int gqa, tc_hparams *hp) {
    if (!tc_cfg_uint(c, k->d_model, 1, 0, &hp->d_model) || !tc_cfg_uint(c, k->n_heads, 1, 0, &hp->n_heads) ||
        !tc_cfg_uint(c, k->n_layers, 1, 0, &hp->n_layers) ||
        !tc_cfg_uint(c, k->d_ff, k->d_ff_required, 0, &hp->d_ff) ||
        !tc_cfg_uint(c, "vocab_size", 1, 0, &hp->n_vocab) || !tc_cfg_uint(c, k->n_ctx, 1, 0, &hp->n_ctx) ||
        (gqa && !tc_cfg_uint(c, "num_key_value_heads", 0, 0, &hp->n_kv_heads)) || !tc_check_layers(hp, c->path))
        return 0;
    if ((gqa && hp->n_kv_heads == 0 && tc_cfg_node(c, "num_key_value_heads")) ||
        (hp->d_ff == 0 && tc_cfg_node(c, k->d_ff))) { /* 0 is not "absent": no default replaces it */
        tc_error("%s: \"%s\" is 0", c->path, hp->d_ff == 0 ? k->d_ff : "num_key_value_heads");
        return 0;
    }
    if (!gqa || hp->n_kv_heads == 0) hp->n_kv_heads = hp->n_heads; /* absent or null */
    if (hp->d_ff == 0) hp->d_ff = 4u * hp->d_model;                /* GPT-2's n_inner null */
    return 1;
}

/* --- gpt_neox (Pythia, GPT-NeoX-20B) --- */

static int tc_neox_config(const tc_cfg *c, tc_hparams *hp) {
    static const char *const theta_keys[] = {"rotary_emb_base", "rope_theta", NULL};
    static const char *const pct_keys[] = {"rotary_pct", "partial_rotary_factor", NULL};
    const char *act;
    double eps;
    int parallel;
    if (!tc_cfg_sizes(c, &tc_keys_hf, 0, hp) || !tc_cfg_float(c, "layer_norm_eps", 1e-5, &eps) ||
        !tc_cfg_string(c, "hidden_act", "gelu", &act) ||
        !tc_cfg_bool(c, "use_parallel_residual", 1, &parallel) ||
        !tc_cfg_bool(c, "tie_word_embeddings", 0, &hp->tied_output) ||
        !tc_cfg_bool(c, "attention_bias", 1, &hp->attn_bias))
        return 0;
    if (!tc_heads(c, hp, 0) || !tc_parse_act(c, "hidden_act", act, &hp->act)) return 0;
    hp->arch = TFM_ARCH_GPT_NEOX;
    hp->norm_eps = (float)eps;
    hp->norm = TFM_NORM_LAYERNORM;
    hp->ffn = TFM_FFN_PLAIN;
    hp->pos = TFM_POS_ROPE_HALF;
    hp->residual = parallel ? TFM_RESIDUAL_PARALLEL : TFM_RESIDUAL_SEQUENTIAL;
    hp->mlp_bias = 1;
    return tc_cfg_rope(c, theta_keys, pct_keys, 10000.0, 0.25, hp);
}

#define TC_NEOX_L "gpt_neox.layers.%d."
static const tc_tensor_map tc_neox_tensors[] = {
    {"gpt_neox.embed_in.weight", {"tok_embd"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {TC_NEOX_L "input_layernorm.weight", {"blk.%d.ln1.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_NEOX_L "input_layernorm.bias", {"blk.%d.ln1.b"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_NEOX_L "attention.query_key_value.weight", {"blk.%d.wq", "blk.%d.wk", "blk.%d.wv"},
     TC_LAYER, TC_OP_SPLIT_QKV_HEADS, {TC_DIM_QKV, TC_DIM_MODEL}},
    {TC_NEOX_L "attention.query_key_value.bias", {"blk.%d.bq", "blk.%d.bk", "blk.%d.bv"},
     TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_SPLIT_QKV_HEADS, {TC_DIM_QKV}},
    {TC_NEOX_L "attention.dense.weight", {"blk.%d.wo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_Q}},
    {TC_NEOX_L "attention.dense.bias", {"blk.%d.bo"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY,
     {TC_DIM_MODEL}},
    {TC_NEOX_L "post_attention_layernorm.weight", {"blk.%d.ln2.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_NEOX_L "post_attention_layernorm.bias", {"blk.%d.ln2.b"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_NEOX_L "mlp.dense_h_to_4h.weight", {"blk.%d.w_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF, TC_DIM_MODEL}},
    {TC_NEOX_L "mlp.dense_h_to_4h.bias", {"blk.%d.b_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF}},
    {TC_NEOX_L "mlp.dense_4h_to_h.weight", {"blk.%d.w_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_FF}},
    {TC_NEOX_L "mlp.dense_4h_to_h.bias", {"blk.%d.b_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"gpt_neox.final_layer_norm.weight", {"lnf.w"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"gpt_neox.final_layer_norm.bias", {"lnf.b"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"embed_out.weight", {"output.w"}, TC_IF_UNTIED, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
};

static const char *const tc_neox_skip[] = {
    ".attention.bias", ".attention.masked_bias", ".attention.rotary_emb.inv_freq", NULL
};

/* --- gpt2 (Conv1D weights stored [in, out]; q|k|v thirds; learned positions; tied head) --- */

static int tc_gpt2_config(const tc_cfg *c, tc_hparams *hp) {
    const char *act;
    double eps;
    int scale, by_layer;
    if (!tc_cfg_sizes(c, &tc_keys_gpt2, 0, hp) || !tc_cfg_float(c, "layer_norm_epsilon", 1e-5, &eps) ||
        !tc_cfg_string(c, "activation_function", "gelu_new", &act) ||
        !tc_cfg_bool(c, "scale_attn_weights", 1, &scale) ||
        !tc_cfg_bool(c, "scale_attn_by_inverse_layer_idx", 0, &by_layer) ||
        !tc_cfg_bool(c, "tie_word_embeddings", 1, &hp->tied_output))
        return 0;
    if (!scale || by_layer) {
        tc_error("%s: attention scaling other than 1/sqrt(d_head) is not supported", c->path);
        return 0;
    }
    if (!tc_heads(c, hp, 0) || !tc_parse_act(c, "activation_function", act, &hp->act)) return 0;
    hp->arch = TFM_ARCH_GPT2;
    hp->norm_eps = (float)eps;
    hp->norm = TFM_NORM_LAYERNORM;
    hp->ffn = TFM_FFN_PLAIN;
    hp->pos = TFM_POS_LEARNED;
    hp->residual = TFM_RESIDUAL_SEQUENTIAL;
    hp->attn_bias = hp->mlp_bias = 1;
    return 1;
}

static const tc_tensor_map tc_gpt2_tensors[] = {
    {"wte.weight", {"tok_embd"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {"wpe.weight", {"pos_embd"}, TC_KEEP_F32, TC_OP_COPY, {TC_DIM_CTX, TC_DIM_MODEL}},
    {"h.%d.ln_1.weight", {"blk.%d.ln1.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"h.%d.ln_1.bias", {"blk.%d.ln1.b"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"h.%d.attn.c_attn.weight", {"blk.%d.wq", "blk.%d.wk", "blk.%d.wv"}, TC_LAYER | TC_CONV1D,
     TC_OP_SPLIT_QKV_THIRDS, {TC_DIM_MODEL, TC_DIM_QKV}},
    {"h.%d.attn.c_attn.bias", {"blk.%d.bq", "blk.%d.bk", "blk.%d.bv"}, TC_LAYER,
     TC_OP_SPLIT_QKV_THIRDS, {TC_DIM_QKV}},
    {"h.%d.attn.c_proj.weight", {"blk.%d.wo"}, TC_LAYER | TC_CONV1D, TC_OP_COPY, {TC_DIM_Q, TC_DIM_MODEL}},
    {"h.%d.attn.c_proj.bias", {"blk.%d.bo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"h.%d.ln_2.weight", {"blk.%d.ln2.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"h.%d.ln_2.bias", {"blk.%d.ln2.b"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"h.%d.mlp.c_fc.weight", {"blk.%d.w_up"}, TC_LAYER | TC_CONV1D, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_FF}},
    {"h.%d.mlp.c_fc.bias", {"blk.%d.b_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF}},
    {"h.%d.mlp.c_proj.weight", {"blk.%d.w_down"}, TC_LAYER | TC_CONV1D, TC_OP_COPY, {TC_DIM_FF, TC_DIM_MODEL}},
    {"h.%d.mlp.c_proj.bias", {"blk.%d.b_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"ln_f.weight", {"lnf.w"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"ln_f.bias", {"lnf.b"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"lm_head.weight", {"output.w"}, TC_IF_UNTIED, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
};

static const char *const tc_gpt2_skip[] = {".attn.bias", ".attn.masked_bias", NULL};
static const char *const tc_gpt2_prefixes[] = {"transformer.", NULL}; /* re-saved LMHeadModel */

/* --- llama (RMSNorm, SwiGLU, GQA; Hugging Face half-split RoPE order, kept as is) --- */

static int tc_llama_config(const tc_cfg *c, tc_hparams *hp) {
    static const char *const theta_keys[] = {"rope_theta", NULL};
    static const char *const pct_keys[] = {"partial_rotary_factor", NULL};
    const char *act;
    double eps;
    uint32_t head_dim;
    if (!tc_cfg_sizes(c, &tc_keys_hf, 1, hp) || !tc_cfg_uint(c, "head_dim", 0, 0, &head_dim) ||
        !tc_cfg_float(c, "rms_norm_eps", 1e-6, &eps) ||
        !tc_cfg_string(c, "hidden_act", "silu", &act) ||
        !tc_cfg_bool(c, "tie_word_embeddings", 0, &hp->tied_output) ||
        !tc_cfg_bool(c, "attention_bias", 0, &hp->attn_bias) ||
        !tc_cfg_bool(c, "mlp_bias", 0, &hp->mlp_bias))
        return 0;
    if (!tc_heads(c, hp, head_dim) || !tc_parse_act(c, "hidden_act", act, &hp->act)) return 0;
    hp->arch = TFM_ARCH_LLAMA;
    hp->o_bias = hp->attn_bias;
    hp->norm_eps = (float)eps;
    hp->norm = TFM_NORM_RMSNORM;
    hp->ffn = TFM_FFN_GATED;
    hp->pos = TFM_POS_ROPE_HALF;
    hp->residual = TFM_RESIDUAL_SEQUENTIAL;
    return tc_cfg_rope(c, theta_keys, pct_keys, 10000.0, 1.0, hp);
}

#define TC_LLAMA_L "model.layers.%d."
static const tc_tensor_map tc_llama_tensors[] = {
    {"model.embed_tokens.weight", {"tok_embd"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {TC_LLAMA_L "input_layernorm.weight", {"blk.%d.ln1.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_proj.weight", {"blk.%d.wq"}, TC_LAYER, TC_OP_COPY, {TC_DIM_Q, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_proj.bias", {"blk.%d.bq"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_Q}},
    {TC_LLAMA_L "self_attn.k_proj.weight", {"blk.%d.wk"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.k_proj.bias", {"blk.%d.bk"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_KV}},
    {TC_LLAMA_L "self_attn.v_proj.weight", {"blk.%d.wv"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.v_proj.bias", {"blk.%d.bv"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_KV}},
    {TC_LLAMA_L "self_attn.o_proj.weight", {"blk.%d.wo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_Q}},
    {TC_LLAMA_L "self_attn.o_proj.bias", {"blk.%d.bo"}, TC_LAYER | TC_IF_O_BIAS, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_norm.weight", {"blk.%d.q_norm.w"}, TC_LAYER | TC_IF_QK_NORM, TC_OP_COPY, {TC_DIM_HEAD}},
    {TC_LLAMA_L "self_attn.k_norm.weight", {"blk.%d.k_norm.w"}, TC_LAYER | TC_IF_QK_NORM, TC_OP_COPY, {TC_DIM_HEAD}},
    {TC_LLAMA_L "post_attention_layernorm.weight", {"blk.%d.ln2.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.gate_proj.weight", {"blk.%d.w_gate"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF, TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.gate_proj.bias", {"blk.%d.b_gate"}, TC_LAYER | TC_IF_MLP_BIAS, TC_OP_COPY, {TC_DIM_FF}},
    {TC_LLAMA_L "mlp.up_proj.weight", {"blk.%d.w_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF, TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.up_proj.bias", {"blk.%d.b_up"}, TC_LAYER | TC_IF_MLP_BIAS, TC_OP_COPY, {TC_DIM_FF}},
    {TC_LLAMA_L "mlp.down_proj.weight", {"blk.%d.w_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_FF}},
    {TC_LLAMA_L "mlp.down_proj.bias", {"blk.%d.b_down"}, TC_LAYER | TC_IF_MLP_BIAS, TC_OP_COPY, {TC_DIM_MODEL}},
    {"model.norm.weight", {"lnf.w"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"lm_head.weight", {"output.w"}, TC_IF_UNTIED, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
};

static const char *const tc_rotary_skip[] = {".self_attn.rotary_emb.inv_freq", NULL};

/* --- phi (Phi-1, Phi-1.5, Phi-2: one LayerNorm feeds attention and MLP; lm_head bias) --- */

static int tc_phi_config(const tc_cfg *c, tc_hparams *hp) {
    static const char *const theta_keys[] = {"rope_theta", NULL};
    static const char *const pct_keys[] = {"partial_rotary_factor", NULL};
    const char *act;
    double eps;
    int qk_norm;
    if (!tc_cfg_sizes(c, &tc_keys_hf, 1, hp) || !tc_cfg_float(c, "layer_norm_eps", 1e-5, &eps) ||
        !tc_cfg_string(c, "hidden_act", "gelu_new", &act) ||
        !tc_cfg_bool(c, "qk_layernorm", 0, &qk_norm) ||
        !tc_cfg_bool(c, "tie_word_embeddings", 0, &hp->tied_output))
        return 0;
    if (qk_norm) {
        tc_error("%s: \"qk_layernorm\": true is not supported", c->path);
        return 0;
    }
    if (!tc_heads(c, hp, 0) || !tc_parse_act(c, "hidden_act", act, &hp->act)) return 0;
    hp->arch = TFM_ARCH_PHI;
    hp->norm_eps = (float)eps;
    hp->norm = TFM_NORM_LAYERNORM;
    hp->ffn = TFM_FFN_PLAIN;
    hp->pos = TFM_POS_ROPE_HALF;
    hp->residual = TFM_RESIDUAL_PARALLEL_SHARED;
    hp->attn_bias = hp->mlp_bias = 1;
    return tc_cfg_rope(c, theta_keys, pct_keys, 10000.0, 0.5, hp);
}

static const tc_tensor_map tc_phi_tensors[] = {
    {"model.embed_tokens.weight", {"tok_embd"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {TC_LLAMA_L "input_layernorm.weight", {"blk.%d.ln1.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "input_layernorm.bias", {"blk.%d.ln1.b"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_proj.weight", {"blk.%d.wq"}, TC_LAYER, TC_OP_COPY, {TC_DIM_Q, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_proj.bias", {"blk.%d.bq"}, TC_LAYER, TC_OP_COPY, {TC_DIM_Q}},
    {TC_LLAMA_L "self_attn.k_proj.weight", {"blk.%d.wk"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.k_proj.bias", {"blk.%d.bk"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV}},
    {TC_LLAMA_L "self_attn.v_proj.weight", {"blk.%d.wv"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.v_proj.bias", {"blk.%d.bv"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV}},
    {TC_LLAMA_L "self_attn.dense.weight", {"blk.%d.wo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_Q}},
    {TC_LLAMA_L "self_attn.dense.bias", {"blk.%d.bo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.fc1.weight", {"blk.%d.w_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF, TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.fc1.bias", {"blk.%d.b_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF}},
    {TC_LLAMA_L "mlp.fc2.weight", {"blk.%d.w_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_FF}},
    {TC_LLAMA_L "mlp.fc2.bias", {"blk.%d.b_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"model.final_layernorm.weight", {"lnf.w"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"model.final_layernorm.bias", {"lnf.b"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"lm_head.weight", {"output.w"}, TC_IF_UNTIED, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {"lm_head.bias", {"output.b"}, 0, TC_OP_COPY, {TC_DIM_VOCAB}},
};

/* --- gptj (interleaved RoPE on rotary_dim dims, base 10000 fixed in the model code) --- */

#define TC_GPTJ_ROPE_THETA 10000.0f

static int tc_gptj_config(const tc_cfg *c, tc_hparams *hp) {
    const char *act;
    double eps;
    if (!tc_cfg_sizes(c, &tc_keys_gpt2, 0, hp) || !tc_cfg_uint(c, "rotary_dim", 0, 0, &hp->rope_dim) ||
        !tc_cfg_float(c, "layer_norm_epsilon", 1e-5, &eps) ||
        !tc_cfg_string(c, "activation_function", "gelu_new", &act) ||
        !tc_cfg_bool(c, "tie_word_embeddings", 0, &hp->tied_output))
        return 0;
    if (!tc_heads(c, hp, 0) || !tc_parse_act(c, "activation_function", act, &hp->act)) return 0;
    if (hp->rope_dim == 0) hp->rope_dim = hp->d_head; /* rotary_dim null: the whole head */
    if (hp->rope_dim % 2 != 0 || hp->rope_dim > hp->d_head) {
        tc_error("%s: rotary_dim %u must be even and at most the head size %u", c->path, hp->rope_dim,
                 hp->d_head);
        return 0;
    }
    hp->arch = TFM_ARCH_GPTJ;
    hp->rope_theta = TC_GPTJ_ROPE_THETA;
    hp->norm_eps = (float)eps;
    hp->norm = TFM_NORM_LAYERNORM;
    hp->ffn = TFM_FFN_PLAIN;
    hp->pos = TFM_POS_ROPE_INTERLEAVED;
    hp->residual = TFM_RESIDUAL_PARALLEL_SHARED;
    hp->attn_bias = 0;
    hp->mlp_bias = 1;
    return 1;
}

#define TC_GPTJ_L "transformer.h.%d."
static const tc_tensor_map tc_gptj_tensors[] = {
    {"transformer.wte.weight", {"tok_embd"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {TC_GPTJ_L "ln_1.weight", {"blk.%d.ln1.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_GPTJ_L "ln_1.bias", {"blk.%d.ln1.b"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_GPTJ_L "attn.q_proj.weight", {"blk.%d.wq"}, TC_LAYER, TC_OP_COPY, {TC_DIM_Q, TC_DIM_MODEL}},
    {TC_GPTJ_L "attn.k_proj.weight", {"blk.%d.wk"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_GPTJ_L "attn.v_proj.weight", {"blk.%d.wv"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_GPTJ_L "attn.out_proj.weight", {"blk.%d.wo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_Q}},
    {TC_GPTJ_L "mlp.fc_in.weight", {"blk.%d.w_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF, TC_DIM_MODEL}},
    {TC_GPTJ_L "mlp.fc_in.bias", {"blk.%d.b_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF}},
    {TC_GPTJ_L "mlp.fc_out.weight", {"blk.%d.w_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_FF}},
    {TC_GPTJ_L "mlp.fc_out.bias", {"blk.%d.b_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"transformer.ln_f.weight", {"lnf.w"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"transformer.ln_f.bias", {"lnf.b"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"lm_head.weight", {"output.w"}, TC_IF_UNTIED, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {"lm_head.bias", {"output.b"}, 0, TC_OP_COPY, {TC_DIM_VOCAB}},
};

/* --- starcoder2 (LayerNorm with bias, GQA, plain GELU MLP in nn.Linear layout) --- */

static int tc_starcoder2_config(const tc_cfg *c, tc_hparams *hp) {
    static const char *const theta_keys[] = {"rope_theta", NULL};
    static const char *const pct_keys[] = {"partial_rotary_factor", NULL};
    const char *act, *mlp_type, *norm_type;
    double eps;
    uint32_t window;
    if (!tc_cfg_sizes(c, &tc_keys_hf, 1, hp) || !tc_cfg_uint(c, "sliding_window", 0, 0, &window) ||
        !tc_cfg_float(c, "norm_epsilon", 1e-5, &eps) ||
        !tc_cfg_string(c, "hidden_act", "gelu_pytorch_tanh", &act) ||
        !tc_cfg_string(c, "mlp_type", "default", &mlp_type) ||
        !tc_cfg_string(c, "norm_type", "layer_norm", &norm_type) ||
        !tc_cfg_bool(c, "use_bias", 1, &hp->attn_bias) ||
        !tc_cfg_bool(c, "tie_word_embeddings", 1, &hp->tied_output))
        return 0;
    if (strcmp(mlp_type, "default") != 0 || strcmp(norm_type, "layer_norm") != 0) {
        tc_error("%s: mlp_type \"%s\" / norm_type \"%s\" not supported (default / layer_norm)", c->path,
                 mlp_type, norm_type);
        return 0;
    }
    if (!tc_heads(c, hp, 0) || !tc_parse_act(c, "hidden_act", act, &hp->act)) return 0;
    if (window && window < hp->n_ctx) { /* within the window, sliding attention is plain attention */
        tc_warn("%s: context limited to sliding_window %u (max_position_embeddings %u)", c->path, window,
                hp->n_ctx);
        hp->n_ctx = window;
    }
    hp->arch = TFM_ARCH_STARCODER2;
    hp->mlp_bias = hp->attn_bias;
    hp->norm_eps = (float)eps;
    hp->norm = TFM_NORM_LAYERNORM;
    hp->ffn = TFM_FFN_PLAIN;
    hp->pos = TFM_POS_ROPE_HALF;
    hp->residual = TFM_RESIDUAL_SEQUENTIAL;
    return tc_cfg_rope(c, theta_keys, pct_keys, 10000.0, 1.0, hp);
}

static const tc_tensor_map tc_starcoder2_tensors[] = {
    {"model.embed_tokens.weight", {"tok_embd"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {TC_LLAMA_L "input_layernorm.weight", {"blk.%d.ln1.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "input_layernorm.bias", {"blk.%d.ln1.b"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_proj.weight", {"blk.%d.wq"}, TC_LAYER, TC_OP_COPY, {TC_DIM_Q, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_proj.bias", {"blk.%d.bq"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_Q}},
    {TC_LLAMA_L "self_attn.k_proj.weight", {"blk.%d.wk"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.k_proj.bias", {"blk.%d.bk"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_KV}},
    {TC_LLAMA_L "self_attn.v_proj.weight", {"blk.%d.wv"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.v_proj.bias", {"blk.%d.bv"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_KV}},
    {TC_LLAMA_L "self_attn.o_proj.weight", {"blk.%d.wo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_Q}},
    {TC_LLAMA_L "self_attn.o_proj.bias", {"blk.%d.bo"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "post_attention_layernorm.weight", {"blk.%d.ln2.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "post_attention_layernorm.bias", {"blk.%d.ln2.b"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.c_fc.weight", {"blk.%d.w_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF, TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.c_fc.bias", {"blk.%d.b_up"}, TC_LAYER | TC_IF_MLP_BIAS, TC_OP_COPY, {TC_DIM_FF}},
    {TC_LLAMA_L "mlp.c_proj.weight", {"blk.%d.w_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_FF}},
    {TC_LLAMA_L "mlp.c_proj.bias", {"blk.%d.b_down"}, TC_LAYER | TC_IF_MLP_BIAS, TC_OP_COPY, {TC_DIM_MODEL}},
    {"model.norm.weight", {"lnf.w"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"model.norm.bias", {"lnf.b"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"lm_head.weight", {"output.w"}, TC_IF_UNTIED, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
};

/* --- the Llama block's relatives (tc_llama_tensors: q/k/v/o and q/k norms as the flags say) --- */

/* Sizes, head_dim (def_head_dim when absent; 0: d_model / n_heads), RMSNorm eps, SiLU, tie,
   the SwiGLU block; the rest is up to each model_type. */
static int tc_llama_like(const tc_cfg *c, tc_hparams *hp, uint32_t def_head_dim, int def_tied, uint32_t arch) {
    const char *act;
    double eps;
    uint32_t head_dim;
    if (!tc_cfg_sizes(c, &tc_keys_hf, 1, hp) || !tc_cfg_uint(c, "head_dim", 0, def_head_dim, &head_dim) ||
        !tc_cfg_float(c, "rms_norm_eps", 1e-6, &eps) || !tc_cfg_string(c, "hidden_act", "silu", &act) ||
        !tc_cfg_bool(c, "tie_word_embeddings", def_tied, &hp->tied_output))
        return 0;
    if (!tc_heads(c, hp, head_dim) || !tc_parse_act(c, "hidden_act", act, &hp->act)) return 0;
    hp->arch = arch;
    hp->norm_eps = (float)eps;
    hp->norm = TFM_NORM_RMSNORM;
    hp->ffn = TFM_FFN_GATED;
    hp->pos = TFM_POS_ROPE_HALF;
    hp->residual = TFM_RESIDUAL_SEQUENTIAL;
    return 1;
}

static const char *const tc_theta_keys[] = {"rope_theta", NULL};
static const char *const tc_pct_keys[] = {"partial_rotary_factor", NULL};

/* The same window on every layer (config sliding_window; null or absent: none). */
static int tc_window_all(const tc_cfg *c, tc_hparams *hp) {
    unsigned char sliding[TFM_MAX_LAYERS];
    uint32_t window;
    if (!tc_cfg_uint(c, "sliding_window", 0, 0, &window)) return 0;
    memset(sliding, 1, sizeof sliding);
    tc_set_layers(hp, sliding, window, 0);
    return 1;
}

/* mistral: the Llama block without biases; sliding_window on every layer (MistralModel's mask). */
static int tc_mistral_config(const tc_cfg *c, tc_hparams *hp) {
    return tc_llama_like(c, hp, 0, 0, TFM_ARCH_MISTRAL) && tc_window_all(c, hp) &&
           tc_cfg_rope(c, tc_theta_keys, tc_pct_keys, 10000.0, 1.0, hp);
}

/* qwen2: q/k/v biases, no o_proj bias; qwen3: biases only with attention_bias, head_dim (128 by
   default), q_norm / k_norm. Both: layer i sliding when use_sliding_window and i >=
   max_window_layers (or layer_types), else full attention even when sliding_window is set. */
static int tc_qwen_config(const tc_cfg *c, tc_hparams *hp) {
    const char *mt = "qwen2";
    int qwen3, use_window, found;
    uint32_t window, max_window_layers, i;
    unsigned char sliding[TFM_MAX_LAYERS];
    if (!tc_cfg_string(c, "model_type", "qwen2", &mt)) return 0;
    qwen3 = strcmp(mt, "qwen3") == 0;
    if (!tc_llama_like(c, hp, qwen3 ? 128u : 0u, 0, qwen3 ? TFM_ARCH_QWEN3 : TFM_ARCH_QWEN2) ||
        !tc_cfg_bool(c, "attention_bias", 0, &hp->attn_bias) ||
        !tc_cfg_bool(c, "use_sliding_window", 0, &use_window) || !tc_cfg_uint(c, "sliding_window", 0, 0, &window) ||
        !tc_cfg_uint(c, "max_window_layers", 0, 28, &max_window_layers))
        return 0;
    if (qwen3) {
        hp->o_bias = hp->attn_bias;
        hp->flags |= TFM_FLAG_QK_NORM;
    } else {
        hp->attn_bias = 1;
    }
    if (!use_window) window = 0;
    memset(sliding, 0, sizeof sliding);
    for (i = 0; i < hp->n_layers; i++) sliding[i] = window && i >= max_window_layers;
    if (!tc_cfg_layer_types(c, hp, sliding, &found)) return 0;
    tc_set_layers(hp, sliding, window, 0);
    return tc_cfg_rope(c, tc_theta_keys, tc_pct_keys, 10000.0, 1.0, hp);
}

/* smollm3: the Llama block; layer i has no RoPE when no_rope_layers[i] is 0 (default: every
   no_rope_layer_interval-th layer); with use_sliding_window only the NoPE layers (or
   layer_types' sliding ones) have the window. Tied by default. */
static int tc_smollm3_config(const tc_cfg *c, tc_hparams *hp) {
    const json_node *nrl, *e;
    unsigned char sliding[TFM_MAX_LAYERS];
    uint32_t interval, window, i = 0;
    int use_window, found;
    if (!tc_llama_like(c, hp, 0, 1, TFM_ARCH_SMOLLM3) || !tc_cfg_bool(c, "attention_bias", 0, &hp->attn_bias) ||
        !tc_cfg_bool(c, "mlp_bias", 0, &hp->mlp_bias) || !tc_cfg_uint(c, "no_rope_layer_interval", 0, 4, &interval) ||
        !tc_cfg_bool(c, "use_sliding_window", 0, &use_window) || !tc_cfg_uint(c, "sliding_window", 0, 0, &window))
        return 0;
    hp->o_bias = hp->attn_bias;
    nrl = tc_cfg_node(c, "no_rope_layers");
    for (i = 0; i < hp->n_layers; i++) hp->rope_kind[i] = interval && (i + 1) % interval == 0 ? TFM__ROPE_NONE : 0;
    if (nrl) {
        i = 0;
        for (e = nrl->type == JSON_ARRAY ? json_first(c->doc, nrl) : NULL; e && i < hp->n_layers;
             e = json_next(c->doc, e), i++) {
            if (e->type != JSON_NUMBER || !e->is_uint || e->u > 1) break;
            hp->rope_kind[i] = e->u ? 0u : (uint32_t)TFM__ROPE_NONE;
        }
        if (i < hp->n_layers) {
            tc_error("%s: \"no_rope_layers\" must hold a 0 or 1 for each of the %u layers", c->path, hp->n_layers);
            return 0;
        }
    }
    if (!use_window) window = 0;
    for (i = 0; i < hp->n_layers; i++) sliding[i] = window && hp->rope_kind[i] == TFM__ROPE_NONE;
    if (!tc_cfg_layer_types(c, hp, sliding, &found)) return 0;
    tc_set_layers(hp, sliding, window, 0);
    for (i = 0; i < hp->n_layers; i++)
        if (hp->rope_kind[i]) hp->has_layer_table = 1;
    return tc_cfg_rope(c, tc_theta_keys, tc_pct_keys, 10000.0, 1.0, hp);
}

/* phi3 (Phi-3, Phi-3.5, Phi-4-mini): fused qkv_proj (q, then k, then v rows) and gate_up_proj
   (gate half first) split here; partial rotary; longrope; sliding_window on every layer. */
static int tc_phi3_config(const tc_cfg *c, tc_hparams *hp) {
    return tc_llama_like(c, hp, 0, 0, TFM_ARCH_PHI3) && tc_window_all(c, hp) &&
           tc_cfg_rope(c, tc_theta_keys, tc_pct_keys, 10000.0, 1.0, hp);
}

static const tc_tensor_map tc_phi3_tensors[] = {
    {"model.embed_tokens.weight", {"tok_embd"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {TC_LLAMA_L "input_layernorm.weight", {"blk.%d.ln1.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.qkv_proj.weight", {"blk.%d.wq", "blk.%d.wk", "blk.%d.wv"}, TC_LAYER,
     TC_OP_SPLIT_QKV_THIRDS, {TC_DIM_QKV, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.o_proj.weight", {"blk.%d.wo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_Q}},
    {TC_LLAMA_L "post_attention_layernorm.weight", {"blk.%d.ln2.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.gate_up_proj.weight", {"blk.%d.w_gate", "blk.%d.w_up"}, TC_LAYER, TC_OP_SPLIT_HALVES,
     {TC_DIM_FF2, TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.down_proj.weight", {"blk.%d.w_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_FF}},
    {"model.norm.weight", {"lnf.w"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"lm_head.weight", {"output.w"}, TC_IF_UNTIED, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
};

/* --- gemma2, gemma3_text, gemma3 (Gemma-2/3: the Llama block with Gemma's changes) --- */

/* Gemma's size keys with Gemma2Config / Gemma3TextConfig defaults (a gemma3 text_config
   leaves most of them out). */
static int tc_gemma_sizes(const tc_cfg *c, int g3, tc_hparams *hp, uint32_t *head_dim) {
    return tc_cfg_uint(c, "hidden_size", 0, 2304, &hp->d_model) &&
           tc_cfg_uint(c, "num_attention_heads", 0, 8, &hp->n_heads) &&
           tc_cfg_uint(c, "num_key_value_heads", 0, 4, &hp->n_kv_heads) &&
           tc_cfg_uint(c, "num_hidden_layers", 0, 26, &hp->n_layers) &&
           tc_cfg_uint(c, "intermediate_size", 0, 9216, &hp->d_ff) &&
           tc_cfg_uint(c, "vocab_size", 0, g3 ? 262208 : 256000, &hp->n_vocab) &&
           tc_cfg_uint(c, "max_position_embeddings", 0, g3 ? 131072 : 8192, &hp->n_ctx) &&
           tc_cfg_uint(c, "head_dim", 0, 256, head_dim) && tc_check_layers(hp, c->path);
}

/* Gemma-3's RoPE: global layers rope_theta (1e6) with rope_scaling, local layers
   rope_local_base_freq (1e4) unscaled; or the newer rope_parameters keyed by layer type. */
static int tc_gemma3_rope(const tc_cfg *c, tc_hparams *hp) {
    tc_cfg rp, full, local;
    double theta, local_theta;
    hp->rope_dim = hp->d_head;
    if (!tc_cfg_sub(c, "rope_parameters", &rp)) return 0;
    if (rp.obj && json_get(c->doc, rp.obj, "full_attention")) {
        const char *type = "default";
        if (!tc_cfg_sub(&rp, "full_attention", &full) || !tc_cfg_sub(&rp, "sliding_attention", &local) ||
            !tc_cfg_float(&full, "rope_theta", 1e6, &theta) || !tc_cfg_float(&local, "rope_theta", 1e4, &local_theta) ||
            !tc_cfg_string(&local, "rope_type", "default", &type))
            return 0;
        if (strcmp(type, "default") != 0) {
            tc_error("%s: rope_parameters.sliding_attention.rope_type \"%s\" is not supported (default)", c->path,
                     type);
            return 0;
        }
        hp->rope_theta = (float)theta;
        hp->rope_theta_local = (float)local_theta;
        return full.obj ? tc_rope_scaling(c, &full, theta, hp) : 1;
    }
    if (!tc_cfg_float(c, "rope_local_base_freq", 1e4, &local_theta)) return 0;
    hp->rope_theta_local = (float)local_theta;
    return tc_cfg_rope(c, tc_theta_keys, tc_pct_keys, 1e6, 1.0, hp);
}

/* gemma2 / gemma3_text: embeddings times sqrt(hidden_size) (as f32), (1 + w) norms (folded
   here), norms after the attention and the FFN too, GeGLU (hidden_activation), the attention
   scale query_pre_attn_scalar^-0.5, Gemma-2's soft-caps of the scores and the logits, Gemma-3's
   q/k norms and final soft-cap; local layers: Gemma-2 the even ones, Gemma-3 all but every
   sliding_window_pattern-th (or layer_types), with the sliding window (and on Gemma-3 the local
   RoPE base). Tied. */
static int tc_gemma_config(const tc_cfg *c, tc_hparams *hp) {
    const char *mt = "gemma2", *act;
    double eps, qpas, attn_cap, final_cap;
    uint32_t head_dim, window, pattern, i;
    int g3, bidir, found;
    unsigned char sliding[TFM_MAX_LAYERS];
    if (!tc_cfg_string(c, "model_type", "gemma2", &mt)) return 0;
    g3 = strcmp(mt, "gemma3_text") == 0;
    if (!tc_gemma_sizes(c, g3, hp, &head_dim) || !tc_cfg_float(c, "rms_norm_eps", 1e-6, &eps) ||
        !tc_cfg_string(c, "hidden_act", "gelu_pytorch_tanh", &act) ||
        !tc_cfg_string(c, "hidden_activation", act, &act) ||
        !tc_cfg_float(c, "query_pre_attn_scalar", 256.0, &qpas) ||
        !tc_cfg_float(c, "attn_logit_softcapping", g3 ? 0.0 : 50.0, &attn_cap) ||
        !tc_cfg_float(c, "final_logit_softcapping", g3 ? 0.0 : 30.0, &final_cap) ||
        !tc_cfg_uint(c, "sliding_window", 0, 4096, &window) ||
        !tc_cfg_uint(c, "sliding_window_pattern", 0, 6, &pattern) ||
        !tc_cfg_bool(c, "use_bidirectional_attention", 0, &bidir) ||
        !tc_cfg_bool(c, "attention_bias", 0, &hp->attn_bias) ||
        !tc_cfg_bool(c, "tie_word_embeddings", 1, &hp->tied_output))
        return 0;
    if (bidir) {
        tc_error("%s: \"use_bidirectional_attention\": true (an embedding model) is not supported", c->path);
        return 0;
    }
    if (!(qpas > 0.0 && qpas < 1e9) || !(attn_cap >= 0.0 && attn_cap < 1e9) || !(final_cap >= 0.0 && final_cap < 1e9)) {
        tc_error("%s: query_pre_attn_scalar / soft-caps out of range", c->path);
        return 0;
    }
    if (g3 && attn_cap > 0.0) { /* Gemma3Attention passes no soft-cap to the attention */
        tc_warn("%s: attn_logit_softcapping ignored (Gemma-3's attention does not use it)", c->path);
        attn_cap = 0.0;
    }
    if (!tc_heads(c, hp, head_dim) || !tc_parse_act(c, "hidden_activation", act, &hp->act)) return 0;
    hp->arch = g3 ? TFM_ARCH_GEMMA3 : TFM_ARCH_GEMMA2;
    hp->o_bias = hp->attn_bias;
    hp->norm_eps = (float)eps;
    hp->norm = TFM_NORM_RMSNORM;
    hp->ffn = TFM_FFN_GATED;
    hp->pos = TFM_POS_ROPE_HALF;
    hp->residual = TFM_RESIDUAL_SEQUENTIAL;
    hp->flags = TFM_FLAG_POST_NORMS | (g3 ? TFM_FLAG_QK_NORM : 0u);
    hp->attn_scale = (float)pow(qpas, -0.5);
    hp->attn_softcap = (float)attn_cap;
    hp->logit_softcap = (float)final_cap;
    hp->embed_scale = (float)sqrt((double)hp->d_model); /* the f32 normalizer tensor */
    if (pattern == 0) pattern = 1;
    for (i = 0; i < hp->n_layers; i++) sliding[i] = g3 ? (i + 1) % pattern != 0 : (i + 1) % 2 != 0;
    if (!tc_cfg_layer_types(c, hp, sliding, &found)) return 0;
    tc_set_layers(hp, sliding, window, g3);
    if (g3) return tc_gemma3_rope(c, hp);
    return tc_cfg_rope(c, tc_theta_keys, tc_pct_keys, 10000.0, 1.0, hp);
}

/* gemma3 (Gemma3ForConditionalGeneration): its text_config is a gemma3_text config; the text
   weights are language_model.model.*, the vision tower and projector are skipped. */
static int tc_gemma3_mm_config(const tc_cfg *c, tc_hparams *hp) {
    tc_cfg tc;
    const char *mt = "gemma3_text";
    if (!tc_cfg_sub(c, "text_config", &tc)) return 0;
    if (!tc.obj) {
        tc_error("%s: model_type gemma3 without a \"text_config\"", c->path);
        return 0;
    }
    if (!tc_cfg_string(&tc, "model_type", "gemma3_text", &mt)) return 0;
    if (strcmp(mt, "gemma3_text") != 0) {
        tc_error("%s: text_config.model_type \"%s\" is not supported (gemma3_text)", c->path, mt);
        return 0;
    }
    return tc_gemma_config(&tc, hp);
}

static const tc_tensor_map tc_gemma_tensors[] = {
    {"model.embed_tokens.weight", {"tok_embd"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {TC_LLAMA_L "input_layernorm.weight", {"blk.%d.ln1.w"}, TC_LAYER | TC_ADD_ONE, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_proj.weight", {"blk.%d.wq"}, TC_LAYER, TC_OP_COPY, {TC_DIM_Q, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_proj.bias", {"blk.%d.bq"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_Q}},
    {TC_LLAMA_L "self_attn.k_proj.weight", {"blk.%d.wk"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.k_proj.bias", {"blk.%d.bk"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_KV}},
    {TC_LLAMA_L "self_attn.v_proj.weight", {"blk.%d.wv"}, TC_LAYER, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.v_proj.bias", {"blk.%d.bv"}, TC_LAYER | TC_IF_ATTN_BIAS, TC_OP_COPY, {TC_DIM_KV}},
    {TC_LLAMA_L "self_attn.o_proj.weight", {"blk.%d.wo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_Q}},
    {TC_LLAMA_L "self_attn.o_proj.bias", {"blk.%d.bo"}, TC_LAYER | TC_IF_O_BIAS, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_LLAMA_L "self_attn.q_norm.weight", {"blk.%d.q_norm.w"}, TC_LAYER | TC_IF_QK_NORM | TC_ADD_ONE, TC_OP_COPY,
     {TC_DIM_HEAD}},
    {TC_LLAMA_L "self_attn.k_norm.weight", {"blk.%d.k_norm.w"}, TC_LAYER | TC_IF_QK_NORM | TC_ADD_ONE, TC_OP_COPY,
     {TC_DIM_HEAD}},
    {TC_LLAMA_L "post_attention_layernorm.weight", {"blk.%d.post_attn.w"}, TC_LAYER | TC_ADD_ONE, TC_OP_COPY,
     {TC_DIM_MODEL}},
    {TC_LLAMA_L "pre_feedforward_layernorm.weight", {"blk.%d.ln2.w"}, TC_LAYER | TC_ADD_ONE, TC_OP_COPY,
     {TC_DIM_MODEL}},
    {TC_LLAMA_L "post_feedforward_layernorm.weight", {"blk.%d.post_ffn.w"}, TC_LAYER | TC_ADD_ONE, TC_OP_COPY,
     {TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.gate_proj.weight", {"blk.%d.w_gate"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF, TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.up_proj.weight", {"blk.%d.w_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF, TC_DIM_MODEL}},
    {TC_LLAMA_L "mlp.down_proj.weight", {"blk.%d.w_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_FF}},
    {"model.norm.weight", {"lnf.w"}, TC_ADD_ONE, TC_OP_COPY, {TC_DIM_MODEL}},
    {"lm_head.weight", {"output.w"}, TC_IF_UNTIED, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
};

static const char *const tc_gemma3_mm_prefixes[] = {"language_model.", NULL};
static const char *const tc_gemma3_mm_skip[] = {"vision_tower.", "multi_modal_projector.", NULL};

static const tc_arch tc_archs[] = {
    {"gpt_neox", tc_neox_config, TC_TABLE(tc_neox_tensors), tc_neox_skip, NULL, NULL},
    {"gpt2", tc_gpt2_config, TC_TABLE(tc_gpt2_tensors), tc_gpt2_skip, tc_gpt2_prefixes, NULL},
    {"llama", tc_llama_config, TC_TABLE(tc_llama_tensors), tc_rotary_skip, NULL, NULL},
    {"phi", tc_phi_config, TC_TABLE(tc_phi_tensors), tc_rotary_skip, NULL, NULL},
    {"gptj", tc_gptj_config, TC_TABLE(tc_gptj_tensors), tc_gpt2_skip, NULL, NULL},
    {"starcoder2", tc_starcoder2_config, TC_TABLE(tc_starcoder2_tensors), tc_rotary_skip, NULL, NULL},
    {"mistral", tc_mistral_config, TC_TABLE(tc_llama_tensors), tc_rotary_skip, NULL, NULL},
    {"qwen2", tc_qwen_config, TC_TABLE(tc_llama_tensors), tc_rotary_skip, NULL, NULL},
    {"qwen3", tc_qwen_config, TC_TABLE(tc_llama_tensors), tc_rotary_skip, NULL, NULL},
    {"smollm3", tc_smollm3_config, TC_TABLE(tc_llama_tensors), tc_rotary_skip, NULL, NULL},
    {"phi3", tc_phi3_config, TC_TABLE(tc_phi3_tensors), tc_rotary_skip, NULL, NULL},
    {"gemma2", tc_gemma_config, TC_TABLE(tc_gemma_tensors), tc_rotary_skip, NULL, NULL},
    {"gemma3_text", tc_gemma_config, TC_TABLE(tc_gemma_tensors), tc_rotary_skip, NULL, NULL},
    {"gemma3", tc_gemma3_mm_config, TC_TABLE(tc_gemma_tensors), tc_rotary_skip, tc_gemma3_mm_prefixes,
     tc_gemma3_mm_skip},
};
#define TC_SUPPORTED "gpt_neox, gpt2, llama, phi, gptj, starcoder2, mistral, qwen2, qwen3, smollm3, phi3, " \
                     "gemma2, gemma3_text, gemma3 (its text model)"

static const tc_arch *tc_find_arch(const char *model_type) {
    size_t i;
    for (i = 0; i < sizeof tc_archs / sizeof tc_archs[0]; i++)
        if (strcmp(tc_archs[i].model_type, model_type) == 0) return &tc_archs[i];
    return NULL;
}

/* >>plan -----------------------------------------------------------------------------------------
   Resolve the tables against the checkpoint: every output tensor with its source, its row
   gather and its place in the file. Output row r of a tensor reads source row
   (r / group) * stride + offset + r % group; a plain copy is one group. A transposed (Conv1D)
   source instead gives output row r = source column offset + r. */

static uint64_t tc_dim_value(const tc_hparams *hp, tc_dim d) {
    switch (d) {
    case TC_DIM_VOCAB: return hp->n_vocab;
    case TC_DIM_CTX: return hp->n_ctx;
    case TC_DIM_MODEL: return hp->d_model;
    case TC_DIM_FF: return hp->d_ff;
    case TC_DIM_Q: return (uint64_t)hp->n_heads * hp->d_head;
    case TC_DIM_KV: return (uint64_t)hp->n_kv_heads * hp->d_head;
    case TC_DIM_QKV: return (uint64_t)(hp->n_heads + 2u * hp->n_kv_heads) * hp->d_head;
    case TC_DIM_HEAD: return hp->d_head;
    case TC_DIM_FF2: return 2u * (uint64_t)hp->d_ff;
    case TC_DIM_ROPE_HALF: return hp->rope_dim / 2;
    case TC_DIM_NONE: break;
    }
    return 0;
}

static tc_out *tc_plan_add(tc_plan *p) {
    if (p->n_outs == p->cap_outs) {
        size_t cap = p->cap_outs ? p->cap_outs * 2 : 64;
        tc_out *g = (tc_out *)realloc(p->outs, cap * sizeof *g);
        if (!g) { tc_error("out of memory"); return NULL; }
        p->outs = g;
        p->cap_outs = cap;
    }
    memset(&p->outs[p->n_outs], 0, sizeof p->outs[0]);
    return &p->outs[p->n_outs++];
}

static int tc_is_skipped(const tc_arch *a, const char *name) {
    const char *const *s;
    size_t n = strlen(name);
    for (s = a->skip_suffixes; s && *s; s++) {
        size_t k = strlen(*s);
        if (n >= k && strcmp(name + n - k, *s) == 0) return 1;
    }
    for (s = a->skip_prefixes; s && *s; s++)
        if (strncmp(name, *s, strlen(*s)) == 0) return 1;
    return 0;
}

/* The tensor called name, or prefix + name for the arch's prefixes; full name into hf. */
static tc_tensor *tc_find_mapped(const tc_arch *a, const tc_checkpoint *c, const char *name,
                                 char *hf, size_t hf_bytes) {
    const char *const *p;
    tc_tensor *t;
    snprintf(hf, hf_bytes, "%s", name);
    if ((t = tc_find_tensor(c, hf)) != NULL) return t;
    for (p = a->prefixes; p && *p; p++) {
        snprintf(hf, hf_bytes, "%s%s", *p, name);
        if ((t = tc_find_tensor(c, hf)) != NULL) return t;
    }
    snprintf(hf, hf_bytes, "%s", name);
    return NULL;
}

/* Rows and first source row (or column) of part i of a fused q|k|v tensor. */
static void tc_part(const tc_tensor_map *m, const tc_hparams *hp, int i, uint64_t total,
                    uint64_t *rows, uint64_t *offset) {
    uint64_t q = (uint64_t)hp->n_heads * hp->d_head, kv = (uint64_t)hp->n_kv_heads * hp->d_head;
    if (m->op == TC_OP_COPY) {
        *rows = total;
        *offset = 0;
    } else if (m->op == TC_OP_SPLIT_HALVES) { /* gate | up */
        *rows = total / 2;
        *offset = (uint64_t)i * (total / 2);
    } else if (m->op == TC_OP_SPLIT_QKV_HEADS) { /* MHA: three equal parts, per head */
        *rows = q;
        *offset = (uint64_t)i * hp->d_head;
    } else {
        *rows = i == 0 ? q : kv;
        *offset = i == 0 ? 0 : i == 1 ? q : q + kv;
    }
}

/* The tfm dtype a GGUF block type runs as: itself when tfm.h has it (copied block for block),
   else the nearest wider type it has (requantized from the decoded values). */
static tfm_dtype tc_native_dtype(tc_dtype src, int *exact) {
    *exact = 1;
    switch (src) {
    case TC_F32: return TFM_DTYPE_F32;
    case TC_F16: return TFM_DTYPE_F16;
    case TC_BF16: return TFM_DTYPE_BF16;
    case TC_Q8_0: return TFM_DTYPE_Q8_0;
    case TC_Q4_0: return TFM_DTYPE_Q4_0;
    case TC_Q4_K: return TFM_DTYPE_Q4_K;
    case TC_Q6_K: return TFM_DTYPE_Q6_K;
    case TC_Q5_K: return TFM_DTYPE_Q5_K;
    case TC_Q5_0: return TFM_DTYPE_Q5_0;
    case TC_Q5_1: return TFM_DTYPE_Q5_1;
    default: *exact = 0; return TFM_DTYPE_Q8_0; /* Q4_1: blocks of 32 */
    }
}

/* What a matrix's output name says it is, for the --type recipes. */
static tq_role tc_role(const char *name, int tied) {
    if (strcmp(name, "output.w") == 0 || (tied && strcmp(name, "tok_embd") == 0)) return TQ_ROLE_OUTPUT;
    if (strstr(name, ".wv")) return TQ_ROLE_V;
    if (strstr(name, ".w_down")) return TQ_ROLE_DOWN;
    return TQ_ROLE_OTHER;
}

/* The dtype of output matrix `name` (cols per row) from source tensor t: with --type, the
   recipe's (quantized sources are decoded, then converted); without (a GGUF source), the
   source's own type, or the nearest wider one tfm.h runs (a notice says so). A notice names
   each fallback. tied: tok_embd is also the output head, and gets the head's type (as
   llama-quantize gives a tied token_embd its output type). */
static tfm_dtype tc_matrix_dtype(const char *type, const tc_tensor *t, const char *name, int layer,
                                 uint32_t n_layers, uint64_t cols, int tied) {
    int exact;
    bool fell_back = false;
    tfm_dtype d;
    if (!type) {
        d = tc_native_dtype(t->dtype, &exact);
        if (!exact) tc_warn("%s: %s is not a type tfm.h runs: requantized to %s", name, t->dtype_name,
                            tfm_dtype_describe(d).name);
        return d;
    }
    d = tq_matrix_dtype(type, tc_role(name, tied), layer, (int)n_layers, (int)cols, &fell_back);
    if (fell_back)
        tc_warn("%s: rows of %llu are not whole %s blocks: %s instead", name, (unsigned long long)cols,
                type, tfm_dtype_describe(d).name);
    return d;
}

/* One table entry for one layer (layer < 0: global). */
int tc_plan_entry(tc_plan *p, const tc_arch *a, const tc_tensor_map *m, int layer,
                  const tc_hparams *hp, const tc_checkpoint *c, const char *type) {
    char name[256], hf[300], want[96], got[96];
    uint64_t shape[2] = {0, 0}, total, inner;
    int rank = 0, i, conv = (m->flags & TC_CONV1D) != 0;
    int n_parts = m->op == TC_OP_COPY ? 1 : m->op == TC_OP_SPLIT_HALVES ? 2 : 3;
    int present = !((m->flags & TC_IF_ATTN_BIAS) && !hp->attn_bias) &&
                  !((m->flags & TC_IF_O_BIAS) && !hp->o_bias) &&
                  !((m->flags & TC_IF_QK_NORM) && !(hp->flags & TFM_FLAG_QK_NORM)) &&
                  !((m->flags & TC_IF_MLP_BIAS) && !hp->mlp_bias) &&
                  !((m->flags & TC_IF_UNTIED) && hp->tied_output);
    tc_tensor *t;
    snprintf(name, sizeof name, m->hf, layer);
    while (rank < 2 && m->shape[rank] != TC_DIM_NONE) {
        shape[rank] = tc_dim_value(hp, m->shape[rank]);
        rank++;
    }
    t = tc_find_mapped(a, c, name, hf, sizeof hf);
    if (!present) {
        if (t && (m->flags & TC_IF_UNTIED)) { /* Hugging Face ignores it too when tied */
            tc_warn("%s ignored: the output head is tied to the embedding", hf);
            t->used = 1;
        }
        return 1;
    }
    tc_shape_str(want, sizeof want, rank, shape);
    if (!t) {
        tc_error("missing tensor %s (expected shape %s)", hf, want);
        return 0;
    }
    tc_shape_str(got, sizeof got, t->rank, t->shape);
    if (t->rank != rank || t->shape[0] != shape[0] || (rank == 2 && t->shape[1] != shape[1])) {
        tc_error("tensor %s: shape %s in the checkpoint, expected %s", hf, got, want);
        return 0;
    }
    if (t->dtype == TC_OTHER) {
        tc_error("tensor %s: dtype %s is not supported (F32, F16, BF16)", hf, t->dtype_name);
        return 0;
    }
    if (m->op == TC_OP_SPLIT_QKV_HEADS && hp->n_kv_heads != hp->n_heads) {
        tc_error("tensor %s: a per-head fused q/k/v needs as many kv heads as heads", hf);
        return 0;
    }
    t->used = 1;
    total = conv ? shape[1] : shape[0];            /* output rows before the split */
    inner = conv ? shape[0] : rank == 2 ? shape[1] : 1;
    for (i = 0; i < n_parts; i++) {
        tc_out *o = tc_plan_add(p);
        if (!o) return 0;
        snprintf(o->name, sizeof o->name, m->tfm[i], layer);
        o->src = t;
        o->rank = rank;
        tc_part(m, hp, i, total, &o->rows, &o->offset);
        o->row_elems = inner;
        o->shape[0] = o->rows;
        o->shape[1] = rank == 2 ? inner : 0;
        o->dtype = rank == 2 && !(m->flags & TC_KEEP_F32)
                       ? (uint32_t)tc_matrix_dtype(type, t, o->name, layer, hp->n_layers, inner, hp->tied_output)
                       : TFM_DTYPE_F32; /* vectors: f32 */
        o->transposed = conv && rank == 2;
        o->src_cols = shape[1];
        o->group = m->op == TC_OP_SPLIT_QKV_HEADS ? hp->d_head : o->rows;
        o->stride = m->op == TC_OP_SPLIT_QKV_HEADS ? 3u * (uint64_t)hp->d_head : 0;
        o->add_one = (m->flags & TC_ADD_ONE) != 0;
    }
    return 1;
}

/* A generated f32 vector (the RoPE divisors), written from memory that outlives the plan. */
static int tc_plan_vector(tc_plan *p, const char *name, const float *data, uint32_t n) {
    tc_out *o = tc_plan_add(p);
    if (!o) return 0;
    snprintf(o->name, sizeof o->name, "%s", name);
    o->dtype = TFM_DTYPE_F32;
    o->rank = 1;
    o->shape[0] = o->rows = n;
    o->row_elems = 1;
    o->group = n;
    o->gen = data;
    return 1;
}

/* rope_freqs / rope_freqs_long from hp (when the config scales RoPE). */
int tc_plan_rope_freqs(tc_plan *p, const tc_hparams *hp) {
    if (hp->n_rope_freqs && !tc_plan_vector(p, "rope_freqs", hp->rope_freqs, hp->n_rope_freqs)) return 0;
    if (hp->has_rope_freqs_long && !tc_plan_vector(p, "rope_freqs_long", hp->rope_freqs_long, hp->n_rope_freqs))
        return 0;
    return 1;
}

/* The whole model: global entries in table order, the per-layer entries as one block per
   layer at the place of the first per-layer entry. Then every unused tensor is an error. */
int tc_plan_model(tc_plan *p, const tc_arch *a, const tc_hparams *hp, tc_checkpoint *c,
                  const char *type) {
    size_t i, j, n_unused = 0;
    int layers_done = 0, l;
    for (i = 0; i < a->n_tensors; i++) {
        if (!(a->tensors[i].flags & TC_LAYER)) {
            if (!tc_plan_entry(p, a, &a->tensors[i], -1, hp, c, type)) return 0;
            continue;
        }
        if (layers_done) continue;
        layers_done = 1;
        for (l = 0; l < (int)hp->n_layers; l++)
            for (j = i; j < a->n_tensors; j++)
                if ((a->tensors[j].flags & TC_LAYER) &&
                    !tc_plan_entry(p, a, &a->tensors[j], l, hp, c, type))
                    return 0;
    }
    for (i = 0; i < c->n_tensors; i++) {
        if (c->tensors[i].used || tc_is_skipped(a, c->tensors[i].name)) continue;
        if (n_unused++ < 5) tc_error("tensor %s in the checkpoint is not used by the %s converter",
                                     c->tensors[i].name, a->model_type);
    }
    if (n_unused) {
        tc_error("%lu unused checkpoint tensor(s) (more layers than the config says, or an "
                 "unsupported variant)", (unsigned long)n_unused);
        return 0;
    }
    return tc_plan_rope_freqs(p, hp);
}

/* >>tokenizer ------------------------------------------------------------------------------------
   Byte-level BPE from tokenizer.json or vocab.json + merges.txt into the tfm.h tokenizer blob.
   Vocab and merge strings are spelled in the GPT-2 byte-to-unicode alphabet; the blob stores
   raw bytes. Added tokens are stored as written (raw), with TFM_TOKATTR_ADDED and, when
   special, TFM_TOKATTR_SPECIAL.
   Llama-style tokenizer.json (model BPE with byte_fallback, spaces spelled U+2581 by a
   Prepend/Replace normalizer or a Metaspace pre-tokenizer) becomes a TFM_TOKENIZER_SPM blob:
   U+2581 turns into a space, "<0xNN>" into the byte NN with TFM_TOKATTR_BYTE, the merges are
   kept (tfm.h merges by their rank, as Hugging Face does) and each token's score is minus the
   rank of the first merge that makes it (-1e10, never merged by score, for the others). */

#define TC_SPM_SPACE "\xe2\x96\x81" /* U+2581, SentencePiece's visible space */

void tc_tok_free(tc_tok *t) {
    free(t->text_off);
    free(t->text_len);
    free(t->has_text);
    free(t->attrs);
    free(t->arena);
    free(t->merges);
    free((void *)t->h_key);
    free(t->h_len);
    free(t->h_id);
    free(t->concat);
    free(t->scores);
    free(t->chat[0]);
    free(t->chat[1]);
    free(t->chat[2]);
    memset(t, 0, sizeof *t);
}

/* bytes 33-126, 161-172, 174-255 are their own code point; the other 68 take U+0100.. in order */
static void tc_tok_alphabet(tc_tok *t) {
    uint32_t b, next = 0x100;
    memset(t->cp_valid, 0, sizeof t->cp_valid);
    for (b = 0; b < 256; b++) {
        int self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        uint32_t cp = self ? b : next++;
        t->cp_valid[cp] = 1;
        t->cp_byte[cp] = (unsigned char)b;
    }
}

int tc_tok_alloc(tc_tok *t, uint32_t n_tokens, size_t n_hash) {
    size_t cap = 16;
    while (cap < n_hash * 2) cap *= 2;
    t->n_tokens = n_tokens;
    t->text_off = (uint32_t *)calloc(n_tokens, sizeof *t->text_off);
    t->text_len = (uint32_t *)calloc(n_tokens, sizeof *t->text_len);
    t->has_text = (unsigned char *)calloc(n_tokens, 1);
    t->attrs = (unsigned char *)calloc(n_tokens, 1);
    t->h_key = (const char **)calloc(cap, sizeof *t->h_key);
    t->h_len = (uint32_t *)calloc(cap, sizeof *t->h_len);
    t->h_id = (int32_t *)calloc(cap, sizeof *t->h_id);
    t->h_cap = cap;
    t->bos_id = t->eos_id = t->unk_id = t->pad_id = -1;
    tc_tok_alphabet(t);
    if (!t->text_off || !t->text_len || !t->has_text || !t->attrs || !t->h_key || !t->h_len || !t->h_id) {
        tc_error("out of memory");
        return 0;
    }
    return 1;
}

static uint32_t tc_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* Slot of spelling s in the vocab hash (empty slot if absent). */
static size_t tc_tok_slot(const tc_tok *t, const char *s, size_t n) {
    size_t i = tc_hash(s, n) & (t->h_cap - 1);
    while (t->h_key[i] && !(t->h_len[i] == n && memcmp(t->h_key[i], s, n) == 0))
        i = (i + 1) & (t->h_cap - 1);
    return i;
}

static int32_t tc_tok_lookup(const tc_tok *t, const char *s, size_t n) {
    size_t i = tc_tok_slot(t, s, n);
    return t->h_key[i] ? t->h_id[i] : -1;
}

/* Append raw bytes to the arena and make them the text of id. */
int tc_tok_set_text(tc_tok *t, uint32_t id, const char *s, size_t n) {
    if (t->arena_bytes + n > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 1 << 16;
        char *g;
        while (cap < t->arena_bytes + n) cap *= 2;
        if (cap > 0xffffffffu || !(g = (char *)realloc(t->arena, cap))) {
            tc_error("tokenizer text too large or out of memory");
            return 0;
        }
        t->arena = g;
        t->arena_cap = cap;
    }
    if (n) memcpy(t->arena + t->arena_bytes, s, n);
    t->text_off[id] = (uint32_t)t->arena_bytes;
    t->text_len[id] = (uint32_t)n;
    t->has_text[id] = 1;
    t->arena_bytes += n;
    return 1;
}

/* Value of an upper-case hex digit, or -1. */
static int tc_hex_upper(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A vocab entry: spelling (alphabet, or SentencePiece's with spm_spelling) -> id. Decodes the
   spelling to raw bytes. */
int tc_tok_add_vocab(tc_tok *t, const char *s, size_t n, int64_t id, const char *src) {
    char raw[1024];
    size_t i = 0, o = 0, slot;
    if (id < 0 || id >= (int64_t)t->n_tokens) {
        tc_error("%s: token id %lld out of range", src, (long long)id);
        return 0;
    }
    if (t->has_text[id]) {
        tc_error("%s: token id %lld is used twice", src, (long long)id);
        return 0;
    }
    if (n > sizeof raw) {
        tc_error("%s: token id %lld: spelling longer than %lu bytes", src, (long long)id,
                 (unsigned long)sizeof raw);
        return 0;
    }
    if (t->spm_spelling && n == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' &&
        tc_hex_upper(s[3]) >= 0 && tc_hex_upper(s[4]) >= 0) { /* HF spells them <0x%02X> */
        raw[0] = (char)(tc_hex_upper(s[3]) * 16 + tc_hex_upper(s[4]));
        o = 1;
        i = n;
        t->attrs[id] = TFM_TOKATTR_BYTE;
    }
    while (t->spm_spelling && i < n) { /* SentencePiece spelling: U+2581 is the space */
        if (s[i] == ' ') {
            tc_error("%s: token id %lld (\"%.*s\") holds a space, which the normalizer makes "
                     "U+2581: not supported", src, (long long)id, (int)(n > 40 ? 40 : n), s);
            return 0;
        }
        if (n - i >= 3 && memcmp(s + i, TC_SPM_SPACE, 3) == 0) {
            raw[o++] = ' ';
            i += 3;
        } else {
            raw[o++] = s[i++];
        }
    }
    while (i < n) { /* UTF-8 (validated by the reader or checked here) -> alphabet bytes */
        const unsigned char *u = (const unsigned char *)s + i;
        size_t k = json_utf8_len(u, n - i);
        uint32_t cp = k == 1 ? u[0] : k == 2 ? ((uint32_t)(u[0] & 0x1f) << 6) | (u[1] & 0x3f) : 0xffffffffu;
        if (k == 0 || cp >= TC_ALPHABET_CPS || !t->cp_valid[cp]) {
            tc_error("%s: token id %lld (\"%.*s\") is not spelled in the byte-level alphabet", src,
                     (long long)id, (int)(n > 40 ? 40 : n), s);
            return 0;
        }
        raw[o++] = (char)t->cp_byte[cp];
        i += k;
    }
    slot = tc_tok_slot(t, s, n);
    if (t->h_key[slot]) {
        tc_error("%s: token \"%.*s\" appears twice", src, (int)(n > 40 ? 40 : n), s);
        return 0;
    }
    t->h_key[slot] = s;
    t->h_len[slot] = (uint32_t)n;
    t->h_id[slot] = (int32_t)id;
    return tc_tok_set_text(t, (uint32_t)id, raw, o);
}

/* A merge of two spellings; their ids and the id of their concatenation. */
static int tc_tok_add_merge(tc_tok *t, const char *a, size_t na, const char *b, size_t nb,
                            const char *src) {
    int32_t ia = tc_tok_lookup(t, a, na), ib = tc_tok_lookup(t, b, nb), im;
    uint32_t *m;
    if (na + nb > t->concat_cap) {
        size_t cap = (na + nb) * 2;
        char *g = (char *)realloc(t->concat, cap);
        if (!g) { tc_error("out of memory"); return 0; }
        t->concat = g;
        t->concat_cap = cap;
    }
    memcpy(t->concat, a, na);
    memcpy(t->concat + na, b, nb);
    im = tc_tok_lookup(t, t->concat, na + nb);
    if (ia < 0 || ib < 0 || im < 0) {
        const char *what = ia < 0 ? a : ib < 0 ? b : t->concat;
        size_t what_bytes = ia < 0 ? na : ib < 0 ? nb : na + nb;
        tc_error("%s: merge %lu: \"%.*s\" is not in the vocab", src, (unsigned long)t->n_merges,
                 (int)(what_bytes > 80 ? 80 : what_bytes), what);
        return 0;
    }
    if (t->n_merges == t->cap_merges) {
        size_t cap = t->cap_merges ? t->cap_merges * 2 : 1024;
        uint32_t *g;
        if (cap > 0x10000000u || !(g = (uint32_t *)realloc(t->merges, cap * 3 * sizeof *g))) {
            tc_error("too many merges or out of memory");
            return 0;
        }
        t->merges = g;
        t->cap_merges = cap;
    }
    m = t->merges + t->n_merges * 3;
    m[0] = (uint32_t)ia;
    m[1] = (uint32_t)ib;
    m[2] = (uint32_t)im;
    t->n_merges++;
    return 1;
}

/* "a b" -> a, b (one space; byte-level spellings never contain a space). */
int tc_tok_add_merge_line(tc_tok *t, const char *s, size_t n, const char *src) {
    const char *sp = (const char *)memchr(s, ' ', n);
    if (!sp || sp == s || sp + 1 == s + n || memchr(sp + 1, ' ', (size_t)(s + n - sp - 1))) {
        tc_error("%s: merge %lu (\"%.*s\"): expected two tokens separated by one space", src,
                 (unsigned long)t->n_merges, (int)(n > 60 ? 60 : n), s);
        return 0;
    }
    return tc_tok_add_merge(t, s, (size_t)(sp - s), sp + 1, (size_t)(s + n - sp - 1), src);
}

static int tc_id_value(const json_node *n, int64_t *id) {
    if (!n || n->type != JSON_NUMBER || !n->is_uint || n->u >= TFM_MAX_VOCAB) return 0;
    *id = (int64_t)n->u;
    return 1;
}

/* Largest id in a vocab object (and an added_tokens array) + 1. */
static int tc_tok_count(const json_doc *d, const json_node *vocab, const json_node *added,
                        const char *src, uint32_t *n_tokens) {
    const json_node *e;
    int64_t id, max_id = -1;
    for (e = json_first(d, vocab); e; e = json_next(d, e)) {
        if (!tc_id_value(e, &id)) {
            tc_error("%s: vocab entry \"%s\": id must be an integer below %d", src, json_key_str(d, e),
                     TFM_MAX_VOCAB);
            return 0;
        }
        if (id > max_id) max_id = id;
    }
    for (e = json_first(d, added); e; e = json_next(d, e)) {
        if (!tc_id_value(json_get(d, e, "id"), &id)) {
            tc_error("%s: added_tokens: every entry needs an integer id below %d", src, TFM_MAX_VOCAB);
            return 0;
        }
        if (id > max_id) max_id = id;
    }
    if (max_id < 0) {
        tc_error("%s: empty vocab", src);
        return 0;
    }
    *n_tokens = (uint32_t)max_id + 1u;
    return 1;
}

static int tc_tok_vocab_object(tc_tok *t, const json_doc *d, const json_node *vocab, const char *src) {
    const json_node *e;
    for (e = json_first(d, vocab); e; e = json_next(d, e)) {
        int64_t id = (int64_t)e->u;
        if (!tc_tok_add_vocab(t, json_key_str(d, e), e->key_bytes, id, src)) return 0;
    }
    return 1;
}

static int tc_tok_added(tc_tok *t, const json_doc *d, const json_node *added, const char *src) {
    const json_node *e;
    for (e = json_first(d, added); e; e = json_next(d, e)) {
        const json_node *content = json_get(d, e, "content"), *special = json_get(d, e, "special");
        const json_node *lstrip = json_get(d, e, "lstrip"), *rstrip = json_get(d, e, "rstrip");
        const json_node *single = json_get(d, e, "single_word");
        uint32_t id = (uint32_t)json_get(d, e, "id")->u;
        const char *s;
        if (!content || content->type != JSON_STRING ||
            (special && special->type != JSON_TRUE && special->type != JSON_FALSE)) {
            tc_error("%s: added token %u needs a string content (and boolean special)", src, id);
            return 0;
        }
        if (single && single->type == JSON_TRUE) {
            tc_error("%s: added token %u (\"%s\"): single_word = true is not supported", src, id,
                     json_str(d, content));
            return 0;
        }
        s = json_str(d, content);
        if (t->has_text[id] && (t->text_len[id] != content->str_bytes ||
                                memcmp(t->arena + t->text_off[id], s, content->str_bytes) != 0))
            tc_warn("%s: added token %u (\"%s\") replaces the vocab entry of that id", src, id, s);
        if (!tc_tok_set_text(t, id, s, content->str_bytes)) return 0;
        t->attrs[id] = (unsigned char)(TFM_TOKATTR_ADDED |
                                       (special && special->type == JSON_TRUE ? TFM_TOKATTR_SPECIAL : 0u) |
                                       (lstrip && lstrip->type == JSON_TRUE ? TFM_TOKATTR_LSTRIP : 0u) |
                                       (rstrip && rstrip->type == JSON_TRUE ? TFM_TOKATTR_RSTRIP : 0u));
    }
    return 1;
}

/* node is an object whose "type" is the string name. */
static int tc_type_is(const json_doc *d, const json_node *node, const char *name) {
    const json_node *type = json_get(d, node, "type");
    return type && json_str_is(d, type, name);
}

static const char *tc_type_name(const json_doc *d, const json_node *node) {
    const json_node *type = json_get(d, node, "type");
    return type && type->type == JSON_STRING ? json_str(d, type) : "(no type)";
}

/* node[key] is the string want (UTF-8). */
static int tc_str_is(const json_doc *d, const json_node *node, const char *key, const char *want) {
    const json_node *n = json_get(d, node, key);
    return n && json_str_is(d, n, want);
}

/* Llama-style byte_fallback BPE: the normalizer Sequence[Prepend(U+2581), Replace(" ", U+2581)]
   (either order; Prepend optional) with no pre-tokenizer, or no normalizer and a Metaspace
   pre-tokenizer (prepend_scheme first / always / never, or the older add_prefix_space). */
static int tc_tok_spm_options(tc_tok *t, const json_doc *d, const json_node *norm,
                              const json_node *pre, const char *src) {
    const json_node *e, *n;
    int replace = 0, prepend = 0;
    t->kind = TFM_TOKENIZER_SPM;
    t->spm_spelling = 1;
    t->pretok = TFM_PRETOK_NONE;
    if (norm && norm->type != JSON_NULL) {
        const json_node *list = tc_type_is(d, norm, "Sequence") ? json_get(d, norm, "normalizers") : NULL;
        for (e = list ? json_first(d, list) : norm; e; e = list ? json_next(d, e) : NULL) {
            const json_node *pattern = json_get(d, e, "pattern");
            if (tc_type_is(d, e, "Prepend") && tc_str_is(d, e, "prepend", TC_SPM_SPACE)) {
                prepend = 1;
            } else if (tc_type_is(d, e, "Replace") && tc_str_is(d, pattern, "String", " ") &&
                       tc_str_is(d, e, "content", TC_SPM_SPACE)) {
                replace = 1;
            } else {
                tc_error("%s: normalizer %s is not supported with byte_fallback (Prepend(U+2581) "
                         "and Replace(\" \", U+2581) only)", src, tc_type_name(d, e));
                return 0;
            }
        }
    }
    if (pre && replace && tc_type_is(d, pre, "Split") && tc_str_is(d, json_get(d, pre, "pattern"), "String", " ")) {
        /* Gemma: Split(" ", merged_with_previous) after Replace(" ", U+2581) finds no space to
           split at, so the whole normalized text is one pre-token */
        pre = NULL;
    }
    if (pre && pre->type != JSON_NULL) {
        const char *scheme = "always";
        if (!tc_type_is(d, pre, "Metaspace") || replace || prepend) {
            tc_error("%s: pre_tokenizer %s is not supported with byte_fallback (Metaspace without a "
                     "normalizer, or none)", src, tc_type_name(d, pre));
            return 0;
        }
        if ((n = json_get(d, pre, "replacement")) && !tc_str_is(d, pre, "replacement", TC_SPM_SPACE)) {
            tc_error("%s: Metaspace replacement other than U+2581 is not supported", src);
            return 0;
        }
        if ((n = json_get(d, pre, "prepend_scheme")) && n->type == JSON_STRING) scheme = json_str(d, n);
        else if ((n = json_get(d, pre, "add_prefix_space")) && n->type == JSON_FALSE) scheme = "never";
        if (strcmp(scheme, "first") == 0) {
            t->flags |= TFM_TOKFLAG_PREFIX_SPACE | TFM_TOKFLAG_PREFIX_FIRST | TFM_TOKFLAG_PREFIX_UNLESS_SPACE;
        } else if (strcmp(scheme, "always") == 0) {
            t->flags |= TFM_TOKFLAG_PREFIX_SPACE | TFM_TOKFLAG_PREFIX_UNLESS_SPACE;
        } else if (strcmp(scheme, "never") != 0) {
            tc_error("%s: Metaspace prepend_scheme \"%s\" is unknown", src, scheme);
            return 0;
        }
        t->metaspace_split = !((n = json_get(d, pre, "split")) && n->type == JSON_FALSE);
        replace = 1;
    }
    if (!replace) {
        tc_error("%s: byte_fallback BPE whose spaces stay spaces (no Replace(\" \", U+2581) "
                 "normalizer or Metaspace pre-tokenizer) is not supported", src);
        return 0;
    }
    if (prepend) t->flags |= TFM_TOKFLAG_PREFIX_SPACE;
    return 1;
}

/* The Llama-3 and Qwen2 pre-tokenizers' Split patterns, as their tokenizer.json spell them. */
static const char tc_llama3_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char tc_qwen2_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* ByteLevel {use_regex = regex, add_prefix_space false}: with its regex, the GPT-2 pattern. */
static int tc_tok_byte_level(const json_doc *d, const json_node *pre, int regex, const char *src) {
    const json_node *n;
    if (!tc_type_is(d, pre, "ByteLevel")) {
        tc_error("%s: pre_tokenizer %s is not supported (ByteLevel, Sequence[Digits, ByteLevel] or "
                 "Sequence[Split(Llama-3 or Qwen2 pattern), ByteLevel])", src,
                 pre ? tc_type_name(d, pre) : "(none)");
        return 0;
    }
    if (((n = json_get(d, pre, "use_regex")) && n->type == JSON_FALSE) == regex) {
        tc_error("%s: ByteLevel pre_tokenizer %s its regex is not supported here", src,
                 regex ? "without" : "with");
        return 0;
    }
    if ((n = json_get(d, pre, "add_prefix_space")) && n->type == JSON_TRUE) {
        /* TFM_TOKFLAG_PREFIX_SPACE is defined for the SentencePiece kind only (tfm.h >>tokenizer) */
        tc_error("%s: ByteLevel add_prefix_space = true is not supported", src);
        return 0;
    }
    return 1;
}

/* normalizer / pre_tokenizer / model options this blob can express; the rest is refused. */
static int tc_tok_options(tc_tok *t, const json_doc *d, const json_node *root, const json_node *model,
                          const char *src) {
    const json_node *norm = json_get(d, root, "normalizer"), *pre = json_get(d, root, "pre_tokenizer");
    const json_node *type, *n;
    static const char *const must_be_empty[] = {"continuing_subword_prefix", "end_of_word_suffix", NULL};
    const char *const *k;
    type = json_get(d, model, "type");
    if (type && !json_str_is(d, type, "BPE")) {
        tc_error("%s: model type %s is not supported (only BPE)", src,
                 type->type == JSON_STRING ? json_str(d, type) : "(not a string)");
        return 0;
    }
    for (k = must_be_empty; *k; k++)
        if ((n = json_get(d, model, *k)) && n->type != JSON_NULL &&
            !(n->type == JSON_STRING && n->str_bytes == 0)) {
            tc_error("%s: model.%s is not supported", src, *k);
            return 0;
        }
    if ((n = json_get(d, model, "ignore_merges")) && n->type == JSON_TRUE)
        t->flags |= TFM_TOKFLAG_IGNORE_MERGES;
    if ((n = json_get(d, model, "byte_fallback")) && n->type == JSON_TRUE) {
        if (t->flags & TFM_TOKFLAG_IGNORE_MERGES) {
            tc_error("%s: model.ignore_merges = true with byte_fallback is not supported", src);
            return 0;
        }
        return tc_tok_spm_options(t, d, norm, pre, src);
    }
    if (norm && norm->type != JSON_NULL) {
        type = json_get(d, norm, "type");
        if (!type || !json_str_is(d, type, "NFC")) {
            tc_error("%s: normalizer %s is not supported (none or NFC)", src,
                     type && type->type == JSON_STRING ? json_str(d, type) : "(no type)");
            return 0;
        }
        t->flags |= TFM_TOKFLAG_NFC;
    }
    t->pretok = TFM_PRETOK_GPT2;
    if (tc_type_is(d, pre, "Sequence")) { /* StarCoder2: [Digits(individual_digits), ByteLevel] */
        const json_node *list = json_get(d, pre, "pretokenizers"), *first = json_first(d, list);
        const json_node *bl = first ? json_next(d, first) : NULL;
        const json_node *pattern = json_get(d, first, "pattern"), *invert = json_get(d, first, "invert");
        if (tc_type_is(d, first, "Digits") && (n = json_get(d, first, "individual_digits")) &&
            n->type == JSON_TRUE && bl && !json_next(d, bl)) {
            t->pretok = TFM_PRETOK_GPT2_DIGITS;
        } else if (tc_type_is(d, first, "Split") &&
                   (tc_str_is(d, pattern, "Regex", tc_llama3_regex) ||
                    tc_str_is(d, pattern, "Regex", tc_qwen2_regex)) &&
                   tc_str_is(d, first, "behavior", "Isolated") && !(invert && invert->type == JSON_TRUE) &&
                   bl && !json_next(d, bl)) { /* Llama-3, Qwen2: [Split, ByteLevel(no regex)] */
            t->pretok = tc_str_is(d, pattern, "Regex", tc_llama3_regex) ? TFM_PRETOK_LLAMA3
                                                                        : TFM_PRETOK_QWEN2;
        } else {
            tc_error("%s: pre_tokenizer Sequence is supported as [Digits(individual_digits: true), "
                     "ByteLevel] or [Split(the Llama-3 or Qwen2 pattern, Isolated), ByteLevel] "
                     "only", src);
            return 0;
        }
        pre = bl;
    }
    return tc_tok_byte_level(d, pre, t->pretok != TFM_PRETOK_LLAMA3 && t->pretok != TFM_PRETOK_QWEN2,
                             src);
}

/* SentencePiece kind: score = -rank of the first merge that makes the token, -1e10 (below
   every merge, as llama2.c's -1e10 floor) for tokens no merge makes. With Metaspace split =
   true, HF merges within "U+2581 + text" pieces only; tfm.h cuts before a space that follows a
   non-space, the same pieces as long as no token holds a space after its first byte. */
static int tc_tok_spm_scores(tc_tok *t, const char *src) {
    size_t i;
    if (!(t->scores = (float *)malloc(t->n_tokens * sizeof *t->scores))) {
        tc_error("out of memory");
        return 0;
    }
    for (i = 0; i < t->n_tokens; i++) t->scores[i] = -1e10f;
    for (i = t->n_merges; i-- > 0;) t->scores[t->merges[3 * i + 2]] = -(float)i;
    for (i = 0; i < t->n_tokens; i++) {
        const char *p = t->arena + t->text_off[i];
        size_t k, n = t->has_text[i] && !(t->attrs[i] & TFM_TOKATTR_ADDED) ? t->text_len[i] : 0;
        if (t->metaspace_split && n > 1 && memchr(p + 1, ' ', n - 1)) {
            tc_error("%s: Metaspace split = true with token %lu holding U+2581 after its start: "
                     "not supported", src, (unsigned long)i);
            return 0;
        }
        for (k = 1; k < n && !(p[k] == ' ' && p[k - 1] != ' '); k++) {}
        if (k < n) { /* tfm.h merges word by word, cut before a space after a non-space */
            tc_warn("%s: token %lu holds U+2581 after another character; texts where Hugging Face "
                    "would use it tokenize differently in tfm.h", src, (unsigned long)i);
            break;
        }
    }
    return 1;
}

/* TemplateProcessing (alone or in a Sequence) whose single-text template starts with a special
   token: the model saw that token (BOS) first, so bos_id = it and TFM_TOKFLAG_ADD_BOS. */
static int tc_tok_post_processor(tc_tok *t, const json_doc *d, const json_node *pp, const char *src) {
    const json_node *e, *first, *last = NULL, *sp, *name, *ids;
    int64_t id;
    if (tc_type_is(d, pp, "Sequence")) {
        for (e = json_first(d, json_get(d, pp, "processors")); e; e = json_next(d, e))
            if (!tc_tok_post_processor(t, d, e, src)) return 0;
        return 1;
    }
    if (!tc_type_is(d, pp, "TemplateProcessing")) return 1;
    first = json_first(d, json_get(d, pp, "single"));
    for (e = first; e; e = json_next(d, e)) last = e;
    if ((sp = json_get(d, first, "SpecialToken")) != NULL) {
        name = json_get(d, sp, "id");
        ids = name && name->type == JSON_STRING
                  ? json_get(d, json_get(d, json_get(d, pp, "special_tokens"), json_str(d, name)), "ids")
                  : NULL;
        if (!ids || ids->type != JSON_ARRAY || ids->n_children != 1 ||
            !tc_id_value(json_first(d, ids), &id) || id >= (int64_t)t->n_tokens) {
            tc_error("%s: post_processor: its first special token needs one id in special_tokens", src);
            return 0;
        }
        t->bos_id = (int32_t)id;
        t->flags |= TFM_TOKFLAG_ADD_BOS;
    }
    if (last && last != first && json_get(d, last, "SpecialToken"))
        tc_warn("%s: the post_processor ends each text with a special token; tfm adds none", src);
    return 1;
}

static int tc_tok_from_tokenizer_json(tc_tok *t, const char *path) {
    json_doc d;
    const json_node *root, *model, *vocab, *merges, *added, *e, *unk;
    int ok = 0;
    if (!tc_read_json(path, &d)) return 0;
    root = json_at(&d, 0);
    model = json_get(&d, root, "model");
    vocab = json_get(&d, model, "vocab");
    merges = json_get(&d, model, "merges");
    added = json_get(&d, root, "added_tokens");
    if (!vocab || vocab->type != JSON_OBJECT || !merges || merges->type != JSON_ARRAY) {
        tc_error("%s: model.vocab (object) and model.merges (array) are required", path);
        goto done;
    }
    if (added && added->type == JSON_NULL) added = NULL;
    if (added && added->type != JSON_ARRAY) {
        tc_error("%s: added_tokens must be an array", path);
        goto done;
    }
    if (!tc_tok_count(&d, vocab, added, path, &t->n_tokens) ||
        !tc_tok_alloc(t, t->n_tokens, vocab->n_children) || !tc_tok_options(t, &d, root, model, path) ||
        !tc_tok_vocab_object(t, &d, vocab, path))
        goto done;
    for (e = json_first(&d, merges); e; e = json_next(&d, e)) {
        if (e->type == JSON_STRING) {
            if (!tc_tok_add_merge_line(t, json_str(&d, e), e->str_bytes, path)) goto done;
        } else if (e->type == JSON_ARRAY && e->n_children == 2 && json_first(&d, e)->type == JSON_STRING &&
                   json_next(&d, json_first(&d, e))->type == JSON_STRING) {
            const json_node *a = json_first(&d, e), *b = json_next(&d, a);
            if (!tc_tok_add_merge(t, json_str(&d, a), a->str_bytes, json_str(&d, b), b->str_bytes, path))
                goto done;
        } else {
            tc_error("%s: merge %lu must be \"a b\" or [\"a\", \"b\"]", path, (unsigned long)t->n_merges);
            goto done;
        }
    }
    if ((t->kind == TFM_TOKENIZER_SPM && !tc_tok_spm_scores(t, path)) ||
        !tc_tok_post_processor(t, &d, json_get(&d, root, "post_processor"), path))
        goto done;
    unk = json_get(&d, model, "unk_token");
    if (unk && unk->type == JSON_STRING) {
        t->unk_id = tc_tok_lookup(t, json_str(&d, unk), unk->str_bytes);
        if (t->unk_id < 0) tc_warn("%s: unk_token \"%s\" is not in the vocab", path, json_str(&d, unk));
    }
    ok = tc_tok_added(t, &d, added, path); /* last: the hash keys point into d */
done:
    json_free(&d);
    if (t->h_key) memset(t->h_key, 0, t->h_cap * sizeof *t->h_key); /* keys die with d */
    return ok;
}

/* GPT-2 layout: vocab.json {spelling: id} and merges.txt ("#version" line, then "a b" lines).
   <|endoftext|> is a special token there (Hugging Face's GPT2Tokenizer treats it so). */
static int tc_tok_from_vocab_merges(tc_tok *t, const char *vocab_path, const char *merges_path) {
    json_doc d;
    char *text = NULL;
    size_t n = 0, pos = 0;
    const json_node *vocab;
    int ok = 0, line_no = 0;
    int32_t eot;
    if (!tc_read_json(vocab_path, &d)) return 0;
    vocab = json_at(&d, 0);
    if (vocab->type != JSON_OBJECT) {
        tc_error("%s: expected an object {token: id}", vocab_path);
        goto done;
    }
    if (!tc_tok_count(&d, vocab, NULL, vocab_path, &t->n_tokens) ||
        !tc_tok_alloc(t, t->n_tokens, vocab->n_children) || !tc_tok_vocab_object(t, &d, vocab, vocab_path) ||
        !tc_read_file(merges_path, TC_MAX_JSON_BYTES, &text, &n))
        goto done;
    while (pos < n) {
        size_t end = pos, len;
        while (end < n && text[end] != '\n') end++;
        len = end - pos;
        if (len && text[pos + len - 1] == '\r') len--;
        if (!(line_no == 0 && len >= 8 && memcmp(text + pos, "#version", 8) == 0) && len > 0 &&
            !tc_tok_add_merge_line(t, text + pos, len, merges_path))
            goto done;
        line_no++;
        pos = end + 1;
    }
    t->pretok = TFM_PRETOK_GPT2;
    eot = tc_tok_lookup(t, "<|endoftext|>", 13);
    if (eot >= 0) t->attrs[eot] = TFM_TOKATTR_ADDED | TFM_TOKATTR_SPECIAL;
    ok = 1;
done:
    json_free(&d);
    free(text);
    if (t->h_key) memset(t->h_key, 0, t->h_cap * sizeof *t->h_key);
    return ok;
}

static int32_t tc_tok_find_raw(const tc_tok *t, const char *s) {
    size_t n = strlen(s);
    uint32_t i;
    for (i = 0; i < t->n_tokens; i++)
        if (t->has_text[i] && t->text_len[i] == n && memcmp(t->arena + t->text_off[i], s, n) == 0)
            return (int32_t)i;
    return -1;
}

/* A special id from config.json (an int, or a list whose first entry is used), or -1. */
static int tc_cfg_token_id(const tc_cfg *c, const char *key, const tc_tok *t, int32_t *out) {
    const json_node *n = c ? tc_cfg_node(c, key) : NULL;
    if (!n) return 1;
    if (n->type == JSON_ARRAY && n->n_children > 0) {
        tc_warn("%s: \"%s\" is a list; using its first entry", c->path, key);
        n = json_first(c->doc, n);
    }
    if (n->type != JSON_NUMBER || !n->is_uint || n->u >= t->n_tokens) {
        tc_error("%s: \"%s\" must be a token id below %u", c->path, key, t->n_tokens);
        return 0;
    }
    *out = (int32_t)n->u;
    return 1;
}

/* The id of tokenizer_config.json's bos_token / eos_token (a string or {"content": ...}), if
   that text is a token. */
static void tc_tok_config_token(tc_tok *t, const json_doc *d, const json_node *n, int32_t *id) {
    int32_t found;
    if (n && n->type == JSON_OBJECT) n = json_get(d, n, "content");
    if (n && n->type == JSON_STRING && (found = tc_tok_find_raw(t, json_str(d, n))) >= 0) *id = found;
}

int tc_tok_set_chat(tc_tok *t, int which, const char *s, size_t n) {
    char *p = (char *)malloc(n + 1);
    if (!p) {
        tc_error("out of memory");
        return 0;
    }
    memcpy(p, s, n);
    p[n] = '\0';
    free(t->chat[which]);
    t->chat[which] = p;
    t->chat_bytes[which] = n;
    return 1;
}

/* A special token's text in tokenizer_config.json: a string, or {"content": ...}; NULL for
   null or absent. */
static const json_node *tc_token_text(const json_doc *d, const json_node *n) {
    if (n && n->type == JSON_OBJECT) n = json_get(d, n, "content");
    return n && n->type == JSON_STRING ? n : NULL;
}

/* chat_template: a string, or a list of {"name", "template"} (the "default" one, as
   transformers takes it). */
static int tc_tok_config_chat(tc_tok *t, const json_doc *d, const json_node *n, const char *path) {
    const json_node *item;
    size_t i;
    if (!n || n->type == JSON_NULL) return 1;
    if (n->type == JSON_STRING) return tc_tok_set_chat(t, 0, json_str(d, n), n->str_bytes);
    if (n->type != JSON_ARRAY) {
        tc_warn("%s: chat_template is neither a string nor a list; no chat template", path);
        return 1;
    }
    for (i = 0, item = json_first(d, n); i < n->n_children; i++, item = json_next(d, item)) {
        const json_node *name = json_get(d, item, "name"), *tmpl = json_get(d, item, "template");
        if (name && json_str_is(d, name, "default") && tmpl &&
            tmpl->type == JSON_STRING)
            return tc_tok_set_chat(t, 0, json_str(d, tmpl), tmpl->str_bytes);
    }
    tc_warn("%s: chat_template lists no \"default\" template; no chat template", path);
    return 1;
}

/* chat_template.jinja or chat_template.json in dir (newer transformers save the template
   beside tokenizer_config.json). */
static int tc_tok_chat_files(tc_tok *t, const char *dir) {
    char *jinja = tc_path(dir, "chat_template.jinja"), *json = tc_path(dir, "chat_template.json");
    char *text = NULL;
    size_t n = 0;
    json_doc d;
    int ok = jinja && json;
    if (ok && tc_file_exists(jinja)) {
        ok = tc_read_file(jinja, (size_t)1 << 24, &text, &n) && tc_tok_set_chat(t, 0, text, n);
    } else if (ok && tc_file_exists(json) && (ok = tc_read_json(json, &d))) {
        ok = tc_tok_config_chat(t, &d, json_get(&d, json_at(&d, 0), "chat_template"), json);
        json_free(&d);
    }
    free(text);
    free(jinja);
    free(json);
    return ok;
}

/* tokenizer_config.json next to src, if there is one: bos_token, eos_token, add_bos_token,
   chat_template (and the bos / eos strings the template sees). */
static int tc_tok_config_json(tc_tok *t, const char *src) {
    const char *slash = strrchr(src, '/');
    char *dir = tc_strdup(src), *path = NULL;
    json_doc d;
    const json_node *root, *n;
    int ok = 1;
    if (!dir) return 0;
    if (slash) dir[slash - src] = '\0';
    else strcpy(dir, ".");
    if (!(path = tc_path(dir, "tokenizer_config.json"))) ok = 0;
    else if (tc_file_exists(path)) {
        if (!(ok = tc_read_json(path, &d))) goto done;
        root = json_at(&d, 0);
        tc_tok_config_token(t, &d, json_get(&d, root, "bos_token"), &t->bos_id);
        tc_tok_config_token(t, &d, json_get(&d, root, "eos_token"), &t->eos_id);
        if ((n = json_get(&d, root, "add_bos_token")) && n->type == JSON_TRUE) t->flags |= TFM_TOKFLAG_ADD_BOS;
        if (n && n->type == JSON_FALSE) t->flags &= ~(uint32_t)TFM_TOKFLAG_ADD_BOS;
        t->chat_tokens_given = 1;
        if ((n = tc_token_text(&d, json_get(&d, root, "bos_token"))))
            ok = tc_tok_set_chat(t, 1, json_str(&d, n), n->str_bytes);
        if (ok && (n = tc_token_text(&d, json_get(&d, root, "eos_token"))))
            ok = tc_tok_set_chat(t, 2, json_str(&d, n), n->str_bytes);
        if (ok) ok = tc_tok_config_chat(t, &d, json_get(&d, root, "chat_template"), path);
        json_free(&d);
    }
    if (ok && !t->chat[0]) ok = tc_tok_chat_files(t, dir);
done:
    free(dir);
    free(path);
    return ok;
}

/* bos / eos / pad: config.json when given, else tokenizer_config.json, else the post_processor's
   BOS, else <|endoftext|> for both (<s> and </s> for the SentencePiece kind). */
static int tc_tok_finish(tc_tok *t, const tc_cfg *cfg, const char *src) {
    uint32_t i, n_empty = 0;
    int spm = t->kind == TFM_TOKENIZER_SPM;
    int32_t eot = tc_tok_find_raw(t, spm ? "</s>" : "<|endoftext|>");
    if (t->bos_id < 0) t->bos_id = spm ? tc_tok_find_raw(t, "<s>") : eot;
    t->eos_id = eot;
    if (!tc_tok_config_json(t, src)) return 0;
    if ((t->flags & TFM_TOKFLAG_ADD_BOS) && t->bos_id < 0) {
        tc_warn("%s: the model wants BOS first, but there is no BOS token", src);
        t->flags &= ~(uint32_t)TFM_TOKFLAG_ADD_BOS;
    }
    if (!tc_cfg_token_id(cfg, "bos_token_id", t, &t->bos_id) ||
        !tc_cfg_token_id(cfg, "eos_token_id", t, &t->eos_id) ||
        !tc_cfg_token_id(cfg, "pad_token_id", t, &t->pad_id))
        return 0;
    for (i = 0; i < t->n_tokens; i++) n_empty += !t->has_text[i];
    if (n_empty) tc_warn("%s: %u token id(s) below %u have no text; they decode to nothing", src,
                         n_empty, t->n_tokens);
    return 1;
}

#define TC_MARKER_MAX 64  /* longest marker-looking substring checked against the vocabulary */
#define TC_MARKERS_LISTED 8

/* Length of a marker-looking substring at s: <|...|> and <｜...｜> (fullwidth bars, DeepSeek),
   <x_of_y> (<start_of_turn>) and [UPPER] / [/UPPER] ([INST]); 0 if none. A heuristic: the
   markers that chat templates write and tokenizers keep as added tokens. */
static size_t tc_chat_marker(const char *s, size_t n) {
    static const char *const bars[] = {"|", "\xef\xbd\x9c"};
    size_t i, k, b;
    if (n >= 2 && s[0] == '<') {
        for (k = 0; k < 2; k++) {
            b = strlen(bars[k]);
            if (n < 2 + 2 * b || memcmp(s + 1, bars[k], b) != 0) continue;
            for (i = 1 + b; i + b < n && i < TC_MARKER_MAX && s[i] != '<' && s[i] != '\n' && s[i] != '\'' && s[i] != '"'; i++)
                if (memcmp(s + i, bars[k], b) == 0 && s[i + b] == '>') return i + b + 1;
        }
        for (i = 1; i < n && i < TC_MARKER_MAX && ((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_'); i++) {}
        if (i < n && s[i] == '>' && i > 3) {
            for (k = 1; k + 4 <= i; k++)
                if (memcmp(s + k, "_of_", 4) == 0) return i + 1;
        }
    }
    if (n >= 3 && s[0] == '[') {
        for (i = 1 + (s[1] == '/'); i < n && i < TC_MARKER_MAX && ((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_'); i++) {}
        if (i < n && s[i] == ']' && i >= 3 + (s[1] == '/')) return i + 1;
    }
    return 0;
}

/* Warns about marker-looking substrings of the template (and bos / eos) that are not tokens:
   the prompt still renders, but they will be tokenized as plain text. */
static void tc_chat_check_markers(const tc_tok *t, const char *src) {
    char listed[TC_MARKERS_LISTED][TC_MARKER_MAX + 4], marker[TC_MARKER_MAX + 4];
    size_t i, len, n_listed = 0, n_missing = 0, k;
    const char *s = t->chat[0];
    for (i = 0; i < t->chat_bytes[0]; i += len ? len : 1) {
        if (!(len = tc_chat_marker(s + i, t->chat_bytes[0] - i)) || len > TC_MARKER_MAX) continue;
        memcpy(marker, s + i, len);
        marker[len] = '\0';
        if (tc_tok_find_raw(t, marker) >= 0) continue;
        for (k = 0; k < n_listed && strcmp(listed[k], marker); k++) {}
        if (k < n_listed) continue;
        n_missing++;
        if (n_listed < TC_MARKERS_LISTED) strcpy(listed[n_listed++], marker);
    }
    for (k = 1; k < 3; k++)
        if (t->chat[k] && t->chat_bytes[k] && tc_tok_find_raw(t, t->chat[k]) < 0)
            tc_warn("%s: the chat template's %s \"%s\" is not a token of the vocabulary; it will be "
                    "tokenized as text", src, k == 1 ? "bos_token" : "eos_token", t->chat[k]);
    if (!n_missing) return;
    for (k = 0; k < n_listed; k++)
        tc_warn("%s: chat template marker \"%s\" is not a token of the vocabulary; the prompt renders, "
                "but it will be tokenized as text", src, listed[k]);
    if (n_missing > n_listed) tc_warn("%s: and %lu more such markers", src, (unsigned long)(n_missing - n_listed));
}

int tc_tok_chat_finish(tc_tok *t, const char *override_path, const char *src) {
    char *text = NULL;
    size_t n = 0, k;
    if (override_path) {
        if (!tc_read_file(override_path, (size_t)1 << 24, &text, &n)) return 0;
        k = tc_tok_set_chat(t, 0, text, n);
        free(text);
        if (!k) return 0;
    }
    if (!t->chat[0]) return 1;
    if (!t->chat_tokens_given) { /* GGUF, llama2.c, no tokenizer_config.json: the ids' texts */
        int32_t ids[2];
        ids[0] = t->bos_id;
        ids[1] = t->eos_id;
        for (k = 0; k < 2; k++)
            if (ids[k] >= 0 && (uint32_t)ids[k] < t->n_tokens && t->has_text[ids[k]] &&
                !tc_tok_set_chat(t, (int)k + 1, t->arena + t->text_off[ids[k]], t->text_len[ids[k]]))
                return 0;
    }
    tc_chat_check_markers(t, src);
    return 1;
}

/* The blob exactly as tfm.h's FILE FORMAT describes it. */
int tc_tok_blob(const tc_tok *t, unsigned char **out, size_t *out_bytes) {
    size_t n = t->n_tokens, text_bytes = 0, off, i, bytes;
    size_t offsets_at = TFMW_BLOB_HEADER_BYTES, scores_at = offsets_at + 4 * (n + 1);
    size_t attrs_at = scores_at + 4 * n, merges_at = (attrs_at + n + 3) & ~(size_t)3;
    size_t text_at = merges_at + 12 * t->n_merges, chat_at, k;
    unsigned char *b;
    for (i = 0; i < n; i++) text_bytes += t->text_len[i];
    chat_at = text_at + text_bytes;
    bytes = chat_at;
    for (k = 0; t->chat[0] && k < 3; k++) bytes += t->chat_bytes[k];
    if (text_bytes > 0xffffffffu || bytes > 0xffffffffu) {
        tc_error("tokenizer blob too large");
        return 0;
    }
    b = (unsigned char *)calloc(bytes, 1);
    if (!b) { tc_error("out of memory"); return 0; }
    tfmw_put_u32(b + 0, t->kind ? t->kind : (uint32_t)TFM_TOKENIZER_BPE_BYTES);
    tfmw_put_u32(b + 4, (uint32_t)n);
    tfmw_put_u32(b + 8, (uint32_t)t->n_merges);
    tfmw_put_u32(b + 12, t->flags);
    tfmw_put_u32(b + 16, t->pretok);
    tfmw_put_u32(b + 20, (uint32_t)t->bos_id);
    tfmw_put_u32(b + 24, (uint32_t)t->eos_id);
    tfmw_put_u32(b + 28, (uint32_t)t->unk_id);
    tfmw_put_u32(b + 32, (uint32_t)t->pad_id);
    tfmw_put_u32(b + 36, (uint32_t)text_bytes);
    for (i = 0, off = 0; i < n; i++) {
        tfmw_put_u32(b + offsets_at + 4 * i, (uint32_t)off);
        if (t->text_len[i]) memcpy(b + text_at + off, t->arena + t->text_off[i], t->text_len[i]);
        off += t->text_len[i];
        b[attrs_at + i] = t->attrs[i]; /* no scores: 0.0f (BPE ranks are the merge order) */
        if (t->scores) tfmw_put_f32(b + scores_at + 4 * i, t->scores[i]);
    }
    tfmw_put_u32(b + offsets_at + 4 * n, (uint32_t)off);
    for (i = 0; i < 3 * t->n_merges; i++) tfmw_put_u32(b + merges_at + 4 * i, t->merges[i]);
    for (k = 0; t->chat[0] && k < 3; k++) { /* template, bos_token, eos_token after the text */
        tfmw_put_u32(b + 40 + 4 * k, (uint32_t)t->chat_bytes[k]);
        if (t->chat_bytes[k]) memcpy(b + chat_at, t->chat[k], t->chat_bytes[k]);
        chat_at += t->chat_bytes[k];
    }
    *out = b;
    *out_bytes = bytes;
    return 1;
}

/* Finds a tokenizer in src (a directory, or a tokenizer.json path). found = 0 if none. */
static int tc_tok_load(tc_tok *t, const char *src, const tc_cfg *cfg, int *found) {
    char *tj = NULL, *vj = NULL, *mt = NULL;
    size_t n = strlen(src);
    int ok = 0;
    memset(t, 0, sizeof *t);
    *found = 1;
    if (n >= 5 && strcmp(src + n - 5, ".json") == 0 && tc_file_exists(src)) {
        ok = tc_tok_from_tokenizer_json(t, src) && tc_tok_finish(t, cfg, src);
        return ok;
    }
    tj = tc_path(src, "tokenizer.json");
    vj = tc_path(src, "vocab.json");
    mt = tc_path(src, "merges.txt");
    if (!tj || !vj || !mt) tc_error("out of memory");
    else if (tc_file_exists(tj)) ok = tc_tok_from_tokenizer_json(t, tj) && tc_tok_finish(t, cfg, tj);
    else if (tc_file_exists(vj) && tc_file_exists(mt))
        ok = tc_tok_from_vocab_merges(t, vj, mt) && tc_tok_finish(t, cfg, vj);
    else {
        *found = 0;
        ok = 1;
    }
    free(tj);
    free(vj);
    free(mt);
    return ok;
}

/* >>writer ---------------------------------------------------------------------------------------
   Header, directory, tokenizer blob, then each tensor streamed from the checkpoint in chunks,
   converted element by element. Everything goes to OUT.tmp, renamed at the end. */

typedef struct tc_writer {
    FILE *f;
    const char *path;       /* the .tmp path */
    uint64_t at;            /* bytes written */
    unsigned char *in, *out; /* chunk buffers */
    size_t in_cap, out_cap;
    float *f32;             /* a chunk as f32 on its way to another dtype */
    size_t f32_cap;         /* bytes */
    float *chk;             /* the converted chunk decoded back (tc_check_finite) */
    size_t chk_cap;         /* bytes */
    uint64_t total_bytes, done_bytes, next_report;
    size_t n_done, n_total;
    int quiet;
} tc_writer;

static int tc_w(tc_writer *w, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, w->f) != n) {
        tc_error("%s: write failed: %s", w->path, strerror(errno));
        return 0;
    }
    w->at += n;
    return 1;
}

static int tc_w_zeros_to(tc_writer *w, uint64_t offset) {
    static const unsigned char zeros[TFMW_ALIGN];
    while (w->at < offset) {
        uint64_t n = offset - w->at;
        if (!tc_w(w, zeros, (size_t)(n < TFMW_ALIGN ? n : TFMW_ALIGN))) return 0;
    }
    return 1;
}

static int tc_grow(unsigned char **buf, size_t *cap, size_t need) {
    unsigned char *g;
    if (need <= *cap) return 1;
    g = (unsigned char *)realloc(*buf, need);
    if (!g) { tc_error("out of memory (%lu bytes)", (unsigned long)need); return 0; }
    *buf = g;
    *cap = need;
    return 1;
}

static size_t tc_src_elem_bytes(tc_dtype d) { return d == TC_F32 ? 4 : 2; }

/* The GGUF block type of a quantized source dtype, or 0 (F32 is 0 there too: never a block). */
uint32_t tc_block_type(tc_dtype d) {
    return d == TC_Q4_0 ? GGUF_TYPE_Q4_0 : d == TC_Q4_1 ? GGUF_TYPE_Q4_1 : d == TC_Q5_0 ? GGUF_TYPE_Q5_0
         : d == TC_Q5_1 ? GGUF_TYPE_Q5_1 : d == TC_Q8_0 ? GGUF_TYPE_Q8_0 : d == TC_Q4_K ? GGUF_TYPE_Q4_K
         : d == TC_Q5_K ? GGUF_TYPE_Q5_K : d == TC_Q6_K ? GGUF_TYPE_Q6_K : 0u;
}

/* Source bytes of n elements (a whole number of blocks for the quantized dtypes). */
static uint64_t tc_src_bytes(tc_dtype d, uint64_t n) {
    uint32_t bt = tc_block_type(d);
    return bt ? n / gguf_block_elems(bt) * gguf_block_bytes(bt) : n * tc_src_elem_bytes(d);
}

/* The tfm dtype whose bytes are exactly src's (a block-for-block copy), or -1. */
static int tc_same_dtype(tc_dtype src) {
    int exact;
    tfm_dtype d = tc_native_dtype(src, &exact);
    return exact ? (int)d : -1;
}

/* Index of the first NaN / Inf of x[0..n), or n. */
static size_t tc_first_not_finite(const float *x, size_t n) {
    size_t i;
    for (i = 0; i < n; i++)
        if (!(x[i] > -INFINITY && x[i] < INFINITY)) break;
    return i;
}

/* The converted chunk out[0..n) of dtype dst, decoded back through tfm.h, holds only finite
   values; src_f32 (NULL for a byte-for-byte copy) holds the source values, already checked.
   Else an error naming the tensor: a value past the type's range (f16: 65504; a quantized
   block's f16 scale) becomes Inf, which eval would meet as NaN logits. */
static int tc_check_finite(tc_writer *w, const char *name, const float *src_f32, const unsigned char *out,
                           uint32_t dst, size_t n) {
    size_t bad;
    if (!tc_grow((unsigned char **)&w->chk, &w->chk_cap, n * sizeof(float)) ||
        tfm_dtype_to_f32((tfm_dtype)dst, out, w->chk, n) != TFM_OK)
        return 0;
    if ((bad = tc_first_not_finite(w->chk, n)) == n) return 1;
    if (src_f32)
        tc_error("tensor %s: element %lu, %g, is %g as %s: past what that type holds (f16 and the block "
                 "scales of the quantized types: 65504); use --type bf16 or f32", name, (unsigned long)bad,
                 (double)src_f32[bad], (double)w->chk[bad], tfm_dtype_describe((tfm_dtype)dst).name);
    else
        tc_error("tensor %s: element %lu of the source is %s (a NaN or Inf value or block scale)", name,
                 (unsigned long)bad, w->chk[bad] != w->chk[bad] ? "NaN" : "inf");
    return 0;
}

/* n elements (whole blocks of both) of src dtype -> dst: copied byte for byte when src is dst
   (a GGUF's blocks import bit-exact), else decoded to f32 and converted or quantized with
   tfm.h's own dtype table (tfm_dtype_from_f32). NaN / Inf in the source or the result are an
   error naming the tensor (tc_check_finite). */
static int tc_convert(tc_writer *w, const char *name, const unsigned char *in, tc_dtype src, unsigned char *out,
                      uint32_t dst, size_t n) {
    size_t i;
    uint32_t bt = tc_block_type(src);
    size_t be = bt ? gguf_block_elems(bt) : 1;
    if (tc_same_dtype(src) == (int)dst) {
        memcpy(out, in, (size_t)tc_src_bytes(src, n));
        return tc_check_finite(w, name, NULL, out, dst, n);
    }
    if (!tc_grow((unsigned char **)&w->f32, &w->f32_cap, n * sizeof(float))) return 0;
    for (i = 0; i < n; i += be) {
        if (bt) gguf_dequantize_block(bt, in + i / be * gguf_block_bytes(bt), w->f32 + i);
        else if (src == TC_F32) w->f32[i] = tfm__rd_f32(in + 4 * i);
        else if (src == TC_F16) w->f32[i] = tfm__f16_to_f32((uint16_t)(in[2 * i] | (in[2 * i + 1] << 8)));
        else w->f32[i] = tfm__bf16_to_f32((uint16_t)(in[2 * i] | (in[2 * i + 1] << 8)));
    }
    if ((i = tc_first_not_finite(w->f32, n)) < n) {
        tc_error("tensor %s: element %lu of the source is %s (a NaN or Inf value or block scale)", name,
                 (unsigned long)i, w->f32[i] != w->f32[i] ? "NaN" : "inf");
        return 0;
    }
    return tfm_dtype_from_f32((tfm_dtype)dst, w->f32, out, n) == TFM_OK && tc_check_finite(w, name, w->f32, out, dst, n);
}

/* Bytes of n_rows rows of row_elems in dtype d (whole blocks: planned so). */
static size_t tc_out_bytes(uint32_t d, uint64_t n_rows, uint64_t row_elems) {
    return (size_t)(n_rows * tfm_dtype_row_bytes((tfm_dtype)d, (size_t)row_elems));
}

static void tc_progress(tc_writer *w) {
    if (w->quiet || w->total_bytes < TC_PROGRESS_MIN_BYTES || w->done_bytes < w->next_report) return;
    fprintf(stderr, "tfm-convert: %3d%%  %lu/%lu tensors, %.1f MB\n",
            (int)(w->total_bytes ? 100.0 * (double)w->done_bytes / (double)w->total_bytes : 100.0),
            (unsigned long)w->n_done, (unsigned long)w->n_total, (double)w->done_bytes / 1e6);
    while (w->next_report <= w->done_bytes) w->next_report += w->total_bytes / 10 + 1;
}

/* Conv1D layout: the whole source [row_elems, src_cols] is read (one tensor at a time), and
   output row r gathers source column offset + r. */
static int tc_write_transposed(tc_writer *w, const tc_out *o, const tc_checkpoint *ck) {
    const tc_tensor *t = o->src;
    const tc_shard *s = &ck->shards[t->shard];
    size_t es = tc_src_elem_bytes(t->dtype), out_row = tc_out_bytes(o->dtype, 1, o->row_elems);
    size_t k_n = (size_t)o->row_elems, row_bytes = k_n * es;
    uint64_t r, k;
    if (t->bytes > (uint64_t)(SIZE_MAX / 2)) {
        tc_error("tensor %s: too large for this platform", t->name);
        return 0;
    }
    if (!tc_grow(&w->in, &w->in_cap, (size_t)t->bytes + row_bytes) ||
        !tc_grow(&w->out, &w->out_cap, out_row) ||
        !tc_read_at(s->file, s->path, t->offset, w->in, (size_t)t->bytes))
        return 0;
    for (r = 0; r < o->rows; r++) {
        unsigned char *row = w->in + t->bytes; /* scratch after the source */
        for (k = 0; k < o->row_elems; k++)
            memcpy(row + k * es, w->in + (k * o->src_cols + o->offset + r) * es, es);
        if (!tc_convert(w, t->name, row, t->dtype, w->out, o->dtype, k_n) || !tc_w(w, w->out, out_row)) return 0;
    }
    w->done_bytes += o->data_bytes;
    return 1;
}

/* A generated f32 vector: its values as they are. */
static int tc_write_generated(tc_writer *w, const tc_out *o) {
    uint64_t i;
    unsigned char b[4];
    for (i = 0; i < o->rows; i++) {
        tfmw_put_f32(b, o->gen[i]);
        if (!tc_w(w, b, 4)) return 0;
    }
    w->done_bytes += o->data_bytes;
    w->n_done++;
    return 1;
}

/* n converted f32 values + 1 in f32 (Gemma's zero-centred norm weights). */
static void tc_add_one(unsigned char *out, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) tfmw_put_f32(out + 4 * i, tfm__rd_f32(out + 4 * i) + 1.0f);
}

static int tc_write_tensor(tc_writer *w, const tc_out *o, const tc_checkpoint *ck) {
    const tc_tensor *t = o->src;
    const tc_shard *s;
    uint64_t chunk_rows = TC_CHUNK_BYTES / (o->row_elems * 4), r = 0, row_bytes;
    if (!tc_w_zeros_to(w, o->data_offset)) return 0;
    if (o->gen) return tc_write_generated(w, o);
    s = &ck->shards[t->shard];
    row_bytes = tc_src_bytes(t->dtype, o->row_elems); /* whole blocks: ne0 % block == 0 */
    if (chunk_rows == 0) chunk_rows = 1;
    if (o->transposed) {
        if (!tc_write_transposed(w, o, ck)) return 0;
        r = o->rows;
    }
    while (r < o->rows) {
        uint64_t g = r % o->group, run = o->group - g, src_row, n;
        if (run > o->rows - r) run = o->rows - r;
        if (run > chunk_rows) run = chunk_rows;
        src_row = (r / o->group) * o->stride + o->offset + g;
        n = run * o->row_elems;
        if (!tc_grow(&w->in, &w->in_cap, (size_t)(run * row_bytes)) ||
            !tc_grow(&w->out, &w->out_cap, tc_out_bytes(o->dtype, run, o->row_elems)) ||
            !tc_read_at(s->file, s->path, t->offset + src_row * row_bytes, w->in,
                        (size_t)(run * row_bytes)) ||
            !tc_convert(w, t->name, w->in, t->dtype, w->out, o->dtype, (size_t)n))
            return 0;
        if (o->add_one && o->dtype == TFM_DTYPE_F32) tc_add_one(w->out, (size_t)n);
        if (!tc_w(w, w->out, tc_out_bytes(o->dtype, run, o->row_elems))) return 0;
        w->done_bytes += tc_out_bytes(o->dtype, run, o->row_elems);
        r += run;
    }
    w->n_done++;
    tc_progress(w);
    return 1;
}

/* Places the layer table (after the directory), the blob and the tensors (tools/tfm_write.h);
   returns the file size. */
static uint64_t tc_layout(tc_plan *p, const tc_hparams *hp, size_t blob_bytes, uint64_t *blob_at,
                          uint64_t *table_at) {
    uint64_t at = tfmw_dir_end(p->n_outs);
    size_t i;
    *table_at = hp->has_layer_table ? tfmw_place_layer_table(&at, hp->n_layers) : 0;
    *blob_at = blob_bytes ? tfmw_place(&at, blob_bytes) : 0;
    for (i = 0; i < p->n_outs; i++) {
        tc_out *o = &p->outs[i];
        o->data_bytes = tc_out_bytes(o->dtype, o->rows, o->row_elems);
        o->data_offset = tfmw_place(&at, o->data_bytes);
    }
    return at;
}

static void tc_header(unsigned char *h, const tc_hparams *hp, uint32_t n_tensors, uint64_t blob_at,
                      uint64_t blob_bytes, uint64_t table_at) {
    tfmw_header w;
    memset(&w, 0, sizeof w);
    w.arch = hp->arch;
    w.n_vocab = hp->n_vocab;
    w.n_ctx = hp->n_ctx;
    w.n_layers = hp->n_layers;
    w.n_heads = hp->n_heads;
    w.n_kv_heads = hp->n_kv_heads;
    w.d_model = hp->d_model;
    w.d_head = hp->d_head;
    w.d_ff = hp->d_ff;
    w.rope_dim = hp->rope_dim;
    w.rope_theta = hp->rope_theta;
    w.norm_eps = hp->norm_eps;
    w.norm = hp->norm;
    w.act = hp->act;
    w.ffn = hp->ffn;
    w.residual = hp->residual;
    w.pos = hp->pos;
    w.n_tensors = n_tensors;
    w.tokenizer_offset = blob_at;
    w.tokenizer_bytes = blob_bytes;
    w.flags = hp->flags;
    w.attn_scale = hp->attn_scale;
    w.attn_softcap = hp->attn_softcap;
    w.logit_softcap = hp->logit_softcap;
    w.embed_scale = hp->embed_scale;
    w.rope_theta_local = hp->rope_theta_local;
    w.rope_attn_factor = hp->rope_attn_factor;
    w.rope_orig_ctx = hp->rope_orig_ctx;
    w.layer_table_offset = table_at;
    tfmw_header_bytes(h, &w);
}

/* The layer table (tools/tfm_write.h): each layer's window and RoPE kind. */
static int tc_write_layer_table(tc_writer *w, const tc_hparams *hp, uint64_t table_at) {
    unsigned char e[TFMW_LAYER_ENTRY_BYTES];
    uint32_t l;
    if (!table_at) return 1;
    if (!tc_w_zeros_to(w, table_at)) return 0;
    for (l = 0; l < hp->n_layers; l++) {
        tfmw_layer_entry_bytes(e, hp->window[l], hp->rope_kind[l]);
        if (!tc_w(w, e, sizeof e)) return 0;
    }
    return 1;
}

static void tc_dir_entry(unsigned char *e, const tc_out *o) {
    tfmw_tensor t;
    t.name = o->name;
    t.dtype = o->dtype;
    t.rank = o->rank;
    t.shape[0] = o->shape[0];
    t.shape[1] = o->shape[1];
    t.data_offset = o->data_offset;
    t.data_bytes = o->data_bytes;
    tfmw_entry_bytes(e, &t);
}

/* The logger of tc_opens: keeps the library's last detail line. */
static void tc_keep_log(void *user, tfm_result r, const char *msg) {
    (void)r;
    snprintf((char *)user, TC_LOG_BYTES, "%s", msg);
}

/* The written file passes tfm.h's own checks (header, directory, tokenizer blob, layer
   table): tfm_model_open, before it replaces OUT, so an exit status of 0 means it opens. */
static int tc_opens(const char *path, const char *out_path) {
    char detail[TC_LOG_BYTES] = "";
    tfm_model_desc md;
    tfm_model *m = NULL;
    tfm_result r;
    memset(&md, 0, sizeof md);
    md.path = path;
    md.logger.log = tc_keep_log;
    md.logger.user = detail;
    r = tfm_model_open(&md, &m);
    tfm_model_close(m);
    if (r == TFM_OK) return 1;
    tc_error("%s: the file written does not open with tfm.h (%s: %s); nothing written", out_path,
             tfm_result_string(r), detail[0] ? detail : "no detail");
    return 0;
}

int tc_write_file(const char *out_path, const tc_hparams *hp, tc_plan *p,
                  const unsigned char *blob, size_t blob_bytes, const tc_checkpoint *ck, int quiet) {
    tc_writer w;
    unsigned char buf[TFMW_HEADER_BYTES];
    uint64_t blob_at, table_at, file_bytes = tc_layout(p, hp, blob_bytes, &blob_at, &table_at);
    char *tmp = (char *)malloc(strlen(out_path) + 5);
    size_t i;
    int ok = 0;
    memset(&w, 0, sizeof w);
    if (!tmp) { tc_error("out of memory"); return 0; }
    sprintf(tmp, "%s.tmp", out_path);
    w.path = tmp;
    w.quiet = quiet;
    w.n_total = p->n_outs;
    for (i = 0; i < p->n_outs; i++) w.total_bytes += p->outs[i].data_bytes;
    w.next_report = w.total_bytes / 10 + 1;
    w.f = fopen(tmp, "wb");
    if (!w.f) {
        tc_error("cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        return 0;
    }
    tc_header(buf, hp, (uint32_t)p->n_outs, blob_at, blob_bytes, table_at);
    if (!tc_w(&w, buf, TFMW_HEADER_BYTES)) goto done;
    for (i = 0; i < p->n_outs; i++) {
        tc_dir_entry(buf, &p->outs[i]);
        if (!tc_w(&w, buf, TFMW_DIR_ENTRY_BYTES)) goto done;
    }
    if (!tc_write_layer_table(&w, hp, table_at)) goto done;
    if (blob_bytes && (!tc_w_zeros_to(&w, blob_at) || !tc_w(&w, blob, blob_bytes))) goto done;
    for (i = 0; i < p->n_outs; i++)
        if (!tc_write_tensor(&w, &p->outs[i], ck)) goto done;
    if (w.at != file_bytes) {
        tc_error("internal: wrote %llu bytes, planned %llu", (unsigned long long)w.at,
                 (unsigned long long)file_bytes);
        goto done;
    }
    ok = 1;
done:
    if (fclose(w.f) != 0 && ok) {
        tc_error("%s: write failed: %s", tmp, strerror(errno));
        ok = 0;
    }
    if (ok && !tc_opens(tmp, out_path)) ok = 0;
    if (ok && rename(tmp, out_path) != 0) {
        remove(out_path); /* platforms whose rename does not replace */
        if (rename(tmp, out_path) != 0) {
            tc_error("cannot rename %s to %s: %s", tmp, out_path, strerror(errno));
            ok = 0;
        }
    }
    if (!ok) remove(tmp);
    if (ok && !quiet)
        fprintf(stderr, "tfm-convert: wrote %s: %lu tensors, %llu bytes\n", out_path,
                (unsigned long)p->n_outs, (unsigned long long)file_bytes);
    free(w.in);
    free(w.out);
    free(w.f32);
    free(w.chk);
    free(tmp);
    return ok;
}

/* >>check ----------------------------------------------------------------------------------------
   --check: open the written file with tfm.h and print what it sees. */

static void tc_check_log(void *user, tfm_result r, const char *msg) {
    (void)user;
    fprintf(stderr, "tfm-convert: check: %s: %s\n", tfm_result_string(r), msg);
}

#define TC_CHECK_TEXT "Hello world, this is tfm."
#define TC_CHECK_MAX_IDS 64

/* Tokenize a sample and join the pieces back: the blob must round-trip it. */
static int tc_check_tokenizer(const tfm_model *model) {
    int32_t ids[TC_CHECK_MAX_IDS];
    char joined[256];
    size_t n_ids = 0, n = 0, i, text_bytes = strlen(TC_CHECK_TEXT);
    tfm_result r = tfm_model_tokenize(model, TC_CHECK_TEXT, text_bytes, ids, TC_CHECK_MAX_IDS, &n_ids);
    if (r != TFM_OK) {
        tc_error("check: tokenize: %s", tfm_result_string(r));
        return 0;
    }
    printf("  \"%s\" ->", TC_CHECK_TEXT);
    for (i = 0; i < n_ids; i++) {
        const char *piece;
        size_t piece_bytes;
        printf(" %d", (int)ids[i]);
        if (tfm_model_token_piece(model, ids[i], &piece, &piece_bytes) != TFM_OK ||
            n + piece_bytes > sizeof joined) {
            printf("\n");
            tc_error("check: token %d has no bytes", (int)ids[i]);
            return 0;
        }
        memcpy(joined + n, piece, piece_bytes);
        n += piece_bytes;
    }
    printf("\n");
    if (n == text_bytes + 1 && joined[0] == ' ') { /* SentencePiece's dummy prefix */
        memmove(joined, joined + 1, text_bytes);
        n--;
    }
    if (n != text_bytes || memcmp(joined, TC_CHECK_TEXT, n) != 0) {
        tc_error("check: the tokens do not join back to the text");
        return 0;
    }
    return 1;
}

/* Opens the file with tfm.h, prints its configuration, compares it with what was written
   (hp; NULL for a vocab-only file) and round-trips a sample through the tokenizer. */
int tc_check(const char *path, const tc_hparams *hp, uint32_t n_tokens) {
    tfm_model_desc md;
    tfm_model *model;
    tfm_config c;
    tfm_result r;
    int ok = 1;
    static const char *const pos_names[] = {"none", "rope_half", "rope_interleaved", "learned",
                                            "sinusoidal", "alibi"};
    memset(&md, 0, sizeof md);
    md.path = path;
    md.logger.log = tc_check_log;
    r = tfm_model_open(&md, &model);
    if (r != TFM_OK) {
        tc_error("check: tfm_model_open(%s): %s", path, tfm_result_string(r));
        return 0;
    }
    c = tfm_model_config(model);
    printf("%s: arch %d, n_vocab %d, n_ctx %d, n_layers %d, n_heads %d, n_kv_heads %d, d_model %d, "
           "d_head %d, d_ff %d\n", path, (int)c.arch, c.n_vocab, c.n_ctx, c.n_layers, c.n_heads,
           c.n_kv_heads, c.d_model, c.d_head, c.d_ff);
    printf("  rope_dim %d, rope_theta %g, norm_eps %g, norm %s, act %d, ffn %s, residual %d, pos %s\n",
           c.rope_dim, (double)c.rope_theta, (double)c.norm_eps,
           c.norm == TFM_NORM_LAYERNORM ? "layernorm" : "rmsnorm", (int)c.act,
           c.ffn == TFM_FFN_PLAIN ? "plain" : "gated", (int)c.residual,
           (unsigned)c.pos < 6 ? pos_names[c.pos] : "?");
    if (c.attn_softcap > 0.0f || c.logit_softcap > 0.0f || c.embed_scale != 1.0f || c.sliding_window ||
        c.rope_scaled || c.qk_norm || c.post_norms)
        printf("  attn_scale %g, attn_softcap %g, logit_softcap %g, embed_scale %g, sliding_window %d, "
               "rope_theta_local %g, rope_scaled %d, qk_norm %d, post_norms %d\n", (double)c.attn_scale,
               (double)c.attn_softcap, (double)c.logit_softcap, (double)c.embed_scale, c.sliding_window,
               (double)c.rope_theta_local, (int)c.rope_scaled, (int)c.qk_norm, (int)c.post_norms);
    printf("  dtype %s, tied_output %d, n_tokens %d, bos %d, eos %d\n",
           tfm_dtype_describe(c.dtype).name, (int)c.tied_output, c.n_tokens, (int)c.bos_id,
           (int)c.eos_id);
    if (hp && ((uint32_t)c.n_layers != hp->n_layers || (uint32_t)c.d_model != hp->d_model ||
               (uint32_t)c.n_heads != hp->n_heads || (uint32_t)c.d_ff != hp->d_ff ||
               (uint32_t)c.n_vocab != hp->n_vocab || (uint32_t)c.rope_dim != hp->rope_dim ||
               (uint32_t)c.residual != hp->residual || (uint32_t)c.act != hp->act ||
               c.tied_output != (hp->tied_output != 0))) {
        tc_error("check: tfm.h reads a configuration different from the one written");
        ok = 0;
    }
    if ((uint32_t)c.n_tokens != n_tokens) {
        tc_error("check: tfm.h reads %d tokens, %u were written", c.n_tokens, n_tokens);
        ok = 0;
    }
    if (ok && n_tokens) ok = tc_check_tokenizer(model);
    if (ok) printf("  check: ok\n");
    tfm_model_close(model);
    return ok;
}

/* >>main -----------------------------------------------------------------------------------------
   Arguments, then model conversion or vocab-only conversion. */

static void tc_usage(FILE *f) {
    fprintf(f,
        "usage: tfm-convert MODEL_DIR -o out.tfm [--type TYPE] [--quiet] [--check]\n"
        "       tfm-convert --vocab-only SRC -o vocab.tfm\n"
        "       tfm-convert MODEL.bin [--tokenizer tokenizer.bin] -o out.tfm [--type TYPE] ...\n"
        "       tfm-convert FILE.gguf -o out.tfm [--type TYPE] [--quiet] [--check]\n"
        "       tfm-convert --vocab-only FILE.gguf -o vocab.tfm\n"
        "       tfm-convert --help\n"
        "\n"
        "MODEL_DIR  a Hugging Face checkpoint: config.json, model.safetensors (or shards listed by\n"
        "           model.safetensors.index.json), tokenizer.json or vocab.json + merges.txt\n"
        "           (optional: without them the model is usable by token ids only).\n"
        "           model_type: " TC_SUPPORTED ". Source dtypes F32, F16, BF16.\n"
        "           Every checkpoint tensor must be used (known buffers aside), else error.\n"
        "MODEL.bin  a llama2.c float32 checkpoint (version 0, or 1 with the \"ak42\" magic)\n"
        "--tokenizer FILE  its llama2.c tokenizer.bin (optional: without it, token ids only)\n"
        "FILE.gguf  a llama.cpp GGUF v2/v3 file (or any file starting with \"GGUF\"):\n"
        "           general.architecture gptneox, gpt2, llama, phi2, starcoder2, qwen2, qwen3,\n"
        "           gemma2, gemma3, phi3; tensor types F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,\n"
        "           Q4_K, Q5_K, Q6_K. Without --type every tensor keeps its type, its blocks copied\n"
        "           byte for byte (Q4_1, which tfm.h does not run, is requantized to q8_0 with a\n"
        "           notice); with --type, tensors are decoded and converted to it;\n"
        "           tokenizer.ggml.model gpt2 (pre gpt-2, phi-2, starcoder, llama-bpe, qwen2; absent or\n"
        "           default: gpt-2, with a warning) or llama; without one, token ids only\n"
        "--type     the matrices' type (default f32; a GGUF: its own): f32 f16 bf16 q8_0 q4_0 q5_0\n"
        "           q5_1 q4_k q5_k q6_k q4_k_m.\n"
        "%s"
        "--quiet    no progress or summary (warnings and errors still print)\n"
        "--check    open the written file with tfm.h, print its configuration, compare it with\n"
        "           what was written and round-trip a sample text through the tokenizer\n"
        "--vocab-only SRC  only the tokenizer (n_layers 0, no tensors); SRC is a tokenizer.json\n"
        "           or a directory with tokenizer.json or vocab.json + merges.txt, or a .gguf\n"
        "--chat-template FILE  store this Jinja chat template (sets it, or overrides the one found:\n"
        "           tokenizer_config.json's chat_template, a string or the \"default\" of the list\n"
        "           form, else chat_template.jinja / .json beside it; GGUF tokenizer.chat_template).\n"
        "           Markers such as <|im_end|> that are not tokens only get a warning\n"
        "Writes OUT.tmp, opens it with tfm.h and renames it to OUT on success; errors exit with\n"
        "status 1 and write nothing: a source that is not a regular file (a FIFO), NaN / Inf\n"
        "weights, values past the output type's range (f16: 65504), a file tfm.h would refuse.\n", tq_recipes_help);
}

static int tc_parse_args(int argc, char **argv, tc_args *a) {
    int i;
    memset(a, 0, sizeof *a);
    for (i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            tc_usage(stdout);
            exit(0);
        } else if (strcmp(s, "-o") == 0 || strcmp(s, "--type") == 0) {
            if (i + 1 >= argc) { tc_error("%s needs a value", s); return 0; }
            if (s[1] == 'o') a->out = argv[++i];
            else if (tq_type_valid(argv[++i])) a->type = argv[i];
            else { tc_error("--type %s: expected f32 f16 bf16 q8_0 q4_0 q5_0 q5_1 q4_k q5_k q6_k or q4_k_m", argv[i]); return 0; }
        } else if (strcmp(s, "--tokenizer") == 0 || strcmp(s, "--chat-template") == 0) {
            if (i + 1 >= argc) { tc_error("%s needs a value", s); return 0; }
            if (s[2] == 't') a->tokenizer = argv[++i];
            else a->chat_template = argv[++i];
        } else if (strcmp(s, "--quiet") == 0 || strcmp(s, "-q") == 0) {
            a->quiet = 1;
        } else if (strcmp(s, "--check") == 0) {
            a->check = 1;
        } else if (strcmp(s, "--vocab-only") == 0) {
            a->vocab_only = 1;
        } else if (s[0] == '-' && s[1] != '\0') {
            tc_error("unknown option %s (see --help)", s);
            return 0;
        } else if (!a->src) {
            a->src = s;
        } else {
            tc_error("unexpected argument %s (see --help)", s);
            return 0;
        }
    }
    if (!a->src || !a->out) {
        tc_error("need a source and -o OUT (see --help)");
        return 0;
    }
    return 1;
}

static int tc_convert_vocab(const tc_args *a) {
    tc_tok tok;
    tc_hparams hp;
    tc_plan plan;
    tc_checkpoint ck;
    unsigned char *blob = NULL;
    size_t blob_bytes = 0;
    int found, ok = 0;
    json_doc cfg_doc;
    tc_cfg cfg;
    char *cfg_path = tc_path(a->src, "config.json");
    int have_cfg = cfg_path && tc_file_exists(cfg_path) && tc_read_json(cfg_path, &cfg_doc);
    memset(&plan, 0, sizeof plan);
    memset(&ck, 0, sizeof ck);
    memset(&hp, 0, sizeof hp);
    cfg.doc = &cfg_doc;
    cfg.obj = have_cfg ? json_at(&cfg_doc, 0) : NULL;
    cfg.path = cfg_path;
    if (!tc_tok_load(&tok, a->src, have_cfg ? &cfg : NULL, &found)) goto done;
    if (!found) {
        tc_error("%s: no tokenizer.json, or vocab.json + merges.txt", a->src);
        goto done;
    }
    if (!tc_tok_chat_finish(&tok, a->chat_template, a->src) || !tc_tok_blob(&tok, &blob, &blob_bytes)) goto done;
    hp.n_vocab = tok.n_tokens;
    ok = tc_write_file(a->out, &hp, &plan, blob, blob_bytes, &ck, a->quiet) &&
         (!a->check || tc_check(a->out, NULL, tok.n_tokens));
    if (ok && !a->quiet)
        fprintf(stderr, "tfm-convert: %u tokens, %lu merges, bos %d, eos %d\n", tok.n_tokens,
                (unsigned long)tok.n_merges, (int)tok.bos_id, (int)tok.eos_id);
done:
    if (have_cfg) json_free(&cfg_doc);
    free(cfg_path);
    free(blob);
    tc_tok_free(&tok);
    return ok;
}

static int tc_convert_model(const tc_args *a) {
    json_doc cfg_doc;
    tc_cfg cfg;
    tc_hparams hp;
    tc_checkpoint ck;
    tc_plan plan;
    tc_tok tok;
    const tc_arch *arch;
    const char *model_type;
    unsigned char *blob = NULL;
    size_t blob_bytes = 0;
    int found = 0, ok = 0;
    char *cfg_path = tc_path(a->src, "config.json");
    memset(&ck, 0, sizeof ck);
    memset(&plan, 0, sizeof plan);
    memset(&tok, 0, sizeof tok);
    memset(&hp, 0, sizeof hp);
    if (!cfg_path || !tc_read_json(cfg_path, &cfg_doc)) {
        free(cfg_path);
        return 0;
    }
    cfg.doc = &cfg_doc;
    cfg.obj = json_at(&cfg_doc, 0);
    cfg.path = cfg_path;
    if (cfg.obj->type != JSON_OBJECT) {
        tc_error("%s: not a JSON object", cfg_path);
        goto done;
    }
    if (!tc_cfg_string(&cfg, "model_type", NULL, &model_type)) goto done;
    if (!model_type) {
        tc_error("%s: no \"model_type\"", cfg_path);
        goto done;
    }
    arch = tc_find_arch(model_type);
    if (!arch) {
        tc_error("%s: model_type \"%s\" is not supported (supported: " TC_SUPPORTED ")", cfg_path,
                 model_type);
        goto done;
    }
    if (!arch->read_config(&cfg, &hp) || !tc_validate_hparams(&hp, cfg_path) ||
        !tc_checkpoint_load(&ck, a->src) || !tc_plan_model(&plan, arch, &hp, &ck, a->type ? a->type : "f32") ||
        !tc_tok_load(&tok, a->src, &cfg, &found))
        goto done;
    if (!found) {
        tc_warn("%s: no tokenizer.json or vocab.json + merges.txt; the model is usable by token ids only",
                a->src);
        if (a->chat_template) tc_warn("%s: --chat-template needs a tokenizer; ignored", a->src);
    } else {
        if (tok.n_tokens > hp.n_vocab) {
            tc_error("the tokenizer has %u tokens but vocab_size is %u", tok.n_tokens, hp.n_vocab);
            goto done;
        }
        if (!tc_tok_chat_finish(&tok, a->chat_template, a->src) || !tc_tok_blob(&tok, &blob, &blob_bytes))
            goto done;
    }
    if (!a->quiet)
        fprintf(stderr, "tfm-convert: %s: %u layers, d_model %u, %u heads, d_ff %u, vocab %u, %s\n",
                model_type, hp.n_layers, hp.d_model, hp.n_heads, hp.d_ff, hp.n_vocab, a->type ? a->type : "f32");
    ok = tc_write_file(a->out, &hp, &plan, blob, blob_bytes, &ck, a->quiet) &&
         (!a->check || tc_check(a->out, &hp, found ? tok.n_tokens : 0));
done:
    json_free(&cfg_doc);
    free(cfg_path);
    free(blob);
    free(plan.outs);
    tc_checkpoint_free(&ck);
    tc_tok_free(&tok);
    return ok;
}

/* SRC is a regular file or a directory (a FIFO would block the first read), or absent (the
   readers then say what is missing). */
static int tc_source_kind_ok(const char *src) {
#if defined(__unix__) || defined(__APPLE__)
    struct stat st;
    if (stat(src, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        tc_error("%s: not a regular file or a directory (a FIFO or device?)", src);
        return 0;
    }
#else
    (void)src;
#endif
    return 1;
}

int main(int argc, char **argv) {
    tc_args a;
    if (argc < 2) {
        tc_usage(stderr);
        return 1;
    }
    if (!tc_parse_args(argc, argv, &a)) return 1;
    if (!tc_source_kind_ok(a.src)) return 1;
    if (gg_is_gguf(a.src)) return !gg_convert(&a); /* FILE.gguf or GGUF magic */
    if (!a.vocab_only && tc_l2c_sniff(a.src)) /* a file, not a directory: llama2.c */
        return !tc_l2c_convert(a.src, a.tokenizer, a.chat_template, a.out, a.type ? a.type : "f32", a.quiet,
                               a.check);
    if (a.tokenizer) {
        tc_error("--tokenizer is for llama2.c checkpoints (MODEL.bin); %s is not one", a.src);
        return 1;
    }
    return a.vocab_only ? !tc_convert_vocab(&a) : !tc_convert_model(&a);
}
