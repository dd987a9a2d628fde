/* test_tokenizer.c - tfm.h's >>tokenizer and >>unicode sections on tokenizer blobs built here
   from Hugging Face files by the tests' own blob builder (tests/tok_data.h), without the
   converter: ids checked against golden vectors, NFC, the pre-tokenizer scanners, streaming
   decode, hostile blobs, the two-call pattern and "encode allocates nothing". How tfm-convert
   reads tokenizer.json files is tested by tests/test_convert_tokenizer.c. */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "alloc.h"
#include "tfm_writer.h"
#include "tok_data.h"

#include <stdint.h>

/* ---------------------------------------------------------------------------------------------
   Golden texts and NFC */

/* One 43 KB text (this project's README, a C header, the demo README and a multilingual
   paragraph, frozen in tests/data/tokenizer/gpt2_large_text.txt) against the ids gpt-3-encoder
   and Hugging Face tokenizers both produce for it (tests/gen/make_gpt2_large.js). */
static void check_large_text(const tfm__tokenizer *gpt2) {
    size_t n_text, n_ids_text, n_ids = 0, n_want = 0, first_bad = 0;
    char *text = read_file("tests/data/tokenizer/gpt2_large_text.txt", &n_text);
    char *ids_text = read_file("tests/data/tokenizer/gpt2_large_ids.txt", &n_ids_text);
    int32_t *want = NULL, *got = NULL;
    char *p;
    CHECK(text != NULL && ids_text != NULL);
    if (!text || !ids_text) goto done;
    want = (int32_t *)malloc((n_ids_text / 2 + 1) * sizeof *want);
    for (p = ids_text; want && *p && *p != '\n';) {
        want[n_want++] = (int32_t)strtol(p, &p, 10);
        if (*p == ',') p++;
    }
    CHECK(tfm__tokenizer_encode(gpt2, text, n_text, NULL, 0, &n_ids) == TFM_ERR_INVALID_ARG && n_ids > 0);
    got = (int32_t *)malloc((n_ids + 1) * sizeof *got);
    CHECK(got && tfm__tokenizer_encode(gpt2, text, n_text, got, n_ids, &n_ids) == TFM_OK);
    while (first_bad < n_ids && first_bad < n_want && got[first_bad] == want[first_bad]) first_bad++;
    CHECK_MSG(n_ids == n_want && first_bad == n_want, "gpt2_large_text.txt: %zu ids (want %zu), first "
              "difference at id %zu", n_ids, n_want, first_bad);
    printf("gpt2_large_text.txt: %zu bytes, %zu ids, %s\n", n_text, n_want,
           n_ids == n_want && first_bad == n_want ? "all equal" : "DIFFERENT");
done:
    free(text);
    free(ids_text);
    free(want);
    free(got);
}

/* Hex code points "0041 0301" to UTF-8; returns the byte count. */
static size_t hex_to_utf8(const char *s, const char *end, char *out) {
    size_t n = 0;
    while (s < end) {
        char *e;
        unsigned long cp = strtoul(s, &e, 16);
        if (e == s) break;
        n += tfm__utf8_put((uint32_t)cp, (unsigned char *)out + n);
        s = e;
    }
    return n;
}

/* NFC through tfm__nfc_fill against Python's unicodedata (tests/data/tokenizer/nfc.txt). */
static void test_nfc_vectors(void) {
    size_t n;
    char *text = read_file("tests/data/tokenizer/nfc.txt", &n), *line, *cursor = text;
    int cases = 0, bad = 0;
    if (!text) {
        CHECK_MSG(0, "tests/data/tokenizer/nfc.txt is missing");
        return;
    }
    while ((line = next_line(&cursor)) != NULL) {
        char in[256], want[256];
        unsigned char got[1024];
        char *sep = strstr(line, " => ");
        size_t n_in, n_want, n_got;
        tfm__nfc_src src;
        if (!sep) continue;
        n_in = hex_to_utf8(line, sep, in);
        n_want = hex_to_utf8(sep + 4, sep + strlen(sep), want);
        src.s = (const unsigned char *)in; src.n = n_in; src.pos = 0;
        n_got = tfm__nfc_fill(&src, got, sizeof got);
        cases++;
        if (src.pos != n_in || n_got != n_want || memcmp(got, want, n_want) != 0) {
            if (++bad <= 5) fprintf(stderr, "  NFC mismatch: %s\n", line);
        }
    }
    free(text);
    CHECK_MSG(cases > 5000 && bad == 0, "nfc.txt: %d of %d cases differ", bad, cases);
    printf("nfc.txt: %d cases, %d mismatches\n", cases, bad);
}

/* ---------------------------------------------------------------------------------------------
   Unit tests on the real vocabularies */

/* Streaming decode + flush against Hugging Face's decode of random id sequences ("ids => hex"). */
static void test_hf_decode(const tfm__tokenizer *neox) {
    size_t n;
    char *text = read_file("tests/data/tokenizer/neox_hf_decode.txt", &n), *line, *cursor = text;
    int cases = 0, bad = 0;
    CHECK_MSG(text != NULL, "tests/data/tokenizer/neox_hf_decode.txt is missing");
    while (text && (line = next_line(&cursor)) != NULL) {
        char *sep = strstr(line, " => "), *p, *q, want[512], got[1024];
        int32_t ids[64];
        size_t n_ids = 0, n_want = 0, n_got;
        if (!sep) continue;
        for (q = line; q < sep && n_ids < 64;) {
            ids[n_ids++] = (int32_t)strtol(q, &p, 10);
            if (p == q) break;
            q = *p == ',' ? p + 1 : p;
        }
        for (q = sep + 4; q[0] && q[1] && n_want < sizeof want; q += 2) {
            char hex[3] = {q[0], q[1], 0};
            want[n_want++] = (char)strtol(hex, NULL, 16);
        }
        n_got = decode_all(neox, ids, n_ids, got, sizeof got);
        cases++;
        if (n_got != n_want || memcmp(got, want, n_want) != 0) {
            if (++bad <= 3) fprintf(stderr, "  decode mismatch: %s\n", line);
        }
    }
    free(text);
    CHECK_MSG(cases == 300 && bad == 0, "neox_hf_decode.txt: %d of %d cases differ", bad, cases);
    printf("neox_hf_decode.txt: %d cases, %d mismatches\n", cases, bad);
}

