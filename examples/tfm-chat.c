/* tfm-chat - talk to a chat model in the terminal, with the model's own chat template.

   build/tfm-chat -m model.tfm -s "You are terse."
   build/tfm-chat -m model.tfm --messages chat.json --print-prompt

   Each line read is a user turn; the reply streams as it is sampled and ends at the model's
   end-of-turn token (<|eot_id|>, <|im_end|>, <end_of_turn>, ..., or EOS), after -n tokens, or
   when the context is full. Every turn renders the whole conversation through the template
   (as Hugging Face does) and evaluates only the tokens after the longest prefix the KV cache
   already holds. When the prompt would leave less than min(-n, a quarter of the context) for
   the reply, the oldest turns after the system prompt are dropped. /reset starts over, /quit (or end of input) leaves.
   Exit status 0 on success, 1 on any bad argument or failure. */
#define _POSIX_C_SOURCE 200809L /* localtime_r */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_MODEL "build/demo.tfm" /* the model make demo converts from models/demo */
#define MAX_COUNT (1L << 30)
#define MAX_THREADS 1024
#define MAX_STOP_IDS 16

static const char *const usage =
    "usage: tfm-chat [-m MODEL.tfm] [-s SYSTEM] [options]\n"
    "       tfm-chat [-m MODEL.tfm] --messages FILE.json --print-prompt\n"
    "\n"
    "  -m FILE             model file (.tfm with a tokenizer and a chat template; default\n"
    "                      build/demo.tfm)\n"
    "  -s, --system TEXT   system prompt (the first message of every conversation)\n"
    "  --template FILE     use this Jinja chat template instead of the model's\n"
    "  --vars FILE.json    more template variables, e.g. {\"enable_thinking\": false}\n"
    "  --stop TEXT         one more end-of-turn token (its text; repeatable)\n"
    "  --messages FILE     a JSON array of {\"role\": ..., \"content\": ...} messages\n"
    "  --print-prompt      with --messages: print the rendered prompt (add_generation_prompt\n"
    "                      on) byte for byte and exit\n"
    "  -n N                most tokens per reply (default 512)\n"
    "  -c N                context length (default: the model's)\n"
    "  --temp T            temperature (default 0.7; 0: greedy)\n"
    "  --top-k K           (default 40; 0: off)    --top-p P  (default 0.95; 1: off)\n"
    "  --min-p P           (default 0: off)        --repeat-penalty R  (default 1.0: off)\n"
    "  --seed N            sampler seed (default: from the clock)\n"
    "  -t N                threads (default 1)\n"
    "  -h, --help          show this help\n"
    "\n"
    "In the chat: a line is a user turn; /reset forgets the conversation, /quit leaves.\n"
    "Statistics for each turn (prompt tokens, how many were new) go to standard error.\n";

static void die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "tfm-chat: error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

static void log_to_stderr(void *user, tfm_result result, const char *message) {
    (void)user;
    fprintf(stderr, "tfm-chat: %s: %s\n", tfm_result_string(result), message);
}

static const char *str_arg(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) die("missing value for %s", argv[*i]);
    return argv[++*i];
}

static double num_arg(int argc, char **argv, int *i, double lo, double hi) {
    const char *flag = argv[*i], *s = str_arg(argc, argv, i);
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) || v < lo || v > hi)
        die("%s: '%s' is not a number in [%g, %g]", flag, s, lo, hi);
    return v;
}

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *p = NULL;
    long len;
    if (!f) die("cannot read '%s': %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(p = (char *)malloc((size_t)len + 1)) || fread(p, 1, (size_t)len, f) != (size_t)len)
        die("cannot read '%s'", path);
    fclose(f);
    p[len] = '\0';
    *n = (size_t)len;
    return p;
}

/* One line of standard input without its newline (malloc'd), or NULL at the end. */
static char *read_line(size_t *n) {
    size_t cap = 256, len = 0;
    char *s = (char *)malloc(cap);
    int c;
    if (!s) die("out of memory");
    while ((c = getchar()) != EOF && c != '\n') {
        if (len + 1 == cap && !(s = (char *)realloc(s, cap *= 2))) die("out of memory");
        s[len++] = (char)c;
    }
    if (c == EOF && len == 0) { free(s); return NULL; }
    if (len && s[len - 1] == '\r') len--;
    s[len] = '\0';
    *n = len;
    return s;
}

