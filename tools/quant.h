/* quant.h - which weight type each tensor gets under tfm-convert --type (and tfm-bench --type):
   the one rule both tools follow, so a converted file and a benchmark model of the same name
   hold the same types. tools/quant.c. */
#ifndef TFM_QUANT_H
#define TFM_QUANT_H

#include "tfm.h"

/* What a matrix is, for the recipes. */
typedef enum tq_role {
    TQ_ROLE_OTHER = 0,  /* q, k, o, up, gate, token embedding, ... */
    TQ_ROLE_V,          /* the value projection */
    TQ_ROLE_DOWN,       /* the FFN's down projection */
    TQ_ROLE_OUTPUT      /* the output head (a tied one: the token embedding) */
} tq_role;

/* A --type name: a tfm dtype name (f32 f16 bf16 q8_0 q4_0 q4_k q6_k) or a recipe (q4_k_m).
   false for anything else. */
bool tq_type_valid(const char *type);

/* The dtype of a [rows, cols] matrix of `role` in layer `layer` of n_layers (-1: not in a layer)
   under `type`. Rows whose cols are not whole blocks of the wanted type fall back to a wider one
   that fits, as llama-quantize falls back (q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0; then
   f16). Returns the dtype; *fell_back is set when the tensor did not get what `type` asks for. */
tfm_dtype tq_matrix_dtype(const char *type, tq_role role, int layer, int n_layers, int cols, bool *fell_back);

/* The README's one-paragraph summary of the recipes, for --help. */
extern const char tq_recipes_help[];

#endif
