/* tfm_write.h - the .tfm layout (tfm.h's FILE FORMAT, version 2) for the tools that write one:
   tfm-convert streams a file to disk, tfm-bench builds one in memory. The 256-byte header, the
   128-byte directory entries, the 16-byte layer table entries and where the layer table, the
   tokenizer blob and each tensor go live here only; every field is written byte by byte,
   little-endian, whatever the host. tools/tfm_write.c.

   Layout: the header, n_tensors directory entries, the layer table when the model has one
   (placed by tfmw_place_layer_table at the next multiple of TFMW_LAYER_TABLE_ALIGN), then each
   part placed by tfmw_place at the next multiple of TFMW_ALIGN (the tokenizer blob first, when
   there is one, then the tensors in directory order):
       uint64_t at = tfmw_dir_end(n_tensors);
       layer_table_offset = has_table ? tfmw_place_layer_table(&at, n_layers) : 0;
       blob_at = blob_bytes ? tfmw_place(&at, blob_bytes) : 0;
       t[i].data_offset = tfmw_place(&at, t[i].data_bytes);   for each tensor
       file size = at
   A header whose version 2 fields are all zero (no layer table) describes a model with every
   version 1 default (what tfm-bench writes).
   The tests do not use this: tests/tfm_writer.h is an independent writer kept on purpose, so
   that tfm.h's reader is checked against a second implementation of the format. */
#ifndef TFM_WRITE_H
#define TFM_WRITE_H

#include <stddef.h>
#include <stdint.h>

#define TFMW_HEADER_BYTES 256
#define TFMW_DIR_ENTRY_BYTES 128
#define TFMW_NAME_BYTES 64 /* a tensor name is at most 63 bytes, NUL-padded */
#define TFMW_BLOB_HEADER_BYTES 64
#define TFMW_ALIGN 64      /* tensor data and the tokenizer blob */
#define TFMW_LAYER_ENTRY_BYTES 16
#define TFMW_LAYER_TABLE_ALIGN 8

/* The header's fields (tfm.h's enums as u32); the format version and sizes are implied.
   Zero in a version 2 field (flags .. layer_table_offset) means tfm.h's default. */
typedef struct tfmw_header {
    uint32_t arch, n_vocab, n_ctx, n_layers, n_heads, n_kv_heads, d_model, d_head, d_ff, rope_dim;
    float rope_theta, norm_eps;
    uint32_t norm, act, ffn, residual, pos;
    uint32_t n_tensors;
    uint64_t tokenizer_offset, tokenizer_bytes; /* both 0 without a tokenizer */
    uint32_t flags;                             /* TFM_FLAG_* */
    float attn_scale, attn_softcap, logit_softcap, embed_scale, rope_theta_local, rope_attn_factor;
    uint32_t rope_orig_ctx;
    uint64_t layer_table_offset;                /* from tfmw_place_layer_table; 0: none */
} tfmw_header;

/* One directory entry. */
typedef struct tfmw_tensor {
    const char *name;     /* < TFMW_NAME_BYTES bytes */
    uint32_t dtype;       /* tfm_dtype */
    int rank;             /* 1 or 2 */
    uint64_t shape[2];    /* outer first; a matrix W is [d_out, d_in] */
    uint64_t data_offset; /* from tfmw_place */
    uint64_t data_bytes;
} tfmw_tensor;

void tfmw_put_u32(unsigned char *p, uint32_t v);
void tfmw_put_u64(unsigned char *p, uint64_t v);
void tfmw_put_f32(unsigned char *p, float f);

/* n rounded up to a multiple of TFMW_ALIGN. */
uint64_t tfmw_align(uint64_t n);
/* End of the header and a directory of n_tensors entries. */
uint64_t tfmw_dir_end(size_t n_tensors);
/* Places a part of `bytes` at the next aligned offset at or after *at; returns that offset and
   moves *at past the part. */
uint64_t tfmw_place(uint64_t *at, uint64_t bytes);
/* Places a layer table of n_layers entries at the next multiple of TFMW_LAYER_TABLE_ALIGN at or
   after *at (right after the directory); returns that offset and moves *at past the table. */
uint64_t tfmw_place_layer_table(uint64_t *at, uint32_t n_layers);

/* The 256-byte header (reserved bytes zero). */
void tfmw_header_bytes(unsigned char *out, const tfmw_header *h);
/* One 128-byte directory entry (reserved bytes zero). */
void tfmw_entry_bytes(unsigned char *out, const tfmw_tensor *t);
/* One 16-byte layer table entry: window (0: none) and RoPE kind (0 global, 1 local, 2 none). */
void tfmw_layer_entry_bytes(unsigned char *out, uint32_t window, uint32_t rope);

#endif
