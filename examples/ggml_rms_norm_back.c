/* ggml_rms_norm_back.c: a graph engine in the style of ggml (llama.cpp's
   tensor library) running its RMSNorm backward node through the library.

   The engine's call shape: its backward node gets the output gradient dz,
   the input x and epsilon, and nothing the forward computed: it finds each
   row's sum of squares itself. Its tensors are 4-D, ne[0] the row (dense),
   with byte strides nb[1..3] that may be padded (views). The graph then
   adds the node's result into x's gradient in a separate pass. In the
   library that is one call:
     nbwd_rms_norm_bwd, stats_form NBWD_STATS_NONE   (x alone: the call
                       computes mean(x^2) per row, reading x while in cache)
     use_affine = 0                                  (the node has no gamma)
     flags NBWD_ACCUMULATE_DIFF_SRC                  (grad_x += dx: the
                       graph's add, without its extra pass over memory)
   and the strides are ggml's byte strides divided by the element size.

   The program checks the result against a float64 loop of the node's
   formula (ggml sums in double, as this loop does) plus the add.

   Build (from examples/): cc -O2 -I.. ggml_rms_norm_back.c -lm
   (add -fopenmp for threads) */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* A 4-D f32 tensor as such an engine describes one (written for this
   example): ne[0] elements per row, ne[1] rows, ne[2] and ne[3] batch
   dims; nb[k] the byte distance between neighbours along dim k. */
typedef struct tensor4 {
    int64_t ne[4];
    size_t nb[4];
    float *data;
} tensor4;

static float *at(const tensor4 *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (float *)(void *)((char *)t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
}

/* A tensor of ne0 x ne1 x ne2 x ne3 whose rows are `pad` floats apart
   more than dense (a view into a wider buffer). */
static tensor4 tensor_new(int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, int64_t pad) {
    tensor4 t;
    t.ne[0] = ne0; t.ne[1] = ne1; t.ne[2] = ne2; t.ne[3] = ne3;
    t.nb[0] = sizeof(float);
    t.nb[1] = (size_t)(ne0 + pad) * sizeof(float);
    t.nb[2] = t.nb[1] * (size_t)ne1;
    t.nb[3] = t.nb[2] * (size_t)ne2;
    t.data = (float *)calloc(t.nb[3] * (size_t)ne3 / sizeof(float), sizeof(float));
    return t;
}

/* grad_x += rms_norm_back(dz, x, eps), as one library call. */
static int rms_norm_back_accumulate(tensor4 *grad_x, const tensor4 *dz, const tensor4 *x, float eps) {
    const tensor4 *t[3];
    int64_t dims[4], strides[3][4];
    nbwd_rms_norm_bwd_desc desc;
    nbwd_rms_norm_bwd_args args = {0};
    nbwd_status status;
    int k, d;
    t[0] = x; t[1] = dz; t[2] = grad_x;
    for (d = 0; d < 4; ++d) dims[d] = x->ne[3 - d]; /* outermost first: [ne3, ne2, ne1, ne0] */
    for (k = 0; k < 3; ++k)
        for (d = 0; d < 4; ++d) strides[k][d] = (int64_t)(t[k]->nb[3 - d] / sizeof(float));
    nbwd_rms_norm_bwd_desc_init(&desc, 4, dims); /* f32, normalized over the last axis (ne0) */
    desc.stats_form = NBWD_STATS_NONE;           /* x alone: mean(x^2) found in the call */
    desc.epsilon = eps;
    desc.use_affine = 0;                         /* no gamma */
    desc.flags = NBWD_ACCUMULATE_DIFF_SRC;       /* grad_x += ... */
    desc.src_strides = strides[0];
    desc.diff_dst_strides = strides[1];
    desc.diff_src_strides = strides[2];
    args.src = x->data;
    args.diff_dst = dz->data;
    args.diff_src = grad_x->data;
    status = nbwd_rms_norm_bwd(&desc, &args, NULL, 0);
    if (status != NBWD_OK) fprintf(stderr, "norm_bwd: %s\n", nbwd_last_error());
    return status == NBWD_OK;
}

/* A tiny deterministic generator: uniform in [-1, 1). */
static float uniform(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) * (2.0 / 16777216.0) - 1.0);
}

