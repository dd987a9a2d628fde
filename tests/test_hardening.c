/* test_hardening.c - hostile input that is valid: what must stay bounded or be reported.
   - tokenizer time: tokenizing a text costs a bounded amount per byte whatever the tokenizer
     (added tokens sharing a prefix, long added tokens, BPE runs of one letter, hash tables
     whose entries collide); measured as CPU time against an ordinary text of the same length
     through the same tokenizer, so the ratio does not depend on the machine or a sanitizer;
   - non-finite values: NaN / Inf weights of every dtype (and finite weights that overflow)
     give TFM_ERR_NOT_FINITE from eval, never NaN logits with TFM_OK; the sampler refuses NaN
     logits; softmax of +inf logits;
   - files that are not regular files (a FIFO would block open forever);
   - a tfm_utf8_stream with a bad held count.
   Needs nothing from ../shared. */
#if defined(__unix__) || defined(__APPLE__)
#define _POSIX_C_SOURCE 200809L
#define HARD_POSIX 1
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#endif
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "tfm_writer.h"
#include "tok_data.h"
#include "tiny_model.h"

#include <math.h>
#include <time.h>

/* ---- timing ------------------------------------------------------------------------------ */

/* CPU seconds per call of fn(arg), repeated until at least 50 ms have passed. */
static double cpu_per_call(void (*fn)(void *), void *arg) {
    clock_t start = clock(), now;
    int calls = 0;
    do {
        fn(arg);
        calls++;
        now = clock();
    } while ((double)(now - start) < 0.05 * CLOCKS_PER_SEC);
    return (double)(now - start) / CLOCKS_PER_SEC / calls;
}

typedef struct tok_job {
    const tfm__tokenizer *t;
    const char *text;
    size_t n;
    int32_t *ids;
    size_t cap, n_ids;
} tok_job;

static void tok_run(void *arg) {
    tok_job *j = (tok_job *)arg;
    tfm__tokenizer_encode(j->t, j->text, j->n, j->ids, j->cap, &j->n_ids);
}

/* Ratio of the CPU time of text `hostile` to text `plain` (same length) through t. Limit:
   before the fixes these ratios were in the hundreds or thousands. */
#define MAX_TIME_RATIO 25.0
static double time_ratio(const tfm__tokenizer *t, const char *hostile, const char *plain, size_t n) {
    static int32_t ids[1 << 20];
    tok_job a, b;
    double th, tp;
    a.t = b.t = t;
    a.text = hostile;
    b.text = plain;
    a.n = b.n = n;
    a.ids = b.ids = ids;
    a.cap = b.cap = sizeof ids / sizeof ids[0];
    tp = cpu_per_call(tok_run, &b);
    th = cpu_per_call(tok_run, &a);
    return th / (tp > 1e-6 ? tp : 1e-6);
}

/* Ordinary text: words of 2..9 letters from a fixed set, separated by spaces. */
static void plain_text(char *s, size_t n) {
    static const char *words[] = {"the", "of", "and", "in", "that", "beginning", "earth", "said",
                                  "light", "waters", "day", "night", "heaven", "made", "good"};
    size_t at = 0, w = 0;
    while (at < n) {
        const char *x = words[(w * 7 + 3) % 15];
        size_t k = strlen(x);
        w++;
        if (at + k + 1 > n) { memset(s + at, 'a', n - at); break; }
        s[at++] = ' ';
        memcpy(s + at, x, k);
        at += k;
    }
}

/* 256 byte tokens and merges building the words of plain_text and runs of 'a' (a, aa, aaaa,
   ... up to 512 a's); kind BPE_BYTES or SPM (scores: longer tokens higher, so runs merge too). */
