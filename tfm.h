/* tfm.h - v0.1.0 - run decoder-only transformer language models on the CPU.
   Single-header C99 library: libc + libm, OpenMP when compiled with -fopenmp.

   DO THIS in exactly one C or C++ file:
       #define TFM_IMPLEMENTATION
       #include "tfm.h"
   Every other file includes "tfm.h" without the define.

   QUICK START
       tfm_model_desc md = {0};              C++: tfm_model_desc md = {};
       md.path = "model.tfm";
       tfm_model *model;
       if (tfm_model_open(&md, &model) != TFM_OK) ...   (md.logger receives the detail)
       tfm_session_desc sd = {0};
       tfm_session *s;
       tfm_session_create(model, &sd, &s);
       int32_t ids[256]; size_t n_ids;
       tfm_model_tokenize(model, "Hello", 5, ids, 256, &n_ids);
       tfm_session_eval(s, ids, (int)n_ids, 0, NULL);  evaluates positions 0..n_ids-1
       tfm_sampler_desc pd = {0}; pd.temperature = 0.8f; pd.n_vocab = n_vocab;
       tfm_sampler *smp; tfm_sampler_create(&pd, &smp);
       int32_t next; tfm_sample(smp, tfm_session_logits(s), n_vocab, &next);
       ... tfm_session_eval(s, &next, 1, pos, NULL) ...
       tfm_sampler_destroy(smp); tfm_session_destroy(s); tfm_model_close(model);

   TABLE OF CONTENTS (search for the tag)
       >>api        public declarations
       >>config     build-switch checks
       >>util       checked size math, little-endian reads, error text
       >>alloc      allocator callbacks
       >>io         mmap / read the file
       >>format     parse and validate a .tfm file before any pointer is made
       >>kernels    scalar math: norms, GELU, softmax, RoPE, matvec, attention
       >>simd       vector twins of the hot kernels
       >>model      tensors resolved from the directory
       >>session    KV cache and scratch
       >>forward    one transformer step
       >>tokenizer  byte-level BPE encode/decode
       >>sampler    temperature, top-k, top-p, min-p, repetition penalty
       >>public     API entry points

   CONFIGURATION MACROS (define before including the implementation)
       TFM_STATIC            make every public function static
       TFM_API               linkage of public functions (default extern)
       TFM_NO_STDIO          drop path-based loading (memory only)
       TFM_NO_MMAP           read files into memory instead of mapping them
       TFM_NO_SIMD           scalar kernels only
       TFM_NO_OPENMP         ignore -fopenmp
       TFM_ASSERT(x)         internal invariant check (default assert)
       TFM_MALLOC, TFM_FREE  default allocator (define both or neither)
       TFM_MAX_LAYERS        limit for hostile files (default 512)
       TFM_MAX_VOCAB         limit for hostile files (default 1<<22)
       TFM_MAX_CTX           limit for hostile files (default 1<<20)
       TFM_MAX_DIM           limit on d_model, d_ff, heads*d_head (default 1<<16)

   THREAD SAFETY
       A tfm_model is immutable after open: share it between any number of threads.
       A tfm_session is used by one thread at a time; sessions on one model may run in parallel.
       A tfm_sampler belongs to its caller. Results never depend on the thread count: work is
       split by output rows, never by reduction order.

   tfm does NOT: train, use a GPU, create threads of its own (OpenMP aside), print, exit, abort
   on bad input, keep global state, or allocate after create time.

   FILE FORMAT (.tfm, version 1; every field little-endian; written by tools/tfm-convert)
       A fixed 256-byte header, a tensor directory of fixed 128-byte entries, an optional
       tokenizer blob, then tensor data, each tensor at a 64-byte aligned offset so the mapped
       file is used in place. Reserved bytes are zero. Offsets are from the start of the file.

       header (256 bytes)
         0  u8[8] magic "TFMODEL\0"          56  f32 rope_theta  (RoPE base)
         8  u32 format_version = 1            60  f32 norm_eps
        12  u32 header_bytes = 256            64  u32 norm      (tfm_norm)
        16  u32 arch (tfm_arch, informative)  68  u32 act       (tfm_act)
        20  u32 n_vocab                       72  u32 ffn       (tfm_ffn)
        24  u32 n_ctx                         76  u32 residual  (tfm_residual)
        28  u32 n_layers                      80  u32 pos       (tfm_pos)
        32  u32 n_heads                       84  u32 n_tensors
        36  u32 n_kv_heads                    88  u64 tensor_dir_offset (= 256)
        40  u32 d_model                       96  u64 tokenizer_offset (0 if none)
        44  u32 d_head                       104  u64 tokenizer_bytes  (0 if none)
        48  u32 d_ff                         112  u8[144] reserved
        52  u32 rope_dim (rotary dims per head, even, <= d_head; 0 without RoPE)
       A vocab-only file (tfm-convert --vocab-only) has n_layers = 0 and no tensors.

       tensor directory entry (128 bytes), n_tensors of them
         0  char[64] name, NUL-padded        104  u64 data_offset (multiple of 64)
        64  u32 dtype (tfm_dtype)            112  u64 data_bytes
        68  u32 rank (1..4)                  120  u64 reserved
        72  u64 shape[4], outer first, unused dims 0; a matrix W is [d_out, d_in], y = W x.

       tensor names (i = layer; optional ones may be absent):
         tok_embd [n_vocab, d_model]          pos_embd [n_ctx, d_model]   (pos = LEARNED)
         blk.i.ln1.w, blk.i.ln1.b [d_model]   (b only for LayerNorm)
         blk.i.wq [n_heads*d_head, d_model]   blk.i.bq [n_heads*d_head]     optional
         blk.i.wk, blk.i.wv [n_kv_heads*d_head, d_model]  blk.i.bk, blk.i.bv optional
         blk.i.wo [d_model, n_heads*d_head]   blk.i.bo [d_model]            optional
         blk.i.ln2.w, blk.i.ln2.b [d_model]   (absent for RESIDUAL_PARALLEL_SHARED)
         blk.i.w_up [d_ff, d_model]           blk.i.b_up [d_ff]             optional
         blk.i.w_gate [d_ff, d_model]         blk.i.b_gate [d_ff]  (FFN_GATED only)
         blk.i.w_down [d_model, d_ff]         blk.i.b_down [d_model]        optional
         lnf.w, lnf.b [d_model]
         output.w [n_vocab, d_model] (absent: tied to tok_embd)  output.b [n_vocab] optional
       Vectors (rank 1: norms and biases) are always f32; matrices are any tfm_dtype.

       tokenizer blob (at tokenizer_offset, tokenizer_bytes long)
         0  u32 kind (tfm_tokenizer_kind)     24  i32 eos_id  (-1 none)
         4  u32 n_tokens                      28  i32 unk_id  (-1 none)
         8  u32 n_merges                      32  i32 pad_id  (-1 none)
        12  u32 flags (TFM_TOKFLAG_*)         36  u32 text_bytes
        16  u32 pretok (tfm_pretok)           40  u8[24] reserved
        20  i32 bos_id  (-1 none)
        64  u32 text_offsets[n_tokens + 1]   token i is text[text_offsets[i] .. text_offsets[i+1])
            f32 scores[n_tokens]             merge scores (SentencePiece kinds), else 0
            u8  attrs[n_tokens]              TFM_TOKATTR_* bits
            u8  pad[] to a multiple of 4
            u32 merges[n_merges][3]          left id, right id, merged id; rank = index
            u8  text[text_bytes]             raw token bytes (the byte-level alphabet is undone)

   LICENSE: see end of file.
*/
#ifndef TFM_H_INCLUDED
#define TFM_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define TFM_VERSION_MAJOR 0
#define TFM_VERSION_MINOR 1
#define TFM_VERSION_PATCH 0
#define TFM_VERSION_STRING "0.1.0"
#define TFM_FORMAT_VERSION 1

