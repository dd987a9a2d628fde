/* fuzz_tokenizer.c - libFuzzer harness for the >>tokenizer section.

   The first input byte picks what the rest is:
     even: a tokenizer blob (hostile): create, and when it validates, encode and decode with it;
     odd:  text (any bytes), encoded by small valid tokenizers of both kinds (byte-level BPE with
           NFC and added tokens, the pre-tokenizer and TFM_TOKFLAG_IGNORE_MERGES picked by bits
           1..3 of the first byte; SentencePiece with byte fallback, the dummy-prefix flags of
           bits 4..5 and, with bit 6, merges), then decoded back through the streaming decoder,
           which must reproduce the text's bytes for the byte-level kind when the text needs no
           normalizing.
   Build and run (clang):
     clang -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz_tokenizer.c -o build/fuzz_tokenizer
     mkdir -p build/fuzz_corpus && build/fuzz_tokenizer -max_total_time=60 build/fuzz_corpus */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <stdlib.h>

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}

/* 256 byte tokens (SPM: <0xNN> byte tokens), "ab", "abc", " a", added "<|x|>" and "  ";
   flags and pretok as given, merges for BPE always, for SPM when spm_merges. */
static size_t tiny_blob(unsigned char *b, uint32_t kind, uint32_t flags, uint32_t pretok,
                        int spm_merges) {
    static const char *extra[5] = {"ab", "abc", " a", "<|x|>", "  "};
    const uint32_t n_tok = 261, n_merges = kind == TFM_TOKENIZER_BPE_BYTES || spm_merges ? 3 : 0;
    size_t at, i, text_bytes = 256 + 2 + 3 + 2 + 5 + 2, off = 0;
    memset(b, 0, 64);
    put32(b, kind);
    put32(b + 4, n_tok);
    put32(b + 8, n_merges);
    put32(b + 12, flags);
    put32(b + 16, pretok);
    put32(b + 20, 259); put32(b + 24, 259); put32(b + 28, (uint32_t)-1); put32(b + 32, (uint32_t)-1);
    put32(b + 36, (uint32_t)text_bytes);
    at = 64;
    for (i = 0; i <= n_tok; i++, at += 4) {
        put32(b + at, (uint32_t)off);
        if (i < n_tok) off += i < 256 ? 1 : strlen(extra[i - 256]);
    }
    for (i = 0; i < n_tok; i++, at += 4) { /* scores: longer pieces score higher */
        float f = i < 256 ? -100.0f : (float)strlen(extra[i - 256]);
        uint32_t u;
        memcpy(&u, &f, 4);
        put32(b + at, u);
    }
    for (i = 0; i < n_tok; i++) {
        unsigned char attr = 0;
        if (i < 256 && kind == TFM_TOKENIZER_SPM) attr = TFM_TOKATTR_BYTE;
        if (i == 259) attr = TFM_TOKATTR_ADDED | TFM_TOKATTR_SPECIAL;
        if (i == 260) attr = TFM_TOKATTR_ADDED;
        b[at++] = attr;
    }
    while (at % 4) b[at++] = 0;
    if (n_merges) {
        put32(b + at, 'a'); put32(b + at + 4, 'b'); put32(b + at + 8, 256);
        put32(b + at + 12, 256); put32(b + at + 16, 'c'); put32(b + at + 20, 257);
        put32(b + at + 24, ' '); put32(b + at + 28, 'a'); put32(b + at + 32, 258);
        at += 36;
    }
    for (i = 0; i < 256; i++) b[at++] = (unsigned char)i;
    for (i = 0; i < 5; i++) {
        memcpy(b + at, extra[i], strlen(extra[i]));
        at += strlen(extra[i]);
    }
    return at;
}

