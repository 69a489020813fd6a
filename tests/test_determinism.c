/* test_determinism.c - bitwise identical outputs (diff_src, diff_gamma,
   diff_beta) for num_threads = 1, 2, 3, 5 (and 0, the OpenMP default) on the
   ISA path under test: LayerNorm 500000x24, 4096x1024, 37x4097 and BatchNorm
   NCX with C below and far above the thread count, and NXC, for every data
   type; RMSNorm, the residual gradient (also accumulated in place) and the
   backward from the forward output likewise; and the variance and rstd
   forms agree bit for bit. (Without OpenMP
   the thread count is ignored and this is trivially true: 1 and 2 threads
   on the small tensors only, and the forms.) */
#include "nbwd_test.h"

static const int k_threads[] = {1, 2, 3, 5, 0};
/* The thread counts a tensor of `elems` elements runs with. Without OpenMP
   the count is ignored: 1 against 2 on the small tensors shows it; on the
   large ones (which threads would split) it would only repeat it, at
   minutes under qemu. */
static int det_threads(int64_t elems) {
#if defined(_OPENMP)
    (void)elems;
    return (int)(sizeof k_threads / sizeof k_threads[0]);
#else
    return elems <= 65536 ? 2 : 1;
#endif
}

static const nbwd_dtype k_dts[3] = {NBWD_F32, NBWD_F16, NBWD_BF16};

/* LayerNorm rows x n inputs (x, dy, mean, variance, gamma of dtype pdt),
   random from seed, and a descriptor and args that point at them. */
typedef struct ln_inputs {
    t_buf x, dy, m, v, g;
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
} ln_inputs;
static void ln_inputs_make(ln_inputs *in, int64_t rows, int64_t n, nbwd_dtype dt, nbwd_dtype pdt, uint64_t seed) {
    int64_t dims[2], i;
    t_rng rng;
    dims[0] = rows;
    dims[1] = n;
    t_rng_seed(&rng, seed);
    t_buf_alloc(&in->x, 2, dims, NULL, dt);
    t_buf_alloc(&in->dy, 2, dims, NULL, dt);
    t_buf_alloc(&in->m, 1, &rows, NULL, NBWD_F32);
    t_buf_alloc(&in->v, 1, &rows, NULL, NBWD_F32);
    t_buf_alloc(&in->g, 1, &n, NULL, pdt);
    t_buf_fill_normal(&in->x, &rng, 0.5, 2.0);
    t_buf_fill_normal(&in->dy, &rng, 0.0, 1.0);
    t_buf_fill_normal(&in->g, &rng, 1.0, 0.5);
    for (i = 0; i < rows; ++i) {
        t_buf_set(&in->m, i, 0.5 + 0.1 * t_rng_normal(&rng));
        t_buf_set(&in->v, i, 4.0 * (1.0 + 0.1 * t_rng_uniform(&rng, 0.0, 1.0)));
    }
    nbwd_layer_norm_bwd_desc_init(&in->d, 2, dims);
    in->d.data_dtype = dt;
    in->d.param_dtype = pdt;
    in->d.isa = g_test_isa;
    memset(&in->a, 0, sizeof in->a);
    in->a.src = in->x.base; in->a.diff_dst = in->dy.base; in->a.mean = in->m.base; in->a.variance = in->v.base;
    in->a.gamma = in->g.base;
}
static void ln_inputs_free(ln_inputs *in) {
    t_buf_free(&in->x); t_buf_free(&in->dy); t_buf_free(&in->m); t_buf_free(&in->v); t_buf_free(&in->g);
}

/* What ln_det runs: LayerNorm as ln_inputs_make sets it up, or RMSNorm, a
   residual gradient, the backward from the forward output (x's buffer as
   y, the variance's as rstd). */
