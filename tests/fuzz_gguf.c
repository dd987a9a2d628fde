/* fuzz_gguf.c - libFuzzer harness for tfm-convert's GGUF reader (tools/gguf.h).

   The input is a whole GGUF file. gguf_parse must accept it or fail with a message, never
   read past it; on an accepted file every tensor's bytes lie inside it, and the metadata
   accessors the importer uses (integers, floats, strings, string arrays) stay inside it too:
   each tensor's first and last block is decoded and every string array is walked. Seeds:
   tests/data/gguf and the model GGUF files beside their Hugging Face twins (make fuzz copies
   them); the whole importer on GGUF input is tests/fuzz_convert.c (FUZZ_GGUF).
     clang -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz_gguf.c -o build/fuzz_gguf */
#include "tools/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file f;
    char err[256];
    uint64_t i, k;
    float out[256];
    if (!gguf_parse(data, size, &f, err, sizeof err)) {
        if (err[0] == '\0') abort(); /* a failure always says why */
        gguf_free(&f);
        return 0;
    }
    for (i = 0; i < f.n_tensors; i++) {
        const gguf_tensor *t = &f.tensors[i];
        size_t bytes = gguf_block_bytes(t->type), n_blocks = bytes ? (size_t)(t->n_bytes / bytes) : 0;
        if (t->data < data || t->data + t->n_bytes > data + size) abort();
        if (n_blocks && t->type != GGUF_TYPE_F32 && t->type != GGUF_TYPE_F16 && t->type != GGUF_TYPE_BF16) {
            gguf_dequantize_block(t->type, t->data, out);
            gguf_dequantize_block(t->type, t->data + (n_blocks - 1) * bytes, out);
        }
    }
    for (k = 0; k < f.n_kv; k++) {
        const gguf_kv *kv = &f.kv[k];
        char key[128];
        int64_t iv;
        double dv;
        gguf_string s;
        gguf_string_iter it;
        uint64_t n, j;
        if (kv->key.n_bytes >= sizeof key || memchr(kv->key.bytes, 0, (size_t)kv->key.n_bytes)) continue;
        memcpy(key, kv->key.bytes, (size_t)kv->key.n_bytes);
        key[kv->key.n_bytes] = '\0';
        gguf_get_int(&f, key, &iv);
        gguf_get_float(&f, key, &dv);
        if (gguf_get_string(&f, key, &s) && (s.bytes < (const char *)data || s.bytes + s.n_bytes > (const char *)data + size))
            abort();
        if (gguf_string_array(&f, key, &it, &n))
            for (j = 0; j < n; j++) {
                s = gguf_string_next(&it);
                if (s.bytes < (const char *)data || s.bytes + s.n_bytes > (const char *)data + size) abort();
            }
    }
    gguf_free(&f);
    return 0;
}
