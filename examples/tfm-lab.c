/* tfm-lab - why each part of the transformer is there, measured on a trained model.

   build/tfm-lab [MODEL.tfm] [-f TEXT] [-n TOKENS] [-t THREADS] [--json] [--plot OUT.svg]

   Runs the model over a text (default: the demo model's held-out excerpt, else a built-in
   verse) as it is (baseline) and with each design decision undone through the session desc's
   ablations (tfm_ablation), reading the inspection hook (tfm_stats) after each run. Prints a
   table: cross-entropy and perplexity of the text, mean attention entropy and largest weight,
   mean pre-softmax score variance, the residual stream's RMS after each layer. Then the
   permutation test: the tokens before the last shuffled, the last token's logits compared
   (with positions they move; without positions, attending both ways, they must not, up to
   rounding: exit status 1 if they do), and the causal-mask test (with the mask off, one eval
   of the prompt and two give different logits: the cache breaks).
   Last, a sweep of the score scale (1/8 .. 8): cross-entropy and attention entropy.
   --json writes the same as one JSON object; --plot an SVG of RMS and entropy by layer and of
   the sweep. */
#define TFM_IMPLEMENTATION
#include "tfm.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MODEL "build/demo.tfm"
#define DEFAULT_TEXT "models/demo/reference/heldout.txt"
#define DEFAULT_TOKENS 256  /* tokens scored per run (capped at the model's n_ctx) */
#define PERM_TOKENS 32      /* prompt of the permutation and causal-mask tests */
#define PERM_TOL 2e-3       /* logit change that is only rounding (a reordered softmax sum) */
#define SHUFFLE_SEED 12345u
#define MAX_LAYERS_SHOWN 64

static const char builtin_text[] =
    "In the beginning God created the heaven and the earth. And the earth was without form, and void; "
    "and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. "
    "And God said, Let there be light: and there was light. And God saw the light, that it was good: "
    "and God divided the light from the darkness.";

static const char *const usage =
    "usage: tfm-lab [MODEL.tfm] [-f TEXT] [-n TOKENS] [-t THREADS] [--json] [--plot OUT.svg]\n"
    "\n"
    "  MODEL.tfm      model with a tokenizer (default build/demo.tfm; also -m MODEL)\n"
    "  -f FILE        text to score (default models/demo/reference/heldout.txt, else built in)\n"
    "  -n N           tokens scored per run (default 256, at most the model's n_ctx)\n"
    "  -t N           threads (default 1; the results are the same for any count)\n"
    "  --json         one JSON object on stdout instead of the table\n"
    "  --plot FILE    also write an SVG chart: residual RMS and attention entropy by layer, the\n"
    "                 score-scale sweep\n"
    "  -h, --help     show this help\n"
    "\n"
    "Each run is the model with one design decision undone (tfm_session_desc.ablation); the\n"
    "statistics come from the inspection hook (tfm_session_desc.stats).\n";

static void die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "tfm-lab: error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

/* One run: a name, the ablation, and what was measured. */
typedef struct lab_run {
    const char *name;
    tfm_ablation ab;
    double ce, entropy, max_weight, score_var;
    double act_negative, act_linear; /* shares of the FFN activation inputs, over every layer */
    double rms[MAX_LAYERS_SHOWN], layer_entropy[MAX_LAYERS_SHOWN];
} lab_run;

enum { N_RUNS = 12 };

