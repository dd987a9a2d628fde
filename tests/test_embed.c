/* test_embed.c - what a game or app engine embedding tfm.h relies on: loading through read
   callbacks with progress and cancel, frees in reverse allocation order (a stack allocator),
   sessions sized before they are created and placed in the host's memory. Random-weight models
   written by the tests' own writer (tests/tfm_writer.h); needs nothing from ../shared. */
#define TFM_SLICE_BYTES 2048 /* slices of 16 output rows (d_model 32, f32): every projection is sliced */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "alloc.h"
#include "tfm_writer.h"
#include <math.h>
#include <stdint.h>

#define DEMO "build/demo.tfm" /* the trained demo model (make builds it), with a tokenizer */

/* ---- a random-weight model --------------------------------------------------------------- */

static uint64_t rng_state = 0x853c49e6748fea9bull;
static float rng_sym(float scale) { /* uniform in (-scale, scale) */
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (float)(((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0) * scale);
}

#define MAX_TENSORS 64
typedef struct model_file {
    unsigned char *bytes;
    size_t n_bytes;
    int n_vocab, n_ctx;
} model_file;

/* A GPT-NeoX-shaped model (LayerNorm, parallel residual, partial RoPE, biases); matrices of
   dtype dt (f32, f16 or a quantized type; d_model 256 for a k-quant's super-blocks, else 32);
   tied: no output.w (the output matrix is tok_embd). */
static model_file make_model_ex(int n_layers, int n_vocab, int n_ctx, tfm_dtype dt, int tied, uint64_t seed) {
    enum { HEADS = 4 };
    const int D = tfm__dtype_of(dt).info.block_elems > 32 ? 256 : 32, FF = 2 * D;
    static const char *const per_layer[][3] = {
        {"ln1.w", "v", "1"}, {"ln1.b", "v", "0"}, {"ln2.w", "v", "1"}, {"ln2.b", "v", "0"}, {"wq", "dd", ""},
        {"wk", "dd", ""}, {"wv", "dd", ""}, {"wo", "dd", ""}, {"bq", "v", "0"}, {"bo", "v", "0"},
        {"w_up", "fd", ""}, {"b_up", "f", "0"}, {"w_down", "df", ""}};
    tw_header h;
    tw_tensor t[MAX_TENSORS];
    char names[MAX_TENSORS][64];
    float *vals[MAX_TENSORS];
    model_file mf;
    int n = 0, l, i;
    size_t k;
    memset(&h, 0, sizeof h);
    h.arch = TFM_ARCH_GPT_NEOX; h.n_vocab = n_vocab; h.n_ctx = n_ctx; h.n_layers = n_layers;
    h.n_heads = HEADS; h.n_kv_heads = HEADS; h.d_model = D; h.d_head = D / HEADS; h.d_ff = FF;
    h.rope_dim = 4; h.theta = 10000.0f; h.eps = 1e-5f; h.norm = TFM_NORM_LAYERNORM; h.act = TFM_ACT_GELU_ERF;
    h.ffn = TFM_FFN_PLAIN; h.residual = TFM_RESIDUAL_PARALLEL; h.pos = TFM_POS_ROPE_HALF;
    rng_state = seed | 1u;
#define ADD(nm, r, c, mean, scale)                                                                   \
    do {                                                                                             \
        size_t cnt_ = (size_t)(r) * (size_t)((c) ? (c) : 1);                                         \
        snprintf(names[n], 64, "%s", nm);                                                            \
        vals[n] = (float *)malloc(cnt_ * sizeof(float));                                             \
        for (k = 0; k < cnt_; k++) vals[n][k] = (mean) + rng_sym(scale);                             \
        if (dt == TFM_DTYPE_F16 && (c)) for (k = 0; k < cnt_; k++) vals[n][k] = tfm__f16_to_f32(tw_f32_to_f16(vals[n][k])); \
        t[n].name = names[n]; t[n].rows = (r); t[n].cols = (c); t[n].f16 = dt == TFM_DTYPE_F16 && (c); t[n].v = vals[n]; \
        t[n].dtype = (c) && dt > TFM_DTYPE_F16 ? (int)dt : 0;                                        \
        n++;                                                                                         \
    } while (0)
    ADD("tok_embd", n_vocab, D, 0.0f, 1.0f);
    for (l = 0; l < n_layers; l++) {
        for (i = 0; i < (int)(sizeof per_layer / sizeof per_layer[0]); i++) {
            char nm[64];
            const char *shape = per_layer[i][1];
            int rows = shape[0] == 'f' ? FF : D, cols = shape[1] == 'f' ? FF : shape[1] == 'd' ? D : 0;
            snprintf(nm, sizeof nm, "blk.%d.%s", l, per_layer[i][0]);
            if (cols) ADD(nm, rows, cols, 0.0f, 1.2f / sqrtf((float)cols));
            else ADD(nm, rows, 0, per_layer[i][2][0] == '1' ? 1.0f : 0.0f, 0.1f);
        }
    }
    ADD("lnf.w", D, 0, 1.0f, 0.1f);
    ADD("lnf.b", D, 0, 0.0f, 0.1f);
    if (!tied) ADD("output.w", n_vocab, D, 0.0f, 2.0f / sqrtf((float)D));
#undef ADD
    mf.bytes = tw_write(&h, t, n, NULL, 0, &mf.n_bytes);
    mf.n_vocab = n_vocab;
    mf.n_ctx = n_ctx;
    for (i = 0; i < n; i++) free(vals[i]);
    if (!mf.bytes) { fprintf(stderr, "test_embed: out of memory\n"); exit(1); }
    return mf;
}

/* f32 matrices, or f16 ones when f16. */
static model_file make_model(int n_layers, int n_vocab, int n_ctx, int f16, uint64_t seed) {
    return make_model_ex(n_layers, n_vocab, n_ctx, f16 ? TFM_DTYPE_F16 : TFM_DTYPE_F32, 0, seed);
}

static tfm_model *open_bytes(const model_file *mf) {
    tfm_model_desc md;
    tfm_model *m = NULL;
    memset(&md, 0, sizeof md);
    md.data = mf->bytes;
    md.data_bytes = mf->n_bytes;
    return tfm_model_open(&md, &m) == TFM_OK ? m : NULL;
}

/* ---- the logger and allocators ----------------------------------------------------------- */

typedef struct log_count { int count; tfm_result last; } log_count;
static void log_counter(void *user, tfm_result r, const char *msg) {
    log_count *l = (log_count *)user;
    (void)msg;
    l->count++;
    l->last = r;
}

/* A stack allocator, as engines use for level data: every free must be of the block on top. */
#define STACK_BYTES ((size_t)32 << 20)
#define STACK_DEPTH 64
typedef struct stack {
    unsigned char *base;
    size_t used;
    size_t top_at[STACK_DEPTH], top_bytes[STACK_DEPTH];
    int depth, n_alloc, fail_at, bad_frees;
} stack;

static void *stack_alloc(void *user, size_t bytes, size_t align) {
    stack *st = (stack *)user;
    size_t at = (st->used + align - 1) & ~(align - 1);
    if (st->n_alloc++ == st->fail_at || st->depth == STACK_DEPTH || at > STACK_BYTES || bytes > STACK_BYTES - at)
        return NULL;
    st->top_at[st->depth] = st->used; /* the free restores this */
    st->top_bytes[st->depth] = bytes;
    st->depth++;
    st->used = at + bytes;
    return st->base + at;
}

static void stack_free(void *user, void *ptr, size_t bytes) {
    stack *st = (stack *)user;
    size_t at;
    if (st->depth == 0) { st->bad_frees++; return; }
    at = (st->top_at[st->depth - 1] + 63) & ~(size_t)63;
    if ((unsigned char *)ptr != st->base + at || bytes != st->top_bytes[st->depth - 1]) { st->bad_frees++; return; }
    st->depth--;
    st->used = st->top_at[st->depth];
}

static tfm_allocator stack_allocator(stack *st) {
    tfm_allocator a;
    a.alloc = stack_alloc;
    a.free = stack_free;
    a.user = st;
    return a;
}

/* ---- a pak file read through tfm_io ------------------------------------------------------ */

typedef struct pak {
    const unsigned char *bytes; /* the whole pak; the model starts at model_at */
    size_t model_at;
    int n_reads, fail_read; /* fail_read: the read that fails (-1 none) */
} pak;

static bool pak_read(void *user, uint64_t offset, void *dst, size_t n_bytes) {
    pak *p = (pak *)user;
    if (p->n_reads++ == p->fail_read) return false;
    memcpy(dst, p->bytes + p->model_at + offset, n_bytes);
    return true;
}

typedef struct progress { int calls, cancel_at; uint64_t last_done, total; int monotonic; } progress;
static bool on_load(void *user, uint64_t done, uint64_t total) {
    progress *p = (progress *)user;
    if (done < p->last_done || done > total) p->monotonic = 0;
    p->last_done = done;
    p->total = total;
    return p->calls++ != p->cancel_at;
}

/* logits of tokens 1, 2, 3 from position 0 (n_vocab floats) */
static int logits_of(const tfm_model *m, float *out) {
    tfm_session *s = NULL;
    int32_t tok[3] = {1, 2, 3};
    int ok = tfm_session_create(m, NULL, &s) == TFM_OK && tfm_session_eval(s, tok, 3, 0, NULL) == TFM_OK;
    if (ok) memcpy(out, tfm_session_logits(s), (size_t)tfm_model_config(m).n_vocab * sizeof(float));
    tfm_session_destroy(s);
    return ok;
}

static void test_io(void) {
    model_file mf = make_model(2, 40, 32, 0, 7);
    unsigned char *pakbuf = (unsigned char *)malloc(mf.n_bytes + 1000);
    float *want = (float *)malloc(40 * sizeof(float)), *got = (float *)malloc(40 * sizeof(float));
    tfm_model_desc md;
    tfm_model *m = NULL, *ref = open_bytes(&mf);
    pak p;
    progress pr;
    log_count lg;
    size_t cut;
    int n_bad = 0;
    memset(pakbuf, 0xAB, 1000);
    memcpy(pakbuf + 1000, mf.bytes, mf.n_bytes); /* the model at an odd offset inside the pak */
    CHECK(ref != NULL && logits_of(ref, want));
    memset(&p, 0, sizeof p);
    p.bytes = pakbuf; p.model_at = 1000; p.fail_read = -1;
    memset(&md, 0, sizeof md);
    md.io.read = pak_read; md.io.user = &p; md.io.file_bytes = mf.n_bytes;
    CHECK(tfm_model_open(&md, &m) == TFM_OK && m != NULL);
    CHECK(m && logits_of(m, got) && memcmp(want, got, 40 * sizeof(float)) == 0);
    tfm_model_close(m);
    /* two sources at once, a failing read, a short file: refused like the other sources */
    md.data = mf.bytes; md.data_bytes = mf.n_bytes;
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_INVALID_ARG && m == NULL);
    md.data = NULL; md.data_bytes = 0;
    memset(&lg, 0, sizeof lg);
    md.logger.log = log_counter; md.logger.user = &lg;
    p.fail_read = 0; p.n_reads = 0;
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_IO && m == NULL && lg.count == 1 && lg.last == TFM_ERR_IO);
    p.fail_read = -1;
    for (cut = 0; cut < mf.n_bytes; cut += 61) { /* truncations, as test_core does for memory */
        tfm_result r;
        md.io.file_bytes = cut;
        r = tfm_model_open(&md, &m);
        if (r == TFM_OK || m != NULL) n_bad++;
        tfm_model_close(m);
    }
    CHECK_MSG(n_bad == 0, "%d truncated files opened through io", n_bad);
    md.io.file_bytes = mf.n_bytes;
    /* load progress: monotonic, ends at the total; a cancel is CANCELLED and not logged */
    memset(&pr, 0, sizeof pr);
    pr.cancel_at = -1; pr.monotonic = 1;
    md.load_progress = on_load; md.progress_user = &pr;
    CHECK(tfm_model_open(&md, &m) == TFM_OK);
    CHECK(pr.calls >= 1 && pr.monotonic && pr.last_done == mf.n_bytes && pr.total == mf.n_bytes);
    tfm_model_close(m);
    memset(&pr, 0, sizeof pr);
    pr.cancel_at = 0;
    lg.count = 0;
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_CANCELLED && m == NULL && lg.count == 0);
    md.io.read = NULL; /* the memory source reports once, and can be cancelled too */
    md.data = mf.bytes; md.data_bytes = mf.n_bytes;
    memset(&pr, 0, sizeof pr);
    pr.cancel_at = -1;
    CHECK(tfm_model_open(&md, &m) == TFM_OK && pr.calls == 1 && pr.last_done == mf.n_bytes);
    tfm_model_close(m);
    pr.calls = 0; pr.cancel_at = 0;
    CHECK(tfm_model_open(&md, &m) == TFM_ERR_CANCELLED && m == NULL && lg.count == 0);
    tfm_model_close(ref);
    free(pakbuf); free(want); free(got); free(mf.bytes);
}

