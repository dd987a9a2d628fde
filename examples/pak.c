/* pak.c - load a model from an engine's pak file through read callbacks (tfm_io), with a load
   progress bar that could cancel.

   The pak here is built in memory: a small table of contents, a dummy asset, then the model
   file. tfm.h never sees the pak: it asks for bytes at offsets of "its" file, and the callback
   reads them from the pak entry (an engine would read its archive or VFS the same way).

   cc -std=c99 -O2 -I. examples/pak.c -o pak -lm
   ./pak [MODEL.tfm]                        (default build/demo.tfm)                          */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pak_entry { const char *name; size_t offset, bytes; } pak_entry;
typedef struct pak { unsigned char *data; pak_entry entries[2]; int n_reads; } pak;

/* tfm_io.read: bytes [offset, offset + n) of the model entry; false past its end. */
static bool pak_read(void *user, uint64_t offset, void *dst, size_t n_bytes) {
    pak *p = (pak *)user;
    const pak_entry *e = &p->entries[1];
    if (offset > e->bytes || n_bytes > e->bytes - offset) return false;
    memcpy(dst, p->data + e->offset + offset, n_bytes);
    p->n_reads++;
    return true;
}

static bool on_progress(void *user, uint64_t done, uint64_t total) {
    (void)user;
    fprintf(stderr, "\rloading %3d%%", (int)(100 * done / (total ? total : 1)));
    if (done == total) fprintf(stderr, "\n");
    return true; /* false would cancel: tfm_model_open returns TFM_ERR_CANCELLED */
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "build/demo.tfm", *asset = "a texture, a sound, ...";
    FILE *fp = fopen(path, "rb");
    long model_bytes;
    pak p;
    tfm_model_desc md;
    tfm_model *model;
    tfm_session *s;
    tfm_result r;
    int32_t ids[64];
    size_t n = 0;
    int i;
    if (!fp || fseek(fp, 0, SEEK_END) != 0 || (model_bytes = ftell(fp)) <= 0 || fseek(fp, 0, SEEK_SET) != 0) {
        fprintf(stderr, "pak: cannot read %s\n", path);
        return 1;
    }
    /* the pak: [asset][model], each entry found by name in the table */
    memset(&p, 0, sizeof p);
    p.entries[0].name = "asset.bin"; p.entries[0].offset = 0; p.entries[0].bytes = strlen(asset);
    p.entries[1].name = "npc.tfm"; p.entries[1].offset = 1000; p.entries[1].bytes = (size_t)model_bytes;
    p.data = (unsigned char *)malloc(1000 + (size_t)model_bytes);
    if (!p.data || fread(p.data + 1000, 1, (size_t)model_bytes, fp) != (size_t)model_bytes) return 1;
    memcpy(p.data, asset, strlen(asset));
    fclose(fp);

    memset(&md, 0, sizeof md); /* all zero means default (C: = {0}; C++: = {}) */
    md.io.read = pak_read;
    md.io.user = &p;
    md.io.file_bytes = p.entries[1].bytes;
    md.load_progress = on_progress;
    if ((r = tfm_model_open(&md, &model)) != TFM_OK) {
        fprintf(stderr, "pak: open: %s\n", tfm_result_string(r));
        return 1;
    }
    printf("pak: %s opened through %d reads of the pak entry (%zu bytes)\n", p.entries[1].name, p.n_reads,
           p.entries[1].bytes);
    free(p.data); /* the model holds its own copy (read through its allocator) */

    /* it works like any other model: greedy continuation of a prompt */
    if ((r = tfm_session_create(model, NULL, &s)) != TFM_OK ||
        (r = tfm_model_tokenize(model, "In the beginning", 16, ids, 64, &n)) != TFM_OK ||
        (r = tfm_session_eval(s, ids, n, 0, NULL)) != TFM_OK) {
        fprintf(stderr, "pak: %s\n", tfm_result_string(r));
        return 1;
    }
    printf("In the beginning");
    for (i = 0; i < 12; i++) {
        const float *lg = tfm_session_logits(s);
        tfm_utf8_stream st = {{0}, 0};
        char text[64];
        size_t n_text = 0;
        int32_t best = 0, k;
        for (k = 1; k < tfm_model_config(model).n_tokens; k++) if (lg[k] > lg[best]) best = k;
        if (tfm_model_detokenize(model, &st, best, text, sizeof text, &n_text) == TFM_OK) printf("%.*s", (int)n_text, text);
        if ((r = tfm_session_decode(s, best, (int)n + i, NULL)) != TFM_OK) return 1;
    }
    printf("\n");
    tfm_session_destroy(s);
    tfm_model_close(model);
    return 0;
}
