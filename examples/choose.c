/* choose.c - let the model pick: rank candidate replies by log-probability, and choose an action
   constrained to one of a few strings.

   cc -std=c99 -O2 -I. examples/choose.c -o choose -lm
   ./choose [MODEL.tfm]                     (default build/demo.tfm)                          */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IDS 64

static tfm_model *model;

static void check(tfm_result r, const tfm_session *s) {
    if (r == TFM_OK) return;
    fprintf(stderr, "choose: %s: %s\n", tfm_result_string(r), s ? tfm_session_last_error(s) : "");
    exit(1);
}

/* text -> ids; returns the count */
static size_t tokenize(const char *text, int32_t *ids) {
    size_t n = 0;
    check(tfm_model_tokenize(model, text, strlen(text), ids, MAX_IDS, &n), NULL);
    return n;
}

int main(int argc, char **argv) {
    static const char *const replies[] = {" the LORD", " a stone", " the waters"};
    static const char *const actions[] = {" went", " smote", " wept"};
    const char *question = "And God said, Let there be light: and there was", *story = "And David arose, and";
    tfm_model_desc md;
    tfm_session *s;
    int32_t prompt[MAX_IDS], ids[3][MAX_IDS];
    float lp[MAX_IDS];
    tfm_tokens choices[3];
    size_t n_prompt, n;
    double score[3];
    int i, k, chosen, rank[3];
    memset(&md, 0, sizeof md); /* all zero means default (C: = {0}; C++: = {}) */
    md.path = argc > 1 ? argv[1] : "build/demo.tfm";
    if (tfm_model_open(&md, &model) != TFM_OK || tfm_model_config(model).n_tokens == 0) {
        fprintf(stderr, "choose: cannot open %s (or it has no tokenizer)\n", md.path);
        return 1;
    }
    check(tfm_session_create(model, NULL, &s), NULL);

    /* 1. rank replies: the sum of their tokens' log-probabilities after the question (each
       scored at the same position; no n x vocabulary buffer) */
    n_prompt = tokenize(question, prompt);
    check(tfm_session_eval(s, prompt, n_prompt, 0, NULL), s);
    for (i = 0; i < 3; i++) {
        n = tokenize(replies[i], ids[i]);
        check(tfm_session_score(s, ids[i], n, (int)n_prompt, lp), s);
        for (k = 0, score[i] = 0.0; k < (int)n; k++) score[i] += lp[k];
        rank[i] = i;
    }
    for (i = 1; i < 3; i++) /* best first */
        for (k = i; k > 0 && score[rank[k]] > score[rank[k - 1]]; k--) { int t = rank[k]; rank[k] = rank[k - 1]; rank[k - 1] = t; }
    printf("%s ...\n", question);
    for (i = 0; i < 3; i++) printf("  %d. log-prob %8.3f  \"%s\"\n", i + 1, score[rank[i]], replies[rank[i]]);

    /* 2. choose an action: generation constrained to exactly one of these strings */
    n_prompt = tokenize(story, prompt);
    check(tfm_session_eval(s, prompt, n_prompt, 0, NULL), s);
    for (i = 0; i < 3; i++) {
        choices[i].ids = ids[i];
        choices[i].n_ids = tokenize(actions[i], ids[i]);
    }
    check(tfm_session_choose(s, NULL, choices, 3, &chosen), s); /* NULL sampler: the likeliest path */
    printf("%s ... action: \"%s\" (choice %d)\n", story, actions[chosen], chosen);

    tfm_session_destroy(s);
    tfm_model_close(model);
    return 0;
}
