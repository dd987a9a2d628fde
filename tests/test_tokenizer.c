/* test_tokenizer.c - the >>tokenizer section: blobs built here from Hugging Face files, ids
   checked against golden vectors, NFC, streaming decode, hostile blobs, the two-call pattern
   and "encode allocates nothing".

   The blob builder below reads GPT-2's vocab.json + merges.txt and GPT-NeoX's tokenizer.json
   (a tiny JSON reader, enough for these files), undoes the byte-level alphabet and writes the
   TOKENIZER BLOB layout of tfm.h's top comment. */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "tfm_writer.h"

#include <stdint.h>
#include <time.h>

/* ---------------------------------------------------------------------------------------------
   Small helpers */

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long len;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (char *)malloc((size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[len] = '\0';
    *n = (size_t)len;
    return buf;
}

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

/* The next line of a NUL-terminated buffer (cut in place), or NULL at the end. */
static char *next_line(char **cursor) {
    char *line = *cursor, *nl;
    if (!line || !*line) return NULL;
    nl = strchr(line, '\n');
    if (nl) { *nl = '\0'; *cursor = nl + 1; } else *cursor = line + strlen(line);
    return line;
}

typedef struct bytes_t {
    unsigned char *p;
    size_t n, cap;
} bytes_t;

static void bytes_put(bytes_t *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = (unsigned char *)realloc(b->p, b->cap);
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void bytes_u32(bytes_t *b, uint32_t v) {
    unsigned char le[4];
    le[0] = (unsigned char)v; le[1] = (unsigned char)(v >> 8);
    le[2] = (unsigned char)(v >> 16); le[3] = (unsigned char)(v >> 24);
    bytes_put(b, le, 4);
}

/* ---------------------------------------------------------------------------------------------
   A tiny JSON reader: values into a node array; strings decoded to UTF-8. */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct jnode {
    int type;
    char *str; /* J_STR: decoded text; for members: key in `key` */
    size_t len;
    char *key;
    size_t key_len;
    double num;
    int first, next; /* children / siblings, -1 none */
} jnode;
typedef struct jdoc {
    jnode *nodes;
    int n, cap;
    const char *p, *end;
    int bad;
} jdoc;

static void j_ws(jdoc *d) {
    while (d->p < d->end && (*d->p == ' ' || *d->p == '\n' || *d->p == '\r' || *d->p == '\t')) d->p++;
}

static void put_utf8(char *out, size_t *n, uint32_t cp) {
    unsigned char tmp[4];
    size_t k = tfm__utf8_put(cp, tmp);
    memcpy(out + *n, tmp, k);
    *n += k;
}

static unsigned j_hex4(jdoc *d) {
    unsigned v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        char c = d->p < d->end ? *d->p++ : 0;
        v = v * 16 + (unsigned)(c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : (d->bad = 1, 0));
    }
    return v;
}

static char *j_string(jdoc *d, size_t *len) {
    const char *s = ++d->p;
    char *out;
    size_t n = 0;
    while (d->p < d->end && *d->p != '"') d->p += *d->p == '\\' ? 2 : 1;
    out = (char *)malloc((size_t)(d->p - s) + 4);
    d->p = s;
    while (d->p < d->end && *d->p != '"') {
        char c = *d->p++;
        if (c != '\\') { out[n++] = c; continue; }
        c = *d->p++;
        if (c == 'n') out[n++] = '\n';
        else if (c == 't') out[n++] = '\t';
        else if (c == 'r') out[n++] = '\r';
        else if (c == 'b') out[n++] = '\b';
        else if (c == 'f') out[n++] = '\f';
        else if (c == 'u') {
            uint32_t cp = j_hex4(d);
            if (cp >= 0xD800 && cp < 0xDC00 && d->p + 1 < d->end && d->p[0] == '\\' && d->p[1] == 'u') {
                d->p += 2;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (j_hex4(d) - 0xDC00);
            }
            put_utf8(out, &n, cp);
        } else out[n++] = c;
    }
    d->p++;
    *len = n;
    return out;
}

static int j_value(jdoc *d) {
    int id, prev = -1;
    j_ws(d);
    if (d->p >= d->end) { d->bad = 1; return -1; }
    if (d->n == d->cap) {
        d->cap = d->cap * 2 + 1024;
        d->nodes = (jnode *)realloc(d->nodes, (size_t)d->cap * sizeof(jnode));
    }
    id = d->n++;
    memset(&d->nodes[id], 0, sizeof(jnode));
    d->nodes[id].first = d->nodes[id].next = -1;
    if (*d->p == '"') {
        char *s;
        size_t len;
        s = j_string(d, &len);
        d->nodes[id].type = J_STR; d->nodes[id].str = s; d->nodes[id].len = len;
    } else if (*d->p == '{' || *d->p == '[') {
        int obj = *d->p++ == '{';
        d->nodes[id].type = obj ? J_OBJ : J_ARR;
        for (;;) {
            char *key = NULL;
            size_t key_len = 0;
            int child;
            j_ws(d);
            if (d->p < d->end && (*d->p == '}' || *d->p == ']')) { d->p++; break; }
            if (obj) {
                key = j_string(d, &key_len);
                j_ws(d);
                d->p++; /* ':' */
            }
            child = j_value(d);
            if (child < 0) return -1;
            d->nodes[child].key = key; d->nodes[child].key_len = key_len;
            if (prev < 0) d->nodes[id].first = child; else d->nodes[prev].next = child;
            prev = child;
            j_ws(d);
            if (d->p < d->end && *d->p == ',') d->p++;
        }
    } else if (*d->p == 'n') { d->p += 4; d->nodes[id].type = J_NULL; }
    else if (*d->p == 't') { d->p += 4; d->nodes[id].type = J_BOOL; d->nodes[id].num = 1; }
    else if (*d->p == 'f') { d->p += 5; d->nodes[id].type = J_BOOL; }
    else {
        char *e;
        d->nodes[id].type = J_NUM;
        d->nodes[id].num = strtod(d->p, &e);
        if (e == d->p) { d->bad = 1; return -1; }
        d->p = e;
    }
    return id;
}

static int j_get(const jdoc *d, int obj, const char *key) {
    int c;
    if (obj < 0) return -1;
    for (c = d->nodes[obj].first; c >= 0; c = d->nodes[c].next)
        if (d->nodes[c].key && strlen(key) == d->nodes[c].key_len && !memcmp(d->nodes[c].key, key, d->nodes[c].key_len)) return c;
    return -1;
}

static void j_free(jdoc *d) {
    int i;
    for (i = 0; i < d->n; i++) { free(d->nodes[i].str); free(d->nodes[i].key); }
    free(d->nodes);
}

/* ---------------------------------------------------------------------------------------------
   Vocabulary in byte-level spelling -> blob */

typedef struct vtok {
    char *text; /* raw bytes (byte-level alphabet undone) */
    size_t len;
    int attr;
    int present;
} vtok;

typedef struct vocab {
    vtok *tok;
    int n_tok, cap_tok;
    uint32_t *merges; /* [n_merges][3] */
    int n_merges, cap_merges;
    uint32_t flags;
    int32_t bos, eos, unk;
    int kind;      /* 0: BPE_BYTES, else TFM_TOKENIZER_SPM */
    float *scores; /* [n_tok] SPM only */
    int *sorted; /* ids sorted by text, for lookups while reading merges */
} vocab;

/* The GPT-2 byte-to-unicode alphabet, reversed: code point -> byte, -1 if not in it. */
static int byte_of_cp(uint32_t cp) {
    static int table[324];
    static int ready;
    if (!ready) {
        int b, n = 0;
        for (b = 0; b < 324; b++) table[b] = -1;
        for (b = 0; b < 256; b++) {
            int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
            table[printable ? b : 256 + n++] = b;
        }
        ready = 1;
    }
    return cp < 324 ? table[cp] : -1;
}

/* Undo the byte-level alphabet of s in place; returns the new length, or (size_t)-1. */
static size_t undo_byte_level(char *s, size_t n) {
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = tfm__utf8_next((const unsigned char *)s + i, n - i, &cp);
        int b = byte_of_cp(cp);
        if (b < 0) return (size_t)-1;
        s[o++] = (char)b;
        i += k;
    }
    return o;
}

