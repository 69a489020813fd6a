/* Host-only check of norm_bwd_gpu.h compiled by a plain C compiler (the
   stub): it validates exactly like the CPU path and returns
   NBWD_ERR_UNSUPPORTED for valid input. Build: cc -std=c99 -pedantic ... */
#define NORM_BWD_IMPLEMENTATION
#include "../../norm_bwd.h"
#define NORM_BWD_GPU_IMPLEMENTATION
#include "../../norm_bwd_gpu.h"

static int passed, failed;
static void nbwdt_check(int ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL: %s\n", what);
    }
}
#include "gpu_cases.h"

int main(void) {
    char *cpu = (char *)calloc(NBWDT_ARENA, 1), *gpu = (char *)calloc(NBWDT_ARENA, 1);
    if (!cpu || !gpu) return 1;
    nbwdt_status_cases(cpu, gpu, NBWD_ERR_UNSUPPORTED);
    nbwdt_check(strstr(nbwd_gpu_last_error(), "no CUDA") != NULL, "stub message says the build has no CUDA");
    printf("stub message: %s\n", nbwd_gpu_last_error());
    nbwdt_cpu_only_cases(cpu, gpu);
    printf("%d passed, %d failed\n", passed, failed);
    free(cpu);
    free(gpu);
    return failed != 0;
}
