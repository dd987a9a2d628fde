/* fuzz_json.c - libFuzzer harness for tfm-convert's JSON reader (tools/json.h), which reads
   config.json, tokenizer.json, tokenizer_config.json and the safetensors headers.

   The input is a document. json_parse must accept it or fail with a message, never read past
   it; an accepted document must be a consistent tree: every node index in range, child counts
   that match the sibling chains, object keys and strings inside the string buffer and
   NUL-terminated there (a string may hold NUL bytes: \u0000, so its length counts, never
   strlen). Seeds: tests/fuzz/json (make fuzz adds the repository's own JSON files).
     clang -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz_json.c -o build/fuzz_json */
#include "tools/json.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Walks every node once (children and siblings by index); aborts on an inconsistent tree. */
static void check_tree(const json_doc *d) {
    uint32_t i;
    for (i = 0; i < d->n_nodes; i++) {
        const json_node *n = &d->nodes[i];
        uint32_t c, count = 0;
        if (n->type > JSON_OBJECT) abort();
        if (n->type == JSON_STRING &&
            ((size_t)n->str + n->str_bytes >= d->strings_bytes + 1 || d->strings[n->str + n->str_bytes] != '\0'))
            abort();
        if (n->type != JSON_ARRAY && n->type != JSON_OBJECT) continue;
        for (c = n->first_child; c != JSON_NONE; c = d->nodes[c].next) {
            const json_node *k = &d->nodes[c];
            if (c >= d->n_nodes || c <= i || ++count > n->n_children) abort();
            if (n->type == JSON_OBJECT &&
                ((size_t)k->key + k->key_bytes >= d->strings_bytes + 1 || d->strings[k->key + k->key_bytes] != '\0'))
                abort();
        }
        if (count != n->n_children) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_doc doc;
    char err[256];
    if (json_parse((const char *)data, size, &doc, err, sizeof err)) {
        if (doc.n_nodes == 0) abort();
        check_tree(&doc);
        json_get(&doc, json_at(&doc, 0), "model_type"); /* a lookup on whatever the root is */
    } else if (err[0] == '\0') {
        abort(); /* a failure always says why */
    }
    json_free(&doc);
    return 0;
}
