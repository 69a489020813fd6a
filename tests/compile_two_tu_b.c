/* compile_two_tu_b.c - second translation unit: sees only the declarations
   and calls the implementation compiled in compile_two_tu_a.c. With
   NORM_BWD_STATIC every library function is static to its file, so this file
   then carries its own copy (two private copies must link side by side). */
#ifdef NORM_BWD_STATIC
#define NORM_BWD_IMPLEMENTATION
#endif
#include "norm_bwd.h"

#include <stdio.h>
#include <string.h>

int two_tu_a_layer_norm(void);

int main(void) {
    /* BatchNorm NCX [2, 3, 4] with zero mean, unit variance and dy = 1: dx = 0. */
    float x[24], dy[24], dx[24], mean[3] = {0, 0, 0}, var[3] = {1, 1, 1}, dg[3], db[3];
    int64_t dims[3] = {2, 3, 4};
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    int i, rc;
    for (i = 0; i < 24; ++i) {
        x[i] = (float)((i % 4) - 1.5);
        dy[i] = 1.0f;
    }
    nbwd_batch_norm_bwd_desc_init(&d, 3, dims, NBWD_NCX, 1e-5f);
    memset(&a, 0, sizeof a);
    a.src = x;
    a.diff_dst = dy;
    a.mean = mean;
    a.variance = var;
    a.diff_src = dx;
    a.diff_gamma = dg;
    a.diff_beta = db;
    if (nbwd_batch_norm_bwd(&d, &a, NULL, 0) != NBWD_OK) {
        printf("FAIL: batch norm status\n");
        return 1;
    }
    for (i = 0; i < 24; ++i)
        if (dx[i] > 1e-5f || dx[i] < -1e-5f) {
            printf("FAIL: dx[%d] = %g\n", i, (double)dx[i]);
            return 1;
        }
    for (i = 0; i < 3; ++i)
        if (db[i] != 8.0f) {
            printf("FAIL: diff_beta[%d] = %g\n", i, (double)db[i]);
            return 1;
        }
    if (nbwd_bf16_to_f32(nbwd_f32_to_bf16(1.5f)) != 1.5f || nbwd_f16_to_f32(nbwd_f32_to_f16(-2.25f)) != -2.25f) {
        printf("FAIL: conversions\n");
        return 1;
    }
    if (!nbwd_isa_supported(NBWD_ISA_SCALAR) || !nbwd_status_string(NBWD_ERR_BAD_PARAM)[0]) {
        printf("FAIL: isa / status string\n");
        return 1;
    }
    rc = two_tu_a_layer_norm();
    if (rc != 0) {
        printf("FAIL: layer norm in the other file (%d)\n", rc);
        return 1;
    }
    printf("OK (isa %s)\n", nbwd_isa_name(nbwd_active_isa()));
    return 0;
}
