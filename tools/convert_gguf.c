/* convert_gguf.c - GGUF import for tfm-convert (through tools/convert.h it uses tfm-convert's
   >>safetensors checkpoint, >>plan, >>tokenizer, >>writer and >>check code).

       tfm-convert FILE.gguf -o out.tfm [--type f32|f16] [--check]
       tfm-convert --vocab-only FILE.gguf -o vocab.tfm

   One generic path for every architecture: llama.cpp already gives all of them one tensor
   naming scheme (token_embd, blk.N.attn_q, ...), so the per-architecture part is only the
   table gg_archs (general.architecture -> norm, activation, FFN, residual and position kinds).

   The file is mapped and parsed by tools/gguf.h, then presented to the shared writer as a
   one-shard checkpoint whose tensors carry llama.cpp's names and PyTorch-order shapes (GGUF
   dims are reversed: ne[0] is the row length, so an [out, in] matrix has ne = {in, out}).
   Layout conventions honoured (REFERENCE.md D.1, tests/data/models/README.md):
     - llama: q/k rows are in Meta's interleaved order: pos = ROPE_INTERLEAVED, rows kept.
     - gptneox, gpt2: attn_qkv is q | k | v thirds (split by rows, no per-head interleave).
     - gpt2: matrices are already [out, in]; output.weight duplicates token_embd and is kept
       as an untied output (the same logits either way).
     - phi2: one norm feeds attention and MLP (RESIDUAL_PARALLEL_SHARED); its
       feed_forward_length is written as 4 * n_embd by llama.cpp, so d_ff always comes from
       the shape of blk.0.ffn_up.weight.
     - rope base from {arch}.rope.freq_base, else 10000; rotary dims from
       {arch}.rope.dimension_count, else d_head; scaled RoPE is refused.
     - no output.weight: the head is tied to token_embd.
   Tensor types F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K (the types
   of llama.cpp's Q4_K_M / Q5_K_M / Q6_K / Q8_0 files, not IQ* or Q2_K / Q3_K); quantized matrices are
   dequantized (tools/gguf.h) and written as --type, vectors always f32. Every GGUF tensor
   must be used, as on the Hugging Face path.

   Tokenizer from tokenizer.ggml.*:
     - model "gpt2": byte-level BPE. Normal tokens are spelled in the GPT-2 byte alphabet (as
       tokenizer.json's vocab) and decoded to raw bytes; control (type 3) and user-defined
       (type 4) tokens are stored raw by llama.cpp and become ADDED (control: also SPECIAL);
       merges "a b" become id triples. tokenizer.ggml.pre "gpt-2" or "phi-2" (llama.cpp maps
       both to the GPT-2 regex) selects TFM_PRETOK_GPT2, "starcoder" (each digit alone, then
       the GPT-2 regex) TFM_PRETOK_GPT2_DIGITS, "llama-bpe" TFM_PRETOK_LLAMA3 with
       TFM_TOKFLAG_IGNORE_MERGES, "qwen2" TFM_PRETOK_QWEN2; absent or "default" are taken as
       GPT-2 with a warning (llama.cpp's own "default" splits punctuation slightly
       differently); any other value is refused with an error. No NFC: llama.cpp does not
       normalize for these pre-tokenizers.
     - model "llama": SentencePiece. "▁" (U+2581) becomes a space (tfm.h's SPM kind works on
       spaces), byte tokens (type 6) "<0xNN>" become that byte with TFM_TOKATTR_BYTE, scores
       are kept, unknown/control tokens (types 2, 3) are SPECIAL | ADDED, user-defined ADDED;
       add_space_prefix (default true) sets TFM_TOKFLAG_PREFIX_SPACE.
     - tokenizer.ggml.add_bos_token (default: true for "llama", false for "gpt2", as in
       llama.cpp) sets TFM_TOKFLAG_ADD_BOS.
     - bos/eos/unknown/padding ids from tokenizer.ggml.*_token_id.
     - no tokenizer.ggml.model (or "none"): converted without a tokenizer, with a warning (the
       model is usable by token ids); other models (bert, t5, rwkv, ...) are refused. */

#include "tools/convert.h"
#include "tools/gguf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* >>gguf-source ----------------------------------------------------------------------------------
   The mapped file, its parsed header, and the checkpoint view the writer reads. */

typedef struct gg_source {
    const char *path;
    tc_map map;          /* the whole file, mapped (or read) by tfm.h's >>io */
    gguf_file g;
    tc_checkpoint ck;    /* one shard: the GGUF file itself */
} gg_source;

static void gg_close(gg_source *s) {
    tc_checkpoint_free(&s->ck);
    gguf_free(&s->g);
    tc_map_close(&s->map);
}

static tc_dtype gg_dtype(uint32_t type, const char **name) {
    switch (type) {
    case GGUF_TYPE_F32: *name = "F32"; return TC_F32;
    case GGUF_TYPE_F16: *name = "F16"; return TC_F16;
    case GGUF_TYPE_BF16: *name = "BF16"; return TC_BF16;
    case GGUF_TYPE_Q4_0: *name = "Q4_0"; return TC_Q4_0;
    case GGUF_TYPE_Q4_1: *name = "Q4_1"; return TC_Q4_1;
    case GGUF_TYPE_Q5_0: *name = "Q5_0"; return TC_Q5_0;
    case GGUF_TYPE_Q5_1: *name = "Q5_1"; return TC_Q5_1;
    case GGUF_TYPE_Q8_0: *name = "Q8_0"; return TC_Q8_0;
    case GGUF_TYPE_Q4_K: *name = "Q4_K"; return TC_Q4_K;
    case GGUF_TYPE_Q5_K: *name = "Q5_K"; return TC_Q5_K;
    case GGUF_TYPE_Q6_K: *name = "Q6_K"; return TC_Q6_K;
    default: *name = "?"; return TC_OTHER; /* gguf_parse refuses every other type */
    }
}

/* Tensor infos -> checkpoint entries (names borrowed from s->g, shapes in PyTorch order). */
static int gg_checkpoint(gg_source *s) {
    tc_checkpoint *ck = &s->ck;
    uint64_t i;
    uint32_t j;
    ck->shards = (tc_shard *)calloc(1, sizeof *ck->shards);
    if (!ck->shards) { tc_error("out of memory"); return 0; }
    ck->n_shards = 1;
    ck->shards[0].path = tc_strdup(s->path);
    if (!ck->shards[0].path) { tc_error("out of memory"); return 0; }
    ck->shards[0].file = fopen(s->path, "rb");
    if (!ck->shards[0].file) { tc_error("cannot open %s: %s", s->path, strerror(errno)); return 0; }
    for (i = 0; i < s->g.n_tensors; i++) {
        const gguf_tensor *gt = &s->g.tensors[i];
        tc_tensor t;
        memset(&t, 0, sizeof t);
        t.name = gt->name;
        t.dtype = gg_dtype(gt->type, &t.dtype_name);
        t.rank = (int)gt->n_dims;
        for (j = 0; j < gt->n_dims; j++) t.shape[j] = gt->ne[gt->n_dims - 1 - j];
        t.offset = s->g.data_offset + gt->offset;
        t.bytes = gt->n_bytes;
        if (!tc_add_tensor(ck, &t)) return 0;
    }
    return ck->n_tensors == 0 || tc_checkpoint_index(ck); /* a vocab-only file has none */
}