enum {
    DET_LN,
    DET_RMS_RES,     /* RMSNorm, mean-square form, a residual tensor of its own */
    DET_LN_DST_INPL, /* LayerNorm from dst, gamma_offset 1, the residual accumulated in diff_src */
    DET_RMS_DST_RES, /* RMSNorm from dst, a residual tensor of its own */
    DET_LN_NONE,     /* LayerNorm from src alone (NBWD_STATS_NONE) */
    DET_RMS_NONE     /* RMSNorm from src alone, the residual accumulated in diff_src */
};
static const char *const k_det_names[] = {"LN", "RMS+res", "LN dst+res in place", "RMS dst+res", "LN none",
                                          "RMS none+acc dx"};

static nbwd_status ln_det_call(int variant, ln_inputs *in, const t_buf *res, t_buf *dx) {
    const int rms = variant == DET_RMS_RES || variant == DET_RMS_DST_RES || variant == DET_RMS_NONE;
    const int from_dst = variant == DET_LN_DST_INPL || variant == DET_RMS_DST_RES;
    const int none = variant == DET_LN_NONE || variant == DET_RMS_NONE;
    nbwd_rms_norm_bwd_args ra;
    int64_t i, count = res->dims[0] * res->dims[1];
    if (from_dst) {
        in->d.stats_form = NBWD_STATS_DST_RSTD;
        in->a.src = NULL; in->a.mean = NULL; in->a.variance = NULL;
        in->a.dst = in->x.base; in->a.rstd = in->v.base;
    } else if (none) {
        in->d.stats_form = NBWD_STATS_NONE;
        in->a.mean = NULL; in->a.variance = NULL;
    } else if (rms) {
        in->d.stats_form = NBWD_STATS_MEAN_SQUARE;
    }
    if (variant == DET_RMS_NONE) { /* diff_src += the gradient: the same starting values every time */
        in->d.flags |= NBWD_ACCUMULATE_DIFF_SRC;
        for (i = 0; i < count; ++i) t_buf_set(dx, i, t_buf_get(res, i));
    }
    if (variant == DET_LN_DST_INPL) {
        in->d.gamma_offset = 1.0f;
        for (i = 0; i < count; ++i) t_buf_set(dx, i, t_buf_get(res, i)); /* diff_src holds the residual gradient */
        in->a.diff_residual = dx->base;
    } else if (variant != DET_LN && !none) {
        in->a.diff_residual = res->base;
    }
    if (!rms) return nbwd_layer_norm_bwd(&in->d, &in->a, NULL, 0);
    memset(&ra, 0, sizeof ra);
    if (from_dst) { ra.dst = in->x.base; ra.rstd = in->v.base; }
    else { ra.src = in->x.base; ra.mean_square = none ? NULL : in->v.base; }
    ra.diff_dst = in->a.diff_dst; ra.gamma = in->a.gamma;
    ra.diff_src = in->a.diff_src; ra.diff_gamma = in->a.diff_gamma; ra.diff_beta = in->a.diff_beta;
    ra.diff_residual = in->a.diff_residual;
    return nbwd_rms_norm_bwd(&in->d, &ra, NULL, 0);
}

