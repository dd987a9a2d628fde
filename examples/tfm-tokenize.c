/* tfm-tokenize - text to token ids with a model's tokenizer, and ids back to text.

   build/tfm-tokenize -m model.tfm "Hello world"        ->  15496 995
   build/tfm-tokenize -m model.tfm --decode "15496 995"  ->  Hello world

   Works on any .tfm with a tokenizer, including vocab-only files (tfm-convert --vocab-only).
   Exit status 0 on success, 1 on any bad argument or failure. */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MODEL "build/demo.tfm" /* the model make demo converts from models/demo */

static const char *const usage =
    "usage: tfm-tokenize [-m MODEL.tfm] [-f FILE | TEXT] [--add-special] [--decode]\n"
    "\n"
    "  -m FILE          model or vocab-only file (.tfm) with a tokenizer\n"
    "                   (default build/demo.tfm)\n"
    "  -f FILE          read the input from FILE ('-': standard input) instead of TEXT\n"
    "  --add-special    prepend the BOS id and append the EOS id (when the model has them)\n"
    "  --decode         the input is token ids (separated by spaces, commas or newlines);\n"
    "                   write their bytes, unchanged, to standard output\n"
    "  --               the next argument is TEXT, even if it starts with '-'\n"
    "  -h, --help       show this help\n"
    "\n"
    "Without --decode, prints the ids of the input on one line, separated by spaces.\n"
    "No BOS/EOS is added unless --add-special is given.\n";

static void die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "tfm-tokenize: error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

static void log_to_stderr(void *user, tfm_result result, const char *message) {
    (void)user;
    fprintf(stderr, "tfm-tokenize: %s: %s\n", tfm_result_string(result), message);
}

/* The value after the flag argv[*i]; steps *i over it. */
static const char *str_arg(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) die("missing value for %s", argv[*i]);
    return argv[++*i];
}

/* The whole of a file (or stdin for "-") into a malloc'd buffer. */
static char *read_all(const char *path, size_t *n_bytes) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t n = 0, cap = 1 << 16, got;
    char *buf = (char *)malloc(cap);
    if (!f) die("cannot read '%s': %s", path, strerror(errno));
    if (!buf) die("out of memory");
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap && !(buf = (char *)realloc(buf, cap *= 2))) die("out of memory");
    }
    if (ferror(f)) die("cannot read '%s'", path);
    if (f != stdin) fclose(f);
    *n_bytes = n;
    return buf;
}

static bool is_separator(char c) { return c != '\0' && strchr(" ,\t\r\n", c) != NULL; }

/* Ids separated by spaces, commas or newlines back into their raw token bytes. */
static void decode_ids(const tfm_model *model, int n_tokens, const char *s, size_t n_bytes) {
    const char *s_end = s + n_bytes;
    while (s < s_end) {
        char digits[16], *end;
        size_t n = 0, piece_bytes;
        const char *piece;
        long id;
        tfm_result r;
        if (is_separator(*s)) { s++; continue; }
        while (s + n < s_end && !is_separator(s[n])) n++;
        if (n >= sizeof digits || memchr(s, '\0', n))
            die("--decode: '%.*s' is not a token id", (int)n, s);
        memcpy(digits, s, n);
        digits[n] = '\0';
        errno = 0;
        id = strtol(digits, &end, 10);
        if (end == digits || *end != '\0' || errno == ERANGE)
            die("--decode: '%s' is not a token id", digits);
        if (id < 0 || id >= n_tokens)
            die("--decode: token id %ld is outside [0, %d)", id, n_tokens);
        if ((r = tfm_model_token_piece(model, (int32_t)id, &piece, &piece_bytes)) != TFM_OK)
            die("token %ld: %s", id, tfm_result_string(r));
        fwrite(piece, 1, piece_bytes, stdout);
        s += n;
    }
}

int main(int argc, char **argv) {
    const char *model_path = DEFAULT_MODEL, *file = NULL, *text = NULL;
    bool add_special = false, decode = false;
    int i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); return 0; }
        else if (!strcmp(a, "-m")) model_path = str_arg(argc, argv, &i);
        else if (!strcmp(a, "-f")) file = str_arg(argc, argv, &i);
        else if (!strcmp(a, "--add-special")) add_special = true;
        else if (!strcmp(a, "--decode")) decode = true;
        else if (!strcmp(a, "--") && i + 1 < argc && !text) text = argv[++i]; /* "-x" as TEXT */
        else if (a[0] == '-' && a[1] != '\0') die("unknown argument '%s' (see --help)", a);
        else if (text) die("more than one TEXT argument (quote the text)");
        else text = a;
    }
    if ((file != NULL) == (text != NULL)) die("give exactly one of -f FILE and TEXT");
    if (decode && add_special) die("--add-special does not apply to --decode");

    tfm_model_desc md;

    memset(&md, 0, sizeof md); /* all zero: defaults */
    md.path = model_path;
    md.logger.log = log_to_stderr;
    tfm_model *model;
    tfm_result r = tfm_model_open(&md, &model);
    if (r != TFM_OK) die("cannot open model '%s': %s", model_path, tfm_result_string(r));
    tfm_config cfg = tfm_model_config(model);
    if (cfg.n_tokens == 0) die("'%s' has no tokenizer", model_path);

    size_t n_bytes;
    char *input = file ? read_all(file, &n_bytes) : NULL;
    const char *in = file ? input : text;
    if (!file) n_bytes = strlen(text);

    if (decode) {
        decode_ids(model, cfg.n_tokens, in, n_bytes);
    } else {
        /* Two calls: the first only counts (a too-small buffer still reports the count). */
        size_t n_ids = 0, n_out = 0, k;
        r = tfm_model_tokenize(model, in, n_bytes, NULL, 0, &n_ids);
        if (r != TFM_OK && r != TFM_ERR_INVALID_ARG) die("tokenize: %s", tfm_result_string(r));
        int32_t *ids = (int32_t *)malloc((n_ids + 2) * sizeof *ids); /* + BOS and EOS */
        if (!ids) die("out of memory");
        if (add_special && cfg.bos_id >= 0) ids[n_out++] = cfg.bos_id;
        r = tfm_model_tokenize(model, in, n_bytes, ids + n_out, n_ids, &n_ids);
        if (r != TFM_OK) die("tokenize: %s", tfm_result_string(r));
        n_out += n_ids;
        if (add_special && cfg.eos_id >= 0) ids[n_out++] = cfg.eos_id;
        for (k = 0; k < n_out; k++) printf(k ? " %d" : "%d", (int)ids[k]);
        putchar('\n');
        free(ids);
    }
    if (fflush(stdout) != 0) die("cannot write the output");
    free(input);
    tfm_model_close(model);
    return 0;
}