static int gg_open(gg_source *s, const char *path) {
    char err[256];
    memset(s, 0, sizeof *s);
    s->path = path;
    if (!tc_map_open(path, &s->map)) {
        tc_error("cannot open or read %s", path);
        return 0;
    }
    if (!gguf_parse(s->map.data, s->map.data_bytes, &s->g, err, sizeof err)) {
        tc_error("%s: %s", path, err);
        return 0;
    }
    return gg_checkpoint(s);
}

/* --- metadata: typed reads; absent -> default (or an error when required) --- */

static const gguf_kv *gg_key(const gg_source *s, const char *arch, const char *key, char *full,
                             size_t full_bytes) {
    if (arch) snprintf(full, full_bytes, "%s.%s", arch, key);
    else snprintf(full, full_bytes, "%s", key);
    return gguf_find(&s->g, full);
}

static int gg_uint(const gg_source *s, const char *arch, const char *key, int required, uint32_t def,
                   uint32_t *out) {
    char full[160];
    int64_t v;
    const gguf_kv *kv = gg_key(s, arch, key, full, sizeof full);
    if (!kv) {
        if (required) tc_error("%s: missing metadata key %s", s->path, full);
        *out = def;
        return !required;
    }
    if (kv->type == GGUF_BOOL || kv->type == GGUF_ARRAY || !gguf_get_int(&s->g, full, &v) || v < 0 ||
        v > 0x7fffffff) {
        tc_error("%s: %s must be a non-negative integer below 2^31", s->path, full);
        return 0;
    }
    *out = (uint32_t)v;
    return 1;
}

static int gg_float(const gg_source *s, const char *arch, const char *key, int required, double def,
                    double *out) {
    char full[160];
    const gguf_kv *kv = gg_key(s, arch, key, full, sizeof full);
    if (!kv) {
        if (required) tc_error("%s: missing metadata key %s", s->path, full);
        *out = def;
        return !required;
    }
    if (kv->type == GGUF_BOOL || kv->type == GGUF_ARRAY || !gguf_get_float(&s->g, full, out) ||
        !(*out == *out)) {
        tc_error("%s: %s must be a number", s->path, full);
        return 0;
    }
    return 1;
}

static int gg_bool(const gg_source *s, const char *arch, const char *key, int def, int *out) {
    char full[160];
    const gguf_kv *kv = gg_key(s, arch, key, full, sizeof full);
    if (!kv) { *out = def; return 1; }
    if (kv->type != GGUF_BOOL || kv->value[0] > 1) {
        tc_error("%s: %s must be a bool", s->path, full);
        return 0;
    }
    *out = kv->value[0];
    return 1;
}

/* 1: found (into out), 0: absent, -1: present but not a string (error printed). */
static int gg_string(const gg_source *s, const char *arch, const char *key, gguf_string *out) {
    char full[160];
    const gguf_kv *kv = gg_key(s, arch, key, full, sizeof full);
    if (!kv) return 0;
    if (!gguf_get_string(&s->g, full, out)) {
        tc_error("%s: %s must be a string", s->path, full);
        return -1;
    }
    return 1;
}

static int gg_str_is(gguf_string s, const char *lit) {
    return s.n_bytes == strlen(lit) && memcmp(s.bytes, lit, (size_t)s.n_bytes) == 0;
}

/* An array key of one element type: its first element and count (NULL when absent). */
static const unsigned char *gg_array(const gg_source *s, const char *key, uint32_t elem_type,
                                     uint64_t *n, int *bad) {
    const gguf_kv *kv = gguf_find(&s->g, key);
    *bad = 0;
    if (!kv) return NULL;
    if (kv->type != GGUF_ARRAY || kv->elem_type != elem_type) {
        tc_error("%s: %s is not an array of value type %u", s->path, key, (unsigned)elem_type);
        *bad = 1;
        return NULL;
    }
    *n = kv->n_elems;
    return kv->value;
}

/* >>gguf-arch ------------------------------------------------------------------------------------
   general.architecture -> the kinds llama.cpp implies for it (it stores no activation name:
   these are the ones of the Hugging Face models llama.cpp converts for that architecture). */

typedef struct gg_arch {
    const char *name;
    uint32_t arch, norm, act, ffn, residual, pos;
} gg_arch;

static const gg_arch gg_archs[] = {
    {"gptneox", TFM_ARCH_GPT_NEOX, TFM_NORM_LAYERNORM, TFM_ACT_GELU_ERF, TFM_FFN_PLAIN,
     TFM_RESIDUAL_PARALLEL /* or sequential: use_parallel_residual */, TFM_POS_ROPE_HALF},
    {"gpt2", TFM_ARCH_GPT2, TFM_NORM_LAYERNORM, TFM_ACT_GELU_TANH, TFM_FFN_PLAIN,
     TFM_RESIDUAL_SEQUENTIAL, TFM_POS_LEARNED},
    {"llama", TFM_ARCH_LLAMA, TFM_NORM_RMSNORM, TFM_ACT_SILU, TFM_FFN_GATED, TFM_RESIDUAL_SEQUENTIAL,
     TFM_POS_ROPE_INTERLEAVED},
    {"phi2", TFM_ARCH_PHI, TFM_NORM_LAYERNORM, TFM_ACT_GELU_TANH, TFM_FFN_PLAIN,
     TFM_RESIDUAL_PARALLEL_SHARED, TFM_POS_ROPE_HALF},
    {"starcoder2", TFM_ARCH_STARCODER2, TFM_NORM_LAYERNORM, TFM_ACT_GELU_TANH, TFM_FFN_PLAIN,
     TFM_RESIDUAL_SEQUENTIAL, TFM_POS_ROPE_HALF},
    {"qwen2", TFM_ARCH_QWEN2, TFM_NORM_RMSNORM, TFM_ACT_SILU, TFM_FFN_GATED, TFM_RESIDUAL_SEQUENTIAL,
     TFM_POS_ROPE_HALF},
    {"qwen3", TFM_ARCH_QWEN3, TFM_NORM_RMSNORM, TFM_ACT_SILU, TFM_FFN_GATED, TFM_RESIDUAL_SEQUENTIAL,
     TFM_POS_ROPE_HALF},
    {"gemma2", TFM_ARCH_GEMMA2, TFM_NORM_RMSNORM, TFM_ACT_GELU_TANH, TFM_FFN_GATED, TFM_RESIDUAL_SEQUENTIAL,
     TFM_POS_ROPE_HALF},
    {"gemma3", TFM_ARCH_GEMMA3, TFM_NORM_RMSNORM, TFM_ACT_GELU_TANH, TFM_FFN_GATED, TFM_RESIDUAL_SEQUENTIAL,
     TFM_POS_ROPE_HALF},
    {"phi3", TFM_ARCH_PHI3, TFM_NORM_RMSNORM, TFM_ACT_SILU, TFM_FFN_GATED, TFM_RESIDUAL_SEQUENTIAL,
     TFM_POS_ROPE_HALF},
};
#define GG_SUPPORTED "gptneox, gpt2, llama, phi2, starcoder2, qwen2, qwen3, gemma2, gemma3, phi3"
#define GG_GEMMA2_WINDOW 4096     /* llama.cpp's gemma2 default when the key is absent */
#define GG_GEMMA2_ATTN_CAP 50.0   /* llama.cpp's defaults of the Gemma-2 soft-caps */
#define GG_GEMMA2_FINAL_CAP 30.0
#define GG_GEMMA3_PATTERN 6       /* llama.cpp: every 6th Gemma-3 layer is global */
#define GG_GEMMA3_LOCAL_BASE 10000.0
#define GG_GEMMA2_27B_LAYERS 46   /* llama.cpp scales 27B's queries by 1/sqrt(n_embd / n_head) */
#define GG_GEMMA3_27B_LAYERS 62
#define GG_DEFAULT_ROPE_BASE 10000.0 /* llama.cpp's default when rope.freq_base is absent */