static void word_vocab(vocab *v, int spm, int spm_merges) {
    static const char *words[] = {"the", "of", "and", "in", "that", "beginning", "earth", "said",
                                  "light", "waters", "day", "night", "heaven", "made", "good"};
    char buf[1024];
    int i, n = 256, w;
    size_t k;
    memset(v, 0, sizeof *v);
    v->kind = spm;
    v->bos = v->eos = v->unk = -1;
    for (i = 0; i < 256; i++) {
        char c = (char)i;
        vocab_set(v, i, &c, 1);
        if (spm) v->tok[i].attr = TFM_TOKATTR_BYTE;
    }
    v->merges = (uint32_t *)malloc(4096 * 3 * sizeof(uint32_t));
    v->cap_merges = 4096;
    for (w = 0; w < 16; w++) { /* words: left to right, one letter at a time ("t"+"h", "th"+"e") */
        const char *x = w < 15 ? words[w] : NULL;
        size_t len = x ? strlen(x) : 0;
        for (k = 2; x && k <= len; k++) {
            int left = -1, right = x[k - 1] & 0xff, j;
            for (j = 0; j < n; j++) /* the token of x[0..k-1) */
                if (v->tok[j].len == k - 1 && !memcmp(v->tok[j].text, x, k - 1) && !(v->tok[j].attr & TFM_TOKATTR_BYTE && k > 2)) left = j;
            if (k == 2) left = x[0] & 0xff;
            for (j = 256; j < n; j++)
                if (v->tok[j].len == k && !memcmp(v->tok[j].text, x, k)) break;
            if (j < n) continue;
            vocab_set(v, n, x, k);
            v->merges[3 * v->n_merges] = (uint32_t)left;
            v->merges[3 * v->n_merges + 1] = (uint32_t)right;
            v->merges[3 * v->n_merges + 2] = (uint32_t)n;
            v->n_merges++;
            n++;
        }
    }
    memset(buf, 'a', sizeof buf);
    for (k = 2, i = 'a'; k <= 512; k *= 2) { /* a^k = a^(k/2) + a^(k/2) */
        vocab_set(v, n, buf, k);
        v->merges[3 * v->n_merges] = (uint32_t)i;
        v->merges[3 * v->n_merges + 1] = (uint32_t)i;
        v->merges[3 * v->n_merges + 2] = (uint32_t)n;
        v->n_merges++;
        i = n++;
    }
    if (spm) {
        v->scores = (float *)calloc((size_t)n, sizeof(float));
        for (i = 0; i < n; i++) v->scores[i] = i < 256 ? -1000.0f : (float)v->tok[i].len;
        if (!spm_merges) v->n_merges = 0;
    }
}

/* The tokenizer of v, or NULL (*r: the result); *blob must outlive it (free blob->p after). */
static tfm__tokenizer *tokenizer_of(const vocab *v, bytes_t *blob, tfm_result *r) {
    tfm__tokenizer *t = NULL;
    tfm_allocator a = {0, 0, 0};
    tfm_result got;
    *blob = vocab_blob(v);
    got = tfm__tokenizer_create(blob->p, blob->n, &a, NULL, &t);
    if (r) *r = got;
    return t;
}

static void tokenizer_free(tfm__tokenizer *t, bytes_t *blob) {
    tfm_allocator a = {0, 0, 0};
    tfm__tokenizer_destroy(t, &a);
    free(blob->p);
    blob->p = NULL;
}

/* ---- tokenizer: BPE over a run of one letter ------------------------------------------- */

static void test_bpe_runs(void) {
    enum { N = 1 << 16 };
    static char run[N], plain[N];
    int kind;
    memset(run, 'a', N);
    plain_text(plain, N);
    for (kind = 0; kind < 3; kind++) { /* BPE_BYTES, SPM by score, SPM by merge rank */
        vocab v;
        bytes_t blob;
        tfm__tokenizer *t;
        double ratio;
        word_vocab(&v, kind > 0, kind == 2);
        t = tokenizer_of(&v, &blob, NULL);
        CHECK(t != NULL);
        if (t) {
            int32_t ids[16];
            size_t n_ids = 0;
            /* 1024 a's: two tokens of 512 (both kinds merge every pair) */
            CHECK(tfm__tokenizer_encode(t, run, 1024, ids, 16, &n_ids) == TFM_OK && n_ids == (kind ? 11u : 2u)); /* SPM: 1023 + 1 */
            ratio = time_ratio(t, run, plain, N);
            printf("BPE kind %d: 64 KB of one letter / 64 KB of words: CPU time x%.2f\n", kind, ratio);
            CHECK_MSG(ratio < MAX_TIME_RATIO, "BPE kind %d: a run of one letter costs x%.1f of plain text", kind, ratio);
        }
        tokenizer_free(t, &blob);
        vocab_free(&v);
    }
}

