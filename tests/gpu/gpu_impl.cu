/* The GPU implementation alone, as a user would build it: norm_bwd_gpu.h
   brings a private (static) copy of norm_bwd.h's validation, so this object
   links next to a C program that has the CPU implementation (see
   test_gpu_link.c). */
#define NORM_BWD_GPU_IMPLEMENTATION
#include "../../norm_bwd_gpu.h"