static void ln_det(int64_t rows, int64_t n, nbwd_dtype dt, int accumulate, int variant, uint64_t seed) {
    int64_t dims[2], i;
    t_buf dx[2], dg[2], db[2], res;
    ln_inputs in;
    int t, nthreads = det_threads(rows * n);
    nbwd_dtype pdt = dt == NBWD_F32 ? NBWD_F32 : dt; /* 16-bit params: accumulation rounding visible */
    if (nthreads < 2) return; /* nothing to compare */
    dims[0] = rows;
    dims[1] = n;
    t_case("determinism %s %lldx%lld dt=%s acc=%d isa=%s", k_det_names[variant], (long long)rows, (long long)n,
           t_dtype_name(dt), accumulate, nbwd_isa_name(g_test_isa));
    ln_inputs_make(&in, rows, n, dt, pdt, seed);
    if (variant == DET_RMS_RES || variant == DET_RMS_DST_RES || variant == DET_RMS_NONE)
        nbwd_rms_norm_bwd_desc_init(&in.d, 2, dims);
    in.d.data_dtype = dt;
    in.d.param_dtype = pdt;
    in.d.isa = g_test_isa;
    t_buf_alloc(&res, 2, dims, NULL, dt);
    {
        t_rng rng;
        t_rng_seed(&rng, seed ^ 0x5eedu);
        t_buf_fill_normal(&res, &rng, 0.0, 1.0);
    }
    for (t = 0; t < 2; ++t) {
        t_buf_alloc(&dx[t], 2, dims, NULL, dt);
        t_buf_alloc(&dg[t], 1, &n, NULL, pdt);
        t_buf_alloc(&db[t], 1, &n, NULL, pdt);
    }
    in.d.flags = accumulate ? NBWD_ACCUMULATE_PARAM_GRADS : 0u;
    for (t = 0; t < nthreads; ++t) {
        int k = t == 0 ? 0 : 1;
        nbwd_status s;
        if (accumulate) { /* the same starting values every time */
            memset(dg[k].alloc, T_CANARY, dg[k].alloc_bytes);
            memset(db[k].alloc, T_CANARY, db[k].alloc_bytes);
            for (i = 0; i < n; ++i) {
                t_buf_set(&dg[k], i, 0.001 * (double)(i % 13));
                t_buf_set(&db[k], i, -0.002 * (double)(i % 7));
            }
        }
        in.d.num_threads = k_threads[t];
        in.a.diff_src = dx[k].base; in.a.diff_gamma = dg[k].base; in.a.diff_beta = db[k].base;
        s = ln_det_call(variant, &in, &res, &dx[k]);
        CHECK_STATUS(s, NBWD_OK);
        if (t > 0) {
            CHECK(t_buf_same_bytes(&dx[0], &dx[1]), "diff_src with %d threads differs from 1 thread", k_threads[t]);
            CHECK(t_buf_same_bytes(&dg[0], &dg[1]), "diff_gamma with %d threads differs from 1 thread", k_threads[t]);
            CHECK(t_buf_same_bytes(&db[0], &db[1]), "diff_beta with %d threads differs from 1 thread", k_threads[t]);
        }
    }
    ln_inputs_free(&in);
    t_buf_free(&res);
    for (t = 0; t < 2; ++t) { t_buf_free(&dx[t]); t_buf_free(&dg[t]); t_buf_free(&db[t]); }
}

/* BatchNorm inputs (x, dy random from seed; per channel mean, variance 4,
   gamma; all statistics and parameters f32), a descriptor with epsilon eps
   and args that point at them. */
typedef struct bn_inputs {
    t_buf x, dy, m, v, g;
    int64_t C;
    nbwd_batch_norm_bwd_desc d;
    nbwd_batch_norm_bwd_args a;
} bn_inputs;
static void bn_inputs_make(bn_inputs *in, int rank, const int64_t *dims, nbwd_layout L, nbwd_dtype dt, float eps,
                           uint64_t seed) {
    int64_t i;
    t_rng rng;
    in->C = dims[L == NBWD_NCX ? 1 : rank - 1];
    t_rng_seed(&rng, seed);
    t_buf_alloc(&in->x, rank, dims, NULL, dt);
    t_buf_alloc(&in->dy, rank, dims, NULL, dt);
    t_buf_alloc(&in->m, 1, &in->C, NULL, NBWD_F32);
    t_buf_alloc(&in->v, 1, &in->C, NULL, NBWD_F32);
    t_buf_alloc(&in->g, 1, &in->C, NULL, NBWD_F32);
    t_buf_fill_normal(&in->x, &rng, 0.5, 2.0);
    t_buf_fill_normal(&in->dy, &rng, 0.1, 1.0);
    for (i = 0; i < in->C; ++i) {
        t_buf_set(&in->m, i, 0.5 + 0.1 * t_rng_normal(&rng));
        t_buf_set(&in->v, i, 4.0);
        t_buf_set(&in->g, i, 1.0 + 0.3 * t_rng_normal(&rng));
    }
    nbwd_batch_norm_bwd_desc_init(&in->d, rank, dims, L, eps);
    in->d.data_dtype = dt;
    in->d.isa = g_test_isa;
    memset(&in->a, 0, sizeof in->a);
    in->a.src = in->x.base; in->a.diff_dst = in->dy.base; in->a.mean = in->m.base; in->a.variance = in->v.base;
    in->a.gamma = in->g.base;
}
static void bn_inputs_free(bn_inputs *in) {
    t_buf_free(&in->x); t_buf_free(&in->dy); t_buf_free(&in->m); t_buf_free(&in->v); t_buf_free(&in->g);
}

