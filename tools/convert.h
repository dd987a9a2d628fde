/* convert.h - what the importers of tfm-convert share. tools/tfm-convert.c defines all of it
   and converts Hugging Face folders; tools/convert_gguf.c (GGUF files) and
   tools/convert_llama2c.c (llama2.c checkpoints) present their source as the same checkpoint
   view, fill the same header fields, tensor plan and tokenizer, and write through the same
   writer, so every source takes one path to disk. The sections of tfm-convert.c named below
   document each part. */
#ifndef TFM_CONVERT_H
#define TFM_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "tfm.h"
#include "tools/json.h"

#define TC_MAX_JSON_BYTES ((size_t)512 << 20)     /* config / tokenizer / index files */
#define TC_MAX_RANK 8
#define TC_NAME_BYTES 64

/* --- >>safetensors: a checkpoint, one or more shards of tensors ------------------------------ */

typedef enum tc_dtype {
    TC_F32, TC_F16, TC_BF16, TC_OTHER,
    TC_Q4_0, TC_Q4_1, TC_Q5_0, TC_Q5_1, TC_Q8_0, /* GGUF blocks of 32 along a row (tools/gguf.h) */
    TC_Q4_K, TC_Q5_K, TC_Q6_K                    /* GGUF blocks of 256 */
} tc_dtype;

typedef struct tc_tensor {
    const char *name;     /* in the shard's header JSON strings */
    tc_dtype dtype;
    const char *dtype_name;
    int rank;
    uint64_t shape[TC_MAX_RANK];
    int shard;
    uint64_t offset;      /* absolute file offset */
    uint64_t bytes;
    int used;
} tc_tensor;

typedef struct tc_shard {
    char *path;
    FILE *file;
    json_doc header;
} tc_shard;

typedef struct tc_checkpoint {
    tc_shard *shards;
    int n_shards;
    tc_tensor *tensors;   /* sorted by name once loaded */
    size_t n_tensors, cap_tensors;
} tc_checkpoint;

/* --- >>config, >>arch: the .tfm header fields and the per-architecture tables ---------------- */

#define TC_MAX_ROPE_FREQS 512 /* rope_dim / 2 limit of the RoPE divisor tables (head_dim <= 1024) */
#define TC_MAX_LAYERS 512 /* tfm.h's TFM_MAX_LAYERS (tools/tfm-convert.c checks): the layer table */

typedef struct tc_hparams { /* the .tfm header fields */
    uint32_t arch, n_vocab, n_ctx, n_layers, n_heads, n_kv_heads, d_model, d_head, d_ff, rope_dim;
    float rope_theta, norm_eps;
    uint32_t norm, act, ffn, residual, pos;
    int tied_output; /* no output.w: the head reuses tok_embd */
    int attn_bias;   /* q/k/v projections carry biases (and o_proj where a table says so) */
    int o_bias;      /* the attention output projection carries a bias (TC_IF_O_BIAS entries) */
    int mlp_bias;    /* MLP projections carry biases */
    /* format version 2 fields (0: the default) */
    uint32_t flags, rope_orig_ctx;
    float attn_scale, attn_softcap, logit_softcap, embed_scale, rope_theta_local, rope_attn_factor;
    uint32_t n_rope_freqs;  /* rope_dim / 2 when rope_freqs holds divisors (written as a tensor) */
    int has_rope_freqs_long; /* rope_freqs_long holds longrope's long factors */
    float rope_freqs[TC_MAX_ROPE_FREQS], rope_freqs_long[TC_MAX_ROPE_FREQS];
    int has_layer_table;    /* some layer has a window or a RoPE kind other than global */
    uint32_t window[TC_MAX_LAYERS], rope_kind[TC_MAX_LAYERS]; /* the .tfm layer table */
} tc_hparams;

typedef struct tc_cfg tc_cfg; /* a config.json being read (>>config) */

