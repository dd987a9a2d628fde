/* convert_llama2c.c - llama2.c checkpoints and tokenizer.bin for tfm-convert.

   Through tools/convert.h it uses tfm-convert's checkpoint, plan, tokenizer and writer code,
   so a llama2.c file takes the same path to disk as a Hugging Face one. Formats as llama2.c writes them (export.py, tokenizer.py, run.c @ 350e04fe;
   tfm.h's REFERENCE.md D.2):

   version 0 ("legacy", the format run.c reads): seven int32, no magic
       dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size (< 0: the classifier is not
       shared with the embedding), seq_len
     then float32, each per-layer array stacked over the layers, W as [out, in]:
       token embedding [vocab, dim]; attention RMSNorm [L, dim]; wq [L, dim, dim];
       wk, wv [L, kv_dim, dim]; wo [L, dim, dim]; FFN RMSNorm [L, dim]; w1 [L, hidden, dim];
       w2 [L, dim, hidden]; w3 [L, hidden, dim]; final RMSNorm [dim];
       two RoPE tables [seq_len, head_size / 2] (cos, sin; skipped: tfm.h builds its own);
       classifier [vocab, dim] only when not shared.
   version 1: a 256-byte header: uint32 magic 0x616b3432 ("ak42"), int32 version = 1, the same
     seven int32 (vocab_size positive), uint8 shared_classifier, zero padding; then float32:
       all attention norms, all FFN norms, final norm, embedding, wq.., wk.., wv.., wo..,
       w1.., w2.., w3.., classifier (when not shared). No RoPE tables.
   (Version 2, int8 for runq.c, is refused.) The header is validated, then the file size must
   equal exactly what the header implies: anything else is an error, never a guess.

   The model (run.c's forward()) as .tfm fields: Llama, RMSNorm with eps 1e-5, sequential
   residual, no biases; FFN gated SiLU: hb = silu(w1 x) * (w3 x), out = w2 hb, so w1 = w_gate,
   w3 = w_up, w2 = w_down; n_kv_heads from the header (GQA); RoPE interleaved on pairs
   (2j, 2j + 1) of every head (Meta's q/k order, kept as is) with rope_dim = head_size and
   theta 10000: run.c turns dims i, i + 1 (i even) by pos * 10000^-((i % head_size) / head_size),
   and with i % head_size = 2j that is tfm.h's theta_j = base^(-2j / rope_dim).

   tokenizer.bin: int32 max_token_length, then for each of the model's vocab_size tokens (the
   file holds no count) float32 score, int32 byte length, the bytes. Into a TFM_TOKENIZER_SPM
   blob: scores kept; "<0xNN>" tokens become the byte NN with TFM_TOKATTR_BYTE; the BOS/EOS
   texts "\n<s>\n" / "\n</s>\n" become "<s>" / "</s>" (TFM_TOKATTR_SPECIAL, bos_id / eos_id,
   ids 1 and 2 in llama2.c's tokenizers); "<unk>" is special and unk_id; flags PREFIX_SPACE (the
   dummy prefix run.c adds) and ADD_BOS (run.c starts every prompt with BOS). */

#include "tools/convert.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TC_L2C_MAGIC 0x616b3432u  /* "ak42" as a little-endian uint32 */
#define TC_L2C_V0_HEADER_BYTES 28 /* seven int32 */
#define TC_L2C_V1_HEADER_BYTES 256
#define TC_L2C_NORM_EPS 1e-5f     /* run.c rmsnorm */
#define TC_L2C_ROPE_THETA 10000.0f
#define TC_L2C_NAME_BYTES 48

typedef struct tc_l2c_header {
    int version;                 /* 0 or 1 */
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared;                  /* classifier tied to the embedding */
    uint64_t header_bytes;
} tc_l2c_header;

/* 1 if path is a readable file that may be llama2.c's: the "ak42" magic, or any other file of
   at least 4 bytes that is not GGUF (version 0 has no magic; its header and size are checked
   when it is converted). A directory reads as nothing here: 0. */
int tc_l2c_sniff(const char *path) {
    unsigned char m[4];
    FILE *f = fopen(path, "rb");
    size_t n;
    if (!f) return 0;
    n = fread(m, 1, sizeof m, f);
    fclose(f);
    return n == sizeof m && memcmp(m, "GGUF", 4) != 0;
}

