/* check.h - the tests' tiny harness: CHECK records file:line, keeps going, sets the exit code.
   Each test program ends with check_summary(), which prints "N passed, N failed". */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond) check_record((cond) != 0, #cond, __FILE__, __LINE__)
#define CHECK_MSG(cond, ...) \
    do { if (!check_record((cond) != 0, #cond, __FILE__, __LINE__)) { \
        fprintf(stderr, "    "); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)

static int check_record(int ok, const char *what, const char *file, int line) {
    if (ok) { check_passed++; return 1; }
    check_failed++;
    fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what);
    return 0;
}

/* The folder of shared test material, or NULL (tests then skip with a message). */
static inline const char *check_shared_dir(void) {
    const char *dir = getenv("SHARED");
    return dir && *dir ? dir : "../shared";
}

static int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed ? 1 : 0;
}
#endif
