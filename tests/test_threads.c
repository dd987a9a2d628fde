/* test_threads.c - threads around the library: what an engine does to it.
   - many sessions on one model, each on its own host thread, host threads created and
     destroyed in rounds (the pattern that crashed clang's libomp while eval used OpenMP
     tasks), each session with an OpenMP team of 2 where the build has OpenMP: every result
     equal bit for bit to one thread's;
   - malloc calls during evals counted for the whole process (the OpenMP runtime included,
     through glibc's __libc_malloc; skipped under sanitizers and off glibc): none per token
     once a thread has run its first eval, with 1 thread, an OpenMP team and parallel_for;
   - the thread cap: n_threads 257 refused, 1 << 20 refused (libgomp exited the process when
     it could not start that many).
   make test runs it as built by $(CC); make tsan builds it with -fsanitize=thread for gcc
   and clang, each with -fopenmp; make thread-check runs a clang -fopenmp (libomp) build. */
#define _POSIX_C_SOURCE 200809L
#define TFM_IMPLEMENTATION
#include "tfm.h"
#include "check.h"
#include "tfm_writer.h"
#include "tiny_model.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <dirent.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define THREADS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define THREADS_SANITIZED 1
#endif
#endif

/* ---- counting every malloc of the process (glibc) ------------------------------------------ */

#if defined(__GLIBC__) && !defined(THREADS_SANITIZED)
#define COUNT_MALLOC 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
void *malloc(size_t n);
void *calloc(size_t n, size_t m);
void *realloc(void *p, size_t n);
void *memalign(size_t align, size_t n);
void *aligned_alloc(size_t align, size_t n);
int posix_memalign(void **out, size_t align, size_t n);
void free(void *p);

