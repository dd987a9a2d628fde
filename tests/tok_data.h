/* tok_data.h - what the tokenizer tests share (include it after tfm.h's implementation: it uses
   tfm.h's internals). Two parts:
   - golden files: "text => id,id,..." vectors (tests/data/tokenizer/README.md) and round trips
     through the streaming decoder;
   - the tests' own tokenizer blob builder: a tiny JSON reader, enough for these files, and
     loaders of GPT-2's vocab.json + merges.txt, a byte-level tokenizer.json and llama2.c's
     tokenizer.bin that undo the byte-level alphabet and write the TOKENIZER BLOB layout of
     tfm.h's top comment. It is independent of tools/tfm-convert.c on purpose, so that
     tests/test_tokenizer.c checks the library's tokenizer without the converter. */
#ifndef TOK_DATA_H
#define TOK_DATA_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define TOK_FN static __attribute__((unused)) /* each test uses a part */
#else
#define TOK_FN static
#endif

/* ---------------------------------------------------------------------------------------------
   Files and lines */

TOK_FN char *read_file(const char *path, size_t *n) {
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

/* The next line of a NUL-terminated buffer (cut in place), or NULL at the end. */
TOK_FN char *next_line(char **cursor) {
    char *line = *cursor, *nl;
    if (!line || !*line) return NULL;
    nl = strchr(line, '\n');
    if (nl) { *nl = '\0'; *cursor = nl + 1; } else *cursor = line + strlen(line);
    return line;
}

/* ---------------------------------------------------------------------------------------------
   The blob builder: bytes, a tiny JSON reader, vocabularies -> blob */

typedef struct bytes_t {
    unsigned char *p;
    size_t n, cap;
} bytes_t;

TOK_FN void bytes_put(bytes_t *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = (unsigned char *)realloc(b->p, b->cap);
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}

TOK_FN void bytes_u32(bytes_t *b, uint32_t v) {
    unsigned char le[4];
    le[0] = (unsigned char)v; le[1] = (unsigned char)(v >> 8);
    le[2] = (unsigned char)(v >> 16); le[3] = (unsigned char)(v >> 24);
    bytes_put(b, le, 4);
}

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

TOK_FN void j_ws(jdoc *d) {
    while (d->p < d->end && (*d->p == ' ' || *d->p == '\n' || *d->p == '\r' || *d->p == '\t')) d->p++;
}

TOK_FN void put_utf8(char *out, size_t *n, uint32_t cp) {
    unsigned char tmp[4];
    size_t k = tfm__utf8_put(cp, tmp);
    memcpy(out + *n, tmp, k);
    *n += k;
}

TOK_FN unsigned j_hex4(jdoc *d) {
    unsigned v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        char c = d->p < d->end ? *d->p++ : 0;
        v = v * 16 + (unsigned)(c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : (d->bad = 1, 0));
    }
    return v;
}

