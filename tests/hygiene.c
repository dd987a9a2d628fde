/* hygiene.c - the implementation compiles where a host's headers turn common names into
   function-like macros (make check-compile): <tgmath.h> makes `log` a macro, and a debug
   allocator's `#define free(p) ...` (MSVC's _CRTDBG_MAP_ALLOC pattern) makes `free` one. Calls
   through the callback members a->free(...) and logger->log(...) must not expand them. */
#include <tgmath.h>
#include <stdlib.h>

void hygiene_free(void *p, const char *file, int line);
#define free(p) hygiene_free(p, __FILE__, __LINE__)

#define TFM_IMPLEMENTATION
#include "tfm.h"

void hygiene_free(void *p, const char *file, int line) {
    (void)file;
    (void)line;
    (free)(p); /* the real one */
}