/* A path is mapped (mmap, or CreateFileMapping on Windows): no block as large as the file comes
   from the allocator; with no_mmap it is read into one. Both give the same logits. */
static void test_mapped_path(void) {
    model_file mf = make_model(2, 40, 32, 0, 11);
    const char *path = "build/test_embed_map.tfm";
    float want[40], got[40];
    int no_mmap;
    FILE *fp = fopen(path, "wb");
    tfm_model *ref = open_bytes(&mf);
    CHECK(fp != NULL && ref != NULL && logits_of(ref, want));
    if (fp) { fwrite(mf.bytes, 1, mf.n_bytes, fp); fclose(fp); }
    for (no_mmap = 0; no_mmap < 2; no_mmap++) {
        test_alloc c;
        tfm_model_desc md;
        tfm_model *m = NULL;
        memset(&c, 0, sizeof c);
        memset(&md, 0, sizeof md);
        md.path = path;
        md.no_mmap = no_mmap != 0;
        md.allocator = test_allocator(&c);
        CHECK(tfm_model_open(&md, &m) == TFM_OK);
        CHECK(m && logits_of(m, got) && memcmp(want, got, sizeof want) == 0);
        tfm_model_close(m);
        CHECK(c.live == 0);
#if defined(__unix__) || defined(__APPLE__) || defined(_WIN32)
        CHECK_MSG((c.max_bytes >= mf.n_bytes) == (no_mmap != 0), "no_mmap %d: largest block %zu, file %zu", no_mmap,
                  c.max_bytes, mf.n_bytes);
#endif
    }
    remove(path);
    tfm_model_close(ref);
    free(mf.bytes);
}

/* The last logits of tokens 1, 2, 3 evaluated one at a time (the one-token kernels). */
static int logits_one_by_one(const tfm_model *m, float *out) {
    tfm_session *s = NULL;
    int32_t tok[3] = {1, 2, 3};
    int ok = tfm_session_create(m, NULL, &s) == TFM_OK, i;
    for (i = 0; i < 3 && ok; i++) ok = tfm_session_eval(s, tok + i, 1, i, NULL) == TFM_OK;
    if (ok) memcpy(out, tfm_session_logits(s), (size_t)tfm_model_config(m).n_vocab * sizeof(float));
    tfm_session_destroy(s);
    return ok;
}

/* q4_0 / q4_k matrices repacked at open for the kernels that read them interleaved (avx512,
   avx2, amx): from every source (borrowed and mapped: into a block of their
   own; read into memory: in place), tied and not; the logits the same bits as the scalar
   kernels' on the file's layout and as with no_repack, for a prompt and token by token; every
   block freed. */
static void test_repack(void) {
    enum { N_CASES = 6 };
    static const char *const sets[N_CASES] = {"avx512", "avx2", "avx512", "avx2", "amx", "amx"};
    static const tfm_dtype types[N_CASES] = {TFM_DTYPE_Q4_0, TFM_DTYPE_Q4_0, TFM_DTYPE_Q4_K, TFM_DTYPE_Q4_K, TFM_DTYPE_Q4_0, TFM_DTYPE_Q4_K};
    const char *path = "build/test_embed_q4.tfm";
    int run, tied, si, runs[N_CASES];
    for (si = 0; si < N_CASES; si++) {
        tfm__isa isa;
        runs[si] = tfm__pick_isa(sets[si], &isa);
        if (!runs[si])
            printf("SKIP repacked %s matrices: the %s kernels are not compiled in or this CPU lacks them\n",
                   tfm__dtype_of(types[si]).info.name, sets[si]);
    }
    for (run = 0; run < 2 * N_CASES; run++) { /* each case, untied and tied */
        model_file mf;
        float want[48], want1[48], got[48], got1[48];
        tfm_model_desc md;
        tfm_model *ref = NULL;
        int src, keep;
        FILE *fp;
        si = run / 2;
        tied = run % 2;
        if (!runs[si]) continue;
        mf = make_model_ex(2, 48, 32, types[si], tied, 71 + (uint64_t)tied);
        fp = fopen(path, "wb");
        if (fp) { fwrite(mf.bytes, 1, mf.n_bytes, fp); fclose(fp); }
        memset(&md, 0, sizeof md);
        md.data = mf.bytes; md.data_bytes = mf.n_bytes; md.kernels = "scalar";
        CHECK(fp != NULL && tfm_model_open(&md, &ref) == TFM_OK && logits_of(ref, want) && logits_one_by_one(ref, want1));
        CHECK(memcmp(want, want1, sizeof want) == 0);
        for (src = 0; src < 4; src++) /* borrowed, mapped path, path read into memory, io */
            for (keep = 0; keep < 2; keep++) {
                test_alloc c;
                pak p;
                tfm_model *m = NULL;
                bool copied = src < 2 && !keep;
                memset(&c, 0, sizeof c);
                memset(&md, 0, sizeof md);
                memset(&p, 0, sizeof p);
                p.bytes = mf.bytes; p.fail_read = -1;
                if (src == 0) { md.data = mf.bytes; md.data_bytes = mf.n_bytes; }
                else if (src == 3) { md.io.read = pak_read; md.io.user = &p; md.io.file_bytes = mf.n_bytes; }
                else { md.path = path; md.no_mmap = src == 2; }
                md.kernels = sets[si];
                md.no_repack = keep != 0;
                md.allocator = test_allocator(&c);
                CHECK_MSG(tfm_model_open(&md, &m) == TFM_OK, "%s %s: source %d, no_repack %d", sets[si],
                          tfm__dtype_of(types[si]).info.name, src, keep);
                if (!m) continue;
                CHECK_MSG(m->layers[1].w_down.ilv == !keep && m->w_out.ilv == !keep && m->tok_embd.ilv == (tied && !keep),
                          "source %d, no_repack %d, tied %d: matrices interleaved %d %d %d", src, keep, tied,
                          m->layers[1].w_down.ilv, m->w_out.ilv, m->tok_embd.ilv);
                CHECK_MSG((m->ilv_block != NULL) == copied, "source %d, no_repack %d: a block of their own %p", src, keep,
                          (void *)m->ilv_block);
                CHECK(logits_of(m, got) && logits_one_by_one(m, got1));
                CHECK_MSG(memcmp(want, got, sizeof want) == 0 && memcmp(want1, got1, sizeof want) == 0,
                          "%s %s: source %d, no_repack %d, tied %d: logits differ from the scalar kernels'", sets[si],
                          tfm__dtype_of(types[si]).info.name, src, keep, tied);
                tfm_model_close(m);
                CHECK(c.live == 0);
            }
        tfm_model_close(ref);
        free(mf.bytes);
        remove(path);
    }
}

/* Model, session and sampler from one stack allocator, destroyed in reverse order: every free
   is of the top block, and an allocation failing at any point unwinds in order too. */
static void test_stack_allocator(void) {
    model_file mf = make_model(2, 40, 32, 1, 8), mq = make_model_ex(2, 48, 32, TFM_DTYPE_Q4_0, 1, 81);
    stack st;
    pak p;
    int fail, n_total = -1, path_done = 0;
    const char *path = "build/test_embed_stack.tfm";
    FILE *fp = fopen(DEMO, "rb");
    int demo = fp != NULL;
    if (fp) fclose(fp);
    else printf("SKIP stack allocator on %s (missing: make builds it)\n", DEMO);
    fp = fopen(path, "wb");
    if (fp) { fwrite(mf.bytes, 1, mf.n_bytes, fp); fclose(fp); }
    memset(&st, 0, sizeof st);
    st.base = (unsigned char *)malloc(STACK_BYTES);
    for (fail = 0; fail < 32; fail++) {
        int src;
        for (src = 0; src < 6; src++) { /* io, path read with no_mmap, borrowed memory, the demo model, then
                                           a q4_0 model borrowed and through io (its matrices repacked
                                           into a block of their own / in place with avx512) */
            tfm_model_desc md;
            tfm_session_desc sd;
            tfm_sampler_desc pd;
            tfm_model *m = NULL;
            tfm_session *s = NULL;
            tfm_sampler *smp = NULL;
            tfm_result r;
            int32_t tok[2] = {3, 4}, next;
            st.used = 0; st.depth = 0; st.n_alloc = 0; st.fail_at = fail; st.bad_frees = 0;
            memset(&md, 0, sizeof md);
            memset(&p, 0, sizeof p);
            p.bytes = src == 5 ? mq.bytes : mf.bytes; p.fail_read = -1;
            if (src == 0 || src == 5) { md.io.read = pak_read; md.io.user = &p; md.io.file_bytes = src == 5 ? mq.n_bytes : mf.n_bytes; }
            else if (src == 1) { md.path = path; md.no_mmap = true; }
            else if (src == 3) { md.path = DEMO; md.no_mmap = true; } /* a tokenizer block too */
            else if (src == 4) { md.data = mq.bytes; md.data_bytes = mq.n_bytes; }
            else { md.data = mf.bytes; md.data_bytes = mf.n_bytes; }
            md.allocator = stack_allocator(&st);
            memset(&sd, 0, sizeof sd);
            sd.allocator = stack_allocator(&st);
            memset(&pd, 0, sizeof pd);
            pd.temperature = 1.0f; pd.repeat_penalty = 1.1f;
            pd.allocator = stack_allocator(&st);
            if (src == 3 && !demo) continue;
            r = tfm_model_open(&md, &m);
            if (!r) r = tfm_session_create(m, &sd, &s);
            pd.n_vocab = tfm_model_config(m).n_vocab;
            if (!r) r = tfm_sampler_create(&pd, &smp);
            if (!r) {
                CHECK(tfm_session_eval(s, tok, 2, 0, NULL) == TFM_OK);
                CHECK(tfm_sample(smp, tfm_session_logits(s), pd.n_vocab, &next) == TFM_OK);
                if (src == 0) n_total = st.n_alloc;
                if (src == 1) path_done = 1;
            } else {
                CHECK_MSG(r == TFM_ERR_OUT_OF_MEMORY, "source %d, allocation %d failed: %s", src, fail,
                          tfm_result_string(r));
            }
            tfm_sampler_destroy(smp);
            tfm_session_destroy(s);
            tfm_model_close(m);
            CHECK_MSG(st.bad_frees == 0 && st.depth == 0, "source %d, failing allocation %d: %d frees out of "
                      "order, %d blocks left", src, fail, st.bad_frees, st.depth);
        }
        if (n_total >= 0 && fail > n_total) break;
    }
    printf("stack allocator: %d allocations (io source), freed in reverse order, also when any one fails\n", n_total);
    CHECK(n_total >= 4 && path_done);
    free(st.base);
    remove(path);
    free(mf.bytes);
    free(mq.bytes);
}

