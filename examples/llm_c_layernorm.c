/* llm_c_layernorm.c: a C engine in the style of llm.c (GPT-2 training in
   plain C) replacing its LayerNorm backward loop with one library call.

   The engine's call shape: f32 activations [B, T, C], the mean and rstd
   (1/sqrt(var + eps)) its forward saved per token, and gradients that
   accumulate: the backward adds into dinp (the residual stream's gradient,
   already holding the gradient of the branch that skipped the norm), and
   into dweight and dbias (summed over the layers' micro-batches). In the
   library that is the MEAN_RSTD form with two flags:
     NBWD_ACCUMULATE_DIFF_SRC     diff_src   += the input gradient
     NBWD_ACCUMULATE_PARAM_GRADS  diff_gamma += ..., diff_beta += ...
   Without the first flag diff_src is overwritten: a port that sets only
   the second would silently drop the engine's `dinp +=`.

   The program runs two micro-batches through the same gradient buffers and
   checks every output against a float64 loop of the engine's formulas.

   Build (from examples/): cc -O2 -I.. llm_c_layernorm.c -lm
   (add -fopenmp for threads) */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 4, T = 64, C = 768, TOKENS = B * T, ELEMS = TOKENS * C };

/* The engine's LayerNorm backward, as one call: llm.c's
   layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd,
   B, T, C), which adds its results into dinp, dweight and dbias. */
static int layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                              const float *weight, const float *mean, const float *rstd, int b, int t, int c) {
    int64_t dims[3];
    nbwd_layer_norm_bwd_desc desc;
    nbwd_layer_norm_bwd_args args = {0};
    nbwd_status status;
    dims[0] = b; dims[1] = t; dims[2] = c;
    nbwd_layer_norm_bwd_desc_init(&desc, 3, dims); /* f32, normalized over the last axis */
    desc.stats_form = NBWD_STATS_MEAN_RSTD;        /* the forward saved mean and rstd */
    desc.flags = NBWD_ACCUMULATE_DIFF_SRC | NBWD_ACCUMULATE_PARAM_GRADS; /* the engine's += */
    args.src = inp;
    args.diff_dst = dout;
    args.mean = mean;
    args.rstd = rstd;
    args.gamma = weight;
    args.diff_src = dinp;
    args.diff_gamma = dweight;
    args.diff_beta = dbias;
    status = nbwd_layer_norm_bwd(&desc, &args, NULL, 0);
    if (status != NBWD_OK) fprintf(stderr, "norm_bwd: %s\n", nbwd_last_error());
    return status == NBWD_OK;
}

/* A tiny deterministic generator: uniform in [-1, 1). */
static float uniform(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) * (2.0 / 16777216.0) - 1.0);
}