TOK_FN char *j_string(jdoc *d, size_t *len) {
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

TOK_FN int j_value(jdoc *d) {
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

TOK_FN int j_get(const jdoc *d, int obj, const char *key) {
    int c;
    if (obj < 0) return -1;
    for (c = d->nodes[obj].first; c >= 0; c = d->nodes[c].next)
        if (d->nodes[c].key && strlen(key) == d->nodes[c].key_len && !memcmp(d->nodes[c].key, key, d->nodes[c].key_len)) return c;
    return -1;
}

TOK_FN void j_free(jdoc *d) {
    int i;
    for (i = 0; i < d->n; i++) { free(d->nodes[i].str); free(d->nodes[i].key); }
    free(d->nodes);
}

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
TOK_FN int byte_of_cp(uint32_t cp) {
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
TOK_FN size_t undo_byte_level(char *s, size_t n) {
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
TOK_FN int cmp_ids(const void *a, const void *b) {
    const vtok *x = &g_sort_vocab->tok[*(const int *)a], *y = &g_sort_vocab->tok[*(const int *)b];
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->text, y->text, n);
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len ? 1 : (*(const int *)a - *(const int *)b);
}

TOK_FN void vocab_set(vocab *v, int id, const char *text, size_t len) {
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

TOK_FN void vocab_index(vocab *v) {
    int i;
    v->sorted = (int *)malloc((size_t)v->n_tok * sizeof(int));
    for (i = 0; i < v->n_tok; i++) v->sorted[i] = i;
    g_sort_vocab = v;
    qsort(v->sorted, (size_t)v->n_tok, sizeof(int), cmp_ids);
}

/* Id of the non-added token with this raw text, or -1. */
TOK_FN int vocab_find(const vocab *v, const char *s, size_t n) {
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
TOK_FN int vocab_merge(vocab *v, char *a, size_t na, char *b, size_t nb) {
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

TOK_FN void vocab_free(vocab *v) {
    int i;
    for (i = 0; i < v->n_tok; i++) free(v->tok[i].text);
    free(v->tok); free(v->merges); free(v->sorted); free(v->scores);
    memset(v, 0, sizeof *v);
}

/* The blob layout of tfm.h's FILE FORMAT comment. */
TOK_FN bytes_t vocab_blob(const vocab *v) {
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
TOK_FN int load_gpt2(const char *dir, vocab *v) {
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
TOK_FN int load_hf_json(const char *path, vocab *v) {
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
TOK_FN int load_llama2c(const char *path, vocab *v, int n_vocab) {
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

/* The non-byte token with this text (SPM lookups skip <0xNN> tokens), or -1. */
TOK_FN int spm_find(const vocab *v, const char *s, size_t n) {
    int id = vocab_find(v, s, n), k;
    if (id < 0 || !(v->tok[id].attr & TFM_TOKATTR_BYTE)) return id;
    for (k = 0; k < v->n_tok; k++)
        if (!(v->tok[k].attr & TFM_TOKATTR_BYTE) && v->tok[k].len == n && !memcmp(v->tok[k].text, s, n)) return k;
    return -1;
}

TOK_FN void log_to_stderr(void *user, tfm_result r, const char *msg) {
    (void)user;
    if (getenv("TOK_VERBOSE")) fprintf(stderr, "  [log %d] %s\n", (int)r, msg);
}

TOK_FN tfm__tokenizer *make_tokenizer(const bytes_t *blob) {
    tfm_allocator a = {0, 0, 0};
    tfm_logger lg = {log_to_stderr, 0};
    tfm__tokenizer *t = NULL;
    if (tfm__tokenizer_create(blob->p, blob->n, &a, &lg, &t) != TFM_OK) return NULL;
    return t;
}

/* ---------------------------------------------------------------------------------------------
   Golden vectors: "text => id,id,..." per line. With `escaped`, the text uses \n \t \r \\ and
   \xNN escapes (tests/data/tokenizer/README.md). */

TOK_FN size_t unescape(char *s, size_t n) {
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

TOK_FN int encode(const tfm__tokenizer *t, const char *s, size_t n, int32_t *ids, size_t cap, size_t *n_ids) {
    return tfm__tokenizer_encode(t, s, n, ids, cap, n_ids) == TFM_OK;
}

/* Runs every case of a vector file; returns the number of cases (0 if the file is missing). */
TOK_FN int check_vectors(const tfm__tokenizer *t, const char *path, int escaped, int *n_bad) {
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

/* Every case of a vector file decodes back to its text through the streaming decoder, each
   call emitting only complete UTF-8; returns the number of cases that did not. */
TOK_FN int check_round_trip(const tfm__tokenizer *t, const char *path, int escaped, int *cases) {
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

TOK_FN size_t decode_all(const tfm__tokenizer *t, const int32_t *ids, size_t n_ids, char *out, size_t cap) {
    tfm_utf8_stream st = {{0, 0, 0, 0}, 0};
    size_t i, total = 0, got;
    for (i = 0; i < n_ids; i++) {
        if (tfm__tokenizer_decode(t, &st, ids[i], out + total, cap - total, &got) != TFM_OK) return (size_t)-1;
        total += got;
    }
    return total + tfm_utf8_stream_flush(&st, out + total, cap - total);
}

/* "c3a9..." to bytes; returns the count. */
TOK_FN size_t hex_to_bytes(const char *q, char *out) {
    size_t n = 0;
    for (; q[0] && q[1]; q += 2) {
        char hex[3] = {q[0], q[1], 0};
        out[n++] = (char)strtol(hex, NULL, 16);
    }
    return n;
}

TOK_FN int has_added_text(const char *s, size_t n) {
    static const char *added[] = {"<s>", "</s>", "<unk>"};
    size_t i, k;
    for (i = 0; i < n; i++)
        for (k = 0; k < 3; k++)
            if (n - i >= strlen(added[k]) && !memcmp(s + i, added[k], strlen(added[k]))) return 1;
    return 0;
}
#endif