static void bn_det(int rank, const int64_t *dims, nbwd_layout L, nbwd_dtype dt, uint64_t seed) {
    int t, nthreads;
    t_buf dx[2], dg[2], db[2];
    bn_inputs in;
    bn_inputs_make(&in, rank, dims, L, dt, 1e-5f, seed);
    t_case("determinism BN %s C=%lld rank=%d dt=%s isa=%s", L == NBWD_NCX ? "NCX" : "NXC", (long long)in.C, rank,
           t_dtype_name(dt), nbwd_isa_name(g_test_isa));
    for (t = 0; t < 2; ++t) {
        t_buf_alloc(&dx[t], rank, dims, NULL, dt);
        t_buf_alloc(&dg[t], 1, &in.C, NULL, NBWD_F32);
        t_buf_alloc(&db[t], 1, &in.C, NULL, NBWD_F32);
    }
    nthreads = det_threads(in.x.count);
    for (t = 0; t < nthreads; ++t) {
        int k = t == 0 ? 0 : 1;
        in.d.num_threads = k_threads[t];
        in.a.diff_src = dx[k].base; in.a.diff_gamma = dg[k].base; in.a.diff_beta = db[k].base;
        CHECK_STATUS(nbwd_batch_norm_bwd(&in.d, &in.a, NULL, 0), NBWD_OK);
        if (t > 0) {
            CHECK(t_buf_same_bytes(&dx[0], &dx[1]), "diff_src with %d threads differs from 1 thread", k_threads[t]);
            CHECK(t_buf_same_bytes(&dg[0], &dg[1]) && t_buf_same_bytes(&db[0], &db[1]),
                  "diff_gamma/diff_beta with %d threads differ from 1 thread", k_threads[t]);
        }
    }
    /* diff_gamma/diff_beta alone (no dx pass): the bits of a call with dx */
    in.d.num_threads = 0;
    in.a.diff_src = NULL; in.a.diff_gamma = dg[1].base; in.a.diff_beta = db[1].base;
    CHECK_STATUS(nbwd_batch_norm_bwd(&in.d, &in.a, NULL, 0), NBWD_OK);
    CHECK(t_buf_same_bytes(&dg[0], &dg[1]) && t_buf_same_bytes(&db[0], &db[1]),
          "diff_gamma/diff_beta without diff_src differ");
    bn_inputs_free(&in);
    for (t = 0; t < 2; ++t) { t_buf_free(&dx[t]); t_buf_free(&dg[t]); t_buf_free(&db[t]); }
}

#if defined(_OPENMP)
#include <omp.h>
/* Calls from inside a parallel region (each thread its own outputs, shared
   inputs; the first call also races on the dispatcher's one-time setup):
   every thread must get the serial result's bits. */
