/* tfm_write.c - the .tfm header, directory entries and layout (see tools/tfm_write.h). */
#include "tools/tfm_write.h"
#include "tfm.h"

#include <string.h>

#define TFMW_FORMAT_VERSION 2 /* the version whose layout this file writes */
#if TFM_FORMAT_VERSION != TFMW_FORMAT_VERSION
#error "tfm.h reads another .tfm format version: update tools/tfm_write.c with it"
#endif
#define TFMW_MAGIC "TFMODEL"  /* 8 bytes with its NUL */

void tfmw_put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

void tfmw_put_u64(unsigned char *p, uint64_t v) {
    tfmw_put_u32(p, (uint32_t)v);
    tfmw_put_u32(p + 4, (uint32_t)(v >> 32));
}

void tfmw_put_f32(unsigned char *p, float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    tfmw_put_u32(p, u);
}

uint64_t tfmw_align(uint64_t n) { return (n + (TFMW_ALIGN - 1)) & ~(uint64_t)(TFMW_ALIGN - 1); }

uint64_t tfmw_dir_end(size_t n_tensors) {
    return TFMW_HEADER_BYTES + (uint64_t)n_tensors * TFMW_DIR_ENTRY_BYTES;
}

uint64_t tfmw_place(uint64_t *at, uint64_t bytes) {
    uint64_t offset = tfmw_align(*at);
    *at = offset + bytes;
    return offset;
}

uint64_t tfmw_place_layer_table(uint64_t *at, uint32_t n_layers) {
    uint64_t offset = (*at + (TFMW_LAYER_TABLE_ALIGN - 1)) & ~(uint64_t)(TFMW_LAYER_TABLE_ALIGN - 1);
    *at = offset + (uint64_t)n_layers * TFMW_LAYER_ENTRY_BYTES;
    return offset;
}

void tfmw_header_bytes(unsigned char *out, const tfmw_header *h) {
    memset(out, 0, TFMW_HEADER_BYTES);
    memcpy(out, TFMW_MAGIC, 8);
    tfmw_put_u32(out + 8, TFMW_FORMAT_VERSION);
    tfmw_put_u32(out + 12, TFMW_HEADER_BYTES);
    tfmw_put_u32(out + 16, h->arch);
    tfmw_put_u32(out + 20, h->n_vocab);
    tfmw_put_u32(out + 24, h->n_ctx);
    tfmw_put_u32(out + 28, h->n_layers);
    tfmw_put_u32(out + 32, h->n_heads);
    tfmw_put_u32(out + 36, h->n_kv_heads);
    tfmw_put_u32(out + 40, h->d_model);
    tfmw_put_u32(out + 44, h->d_head);
    tfmw_put_u32(out + 48, h->d_ff);
    tfmw_put_u32(out + 52, h->rope_dim);
    tfmw_put_f32(out + 56, h->rope_theta);
    tfmw_put_f32(out + 60, h->norm_eps);
    tfmw_put_u32(out + 64, h->norm);
    tfmw_put_u32(out + 68, h->act);
    tfmw_put_u32(out + 72, h->ffn);
    tfmw_put_u32(out + 76, h->residual);
    tfmw_put_u32(out + 80, h->pos);
    tfmw_put_u32(out + 84, h->n_tensors);
    tfmw_put_u64(out + 88, TFMW_HEADER_BYTES); /* tensor_dir_offset: right after the header */
    tfmw_put_u64(out + 96, h->tokenizer_offset);
    tfmw_put_u64(out + 104, h->tokenizer_bytes);
    tfmw_put_u32(out + 112, h->flags);
    tfmw_put_f32(out + 116, h->attn_scale);
    tfmw_put_f32(out + 120, h->attn_softcap);
    tfmw_put_f32(out + 124, h->logit_softcap);
    tfmw_put_f32(out + 128, h->embed_scale);
    tfmw_put_f32(out + 132, h->rope_theta_local);
    tfmw_put_f32(out + 136, h->rope_attn_factor);
    tfmw_put_u32(out + 140, h->rope_orig_ctx);
    tfmw_put_u64(out + 144, h->layer_table_offset);
}

void tfmw_entry_bytes(unsigned char *out, const tfmw_tensor *t) {
    size_t n = strlen(t->name);
    memset(out, 0, TFMW_DIR_ENTRY_BYTES);
    memcpy(out, t->name, n < TFMW_NAME_BYTES ? n : TFMW_NAME_BYTES - 1); /* NUL-padded */
    tfmw_put_u32(out + 64, t->dtype);
    tfmw_put_u32(out + 68, (uint32_t)t->rank);
    tfmw_put_u64(out + 72, t->shape[0]);
    tfmw_put_u64(out + 80, t->rank > 1 ? t->shape[1] : 0);
    tfmw_put_u64(out + 104, t->data_offset);
    tfmw_put_u64(out + 112, t->data_bytes);
}

void tfmw_layer_entry_bytes(unsigned char *out, uint32_t window, uint32_t rope) {
    memset(out, 0, TFMW_LAYER_ENTRY_BYTES);
    tfmw_put_u32(out, window);
    tfmw_put_u32(out + 4, rope);
}
