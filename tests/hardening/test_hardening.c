/* test_hardening.c - hardening tests of norm_bwd (issue 6), one translation
   unit with its own main:

     nan        the NaN/Inf policy: a non-finite value in one LayerNorm row
                (x, dy, mean, variance) or one BatchNorm channel (x, dy, mean,
                variance, gamma) changes only that row's/channel's diff_src
                and the diff_gamma/diff_beta entries it feeds; every other
                output bit equals the clean run. GroupNorm/InstanceNorm: one
                in x, dy, mean or variance changes only its (sample, group)
                set's diff_src and its channels' diff_gamma/diff_beta, one in
                gamma[c] only the sets of c's group; range extremes (huge,
                tiny and subnormal dy, gamma, variance) give finite outputs
                close to a float64 recomputation. BatchNorm's fused ReLU: a
                non-finite dy where dst <= 0 changes nothing, where dst > 0
                only its channel (and its own diff_src_add element); a NaN
                dst clips its element. On every path this build can
                run (scalar, sse, avx2, avx512, neon; emulated ones included).
     overflow   shapes whose element count overflows, strides whose extent
                overflows, impossible workspaces (GroupNorm also: hostile
                groups, flags, epsilon, non-dense blocks, self-overlapping
                outputs, aliases): an error status, no crash (each case in a
                forked child), no output byte written.
     threads    pthreads: racing first calls into the dispatcher, then
                concurrent calls on different data == serial bits (run this
                under ThreadSanitizer, built without -fopenmp).
     nested     calls from inside an OpenMP parallel region: same bits as
                outside, and no extra threads (counted in /proc/self/task).
     huge       (only with --huge) LayerNorm bf16 over 2^31 + 7 elements.

   usage: test_hardening [--isa NAME] [--quick] [--huge] [--suite NAME]...
   The last line is "N passed, N failed" (checks); exit status 1 on failure. */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#if !defined(TH_SEPARATE_IMPL)
#define NORM_BWD_IMPLEMENTATION
#endif
#include "norm_bwd.h"
#if defined(TH_SEPARATE_IMPL) /* the implementation linked in from tests/impl.c */
#include "../impl_hooks.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(_OPENMP)
#include <omp.h>
#endif

static long g_pass, g_fail;
static int g_quick, g_huge, g_isa_only; /* g_isa_only: 0 = every runnable path */
static char g_ctx[256];