/* tfm_session_memory_bytes is what create allocates; a session in the host's block works the
   same and allocates nothing. */
static void test_session_memory(void) {
    model_file mf = make_model(3, 50, 40, 0, 9);
    tfm_model *m = open_bytes(&mf);
    tfm_session_desc sd;
    tfm_session *a = NULL, *b = NULL;
    test_alloc c;
    size_t need = 0, need2 = 0;
    unsigned char *raw;
    int32_t tok[5] = {5, 6, 7, 8, 9};
    if (!m) { CHECK(m != NULL); free(mf.bytes); return; }
    memset(&c, 0, sizeof c);
    memset(&sd, 0, sizeof sd);
    sd.n_ctx = 24; sd.n_batch = 3; sd.allocator = test_allocator(&c);
    CHECK(tfm_session_memory_bytes(m, &sd, &need) == TFM_OK && need > 0);
    CHECK(tfm_session_create(m, &sd, &a) == TFM_OK && c.n_alloc == 1 && c.last_bytes == need);
    sd.n_ctx = 12;
    CHECK(tfm_session_memory_bytes(m, &sd, &need2) == TFM_OK && need2 < need);
    sd.n_ctx = -1;
    CHECK(tfm_session_memory_bytes(m, &sd, &need2) == TFM_ERR_INVALID_ARG && need2 == 0);
    CHECK(tfm_session_memory_bytes(NULL, &sd, &need2) == TFM_ERR_INVALID_ARG);
    sd.n_ctx = 24;
    raw = (unsigned char *)malloc(need + 128);
    sd.memory = raw + (64 - (uintptr_t)raw % 64) % 64 + 1; /* misaligned */
    sd.memory_bytes = need;
    CHECK(tfm_session_create(m, &sd, &b) == TFM_ERR_INVALID_ARG && b == NULL);
    sd.memory = raw + (64 - (uintptr_t)raw % 64) % 64;
    sd.memory_bytes = need - 1;
    CHECK(tfm_session_create(m, &sd, &b) == TFM_ERR_INVALID_ARG && b == NULL);
    sd.memory_bytes = need;
    c.n_alloc = 0;
    CHECK(tfm_session_create(m, &sd, &b) == TFM_OK && b == (tfm_session *)sd.memory && c.n_alloc == 0);
    if (a && b) {
        CHECK(tfm_session_eval(a, tok, 5, 0, NULL) == TFM_OK && tfm_session_eval(b, tok, 5, 0, NULL) == TFM_OK);
        CHECK(memcmp(tfm_session_logits(a), tfm_session_logits(b), 50 * sizeof(float)) == 0);
    }
    tfm_session_destroy(b); /* frees nothing: the block is the host's */
    tfm_session_destroy(a);
    CHECK(c.n_free == 1 && c.live == 0);
    free(raw);
    tfm_model_close(m);
    free(mf.bytes);
}

/* ---- the bounded step -------------------------------------------------------------------- */

static uint64_t fake_now;
static uint64_t fake_clock(void *user) { (void)user; return ++fake_now; } /* 1 us per reading */

typedef struct prog { int calls, last_done, last_total, monotonic; } prog;
static void on_progress(void *user, int n_done, int n_total) {
    prog *p = (prog *)user;
    if (n_done < p->last_done || n_done > n_total) p->monotonic = 0;
    p->calls++;
    p->last_done = n_done;
    p->last_total = n_total;
}

typedef struct tok_log { int32_t t[64]; int n, stop_after; } tok_log;
static bool on_tok(void *user, int32_t token) {
    tok_log *l = (tok_log *)user;
    if (l->n < 64) l->t[l->n] = token;
    l->n++;
    return l->stop_after <= 0 || l->n < l->stop_after;
}

static int argmax(const float *v, int n) {
    int i, b = 0;
    for (i = 1; i < n; i++) if (v[i] > v[b]) b = i;
    return b;
}

static void make_ids(int32_t *ids, int n, int n_vocab, int seed) {
    int i;
    for (i = 0; i < n; i++) ids[i] = (int32_t)((i * 7 + seed * 13 + 3) % n_vocab);
}

/* Prompt then generation, one unit per step, against eval and a greedy loop by hand: the same
   logits bit for bit (any batch split and step size), units as documented, the last sampled
   token not evaluated. */
static void test_step_units(void) {
    enum { NV = 60, PROMPT = 23, GEN = 6, LAYERS = 3, BATCH = 5 };
    model_file mf = make_model(LAYERS, NV, 64, 0, 21);
    tfm_model *m = open_bytes(&mf);
    tfm_session_desc sd;
    tfm_session *a = NULL, *b = NULL;
    tfm_job_desc job;
    tfm_step_info info;
    int32_t ids[PROMPT + GEN];
    float *all = (float *)malloc((size_t)PROMPT * NV * sizeof(float)), *ref = (float *)malloc((size_t)PROMPT * NV * sizeof(float));
    int i, steps = 0, n_units = 0, want_units;
    prog pr;
    tok_log tl;
    test_alloc c;
    if (!m) { CHECK(m != NULL); free(mf.bytes); return; }
    make_ids(ids, PROMPT, NV, 1);
    memset(&c, 0, sizeof c);
    memset(&sd, 0, sizeof sd);
    sd.n_batch = BATCH; sd.allocator = test_allocator(&c);
    memset(&pr, 0, sizeof pr);
    pr.monotonic = 1;
    sd.eval_progress = on_progress; sd.progress_user = &pr;
    CHECK(tfm_session_create(m, &sd, &a) == TFM_OK);
    sd.eval_progress = NULL;
    sd.n_batch = 64;
    CHECK(tfm_session_create(m, &sd, &b) == TFM_OK);
    if (!a || !b) goto done;
    CHECK(tfm_session_job(a).status == TFM_JOB_NONE && tfm_session_logits(a) == NULL);
    /* reference: eval of the prompt with every logit, then greedy decode by hand */
    CHECK(tfm_session_eval(b, ids, PROMPT, 0, ref) == TFM_OK);
    for (i = 0; i < GEN; i++) {
        ids[PROMPT + i] = (int32_t)argmax(tfm_session_logits(b), NV);
        if (i + 1 < GEN) CHECK(tfm_session_decode(b, ids[PROMPT + i], PROMPT + i, NULL) == TFM_OK);
    }
    memset(&job, 0, sizeof job);
    job.tokens = ids; job.n_tokens = PROMPT; job.logits_all = all; job.n_generate = GEN;
    memset(&tl, 0, sizeof tl);
    job.on_token = on_tok; job.token_user = &tl;
    c.n_alloc = 0;
    CHECK(tfm_session_start(a, &job) == TFM_OK);
    CHECK(tfm_session_start(a, &job) == TFM_ERR_INVALID_ARG); /* busy */
    CHECK(tfm_session_eval(a, ids, 1, 0, NULL) == TFM_ERR_INVALID_ARG);
    do {
        CHECK(tfm_session_step(a, 1, 0, &info) == TFM_OK);
        CHECK(info.n_units == 1);
        n_units += info.n_units;
        steps++;
    } while (info.status == TFM_JOB_RUNNING && steps < 10000);
    CHECK(c.n_alloc == 0);
    /* units: 5 prompt passes (23 = 4 x 5 + 3) and 5 generated-token passes of 3 layers each;
       every one of them projects (logits_all: every prompt pass) in 4 slices (60 rows, 16 per
       slice); 6 samplings */
    want_units = (5 + (GEN - 1)) * LAYERS + (5 + (GEN - 1)) * 4 + GEN;
    CHECK_MSG(n_units == want_units, "%d units, expected %d", n_units, want_units);
    CHECK(info.status == TFM_JOB_DONE && info.n_generated == GEN && info.n_done == PROMPT && info.n_tokens == PROMPT);
    CHECK(info.token == ids[PROMPT + GEN - 1] && tl.n == GEN);
    CHECK(memcmp(tl.t, ids + PROMPT, GEN * sizeof(int32_t)) == 0);
    CHECK_MSG(memcmp(all, ref, (size_t)PROMPT * NV * sizeof(float)) == 0, "step-by-step logits_all differ from eval");
    CHECK(tfm_session_n_past(a) == PROMPT + GEN - 1 && tfm_session_n_past(b) == PROMPT + GEN - 1);
    CHECK(tfm_session_logits(a) && memcmp(tfm_session_logits(a), tfm_session_logits(b), NV * sizeof(float)) == 0);
    CHECK(memcmp(tfm_session_tokens(a), ids, (PROMPT + GEN - 1) * sizeof(int32_t)) == 0);
    CHECK(pr.monotonic && pr.calls == 5 && pr.last_done == PROMPT && pr.last_total == PROMPT);
    /* two threads, three units per step: the same tokens and logits */
    {
        tfm_session *t2 = NULL;
        tfm_session_desc d2;
        memset(&d2, 0, sizeof d2);
        d2.n_threads = 2; d2.n_batch = 7;
        CHECK(tfm_session_create(m, &d2, &t2) == TFM_OK);
        memset(&job, 0, sizeof job);
        job.tokens = ids; job.n_tokens = PROMPT; job.n_generate = GEN;
        CHECK(t2 && tfm_session_start(t2, &job) == TFM_OK);
        for (i = 0; t2 && i < 1000 && tfm_session_job(t2).status == TFM_JOB_RUNNING; i++)
            CHECK(tfm_session_step(t2, 3, 0, &info) == TFM_OK);
        CHECK(t2 && tfm_session_n_past(t2) == PROMPT + GEN - 1 && info.token == ids[PROMPT + GEN - 1]);
        CHECK(t2 && memcmp(tfm_session_logits(t2), tfm_session_logits(b), NV * sizeof(float)) == 0);
        tfm_session_destroy(t2);
    }
    /* on_token false stops the job after that token; a job without a sampler is greedy */
    CHECK(tfm_session_eval(a, ids, PROMPT, 0, NULL) == TFM_OK);
    memset(&job, 0, sizeof job);
    job.n_generate = 10;
    memset(&tl, 0, sizeof tl);
    tl.stop_after = 2;
    job.on_token = on_tok; job.token_user = &tl;
    CHECK(tfm_session_start(a, &job) == TFM_OK);
    CHECK(tfm_session_step(a, 0, 0, &info) == TFM_OK); /* no budget: to the end */
    CHECK(info.status == TFM_JOB_STOPPED && info.n_generated == 2 && tl.n == 2 && tl.t[0] == ids[PROMPT]);
    CHECK(tfm_session_n_past(a) == PROMPT + 1);
    /* an empty job is done at once */
    memset(&job, 0, sizeof job);
    CHECK(tfm_session_start(a, &job) == TFM_OK && tfm_session_job(a).status == TFM_JOB_DONE);
done:
    tfm_session_destroy(b);
    tfm_session_destroy(a);
    tfm_model_close(m);
    free(all); free(ref); free(mf.bytes);
}

