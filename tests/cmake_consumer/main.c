/* The CMake and pkg-config consumer (tools/check_packaging.sh): one
   LayerNorm backward call through the installed or added norm_bwd; prints
   whether OpenMP is on, so the check can tell the two targets apart. */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include <stdio.h>

int main(void) {
    float x[2 * 4] = {1, 2, 3, 4, -1, 0, 1, 3}, dy[2 * 4] = {0.5f, -1, 0.25f, 1, 1, 1, -2, 0};
    float mean[2] = {2.5f, 0.75f}, var[2] = {1.25f, 2.1875f}, gamma[4] = {1, 1, 1, 1};
    float dx[2 * 4], dgamma[4], dbeta[4] = {0, 0, 0, 0};
    int64_t dims[2] = {2, 4};
    nbwd_layer_norm_bwd_desc desc;
    nbwd_layer_norm_bwd_args args = {0};
    nbwd_status status;

    nbwd_layer_norm_bwd_desc_init(&desc, 2, dims);
    args.src = x;
    args.diff_dst = dy;
    args.mean = mean;
    args.variance = var;
    args.gamma = gamma;
    args.diff_src = dx;
    args.diff_gamma = dgamma;
    args.diff_beta = dbeta;
    status = nbwd_layer_norm_bwd(&desc, &args, NULL, 0);
    printf("norm_bwd %d.%d: %s, dbeta[0] = %.2f\n", NBWD_VERSION_MAJOR, NBWD_VERSION_MINOR, nbwd_status_string(status),
           dbeta[0]);
#if defined(_OPENMP)
    printf("openmp: yes\n");
#else
    printf("openmp: no\n");
#endif
    return status == NBWD_OK && dbeta[0] == 1.5f ? 0 : 1;
}
