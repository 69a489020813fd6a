/* quickstart.c: LayerNorm backward over the last axis of a [4, 8] tensor.
   Next to norm_bwd.h and norm_bwd_simd.h: cc -O2 quickstart.c -lm
   (from examples/: cc -O2 -I.. quickstart.c -lm; add -fopenmp for threads) */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include <math.h>
#include <stdio.h>

int main(void) {
    enum { ROWS = 4, COLS = 8 };
    float x[ROWS * COLS], dy[ROWS * COLS], dx[ROWS * COLS];
    float mean[ROWS], var[ROWS], gamma[COLS], dgamma[COLS], dbeta[COLS];
    int64_t dims[2] = {ROWS, COLS};
    nbwd_layer_norm_bwd_desc desc;
    nbwd_layer_norm_bwd_args args = {0};
    nbwd_status status;
    int r, c;

    for (r = 0; r < ROWS; ++r) {
        double m = 0.0, v = 0.0;
        for (c = 0; c < COLS; ++c) {
            x[r * COLS + c] = (float)sin(r + 0.7 * c);
            dy[r * COLS + c] = (float)cos(2.0 * r - c);
            m += x[r * COLS + c];
        }
        m /= COLS;
        for (c = 0; c < COLS; ++c) v += (x[r * COLS + c] - m) * (x[r * COLS + c] - m);
        mean[r] = (float)m;
        var[r] = (float)(v / COLS); /* the forward pass's saved statistics */
    }
    for (c = 0; c < COLS; ++c) gamma[c] = 1.0f + 0.1f * c;

    nbwd_layer_norm_bwd_desc_init(&desc, 2, dims); /* axis -1, affine, eps 1e-5, f32 */
    args.src = x;
    args.diff_dst = dy;
    args.mean = mean;
    args.variance = var;
    args.gamma = gamma;
    args.diff_src = dx;
    args.diff_gamma = dgamma;
    args.diff_beta = dbeta;
    status = nbwd_layer_norm_bwd(&desc, &args, NULL, 0); /* NULL: allocates its workspace */
    if (status != NBWD_OK) {
        fprintf(stderr, "norm_bwd: %s\n", nbwd_status_string(status));
        return 1;
    }
    fprintf(stderr, "path %s\n", nbwd_isa_name(nbwd_active_isa())); /* varies by CPU */
    printf("dx[0][0..3]  = %.6f %.6f %.6f %.6f\n", dx[0], dx[1], dx[2], dx[3]);
    printf("dgamma[0..3] = %.6f %.6f %.6f %.6f\n", dgamma[0], dgamma[1], dgamma[2], dgamma[3]);
    printf("dbeta[0..3]  = %.6f %.6f %.6f %.6f\n", dbeta[0], dbeta[1], dbeta[2], dbeta[3]);
    return 0;
}