static int abort_now;
static bool abort_flag(void *user) { (void)user; return abort_now != 0; }

/* Budgets: max_us too small for two units runs one unit per step, a large one runs the job in
   one step; cancel keeps what is done and is not logged; the context running out ends a job. */
static void test_step_budget(void) {
    enum { NV = 50, PROMPT = 17, LAYERS = 2 };
    model_file mf = make_model(LAYERS, NV, 24, 1, 22);
    tfm_model_desc md;
    tfm_model *m = NULL;
    tfm_session_desc sd;
    tfm_session *s = NULL, *r = NULL;
    tfm_job_desc job;
    tfm_step_info info;
    int32_t ids[PROMPT];
    log_count lg;
    int i, steps;
    memset(&md, 0, sizeof md);
    md.data = mf.bytes; md.data_bytes = mf.n_bytes;
    memset(&lg, 0, sizeof lg);
    md.logger.log = log_counter; md.logger.user = &lg;
    if (tfm_model_open(&md, &m) != TFM_OK) { CHECK(0); free(mf.bytes); return; }
    make_ids(ids, PROMPT, NV, 2);
    memset(&sd, 0, sizeof sd);
    sd.n_batch = 4;
    sd.clock_us = fake_clock;
    sd.should_abort = abort_flag;
    CHECK(tfm_session_create(m, &sd, &s) == TFM_OK);
    sd.clock_us = NULL;
    CHECK(tfm_session_create(m, &sd, &r) == TFM_OK);
    if (!s || !r) goto done;
    CHECK(tfm_session_eval(r, ids, PROMPT, 0, NULL) == TFM_OK);
    memset(&job, 0, sizeof job);
    job.tokens = ids; job.n_tokens = PROMPT;
    CHECK(tfm_session_start(s, &job) == TFM_OK);
    for (steps = 0; steps < 6; steps++) {
        CHECK(tfm_session_step(s, 0, 1, &info) == TFM_OK);
        CHECK_MSG(info.n_units == 1, "step %d: %d units under a 1 us budget", steps, info.n_units);
    }
    /* the fake clock makes every unit cost 1 us: a probe pass of 4 rows, then 2 rows (a layer of 4
       cost 1: 1/3 per row past the first, 0.5 us left for the next), then 1 */
    CHECK_MSG(info.status == TFM_JOB_RUNNING && tfm_session_n_past(s) == 7, "n_past %d", tfm_session_n_past(s));
    CHECK(tfm_session_step(s, 0, -1, &info) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_step(s, 0, 1000000, &info) == TFM_OK && info.status == TFM_JOB_DONE);
    CHECK(tfm_session_logits(s) && memcmp(tfm_session_logits(s), tfm_session_logits(r), NV * sizeof(float)) == 0);
    /* cancel between steps: the positions of finished passes stay, nothing is logged */
    CHECK(tfm_session_eval(s, ids, 0, 0, NULL) == TFM_OK && tfm_session_n_past(s) == 0);
    CHECK(tfm_session_start(s, &job) == TFM_OK);
    for (i = 0; i < 3 * LAYERS; i++) CHECK(tfm_session_step(s, 1, 0, &info) == TFM_OK);
    lg.count = 0;
    tfm_session_cancel(s);
    CHECK(tfm_session_job(s).status == TFM_JOB_CANCELLED && lg.count == 0);
    i = tfm_session_n_past(s);
    CHECK_MSG(i > 0 && i < PROMPT, "n_past %d after cancel", i);
    CHECK(tfm_session_eval(s, ids + i, (size_t)(PROMPT - i), i, NULL) == TFM_OK); /* continue by hand */
    CHECK(memcmp(tfm_session_logits(s), tfm_session_logits(r), NV * sizeof(float)) == 0);
    /* should_abort during a step: CANCELLED, also not logged */
    CHECK(tfm_session_eval(s, ids, 0, 0, NULL) == TFM_OK);
    CHECK(tfm_session_start(s, &job) == TFM_OK);
    CHECK(tfm_session_step(s, 2, 0, &info) == TFM_OK);
    abort_now = 1;
    CHECK(tfm_session_step(s, 2, 0, &info) == TFM_ERR_CANCELLED && info.status == TFM_JOB_CANCELLED);
    abort_now = 0;
    CHECK(lg.count == 0 && strstr(tfm_session_last_error(s), "cancel") != NULL);
    /* generation that runs into n_ctx ends with CONTEXT_FULL; every token up to n_ctx evaluated */
    CHECK(tfm_session_eval(s, ids, PROMPT, 0, NULL) == TFM_OK);
    memset(&job, 0, sizeof job);
    job.n_generate = 100;
    CHECK(tfm_session_start(s, &job) == TFM_OK);
    CHECK(tfm_session_step(s, 0, 0, &info) == TFM_OK);
    CHECK_MSG(info.status == TFM_JOB_CONTEXT_FULL && tfm_session_n_past(s) == 24 && info.n_generated == 24 - PROMPT + 1,
              "status %d, n_past %d, %d generated", (int)info.status, tfm_session_n_past(s), info.n_generated);
    /* nothing to sample from: no tokens and no logits */
    CHECK(tfm_session_eval(s, ids, 0, 0, NULL) == TFM_OK);
    CHECK(tfm_session_start(s, &job) == TFM_ERR_INVALID_ARG);
done:
    tfm_session_destroy(r);
    tfm_session_destroy(s);
    tfm_model_close(m);
    free(mf.bytes);
}

/* ---- batched decode across sessions --------------------------------------------------------- */

/* Four sessions (one with an f16 cache, one with a smaller n_ctx) decode side by side in one
   pass per token; each gets exactly the logits it gets alone. */
static void test_decode_batch(void) {
    enum { NV = 70, N = 4, STEPS = 5 };
    model_file mf = make_model(2, NV, 48, 0, 31), other = make_model(2, NV, 48, 0, 32);
    tfm_model *m = open_bytes(&mf), *m2 = open_bytes(&other);
    tfm_session *bs[N] = {0}, *solo[N] = {0}, *x = NULL, *dup[2];
    tfm_session_desc sd;
    int32_t prompt[12], tok[N];
    test_alloc c;
    int i, k, same = 1;
    if (!m || !m2) { CHECK(0); goto done; }
    memset(&c, 0, sizeof c);
    for (i = 0; i < N; i++) {
        memset(&sd, 0, sizeof sd);
        sd.n_batch = 8;
        sd.kv_dtype = i == 1 ? TFM_DTYPE_F16 : TFM_DTYPE_F32;
        sd.n_ctx = i == 2 ? 20 : 0;
        sd.allocator = test_allocator(&c);
        CHECK(tfm_session_create(m, &sd, &bs[i]) == TFM_OK && tfm_session_create(m, &sd, &solo[i]) == TFM_OK);
        if (!bs[i] || !solo[i]) goto done;
        make_ids(prompt, 3 + 3 * i, NV, i);
        CHECK(tfm_session_eval(bs[i], prompt, (size_t)(3 + 3 * i), 0, NULL) == TFM_OK);
        CHECK(tfm_session_eval(solo[i], prompt, (size_t)(3 + 3 * i), 0, NULL) == TFM_OK);
        tok[i] = (int32_t)argmax(tfm_session_logits(bs[i]), NV);
    }
    c.n_alloc = 0;
    for (k = 0; k < STEPS; k++) {
        CHECK(tfm_session_decode_batch(bs, tok, N) == TFM_OK);
        for (i = 0; i < N; i++) {
            const float *lg = NULL;
            CHECK(tfm_session_decode(solo[i], tok[i], tfm_session_n_past(solo[i]), &lg) == TFM_OK);
            if (!lg || !tfm_session_logits(bs[i]) || memcmp(lg, tfm_session_logits(bs[i]), NV * sizeof(float)) != 0) same = 0;
            CHECK(tfm_session_n_past(bs[i]) == 3 + 3 * i + k + 1);
            tok[i] = (int32_t)argmax(lg ? lg : tfm_session_logits(bs[i]), NV);
        }
    }
    CHECK_MSG(same, "batched decode differs from decoding each session alone");
    CHECK(c.n_alloc == 0);
    /* refused: a session twice, another model, more than the lead's n_batch, a token outside the
       vocabulary, a full context; nothing decoded then */
    dup[0] = bs[0]; dup[1] = bs[0];
    CHECK(tfm_session_decode_batch(dup, tok, 2) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_create(m2, NULL, &x) == TFM_OK);
    dup[1] = x;
    CHECK(tfm_session_decode_batch(dup, tok, 2) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_decode_batch(bs, tok, 0) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_decode_batch(bs, tok, 9) == TFM_ERR_INVALID_ARG);
    tok[3] = NV;
    CHECK(tfm_session_decode_batch(bs, tok, N) == TFM_ERR_INVALID_ARG);
    tok[3] = 0;
    for (i = tfm_session_n_past(bs[2]); i < 20; i++) CHECK(tfm_session_decode(bs[2], 1, i, NULL) == TFM_OK);
    CHECK(tfm_session_decode_batch(bs, tok, N) == TFM_ERR_CONTEXT_FULL);
    CHECK(tfm_session_n_past(bs[0]) == 3 + STEPS && tfm_session_n_past(bs[2]) == 20);
done:
    tfm_session_destroy(x);
    for (i = 0; i < N; i++) { tfm_session_destroy(bs[i]); tfm_session_destroy(solo[i]); }
    tfm_model_close(m2); tfm_model_close(m);
    free(mf.bytes); free(other.bytes);
}

/* Three jobs stepped as a batch, one unit at a time (prompts of different lengths, then
   generation side by side): each session's tokens and logits are those of its job alone; a
   session cancelled in the middle stays busy until its pass ends, the others go on. */