/* Reads and checks the header; fills the .tfm fields of hp. */
static int tc_l2c_read_header(FILE *f, const char *path, tc_l2c_header *h, tc_hparams *hp) {
    unsigned char b[TC_L2C_V1_HEADER_BYTES];
    int32_t v[7];
    size_t n = fread(b, 1, sizeof b, f), at, i;
    memset(h, 0, sizeof *h);
    if (n >= 8 && tc_rd_u32(b) == TC_L2C_MAGIC) {
        int32_t version = (int32_t)tc_rd_u32(b + 4);
        if (version != 1) {
            tc_error("%s: llama2.c checkpoint version %d is not supported (0 and 1 are; version 2 "
                     "is runq.c's int8: export float32 with export.py --version 1)", path,
                     (int)version);
            return 0;
        }
        if (n < TC_L2C_V1_HEADER_BYTES) {
            tc_error("%s: %lu bytes, shorter than the 256-byte llama2.c version 1 header", path,
                     (unsigned long)n);
            return 0;
        }
        h->version = 1;
        h->header_bytes = TC_L2C_V1_HEADER_BYTES;
        at = 8;
    } else {
        if (n < TC_L2C_V0_HEADER_BYTES) {
            tc_error("%s: %lu bytes, shorter than a llama2.c header (seven int32)", path,
                     (unsigned long)n);
            return 0;
        }
        h->header_bytes = TC_L2C_V0_HEADER_BYTES;
        at = 0;
    }
    for (i = 0; i < 7; i++) v[i] = (int32_t)tc_rd_u32(b + at + 4 * i);
    h->dim = v[0];
    h->hidden_dim = v[1];
    h->n_layers = v[2];
    h->n_heads = v[3];
    h->n_kv_heads = v[4];
    h->vocab_size = v[5];
    h->seq_len = v[6];
    if (h->version == 1) {
        if (b[36] > 1) {
            tc_error("%s: shared_classifier byte is %u, not 0 or 1", path, (unsigned)b[36]);
            return 0;
        }
        h->shared = b[36];
    } else {
        h->shared = h->vocab_size > 0; /* negative: the classifier follows the weights */
    }
    if (h->dim <= 0 || h->hidden_dim <= 0 || h->n_layers <= 0 || h->n_heads <= 0 ||
        h->n_kv_heads <= 0 || h->seq_len <= 0 || h->vocab_size == 0 || h->vocab_size == INT32_MIN ||
        (h->version == 1 && h->vocab_size < 0) || h->dim % h->n_heads != 0 ||
        h->n_heads % h->n_kv_heads != 0 || (h->dim / h->n_heads) % 2 != 0) {
        tc_error("%s: not a llama2.c version %d checkpoint: header dim %d, hidden_dim %d, "
                 "n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d (sizes must be "
                 "positive, dim a multiple of n_heads with an even head size, n_heads a multiple "
                 "of n_kv_heads)%s", path, h->version, (int)h->dim, (int)h->hidden_dim,
                 (int)h->n_layers, (int)h->n_heads, (int)h->n_kv_heads, (int)h->vocab_size,
                 (int)h->seq_len,
                 h->version == 0 ? "; a Hugging Face model is converted from its directory" : "");
        return 0;
    }
    memset(hp, 0, sizeof *hp);
    hp->arch = TFM_ARCH_LLAMA;
    hp->n_vocab = (uint32_t)(h->vocab_size < 0 ? -h->vocab_size : h->vocab_size);
    hp->n_ctx = (uint32_t)h->seq_len;
    hp->n_layers = (uint32_t)h->n_layers;
    hp->n_heads = (uint32_t)h->n_heads;
    hp->n_kv_heads = (uint32_t)h->n_kv_heads;
    hp->d_model = (uint32_t)h->dim;
    hp->d_head = (uint32_t)(h->dim / h->n_heads);
    hp->d_ff = (uint32_t)h->hidden_dim;
    hp->rope_dim = hp->d_head;
    hp->rope_theta = TC_L2C_ROPE_THETA;
    hp->norm_eps = TC_L2C_NORM_EPS;
    hp->norm = TFM_NORM_RMSNORM;
    hp->act = TFM_ACT_SILU;
    hp->ffn = TFM_FFN_GATED;
    hp->residual = TFM_RESIDUAL_SEQUENTIAL;
    hp->pos = TFM_POS_ROPE_INTERLEAVED;
    hp->tied_output = h->shared;
    return tc_validate_hparams(hp, path);
}

/* Adds the float32 array [layers, rows, cols] at *off (layers 0: one global tensor, cols 0: a
   vector) as per-layer tensors named by fmt (%d = layer); advances *off past it. Sizes are
   bounded by tc_validate_hparams, so no product here overflows 64 bits. */