/* ---- tokenizer: many added tokens sharing a prefix, long added tokens ------------------- */

static void test_added_tokens(void) {
    enum { N_ADDED = 20000, N = 1 << 15 };
    static char hostile[N], plain[N];
    vocab v;
    bytes_t blob;
    tfm__tokenizer *t;
    int i;
    size_t k;
    word_vocab(&v, 0, 0);
    for (i = 0; i < N_ADDED; i++) { /* "<|" + 5 digits + "|>" */
        char s[16];
        snprintf(s, sizeof s, "<|%05d|>", i);
        vocab_set(&v, v.n_tok, s, strlen(s));
        v.tok[v.n_tok - 1].attr = TFM_TOKATTR_ADDED | TFM_TOKATTR_SPECIAL;
    }
    for (k = 0; k < N; k++) hostile[k] = "<|"[k % 2]; /* every other byte starts a near-match */
    plain_text(plain, N);
    t = tokenizer_of(&v, &blob, NULL);
    CHECK(t != NULL);
    if (t) {
        int32_t ids[16];
        size_t n_ids = 0;
        double ratio;
        CHECK(tfm__tokenizer_encode(t, "a<|01234|>b<|0123", 17, ids, 16, &n_ids) == TFM_OK && n_ids == 9 &&
              ids[0] == 'a' && ids[1] == v.n_tok - N_ADDED + 1234 && ids[2] == 'b' && ids[3] == '<');
        ratio = time_ratio(t, hostile, plain, N);
        printf("20000 added tokens \"<|NNNNN|>\": 32 KB of \"<|<|\" / 32 KB of words: CPU time x%.2f\n", ratio);
        CHECK_MSG(ratio < MAX_TIME_RATIO, "added tokens sharing a prefix: x%.1f of plain text", ratio);
    }
    tokenizer_free(t, &blob);
    vocab_free(&v);
}

/* An added token longer than TFM_MAX_ADDED_TOKEN_BYTES is refused (matching costs up to its
   length per text byte); one of exactly that length works. */
static void test_added_length(void) {
    char s[TFM_MAX_ADDED_TOKEN_BYTES + 2];
    int extra;
    for (extra = 0; extra < 2; extra++) {
        vocab v;
        bytes_t blob;
        tfm_result r;
        tfm__tokenizer *t;
        word_vocab(&v, 0, 0);
        memset(s, 'a', sizeof s);
        s[0] = '<';
        vocab_set(&v, v.n_tok, s, TFM_MAX_ADDED_TOKEN_BYTES + (size_t)extra);
        v.tok[v.n_tok - 1].attr = TFM_TOKATTR_ADDED;
        t = tokenizer_of(&v, &blob, &r);
        CHECK_MSG(r == (extra ? TFM_ERR_UNSUPPORTED : TFM_OK), "added token of %d bytes: result %d",
                  TFM_MAX_ADDED_TOKEN_BYTES + extra, (int)r);
        if (t) {
            int32_t ids[4];
            size_t n_ids = 0;
            CHECK(tfm__tokenizer_encode(t, s, TFM_MAX_ADDED_TOKEN_BYTES, ids, 4, &n_ids) == TFM_OK && n_ids == 1 &&
                  ids[0] == v.n_tok - 1);
        }
        tokenizer_free(t, &blob);
        vocab_free(&v);
    }
}

/* Leftmost-longest among added tokens that are prefixes of one another, with duplicates (the
   lowest id wins) and a branch at every byte. */