static void concurrent_calls(void) {
    enum { T = 4 };
    int64_t dims[2] = {257, 96}, rows = 257, n = 96, i;
    t_buf x, dy, m, v, g, dx[T + 1], dg[T + 1], db[T + 1];
    nbwd_layer_norm_bwd_desc d;
    nbwd_layer_norm_bwd_args a;
    nbwd_status st[T + 1];
    t_rng rng;
    int t, ok = 1, sok = 1;
    t_case("determinism: concurrent calls from an OpenMP parallel region (isa %s)", nbwd_isa_name(g_test_isa));
    t_rng_seed(&rng, 8080);
    t_buf_alloc(&x, 2, dims, NULL, NBWD_BF16);
    t_buf_alloc(&dy, 2, dims, NULL, NBWD_BF16);
    t_buf_alloc(&m, 1, &rows, NULL, NBWD_F32);
    t_buf_alloc(&v, 1, &rows, NULL, NBWD_F32);
    t_buf_alloc(&g, 1, &n, NULL, NBWD_F32);
    for (t = 0; t <= T; ++t) {
        t_buf_alloc(&dx[t], 2, dims, NULL, NBWD_BF16);
        t_buf_alloc(&dg[t], 1, &n, NULL, NBWD_F32);
        t_buf_alloc(&db[t], 1, &n, NULL, NBWD_F32);
    }
    t_buf_fill_normal(&x, &rng, 0.0, 1.0);
    t_buf_fill_normal(&dy, &rng, 0.0, 1.0);
    t_buf_fill_normal(&g, &rng, 1.0, 0.2);
    for (i = 0; i < rows; ++i) { t_buf_set(&m, i, 0.05 * t_rng_normal(&rng)); t_buf_set(&v, i, 1.0); }
    nbwd_layer_norm_bwd_desc_init(&d, 2, dims);
    d.data_dtype = NBWD_BF16;
    d.isa = g_test_isa;
#pragma omp parallel for num_threads(T) schedule(static, 1)
    for (t = 0; t < T; ++t) {
        nbwd_layer_norm_bwd_args at;
        memset(&at, 0, sizeof at);
        at.src = x.base; at.diff_dst = dy.base; at.mean = m.base; at.variance = v.base; at.gamma = g.base;
        at.diff_src = dx[t].base; at.diff_gamma = dg[t].base; at.diff_beta = db[t].base;
        st[t] = nbwd_layer_norm_bwd(&d, &at, NULL, 0);
    }
    memset(&a, 0, sizeof a);
    a.src = x.base; a.diff_dst = dy.base; a.mean = m.base; a.variance = v.base; a.gamma = g.base;
    a.diff_src = dx[T].base; a.diff_gamma = dg[T].base; a.diff_beta = db[T].base;
    d.num_threads = 1;
    st[T] = nbwd_layer_norm_bwd(&d, &a, NULL, 0);
    for (t = 0; t <= T; ++t) {
        if (st[t] != NBWD_OK) sok = 0;
        if (t < T && (!t_buf_same_bytes(&dx[t], &dx[T]) || !t_buf_same_bytes(&dg[t], &dg[T]) ||
                      !t_buf_same_bytes(&db[t], &db[T])))
            ok = 0;
    }
    CHECK(sok, "a concurrent call failed");
    CHECK(ok, "concurrent calls inside a parallel region differ from the serial result");
    t_buf_free(&x); t_buf_free(&dy); t_buf_free(&m); t_buf_free(&v); t_buf_free(&g);
    for (t = 0; t <= T; ++t) { t_buf_free(&dx[t]); t_buf_free(&dg[t]); t_buf_free(&db[t]); }
}
#endif

/* Which outputs a call asks for picks the kernel (with column sums, rows go
   through the L2 sweep; dx alone, the row-pipelined loop; sums alone, a
   reduction): every choice must give the same bits for the same output. */