static void test_step_batch(void) {
    enum { NV = 64, N = 3, GEN = 5 };
    model_file mf = make_model(2, NV, 64, 1, 33);
    tfm_model *m = open_bytes(&mf);
    tfm_session *bs[N] = {0}, *solo = NULL;
    tfm_session_desc sd;
    tfm_job_desc job[N];
    tfm_step_info infos[N], info;
    int32_t prompt[N][20];
    int i, k, n_prompt[N] = {20, 3, 11}, rounds = 0;
    if (!m) { CHECK(0); free(mf.bytes); return; }
    memset(&sd, 0, sizeof sd);
    sd.n_batch = 6;
    for (i = 0; i < N; i++) CHECK(tfm_session_create(m, &sd, &bs[i]) == TFM_OK);
    CHECK(tfm_session_create(m, &sd, &solo) == TFM_OK);
    if (!bs[0] || !bs[1] || !bs[2] || !solo) goto done;
    for (i = 0; i < N; i++) {
        make_ids(prompt[i], n_prompt[i], NV, 10 + i);
        memset(&job[i], 0, sizeof job[i]);
        job[i].tokens = prompt[i]; job[i].n_tokens = (size_t)n_prompt[i]; job[i].n_generate = GEN;
        CHECK(tfm_session_start(bs[i], &job[i]) == TFM_OK);
    }
    do {
        CHECK(tfm_session_step_batch(bs, N, 1, 0, infos) == TFM_OK);
        rounds++;
    } while ((infos[0].status == TFM_JOB_RUNNING || infos[1].status == TFM_JOB_RUNNING ||
              infos[2].status == TFM_JOB_RUNNING) && rounds < 10000);
    for (i = 0; i < N; i++) {
        CHECK(infos[i].status == TFM_JOB_DONE && infos[i].n_generated == GEN);
        CHECK(tfm_session_eval(solo, NULL, 0, 0, NULL) == TFM_OK);
        CHECK(tfm_session_start(solo, &job[i]) == TFM_OK);
        CHECK(tfm_session_step(solo, 0, 0, &info) == TFM_OK && info.status == TFM_JOB_DONE);
        CHECK_MSG(info.token == infos[i].token && tfm_session_n_past(solo) == tfm_session_n_past(bs[i]) &&
                  memcmp(tfm_session_tokens(solo), tfm_session_tokens(bs[i]),
                         (size_t)tfm_session_n_past(solo) * sizeof(int32_t)) == 0 &&
                  memcmp(tfm_session_logits(solo), tfm_session_logits(bs[i]), NV * sizeof(float)) == 0,
                  "session %d of the batch differs from its job alone", i);
    }
    /* cancel the second session in the middle of a pass the first one leads */
    for (i = 0; i < N; i++) {
        CHECK(tfm_session_eval(bs[i], NULL, 0, 0, NULL) == TFM_OK);
        CHECK(tfm_session_start(bs[i], &job[i]) == TFM_OK);
    }
    CHECK(tfm_session_step_batch(bs, N, 1, 0, infos) == TFM_OK); /* layer 0 of the first pass */
    tfm_session_cancel(bs[1]);
    CHECK(tfm_session_job(bs[1]).status == TFM_JOB_CANCELLED);
    CHECK(tfm_session_eval(bs[1], prompt[1], 1, 0, NULL) == TFM_ERR_INVALID_ARG); /* its rows are in the pass */
    CHECK(tfm_session_step(bs[1], 0, 0, &info) == TFM_OK && info.n_units == 0);
    k = 0;
    do {
        CHECK(tfm_session_step_batch(bs, N, 2, 0, infos) == TFM_OK);
    } while ((infos[0].status == TFM_JOB_RUNNING || infos[2].status == TFM_JOB_RUNNING) && ++k < 10000);
    CHECK(infos[1].status == TFM_JOB_CANCELLED && tfm_session_n_past(bs[1]) == 0);
    CHECK(infos[0].status == TFM_JOB_DONE && infos[2].status == TFM_JOB_DONE);
    CHECK(tfm_session_eval(bs[1], prompt[1], 1, 0, NULL) == TFM_OK); /* free again */
    for (i = 0; i < N; i += 2) {
        CHECK(tfm_session_eval(solo, NULL, 0, 0, NULL) == TFM_OK);
        CHECK(tfm_session_start(solo, &job[i]) == TFM_OK && tfm_session_step(solo, 0, 0, &info) == TFM_OK);
        CHECK(memcmp(tfm_session_logits(solo), tfm_session_logits(bs[i]), NV * sizeof(float)) == 0);
    }
    /* a session in the pass of another lead cannot lead its own batch */
    for (i = 0; i < N; i++) CHECK(tfm_session_start(bs[i], &job[i]) == TFM_OK || i == 1);
    CHECK(tfm_session_step_batch(bs, N, 1, 0, infos) == TFM_OK);
    CHECK(tfm_session_step_batch(bs + 1, 2, 1, 0, infos) == TFM_ERR_INVALID_ARG);
    for (i = 0; i < N; i++) tfm_session_cancel(bs[i]);
    CHECK(tfm_session_step_batch(bs, N, 0, 0, infos) == TFM_OK && infos[0].n_units == 0);
done:
    for (i = 0; i < N; i++) tfm_session_destroy(bs[i]);
    tfm_session_destroy(solo);
    tfm_model_close(m);
    free(mf.bytes);
}

/* ---- conversation state ----------------------------------------------------------------- */

/* Continue s with tokens and return the final logits' copy in out (n_vocab floats). */
static int continue_with(tfm_session *s, const int32_t *tokens, int n, float *out, int n_vocab) {
    const float *lg;
    if (tfm_session_eval(s, tokens, (size_t)n, tfm_session_n_past(s), NULL) != TFM_OK) return 0;
    lg = tfm_session_logits(s);
    if (!lg) return 0;
    memcpy(out, lg, (size_t)n_vocab * sizeof(float));
    return 1;
}

/* Save / load between sessions of other sizes; the size holds only the used positions; the
   state of another model or cache type, and damaged bytes, are refused with the session left
   as it was; truncate; sampler state. */
static void test_state_save_load(void) {
    enum { NV = 40, CTX = 48 };
    model_file mf = make_model(3, NV, CTX, 0, 41), other = make_model(3, NV, CTX, 0, 42);
    tfm_model *m = open_bytes(&mf), *m2 = open_bytes(&other);
    tfm_session_desc sd;
    tfm_session *a = NULL, *b = NULL, *h = NULL, *x = NULL;
    int32_t ids[30];
    float want[NV], got[NV];
    unsigned char *buf = NULL, *bad = NULL;
    size_t n10 = 0, n20 = 0, n = 0, cut;
    test_alloc c;
    int bad_loads = 0, i;
    if (!m || !m2) { CHECK(0); goto done; }
    make_ids(ids, 30, NV, 5);
    memset(&c, 0, sizeof c);
    memset(&sd, 0, sizeof sd);
    sd.allocator = test_allocator(&c);
    CHECK(tfm_session_create(m, &sd, &a) == TFM_OK);
    sd.n_ctx = 32; sd.n_batch = 3;
    CHECK(tfm_session_create(m, &sd, &b) == TFM_OK);
    sd.kv_dtype = TFM_DTYPE_F16;
    CHECK(tfm_session_create(m, &sd, &h) == TFM_OK);
    CHECK(tfm_session_create(m2, NULL, &x) == TFM_OK);
    if (!a || !b || !h || !x) goto done;
    c.n_alloc = 0;
    CHECK(tfm_session_eval(a, ids, 10, 0, NULL) == TFM_OK && tfm_session_save(a, NULL, 0, &n10) == TFM_OK);
    CHECK(tfm_session_eval(a, ids + 10, 10, 10, NULL) == TFM_OK && tfm_session_save(a, NULL, 0, &n20) == TFM_OK);
    /* 10 more positions: 10 tokens and 3 layers x 10 x (32 keys + 32 values) floats */
    CHECK_MSG(n20 - n10 == 10 * 4 + 3 * 10 * 2 * 32 * 4, "state grows by %zu bytes for 10 positions", n20 - n10);
    buf = (unsigned char *)malloc(n20);
    bad = (unsigned char *)malloc(n20);
    CHECK(tfm_session_save(a, buf, n20 - 1, &n) == TFM_ERR_INVALID_ARG && n == n20);
    CHECK(tfm_session_save(a, buf, n20, &n) == TFM_OK && n == n20);
    /* load into a smaller session with another n_batch: the same continuation, bit for bit */
    CHECK(tfm_session_load(b, buf, n20) == TFM_OK && tfm_session_n_past(b) == 20);
    CHECK(tfm_session_logits(b) && memcmp(tfm_session_logits(b), tfm_session_logits(a), NV * sizeof(float)) == 0);
    CHECK(memcmp(tfm_session_tokens(b), ids, 20 * sizeof(int32_t)) == 0);
    CHECK(continue_with(a, ids + 20, 5, want, NV) && continue_with(b, ids + 20, 5, got, NV));
    CHECK_MSG(memcmp(want, got, sizeof want) == 0, "a loaded state continues differently");
    /* refused: another model, another cache type, more positions than the session holds */
    CHECK(tfm_session_load(x, buf, n20) == TFM_ERR_INVALID_ARG && tfm_session_n_past(x) == 0);
    CHECK(tfm_session_load(h, buf, n20) == TFM_ERR_INVALID_ARG && strstr(tfm_session_last_error(h), "f16"));
    CHECK(tfm_session_eval(a, ids, 30, 0, NULL) == TFM_OK && tfm_session_eval(a, ids, 4, 30, NULL) == TFM_OK);
    {
        size_t big = 0;
        unsigned char *bb;
        CHECK(tfm_session_save(a, NULL, 0, &big) == TFM_OK);
        bb = (unsigned char *)malloc(big);
        CHECK(bb && tfm_session_save(a, bb, big, &big) == TFM_OK);
        CHECK(bb && tfm_session_load(b, bb, big) == TFM_ERR_CONTEXT_FULL && tfm_session_n_past(b) == 25);
        free(bb);
    }
    /* every truncation and a byte flipped anywhere in the header: an error or a clean load, never
       a crash, and after an error the session is unchanged */
    for (cut = 0; cut < n20; cut++) {
        tfm_result r = tfm_session_load(b, buf, cut);
        if (r == TFM_OK || tfm_session_n_past(b) != 25) bad_loads++;
    }
    for (i = 0; i < 64 * 8; i++) {
        tfm_result r;
        memcpy(bad, buf, n20);
        bad[i / 8] ^= (unsigned char)(1u << (i % 8));
        r = tfm_session_load(b, bad, n20);
        if (r != TFM_OK && tfm_session_n_past(b) != 25) bad_loads++;
        if (r == TFM_OK) CHECK(tfm_session_eval(b, ids, 2, 0, NULL) == TFM_OK); /* still usable */
        CHECK(tfm_session_load(b, buf, n20) == TFM_OK && continue_with(b, ids + 20, 5, got, NV));
        CHECK(tfm_session_truncate(b, 20) == TFM_OK);
        if (r == TFM_OK) continue;
        CHECK(tfm_session_eval(b, ids, 25, 0, NULL) == TFM_OK); /* back to 25 for the next round */
    }
    CHECK_MSG(bad_loads == 0, "%d damaged states loaded or changed the session", bad_loads);
    CHECK(memcmp(got, want, sizeof want) == 0);
    /* truncate: the logits are gone until the next eval, which gives them back exactly */
    CHECK(tfm_session_eval(b, ids, 12, 0, NULL) == TFM_OK);
    memcpy(want, tfm_session_logits(b), sizeof want);
    CHECK(tfm_session_truncate(b, 13) == TFM_ERR_INVALID_ARG && tfm_session_truncate(b, -1) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_truncate(b, 12) == TFM_OK && tfm_session_logits(b) != NULL); /* no change */
    CHECK(tfm_session_truncate(b, 7) == TFM_OK && tfm_session_n_past(b) == 7 && tfm_session_logits(b) == NULL);
    CHECK(continue_with(b, ids + 7, 5, got, NV) && memcmp(got, want, sizeof want) == 0);
    CHECK(c.n_alloc == 0);
done:
    tfm_session_destroy(x); tfm_session_destroy(h); tfm_session_destroy(b); tfm_session_destroy(a);
    tfm_model_close(m2); tfm_model_close(m);
    free(buf); free(bad); free(mf.bytes); free(other.bytes);
}