static void test_decode_stream(const tfm__tokenizer *gpt2) {
    int32_t ids[64];
    size_t n_ids = 0, got = 0;
    char out[64];
    tfm_utf8_stream st = {{0, 0, 0, 0}, 0};
    /* U+1F600 is split over two GPT-2 tokens: nothing comes out until the second */
    CHECK(encode(gpt2, "\xF0\x9F\x98\x80", 4, ids, 64, &n_ids) && n_ids == 2);
    CHECK(tfm__tokenizer_decode(gpt2, &st, ids[0], out, sizeof out, &got) == TFM_OK && got == 0 && st.n_held == 3);
    CHECK(tfm__tokenizer_decode(gpt2, &st, ids[1], out, sizeof out, &got) == TFM_OK && got == 4 &&
          !memcmp(out, "\xF0\x9F\x98\x80", 4) && st.n_held == 0);
    /* too small an output buffer: an error, nothing written, the stream unchanged */
    CHECK(tfm__tokenizer_decode(gpt2, &st, ids[0], out, 0, &got) == TFM_OK && got == 0);
    out[0] = 'z';
    CHECK(tfm__tokenizer_decode(gpt2, &st, ids[1], out, 3, &got) == TFM_ERR_INVALID_ARG && got == 0 &&
          out[0] == 'z' && st.n_held == 3);
    /* the held tail at the end of a stream becomes one U+FFFD */
    CHECK(tfm_utf8_stream_flush(&st, out, 2) == 0 && st.n_held == 3);
    CHECK(tfm_utf8_stream_flush(&st, out, sizeof out) == 3 && !memcmp(out, "\xEF\xBF\xBD", 3) && st.n_held == 0);
    CHECK(tfm_utf8_stream_flush(&st, out, sizeof out) == 0);
    /* bad ids and a garbage stream are errors */
    CHECK(tfm__tokenizer_decode(gpt2, &st, -1, out, sizeof out, &got) == TFM_ERR_INVALID_ARG);
    CHECK(tfm__tokenizer_decode(gpt2, &st, 50257, out, sizeof out, &got) == TFM_ERR_INVALID_ARG);
    st.n_held = 7;
    CHECK(tfm__tokenizer_decode(gpt2, &st, 0, out, sizeof out, &got) == TFM_ERR_INVALID_ARG);
}

/* Invalid UTF-8: each bad byte a piece of its own; GPT-2 encodes every byte, so bytes round-trip;
   decoding gives U+FFFD per maximal invalid subpart, as Python's errors="replace". */
static void test_invalid_utf8(const tfm__tokenizer *gpt2, const tfm__tokenizer *neox) {
    static const struct { const char *in; size_t n; const char *out; } cases[] = {
        {"\xE2\x82" "A", 3, "\xEF\xBF\xBD" "A"},
        {"\xED\xA0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xC0\xAF", 2, "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xF0\x9F\x98", 3, "\xEF\xBF\xBD"},
        {"a\x80" "b", 3, "a\xEF\xBF\xBD" "b"},
        {"\xF4\x90\x80\x80", 4, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xE0\x9F\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xF1\x80\x80" "x", 4, "\xEF\xBF\xBD" "x"},
    };
    int32_t ids[64];
    char out[128];
    size_t i, n_ids, got;
    unsigned seed = 12345;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(encode(gpt2, cases[i].in, cases[i].n, ids, 64, &n_ids));
        got = decode_all(gpt2, ids, n_ids, out, sizeof out);
        CHECK_MSG(got == strlen(cases[i].out) && !memcmp(out, cases[i].out, got), "invalid case %zu", i);
    }
    /* random bytes: never a crash; GPT-2's token bytes give back the input exactly */
    for (i = 0; i < 300; i++) {
        unsigned char text[200];
        static int32_t rid[400];
        char back[400];
        size_t n = (seed = seed * 1103515245u + 12345u) % 200, k, total = 0, m;
        int ok;
        for (k = 0; k < n; k++) text[k] = (unsigned char)((seed = seed * 1103515245u + 12345u) >> 16);
        ok = encode(gpt2, (char *)text, n, rid, 400, &n_ids);
        for (k = 0; ok && k < n_ids; k++) {
            const char *b = NULL;
            ok = tfm__tokenizer_piece(gpt2, rid[k], &b, &m) == TFM_OK && total + m <= sizeof back;
            if (ok) memcpy(back + total, b, m);
            total += m;
        }
        CHECK_MSG(ok && total == n && !memcmp(back, text, n), "random bytes %zu do not round-trip", i);
        CHECK(encode(neox, (char *)text, n, rid, 400, &n_ids));
    }
    /* GPT-NeoX has no tokens for 0xC0, 0xC1, 0xF5..0xFF and no unk: such bytes encode to nothing */
    CHECK(encode(neox, "a\xFF" "b", 3, ids, 64, &n_ids) && n_ids == 2);
}

/* Two-call pattern: a count with no buffer, then an exact buffer; a short buffer is an error
   that still reports the count and writes no more than it may. */