static const vocab *g_sort_vocab;
static int cmp_ids(const void *a, const void *b) {
    const vtok *x = &g_sort_vocab->tok[*(const int *)a], *y = &g_sort_vocab->tok[*(const int *)b];
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->text, y->text, n);
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len ? 1 : (*(const int *)a - *(const int *)b);
}

static void vocab_set(vocab *v, int id, const char *text, size_t len) {
    if (id >= v->cap_tok) { /* grow geometrically: 50k one-by-one reallocs are slow under ASan */
        int cap = (id + 1) * 2;
        v->tok = (vtok *)realloc(v->tok, (size_t)cap * sizeof(vtok));
        memset(v->tok + v->cap_tok, 0, (size_t)(cap - v->cap_tok) * sizeof(vtok));
        v->cap_tok = cap;
    }
    if (id >= v->n_tok) v->n_tok = id + 1;
    free(v->tok[id].text);
    v->tok[id].text = (char *)malloc(len + 1);
    memcpy(v->tok[id].text, text, len);
    v->tok[id].len = len;
    v->tok[id].present = 1;
}

static void vocab_index(vocab *v) {
    int i;
    v->sorted = (int *)malloc((size_t)v->n_tok * sizeof(int));
    for (i = 0; i < v->n_tok; i++) v->sorted[i] = i;
    g_sort_vocab = v;
    qsort(v->sorted, (size_t)v->n_tok, sizeof(int), cmp_ids);
}

