/* test_demo.c - the shipped demo model (models/demo, converted to build/demo.tfm by `make`)
   against the float64 reference that models/demo/train_demo.py wrote from the same f16 weights:
   configuration, tokenizer ids, prompt logits (all rows at once and one token at a time).
   Usage: build/test_demo [model.tfm] [reference-dir]   (run from the repository root) */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include <math.h>

#define TOL 1e-4

static char *read_file(const char *path, size_t *n_out) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    if (!f) return NULL;
    do {
        if (n == cap) {
            char *nb = (char *)realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!nb) { free(buf); fclose(f); return NULL; }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *n_out = n;
    return buf;
}

/* Space-separated decimal ids; returns a malloc'd array (count in *n) or NULL. */
static int32_t *read_ids(const char *path, size_t *n) {
    size_t bytes, cap;
    char *text = read_file(path, &bytes), *p, *end, *t;
    int32_t *ids;
    *n = 0;
    if (!text) return NULL;
    t = (char *)realloc(text, bytes + 1);
    if (!t) { free(text); return NULL; }
    text = t;
    text[bytes] = 0;
    cap = bytes / 2 + 1;
    ids = (int32_t *)malloc(cap * sizeof *ids);
    for (p = text; ids && *n < cap; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        ids[(*n)++] = (int32_t)v;
    }
    free(text);
    return ids;
}

static void log_to_stderr(void *user, tfm_result r, const char *msg) {
    (void)user;
    fprintf(stderr, "tfm: %s: %s\n", tfm_result_string(r), msg);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    return m;
}