static void test_two_call(const tfm__tokenizer *t) {
    const char *text = "The quick brown fox jumps over the lazy dog.";
    int32_t ids[32];
    size_t n = 0, m = 0, i;
    CHECK(tfm__tokenizer_encode(t, text, strlen(text), NULL, 0, &n) == TFM_ERR_INVALID_ARG && n == 10);
    for (i = 0; i < 32; i++) ids[i] = -7;
    CHECK(tfm__tokenizer_encode(t, text, strlen(text), ids, n - 1, &m) == TFM_ERR_INVALID_ARG && m == n);
    CHECK(ids[n - 2] != -7 && ids[n - 1] == -7);
    CHECK(tfm__tokenizer_encode(t, text, strlen(text), ids, n, &m) == TFM_OK && m == n && ids[n - 1] != -7);
    CHECK(tfm__tokenizer_encode(t, "", 0, NULL, 0, &m) == TFM_OK && m == 0);
}

/* Long texts that need NFC go through a 1 KiB window: pre-tokens that cross its edges must
   come out as if the whole text were normalized first and encoded without NFC. */
static void test_nfc_window(const tfm__tokenizer *neox, const vocab *vx) {
    /* no part ends in a space: two spaces would be an added token and split the text */
    static const char *parts[] = {"word", " word", "e\xCC\x81", "\xE2\x84\xAB", "\n",
        "\xE1\x84\x80\xE1\x85\xA1", "'s", "'ll", "123", " 45", "!?", " \xCC\x81", "\xC3\xA9t\xC3\xA9",
        "\xEA\xB0\x80", "\xE1\x86\xA8", "q\xCC\x87\xCC\xA3", "\t", "ab", "x"};
    static char text[8192];
    static unsigned char norm[16384];
    static int32_t a[16384], b[16384];
    vocab raw = *vx;
    bytes_t blob;
    tfm__tokenizer *plain;
    unsigned seed = 4242;
    int r, diff = 0;
    raw.flags = 0;
    blob = vocab_blob(&raw);
    plain = make_tokenizer(&blob);
    CHECK(plain != NULL);
    for (r = 0; plain && r < 20; r++) {
        size_t len = 0, na, nb, n_norm;
        tfm__nfc_src src;
        while (len < 6000) {
            const char *part = parts[((seed = seed * 1103515245u + 12345u) >> 16) % (sizeof parts / sizeof parts[0])];
            memcpy(text + len, part, strlen(part));
            len += strlen(part);
        }
        src.s = (const unsigned char *)text; src.n = len; src.pos = 0;
        n_norm = tfm__nfc_fill(&src, norm, sizeof norm);
        if (!encode(neox, text, len, a, 16384, &na) || !encode(plain, (char *)norm, n_norm, b, 16384, &nb) ||
            na != nb || memcmp(a, b, na * sizeof(int32_t)))
            diff++;
    }
    CHECK_MSG(diff == 0, "NFC window: %d of 20 long texts differ from normalize-then-encode", diff);
    tfm__tokenizer_destroy(plain, &(tfm_allocator){0, 0, 0});
    free(blob.p);
}

/* Documented limit: a pre-token longer than 1024 bytes is merged in 1024-byte chunks. */
static void test_long_piece(const tfm__tokenizer *gpt2, const tfm__tokenizer *neox) {
    static char text[8192], composed[8192];
    static int32_t a[4096], b[4096];
    size_t na, nb, n1, i;
    memset(text, 'x', sizeof text);
    CHECK(encode(gpt2, text, 1024, a, 4096, &n1));
    CHECK(encode(gpt2, text, 1025, b, 4096, &nb) && nb == n1 + 1 && !memcmp(a, b, n1 * sizeof(int32_t)));
    CHECK(encode(gpt2, text, 3000, b, 4096, &nb));
    CHECK(encode(gpt2, text, 3000 - 2048, a + 2 * n1, 4096 - 2 * n1, &na));
    memcpy(a + n1, a, n1 * sizeof(int32_t));
    CHECK(nb == 2 * n1 + na && !memcmp(a, b, nb * sizeof(int32_t)));
    /* the NFC window path: 1500 decomposed e-acute encode like 1500 composed ones */
    for (i = 0; i < 1500; i++) {
        memcpy(text + 3 * i, "e\xCC\x81", 3);
        memcpy(composed + 2 * i, "\xC3\xA9", 2);
    }
    CHECK(encode(neox, text, 4500, a, 4096, &na) && encode(neox, composed, 3000, b, 4096, &nb));
    CHECK(na == nb && !memcmp(a, b, na * sizeof(int32_t)));
    /* a run of 40 combining marks (more than one NFC unit) still encodes */
    for (i = 0; i < 40; i++) memcpy(text + 1 + 2 * i, "\xCC\x81", 2);
    text[0] = 'e';
    CHECK(encode(neox, text, 81, a, 4096, &na) && na > 0);
}

/* ---------------------------------------------------------------------------------------------
   Hostile blobs, allocation, and the public API on a vocab-only model */

/* 256 byte tokens, "ab" (256), "abc" (257), added "<|x|>" (258, special) and "  " (259). */
static void tiny_vocab(vocab *v, int drop_z, int empty_added) {
    int i;
    memset(v, 0, sizeof *v);
    for (i = 0; i < 256; i++) {
        char c = (char)i;
        vocab_set(v, i, drop_z && i == 'z' ? "zy" : &c, drop_z && i == 'z' ? 2 : 1);
    }
    vocab_set(v, 256, "ab", 2);
    vocab_set(v, 257, "abc", 3);
    vocab_set(v, 258, "<|x|>", empty_added ? 0 : 5);
    vocab_set(v, 259, "  ", 2);
    v->tok[258].attr = TFM_TOKATTR_ADDED | TFM_TOKATTR_SPECIAL;
    v->tok[259].attr = TFM_TOKATTR_ADDED;
    v->merges = (uint32_t *)malloc(6 * sizeof(uint32_t));
    v->cap_merges = 2;
    v->merges[0] = 'a'; v->merges[1] = 'b'; v->merges[2] = 256;
    v->merges[3] = 256; v->merges[4] = 'c'; v->merges[5] = 257;
    v->n_merges = 2;
    v->bos = v->eos = 258;
}