static void setup_runs(lab_run *runs) {
    int i;
    memset(runs, 0, N_RUNS * sizeof *runs);
    runs[0].name = "baseline";
    runs[1].name = "no 1/sqrt(d_head)";    runs[1].ab.no_attn_scale = true;
    runs[2].name = "scores x 0.25";        runs[2].ab.score_scale = 0.25f;
    runs[3].name = "scores x 4";           runs[3].ab.score_scale = 4.0f;
    runs[4].name = "no positions";         runs[4].ab.no_positions = true;
    runs[5].name = "no attention branch";  runs[5].ab.no_attn = true;
    runs[6].name = "no FFN branch";        runs[6].ab.no_ffn = true;
    runs[7].name = "no residual";          runs[7].ab.no_residual = true;
    runs[8].name = "norms = identity";     runs[8].ab.no_norm = true;
    runs[9].name = "activation = identity"; runs[9].ab.no_act = true;
    runs[10].name = "head 0 only";         runs[10].ab.heads_kept = 1;
    runs[11].name = "no causal mask";      runs[11].ab.no_causal = true;
    for (i = 0; i < N_RUNS; i++) runs[i].ce = NAN;
}

static char *read_text(const char *path, size_t *n_bytes) {
    FILE *f = fopen(path, "rb");
    size_t n = 0, cap = 1 << 16, got;
    char *buf;
    if (!f) return NULL;
    if (!(buf = (char *)malloc(cap))) die("out of memory");
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap && !(buf = (char *)realloc(buf, cap *= 2))) die("out of memory");
    }
    fclose(f);
    *n_bytes = n;
    return buf;
}

/* A session with the run's ablation and the hook; n_batch = n: the text is one pass. */
static tfm_session *lab_session(const tfm_model *m, const tfm_ablation *ab, tfm_stats *st, int n_threads, int n) {
    tfm_session_desc sd;
    tfm_session *s;
    tfm_result r;
    memset(&sd, 0, sizeof sd);
    sd.ablation = *ab;
    if (st) sd.stats = *st;
    sd.n_threads = n_threads;
    sd.n_batch = n;
    if ((r = tfm_session_create(m, &sd, &s)) != TFM_OK) die("session: %s", tfm_result_string(r));
    return s;
}

/* Score the text with the run's ablation; the hook's sums into means. */
static void measure(const tfm_model *m, lab_run *run, const int32_t *ids, int n, int n_threads) {
    tfm_config c = tfm_model_config(m);
    size_t nl = (size_t)c.n_layers, nh = nl * (size_t)c.n_heads, i;
    tfm_stats st;
    float *lp = (float *)malloc((size_t)n * sizeof(float));
    double q = 0.0, sum = 0.0;
    tfm_session *s;
    int l;
    st.layers = (tfm_layer_stats *)calloc(nl, sizeof(tfm_layer_stats));
    st.heads = (tfm_head_stats *)calloc(nh, sizeof(tfm_head_stats));
    if (!lp || !st.layers || !st.heads) die("out of memory");
    s = lab_session(m, &run->ab, &st, n_threads, n);
    if (tfm_session_score(s, ids, (size_t)n, 0, lp) == TFM_OK) {
        for (l = 1; l < n; l++) sum -= (double)lp[l];
        run->ce = sum / (double)(n - 1);
    }
    tfm_session_destroy(s);
    for (i = 0; i < nh; i++) {
        size_t layer = i / (size_t)c.n_heads;
        run->entropy += st.heads[i].entropy;
        run->max_weight += st.heads[i].max_weight;
        run->score_var += st.heads[i].score_var;
        q += st.heads[i].n_queries;
        if (layer < MAX_LAYERS_SHOWN)
            run->layer_entropy[layer] += st.heads[i].entropy / st.heads[i].n_queries / c.n_heads;
    }
    run->entropy /= q;
    run->max_weight /= q;
    run->score_var /= q;
    for (l = 0; l < c.n_layers; l++) {
        run->act_negative += st.layers[l].act_negative / st.layers[l].n_act / c.n_layers;
        run->act_linear += st.layers[l].act_linear / st.layers[l].n_act / c.n_layers;
        if (l < MAX_LAYERS_SHOWN) run->rms[l] = st.layers[l].rms_out / st.layers[l].n_rows;
    }
    free(st.layers);
    free(st.heads);
    free(lp);
}