/* Rows of a 2-D tensor that must exist (for dims the metadata does not give reliably). */
static int gg_rows(const gg_source *s, const char *name, uint32_t *rows) {
    const tc_tensor *t = tc_find_tensor(&s->ck, name);
    if (!t || t->rank != 2 || t->shape[0] > 0x7fffffffu) {
        tc_error("%s: %s (a matrix) is missing or not 2-D", s->path, name);
        return 0;
    }
    *rows = (uint32_t)t->shape[0];
    return 1;
}

/* RoPE: base, rotary dims (even, <= d_head), rope.scaling.type none or linear (as divisors;
   llama3 comes as the rope_freqs tensor, longrope as rope_factors_long/short); others refused. */
static int gg_rope(const gg_source *s, const char *an, tc_hparams *hp) {
    double base, factor;
    gguf_string type;
    uint32_t j;
    int r = gg_string(s, an, "rope.scaling.type", &type), linear = r == 1 && gg_str_is(type, "linear");
    if (r < 0 || !gg_float(s, an, "rope.scaling.factor", 0, 0.0, &factor) ||
        !gg_float(s, an, "rope.freq_base", 0, GG_DEFAULT_ROPE_BASE, &base) ||
        !gg_uint(s, an, "rope.dimension_count", 0, hp->d_head, &hp->rope_dim))
        return 0;
    if ((r == 1 && !gg_str_is(type, "none") && !linear) || (!linear && factor != 0.0 && factor != 1.0)) {
        tc_error("%s: %s.rope.scaling.type \"%.*s\" is not supported (none, linear)", s->path, an,
                 r == 1 ? (int)(type.n_bytes > 40 ? 40 : type.n_bytes) : 4, r == 1 ? type.bytes : "none");
        return 0;
    }
    if (linear && factor != 0.0 && factor != 1.0) {
        if (!(factor > 1.0 && factor < 1e6) || hp->rope_dim / 2 > TC_MAX_ROPE_FREQS ||
            tc_find_tensor(&s->ck, "rope_freqs.weight")) {
            tc_error("%s: %s.rope.scaling.factor %g (linear) out of range, or with a rope_freqs tensor", s->path,
                     an, factor);
            return 0;
        }
        hp->n_rope_freqs = hp->rope_dim / 2;
        for (j = 0; j < hp->n_rope_freqs; j++) hp->rope_freqs[j] = (float)factor;
    }
    if (!(base > 0.0 && base < 1e30)) {
        tc_error("%s: %s.rope.freq_base %g out of range", s->path, an, base);
        return 0;
    }
    if (hp->rope_dim == 0 || hp->rope_dim % 2 || hp->rope_dim > hp->d_head) {
        tc_error("%s: %s.rope.dimension_count %u must be even and in 2..d_head (%u)", s->path, an,
                 hp->rope_dim, hp->d_head);
        return 0;
    }
    hp->rope_theta = (float)base;
    return 1;
}

/* What llama.cpp derives from the architecture name rather than the file (llama-model.cpp):
   Gemma's embedding scale sqrt(n_embd), (1 + w) already folded into the norms, post norms,
   the query scale 1/sqrt(key_length) (27B: 1/sqrt(n_embd / n_head)), Gemma-2's even layers
   local (window default 4096) and its soft-caps (defaults 50 / 30), Gemma-3's pattern (every
   6th layer global; sliding_window_pattern when the file has it), local RoPE base 10000
   (rope.freq_base_swa) and q/k norms; Qwen3's q/k norms; Phi-3's window on every layer and
   longrope (rope_factors_* tensors, rope.scaling.attn_factor, original_context_length). */
static int gg_modern(const gg_source *s, const gg_arch *a, tc_hparams *hp, uint32_t window) {
    const char *an = a->name;
    unsigned char sliding[TC_MAX_LAYERS];
    uint32_t i, pattern = GG_GEMMA3_PATTERN, orig;
    double attn_cap, final_cap, local_base, att;
    int g2 = a->arch == TFM_ARCH_GEMMA2, g3 = a->arch == TFM_ARCH_GEMMA3;
    memset(sliding, 0, sizeof sliding);
    if (a->arch == TFM_ARCH_QWEN3 || g3) hp->flags |= TFM_FLAG_QK_NORM;
    if (a->arch == TFM_ARCH_PHI3) {
        for (i = 0; i < hp->n_layers; i++) sliding[i] = 1;
        tc_set_layers(hp, sliding, window, 0);
        if (!gg_uint(s, an, "rope.scaling.original_context_length", 0, 0, &orig) ||
            !gg_float(s, an, "rope.scaling.attn_factor", 0, 1.0, &att))
            return 0;
        if (tc_find_tensor(&s->ck, "rope_factors_long.weight")) {
            if (orig == 0 || !(att > 0.0 && att < 1e6)) {
                tc_error("%s: rope_factors_long needs %s.rope.scaling.original_context_length and a positive "
                         "attn_factor", s->path, an);
                return 0;
            }
            hp->rope_orig_ctx = orig;
            hp->rope_attn_factor = (float)att;
        }
    }
    if (!g2 && !g3) return 1;
    if (!gg_float(s, an, "attn_logit_softcapping", 0, g2 ? GG_GEMMA2_ATTN_CAP : 0.0, &attn_cap) ||
        !gg_float(s, an, "final_logit_softcapping", 0, g2 ? GG_GEMMA2_FINAL_CAP : 0.0, &final_cap) ||
        !gg_uint(s, an, "attention.sliding_window_pattern", 0, GG_GEMMA3_PATTERN, &pattern) ||
        !gg_float(s, an, "rope.freq_base_swa", 0, GG_GEMMA3_LOCAL_BASE, &local_base))
        return 0;
    if (g2 && window == 0) window = GG_GEMMA2_WINDOW;
    if (!(attn_cap >= 0.0 && attn_cap < 1e9) || !(final_cap >= 0.0 && final_cap < 1e9) || pattern == 0 ||
        !(local_base > 0.0 && local_base < 1e30)) {
        tc_error("%s: %s soft-caps, sliding_window_pattern or rope.freq_base_swa out of range", s->path, an);
        return 0;
    }
    hp->flags |= TFM_FLAG_POST_NORMS;
    hp->embed_scale = sqrtf((float)hp->d_model);
    hp->attn_scale = 1.0f / sqrtf((float)(hp->n_layers == (g2 ? GG_GEMMA2_27B_LAYERS : GG_GEMMA3_27B_LAYERS)
                                          ? hp->d_model / hp->n_heads : hp->d_head));
    hp->attn_softcap = g2 ? (float)attn_cap : 0.0f;
    hp->logit_softcap = (float)final_cap;
    if (g3) hp->rope_theta_local = (float)local_base;
    for (i = 0; i < hp->n_layers; i++) sliding[i] = g2 ? (i + 1) % 2 != 0 : (i + 1) % pattern != 0;
    tc_set_layers(hp, sliding, window, g3);
    return 1;
}

