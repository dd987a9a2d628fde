/* alloc.h - the tests' counting tfm_allocator over malloc: it counts calls, frees, the blocks
   and bytes held and the block sizes, and can make one chosen call return NULL. Zero a
   test_alloc, set fail_at to N if call N should fail, and pass test_allocator(&a) wherever a
   tfm_allocator goes (or set test_alloc_fn / test_free_fn one at a time):
       test_alloc c;
       memset(&c, 0, sizeof c);
       c.fail_at = 3;
       md.allocator = test_allocator(&c);
   Blocks honour the asked alignment (the raw malloc pointer is kept just below the block), so
   they may go wherever tfm.h's own allocations go. */
#ifndef TEST_ALLOC_H
#define TEST_ALLOC_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tfm.h"

typedef struct test_alloc {
    long n_alloc;      /* calls of test_alloc_fn, a failed one included */
    long n_free;       /* calls of test_free_fn */
    long live;         /* blocks handed out and not yet freed */
    long fail_at;      /* the call (1-based) that returns NULL; 0: none */
    size_t live_bytes; /* bytes of the live blocks (as asked for, and as the frees say) */
    size_t last_bytes; /* the size of the last block handed out */
    size_t max_bytes;  /* the size of the largest block handed out */
} test_alloc;

/* tfm_allocator.alloc: NULL for call fail_at (and when malloc fails or the size overflows). */
static void *test_alloc_fn(void *user, size_t bytes, size_t align) {
    test_alloc *a = (test_alloc *)user;
    unsigned char *raw, *p;
    a->n_alloc++;
    if (a->fail_at && a->n_alloc == a->fail_at) return NULL;
    if (bytes > SIZE_MAX - align - sizeof(void *)) return NULL;
    raw = (unsigned char *)malloc(bytes + align + sizeof(void *));
    if (!raw) return NULL;
    p = raw + sizeof(void *);
    p += (align - (uintptr_t)p % align) % align;
    memcpy(p - sizeof(void *), &raw, sizeof raw);
    a->live++;
    a->live_bytes += bytes;
    a->last_bytes = bytes;
    if (bytes > a->max_bytes) a->max_bytes = bytes;
    return p;
}

/* tfm_allocator.free: ptr is a block of test_alloc_fn; bytes what the caller says it asked for. */
static void test_free_fn(void *user, void *ptr, size_t bytes) {
    test_alloc *a = (test_alloc *)user;
    void *raw;
    memcpy(&raw, (unsigned char *)ptr - sizeof(void *), sizeof raw);
    free(raw);
    a->n_free++;
    a->live--;
    a->live_bytes -= bytes;
}

/* inline: a program that never calls it compiles without an unused-function warning (the two
   callbacks are used by it). */
static inline tfm_allocator test_allocator(test_alloc *a) {
    tfm_allocator al;
    al.alloc = test_alloc_fn;
    al.free = test_free_fn;
    al.user = a;
    return al;
}
#endif
