/* Minimal stand-in for the MSVC C runtime's <malloc.h> (see math.h here);
   clang's <mm_malloc.h> wants it in MSVC mode. */
#ifndef NBWD_TEST_MSVC_MALLOC_H
#define NBWD_TEST_MSVC_MALLOC_H
#include <stddef.h>
void *_aligned_malloc(size_t, size_t);
void _aligned_free(void *);
void *_alloca(size_t);
#endif