static void tc_l2c_add(tc_checkpoint *c, char (*names)[TC_L2C_NAME_BYTES], const char *fmt,
                       uint32_t layers, uint64_t rows, uint64_t cols, uint64_t *off) {
    uint64_t bytes = rows * (cols ? cols : 1) * 4;
    uint32_t l, n = layers ? layers : 1;
    for (l = 0; l < n && names; l++) {
        tc_tensor *t = &c->tensors[c->n_tensors];
        memset(t, 0, sizeof *t);
        snprintf(names[c->n_tensors], TC_L2C_NAME_BYTES, fmt, (int)l);
        t->name = names[c->n_tensors];
        t->dtype = TC_F32;
        t->dtype_name = "F32";
        t->rank = cols ? 2 : 1;
        t->shape[0] = rows;
        t->shape[1] = cols;
        t->offset = *off + l * bytes;
        t->bytes = bytes;
        c->n_tensors++;
    }
    *off += n * bytes;
}

/* Lays out every array (names NULL: only sizes the file); *end = the file size it implies. */
static void tc_l2c_layout(tc_checkpoint *c, char (*names)[TC_L2C_NAME_BYTES],
                          const tc_l2c_header *h, const tc_hparams *hp, uint64_t *end) {
    uint64_t off = h->header_bytes, d = hp->d_model, ff = hp->d_ff, v = hp->n_vocab;
    uint64_t q = (uint64_t)hp->n_heads * hp->d_head, kv = (uint64_t)hp->n_kv_heads * hp->d_head;
    uint32_t L = hp->n_layers;
    if (h->version == 1) {
        tc_l2c_add(c, names, "layers.%d.attention_norm.weight", L, d, 0, &off);
        tc_l2c_add(c, names, "layers.%d.ffn_norm.weight", L, d, 0, &off);
        tc_l2c_add(c, names, "norm.weight", 0, d, 0, &off);
        tc_l2c_add(c, names, "tok_embeddings.weight", 0, v, d, &off);
    } else {
        tc_l2c_add(c, names, "tok_embeddings.weight", 0, v, d, &off);
        tc_l2c_add(c, names, "layers.%d.attention_norm.weight", L, d, 0, &off);
    }
    tc_l2c_add(c, names, "layers.%d.attention.wq.weight", L, q, d, &off);
    tc_l2c_add(c, names, "layers.%d.attention.wk.weight", L, kv, d, &off);
    tc_l2c_add(c, names, "layers.%d.attention.wv.weight", L, kv, d, &off);
    tc_l2c_add(c, names, "layers.%d.attention.wo.weight", L, d, q, &off);
    if (h->version == 0) tc_l2c_add(c, names, "layers.%d.ffn_norm.weight", L, d, 0, &off);
    tc_l2c_add(c, names, "layers.%d.feed_forward.w1.weight", L, ff, d, &off);
    tc_l2c_add(c, names, "layers.%d.feed_forward.w2.weight", L, d, ff, &off);
    tc_l2c_add(c, names, "layers.%d.feed_forward.w3.weight", L, ff, d, &off);
    if (h->version == 0) {
        tc_l2c_add(c, names, "norm.weight", 0, d, 0, &off);
        off += 2 * (uint64_t)hp->n_ctx * (hp->d_head / 2) * 4; /* freq_cis_real, freq_cis_imag */
    }
    if (!h->shared) tc_l2c_add(c, names, "output.weight", 0, v, d, &off);
    *end = off;
}

