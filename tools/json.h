/* json.h - a small strict JSON reader for tfm-convert (static functions: include it where needed).

   Parses RFC 8259 JSON into a flat array of nodes (no recursion, explicit stack with a depth
   limit), decoding strings (all escapes, \uXXXX surrogate pairs -> UTF-8) into one buffer.
   Hostile input is an error, never a crash: raw bytes are bounds-checked, string UTF-8 is
   validated (no overlongs, no surrogates), lone surrogate escapes and control characters are
   rejected, numbers follow the JSON grammar exactly, and trailing text after the value fails.

   Nodes refer to each other by index (the array grows while parsing); JSON_NONE is "no node".
   Object members carry their key; children keep document order (first_child -> next). */
#ifndef TFMC_JSON_H
#define TFMC_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#if defined(__GNUC__) || defined(__clang__)
#define JSON_FN static __attribute__((unused)) /* units that use only a few stay warning-free */
#else
#define JSON_FN static
#endif

#define JSON_NONE ((uint32_t)0xffffffffu)
#define JSON_MAX_DEPTH 64        /* deeper nesting is rejected (hostile input) */
#define JSON_MAX_NUMBER_CHARS 63 /* longer number literals are rejected */

typedef enum json_type {
    JSON_NULL = 0, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT
} json_type;

typedef struct json_node {
    uint32_t type;        /* json_type */
    uint32_t next;        /* next sibling, JSON_NONE at the end */
    uint32_t first_child; /* arrays and objects */
    uint32_t n_children;
    uint32_t key;         /* object members: offset of the key in json_doc.strings */
    uint32_t key_bytes;
    uint32_t str;         /* strings: offset in json_doc.strings (NUL-terminated there too) */
    uint32_t str_bytes;
    int is_uint;          /* number written as a plain non-negative integer that fits u64 */
    uint64_t u;           /* its value when is_uint */
    double num;           /* every number */
} json_node;

typedef struct json_doc {
    json_node *nodes;     /* nodes[0] is the root */
    uint32_t n_nodes, cap_nodes;
    char *strings;        /* decoded keys and strings */
    size_t strings_bytes;
} json_doc;

JSON_FN void json_free(json_doc *d) {
    free(d->nodes);
    free(d->strings);
    memset(d, 0, sizeof *d);
}

typedef struct json_parser {
    const unsigned char *src;
    size_t n, pos;
    json_doc *doc;
    char *err;
    size_t err_bytes;
} json_parser;

JSON_FN int json_fail(json_parser *p, const char *what) {
    snprintf(p->err, p->err_bytes, "JSON error at byte %lu: %s", (unsigned long)p->pos, what);
    return 0;
}

JSON_FN void json_skip_ws(json_parser *p) {
    while (p->pos < p->n) {
        unsigned char c = p->src[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

JSON_FN uint32_t json_new_node(json_parser *p) {
    json_doc *d = p->doc;
    json_node *n;
    if (d->n_nodes == d->cap_nodes) {
        uint32_t cap = d->cap_nodes ? d->cap_nodes * 2u : 256u;
        json_node *grown;
        if (d->cap_nodes >= 0x40000000u) return JSON_NONE;
        grown = (json_node *)realloc(d->nodes, (size_t)cap * sizeof *grown);
        if (!grown) return JSON_NONE;
        d->nodes = grown;
        d->cap_nodes = cap;
    }
    n = &d->nodes[d->n_nodes];
    memset(n, 0, sizeof *n);
    n->next = JSON_NONE;
    n->first_child = JSON_NONE;
    return d->n_nodes++;
}

JSON_FN void json_put_utf8(char *out, size_t *o, uint32_t cp) {
    if (cp < 0x80) {
        out[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*o)++] = (char)(0xc0 | (cp >> 6));
        out[(*o)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out[(*o)++] = (char)(0xe0 | (cp >> 12));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*o)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[(*o)++] = (char)(0xf0 | (cp >> 18));
        out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*o)++] = (char)(0x80 | (cp & 0x3f));
    }
}

