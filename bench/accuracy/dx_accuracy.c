/* bench/accuracy/dx_accuracy.c - how close diff_src comes to the exact
   gradient: the library (saved statistics and NBWD_STATS_NONE, each path
   this CPU runs) beside two engines' own loops (llm.c's LayerNorm at -O2
   and at its -Ofast -march=native, ggml's RMSNorm) and beside emulations
   of other ways to write the per-element dx formula and its row scalars,
   all against the float64 gradient of the same f32 inputs with the exact
   statistics. Build and run: make bench-accuracy.

   Error measures over a tensor (dx against the float64 gradient ref):
     rms_rel   sqrt(sum err^2 / sum ref^2)
     max_rel   max |err| / |ref| over the elements (those with ref != 0):
               the near-cancelling elements set it
     max_ulps  max |err| / (2^-24 * the size of the element's terms,
               rstd (|g| + |mean(g)| + |xhat mean(g xhat)|)): the error in
               units of what one rounding of a term costs */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void llmc_layernorm_backward_o2(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                const float *weight, const float *mean, const float *rstd, int B, int T, int C);
void llmc_layernorm_backward_ofast(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                   const float *weight, const float *mean, const float *rstd, int B, int T, int C);
void ggml_rms_norm_back_o2(float *dx, const float *dz, const float *x, int64_t rows, int64_t n, float eps);

static unsigned g_seed = 1u;
static double uniform(void) { /* [-1, 1) */
    g_seed = g_seed * 1664525u + 1013904223u;
    return (g_seed >> 8) * (2.0 / 16777216.0) - 1.0;
}

typedef struct problem {
    int rms;
    int64_t rows, n;
    float eps;
    float *x, *dy, *gamma, *mean, *rstd; /* mean, rstd: what a forward saves (f32) */
    double *ref, *scale;                 /* the exact gradient; the size of each element's terms */
} problem;