/* llama2.c's names (model.py) -> .tfm names. */
#define TC_L2C_L "layers.%d."
#define TC_L2C_MAT(a, b) TC_LAYER, TC_OP_COPY, {TC_DIM_##a, TC_DIM_##b}
static const tc_tensor_map tc_l2c_tensors[] = {
    {"tok_embeddings.weight", {"tok_embd"}, 0, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
    {TC_L2C_L "attention_norm.weight", {"blk.%d.ln1.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_L2C_L "attention.wq.weight", {"blk.%d.wq"}, TC_L2C_MAT(Q, MODEL)},
    {TC_L2C_L "attention.wk.weight", {"blk.%d.wk"}, TC_L2C_MAT(KV, MODEL)},
    {TC_L2C_L "attention.wv.weight", {"blk.%d.wv"}, TC_L2C_MAT(KV, MODEL)},
    {TC_L2C_L "attention.wo.weight", {"blk.%d.wo"}, TC_L2C_MAT(MODEL, Q)},
    {TC_L2C_L "ffn_norm.weight", {"blk.%d.ln2.w"}, TC_LAYER, TC_OP_COPY, {TC_DIM_MODEL}},
    {TC_L2C_L "feed_forward.w1.weight", {"blk.%d.w_gate"}, TC_L2C_MAT(FF, MODEL)},
    {TC_L2C_L "feed_forward.w3.weight", {"blk.%d.w_up"}, TC_L2C_MAT(FF, MODEL)},
    {TC_L2C_L "feed_forward.w2.weight", {"blk.%d.w_down"}, TC_L2C_MAT(MODEL, FF)},
    {"norm.weight", {"lnf.w"}, 0, TC_OP_COPY, {TC_DIM_MODEL}},
    {"output.weight", {"output.w"}, TC_IF_UNTIED, TC_OP_COPY, {TC_DIM_VOCAB, TC_DIM_MODEL}},
};
static const tc_arch tc_l2c_arch = {"llama2.c", NULL, TC_TABLE(tc_l2c_tensors), NULL, NULL, NULL};

/* "<0xNN>" (upper-case hex, as SentencePiece spells byte pieces) -> NN; -1 otherwise. */
static int tc_l2c_byte_piece(const unsigned char *s, size_t n) {
    int i, v = 0;
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    for (i = 3; i < 5; i++) {
        int c = s[i];
        if (c >= '0' && c <= '9') v = v * 16 + (c - '0');
        else if (c >= 'A' && c <= 'F') v = v * 16 + (c - 'A' + 10);
        else return -1;
    }
    return v;
}

/* tokenizer.bin with exactly n_vocab tokens -> t (kind SentencePiece), as described on top. */
static int tc_l2c_tokenizer(const char *path, uint32_t n_vocab, tc_tok *t) {
    char *f;
    size_t n, at = 4;
    int32_t max_len;
    uint32_t i;
    int ok = 0;
    memset(t, 0, sizeof *t);
    if (!tc_read_file(path, TC_MAX_JSON_BYTES, &f, &n)) return 0;
    if (n < 4 || (max_len = (int32_t)tc_rd_u32((const unsigned char *)f)) <= 0) {
        tc_error("%s: not a llama2.c tokenizer.bin (no positive max_token_length first)", path);
        goto done;
    }
    if (!tc_tok_alloc(t, n_vocab, n_vocab)) goto done;
    if (!(t->scores = (float *)calloc(n_vocab, sizeof *t->scores))) {
        tc_error("out of memory");
        goto done;
    }
    t->kind = TFM_TOKENIZER_SPM;
    for (i = 0; i < n_vocab; i++) {
        const unsigned char *p = (const unsigned char *)f + at;
        int32_t len = n - at >= 8 ? (int32_t)tc_rd_u32(p + 4) : 0;
        const char *why = n - at < 8                  ? "the file ends before it"
                          : len < 0 || len > max_len  ? "byte length outside 0..max_token_length"
                          : n - at - 8 < (size_t)len ? "the file ends inside it" : NULL;
        int byte;
        if (why) {
            tc_error("%s: token %u: %s (the model's vocab_size is %u; truncated file, or the "
                     "tokenizer of another model?)", path, i, why, n_vocab);
            goto done;
        }
        t->scores[i] = tc_rd_f32(p);
        if (!(t->scores[i] > -INFINITY && t->scores[i] < INFINITY)) {
            tc_error("%s: token %u has a score that is not finite", path, i);
            goto done;
        }
        p += 8;
        at += 8 + (size_t)len;
        if ((byte = tc_l2c_byte_piece(p, (size_t)len)) >= 0) {
            char c = (char)byte;
            if (!tc_tok_set_text(t, i, &c, 1)) goto done;
            t->attrs[i] = TFM_TOKATTR_BYTE;
            continue;
        }
        if (len == 5 && memcmp(p, "\n<s>\n", 5) == 0 && t->bos_id < 0) {
            t->bos_id = (int32_t)i;
            p++;
            len -= 2;
        } else if (len == 6 && memcmp(p, "\n</s>\n", 6) == 0 && t->eos_id < 0) {
            t->eos_id = (int32_t)i;
            p++;
            len -= 2;
        } else if (len == 5 && memcmp(p, "<unk>", 5) == 0 && t->unk_id < 0) {
            t->unk_id = (int32_t)i;
        }
        if ((int32_t)i == t->bos_id || (int32_t)i == t->eos_id || (int32_t)i == t->unk_id)
            t->attrs[i] = TFM_TOKATTR_SPECIAL;
        if (!tc_tok_set_text(t, i, (const char *)p, (size_t)len)) goto done;
    }
    if (at != n) {
        tc_error("%s: %lu bytes left after the model's %u tokens (the tokenizer of a larger "
                 "vocabulary?)", path, (unsigned long)(n - at), n_vocab);
        goto done;
    }
    t->flags = TFM_TOKFLAG_PREFIX_SPACE;
    if (t->bos_id >= 0) t->flags |= TFM_TOKFLAG_ADD_BOS;
    else tc_warn("%s: no BOS token (\"\\n<s>\\n\"); prompts start without one", path);
    if (t->eos_id < 0) tc_warn("%s: no EOS token (\"\\n</s>\\n\")", path);
    ok = 1;
done:
    free(f);
    return ok;
}

/* MODEL.bin [+ tokenizer.bin] -> out. */
int tc_l2c_convert(const char *src, const char *tok_path, const char *chat_template, const char *out,
                   const char *type, int quiet, int check) {
    tc_l2c_header h;
    tc_hparams hp;
    tc_checkpoint ck;
    tc_plan plan;
    tc_tok tok;
    char (*names)[TC_L2C_NAME_BYTES] = NULL;
    unsigned char *blob = NULL;
    size_t blob_bytes = 0, n_tensors;
    uint64_t file_bytes, want;
    int ok = 0;
    FILE *f = fopen(src, "rb");
    memset(&ck, 0, sizeof ck);
    memset(&plan, 0, sizeof plan);
    memset(&tok, 0, sizeof tok);
    if (!f) {
        tc_error("cannot open %s: %s", src, strerror(errno));
        return 0;
    }
    ck.shards = (tc_shard *)calloc(1, sizeof *ck.shards);
    if (!ck.shards || !(ck.shards[0].path = tc_strdup(src))) {
        tc_error("out of memory");
        free(ck.shards);
        fclose(f);
        return 0;
    }
    ck.shards[0].file = f; /* closed by tc_checkpoint_free */
    ck.n_shards = 1;
    if (!tc_file_bytes(f, src, &file_bytes) || !tc_l2c_read_header(f, src, &h, &hp))
        goto done;
    tc_l2c_layout(&ck, NULL, &h, &hp, &want);
    if (want != file_bytes) {
        tc_error("%s: %llu bytes, but the llama2.c version %d header (dim %d, hidden_dim %d, "
                 "n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d) means exactly "
                 "%llu (truncated, or not a llama2.c float32 checkpoint)", src,
                 (unsigned long long)file_bytes, h.version, (int)h.dim, (int)h.hidden_dim,
                 (int)h.n_layers, (int)h.n_heads, (int)h.n_kv_heads, (int)h.vocab_size,
                 (int)h.seq_len, (unsigned long long)want);
        goto done;
    }
    n_tensors = 3 + 9 * (size_t)hp.n_layers;
    ck.tensors = (tc_tensor *)calloc(n_tensors, sizeof *ck.tensors);
    names = (char (*)[TC_L2C_NAME_BYTES])calloc(n_tensors, TC_L2C_NAME_BYTES);
    if (!ck.tensors || !names) {
        tc_error("out of memory");
        goto done;
    }
    ck.cap_tensors = n_tensors;
    tc_l2c_layout(&ck, names, &h, &hp, &want);
    if (!tc_checkpoint_index(&ck) || !tc_plan_model(&plan, &tc_l2c_arch, &hp, &ck, type))
        goto done;
    if (!tok_path) {
        tc_warn("%s: no --tokenizer tokenizer.bin; the model is usable by token ids only", src);
        if (chat_template) tc_warn("%s: --chat-template needs a tokenizer; ignored", src);
    } else if (!tc_l2c_tokenizer(tok_path, hp.n_vocab, &tok) ||
               !tc_tok_chat_finish(&tok, chat_template, tok_path) || !tc_tok_blob(&tok, &blob, &blob_bytes)) {
        goto done;
    }
    if (!quiet)
        fprintf(stderr, "tfm-convert: llama2.c v%d: %u layers, dim %u, %u heads (%u kv), "
                "hidden %u, vocab %u (%s classifier), seq_len %u, %s\n", h.version, hp.n_layers,
                hp.d_model, hp.n_heads, hp.n_kv_heads, hp.d_ff, hp.n_vocab,
                h.shared ? "shared" : "own", hp.n_ctx, type);
    ok = tc_write_file(out, &hp, &plan, blob, blob_bytes, &ck, quiet) &&
         (!check || tc_check(out, &hp, tok_path ? tok.n_tokens : 0));
done:
    free(blob);
    free(plan.outs);
    tc_checkpoint_free(&ck);
    free(names);
    tc_tok_free(&tok);
    return ok;
}
