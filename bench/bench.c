/* bench/bench.c - norm_bwd benchmark: LayerNorm, BatchNorm and GroupNorm
   backward against a bandwidth ceiling measured in the same run, and against
   oneDNN (GroupNorm: none in oneDNN 2.6; PyTorch is its peer, timed by
   bench/torch_peer.py after the table).

   Build (bench.mk does this):  cc -std=c99 -O2 -fopenmp -I. bench/bench.c
   bench/onednn.c [-DNBWD_BENCH_ONEDNN -ldnnl] -lm
   Run:  nbwd_bench [--shapes LIST] [--dtype f32|bf16|f16[,..]] [--threads N[,M..]]
                    [--isa NAME] [--reps N] [--csv FILE] [--plot FILE.png]
                    [--workspace auto|caller] [--no-onednn] [--quick]

   What a row measures: one complete library call (validation, dispatch,
   workspace, threads, dx + dgamma + dbeta), called back to back on the same
   buffers. Before timing, each variant's output is checked against a float64
   reference. Threads: omp_set_num_threads(T) for both libraries and the
   library's num_threads = 0 (its own small-problem rule applies); oneDNN's
   primitive is created after that, once per thread count, because it keeps
   the thread count it was created with.

   Bytes moved (the GB/s formula):
     LayerNorm [R x N]:  3*R*N*esz (x, dy read; dx written) + 2*R*4 (mean,
                         variance) + 3*N*4 (gamma read; dgamma, dbeta written)
     BatchNorm [C chans, M = N*spatial]: 3*M*C*esz + 5*C*4 (mean, variance,
                         gamma, dgamma, dbeta)
     GroupNorm [N, C, spatial S, G groups]: 3*N*C*S*esz + 2*N*G*4 (mean,
                         variance) + 3*C*4 (gamma, dgamma, dbeta)
   esz = 4 for f32, 2 for bf16/f16. Statistics and parameters are f32.

   Ceilings: c[i] = a[i] + b[i] over float arrays (read two, write one),
   same bytes counting (12 bytes per element), median of the passes:
     DRAM  3 x 256 MiB, regular and non-temporal stores, per thread count
     L3    3 x 4 MiB (12 MiB) split over the threads, one parallel region
           per pass (what a library call pays); more with many threads, so
           that each thread's share stays 4x its L2 (at most half the L3)
     L2    3 x 170 KiB (0.5 MiB) likewise
   and, for DRAM, the two halves of that traffic alone: the reads of a and b
   (8 bytes per element) and the non-temporal writes of c (4 bytes), with
   the rate a kernel would reach that did its reads and its writes one after
   the other, 12 / (8 / reads + 4 / writes) bytes per ns: what limits a
   kernel that reduces (reads) first and writes dx later, unless the two
   overlap.
   A row is compared with the ceiling of its footprint class (x + dy + dx
   bytes <= 2 x the per-core L2: L2; <= 3/4 of L3: L3; else DRAM), taking the
   best rate over thread counts <= the row's and (DRAM) over both store
   kinds. Cache sizes come from sysfs (glibc's sysconf can report the host's
   L3 in a VM). */
#define _POSIX_C_SOURCE 200809L
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
#include "onednn.h"
#include "bench_util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(_OPENMP)
#include <omp.h>
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BENCH_X86 1
#endif

#define MAX_PROBLEMS 128
#define MAX_THREADS_LIST 8
#define MAX_ROWS 1024

/* ------------------------------------------------------------ utilities */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* [0, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static int max_threads(void) {
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
}
static void set_threads(int t) {
#if defined(_OPENMP)
    omp_set_num_threads(t);
#else
    (void)t;
#endif
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

/* ------------------------------------------------------------- ceilings */
#if defined(BENCH_X86)
__attribute__((target("avx2"))) static void add_avx2(const float *a, const float *b, float *c, size_t n, int nt) {
    size_t i = 0;
    if (nt && ((uintptr_t)c % 32) == 0) {
        for (; i + 32 <= n; i += 32) {
            _mm256_stream_ps(c + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
            _mm256_stream_ps(c + i + 8, _mm256_add_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8)));
            _mm256_stream_ps(c + i + 16, _mm256_add_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16)));
            _mm256_stream_ps(c + i + 24, _mm256_add_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24)));
        }
        _mm_sfence();
    } else {
        for (; i + 32 <= n; i += 32) {
            _mm256_storeu_ps(c + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
            _mm256_storeu_ps(c + i + 8, _mm256_add_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8)));
            _mm256_storeu_ps(c + i + 16, _mm256_add_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16)));
            _mm256_storeu_ps(c + i + 24, _mm256_add_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24)));
        }
    }
    for (; i < n; ++i) c[i] = a[i] + b[i];
}
static void add_sse(const float *a, const float *b, float *c, size_t n, int nt) {
    size_t i = 0;
    if (nt && ((uintptr_t)c % 16) == 0) {
        for (; i + 8 <= n; i += 8) {
            _mm_stream_ps(c + i, _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
            _mm_stream_ps(c + i + 4, _mm_add_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4)));
        }
        _mm_sfence();
    } else {
        for (; i + 8 <= n; i += 8) {
            _mm_storeu_ps(c + i, _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
            _mm_storeu_ps(c + i + 4, _mm_add_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4)));
        }
    }
    for (; i < n; ++i) c[i] = a[i] + b[i];
}
/* The two halves of the ceiling kernel's traffic alone: read a and b (summed,
   so the loads stay), and write c with non-temporal stores. */
__attribute__((target("avx2"))) static float read2_avx2(const float *a, const float *b, size_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    float out[8], sum = 0.0f;
    size_t i = 0;
    int k;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(a + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(b + i));
        s2 = _mm256_add_ps(s2, _mm256_loadu_ps(a + i + 8));
        s3 = _mm256_add_ps(s3, _mm256_loadu_ps(b + i + 8));
    }
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (k = 0; k < 8; ++k) sum += out[k];
    for (; i < n; ++i) sum += a[i] + b[i];
    return sum;
}
__attribute__((target("avx2"))) static void write1_avx2(float *c, size_t n) {
    const __m256 v = _mm256_set1_ps(1.0f);
    size_t i = 0;
    for (; i < n && (uintptr_t)(c + i) % 32; ++i) c[i] = 1.0f;
    for (; i + 16 <= n; i += 16) {
        _mm256_stream_ps(c + i, v);
        _mm256_stream_ps(c + i + 8, v);
    }
    _mm_sfence();
    for (; i < n; ++i) c[i] = 1.0f;
}
static int have_avx2;
#endif
static const char *stream_isa = "c";
static float read2_kernel(const float *a, const float *b, size_t n) {
    float sum = 0.0f;
    size_t i;
#if defined(BENCH_X86)
    if (have_avx2) return read2_avx2(a, b, n);
#endif
    for (i = 0; i < n; ++i) sum += a[i] + b[i];
    return sum;
}
static void write1_kernel(float *c, size_t n) {
    size_t i;
#if defined(BENCH_X86)
    if (have_avx2) {
        write1_avx2(c, n);
        return;
    }
#endif
    for (i = 0; i < n; ++i) c[i] = 1.0f;
}
static volatile float read_sink; /* keeps the reads */
static void add_kernel(const float *a, const float *b, float *c, size_t n, int nt) {
#if defined(BENCH_X86)
    if (have_avx2) add_avx2(a, b, c, n, nt);
    else add_sse(a, b, c, n, nt);
#else
    size_t i;
    (void)nt;
    for (i = 0; i < n; ++i) c[i] = a[i] + b[i];
#endif
}

/* What a pass does: c = a + b (regular or non-temporal stores), or only
   its reads, or only its (non-temporal) writes. */
enum { PASS_ADD = 0, PASS_ADD_NT = 1, PASS_READ = 2, PASS_WRITE = 3 };
static void pass_kernel(const float *a, const float *b, float *c, size_t n, int mode) {
    if (mode == PASS_READ) read_sink = read2_kernel(a, b, n);
    else if (mode == PASS_WRITE) write1_kernel(c, n);
    else add_kernel(a, b, c, n, mode == PASS_ADD_NT);
}
/* One pass over n floats on T threads (chunks 16-float aligned). */
static void stream_pass(const float *a, const float *b, float *c, size_t n, int T, int mode) {
#if defined(_OPENMP)
    if (T > 1) {
#pragma omp parallel num_threads(T)
        {
            int t = omp_get_thread_num(), nth = omp_get_num_threads();
            size_t per = (n / (size_t)nth + 15) / 16 * 16, lo = per * (size_t)t, hi = lo + per;
            if (hi > n) hi = n;
            if (lo < hi) pass_kernel(a + lo, b + lo, c + lo, hi - lo, mode);
        }
        return;
    }
#endif
    (void)T;
    pass_kernel(a, b, c, n, mode);
}

enum { CL_L2 = 0, CL_L3 = 1, CL_DRAM = 2, CL_COUNT = 3 };
static const char *class_name[CL_COUNT] = {"L2", "L3", "DRAM"};
typedef struct ceilings {
    int nthr;
    int thr[MAX_THREADS_LIST];
    double rate[CL_COUNT][MAX_THREADS_LIST][2]; /* GB/s; [..][1]: non-temporal stores (DRAM only) */
    double dram_read[MAX_THREADS_LIST];         /* DRAM, the reads alone (8 bytes per element), GB/s */
    double dram_write[MAX_THREADS_LIST];        /* DRAM, the non-temporal writes alone (4 bytes) */
    double l2_bytes, l3_bytes;                  /* cache sizes used for the classes */
} ceilings;

/* Median per-pass rate in GB/s of `passes` passes per sample (bytes moved:
   12, 8 or 4 per element). */
static double measure_stream(float *a, float *b, float *c, size_t n, int T, int mode, int samples, int passes) {
    double *t = (double *)xalloc(sizeof(double) * (size_t)samples), med;
    double bytes = mode == PASS_READ ? 8.0 : mode == PASS_WRITE ? 4.0 : 12.0;
    int s, p;
    stream_pass(a, b, c, n, T, mode); /* warm-up */
    for (s = 0; s < samples; ++s) {
        double t0 = now_s();
        for (p = 0; p < passes; ++p) stream_pass(a, b, c, n, T, mode);
        t[s] = (now_s() - t0) / passes;
    }
    med = median_of(t, samples);
    free(t);
    return bytes * (double)n / med * 1e-9;
}

/* The L3 stream's elements per array at T threads: 4 MiB, or enough that
   each thread's share of the three arrays is 4x its L2 (16 threads with
   2 MiB L2s would otherwise stream from their L2s), but at most half the
   L3 and the arrays' size. */
static size_t l3_elems(const ceilings *cl, int T, size_t base, size_t cap) {
    double want = (double)T * 4.0 * cl->l2_bytes / 12.0, most = cl->l3_bytes / 24.0;
    size_t n = base;
    if (want > most) want = most;
    if (want > (double)n) n = (size_t)want / 32 * 32;
    return n < cap ? n : cap;
}