static void test_added_matching(void) {
    static const char *texts[] = {"<a", "<ab", "<abc", "<abd", "<b", "<ab", "<", "<abcd"};
    static const struct { const char *text; int n; int32_t ids[6]; } cases[] = {
        {"<abcd", 1, {7}}, {"<abce", 2, {2, 'e'}}, {"<abd<", 2, {3, 6}}, {"<ab", 1, {1}},
        {"<a", 1, {0}}, {"x<bb", 3, {'x', 4, 'b'}}, {"<<ac", 3, {6, 0, 'c'}}, {"<", 1, {6}}};
    vocab v;
    bytes_t blob;
    tfm__tokenizer *t;
    int i, first, j;
    word_vocab(&v, 0, 0);
    first = v.n_tok;
    for (i = 0; i < 8; i++) {
        vocab_set(&v, first + i, texts[i], strlen(texts[i]));
        v.tok[first + i].attr = TFM_TOKATTR_ADDED;
    }
    t = tokenizer_of(&v, &blob, NULL);
    CHECK(t != NULL);
    for (i = 0; t && i < 8; i++) {
        int32_t ids[8];
        size_t n_ids = 0;
        int ok = tfm__tokenizer_encode(t, cases[i].text, strlen(cases[i].text), ids, 8, &n_ids) == TFM_OK &&
                 n_ids == (size_t)cases[i].n;
        for (j = 0; ok && j < cases[i].n; j++) {
            int32_t want = cases[i].ids[j];
            ok = ids[j] == (want < 8 && want >= 0 ? first + want : want);
        }
        CHECK_MSG(ok, "added tokens: \"%s\"", cases[i].text);
    }
    tokenizer_free(t, &blob);
    vocab_free(&v);
}

/* ---- tokenizer: hash tables ----------------------------------------------------------- */

/* 256 byte tokens and n two-byte merges a + b, for the pairs keep(a, b) accepts. */
static int pair_vocab(vocab *v, int n, int (*keep)(int a, int b)) {
    int a, b, k = 0;
    memset(v, 0, sizeof *v);
    v->bos = v->eos = v->unk = -1;
    for (a = 0; a < 256; a++) {
        char c = (char)a;
        vocab_set(v, a, &c, 1);
    }
    v->merges = (uint32_t *)malloc((size_t)n * 3 * sizeof(uint32_t));
    for (a = 0; a < 256 && k < n; a++) {
        for (b = 0; b < 256 && k < n; b++) {
            char two[2];
            if (!keep(a, b)) continue;
            two[0] = (char)a;
            two[1] = (char)b;
            vocab_set(v, 256 + k, two, 2);
            v->merges[3 * k] = (uint32_t)a;
            v->merges[3 * k + 1] = (uint32_t)b;
            v->merges[3 * k + 2] = (uint32_t)(256 + k);
            k++;
        }
    }
    v->n_merges = k;
    return k;
}

/* 450 pairs whose hashes start in the first 450 slots of a table of 2048 (or of 1024, the old
   table for 450 merges): one probe run of about 450, under the old limit of 512, where every
   lookup near it crawled. */
static int keep_clustered(int a, int b) { return (tfm__hash_pair(a, b) & 2047) < 450; }

/* Every probe run of the tables is short, whatever the merges: a crafted cluster is refused,
   and a large ordinary vocabulary (266,000 tokens) is accepted. */
