/* test_no_nfc.c - the TFM_NO_NFC build switch: with the NFC code and tables left out, a
   tokenizer that asks for NFC must not open (TFM_ERR_UNSUPPORTED, and the log names the switch),
   while everything else keeps working.

   The model is build/models/neox_tok.tfm (the Makefile converts tests/data/models/neox_tok; its
   tokenizer.json has the NFC normalizer). The same bytes with the NFC flag cleared must open and
   tokenize: the NFC-stable start of text.txt gives the first ids of tokens.txt (the Hugging
   Face ids), and the whole text, whose decomposed "e + U+0301" NFC would compose, comes back
   byte for byte, unnormalized, with ids that differ from tokens.txt. A missing build output is a
   failure. */
#define TFM_NO_NFC
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"

#define MODEL_PATH "build/models/neox_tok.tfm"
#define DATA_DIR "tests/data/models/neox_tok/"
#define MAX_IDS 64
#define STABLE_PREFIX "The fox's den: 2026 foxes," /* ends at a pre-token boundary before "cafe" */

/* Whole file into a malloc'd buffer (NUL-terminated); NULL if unreadable. */
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = (char *)malloc((size_t)len + 1)) != NULL) {
        if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
            free(buf);
            buf = NULL;
        } else {
            buf[len] = 0;
            *n = (size_t)len;
        }
    }
    fclose(f);
    return buf;
}

static void keep_log(void *user, tfm_result r, const char *msg) {
    (void)r;
    snprintf((char *)user, 256, "%s", msg);
}

static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The ids of s[0..n) decoded back through the stream, into out; returns the bytes. */
static size_t round_trip(const tfm_model *m, const int32_t *ids, size_t n_ids, char *out,
                         size_t cap) {
    tfm_utf8_stream st = {{0, 0, 0, 0}, 0};
    size_t i, got = 0, total = 0;
    for (i = 0; i < n_ids; i++) {
        if (tfm_model_detokenize(m, &st, ids[i], out + total, cap - total, &got) != TFM_OK) return 0;
        total += got;
    }
    return total + tfm_utf8_stream_flush(&st, out + total, cap - total);
}

static void test_without_flag(unsigned char *file, size_t file_bytes, const int32_t *golden,
                              size_t n_golden) {
    char log[256] = "", *text, back[256];
    size_t text_bytes = 0, n_ids = 0, n_prefix = 0;
    uint32_t tok_at = rd32(file + 96);
    int32_t ids[MAX_IDS];
    tfm_model_desc d;
    tfm_model *m = NULL;
    file[tok_at + 12] = (unsigned char)(file[tok_at + 12] & ~TFM_TOKFLAG_NFC);
    memset(&d, 0, sizeof d);
    d.data = file;
    d.data_bytes = file_bytes;
    d.logger.log = keep_log;
    d.logger.user = log;
    CHECK_MSG(tfm_model_open(&d, &m) == TFM_OK, "without the NFC flag: %s", log);
    text = slurp(DATA_DIR "text.txt", &text_bytes);
    CHECK_MSG(text != NULL, "cannot read " DATA_DIR "text.txt");
    if (m && text) {
        CHECK(tfm_model_tokenize(m, STABLE_PREFIX, strlen(STABLE_PREFIX), ids, MAX_IDS,
                                 &n_prefix) == TFM_OK);
        CHECK(n_prefix > 0 && n_prefix < n_golden && !memcmp(ids, golden, n_prefix * sizeof *ids));
        CHECK(tfm_model_tokenize(m, text, text_bytes, ids, MAX_IDS, &n_ids) == TFM_OK);
        CHECK(strstr(text, "e\xCC\x81") != NULL); /* the decomposed e that NFC would compose */
        CHECK(n_ids != n_golden || memcmp(ids, golden, n_ids * sizeof *ids) != 0);
        CHECK(round_trip(m, ids, n_ids, back, sizeof back) == text_bytes &&
              !memcmp(back, text, text_bytes));
    }
    tfm_model_close(m);
    free(text);
}

int main(void) {
    char log[256] = "", *tokens;
    size_t file_bytes = 0, tokens_bytes = 0, n_golden = 0;
    unsigned char *file = (unsigned char *)slurp(MODEL_PATH, &file_bytes);
    int32_t golden[MAX_IDS];
    tfm_model_desc d;
    tfm_model *m = NULL;
    const char *p;
    char *end;
    CHECK_MSG(file != NULL && file_bytes > 256, "cannot read " MODEL_PATH " (make builds it)");
    tokens = slurp(DATA_DIR "tokens.txt", &tokens_bytes);
    CHECK_MSG(tokens != NULL, "cannot read " DATA_DIR "tokens.txt");
    for (p = tokens; tokens && n_golden < MAX_IDS; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        golden[n_golden++] = (int32_t)v;
    }
    if (file && file_bytes > 256 && n_golden > 0) {
        memset(&d, 0, sizeof d);
        d.path = MODEL_PATH;
        d.logger.log = keep_log;
        d.logger.user = log;
        m = (tfm_model *)&d; /* must come back NULL */
        CHECK(tfm_model_open(&d, &m) == TFM_ERR_UNSUPPORTED && m == NULL);
        CHECK_MSG(strstr(log, "NFC") && strstr(log, "TFM_NO_NFC"), "log: %s", log);
        test_without_flag(file, file_bytes, golden, n_golden);
    }
    free(tokens);
    free(file);
    return check_summary("test_no_nfc");
}