static int check(int ok, const char *file, int line, const char *what) {
    if (ok) { ++g_pass; return 1; }
    ++g_fail;
    printf("  FAIL %s:%d [%s] %s\n", file, line, g_ctx, what);
    fflush(stdout);
    return 0;
}
#define CHECK(cond) check((cond) ? 1 : 0, __FILE__, __LINE__, #cond)
#define CHECK_ST(got, want)                                                                          \
    do {                                                                                             \
        nbwd_status got_ = (got), want_ = (want);                                                    \
        if (!check(got_ == want_, __FILE__, __LINE__, #got " == " #want))                           \
            printf("       got %s, expected %s\n", nbwd_status_string(got_), nbwd_status_string(want_)); \
    } while (0)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory (%zu bytes)\n", n); exit(2); }
    return p;
}

/* splitmix64 */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rng_f(uint64_t *s, float lo, float hi) {
    return lo + (hi - lo) * (float)((double)(rng_next(s) >> 40) / 16777216.0);
}

static size_t esz(nbwd_dtype dt) { return dt == NBWD_F32 ? 4u : 2u; }
static void put(void *p, int64_t i, nbwd_dtype dt, float v) {
    if (dt == NBWD_F32) ((float *)p)[i] = v;
    else if (dt == NBWD_F16) ((uint16_t *)p)[i] = nbwd_f32_to_f16(v);
    else ((uint16_t *)p)[i] = nbwd_f32_to_bf16(v);
}
static float get(const void *p, int64_t i, nbwd_dtype dt) {
    if (dt == NBWD_F32) return ((const float *)p)[i];
    if (dt == NBWD_F16) return nbwd_f16_to_f32(((const uint16_t *)p)[i]);
    return nbwd_bf16_to_f32(((const uint16_t *)p)[i]);
}
static const char *dt_name(nbwd_dtype dt) { return dt == NBWD_F32 ? "f32" : dt == NBWD_F16 ? "f16" : "bf16"; }

/* The paths to test: every one this build and CPU can run (or --isa). */
static int isa_wanted(int isa) { return nbwd_isa_supported((nbwd_isa)isa) && (!g_isa_only || g_isa_only == isa); }

/* ======================================================== NaN / Inf policy */
enum { AT_X, AT_DY, AT_MEAN, AT_VAR, AT_RES, AT_GAMMA, AT_COUNT };
static const char *const at_name[AT_COUNT] = {"x", "dy", "mean", "variance", "diff_residual", "gamma"};

typedef struct ln_case {
    int rms; /* RMSNorm: the same tensors but the mean; var is the mean square */
    int dst; /* the DST_RSTD form: x is the forward output, var its rstd, no mean */
    int64_t rows, cols;
    nbwd_dtype dt;
    void *x, *dy, *dx, *res; /* res: diff_residual, or NULL */
    float *mean, *var, *gamma, *dg, *db;
} ln_case;

static void ln_alloc(ln_case *c, int64_t rows, int64_t cols, nbwd_dtype dt, uint64_t seed) {
    int64_t i, n = rows * cols;
    c->rms = c->dst = 0; c->rows = rows; c->cols = cols; c->dt = dt;
    c->x = xmalloc((size_t)n * esz(dt)); c->dy = xmalloc((size_t)n * esz(dt)); c->dx = xmalloc((size_t)n * esz(dt));
    c->res = xmalloc((size_t)n * esz(dt));
    for (i = 0; i < n; ++i) put(c->res, i, dt, rng_f(&seed, -1, 1));
    c->mean = (float *)xmalloc((size_t)rows * 4); c->var = (float *)xmalloc((size_t)rows * 4);
    c->gamma = (float *)xmalloc((size_t)cols * 4);
    c->dg = (float *)xmalloc((size_t)cols * 4); c->db = (float *)xmalloc((size_t)cols * 4);
    for (i = 0; i < n; ++i) { put(c->x, i, dt, rng_f(&seed, -2, 2)); put(c->dy, i, dt, rng_f(&seed, -1, 1)); }
    for (i = 0; i < rows; ++i) { c->mean[i] = rng_f(&seed, -0.5f, 0.5f); c->var[i] = rng_f(&seed, 0.5f, 2); }
    for (i = 0; i < cols; ++i) c->gamma[i] = rng_f(&seed, 0.5f, 1.5f);
}
static void ln_free(ln_case *c) {
    free(c->x); free(c->dy); free(c->dx); free(c->res); free(c->mean); free(c->var); free(c->gamma); free(c->dg); free(c->db);
}
static nbwd_status ln_run(const ln_case *c, int isa, int num_threads) {
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    int64_t dims[2];
    dims[0] = c->rows; dims[1] = c->cols;
    if (c->rms) nbwd_rms_norm_bwd_desc_init(&d, 2, dims);
    else nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    d.data_dtype = c->dt;
    d.isa = (nbwd_isa)isa;
    d.num_threads = num_threads;
    if (c->dst) d.stats_form = NBWD_STATS_DST_RSTD;
    if (c->rms) {
        nbwd_rms_norm_bwd_args ra;
        memset(&ra, 0, sizeof ra);
        if (c->dst) ra.dst = c->x, ra.rstd = c->var;
        else ra.src = c->x, ra.mean_square = c->var;
        ra.diff_dst = c->dy; ra.gamma = c->gamma; ra.diff_residual = c->res;
        ra.diff_src = c->dx; ra.diff_gamma = c->dg; ra.diff_beta = c->db;
        return nbwd_rms_norm_bwd(&d, &ra, NULL, 0);
    }
    memset(&a, 0, sizeof a);
    if (c->dst) a.dst = c->x, a.rstd = c->var;
    else a.src = c->x, a.mean = c->mean, a.variance = c->var;
    a.diff_dst = c->dy; a.gamma = c->gamma; a.diff_residual = c->res;
    a.diff_src = c->dx; a.diff_gamma = c->dg; a.diff_beta = c->db;
    return nbwd_layer_norm_bwd(&d, &a, NULL, 0);
}

static int same_bits(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

/* rms: RMSNorm (no mean to poison). variant 0: no residual; 1: a residual
   gradient (its bad value reaches its own element alone); 2: that and the
   DST_RSTD form (rstd does not feed diff_gamma there: xhat comes from dst) */
static void nan_layer_norm(int isa, nbwd_dtype dt, int64_t rows, int64_t cols, int rms, int variant) {
    static const float vals[3] = {NAN, INFINITY, -INFINITY};
    ln_case c;
    int64_t r = rows / 2, j = cols - 1, row_bytes = cols * (int64_t)esz(dt), i, k;
    unsigned char *dx0;
    float *dg0 = (float *)xmalloc((size_t)cols * 4), *db0 = (float *)xmalloc((size_t)cols * 4);
    int at, v;
    const char *op = variant == 2 ? (rms ? "RMS dst+res" : "LN dst+res") : variant ? (rms ? "RMS res" : "LN res")
                     : rms ? "RMS" : "LN";
    ln_alloc(&c, rows, cols, dt, 1234 + (uint64_t)rows * 7 + (uint64_t)cols);
    c.rms = rms;
    c.dst = variant == 2;
    if (!variant) { free(c.res); c.res = NULL; }
    dx0 = (unsigned char *)xmalloc((size_t)(rows * row_bytes));
    snprintf(g_ctx, sizeof g_ctx, "nan %s %s %s %lldx%lld clean", op, nbwd_isa_name((nbwd_isa)isa), dt_name(dt),
             (long long)rows, (long long)cols);
    CHECK_ST(ln_run(&c, isa, 0), NBWD_OK);
    memcpy(dx0, c.dx, (size_t)(rows * row_bytes));
    memcpy(dg0, c.dg, (size_t)cols * 4);
    memcpy(db0, c.db, (size_t)cols * 4);
    for (at = AT_X; at <= AT_RES; ++at)
        for (v = 0; v < 3; ++v) {
            float saved;
            int row_ok = 1, all_nan = 1, params_ok = 1, affected_nonfinite = 1;
            void *target = at == AT_X ? c.x : at == AT_DY ? c.dy : at == AT_MEAN ? (void *)c.mean
                           : at == AT_VAR ? (void *)c.var : c.res;
            nbwd_dtype tdt = at <= AT_DY || at == AT_RES ? dt : NBWD_F32;
            int64_t idx = at <= AT_DY || at == AT_RES ? r * cols + j : r;
            if ((rms || c.dst) && at == AT_MEAN) continue;
            if (at == AT_RES && !c.res) continue;
            snprintf(g_ctx, sizeof g_ctx, "nan %s %s %s %lldx%lld %s[row %lld] = %g", op, nbwd_isa_name((nbwd_isa)isa),
                     dt_name(dt), (long long)rows, (long long)cols, at_name[at], (long long)r, (double)vals[v]);
            saved = get(target, idx, tdt);
            put(target, idx, tdt, vals[v]);
            CHECK_ST(ln_run(&c, isa, 0), NBWD_OK);
            put(target, idx, tdt, saved);
            /* Neighbouring rows: the very same bits. */
            for (i = 0; i < rows; ++i)
                if (i != r && !same_bits((char *)c.dx + i * row_bytes, dx0 + i * row_bytes, (size_t)row_bytes))
                    row_ok = 0;
            /* a residual's bad value: its own element alone */
            for (k = 0; at == AT_RES && k < cols; ++k)
                if (k != j && !same_bits((char *)c.dx + (r * cols + k) * (int64_t)esz(dt),
                                         dx0 + (r * cols + k) * (int64_t)esz(dt), esz(dt)))
                    row_ok = 0;
            CHECK(row_ok);
            /* diff_gamma / diff_beta: unaffected columns bit-identical. dgamma
               column k is fed by x[r][k], dy[r][k], mean[r], var[r]; dbeta
               column k only by dy[r][k]. */
            for (k = 0; k < cols; ++k) {
                int g_aff = at == AT_MEAN || (at == AT_VAR && !c.dst) || (k == j && at <= AT_DY);
                int b_aff = at == AT_DY && k == j;
                if (!g_aff && !same_bits(&c.dg[k], &dg0[k], 4)) params_ok = 0;
                if (!b_aff && !same_bits(&c.db[k], &db0[k], 4)) params_ok = 0;
                if (g_aff && !(at == AT_VAR && v == 1) && isfinite(c.dg[k])) affected_nonfinite = 0;
                if (b_aff && isfinite(c.db[k])) affected_nonfinite = 0;
                if (v == 0 && g_aff && !isnan(c.dg[k])) affected_nonfinite = 0;
            }
            CHECK(params_ok);
            CHECK(affected_nonfinite); /* propagated, never silently dropped (variance = +inf: rstd = 0, finite) */
            if (at == AT_RES) CHECK(!isfinite(get(c.dx, r * cols + j, dt)));
            else if (v == 0) { /* a NaN poisons its whole row's diff_src */
                for (k = 0; k < cols; ++k)
                    if (!isnan(get(c.dx, r * cols + k, dt))) all_nan = 0;
                CHECK(all_nan);
            }
        }
    free(dx0); free(dg0); free(db0);
    ln_free(&c);
}

typedef struct bn_case {
    int rank;
    int64_t dims[4];
    nbwd_layout layout;
    nbwd_dtype dt;
    int64_t N, C, S, total;
    void *x, *dy, *dx;
    float *mean, *var, *gamma, *dg, *db;
    int two_phase; /* the batch in two slices through reduce and apply */
    unsigned relu; /* 0, NBWD_FUSE_RELU or NBWD_FUSE_ADD_RELU: dst and (ADD) diff_src_add (dsa) given */
    void *dst, *dsa;
} bn_case;

static void bn_alloc(bn_case *c, int rank, const int64_t *dims, nbwd_layout layout, nbwd_dtype dt, uint64_t seed) {
    int64_t i;
    int d;
    c->rank = rank; c->layout = layout; c->dt = dt; c->two_phase = 0; c->relu = 0;
    c->total = 1;
    for (d = 0; d < rank; ++d) { c->dims[d] = dims[d]; c->total *= dims[d]; }
    c->N = dims[0];
    c->C = layout == NBWD_NXC ? dims[rank - 1] : dims[1];
    c->S = c->total / (c->N * c->C);
    c->x = xmalloc((size_t)c->total * esz(dt)); c->dy = xmalloc((size_t)c->total * esz(dt));
    c->dx = xmalloc((size_t)c->total * esz(dt));
    c->mean = (float *)xmalloc((size_t)c->C * 4); c->var = (float *)xmalloc((size_t)c->C * 4);
    c->gamma = (float *)xmalloc((size_t)c->C * 4);
    c->dg = (float *)xmalloc((size_t)c->C * 4); c->db = (float *)xmalloc((size_t)c->C * 4);
    for (i = 0; i < c->total; ++i) { put(c->x, i, dt, rng_f(&seed, -2, 2)); put(c->dy, i, dt, rng_f(&seed, -1, 1)); }
    for (i = 0; i < c->C; ++i) {
        c->mean[i] = rng_f(&seed, -0.5f, 0.5f); c->var[i] = rng_f(&seed, 0.5f, 2); c->gamma[i] = rng_f(&seed, 0.5f, 1.5f);
    }
    c->dst = xmalloc((size_t)c->total * esz(dt)); c->dsa = xmalloc((size_t)c->total * esz(dt));
    for (i = 0; i < c->total; ++i) put(c->dst, i, dt, rng_f(&seed, -1, 1)); /* drawn last: x, dy, ... as before */
}
static void bn_free(bn_case *c) {
    free(c->x); free(c->dy); free(c->dx); free(c->mean); free(c->var); free(c->gamma); free(c->dg); free(c->db);
    free(c->dst); free(c->dsa);
}
/* Channel of dense element i. */
static int64_t bn_channel(const bn_case *c, int64_t i) {
    return c->layout == NBWD_NXC || c->rank == 2 ? i % c->C : (i / c->S) % c->C;
}
static int64_t bn_index(const bn_case *c, int64_t n, int64_t ch, int64_t s) {
    return c->layout == NBWD_NXC || c->rank == 2 ? (n * c->S + s) * c->C + ch : (n * c->C + ch) * c->S + s;
}
static nbwd_status bn_run(const bn_case *c, int isa, int num_threads) {
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
    nbwd_batch_norm_bwd_desc_init(&d, c->rank, c->dims, c->layout, 1e-5f);
    d.data_dtype = c->dt;
    d.isa = (nbwd_isa)isa;
    d.num_threads = num_threads;
    memset(&a, 0, sizeof a);
    a.src = c->x; a.diff_dst = c->dy; a.mean = c->mean; a.variance = c->var; a.gamma = c->gamma;
    a.diff_src = c->dx; a.diff_gamma = c->dg; a.diff_beta = c->db;
    d.flags = c->relu;
    if (c->relu) a.dst = c->dst;
    if (c->relu == NBWD_FUSE_ADD_RELU) a.diff_src_add = c->dsa;
    if (c->two_phase) { /* batch entries [0, N/2) and [N/2, N), dense: offsets of whole entries */
        float *sums = (float *)xmalloc((size_t)c->C * 16);
        int64_t count[2] = {0, 0}, half = c->N / 2, k, ch, per = c->total / c->N * (int64_t)esz(c->dt);
        nbwd_status s = NBWD_OK;
        int phase;
        for (phase = 0; phase < 2; ++phase) { /* reduce per slice; the all-reduce; apply per slice */
            for (k = 0; k < 2 && s == NBWD_OK; ++k) {
                nbwd_batch_norm_bwd_args r = a;
                nbwd_batch_norm_bwd_desc sd = d;
                sd.dims[0] = k ? c->N - half : half;
                r.src = (const char *)c->x + (k ? half * per : 0);
                r.diff_dst = (const char *)c->dy + (k ? half * per : 0);
                r.diff_src = (char *)c->dx + (k ? half * per : 0);
                if (a.dst) r.dst = (const char *)c->dst + (k ? half * per : 0);
                if (a.diff_src_add) r.diff_src_add = (char *)c->dsa + (k ? half * per : 0);
                if (phase == 0) {
                    r.diff_src = r.diff_gamma = r.diff_beta = NULL;
                    s = nbwd_batch_norm_bwd_reduce(&sd, &r, sums + 2 * k * c->C, sums + (2 * k + 1) * c->C, &count[k],
                                                   NULL, 0);
                } else {
                    s = nbwd_batch_norm_bwd_apply(&sd, &r, sums, sums + c->C, count[0] + count[1], NULL, 0);
                }
            }
            for (ch = 0; ch < c->C && phase == 0; ++ch) {
                sums[ch] += sums[2 * c->C + ch];
                sums[c->C + ch] += sums[3 * c->C + ch];
            }
        }
        free(sums);
        return s;
    }
    return nbwd_batch_norm_bwd(&d, &a, NULL, 0);
}

/* two_phase: the same through nbwd_batch_norm_bwd_reduce and _apply over two
   slices of the batch (a bad value in one slice reaches its channel in
   both, through the sums, and nothing else) */
static void nan_batch_norm(int isa, nbwd_dtype dt, int rank, const int64_t *dims, nbwd_layout layout, int two_phase) {
    static const float vals[3] = {NAN, INFINITY, -INFINITY};
    bn_case c;
    int64_t ch, i, k, e;
    size_t bytes;
    unsigned char *dx0;
    float *dg0, *db0;
    int at, v;
    bn_alloc(&c, rank, dims, layout, dt, 99 + (uint64_t)dims[1] * 31);
    c.two_phase = two_phase;
    ch = c.C / 2;
    e = bn_index(&c, c.N - 1, ch, c.S - 1); /* the channel's last element: a SIMD tail in NCX */
    bytes = (size_t)c.total * esz(dt);
    dx0 = (unsigned char *)xmalloc(bytes);
    dg0 = (float *)xmalloc((size_t)c.C * 4); db0 = (float *)xmalloc((size_t)c.C * 4);
    snprintf(g_ctx, sizeof g_ctx, "nan BN%s %s %s %s rank %d clean", two_phase ? " two-phase" : "",
             nbwd_isa_name((nbwd_isa)isa), dt_name(dt), layout == NBWD_NXC ? "nxc" : "ncx", rank);
    CHECK_ST(bn_run(&c, isa, 0), NBWD_OK);
    memcpy(dx0, c.dx, bytes); memcpy(dg0, c.dg, (size_t)c.C * 4); memcpy(db0, c.db, (size_t)c.C * 4);
    for (at = AT_X; at <= AT_GAMMA; ++at) {
        if (at == AT_RES) continue; /* LayerNorm's and RMSNorm's */
        for (v = 0; v < 3; ++v) {
            float saved;
            int others_ok = 1, params_ok = 1, nonfinite = 1, all_nan = 1;
            void *target = at == AT_X ? c.x : at == AT_DY ? c.dy : at == AT_MEAN ? (void *)c.mean
                           : at == AT_VAR ? (void *)c.var : (void *)c.gamma;
            nbwd_dtype tdt = at <= AT_DY ? dt : NBWD_F32;
            int64_t idx = at <= AT_DY ? e : ch;
            int g_aff = at != AT_GAMMA, b_aff = at == AT_DY;
            snprintf(g_ctx, sizeof g_ctx, "nan BN%s %s %s %s rank %d %s[channel %lld] = %g",
                     two_phase ? " two-phase" : "", nbwd_isa_name((nbwd_isa)isa), dt_name(dt), layout == NBWD_NXC ? "nxc" : "ncx", rank,
                     at_name[at], (long long)ch, (double)vals[v]);
            saved = get(target, idx, tdt);
            put(target, idx, tdt, vals[v]);
            CHECK_ST(bn_run(&c, isa, 0), NBWD_OK);
            put(target, idx, tdt, saved);
            for (i = 0; i < c.total; ++i) {
                if (bn_channel(&c, i) != ch) {
                    if (!same_bits((char *)c.dx + i * (int64_t)esz(dt), dx0 + i * (int64_t)esz(dt), esz(dt)))
                        others_ok = 0;
                } else if (v == 0 && !isnan(get(c.dx, i, dt))) {
                    all_nan = 0;
                }
            }
            CHECK(others_ok);
            for (k = 0; k < c.C; ++k) {
                if ((k != ch || !g_aff) && !same_bits(&c.dg[k], &dg0[k], 4)) params_ok = 0;
                if ((k != ch || !b_aff) && !same_bits(&c.db[k], &db0[k], 4)) params_ok = 0;
            }
            CHECK(params_ok);
            if (g_aff && !(at == AT_VAR && v == 1) && isfinite(c.dg[ch])) nonfinite = 0;
            if (v == 0 && g_aff && !isnan(c.dg[ch])) nonfinite = 0;
            if (b_aff && isfinite(c.db[ch])) nonfinite = 0;
            CHECK(nonfinite);
            if (v == 0) CHECK(all_nan);
        }
    }
    free(dx0); free(dg0); free(db0);
    bn_free(&c);
}

/* The fused ReLU (relu: NBWD_FUSE_RELU, or NBWD_FUSE_ADD_RELU with its
   diff_src_add): dy counts only where dst > 0. A non-finite dy at element e
   of channel ch where dst <= 0 (negative, +0, -0) is masked out: every
   output bit equals the clean run's; where dst > 0 it reaches channel ch
   alone, and diff_src_add's element e alone. A NaN dst (either sign)
   clips e like a negative one, a NaN dy there included. */
typedef struct bn_out { unsigned char *dx, *dsa; float *dg, *db; } bn_out;
static void bn_out_save(const bn_case *c, bn_out *o) {
    size_t bytes = (size_t)c->total * esz(c->dt);
    if (!o->dx) {
        o->dx = (unsigned char *)xmalloc(bytes); o->dsa = (unsigned char *)xmalloc(bytes);
        o->dg = (float *)xmalloc((size_t)c->C * 4); o->db = (float *)xmalloc((size_t)c->C * 4);
    }
    memcpy(o->dx, c->dx, bytes); memcpy(o->dsa, c->dsa, bytes);
    memcpy(o->dg, c->dg, (size_t)c->C * 4); memcpy(o->db, c->db, (size_t)c->C * 4);
}
static int bn_out_same(const bn_case *c, const bn_out *o) {
    size_t bytes = (size_t)c->total * esz(c->dt);
    return same_bits(c->dx, o->dx, bytes) && same_bits(c->dg, o->dg, (size_t)c->C * 4) &&
           same_bits(c->db, o->db, (size_t)c->C * 4) &&
           (c->relu != NBWD_FUSE_ADD_RELU || same_bits(c->dsa, o->dsa, bytes));
}
static void nan_batch_norm_relu(int isa, nbwd_dtype dt, int rank, const int64_t *dims, nbwd_layout layout,
                                int two_phase, unsigned relu) {
    static const float vals[3] = {NAN, INFINITY, -INFINITY};
    static const float clipped[4] = {-0.5f, 0.0f, -0.0f, -INFINITY}; /* dst values that mask dy out */
    bn_case c;
    bn_out ref = {NULL, NULL, NULL, NULL};
    int64_t ch, i, k, e;
    size_t es = esz(dt);
    int q, v, add = relu == NBWD_FUSE_ADD_RELU;
    char what[160];
    bn_alloc(&c, rank, dims, layout, dt, 4242 + (uint64_t)dims[1] * 7);
    c.two_phase = two_phase;
    c.relu = relu;
    memset(c.dsa, 0xA5, (size_t)c.total * es);
    ch = c.C / 2;
    e = bn_index(&c, c.N - 1, ch, c.S - 1); /* the channel's last element: a SIMD tail in NCX */
    put(c.dy, e, dt, 0.75f);
    snprintf(what, sizeof what, "nan BN %s%s %s %s %s rank %d", add ? "add-relu" : "relu",
             two_phase ? " two-phase" : "", nbwd_isa_name((nbwd_isa)isa), dt_name(dt),
             layout == NBWD_NXC ? "nxc" : "ncx", rank);
    /* dst <= 0 at e: a non-finite dy there changes no output bit */
    for (q = 0; q < 4; ++q) {
        put(c.dst, e, dt, clipped[q]);
        snprintf(g_ctx, sizeof g_ctx, "%s dst[e] = %g clean", what, (double)clipped[q]);
        CHECK_ST(bn_run(&c, isa, 0), NBWD_OK);
        bn_out_save(&c, &ref);
        if (add) CHECK(get(c.dsa, e, dt) == 0.0f && !signbit(get(c.dsa, e, dt))); /* +0 */
        for (v = 0; v < 3; ++v) {
            snprintf(g_ctx, sizeof g_ctx, "%s dst[e] = %g, dy[e] = %g", what, (double)clipped[q], (double)vals[v]);
            put(c.dy, e, dt, vals[v]);
            CHECK_ST(bn_run(&c, isa, 0), NBWD_OK);
            put(c.dy, e, dt, 0.75f);
            CHECK(bn_out_same(&c, &ref));
        }
    }
    /* a NaN dst at e (either sign) clips it: the same bits as dst[e] = -0.5, even with a NaN dy */
    put(c.dst, e, dt, -0.5f);
    snprintf(g_ctx, sizeof g_ctx, "%s dst[e] = -0.5 clean", what);
    CHECK_ST(bn_run(&c, isa, 0), NBWD_OK);
    bn_out_save(&c, &ref);
    for (q = 0; q < 2; ++q)
        for (v = 0; v < 2; ++v) {
            snprintf(g_ctx, sizeof g_ctx, "%s dst[e] = %sNaN, dy[e] = %s", what, q ? "-" : "", v ? "NaN" : "0.75");
            put(c.dst, e, dt, q ? -NAN : NAN);
            if (v) put(c.dy, e, dt, NAN);
            CHECK(isnan(get(c.dst, e, dt)));
            CHECK_ST(bn_run(&c, isa, 0), NBWD_OK);
            put(c.dy, e, dt, 0.75f);
            CHECK(bn_out_same(&c, &ref));
        }
    /* the mask matters: dst[e] > 0 lets dy[e] = 0.75 through, channel ch changes */
    put(c.dst, e, dt, 0.5f);
    snprintf(g_ctx, sizeof g_ctx, "%s dst[e] = 0.5 clean", what);
    CHECK_ST(bn_run(&c, isa, 0), NBWD_OK);
    CHECK(!same_bits(c.db + ch, ref.db + ch, 4)); /* sum dy: 0.75 more */
    if (add) CHECK(get(c.dsa, e, dt) == get(c.dy, e, dt));
    bn_out_save(&c, &ref);
    /* dst > 0 at e: a non-finite dy reaches channel ch alone */
    for (v = 0; v < 3; ++v) {
        int others_ok = 1, params_ok = 1, all_nan = 1, dsa_ok = 1;
        snprintf(g_ctx, sizeof g_ctx, "%s dst[e] = 0.5, dy[e] = %g", what, (double)vals[v]);
        put(c.dy, e, dt, vals[v]);
        CHECK_ST(bn_run(&c, isa, 0), NBWD_OK);
        put(c.dy, e, dt, 0.75f);
        for (i = 0; i < c.total; ++i) {
            if (bn_channel(&c, i) != ch) {
                if (!same_bits((char *)c.dx + i * (int64_t)es, ref.dx + i * (int64_t)es, es)) others_ok = 0;
            } else if (v == 0 && !isnan(get(c.dx, i, dt))) {
                all_nan = 0;
            }
            if (add && i != e && !same_bits((char *)c.dsa + i * (int64_t)es, ref.dsa + i * (int64_t)es, es)) dsa_ok = 0;
        }
        CHECK(others_ok);
        for (k = 0; k < c.C; ++k)
            if (k != ch && (!same_bits(&c.dg[k], &ref.dg[k], 4) || !same_bits(&c.db[k], &ref.db[k], 4))) params_ok = 0;
        CHECK(params_ok);
        CHECK(!isfinite(c.dg[ch]) && !isfinite(c.db[ch]));
        if (v == 0) CHECK(all_nan && isnan(c.dg[ch]) && isnan(c.db[ch]));
        if (add) {
            CHECK(dsa_ok);
            CHECK(v == 0 ? isnan(get(c.dsa, e, dt)) : get(c.dsa, e, dt) == vals[v]);
        }
    }
    free(ref.dx); free(ref.dsa); free(ref.dg); free(ref.db);
    bn_free(&c);
}

/* GroupNorm / InstanceNorm: a set is one sample's group of C / groups
   channels. A non-finite value in x or dy (element e of set (n0, g0)), in
   mean or variance (set (n0, g0)) changes only that set's diff_src and the
   diff_gamma/diff_beta entries of the channels it feeds (x, dy: e's
   channel; mean, variance: the group's channels, diff_gamma only); one in
   gamma[c0] every set of c0's group (all samples: g = dy * gamma) and no
   parameter gradient. Every other output bit equals the clean run's. */
typedef struct gn_case {
    int rank;
    int64_t dims[5];
    nbwd_layout layout;
    nbwd_dtype dt;
    nbwd_stats_form form; /* MEAN_VARIANCE or MEAN_RSTD (var holds rstd) */
    int64_t N, C, G, Cg, S, total;
    void *x, *dy, *dx;
    float *mean, *var, *gamma, *dg, *db;
} gn_case;

static void gn_alloc(gn_case *c, int rank, const int64_t *dims, nbwd_layout layout, int64_t groups, nbwd_dtype dt,
                     uint64_t seed) {
    int64_t i;
    int d;
    c->rank = rank; c->layout = layout; c->dt = dt; c->form = NBWD_STATS_MEAN_VARIANCE;
    c->total = 1;
    for (d = 0; d < rank; ++d) { c->dims[d] = dims[d]; c->total *= dims[d]; }
    c->N = dims[0];
    c->C = layout == NBWD_NXC ? dims[rank - 1] : dims[1];
    c->G = groups;
    c->Cg = c->C / groups;
    c->S = c->total / (c->N * c->C);
    c->x = xmalloc((size_t)c->total * esz(dt)); c->dy = xmalloc((size_t)c->total * esz(dt));
    c->dx = xmalloc((size_t)c->total * esz(dt));
    c->mean = (float *)xmalloc((size_t)(c->N * groups) * 4); c->var = (float *)xmalloc((size_t)(c->N * groups) * 4);
    c->gamma = (float *)xmalloc((size_t)c->C * 4);
    c->dg = (float *)xmalloc((size_t)c->C * 4); c->db = (float *)xmalloc((size_t)c->C * 4);
    for (i = 0; i < c->total; ++i) { put(c->x, i, dt, rng_f(&seed, -2, 2)); put(c->dy, i, dt, rng_f(&seed, -1, 1)); }
    for (i = 0; i < c->N * groups; ++i) { c->mean[i] = rng_f(&seed, -0.5f, 0.5f); c->var[i] = rng_f(&seed, 0.5f, 2); }
    for (i = 0; i < c->C; ++i) c->gamma[i] = rng_f(&seed, 0.5f, 1.5f);
}
static void gn_free(gn_case *c) {
    free(c->x); free(c->dy); free(c->dx); free(c->mean); free(c->var); free(c->gamma); free(c->dg); free(c->db);
}
/* Dense element index of (n, ch, s), and the set of element i. */
static int64_t gn_index(const gn_case *c, int64_t n, int64_t ch, int64_t s) {
    return c->layout == NBWD_NXC ? (n * c->S + s) * c->C + ch : (n * c->C + ch) * c->S + s;
}
static int64_t gn_set_of(const gn_case *c, int64_t i) {
    int64_t n = i / (c->S * c->C), ch = c->layout == NBWD_NXC ? i % c->C : (i / c->S) % c->C;
    return n * c->G + ch / c->Cg;
}
static nbwd_status gn_run(const gn_case *c, int isa, int num_threads) {
    nbwd_group_norm_bwd_desc d;
    nbwd_group_norm_bwd_args a;
    nbwd_group_norm_bwd_desc_init(&d, c->rank, c->dims, c->layout, c->G, 1e-5f);
    d.data_dtype = c->dt;
    d.stats_form = c->form;
    d.isa = (nbwd_isa)isa;
    d.num_threads = num_threads;
    memset(&a, 0, sizeof a);
    a.src = c->x; a.diff_dst = c->dy; a.mean = c->mean; a.gamma = c->gamma;
    if (c->form == NBWD_STATS_MEAN_RSTD) a.rstd = c->var;
    else a.variance = c->var;
    a.diff_src = c->dx; a.diff_gamma = c->dg; a.diff_beta = c->db;
    return nbwd_group_norm_bwd(&d, &a, NULL, 0);
}

static void nan_group_norm(int isa, nbwd_dtype dt, int rank, const int64_t *dims, nbwd_layout layout, int64_t groups,
                           nbwd_stats_form form) {
    static const float vals[3] = {NAN, INFINITY, -INFINITY};
    gn_case c;
    int64_t n0, g0, c0, e, set0, i, k;
    size_t bytes;
    unsigned char *dx0;
    float *dg0, *db0;
    int at, v;
    char what[160];
    gn_alloc(&c, rank, dims, layout, groups, dt, 313 + (uint64_t)dims[1] * 17 + (uint64_t)groups);
    c.form = form;
    if (form == NBWD_STATS_MEAN_RSTD)
        for (i = 0; i < c.N * c.G; ++i) c.var[i] = 1.0f / sqrtf(c.var[i] + 1e-5f);
    n0 = c.N - 1;
    g0 = c.G / 2;
    c0 = g0 * c.Cg + c.Cg - 1; /* the group's last channel, its last element: SIMD tails */
    e = gn_index(&c, n0, c0, c.S - 1);
    set0 = n0 * c.G + g0;
    bytes = (size_t)c.total * esz(dt);
    dx0 = (unsigned char *)xmalloc(bytes);
    dg0 = (float *)xmalloc((size_t)c.C * 4); db0 = (float *)xmalloc((size_t)c.C * 4);
    snprintf(what, sizeof what, "nan GN %s %s %s rank %d C %lld groups %lld%s", nbwd_isa_name((nbwd_isa)isa),
             dt_name(dt), layout == NBWD_NXC ? "nxc" : "ncx", rank, (long long)c.C, (long long)groups,
             form == NBWD_STATS_MEAN_RSTD ? " rstd" : "");
    snprintf(g_ctx, sizeof g_ctx, "%s clean", what);
    CHECK_ST(gn_run(&c, isa, 0), NBWD_OK);
    memcpy(dx0, c.dx, bytes); memcpy(dg0, c.dg, (size_t)c.C * 4); memcpy(db0, c.db, (size_t)c.C * 4);
    for (at = AT_X; at <= AT_GAMMA; ++at) {
        if (at == AT_RES) continue; /* LayerNorm's and RMSNorm's */
        for (v = 0; v < 3; ++v) {
            float saved;
            int others_ok = 1, params_ok = 1, nonfinite = 1, all_nan = 1;
            void *target = at == AT_X ? c.x : at == AT_DY ? c.dy : at == AT_MEAN ? (void *)c.mean
                           : at == AT_VAR ? (void *)c.var : (void *)c.gamma;
            nbwd_dtype tdt = at <= AT_DY ? dt : NBWD_F32;
            int64_t idx = at <= AT_DY ? e : at == AT_GAMMA ? c0 : set0;
            snprintf(g_ctx, sizeof g_ctx, "%s %s[%s] = %g", what, at_name[at],
                     at == AT_GAMMA ? "channel c0" : "set (N-1, G/2)", (double)vals[v]);
            saved = get(target, idx, tdt);
            put(target, idx, tdt, vals[v]);
            CHECK_ST(gn_run(&c, isa, 0), NBWD_OK);
            put(target, idx, tdt, saved);
            for (i = 0; i < c.total; ++i) {
                int64_t set = gn_set_of(&c, i);
                int hit = at == AT_GAMMA ? set % c.G == g0 : set == set0;
                if (!hit) {
                    if (!same_bits((char *)c.dx + i * (int64_t)esz(dt), dx0 + i * (int64_t)esz(dt), esz(dt)))
                        others_ok = 0;
                } else if (v == 0 && !isnan(get(c.dx, i, dt))) {
                    all_nan = 0;
                }
            }
            CHECK(others_ok);
            for (k = 0; k < c.C; ++k) {
                /* diff_gamma: x, dy feed e's channel, mean, variance the group's; diff_beta: dy alone */
                int g_aff = (at <= AT_DY && k == c0) || ((at == AT_MEAN || at == AT_VAR) && k / c.Cg == g0);
                int b_aff = at == AT_DY && k == c0;
                if (!g_aff && !same_bits(&c.dg[k], &dg0[k], 4)) params_ok = 0;
                if (!b_aff && !same_bits(&c.db[k], &db0[k], 4)) params_ok = 0;
                /* never silently dropped (variance +inf / rstd 0: xhat = 0, finite) */
                if (g_aff && !(at == AT_VAR && form == NBWD_STATS_MEAN_VARIANCE && v == 1) && isfinite(c.dg[k]))
                    nonfinite = 0;
                if (v == 0 && g_aff && !isnan(c.dg[k])) nonfinite = 0;
                if (b_aff && isfinite(c.db[k])) nonfinite = 0;
            }
            CHECK(params_ok);
            CHECK(nonfinite);
            if (v == 0) CHECK(all_nan); /* a NaN poisons its whole set (gamma: every sample's set of its group) */
        }
    }
    free(dx0); free(dg0); free(db0);
    gn_free(&c);
}

/* Range extremes, every value finite (f32): diff_dst scaled to 1e30,
   1e-30 or subnormal; a gamma of 1e30, 1e-30, 1e-36, 1.5e-38 or 2e-38
   (tiny but normal: the quotients mean(g) / gamma are large; with rstd 10
   or 1e-5), 0 or subnormal in one channel; variance 1e-30 (rstd 1e15 with
   a small epsilon, x and mean at 1e-15); x near 1e4 with its mean. The outputs are finite and
   agree with a float64 recomputation within the fp32 error of their
   terms' sizes (as the fuzz targets check). */
#define GN_EXTREMES 13
static void extreme_group_norm(int isa, nbwd_layout layout, int64_t groups, int which) {
    static const char *const names[] = {"dy * 1e30",        "dy * 1e-30",      "dy subnormal (1e-41)",
                                        "gamma[c0] = 1e30", "gamma[c0] = 1e-30", "gamma[c0] = 1e-36",
                                        "gamma[c0] = 1.5e-38", "gamma[c0] = 0", "gamma[c0] = 1e-40 (subnormal)",
                                        "x, mean 1e-15, variance 1e-30, epsilon 1e-30", "x = 1e4 + small, mean 1e4",
                                        "gamma[c0] = 2e-38, variance 0.01 (rstd 10)",
                                        "gamma[c0] = 2e-38, variance 1e10 (rstd 1e-5)"};
    static const int64_t dims4[4] = {3, 6, 5, 7};
    gn_case c;
    int64_t dims[4], n, ch, s, i;
    int finite = 1, close = 1;
    double worst = 0.0;
    nbwd_group_norm_bwd_desc d;
    nbwd_group_norm_bwd_args a;
    float eps = which == 9 ? 1e-30f : 1e-5f;
    double *sg, *sgx, *ag, *agx, *rs;
    memcpy(dims, dims4, sizeof dims);
    if (layout == NBWD_NXC) { dims[1] = dims4[2]; dims[2] = dims4[3]; dims[3] = dims4[1]; }
    gn_alloc(&c, 4, dims, layout, groups, NBWD_F32, 777 + (uint64_t)which);
    for (i = 0; i < c.total; ++i) {
        float y = get(c.dy, i, NBWD_F32), xv = get(c.x, i, NBWD_F32);
        if (which == 0) put(c.dy, i, NBWD_F32, y * 1e30f);
        if (which == 1) put(c.dy, i, NBWD_F32, y * 1e-30f);
        if (which == 2) put(c.dy, i, NBWD_F32, y * 1e-41f);
        if (which == 9) put(c.x, i, NBWD_F32, xv * 1e-15f);
        if (which == 10) put(c.x, i, NBWD_F32, 1e4f + xv * 1e-2f);
    }
    for (i = 0; i < c.N * c.G; ++i) {
        if (which == 9) c.var[i] = 1e-30f * (1.0f + (float)(i % 3)), c.mean[i] *= 1e-15f;
        if (which == 10) c.mean[i] = 1e4f, c.var[i] = 3e-5f;
        if (which == 11) c.var[i] = 0.01f;
        if (which == 12) c.var[i] = 1e10f;
    }
    {
        static const float gv[13] = {0, 0, 0, 1e30f, 1e-30f, 1e-36f, 1.5e-38f, 0.0f, 1e-40f, 0, 0, 2e-38f, 2e-38f};
        if ((which >= 3 && which <= 8) || which >= 11) c.gamma[c.Cg - 1] = gv[which]; /* group 0's last channel */
    }
    nbwd_group_norm_bwd_desc_init(&d, 4, c.dims, layout, groups, eps);
    d.isa = (nbwd_isa)isa;
    memset(&a, 0, sizeof a);
    a.src = c.x; a.diff_dst = c.dy; a.mean = c.mean; a.variance = c.var; a.gamma = c.gamma;
    a.diff_src = c.dx; a.diff_gamma = c.dg; a.diff_beta = c.db;
    snprintf(g_ctx, sizeof g_ctx, "extreme GN %s %s groups %lld: %s", nbwd_isa_name((nbwd_isa)isa),
             layout == NBWD_NXC ? "nxc" : "ncx", (long long)groups, names[which]);
    CHECK_ST(nbwd_group_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
    sg = (double *)calloc((size_t)(c.N * c.G), sizeof(double)); sgx = (double *)calloc((size_t)(c.N * c.G), sizeof(double));
    ag = (double *)calloc((size_t)(c.N * c.G), sizeof(double)); agx = (double *)calloc((size_t)(c.N * c.G), sizeof(double));
    rs = (double *)calloc((size_t)(c.N * c.G), sizeof(double));
    if (!sg || !sgx || !ag || !agx || !rs) { fprintf(stderr, "out of memory\n"); exit(2); }
    for (i = 0; i < c.N * c.G; ++i) rs[i] = (double)(float)(1.0 / sqrt((double)c.var[i] + (double)eps));
    for (n = 0; n < c.N; ++n)
        for (ch = 0; ch < c.C; ++ch)
            for (s = 0; s < c.S; ++s) {
                int64_t at = gn_index(&c, n, ch, s), set = n * c.G + ch / c.Cg;
                double xh = ((double)get(c.x, at, NBWD_F32) - c.mean[set]) * rs[set];
                double gg = (double)get(c.dy, at, NBWD_F32) * c.gamma[ch];
                sg[set] += gg; sgx[set] += gg * xh; ag[set] += fabs(gg); agx[set] += fabs(gg * xh);
            }
    for (n = 0; n < c.N; ++n)
        for (ch = 0; ch < c.C; ++ch)
            for (s = 0; s < c.S; ++s) {
                int64_t at = gn_index(&c, n, ch, s), set = n * c.G + ch / c.Cg, K = c.Cg * c.S;
                double xh = ((double)get(c.x, at, NBWD_F32) - c.mean[set]) * rs[set];
                double gg = (double)get(c.dy, at, NBWD_F32) * c.gamma[ch];
                double want = rs[set] * (gg - sg[set] / K - xh * sgx[set] / K), got = get(c.dx, at, NBWD_F32);
                double s1 = rs[set] * (fabs(gg) + fabs(sg[set] / K) + fabs(xh * sgx[set] / K));
                double s2 = rs[set] * (ag[set] / K + fabs(xh) * agx[set] / K);
                double tol = ldexp(1.0, -24) * (32 * s1 + 2.0 * (K + 8) * s2) + ldexp(1.0, -144);
                if (fabs(want) - tol > 3.4028234663852886e38) continue; /* beyond fp32: not a test */
                if (!isfinite(got)) finite = 0;
                else if (fabs(got - want) > tol) close = 0;
                if (isfinite(got) && tol > 0 && fabs(got - want) / tol > worst) worst = fabs(got - want) / tol;
            }
    for (ch = 0; ch < c.C; ++ch)
        if (!isfinite(c.dg[ch]) || !isfinite(c.db[ch])) finite = 0;
    if (!CHECK(finite)) printf("       diff_src or a parameter gradient is not finite\n");
    if (!CHECK(close)) printf("       diff_src off by up to %.3g x its tolerance\n", worst);
    if (getenv("GN_EXTREME_VERBOSE")) printf("  %s: worst %.3g x the tolerance\n", g_ctx, worst);
    free(sg); free(sgx); free(ag); free(agx); free(rs);
    gn_free(&c);
}

static void suite_nan(void) {
    static const nbwd_dtype dts[3] = {NBWD_F32, NBWD_BF16, NBWD_F16};
    static const int64_t ln_shapes[][2] = {{20, 37}, {9, 16}, {3, 1}, {17, 67}};
    static const int64_t bn4[4] = {3, 5, 2, 19}, bn4c[4] = {3, 5, 37, 1}, bn2[2] = {11, 21};
    /* GroupNorm [N, spatial..., C] / [N, C, spatial...]: 9 channels; NCX planes of 37 (SIMD tails) */
    static const int64_t gn4x[4] = {3, 5, 2, 9}, gn4c[4] = {3, 9, 37, 1}, gn2[2] = {5, 8};
    int isa, t, s, nshapes = g_quick ? 2 : 4;
    for (isa = 1; isa < NBWD_ISA_COUNT; ++isa) {
        if (!isa_wanted(isa)) continue;
        for (t = 0; t < (g_quick ? 2 : 3); ++t) {
            for (s = 0; s < nshapes; ++s) {
                int variant;
                for (variant = 0; variant < 3; ++variant) {
                    nan_layer_norm(isa, dts[t], ln_shapes[s][0], ln_shapes[s][1], 0, variant);
                    nan_layer_norm(isa, dts[t], ln_shapes[s][0], ln_shapes[s][1], 1, variant);
                }
            }
            nan_batch_norm(isa, dts[t], 4, bn4, NBWD_NXC, 0);
            nan_batch_norm(isa, dts[t], 4, bn4c, NBWD_NCX, 0);
            nan_batch_norm(isa, dts[t], 2, bn2, NBWD_NXC, 0);
            nan_batch_norm(isa, dts[t], 4, bn4, NBWD_NXC, 1);
            nan_batch_norm(isa, dts[t], 4, bn4c, NBWD_NCX, 1);
            nan_batch_norm_relu(isa, dts[t], 4, bn4, NBWD_NXC, 0, NBWD_FUSE_RELU);
            nan_batch_norm_relu(isa, dts[t], 4, bn4c, NBWD_NCX, 0, NBWD_FUSE_ADD_RELU);
            nan_batch_norm_relu(isa, dts[t], 2, bn2, NBWD_NXC, 0, NBWD_FUSE_ADD_RELU);
            nan_batch_norm_relu(isa, dts[t], 4, bn4, NBWD_NXC, 1, NBWD_FUSE_ADD_RELU);
            nan_batch_norm_relu(isa, dts[t], 4, bn4c, NBWD_NCX, 1, NBWD_FUSE_RELU);
            /* GroupNorm: groups of 3 channels, InstanceNorm, one group; rank 2 */
            nan_group_norm(isa, dts[t], 4, gn4x, NBWD_NXC, 3, NBWD_STATS_MEAN_VARIANCE);
            nan_group_norm(isa, dts[t], 4, gn4c, NBWD_NCX, 3, NBWD_STATS_MEAN_VARIANCE);
            nan_group_norm(isa, dts[t], 4, gn4x, NBWD_NXC, 9, NBWD_STATS_MEAN_RSTD);
            nan_group_norm(isa, dts[t], 4, gn4c, NBWD_NCX, 9, NBWD_STATS_MEAN_RSTD);
            nan_group_norm(isa, dts[t], 4, gn4c, NBWD_NCX, 1, NBWD_STATS_MEAN_VARIANCE);
            nan_group_norm(isa, dts[t], 2, gn2, NBWD_NXC, 2, NBWD_STATS_MEAN_VARIANCE);
            nan_group_norm(isa, dts[t], 2, gn2, NBWD_NCX, 4, NBWD_STATS_MEAN_RSTD);
        }
        for (t = 0; t < GN_EXTREMES; ++t) {
            extreme_group_norm(isa, NBWD_NCX, 2, t);
            extreme_group_norm(isa, NBWD_NXC, 3, t);
        }
    }
}

/* ================================================================ overflow */
/* Runs fn(arg) in a forked child: a crash (signal) is a failure, not the end
   of the run; the child's exit status carries its check failures. */
static void isolated(const char *name, void (*fn)(void *), void *arg) {
    pid_t pid;
    int status = 0;
    fflush(stdout);
    pid = fork();
    if (pid < 0) { fn(arg); return; } /* no fork: run inline */
    if (pid == 0) {
        g_fail = 0;
        fn(arg);
        fflush(stdout);
        _exit(g_fail ? 1 : 0);
    }
    if (waitpid(pid, &status, 0) < 0) status = -1;
    snprintf(g_ctx, sizeof g_ctx, "overflow: %s", name);
    if (!CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        if (WIFSIGNALED(status)) printf("       the child died of signal %d (crash)\n", WTERMSIG(status));
        else printf("       the child reported failed checks\n");
    }
}

#define CANARY 0x5Au
typedef struct ovf_case {
    const char *name;
    int op; /* 0 LayerNorm, 1 BatchNorm NXC, 2 BatchNorm NCX; LN axis: 0 when dims[1] == 0 */
    int rank;
    int64_t dims[4];
    int64_t strides[4]; /* strides[0] == 0 && strides[1] == 0: dense */
    int stride_tensor;  /* 0 src, 1 diff_dst, 2 diff_src, 3 mean (LN) */
    nbwd_status want;
} ovf_case;

/* Also zero-size shapes that must be accepted with dense strides. */
static void ovf_run(void *arg) {
    const ovf_case *oc = (const ovf_case *)arg;
    unsigned char buf[10][256], ref[256];
    size_t ws = 12345;
    int i, untouched = 1;
    nbwd_status s1, s2;
    const int64_t *st = oc->strides[0] == 0 && oc->strides[1] == 0 ? NULL : oc->strides;
    memset(buf, CANARY, sizeof buf);
    memset(ref, CANARY, sizeof ref);
    snprintf(g_ctx, sizeof g_ctx, "overflow: %s", oc->name);
    if (oc->op == 0) {
        nbwd_layer_norm_bwd_desc d;
        nbwd_layer_norm_bwd_args a;
        nbwd_layer_norm_bwd_desc_init(&d, oc->rank, oc->dims);
        if (oc->rank >= 2 && oc->dims[1] == 0) d.begin_norm_axis = 0;
        if (oc->stride_tensor == 0) d.src_strides = st;
        if (oc->stride_tensor == 1) d.diff_dst_strides = st;
        if (oc->stride_tensor == 2) d.diff_src_strides = st;
        if (oc->stride_tensor == 3) d.mean_strides = st;
        memset(&a, 0, sizeof a);
        a.src = buf[0]; a.diff_dst = buf[1]; a.mean = buf[2]; a.variance = buf[3]; a.gamma = buf[4];
        a.diff_src = buf[5]; a.diff_gamma = buf[6]; a.diff_beta = buf[7];
        s1 = nbwd_layer_norm_bwd_workspace_size(&d, &ws);
        s2 = nbwd_layer_norm_bwd(&d, &a, buf[8], sizeof buf[8]);
    } else {
        nbwd_batch_norm_bwd_desc d;
        nbwd_batch_norm_bwd_args a;
        nbwd_batch_norm_bwd_desc_init(&d, oc->rank, oc->dims, oc->op == 1 ? NBWD_NXC : NBWD_NCX, 1e-5f);
        if (oc->stride_tensor == 0) d.src_strides = st;
        if (oc->stride_tensor == 1) d.diff_dst_strides = st;
        if (oc->stride_tensor == 2) d.diff_src_strides = st;
        memset(&a, 0, sizeof a);
        a.src = buf[0]; a.diff_dst = buf[1]; a.mean = buf[2]; a.variance = buf[3]; a.gamma = buf[4];
        a.diff_src = buf[5]; a.diff_gamma = buf[6]; a.diff_beta = buf[7];
        s1 = nbwd_batch_norm_bwd_workspace_size(&d, &ws);
        s2 = nbwd_batch_norm_bwd(&d, &a, buf[8], sizeof buf[8]);
    }
    CHECK_ST(s1, oc->want);
    CHECK(s1 != NBWD_OK || ws != 12345); /* an error leaves *bytes alone; success sets it */
    CHECK(s1 == NBWD_OK || ws == 12345);
    CHECK_ST(s2, oc->want);
    if (oc->want != NBWD_OK) {
        for (i = 0; i < 10; ++i)
            if (memcmp(buf[i], ref, sizeof ref) != 0) untouched = 0;
        CHECK(untouched);
    }
}

/* Accepted descriptor, but a workspace no allocator can provide: 16 x 2^38
   f32 elements need 2^41 bytes of partial sums. The tensors are address
   ranges only (never dereferenced when the status is right; a wrong status
   that goes on to touch them crashes the child, which is reported). */
static void ovf_huge_workspace(void *arg) {
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    unsigned char small_ws[64];
    int64_t dims[2] = {16, (int64_t)1 << 38};
    size_t ws = 0;
    uintptr_t base = (uintptr_t)1 << 46, step = (uintptr_t)1 << 45;
    (void)arg;
    nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    CHECK_ST(nbwd_layer_norm_bwd_workspace_size(&d, &ws), NBWD_OK);
    CHECK(ws > ((size_t)1 << 40));
    memset(&a, 0, sizeof a);
    a.src = (const void *)(base + 0 * step); a.diff_dst = (const void *)(base + 1 * step);
    a.mean = (const void *)(base + 2 * step); a.variance = (const void *)(base + 3 * step);
    a.gamma = (const void *)(base + 4 * step); a.diff_src = (void *)(base + 5 * step);
    a.diff_gamma = (void *)(base + 6 * step); a.diff_beta = (void *)(base + 7 * step);
    /* NULL workspace: the library's own allocation fails (ASan: needs
       allocator_may_return_null=1). */
    CHECK_ST(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_OUT_OF_MEMORY);
    CHECK_ST(nbwd_layer_norm_bwd(&d, &a, small_ws, sizeof small_ws), NBWD_ERR_INSUFFICIENT_WORKSPACE);
}

/* GroupNorm: hostile shapes, groups, strides, aliases and workspaces; each
   refused with its status and no byte of any tensor written (or, where the
   manual allows it, accepted). All tensors live in one canary-filled
   buffer, at 256-byte slots (dx_at: diff_src's slot, for partial overlaps). */
typedef struct gn_ovf_case {
    const char *name;
    nbwd_layout layout;
    int rank;
    int64_t dims[4];
    int64_t groups;
    int stride_tensor;    /* 0 src, 1 diff_dst, 2 diff_src, 3 mean, 4 variance, 5 gamma, 6 diff_gamma, 7 diff_beta */
    int64_t strides[4];   /* strides[0] == 0 && strides[1] == 0: dense (NULL) */
    int dx_at;            /* diff_src's slot (5: its own; 1: exactly diff_dst; other: an element off) */
    int64_t dx_shift;     /* elements added to diff_src's slot */
    unsigned flags;
    float eps;
    nbwd_status want;
    int args_only;        /* refused by the call's args checks alone: the size query accepts the desc */
} gn_ovf_case;

static void gn_ovf_run(void *arg) {
    const gn_ovf_case *oc = (const gn_ovf_case *)arg;
    static unsigned char buf[12 * 256], ref[12 * 256];
    size_t ws = 12345;
    nbwd_status s1, s2;
    nbwd_group_norm_bwd_desc d;
    nbwd_group_norm_bwd_args a;
    const int64_t *st = oc->strides[0] == 0 && oc->strides[1] == 0 ? NULL : oc->strides;
    memset(buf, CANARY, sizeof buf);
    memset(ref, CANARY, sizeof ref);
    snprintf(g_ctx, sizeof g_ctx, "overflow: %s", oc->name);
    nbwd_group_norm_bwd_desc_init(&d, oc->rank, oc->dims, oc->layout, oc->groups, oc->eps);
    d.flags = oc->flags;
    if (oc->stride_tensor == 0) d.src_strides = st;
    if (oc->stride_tensor == 1) d.diff_dst_strides = st;
    if (oc->stride_tensor == 2) d.diff_src_strides = st;
    if (oc->stride_tensor == 3) d.mean_strides = st;
    if (oc->stride_tensor == 4) d.var_strides = st;
    if (oc->stride_tensor == 5) d.gamma_strides = st;
    if (oc->stride_tensor == 6) d.diff_gamma_strides = st;
    if (oc->stride_tensor == 7) d.diff_beta_strides = st;
    if (oc->dx_at == 1) d.diff_src_strides = d.diff_dst_strides;
    memset(&a, 0, sizeof a);
    a.src = buf; a.diff_dst = buf + 256; a.mean = buf + 2 * 256; a.variance = buf + 3 * 256;
    a.gamma = buf + 4 * 256; a.diff_src = buf + oc->dx_at * 256 + oc->dx_shift * 4;
    a.diff_gamma = buf + 6 * 256; a.diff_beta = buf + 7 * 256;
    s1 = nbwd_group_norm_bwd_workspace_size(&d, &ws);
    s2 = nbwd_group_norm_bwd(&d, &a, buf + 8 * 256, 4 * 256);
    CHECK_ST(s1, oc->args_only ? NBWD_OK : oc->want);
    CHECK(s1 != NBWD_OK || ws != 12345);
    CHECK(s1 == NBWD_OK || ws == 12345);
    CHECK_ST(s2, oc->want);
    if (oc->want != NBWD_OK) CHECK(memcmp(buf, ref, sizeof buf) == 0);
}

/* An accepted GroupNorm whose workspace no allocator can provide: NXC
   [2^19, 1, 2^19], 2^38 (n, c) coefficients. The tensors are address
   ranges only (never dereferenced when the status is right). */
static void gn_ovf_huge_workspace(void *arg) {
    nbwd_group_norm_bwd_desc d;
    nbwd_group_norm_bwd_args a;
    unsigned char small_ws[64];
    int64_t dims[3] = {(int64_t)1 << 19, 1, (int64_t)1 << 19};
    size_t ws = 0;
    uintptr_t base = (uintptr_t)1 << 46, step = (uintptr_t)1 << 45;
    (void)arg;
    nbwd_group_norm_bwd_desc_init(&d, 3, dims, NBWD_NXC, 1, 1e-5f);
    CHECK_ST(nbwd_group_norm_bwd_workspace_size(&d, &ws), NBWD_OK);
    CHECK(ws > ((size_t)1 << 40));
    memset(&a, 0, sizeof a);
    a.src = (const void *)(base + 0 * step); a.diff_dst = (const void *)(base + 1 * step);
    a.mean = (const void *)(base + 2 * step); a.variance = (const void *)(base + 3 * step);
    a.gamma = (const void *)(base + 4 * step); a.diff_src = (void *)(base + 5 * step);
    a.diff_gamma = (void *)(base + 6 * step); a.diff_beta = (void *)(base + 7 * step);
    CHECK_ST(nbwd_group_norm_bwd(&d, &a, NULL, 0), NBWD_ERR_OUT_OF_MEMORY);
    CHECK_ST(nbwd_group_norm_bwd(&d, &a, small_ws, sizeof small_ws), NBWD_ERR_INSUFFICIENT_WORKSPACE);
}

static void suite_overflow_group_norm(void) {
    const int64_t B32 = (int64_t)1 << 32, B61 = (int64_t)1 << 61, B62 = (int64_t)1 << 62, MAXE = INT64_MAX / 16;
    const nbwd_layout X = NBWD_NXC, P = NBWD_NCX;
    const nbwd_status SHAPE = NBWD_ERR_BAD_SHAPE, PARAM = NBWD_ERR_BAD_PARAM, STR = NBWD_ERR_BAD_STRIDES;
    const gn_ovf_case cases[] = {
        {"GN nxc 2^32 x 2^32 x 4", X, 3, {B32, B32, 4}, 1, 0, {0, 0}, 5, 0, 0, 1e-5f, SHAPE, 0},
        {"GN ncx 4 x 2^32 x 2^32", P, 3, {4, B32, B32}, 1, 0, {0, 0}, 5, 0, 0, 1e-5f, SHAPE, 0},
        {"GN ncx 0 x INT64_MAX x 3 (groups 1)", P, 3, {0, INT64_MAX, 3}, 1, 0, {0, 0}, 5, 0, 0, 1e-5f, SHAPE, 0},
        {"GN nxc 0 x 5 x 2^62", X, 3, {0, 5, B62}, 1, 0, {0, 0}, 5, 0, 0, 1e-5f, SHAPE, 0},
        {"GN ncx -1 x 4 x 3", P, 3, {-1, 4, 3}, 2, 0, {0, 0}, 5, 0, 0, 1e-5f, SHAPE, 0},
        {"GN rank 1", P, 1, {6}, 1, 0, {0, 0}, 5, 0, 0, 1e-5f, PARAM, 0},
        {"GN layout 7", (nbwd_layout)7, 3, {2, 4, 3}, 2, 0, {0, 0}, 5, 0, 0, 1e-5f, PARAM, 0},
        {"GN groups 0", P, 3, {2, 6, 3}, 0, 0, {0, 0}, 5, 0, 0, 1e-5f, PARAM, 0},
        {"GN groups -3", P, 3, {2, 6, 3}, -3, 0, {0, 0}, 5, 0, 0, 1e-5f, PARAM, 0},
        {"GN groups INT64_MIN", X, 3, {2, 3, 6}, INT64_MIN, 0, {0, 0}, 5, 0, 0, 1e-5f, PARAM, 0},
        {"GN groups INT64_MAX (no divisor of C)", X, 3, {2, 3, 6}, INT64_MAX, 0, {0, 0}, 5, 0, 0, 1e-5f, PARAM, 0},
        {"GN groups 4 with C = 6", P, 3, {2, 6, 3}, 4, 0, {0, 0}, 5, 0, 0, 1e-5f, PARAM, 0},
        {"GN groups 12 with C = 6", X, 3, {2, 3, 6}, 12, 0, {0, 0}, 5, 0, 0, 1e-5f, PARAM, 0},
        {"GN epsilon 0 (MEAN_VARIANCE)", P, 3, {2, 6, 3}, 2, 0, {0, 0}, 5, 0, 0, 0.0f, PARAM, 0},
        {"GN epsilon NaN", P, 3, {2, 6, 3}, 2, 0, {0, 0}, 5, 0, 0, NAN, PARAM, 0},
        {"GN flags NBWD_USE_GLOBAL_STATS (BatchNorm's)", P, 3, {2, 6, 3}, 2, 0, {0, 0}, 5, 0,
         NBWD_USE_GLOBAL_STATS, 1e-5f, PARAM, 0},
        {"GN flags NBWD_FUSE_RELU (BatchNorm's)", X, 3, {2, 3, 6}, 2, 0, {0, 0}, 5, 0, NBWD_FUSE_RELU, 1e-5f, PARAM, 0},
        {"GN ncx 2 x 3 x 4, src stride 2^62", P, 3, {2, 3, 4}, 3, 0, {B62, 4, 1}, 5, 0, 0, 1e-5f, STR, 0},
        {"GN nxc 2 x 3 x 4, diff_src stride -2^62", X, 3, {2, 3, 4}, 2, 2, {-B62, 4, 1}, 5, 0, 0, 1e-5f, STR, 0},
        {"GN nxc 2 x 3 x 4, diff_dst stride INT64_MIN", X, 3, {2, 3, 4}, 2, 1, {INT64_MIN, 4, 1}, 5, 0, 0, 1e-5f, STR,
         0},
        {"GN ncx 3 x 4 x 2, src stride MAXE (extent overflows)", P, 3, {3, 4, 2}, 2, 0, {MAXE, 2, 1}, 5, 0, 0, 1e-5f,
         STR, 0},
        {"GN ncx 2 x 3 x 4, spatial not dense (stride 2)", P, 3, {2, 3, 4}, 3, 0, {24, 8, 2}, 5, 0, 0, 1e-5f, STR, 0},
        {"GN nxc 2 x 4 x 3, channels not dense (stride 2)", X, 3, {2, 4, 3}, 3, 2, {24, 6, 2}, 5, 0, 0, 1e-5f, STR, 0},
        {"GN ncx 2 x 3 x 4, diff_src elements share addresses", P, 3, {2, 3, 4}, 3, 2, {4, 4, 1}, 5, 0, 0, 1e-5f, STR,
         1},
        {"GN ncx 2 x 4, diff_src stride 0 (rank 2, any strides but no overlap)", P, 2, {2, 4}, 2, 2, {4, 0}, 5, 0, 0,
         1e-5f, STR, 1},
        {"GN ncx 2 x 6 x 3, mean stride INT64_MAX", P, 3, {2, 6, 3}, 2, 3, {INT64_MAX, 1}, 5, 0, 0, 1e-5f, STR, 0},
        {"GN ncx 2 x 6 x 3, variance stride -2^61", P, 3, {2, 6, 3}, 2, 4, {2, -B61}, 5, 0, 0, 1e-5f, STR, 0},
        {"GN nxc 2 x 3 x 6, gamma stride INT64_MIN", X, 3, {2, 3, 6}, 3, 5, {INT64_MIN, 1}, 5, 0, 0, 1e-5f, STR, 0},
        {"GN nxc 2 x 3 x 6, diff_gamma stride 0 (elements share an address)", X, 3, {2, 3, 6}, 3, 6, {0, 1}, 5, 0, 0,
         1e-5f, STR, 0},
        {"GN ncx 2 x 6 x 3, diff_beta stride 2^61", P, 3, {2, 6, 3}, 3, 7, {B61, 1}, 5, 0, 0, 1e-5f, STR, 0},
        {"GN ncx 2 x 4 x 3, diff_src one element into diff_dst", P, 3, {2, 4, 3}, 2, 0, {0, 0}, 1, 1, 0, 1e-5f,
         NBWD_ERR_BAD_ALIAS, 1},
        {"GN nxc 2 x 3 x 4, diff_src overlapping mean", X, 3, {2, 3, 4}, 2, 0, {0, 0}, 2, 0, 0, 1e-5f,
         NBWD_ERR_BAD_ALIAS, 1},
        {"GN nxc 2 x 3 x 4, diff_src overlapping diff_gamma", X, 3, {2, 3, 4}, 2, 0, {0, 0}, 6, -2, 0, 1e-5f,
         NBWD_ERR_BAD_ALIAS, 1},
        {"GN ncx 2 x 0 x 3 (C = 0: any groups)", P, 3, {2, 0, 3}, 5, 0, {0, 0}, 5, 0, 0, 1e-5f, NBWD_OK, 0},
        {"GN nxc 0 x 3 x 6 (empty), diff_src stride INT64_MIN (never negated)", X, 3, {0, 3, 6}, 3, 2,
         {INT64_MIN, 6, 1}, 5, 0, 0, 1e-5f, NBWD_OK, 0},
    };
    int i;
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); ++i)
        isolated(cases[i].name, gn_ovf_run, (void *)&cases[i]);
    isolated("GN workspace beyond any allocator", gn_ovf_huge_workspace, NULL);
}

static void suite_overflow(void) {
    const int64_t B32 = (int64_t)1 << 32, B61 = (int64_t)1 << 61, MAXE = INT64_MAX / 16;
    const ovf_case cases[] = {
        {"LN 2^32 x 2^32 (wraps to 0)", 0, 2, {B32, B32}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"LN 2^32 x 2^32 x 2 x 3", 0, 4, {B32, B32, 2, 3}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"LN INT64_MAX x 2", 0, 2, {INT64_MAX, 2}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"LN 2^30 x 2^30 (beyond the 2^59 element limit)", 0, 2, {(int64_t)1 << 30, (int64_t)1 << 30}, {0, 0}, 0,
         NBWD_ERR_BAD_SHAPE},
        {"LN -1 x 4", 0, 2, {-1, 4}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"LN INT64_MIN x 4", 0, 2, {INT64_MIN, 4}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"LN INT64_MAX x 0", 0, 2, {INT64_MAX, 0}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"LN 0 x INT64_MAX", 0, 2, {0, INT64_MAX}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"LN 0 x 2^61", 0, 2, {0, B61}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"LN 3 x 4, src stride 2^62", 0, 2, {3, 4}, {(int64_t)1 << 62, 1}, 0, NBWD_ERR_BAD_STRIDES},
        {"LN 3 x 4, diff_src stride -2^61", 0, 2, {3, 4}, {-B61, 1}, 2, NBWD_ERR_BAD_STRIDES},
        {"LN 3 x 4, diff_dst stride INT64_MIN", 0, 2, {3, 4}, {INT64_MIN, 1}, 1, NBWD_ERR_BAD_STRIDES},
        {"LN 3 x 4, src stride MAXE (extent overflows)", 0, 2, {3, 4}, {MAXE, 1}, 0, NBWD_ERR_BAD_STRIDES},
        {"LN 3 x 5 x 4, mean stride INT64_MAX", 0, 3, {3, 5, 4}, {INT64_MAX, 1, 1}, 3, NBWD_ERR_BAD_STRIDES},
        {"BN nxc 2^32 x 2^32 x 4", 1, 3, {B32, B32, 4}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"BN ncx 4 x 2^32 x 2^32", 2, 3, {4, B32, B32}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"BN nxc 0 x 2^61 (C beyond the limit, N = 0)", 1, 2, {0, B61}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"BN nxc 0 x 5 x 2^62", 1, 3, {0, 5, (int64_t)1 << 62}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"BN ncx 0 x INT64_MAX x 3", 2, 3, {0, INT64_MAX, 3}, {0, 0}, 0, NBWD_ERR_BAD_SHAPE},
        {"BN ncx 2 x 3 x 4, src stride 2^62", 2, 3, {2, 3, 4}, {(int64_t)1 << 62, 4, 1}, 0, NBWD_ERR_BAD_STRIDES},
        {"LN 3 x 0, begin_norm_axis 0, dense (NULL) strides", 0, 2, {3, 0}, {0, 0}, 0, NBWD_OK},
        {"LN 2 x 0 x 5, dense (NULL) strides", 0, 3, {2, 0, 5}, {0, 0}, 0, NBWD_OK},
        {"BN ncx 2 x 3 x 4 x 0, dense (NULL) strides", 2, 4, {2, 3, 4, 0}, {0, 0}, 0, NBWD_OK},
        {"BN nxc 3 x 0 x 4 (empty), diff_src stride INT64_MIN (never negated)", 1, 3, {3, 0, 4}, {INT64_MIN, 4, 1}, 2,
         NBWD_OK},
        {"LN 3 x 2 x 0 (empty), diff_src stride INT64_MIN (never negated)", 0, 3, {3, 2, 0}, {INT64_MIN, 0, 1}, 2,
         NBWD_OK},
        {"BN nxc 2 x 3 x 4, diff_src stride -2^62", 1, 3, {2, 3, 4}, {-((int64_t)1 << 62), 4, 1}, 2,
         NBWD_ERR_BAD_STRIDES},
    };
    int i;
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); ++i) isolated(cases[i].name, ovf_run, (void *)&cases[i]);
    isolated("LN workspace beyond any allocator", ovf_huge_workspace, NULL);
    suite_overflow_group_norm();
}