static void measure_ceilings(ceilings *cl, int quick) {
    size_t n_dram = quick ? ((size_t)128 << 20) / 4 : ((size_t)256 << 20) / 4;
    size_t n_l3 = ((size_t)4 << 20) / 4, n_l2 = (((size_t)512 << 10) / 12) / 32 * 32;
    float *a = (float *)xalloc(n_dram * 4), *b = (float *)xalloc(n_dram * 4), *c = (float *)xalloc(n_dram * 4);
    int i, samples = quick ? 5 : 15;
    size_t k;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (k = 0; k < n_dram; ++k) { a[k] = (float)(k & 1023); b[k] = 1.0f; c[k] = 0.0f; }
    for (i = 0; i < cl->nthr; ++i) {
        int T = cl->thr[i];
        cl->rate[CL_DRAM][i][0] = measure_stream(a, b, c, n_dram, T, PASS_ADD, samples, 1);
        cl->rate[CL_DRAM][i][1] = measure_stream(a, b, c, n_dram, T, PASS_ADD_NT, samples, 1);
        cl->dram_read[i] = measure_stream(a, b, c, n_dram, T, PASS_READ, samples, 1);
        cl->dram_write[i] = measure_stream(a, b, c, n_dram, T, PASS_WRITE, samples, 1);
        cl->rate[CL_L3][i][0] = measure_stream(a, b, c, l3_elems(cl, T, n_l3, n_dram), T, PASS_ADD, 31, 8);
        cl->rate[CL_L2][i][0] = measure_stream(a, b, c, n_l2, T, PASS_ADD, 31, 256);
        cl->rate[CL_L3][i][1] = cl->rate[CL_L2][i][1] = 0.0;
    }
    free(a);
    free(b);
    free(c);
}

/* Best rate for a class with at most T threads (and, for DRAM, either store
   kind; regular_only: regular stores only). */
static double ceiling_for(const ceilings *cl, int cls, int T, int regular_only) {
    double best = 0.0;
    int i, s;
    for (i = 0; i < cl->nthr; ++i)
        if (cl->thr[i] <= T)
            for (s = 0; s < (regular_only ? 1 : 2); ++s)
                if (cl->rate[cls][i][s] > best) best = cl->rate[cls][i][s];
    return best;
}

/* ------------------------------------------------------------- problems */
enum { OP_LN = 0, OP_BN = 1, OP_GN = 2 };
enum { LAY_ROW = 0, LAY_NCX = 1, LAY_NXC = 2, LAY_NC = 3 };
static const char *layout_name[] = {"row", "NCX", "NXC", "NC"};

typedef struct problem {
    int op, layout, rank, dt;
    int frozen; /* BatchNorm with NBWD_USE_GLOBAL_STATS ("bn-...-frozen:"): diff_src alone, one pass */
    int rms;    /* RMSNorm ("rms:"): a LayerNorm row without a mean */
    int res;    /* "ln-res:", "rms-res:": a residual gradient added to diff_src (the peer: norm, then an add) */
    int none;   /* "ln-none:", "rms-none:": NBWD_STATS_NONE (x alone), use_affine = 0, diff_src alone (the
                   peer: a ggml-style loop that recomputes the statistics; also timed: the saved-statistics call) */
    int relu;   /* BatchNorm "-relu" (NBWD_FUSE_RELU) 1, "-addrelu" (NBWD_FUSE_ADD_RELU) 2 */
    int64_t groups; /* GroupNorm: G (G = C: InstanceNorm, row label IN) */
    int64_t dims[NBWD_MAX_RANK]; /* LN: [rows, cols]; BN, GN: [N, C, spatial...] (logical NCX order) */
    char shape[48];
} problem;

/* BNf: BatchNorm with frozen (global) statistics; BNr, BNar: with the
   fused ReLU, the fused add + ReLU; GN: GroupNorm, IN: InstanceNorm (GN with
   groups = C) */
#define OP_LABEL(p)                                                                                    \
    ((p)->op == OP_LN ? ((p)->rms ? ((p)->res ? "RMS+res" : (p)->none ? "RMSnone" : "RMS")             \
                                  : (p)->res ? "LN+res" : (p)->none ? "LNnone" : "LN")              \
     : (p)->op == OP_GN ? ((p)->groups == (p)->dims[1] ? "IN" : "GN")                            \
     : (p)->frozen    ? "BNf"                                                                   \
     : (p)->relu      ? ((p)->relu == 2 ? "BNar" : "BNr")                                       \
                      : "BN")
static const char *dt_name(int dt) { return dt == NBWD_F32 ? "f32" : dt == NBWD_BF16 ? "bf16" : "f16"; }
static size_t dt_size(int dt) { return dt == NBWD_F32 ? 4u : 2u; }

static int64_t prob_elems(const problem *p) {
    int64_t e = 1;
    int d;
    for (d = 0; d < p->rank; ++d) e *= p->dims[d];
    return e;
}
/* Sets (rows of LayerNorm, channels of BatchNorm, (sample, group) pairs of
   GroupNorm) and the parameters' length. */
static int64_t prob_sets(const problem *p) {
    return p->op == OP_LN ? p->dims[0] : p->op == OP_GN ? p->dims[0] * p->groups : p->dims[1];
}
static int64_t prob_params(const problem *p) { return p->dims[1]; }
static double prob_bytes(const problem *p) {
    double e = (double)prob_elems(p), esz = (double)dt_size(p->dt);
    if (p->op == OP_LN && p->none) return 3.0 * e * esz; /* x, dy, dx alone */
    if (p->op == OP_LN) /* x, dy, dx (and the residual); mean (not RMSNorm) and variance; gamma, dgamma, dbeta */
        return (p->res ? 4.0 : 3.0) * e * esz + (p->rms ? 1.0 : 2.0) * 4.0 * (double)p->dims[0] +
               3.0 * 4.0 * (double)p->dims[1];
    if (p->op == OP_GN) /* x, dy, dx; mean, variance [N, G]; gamma, dgamma, dbeta [C] */
        return 3.0 * e * esz + 2.0 * 4.0 * (double)prob_sets(p) + 3.0 * 4.0 * (double)p->dims[1];
    /* BatchNorm: x, dy, dx; the ReLU's dst (and diff_src_add); mean, variance, gamma, dgamma, dbeta */
    return (3.0 + (p->relu ? 1.0 : 0.0) + (p->relu == 2 ? 1.0 : 0.0)) * e * esz + 5.0 * 4.0 * (double)p->dims[1];
}

/* "ln:RxN", "RxN", "rms:RxN", "bn-ncx:NxCxHxW", "bn-nxc:NxCxHxW", "bn-nc:NxC" (dims of
   BatchNorm always given in N, C, spatial order); a BatchNorm kind ending in
   "-frozen" (bn-ncx-frozen:...) takes the statistics as constants, "-relu" and
   "-addrelu" fuse a ReLU's (after an add's) backward;
   "ln-res:", "rms-res:" add a residual gradient to diff_src;
   "gn-ncx:NxCxHxW/G", "gn-nxc:NxCxHxW/G": GroupNorm with G groups (dims in
   N, C, spatial order; G = C: InstanceNorm). */
static int parse_problem(const char *spec, int dt, problem *p) {
    const char *s = spec, *colon = strchr(spec, ':');
    char kind[16] = "ln";
    int d = 0;
    memset(p, 0, sizeof *p);
    if (colon) {
        size_t k = (size_t)(colon - spec);
        if (k >= sizeof kind) return 0;
        memcpy(kind, spec, k);
        kind[k] = 0;
        s = colon + 1;
        if (k > 7 && strcmp(kind + k - 7, "-frozen") == 0 && strncmp(kind, "bn", 2) == 0) {
            kind[k - 7] = 0;
            p->frozen = 1;
        } else if (k > 8 && strcmp(kind + k - 8, "-addrelu") == 0 && strncmp(kind, "bn", 2) == 0) {
            kind[k - 8] = 0;
            p->relu = 2;
        } else if (k > 5 && strcmp(kind + k - 5, "-relu") == 0 && strncmp(kind, "bn", 2) == 0) {
            kind[k - 5] = 0;
            p->relu = 1;
        }
    }
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0 || d >= NBWD_MAX_RANK) return 0;
        p->dims[d++] = v;
        s = end;
        if (*s == 'x' || *s == 'X') ++s;
        else if (*s == '/' && strncmp(kind, "gn", 2) == 0) { /* GroupNorm's groups, last */
            v = strtoll(s + 1, &end, 10);
            if (end == s + 1 || v <= 0 || *end) return 0;
            p->groups = v;
            s = end;
        } else if (*s) return 0;
    }
    p->rank = d;
    p->dt = dt;
    if (strcmp(kind, "ln-res") == 0 || strcmp(kind, "rms-res") == 0) {
        kind[strlen(kind) - 4] = 0;
        p->res = 1;
    }
    if (strcmp(kind, "ln-none") == 0 || strcmp(kind, "rms-none") == 0) {
        kind[strlen(kind) - 5] = 0;
        p->none = 1;
    }
    if (strcmp(kind, "ln") == 0 || strcmp(kind, "rms") == 0) {
        int64_t rows = 1;
        int i;
        if (d < 2) return 0;
        for (i = 0; i + 1 < d; ++i) rows *= p->dims[i];
        p->dims[0] = rows;
        p->dims[1] = p->dims[d - 1];
        p->rank = 2;
        p->op = OP_LN;
        p->rms = kind[0] == 'r';
        p->layout = LAY_ROW;
    } else if (strcmp(kind, "bn-ncx") == 0 || strcmp(kind, "bn-nxc") == 0 || strcmp(kind, "bn-nc") == 0 ||
               strcmp(kind, "bn") == 0) {
        p->op = OP_BN;
        if (d < 2 || d > 5) return 0;
        p->layout = d == 2 ? LAY_NC : strcmp(kind, "bn-nxc") == 0 ? LAY_NXC : LAY_NCX;
    } else if (strcmp(kind, "gn-ncx") == 0 || strcmp(kind, "gn-nxc") == 0) {
        p->op = OP_GN;
        if (d < 2 || d > 5 || p->groups < 1 || p->dims[1] % p->groups != 0) return 0;
        p->layout = strcmp(kind, "gn-nxc") == 0 ? LAY_NXC : LAY_NCX;
    } else {
        return 0;
    }
    if (p->op != OP_GN && p->groups) return 0;
    {
        int i, n = 0;
        for (i = 0; i < p->rank; ++i)
            n += snprintf(p->shape + n, sizeof p->shape - (size_t)n, i ? "x%lld" : "%lld", (long long)p->dims[i]);
        if (p->op == OP_GN && p->groups != p->dims[1]) /* InstanceNorm's label says G = C */
            snprintf(p->shape + n, sizeof p->shape - (size_t)n, "/%lld", (long long)p->groups);
    }
    return 1;
}

/* ------------------------------------------------------- data + reference */
typedef struct data {
    void *x, *dy, *dx, *dx2;               /* dx2: the peer's output (oneDNN, or the unfused norm + add) */
    void *res;                             /* the residual gradient (res rows), else NULL */
    void *dst, *add;                       /* relu rows: the forward output; diff_src_add (addrelu) */
    void *masked;                          /* relu rows: the unfused pair's masked diff_dst (addrelu: its
                                              diff_src_add, which is that very tensor) */
    float *mean, *var, *gamma, *beta, *dg, *db, *dg2, *db2;
    float *ref_dx;                         /* float64 result rounded to f32 */
    double *ref_dg, *ref_db;
    float *ws;
    size_t ws_bytes;
} data;