#ifndef TFM_API
#ifdef TFM_STATIC
#define TFM_API static
#else
#define TFM_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* >>api ------------------------------------------------------------------------------------------
   Public declarations. Enum values are append-only: never renumbered. */

typedef enum tfm_result {
    TFM_OK = 0,
    TFM_ERR_INVALID_ARG = 1,   /* NULL pointer, bad token id, bad position, bad desc field */
    TFM_ERR_OUT_OF_MEMORY = 2, /* an allocation failed; nothing leaked */
    TFM_ERR_IO = 3,            /* the file could not be opened, mapped or read */
    TFM_ERR_BAD_MAGIC = 4,     /* not a .tfm file */
    TFM_ERR_BAD_VERSION = 5,   /* a .tfm file of a format version this build does not read */
    TFM_ERR_CORRUPT = 6,       /* sizes, offsets, shapes or values that do not add up */
    TFM_ERR_UNSUPPORTED = 7,   /* valid, but this build cannot run it (dtype, big-endian host) */
    TFM_ERR_CONTEXT_FULL = 8,  /* positions would pass the session's n_ctx */
    TFM_ERR_CANCELLED = 9      /* should_abort returned true */
} tfm_result;

typedef enum tfm_dtype {
    TFM_DTYPE_F32 = 0,
    TFM_DTYPE_F16 = 1
} tfm_dtype;