/* ================================================================= threads */
#define NT 4
typedef struct thr_job {
    int isa, which; /* which: 0..NT-1 picks the problem */
    ln_case ln;
    bn_case bn;
    unsigned char *ln_dx, *bn_dx;
    float ln_dg[67], ln_db[67], bn_dg[19], bn_db[19];
    int ok;
    nbwd_isa first_active;
    int first_supported;
    nbwd_status first_status;
} thr_job;

static pthread_barrier_t g_barrier;

static void job_make(thr_job *j, int which) {
    static const int64_t ln_shapes[NT][2] = {{33, 67}, {64, 16}, {7, 61}, {40, 48}};
    static const int64_t bn_shapes[NT][4] = {{4, 3, 5, 19}, {2, 7, 3, 8}, {3, 2, 2, 17}, {5, 1, 3, 11}};
    static const nbwd_dtype dts[NT] = {NBWD_F32, NBWD_BF16, NBWD_F16, NBWD_F32};
    memset(j, 0, sizeof *j);
    j->which = which;
    ln_alloc(&j->ln, ln_shapes[which][0], ln_shapes[which][1], dts[which], 500 + (uint64_t)which);
    bn_alloc(&j->bn, 4, bn_shapes[which], which & 1 ? NBWD_NCX : NBWD_NXC, dts[which], 700 + (uint64_t)which);
}
static void job_free(thr_job *j) {
    ln_free(&j->ln); bn_free(&j->bn); free(j->ln_dx); free(j->bn_dx);
}
static size_t ln_bytes(const ln_case *c) { return (size_t)(c->rows * c->cols) * esz(c->dt); }
static size_t bn_bytes(const bn_case *c) { return (size_t)c->total * esz(c->dt); }