/* A shared prefix computed once and copied into three sessions (one with an f16 cache, one
   smaller): each continues exactly as if it had evaluated the prefix itself. */
static void test_state_copy(void) {
    enum { NV = 45, SYS = 14 };
    model_file mf = make_model(2, NV, 40, 1, 43);
    tfm_model *m = open_bytes(&mf);
    tfm_session_desc sd;
    tfm_session *sys = NULL, *npc[3] = {0}, *ref = NULL;
    int32_t ids[SYS + 12];
    float want[NV], got[NV];
    int i;
    if (!m) { CHECK(0); free(mf.bytes); return; }
    make_ids(ids, SYS + 12, NV, 6);
    CHECK(tfm_session_create(m, NULL, &sys) == TFM_OK && tfm_session_create(m, NULL, &ref) == TFM_OK);
    for (i = 0; i < 3; i++) {
        memset(&sd, 0, sizeof sd);
        sd.kv_dtype = i == 1 ? TFM_DTYPE_F16 : TFM_DTYPE_F32;
        sd.n_ctx = i == 2 ? 24 : 0;
        CHECK(tfm_session_create(m, &sd, &npc[i]) == TFM_OK);
    }
    if (!sys || !ref || !npc[0] || !npc[1] || !npc[2]) goto done;
    CHECK(tfm_session_eval(sys, ids, SYS, 0, NULL) == TFM_OK);
    for (i = 0; i < 3; i++) {
        int32_t reply[3];
        reply[0] = (int32_t)i; reply[1] = (int32_t)(i + 7); reply[2] = (int32_t)(i + 20);
        CHECK(tfm_session_copy(npc[i], sys, SYS) == TFM_OK && tfm_session_n_past(npc[i]) == SYS);
        CHECK(tfm_session_logits(npc[i]) && memcmp(tfm_session_logits(npc[i]), tfm_session_logits(sys), NV * sizeof(float)) == 0);
        CHECK(continue_with(npc[i], reply, 3, got, NV));
        if (i == 1) { /* f32 rows rounded into an f16 cache: within f16 rounding of the f32 result */
            double md = 0.0, top = 0.0;
            int k;
            CHECK(tfm_session_eval(ref, ids, SYS, 0, NULL) == TFM_OK && continue_with(ref, reply, 3, want, NV));
            for (k = 0; k < NV; k++) {
                md = fabs((double)got[k] - want[k]) > md ? fabs((double)got[k] - want[k]) : md;
                top = fabs((double)want[k]) > top ? fabs((double)want[k]) : top;
            }
            CHECK_MSG(md <= 2e-3 * top && md > 0.0, "f32 prefix copied into an f16 cache: maxdiff %g (top %g)", md, top);
            continue;
        } else {
            CHECK(tfm_session_eval(ref, ids, SYS, 0, NULL) == TFM_OK && continue_with(ref, reply, 3, want, NV));
        }
        CHECK_MSG(memcmp(got, want, sizeof want) == 0, "npc %d: a copied prefix continues differently", i);
    }
    /* a shorter prefix: no logits until evaluated; refusals */
    CHECK(tfm_session_copy(npc[0], sys, 5) == TFM_OK && tfm_session_n_past(npc[0]) == 5 && tfm_session_logits(npc[0]) == NULL);
    CHECK(tfm_session_copy(npc[0], sys, SYS + 1) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_copy(npc[0], npc[0], 1) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_session_eval(sys, ids, SYS + 8, 0, NULL) == TFM_OK);
    CHECK(tfm_session_copy(npc[2], sys, SYS + 8) == TFM_OK); /* 22 of npc 2's 24 */
    CHECK(tfm_session_eval(sys, ids, 0, 0, NULL) == TFM_OK && tfm_session_eval(sys, ids, 25, 0, NULL) == TFM_OK);
    CHECK(tfm_session_copy(npc[2], sys, 25) == TFM_ERR_CONTEXT_FULL);
done:
    for (i = 0; i < 3; i++) tfm_session_destroy(npc[i]);
    tfm_session_destroy(ref); tfm_session_destroy(sys);
    tfm_model_close(m);
    free(mf.bytes);
}

/* Sliding-window models (built from tests/data/modern): rings that have wrapped are saved with
   the rows they hold, loaded into sessions with other ring sizes, copied, and continue exactly. */
static void test_state_windows(void) {
    static const char *const paths[] = {"build/modern/gemma3.tfm", "build/modern/mistral.tfm"};
    int k;
    for (k = 0; k < 2; k++) {
        tfm_model_desc md;
        tfm_model *m = NULL;
        tfm_session_desc sd;
        tfm_session *a = NULL, *b = NULL, *cpy = NULL;
        int32_t ids[40];
        float *want = NULL, *got = NULL;
        unsigned char *buf = NULL;
        size_t n = 0, n_full = 0;
        int nv, i;
        memset(&md, 0, sizeof md);
        md.path = paths[k];
        if (tfm_model_open(&md, &m) != TFM_OK) { printf("SKIP windows: %s missing (make builds it)\n", paths[k]); continue; }
        nv = tfm_model_config(m).n_vocab;
        want = (float *)malloc((size_t)nv * sizeof(float));
        got = (float *)malloc((size_t)nv * sizeof(float));
        make_ids(ids, 40, tfm_model_config(m).n_tokens > 0 ? tfm_model_config(m).n_tokens : nv, 7 + k);
        memset(&sd, 0, sizeof sd);
        sd.n_ctx = 40; sd.n_batch = 2; /* rings of window + 1 rows */
        CHECK(tfm_session_create(m, &sd, &a) == TFM_OK);
        sd.n_batch = 5;
        CHECK(tfm_session_create(m, &sd, &b) == TFM_OK && tfm_session_create(m, &sd, &cpy) == TFM_OK);
        if (!a || !b || !cpy) goto next;
        CHECK(tfm_session_eval(a, ids, 30, 0, NULL) == TFM_OK && tfm_session_save(a, NULL, 0, &n) == TFM_OK);
        CHECK(tfm_session_eval(b, ids, 30, 0, NULL) == TFM_OK && tfm_session_save(b, NULL, 0, &n_full) == TFM_OK);
        buf = (unsigned char *)malloc(n > n_full ? n : n_full);
        CHECK(tfm_session_save(a, buf, n, &n) == TFM_OK);
        CHECK(tfm_session_truncate(a, 2) == TFM_ERR_INVALID_ARG); /* the ring moved past it */
        CHECK(tfm_session_load(b, buf, n) == TFM_OK && tfm_session_n_past(b) == 30);
        CHECK(tfm_session_copy(cpy, a, 30) == TFM_OK);
        CHECK(continue_with(a, ids + 30, 6, want, nv));
        CHECK(continue_with(b, ids + 30, 6, got, nv) && memcmp(got, want, (size_t)nv * sizeof(float)) == 0);
        CHECK(continue_with(cpy, ids + 30, 6, got, nv) && memcmp(got, want, (size_t)nv * sizeof(float)) == 0);
        printf("windows %s: a state of 30 positions takes %zu bytes (%zu with rings of window + 4)\n", paths[k], n, n_full);
        for (i = 0; i < 1; i++) CHECK(n < n_full); /* the smaller rings hold fewer rows */
    next:
        tfm_session_destroy(cpy); tfm_session_destroy(b); tfm_session_destroy(a);
        tfm_model_close(m);
        free(buf); free(want); free(got);
    }
}

/* A sampler saved and loaded samples on as the original would. */
static void test_sampler_state(void) {
    enum { NV = 30 };
    tfm_sampler_desc pd;
    tfm_sampler *a = NULL, *b = NULL, *c = NULL;
    float logits[NV];
    int32_t ta[12], tb[12];
    unsigned char buf[4096];
    size_t n = 0;
    int i;
    for (i = 0; i < NV; i++) logits[i] = (float)((i * 7) % 11) * 0.3f;
    memset(&pd, 0, sizeof pd);
    pd.n_vocab = NV; pd.temperature = 1.0f; pd.repeat_penalty = 1.5f; pd.repeat_last_n = 8; pd.seed = 99;
    CHECK(tfm_sampler_create(&pd, &a) == TFM_OK && tfm_sampler_create(&pd, &b) == TFM_OK);
    pd.repeat_last_n = 9;
    CHECK(tfm_sampler_create(&pd, &c) == TFM_OK);
    if (!a || !b || !c) goto done;
    for (i = 0; i < 5; i++) CHECK(tfm_sample(a, logits, NV, &ta[0]) == TFM_OK);
    CHECK(tfm_sampler_save(a, NULL, 0, &n) == TFM_OK && n == 32 + 4 * 8);
    CHECK(tfm_sampler_save(a, buf, n - 1, &n) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_sampler_save(a, buf, sizeof buf, &n) == TFM_OK);
    for (i = 0; i < 12; i++) CHECK(tfm_sample(a, logits, NV, &ta[i]) == TFM_OK);
    CHECK(tfm_sampler_load(b, buf, n) == TFM_OK);
    for (i = 0; i < 12; i++) CHECK(tfm_sample(b, logits, NV, &tb[i]) == TFM_OK);
    CHECK_MSG(memcmp(ta, tb, sizeof ta) == 0, "a loaded sampler samples differently");
    CHECK(tfm_sampler_load(c, buf, n) == TFM_ERR_INVALID_ARG); /* another repeat_last_n */
    CHECK(tfm_sampler_load(b, buf, n - 1) == TFM_ERR_CORRUPT);
    buf[0] ^= 1;
    CHECK(tfm_sampler_load(b, buf, n) == TFM_ERR_BAD_MAGIC);
    buf[0] ^= 1;
    buf[8] = 7;
    CHECK(tfm_sampler_load(b, buf, n) == TFM_ERR_BAD_VERSION);
done:
    tfm_sampler_destroy(c); tfm_sampler_destroy(b); tfm_sampler_destroy(a);
}

/* ---- sampling and generation helpers ------------------------------------------------------- */