typedef enum tc_dim {
    TC_DIM_NONE = 0,
    TC_DIM_VOCAB,   /* n_vocab */
    TC_DIM_CTX,     /* n_ctx */
    TC_DIM_MODEL,   /* d_model */
    TC_DIM_FF,      /* d_ff */
    TC_DIM_Q,       /* n_heads * d_head */
    TC_DIM_KV,      /* n_kv_heads * d_head */
    TC_DIM_QKV,     /* (n_heads + 2 * n_kv_heads) * d_head: a fused q|k|v projection */
    TC_DIM_HEAD,    /* d_head */
    TC_DIM_FF2,     /* 2 * d_ff: a fused gate|up projection */
    TC_DIM_ROPE_HALF /* rope_dim / 2: RoPE divisors */
} tc_dim;

typedef enum tc_op {
    TC_OP_COPY = 0,         /* one .tfm tensor, same layout */
    TC_OP_SPLIT_QKV_HEADS,  /* fused rows viewed as [n_heads, 3, d_head] (GPT-NeoX, MHA only):
                               three tensors q, k, v */
    TC_OP_SPLIT_QKV_THIRDS, /* fused rows q | k | v, each contiguous (GPT-2; GQA sizes: Phi-3) */
    TC_OP_SPLIT_HALVES      /* fused rows gate | up, two equal halves (Phi-3's gate_up_proj) */
} tc_op;

#define TC_LAYER 1u        /* names contain %d: one entry per layer */
#define TC_IF_ATTN_BIAS 2u /* present iff hparams.attn_bias */
#define TC_IF_MLP_BIAS 4u  /* present iff hparams.mlp_bias */
#define TC_IF_UNTIED 8u    /* present iff the output head is not tied */
#define TC_CONV1D 16u      /* stored [in, out] (GPT-2 Conv1D): transposed on the way out; the
                              table gives the stored shape */
#define TC_KEEP_F32 32u    /* a matrix that stays f32 whatever --type says (a lookup table,
                              not a matmul: learned positions) */
#define TC_ADD_ONE 64u     /* a norm weight stored zero-centred (Gemma's x * (1 + w)): written as
                              w + 1, added in f32 as Hugging Face's 1.0 + weight.float() */
#define TC_IF_O_BIAS 128u  /* present iff hparams.o_bias */
#define TC_IF_QK_NORM 256u /* present iff hparams.flags has TFM_FLAG_QK_NORM */

typedef struct tc_tensor_map {
    const char *hf;        /* checkpoint name (printf format with %d for the layer) */
    const char *tfm[3];    /* output name(s); three for the split ops */
    unsigned flags;
    tc_op op;
    tc_dim shape[2];       /* expected checkpoint shape; rank = number of non-NONE dims */
} tc_tensor_map;

typedef struct tc_arch {
    const char *model_type;
    int (*read_config)(const tc_cfg *cfg, tc_hparams *hp);
    const tc_tensor_map *tensors;
    size_t n_tensors;
    const char *const *skip_suffixes; /* buffers in older checkpoints, not weights */
    const char *const *prefixes;      /* tried when a name is not found as is (NULL: none) */
    const char *const *skip_prefixes; /* whole sub-models a text converter ignores (vision) */
} tc_arch;

#define TC_TABLE(t) t, sizeof t / sizeof t[0]

/* --- >>plan: every output tensor with its source rows and its place in the file -------------- */

typedef struct tc_out {
    char name[TC_NAME_BYTES];
    uint32_t dtype;               /* tfm_dtype */
    int rank;
    uint64_t shape[2];
    const tc_tensor *src;
    uint64_t rows, row_elems;     /* the tensor as rows x row_elems (a vector: n x 1) */
    uint64_t group, stride, offset;
    int transposed;               /* source is [row_elems, src_cols] */
    int add_one;                  /* f32 output: every value + 1 (TC_ADD_ONE) */
    const float *gen;             /* no source: the rows x row_elems values (tc_plan_vector) */
    uint64_t src_cols;
    uint64_t data_offset, data_bytes;
} tc_out;