typedef enum tfm_arch { /* informative: the forward pass reads only the fields below */
    TFM_ARCH_UNKNOWN = 0,
    TFM_ARCH_GPT_NEOX = 1,
    TFM_ARCH_GPT2 = 2,
    TFM_ARCH_LLAMA = 3,
    TFM_ARCH_PHI = 4,
    TFM_ARCH_GPTJ = 5,
    TFM_ARCH_STARCODER2 = 6
} tfm_arch;

typedef enum tfm_norm { TFM_NORM_LAYERNORM = 0, TFM_NORM_RMSNORM = 1 } tfm_norm;
typedef enum tfm_act { TFM_ACT_GELU_ERF = 0, TFM_ACT_GELU_TANH = 1, TFM_ACT_SILU = 2 } tfm_act;
typedef enum tfm_ffn { TFM_FFN_PLAIN = 0, TFM_FFN_GATED = 1 } tfm_ffn;
typedef enum tfm_residual {
    TFM_RESIDUAL_SEQUENTIAL = 0,     /* x += attn(ln1(x)); x += ffn(ln2(x)) */
    TFM_RESIDUAL_PARALLEL = 1,       /* x += attn(ln1(x)) + ffn(ln2(x))   (GPT-NeoX) */
    TFM_RESIDUAL_PARALLEL_SHARED = 2 /* x += attn(ln1(x)) + ffn(ln1(x))   (Phi, GPT-J) */
} tfm_residual;
typedef enum tfm_pos {
    TFM_POS_NONE = 0,
    TFM_POS_ROPE_HALF = 1,        /* RoPE pairs (j, j + rope_dim/2): GPT-NeoX, Hugging Face */
    TFM_POS_ROPE_INTERLEAVED = 2, /* RoPE pairs (2j, 2j + 1): GPT-J, Meta, llama2.c */
    TFM_POS_LEARNED = 3,          /* pos_embd added to the token embedding (GPT-2) */
    TFM_POS_SINUSOIDAL = 4,       /* fixed sin/cos added to the embedding (original Transformer) */
    TFM_POS_ALIBI = 5             /* linear attention biases per head */
} tfm_pos;