/* Logit biases and the allowed-token mask. */
static void test_bias_mask(void) {
    enum { NV = 20 };
    tfm_sampler_desc pd;
    tfm_sampler *g = NULL, *t = NULL;
    tfm_logit_bias lb[2];
    unsigned char allowed[NV];
    float logits[NV];
    int32_t tok;
    int i, banned = 0, outside = 0;
    for (i = 0; i < NV; i++) logits[i] = (float)i * 0.1f; /* 19 is the argmax */
    memset(&pd, 0, sizeof pd);
    pd.n_vocab = NV;
    lb[0].token = 19; lb[0].bias = -INFINITY; /* banned */
    lb[1].token = 3; lb[1].bias = 5.0f;      /* boosted past everything */
    pd.logit_bias = lb; pd.n_logit_bias = 2;
    CHECK(tfm_sampler_create(&pd, &g) == TFM_OK);
    pd.temperature = 1.0f; pd.n_logit_bias = 1;
    CHECK(tfm_sampler_create(&pd, &t) == TFM_OK);
    if (!g || !t) goto done;
    CHECK(tfm_sample(g, logits, NV, &tok) == TFM_OK && tok == 3);
    for (i = 0; i < 300; i++) { CHECK(tfm_sample(t, logits, NV, &tok) == TFM_OK); banned += tok == 19; }
    CHECK_MSG(banned == 0, "a banned token was sampled %d times", banned);
    memset(allowed, 0, sizeof allowed);
    allowed[7] = allowed[11] = 1;
    CHECK(tfm_sample_masked(g, logits, NV, allowed, &tok) == TFM_OK && tok == 11);
    for (i = 0; i < 300; i++) {
        CHECK(tfm_sample_masked(t, logits, NV, allowed, &tok) == TFM_OK);
        outside += tok != 7 && tok != 11;
    }
    CHECK_MSG(outside == 0, "%d samples outside the mask", outside);
    allowed[11] = 0; allowed[19] = 1; /* 19 is banned: the mask's other token */
    CHECK(tfm_sample_masked(t, logits, NV, allowed, &tok) == TFM_OK && tok == 7);
    allowed[7] = 0; /* only the banned one: every allowed logit is -inf, nothing to draw */
    CHECK(tfm_sample_masked(t, logits, NV, allowed, &tok) == TFM_ERR_INVALID_ARG && tok == -1);
    CHECK(tfm_sample_masked(g, logits, NV, allowed, &tok) == TFM_ERR_INVALID_ARG && tok == -1);
    allowed[19] = 0;
    CHECK(tfm_sample_masked(t, logits, NV, allowed, &tok) == TFM_ERR_INVALID_ARG && tok == -1);
    /* refused biases */
    tfm_sampler_destroy(g);
    lb[0].token = NV;
    CHECK(tfm_sampler_create(&pd, &g) == TFM_ERR_INVALID_ARG || (tfm_sampler_destroy(g), 0));
    lb[0].token = 1; lb[0].bias = INFINITY;
    CHECK(tfm_sampler_create(&pd, &g) == TFM_ERR_INVALID_ARG || (tfm_sampler_destroy(g), 0));
    lb[0].bias = NAN;
    CHECK(tfm_sampler_create(&pd, &g) == TFM_ERR_INVALID_ARG || (tfm_sampler_destroy(g), 0));
    g = NULL;
done:
    tfm_sampler_destroy(g); tfm_sampler_destroy(t);
}

/* Per-token log-probs without an [n, n_vocab] buffer, against log-softmax of eval's logits_all
   in double precision: from the session's logits, re-evaluating the position before, at
   position 0, across slices and passes. */
static void test_score(void) {
    enum { NV = 57, N = 13 };
    model_file mf = make_model(2, NV, 40, 0, 51);
    tfm_model *m = open_bytes(&mf);
    tfm_session_desc sd;
    tfm_session *s = NULL, *r = NULL;
    int32_t ids[N + 6];
    float *all = (float *)malloc((size_t)(N + 6) * NV * sizeof(float)), lp[N + 6];
    double md = 0.0, ref[N + 6];
    int i, k;
    if (!m) { CHECK(0); free(all); free(mf.bytes); return; }
    make_ids(ids, N + 6, NV, 8);
    memset(&sd, 0, sizeof sd);
    sd.n_batch = 4;
    CHECK(tfm_session_create(m, &sd, &s) == TFM_OK && tfm_session_create(m, NULL, &r) == TFM_OK);
    if (!s || !r) goto done;
    CHECK(tfm_session_eval(r, ids, N + 6, 0, all) == TFM_OK);
    for (i = 1; i < N + 6; i++) { /* log P(ids[i]) from the logits after ids[i - 1] */
        const float *row = all + (size_t)(i - 1) * NV;
        double mx = row[0], sum = 0.0;
        for (k = 1; k < NV; k++) mx = row[k] > mx ? row[k] : mx;
        for (k = 0; k < NV; k++) sum += exp((double)row[k] - mx);
        ref[i] = (double)row[ids[i]] - mx - log(sum);
    }
    /* the whole sequence from position 0 */
    CHECK(tfm_session_score(s, ids, N + 6, 0, lp) == TFM_OK && isnan(lp[0]));
    for (i = 1; i < N + 6; i++) md = fabs(lp[i] - ref[i]) > md ? fabs(lp[i] - ref[i]) : md;
    CHECK_MSG(md < 1e-5, "score from 0: maxdiff %g", md);
    CHECK(tfm_session_n_past(s) == N + 6 && tfm_session_logits(s) &&
          memcmp(tfm_session_logits(s), all + (size_t)(N + 5) * NV, NV * sizeof(float)) == 0);
    /* a candidate after a prompt: the first from the held logits; another candidate at the same
       position rewinds, so position pos - 1 is evaluated again */
    md = 0.0;
    for (k = 0; k < 2; k++) {
        CHECK(tfm_session_eval(s, ids, N, 0, NULL) == TFM_OK);
        if (k == 1) CHECK(tfm_session_eval(s, ids + N, 3, N, NULL) == TFM_OK); /* held logits are elsewhere */
        CHECK(tfm_session_score(s, ids + N, 6, N, lp) == TFM_OK);
        for (i = 0; i < 6; i++) md = fabs(lp[i] - ref[N + i]) > md ? fabs(lp[i] - ref[N + i]) : md;
    }
    CHECK_MSG(md < 1e-5, "score after a prompt: maxdiff %g", md);
    /* as a stepped job, one unit at a time */
    {
        tfm_job_desc job;
        tfm_step_info info;
        CHECK(tfm_session_eval(s, ids, 2, 0, NULL) == TFM_OK);
        memset(&job, 0, sizeof job);
        job.tokens = ids + 2; job.n_tokens = N + 4; job.log_probs = lp;
        CHECK(tfm_session_start(s, &job) == TFM_OK);
        for (i = 0; i < 1000 && tfm_session_job(s).status == TFM_JOB_RUNNING; i++) CHECK(tfm_session_step(s, 1, 0, &info) == TFM_OK);
        md = 0.0;
        for (i = 0; i < N + 4; i++) md = fabs(lp[i] - ref[2 + i]) > md ? fabs(lp[i] - ref[2 + i]) : md;
        CHECK_MSG(md < 1e-5, "stepped score: maxdiff %g", md);
    }
done:
    tfm_session_destroy(r); tfm_session_destroy(s);
    tfm_model_close(m);
    free(all); free(mf.bytes);
}

/* "One of these strings" over the prefix tree: the same choice as constrained greedy decoding
   worked out by hand; decided as soon as one choice is left or one is complete. */
static void test_choose(void) {
    enum { NV = 50 };
    model_file mf = make_model(2, NV, 40, 0, 52);
    tfm_model *m = open_bytes(&mf);
    tfm_session *s = NULL, *r = NULL;
    int32_t prompt[6], a[3] = {5, 6, 7}, b[2] = {5, 8}, c[1] = {9}, d[4] = {5, 6, 30, 31}, tok;
    tfm_tokens ch[4];
    tfm_sampler_desc pd;
    tfm_sampler *smp = NULL;
    tok_log tl;
    int choice = -2, want, i, n0;
    if (!m) { CHECK(0); free(mf.bytes); return; }
    make_ids(prompt, 6, NV, 9);
    ch[0].ids = a; ch[0].n_ids = 3; ch[1].ids = b; ch[1].n_ids = 2; ch[2].ids = c; ch[2].n_ids = 1;
    ch[3].ids = d; ch[3].n_ids = 4;
    CHECK(tfm_session_create(m, NULL, &s) == TFM_OK && tfm_session_create(m, NULL, &r) == TFM_OK);
    if (!s || !r) goto done;
    /* by hand: first token 5 or 9; after 5, 6 or 8; after 5 6, 7 or 30 (then d is the only one) */
    CHECK(tfm_session_eval(r, prompt, 6, 0, NULL) == TFM_OK);
    {
        const float *lg = tfm_session_logits(r);
        if (lg[9] > lg[5]) want = 2;
        else {
            CHECK(tfm_session_decode(r, 5, 6, &lg) == TFM_OK);
            if (lg[8] > lg[6]) want = 1;
            else {
                CHECK(tfm_session_decode(r, 6, 7, &lg) == TFM_OK);
                want = lg[30] > lg[7] ? 3 : 0;
            }
        }
    }
    CHECK(tfm_session_eval(s, prompt, 6, 0, NULL) == TFM_OK);
    CHECK(tfm_session_choose(s, NULL, ch, 4, &choice) == TFM_OK);
    CHECK_MSG(choice == want, "chose %d, constrained greedy by hand %d", choice, want);
    printf("choose: choice %d after %d evaluated tokens\n", choice, tfm_session_n_past(s) - 6);
    /* without [9]: the walk goes down the tree (5 is forced, then 6 or 8, then 7 or 30) */
    {
        tfm_tokens deep[3];
        const float *lg;
        int want2;
        deep[0] = ch[0]; deep[1] = ch[1]; deep[2] = ch[3];
        CHECK(tfm_session_eval(r, prompt, 6, 0, NULL) == TFM_OK && tfm_session_decode(r, 5, 6, &lg) == TFM_OK);
        if (lg[8] > lg[6]) want2 = 1;
        else {
            CHECK(tfm_session_decode(r, 6, 7, &lg) == TFM_OK);
            want2 = lg[30] > lg[7] ? 2 : 0;
        }
        CHECK(tfm_session_truncate(s, 6) == TFM_OK);
        CHECK(tfm_session_choose(s, NULL, deep, 3, &choice) == TFM_OK);
        CHECK_MSG(choice == want2, "chose %d of the deep tree, by hand %d", choice, want2);
        CHECK(tfm_session_n_past(s) == 6 + (want2 == 1 ? 1 : 2)); /* the deciding token is not evaluated */
    }
    /* one choice: decided without sampling, nothing evaluated */
    CHECK(tfm_session_truncate(s, 6) == TFM_OK && tfm_session_eval(s, prompt + 5, 1, 5, NULL) == TFM_OK);
    n0 = tfm_session_n_past(s);
    CHECK(tfm_session_choose(s, NULL, ch + 3, 1, &choice) == TFM_OK && choice == 0 && tfm_session_n_past(s) == n0);
    /* a choice that is a prefix of another wins once complete: [5] against [5 6 7] */
    {
        int32_t five = 5;
        tfm_tokens pre[2];
        pre[0].ids = a; pre[0].n_ids = 3; pre[1].ids = &five; pre[1].n_ids = 1;
        CHECK(tfm_session_choose(s, NULL, pre, 2, &choice) == TFM_OK && choice == 1);
    }
    /* with a sampler: whatever is drawn, the tokens are one choice's prefix */
    memset(&pd, 0, sizeof pd);
    pd.n_vocab = NV; pd.temperature = 1.5f; pd.seed = 3;
    CHECK(tfm_sampler_create(&pd, &smp) == TFM_OK);
    for (i = 0; smp && i < 20; i++) {
        tfm_job_desc job;
        tfm_step_info info;
        CHECK(tfm_session_truncate(s, 6) == TFM_OK && tfm_session_eval(s, prompt + 5, 1, 5, NULL) == TFM_OK);
        memset(&job, 0, sizeof job);
        memset(&tl, 0, sizeof tl);
        job.sampler = smp; job.choices = ch; job.n_choices = 4; job.on_token = on_tok; job.token_user = &tl;
        CHECK(tfm_session_start(s, &job) == TFM_OK && tfm_session_step(s, 0, 0, &info) == TFM_OK);
        CHECK(info.status == TFM_JOB_DONE && info.choice >= 0 && info.choice < 4);
        if (info.choice >= 0 && info.choice < 4) {
            CHECK((size_t)tl.n <= ch[info.choice].n_ids && memcmp(tl.t, ch[info.choice].ids, (size_t)tl.n * 4) == 0);
            CHECK(tfm_session_n_past(s) == 6 + (tl.n > 0 ? tl.n - 1 : 0));
        }
    }
    /* refused: an empty choice, a token outside the vocabulary, choices with n_generate */
    c[0] = NV;
    CHECK(tfm_session_choose(s, NULL, ch, 3, &choice) == TFM_ERR_INVALID_ARG && choice == -1);
    c[0] = 9;
    ch[2].n_ids = 0;
    CHECK(tfm_session_choose(s, NULL, ch, 3, &choice) == TFM_ERR_INVALID_ARG);
    (void)tok;
done:
    tfm_sampler_destroy(smp);
    tfm_session_destroy(r); tfm_session_destroy(s);
    tfm_model_close(m);
    free(mf.bytes);
}