/* Length of the valid UTF-8 sequence at s[0..avail), or 0 if invalid (overlong, surrogate,
   above U+10FFFF, truncated). */
JSON_FN size_t json_utf8_len(const unsigned char *s, size_t avail) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) return avail >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        if (avail < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80) return 0;
        if (c == 0xe0 && s[1] < 0xa0) return 0; /* overlong */
        if (c == 0xed && s[1] >= 0xa0) return 0; /* surrogate */
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (avail < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
            return 0;
        if (c == 0xf0 && s[1] < 0x90) return 0; /* overlong */
        if (c == 0xf4 && s[1] >= 0x90) return 0; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

JSON_FN int json_hex4(json_parser *p, uint32_t *out) {
    uint32_t v = 0;
    int i;
    if (p->n - p->pos < 4) return json_fail(p, "truncated \\u escape");
    for (i = 0; i < 4; i++) {
        unsigned char c = p->src[p->pos + (size_t)i];
        uint32_t d;
        if (c >= '0' && c <= '9') d = (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') d = (uint32_t)(c - 'A' + 10);
        else return json_fail(p, "bad hex digit in \\u escape");
        v = v * 16u + d;
    }
    p->pos += 4;
    *out = v;
    return 1;
}

/* Decodes the string at p->pos (which is at the opening quote) into doc->strings. */
JSON_FN int json_string(json_parser *p, uint32_t *off, uint32_t *bytes) {
    json_doc *d = p->doc;
    size_t o = d->strings_bytes, start = o;
    p->pos++; /* opening quote */
    for (;;) {
        unsigned char c;
        if (p->pos >= p->n) return json_fail(p, "unterminated string");
        c = p->src[p->pos];
        if (c == '"') { p->pos++; break; }
        if (c < 0x20) return json_fail(p, "control character in string");
        if (c < 0x80 && c != '\\') { /* the common case */
            d->strings[o++] = (char)c;
            p->pos++;
            continue;
        }
        if (c != '\\') {
            size_t k = json_utf8_len(p->src + p->pos, p->n - p->pos);
            if (k == 0) return json_fail(p, "invalid UTF-8 in string");
            memcpy(d->strings + o, p->src + p->pos, k);
            o += k;
            p->pos += k;
            continue;
        }
        if (++p->pos >= p->n) return json_fail(p, "unterminated escape");
        c = p->src[p->pos++];
        switch (c) {
        case '"': d->strings[o++] = '"'; break;
        case '\\': d->strings[o++] = '\\'; break;
        case '/': d->strings[o++] = '/'; break;
        case 'b': d->strings[o++] = '\b'; break;
        case 'f': d->strings[o++] = '\f'; break;
        case 'n': d->strings[o++] = '\n'; break;
        case 'r': d->strings[o++] = '\r'; break;
        case 't': d->strings[o++] = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (!json_hex4(p, &cp)) return 0;
            if (cp >= 0xdc00 && cp <= 0xdfff) return json_fail(p, "lone low surrogate in \\u escape");
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (p->n - p->pos < 2 || p->src[p->pos] != '\\' || p->src[p->pos + 1] != 'u')
                    return json_fail(p, "high surrogate without a low surrogate");
                p->pos += 2;
                if (!json_hex4(p, &lo)) return 0;
                if (lo < 0xdc00 || lo > 0xdfff) return json_fail(p, "bad low surrogate in \\u escape");
                cp = 0x10000u + ((cp - 0xd800u) << 10) + (lo - 0xdc00u);
            }
            json_put_utf8(d->strings, &o, cp);
            break;
        }
        default: return json_fail(p, "bad escape in string");
        }
    }
    if (o - start > 0xffffffffu || start > 0xffffffffu) return json_fail(p, "string too long");
    d->strings[o++] = '\0';
    *off = (uint32_t)start;
    *bytes = (uint32_t)(o - start - 1);
    d->strings_bytes = o;
    return 1;
}

