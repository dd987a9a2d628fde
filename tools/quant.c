/* quant.c - the --type recipes (see tools/quant.h). */
#include "tools/quant.h"

#include <string.h>

const char tq_recipes_help[] =
    "           f32 f16 bf16 q8_0 q5_0 q5_1 q5_k q6_k: every matrix that type. q4_0, q4_k: every matrix, but\n"
    "           the output head in q6_k (read once per token, its error goes straight into the\n"
    "           logits; a tied head: the token embedding). q4_k_m: q4_k, with q6_k for the output\n"
    "           head and for the value and FFN-down matrices of the first and last eighth of the\n"
    "           layers and every third layer between (the layers where 4 bits cost the most).\n"
    "           Vectors stay f32; a matrix whose rows are not whole blocks (256 for k-quants, 32\n"
    "           for the others) falls back as llama-quantize does: q4_k to q5_0, q5_k to q5_1,\n"
    "           q6_k to q8_0; then to f16.\n";

bool tq_type_valid(const char *type) {
    return type && (strcmp(type, "q4_k_m") == 0 || tfm_dtype_from_name(type, NULL));
}

/* q4_k_m's layers that get 6 bits for their v and down matrices. */
static bool tq_more_bits(int layer, int n_layers) {
    int eighth = n_layers / 8;
    return layer < eighth || layer >= n_layers - eighth || (layer - eighth) % 3 == 2;
}

tfm_dtype tq_matrix_dtype(const char *type, tq_role role, int layer, int n_layers, int cols, bool *fell_back) {
    tfm_dtype want = TFM_DTYPE_F32, t;
    bool q4_k_m = strcmp(type, "q4_k_m") == 0;
    if (q4_k_m) {
        want = TFM_DTYPE_Q4_K;
        if (role == TQ_ROLE_OUTPUT || ((role == TQ_ROLE_V || role == TQ_ROLE_DOWN) && layer >= 0 &&
                                       tq_more_bits(layer, n_layers)))
            want = TFM_DTYPE_Q6_K;
    } else {
        tfm_dtype_from_name(type, &want);
        if (role == TQ_ROLE_OUTPUT && (want == TFM_DTYPE_Q4_0 || want == TFM_DTYPE_Q4_K)) want = TFM_DTYPE_Q6_K;
    }
    t = want;
    if (tfm_dtype_row_bytes(t, (size_t)cols) == 0 && t == TFM_DTYPE_Q4_K) t = TFM_DTYPE_Q5_0;
    if (tfm_dtype_row_bytes(t, (size_t)cols) == 0 && t == TFM_DTYPE_Q5_K) t = TFM_DTYPE_Q5_1;
    if (tfm_dtype_row_bytes(t, (size_t)cols) == 0 && t == TFM_DTYPE_Q6_K) t = TFM_DTYPE_Q8_0;
    if (tfm_dtype_row_bytes(t, (size_t)cols) == 0) t = TFM_DTYPE_F16;
    if (fell_back) *fell_back = t != want;
    return t;
}