typedef enum tfm_tokenizer_kind {
    TFM_TOKENIZER_NONE = 0,
    TFM_TOKENIZER_BPE_BYTES = 1, /* GPT-2 byte-level BPE: merge ranks */
    TFM_TOKENIZER_SPM = 2        /* SentencePiece-style BPE: merge scores, byte fallback */
} tfm_tokenizer_kind;
typedef enum tfm_pretok { TFM_PRETOK_NONE = 0, TFM_PRETOK_GPT2 = 1 } tfm_pretok;
#define TFM_TOKFLAG_NFC 1u          /* NFC-normalize text before splitting */
#define TFM_TOKFLAG_PREFIX_SPACE 2u /* prepend a space (SentencePiece dummy prefix) */
#define TFM_TOKATTR_SPECIAL 1u      /* control token such as <|endoftext|> */
#define TFM_TOKATTR_ADDED 2u        /* matched verbatim in the text before pre-tokenizing */
#define TFM_TOKATTR_BYTE 4u         /* byte-fallback token <0xNN>: its text is that one byte */

/* Resolved model configuration, returned by value (a read-only copy). */
typedef struct tfm_config {
    tfm_arch arch;
    int n_vocab;      /* rows of the embedding / logits (may be padded past n_tokens) */
    int n_ctx;        /* longest sequence the model was trained for */
    int n_layers;
    int n_heads;      /* query heads */
    int n_kv_heads;   /* key/value heads: n_heads (MHA), fewer (GQA), 1 (MQA) */
    int d_model;
    int d_head;
    int d_ff;
    int rope_dim;     /* rotary dims per head (partial rotary when < d_head) */
    float rope_theta;
    float norm_eps;
    tfm_norm norm;
    tfm_act act;
    tfm_ffn ffn;
    tfm_residual residual;
    tfm_pos pos;
    tfm_dtype dtype;  /* dtype of the largest matrix, for display */
    bool tied_output; /* output projection shares tok_embd */
    int n_tokens;     /* tokenizer vocabulary (0: no tokenizer; use token ids) */
    int32_t bos_id;   /* -1 when the tokenizer has none */
    int32_t eos_id;
} tfm_config;

/* Memory callbacks. Set both or neither; align is a power of two. */
typedef struct tfm_allocator {
    void *(*alloc)(size_t bytes, size_t align, void *user);
    void (*free)(void *ptr, size_t bytes, void *user);
    void *user;
} tfm_allocator;

/* Receives one line of detail for each failure ("tensor blk.3.wq: shape ..."). */
typedef struct tfm_logger {
    void (*log)(void *user, tfm_result result, const char *message);
    void *user;
} tfm_logger;

typedef struct tfm_model tfm_model;
typedef struct tfm_session tfm_session;
typedef struct tfm_sampler tfm_sampler;

/* All-zero means default. Exactly one source: path, or data + data_bytes. */
typedef struct tfm_model_desc {
    const char *path;        /* .tfm file: mapped read-only (read into memory with no_mmap) */
    const void *data;        /* a whole .tfm file in memory; must outlive the model; zero-copy */
    size_t data_bytes;
    bool no_mmap;            /* read the file through the allocator instead of mapping it */
    tfm_allocator allocator;
    tfm_logger logger;
} tfm_model_desc;

/* Optional host parallel-for: run task(ctx, i) for every i in [0, n_tasks), return when done. */
typedef void (*tfm_task_fn)(void *task_ctx, int task_index);
typedef void (*tfm_parallel_for_fn)(void *user, int n_tasks, tfm_task_fn task, void *task_ctx);

typedef struct tfm_session_desc {
    int n_ctx;               /* 0: the model's n_ctx */
    int n_threads;           /* 0: 1; OpenMP threads when compiled with -fopenmp */
    tfm_parallel_for_fn parallel_for; /* optional; overrides n_threads/OpenMP */
    void *parallel_user;
    bool (*should_abort)(void *user); /* optional; checked between layers */
    void *abort_user;
    tfm_allocator allocator;
} tfm_session_desc;

