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
       tfm_model_tokenize(model, "Hello", 5, ids, 256, &n_ids);  (prepend bos_id if .add_bos)
       tfm_session_eval(s, ids, (int)n_ids, 0, NULL);  evaluates positions 0..n_ids-1
       int n_vocab = tfm_model_config(model).n_vocab;
       tfm_sampler_desc pd = {0}; pd.temperature = 0.8f; pd.n_vocab = n_vocab;
       tfm_sampler *smp; tfm_sampler_create(&pd, &smp);
       int32_t next; tfm_sample(smp, tfm_session_logits(s), n_vocab, &next);
       ... tfm_session_eval(s, &next, 1, pos, NULL) ...
       tfm_sampler_destroy(smp); tfm_session_destroy(s); tfm_model_close(model);

   CHAT PROMPTS (the model's own template, as Hugging Face renders it)
       tfm_chat_desc cd = {0}; cd.model = model;   (or cd.template_text / template_bytes)
       tfm_chat *chat; tfm_chat_create(&cd, &chat);
       tfm_chat_message m[1] = {{"user", 4, "Hi", 2}};
       tfm_chat_args ca = {0}; ca.messages = m; ca.n_messages = 1; ca.add_generation_prompt = true;
       size_t n; tfm_chat_render(chat, &ca, NULL, 0, &n);   (size first, then a buffer of n)
       ... tokenize the prompt as it is (the template wrote bos_token), tfm_chat_destroy(chat);

   TABLE OF CONTENTS (search for the tag)
       >>api        public declarations
       >>config     build-switch checks
       >>util       checked size math, little-endian reads, error text
       >>alloc      allocator callbacks
       >>io         mmap / read the file
       >>format     parse and validate a .tfm file before any pointer is made
       >>kernels    scalar math: dot, norms, activations, softmax, RoPE, ALiBi, sinusoids
       >>simd       vector twins of the hot kernels, the matrix products built on them
       >>model      tensors resolved from the directory
       >>session    KV cache and scratch
       >>forward    one transformer step: attention, FFN, the layer loop, threading
       >>tokenizer  byte-level BPE and SentencePiece encode/decode
       >>chat       chat templates: a Jinja interpreter, as transformers renders them
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
       A tfm_chat (a parsed chat template) is used by one thread at a time.
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
        16  u32 pretok (tfm_pretok)           40  u32 chat_template_bytes (0: none)
        20  i32 bos_id  (-1 none)             44  u32 chat_bos_bytes (0: bos_token undefined)
                                              48  u32 chat_eos_bytes (0: eos_token undefined)
                                              52  u8[12] reserved
        64  u32 text_offsets[n_tokens + 1]   token i is text[text_offsets[i] .. text_offsets[i+1])
            f32 scores[n_tokens]             merge scores (SentencePiece kinds), else 0
            u8  attrs[n_tokens]              TFM_TOKATTR_* bits
            u8  pad[] to a multiple of 4
            u32 merges[n_merges][3]          left id, right id, merged id; rank = index
            u8  text[text_bytes]             raw token bytes (the byte-level alphabet is undone)
            u8  chat_template[chat_template_bytes]  Jinja source (tokenizer_config.json's
                                             chat_template, GGUF tokenizer.chat_template)
            u8  chat_bos[chat_bos_bytes]     the bos_token / eos_token strings the template
            u8  chat_eos[chat_eos_bytes]     sees (tokenizer_config.json's; see >>chat)
       flags: TFM_TOKFLAG_NFC 1, TFM_TOKFLAG_PREFIX_SPACE 2 (SentencePiece dummy prefix: a space
       before each text segment between added tokens, as llama.cpp and Hugging Face's Prepend
       normalizer do), TFM_TOKFLAG_ADD_BOS 4 (the model was trained with bos_id before each
       text: callers prepend it, see tfm_config.add_bos; tokenizing never adds it),
       TFM_TOKFLAG_PREFIX_FIRST 8 (the prefix only before a segment at the start of the text)
       and TFM_TOKFLAG_PREFIX_UNLESS_SPACE 16 (none before a segment that starts with a space):
       the two Metaspace prepend_scheme values "first" (8|16) and "always" (16).
       TFM_TOKFLAG_IGNORE_MERGES 32 (byte-level BPE: a pre-token that is itself a vocabulary
       token becomes that token without merging, as HF's ignore_merges; Llama-3).
       pretok (tfm_pretok): 0 none, 1 the GPT-2 regex, 2 every \p{N} code point a piece of its
       own, the GPT-2 regex on the text between (StarCoder2: Digits + ByteLevel), 3 the Llama-3
       regex (Split(Isolated) + ByteLevel without its regex), 4 Qwen2's (the same with \p{N}
       instead of \p{N}{1,3}).
       SentencePiece kind with n_merges > 0 (from a tokenizer.json): pairs merge by merge rank
       as Hugging Face BPE does; with none (llama2.c, GGUF): by the merged token's score.

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
    TFM_ERR_CANCELLED = 9,     /* should_abort returned true */
    TFM_ERR_TEMPLATE = 10      /* a chat template failed: syntax, rendering, raise_exception */
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
typedef enum tfm_pretok {
    TFM_PRETOK_NONE = 0,
    TFM_PRETOK_GPT2 = 1,       /* the GPT-2 regex (ByteLevel use_regex) */
    TFM_PRETOK_GPT2_DIGITS = 2, /* each \p{N} code point alone, then GPT-2 (StarCoder2's Digits) */
    TFM_PRETOK_LLAMA3 = 3,      /* the Llama-3 regex (Split + ByteLevel without its regex) */
    TFM_PRETOK_QWEN2 = 4        /* Qwen2's: Llama-3's with \p{N} one at a time, not {1,3} */
} tfm_pretok;
#define TFM_TOKFLAG_NFC 1u          /* NFC-normalize text before splitting */
#define TFM_TOKFLAG_PREFIX_SPACE 2u /* a space before each text segment (SentencePiece prefix) */
#define TFM_TOKFLAG_ADD_BOS 4u      /* the model expects bos_id first (Llama): tfm_config.add_bos */
#define TFM_TOKFLAG_PREFIX_FIRST 8u /* PREFIX_SPACE only before a segment that starts the text */
#define TFM_TOKFLAG_PREFIX_UNLESS_SPACE 16u /* PREFIX_SPACE not before a segment starting with ' ' */
#define TFM_TOKFLAG_IGNORE_MERGES 32u /* a pre-token that is a token is that token (HF ignore_merges) */
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
    bool add_bos;     /* prepend bos_id to a text's ids, as in training (tokenize does not) */
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
    int n_threads;           /* 0: 1 (at most 1<<20); OpenMP threads when compiled with -fopenmp */
    tfm_parallel_for_fn parallel_for; /* optional; replaces OpenMP, work split in n_threads*4 tasks */
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

/* --- tokenizer (on the model; never allocates; TFM_ERR_UNSUPPORTED when the file has none) --- */
/* Text to ids. Writes at most ids_cap ids, always sets *n_ids to the count needed; returns
   TFM_ERR_INVALID_ARG (and still the count) when ids_cap is too small. No BOS/EOS is added
   (tfm_config.add_bos: the model expects bos_id before the text's ids, as Llama models do).
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
/* Ends a stream: a held incomplete tail becomes one U+FFFD (3 bytes, as Python does) and the
   stream is reset. Returns the bytes written: 0 when nothing is held, or when out_cap < 3 (the
   tail then stays held). */
TFM_API size_t tfm_utf8_stream_flush(tfm_utf8_stream *stream, char *out, size_t out_cap);

/* --- chat templates (>>chat) ---
   A Hugging Face chat template (Jinja) rendered exactly as transformers' apply_chat_template
   renders it: messages in, prompt text out. The text is not tokenized: tokenize it as it is
   (the template writes bos_token itself where the model wants one; do not prepend bos_id). */
typedef struct tfm_chat tfm_chat;

typedef struct tfm_chat_message {
    const char *role;      /* "system", "user", "assistant", ... */
    size_t role_bytes;
    const char *content;   /* NULL: None in the template (content is none) */
    size_t content_bytes;
} tfm_chat_message;

/* The clock of strftime_now (Llama-3.2 puts today's date in its system prompt). */
typedef struct tfm_chat_date {
    int year;              /* 0: strftime_now is undefined (templates fall back to their own date) */
    int month, day;        /* 1..12, 1..31 */
    int hour, minute, second;
} tfm_chat_date;

/* All-zero is invalid: give template_text, or a model whose file carries a template. */
typedef struct tfm_chat_desc {
    const tfm_model *model;   /* optional: template, bos_token and eos_token from its file */
    const char *template_text; /* Jinja source (copied); NULL: the model's */
    size_t template_bytes;
    const char *bos_token;    /* the template's bos_token (copied); NULL: the model's, or undefined */
    size_t bos_token_bytes;
    const char *eos_token;    /* likewise eos_token */
    size_t eos_token_bytes;
    size_t max_output_bytes;  /* longest prompt; 0: 16 MiB */
    size_t max_memory_bytes;  /* arena for the template, and for one render; 0: 64 MiB */
    tfm_allocator allocator;
    tfm_logger logger;
} tfm_chat_desc;

/* One render. The messages: messages[0..n_messages), or messages_json, a JSON array of
   message objects with any fields (tool_calls, ...). */
typedef struct tfm_chat_args {
    const tfm_chat_message *messages;
    size_t n_messages;
    const char *messages_json;   /* used instead of messages when not NULL */
    size_t messages_json_bytes;
    const char *vars_json;       /* optional JSON object of more variables (tools, enable_thinking) */
    size_t vars_json_bytes;
    bool add_generation_prompt;  /* end with the opening of an assistant turn */
    tfm_chat_date date;          /* strftime_now's date; zero: strftime_now undefined */
} tfm_chat_args;

/* tfm_chat_create: lexes and parses the template (syntax errors, unknown tags, filters and
   tests fail here with line and column in the logger's message).
   Returns TFM_OK; TFM_ERR_TEMPLATE for a bad template; TFM_ERR_UNSUPPORTED when desc->model
   has no template; TFM_ERR_INVALID_ARG, TFM_ERR_OUT_OF_MEMORY.
   Thread safety: a tfm_chat is used by one thread at a time (render writes last_error).
   Ownership: destroy with tfm_chat_destroy; desc and its strings may go after the call. */
TFM_API tfm_result tfm_chat_create(const tfm_chat_desc *desc, tfm_chat **out_chat);
TFM_API void tfm_chat_destroy(tfm_chat *chat);                   /* NULL is fine */
/* Renders the prompt: writes at most out_cap bytes (no NUL) and sets *out_bytes to the size
   needed. out NULL asks for the size only; a too small out_cap is TFM_ERR_INVALID_ARG (the
   size is still set). TFM_ERR_TEMPLATE: an error while rendering, or the template called
   raise_exception (tfm_chat_last_error is then its message, exactly). Allocates in an arena
   through desc.allocator and frees it before returning. */
TFM_API tfm_result tfm_chat_render(tfm_chat *chat, const tfm_chat_args *args, char *out,
                                   size_t out_cap, size_t *out_bytes);
TFM_API const char *tfm_chat_last_error(const tfm_chat *chat);   /* "" after success */
/* The chat template stored in a .tfm file (borrowed; lives as long as the model), or
   TFM_ERR_UNSUPPORTED when it has none. */
TFM_API tfm_result tfm_model_chat_template(const tfm_model *model, const char **text,
                                           size_t *text_bytes);

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

#define TFM__F16_SUBNORMAL_STEP 5.9604644775390625e-8f /* 2^-24: an f16 subnormal's mantissa unit */
#define TFM__F16_EXP_REBIAS 112u /* f32 exponent bias 127 minus f16 bias 15 */

/* IEEE half to float, exact for every input (subnormals, inf, NaN). */
TFM_PRIVATE float tfm__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
    float f;
    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + TFM__F16_EXP_REBIAS) << 23) | (mant << 13);
    } else { /* zero or subnormal: mant * 2^-24 */
        f = (float)mant * TFM__F16_SUBNORMAL_STEP;
        return sign ? -f : f;
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* base + offset bytes, for carving one allocation into arrays. */
TFM_PRIVATE void *tfm__at(void *base, size_t offset) { return TFM__CAST(unsigned char *, base) + offset; }

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
   Every allocation goes through the desc's allocator (or TFM_MALLOC), and only at create time.
   Why: a host engine places memory itself; each object is one or a few 64-byte aligned blocks
   (size and alignment passed to the callback, as arena allocators want), so scratch rows start
   on cache lines. */

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
    FILE *fp = NULL;
    unsigned char *buf;
    size_t n_bytes, got;
    int64_t end;
#if defined(_MSC_VER)
    if (fopen_s(&fp, path, "rb") != 0) fp = NULL; /* fopen is a C4996 warning under /W4 */
#else
    fp = fopen(path, "rb");
#endif
    if (!fp) return tfm__log(lg, TFM_ERR_IO, "%s: cannot open", path);
    end = TFM__FSEEK_END(fp) == 0 ? (int64_t)TFM__FTELL(fp) : -1;
    if (end < 0 || (uint64_t)end > (uint64_t)(size_t)-1 || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return tfm__log(lg, TFM_ERR_IO, "%s: cannot find the file size", path);
    }
    n_bytes = (size_t)end;
    /* one byte first: a directory opens and "seeks" to a huge size on some systems, but reads fail */
    if (n_bytes > 0 && ungetc(fgetc(fp), fp) == EOF) {
        fclose(fp);
        return tfm__log(lg, TFM_ERR_IO, "%s: cannot read (a directory?)", path);
    }
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
#define TFM__N_GLOBAL 6     /* model-wide tensor names (tok_embd .. output.b) */
#define TFM__N_PER_LAYER 18 /* tensor names per layer (blk.<i>.ln1.w .. b_down) */

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
    uint64_t max_tensors = TFM__N_GLOBAL + TFM__N_PER_LAYER * (uint64_t)h->n_layers, end = 0;
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

/* Tensor names map to slots: TFM__N_GLOBAL model-wide names, then TFM__N_PER_LAYER per layer
   ("blk.<i>.<suffix>"). */
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
    for (j = 0; j < half; j++) {
        double theta_j = pow((double)base, -2.0 * (double)j / (double)rope_dim);
        for (pos = 0; pos < n_ctx; pos++) {
            double angle = (double)pos * theta_j;
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
    for (i = 0; 2 * i < d; i++) {
        double wavelength = pow(TFM__SINUSOID_BASE, (double)(2 * i) / (double)d);
        for (pos = 0; pos < n_ctx; pos++) {
            float *row = pe + (size_t)pos * (size_t)d;
            double angle = (double)pos / wavelength;
            row[2 * i] = (float)sin(angle);
            if (2 * i + 1 < d) row[2 * i + 1] = (float)cos(angle);
        }
    }
}

/* >>simd -----------------------------------------------------------------------------------------
   Vector twins of the hot kernels, chosen at compile time (no runtime CPUID): the weight-row dot
   products under every matrix product (decode time is almost all matvec), and the dot / axpy of
   attention. Each has a scalar twin in >>kernels; the rest of the file calls tfm__matmul_rows,
   tfm__dot_f32 and tfm__axpy and never sees an intrinsic.
   Exactness rule for matrix products: every output y[b, r] is ONE accumulator chain over 8-wide
   steps, its 8 lanes summed in a fixed order, plus the scalar tail. Blocks of 4 rows x 1 or 2
   tokens only run several such chains side by side (sharing loads, hiding FMA latency), so a
   value never depends on the block, the batch size or the thread that computed it: a prompt
   evaluated in one call and token by token gives identical logits. */

#ifdef TFM__AVX2
/* Sum of the 8 lanes, always in this order. */
TFM_PRIVATE float tfm__hsum_avx2(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Attention dot q . k: four accumulators hide the FMA latency; unaligned loads throughout. */
TFM_PRIVATE float tfm__dot_f32_avx2(const float *a, const float *b, int n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps();
    __m256 s3 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    return tfm__hsum_avx2(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3))) +
           tfm__dot_f32_scalar(a + i, b + i, n - i);
}

TFM_PRIVATE void tfm__axpy_avx2(float *y, float a, const float *x, int n) {
    __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    tfm__axpy_scalar(y + i, a, x + i, n - i);
}

#define TFM__LOAD_F32(p) _mm256_loadu_ps(p)
#ifdef __F16C__
#define TFM__F16C 1
#define TFM__LOAD_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#endif

/* The three block kernels for one weight type W_T (8 weights loaded as floats by LOAD, the
   scalar tail by TAIL), w the first row, ld the row stride in elements, n = cols:
     NAME_1x1: one row . one token
     NAME_4x1: 4 rows . one token           out[i]     = row i . x0
               (pf: the next block's first row, prefetched at the same offsets: without it
               short rows read as 4 interleaved streams keep retraining the hardware prefetcher)
     NAME_4x2: 4 rows . two tokens          out[t*4+i] = row i . x_t
   One macro keeps the f32 and f16 kernels the same code, chain for chain. */
#define TFM__BLOCK_KERNELS(NAME, W_T, LOAD, TAIL)                                                 \
    TFM_PRIVATE float NAME##_1x1(const W_T *w, const float *x, int n) {                           \
        __m256 a = _mm256_setzero_ps();                                                           \
        int i = 0;                                                                                \
        for (; i + 8 <= n; i += 8) a = _mm256_fmadd_ps(LOAD(w + i), _mm256_loadu_ps(x + i), a);   \
        return tfm__hsum_avx2(a) + TAIL(w + i, x + i, n - i);                                     \
    }                                                                                             \
    TFM_PRIVATE void NAME##_4x1(const W_T *w, size_t ld, const W_T *pf, const float *x, int n,    \
                                float *out) {                                                     \
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps();      \
        __m256 a3 = _mm256_setzero_ps();                                                          \
        int i = 0, k;                                                                             \
        for (; i + 8 <= n; i += 8) {                                                              \
            __m256 xv = _mm256_loadu_ps(x + i);                                                   \
            if ((i * (int)sizeof(W_T)) % TFM__ALIGN == 0) /* once per cache line */               \
                for (k = 0; k < 4; k++)                                                           \
                    _mm_prefetch((const char *)(pf + (size_t)k * ld + i), _MM_HINT_T0);            \
            a0 = _mm256_fmadd_ps(LOAD(w + i), xv, a0);                                            \
            a1 = _mm256_fmadd_ps(LOAD(w + ld + i), xv, a1);                                       \
            a2 = _mm256_fmadd_ps(LOAD(w + 2 * ld + i), xv, a2);                                   \
            a3 = _mm256_fmadd_ps(LOAD(w + 3 * ld + i), xv, a3);                                   \
        }                                                                                         \
        out[0] = tfm__hsum_avx2(a0);                                                              \
        out[1] = tfm__hsum_avx2(a1);                                                              \
        out[2] = tfm__hsum_avx2(a2);                                                              \
        out[3] = tfm__hsum_avx2(a3);                                                              \
        for (k = 0; k < 4; k++) out[k] += TAIL(w + (size_t)k * ld + i, x + i, n - i);             \
    }                                                                                             \
    TFM_PRIVATE void NAME##_4x2(const W_T *w, size_t ld, const float *x0, const float *x1, int n, \
                                float *out) {                                                     \
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps();      \
        __m256 a3 = _mm256_setzero_ps(), b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();      \
        __m256 b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();                                \
        int i = 0, k;                                                                             \
        for (; i + 8 <= n; i += 8) {                                                              \
            __m256 u = _mm256_loadu_ps(x0 + i), v = _mm256_loadu_ps(x1 + i), wv;                  \
            wv = LOAD(w + i);                                                                     \
            a0 = _mm256_fmadd_ps(wv, u, a0);                                                      \
            b0 = _mm256_fmadd_ps(wv, v, b0);                                                      \
            wv = LOAD(w + ld + i);                                                                \
            a1 = _mm256_fmadd_ps(wv, u, a1);                                                      \
            b1 = _mm256_fmadd_ps(wv, v, b1);                                                      \
            wv = LOAD(w + 2 * ld + i);                                                            \
            a2 = _mm256_fmadd_ps(wv, u, a2);                                                      \
            b2 = _mm256_fmadd_ps(wv, v, b2);                                                      \
            wv = LOAD(w + 3 * ld + i);                                                            \
            a3 = _mm256_fmadd_ps(wv, u, a3);                                                      \
            b3 = _mm256_fmadd_ps(wv, v, b3);                                                      \
        }                                                                                         \
        out[0] = tfm__hsum_avx2(a0);                                                              \
        out[1] = tfm__hsum_avx2(a1);                                                              \
        out[2] = tfm__hsum_avx2(a2);                                                              \
        out[3] = tfm__hsum_avx2(a3);                                                              \
        out[4] = tfm__hsum_avx2(b0);                                                              \
        out[5] = tfm__hsum_avx2(b1);                                                              \
        out[6] = tfm__hsum_avx2(b2);                                                              \
        out[7] = tfm__hsum_avx2(b3);                                                              \
        for (k = 0; k < 4; k++) {                                                                 \
            out[k] += TAIL(w + (size_t)k * ld + i, x0 + i, n - i);                                \
            out[4 + k] += TAIL(w + (size_t)k * ld + i, x1 + i, n - i);                            \
        }                                                                                         \
    }

TFM__BLOCK_KERNELS(tfm__rows_f32, float, TFM__LOAD_F32, tfm__dot_f32_scalar)
#ifdef TFM__F16C
TFM__BLOCK_KERNELS(tfm__rows_f16, uint16_t, TFM__LOAD_F16, tfm__dot_f16_scalar)
#endif
#endif /* TFM__AVX2 */

#ifdef TFM__NEON
TFM_PRIVATE float tfm__dot_f32_neon(const float *a, const float *b, int n) {
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = vdupq_n_f32(0.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 = vmlaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vmlaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    }
    s0 = vaddq_f32(s0, s1);
    return vgetq_lane_f32(s0, 0) + vgetq_lane_f32(s0, 1) + vgetq_lane_f32(s0, 2) + vgetq_lane_f32(s0, 3) +
           tfm__dot_f32_scalar(a + i, b + i, n - i);
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

TFM_PRIVATE void tfm__axpy(float *y, float a, const float *x, int n) {
#if defined(TFM__AVX2)
    tfm__axpy_avx2(y, a, x, n);
#else
    tfm__axpy_scalar(y, a, x, n);
#endif
}

/* One output of a matrix product: row . x, any dtype, the same chain as the block kernels. */
TFM_PRIVATE float tfm__row_dot(const tfm__tensor *w, int r, const float *x) {
    size_t at = (size_t)r * (size_t)w->cols;
    if (w->dtype == TFM_DTYPE_F16) {
#ifdef TFM__F16C
        return tfm__rows_f16_1x1(TFM__CAST(const uint16_t *, w->data) + at, x, w->cols);
#else
        return tfm__dot_f16_scalar(TFM__CAST(const uint16_t *, w->data) + at, x, w->cols);
#endif
    }
#ifdef TFM__AVX2
    return tfm__rows_f32_1x1(TFM__CAST(const float *, w->data) + at, x, w->cols);
#else
    return tfm__dot_f32(TFM__CAST(const float *, w->data) + at, x, w->cols);
#endif
}

#ifdef TFM__AVX2
/* Rows [r, r + 4) times tokens [b, b + n_t) (n_t 1 or 2) into out[t * 4 + i]. */
TFM_PRIVATE void tfm__rows4(const tfm__tensor *w, int r, const float *x0, const float *x1, int n_t, float *out) {
    size_t ld = (size_t)w->cols, at = (size_t)r * ld;
    if (w->dtype == TFM_DTYPE_F32) {
        const float *p = TFM__CAST(const float *, w->data) + at;
        if (n_t == 2) tfm__rows_f32_4x2(p, ld, x0, x1, w->cols, out);
        else tfm__rows_f32_4x1(p, ld, r + 8 <= w->rows ? p + 4 * ld : p, x0, w->cols, out);
        return;
    }
#ifdef TFM__F16C
    {
        const uint16_t *p = TFM__CAST(const uint16_t *, w->data) + at;
        if (n_t == 2) tfm__rows_f16_4x2(p, ld, x0, x1, w->cols, out);
        else tfm__rows_f16_4x1(p, ld, r + 8 <= w->rows ? p + 4 * ld : p, x0, w->cols, out);
        return;
    }
#else
    {
        int i, t;
        for (t = 0; t < n_t; t++)
            for (i = 0; i < 4; i++) out[t * 4 + i] = tfm__row_dot(w, r + i, t ? x1 : x0);
    }
#endif
}
#endif

/* Matrix times a batch of n_b tokens over rows [r0, r1):
     y[b, r] = W[r, :] . x[b, :] (+ bias[r])   for b in [0, n_b)
   W [rows, cols] (f32 or f16, one interface); x rows x_stride floats apart, y rows y_stride
   apart; bias [rows] or NULL. Each weight row is read once for the whole batch (the point of
   evaluating prompts in batches); every output is computed the same way whatever the block,
   batch or thread (see the exactness rule above). */
TFM_PRIVATE void tfm__matmul_rows(const tfm__tensor *w, const float *x, size_t x_stride, const float *bias,
                                  float *y, size_t y_stride, int n_b, int r0, int r1) {
    int r = r0, b, i;
#ifdef TFM__AVX2
    float out[8];
    for (; r + 4 <= r1; r += 4) {
        for (b = 0; b < n_b; b += 2) {
            int n_t = n_b - b >= 2 ? 2 : 1;
            tfm__rows4(w, r, x + (size_t)b * x_stride, x + (size_t)(b + n_t - 1) * x_stride, n_t, out);
            for (i = 0; i < 4 * n_t; i++)
                y[(size_t)(b + i / 4) * y_stride + (size_t)(r + i % 4)] = out[i] + (bias ? bias[r + i % 4] : 0.0f);
        }
    }
#endif
    for (; r < r1; r++)
        for (b = 0; b < n_b; b++)
            y[(size_t)b * y_stride + (size_t)r] = tfm__row_dot(w, r, x + (size_t)b * x_stride) + (bias ? bias[r] : 0.0f);
    (void)i;
}

/* One token: y[r] = W[r, :] . x (+ bias[r]) over rows [r0, r1). */
TFM_PRIVATE void tfm__matvec_rows(const tfm__tensor *w, const float *x, const float *bias, float *y, int r0, int r1) {
    tfm__matmul_rows(w, x, 0, bias, y, 0, 1, r0, r1);
}

/* >>model ----------------------------------------------------------------------------------------
   The opened model: the file bytes, the resolved config, and tensor views in place in the file,
   resolved by name with shapes checked against the config. Immutable after tfm_model_open.
   Why views, not copies: opening costs no weight copy, and mapped pages are shared by every
   session and process that uses the same file.

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
    if (!res && c->pos == TFM_POS_LEARNED)
        res = tfm__take(r, TFM__T_POS_EMBD, c->n_ctx, c->d_model, true, &m->pos_embd);
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

/* config.dtype: the dtype of the largest of tok_embd and the w_up matrices (the converter writes
   every matrix in one dtype, so this stands for all of them). */
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
   scratch of one step for a batch of up to TFM__BATCH tokens, and the precomputed position
   tables. It is carved out of one allocation at create time; eval allocates nothing. */

#define TFM__BATCH 16             /* prompt tokens per pass: each weight row is read once per batch */
#define TFM__TASKS_PER_THREAD 4   /* tasks per thread per parallel pass: load balancing */
#define TFM__MIN_ROWS_PER_TASK 16 /* below this a matmul runs on the calling thread */
#define TFM__MIN_PARALLEL_WORK 32768 /* multiply-adds below which a pass is not worth a thread sync */
#define TFM__MAX_THREADS (1 << 20)   /* desc n_threads limit: n_threads * TFM__TASKS_PER_THREAD fits an int */

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
    float *k_cache, *v_cache;   /* [n_layers, n_ctx, kv_dim] */
    float *x;                   /* [TFM__BATCH, d_model] the residual stream of each token */
    float *xn, *xn2;            /* [TFM__BATCH, d_model] normalized inputs of the sublayers */
    float *attn_out, *ffn_out;  /* [TFM__BATCH, d_model] sublayer outputs */
    float *q;                   /* [TFM__BATCH, q_dim] queries */
    float *att;                 /* [TFM__BATCH, q_dim] attention output, heads side by side */
    float *up, *gate;           /* [TFM__BATCH, d_ff] FFN hidden */
    float *scores;              /* [n_heads, n_ctx] attention weights, one row per head */
    float *logits;              /* [n_vocab] of the last evaluated token */
    float *rope_cos, *rope_sin; /* [n_ctx, rope_dim/2] (RoPE only) */
    float *alibi;               /* [n_heads] slopes (ALiBi only) */
    float *pos_table;           /* [n_ctx, d_model] (sinusoidal only) */
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
    return base ? TFM__CAST(float *, tfm__at(base, at)) : NULL;
}

/* Lay out every array of s after the struct itself; base NULL only sizes. */
TFM_PRIVATE void tfm__session_layout(tfm_session *s, const tfm_config *c, unsigned char *base, tfm__plan *p) {
    size_t d = (size_t)c->d_model, q_dim = (size_t)c->n_heads * (size_t)c->d_head, ctx = (size_t)s->n_ctx;
    size_t kv_dim = (size_t)c->n_kv_heads * (size_t)c->d_head, half = (size_t)c->rope_dim / 2;
    size_t nb = TFM__BATCH;
    bool rope = c->pos == TFM_POS_ROPE_HALF || c->pos == TFM_POS_ROPE_INTERLEAVED;
    p->bytes = sizeof(tfm_session);
    p->overflow = false;
    s->k_cache = tfm__carve(p, base, (size_t)c->n_layers, ctx, kv_dim);
    s->v_cache = tfm__carve(p, base, (size_t)c->n_layers, ctx, kv_dim);
    s->x = tfm__carve(p, base, nb, d, 1);
    s->xn = tfm__carve(p, base, nb, d, 1);
    s->xn2 = tfm__carve(p, base, nb, d, 1);
    s->attn_out = tfm__carve(p, base, nb, d, 1);
    s->ffn_out = tfm__carve(p, base, nb, d, 1);
    s->q = tfm__carve(p, base, nb, q_dim, 1);
    s->att = tfm__carve(p, base, nb, q_dim, 1);
    s->up = tfm__carve(p, base, nb, (size_t)c->d_ff, 1);
    s->gate = tfm__carve(p, base, nb, (size_t)c->d_ff, 1);
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
    if (out->n_ctx < 0 || out->n_ctx > TFM_MAX_CTX || out->n_threads < 0 || out->n_threads > TFM__MAX_THREADS)
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
   One transformer step for a batch of n_b consecutive tokens (1 when decoding) at positions
   pos..pos+n_b-1, reading the architecture from the config:
     x = embed(token) (+ position vector)
     for each layer: x = block(x)         (the residual layout decides how attn and FFN combine)
     logits = W_out norm(x) (+ b_out)
   Batch arrays are [n_b, width] row-major. Parallel work (matrix rows, attention heads) goes
   through tfm__run_tasks. */

/* Run task(ctx, i) for i in [0, n_tasks): on the host's parallel_for, as OpenMP tasks, or in a
   loop. Tasks write disjoint outputs, so the order and the thread never change a result.
   OpenMP: eval opens ONE parallel region per call (tfm__eval_team) and the step runs on the
   calling thread; the others wait at the region's end, where they run tasks. Each parallel
   pass becomes tasks plus a taskwait, which the calling thread helps to execute. A helper that
   the OS has descheduled (a busy machine) then mostly costs nothing: the calling thread runs
   the tasks instead of waiting at a barrier for it, which with a parallel-for per matrix
   product would happen dozens of times per token. */
typedef struct tfm__task_call {
    tfm_task_fn fn;
    void *ctx;
} tfm__task_call;

TFM_PRIVATE void tfm__run_tasks(const tfm_session *s, int n_tasks, tfm_task_fn fn, void *ctx) {
    int t;
    if (s->parallel_for && n_tasks > 1) {
        s->parallel_for(s->parallel_user, n_tasks, fn, ctx);
        return;
    }
#ifdef TFM__OPENMP
    if (s->n_threads > 1 && n_tasks > 1 && omp_in_parallel()) {
        tfm__task_call call; /* shared by the tasks (clang 14 crashes on a bare function-pointer task) */
        call.fn = fn;
        call.ctx = ctx;
        for (t = 0; t < n_tasks; t++) {
#pragma omp task firstprivate(t) shared(call)
            call.fn(call.ctx, t);
        }
#pragma omp taskwait
        return;
    }
#endif
    for (t = 0; t < n_tasks; t++) fn(ctx, t);
}

#define TFM__MAX_FUSED 3 /* matrices sharing one input that one parallel pass computes (q, k, v) */

/* Up to TFM__MAX_FUSED products y_k = W_k x (+ b_k) over the same input batch, split as one
   range of rows (the rows of W_0, then W_1, ...): one parallel pass instead of three. */
typedef struct tfm__matmul_job {
    const tfm__tensor *w[TFM__MAX_FUSED];
    const float *b[TFM__MAX_FUSED];
    float *y[TFM__MAX_FUSED];
    size_t y_stride[TFM__MAX_FUSED];
    int n_w;
    const float *x;
    size_t x_stride;
    int n_b, rows, rows_per_task;
} tfm__matmul_job;

TFM_PRIVATE void tfm__matmul_task(void *ctx, int t) {
    const tfm__matmul_job *j = TFM__CAST(const tfm__matmul_job *, ctx);
    int r0 = t * j->rows_per_task, r1 = r0 + j->rows_per_task, base = 0, k;
    for (k = 0; k < j->n_w; base += j->w[k]->rows, k++) {
        int lo = r0 > base ? r0 : base, hi = r1 < base + j->w[k]->rows ? r1 : base + j->w[k]->rows;
        if (lo < hi)
            tfm__matmul_rows(j->w[k], j->x, j->x_stride, j->b[k], j->y[k], j->y_stride[k], j->n_b, lo - base,
                             hi - base);
    }
}

/* Run a filled job: rows split across the session's tasks (or all on this thread). */
TFM_PRIVATE void tfm__matmul_run(const tfm_session *s, tfm__matmul_job *job) {
    int n_tasks = s->n_tasks, k;
    for (k = 0, job->rows = 0; k < job->n_w; k++) job->rows += job->w[k]->rows;
    if (n_tasks <= 1 || job->rows < 2 * TFM__MIN_ROWS_PER_TASK ||
        (size_t)job->rows * (size_t)job->w[0]->cols * (size_t)job->n_b < TFM__MIN_PARALLEL_WORK)
        n_tasks = 1;
    job->rows_per_task = (job->rows + n_tasks - 1) / n_tasks;
    job->rows_per_task = (job->rows_per_task + 3) / 4 * 4; /* whole blocks of the 4-row kernels */
    if (n_tasks > 1 && job->rows_per_task < TFM__MIN_ROWS_PER_TASK) job->rows_per_task = TFM__MIN_ROWS_PER_TASK;
    n_tasks = (job->rows + job->rows_per_task - 1) / job->rows_per_task;
    tfm__run_tasks(s, n_tasks, tfm__matmul_task, job);
}

/* Add y = W x (+ bias) to a job (its input x and batch are set by the caller). */
TFM_PRIVATE void tfm__job_add(tfm__matmul_job *job, const tfm__tensor *w, const float *bias, float *y,
                              size_t y_stride) {
    TFM_ASSERT(job->n_w < TFM__MAX_FUSED);
    job->w[job->n_w] = w;
    job->b[job->n_w] = bias;
    job->y[job->n_w] = y;
    job->y_stride[job->n_w] = y_stride;
    job->n_w++;
}

TFM_PRIVATE void tfm__job_init(tfm__matmul_job *job, const float *x, size_t x_stride, int n_b) {
    memset(job, 0, sizeof *job);
    job->x = x;
    job->x_stride = x_stride;
    job->n_b = n_b;
}

/* y[b] = W x[b] (+ bias) for the batch. */
TFM_PRIVATE void tfm__matmul(const tfm_session *s, const tfm__tensor *w, const float *x, size_t x_stride,
                             const float *bias, float *y, size_t y_stride, int n_b) {
    tfm__matmul_job job;
    tfm__job_init(&job, x, x_stride, n_b);
    tfm__job_add(&job, w, bias, y, y_stride);
    tfm__matmul_run(s, &job);
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
    int layer, pos, n_b;
} tfm__attn_job;

/* Task h: head h for every token of the batch, in order (token b sees positions 0..pos+b).
   Query head h reads kv head h / (n_heads / n_kv_heads): grouped-query attention, where a
   group of query heads shares one key/value head to shrink the cache. */
TFM_PRIVATE void tfm__attn_task(void *ctx, int h) {
    const tfm__attn_job *job = TFM__CAST(const tfm__attn_job *, ctx);
    const tfm_session *s = job->s;
    const tfm_config *c = &s->model->config;
    size_t kv_dim = (size_t)c->n_kv_heads * (size_t)c->d_head, q_dim = (size_t)c->n_heads * (size_t)c->d_head;
    size_t layer_at = (size_t)job->layer * (size_t)s->n_ctx * kv_dim;
    size_t kv_col = (size_t)(h / (c->n_heads / c->n_kv_heads)) * (size_t)c->d_head;
    size_t q_at = (size_t)h * (size_t)c->d_head;
    int b;
    for (b = 0; b < job->n_b; b++)
        tfm__attention_head(s->q + (size_t)b * q_dim + q_at, s->k_cache + layer_at + kv_col,
                            s->v_cache + layer_at + kv_col, kv_dim, c->d_head, job->pos + b + 1,
                            s->alibi ? s->alibi[h] : 0.0f, s->scores + (size_t)h * (size_t)s->n_ctx,
                            s->att + (size_t)b * q_dim + q_at);
}

/* RoPE on every query and key head of the batch, token b at position pos + b. */
TFM_PRIVATE void tfm__rope_batch(const tfm_session *s, float *k_rows, int n_b, int pos) {
    const tfm_config *c = &s->model->config;
    size_t half = (size_t)c->rope_dim / 2, dh = (size_t)c->d_head;
    size_t q_dim = (size_t)c->n_heads * dh, kv_dim = (size_t)c->n_kv_heads * dh;
    bool inter = c->pos == TFM_POS_ROPE_INTERLEAVED;
    int b, h;
    for (b = 0; b < n_b; b++) {
        const float *cos_t = s->rope_cos + (size_t)(pos + b) * half, *sin_t = s->rope_sin + (size_t)(pos + b) * half;
        float *q = s->q + (size_t)b * q_dim, *k = k_rows + (size_t)b * kv_dim;
        for (h = 0; h < c->n_heads; h++) tfm__rope(q + (size_t)h * dh, c->rope_dim, cos_t, sin_t, inter);
        for (h = 0; h < c->n_kv_heads; h++) tfm__rope(k + (size_t)h * dh, c->rope_dim, cos_t, sin_t, inter);
    }
}

/* Self-attention sublayer, in [n_b, d_model] -> out [n_b, d_model]:
   q = Wq in + bq, k = Wk in + bk, v = Wv in + bv (k, v written straight into cache rows
   pos..pos+n_b-1), RoPE on every head of q and k, each head attends over the positions up to
   its own, out = Wo att + bo. */
TFM_PRIVATE void tfm__attn_block(tfm_session *s, int l, const float *in, float *out, int n_b, int pos) {
    const tfm_config *c = &s->model->config;
    const tfm__layer *L = &s->model->layers[l];
    size_t d = (size_t)c->d_model, kv_dim = (size_t)c->n_kv_heads * (size_t)c->d_head;
    size_t q_dim = (size_t)c->n_heads * (size_t)c->d_head;
    size_t row_at = ((size_t)l * (size_t)s->n_ctx + (size_t)pos) * kv_dim;
    tfm__attn_job job;
    tfm__matmul_job qkv;
    int h;
    tfm__job_init(&qkv, in, d, n_b);
    tfm__job_add(&qkv, &L->wq, L->bq, s->q, q_dim);
    tfm__job_add(&qkv, &L->wk, L->bk, s->k_cache + row_at, kv_dim);
    tfm__job_add(&qkv, &L->wv, L->bv, s->v_cache + row_at, kv_dim);
    tfm__matmul_run(s, &qkv);
    if (s->rope_cos) tfm__rope_batch(s, s->k_cache + row_at, n_b, pos);
    job.s = s;
    job.layer = l;
    job.pos = pos;
    job.n_b = n_b;
    if ((size_t)q_dim * (size_t)n_b * (size_t)(pos + n_b) < TFM__MIN_PARALLEL_WORK) {
        for (h = 0; h < c->n_heads; h++) tfm__attn_task(&job, h); /* short context: not worth a sync */
    } else {
        tfm__run_tasks(s, c->n_heads, tfm__attn_task, &job);
    }
    tfm__matmul(s, &L->wo, s->att, q_dim, L->bo, out, d, n_b);
}

/* Feed-forward sublayer, in [n_b, d_model] -> out [n_b, d_model]:
     plain:  out = W_down act(W_up in + b_up) + b_down
     gated:  out = W_down (act(W_gate in + b_gate) * (W_up in + b_up)) + b_down  (SwiGLU, GeGLU)
   Why: attention only mixes information between positions; the FFN is where each position is
   transformed on its own, through a wider hidden layer (d_ff) and a nonlinearity. */
TFM_PRIVATE void tfm__ffn_block(tfm_session *s, int l, const float *in, float *out, int n_b) {
    const tfm_config *c = &s->model->config;
    const tfm__layer *L = &s->model->layers[l];
    size_t d = (size_t)c->d_model, ff = (size_t)c->d_ff, n = (size_t)n_b * ff, i;
    tfm__matmul_job job;
    tfm__job_init(&job, in, d, n_b);
    tfm__job_add(&job, &L->w_up, L->b_up, s->up, ff);
    if (c->ffn == TFM_FFN_GATED) tfm__job_add(&job, &L->w_gate, L->b_gate, s->gate, ff);
    tfm__matmul_run(s, &job);
    if (c->ffn == TFM_FFN_GATED) {
        for (i = 0; i < n; i++) s->up[i] *= tfm__act(c->act, s->gate[i]);
    } else {
        for (i = 0; i < n; i++) s->up[i] = tfm__act(c->act, s->up[i]);
    }
    tfm__matmul(s, &L->w_down, s->up, ff, L->b_down, out, d, n_b);
}

/* out[b] = norm(x[b]) for the n_b rows, with the config's norm. */
TFM_PRIVATE void tfm__norm_rows(const tfm_model *m, float *out, const float *x, const float *w, const float *bias,
                                int n_b) {
    size_t d = (size_t)m->config.d_model;
    int b;
    for (b = 0; b < n_b; b++) {
        if (m->config.norm == TFM_NORM_RMSNORM)
            tfm__rmsnorm(out + (size_t)b * d, x + (size_t)b * d, w, m->config.d_model, m->config.norm_eps);
        else
            tfm__layernorm(out + (size_t)b * d, x + (size_t)b * d, w, bias, m->config.d_model, m->config.norm_eps);
    }
}

/* One block on the residual stream x, in the file's layout:
     sequential:       x += attn(ln1 x);  x += ffn(ln2 x)
     parallel:         x += attn(ln1 x) + ffn(ln2 x)   (both norms read the same x)
     parallel shared:  x += attn(ln1 x) + ffn(ln1 x) */
TFM_PRIVATE void tfm__layer_step(tfm_session *s, int l, int n_b, int pos) {
    const tfm_model *m = s->model;
    const tfm__layer *L = &m->layers[l];
    size_t n = (size_t)n_b * (size_t)m->config.d_model, i;
    tfm__norm_rows(m, s->xn, s->x, L->ln1_w, L->ln1_b, n_b);
    tfm__attn_block(s, l, s->xn, s->attn_out, n_b, pos);
    switch (m->config.residual) {
    case TFM_RESIDUAL_SEQUENTIAL:
        for (i = 0; i < n; i++) s->x[i] += s->attn_out[i];
        tfm__norm_rows(m, s->xn2, s->x, L->ln2_w, L->ln2_b, n_b);
        tfm__ffn_block(s, l, s->xn2, s->ffn_out, n_b);
        break;
    case TFM_RESIDUAL_PARALLEL:
        tfm__norm_rows(m, s->xn2, s->x, L->ln2_w, L->ln2_b, n_b);
        tfm__ffn_block(s, l, s->xn2, s->ffn_out, n_b);
        for (i = 0; i < n; i++) s->x[i] += s->attn_out[i];
        break;
    case TFM_RESIDUAL_PARALLEL_SHARED:
    default:
        tfm__ffn_block(s, l, s->xn, s->ffn_out, n_b);
        for (i = 0; i < n; i++) s->x[i] += s->attn_out[i];
        break;
    }
    for (i = 0; i < n; i++) s->x[i] += s->ffn_out[i];
}

/* x[b] = the embedding row of tokens[b] plus, for learned or sinusoidal positions, the vector
   of position pos + b. */
TFM_PRIVATE void tfm__embed(tfm_session *s, const int32_t *tokens, int n_b, int pos) {
    const tfm_model *m = s->model;
    size_t d = (size_t)m->config.d_model, i;
    int b;
    for (b = 0; b < n_b; b++) {
        float *x = s->x + (size_t)b * d;
        tfm__tensor_row(&m->tok_embd, (int)tokens[b], x);
        if (m->config.pos == TFM_POS_LEARNED) {
            tfm__tensor_row(&m->pos_embd, pos + b, s->xn);
            for (i = 0; i < d; i++) x[i] += s->xn[i];
        } else if (m->config.pos == TFM_POS_SINUSOIDAL) {
            const float *pe = s->pos_table + (size_t)(pos + b) * d;
            for (i = 0; i < d; i++) x[i] += pe[i];
        }
    }
}

/* The whole step for tokens[0..n_b) at pos.. (cache rows < pos must be valid). logits: NULL
   to skip the output projection (prompt tokens nobody reads), else [n_b, n_vocab] when all,
   or [n_vocab] for the last token only. */
TFM_PRIVATE tfm_result tfm__forward(tfm_session *s, const int32_t *tokens, int n_b, int pos, float *logits,
                                    bool all) {
    const tfm_model *m = s->model;
    size_t d = (size_t)m->config.d_model;
    int l, first = all ? 0 : n_b - 1;
    tfm__embed(s, tokens, n_b, pos);
    for (l = 0; l < m->config.n_layers; l++) {
        if (s->should_abort && s->should_abort(s->abort_user)) return TFM_ERR_CANCELLED;
        tfm__layer_step(s, l, n_b, pos);
    }
    if (!logits) return TFM_OK;
    tfm__norm_rows(m, s->xn, s->x + (size_t)first * d, m->lnf_w, m->lnf_b, n_b - first);
    tfm__matmul(s, &m->w_out, s->xn, d, m->b_out, logits, (size_t)m->config.n_vocab, n_b - first);
    return TFM_OK;
}

/* Evaluate tokens[0..n_tokens) at pos.. in batches of TFM__BATCH (arguments already checked),
   advancing n_past batch by batch. logits_all [n_tokens, n_vocab] or NULL: then only the last
   token's logits are computed, into s->logits. */
TFM_PRIVATE tfm_result tfm__eval_batches(tfm_session *s, const int32_t *tokens, int n_tokens, int pos,
                                         float *logits_all) {
    size_t n_vocab = (size_t)s->model->config.n_vocab;
    tfm_result r;
    int i, n_b;
    for (i = 0; i < n_tokens; i += n_b) {
        float *out = logits_all ? logits_all + (size_t)i * n_vocab : NULL;
        n_b = n_tokens - i < TFM__BATCH ? n_tokens - i : TFM__BATCH;
        if (!logits_all && i + n_b == n_tokens) out = s->logits;
        if ((r = tfm__forward(s, tokens + i, n_b, pos + i, out, logits_all != NULL)) != TFM_OK) return r;
        s->n_past = pos + i + n_b;
    }
    return TFM_OK;
}

/* tfm__eval_batches on the calling thread, inside one OpenMP team when the session has threads
   (see tfm__run_tasks). */
TFM_PRIVATE tfm_result tfm__eval_team(tfm_session *s, const int32_t *tokens, int n_tokens, int pos,
                                      float *logits_all) {
    tfm_result r = TFM_OK;
#ifdef TFM__OPENMP
    if (s->n_threads > 1 && !s->parallel_for) {
#pragma omp parallel num_threads(s->n_threads)
#pragma omp master /* the calling thread, so should_abort runs where the caller expects */
        r = tfm__eval_batches(s, tokens, n_tokens, pos, logits_all);
        return r;
    }
#endif
    r = tfm__eval_batches(s, tokens, n_tokens, pos, logits_all);
    return r;
}

/* >>tokenizer ------------------------------------------------------------------------------------
   Text <-> token ids. Two kinds share one table layout (see the TOKENIZER BLOB in the top
   comment; the blob must outlive the tokenizer, texts and merges are read in place):
   - TFM_TOKENIZER_BPE_BYTES: byte-level BPE exactly as Hugging Face tokenizers runs it for
     GPT-2 / GPT-NeoX. Added tokens (TFM_TOKATTR_ADDED) are cut out of the raw text first
     (leftmost, longest); each piece between them is NFC-normalized (TFM_TOKFLAG_NFC), split by
       's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
     (TFM_PRETOK_GPT2; a hand-written scanner over the Unicode tables below, \s = White_Space;
     TFM_PRETOK_GPT2_DIGITS first cuts out every \p{N} code point as a piece of its own, as
     HF's Digits(individual_digits) does with Rust's char::is_numeric, the same set;
     TFM_PRETOK_LLAMA3 splits by Llama-3's pattern instead, a second hand-written scanner:
       (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
       \s*[\r\n]+|\s+(?!\S)|\s+
     where (?i) also lets U+017F (long s) match s, as Oniguruma's case folding does;
     TFM_PRETOK_QWEN2 is the same with \p{N} for \p{N}{1,3}), and each
     pre-token's bytes merge from single-byte tokens by rank (lowest first, leftmost on ties);
     with TFM_TOKFLAG_IGNORE_MERGES a pre-token that is itself a token is taken whole.
   - TFM_TOKENIZER_SPM: SentencePiece-style BPE as llama2.c's run.c: an optional dummy-prefix
     space (TFM_TOKFLAG_PREFIX_SPACE: before each text segment between added tokens, as
     llama.cpp and HF's Prepend(U+2581) normalizer; TFM_TOKFLAG_PREFIX_FIRST and
     TFM_TOKFLAG_PREFIX_UNLESS_SPACE narrow it to HF's Metaspace prepend_scheme first/always),
     each code point its token or else its bytes' TFM_TOKATTR_BYTE tokens (or unk_id), then the
     adjacent pair whose concatenation is a token of the highest score merges (leftmost on
     ties) until none does. A blob with merges (from a Llama-style tokenizer.json, byte_fallback
     BPE) merges by rank instead: the pair that has the merge of lowest rank, exactly HF BPE.
     The text is merged word by word (split before each space that follows a non-space), which
     is exact because SentencePiece pieces never hold a space after a non-space. Spaces are
     stored as ' ' (the converter turns U+2581 into a space), so a U+2581 in the input text is
     an ordinary character here, where HF's Replace(" ", U+2581) would make it a space.
   Encoding allocates nothing and uses at most about 7 KiB of stack (6.5 KiB measured with gcc
   -O2 -fstack-usage on x86-64). Limits (documented deviations):
   - A pre-token (an SPM word) longer than TFM__BPE_MAX_BYTES (1024) bytes is merged in
     consecutive chunks of at most 1024 bytes cut at character starts; shorter ones match
     exactly. Where NFC changes the text, pre-tokens are exact up to 512 bytes.
   - NFC treats at most TFM__NFC_MAX_RUN (32) code points (a starter and its combining marks)
     as one unit; longer runs of combining marks are normalized in units of 32.
   - Bytes that are not valid UTF-8 become single-byte pre-tokens (HF accepts only valid text);
     the bytes C0, C1, F5..FF, which UTF-8 never uses, may lack a token (GPT-NeoX has none):
     they then encode as unk_id, or to nothing without one. Likewise a SentencePiece code
     point without a token whose bytes lack some <0xNN> token gives unk_id per such byte (HF:
     one unk_id for the code point, consecutive ones fused with fuse_unk).
   - Added tokens are all matched in one pass on the raw text (HF matches normalized=true ones
     after normalizing; the same for the whitespace runs of GPT-NeoX, which NFC never changes).
   Decoding gives each token's raw bytes through a tfm_utf8_stream: complete characters only,
   U+FFFD for each maximal invalid subpart (Python's errors="replace"); it does not strip the
   SentencePiece dummy-prefix space after BOS (run.c does). */

/* generated by tools/gen_unicode.py from Unicode 14.0.0 (Python unicodedata); do not edit.
   1534 class runs, 549 NFC-flag runs, 571 ccc runs, 2061 decompositions, 941 compositions;
   no code point below U+0300 needs NFC attention; full decompositions are at most 4
   code points long. */
#define TFM__UC_FIRST_NFC 0x300u
#define TFM__UC_MAX_DECOMP 4
static const uint32_t tfm__uc_class[1534] = {
    0x0,0x27,0x38,0x83,0x84,0xc2,0xe8,0x105,0x16c,
    0x185,0x1ec,0x217,0x218,0x283,0x284,0x2a9,0x2ac,0x2ca,
    0x2d0,0x2d5,0x2d8,0x2e6,0x2e9,0x2ec,0x2f2,0x2fc,0x301,
    0x35c,0x361,0x3dc,0x3e1,0xb08,0xb19,0xb48,0xb81,0xb94,
    0xbb1,0xbb4,0xbb9,0xbbc,0xdc1,0xdd4,0xdd9,0xde0,0xde9,
    0xdf8,0xdfd,0xe00,0xe19,0xe1c,0xe21,0xe2c,0xe31,0xe34,
    0xe39,0xe88,0xe8d,0xfd8,0xfdd,0x1208,0x1229,0x14c0,0x14c5,
    0x155c,0x1565,0x1568,0x1581,0x1624,0x1741,0x17ac,0x17bd,0x17cc,
    0x1881,0x192c,0x1982,0x19a8,0x19b9,0x19c0,0x19c5,0x1b50,0x1b55,
    0x1b58,0x1b95,0x1b9c,0x1bb9,0x1bc2,0x1be9,0x1bf4,0x1bfd,0x1c00,
    0x1c41,0x1c44,0x1c49,0x1cc0,0x1d35,0x1e98,0x1ec5,0x1ec8,0x1f02,
    0x1f29,0x1fac,0x1fd1,0x1fd8,0x1fe9,0x1fec,0x2001,0x2058,0x2069,
    0x206c,0x2091,0x2094,0x20a1,0x20a4,0x2101,0x2164,0x2181,0x21ac,
    0x21c1,0x2220,0x2225,0x223c,0x2281,0x2328,0x2411,0x24e8,0x24f5,
    0x24f8,0x2541,0x2544,0x2561,0x2588,0x259a,0x25c0,0x25c5,0x2604,
    0x2615,0x2634,0x263d,0x2644,0x264d,0x26a4,0x26a9,0x26c4,0x26c9,
    0x26cc,0x26d9,0x26e8,0x26f5,0x26f8,0x2739,0x273c,0x2771,0x2778,
    0x277d,0x2788,0x279a,0x27c1,0x27c8,0x27d2,0x27e8,0x27f1,0x27f4,
    0x2815,0x282c,0x283d,0x2844,0x284d,0x28a4,0x28a9,0x28c4,0x28c9,
    0x28d0,0x28d5,0x28dc,0x28e1,0x28e8,0x2965,0x2974,0x2979,0x297c,
    0x299a,0x29c0,0x29c9,0x29d4,0x2a15,0x2a38,0x2a3d,0x2a48,0x2a4d,
    0x2aa4,0x2aa9,0x2ac4,0x2ac9,0x2ad0,0x2ad5,0x2ae8,0x2af5,0x2af8,
    0x2b41,0x2b44,0x2b81,0x2b88,0x2b9a,0x2bc0,0x2be5,0x2be8,0x2c15,
    0x2c34,0x2c3d,0x2c44,0x2c4d,0x2ca4,0x2ca9,0x2cc4,0x2cc9,0x2cd0,
    0x2cd5,0x2ce8,0x2cf5,0x2cf8,0x2d71,0x2d78,0x2d7d,0x2d88,0x2d9a,
    0x2dc0,0x2dc5,0x2dca,0x2de0,0x2e0d,0x2e10,0x2e15,0x2e2c,0x2e39,
    0x2e44,0x2e49,0x2e58,0x2e65,0x2e6c,0x2e71,0x2e74,0x2e79,0x2e80,
    0x2e8d,0x2e94,0x2ea1,0x2eac,0x2eb9,0x2ee8,0x2f41,0x2f44,0x2f9a,
    0x2fcc,0x3015,0x3034,0x3039,0x3044,0x3049,0x30a4,0x30a9,0x30e8,
    0x30f5,0x30f8,0x3161,0x316c,0x3175,0x3178,0x3181,0x3188,0x319a,
    0x31c0,0x31e2,0x31fc,0x3201,0x3204,0x3215,0x3234,0x3239,0x3244,
    0x3249,0x32a4,0x32a9,0x32d0,0x32d5,0x32e8,0x32f5,0x32f8,0x3375,
    0x337c,0x3381,0x3388,0x339a,0x33c0,0x33c5,0x33cc,0x3411,0x3434,
    0x3439,0x3444,0x3449,0x34ec,0x34f5,0x34f8,0x3539,0x353c,0x3551,
    0x355c,0x3562,0x357d,0x3588,0x359a,0x35e4,0x35e9,0x3600,0x3615,
    0x365c,0x3669,0x36c8,0x36cd,0x36f0,0x36f5,0x36f8,0x3701,0x371c,
    0x379a,0x37c0,0x3805,0x38c4,0x38c9,0x38d0,0x3901,0x391c,0x3942,
    0x3968,0x3a05,0x3a0c,0x3a11,0x3a14,0x3a19,0x3a2c,0x3a31,0x3a90,
    0x3a95,0x3a98,0x3a9d,0x3ac4,0x3ac9,0x3ad0,0x3af5,0x3af8,0x3b01,
    0x3b14,0x3b19,0x3b1c,0x3b42,0x3b68,0x3b71,0x3b80,0x3c01,0x3c04,
    0x3c82,0x3cd0,0x3d01,0x3d20,0x3d25,0x3db4,0x3e21,0x3e34,0x4001,
    0x40ac,0x40fd,0x4102,0x4128,0x4141,0x4158,0x4169,0x4178,0x4185,
    0x4188,0x4195,0x419c,0x41b9,0x41c4,0x41d5,0x4208,0x4239,0x423c,
    0x4242,0x4268,0x4281,0x4318,0x431d,0x4320,0x4335,0x4338,0x4341,
    0x43ec,0x43f1,0x4924,0x4929,0x4938,0x4941,0x495c,0x4961,0x4964,
    0x4969,0x4978,0x4981,0x4a24,0x4a29,0x4a38,0x4a41,0x4ac4,0x4ac9,
    0x4ad8,0x4ae1,0x4afc,0x4b01,0x4b04,0x4b09,0x4b18,0x4b21,0x4b5c,
    0x4b61,0x4c44,0x4c49,0x4c58,0x4c61,0x4d6c,0x4da6,0x4df4,0x4e01,
    0x4e40,0x4e81,0x4fd8,0x4fe1,0x4ff8,0x5005,0x59b4,0x59bd,0x5a03,
    0x5a05,0x5a6c,0x5a81,0x5bac,0x5bba,0x5bc5,0x5be4,0x5c01,0x5c48,
    0x5c7d,0x5cc8,0x5d01,0x5d48,0x5d81,0x5db4,0x5db9,0x5dc4,0x5e01,
    0x5ed0,0x5f5d,0x5f60,0x5f71,0x5f74,0x5f82,0x5fa8,0x5fc2,0x5fe8,
    0x6042,0x6068,0x6081,0x61e4,0x6201,0x6214,0x621d,0x62a4,0x62a9,
    0x62ac,0x62c1,0x63d8,0x6401,0x647c,0x651a,0x6541,0x65b8,0x65c1,
    0x65d4,0x6601,0x66b0,0x66c1,0x6728,0x6742,0x676c,0x6801,0x685c,
    0x6881,0x6954,0x6a02,0x6a28,0x6a42,0x6a68,0x6a9d,0x6aa0,0x6c15,
    0x6cd0,0x6d15,0x6d34,0x6d42,0x6d68,0x6e0d,0x6e84,0x6eb9,0x6ec2,
    0x6ee9,0x6f98,0x7001,0x7090,0x7102,0x7128,0x7135,0x7142,0x7169,
    0x71f8,0x7201,0x7224,0x7241,0x72ec,0x72f5,0x7300,0x73a5,0x73b4,
    0x73b9,0x73d0,0x73d5,0x73dc,0x73e9,0x73ec,0x7401,0x7700,0x7801,
    0x7c58,0x7c61,0x7c78,0x7c81,0x7d18,0x7d21,0x7d38,0x7d41,0x7d60,
    0x7d65,0x7d68,0x7d6d,0x7d70,0x7d75,0x7d78,0x7d7d,0x7df8,0x7e01,
    0x7ed4,0x7ed9,0x7ef4,0x7ef9,0x7efc,0x7f09,0x7f14,0x7f19,0x7f34,
    0x7f41,0x7f50,0x7f59,0x7f70,0x7f81,0x7fb4,0x7fc9,0x7fd4,0x7fd9,
    0x7ff4,0x8003,0x802c,0x80a3,0x80a8,0x80bf,0x80c0,0x817f,0x8180,
    0x81c2,0x81c5,0x81c8,0x81d2,0x81e8,0x81fd,0x8202,0x8228,0x8241,
    0x8274,0x8409,0x840c,0x841d,0x8420,0x8429,0x8450,0x8455,0x8458,
    0x8465,0x8478,0x8491,0x8494,0x8499,0x849c,0x84a1,0x84a4,0x84a9,
    0x84b8,0x84bd,0x84e8,0x84f1,0x8500,0x8515,0x8528,0x8539,0x853c,
    0x8542,0x860d,0x8616,0x8628,0x9182,0x9270,0x93aa,0x9400,0x9dda,
    0x9e50,0xb001,0xb394,0xb3ad,0xb3bc,0xb3c9,0xb3d0,0xb3f6,0xb3f8,
    0xb401,0xb498,0xb49d,0xb4a0,0xb4b5,0xb4b8,0xb4c1,0xb5a0,0xb5bd,
    0xb5c0,0xb601,0xb65c,0xb681,0xb69c,0xb6a1,0xb6bc,0xb6c1,0xb6dc,
    0xb6e1,0xb6fc,0xb701,0xb71c,0xb721,0xb73c,0xb741,0xb75c,0xb761,
    0xb77c,0xb8bd,0xb8c0,0xc003,0xc004,0xc015,0xc01e,0xc020,0xc086,
    0xc0a8,0xc0c5,0xc0d8,0xc0e2,0xc0ed,0xc0f4,0xc105,0xc25c,0xc275,
    0xc280,0xc285,0xc3ec,0xc3f1,0xc400,0xc415,0xc4c0,0xc4c5,0xc63c,
    0xc64a,0xc658,0xc681,0xc700,0xc7c1,0xc800,0xc882,0xc8a8,0xc922,
    0xc940,0xc946,0xc980,0xca02,0xca28,0xcac6,0xcb00,0xd001,0x13700,
    0x13801,0x29234,0x29341,0x293f8,0x29401,0x29834,0x29841,0x29882,0x298a9,
    0x298b0,0x29901,0x299bc,0x299fd,0x29a78,0x29a81,0x29b9a,0x29bc0,0x29c5d,
    0x29c80,0x29c89,0x29e24,0x29e2d,0x29f2c,0x29f41,0x29f48,0x29f4d,0x29f50,
    0x29f55,0x29f68,0x29fc9,0x2a008,0x2a00d,0x2a018,0x2a01d,0x2a02c,0x2a031,
    0x2a08c,0x2a0c2,0x2a0d8,0x2a101,0x2a1d0,0x2a209,0x2a2d0,0x2a342,0x2a368,
    0x2a3c9,0x2a3e0,0x2a3ed,0x2a3f0,0x2a3f5,0x2a3fc,0x2a402,0x2a429,0x2a498,
    0x2a4c1,0x2a51c,0x2a581,0x2a5f4,0x2a611,0x2a6cc,0x2a73d,0x2a742,0x2a768,
    0x2a781,0x2a794,0x2a799,0x2a7c2,0x2a7e9,0x2a7fc,0x2a801,0x2a8a4,0x2a901,
    0x2a90c,0x2a911,0x2a930,0x2a942,0x2a968,0x2a981,0x2a9dc,0x2a9e9,0x2a9ec,
    0x2a9f9,0x2aac0,0x2aac5,0x2aac8,0x2aad5,0x2aadc,0x2aae5,0x2aaf8,0x2ab01,
    0x2ab04,0x2ab09,0x2ab0c,0x2ab6d,0x2ab78,0x2ab81,0x2abac,0x2abc9,0x2abd4,
    0x2ac05,0x2ac1c,0x2ac25,0x2ac3c,0x2ac45,0x2ac5c,0x2ac81,0x2ac9c,0x2aca1,
    0x2acbc,0x2acc1,0x2ad6c,0x2ad71,0x2ada8,0x2adc1,0x2af8c,0x2afc2,0x2afe8,
    0x2b001,0x35e90,0x35ec1,0x35f1c,0x35f2d,0x35ff0,0x3e401,0x3e9b8,0x3e9c1,
    0x3eb68,0x3ec01,0x3ec1c,0x3ec4d,0x3ec60,0x3ec75,0x3ec78,0x3ec7d,0x3eca4,
    0x3eca9,0x3ecdc,0x3ece1,0x3ecf4,0x3ecf9,0x3ecfc,0x3ed01,0x3ed08,0x3ed0d,
    0x3ed14,0x3ed19,0x3eec8,0x3ef4d,0x3f4f8,0x3f541,0x3f640,0x3f649,0x3f720,
    0x3f7c1,0x3f7f0,0x3f9c1,0x3f9d4,0x3f9d9,0x3fbf4,0x3fc42,0x3fc68,0x3fc85,
    0x3fcec,0x3fd05,0x3fd6c,0x3fd99,0x3fefc,0x3ff09,0x3ff20,0x3ff29,0x3ff40,
    0x3ff49,0x3ff60,0x3ff69,0x3ff74,0x40001,0x40030,0x40035,0x4009c,0x400a1,
    0x400ec,0x400f1,0x400f8,0x400fd,0x40138,0x40141,0x40178,0x40201,0x403ec,
    0x4041e,0x404d0,0x40502,0x405e4,0x4062a,0x40630,0x40a01,0x40a74,0x40a81,
    0x40b44,0x40b86,0x40bf0,0x40c01,0x40c82,0x40c90,0x40cb5,0x40d06,0x40d09,
    0x40d2a,0x40d2c,0x40d41,0x40dd8,0x40e01,0x40e78,0x40e81,0x40f10,0x40f21,
    0x40f40,0x40f46,0x40f58,0x41001,0x41278,0x41282,0x412a8,0x412c1,0x41350,
    0x41361,0x413f0,0x41401,0x414a0,0x414c1,0x41590,0x415c1,0x415ec,0x415f1,
    0x4162c,0x41631,0x4164c,0x41651,0x41658,0x4165d,0x41688,0x4168d,0x416c8,
    0x416cd,0x416e8,0x416ed,0x416f4,0x41801,0x41cdc,0x41d01,0x41d58,0x41d81,
    0x41da0,0x41e01,0x41e18,0x41e1d,0x41ec4,0x41ec9,0x41eec,0x42001,0x42018,
    0x42021,0x42024,0x42029,0x420d8,0x420dd,0x420e4,0x420f1,0x420f4,0x420fd,
    0x42158,0x42162,0x42181,0x421dc,0x421e6,0x42201,0x4227c,0x4229e,0x422c0,
    0x42381,0x423cc,0x423d1,0x423d8,0x423ee,0x42401,0x4245a,0x42470,0x42481,
    0x424e8,0x42601,0x426e0,0x426f2,0x426f9,0x42702,0x42740,0x4274a,0x42801,
    0x42804,0x42841,0x42850,0x42855,0x42860,0x42865,0x428d8,0x42902,0x42924,
    0x42981,0x429f6,0x429fc,0x42a01,0x42a76,0x42a80,0x42b01,0x42b20,0x42b25,
    0x42b94,0x42bae,0x42bc0,0x42c01,0x42cd8,0x42d01,0x42d58,0x42d62,0x42d81,
    0x42dcc,0x42de2,0x42e01,0x42e48,0x42ea6,0x42ec0,0x43001,0x43124,0x43201,
    0x432cc,0x43301,0x433cc,0x433ea,0x43401,0x43490,0x434c2,0x434e8,0x43982,
    0x439fc,0x43a01,0x43aa8,0x43ac1,0x43ac8,0x43c01,0x43c76,0x43c9d,0x43ca0,
    0x43cc1,0x43d18,0x43d46,0x43d54,0x43dc1,0x43e08,0x43ec1,0x43f16,0x43f30,
    0x43f81,0x43fdc,0x4400d,0x440e0,0x4414a,0x441c0,0x441c5,0x441cc,0x441d5,
    0x441d8,0x4420d,0x442c0,0x44341,0x443a4,0x443c2,0x443e8,0x4440d,0x4449c,
    0x444da,0x44500,0x44511,0x44514,0x4451d,0x44520,0x44541,0x445cc,0x445d9,
    0x445dc,0x4460d,0x446cc,0x44705,0x44714,0x44742,0x44769,0x4476c,0x44771,
    0x44774,0x44786,0x447d4,0x44801,0x44848,0x4484d,0x448b0,0x44a01,0x44a1c,
    0x44a21,0x44a24,0x44a29,0x44a38,0x44a3d,0x44a78,0x44a7d,0x44aa4,0x44ac1,
    0x44b7c,0x44bc2,0x44be8,0x44c15,0x44c34,0x44c3d,0x44c44,0x44c4d,0x44ca4,
    0x44ca9,0x44cc4,0x44cc9,0x44cd0,0x44cd5,0x44ce8,0x44cf5,0x44cf8,0x44d41,
    0x44d44,0x44d75,0x44d88,0x45001,0x450d4,0x4511d,0x4512c,0x45142,0x45168,
    0x4517d,0x45188,0x45201,0x452c0,0x45311,0x45318,0x4531d,0x45320,0x45342,
    0x45368,0x45601,0x456bc,0x45761,0x45770,0x45801,0x458c0,0x45911,0x45914,
    0x45942,0x45968,0x45a01,0x45aac,0x45ae1,0x45ae4,0x45b02,0x45b28,0x45c01,
    0x45c6c,0x45cc2,0x45cf0,0x45d01,0x45d1c,0x46001,0x460b0,0x46281,0x46382,
    0x463cc,0x463fd,0x4641c,0x46425,0x46428,0x46431,0x46450,0x46455,0x4645c,
    0x46461,0x464c0,0x464fd,0x46500,0x46505,0x46508,0x46542,0x46568,0x46681,
    0x466a0,0x466a9,0x46744,0x46785,0x46788,0x4678d,0x46790,0x46801,0x46804,
    0x4682d,0x468cc,0x468e9,0x468ec,0x46941,0x46944,0x46971,0x46a28,0x46a75,
    0x46a78,0x46ac1,0x46be4,0x47001,0x47024,0x47029,0x470bc,0x47101,0x47104,
    0x47142,0x471b4,0x471c9,0x47240,0x47401,0x4741c,0x47421,0x47428,0x4742d,
    0x474c4,0x47519,0x4751c,0x47542,0x47568,0x47581,0x47598,0x4759d,0x475a4,
    0x475a9,0x47628,0x47661,0x47664,0x47682,0x476a8,0x47b81,0x47bcc,0x47ec1,
    0x47ec4,0x47f02,0x47f54,0x48001,0x48e68,0x49002,0x491bc,0x49201,0x49510,
    0x4be41,0x4bfc4,0x4c001,0x4d0bc,0x51001,0x5191c,0x5a001,0x5a8e4,0x5a901,
    0x5a97c,0x5a982,0x5a9a8,0x5a9c1,0x5aafc,0x5ab02,0x5ab28,0x5ab41,0x5abb8,
    0x5ac01,0x5acc0,0x5ad01,0x5ad10,0x5ad42,0x5ad68,0x5ad6e,0x5ad88,0x5ad8d,
    0x5ade0,0x5adf5,0x5ae40,0x5b901,0x5ba02,0x5ba5c,0x5bc01,0x5bd2c,0x5bd41,
    0x5bd44,0x5be4d,0x5be80,0x5bf81,0x5bf88,0x5bf8d,0x5bf90,0x5c001,0x61fe0,
    0x62001,0x63358,0x63401,0x63424,0x6bfc1,0x6bfd0,0x6bfd5,0x6bff0,0x6bff5,
    0x6bffc,0x6c001,0x6c48c,0x6c541,0x6c54c,0x6c591,0x6c5a0,0x6c5c1,0x6cbf0,
    0x6f001,0x6f1ac,0x6f1c1,0x6f1f4,0x6f201,0x6f224,0x6f241,0x6f268,0x74b82,
    0x74bd0,0x74d82,0x74de4,0x75001,0x75154,0x75159,0x75274,0x75279,0x75280,
    0x75289,0x7528c,0x75295,0x7529c,0x752a5,0x752b4,0x752b9,0x752e8,0x752ed,
    0x752f0,0x752f5,0x75310,0x75315,0x75418,0x7541d,0x7542c,0x75435,0x75454,
    0x75459,0x75474,0x75479,0x754e8,0x754ed,0x754fc,0x75501,0x75514,0x75519,
    0x7551c,0x75529,0x75544,0x75549,0x75a98,0x75aa1,0x75b04,0x75b09,0x75b6c,
    0x75b71,0x75bec,0x75bf1,0x75c54,0x75c59,0x75cd4,0x75cd9,0x75d3c,0x75d41,
    0x75dbc,0x75dc1,0x75e24,0x75e29,0x75ea4,0x75ea9,0x75f0c,0x75f11,0x75f30,
    0x75f3a,0x76000,0x77c01,0x77c7c,0x78401,0x784b4,0x784dd,0x784f8,0x78502,
    0x78528,0x78539,0x7853c,0x78a41,0x78ab8,0x78b01,0x78bb0,0x78bc2,0x78be8,
    0x79f81,0x79f9c,0x79fa1,0x79fb0,0x79fb5,0x79fbc,0x79fc1,0x79ffc,0x7a001,
    0x7a314,0x7a31e,0x7a340,0x7a401,0x7a510,0x7a52d,0x7a530,0x7a542,0x7a568,
    0x7b1c6,0x7b2b0,0x7b2b6,0x7b2c0,0x7b2c6,0x7b2d4,0x7b406,0x7b4b8,0x7b4be,
    0x7b4f8,0x7b801,0x7b810,0x7b815,0x7b880,0x7b885,0x7b88c,0x7b891,0x7b894,
    0x7b89d,0x7b8a0,0x7b8a5,0x7b8cc,0x7b8d1,0x7b8e0,0x7b8e5,0x7b8e8,0x7b8ed,
    0x7b8f0,0x7b909,0x7b90c,0x7b91d,0x7b920,0x7b925,0x7b928,0x7b92d,0x7b930,
    0x7b935,0x7b940,0x7b945,0x7b94c,0x7b951,0x7b954,0x7b95d,0x7b960,0x7b965,
    0x7b968,0x7b96d,0x7b970,0x7b975,0x7b978,0x7b97d,0x7b980,0x7b985,0x7b98c,
    0x7b991,0x7b994,0x7b99d,0x7b9ac,0x7b9b1,0x7b9cc,0x7b9d1,0x7b9e0,0x7b9e5,
    0x7b9f4,0x7b9f9,0x7b9fc,0x7ba01,0x7ba28,0x7ba2d,0x7ba70,0x7ba85,0x7ba90,
    0x7ba95,0x7baa8,0x7baad,0x7baf0,0x7c402,0x7c434,0x7efc2,0x7efe8,0x80001,
    0xa9b80,0xa9c01,0xadce4,0xadd01,0xae078,0xae081,0xb3a88,0xb3ac1,0xbaf84,
    0xbe001,0xbe878,0xc0001,0xc4d2c,
};
static const uint32_t tfm__uc_nfc_qc[549] = {
    0x0,0x601,0x69e,0x6a1,0x6e0,0x6e9,0x6ea,0x6fd,0x6fe,
    0x70f,0x710,0x907,0x910,0xb23,0xb7c,0xb7f,0xb80,0xb83,
    0xb86,0xb89,0xb8c,0xb8f,0xb90,0xc21,0xc36,0xc97,0xcc0,
    0xce1,0xce2,0xdad,0xdba,0xdbf,0xdca,0xdcf,0xdd2,0xdd5,
    0xddc,0xe23,0xe24,0xe61,0xe96,0xfd7,0xfe8,0xffb,0xffc,
    0x102d,0x1034,0x1037,0x1048,0x104b,0x1050,0x1053,0x105c,0x10b3,
    0x10b8,0x1131,0x1140,0x1195,0x11c4,0x11c7,0x1200,0x1279,0x127a,
    0x129b,0x129c,0x12a3,0x12aa,0x12b1,0x12c0,0x1379,0x137a,0x137d,
    0x137e,0x139b,0x139c,0x13af,0x13b0,0x13b9,0x13bc,0x13bf,0x13c0,
    0x13fd,0x13fe,0x1467,0x1468,0x146d,0x146e,0x1479,0x147a,0x149b,
    0x149c,0x14b3,0x14b8,0x14bd,0x14be,0x1579,0x157a,0x159b,0x159c,
    0x1679,0x167a,0x167d,0x167e,0x169b,0x169c,0x16ad,0x16b0,0x16b9,
    0x16bc,0x177d,0x177e,0x179b,0x179c,0x17af,0x17b0,0x1879,0x187a,
    0x189b,0x189c,0x18ab,0x18ae,0x1979,0x197a,0x1985,0x1986,0x199b,
    0x199c,0x19ab,0x19ae,0x1a77,0x1a7a,0x1a7d,0x1a7e,0x1a9b,0x1a9c,
    0x1aaf,0x1ab0,0x1b95,0x1b96,0x1b9f,0x1ba0,0x1bbf,0x1bc0,0x1c71,
    0x1c76,0x1c91,0x1c98,0x1d71,0x1d76,0x1d91,0x1d98,0x1e31,0x1e34,
    0x1e6b,0x1e6c,0x1e6f,0x1e70,0x1e73,0x1e74,0x1e87,0x1e88,0x1e9b,
    0x1e9c,0x1ea5,0x1ea6,0x1eaf,0x1eb0,0x1eb9,0x1eba,0x1ed3,0x1ed4,
    0x1ee3,0x1eee,0x1ef1,0x1ef2,0x1ef5,0x1efc,0x1f01,0x1f0a,0x1f0d,
    0x1f10,0x1f27,0x1f28,0x1f3b,0x1f3c,0x1f45,0x1f46,0x1f4f,0x1f50,
    0x1f59,0x1f5a,0x1f73,0x1f74,0x1f8d,0x1f8e,0x205d,0x205e,0x206f,
    0x2070,0x2073,0x2076,0x211b,0x211c,0x22c3,0x22ec,0x2351,0x2386,
    0x26bb,0x26c0,0x2e29,0x2e2c,0x2e69,0x2e6a,0x2fa5,0x2fa6,0x2fbb,
    0x2fbc,0x3153,0x3154,0x3273,0x3278,0x342f,0x3432,0x34c1,0x34c2,
    0x34eb,0x34fa,0x34ff,0x3500,0x3561,0x357c,0x357f,0x359e,0x3669,
    0x366c,0x3689,0x368a,0x36d7,0x36e8,0x3755,0x3758,0x37cd,0x37ce,
    0x37e5,0x37e8,0x386f,0x3870,0x39a1,0x39a6,0x39a9,0x39c2,0x39c5,
    0x39d2,0x39db,0x39dc,0x39e9,0x39ea,0x39f1,0x39f4,0x3b81,0x3c00,
    0x3ee3,0x3ee4,0x3ee7,0x3ee8,0x3eeb,0x3eec,0x3eef,0x3ef0,0x3ef3,
    0x3ef4,0x3ef7,0x3ef8,0x3efb,0x3efc,0x3f77,0x3f78,0x3f7d,0x3f7e,
    0x3f93,0x3f94,0x3f97,0x3f98,0x3fa7,0x3fa8,0x3fb7,0x3fb8,0x3fc7,
    0x3fc8,0x3fd7,0x3fd8,0x3fdd,0x3fe0,0x3ff3,0x3ff4,0x3ff7,0x3ff8,
    0x3ffb,0x3ffc,0x4001,0x4004,0x41a1,0x41ba,0x41c3,0x41c4,0x41cb,
    0x41e2,0x424d,0x424e,0x4255,0x4258,0x4653,0x4656,0x55b9,0x55ba,
    0x59df,0x59e4,0x5aff,0x5b00,0x5bc1,0x5c00,0x6055,0x6060,0x6133,
    0x6136,0x14cdf,0x14ce0,0x14ce9,0x14cfc,0x14d3d,0x14d40,0x14de1,0x14de4,
    0x1500d,0x1500e,0x15059,0x1505a,0x15189,0x1518a,0x151c1,0x151e4,0x15257,
    0x1525c,0x152a7,0x152a8,0x15367,0x15368,0x15381,0x15382,0x15561,0x15562,
    0x15565,0x1556a,0x1556f,0x15572,0x1557d,0x15580,0x15583,0x15584,0x155ed,
    0x155ee,0x157db,0x157dc,0x1f201,0x1f41c,0x1f421,0x1f422,0x1f425,0x1f426,
    0x1f42b,0x1f43e,0x1f441,0x1f442,0x1f445,0x1f446,0x1f44b,0x1f44e,0x1f455,
    0x1f4dc,0x1f4e1,0x1f5b4,0x1f63b,0x1f640,0x1f655,0x1f66e,0x1f671,0x1f67a,
    0x1f67d,0x1f67e,0x1f681,0x1f684,0x1f687,0x1f68a,0x1f68d,0x1f69e,0x1fc41,
    0x1fc60,0x203fb,0x203fc,0x205c1,0x205c2,0x206ed,0x206f6,0x2141b,0x2141c,
    0x2141f,0x21420,0x21471,0x21476,0x2147f,0x21480,0x215cb,0x215ce,0x21a49,
    0x21a50,0x21d57,0x21d5a,0x21e8d,0x21ea2,0x21f05,0x21f0c,0x2208d,0x2208e,
    0x220e1,0x220e2,0x220ff,0x22100,0x22173,0x22176,0x22201,0x22206,0x2224f,
    0x22250,0x22267,0x2226a,0x222e7,0x222e8,0x22381,0x22382,0x22395,0x22396,
    0x2246b,0x2246e,0x225d3,0x225d6,0x22677,0x2267a,0x2267d,0x2267e,0x2269b,
    0x2269c,0x226af,0x226b0,0x226cd,0x226da,0x226e1,0x226ea,0x22885,0x22886,
    0x2288d,0x2288e,0x228bd,0x228be,0x22961,0x22962,0x22975,0x22976,0x2297b,
    0x2297c,0x22985,0x22988,0x22b5f,0x22b60,0x22b7f,0x22b82,0x22c7f,0x22c80,
    0x22d6d,0x22d70,0x22e57,0x22e58,0x23073,0x23076,0x23261,0x23262,0x2327b,
    0x2327e,0x23287,0x23288,0x233c1,0x233c2,0x23469,0x2346a,0x2348f,0x23490,
    0x23533,0x23534,0x2387f,0x23880,0x23a85,0x23a86,0x23a89,0x23a8c,0x23b2f,
    0x23b30,0x2d5e1,0x2d5ea,0x2d661,0x2d66e,0x2dfe1,0x2dfe4,0x3793d,0x3793e,
    0x3a2bd,0x3a2d4,0x3a2db,0x3a2e6,0x3a2f7,0x3a306,0x3a30b,0x3a318,0x3a355,
    0x3a35c,0x3a377,0x3a382,0x3a485,0x3a48a,0x3c001,0x3c00e,0x3c011,0x3c032,
    0x3c037,0x3c044,0x3c047,0x3c04a,0x3c04d,0x3c056,0x3c261,0x3c26e,0x3c55d,
    0x3c55e,0x3c5d9,0x3c5e0,0x3d1a1,0x3d1ae,0x3d289,0x3d296,0x5f001,0x5f43c,
};
static const uint32_t tfm__uc_ccc[571] = {
    0x0,0x300e6,0x315e8,0x316dc,0x31ae8,0x31bd8,0x31cdc,0x321ca,0x323dc,
    0x327ca,0x329dc,0x33401,0x339dc,0x33de6,0x345f0,0x346e6,0x347dc,0x34ae6,
    0x34ddc,0x34f00,0x350e6,0x353dc,0x357e6,0x358e8,0x359dc,0x35be6,0x35ce9,
    0x35dea,0x35fe9,0x360ea,0x362e9,0x363e6,0x37000,0x483e6,0x48800,0x591dc,
    0x592e6,0x596dc,0x597e6,0x59ade,0x59bdc,0x59ce6,0x5a2dc,0x5a8e6,0x5aadc,
    0x5abe6,0x5adde,0x5aee4,0x5afe6,0x5b00a,0x5b10b,0x5b20c,0x5b30d,0x5b40e,
    0x5b50f,0x5b610,0x5b711,0x5b812,0x5b913,0x5bb14,0x5bc15,0x5bd16,0x5be00,
    0x5bf17,0x5c000,0x5c118,0x5c219,0x5c300,0x5c4e6,0x5c5dc,0x5c600,0x5c712,
    0x5c800,0x610e6,0x6181e,0x6191f,0x61a20,0x61b00,0x64b1b,0x64c1c,0x64d1d,
    0x64e1e,0x64f1f,0x65020,0x65121,0x65222,0x653e6,0x655dc,0x657e6,0x65cdc,
    0x65de6,0x65fdc,0x66000,0x67023,0x67100,0x6d6e6,0x6dd00,0x6dfe6,0x6e3dc,
    0x6e4e6,0x6e500,0x6e7e6,0x6e900,0x6eadc,0x6ebe6,0x6eddc,0x6ee00,0x71124,
    0x71200,0x730e6,0x731dc,0x732e6,0x734dc,0x735e6,0x737dc,0x73ae6,0x73bdc,
    0x73de6,0x73edc,0x73fe6,0x742dc,0x743e6,0x744dc,0x745e6,0x746dc,0x747e6,
    0x748dc,0x749e6,0x74b00,0x7ebe6,0x7f2dc,0x7f3e6,0x7f400,0x7fddc,0x7fe00,
    0x816e6,0x81a00,0x81be6,0x82400,0x825e6,0x82800,0x829e6,0x82e00,0x859dc,
    0x85c00,0x898e6,0x899dc,0x89ce6,0x8a000,0x8cae6,0x8cfdc,0x8d4e6,0x8e200,
    0x8e3dc,0x8e4e6,0x8e6dc,0x8e7e6,0x8e9dc,0x8eae6,0x8eddc,0x8f01b,0x8f11c,
    0x8f21d,0x8f3e6,0x8f6dc,0x8f7e6,0x8f9dc,0x8fbe6,0x90000,0x93c07,0x93d00,
    0x94d09,0x94e00,0x951e6,0x952dc,0x953e6,0x95500,0x9bc07,0x9bd00,0x9cd09,
    0x9ce00,0x9fee6,0x9ff00,0xa3c07,0xa3d00,0xa4d09,0xa4e00,0xabc07,0xabd00,
    0xacd09,0xace00,0xb3c07,0xb3d00,0xb4d09,0xb4e00,0xbcd09,0xbce00,0xc3c07,
    0xc3d00,0xc4d09,0xc4e00,0xc5554,0xc565b,0xc5700,0xcbc07,0xcbd00,0xccd09,
    0xcce00,0xd3b09,0xd3d00,0xd4d09,0xd4e00,0xdca09,0xdcb00,0xe3867,0xe3a09,
    0xe3b00,0xe486b,0xe4c00,0xeb876,0xeba09,0xebb00,0xec87a,0xecc00,0xf18dc,
    0xf1a00,0xf35dc,0xf3600,0xf37dc,0xf3800,0xf39d8,0xf3a00,0xf7181,0xf7282,
    0xf7300,0xf7484,0xf7500,0xf7a82,0xf7e00,0xf8082,0xf8100,0xf82e6,0xf8409,
    0xf8500,0xf86e6,0xf8800,0xfc6dc,0xfc700,0x103707,0x103800,0x103909,0x103b00,
    0x108ddc,0x108e00,0x135de6,0x136000,0x171409,0x171600,0x173409,0x173500,0x17d209,
    0x17d300,0x17dde6,0x17de00,0x18a9e4,0x18aa00,0x1939de,0x193ae6,0x193bdc,0x193c00,
    0x1a17e6,0x1a18dc,0x1a1900,0x1a6009,0x1a6100,0x1a75e6,0x1a7d00,0x1a7fdc,0x1a8000,
    0x1ab0e6,0x1ab5dc,0x1abbe6,0x1abddc,0x1abe00,0x1abfdc,0x1ac1e6,0x1ac3dc,0x1ac5e6,
    0x1acadc,0x1acbe6,0x1acf00,0x1b3407,0x1b3500,0x1b4409,0x1b4500,0x1b6be6,0x1b6cdc,
    0x1b6de6,0x1b7400,0x1baa09,0x1bac00,0x1be607,0x1be700,0x1bf209,0x1bf400,0x1c3707,
    0x1c3800,0x1cd0e6,0x1cd300,0x1cd401,0x1cd5dc,0x1cdae6,0x1cdcdc,0x1ce0e6,0x1ce100,
    0x1ce201,0x1ce900,0x1ceddc,0x1cee00,0x1cf4e6,0x1cf500,0x1cf8e6,0x1cfa00,0x1dc0e6,
    0x1dc2dc,0x1dc3e6,0x1dcadc,0x1dcbe6,0x1dcdea,0x1dced6,0x1dcfdc,0x1dd0ca,0x1dd1e6,
    0x1df6e8,0x1df7e4,0x1df9dc,0x1dfada,0x1dfbe6,0x1dfce9,0x1dfddc,0x1dfee6,0x1dffdc,
    0x1e0000,0x20d0e6,0x20d201,0x20d4e6,0x20d801,0x20dbe6,0x20dd00,0x20e1e6,0x20e200,
    0x20e501,0x20e7e6,0x20e8dc,0x20e9e6,0x20ea01,0x20ecdc,0x20f0e6,0x20f100,0x2cefe6,
    0x2cf200,0x2d7f09,0x2d8000,0x2de0e6,0x2e0000,0x302ada,0x302be4,0x302ce8,0x302dde,
    0x302ee0,0x303000,0x309908,0x309b00,0xa66fe6,0xa67000,0xa674e6,0xa67e00,0xa69ee6,
    0xa6a000,0xa6f0e6,0xa6f200,0xa80609,0xa80700,0xa82c09,0xa82d00,0xa8c409,0xa8c500,
    0xa8e0e6,0xa8f200,0xa92bdc,0xa92e00,0xa95309,0xa95400,0xa9b307,0xa9b400,0xa9c009,
    0xa9c100,0xaab0e6,0xaab100,0xaab2e6,0xaab4dc,0xaab500,0xaab7e6,0xaab900,0xaabee6,
    0xaac000,0xaac1e6,0xaac200,0xaaf609,0xaaf700,0xabed09,0xabee00,0xfb1e1a,0xfb1f00,
    0xfe20e6,0xfe27dc,0xfe2ee6,0xfe3000,0x101fddc,0x101fe00,0x102e0dc,0x102e100,0x10376e6,
    0x1037b00,0x10a0ddc,0x10a0e00,0x10a0fe6,0x10a1000,0x10a38e6,0x10a3901,0x10a3adc,0x10a3b00,
    0x10a3f09,0x10a4000,0x10ae5e6,0x10ae6dc,0x10ae700,0x10d24e6,0x10d2800,0x10eabe6,0x10ead00,
    0x10f46dc,0x10f48e6,0x10f4bdc,0x10f4ce6,0x10f4ddc,0x10f5100,0x10f82e6,0x10f83dc,0x10f84e6,
    0x10f85dc,0x10f8600,0x1104609,0x1104700,0x1107009,0x1107100,0x1107f09,0x1108000,0x110b909,
    0x110ba07,0x110bb00,0x11100e6,0x1110300,0x1113309,0x1113500,0x1117307,0x1117400,0x111c009,
    0x111c100,0x111ca07,0x111cb00,0x1123509,0x1123607,0x1123700,0x112e907,0x112ea09,0x112eb00,
    0x1133b07,0x1133d00,0x1134d09,0x1134e00,0x11366e6,0x1136d00,0x11370e6,0x1137500,0x1144209,
    0x1144300,0x1144607,0x1144700,0x1145ee6,0x1145f00,0x114c209,0x114c307,0x114c400,0x115bf09,
    0x115c007,0x115c100,0x1163f09,0x1164000,0x116b609,0x116b707,0x116b800,0x1172b09,0x1172c00,
    0x1183909,0x1183a07,0x1183b00,0x1193d09,0x1193f00,0x1194307,0x1194400,0x119e009,0x119e100,
    0x11a3409,0x11a3500,0x11a4709,0x11a4800,0x11a9909,0x11a9a00,0x11c3f09,0x11c4000,0x11d4207,
    0x11d4300,0x11d4409,0x11d4600,0x11d9709,0x11d9800,0x16af001,0x16af500,0x16b30e6,0x16b3700,
    0x16ff006,0x16ff200,0x1bc9e01,0x1bc9f00,0x1d165d8,0x1d16701,0x1d16a00,0x1d16de2,0x1d16ed8,
    0x1d17300,0x1d17bdc,0x1d18300,0x1d185e6,0x1d18adc,0x1d18c00,0x1d1aae6,0x1d1ae00,0x1d242e6,
    0x1d24500,0x1e000e6,0x1e00700,0x1e008e6,0x1e01900,0x1e01be6,0x1e02200,0x1e023e6,0x1e02500,
    0x1e026e6,0x1e02b00,0x1e130e6,0x1e13700,0x1e2aee6,0x1e2af00,0x1e2ece6,0x1e2f000,0x1e8d0dc,
    0x1e8d700,0x1e944e6,0x1e94a07,0x1e94b00,
};
static const uint64_t tfm__uc_decomp[2061] = {
    0xc0001040300u,0xc1001040301u,0xc2001040302u,0xc3001040303u,
    0xc4001040308u,0xc500104030au,0xc70010c0327u,0xc8001140300u,
    0xc9001140301u,0xca001140302u,0xcb001140308u,0xcc001240300u,
    0xcd001240301u,0xce001240302u,0xcf001240308u,0xd1001380303u,
    0xd20013c0300u,0xd30013c0301u,0xd40013c0302u,0xd50013c0303u,
    0xd60013c0308u,0xd9001540300u,0xda001540301u,0xdb001540302u,
    0xdc001540308u,0xdd001640301u,0xe0001840300u,0xe1001840301u,
    0xe2001840302u,0xe3001840303u,0xe4001840308u,0xe500184030au,
    0xe70018c0327u,0xe8001940300u,0xe9001940301u,0xea001940302u,
    0xeb001940308u,0xec001a40300u,0xed001a40301u,0xee001a40302u,
    0xef001a40308u,0xf1001b80303u,0xf2001bc0300u,0xf3001bc0301u,
    0xf4001bc0302u,0xf5001bc0303u,0xf6001bc0308u,0xf9001d40300u,
    0xfa001d40301u,0xfb001d40302u,0xfc001d40308u,0xfd001e40301u,
    0xff001e40308u,0x100001040304u,0x101001840304u,0x102001040306u,
    0x103001840306u,0x104001040328u,0x105001840328u,0x1060010c0301u,
    0x1070018c0301u,0x1080010c0302u,0x1090018c0302u,0x10a0010c0307u,
    0x10b0018c0307u,0x10c0010c030cu,0x10d0018c030cu,0x10e00110030cu,
    0x10f00190030cu,0x112001140304u,0x113001940304u,0x114001140306u,
    0x115001940306u,0x116001140307u,0x117001940307u,0x118001140328u,
    0x119001940328u,0x11a00114030cu,0x11b00194030cu,0x11c0011c0302u,
    0x11d0019c0302u,0x11e0011c0306u,0x11f0019c0306u,0x1200011c0307u,
    0x1210019c0307u,0x1220011c0327u,0x1230019c0327u,0x124001200302u,
    0x125001a00302u,0x128001240303u,0x129001a40303u,0x12a001240304u,
    0x12b001a40304u,0x12c001240306u,0x12d001a40306u,0x12e001240328u,
    0x12f001a40328u,0x130001240307u,0x134001280302u,0x135001a80302u,
    0x1360012c0327u,0x137001ac0327u,0x139001300301u,0x13a001b00301u,
    0x13b001300327u,0x13c001b00327u,0x13d00130030cu,0x13e001b0030cu,
    0x143001380301u,0x144001b80301u,0x145001380327u,0x146001b80327u,
    0x14700138030cu,0x148001b8030cu,0x14c0013c0304u,0x14d001bc0304u,
    0x14e0013c0306u,0x14f001bc0306u,0x1500013c030bu,0x151001bc030bu,
    0x154001480301u,0x155001c80301u,0x156001480327u,0x157001c80327u,
    0x15800148030cu,0x159001c8030cu,0x15a0014c0301u,0x15b001cc0301u,
    0x15c0014c0302u,0x15d001cc0302u,0x15e0014c0327u,0x15f001cc0327u,
    0x1600014c030cu,0x161001cc030cu,0x162001500327u,0x163001d00327u,
    0x16400150030cu,0x165001d0030cu,0x168001540303u,0x169001d40303u,
    0x16a001540304u,0x16b001d40304u,0x16c001540306u,0x16d001d40306u,
    0x16e00154030au,0x16f001d4030au,0x17000154030bu,0x171001d4030bu,
    0x172001540328u,0x173001d40328u,0x1740015c0302u,0x175001dc0302u,
    0x176001640302u,0x177001e40302u,0x178001640308u,0x179001680301u,
    0x17a001e80301u,0x17b001680307u,0x17c001e80307u,0x17d00168030cu,
    0x17e001e8030cu,0x1a00013c031bu,0x1a1001bc031bu,0x1af00154031bu,
    0x1b0001d4031bu,0x1cd00104030cu,0x1ce00184030cu,0x1cf00124030cu,
    0x1d0001a4030cu,0x1d10013c030cu,0x1d2001bc030cu,0x1d300154030cu,
    0x1d4001d4030cu,0x1d5003700304u,0x1d6003f00304u,0x1d7003700301u,
    0x1d8003f00301u,0x1d900370030cu,0x1da003f0030cu,0x1db003700300u,
    0x1dc003f00300u,0x1de003100304u,0x1df003900304u,0x1e0008980304u,
    0x1e10089c0304u,0x1e2003180304u,0x1e3003980304u,0x1e60011c030cu,
    0x1e70019c030cu,0x1e80012c030cu,0x1e9001ac030cu,0x1ea0013c0328u,
    0x1eb001bc0328u,0x1ec007a80304u,0x1ed007ac0304u,0x1ee006dc030cu,
    0x1ef00a48030cu,0x1f0001a8030cu,0x1f40011c0301u,0x1f50019c0301u,
    0x1f8001380300u,0x1f9001b80300u,0x1fa003140301u,0x1fb003940301u,
    0x1fc003180301u,0x1fd003980301u,0x1fe003600301u,0x1ff003e00301u,
    0x20000104030fu,0x20100184030fu,0x202001040311u,0x203001840311u,
    0x20400114030fu,0x20500194030fu,0x206001140311u,0x207001940311u,
    0x20800124030fu,0x209001a4030fu,0x20a001240311u,0x20b001a40311u,
    0x20c0013c030fu,0x20d001bc030fu,0x20e0013c0311u,0x20f001bc0311u,
    0x21000148030fu,0x211001c8030fu,0x212001480311u,0x213001c80311u,
    0x21400154030fu,0x215001d4030fu,0x216001540311u,0x217001d40311u,
    0x2180014c0326u,0x219001cc0326u,0x21a001500326u,0x21b001d00326u,
    0x21e00120030cu,0x21f001a0030cu,0x226001040307u,0x227001840307u,
    0x228001140327u,0x229001940327u,0x22a003580304u,0x22b003d80304u,
    0x22c003540304u,0x22d003d40304u,0x22e0013c0307u,0x22f001bc0307u,
    0x230008b80304u,0x231008bc0304u,0x232001640304u,0x233001e40304u,
    0x800034000c000000u,0x800034100c040000u,0x800034300c4c0000u,0x800034400c200301u,
    0x800037400ae40000u,0x800037e000ec0000u,0x385002a00301u,0x38600e440301u,
    0x8000387002dc0000u,0x38800e540301u,0x38900e5c0301u,0x38a00e640301u,
    0x38c00e7c0301u,0x38e00e940301u,0x38f00ea40301u,0x39000f280301u,
    0x3aa00e640308u,0x3ab00e940308u,0x3ac00ec40301u,0x3ad00ed40301u,
    0x3ae00edc0301u,0x3af00ee40301u,0x3b000f2c0301u,0x3ca00ee40308u,
    0x3cb00f140308u,0x3cc00efc0301u,0x3cd00f140301u,0x3ce00f240301u,
    0x3d300f480301u,0x3d400f480308u,0x400010540300u,0x401010540308u,
    0x4030104c0301u,0x407010180308u,0x40c010680301u,0x40d010600300u,
    0x40e0108c0306u,0x419010600306u,0x439010e00306u,0x450010d40300u,
    0x451010d40308u,0x453010cc0301u,0x457011580308u,0x45c010e80301u,
    0x45d010e00300u,0x45e0110c0306u,0x476011d0030fu,0x477011d4030fu,
    0x4c1010580306u,0x4c2010d80306u,0x4d0010400306u,0x4d1010c00306u,
    0x4d2010400308u,0x4d3010c00308u,0x4d6010540306u,0x4d7010d40306u,
    0x4da013600308u,0x4db013640308u,0x4dc010580308u,0x4dd010d80308u,
    0x4de0105c0308u,0x4df010dc0308u,0x4e2010600304u,0x4e3010e00304u,
    0x4e4010600308u,0x4e5010e00308u,0x4e6010780308u,0x4e7010f80308u,
    0x4ea013a00308u,0x4eb013a40308u,0x4ec010b40308u,0x4ed011340308u,
    0x4ee0108c0304u,0x4ef0110c0304u,0x4f00108c0308u,0x4f10110c0308u,
    0x4f20108c030bu,0x4f30110c030bu,0x4f40109c0308u,0x4f50111c0308u,
    0x4f8010ac0308u,0x4f90112c0308u,0x6220189c0653u,0x6230189c0654u,
    0x624019200654u,0x6250189c0655u,0x626019280654u,0x6c001b540654u,
    0x6c201b040654u,0x6d301b480654u,0x929024a0093cu,0x931024c0093cu,
    0x934024cc093cu,0x800095802454093cu,0x800095902458093cu,0x800095a0245c093cu,
    0x800095b02470093cu,0x800095c02484093cu,0x800095d02488093cu,0x800095e024ac093cu,
    0x800095f024bc093cu,0x9cb0271c09beu,0x9cc0271c09d7u,0x80009dc0268409bcu,
    0x80009dd0268809bcu,0x80009df026bc09bcu,0x8000a33028c80a3cu,0x8000a36028e00a3cu,
    0x8000a59028580a3cu,0x8000a5a0285c0a3cu,0x8000a5b028700a3cu,0x8000a5e028ac0a3cu,
    0xb4802d1c0b56u,0xb4b02d1c0b3eu,0xb4c02d1c0b57u,0x8000b5c02c840b3cu,
    0x8000b5d02c880b3cu,0xb9402e480bd7u,0xbca02f180bbeu,0xbcb02f1c0bbeu,
    0xbcc02f180bd7u,0xc48031180c56u,0xcc0032fc0cd5u,0xcc7033180cd5u,
    0xcc8033180cd6u,0xcca033180cc2u,0xccb033280cd5u,0xd4a035180d3eu,
    0xd4b0351c0d3eu,0xd4c035180d57u,0xdda037640dcau,0xddc037640dcfu,
    0xddd037700dcau,0xdde037640ddfu,0x8000f4303d080fb7u,0x8000f4d03d300fb7u,
    0x8000f5203d440fb7u,0x8000f5703d580fb7u,0x8000f5c03d6c0fb7u,0x8000f6903d000fb5u,
    0x8000f7303dc40f72u,0x8000f7503dc40f74u,0x8000f7603ec80f80u,0x8000f7803ecc0f80u,
    0x8000f8103dc40f80u,0x8000f9303e480fb7u,0x8000f9d03e700fb7u,0x8000fa203e840fb7u,
    0x8000fa703e980fb7u,0x8000fac03eac0fb7u,0x8000fb903e400fb5u,0x102604094102eu,
    0x1b0606c141b35u,0x1b0806c1c1b35u,0x1b0a06c241b35u,0x1b0c06c2c1b35u,
    0x1b0e06c341b35u,0x1b1206c441b35u,0x1b3b06ce81b35u,0x1b3d06cf01b35u,
    0x1b4006cf81b35u,0x1b4106cfc1b35u,0x1b4306d081b35u,0x1e00001040325u,
    0x1e01001840325u,0x1e02001080307u,0x1e03001880307u,0x1e04001080323u,
    0x1e05001880323u,0x1e06001080331u,0x1e07001880331u,0x1e080031c0301u,
    0x1e090039c0301u,0x1e0a001100307u,0x1e0b001900307u,0x1e0c001100323u,
    0x1e0d001900323u,0x1e0e001100331u,0x1e0f001900331u,0x1e10001100327u,
    0x1e11001900327u,0x1e1200110032du,0x1e1300190032du,0x1e14004480300u,
    0x1e150044c0300u,0x1e16004480301u,0x1e170044c0301u,0x1e1800114032du,
    0x1e1900194032du,0x1e1a001140330u,0x1e1b001940330u,0x1e1c008a00306u,
    0x1e1d008a40306u,0x1e1e001180307u,0x1e1f001980307u,0x1e200011c0304u,
    0x1e210019c0304u,0x1e22001200307u,0x1e23001a00307u,0x1e24001200323u,
    0x1e25001a00323u,0x1e26001200308u,0x1e27001a00308u,0x1e28001200327u,
    0x1e29001a00327u,0x1e2a00120032eu,0x1e2b001a0032eu,0x1e2c001240330u,
    0x1e2d001a40330u,0x1e2e0033c0301u,0x1e2f003bc0301u,0x1e300012c0301u,
    0x1e31001ac0301u,0x1e320012c0323u,0x1e33001ac0323u,0x1e340012c0331u,
    0x1e35001ac0331u,0x1e36001300323u,0x1e37001b00323u,0x1e38078d80304u,
    0x1e39078dc0304u,0x1e3a001300331u,0x1e3b001b00331u,0x1e3c00130032du,
    0x1e3d001b0032du,0x1e3e001340301u,0x1e3f001b40301u,0x1e40001340307u,
    0x1e41001b40307u,0x1e42001340323u,0x1e43001b40323u,0x1e44001380307u,
    0x1e45001b80307u,0x1e46001380323u,0x1e47001b80323u,0x1e48001380331u,
    0x1e49001b80331u,0x1e4a00138032du,0x1e4b001b8032du,0x1e4c003540301u,
    0x1e4d003d40301u,0x1e4e003540308u,0x1e4f003d40308u,0x1e50005300300u,
    0x1e51005340300u,0x1e52005300301u,0x1e53005340301u,0x1e54001400301u,
    0x1e55001c00301u,0x1e56001400307u,0x1e57001c00307u,0x1e58001480307u,
    0x1e59001c80307u,0x1e5a001480323u,0x1e5b001c80323u,0x1e5c079680304u,
    0x1e5d0796c0304u,0x1e5e001480331u,0x1e5f001c80331u,0x1e600014c0307u,
    0x1e61001cc0307u,0x1e620014c0323u,0x1e63001cc0323u,0x1e64005680307u,
    0x1e650056c0307u,0x1e66005800307u,0x1e67005840307u,0x1e68079880307u,
    0x1e690798c0307u,0x1e6a001500307u,0x1e6b001d00307u,0x1e6c001500323u,
    0x1e6d001d00323u,0x1e6e001500331u,0x1e6f001d00331u,0x1e7000150032du,
    0x1e71001d0032du,0x1e72001540324u,0x1e73001d40324u,0x1e74001540330u,
    0x1e75001d40330u,0x1e7600154032du,0x1e77001d4032du,0x1e78005a00301u,
    0x1e79005a40301u,0x1e7a005a80308u,0x1e7b005ac0308u,0x1e7c001580303u,
    0x1e7d001d80303u,0x1e7e001580323u,0x1e7f001d80323u,0x1e800015c0300u,
    0x1e81001dc0300u,0x1e820015c0301u,0x1e83001dc0301u,0x1e840015c0308u,
    0x1e85001dc0308u,0x1e860015c0307u,0x1e87001dc0307u,0x1e880015c0323u,
    0x1e89001dc0323u,0x1e8a001600307u,0x1e8b001e00307u,0x1e8c001600308u,
    0x1e8d001e00308u,0x1e8e001640307u,0x1e8f001e40307u,0x1e90001680302u,
    0x1e91001e80302u,0x1e92001680323u,0x1e93001e80323u,0x1e94001680331u,
    0x1e95001e80331u,0x1e96001a00331u,0x1e97001d00308u,0x1e98001dc030au,
    0x1e99001e4030au,0x1e9b005fc0307u,0x1ea0001040323u,0x1ea1001840323u,
    0x1ea2001040309u,0x1ea3001840309u,0x1ea4003080301u,0x1ea5003880301u,
    0x1ea6003080300u,0x1ea7003880300u,0x1ea8003080309u,0x1ea9003880309u,
    0x1eaa003080303u,0x1eab003880303u,0x1eac07a800302u,0x1ead07a840302u,
    0x1eae004080301u,0x1eaf0040c0301u,0x1eb0004080300u,0x1eb10040c0300u,
    0x1eb2004080309u,0x1eb30040c0309u,0x1eb4004080303u,0x1eb50040c0303u,
    0x1eb607a800306u,0x1eb707a840306u,0x1eb8001140323u,0x1eb9001940323u,
    0x1eba001140309u,0x1ebb001940309u,0x1ebc001140303u,0x1ebd001940303u,
    0x1ebe003280301u,0x1ebf003a80301u,0x1ec0003280300u,0x1ec1003a80300u,
    0x1ec2003280309u,0x1ec3003a80309u,0x1ec4003280303u,0x1ec5003a80303u,
    0x1ec607ae00302u,0x1ec707ae40302u,0x1ec8001240309u,0x1ec9001a40309u,
    0x1eca001240323u,0x1ecb001a40323u,0x1ecc0013c0323u,0x1ecd001bc0323u,
    0x1ece0013c0309u,0x1ecf001bc0309u,0x1ed0003500301u,0x1ed1003d00301u,
    0x1ed2003500300u,0x1ed3003d00300u,0x1ed4003500309u,0x1ed5003d00309u,
    0x1ed6003500303u,0x1ed7003d00303u,0x1ed807b300302u,0x1ed907b340302u,
    0x1eda006800301u,0x1edb006840301u,0x1edc006800300u,0x1edd006840300u,
    0x1ede006800309u,0x1edf006840309u,0x1ee0006800303u,0x1ee1006840303u,
    0x1ee2006800323u,0x1ee3006840323u,0x1ee4001540323u,0x1ee5001d40323u,
    0x1ee6001540309u,0x1ee7001d40309u,0x1ee8006bc0301u,0x1ee9006c00301u,
    0x1eea006bc0300u,0x1eeb006c00300u,0x1eec006bc0309u,0x1eed006c00309u,
    0x1eee006bc0303u,0x1eef006c00303u,0x1ef0006bc0323u,0x1ef1006c00323u,
    0x1ef2001640300u,0x1ef3001e40300u,0x1ef4001640323u,0x1ef5001e40323u,
    0x1ef6001640309u,0x1ef7001e40309u,0x1ef8001640303u,0x1ef9001e40303u,
    0x1f0000ec40313u,0x1f0100ec40314u,0x1f0207c000300u,0x1f0307c040300u,
    0x1f0407c000301u,0x1f0507c040301u,0x1f0607c000342u,0x1f0707c040342u,
    0x1f0800e440313u,0x1f0900e440314u,0x1f0a07c200300u,0x1f0b07c240300u,
    0x1f0c07c200301u,0x1f0d07c240301u,0x1f0e07c200342u,0x1f0f07c240342u,
    0x1f1000ed40313u,0x1f1100ed40314u,0x1f1207c400300u,0x1f1307c440300u,
    0x1f1407c400301u,0x1f1507c440301u,0x1f1800e540313u,0x1f1900e540314u,
    0x1f1a07c600300u,0x1f1b07c640300u,0x1f1c07c600301u,0x1f1d07c640301u,
    0x1f2000edc0313u,0x1f2100edc0314u,0x1f2207c800300u,0x1f2307c840300u,
    0x1f2407c800301u,0x1f2507c840301u,0x1f2607c800342u,0x1f2707c840342u,
    0x1f2800e5c0313u,0x1f2900e5c0314u,0x1f2a07ca00300u,0x1f2b07ca40300u,
    0x1f2c07ca00301u,0x1f2d07ca40301u,0x1f2e07ca00342u,0x1f2f07ca40342u,
    0x1f3000ee40313u,0x1f3100ee40314u,0x1f3207cc00300u,0x1f3307cc40300u,
    0x1f3407cc00301u,0x1f3507cc40301u,0x1f3607cc00342u,0x1f3707cc40342u,
    0x1f3800e640313u,0x1f3900e640314u,0x1f3a07ce00300u,0x1f3b07ce40300u,
    0x1f3c07ce00301u,0x1f3d07ce40301u,0x1f3e07ce00342u,0x1f3f07ce40342u,
    0x1f4000efc0313u,0x1f4100efc0314u,0x1f4207d000300u,0x1f4307d040300u,
    0x1f4407d000301u,0x1f4507d040301u,0x1f4800e7c0313u,0x1f4900e7c0314u,
    0x1f4a07d200300u,0x1f4b07d240300u,0x1f4c07d200301u,0x1f4d07d240301u,
    0x1f5000f140313u,0x1f5100f140314u,0x1f5207d400300u,0x1f5307d440300u,
    0x1f5407d400301u,0x1f5507d440301u,0x1f5607d400342u,0x1f5707d440342u,
    0x1f5900e940314u,0x1f5b07d640300u,0x1f5d07d640301u,0x1f5f07d640342u,
    0x1f6000f240313u,0x1f6100f240314u,0x1f6207d800300u,0x1f6307d840300u,
    0x1f6407d800301u,0x1f6507d840301u,0x1f6607d800342u,0x1f6707d840342u,
    0x1f6800ea40313u,0x1f6900ea40314u,0x1f6a07da00300u,0x1f6b07da40300u,
    0x1f6c07da00301u,0x1f6d07da40301u,0x1f6e07da00342u,0x1f6f07da40342u,
    0x1f7000ec40300u,0x8001f7100eb00000u,0x1f7200ed40300u,0x8001f7300eb40000u,
    0x1f7400edc0300u,0x8001f7500eb80000u,0x1f7600ee40300u,0x8001f7700ebc0000u,
    0x1f7800efc0300u,0x8001f7900f300000u,0x1f7a00f140300u,0x8001f7b00f340000u,
    0x1f7c00f240300u,0x8001f7d00f380000u,0x1f8007c000345u,0x1f8107c040345u,
    0x1f8207c080345u,0x1f8307c0c0345u,0x1f8407c100345u,0x1f8507c140345u,
    0x1f8607c180345u,0x1f8707c1c0345u,0x1f8807c200345u,0x1f8907c240345u,
    0x1f8a07c280345u,0x1f8b07c2c0345u,0x1f8c07c300345u,0x1f8d07c340345u,
    0x1f8e07c380345u,0x1f8f07c3c0345u,0x1f9007c800345u,0x1f9107c840345u,
    0x1f9207c880345u,0x1f9307c8c0345u,0x1f9407c900345u,0x1f9507c940345u,
    0x1f9607c980345u,0x1f9707c9c0345u,0x1f9807ca00345u,0x1f9907ca40345u,
    0x1f9a07ca80345u,0x1f9b07cac0345u,0x1f9c07cb00345u,0x1f9d07cb40345u,
    0x1f9e07cb80345u,0x1f9f07cbc0345u,0x1fa007d800345u,0x1fa107d840345u,
    0x1fa207d880345u,0x1fa307d8c0345u,0x1fa407d900345u,0x1fa507d940345u,
    0x1fa607d980345u,0x1fa707d9c0345u,0x1fa807da00345u,0x1fa907da40345u,
    0x1faa07da80345u,0x1fab07dac0345u,0x1fac07db00345u,0x1fad07db40345u,
    0x1fae07db80345u,0x1faf07dbc0345u,0x1fb000ec40306u,0x1fb100ec40304u,
    0x1fb207dc00345u,0x1fb300ec40345u,0x1fb400eb00345u,0x1fb600ec40342u,
    0x1fb707ed80345u,0x1fb800e440306u,0x1fb900e440304u,0x1fba00e440300u,
    0x8001fbb00e180000u,0x1fbc00e440345u,0x8001fbe00ee40000u,0x1fc1002a00342u,
    0x1fc207dd00345u,0x1fc300edc0345u,0x1fc400eb80345u,0x1fc600edc0342u,
    0x1fc707f180345u,0x1fc800e540300u,0x8001fc900e200000u,0x1fca00e5c0300u,
    0x8001fcb00e240000u,0x1fcc00e5c0345u,0x1fcd07efc0300u,0x1fce07efc0301u,
    0x1fcf07efc0342u,0x1fd000ee40306u,0x1fd100ee40304u,0x1fd200f280300u,
    0x8001fd300e400000u,0x1fd600ee40342u,0x1fd700f280342u,0x1fd800e640306u,
    0x1fd900e640304u,0x1fda00e640300u,0x8001fdb00e280000u,0x1fdd07ff80300u,
    0x1fde07ff80301u,0x1fdf07ff80342u,0x1fe000f140306u,0x1fe100f140304u,
    0x1fe200f2c0300u,0x8001fe300ec00000u,0x1fe400f040313u,0x1fe500f040314u,
    0x1fe600f140342u,0x1fe700f2c0342u,0x1fe800e940306u,0x1fe900e940304u,
    0x1fea00e940300u,0x8001feb00e380000u,0x1fec00e840314u,0x1fed002a00300u,
    0x8001fee00e140000u,0x8001fef001800000u,0x1ff207df00345u,0x1ff300f240345u,
    0x1ff400f380345u,0x1ff600f240342u,0x1ff707fd80345u,0x1ff800e7c0300u,
    0x8001ff900e300000u,0x1ffa00ea40300u,0x8001ffb00e3c0000u,0x1ffc00ea40345u,
    0x8001ffd002d00000u,0x8002000080080000u,0x80020010800c0000u,0x800212600ea40000u,
    0x800212a0012c0000u,0x800212b003140000u,0x219a086400338u,0x219b086480338u,
    0x21ae086500338u,0x21cd087400338u,0x21ce087500338u,0x21cf087480338u,
    0x22040880c0338u,0x2209088200338u,0x220c0882c0338u,0x22240888c0338u,
    0x2226088940338u,0x2241088f00338u,0x22440890c0338u,0x2247089140338u,
    0x2249089200338u,0x2260000f40338u,0x2262089840338u,0x226d089340338u,
    0x226e000f00338u,0x226f000f80338u,0x2270089900338u,0x2271089940338u,
    0x2274089c80338u,0x2275089cc0338u,0x2278089d80338u,0x2279089dc0338u,
    0x2280089e80338u,0x2281089ec0338u,0x228408a080338u,0x228508a0c0338u,
    0x228808a180338u,0x228908a1c0338u,0x22ac08a880338u,0x22ad08aa00338u,
    0x22ae08aa40338u,0x22af08aac0338u,0x22e0089f00338u,0x22e1089f40338u,
    0x22e208a440338u,0x22e308a480338u,0x22ea08ac80338u,0x22eb08acc0338u,
    0x22ec08ad00338u,0x22ed08ad40338u,0x80023290c0200000u,0x800232a0c0240000u,
    0x8002adc0ab740338u,0x304c0c12c3099u,0x304e0c1343099u,0x30500c13c3099u,
    0x30520c1443099u,0x30540c14c3099u,0x30560c1543099u,0x30580c15c3099u,
    0x305a0c1643099u,0x305c0c16c3099u,0x305e0c1743099u,0x30600c17c3099u,
    0x30620c1843099u,0x30650c1903099u,0x30670c1983099u,0x30690c1a03099u,
    0x30700c1bc3099u,0x30710c1bc309au,0x30730c1c83099u,0x30740c1c8309au,
    0x30760c1d43099u,0x30770c1d4309au,0x30790c1e03099u,0x307a0c1e0309au,
    0x307c0c1ec3099u,0x307d0c1ec309au,0x30940c1183099u,0x309e0c2743099u,
    0x30ac0c2ac3099u,0x30ae0c2b43099u,0x30b00c2bc3099u,0x30b20c2c43099u,
    0x30b40c2cc3099u,0x30b60c2d43099u,0x30b80c2dc3099u,0x30ba0c2e43099u,
    0x30bc0c2ec3099u,0x30be0c2f43099u,0x30c00c2fc3099u,0x30c20c3043099u,
    0x30c50c3103099u,0x30c70c3183099u,0x30c90c3203099u,0x30d00c33c3099u,
    0x30d10c33c309au,0x30d30c3483099u,0x30d40c348309au,0x30d60c3543099u,
    0x30d70c354309au,0x30d90c3603099u,0x30da0c360309au,0x30dc0c36c3099u,
    0x30dd0c36c309au,0x30f40c2983099u,0x30f70c3bc3099u,0x30f80c3c03099u,
    0x30f90c3c43099u,0x30fa0c3c83099u,0x30fe0c3f43099u,0x800f900231200000u,
    0x800f90119bd00000u,0x800f90223b280000u,0x800f903233200000u,0x800f9041bb440000u,
    0x800f905138c80000u,0x800f90614f940000u,0x800f90727e700000u,0x800f90827e700000u,
    0x800f909165440000u,0x800f90a247440000u,0x800f90b1561c0000u,0x800f90c165200000u,
    0x800f90d187d80000u,0x800f90e1d9a40000u,0x800f90f1fe140000u,0x800f910218fc0000u,
    0x800f91121ee80000u,0x800f912223e00000u,0x800f9132423c0000u,0x800f9141a8080000u,
    0x800f9151b46c0000u,0x800f9161c3640000u,0x800f9171cf780000u,0x800f918210f40000u,
    0x800f919245a80000u,0x800f91a267c40000u,0x800f91b13a080000u,0x800f91c14dd40000u,
    0x800f91d1ac100000u,0x800f91e1c86c0000u,0x800f91f218b40000u,0x800f920278780000u,
    0x800f921175400000u,0x800f9221bfac0000u,0x800f923217340000u,0x800f924225900000u,
    0x800f92518b240000u,0x800f926207600000u,0x800f9272207c0000u,0x800f92817b280000u,
    0x800f92919c5c0000u,0x800f92a1b5a80000u,0x800f92b1cbf00000u,0x800f92c243380000u,
    0x800f92d13e180000u,0x800f92e146dc0000u,0x800f92f14b780000u,0x800f930193100000u,
    0x800f9311ab4c0000u,0x800f9321c8400000u,0x800f9331db9c0000u,0x800f934200040000u,
    0x800f935218180000u,0x800f936219700000u,0x800f937237bc0000u,0x800f93825cc80000u,
    0x800f93926dbc0000u,0x800f93a277e80000u,0x800f93b1e2300000u,0x800f93c1e5fc0000u,
    0x800f93d1f6800000u,0x800f93e20f240000u,0x800f93f24c100000u,0x800f940279fc0000u,
    0x800f94122b580000u,0x800f9421637c0000u,0x800f94317c100000u,0x800f9441f1800000u,
    0x800f945201f80000u,0x800f9461c9880000u,0x800f9471e3280000u,0x800f948233080000u,
    0x800f94925bdc0000u,0x800f94a163600000u,0x800f94b171880000u,0x800f94c1a84c0000u,
    0x800f94d1b7680000u,0x800f94e1bc3c0000u,0x800f94f1f4bc0000u,0x800f9501f8dc0000u,
    0x800f9512592c0000u,0x800f95214b480000u,0x800f9532022c0000u,0x800f954147700000u,
    0x800f955147300000u,0x800f9561e8700000u,0x800f9571f6f80000u,0x800f95820fc40000u,
    0x800f959259d40000u,0x800f95a22e000000u,0x800f95b18b3c0000u,0x800f95c1a8080000u,
    0x800f95d22bf80000u,0x800f95e138e40000u,0x800f95f16f9c0000u,0x800f960180480000u,
    0x800f9611ce1c0000u,0x800f9621d5c00000u,0x800f96314c5c0000u,0x800f9641e3ec0000u,
    0x800f96513efc0000u,0x800f96617ea40000u,0x800f967138340000u,0x800f9681b3300000u,
    0x800f969195e00000u,0x800f96a1f4880000u,0x800f96b14f0c0000u,0x800f96c161780000u,
    0x800f96d1dc040000u,0x800f96e211240000u,0x800f96f22aa80000u,0x800f9701aee80000u,
    0x800f97123ec00000u,0x800f9721b2200000u,0x800f97318bf80000u,0x800f97420b940000u,
    0x800f97518e800000u,0x800f9761d5940000u,0x800f97713ab80000u,0x800f978145a40000u,
    0x800f979147240000u,0x800f97a1a2040000u,0x800f97b1f39c0000u,0x800f97c209bc0000u,
    0x800f97d22b480000u,0x800f97e2473c0000u,0x800f97f14bd40000u,0x800f980151080000u,
    0x800f981165cc0000u,0x800f98217bb00000u,0x800f983197140000u,0x800f9841bff80000u,
    0x800f9851e4a80000u,0x800f986256b40000u,0x800f987269a80000u,0x800f98827a5c0000u,
    0x800f98927b380000u,0x800f98a14a6c0000u,0x800f98b19b180000u,0x800f98c1addc0000u,
    0x800f98d23d880000u,0x800f98e179d00000u,0x800f98f186400000u,0x800f990188000000u,
    0x800f991192680000u,0x800f9921bc8c0000u,0x800f9931c5240000u,0x800f9941d2240000u,
    0x800f9951e7280000u,0x800f9961f7d00000u,0x800f997201bc0000u,0x800f99823c980000u,
    0x800f999213b80000u,0x800f99a2408c0000u,0x800f99b24d280000u,0x800f99c1485c0000u,
    0x800f99d14a8c0000u,0x800f99e152f40000u,0x800f99f1c3200000u,0x800f9a0223080000u,
    0x800f9a122aa80000u,0x800f9a217b240000u,0x800f9a317fd40000u,0x800f9a418dec0000u,
    0x800f9a51aeb80000u,0x800f9a61f0f80000u,0x800f9a71cdd40000u,0x800f9a813b900000u,
    0x800f9a915be40000u,0x800f9aa16f9c0000u,0x800f9ab176e80000u,0x800f9ac180700000u,
    0x800f9ad1cec80000u,0x800f9ae1d1a40000u,0x800f9af1fe680000u,0x800f9b0201180000u,
    0x800f9b1248d00000u,0x800f9b225bd80000u,0x800f9b325d200000u,0x800f9b4260600000u,
    0x800f9b513e2c0000u,0x800f9b61e6b80000u,0x800f9b7246d00000u,0x800f9b825ae00000u,
    0x800f9b9183840000u,0x800f9ba13a180000u,0x800f9bb143680000u,0x800f9bc16fb80000u,
    0x800f9bd170fc0000u,0x800f9be196640000u,0x800f9bf1a8080000u,0x800f9c01c7380000u,
    0x800f9c11d9080000u,0x800f9c2213f00000u,0x800f9c3241f00000u,0x800f9c427e340000u,
    0x800f9c519a200000u,0x800f9c6258b80000u,0x800f9c714a240000u,0x800f9c819dec0000u,
    0x800f9c919fcc0000u,0x800f9ca1b5040000u,0x800f9cb1ba700000u,0x800f9cc1d0240000u,
    0x800f9cd1d5640000u,0x800f9ce1e1ac0000u,0x800f9cf1f4400000u,0x800f9d0261780000u,
    0x800f9d1145b40000u,0x800f9d2188b80000u,0x800f9d3259e00000u,0x800f9d4140ac0000u,
    0x800f9d5174640000u,0x800f9d61b7a80000u,0x800f9d723ca80000u,0x800f9d817e2c0000u,
    0x800f9d9185100000u,0x800f9da1a05c0000u,0x800f9db1ce1c0000u,0x800f9dc25a180000u,
    0x800f9dd148a40000u,0x800f9de1503c0000u,0x800f9df171940000u,0x800f9e01984c0000u,
    0x800f9e119d380000u,0x800f9e21a2a00000u,0x800f9e31b3940000u,0x800f9e41d0180000u,
    0x800f9e51d7880000u,0x800f9e61fde40000u,0x800f9e72233c0000u,0x800f9e8223840000u,
    0x800f9e9247300000u,0x800f9ea25b880000u,0x800f9eb14cfc0000u,0x800f9ec1bae80000u,
    0x800f9ed150740000u,0x800f9ee1c7400000u,0x800f9ef1d2600000u,0x800f9f0217e80000u,
    0x800f9f125a8c0000u,0x800f9f22715c0000u,0x800f9f327a7c0000u,0x800f9f419e5c0000u,
    0x800f9f51b72c0000u,0x800f9f6207a00000u,0x800f9f71eb2c0000u,0x800f9f81ec800000u,
    0x800f9f91f2480000u,0x800f9fa1cb000000u,0x800f9fb1c2640000u,0x800f9fc22d600000u,
    0x800f9fd13b000000u,0x800f9fe20cd80000u,0x800f9ff148e80000u,0x800fa001481c0000u,
    0x800fa0117a980000u,0x800fa0218b4c0000u,0x800fa031f3580000u,0x800fa0416e140000u,
    0x800fa051b4780000u,0x800fa0619ad00000u,0x800fa0723cec0000u,0x800fa08221300000u,
    0x800fa09259340000u,0x800fa0a2262c0000u,0x800fa0b17b4c0000u,0x800fa0c145000000u,
    0x800fa0d157000000u,0x800fa10161680000u,0x800fa12199d00000u,0x800fa15147780000u,
    0x800fa161cca80000u,0x800fa171db280000u,0x800fa181e4f00000u,0x800fa191e5780000u,
    0x800fa1a1e5940000u,0x800fa1b1e63c0000u,0x800fa1c25d580000u,0x800fa1d1f2f80000u,
    0x800fa1e1fef40000u,0x800fa20218480000u,0x800fa2222be00000u,0x800fa25240e00000u,
    0x800fa26243f40000u,0x800fa2a263bc0000u,0x800fa2b263f00000u,0x800fa2c264a00000u,
    0x800fa2d276d00000u,0x800fa2e243780000u,0x800fa2f25adc0000u,0x800fa3013eb80000u,
    0x800fa311439c0000u,0x800fa32145340000u,0x800fa3314b240000u,0x800fa3414b900000u,
    0x800fa3514d440000u,0x800fa36156740000u,0x800fa37158180000u,0x800fa38159a00000u,
    0x800fa39161000000u,0x800fa3a162a00000u,0x800fa3b171900000u,0x800fa3c171b80000u,
    0x800fa3d182500000u,0x800fa3e185a00000u,0x800fa3f186380000u,0x800fa40187c80000u,
    0x800fa411953c0000u,0x800fa42197880000u,0x800fa4319a440000u,0x800fa441a2140000u,
    0x800fa451b5dc0000u,0x800fa461b8680000u,0x800fa471bc880000u,0x800fa481c5b80000u,
    0x800fa491c8ac0000u,0x800fa4a1d0880000u,0x800fa4b1e2440000u,0x800fa4c1e4f80000u,
    0x800fa4d1e5240000u,0x800fa4e1e5200000u,0x800fa4f1e5400000u,0x800fa501e5580000u,
    0x800fa511e5740000u,0x800fa521e6340000u,0x800fa531e6380000u,0x800fa541e9000000u,
    0x800fa551ea040000u,0x800fa561ef000000u,0x800fa571f7d00000u,0x800fa581f8240000u,
    0x800fa591f9040000u,0x800fa5a1fdc80000u,0x800fa5b200140000u,0x800fa5c207b40000u,
    0x800fa5d209e40000u,0x800fa5e209e40000u,0x800fa5f2115c0000u,0x800fa60224400000u,
    0x800fa61226580000u,0x800fa6222c040000u,0x800fa6322ce40000u,0x800fa642334c0000u,
    0x800fa65234200000u,0x800fa6623ed80000u,0x800fa67240e00000u,0x800fa6825b8c0000u,
    0x800fa6925ffc0000u,0x800fa6a260ec0000u,0x800fa6b181d40000u,0x800fa6c90bb80000u,
    0x800fa6d208600000u,0x800fa70138980000u,0x800fa71146d40000u,0x800fa72145a00000u,
    0x800fa7313e000000u,0x800fa74145140000u,0x800fa75146000000u,0x800fa7614b1c0000u,
    0x800fa7714be80000u,0x800fa78156740000u,0x800fa79155540000u,0x800fa7a156640000u,
    0x800fa7b157880000u,0x800fa7c161680000u,0x800fa7d162cc0000u,0x800fa7e165100000u,
    0x800fa7f165500000u,0x800fa80169880000u,0x800fa8116ca00000u,0x800fa8217b480000u,
    0x800fa8317b640000u,0x800fa8417da40000u,0x800fa8517eb40000u,0x800fa86183600000u,
    0x800fa87185380000u,0x800fa88184200000u,0x800fa89186380000u,0x800fa8a185800000u,
    0x800fa8b187c80000u,0x800fa8c188d00000u,0x800fa8d18f100000u,0x800fa8e190700000u,
    0x800fa8f191480000u,0x800fa90195580000u,0x800fa91199d00000u,0x800fa9219c5c0000u,
    0x800fa9319c6c0000u,0x800fa9419d580000u,0x800fa951ade40000u,0x800fa961aee80000u,
    0x800fa971b5040000u,0x800fa981bb6c0000u,0x800fa991bb2c0000u,0x800fa9a1bc880000u,
    0x800fa9b1c0780000u,0x800fa9c1c5b80000u,0x800fa9d1de9c0000u,0x800fa9e1c8d40000u,
    0x800fa9f1cabc0000u,0x800faa01cca80000u,0x800faa11d1c40000u,0x800faa21d4180000u,
    0x800faa31d4ec0000u,0x800faa41d8740000u,0x800faa51d87c0000u,0x800faa61db280000u,
    0x800faa71db6c0000u,0x800faa81dbd00000u,0x800faa91dd280000u,0x800faaa1dd000000u,
    0x800faab1e3300000u,0x800faac1eac40000u,0x800faad1ef000000u,0x800faae1f1ec0000u,
    0x800faaf1f56c0000u,0x800fab01f7d00000u,0x800fab11fcf80000u,0x800fab2200140000u,
    0x800fab320d480000u,0x800fab420fbc0000u,0x800fab521de40000u,0x800fab6225040000u,
    0x800fab7226180000u,0x800fab8226580000u,0x800fab922afc0000u,0x800faba22be00000u,
    0x800fabb22b2c0000u,0x800fabc22c040000u,0x800fabd22bf80000u,0x800fabe22bb40000u,
    0x800fabf22ce40000u,0x800fac022e280000u,0x800fac1234200000u,0x800fac223ce00000u,
    0x800fac3241c80000u,0x800fac4246640000u,0x800fac5249d80000u,0x800fac6259f00000u,
    0x800fac725b8c0000u,0x800fac825d580000u,0x800fac925f6c0000u,0x800faca25ffc0000u,
    0x800facb2602c0000u,0x800facc260ec0000u,0x800facd26c480000u,0x800face27e700000u,
    0x800facf8a1280000u,0x800fad08a1100000u,0x800fad18cf540000u,0x800fad20ee740000u,
    0x800fad3100600000u,0x800fad4100e40000u,0x800fad5949240000u,0x800fad6973400000u,
    0x800fad79fb4c0000u,0x800fad827d0c0000u,0x800fad927e380000u,0x800fb1d0176405b4u,
    0x800fb1f017c805b7u,0x800fb2a017a405c1u,0x800fb2b017a405c2u,0x800fb2c3ed2405c1u,
    0x800fb2d3ed2405c2u,0x800fb2e0174005b7u,0x800fb2f0174005b8u,0x800fb300174005bcu,
    0x800fb310174405bcu,0x800fb320174805bcu,0x800fb330174c05bcu,0x800fb340175005bcu,
    0x800fb350175405bcu,0x800fb360175805bcu,0x800fb380176005bcu,0x800fb390176405bcu,
    0x800fb3a0176805bcu,0x800fb3b0176c05bcu,0x800fb3c0177005bcu,0x800fb3e0177805bcu,
    0x800fb400178005bcu,0x800fb410178405bcu,0x800fb430178c05bcu,0x800fb440179005bcu,
    0x800fb460179805bcu,0x800fb470179c05bcu,0x800fb48017a005bcu,0x800fb49017a405bcu,
    0x800fb4a017a805bcu,0x800fb4b0175405b9u,0x800fb4c0174405bfu,0x800fb4d0176c05bfu,
    0x800fb4e0179005bfu,0x1109a4426510bau,0x1109c4426d10bau,0x110ab4429510bau,
    0x1112e444c51127u,0x1112f444c91127u,0x1134b44d1d133eu,0x1134c44d1d1357u,
    0x114bb452e514bau,0x114bc452e514b0u,0x114be452e514bdu,0x115ba456e115afu,
    0x115bb456e515afu,0x11938464d51930u,0x801d15e7455dd165u,0x801d15f74561d165u,
    0x801d1607457dd16eu,0x801d1617457dd16fu,0x801d1627457dd170u,0x801d1637457dd171u,
    0x801d1647457dd172u,0x801d1bb746e5d165u,0x801d1bc746e9d165u,0x801d1bd746edd16eu,
    0x801d1be746f1d16eu,0x801d1bf746edd16fu,0x801d1c0746f1d16fu,0x802f800138f40000u,
    0x802f801138e00000u,0x802f802139040000u,0x802f803804880000u,0x802f80413d800000u,
    0x802f80513eb80000u,0x802f80613eec0000u,0x802f807140080000u,0x802f808141e80000u,
    0x802f809142640000u,0x802f80a1439c0000u,0x802f80b1433c0000u,0x802f80c0d2780000u,
    0x802f80d818e80000u,0x802f80e145340000u,0x802f80f145500000u,0x802f810145900000u,
    0x802f811145dc0000u,0x802f812814700000u,0x802f8130d2e40000u,0x802f8141459c0000u,
    0x802f815146340000u,0x802f8168152c0000u,0x802f8171465c0000u,0x802f818146900000u,
    0x802f81913b300000u,0x802f81a146b00000u,0x802f81b146d40000u,0x802f81ca477c0000u,
    0x802f81d147d40000u,0x802f81e1480c0000u,0x802f81f0d37c0000u,0x802f820148ec0000u,
    0x802f821149180000u,0x802f822149c80000u,0x802f823149dc0000u,0x802f8240d4540000u,
    0x802f82514b1c0000u,0x802f82614b240000u,0x802f82714b900000u,0x802f82814be80000u,
    0x802f82914c140000u,0x802f82a14c180000u,0x802f82b14c5c0000u,0x802f82c14d240000u,
    0x802f82d14d440000u,0x802f82e14d680000u,0x802f82f14dcc0000u,0x802f83014df40000u,
    0x802f83114dfc0000u,0x802f83214dfc0000u,0x802f83314dfc0000u,0x802f834828b00000u,
    0x802f8351c1c00000u,0x802f83614f280000u,0x802f83714f7c0000u,0x802f83882d8c0000u,
    0x802f83914fac0000u,0x802f83a14fc40000u,0x802f83b150180000u,0x802f83c152780000u,
    0x802f83d150e00000u,0x802f83e151200000u,0x802f83f151a00000u,0x802f840152880000u,
    0x802f841153d80000u,0x802f842154400000u,0x802f8431554c0000u,0x802f8441558c0000u,
    0x802f845156100000u,0x802f846156100000u,0x802f847156640000u,0x802f848156ac0000u,
    0x802f849156cc0000u,0x802f84a157080000u,0x802f84b15c580000u,0x802f84c158180000u,
    0x802f84d15c5c0000u,0x802f84e159440000u,0x802f84f159d00000u,0x802f8501481c0000u,
    0x802f851163b80000u,0x802f85215f380000u,0x802f85315fd00000u,0x802f854160340000u,
    0x802f85515e2c0000u,0x802f856160c80000u,0x802f857160c40000u,0x802f858162b00000u,
    0x802f859853900000u,0x802f85a163c80000u,0x802f85b163dc0000u,0x802f85c164180000u,
    0x802f85d164680000u,0x802f85e164880000u,0x802f85f165880000u,0x802f86085aa00000u,
    0x802f86185ba80000u,0x802f862167b00000u,0x802f8631686c0000u,0x802f8641689c0000u,
    0x802f865167600000u,0x802f866169980000u,0x802f8670dbb80000u,0x802f8680dbf00000u,
    0x802f86916c200000u,0x802f86a16cf80000u,0x802f86b16cf80000u,0x802f86c867200000u,
    0x802f86d16f0c0000u,0x802f86e16f600000u,0x802f86f16f9c0000u,0x802f87016fcc0000u,
    0x802f87186c600000u,0x802f87216ffc0000u,0x802f873170180000u,0x802f87417d4c0000u,
    0x802f875170880000u,0x802f8760de040000u,0x802f877171800000u,0x802f878171b80000u,
    0x802f879173000000u,0x802f87a172340000u,0x802f87b877900000u,0x802f87c1750c0000u,
    0x802f87d877980000u,0x802f87e175b80000u,0x802f87f175ac0000u,0x802f880175f00000u,
    0x802f881177840000u,0x802f882177880000u,0x802f8830e0bc0000u,0x802f884177f40000u,
    0x802f885178a00000u,0x802f886178f40000u,0x802f887179a40000u,0x802f8880e1880000u,
    0x802f8898860c0000u,0x802f88a0e1f00000u,0x802f88b17ac00000u,0x802f88c17acc0000u,
    0x802f88d17ad80000u,0x802f88e17b280000u,0x802f88fa8e480000u,0x802f89017bf80000u,
    0x802f89188cc40000u,0x802f89288cc40000u,0x802f893208040000u,0x802f89417c880000u,
    0x802f89517c880000u,0x802f8960e31c0000u,0x802f8978cae00000u,0x802f898987680000u,
    0x802f89917d880000u,0x802f89a17dac0000u,0x802f89b0e38c0000u,0x802f89c17e680000u,
    0x802f89d17f340000u,0x802f89e17f5c0000u,0x802f89f17fe40000u,0x802f8a0182040000u,
    0x802f8a10e4e80000u,0x802f8a20e4700000u,0x802f8a3182500000u,0x802f8a489b500000u,
    0x802f8a51831c0000u,0x802f8a6185200000u,0x802f8a7185300000u,0x802f8a8185380000u,
    0x802f8a9185300000u,0x802f8aa185e80000u,0x802f8ab186380000u,0x802f8ac186c80000u,
    0x802f8ad186900000u,0x802f8ae186bc0000u,0x802f8af187780000u,0x802f8b0187c80000u,
    0x802f8b1187d80000u,0x802f8b2188400000u,0x802f8b31886c0000u,0x802f8b4189740000u,
    0x802f8b518ac40000u,0x802f8b618b500000u,0x802f8b718d400000u,0x802f8b88ac300000u,
    0x802f8b918cf40000u,0x802f8ba18bf00000u,0x802f8bb18da00000u,0x802f8bc18e0c0000u,
    0x802f8bd18f900000u,0x802f8be8afc40000u,0x802f8bf190880000u,0x802f8c018f140000u,
    0x802f8c118ea40000u,0x802f8c20e8b80000u,0x802f8c3191a40000u,0x802f8c4191f80000u,
    0x802f8c5192740000u,0x802f8c6191dc0000u,0x802f8c70e9b00000u,0x802f8c81953c0000u,
    0x802f8c9195b00000u,0x802f8ca8c0280000u,0x802f8cb1978c0000u,0x802f8cc19be00000u,
    0x802f8cd199240000u,0x802f8ce0ec640000u,0x802f8cf19a440000u,0x802f8d00ec200000u,
    0x802f8d10eb900000u,0x802f8d2146480000u,0x802f8d3146540000u,0x802f8d419c000000u,
    0x802f8d519a700000u,0x802f8d6202b40000u,0x802f8d710f640000u,0x802f8d819c5c0000u,
    0x802f8d919c6c0000u,0x802f8da19c840000u,0x802f8db19d780000u,0x802f8dc19d4c0000u,
    0x802f8dd8cf0c0000u,0x802f8de0ed240000u,0x802f8df19fe80000u,0x802f8e019e140000u,
    0x802f8e11a1480000u,0x802f8e21a2140000u,0x802f8e38d1b40000u,0x802f8e41a2380000u,
    0x802f8e51a07c0000u,0x802f8e61a4500000u,0x802f8e70ee740000u,0x802f8e81a5080000u,
    0x802f8e91a68c0000u,0x802f8ea1a7a80000u,0x802f8eb1aaa00000u,0x802f8ec8da8c0000u,
    0x802f8ed1ab6c0000u,0x802f8ee0f0600000u,0x802f8ef1ac840000u,0x802f8f08e29c0000u,
    0x802f8f11ad500000u,0x802f8f20f1380000u,0x802f8f31adc80000u,0x802f8f41ae7c0000u,
    0x802f8f51aee80000u,0x802f8f61aeec0000u,0x802f8f78ea340000u,0x802f8f88742c0000u,
    0x802f8f98ebe80000u,0x802f8fa1b1380000u,0x802f8fb8f2f00000u,0x802f8fc1b2fc0000u,
    0x802f8fd1b3340000u,0x802f8fe1b19c0000u,0x802f8ff1b4580000u,0x802f9001b4f80000u,
    0x802f9011b5dc0000u,0x802f9021b5040000u,0x802f9031b5a40000u,0x802f9041b5e00000u,
    0x802f9051b6140000u,0x802f9068f4780000u,0x802f9071b4d00000u,0x802f9081b8bc0000u,
    0x802f9091b9b80000u,0x802f90a0f4cc0000u,0x802f90b1bb2c0000u,0x802f90c1bb1c0000u,
    0x802f90d8fb440000u,0x802f90e1b7e40000u,0x802f90f1bdb80000u,0x802f9108fd780000u,
    0x802f9118fe380000u,0x802f9121bf180000u,0x802f9131c0e40000u,0x802f9141c0780000u,
    0x802f9151c06c0000u,0x802f9160f6580000u,0x802f9171c1280000u,0x802f9181c1f40000u,
    0x802f9191c1dc0000u,0x802f91a1c2b40000u,0x802f91b814940000u,0x802f91c1c5140000u,
    0x802f91d9098c0000u,0x802f91e1c6700000u,0x802f91f90eac0000u,0x802f9201c8a00000u,
    0x802f9211c8d40000u,0x802f9221c9400000u,0x802f923918200000u,0x802f9241ca000000u,
    0x802f9251ca540000u,0x802f92691cd40000u,0x802f927920500000u,0x802f9281cde80000u,
    0x802f9291ce2c0000u,0x802f92a0fab00000u,0x802f92b1ce940000u,0x802f92c0fae00000u,
    0x802f92d0fae00000u,0x802f92e1d11c0000u,0x802f92f1d1700000u,0x802f9301d1c40000u,
    0x802f9311d2140000u,0x802f9321d3280000u,0x802f9330fc6c0000u,0x802f9341d4900000u,
    0x802f935930d80000u,0x802f9361d4f80000u,0x802f937932480000u,0x802f9381d5c00000u,
    0x802f9398867c0000u,0x802f93a1d8400000u,0x802f93b93e840000u,0x802f93c93ee00000u,
    0x802f93d941100000u,0x802f93e0fff00000u,0x802f93f100200000u,0x802f9401dbd00000u,
    0x802f941943cc0000u,0x802f942943c80000u,0x802f943944640000u,0x802f944944cc0000u,
    0x802f9451dc780000u,0x802f9461dc7c0000u,0x802f9471dc7c0000u,0x802f9481dd280000u,
    0x802f949100e40000u,0x802f94a1de2c0000u,0x802f94b101180000u,0x802f94c102580000u,
    0x802f94d950740000u,0x802f94e1e1380000u,0x802f94f1e2300000u,0x802f9501e3300000u,
    0x802f9511038c0000u,0x802f952958980000u,0x802f9531e5580000u,0x802f95495a680000u,
    0x802f95595b140000u,0x802f9561e63c0000u,0x802f9571e7ac0000u,0x802f958104bc0000u,
    0x802f9591e9000000u,0x802f95a1e9280000u,0x802f95b1e93c0000u,0x802f95c965f00000u,
    0x802f95d96a9c0000u,0x802f95e96a9c0000u,0x802f95f1ebb80000u,0x802f960108080000u,
    0x802f96196eac0000u,0x802f9621ef180000u,0x802f9631ef240000u,0x802f9641089c0000u,
    0x802f965972000000u,0x802f9661f3480000u,0x802f96710a800000u,0x802f9681f3a00000u,
    0x802f9691f38c0000u,0x802f96a1f4000000u,0x802f96b97e180000u,0x802f96c1f58c0000u,
    0x802f96d10c040000u,0x802f96e1f71c0000u,0x802f96f1f8080000u,0x802f9701f9140000u,
    0x802f97110cd00000u,0x802f972988a00000u,0x802f9739891c0000u,0x802f97410d640000u,
    0x802f97598b640000u,0x802f9761fde80000u,0x802f97798cf80000u,0x802f9781fe540000u,
    0x802f9791ffe80000u,0x802f97a200140000u,0x802f97b993680000u,0x802f97c9948c0000u,
    0x802f97d201800000u,0x802f97e996a00000u,0x802f97f201c00000u,0x802f9808cd7c0000u,
    0x802f98110f540000u,0x802f982202c80000u,0x802f9832040c0000u,0x802f9841102c0000u,
    0x802f985204f80000u,0x802f98616ad40000u,0x802f98799e9c0000u,0x802f98899ed40000u,
    0x802f9898ce4c0000u,0x802f98a8ce700000u,0x802f98b208040000u,0x802f98c208100000u,
    0x802f98d23e780000u,0x802f98e111ac0000u,0x802f98f20a440000u,0x802f99020a2c0000u,
    0x802f99120a740000u,0x802f99214acc0000u,0x802f99320ac40000u,0x802f99420acc0000u,
    0x802f99520af40000u,0x802f99620b980000u,0x802f9979acf00000u,0x802f99820b940000u,
    0x802f99920c740000u,0x802f99a20d8c0000u,0x802f99b20eb40000u,0x802f99c20c8c0000u,
    0x802f99d20ef40000u,0x802f99e20f9c0000u,0x802f99f2115c0000u,0x802f9a020d4c0000u,
    0x802f9a120f280000u,0x802f9a220f300000u,0x802f9a320f700000u,0x802f9a49b0d80000u,
    0x802f9a59b5ac0000u,0x802f9a69b3540000u,0x802f9a7114ac0000u,0x802f9a8213c40000u,
    0x802f9a9213cc0000u,0x802f9aa214580000u,0x802f9ab9cf280000u,0x802f9ac215900000u,
    0x802f9ad9bcb00000u,0x802f9ae115740000u,0x802f9af115840000u,0x802f9b09bec40000u,
    0x802f9b19c3480000u,0x802f9b2115ac0000u,0x802f9b3219400000u,0x802f9b4219700000u,
    0x802f9b52199c0000u,0x802f9b6219a40000u,0x802f9b721aa40000u,0x802f9b821a200000u,
    0x802f9b921c380000u,0x802f9ba21b880000u,0x802f9bb21de40000u,0x802f9bc21ca00000u,
    0x802f9bd21dac0000u,0x802f9be21e180000u,0x802f9bf1175c0000u,0x802f9c021f840000u,
    0x802f9c1220040000u,0x802f9c2117e40000u,0x802f9c3221800000u,0x802f9c42218c0000u,
    0x802f9c59d99c0000u,0x802f9c62235c0000u,0x802f9c7223780000u,0x802f9c8118d40000u,
    0x802f9c9223e80000u,0x802f9ca0d2ec0000u,0x802f9cb9e2b80000u,0x802f9cc9e5980000u,
    0x802f9cd11af80000u,0x802f9ce11b1c0000u,0x802f9cf22a800000u,0x802f9d022bb40000u,
    0x802f9d122e280000u,0x802f9d2231540000u,0x802f9d39f2a00000u,0x802f9d4232ac0000u,
    0x802f9d5233040000u,0x802f9d62346c0000u,0x802f9d7235dc0000u,0x802f9d89fcbc0000u,
    0x802f9d9820100000u,0x802f9da2372c0000u,0x802f9db236f00000u,0x802f9dc237c00000u,
    0x802f9dd823780000u,0x802f9de23b500000u,0x802f9df23ce00000u,0x802f9e0a17480000u,
    0x802f9e1a17b40000u,0x802f9e2242500000u,0x802f9e3243c40000u,0x802f9e4244440000u,
    0x802f9e5a1cb80000u,0x802f9e62446c0000u,0x802f9e7248e00000u,0x802f9e824b5c0000u,
    0x802f9e924b600000u,0x802f9ea249f00000u,0x802f9eb24fe40000u,0x802f9ec250540000u,
    0x802f9eda2fe80000u,0x802f9ee2562c0000u,0x802f9ef126540000u,0x802f9f0256dc0000u,
    0x802f9f1a35dc0000u,0x802f9f2127980000u,0x802f9f325b0c0000u,0x802f9f4176c80000u,
    0x802f9f525c8c0000u,0x802f9f6a45140000u,0x802f9f7a48680000u,0x802f9f8129b80000u,
    0x802f9f9129d80000u,0x802f9fa25f800000u,0x802f9fba50280000u,0x802f9fc12ac80000u,
    0x802f9fda52580000u,0x802f9fe2602c0000u,0x802f9ff2602c0000u,0x802fa00260a40000u,
    0x802fa01a56d80000u,0x802fa02263880000u,0x802fa0312ccc0000u,0x802fa04264a40000u,
    0x802fa052669c0000u,0x802fa06267080000u,0x802fa07267f80000u,0x802fa0812f380000u,
    0x802fa09a6cc00000u,0x802fa0a26c480000u,0x802fa0b271000000u,0x802fa0c273f40000u,
    0x802fa0d133380000u,0x802fa0e133b40000u,0x802fa0f2759c0000u,0x802fa10a83380000u,
    0x802fa11133e00000u,0x802fa12a84140000u,0x802fa13a88380000u,0x802fa14a8a440000u,
    0x802fa1527aec0000u,0x802fa16135580000u,0x802fa1727be40000u,0x802fa1827bf80000u,
    0x802fa1927c140000u,0x802fa1a27c3c0000u,0x802fa1b27c580000u,0x802fa1c27cec0000u,
    0x802fa1da98000000u,
};
static const uint16_t tfm__uc_comp[941] = {
    912,909,913,0,1,2,3,53,55,238,4,572,5,165,208,210,
    570,415,57,417,419,421,59,61,63,65,6,425,67,427,431,433,
    429,7,8,9,598,69,71,73,10,596,77,212,214,594,240,75,
    439,441,445,198,79,447,81,83,187,85,87,449,453,236,451,455,
    457,11,12,13,89,91,93,97,14,610,167,216,218,612,95,459,
    98,463,189,465,100,467,102,106,469,104,475,473,477,479,481,200,
    108,15,483,112,485,110,489,487,16,17,18,19,114,116,246,20,
    616,118,169,220,222,161,614,191,499,501,120,503,124,224,226,505,
    122,509,126,128,511,132,513,232,130,521,136,523,234,134,527,525,
    21,22,23,138,140,142,24,640,144,146,171,228,230,163,638,529,
    148,533,531,539,541,543,545,150,549,547,551,553,555,652,25,152,
    658,250,557,154,656,654,155,559,157,159,561,563,26,27,28,29,
    54,56,239,30,573,31,166,209,211,571,416,58,418,420,422,60,
    62,64,66,32,426,68,428,432,434,430,33,34,35,599,70,72,
    74,36,597,78,213,215,595,241,76,440,442,446,199,80,448,82,
    84,188,86,88,450,454,237,452,456,458,565,37,38,39,90,92,
    94,40,611,168,217,219,613,96,460,99,197,464,190,466,101,468,
    103,107,470,105,476,474,478,480,482,201,109,41,484,113,486,111,
    490,488,42,43,44,45,115,117,247,46,617,119,170,221,223,162,
    615,192,500,502,121,504,125,225,227,506,123,510,127,129,512,133,
    514,233,131,522,566,137,524,235,135,528,526,47,48,49,139,141,
    143,50,641,145,147,172,229,231,164,639,530,149,534,532,540,542,
    544,546,151,550,548,567,552,554,556,653,51,153,659,251,558,52,
    657,568,655,156,560,158,160,562,564,875,258,835,576,574,580,578,
    181,202,204,185,423,602,600,606,604,461,620,618,624,622,491,244,
    493,242,206,179,175,173,177,577,575,581,579,182,203,205,186,424,
    603,601,607,605,462,621,619,625,623,492,245,494,243,207,180,176,
    174,178,586,584,590,588,587,585,591,589,435,437,436,438,495,497,
    496,498,515,516,517,518,535,536,537,538,569,630,628,634,632,636,
    631,629,635,633,637,644,642,648,646,650,645,643,649,647,651,195,
    193,194,183,184,443,444,248,249,196,831,259,830,829,668,669,833,
    841,261,682,683,843,262,696,697,845,857,263,856,855,268,712,713,
    883,264,726,727,874,872,265,871,870,269,740,885,266,752,753,887,
    826,838,760,270,823,822,660,661,827,825,762,271,676,677,764,272,
    688,689,839,837,766,273,850,849,275,704,705,853,768,277,720,721,
    866,867,770,278,863,862,276,732,733,868,772,279,744,745,881,879,
    851,267,854,864,274,869,880,280,281,285,302,304,284,282,306,283,
    300,310,312,287,314,289,316,286,318,324,288,326,328,330,332,322,
    303,305,293,291,307,292,301,311,313,296,315,290,317,295,319,325,
    297,327,329,331,333,323,294,298,299,308,309,320,321,334,335,337,
    336,338,340,341,339,342,343,344,353,354,365,364,366,369,370,372,
    371,373,374,377,375,376,378,379,381,380,382,383,385,384,403,404,
    405,406,407,408,409,410,411,412,413,414,471,472,507,508,519,520,
    582,592,583,593,608,609,626,627,662,664,666,774,663,665,667,775,
    776,777,778,779,780,781,670,672,674,782,671,673,675,783,784,785,
    786,787,788,789,678,680,679,681,684,686,685,687,690,692,694,790,
    691,693,695,791,792,793,794,795,796,797,698,700,702,798,699,701,
    703,799,800,801,802,803,804,805,706,708,710,707,709,711,714,716,
    718,715,717,719,722,724,723,725,728,730,729,731,734,736,738,735,
    737,739,741,742,743,746,748,750,806,747,749,751,807,808,809,810,
    811,812,813,754,756,758,814,755,757,759,815,816,817,818,819,820,
    821,824,836,878,828,846,847,848,840,882,859,860,861,894,895,896,
    897,899,898,900,901,902,903,904,905,906,907,908,911,910,914,915,
    916,917,918,919,920,921,930,931,922,923,924,925,932,933,926,927,
    928,929,934,935,936,937,966,941,942,943,944,945,946,947,948,949,
    950,951,952,953,954,955,956,957,958,959,960,961,962,963,964,965,
    967,993,968,969,970,971,972,973,974,975,976,977,978,979,980,981,
    982,983,984,985,986,987,988,989,990,991,992,994,995,996,997,998,
    1493,1494,1495,1496,1497,1498,1499,1501,1500,1502,1503,1504,1505,
};
#define TFM__TOK_HEADER_BYTES 64
#define TFM__TOK_HEADER_USED 52 /* bytes before the reserved tail */
#define TFM__BPE_MAX_BYTES 1024 /* bytes merged at once: the stack holds one int32 id per byte */
#define TFM__NFC_WINDOW 1024    /* bytes of normalized text scanned at once */
#define TFM__NFC_MAX_RUN 32     /* raw code points normalized as one unit */
#define TFM__HASH_MAX_RUN 512   /* longest probe run accepted in the lookup tables */
#define TFM__NFC_MAX_CPS (TFM__NFC_MAX_RUN * TFM__UC_MAX_DECOMP)
#define TFM__CP_INVALID 0x110000u /* a byte that is not part of valid UTF-8 */
#define TFM__SPM_MIN_SCORE -1e10f /* pairs must score above this to merge (as llama2.c) */
#define TFM__TOK_FLAGS (TFM_TOKFLAG_NFC | TFM_TOKFLAG_PREFIX_SPACE | TFM_TOKFLAG_ADD_BOS | \
                        TFM_TOKFLAG_PREFIX_FIRST | TFM_TOKFLAG_PREFIX_UNLESS_SPACE | \
                        TFM_TOKFLAG_IGNORE_MERGES)
#define TFM__TOK_ATTRS (TFM_TOKATTR_SPECIAL | TFM_TOKATTR_ADDED | TFM_TOKATTR_BYTE)
#define TFM__HANGUL_S 0xAC00u
#define TFM__HANGUL_L 0x1100u
#define TFM__HANGUL_V 0x1161u
#define TFM__HANGUL_T 0x11A7u
#define TFM__HANGUL_NV 21u
#define TFM__HANGUL_NT 28u
#define TFM__HANGUL_NS 11172u

enum { TFM__UC_OTHER = 0, TFM__UC_LETTER = 1, TFM__UC_NUMBER = 2, TFM__UC_SPACE = 3,
       TFM__UC_BAD = 4 };

struct tfm__tokenizer {
    tfm_tokenizer_kind kind;
    tfm_pretok pretok;
    uint32_t flags;
    int32_t n_tokens, n_merges;
    int32_t bos_id, eos_id, unk_id, pad_id;
    const unsigned char *offsets; /* u32[n_tokens + 1] in the blob (which outlives us) */
    const unsigned char *scores;  /* f32[n_tokens] */
    const unsigned char *attrs;   /* u8[n_tokens] */
    const unsigned char *merges;  /* u32[n_merges][3]: left, right, merged */
    const unsigned char *text;    /* u8[text_bytes] */
    const char *chat_text;        /* chat template, then bos_token, then eos_token (>>chat) */
    size_t chat_template_bytes, chat_bos_bytes, chat_eos_bytes;
    int32_t *merge_hash;          /* [merge_cap] merge rank by (left, right); -1 empty */
    int32_t *token_hash;          /* [token_cap] token id by text; -1 empty */
    int32_t *added;               /* [n_added] ADDED ids by (first byte, longest first) */
    size_t text_bytes, merge_cap, token_cap, n_added, alloc_bytes;
    uint32_t added_first[257];    /* added[added_first[b] .. added_first[b + 1]) start with b */
    int32_t byte_id[256];         /* token of each single byte; -1 none */
    tfm_logger logger;
};

/* Run tables are sorted starts with a value in the low `shift` bits: the value at cp. */
TFM_PRIVATE uint32_t tfm__uc_lookup(const uint32_t *runs, size_t n, int shift, uint32_t cp) {
    size_t lo = 0, hi = n; /* runs[0] starts at cp 0, so the answer exists */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((runs[mid] >> shift) <= cp) lo = mid; else hi = mid;
    }
    return runs[lo] & ((1u << shift) - 1u);
}

TFM_PRIVATE int tfm__uc_class_of(uint32_t cp) {
    if (cp >= TFM__CP_INVALID) return TFM__UC_BAD;
    if (cp < 0x80u) {
        if ((cp | 0x20u) >= 'a' && (cp | 0x20u) <= 'z') return TFM__UC_LETTER;
        if (cp >= '0' && cp <= '9') return TFM__UC_NUMBER;
        if (cp == ' ' || (cp >= 0x09u && cp <= 0x0Du)) return TFM__UC_SPACE;
        return TFM__UC_OTHER;
    }
    return (int)tfm__uc_lookup(tfm__uc_class, sizeof tfm__uc_class / sizeof tfm__uc_class[0], 2,
                               cp);
}

TFM_PRIVATE unsigned tfm__uc_ccc_of(uint32_t cp) {
    if (cp < TFM__UC_FIRST_NFC || cp >= TFM__CP_INVALID) return 0;
    return tfm__uc_lookup(tfm__uc_ccc, sizeof tfm__uc_ccc / sizeof tfm__uc_ccc[0], 8, cp);
}

/* True if cp can change under NFC or change its neighbours (see tfm__uc_nfc_qc). */
TFM_PRIVATE bool tfm__uc_nfc_attention(uint32_t cp) {
    if (cp < TFM__UC_FIRST_NFC || cp >= TFM__CP_INVALID) return false;
    return tfm__uc_lookup(tfm__uc_nfc_qc, sizeof tfm__uc_nfc_qc / sizeof tfm__uc_nfc_qc[0], 1, cp);
}

/* Decode one code point at s[0..n) (n >= 1); returns its length. Anything that is not
   shortest-form UTF-8 of a scalar value is one byte with *cp = TFM__CP_INVALID. */
TFM_PRIVATE size_t tfm__utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned b = s[0], lo = 0x80, hi = 0xBF;
    size_t len, i;
    uint32_t c;
    *cp = TFM__CP_INVALID;
    if (b < 0x80u) { *cp = b; return 1; }
    if (b >= 0xC2u && b <= 0xDFu) { len = 2; c = b & 0x1Fu; }
    else if (b >= 0xE0u && b <= 0xEFu) {
        len = 3; c = b & 0x0Fu;
        if (b == 0xE0u) lo = 0xA0; else if (b == 0xEDu) hi = 0x9F;
    } else if (b >= 0xF0u && b <= 0xF4u) {
        len = 4; c = b & 0x07u;
        if (b == 0xF0u) lo = 0x90; else if (b == 0xF4u) hi = 0x8F;
    } else {
        return 1;
    }
    if (n < len || s[1] < lo || s[1] > hi) return 1;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xC0u) != 0x80u) return 1;
        c = (c << 6) | (s[i] & 0x3Fu);
    }
    *cp = c;
    return len;
}

/* Encode cp (a scalar value) into out; returns 1..4. */
TFM_PRIVATE size_t tfm__utf8_put(uint32_t cp, unsigned char *out) {
    if (cp < 0x80u) { out[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800u) {
        out[0] = (unsigned char)(0xC0u | (cp >> 6));
        out[1] = (unsigned char)(0x80u | (cp & 0x3Fu));
        return 2;
    }
    if (cp < 0x10000u) {
        out[0] = (unsigned char)(0xE0u | (cp >> 12));
        out[1] = (unsigned char)(0x80u | ((cp >> 6) & 0x3Fu));
        out[2] = (unsigned char)(0x80u | (cp & 0x3Fu));
        return 3;
    }
    out[0] = (unsigned char)(0xF0u | (cp >> 18));
    out[1] = (unsigned char)(0x80u | ((cp >> 12) & 0x3Fu));
    out[2] = (unsigned char)(0x80u | ((cp >> 6) & 0x3Fu));
    out[3] = (unsigned char)(0x80u | (cp & 0x3Fu));
    return 4;
}

/* --- NFC: canonical decomposition, canonical ordering, canonical composition --- */

#define TFM__UC_DEC_CP(e) ((uint32_t)((e) >> 36) & 0x3FFFFu)
#define TFM__UC_DEC_A(e) ((uint32_t)((e) >> 18) & 0x3FFFFu)
#define TFM__UC_DEC_B(e) ((uint32_t)(e) & 0x3FFFFu)

/* Index of cp in tfm__uc_decomp, or -1. */
TFM_PRIVATE int tfm__uc_decomp_find(uint32_t cp) {
    size_t lo = 0, hi = sizeof tfm__uc_decomp / sizeof tfm__uc_decomp[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t c = TFM__UC_DEC_CP(tfm__uc_decomp[mid]);
        if (c == cp) return (int)mid;
        if (c < cp) lo = mid + 1; else hi = mid;
    }
    return -1;
}

/* Full canonical decomposition of cp appended to out[*n..]; out has room for
   TFM__UC_MAX_DECOMP more code points. Depth is bounded by the (constant) tables. */
TFM_PRIVATE void tfm__nfc_decompose(uint32_t cp, uint32_t *out, size_t *n) {
    int i;
    if (cp >= TFM__HANGUL_S && cp < TFM__HANGUL_S + TFM__HANGUL_NS) {
        uint32_t s = cp - TFM__HANGUL_S, t = s % TFM__HANGUL_NT;
        out[(*n)++] = TFM__HANGUL_L + s / (TFM__HANGUL_NV * TFM__HANGUL_NT);
        out[(*n)++] = TFM__HANGUL_V + (s % (TFM__HANGUL_NV * TFM__HANGUL_NT)) / TFM__HANGUL_NT;
        if (t) out[(*n)++] = TFM__HANGUL_T + t;
        return;
    }
    i = cp < 0xC0u ? -1 : tfm__uc_decomp_find(cp); /* no decompositions below U+00C0 */
    if (i < 0) {
        out[(*n)++] = cp;
        return;
    }
    tfm__nfc_decompose(TFM__UC_DEC_A(tfm__uc_decomp[i]), out, n);
    if (TFM__UC_DEC_B(tfm__uc_decomp[i]))
        tfm__nfc_decompose(TFM__UC_DEC_B(tfm__uc_decomp[i]), out, n);
}

/* The primary composite of (a, b), or 0. */
TFM_PRIVATE uint32_t tfm__nfc_compose_pair(uint32_t a, uint32_t b) {
    size_t lo = 0, hi = sizeof tfm__uc_comp / sizeof tfm__uc_comp[0];
    uint64_t key = ((uint64_t)a << 18) | b;
    if (a >= TFM__HANGUL_L && a < TFM__HANGUL_L + 19u && b >= TFM__HANGUL_V &&
        b < TFM__HANGUL_V + TFM__HANGUL_NV)
        return TFM__HANGUL_S + ((a - TFM__HANGUL_L) * TFM__HANGUL_NV + b - TFM__HANGUL_V) *
                                   TFM__HANGUL_NT;
    if (a >= TFM__HANGUL_S && a < TFM__HANGUL_S + TFM__HANGUL_NS &&
        (a - TFM__HANGUL_S) % TFM__HANGUL_NT == 0 && b > TFM__HANGUL_T &&
        b < TFM__HANGUL_T + TFM__HANGUL_NT)
        return a + (b - TFM__HANGUL_T);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t e = tfm__uc_decomp[tfm__uc_comp[mid]];
        uint64_t k = e & 0xFFFFFFFFFull; /* (first << 18) | second */
        if (k == key) return TFM__UC_DEC_CP(e);
        if (k < key) lo = mid + 1; else hi = mid;
    }
    return 0;
}

/* Canonical ordering (stable by combining class) and composition of cps[0..n) in place;
   returns the new count. */
TFM_PRIVATE size_t tfm__nfc_compose(uint32_t *cps, size_t n) {
    unsigned char cc[TFM__NFC_MAX_CPS];
    size_t i, j, out, starter = 0;
    unsigned last;
    for (i = 0; i < n; i++) {
        uint32_t c = cps[i];
        unsigned k = tfm__uc_ccc_of(c);
        for (j = i; j > 0 && k != 0 && cc[j - 1] > k; j--) {
            cps[j] = cps[j - 1];
            cc[j] = cc[j - 1];
        }
        cps[j] = c;
        cc[j] = (unsigned char)k;
    }
    if (n == 0) return 0;
    last = cc[0] ? 256u : 0u; /* a leading mark has no starter to compose with */
    for (i = 1, out = 1; i < n; i++) {
        uint32_t comp = tfm__nfc_compose_pair(cps[starter], cps[i]);
        if (comp && (last < cc[i] || last == 0)) {
            cps[starter] = comp;
            continue;
        }
        if (cc[i] == 0) starter = out;
        last = cc[i];
        cc[out] = cc[i];
        cps[out++] = cps[i];
    }
    return out;
}

typedef struct tfm__nfc_src {
    const unsigned char *s;
    size_t n, pos;
} tfm__nfc_src;

/* Normalize whole units of src into dst[0..cap); returns the bytes written. A unit is a code
   point that needs no attention, or a starter with the code points needing attention after it
   (at most TFM__NFC_MAX_RUN). Stops before a unit that does not fit. */
TFM_PRIVATE size_t tfm__nfc_fill(tfm__nfc_src *src, unsigned char *dst, size_t cap) {
    uint32_t cps[TFM__NFC_MAX_CPS];
    size_t written = 0;
    while (src->pos < src->n) {
        const unsigned char *s = src->s;
        size_t pos = src->pos, len, n_cps = 0, n_raw = 0, bytes = 0, i;
        uint32_t cp, next = TFM__CP_INVALID;
        len = tfm__utf8_next(s + pos, src->n - pos, &cp);
        if (pos + len < src->n) tfm__utf8_next(s + pos + len, src->n - pos - len, &next);
        if (cp == TFM__CP_INVALID || (!tfm__uc_nfc_attention(cp) && !tfm__uc_nfc_attention(next))) {
            if (cap - written < len) break;
            memcpy(dst + written, s + pos, len);
            written += len;
            src->pos += len;
            continue;
        }
        /* the unit: this code point and the ones needing attention after it */
        for (;;) {
            tfm__nfc_decompose(cp, cps, &n_cps);
            pos += len;
            n_raw++;
            if (pos >= src->n || n_raw == TFM__NFC_MAX_RUN) break;
            len = tfm__utf8_next(s + pos, src->n - pos, &cp);
            if (!tfm__uc_nfc_attention(cp)) break;
        }
        n_cps = tfm__nfc_compose(cps, n_cps);
        for (i = 0; i < n_cps; i++)
            bytes += cps[i] < 0x80u ? 1 : cps[i] < 0x800u ? 2 : cps[i] < 0x10000u ? 3 : 4;
        if (cap - written < bytes) break;
        for (i = 0; i < n_cps; i++) written += tfm__utf8_put(cps[i], dst + written);
        src->pos = pos;
    }
    return written;
}

/* --- the tokenizer tables, built once at create time --- */

TFM_PRIVATE const unsigned char *tfm__tok_text(const tfm__tokenizer *t, int32_t id, size_t *n) {
    uint32_t a = tfm__rd_u32(t->offsets + 4 * (size_t)id);
    *n = tfm__rd_u32(t->offsets + 4 * (size_t)id + 4) - a;
    return t->text + a;
}

TFM_PRIVATE uint32_t tfm__tok_attr(const tfm__tokenizer *t, int32_t id) { return t->attrs[id]; }

TFM_PRIVATE size_t tfm__hash_pair(int32_t left, int32_t right) {
    uint32_t h = (uint32_t)left * 0x9E3779B1u ^ ((uint32_t)right + 0x7F4A7C15u) * 0x85EBCA77u;
    return (size_t)(h ^ (h >> 15));
}

/* FNV-1a over up to two byte ranges (a token text, or the concatenation of two). */
TFM_PRIVATE size_t tfm__hash_bytes(const unsigned char *a, size_t na, const unsigned char *b,
                                   size_t nb) {
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < na; i++) h = (h ^ a[i]) * 16777619u;
    for (i = 0; i < nb; i++) h = (h ^ b[i]) * 16777619u;
    return (size_t)(h ^ (h >> 16));
}

/* Rank of the merge (left, right), or -1. */
TFM_PRIVATE int32_t tfm__tok_merge_rank(const tfm__tokenizer *t, int32_t left, int32_t right) {
    size_t mask = t->merge_cap - 1, i = tfm__hash_pair(left, right) & mask;
    for (;; i = (i + 1) & mask) {
        int32_t r = t->merge_hash[i];
        const unsigned char *m;
        if (r < 0) return -1;
        m = t->merges + 12 * (size_t)r;
        if ((int32_t)tfm__rd_u32(m) == left && (int32_t)tfm__rd_u32(m + 4) == right) return r;
    }
}

/* Id of the token whose text is a followed by b, or -1. */
TFM_PRIVATE int32_t tfm__tok_find(const tfm__tokenizer *t, const unsigned char *a, size_t na,
                                  const unsigned char *b, size_t nb) {
    size_t mask = t->token_cap - 1, i = tfm__hash_bytes(a, na, b, nb) & mask;
    for (;; i = (i + 1) & mask) {
        int32_t id = t->token_hash[i];
        size_t n;
        const unsigned char *s;
        if (id < 0) return -1;
        s = tfm__tok_text(t, id, &n);
        if (n == na + nb && (na == 0 || memcmp(s, a, na) == 0) &&
            (nb == 0 || memcmp(s + na, b, nb) == 0))
            return id;
    }
}

/* Added tokens sort by first byte, then longest first, then id: the first one that matches at
   a position is the leftmost-longest match. */
TFM_PRIVATE bool tfm__tok_added_less(const tfm__tokenizer *t, int32_t x, int32_t y) {
    size_t nx, ny;
    const unsigned char *sx = tfm__tok_text(t, x, &nx), *sy = tfm__tok_text(t, y, &ny);
    if (sx[0] != sy[0]) return sx[0] < sy[0];
    if (nx != ny) return nx > ny;
    return x < y;
}

/* Heap sort (no recursion, no allocation, O(n log n) for any input). */
TFM_PRIVATE void tfm__tok_sift(const tfm__tokenizer *t, int32_t *v, size_t root, size_t end) {
    for (;;) {
        size_t child = 2 * root + 1;
        int32_t tmp;
        if (child >= end) return;
        if (child + 1 < end && tfm__tok_added_less(t, v[child], v[child + 1])) child++;
        if (!tfm__tok_added_less(t, v[root], v[child])) return;
        tmp = v[root];
        v[root] = v[child];
        v[child] = tmp;
        root = child;
    }
}

TFM_PRIVATE void tfm__tok_sort_added(const tfm__tokenizer *t, int32_t *v, size_t n) {
    size_t i;
    for (i = n / 2; i-- > 0;) tfm__tok_sift(t, v, i, n);
    for (i = n; i-- > 1;) {
        int32_t tmp = v[0];
        v[0] = v[i];
        v[i] = tmp;
        tfm__tok_sift(t, v, 0, i);
    }
}

TFM_PRIVATE void tfm__tokenizer_destroy(tfm__tokenizer *t, const tfm_allocator *a) {
    if (t) tfm__free(a, t, t->alloc_bytes);
}

/* Place a section of count * elem bytes at *off; false on overflow. */
TFM_PRIVATE bool tfm__tok_section(size_t *off, size_t count, size_t elem, size_t *start) {
    size_t bytes;
    *start = *off;
    return tfm__mul_size(count, elem, &bytes) && tfm__add_size(*off, bytes, off);
}

/* Header fields and the section layout, checked against blob_bytes before any pointer. */
TFM_PRIVATE tfm_result tfm__tok_parse_header(tfm__tokenizer *t, const unsigned char *blob,
                                             size_t blob_bytes, const tfm_logger *lg) {
    uint32_t kind, pretok, n_tokens, n_merges, text_bytes, chat[3];
    size_t i, off = TFM__TOK_HEADER_BYTES, o_off, o_scores, o_attrs, o_merges, o_text, o_chat;
    int32_t *special[4];
    if (!blob || blob_bytes < TFM__TOK_HEADER_BYTES)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: blob of %zu bytes is shorter than its "
                        "%d-byte header", blob_bytes, TFM__TOK_HEADER_BYTES);
    kind = tfm__rd_u32(blob);
    n_tokens = tfm__rd_u32(blob + 4);
    n_merges = tfm__rd_u32(blob + 8);
    t->flags = tfm__rd_u32(blob + 12);
    pretok = tfm__rd_u32(blob + 16);
    text_bytes = tfm__rd_u32(blob + 36);
    for (i = 0; i < 3; i++) chat[i] = tfm__rd_u32(blob + 40 + 4 * i); /* template, bos, eos */
    for (i = TFM__TOK_HEADER_USED; i < TFM__TOK_HEADER_BYTES; i++)
        if (blob[i])
            return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: reserved byte %zu is not 0", i);
    if (kind == TFM_TOKENIZER_NONE)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: blob of kind 0 (none)");
    if (kind != TFM_TOKENIZER_BPE_BYTES && kind != TFM_TOKENIZER_SPM)
        return tfm__log(lg, TFM_ERR_UNSUPPORTED, "tokenizer: kind %u is not supported", kind);
    if (pretok > TFM_PRETOK_QWEN2)
        return tfm__log(lg, TFM_ERR_UNSUPPORTED, "tokenizer: pre-tokenizer %u is unknown", pretok);
    if (t->flags & ~(uint32_t)TFM__TOK_FLAGS)
        return tfm__log(lg, TFM_ERR_UNSUPPORTED, "tokenizer: unknown flags 0x%x", t->flags);
    if (n_tokens == 0 || n_tokens > (uint32_t)TFM_MAX_VOCAB || n_merges > 0x7FFFFFFFu)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: %u tokens, %u merges (max %d tokens)",
                        n_tokens, n_merges, TFM_MAX_VOCAB);
    t->kind = (tfm_tokenizer_kind)kind;
    t->pretok = (tfm_pretok)pretok;
    t->n_tokens = (int32_t)n_tokens;
    t->n_merges = (int32_t)n_merges;
    special[0] = &t->bos_id; special[1] = &t->eos_id; special[2] = &t->unk_id;
    special[3] = &t->pad_id;
    for (i = 0; i < 4; i++) {
        *special[i] = (int32_t)tfm__rd_u32(blob + 20 + 4 * i);
        if (*special[i] < -1 || *special[i] >= t->n_tokens)
            return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: special id %d (field %zu) is not a "
                            "token of %u", (int)*special[i], i, n_tokens);
    }
    if (!tfm__tok_section(&off, (size_t)n_tokens + 1, 4, &o_off) ||
        !tfm__tok_section(&off, n_tokens, 4, &o_scores) ||
        !tfm__tok_section(&off, n_tokens, 1, &o_attrs) || !tfm__align_size(off, 4, &off) ||
        !tfm__tok_section(&off, n_merges, 12, &o_merges) ||
        !tfm__tok_section(&off, text_bytes, 1, &o_text) ||
        !tfm__tok_section(&off, chat[0], 1, &o_chat) || !tfm__tok_section(&off, chat[1], 1, &i) ||
        !tfm__tok_section(&off, chat[2], 1, &i) || off != blob_bytes)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: %u tokens, %u merges, %u text bytes and "
                        "%u+%u+%u chat bytes do not add up to the blob's %zu bytes", n_tokens,
                        n_merges, text_bytes, chat[0], chat[1], chat[2], blob_bytes);
    t->offsets = blob + o_off;
    t->scores = blob + o_scores;
    t->attrs = blob + o_attrs;
    t->merges = blob + o_merges;
    t->text = blob + o_text;
    t->text_bytes = text_bytes;
    t->chat_text = TFM__CAST(const char *, TFM__CAST(const void *, blob + o_chat));
    t->chat_template_bytes = chat[0];
    t->chat_bos_bytes = chat[1];
    t->chat_eos_bytes = chat[2];
    return TFM_OK;
}

/* Offsets monotonic and inside the text, attributes known, merges in range and consistent. */
TFM_PRIVATE tfm_result tfm__tok_check(const tfm__tokenizer *t, const tfm_logger *lg) {
    uint32_t prev = tfm__rd_u32(t->offsets);
    uint32_t last = tfm__rd_u32(t->offsets + 4 * (size_t)t->n_tokens);
    int32_t i, j;
    if (prev != 0 || last != t->text_bytes)
        return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: text offsets run %u..%u, not 0..%zu", prev,
                        last, t->text_bytes);
    for (i = 0; i < t->n_tokens; i++) {
        uint32_t next = tfm__rd_u32(t->offsets + 4 * ((size_t)i + 1)), attr = t->attrs[i];
        if (next < prev)
            return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: token %d ends before it starts",
                            (int)i);
        if ((attr & ~(uint32_t)TFM__TOK_ATTRS) || ((attr & TFM_TOKATTR_BYTE) && next - prev != 1) ||
            ((attr & TFM_TOKATTR_ADDED) && next == prev))
            return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: token %d has bad attributes 0x%x "
                            "for its %u bytes", (int)i, attr, next - prev);
        if (t->kind == TFM_TOKENIZER_SPM && !(tfm__rd_f32(t->scores + 4 * (size_t)i) > -INFINITY &&
                                                tfm__rd_f32(t->scores + 4 * (size_t)i) < INFINITY))
            return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: token %d has a score that is not finite",
                            (int)i);
        prev = next;
    }
    for (i = 0; i < t->n_merges; i++) {
        const unsigned char *m = t->merges + 12 * (size_t)i, *s[3];
        uint32_t id[3];
        size_t n[3];
        for (j = 0; j < 3; j++) {
            id[j] = tfm__rd_u32(m + 4 * j);
            if (id[j] >= (uint32_t)t->n_tokens)
                return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: merge %d names token %u of %d",
                                (int)i, id[j], (int)t->n_tokens);
            s[j] = tfm__tok_text(t, (int32_t)id[j], &n[j]);
        }
        if (n[2] != n[0] + n[1] || memcmp(s[2], s[0], n[0]) != 0 || memcmp(s[2] + n[0], s[1], n[1]))
            return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: merge %d: token %u is not %u + %u",
                            (int)i, id[2], id[0], id[1]);
    }
    return TFM_OK;
}

/* Smallest power of two >= 2 * n, at least 16; false on overflow. */
TFM_PRIVATE bool tfm__tok_hash_cap(size_t n, size_t *cap) {
    size_t c = 16;
    while (c / 2 < n) {
        if (c > (size_t)-1 / 4) return false;
        c *= 2;
    }
    *cap = c;
    return true;
}

/* The longest run of occupied slots (circular): every lookup probes at most this far. */
TFM_PRIVATE size_t tfm__tok_max_run(const int32_t *h, size_t cap) {
    size_t i, run = 0, longest = 0;
    for (i = 0; i < 2 * cap && longest < cap; i++) {
        run = h[i & (cap - 1)] >= 0 ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    return longest;
}

/* False when a probe sequence grows past TFM__HASH_MAX_RUN: real vocabularies stay far below
   (GPT-2, GPT-NeoX: under 30), a blob crafted to collide would make lookups slow. */
TFM_PRIVATE bool tfm__tok_build_hashes(tfm__tokenizer *t) {
    size_t mask, k, probes;
    int32_t i, pass;
    memset(t->merge_hash, 0xFF, t->merge_cap * sizeof(int32_t));
    memset(t->token_hash, 0xFF, t->token_cap * sizeof(int32_t));
    mask = t->merge_cap - 1;
    for (i = 0; i < t->n_merges; i++) { /* a repeated pair keeps its lowest rank */
        const unsigned char *m = t->merges + 12 * (size_t)i;
        int32_t left = (int32_t)tfm__rd_u32(m), right = (int32_t)tfm__rd_u32(m + 4);
        k = tfm__hash_pair(left, right) & mask;
        for (probes = 0; t->merge_hash[k] >= 0; k = (k + 1) & mask) {
            const unsigned char *o = t->merges + 12 * (size_t)t->merge_hash[k];
            if ((int32_t)tfm__rd_u32(o) == left && (int32_t)tfm__rd_u32(o + 4) == right) break;
            if (++probes > TFM__HASH_MAX_RUN) return false;
        }
        if (t->merge_hash[k] < 0) t->merge_hash[k] = i;
    }
    mask = t->token_cap - 1;
    for (pass = 0; pass < 2; pass++) { /* vocabulary tokens win over added ones with one text */
        for (i = 0; i < t->n_tokens; i++) {
            size_t n;
            const unsigned char *s = tfm__tok_text(t, i, &n);
            if ((int32_t)((tfm__tok_attr(t, i) & TFM_TOKATTR_ADDED) != 0) != pass ||
                (tfm__tok_attr(t, i) & TFM_TOKATTR_BYTE))
                continue; /* byte tokens are reached through byte_id only */
            k = tfm__hash_bytes(s, n, NULL, 0) & mask;
            for (probes = 0; t->token_hash[k] >= 0; k = (k + 1) & mask) {
                size_t m;
                const unsigned char *o = tfm__tok_text(t, t->token_hash[k], &m);
                if (m == n && (n == 0 || memcmp(o, s, n) == 0)) break;
                if (++probes > TFM__HASH_MAX_RUN) return false;
            }
            if (t->token_hash[k] < 0) t->token_hash[k] = i;
        }
    }
    return tfm__tok_max_run(t->merge_hash, t->merge_cap) <= TFM__HASH_MAX_RUN &&
           tfm__tok_max_run(t->token_hash, t->token_cap) <= TFM__HASH_MAX_RUN;
}

/* Byte tokens (single-byte vocabulary tokens, or <0xNN> ones for SentencePiece) and the
   sorted added tokens. */
TFM_PRIVATE void tfm__tok_build_lists(tfm__tokenizer *t) {
    int32_t i;
    size_t k, n;
    for (k = 0; k < 256; k++) t->byte_id[k] = -1;
    for (i = 0, n = 0; i < t->n_tokens; i++) {
        size_t len;
        const unsigned char *s = tfm__tok_text(t, i, &len);
        uint32_t attr = tfm__tok_attr(t, i);
        bool byte_tok = t->kind == TFM_TOKENIZER_SPM ? (attr & TFM_TOKATTR_BYTE) != 0
                                                       : len == 1 && !(attr & TFM_TOKATTR_ADDED);
        if (byte_tok && t->byte_id[s[0]] < 0) t->byte_id[s[0]] = i;
        if (attr & TFM_TOKATTR_ADDED) t->added[n++] = i;
    }
    tfm__tok_sort_added(t, t->added, t->n_added);
    for (k = 0, n = 0; k <= 256; k++) {
        size_t len;
        while (n < t->n_added && tfm__tok_text(t, t->added[n], &len)[0] < k) n++;
        t->added_first[k] = (uint32_t)n;
    }
}

/* Validate the blob (hostile input), then build the lookup tables in one allocation.
   The blob must outlive the tokenizer: token texts and merges are read in place. */
TFM_PRIVATE tfm_result tfm__tokenizer_create(const unsigned char *blob, size_t blob_bytes,
                                             const tfm_allocator *a, const tfm_logger *lg,
                                             tfm__tokenizer **out) {
    tfm__tokenizer hdr, *t;
    unsigned char *base;
    size_t bytes, o_merge, o_token, o_added, k;
    int32_t i;
    tfm_result r;
    *out = NULL;
    memset(&hdr, 0, sizeof hdr);
    if ((r = tfm__tok_parse_header(&hdr, blob, blob_bytes, lg)) != TFM_OK) return r;
    if ((r = tfm__tok_check(&hdr, lg)) != TFM_OK) return r;
    for (i = 0; i < hdr.n_tokens; i++) hdr.n_added += (hdr.attrs[i] & TFM_TOKATTR_ADDED) != 0;
    bytes = (sizeof hdr + 7) & ~(size_t)7;
    if (!tfm__tok_hash_cap((size_t)hdr.n_merges, &hdr.merge_cap) ||
        !tfm__tok_hash_cap((size_t)hdr.n_tokens, &hdr.token_cap) ||
        !tfm__tok_section(&bytes, hdr.merge_cap, sizeof(int32_t), &o_merge) ||
        !tfm__tok_section(&bytes, hdr.token_cap, sizeof(int32_t), &o_token) ||
        !tfm__tok_section(&bytes, hdr.n_added, sizeof(int32_t), &o_added))
        return tfm__log(lg, TFM_ERR_OUT_OF_MEMORY, "tokenizer: tables exceed the address space");
    t = TFM__CAST(tfm__tokenizer *, tfm__alloc(a, bytes));
    if (!t) return tfm__log(lg, TFM_ERR_OUT_OF_MEMORY, "tokenizer: %zu bytes of tables", bytes);
    *t = hdr;
    base = TFM__CAST(unsigned char *, TFM__CAST(void *, t));
    t->alloc_bytes = bytes;
    t->merge_hash = TFM__CAST(int32_t *, TFM__CAST(void *, base + o_merge));
    t->token_hash = TFM__CAST(int32_t *, TFM__CAST(void *, base + o_token));
    t->added = TFM__CAST(int32_t *, TFM__CAST(void *, base + o_added));
    if (lg) t->logger = *lg;
    if (!tfm__tok_build_hashes(t)) {
        tfm__tokenizer_destroy(t, a);
        return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: merges or token texts collide in the "
                        "hash tables beyond %d probes (crafted input?)", TFM__HASH_MAX_RUN);
    }
    tfm__tok_build_lists(t);
    for (k = 0; k < 256 && t->kind == TFM_TOKENIZER_BPE_BYTES; k++) { /* all of UTF-8's bytes */
        if (t->byte_id[k] < 0 && k != 0xC0 && k != 0xC1 && k < 0xF5) {
            tfm__tokenizer_destroy(t, a);
            return tfm__log(lg, TFM_ERR_CORRUPT, "tokenizer: no single-byte token for byte 0x%02x",
                            (unsigned)k);
        }
    }
    *out = t;
    return TFM_OK;
}

TFM_PRIVATE void tfm__tokenizer_info(const tfm__tokenizer *t, int *n_tokens, int32_t *bos_id,
                                     int32_t *eos_id) {
    *n_tokens = t ? (int)t->n_tokens : 0;
    *bos_id = t ? t->bos_id : -1;
    *eos_id = t ? t->eos_id : -1;
}

/* --- encoding: added tokens, NFC, GPT-2 pre-tokens, BPE merges --- */

typedef struct tfm__tok_out {
    int32_t *ids; /* written while n < cap; n counts every id */
    size_t cap, n;
    bool prefix;  /* SentencePiece: the dummy-prefix space is still to come */
} tfm__tok_out;

TFM_PRIVATE void tfm__tok_emit(tfm__tok_out *o, int32_t id) {
    if (o->n < o->cap) o->ids[o->n] = id;
    o->n++;
}

/* Emit sym[0..k); a byte without a token (kind BPE_BYTES: never in valid UTF-8; SPM: no byte
   fallback token) becomes unk_id, or nothing without one. */
TFM_PRIVATE void tfm__tok_emit_all(const tfm__tokenizer *t, const int32_t *sym, size_t k,
                                   tfm__tok_out *o) {
    size_t i;
    for (i = 0; i < k; i++) {
        if (sym[i] >= 0) tfm__tok_emit(o, sym[i]);
        else if (t->unk_id >= 0) tfm__tok_emit(o, t->unk_id);
    }
}

/* Merge the bytes s[0..n) (1 <= n <= TFM__BPE_MAX_BYTES) from single-byte tokens: always the
   pair of lowest rank, the leftmost one on ties. */
TFM_PRIVATE void tfm__bpe_chunk(const tfm__tokenizer *t, const unsigned char *s, size_t n,
                                tfm__tok_out *o) {
    int32_t sym[TFM__BPE_MAX_BYTES];
    size_t i, k = n, at = 0;
    for (i = 0; i < n; i++) sym[i] = t->byte_id[s[i]];
    while (k > 1) {
        int32_t best = -1;
        for (i = 0; i + 1 < k; i++) {
            int32_t r = tfm__tok_merge_rank(t, sym[i], sym[i + 1]);
            if (r >= 0 && (best < 0 || r < best)) {
                best = r;
                at = i;
            }
        }
        if (best < 0) break;
        sym[at] = (int32_t)tfm__rd_u32(t->merges + 12 * (size_t)best + 8);
        memmove(sym + at + 1, sym + at + 2, (k - at - 2) * sizeof sym[0]);
        k--;
    }
    tfm__tok_emit_all(t, sym, k, o);
}

/* SentencePiece-style, as llama2.c run.c: each code point is its token if there is one, else
   its bytes' <0xNN> tokens; then the adjacent pair whose concatenation is a token of the
   highest score (leftmost on ties) merges, until none does. With merges in the blob (a
   tokenizer.json), the pair with a merge of the lowest rank instead (Hugging Face BPE with
   byte_fallback). A pending dummy prefix comes first as a space. s[0..n): at most
   TFM__BPE_MAX_BYTES - 1 bytes. */
TFM_PRIVATE void tfm__spm_chunk(const tfm__tokenizer *t, const unsigned char *s, size_t n,
                                tfm__tok_out *o) {
    int32_t sym[TFM__BPE_MAX_BYTES];
    size_t i, j, k = 0, at = 0, len;
    const unsigned char space = ' ';
    for (i = 0; i < n || o->prefix; i += len) {
        const unsigned char *c = o->prefix ? &space : s + i;
        uint32_t cp;
        int32_t id;
        len = o->prefix ? 1 : tfm__utf8_next(c, n - i, &cp);
        id = !o->prefix && cp == TFM__CP_INVALID ? -1 : tfm__tok_find(t, c, len, NULL, 0);
        if (id >= 0) sym[k++] = id;
        else for (j = 0; j < len; j++) sym[k++] = t->byte_id[c[j]];
        if (o->prefix) len = 0;
        o->prefix = false;
    }
    while (k > 1) {
        float best = TFM__SPM_MIN_SCORE;
        int32_t best_id = -1, best_rank = -1;
        for (i = 0; i + 1 < k; i++) {
            size_t na, nb;
            const unsigned char *a, *b;
            int32_t id;
            if (sym[i] < 0 || sym[i + 1] < 0) continue;
            if (t->n_merges) { /* from a tokenizer.json: the merge of lowest rank, as HF BPE */
                int32_t r = tfm__tok_merge_rank(t, sym[i], sym[i + 1]);
                if (r >= 0 && (best_rank < 0 || r < best_rank)) {
                    best_rank = r;
                    best_id = (int32_t)tfm__rd_u32(t->merges + 12 * (size_t)r + 8);
                    at = i;
                }
                continue;
            }
            a = tfm__tok_text(t, sym[i], &na);
            b = tfm__tok_text(t, sym[i + 1], &nb);
            id = tfm__tok_find(t, a, na, b, nb);
            if (id >= 0 && tfm__rd_f32(t->scores + 4 * (size_t)id) > best) {
                best = tfm__rd_f32(t->scores + 4 * (size_t)id);
                best_id = id;
                at = i;
            }
        }
        if (best_id < 0) break;
        sym[at] = best_id;
        memmove(sym + at + 1, sym + at + 2, (k - at - 2) * sizeof sym[0]);
        k--;
    }
    tfm__tok_emit_all(t, sym, k, o);
}

/* One pre-token; longer than TFM__BPE_MAX_BYTES: merged in chunks cut at character starts. */
TFM_PRIVATE void tfm__bpe_piece(const tfm__tokenizer *t, const unsigned char *s, size_t n,
                                tfm__tok_out *o) {
    size_t max = TFM__BPE_MAX_BYTES - (t->kind == TFM_TOKENIZER_SPM);
    if ((t->flags & TFM_TOKFLAG_IGNORE_MERGES) && t->kind == TFM_TOKENIZER_BPE_BYTES && n) {
        int32_t id = tfm__tok_find(t, s, n, NULL, 0); /* the whole pre-token is a token */
        if (id >= 0 && !(tfm__tok_attr(t, id) & TFM_TOKATTR_ADDED)) {
            tfm__tok_emit(o, id);
            return;
        }
    }
    while (n > max) {
        size_t cut = max;
        while (cut > max - 3 && (s[cut] & 0xC0u) == 0x80u) cut--;
        if (t->kind == TFM_TOKENIZER_SPM) tfm__spm_chunk(t, s, cut, o);
        else tfm__bpe_chunk(t, s, cut, o);
        s += cut;
        n -= cut;
    }
    if (t->kind == TFM_TOKENIZER_SPM) tfm__spm_chunk(t, s, n, o);
    else if (n) tfm__bpe_chunk(t, s, n, o);
}

/* SentencePiece pieces never hold a space after a non-space, so the text splits exactly
   before every space that follows a non-space: optional spaces, then non-spaces. */
TFM_PRIVATE size_t tfm__pretok_spm(const unsigned char *s, size_t n, size_t pos, bool final) {
    while (pos < n && s[pos] == ' ') pos++;
    while (pos < n && s[pos] != ' ') pos++;
    return pos < n ? pos : final ? n : 0;
}

/* End of the run of class k that starts at s[pos]; 0 if it reaches s[n) and more may follow. */
TFM_PRIVATE size_t tfm__pretok_run(const unsigned char *s, size_t n, size_t pos, int k,
                                   bool final) {
    while (pos < n) {
        uint32_t c;
        size_t len = tfm__utf8_next(s + pos, n - pos, &c);
        if (tfm__uc_class_of(c) != k) return pos;
        pos += len;
    }
    return final ? n : 0;
}

/* End of the GPT-2 pre-token that starts at s[pos] (pos < n), trying the alternatives of
     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
   in order; 0 when the answer depends on text after s[n) and more follows (!final). */
TFM_PRIVATE size_t tfm__pretok_gpt2(const unsigned char *s, size_t n, size_t pos, bool final) {
    uint32_t c;
    size_t end, last;
    int k;
    tfm__utf8_next(s + pos, n - pos, &c);
    k = tfm__uc_class_of(c);
    if (k == TFM__UC_BAD) return pos + 1;
    if (c == '\'') {
        unsigned a = pos + 1 < n ? s[pos + 1] : 0u, b = pos + 2 < n ? s[pos + 2] : 0u;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
        if (!final && (pos + 1 >= n || (pos + 2 >= n && (a == 'r' || a == 'v' || a == 'l'))))
            return 0;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
            return pos + 3;
    }
    if (c == ' ') {
        uint32_t c1;
        int k1;
        if (pos + 1 >= n) return final ? n : 0;
        tfm__utf8_next(s + pos + 1, n - pos - 1, &c1);
        k1 = tfm__uc_class_of(c1);
        if (k1 == TFM__UC_LETTER || k1 == TFM__UC_NUMBER || k1 == TFM__UC_OTHER)
            return tfm__pretok_run(s, n, pos + 1, k1, final);
    }
    if (k != TFM__UC_SPACE) return tfm__pretok_run(s, n, pos, k, final);
    for (end = last = pos; end < n;) { /* \s+(?!\S) leaves the last space to the next word */
        size_t len = tfm__utf8_next(s + end, n - end, &c);
        if (tfm__uc_class_of(c) != TFM__UC_SPACE) return last > pos ? last : end;
        last = end;
        end += len;
    }
    return final ? n : 0;
}

/* Lower-case ASCII of the code point at s[pos..n) (U+017F LONG S, which folds to s, as 's'),
   its byte length in *len; 0 when pos >= n. */
TFM_PRIVATE uint32_t tfm__fold_at(const unsigned char *s, size_t n, size_t pos, size_t *len) {
    uint32_t c;
    if (pos >= n) return 0;
    *len = tfm__utf8_next(s + pos, n - pos, &c);
    if (c == 0x17Fu) return 's';
    return c >= 'A' && c <= 'Z' ? c + 32u : c;
}

/* End of the Llama-3 pre-token that starts at s[pos] (pos < n), trying the alternatives of
     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
     \s*[\r\n]+|\s+(?!\S)|\s+
   in order (Qwen2's pattern: max_numbers 1 for \p{N}{1,3}); 0 when the answer depends on text
   after s[n) and more follows (!final). */
TFM_PRIVATE size_t tfm__pretok_llama3(const unsigned char *s, size_t n, size_t pos, bool final,
                                      int max_numbers) {
    uint32_t c, c1;
    size_t len, len1 = 0, len2 = 0, end, nl;
    int k, count;
    len = tfm__utf8_next(s + pos, n - pos, &c);
    k = tfm__uc_class_of(c);
    if (k == TFM__UC_BAD) return pos + 1;
    if (c == '\'') { /* case-insensitive contractions */
        uint32_t a = tfm__fold_at(s, n, pos + 1, &len1), b;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 1 + len1;
        if (!final && (pos + 1 >= n || (pos + 1 + len1 >= n && (a == 'r' || a == 'v' || a == 'l'))))
            return 0;
        b = a ? tfm__fold_at(s, n, pos + 1 + len1, &len2) : 0;
        if (((a == 'r' || a == 'v') && b == 'e') || (a == 'l' && b == 'l')) return pos + 1 + len1 + len2;
    }
    if (k == TFM__UC_LETTER) return tfm__pretok_run(s, n, pos, TFM__UC_LETTER, final);
    if (c != '\r' && c != '\n' && k != TFM__UC_NUMBER) { /* one leading non-letter, letters */
        if (pos + len >= n && !final) return 0;
        if (pos + len < n) {
            tfm__utf8_next(s + pos + len, n - pos - len, &c1);
            if (tfm__uc_class_of(c1) == TFM__UC_LETTER)
                return tfm__pretok_run(s, n, pos + len, TFM__UC_LETTER, final);
        }
    }
    if (k == TFM__UC_NUMBER) { /* one to three numbers (Qwen2: one) */
        for (end = pos, count = 0; count < max_numbers && end < n; count++) {
            size_t l = tfm__utf8_next(s + end, n - end, &c1);
            if (tfm__uc_class_of(c1) != TFM__UC_NUMBER) return end;
            end += l;
        }
        return count < max_numbers && !final ? 0 : end;
    }
    end = pos + (c == ' ');
    if (end < n) tfm__utf8_next(s + end, n - end, &c1);
    if (end < n && tfm__uc_class_of(c1) == TFM__UC_OTHER) { /* punctuation, then newlines */
        end = tfm__pretok_run(s, n, end, TFM__UC_OTHER, final);
        while (end && end < n && (s[end] == '\r' || s[end] == '\n')) end++;
        return end == n && !final ? 0 : end;
    }
    if (k != TFM__UC_SPACE) return pos + len; /* not reached: every other class is matched above */
    for (end = pos, nl = 0, len1 = 0; end < n; end += len) { /* the run of white space */
        len = tfm__utf8_next(s + end, n - end, &c);
        if (tfm__uc_class_of(c) != TFM__UC_SPACE) break;
        if (c == '\r' || c == '\n') nl = end + 1;
        len1 = len;
    }
    if (end == n && !final) return 0;
    if (nl) return nl;               /* \s*[\r\n]+ ends after the last newline */
    if (end == n) return n;          /* \s+ at the end of the text */
    return end - pos > len1 ? end - len1 : end; /* \s+(?!\S) leaves the last one to the word */
}

/* Pre-tokenize s[0..n) and merge each pre-token; returns the bytes consumed (all if final). */
TFM_PRIVATE size_t tfm__tok_pieces(const tfm__tokenizer *t, const unsigned char *s, size_t n,
                                   bool final, tfm__tok_out *o) {
    size_t pos = 0, run = 0; /* TFM_PRETOK_GPT2_DIGITS: s[pos..run) holds no \p{N} */
    while (pos < n) {
        size_t end;
        if (t->kind == TFM_TOKENIZER_SPM) {
            end = tfm__pretok_spm(s, n, pos, final);
        } else if (t->pretok == TFM_PRETOK_GPT2_DIGITS) { /* HF Digits(individual_digits) */
            uint32_t c;
            size_t len = tfm__utf8_next(s + pos, n - pos, &c);
            if (pos >= run) {
                for (run = pos; run < n && tfm__uc_class_of(c) != TFM__UC_NUMBER;) {
                    run += len;
                    if (run < n) len = tfm__utf8_next(s + run, n - run, &c);
                }
            }
            end = run == pos ? pos + len : tfm__pretok_gpt2(s, run, pos, final || run < n);
        } else if (t->pretok == TFM_PRETOK_LLAMA3 || t->pretok == TFM_PRETOK_QWEN2) {
            end = tfm__pretok_llama3(s, n, pos, final, t->pretok == TFM_PRETOK_LLAMA3 ? 3 : 1);
        } else {
            end = t->pretok == TFM_PRETOK_GPT2 ? tfm__pretok_gpt2(s, n, pos, final) : (final ? n : 0);
        }
        if (end == 0) break;
        tfm__bpe_piece(t, s + pos, end - pos, o);
        pos = end;
    }
    return pos;
}

/* Text between added tokens. With NFC and code points that need it, the normalized text goes
   through a stack window; a pre-token that fills the window is merged as it stands. */
TFM_PRIVATE void tfm__tok_segment(const tfm__tokenizer *t, const unsigned char *s, size_t n,
                                  tfm__tok_out *o) {
    unsigned char win[TFM__NFC_WINDOW];
    tfm__nfc_src src;
    size_t i, len = 0, used;
    bool need = false;
    for (i = 0; i < n && (t->flags & TFM_TOKFLAG_NFC) && !need;) {
        uint32_t c;
        i += tfm__utf8_next(s + i, n - i, &c);
        need = tfm__uc_nfc_attention(c);
    }
    if (!need) {
        tfm__tok_pieces(t, s, n, true, o);
        return;
    }
    src.s = s;
    src.n = n;
    src.pos = 0;
    for (;;) {
        bool final;
        len += tfm__nfc_fill(&src, win + len, sizeof win - len);
        final = src.pos == src.n;
        used = tfm__tok_pieces(t, win, len, final, o);
        if (final) return;
        if (used == 0) {
            tfm__bpe_piece(t, win, len, o);
            used = len;
        }
        memmove(win, win + used, len - used);
        len -= used;
    }
}

/* The longest added token that starts at s[0..n) (n >= 1), or -1. */
TFM_PRIVATE int32_t tfm__tok_match_added(const tfm__tokenizer *t, const unsigned char *s,
                                         size_t n, size_t *len) {
    uint32_t i;
    for (i = t->added_first[s[0]]; i < t->added_first[s[0] + 1]; i++) {
        size_t m;
        const unsigned char *a = tfm__tok_text(t, t->added[i], &m);
        if (m <= n && (m < 2 || a[1] == s[1]) && memcmp(a, s, m) == 0) {
            *len = m;
            return t->added[i];
        }
    }
    return -1;
}

/* The text segment s[seg..end) (not empty) with its SentencePiece dummy prefix, if any. */
TFM_PRIVATE void tfm__tok_text_segment(const tfm__tokenizer *t, const unsigned char *s, size_t seg,
                                       size_t end, tfm__tok_out *o) {
    o->prefix = t->kind == TFM_TOKENIZER_SPM && (t->flags & TFM_TOKFLAG_PREFIX_SPACE) &&
                !(seg > 0 && (t->flags & TFM_TOKFLAG_PREFIX_FIRST)) &&
                !(s[seg] == ' ' && (t->flags & TFM_TOKFLAG_PREFIX_UNLESS_SPACE));
    tfm__tok_segment(t, s + seg, end - seg, o);
    o->prefix = false;
}

/* Text to ids; allocates nothing. Writes at most ids_cap ids and always sets *n_ids to the
   count needed (TFM_ERR_INVALID_ARG when ids_cap is too small). */
TFM_PRIVATE tfm_result tfm__tokenizer_encode(const tfm__tokenizer *t, const char *text,
                                             size_t text_bytes, int32_t *ids, size_t ids_cap,
                                             size_t *n_ids) {
    const unsigned char *s = TFM__CAST(const unsigned char *, TFM__CAST(const void *, text));
    tfm__tok_out o;
    size_t pos = 0, seg = 0;
    o.ids = ids;
    o.cap = ids ? ids_cap : 0;
    o.n = 0;
    o.prefix = false;
    while (pos < text_bytes) {
        size_t len = 0;
        int32_t id = t->n_added ? tfm__tok_match_added(t, s + pos, text_bytes - pos, &len) : -1;
        if (id < 0) {
            pos++;
            continue;
        }
        if (pos > seg) tfm__tok_text_segment(t, s, seg, pos, &o);
        tfm__tok_emit(&o, id);
        pos += len;
        seg = pos;
    }
    if (pos > seg) tfm__tok_text_segment(t, s, seg, pos, &o);
    *n_ids = o.n;
    if (o.n > o.cap) {
        if (ids || ids_cap)
            return tfm__log(&t->logger, TFM_ERR_INVALID_ARG, "tokenize: %zu ids do not fit in "
                            "ids_cap %zu", o.n, ids_cap);
        return TFM_ERR_INVALID_ARG;
    }
    return TFM_OK;
}

/* --- decoding --- */

TFM_PRIVATE tfm_result tfm__tokenizer_piece(const tfm__tokenizer *t, int32_t id,
                                            const char **bytes, size_t *n_bytes) {
    if (id < 0 || id >= t->n_tokens)
        return tfm__log(&t->logger, TFM_ERR_INVALID_ARG, "token id %d is not in 0..%d", (int)id,
                        (int)t->n_tokens - 1);
    *bytes = TFM__CAST(const char *, TFM__CAST(const void *, tfm__tok_text(t, id, n_bytes)));
    return TFM_OK;
}

TFM_PRIVATE unsigned tfm__stream_at(const tfm_utf8_stream *st, const unsigned char *p, size_t i) {
    return i < (size_t)st->n_held ? st->held[i] : p[i - (size_t)st->n_held];
}

/* Run the held bytes of *st followed by p[0..n): valid characters are copied, each maximal
   invalid subpart becomes U+FFFD, an incomplete tail goes to *tail. out == NULL only counts.
   Returns the bytes produced. */
TFM_PRIVATE size_t tfm__utf8_stream_run(const tfm_utf8_stream *st, const unsigned char *p,
                                        size_t n, unsigned char *out, tfm_utf8_stream *tail) {
    size_t total = (size_t)st->n_held + n, i = 0, w = 0, j, need;
    tail->n_held = 0;
    while (i < total) {
        unsigned b = tfm__stream_at(st, p, i), lo = 0x80, hi = 0xBF;
        need = b < 0x80u ? 0 : b >= 0xC2u && b <= 0xDFu ? 1 : b >= 0xE0u && b <= 0xEFu ? 2
             : b >= 0xF0u && b <= 0xF4u ? 3 : 4;
        if (b == 0xE0u) lo = 0xA0; else if (b == 0xEDu) hi = 0x9F;
        if (b == 0xF0u) lo = 0x90; else if (b == 0xF4u) hi = 0x8F;
        for (j = 1; need < 4 && j <= need; j++) {
            unsigned c;
            if (i + j >= total) { /* incomplete: hold it back (at most 3 bytes) */
                for (tail->n_held = 0; i < total; i++)
                    tail->held[tail->n_held++] = (unsigned char)tfm__stream_at(st, p, i);
                return w;
            }
            c = tfm__stream_at(st, p, i + j);
            if (c < (j == 1 ? lo : 0x80u) || c > (j == 1 ? hi : 0xBFu)) break;
        }
        if (need == 4 || j <= need) { /* U+FFFD for the maximal subpart s[i..i+j) */
            if (out) memcpy(out + w, "\xEF\xBF\xBD", 3);
            w += 3;
            i += need == 4 ? 1 : j;
            continue;
        }
        for (j = 0; j <= need; j++, w++)
            if (out) out[w] = (unsigned char)tfm__stream_at(st, p, i + j);
        i += need + 1;
    }
    return w;
}

TFM_PRIVATE tfm_result tfm__tokenizer_decode(const tfm__tokenizer *t, tfm_utf8_stream *stream,
                                             int32_t id, char *out, size_t out_cap,
                                             size_t *n_out) {
    tfm_utf8_stream tail;
    const char *piece = NULL;
    const unsigned char *p;
    size_t n = 0, need;
    tfm_result r;
    *n_out = 0;
    if (stream->n_held < 0 || stream->n_held > 3)
        return tfm__log(&t->logger, TFM_ERR_INVALID_ARG, "decode: stream holds %d bytes (max 3); "
                        "zero-initialize tfm_utf8_stream", stream->n_held);
    if ((r = tfm__tokenizer_piece(t, id, &piece, &n)) != TFM_OK) return r;
    p = TFM__CAST(const unsigned char *, TFM__CAST(const void *, piece));
    need = tfm__utf8_stream_run(stream, p, n, NULL, &tail);
    if (need > out_cap || (need && !out))
        return tfm__log(&t->logger, TFM_ERR_INVALID_ARG, "decode: token %d needs %zu output "
                        "bytes, out_cap is %zu", (int)id, need, out_cap);
    tfm__utf8_stream_run(stream, p, n, TFM__CAST(unsigned char *, TFM__CAST(void *, out)), &tail);
    *stream = tail;
    *n_out = need;
    return TFM_OK;
}

/* --- public tokenizer entry points (the model's tokenizer via tfm__model_tokenizer) --- */

TFM_API tfm_result tfm_model_tokenize(const tfm_model *model, const char *text, size_t text_bytes,
                                      int32_t *ids, size_t ids_cap, size_t *n_ids) {
    const tfm__tokenizer *t;
    if (n_ids) *n_ids = 0;
    if (!model || !n_ids || (!text && text_bytes)) return TFM_ERR_INVALID_ARG;
    t = tfm__model_tokenizer(model);
    if (!t) return TFM_ERR_UNSUPPORTED;
    return tfm__tokenizer_encode(t, text, text_bytes, ids, ids_cap, n_ids);
}

TFM_API tfm_result tfm_model_token_bytes(const tfm_model *model, int32_t id, const char **bytes,
                                         size_t *n_bytes) {
    const tfm__tokenizer *t;
    if (bytes) *bytes = NULL;
    if (n_bytes) *n_bytes = 0;
    if (!model || !bytes || !n_bytes) return TFM_ERR_INVALID_ARG;
    t = tfm__model_tokenizer(model);
    if (!t) return TFM_ERR_UNSUPPORTED;
    return tfm__tokenizer_piece(t, id, bytes, n_bytes);
}

TFM_API tfm_result tfm_model_decode(const tfm_model *model, tfm_utf8_stream *stream, int32_t id,
                                    char *out, size_t out_cap, size_t *n_out) {
    const tfm__tokenizer *t;
    if (n_out) *n_out = 0;
    if (!model || !stream || !n_out) return TFM_ERR_INVALID_ARG;
    t = tfm__model_tokenizer(model);
    if (!t) return TFM_ERR_UNSUPPORTED;
    return tfm__tokenizer_decode(t, stream, id, out, out_cap, n_out);
}

TFM_API size_t tfm_utf8_stream_flush(tfm_utf8_stream *stream, char *out, size_t out_cap) {
    if (!stream || stream->n_held == 0) return 0;
    if (!out || out_cap < 3) return 0;
    memcpy(out, "\xEF\xBF\xBD", 3); /* one U+FFFD for the incomplete tail, as Python does */
    stream->n_held = 0;
    return 3;
}

/* >>chat -----------------------------------------------------------------------------------------
   Chat templates: the Jinja subset that Hugging Face chat templates use, rendered as
   transformers' apply_chat_template renders them (jinja2's ImmutableSandboxedEnvironment with
   trim_blocks and lstrip_blocks, the loopcontrols extension, its own tojson, raise_exception and
   strftime_now). Three stages, each bounded against hostile templates:
   - lex (tfm__jlex): newlines normalized to \n and one trailing newline dropped, as jinja2
     does; text, {{ }}, {% %}, {# #} and {% raw %} with - / + whitespace control, lstrip_blocks
     and trim_blocks applied while cutting the text; tokens inside tags.
   - parse (tfm__jp_*): recursive descent with jinja2's precedence (or, and, not, comparisons,
     + -, ~, * / // %, **, unary, postfix, filters and tests) into a tree of tfm__jnode,
     at most TFM__CHAT_MAX_DEPTH deep. Unknown tags, filters and tests fail here.
   - render (tfm__jx_*): a tree walk over tfm__jv values with Python's semantics (str(), repr(),
     json.dumps, int/float arithmetic, truthiness, slicing, Undefined), loop bodies in a frame
     of their own per iteration (jinja2 scoping: a set inside a for does not leak; namespace()
     is the way out), counted in steps (TFM__CHAT_MAX_STEPS), memory and output bytes.
   Everything a render makes lives in one arena, freed when the render returns.
   Documented deviations: integers are 64-bit (overflow is an error); upper/lower/title/
   capitalize change ASCII letters only; repr() of a string treats every non-ASCII code point
   as printable except C1 controls, U+00AD and the line/paragraph separators; loop.changed,
   recursive loops, call blocks, include/import/extends and the filters not listed in
   tfm__jfilter_names are not supported (an error when the template is created). */

#define TFM__CHAT_MAX_DEPTH 128         /* nesting of blocks and expressions; also call depth */
#define TFM__CHAT_MAX_STEPS (1u << 24)  /* expressions, statements, iterations per render */
#define TFM__CHAT_MAX_RANGE 100000      /* longest range(), as jinja2's sandbox MAX_RANGE */
#define TFM__CHAT_OUTPUT_DEFAULT ((size_t)1 << 24)
#define TFM__CHAT_MEMORY_DEFAULT ((size_t)1 << 26)
#define TFM__CHAT_CHUNK_BYTES ((size_t)1 << 16)
#define TFM__CHAT_ERROR_BYTES 512
#define TFM__CHAT_NUM_BYTES 40          /* a formatted number: "-1.2345678901234567e+308" */
#define TFM__CHAT_FLOAT_DIGITS 17       /* digits that round-trip any double */
#define TFM__CHAT_REPR_FIXED_MAX 16     /* Python repr(float) is positional for exponents -4..15 */
#define TFM__CHAT_REPR_FIXED_MIN (-4)
#define TFM__CHAT_JSON_INDENT_MAX 64
#define TFM__JLIMIT (-1)                /* tfm__jarena.failed: over max_memory_bytes */
#define TFM__JOUTPUT_LIMIT (-2)         /* tfm__jarena.failed: output over max_output_bytes */

/* --- arena: chunks from the allocator, bump allocation, all freed at once --- */

typedef struct tfm__jchunk {
    struct tfm__jchunk *next;
    size_t bytes, used;                 /* usable bytes after the header, bytes taken */
} tfm__jchunk;

typedef struct tfm__jarena {
    tfm_allocator allocator;
    tfm__jchunk *head;
    size_t total, limit;                /* bytes held, most allowed */
    int failed;                         /* TFM_ERR_OUT_OF_MEMORY, TFM__JLIMIT or TFM__JOUTPUT_LIMIT */
} tfm__jarena;

#define TFM__JCHUNK_HEADER ((sizeof(tfm__jchunk) + 15) & ~(size_t)15)

/* bytes (16-byte aligned) from the arena; NULL (and a->failed set) when out of memory. */
TFM_PRIVATE void *tfm__ja_alloc(tfm__jarena *a, size_t bytes) {
    tfm__jchunk *c = a->head;
    size_t need = (bytes + 15) & ~(size_t)15, chunk;
    if (need < bytes) need = (size_t)-1;
    if (c && c->bytes - c->used >= need) {
        c->used += need;
        return tfm__at(c, TFM__JCHUNK_HEADER + c->used - need);
    }
    chunk = need > TFM__CHAT_CHUNK_BYTES ? need : TFM__CHAT_CHUNK_BYTES;
    if (chunk > a->limit - a->total) {
        a->failed = TFM__JLIMIT;
        return NULL;
    }
    c = TFM__CAST(tfm__jchunk *, tfm__alloc(&a->allocator, chunk + TFM__JCHUNK_HEADER));
    if (!c) {
        a->failed = TFM_ERR_OUT_OF_MEMORY;
        return NULL;
    }
    c->next = a->head;
    c->bytes = chunk;
    c->used = need;
    a->head = c;
    a->total += chunk;
    return tfm__at(c, TFM__JCHUNK_HEADER);
}

TFM_PRIVATE void tfm__ja_free(tfm__jarena *a) {
    while (a->head) {
        tfm__jchunk *next = a->head->next;
        tfm__free(&a->allocator, a->head, a->head->bytes + TFM__JCHUNK_HEADER);
        a->head = next;
    }
    a->total = 0;
}

/* --- values --- */

enum {
    TFM__JV_UNDEF = 0, TFM__JV_NONE, TFM__JV_BOOL, TFM__JV_INT, TFM__JV_FLOAT, TFM__JV_STR,
    TFM__JV_LIST, TFM__JV_TUPLE, TFM__JV_DICT, TFM__JV_NS, TFM__JV_MACRO, TFM__JV_FUNC,
    TFM__JV_METHOD, TFM__JV_LOOP, TFM__JV_GEN
};
#define TFM__JV_MARKUP 1 /* tfm__jv.fn of a STR: markupsafe's Markup (from safe / escape) */

typedef struct tfm__jv tfm__jv;
typedef struct tfm__jseq {              /* list / tuple items; dict / namespace: key, value pairs */
    size_t n, cap;                      /* values in v (pairs count 2), room */
    tfm__jv *v;
} tfm__jseq;

struct tfm__jv {
    int type;                           /* TFM__JV_* */
    int fn;                             /* FUNC, METHOD: builtin id; STR: TFM__JV_MARKUP or 0 */
    size_t n;                           /* STR, UNDEF (its name): bytes */
    union {
        int64_t i;                      /* BOOL (0 / 1), INT */
        double f;
        const char *s;                  /* STR, UNDEF: the name that was looked up */
        tfm__jseq *seq;                 /* LIST, TUPLE, DICT, NS, GEN (a generator's items) */
        const void *p;                  /* MACRO, METHOD (its bound tfm__jv), LOOP */
    } u;
};

typedef struct tfm__jloop {             /* the `loop` variable of one iteration */
    const tfm__jseq *items;
    size_t index0;
} tfm__jloop;

/* --- UTF-8 and Python's whitespace --- */

/* The code point at s[0..n) and its length in *len (an invalid byte is itself, length 1). */
TFM_PRIVATE uint32_t tfm__jutf8(const char *s, size_t n, size_t *len) {
    const unsigned char *u = TFM__CAST(const unsigned char *, TFM__CAST(const void *, s));
    uint32_t cp;
    size_t k, i;
    if (u[0] < 0x80) { *len = 1; return u[0]; }
    if (u[0] >= 0xC2 && u[0] < 0xE0) { k = 2; cp = u[0] & 0x1Fu; }
    else if (u[0] >= 0xE0 && u[0] < 0xF0) { k = 3; cp = u[0] & 0x0Fu; }
    else if (u[0] >= 0xF0 && u[0] < 0xF5) { k = 4; cp = u[0] & 0x07u; }
    else { *len = 1; return u[0]; }
    if (k > n) { *len = 1; return u[0]; }
    for (i = 1; i < k; i++) {
        if ((u[i] & 0xC0u) != 0x80u) { *len = 1; return u[0]; }
        cp = (cp << 6) | (u[i] & 0x3Fu);
    }
    if ((k == 3 && cp < 0x800u) || (k == 4 && (cp < 0x10000u || cp > 0x10FFFFu))) {
        *len = 1;
        return u[0];
    }
    *len = k;
    return cp;
}

/* Python's str.isspace(): the White_Space code points plus U+001C..U+001F. */
TFM_PRIVATE bool tfm__jspace(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 ||
           cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Bytes of whitespace at the start (from_end false) or end of s[0..n). */
TFM_PRIVATE size_t tfm__jspace_run(const char *s, size_t n, bool from_end) {
    size_t i = 0, len, last = 0;
    if (!from_end) {
        while (i < n && tfm__jspace(tfm__jutf8(s + i, n - i, &len))) i += len;
        return i;
    }
    while (i < n) { /* the start of the trailing run */
        uint32_t cp = tfm__jutf8(s + i, n - i, &len);
        if (!tfm__jspace(cp)) last = i + len;
        i += len;
    }
    return n - last;
}

/* Code points in s[0..n). */
TFM_PRIVATE size_t tfm__jcp_count(const char *s, size_t n) {
    size_t i = 0, count = 0, len;
    while (i < n) { tfm__jutf8(s + i, n - i, &len); i += len; count++; }
    return count;
}

/* Byte offset of code point k (k <= count) in s[0..n). */
TFM_PRIVATE size_t tfm__jcp_offset(const char *s, size_t n, size_t k) {
    size_t i = 0, len;
    while (k > 0 && i < n) { tfm__jutf8(s + i, n - i, &len); i += len; k--; }
    return i;
}

/* Appends cp as UTF-8 to out (room for 4); returns the bytes written. */
TFM_PRIVATE size_t tfm__jput_utf8(uint32_t cp, char *out) {
    unsigned char *o = TFM__CAST(unsigned char *, TFM__CAST(void *, out));
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0u | (cp >> 6));
        o[1] = (unsigned char)(0x80u | (cp & 0x3Fu));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0u | (cp >> 12));
        o[1] = (unsigned char)(0x80u | ((cp >> 6) & 0x3Fu));
        o[2] = (unsigned char)(0x80u | (cp & 0x3Fu));
        return 3;
    }
    o[0] = (unsigned char)(0xF0u | (cp >> 18));
    o[1] = (unsigned char)(0x80u | ((cp >> 12) & 0x3Fu));
    o[2] = (unsigned char)(0x80u | ((cp >> 6) & 0x3Fu));
    o[3] = (unsigned char)(0x80u | (cp & 0x3Fu));
    return 4;
}

TFM_PRIVATE bool tfm__jeq_str(const char *s, size_t n, const char *lit) {
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* --- growable byte buffer in the arena (output, string building) --- */

typedef struct tfm__jbuf {
    char *p;
    size_t n, cap, limit;               /* bytes used, room, most allowed (0: no limit) */
    tfm__jarena *arena;
} tfm__jbuf;

/* Room for more bytes; false (arena failed, or past the limit) otherwise. */
TFM_PRIVATE bool tfm__jbuf_reserve(tfm__jbuf *b, size_t more) {
    size_t cap;
    char *p;
    if (more > (size_t)-1 / 2 - b->n || (b->limit && b->n + more > b->limit)) {
        b->arena->failed = b->limit ? TFM__JOUTPUT_LIMIT : TFM__JLIMIT;
        return false;
    }
    if (b->n + more <= b->cap) return true;
    cap = b->cap ? b->cap * 2 : 64;
    while (cap < b->n + more) cap *= 2;
    if (!(p = TFM__CAST(char *, tfm__ja_alloc(b->arena, cap)))) return false;
    if (b->n) memcpy(p, b->p, b->n);
    b->p = p;
    b->cap = cap;
    return true;
}

TFM_PRIVATE bool tfm__jbuf_put(tfm__jbuf *b, const char *s, size_t n) {
    if (!n) return true;
    if (!tfm__jbuf_reserve(b, n)) return false;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return true;
}

TFM_PRIVATE bool tfm__jbuf_puts(tfm__jbuf *b, const char *s) { return tfm__jbuf_put(b, s, strlen(s)); }

TFM_PRIVATE bool tfm__jbuf_putc(tfm__jbuf *b, char c) { return tfm__jbuf_put(b, &c, 1); }

TFM_PRIVATE void tfm__jbuf_init(tfm__jbuf *b, tfm__jarena *a) {
    memset(b, 0, sizeof *b);
    b->arena = a;
}

/* --- errors: the first failure of a create or render, with line and column --- */

#define TFM__JNOPOS ((size_t)-1)

typedef struct tfm__jctx {
    tfm__jarena *arena;
    const char *src;                    /* the normalized template (positions index it) */
    size_t src_bytes;
    tfm_result result;                  /* TFM_OK until the first failure */
    char error[TFM__CHAT_ERROR_BYTES];
    int depth;                          /* parse / render nesting now */
    uint64_t steps;                     /* render steps taken */
} tfm__jctx;

/* Records the first failure (TFM_ERR_TEMPLATE) as "line L, column C: message"; returns false. */
TFM_PRIVATE bool tfm__jfail(tfm__jctx *x, size_t pos, const char *fmt, ...) {
    size_t line = 1, col = 1, i, at = 0;
    va_list ap;
    if (x->result != TFM_OK) return false;
    x->result = TFM_ERR_TEMPLATE;
    if (pos != TFM__JNOPOS && pos <= x->src_bytes) {
        for (i = 0; i < pos; i++) {
            if (x->src[i] == '\n') { line++; col = 1; }
            else if ((x->src[i] & 0xC0) != 0x80) col++;
        }
        snprintf(x->error, sizeof x->error, "line %zu, column %zu: ", line, col);
        at = strlen(x->error);
    }
    va_start(ap, fmt);
    tfm__format(x->error + at, sizeof x->error - at, fmt, ap);
    va_end(ap);
    return false;
}

/* After an arena allocation returned NULL: out of memory, or over the memory limit. */
TFM_PRIVATE bool tfm__jfail_mem(tfm__jctx *x) {
    if (x->result != TFM_OK) return false;
    if (x->arena->failed == TFM_ERR_OUT_OF_MEMORY) {
        x->result = TFM_ERR_OUT_OF_MEMORY;
        snprintf(x->error, sizeof x->error, "chat template: out of memory");
        return false;
    }
    if (x->arena->failed == TFM__JOUTPUT_LIMIT)
        return tfm__jfail(x, TFM__JNOPOS, "the output is longer than max_output_bytes");
    return tfm__jfail(x, TFM__JNOPOS, "the template needs more than max_memory_bytes (%zu)",
                      x->arena->limit);
}

TFM_PRIVATE void *tfm__jalloc(tfm__jctx *x, size_t bytes) {
    void *p = tfm__ja_alloc(x->arena, bytes);
    if (!p) tfm__jfail_mem(x);
    return p;
}

/* --- lexer: the template becomes an array of tokens --- */

enum {
    TFM__JT_EOF = 0, TFM__JT_DATA, TFM__JT_VAR_BEGIN, TFM__JT_VAR_END, TFM__JT_BLOCK_BEGIN,
    TFM__JT_BLOCK_END, TFM__JT_NAME, TFM__JT_STRING, TFM__JT_INT, TFM__JT_FLOAT, TFM__JT_OP
};

typedef struct tfm__jtok {
    int type;                           /* TFM__JT_* */
    size_t pos;                         /* byte offset in the source */
    const char *s;                      /* DATA: text after whitespace control; STRING: raw body */
    size_t n;
} tfm__jtok;

typedef struct tfm__jlexer {
    tfm__jctx *x;
    tfm__jtok *tok;
    size_t n_tok, cap_tok, at;          /* tokens, room, read position in src */
    bool line_starting;                 /* the last match ended a line (lstrip_blocks) */
} tfm__jlexer;

TFM_PRIVATE bool tfm__jlex_push(tfm__jlexer *L, int type, size_t pos, const char *s, size_t n) {
    if (L->n_tok == L->cap_tok) {
        size_t cap = L->cap_tok ? L->cap_tok * 2 : 256;
        tfm__jtok *t = TFM__CAST(tfm__jtok *, tfm__jalloc(L->x, cap * sizeof *t));
        if (!t) return false;
        if (L->n_tok) memcpy(t, L->tok, L->n_tok * sizeof *t);
        L->tok = t;
        L->cap_tok = cap;
    }
    L->tok[L->n_tok].type = type;
    L->tok[L->n_tok].pos = pos;
    L->tok[L->n_tok].s = s;
    L->tok[L->n_tok].n = n;
    L->n_tok++;
    return true;
}

/* Text before a tag, after `-` (strip all trailing whitespace) or lstrip_blocks (strip the
   spaces between the line start and a {% or {# tag that is alone at the start of its line). */
TFM_PRIVATE bool tfm__jlex_text(tfm__jlexer *L, size_t start, size_t end, char sign, bool is_var) {
    const char *s = L->x->src + start;
    size_t n = end - start, line_at, ws;
    if (sign == '-') {
        n -= tfm__jspace_run(s, n, true);
    } else if (sign != '+' && !is_var) {
        line_at = n;
        while (line_at > 0 && s[line_at - 1] != '\n') line_at--;
        ws = tfm__jspace_run(s + line_at, n - line_at, false);
        if ((line_at > 0 || L->line_starting) && ws > 0 && line_at + ws == n) n = line_at;
    }
    return n == 0 || tfm__jlex_push(L, TFM__JT_DATA, start, s, n);
}

/* Whitespace after a tag: `-` strips all of it, trim_blocks one newline, `+` none. */
TFM_PRIVATE void tfm__jlex_after(tfm__jlexer *L, char sign, bool trim) {
    const char *src = L->x->src;
    if (sign == '-') L->at += tfm__jspace_run(src + L->at, L->x->src_bytes - L->at, false);
    else if (trim && sign != '+' && L->at < L->x->src_bytes && src[L->at] == '\n') L->at++;
    L->line_starting = L->at > 0 && src[L->at - 1] == '\n';
}

/* The first "{%", "{{" or "{#" at or after from; src_bytes when none. */
TFM_PRIVATE size_t tfm__jlex_find_tag(const tfm__jctx *x, size_t from) {
    size_t i;
    for (i = from; i + 1 < x->src_bytes; i++)
        if (x->src[i] == '{' && (x->src[i + 1] == '%' || x->src[i + 1] == '{' || x->src[i + 1] == '#'))
            return i;
    return x->src_bytes;
}

/* At a "{%": is it "{%[-+] raw [-]%}"? Sets *end past it, *sign_after to its closing sign. */
TFM_PRIVATE bool tfm__jlex_is_raw(const tfm__jctx *x, size_t at, const char *word, size_t *end,
                                  char *sign_after) {
    const char *s = x->src;
    size_t n = x->src_bytes, i = at + 2, w = strlen(word);
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    i += tfm__jspace_run(s + i, n - i, false);
    if (n - i < w || memcmp(s + i, word, w) != 0) return false;
    i += w;
    i += tfm__jspace_run(s + i, n - i, false);
    *sign_after = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) *sign_after = s[i++];
    if (n - i < 2 || s[i] != '%' || s[i + 1] != '}') return false;
    *end = i + 2;
    return true;
}

/* {% raw %}...{% endraw %}: the body is text, whitespace control applied at both ends. */
TFM_PRIVATE bool tfm__jlex_raw(tfm__jlexer *L, size_t tag_at, size_t raw_end, char sign_after) {
    tfm__jctx *x = L->x;
    size_t i, end = 0, body;
    char close_sign = 0, open_sign;
    L->at = raw_end;
    tfm__jlex_after(L, sign_after, true);
    body = L->at;
    for (i = body;; i++) {
        i = tfm__jlex_find_tag(x, i);
        if (i >= x->src_bytes) return tfm__jfail(x, tag_at, "missing end of raw directive");
        if (x->src[i + 1] == '%' && tfm__jlex_is_raw(x, i, "endraw", &end, &close_sign)) break;
    }
    open_sign = i + 2 < x->src_bytes ? x->src[i + 2] : 0;
    if (!tfm__jlex_text(L, body, i, open_sign, false)) return false;
    L->at = end;
    tfm__jlex_after(L, close_sign, true);
    return true;
}

/* {# comment #}: dropped, with its whitespace control. */
TFM_PRIVATE bool tfm__jlex_comment(tfm__jlexer *L, size_t tag_at, size_t body) {
    tfm__jctx *x = L->x;
    size_t i;
    char sign = 0;
    for (i = body; i + 1 < x->src_bytes; i++)
        if (x->src[i] == '#' && x->src[i + 1] == '}') break;
    if (i + 1 >= x->src_bytes) return tfm__jfail(x, tag_at, "missing end of comment tag");
    if (i > body && (x->src[i - 1] == '-' || x->src[i - 1] == '+')) sign = x->src[i - 1];
    L->at = i + 2;
    tfm__jlex_after(L, sign, true);
    return true;
}

TFM_PRIVATE bool tfm__jis_digit(char c) { return c >= '0' && c <= '9'; }
TFM_PRIVATE bool tfm__jis_name0(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* A number at L->at: INT, or FLOAT with a fraction or exponent (jinja2's float_re; never right
   after a dot, so x.0.1 is two subscripts). Underscores between digits are allowed. */
TFM_PRIVATE bool tfm__jlex_number(tfm__jlexer *L) {
    const char *s = L->x->src;
    size_t n = L->x->src_bytes, i = L->at, save;
    int type = TFM__JT_INT;
    while (i < n && (tfm__jis_digit(s[i]) || (s[i] == '_' && i + 1 < n && tfm__jis_digit(s[i + 1])))) i++;
    if (!(L->at > 0 && s[L->at - 1] == '.')) {
        if (i + 1 < n && s[i] == '.' && tfm__jis_digit(s[i + 1])) {
            type = TFM__JT_FLOAT;
            for (i++; i < n && (tfm__jis_digit(s[i]) || (s[i] == '_' && i + 1 < n && tfm__jis_digit(s[i + 1]))); i++) {}
        }
        save = i;
        if (i < n && (s[i] == 'e' || s[i] == 'E')) {
            i++;
            if (i < n && (s[i] == '+' || s[i] == '-')) i++;
            if (i < n && tfm__jis_digit(s[i])) {
                type = TFM__JT_FLOAT;
                while (i < n && tfm__jis_digit(s[i])) i++;
            } else {
                i = save;
            }
        }
    }
    if (!tfm__jlex_push(L, type, L->at, s + L->at, i - L->at)) return false;
    L->at = i;
    return true;
}

/* A quoted string at L->at; the token keeps the raw body (escapes are undone by the parser). */
TFM_PRIVATE bool tfm__jlex_string(tfm__jlexer *L) {
    const char *s = L->x->src;
    size_t n = L->x->src_bytes, i = L->at + 1;
    char q = s[L->at];
    while (i < n && s[i] != q) i += (s[i] == '\\' && i + 1 < n) ? 2 : 1;
    if (i >= n) return tfm__jfail(L->x, L->at, "unterminated string");
    if (!tfm__jlex_push(L, TFM__JT_STRING, L->at, s + L->at + 1, i - L->at - 1)) return false;
    L->at = i + 1;
    return true;
}

/* An operator at L->at (longest first), tracking bracket balance so that "}}" or "%}" inside
   brackets is not the end of the tag. */
TFM_PRIVATE bool tfm__jlex_op(tfm__jlexer *L, char *stack, int *depth) {
    static const char *const ops[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*",
                                      "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=",
                                      ".", ":", "|", ",", ";"};
    const char *s = L->x->src + L->at, *close = ")]}", *open = "([{";
    size_t left = L->x->src_bytes - L->at, k, len;
    for (k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        len = strlen(ops[k]);
        if (len <= left && memcmp(s, ops[k], len) == 0) break;
    }
    if (k == sizeof ops / sizeof ops[0])
        return tfm__jfail(L->x, L->at, "unexpected character '%c'", *s);
    if (len == 1 && strchr(open, *s)) {
        if (*depth >= TFM__CHAT_MAX_DEPTH) return tfm__jfail(L->x, L->at, "brackets nested too deeply");
        stack[(*depth)++] = close[strchr(open, *s) - open];
    } else if (len == 1 && strchr(close, *s)) {
        if (*depth == 0 || stack[*depth - 1] != *s)
            return tfm__jfail(L->x, L->at, "unexpected '%c'", *s);
        (*depth)--;
    }
    if (!tfm__jlex_push(L, TFM__JT_OP, L->at, s, len)) return false;
    L->at += len;
    return true;
}

/* Length of the tag end at L->at ("-%}", "+%}", "%}"; "-}}", "}}"), 0 if none; its sign. */
TFM_PRIVATE size_t tfm__jlex_end(const tfm__jlexer *L, bool is_var, char *sign) {
    const char *s = L->x->src + L->at;
    size_t left = L->x->src_bytes - L->at;
    char c = is_var ? '}' : '%';
    *sign = 0;
    if (left >= 3 && (s[0] == '-' || (s[0] == '+' && !is_var)) && s[1] == c && s[2] == '}') {
        *sign = s[0];
        return 3;
    }
    return left >= 2 && s[0] == c && s[1] == '}' ? 2 : 0;
}

/* Tokens inside {{ }} or {% %}, up to and including the end of the tag. */
TFM_PRIVATE bool tfm__jlex_tag(tfm__jlexer *L, bool is_var) {
    char stack[TFM__CHAT_MAX_DEPTH], sign, c;
    int depth = 0;
    size_t len;
    const tfm__jctx *x = L->x;
    for (;;) {
        if (L->at >= x->src_bytes) return tfm__jfail(L->x, L->at, "unexpected end of template");
        if (depth == 0 && (len = tfm__jlex_end(L, is_var, &sign)) > 0) {
            if (!tfm__jlex_push(L, is_var ? TFM__JT_VAR_END : TFM__JT_BLOCK_END, L->at, NULL, 0))
                return false;
            L->at += len;
            tfm__jlex_after(L, sign, !is_var);
            return true;
        }
        c = x->src[L->at];
        len = tfm__jspace_run(x->src + L->at, x->src_bytes - L->at, false);
        if (len > 0) { L->at += len; continue; }
        if (tfm__jis_digit(c)) {
            if (!tfm__jlex_number(L)) return false;
        } else if (tfm__jis_name0(c)) {
            size_t i = L->at;
            while (i < x->src_bytes && (tfm__jis_name0(x->src[i]) || tfm__jis_digit(x->src[i]))) i++;
            if (!tfm__jlex_push(L, TFM__JT_NAME, L->at, x->src + L->at, i - L->at)) return false;
            L->at = i;
        } else if (c == '\'' || c == '"') {
            if (!tfm__jlex_string(L)) return false;
        } else if (!tfm__jlex_op(L, stack, &depth)) {
            return false;
        }
    }
}

/* The whole template into L->tok, ending with an EOF token. */
TFM_PRIVATE bool tfm__jlex(tfm__jlexer *L) {
    tfm__jctx *x = L->x;
    size_t n = x->src_bytes, tag, end;
    char sign, kind, sign_after;
    L->line_starting = true;
    while (L->at < n) {
        tag = tfm__jlex_find_tag(x, L->at);
        if (tag >= n) {
            if (!tfm__jlex_push(L, TFM__JT_DATA, L->at, x->src + L->at, n - L->at)) return false;
            break;
        }
        kind = x->src[tag + 1];
        sign = tag + 2 < n && (x->src[tag + 2] == '-' || x->src[tag + 2] == '+') ? x->src[tag + 2] : 0;
        if (kind == '%' && tfm__jlex_is_raw(x, tag, "raw", &end, &sign_after)) {
            if (!tfm__jlex_text(L, L->at, tag, sign, false) || !tfm__jlex_raw(L, tag, end, sign_after))
                return false;
            continue;
        }
        if (!tfm__jlex_text(L, L->at, tag, sign, kind == '{')) return false;
        L->at = tag + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            if (!tfm__jlex_comment(L, tag, L->at)) return false;
            continue;
        }
        if (!tfm__jlex_push(L, kind == '{' ? TFM__JT_VAR_BEGIN : TFM__JT_BLOCK_BEGIN, tag, NULL, 0) ||
            !tfm__jlex_tag(L, kind == '{'))
            return false;
    }
    return tfm__jlex_push(L, TFM__JT_EOF, n, NULL, 0);
}

/* --- syntax tree --- */

enum {
    TFM__JN_CONST = 0, TFM__JN_NAME, TFM__JN_ATTR, TFM__JN_ITEM, TFM__JN_SLICE, TFM__JN_CALL,
    TFM__JN_KWARG, TFM__JN_FILTER, TFM__JN_TEST, TFM__JN_NOT, TFM__JN_NEG, TFM__JN_POS,
    TFM__JN_BINOP, TFM__JN_AND, TFM__JN_OR, TFM__JN_COMPARE, TFM__JN_CMPOP, TFM__JN_COND,
    TFM__JN_LIST, TFM__JN_TUPLE, TFM__JN_DICT, TFM__JN_PAIR,
    /* statements */
    TFM__JN_DATA, TFM__JN_OUTPUT, TFM__JN_IF, TFM__JN_FOR, TFM__JN_SET, TFM__JN_MACRO,
    TFM__JN_PARAM, TFM__JN_BREAK, TFM__JN_CONTINUE, TFM__JN_FILTERBLOCK
};

enum { /* BINOP and CMPOP operators */
    TFM__JO_ADD = 0, TFM__JO_SUB, TFM__JO_MUL, TFM__JO_DIV, TFM__JO_FLOORDIV, TFM__JO_MOD,
    TFM__JO_POW, TFM__JO_CONCAT, TFM__JO_EQ, TFM__JO_NE, TFM__JO_LT, TFM__JO_LE, TFM__JO_GT,
    TFM__JO_GE, TFM__JO_IN, TFM__JO_NOTIN
};

typedef struct tfm__jnode tfm__jnode;
struct tfm__jnode {
    int kind;                           /* TFM__JN_* */
    int op;                             /* TFM__JO_*, filter or test id */
    size_t pos;                         /* byte offset in the source, for errors */
    tfm__jv value;                      /* CONST value; the name of NAME, ATTR, KWARG, MACRO, ... */
    tfm__jnode *a, *b, *c, *d, *e;      /* children, by kind (see tfm__jp_*) */
    tfm__jnode *next;                   /* the next argument, item or statement */
};

/* Filters and tests: name tables indexed by id (X-macros keep the enum and names in step). */
#define TFM__JFILTERS(X) X(ABS, "abs") X(CAPITALIZE, "capitalize") X(COUNT, "count") \
    X(D, "d") X(DEFAULT, "default") X(E, "e") X(ESCAPE, "escape") X(FIRST, "first") \
    X(FLOAT, "float") X(FORMAT, "format") X(INDENT, "indent") X(INT, "int") X(ITEMS, "items") \
    X(JOIN, "join") X(LAST, "last") X(LENGTH, "length") X(LIST, "list") X(LOWER, "lower") \
    X(MAP, "map") X(MAX, "max") X(MIN, "min") X(REJECT, "reject") X(REJECTATTR, "rejectattr") \
    X(REPLACE, "replace") X(REVERSE, "reverse") X(ROUND, "round") X(SAFE, "safe") \
    X(SELECT, "select") X(SELECTATTR, "selectattr") X(SORT, "sort") X(STRING, "string") \
    X(SUM, "sum") X(TITLE, "title") X(TOJSON, "tojson") X(TRIM, "trim") X(UNIQUE, "unique") \
    X(UPPER, "upper")
#define TFM__JTESTS(X) X(BOOLEAN, "boolean") X(CALLABLE, "callable") X(DEFINED, "defined") \
    X(DIVISIBLEBY, "divisibleby") X(EQ, "eq") X(EQUALTO, "equalto") X(ESCAPED, "escaped") \
    X(EVEN, "even") X(FALSE, "false") X(FLOAT, "float") X(GE, "ge") X(GT, "gt") \
    X(GREATERTHAN, "greaterthan") X(IN, "in") X(INTEGER, "integer") X(ITERABLE, "iterable") \
    X(LE, "le") X(LESSTHAN, "lessthan") X(LOWER, "lower") X(LT, "lt") X(MAPPING, "mapping") \
    X(NE, "ne") X(NONE, "none") X(NUMBER, "number") X(ODD, "odd") X(SAMEAS, "sameas") \
    X(SEQUENCE, "sequence") X(STRING, "string") X(TRUE, "true") X(UNDEFINED, "undefined") \
    X(UPPER, "upper") X(OP_EQ, "==") X(OP_NE, "!=") X(OP_LT, "<") X(OP_LE, "<=") \
    X(OP_GT, ">") X(OP_GE, ">=")
#define TFM__JENUM_F(id, name) TFM__JF_##id,
#define TFM__JENUM_T(id, name) TFM__JTEST_##id,
#define TFM__JNAME(id, name) name,
enum { TFM__JFILTERS(TFM__JENUM_F) TFM__JF_N_ };
enum { TFM__JTESTS(TFM__JENUM_T) TFM__JTEST_N_ };
static const char *const tfm__jfilter_names[] = { TFM__JFILTERS(TFM__JNAME) };
static const char *const tfm__jtest_names[] = { TFM__JTESTS(TFM__JNAME) };

/* Index of s[0..n) in names[0..count), or -1. */
TFM_PRIVATE int tfm__jlookup(const char *const *names, int count, const char *s, size_t n) {
    int i;
    for (i = 0; i < count; i++)
        if (tfm__jeq_str(s, n, names[i])) return i;
    return -1;
}

/* --- parser: tokens to tree, jinja2's grammar --- */

typedef struct tfm__jparser {
    tfm__jctx *x;
    const tfm__jtok *t;                 /* tokens, ending with EOF */
    size_t at;
    int loops;                          /* for loops open (break / continue allowed) */
} tfm__jparser;

TFM_PRIVATE const tfm__jtok *tfm__jp_cur(const tfm__jparser *p) { return &p->t[p->at]; }
TFM_PRIVATE const tfm__jtok *tfm__jp_peek(const tfm__jparser *p, size_t k) {
    size_t i;
    for (i = 0; i < k && p->t[p->at + i].type != TFM__JT_EOF; i++) {}
    return &p->t[p->at + i];
}
TFM_PRIVATE bool tfm__jtok_op(const tfm__jtok *t, const char *op) {
    return t->type == TFM__JT_OP && tfm__jeq_str(t->s, t->n, op);
}
TFM_PRIVATE bool tfm__jtok_name(const tfm__jtok *t, const char *name) {
    return t->type == TFM__JT_NAME && tfm__jeq_str(t->s, t->n, name);
}
TFM_PRIVATE bool tfm__jp_skip_op(tfm__jparser *p, const char *op) {
    if (!tfm__jtok_op(tfm__jp_cur(p), op)) return false;
    p->at++;
    return true;
}
TFM_PRIVATE bool tfm__jp_skip_name(tfm__jparser *p, const char *name) {
    if (!tfm__jtok_name(tfm__jp_cur(p), name)) return false;
    p->at++;
    return true;
}

/* "unexpected X" for the current token, with what was expected. */
TFM_PRIVATE bool tfm__jp_unexpected(tfm__jparser *p, const char *expected) {
    const tfm__jtok *t = tfm__jp_cur(p);
    const char *what = t->type == TFM__JT_EOF ? "end of template" :
                       t->type == TFM__JT_VAR_END ? "end of print statement" :
                       t->type == TFM__JT_BLOCK_END ? "end of statement block" :
                       t->type == TFM__JT_DATA ? "text" : NULL;
    if (what) return tfm__jfail(p->x, t->pos, "unexpected %s, expected %s", what, expected);
    return tfm__jfail(p->x, t->pos, "unexpected '%.*s', expected %s", (int)(t->n > 40 ? 40 : t->n),
                      t->s, expected);
}

TFM_PRIVATE bool tfm__jp_expect_op(tfm__jparser *p, const char *op) {
    char want[8];
    if (tfm__jp_skip_op(p, op)) return true;
    snprintf(want, sizeof want, "'%s'", op);
    return tfm__jp_unexpected(p, want);
}

TFM_PRIVATE bool tfm__jp_expect(tfm__jparser *p, int type, const char *what) {
    if (tfm__jp_cur(p)->type != type) return tfm__jp_unexpected(p, what);
    p->at++;
    return true;
}

TFM_PRIVATE tfm__jnode *tfm__jp_node(tfm__jparser *p, int kind, size_t pos) {
    tfm__jnode *n = TFM__CAST(tfm__jnode *, tfm__jalloc(p->x, sizeof(tfm__jnode)));
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->pos = pos;
    return n;
}

TFM_PRIVATE tfm__jnode *tfm__jp_node2(tfm__jparser *p, int kind, int op, size_t pos, tfm__jnode *a,
                                      tfm__jnode *b) {
    tfm__jnode *n = a && b ? tfm__jp_node(p, kind, pos) : NULL;
    if (!n) return NULL;
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

TFM_PRIVATE void tfm__jv_str(tfm__jv *v, const char *s, size_t n) {
    memset(v, 0, sizeof *v);
    v->type = TFM__JV_STR;
    v->u.s = s;
    v->n = n;
}

/* Value of a hex digit, or -1. */
TFM_PRIVATE int tfm__jhex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One backslash escape (s: after the backslash, n bytes left), as Python's unicode-escape:
   appends to out and returns the bytes used after the backslash; 0 for an unknown escape
   (kept as written), TFM__JNOPOS for a truncated \x, \u or \U. */
TFM_PRIVATE size_t tfm__junescape1(const char *s, size_t n, char *out, size_t *n_out) {
    static const char from[] = "\\'\"abfnrtv\n", to[] = "\\'\"\a\b\f\n\r\t\v";
    const char *hit = n ? strchr(from, s[0]) : NULL;
    size_t want, i;
    uint32_t cp = 0;
    if (hit && s[0]) {
        if (s[0] != '\n') out[(*n_out)++] = to[hit - from]; /* backslash-newline: nothing */
        return 1;
    }
    if (n && s[0] >= '0' && s[0] <= '7') {
        for (i = 0; i < 3 && i < n && s[i] >= '0' && s[i] <= '7'; i++) cp = cp * 8 + (uint32_t)(s[i] - '0');
        *n_out += tfm__jput_utf8(cp, out + *n_out);
        return i;
    }
    want = n && s[0] == 'x' ? 2 : n && s[0] == 'u' ? 4 : n && s[0] == 'U' ? 8 : 0;
    if (!want) return 0;
    for (i = 1; i <= want; i++) {
        if (i >= n || tfm__jhex(s[i]) < 0) return TFM__JNOPOS;
        cp = cp * 16 + (uint32_t)tfm__jhex(s[i]);
    }
    if (cp > 0x10FFFFu) return TFM__JNOPOS;
    if (cp >= 0xD800u && cp <= 0xDFFFu) cp = 0xFFFDu; /* a lone surrogate cannot be UTF-8 */
    *n_out += tfm__jput_utf8(cp, out + *n_out);
    return want + 1;
}

/* A string literal's body with its escapes undone, into the arena (escapes never grow). */
TFM_PRIVATE bool tfm__jp_string(tfm__jparser *p, const tfm__jtok *t, tfm__jv *out) {
    char *buf = TFM__CAST(char *, tfm__jalloc(p->x, t->n + 1));
    size_t i = 0, n = 0, used;
    if (!buf) return false;
    while (i < t->n) {
        if (t->s[i] != '\\' || i + 1 >= t->n) { buf[n++] = t->s[i++]; continue; }
        used = tfm__junescape1(t->s + i + 1, t->n - i - 1, buf, &n);
        if (used == TFM__JNOPOS)
            return tfm__jfail(p->x, t->pos + i + 1, "truncated \\%c escape", t->s[i + 1]);
        if (used == 0) buf[n++] = '\\';
        i += 1 + used;
    }
    tfm__jv_str(out, buf, n);
    return true;
}

/* Locale-proof strtod of s[0..n): '.' becomes the C library's decimal point first. */
TFM_PRIVATE bool tfm__jstrtod(const char *s, size_t n, double *out) {
    char buf[TFM__CHAT_NUM_BYTES * 4], point[8], *end;
    size_t i, k = 0;
    snprintf(point, sizeof point, "%.1f", 0.5);
    for (i = 0; i < n; i++) {
        if (s[i] == '_') continue;
        if (k + 1 >= sizeof buf) return false;
        buf[k++] = s[i] == '.' ? point[1] : s[i];
    }
    buf[k] = '\0';
    *out = strtod(buf, &end);
    return k > 0 && end == buf + k;
}

/* Decimal digits (underscores allowed) to int64; false on overflow. */
TFM_PRIVATE bool tfm__jstrtoi(const char *s, size_t n, int64_t *out) {
    uint64_t v = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        if (s[i] == '_') continue;
        if (v > ((uint64_t)INT64_MAX - (uint64_t)(s[i] - '0')) / 10) return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = (int64_t)v;
    return true;
}

TFM_PRIVATE tfm__jnode *tfm__jp_expression(tfm__jparser *p);

/* Arguments after "(": positional expressions, then name=value (KWARG nodes), up to ")". */
TFM_PRIVATE bool tfm__jp_args(tfm__jparser *p, tfm__jnode **out) {
    tfm__jnode **tail = out, *n;
    bool keywords = false;
    *out = NULL;
    while (!tfm__jp_skip_op(p, ")")) {
        const tfm__jtok *t = tfm__jp_cur(p);
        if (*out && !tfm__jp_expect_op(p, ",")) return false;
        if (*out && tfm__jp_skip_op(p, ")")) break;
        t = tfm__jp_cur(p);
        if (tfm__jtok_op(t, "*") || tfm__jtok_op(t, "**"))
            return tfm__jfail(p->x, t->pos, "*args and **kwargs are not supported");
        if (t->type == TFM__JT_NAME && tfm__jtok_op(tfm__jp_peek(p, 1), "=")) {
            if (!(n = tfm__jp_node(p, TFM__JN_KWARG, t->pos))) return false;
            tfm__jv_str(&n->value, t->s, t->n);
            p->at += 2;
            if (!(n->a = tfm__jp_expression(p))) return false;
            keywords = true;
        } else {
            if (keywords) return tfm__jfail(p->x, t->pos, "positional argument after a keyword argument");
            if (!(n = tfm__jp_expression(p))) return false;
        }
        *tail = n;
        tail = &n->next;
    }
    return true;
}

/* A name, possibly dotted (filter and test names), into v. */
TFM_PRIVATE bool tfm__jp_dotted(tfm__jparser *p, tfm__jv *v) {
    const tfm__jtok *t = tfm__jp_cur(p);
    size_t end;
    if (t->type != TFM__JT_NAME) return tfm__jp_unexpected(p, "a name");
    end = t->pos + t->n;
    p->at++;
    while (tfm__jtok_op(tfm__jp_cur(p), ".") && tfm__jp_peek(p, 1)->type == TFM__JT_NAME) {
        end = tfm__jp_peek(p, 1)->pos + tfm__jp_peek(p, 1)->n;
        p->at += 2;
    }
    tfm__jv_str(v, p->x->src + t->pos, end - t->pos);
    return true;
}

/* "| name(args)" applied to node; the name must be a known filter. */
TFM_PRIVATE tfm__jnode *tfm__jp_filter(tfm__jparser *p, tfm__jnode *node) {
    tfm__jnode *f = tfm__jp_node(p, TFM__JN_FILTER, tfm__jp_cur(p)->pos);
    if (!f || !tfm__jp_dotted(p, &f->value)) return NULL;
    f->op = tfm__jlookup(tfm__jfilter_names, TFM__JF_N_, f->value.u.s, f->value.n);
    if (f->op < 0) {
        tfm__jfail(p->x, f->pos, "no filter named '%.*s'", (int)f->value.n, f->value.u.s);
        return NULL;
    }
    f->a = node;
    if (tfm__jp_skip_op(p, "(") && !tfm__jp_args(p, &f->b)) return NULL;
    return f;
}

TFM_PRIVATE tfm__jnode *tfm__jp_primary(tfm__jparser *p);
TFM_PRIVATE tfm__jnode *tfm__jp_postfix(tfm__jparser *p, tfm__jnode *node);

/* "is [not] name [arg | (args)]" applied to node, as jinja2's parse_test. */
TFM_PRIVATE tfm__jnode *tfm__jp_test(tfm__jparser *p, tfm__jnode *node) {
    size_t pos = tfm__jp_cur(p)->pos;
    bool negated = tfm__jp_skip_name(p, "not");
    tfm__jnode *t = tfm__jp_node(p, TFM__JN_TEST, pos), *neg;
    const tfm__jtok *c;
    if (!t || !tfm__jp_dotted(p, &t->value)) return NULL;
    t->op = tfm__jlookup(tfm__jtest_names, TFM__JTEST_N_, t->value.u.s, t->value.n);
    if (t->op < 0) {
        tfm__jfail(p->x, pos, "no test named '%.*s'", (int)t->value.n, t->value.u.s);
        return NULL;
    }
    t->a = node;
    c = tfm__jp_cur(p);
    if (tfm__jp_skip_op(p, "(")) {
        if (!tfm__jp_args(p, &t->b)) return NULL;
    } else if ((c->type == TFM__JT_NAME || c->type == TFM__JT_STRING || c->type == TFM__JT_INT ||
                c->type == TFM__JT_FLOAT || tfm__jtok_op(c, "[") || tfm__jtok_op(c, "{")) &&
               !tfm__jtok_name(c, "else") && !tfm__jtok_name(c, "or") && !tfm__jtok_name(c, "and")) {
        if (tfm__jtok_name(c, "is")) {
            tfm__jfail(p->x, c->pos, "you cannot chain multiple tests with is");
            return NULL;
        }
        if (!(t->b = tfm__jp_primary(p)) || !(t->b = tfm__jp_postfix(p, t->b))) return NULL;
    }
    if (!negated) return t;
    if (!(neg = tfm__jp_node(p, TFM__JN_NOT, pos))) return NULL;
    neg->a = t;
    return neg;
}

/* [start:stop:step] or [index], after the "[". */
TFM_PRIVATE tfm__jnode *tfm__jp_subscript(tfm__jparser *p, tfm__jnode *node, size_t pos) {
    tfm__jnode *n, *part[3] = {NULL, NULL, NULL};
    int k = 0;
    bool slice = false;
    for (;;) {
        const tfm__jtok *c = tfm__jp_cur(p);
        if (!tfm__jtok_op(c, ":") && !tfm__jtok_op(c, "]") && !(part[k] = tfm__jp_expression(p)))
            return NULL;
        if (!tfm__jtok_op(tfm__jp_cur(p), ":") || k == 2) break;
        p->at++;
        slice = true;
        k++;
    }
    if (!tfm__jp_expect_op(p, "]")) return NULL;
    if (!slice && !part[0]) {
        tfm__jfail(p->x, pos, "expected a subscript expression");
        return NULL;
    }
    if (!(n = tfm__jp_node(p, slice ? TFM__JN_SLICE : TFM__JN_ITEM, pos))) return NULL;
    n->a = node;
    n->b = part[0];
    n->c = part[1];
    n->d = part[2];
    return n;
}

/* .name, .0, [subscript] and (call) after a primary. */
TFM_PRIVATE tfm__jnode *tfm__jp_postfix(tfm__jparser *p, tfm__jnode *node) {
    for (;;) {
        const tfm__jtok *c = tfm__jp_cur(p), *t;
        tfm__jnode *n;
        if (tfm__jtok_op(c, ".")) {
            t = tfm__jp_peek(p, 1);
            if (t->type != TFM__JT_NAME && t->type != TFM__JT_INT) {
                p->at++;
                tfm__jp_unexpected(p, "a name or number");
                return NULL;
            }
            if (!(n = tfm__jp_node(p, t->type == TFM__JT_NAME ? TFM__JN_ATTR : TFM__JN_ITEM, c->pos)))
                return NULL;
            n->a = node;
            if (t->type == TFM__JT_NAME) {
                tfm__jv_str(&n->value, t->s, t->n);
            } else {
                if (!(n->b = tfm__jp_node(p, TFM__JN_CONST, t->pos))) return NULL;
                n->b->value.type = TFM__JV_INT;
                if (!tfm__jstrtoi(t->s, t->n, &n->b->value.u.i)) {
                    tfm__jfail(p->x, t->pos, "integer too large");
                    return NULL;
                }
            }
            p->at += 2;
        } else if (tfm__jtok_op(c, "[")) {
            p->at++;
            if (!(n = tfm__jp_subscript(p, node, c->pos))) return NULL;
        } else if (tfm__jtok_op(c, "(")) {
            p->at++;
            if (!(n = tfm__jp_node(p, TFM__JN_CALL, c->pos))) return NULL;
            n->a = node;
            if (!tfm__jp_args(p, &n->b)) return NULL;
        } else {
            return node;
        }
        node = n;
    }
}

/* Items up to the closing bracket: [a, b], {k: v, ...}, separated by commas, trailing allowed. */
TFM_PRIVATE bool tfm__jp_items(tfm__jparser *p, const char *close, bool pairs, tfm__jnode **out) {
    tfm__jnode **tail = out, *n, *k;
    *out = NULL;
    while (!tfm__jp_skip_op(p, close)) {
        if (*out && !tfm__jp_expect_op(p, ",")) return false;
        if (*out && tfm__jp_skip_op(p, close)) break;
        if (!(n = tfm__jp_expression(p))) return false;
        if (pairs) {
            k = n;
            if (!tfm__jp_expect_op(p, ":") || !(n = tfm__jp_node(p, TFM__JN_PAIR, k->pos))) return false;
            n->a = k;
            if (!(n->b = tfm__jp_expression(p))) return false;
        }
        *tail = n;
        tail = &n->next;
    }
    return true;
}

/* ( expr ) or a tuple: () (a,) (a, b). */
TFM_PRIVATE tfm__jnode *tfm__jp_paren(tfm__jparser *p, size_t pos) {
    tfm__jnode *first, *t, **tail;
    if (tfm__jp_skip_op(p, ")")) return tfm__jp_node(p, TFM__JN_TUPLE, pos);
    if (!(first = tfm__jp_expression(p))) return NULL;
    if (tfm__jp_skip_op(p, ")")) return first;
    if (!(t = tfm__jp_node(p, TFM__JN_TUPLE, pos))) return NULL;
    t->b = first;
    tail = &first->next;
    while (tfm__jp_skip_op(p, ",")) {
        if (tfm__jtok_op(tfm__jp_cur(p), ")")) break;
        if (!(*tail = tfm__jp_expression(p))) return NULL;
        tail = &(*tail)->next;
    }
    return tfm__jp_expect_op(p, ")") ? t : NULL;
}

/* A name or a literal: true/false/none, strings (adjacent ones joined), numbers, ( ), [ ], { }. */
TFM_PRIVATE tfm__jnode *tfm__jp_primary(tfm__jparser *p) {
    const tfm__jtok *t = tfm__jp_cur(p);
    tfm__jnode *n = tfm__jp_node(p, TFM__JN_CONST, t->pos);
    if (!n) return NULL;
    p->at++;
    if (t->type == TFM__JT_NAME) {
        if (tfm__jtok_name(t, "true") || tfm__jtok_name(t, "True") || tfm__jtok_name(t, "false") ||
            tfm__jtok_name(t, "False")) {
            n->value.type = TFM__JV_BOOL;
            n->value.u.i = t->s[0] == 't' || t->s[0] == 'T';
        } else if (tfm__jtok_name(t, "none") || tfm__jtok_name(t, "None")) {
            n->value.type = TFM__JV_NONE;
        } else {
            n->kind = TFM__JN_NAME;
            tfm__jv_str(&n->value, t->s, t->n);
        }
    } else if (t->type == TFM__JT_STRING) {
        tfm__jbuf b;
        tfm__jv part;
        if (!tfm__jp_string(p, t, &n->value)) return NULL;
        if (tfm__jp_cur(p)->type != TFM__JT_STRING) return n;
        tfm__jbuf_init(&b, p->x->arena);
        if (!tfm__jbuf_put(&b, n->value.u.s, n->value.n)) { tfm__jfail_mem(p->x); return NULL; }
        while (tfm__jp_cur(p)->type == TFM__JT_STRING) {
            if (!tfm__jp_string(p, tfm__jp_cur(p), &part)) return NULL;
            if (!tfm__jbuf_put(&b, part.u.s, part.n)) { tfm__jfail_mem(p->x); return NULL; }
            p->at++;
        }
        tfm__jv_str(&n->value, b.p, b.n);
    } else if (t->type == TFM__JT_INT) {
        n->value.type = TFM__JV_INT;
        if (!tfm__jstrtoi(t->s, t->n, &n->value.u.i)) { tfm__jfail(p->x, t->pos, "integer too large"); return NULL; }
    } else if (t->type == TFM__JT_FLOAT) {
        n->value.type = TFM__JV_FLOAT;
        if (!tfm__jstrtod(t->s, t->n, &n->value.u.f)) { tfm__jfail(p->x, t->pos, "bad number"); return NULL; }
    } else if (tfm__jtok_op(t, "(")) {
        return tfm__jp_paren(p, t->pos);
    } else if (tfm__jtok_op(t, "[") || tfm__jtok_op(t, "{")) {
        n->kind = t->s[0] == '[' ? TFM__JN_LIST : TFM__JN_DICT;
        if (!tfm__jp_items(p, t->s[0] == '[' ? "]" : "}", t->s[0] == '{', &n->b)) return NULL;
    } else {
        p->at--;
        tfm__jp_unexpected(p, "an expression");
        return NULL;
    }
    return n;
}

/* Depth guard for the recursive parts of the grammar. */
TFM_PRIVATE bool tfm__jp_enter(tfm__jparser *p) {
    if (++p->x->depth <= TFM__CHAT_MAX_DEPTH) return true;
    return tfm__jfail(p->x, tfm__jp_cur(p)->pos, "expression nested too deeply (more than %d)",
                      TFM__CHAT_MAX_DEPTH);
}

/* Unary - and +, a primary, its postfix, then (with_filter) filters, tests and calls. */
TFM_PRIVATE tfm__jnode *tfm__jp_unary(tfm__jparser *p, bool with_filter) {
    const tfm__jtok *t = tfm__jp_cur(p);
    tfm__jnode *n = NULL;
    if (!tfm__jp_enter(p)) return NULL;
    if (tfm__jtok_op(t, "-") || tfm__jtok_op(t, "+")) {
        p->at++;
        if ((n = tfm__jp_node(p, t->s[0] == '-' ? TFM__JN_NEG : TFM__JN_POS, t->pos)) &&
            !(n->a = tfm__jp_unary(p, false)))
            n = NULL;
    } else {
        n = tfm__jp_primary(p);
    }
    if (n) n = tfm__jp_postfix(p, n);
    while (n && with_filter) {
        const tfm__jtok *c = tfm__jp_cur(p);
        if (tfm__jtok_op(c, "|")) {
            p->at++;
            n = tfm__jp_filter(p, n);
        } else if (tfm__jtok_name(c, "is")) {
            p->at++;
            n = tfm__jp_test(p, n);
        } else if (tfm__jtok_op(c, "(")) {
            n = tfm__jp_postfix(p, n);
        } else {
            break;
        }
    }
    p->x->depth--;
    return n;
}

/* Left-associative binary levels: ** ; * / // % ; ~ ; + - */
TFM_PRIVATE tfm__jnode *tfm__jp_binary(tfm__jparser *p, int level) {
    static const char *const ops[4][4] = {{"**", NULL, NULL, NULL}, {"*", "/", "//", "%"},
                                          {"~", NULL, NULL, NULL}, {"+", "-", NULL, NULL}};
    static const int codes[4][4] = {{TFM__JO_POW, 0, 0, 0},
                                    {TFM__JO_MUL, TFM__JO_DIV, TFM__JO_FLOORDIV, TFM__JO_MOD},
                                    {TFM__JO_CONCAT, 0, 0, 0}, {TFM__JO_ADD, TFM__JO_SUB, 0, 0}};
    tfm__jnode *left = level == 0 ? tfm__jp_unary(p, true) : tfm__jp_binary(p, level - 1), *right;
    int k;
    while (left) {
        const tfm__jtok *t = tfm__jp_cur(p);
        for (k = 0; k < 4 && ops[level][k] && !tfm__jtok_op(t, ops[level][k]); k++) {}
        if (k == 4 || !ops[level][k]) break;
        p->at++;
        right = level == 0 ? tfm__jp_unary(p, true) : tfm__jp_binary(p, level - 1);
        left = tfm__jp_node2(p, TFM__JN_BINOP, codes[level][k], t->pos, left, right);
    }
    return left;
}

/* a == b, a < b < c (chained), a in b, a not in b. */
TFM_PRIVATE tfm__jnode *tfm__jp_compare(tfm__jparser *p) {
    static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
    static const int codes[] = {TFM__JO_EQ, TFM__JO_NE, TFM__JO_LT, TFM__JO_LE, TFM__JO_GT, TFM__JO_GE};
    tfm__jnode *first = tfm__jp_binary(p, 3), *cmp = NULL, **tail = NULL, *op;
    while (first) {
        const tfm__jtok *t = tfm__jp_cur(p);
        int code = -1, k;
        for (k = 0; k < 6; k++)
            if (tfm__jtok_op(t, ops[k])) code = codes[k];
        if (tfm__jtok_name(t, "in")) code = TFM__JO_IN;
        if (tfm__jtok_name(t, "not") && tfm__jtok_name(tfm__jp_peek(p, 1), "in")) {
            code = TFM__JO_NOTIN;
            p->at++;
        }
        if (code < 0) break;
        p->at++;
        if (!cmp && !(cmp = tfm__jp_node(p, TFM__JN_COMPARE, first->pos))) return NULL;
        if (!tail) { cmp->a = first; tail = &cmp->b; }
        if (!(op = tfm__jp_node(p, TFM__JN_CMPOP, t->pos)) || !(op->a = tfm__jp_binary(p, 3))) return NULL;
        op->op = code;
        *tail = op;
        tail = &op->next;
    }
    return cmp ? cmp : first;
}

TFM_PRIVATE tfm__jnode *tfm__jp_not(tfm__jparser *p) {
    const tfm__jtok *t = tfm__jp_cur(p);
    tfm__jnode *n;
    if (!tfm__jtok_name(t, "not")) return tfm__jp_compare(p);
    p->at++;
    if (!tfm__jp_enter(p)) return NULL;
    if ((n = tfm__jp_node(p, TFM__JN_NOT, t->pos)) && !(n->a = tfm__jp_not(p))) n = NULL;
    p->x->depth--;
    return n;
}

/* or (level 1) over and (level 0) over not. */
TFM_PRIVATE tfm__jnode *tfm__jp_logic(tfm__jparser *p, int level) {
    const char *word = level ? "or" : "and";
    tfm__jnode *left = level ? tfm__jp_logic(p, 0) : tfm__jp_not(p), *right;
    while (left && tfm__jtok_name(tfm__jp_cur(p), word)) {
        size_t pos = tfm__jp_cur(p)->pos;
        p->at++;
        right = level ? tfm__jp_logic(p, 0) : tfm__jp_not(p);
        left = tfm__jp_node2(p, level ? TFM__JN_OR : TFM__JN_AND, 0, pos, left, right);
    }
    return left;
}

/* A full expression: or-expressions with inline "x if cond else y" (else optional). */
TFM_PRIVATE tfm__jnode *tfm__jp_expression(tfm__jparser *p) {
    tfm__jnode *n, *c;
    if (!tfm__jp_enter(p)) return NULL;
    n = tfm__jp_logic(p, 1);
    while (n && tfm__jtok_name(tfm__jp_cur(p), "if")) {
        size_t pos = tfm__jp_cur(p)->pos;
        p->at++;
        if (!(c = tfm__jp_node(p, TFM__JN_COND, pos)) || !(c->a = tfm__jp_logic(p, 1))) { n = NULL; break; }
        c->b = n;
        if (tfm__jp_skip_name(p, "else") && !(c->c = tfm__jp_expression(p))) { n = NULL; break; }
        n = c;
    }
    p->x->depth--;
    return n;
}

/* An expression, or several separated by commas as a tuple (in {{ }}, set and for). */
TFM_PRIVATE tfm__jnode *tfm__jp_tuple(tfm__jparser *p, bool with_condexpr) {
    tfm__jnode *first = with_condexpr ? tfm__jp_expression(p) : tfm__jp_logic(p, 1), *t, **tail;
    const tfm__jtok *c;
    if (!first || !tfm__jtok_op(tfm__jp_cur(p), ",")) return first;
    if (!(t = tfm__jp_node(p, TFM__JN_TUPLE, first->pos))) return NULL;
    t->b = first;
    tail = &first->next;
    while (tfm__jp_skip_op(p, ",")) {
        c = tfm__jp_cur(p);
        if (c->type == TFM__JT_VAR_END || c->type == TFM__JT_BLOCK_END || tfm__jtok_op(c, ")") ||
            tfm__jtok_name(c, "if") || tfm__jtok_name(c, "recursive"))
            break;
        if (!(*tail = with_condexpr ? tfm__jp_expression(p) : tfm__jp_logic(p, 1))) return NULL;
        tail = &(*tail)->next;
    }
    return t;
}

/* --- statements --- */

TFM_PRIVATE bool tfm__jp_body(tfm__jparser *p, const char *const *ends, tfm__jnode **out);

/* An assignment target: a name, a (possibly parenthesized) tuple of names, or with
   allow_ns a namespace attribute ns.attr. */
TFM_PRIVATE tfm__jnode *tfm__jp_target(tfm__jparser *p, bool allow_ns) {
    const tfm__jtok *t = tfm__jp_cur(p);
    tfm__jnode *first, *tuple, **tail;
    if (allow_ns && t->type == TFM__JT_NAME && tfm__jtok_op(tfm__jp_peek(p, 1), ".") &&
        tfm__jp_peek(p, 2)->type == TFM__JT_NAME) {
        tfm__jnode *base = tfm__jp_node(p, TFM__JN_NAME, t->pos), *attr;
        if (!base || !(attr = tfm__jp_node(p, TFM__JN_ATTR, t->pos))) return NULL;
        tfm__jv_str(&base->value, t->s, t->n);
        attr->a = base;
        tfm__jv_str(&attr->value, tfm__jp_peek(p, 2)->s, tfm__jp_peek(p, 2)->n);
        p->at += 3;
        return attr;
    }
    if (!(first = tfm__jp_primary(p))) return NULL;
    if (first->kind == TFM__JN_TUPLE) {
        for (tuple = first->b; tuple; tuple = tuple->next)
            if (tuple->kind != TFM__JN_NAME) break;
        if (!tuple) return first;
    }
    if (first->kind != TFM__JN_NAME) {
        tfm__jfail(p->x, first->pos, "cannot assign to this expression");
        return NULL;
    }
    if (!tfm__jtok_op(tfm__jp_cur(p), ",")) return first;
    if (!(tuple = tfm__jp_node(p, TFM__JN_TUPLE, first->pos))) return NULL;
    tuple->b = first;
    tail = &first->next;
    while (tfm__jp_skip_op(p, ",")) {
        t = tfm__jp_cur(p);
        if (t->type != TFM__JT_NAME || tfm__jtok_name(t, "in")) break;
        if (!(*tail = tfm__jp_primary(p))) return NULL;
        tail = &(*tail)->next;
    }
    return tuple;
}

/* The end of a tag: "%}". */
TFM_PRIVATE bool tfm__jp_end(tfm__jparser *p) { return tfm__jp_expect(p, TFM__JT_BLOCK_END, "'%}'"); }

/* if / elif / else / endif; elif becomes a nested IF in the else branch. */
TFM_PRIVATE tfm__jnode *tfm__jp_if(tfm__jparser *p, size_t pos) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    static const char *const endif[] = {"endif", NULL};
    tfm__jnode *n = tfm__jp_node(p, TFM__JN_IF, pos);
    if (!n || !(n->a = tfm__jp_tuple(p, false)) || !tfm__jp_end(p) || !tfm__jp_body(p, ends, &n->b))
        return NULL;
    if (tfm__jtok_name(tfm__jp_cur(p), "elif")) {
        size_t at = tfm__jp_cur(p)->pos;
        p->at++;
        return (n->c = tfm__jp_if(p, at)) ? n : NULL;
    }
    if (tfm__jp_skip_name(p, "else") && (!tfm__jp_end(p) || !tfm__jp_body(p, endif, &n->c)))
        return NULL;
    p->at++; /* endif */
    return tfm__jp_end(p) ? n : NULL;
}

/* for target in iter [if cond] ... [else ...] endfor. */
TFM_PRIVATE tfm__jnode *tfm__jp_for(tfm__jparser *p, size_t pos) {
    static const char *const ends[] = {"else", "endfor", NULL};
    static const char *const endfor[] = {"endfor", NULL};
    tfm__jnode *n = tfm__jp_node(p, TFM__JN_FOR, pos);
    if (!n || !(n->a = tfm__jp_target(p, false))) return NULL;
    if (!tfm__jp_skip_name(p, "in")) { tfm__jp_unexpected(p, "'in'"); return NULL; }
    if (!(n->b = tfm__jp_tuple(p, false))) return NULL;
    if (tfm__jp_skip_name(p, "if") && !(n->e = tfm__jp_expression(p))) return NULL;
    if (tfm__jtok_name(tfm__jp_cur(p), "recursive")) {
        tfm__jfail(p->x, tfm__jp_cur(p)->pos, "recursive loops are not supported");
        return NULL;
    }
    if (!tfm__jp_end(p)) return NULL;
    p->loops++;
    if (!tfm__jp_body(p, ends, &n->c)) return NULL;
    p->loops--;
    if (tfm__jp_skip_name(p, "else") && (!tfm__jp_end(p) || !tfm__jp_body(p, endfor, &n->d)))
        return NULL;
    p->at++; /* endfor */
    return tfm__jp_end(p) ? n : NULL;
}

/* set target = expr, or set target %} body {% endset. */
TFM_PRIVATE tfm__jnode *tfm__jp_set(tfm__jparser *p, size_t pos) {
    static const char *const endset[] = {"endset", NULL};
    tfm__jnode *n = tfm__jp_node(p, TFM__JN_SET, pos);
    if (!n || !(n->a = tfm__jp_target(p, true))) return NULL;
    if (tfm__jp_skip_op(p, "=")) return (n->b = tfm__jp_tuple(p, true)) && tfm__jp_end(p) ? n : NULL;
    if (n->a->kind != TFM__JN_NAME && n->a->kind != TFM__JN_ATTR) {
        tfm__jp_unexpected(p, "'='");
        return NULL;
    }
    if (!tfm__jp_end(p) || !tfm__jp_body(p, endset, &n->c)) return NULL;
    p->at++;
    return tfm__jp_end(p) ? n : NULL;
}

/* macro name(param, param=default, ...) body endmacro. */
TFM_PRIVATE tfm__jnode *tfm__jp_macro(tfm__jparser *p, size_t pos) {
    static const char *const endmacro[] = {"endmacro", NULL};
    tfm__jnode *n = tfm__jp_node(p, TFM__JN_MACRO, pos), **tail, *param;
    const tfm__jtok *t = tfm__jp_cur(p);
    int loops = p->loops;
    if (!n) return NULL;
    if (t->type != TFM__JT_NAME) { tfm__jp_unexpected(p, "a macro name"); return NULL; }
    tfm__jv_str(&n->value, t->s, t->n);
    p->at++;
    if (!tfm__jp_expect_op(p, "(")) return NULL;
    tail = &n->b;
    while (!tfm__jp_skip_op(p, ")")) {
        if (n->b && !tfm__jp_expect_op(p, ",")) return NULL;
        t = tfm__jp_cur(p);
        if (t->type != TFM__JT_NAME) { tfm__jp_unexpected(p, "a parameter name"); return NULL; }
        if (!(param = tfm__jp_node(p, TFM__JN_PARAM, t->pos))) return NULL;
        tfm__jv_str(&param->value, t->s, t->n);
        p->at++;
        if (tfm__jp_skip_op(p, "=") && !(param->a = tfm__jp_expression(p))) return NULL;
        *tail = param;
        tail = &param->next;
    }
    p->loops = 0;
    if (!tfm__jp_end(p) || !tfm__jp_body(p, endmacro, &n->c)) return NULL;
    p->loops = loops;
    p->at++;
    return tfm__jp_end(p) ? n : NULL;
}

/* filter name(args) | name(args) ... endfilter: the filters (b, their operands unset) apply
   to the body's output (c). */
TFM_PRIVATE tfm__jnode *tfm__jp_filterblock(tfm__jparser *p, size_t pos) {
    static const char *const endfilter[] = {"endfilter", NULL};
    tfm__jnode *n = tfm__jp_node(p, TFM__JN_FILTERBLOCK, pos), **tail, *f;
    if (!n) return NULL;
    tail = &n->b;
    do {
        if (!(f = tfm__jp_filter(p, NULL))) return NULL;
        *tail = f;
        tail = &f->next;
    } while (tfm__jp_skip_op(p, "|"));
    if (!tfm__jp_end(p) || !tfm__jp_body(p, endfilter, &n->c)) return NULL;
    p->at++;
    return tfm__jp_end(p) ? n : NULL;
}

/* One {% tag %} after its name ({% generation %} is an always-true if around its body). */
TFM_PRIVATE tfm__jnode *tfm__jp_tag(tfm__jparser *p) {
    static const char *const endgen[] = {"endgeneration", NULL};
    const tfm__jtok *t = tfm__jp_cur(p);
    tfm__jnode *n;
    p->at++;
    if (tfm__jtok_name(t, "if")) return tfm__jp_if(p, t->pos);
    if (tfm__jtok_name(t, "for")) return tfm__jp_for(p, t->pos);
    if (tfm__jtok_name(t, "set")) return tfm__jp_set(p, t->pos);
    if (tfm__jtok_name(t, "macro")) return tfm__jp_macro(p, t->pos);
    if (tfm__jtok_name(t, "filter")) return tfm__jp_filterblock(p, t->pos);
    if (tfm__jtok_name(t, "break") || tfm__jtok_name(t, "continue")) {
        if (!p->loops) {
            tfm__jfail(p->x, t->pos, "'%.*s' outside a loop", (int)t->n, t->s);
            return NULL;
        }
        n = tfm__jp_node(p, t->s[0] == 'b' ? TFM__JN_BREAK : TFM__JN_CONTINUE, t->pos);
        return n && tfm__jp_end(p) ? n : NULL;
    }
    if (tfm__jtok_name(t, "generation")) { /* transformers' assistant-mask tag: just its body */
        if (!(n = tfm__jp_node(p, TFM__JN_IF, t->pos))) return NULL;
        n->a = tfm__jp_node(p, TFM__JN_CONST, t->pos);
        if (!n->a || !tfm__jp_end(p) || !tfm__jp_body(p, endgen, &n->b)) return NULL;
        n->a->value.type = TFM__JV_BOOL;
        n->a->value.u.i = 1;
        p->at++;
        return tfm__jp_end(p) ? n : NULL;
    }
    if (t->type == TFM__JT_NAME)
        tfm__jfail(p->x, t->pos, "unknown or unexpected tag '%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
    else
        tfm__jp_unexpected(p, "a tag name");
    return NULL;
}

/* Statements up to a {% name %} with name in ends (left as the current token, after the
   "{%"), or to the end of the template when ends is NULL. */
TFM_PRIVATE bool tfm__jp_body(tfm__jparser *p, const char *const *ends, tfm__jnode **out) {
    tfm__jnode **tail = out, *n = NULL;
    bool ok = tfm__jp_enter(p);
    int k;
    *out = NULL;
    while (ok) {
        const tfm__jtok *t = tfm__jp_cur(p);
        if (t->type == TFM__JT_EOF) {
            if (ends) ok = tfm__jfail(p->x, t->pos, "unexpected end of template: '%s' is missing", ends[0]);
            break;
        }
        p->at++;
        if (t->type == TFM__JT_DATA) {
            if ((n = tfm__jp_node(p, TFM__JN_DATA, t->pos))) tfm__jv_str(&n->value, t->s, t->n);
        } else if (t->type == TFM__JT_VAR_BEGIN) {
            if ((n = tfm__jp_node(p, TFM__JN_OUTPUT, t->pos)) &&
                (!(n->a = tfm__jp_tuple(p, true)) || !tfm__jp_expect(p, TFM__JT_VAR_END, "'}}'")))
                n = NULL;
        } else if (t->type == TFM__JT_BLOCK_BEGIN) {
            for (k = 0; ends && ends[k]; k++)
                if (tfm__jtok_name(tfm__jp_cur(p), ends[k])) break;
            if (ends && ends[k]) break;
            n = tfm__jp_tag(p);
        } else {
            p->at--;
            n = NULL;
            tfm__jp_unexpected(p, "text or a tag");
        }
        if (!n) { ok = false; break; }
        *tail = n;
        tail = &n->next;
    }
    p->x->depth--;
    return ok && p->x->result == TFM_OK;
}

/* --- render state and values --- */

typedef struct tfm__jframe {            /* variables of the template, one loop iteration or call */
    struct tfm__jframe *parent;
    tfm__jseq vars;                     /* name, value pairs */
} tfm__jframe;

typedef struct tfm__jmacro {
    const tfm__jnode *def;
    tfm__jframe *closure;               /* where it was defined: names resolve from there */
} tfm__jmacro;

enum { TFM__JCTL_NONE = 0, TFM__JCTL_BREAK, TFM__JCTL_CONTINUE };

typedef struct tfm__jx {
    tfm__jctx c;
    tfm__jbuf out;                      /* where output goes now (set blocks and macros swap it) */
    const tfm_chat_date *date;          /* NULL: strftime_now is undefined */
    int ctl;                            /* a pending break / continue */
} tfm__jx;

/* Counts one step; false (an error) past TFM__CHAT_MAX_STEPS. */
TFM_PRIVATE bool tfm__jx_step(tfm__jx *x, size_t pos) {
    if (++x->c.steps <= TFM__CHAT_MAX_STEPS) return true;
    return tfm__jfail(&x->c, pos, "the template takes more than %u steps", TFM__CHAT_MAX_STEPS);
}

TFM_PRIVATE tfm__jv tfm__jv_make(int type) {
    tfm__jv v;
    memset(&v, 0, sizeof v);
    v.type = type;
    return v;
}

TFM_PRIVATE tfm__jv tfm__jv_int(int64_t i) {
    tfm__jv v = tfm__jv_make(TFM__JV_INT);
    v.u.i = i;
    return v;
}

TFM_PRIVATE tfm__jv tfm__jv_bool(bool b) {
    tfm__jv v = tfm__jv_make(TFM__JV_BOOL);
    v.u.i = b;
    return v;
}

TFM_PRIVATE tfm__jv tfm__jv_float(double f) {
    tfm__jv v = tfm__jv_make(TFM__JV_FLOAT);
    v.u.f = f;
    return v;
}

TFM_PRIVATE tfm__jv tfm__jv_s(const char *s, size_t n) {
    tfm__jv v;
    tfm__jv_str(&v, s, n);
    return v;
}

/* An Undefined that remembers the name looked up (for "'x' is undefined"). */
TFM_PRIVATE tfm__jv tfm__jv_undef(const char *name, size_t n) {
    tfm__jv v = tfm__jv_make(TFM__JV_UNDEF);
    v.u.s = name;
    v.n = n;
    return v;
}

/* A new empty list (type LIST, TUPLE, DICT or NS) with room for cap values. */
TFM_PRIVATE bool tfm__jv_seq(tfm__jx *x, int type, size_t cap, tfm__jv *out) {
    tfm__jseq *s = TFM__CAST(tfm__jseq *, tfm__jalloc(&x->c, sizeof(tfm__jseq)));
    size_t bytes;
    *out = tfm__jv_make(type);
    if (!s) return false;
    s->n = 0;
    s->cap = cap;
    s->v = NULL;
    if (cap) {
        if (!tfm__mul_size(cap, sizeof(tfm__jv), &bytes)) return tfm__jfail_mem(&x->c);
        if (!(s->v = TFM__CAST(tfm__jv *, tfm__jalloc(&x->c, bytes)))) return false;
    }
    out->u.seq = s;
    return true;
}

/* Appends v to a sequence, growing it in the arena. */
TFM_PRIVATE bool tfm__jseq_push(tfm__jx *x, tfm__jseq *s, const tfm__jv *v) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8, bytes;
        tfm__jv *nv;
        if (!tfm__mul_size(cap, sizeof(tfm__jv), &bytes)) return tfm__jfail_mem(&x->c);
        if (!(nv = TFM__CAST(tfm__jv *, tfm__jalloc(&x->c, bytes)))) return false;
        if (s->n) memcpy(nv, s->v, s->n * sizeof(tfm__jv));
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n++] = *v;
    return true;
}

/* Copies s[0..n) into the arena as a string value. */
TFM_PRIVATE bool tfm__jv_strdup(tfm__jx *x, const char *s, size_t n, tfm__jv *out) {
    char *p = TFM__CAST(char *, tfm__jalloc(&x->c, n ? n : 1));
    if (!p) return false;
    if (n) memcpy(p, s, n);
    *out = tfm__jv_s(p, n);
    return true;
}

TFM_PRIVATE bool tfm__jv_is_seq(const tfm__jv *v) { return v->type == TFM__JV_LIST || v->type == TFM__JV_TUPLE; }
TFM_PRIVATE bool tfm__jv_is_num(const tfm__jv *v) {
    return v->type == TFM__JV_INT || v->type == TFM__JV_FLOAT || v->type == TFM__JV_BOOL;
}
TFM_PRIVATE double tfm__jv_num(const tfm__jv *v) { return v->type == TFM__JV_FLOAT ? v->u.f : (double)v->u.i; }

/* Python truthiness. */
TFM_PRIVATE bool tfm__jv_truthy(const tfm__jv *v) {
    switch (v->type) {
    case TFM__JV_UNDEF: case TFM__JV_NONE: return false;
    case TFM__JV_BOOL: case TFM__JV_INT: return v->u.i != 0;
    case TFM__JV_FLOAT: return v->u.f != 0.0;
    case TFM__JV_STR: return v->n > 0;
    case TFM__JV_LIST: case TFM__JV_TUPLE: case TFM__JV_DICT: return v->u.seq->n > 0;
    default: return true;
    }
}

/* Python ==: numbers across int / float / bool, strings by bytes, sequences and dicts deeply
   (a list never equals a tuple), Undefined only Undefined. */
TFM_PRIVATE bool tfm__jv_eq(const tfm__jv *a, const tfm__jv *b) {
    size_t i, j;
    if (tfm__jv_is_num(a) && tfm__jv_is_num(b)) {
        if (a->type != TFM__JV_FLOAT && b->type != TFM__JV_FLOAT) return a->u.i == b->u.i;
        return tfm__jv_num(a) == tfm__jv_num(b);
    }
    if (a->type != b->type) return false;
    switch (a->type) {
    case TFM__JV_UNDEF: case TFM__JV_NONE: return true;
    case TFM__JV_STR: return a->n == b->n && (a->n == 0 || memcmp(a->u.s, b->u.s, a->n) == 0);
    case TFM__JV_LIST: case TFM__JV_TUPLE:
        if (a->u.seq->n != b->u.seq->n) return false;
        for (i = 0; i < a->u.seq->n; i++)
            if (!tfm__jv_eq(&a->u.seq->v[i], &b->u.seq->v[i])) return false;
        return true;
    case TFM__JV_DICT:
        if (a->u.seq->n != b->u.seq->n) return false;
        for (i = 0; i < a->u.seq->n; i += 2) {
            for (j = 0; j < b->u.seq->n; j += 2)
                if (tfm__jv_eq(&a->u.seq->v[i], &b->u.seq->v[j])) break;
            if (j == b->u.seq->n || !tfm__jv_eq(&a->u.seq->v[i + 1], &b->u.seq->v[j + 1])) return false;
        }
        return true;
    default: return a->u.p == b->u.p && a->fn == b->fn;
    }
}

/* Python's < <= > >= as -1 / 0 / 1 in *out: numbers, strings (code point order is byte order
   in UTF-8), sequences of the same kind element by element. False: not comparable. */
TFM_PRIVATE bool tfm__jv_order(const tfm__jv *a, const tfm__jv *b, int *out) {
    size_t i, n;
    int c;
    if (tfm__jv_is_num(a) && tfm__jv_is_num(b)) {
        if (a->type != TFM__JV_FLOAT && b->type != TFM__JV_FLOAT) *out = (a->u.i > b->u.i) - (a->u.i < b->u.i);
        else *out = (tfm__jv_num(a) > tfm__jv_num(b)) - (tfm__jv_num(a) < tfm__jv_num(b));
        return true;
    }
    if (a->type != b->type) return false;
    if (a->type == TFM__JV_STR) {
        n = a->n < b->n ? a->n : b->n;
        c = n ? memcmp(a->u.s, b->u.s, n) : 0;
        *out = c ? (c > 0) - (c < 0) : (a->n > b->n) - (a->n < b->n);
        return true;
    }
    if (!tfm__jv_is_seq(a)) return false;
    n = a->u.seq->n < b->u.seq->n ? a->u.seq->n : b->u.seq->n;
    for (i = 0; i < n; i++) {
        if (tfm__jv_eq(&a->u.seq->v[i], &b->u.seq->v[i])) continue;
        return tfm__jv_order(&a->u.seq->v[i], &b->u.seq->v[i], out);
    }
    *out = (a->u.seq->n > b->u.seq->n) - (a->u.seq->n < b->u.seq->n);
    return true;
}

TFM_PRIVATE const char *tfm__jtype_name(const tfm__jv *v) {
    static const char *const names[] = {"undefined", "NoneType", "bool", "int", "float", "str",
                                        "list", "tuple", "dict", "Namespace", "Macro",
                                        "function", "method", "LoopContext", "generator"};
    return names[v->type];
}

/* --- Python's str(), repr() and json.dumps --- */

/* Python repr() of a float: the shortest digits that read back exactly, positional for
   decimal exponents -4..15, else d.ddde+XX; "inf", "nan". */
TFM_PRIVATE void tfm__jfloat_repr(double f, char *out, size_t cap, bool json) {
    char e[TFM__CHAT_NUM_BYTES], digits[TFM__CHAT_NUM_BYTES];
    int prec, exp10, nd = 0, k;
    size_t i, o = 0;
    double back;
    if (f != f) { snprintf(out, cap, "%s", json ? "NaN" : "nan"); return; }
    if (f == HUGE_VAL || f == -HUGE_VAL) {
        snprintf(out, cap, "%s%s", f < 0 ? "-" : "", json ? "Infinity" : "inf");
        return;
    }
    for (prec = 1; prec <= TFM__CHAT_FLOAT_DIGITS; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, f);
        for (i = 0; e[i]; i++)
            if (e[i] != '-' && e[i] != '+' && e[i] != 'e' && (e[i] < '0' || e[i] > '9')) e[i] = '.';
        if (tfm__jstrtod(e, strlen(e), &back) && back == f) break;
    }
    for (i = 0; e[i] && e[i] != 'e'; i++)
        if (e[i] >= '0' && e[i] <= '9') digits[nd++] = e[i];
    exp10 = atoi(e + i + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (f < 0 || (f == 0 && 1.0 / f < 0)) out[o++] = '-';
    if (exp10 >= TFM__CHAT_REPR_FIXED_MIN && exp10 < TFM__CHAT_REPR_FIXED_MAX) {
        if (exp10 < 0) {
            out[o++] = '0'; out[o++] = '.';
            for (k = -1; k > exp10; k--) out[o++] = '0';
            for (k = 0; k < nd; k++) out[o++] = digits[k];
        } else {
            for (k = 0; k <= exp10; k++) out[o++] = k < nd ? digits[k] : '0';
            out[o++] = '.';
            if (nd <= exp10 + 1) out[o++] = '0';
            for (k = exp10 + 1; k < nd; k++) out[o++] = digits[k];
        }
        out[o] = '\0';
        return;
    }
    out[o++] = digits[0];
    if (nd > 1) {
        out[o++] = '.';
        for (k = 1; k < nd; k++) out[o++] = digits[k];
    }
    snprintf(out + o, cap - o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
}

/* Python repr() of a string: single quotes unless it holds ' and no ". */
TFM_PRIVATE bool tfm__jrepr_str(tfm__jbuf *b, const char *s, size_t n) {
    char q = '\'', esc[12];
    size_t i, len;
    bool ok;
    if (memchr(s, '\'', n) && !memchr(s, '"', n)) q = '"';
    ok = tfm__jbuf_putc(b, q);
    for (i = 0; ok && i < n; i += len) {
        uint32_t cp = tfm__jutf8(s + i, n - i, &len);
        if (cp == (uint32_t)q || cp == '\\') { esc[0] = '\\'; esc[1] = (char)cp; ok = tfm__jbuf_put(b, esc, 2); }
        else if (cp == '\n') ok = tfm__jbuf_puts(b, "\\n");
        else if (cp == '\r') ok = tfm__jbuf_puts(b, "\\r");
        else if (cp == '\t') ok = tfm__jbuf_puts(b, "\\t");
        else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
            snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp);
            ok = tfm__jbuf_puts(b, esc);
        } else if (cp == 0x2028 || cp == 0x2029) {
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
            ok = tfm__jbuf_puts(b, esc);
        } else {
            ok = tfm__jbuf_put(b, s + i, len);
        }
    }
    return ok && tfm__jbuf_putc(b, q);
}

TFM_PRIVATE bool tfm__jv_write(tfm__jx *x, tfm__jbuf *b, const tfm__jv *v, bool repr);

/* repr of list / tuple / dict items. */
TFM_PRIVATE bool tfm__jv_write_seq(tfm__jx *x, tfm__jbuf *b, const tfm__jv *v) {
    const tfm__jseq *s = v->u.seq;
    bool dict = v->type == TFM__JV_DICT || v->type == TFM__JV_NS;
    size_t i;
    bool ok = tfm__jbuf_puts(b, v->type == TFM__JV_NS ? "<Namespace {" : dict ? "{" :
                                v->type == TFM__JV_LIST ? "[" : "(");
    for (i = 0; ok && i < s->n; i += dict ? 2 : 1) {
        if (i) ok = tfm__jbuf_puts(b, ", ");
        ok = ok && tfm__jv_write(x, b, &s->v[i], true);
        if (dict) ok = ok && tfm__jbuf_puts(b, ": ") && tfm__jv_write(x, b, &s->v[i + 1], true);
    }
    if (ok && v->type == TFM__JV_TUPLE && s->n == 1) ok = tfm__jbuf_putc(b, ',');
    return ok && tfm__jbuf_puts(b, v->type == TFM__JV_NS ? "}>" : dict ? "}" :
                                v->type == TFM__JV_LIST ? "]" : ")");
}

/* Python str(v) (repr false) or repr(v) appended to b. */
TFM_PRIVATE bool tfm__jv_write(tfm__jx *x, tfm__jbuf *b, const tfm__jv *v, bool repr) {
    char num[TFM__CHAT_NUM_BYTES];
    bool ok = true;
    switch (v->type) {
    case TFM__JV_UNDEF: if (repr) ok = tfm__jbuf_puts(b, "Undefined"); break;
    case TFM__JV_NONE: ok = tfm__jbuf_puts(b, "None"); break;
    case TFM__JV_BOOL: ok = tfm__jbuf_puts(b, v->u.i ? "True" : "False"); break;
    case TFM__JV_INT:
        snprintf(num, sizeof num, "%lld", (long long)v->u.i);
        ok = tfm__jbuf_puts(b, num);
        break;
    case TFM__JV_FLOAT:
        tfm__jfloat_repr(v->u.f, num, sizeof num, false);
        ok = tfm__jbuf_puts(b, num);
        break;
    case TFM__JV_STR: ok = repr ? tfm__jrepr_str(b, v->u.s, v->n) : tfm__jbuf_put(b, v->u.s, v->n); break;
    case TFM__JV_LIST: case TFM__JV_TUPLE: case TFM__JV_DICT: case TFM__JV_NS:
        if (++x->c.depth > TFM__CHAT_MAX_DEPTH) return tfm__jfail(&x->c, TFM__JNOPOS, "value nested too deeply");
        ok = tfm__jv_write_seq(x, b, v);
        x->c.depth--;
        break;
    case TFM__JV_MACRO: ok = tfm__jbuf_puts(b, "<Macro>"); break;
    case TFM__JV_GEN: ok = tfm__jbuf_puts(b, "<generator object>"); break;
    case TFM__JV_LOOP: {
        const tfm__jloop *l = TFM__CAST(const tfm__jloop *, v->u.p);
        snprintf(num, sizeof num, "<LoopContext %zu/%zu>", l->index0 + 1, l->items->n);
        ok = tfm__jbuf_puts(b, num);
        break;
    }
    default: ok = tfm__jbuf_puts(b, "<function>"); break;
    }
    return ok || tfm__jfail_mem(&x->c);
}

/* str(v) as a string value (strings themselves are returned as they are). */
TFM_PRIVATE bool tfm__jv_to_str(tfm__jx *x, const tfm__jv *v, tfm__jv *out) {
    tfm__jbuf b;
    if (v->type == TFM__JV_STR) { *out = *v; return true; }
    tfm__jbuf_init(&b, x->c.arena);
    if (!tfm__jv_write(x, &b, v, false)) return false;
    *out = tfm__jv_s(b.p ? b.p : "", b.n);
    return true;
}

typedef struct tfm__jjson {             /* json.dumps options */
    int indent;                         /* -1: none */
    const tfm__jv *item_sep, *key_sep;  /* NULL: ", " / "," with indent, and ": " */
    bool sort_keys, ensure_ascii;
} tfm__jjson;

/* A JSON string literal as Python's json.dumps writes it. */
TFM_PRIVATE bool tfm__jjson_str(tfm__jbuf *b, const char *s, size_t n, bool ascii) {
    char esc[16];
    size_t i, len;
    bool ok = tfm__jbuf_putc(b, '"');
    for (i = 0; ok && i < n; i += len) {
        uint32_t cp = tfm__jutf8(s + i, n - i, &len);
        const char *e = cp == '"' ? "\\\"" : cp == '\\' ? "\\\\" : cp == '\n' ? "\\n" : cp == '\r' ? "\\r" :
                        cp == '\t' ? "\\t" : cp == '\b' ? "\\b" : cp == '\f' ? "\\f" : NULL;
        if (e) ok = tfm__jbuf_puts(b, e);
        else if (cp < 0x20 || (ascii && cp >= 0x80 && cp < 0x10000)) {
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
            ok = tfm__jbuf_puts(b, esc);
        } else if (ascii && cp >= 0x10000) {
            snprintf(esc, sizeof esc, "\\u%04x\\u%04x", (unsigned)(0xD800 + ((cp - 0x10000) >> 10)),
                     (unsigned)(0xDC00 + ((cp - 0x10000) & 0x3FF)));
            ok = tfm__jbuf_puts(b, esc);
        } else {
            ok = tfm__jbuf_put(b, s + i, len);
        }
    }
    return ok && tfm__jbuf_putc(b, '"');
}

TFM_PRIVATE bool tfm__jjson_write(tfm__jx *x, tfm__jbuf *b, const tfm__jv *v, const tfm__jjson *o, int level);

/* Newline and indent before an item (with an indent), else nothing. */
TFM_PRIVATE bool tfm__jjson_nl(tfm__jbuf *b, const tfm__jjson *o, int level) {
    int i;
    if (o->indent < 0) return true;
    if (!tfm__jbuf_putc(b, '\n')) return false;
    for (i = 0; i < o->indent * level; i++)
        if (!tfm__jbuf_putc(b, ' ')) return false;
    return true;
}

/* Keys of a dict in output order (sort_keys: by key, strings only). */
TFM_PRIVATE bool tfm__jjson_order(tfm__jx *x, const tfm__jseq *s, bool sort, size_t **out) {
    size_t n = s->n / 2, i, j, t;
    int c;
    *out = TFM__CAST(size_t *, tfm__jalloc(&x->c, (n ? n : 1) * sizeof(size_t)));
    if (!*out) return false;
    for (i = 0; i < n; i++) (*out)[i] = 2 * i;
    for (i = 1; sort && i < n; i++) /* insertion sort: stable, dicts in templates are small */
        for (j = i; j > 0; j--) {
            if (!tfm__jv_order(&s->v[(*out)[j - 1]], &s->v[(*out)[j]], &c))
                return tfm__jfail(&x->c, TFM__JNOPOS, "tojson: sort_keys needs comparable keys");
            if (c <= 0 || !tfm__jx_step(x, TFM__JNOPOS)) break;
            t = (*out)[j]; (*out)[j] = (*out)[j - 1]; (*out)[j - 1] = t;
        }
    return x->c.result == TFM_OK;
}

/* A list or dict as JSON. */
TFM_PRIVATE bool tfm__jjson_seq(tfm__jx *x, tfm__jbuf *b, const tfm__jv *v, const tfm__jjson *o, int level) {
    const tfm__jseq *s = v->u.seq;
    bool dict = v->type == TFM__JV_DICT, ok;
    size_t i, n = dict ? s->n / 2 : s->n, *order = NULL;
    const char *isep = o->indent >= 0 ? "," : ", ";
    if (n == 0) return tfm__jbuf_puts(b, dict ? "{}" : "[]") || tfm__jfail_mem(&x->c);
    if (dict && !tfm__jjson_order(x, s, o->sort_keys, &order)) return false;
    ok = tfm__jbuf_putc(b, dict ? '{' : '[');
    for (i = 0; ok && i < n; i++) {
        const tfm__jv *item = dict ? &s->v[order[i]] : &s->v[i];
        if (i) ok = o->item_sep ? tfm__jbuf_put(b, o->item_sep->u.s, o->item_sep->n) : tfm__jbuf_puts(b, isep);
        ok = ok && tfm__jjson_nl(b, o, level + 1);
        if (ok && dict) {
            tfm__jv key = *item;
            char num[TFM__CHAT_NUM_BYTES];
            if (key.type == TFM__JV_STR) ok = tfm__jjson_str(b, key.u.s, key.n, o->ensure_ascii);
            else if (key.type == TFM__JV_INT) { snprintf(num, sizeof num, "\"%lld\"", (long long)key.u.i); ok = tfm__jbuf_puts(b, num); }
            else return tfm__jfail(&x->c, TFM__JNOPOS, "tojson: keys must be str or int, not %s", tfm__jtype_name(&key));
            ok = ok && (o->key_sep ? tfm__jbuf_put(b, o->key_sep->u.s, o->key_sep->n) : tfm__jbuf_puts(b, ": "));
            item++;
        }
        ok = ok && tfm__jjson_write(x, b, item, o, level + 1);
    }
    ok = ok && (n == 0 || tfm__jjson_nl(b, o, level)) && tfm__jbuf_putc(b, dict ? '}' : ']');
    return ok || tfm__jfail_mem(&x->c);
}

/* json.dumps(v) with transformers' options (ensure_ascii false by default). */
TFM_PRIVATE bool tfm__jjson_write(tfm__jx *x, tfm__jbuf *b, const tfm__jv *v, const tfm__jjson *o, int level) {
    char num[TFM__CHAT_NUM_BYTES];
    bool ok;
    if (level > TFM__CHAT_MAX_DEPTH) return tfm__jfail(&x->c, TFM__JNOPOS, "tojson: value nested too deeply");
    if (!tfm__jx_step(x, TFM__JNOPOS)) return false;
    switch (v->type) {
    case TFM__JV_NONE: ok = tfm__jbuf_puts(b, "null"); break;
    case TFM__JV_BOOL: ok = tfm__jbuf_puts(b, v->u.i ? "true" : "false"); break;
    case TFM__JV_INT:
        snprintf(num, sizeof num, "%lld", (long long)v->u.i);
        ok = tfm__jbuf_puts(b, num);
        break;
    case TFM__JV_FLOAT:
        tfm__jfloat_repr(v->u.f, num, sizeof num, true);
        ok = tfm__jbuf_puts(b, num);
        break;
    case TFM__JV_STR: ok = tfm__jjson_str(b, v->u.s, v->n, o->ensure_ascii); break;
    case TFM__JV_LIST: case TFM__JV_TUPLE: case TFM__JV_DICT: return tfm__jjson_seq(x, b, v, o, level);
    default:
        return tfm__jfail(&x->c, TFM__JNOPOS, "tojson: object of type %s is not JSON serializable",
                          v->type == TFM__JV_UNDEF ? "Undefined" : tfm__jtype_name(v));
    }
    return ok || tfm__jfail_mem(&x->c);
}

/* --- frames: names to values, searched innermost first --- */

TFM_PRIVATE tfm__jframe *tfm__jframe_new(tfm__jx *x, tfm__jframe *parent) {
    tfm__jframe *f = TFM__CAST(tfm__jframe *, tfm__jalloc(&x->c, sizeof(tfm__jframe)));
    if (!f) return NULL;
    memset(f, 0, sizeof *f);
    f->parent = parent;
    return f;
}

/* The value slot of key in a dict / namespace / frame (pairs), or NULL. */
TFM_PRIVATE tfm__jv *tfm__jpairs_find(const tfm__jseq *s, const tfm__jv *key) {
    size_t i;
    for (i = 0; i < s->n; i += 2)
        if (tfm__jv_eq(&s->v[i], key)) return &s->v[i + 1];
    return NULL;
}

TFM_PRIVATE tfm__jv *tfm__jpairs_find_str(const tfm__jseq *s, const char *name, size_t n) {
    tfm__jv key = tfm__jv_s(name, n);
    return tfm__jpairs_find(s, &key);
}

/* Sets key to v in pairs (replacing, or appending in insertion order). */
TFM_PRIVATE bool tfm__jpairs_set(tfm__jx *x, tfm__jseq *s, const tfm__jv *key, const tfm__jv *v) {
    tfm__jv *slot = tfm__jpairs_find(s, key);
    if (slot) { *slot = *v; return true; }
    return tfm__jseq_push(x, s, key) && tfm__jseq_push(x, s, v);
}

TFM_PRIVATE bool tfm__jframe_set(tfm__jx *x, tfm__jframe *f, const char *name, size_t n, const tfm__jv *v) {
    tfm__jv key = tfm__jv_s(name, n);
    return tfm__jpairs_set(x, &f->vars, &key, v);
}

/* A name's value, innermost frame first; Undefined (with the name) when none has it. */
TFM_PRIVATE tfm__jv tfm__jframe_get(const tfm__jframe *f, const char *name, size_t n) {
    for (; f; f = f->parent) {
        const tfm__jv *v = tfm__jpairs_find_str(&f->vars, name, n);
        if (v) return *v;
    }
    return tfm__jv_undef(name, n);
}

/* "'x' is undefined" for an Undefined used where a value is needed. */
TFM_PRIVATE bool tfm__jundefined(tfm__jx *x, size_t pos, const tfm__jv *v) {
    if (v->n) return tfm__jfail(&x->c, pos, "'%.*s' is undefined", (int)v->n, v->u.s);
    return tfm__jfail(&x->c, pos, "a value is undefined");
}

/* --- attributes, items and slices (jinja2's getattr / getitem) --- */

enum { /* methods of str, dict and loop */
    TFM__JM_STRIP = 0, TFM__JM_LSTRIP, TFM__JM_RSTRIP, TFM__JM_SPLIT, TFM__JM_RSPLIT,
    TFM__JM_STARTSWITH, TFM__JM_ENDSWITH, TFM__JM_REPLACE, TFM__JM_UPPER, TFM__JM_LOWER,
    TFM__JM_TITLE, TFM__JM_CAPITALIZE, TFM__JM_FIND, TFM__JM_COUNT, TFM__JM_JOIN,
    TFM__JM_N_STR_,
    TFM__JM_ITEMS = TFM__JM_N_STR_, TFM__JM_KEYS, TFM__JM_VALUES, TFM__JM_GET, TFM__JM_N_DICT_,
    TFM__JM_CYCLE = TFM__JM_N_DICT_
};
static const char *const tfm__jmethod_names[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "replace", "upper",
    "lower", "title", "capitalize", "find", "count", "join", "items", "keys", "values", "get"};

enum { /* global functions */
    TFM__JG_RANGE = 0, TFM__JG_NAMESPACE, TFM__JG_DICT, TFM__JG_RAISE, TFM__JG_STRFTIME
};

/* A method bound to a copy of self. */
TFM_PRIVATE bool tfm__jv_method(tfm__jx *x, const tfm__jv *self, int fn, tfm__jv *out) {
    tfm__jv *copy = TFM__CAST(tfm__jv *, tfm__jalloc(&x->c, sizeof(tfm__jv)));
    if (!copy) return false;
    *copy = *self;
    *out = tfm__jv_make(TFM__JV_METHOD);
    out->fn = fn;
    out->u.p = copy;
    return true;
}

/* loop.index, loop.first, ... of one iteration. */
TFM_PRIVATE bool tfm__jloop_attr(tfm__jx *x, const tfm__jv *obj, const char *s, size_t n, tfm__jv *out) {
    const tfm__jloop *l = TFM__CAST(const tfm__jloop *, obj->u.p);
    int64_t i0 = (int64_t)l->index0, len = (int64_t)l->items->n;
    if (tfm__jeq_str(s, n, "index")) *out = tfm__jv_int(i0 + 1);
    else if (tfm__jeq_str(s, n, "index0")) *out = tfm__jv_int(i0);
    else if (tfm__jeq_str(s, n, "revindex")) *out = tfm__jv_int(len - i0);
    else if (tfm__jeq_str(s, n, "revindex0")) *out = tfm__jv_int(len - i0 - 1);
    else if (tfm__jeq_str(s, n, "first")) *out = tfm__jv_bool(i0 == 0);
    else if (tfm__jeq_str(s, n, "last")) *out = tfm__jv_bool(i0 == len - 1);
    else if (tfm__jeq_str(s, n, "length")) *out = tfm__jv_int(len);
    else if (tfm__jeq_str(s, n, "depth")) *out = tfm__jv_int(1);
    else if (tfm__jeq_str(s, n, "depth0")) *out = tfm__jv_int(0);
    else if (tfm__jeq_str(s, n, "previtem"))
        *out = i0 > 0 ? l->items->v[i0 - 1] : tfm__jv_undef(s, n);
    else if (tfm__jeq_str(s, n, "nextitem"))
        *out = i0 + 1 < len ? l->items->v[i0 + 1] : tfm__jv_undef(s, n);
    else if (tfm__jeq_str(s, n, "cycle")) return tfm__jv_method(x, obj, TFM__JM_CYCLE, out);
    else *out = tfm__jv_undef(s, n);
    return true;
}

/* obj.name: a method of str / dict, a dict key, a namespace attribute, a loop attribute;
   Undefined otherwise. An Undefined obj is an error. */
TFM_PRIVATE bool tfm__jx_getattr(tfm__jx *x, size_t pos, const tfm__jv *obj, const char *s, size_t n,
                                 tfm__jv *out) {
    int m = tfm__jlookup(tfm__jmethod_names, TFM__JM_N_DICT_, s, n);
    const tfm__jv *hit;
    if (obj->type == TFM__JV_UNDEF) return tfm__jundefined(x, pos, obj);
    if (obj->type == TFM__JV_STR && m >= 0 && m < TFM__JM_N_STR_) return tfm__jv_method(x, obj, m, out);
    if (obj->type == TFM__JV_DICT && m >= TFM__JM_N_STR_) return tfm__jv_method(x, obj, m, out);
    if (obj->type == TFM__JV_LOOP) return tfm__jloop_attr(x, obj, s, n, out);
    if ((obj->type == TFM__JV_DICT || obj->type == TFM__JV_NS) &&
        (hit = tfm__jpairs_find_str(obj->u.seq, s, n)) != NULL) {
        *out = *hit;
        return true;
    }
    *out = tfm__jv_undef(s, n);
    return true;
}

/* Python's slice.indices: clamps start / stop for a length and a step. */
TFM_PRIVATE void tfm__jslice_adjust(int64_t len, int64_t step, const tfm__jv *a, const tfm__jv *b,
                                    int64_t *start, int64_t *stop) {
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? len - 1 : len;
    *start = step < 0 ? hi : lo;
    *stop = step < 0 ? lo : hi;
    if (a->type == TFM__JV_INT || a->type == TFM__JV_BOOL) {
        *start = a->u.i < 0 ? a->u.i + len : a->u.i;
        if (*start < lo) *start = lo;
        if (*start > hi) *start = hi;
    }
    if (b->type == TFM__JV_INT || b->type == TFM__JV_BOOL) {
        *stop = b->u.i < 0 ? b->u.i + len : b->u.i;
        if (*stop < lo) *stop = lo;
        if (*stop > hi) *stop = hi;
    }
}

/* seq[a:b:c] for a list, tuple or string (code points); None bounds are open. */
TFM_PRIVATE bool tfm__jx_slice(tfm__jx *x, size_t pos, const tfm__jv *obj, const tfm__jv *a,
                               const tfm__jv *b, const tfm__jv *c, tfm__jv *out) {
    int64_t step = 1, start, stop, i, len;
    const tfm__jv *bound[3];
    int k;
    bound[0] = a; bound[1] = b; bound[2] = c;
    for (k = 0; k < 3; k++)
        if (bound[k]->type != TFM__JV_NONE && bound[k]->type != TFM__JV_INT && bound[k]->type != TFM__JV_BOOL)
            return tfm__jfail(&x->c, pos, "slice indices must be integers or None");
    if (c->type != TFM__JV_NONE) step = c->u.i;
    if (step == 0) return tfm__jfail(&x->c, pos, "slice step cannot be zero");
    if (obj->type == TFM__JV_STR) {
        tfm__jbuf buf;
        len = (int64_t)tfm__jcp_count(obj->u.s, obj->n);
        tfm__jslice_adjust(len, step, a, b, &start, &stop);
        tfm__jbuf_init(&buf, x->c.arena);
        for (i = start; step > 0 ? i < stop : i > stop; i += step) {
            size_t at = tfm__jcp_offset(obj->u.s, obj->n, (size_t)i), l;
            tfm__jutf8(obj->u.s + at, obj->n - at, &l);
            if (!tfm__jx_step(x, pos)) return false;
            if (!tfm__jbuf_put(&buf, obj->u.s + at, l)) return tfm__jfail_mem(&x->c);
        }
        *out = tfm__jv_s(buf.p ? buf.p : "", buf.n);
        return true;
    }
    if (!tfm__jv_is_seq(obj)) {
        if (obj->type == TFM__JV_UNDEF) return tfm__jundefined(x, pos, obj);
        *out = tfm__jv_undef(NULL, 0);
        return true;
    }
    len = (int64_t)obj->u.seq->n;
    tfm__jslice_adjust(len, step, a, b, &start, &stop);
    if (!tfm__jv_seq(x, obj->type, 0, out)) return false;
    for (i = start; step > 0 ? i < stop : i > stop; i += step)
        if (!tfm__jx_step(x, pos) || !tfm__jseq_push(x, out->u.seq, &obj->u.seq->v[i])) return false;
    return true;
}

/* obj[key]: list / tuple / str by (negative) int, dict by key, then attribute by name;
   Undefined when missing. */
TFM_PRIVATE bool tfm__jx_getitem(tfm__jx *x, size_t pos, const tfm__jv *obj, const tfm__jv *key, tfm__jv *out) {
    bool int_key = key->type == TFM__JV_INT || key->type == TFM__JV_BOOL;
    const tfm__jv *hit;
    if (obj->type == TFM__JV_UNDEF) return tfm__jundefined(x, pos, obj);
    if (int_key && (tfm__jv_is_seq(obj) || obj->type == TFM__JV_STR)) {
        int64_t len = obj->type == TFM__JV_STR ? (int64_t)tfm__jcp_count(obj->u.s, obj->n)
                                               : (int64_t)obj->u.seq->n;
        int64_t i = key->u.i < 0 ? key->u.i + len : key->u.i;
        *out = tfm__jv_undef(NULL, 0);
        if (i < 0 || i >= len) return true;
        if (obj->type != TFM__JV_STR) {
            *out = obj->u.seq->v[i];
        } else {
            size_t at = tfm__jcp_offset(obj->u.s, obj->n, (size_t)i), l;
            tfm__jutf8(obj->u.s + at, obj->n - at, &l);
            *out = tfm__jv_s(obj->u.s + at, l);
        }
        return true;
    }
    if (obj->type == TFM__JV_DICT && (hit = tfm__jpairs_find(obj->u.seq, key)) != NULL) {
        *out = *hit;
        return true;
    }
    if (key->type == TFM__JV_STR) return tfm__jx_getattr(x, pos, obj, key->u.s, key->n, out);
    *out = tfm__jv_undef(NULL, 0);
    return true;
}

/* --- call arguments --- */

typedef struct tfm__jargs {
    tfm__jv *v;                         /* positional values, then keyword values */
    const tfm__jnode **kw;              /* [n_kw] the KWARG nodes (their names) */
    size_t n_pos, n_kw, pos;            /* counts, and the call's position for errors */
} tfm__jargs;

#define TFM__JMAX_PARAMS 6

/* Matches args to params (NULL-terminated names): out[i] is the argument for params[i] or
   NULL. Too many positional arguments, or an unknown or repeated keyword, is an error. */
TFM_PRIVATE bool tfm__jbind(tfm__jx *x, const tfm__jargs *a, const char *const *params,
                            const char *what, const tfm__jv **out) {
    size_t i, k, n_params = 0;
    while (params[n_params]) out[n_params] = NULL, n_params++;
    if (a->n_pos > n_params)
        return tfm__jfail(&x->c, a->pos, "%s takes at most %zu argument(s), %zu given", what,
                          n_params, a->n_pos);
    for (i = 0; i < a->n_pos; i++) out[i] = &a->v[i];
    for (i = 0; i < a->n_kw; i++) {
        const tfm__jv *name = &a->kw[i]->value;
        for (k = 0; k < n_params && !tfm__jeq_str(name->u.s, name->n, params[k]); k++) {}
        if (k == n_params || out[k])
            return tfm__jfail(&x->c, a->kw[i]->pos, "%s: %s keyword argument '%.*s'", what,
                              k == n_params ? "unexpected" : "repeated", (int)name->n, name->u.s);
        out[k] = &a->v[a->n_pos + i];
    }
    return true;
}

/* An int argument (bool counts), or def when absent. */
TFM_PRIVATE bool tfm__jarg_int(tfm__jx *x, size_t pos, const tfm__jv *v, int64_t def, int64_t *out) {
    if (!v || v->type == TFM__JV_NONE) { *out = def; return true; }
    if (v->type != TFM__JV_INT && v->type != TFM__JV_BOOL)
        return tfm__jfail(&x->c, pos, "expected an integer, not %s", tfm__jtype_name(v));
    *out = v->u.i;
    return true;
}

/* A string argument (None or absent: *out untouched, returns false in *given). */
TFM_PRIVATE bool tfm__jarg_str(tfm__jx *x, size_t pos, const tfm__jv *v, bool *given) {
    *given = v && v->type != TFM__JV_NONE;
    if (*given && v->type != TFM__JV_STR)
        return tfm__jfail(&x->c, pos, "expected a string, not %s", tfm__jtype_name(v));
    return true;
}

/* --- str methods, as Python's --- */

/* Is code point cp in the set of code points of chars? */
TFM_PRIVATE bool tfm__jin_set(uint32_t cp, const tfm__jv *chars) {
    size_t i, len;
    for (i = 0; i < chars->n; i += len)
        if (tfm__jutf8(chars->u.s + i, chars->n - i, &len) == cp) return true;
    return false;
}

/* s.strip(chars) / lstrip / rstrip: chars NULL strips whitespace. */
TFM_PRIVATE tfm__jv tfm__jstrip(const tfm__jv *s, const tfm__jv *chars, bool left, bool right) {
    size_t start = 0, end = s->n, i, len, keep_end;
    while (left && start < end) {
        uint32_t cp = tfm__jutf8(s->u.s + start, end - start, &len);
        if (chars ? !tfm__jin_set(cp, chars) : !tfm__jspace(cp)) break;
        start += len;
    }
    if (right) {
        for (i = start, keep_end = start; i < end; i += len) {
            uint32_t cp = tfm__jutf8(s->u.s + i, end - i, &len);
            if (chars ? !tfm__jin_set(cp, chars) : !tfm__jspace(cp)) keep_end = i + len;
        }
        end = keep_end;
    }
    return tfm__jv_s(s->u.s + start, end - start);
}

/* Byte offset of needle in hay at or after from (0-length needles match at from); n when none. */
TFM_PRIVATE size_t tfm__jfind(const char *hay, size_t n, const char *needle, size_t k, size_t from) {
    size_t i;
    if (k == 0) return from;
    for (i = from; i + k <= n; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, k) == 0) return i;
    return n;
}

/* s.split(sep, maxsplit): sep None splits on whitespace runs and drops empty parts. */
TFM_PRIVATE bool tfm__jsplit(tfm__jx *x, size_t pos, const tfm__jv *s, const tfm__jv *sep, int64_t maxsplit,
                             tfm__jv *out) {
    size_t i = 0, at, len;
    tfm__jv part;
    if (!tfm__jv_seq(x, TFM__JV_LIST, 0, out)) return false;
    if (sep && sep->n == 0) return tfm__jfail(&x->c, pos, "split: empty separator");
    while (i <= s->n) {
        if (!tfm__jx_step(x, pos)) return false;
        if (!sep) {
            i += tfm__jspace_run(s->u.s + i, s->n - i, false);
            if (i == s->n) break;
            if (maxsplit >= 0 && (int64_t)out->u.seq->n >= maxsplit) {
                part = tfm__jv_s(s->u.s + i, s->n - i); /* the rest keeps its trailing spaces */
                return tfm__jseq_push(x, out->u.seq, &part);
            }
            for (at = i; at < s->n && !tfm__jspace(tfm__jutf8(s->u.s + at, s->n - at, &len)); at += len) {}
        } else {
            at = maxsplit >= 0 && (int64_t)out->u.seq->n >= maxsplit ? s->n
                 : tfm__jfind(s->u.s, s->n, sep->u.s, sep->n, i);
        }
        part = tfm__jv_s(s->u.s + i, at - i);
        if (!tfm__jseq_push(x, out->u.seq, &part)) return false;
        if (at == s->n) break;
        i = at + (sep ? sep->n : 0);
        if (sep && i == s->n) { /* a separator at the end leaves an empty last part */
            part = tfm__jv_s(s->u.s + i, 0);
            return tfm__jseq_push(x, out->u.seq, &part);
        }
    }
    return true;
}

/* s.rsplit(sep, maxsplit): as split, from the right (sep given). */
TFM_PRIVATE bool tfm__jrsplit(tfm__jx *x, size_t pos, const tfm__jv *s, const tfm__jv *sep, int64_t maxsplit,
                              tfm__jv *out) {
    size_t end = s->n, i, k, splits = 0;
    tfm__jv part, t;
    if (!sep || maxsplit < 0) return tfm__jsplit(x, pos, s, sep, maxsplit, out);
    if (sep->n == 0) return tfm__jfail(&x->c, pos, "rsplit: empty separator");
    if (!tfm__jv_seq(x, TFM__JV_LIST, 0, out)) return false;
    for (i = s->n; i >= sep->n && (int64_t)splits < maxsplit;) {
        if (memcmp(s->u.s + i - sep->n, sep->u.s, sep->n) == 0) {
            part = tfm__jv_s(s->u.s + i, end - i);
            if (!tfm__jseq_push(x, out->u.seq, &part)) return false;
            i -= sep->n;
            end = i;
            splits++;
        } else {
            i--;
        }
    }
    part = tfm__jv_s(s->u.s, end);
    if (!tfm__jseq_push(x, out->u.seq, &part)) return false;
    for (k = 0; k < out->u.seq->n / 2; k++) { /* collected right to left */
        t = out->u.seq->v[k];
        out->u.seq->v[k] = out->u.seq->v[out->u.seq->n - 1 - k];
        out->u.seq->v[out->u.seq->n - 1 - k] = t;
    }
    return true;
}

/* s.replace(old, new, count): an empty old inserts new around every code point. */
TFM_PRIVATE bool tfm__jreplace(tfm__jx *x, size_t pos, const tfm__jv *s, const tfm__jv *old,
                               const tfm__jv *rep, int64_t count, tfm__jv *out) {
    tfm__jbuf b;
    size_t i = 0, at, len;
    int64_t done = 0;
    tfm__jbuf_init(&b, x->c.arena);
    for (;;) {
        if (!tfm__jx_step(x, pos)) return false;
        at = (count >= 0 && done >= count) ? s->n : tfm__jfind(s->u.s, s->n, old->u.s, old->n, i);
        if (at >= s->n && !(old->n == 0 && at == s->n && (count < 0 || done < count) && i == s->n)) {
            if (!tfm__jbuf_put(&b, s->u.s + i, s->n - i)) return tfm__jfail_mem(&x->c);
            break;
        }
        if (!tfm__jbuf_put(&b, s->u.s + i, at - i) || !tfm__jbuf_put(&b, rep->u.s, rep->n))
            return tfm__jfail_mem(&x->c);
        done++;
        if (old->n) {
            i = at + old->n;
        } else {
            if (at == s->n) break;
            tfm__jutf8(s->u.s + at, s->n - at, &len);
            if (!tfm__jbuf_put(&b, s->u.s + at, len)) return tfm__jfail_mem(&x->c);
            i = at + len;
        }
    }
    *out = tfm__jv_s(b.p ? b.p : "", b.n);
    return true;
}

enum { TFM__JCASE_UPPER = 0, TFM__JCASE_LOWER, TFM__JCASE_CAPITALIZE, TFM__JCASE_TITLE_METHOD,
       TFM__JCASE_TITLE_FILTER };

TFM_PRIVATE char tfm__jupper(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 32) : c; }
TFM_PRIVATE char tfm__jlower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }
TFM_PRIVATE bool tfm__jalpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Case changes of ASCII letters: upper, lower, capitalize, str.title (a letter after a
   non-letter starts a word) and the title filter (words start after - ( { [ < or space). */
TFM_PRIVATE bool tfm__jcase(tfm__jx *x, const tfm__jv *s, int mode, tfm__jv *out) {
    char *p = TFM__CAST(char *, tfm__jalloc(&x->c, s->n ? s->n : 1));
    size_t i;
    bool start = true;
    if (!p) return false;
    for (i = 0; i < s->n; i++) {
        char c = s->u.s[i];
        unsigned char u = (unsigned char)c;
        if (mode == TFM__JCASE_UPPER) p[i] = tfm__jupper(c);
        else if (mode == TFM__JCASE_LOWER) p[i] = tfm__jlower(c);
        else if (mode == TFM__JCASE_CAPITALIZE) p[i] = i == 0 ? tfm__jupper(c) : tfm__jlower(c);
        else if (mode == TFM__JCASE_TITLE_METHOD) {
            p[i] = start ? tfm__jupper(c) : tfm__jlower(c);
            start = !tfm__jalpha(c) && u < 0x80;
        } else {
            p[i] = start ? tfm__jupper(c) : tfm__jlower(c);
            start = strchr("-({[< \t\n\r\f\v", c) != NULL && c != '\0';
        }
    }
    *out = tfm__jv_s(p, s->n);
    return true;
}

/* s.startswith(prefix or tuple of prefixes) / endswith. */
TFM_PRIVATE bool tfm__jaffix(tfm__jx *x, size_t pos, const tfm__jv *s, const tfm__jv *arg, bool end,
                             tfm__jv *out) {
    size_t i, n = tfm__jv_is_seq(arg) ? arg->u.seq->n : 1;
    for (i = 0; i < n; i++) {
        const tfm__jv *a = tfm__jv_is_seq(arg) ? &arg->u.seq->v[i] : arg;
        if (a->type != TFM__JV_STR)
            return tfm__jfail(&x->c, pos, "%s: expected a string or a tuple of strings",
                              end ? "endswith" : "startswith");
        if (a->n <= s->n && memcmp(s->u.s + (end ? s->n - a->n : 0), a->u.s, a->n) == 0) {
            *out = tfm__jv_bool(true);
            return true;
        }
    }
    *out = tfm__jv_bool(false);
    return true;
}

/* sep.join(items): every item must be a string. */
TFM_PRIVATE bool tfm__jjoin(tfm__jx *x, size_t pos, const tfm__jv *sep, const tfm__jseq *items,
                            bool convert, tfm__jv *out) {
    tfm__jbuf b;
    tfm__jv s;
    size_t i;
    tfm__jbuf_init(&b, x->c.arena);
    for (i = 0; i < items->n; i++) {
        if (!tfm__jx_step(x, pos)) return false;
        if (items->v[i].type != TFM__JV_STR && !convert)
            return tfm__jfail(&x->c, pos, "join: item %zu is %s, not a string", i, tfm__jtype_name(&items->v[i]));
        if (!tfm__jv_to_str(x, &items->v[i], &s)) return false;
        if ((i && !tfm__jbuf_put(&b, sep->u.s, sep->n)) || !tfm__jbuf_put(&b, s.u.s, s.n))
            return tfm__jfail_mem(&x->c);
    }
    *out = tfm__jv_s(b.p ? b.p : "", b.n);
    return true;
}

/* escape: & < > " ' as HTML entities (markupsafe); the result is Markup, and Markup is
   returned as it is. */
TFM_PRIVATE bool tfm__jescape(tfm__jx *x, const tfm__jv *s, tfm__jv *out) {
    tfm__jbuf b;
    size_t i;
    bool ok = true;
    if (s->fn & TFM__JV_MARKUP) { *out = *s; return true; }
    tfm__jbuf_init(&b, x->c.arena);
    for (i = 0; ok && i < s->n; i++) {
        char c = s->u.s[i];
        ok = c == '&' ? tfm__jbuf_puts(&b, "&amp;") : c == '<' ? tfm__jbuf_puts(&b, "&lt;") :
             c == '>' ? tfm__jbuf_puts(&b, "&gt;") : c == '"' ? tfm__jbuf_puts(&b, "&#34;") :
             c == '\'' ? tfm__jbuf_puts(&b, "&#39;") : tfm__jbuf_putc(&b, c);
    }
    if (!ok) return tfm__jfail_mem(&x->c);
    *out = tfm__jv_s(b.p ? b.p : "", b.n);
    out->fn = TFM__JV_MARKUP;
    return true;
}

/* fmt % args with %s, %r, %d, %i and %%. */
TFM_PRIVATE bool tfm__jpercent(tfm__jx *x, size_t pos, const tfm__jv *fmt, const tfm__jv *args, tfm__jv *out) {
    tfm__jbuf b;
    size_t i, used = 0, n_args = args->type == TFM__JV_TUPLE ? args->u.seq->n : 1;
    tfm__jbuf_init(&b, x->c.arena);
    for (i = 0; i < fmt->n; i++) {
        const tfm__jv *a;
        char c = i + 1 < fmt->n ? fmt->u.s[i + 1] : '\0';
        bool ok;
        if (fmt->u.s[i] != '%') { if (!tfm__jbuf_putc(&b, fmt->u.s[i])) return tfm__jfail_mem(&x->c); continue; }
        i++;
        if (c == '%') { if (!tfm__jbuf_putc(&b, '%')) return tfm__jfail_mem(&x->c); continue; }
        if (c != 's' && c != 'r' && c != 'd' && c != 'i')
            return tfm__jfail(&x->c, pos, "format: only %%s, %%r, %%d and %%i are supported");
        if (used >= n_args) return tfm__jfail(&x->c, pos, "not enough arguments for format string");
        a = args->type == TFM__JV_TUPLE ? &args->u.seq->v[used] : args;
        used++;
        if ((c == 'd' || c == 'i') && !tfm__jv_is_num(a))
            return tfm__jfail(&x->c, pos, "%%d format: a number is required, not %s", tfm__jtype_name(a));
        {
            tfm__jbuf one;
            tfm__jv t = (c == 'd' || c == 'i') && a->type == TFM__JV_FLOAT ? tfm__jv_int((int64_t)a->u.f) : *a, text;
            tfm__jbuf_init(&one, x->c.arena);
            ok = tfm__jv_write(x, &one, &t, c == 'r');
            text = tfm__jv_s(one.p ? one.p : "", one.n);
            if (ok && (fmt->fn & TFM__JV_MARKUP)) ok = tfm__jescape(x, &text, &text); /* Markup % escapes */
            if (!ok) return false;
            if (!tfm__jbuf_put(&b, text.u.s, text.n)) return tfm__jfail_mem(&x->c);
        }
    }
    if (used < n_args) return tfm__jfail(&x->c, pos, "not all arguments converted during string formatting");
    *out = tfm__jv_s(b.p ? b.p : "", b.n);
    out->fn = fmt->fn;
    return true;
}

/* strftime(fmt) of the render's date: %Y %y %m %d %e %H %I %M %S %p %j %a %A %b %B %%, and
   glibc's %-d %-m %-H %-I %-M %-S %-j (no padding). */
TFM_PRIVATE bool tfm__jstrftime(tfm__jx *x, size_t pos, const tfm__jv *fmt, tfm__jv *out) {
    static const char *const days[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday",
                                       "Friday", "Saturday"};
    static const char *const months[] = {"January", "February", "March", "April", "May", "June", "July",
                                         "August", "September", "October", "November", "December"};
    static const int cum[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    static const int sak[] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};
    const tfm_chat_date *d = x->date;
    tfm__jbuf b;
    char num[TFM__CHAT_NUM_BYTES];
    int y = d->year, leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0, ys, wday, yday;
    size_t i;
    ys = d->month < 3 ? y - 1 : y;
    wday = (ys + ys / 4 - ys / 100 + ys / 400 + sak[d->month - 1] + d->day) % 7;
    yday = cum[d->month - 1] + d->day + (leap && d->month > 2);
    tfm__jbuf_init(&b, x->c.arena);
    for (i = 0; i < fmt->n; i++) {
        bool nopad = false;
        char c;
        int v = -1, width = 2;
        if (fmt->u.s[i] != '%' || i + 1 >= fmt->n) {
            if (!tfm__jbuf_putc(&b, fmt->u.s[i])) return tfm__jfail_mem(&x->c);
            continue;
        }
        c = fmt->u.s[++i];
        if (c == '-' && i + 1 < fmt->n) { nopad = true; c = fmt->u.s[++i]; }
        num[0] = '\0';
        switch (c) {
        case 'Y': snprintf(num, sizeof num, "%d", y); break;
        case 'y': v = y % 100; break;
        case 'm': v = d->month; break;
        case 'd': v = d->day; break;
        case 'e': snprintf(num, sizeof num, nopad ? "%d" : "%2d", d->day); break;
        case 'H': v = d->hour; break;
        case 'I': v = d->hour % 12 ? d->hour % 12 : 12; break;
        case 'M': v = d->minute; break;
        case 'S': v = d->second; break;
        case 'j': v = yday; width = 3; break;
        case 'p': snprintf(num, sizeof num, "%s", d->hour < 12 ? "AM" : "PM"); break;
        case 'a': snprintf(num, sizeof num, "%.3s", days[wday]); break;
        case 'A': snprintf(num, sizeof num, "%s", days[wday]); break;
        case 'b': case 'h': snprintf(num, sizeof num, "%.3s", months[d->month - 1]); break;
        case 'B': snprintf(num, sizeof num, "%s", months[d->month - 1]); break;
        case '%': snprintf(num, sizeof num, "%%"); break;
        default: return tfm__jfail(&x->c, pos, "strftime_now: %%%c is not supported", c);
        }
        if (v >= 0 && nopad) snprintf(num, sizeof num, "%d", v);
        else if (v >= 0) snprintf(num, sizeof num, "%0*d", width, v);
        if (!tfm__jbuf_puts(&b, num)) return tfm__jfail_mem(&x->c);
    }
    *out = tfm__jv_s(b.p ? b.p : "", b.n);
    return true;
}

/* --- iteration, membership, tests --- */

/* The items a for loop (or list()) sees: a list / tuple as it is, a string's code points, a
   dict's keys, nothing for Undefined. Anything else is an error. */
TFM_PRIVATE bool tfm__jx_iter(tfm__jx *x, size_t pos, const tfm__jv *v, tfm__jseq **out) {
    tfm__jv list, item;
    size_t i, len;
    if (tfm__jv_is_seq(v) || v->type == TFM__JV_GEN) { *out = v->u.seq; return true; }
    if (v->type != TFM__JV_STR && v->type != TFM__JV_DICT && v->type != TFM__JV_UNDEF)
        return tfm__jfail(&x->c, pos, "'%s' object is not iterable", tfm__jtype_name(v));
    if (!tfm__jv_seq(x, TFM__JV_LIST, 0, &list)) return false;
    if (v->type == TFM__JV_STR) {
        for (i = 0; i < v->n; i += len) {
            tfm__jutf8(v->u.s + i, v->n - i, &len);
            item = tfm__jv_s(v->u.s + i, len);
            if (!tfm__jx_step(x, pos) || !tfm__jseq_push(x, list.u.seq, &item)) return false;
        }
    } else if (v->type == TFM__JV_DICT) {
        for (i = 0; i < v->u.seq->n; i += 2)
            if (!tfm__jseq_push(x, list.u.seq, &v->u.seq->v[i])) return false;
    }
    *out = list.u.seq;
    return true;
}

/* item in container, as Python's `in`. */
TFM_PRIVATE bool tfm__jx_contains(tfm__jx *x, size_t pos, const tfm__jv *item, const tfm__jv *c, bool *out) {
    size_t i;
    *out = false;
    if (c->type == TFM__JV_STR) {
        if (item->type != TFM__JV_STR)
            return tfm__jfail(&x->c, pos, "'in <string>' requires string as left operand, not %s",
                              tfm__jtype_name(item));
        *out = tfm__jfind(c->u.s, c->n, item->u.s, item->n, 0) < c->n || item->n == 0;
        return true;
    }
    if (c->type == TFM__JV_DICT) { *out = tfm__jpairs_find(c->u.seq, item) != NULL; return true; }
    if (c->type == TFM__JV_UNDEF) return true;
    if (!tfm__jv_is_seq(c) && c->type != TFM__JV_GEN)
        return tfm__jfail(&x->c, pos, "argument of type '%s' is not iterable", tfm__jtype_name(c));
    for (i = 0; i < c->u.seq->n && !*out; i++) {
        if (!tfm__jx_step(x, pos)) return false;
        *out = tfm__jv_eq(item, &c->u.seq->v[i]);
    }
    return true;
}

/* Has s a cased ASCII letter, and are all of them upper (want_upper) or lower? */
TFM_PRIVATE bool tfm__jcased(const tfm__jv *s, bool want_upper) {
    size_t i;
    bool cased = false;
    for (i = 0; i < s->n; i++) {
        char c = s->u.s[i];
        if (!tfm__jalpha(c)) continue;
        cased = true;
        if ((c >= 'A' && c <= 'Z') != want_upper) return false;
    }
    return cased;
}

/* Type tests: defined, none, string, mapping, ... (those without an argument). */
TFM_PRIVATE bool tfm__jtest_type(int id, const tfm__jv *v) {
    int t = v->type;
    switch (id) {
    case TFM__JTEST_BOOLEAN: return t == TFM__JV_BOOL;
    case TFM__JTEST_CALLABLE: return t == TFM__JV_MACRO || t == TFM__JV_FUNC || t == TFM__JV_METHOD;
    case TFM__JTEST_DEFINED: return t != TFM__JV_UNDEF;
    case TFM__JTEST_UNDEFINED: return t == TFM__JV_UNDEF;
    case TFM__JTEST_ESCAPED: return false;
    case TFM__JTEST_FALSE: return t == TFM__JV_BOOL && !v->u.i;
    case TFM__JTEST_TRUE: return t == TFM__JV_BOOL && v->u.i;
    case TFM__JTEST_FLOAT: return t == TFM__JV_FLOAT;
    case TFM__JTEST_INTEGER: return t == TFM__JV_INT;
    case TFM__JTEST_NUMBER: return t == TFM__JV_INT || t == TFM__JV_FLOAT || t == TFM__JV_BOOL;
    case TFM__JTEST_ITERABLE:
        return t == TFM__JV_STR || t == TFM__JV_LIST || t == TFM__JV_TUPLE || t == TFM__JV_DICT ||
               t == TFM__JV_UNDEF || t == TFM__JV_GEN;
    case TFM__JTEST_SEQUENCE:
        return t == TFM__JV_STR || t == TFM__JV_LIST || t == TFM__JV_TUPLE || t == TFM__JV_DICT;
    case TFM__JTEST_MAPPING: return t == TFM__JV_DICT;
    case TFM__JTEST_NONE: return t == TFM__JV_NONE;
    case TFM__JTEST_STRING: return t == TFM__JV_STR;
    case TFM__JTEST_LOWER: return t == TFM__JV_STR && tfm__jcased(v, false);
    case TFM__JTEST_UPPER: return t == TFM__JV_STR && tfm__jcased(v, true);
    default: return false;
    }
}

/* `v is test(arg)` for test id; the comparison tests take one argument. */
TFM_PRIVATE bool tfm__jx_test(tfm__jx *x, size_t pos, int id, const tfm__jv *v, const tfm__jv *arg, bool *out) {
    int c = 0;
    bool ordered = id == TFM__JTEST_GE || id == TFM__JTEST_GT || id == TFM__JTEST_GREATERTHAN ||
                   id == TFM__JTEST_LE || id == TFM__JTEST_LT || id == TFM__JTEST_LESSTHAN ||
                   (id >= TFM__JTEST_OP_LT && id <= TFM__JTEST_OP_GE);
    bool takes_arg = ordered || id == TFM__JTEST_DIVISIBLEBY || id == TFM__JTEST_EQ || id == TFM__JTEST_EQUALTO ||
                     id == TFM__JTEST_NE || id == TFM__JTEST_IN || id == TFM__JTEST_SAMEAS ||
                     id == TFM__JTEST_OP_EQ || id == TFM__JTEST_OP_NE;
    if (takes_arg != (arg != NULL))
        return tfm__jfail(&x->c, pos, "test '%s' takes %s argument", tfm__jtest_names[id], takes_arg ? "one" : "no");
    if (!takes_arg && id != TFM__JTEST_ODD && id != TFM__JTEST_EVEN) { *out = tfm__jtest_type(id, v); return true; }
    if (id == TFM__JTEST_ODD || id == TFM__JTEST_EVEN || id == TFM__JTEST_DIVISIBLEBY) {
        int64_t m = id == TFM__JTEST_DIVISIBLEBY ? 0 : 2;
        if (v->type != TFM__JV_INT && v->type != TFM__JV_BOOL)
            return tfm__jfail(&x->c, pos, "test '%s' needs an integer", tfm__jtest_names[id]);
        if (id == TFM__JTEST_DIVISIBLEBY && !tfm__jarg_int(x, pos, arg, 1, &m)) return false;
        if (m == 0) return tfm__jfail(&x->c, pos, "integer division or modulo by zero");
        *out = (id == TFM__JTEST_ODD) == (v->u.i % m != 0);
        return true;
    }
    if (id == TFM__JTEST_IN) return tfm__jx_contains(x, pos, v, arg, out);
    if (id == TFM__JTEST_SAMEAS) {
        *out = v->type == arg->type && (v->type <= TFM__JV_BOOL ? v->u.i == arg->u.i : tfm__jv_eq(v, arg) &&
                                        (v->type < TFM__JV_STR || v->u.p == arg->u.p));
        return true;
    }
    if (!ordered) {
        *out = tfm__jv_eq(v, arg) == (id == TFM__JTEST_EQ || id == TFM__JTEST_EQUALTO || id == TFM__JTEST_OP_EQ);
        return true;
    }
    if (!tfm__jv_order(v, arg, &c))
        return tfm__jfail(&x->c, pos, "'%s' not supported between %s and %s", tfm__jtest_names[id],
                          tfm__jtype_name(v), tfm__jtype_name(arg));
    switch (id) {
    case TFM__JTEST_GE: case TFM__JTEST_OP_GE: *out = c >= 0; break;
    case TFM__JTEST_GT: case TFM__JTEST_GREATERTHAN: case TFM__JTEST_OP_GT: *out = c > 0; break;
    case TFM__JTEST_LE: case TFM__JTEST_OP_LE: *out = c <= 0; break;
    default: *out = c < 0; break;
    }
    return true;
}

/* A test given by name at render time (select, selectattr): the id, or an error. */
TFM_PRIVATE bool tfm__jtest_by_name(tfm__jx *x, size_t pos, const tfm__jv *name, int *id) {
    if (name->type != TFM__JV_STR) return tfm__jfail(&x->c, pos, "a test name must be a string");
    *id = tfm__jlookup(tfm__jtest_names, TFM__JTEST_N_, name->u.s, name->n);
    if (*id < 0) return tfm__jfail(&x->c, pos, "no test named '%.*s'", (int)name->n, name->u.s);
    return true;
}

/* --- methods of str, dict and loop --- */

/* s.find(sub) in code points (-1 when absent) or s.count(sub) (non-overlapping). */
TFM_PRIVATE tfm__jv tfm__jfind_count(const tfm__jv *s, const tfm__jv *sub, bool count) {
    size_t at = 0, found, n = 0;
    if (!count) {
        found = tfm__jfind(s->u.s, s->n, sub->u.s, sub->n, 0);
        return tfm__jv_int(found > s->n || (found == s->n && sub->n) ? -1 : (int64_t)tfm__jcp_count(s->u.s, found));
    }
    if (sub->n == 0) return tfm__jv_int((int64_t)tfm__jcp_count(s->u.s, s->n) + 1);
    while ((found = tfm__jfind(s->u.s, s->n, sub->u.s, sub->n, at)) < s->n) { n++; at = found + sub->n; }
    return tfm__jv_int((int64_t)n);
}

TFM_PRIVATE bool tfm__jx_str_method(tfm__jx *x, int fn, const tfm__jv *self, const tfm__jargs *a, tfm__jv *out) {
    static const char *const p_chars[] = {"chars", NULL}, *const p_split[] = {"sep", "maxsplit", NULL};
    static const char *const p_one[] = {"x", NULL}, *const p_rep[] = {"old", "new", "count", NULL};
    static const char *const p_none[] = {NULL};
    const tfm__jv *v[TFM__JMAX_PARAMS];
    bool given = false, g2 = false;
    int64_t n = -1;
    const char *const *params = fn <= TFM__JM_RSTRIP ? p_chars : fn <= TFM__JM_RSPLIT ? p_split :
                                fn == TFM__JM_REPLACE ? p_rep : (fn >= TFM__JM_UPPER && fn <= TFM__JM_CAPITALIZE) ? p_none : p_one;
    if (!tfm__jbind(x, a, params, tfm__jmethod_names[fn], v)) return false;
    if (params == p_one && !v[0]) return tfm__jfail(&x->c, a->pos, "%s() needs an argument", tfm__jmethod_names[fn]);
    switch (fn) {
    case TFM__JM_STRIP: case TFM__JM_LSTRIP: case TFM__JM_RSTRIP:
        if (!tfm__jarg_str(x, a->pos, v[0], &given)) return false;
        *out = tfm__jstrip(self, given ? v[0] : NULL, fn != TFM__JM_RSTRIP, fn != TFM__JM_LSTRIP);
        return true;
    case TFM__JM_SPLIT: case TFM__JM_RSPLIT:
        if (!tfm__jarg_str(x, a->pos, v[0], &given) || !tfm__jarg_int(x, a->pos, v[1], -1, &n)) return false;
        return (fn == TFM__JM_SPLIT ? tfm__jsplit : tfm__jrsplit)(x, a->pos, self, given ? v[0] : NULL, n, out);
    case TFM__JM_STARTSWITH: case TFM__JM_ENDSWITH:
        return tfm__jaffix(x, a->pos, self, v[0], fn == TFM__JM_ENDSWITH, out);
    case TFM__JM_REPLACE:
        if (!v[0] || !v[1] || !tfm__jarg_str(x, a->pos, v[0], &given) || !tfm__jarg_str(x, a->pos, v[1], &g2) ||
            !given || !g2 || !tfm__jarg_int(x, a->pos, v[2], -1, &n))
            return x->c.result == TFM_OK ? tfm__jfail(&x->c, a->pos, "replace() needs two strings") : false;
        return tfm__jreplace(x, a->pos, self, v[0], v[1], n, out);
    case TFM__JM_UPPER: return tfm__jcase(x, self, TFM__JCASE_UPPER, out);
    case TFM__JM_LOWER: return tfm__jcase(x, self, TFM__JCASE_LOWER, out);
    case TFM__JM_TITLE: return tfm__jcase(x, self, TFM__JCASE_TITLE_METHOD, out);
    case TFM__JM_CAPITALIZE: return tfm__jcase(x, self, TFM__JCASE_CAPITALIZE, out);
    case TFM__JM_FIND: case TFM__JM_COUNT:
        if (!tfm__jarg_str(x, a->pos, v[0], &given) || !given)
            return x->c.result == TFM_OK ? tfm__jfail(&x->c, a->pos, "%s() needs a string", tfm__jmethod_names[fn]) : false;
        *out = tfm__jfind_count(self, v[0], fn == TFM__JM_COUNT);
        return true;
    default: { /* join */
        tfm__jseq *items;
        return tfm__jx_iter(x, a->pos, v[0], &items) && tfm__jjoin(x, a->pos, self, items, false, out);
    }
    }
}

/* dict.items() / keys() / values() / get(key, default=None); loop.cycle(*values). */
TFM_PRIVATE bool tfm__jx_method(tfm__jx *x, const tfm__jv *m, const tfm__jargs *a, tfm__jv *out) {
    static const char *const p_get[] = {"key", "default", NULL}, *const p_none[] = {NULL};
    const tfm__jv *self = TFM__CAST(const tfm__jv *, m->u.p), *v[TFM__JMAX_PARAMS], *hit;
    size_t i;
    if (m->fn < TFM__JM_N_STR_) return tfm__jx_str_method(x, m->fn, self, a, out);
    if (m->fn == TFM__JM_CYCLE) {
        const tfm__jloop *l = TFM__CAST(const tfm__jloop *, self->u.p);
        if (a->n_kw || !a->n_pos) return tfm__jfail(&x->c, a->pos, "loop.cycle() needs positional arguments");
        *out = a->v[l->index0 % a->n_pos];
        return true;
    }
    if (!tfm__jbind(x, a, m->fn == TFM__JM_GET ? p_get : p_none, tfm__jmethod_names[m->fn], v)) return false;
    if (m->fn == TFM__JM_GET) {
        if (!v[0]) return tfm__jfail(&x->c, a->pos, "get() needs a key");
        hit = tfm__jpairs_find(self->u.seq, v[0]);
        *out = hit ? *hit : v[1] ? *v[1] : tfm__jv_make(TFM__JV_NONE);
        return true;
    }
    if (!tfm__jv_seq(x, TFM__JV_LIST, self->u.seq->n / 2 + 1, out)) return false;
    for (i = 0; i < self->u.seq->n; i += 2) {
        tfm__jv item = self->u.seq->v[i + (m->fn == TFM__JM_VALUES)];
        if (m->fn == TFM__JM_ITEMS) {
            tfm__jv pair;
            if (!tfm__jv_seq(x, TFM__JV_TUPLE, 2, &pair)) return false;
            pair.u.seq->v[0] = self->u.seq->v[i];
            pair.u.seq->v[1] = self->u.seq->v[i + 1];
            pair.u.seq->n = 2;
            item = pair;
        }
        if (!tfm__jseq_push(x, out->u.seq, &item)) return false;
    }
    return true;
}

/* --- filters --- */

/* item's attribute path "a.b.0" (getitem per part, ints for digit parts), as jinja2's
   make_attrgetter. */
TFM_PRIVATE bool tfm__jattr_path(tfm__jx *x, size_t pos, const tfm__jv *item, const tfm__jv *path, tfm__jv *out) {
    size_t i = 0, end;
    *out = *item;
    if (path->type == TFM__JV_INT) return tfm__jx_getitem(x, pos, item, path, out);
    if (path->type != TFM__JV_STR) return tfm__jfail(&x->c, pos, "attribute must be a string");
    while (i <= path->n) {
        tfm__jv key, cur = *out;
        int64_t k;
        for (end = i; end < path->n && path->u.s[end] != '.'; end++) {}
        key = tfm__jv_s(path->u.s + i, end - i);
        if (end > i && tfm__jis_digit(path->u.s[i]) && tfm__jstrtoi(path->u.s + i, end - i, &k)) key = tfm__jv_int(k);
        if (cur.type == TFM__JV_UNDEF) return true;
        if (!tfm__jx_getitem(x, pos, &cur, &key, out)) return false;
        i = end + 1;
    }
    return true;
}

/* len(v) for the length filter. */
TFM_PRIVATE bool tfm__jlen(tfm__jx *x, size_t pos, const tfm__jv *v, tfm__jv *out) {
    if (v->type == TFM__JV_STR) *out = tfm__jv_int((int64_t)tfm__jcp_count(v->u.s, v->n));
    else if (tfm__jv_is_seq(v)) *out = tfm__jv_int((int64_t)v->u.seq->n);
    else if (v->type == TFM__JV_DICT) *out = tfm__jv_int((int64_t)v->u.seq->n / 2);
    else if (v->type == TFM__JV_UNDEF) *out = tfm__jv_int(0);
    else return tfm__jfail(&x->c, pos, "object of type '%s' has no len()", tfm__jtype_name(v));
    return true;
}

/* The key a value sorts / compares by: its attribute, lowercased when a case-insensitive
   string. */
TFM_PRIVATE bool tfm__jsort_key(tfm__jx *x, size_t pos, const tfm__jv *item, const tfm__jv *attr, bool cs, tfm__jv *out) {
    if (attr && attr->type != TFM__JV_NONE) { if (!tfm__jattr_path(x, pos, item, attr, out)) return false; }
    else *out = *item;
    if (!cs && out->type == TFM__JV_STR) return tfm__jcase(x, out, TFM__JCASE_LOWER, out);
    return true;
}

/* Keys of items (by attribute, lowercased unless case-sensitive) for sort / unique / min / max. */
TFM_PRIVATE bool tfm__jsort_keys(tfm__jx *x, size_t pos, const tfm__jseq *items, const tfm__jv *attr,
                                 bool cs, tfm__jv **keys) {
    size_t i;
    if (!(*keys = TFM__CAST(tfm__jv *, tfm__jalloc(&x->c, (items->n + 1) * sizeof(tfm__jv))))) return false;
    for (i = 0; i < items->n; i++)
        if (!tfm__jsort_key(x, pos, &items->v[i], attr, cs, &(*keys)[i])) return false;
    return true;
}

/* -1 / 0 / 1 for two keys, or an error. */
TFM_PRIVATE bool tfm__jkey_order(tfm__jx *x, size_t pos, int id, const tfm__jv *a, const tfm__jv *b, int *c) {
    if (!tfm__jx_step(x, pos)) return false;
    if (tfm__jv_order(a, b, c)) return true;
    return tfm__jfail(&x->c, pos, "%s: cannot compare %s and %s", tfm__jfilter_names[id], tfm__jtype_name(a),
                      tfm__jtype_name(b));
}

/* sort (stable), unique (first of each key), min and max (first extreme) over an iterable. */
TFM_PRIVATE bool tfm__jx_sortlike(tfm__jx *x, size_t pos, int id, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    static const char *const p_sort[] = {"reverse", "case_sensitive", "attribute", NULL};
    static const char *const p_other[] = {"case_sensitive", "attribute", NULL};
    const tfm__jv *p[TFM__JMAX_PARAMS];
    bool sort = id == TFM__JF_SORT, rev;
    tfm__jseq *items;
    tfm__jv *keys, list, kt;
    size_t i, j, best = 0;
    int c = 0;
    if (!tfm__jbind(x, a, sort ? p_sort : p_other, tfm__jfilter_names[id], p) || !tfm__jx_iter(x, pos, v, &items) ||
        !tfm__jsort_keys(x, pos, items, p[sort ? 2 : 1], p[sort ? 1 : 0] && tfm__jv_truthy(p[sort ? 1 : 0]), &keys))
        return false;
    rev = sort && p[0] && tfm__jv_truthy(p[0]);
    if (id == TFM__JF_MIN || id == TFM__JF_MAX) {
        for (i = 1; i < items->n; i++) {
            if (!tfm__jkey_order(x, pos, id, &keys[i], &keys[best], &c)) return false;
            if (id == TFM__JF_MIN ? c < 0 : c > 0) best = i;
        }
        *out = items->n ? items->v[best] : tfm__jv_undef(NULL, 0);
        return true;
    }
    if (!tfm__jv_seq(x, TFM__JV_LIST, items->n + 1, &list)) return false;
    for (i = 0; i < items->n; i++) {
        size_t n = list.u.seq->n;
        if (!sort) { /* unique: keys[0..n) hold the keys kept so far */
            for (j = 0; j < n && !tfm__jv_eq(&keys[j], &keys[i]); j++)
                if (!tfm__jx_step(x, pos)) return false;
            if (j < n) continue;
            keys[n] = keys[i];
            list.u.seq->v[list.u.seq->n++] = items->v[i];
            continue;
        }
        kt = keys[i]; /* insertion sort: keys[0..n) are the sorted keys */
        for (j = n; j > 0; j--) {
            if (!tfm__jkey_order(x, pos, id, &keys[j - 1], &kt, &c)) return false;
            if (rev ? c >= 0 : c <= 0) break;
        }
        memmove(&keys[j + 1], &keys[j], (n - j) * sizeof(tfm__jv));
        memmove(&list.u.seq->v[j + 1], &list.u.seq->v[j], (n - j) * sizeof(tfm__jv));
        keys[j] = kt;
        list.u.seq->v[j] = items->v[i];
        list.u.seq->n++;
    }
    *out = list;
    if (!sort) out->type = TFM__JV_GEN; /* jinja2's unique yields */
    return true;
}

/* select / reject (test on the item) and selectattr / rejectattr (test on an attribute);
   without a test name, the value's truthiness. */
TFM_PRIVATE bool tfm__jx_select(tfm__jx *x, size_t pos, int id, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    bool attr = id == TFM__JF_SELECTATTR || id == TFM__JF_REJECTATTR;
    bool keep_if = id == TFM__JF_SELECT || id == TFM__JF_SELECTATTR, hit;
    size_t first = attr ? 1 : 0, i;
    int test = -1;
    tfm__jseq *items;
    if (a->n_kw) return tfm__jfail(&x->c, pos, "%s takes no keyword arguments", tfm__jfilter_names[id]);
    if (attr && a->n_pos == 0) return tfm__jfail(&x->c, pos, "%s needs an attribute", tfm__jfilter_names[id]);
    if (a->n_pos > first + 2) return tfm__jfail(&x->c, pos, "%s: too many arguments", tfm__jfilter_names[id]);
    if (a->n_pos > first && !tfm__jtest_by_name(x, pos, &a->v[first], &test)) return false;
    if (!tfm__jv_seq(x, TFM__JV_GEN, 0, out)) return false; /* jinja2 yields: a generator */
    if (!tfm__jv_truthy(v)) return true; /* jinja2: `if value:` before iterating */
    if (!tfm__jx_iter(x, pos, v, &items)) return false;
    for (i = 0; i < items->n; i++) {
        tfm__jv item = items->v[i];
        if (!tfm__jx_step(x, pos)) return false;
        if (attr && !tfm__jattr_path(x, pos, &items->v[i], &a->v[0], &item)) return false;
        if (test < 0) hit = tfm__jv_truthy(&item);
        else if (!tfm__jx_test(x, pos, test, &item, a->n_pos > first + 1 ? &a->v[first + 1] : NULL, &hit)) return false;
        if (hit == keep_if && !tfm__jseq_push(x, out->u.seq, &items->v[i])) return false;
    }
    return true;
}

TFM_PRIVATE bool tfm__jx_filter(tfm__jx *x, size_t pos, int id, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out);

/* map(attribute=..., default=...) or map('filter', args...). */
TFM_PRIVATE bool tfm__jx_map(tfm__jx *x, size_t pos, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    tfm__jseq *items;
    size_t i, k;
    const tfm__jv *attr = NULL, *def = NULL;
    int id = -1;
    tfm__jargs rest = *a;
    for (k = 0; k < a->n_kw; k++) {
        const tfm__jv *name = &a->kw[k]->value;
        if (tfm__jeq_str(name->u.s, name->n, "attribute")) attr = &a->v[a->n_pos + k];
        else if (tfm__jeq_str(name->u.s, name->n, "default")) def = &a->v[a->n_pos + k];
    }
    if (!attr) {
        if (a->n_pos == 0 || a->v[0].type != TFM__JV_STR)
            return tfm__jfail(&x->c, pos, "map needs attribute= or a filter name");
        id = tfm__jlookup(tfm__jfilter_names, TFM__JF_N_, a->v[0].u.s, a->v[0].n);
        if (id < 0) return tfm__jfail(&x->c, pos, "no filter named '%.*s'", (int)a->v[0].n, a->v[0].u.s);
        rest.v++;
        rest.n_pos--;
    } else if (a->n_pos) {
        return tfm__jfail(&x->c, pos, "map with attribute= takes no positional arguments");
    }
    if (!tfm__jv_truthy(v)) return tfm__jv_seq(x, TFM__JV_GEN, 0, out); /* as select */
    if (!tfm__jx_iter(x, pos, v, &items) || !tfm__jv_seq(x, TFM__JV_GEN, items->n + 1, out)) return false;
    for (i = 0; i < items->n; i++) {
        tfm__jv r;
        if (!tfm__jx_step(x, pos)) return false;
        if (attr) {
            if (!tfm__jattr_path(x, pos, &items->v[i], attr, &r)) return false;
            if (r.type == TFM__JV_UNDEF && def) r = *def;
        } else if (!tfm__jx_filter(x, pos, id, &items->v[i], &rest, &r)) {
            return false;
        }
        out->u.seq->v[out->u.seq->n++] = r;
    }
    return true;
}

/* Python's str.splitlines() boundaries: the length of a line break at s[i], 0 if none. */
TFM_PRIVATE size_t tfm__jline_break(const char *s, size_t n, size_t i) {
    size_t len;
    uint32_t cp = tfm__jutf8(s + i, n - i, &len);
    if (cp == '\r' && i + 1 < n && s[i + 1] == '\n') return 2;
    if (cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) || cp == 0x85 ||
        cp == 0x2028 || cp == 0x2029)
        return len;
    return 0;
}

/* indent(width=4, first=False, blank=False), jinja2 3.x: lines after the first get the
   indent (blank lines too only with blank). */
TFM_PRIVATE bool tfm__jx_indent(tfm__jx *x, size_t pos, const tfm__jv *s, const tfm__jargs *a, tfm__jv *out) {
    static const char *const params[] = {"width", "first", "blank", NULL};
    const tfm__jv *p[TFM__JMAX_PARAMS];
    tfm__jbuf b, ind;
    int64_t width = 4, k;
    size_t i = 0, br, start;
    bool first_line = true, blank, ok = true;
    if (!tfm__jbind(x, a, params, "indent", p)) return false;
    tfm__jbuf_init(&b, x->c.arena);
    tfm__jbuf_init(&ind, x->c.arena);
    if (p[0] && p[0]->type == TFM__JV_STR) ok = tfm__jbuf_put(&ind, p[0]->u.s, p[0]->n);
    else if (!tfm__jarg_int(x, pos, p[0], 4, &width)) return false;
    for (k = 0; ok && k < width && !(p[0] && p[0]->type == TFM__JV_STR); k++) ok = tfm__jbuf_putc(&ind, ' ');
    blank = p[2] && tfm__jv_truthy(p[2]);
    if (ok && p[1] && tfm__jv_truthy(p[1])) ok = tfm__jbuf_put(&b, ind.p, ind.n);
    while (ok && i < s->n) { /* each line of s + "\n", joined by "\n" */
        for (start = i; i < s->n && !(br = tfm__jline_break(s->u.s, s->n, i)); i++) {}
        if (i >= s->n) br = 0;
        if (!first_line) {
            ok = tfm__jbuf_putc(&b, '\n');
            if (ok && (blank || i > start)) ok = tfm__jbuf_put(&b, ind.p, ind.n);
        }
        ok = ok && tfm__jbuf_put(&b, s->u.s + start, i - start);
        first_line = false;
        i += br;
    }
    if (!ok) return tfm__jfail_mem(&x->c);
    *out = tfm__jv_s(b.p ? b.p : "", b.n);
    return true;
}

/* Python int(str): optional whitespace and sign, digits with single underscores between. */
TFM_PRIVATE bool tfm__jparse_int(const tfm__jv *v, int64_t *out) {
    tfm__jv t = tfm__jstrip(v, NULL, true, true);
    size_t sign = t.n && (t.u.s[0] == '-' || t.u.s[0] == '+'), k;
    if (t.n <= sign || !tfm__jis_digit(t.u.s[sign]) || !tfm__jis_digit(t.u.s[t.n - 1])) return false;
    for (k = sign; k < t.n; k++)
        if (!tfm__jis_digit(t.u.s[k]) && !(t.u.s[k] == '_' && tfm__jis_digit(t.u.s[k + 1]))) return false;
    if (!tfm__jstrtoi(t.u.s + sign, t.n - sign, out)) return false;
    if (t.u.s[0] == '-') *out = -*out;
    return true;
}

#define TFM__JINT_FROM_FLOAT_MAX 9.2e18 /* doubles below this convert to int64 exactly */

/* int(value, default=0) and float(value, default=0.0), as jinja2's do_int / do_float: a
   number, a numeric string, else the default. */
TFM_PRIVATE bool tfm__jx_number(tfm__jx *x, int id, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    static const char *const p_int[] = {"default", "base", NULL}, *const p_float[] = {"default", NULL};
    const tfm__jv *p[TFM__JMAX_PARAMS];
    double f = 0.0;
    int64_t i = 0;
    bool ok = false, is_int = false;
    if (!tfm__jbind(x, a, id == TFM__JF_INT ? p_int : p_float, tfm__jfilter_names[id], p)) return false;
    if (v->type == TFM__JV_INT || v->type == TFM__JV_BOOL) { i = v->u.i; is_int = ok = true; }
    else if (v->type == TFM__JV_FLOAT) { f = v->u.f; ok = true; }
    else if (v->type == TFM__JV_STR) {
        tfm__jv t = tfm__jstrip(v, NULL, true, true);
        if (tfm__jparse_int(v, &i)) is_int = ok = true;
        else ok = !memchr(t.u.s, '_', t.n) && tfm__jstrtod(t.u.s, t.n, &f);
    }
    if (ok && id == TFM__JF_INT && !is_int) {
        ok = f == f && f > -TFM__JINT_FROM_FLOAT_MAX && f < TFM__JINT_FROM_FLOAT_MAX;
        i = ok ? (int64_t)f : 0;
    }
    if (!ok) *out = p[0] ? *p[0] : id == TFM__JF_INT ? tfm__jv_int(0) : tfm__jv_float(0.0);
    else *out = id == TFM__JF_INT ? tfm__jv_int(i) : tfm__jv_float(is_int ? (double)i : f);
    return true;
}

/* tojson(ensure_ascii=False, indent=None, separators=None, sort_keys=False): transformers'
   own filter, json.dumps with those options. */
TFM_PRIVATE bool tfm__jx_tojson(tfm__jx *x, size_t pos, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    static const char *const params[] = {"ensure_ascii", "indent", "separators", "sort_keys", NULL};
    const tfm__jv *p[TFM__JMAX_PARAMS];
    tfm__jjson o;
    tfm__jbuf b;
    int64_t indent = -1;
    if (!tfm__jbind(x, a, params, "tojson", p) || !tfm__jarg_int(x, pos, p[1], -1, &indent)) return false;
    memset(&o, 0, sizeof o);
    o.ensure_ascii = p[0] && tfm__jv_truthy(p[0]);
    o.sort_keys = p[3] && tfm__jv_truthy(p[3]);
    if (indent > TFM__CHAT_JSON_INDENT_MAX) return tfm__jfail(&x->c, pos, "tojson: indent above %d", TFM__CHAT_JSON_INDENT_MAX);
    o.indent = indent < 0 ? -1 : (int)indent;
    if (p[2] && p[2]->type != TFM__JV_NONE) {
        if (!tfm__jv_is_seq(p[2]) || p[2]->u.seq->n != 2 || p[2]->u.seq->v[0].type != TFM__JV_STR ||
            p[2]->u.seq->v[1].type != TFM__JV_STR)
            return tfm__jfail(&x->c, pos, "tojson: separators must be two strings");
        o.item_sep = &p[2]->u.seq->v[0];
        o.key_sep = &p[2]->u.seq->v[1];
    }
    tfm__jbuf_init(&b, x->c.arena);
    if (!tfm__jjson_write(x, &b, v, &o, 0)) return false;
    *out = tfm__jv_s(b.p ? b.p : "", b.n);
    return true;
}

/* round(value, precision=0, method='common'|'ceil'|'floor'): common is Python's round
   (half to even). */
TFM_PRIVATE bool tfm__jx_round(tfm__jx *x, size_t pos, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    static const char *const params[] = {"precision", "method", NULL};
    const tfm__jv *p[TFM__JMAX_PARAMS];
    int64_t prec = 0;
    double scale, f;
    if (!tfm__jbind(x, a, params, "round", p) || !tfm__jarg_int(x, pos, p[0], 0, &prec)) return false;
    if (!tfm__jv_is_num(v)) return tfm__jfail(&x->c, pos, "round: %s is not a number", tfm__jtype_name(v));
    if (prec < -308 || prec > 308) return tfm__jfail(&x->c, pos, "round: precision out of range");
    scale = pow(10.0, (double)prec);
    f = tfm__jv_num(v) * scale;
    if (p[1] && p[1]->type == TFM__JV_STR && tfm__jeq_str(p[1]->u.s, p[1]->n, "ceil")) f = ceil(f);
    else if (p[1] && p[1]->type == TFM__JV_STR && tfm__jeq_str(p[1]->u.s, p[1]->n, "floor")) f = floor(f);
    else if (!p[1] || (p[1]->type == TFM__JV_STR && tfm__jeq_str(p[1]->u.s, p[1]->n, "common"))) {
        double r = floor(f + 0.5);
        if (r - f == 0.5 && fmod(r, 2.0) != 0.0) r -= 1.0;
        f = r;
    } else {
        return tfm__jfail(&x->c, pos, "round: method must be common, ceil or floor");
    }
    *out = v->type != TFM__JV_FLOAT && (!p[1] || p[1]->u.s[1] == 'o') ? tfm__jv_int((int64_t)(f / scale))
                                                                      : tfm__jv_float(f / scale);
    return true;
}

/* sum(iterable, attribute=None, start=0). */
TFM_PRIVATE bool tfm__jx_sum(tfm__jx *x, size_t pos, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    static const char *const params[] = {"attribute", "start", NULL};
    const tfm__jv *p[TFM__JMAX_PARAMS];
    tfm__jseq *items;
    size_t i;
    if (!tfm__jbind(x, a, params, "sum", p) || !tfm__jx_iter(x, pos, v, &items)) return false;
    *out = p[1] ? *p[1] : tfm__jv_int(0);
    for (i = 0; i < items->n; i++) {
        tfm__jv item = items->v[i];
        if (p[0] && !tfm__jattr_path(x, pos, &items->v[i], p[0], &item)) return false;
        if (!tfm__jv_is_num(&item) || !tfm__jv_is_num(out))
            return tfm__jfail(&x->c, pos, "sum: %s is not a number", tfm__jtype_name(&item));
        if (item.type == TFM__JV_FLOAT || out->type == TFM__JV_FLOAT) *out = tfm__jv_float(tfm__jv_num(out) + tfm__jv_num(&item));
        else if ((item.u.i > 0 && out->u.i > INT64_MAX - item.u.i) || (item.u.i < 0 && out->u.i < INT64_MIN - item.u.i))
            return tfm__jfail(&x->c, pos, "integer overflow");
        else *out = tfm__jv_int(out->u.i + item.u.i);
    }
    return true;
}

/* default / d(default_value='', boolean=False) and join(d='', attribute=None). */
TFM_PRIVATE bool tfm__jx_default_join(tfm__jx *x, size_t pos, int id, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    static const char *const p_def[] = {"default_value", "boolean", NULL}, *const p_join[] = {"d", "attribute", NULL};
    const tfm__jv *p[TFM__JMAX_PARAMS];
    tfm__jseq *items;
    tfm__jv list, sep = tfm__jv_s("", 0), item;
    size_t i;
    if (!tfm__jbind(x, a, id == TFM__JF_JOIN ? p_join : p_def, tfm__jfilter_names[id], p)) return false;
    if (id != TFM__JF_JOIN) {
        bool use = v->type == TFM__JV_UNDEF || (p[1] && tfm__jv_truthy(p[1]) && !tfm__jv_truthy(v));
        *out = !use ? *v : p[0] ? *p[0] : tfm__jv_s("", 0);
        return true;
    }
    if ((p[0] && !tfm__jv_to_str(x, p[0], &sep)) || !tfm__jx_iter(x, pos, v, &items)) return false;
    if (p[1]) {
        if (!tfm__jv_seq(x, TFM__JV_LIST, items->n + 1, &list)) return false;
        for (i = 0; i < items->n; i++) {
            if (!tfm__jattr_path(x, pos, &items->v[i], p[1], &item)) return false;
            list.u.seq->v[list.u.seq->n++] = item;
        }
        items = list.u.seq;
    }
    return tfm__jjoin(x, pos, &sep, items, true, out);
}

/* first, last, list, reverse, items: views of an iterable. */
TFM_PRIVATE bool tfm__jx_seqview(tfm__jx *x, size_t pos, int id, const tfm__jv *v, tfm__jv *out) {
    tfm__jseq *items;
    size_t i;
    if (id == TFM__JF_ITEMS) {
        tfm__jv m;
        if (v->type == TFM__JV_UNDEF) return tfm__jv_seq(x, TFM__JV_LIST, 0, out);
        if (v->type != TFM__JV_DICT) return tfm__jfail(&x->c, pos, "items: can only get item pairs from a mapping");
        m = tfm__jv_make(TFM__JV_METHOD);
        m.fn = TFM__JM_ITEMS;
        m.u.p = v;
        {
            tfm__jargs none;
            memset(&none, 0, sizeof none);
            none.pos = pos;
            if (!tfm__jx_method(x, &m, &none, out)) return false;
            out->type = TFM__JV_GEN; /* jinja2's items filter yields */
            return true;
        }
    }
    if (id == TFM__JF_REVERSE && v->type == TFM__JV_STR) {
        char *p = TFM__CAST(char *, tfm__jalloc(&x->c, v->n ? v->n : 1));
        size_t len, at = v->n;
        if (!p) return false;
        for (i = 0; i < v->n; i += len) {
            tfm__jutf8(v->u.s + i, v->n - i, &len);
            at -= len;
            memcpy(p + at, v->u.s + i, len);
        }
        *out = tfm__jv_s(p, v->n);
        return true;
    }
    if (!tfm__jx_iter(x, pos, v, &items)) return false;
    if (id == TFM__JF_LAST && v->type == TFM__JV_GEN)
        return tfm__jfail(&x->c, pos, "'generator' object is not reversible");
    if (id == TFM__JF_FIRST || id == TFM__JF_LAST) {
        *out = items->n == 0 ? tfm__jv_undef(NULL, 0) : items->v[id == TFM__JF_FIRST ? 0 : items->n - 1];
        return true;
    }
    /* list() is a list; reversed() an iterator, or a list for a generator */
    if (!tfm__jv_seq(x, id == TFM__JF_REVERSE && v->type != TFM__JV_GEN ? TFM__JV_GEN : TFM__JV_LIST,
                     items->n + 1, out))
        return false;
    for (i = 0; i < items->n; i++) out->u.seq->v[i] = items->v[id == TFM__JF_REVERSE ? items->n - 1 - i : i];
    out->u.seq->n = items->n;
    return true;
}

/* trim(chars=None), replace(old, new, count=None), format(*args) and the case filters on
   str(value). */
TFM_PRIVATE bool tfm__jx_strfilter(tfm__jx *x, size_t pos, int id, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    static const char *const p_trim[] = {"chars", NULL}, *const p_rep[] = {"old", "new", "count", NULL};
    static const char *const p_none[] = {NULL};
    const tfm__jv *p[TFM__JMAX_PARAMS];
    tfm__jv s, args;
    int64_t count = -1;
    bool given;
    if (!tfm__jv_to_str(x, v, &s)) return false;
    if (id == TFM__JF_FORMAT) {
        if (a->n_kw) return tfm__jfail(&x->c, pos, "format: keyword arguments are not supported");
        if (!tfm__jv_seq(x, TFM__JV_TUPLE, 0, &args)) return false;
        args.u.seq->v = a->v;
        args.u.seq->n = args.u.seq->cap = a->n_pos;
        return tfm__jpercent(x, pos, &s, &args, out);
    }
    if (!tfm__jbind(x, a, id == TFM__JF_TRIM ? p_trim : id == TFM__JF_REPLACE ? p_rep : p_none, tfm__jfilter_names[id], p))
        return false;
    switch (id) {
    case TFM__JF_TRIM:
        if (!tfm__jarg_str(x, pos, p[0], &given)) return false;
        *out = tfm__jstrip(&s, given ? p[0] : NULL, true, true);
        return true;
    case TFM__JF_REPLACE: {
        tfm__jv old, rep;
        if (!p[0] || !p[1]) return tfm__jfail(&x->c, pos, "replace needs old and new");
        if (!tfm__jv_to_str(x, p[0], &old) || !tfm__jv_to_str(x, p[1], &rep) || !tfm__jarg_int(x, pos, p[2], -1, &count))
            return false;
        return tfm__jreplace(x, pos, &s, &old, &rep, count, out);
    }
    case TFM__JF_ESCAPE: case TFM__JF_E: return tfm__jescape(x, &s, out);
    case TFM__JF_UPPER: return tfm__jcase(x, &s, TFM__JCASE_UPPER, out);
    case TFM__JF_LOWER: return tfm__jcase(x, &s, TFM__JCASE_LOWER, out);
    case TFM__JF_CAPITALIZE: return tfm__jcase(x, &s, TFM__JCASE_CAPITALIZE, out);
    case TFM__JF_TITLE: return tfm__jcase(x, &s, TFM__JCASE_TITLE_FILTER, out);
    default: *out = s; return true; /* string */
    }
}

/* value | filter(args). */
TFM_PRIVATE bool tfm__jx_filter(tfm__jx *x, size_t pos, int id, const tfm__jv *v, const tfm__jargs *a, tfm__jv *out) {
    static const char *const p_none[] = {NULL};
    const tfm__jv *p[TFM__JMAX_PARAMS];
    if (!tfm__jx_step(x, pos)) return false;
    switch (id) {
    case TFM__JF_D: case TFM__JF_DEFAULT: case TFM__JF_JOIN: return tfm__jx_default_join(x, pos, id, v, a, out);
    case TFM__JF_SORT: case TFM__JF_UNIQUE: case TFM__JF_MIN: case TFM__JF_MAX:
        return tfm__jx_sortlike(x, pos, id, v, a, out);
    case TFM__JF_SELECT: case TFM__JF_REJECT: case TFM__JF_SELECTATTR: case TFM__JF_REJECTATTR:
        return tfm__jx_select(x, pos, id, v, a, out);
    case TFM__JF_MAP: return tfm__jx_map(x, pos, v, a, out);
    case TFM__JF_TOJSON: return tfm__jx_tojson(x, pos, v, a, out);
    case TFM__JF_INDENT: {
        tfm__jv s;
        return tfm__jv_to_str(x, v, &s) && tfm__jx_indent(x, pos, &s, a, out);
    }
    case TFM__JF_INT: case TFM__JF_FLOAT: return tfm__jx_number(x, id, v, a, out);
    case TFM__JF_ROUND: return tfm__jx_round(x, pos, v, a, out);
    case TFM__JF_SUM: return tfm__jx_sum(x, pos, v, a, out);
    case TFM__JF_TRIM: case TFM__JF_REPLACE: case TFM__JF_FORMAT: case TFM__JF_ESCAPE: case TFM__JF_E:
    case TFM__JF_UPPER: case TFM__JF_LOWER: case TFM__JF_CAPITALIZE: case TFM__JF_TITLE: case TFM__JF_STRING:
        return tfm__jx_strfilter(x, pos, id, v, a, out);
    default: break;
    }
    if (!tfm__jbind(x, a, p_none, tfm__jfilter_names[id], p)) return false;
    switch (id) {
    case TFM__JF_LENGTH: case TFM__JF_COUNT: return tfm__jlen(x, pos, v, out);
    case TFM__JF_SAFE:
        if (!tfm__jv_to_str(x, v, out)) return false;
        out->fn = TFM__JV_MARKUP;
        return true;
    case TFM__JF_ABS:
        if (v->type == TFM__JV_FLOAT) *out = tfm__jv_float(fabs(v->u.f));
        else if (tfm__jv_is_num(v) && v->u.i != INT64_MIN) *out = tfm__jv_int(v->u.i < 0 ? -v->u.i : v->u.i);
        else return tfm__jfail(&x->c, pos, "abs: bad operand type %s", tfm__jtype_name(v));
        return true;
    default: return tfm__jx_seqview(x, pos, id, v, out); /* first, last, list, reverse, items */
    }
}

/* --- evaluation --- */

TFM_PRIVATE bool tfm__jx_eval(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n, tfm__jv *out);
TFM_PRIVATE bool tfm__jx_exec(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n);

/* Arguments of a call, filter or test: positional values first, then keyword values. */
TFM_PRIVATE bool tfm__jx_args(tfm__jx *x, tfm__jframe *f, const tfm__jnode *list, size_t pos, tfm__jargs *a) {
    const tfm__jnode *n;
    size_t count = 0, i = 0, k = 0;
    memset(a, 0, sizeof *a);
    a->pos = pos;
    for (n = list; n; n = n->next) { count++; a->n_kw += n->kind == TFM__JN_KWARG; }
    a->n_pos = count - a->n_kw;
    if (!count) return true;
    a->v = TFM__CAST(tfm__jv *, tfm__jalloc(&x->c, count * sizeof(tfm__jv)));
    a->kw = TFM__CAST(const tfm__jnode **, tfm__jalloc(&x->c, count * sizeof(tfm__jnode *)));
    if (!a->v || !a->kw) return false;
    for (n = list; n; n = n->next) {
        if (n->kind == TFM__JN_KWARG) {
            a->kw[k] = n;
            if (!tfm__jx_eval(x, f, n->a, &a->v[a->n_pos + k++])) return false;
        } else if (!tfm__jx_eval(x, f, n, &a->v[i++])) {
            return false;
        }
    }
    return true;
}

/* Runs body with its output captured into a string (macros, set blocks). */
TFM_PRIVATE bool tfm__jx_capture(tfm__jx *x, tfm__jframe *f, const tfm__jnode *body, tfm__jv *out) {
    tfm__jbuf saved = x->out;
    bool ok;
    tfm__jbuf_init(&x->out, x->c.arena);
    x->out.limit = saved.limit;
    ok = tfm__jx_exec(x, f, body);
    *out = tfm__jv_s(x->out.p ? x->out.p : "", x->out.n);
    x->out = saved;
    return ok;
}

/* A macro call: parameters bound by position or name (missing ones take their default or
   are Undefined), the body rendered to a string. */
TFM_PRIVATE bool tfm__jx_call_macro(tfm__jx *x, const tfm__jv *m, const tfm__jargs *a, tfm__jv *out) {
    const tfm__jmacro *mac = TFM__CAST(const tfm__jmacro *, m->u.p);
    const tfm__jnode *param;
    tfm__jframe *f = tfm__jframe_new(x, mac->closure);
    size_t i = 0, k, n_params = 0;
    bool ok;
    if (!f) return false;
    for (param = mac->def->b; param; param = param->next) n_params++;
    if (a->n_pos > n_params)
        return tfm__jfail(&x->c, a->pos, "macro '%.*s' takes not more than %zu argument(s)",
                          (int)mac->def->value.n, mac->def->value.u.s, n_params);
    for (k = 0; k < a->n_kw; k++) {
        for (param = mac->def->b; param && !tfm__jv_eq(&param->value, &a->kw[k]->value); param = param->next) {}
        if (!param)
            return tfm__jfail(&x->c, a->kw[k]->pos, "macro '%.*s' has no parameter '%.*s'", (int)mac->def->value.n,
                              mac->def->value.u.s, (int)a->kw[k]->value.n, a->kw[k]->value.u.s);
    }
    for (param = mac->def->b; param; param = param->next, i++) {
        tfm__jv v = tfm__jv_undef(param->value.u.s, param->value.n);
        const tfm__jv *given = i < a->n_pos ? &a->v[i] : NULL;
        for (k = 0; !given && k < a->n_kw; k++)
            if (tfm__jv_eq(&param->value, &a->kw[k]->value)) given = &a->v[a->n_pos + k];
        if (given) v = *given;
        else if (param->a && !tfm__jx_eval(x, f, param->a, &v)) return false;
        if (!tfm__jframe_set(x, f, param->value.u.s, param->value.n, &v)) return false;
    }
    if (++x->c.depth > TFM__CHAT_MAX_DEPTH)
        return tfm__jfail(&x->c, a->pos, "macro calls nested too deeply (more than %d)", TFM__CHAT_MAX_DEPTH);
    ok = tfm__jx_capture(x, f, mac->def->c, out);
    x->c.depth--;
    x->ctl = TFM__JCTL_NONE;
    return ok;
}

/* range(stop) / range(start, stop[, step]) as a list, at most TFM__CHAT_MAX_RANGE long. */
TFM_PRIVATE bool tfm__jx_range(tfm__jx *x, const tfm__jargs *a, tfm__jv *out) {
    int64_t r[3] = {0, 0, 1}, i, count;
    size_t k;
    if (a->n_kw || a->n_pos < 1 || a->n_pos > 3) return tfm__jfail(&x->c, a->pos, "range takes 1 to 3 integers");
    for (k = 0; k < a->n_pos; k++)
        if (!tfm__jarg_int(x, a->pos, &a->v[k], 0, &r[a->n_pos == 1 ? 1 : k])) return false;
    if (r[2] == 0) return tfm__jfail(&x->c, a->pos, "range() arg 3 must not be zero");
    count = r[2] > 0 ? (r[1] > r[0] ? (r[1] - r[0] + r[2] - 1) / r[2] : 0)
                     : (r[0] > r[1] ? (r[0] - r[1] - r[2] - 1) / -r[2] : 0);
    if (count > TFM__CHAT_MAX_RANGE)
        return tfm__jfail(&x->c, a->pos, "range too big (more than %d items)", TFM__CHAT_MAX_RANGE);
    if (!tfm__jv_seq(x, TFM__JV_LIST, (size_t)count + 1, out)) return false;
    for (i = 0; i < count; i++) out->u.seq->v[i] = tfm__jv_int(r[0] + i * r[2]);
    out->u.seq->n = (size_t)count;
    return true;
}

/* The global functions: range, namespace, dict, raise_exception, strftime_now. */
TFM_PRIVATE bool tfm__jx_call_global(tfm__jx *x, int fn, const tfm__jargs *a, tfm__jv *out) {
    size_t k;
    if (fn == TFM__JG_RANGE) return tfm__jx_range(x, a, out);
    if (fn == TFM__JG_RAISE || fn == TFM__JG_STRFTIME) {
        tfm__jv s;
        if (a->n_pos != 1 || a->n_kw) return tfm__jfail(&x->c, a->pos, "this function takes one argument");
        if (fn == TFM__JG_STRFTIME) {
            if (a->v[0].type != TFM__JV_STR) return tfm__jfail(&x->c, a->pos, "strftime_now needs a format string");
            return tfm__jstrftime(x, a->pos, &a->v[0], out);
        }
        if (!tfm__jv_to_str(x, &a->v[0], &s)) return false;
        tfm__jfail(&x->c, TFM__JNOPOS, "%.*s", (int)(s.n > TFM__CHAT_ERROR_BYTES ? TFM__CHAT_ERROR_BYTES : s.n), s.u.s);
        return false;
    }
    /* namespace(mapping?, **kw) / dict(mapping?, **kw) */
    if (a->n_pos > 1 || (a->n_pos == 1 && a->v[0].type != TFM__JV_DICT))
        return tfm__jfail(&x->c, a->pos, "%s() takes an optional mapping and keyword arguments",
                          fn == TFM__JG_DICT ? "dict" : "namespace");
    if (!tfm__jv_seq(x, fn == TFM__JG_DICT ? TFM__JV_DICT : TFM__JV_NS, 0, out)) return false;
    for (k = 0; a->n_pos && k < a->v[0].u.seq->n; k += 2)
        if (!tfm__jpairs_set(x, out->u.seq, &a->v[0].u.seq->v[k], &a->v[0].u.seq->v[k + 1])) return false;
    for (k = 0; k < a->n_kw; k++)
        if (!tfm__jpairs_set(x, out->u.seq, &a->kw[k]->value, &a->v[a->n_pos + k])) return false;
    return true;
}

TFM_PRIVATE bool tfm__jx_call(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n, tfm__jv *out) {
    tfm__jv callee;
    tfm__jargs a;
    if (!tfm__jx_eval(x, f, n->a, &callee) || !tfm__jx_args(x, f, n->b, n->pos, &a)) return false;
    switch (callee.type) {
    case TFM__JV_MACRO: return tfm__jx_call_macro(x, &callee, &a, out);
    case TFM__JV_FUNC: return tfm__jx_call_global(x, callee.fn, &a, out);
    case TFM__JV_METHOD: return tfm__jx_method(x, &callee, &a, out);
    case TFM__JV_UNDEF: return tfm__jundefined(x, n->pos, &callee);
    default: return tfm__jfail(&x->c, n->pos, "'%s' object is not callable", tfm__jtype_name(&callee));
    }
}

/* int op int with Python's floor division and modulo; false on overflow or zero division. */
TFM_PRIVATE bool tfm__jint_op(tfm__jx *x, size_t pos, int op, int64_t a, int64_t b, tfm__jv *out) {
    int64_t r = 0, i;
    if ((op == TFM__JO_FLOORDIV || op == TFM__JO_MOD) && b == 0)
        return tfm__jfail(&x->c, pos, "integer division or modulo by zero");
    switch (op) {
    case TFM__JO_ADD: if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) goto overflow; r = a + b; break;
    case TFM__JO_SUB: if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) goto overflow; r = a - b; break;
    case TFM__JO_MUL:
        if (a != 0 && b != 0 && ((a == -1 && b == INT64_MIN) || (b == -1 && a == INT64_MIN) ||
                                 (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
                                        : (b > 0 ? a < INT64_MIN / b : a < INT64_MAX / b))))
            goto overflow;
        r = a * b;
        break;
    case TFM__JO_FLOORDIV: case TFM__JO_MOD:
        if (a == INT64_MIN && b == -1) goto overflow;
        r = op == TFM__JO_FLOORDIV ? a / b : a % b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) r = op == TFM__JO_FLOORDIV ? r - 1 : r + b;
        break;
    default: /* POW with b >= 0 */
        for (r = 1, i = 0; i < b; i++) {
            if (!tfm__jint_op(x, pos, TFM__JO_MUL, r, a, out)) return false;
            r = out->u.i;
            if (!tfm__jx_step(x, pos)) return false;
        }
        break;
    }
    *out = tfm__jv_int(r);
    return true;
overflow:
    return tfm__jfail(&x->c, pos, "integer overflow (tfm.h integers are 64-bit)");
}

/* Arithmetic on numbers: / is true division; // and % floor; ** with a negative exponent is
   a float. */
TFM_PRIVATE bool tfm__jx_arith(tfm__jx *x, size_t pos, int op, const tfm__jv *a, const tfm__jv *b, tfm__jv *out) {
    double p = tfm__jv_num(a), q = tfm__jv_num(b), r;
    bool ints = a->type != TFM__JV_FLOAT && b->type != TFM__JV_FLOAT;
    if (op == TFM__JO_DIV) {
        if (q == 0.0) return tfm__jfail(&x->c, pos, "division by zero");
        *out = tfm__jv_float(p / q);
        return true;
    }
    if (ints && (op != TFM__JO_POW || b->u.i >= 0)) return tfm__jint_op(x, pos, op, a->u.i, b->u.i, out);
    switch (op) {
    case TFM__JO_ADD: r = p + q; break;
    case TFM__JO_SUB: r = p - q; break;
    case TFM__JO_MUL: r = p * q; break;
    case TFM__JO_POW: r = pow(p, q); break;
    default:
        if (q == 0.0) return tfm__jfail(&x->c, pos, "float division or modulo by zero");
        r = op == TFM__JO_FLOORDIV ? floor(p / q) : fmod(p, q);
        if (op == TFM__JO_MOD && r != 0.0 && ((r < 0) != (q < 0))) r += q;
        break;
    }
    *out = tfm__jv_float(r);
    return true;
}

/* a + b on two sequences of one kind, or a * n repetition of a string or sequence. */
TFM_PRIVATE bool tfm__jx_seq_op(tfm__jx *x, size_t pos, int op, const tfm__jv *a, const tfm__jv *b, tfm__jv *out) {
    const tfm__jv *s = op == TFM__JO_ADD || a->type == TFM__JV_STR || tfm__jv_is_seq(a) ? a : b;
    const tfm__jv *count = s == a ? b : a;
    int64_t times = op == TFM__JO_ADD ? 1 : count->u.i, i;
    size_t k;
    if (s->type == TFM__JV_STR) {
        tfm__jbuf buf;
        tfm__jbuf_init(&buf, x->c.arena);
        if (op == TFM__JO_ADD) {
            if (!tfm__jbuf_put(&buf, a->u.s, a->n) || !tfm__jbuf_put(&buf, b->u.s, b->n)) return tfm__jfail_mem(&x->c);
        } else {
            for (i = 0; i < times; i++)
                if (!tfm__jx_step(x, pos) || !tfm__jbuf_put(&buf, s->u.s, s->n)) return x->c.result ? false : tfm__jfail_mem(&x->c);
        }
        *out = tfm__jv_s(buf.p ? buf.p : "", buf.n);
        out->fn = s->fn; /* Markup * n is Markup */
        return true;
    }
    if (!tfm__jv_seq(x, s->type, 0, out)) return false;
    for (i = 0; i < (op == TFM__JO_ADD ? 2 : times); i++) {
        const tfm__jseq *src = op == TFM__JO_ADD ? (i ? b : a)->u.seq : s->u.seq;
        for (k = 0; k < src->n; k++)
            if (!tfm__jx_step(x, pos) || !tfm__jseq_push(x, out->u.seq, &src->v[k])) return false;
    }
    return true;
}

/* a op b for + - * / // % ** ~. */
TFM_PRIVATE bool tfm__jx_binop(tfm__jx *x, size_t pos, int op, const tfm__jv *a, const tfm__jv *b, tfm__jv *out) {
    static const char *const names[] = {"+", "-", "*", "/", "//", "%", "**", "~"};
    if (op == TFM__JO_CONCAT) {
        tfm__jv sa, sb;
        tfm__jbuf buf;
        if (!tfm__jv_to_str(x, a, &sa) || !tfm__jv_to_str(x, b, &sb)) return false;
        tfm__jbuf_init(&buf, x->c.arena);
        if (!tfm__jbuf_put(&buf, sa.u.s, sa.n) || !tfm__jbuf_put(&buf, sb.u.s, sb.n)) return tfm__jfail_mem(&x->c);
        *out = tfm__jv_s(buf.p ? buf.p : "", buf.n);
        return true;
    }
    if (a->type == TFM__JV_UNDEF || b->type == TFM__JV_UNDEF) return tfm__jundefined(x, pos, a->type == TFM__JV_UNDEF ? a : b);
    if (tfm__jv_is_num(a) && tfm__jv_is_num(b)) return tfm__jx_arith(x, pos, op, a, b, out);
    if (op == TFM__JO_MOD && a->type == TFM__JV_STR) return tfm__jpercent(x, pos, a, b, out);
    if (op == TFM__JO_ADD && a->type == TFM__JV_STR && b->type == TFM__JV_STR && ((a->fn | b->fn) & TFM__JV_MARKUP)) {
        tfm__jv ea, eb; /* Markup + str: the str is escaped first (markupsafe) */
        if (!tfm__jescape(x, a, &ea) || !tfm__jescape(x, b, &eb) || !tfm__jx_seq_op(x, pos, op, &ea, &eb, out)) return false;
        out->fn = TFM__JV_MARKUP;
        return true;
    }
    if (op == TFM__JO_ADD && a->type == b->type && (a->type == TFM__JV_STR || tfm__jv_is_seq(a)))
        return tfm__jx_seq_op(x, pos, op, a, b, out);
    if (op == TFM__JO_MUL && ((a->type == TFM__JV_STR || tfm__jv_is_seq(a)) ? (b->type == TFM__JV_INT || b->type == TFM__JV_BOOL)
                                                                             : ((a->type == TFM__JV_INT || a->type == TFM__JV_BOOL) &&
                                                                                (b->type == TFM__JV_STR || tfm__jv_is_seq(b)))))
        return tfm__jx_seq_op(x, pos, op, a, b, out);
    return tfm__jfail(&x->c, pos, "unsupported operand type(s) for %s: '%s' and '%s'", names[op], tfm__jtype_name(a),
                      tfm__jtype_name(b));
}

/* a < b == c ... as Python chains them. */
TFM_PRIVATE bool tfm__jx_compare(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n, tfm__jv *out) {
    tfm__jv left, right;
    const tfm__jnode *op;
    bool r = true;
    int c;
    if (!tfm__jx_eval(x, f, n->a, &left)) return false;
    for (op = n->b; op && r; op = op->next) {
        if (!tfm__jx_eval(x, f, op->a, &right)) return false;
        if (op->op == TFM__JO_EQ || op->op == TFM__JO_NE) {
            r = tfm__jv_eq(&left, &right) == (op->op == TFM__JO_EQ);
        } else if (op->op == TFM__JO_IN || op->op == TFM__JO_NOTIN) {
            if (!tfm__jx_contains(x, op->pos, &left, &right, &r)) return false;
            r = r == (op->op == TFM__JO_IN);
        } else {
            if (!tfm__jv_order(&left, &right, &c)) {
                if (left.type == TFM__JV_UNDEF || right.type == TFM__JV_UNDEF)
                    return tfm__jundefined(x, op->pos, left.type == TFM__JV_UNDEF ? &left : &right);
                return tfm__jfail(&x->c, op->pos, "'<' not supported between '%s' and '%s'", tfm__jtype_name(&left),
                                  tfm__jtype_name(&right));
            }
            r = op->op == TFM__JO_LT ? c < 0 : op->op == TFM__JO_LE ? c <= 0 : op->op == TFM__JO_GT ? c > 0 : c >= 0;
        }
        left = right;
    }
    *out = tfm__jv_bool(r);
    return true;
}

/* A list, tuple or dict literal. */
TFM_PRIVATE bool tfm__jx_literal(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n, tfm__jv *out) {
    const tfm__jnode *item;
    tfm__jv k, v;
    if (!tfm__jv_seq(x, n->kind == TFM__JN_LIST ? TFM__JV_LIST : n->kind == TFM__JN_TUPLE ? TFM__JV_TUPLE : TFM__JV_DICT, 0, out))
        return false;
    for (item = n->b; item; item = item->next) {
        if (n->kind != TFM__JN_DICT) {
            if (!tfm__jx_eval(x, f, item, &v) || !tfm__jseq_push(x, out->u.seq, &v)) return false;
        } else if (!tfm__jx_eval(x, f, item->a, &k) || !tfm__jx_eval(x, f, item->b, &v) ||
                   !tfm__jpairs_set(x, out->u.seq, &k, &v)) {
            return false;
        }
    }
    return true;
}

/* Filter and test nodes: the operand, the arguments, then the function. */
TFM_PRIVATE bool tfm__jx_filter_test(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n, tfm__jv *out) {
    tfm__jv v;
    tfm__jargs a;
    bool r;
    if (!tfm__jx_eval(x, f, n->a, &v) || !tfm__jx_args(x, f, n->b, n->pos, &a)) return false;
    if (n->kind == TFM__JN_FILTER) return tfm__jx_filter(x, n->pos, n->op, &v, &a, out);
    if (a.n_kw || a.n_pos > 1) return tfm__jfail(&x->c, n->pos, "a test takes at most one argument");
    if (!tfm__jx_test(x, n->pos, n->op, &v, a.n_pos ? &a.v[0] : NULL, &r)) return false;
    *out = tfm__jv_bool(r);
    return true;
}

/* Subscripts: obj.name, obj[key], obj[a:b:c]. */
TFM_PRIVATE bool tfm__jx_access(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n, tfm__jv *out) {
    tfm__jv obj, key, bound[3];
    const tfm__jnode *part[3];
    int k;
    if (!tfm__jx_eval(x, f, n->a, &obj)) return false;
    if (n->kind == TFM__JN_ATTR) return tfm__jx_getattr(x, n->pos, &obj, n->value.u.s, n->value.n, out);
    if (n->kind == TFM__JN_ITEM) return tfm__jx_eval(x, f, n->b, &key) && tfm__jx_getitem(x, n->pos, &obj, &key, out);
    part[0] = n->b; part[1] = n->c; part[2] = n->d;
    for (k = 0; k < 3; k++) {
        bound[k] = tfm__jv_make(TFM__JV_NONE);
        if (part[k] && !tfm__jx_eval(x, f, part[k], &bound[k])) return false;
    }
    return tfm__jx_slice(x, n->pos, &obj, &bound[0], &bound[1], &bound[2], out);
}

/* Evaluates expression n into *out. */
TFM_PRIVATE bool tfm__jx_eval(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n, tfm__jv *out) {
    tfm__jv a, b;
    bool ok = true;
    if (!tfm__jx_step(x, n->pos)) return false;
    if (++x->c.depth > TFM__CHAT_MAX_DEPTH * 2) return tfm__jfail(&x->c, n->pos, "evaluation nested too deeply");
    switch (n->kind) {
    case TFM__JN_CONST: *out = n->value; break;
    case TFM__JN_NAME: *out = tfm__jframe_get(f, n->value.u.s, n->value.n); break;
    case TFM__JN_ATTR: case TFM__JN_ITEM: case TFM__JN_SLICE: ok = tfm__jx_access(x, f, n, out); break;
    case TFM__JN_CALL: ok = tfm__jx_call(x, f, n, out); break;
    case TFM__JN_FILTER: case TFM__JN_TEST: ok = tfm__jx_filter_test(x, f, n, out); break;
    case TFM__JN_NOT:
        if ((ok = tfm__jx_eval(x, f, n->a, &a))) *out = tfm__jv_bool(!tfm__jv_truthy(&a));
        break;
    case TFM__JN_NEG: case TFM__JN_POS:
        if (!(ok = tfm__jx_eval(x, f, n->a, &a))) break;
        if (!tfm__jv_is_num(&a)) { ok = tfm__jfail(&x->c, n->pos, "bad operand type for unary %c: '%s'", n->kind == TFM__JN_NEG ? '-' : '+', tfm__jtype_name(&a)); break; }
        b = tfm__jv_int(0);
        if (n->kind == TFM__JN_POS) *out = a.type == TFM__JV_BOOL ? tfm__jv_int(a.u.i) : a;
        else ok = tfm__jx_arith(x, n->pos, TFM__JO_SUB, &b, &a, out);
        if (ok && n->kind == TFM__JN_NEG && a.type == TFM__JV_FLOAT) *out = tfm__jv_float(-a.u.f);
        break;
    case TFM__JN_BINOP:
        ok = tfm__jx_eval(x, f, n->a, &a) && tfm__jx_eval(x, f, n->b, &b) && tfm__jx_binop(x, n->pos, n->op, &a, &b, out);
        break;
    case TFM__JN_AND: case TFM__JN_OR: /* the deciding operand itself, as Python */
        if (!(ok = tfm__jx_eval(x, f, n->a, out))) break;
        if (tfm__jv_truthy(out) == (n->kind == TFM__JN_OR)) break;
        ok = tfm__jx_eval(x, f, n->b, out);
        break;
    case TFM__JN_COMPARE: ok = tfm__jx_compare(x, f, n, out); break;
    case TFM__JN_COND:
        if (!(ok = tfm__jx_eval(x, f, n->a, &a))) break;
        if (tfm__jv_truthy(&a)) ok = tfm__jx_eval(x, f, n->b, out);
        else if (n->c) ok = tfm__jx_eval(x, f, n->c, out);
        else *out = tfm__jv_undef(NULL, 0);
        break;
    default: ok = tfm__jx_literal(x, f, n, out); break; /* LIST, TUPLE, DICT */
    }
    x->c.depth--;
    return ok;
}

/* --- statements --- */

/* Binds a for / set target (a name or a tuple of names) to v in frame f. */
TFM_PRIVATE bool tfm__jx_assign(tfm__jx *x, tfm__jframe *f, const tfm__jnode *target, const tfm__jv *v) {
    const tfm__jnode *t;
    tfm__jseq *items;
    size_t i = 0, n = 0;
    if (target->kind == TFM__JN_NAME) return tfm__jframe_set(x, f, target->value.u.s, target->value.n, v);
    for (t = target->b; t; t = t->next) n++;
    if (!tfm__jx_iter(x, target->pos, v, &items)) return false;
    if (items->n != n)
        return tfm__jfail(&x->c, target->pos, "cannot unpack %zu value(s) into %zu name(s)", items->n, n);
    for (t = target->b; t; t = t->next, i++)
        if (!tfm__jx_assign(x, f, t, &items->v[i])) return false;
    return true;
}

TFM_PRIVATE bool tfm__jx_set(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n) {
    tfm__jv v, ns;
    if (n->b ? !tfm__jx_eval(x, f, n->b, &v) : !tfm__jx_capture(x, f, n->c, &v)) return false;
    if (n->a->kind != TFM__JN_ATTR) return tfm__jx_assign(x, f, n->a, &v);
    ns = tfm__jframe_get(f, n->a->a->value.u.s, n->a->a->value.n);
    if (ns.type != TFM__JV_NS)
        return tfm__jfail(&x->c, n->pos, "cannot assign attribute on non-namespace object");
    return tfm__jpairs_set(x, ns.u.seq, &n->a->value, &v);
}

/* for target in iter [if cond]: a frame per iteration with target and loop bound. */
TFM_PRIVATE bool tfm__jx_for(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n) {
    tfm__jv it, cond, loopv;
    tfm__jseq *items, *kept;
    tfm__jloop *loop;
    tfm__jframe *g;
    size_t i;
    if (!tfm__jx_eval(x, f, n->b, &it) || !tfm__jx_iter(x, n->pos, &it, &items)) return false;
    if (n->e) { /* the filter runs first: loop.length counts what it keeps */
        if (!tfm__jv_seq(x, TFM__JV_LIST, 0, &cond)) return false;
        kept = cond.u.seq;
        for (i = 0; i < items->n; i++) {
            tfm__jv c;
            if (!(g = tfm__jframe_new(x, f)) || !tfm__jx_assign(x, g, n->a, &items->v[i]) ||
                !tfm__jx_eval(x, g, n->e, &c))
                return false;
            if (tfm__jv_truthy(&c) && !tfm__jseq_push(x, kept, &items->v[i])) return false;
        }
        items = kept;
    }
    if (items->n == 0) return !n->d || tfm__jx_exec(x, f, n->d);
    for (i = 0; i < items->n; i++) {
        if (!tfm__jx_step(x, n->pos) || !(g = tfm__jframe_new(x, f)) ||
            !(loop = TFM__CAST(tfm__jloop *, tfm__jalloc(&x->c, sizeof(tfm__jloop)))))
            return false;
        loop->items = items;
        loop->index0 = i;
        loopv = tfm__jv_make(TFM__JV_LOOP);
        loopv.u.p = loop;
        if (!tfm__jx_assign(x, g, n->a, &items->v[i]) || !tfm__jframe_set(x, g, "loop", 4, &loopv) ||
            !tfm__jx_exec(x, g, n->c))
            return false;
        if (x->ctl == TFM__JCTL_BREAK) { x->ctl = TFM__JCTL_NONE; break; }
        x->ctl = TFM__JCTL_NONE;
    }
    return true;
}

/* {% filter %}: the body's output through the filters. */
TFM_PRIVATE bool tfm__jx_filterblock(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n) {
    const tfm__jnode *flt;
    tfm__jargs a;
    tfm__jv v;
    if (!tfm__jx_capture(x, f, n->c, &v)) return false;
    for (flt = n->b; flt; flt = flt->next) {
        tfm__jv r;
        if (!tfm__jx_args(x, f, flt->b, flt->pos, &a) || !tfm__jx_filter(x, flt->pos, flt->op, &v, &a, &r)) return false;
        v = r;
    }
    return tfm__jv_write(x, &x->out, &v, false);
}

/* Runs a statement list, stopping early at break / continue. */
TFM_PRIVATE bool tfm__jx_exec(tfm__jx *x, tfm__jframe *f, const tfm__jnode *n) {
    tfm__jv v;
    bool ok = true;
    if (++x->c.depth > TFM__CHAT_MAX_DEPTH * 2) return tfm__jfail(&x->c, n ? n->pos : TFM__JNOPOS, "blocks nested too deeply");
    for (; ok && n && x->ctl == TFM__JCTL_NONE; n = n->next) {
        if (!(ok = tfm__jx_step(x, n->pos))) break;
        switch (n->kind) {
        case TFM__JN_DATA:
            ok = tfm__jbuf_put(&x->out, n->value.u.s, n->value.n) || tfm__jfail_mem(&x->c);
            break;
        case TFM__JN_OUTPUT:
            ok = tfm__jx_eval(x, f, n->a, &v) && (tfm__jv_write(x, &x->out, &v, false) || tfm__jfail_mem(&x->c));
            break;
        case TFM__JN_IF:
            if ((ok = tfm__jx_eval(x, f, n->a, &v))) ok = tfm__jv_truthy(&v) ? tfm__jx_exec(x, f, n->b) : tfm__jx_exec(x, f, n->c);
            break;
        case TFM__JN_FOR: ok = tfm__jx_for(x, f, n); break;
        case TFM__JN_SET: ok = tfm__jx_set(x, f, n); break;
        case TFM__JN_MACRO: {
            tfm__jmacro *m = TFM__CAST(tfm__jmacro *, tfm__jalloc(&x->c, sizeof(tfm__jmacro)));
            if (!(ok = m != NULL)) break;
            m->def = n;
            m->closure = f;
            v = tfm__jv_make(TFM__JV_MACRO);
            v.u.p = m;
            ok = tfm__jframe_set(x, f, n->value.u.s, n->value.n, &v);
            break;
        }
        case TFM__JN_FILTERBLOCK: ok = tfm__jx_filterblock(x, f, n); break;
        case TFM__JN_BREAK: x->ctl = TFM__JCTL_BREAK; break;
        default: x->ctl = TFM__JCTL_CONTINUE; break;
        }
    }
    x->c.depth--;
    return ok;
}

/* --- JSON input (messages_json, vars_json) to values --- */

typedef struct tfm__jjp {
    tfm__jx *x;
    const char *s;
    size_t n, at;
    const char *what;                   /* "messages_json" / "vars_json", for errors */
} tfm__jjp;

TFM_PRIVATE bool tfm__jjp_fail(tfm__jjp *p, const char *msg) {
    return tfm__jfail(&p->x->c, TFM__JNOPOS, "%s: %s at byte %zu", p->what, msg, p->at);
}

TFM_PRIVATE void tfm__jjp_ws(tfm__jjp *p) {
    while (p->at < p->n && (p->s[p->at] == ' ' || p->s[p->at] == '\t' || p->s[p->at] == '\n' || p->s[p->at] == '\r')) p->at++;
}

/* Four hex digits at s, or -1. */
TFM_PRIVATE long tfm__jjp_hex4(const char *s, size_t left) {
    long v = 0;
    int i;
    if (left < 4) return -1;
    for (i = 0; i < 4; i++) {
        if (tfm__jhex(s[i]) < 0) return -1;
        v = v * 16 + tfm__jhex(s[i]);
    }
    return v;
}

/* A JSON string (at the opening quote) into the arena; \u surrogate pairs combine. */
TFM_PRIVATE bool tfm__jjp_string(tfm__jjp *p, tfm__jv *out) {
    tfm__jbuf b;
    char u[4];
    tfm__jbuf_init(&b, p->x->c.arena);
    for (p->at++;; p->at++) {
        char c;
        if (p->at >= p->n) return tfm__jjp_fail(p, "unterminated string");
        c = p->s[p->at];
        if (c == '"') break;
        if ((unsigned char)c < 0x20) return tfm__jjp_fail(p, "control character in a string");
        if (c == '\\') {
            const char *e = p->at + 1 < p->n ? strchr("\"\\/bfnrtu", p->s[p->at + 1]) : NULL;
            long cp, lo;
            if (!e || !*e) return tfm__jjp_fail(p, "bad escape");
            p->at++;
            if (*e != 'u') { c = "\"\\/\b\f\n\r\t"[e - "\"\\/bfnrtu"]; }
            else {
                if ((cp = tfm__jjp_hex4(p->s + p->at + 1, p->n - p->at - 1)) < 0) return tfm__jjp_fail(p, "bad \\u escape");
                p->at += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && p->at + 6 < p->n && p->s[p->at + 1] == '\\' && p->s[p->at + 2] == 'u' &&
                    (lo = tfm__jjp_hex4(p->s + p->at + 3, p->n - p->at - 3)) >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p->at += 6;
                } else if (cp >= 0xD800 && cp < 0xE000) {
                    cp = 0xFFFD;
                }
                if (!tfm__jbuf_put(&b, u, tfm__jput_utf8((uint32_t)cp, u))) return tfm__jfail_mem(&p->x->c);
                continue;
            }
        }
        if (!tfm__jbuf_putc(&b, c)) return tfm__jfail_mem(&p->x->c);
    }
    p->at++;
    *out = tfm__jv_s(b.p ? b.p : "", b.n);
    return true;
}

/* A JSON number: an int when it has no fraction or exponent and fits in 64 bits. */
TFM_PRIVATE bool tfm__jjp_number(tfm__jjp *p, tfm__jv *out) {
    size_t start = p->at;
    bool is_float = false;
    if (p->at < p->n && p->s[p->at] == '-') p->at++;
    while (p->at < p->n && (tfm__jis_digit(p->s[p->at]) || strchr(".eE+-", p->s[p->at]))) {
        is_float |= !tfm__jis_digit(p->s[p->at]);
        p->at++;
    }
    if (!is_float) {
        bool neg = p->s[start] == '-';
        int64_t i;
        if (p->at > start + neg && tfm__jstrtoi(p->s + start + neg, p->at - start - neg, &i)) {
            *out = tfm__jv_int(neg ? -i : i);
            return true;
        }
    }
    *out = tfm__jv_make(TFM__JV_FLOAT);
    if (!tfm__jstrtod(p->s + start, p->at - start, &out->u.f)) return tfm__jjp_fail(p, "bad number");
    return true;
}

TFM_PRIVATE bool tfm__jjp_value(tfm__jjp *p, tfm__jv *out, int depth);

/* A JSON array or object (at its bracket); duplicate keys keep the last value. */
TFM_PRIVATE bool tfm__jjp_container(tfm__jjp *p, tfm__jv *out, int depth) {
    bool obj = p->s[p->at] == '{';
    tfm__jv k, v;
    if (!tfm__jv_seq(p->x, obj ? TFM__JV_DICT : TFM__JV_LIST, 0, out)) return false;
    p->at++;
    tfm__jjp_ws(p);
    if (p->at < p->n && p->s[p->at] == (obj ? '}' : ']')) { p->at++; return true; }
    for (;;) {
        tfm__jjp_ws(p);
        if (obj) {
            if (p->at >= p->n || p->s[p->at] != '"') return tfm__jjp_fail(p, "expected a key");
            if (!tfm__jjp_string(p, &k)) return false;
            tfm__jjp_ws(p);
            if (p->at >= p->n || p->s[p->at] != ':') return tfm__jjp_fail(p, "expected ':'");
            p->at++;
        }
        if (!tfm__jjp_value(p, &v, depth + 1)) return false;
        if (obj ? !tfm__jpairs_set(p->x, out->u.seq, &k, &v) : !tfm__jseq_push(p->x, out->u.seq, &v)) return false;
        tfm__jjp_ws(p);
        if (p->at < p->n && p->s[p->at] == ',') { p->at++; continue; }
        if (p->at < p->n && p->s[p->at] == (obj ? '}' : ']')) { p->at++; return true; }
        return tfm__jjp_fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

TFM_PRIVATE bool tfm__jjp_value(tfm__jjp *p, tfm__jv *out, int depth) {
    static const char *const words[] = {"true", "false", "null"};
    int k;
    tfm__jjp_ws(p);
    if (depth > TFM__CHAT_MAX_DEPTH) return tfm__jjp_fail(p, "nested too deeply");
    if (p->at >= p->n) return tfm__jjp_fail(p, "unexpected end");
    if (!tfm__jx_step(p->x, TFM__JNOPOS)) return false;
    if (p->s[p->at] == '"') return tfm__jjp_string(p, out);
    if (p->s[p->at] == '{' || p->s[p->at] == '[') return tfm__jjp_container(p, out, depth);
    if (p->s[p->at] == '-' || tfm__jis_digit(p->s[p->at])) return tfm__jjp_number(p, out);
    for (k = 0; k < 3; k++) {
        size_t len = strlen(words[k]);
        if (p->n - p->at >= len && memcmp(p->s + p->at, words[k], len) == 0) {
            p->at += len;
            *out = k == 2 ? tfm__jv_make(TFM__JV_NONE) : tfm__jv_bool(k == 0);
            return true;
        }
    }
    return tfm__jjp_fail(p, "unexpected character");
}

/* A whole JSON text that must be a value of type want (LIST or DICT). */
TFM_PRIVATE bool tfm__jjson_read(tfm__jx *x, const char *s, size_t n, const char *what, int want, tfm__jv *out) {
    tfm__jjp p;
    p.x = x;
    p.s = s;
    p.n = n;
    p.at = 0;
    p.what = what;
    if (!tfm__jjp_value(&p, out, 0)) return false;
    tfm__jjp_ws(&p);
    if (p.at != n) return tfm__jjp_fail(&p, "trailing characters");
    if (out->type != want) return tfm__jjp_fail(&p, want == TFM__JV_LIST ? "not an array" : "not an object");
    return true;
}

/* --- the tfm_chat object --- */

struct tfm_chat {
    tfm_allocator allocator;
    tfm_logger logger;
    tfm__jarena arena;                  /* the normalized source and the tree */
    const char *src;
    size_t src_bytes;
    const tfm__jnode *root;
    tfm__jv bos, eos;                   /* Undefined when not given */
    size_t max_output_bytes, max_memory_bytes;
    char last_error[TFM__CHAT_ERROR_BYTES];
};

/* The template as jinja2 reads it: \r\n and \r become \n, one trailing newline goes. */
TFM_PRIVATE char *tfm__jnormalize(tfm__jctx *x, const char *s, size_t n, size_t *out_n) {
    char *p = TFM__CAST(char *, tfm__jalloc(x, n + 1));
    size_t i, k = 0;
    if (!p) return NULL;
    for (i = 0; i < n; i++) {
        if (s[i] == '\r') {
            p[k++] = '\n';
            if (i + 1 < n && s[i + 1] == '\n') i++;
        } else {
            p[k++] = s[i];
        }
    }
    if (k > 0 && p[k - 1] == '\n') k--;
    p[k] = '\0';
    *out_n = k;
    return p;
}

/* Lexes (tokens in a scratch arena) and parses the template into chat->arena. */
TFM_PRIVATE tfm_result tfm__chat_compile(tfm_chat *chat, const char *text, size_t text_bytes) {
    tfm__jctx x;
    tfm__jarena scratch;
    tfm__jlexer L;
    tfm__jparser P;
    tfm__jnode *root = NULL;
    memset(&x, 0, sizeof x);
    memset(&scratch, 0, sizeof scratch);
    scratch.allocator = chat->allocator;
    scratch.limit = chat->max_memory_bytes;
    x.arena = &chat->arena;
    if ((chat->src = tfm__jnormalize(&x, text, text_bytes, &chat->src_bytes)) != NULL) {
        x.src = chat->src;
        x.src_bytes = chat->src_bytes;
        memset(&L, 0, sizeof L);
        L.x = &x;
        x.arena = &scratch;
        if (tfm__jlex(&L)) {
            x.arena = &chat->arena;
            memset(&P, 0, sizeof P);
            P.x = &x;
            P.t = L.tok;
            if (tfm__jp_body(&P, NULL, &root)) chat->root = root;
        }
    }
    tfm__ja_free(&scratch);
    if (x.result != TFM_OK) memcpy(chat->last_error, x.error, sizeof x.error);
    return x.result;
}

/* The variables transformers passes: messages, tools=None, documents=None,
   add_generation_prompt, bos_token / eos_token, then vars_json's. */
TFM_PRIVATE bool tfm__jx_context(tfm__jx *x, const tfm_chat *chat, const tfm_chat_args *args, tfm__jframe *f) {
    tfm__jv v, msgs, none = tfm__jv_make(TFM__JV_NONE);
    size_t i, k;
    if (args->messages_json) {
        if (!tfm__jjson_read(x, args->messages_json, args->messages_json_bytes, "messages_json", TFM__JV_LIST, &msgs)) return false;
    } else {
        if (!tfm__jv_seq(x, TFM__JV_LIST, args->n_messages + 1, &msgs)) return false;
        for (i = 0; i < args->n_messages; i++) {
            const tfm_chat_message *m = &args->messages[i];
            tfm__jv d, key, val;
            if (!tfm__jv_seq(x, TFM__JV_DICT, 4, &d)) return false;
            key = tfm__jv_s("role", 4);
            val = tfm__jv_s(m->role ? m->role : "", m->role ? m->role_bytes : 0);
            if (!tfm__jpairs_set(x, d.u.seq, &key, &val)) return false;
            key = tfm__jv_s("content", 7);
            val = m->content ? tfm__jv_s(m->content, m->content_bytes) : none;
            if (!tfm__jpairs_set(x, d.u.seq, &key, &val)) return false;
            msgs.u.seq->v[msgs.u.seq->n++] = d;
        }
    }
    v = tfm__jv_bool(args->add_generation_prompt);
    if (!tfm__jframe_set(x, f, "messages", 8, &msgs) || !tfm__jframe_set(x, f, "tools", 5, &none) ||
        !tfm__jframe_set(x, f, "documents", 9, &none) || !tfm__jframe_set(x, f, "add_generation_prompt", 21, &v))
        return false;
    if (chat->bos.type == TFM__JV_STR && !tfm__jframe_set(x, f, "bos_token", 9, &chat->bos)) return false;
    if (chat->eos.type == TFM__JV_STR && !tfm__jframe_set(x, f, "eos_token", 9, &chat->eos)) return false;
    if (!args->vars_json) return true;
    if (!tfm__jjson_read(x, args->vars_json, args->vars_json_bytes, "vars_json", TFM__JV_DICT, &v)) return false;
    for (k = 0; k < v.u.seq->n; k += 2)
        if (!tfm__jpairs_set(x, &f->vars, &v.u.seq->v[k], &v.u.seq->v[k + 1])) return false;
    return true;
}

/* The global functions, in a frame under the variables. */
TFM_PRIVATE bool tfm__jx_globals(tfm__jx *x, tfm__jframe *f) {
    static const char *const names[] = {"range", "namespace", "dict", "raise_exception", "strftime_now"};
    int k;
    for (k = 0; k < 5; k++) {
        tfm__jv fn = tfm__jv_make(TFM__JV_FUNC);
        fn.fn = k;
        if (k == TFM__JG_STRFTIME && !x->date) continue;
        if (!tfm__jframe_set(x, f, names[k], strlen(names[k]), &fn)) return false;
    }
    return true;
}

/* One render into a fresh arena; out gets the text when out_cap allows. */
TFM_PRIVATE tfm_result tfm__chat_render(tfm_chat *chat, const tfm_chat_args *args, char *out, size_t out_cap,
                                        size_t *out_bytes) {
    tfm__jarena arena;
    tfm__jx x;
    tfm__jframe *globals, *vars;
    memset(&arena, 0, sizeof arena);
    arena.allocator = chat->allocator;
    arena.limit = chat->max_memory_bytes;
    memset(&x, 0, sizeof x);
    x.c.arena = &arena;
    x.c.src = chat->src;
    x.c.src_bytes = chat->src_bytes;
    x.date = args->date.year ? &args->date : NULL;
    tfm__jbuf_init(&x.out, &arena);
    x.out.limit = chat->max_output_bytes;
    if ((globals = tfm__jframe_new(&x, NULL)) && (vars = tfm__jframe_new(&x, globals)) &&
        tfm__jx_globals(&x, globals) && tfm__jx_context(&x, chat, args, vars) && tfm__jx_exec(&x, vars, chat->root)) {
        *out_bytes = x.out.n;
        if (out && out_cap >= x.out.n) {
            if (x.out.n) memcpy(out, x.out.p, x.out.n);
        } else if (out) {
            x.c.result = TFM_ERR_INVALID_ARG;
            snprintf(x.c.error, sizeof x.c.error, "the prompt needs %zu bytes, out_cap is %zu", x.out.n, out_cap);
        }
    }
    memcpy(chat->last_error, x.c.error, sizeof x.c.error);
    tfm__ja_free(&arena);
    return x.c.result;
}

/* The chat template, bos_token and eos_token a .tfm file stores (NULL / 0 when absent). */
TFM_PRIVATE void tfm__model_chat(const tfm_model *model, const char **text, size_t *text_bytes, const char **bos,
                                 size_t *bos_bytes, const char **eos, size_t *eos_bytes) {
    const tfm__tokenizer *t = tfm__model_tokenizer(model);
    *text = t && t->chat_template_bytes ? t->chat_text : NULL;
    *text_bytes = t ? t->chat_template_bytes : 0;
    *bos = t && t->chat_bos_bytes ? t->chat_text + t->chat_template_bytes : NULL;
    *bos_bytes = t ? t->chat_bos_bytes : 0;
    *eos = t && t->chat_eos_bytes ? t->chat_text + t->chat_template_bytes + t->chat_bos_bytes : NULL;
    *eos_bytes = t ? t->chat_eos_bytes : 0;
}

TFM_API tfm_result tfm_model_chat_template(const tfm_model *model, const char **text, size_t *text_bytes) {
    const char *bos, *eos;
    size_t nb, ne;
    if (!model || !text || !text_bytes) return TFM_ERR_INVALID_ARG;
    tfm__model_chat(model, text, text_bytes, &bos, &nb, &eos, &ne);
    return *text ? TFM_OK : TFM_ERR_UNSUPPORTED;
}

/* Resolves the desc: the template and tokens from desc, else from desc->model; limits. */
TFM_PRIVATE tfm_result tfm__chat_desc_defaults(const tfm_chat_desc *d, tfm_chat_desc *out) {
    const char *text = NULL, *bos = NULL, *eos = NULL;
    size_t text_bytes = 0, bos_bytes = 0, eos_bytes = 0;
    *out = *d;
    if (d->model) tfm__model_chat(d->model, &text, &text_bytes, &bos, &bos_bytes, &eos, &eos_bytes);
    if (!d->template_text) { out->template_text = text; out->template_bytes = text_bytes; }
    if (!d->bos_token) { out->bos_token = bos; out->bos_token_bytes = bos_bytes; }
    if (!d->eos_token) { out->eos_token = eos; out->eos_token_bytes = eos_bytes; }
    if (!out->max_output_bytes) out->max_output_bytes = TFM__CHAT_OUTPUT_DEFAULT;
    if (!out->max_memory_bytes) out->max_memory_bytes = TFM__CHAT_MEMORY_DEFAULT;
    if (!tfm__allocator_valid(&d->allocator))
        return tfm__log(&d->logger, TFM_ERR_INVALID_ARG, "chat: set both allocator callbacks or neither");
    if (!out->template_text)
        return tfm__log(&d->logger, d->model ? TFM_ERR_UNSUPPORTED : TFM_ERR_INVALID_ARG,
                        d->model ? "chat: the model file has no chat template" : "chat: no template_text");
    return TFM_OK;
}

/* Copies s into the chat's arena as the string value *v (Undefined when s is NULL). */
TFM_PRIVATE bool tfm__chat_token(tfm_chat *chat, const char *s, size_t n, tfm__jv *v) {
    char *p;
    *v = tfm__jv_undef(NULL, 0);
    if (!s) return true;
    if (!(p = TFM__CAST(char *, tfm__ja_alloc(&chat->arena, n + 1)))) return false;
    if (n) memcpy(p, s, n);
    *v = tfm__jv_s(p, n);
    return true;
}

TFM_API tfm_result tfm_chat_create(const tfm_chat_desc *desc, tfm_chat **out_chat) {
    tfm_chat_desc d;
    tfm_chat *chat;
    tfm_result r;
    if (out_chat) *out_chat = NULL;
    if (!desc || !out_chat) return TFM_ERR_INVALID_ARG;
    if ((r = tfm__chat_desc_defaults(desc, &d)) != TFM_OK) return r;
    chat = TFM__CAST(tfm_chat *, tfm__alloc(&d.allocator, sizeof(tfm_chat)));
    if (!chat) return tfm__log(&d.logger, TFM_ERR_OUT_OF_MEMORY, "chat: out of memory");
    memset(chat, 0, sizeof *chat);
    chat->allocator = d.allocator;
    chat->logger = d.logger;
    chat->arena.allocator = d.allocator;
    chat->arena.limit = d.max_memory_bytes;
    chat->max_output_bytes = d.max_output_bytes;
    chat->max_memory_bytes = d.max_memory_bytes;
    r = tfm__chat_compile(chat, d.template_text, d.template_bytes);
    if (r == TFM_OK && (!tfm__chat_token(chat, d.bos_token, d.bos_token_bytes, &chat->bos) ||
                        !tfm__chat_token(chat, d.eos_token, d.eos_token_bytes, &chat->eos)))
        r = TFM_ERR_OUT_OF_MEMORY;
    if (r != TFM_OK) {
        tfm__log(&d.logger, r, "chat template: %s", r == TFM_ERR_OUT_OF_MEMORY && !chat->last_error[0]
                                                        ? "out of memory" : chat->last_error);
        tfm_chat_destroy(chat);
        return r;
    }
    *out_chat = chat;
    return TFM_OK;
}

TFM_API void tfm_chat_destroy(tfm_chat *chat) {
    tfm_allocator a;
    if (!chat) return;
    a = chat->allocator;
    tfm__ja_free(&chat->arena);
    tfm__free(&a, chat, sizeof(tfm_chat));
}

TFM_API tfm_result tfm_chat_render(tfm_chat *chat, const tfm_chat_args *args, char *out, size_t out_cap,
                                   size_t *out_bytes) {
    const tfm_chat_date *d;
    tfm_result r;
    if (!chat || !args || !out_bytes || (args->n_messages && !args->messages)) return TFM_ERR_INVALID_ARG;
    d = &args->date;
    if (d->year != 0 && !(d->year > 0 && d->year <= 9999 && d->month >= 1 && d->month <= 12 && d->day >= 1 &&
                          d->day <= 31 && d->hour >= 0 && d->hour < 24 && d->minute >= 0 && d->minute < 60 &&
                          d->second >= 0 && d->second <= 60)) {
        snprintf(chat->last_error, sizeof chat->last_error, "args.date is not a valid date");
        return tfm__log(&chat->logger, TFM_ERR_INVALID_ARG, "chat: %s", chat->last_error);
    }
    r = tfm__chat_render(chat, args, out, out_cap, out_bytes);
    if (r != TFM_OK) tfm__log(&chat->logger, r, "chat template: %s", chat->last_error);
    return r;
}

TFM_API const char *tfm_chat_last_error(const tfm_chat *chat) { return chat ? chat->last_error : ""; }

/* >>sampler --------------------------------------------------------------------------------------
   Picks the next token from logits. Order of the steps (each optional except the last):
     1. repetition penalty on tokens in the last repeat_last_n accepted (CTRL / llama.cpp style:
        a positive logit is divided by the penalty, a negative one multiplied, once per token)
     2. temperature 0: argmax (lowest id on ties), done; else logits / temperature (in step 4)
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

/* Steps 3-7 on val[0..n) (penalized logits); inv_t = 1 / temperature is applied inside the
   softmax as e^((v - max) / T), which stays finite for any finite logits and temperature (the
   order of the logits, all that top-k needs, does not depend on T). Returns the drawn id. */
TFM_PRIVATE int32_t tfm__draw(tfm_sampler *s, int n, float inv_t) {
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
    if (max == INFINITY)                       /* a certain token: the first +inf */
        for (i = 0; i < cnt; i++)
            if (s->val[s->idx[i]] == INFINITY) return s->idx[i];
    for (i = 0; i < cnt; i++) { /* step 4 (unnormalized: p_max = 1) */
        float p = expf((s->val[s->idx[i]] - max) * inv_t);
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
    case TFM_ERR_TEMPLATE: return "chat template error";
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
        m->layers = TFM__CAST(tfm__layer *, tfm__at(m, layers_at));
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
    if (!r && m->tokenizer) {
        tfm__tokenizer_info(m->tokenizer, &m->config.n_tokens, &m->config.bos_id, &m->config.eos_id);
        m->config.add_bos = (m->tokenizer->flags & TFM_TOKFLAG_ADD_BOS) && m->config.bos_id >= 0;
    }
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
    if (!s)
        return tfm__log(&model->logger, TFM_ERR_OUT_OF_MEMORY, "session: cannot allocate %zu bytes", plan.bytes);
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
    s->n_tasks = d.n_threads > 1 ? d.n_threads * TFM__TASKS_PER_THREAD : 1;
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

/* Arguments are all checked before anything is evaluated. Tokens go through the layers in
   batches of TFM__BATCH; n_tokens == 0 only rewinds (n_past = pos). When should_abort cancels,
   n_past counts the batches that finished, so the caller can continue from there. */
TFM_API tfm_result tfm_session_eval(tfm_session *s, const int32_t *tokens, int n_tokens, int pos,
                                    float *logits_all) {
    int i, n_vocab;
    tfm_result r;
    if (!s) return TFM_ERR_INVALID_ARG;
    s->last_error[0] = '\0';
    n_vocab = s->model->config.n_vocab;
    if (n_tokens < 0 || (n_tokens > 0 && !tokens))
        return tfm__session_fail(s, TFM_ERR_INVALID_ARG, "eval: %d tokens at %p", n_tokens,
                                 (const void *)tokens);
    if (pos < 0 || pos > s->n_past)
        return tfm__session_fail(s, TFM_ERR_INVALID_ARG, "eval: pos %d, but only %d positions are evaluated",
                                 pos, s->n_past);
    if (n_tokens > s->n_ctx - pos)
        return tfm__session_fail(s, TFM_ERR_CONTEXT_FULL, "eval: positions %d..%lld pass n_ctx %d", pos,
                                 (long long)pos + n_tokens - 1, s->n_ctx); /* no int overflow */
    for (i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return tfm__session_fail(s, TFM_ERR_INVALID_ARG, "eval: token %d (index %d) is outside [0, %d)",
                                     (int)tokens[i], i, n_vocab);
    s->n_past = pos;
    if ((r = tfm__eval_team(s, tokens, n_tokens, pos, logits_all)) != TFM_OK)
        return tfm__session_fail(s, r, "eval: cancelled at position %d", s->n_past);
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

/* For logits[0..n): *max_out = m = max_i l_i, returns log sum_i e^(l_i - m) (summed in double).
   Keeping m apart avoids rounding l_i - lse when the logits are large. */
TFM_PRIVATE double tfm__log_sum_exp(const float *logits, int n, float *max_out) {
    float m = logits[0];
    double sum = 0.0;
    int i;
    for (i = 1; i < n; i++) m = logits[i] > m ? logits[i] : m;
    *max_out = m;
    if (!(m > -INFINITY) || !(m < INFINITY)) return 0.0;
    for (i = 0; i < n; i++) sum += exp((double)(logits[i] - m));
    return log(sum);
}

TFM_API void tfm_softmax(const float *logits, float *probs, int n) {
    float m;
    double lse;
    int i;
    if (!logits || !probs || n <= 0) return;
    lse = tfm__log_sum_exp(logits, n, &m);
    for (i = 0; i < n; i++) probs[i] = (float)exp((double)(logits[i] - m) - lse);
}

TFM_API void tfm_log_softmax(const float *logits, float *log_probs, int n) {
    float m;
    double lse;
    int i;
    if (!logits || !log_probs || n <= 0) return;
    lse = tfm__log_sum_exp(logits, n, &m);
    for (i = 0; i < n; i++) log_probs[i] = (float)((double)(logits[i] - m) - lse);
}

TFM_API float tfm_cross_entropy(const float *logits, int n, int32_t target) {
    float m;
    double lse;
    if (!logits || n <= 0 || target < 0 || target >= n) return NAN;
    lse = tfm__log_sum_exp(logits, n, &m);
    return (float)(lse - (double)(logits[target] - m));
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
    s->recent = TFM__CAST(int32_t *, tfm__at(s, at_recent));
    s->val = TFM__CAST(float *, tfm__at(s, at_val));
    s->idx = TFM__CAST(int32_t *, tfm__at(s, at_idx));
    s->mark = TFM__CAST(unsigned char *, tfm__at(s, at_mark));
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
    if (s->temperature == 0.0f || !(1.0f / s->temperature < INFINITY)) { /* greedy, or T so small it is */
        for (i = 1; i < n; i++)
            if (s->val[i] > s->val[best]) best = (int32_t)i;
    } else {
        best = tfm__draw(s, n, 1.0f / s->temperature);
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