/* Memory is [A][B][K]: LN [rows][1][cols], NCX [N][C][S], NXC [N*S][1][C]. */
static void prob_abk(const problem *p, int64_t *A, int64_t *B, int64_t *K) {
    int64_t S = 1;
    int d;
    for (d = 2; d < p->rank; ++d) S *= p->dims[d];
    if (p->op == OP_LN) { *A = p->dims[0]; *B = 1; *K = p->dims[1]; }
    else if (p->layout == LAY_NCX) { *A = p->dims[0]; *B = p->dims[1]; *K = S; }
    else { *A = p->dims[0] * S; *B = 1; *K = p->dims[1]; }
}
/* Set and param index of element (a, b, k); GroupNorm's set n * G + g,
   g = c / (C / G), its sample n = a (NCX) or a / S (NXC). */
static int64_t set_of(const problem *p, int64_t a, int64_t b, int64_t k) {
    if (p->op == OP_GN) {
        int64_t S = 1, cg = p->dims[1] / p->groups;
        int d;
        for (d = 2; d < p->rank; ++d) S *= p->dims[d];
        return p->layout == LAY_NCX ? a * p->groups + b / cg : (a / S) * p->groups + k / cg;
    }
    return p->op == OP_LN ? a : p->layout == LAY_NCX ? b : k;
}
#define SET_OF(p, a, b, k) set_of(p, a, b, k)
#define PAR_OF(p, a, b, k) ((p)->op == OP_LN ? (k) : (p)->layout == LAY_NCX ? (b) : (k))

static float ld(const void *buf, int64_t i, int dt) {
    if (dt == NBWD_F32) return ((const float *)buf)[i];
    if (dt == NBWD_BF16) return nbwd_bf16_to_f32(((const uint16_t *)buf)[i]);
    return nbwd_f16_to_f32(((const uint16_t *)buf)[i]);
}
static void st(void *buf, int64_t i, int dt, double v) {
    if (dt == NBWD_F32) ((float *)buf)[i] = (float)v;
    else if (dt == NBWD_BF16) ((uint16_t *)buf)[i] = nbwd_f32_to_bf16((float)v);
    else ((uint16_t *)buf)[i] = nbwd_f32_to_f16((float)v);
}

static void data_reference(const problem *p, data *D);
static void data_make(const problem *p, data *D) {
    int64_t E = prob_elems(p), nsets = prob_sets(p), npar = prob_params(p), A, B, K, a, b, k, i;
    size_t esz = dt_size(p->dt);
    double *s1 = (double *)calloc((size_t)nsets, sizeof(double)), *s2 = (double *)calloc((size_t)nsets, sizeof(double));
    double *off = (double *)xalloc((size_t)nsets * sizeof(double)), *sc = (double *)xalloc((size_t)nsets * sizeof(double));
    double per_set = (double)E / (double)nsets;
    memset(D, 0, sizeof *D);
    D->x = xalloc((size_t)E * esz);
    D->dy = xalloc((size_t)E * esz);
    D->dx = xalloc((size_t)E * esz);
    D->dx2 = xalloc((size_t)E * esz);
    D->ref_dx = (float *)xalloc((size_t)E * 4);
    D->mean = (float *)xalloc((size_t)nsets * 4);
    D->var = (float *)xalloc((size_t)nsets * 4);
    D->gamma = (float *)xalloc((size_t)npar * 4);
    D->beta = (float *)xalloc((size_t)npar * 4);
    D->dg = (float *)xalloc((size_t)npar * 4);
    D->db = (float *)xalloc((size_t)npar * 4);
    D->dg2 = (float *)xalloc((size_t)npar * 4);
    D->db2 = (float *)xalloc((size_t)npar * 4);
    D->ref_dg = (double *)calloc((size_t)npar, sizeof(double));
    D->ref_db = (double *)calloc((size_t)npar, sizeof(double));
    if (!s1 || !s2 || !D->ref_dg || !D->ref_db) { fprintf(stderr, "nbwd_bench: out of memory\n"); exit(2); }
    if (p->res) {
        D->res = xalloc((size_t)E * esz);
        for (i = 0; i < E; ++i) st(D->res, i, p->dt, 2.0 * urand() - 1.0);
    }
    memset(D->dx, 0, (size_t)E * esz); /* first touch outside the timing */
    memset(D->dx2, 0, (size_t)E * esz);
    for (i = 0; i < nsets; ++i) { off[i] = 4.0 * urand() - 2.0; sc[i] = 0.5 + 1.5 * urand(); }
    for (i = 0; i < npar; ++i) { D->gamma[i] = (float)(0.5 + urand()); D->beta[i] = (float)(urand() - 0.5); }
    if (p->none) /* use_affine = 0: the reference's gamma is 1 */
        for (i = 0; i < npar; ++i) D->gamma[i] = 1.0f;
    prob_abk(p, &A, &B, &K);
    i = 0;
    for (a = 0; a < A; ++a)
        for (b = 0; b < B; ++b)
            for (k = 0; k < K; ++k, ++i) {
                int64_t s = SET_OF(p, a, b, k);
                double xv;
                st(D->x, i, p->dt, off[s] + sc[s] * (3.4 * urand() - 1.7));
                st(D->dy, i, p->dt, 2.0 * urand() - 1.0);
                xv = ld(D->x, i, p->dt);
                s1[s] += xv;
            }
    /* RMSNorm: no mean; its variance slot holds the mean square */
    for (i = 0; i < nsets; ++i) D->mean[i] = p->rms ? 0.0f : (float)(s1[i] / per_set);
    i = 0;
    for (a = 0; a < A; ++a)
        for (b = 0; b < B; ++b)
            for (k = 0; k < K; ++k, ++i) {
                int64_t s = SET_OF(p, a, b, k);
                double dv = ld(D->x, i, p->dt) - (double)D->mean[s];
                s2[s] += dv * dv;
            }
    for (i = 0; i < nsets; ++i) D->var[i] = (float)(s2[i] / per_set);
    if (p->relu) { /* the forward's output, about half of it clipped */
        D->dst = xalloc((size_t)E * esz);
        D->masked = xalloc((size_t)E * esz);
        if (p->relu == 2) {
            D->add = xalloc((size_t)E * esz);
            memset(D->add, 0, (size_t)E * esz);
        }
        i = 0;
        for (a = 0; a < A; ++a)
            for (b = 0; b < B; ++b)
                for (k = 0; k < K; ++k, ++i) {
                    int64_t s = SET_OF(p, a, b, k), q = PAR_OF(p, a, b, k);
                    double y = (double)D->gamma[q] * ((double)ld(D->x, i, p->dt) - (double)D->mean[s]) /
                                   sqrt((double)D->var[s] + (double)1e-5f) + (double)D->beta[q];
                    st(D->dst, i, p->dt, y > 0.0 ? y : 0.0);
                }
    }
    free(s1);
    free(s2);
    free(off);
    free(sc);
    data_reference(p, D);
}

/* The float64 reference, from the very values the libraries read (relu
   rows: dy where dst > 0) */
static void data_reference(const problem *p, data *D) {
    int64_t E = prob_elems(p), nsets = prob_sets(p), npar = prob_params(p), A, B, K, a, b, k, i;
    double *s1 = (double *)calloc((size_t)nsets, sizeof(double)), *s2 = (double *)calloc((size_t)nsets, sizeof(double));
    double *sc = (double *)xalloc((size_t)nsets * sizeof(double));
    double per_set = (double)E / (double)nsets;
    if (!s1 || !s2) { fprintf(stderr, "nbwd_bench: out of memory\n"); exit(2); }
    prob_abk(p, &A, &B, &K);
    memset(D->ref_dg, 0, (size_t)npar * sizeof(double));
    memset(D->ref_db, 0, (size_t)npar * sizeof(double));
#define DY_OF(i) (D->dst && !(ld(D->dst, i, p->dt) > 0.0f) ? 0.0 : (double)ld(D->dy, i, p->dt))
    for (i = 0; i < nsets; ++i) sc[i] = 1.0 / sqrt((double)D->var[i] + (double)1e-5f);
    i = 0;
    for (a = 0; a < A; ++a)
        for (b = 0; b < B; ++b)
            for (k = 0; k < K; ++k, ++i) {
                int64_t s = SET_OF(p, a, b, k), q = PAR_OF(p, a, b, k);
                double dyv = DY_OF(i), xh = ((double)ld(D->x, i, p->dt) - (double)D->mean[s]) * sc[s];
                double g = dyv * (double)D->gamma[q];
                s1[s] += g;
                s2[s] += g * xh;
                D->ref_dg[q] += dyv * xh;
                D->ref_db[q] += dyv;
            }
    i = 0;
    for (a = 0; a < A; ++a)
        for (b = 0; b < B; ++b)
            for (k = 0; k < K; ++k, ++i) {
                int64_t s = SET_OF(p, a, b, k), q = PAR_OF(p, a, b, k);
                double dyv = DY_OF(i), xh = ((double)ld(D->x, i, p->dt) - (double)D->mean[s]) * sc[s];
                double g = dyv * (double)D->gamma[q];
                double mean_g = p->rms ? 0.0 : s1[s] / per_set;
                D->ref_dx[i] = p->frozen ? (float)(sc[s] * dyv) /* diff_src alone: gamma ignored */
                                         : (float)(sc[s] * (g - mean_g - xh * (s2[s] / per_set)) +
                                                   (p->res ? (double)ld(D->res, i, p->dt) : 0.0));
            }
#undef DY_OF
    free(s1);
    free(s2);
    free(sc);
}

static void data_free(data *D) {
    free(D->x); free(D->dy); free(D->dx); free(D->dx2); free(D->res); free(D->ref_dx); free(D->dst); free(D->add); free(D->masked);
    free(D->mean); free(D->var); free(D->gamma); free(D->beta);
    free(D->dg); free(D->db); free(D->dg2); free(D->db2); free(D->ref_dg); free(D->ref_db); free(D->ws);
    memset(D, 0, sizeof *D);
}

/* Relative L2 error of an output; worst / tolerance decides. */
typedef struct check {
    double err_dx, err_dg, err_db, worst; /* worst: max(err / tol) */
    int ok;
    char msg[256];
} check;

