/* fuzz_load.c - libFuzzer harness for the .tfm reader (>>io, >>format, >>model, tokenizer blob).

   The input is a whole .tfm file, used in place as tfm_model_desc.data. Whatever the bytes, open
   must return a result code and never read out of bounds; when a file does open, the harness
   also creates a session, evaluates two tokens and tokenizes a short text, so a file that passes
   validation but would crash the forward pass is found too. Seed it with real files:
     make fuzz                      (builds with clang, seeds from the .tfm files of build/models, runs 60 s)
     build/fuzz_load -max_total_time=600 build/fuzz_load_corpus */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <stdlib.h>
#include <string.h>

/* Largest model the harness will evaluate (files can declare huge sessions). */
#define FUZZ_MAX_SESSION_BYTES ((size_t)64 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tfm_model_desc md;
    tfm_session_desc sd;
    tfm_model *model = NULL;
    tfm_session *s = NULL;
    tfm_config c;
    int32_t ids[8] = {0, 1};
    size_t n_ids = 0;
    void *copy = malloc(size ? size : 1); /* malloc's alignment, as a host's buffer would have */
    if (!copy) return 0;
    memcpy(copy, data, size);
    memset(&md, 0, sizeof md);
    md.data = copy;
    md.data_bytes = size;
    if (tfm_model_open(&md, &model) == TFM_OK) {
        c = tfm_model_config(model);
        tfm_model_tokenize(model, "Hello, world 12", 15, ids, 8, &n_ids);
        memset(&sd, 0, sizeof sd);
        sd.n_ctx = c.n_ctx < 4 ? c.n_ctx : 4;
        if (c.n_layers > 0 &&
            (size_t)c.n_vocab * (size_t)c.d_model + (size_t)c.n_layers * (size_t)c.d_ff * 4 < FUZZ_MAX_SESSION_BYTES &&
            tfm_session_create(model, &sd, &s) == TFM_OK) {
            ids[0] = 0;
            ids[1] = c.n_vocab > 1 ? 1 : 0;
            tfm_session_eval(s, ids, sd.n_ctx < 2 ? sd.n_ctx : 2, 0, NULL);
            tfm_session_destroy(s);
        }
        tfm_model_close(model);
    }
    free(copy);
    return 0;
}