static tfm_result try_create(const unsigned char *p, size_t n) {
    tfm_allocator a = {0, 0, 0};
    tfm_logger lg = {log_to_stderr, 0};
    tfm__tokenizer *t = (tfm__tokenizer *)&a; /* must come back NULL on failure */
    tfm_result r = tfm__tokenizer_create(p, n, &a, &lg, &t);
    if (r == TFM_OK) {
        int32_t ids[64];
        size_t n_ids;
        char out[64];
        tfm_utf8_stream st = {{0, 0, 0, 0}, 0};
        tfm__tokenizer_encode(t, "abcab<|x|>  a\xC3\xA9 x'll 12", 24, ids, 64, &n_ids);
        tfm__tokenizer_decode(t, &st, 257, out, sizeof out, &n_ids);
        tfm__tokenizer_destroy(t, &a);
    } else {
        CHECK(t == NULL);
    }
    return r;
}

static void put32(unsigned char *p, size_t at, uint32_t v) {
    p[at] = (unsigned char)v; p[at + 1] = (unsigned char)(v >> 8);
    p[at + 2] = (unsigned char)(v >> 16); p[at + 3] = (unsigned char)(v >> 24);
}

static void test_hostile_blobs(void) {
    vocab v;
    bytes_t good, bad_blob;
    unsigned char *m;
    size_t n, i, merges_at, nt = 260;
    unsigned seed = 7;
    int32_t ids[16];
    size_t n_ids;
    tfm__tokenizer *t;
    tiny_vocab(&v, 0, 0);
    good = vocab_blob(&v);
    n = good.n;
    merges_at = 64 + 4 * (nt + 1) + 4 * nt + nt;
    merges_at = (merges_at + 3) & ~(size_t)3;
    m = (unsigned char *)malloc(n);
    t = make_tokenizer(&good);
    CHECK(t != NULL);
    if (t) {
        static const int32_t want[] = {257, 256, 258, 259, 'a'};
        CHECK(encode(t, "abcab<|x|>  a", 13, ids, 16, &n_ids) && n_ids == 5 && !memcmp(ids, want, sizeof want));
        tfm__tokenizer_destroy(t, &(tfm_allocator){0, 0, 0});
    }
    for (i = 0; i < n; i++) CHECK_MSG(try_create(good.p, i) == TFM_ERR_CORRUPT, "prefix %zu", i);
    CHECK(try_create(NULL, 0) == TFM_ERR_CORRUPT);
#define MUTATE(at, val, want) do { memcpy(m, good.p, n); put32(m, at, (uint32_t)(val)); \
        CHECK_MSG(try_create(m, n) == (want), "field at %d = %ld", (int)(at), (long)(val)); } while (0)
    MUTATE(0, 0, TFM_ERR_CORRUPT);             /* kind none */
    MUTATE(0, 9, TFM_ERR_UNSUPPORTED);         /* kind unknown */
    MUTATE(4, 0, TFM_ERR_CORRUPT);             /* no tokens */
    MUTATE(4, 0xFFFFFFFFu, TFM_ERR_CORRUPT);   /* n_tokens huge */
    MUTATE(4, 259, TFM_ERR_CORRUPT);           /* sizes no longer add up */
    MUTATE(8, 0xFFFFFFFFu, TFM_ERR_CORRUPT);   /* n_merges huge */
    MUTATE(8, 0x7FFFFFFFu, TFM_ERR_CORRUPT);
    MUTATE(8, 3, TFM_ERR_CORRUPT);
    MUTATE(12, 0x80, TFM_ERR_UNSUPPORTED);     /* unknown flag */
    MUTATE(16, 5, TFM_ERR_UNSUPPORTED);        /* unknown pre-tokenizer */
    MUTATE(20, 260, TFM_ERR_CORRUPT);          /* bos out of range */
    MUTATE(24, -2, TFM_ERR_CORRUPT);           /* eos out of range */
    MUTATE(36, 0xFFFFFFFFu, TFM_ERR_CORRUPT);  /* text_bytes */
    MUTATE(52, 1, TFM_ERR_CORRUPT);            /* reserved */
    MUTATE(64, 1, TFM_ERR_CORRUPT);            /* text_offsets[0] */
    MUTATE(64 + 4 * 3, 200, TFM_ERR_CORRUPT);  /* offsets go backwards */
    MUTATE(64 + 4 * nt, 100000, TFM_ERR_CORRUPT); /* last offset past the text */
    MUTATE(merges_at, 260, TFM_ERR_CORRUPT);   /* merge id out of range */
    MUTATE(merges_at + 8, 1000000, TFM_ERR_CORRUPT);
    MUTATE(merges_at + 8, 257, TFM_ERR_CORRUPT); /* "abc" is not "a" + "b" */
    MUTATE(merges_at + 8, 0xFFFFFFFFu, TFM_ERR_CORRUPT);