static double rel_l2_f(const void *out, int dt, const float *ref, int64_t n, int64_t *bad) {
    double num = 0.0, den = 0.0;
    int64_t i;
    *bad = -1;
    for (i = 0; i < n; ++i) {
        double o = ld(out, i, dt), r = ref[i], e = o - r;
        if (!(o == o) && *bad < 0) *bad = i;
        num += e * e;
        den += r * r;
    }
    if (*bad >= 0) return INFINITY;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
static double rel_l2_d(const float *out, const double *ref, int64_t n, int64_t *bad) {
    double num = 0.0, den = 0.0;
    int64_t i;
    *bad = -1;
    for (i = 0; i < n; ++i) {
        double o = out[i], e = o - ref[i];
        if (!(o == o) && *bad < 0) *bad = i;
        num += e * e;
        den += ref[i] * ref[i];
    }
    if (*bad >= 0) return INFINITY;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Tolerances (relative L2 over the tensor): dx f32 1e-5, bf16 2^-8, f16
   2^-10 (a bf16/f16 output alone is off by up to 2^-9 / 2^-12 per element);
   dgamma/dbeta (f32 outputs) 5e-5. */
static void do_check(const problem *p, const data *D, const void *dx, const float *dg, const float *db, check *c) {
    int64_t E = prob_elems(p), npar = prob_params(p), bad1, bad2 = -1, bad3 = -1;
    double tdx = p->dt == NBWD_F32 ? 1e-5 : p->dt == NBWD_BF16 ? 1.0 / 256 : 1.0 / 1024, tp = 5e-5;
    c->err_dx = rel_l2_f(dx, p->dt, D->ref_dx, E, &bad1);
    c->err_dg = p->frozen || p->none ? 0.0 : rel_l2_d(dg, D->ref_dg, npar, &bad2); /* frozen, none: diff_src alone */
    c->err_db = p->frozen || p->none ? 0.0 : rel_l2_d(db, D->ref_db, npar, &bad3);
    c->worst = c->err_dx / tdx;
    if (c->err_dg / tp > c->worst) c->worst = c->err_dg / tp;
    if (c->err_db / tp > c->worst) c->worst = c->err_db / tp;
    c->ok = c->worst <= 1.0;
    c->msg[0] = 0;
    if (!c->ok) {
        int64_t i, worst_i = 0;
        double we = -1.0;
        for (i = 0; i < E; ++i) {
            double e = fabs((double)ld(dx, i, p->dt) - (double)D->ref_dx[i]);
            if (!(e <= we)) { we = e; worst_i = i; }
            if (e != e) break;
        }
        snprintf(c->msg, sizeof c->msg,
                 "rel L2 err dx %.3g (tol %.3g) dgamma %.3g dbeta %.3g (tol %.3g); worst dx[%lld] = %.9g, ref %.9g",
                 c->err_dx, tdx, c->err_dg, c->err_db, tp, (long long)worst_i, (double)ld(dx, worst_i, p->dt),
                 (double)D->ref_dx[worst_i]);
    }
}

/* addrelu rows: the add's gradient must be dy where dst > 0, else 0, exactly
   (a copy through the mask: no arithmetic) */
static void check_add_grad(const problem *p, const data *D, const void *add, check *c) {
    int64_t E = prob_elems(p), i;
    for (i = 0; i < E; ++i) {
        double want = ld(D->dst, i, p->dt) > 0.0f ? ld(D->dy, i, p->dt) : 0.0, got = ld(add, i, p->dt);
        if (!(got == want) && !(got != got && want != want)) {
            c->ok = 0;
            snprintf(c->msg, sizeof c->msg, "diff_src_add[%lld] = %.9g, want %.9g (dy where dst > 0)", (long long)i,
                     got, want);
            return;
        }
    }
}

/* ------------------------------------------------------------- runners */
typedef struct libcall {
    const problem *p;
    data *D;
    nbwd_isa isa;
    int caller_ws;
    int unfused; /* res rows' peer: the norm into dx2 (no residual), then dx2 += res in a pass of its own */
    int saved;   /* none rows: the same call with the saved statistics, into dx2 */
    int relu_pair; /* relu rows: the unfused pair, a mask pass into D->masked (addrelu: the add's gradient),
                      then the plain call into dx2 */
    union { nbwd_layer_norm_bwd_desc ln; nbwd_batch_norm_bwd_desc bn; nbwd_group_norm_bwd_desc gn; } desc;
} libcall;

static void lib_setup(libcall *L, const problem *p, data *D, nbwd_isa isa, int caller_ws) {
    memset(L, 0, sizeof *L);
    L->p = p;
    L->D = D;
    L->isa = isa;
    L->caller_ws = caller_ws;
    if (p->op == OP_LN) {
        if (p->rms) nbwd_rms_norm_bwd_desc_init(&L->desc.ln, 2, p->dims);
        else nbwd_layer_norm_bwd_desc_init(&L->desc.ln, 2, p->dims);
        L->desc.ln.data_dtype = (nbwd_dtype)p->dt;
        L->desc.ln.isa = isa;
        if (p->none) {
            L->desc.ln.stats_form = NBWD_STATS_NONE;
            L->desc.ln.use_affine = 0;
        }
    } else {
        int64_t dims[NBWD_MAX_RANK];
        int d;
        if (p->layout == LAY_NXC) { /* library order [N, spatial..., C] */
            dims[0] = p->dims[0];
            for (d = 2; d < p->rank; ++d) dims[d - 1] = p->dims[d];
            dims[p->rank - 1] = p->dims[1];
        } else {
            for (d = 0; d < p->rank; ++d) dims[d] = p->dims[d];
        }
        if (p->op == OP_GN) {
            nbwd_group_norm_bwd_desc_init(&L->desc.gn, p->rank, dims, p->layout == LAY_NCX ? NBWD_NCX : NBWD_NXC,
                                          p->groups, 1e-5f);
            L->desc.gn.data_dtype = (nbwd_dtype)p->dt;
            L->desc.gn.isa = isa;
        } else {
            nbwd_batch_norm_bwd_desc_init(&L->desc.bn, p->rank, dims, p->layout == LAY_NCX ? NBWD_NCX : NBWD_NXC,
                                          1e-5f);
            L->desc.bn.data_dtype = (nbwd_dtype)p->dt;
            L->desc.bn.isa = isa;
            if (p->frozen) L->desc.bn.flags = NBWD_USE_GLOBAL_STATS;
            if (p->relu) L->desc.bn.flags = p->relu == 2 ? NBWD_FUSE_ADD_RELU : NBWD_FUSE_RELU;
        }
    }
    if (caller_ws) {
        size_t bytes = 0;
        if (p->op == OP_LN && p->rms) nbwd_rms_norm_bwd_workspace_size(&L->desc.ln, &bytes);
        else if (p->op == OP_LN) nbwd_layer_norm_bwd_workspace_size(&L->desc.ln, &bytes);
        else if (p->op == OP_GN) nbwd_group_norm_bwd_workspace_size(&L->desc.gn, &bytes);
        else nbwd_batch_norm_bwd_workspace_size(&L->desc.bn, &bytes);
        free(D->ws);
        D->ws = (float *)xalloc(bytes);
        memset(D->ws, 0, bytes);
        D->ws_bytes = bytes;
    }
}

/* dst += res over n elements of type dt, as a framework's separate add
   would: in parallel, 16-bit data through f32 a chunk at a time */
static void add_pass(void *dst, const void *res, int dt, int64_t n) {
    int64_t c, chunks = (n + 4095) / 4096;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (c = 0; c < chunks; ++c) {
        int64_t i0 = c * 4096, m = n - i0 < 4096 ? n - i0 : 4096, i;
        if (dt == NBWD_F32) {
            float *d = (float *)dst + i0;
            const float *r = (const float *)res + i0;
            for (i = 0; i < m; ++i) d[i] += r[i];
        } else {
            float a[4096], b[4096];
            uint16_t *d = (uint16_t *)dst + i0;
            const uint16_t *r = (const uint16_t *)res + i0;
            if (dt == NBWD_BF16) { nbwd_bf16_to_f32_n(d, a, m); nbwd_bf16_to_f32_n(r, b, m); }
            else { nbwd_f16_to_f32_n(d, a, m); nbwd_f16_to_f32_n(r, b, m); }
            for (i = 0; i < m; ++i) a[i] += b[i];
            if (dt == NBWD_BF16) nbwd_f32_to_bf16_n(a, d, m);
            else nbwd_f32_to_f16_n(a, d, m);
        }
    }
}

/* masked = dy where dst > 0, else +0, over n elements of type dt, as a
   framework's separate ReLU-backward pass would: in parallel, branch-free
   (about half the outputs are clipped, at random), on the bits (dst's NaN
   and -0 clipped, as the library's mask) */
static void relu_mask_pass(void *masked, const void *dy, const void *dst, int dt, int64_t n) {
    int64_t i;
    if (dt == NBWD_F32) {
        const uint32_t *g = (const uint32_t *)dy, *y = (const uint32_t *)dst;
        uint32_t *m = (uint32_t *)masked;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
        for (i = 0; i < n; ++i) m[i] = g[i] & (0u - (uint32_t)(y[i] - 1u < 0x7F800000u)); /* branch-free */
    } else {
        const uint16_t *g = (const uint16_t *)dy, *y = (const uint16_t *)dst;
        uint16_t *m = (uint16_t *)masked, top = dt == NBWD_BF16 ? 0x7F80u : 0x7C00u;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
        for (i = 0; i < n; ++i) m[i] = (uint16_t)(g[i] & (0u - (unsigned)((uint16_t)(y[i] - 1u) < top)));
    }
}

static nbwd_status lib_run(libcall *L) {
    data *D = L->D;
    void *ws = L->caller_ws ? D->ws : NULL;
    size_t wsb = L->caller_ws ? D->ws_bytes : 0;
    void *dx = L->unfused || L->saved || L->relu_pair ? D->dx2 : D->dx;
    float *dg = L->unfused || L->relu_pair ? D->dg2 : D->dg, *db = L->unfused || L->relu_pair ? D->db2 : D->db;
    const void *res = L->unfused ? NULL : D->res;
    const int none = L->p->none, stats = !none || L->saved; /* none rows: x alone, or the saved statistics */
    nbwd_status s;
    if (L->p->op == OP_LN && L->p->rms) {
        nbwd_rms_norm_bwd_args a;
        memset(&a, 0, sizeof a);
        a.src = D->x; a.diff_dst = D->dy; a.mean_square = stats ? D->var : NULL; a.gamma = none ? NULL : D->gamma;
        a.diff_src = dx; a.diff_gamma = none ? NULL : dg; a.diff_beta = none ? NULL : db; a.diff_residual = res;
        s = nbwd_rms_norm_bwd(&L->desc.ln, &a, ws, wsb);
    } else if (L->p->op == OP_LN) {
        nbwd_layer_norm_bwd_args a;
        memset(&a, 0, sizeof a);
        a.src = D->x; a.diff_dst = D->dy; a.mean = stats ? D->mean : NULL; a.variance = stats ? D->var : NULL;
        a.gamma = none ? NULL : D->gamma; a.beta = none ? NULL : D->beta; a.diff_src = dx;
        a.diff_gamma = none ? NULL : dg; a.diff_beta = none ? NULL : db; a.diff_residual = res;
        s = nbwd_layer_norm_bwd(&L->desc.ln, &a, ws, wsb);
    } else if (L->p->op == OP_GN) {
        nbwd_group_norm_bwd_args a;
        memset(&a, 0, sizeof a);
        a.src = D->x; a.diff_dst = D->dy; a.mean = D->mean; a.variance = D->var; a.gamma = D->gamma;
        a.diff_src = D->dx; a.diff_gamma = D->dg; a.diff_beta = D->db;
        return nbwd_group_norm_bwd(&L->desc.gn, &a, ws, wsb);
    } else {
        nbwd_batch_norm_bwd_args a;
        memset(&a, 0, sizeof a);
        a.src = D->x; a.diff_dst = D->dy; a.mean = D->mean; a.variance = D->var; a.gamma = D->gamma;
        a.diff_src = dx;
        if (!L->p->frozen) { a.diff_gamma = dg; a.diff_beta = db; }
        a.dst = D->dst;
        a.diff_src_add = D->add;
        if (L->relu_pair) { /* (the caller cleared desc.flags: the plain call) */
            relu_mask_pass(D->masked, D->dy, D->dst, L->p->dt, prob_elems(L->p));
            a.diff_dst = D->masked;
            a.dst = NULL;
            a.diff_src_add = NULL;
        }
        return nbwd_batch_norm_bwd(&L->desc.bn, &a, ws, wsb);
    }
    if (s == NBWD_OK && L->unfused) add_pass(dx, D->res, L->p->dt, prob_elems(L->p));
    return s;
}

typedef struct timing {
    int reps;
    double med, min, max; /* seconds */
} timing;

typedef int (*run_fn)(void *ctx);
static int run_lib_cb(void *ctx) { return lib_run((libcall *)ctx) == NBWD_OK ? 0 : -1; }

/* A variant of the row's call (the unfused pair, the saved-statistics
   call), writing dx2, dg2, db2: run once and checked against the
   reference into *c (a failure named on stderr as `what`); -1 if the call
   itself failed. */
static int run_variant_checked(const problem *p, data *D, libcall *U, const char *what, int threads, check *c) {
    memset(D->dx2, 0xff, (size_t)prob_elems(p) * dt_size(p->dt));
    if (lib_run(U) != NBWD_OK) return -1;
    do_check(p, D, D->dx2, D->dg2, D->db2, c);
    if (!c->ok)
        fprintf(stderr, "\n*** %s check failed: %s %s %s, %d threads: %s\n", what, OP_LABEL(p), p->shape,
                dt_name(p->dt), threads, c->msg);
    return 0;
}

/* The none rows' peer: a backward that recomputes each row's statistics
   from x, written for this bench the way ggml writes rms_norm_back (f32
   products summed in double in one pass over the row, then dx through f32
   vector-style passes, rows split over the threads): RMSNorm
     sum_xx, sum_xdz; rrms = 1 / sqrtf(sum_xx / n + eps);
     dx = (x * (float)(-sum_xdz / (sum_xx + eps n)) + dz) * rrms
   and LayerNorm in the same style (sums of x, x^2, dz, x dz; mean, rstd;
   dx = ((x - mean) * c1 + dz - mean(dz)) * rstd, c1 the xhat term's
   coefficient over x - mean). f32 data only. */
typedef struct ggmlcall { const problem *p; data *D; } ggmlcall;
static int run_ggml_style_cb(void *ctx) {
    const ggmlcall *g = (const ggmlcall *)ctx;
    const int64_t rows = g->p->dims[0], n = g->p->dims[1];
    const float eps = 1e-5f;
    const int rms = g->p->rms;
    int64_t r;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (r = 0; r < rows; ++r) {
        const float *x = (const float *)g->D->x + r * n, *dz = (const float *)g->D->dy + r * n;
        float *dx = (float *)g->D->dx2 + r * n;
        double sum_x = 0.0, sum_xx = 0.0, sum_dz = 0.0, sum_xdz = 0.0;
        int64_t i;
        for (i = 0; i < n; ++i) {
            sum_xx += (double)(x[i] * x[i]);
            sum_xdz += (double)(x[i] * dz[i]);
            if (!rms) {
                sum_x += (double)x[i];
                sum_dz += (double)dz[i];
            }
        }
        if (rms) {
            const float rrms = 1.0f / sqrtf((float)(sum_xx / (double)n) + eps);
            const float c = (float)(-sum_xdz / (sum_xx + (double)eps * (double)n));
            for (i = 0; i < n; ++i) dx[i] = x[i] * c;
            for (i = 0; i < n; ++i) dx[i] += dz[i];
            for (i = 0; i < n; ++i) dx[i] *= rrms;
        } else {
            const double mean = sum_x / (double)n, var = sum_xx / (double)n - mean * mean;
            const double cov = sum_xdz / (double)n - mean * sum_dz / (double)n; /* mean((x - mean) dz) */
            const float rstd = (float)(1.0 / sqrt(var + (double)eps)), fmean = (float)mean;
            const float c1 = (float)(-cov / (var + (double)eps)), mdz = (float)(sum_dz / (double)n);
            for (i = 0; i < n; ++i) dx[i] = (x[i] - fmean) * c1;
            for (i = 0; i < n; ++i) dx[i] += dz[i] - mdz;
            for (i = 0; i < n; ++i) dx[i] *= rstd;
        }
    }
    return 0;
}
typedef struct dnnlcall { bench_dnnl *h; data *D; } dnnlcall;
static int run_dnnl_cb(void *ctx) {
    dnnlcall *c = (dnnlcall *)ctx;
    data *D = c->D;
    return bench_dnnl_exec(c->h, D->x, D->dy, D->mean, D->var, D->gamma, D->beta, D->dx2, D->dg2, D->db2);
}

static int fixed_reps, min_reps = 15;
static double target_time = 0.6; /* seconds of timed runs per variant, when reps adapt */

static int time_it(run_fn fn, void *ctx, timing *t) {
    double samples[4096], t0, one;
    int r, reps;
    t0 = now_s();
    if (fn(ctx)) return -1; /* warm-up (the checked call was the first) */
    one = now_s() - t0;
    if (fixed_reps > 0) reps = fixed_reps;
    else {
        reps = one > 0 ? (int)(target_time / one) : 4096;
        if (reps < min_reps) reps = min_reps;
    }
    if (reps > 4096) reps = 4096;
    if (reps > 64 && one < 1e-3) { /* a few more warm-ups for tiny problems */
        if (fn(ctx) || fn(ctx)) return -1;
    }
    for (r = 0; r < reps; ++r) {
        t0 = now_s();
        if (fn(ctx)) return -1;
        samples[r] = now_s() - t0;
    }
    t->reps = reps;
    t->med = median_of(samples, reps);
    t->min = samples[0];
    t->max = samples[reps - 1];
    return 0;
}

/* Two calls timed in turns (a, b, a, b, ...), so that both see the same
   machine: t gets a's timing, *b_med b's median and *ratio the median of
   the per-turn ratios b / a (> 1: a faster). On a shared VM two medians
   taken one after the other can differ by 2x; the paired ratio holds. */
static int time_pair(run_fn fa, void *ca, run_fn fb, void *cb, timing *t, double *b_med, double *ratio) {
    static double sa[4096], sb[4096], rr[4096];
    double t0, one;
    int r, reps;
    t0 = now_s();
    if (fa(ca) || fb(cb)) return -1; /* warm-up */
    one = now_s() - t0;
    if (fixed_reps > 0) reps = fixed_reps;
    else {
        reps = one > 0 ? (int)(2.0 * target_time / one) : 4096;
        if (reps < min_reps) reps = min_reps;
    }
    if (reps > 4096) reps = 4096;
    for (r = 0; r < reps; ++r) {
        t0 = now_s();
        if (fa(ca)) return -1;
        sa[r] = now_s() - t0;
        t0 = now_s();
        if (fb(cb)) return -1;
        sb[r] = now_s() - t0;
        rr[r] = sa[r] > 0 ? sb[r] / sa[r] : 1.0;
    }
    t->reps = reps;
    t->med = median_of(sa, reps);
    t->min = sa[0];
    t->max = sa[reps - 1];
    *b_med = median_of(sb, reps);
    *ratio = median_of(rr, reps);
    return 0;
}

/* --------------------------------------------------------------- output */
typedef struct row {
    const problem *p;
    char path[16];
    int threads, reps;
    double med, min, max, gbs, ceil, pct, pct_rs;
    int cls;
    int ok;
    double err;
    char same[8];
    int dnnl_state; /* 0 n/a, 1 ok, 2 check failed */
    double dnnl_med, dnnl_gbs, speedup;
    char dnnl_impl[64];
} row;

static row rows[MAX_ROWS];
static int nrows;

/* A peer's columns from calls timed in turns with ours (time_pair): its
   median, and the speedup as the median of the per-turn ratios peer / ours.
   Timed in blocks, one after the other, the two medians could land in
   different spells of this kind of shared machine (or, for oneDNN's
   BatchNorm NXC, one of its per-process modes) and the ratio with them. */
static int time_peer(run_fn peer, void *peer_ctx, libcall *ours, int peer_ok, double bytes, row *r) {
    timing ours_t;
    double peer_med = 0.0, ratio = 0.0;
    if (time_pair(run_lib_cb, ours, peer, peer_ctx, &ours_t, &peer_med, &ratio)) return -1;
    r->dnnl_state = peer_ok ? 1 : 2;
    r->dnnl_med = peer_med;
    r->dnnl_gbs = bytes / peer_med * 1e-9;
    r->speedup = ratio;
    return 0;
}

static void print_row_header(void) {
    printf("%-7s %-4s %-14s %-5s %-6s %3s %5s %9s %9s %9s %7s %6s %-5s %6s %5s %-13s %-4s %9s %7s %7s  %s\n", "op",
           "lay", "shape", "dtype", "path", "thr", "reps", "median_ms", "min_ms", "max_ms", "GB/s", "ceil", "class", "%ceil", "%rs",
           "check(err)", "det", "dnnl_ms", "dnnlGBs", "speedup", "oneDNN impl");
}
static void print_row(const row *r) {
    char chk[24], dms[16], dgb[16], spd[16];
    snprintf(chk, sizeof chk, "%s %.1e", r->ok ? "ok" : "FAIL", r->err);
    if (r->dnnl_state) {
        snprintf(dms, sizeof dms, "%.3f%s", r->dnnl_med * 1e3, r->dnnl_state == 2 ? "!" : "");
        snprintf(dgb, sizeof dgb, "%.1f", r->dnnl_gbs);
        snprintf(spd, sizeof spd, "%.2fx", r->speedup);
    } else {
        strcpy(dms, "n/a");
        strcpy(dgb, "n/a");
        strcpy(spd, "n/a");
    }
    printf("%-7s %-4s %-14s %-5s %-6s %3d %5d %9.3f %9.3f %9.3f %7.2f %6.1f %-5s %5.0f%% %4.0f%% %-13s %-4s %9s %7s %7s  %s\n",
           OP_LABEL(r->p), layout_name[r->p->layout], r->p->shape, dt_name(r->p->dt), r->path,
           r->threads, r->reps, r->med * 1e3, r->min * 1e3, r->max * 1e3, r->gbs, r->ceil, class_name[r->cls],
           r->pct, r->pct_rs, chk, r->same, dms, dgb, spd, r->dnnl_impl);
    fflush(stdout);
}

static void write_csv(const char *file) {
    FILE *f = fopen(file, "w");
    int i;
    if (!f) { fprintf(stderr, "nbwd_bench: cannot write %s\n", file); return; }
    fprintf(f, "op,layout,shape,dtype,path,threads,reps,median_ms,min_ms,max_ms,bytes,gbs,ceiling_gbs,ceiling_class,"
               "pct_ceiling,pct_regular_store_ceiling,check,err,det,onednn_ms,onednn_gbs,speedup,onednn_impl\n");
    for (i = 0; i < nrows; ++i) {
        const row *r = &rows[i];
        fprintf(f, "%s,%s,%s,%s,%s,%d,%d,%.6f,%.6f,%.6f,%.0f,%.3f,%.3f,%s,%.1f,%.1f,%s,%.3g,%s,", OP_LABEL(r->p),
                layout_name[r->p->layout], r->p->shape, dt_name(r->p->dt), r->path, r->threads, r->reps, r->med * 1e3,
                r->min * 1e3, r->max * 1e3, prob_bytes(r->p), r->gbs, r->ceil, class_name[r->cls], r->pct,
                r->pct_rs, r->ok ? "ok" : "FAIL", r->err, r->same);
        if (r->dnnl_state)
            fprintf(f, "%.6f,%.3f,%.3f,%s%s\n", r->dnnl_med * 1e3, r->dnnl_gbs, r->speedup, r->dnnl_impl,
                    r->dnnl_state == 2 ? " (check failed)" : "");
        else
            fprintf(f, ",,,n/a\n");
    }
    fclose(f);
    printf("CSV: %s\n", file);
}

/* One cluster per problem: library GB/s per thread count, oneDNN GB/s, and
   the ceiling of each thread count as points. */
static void write_plot(const char *png, const int *thr, int nthr) {
    FILE *g;
    int i, j, t, nprob = 0;
    const problem *seen[MAX_PROBLEMS];
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr, "nbwd_bench: gnuplot not found (Debian: gnuplot-nox); no plot\n");
        return;
    }
    g = popen("gnuplot", "w");
    if (!g) { fprintf(stderr, "nbwd_bench: cannot run gnuplot\n"); return; }
    for (i = 0; i < nrows; ++i) {
        for (j = 0; j < nprob; ++j) if (seen[j] == rows[i].p) break;
        if (j == nprob && nprob < MAX_PROBLEMS) seen[nprob++] = rows[i].p;
    }
    fprintf(g, "set terminal pngcairo size %d,720 noenhanced\nset output '%s'\n", 300 + 70 * nprob, png);
    fprintf(g, "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n");
    fprintf(g, "set ylabel 'GB/s (x, dy read + dx written + stats/params)'\nset xtics rotate by -45 scale 0 font ',9'\n");
    fprintf(g, "set key outside right top\nset grid ytics\nset yrange [0:*]\n");
    fprintf(g, "set title 'norm\\_bwd backward: GB/s per shape vs the read-2-write-1 ceiling (points)'\n");
    fprintf(g, "$D << EOD\n");
    for (j = 0; j < nprob; ++j) {
        fprintf(g, "\"%s %s %s %s\"", OP_LABEL(seen[j]), layout_name[seen[j]->layout], seen[j]->shape,
                dt_name(seen[j]->dt));
        for (t = 0; t < nthr; ++t) {
            double gb = 0, dg = 0, ce = 0;
            for (i = 0; i < nrows; ++i)
                if (rows[i].p == seen[j] && rows[i].threads == thr[t]) {
                    gb = rows[i].gbs; ce = rows[i].ceil; dg = rows[i].dnnl_state ? rows[i].dnnl_gbs : 0;
                }
            fprintf(g, " %.3f %.3f %.3f", gb, dg, ce);
        }
        fprintf(g, "\n");
    }
    fprintf(g, "EOD\nplot ");
    for (t = 0; t < nthr; ++t)
        fprintf(g, "%s$D using %d:xtic(1) title 'norm_bwd %dT', $D using %d title 'oneDNN %dT'", t ? ", " : "",
                2 + 3 * t, thr[t], 3 + 3 * t, thr[t]);
    for (t = 0; t < nthr; ++t)
        fprintf(g, ", $D using ($0):%d with points pt %d ps 1.2 title 'ceiling %dT'", 4 + 3 * t, 7 - 2 * (t % 2), thr[t]);
    fprintf(g, "\n");
    if (pclose(g) != 0) fprintf(stderr, "nbwd_bench: gnuplot failed\n");
    else printf("plot: %s\n", png);
}