/* Serial results to compare with. */
static void job_expect(thr_job *j, int isa) {
    j->isa = isa;
    ln_run(&j->ln, isa, 1);
    bn_run(&j->bn, isa, 1);
    free(j->ln_dx); free(j->bn_dx);
    j->ln_dx = (unsigned char *)xmalloc(ln_bytes(&j->ln));
    j->bn_dx = (unsigned char *)xmalloc(bn_bytes(&j->bn));
    memcpy(j->ln_dx, j->ln.dx, ln_bytes(&j->ln));
    memcpy(j->bn_dx, j->bn.dx, bn_bytes(&j->bn));
    memcpy(j->ln_dg, j->ln.dg, (size_t)j->ln.cols * 4); memcpy(j->ln_db, j->ln.db, (size_t)j->ln.cols * 4);
    memcpy(j->bn_dg, j->bn.dg, (size_t)j->bn.C * 4); memcpy(j->bn_db, j->bn.db, (size_t)j->bn.C * 4);
}

static void *thr_first_call(void *arg) {
    thr_job *j = (thr_job *)arg;
    pthread_barrier_wait(&g_barrier);
    /* Every thread's first contact with the library, at the same moment. */
    if (j->which % 2 == 0) {
        j->first_status = ln_run(&j->ln, NBWD_ISA_AUTO, 1);
        j->first_active = nbwd_active_isa();
    } else {
        j->first_active = nbwd_active_isa();
        j->first_status = bn_run(&j->bn, NBWD_ISA_AUTO, 1);
    }
    j->first_supported = nbwd_isa_supported(NBWD_ISA_SCALAR);
    return NULL;
}