#undef MUTATE
    memcpy(m, good.p, n);
    m[64 + 8 * nt + 4 + 256] = 0x80; /* unknown attribute bit on token 256 */
    CHECK(try_create(m, n) == TFM_ERR_CORRUPT);
    m[64 + 8 * nt + 4 + 256] = TFM_TOKATTR_BYTE; /* a byte token of two bytes */
    CHECK(try_create(m, n) == TFM_ERR_CORRUPT);
    vocab_free(&v);
    tiny_vocab(&v, 1, 0); /* no single-byte token for 'z' */
    bad_blob = vocab_blob(&v);
    CHECK(try_create(bad_blob.p, bad_blob.n) == TFM_ERR_CORRUPT);
    free(bad_blob.p);
    vocab_free(&v);
    tiny_vocab(&v, 0, 1); /* an empty added token would match everywhere */
    bad_blob = vocab_blob(&v);
    CHECK(try_create(bad_blob.p, bad_blob.n) == TFM_ERR_CORRUPT);
    free(bad_blob.p);
    /* random byte changes (half of them in the header): an error or a working tokenizer,
       never a crash (the sanitizer build runs this too) */
    for (i = 0; i < 3000; i++) {
        size_t at;
        memcpy(m, good.p, n);
        seed = seed * 1103515245u + 12345u;
        at = (seed >> 8) % (i % 2 ? 64 : n);
        seed = seed * 1103515245u + 12345u;
        m[at] = (unsigned char)(seed >> 16);
        try_create(m, n);
    }
    free(good.p);
    vocab_free(&v);
    free(m);
}
/* A blob whose merges all hash near one slot is refused (lookups would crawl); the same
   number of ordinary merges is fine. */
static void test_hash_flood(void) {
    int crafted;
    for (crafted = 0; crafted < 2; crafted++) {
        vocab v;
        bytes_t blob;
        int a, b, n = 0;
        memset(&v, 0, sizeof v);
        for (a = 0; a < 256; a++) {
            char c = (char)a;
            vocab_set(&v, a, &c, 1);
        }
        v.merges = (uint32_t *)malloc(600 * 3 * sizeof(uint32_t));
        for (a = 0; a < 256 && n < 600; a++) {
            for (b = 0; b < 256 && n < 600; b++) {
                char two[2];
                /* 600 merges: a table of 2048 slots; crafted pairs all start in slots 0..31 */
                if (crafted ? (tfm__hash_pair(a, b) & 2047) >= 32 : (a * 7 + b) % 97 != 0) continue;
                two[0] = (char)a; two[1] = (char)b;
                vocab_set(&v, 256 + n, two, 2);
                v.merges[3 * n] = (uint32_t)a; v.merges[3 * n + 1] = (uint32_t)b;
                v.merges[3 * n + 2] = (uint32_t)(256 + n);
                n++;
            }
        }
        v.n_merges = n;
        v.bos = v.eos = -1;
        blob = vocab_blob(&v);
        CHECK_MSG(n == 600 && try_create(blob.p, blob.n) == (crafted ? TFM_ERR_CORRUPT : TFM_OK),
                  "hash flood: crafted %d, %d merges", crafted, n);
        free(blob.p);
        vocab_free(&v);
    }
}

/* Create allocates (once), encode and decode never do; a failed allocation is a clean error. */
static void test_allocation(const bytes_t *blob) {
    test_alloc c;
    tfm_allocator a;
    tfm__tokenizer *t = NULL;
    static int32_t ids[4096];
    size_t n_ids, got, i;
    long after_create;
    char out[64];
    tfm_utf8_stream st = {{0, 0, 0, 0}, 0};
    const char *text = "Hello  world<|endoftext|> caf\x65\xCC\x81 \xF0\x9F\x98\x80 \xFF 12345 it's";
    memset(&c, 0, sizeof c);
    a = test_allocator(&c);
    CHECK(tfm__tokenizer_create(blob->p, blob->n, &a, NULL, &t) == TFM_OK && t);
    after_create = c.n_alloc;
    CHECK(after_create == 1);
    for (i = 0; t && i < 50; i++) {
        CHECK(tfm__tokenizer_encode(t, text, strlen(text), ids, 4096, &n_ids) == TFM_OK);
        CHECK(tfm__tokenizer_decode(t, &st, ids[i % n_ids], out, sizeof out, &got) == TFM_OK);
    }
    CHECK_MSG(c.n_alloc == after_create, "encode/decode allocated %ld times", c.n_alloc - after_create);
    tfm__tokenizer_destroy(t, &a);
    CHECK(c.n_free == c.n_alloc && c.live_bytes == 0);
    c.n_alloc = c.n_free = 0; c.fail_at = 1;
    t = (tfm__tokenizer *)&c;
    CHECK(tfm__tokenizer_create(blob->p, blob->n, &a, NULL, &t) == TFM_ERR_OUT_OF_MEMORY && t == NULL);
    CHECK(c.live_bytes == 0);
}