int main(int argc, char **argv) {
    const char *model_path = argc > 1 ? argv[1] : "build/demo.tfm";
    const char *ref = argc > 2 ? argv[2] : "models/demo/reference";
    char path[1024];
    char *prompt, *hold;
    int32_t *ptok;
    size_t n_prompt, n_ref_bytes, n_hold, n_ids = 0, n_ref = 0, i;
    int32_t ids[256], ref_ids[256];
    float *ref_logits, *logits;
    tfm_model_desc md;
    tfm_session_desc sd;
    tfm_model *model = NULL;
    tfm_session *s = NULL;
    tfm_config c;
    tfm_result r;
    double d;
    int n_vocab;
    FILE *f;

    snprintf(path, sizeof path, "%s/prompt.txt", ref);
    prompt = read_file(path, &n_prompt);
    if (!prompt) {
        printf("SKIP: %s missing (models/demo not present)\n", path);
        return check_summary("test_demo");
    }
    f = fopen(model_path, "rb");
    if (!f) {
        printf("FAIL: %s missing: run `make %s`\n", model_path, model_path);
        free(prompt);
        check_failed++;
        return check_summary("test_demo");
    }
    fclose(f);

    memset(&md, 0, sizeof md);
    md.path = model_path;
    md.logger.log = log_to_stderr;
    r = tfm_model_open(&md, &model);
    CHECK_MSG(r == TFM_OK, "tfm_model_open(%s): %s", model_path, tfm_result_string(r));
    if (r != TFM_OK) { free(prompt); return check_summary("test_demo"); }

    /* the configuration config.json describes */
    c = tfm_model_config(model);
    n_vocab = c.n_vocab;
    CHECK(c.arch == TFM_ARCH_GPT_NEOX);
    CHECK(c.n_vocab == 2048 && c.n_tokens == 2048);
    CHECK(c.n_layers == 4 && c.n_heads == 4 && c.n_kv_heads == 4);
    CHECK(c.d_model == 256 && c.d_head == 64 && c.d_ff == 768);
    CHECK(c.n_ctx == 256);
    CHECK(c.rope_dim == 16 && c.rope_theta == 10000.0f);
    CHECK(c.norm == TFM_NORM_LAYERNORM && c.act == TFM_ACT_GELU_ERF && c.ffn == TFM_FFN_PLAIN);
    CHECK(c.residual == TFM_RESIDUAL_SEQUENTIAL && c.pos == TFM_POS_ROPE_HALF);
    CHECK(!c.tied_output);
    CHECK(c.eos_id == 2047 && c.bos_id == 2047);

    /* tokenizer: the prompt ids of the Python reference encoder */
    if (n_prompt > 0 && prompt[n_prompt - 1] == '\n') n_prompt--;
    r = tfm_model_tokenize(model, prompt, n_prompt, ids, 256, &n_ids);
    CHECK(r == TFM_OK);
    snprintf(path, sizeof path, "%s/prompt_tokens.txt", ref);
    ptok = read_ids(path, &n_ref);
    CHECK_MSG(ptok != NULL && n_ref <= 256, "cannot read %s", path);
    if (!ptok || n_ref > 256) n_ref = 0;
    if (n_ref) memcpy(ref_ids, ptok, n_ref * sizeof *ref_ids);
    free(ptok);
    CHECK_MSG(n_ids == n_ref && n_ref > 0, "prompt: %zu ids, reference %zu", n_ids, n_ref);
    for (i = 0; i < n_ids && i < n_ref; i++)
        CHECK_MSG(ids[i] == ref_ids[i], "prompt id %zu: %d, reference %d", i, (int)ids[i],
                  (int)ref_ids[i]);

    /* the special token is matched verbatim */
    {
        int32_t e[4];
        size_t ne = 0;
        r = tfm_model_tokenize(model, "<|endoftext|>", 13, e, 4, &ne);
        CHECK_MSG(r == TFM_OK && ne == 1 && e[0] == 2047, "<|endoftext|> -> %zu ids", ne);
    }

    /* held-out text: the reference ids, and they decode back to the exact bytes */
    snprintf(path, sizeof path, "%s/heldout.txt", ref);
    hold = read_file(path, &n_hold);
    CHECK_MSG(hold != NULL, "cannot read %s", path);
    if (hold) {
        int32_t *hid = (int32_t *)malloc((n_hold + 1) * sizeof *hid);
        char *back = (char *)malloc(n_hold + 1);
        size_t nh = 0, nb = 0;
        int ok = hid && back;
        if (ok) r = tfm_model_tokenize(model, hold, n_hold, hid, n_hold + 1, &nh);
        CHECK(ok && r == TFM_OK && nh > 0 && nh < n_hold);
        snprintf(path, sizeof path, "%s/heldout_tokens.txt", ref);
        {
            size_t nr = 0, first = 0;
            int32_t *rid = read_ids(path, &nr);
            if (!rid) {
                printf("SKIP: %s missing; held-out ids not compared\n", path);
            } else {
                while (first < nr && first < nh && rid[first] == hid[first]) first++;
                CHECK_MSG(ok && nr == nh && first == nr,
                          "heldout.txt: %zu ids, reference %zu; first difference at %zu", nh, nr,
                          first);
                free(rid);
            }
        }
        for (i = 0; ok && r == TFM_OK && i < nh; i++) {
            const char *tb;
            size_t tn;
            if (tfm_model_token_piece(model, hid[i], &tb, &tn) != TFM_OK || nb + tn > n_hold) {
                ok = 0;
                break;
            }
            memcpy(back + nb, tb, tn);
            nb += tn;
        }
        CHECK_MSG(ok && nb == n_hold && memcmp(back, hold, n_hold) == 0,
                  "heldout.txt does not round-trip through its %zu ids", nh);
        printf("heldout.txt: %zu bytes, %zu tokens\n", n_hold, nh);
        free(hid);
        free(back);
        free(hold);
    }

    /* logits of the whole prompt, then again one token at a time through the KV cache */
    snprintf(path, sizeof path, "%s/logits.f32", ref);
    ref_logits = (float *)read_file(path, &n_ref_bytes);
    CHECK_MSG(ref_logits && n_ref_bytes == n_ref * (size_t)n_vocab * sizeof(float),
              "%s: %zu bytes, expected %zu x %d floats", path, n_ref_bytes, n_ref, n_vocab);
    memset(&sd, 0, sizeof sd);
    r = tfm_session_create(model, &sd, &s);
    CHECK(r == TFM_OK);
    logits = (float *)malloc(n_ref * (size_t)n_vocab * sizeof(float));
    if (r == TFM_OK && logits && ref_logits && n_ids == n_ref &&
        n_ref_bytes == n_ref * (size_t)n_vocab * sizeof(float)) {
        r = tfm_session_eval(s, ids, (int)n_ids, 0, logits);
        CHECK(r == TFM_OK);
        d = max_abs_diff(logits, ref_logits, n_ids * (size_t)n_vocab);
        printf("maxdiff prompt logits (%zu x %d): %.3g\n", n_ids, n_vocab, d);
        CHECK_MSG(d <= TOL, "prompt logits differ by %g (tolerance %g)", d, TOL);
        for (i = 0; i < n_ids; i++) {
            double dr = max_abs_diff(logits + i * (size_t)n_vocab, ref_logits + i * (size_t)n_vocab,
                              (size_t)n_vocab);
            if (dr > TOL) fprintf(stderr, "    row %zu (token %d): maxdiff %g\n", i, (int)ids[i], dr);
        }
        {
            double dd = 0;
            for (i = 0; i < n_ids; i++) {
                const float *lg = NULL;
                r = tfm_session_decode(s, ids[i], (int)i, &lg);
                if (r != TFM_OK || !lg) { dd = INFINITY; break; }
                d = max_abs_diff(lg, ref_logits + i * (size_t)n_vocab, (size_t)n_vocab);
                if (!(d <= dd)) dd = d;
            }
            printf("maxdiff one token at a time: %.3g\n", dd);
            CHECK_MSG(dd <= TOL, "token-by-token logits differ by %g (tolerance %g)", dd, TOL);
        }
    }
    free(logits);
    free(ref_logits);
    free(prompt);
    tfm_session_destroy(s);
    tfm_model_close(model);
    return check_summary("test_demo");
}