/* --------------------------------------------------------------- main */
static const char *default_shapes =
    "ln:32768x768,ln:8192x1024,ln:4096x4096,ln:2048x8192,ln:131072x64,ln:500000x24,ln:64x768,"
    "rms:32768x4096,rms:8192x1024,rms:64x4096,rms-res:32768x4096,ln-res:8192x1024,"
    "rms-none:2048x4096,rms-none:64x4096,ln-none:8192x768,"
    "bn-ncx:32x64x56x56,bn-nxc:32x64x56x56,bn-ncx:32x256x28x28,bn-nxc:32x256x28x28,"
    "bn-ncx:64x512x7x7,bn-nxc:64x512x7x7,bn-nc:256x1024,"
    "bn-ncx-frozen:32x64x56x56,bn-nxc-frozen:32x64x56x56,bn-nc-frozen:256x1024,"
    "bn-ncx-relu:32x64x56x56,bn-nxc-relu:32x64x56x56,bn-nc-relu:256x1024,bn-ncx-addrelu:32x64x56x56,bn-nxc-addrelu:32x64x56x56,"
    "gn-ncx:16x320x64x64/32,gn-nxc:16x320x64x64/32,gn-ncx:16x128x128x128/32,gn-nxc:16x128x128x128/32,"
    "gn-ncx:8x64x128x128/64,gn-nxc:8x64x128x128/64";