/* The public entry points on a vocab-only .tfm made in memory (header + blob). */
static void test_public_api(const bytes_t *blob) {
    tw_header vocab_only;
    size_t file_bytes = 0;
    unsigned char *file;
    tfm_model_desc d;
    tfm_model *model = NULL;
    int32_t ids[64];
    size_t n_ids = 0, n_bytes = 0, got = 0, i, total = 0;
    const char *bytes = NULL;
    char out[256];
    tfm_utf8_stream st = {{0, 0, 0, 0}, 0};
    tfm_config cfg;
    static const int32_t hello[] = {15496, 995, 11, 428, 318, 257, 1332, 13};
    memset(&vocab_only, 0, sizeof vocab_only);
    file = tw_write(&vocab_only, NULL, 0, blob->p, blob->n, &file_bytes); /* header, then the blob */
    if (!file) { CHECK(file != NULL); return; }
    memset(&d, 0, sizeof d);
    d.data = file;
    d.data_bytes = file_bytes;
    d.logger.log = log_to_stderr;
    CHECK(tfm_model_open(&d, &model) == TFM_OK && model);
    if (!model) { free(file); return; }
    cfg = tfm_model_config(model);
    CHECK(cfg.n_tokens == 50257 && cfg.bos_id == 50256 && cfg.eos_id == 50256);
    CHECK(tfm_model_tokenize(model, "Hello world, this is a test.", 28, ids, 64, &n_ids) == TFM_OK &&
          n_ids == 8 && !memcmp(ids, hello, sizeof hello));
    CHECK(tfm_model_tokenize(model, "Hello world, this is a test.", 28, NULL, 0, &n_ids) == TFM_ERR_INVALID_ARG && n_ids == 8);
    CHECK(tfm_model_tokenize(model, "<|endoftext|>x", 14, ids, 64, &n_ids) == TFM_OK && n_ids == 2 && ids[0] == 50256);
    CHECK(tfm_model_tokenize(model, NULL, 3, ids, 64, &n_ids) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_model_tokenize(NULL, "a", 1, ids, 64, &n_ids) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_model_token_piece(model, 15496, &bytes, &n_bytes) == TFM_OK && n_bytes == 5 && !memcmp(bytes, "Hello", 5));
    CHECK(tfm_model_token_piece(model, 50257, &bytes, &n_bytes) == TFM_ERR_INVALID_ARG && bytes == NULL);
    CHECK(tfm_model_tokenize(model, "na\xC3\xAFve \xE2\x9C\x93", 10, ids, 64, &n_ids) == TFM_OK);
    for (i = 0; i < n_ids; i++) {
        CHECK(tfm_model_detokenize(model, &st, ids[i], out + total, sizeof out - total, &got) == TFM_OK);
        total += got;
    }
    total += tfm_utf8_stream_flush(&st, out + total, sizeof out - total);
    CHECK(total == 10 && !memcmp(out, "na\xC3\xAFve \xE2\x9C\x93", 10));
    CHECK(tfm_model_detokenize(model, NULL, 0, out, sizeof out, &got) == TFM_ERR_INVALID_ARG);
    tfm_model_close(model);
    /* the same file without its tokenizer: the tokenizer calls say UNSUPPORTED */
    put32(file, 96, 0);
    put32(file, 104, 0);
    d.data_bytes = 256;
    model = NULL;
    CHECK(tfm_model_open(&d, &model) == TFM_OK && model);
    if (model) {
        CHECK(tfm_model_tokenize(model, "a", 1, ids, 64, &n_ids) == TFM_ERR_UNSUPPORTED && n_ids == 0);
        CHECK(tfm_model_token_piece(model, 0, &bytes, &n_bytes) == TFM_ERR_UNSUPPORTED);
        CHECK(tfm_model_detokenize(model, &st, 0, out, sizeof out, &got) == TFM_ERR_UNSUPPORTED);
        tfm_model_close(model);
    }
    free(file);
}

/* ---------------------------------------------------------------------------------------------
   SentencePiece (llama2.c's tok512) and the Llama-3 / Qwen2 scanners */

/* run.c's encode written plainly (one merge loop over the whole text, no splitting), to check
   the tokenizer's split-at-words shortcut. Returns the id count. */
static size_t spm_reference(const vocab *v, const char *text, size_t n, int32_t *out) {
    size_t k = 0, i = 0, j;
    char buf[2048];
    out[k++] = spm_find(v, " ", 1);
    while (i < n) {
        uint32_t cp;
        size_t len = tfm__utf8_next((const unsigned char *)text + i, n - i, &cp);
        int id = spm_find(v, text + i, len);
        if (id >= 0) out[k++] = id;
        else for (j = 0; j < len; j++) out[k++] = vocab_find(v, text + i + j, 1); /* the byte token */
        i += len;
    }
    for (;;) {
        float best = -1e10f;
        int best_id = -1;
        size_t at = 0;
        for (i = 0; i + 1 < k; i++) {
            const vtok *a = &v->tok[out[i]], *b = &v->tok[out[i + 1]];
            int id;
            memcpy(buf, a->text, a->len);
            memcpy(buf + a->len, b->text, b->len);
            id = spm_find(v, buf, a->len + b->len);
            if (id >= 0 && v->scores[id] > best) { best = v->scores[id]; best_id = id; at = i; }
        }
        if (best_id < 0) break;
        out[at] = best_id;
        memmove(out + at + 1, out + at + 2, (k - at - 2) * sizeof(int32_t));
        k--;
    }
    return k;
}

/* SentencePiece kind on llama2.c's tok512: ids as run.c computes them (its encode.txt, with
   the BOS it adds dropped: tfm_model_tokenize adds none). */
