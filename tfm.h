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
#if defined(__GNUC__) || defined(__clang__)
#define TFM_API static __attribute__((unused)) /* no unused-function warnings in static builds */
#else
#define TFM_API static
#endif
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
   Get the whole .tfm file into memory as (bytes, size): borrowed from desc->data (zero-copy),
   mapped read-only (POSIX mmap), or read through the allocator (no_mmap, TFM_NO_MMAP, a failed
   mmap, or a platform without mmap). Everything after this section sees only those bytes.
   Borrowed memory must be at least 4-byte aligned (malloc and mmap memory always is): tensors
   sit at 64-byte aligned offsets and are read in place as float / uint16_t arrays. */

#if !defined(TFM_NO_STDIO) && !defined(TFM_NO_MMAP) && (defined(__unix__) || defined(__APPLE__))
#define TFM__MMAP 1
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#endif

#define TFM__DATA_ALIGN_MIN 4 /* borrowed desc->data: float reads in place need this much */

typedef enum tfm__file_kind {
    TFM__FILE_BORROWED = 0, /* desc->data: the caller owns it */
    TFM__FILE_MAPPED = 1,   /* mmap: munmap at close */
    TFM__FILE_OWNED = 2     /* read through the allocator: free at close */
} tfm__file_kind;

typedef struct tfm__file {
    const unsigned char *data;
    size_t data_bytes;
    tfm__file_kind kind;
    void *owned; /* the same address as data, non-const, for munmap / free */
} tfm__file;

TFM_PRIVATE bool tfm__host_is_little_endian(void) {
    uint32_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

TFM_PRIVATE void tfm__file_close(tfm__file *f, const tfm_allocator *a) {
    if (f->kind == TFM__FILE_OWNED) tfm__free(a, f->owned, f->data_bytes);
#ifdef TFM__MMAP
    if (f->kind == TFM__FILE_MAPPED) munmap(f->owned, f->data_bytes);
#endif
    memset(f, 0, sizeof *f);
}

#ifdef TFM__MMAP
/* Map path read-only; false (silently: the caller falls back to reading) on any failure. */
TFM_PRIVATE bool tfm__file_map(const char *path, tfm__file *f) {
    struct stat st;
    void *p;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return false;
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || (uint64_t)st.st_size > (uint64_t)(size_t)-1) {
        close(fd);
        return false;
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return false;
    f->data = TFM__CAST(const unsigned char *, p);
    f->data_bytes = (size_t)st.st_size;
    f->kind = TFM__FILE_MAPPED;
    f->owned = p;
    return true;
}
#endif

#ifndef TFM_NO_STDIO
#if defined(_MSC_VER)
#define TFM__FSEEK_END(fp) _fseeki64(fp, 0, SEEK_END)
#define TFM__FTELL(fp) _ftelli64(fp)
#else
#define TFM__FSEEK_END(fp) fseek(fp, 0, SEEK_END)
#define TFM__FTELL(fp) ftell(fp)
#endif

/* Read the whole file at path into one allocation. */
TFM_PRIVATE tfm_result tfm__file_read(const char *path, const tfm_allocator *a, const tfm_logger *lg,
                                      tfm__file *f) {
    FILE *fp = fopen(path, "rb");
    unsigned char *buf;
    size_t n_bytes, got;
    int64_t end;
    if (!fp) return tfm__log(lg, TFM_ERR_IO, "%s: cannot open", path);
    end = TFM__FSEEK_END(fp) == 0 ? (int64_t)TFM__FTELL(fp) : -1;
    if (end < 0 || (uint64_t)end > (uint64_t)(size_t)-1 || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return tfm__log(lg, TFM_ERR_IO, "%s: cannot find the file size", path);
    }
    n_bytes = (size_t)end;
    buf = TFM__CAST(unsigned char *, tfm__alloc(a, n_bytes));
    if (!buf) {
        fclose(fp);
        return tfm__log(lg, TFM_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", path, n_bytes);
    }
    got = n_bytes ? fread(buf, 1, n_bytes, fp) : 0;
    fclose(fp);
    if (got != n_bytes) {
        tfm__free(a, buf, n_bytes);
        return tfm__log(lg, TFM_ERR_IO, "%s: read %zu of %zu bytes", path, got, n_bytes);
    }
    f->data = buf;
    f->data_bytes = n_bytes;
    f->kind = TFM__FILE_OWNED;
    f->owned = buf;
    return TFM_OK;
}
#endif

/* Fill *f from the desc's source. Exactly one of path or data must be given. */
TFM_PRIVATE tfm_result tfm__file_open(const tfm_model_desc *desc, const tfm_allocator *a,
                                      const tfm_logger *lg, tfm__file *f) {
    memset(f, 0, sizeof *f);
    if ((desc->path != NULL) == (desc->data != NULL))
        return tfm__log(lg, TFM_ERR_INVALID_ARG, "model desc: set exactly one of path or data");
    if (desc->data) {
        if ((uintptr_t)desc->data % TFM__DATA_ALIGN_MIN != 0)
            return tfm__log(lg, TFM_ERR_INVALID_ARG, "model desc: data must be %d-byte aligned",
                            TFM__DATA_ALIGN_MIN);
        f->data = TFM__CAST(const unsigned char *, desc->data);
        f->data_bytes = desc->data_bytes;
        f->kind = TFM__FILE_BORROWED;
        return TFM_OK;
    }
#ifdef TFM_NO_STDIO
    (void)a;
    return tfm__log(lg, TFM_ERR_UNSUPPORTED, "model desc: path loading is compiled out (TFM_NO_STDIO)");
#else
#ifdef TFM__MMAP
    if (!desc->no_mmap && tfm__file_map(desc->path, f)) return TFM_OK;
#endif
    return tfm__file_read(desc->path, a, lg, f);
#endif
}

/* >>format ---------------------------------------------------------------------------------------
   Parse and validate a .tfm file (layout in the top comment) before any pointer is made: the
   header and config ranges, then every directory entry, all in checked 64-bit math against the
   file size. Only then does >>model derive tensor pointers, by name, with shapes checked against
   the config. Every failure names the field or tensor in one log line. */

#define TFM__HEADER_BYTES 256
#define TFM__HEADER_USED 112 /* bytes before the reserved tail */
#define TFM__ENTRY_BYTES 128
#define TFM__NAME_BYTES 64
#define TFM__MAX_RANK 4
#define TFM__TENSOR_ALIGN 64

/* The header fields, as read (not yet trusted). */
typedef struct tfm__header {
    uint32_t format_version, header_bytes, arch, n_vocab, n_ctx, n_layers, n_heads, n_kv_heads;
    uint32_t d_model, d_head, d_ff, rope_dim, norm, act, ffn, residual, pos, n_tensors;
    float rope_theta, norm_eps;
    uint64_t tensor_dir_offset, tokenizer_offset, tokenizer_bytes;
} tfm__header;

/* One directory entry, validated by tfm__read_entry. */
typedef struct tfm__entry {
    char name[TFM__NAME_BYTES];
    uint32_t dtype, rank;
    uint64_t shape[TFM__MAX_RANK];
    uint64_t data_offset, data_bytes;
} tfm__entry;

TFM_PRIVATE size_t tfm__dtype_bytes(uint32_t dtype) {
    return dtype == TFM_DTYPE_F32 ? 4u : dtype == TFM_DTYPE_F16 ? 2u : 0u;
}

/* Magic, version, header size and reserved bytes; fills *h. */
TFM_PRIVATE tfm_result tfm__parse_header(const unsigned char *p, size_t file_bytes,
                                         const tfm_logger *lg, tfm__header *h) {
    size_t i;
    memset(h, 0, sizeof *h);
    if (file_bytes < TFM__HEADER_BYTES)
        return tfm__log(lg, TFM_ERR_CORRUPT, "file is %zu bytes, smaller than the %d-byte header",
                        file_bytes, TFM__HEADER_BYTES);
    if (memcmp(p, "TFMODEL", 8) != 0) return tfm__log(lg, TFM_ERR_BAD_MAGIC, "not a .tfm file (magic)");
    h->format_version = tfm__rd_u32(p + 8);
    h->header_bytes = tfm__rd_u32(p + 12);
    if (h->format_version != TFM_FORMAT_VERSION)
        return tfm__log(lg, TFM_ERR_BAD_VERSION, "format version %u, this build reads %d",
                        (unsigned)h->format_version, TFM_FORMAT_VERSION);
    if (h->header_bytes != TFM__HEADER_BYTES)
        return tfm__log(lg, TFM_ERR_CORRUPT, "header_bytes %u, expected %d", (unsigned)h->header_bytes,
                        TFM__HEADER_BYTES);
    for (i = TFM__HEADER_USED; i < TFM__HEADER_BYTES; i++)
        if (p[i] != 0) return tfm__log(lg, TFM_ERR_CORRUPT, "header: reserved byte %zu is not zero", i);
    h->arch = tfm__rd_u32(p + 16);       h->n_vocab = tfm__rd_u32(p + 20);
    h->n_ctx = tfm__rd_u32(p + 24);      h->n_layers = tfm__rd_u32(p + 28);
    h->n_heads = tfm__rd_u32(p + 32);    h->n_kv_heads = tfm__rd_u32(p + 36);
    h->d_model = tfm__rd_u32(p + 40);    h->d_head = tfm__rd_u32(p + 44);
    h->d_ff = tfm__rd_u32(p + 48);       h->rope_dim = tfm__rd_u32(p + 52);
    h->rope_theta = tfm__rd_f32(p + 56); h->norm_eps = tfm__rd_f32(p + 60);
    h->norm = tfm__rd_u32(p + 64);       h->act = tfm__rd_u32(p + 68);
    h->ffn = tfm__rd_u32(p + 72);        h->residual = tfm__rd_u32(p + 76);
    h->pos = tfm__rd_u32(p + 80);        h->n_tensors = tfm__rd_u32(p + 84);
    h->tensor_dir_offset = tfm__rd_u64(p + 88);
    h->tokenizer_offset = tfm__rd_u64(p + 96);
    h->tokenizer_bytes = tfm__rd_u64(p + 104);
    return TFM_OK;
}

TFM_PRIVATE bool tfm__is_vocab_only(const tfm__header *h) { return h->n_layers == 0 && h->n_tensors == 0; }

/* v in [lo, hi], else a CORRUPT log line naming the field. */
TFM_PRIVATE tfm_result tfm__check_range(const tfm_logger *lg, const char *field, uint64_t v, uint32_t lo,
                                        uint32_t hi) {
    if (v >= lo && v <= hi) return TFM_OK;
    return tfm__log(lg, TFM_ERR_CORRUPT, "config: %s = %llu, expected %u..%u", field, (unsigned long long)v,
                    (unsigned)lo, (unsigned)hi);
}

/* Config ranges. A vocab-only file (no layers, no tensors) only needs fields that fit. */
TFM_PRIVATE tfm_result tfm__check_config(const tfm__header *h, const tfm_logger *lg) {
    uint32_t lo = tfm__is_vocab_only(h) ? 0u : 1u, max_dim = (uint32_t)TFM_MAX_DIM;
    tfm_result r = TFM_OK;
    if (!r) r = tfm__check_range(lg, "n_layers", h->n_layers, lo, (uint32_t)TFM_MAX_LAYERS);
    if (!r) r = tfm__check_range(lg, "n_vocab", h->n_vocab, lo, (uint32_t)TFM_MAX_VOCAB);
    if (!r) r = tfm__check_range(lg, "n_ctx", h->n_ctx, lo, (uint32_t)TFM_MAX_CTX);
    if (!r) r = tfm__check_range(lg, "n_heads", h->n_heads, lo, max_dim);
    if (!r) r = tfm__check_range(lg, "n_kv_heads", h->n_kv_heads, lo, h->n_heads);
    if (!r) r = tfm__check_range(lg, "d_model", h->d_model, lo, max_dim);
    if (!r) r = tfm__check_range(lg, "d_head", h->d_head, lo, max_dim);
    if (!r) r = tfm__check_range(lg, "n_heads * d_head", (uint64_t)h->n_heads * h->d_head, lo, max_dim);
    if (!r) r = tfm__check_range(lg, "d_ff", h->d_ff, lo, max_dim);
    if (!r) r = tfm__check_range(lg, "rope_dim", h->rope_dim, 0, h->d_head);
    if (!r) r = tfm__check_range(lg, "norm", h->norm, 0, TFM_NORM_RMSNORM);
    if (!r) r = tfm__check_range(lg, "act", h->act, 0, TFM_ACT_SILU);
    if (!r) r = tfm__check_range(lg, "ffn", h->ffn, 0, TFM_FFN_GATED);
    if (!r) r = tfm__check_range(lg, "residual", h->residual, 0, TFM_RESIDUAL_PARALLEL_SHARED);
    if (!r) r = tfm__check_range(lg, "pos", h->pos, 0, TFM_POS_ALIBI);
    if (r || tfm__is_vocab_only(h)) return r;
    if (h->n_heads % h->n_kv_heads != 0)
        return tfm__log(lg, TFM_ERR_CORRUPT, "config: n_heads %u is not a multiple of n_kv_heads %u",
                        (unsigned)h->n_heads, (unsigned)h->n_kv_heads);
    if (h->rope_dim % 2 != 0)
        return tfm__log(lg, TFM_ERR_CORRUPT, "config: rope_dim %u is odd", (unsigned)h->rope_dim);
    if ((h->pos == TFM_POS_ROPE_HALF || h->pos == TFM_POS_ROPE_INTERLEAVED) && h->rope_dim == 0)
        return tfm__log(lg, TFM_ERR_CORRUPT, "config: RoPE with rope_dim 0");
    if (!(h->norm_eps > 0.0f && h->norm_eps < INFINITY))
        return tfm__log(lg, TFM_ERR_CORRUPT, "config: norm_eps must be finite and > 0");
    if (!(h->rope_theta >= 0.0f && h->rope_theta < INFINITY) ||
        (h->rope_dim > 0 && !(h->rope_theta > 0.0f)))
        return tfm__log(lg, TFM_ERR_CORRUPT, "config: rope_theta must be finite and > 0");
    return TFM_OK;
}

/* The directory and tokenizer ranges lie inside the file, after the header. */
TFM_PRIVATE tfm_result tfm__check_layout(const tfm__header *h, size_t file_bytes, const tfm_logger *lg,
                                         uint64_t *dir_end) {
    uint64_t max_tensors = 6u + 18u * (uint64_t)h->n_layers, end = 0;
    if (h->tensor_dir_offset != TFM__HEADER_BYTES)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tensor_dir_offset %llu, expected %d",
                        (unsigned long long)h->tensor_dir_offset, TFM__HEADER_BYTES);
    if (h->n_tensors > max_tensors)
        return tfm__log(lg, TFM_ERR_CORRUPT, "n_tensors %u: more than the %llu names a model can have",
                        (unsigned)h->n_tensors, (unsigned long long)max_tensors);
    end = TFM__HEADER_BYTES + (uint64_t)h->n_tensors * TFM__ENTRY_BYTES; /* < 2^32 * 2^7 + 2^8 */
    if (end > file_bytes)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tensor directory ends at %llu, past the file end %zu",
                        (unsigned long long)end, file_bytes);
    *dir_end = end;
    if (h->tokenizer_bytes == 0) {
        if (h->tokenizer_offset != 0)
            return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer_offset is set but tokenizer_bytes is 0");
        return TFM_OK;
    }
    if (h->tokenizer_offset < end || h->tokenizer_offset > file_bytes ||
        h->tokenizer_bytes > file_bytes - h->tokenizer_offset)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer [%llu, +%llu) is outside the file (%zu bytes)",
                        (unsigned long long)h->tokenizer_offset, (unsigned long long)h->tokenizer_bytes,
                        file_bytes);
    return TFM_OK;
}

