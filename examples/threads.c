/* threads.c - one model, two conversations on two threads at once.

   A tfm_model is immutable after open, so any number of threads may share it; each thread
   owns its tfm_session (KV cache + scratch). Here two threads continue two prompts greedily
   and print what they wrote. The host owns the cores: each session uses 1 thread.

   cc -std=c99 -O2 -pthread -I. examples/threads.c -o threads -lm
   ./threads model.tfm "In the beginning" "And God said"                                  */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define N_GENERATE 24
#define MAX_TOKENS 256

typedef struct job {
    const tfm_model *model; /* shared, read-only */
    const char *prompt;
    char text[4096];        /* what this thread generated */
    tfm_result result;
} job;

/* Greedy continuation of job->prompt in a session of this thread's own. */
static void *run(void *arg) {
    job *j = (job *)arg;
    tfm_config cfg = tfm_model_config(j->model);
    tfm_session_desc sd;
    memset(&sd, 0, sizeof sd); /* all zero: defaults */
    tfm_session *s;
    int32_t ids[MAX_TOKENS];
    size_t n = 0, used = 0, piece;
    tfm_utf8_stream stream = {{0}, 0};
    const float *logits;
    int i, k;
    if ((j->result = tfm_session_create(j->model, &sd, &s)) != TFM_OK) return NULL;
    j->result = tfm_model_tokenize(j->model, j->prompt, strlen(j->prompt), ids, MAX_TOKENS - N_GENERATE, &n);
    if (j->result == TFM_OK && n > 0) j->result = tfm_session_eval(s, ids, (int)n, 0, NULL);
    logits = tfm_session_logits(s);
    for (i = 0; i < N_GENERATE && j->result == TFM_OK && n > 0; i++) {
        int32_t best = 0; /* argmax: greedy needs no sampler */
        for (k = 1; k < cfg.n_tokens; k++) if (logits[k] > logits[best]) best = k;
        if (best == cfg.eos_id || used + 64 > sizeof j->text) break;
        j->result = tfm_model_detokenize(j->model, &stream, best, j->text + used, sizeof j->text - used, &piece);
        used += piece;
        if (j->result == TFM_OK) j->result = tfm_session_decode(s, best, (int)n + i, &logits);
    }
    j->text[used] = '\0';
    tfm_session_destroy(s);
    return NULL;
}

int main(int argc, char **argv) {
    tfm_model_desc md;
    memset(&md, 0, sizeof md); /* all zero: defaults */
    tfm_model *model;
    job jobs[2];
    pthread_t threads[2];
    int i;
    if (argc != 1 && argc != 4) {
        fprintf(stderr, "usage: threads [MODEL.tfm PROMPT1 PROMPT2]   (default build/demo.tfm)\n");
        return 1;
    }
    md.path = argc > 1 ? argv[1] : "build/demo.tfm";
    if (tfm_model_open(&md, &model) != TFM_OK || tfm_model_config(model).n_tokens == 0) {
        fprintf(stderr, "threads: cannot open %s (or it has no tokenizer)\n", md.path);
        return 1;
    }
    for (i = 0; i < 2; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].model = model;
        jobs[i].prompt = argc > 1 ? argv[2 + i] : i ? "And God said" : "In the beginning";
        pthread_create(&threads[i], NULL, run, &jobs[i]);
    }
    for (i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        if (jobs[i].result != TFM_OK) {
            fprintf(stderr, "threads: thread %d: %s\n", i, tfm_result_string(jobs[i].result));
            return 1;
        }
        printf("[%d] %s%s\n", i, jobs[i].prompt, jobs[i].text);
    }
    tfm_model_close(model);
    return 0;
}