static void usage(void) {
    printf("usage: nbwd_bench [options]\n"
           "  --shapes LIST   comma-separated: ln:RxN (or RxN; leading dims multiply into rows),\n"
           "                  bn-ncx:NxCxHxW, bn-nxc:NxCxHxW (dims in N,C,spatial order), bn-nc:NxC;\n"
           "                  bn-ncx-frozen:... etc.: frozen statistics, diff_src alone (row label BNf);\n"
           "                  bn-ncx-relu:..., bn-nxc-addrelu:... etc.: the fused ReLU (BNr), add + ReLU (BNar)\n"
           "                  rms:RxN: RMSNorm (row label RMS)\n"
           "                  ln-res:RxN, rms-res:RxN: with a residual gradient added to diff_src (row label\n"
           "                  LN+res, RMS+res; the peer columns: the call without it, then a separate add)\n"
           "                  ln-none:RxN, rms-none:RxN: the statistics computed in the call (NBWD_STATS_NONE),\n"
           "                  no gamma, diff_src alone (row label LNnone, RMSnone; the peer columns: a ggml-style\n"
           "                  loop that recomputes them; the saved-statistics call's time in the impl column)\n"
           "                  gn-ncx:NxCxHxW/G, gn-nxc:NxCxHxW/G: GroupNorm, G groups dividing C (row label GN;\n"
           "                  IN, InstanceNorm, when G = C); no oneDNN peer (bench/torch_peer.py times PyTorch's)\n"
           "  --dtype LIST    f32,bf16,f16 for every shape (default: LayerNorm, RMSNorm and GroupNorm f32+bf16,\n"
           "                  BatchNorm f32)\n"
           "  --threads LIST  thread counts (default: 1 and all = %d)\n"
           "  --isa NAME      force the library path (scalar, sse, avx2, avx512, avx512_bf16, neon, neon_bf16) via desc.isa\n"
           "  --reps N        timed runs per variant (default: adaptive, >= 15)\n"
           "  --workspace M   auto (NULL: the library allocates, default) or caller (preallocated)\n"
           "  --csv FILE      also write the rows as CSV\n"
           "  --plot FILE.png GB/s per shape vs the ceiling (needs gnuplot)\n"
           "  --no-onednn     skip the oneDNN comparison\n"
           "  --no-ceiling    skip the ceiling measurement (for profiling; %%ceil shows 0)\n"
           "  --quick         5 runs per variant, smaller DRAM ceiling arrays (a smoke run)\n"
           "  --default-shapes  print the default --shapes list and exit\n",
           max_threads());
}

static void cpu_model(char *buf, size_t len) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    snprintf(buf, len, "unknown CPU");
    if (!f) return;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c += 2;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, len, "%s", c);
            }
            break;
        }
    fclose(f);
}

/* Cache size of a level: sysfs first (in VMs glibc's cpuid-based sysconf
   can report the host's total, e.g. 256 or 508 MiB of L3), then sysconf,
   then a guess (512 KiB L2, 32 MiB L3). Without sysfs an L3 over 64 MiB is
   taken for such a host total and the guess used: one core's share of a
   larger L3 is not what a row of that footprint finds. */
static double cache_bytes(int level) {
    int idx;
    for (idx = 0; idx < 8; ++idx) {
        char path[96], buf[64];
        FILE *f;
        int lv = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
        if (!(f = fopen(path, "r"))) break;
        if (fscanf(f, "%d", &lv) != 1) lv = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
        if (!(f = fopen(path, "r"))) continue;
        if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
        fclose(f);
        if (lv != level || strncmp(buf, "Instruction", 11) == 0) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        if ((f = fopen(path, "r"))) {
            double v = 0;
            char unit = 0;
            int n = fscanf(f, "%lf%c", &v, &unit);
            fclose(f);
            if (n >= 1 && v > 0)
                return v * (unit == 'K' ? 1024.0 : unit == 'M' ? 1048576.0 : unit == 'G' ? 1073741824.0 : 1.0);
        }
    }
    {
        long v = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
        if (v > 0 && (level == 2 || (double)v <= 64.0 * 1048576)) return (double)v;
    }
    return level == 2 ? 512.0 * 1024 : 32.0 * 1048576;
}

/* 1-minute load average (other processes on this machine skew timings). */
static double loadavg(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    double v = -1.0;
    if (f) {
        if (fscanf(f, "%lf", &v) != 1) v = -1.0;
        fclose(f);
    }
    return v;
}

static int parse_int_list(const char *s, int *out, int max) {
    int n = 0;
    while (*s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > 1024) return 0;
        out[n++] = (int)v;
        s = end;
        if (*s == ',') ++s;
        else if (*s) return 0;
    }
    return n;
}

#ifndef NBWD_BENCH_REV
#define NBWD_BENCH_REV "unknown"
#endif