static void test_hash_runs(void) {
    vocab v;
    bytes_t blob;
    tfm_result r;
    tfm__tokenizer *t;
    int n = pair_vocab(&v, 450, keep_clustered), a, b, k;
    t = tokenizer_of(&v, &blob, &r);
    CHECK_MSG(n == 450 && r == TFM_ERR_CORRUPT, "450 merges in one probe run: result %d (want corrupt)", (int)r);
    tokenizer_free(t, &blob);
    vocab_free(&v);
    memset(&v, 0, sizeof v); /* every 2-byte text, then 200,000 3-byte ones */
    v.bos = v.eos = v.unk = -1;
    for (a = 0; a < 256; a++) {
        char c = (char)a;
        vocab_set(&v, a, &c, 1);
    }
    v.merges = (uint32_t *)malloc((65536 + 200000) * 3 * sizeof(uint32_t));
    for (k = 0; k < 65536 + 200000; k++) {
        char txt[3];
        int left = k < 65536 ? k >> 8 : 256 + (int)(((unsigned)k * 2654435761u) % 65536u);
        b = k < 65536 ? k & 255 : k % 251;
        if (k < 65536) { txt[0] = (char)left; txt[1] = (char)b; }
        else { memcpy(txt, v.tok[left].text, 2); txt[2] = (char)b; }
        vocab_set(&v, 256 + k, txt, k < 65536 ? 2 : 3);
        v.merges[3 * k] = (uint32_t)left;
        v.merges[3 * k + 1] = (uint32_t)b;
        v.merges[3 * k + 2] = (uint32_t)(256 + k);
    }
    v.n_merges = k;
    t = tokenizer_of(&v, &blob, &r);
    CHECK_MSG(r == TFM_OK, "an ordinary vocabulary of %d tokens: result %d", v.n_tok, (int)r);
    if (t) {
        size_t run_m = tfm__tok_max_run(t->merge_hash, t->merge_cap), run_t = tfm__tok_max_run(t->token_hash, t->token_cap);
        printf("%d tokens, %d merges: longest probe runs %zu (merges), %zu (texts), limit %d\n", v.n_tok,
               v.n_merges, run_m, run_t, TFM__HASH_MAX_RUN);
        CHECK(run_m <= TFM__HASH_MAX_RUN && run_t <= TFM__HASH_MAX_RUN && TFM__HASH_MAX_RUN <= 64);
    }
    tokenizer_free(t, &blob);
    vocab_free(&v);
}

/* ---- non-finite values ------------------------------------------------------------------ */

enum { NF_VOCAB = 64, NF_D = 256, NF_FF = 256, NF_HEADS = 4, NF_CTX = 16 };

/* A one-layer Llama-shaped model with every matrix of dtype; lnf_scale multiplies the final
   norm's weights. */
static unsigned char *nf_model(int dtype, float lnf_scale, size_t *bytes) {
    tiny_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.n_vocab = NF_VOCAB; sp.n_ctx = NF_CTX; sp.n_layers = 1; sp.n_heads = NF_HEADS; sp.d_model = NF_D;
    sp.d_ff = NF_FF; sp.dtype = dtype; sp.lnf_scale = lnf_scale;
    return tiny_model(&sp, bytes);
}

/* Eval 3 tokens (with and without logits_all, 1 and 2 threads): the results. */
static void nf_eval(const unsigned char *f, size_t bytes, tfm_result *r_last, tfm_result *r_all, tfm_result *r_threads) {
    tfm_model_desc md;
    tfm_session_desc sd;
    tfm_model *m = NULL;
    tfm_session *s = NULL;
    static float all[3 * NF_VOCAB];
    int32_t tok[3] = {1, 5, 9};
    *r_last = *r_all = *r_threads = TFM_ERR_IO;
    memset(&md, 0, sizeof md);
    md.data = f;
    md.data_bytes = bytes;
    if (tfm_model_open(&md, &m) != TFM_OK) return;
    memset(&sd, 0, sizeof sd);
    if (tfm_session_create(m, &sd, &s) == TFM_OK) {
        *r_last = tfm_session_eval(s, tok, 3, 0, NULL);
        *r_all = tfm_session_eval(s, tok, 3, 0, all);
        tfm_session_destroy(s);
    }
    sd.n_threads = 2;
    if (tfm_session_create(m, &sd, &s) == TFM_OK) {
        *r_threads = tfm_session_eval(s, tok, 3, 0, NULL);
        tfm_session_destroy(s);
    }
    tfm_model_close(m);
}

/* NaN / Inf in a weight or a block scale of every dtype, and finite weights whose product
   overflows: eval says TFM_ERR_NOT_FINITE, never TFM_OK with NaN logits. */