/* The conversation: messages own their text. */
typedef struct chat_log {
    tfm_chat_message *m;
    size_t n, cap;
} chat_log;

static void log_add(chat_log *c, const char *role, const char *text, size_t n) {
    char *copy = (char *)malloc(n + 1);
    if (!copy) die("out of memory");
    memcpy(copy, text, n);
    if (c->n == c->cap && !(c->m = (tfm_chat_message *)realloc(c->m, (c->cap = c->cap ? 2 * c->cap : 16) * sizeof *c->m)))
        die("out of memory");
    c->m[c->n].role = role;
    c->m[c->n].role_bytes = strlen(role);
    c->m[c->n].content = copy;
    c->m[c->n].content_bytes = n;
    c->n++;
}

/* Drops messages [from, from + count). */
static void log_drop(chat_log *c, size_t from, size_t count) {
    size_t i;
    for (i = from; i < from + count; i++) free((void *)c->m[i].content);
    memmove(c->m + from, c->m + from + count, (c->n - from - count) * sizeof *c->m);
    c->n -= count;
}

/* Renders the conversation (add_generation_prompt on) into *text (malloc'd). */
static size_t render(tfm_chat *chat, const tfm_chat_args *base, const chat_log *c, char **text) {
    tfm_chat_args a = *base;
    size_t n = 0;
    tfm_result r;
    a.messages = c->m;
    a.n_messages = c->n;
    a.add_generation_prompt = true;
    if ((r = tfm_chat_render(chat, &a, NULL, 0, &n)) != TFM_OK)
        die("chat template: %s", tfm_chat_last_error(chat));
    if (!(*text = (char *)malloc(n + 1))) die("out of memory");
    if ((r = tfm_chat_render(chat, &a, *text, n, &n)) != TFM_OK) die("chat template: %s", tfm_result_string(r));
    return n;
}

/* Text to ids as Hugging Face does for a rendered chat: no BOS added (the template writes it). */
static int tokenize(const tfm_model *model, const char *text, size_t n, int32_t **ids) {
    size_t n_ids = 0;
    tfm_result r = tfm_model_tokenize(model, text, n, NULL, 0, &n_ids);
    if (r != TFM_OK && r != TFM_ERR_INVALID_ARG) die("tokenize: %s", tfm_result_string(r));
    if (!(*ids = (int32_t *)malloc((n_ids + 1) * sizeof **ids))) die("out of memory");
    if ((r = tfm_model_tokenize(model, text, n, *ids, n_ids, &n_ids)) != TFM_OK) die("tokenize: %s", tfm_result_string(r));
    return (int)n_ids;
}

/* Ids that end a reply: EOS and the end-of-turn markers of common templates that are single
   tokens of this vocabulary. */