/* The last token's logits for ids[0..n) with an ablation, split into evals at `split` (0: one). */
static void last_logits(const tfm_model *m, const tfm_ablation *ab, const int32_t *ids, int n, int split,
                        float *out) {
    tfm_session *s = lab_session(m, ab, NULL, 1, n);
    tfm_result r = TFM_OK;
    if (split > 0) r = tfm_session_eval(s, ids, (size_t)split, 0, NULL);
    if (r == TFM_OK) r = tfm_session_eval(s, ids + split, (size_t)(n - split), split, NULL);
    if (r != TFM_OK) die("eval: %s: %s", tfm_result_string(r), tfm_session_last_error(s));
    memcpy(out, tfm_session_logits(s), (size_t)tfm_model_config(m).n_vocab * sizeof(float));
    tfm_session_destroy(s);
}

static double max_abs_diff(const float *a, const float *b, int n) {
    double d = 0.0;
    int i;
    for (i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - (double)b[i]));
    return d;
}

/* Permutation test (d[0] with positions, d[1] without, causal, d[2] without, both ways) and the
   causal-mask split test (d[3] mask on, d[4] off). */
static void order_tests(const tfm_model *m, const int32_t *ids, int n, double *d) {
    int n_vocab = tfm_model_config(m).n_vocab, i, k;
    int32_t perm[PERM_TOKENS];
    float *a = (float *)malloc((size_t)n_vocab * sizeof(float)), *b = (float *)malloc((size_t)n_vocab * sizeof(float));
    unsigned rng = SHUFFLE_SEED;
    tfm_ablation ab;
    if (!a || !b) die("out of memory");
    memcpy(perm, ids, (size_t)n * sizeof *perm);
    for (i = n - 2; i > 0; i--) { /* Fisher-Yates over the tokens before the last */
        int32_t t;
        rng = rng * 1103515245u + 12345u;
        k = (int)((rng >> 8) % (unsigned)(i + 1));
        t = perm[i]; perm[i] = perm[k]; perm[k] = t;
    }
    for (k = 0; k < 5; k++) {
        memset(&ab, 0, sizeof ab);
        ab.no_positions = k == 1 || k == 2;
        ab.no_causal = k == 2 || k == 4;
        last_logits(m, &ab, ids, n, 0, a);
        last_logits(m, &ab, k < 3 ? perm : ids, n, k < 3 ? 0 : n / 2, b);
        d[k] = max_abs_diff(a, b, n_vocab);
    }
    free(a);
    free(b);
}

/* The score-scale sweep: factors, and the text's cross-entropy and mean entropy at each. */
#define N_SWEEP 7
static const float sweep_scales[N_SWEEP] = {0.125f, 0.25f, 0.5f, 1.0f, 2.0f, 4.0f, 8.0f};

typedef struct lab_sweep {
    double ce[N_SWEEP], entropy[N_SWEEP];
} lab_sweep;

static void sweep(const tfm_model *m, const int32_t *ids, int n, int n_threads, lab_sweep *sw) {
    int k;
    for (k = 0; k < N_SWEEP; k++) {
        lab_run run;
        memset(&run, 0, sizeof run);
        run.ce = NAN;
        run.ab.score_scale = sweep_scales[k];
        measure(m, &run, ids, n, n_threads);
        sw->ce[k] = run.ce;
        sw->entropy[k] = run.entropy;
    }
}