static void test_spm(const char *shared) {
    char path[1024], *text, *line, *cursor;
    size_t n;
    vocab v;
    bytes_t blob;
    tfm__tokenizer *t;
    int cases = 0, bad = 0;
    snprintf(path, sizeof path, "%s/models/tok512.bin", shared);
    if (!load_llama2c(path, &v, 512)) {
        printf("SKIP SentencePiece test: %s not found\n", path);
        vocab_free(&v);
        return;
    }
    blob = vocab_blob(&v);
    t = make_tokenizer(&blob);
    CHECK(t != NULL);
    snprintf(path, sizeof path, "%s/models/stories260K.ref/encode.txt", shared);
    text = read_file(path, &n);
    for (cursor = text; t && text && (line = next_line(&cursor)) != NULL;) {
        char *tab = strchr(line, '\t'), *p, *q;
        int32_t want[256], got[256];
        size_t n_want = 0, n_got = 0;
        if (!tab) continue;
        for (q = tab + 1; *q;) {
            want[n_want++] = (int32_t)strtol(q, &p, 10);
            if (p == q) break;
            q = p;
        }
        cases++;
        if (n_want < 1 || want[0] != 1 || !encode(t, line, (size_t)(tab - line), got, 256, &n_got) ||
            n_got != n_want - 1 || memcmp(got, want + 1, n_got * sizeof(int32_t)) != 0)
            bad++;
    }
    CHECK_MSG(cases == 3 && bad == 0, "tok512 encode.txt: %d of %d cases differ", bad, cases);
    printf("tok512 encode.txt: %d cases, %d mismatches\n", cases, bad);
    if (t) { /* decoding: byte tokens give their byte; code points are reassembled */
        int32_t ids[64];
        size_t n_ids;
        char out[256];
        CHECK(encode(t, "caf\xC3\xA9 \xE2\x82\xAC", 9, ids, 64, &n_ids));
        CHECK(decode_all(t, ids, n_ids, out, sizeof out) == 10 && !memcmp(out, " caf\xC3\xA9 \xE2\x82\xAC", 10));
        CHECK(encode(t, "", 0, ids, 64, &n_ids) && n_ids == 0);
    }
    if (t) { /* random texts against the plain run.c algorithm */
        static const char *parts[] = {"the", "a", "lily", "Once", " ", "  ", "   ", "upon", "time",
            ".", ",", "!", "\n", "\xC3\xA9", "\xE4\xB8\xAD", "said", "to", "play", "'s", "ing",
            "x", "Q", "7", "42", "\t", "happy", "dog", "\xF0\x9F\x98\x80"};
        unsigned seed = 99;
        int r, diff = 0;
        for (r = 0; r < 300; r++) {
            char buf[512];
            int32_t a[600], b[600];
            size_t len = 0, na = 0, nb, parts_n = 1 + (seed = seed * 1103515245u + 12345u) % 40, q;
            for (q = 0; q < parts_n; q++) {
                const char *part = parts[((seed = seed * 1103515245u + 12345u) >> 16) % (sizeof parts / sizeof parts[0])];
                memcpy(buf + len, part, strlen(part));
                len += strlen(part);
            }
            nb = spm_reference(&v, buf, len, b);
            if (!encode(t, buf, len, a, 600, &na) || na != nb || memcmp(a, b, na * sizeof(int32_t))) diff++;
        }
        CHECK_MSG(diff == 0, "SPM: %d of 300 random texts differ from the plain run.c algorithm", diff);
    }
    free(text);
    tfm__tokenizer_destroy(t, &(tfm_allocator){0, 0, 0});
    free(blob.p);
    vocab_free(&v);
}

/* llama2.c's tok512.bin, merged by score (run.c's rule), against Hugging Face's ids for the same
   vocabulary as a tokenizer.json (tok512_hf.txt; tests/test_convert_tokenizer.c converts that
   file), on the texts without <s> </s> <unk>. */
static void test_tok512_by_score(const char *shared) {
    char path[1024];
    vocab v;
    bytes_t blob;
    tfm__tokenizer *by_score;
    snprintf(path, sizeof path, "%s/models/tok512.bin", shared);
    if (!load_llama2c(path, &v, 512)) {
        printf("SKIP tok512 by score: %s not found\n", path);
        vocab_free(&v);
        return;
    }
    blob = vocab_blob(&v);
    by_score = make_tokenizer(&blob);
    CHECK(by_score != NULL);
    if (by_score) {
        size_t n;
        char *text = read_file("tests/data/tokenizer/tok512_hf.txt", &n), *line, *cursor = text;
        static int32_t got[4096], want[4096];
        int plain = 0, differ = 0;
        while (text && (line = next_line(&cursor)) != NULL) {
            char *sep = NULL, *p, *q;
            size_t len, n_got = 0, n_want = 0;
            for (p = strstr(line, " => "); p; p = strstr(p + 1, " => ")) sep = p;
            if (!sep) continue;
            len = unescape(line, (size_t)(sep - line));
            if (has_added_text(line, len)) continue;
            for (q = sep + 4; *q;) {
                want[n_want++] = (int32_t)strtol(q, &p, 10);
                if (p == q) { n_want--; break; }
                q = *p == ',' ? p + 1 : p;
            }
            plain++;
            if (!encode(by_score, line, len, got, 4096, &n_got) || n_got != n_want ||
                memcmp(got, want, n_want * sizeof(int32_t)) != 0)
                differ++;
        }
        free(text);
        CHECK_MSG(plain > 120 && differ == 0, "tok512 by score vs HF: %d of %d texts differ", differ, plain);
        printf("tok512_hf.txt (tok512.bin, by score): %d cases, %d mismatches\n", plain, differ);
        tfm__tokenizer_destroy(by_score, &(tfm_allocator){0, 0, 0});
    }
    free(blob.p);
    vocab_free(&v);
}

/* The Llama-3 / Qwen2 scanner alone against Hugging Face's pre-tokenizer (*_pretok_hf.txt: byte
   length of each piece), and on every prefix of each text (cut between characters, as the
   NFC window cuts) with more to come (final false): each end it commits to must be one of the
   final ends. */
static void test_llama3_pretok(const char *path, int max_numbers, int want_cases) {
    size_t n;
    char *text = read_file(path, &n), *line, *cursor = text;
    int cases = 0, bad = 0, bad_prefix = 0;
    CHECK_MSG(text != NULL, "%s is missing", path);
    while (text && (line = next_line(&cursor)) != NULL) {
        char *sep = NULL, *p, *q;
        size_t len, ends[512], n_ends = 0, pos, m, k;
        int ok = 1;
        const unsigned char *u = (const unsigned char *)line;
        for (p = strstr(line, " => "); p; p = strstr(p + 1, " => ")) sep = p;
        if (!sep) continue;
        len = unescape(line, (size_t)(sep - line));
        for (q = sep + 4, pos = 0; *q && n_ends < 512;) {
            long piece = strtol(q, &p, 10);
            if (p == q) break;
            pos += (size_t)piece;
            ends[n_ends++] = pos;
            q = *p == ',' ? p + 1 : p;
        }
        cases++;
        for (pos = 0, k = 0; pos < len && ok; k++) {
            size_t end = tfm__pretok_llama3(u, len, pos, true, max_numbers);
            ok = k < n_ends && end == ends[k];
            pos = end;
        }
        if (!ok || k != n_ends) {
            if (++bad <= 3) fprintf(stderr, "  llama3 pre-token mismatch: \"%.*s\"\n", (int)len, line);
        }
        for (m = 1; m < len; m++) { /* streaming: a prefix of whole characters, more to come */
            if ((u[m] & 0xC0u) == 0x80u) continue;
            for (pos = 0, k = 0; pos < m;) {
                size_t end = tfm__pretok_llama3(u, m, pos, false, max_numbers);
                if (end == 0) break;
                while (k < n_ends && ends[k] < end) k++;
                if (k == n_ends || ends[k] != end) {
                    if (++bad_prefix <= 5)
                        fprintf(stderr, "  llama3 prefix %zu of \"%.*s\": end %zu at %zu\n", m, (int)len,
                                line, end, pos);
                    break;
                }
                pos = end;
            }
        }
    }
    free(text);
    CHECK_MSG(cases == want_cases && bad == 0, "%s: %d of %d cases differ", path, bad, cases);
    CHECK_MSG(bad_prefix == 0, "llama3 scanner: %d prefixes commit to a wrong end", bad_prefix);
    printf("%s: %d cases, %d mismatches\n", path + 21, cases, bad);
}