static int stop_ids(const tfm_model *model, const char *const *extra, int n_extra, int32_t *out) {
    static const char *const markers[] = {"<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>",
                                          "<|eom_id|>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                          "</s>", "<|endoftext|>", "<|end_of_text|>"};
    tfm_config cfg = tfm_model_config(model);
    int n = 0, j;
    size_t k, n_ids, nb;
    int32_t id[64]; /* room for any marker: no "does not fit" error from the logger */
    const char *bytes;
    if (cfg.eos_id >= 0) out[n++] = cfg.eos_id;
    for (k = 0; k < sizeof markers / sizeof markers[0] + (size_t)n_extra && n < MAX_STOP_IDS; k++) {
        const char *m = k < sizeof markers / sizeof markers[0] ? markers[k] : extra[k - sizeof markers / sizeof markers[0]];
        size_t len = strlen(m);
        if (tfm_model_tokenize(model, m, len, id, 64, &n_ids) != TFM_OK || n_ids != 1 ||
            tfm_model_token_piece(model, id[0], &bytes, &nb) != TFM_OK || nb != len || memcmp(bytes, m, len)) {
            if (k >= sizeof markers / sizeof markers[0]) die("--stop '%s' is not one token of this vocabulary", m);
            continue;
        }
        for (j = 0; j < n && out[j] != id[0]; j++) {}
        if (j == n) out[n++] = id[0];
    }
    return n;
}

/* The chat state: model, session, sampler and the ids the KV cache holds. */
typedef struct chat_state {
    const tfm_model *model;
    tfm_session *session;
    tfm_sampler *sampler;
    int32_t *cache, stop[MAX_STOP_IDS];
    int n_cache, n_ctx, n_stop, n_sample, max_reply;
    int reserve; /* positions a prompt leaves for the reply: min(-n, a quarter of the context) */
} chat_state;

/* Evaluates ids[0..n) reusing the cached prefix; returns how many were new. */
static int eval_prompt(chat_state *s, const int32_t *ids, int n) {
    int k = 0;
    tfm_result r;
    while (k < n && k < s->n_cache && ids[k] == s->cache[k]) k++;
    if (k == n) k = n - 1; /* the last token again, for its logits */
    if ((r = tfm_session_eval(s->session, ids + k, n - k, k, NULL)) != TFM_OK)
        die("eval: %s: %s", tfm_result_string(r), tfm_session_last_error(s->session));
    memcpy(s->cache, ids, (size_t)n * sizeof *ids);
    s->n_cache = n;
    return n - k;
}

/* Writes token id's complete UTF-8 characters (tfm_model_detokenize holds back a partial one). */
static void emit(const tfm_model *model, tfm_utf8_stream *stream, int32_t id, size_t n_bytes) {
    char small[256], *buf = small;
    size_t need = 3 * (n_bytes + 4), n_out = 0; /* held bytes + this token, each possibly U+FFFD */
    if (need > sizeof small && !(buf = (char *)malloc(need))) die("out of memory");
    if (tfm_model_detokenize(model, stream, id, buf, need, &n_out) == TFM_OK) fwrite(buf, 1, n_out, stdout);
    if (buf != small) free(buf);
    fflush(stdout);
}

/* Samples, streams and evaluates a reply after the prompt; its bytes go to *out. */
static size_t reply(chat_state *s, char **out, int *n_gen, const char **stop) {
    tfm_utf8_stream stream = {{0}, 0};
    const float *logits = tfm_session_logits(s->session);
    size_t len = 0, cap = 256, nb, i;
    char *text = (char *)malloc(cap), tail[8];
    const char *bytes;
    int32_t next;
    if (!text) die("out of memory");
    *stop = "-n tokens";
    for (*n_gen = 0; *n_gen < s->max_reply; (*n_gen)++) {
        if (s->n_cache >= s->n_ctx) { *stop = "the context is full"; break; }
        if (tfm_sample(s->sampler, logits, s->n_sample, &next) != TFM_OK) die("sample failed");
        for (i = 0; i < (size_t)s->n_stop && s->stop[i] != next; i++) {}
        if (i < (size_t)s->n_stop) { *stop = "end of turn"; break; }
        if (tfm_model_token_piece(s->model, next, &bytes, &nb) == TFM_OK) {
            while (len + nb + 1 > cap)
                if (!(text = (char *)realloc(text, cap *= 2))) die("out of memory");
            memcpy(text + len, bytes, nb);
            len += nb;
            emit(s->model, &stream, next, nb);
        }
        if (tfm_session_decode(s->session, next, s->n_cache, &logits) != TFM_OK)
            die("decode: %s", tfm_session_last_error(s->session));
        s->cache[s->n_cache++] = next;
    }
    fwrite(tail, 1, tfm_utf8_stream_flush(&stream, tail, sizeof tail), stdout);
    *out = text;
    return len;
}

/* Renders and tokenizes the conversation, dropping its oldest turns after the system prompt
   while the prompt leaves no room for a reply. Returns the prompt's ids, or 0 ids when even
   the last message alone does not fit (the caller drops it). */
static int fit_prompt(chat_state *s, tfm_chat *chat, const tfm_chat_args *base, chat_log *c,
                      size_t first, int32_t **ids) {
    size_t dropped = 0;
    for (;;) {
        char *text;
        size_t n = render(chat, base, c, &text);
        int n_ids = tokenize(s->model, text, n, ids);
        free(text);
        if (n_ids > 0 && n_ids <= s->n_ctx - s->reserve) {
            if (dropped) fprintf(stderr, "[context full: the %zu oldest message(s) were dropped]\n", dropped);
            return n_ids;
        }
        free(*ids);
        *ids = NULL;
        if (n_ids == 0) die("the template rendered an empty prompt");
        if (c->n - first <= 1) return 0;
        log_drop(c, first, 1);
        dropped++;
    }
}

/* One user turn: render, evaluate the new tokens, stream the reply, keep it. */
static void turn(chat_state *s, tfm_chat *chat, const tfm_chat_args *base, chat_log *c, size_t first) {
    int32_t *ids = NULL;
    int n_ids = fit_prompt(s, chat, base, c, first, &ids), n_new, n_gen, i;
    const char *stop;
    char *text;
    size_t n;
    if (n_ids == 0) {
        fprintf(stderr, "[this message is too long for the %d-token context; it was dropped]\n", s->n_ctx);
        log_drop(c, c->n - 1, 1);
        return;
    }
    n_new = eval_prompt(s, ids, n_ids);
    for (i = 0; i < n_ids; i++) tfm_sampler_accept(s->sampler, ids[i]);
    n = reply(s, &text, &n_gen, &stop);
    printf("\n");
    fflush(stdout);
    fprintf(stderr, "[prompt %d tokens, %d new; reply %d tokens; stop: %s; %d of %d positions]\n",
            n_ids, n_new, n_gen, stop, s->n_cache, s->n_ctx);
    log_add(c, "assistant", text, n);
    free(text);
    free(ids);
}

/* The local date and time for strftime_now. */
static tfm_chat_date today(void) {
    tfm_chat_date d;
    time_t now = time(NULL);
    struct tm tm;
    memset(&d, 0, sizeof d);
    if (localtime_r(&now, &tm)) {
        d.year = tm.tm_year + 1900;
        d.month = tm.tm_mon + 1;
        d.day = tm.tm_mday;
        d.hour = tm.tm_hour;
        d.minute = tm.tm_min;
        d.second = tm.tm_sec > 59 ? 59 : tm.tm_sec;
    }
    return d;
}

int main(int argc, char **argv) {
    const char *model_path = DEFAULT_MODEL, *system = NULL, *template_path = NULL, *vars_path = NULL;
    const char *messages_path = NULL, *extra_stop[MAX_STOP_IDS];
    int n_extra_stop = 0, print_prompt = 0, i, n_threads = 1, n_ctx = 0, max_reply = 512;
    tfm_sampler_desc pd;
    memset(&pd, 0, sizeof pd);
    pd.temperature = 0.7f;
    pd.top_k = 40;
    pd.top_p = 0.95f;
    pd.seed = (uint64_t)time(NULL);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); return 0; }
        else if (!strcmp(a, "-m")) model_path = str_arg(argc, argv, &i);
        else if (!strcmp(a, "-s") || !strcmp(a, "--system")) system = str_arg(argc, argv, &i);
        else if (!strcmp(a, "--template")) template_path = str_arg(argc, argv, &i);
        else if (!strcmp(a, "--vars")) vars_path = str_arg(argc, argv, &i);
        else if (!strcmp(a, "--messages")) messages_path = str_arg(argc, argv, &i);
        else if (!strcmp(a, "--stop") && n_extra_stop < MAX_STOP_IDS / 2) extra_stop[n_extra_stop++] = str_arg(argc, argv, &i);
        else if (!strcmp(a, "--print-prompt")) print_prompt = 1;
        else if (!strcmp(a, "-n")) max_reply = (int)num_arg(argc, argv, &i, 1, MAX_COUNT);
        else if (!strcmp(a, "-c")) n_ctx = (int)num_arg(argc, argv, &i, 1, TFM_MAX_CTX);
        else if (!strcmp(a, "--temp")) pd.temperature = (float)num_arg(argc, argv, &i, 0, 1e6);
        else if (!strcmp(a, "--top-k")) pd.top_k = (int)num_arg(argc, argv, &i, 0, MAX_COUNT);
        else if (!strcmp(a, "--top-p")) pd.top_p = (float)num_arg(argc, argv, &i, 1e-9, 1);
        else if (!strcmp(a, "--min-p")) pd.min_p = (float)num_arg(argc, argv, &i, 0, 1);
        else if (!strcmp(a, "--repeat-penalty")) pd.repeat_penalty = (float)num_arg(argc, argv, &i, 0, 1e6);
        else if (!strcmp(a, "--seed")) pd.seed = (uint64_t)num_arg(argc, argv, &i, 0, 9007199254740992.0);
        else if (!strcmp(a, "-t")) n_threads = (int)num_arg(argc, argv, &i, 1, MAX_THREADS);
        else die("unknown argument '%s' (see --help)", a);
    }
    if (print_prompt != (messages_path != NULL)) die("--messages and --print-prompt go together");

    tfm_model_desc md;

    memset(&md, 0, sizeof md);
    md.path = model_path;
    md.logger.log = log_to_stderr;
    tfm_model *model;
    if (tfm_model_open(&md, &model) != TFM_OK) die("cannot open model '%s'", model_path);
    tfm_config cfg = tfm_model_config(model);
    if (cfg.n_tokens == 0) die("'%s' has no tokenizer", model_path);

    /* The template: --template, else the model's. */
    tfm_chat_desc cd;
    memset(&cd, 0, sizeof cd);
    char *template_text = NULL, *vars = NULL;
    size_t n_vars = 0;
    cd.model = model;
    cd.logger.log = log_to_stderr;
    if (template_path) cd.template_text = template_text = read_file(template_path, &cd.template_bytes);
    else if (tfm_model_chat_template(model, &cd.template_text, &cd.template_bytes) != TFM_OK)
        die("'%s' has no chat template: give --template FILE (or convert with tfm-convert --chat-template)", model_path);
    tfm_chat *chat;
    if (tfm_chat_create(&cd, &chat) != TFM_OK) die("the chat template does not parse");
    tfm_chat_args base;
    memset(&base, 0, sizeof base);
    if (vars_path) base.vars_json = vars = read_file(vars_path, &n_vars);
    base.vars_json_bytes = n_vars;
    base.date = today();

    if (print_prompt) { /* the prompt exactly as rendered, and nothing else */
        size_t n_json, n = 0;
        char *json = read_file(messages_path, &n_json), *out;
        base.messages_json = json;
        base.messages_json_bytes = n_json;
        base.add_generation_prompt = true;
        if (tfm_chat_render(chat, &base, NULL, 0, &n) != TFM_OK) die("chat template: %s", tfm_chat_last_error(chat));
        if (!(out = (char *)malloc(n + 1)) || tfm_chat_render(chat, &base, out, n, &n) != TFM_OK) die("render failed");
        fwrite(out, 1, n, stdout);
        free(out);
        free(json);
        tfm_chat_destroy(chat);
        tfm_model_close(model);
        free(template_text);
        free(vars);
        return 0;
    }

    if (cfg.n_layers == 0) die("'%s' has no weights (a vocab-only file?)", model_path);
    tfm_session_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.n_ctx = n_ctx;
    sd.n_threads = n_threads;
    chat_state s;
    memset(&s, 0, sizeof s);
    s.model = model;
    if (tfm_session_create(model, &sd, &s.session) != TFM_OK) die("cannot create a session");
    s.n_ctx = tfm_session_n_ctx(s.session);
    s.n_sample = cfg.n_tokens < cfg.n_vocab ? cfg.n_tokens : cfg.n_vocab;
    s.max_reply = max_reply;
    s.reserve = max_reply < s.n_ctx / 4 ? max_reply : s.n_ctx / 4;
    if (s.reserve < 1) s.reserve = 1;
    s.n_stop = stop_ids(model, extra_stop, n_extra_stop, s.stop);
    if (!(s.cache = (int32_t *)malloc((size_t)s.n_ctx * sizeof *s.cache))) die("out of memory");
    pd.n_vocab = s.n_sample;
    if (tfm_sampler_create(&pd, &s.sampler) != TFM_OK) die("cannot create the sampler");

    chat_log c;
    memset(&c, 0, sizeof c);
    size_t first = 0, n_line;
    char *line;
    if (system) { log_add(&c, "system", system, strlen(system)); first = 1; }
    fprintf(stderr, "tfm-chat: %d-token context, %d stop token(s); /reset, /quit\n", s.n_ctx, s.n_stop);
    while ((line = read_line(&n_line)) != NULL) {
        if (!strcmp(line, "/quit")) { free(line); break; }
        if (!strcmp(line, "/reset")) {
            log_drop(&c, first, c.n - first);
            s.n_cache = 0;
            fprintf(stderr, "[conversation reset]\n");
        } else if (n_line > 0) {
            log_add(&c, "user", line, n_line);
            turn(&s, chat, &base, &c, first);
        }
        free(line);
    }
    log_drop(&c, 0, c.n);
    free(c.m);
    free(s.cache);
    tfm_sampler_destroy(s.sampler);
    tfm_session_destroy(s.session);
    tfm_chat_destroy(chat);
    tfm_model_close(model);
    free(template_text);
    free(vars);
    return 0;
}