int main(int argc, char **argv) {
    const char *shapes = default_shapes, *dtypes = NULL, *csv = NULL, *png = NULL, *isa_name = NULL;
    int thr[MAX_THREADS_LIST], nthr = 0, quick = 0, caller_ws = 0, no_dnnl = 0, no_ceil = 0, i, j, t, any_fail = 0;
    int all = max_threads();
    nbwd_isa isa = NBWD_ISA_AUTO;
    static problem probs[MAX_PROBLEMS];
    int nprob = 0;
    ceilings cl, cl_start, cl_end;
    char cpu[128], dnnl_ver[96], stamp[64];
    double t_start = now_s();
    time_t now = time(NULL);

    for (i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(); return 0; }
        else if (!strcmp(a, "--default-shapes")) { printf("%s\n", default_shapes); return 0; }
        else if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--no-onednn")) no_dnnl = 1;
        else if (!strcmp(a, "--no-ceiling")) no_ceil = 1;
        else if (v && !strcmp(a, "--shapes")) { shapes = v; ++i; }
        else if (v && !strcmp(a, "--dtype")) { dtypes = v; ++i; }
        else if (v && !strcmp(a, "--csv")) { csv = v; ++i; }
        else if (v && !strcmp(a, "--plot")) { png = v; ++i; }
        else if (v && !strcmp(a, "--isa")) { isa_name = v; ++i; }
        else if (v && !strcmp(a, "--reps")) {
            fixed_reps = atoi(v); ++i;
            if (fixed_reps < 1 || fixed_reps > 4096) { fprintf(stderr, "nbwd_bench: --reps 1..4096\n"); return 2; }
        } else if (v && !strcmp(a, "--workspace")) {
            if (!strcmp(v, "caller")) caller_ws = 1;
            else if (strcmp(v, "auto")) { fprintf(stderr, "nbwd_bench: --workspace auto|caller\n"); return 2; }
            ++i;
        } else if (v && !strcmp(a, "--threads")) {
            if (!(nthr = parse_int_list(v, thr, MAX_THREADS_LIST))) { fprintf(stderr, "nbwd_bench: bad --threads\n"); return 2; }
            ++i;
        } else { fprintf(stderr, "nbwd_bench: unknown or incomplete option '%s'\n", a); usage(); return 2; }
    }
    if (quick) { min_reps = 5; target_time = 0.05; }
    if (nthr == 0) { thr[nthr++] = 1; if (all > 1) thr[nthr++] = all; }
    if (isa_name) {
        for (j = 1; j < NBWD_ISA_COUNT; ++j)
            if (!strcmp(isa_name, nbwd_isa_name((nbwd_isa)j))) break;
        if (j == NBWD_ISA_COUNT) { fprintf(stderr, "nbwd_bench: unknown --isa '%s'\n", isa_name); return 2; }
        if (!nbwd_isa_supported((nbwd_isa)j)) {
            fprintf(stderr, "nbwd_bench: path '%s' is not compiled in or cannot run here: not timing it\n", isa_name);
            return 2;
        }
        isa = (nbwd_isa)j;
    }
    /* problems: each shape x dtype */
    {
        char buf[4096], *tok, *save = NULL;
        snprintf(buf, sizeof buf, "%s", shapes);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int dts[3], ndt = 0, k;
            problem p;
            if (!parse_problem(tok, NBWD_F32, &p)) { fprintf(stderr, "nbwd_bench: bad shape '%s'\n", tok); return 2; }
            if (dtypes) {
                char db[64], *d2, *s2 = NULL;
                snprintf(db, sizeof db, "%s", dtypes);
                for (d2 = strtok_r(db, ",", &s2); d2 && ndt < 3; d2 = strtok_r(NULL, ",", &s2)) {
                    if (!strcmp(d2, "f32")) dts[ndt++] = NBWD_F32;
                    else if (!strcmp(d2, "bf16")) dts[ndt++] = NBWD_BF16;
                    else if (!strcmp(d2, "f16")) dts[ndt++] = NBWD_F16;
                    else { fprintf(stderr, "nbwd_bench: bad --dtype '%s'\n", d2); return 2; }
                }
            } else {
                dts[ndt++] = NBWD_F32;
                if (p.op == OP_LN || p.op == OP_GN) dts[ndt++] = NBWD_BF16;
            }
            for (k = 0; k < ndt && nprob < MAX_PROBLEMS; ++k) { probs[nprob] = p; probs[nprob].dt = dts[k]; ++nprob; }
        }
    }
    /* default order: all f32 rows, then bf16, then f16 (LayerNorm first) */
    {
        problem sorted[MAX_PROBLEMS];
        int n = 0, d;
        static const int order[3] = {NBWD_F32, NBWD_BF16, NBWD_F16};
        for (d = 0; d < 3; ++d)
            for (j = 0; j < nprob; ++j) if (probs[j].dt == order[d]) sorted[n++] = probs[j];
        memcpy(probs, sorted, sizeof(problem) * (size_t)n);
    }

#if defined(BENCH_X86)
    have_avx2 = nbwd_isa_supported(NBWD_ISA_AVX2);
    stream_isa = have_avx2 ? "avx2" : "sse2";