static void problem_make(problem *p, int rms, int64_t rows, int64_t n, unsigned seed) {
    int64_t r, i;
    p->rms = rms;
    p->rows = rows;
    p->n = n;
    p->eps = 1e-5f;
    g_seed = seed;
    p->x = (float *)malloc(sizeof(float) * rows * n);
    p->dy = (float *)malloc(sizeof(float) * rows * n);
    p->gamma = (float *)malloc(sizeof(float) * n);
    p->mean = (float *)malloc(sizeof(float) * rows);
    p->rstd = (float *)malloc(sizeof(float) * rows);
    p->ref = (double *)malloc(sizeof(double) * rows * n);
    p->scale = (double *)malloc(sizeof(double) * rows * n);
    for (i = 0; i < n; ++i) p->gamma[i] = rms ? 1.0f : (float)(1.0 + 0.1 * uniform());
    for (r = 0; r < rows; ++r) {
        double off = 0.5 * uniform(), sc = 1.0 + 0.5 * uniform();
        for (i = 0; i < n; ++i) {
            p->x[r * n + i] = (float)(off + sc * uniform());
            p->dy[r * n + i] = (float)(0.05 * uniform());
        }
    }
    for (r = 0; r < rows; ++r) {
        const float *x = p->x + r * n, *dy = p->dy + r * n;
        double mean = 0.0, var = 0.0, rs, sg = 0.0, sgx = 0.0;
        for (i = 0; i < n; ++i) mean += x[i];
        mean = rms ? 0.0 : mean / (double)n;
        for (i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
        var /= (double)n;
        rs = 1.0 / sqrt(var + (double)p->eps);
        p->mean[r] = (float)mean;
        p->rstd[r] = (float)rs;
        for (i = 0; i < n; ++i) {
            double g = (double)dy[i] * p->gamma[i], xh = (x[i] - mean) * rs;
            sg += g;
            sgx += g * xh;
        }
        sg = rms ? 0.0 : sg / (double)n;
        sgx /= (double)n;
        for (i = 0; i < n; ++i) {
            double g = (double)dy[i] * p->gamma[i], xh = (x[i] - mean) * rs;
            p->ref[r * n + i] = rs * (g - sg - xh * sgx);
            p->scale[r * n + i] = rs * (fabs(g) + fabs(sg) + fabs(xh * sgx));
        }
    }
}

typedef struct errors { double rms_rel, max_rel, max_ulps; } errors;
static errors measure(const problem *p, const float *dx) {
    double num = 0.0, den = 0.0;
    errors e = {0.0, 0.0, 0.0};
    int64_t i;
    for (i = 0; i < p->rows * p->n; ++i) {
        double err = fabs((double)dx[i] - p->ref[i]);
        num += err * err;
        den += p->ref[i] * p->ref[i];
        if (p->ref[i] != 0.0 && err / fabs(p->ref[i]) > e.max_rel) e.max_rel = err / fabs(p->ref[i]);
        if (err / (ldexp(1.0, -24) * p->scale[i]) > e.max_ulps) e.max_ulps = err / (ldexp(1.0, -24) * p->scale[i]);
    }
    e.rms_rel = sqrt(num / den);
    return e;
}
static void report(const char *what, errors e) {
    printf("  %-58s %9.3g %9.3g %9.2f\n", what, e.rms_rel, e.max_rel, e.max_ulps);
}

/* The library: saved statistics (LayerNorm MEAN_RSTD, RMSNorm RSTD: what
   llm.c and PyTorch save) or NBWD_STATS_NONE, on path isa */
static int library(const problem *p, nbwd_isa isa, int none, float *dx) {
    int64_t dims[2];
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    nbwd_status s;
    dims[0] = p->rows;
    dims[1] = p->n;
    if (p->rms) nbwd_rms_norm_bwd_desc_init(&d, 2, dims);
    else nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    d.isa = isa;
    d.epsilon = p->eps;
    d.stats_form = none ? NBWD_STATS_NONE : NBWD_STATS_MEAN_RSTD; /* (RMSNorm: NBWD_STATS_RSTD) */
    d.use_affine = !p->rms;
    memset(&a, 0, sizeof a);
    a.src = p->x;
    a.diff_dst = p->dy;
    if (!none) {
        a.mean = p->rms ? NULL : p->mean;
        a.rstd = p->rstd;
    }
    a.gamma = p->rms ? NULL : p->gamma;
    a.diff_src = dx;
    if (p->rms) {
        nbwd_rms_norm_bwd_args ra;
        memset(&ra, 0, sizeof ra);
        ra.src = a.src; ra.diff_dst = a.diff_dst; ra.rstd = a.rstd; ra.diff_src = dx;
        s = nbwd_rms_norm_bwd(&d, &ra, NULL, 0);
    } else {
        s = nbwd_layer_norm_bwd(&d, &a, NULL, 0);
    }
    if (s != NBWD_OK) fprintf(stderr, "dx_accuracy: %s\n", nbwd_last_error());
    return s == NBWD_OK;
}

/* Emulations of one row's dx in f32 arithmetic (each operation rounded as
   the vector kernels round it), from the saved statistics (stats = 0) or
   the exact ones rounded to f32 (stats = 1), with the row scalars mean(g),
   mean(g xhat) summed in f32 over 32 interleaved lanes (as two chains of
   16-lane vectors; sums = 0) or in double (sums = 1), and three ways to
   write the element's formula:
     form 0  (g - fma(xhat, mgx, mg)) * rstd          the library's
     form 1  fma(-xhat, mgx, g - mg) * rstd           llm.c's, contracted
     form 2  fma(g, rstd, fma(xhat, b, c)), b = -mgx rstd and c = -mg rstd
             formed in double and rounded once */
static void emulate(const problem *p, int stats, int sums, int form, float *dx) {
    const int64_t n = p->n;
    int64_t r, i;
    for (r = 0; r < p->rows; ++r) {
        const float *x = p->x + r * n, *dy = p->dy + r * n;
        float m = p->mean[r], rs = p->rstd[r], mg, mgx;
        float lane_g[32], lane_gx[32];
        double sg = 0.0, sgx = 0.0;
        if (stats) { /* the exact statistics, rounded once */
            double mean = 0.0, var = 0.0;
            for (i = 0; i < n; ++i) mean += x[i];
            mean = p->rms ? 0.0 : mean / (double)n;
            for (i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
            m = (float)mean;
            rs = (float)(1.0 / sqrt((double)(float)(var / (double)n) + (double)p->eps));
        }
        memset(lane_g, 0, sizeof lane_g);
        memset(lane_gx, 0, sizeof lane_gx);
        for (i = 0; i < n; ++i) {
            float xh = (x[i] - m) * rs, g = dy[i] * p->gamma[i];
            lane_g[i % 32] += g;
            lane_gx[i % 32] = fmaf(g, xh, lane_gx[i % 32]);
            sg += (double)g;
            sgx += (double)g * (double)xh;
        }
        if (!sums) {
            float a = 0.0f, b = 0.0f;
            for (i = 0; i < 32; ++i) { a += lane_g[i]; b += lane_gx[i]; }
            sg = a;
            sgx = b;
        }
        mg = p->rms ? 0.0f : (float)(sg / (double)n);
        mgx = (float)(sgx / (double)n);
        for (i = 0; i < n; ++i) {
            float xh = (x[i] - m) * rs, g = dy[i] * p->gamma[i];
            if (form == 0) dx[r * n + i] = (g - fmaf(xh, mgx, mg)) * rs;
            else if (form == 1) dx[r * n + i] = fmaf(-xh, mgx, g - mg) * rs;
            else if (form == 2) {
                float b = (float)(-(double)mgx * rs), c = (float)(-(double)mg * rs);
                dx[r * n + i] = fmaf(g, rs, fmaf(xh, b, c));
            } else {
                float b = (float)(-(double)mgx * rs);
                dx[r * n + i] = fmaf(xh, b, (g - mg) * rs);
            }
        }
    }
}

static void run(const problem *p) {
    const int64_t total = p->rows * p->n;
    float *dx = (float *)malloc(sizeof(float) * total), *dw = (float *)calloc((size_t)p->n, sizeof(float));
    float *db = (float *)calloc((size_t)p->n, sizeof(float));
    static const char *forms[4] = {"(g - fma(xh, mgx, mg)) * rstd", "fma(-xh, mgx, g - mg) * rstd",
                                   "fma(g, rstd, fma(xh, b, c))", "fma(xh, b, (g - mg) * rstd)"};
    char what[96];
    int isa, stats, sums, form;
    printf("%s [%lld x %lld] f32, %s; float64 gradient of the same inputs, exact statistics\n",
           p->rms ? "RMSNorm" : "LayerNorm", (long long)p->rows, (long long)p->n,
           p->rms ? "no gamma (as ggml's node)" : "gamma ~ 1 +- 0.1");
    printf("  %-58s %9s %9s %9s\n", "", "rms_rel", "max_rel", "max_ulps");
    for (isa = NBWD_ISA_SCALAR; isa < NBWD_ISA_COUNT; ++isa) {
        if (!nbwd_isa_supported((nbwd_isa)isa)) continue;
        snprintf(what, sizeof what, "norm_bwd %s, saved mean/rstd (f32)", nbwd_isa_name((nbwd_isa)isa));
        if (library(p, (nbwd_isa)isa, 0, dx)) report(what, measure(p, dx));
        snprintf(what, sizeof what, "norm_bwd %s, NBWD_STATS_NONE", nbwd_isa_name((nbwd_isa)isa));
        if (library(p, (nbwd_isa)isa, 1, dx)) report(what, measure(p, dx));
    }
    if (p->rms) {
        ggml_rms_norm_back_o2(dx, p->dy, p->x, p->rows, p->n, p->eps);
        report("ggml rms_norm_back loop (-O2)", measure(p, dx));
    } else {
        memset(dx, 0, sizeof(float) * total);
        llmc_layernorm_backward_o2(dx, dw, db, p->dy, p->x, p->gamma, p->mean, p->rstd, 1, (int)p->rows, (int)p->n);
        report("llm.c layernorm_backward (-O2)", measure(p, dx));
        memset(dx, 0, sizeof(float) * total);
        llmc_layernorm_backward_ofast(dx, dw, db, p->dy, p->x, p->gamma, p->mean, p->rstd, 1, (int)p->rows,
                                      (int)p->n);
        report("llm.c layernorm_backward (-Ofast -march=native)", measure(p, dx));
    }
    for (stats = 0; stats < 2; ++stats)
        for (sums = 0; sums < 2; ++sums)
            for (form = 0; form < 4; ++form) {
                emulate(p, stats, sums, form, dx);
                snprintf(what, sizeof what, "%s stats, %s sums: %s", stats ? "exact" : "saved",
                         sums ? "f64" : "f32", forms[form]);
                report(what, measure(p, dx));
            }
    printf("\n");
    free(dx);
    free(dw);
    free(db);
}

int main(void) {
    problem ln, rms;
    problem_make(&ln, 0, 1024, 768, 11u);
    problem_make(&rms, 1, 256, 4096, 12u);
    run(&ln);
    run(&rms);
    return 0;
}