/* Write "[a,b,...]" for the first rank dims of shape. */
TFM_PRIVATE void tfm__shape_text(char *buf, size_t buf_bytes, const uint64_t *shape, uint32_t rank) {
    size_t used = 0;
    uint32_t i;
    buf[0] = '\0';
    for (i = 0; i < rank && used < buf_bytes; i++) {
        int n = snprintf(buf + used, buf_bytes - used, "%s%llu", i ? "," : "[",
                         (unsigned long long)shape[i]);
        if (n < 0) return;
        used += (size_t)n;
    }
    if (used < buf_bytes) snprintf(buf + used, buf_bytes - used, "%s]", rank ? "" : "[");
}

/* Read and validate directory entry i: name, dtype, rank, shape, size, offset, alignment. */
TFM_PRIVATE tfm_result tfm__read_entry(const unsigned char *file, size_t file_bytes, uint64_t dir_end,
                                       uint32_t i, const tfm_logger *lg, tfm__entry *e) {
    const unsigned char *p = file + TFM__HEADER_BYTES + (size_t)i * TFM__ENTRY_BYTES;
    size_t name_bytes = 0, k, count = 1, bytes;
    uint32_t d;
    while (name_bytes < TFM__NAME_BYTES && p[name_bytes] != 0) name_bytes++;
    if (name_bytes == 0 || name_bytes == TFM__NAME_BYTES)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tensor #%u: name is empty or not NUL-terminated", (unsigned)i);
    for (k = name_bytes; k < TFM__NAME_BYTES; k++)
        if (p[k] != 0) return tfm__log(lg, TFM_ERR_CORRUPT, "tensor #%u: name padding is not zero", (unsigned)i);
    memcpy(e->name, p, TFM__NAME_BYTES);
    e->dtype = tfm__rd_u32(p + 64);
    e->rank = tfm__rd_u32(p + 68);
    for (d = 0; d < TFM__MAX_RANK; d++) e->shape[d] = tfm__rd_u64(p + 72 + 8 * d);
    e->data_offset = tfm__rd_u64(p + 104);
    e->data_bytes = tfm__rd_u64(p + 112);
    if (tfm__dtype_bytes(e->dtype) == 0)
        return tfm__log(lg, TFM_ERR_UNSUPPORTED, "tensor %s: unknown dtype %u", e->name, (unsigned)e->dtype);
    if (e->rank < 1 || e->rank > TFM__MAX_RANK)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tensor %s: rank %u, expected 1..4", e->name, (unsigned)e->rank);
    for (d = 0; d < TFM__MAX_RANK; d++) {
        bool used = d < e->rank;
        if (used ? e->shape[d] == 0 || e->shape[d] > (uint64_t)(size_t)-1 : e->shape[d] != 0)
            return tfm__log(lg, TFM_ERR_CORRUPT, "tensor %s: bad shape[%u] = %llu", e->name, (unsigned)d,
                            (unsigned long long)e->shape[d]);
        if (used && !tfm__mul_size(count, (size_t)e->shape[d], &count))
            return tfm__log(lg, TFM_ERR_CORRUPT, "tensor %s: element count overflows", e->name);
    }
    if (!tfm__mul_size(count, tfm__dtype_bytes(e->dtype), &bytes) || (uint64_t)bytes != e->data_bytes)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tensor %s: data_bytes %llu does not match its shape",
                        e->name, (unsigned long long)e->data_bytes);
    if (e->data_offset % TFM__TENSOR_ALIGN != 0)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tensor %s: data_offset %llu is not a multiple of %d", e->name,
                        (unsigned long long)e->data_offset, TFM__TENSOR_ALIGN);
    if (e->data_offset < dir_end || e->data_offset > file_bytes || e->data_bytes > file_bytes - e->data_offset)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tensor %s: data [%llu, +%llu) is outside the file (%zu bytes)",
                        e->name, (unsigned long long)e->data_offset, (unsigned long long)e->data_bytes,
                        file_bytes);
    if (tfm__rd_u64(p + 120) != 0)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tensor %s: reserved field is not zero", e->name);
    return TFM_OK;
}

/* Tensor names map to slots: 6 model-wide names, then 18 per layer ("blk.<i>.<suffix>"). */
#define TFM__N_GLOBAL 6
#define TFM__N_PER_LAYER 18
enum { TFM__T_TOK_EMBD, TFM__T_POS_EMBD, TFM__T_LNF_W, TFM__T_LNF_B, TFM__T_OUTPUT_W, TFM__T_OUTPUT_B };
enum {
    TFM__L_LN1_W, TFM__L_LN1_B, TFM__L_WQ, TFM__L_BQ, TFM__L_WK, TFM__L_BK, TFM__L_WV, TFM__L_BV,
    TFM__L_WO, TFM__L_BO, TFM__L_LN2_W, TFM__L_LN2_B, TFM__L_W_UP, TFM__L_B_UP, TFM__L_W_GATE,
    TFM__L_B_GATE, TFM__L_W_DOWN, TFM__L_B_DOWN
};
static const char tfm__global_names[TFM__N_GLOBAL][12] = {
    "tok_embd", "pos_embd", "lnf.w", "lnf.b", "output.w", "output.b"};
static const char tfm__layer_names[TFM__N_PER_LAYER][8] = {
    "ln1.w", "ln1.b", "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo",
    "ln2.w", "ln2.b", "w_up", "b_up", "w_gate", "b_gate", "w_down", "b_down"};

/* Slot of a tensor name, or -1 for a name the format does not define. */
TFM_PRIVATE int tfm__name_slot(const char *name, int n_layers) {
    int k, layer = 0;
    const char *p = name + 4;
    for (k = 0; k < TFM__N_GLOBAL; k++)
        if (strcmp(name, tfm__global_names[k]) == 0) return k;
    if (strncmp(name, "blk.", 4) != 0 || *p < '0' || *p > '9' || (p[0] == '0' && p[1] != '.')) return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        layer = layer * 10 + (*p - '0');
        if (layer >= n_layers) return -1;
    }
    if (*p++ != '.') return -1;
    for (k = 0; k < TFM__N_PER_LAYER; k++)
        if (strcmp(p, tfm__layer_names[k]) == 0) return TFM__N_GLOBAL + layer * TFM__N_PER_LAYER + k;
    return -1;
}

/* Validate every directory entry and record each one's slot (slots[i] = entry index or -1).
   Unknown names and duplicates are CORRUPT. */
TFM_PRIVATE tfm_result tfm__check_directory(const unsigned char *file, size_t file_bytes, const tfm__header *h,
                                            uint64_t dir_end, const tfm_logger *lg, int32_t *slots) {
    uint32_t i;
    int n_slots = TFM__N_GLOBAL + (int)h->n_layers * TFM__N_PER_LAYER, s;
    tfm__entry e;
    tfm_result r;
    for (s = 0; s < n_slots; s++) slots[s] = -1;
    for (i = 0; i < h->n_tensors; i++) {
        if ((r = tfm__read_entry(file, file_bytes, dir_end, i, lg, &e)) != TFM_OK) return r;
        s = tfm__name_slot(e.name, (int)h->n_layers);
        if (s < 0) return tfm__log(lg, TFM_ERR_CORRUPT, "tensor %s: unknown name", e.name);
        if (slots[s] >= 0) return tfm__log(lg, TFM_ERR_CORRUPT, "tensor %s: duplicate name", e.name);
        slots[s] = (int32_t)i;
    }
    return TFM_OK;
}