static void ln_outputs_agree(int64_t rows, int64_t n, nbwd_dtype dt, int none, uint64_t seed) {
    int64_t dims[2];
    t_buf dx[2], dg[3], db[3];
    ln_inputs in;
    int t;
    dims[0] = rows;
    dims[1] = n;
    t_case("outputs agree LN%s %lldx%lld dt=%s isa=%s", none ? " (NBWD_STATS_NONE)" : "", (long long)rows,
           (long long)n, t_dtype_name(dt), nbwd_isa_name(g_test_isa));
    ln_inputs_make(&in, rows, n, dt, NBWD_F32, seed);
    if (none) { /* the statistics found in the call */
        in.d.stats_form = NBWD_STATS_NONE;
        in.a.mean = in.a.variance = NULL;
    }
    for (t = 0; t < 3; ++t) {
        if (t < 2) t_buf_alloc(&dx[t], 2, dims, NULL, dt);
        t_buf_alloc(&dg[t], 1, &n, NULL, NBWD_F32);
        t_buf_alloc(&db[t], 1, &n, NULL, NBWD_F32);
    }
    /* all three; dx alone; diff_gamma and diff_beta alone; dx with diff_gamma only */
    in.a.diff_src = dx[0].base; in.a.diff_gamma = dg[0].base; in.a.diff_beta = db[0].base;
    CHECK_STATUS(nbwd_layer_norm_bwd(&in.d, &in.a, NULL, 0), NBWD_OK);
    in.a.diff_src = dx[1].base; in.a.diff_gamma = NULL; in.a.diff_beta = NULL;
    CHECK_STATUS(nbwd_layer_norm_bwd(&in.d, &in.a, NULL, 0), NBWD_OK);
    CHECK(t_buf_same_bytes(&dx[0], &dx[1]), "diff_src alone differs from diff_src with the parameter gradients");
    in.a.diff_src = NULL; in.a.diff_gamma = dg[1].base; in.a.diff_beta = db[1].base;
    CHECK_STATUS(nbwd_layer_norm_bwd(&in.d, &in.a, NULL, 0), NBWD_OK);
    CHECK(t_buf_same_bytes(&dg[0], &dg[1]), "diff_gamma without diff_src differs");
    CHECK(t_buf_same_bytes(&db[0], &db[1]), "diff_beta without diff_src differs");
    in.a.diff_src = dx[1].base; in.a.diff_gamma = dg[2].base; in.a.diff_beta = NULL;
    CHECK_STATUS(nbwd_layer_norm_bwd(&in.d, &in.a, NULL, 0), NBWD_OK);
    CHECK(t_buf_same_bytes(&dx[0], &dx[1]), "diff_src with diff_gamma only differs");
    CHECK(t_buf_same_bytes(&dg[0], &dg[2]), "diff_gamma with diff_src but no diff_beta differs");
    ln_inputs_free(&in);
    for (t = 0; t < 3; ++t) {
        if (t < 2) t_buf_free(&dx[t]);
        t_buf_free(&dg[t]);
        t_buf_free(&db[t]);
    }
}

/* The MEAN_VARIANCE form computes each row's rstd as
   (float)(1 / sqrt((double)variance + epsilon)), on vectors of doubles where
   the path has them: given that rstd in the MEAN_RSTD form, every output must
   have the same bits (the manual says so). Variances span 1e-7..1e7, zeros
   and denormals included. */
