/* test_convert_tokenizer.c - how tfm-convert reads tokenizer.json files: synthetic ones in the
   shapes of real checkpoints (tests/gen/make_synth_tokenizers.js: Llama-2 with each Metaspace
   scheme, StarCoder2's digits, Llama-3, Qwen2) and llama2.c's tok512 written as a
   tokenizer.json, converted by build/tfm-convert --vocab-only, opened with tfm.h and checked
   against Hugging Face's own ids; the options it refuses or reads (normalizers, pre-tokenizers,
   tokenizer_config.json). The library's tokenizer on its own is tests/test_tokenizer.c. */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "tok_data.h"

#include <stdint.h>
#include <time.h>

/* Scratch directory of this run (several test runs may share build/). */
static char g_tok_dir[96];

/* build/tfm-convert --vocab-only src -o out; the model, or NULL when the conversion fails. */
static tfm_model *convert_vocab(const char *src, const char *out) {
    char cmd[1024];
    tfm_model_desc md;
    tfm_model *m = NULL;
    snprintf(cmd, sizeof cmd, "build/tfm-convert --vocab-only %s -o %s --quiet 2>/dev/null", src, out);
    if (system(cmd) != 0) return NULL;
    memset(&md, 0, sizeof md);
    md.path = out;
    return tfm_model_open(&md, &m) == TFM_OK ? m : NULL;
}

/* llama_hf_decode.txt ("ids => hex" of Hugging Face's decode, whose Strip drops one leading
   space; tfm's decode keeps the dummy prefix) and the round trip of every llama_legacy_hf.txt
   text without added tokens: " " + text. */
static void test_llama_decode(const tfm__tokenizer *t) {
    size_t n;
    char *text = read_file("tests/data/tokenizer/llama_hf_decode.txt", &n), *line, *cursor = text;
    static char out[1 << 16], want[1 << 16];
    static int32_t ids[4096];
    int cases = 0, bad = 0, trips = 0;
    CHECK_MSG(text != NULL, "tests/data/tokenizer/llama_hf_decode.txt is missing");
    while (text && (line = next_line(&cursor)) != NULL) {
        char *sep = strstr(line, " => "), *p, *q;
        size_t n_ids = 0, got, n_want;
        if (!sep) continue;
        *sep = '\0';
        for (q = line; *q;) {
            ids[n_ids++] = (int32_t)strtol(q, &p, 10);
            if (p == q) { n_ids--; break; }
            q = *p == ',' ? p + 1 : p;
        }
        n_want = hex_to_bytes(sep + 4, want);
        got = decode_all(t, ids, n_ids, out, sizeof out);
        cases++;
        if (got == (size_t)-1) { bad++; continue; }
        if (got > 0 && out[0] == ' ') { memmove(out, out + 1, got - 1); got--; }
        if (got != n_want || memcmp(out, want, got) != 0) {
            if (++bad <= 3) fprintf(stderr, "  llama decode mismatch: %.*s\n", (int)(got > 60 ? 60 : got), out);
        }
    }
    free(text);
    CHECK_MSG(cases == 188 && bad == 0, "llama_hf_decode.txt: %d of %d cases differ", bad, cases);
    printf("llama_hf_decode.txt: %d cases, %d mismatches\n", cases, bad);
    text = read_file("tests/data/tokenizer/llama_legacy_hf.txt", &n);
    bad = 0;
    for (cursor = text; text && (line = next_line(&cursor)) != NULL;) {
        char *sep = NULL, *p;
        size_t len, n_ids = 0, got;
        for (p = strstr(line, " => "); p; p = strstr(p + 1, " => ")) sep = p;
        if (!sep) continue;
        len = unescape(line, (size_t)(sep - line));
        if (has_added_text(line, len)) continue;
        trips++;
        if (!encode(t, line, len, ids, 4096, &n_ids) ||
            (got = decode_all(t, ids, n_ids, out, sizeof out)) != len + 1 || out[0] != ' ' ||
            memcmp(out + 1, line, len) != 0)
            bad++;
    }
    free(text);
    CHECK_MSG(trips > 120 && bad == 0, "llama round trip: %d of %d differ", bad, trips);
}