static void *thr_compute(void *arg) {
    thr_job *j = (thr_job *)arg;
    int rep, ok = 1;
    pthread_barrier_wait(&g_barrier);
    for (rep = 0; rep < 3; ++rep) {
        memset(j->ln.dx, 0, ln_bytes(&j->ln));
        memset(j->bn.dx, 0, bn_bytes(&j->bn));
        if (ln_run(&j->ln, j->isa, 0) != NBWD_OK || bn_run(&j->bn, j->isa, 0) != NBWD_OK) ok = 0;
        if (memcmp(j->ln.dx, j->ln_dx, ln_bytes(&j->ln)) || memcmp(j->ln.dg, j->ln_dg, (size_t)j->ln.cols * 4) ||
            memcmp(j->ln.db, j->ln_db, (size_t)j->ln.cols * 4))
            ok = 0;
        if (memcmp(j->bn.dx, j->bn_dx, bn_bytes(&j->bn)) || memcmp(j->bn.dg, j->bn_dg, (size_t)j->bn.C * 4) ||
            memcmp(j->bn.db, j->bn_db, (size_t)j->bn.C * 4))
            ok = 0;
    }
    j->ok = ok;
    return NULL;
}

/* Must run before anything else touches the library (the dispatcher's
   one-time detection is what races here). */