int main(void) {
    float *inp = (float *)malloc(sizeof(float) * ELEMS * 2), *dout = (float *)malloc(sizeof(float) * ELEMS * 2);
    float *dinp = (float *)malloc(sizeof(float) * ELEMS);
    double *ref_dinp = (double *)malloc(sizeof(double) * ELEMS), *tol_dinp = (double *)malloc(sizeof(double) * ELEMS);
    float mean[2][TOKENS], rstd[2][TOKENS], weight[C], dweight[C], dbias[C];
    double ref_dweight[C], ref_dbias[C], tol_dweight[C], tol_dbias[C];
    double worst = 0.0; /* the largest |error| / tolerance over every output */
    unsigned seed = 2024u;
    int step, i, j, ok = 1;
    if (!inp || !dout || !dinp || !ref_dinp || !tol_dinp) return 1;

    /* Two micro-batches of activations (a per-token offset and scale) and
       upstream gradients; the forward's statistics of each token. */
    for (i = 0; i < 2 * TOKENS; ++i) {
        float offset = 0.3f * uniform(&seed), scale = 1.0f + 0.5f * uniform(&seed);
        for (j = 0; j < C; ++j) {
            inp[i * C + j] = offset + scale * uniform(&seed);
            dout[i * C + j] = 0.02f * uniform(&seed);
        }
    }
    for (step = 0; step < 2; ++step)
        for (i = 0; i < TOKENS; ++i) {
            const float *x = inp + ((size_t)step * TOKENS + i) * C;
            double m = 0.0, v = 0.0;
            for (j = 0; j < C; ++j) m += x[j];
            m /= C;
            for (j = 0; j < C; ++j) v += (x[j] - m) * (x[j] - m);
            mean[step][i] = (float)m;
            rstd[step][i] = (float)(1.0 / sqrt(v / C + 1e-5));
        }
    for (j = 0; j < C; ++j) weight[j] = 1.0f + 0.1f * uniform(&seed);
    /* What the gradient buffers hold before the backward: the residual
       branch's gradient in dinp, earlier layers' sums in dweight/dbias. */
    for (i = 0; i < ELEMS; ++i) ref_dinp[i] = dinp[i] = 0.01f * uniform(&seed);
    for (j = 0; j < C; ++j) {
        ref_dweight[j] = dweight[j] = 0.5f * uniform(&seed);
        ref_dbias[j] = dbias[j] = 0.5f * uniform(&seed);
        tol_dweight[j] = tol_dbias[j] = 0.0;
    }
    for (i = 0; i < ELEMS; ++i) tol_dinp[i] = 0.0;

    for (step = 0; step < 2; ++step) {
        const float *x = inp + (size_t)step * ELEMS, *dy = dout + (size_t)step * ELEMS;
        /* each micro-batch adds its gradients into the same buffers */
        if (!layernorm_backward(dinp, dweight, dbias, dy, x, weight, mean[step], rstd[step], B, T, C)) return 1;
        /* The same sums in float64: norm = (x - mean) * rstd,
           dnorm = weight * dout, dinp += rstd * (dnorm - mean(dnorm) -
           norm * mean(dnorm * norm)), dweight += norm * dout, dbias += dout.
           The tolerances: a few f32 roundings of each sum's terms. */
        for (i = 0; i < TOKENS; ++i) {
            double sum_d = 0.0, sum_dn = 0.0, abs_d = 0.0, abs_dn = 0.0;
            for (j = 0; j < C; ++j) {
                double norm = ((double)x[i * C + j] - mean[step][i]) * rstd[step][i];
                double dnorm = (double)weight[j] * dy[i * C + j];
                sum_d += dnorm;
                sum_dn += dnorm * norm;
                abs_d += fabs(dnorm);
                abs_dn += fabs(dnorm * norm);
                ref_dweight[j] += norm * dy[i * C + j];
                ref_dbias[j] += dy[i * C + j];
                tol_dweight[j] += 1e-6 * fabs(norm * dy[i * C + j]);
                tol_dbias[j] += 1e-6 * fabs(dy[i * C + j]);
            }
            for (j = 0; j < C; ++j) {
                double norm = ((double)x[i * C + j] - mean[step][i]) * rstd[step][i];
                double dnorm = (double)weight[j] * dy[i * C + j];
                double grad = rstd[step][i] * (dnorm - sum_d / C - norm * (sum_dn / C));
                ref_dinp[i * C + j] += grad;
                tol_dinp[i * C + j] += 1e-6 * rstd[step][i] * (fabs(dnorm) + abs_d / C + fabs(norm) * abs_dn / C) +
                                       2e-7 * fabs(ref_dinp[i * C + j]);
            }
        }
    }
    for (i = 0; i < ELEMS; ++i) {
        double e = fabs(dinp[i] - ref_dinp[i]) / tol_dinp[i];
        if (e > worst) worst = e;
    }
    for (j = 0; j < C; ++j) {
        double eg = fabs(dweight[j] - ref_dweight[j]) / (tol_dweight[j] + 2e-7 * fabs(ref_dweight[j]));
        double eb = fabs(dbias[j] - ref_dbias[j]) / (tol_dbias[j] + 2e-7 * fabs(ref_dbias[j]));
        if (eg > worst) worst = eg;
        if (eb > worst) worst = eb;
    }
    ok = worst <= 1.0;

    printf("llm.c-style LayerNorm backward, f32 [%d, %d, %d], saved mean/rstd, two micro-batches\n", B, T, C);
    printf("dinp, dweight, dbias += the gradients, against a float64 loop: %s\n", ok ? "within tolerance" : "WRONG");
    fprintf(stderr, "path %s: largest |error| / tolerance %.3f\n", nbwd_isa_name(nbwd_active_isa()), worst);
    printf("dinp[0][0][0..3] = %.4f %.4f %.4f %.4f\n", dinp[0], dinp[1], dinp[2], dinp[3]);
    printf("dweight[0..3]    = %.4f %.4f %.4f %.4f\n", dweight[0], dweight[1], dweight[2], dweight[3]);
    printf("dbias[0..3]      = %.4f %.4f %.4f %.4f\n", dbias[0], dbias[1], dbias[2], dbias[3]);
    free(inp); free(dout); free(dinp); free(ref_dinp); free(tol_dinp);
    return ok ? 0 : 1;
}
