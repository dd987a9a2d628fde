/* npc.c - two characters talk inside a game loop that gives the model a few milliseconds a frame.

   The system prompt is evaluated once and copied into both characters' sessions; their replies
   are generated side by side, one pass over the weights per token for both
   (tfm_session_step_batch), in steps that never spend more than the budget; a conversation is
   saved (session and sampler) and restored into a new session, which says the same. Prints the
   text and worst_step_ms, the longest time any frame spent in the model.

   cc -std=c99 -O2 -I. examples/npc.c -o npc -lm
   ./npc [MODEL.tfm] [--budget-ms B]        (default build/demo.tfm, 4 ms)                */
#define _POSIX_C_SOURCE 199309L /* clock_gettime, for the frame timer */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_REPLY 24 /* tokens per reply at most */

typedef struct npc {
    const char *name;
    tfm_session *s;
    tfm_sampler *smp;
    tfm_utf8_stream utf8;
    tfm_stop_stream stop; /* a reply ends at a newline */
    char text[1024];
    size_t n_text;
} npc;

static tfm_model *model;
static double worst_ms, worst_cpu_ms; /* wall clock; CPU time (less when the OS ran others) */

/* Every result is checked: the code's name and the session's detail line. */
static void check(tfm_result r, const tfm_session *s) {
    if (r == TFM_OK) return;
    fprintf(stderr, "npc: %s: %s\n", tfm_result_string(r), s ? tfm_session_last_error(s) : "");
    exit(1);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Each sampled token: its text through the stop string; false (end the reply) at a newline. */
static bool on_token(void *user, int32_t token) {
    npc *c = (npc *)user;
    tfm_text newline = {"\n", 1};
    char piece[64], out[128];
    size_t n_piece = 0, n_out = 0;
    if (tfm_model_detokenize(model, &c->utf8, token, piece, sizeof piece, &n_piece) != TFM_OK) return false;
    tfm_stop_stream_feed(&c->stop, &newline, 1, piece, n_piece, out, sizeof out, &n_out);
    if (c->n_text + n_out < sizeof c->text) memcpy(c->text + c->n_text, out, n_out), c->n_text += n_out;
    return !c->stop.stopped;
}

/* Start each character's reply: its name after the conversation so far, then up to N_REPLY tokens. */
static void start_reply(npc *c, int32_t *ids, size_t cap) {
    char line[64];
    size_t n = 0;
    tfm_job_desc job;
    snprintf(line, sizeof line, "\n%s:", c->name);
    tfm_model_tokenize(model, line, strlen(line), ids, cap, &n);
    memset(&job, 0, sizeof job);
    job.tokens = ids; job.n_tokens = n; job.n_generate = N_REPLY; job.sampler = c->smp;
    job.on_token = on_token; job.token_user = c;
    c->n_text = 0;
    memset(&c->stop, 0, sizeof c->stop);
    memset(&c->utf8, 0, sizeof c->utf8);
    check(tfm_session_start(c->s, &job), c->s);
}

/* The game loop: one batched step per frame within the budget, until every job is done. */
static int run_frames(tfm_session **s, int n, int budget_us) {
    tfm_step_info info[2];
    int frames = 0, running = 1, i;
    while (running) {
        double t0 = now_ms(), c0 = (double)clock(), dt, cpu;
        check(tfm_session_step_batch(s, n, 0, budget_us, info), s[0]);
        dt = now_ms() - t0;
        cpu = ((double)clock() - c0) * 1e3 / CLOCKS_PER_SEC;
        if (dt > worst_ms) worst_ms = dt;
        if (cpu > worst_cpu_ms) worst_cpu_ms = cpu;
        for (i = 0, running = 0; i < n; i++) running |= info[i].status == TFM_JOB_RUNNING;
        frames++; /* ... the rest of a 16.7 ms frame: the game's own work ... */
    }
    return frames;
}

/* Save a character's session and sampler to bytes (a save game) and load them into a new one. */
static npc restore(const npc *from, const tfm_session_desc *sd, const tfm_sampler_desc *pd, unsigned char *buf,
                   size_t cap) {
    npc to = *from;
    size_t n_state = 0, n_smp = 0;
    check(tfm_session_save(from->s, buf, cap, &n_state), from->s);
    check(tfm_sampler_save(from->smp, buf + n_state, cap - n_state, &n_smp), NULL);
    check(tfm_session_create(model, sd, &to.s), NULL);
    check(tfm_sampler_create(pd, &to.smp), NULL);
    check(tfm_session_load(to.s, buf, n_state), to.s);
    check(tfm_sampler_load(to.smp, buf + n_state, n_smp), NULL);
    return to;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 && argv[1][0] != '-' ? argv[1] : "build/demo.tfm";
    const char *sys = "And the two went on their way, and they talked together.";
    int budget_us = 4000, frames = 0, i;
    tfm_model_desc md;
    tfm_session_desc sd;
    tfm_sampler_desc pd;
    tfm_job_desc job;
    tfm_session *shared = NULL, *both[2];
    npc c[2], back;
    int32_t ids[256];
    static unsigned char save[1 << 24]; /* the save game */
    size_t n = 0;
    double t0;
    for (i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--budget-ms")) budget_us = (int)(atof(argv[i + 1]) * 1000.0);
    memset(&md, 0, sizeof md); memset(&sd, 0, sizeof sd); memset(&pd, 0, sizeof pd); memset(c, 0, sizeof c);
    md.path = path;
    if (tfm_model_open(&md, &model) != TFM_OK || tfm_model_config(model).n_tokens == 0) {
        fprintf(stderr, "npc: cannot open %s (or it has no tokenizer)\n", path);
        return 1;
    }
    sd.n_ctx = 256;
    sd.n_batch = 16;
    pd.n_vocab = tfm_model_config(model).n_tokens; pd.temperature = 0.8f; pd.top_k = 40; pd.repeat_penalty = 1.1f;
    check(tfm_session_create(model, &sd, &shared), NULL);
    check(tfm_model_tokenize(model, sys, strlen(sys), ids, 256, &n), NULL);
    memset(&job, 0, sizeof job);
    job.tokens = ids; job.n_tokens = n;
    check(tfm_session_start(shared, &job), shared); /* the system prompt: evaluated once, in frames */
    frames += run_frames(&shared, 1, budget_us);
    for (i = 0; i < 2; i++) {
        c[i].name = i ? "Bob" : "Alice";
        pd.seed = (uint64_t)i + 1;
        check(tfm_session_create(model, &sd, &c[i].s), NULL);
        check(tfm_sampler_create(&pd, &c[i].smp), NULL);
        t0 = now_ms();
        check(tfm_session_copy(c[i].s, shared, tfm_session_n_past(shared)), c[i].s); /* computed once, copied */
        if (now_ms() - t0 > worst_ms) worst_ms = now_ms() - t0;
        both[i] = c[i].s;
        start_reply(&c[i], ids, 256);
    }
    frames += run_frames(both, 2, budget_us); /* both replies at once: one pass per token for the two */
    for (i = 0; i < 2; i++) printf("%s:%.*s\n", c[i].name, (int)c[i].n_text, c[i].text);
    t0 = now_ms();
    back = restore(&c[0], &sd, &pd, save, sizeof save); /* Alice saved here... */
    printf("saved Alice: %zu bytes, %.2f ms to save and load\n", tfm_session_save(c[0].s, NULL, 0, &n) == TFM_OK ? n : 0,
           now_ms() - t0);
    start_reply(&c[0], ids, 256); /* ...talks on... */
    frames += run_frames(&c[0].s, 1, budget_us);
    start_reply(&back, ids, 256); /* ...and, restored from the save, says the same */
    frames += run_frames(&back.s, 1, budget_us);
    printf("Alice:%.*s\nAlice, restored:%.*s\n", (int)c[0].n_text, c[0].text, (int)back.n_text, back.text);
    printf("restored_same=%d frames=%d budget_ms=%.1f worst_step_ms=%.2f worst_step_cpu_ms=%.2f\n",
           c[0].n_text == back.n_text && !memcmp(c[0].text, back.text, back.n_text), frames, budget_us / 1000.0, worst_ms,
           worst_cpu_ms);
    for (i = 0; i < 2; i++) { tfm_sampler_destroy(c[i].smp); tfm_session_destroy(c[i].s); }
    tfm_sampler_destroy(back.smp); tfm_session_destroy(back.s); tfm_session_destroy(shared);
    tfm_model_close(model);
    return 0;
}