static int g_counting, g_mallocs; /* atomics */
static void counted(void) {
    if (__atomic_load_n(&g_counting, __ATOMIC_RELAXED)) __atomic_fetch_add(&g_mallocs, 1, __ATOMIC_RELAXED);
}
void *malloc(size_t n) { counted(); return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { counted(); return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { counted(); return __libc_realloc(p, n); }
void *memalign(size_t align, size_t n) { counted(); return __libc_memalign(align, n); }
void *aligned_alloc(size_t align, size_t n) { counted(); return __libc_memalign(align, n); }
int posix_memalign(void **out, size_t align, size_t n) {
    counted();
    *out = __libc_memalign(align, n);
    return *out ? 0 : 12; /* ENOMEM */
}
void free(void *p) { __libc_free(p); }
#endif

/* ---- the model and the reference ------------------------------------------------------------ */

enum { N_TOK = 24, N_VOCAB = 96, HOST_THREADS = 4, ROUNDS = 12 };

static tfm_model *g_model;
static float g_ref[N_TOK * N_VOCAB]; /* logits of every position, one thread */
static int32_t g_tok[N_TOK];

static int eval_all(const tfm_session_desc *sd, float *out) {
    tfm_session *s = NULL;
    int ok = tfm_session_create(g_model, sd, &s) == TFM_OK && tfm_session_eval(s, g_tok, N_TOK, 0, out) == TFM_OK;
    tfm_session_destroy(s);
    return ok;
}

/* ---- host threads come and go, each with its own session ----------------------------------- */

typedef struct host_job {
    int n_threads, ok;
    tfm_parallel_for_fn parallel_for;
} host_job;

/* A host's parallel_for: the odd tasks on a thread of its own, the even ones here. */
typedef struct pf_half { int n_tasks; tfm_task_fn task; void *ctx; } pf_half;
static void *pf_odd(void *arg) {
    pf_half *p = (pf_half *)arg;
    int i;
    for (i = 1; i < p->n_tasks; i += 2) p->task(p->ctx, i);
    return NULL;
}
static void pf_pthread(void *user, int n_tasks, tfm_task_fn task, void *ctx) {
    pthread_t th;
    pf_half p;
    int i, started;
    (void)user;
    p.n_tasks = n_tasks; p.task = task; p.ctx = ctx;
    started = pthread_create(&th, NULL, pf_odd, &p) == 0;
    for (i = 0; i < n_tasks; i += started ? 2 : 1) task(ctx, i);
    if (started) pthread_join(th, NULL);
}

static void *host_run(void *arg) {
    host_job *j = (host_job *)arg;
    tfm_session_desc sd;
    float *mine = (float *)malloc(sizeof g_ref);
    int k;
    memset(&sd, 0, sizeof sd);
    sd.n_threads = j->n_threads;
    sd.parallel_for = j->parallel_for;
    j->ok = mine != NULL;
    for (k = 0; k < 2 && j->ok; k++) { /* two sessions, one after the other, on this thread */
        memset(mine, 0, sizeof g_ref);
        j->ok = eval_all(&sd, mine) && memcmp(mine, g_ref, sizeof g_ref) == 0;
    }
    free(mine);
    return NULL;
}

static void test_host_churn(void) {
    int round, i, bad = 0, ran = 0;
    for (round = 0; round < ROUNDS; round++) {
        pthread_t th[HOST_THREADS];
        host_job job[HOST_THREADS];
        int started[HOST_THREADS];
        for (i = 0; i < HOST_THREADS; i++) {
            job[i].n_threads = 1 + (round + i) % 3; /* 1, 2 or 3 threads per session */
            job[i].parallel_for = (round + i) % 4 == 3 ? pf_pthread : NULL; /* or the host's threads */
            job[i].ok = 0;
            started[i] = pthread_create(&th[i], NULL, host_run, &job[i]) == 0;
        }
        for (i = 0; i < HOST_THREADS; i++) {
            if (!started[i]) continue;
            pthread_join(th[i], NULL);
            ran++;
            bad += !job[i].ok;
        }
    }
    printf("host threads: %d rounds of %d, %d sessions (1-3 threads, a quarter on a parallel_for): %d differ or failed\n", ROUNDS,
           HOST_THREADS, ran, bad);
    CHECK(ran == ROUNDS * HOST_THREADS && bad == 0);
}

/* ---- allocations per eval -------------------------------------------------------------------- */

#ifdef COUNT_MALLOC
static void pf_serial(void *user, int n_tasks, tfm_task_fn task, void *ctx) {
    int i;
    (void)user;
    for (i = n_tasks - 1; i >= 0; i--) task(ctx, i);
}

typedef struct alloc_job {
    tfm_session_desc sd;
    int mallocs, evals, ok;
} alloc_job;

static void *alloc_run(void *arg) {
    alloc_job *j = (alloc_job *)arg;
    tfm_session *s = NULL;
    int32_t next = 3;
    int pos;
    j->ok = tfm_session_create(g_model, &j->sd, &s) == TFM_OK && tfm_session_eval(s, g_tok, 8, 0, NULL) == TFM_OK;
    __atomic_store_n(&g_mallocs, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_counting, 1, __ATOMIC_RELAXED);
    for (pos = 8, j->evals = 0; j->ok && pos < N_TOK; pos++, j->evals++) { /* decode, then a prompt batch */
        const float *lg = NULL;
        j->ok = tfm_session_decode(s, next, pos, &lg) == TFM_OK;
        next = (next * 7 + 1) % N_VOCAB;
    }
    if (j->ok) j->ok = tfm_session_eval(s, g_tok, N_TOK, 0, NULL) == TFM_OK;
    j->evals++;
    __atomic_store_n(&g_counting, 0, __ATOMIC_RELAXED);
    j->mallocs = __atomic_load_n(&g_mallocs, __ATOMIC_RELAXED);
    tfm_session_destroy(s);
    return NULL;
}

static void test_allocations(void) {
    int mode;
    tfm_session *s = NULL;
    __atomic_store_n(&g_mallocs, 0, __ATOMIC_RELAXED); /* the counter sees the library's own allocations */
    __atomic_store_n(&g_counting, 1, __ATOMIC_RELAXED);
    CHECK(tfm_session_create(g_model, NULL, &s) == TFM_OK);
    __atomic_store_n(&g_counting, 0, __ATOMIC_RELAXED);
    CHECK_MSG(__atomic_load_n(&g_mallocs, __ATOMIC_RELAXED) >= 1, "the malloc counter counts nothing");
    tfm_session_destroy(s);
    for (mode = 0; mode < 4; mode++) { /* 1 thread, OpenMP 2, OpenMP 2 on a new host thread, parallel_for */
        alloc_job j;
        memset(&j, 0, sizeof j);
        j.sd.n_threads = mode == 0 ? 1 : 2;
        if (mode == 3) j.sd.parallel_for = pf_serial;
        if (mode == 2) {
            pthread_t th;
            CHECK(pthread_create(&th, NULL, alloc_run, &j) == 0 && pthread_join(th, NULL) == 0);
        } else {
            alloc_run(&j);
        }
        printf("%-40s %d malloc calls in %d evals\n",
               mode == 0 ? "1 thread:" : mode == 1 ? "2 threads (OpenMP if built with it):" : mode == 2 ? "2 threads, on a new host thread:" : "parallel_for:",
               j.mallocs, j.evals);
        CHECK_MSG(j.ok && j.mallocs == 0, "mode %d: %d malloc calls in %d evals", mode, j.mallocs, j.evals);
    }
}
#endif

/* ---- the thread cap ------------------------------------------------------------------------ */

#if defined(__linux__) && defined(_OPENMP) && !defined(THREADS_SANITIZED)
/* Threads of this process now (/proc/self/task), or -1. */
static int count_threads(void) {
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A fresh process evaluates with n_threads 256: its OpenMP team has at most one thread per
   processor (a larger team only spins, and a runtime that cannot start a thread ends the
   process: libgomp exit(1), libomp abort). The child exits with its thread count. Run before
   the parent has used OpenMP: a child forked after that would inherit a runtime whose threads
   it does not have (libgomp then hangs). */
static void test_team_size(void) {
    pid_t pid = fork();
    int status = 0, procs = omp_get_num_procs(), got;
    if (pid == 0) {
        tfm_session_desc sd;
        tfm_session *s = NULL;
        int ok;
        memset(&sd, 0, sizeof sd);
        sd.n_threads = 256;
        ok = tfm_session_create(g_model, &sd, &s) == TFM_OK && tfm_session_eval(s, g_tok, N_TOK, 0, NULL) == TFM_OK;
        tfm_session_destroy(s);
        _exit(ok ? (count_threads() > 250 ? 250 : count_threads()) : 255);
    }
    for (got = 0; pid > 0 && got < 3000 && waitpid(pid, &status, WNOHANG) != pid; got++) { /* 30 s */
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    if (pid > 0 && got == 3000) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    CHECK(pid > 0 && WIFEXITED(status));
    got = WEXITSTATUS(status);
    printf("n_threads 256 on %d processors: %d threads in the process after eval\n", procs, got);
    CHECK_MSG(got >= 1 && got <= procs + 1, "n_threads 256: %d threads (processors: %d)", got, procs);
}
#endif

static void test_thread_cap(void) {
    tfm_session_desc sd;
    tfm_session *s = NULL;
    memset(&sd, 0, sizeof sd);
    sd.n_threads = 257;
    CHECK(tfm_session_create(g_model, &sd, &s) == TFM_ERR_INVALID_ARG && s == NULL);
    sd.n_threads = 1 << 20;
    CHECK(tfm_session_create(g_model, &sd, &s) == TFM_ERR_INVALID_ARG && s == NULL);
    sd.n_threads = 256;
    CHECK(tfm_session_create(g_model, &sd, &s) == TFM_OK);
    tfm_session_destroy(s);
}

/* ---- a pass of more tasks than a 16-bit task index holds -------------------------------- */

/* 65536 attention heads of one dimension (the most a file may have): one parallel pass of
   65536 tasks, with 2 threads equal to 1 thread. */
static void test_many_tasks(void) {
    tiny_spec sp;
    tfm_model_desc md;
    tfm_model *m = NULL;
    unsigned char *file;
    size_t bytes;
    static float one[4 * 16], two[4 * 16];
    int32_t tok[4] = {1, 2, 3, 4};
    int pass;
    memset(&sp, 0, sizeof sp);
    sp.n_vocab = 16; sp.n_ctx = 8; sp.n_layers = 1; sp.n_heads = 65536; sp.n_kv_heads = 1; sp.d_head = 1;
    sp.no_rope = 1; sp.d_model = 16; sp.d_ff = 16; sp.lnf_scale = 1.0f;
    file = tiny_model(&sp, &bytes);
    memset(&md, 0, sizeof md);
    md.data = file;
    md.data_bytes = bytes;
    CHECK(file && tfm_model_open(&md, &m) == TFM_OK);
    for (pass = 0; m && pass < 2; pass++) {
        tfm_session_desc sd;
        tfm_session *s = NULL;
        memset(&sd, 0, sizeof sd);
        sd.n_threads = pass ? 2 : 1;
        CHECK(tfm_session_create(m, &sd, &s) == TFM_OK && tfm_session_eval(s, tok, 4, 0, pass ? two : one) == TFM_OK);
        tfm_session_destroy(s);
    }
    CHECK_MSG(memcmp(one, two, sizeof one) == 0, "65536 heads: 2 threads differ from 1");
    tfm_model_close(m);
    free(file);
}

int main(void) {
    tiny_spec sp;
    tfm_model_desc md;
    tfm_session_desc sd;
    unsigned char *file;
    size_t bytes;
    int i;
    memset(&sp, 0, sizeof sp);
    sp.n_vocab = N_VOCAB; sp.n_ctx = 64; sp.n_layers = 2; sp.n_heads = 4; sp.d_model = 128; sp.d_ff = 256;
    sp.lnf_scale = 1.0f;
    file = tiny_model(&sp, &bytes);
    memset(&md, 0, sizeof md);
    md.data = file;
    md.data_bytes = bytes;
    CHECK(file && tfm_model_open(&md, &g_model) == TFM_OK);
    if (!g_model) return check_summary("test_threads");
    for (i = 0; i < N_TOK; i++) g_tok[i] = (int32_t)((i * 37 + 11) % N_VOCAB);
    memset(&sd, 0, sizeof sd);
    CHECK(eval_all(&sd, g_ref));
    printf("build: %s\n", tfm_build_info());
#if defined(__linux__) && defined(_OPENMP) && !defined(THREADS_SANITIZED)
    test_team_size(); /* first: before this process starts an OpenMP team */
#endif
    test_host_churn();
#ifdef COUNT_MALLOC
    test_allocations();
#else
    printf("SKIP malloc counting (not glibc, or a sanitizer build)\n");
#endif
    test_thread_cap();
    test_many_tasks();
    tfm_model_close(g_model);
    free(file);
    return check_summary("test_threads");
}