static void suite_threads_first_call(void) {
    thr_job jobs[NT];
    pthread_t th[NT];
    int i, started = 0;
    snprintf(g_ctx, sizeof g_ctx, "threads: racing first calls");
    for (i = 0; i < NT; ++i) job_make(&jobs[i], i);
    pthread_barrier_init(&g_barrier, NULL, NT);
    for (i = 0; i < NT; ++i) started += pthread_create(&th[i], NULL, thr_first_call, &jobs[i]) == 0;
    CHECK(started == NT);
    for (i = 0; i < started; ++i) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g_barrier);
    for (i = 0; i < NT; ++i) {
        CHECK_ST(jobs[i].first_status, NBWD_OK);
        CHECK(jobs[i].first_active == nbwd_active_isa());
        CHECK(jobs[i].first_supported == 1);
    }
    for (i = 0; i < NT; ++i) job_free(&jobs[i]);
}

static void suite_threads(void) {
    thr_job jobs[NT];
    pthread_t th[NT];
    int i, isa;
    for (i = 0; i < NT; ++i) job_make(&jobs[i], i);
    for (isa = 1; isa < NBWD_ISA_COUNT; ++isa) {
        int started = 0;
        if (!isa_wanted(isa)) continue;
        snprintf(g_ctx, sizeof g_ctx, "threads: %d concurrent callers, isa %s", NT, nbwd_isa_name((nbwd_isa)isa));
        for (i = 0; i < NT; ++i) job_expect(&jobs[i], isa);
        pthread_barrier_init(&g_barrier, NULL, NT);
        for (i = 0; i < NT; ++i) started += pthread_create(&th[i], NULL, thr_compute, &jobs[i]) == 0;
        CHECK(started == NT);
        for (i = 0; i < started; ++i) pthread_join(th[i], NULL);
        pthread_barrier_destroy(&g_barrier);
        for (i = 0; i < NT; ++i) CHECK(jobs[i].ok);
    }
    for (i = 0; i < NT; ++i) job_free(&jobs[i]);
}