/* All-zero means greedy. */
typedef struct tfm_sampler_desc {
    int n_vocab;            /* length of the logits passed to tfm_sample (required) */
    float temperature;      /* 0: greedy (argmax) */
    int top_k;              /* 0: off */
    float top_p;            /* 0 or 1: off; else keep the smallest set with mass >= top_p */
    float min_p;            /* 0: off; else drop tokens with p < min_p * p_max */
    float repeat_penalty;   /* 0 or 1: off; > 1 penalizes the last repeat_last_n tokens */
    int repeat_last_n;      /* 0: 64 */
    uint64_t seed;          /* 0: a fixed default seed */
    tfm_allocator allocator;
} tfm_sampler_desc;

/* Streaming decoder state: holds back an incomplete UTF-8 sequence between tokens. */
typedef struct tfm_utf8_stream {
    unsigned char held[4];
    int n_held;
} tfm_utf8_stream;

/* --- results and build --- */
TFM_API const char *tfm_result_string(tfm_result result); /* static text, never NULL */
TFM_API const char *tfm_build_info(void);                  /* "avx2+fma", "scalar", ... */

/* --- model ---
   tfm_model_open: validates the whole file, then maps tensors in place.
   Params: desc (read during the call only), out_model (set to NULL on failure).
   Returns TFM_OK or an error; the detail goes to desc->logger.
   Thread safety: the model is immutable once open; share it freely.
   Ownership: close with tfm_model_close; desc->data must outlive the model. */
TFM_API tfm_result tfm_model_open(const tfm_model_desc *desc, tfm_model **out_model);
TFM_API void tfm_model_close(tfm_model *model);                  /* NULL is fine */
TFM_API tfm_config tfm_model_config(const tfm_model *model);    /* copy of the config */

/* --- tokenizer (on the model; never allocates) --- */
/* Text to ids. Writes at most ids_cap ids, always sets *n_ids to the count needed; returns
   TFM_ERR_INVALID_ARG (and still the count) when ids_cap is too small. No BOS/EOS is added.
   Added tokens (<|endoftext|>, whitespace runs) are matched in the text before splitting. */
TFM_API tfm_result tfm_model_tokenize(const tfm_model *model, const char *text, size_t text_bytes,
                                      int32_t *ids, size_t ids_cap, size_t *n_ids);
/* The raw bytes of one token (may be part of a UTF-8 sequence). */
TFM_API tfm_result tfm_model_token_bytes(const tfm_model *model, int32_t id,
                                         const char **bytes, size_t *n_bytes);
/* Streaming decode of one token: writes the complete UTF-8 characters now available (invalid
   sequences become U+FFFD) and holds back an incomplete tail in *stream. out needs room for
   token bytes + 4 (+3 per invalid byte); *n_out is the count written. */
TFM_API tfm_result tfm_model_decode(const tfm_model *model, tfm_utf8_stream *stream, int32_t id,
                                    char *out, size_t out_cap, size_t *n_out);
/* Emits what is still held (as U+FFFD) at the end of a stream. out_cap >= 3 per held byte. */
TFM_API size_t tfm_utf8_stream_flush(tfm_utf8_stream *stream, char *out, size_t out_cap);

/* --- session ---
   tfm_session_create: allocates the KV cache [n_layers, n_ctx, n_kv_heads * d_head] and all
   scratch; nothing is allocated afterwards.
   Params: model (must outlive the session), desc (read during the call), out_session.
   Thread safety: one thread at a time per session; many sessions may share one model. */
TFM_API tfm_result tfm_session_create(const tfm_model *model, const tfm_session_desc *desc,
                                      tfm_session **out_session);
TFM_API void tfm_session_destroy(tfm_session *session);          /* NULL is fine */
/* Evaluate tokens[0..n_tokens) at positions pos..pos+n_tokens-1. pos may be at most the
   number of positions already evaluated (a smaller pos rewinds the cache). logits_all, if
   not NULL, receives [n_tokens, n_vocab]; the last token's logits are always kept in the
   session (tfm_session_logits). Full context: TFM_ERR_CONTEXT_FULL, nothing evaluated. */
TFM_API tfm_result tfm_session_eval(tfm_session *session, const int32_t *tokens, int n_tokens,
                                    int pos, float *logits_all);
