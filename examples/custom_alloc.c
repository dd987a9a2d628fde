/* custom_alloc.c - put every byte tfm.h allocates into the host's own memory block.

   Game engines budget memory up front. Every tfm create call takes a tfm_allocator
   (alloc(bytes, align, user) / free(ptr, bytes, user)); here it is a bump arena over one
   static block, so the program can print exactly what the model and a session cost, and
   prove that generating tokens allocates nothing more.

   cc -std=c99 -O2 -I. examples/custom_alloc.c -o custom_alloc -lm
   ./custom_alloc model.tfm                                                                */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BYTES ((size_t)64 << 20)

typedef struct arena { unsigned char *base; size_t used, cap; int n_allocs; } arena;

static void *arena_alloc(void *user, size_t bytes, size_t align) {
    arena *a = (arena *)user;
    size_t at = (a->used + align - 1) & ~(align - 1);
    if (at > a->cap || bytes > a->cap - at) return NULL; /* tfm reports TFM_ERR_OUT_OF_MEMORY */
    a->used = at + bytes;
    a->n_allocs++;
    return a->base + at;
}

static void arena_free(void *user, void *ptr, size_t bytes) {
    (void)ptr; (void)bytes; (void)user; /* a bump arena frees everything at once, at the end (tfm.h
                                           frees in reverse order, so a stack allocator works too) */
}

int main(int argc, char **argv) {
    arena a = {NULL, 0, ARENA_BYTES, 0};
    tfm_allocator alloc = {arena_alloc, arena_free, &a};
    tfm_model_desc md;
    tfm_session_desc sd;
    tfm_model *model;
    tfm_session *s;
    size_t after_model, after_session;
    int allocs_before, pos;
    int32_t token = 0;
    const float *logits;
    memset(&md, 0, sizeof md); /* all zero: defaults (C: = {0}; C++: = {}) */
    memset(&sd, 0, sizeof sd);
    a.base = (unsigned char *)malloc(ARENA_BYTES);
    if (!a.base) return 1;
    md.path = argc > 1 ? argv[1] : "build/demo.tfm"; /* default: the model make demo builds */
    md.allocator = alloc; /* the model's tables (and the file, with no_mmap) come from the arena */
    if (tfm_model_open(&md, &model) != TFM_OK) {
        fprintf(stderr, "custom_alloc: cannot open %s\n", md.path);
        return 1;
    }
    after_model = a.used;
    sd.allocator = alloc;
    sd.n_ctx = 64;          /* a short context: a small KV cache */
    if (tfm_session_create(model, &sd, &s) != TFM_OK) {
        fprintf(stderr, "custom_alloc: session does not fit in %zu bytes\n", ARENA_BYTES);
        return 1;
    }
    after_session = a.used;
    allocs_before = a.n_allocs;
    for (pos = 0; pos < 32; pos++) {       /* 32 greedy steps from token 0 */
        int k, n = tfm_model_config(model).n_vocab;
        if (tfm_session_decode(s, token, pos, &logits) != TFM_OK) return 1;
        for (token = 0, k = 1; k < n; k++) if (logits[k] > logits[token]) token = k;
    }
    printf("model tables: %zu bytes\nsession (KV cache for 64 positions + scratch): %zu bytes\n",
           after_model, after_session - after_model);
    printf("allocations while generating 32 tokens: %d\n", a.n_allocs - allocs_before);
    tfm_session_destroy(s);
    tfm_model_close(model);
    free(a.base);
    return a.n_allocs == allocs_before ? 0 : 1;
}
