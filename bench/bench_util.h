/* bench/bench_util.h - what both benchmark programs (bench.c, ab.c) need:
   a monotonic clock, an aligned zeroed allocation that exits on failure,
   and a median. Static functions; include once per program after
   _POSIX_C_SOURCE is defined. */
#ifndef NBWD_BENCH_UTIL_H
#define NBWD_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 64-byte aligned, rounded up to whole cache lines with one line of slack
   (never 0 bytes), zeroed so that every page is touched before timing. */
static void *xalloc(size_t bytes) {
    size_t padded = (bytes + 127) / 64 * 64;
    void *p = NULL;
    if (posix_memalign(&p, 64, padded) != 0 || !p) {
        fprintf(stderr, "out of memory (%.1f MiB)\n", (double)bytes / 1048576.0);
        exit(2);
    }
    memset(p, 0, padded);
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}
static double median_of(double *v, int n) { /* sorts v */
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