/* Decode one token at pos and point *logits at the session's [n_vocab] logits. */
TFM_API tfm_result tfm_session_decode(tfm_session *session, int32_t token, int pos,
                                      const float **logits);
TFM_API const float *tfm_session_logits(const tfm_session *session); /* last logits [n_vocab] */
TFM_API int tfm_session_n_past(const tfm_session *session);   /* positions in the KV cache */
TFM_API int tfm_session_n_ctx(const tfm_session *session);
TFM_API const char *tfm_session_last_error(const tfm_session *session); /* "" if none */

/* --- math on logits (numerically stable: max-subtracted, log-sum-exp) --- */
TFM_API void tfm_softmax(const float *logits, float *probs, int n);
TFM_API void tfm_log_softmax(const float *logits, float *log_probs, int n);
TFM_API float tfm_cross_entropy(const float *logits, int n, int32_t target); /* nats */

/* --- sampler ---
   tfm_sampler_create: owns a seeded RNG, the recent-token window and sorting scratch.
   Thread safety: belongs to its caller. tfm_sample never modifies logits, never allocates. */
TFM_API tfm_result tfm_sampler_create(const tfm_sampler_desc *desc, tfm_sampler **out_sampler);
TFM_API void tfm_sampler_destroy(tfm_sampler *sampler);          /* NULL is fine */
/* Pick the next token from logits[0..n) (n <= desc n_vocab) and remember it for the
   repetition penalty. */
TFM_API tfm_result tfm_sample(tfm_sampler *sampler, const float *logits, int n, int32_t *out_token);
/* Remember a token (e.g. a prompt token) for the repetition penalty without sampling. */
TFM_API void tfm_sampler_accept(tfm_sampler *sampler, int32_t token);

#ifdef __cplusplus
}
#endif
#endif /* TFM_H_INCLUDED */

/* ================================================================================================
   IMPLEMENTATION
   ================================================================================================ */
#if defined(TFM_IMPLEMENTATION) && !defined(TFM_IMPLEMENTATION_INCLUDED)
#define TFM_IMPLEMENTATION_INCLUDED

/* >>config ---------------------------------------------------------------------------------------
   Build-switch checks and defaults. */
#if defined(TFM_MALLOC) != defined(TFM_FREE)
#error "tfm.h: define both TFM_MALLOC and TFM_FREE, or neither"
#endif
#ifndef TFM_MALLOC
#include <stdlib.h>
#define TFM_MALLOC(bytes) malloc(bytes)
#define TFM_FREE(ptr) free(ptr)
#endif
#ifndef TFM_ASSERT
#include <assert.h>
#define TFM_ASSERT(x) assert(x)
#endif
#ifndef TFM_MAX_LAYERS
#define TFM_MAX_LAYERS 512
#endif
#ifndef TFM_MAX_VOCAB
#define TFM_MAX_VOCAB (1 << 22)
#endif
#ifndef TFM_MAX_CTX
#define TFM_MAX_CTX (1 << 20)
#endif
#ifndef TFM_MAX_DIM
#define TFM_MAX_DIM (1 << 16)
#endif
#if defined(_OPENMP) && !defined(TFM_NO_OPENMP)
#define TFM__OPENMP 1
#include <omp.h>
#endif
#if !defined(TFM_NO_SIMD) && defined(__AVX2__) && defined(__FMA__)
#define TFM__AVX2 1
#include <immintrin.h>
#elif !defined(TFM_NO_SIMD) && defined(__ARM_NEON)
#define TFM__NEON 1
#include <arm_neon.h>
#endif

#include <string.h>
#include <math.h>
#include <stdio.h>  /* snprintf for error text; FILE only without TFM_NO_STDIO */
#include <stdarg.h>