/* ================================================================== nested */
#if defined(_OPENMP)
static int task_count(void) { /* threads of this process, -1 if unknown */
    DIR *dir = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!dir) return -1;
    while ((e = readdir(dir)) != NULL)
        if (e->d_name[0] != '.') ++n;
    closedir(dir);
    return n;
}

/* A sampler thread records the largest thread count while calls run: a
   nested team's threads live only as long as its region. */
static int g_sampling, g_max_tasks, g_base_tasks;
static void *sampler(void *arg) {
    (void)arg;
    while (__atomic_load_n(&g_sampling, __ATOMIC_ACQUIRE)) {
        int n = task_count();
        if (n > g_max_tasks) g_max_tasks = n;
    }
    return NULL;
}
static pthread_t sampler_start(void) {
    pthread_t t;
    g_max_tasks = g_base_tasks = task_count();
    if (g_base_tasks > 0) ++g_base_tasks; /* the sampler itself */
    __atomic_store_n(&g_sampling, 1, __ATOMIC_RELEASE);
    if (pthread_create(&t, NULL, sampler, NULL) != 0) __atomic_store_n(&g_sampling, 0, __ATOMIC_RELEASE);
    return t;
}
static int sampler_stop(pthread_t t) {
    __atomic_store_n(&g_sampling, 0, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    return g_max_tasks;
}

static void suite_nested(void) {
    int isa;
    ln_case ref;
    bn_case bref;
    static const int64_t bdims[4] = {8, 16, 16, 64}; /* 131072 elements: parallel outside a region */
    const int reps = g_quick ? 4 : 12;
    omp_set_max_active_levels(8); /* a nested team would really start threads */
    ln_alloc(&ref, 512, 512, NBWD_F32, 4242);
    bn_alloc(&bref, 4, bdims, NBWD_NXC, NBWD_BF16, 4343);
    for (isa = 1; isa < NBWD_ISA_COUNT; ++isa) {
        unsigned char *dx0, *bdx0;
        float dg0[512], db0[512], bdg0[64], bdb0[64];
        int same = 1, base, peak, nt;
        pthread_t smp;
        if (!isa_wanted(isa)) continue;
        snprintf(g_ctx, sizeof g_ctx, "nested OpenMP, isa %s", nbwd_isa_name((nbwd_isa)isa));
        CHECK_ST(ln_run(&ref, isa, 0), NBWD_OK);
        CHECK_ST(bn_run(&bref, isa, 0), NBWD_OK);
        dx0 = (unsigned char *)xmalloc(ln_bytes(&ref));
        bdx0 = (unsigned char *)xmalloc(bn_bytes(&bref));
        memcpy(dx0, ref.dx, ln_bytes(&ref)); memcpy(dg0, ref.dg, sizeof dg0); memcpy(db0, ref.db, sizeof db0);
        memcpy(bdx0, bref.dx, bn_bytes(&bref)); memcpy(bdg0, bref.dg, sizeof bdg0); memcpy(bdb0, bref.db, sizeof bdb0);
#pragma omp parallel num_threads(2)
        { (void)0; } /* start the outer team's threads */
        smp = sampler_start();
        base = g_base_tasks;
        for (nt = 0; nt <= 4; nt += 4) {
#pragma omp parallel num_threads(2) reduction(&& : same)
            {
                ln_case mine = ref;
                bn_case bmine = bref;
                float dg[512], db[512], bdg[64], bdb[64];
                int rep;
                mine.dx = xmalloc(ln_bytes(&ref)); mine.dg = dg; mine.db = db;
                bmine.dx = xmalloc(bn_bytes(&bref)); bmine.dg = bdg; bmine.db = bdb;
                for (rep = 0; rep < reps; ++rep) {
                    same = same && ln_run(&mine, isa, nt) == NBWD_OK && bn_run(&bmine, isa, nt) == NBWD_OK;
                    same = same && memcmp(mine.dx, dx0, ln_bytes(&ref)) == 0 && memcmp(dg, dg0, sizeof dg) == 0 &&
                           memcmp(db, db0, sizeof db) == 0;
                    same = same && memcmp(bmine.dx, bdx0, bn_bytes(&bref)) == 0 &&
                           memcmp(bdg, bdg0, sizeof bdg) == 0 && memcmp(bdb, bdb0, sizeof bdb) == 0;
                }
                free(mine.dx);
                free(bmine.dx);
            }
        }
        peak = sampler_stop(smp);
        CHECK(same);
        /* main + the outer team's worker + the sampler: nothing more. */
        if (base > 0 && !CHECK(peak <= base)) printf("       threads: %d before, %d at the peak\n", base, peak);
        free(dx0); free(bdx0);
    }
    /* Positive control, after the checks above (libomp keeps a nested
       team's threads pooled): a nested region of our own doing the same work
       is seen by the sampler, so the checks above would have seen the
       library's. */
    if (task_count() > 0) {
        pthread_t smp = sampler_start();
        int base = g_base_tasks, control, rep;
        snprintf(g_ctx, sizeof g_ctx, "nested OpenMP: positive control of the thread count");
        for (rep = 0; rep < reps; ++rep) {
#pragma omp parallel num_threads(2)
            {
                ln_case mine = ref;
                float dg[512], db[512];
                mine.dx = xmalloc(ln_bytes(&ref)); mine.dg = dg; mine.db = db;
#pragma omp parallel num_threads(2)
                { (void)ln_run(&mine, NBWD_ISA_SCALAR, 1); }
                free(mine.dx);
            }
        }
        control = sampler_stop(smp);
        if (!CHECK(control > base)) printf("       control: %d before, %d at the peak\n", base, control);
    }
    ln_free(&ref);
    bn_free(&bref);
}
#endif

/* ==================================================================== huge */
static long long mem_available_kb(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long long kb = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
    fclose(f);
    return kb;
}

/* Cheap deterministic values: a hash of the element index. */
static float hval(uint64_t i, uint64_t salt, float scale) {
    uint64_t z = (i + salt) * 0x9e3779b97f4a7c15ull;
    z ^= z >> 29; z *= 0xbf58476d1ce4e5b9ull; z ^= z >> 32;
    return scale * ((float)(z >> 40) / 16777216.0f - 0.5f);
}

static void suite_huge(void) {
    /* 2^31 + 7 = 143165577 x 15 elements: rows end past 2^31 elements (2^32
       bytes), 15 columns leave a tail on every SIMD width. */
    const int64_t cols = 15, rows = 143165577, total = rows * cols;
    const double need_gb = 3.0 * (double)total * 2 / 1e9 + (double)rows * 8 / 1e9;
    long long avail = mem_available_kb();
    uint16_t *x, *dy, *dx;
    float *mean, *var, *gamma, dg[15], db[15];
    double rdg[15], rdb[15], adg[15], adb[15], t0, t_fill, t_call;
    int64_t r, j, check_rows[6];
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    int64_t dims[2];
    int k, isa = g_isa_only ? g_isa_only : NBWD_ISA_AUTO, rows_ok = 1;
    snprintf(g_ctx, sizeof g_ctx, "huge LayerNorm bf16 %lld x %lld = 2^31 + 7 elements", (long long)rows,
             (long long)cols);
    if (total != ((int64_t)1 << 31) + 7) { CHECK(0); return; }
    if (avail < 0 || (double)avail * 1024.0 < (need_gb + 2.0) * 1e9) {
        printf("huge: skipped: needs %.1f GB + 2 GB margin, MemAvailable %.1f GB\n", need_gb,
               avail < 0 ? -1.0 : (double)avail * 1024.0 / 1e9);
        return;
    }
    x = (uint16_t *)malloc((size_t)total * 2);
    dy = (uint16_t *)malloc((size_t)total * 2);
    dx = (uint16_t *)malloc((size_t)total * 2);
    mean = (float *)malloc((size_t)rows * 4);
    var = (float *)malloc((size_t)rows * 4);
    gamma = (float *)xmalloc(15 * 4);
    if (!x || !dy || !dx || !mean || !var) {
        printf("huge: skipped: allocation of %.1f GB failed\n", need_gb);
        free(x); free(dy); free(dx); free(mean); free(var); free(gamma);
        return;
    }
    t0 = now_s();
    for (j = 0; j < cols; ++j) { gamma[j] = 1.0f + hval((uint64_t)j, 77, 1.0f); rdg[j] = rdb[j] = adg[j] = adb[j] = 0; }
    /* Fill, and accumulate the float64 diff_gamma / diff_beta on the fly. */
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : rdg[:15], rdb[:15], adg[:15], adb[:15])
#endif
    for (r = 0; r < rows; ++r) {
        double m = 0, v = 0, rstd;
        int64_t jj;
        float xv[15];
        for (jj = 0; jj < 15; ++jj) {
            uint64_t i = (uint64_t)(r * 15 + jj);
            x[i] = nbwd_f32_to_bf16(hval(i, 1, 4.0f) + hval((uint64_t)r, 3, 2.0f));
            dy[i] = nbwd_f32_to_bf16(hval(i, 2, 2.0f));
            xv[jj] = nbwd_bf16_to_f32(x[i]);
            m += xv[jj];
        }
        m /= 15;
        for (jj = 0; jj < 15; ++jj) v += (xv[jj] - m) * (xv[jj] - m);
        mean[r] = (float)m;
        var[r] = (float)(v / 15);
        rstd = 1.0 / sqrt((double)var[r] + 1e-5);
        for (jj = 0; jj < 15; ++jj) {
            double g = nbwd_bf16_to_f32(dy[r * 15 + jj]), xh = ((double)xv[jj] - (double)mean[r]) * rstd;
            rdg[jj] += g * xh; adg[jj] += fabs(g * xh);
            rdb[jj] += g; adb[jj] += fabs(g);
        }
    }
    t_fill = now_s() - t0;
    dims[0] = rows; dims[1] = cols;
    nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    d.data_dtype = NBWD_BF16;
    d.isa = (nbwd_isa)isa;
    memset(&a, 0, sizeof a);
    a.src = x; a.diff_dst = dy; a.mean = mean; a.variance = var; a.gamma = gamma;
    a.diff_src = dx; a.diff_gamma = dg; a.diff_beta = db;
    t0 = now_s();
    CHECK_ST(nbwd_layer_norm_bwd(&d, &a, NULL, 0), NBWD_OK);
    t_call = now_s() - t0;
    printf("huge: %.1f GB, isa %s, fill + float64 sums %.1f s, nbwd_layer_norm_bwd %.1f s\n", need_gb,
           nbwd_isa_name(isa ? (nbwd_isa)isa : nbwd_active_isa()), t_fill, t_call);
    /* A few rows, the one that straddles element 2^31 among them. */
    check_rows[0] = 0; check_rows[1] = rows / 2; check_rows[2] = (((int64_t)1 << 31) / 15);
    check_rows[3] = check_rows[2] + 1; check_rows[4] = rows - 2; check_rows[5] = rows - 1;
    for (k = 0; k < 6; ++k) {
        double xh[15], g[15], sg = 0, sgx = 0, rstd, s1 = 0;
        int64_t jj;
        r = check_rows[k];
        rstd = 1.0 / sqrt((double)var[r] + 1e-5);
        for (jj = 0; jj < 15; ++jj) {
            xh[jj] = ((double)nbwd_bf16_to_f32(x[r * 15 + jj]) - (double)mean[r]) * rstd;
            g[jj] = (double)nbwd_bf16_to_f32(dy[r * 15 + jj]) * gamma[jj];
            sg += g[jj]; sgx += g[jj] * xh[jj]; s1 += fabs(g[jj]) + fabs(g[jj] * xh[jj]);
        }
        for (jj = 0; jj < 15; ++jj) {
            double want = rstd * (g[jj] - sg / 15 - xh[jj] * sgx / 15);
            double got = nbwd_bf16_to_f32(dx[r * 15 + jj]);
            double tol = fabs(want) / 128.0 + rstd * (fabs(g[jj]) + s1 * (1 + fabs(xh[jj]))) * 1e-5 + 1e-30;
            if (!(fabs(got - want) <= tol)) {
                if (rows_ok) printf("       row %lld col %lld: got %.6g want %.6g\n", (long long)r, (long long)jj, got, want);
                rows_ok = 0;
            }
        }
    }
    CHECK(rows_ok);
    for (j = 0; j < cols; ++j) {
        /* f32 sums over 1.4e8 rows in blocks: well inside 1e-3 of sum|term|. */
        if (!CHECK(fabs(dg[j] - rdg[j]) <= 1e-3 * adg[j] && fabs(db[j] - rdb[j]) <= 1e-3 * adb[j]))
            printf("       column %lld: dgamma %.9g vs %.9g (sum|.| %.3g), dbeta %.9g vs %.9g (sum|.| %.3g)\n",
                   (long long)j, (double)dg[j], rdg[j], adg[j], (double)db[j], rdb[j], adb[j]);
    }
    free(x); free(dy); free(dx); free(mean); free(var); free(gamma);
}