/* >>kernels --------------------------------------------------------------------------------------
   The scalar math of one transformer step, written to be read. Vectors are float arrays; a
   matrix W is [rows, cols] row-major and y = W x (rows = outputs). >>simd speeds up the dot
   products beneath matvec and attention; the tests compare every kernel with a double-precision
   reference. Sizes are ints validated by >>format (<= TFM_MAX_DIM); offsets into big arrays are
   size_t. */

#define TFM__SQRT_2_OVER_PI 0.7978845608028654f /* GELU tanh form: sqrt(2 / pi) */
#define TFM__GELU_CUBIC 0.044715f               /* GELU tanh form: cubic coefficient */
#define TFM__INV_SQRT_2 0.7071067811865476f     /* GELU erf form: 1 / sqrt(2) */
#define TFM__SINUSOID_BASE 10000.0              /* original Transformer position base */
#define TFM__ALIBI_MAX_EXP 8.0                  /* ALiBi slopes 2^(-8 i / n) */

/* A weight matrix in place in the file: [rows, cols] row-major, f32 or f16 elements. */
typedef struct tfm__tensor {
    const void *data; /* NULL: the tensor is absent */
    tfm_dtype dtype;
    int rows;
    int cols;
} tfm__tensor;

/* Scalar dot products (the twins of the >>simd kernels; always compiled). */
TFM_PRIVATE float tfm__dot_f32_scalar(const float *a, const float *b, int n) {
    float sum = 0.0f;
    int i;
    for (i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}

TFM_PRIVATE float tfm__dot_f16_scalar(const uint16_t *w, const float *x, int n) {
    float sum = 0.0f;
    int i;
    for (i = 0; i < n; i++) sum += tfm__f16_to_f32(w[i]) * x[i];
    return sum;
}

/* y[0..n) += a * x[0..n) */
TFM_PRIVATE void tfm__axpy_scalar(float *y, float a, const float *x, int n) {
    int i;
    for (i = 0; i < n; i++) y[i] += a * x[i];
}

/* Row r of a matrix as floats: out[cols]. Used for embedding lookups. */
TFM_PRIVATE void tfm__tensor_row(const tfm__tensor *t, int r, float *out) {
    size_t at = (size_t)r * (size_t)t->cols;
    int i;
    if (t->dtype == TFM_DTYPE_F32) {
        memcpy(out, TFM__CAST(const float *, t->data) + at, (size_t)t->cols * sizeof(float));
        return;
    }
    for (i = 0; i < t->cols; i++) out[i] = tfm__f16_to_f32(TFM__CAST(const uint16_t *, t->data)[at + (size_t)i]);
}

/* LayerNorm (Ba et al. 2016), x, out [n] (out may be x), w, b [n], b may be NULL:
   out = (x - mean(x)) / sqrt(var(x) + eps) * w + b.
   Why: every token's vector is recentred and rescaled before each sublayer, so the residual
   stream can grow through many layers without the attention/FFN inputs drifting in scale;
   w and b give back a learned scale and offset per dimension. Two passes for a stable variance. */
TFM_PRIVATE void tfm__layernorm(float *out, const float *x, const float *w, const float *b, int n, float eps) {
    float mean = 0.0f, var = 0.0f, inv;
    int i;
    for (i = 0; i < n; i++) mean += x[i];
    mean /= (float)n;
    for (i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= (float)n;
    inv = 1.0f / sqrtf(var + eps);
    for (i = 0; i < n; i++) out[i] = (x[i] - mean) * inv * w[i] + (b ? b[i] : 0.0f);
}

/* RMSNorm (Zhang & Sennrich 2019), x, out [n], w [n]: out = x / sqrt(mean(x^2) + eps) * w.
   Why: LayerNorm without the mean: only the scale is fixed, which works as well and is cheaper
   (Llama and most recent models). */
TFM_PRIVATE void tfm__rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    float ss = 0.0f, inv;
    int i;
    for (i = 0; i < n; i++) ss += x[i] * x[i];
    inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (i = 0; i < n; i++) out[i] = x[i] * inv * w[i];
}

/* GELU, exact form: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (GPT-NeoX/Pythia "gelu").
   Why any activation: without a nonlinearity between its two matrices the FFN would collapse
   into one linear map. GELU gates each value by how likely it is to be positive under N(0,1). */
TFM_PRIVATE float tfm__gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * TFM__INV_SQRT_2)); }

/* GELU, tanh approximation (GPT-2 "gelu_new", "gelu_pytorch_tanh"): models trained with it need
   it exactly; the two forms differ by up to ~1e-3. */
TFM_PRIVATE float tfm__gelu_tanh(float x) {
    return 0.5f * x * (1.0f + tanhf(TFM__SQRT_2_OVER_PI * (x + TFM__GELU_CUBIC * x * x * x)));
}

/* SiLU (swish): x * sigmoid(x), the gate activation of SwiGLU FFNs (Llama). */
TFM_PRIVATE float tfm__silu(float x) { return x / (1.0f + expf(-x)); }

TFM_PRIVATE float tfm__act(tfm_act act, float x) {
    return act == TFM_ACT_SILU ? tfm__silu(x) : act == TFM_ACT_GELU_TANH ? tfm__gelu_tanh(x) : tfm__gelu_erf(x);
}

/* Softmax in place over x[n], max-subtracted so exp never overflows: x_i = e^(x_i - m) / sum.
   Why: turns attention scores (or logits) into weights that are positive and sum to one. */
TFM_PRIVATE void tfm__softmax_inplace(float *x, int n) {
    float m = x[0], sum = 0.0f, inv;
    int i;
    for (i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
    for (i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        sum += x[i];
    }
    inv = 1.0f / sum;
    for (i = 0; i < n; i++) x[i] *= inv;
}

/* RoPE tables for positions [0, n_ctx): cos_t, sin_t [n_ctx, rope_dim/2] with angle
   pos * theta_j, theta_j = base^(-2j / rope_dim). Built once at session create (in double:
   pos * theta_j loses float precision at large pos). */
TFM_PRIVATE void tfm__rope_tables(float *cos_t, float *sin_t, int n_ctx, int rope_dim, float base) {
    int half = rope_dim / 2, pos, j;
    for (pos = 0; pos < n_ctx; pos++) {
        for (j = 0; j < half; j++) {
            double angle = (double)pos * pow((double)base, -2.0 * (double)j / (double)rope_dim);
            cos_t[(size_t)pos * (size_t)half + (size_t)j] = (float)cos(angle);
            sin_t[(size_t)pos * (size_t)half + (size_t)j] = (float)sin(angle);
        }
    }
}

/* Rotary position embedding (Su et al. 2021) of one head vector v[d_head] in place, given this
   position's table rows cos_t, sin_t [rope_dim/2]. Each pair (a, b) of dims turns by angle
   pos * theta_j: (a, b) -> (a cos - b sin, a sin + b cos).
   Why: rotating q and k by angles proportional to their positions makes q . k depend only on
   the distance between them, so attention sees relative order without position vectors.
   Only the first rope_dim dims turn (partial rotary); the rest pass through. Pairing: half-split
   (j, j + rope_dim/2) for NeoX / Hugging Face weights, interleaved (2j, 2j + 1) for GPT-J / Meta. */
TFM_PRIVATE void tfm__rope(float *v, int rope_dim, const float *cos_t, const float *sin_t, bool interleaved) {
    int half = rope_dim / 2, j;
    for (j = 0; j < half; j++) {
        int ia = interleaved ? 2 * j : j, ib = interleaved ? 2 * j + 1 : j + half;
        float a = v[ia], b = v[ib];
        v[ia] = a * cos_t[j] - b * sin_t[j];
        v[ib] = a * sin_t[j] + b * cos_t[j];
    }
}

/* ALiBi slopes (Press et al. 2021), slopes[n_heads]: head h adds slope_h * (j - pos) to the score
   of key j. For a power of two n: slope_h = 2^(-8 (h+1) / n). Otherwise the first p (largest
   power of two < n) heads use that with n = p and the other n - p heads take the odd steps of
   the 2p sequence, 2^(-8 (2i+1) / (2p)), as in the paper and HF build_alibi_tensor.
   Why: a fixed per-head penalty on distance replaces position embeddings; heads with small
   slopes look far back, heads with large slopes stay local. */
TFM_PRIVATE void tfm__alibi_slopes(float *slopes, int n_heads) {
    int p = 1, h;
    while (p * 2 <= n_heads) p *= 2;
    for (h = 0; h < p; h++) slopes[h] = (float)pow(2.0, -TFM__ALIBI_MAX_EXP * (double)(h + 1) / (double)p);
    for (h = 0; h < n_heads - p; h++)
        slopes[p + h] = (float)pow(2.0, -TFM__ALIBI_MAX_EXP * (double)(2 * h + 1) / (double)(2 * p));
}

/* Sinusoidal positions (Vaswani et al. 2017), table [n_ctx, d]: PE[pos, 2i] = sin(pos / 10000^(2i/d)),
   PE[pos, 2i+1] = cos(same angle). Why: fixed waves of geometric wavelengths give every
   position a unique code from which relative offsets are linear maps; added to the embedding. */
TFM_PRIVATE void tfm__sinusoid_table(float *pe, int n_ctx, int d) {
    int pos, i;
    for (pos = 0; pos < n_ctx; pos++) {
        float *row = pe + (size_t)pos * (size_t)d;
        for (i = 0; 2 * i < d; i++) {
            double angle = (double)pos / pow(TFM__SINUSOID_BASE, (double)(2 * i) / (double)d);
            row[2 * i] = (float)sin(angle);
            if (2 * i + 1 < d) row[2 * i + 1] = (float)cos(angle);
        }
    }
}

/* >>simd -----------------------------------------------------------------------------------------
   Vector twins of the hot kernels, chosen at compile time (no runtime CPUID): the dot products
   that make up matvec (decode time is almost all matvec) and the axpy of the attention value
   sum. Each has a scalar twin in >>kernels with the same signature; the rest of the file calls
   tfm__dot_f32 / tfm__dot_f16 / tfm__axpy and never sees an intrinsic. */

#ifdef TFM__AVX2
/* Sum of the 8 lanes. */
TFM_PRIVATE float tfm__hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Four independent accumulators hide the FMA latency; unaligned loads throughout. */
TFM_PRIVATE float tfm__dot_f32_avx2(const float *a, const float *b, int n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    float sum;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    sum = tfm__hsum_avx2(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}

#ifdef __F16C__
#define TFM__F16C 1
/* 8 halves -> 8 floats per load with F16C. */
TFM_PRIVATE __m256 tfm__load_f16x8(const uint16_t *w) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)w));
}

