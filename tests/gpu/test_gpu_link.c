/* A C program with the CPU implementation (SIMD paths included) linked with
   the separately compiled GPU implementation (gpu_impl.cu, which carries a
   private static copy of norm_bwd.h): no duplicate symbols, and both paths
   callable. Runs without a GPU (then the GPU calls report unsupported). */
#define NORM_BWD_IMPLEMENTATION
#include "../../norm_bwd.h"
#include "../../norm_bwd_gpu.h"
#include <stdio.h>

static int passed, failed;
static void check(int ok, const char *what) {
    if (ok) passed++;
    else { failed++; printf("FAIL: %s\n", what); }
}

int main(void) {
    nbwd_layer_norm_bwd_desc d;
    int64_t dims[2] = {2, 4};
    size_t need = 0;
    int count = -1;
    nbwd_status s = nbwd_gpu_device_count(&count);
    nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    check(s == NBWD_OK ? count > 0 : (s == NBWD_ERR_UNSUPPORTED && count == 0), "device_count");
    if (s != NBWD_OK) printf("no GPU: %s\n", nbwd_gpu_last_error());
    check(nbwd_gpu_layer_norm_bwd_workspace_size(&d, &need) == NBWD_OK && need > 0, "GPU workspace query");
    check(nbwd_layer_norm_bwd_workspace_size(&d, &need) == NBWD_OK, "CPU workspace query");
    check(nbwd_gpu_layer_norm_bwd(&d, NULL, NULL, 0, NULL) == NBWD_ERR_NULL_POINTER, "GPU validation");
    d.rank = 0;
    check(nbwd_gpu_layer_norm_bwd(&d, NULL, NULL, 0, NULL) == NBWD_ERR_BAD_PARAM, "GPU validation order");
    { /* BatchNorm's two phases link from C */
        float sums[2][4];
        int64_t n = -1;
        check(nbwd_gpu_batch_norm_bwd_reduce(NULL, NULL, sums[0], sums[1], &n, NULL, 0, NULL) == NBWD_ERR_NULL_POINTER &&
                  n == -1,
              "GPU two-phase reduce");
        check(nbwd_gpu_batch_norm_bwd_apply(NULL, NULL, sums[0], sums[1], 8, NULL, 0, NULL) == NBWD_ERR_NULL_POINTER,
              "GPU two-phase apply");
    }
    { /* GroupNorm links from C: the size query, the CPU's validation */
        nbwd_group_norm_bwd_desc g;
        int64_t gd[3] = {2, 4, 3};
        size_t gneed = 0;
        nbwd_group_norm_bwd_desc_init(&g, 3, gd, NBWD_NCX, 2, 1e-5f);
        check(nbwd_gpu_group_norm_bwd_workspace_size(&g, &gneed) == NBWD_OK && gneed > 0, "GPU GroupNorm workspace query");
        check(nbwd_gpu_group_norm_bwd(&g, NULL, NULL, 0, NULL) == NBWD_ERR_NULL_POINTER, "GPU GroupNorm validation");
        g.groups = 3;
        check(nbwd_gpu_group_norm_bwd(&g, NULL, NULL, 0, NULL) == NBWD_ERR_BAD_PARAM, "GPU GroupNorm validation order");
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