#ifdef __cplusplus
#define TFM__CAST(T, x) static_cast<T>(x)
#else
#define TFM__CAST(T, x) ((T)(x))
#endif
#if defined(__GNUC__) || defined(__clang__)
#define TFM_PRIVATE static __attribute__((unused))
#define TFM_RESTRICT __restrict__
#elif defined(_MSC_VER)
#define TFM_PRIVATE static
#define TFM_RESTRICT __restrict
#else
#define TFM_PRIVATE static
#define TFM_RESTRICT
#endif

/* >>util -----------------------------------------------------------------------------------------
   Checked size math (every size that comes from a file goes through these), little-endian
   reads, and error text. */

/* a * b into *out; false on overflow. */
TFM_PRIVATE bool tfm__mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > (size_t)-1 / a) return false;
    *out = a * b;
    return true;
}

/* a + b into *out; false on overflow. */
TFM_PRIVATE bool tfm__add_size(size_t a, size_t b, size_t *out) {
    if (b > (size_t)-1 - a) return false;
    *out = a + b;
    return true;
}

/* Round n up to a multiple of align (a power of two); false on overflow. */
TFM_PRIVATE bool tfm__align_size(size_t n, size_t align, size_t *out) {
    if (!tfm__add_size(n, align - 1, out)) return false;
    *out &= ~(align - 1);
    return true;
}

TFM_PRIVATE uint32_t tfm__rd_u32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

TFM_PRIVATE uint64_t tfm__rd_u64(const unsigned char *p) {
    return (uint64_t)tfm__rd_u32(p) | ((uint64_t)tfm__rd_u32(p + 4) << 32);
}