/* ==================================================================== main */
int main(int argc, char **argv) {
    static const char *const suites[] = {"threads", "nan", "overflow", "nested", "huge"};
    int want[5] = {1, 1, 1, 1, 0}, any = 0, i, s;
    double t0 = now_s();
    for (i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) {
            g_quick = 1;
        } else if (strcmp(argv[i], "--huge") == 0) {
            g_huge = 1;
        } else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
            ++i;
            for (s = 0; s < NBWD_ISA_COUNT; ++s)
                if (strcmp(argv[i], nbwd_isa_name((nbwd_isa)s)) == 0) break;
            if (s == NBWD_ISA_COUNT) { fprintf(stderr, "unknown isa '%s'\n", argv[i]); return 2; }
            g_isa_only = s;
        } else if (strcmp(argv[i], "--suite") == 0 && i + 1 < argc) {
            ++i;
            for (s = 0; s < 5; ++s)
                if (strcmp(argv[i], suites[s]) == 0) break;
            if (s == 5) { fprintf(stderr, "unknown suite '%s'\n", argv[i]); return 2; }
            if (!any) memset(want, 0, sizeof want);
            any = 1;
            want[s] = 1;
        } else {
            fprintf(stderr, "usage: %s [--isa NAME] [--quick] [--huge] [--suite threads|nan|overflow|nested|huge]...\n",
                    argv[0]);
            return 2;
        }
    }
    if (g_huge) want[4] = 1;
    /* The racing first calls come first: nothing has called the library yet. */
    if (want[0]) suite_threads_first_call();
    printf("norm_bwd hardening: auto resolves to %s%s%s\n", nbwd_isa_name(nbwd_active_isa()),
           g_isa_only ? ", only isa " : "", g_isa_only ? nbwd_isa_name((nbwd_isa)g_isa_only) : "");
    if (g_isa_only && !nbwd_isa_supported((nbwd_isa)g_isa_only)) {
        printf("isa %s skipped: not compiled in or not runnable here\n", nbwd_isa_name((nbwd_isa)g_isa_only));
        printf("%ld passed, %ld failed\n", g_pass, g_fail);
        return g_fail ? 1 : 0;
    }
    for (s = 0; s < 5; ++s) {
        long p0 = g_pass, f0 = g_fail;
        double ts = now_s();
        if (!want[s]) continue;
        if (s == 0) suite_threads();
        if (s == 1) suite_nan();
        if (s == 2) suite_overflow();
        if (s == 3) {
#if defined(_OPENMP)
            suite_nested();
#else
            printf("nested: skipped (built without OpenMP)\n");
            continue;
#endif
        }
        if (s == 4) suite_huge();
        printf("%-9s %ld passed, %ld failed (%.2f s)\n", suites[s], g_pass - p0, g_fail - f0, now_s() - ts);
    }
    printf("total time %.2f s\n", now_s() - t0);
    printf("%ld passed, %ld failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