/* Stop strings across token boundaries: held-back text, released when it does not become a stop
   string, and the text before the stop string, nothing after it. */
static void test_stop_strings(void) {
    static const char *const pieces[] = {"Hello", " Us", "ual", " day.", "\nUs", "er", ": hi", " more"};
    tfm_text stops[2];
    tfm_stop_stream st;
    char out[256], all[256];
    size_t n, used = 0;
    int i;
    stops[0].text = "User:"; stops[0].n_bytes = 5;
    stops[1].text = "###"; stops[1].n_bytes = 3;
    memset(&st, 0, sizeof st);
    for (i = 0; i < 8; i++) {
        CHECK(tfm_stop_stream_feed(&st, stops, 2, pieces[i], strlen(pieces[i]), out, sizeof out, &n) == TFM_OK);
        memcpy(all + used, out, n);
        used += n;
        if (i == 1) CHECK(n == 1 && st.n_held == 2); /* " " out; "Us" may begin "User:" */
        if (i == 2) CHECK(n == 5 && st.n_held == 0); /* "Usual" cannot */
    }
    all[used] = '\0';
    CHECK_MSG(strcmp(all, "Hello Usual day.\n") == 0, "got \"%s\"", all);
    CHECK(st.stopped == 1 && st.n_held == 0);
    CHECK(tfm_stop_stream_feed(&st, stops, 2, "x", 1, out, sizeof out, &n) == TFM_OK && n == 0);
    /* a tail that never completes comes out at the flush; a small out is refused */
    memset(&st, 0, sizeof st);
    CHECK(tfm_stop_stream_feed(&st, stops, 2, "ab#", 3, out, sizeof out, &n) == TFM_OK && n == 2 && st.n_held == 1);
    CHECK(tfm_stop_stream_feed(&st, stops, 2, "##", 2, out, 2, &n) == TFM_ERR_INVALID_ARG && st.n_held == 1);
    CHECK(tfm_stop_stream_feed(&st, stops, 2, "#", 1, out, sizeof out, &n) == TFM_OK && n == 0 && st.n_held == 2);
    CHECK(tfm_stop_stream_flush(&st, out, 1) == 0 && tfm_stop_stream_flush(&st, out, sizeof out) == 2 && !memcmp(out, "##", 2));
    stops[1].n_bytes = TFM_STOP_MAX_BYTES + 1;
    CHECK(tfm_stop_stream_feed(&st, stops, 2, "a", 1, out, sizeof out, &n) == TFM_ERR_INVALID_ARG);
}

/* The demo model (a real tokenizer): a job stops at eos (forced by a logit bias) without
   evaluating it; the same job with no_stop_at_eos goes on. */
static void test_eos(void) {
    tfm_model_desc md;
    tfm_model *m = NULL;
    tfm_session *s = NULL;
    tfm_sampler_desc pd;
    tfm_sampler *smp = NULL;
    tfm_logit_bias lb;
    tfm_job_desc job;
    tfm_step_info info;
    int32_t ids[64];
    size_t n = 0;
    memset(&md, 0, sizeof md);
    md.path = DEMO;
    if (tfm_model_open(&md, &m) != TFM_OK) { printf("SKIP eos: %s missing\n", DEMO); return; }
    CHECK(tfm_model_tokenize(m, "And God said", 12, ids, 64, &n) == TFM_OK && n > 0);
    memset(&pd, 0, sizeof pd);
    pd.n_vocab = tfm_model_config(m).n_vocab;
    lb.token = tfm_model_config(m).eos_id; lb.bias = 1000.0f;
    pd.logit_bias = &lb; pd.n_logit_bias = 1;
    CHECK(lb.token >= 0 && tfm_sampler_create(&pd, &smp) == TFM_OK && tfm_session_create(m, NULL, &s) == TFM_OK);
    if (!smp || !s) goto done;
    memset(&job, 0, sizeof job);
    job.tokens = ids; job.n_tokens = n; job.n_generate = 8; job.sampler = smp;
    CHECK(tfm_session_start(s, &job) == TFM_OK && tfm_session_step(s, 0, 0, &info) == TFM_OK);
    CHECK(info.status == TFM_JOB_EOS && info.token == lb.token && info.n_generated == 1 && tfm_session_n_past(s) == (int)n);
    job.tokens = NULL; job.n_tokens = 0; job.no_stop_at_eos = true;
    CHECK(tfm_session_start(s, &job) == TFM_OK && tfm_session_step(s, 0, 0, &info) == TFM_OK);
    CHECK(info.status == TFM_JOB_DONE && info.n_generated == 8 && tfm_session_n_past(s) == (int)n + 7);
done:
    tfm_sampler_destroy(smp); tfm_session_destroy(s); tfm_model_close(m);
}

/* After create, nothing allocates: eval, steps under a budget, batched decode, scoring,
   choosing, state save / load / copy / truncate, sampling with a mask, stop strings. */
static void test_no_allocation(void) {
    enum { NV = 48 };
    model_file mf = make_model(2, NV, 40, 1, 61);
    test_alloc c;
    tfm_model_desc md;
    tfm_model *m = NULL;
    tfm_session_desc sd;
    tfm_session *s[2] = {0};
    tfm_sampler_desc pd;
    tfm_sampler *smp = NULL;
    tfm_job_desc job;
    tfm_step_info info[2];
    tfm_tokens ch[2];
    tfm_text stop;
    tfm_stop_stream st;
    int32_t ids[12], a[2] = {3, 4}, b[2] = {3, 5}, tok[2] = {1, 2};
    unsigned char state[65536], allowed[NV];
    float lp[12];
    char out[64];
    size_t n;
    long before;
    int i, choice;
    memset(&c, 0, sizeof c);
    memset(&md, 0, sizeof md);
    md.data = mf.bytes; md.data_bytes = mf.n_bytes; md.allocator = test_allocator(&c);
    memset(&sd, 0, sizeof sd);
    sd.allocator = test_allocator(&c);
    memset(&pd, 0, sizeof pd);
    pd.n_vocab = NV; pd.temperature = 0.7f; pd.top_k = 5; pd.top_p = 0.9f; pd.repeat_penalty = 1.1f;
    pd.allocator = test_allocator(&c);
    if (tfm_model_open(&md, &m) != TFM_OK || tfm_session_create(m, &sd, &s[0]) != TFM_OK ||
        tfm_session_create(m, &sd, &s[1]) != TFM_OK || tfm_sampler_create(&pd, &smp) != TFM_OK) {
        CHECK(0);
        goto done;
    }
    make_ids(ids, 12, NV, 11);
    before = c.n_alloc;
    CHECK(tfm_session_eval(s[0], ids, 12, 0, NULL) == TFM_OK);
    memset(&job, 0, sizeof job);
    job.tokens = ids; job.n_tokens = 6; job.n_generate = 4; job.sampler = smp;
    CHECK(tfm_session_start(s[1], &job) == TFM_OK);
    for (i = 0; i < 200 && tfm_session_job(s[1]).status == TFM_JOB_RUNNING; i++)
        CHECK(tfm_session_step(s[1], 0, 300, info) == TFM_OK);
    CHECK(tfm_session_decode_batch(s, tok, 2) == TFM_OK);
    CHECK(tfm_session_score(s[0], ids, 12, 0, lp) == TFM_OK);
    ch[0].ids = a; ch[0].n_ids = 2; ch[1].ids = b; ch[1].n_ids = 2;
    CHECK(tfm_session_choose(s[0], smp, ch, 2, &choice) == TFM_OK);
    CHECK(tfm_session_save(s[0], state, sizeof state, &n) == TFM_OK && tfm_session_load(s[1], state, n) == TFM_OK);
    CHECK(tfm_session_copy(s[1], s[0], 5) == TFM_OK && tfm_session_truncate(s[1], 3) == TFM_OK);
    CHECK(tfm_sampler_save(smp, state, sizeof state, &n) == TFM_OK && tfm_sampler_load(smp, state, n) == TFM_OK);
    memset(allowed, 1, sizeof allowed);
    CHECK(tfm_sample_masked(smp, tfm_session_logits(s[0]), NV, allowed, &tok[0]) == TFM_OK);
    memset(&st, 0, sizeof st);
    stop.text = "ab"; stop.n_bytes = 2;
    CHECK(tfm_stop_stream_feed(&st, &stop, 1, "xxa", 3, out, sizeof out, &n) == TFM_OK);
    CHECK_MSG(c.n_alloc == before, "%ld allocations after create", c.n_alloc - before);
done:
    tfm_sampler_destroy(smp);
    tfm_session_destroy(s[1]); tfm_session_destroy(s[0]);
    tfm_model_close(m);
    CHECK(c.live == 0);
    free(mf.bytes);
}

int main(void) {
    test_io();
    test_mapped_path();
    test_stack_allocator();
    test_repack();
    test_session_memory();
    test_step_units();
    test_step_budget();
    test_decode_batch();
    test_step_batch();
    test_state_save_load();
    test_state_copy();
    test_state_windows();
    test_sampler_state();
    test_bias_mask();
    test_score();
    test_choose();
    test_stop_strings();
    test_eos();
    test_no_allocation();
    return check_summary("test_embed");
}
