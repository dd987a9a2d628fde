/* test_chat.c - the >>chat section: chat templates against jinja2's output (goldens written by
   tests/gen/make_chat_goldens.py, see tests/data/chat/README.md), one construct at a time
   (tests/data/chat/exprs.txt), then what only tfm.h can be asked: errors with positions and
   raise_exception messages, limits against hostile templates, the two-call pattern, the
   allocator, the JSON inputs and a tokenizer blob that carries a template. */
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "alloc.h"

#define DATA "tests/data/chat/"
#define BOS "<s>"
#define EOS "</s>"

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;
    *n = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = (char *)malloc((size_t)len + 1)) != NULL) {
        if (fread(buf, 1, (size_t)len, f) == (size_t)len) {
            buf[len] = '\0';
            *n = (size_t)len;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

/* Renders template (bos/eos as the goldens) with args; returns the result and, on success, a
   malloc'd prompt in *out. err (may be NULL) receives last_error. */
typedef struct capture { char *buf; size_t cap; } capture;

static void capture_log(void *user, tfm_result r, const char *msg) {
    capture *c = (capture *)user;
    (void)r;
    if (c->buf && c->cap) snprintf(c->buf, c->cap, "%s", msg);
}

static tfm_result render(const char *tmpl, size_t tmpl_bytes, const tfm_chat_args *args, char **out,
                         size_t *n_out, char *err, size_t err_cap) {
    capture cap;
    tfm_chat_desc cd;
    tfm_chat *chat;
    size_t need = 0;
    tfm_result r;
    memset(&cd, 0, sizeof cd);
    cd.template_text = tmpl;
    cd.template_bytes = tmpl_bytes;
    cd.bos_token = BOS;
    cd.bos_token_bytes = strlen(BOS);
    cd.eos_token = EOS;
    cd.eos_token_bytes = strlen(EOS);
    *out = NULL;
    *n_out = 0;
    if (err && err_cap) err[0] = '\0';
    cap.buf = err;
    cap.cap = err_cap;
    cd.logger.log = capture_log; /* create errors reach only the logger */
    cd.logger.user = &cap;
    if ((r = tfm_chat_create(&cd, &chat)) != TFM_OK) return r;
    r = tfm_chat_render(chat, args, NULL, 0, &need);
    if (r == TFM_OK) {
        *out = (char *)malloc(need + 1);
        r = *out ? tfm_chat_render(chat, args, *out, need, n_out) : TFM_ERR_OUT_OF_MEMORY;
    }
    if (err && err_cap) snprintf(err, err_cap, "%s", tfm_chat_last_error(chat));
    tfm_chat_destroy(chat);
    return r;
}

static void fixed_args(tfm_chat_args *a, const char *msgs, size_t n_msgs, const char *vars, size_t n_vars,
                       bool gen) {
    memset(a, 0, sizeof *a);
    a->messages_json = msgs;
    a->messages_json_bytes = n_msgs;
    a->vars_json = vars;
    a->vars_json_bytes = n_vars;
    a->add_generation_prompt = gen;
    a->date.year = 2024;
    a->date.month = 7;
    a->date.day = 26;
}

/* --- goldens: tests/data/chat/golden/index.txt --- */

static int golden_case(const char *tname, const char *cname, int gen, const char *kind) {
    char path[512], err[TFM__CHAT_ERROR_BYTES], *tmpl, *msgs, *vars, *want, *got = NULL;
    size_t nt, nm, nv, nw, ng;
    tfm_chat_args a;
    tfm_result r;
    int ok;
    snprintf(path, sizeof path, DATA "templates/%s.jinja", tname);
    tmpl = read_file(path, &nt);
    snprintf(path, sizeof path, DATA "messages/%s.json", cname);
    msgs = read_file(path, &nm);
    snprintf(path, sizeof path, DATA "messages/%s.vars.json", cname);
    vars = read_file(path, &nv);
    snprintf(path, sizeof path, DATA "golden/%s.%s.%d.txt", tname, cname, gen);
    want = read_file(path, &nw);
    if (!tmpl || !msgs || !want) {
        CHECK_MSG(0, "golden %s.%s.%d: missing files", tname, cname, gen);
        ok = 0;
        goto done;
    }
    fixed_args(&a, msgs, nm, vars, nv, gen != 0);
    r = render(tmpl, nt, &a, &got, &ng, err, sizeof err);
    if (!strcmp(kind, "ok")) ok = r == TFM_OK && ng == nw && memcmp(got, want, nw) == 0;
    else if (!strcmp(kind, "raise")) ok = r == TFM_ERR_TEMPLATE && !strcmp(err, want + 7); /* "ERROR: " */
    else ok = r == TFM_ERR_TEMPLATE;
    CHECK_MSG(ok, "golden %s.%s.%d (%s): result %d, %s", tname, cname, gen, kind, (int)r,
              r == TFM_OK ? "output differs" : err);
done:
    free(tmpl);
    free(msgs);
    free(vars);
    free(want);
    free(got);
    return ok;
}

static void test_goldens(void) {
    size_t n;
    char *index = read_file(DATA "golden/index.txt", &n), *line, *next;
    int total = 0, good = 0;
    CHECK_MSG(index != NULL, DATA "golden/index.txt is missing");
    if (!index) return;
    for (line = index; *line; line = next) {
        char tname[64], cname[64], kind[16], js[16];
        int gen;
        next = strchr(line, '\n');
        next = next ? next + 1 : line + strlen(line);
        if (sscanf(line, "%63s %63s %d %15s %15s", tname, cname, &gen, kind, js) != 5) continue;
        total++;
        good += golden_case(tname, cname, gen, kind);
    }
    printf("chat goldens: %d of %d equal to jinja2's\n", good, total);
    CHECK(total > 200);
    free(index);
}

/* --- exprs.txt: one construct per case --- */

static void test_exprs(void) {
    size_t n, nm;
    char *text = read_file(DATA "exprs.txt", &n), *msgs = read_file(DATA "messages/multi_turn.json", &nm);
    char *p = text, err[TFM__CHAT_ERROR_BYTES];
    int total = 0, good = 0;
    CHECK_MSG(text && msgs, DATA "exprs.txt or messages/multi_turn.json is missing");
    while (p && (p = strstr(p, "#case ")) != NULL) {
        char *name = p + 6, *tmpl = strchr(name, '\n'), *expect, *end, *got;
        size_t ng;
        tfm_chat_args a;
        tfm_result r;
        if (!tmpl) break;
        *tmpl++ = '\0';
        expect = strstr(tmpl, "\n#expect\n");
        end = expect ? strstr(expect + 9, "\n#end\n") : NULL;
        if (!expect || !end) break;
        fixed_args(&a, msgs, nm, NULL, 0, true);
        r = render(tmpl, (size_t)(expect - tmpl), &a, &got, &ng, err, sizeof err);
        total++;
        expect += 9;
        if (r == TFM_OK && ng == (size_t)(end - expect) && memcmp(got, expect, ng) == 0) good++;
        else CHECK_MSG(0, "exprs.txt case %s: %s\n    got:  %.*s\n    want: %.*s", name,
                       r == TFM_OK ? "differs" : err, (int)ng, got ? got : "", (int)(end - expect), expect);
        free(got);
        p = end + 6;
    }
    printf("chat exprs: %d of %d equal to jinja2's\n", good, total);
    CHECK(total >= 50 && good == total);
    free(text);
    free(msgs);
}

/* --- errors, raise_exception, limits --- */

/* Renders a template string with one user message; returns the result, err gets the message. */
static tfm_result try_render(const char *tmpl, char *err, size_t err_cap) {
    static const char msgs[] = "[{\"role\": \"user\", \"content\": \"hi\"}]";
    tfm_chat_args a;
    char *got;
    size_t ng;
    tfm_result r;
    fixed_args(&a, msgs, sizeof msgs - 1, NULL, 0, true);
    r = render(tmpl, strlen(tmpl), &a, &got, &ng, err, err_cap);
    free(got);
    return r;
}

static void expect_error(const char *tmpl, tfm_result want, const char *message_part) {
    char err[TFM__CHAT_ERROR_BYTES];
    tfm_result r = try_render(tmpl, err, sizeof err);
    CHECK_MSG(r == want && strstr(err, message_part) != NULL, "%s: result %d (want %d), error \"%s\" (want \"%s\")",
              tmpl, (int)r, (int)want, err, message_part);
}

static void test_errors(void) {
    char err[TFM__CHAT_ERROR_BYTES];
    /* syntax, with line and column */
    expect_error("{% if x %}", TFM_ERR_TEMPLATE, "'endif' is missing");
    expect_error("a\nb {{ 1 + }}", TFM_ERR_TEMPLATE, "line 2, column 10: unexpected end of print statement");
    expect_error("{{ 'open }}", TFM_ERR_TEMPLATE, "unterminated string");
    expect_error("{# no end", TFM_ERR_TEMPLATE, "missing end of comment tag");
    expect_error("{% raw %}x", TFM_ERR_TEMPLATE, "missing end of raw directive");
    expect_error("{{ x | nosuchfilter }}", TFM_ERR_TEMPLATE, "no filter named 'nosuchfilter'");
    expect_error("{{ x is nosuchtest }}", TFM_ERR_TEMPLATE, "no test named 'nosuchtest'");
    expect_error("{% include 'x' %}", TFM_ERR_TEMPLATE, "unknown or unexpected tag 'include'");
    expect_error("{% endfor %}", TFM_ERR_TEMPLATE, "unknown or unexpected tag 'endfor'");
    expect_error("{% break %}", TFM_ERR_TEMPLATE, "'break' outside a loop");
    expect_error("{{ (1 ] }}", TFM_ERR_TEMPLATE, "unexpected ']'");
    expect_error("{{ '\\x4' }}", TFM_ERR_TEMPLATE, "truncated \\x escape");
    expect_error("{% for x in y recursive %}{% endfor %}", TFM_ERR_TEMPLATE, "recursive loops are not supported");
    expect_error("{{ 99999999999999999999 }}", TFM_ERR_TEMPLATE, "integer too large");
    expect_error("{{ f(a=1, 2) }}", TFM_ERR_TEMPLATE, "positional argument after a keyword argument");
    expect_error("{{ x is defined is defined }}", TFM_ERR_TEMPLATE, "chain multiple tests");
    /* rendering */
    expect_error("{{ raise_exception('Only user and assistant roles!') }}", TFM_ERR_TEMPLATE, "Only user and assistant roles!");
    CHECK(try_render("x{{ raise_exception('exact message') }}", err, sizeof err) == TFM_ERR_TEMPLATE &&
          !strcmp(err, "exact message"));
    expect_error("{{ nothing.attr }}", TFM_ERR_TEMPLATE, "'nothing' is undefined");
    expect_error("{{ messages[0].nope.deeper }}", TFM_ERR_TEMPLATE, "'nope' is undefined");
    expect_error("{{ nothing + 1 }}", TFM_ERR_TEMPLATE, "is undefined");
    expect_error("{{ 1 + 'a' }}", TFM_ERR_TEMPLATE, "unsupported operand type(s) for +: 'int' and 'str'");
    expect_error("{{ 1 // 0 }}", TFM_ERR_TEMPLATE, "division or modulo by zero");
    expect_error("{{ 1 / 0 }}", TFM_ERR_TEMPLATE, "division by zero");
    expect_error("{{ 9223372036854775807 + 1 }}", TFM_ERR_TEMPLATE, "integer overflow");
    expect_error("{{ 3 ** 99 }}", TFM_ERR_TEMPLATE, "integer overflow");
    expect_error("{{ 1 < 'a' }}", TFM_ERR_TEMPLATE, "not supported between");
    expect_error("{{ 1 in 2 }}", TFM_ERR_TEMPLATE, "not iterable");
    expect_error("{{ 1 in 'abc' }}", TFM_ERR_TEMPLATE, "requires string as left operand");
    expect_error("{% for x in 5 %}{% endfor %}", TFM_ERR_TEMPLATE, "'int' object is not iterable");
    expect_error("{% for a, b in [[1]] %}{% endfor %}", TFM_ERR_TEMPLATE, "cannot unpack");
    expect_error("{% set x = 1 %}{% set x.y = 2 %}", TFM_ERR_TEMPLATE, "non-namespace");
    expect_error("{{ 1 | length }}", TFM_ERR_TEMPLATE, "has no len()");
    expect_error("{{ [1] | select | length }}", TFM_ERR_TEMPLATE, "'generator' has no len()");
    expect_error("{{ [1] | select | tojson }}", TFM_ERR_TEMPLATE, "generator is not JSON serializable");
    expect_error("{{ nothing | tojson }}", TFM_ERR_TEMPLATE, "Undefined is not JSON serializable");
    expect_error("{{ 'x'.split('') }}", TFM_ERR_TEMPLATE, "empty separator");
    expect_error("{{ [1, 2][::0] }}", TFM_ERR_TEMPLATE, "slice step cannot be zero");
    expect_error("{{ 'a' | replace('a') }}", TFM_ERR_TEMPLATE, "replace needs old and new");
    expect_error("{{ 'x' | trim(1, 2) }}", TFM_ERR_TEMPLATE, "takes at most 1 argument");
    expect_error("{{ 'x' | trim(nope=1) }}", TFM_ERR_TEMPLATE, "unexpected keyword argument 'nope'");
    expect_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", TFM_ERR_TEMPLATE, "takes not more than 1");
    expect_error("{% macro m(a) %}{% endmacro %}{{ m(b=2) }}", TFM_ERR_TEMPLATE, "has no parameter 'b'");
    expect_error("{{ 5() }}", TFM_ERR_TEMPLATE, "'int' object is not callable");
    expect_error("{{ '%q' % 1 }}", TFM_ERR_TEMPLATE, "only %s, %r, %d and %i");
    expect_error("{{ '%s %s' % 1 }}", TFM_ERR_TEMPLATE, "not enough arguments");
    expect_error("{{ strftime_now('%Q') }}", TFM_ERR_TEMPLATE, "%Q is not supported");
    expect_error("{{ [1] | last if false else ([1] | select | last) }}", TFM_ERR_TEMPLATE, "not reversible");
    expect_error("{{ {'a': 1} | tojson(sort_keys=true) }}{{ {1: 1, 'a': 2} | tojson(sort_keys=true) }}",
                 TFM_ERR_TEMPLATE, "sort_keys needs comparable keys");
}

/* Templates built to exhaust something: each must fail cleanly, fast. */
static void test_limits(void) {
    char *deep = (char *)malloc(64 * 1024), err[TFM__CHAT_ERROR_BYTES];
    size_t i, k;
    /* nesting: brackets, unary chains, blocks, macro recursion, values */
    for (k = 0; k < 4; k++) {
        static const char *const open[] = {"(", "-", "[", "not "};
        char *at = deep + 3;
        strcpy(deep, "{{ ");
        for (i = 0; i < 5000; i++, at += strlen(open[k])) strcpy(at, open[k]);
        strcpy(at, "1 }}");
        CHECK_MSG(try_render(deep, err, sizeof err) == TFM_ERR_TEMPLATE, "deep %s: %s", open[k], err);
    }
    deep[0] = '\0';
    for (i = 0; i < 2000; i++) strcat(deep, "{% if 1 %}");
    CHECK(try_render(deep, err, sizeof err) == TFM_ERR_TEMPLATE && strstr(err, "nested too deeply"));
    expect_error("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", TFM_ERR_TEMPLATE, "nested too deeply");
    expect_error("{% set ns = namespace(x=[]) %}{% for i in range(3000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
                 TFM_ERR_TEMPLATE, "nested too deeply");
    /* time: loops and work bounded by TFM__CHAT_MAX_STEPS */
    expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", TFM_ERR_TEMPLATE,
                 "max_memory_bytes"); /* every iteration has a frame: memory runs out first */
    strcpy(deep, "{% for i in range(2000) %}{{ 1");
    for (i = 0; i < 10000; i++) strcat(deep + 20 + i * 5, " == 1"); /* one chained compare */
    strcat(deep, " }}{% endfor %}");
    CHECK_MSG(try_render(deep, err, sizeof err) == TFM_ERR_TEMPLATE && strstr(err, "steps"), "steps: %s", err);
    expect_error("{{ range(1000000) }}", TFM_ERR_TEMPLATE, "range too big");
    /* memory and output */
    expect_error("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                 TFM_ERR_TEMPLATE, "max_memory_bytes");
    expect_error("{% set s = 'y' * 1000000 %}{% for i in range(20) %}{{ s }}{% endfor %}", TFM_ERR_TEMPLATE,
                 "max_output_bytes");
    expect_error("{{ 'x' * 9000000000000000000 }}", TFM_ERR_TEMPLATE, "");
    free(deep);
}

/* A desc whose limits are small: max_output_bytes and max_memory_bytes are honoured. */
static void test_desc_limits(void) {
    static const char tmpl[] = "{% for m in messages %}{{ m.content }}{% endfor %}";
    static const char msgs[] = "[{\"role\": \"user\", \"content\": \"0123456789\"}]";
    tfm_chat_desc cd;
    tfm_chat_args a;
    tfm_chat *chat = NULL;
    size_t n = 0;
    char out[16];
    memset(&cd, 0, sizeof cd);
    cd.template_text = tmpl;
    cd.template_bytes = sizeof tmpl - 1;
    cd.max_output_bytes = 9;
    CHECK(tfm_chat_create(&cd, &chat) == TFM_OK);
    fixed_args(&a, msgs, sizeof msgs - 1, NULL, 0, false);
    CHECK(chat && tfm_chat_render(chat, &a, NULL, 0, &n) == TFM_ERR_TEMPLATE &&
          strstr(tfm_chat_last_error(chat), "max_output_bytes"));
    tfm_chat_destroy(chat);
    cd.max_output_bytes = 10;
    CHECK(tfm_chat_create(&cd, &chat) == TFM_OK);
    /* the two-call pattern: NULL asks the size, a short buffer is INVALID_ARG with the size */
    CHECK(chat && tfm_chat_render(chat, &a, NULL, 0, &n) == TFM_OK && n == 10);
    n = 0;
    CHECK(chat && tfm_chat_render(chat, &a, out, 9, &n) == TFM_ERR_INVALID_ARG && n == 10);
    CHECK(chat && tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_OK && n == 10 && !memcmp(out, "0123456789", 10));
    CHECK(chat && tfm_chat_last_error(chat)[0] == '\0');
    tfm_chat_destroy(chat);
    cd.max_memory_bytes = 1000; /* below one arena chunk: nothing fits */
    CHECK(tfm_chat_create(&cd, &chat) == TFM_ERR_TEMPLATE && chat == NULL);
}

/* Every allocation of a create + render of a real-sized template fails in turn: each gives
   OUT_OF_MEMORY (or succeeds) and leaves nothing behind. */
static void test_allocation(void) {
    size_t nt, nm, n = 0;
    char *tmpl = read_file(DATA "templates/kitchen.jinja", &nt), *msgs = read_file(DATA "messages/tool_calls.json", &nm);
    test_alloc c;
    tfm_chat_desc cd;
    tfm_chat_args a;
    tfm_chat *chat;
    long k, total;
    int clean = 1, ooms = 0;
    tfm_result r;
    if (!tmpl || !msgs) { CHECK(0); free(tmpl); free(msgs); return; }
    memset(&cd, 0, sizeof cd);
    cd.template_text = tmpl;
    cd.template_bytes = nt;
    cd.allocator = test_allocator(&c);
    fixed_args(&a, msgs, nm, NULL, 0, true);
    memset(&c, 0, sizeof c);
    CHECK(tfm_chat_create(&cd, &chat) == TFM_OK);
    CHECK(tfm_chat_render(chat, &a, NULL, 0, &n) == TFM_OK && n > 1000);
    tfm_chat_destroy(chat);
    total = c.n_alloc;
    CHECK(c.live == 0 && c.live_bytes == 0 && total > 2);
    for (k = 1; k <= total; k++) {
        memset(&c, 0, sizeof c);
        c.fail_at = k;
        r = tfm_chat_create(&cd, &chat);
        if (r == TFM_OK) {
            r = tfm_chat_render(chat, &a, NULL, 0, &n);
            tfm_chat_destroy(chat);
        } else {
            CHECK(chat == NULL);
        }
        ooms += r == TFM_ERR_OUT_OF_MEMORY;
        if (r != TFM_ERR_OUT_OF_MEMORY || c.live != 0) clean = 0;
    }
    printf("chat allocation: %ld allocations, each failing in turn gives OUT_OF_MEMORY and no leak: %s\n",
           total, clean ? "yes" : "NO");
    CHECK(clean && ooms == total);
    free(tmpl);
    free(msgs);
}

/* Argument checks, the messages array, dates, JSON inputs. */
static void test_api(void) {
    static const char tmpl[] = "{% for m in messages %}[{{ m.role }}:{{ m.content }}:{{ m.content is none }}]{% endfor %}"
                               "{{ extra | default('') }}{{ strftime_now('%d.%m.%Y') if strftime_now is defined else 'no date' }}";
    tfm_chat_desc cd;
    tfm_chat_args a;
    tfm_chat *chat = NULL;
    tfm_chat_message m[2];
    char out[256];
    size_t n = 0;
    memset(&cd, 0, sizeof cd);
    memset(&a, 0, sizeof a);
    CHECK(tfm_chat_create(NULL, &chat) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_chat_create(&cd, &chat) == TFM_ERR_INVALID_ARG && chat == NULL); /* no template */
    cd.template_text = tmpl;
    cd.template_bytes = sizeof tmpl - 1;
    cd.allocator.alloc = NULL;
    cd.allocator.free = test_free_fn;
    CHECK(tfm_chat_create(&cd, &chat) == TFM_ERR_INVALID_ARG);
    cd.allocator.free = NULL;
    CHECK(tfm_chat_create(&cd, &chat) == TFM_OK && chat != NULL);
    if (!chat) return;
    m[0].role = "user"; m[0].role_bytes = 4; m[0].content = "a\0b"; m[0].content_bytes = 3;
    m[1].role = "assistant"; m[1].role_bytes = 9; m[1].content = NULL; m[1].content_bytes = 0;
    a.messages = m;
    a.n_messages = 2;
    CHECK(tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_OK &&
          n == sizeof "[user:a\0b:False][assistant:None:True]no date" - 1 &&
          !memcmp(out, "[user:a\0b:False][assistant:None:True]no date", n));
    a.date.year = 2025; a.date.month = 2; a.date.day = 3;
    CHECK(tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_OK &&
          !memcmp(out + n - 10, "03.02.2025", 10));
    a.date.month = 13;
    CHECK(tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_ERR_INVALID_ARG);
    a.date.year = 0;
    a.vars_json = "{\"extra\": \"E\", \"messages\": []}"; /* vars may override anything */
    a.vars_json_bytes = strlen(a.vars_json);
    CHECK(tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_OK && n == 8 && !memcmp(out, "Eno date", 8));
    a.vars_json = "[1]";
    a.vars_json_bytes = 3;
    CHECK(tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_ERR_TEMPLATE && strstr(tfm_chat_last_error(chat), "not an object"));
    a.vars_json = NULL;
    a.messages_json = "[{\"role\": \"u\\u00e9\\ud83d\\ude00\", \"content\": 1.5e3}, {\"role\": \"x\", \"content\": [true, null]}]";
    a.messages_json_bytes = strlen(a.messages_json);
    CHECK(tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_OK &&
          !memcmp(out, "[u\xc3\xa9\xf0\x9f\x98\x80:1500.0:False][x:[True, None]:False]", n - 7));
    {
        static const char *const bad[] = {"", "[", "[1,]", "{}", "[\"\\q\"]", "[\"\x01\"]", "[1] 2", "[tru]",
                                          "[\"unterminated]", "[{\"a\" 1}]"};
        size_t i;
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            a.messages_json = bad[i];
            a.messages_json_bytes = strlen(bad[i]);
            CHECK_MSG(tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_ERR_TEMPLATE &&
                      strstr(tfm_chat_last_error(chat), "messages_json"), "bad JSON %s", bad[i]);
        }
    }
    CHECK(tfm_chat_render(NULL, &a, out, sizeof out, &n) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_chat_render(chat, NULL, out, sizeof out, &n) == TFM_ERR_INVALID_ARG);
    CHECK(tfm_chat_render(chat, &a, out, sizeof out, NULL) == TFM_ERR_INVALID_ARG);
    CHECK(!strcmp(tfm_result_string(TFM_ERR_TEMPLATE), "chat template error"));
    CHECK(tfm_chat_last_error(NULL)[0] == '\0');
    tfm_chat_destroy(chat);
    tfm_chat_destroy(NULL);
}

/* --- the template in a .tfm file: a vocab-only file made here --- */

static void put32(unsigned char *p, size_t at, uint32_t v) {
    p[at] = (unsigned char)v; p[at + 1] = (unsigned char)(v >> 8);
    p[at + 2] = (unsigned char)(v >> 16); p[at + 3] = (unsigned char)(v >> 24);
}

/* A 3-token tokenizer blob (<s>, </s>, "a") whose chat section holds tmpl, bos and eos. */
static unsigned char *chat_blob(const char *tmpl, const char *bos, const char *eos, size_t *n) {
    static const char *const tok[] = {"<s>", "</s>", "a"};
    size_t nt = strlen(tmpl), nb = strlen(bos), ne = strlen(eos), text = 3 + 4 + 1, at, i, off = 0;
    size_t offsets = 64, scores = offsets + 4 * 4, attrs = scores + 4 * 3, text_at = (attrs + 3 + 3) & ~(size_t)3;
    unsigned char *b;
    *n = text_at + text + nt + nb + ne;
    b = (unsigned char *)calloc(1, *n);
    if (!b) return NULL;
    put32(b, 0, TFM_TOKENIZER_SPM);
    put32(b, 4, 3);
    put32(b, 20, 0);           /* bos */
    put32(b, 24, 1);           /* eos */
    put32(b, 28, 0xFFFFFFFFu); /* unk -1 */
    put32(b, 32, 0xFFFFFFFFu); /* pad -1 */
    put32(b, 36, (uint32_t)text);
    put32(b, 40, (uint32_t)nt);
    put32(b, 44, (uint32_t)nb);
    put32(b, 48, (uint32_t)ne);
    for (i = 0; i < 3; i++) {
        put32(b, offsets + 4 * i, (uint32_t)off);
        memcpy(b + text_at + off, tok[i], strlen(tok[i]));
        off += strlen(tok[i]);
        b[attrs + i] = i < 2 ? (TFM_TOKATTR_SPECIAL | TFM_TOKATTR_ADDED) : 0;
    }
    put32(b, offsets + 12, (uint32_t)off);
    at = text_at + text;
    memcpy(b + at, tmpl, nt);
    memcpy(b + at + nt, bos, nb);
    memcpy(b + at + nt + nb, eos, ne);
    return b;
}

static void log_detail(void *user, tfm_result r, const char *msg) {
    (void)user;
    (void)r;
    if (getenv("CHAT_TEST_VERBOSE")) fprintf(stderr, "    log: %s\n", msg);
}

static tfm_result open_with_blob(const unsigned char *blob, size_t n, unsigned char **file, tfm_model **m) {
    tfm_model_desc d;
    *file = (unsigned char *)calloc(1, 256 + n);
    memcpy(*file, "TFMODEL\0", 8);
    put32(*file, 8, 1);
    put32(*file, 12, 256);
    put32(*file, 88, 256);
    put32(*file, 96, 256);
    put32(*file, 104, (uint32_t)n);
    memcpy(*file + 256, blob, n);
    memset(&d, 0, sizeof d);
    d.data = *file;
    d.data_bytes = 256 + n;
    d.logger.log = log_detail;
    return tfm_model_open(&d, m);
}

static void test_model_template(void) {
    static const char tmpl[] = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}";
    size_t n, nbytes = 0;
    unsigned char *blob = chat_blob(tmpl, "<s>", "</s>", &n), *file = NULL;
    tfm_model *m = NULL;
    tfm_chat_desc cd;
    tfm_chat *chat = NULL;
    tfm_chat_message msg;
    tfm_chat_args a;
    const char *text = NULL;
    char out[64];
    CHECK(blob && open_with_blob(blob, n, &file, &m) == TFM_OK && m);
    if (!m) { free(blob); free(file); return; }
    CHECK(tfm_model_chat_template(m, &text, &nbytes) == TFM_OK && nbytes == sizeof tmpl - 1 && !memcmp(text, tmpl, nbytes));
    CHECK(tfm_model_chat_template(NULL, &text, &nbytes) == TFM_ERR_INVALID_ARG);
    memset(&cd, 0, sizeof cd);
    cd.model = m;
    CHECK(tfm_chat_create(&cd, &chat) == TFM_OK);
    msg.role = "user"; msg.role_bytes = 4; msg.content = "hi"; msg.content_bytes = 2;
    memset(&a, 0, sizeof a);
    a.messages = &msg;
    a.n_messages = 1;
    CHECK(chat && tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_OK && n == 9 && !memcmp(out, "<s>hi</s>", 9));
    tfm_chat_destroy(chat);
    cd.eos_token = "[E]"; /* the desc overrides the file */
    cd.eos_token_bytes = 3;
    CHECK(tfm_chat_create(&cd, &chat) == TFM_OK);
    CHECK(chat && tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_OK && n == 8 && !memcmp(out, "<s>hi[E]", 8));
    tfm_chat_destroy(chat);
    tfm_model_close(m);
    free(file);
    free(blob);
    /* a file without a template: UNSUPPORTED; lengths past the blob: CORRUPT */
    blob = chat_blob("", "", "", &n);
    CHECK(blob && open_with_blob(blob, n, &file, &m) == TFM_OK);
    CHECK(m && tfm_model_chat_template(m, &text, &nbytes) == TFM_ERR_UNSUPPORTED && text == NULL);
    cd.model = m;
    cd.template_text = tmpl; /* the desc's template with the file's (absent) tokens */
    cd.template_bytes = sizeof tmpl - 1;
    CHECK(m && tfm_chat_create(&cd, &chat) == TFM_OK);
    CHECK(chat && tfm_chat_render(chat, &a, out, sizeof out, &n) == TFM_OK && n == 5 && !memcmp(out, "hi[E]", 5));
    tfm_chat_destroy(chat);
    cd.template_text = NULL;
    CHECK(m && tfm_chat_create(&cd, &chat) == TFM_ERR_UNSUPPORTED && chat == NULL);
    tfm_model_close(m);
    free(file);
    m = NULL;
    put32(blob, 44, 5);
    CHECK(open_with_blob(blob, n, &file, &m) == TFM_ERR_CORRUPT && m == NULL);
    free(file);
    put32(blob, 44, 0);
    blob[52] = 1; /* reserved */
    CHECK(open_with_blob(blob, n, &file, &m) == TFM_ERR_CORRUPT && m == NULL);
    free(file);
    free(blob);
}

