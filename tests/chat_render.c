/* chat_render: renders a chat template with tfm.h for the dev-time checks (tests/gen/).
   usage: chat_render TEMPLATE MESSAGES.json [--vars VARS.json] [--bos S] [--eos S]
                      [--date YYYY-MM-DD] [--no-generation-prompt]
   Prints the prompt byte for byte; on an error "ERROR: <result>: chat template: <message>"
   (tfm.h's logger line) and exit 1. */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *p = NULL;
    long len;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (p = (char *)malloc((size_t)len + 1)) != NULL && fread(p, 1, (size_t)len, f) == (size_t)len) {
        *n = (size_t)len;
    } else {
        free(p);
        p = NULL;
    }
    fclose(f);
    return p;
}

static void print_error(void *user, tfm_result r, const char *msg) {
    (void)user;
    printf("ERROR: %s: %s", tfm_result_string(r), msg);
}

int main(int argc, char **argv) {
    tfm_chat_desc cd;
    tfm_chat_args ca;
    tfm_chat *chat;
    char *tmpl, *msgs, *vars = NULL, *out;
    size_t nt, nm, nv = 0, need = 0;
    tfm_result r;
    int i;
    memset(&cd, 0, sizeof cd);
    memset(&ca, 0, sizeof ca);
    ca.add_generation_prompt = true;
    if (argc < 3) {
        fprintf(stderr, "usage: chat_render TEMPLATE MESSAGES.json [--vars F] [--bos S] [--eos S] "
                        "[--date YYYY-MM-DD] [--no-generation-prompt]\n");
        return 2;
    }
    if (!(tmpl = read_file(argv[1], &nt)) || !(msgs = read_file(argv[2], &nm))) {
        fprintf(stderr, "chat_render: cannot read %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    for (i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--vars") && i + 1 < argc && (vars = read_file(argv[++i], &nv))) continue;
        if (!strcmp(argv[i], "--bos") && i + 1 < argc) { cd.bos_token = argv[++i]; cd.bos_token_bytes = strlen(cd.bos_token); continue; }
        if (!strcmp(argv[i], "--eos") && i + 1 < argc) { cd.eos_token = argv[++i]; cd.eos_token_bytes = strlen(cd.eos_token); continue; }
        if (!strcmp(argv[i], "--date") && i + 1 < argc &&
            sscanf(argv[++i], "%d-%d-%d", &ca.date.year, &ca.date.month, &ca.date.day) == 3) continue;
        if (!strcmp(argv[i], "--no-generation-prompt")) { ca.add_generation_prompt = false; continue; }
        fprintf(stderr, "chat_render: bad argument %s\n", argv[i]);
        return 2;
    }
    cd.template_text = tmpl;
    cd.template_bytes = nt;
    ca.messages_json = msgs;
    ca.messages_json_bytes = nm;
    ca.vars_json = vars;
    ca.vars_json_bytes = nv;
    cd.logger.log = print_error;
    if ((r = tfm_chat_create(&cd, &chat)) != TFM_OK) {
        free(tmpl);
        free(msgs);
        free(vars);
        return 1;
    }
    r = tfm_chat_render(chat, &ca, NULL, 0, &need);
    out = (char *)malloc(need + 1);
    if (r == TFM_OK && out) r = tfm_chat_render(chat, &ca, out, need, &need);
    if (r == TFM_OK) fwrite(out, 1, need, stdout);
    tfm_chat_destroy(chat);
    free(out);
    free(tmpl);
    free(msgs);
    free(vars);
    return r == TFM_OK ? 0 : 1;
}