int main(void) {
    const char *shared = check_shared_dir();
    char path[1024];
    vocab v2, vx;
    bytes_t blob2 = {0, 0, 0}, blobx = {0, 0, 0};
    tfm__tokenizer *gpt2 = NULL, *neox = NULL;
    tfm_allocator a = {0, 0, 0};
    int cases, bad;

    memset(&vx, 0, sizeof vx);
    if (!load_gpt2(shared, &v2)) {
        printf("SKIP tokenizer vectors: %s/tokenizers not found\n", shared);
    } else {
        blob2 = vocab_blob(&v2);
        gpt2 = make_tokenizer(&blob2);
        CHECK(gpt2 != NULL);
        CHECK_MSG(v2.n_tok == 50257 && v2.n_merges == 50000, "gpt2: %d tokens %d merges", v2.n_tok, v2.n_merges);
        snprintf(path, sizeof path, "%s/tokenizers/gpt-neox-20b/tokenizer.json", shared);
        CHECK(load_hf_json(path, &vx));
        blobx = vocab_blob(&vx);
        neox = make_tokenizer(&blobx);
        CHECK(neox != NULL);
        CHECK_MSG(vx.n_tok == 50277 && vx.n_merges == 50009, "neox: %d tokens %d merges", vx.n_tok, vx.n_merges);
    }
    if (gpt2) {
        snprintf(path, sizeof path, "%s/tokenizers/vectors/gpt-2.txt", shared);
        cases = check_vectors(gpt2, path, 0, &bad);
        CHECK_MSG(cases == 100 && bad == 0, "gpt-2.txt: %d of %d cases differ", bad, cases);
        printf("gpt-2.txt: %d cases, %d mismatches\n", cases, bad);
    }
    if (neox) {
        snprintf(path, sizeof path, "%s/tokenizers/vectors/gpt-neox.txt", shared);
        cases = check_vectors(neox, path, 0, &bad);
        CHECK_MSG(cases == 100 && bad == 0, "gpt-neox.txt: %d of %d cases differ", bad, cases);
        printf("gpt-neox.txt: %d cases, %d mismatches\n", cases, bad);
    }
    if (gpt2) {
        cases = check_vectors(gpt2, "tests/data/tokenizer/gpt2_extra.txt", 1, &bad);
        CHECK_MSG(cases >= 60 && bad == 0, "gpt2_extra.txt: %d of %d cases differ", bad, cases);
        printf("gpt2_extra.txt: %d cases, %d mismatches\n", cases, bad);
    }
    if (gpt2) check_large_text(gpt2);
    if (gpt2) {
        cases = check_vectors(gpt2, "tests/data/tokenizer/gpt2_hf.txt", 1, &bad);
        CHECK_MSG(cases >= 240 && bad == 0, "gpt2_hf.txt: %d of %d cases differ", bad, cases);
        printf("gpt2_hf.txt: %d cases, %d mismatches\n", cases, bad);
    }
    if (neox) {
        cases = check_vectors(neox, "tests/data/tokenizer/neox_extra.txt", 1, &bad);
        CHECK_MSG(cases >= 240 && bad == 0, "neox_extra.txt: %d of %d cases differ", bad, cases);
        printf("neox_extra.txt: %d cases, %d mismatches\n", cases, bad);
    }
    if (gpt2 && neox) {
        int rt_cases = 0, rt_bad = check_round_trip(gpt2, "tests/data/tokenizer/gpt2_extra.txt", 1, &rt_cases);
        CHECK_MSG(rt_cases >= 60 && rt_bad == 0, "gpt2 round trip: %d of %d differ", rt_bad, rt_cases);
        rt_bad = check_round_trip(neox, "tests/data/tokenizer/neox_extra.txt", 1, &rt_cases);
        CHECK_MSG(rt_cases >= 240 && rt_bad == 0, "neox round trip: %d of %d differ", rt_bad, rt_cases);
        test_decode_stream(gpt2);
        test_hf_decode(neox);
        test_invalid_utf8(gpt2, neox);
        test_two_call(gpt2);
        test_long_piece(gpt2, neox);
        test_nfc_window(neox, &vx);
        test_allocation(&blobx);
        test_public_api(&blob2);
    }
    test_nfc_vectors();
    test_hostile_blobs();
    test_hash_flood();
    test_spm(shared);
    test_tok512_by_score(shared);
    test_llama3_pretok("tests/data/tokenizer/llama3_pretok_hf.txt", 3, 171);
    test_llama3_pretok("tests/data/tokenizer/qwen2_pretok_hf.txt", 1, 181);
    tfm__tokenizer_destroy(gpt2, &a);
    tfm__tokenizer_destroy(neox, &a);
    free(blob2.p);
    free(blobx.p);
    vocab_free(&v2);
    vocab_free(&vx);
    return check_summary("test_tokenizer");
}