static void print_table(const lab_run *runs, int n_layers, int n_tokens, const double *d, const lab_sweep *sw) {
    int i, l;
    printf("%d tokens; CE in nats/token, entropy in nats; act<0 and act>=3: shares of FFN activation\n"
           "inputs; RMS of the residual stream after each layer\n\n", n_tokens);
    printf("%-22s %8s %10s %8s %6s %10s %6s %6s  RMS by layer\n", "run", "CE", "ppl", "entropy", "max w",
           "score var", "act<0", "act>=3");
    for (i = 0; i < N_RUNS; i++) {
        const lab_run *r = &runs[i];
        printf("%-22s %8.4f %10.2f %8.4f %6.3f %10.4g %6.3f %6.3f ", r->name, r->ce, exp(r->ce), r->entropy,
               r->max_weight, r->score_var, r->act_negative, r->act_linear);
        for (l = 0; l < n_layers && l < MAX_LAYERS_SHOWN; l++) printf(" %.3g", r->rms[l]);
        printf("\n");
    }
    printf("\npermutation (tokens before the last shuffled), last-token logits maxdiff:\n");
    printf("  with positions            %.4g  (order matters)\n", d[0]);
    printf("  no positions, causal      %.4g  (the causal mask alone still tells order)\n", d[1]);
    printf("  no positions, both ways   %.4g  %s\n", d[2], d[2] < PERM_TOL ? "invariant: PASS" : "NOT invariant: FAIL");
    printf("causal mask, one eval of the prompt vs two, last-token logits maxdiff:\n");
    printf("  mask on  %.4g    mask off  %.4g  (the cache no longer matches one pass)\n", d[3], d[4]);
    printf("score-scale sweep: %-6s %8s %8s\n", "scale", "CE", "entropy");
    for (i = 0; i < N_SWEEP; i++)
        printf("                   %-6g %8.4f %8.4f\n", (double)sweep_scales[i], sw->ce[i], sw->entropy[i]);
}

/* A JSON number, or null for NaN / Inf (a run whose logits overflowed). */
static void json_num(const char *key, double v, const char *after) {
    if (isfinite(v)) printf("\"%s\": %.6g%s", key, v, after);
    else printf("\"%s\": null%s", key, after);
}

static void print_json(const lab_run *runs, int n_layers, int n_tokens, const double *d, const lab_sweep *sw) {
    int i, l;
    printf("{\"tokens\": %d, \"runs\": [", n_tokens);
    for (i = 0; i < N_RUNS; i++) {
        const lab_run *r = &runs[i];
        printf("%s\n  {\"name\": \"%s\", ", i ? "," : "", r->name);
        json_num("ce", r->ce, ", ");
        json_num("ppl", exp(r->ce), ", ");
        json_num("entropy", r->entropy, ", ");
        json_num("max_weight", r->max_weight, ", ");
        json_num("score_var", r->score_var, ", ");
        json_num("act_negative", r->act_negative, ", ");
        json_num("act_linear", r->act_linear, ", \"rms\": [");
        for (l = 0; l < n_layers && l < MAX_LAYERS_SHOWN; l++) printf("%s%.6g", l ? ", " : "", r->rms[l]);
        printf("], \"entropy_by_layer\": [");
        for (l = 0; l < n_layers && l < MAX_LAYERS_SHOWN; l++) printf("%s%.6g", l ? ", " : "", r->layer_entropy[l]);
        printf("]}");
    }
    printf("\n],\n\"permutation\": {\"positions\": %.6g, \"no_positions_causal\": %.6g, "
           "\"no_positions_both_ways\": %.6g, \"invariant\": %s},\n", d[0], d[1], d[2],
           d[2] < PERM_TOL ? "true" : "false");
    printf("\"causal_split\": {\"mask_on\": %.6g, \"mask_off\": %.6g},\n\"scale_sweep\": [", d[3], d[4]);
    for (i = 0; i < N_SWEEP; i++) {
        printf("%s{\"scale\": %g, ", i ? ", " : "", (double)sweep_scales[i]);
        json_num("ce", sw->ce[i], ", ");
        json_num("entropy", sw->entropy[i], "}");
    }
    printf("]}\n");
}

/* --plot: an SVG of panels, each up to N_PLOTTED lines over evenly spaced points (no
   dependencies). */
#define PLOT_W 360       /* one panel's width and height, pixels */
#define PLOT_H 240
#define PLOT_MARGIN 40
#define N_PLOTTED 4
#define N_PANELS 3