/* The .tfm header fields from the metadata (and the few dims taken from tensor shapes). */
static int gg_hparams(const gg_source *s, const gg_arch *a, tc_hparams *hp) {
    const char *an = a->name;
    uint32_t key_len, val_len, vocab, window;
    double eps;
    int parallel;
    memset(hp, 0, sizeof *hp);
    hp->arch = a->arch;
    hp->norm = a->norm;
    hp->act = a->act;
    hp->ffn = a->ffn;
    hp->residual = a->residual;
    hp->pos = a->pos;
    if (!gg_uint(s, an, "block_count", 1, 0, &hp->n_layers) ||
        !gg_uint(s, an, "context_length", 1, 0, &hp->n_ctx) ||
        !gg_uint(s, an, "embedding_length", 1, 0, &hp->d_model) ||
        !gg_uint(s, an, "attention.head_count", 1, 0, &hp->n_heads) ||
        !gg_uint(s, an, "attention.head_count_kv", 0, hp->n_heads, &hp->n_kv_heads) ||
        !gg_uint(s, an, "attention.key_length", 0, 0, &key_len) ||
        !gg_uint(s, an, "attention.value_length", 0, key_len, &val_len) ||
        !gg_uint(s, an, "attention.sliding_window", 0, 0, &window) ||
        !gg_uint(s, an, "vocab_size", 0, 0, &vocab) ||
        !gg_float(s, an, a->norm == TFM_NORM_RMSNORM ? "attention.layer_norm_rms_epsilon"
                                                     : "attention.layer_norm_epsilon", 1, 0.0, &eps) ||
        !gg_bool(s, an, "use_parallel_residual", 1, &parallel) ||
        !gg_rows(s, "token_embd.weight", &hp->n_vocab) || !gg_rows(s, "blk.0.ffn_up.weight", &hp->d_ff) ||
        !tc_check_layers(hp, s->path))
        return 0;
    if (hp->ffn == TFM_FFN_GATED && !tc_find_tensor(&s->ck, "blk.0.ffn_gate.weight")) hp->d_ff /= 2; /* gate|up */
    if (hp->n_heads == 0 || hp->n_kv_heads == 0 || hp->n_heads % hp->n_kv_heads ||
        (key_len == 0 && hp->d_model % hp->n_heads)) {
        tc_error("%s: %u heads / %u kv heads do not fit embedding_length %u", s->path, hp->n_heads,
                 hp->n_kv_heads, hp->d_model);
        return 0;
    }
    hp->d_head = key_len ? key_len : hp->d_model / hp->n_heads;
    if (val_len && val_len != hp->d_head) {
        tc_error("%s: attention.value_length %u differs from key_length %u (not supported)", s->path,
                 val_len, hp->d_head);
        return 0;
    }
    if (vocab && vocab != hp->n_vocab) {
        tc_error("%s: %s.vocab_size %u, but token_embd.weight has %u rows", s->path, an, vocab,
                 hp->n_vocab);
        return 0;
    }
    if (a->arch == TFM_ARCH_GPT_NEOX && !parallel) hp->residual = TFM_RESIDUAL_SEQUENTIAL;
    if (a->arch == TFM_ARCH_STARCODER2 && window && window < hp->n_ctx) { /* within the window, sliding
                                                                             attention is plain attention */
        tc_warn("%s: context limited to sliding_window %u (context_length %u)", s->path, window, hp->n_ctx);
        hp->n_ctx = window;
    }
    hp->norm_eps = (float)eps;
    hp->tied_output = tc_find_tensor(&s->ck, "output.weight") == NULL;
    if ((hp->pos == TFM_POS_ROPE_HALF || hp->pos == TFM_POS_ROPE_INTERLEAVED) && !gg_rope(s, an, hp)) return 0;
    return gg_modern(s, a, hp, window);
}

/* >>gguf-plan ------------------------------------------------------------------------------------
   One table for every architecture: llama.cpp name (%d = layer) -> .tfm name(s), with the
   expected shape (PyTorch order) and when the entry applies. An entry that applies is taken
   when the file has it; a missing GG_REQ entry is an error; a tensor that no applying entry
   takes is an error too (the Hugging Face path's policy). */

#define GG_REQ 0x10000u      /* required when it applies */
#define GG_IF_FUSED 0x20000u /* applies when q/k/v are one attn_qkv tensor (thirds) */
#define GG_IF_SPLIT 0x40000u /* applies when q/k/v are separate */
#define GG_IF_GATED 0x80000u /* applies to FFN_GATED */
#define GG_IF_NORM2 0x100000u /* applies unless one norm feeds both branches */
#define GG_IF_LEARNED 0x200000u /* applies to POS_LEARNED */
#define GG_IF_LN 0x400000u   /* applies to LayerNorm (norm biases) */
#define GG_IF_POST 0x800000u /* applies with TFM_FLAG_POST_NORMS (Gemma) */
#define GG_IF_UP_FUSED 0x1000000u /* applies when ffn_up holds gate | up (Phi-3) */
#define GG_IF_UP_SPLIT 0x2000000u /* applies otherwise */
#define GG_IF_QK 0x4000000u /* applies with TFM_FLAG_QK_NORM (Qwen3, Gemma-3) */
#define GG_IF_ALL (GG_IF_FUSED | GG_IF_SPLIT | GG_IF_GATED | GG_IF_NORM2 | GG_IF_LEARNED | GG_IF_LN | \
                   GG_IF_POST | GG_IF_UP_FUSED | GG_IF_UP_SPLIT | GG_IF_QK)

