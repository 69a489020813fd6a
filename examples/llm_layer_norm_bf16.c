/* llm_layer_norm_bf16.c: the LayerNorm backward of a transformer block as an
   ML engine runs it in mixed precision. Activations and their gradients are
   bf16 [batch, seq, hidden]; the forward pass saved the f32 mean and rstd
   (1/sqrt(var + eps)) of every token, as PyTorch's native_layer_norm does;
   gamma and the parameter gradients are f32 master weights. The result is
   checked against a float64 computation of the same formulas.

   Build (from examples/): cc -O2 -I.. llm_layer_norm_bf16.c -lm
   (add -fopenmp for threads) */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include <math.h>
#include <stdio.h>

enum { BATCH = 2, SEQ = 16, HIDDEN = 256, TOKENS = BATCH * SEQ, ELEMS = TOKENS * HIDDEN };

/* A tiny deterministic generator: uniform in [-1, 1). */
static float uniform(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) * (2.0 / 16777216.0) - 1.0);
}

/* The spacing of bf16 values (8 significant bits) around v. */
static double bf16_ulp(double v) {
    int e;
    (void)frexp(v == 0.0 ? 1e-30 : v, &e);
    return ldexp(1.0, e - 8);
}

int main(void) {
    /* 16-bit tensors are plain uint16_t bit patterns (storage only). */
    static uint16_t x[ELEMS], dy[ELEMS], dx[ELEMS];
    static float x32[ELEMS], dy32[ELEMS], dx32[ELEMS];
    float mean[TOKENS], rstd[TOKENS], gamma[HIDDEN], dgamma[HIDDEN], dbeta[HIDDEN];
    static double ref_dx[ELEMS];
    double ref_dgamma[HIDDEN], ref_dbeta[HIDDEN], abs_dgamma[HIDDEN], abs_dbeta[HIDDEN];
    int64_t dims[3] = {BATCH, SEQ, HIDDEN};
    nbwd_layer_norm_bwd_desc desc;
    nbwd_layer_norm_bwd_args args = {0};
    nbwd_status status;
    double dx_ulps = 0.0, param_rel = 0.0;
    unsigned seed = 12345u;
    int t, h;

    /* Inputs as the engine would hold them: bf16 activations with a per-token
       offset and scale, bf16 upstream gradients, f32 gamma. */
    for (t = 0; t < TOKENS; ++t) {
        float offset = 0.5f * uniform(&seed), scale = 1.0f + 0.5f * uniform(&seed);
        for (h = 0; h < HIDDEN; ++h) {
            x32[t * HIDDEN + h] = offset + scale * uniform(&seed);
            dy32[t * HIDDEN + h] = 0.1f * uniform(&seed);
        }
    }
    for (h = 0; h < HIDDEN; ++h) gamma[h] = 1.0f + 0.2f * uniform(&seed);
    nbwd_f32_to_bf16_n(x32, x, ELEMS); /* round to nearest even */
    nbwd_f32_to_bf16_n(dy32, dy, ELEMS);
    nbwd_bf16_to_f32_n(x, x32, ELEMS); /* the values the bf16 tensors hold */
    nbwd_bf16_to_f32_n(dy, dy32, ELEMS);

    /* What the forward pass saved: f32 mean and rstd per token (eps 1e-5). */
    for (t = 0; t < TOKENS; ++t) {
        double m = 0.0, v = 0.0;
        for (h = 0; h < HIDDEN; ++h) m += x32[t * HIDDEN + h];
        m /= HIDDEN;
        for (h = 0; h < HIDDEN; ++h) v += (x32[t * HIDDEN + h] - m) * (x32[t * HIDDEN + h] - m);
        mean[t] = (float)m;
        rstd[t] = (float)(1.0 / sqrt(v / HIDDEN + 1e-5));
    }

    /* The backward call: normalize over the last axis (hidden), bf16 data,
       f32 statistics in the mean + rstd form, f32 parameters. */
    nbwd_layer_norm_bwd_desc_init(&desc, 3, dims);
    desc.data_dtype = NBWD_BF16;
    desc.stats_dtype = NBWD_F32;
    desc.param_dtype = NBWD_F32;
    desc.stats_form = NBWD_STATS_MEAN_RSTD; /* epsilon is not read in this form */
    args.src = x;
    args.diff_dst = dy;
    args.mean = mean;
    args.rstd = rstd;
    args.gamma = gamma;
    args.diff_src = dx;
    args.diff_gamma = dgamma;
    args.diff_beta = dbeta;
    status = nbwd_layer_norm_bwd(&desc, &args, NULL, 0);
    if (status != NBWD_OK) {
        fprintf(stderr, "norm_bwd: %s\n", nbwd_status_string(status));
        return 1;
    }
    nbwd_bf16_to_f32_n(dx, dx32, ELEMS);

    /* The same formulas in float64, from the same bf16 inputs and f32 stats:
       xhat = (x - mean) * rstd, g = dy * gamma,
       dx = rstd * (g - mean(g) - xhat * mean(g * xhat)). */
    for (h = 0; h < HIDDEN; ++h) ref_dgamma[h] = ref_dbeta[h] = abs_dgamma[h] = abs_dbeta[h] = 0.0;
    for (t = 0; t < TOKENS; ++t) {
        const float *xr = x32 + t * HIDDEN, *dyr = dy32 + t * HIDDEN;
        double sum_g = 0.0, sum_gx = 0.0;
        for (h = 0; h < HIDDEN; ++h) {
            double xhat = ((double)xr[h] - mean[t]) * rstd[t], g = (double)dyr[h] * gamma[h];
            sum_g += g;
            sum_gx += g * xhat;
            ref_dgamma[h] += dyr[h] * xhat;
            ref_dbeta[h] += dyr[h];
            abs_dgamma[h] += fabs(dyr[h] * xhat); /* the scale of a sum's rounding */
            abs_dbeta[h] += fabs(dyr[h]);
        }
        for (h = 0; h < HIDDEN; ++h) {
            double xhat = ((double)xr[h] - mean[t]) * rstd[t], g = (double)dyr[h] * gamma[h];
            ref_dx[t * HIDDEN + h] = rstd[t] * (g - sum_g / HIDDEN - xhat * (sum_gx / HIDDEN));
        }
    }
    for (t = 0; t < ELEMS; ++t) {
        double e = fabs(dx32[t] - ref_dx[t]) / bf16_ulp(ref_dx[t]);
        if (e > dx_ulps) dx_ulps = e;
    }
    for (h = 0; h < HIDDEN; ++h) {
        double eg = fabs(dgamma[h] - ref_dgamma[h]) / abs_dgamma[h];
        double eb = fabs(dbeta[h] - ref_dbeta[h]) / abs_dbeta[h];
        if (eg > param_rel) param_rel = eg;
        if (eb > param_rel) param_rel = eb;
    }

    /* dx is bf16: the best it can be is the exact value rounded to bf16, half
       a unit in the last place (ulp) away. The f32 gradients are sums over
       the tokens: their error is measured against the sum of the terms'
       magnitudes (f32 rounding: about 1e-7). The exact figure varies with the
       SIMD path in its last bits, so it goes to stderr. */
    printf("LayerNorm backward, bf16 [%d, %d, %d], f32 mean/rstd and params\n", BATCH, SEQ, HIDDEN);
    printf("dx max error vs float64: %.2f bf16 ulp\n", dx_ulps);
    printf("dgamma, dbeta max error vs float64 below 1e-6 of sum |terms|: %s\n", param_rel < 1e-6 ? "yes" : "NO");
    fprintf(stderr, "path %s: dx %.6f ulp, dgamma/dbeta %.1e of sum |terms|\n", nbwd_isa_name(nbwd_active_isa()),
            dx_ulps, param_rel);
    printf("dx[0][0][0..3] = %.4f %.4f %.4f %.4f\n", dx32[0], dx32[1], dx32[2], dx32[3]);
    printf("dgamma[0..3]   = %.4f %.4f %.4f %.4f\n", dgamma[0], dgamma[1], dgamma[2], dgamma[3]);
    printf("dbeta[0..3]    = %.4f %.4f %.4f %.4f\n", dbeta[0], dbeta[1], dbeta[2], dbeta[3]);
    return dx_ulps <= 0.51 && param_rel < 1e-6 ? 0 : 1;
}