TFM_PRIVATE float tfm__rd_f32(const unsigned char *p) {
    uint32_t u = tfm__rd_u32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* IEEE half to float, exact for every input (subnormals, inf, NaN). */
TFM_PRIVATE float tfm__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
    float f;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else { /* zero or subnormal: mant * 2^-24 */
        f = (float)mant * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

#define TFM__ERROR_BYTES 256

/* Format a detail message into buf (always NUL-terminated). */
TFM_PRIVATE void tfm__format(char *buf, size_t buf_bytes, const char *fmt, va_list ap) {
    if (buf_bytes == 0) return;
    if (vsnprintf(buf, buf_bytes, fmt, ap) < 0) buf[0] = '\0';
}

/* Report a failure to a logger; returns result so callers can `return tfm__log(...)`. */
TFM_PRIVATE tfm_result tfm__log(const tfm_logger *logger, tfm_result result, const char *fmt, ...) {
    char msg[TFM__ERROR_BYTES];
    va_list ap;
    if (!logger || !logger->log) return result;
    va_start(ap, fmt);
    tfm__format(msg, sizeof msg, fmt, ap);
    va_end(ap);
    logger->log(logger->user, result, msg);
    return result;
}

/* >>alloc ----------------------------------------------------------------------------------------
   Every allocation goes through the desc's allocator (or TFM_MALLOC), and only at create time. */

#define TFM__ALIGN 64 /* cache line; also the .tfm tensor alignment */

TFM_PRIVATE bool tfm__allocator_valid(const tfm_allocator *a) {
    return (a->alloc == NULL) == (a->free == NULL);
}

/* bytes aligned to TFM__ALIGN; NULL on failure or overflow. */
TFM_PRIVATE void *tfm__alloc(const tfm_allocator *a, size_t bytes) {
    size_t total;
    unsigned char *raw, *p;
    if (a->alloc) return a->alloc(bytes ? bytes : 1, TFM__ALIGN, a->user);
    /* default: over-allocate and keep the raw pointer just before the aligned block */
    if (!tfm__add_size(bytes, TFM__ALIGN + sizeof(void *), &total)) return NULL;
    raw = TFM__CAST(unsigned char *, TFM_MALLOC(total));
    if (!raw) return NULL;
    p = raw + sizeof(void *);
    p += (TFM__ALIGN - ((uintptr_t)p & (TFM__ALIGN - 1))) & (TFM__ALIGN - 1);
    memcpy(p - sizeof(void *), &raw, sizeof raw);
    return p;
}

/* Frees what tfm__alloc returned; bytes must be the size asked for. NULL is fine. */
TFM_PRIVATE void tfm__free(const tfm_allocator *a, void *ptr, size_t bytes) {
    void *raw;
    if (!ptr) return;
    if (a->free) {
        a->free(ptr, bytes ? bytes : 1, a->user);
        return;
    }
    memcpy(&raw, TFM__CAST(unsigned char *, ptr) - sizeof(void *), sizeof raw);
    TFM_FREE(raw);
}

/* >>io -------------------------------------------------------------------------------------------
   (core) map or read a .tfm file. */

/* >>format ---------------------------------------------------------------------------------------
   (core) parse and validate the header, directory and tokenizer blob. */

/* >>kernels --------------------------------------------------------------------------------------
   (core) scalar kernels. */

/* >>simd -----------------------------------------------------------------------------------------
   (core) vector twins. */

/* >>model ----------------------------------------------------------------------------------------
   (core) tensors resolved from the directory.

   The tokenizer section (below) provides, for the model and the public entry points:
     typedef struct tfm__tokenizer tfm__tokenizer;   (declared here, defined in >>tokenizer)
     tfm__tokenizer_create(blob, blob_bytes, allocator, logger, &tok)  validate + build tables
     tfm__tokenizer_destroy(tok, allocator)
     tfm__tokenizer_encode(tok, text, text_bytes, ids, ids_cap, &n_ids)  allocates nothing
     tfm__tokenizer_piece(tok, id, &bytes, &n_bytes)
     tfm__tokenizer_decode(tok, stream, id, out, out_cap, &n_out)
     tfm__tokenizer_info(tok, &n_tokens, &bos_id, &eos_id) */
typedef struct tfm__tokenizer tfm__tokenizer;

/* >>session --------------------------------------------------------------------------------------
   (core) KV cache and scratch. */

/* >>forward --------------------------------------------------------------------------------------
   (core) one transformer step. */

/* >>tokenizer ------------------------------------------------------------------------------------
   (tokenizer) byte-level BPE.
   TEMPORARY PLACEHOLDERS below, replaced by the tokenizer engineer. The public tokenizer
   functions (tfm_model_tokenize, tfm_model_token_bytes, tfm_model_decode, tfm_utf8_stream_flush)
   live at the end of this section and reach the model's tokenizer through
   tfm__model_tokenizer(model), which >>model defines. */
struct tfm__tokenizer { int placeholder; };
TFM_PRIVATE tfm_result tfm__tokenizer_create(const unsigned char *blob, size_t blob_bytes,
                                             const tfm_allocator *a, const tfm_logger *lg,
                                             tfm__tokenizer **out) {
    (void)blob; (void)blob_bytes; (void)a;
    *out = NULL;
    return tfm__log(lg, TFM_ERR_UNSUPPORTED, "tokenizer: not implemented yet");
}
TFM_PRIVATE void tfm__tokenizer_destroy(tfm__tokenizer *t, const tfm_allocator *a) { (void)t; (void)a; }
TFM_PRIVATE void tfm__tokenizer_info(const tfm__tokenizer *t, int *n_tokens, int32_t *bos_id,
                                     int32_t *eos_id) {
    (void)t; *n_tokens = 0; *bos_id = -1; *eos_id = -1;
}

/* >>sampler --------------------------------------------------------------------------------------
   (core) sampling. */

/* >>public ---------------------------------------------------------------------------------------
   (core) API entry points. */

#endif /* TFM_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
CHANGELOG
    0.1.0  first version: GPT-NeoX-family models, .tfm format 1, byte-level BPE.
------------------------------------------------------------------------------
LICENSE (MIT)
Copyright (c) 2026 the tfm.h authors

Permission is hereby granted, free of charge, to any person obtaining a copy of this software
and associated documentation files (the "Software"), to deal in the Software without
restriction, including without limitation the rights to use, copy, modify, merge, publish,
distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
------------------------------------------------------------------------------
*/