/* Write src with its first `from` replaced by `to` into dir/tokenizer.json (dir made here). */
static int write_variant(const char *src, const char *from, const char *to, const char *dir) {
    size_t n;
    char *text = read_file(src, &n), *at, path[512];
    FILE *f;
    int ok;
    snprintf(path, sizeof path, "mkdir -p %s", dir);
    if (!text || system(path) != 0 || !(at = strstr(text, from))) {
        free(text);
        return 0;
    }
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    f = fopen(path, "wb");
    ok = f && fwrite(text, 1, (size_t)(at - text), f) == (size_t)(at - text) &&
         fputs(to, f) >= 0 && fputs(at + strlen(from), f) >= 0;
    if (f) ok = fclose(f) == 0 && ok;
    free(text);
    return ok;
}

/* What tfm-convert refuses or reads around a Llama-style tokenizer.json. */
static void test_synth_convert_options(void) {
    static const struct { const char *src, *from, *to; int ok; uint32_t flags; } v[] = {
        {"llama_legacy", "\"type\": \"Prepend\"", "\"type\": \"Lowercase\"", 0, 0},
        {"llama_legacy", "\"prepend\": \"\xE2\x96\x81\"", "\"prepend\": \"_\"", 0, 0},
        {"llama_legacy", "\"content\": \"\xE2\x96\x81\"", "\"content\": \"-\"", 0, 0},
        {"llama_first", "\"split\": false", "\"split\": true", 0, 0}, /* "▁▁" tokens */
        {"llama_first", "\"prepend_scheme\": \"first\"", "\"prepend_scheme\": \"never\"", 1,
         TFM_TOKFLAG_ADD_BOS},
        {"llama_first", "\"prepend_scheme\": \"first\"", "\"prepend_scheme\": \"sometimes\"", 0, 0},
        {"llama_legacy", "\"ignore_merges\": false", "\"ignore_merges\": true", 0, 0},
        {"llama_legacy", "\"type\": \"TemplateProcessing\"", "\"type\": \"ByteLevel\"", 1,
         TFM_TOKFLAG_PREFIX_SPACE},
        {"digits", "\"individual_digits\": true", "\"individual_digits\": false", 0, 0},
        {"digits", "\"type\": \"Digits\"", "\"type\": \"Punctuation\"", 0, 0},
        {"llama3", "\\\\p{N}{1,3}", "\\\\p{N}{1,2}", 0, 0}, /* neither Llama-3's nor Qwen2's */
        {"llama3", "\\\\p{N}{1,3}", "\\\\p{N}", 1, TFM_TOKFLAG_IGNORE_MERGES | TFM_TOKFLAG_ADD_BOS},
        {"qwen2", "\"type\": \"NFC\"", "\"type\": \"NFKC\"", 0, 0},
        {"llama3", "\"use_regex\": false", "\"use_regex\": true", 0, 0},
        {"llama3", "\"behavior\": \"Isolated\"", "\"behavior\": \"Removed\"", 0, 0},
        {"llama3", "\"ignore_merges\": true", "\"ignore_merges\": false", 1, TFM_TOKFLAG_ADD_BOS},
    };
    char src[256], out[256], dir[256], cfg[300];
    size_t i;
    snprintf(dir, sizeof dir, "%s/variant", g_tok_dir);
    snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        tfm_model *m;
        snprintf(src, sizeof src, "tests/data/tokenizer/%s.json", v[i].src);
        CHECK_MSG(write_variant(src, v[i].from, v[i].to, dir), "variant %zu", i);
        snprintf(out, sizeof out, "%s/variant_%zu.tfm", g_tok_dir, i);
        m = convert_vocab(dir, out);
        CHECK_MSG((m != NULL) == v[i].ok, "variant %zu (%s -> %s): converted %d, expected %d", i,
                  v[i].from, v[i].to, m != NULL, v[i].ok);
        if (m) CHECK_MSG(tfm__model_tokenizer(m)->flags == v[i].flags, "variant %zu: flags 0x%x", i,
                         tfm__model_tokenizer(m)->flags);
        tfm_model_close(m);
    }
    { /* tokenizer_config.json next to tokenizer.json: add_bos_token false, eos_token by text */
        FILE *f;
        tfm_model *m;
        CHECK(write_variant("tests/data/tokenizer/llama_legacy.json", "\"version\"", "\"version\"", dir));
        f = fopen(cfg, "wb");
        CHECK(f != NULL);
        if (f) {
            fputs("{\"add_bos_token\": false, \"eos_token\": {\"content\": \"<unk>\"}}\n", f);
            fclose(f);
        }
        snprintf(out, sizeof out, "%s/variant_cfg.tfm", g_tok_dir);
        m = convert_vocab(dir, out);
        CHECK(m != NULL);
        if (m) {
            tfm_config c = tfm_model_config(m);
            CHECK(!c.add_bos && c.bos_id == 1 && c.eos_id == 0);
        }
        tfm_model_close(m);
        remove(cfg);
    }
}