static void test_not_finite(void) {
    int dtype, poison;
    for (dtype = 0; dtype < TFM_DTYPE_COUNT; dtype++) {
        size_t bytes, at;
        unsigned char *f = nf_model(dtype, 1.0f, &bytes), *clean = (unsigned char *)malloc(bytes);
        tfm_result a, b, c;
        memcpy(clean, f, bytes);
        nf_eval(f, bytes, &a, &b, &c);
        CHECK_MSG(a == TFM_OK && b == TFM_OK && c == TFM_OK, "%s: clean model: %d %d %d",
                  tfm_dtype_describe((tfm_dtype)dtype).name, (int)a, (int)b, (int)c);
        for (poison = 0; poison < 2; poison++) { /* NaN, then +Inf */
            memcpy(f, clean, bytes);
            at = tiny_offset(f, "blk.0.wq");
            if (dtype == TFM_DTYPE_F32) tw_put_f32(f + at, poison ? INFINITY : NAN);
            else if (dtype == TFM_DTYPE_BF16) { f[at] = poison ? 0x80 : 0xC0; f[at + 1] = 0x7F; }
            else { /* the f16 value, or the block's f16 scale d */
                size_t d_at = dtype == TFM_DTYPE_Q6_K ? 208 : 0;
                f[at + d_at] = poison ? 0x00 : 0x00;
                f[at + d_at + 1] = poison ? 0x7C : 0x7E;
            }
            nf_eval(f, bytes, &a, &b, &c);
            CHECK_MSG(a == TFM_ERR_NOT_FINITE && b == TFM_ERR_NOT_FINITE && c == TFM_ERR_NOT_FINITE,
                      "%s: %s in blk.0.wq: results %d %d %d", tfm_dtype_describe((tfm_dtype)dtype).name,
                      poison ? "Inf" : "NaN", (int)a, (int)b, (int)c);
        }
        free(f);
        free(clean);
    }
    { /* a NaN norm weight (vectors are f32) */
        size_t bytes;
        unsigned char *f = nf_model(TFM_DTYPE_F32, 1.0f, &bytes);
        tfm_result a, b, c;
        tw_put_f32(f + tiny_offset(f, "blk.0.ln2.w") + 4 * 7, NAN);
        nf_eval(f, bytes, &a, &b, &c);
        CHECK_MSG(a == TFM_ERR_NOT_FINITE && b == TFM_ERR_NOT_FINITE, "NaN in blk.0.ln2.w: %d %d", (int)a, (int)b);
        free(f);
        f = nf_model(TFM_DTYPE_F32, 3e38f, &bytes); /* finite weights, logits past FLT_MAX */
        nf_eval(f, bytes, &a, &b, &c);
        CHECK_MSG(a == TFM_ERR_NOT_FINITE && b == TFM_ERR_NOT_FINITE, "overflowing logits: %d %d", (int)a, (int)b);
        free(f);
    }
}

/* The sampler never draws from NaN logits, nor from logits that are all -inf; a +inf logit
   is certain; softmax of +inf logits splits the mass among them. */
static void test_sampler_not_finite(void) {
    static const float with_nan[4] = {0.5f, NAN, 2.0f, 1.0f}, inf_first[3] = {INFINITY, 0.0f, 1.0f};
    float all_neg[3] = {-INFINITY, -INFINITY, -INFINITY}, two_inf[3] = {INFINITY, 2.0f, INFINITY}, p[3];
    int pass;
    for (pass = 0; pass < 2; pass++) { /* greedy, then temperature 0.8 with top-k and top-p */
        tfm_sampler_desc d;
        tfm_sampler *smp = NULL;
        int32_t tok = 7;
        memset(&d, 0, sizeof d);
        d.n_vocab = 4;
        if (pass) { d.temperature = 0.8f; d.top_k = 3; d.top_p = 0.9f; d.repeat_penalty = 1.3f; }
        CHECK(tfm_sampler_create(&d, &smp) == TFM_OK);
        if (!smp) continue;
        CHECK_MSG(tfm_sample(smp, with_nan, 4, &tok) == TFM_ERR_INVALID_ARG && tok == -1, "pass %d: NaN logits gave %d", pass, (int)tok);
        CHECK_MSG(tfm_sample(smp, all_neg, 3, &tok) == TFM_ERR_INVALID_ARG && tok == -1, "pass %d: all -inf gave %d", pass, (int)tok);
        CHECK_MSG(tfm_sample(smp, inf_first, 3, &tok) == TFM_OK && tok == 0, "pass %d: +inf first gave %d", pass, (int)tok);
        CHECK(tfm_sample(smp, with_nan + 2, 2, &tok) == TFM_OK && (tok == 0 || tok == 1)); /* finite: fine */
        tfm_sampler_destroy(smp);
    }
    tfm_softmax(inf_first, p, 3);
    CHECK_MSG(p[0] == 1.0f && p[1] == 0.0f && p[2] == 0.0f, "softmax(+inf, 0, 1) = %g %g %g", p[0], p[1], p[2]);
    tfm_softmax(two_inf, p, 3);
    CHECK_MSG(p[0] == 0.5f && p[1] == 0.0f && p[2] == 0.5f, "softmax(+inf, 2, +inf) = %g %g %g", p[0], p[1], p[2]);
    tfm_log_softmax(two_inf, p, 3);
    CHECK(fabsf(p[0] + logf(2.0f)) < 1e-6f && p[1] == -INFINITY && fabsf(p[2] + logf(2.0f)) < 1e-6f);
    CHECK(tfm_cross_entropy(inf_first, 3, 0) == 0.0f && tfm_cross_entropy(inf_first, 3, 1) == INFINITY);
    tfm_softmax(with_nan, p, 3);
    CHECK(p[0] != p[0] && p[2] != p[2]); /* NaN in, NaN out */
    tfm_softmax(all_neg, p, 3);
    CHECK(p[0] != p[0]); /* no distribution */
}

