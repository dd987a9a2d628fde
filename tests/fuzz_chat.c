/* fuzz_chat.c - libFuzzer harness for the >>chat section (the template lexer, parser and
   renderer).

   The input is a template; when it holds a NUL byte, what follows the first NUL is the
   messages_json (any bytes), else a fixed conversation with tool calls is used. Every input
   must either render or fail with a result code: no crash, no leak, no hang (the step, depth,
   memory and output limits hold; the memory and output limits are set small here so each run
   is quick). Seeded with the .jinja files of tests/data/chat/templates (make fuzz copies them).
   Build and run (clang):
     clang -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz_chat.c -o build/fuzz_chat
     mkdir -p build/fuzz_chat_corpus; cp tests/data/chat/templates/[a-z]*.jinja build/fuzz_chat_corpus
     build/fuzz_chat -max_total_time=60 build/fuzz_chat_corpus */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <stdlib.h>

#define FUZZ_MEMORY_BYTES ((size_t)16 << 20)
#define FUZZ_OUTPUT_BYTES ((size_t)1 << 20)

static const char messages[] =
    "[{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", \"content\": \"hi \\u00e9\"},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"abcdefghi\", \"type\": \"function\","
    " \"function\": {\"name\": \"f\", \"arguments\": {\"x\": [1, 2.5, true]}}}]},"
    " {\"role\": \"tool\", \"content\": \"42\"}, {\"role\": \"user\", \"content\": \"<think>a</think>b\"}]";
static const char vars[] = "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data, *nul = (const char *)memchr(data, 0, size);
    size_t n_tmpl = nul ? (size_t)(nul - text) : size, n = 0;
    tfm_chat_desc cd;
    tfm_chat_args a;
    tfm_chat *chat;
    char *out;
    memset(&cd, 0, sizeof cd);
    cd.template_text = text;
    cd.template_bytes = n_tmpl;
    cd.bos_token = "<s>";
    cd.bos_token_bytes = 3;
    cd.max_memory_bytes = FUZZ_MEMORY_BYTES;
    cd.max_output_bytes = FUZZ_OUTPUT_BYTES;
    if (tfm_chat_create(&cd, &chat) != TFM_OK) return 0;
    memset(&a, 0, sizeof a);
    a.messages_json = nul ? nul + 1 : messages;
    a.messages_json_bytes = nul ? size - n_tmpl - 1 : sizeof messages - 1;
    a.vars_json = size & 1 ? vars : NULL; /* tools defined or not, by the input's length */
    a.vars_json_bytes = sizeof vars - 1;
    a.add_generation_prompt = (size & 2) != 0;
    a.date.year = size & 4 ? 2024 : 0;
    a.date.month = 2;
    a.date.day = 29;
    if (tfm_chat_render(chat, &a, NULL, 0, &n) == TFM_OK && (out = (char *)malloc(n + 1)) != NULL) {
        if (tfm_chat_render(chat, &a, out, n, &n) != TFM_OK) abort(); /* the second call must agree */
        free(out);
    }
    tfm_chat_destroy(chat);
    return 0;
}