/* Id of the non-added token with this raw text, or -1. */
static int vocab_find(const vocab *v, const char *s, size_t n) {
    int lo = 0, hi = v->n_tok;
    while (lo < hi) {
        int mid = (lo + hi) / 2, id = v->sorted[mid];
        size_t m = v->tok[id].len < n ? v->tok[id].len : n;
        int c = memcmp(v->tok[id].text, s, m);
        if (c == 0) c = v->tok[id].len < n ? -1 : v->tok[id].len > n ? 1 : 0;
        if (c == 0) {
            while (mid > 0 && v->tok[v->sorted[mid - 1]].len == n && !memcmp(v->tok[v->sorted[mid - 1]].text, s, n)) mid--;
            return v->sorted[mid];
        }
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return -1;
}

/* One merge "a b" (byte-level spelling; a and b already split). */
static int vocab_merge(vocab *v, char *a, size_t na, char *b, size_t nb) {
    char buf[1024];
    int l, r, m;
    na = undo_byte_level(a, na);
    nb = undo_byte_level(b, nb);
    if (na == (size_t)-1 || nb == (size_t)-1 || na + nb > sizeof buf) return 0;
    memcpy(buf, a, na);
    memcpy(buf + na, b, nb);
    l = vocab_find(v, a, na); r = vocab_find(v, b, nb); m = vocab_find(v, buf, na + nb);
    if (l < 0 || r < 0 || m < 0) return 0;
    if (v->n_merges == v->cap_merges) {
        v->cap_merges = v->cap_merges * 2 + 1024;
        v->merges = (uint32_t *)realloc(v->merges, (size_t)v->cap_merges * 3 * sizeof(uint32_t));
    }
    v->merges[3 * v->n_merges] = (uint32_t)l;
    v->merges[3 * v->n_merges + 1] = (uint32_t)r;
    v->merges[3 * v->n_merges + 2] = (uint32_t)m;
    v->n_merges++;
    return 1;
}

static void vocab_free(vocab *v) {
    int i;
    for (i = 0; i < v->n_tok; i++) free(v->tok[i].text);
    free(v->tok); free(v->merges); free(v->sorted); free(v->scores);
    memset(v, 0, sizeof *v);
}

/* The blob layout of tfm.h's FILE FORMAT comment. */
static bytes_t vocab_blob(const vocab *v) {
    bytes_t b = {0, 0, 0};
    uint32_t off = 0;
    int i;
    bytes_u32(&b, v->kind ? TFM_TOKENIZER_SPM : TFM_TOKENIZER_BPE_BYTES);
    bytes_u32(&b, (uint32_t)v->n_tok);
    bytes_u32(&b, (uint32_t)v->n_merges);
    bytes_u32(&b, v->flags);
    bytes_u32(&b, v->kind ? TFM_PRETOK_NONE : TFM_PRETOK_GPT2);
    bytes_u32(&b, (uint32_t)v->bos);
    bytes_u32(&b, (uint32_t)v->eos);
    bytes_u32(&b, (uint32_t)(v->kind ? v->unk : -1));
    bytes_u32(&b, (uint32_t)-1);
    for (i = 0; i < v->n_tok; i++) off += (uint32_t)v->tok[i].len;
    bytes_u32(&b, off);
    for (i = 0; i < 6; i++) bytes_u32(&b, 0);
    for (i = 0, off = 0; i <= v->n_tok; i++) {
        bytes_u32(&b, off);
        if (i < v->n_tok) off += (uint32_t)v->tok[i].len;
    }
    for (i = 0; i < v->n_tok; i++) {
        uint32_t u = 0;
        if (v->scores) memcpy(&u, &v->scores[i], 4);
        bytes_u32(&b, u);
    }
    for (i = 0; i < v->n_tok; i++) {
        unsigned char a = (unsigned char)v->tok[i].attr;
        bytes_put(&b, &a, 1);
    }
    while (b.n % 4) bytes_put(&b, "", 1);
    for (i = 0; i < 3 * v->n_merges; i++) bytes_u32(&b, v->merges[i]);
    for (i = 0; i < v->n_tok; i++) bytes_put(&b, v->tok[i].text, v->tok[i].len);
    return b;
}

/* GPT-2: vocab.json + merges.txt. <|endoftext|> is an added special token, as in HF. */
static int load_gpt2(const char *dir, vocab *v) {
    char path[1024], *text, *line, *cursor;
    size_t n;
    jdoc d;
    int c, ok = 1;
    memset(v, 0, sizeof *v);
    memset(&d, 0, sizeof d);
    snprintf(path, sizeof path, "%s/tokenizers/gpt2/vocab.json", dir);
    if (!(text = read_file(path, &n))) return 0;
    d.p = text; d.end = text + n;
    if (j_value(&d) != 0 || d.bad) ok = 0;
    for (c = ok ? d.nodes[0].first : -1; c >= 0; c = d.nodes[c].next) {
        size_t len = undo_byte_level(d.nodes[c].key, d.nodes[c].key_len);
        if (len == (size_t)-1) { ok = 0; break; }
        vocab_set(v, (int)d.nodes[c].num, d.nodes[c].key, len);
        if (len == 13 && !memcmp(d.nodes[c].key, "<|endoftext|>", 13))
            v->tok[(int)d.nodes[c].num].attr = TFM_TOKATTR_SPECIAL | TFM_TOKATTR_ADDED;
    }
    j_free(&d);
    free(text);
    if (!ok) return 0;
    vocab_index(v);
    v->bos = v->eos = 50256;
    snprintf(path, sizeof path, "%s/tokenizers/gpt2/merges.txt", dir);
    if (!(text = read_file(path, &n))) return 0;
    for (cursor = text; (line = next_line(&cursor)) != NULL;) {
        char *sp = strchr(line, ' ');
        if (line[0] == '#' && !strncmp(line, "#version", 8)) continue;
        if (!sp || !vocab_merge(v, line, (size_t)(sp - line), sp + 1, strlen(sp + 1))) { ok = 0; break; }
    }
    free(text);
    return ok;
}

/* GPT-NeoX: tokenizer.json (model.vocab, model.merges as "a b" or ["a","b"], added_tokens). */
static int load_hf_json(const char *path, vocab *v) {
    char *text;
    size_t n;
    jdoc d;
    int model, c, ok = 1, norm;
    memset(v, 0, sizeof *v);
    memset(&d, 0, sizeof d);
    if (!(text = read_file(path, &n))) return 0;
    d.p = text; d.end = text + n;
    if (j_value(&d) != 0 || d.bad) { free(text); j_free(&d); return 0; }
    model = j_get(&d, 0, "model");
    for (c = d.nodes[j_get(&d, model, "vocab")].first; c >= 0; c = d.nodes[c].next) {
        size_t len = undo_byte_level(d.nodes[c].key, d.nodes[c].key_len);
        if (len == (size_t)-1) { ok = 0; break; }
        vocab_set(v, (int)d.nodes[c].num, d.nodes[c].key, len);
    }
    for (c = d.nodes[j_get(&d, 0, "added_tokens")].first; ok && c >= 0; c = d.nodes[c].next) {
        int id = (int)d.nodes[j_get(&d, c, "id")].num, content = j_get(&d, c, "content");
        int special = d.nodes[j_get(&d, c, "special")].num != 0;
        if (id < v->n_tok && v->tok[id].present &&
            (v->tok[id].len != d.nodes[content].len || memcmp(v->tok[id].text, d.nodes[content].str, v->tok[id].len)))
            ok = 0; /* an added token that is also in the vocabulary must spell the same */
        vocab_set(v, id, d.nodes[content].str, d.nodes[content].len);
        v->tok[id].attr = TFM_TOKATTR_ADDED | (special ? TFM_TOKATTR_SPECIAL : 0);
    }
    vocab_index(v);
    for (c = d.nodes[j_get(&d, model, "merges")].first; ok && c >= 0; c = d.nodes[c].next) {
        jnode *m = &d.nodes[c];
        if (m->type == J_STR) {
            char *sp = (char *)memchr(m->str, ' ', m->len);
            ok = sp && vocab_merge(v, m->str, (size_t)(sp - m->str), sp + 1, m->len - (size_t)(sp - m->str) - 1);
        } else {
            jnode *a = &d.nodes[m->first], *b = &d.nodes[a->next];
            ok = vocab_merge(v, a->str, a->len, b->str, b->len);
        }
    }
    norm = j_get(&d, 0, "normalizer");
    if (norm >= 0 && d.nodes[norm].type == J_OBJ) {
        int type = j_get(&d, norm, "type");
        if (type >= 0 && d.nodes[type].len == 3 && !memcmp(d.nodes[type].str, "NFC", 3)) v->flags |= TFM_TOKFLAG_NFC;
    }
    v->bos = v->eos = 0;
    j_free(&d);
    free(text);
    return ok;
}

/* llama2.c tokenizer.bin: i32 max_token_length, then per token f32 score, i32 length, bytes.
   <0xNN> tokens become byte tokens (their text is that byte); <unk>, <s>, </s> are special but
   not added (run.c never matches them in text); the dummy prefix is on. */
static int load_llama2c(const char *path, vocab *v, int n_vocab) {
    size_t n, at = 4;
    char *f = read_file(path, &n);
    int i;
    memset(v, 0, sizeof *v);
    if (!f) return 0;
    v->scores = (float *)calloc((size_t)n_vocab, sizeof(float));
    for (i = 0; i < n_vocab; i++) {
        int32_t len;
        unsigned hex;
        if (at + 8 > n) break;
        memcpy(&v->scores[i], f + at, 4);
        memcpy(&len, f + at + 4, 4);
        at += 8;
        if (len < 0 || at + (size_t)len > n) break;
        if (len == 6 && sscanf(f + at, "<0x%02X>", &hex) == 1) {
            char byte = (char)hex;
            vocab_set(v, i, &byte, 1);
            v->tok[i].attr = TFM_TOKATTR_BYTE;
        } else {
            vocab_set(v, i, f + at, (size_t)len);
        }
        at += (size_t)len;
    }
    free(f);
    if (i != n_vocab) return 0;
    v->tok[0].attr = v->tok[1].attr = v->tok[2].attr = TFM_TOKATTR_SPECIAL;
    v->kind = 1;
    v->flags = TFM_TOKFLAG_PREFIX_SPACE;
    v->unk = 0;
    v->bos = 1;
    v->eos = 2;
    vocab_index(v);
    return 1;
}

/* ---------------------------------------------------------------------------------------------
   Golden vectors: "text => id,id,..." per line. With `escaped`, the text uses \n \t \r \\ and
   \xNN escapes (tests/data/tokenizer/README.md). */

static size_t unescape(char *s, size_t n) {
    size_t i = 0, o = 0;
    while (i < n) {
        if (s[i] == '\\' && i + 1 < n) {
            char c = s[i + 1];
            i += 2;
            if (c == 'n') s[o++] = '\n';
            else if (c == 't') s[o++] = '\t';
            else if (c == 'r') s[o++] = '\r';
            else if (c == 'x' && i + 2 <= n) {
                char hex[3] = {s[i], s[i + 1], 0};
                s[o++] = (char)strtol(hex, NULL, 16);
                i += 2;
            } else s[o++] = c;
        } else {
            s[o++] = s[i++];
        }
    }
    return o;
}

static int encode(const tfm__tokenizer *t, const char *s, size_t n, int32_t *ids, size_t cap, size_t *n_ids) {
    return tfm__tokenizer_encode(t, s, n, ids, cap, n_ids) == TFM_OK;
}

/* Runs every case of a vector file; returns the number of cases (0 if the file is missing). */
static int check_vectors(const tfm__tokenizer *t, const char *path, int escaped, int *n_bad) {
    size_t n;
    char *text = read_file(path, &n), *line, *cursor = text;
    int cases = 0;
    static int32_t got[65536], want[65536];
    *n_bad = 0;
    if (!text) return 0;
    while ((line = next_line(&cursor)) != NULL) {
        char *sep = NULL, *p, *q;
        size_t len, n_got = 0, n_want = 0, i;
        for (p = strstr(line, " => "); p; p = strstr(p + 1, " => ")) sep = p; /* the last one */
        if (!sep) continue;
        len = (size_t)(sep - line);
        if (escaped) len = unescape(line, len);
        for (q = sep + 4; *q;) {
            want[n_want++] = (int32_t)strtol(q, &p, 10);
            if (p == q) break;
            q = *p == ',' ? p + 1 : p;
        }
        cases++;
        if (!encode(t, line, len, got, 65536, &n_got) || n_got != n_want ||
            memcmp(got, want, n_want * sizeof(int32_t)) != 0) {
            (*n_bad)++;
            if (*n_bad <= 5) {
                fprintf(stderr, "  mismatch (%s): \"%.*s\"\n    want", path, (int)(len > 80 ? 80 : len), line);
                for (i = 0; i < n_want && i < 24; i++) fprintf(stderr, " %d", (int)want[i]);
                fprintf(stderr, "\n    got ");
                for (i = 0; i < n_got && i < 24; i++) fprintf(stderr, " %d", (int)got[i]);
                fprintf(stderr, "\n");
            }
        }
    }
    free(text);
    return cases;
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

static void log_to_stderr(void *user, tfm_result r, const char *msg) {
    (void)user;
    if (getenv("TOK_VERBOSE")) fprintf(stderr, "  [log %d] %s\n", (int)r, msg);
}

static tfm__tokenizer *make_tokenizer(const bytes_t *blob) {
    tfm_allocator a = {0, 0, 0};
    tfm_logger lg = {log_to_stderr, 0};
    tfm__tokenizer *t = NULL;
    if (tfm__tokenizer_create(blob->p, blob->n, &a, &lg, &t) != TFM_OK) return NULL;
    return t;
}

/* ---------------------------------------------------------------------------------------------
   Unit tests on the real vocabularies */

/* Every case of a vector file decodes back to its text through the streaming decoder, each
   call emitting only complete UTF-8; returns the number of cases that did not. */
static int check_round_trip(const tfm__tokenizer *t, const char *path, int escaped, int *cases) {
    size_t n;
    char *text = read_file(path, &n), *line, *cursor = text;
    static int32_t ids[65536];
    static char out[1 << 18];
    int bad = 0;
    *cases = 0;
    if (!text) return 1;
    while ((line = next_line(&cursor)) != NULL) {
        char *sep = NULL, *p;
        size_t len, n_ids = 0, i, total = 0;
        tfm_utf8_stream st = {{0, 0, 0, 0}, 0};
        int ok = 1;
        for (p = strstr(line, " => "); p; p = strstr(p + 1, " => ")) sep = p;
        if (!sep) continue;
        len = (size_t)(sep - line);
        if (escaped) len = unescape(line, len);
        ok = encode(t, line, len, ids, 65536, &n_ids);
        for (i = 0; ok && i < n_ids; i++) {
            size_t got = 0;
            uint32_t cp;
            size_t k;
            ok = tfm__tokenizer_decode(t, &st, ids[i], out + total, sizeof out - total, &got) == TFM_OK;
            for (k = 0; ok && k < got;) { /* only whole, valid characters come out */
                k += tfm__utf8_next((unsigned char *)out + total + k, got - k, &cp);
                ok = cp != TFM__CP_INVALID;
            }
            total += got;
        }
        (*cases)++;
        if (t->flags & TFM_TOKFLAG_NFC) { /* the text comes back normalized */
            static unsigned char norm[1 << 18];
            tfm__nfc_src src;
            src.s = (const unsigned char *)line; src.n = len; src.pos = 0;
            len = tfm__nfc_fill(&src, norm, sizeof norm);
            line = (char *)norm;
        }
        if (!ok || st.n_held != 0 || total != len || memcmp(out, line, len) != 0) bad++;
    }
    free(text);
    return bad;
}

static size_t decode_all(const tfm__tokenizer *t, const int32_t *ids, size_t n_ids, char *out, size_t cap) {
    tfm_utf8_stream st = {{0, 0, 0, 0}, 0};
    size_t i, total = 0, got;
    for (i = 0; i < n_ids; i++) {
        if (tfm__tokenizer_decode(t, &st, ids[i], out + total, cap - total, &got) != TFM_OK) return (size_t)-1;
        total += got;
    }
    return total + tfm_utf8_stream_flush(&st, out + total, cap - total);
}

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

/* A counting allocator that can fail the Nth allocation. */
typedef struct counter { long allocs, frees, fail_at; size_t live; } counter;
static void *count_alloc(size_t bytes, size_t align, void *user) {
    counter *c = (counter *)user;
    (void)align; /* malloc's 16-byte alignment is all the tokenizer tables need */
    if (c->fail_at >= 0 && c->allocs == c->fail_at) { c->allocs++; return NULL; }
    c->allocs++;
    c->live += bytes;
    return malloc(bytes);
}
static void count_free(void *ptr, size_t bytes, void *user) {
    counter *c = (counter *)user;
    c->frees++;
    c->live -= bytes;
    free(ptr);
}

/* Create allocates (once), encode and decode never do; a failed allocation is a clean error. */
static void test_allocation(const bytes_t *blob) {
    counter c = {0, 0, -1, 0};
    tfm_allocator a;
    tfm__tokenizer *t = NULL;
    static int32_t ids[4096];
    size_t n_ids, got, i;
    long after_create;
    char out[64];
    tfm_utf8_stream st = {{0, 0, 0, 0}, 0};
    const char *text = "Hello  world<|endoftext|> caf\x65\xCC\x81 \xF0\x9F\x98\x80 \xFF 12345 it's";
    a.alloc = count_alloc; a.free = count_free; a.user = &c;
    CHECK(tfm__tokenizer_create(blob->p, blob->n, &a, NULL, &t) == TFM_OK && t);
    after_create = c.allocs;
    CHECK(after_create == 1);
    for (i = 0; t && i < 50; i++) {
        CHECK(tfm__tokenizer_encode(t, text, strlen(text), ids, 4096, &n_ids) == TFM_OK);
        CHECK(tfm__tokenizer_decode(t, &st, ids[i % n_ids], out, sizeof out, &got) == TFM_OK);
    }
    CHECK_MSG(c.allocs == after_create, "encode/decode allocated %ld times", c.allocs - after_create);
    tfm__tokenizer_destroy(t, &a);
    CHECK(c.frees == c.allocs && c.live == 0);
    c.allocs = c.frees = 0; c.fail_at = 0;
    t = (tfm__tokenizer *)&c;
    CHECK(tfm__tokenizer_create(blob->p, blob->n, &a, NULL, &t) == TFM_ERR_OUT_OF_MEMORY && t == NULL);
    CHECK(c.live == 0);
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
    CHECK(tfm_model_token_bytes(model, 15496, &bytes, &n_bytes) == TFM_OK && n_bytes == 5 && !memcmp(bytes, "Hello", 5));
    CHECK(tfm_model_token_bytes(model, 50257, &bytes, &n_bytes) == TFM_ERR_INVALID_ARG && bytes == NULL);
    CHECK(tfm_model_tokenize(model, "na\xC3\xAFve \xE2\x9C\x93", 10, ids, 64, &n_ids) == TFM_OK);
    for (i = 0; i < n_ids; i++) {
        CHECK(tfm_model_decode(model, &st, ids[i], out + total, sizeof out - total, &got) == TFM_OK);
        total += got;
    }
    total += tfm_utf8_stream_flush(&st, out + total, sizeof out - total);
    CHECK(total == 10 && !memcmp(out, "na\xC3\xAFve \xE2\x9C\x93", 10));
    CHECK(tfm_model_decode(model, NULL, 0, out, sizeof out, &got) == TFM_ERR_INVALID_ARG);
    tfm_model_close(model);
    /* the same file without its tokenizer: the tokenizer calls say UNSUPPORTED */
    put32(file, 96, 0);
    put32(file, 104, 0);
    d.data_bytes = 256;
    model = NULL;
    CHECK(tfm_model_open(&d, &model) == TFM_OK && model);
    if (model) {
        CHECK(tfm_model_tokenize(model, "a", 1, ids, 64, &n_ids) == TFM_ERR_UNSUPPORTED && n_ids == 0);
        CHECK(tfm_model_token_bytes(model, 0, &bytes, &n_bytes) == TFM_ERR_UNSUPPORTED);
        CHECK(tfm_model_decode(model, &st, 0, out, sizeof out, &got) == TFM_ERR_UNSUPPORTED);
        tfm_model_close(model);
    }
    free(file);
}

/* The non-byte token with this text (SPM lookups skip <0xNN> tokens), or -1. */
static int spm_find(const vocab *v, const char *s, size_t n) {
    int id = vocab_find(v, s, n), k;
    if (id < 0 || !(v->tok[id].attr & TFM_TOKATTR_BYTE)) return id;
    for (k = 0; k < v->n_tok; k++)
        if (!(v->tok[k].attr & TFM_TOKATTR_BYTE) && v->tok[k].len == n && !memcmp(v->tok[k].text, s, n)) return k;
    return -1;
}

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

/* ---------------------------------------------------------------------------------------------
   Synthetic tokenizer.json files in the shapes of real checkpoints (tests/gen/make_synth_tokenizers.js),
   converted by build/tfm-convert --vocab-only and checked against Hugging Face's own ids. */

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

/* "c3a9..." to bytes; returns the count. */
static size_t hex_to_bytes(const char *q, char *out) {
    size_t n = 0;
    for (; q[0] && q[1]; q += 2) {
        char hex[3] = {q[0], q[1], 0};
        out[n++] = (char)strtol(hex, NULL, 16);
    }
    return n;
}

static int has_added_text(const char *s, size_t n) {
    static const char *added[] = {"<s>", "</s>", "<unk>"};
    size_t i, k;
    for (i = 0; i < n; i++)
        for (k = 0; k < 3; k++)
            if (n - i >= strlen(added[k]) && !memcmp(s + i, added[k], strlen(added[k]))) return 1;
    return 0;
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

/* The same real SentencePiece vocabulary through both tfm.h paths: tok512.bin merged by score
   (llama2.c) and its tokenizer.json (write_tok512_json) converted by tfm-convert and merged by
   rank, against Hugging Face's ids for that tokenizer.json (tok512_hf.txt). */
static void test_tok512_json(const char *shared) {
    char path[1024], json[256], out[256];
    vocab v;
    bytes_t blob;
    tfm__tokenizer *by_score;
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
    blob = vocab_blob(&v);
    by_score = make_tokenizer(&blob);
    CHECK(by_score != NULL);
    if (by_score) { /* run.c's rule on the same vocabulary; texts without <s> </s> <unk> */
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
        printf("SKIP synthetic tokenizer.json tests: build/tfm-convert not built\n");
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
    test_llama3_pretok("tests/data/tokenizer/llama3_pretok_hf.txt", 3, 171);
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
    test_llama3_pretok("tests/data/tokenizer/qwen2_pretok_hf.txt", 1, 181);
    test_synth_convert_options();
    test_tok512_json(shared);
    snprintf(golden, sizeof golden, "rm -rf %s", g_tok_dir);
    CHECK(system(golden) == 0);
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
    test_synth_tokenizers(shared);
    tfm__tokenizer_destroy(gpt2, &a);
    tfm__tokenizer_destroy(neox, &a);
    free(blob2.p);
    free(blobx.p);
    vocab_free(&v2);
    vocab_free(&vx);
    return check_summary("test_tokenizer");
}