/* Encode, then decode every id; returns the decoded byte count (into out, cap bytes). */
static size_t round_trip(const tfm__tokenizer *t, const uint8_t *text, size_t n, char *out,
                         size_t cap) {
    static int32_t ids[1 << 16];
    size_t n_ids = 0, i, total = 0, got;
    tfm_utf8_stream st;
    memset(&st, 0, sizeof st);
    if (tfm__tokenizer_encode(t, (const char *)text, n, ids, 1 << 16, &n_ids) != TFM_OK) return 0;
    for (i = 0; i < n_ids && total + 64 <= cap; i++) {
        if (tfm__tokenizer_decode(t, &st, ids[i], out + total, cap - total, &got) != TFM_OK)
            abort();
        total += got;
    }
    return total + tfm_utf8_stream_flush(&st, out + total, cap - total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static unsigned char blob[4096];
    static char out[1 << 20];
    tfm_allocator a;
    tfm__tokenizer *t = NULL;
    memset(&a, 0, sizeof a);
    if (size < 1 || size > 60000) return 0;
    if (data[0] % 2 == 0) {
        if (tfm__tokenizer_create(data + 1, size - 1, &a, NULL, &t) == TFM_OK) {
            static const char text[] = "abc  <|x|> a'll e\xCC\x81 12\xF0\x9F\x98\x80\xFF";
            round_trip(t, (const uint8_t *)text, sizeof text - 1, out, sizeof out);
            tfm__tokenizer_destroy(t, &a);
        } else if (t != NULL) {
            abort();
        }
        return 0;
    }
    if (tfm__tokenizer_create(blob, tiny_blob(blob, TFM_TOKENIZER_BPE_BYTES, TFM_TOKFLAG_NFC |
                                              (data[0] & 8u ? TFM_TOKFLAG_IGNORE_MERGES : 0u),
                                              (uint32_t)(data[0] >> 1) % 5u, 0),
                              &a, NULL, &t) != TFM_OK)
        abort();
    {
        size_t n = round_trip(t, data + 1, size - 1, out, sizeof out), i;
        bool plain = true; /* no byte that NFC could change: the bytes must come back */
        for (i = 1; i < size; i++) plain = plain && data[i] < 0x80;
        if (plain && (n != size - 1 || memcmp(out, data + 1, n) != 0)) abort();
    }
    tfm__tokenizer_destroy(t, &a);
    if (tfm__tokenizer_create(blob, tiny_blob(blob, TFM_TOKENIZER_SPM, TFM_TOKFLAG_PREFIX_SPACE |
                                              (data[0] & 16u ? TFM_TOKFLAG_PREFIX_FIRST : 0u) |
                                              (data[0] & 32u ? TFM_TOKFLAG_PREFIX_UNLESS_SPACE : 0u),
                                              TFM_PRETOK_NONE, data[0] & 64u),
                              &a, NULL, &t) != TFM_OK)
        abort();
    round_trip(t, data + 1, size - 1, out, sizeof out);
    tfm__tokenizer_destroy(t, &a);
    return 0;
}

#ifdef FUZZ_SEED_MAIN
/* Seeds for the corpus: the two small blobs (blob mode) and a text. Build without -fsanitize=fuzzer:
     cc -DFUZZ_SEED_MAIN -I. tests/fuzz_tokenizer.c -o build/fuzz_seeds -lm && build/fuzz_seeds DIR */
#include <stdio.h>
static void write_seed(const char *dir, const char *name, const unsigned char *p, size_t n) {
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f) return;
    fwrite(p, 1, n, f);
    fclose(f);
}
int main(int argc, char **argv) {
    static unsigned char buf[4097];
    static const char text[] = "\001Hello  world<|x|> abc e\xCC\x81\xF0\x9F\x98";
    if (argc < 2) return 1;
    buf[0] = 0;
    write_seed(argv[1], "blob_bpe", buf, 1 + tiny_blob(buf + 1, TFM_TOKENIZER_BPE_BYTES, TFM_TOKFLAG_NFC,
                                                       TFM_PRETOK_GPT2, 0));
    write_seed(argv[1], "blob_spm", buf, 1 + tiny_blob(buf + 1, TFM_TOKENIZER_SPM,
                                                       TFM_TOKFLAG_PREFIX_SPACE, TFM_PRETOK_NONE, 0));
    buf[0] = 0;
    write_seed(argv[1], "blob_llama3", buf, 1 + tiny_blob(buf + 1, TFM_TOKENIZER_BPE_BYTES,
                                                          TFM_TOKFLAG_IGNORE_MERGES, TFM_PRETOK_LLAMA3, 0));
    write_seed(argv[1], "blob_spm_merges", buf, 1 + tiny_blob(buf + 1, TFM_TOKENIZER_SPM,
                                                              TFM_TOKFLAG_PREFIX_SPACE |
                                                              TFM_TOKFLAG_PREFIX_FIRST, TFM_PRETOK_NONE, 1));
    write_seed(argv[1], "text", (const unsigned char *)text, sizeof text - 1);
    return 0;
}
#endif
