/* compile_two_tu_a.c - first of a two-translation-unit program (built by
   tools/compile_check.sh as C99 and as C++11, gcc and clang, -O0/-O2, with
   and without OpenMP, NORM_BWD_STATIC, NORM_BWD_NO_SIMD). This file holds the
   implementation, included the stb way: the header once for the
   declarations, then again with NORM_BWD_IMPLEMENTATION defined. */
#include "norm_bwd.h"

#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"

#include <math.h>
#include <string.h>

int two_tu_a_layer_norm(void);

/* LayerNorm backward on 4 rows of 8 with consistent statistics and gamma = 1:
   every row of dx sums to ~0, and diff_beta is the column sum of dy. */
int two_tu_a_layer_norm(void) {
    float x[32], dy[32], dx[32], mean[4], var[4], gamma[8], dg[8], db[8];
    int64_t dims[2] = {4, 8};
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    size_t ws = 0;
    int r, i;
    for (r = 0; r < 4; ++r) {
        double m = 0.0, v = 0.0;
        for (i = 0; i < 8; ++i) {
            x[r * 8 + i] = (float)((r + 1) * 0.25 + ((i * 5 + r) % 8) * 0.5);
            dy[r * 8 + i] = (float)(((i * 3 + r) % 7) - 3) * 0.125f;
            m += x[r * 8 + i];
        }
        m /= 8.0;
        for (i = 0; i < 8; ++i) v += (x[r * 8 + i] - m) * (x[r * 8 + i] - m);
        mean[r] = (float)m;
        var[r] = (float)(v / 8.0);
    }
    for (i = 0; i < 8; ++i) gamma[i] = 1.0f;
    nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    if (nbwd_layer_norm_bwd_workspace_size(&d, &ws) != NBWD_OK) return 1;
    memset(&a, 0, sizeof a);
    a.src = x;
    a.diff_dst = dy;
    a.mean = mean;
    a.variance = var;
    a.gamma = gamma;
    a.diff_src = dx;
    a.diff_gamma = dg;
    a.diff_beta = db;
    if (nbwd_layer_norm_bwd(&d, &a, NULL, 0) != NBWD_OK) return 2;
    for (r = 0; r < 4; ++r) {
        double s = 0.0, n2 = 0.0;
        for (i = 0; i < 8; ++i) {
            s += dx[r * 8 + i];
            n2 += (double)dx[r * 8 + i] * dx[r * 8 + i];
        }
        if (fabs(s) > 1e-5 * (1.0 + sqrt(n2))) return 3;
    }
    for (i = 0; i < 8; ++i) {
        double s = 0.0;
        for (r = 0; r < 4; ++r) s += dy[r * 8 + i];
        if (fabs(db[i] - s) > 1e-6) return 4;
    }
    return 0;
}