/* --- hostile templates: mutations of the real-shaped ones never crash or hang --- */

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

static void test_mutations(void) {
    static const char *const names[] = {"chatml", "headers", "inst", "kitchen", "reasoning", "think", "turns"};
    static const char alphabet[] = "{}%#-+()[]'\".|~*,=: \nifelseforendsetmacro0123456789abc\\";
    size_t nm, i, k, n_ok = 0, n_err = 0;
    char *msgs = read_file(DATA "messages/tool_calls.json", &nm), err[TFM__CHAT_ERROR_BYTES];
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    tfm_chat_args a;
    CHECK(msgs != NULL);
    fixed_args(&a, msgs, nm, NULL, 0, true);
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[256], *src, *got;
        size_t n, ng;
        snprintf(path, sizeof path, DATA "templates/%s.jinja", names[i]);
        if (!(src = read_file(path, &n)) || n == 0) { CHECK(0); free(src); continue; }
        for (k = 0; k < 300; k++) {
            char *t = (char *)malloc(n + 8);
            size_t j, edits = 1 + rng_next(&seed) % 4, len = n;
            tfm_result r;
            memcpy(t, src, n);
            for (j = 0; j < edits; j++) {
                size_t at = (size_t)(rng_next(&seed) % len), op = rng_next(&seed) % 3;
                if (op == 0) t[at] = alphabet[rng_next(&seed) % (sizeof alphabet - 1)];
                else if (op == 1 && len > 1) { memmove(t + at, t + at + 1, len - at - 1); len--; }
                else t[at] = (char)(rng_next(&seed) & 0xFF);
            }
            r = render(t, len, &a, &got, &ng, err, sizeof err);
            CHECK_MSG(r == TFM_OK || r == TFM_ERR_TEMPLATE, "mutation of %s: result %d", names[i], (int)r);
            if (r == TFM_OK) n_ok++;
            else n_err++;
            free(got);
            free(t);
        }
        free(src);
    }
    printf("chat mutations: %zu rendered, %zu rejected with an error, none crashed\n", n_ok, n_err);
    free(msgs);
}

int main(void) {
    test_goldens();
    test_exprs();
    test_errors();
    test_limits();
    test_desc_limits();
    test_api();
    test_allocation();
    test_model_template();
    test_mutations();
    return check_summary("test_chat");
}