int main(void) {
    enum { NE0 = 512, NE1 = 24, NE2 = 3, NE3 = 2 };
    const float eps = 1e-6f;
    /* x a padded view (rows 16 floats apart more than dense), dz and the
       gradient dense */
    tensor4 x = tensor_new(NE0, NE1, NE2, NE3, 16), dz = tensor_new(NE0, NE1, NE2, NE3, 0);
    tensor4 grad = tensor_new(NE0, NE1, NE2, NE3, 0);
    double *prev = (double *)malloc(sizeof(double) * NE0 * NE1 * NE2 * NE3), worst = 0.0;
    unsigned seed = 7u;
    int64_t i0, i1, i2, i3, row = 0;
    int ok;
    if (!x.data || !dz.data || !grad.data || !prev) return 1;
    for (i3 = 0; i3 < NE3; ++i3)
        for (i2 = 0; i2 < NE2; ++i2)
            for (i1 = 0; i1 < NE1; ++i1) {
                /* activations with a per-row offset (RMSNorm does not centre:
                   the mean matters) and scale; gradients; the gradient that
                   x already holds from the graph's other consumers */
                float offset = 0.5f * uniform(&seed), scale = 0.5f + 0.4f * uniform(&seed);
                for (i0 = 0; i0 < NE0; ++i0) {
                    *at(&x, i0, i1, i2, i3) = offset + scale * uniform(&seed);
                    *at(&dz, i0, i1, i2, i3) = 0.05f * uniform(&seed);
                    *at(&grad, i0, i1, i2, i3) = 0.01f * uniform(&seed);
                }
            }
    for (i3 = 0; i3 < NE3; ++i3)
        for (i2 = 0; i2 < NE2; ++i2)
            for (i1 = 0; i1 < NE1; ++i1)
                for (i0 = 0; i0 < NE0; ++i0) prev[((i3 * NE2 + i2) * NE1 + i1) * NE0 + i0] = *at(&grad, i0, i1, i2, i3);

    if (!rms_norm_back_accumulate(&grad, &dz, &x, eps)) return 1;

    /* The node's formula in float64, row by row, as ggml computes it:
       sum_xx = sum x^2, sum_xdz = sum x * dz, rrms = 1 / sqrt(sum_xx / n +
       eps), dx = rrms * (dz - x * sum_xdz / (sum_xx + eps * n)); then the
       graph's add. Tolerance: a few f32 roundings of each term. */
    for (i3 = 0; i3 < NE3; ++i3)
        for (i2 = 0; i2 < NE2; ++i2)
            for (i1 = 0; i1 < NE1; ++i1, ++row) {
                double sum_xx = 0.0, sum_xdz = 0.0, abs_xdz = 0.0, rrms;
                for (i0 = 0; i0 < NE0; ++i0) {
                    double xv = *at(&x, i0, i1, i2, i3), dv = *at(&dz, i0, i1, i2, i3);
                    sum_xx += xv * xv;
                    sum_xdz += xv * dv;
                    abs_xdz += fabs(xv * dv);
                }
                rrms = 1.0 / sqrt(sum_xx / NE0 + eps);
                for (i0 = 0; i0 < NE0; ++i0) {
                    double xv = *at(&x, i0, i1, i2, i3), dv = *at(&dz, i0, i1, i2, i3);
                    double dx = rrms * (dv - xv * sum_xdz / (sum_xx + (double)eps * NE0));
                    double want = prev[row * NE0 + i0] + dx;
                    double tol = 1e-6 * rrms * (fabs(dv) + fabs(xv) * abs_xdz / (sum_xx + (double)eps * NE0)) +
                                 2e-7 * (fabs(dx) + fabs(want));
                    double e = fabs(*at(&grad, i0, i1, i2, i3) - want) / tol;
                    if (e > worst) worst = e;
                }
            }
    ok = worst <= 1.0;

    printf("ggml-style rms_norm_back, f32 [%d, %d, %d, %d] (ne0 first), x a padded view, no saved statistics\n",
           NE0, NE1, NE2, NE3);
    printf("grad_x += dx, against a float64 loop: %s\n", ok ? "within tolerance" : "WRONG");
    fprintf(stderr, "path %s: largest |error| / tolerance %.3f\n", nbwd_isa_name(nbwd_active_isa()), worst);
    printf("grad_x[0..3] of row 0 = %.4f %.4f %.4f %.4f\n", *at(&grad, 0, 0, 0, 0), *at(&grad, 1, 0, 0, 0),
           *at(&grad, 2, 0, 0, 0), *at(&grad, 3, 0, 0, 0));
    free(x.data); free(dz.data); free(grad.data); free(prev);
    return ok ? 0 : 1;
}