static const tc_tensor_map gg_tensors[] = {
    {"token_embd.weight", {"tok_embd"}, GG_REQ, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {"position_embd.weight", {"pos_embd"}, GG_REQ | GG_IF_LEARNED | TC_KEEP_F32, TC_OP_COPY,
     {TC_DIM_CTX, TC_DIM_MODEL}},
    {"blk.%d.attn_norm.weight", {"blk.%d.ln1.w"}, TC_LAYER | GG_REQ, TC_OP_COPY, {TC_DIM_MODEL}},
    {"blk.%d.attn_norm.bias", {"blk.%d.ln1.b"}, TC_LAYER | GG_REQ | GG_IF_LN, TC_OP_COPY, {TC_DIM_MODEL}},
    {"blk.%d.attn_qkv.weight", {"blk.%d.wq", "blk.%d.wk", "blk.%d.wv"}, TC_LAYER | GG_REQ | GG_IF_FUSED,
     TC_OP_SPLIT_QKV_THIRDS, {TC_DIM_QKV, TC_DIM_MODEL}},
    {"blk.%d.attn_qkv.bias", {"blk.%d.bq", "blk.%d.bk", "blk.%d.bv"}, TC_LAYER | GG_IF_FUSED,
     TC_OP_SPLIT_QKV_THIRDS, {TC_DIM_QKV}},
    {"blk.%d.attn_q.weight", {"blk.%d.wq"}, TC_LAYER | GG_REQ | GG_IF_SPLIT, TC_OP_COPY, {TC_DIM_Q, TC_DIM_MODEL}},
    {"blk.%d.attn_q.bias", {"blk.%d.bq"}, TC_LAYER | GG_IF_SPLIT, TC_OP_COPY, {TC_DIM_Q}},
    {"blk.%d.attn_k.weight", {"blk.%d.wk"}, TC_LAYER | GG_REQ | GG_IF_SPLIT, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {"blk.%d.attn_k.bias", {"blk.%d.bk"}, TC_LAYER | GG_IF_SPLIT, TC_OP_COPY, {TC_DIM_KV}},
    {"blk.%d.attn_v.weight", {"blk.%d.wv"}, TC_LAYER | GG_REQ | GG_IF_SPLIT, TC_OP_COPY, {TC_DIM_KV, TC_DIM_MODEL}},
    {"blk.%d.attn_v.bias", {"blk.%d.bv"}, TC_LAYER | GG_IF_SPLIT, TC_OP_COPY, {TC_DIM_KV}},
    {"blk.%d.attn_output.weight", {"blk.%d.wo"}, TC_LAYER | GG_REQ, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_Q}},
    {"blk.%d.attn_output.bias", {"blk.%d.bo"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"blk.%d.ffn_norm.weight", {"blk.%d.ln2.w"}, TC_LAYER | GG_REQ | GG_IF_NORM2, TC_OP_COPY, {TC_DIM_MODEL}},
    {"blk.%d.ffn_norm.bias", {"blk.%d.ln2.b"}, TC_LAYER | GG_REQ | GG_IF_NORM2 | GG_IF_LN, TC_OP_COPY,
     {TC_DIM_MODEL}},
    {"blk.%d.attn_q_norm.weight", {"blk.%d.q_norm.w"}, TC_LAYER | GG_REQ | GG_IF_QK, TC_OP_COPY, {TC_DIM_HEAD}},
    {"blk.%d.attn_k_norm.weight", {"blk.%d.k_norm.w"}, TC_LAYER | GG_REQ | GG_IF_QK, TC_OP_COPY, {TC_DIM_HEAD}},
    {"blk.%d.post_attention_norm.weight", {"blk.%d.post_attn.w"}, TC_LAYER | GG_REQ | GG_IF_POST, TC_OP_COPY,
     {TC_DIM_MODEL}},
    {"blk.%d.post_ffw_norm.weight", {"blk.%d.post_ffn.w"}, TC_LAYER | GG_REQ | GG_IF_POST, TC_OP_COPY,
     {TC_DIM_MODEL}},
    {"blk.%d.ffn_up.weight", {"blk.%d.w_up"}, TC_LAYER | GG_REQ | GG_IF_UP_SPLIT, TC_OP_COPY,
     {TC_DIM_FF, TC_DIM_MODEL}},
    {"blk.%d.ffn_up.weight", {"blk.%d.w_gate", "blk.%d.w_up"}, TC_LAYER | GG_REQ | GG_IF_UP_FUSED,
     TC_OP_SPLIT_HALVES, {TC_DIM_FF2, TC_DIM_MODEL}},
    {"blk.%d.ffn_up.bias", {"blk.%d.b_up"}, TC_LAYER, TC_OP_COPY, {TC_DIM_FF}},
    {"blk.%d.ffn_gate.weight", {"blk.%d.w_gate"}, TC_LAYER | GG_REQ | GG_IF_GATED | GG_IF_UP_SPLIT, TC_OP_COPY,
     {TC_DIM_FF, TC_DIM_MODEL}},
    {"blk.%d.ffn_gate.bias", {"blk.%d.b_gate"}, TC_LAYER | GG_IF_GATED, TC_OP_COPY, {TC_DIM_FF}},
    {"blk.%d.ffn_down.weight", {"blk.%d.w_down"}, TC_LAYER | GG_REQ, TC_OP_COPY, {TC_DIM_MODEL, TC_DIM_FF}},
    {"blk.%d.ffn_down.bias", {"blk.%d.b_down"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {"output_norm.weight", {"lnf.w"}, GG_REQ, TC_OP_COPY, {TC_DIM_MODEL}},
    {"output_norm.bias", {"lnf.b"}, GG_REQ | GG_IF_LN, TC_OP_COPY, {TC_DIM_MODEL}},
    {"output.weight", {"output.w"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {"output.bias", {"output.b"}, 0, TC_OP_COPY, {TC_DIM_VOCAB}},
    {"rope_freqs.weight", {"rope_freqs"}, 0, TC_OP_COPY, {TC_DIM_ROPE_HALF}},        /* llama3 */
    {"rope_factors_short.weight", {"rope_freqs"}, 0, TC_OP_COPY, {TC_DIM_ROPE_HALF}}, /* longrope */
    {"rope_factors_long.weight", {"rope_freqs_long"}, 0, TC_OP_COPY, {TC_DIM_ROPE_HALF}},
};

/* Conditions that hold for this file: GG_IF_* bits. */
static unsigned gg_conditions(const gg_source *s, const tc_hparams *hp) {
    unsigned c = tc_find_tensor(&s->ck, "blk.0.attn_qkv.weight") ? GG_IF_FUSED : GG_IF_SPLIT;
    if (hp->ffn == TFM_FFN_GATED) c |= GG_IF_GATED;
    if (hp->residual != TFM_RESIDUAL_PARALLEL_SHARED) c |= GG_IF_NORM2;
    if (hp->pos == TFM_POS_LEARNED) c |= GG_IF_LEARNED;
    if (hp->norm == TFM_NORM_LAYERNORM) c |= GG_IF_LN;
    if (hp->flags & TFM_FLAG_POST_NORMS) c |= GG_IF_POST;
    if (hp->flags & TFM_FLAG_QK_NORM) c |= GG_IF_QK;
    c |= hp->ffn == TFM_FFN_GATED && !tc_find_tensor(&s->ck, "blk.0.ffn_gate.weight") ? GG_IF_UP_FUSED : GG_IF_UP_SPLIT;
    return c;
}

/* One table entry for one layer (layer < 0: global), through the shared tc_plan_entry. */
static int gg_plan_entry(tc_plan *p, const tc_arch *view, const tc_tensor_map *m, int layer,
                         const gg_source *s, const tc_hparams *hp, const char *type) {
    char name[128];
    const tc_tensor *t;
    snprintf(name, sizeof name, m->hf, layer);
    t = tc_find_tensor(&s->ck, name);
    if (!t) {
        if (!(m->flags & GG_REQ)) return 1;
        tc_error("%s: missing tensor %s", s->path, name);
        return 0;
    }
    if (t->rank == 1 && tc_block_type(t->dtype)) {
        tc_error("%s: tensor %s: a quantized (%s) vector is not supported", s->path, name, t->dtype_name);
        return 0;
    }
    return tc_plan_entry(p, view, m, layer, hp, &s->ck, type);
}

static int gg_plan(tc_plan *p, const gg_source *s, const tc_hparams *hp, const char *type) {
    tc_arch view; /* the table as a tc_arch: no config reader, no skipped names, no prefixes */
    unsigned cond = gg_conditions(s, hp);
    size_t i, n_unused = 0;
    int l;
    memset(&view, 0, sizeof view);
    view.model_type = "gguf";
    view.tensors = gg_tensors;
    view.n_tensors = sizeof gg_tensors / sizeof gg_tensors[0];
    for (i = 0; i < view.n_tensors; i++) {
        const tc_tensor_map *m = &gg_tensors[i];
        if ((m->flags & GG_IF_ALL & ~cond) != 0) continue; /* does not apply */
        if (!(m->flags & TC_LAYER)) {
            if (!gg_plan_entry(p, &view, m, -1, s, hp, type)) return 0;
            continue;
        }
        for (l = 0; l < (int)hp->n_layers; l++)
            if (!gg_plan_entry(p, &view, m, l, s, hp, type)) return 0;
    }
    for (i = 0; i < s->ck.n_tensors; i++) {
        if (s->ck.tensors[i].used) continue;
        if (n_unused++ < 5) tc_error("%s: tensor %s is not used (unexpected for this architecture, "
                                     "or more blocks than block_count)", s->path, s->ck.tensors[i].name);
    }
    if (n_unused) {
        tc_error("%s: %lu unused tensor(s)", s->path, (unsigned long)n_unused);
        return 0;
    }
    return tc_plan_rope_freqs(p, hp); /* a linear rope.scaling's divisors */
}

/* >>gguf-tokenizer -------------------------------------------------------------------------------
   tokenizer.ggml.* -> tc_tok, then the shared blob writer. */

#define GG_TOKTYPE_NORMAL 1
#define GG_TOKTYPE_UNKNOWN 2
#define GG_TOKTYPE_CONTROL 3
#define GG_TOKTYPE_USER_DEFINED 4
#define GG_TOKTYPE_UNUSED 5
#define GG_TOKTYPE_BYTE 6
#define GG_SPM_SPACE "\xe2\x96\x81" /* U+2581, SentencePiece's visible space */

/* "<0xNN>" -> NN; -1 if the text is not exactly that. */
static int gg_byte_token(gguf_string s) {
    int v = 0, i;
    if (s.n_bytes != 6 || memcmp(s.bytes, "<0x", 3) != 0 || s.bytes[5] != '>') return -1;
    for (i = 3; i < 5; i++) {
        char c = s.bytes[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
              : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A SentencePiece piece with each U+2581 turned into a space, as the token's text. */
static int gg_spm_text(tc_tok *t, uint32_t id, gguf_string s) {
    char buf[1024];
    size_t i = 0, o = 0;
    if (s.n_bytes > sizeof buf) {
        tc_error("tokenizer.ggml.tokens[%u]: longer than %lu bytes", id, (unsigned long)sizeof buf);
        return 0;
    }
    while (i < s.n_bytes) {
        if (s.n_bytes - i >= 3 && memcmp(s.bytes + i, GG_SPM_SPACE, 3) == 0) {
            buf[o++] = ' ';
            i += 3;
        } else {
            buf[o++] = s.bytes[i++];
        }
    }
    return tc_tok_set_text(t, id, buf, o);
}

/* Token attributes from the token type (ADDED tokens need text: tfm.h matches them in text). */
static unsigned char gg_tok_attr(int32_t type, uint32_t text_len, int spm) {
    if (text_len == 0) return 0;
    if (type == GG_TOKTYPE_CONTROL || (spm && type == GG_TOKTYPE_UNKNOWN))
        return (unsigned char)(TFM_TOKATTR_SPECIAL | TFM_TOKATTR_ADDED);
    if (type == GG_TOKTYPE_USER_DEFINED) return TFM_TOKATTR_ADDED;
    return 0;
}

/* tokenizer.ggml.pre for byte-level BPE: llama.cpp's pre-tokenizer names mapped to tfm_pretok:
   "gpt-2"/"phi-2" the GPT-2 pattern, "starcoder" single digits then GPT-2 (Hugging Face's
   Digits(individual) + ByteLevel), "llama-bpe" Llama-3's pattern with whole-word vocabulary hits
   (llama.cpp sets ignore_merges for it), "qwen2" the Qwen2 pattern; anything else is an error. */
static int gg_pre(const gg_source *s, tc_tok *t) {
    gguf_string pre;
    int r = gg_string(s, NULL, "tokenizer.ggml.pre", &pre);
    t->pretok = TFM_PRETOK_GPT2;
    if (r < 0) return 0;
    if (r == 1 && (gg_str_is(pre, "gpt-2") || gg_str_is(pre, "phi-2"))) return 1; /* one regex */
    if (r == 1 && gg_str_is(pre, "starcoder")) {
        t->pretok = TFM_PRETOK_GPT2_DIGITS;
        return 1;
    }
    if (r == 1 && gg_str_is(pre, "llama-bpe")) {
        t->pretok = TFM_PRETOK_LLAMA3;
        t->flags |= TFM_TOKFLAG_IGNORE_MERGES;
        return 1;
    }
    if (r == 1 && gg_str_is(pre, "qwen2")) {
        t->pretok = TFM_PRETOK_QWEN2;
        return 1;
    }
    if (r == 0 || gg_str_is(pre, "default")) {
        tc_warn("%s: tokenizer.ggml.pre is %s: using the GPT-2 split pattern", s->path,
                r == 0 ? "absent" : "\"default\"");
        return 1;
    }
    tc_error("%s: tokenizer.ggml.pre \"%.*s\" is not supported (\"gpt-2\", \"phi-2\", \"starcoder\", "
             "\"llama-bpe\", \"qwen2\", \"default\" or absent)", s->path,
             (int)(pre.n_bytes > 60 ? 60 : pre.n_bytes), pre.bytes);
    return 0;
}

/* Every token: text, attributes, score. */
static int gg_tok_tokens(const gg_source *s, tc_tok *t, int spm, const unsigned char *types,
                         const unsigned char *scores) {
    gguf_string_iter it;
    uint64_t n, i;
    if (!gguf_string_array(&s->g, "tokenizer.ggml.tokens", &it, &n)) return 0; /* gg_tokenizer checked it */
    for (i = 0; i < n; i++) {
        gguf_string str = gguf_string_next(&it);
        int32_t type = types ? (int32_t)(uint32_t)gguf__le(types + 4 * i, 4) : GG_TOKTYPE_NORMAL;
        uint32_t id = (uint32_t)i;
        int b = type == GG_TOKTYPE_BYTE && spm ? gg_byte_token(str) : -2;
        if (b == -1) {
            tc_error("%s: byte token %u is \"%.*s\", not <0xNN>", s->path, id,
                     (int)(str.n_bytes > 40 ? 40 : str.n_bytes), str.bytes);
            return 0;
        }
        if (b >= 0) {
            char c = (char)b;
            if (!tc_tok_set_text(t, id, &c, 1)) return 0;
            t->attrs[id] = TFM_TOKATTR_BYTE;
        } else if (spm) {
            if (!gg_spm_text(t, id, str)) return 0;
        } else if (type == GG_TOKTYPE_CONTROL || type == GG_TOKTYPE_USER_DEFINED) { /* raw text */
            if (!tc_tok_set_text(t, id, str.bytes, (size_t)str.n_bytes)) return 0;
        } else if (!tc_tok_add_vocab(t, str.bytes, (size_t)str.n_bytes, (int64_t)id, s->path)) {
            return 0;
        }
        if (!(t->attrs[id] & TFM_TOKATTR_BYTE)) t->attrs[id] = gg_tok_attr(type, t->text_len[id], spm);
        if (scores) {
            uint32_t u = (uint32_t)gguf__le(scores + 4 * i, 4);
            memcpy(&t->scores[id], &u, sizeof u);
            if (!(t->scores[id] > -INFINITY && t->scores[id] < INFINITY)) {
                tc_error("%s: tokenizer.ggml.scores[%u] is not finite", s->path, id);
                return 0;
            }
        }
    }
    return 1;
}

static int gg_tok_merges(const gg_source *s, tc_tok *t) {
    gguf_string_iter it;
    uint64_t n, i;
    if (!gguf_string_array(&s->g, "tokenizer.ggml.merges", &it, &n)) {
        tc_error("%s: tokenizer.ggml.merges (an array of strings) is required for model \"gpt2\"", s->path);
        return 0;
    }
    for (i = 0; i < n; i++) {
        gguf_string m = gguf_string_next(&it);
        if (!tc_tok_add_merge_line(t, m.bytes, (size_t)m.n_bytes, s->path)) return 0;
    }
    return 1;
}

/* bos / eos / unknown / padding ids: absent -> -1, else a token id. */
static int gg_tok_ids(const gg_source *s, tc_tok *t) {
    static const char *const keys[] = {"bos_token_id", "eos_token_id", "unknown_token_id",
                                       "padding_token_id"};
    int32_t *ids[4];
    size_t k;
    ids[0] = &t->bos_id; ids[1] = &t->eos_id; ids[2] = &t->unk_id; ids[3] = &t->pad_id;
    for (k = 0; k < 4; k++) {
        uint32_t v;
        char key[64];
        snprintf(key, sizeof key, "tokenizer.ggml.%s", keys[k]);
        if (!gguf_find(&s->g, key)) continue;
        if (!gg_uint(s, NULL, key, 1, 0, &v)) return 0;
        if (v >= t->n_tokens) {
            tc_error("%s: %s = %u is not a token id (%u tokens)", s->path, key, v, t->n_tokens);
            return 0;
        }
        *ids[k] = (int32_t)v;
    }
    return 1;
}

/* found = 0: the file has no tokenizer (no tokenizer.ggml.model, or "none"). */
/* GGUF keeps no lstrip / rstrip; llama.cpp (llama-vocab.cpp) gives a model whose general.name
   contains "phi-3" or "phi3" (any case) RSTRIP on every added token and on "</s>", except
   "<unk>", "<s>" and "<|endoftext|>", as Phi-3's tokenizer.json has it. The same here. */
static void gg_phi3_rstrip(const gg_source *s, tc_tok *t) {
    static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
    gguf_string name;
    char low[256];
    size_t i, k;
    uint32_t id;
    if (gg_string(s, NULL, "general.name", &name) != 1) return;
    for (i = 0; i < name.n_bytes && i + 1 < sizeof low; i++)
        low[i] = (char)(name.bytes[i] >= 'A' && name.bytes[i] <= 'Z' ? name.bytes[i] - 'A' + 'a' : name.bytes[i]);
    low[i] = '\0';
    if (!strstr(low, "phi-3") && !strstr(low, "phi3")) return;
    for (id = 0; id < t->n_tokens; id++) {
        const char *txt = t->arena + t->text_off[id];
        size_t n = t->has_text[id] ? t->text_len[id] : 0;
        int rstrip = (t->attrs[id] & TFM_TOKATTR_ADDED) || (n == 4 && memcmp(txt, "</s>", 4) == 0);
        for (k = 0; k < sizeof keep / sizeof keep[0]; k++)
            if (n == strlen(keep[k]) && memcmp(txt, keep[k], n) == 0) rstrip = 0;
        if (rstrip && (t->attrs[id] & TFM_TOKATTR_ADDED)) t->attrs[id] |= TFM_TOKATTR_RSTRIP;
    }
}

static int gg_tokenizer(const gg_source *s, tc_tok *t, int *found) {
    gguf_string model;
    uint64_t n = 0, n_types = 0, n_scores = 0;
    const unsigned char *types, *scores;
    int r, spm, bad_t, bad_s, space_prefix, add_bos, ok = 0;
    memset(t, 0, sizeof *t);
    *found = 0;
    r = gg_string(s, NULL, "tokenizer.ggml.model", &model);
    if (r < 0) return 0;
    if (r == 0 || gg_str_is(model, "none")) return 1;
    spm = gg_str_is(model, "llama");
    if (!spm && !gg_str_is(model, "gpt2")) {
        tc_error("%s: tokenizer.ggml.model \"%.*s\" is not supported (gpt2, llama)", s->path,
                 (int)(model.n_bytes > 40 ? 40 : model.n_bytes), model.bytes);
        return 0;
    }
    *found = 1;
    {
        gguf_string_iter it;
        if (!gguf_string_array(&s->g, "tokenizer.ggml.tokens", &it, &n) || n == 0 || n > tc_max_vocab()) {
            tc_error("%s: tokenizer.ggml.tokens must be an array of 1..%u strings", s->path, tc_max_vocab());
            return 0;
        }
    }
    types = gg_array(s, "tokenizer.ggml.token_type", GGUF_I32, &n_types, &bad_t);
    scores = gg_array(s, "tokenizer.ggml.scores", GGUF_F32, &n_scores, &bad_s);
    if (bad_t || bad_s) return 0;
    if ((types && n_types != n) || (scores && n_scores != n)) {
        tc_error("%s: tokenizer.ggml.token_type / scores do not have one entry per token (%llu)",
                 s->path, (unsigned long long)n);
        return 0;
    }
    if (spm && !scores) {
        tc_error("%s: tokenizer.ggml.scores is required for model \"llama\"", s->path);
        return 0;
    }
    if (!tc_tok_alloc(t, (uint32_t)n, spm ? 0 : (size_t)n)) goto done;
    if (scores && !(t->scores = (float *)calloc((size_t)n, sizeof *t->scores))) {
        tc_error("out of memory");
        goto done;
    }
    t->kind = spm ? TFM_TOKENIZER_SPM : TFM_TOKENIZER_BPE_BYTES;
    if (!spm && !gg_pre(s, t)) goto done;
    /* llama.cpp's default: SentencePiece vocabularies put BOS first, byte-level ones do not */
    if (!gg_bool(s, NULL, "tokenizer.ggml.add_space_prefix", 1, &space_prefix) ||
        !gg_bool(s, NULL, "tokenizer.ggml.add_bos_token", spm, &add_bos) ||
        !gg_tok_tokens(s, t, spm, types, scores) || (!spm && !gg_tok_merges(s, t)) || !gg_tok_ids(s, t))
        goto done;
    if (spm && space_prefix) t->flags |= TFM_TOKFLAG_PREFIX_SPACE;
    if (add_bos && t->bos_id >= 0) t->flags |= TFM_TOKFLAG_ADD_BOS;
    gg_phi3_rstrip(s, t);
    ok = 1;
done:
    if (t->h_key) memset(t->h_key, 0, t->h_cap * sizeof *t->h_key); /* keys point into the map */
    return ok;
}

/* >>gguf-main ------------------------------------------------------------------------------------
   The two conversions. */

/* A path ending in .gguf (whatever it holds: a bad file gets GGUF's messages), or a file that
   starts with the GGUF magic. */
int gg_is_gguf(const char *path) {
    unsigned char m[4];
    size_t n = strlen(path);
    FILE *f;
    if (n >= 5 && strcmp(path + n - 5, ".gguf") == 0) return 1;
    if (!(f = fopen(path, "rb"))) return 0;
    n = fread(m, 1, sizeof m, f);
    fclose(f);
    return n == sizeof m && memcmp(m, "GGUF", 4) == 0;
}

/* tokenizer.chat_template, when the file has one (bos / eos: the ids' texts, as llama.cpp). */
static int gg_chat_template(const gg_source *s, tc_tok *tok) {
    gguf_string tmpl;
    int r = gg_string(s, NULL, "tokenizer.chat_template", &tmpl);
    if (r != 1) return r == 0;
    return tc_tok_set_chat(tok, 0, tmpl.bytes, (size_t)tmpl.n_bytes);
}

static int gg_convert_model(const tc_args *a) {
    gg_source s;
    tc_hparams hp;
    tc_plan plan;
    tc_tok tok;
    gguf_string arch_name;
    const gg_arch *arch = NULL;
    unsigned char *blob = NULL;
    size_t blob_bytes = 0, i;
    int found = 0, ok = 0, r;
    memset(&plan, 0, sizeof plan);
    memset(&tok, 0, sizeof tok);
    if (!gg_open(&s, a->src)) goto done;
    r = gg_string(&s, NULL, "general.architecture", &arch_name);
    if (r == 0) tc_error("%s: no general.architecture", a->src);
    if (r != 1) goto done;
    for (i = 0; i < sizeof gg_archs / sizeof gg_archs[0]; i++)
        if (gg_str_is(arch_name, gg_archs[i].name)) arch = &gg_archs[i];
    if (!arch) {
        tc_error("%s: general.architecture \"%.*s\" is not supported (supported: " GG_SUPPORTED ")",
                 a->src, (int)(arch_name.n_bytes > 40 ? 40 : arch_name.n_bytes), arch_name.bytes);
        goto done;
    }
    if (!gg_hparams(&s, arch, &hp) || !tc_validate_hparams(&hp, a->src) ||
        !gg_plan(&plan, &s, &hp, a->type) || !gg_tokenizer(&s, &tok, &found))
        goto done;
    if (!found) {
        tc_warn("%s: no tokenizer.ggml.model; the model is usable by token ids only", a->src);
    } else {
        if (tok.n_tokens > hp.n_vocab) {
            tc_error("%s: the tokenizer has %u tokens but token_embd has %u rows", a->src, tok.n_tokens,
                     hp.n_vocab);
            goto done;
        }
        if (!gg_chat_template(&s, &tok) || !tc_tok_chat_finish(&tok, a->chat_template, a->src) ||
            !tc_tok_blob(&tok, &blob, &blob_bytes))
            goto done;
    }
    if (!a->quiet)
        fprintf(stderr, "tfm-convert: %s (GGUF): %u layers, d_model %u, %u heads, d_ff %u, vocab %u, %s\n",
                arch->name, hp.n_layers, hp.d_model, hp.n_heads, hp.d_ff, hp.n_vocab,
                a->type ? a->type : "the file's own types");
    ok = tc_write_file(a->out, &hp, &plan, blob, blob_bytes, &s.ck, a->quiet) &&
         (!a->check || tc_check(a->out, &hp, found ? tok.n_tokens : 0));
done:
    free(blob);
    free(plan.outs);
    tc_tok_free(&tok);
    gg_close(&s);
    return ok;
}

static int gg_convert_vocab(const tc_args *a) {
    gg_source s;
    tc_hparams hp;
    tc_plan plan;
    tc_tok tok;
    unsigned char *blob = NULL;
    size_t blob_bytes = 0;
    int found = 0, ok = 0;
    memset(&plan, 0, sizeof plan);
    memset(&tok, 0, sizeof tok);
    memset(&hp, 0, sizeof hp);
    if (!gg_open(&s, a->src) || !gg_tokenizer(&s, &tok, &found)) goto done;
    if (!found) {
        tc_error("%s: no tokenizer (tokenizer.ggml.model is absent or \"none\")", a->src);
        goto done;
    }
    if (!gg_chat_template(&s, &tok) || !tc_tok_chat_finish(&tok, a->chat_template, a->src) ||
        !tc_tok_blob(&tok, &blob, &blob_bytes))
        goto done;
    hp.n_vocab = tok.n_tokens;
    ok = tc_write_file(a->out, &hp, &plan, blob, blob_bytes, &s.ck, a->quiet) &&
         (!a->check || tc_check(a->out, NULL, tok.n_tokens));
    if (ok && !a->quiet)
        fprintf(stderr, "tfm-convert: %u tokens, %lu merges, bos %d, eos %d\n", tok.n_tokens,
                (unsigned long)tok.n_merges, (int)tok.bos_id, (int)tok.eos_id);
done:
    free(blob);
    tc_tok_free(&tok);
    gg_close(&s);
    return ok;
}

int gg_convert(const tc_args *a) {
    if (a->tokenizer) {
        tc_error("--tokenizer is for llama2.c checkpoints; %s is GGUF (its tokenizer is inside)", a->src);
        return 0;
    }
    return a->vocab_only ? gg_convert_vocab(a) : gg_convert_model(a);
}