/* ---- files that are not regular files ---------------------------------------------------- */

#ifdef HARD_POSIX
/* tfm_model_open(path) in a child process (mmap or not): its result, or -1 when it had not
   returned after 10 s (it blocked: the child is killed). */
static int open_in_child(const char *path, bool no_mmap) {
    pid_t pid = fork();
    int status = 0, waited;
    if (pid < 0) return -2;
    if (pid == 0) {
        tfm_model_desc md;
        tfm_model *m = NULL;
        tfm_result r;
        memset(&md, 0, sizeof md);
        md.path = path;
        md.no_mmap = no_mmap;
        r = tfm_model_open(&md, &m);
        tfm_model_close(m);
        _exit((int)r);
    }
    for (waited = 0; waited < 1000; waited++) { /* 10 s in steps of 10 ms */
        struct timespec ts = {0, 10000000L};
        if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static void test_special_files(void) {
    char fifo[64];
    int no_mmap;
    snprintf(fifo, sizeof fifo, "build/hardening_fifo_%d", (int)getpid());
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0);
    for (no_mmap = 0; no_mmap < 2; no_mmap++) {
        int r = open_in_child(fifo, no_mmap != 0);
        CHECK_MSG(r == TFM_ERR_IO, "a FIFO as the model path (no_mmap %d): %s", no_mmap,
                  r == -1 ? "open blocked" : tfm_result_string((tfm_result)r));
        r = open_in_child("/dev/null", no_mmap != 0);
        CHECK_MSG(r == TFM_ERR_IO, "/dev/null (no_mmap %d): result %d", no_mmap, r);
        r = open_in_child("tests", no_mmap != 0);
        CHECK_MSG(r == TFM_ERR_IO, "a directory (no_mmap %d): result %d", no_mmap, r);
    }
    unlink(fifo);
}
#endif

/* tfm_utf8_stream_flush with a held count outside 0..3 writes nothing. */
static void test_stream_flush(void) {
    tfm_utf8_stream st;
    char out[8] = "xxxxxxx";
    memset(&st, 0, sizeof st);
    st.n_held = -1;
    CHECK(tfm_utf8_stream_flush(&st, out, sizeof out) == 0 && out[0] == 'x');
    st.n_held = 4;
    CHECK(tfm_utf8_stream_flush(&st, out, sizeof out) == 0 && out[0] == 'x');
    st.n_held = 2;
    st.held[0] = 0xE2;
    st.held[1] = 0x82;
    CHECK(tfm_utf8_stream_flush(&st, out, sizeof out) == 3 && !memcmp(out, "\xEF\xBF\xBD", 3) && st.n_held == 0);
}

int main(void) {
    test_bpe_runs();
    test_added_tokens();
    test_added_length();
    test_added_matching();
    test_hash_runs();
    test_not_finite();
    test_sampler_not_finite();
#ifdef HARD_POSIX
    test_special_files();
#endif
    test_stream_flush();
    return check_summary("test_hardening");
}