TFM_PRIVATE float tfm__dot_f16_avx2(const uint16_t *w, const float *x, int n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    float sum;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(tfm__load_f16x8(w + i), _mm256_loadu_ps(x + i), s0);
        s1 = _mm256_fmadd_ps(tfm__load_f16x8(w + i + 8), _mm256_loadu_ps(x + i + 8), s1);
        s2 = _mm256_fmadd_ps(tfm__load_f16x8(w + i + 16), _mm256_loadu_ps(x + i + 16), s2);
        s3 = _mm256_fmadd_ps(tfm__load_f16x8(w + i + 24), _mm256_loadu_ps(x + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(tfm__load_f16x8(w + i), _mm256_loadu_ps(x + i), s0);
    sum = tfm__hsum_avx2(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++) sum += tfm__f16_to_f32(w[i]) * x[i];
    return sum;
}
#endif

TFM_PRIVATE void tfm__axpy_avx2(float *y, float a, const float *x, int n) {
    __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}
#endif /* TFM__AVX2 */

#ifdef TFM__NEON
TFM_PRIVATE float tfm__dot_f32_neon(const float *a, const float *b, int n) {
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = vdupq_n_f32(0.0f);
    float sum;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 = vmlaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vmlaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    }
    s0 = vaddq_f32(s0, s1);
    sum = vgetq_lane_f32(s0, 0) + vgetq_lane_f32(s0, 1) + vgetq_lane_f32(s0, 2) + vgetq_lane_f32(s0, 3);
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}
#endif

/* The dispatchers: one name each, the compiled path underneath. */
TFM_PRIVATE float tfm__dot_f32(const float *a, const float *b, int n) {
#if defined(TFM__AVX2)
    return tfm__dot_f32_avx2(a, b, n);
#elif defined(TFM__NEON)
    return tfm__dot_f32_neon(a, b, n);
#else
    return tfm__dot_f32_scalar(a, b, n);
#endif
}

TFM_PRIVATE float tfm__dot_f16(const uint16_t *w, const float *x, int n) {
#if defined(TFM__F16C)
    return tfm__dot_f16_avx2(w, x, n);
#else
    return tfm__dot_f16_scalar(w, x, n);
#endif
}

TFM_PRIVATE void tfm__axpy(float *y, float a, const float *x, int n) {
#if defined(TFM__AVX2)
    tfm__axpy_avx2(y, a, x, n);
#else
    tfm__axpy_scalar(y, a, x, n);
#endif
}

/* Matrix-vector product over rows [r0, r1): y[r] = W[r, :] . x (+ b[r]); W [rows, cols],
   x [cols], y and b [rows], b may be NULL. One interface for every dtype. Each row is one dot
   product computed by exactly one caller, so splitting rows across threads never changes a bit. */
TFM_PRIVATE void tfm__matvec_rows(const tfm__tensor *w, const float *x, const float *b, float *y, int r0, int r1) {
    size_t cols = (size_t)w->cols;
    int r;
    if (w->dtype == TFM_DTYPE_F16) {
        const uint16_t *m = TFM__CAST(const uint16_t *, w->data);
        for (r = r0; r < r1; r++) y[r] = tfm__dot_f16(m + (size_t)r * cols, x, w->cols) + (b ? b[r] : 0.0f);
    } else {
        const float *m = TFM__CAST(const float *, w->data);
        for (r = r0; r < r1; r++) y[r] = tfm__dot_f32(m + (size_t)r * cols, x, w->cols) + (b ? b[r] : 0.0f);
    }
}

/* >>model ----------------------------------------------------------------------------------------
   The opened model: the file bytes, the resolved config, and tensor views in place in the file,
   resolved by name with shapes checked against the config. Immutable after tfm_model_open.

   The tokenizer section (below) provides, for the model and the public entry points:
     typedef struct tfm__tokenizer tfm__tokenizer;   (declared here, defined in >>tokenizer)
     tfm__tokenizer_create(blob, blob_bytes, allocator, logger, &tok)  validate + build tables
     tfm__tokenizer_destroy(tok, allocator)
     tfm__tokenizer_encode(tok, text, text_bytes, ids, ids_cap, &n_ids)  allocates nothing
     tfm__tokenizer_piece(tok, id, &bytes, &n_bytes)
     tfm__tokenizer_decode(tok, stream, id, out, out_cap, &n_out)
     tfm__tokenizer_info(tok, &n_tokens, &bos_id, &eos_id) */
typedef struct tfm__tokenizer tfm__tokenizer;

/* One transformer block. Convention: a matrix is [rows, cols] = [d_out, d_in], y = W x.
   q_dim = n_heads * d_head, kv_dim = n_kv_heads * d_head. Optional vectors are NULL when absent. */
typedef struct tfm__layer {
    const float *ln1_w, *ln1_b; /* [d_model]; ln1_b LayerNorm only, optional */
    tfm__tensor wq;             /* [q_dim, d_model] */
    tfm__tensor wk, wv;         /* [kv_dim, d_model] */
    tfm__tensor wo;             /* [d_model, q_dim] */
    const float *bq;            /* [q_dim] optional */
    const float *bk, *bv;       /* [kv_dim] optional */
    const float *bo;            /* [d_model] optional */
    const float *ln2_w, *ln2_b; /* [d_model]; NULL for RESIDUAL_PARALLEL_SHARED */
    tfm__tensor w_up;           /* [d_ff, d_model] */
    tfm__tensor w_gate;         /* [d_ff, d_model]; FFN_GATED only */
    tfm__tensor w_down;         /* [d_model, d_ff] */
    const float *b_up, *b_gate; /* [d_ff] optional */
    const float *b_down;        /* [d_model] optional */
} tfm__layer;

struct tfm_model {
    tfm_allocator allocator;
    tfm_logger logger;     /* copied from the desc; sessions on this model log here too */
    tfm__file file;
    size_t block_bytes;    /* this struct + layers, one allocation */
    tfm_config config;
    tfm__layer *layers;    /* [n_layers] */
    tfm__tensor tok_embd;  /* [n_vocab, d_model] */
    tfm__tensor pos_embd;  /* [n_ctx, d_model]; POS_LEARNED only */
    const float *lnf_w;    /* [d_model] */
    const float *lnf_b;    /* [d_model]; LayerNorm only, optional */
    tfm__tensor w_out;     /* [n_vocab, d_model]; a copy of tok_embd when tied */
    const float *b_out;    /* [n_vocab] optional */
    tfm__tokenizer *tokenizer; /* NULL when the file has none */
};

/* The model's tokenizer, or NULL when the file carries none. */
TFM_PRIVATE const tfm__tokenizer *tfm__model_tokenizer(const tfm_model *m) { return m ? m->tokenizer : NULL; }

/* Looks up tensors by slot (see tfm__name_slot); each slot is consumed once. */
typedef struct tfm__resolver {
    const unsigned char *file;
    size_t file_bytes;
    uint64_t dir_end;
    int32_t *slots; /* entry index per slot, -1 when absent or already taken */
    const tfm_logger *lg;
} tfm__resolver;

TFM_PRIVATE void tfm__slot_name(int slot, char *buf, size_t buf_bytes) {
    if (slot < TFM__N_GLOBAL) snprintf(buf, buf_bytes, "%s", tfm__global_names[slot]);
    else snprintf(buf, buf_bytes, "blk.%d.%s", (slot - TFM__N_GLOBAL) / TFM__N_PER_LAYER,
                  tfm__layer_names[(slot - TFM__N_GLOBAL) % TFM__N_PER_LAYER]);
}

/* Take the tensor in slot: a matrix [rows, cols] (cols 0: a vector [rows], which must be f32).
   Absent: CORRUPT when required, else out->data = NULL. */
TFM_PRIVATE tfm_result tfm__take(tfm__resolver *r, int slot, int rows, int cols, bool required, tfm__tensor *out) {
    char name[TFM__NAME_BYTES + 16], got[96], want[96];
    uint64_t shape[2];
    uint32_t rank = cols ? 2u : 1u;
    tfm__entry e;
    tfm_result res;
    int32_t idx = r->slots[slot];
    memset(out, 0, sizeof *out);
    tfm__slot_name(slot, name, sizeof name);
    if (idx < 0) return required ? tfm__log(r->lg, TFM_ERR_CORRUPT, "tensor %s: missing", name) : TFM_OK;
    r->slots[slot] = -1;
    if ((res = tfm__read_entry(r->file, r->file_bytes, r->dir_end, (uint32_t)idx, r->lg, &e)) != TFM_OK) return res;
    shape[0] = (uint64_t)rows;
    shape[1] = (uint64_t)cols;
    if (e.rank != rank || e.shape[0] != shape[0] || (cols && e.shape[1] != shape[1])) {
        tfm__shape_text(got, sizeof got, e.shape, e.rank);
        tfm__shape_text(want, sizeof want, shape, rank);
        return tfm__log(r->lg, TFM_ERR_CORRUPT, "tensor %s: shape %s, expected %s", name, got, want);
    }
    if (!cols && e.dtype != TFM_DTYPE_F32)
        return tfm__log(r->lg, TFM_ERR_CORRUPT, "tensor %s: a vector must be f32", name);
    out->data = r->file + (size_t)e.data_offset;
    out->dtype = (tfm_dtype)e.dtype;
    out->rows = rows;
    out->cols = cols ? cols : 1;
    return TFM_OK;
}

/* A vector [n] as a float pointer (NULL when absent and optional). */
TFM_PRIVATE tfm_result tfm__take_vec(tfm__resolver *r, int slot, int n, bool required, const float **out) {
    tfm__tensor t;
    tfm_result res = tfm__take(r, slot, n, 0, required, &t);
    *out = TFM__CAST(const float *, t.data);
    return res;
}

TFM_PRIVATE tfm_result tfm__resolve_layer(tfm__resolver *r, const tfm_config *c, int l, tfm__layer *L) {
    int s = TFM__N_GLOBAL + l * TFM__N_PER_LAYER, q_dim = c->n_heads * c->d_head;
    int kv_dim = c->n_kv_heads * c->d_head, d = c->d_model;
    bool ln = c->norm == TFM_NORM_LAYERNORM, ln2 = c->residual != TFM_RESIDUAL_PARALLEL_SHARED;
    bool gated = c->ffn == TFM_FFN_GATED;
    tfm_result res = TFM_OK;
    if (!res) res = tfm__take_vec(r, s + TFM__L_LN1_W, d, true, &L->ln1_w);
    if (!res && ln) res = tfm__take_vec(r, s + TFM__L_LN1_B, d, false, &L->ln1_b);
    if (!res) res = tfm__take(r, s + TFM__L_WQ, q_dim, d, true, &L->wq);
    if (!res) res = tfm__take(r, s + TFM__L_WK, kv_dim, d, true, &L->wk);
    if (!res) res = tfm__take(r, s + TFM__L_WV, kv_dim, d, true, &L->wv);
    if (!res) res = tfm__take(r, s + TFM__L_WO, d, q_dim, true, &L->wo);
    if (!res) res = tfm__take_vec(r, s + TFM__L_BQ, q_dim, false, &L->bq);
    if (!res) res = tfm__take_vec(r, s + TFM__L_BK, kv_dim, false, &L->bk);
    if (!res) res = tfm__take_vec(r, s + TFM__L_BV, kv_dim, false, &L->bv);
    if (!res) res = tfm__take_vec(r, s + TFM__L_BO, d, false, &L->bo);
    if (!res && ln2) res = tfm__take_vec(r, s + TFM__L_LN2_W, d, true, &L->ln2_w);
    if (!res && ln2 && ln) res = tfm__take_vec(r, s + TFM__L_LN2_B, d, false, &L->ln2_b);
    if (!res) res = tfm__take(r, s + TFM__L_W_UP, c->d_ff, d, true, &L->w_up);
    if (!res) res = tfm__take_vec(r, s + TFM__L_B_UP, c->d_ff, false, &L->b_up);
    if (!res && gated) res = tfm__take(r, s + TFM__L_W_GATE, c->d_ff, d, true, &L->w_gate);
    if (!res && gated) res = tfm__take_vec(r, s + TFM__L_B_GATE, c->d_ff, false, &L->b_gate);
    if (!res) res = tfm__take(r, s + TFM__L_W_DOWN, d, c->d_ff, true, &L->w_down);
    if (!res) res = tfm__take_vec(r, s + TFM__L_B_DOWN, d, false, &L->b_down);
    return res;
}

/* Resolve every tensor the config needs; a tensor the config does not use is CORRUPT too (it
   would mean the converter and the config disagree). */
TFM_PRIVATE tfm_result tfm__resolve(tfm__resolver *r, tfm_model *m, int n_slots) {
    const tfm_config *c = &m->config;
    bool ln = c->norm == TFM_NORM_LAYERNORM;
    tfm_result res = TFM_OK;
    char name[TFM__NAME_BYTES + 16];
    int l, s;
    if (!res) res = tfm__take(r, TFM__T_TOK_EMBD, c->n_vocab, c->d_model, true, &m->tok_embd);
    if (!res && c->pos == TFM_POS_LEARNED) res = tfm__take(r, TFM__T_POS_EMBD, c->n_ctx, c->d_model, true, &m->pos_embd);
    if (!res) res = tfm__take_vec(r, TFM__T_LNF_W, c->d_model, true, &m->lnf_w);
    if (!res && ln) res = tfm__take_vec(r, TFM__T_LNF_B, c->d_model, false, &m->lnf_b);
    if (!res) res = tfm__take(r, TFM__T_OUTPUT_W, c->n_vocab, c->d_model, false, &m->w_out);
    if (!res) res = tfm__take_vec(r, TFM__T_OUTPUT_B, c->n_vocab, false, &m->b_out);
    for (l = 0; l < c->n_layers && !res; l++) res = tfm__resolve_layer(r, c, l, &m->layers[l]);
    if (res) return res;
    for (s = 0; s < n_slots; s++) {
        if (r->slots[s] < 0) continue;
        tfm__slot_name(s, name, sizeof name);
        return tfm__log(r->lg, TFM_ERR_CORRUPT, "tensor %s: not used by this config", name);
    }
    m->config.tied_output = m->w_out.data == NULL;
    if (m->config.tied_output) m->w_out = m->tok_embd;
    return TFM_OK;
}

/* The config as the public struct, from a validated header. */
TFM_PRIVATE void tfm__config_from_header(const tfm__header *h, tfm_config *c) {
    memset(c, 0, sizeof *c);
    c->arch = h->arch <= TFM_ARCH_STARCODER2 ? (tfm_arch)h->arch : TFM_ARCH_UNKNOWN;
    c->n_vocab = (int)h->n_vocab;     c->n_ctx = (int)h->n_ctx;
    c->n_layers = (int)h->n_layers;   c->n_heads = (int)h->n_heads;
    c->n_kv_heads = (int)h->n_kv_heads; c->d_model = (int)h->d_model;
    c->d_head = (int)h->d_head;       c->d_ff = (int)h->d_ff;
    c->rope_dim = (int)h->rope_dim;   c->rope_theta = h->rope_theta;
    c->norm_eps = h->norm_eps;        c->norm = (tfm_norm)h->norm;
    c->act = (tfm_act)h->act;         c->ffn = (tfm_ffn)h->ffn;
    c->residual = (tfm_residual)h->residual; c->pos = (tfm_pos)h->pos;
    c->dtype = TFM_DTYPE_F32;
    c->n_tokens = 0;
    c->bos_id = -1;
    c->eos_id = -1;
}

/* config.dtype: the dtype of the largest matrix. */
TFM_PRIVATE tfm_dtype tfm__largest_dtype(const tfm_model *m) {
    const tfm__tensor *best = &m->tok_embd;
    int l;
    for (l = 0; l < m->config.n_layers; l++) {
        const tfm__tensor *t = &m->layers[l].w_up;
        if ((size_t)t->rows * (size_t)t->cols > (size_t)best->rows * (size_t)best->cols) best = t;
    }
    return best->data ? best->dtype : TFM_DTYPE_F32;
}

/* >>session --------------------------------------------------------------------------------------
   A session is one sequence being decoded: the KV cache (every layer's keys and values for every
   position so far, so each new token costs one pass instead of re-running the prefix), the
   scratch vectors of one step, and the precomputed position tables. It is carved out of one
   allocation at create time; eval allocates nothing. */

#define TFM__TASKS_PER_THREAD 4  /* tasks per thread with a host parallel_for: load balancing */
#define TFM__MIN_ROWS_PER_TASK 16 /* below this a matvec runs on the calling thread */

struct tfm_session {
    const tfm_model *model;
    tfm_allocator allocator;
    size_t block_bytes;
    int n_ctx;      /* positions the cache holds */
    int n_past;     /* positions evaluated so far (valid cache rows) */
    int n_threads;  /* OpenMP threads (1: the calling thread) */
    int n_tasks;    /* how many pieces parallel work is split into */
    tfm_parallel_for_fn parallel_for;
    void *parallel_user;
    bool (*should_abort)(void *user);
    void *abort_user;
    float *k_cache, *v_cache; /* [n_layers, n_ctx, kv_dim] */
    float *x;                 /* [d_model] the residual stream of the current token */
    float *xn, *xn2;          /* [d_model] normalized inputs of the sublayers */
    float *q;                 /* [q_dim] queries */
    float *att;               /* [q_dim] attention output, heads side by side */
    float *attn_out, *ffn_out; /* [d_model] sublayer outputs */
    float *up, *gate;         /* [d_ff] FFN hidden */
    float *scores;            /* [n_heads, n_ctx] attention weights, one row per head */
    float *logits;            /* [n_vocab] of the last evaluated token */
    float *rope_cos, *rope_sin; /* [n_ctx, rope_dim/2] (RoPE only) */
    float *alibi;             /* [n_heads] slopes (ALiBi only) */
    float *pos_table;         /* [n_ctx, d_model] (sinusoidal only) */
    char last_error[TFM__ERROR_BYTES];
};

/* Byte offsets of sub-arrays in one block; overflow is sticky. */
typedef struct tfm__plan {
    size_t bytes;
    bool overflow;
} tfm__plan;

/* Reserve a * b * c floats (64-byte aligned); a pointer into base, or NULL while sizing. */
TFM_PRIVATE float *tfm__carve(tfm__plan *p, unsigned char *base, size_t a, size_t b, size_t c) {
    size_t n, at;
    if (p->overflow || !tfm__mul_size(a, b, &n) || !tfm__mul_size(n, c, &n) ||
        !tfm__mul_size(n, sizeof(float), &n) || !tfm__align_size(p->bytes, TFM__ALIGN, &at) ||
        !tfm__add_size(at, n, &p->bytes)) {
        p->overflow = true;
        return NULL;
    }
    return base ? TFM__CAST(float *, TFM__CAST(void *, base + at)) : NULL;
}

/* Lay out every array of s after the struct itself; base NULL only sizes. */
TFM_PRIVATE void tfm__session_layout(tfm_session *s, const tfm_config *c, unsigned char *base, tfm__plan *p) {
    size_t d = (size_t)c->d_model, q_dim = (size_t)c->n_heads * (size_t)c->d_head, ctx = (size_t)s->n_ctx;
    size_t kv_dim = (size_t)c->n_kv_heads * (size_t)c->d_head, half = (size_t)c->rope_dim / 2;
    bool rope = c->pos == TFM_POS_ROPE_HALF || c->pos == TFM_POS_ROPE_INTERLEAVED;
    p->bytes = sizeof(tfm_session);
    p->overflow = false;
    s->k_cache = tfm__carve(p, base, (size_t)c->n_layers, ctx, kv_dim);
    s->v_cache = tfm__carve(p, base, (size_t)c->n_layers, ctx, kv_dim);
    s->x = tfm__carve(p, base, d, 1, 1);
    s->xn = tfm__carve(p, base, d, 1, 1);
    s->xn2 = tfm__carve(p, base, d, 1, 1);
    s->q = tfm__carve(p, base, q_dim, 1, 1);
    s->att = tfm__carve(p, base, q_dim, 1, 1);
    s->attn_out = tfm__carve(p, base, d, 1, 1);
    s->ffn_out = tfm__carve(p, base, d, 1, 1);
    s->up = tfm__carve(p, base, (size_t)c->d_ff, 1, 1);
    s->gate = tfm__carve(p, base, (size_t)c->d_ff, 1, 1);
    s->scores = tfm__carve(p, base, (size_t)c->n_heads, ctx, 1);
    s->logits = tfm__carve(p, base, (size_t)c->n_vocab, 1, 1);
    s->rope_cos = rope ? tfm__carve(p, base, ctx, half, 1) : NULL;
    s->rope_sin = rope ? tfm__carve(p, base, ctx, half, 1) : NULL;
    s->alibi = c->pos == TFM_POS_ALIBI ? tfm__carve(p, base, (size_t)c->n_heads, 1, 1) : NULL;
    s->pos_table = c->pos == TFM_POS_SINUSOIDAL ? tfm__carve(p, base, ctx, d, 1) : NULL;
}

/* Resolved session options (zeros replaced by defaults), validated against the model. */
TFM_PRIVATE tfm_result tfm__session_desc_defaults(const tfm_model *m, const tfm_session_desc *desc,
                                                  tfm_session_desc *out) {
    const tfm_logger *lg = &m->logger;
    if (desc) *out = *desc;
    else memset(out, 0, sizeof *out);
    if (!tfm__allocator_valid(&out->allocator))
        return tfm__log(lg, TFM_ERR_INVALID_ARG, "session desc: set both allocator callbacks or neither");
    if (out->n_ctx < 0 || out->n_ctx > TFM_MAX_CTX || out->n_threads < 0)
        return tfm__log(lg, TFM_ERR_INVALID_ARG, "session desc: n_ctx %d / n_threads %d out of range",
                        out->n_ctx, out->n_threads);
    if (out->n_ctx == 0) out->n_ctx = m->config.n_ctx;
    if (out->n_threads == 0) out->n_threads = 1;
    if (m->config.pos == TFM_POS_LEARNED && out->n_ctx > m->config.n_ctx)
        return tfm__log(lg, TFM_ERR_INVALID_ARG, "session desc: n_ctx %d > %d learned positions",
                        out->n_ctx, m->config.n_ctx);
    return TFM_OK;
}

/* Record a failure in the session's last_error and send it to the model's logger. */
TFM_PRIVATE tfm_result tfm__session_fail(tfm_session *s, tfm_result result, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tfm__format(s->last_error, sizeof s->last_error, fmt, ap);
    va_end(ap);
    if (s->model->logger.log) s->model->logger.log(s->model->logger.user, result, s->last_error);
    return result;
}

/* >>forward --------------------------------------------------------------------------------------
   One transformer step for one token at one position, reading the architecture from the config:
     x = embed(token) (+ position vector)
     for each layer: x = block(x)         (the residual layout decides how attn and FFN combine)
     logits = W_out norm(x) (+ b_out)
   Parallel work (matvec rows, attention heads) goes through tfm__run_tasks. */

/* Run task(ctx, i) for i in [0, n_tasks): on the host's parallel_for, on OpenMP threads, or in
   a loop. Tasks write disjoint outputs, so the order and the thread never change a result. */
TFM_PRIVATE void tfm__run_tasks(const tfm_session *s, int n_tasks, tfm_task_fn task, void *ctx) {
    int t;
    if (s->parallel_for && n_tasks > 1) {
        s->parallel_for(s->parallel_user, n_tasks, task, ctx);
        return;
    }
#ifdef TFM__OPENMP
    if (s->n_threads > 1 && n_tasks > 1) {
#pragma omp parallel for num_threads(s->n_threads) schedule(static)
        for (t = 0; t < n_tasks; t++) task(ctx, t);
        return;
    }
#endif
    for (t = 0; t < n_tasks; t++) task(ctx, t);
}

typedef struct tfm__matvec_job {
    const tfm__tensor *w;
    const float *x, *b;
    float *y;
    int rows_per_task;
} tfm__matvec_job;

TFM_PRIVATE void tfm__matvec_task(void *ctx, int t) {
    const tfm__matvec_job *job = TFM__CAST(const tfm__matvec_job *, ctx);
    int r0 = t * job->rows_per_task, r1 = r0 + job->rows_per_task;
    tfm__matvec_rows(job->w, job->x, job->b, job->y, r0, r1 < job->w->rows ? r1 : job->w->rows);
}

/* y = W x (+ b), rows split across the session's tasks. */
TFM_PRIVATE void tfm__matvec(const tfm_session *s, const tfm__tensor *w, const float *x, const float *b, float *y) {
    tfm__matvec_job job;
    int n_tasks = s->n_tasks;
    if (n_tasks <= 1 || w->rows < 2 * TFM__MIN_ROWS_PER_TASK) {
        tfm__matvec_rows(w, x, b, y, 0, w->rows);
        return;
    }
    job.w = w;
    job.x = x;
    job.b = b;
    job.y = y;
    job.rows_per_task = (w->rows + n_tasks - 1) / n_tasks;
    if (job.rows_per_task < TFM__MIN_ROWS_PER_TASK) job.rows_per_task = TFM__MIN_ROWS_PER_TASK;
    n_tasks = (w->rows + job.rows_per_task - 1) / job.rows_per_task;
    tfm__run_tasks(s, n_tasks, tfm__matvec_task, &job);
}

/* Causal attention of one head for the query at position n_pos - 1 over positions [0, n_pos):
   q [d_head]; k, v: this head's column in the cache, rows kv_dim apart ([n_pos, kv_dim]);
   scores [n_pos] scratch; out [d_head].
     s_j = q . k_j / sqrt(d_head) + slope (j - (n_pos - 1)),  w = softmax(s),  out = sum_j w_j v_j
   Why: the query asks "which earlier tokens matter to me", each key answers by similarity, and
   the token receives the weighted mix of their values. Only earlier positions exist in the
   cache, so the model is causal by construction. slope is 0 except with ALiBi. */
TFM_PRIVATE void tfm__attention_head(const float *q, const float *k, const float *v, size_t kv_dim, int d_head,
                                     int n_pos, float slope, float *scores, float *out) {
    float scale = 1.0f / sqrtf((float)d_head);
    int j;
    for (j = 0; j < n_pos; j++)
        scores[j] = tfm__dot_f32(q, k + (size_t)j * kv_dim, d_head) * scale + slope * (float)(j - (n_pos - 1));
    tfm__softmax_inplace(scores, n_pos);
    memset(out, 0, (size_t)d_head * sizeof(float));
    for (j = 0; j < n_pos; j++) tfm__axpy(out, scores[j], v + (size_t)j * kv_dim, d_head);
}

typedef struct tfm__attn_job {
    const tfm_session *s;
    int layer, pos;
} tfm__attn_job;

/* Task h: query head h reads kv head h / (n_heads / n_kv_heads) (grouped-query attention: a
   group of query heads shares one key/value head, shrinking the cache). */
TFM_PRIVATE void tfm__attn_task(void *ctx, int h) {
    const tfm__attn_job *job = TFM__CAST(const tfm__attn_job *, ctx);
    const tfm_session *s = job->s;
    const tfm_config *c = &s->model->config;
    size_t kv_dim = (size_t)c->n_kv_heads * (size_t)c->d_head;
    size_t layer_at = (size_t)job->layer * (size_t)s->n_ctx * kv_dim;
    size_t kv_col = (size_t)(h / (c->n_heads / c->n_kv_heads)) * (size_t)c->d_head;
    size_t q_at = (size_t)h * (size_t)c->d_head;
    tfm__attention_head(s->q + q_at, s->k_cache + layer_at + kv_col, s->v_cache + layer_at + kv_col, kv_dim,
                        c->d_head, job->pos + 1, s->alibi ? s->alibi[h] : 0.0f,
                        s->scores + (size_t)h * (size_t)s->n_ctx, s->att + q_at);
}

/* Self-attention sublayer for the token at pos, in [d_model] -> out [d_model]:
   q = Wq in + bq, k = Wk in + bk, v = Wv in + bv (k, v written straight into cache row pos),
   RoPE on every head of q and k, each head attends over positions 0..pos, out = Wo att + bo. */
TFM_PRIVATE void tfm__attn_block(tfm_session *s, int l, const float *in, float *out, int pos) {
    const tfm_config *c = &s->model->config;
    const tfm__layer *L = &s->model->layers[l];
    size_t kv_dim = (size_t)c->n_kv_heads * (size_t)c->d_head, half = (size_t)c->rope_dim / 2;
    size_t row_at = ((size_t)l * (size_t)s->n_ctx + (size_t)pos) * kv_dim;
    float *k_row = s->k_cache + row_at, *v_row = s->v_cache + row_at;
    tfm__attn_job job;
    int h;
    tfm__matvec(s, &L->wq, in, L->bq, s->q);
    tfm__matvec(s, &L->wk, in, L->bk, k_row);
    tfm__matvec(s, &L->wv, in, L->bv, v_row);
    if (s->rope_cos) {
        const float *cos_t = s->rope_cos + (size_t)pos * half, *sin_t = s->rope_sin + (size_t)pos * half;
        bool inter = c->pos == TFM_POS_ROPE_INTERLEAVED;
        for (h = 0; h < c->n_heads; h++) tfm__rope(s->q + (size_t)h * (size_t)c->d_head, c->rope_dim, cos_t, sin_t, inter);
        for (h = 0; h < c->n_kv_heads; h++) tfm__rope(k_row + (size_t)h * (size_t)c->d_head, c->rope_dim, cos_t, sin_t, inter);
    }
    job.s = s;
    job.layer = l;
    job.pos = pos;
    tfm__run_tasks(s, c->n_heads, tfm__attn_task, &job);
    tfm__matvec(s, &L->wo, s->att, L->bo, out);
}

/* Feed-forward sublayer, in [d_model] -> out [d_model]:
     plain:  out = W_down act(W_up in + b_up) + b_down
     gated:  out = W_down (act(W_gate in + b_gate) * (W_up in + b_up)) + b_down  (SwiGLU, GeGLU)
   Why: attention only mixes information between positions; the FFN is where each position is
   transformed on its own, through a wider hidden layer (d_ff) and a nonlinearity. */
TFM_PRIVATE void tfm__ffn_block(tfm_session *s, int l, const float *in, float *out) {
    const tfm_config *c = &s->model->config;
    const tfm__layer *L = &s->model->layers[l];
    int i;
    tfm__matvec(s, &L->w_up, in, L->b_up, s->up);
    if (c->ffn == TFM_FFN_GATED) {
        tfm__matvec(s, &L->w_gate, in, L->b_gate, s->gate);
        for (i = 0; i < c->d_ff; i++) s->up[i] *= tfm__act(c->act, s->gate[i]);
    } else {
        for (i = 0; i < c->d_ff; i++) s->up[i] = tfm__act(c->act, s->up[i]);
    }
    tfm__matvec(s, &L->w_down, s->up, L->b_down, out);
}

TFM_PRIVATE void tfm__norm(const tfm_model *m, float *out, const float *x, const float *w, const float *b) {
    if (m->config.norm == TFM_NORM_RMSNORM) tfm__rmsnorm(out, x, w, m->config.d_model, m->config.norm_eps);
    else tfm__layernorm(out, x, w, b, m->config.d_model, m->config.norm_eps);
}

/* One block on the residual stream x, in the file's layout:
     sequential:       x += attn(ln1 x);  x += ffn(ln2 x)
     parallel:         x += attn(ln1 x) + ffn(ln2 x)   (both norms read the same x)
     parallel shared:  x += attn(ln1 x) + ffn(ln1 x) */
TFM_PRIVATE void tfm__layer_step(tfm_session *s, int l, int pos) {
    const tfm_model *m = s->model;
    const tfm__layer *L = &m->layers[l];
    int d = m->config.d_model, i;
    tfm__norm(m, s->xn, s->x, L->ln1_w, L->ln1_b);
    tfm__attn_block(s, l, s->xn, s->attn_out, pos);
    switch (m->config.residual) {
    case TFM_RESIDUAL_SEQUENTIAL:
        for (i = 0; i < d; i++) s->x[i] += s->attn_out[i];
        tfm__norm(m, s->xn2, s->x, L->ln2_w, L->ln2_b);
        tfm__ffn_block(s, l, s->xn2, s->ffn_out);
        break;
    case TFM_RESIDUAL_PARALLEL:
        tfm__norm(m, s->xn2, s->x, L->ln2_w, L->ln2_b);
        tfm__ffn_block(s, l, s->xn2, s->ffn_out);
        for (i = 0; i < d; i++) s->x[i] += s->attn_out[i];
        break;
    case TFM_RESIDUAL_PARALLEL_SHARED:
    default:
        tfm__ffn_block(s, l, s->xn, s->ffn_out);
        for (i = 0; i < d; i++) s->x[i] += s->attn_out[i];
        break;
    }
    for (i = 0; i < d; i++) s->x[i] += s->ffn_out[i];
}

/* x = the token's embedding row plus, for learned or sinusoidal positions, the position's vector. */
TFM_PRIVATE void tfm__embed(tfm_session *s, int32_t token, int pos) {
    const tfm_model *m = s->model;
    int d = m->config.d_model, i;
    tfm__tensor_row(&m->tok_embd, (int)token, s->x);
    if (m->config.pos == TFM_POS_LEARNED) {
        tfm__tensor_row(&m->pos_embd, pos, s->xn);
        for (i = 0; i < d; i++) s->x[i] += s->xn[i];
    } else if (m->config.pos == TFM_POS_SINUSOIDAL) {
        const float *pe = s->pos_table + (size_t)pos * (size_t)d;
        for (i = 0; i < d; i++) s->x[i] += pe[i];
    }
}

/* The whole step for one token at pos (cache rows < pos must be valid). logits [n_vocab] or
   NULL to skip the output projection (prompt tokens whose logits nobody reads). */
TFM_PRIVATE tfm_result tfm__forward(tfm_session *s, int32_t token, int pos, float *logits) {
    const tfm_model *m = s->model;
    int l;
    tfm__embed(s, token, pos);
    for (l = 0; l < m->config.n_layers; l++) {
        if (s->should_abort && s->should_abort(s->abort_user)) return TFM_ERR_CANCELLED;
        tfm__layer_step(s, l, pos);
    }
    if (!logits) return TFM_OK;
    tfm__norm(m, s->xn, s->x, m->lnf_w, m->lnf_b);
    tfm__matvec(s, &m->w_out, s->xn, m->b_out, logits);
    return TFM_OK;
}

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
   Picks the next token from logits. Order of the steps (each optional except the last):
     1. repetition penalty on tokens in the last repeat_last_n accepted (CTRL / llama.cpp style:
        a positive logit is divided by the penalty, a negative one multiplied, once per token)
     2. temperature 0: argmax (lowest id on ties), done; else divide logits by the temperature
     3. top-k: keep the k largest (partial selection, O(n log k))
     4. softmax over what is left
     5. top-p: keep the smallest most-probable set whose mass reaches top_p
     6. min-p: keep tokens with p >= min_p * p_max
     7. renormalize and draw with the sampler's own RNG (xorshift64*)
   All scratch is allocated at create; tfm_sample works on a copy and never writes the logits. */

#define TFM__DEFAULT_SEED 0x9E3779B97F4A7C15ull /* seed 0: a fixed odd constant (golden ratio) */
#define TFM__DEFAULT_REPEAT_LAST_N 64
#define TFM__RNG_MUL 0x2545F4914F6CDD1Dull      /* xorshift64* output multiplier */
#define TFM__INV_2_POW_24 5.9604644775390625e-8f /* 2^-24: 24 random bits -> [0, 1) */

struct tfm_sampler {
    tfm_allocator allocator;
    size_t block_bytes;
    int n_vocab, top_k, repeat_last_n;
    float temperature, top_p, min_p, repeat_penalty;
    uint64_t rng;
    int32_t *recent;     /* [repeat_last_n] ring of accepted tokens */
    int n_recent, recent_next;
    float *val;          /* [n_vocab] working logits, then probabilities */
    int32_t *idx;        /* [n_vocab] candidate token ids */
    unsigned char *mark; /* [n_vocab] "already penalized" flags, all zero between calls */
};

TFM_PRIVATE uint64_t tfm__rng_next(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * TFM__RNG_MUL;
}

TFM_PRIVATE float tfm__rng_uniform(uint64_t *state) { return (float)(tfm__rng_next(state) >> 40) * TFM__INV_2_POW_24; }

/* a ranks above b: larger value, then lower id (a total order, so results are deterministic). */
TFM_PRIVATE bool tfm__ranks_above(const float *val, int32_t a, int32_t b) {
    return val[a] > val[b] || (val[a] == val[b] && a < b);
}

/* Restore the min-heap (root = lowest rank) below i over idx[0..n). */
TFM_PRIVATE void tfm__sift_down(const float *val, int32_t *idx, int n, int i) {
    for (;;) {
        int low = i, l = 2 * i + 1, r = l + 1;
        int32_t tmp;
        if (l < n && tfm__ranks_above(val, idx[low], idx[l])) low = l;
        if (r < n && tfm__ranks_above(val, idx[low], idx[r])) low = r;
        if (low == i) return;
        tmp = idx[i];
        idx[i] = idx[low];
        idx[low] = tmp;
        i = low;
    }
}

/* idx[0..n) holds candidates; leave the best k (k <= n) in idx[0..k), sorted best first.
   A min-heap of the k best so far: O(n log k), then heap sort of the k. */
TFM_PRIVATE void tfm__select_top(const float *val, int32_t *idx, int n, int k) {
    int i;
    int32_t tmp;
    for (i = k / 2 - 1; i >= 0; i--) tfm__sift_down(val, idx, k, i);
    for (i = k; i < n; i++) {
        if (!tfm__ranks_above(val, idx[i], idx[0])) continue;
        idx[0] = idx[i];
        tfm__sift_down(val, idx, k, 0);
    }
    for (i = k - 1; i > 0; i--) { /* move the lowest to the back: best ends up first */
        tmp = idx[0];
        idx[0] = idx[i];
        idx[i] = tmp;
        tfm__sift_down(val, idx, i, 0);
    }
}

/* Step 1: penalize each distinct recent token once. */
TFM_PRIVATE void tfm__apply_penalty(tfm_sampler *s, int n) {
    int i;
    if (s->repeat_penalty == 1.0f) return;
    for (i = 0; i < s->n_recent; i++) {
        int32_t t = s->recent[i];
        if (t < 0 || t >= n || s->mark[t]) continue;
        s->mark[t] = 1;
        s->val[t] = s->val[t] > 0.0f ? s->val[t] / s->repeat_penalty : s->val[t] * s->repeat_penalty;
    }
    for (i = 0; i < s->n_recent; i++)
        if (s->recent[i] >= 0 && s->recent[i] < n) s->mark[s->recent[i]] = 0;
}

/* Steps 3-7 on val[0..n) (already divided by the temperature); returns the drawn id. */
TFM_PRIVATE int32_t tfm__draw(tfm_sampler *s, int n) {
    int cnt = n, i, kept;
    bool sorted = false;
    float max, sum = 0.0f, r, cum = 0.0f;
    for (i = 0; i < n; i++) s->idx[i] = (int32_t)i;
    if (s->top_k > 0 && s->top_k < n) {
        cnt = s->top_k;
        tfm__select_top(s->val, s->idx, n, cnt);
        sorted = true;
    }
    if (s->top_p < 1.0f && !sorted) {
        tfm__select_top(s->val, s->idx, n, n);
        sorted = true;
    }
    max = s->val[s->idx[0]];
    for (i = 1; i < cnt; i++) max = s->val[s->idx[i]] > max ? s->val[s->idx[i]] : max;
    if (!(max > -INFINITY)) return s->idx[0]; /* every logit -inf or NaN: nothing to weigh */
    for (i = 0; i < cnt; i++) { /* step 4 (unnormalized: p_max = 1) */
        float p = expf(s->val[s->idx[i]] - max);
        s->val[s->idx[i]] = p;
        sum += p;
    }
    if (s->top_p < 1.0f) { /* step 5: idx is sorted, so the set is a prefix */
        for (i = 0; i < cnt - 1 && cum + s->val[s->idx[i]] < s->top_p * sum; i++) cum += s->val[s->idx[i]];
        cnt = i + 1;
    }
    for (i = 0, kept = 0, sum = 0.0f; i < cnt; i++) { /* step 6, then the sum for step 7 */
        if (s->val[s->idx[i]] < s->min_p) continue;
        s->idx[kept++] = s->idx[i];
        sum += s->val[s->idx[i]];
    }
    r = tfm__rng_uniform(&s->rng) * sum;
    for (i = 0, cum = 0.0f; i < kept - 1; i++) {
        cum += s->val[s->idx[i]];
        if (r < cum) break;
    }
    return s->idx[i];
}

/* >>public ---------------------------------------------------------------------------------------
   API entry points: argument checks, then the sections above. */

TFM_API const char *tfm_result_string(tfm_result result) {
    switch (result) {
    case TFM_OK: return "ok";
    case TFM_ERR_INVALID_ARG: return "invalid argument";
    case TFM_ERR_OUT_OF_MEMORY: return "out of memory";
    case TFM_ERR_IO: return "i/o error";
    case TFM_ERR_BAD_MAGIC: return "not a .tfm file";
    case TFM_ERR_BAD_VERSION: return "unsupported .tfm format version";
    case TFM_ERR_CORRUPT: return "corrupt file";
    case TFM_ERR_UNSUPPORTED: return "unsupported";
    case TFM_ERR_CONTEXT_FULL: return "context full";
    case TFM_ERR_CANCELLED: return "cancelled";
    }
    return "unknown result";
}

#if defined(TFM__AVX2)
#define TFM__PATH "avx2+fma"
#elif defined(TFM__NEON)
#define TFM__PATH "neon"
#else
#define TFM__PATH "scalar"
#endif
#ifdef TFM__OPENMP
#define TFM__PATH_THREADS "+openmp"
#else
#define TFM__PATH_THREADS ""
#endif

TFM_API const char *tfm_build_info(void) { return TFM__PATH TFM__PATH_THREADS; }

/* Frees everything tfm_model_open built; safe on a partly built model. */
TFM_PRIVATE void tfm__model_free(tfm_model *m) {
    tfm_allocator a;
    if (!m) return;
    a = m->allocator;
    if (m->tokenizer) tfm__tokenizer_destroy(m->tokenizer, &a);
    tfm__file_close(&m->file, &a);
    tfm__free(&a, m, m->block_bytes);
}

/* After the file is in memory: validate it all, then build the model around it. */
TFM_PRIVATE tfm_result tfm__model_build(tfm__file *f, const tfm_model_desc *desc, tfm_model **out) {
    const tfm_logger *lg = &desc->logger;
    tfm__header h;
    tfm__resolver rs;
    tfm_model *m;
    int32_t *slots;
    size_t slots_bytes, layers_at, model_bytes;
    int n_slots;
    uint64_t dir_end = 0;
    tfm_result r;
    if ((r = tfm__parse_header(f->data, f->data_bytes, lg, &h)) != TFM_OK) return r;
    if ((r = tfm__check_config(&h, lg)) != TFM_OK) return r;
    if ((r = tfm__check_layout(&h, f->data_bytes, lg, &dir_end)) != TFM_OK) return r;
    n_slots = TFM__N_GLOBAL + (int)h.n_layers * TFM__N_PER_LAYER;
    slots_bytes = (size_t)n_slots * sizeof(int32_t);
    slots = TFM__CAST(int32_t *, tfm__alloc(&desc->allocator, slots_bytes));
    if (!slots) return tfm__log(lg, TFM_ERR_OUT_OF_MEMORY, "model: cannot allocate the name table");
    r = tfm__check_directory(f->data, f->data_bytes, &h, dir_end, lg, slots);
    /* the struct, then layers [n_layers] (n_layers <= TFM_MAX_LAYERS: no overflow) */
    tfm__align_size(sizeof(tfm_model), TFM__ALIGN, &layers_at);
    model_bytes = layers_at + (size_t)h.n_layers * sizeof(tfm__layer);
    m = r ? NULL : TFM__CAST(tfm_model *, tfm__alloc(&desc->allocator, model_bytes));
    if (!r && !m) r = tfm__log(lg, TFM_ERR_OUT_OF_MEMORY, "model: cannot allocate %zu bytes", model_bytes);
    if (!r) {
        memset(m, 0, model_bytes);
        m->allocator = desc->allocator;
        m->logger = desc->logger;
        m->block_bytes = model_bytes;
        m->layers = TFM__CAST(tfm__layer *, TFM__CAST(void *, TFM__CAST(unsigned char *, TFM__CAST(void *, m)) + layers_at));
        tfm__config_from_header(&h, &m->config);
        rs.file = f->data;
        rs.file_bytes = f->data_bytes;
        rs.dir_end = dir_end;
        rs.slots = slots;
        rs.lg = lg;
        if (!tfm__is_vocab_only(&h)) r = tfm__resolve(&rs, m, n_slots);
        if (!r) m->config.dtype = tfm__largest_dtype(m);
    }
    tfm__free(&desc->allocator, slots, slots_bytes);
    if (!r && h.tokenizer_bytes > 0)
        r = tfm__tokenizer_create(f->data + (size_t)h.tokenizer_offset, (size_t)h.tokenizer_bytes,
                                  &desc->allocator, lg, &m->tokenizer);
    if (!r && m->tokenizer)
        tfm__tokenizer_info(m->tokenizer, &m->config.n_tokens, &m->config.bos_id, &m->config.eos_id);
    if (r) {
        if (m) tfm__free(&desc->allocator, m, m->block_bytes); /* the tokenizer is never set on failure */
        return r;
    }
    m->file = *f;
    *out = m;
    return TFM_OK;
}

TFM_API tfm_result tfm_model_open(const tfm_model_desc *desc, tfm_model **out_model) {
    const tfm_logger *lg;
    tfm__file f;
    tfm_result r;
    if (out_model) *out_model = NULL;
    if (!desc || !out_model) return TFM_ERR_INVALID_ARG;
    lg = &desc->logger;
    if (!tfm__allocator_valid(&desc->allocator))
        return tfm__log(lg, TFM_ERR_INVALID_ARG, "model desc: set both allocator callbacks or neither");
    if (!tfm__host_is_little_endian())
        return tfm__log(lg, TFM_ERR_UNSUPPORTED, "big-endian hosts are not supported");
    if ((r = tfm__file_open(desc, &desc->allocator, lg, &f)) != TFM_OK) return r;
    r = tfm__model_build(&f, desc, out_model);
    if (r) tfm__file_close(&f, &desc->allocator);
    return r;
}

TFM_API void tfm_model_close(tfm_model *model) { tfm__model_free(model); }

TFM_API tfm_config tfm_model_config(const tfm_model *model) {
    tfm_config c;
    if (model) return model->config;
    memset(&c, 0, sizeof c);
    c.bos_id = -1;
    c.eos_id = -1;
    return c;
}

TFM_API tfm_result tfm_session_create(const tfm_model *model, const tfm_session_desc *desc,
                                      tfm_session **out_session) {
    tfm_session_desc d;
    tfm_session tmp, *s;
    tfm__plan plan;
    const tfm_config *c;
    tfm_result r;
    if (out_session) *out_session = NULL;
    if (!model || !out_session) return TFM_ERR_INVALID_ARG;
    c = &model->config;
    if (c->n_layers == 0)
        return tfm__log(&model->logger, TFM_ERR_UNSUPPORTED, "session: the model is vocab-only");
    if ((r = tfm__session_desc_defaults(model, desc, &d)) != TFM_OK) return r;
    memset(&tmp, 0, sizeof tmp);
    tmp.n_ctx = d.n_ctx;
    tfm__session_layout(&tmp, c, NULL, &plan);
    if (plan.overflow) return tfm__log(&model->logger, TFM_ERR_OUT_OF_MEMORY, "session: size overflows");
    s = TFM__CAST(tfm_session *, tfm__alloc(&d.allocator, plan.bytes));
    if (!s) return tfm__log(&model->logger, TFM_ERR_OUT_OF_MEMORY, "session: cannot allocate %zu bytes", plan.bytes);
    memset(s, 0, sizeof *s);
    s->model = model;
    s->allocator = d.allocator;
    s->block_bytes = plan.bytes;
    s->n_ctx = d.n_ctx;
    s->n_threads = d.n_threads;
    s->parallel_for = d.parallel_for;
    s->parallel_user = d.parallel_user;
    s->should_abort = d.should_abort;
    s->abort_user = d.abort_user;
#ifdef TFM__OPENMP
    s->n_tasks = d.n_threads;
#else
    s->n_tasks = 1;
#endif
    if (d.parallel_for) s->n_tasks = d.n_threads * TFM__TASKS_PER_THREAD;
    tfm__session_layout(s, c, TFM__CAST(unsigned char *, TFM__CAST(void *, s)), &plan);
    if (s->rope_cos) tfm__rope_tables(s->rope_cos, s->rope_sin, s->n_ctx, c->rope_dim, c->rope_theta);
    if (s->alibi) tfm__alibi_slopes(s->alibi, c->n_heads);
    if (s->pos_table) tfm__sinusoid_table(s->pos_table, s->n_ctx, c->d_model);
    memset(s->logits, 0, (size_t)c->n_vocab * sizeof(float));
    *out_session = s;
    return TFM_OK;
}

TFM_API void tfm_session_destroy(tfm_session *session) {
    tfm_allocator a;
    if (!session) return;
    a = session->allocator;
    tfm__free(&a, session, session->block_bytes);
}

TFM_API tfm_result tfm_session_eval(tfm_session *s, const int32_t *tokens, int n_tokens, int pos,
                                    float *logits_all) {
    int i, n_vocab;
    tfm_result r;
    if (!s) return TFM_ERR_INVALID_ARG;
    s->last_error[0] = '\0';
    n_vocab = s->model->config.n_vocab;
    if (n_tokens < 0 || (n_tokens > 0 && !tokens))
        return tfm__session_fail(s, TFM_ERR_INVALID_ARG, "eval: %d tokens at %p", n_tokens, (const void *)tokens);
    if (pos < 0 || pos > s->n_past)
        return tfm__session_fail(s, TFM_ERR_INVALID_ARG, "eval: pos %d, but only %d positions are evaluated",
                                 pos, s->n_past);
    if (n_tokens > s->n_ctx - pos)
        return tfm__session_fail(s, TFM_ERR_CONTEXT_FULL, "eval: positions %d..%d pass n_ctx %d", pos,
                                 pos + n_tokens - 1, s->n_ctx);
    for (i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return tfm__session_fail(s, TFM_ERR_INVALID_ARG, "eval: token %d (index %d) is outside [0, %d)",
                                     (int)tokens[i], i, n_vocab);
    s->n_past = pos;
    for (i = 0; i < n_tokens; i++) {
        float *out = logits_all ? logits_all + (size_t)i * (size_t)n_vocab : i == n_tokens - 1 ? s->logits : NULL;
        if ((r = tfm__forward(s, tokens[i], pos + i, out)) != TFM_OK)
            return tfm__session_fail(s, r, "eval: cancelled at position %d", pos + i);
        s->n_past = pos + i + 1;
    }
    if (logits_all && n_tokens > 0)
        memcpy(s->logits, logits_all + (size_t)(n_tokens - 1) * (size_t)n_vocab, (size_t)n_vocab * sizeof(float));
    return TFM_OK;
}

TFM_API tfm_result tfm_session_decode(tfm_session *session, int32_t token, int pos, const float **logits) {
    tfm_result r = tfm_session_eval(session, &token, 1, pos, NULL);
    if (logits) *logits = r == TFM_OK ? session->logits : NULL;
    return r;
}

TFM_API const float *tfm_session_logits(const tfm_session *session) { return session ? session->logits : NULL; }
TFM_API int tfm_session_n_past(const tfm_session *session) { return session ? session->n_past : 0; }
TFM_API int tfm_session_n_ctx(const tfm_session *session) { return session ? session->n_ctx : 0; }
TFM_API const char *tfm_session_last_error(const tfm_session *session) {
    return session ? session->last_error : "";
}

/* Max and log-sum-exp of logits[0..n): log sum_i e^(l_i) = m + log sum_i e^(l_i - m) (double sum). */
TFM_PRIVATE float tfm__log_sum_exp(const float *logits, int n, float *max_out) {
    float m = logits[0];
    double sum = 0.0;
    int i;
    for (i = 1; i < n; i++) m = logits[i] > m ? logits[i] : m;
    *max_out = m;
    if (!(m > -INFINITY) || !(m < INFINITY)) return m;
    for (i = 0; i < n; i++) sum += exp((double)(logits[i] - m));
    return m + (float)log(sum);
}

TFM_API void tfm_softmax(const float *logits, float *probs, int n) {
    float m, lse;
    int i;
    if (!logits || !probs || n <= 0) return;
    lse = tfm__log_sum_exp(logits, n, &m);
    for (i = 0; i < n; i++) probs[i] = expf(logits[i] - lse);
}

TFM_API void tfm_log_softmax(const float *logits, float *log_probs, int n) {
    float m, lse;
    int i;
    if (!logits || !log_probs || n <= 0) return;
    lse = tfm__log_sum_exp(logits, n, &m);
    for (i = 0; i < n; i++) log_probs[i] = logits[i] - lse;
}

TFM_API float tfm_cross_entropy(const float *logits, int n, int32_t target) {
    float m;
    if (!logits || n <= 0 || target < 0 || target >= n) return NAN;
    return tfm__log_sum_exp(logits, n, &m) - logits[target];
}

/* Zeros resolved to defaults, ranges checked. */
TFM_PRIVATE tfm_result tfm__sampler_desc_defaults(const tfm_sampler_desc *desc, tfm_sampler_desc *d) {
    *d = *desc;
    if (!tfm__allocator_valid(&d->allocator) || d->n_vocab <= 0 || d->n_vocab > TFM_MAX_VOCAB ||
        !(d->temperature >= 0.0f && d->temperature < INFINITY) || d->top_k < 0 ||
        !(d->top_p >= 0.0f && d->top_p <= 1.0f) || !(d->min_p >= 0.0f && d->min_p <= 1.0f) ||
        !(d->repeat_penalty >= 0.0f && d->repeat_penalty < INFINITY) || d->repeat_last_n < 0 ||
        d->repeat_last_n > TFM_MAX_CTX)
        return TFM_ERR_INVALID_ARG;
    if (d->top_p == 0.0f) d->top_p = 1.0f;
    if (d->repeat_penalty == 0.0f) d->repeat_penalty = 1.0f;
    if (d->repeat_last_n == 0) d->repeat_last_n = TFM__DEFAULT_REPEAT_LAST_N;
    if (d->seed == 0) d->seed = TFM__DEFAULT_SEED;
    return TFM_OK;
}

TFM_API tfm_result tfm_sampler_create(const tfm_sampler_desc *desc, tfm_sampler **out_sampler) {
    tfm_sampler_desc d;
    tfm_sampler *s;
    size_t n = 0, at_recent, at_val, at_idx, at_mark, bytes;
    bool ok;
    if (out_sampler) *out_sampler = NULL;
    if (!desc || !out_sampler || tfm__sampler_desc_defaults(desc, &d) != TFM_OK) return TFM_ERR_INVALID_ARG;
    ok = tfm__align_size(sizeof(tfm_sampler), TFM__ALIGN, &at_recent) &&
         tfm__add_size(at_recent, (size_t)d.repeat_last_n * sizeof(int32_t), &n) &&
         tfm__align_size(n, TFM__ALIGN, &at_val) &&
         tfm__add_size(at_val, (size_t)d.n_vocab * sizeof(float), &n) && tfm__align_size(n, TFM__ALIGN, &at_idx) &&
         tfm__add_size(at_idx, (size_t)d.n_vocab * sizeof(int32_t), &at_mark) &&
         tfm__add_size(at_mark, (size_t)d.n_vocab, &bytes);
    if (!ok) return TFM_ERR_OUT_OF_MEMORY;
    s = TFM__CAST(tfm_sampler *, tfm__alloc(&d.allocator, bytes));
    if (!s) return TFM_ERR_OUT_OF_MEMORY;
    memset(s, 0, bytes);
    s->allocator = d.allocator;
    s->block_bytes = bytes;
    s->n_vocab = d.n_vocab;
    s->top_k = d.top_k;
    s->repeat_last_n = d.repeat_last_n;
    s->temperature = d.temperature;
    s->top_p = d.top_p;
    s->min_p = d.min_p;
    s->repeat_penalty = d.repeat_penalty;
    s->rng = d.seed;
    s->recent = TFM__CAST(int32_t *, TFM__CAST(void *, TFM__CAST(unsigned char *, TFM__CAST(void *, s)) + at_recent));
    s->val = TFM__CAST(float *, TFM__CAST(void *, TFM__CAST(unsigned char *, TFM__CAST(void *, s)) + at_val));
    s->idx = TFM__CAST(int32_t *, TFM__CAST(void *, TFM__CAST(unsigned char *, TFM__CAST(void *, s)) + at_idx));
    s->mark = TFM__CAST(unsigned char *, TFM__CAST(void *, s)) + at_mark;
    *out_sampler = s;
    return TFM_OK;
}

TFM_API void tfm_sampler_destroy(tfm_sampler *sampler) {
    tfm_allocator a;
    if (!sampler) return;
    a = sampler->allocator;
    tfm__free(&a, sampler, sampler->block_bytes);
}

TFM_API void tfm_sampler_accept(tfm_sampler *s, int32_t token) {
    if (!s) return;
    s->recent[s->recent_next] = token;
    s->recent_next = (s->recent_next + 1) % s->repeat_last_n;
    if (s->n_recent < s->repeat_last_n) s->n_recent++;
}

TFM_API tfm_result tfm_sample(tfm_sampler *s, const float *logits, int n, int32_t *out_token) {
    int i;
    int32_t best = 0;
    if (out_token) *out_token = -1;
    if (!s || !logits || !out_token || n <= 0 || n > s->n_vocab) return TFM_ERR_INVALID_ARG;
    for (i = 0; i < n; i++) s->val[i] = logits[i] == logits[i] ? logits[i] : -INFINITY; /* NaN never wins */
    tfm__apply_penalty(s, n);
    if (s->temperature == 0.0f) {
        for (i = 1; i < n; i++)
            if (s->val[i] > s->val[best]) best = (int32_t)i;
    } else {
        float inv_t = 1.0f / s->temperature;
        for (i = 0; i < n; i++) s->val[i] *= inv_t;
        best = tfm__draw(s, n);
    }
    tfm_sampler_accept(s, best);
    *out_token = best;
    return TFM_OK;
}

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