static const char *const plot_colors[N_PLOTTED] = {"#222222", "#d62728", "#1f77b4", "#2ca02c"};

/* One panel's lines: names[k] and values[k][0..n_points) for k < n_lines. */
typedef struct plot_lines {
    const char *title, *x_label;
    const char *names[N_PLOTTED];
    const double *values[N_PLOTTED];
    int n_lines, n_points;
} plot_lines;

/* A panel at x0, y from 0 to the largest finite value (larger ones drawn at the top). */
static void plot_panel(FILE *f, int x0, const plot_lines *pl) {
    double top = 0.0, v;
    int k, i, inner_w = PLOT_W - 2 * PLOT_MARGIN, inner_h = PLOT_H - 2 * PLOT_MARGIN;
    for (k = 0; k < pl->n_lines; k++)
        for (i = 0; i < pl->n_points; i++)
            if ((v = pl->values[k][i]) > top && v < INFINITY) top = v;
    if (top <= 0.0) top = 1.0;
    fprintf(f, "<g transform=\"translate(%d,0)\"><text x=\"%d\" y=\"20\" font-size=\"13\">%s</text>\n", x0,
            PLOT_MARGIN, pl->title);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n",
            PLOT_MARGIN, PLOT_MARGIN, inner_w, inner_h);
    fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"10\">%.3g</text><text x=\"4\" y=\"%d\" font-size=\"10\">0</text>\n",
            PLOT_MARGIN + 4, top, PLOT_H - PLOT_MARGIN);
    for (k = 0; k < pl->n_lines; k++) {
        fprintf(f, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"%s\" points=\"", plot_colors[k]);
        for (i = 0; i < pl->n_points; i++) {
            double x = PLOT_MARGIN + (pl->n_points > 1 ? (double)i / (pl->n_points - 1) : 0.5) * inner_w;
            v = pl->values[k][i] < INFINITY ? pl->values[k][i] : top;
            fprintf(f, "%.1f,%.1f ", x, PLOT_H - PLOT_MARGIN - v / top * inner_h);
        }
        fprintf(f, "\"/><text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s</text>\n", PLOT_MARGIN + 6,
                PLOT_MARGIN + 14 + 13 * k, plot_colors[k], pl->names[k]);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text></g>\n", PLOT_MARGIN, PLOT_H - 12, pl->x_label);
}

/* Residual RMS by layer, entropy by layer, and the score-scale sweep. */
static void write_plot(const char *path, const lab_run *runs, int n_layers, const lab_sweep *sw) {
    static const int rms_runs[N_PLOTTED] = {0, 8, 7, 9};     /* baseline, no norms, no residual, no act */
    static const int ent_runs[N_PLOTTED] = {0, 2, 3, 1};     /* baseline, x0.25, x4, no 1/sqrt(d) */
    plot_lines pl[N_PANELS];
    char layers[64];
    FILE *f = fopen(path, "w");
    int n = n_layers < MAX_LAYERS_SHOWN ? n_layers : MAX_LAYERS_SHOWN, k, p;
    if (!f) die("cannot write '%s': %s", path, strerror(errno));
    memset(pl, 0, sizeof pl);
    snprintf(layers, sizeof layers, "layer 0 .. %d", n - 1);
    pl[0].title = "residual RMS after each layer";
    pl[1].title = "attention entropy by layer (nats)";
    pl[2].title = "score scale 1/8 .. 8: CE and entropy";
    pl[0].x_label = pl[1].x_label = layers;
    pl[2].x_label = "score scale (x2 a step)";
    for (k = 0; k < N_PLOTTED; k++) {
        pl[0].names[k] = runs[rms_runs[k]].name;
        pl[0].values[k] = runs[rms_runs[k]].rms;
        pl[1].names[k] = runs[ent_runs[k]].name;
        pl[1].values[k] = runs[ent_runs[k]].layer_entropy;
    }
    pl[0].n_lines = pl[1].n_lines = N_PLOTTED;
    pl[0].n_points = pl[1].n_points = n;
    pl[2].names[0] = "cross-entropy (nats/token)";
    pl[2].values[0] = sw->ce;
    pl[2].names[1] = "attention entropy (nats)";
    pl[2].values[1] = sw->entropy;
    pl[2].n_lines = 2;
    pl[2].n_points = N_SWEEP;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n",
            N_PANELS * PLOT_W, PLOT_H);
    for (p = 0; p < N_PANELS; p++) plot_panel(f, p * PLOT_W, &pl[p]);
    fprintf(f, "</svg>\n");
    if (fclose(f) != 0) die("cannot write '%s'", path);
}

