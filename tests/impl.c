/* impl.c - the one translation unit of the tests that compiles norm_bwd's
   implementation. The allocator hooks (a documented configuration macro
   pair) route the library's internal workspace through counting functions
   in main.c, so the tests can check that every allocation is freed, that a
   caller workspace means no allocation at all, and can make an allocation
   fail (NBWD_ERR_OUT_OF_MEMORY). */
#include <stddef.h>
void *t_hook_malloc(size_t size);
void t_hook_free(void *ptr);
#define NORM_BWD_MALLOC(size) t_hook_malloc(size)
#define NORM_BWD_FREE(ptr) t_hook_free(ptr)
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