JSON_FN int json_number(json_parser *p, json_node *nd) {
    size_t start = p->pos, k;
    char buf[JSON_MAX_NUMBER_CHARS + 1];
    int plain = 1;
    const unsigned char *s = p->src;
    if (p->pos < p->n && s[p->pos] == '-') { p->pos++; plain = 0; }
    if (p->pos >= p->n) return json_fail(p, "truncated number");
    if (s[p->pos] == '0') {
        p->pos++;
    } else if (s[p->pos] >= '1' && s[p->pos] <= '9') {
        while (p->pos < p->n && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
    } else {
        return json_fail(p, "bad number");
    }
    if (p->pos < p->n && s[p->pos] == '.') {
        plain = 0;
        p->pos++;
        if (p->pos >= p->n || s[p->pos] < '0' || s[p->pos] > '9') return json_fail(p, "bad fraction");
        while (p->pos < p->n && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
    }
    if (p->pos < p->n && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
        plain = 0;
        p->pos++;
        if (p->pos < p->n && (s[p->pos] == '+' || s[p->pos] == '-')) p->pos++;
        if (p->pos >= p->n || s[p->pos] < '0' || s[p->pos] > '9') return json_fail(p, "bad exponent");
        while (p->pos < p->n && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
    }
    if (p->pos - start > JSON_MAX_NUMBER_CHARS) return json_fail(p, "number too long");
    memcpy(buf, s + start, p->pos - start);
    buf[p->pos - start] = '\0';
    nd->num = strtod(buf, NULL);
    if (plain) {
        uint64_t u = 0;
        nd->is_uint = 1;
        for (k = start; k < p->pos; k++) {
            uint64_t dgt = (uint64_t)(s[k] - '0');
            if (u > (UINT64_MAX - dgt) / 10u) { nd->is_uint = 0; break; }
            u = u * 10u + dgt;
        }
        nd->u = u;
    }
    nd->type = JSON_NUMBER;
    return 1;
}

JSON_FN int json_literal(json_parser *p, const char *word, json_type type, json_node *nd) {
    size_t len = strlen(word);
    if (p->n - p->pos < len || memcmp(p->src + p->pos, word, len) != 0)
        return json_fail(p, "unexpected character");
    p->pos += len;
    nd->type = (uint32_t)type;
    return 1;
}

/* An object member key followed by ':' */
JSON_FN int json_key(json_parser *p, uint32_t *off, uint32_t *bytes) {
    json_skip_ws(p);
    if (p->pos >= p->n || p->src[p->pos] != '"') return json_fail(p, "expected a string key");
    if (!json_string(p, off, bytes)) return 0;
    json_skip_ws(p);
    if (p->pos >= p->n || p->src[p->pos] != ':') return json_fail(p, "expected ':'");
    p->pos++;
    return 1;
}

/* Parses src[0..n) into *doc. Returns 1, or 0 with a message in err. */
JSON_FN int json_parse(const char *src, size_t n, json_doc *doc, char *err, size_t err_bytes) {
    json_parser p;
    uint32_t stack[JSON_MAX_DEPTH], last[JSON_MAX_DEPTH];
    int depth = 0;
    uint32_t key = 0, key_bytes = 0;
    memset(doc, 0, sizeof *doc);
    p.src = (const unsigned char *)src;
    p.n = n;
    p.pos = 0;
    p.doc = doc;
    p.err = err;
    p.err_bytes = err_bytes;
    if (n > 0xfffffff0u) return json_fail(&p, "document larger than 4 GB");
    doc->strings = (char *)malloc(n + 1); /* decoded text never outgrows its source */
    if (!doc->strings) return json_fail(&p, "out of memory");
    for (;;) {
        uint32_t idx;
        json_node *nd;
        unsigned char c;
        json_skip_ws(&p);
        if (p.pos >= p.n) { json_fail(&p, "unexpected end of input"); goto fail; }
        idx = json_new_node(&p);
        if (idx == JSON_NONE) { json_fail(&p, "out of memory"); goto fail; }
        nd = &doc->nodes[idx];
        if (depth > 0) { /* link into the open container */
            json_node *parent = &doc->nodes[stack[depth - 1]];
            if (parent->type == JSON_OBJECT) { nd->key = key; nd->key_bytes = key_bytes; }
            if (last[depth - 1] == JSON_NONE) parent->first_child = idx;
            else doc->nodes[last[depth - 1]].next = idx;
            last[depth - 1] = idx;
            parent->n_children++;
        }
        c = p.src[p.pos];
        if (c == '{' || c == '[') {
            if (depth == JSON_MAX_DEPTH) { json_fail(&p, "nesting too deep"); goto fail; }
            nd->type = c == '{' ? JSON_OBJECT : JSON_ARRAY;
            p.pos++;
            stack[depth] = idx;
            last[depth] = JSON_NONE;
            depth++;
            json_skip_ws(&p);
            if (p.pos < p.n && p.src[p.pos] == (c == '{' ? '}' : ']')) {
                p.pos++;
                depth--;
            } else {
                if (c == '{' && !json_key(&p, &key, &key_bytes)) goto fail;
                continue;
            }
        } else if (c == '"') {
            uint32_t off, bytes;
            if (!json_string(&p, &off, &bytes)) goto fail;
            nd = &doc->nodes[idx];
            nd->type = JSON_STRING;
            nd->str = off;
            nd->str_bytes = bytes;
        } else if (c == 't') {
            if (!json_literal(&p, "true", JSON_TRUE, nd)) goto fail;
        } else if (c == 'f') {
            if (!json_literal(&p, "false", JSON_FALSE, nd)) goto fail;
        } else if (c == 'n') {
            if (!json_literal(&p, "null", JSON_NULL, nd)) goto fail;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            if (!json_number(&p, nd)) goto fail;
        } else {
            json_fail(&p, "unexpected character");
            goto fail;
        }
        /* after a complete value: close containers or move to the next member */
        for (;;) {
            int is_obj;
            if (depth == 0) {
                json_skip_ws(&p);
                if (p.pos != p.n) { json_fail(&p, "text after the JSON value"); goto fail; }
                return 1;
            }
            is_obj = doc->nodes[stack[depth - 1]].type == JSON_OBJECT;
            json_skip_ws(&p);
            if (p.pos >= p.n) { json_fail(&p, "unexpected end of input"); goto fail; }
            c = p.src[p.pos];
            if (c == ',') {
                p.pos++;
                if (is_obj && !json_key(&p, &key, &key_bytes)) goto fail;
                break;
            }
            if (c != (is_obj ? '}' : ']')) {
                json_fail(&p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
                goto fail;
            }
            p.pos++;
            depth--;
        }
    }
fail:
    json_free(doc);
    return 0;
}

/* --- access --- */

JSON_FN const json_node *json_at(const json_doc *d, uint32_t idx) {
    return idx == JSON_NONE ? NULL : &d->nodes[idx];
}

JSON_FN const char *json_str(const json_doc *d, const json_node *n) { return d->strings + n->str; }
JSON_FN const char *json_key_str(const json_doc *d, const json_node *n) { return d->strings + n->key; }
/* n is the string want, compared with its length: "a\u0000b" is not "a" (strcmp would say so). */
JSON_FN int json_str_is(const json_doc *d, const json_node *n, const char *want) {
    size_t len = strlen(want);
    return n->type == JSON_STRING && n->str_bytes == len && memcmp(d->strings + n->str, want, len) == 0;
}

/* Member `key` of an object node, or NULL (also NULL when obj is not an object). The last
   duplicate wins, as in most JSON readers. */
JSON_FN const json_node *json_get(const json_doc *d, const json_node *obj, const char *key) {
    const json_node *found = NULL;
    size_t len = strlen(key);
    uint32_t i;
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    for (i = obj->first_child; i != JSON_NONE; i = d->nodes[i].next) {
        const json_node *m = &d->nodes[i];
        if (m->key_bytes == len && memcmp(d->strings + m->key, key, len) == 0) found = m;
    }
    return found;
}

JSON_FN const json_node *json_first(const json_doc *d, const json_node *n) {
    return n ? json_at(d, n->first_child) : NULL;
}

JSON_FN const json_node *json_next(const json_doc *d, const json_node *n) {
    return json_at(d, n->next);
}

#endif