static void ln_forms_agree(int64_t rows, int64_t n, nbwd_dtype dt, float eps, uint64_t seed) {
    int64_t dims[2], i;
    t_buf dx[2], dg[2], db[2], rstd;
    ln_inputs in;
    t_rng rng;
    int t;
    dims[0] = rows;
    dims[1] = n;
    t_case("forms agree LN %lldx%lld dt=%s eps=%g isa=%s", (long long)rows, (long long)n, t_dtype_name(dt),
           (double)eps, nbwd_isa_name(g_test_isa));
    ln_inputs_make(&in, rows, n, dt, NBWD_F32, seed);
    t_rng_seed(&rng, seed + 1);
    t_buf_alloc(&rstd, 1, &rows, NULL, NBWD_F32);
    for (i = 0; i < rows; ++i) {
        double v = pow(10.0, t_rng_uniform(&rng, -7.0, 7.0));
        if (i % 17 == 3) v = 0.0;
        if (i % 29 == 5) v = 1e-41; /* a float denormal */
        t_buf_set(&in.v, i, v);
        v = (double)(float)v; /* what the library reads */
        t_buf_set(&rstd, i, (double)(float)(1.0 / sqrt(v + (double)eps)));
    }
    for (t = 0; t < 2; ++t) {
        t_buf_alloc(&dx[t], 2, dims, NULL, dt);
        t_buf_alloc(&dg[t], 1, &n, NULL, NBWD_F32);
        t_buf_alloc(&db[t], 1, &n, NULL, NBWD_F32);
        in.d.epsilon = eps;
        in.d.stats_form = t ? NBWD_STATS_MEAN_RSTD : NBWD_STATS_MEAN_VARIANCE;
        in.a.variance = t ? NULL : in.v.base;
        in.a.rstd = t ? rstd.base : NULL;
        in.a.diff_src = dx[t].base; in.a.diff_gamma = dg[t].base; in.a.diff_beta = db[t].base;
        CHECK_STATUS(nbwd_layer_norm_bwd(&in.d, &in.a, NULL, 0), NBWD_OK);
    }
    CHECK(t_buf_same_bytes(&dx[0], &dx[1]), "diff_src from the variance differs from diff_src from its rstd");
    CHECK(t_buf_same_bytes(&dg[0], &dg[1]) && t_buf_same_bytes(&db[0], &db[1]),
          "diff_gamma/diff_beta from the variance differ from those from its rstd");
    ln_inputs_free(&in);
    t_buf_free(&rstd);
    for (t = 0; t < 2; ++t) { t_buf_free(&dx[t]); t_buf_free(&dg[t]); t_buf_free(&db[t]); }
}

/* The same for BatchNorm: per-channel rstd from the variance, or given.
   Variances span 1e-6..1e6. */
static void bn_forms_agree(int rank, const int64_t *dims, nbwd_layout L, nbwd_dtype dt, uint64_t seed) {
    int64_t i;
    int t;
    t_buf rstd, dx[2], dg[2], db[2];
    bn_inputs in;
    t_rng rng;
    const float eps = 1e-3f;
    bn_inputs_make(&in, rank, dims, L, dt, eps, seed);
    t_case("forms agree BN %s C=%lld dt=%s isa=%s", L == NBWD_NCX ? "NCX" : "NXC", (long long)in.C, t_dtype_name(dt),
           nbwd_isa_name(g_test_isa));
    t_rng_seed(&rng, seed + 1);
    t_buf_alloc(&rstd, 1, &in.C, NULL, NBWD_F32);
    for (i = 0; i < in.C; ++i) {
        double var = (double)(float)pow(10.0, t_rng_uniform(&rng, -6.0, 6.0));
        t_buf_set(&in.v, i, var);
        t_buf_set(&rstd, i, (double)(float)(1.0 / sqrt(var + (double)eps)));
    }
    for (t = 0; t < 2; ++t) {
        t_buf_alloc(&dx[t], rank, dims, NULL, dt);
        t_buf_alloc(&dg[t], 1, &in.C, NULL, NBWD_F32);
        t_buf_alloc(&db[t], 1, &in.C, NULL, NBWD_F32);
        in.d.stats_form = t ? NBWD_STATS_MEAN_RSTD : NBWD_STATS_MEAN_VARIANCE;
        in.a.variance = t ? NULL : in.v.base;
        in.a.rstd = t ? rstd.base : NULL;
        in.a.diff_src = dx[t].base; in.a.diff_gamma = dg[t].base; in.a.diff_beta = db[t].base;
        CHECK_STATUS(nbwd_batch_norm_bwd(&in.d, &in.a, NULL, 0), NBWD_OK);
    }
    CHECK(t_buf_same_bytes(&dx[0], &dx[1]) && t_buf_same_bytes(&dg[0], &dg[1]) &&
              t_buf_same_bytes(&db[0], &db[1]),
          "outputs from the variance differ from those from its rstd");
    bn_inputs_free(&in);
    t_buf_free(&rstd);
    for (t = 0; t < 2; ++t) { t_buf_free(&dx[t]); t_buf_free(&dg[t]); t_buf_free(&db[t]); }
}