/* A token's text in SentencePiece spelling as a JSON string (space -> U+2581). */
static void json_spm_string(FILE *f, const vtok *t, int id) {
    size_t i;
    if (t->attr & TFM_TOKATTR_BYTE) {
        fprintf(f, "\"<0x%02X>\"", (unsigned)(unsigned char)t->text[0]);
        return;
    }
    if (id <= 2) {
        fputs(id == 0 ? "\"<unk>\"" : id == 1 ? "\"<s>\"" : "\"</s>\"", f);
        return;
    }
    fputc('"', f);
    for (i = 0; i < t->len; i++) {
        unsigned char c = (unsigned char)t->text[i];
        if (c == ' ') fputs("\xE2\x96\x81", f);
        else if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static int cmp_pair(const void *a, const void *b) {
    const int *x = (const int *)a, *y = (const int *)b;
    return x[0] != y[0] ? x[0] - y[0] : x[1] - y[1];
}

/* llama2.c's tok512 as Hugging Face's Llama converter writes a tokenizer.json: vocab by id
   (U+2581 for space, <0xNN>, <unk> <s> </s>), merges = every split of a piece into two pieces,
   pieces in id order (SentencePiece's score order), splits of one piece by (left id, right id);
   the legacy Prepend/Replace normalizer, byte_fallback. */
static int write_tok512_json(const vocab *v, const char *path) {
    FILE *f = fopen(path, "wb");
    int i, first = 1;
    if (!f) return 0;
    fputs("{\"version\": \"1.0\", \"added_tokens\": [", f);
    for (i = 0; i < 3; i++)
        fprintf(f, "%s{\"id\": %d, \"content\": \"%s\", \"single_word\": false, \"lstrip\": false, "
                "\"rstrip\": false, \"normalized\": false, \"special\": true}", i ? ", " : "", i,
                i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
    fputs("], \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", "
          "\"prepend\": \"\xE2\x96\x81\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
          "\"content\": \"\xE2\x96\x81\"}]}, \"pre_tokenizer\": null, \"post_processor\": null, "
          "\"decoder\": null, \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", "
          "\"fuse_unk\": true, \"byte_fallback\": true, \"vocab\": {", f);
    for (i = 0; i < v->n_tok; i++) {
        fputs(i ? ", " : "", f);
        json_spm_string(f, &v->tok[i], i);
        fprintf(f, ": %d", i);
    }
    fputs("}, \"merges\": [", f);
    for (i = 3; i < v->n_tok; i++) {
        const vtok *t = &v->tok[i];
        int pairs[64][2], n_pairs = 0, k;
        size_t cut;
        if (t->attr & TFM_TOKATTR_BYTE) continue;
        for (cut = 1; cut < t->len && n_pairs < 64; cut++) {
            int l, r;
            if (((unsigned char)t->text[cut] & 0xC0u) == 0x80u) continue; /* whole characters */
            l = spm_find(v, t->text, cut);
            r = spm_find(v, t->text + cut, t->len - cut);
            if (l < 3 || r < 3) continue;
            pairs[n_pairs][0] = l;
            pairs[n_pairs++][1] = r;
        }
        qsort(pairs, (size_t)n_pairs, sizeof pairs[0], cmp_pair);
        for (k = 0; k < n_pairs; k++) {
            fputs(first ? "[" : ", [", f);
            first = 0;
            json_spm_string(f, &v->tok[pairs[k][0]], pairs[k][0]);
            fputs(", ", f);
            json_spm_string(f, &v->tok[pairs[k][1]], pairs[k][1]);
            fputs("]", f);
        }
    }
    fputs("]}}\n", f);
    return fclose(f) == 0;
}

/* A real SentencePiece vocabulary (llama2.c's tok512) as a tokenizer.json (write_tok512_json),
   converted by tfm-convert and merged by rank, against Hugging Face's ids for that
   tokenizer.json (tok512_hf.txt). tests/test_tokenizer.c runs tok512.bin itself, by score. */
static void test_tok512_json(const char *shared) {
    char path[1024], json[256], out[256];
    vocab v;
    tfm_model *m;
    int cases, bad;
    snprintf(path, sizeof path, "%s/models/tok512.bin", shared);
    if (!load_llama2c(path, &v, 512)) {
        printf("SKIP tok512 tokenizer.json test: %s not found\n", path);
        vocab_free(&v);
        return;
    }
    snprintf(json, sizeof json, "%s/tok512.json", g_tok_dir);
    CHECK(write_tok512_json(&v, json));
    if (getenv("TFM_TOK512_JSON")) CHECK(write_tok512_json(&v, getenv("TFM_TOK512_JSON")));
    snprintf(out, sizeof out, "%s/tok512.tfm", g_tok_dir);
    m = convert_vocab(json, out);
    CHECK_MSG(m != NULL, "tok512.json: tfm-convert --vocab-only or open failed");
    if (m) {
        const tfm__tokenizer *t = tfm__model_tokenizer(m);
        CHECK(t->kind == TFM_TOKENIZER_SPM && t->n_merges > 0 && t->flags == TFM_TOKFLAG_PREFIX_SPACE);
        cases = check_vectors(t, "tests/data/tokenizer/tok512_hf.txt", 1, &bad);
        CHECK_MSG(cases == 188 && bad == 0, "tok512_hf.txt (by rank): %d of %d cases differ", bad, cases);
        printf("tok512_hf.txt (tokenizer.json, by rank): %d cases, %d mismatches\n", cases, bad);
        tfm_model_close(m);
    }
    vocab_free(&v);
}

static void test_synth_tokenizers(const char *shared) {
    static const struct { const char *name; uint32_t flags; } llama[] = {
        {"legacy", TFM_TOKFLAG_PREFIX_SPACE | TFM_TOKFLAG_ADD_BOS},
        {"first", TFM_TOKFLAG_PREFIX_SPACE | TFM_TOKFLAG_PREFIX_FIRST | TFM_TOKFLAG_PREFIX_UNLESS_SPACE | TFM_TOKFLAG_ADD_BOS},
        {"always", TFM_TOKFLAG_PREFIX_SPACE | TFM_TOKFLAG_PREFIX_UNLESS_SPACE | TFM_TOKFLAG_ADD_BOS},
    };
    char src[256], out[256], golden[256];
    tfm_model *m;
    size_t i;
    int cases, bad;
    FILE *probe = fopen("build/tfm-convert", "rb");
    if (!probe) {
        printf("SKIP tokenizer.json conversion tests: build/tfm-convert not built\n");
        return;
    }
    fclose(probe);
    snprintf(g_tok_dir, sizeof g_tok_dir, "build/tok_%lx_%lx", (unsigned long)time(NULL),
             (unsigned long)(uintptr_t)&probe); /* the stack address differs between runs */
    snprintf(golden, sizeof golden, "mkdir -p %s", g_tok_dir);
    CHECK(system(golden) == 0);
    for (i = 0; i < sizeof llama / sizeof llama[0]; i++) {
        const tfm__tokenizer *t;
        tfm_config c;
        snprintf(src, sizeof src, "tests/data/tokenizer/llama_%s.json", llama[i].name);
        snprintf(out, sizeof out, "%s/llama_%s.tfm", g_tok_dir, llama[i].name);
        snprintf(golden, sizeof golden, "tests/data/tokenizer/llama_%s_hf.txt", llama[i].name);
        m = convert_vocab(src, out);
        CHECK_MSG(m != NULL, "%s: tfm-convert --vocab-only or open failed", src);
        if (!m) continue;
        t = tfm__model_tokenizer(m);
        c = tfm_model_config(m);
        CHECK(t->kind == TFM_TOKENIZER_SPM && t->flags == llama[i].flags && t->pretok == TFM_PRETOK_NONE);
        CHECK(c.n_tokens == 743 && t->n_merges == 446 && c.bos_id == 1 && c.eos_id == 2 && t->unk_id == 0 && c.add_bos);
        CHECK((t->attrs[3 + 0x0A] & TFM_TOKATTR_BYTE) && t->byte_id[0xFF] == 3 + 0xFF);
        cases = check_vectors(t, golden, 1, &bad);
        CHECK_MSG(cases == 188 && bad == 0, "%s: %d of %d cases differ", golden, bad, cases);
        printf("%s: %d cases, %d mismatches\n", golden + 21, cases, bad);
        if (i == 0) {
            int32_t ids[8];
            size_t n_ids = 99;
            CHECK(encode(t, "", 0, ids, 8, &n_ids) && n_ids == 0);
            test_llama_decode(t);
        }
        tfm_model_close(m);
    }
    snprintf(out, sizeof out, "%s/digits.tfm", g_tok_dir);
    m = convert_vocab("tests/data/tokenizer/digits.json", out);
    CHECK_MSG(m != NULL, "digits.json: tfm-convert --vocab-only or open failed");
    if (m) {
        const tfm__tokenizer *t = tfm__model_tokenizer(m);
        int rt_cases = 0, rt_bad;
        CHECK(t->kind == TFM_TOKENIZER_BPE_BYTES && t->pretok == TFM_PRETOK_GPT2_DIGITS && t->flags == 0);
        cases = check_vectors(t, "tests/data/tokenizer/digits_hf.txt", 1, &bad);
        CHECK_MSG(cases == 124 && bad == 0, "digits_hf.txt: %d of %d cases differ", bad, cases);
        printf("digits_hf.txt: %d cases, %d mismatches\n", cases, bad);
        rt_bad = check_round_trip(t, "tests/data/tokenizer/digits_hf.txt", 1, &rt_cases);
        CHECK_MSG(rt_cases == 124 && rt_bad == 0, "digits round trip: %d of %d differ", rt_bad, rt_cases);
        tfm_model_close(m);
    }
    snprintf(out, sizeof out, "%s/llama3.tfm", g_tok_dir);
    m = convert_vocab("tests/data/tokenizer/llama3.json", out);
    CHECK_MSG(m != NULL, "llama3.json: tfm-convert --vocab-only or open failed");
    if (m) {
        const tfm__tokenizer *t = tfm__model_tokenizer(m);
        tfm_config c = tfm_model_config(m);
        int rt_cases = 0, rt_bad;
        CHECK(t->kind == TFM_TOKENIZER_BPE_BYTES && t->pretok == TFM_PRETOK_LLAMA3 &&
              t->flags == (TFM_TOKFLAG_IGNORE_MERGES | TFM_TOKFLAG_ADD_BOS));
        CHECK(c.n_tokens == 613 && c.bos_id == 611 && c.add_bos && t->n_merges == 353);
        cases = check_vectors(t, "tests/data/tokenizer/llama3_hf.txt", 1, &bad);
        CHECK_MSG(cases == 171 && bad == 0, "llama3_hf.txt: %d of %d cases differ", bad, cases);
        printf("llama3_hf.txt: %d cases, %d mismatches\n", cases, bad);
        rt_bad = check_round_trip(t, "tests/data/tokenizer/llama3_hf.txt", 1, &rt_cases);
        CHECK_MSG(rt_cases == 171 && rt_bad == 0, "llama3 round trip: %d of %d differ", rt_bad, rt_cases);
        tfm_model_close(m);
    }
    snprintf(out, sizeof out, "%s/qwen2.tfm", g_tok_dir);
    m = convert_vocab("tests/data/tokenizer/qwen2.json", out);
    CHECK_MSG(m != NULL, "qwen2.json: tfm-convert --vocab-only or open failed");
    if (m) {
        const tfm__tokenizer *t = tfm__model_tokenizer(m);
        tfm_config c = tfm_model_config(m);
        int rt_cases = 0, rt_bad;
        CHECK(t->kind == TFM_TOKENIZER_BPE_BYTES && t->pretok == TFM_PRETOK_QWEN2 &&
              t->flags == TFM_TOKFLAG_NFC && !c.add_bos && c.n_tokens == 614 && c.eos_id == 611);
        cases = check_vectors(t, "tests/data/tokenizer/qwen2_hf.txt", 1, &bad);
        CHECK_MSG(cases == 181 && bad == 0, "qwen2_hf.txt: %d of %d cases differ", bad, cases);
        printf("qwen2_hf.txt: %d cases, %d mismatches\n", cases, bad);
        rt_bad = check_round_trip(t, "tests/data/tokenizer/qwen2_hf.txt", 1, &rt_cases);
        CHECK_MSG(rt_cases == 181 && rt_bad == 0, "qwen2 round trip: %d of %d differ", rt_bad,
                  rt_cases);
        tfm_model_close(m);
    }
    test_synth_convert_options();
    test_tok512_json(shared);
    snprintf(golden, sizeof golden, "rm -rf %s", g_tok_dir);
    CHECK(system(golden) == 0);
}

int main(void) {
    const char *shared = check_shared_dir();
    test_synth_tokenizers(shared);
    return check_summary("test_convert_tokenizer");
}