typedef struct tc_plan {
    tc_out *outs;
    size_t n_outs, cap_outs;
} tc_plan;

/* --- >>tokenizer: the tokenizer blob under construction -------------------------------------- */

#define TC_ALPHABET_CPS 0x144 /* code points of the byte alphabet: 0 .. U+0143 */

typedef struct tc_tok {
    uint32_t n_tokens;
    uint32_t *text_off, *text_len; /* raw text of each id in arena */
    unsigned char *has_text;
    unsigned char *attrs;
    char *arena;
    size_t arena_bytes, arena_cap;
    uint32_t *merges;              /* [n_merges][3] */
    size_t n_merges, cap_merges;
    uint32_t flags, pretok;
    uint32_t kind;                 /* tfm_tokenizer_kind; 0: TFM_TOKENIZER_BPE_BYTES */
    float *scores;                 /* [n_tokens] merge scores (SentencePiece); NULL: all 0 */
    int32_t bos_id, eos_id, unk_id, pad_id;
    const char **h_key;            /* alphabet spelling -> id (keys borrowed from the source) */
    uint32_t *h_len;
    int32_t *h_id;
    size_t h_cap;
    char *concat;                  /* scratch for merged spellings */
    size_t concat_cap;
    unsigned char cp_valid[TC_ALPHABET_CPS], cp_byte[TC_ALPHABET_CPS];
    int spm_spelling;              /* tokenizer.json with byte_fallback: U+2581 and <0xNN> */
    int metaspace_split;           /* Metaspace split = true: checked against the vocab */
    char *chat[3];                 /* chat template, bos_token, eos_token (malloc'ed; NULL none) */
    size_t chat_bytes[3];
    int chat_tokens_given;         /* bos/eos came from tokenizer_config.json (null stays none) */
} tc_tok;

/* --- >>main: the command line ---------------------------------------------------------------- */

typedef struct tc_args {
    const char *src, *out;
    const char *tokenizer; /* llama2.c tokenizer.bin */
    const char *chat_template; /* --chat-template FILE: sets or overrides the template */
    const char *type;      /* --type (tools/quant.h), or NULL: f32, and a GGUF's own types */
    int quiet, check, vocab_only;
} tc_args;

/* --- calls (tools/tfm-convert.c) ------------------------------------------------------------- */

/* One "tfm-convert: error: ..." / "tfm-convert: warning: ..." line on stderr. */
void tc_error(const char *fmt, ...);
void tc_warn(const char *fmt, ...);
char *tc_strdup(const char *s);
/* Size of an open file; leaves the position at the start. */
int tc_file_bytes(FILE *f, const char *path, uint64_t *out);
/* Reads a whole file (NUL-terminated) of at most max_bytes. */
int tc_read_file(const char *path, size_t max_bytes, char **out, size_t *out_bytes);
/* Little-endian reads (tfm.h's own, for the units that do not hold its implementation). */
uint32_t tc_rd_u32(const unsigned char *p);
float tc_rd_f32(const unsigned char *p);
uint32_t tc_max_vocab(void); /* tfm.h's TFM_MAX_VOCAB, the most tokens it opens */

/* A whole file mapped (or read) by tfm.h's >>io; tc_map_open prints nothing and returns 0 on
   failure; tc_map_close accepts a zeroed or failed map. */
typedef struct tc_map {
    const unsigned char *data;
    size_t data_bytes;
    void *file; /* tfm.h's mapping */
} tc_map;
int tc_map_open(const char *path, tc_map *m);
void tc_map_close(tc_map *m);

