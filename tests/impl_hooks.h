/* impl_hooks.h - for a program linked to tests/impl.c's library without
   main.c's counting allocator hooks (the sanitizer builds share that library
   between the suite, the hardening test and the fuzz targets): the hooks,
   passed through to malloc and free. One file of the program includes it. */
#ifndef NBWD_TEST_IMPL_HOOKS_H
#define NBWD_TEST_IMPL_HOOKS_H
#include <stdlib.h>
void *t_hook_malloc(size_t size);
void t_hook_free(void *ptr);
void *t_hook_malloc(size_t size) { return malloc(size); }
void t_hook_free(void *ptr) { free(ptr); }
#endif