int main(int argc, char **argv) {
    const char *model_path = DEFAULT_MODEL, *text_path = NULL, *plot_path = NULL;
    int n_tokens = DEFAULT_TOKENS, n_threads = 1, json = 0, i;
    lab_run runs[N_RUNS];
    lab_sweep sw;
    double d[5];
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); return 0; }
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "-m") && i + 1 < argc) model_path = argv[++i];
        else if (!strcmp(a, "-f") && i + 1 < argc) text_path = argv[++i];
        else if (!strcmp(a, "--plot") && i + 1 < argc) plot_path = argv[++i];
        else if (!strcmp(a, "-n") && i + 1 < argc) n_tokens = atoi(argv[++i]);
        else if (!strcmp(a, "-t") && i + 1 < argc) n_threads = atoi(argv[++i]);
        else if (a[0] != '-') model_path = a;
        else die("unknown or incomplete argument '%s' (see --help)", a);
    }
    if (n_tokens < PERM_TOKENS || n_threads < 1) die("-n must be at least %d and -t at least 1", PERM_TOKENS);

    tfm_model_desc md;
    memset(&md, 0, sizeof md);
    md.path = model_path;
    tfm_model *model;
    tfm_result r = tfm_model_open(&md, &model);
    if (r != TFM_OK) die("cannot open model '%s': %s", model_path, tfm_result_string(r));
    tfm_config cfg = tfm_model_config(model);
    if (cfg.n_layers == 0 || cfg.n_tokens == 0) die("'%s' needs weights and a tokenizer", model_path);
    if (n_tokens > cfg.n_ctx) n_tokens = cfg.n_ctx;

    size_t text_bytes = 0, n_ids = 0;
    char *text = read_text(text_path ? text_path : DEFAULT_TEXT, &text_bytes);
    if (!text && text_path) die("cannot read '%s': %s", text_path, strerror(errno));
    const char *src = text ? text : builtin_text;
    size_t src_bytes = text ? text_bytes : sizeof builtin_text - 1;
    tfm_model_tokenize(model, src, src_bytes, NULL, 0, &n_ids);
    int32_t *ids = (int32_t *)malloc((n_ids + 1) * sizeof *ids);
    if (!ids) die("out of memory");
    if ((r = tfm_model_tokenize(model, src, src_bytes, ids, n_ids + 1, &n_ids)) != TFM_OK)
        die("tokenize: %s", tfm_result_string(r));
    if (n_ids < PERM_TOKENS) die("the text has %zu tokens; at least %d are needed", n_ids, PERM_TOKENS);
    if ((size_t)n_tokens > n_ids) n_tokens = (int)n_ids;

    setup_runs(runs);
    for (i = 0; i < N_RUNS; i++) measure(model, &runs[i], ids, n_tokens, n_threads);
    order_tests(model, ids, PERM_TOKENS, d);
    sweep(model, ids, n_tokens, n_threads, &sw);
    if (json) print_json(runs, cfg.n_layers, n_tokens, d, &sw);
    else print_table(runs, cfg.n_layers, n_tokens, d, &sw);
    if (plot_path) write_plot(plot_path, runs, cfg.n_layers, &sw);

    free(ids);
    free(text);
    tfm_model_close(model);
    return d[2] < PERM_TOL ? 0 : 1;
}
