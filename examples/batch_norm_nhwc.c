/* batch_norm_nhwc.c: BatchNorm training backward in a small training loop.
   Activations are NHWC ([N, H, W, C], NBWD_NXC); each step's batch is split
   into micro-batches whose parameter gradients add up in place
   (NBWD_ACCUMULATE_PARAM_GRADS) before one SGD update of gamma. The scratch
   workspace is sized once, allocated once and reused by every call, so the
   library allocates nothing in the loop.

   Build (from examples/): cc -O2 -I.. batch_norm_nhwc.c -lm
   (add -fopenmp for threads) */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { MICRO_N = 4, H = 6, W = 6, C = 16, MICRO_BATCHES = 3, STEPS = 3 };
enum { PIXELS = MICRO_N * H * W, ELEMS = PIXELS * C }; /* per micro-batch */

static float uniform(unsigned *state) { /* deterministic, in [-1, 1) */
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) * (2.0 / 16777216.0) - 1.0);
}

int main(void) {
    static float x[ELEMS], dy[ELEMS], dx[ELEMS];
    float mean[C], var[C], gamma[C], dgamma[C], dbeta[C];
    int64_t dims[4] = {MICRO_N, H, W, C}; /* NXC: channels last */
    nbwd_batch_norm_bwd_desc desc;
    nbwd_batch_norm_bwd_args args = {0};
    size_t ws_bytes = 0;
    void *ws;
    double worst_dx_sum = 0.0;
    unsigned seed = 2024u;
    int step, mb, p, c;

    for (c = 0; c < C; ++c) gamma[c] = 1.0f;

    /* Once, at set-up: the descriptor (eps 1e-5, mean + variance saved by the
       forward pass) and its workspace. Every micro-batch has this shape, so
       one workspace serves every call. */
    nbwd_batch_norm_bwd_desc_init(&desc, 4, dims, NBWD_NXC, 1e-5f);
    if (nbwd_batch_norm_bwd_workspace_size(&desc, &ws_bytes) != NBWD_OK) return 1;
    ws = malloc(ws_bytes ? ws_bytes : 1);
    if (!ws) return 1;
    printf("BatchNorm backward, NHWC [%d, %d, %d, %d] per micro-batch, %d micro-batches per step\n", MICRO_N, H, W,
           C, MICRO_BATCHES);

    args.src = x;
    args.diff_dst = dy;
    args.mean = mean;
    args.variance = var;
    args.gamma = gamma;
    args.diff_src = dx;
    args.diff_gamma = dgamma;
    args.diff_beta = dbeta;

    for (step = 0; step < STEPS; ++step) {
        for (mb = 0; mb < MICRO_BATCHES; ++mb) {
            nbwd_status status;
            /* This micro-batch's activations and upstream gradients, and the
               per-channel batch statistics its forward pass saved. */
            for (p = 0; p < PIXELS; ++p)
                for (c = 0; c < C; ++c) {
                    x[p * C + c] = 0.1f * c + (1.0f + 0.05f * c) * uniform(&seed);
                    dy[p * C + c] = 0.1f * uniform(&seed) + 0.02f * (c % 3);
                }
            for (c = 0; c < C; ++c) {
                double m = 0.0, v = 0.0;
                for (p = 0; p < PIXELS; ++p) m += x[p * C + c];
                m /= PIXELS;
                for (p = 0; p < PIXELS; ++p) v += (x[p * C + c] - m) * (x[p * C + c] - m);
                mean[c] = (float)m;
                var[c] = (float)(v / PIXELS);
            }

            /* The first micro-batch of a step overwrites dgamma/dbeta, the
               others add to them. diff_src is always overwritten. */
            desc.flags = mb == 0 ? 0u : NBWD_ACCUMULATE_PARAM_GRADS;
            status = nbwd_batch_norm_bwd(&desc, &args, ws, ws_bytes);
            if (status != NBWD_OK) {
                fprintf(stderr, "norm_bwd: %s\n", nbwd_status_string(status));
                free(ws);
                return 1;
            }

            /* (here dx would flow on to the previous layer) A property of
               BatchNorm's backward to check it by: dx sums to zero over each
               channel's batch and spatial positions. */
            for (c = 0; c < C; ++c) {
                double s = 0.0, a = 0.0;
                for (p = 0; p < PIXELS; ++p) {
                    s += dx[p * C + c];
                    a += fabs(dx[p * C + c]);
                }
                if (fabs(s) / a > worst_dx_sum) worst_dx_sum = fabs(s) / a;
            }
        }
        /* (sums over the step's whole batch: 3 decimals leave the last bits,
           which vary with the SIMD path, out of the printed text) */
        printf("step %d: dgamma[0..3] = %.3f %.3f %.3f %.3f  dbeta[0..3] = %.3f %.3f %.3f %.3f\n", step, dgamma[0],
               dgamma[1], dgamma[2], dgamma[3], dbeta[0], dbeta[1], dbeta[2], dbeta[3]);
        printf("        last dx[0][0][0][0..3] = %.4f %.4f %.4f %.4f\n", dx[0], dx[1], dx[2], dx[3]);
        for (c = 0; c < C; ++c) gamma[c] -= 0.05f * dgamma[c]; /* the optimizer's step */
    }
    printf("dx sums to zero per channel (within 1e-5 of sum |dx|): %s\n", worst_dx_sum < 1e-5 ? "yes" : "NO");
    fprintf(stderr, "path %s, workspace %lu bytes, worst |sum dx| / sum |dx| %.1e\n", nbwd_isa_name(nbwd_active_isa()),
            (unsigned long)ws_bytes, worst_dx_sum);
    free(ws);
    return worst_dx_sum < 1e-5 ? 0 : 1;
}