void test_determinism(void) {
#if defined(_OPENMP)
    concurrent_calls();
#endif
    int k;
    uint64_t seed = 9000;
    for (k = 0; k < 3; ++k) {
        int v;
        if (!g_quick) ln_det(500000, 24, k_dts[k], k == 2, DET_LN, ++seed);
        ln_det(g_quick ? 512 : 4096, 1024, k_dts[k], k == 1, DET_LN, ++seed);
        ln_det(37, 4097, k_dts[k], 0, DET_LN, ++seed);  /* 10 blocks of 4 rows */
        ln_det(3, 70001, k_dts[k], k == 0, DET_LN, ++seed); /* a block per row: few long rows still thread */
        ln_det(3000, 7, k_dts[k], 1, DET_LN, ++seed);
        for (v = DET_RMS_RES; v <= DET_RMS_DST_RES; ++v) { /* staged rows: slots of a few rows per thread */
            ln_det(g_quick ? 100 : 300, 1000, k_dts[k], v == DET_RMS_RES, v, ++seed);
            ln_det(300, 7, k_dts[k], 1, v, ++seed);
        }
        for (v = DET_LN_NONE; v <= DET_RMS_NONE; ++v) { /* statistics in the call: batches of rows */
            ln_det(g_quick ? 300 : 2000, 1000, k_dts[k], v == DET_LN_NONE, v, ++seed);
            ln_det(700, 24, k_dts[k], 0, v, ++seed);
            ln_det(3, 70001, k_dts[k], 1, v, ++seed);
        }
        /* several L2 sub-blocks per batch of rows; tails of whole and partial vectors */
        ln_outputs_agree(200, 1000, k_dts[k], 0, ++seed);
        ln_outputs_agree(70, 4097, k_dts[k], 0, ++seed);
        ln_outputs_agree(150, 200, k_dts[k], 0, ++seed);
        ln_outputs_agree(150, 200, k_dts[k], 1, ++seed);
        ln_outputs_agree(9, 4097, k_dts[k], 1, ++seed);
        ln_forms_agree(203, 24, k_dts[k], 1e-5f, ++seed); /* batches of 64 rows and a tail of 11 */
        ln_forms_agree(67, 1000, k_dts[k], 1e-3f, ++seed);
    }
    for (k = 0; k < 3; ++k) {
        static const int64_t ncx_small_c[4] = {64, 2, 48, 48};    /* C = 2 < threads; 295k elements */
        static const int64_t ncx_many_c[4] = {8, 256, 12, 12};    /* C = 256 >> threads */
        static const int64_t ncx_big_n[3] = {4096, 3, 40};        /* many chunks per channel */
        static const int64_t ncx_blocks[4] = {4, 64, 5, 5};       /* blocks of 64, 32, 21, 12 channels */
        static const int64_t nxc[4] = {16, 24, 24, 40};           /* NXC, 368k elements */
        static const int64_t nxc_rows[2] = {100000, 5};           /* [N, C]: many rows */
        bn_det(4, ncx_small_c, NBWD_NCX, k_dts[k], ++seed);
        bn_det(4, ncx_many_c, NBWD_NCX, k_dts[k], ++seed);
        bn_det(3, ncx_big_n, NBWD_NCX, k_dts[k], ++seed);
        bn_det(4, ncx_blocks, NBWD_NCX, k_dts[k], ++seed);
        bn_det(4, nxc, NBWD_NXC, k_dts[k], ++seed);
        if (!g_quick) bn_det(2, nxc_rows, NBWD_NXC, k_dts[k], ++seed);
        bn_forms_agree(4, ncx_many_c, NBWD_NCX, k_dts[k], ++seed);
        bn_forms_agree(4, nxc, NBWD_NXC, k_dts[k], ++seed);
    }
}