void tc_checkpoint_free(tc_checkpoint *c);
/* Appends a tensor entry (copied). */
int tc_add_tensor(tc_checkpoint *c, tc_tensor *t);
/* Sorts the entries by name and refuses duplicates: call once all are added. */
int tc_checkpoint_index(tc_checkpoint *c);
/* The entry of that name, or NULL. */
tc_tensor *tc_find_tensor(const tc_checkpoint *c, const char *name);
/* n_layers in 1..TC_MAX_LAYERS (an error naming path otherwise): before any per-layer loop. */
int tc_check_layers(const tc_hparams *hp, const char *path);
/* Ranges and consistency of the header fields, before anything is planned. */
int tc_validate_hparams(const tc_hparams *hp, const char *path);
/* The layer table: sliding[i] layers get window (0: none) and, when local_rope, the local RoPE
   table (base rope_theta_local, no scaling). */
void tc_set_layers(tc_hparams *hp, const unsigned char *sliding, uint32_t window, int local_rope);
/* One table entry for one layer (layer < 0: global) added to the plan. */
int tc_plan_entry(tc_plan *p, const tc_arch *a, const tc_tensor_map *m, int layer,
                  const tc_hparams *hp, const tc_checkpoint *c, const char *type);
/* The plan for a whole checkpoint; every tensor must be used. */
int tc_plan_model(tc_plan *p, const tc_arch *a, const tc_hparams *hp, tc_checkpoint *c,
                  const char *type);
/* The generated tensors rope_freqs / rope_freqs_long from hp (when it scales RoPE) added to the
   plan; the values are read from hp when the file is written. */
int tc_plan_rope_freqs(tc_plan *p, const tc_hparams *hp);
/* The GGUF block type of a quantized source dtype, or 0. */
uint32_t tc_block_type(tc_dtype d);
/* Room for n_tokens ids and a spelling hash for n_hash entries. */
int tc_tok_alloc(tc_tok *t, uint32_t n_tokens, size_t n_hash);
/* The raw text of token id. */
int tc_tok_set_text(tc_tok *t, uint32_t id, const char *s, size_t n);
/* A vocabulary entry spelled in the byte-level alphabet (or SentencePiece). */
int tc_tok_add_vocab(tc_tok *t, const char *s, size_t n, int64_t id, const char *src);
/* A merge written as "a b". */
int tc_tok_add_merge_line(tc_tok *t, const char *s, size_t n, const char *src);
/* Sets chat[which] (0 template, 1 bos_token, 2 eos_token) to a copy of s[0..n). */
int tc_tok_set_chat(tc_tok *t, int which, const char *s, size_t n);
/* Before the blob: --chat-template FILE (override_path) replaces the template; bos/eos default
   to the texts of bos_id/eos_id unless tokenizer_config.json gave them; warns about template
   markers that are not tokens. */
int tc_tok_chat_finish(tc_tok *t, const char *override_path, const char *src);
/* The tfm.h tokenizer blob (malloc'ed). */
int tc_tok_blob(const tc_tok *t, unsigned char **out, size_t *out_bytes);
void tc_tok_free(tc_tok *t);
/* Writes the .tfm (via OUT.tmp, renamed on success). */
int tc_write_file(const char *out_path, const tc_hparams *hp, tc_plan *p,
                  const unsigned char *blob, size_t blob_bytes, const tc_checkpoint *ck, int quiet);
/* --check: open the file with tfm.h and compare (hp NULL: vocab-only). */
int tc_check(const char *path, const tc_hparams *hp, uint32_t n_tokens);

/* --- the other importers --------------------------------------------------------------------- */

/* tools/convert_llama2c.c: a llama2.c checkpoint (and tokenizer.bin). */
int tc_l2c_sniff(const char *path);
int tc_l2c_convert(const char *src, const char *tok_path, const char *chat_template, const char *out,
                   const char *type, int quiet, int check);

/* tools/convert_gguf.c: a GGUF file (model or vocab-only). */
int gg_is_gguf(const char *path);
int gg_convert(const tc_args *a);

#endif