#endif
    cpu_model(cpu, sizeof cpu);
    if (no_dnnl) snprintf(dnnl_ver, sizeof dnnl_ver, "oneDNN skipped (--no-onednn)");
    else if (!bench_dnnl_available(dnnl_ver, sizeof dnnl_ver)) no_dnnl = 1;
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    printf("nbwd_bench  %s\n", stamp);
    printf("machine: %s, %ld online CPUs, OpenMP max threads %d\n", cpu, sysconf(_SC_NPROCESSORS_ONLN), all);
    printf("compiler: %s%s; norm_bwd %d.%d (source %s), auto path %s%s%s\n",
#if defined(__clang__)
           "clang ",
#elif defined(__GNUC__)
           "gcc ",
#else
           "",
#endif
           __VERSION__, NBWD_VERSION_MAJOR, NBWD_VERSION_MINOR, NBWD_BENCH_REV, nbwd_isa_name(nbwd_active_isa()),
           isa_name ? ", forced " : "", isa_name ? isa_name : "");
    printf("%s\n", dnnl_ver);
    {
        double la = loadavg();
        if (la >= 0) printf("load average (1 min) at start: %.2f%s\n", la,
                            la > 0.5 ? "  *** other processes are busy: timings will be noisy ***" : "");
    }

    /* ceilings for 1 and every requested thread count */
    memset(&cl, 0, sizeof cl);
    cl.thr[cl.nthr++] = 1;
    for (t = 0; t < nthr; ++t) {
        for (j = 0; j < cl.nthr; ++j) if (cl.thr[j] == thr[t]) break;
        if (j == cl.nthr && cl.nthr < MAX_THREADS_LIST) cl.thr[cl.nthr++] = thr[t];
    }
    cl.l2_bytes = cache_bytes(2);
    cl.l3_bytes = cache_bytes(3);
    if (!no_ceil) measure_ceilings(&cl, quick);

    for (i = 0; i < nprob; ++i) {
        const problem *p = &probs[i];
        data D;
        libcall L;
        bench_dnnl *h = NULL;
        char why[160] = "";
        uint64_t first_hash = 0;
        double bytes = prob_bytes(p), foot = 3.0 * (double)prob_elems(p) * (double)dt_size(p->dt);
        int cls = foot <= 2.0 * cl.l2_bytes ? CL_L2 : foot <= 0.75 * cl.l3_bytes ? CL_L3 : CL_DRAM;
        data_make(p, &D);
        if (p->relu == 1 && !no_dnnl && p->dt != NBWD_F16) {
            /* oneDNN's forward makes the dst that every library reads (its
               backward needs that forward's workspace), the reference anew */
            bench_dnnl *f = bench_dnnl_bn_create(p->rank, p->dims, p->layout == LAY_NXC, p->dt == NBWD_BF16, 0, 1,
                                                 1e-5f, why, sizeof why);
            if (f && bench_dnnl_bn_relu_forward(f, D.x, D.mean, D.var, D.gamma, D.beta, D.dst) == 0)
                data_reference(p, &D);
            bench_dnnl_destroy(f);
        }
        lib_setup(&L, p, &D, isa, caller_ws);
        for (t = 0; t < nthr && nrows < MAX_ROWS; ++t) {
            row *r = &rows[nrows++];
            check c;
            double pair_med, pair_ratio; /* relu rows: the unfused pair (see relu_pair) */
            timing tm;
            nbwd_status s;
            uint64_t hsh;
            memset(r, 0, sizeof *r);
            r->p = p;
            r->threads = thr[t];
            r->cls = cls;
            snprintf(r->path, sizeof r->path, "%s", nbwd_isa_name(isa != NBWD_ISA_AUTO ? isa : nbwd_active_isa()));
            set_threads(thr[t]);
            /* check first: outputs poisoned so an unwritten element shows */
            memset(D.dx, 0xff, (size_t)prob_elems(p) * dt_size(p->dt));
            memset(D.dg, 0xff, (size_t)prob_params(p) * 4);
            memset(D.db, 0xff, (size_t)prob_params(p) * 4);
            if (D.add) memset(D.add, 0xff, (size_t)prob_elems(p) * dt_size(p->dt));
            s = lib_run(&L);
            if (s != NBWD_OK) {
                fprintf(stderr, "\n*** nbwd call FAILED for %s %s %s: %s\n", OP_LABEL(p), p->shape,
                        dt_name(p->dt), nbwd_status_string(s));
                r->ok = 0;
                any_fail = 1;
                --nrows;
                continue;
            }
            do_check(p, &D, D.dx, D.dg, D.db, &c);
            if (c.ok && p->relu == 2) check_add_grad(p, &D, D.add, &c);
            r->ok = c.ok;
            r->err = c.err_dx > c.err_dg ? (c.err_dx > c.err_db ? c.err_dx : c.err_db)
                                         : (c.err_dg > c.err_db ? c.err_dg : c.err_db);
            if (!c.ok) {
                fprintf(stderr, "\n*** CHECK FAILED: norm_bwd %s %s %s %s, %d threads, path %s: %s\n",
                        OP_LABEL(p), layout_name[p->layout], p->shape, dt_name(p->dt), thr[t], r->path,
                        c.msg);
                any_fail = 1;
            }
            hsh = fnv(fnv(fnv(14695981039346656037ull, D.dx, (size_t)prob_elems(p) * dt_size(p->dt)), D.dg,
                          (size_t)prob_params(p) * 4),
                      D.db, (size_t)prob_params(p) * 4);
            if (t == 0) { first_hash = hsh; strcpy(r->same, "-"); }
            else strcpy(r->same, hsh == first_hash ? "same" : "DIFF");
            if (time_it(run_lib_cb, &L, &tm)) { fprintf(stderr, "*** nbwd call failed while timing\n"); any_fail = 1; }
            r->reps = tm.reps; r->med = tm.med; r->min = tm.min; r->max = tm.max;
            r->gbs = bytes / tm.med * 1e-9;
            pair_med = pair_ratio = 0.0;
            if (p->relu) { /* beside the peer: the unfused pair (a mask pass, then the plain call), in turns */
                libcall U = L;
                check c2;
                U.relu_pair = 1;
                U.desc.bn.flags = 0;
                if (run_variant_checked(p, &D, &U, "unfused ReLU pair", thr[t], &c2) == 0 && c2.ok &&
                    time_pair(run_lib_cb, &L, run_lib_cb, &U, &tm, &pair_med, &pair_ratio) != 0)
                    pair_med = pair_ratio = 0.0;
            }
            /* oneDNN takes its thread count when the primitive is created
               (its OpenMP regions name it), so one primitive per thread count */
            if (p->none) { /* the peer: the ggml-style loop; beside it the saved-statistics call */
                libcall U = L;
                ggmlcall gc;
                check c2;
                double saved_med = 0.0, saved_ratio = 0.0;
                U.saved = 1;
                U.desc.ln.stats_form = NBWD_STATS_MEAN_VARIANCE; /* (RMSNorm's MEAN_SQUARE) */
                if (run_variant_checked(p, &D, &U, "saved-statistics", thr[t], &c2) == 0) {
                    /* in turns with the none call: the ratio is the point */
                    if (time_pair(run_lib_cb, &L, run_lib_cb, &U, &tm, &saved_med, &saved_ratio) == 0) {
                        r->reps = tm.reps; r->med = tm.med; r->min = tm.min; r->max = tm.max;
                        r->gbs = bytes / tm.med * 1e-9;
                    }
                }
                gc.p = p;
                gc.D = &D;
                memset(D.dx2, 0xff, (size_t)prob_elems(p) * dt_size(p->dt));
                if (p->dt == NBWD_F32 && run_ggml_style_cb(&gc) == 0) {
                    do_check(p, &D, D.dx2, D.dg2, D.db2, &c2);
                    if (!c2.ok)
                        fprintf(stderr, "\n*** ggml-style loop check failed: %s %s: %s\n", OP_LABEL(p), p->shape,
                                c2.msg);
                    time_peer(run_ggml_style_cb, &gc, &L, c2.ok, bytes, r);
                }
                snprintf(r->dnnl_impl, sizeof r->dnnl_impl, "%s; saved stats %.3f ms (%.2fx)",
                         p->dt == NBWD_F32 ? "ggml-style" : "n/a", saved_med * 1e3,
                         saved_ratio);
            } else if (p->res) { /* the peer: the same call without the residual, then a separate add */
                libcall U = L;
                check c2;
                U.unfused = 1;
                if (run_variant_checked(p, &D, &U, "unfused result", thr[t], &c2) == 0) {
                    if (time_peer(run_lib_cb, &U, &L, c2.ok, bytes, r) == 0)
                        snprintf(r->dnnl_impl, sizeof r->dnnl_impl, "unfused: norm_bwd, then add");
                }
            } else if (!no_dnnl) {
                int bf = p->dt == NBWD_BF16;
                if (p->dt == NBWD_F16) snprintf(why, sizeof why, "f16 not benchmarked against oneDNN");
                else if (p->rms) snprintf(why, sizeof why, "no RMSNorm before oneDNN 3.9");
                else if (p->op == OP_GN) snprintf(why, sizeof why, "no GroupNorm in oneDNN 2.x");
                else if (p->op == OP_LN) h = bench_dnnl_ln_create(p->dims[0], p->dims[1], bf, 1e-5f, why, sizeof why);
                else {
                    h = bench_dnnl_bn_create(p->rank, p->dims, p->layout == LAY_NXC, bf, p->frozen, p->relu, 1e-5f,
                                             why, sizeof why);
                    /* its workspace (the same dst as the libraries' run on) */
                    if (h && p->relu && bench_dnnl_bn_relu_forward(h, D.x, D.mean, D.var, D.gamma, D.beta, D.dx2)) {
                        snprintf(why, sizeof why, "ReLU forward failed");
                        bench_dnnl_destroy(h);
                        h = NULL;
                    }
                }
            }
            if (h) {
                dnnlcall dc;
                check c2;
                dc.h = h;
                dc.D = &D;
                memset(D.dx2, 0xff, (size_t)prob_elems(p) * dt_size(p->dt));
                if (run_dnnl_cb(&dc) == 0) {
                    do_check(p, &D, D.dx2, D.dg2, D.db2, &c2);
                    if (!c2.ok)
                        fprintf(stderr, "\n*** oneDNN result check failed: %s %s %s, %d threads: %s\n",
                                OP_LABEL(p), p->shape, dt_name(p->dt), thr[t], c2.msg);
                    if (time_peer(run_dnnl_cb, &dc, &L, c2.ok, bytes, r) == 0)
                        snprintf(r->dnnl_impl, sizeof r->dnnl_impl, "%s", bench_dnnl_impl(h));
                } else {
                    snprintf(r->dnnl_impl, sizeof r->dnnl_impl, "execute failed");
                }
            } else if (!no_dnnl && t == 0 && why[0]) {
                snprintf(r->dnnl_impl, sizeof r->dnnl_impl, "n/a: %.34s", why);
            }
            bench_dnnl_destroy(h);
            h = NULL;
            if (pair_med > 0.0) { /* the unfused pair's median and its median ratio to the fused call (> 1: fused faster) */
                size_t u = strlen(r->dnnl_impl);
                snprintf(r->dnnl_impl + u, sizeof r->dnnl_impl - u, "%spair %.3f ms (%.2fx)", u ? "; " : "",
                         pair_med * 1e3, pair_ratio);
            }
            fprintf(stderr, "  [%d/%d] %s %s %s %s %dT: %.3f ms, %.2f GB/s\n", i + 1, nprob, OP_LABEL(p),
                    layout_name[p->layout], p->shape, dt_name(p->dt), thr[t], r->med * 1e3, r->gbs);
        }
        data_free(&D);
    }
    set_threads(all);
    /* the ceilings again: the better of the two measurements counts (a busy
       machine at either end shows as a gap between them) */
    cl_start = cl_end = cl;
    if (!no_ceil) {
        int k, m;
        fprintf(stderr, "  measuring the ceilings again\n");
        measure_ceilings(&cl_end, quick);
        for (k = 0; k < CL_COUNT; ++k)
            for (j = 0; j < cl.nthr; ++j)
                for (m = 0; m < 2; ++m)
                    if (cl_end.rate[k][j][m] > cl.rate[k][j][m]) cl.rate[k][j][m] = cl_end.rate[k][j][m];
        for (j = 0; j < cl.nthr; ++j) {
            if (cl_end.dram_read[j] > cl.dram_read[j]) cl.dram_read[j] = cl_end.dram_read[j];
            if (cl_end.dram_write[j] > cl.dram_write[j]) cl.dram_write[j] = cl_end.dram_write[j];
        }
    }
    for (i = 0; i < nrows; ++i) {
        row *r = &rows[i];
        r->ceil = ceiling_for(&cl, r->cls, r->threads, 0);
        r->pct = r->ceil > 0 ? 100.0 * r->gbs / r->ceil : 0.0;
        r->pct_rs = r->ceil > 0 ? 100.0 * r->gbs / ceiling_for(&cl, r->cls, r->threads, 1) : 0.0;
    }
    if (no_ceil) printf("\nceilings: skipped (--no-ceiling)\n");
    else printf("\nceilings, read-two-write-one c[i] = a[i] + b[i] (%s), GB/s counting 12 bytes per element, median:\n",
           stream_isa);
    if (!no_ceil) {
        printf("  measured before and after the rows, the better one used [before/after]\n");
        printf("  %-44s", "threads:");
        for (j = 0; j < cl.nthr; ++j) printf(" %20d", cl.thr[j]);
        printf("\n  %-44s", quick ? "DRAM 3 x 128 MiB, regular stores" : "DRAM 3 x 256 MiB, regular stores");
        for (j = 0; j < cl.nthr; ++j)
            printf(" %6.1f [%5.1f/%5.1f]", cl.rate[CL_DRAM][j][0], cl_start.rate[CL_DRAM][j][0], cl_end.rate[CL_DRAM][j][0]);
        printf("\n  %-44s", "DRAM, non-temporal stores");
        for (j = 0; j < cl.nthr; ++j)
            printf(" %6.1f [%5.1f/%5.1f]", cl.rate[CL_DRAM][j][1], cl_start.rate[CL_DRAM][j][1], cl_end.rate[CL_DRAM][j][1]);
        printf("\n  %-44s", "DRAM, the reads alone (a, b: 8 B/element)");
        for (j = 0; j < cl.nthr; ++j)
            printf(" %6.1f [%5.1f/%5.1f]", cl.dram_read[j], cl_start.dram_read[j], cl_end.dram_read[j]);
        printf("\n  %-44s", "DRAM, the non-temporal writes alone (c: 4 B)");
        for (j = 0; j < cl.nthr; ++j)
            printf(" %6.1f [%5.1f/%5.1f]", cl.dram_write[j], cl_start.dram_write[j], cl_end.dram_write[j]);
        printf("\n  %-44s", "reads, then writes: 12/(8/reads + 4/writes)");
        for (j = 0; j < cl.nthr; ++j) {
            double rd = cl.dram_read[j], wr = cl.dram_write[j], nt = cl.rate[CL_DRAM][j][1];
            double phased = rd > 0 && wr > 0 ? 12.0 / (8.0 / rd + 4.0 / wr) : 0.0;
            printf(" %6.1f (%3.0f %% of NT)", phased, nt > 0 ? 100.0 * phased / nt : 0.0);
        }
        printf("\n  %-44s", "L3 3 x 4+ MiB (>= 4 x L2 a thread), split");
        for (j = 0; j < cl.nthr; ++j)
            printf(" %6.1f [%5.1f/%5.1f]", cl.rate[CL_L3][j][0], cl_start.rate[CL_L3][j][0], cl_end.rate[CL_L3][j][0]);
        printf("\n  %-44s", "L2 3 x 170 KiB (0.5 MiB), split");
        for (j = 0; j < cl.nthr; ++j)
            printf(" %6.1f [%5.1f/%5.1f]", cl.rate[CL_L2][j][0], cl_start.rate[CL_L2][j][0], cl_end.rate[CL_L2][j][0]);
        printf("\n  classes by footprint x+dy+dx (L2 %.0f KiB per core, L3 %.0f MiB): L2 class <= %.0f KiB (2 x L2)\n"
               "  < L3 class <= %.0f MiB (3/4 L3) < DRAM class; a row's ceiling is the best of its class over\n"
               "  thread counts <= its own (and for DRAM over both store kinds).\n",
               cl.l2_bytes / 1024.0, cl.l3_bytes / 1048576.0, 2.0 * cl.l2_bytes / 1024.0, 0.75 * cl.l3_bytes / 1048576.0);
    }
    printf("bytes: LN 3*R*N*esz + 8*R + 12*N; BN 3*N*C*S*esz + 20*C; GN 3*N*C*S*esz + 8*N*G + 12*C\n"
           "(esz 4 f32, 2 bf16/f16; stats, params f32)\n");
    printf("time: one full call (validation, dispatch, workspace %s, threads), median of reps after warm-up;\n"
           "check: rel. L2 error vs float64 reference (worst of dx, dgamma, dbeta) before timing; det: outputs\n"
           "bitwise equal to the first thread count's; dnnl_ms '!': oneDNN's result failed the same check.\n"
           "%%ceil: of the row's ceiling (DRAM: the better store kind); %%rs: of the regular-store ceiling.\n"
           "speedup: the peer's calls timed in turns with norm_bwd's, the median of the per-turn ratios peer / norm_bwd (> 1: norm_bwd faster;\n"
           "dnnl_ms: the peer's median in those turns); the peer is oneDNN, but on +res rows the unfused pair (the call without the residual, then a separate add);\n"
           "BNr and BNar rows also give, in the impl column, the unfused pair's median (a ReLU-mask pass, which for BNar is the add's gradient, then the plain call) and the median of pair / fused in turns (> 1: fused faster);\n"
           "on none rows (statistics computed in the call, no gamma, diff_src alone) a ggml-style loop that recomputes them, and the\n"
           "impl column gives the saved-statistics call's median and the median of saved / none over calls timed in turns (> 1: the none call faster).\n\n",
           caller_ws ? "from the caller" : "NULL (library allocates)");
    print_row_header();
    for (i = 0; i < nrows; ++i) print_row(&rows[i]);
    printf("\ntotal %.1f s%s\n", now_s() - t_start, any_fail ? "   *** SOME CHECKS FAILED (see above) ***" : "");
    {
        double la = loadavg();
        if (la >= 0) printf("load average (1 min) at end: %.2f (this run itself adds up to ~%d)%s\n", la, all,
                            la > all + 0.5 ? "  *** other processes were busy: timings are noisy ***" : "");
    }
    if (csv) write_csv(csv);
    if (png) write_plot(png, thr, nthr);
    return any_fail ? 1 : 0;
}
