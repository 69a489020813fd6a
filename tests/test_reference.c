/* test_reference.c - checks the float64 reference itself, independently of
   the library: central finite differences of a float64 forward (LayerNorm
   and BatchNorm training, mean and variance recomputed from x inside the
   forward, loss = sum(y * w) for random w) on small shapes, compared with the
   reference backward fed the forward's own mean and variance and dy = w;
   BatchNorm also with the statistics frozen (a forward that takes them as
   constants, against the NBWD_USE_GLOBAL_STATS reference); RMSNorm likewise
   (the mean square recomputed inside its forward); GroupNorm/InstanceNorm
   likewise (the set statistics recomputed inside its forward; both
   layouts, groups 1, 2, C/2 and C), its four statistics forms agreeing
   (DST_RSTD: xhat recovered from the forward output), and checked against
   the BatchNorm reference (groups = C, N = 1: a set is a channel) and the
   LayerNorm reference (groups = 1, NCX: a set is a sample's [C, X...] with
   gamma repeated over X). Also: the three
   statistics forms agree, and strided (padded, negative)
   inputs give the same results as dense ones. */
#include "nbwd_test.h"

typedef void (*fwd_fn)(const void *ctx, const double *x, const double *gamma, const double *beta, double *y);

typedef struct ln_ctx { int rank; const int64_t *dims; int axis; double eps; } ln_ctx;
typedef struct bn_ctx {
    int rank;
    const int64_t *dims;
    nbwd_layout layout;
    double eps;
    const double *mean, *var; /* frozen statistics (NULL: recomputed from x) */
} bn_ctx;

typedef struct gn_ctx {
    int rank;
    const int64_t *dims;
    nbwd_layout layout;
    int64_t groups;
    double eps;
} gn_ctx;

static void ln_fwd(const void *ctx, const double *x, const double *gamma, const double *beta, double *y) {
    const ln_ctx *c = (const ln_ctx *)ctx;
    ref_layer_norm_fwd(c->rank, c->dims, c->axis, c->eps, x, gamma, beta, y);
}
static void rms_fwd(const void *ctx, const double *x, const double *gamma, const double *beta, double *y) {
    const ln_ctx *c = (const ln_ctx *)ctx;
    (void)beta;
    ref_rms_norm_fwd(c->rank, c->dims, c->axis, c->eps, x, gamma, y);
}
static void bn_fwd(const void *ctx, const double *x, const double *gamma, const double *beta, double *y) {
    const bn_ctx *c = (const bn_ctx *)ctx;
    int64_t e, total = 1;
    int d, cd = c->layout == NBWD_NCX ? 1 : c->rank - 1;
    if (!c->mean) {
        ref_batch_norm_fwd(c->rank, c->dims, c->layout, c->eps, x, gamma, beta, y);
        return;
    }
    for (d = 0; d < c->rank; ++d) total *= c->dims[d];
    for (e = 0; e < total; ++e) { /* frozen: y = (x - mean) / sqrt(var + eps) * gamma + beta */
        int64_t lin = e, ch = 0;
        for (d = c->rank - 1; d >= 0; --d) {
            if (d == cd) ch = lin % c->dims[d];
            lin /= c->dims[d];
        }
        y[e] = (x[e] - c->mean[ch]) / sqrt(c->var[ch] + c->eps) * gamma[ch] + beta[ch];
    }
}

static void gn_fwd(const void *ctx, const double *x, const double *gamma, const double *beta, double *y) {
    const gn_ctx *c = (const gn_ctx *)ctx;
    ref_group_norm_fwd(c->rank, c->dims, c->layout, c->groups, c->eps, x, gamma, beta, y);
}

static double loss(fwd_fn f, const void *ctx, const double *x, const double *g, const double *b, const double *w,
                   double *y, int64_t total) {
    double s = 0.0;
    int64_t i;
    f(ctx, x, g, b, y);
    for (i = 0; i < total; ++i) s += y[i] * w[i];
    return s;
}

/* Central differences of loss with respect to every element of v (modified
   in place and restored). */
static void fd_grad(fwd_fn f, const void *ctx, double *x, double *g, double *b, const double *w, double *y,
                    int64_t total, double *v, int64_t count, double *grad) {
    int64_t i;
    for (i = 0; i < count; ++i) {
        double keep = v[i], h = 1e-5 * (fabs(keep) > 1.0 ? fabs(keep) : 1.0), lp, lm;
        v[i] = keep + h;
        lp = loss(f, ctx, x, g, b, w, y, total);
        v[i] = keep - h;
        lm = loss(f, ctx, x, g, b, w, y, total);
        v[i] = keep;
        grad[i] = (lp - lm) / (2.0 * h);
    }
}

static void compare_fd(const char *what, const double *fd, const double *ref, int64_t count) {
    double scale = 0.0, worst = 0.0;
    int64_t i, at = 0;
    for (i = 0; i < count; ++i)
        if (fabs(ref[i]) > scale) scale = fabs(ref[i]);
    for (i = 0; i < count; ++i)
        if (fabs(fd[i] - ref[i]) > worst) { worst = fabs(fd[i] - ref[i]); at = i; }
    CHECK(worst <= T_FD_REL * scale + 1e-12, "%s: reference vs finite differences: max |diff| %.3g at [%lld] "
          "(fd %.12g, ref %.12g), allowed %.3g", what, worst, (long long)at, count ? fd[at] : 0.0,
          count ? ref[at] : 0.0, T_FD_REL * scale + 1e-12);
}

static void compare_exact(const char *what, const double *a, const double *b, int64_t count, double rel) {
    double scale = 0.0, worst = 0.0;
    int64_t i;
    for (i = 0; i < count; ++i) {
        if (fabs(b[i]) > scale) scale = fabs(b[i]);
        if (fabs(a[i] - b[i]) > worst) worst = fabs(a[i] - b[i]);
    }
    CHECK(worst <= rel * scale, "%s: max |diff| %.3g > %.3g", what, worst, rel * scale);
}

static ref_tensor f64(const void *p, const int64_t *strides) {
    ref_tensor t;
    t.p = p;
    t.dt = T_F64;
    t.strides = strides;
    return t;
}

/* Copies a dense double tensor into a strided one (allocation returned). */
static double *to_strided(int rank, const int64_t *dims, const double *dense, const int64_t *strides, double **base) {
    int64_t lo = 0, hi = 0, total = 1, e;
    int d;
    double *mem;
    for (d = 0; d < rank; ++d) {
        int64_t span = strides[d] * (dims[d] - 1);
        if (span < 0) lo += span; else hi += span;
        total *= dims[d];
    }
    mem = (double *)t_xmalloc((size_t)(hi - lo + 1) * sizeof(double));
    for (e = 0; e < hi - lo + 1; ++e) mem[e] = NAN; /* padding: never read */
    *base = mem - lo;
    for (e = 0; e < total; ++e) (*base)[ref_offset(rank, dims, strides, e)] = dense[e];
    return mem;
}

static void ln_reference_case(int rank, const int64_t *dims, int axis, uint64_t seed) {
    int64_t rows = 1, n = 1, total, i, r;
    int d;
    double *x, *w, *y, *g, *b, *mean, *var, *fdx, *fdg, *fdb, *dx, *dg, *db, *dx2, *dg2, *db2, *spread, *xh;
    ln_ctx ctx;
    ref_out o;
    t_rng rng;
    char dims_s[64];
    int k = 0;
    dims_s[0] = 0;
    for (d = 0; d < rank; ++d) k += snprintf(dims_s + k, sizeof dims_s - (size_t)k, "%s%lld", d ? "x" : "", (long long)dims[d]);
    t_case("reference LN vs finite differences: dims %s axis %d", dims_s, axis);
    for (d = 0; d < axis; ++d) rows *= dims[d];
    for (d = axis; d < rank; ++d) n *= dims[d];
    total = rows * n;
    t_rng_seed(&rng, seed);
    x = (double *)t_xmalloc((size_t)total * sizeof(double));
    w = (double *)t_xmalloc((size_t)total * sizeof(double));
    y = (double *)t_xmalloc((size_t)total * sizeof(double));
    fdx = (double *)t_xmalloc((size_t)total * sizeof(double));
    dx = (double *)t_xmalloc((size_t)total * sizeof(double));
    dx2 = (double *)t_xmalloc((size_t)total * sizeof(double));
    xh = (double *)t_xmalloc((size_t)total * sizeof(double));
    g = (double *)t_xmalloc((size_t)n * sizeof(double));
    b = (double *)t_xmalloc((size_t)n * sizeof(double));
    fdg = (double *)t_xmalloc((size_t)n * sizeof(double));
    fdb = (double *)t_xmalloc((size_t)n * sizeof(double));
    dg = (double *)t_xmalloc((size_t)n * sizeof(double));
    db = (double *)t_xmalloc((size_t)n * sizeof(double));
    dg2 = (double *)t_xmalloc((size_t)n * sizeof(double));
    db2 = (double *)t_xmalloc((size_t)n * sizeof(double));
    mean = (double *)t_xmalloc((size_t)rows * sizeof(double));
    var = (double *)t_xmalloc((size_t)rows * sizeof(double));
    spread = (double *)t_xmalloc((size_t)rows * sizeof(double));
    for (i = 0; i < total; ++i) { x[i] = 0.7 + 1.5 * t_rng_normal(&rng); w[i] = t_rng_normal(&rng); }
    for (i = 0; i < n; ++i) { g[i] = 1.0 + 0.5 * t_rng_normal(&rng); b[i] = t_rng_normal(&rng); }
    ctx.rank = rank; ctx.dims = dims; ctx.axis = axis; ctx.eps = 1e-3;

    fd_grad(ln_fwd, &ctx, x, g, b, w, y, total, x, total, fdx);
    fd_grad(ln_fwd, &ctx, x, g, b, w, y, total, g, n, fdg);
    fd_grad(ln_fwd, &ctx, x, g, b, w, y, total, b, n, fdb);

    ref_layer_norm_stats(rank, dims, axis, f64(x, NULL), mean, var);
    memset(&o, 0, sizeof o);
    o.dx = dx; o.dg = dg; o.db = db;
    ref_layer_norm_bwd(rank, dims, axis, NBWD_STATS_MEAN_VARIANCE, ctx.eps, f64(x, NULL), f64(w, NULL),
                       f64(mean, NULL), f64(var, NULL), f64(g, NULL), o);
    compare_fd("diff_src", fdx, dx, total);
    compare_fd("diff_gamma", fdg, dg, n);
    compare_fd("diff_beta", fdb, db, n);

    /* the other statistics forms give the same gradients */
    for (r = 0; r < rows; ++r) spread[r] = 1.0 / sqrt(var[r] + ctx.eps);
    o.dx = dx2; o.dg = dg2; o.db = db2;
    ref_layer_norm_bwd(rank, dims, axis, NBWD_STATS_MEAN_RSTD, 12345.0, f64(x, NULL), f64(w, NULL), f64(mean, NULL),
                       f64(spread, NULL), f64(g, NULL), o);
    compare_exact("MEAN_RSTD vs MEAN_VARIANCE diff_src", dx2, dx, total, 1e-12);
    compare_exact("MEAN_RSTD vs MEAN_VARIANCE diff_gamma", dg2, dg, n, 1e-12);
    for (r = 0; r < rows; ++r) {
        spread[r] = sqrt(var[r] + ctx.eps);
        for (i = 0; i < n; ++i) xh[r * n + i] = (x[r * n + i] - mean[r]) / spread[r];
    }
    ref_layer_norm_bwd(rank, dims, axis, NBWD_STATS_XHAT_STD, 12345.0, f64(xh, NULL), f64(w, NULL), f64(NULL, NULL),
                       f64(spread, NULL), f64(g, NULL), o);
    compare_exact("XHAT_STD vs MEAN_VARIANCE diff_src", dx2, dx, total, 1e-12);
    compare_exact("XHAT_STD vs MEAN_VARIANCE diff_gamma", dg2, dg, n, 1e-12);
    compare_exact("XHAT_STD vs MEAN_VARIANCE diff_beta", db2, db, n, 0.0);

    /* strided inputs (padded outer strides, a negative one, padded stats) give the same bits */
    if (axis >= 1) {
        int64_t sx[NBWD_MAX_RANK], sw[NBWD_MAX_RANK], sm[NBWD_MAX_RANK], sv[NBWD_MAX_RANK];
        double *xs, *ws, *ms, *vs, *mx, *mw, *mm, *mv;
        t_padded_strides(rank, dims, axis, 3, sx);
        t_padded_strides(rank, dims, axis, 1, sw);
        t_padded_strides(axis, dims, axis, 2, sm);
        t_padded_strides(axis, dims, axis, 1, sv);
        sx[0] = -sx[0];
        sm[0] = -sm[0];
        mx = to_strided(rank, dims, x, sx, &xs);
        mw = to_strided(rank, dims, w, sw, &ws);
        mm = to_strided(axis, dims, mean, sm, &ms);
        mv = to_strided(axis, dims, var, sv, &vs);
        ref_layer_norm_bwd(rank, dims, axis, NBWD_STATS_MEAN_VARIANCE, ctx.eps, f64(xs, sx), f64(ws, sw), f64(ms, sm),
                           f64(vs, sv), f64(g, NULL), o);
        compare_exact("strided vs dense diff_src", dx2, dx, total, 0.0);
        compare_exact("strided vs dense diff_gamma", dg2, dg, n, 0.0);
        compare_exact("strided vs dense diff_beta", db2, db, n, 0.0);
        free(mx); free(mw); free(mm); free(mv);
    }
    free(x); free(w); free(y); free(fdx); free(dx); free(dx2); free(xh); free(g); free(b); free(fdg); free(fdb);
    free(dg); free(db); free(dg2); free(db2); free(mean); free(var); free(spread);
}

/* RMSNorm: finite differences of its forward; the three statistics forms
   agree. (diff_beta, the sum of dy, is LayerNorm's and checked there.) */
static void rms_reference_case(int rank, const int64_t *dims, int axis, uint64_t seed) {
    int64_t rows = 1, n = 1, total, i, r;
    int d;
    double *x, *w, *y, *g, *b, *ms, *spread, *xh, *fdx, *fdg, *dx, *dg, *dx2, *dg2;
    ln_ctx ctx;
    ref_out o;
    t_rng rng;
    t_case("reference RMSNorm vs finite differences: rank %d axis %d", rank, axis);
    for (d = 0; d < axis; ++d) rows *= dims[d];
    for (d = axis; d < rank; ++d) n *= dims[d];
    total = rows * n;
    t_rng_seed(&rng, seed);
    x = (double *)t_xmalloc((size_t)total * sizeof(double));
    w = (double *)t_xmalloc((size_t)total * sizeof(double));
    y = (double *)t_xmalloc((size_t)total * sizeof(double));
    xh = (double *)t_xmalloc((size_t)total * sizeof(double));
    fdx = (double *)t_xmalloc((size_t)total * sizeof(double));
    dx = (double *)t_xmalloc((size_t)total * sizeof(double));
    dx2 = (double *)t_xmalloc((size_t)total * sizeof(double));
    g = (double *)t_xmalloc((size_t)n * sizeof(double));
    b = (double *)t_xmalloc((size_t)n * sizeof(double));
    fdg = (double *)t_xmalloc((size_t)n * sizeof(double));
    dg = (double *)t_xmalloc((size_t)n * sizeof(double));
    dg2 = (double *)t_xmalloc((size_t)n * sizeof(double));
    ms = (double *)t_xmalloc((size_t)rows * sizeof(double));
    spread = (double *)t_xmalloc((size_t)rows * sizeof(double));
    /* a mean far from 0: centring would change the gradient, RMSNorm's must not */
    for (i = 0; i < total; ++i) { x[i] = 0.7 + 1.5 * t_rng_normal(&rng); w[i] = t_rng_normal(&rng); }
    for (i = 0; i < n; ++i) { g[i] = 1.0 + 0.5 * t_rng_normal(&rng); b[i] = 0.0; }
    ctx.rank = rank; ctx.dims = dims; ctx.axis = axis; ctx.eps = 1e-3;
    fd_grad(rms_fwd, &ctx, x, g, b, w, y, total, x, total, fdx);
    fd_grad(rms_fwd, &ctx, x, g, b, w, y, total, g, n, fdg);
    ref_rms_norm_stats(rank, dims, axis, f64(x, NULL), ms);
    memset(&o, 0, sizeof o);
    o.dx = dx; o.dg = dg;
    ref_rms_norm_bwd(rank, dims, axis, NBWD_STATS_MEAN_SQUARE, ctx.eps, f64(x, NULL), f64(w, NULL), f64(ms, NULL),
                     f64(g, NULL), o);
    compare_fd("RMSNorm diff_src", fdx, dx, total);
    compare_fd("RMSNorm diff_gamma", fdg, dg, n);
    o.dx = dx2; o.dg = dg2;
    for (r = 0; r < rows; ++r) spread[r] = 1.0 / sqrt(ms[r] + ctx.eps);
    ref_rms_norm_bwd(rank, dims, axis, NBWD_STATS_RSTD, 12345.0, f64(x, NULL), f64(w, NULL), f64(spread, NULL),
                     f64(g, NULL), o);
    compare_exact("RMSNorm RSTD vs MEAN_SQUARE diff_src", dx2, dx, total, 1e-12);
    compare_exact("RMSNorm RSTD vs MEAN_SQUARE diff_gamma", dg2, dg, n, 1e-12);
    for (r = 0; r < rows; ++r) {
        spread[r] = sqrt(ms[r] + ctx.eps);
        for (i = 0; i < n; ++i) xh[r * n + i] = x[r * n + i] / spread[r];
    }
    ref_rms_norm_bwd(rank, dims, axis, NBWD_STATS_XHAT_STD, 12345.0, f64(xh, NULL), f64(w, NULL), f64(spread, NULL),
                     f64(g, NULL), o);
    compare_exact("RMSNorm XHAT_STD vs MEAN_SQUARE diff_src", dx2, dx, total, 1e-12);
    compare_exact("RMSNorm XHAT_STD vs MEAN_SQUARE diff_gamma", dg2, dg, n, 1e-12);
    free(x); free(w); free(y); free(xh); free(fdx); free(dx); free(dx2); free(g); free(b); free(fdg); free(dg);
    free(dg2); free(ms); free(spread);
}

static void bn_reference_case(int rank, const int64_t *dims, nbwd_layout layout, uint64_t seed) {
    int cd = layout == NBWD_NCX ? 1 : rank - 1, d;
    int64_t C = dims[cd], total = 1, i, e;
    double *x, *w, *y, *g, *b, *mean, *var, *spread, *xh, *fdx, *fdg, *fdb, *dx, *dg, *db, *dx2, *dg2, *db2;
    bn_ctx ctx;
    ref_out o;
    t_rng rng;
    for (d = 0; d < rank; ++d) total *= dims[d];
    t_case("reference BN vs finite differences: %s rank %d C=%lld", layout == NBWD_NCX ? "NCX" : "NXC", rank,
           (long long)C);
    t_rng_seed(&rng, seed);
    x = (double *)t_xmalloc((size_t)total * sizeof(double));
    w = (double *)t_xmalloc((size_t)total * sizeof(double));
    y = (double *)t_xmalloc((size_t)total * sizeof(double));
    xh = (double *)t_xmalloc((size_t)total * sizeof(double));
    fdx = (double *)t_xmalloc((size_t)total * sizeof(double));
    dx = (double *)t_xmalloc((size_t)total * sizeof(double));
    dx2 = (double *)t_xmalloc((size_t)total * sizeof(double));
    g = (double *)t_xmalloc((size_t)C * sizeof(double));
    b = (double *)t_xmalloc((size_t)C * sizeof(double));
    mean = (double *)t_xmalloc((size_t)C * sizeof(double));
    var = (double *)t_xmalloc((size_t)C * sizeof(double));
    spread = (double *)t_xmalloc((size_t)C * sizeof(double));
    fdg = (double *)t_xmalloc((size_t)C * sizeof(double));
    fdb = (double *)t_xmalloc((size_t)C * sizeof(double));
    dg = (double *)t_xmalloc((size_t)C * sizeof(double));
    db = (double *)t_xmalloc((size_t)C * sizeof(double));
    dg2 = (double *)t_xmalloc((size_t)C * sizeof(double));
    db2 = (double *)t_xmalloc((size_t)C * sizeof(double));
    for (i = 0; i < total; ++i) { x[i] = -0.4 + 2.0 * t_rng_normal(&rng); w[i] = t_rng_normal(&rng); }
    for (i = 0; i < C; ++i) { g[i] = 1.0 + 0.5 * t_rng_normal(&rng); b[i] = t_rng_normal(&rng); }
    ctx.rank = rank; ctx.dims = dims; ctx.layout = layout; ctx.eps = 1e-3; ctx.mean = ctx.var = NULL;
    fd_grad(bn_fwd, &ctx, x, g, b, w, y, total, x, total, fdx);
    fd_grad(bn_fwd, &ctx, x, g, b, w, y, total, g, C, fdg);
    fd_grad(bn_fwd, &ctx, x, g, b, w, y, total, b, C, fdb);
    ref_batch_norm_stats(rank, dims, layout, f64(x, NULL), mean, var);
    memset(&o, 0, sizeof o);
    o.dx = dx; o.dg = dg; o.db = db;
    ref_batch_norm_bwd(rank, dims, layout, NBWD_STATS_MEAN_VARIANCE, ctx.eps, f64(x, NULL), f64(w, NULL),
                       f64(mean, NULL), f64(var, NULL), f64(g, NULL), o);
    compare_fd("diff_src", fdx, dx, total);
    compare_fd("diff_gamma", fdg, dg, C);
    compare_fd("diff_beta", fdb, db, C);
    /* XHAT_STD form */
    for (i = 0; i < C; ++i) spread[i] = sqrt(var[i] + ctx.eps);
    for (e = 0; e < total; ++e) {
        int64_t c, lin = e, idx[NBWD_MAX_RANK];
        for (d = rank - 1; d >= 0; --d) { idx[d] = lin % dims[d]; lin /= dims[d]; }
        c = idx[cd];
        xh[e] = (x[e] - mean[c]) / spread[c];
    }
    o.dx = dx2; o.dg = dg2; o.db = db2;
    ref_batch_norm_bwd(rank, dims, layout, NBWD_STATS_XHAT_STD, 0.0, f64(xh, NULL), f64(w, NULL), f64(NULL, NULL),
                       f64(spread, NULL), f64(g, NULL), o);
    compare_exact("XHAT_STD vs MEAN_VARIANCE diff_src", dx2, dx, total, 1e-12);
    compare_exact("XHAT_STD vs MEAN_VARIANCE diff_gamma", dg2, dg, C, 1e-12);
    /* frozen (global) statistics: the forward with mean and var constant */
    ctx.mean = mean; ctx.var = var;
    fd_grad(bn_fwd, &ctx, x, g, b, w, y, total, x, total, fdx);
    fd_grad(bn_fwd, &ctx, x, g, b, w, y, total, g, C, fdg);
    fd_grad(bn_fwd, &ctx, x, g, b, w, y, total, b, C, fdb);
    ctx.mean = ctx.var = NULL;
    o.dx = dx2; o.dg = dg2; o.db = db2;
    ref_batch_norm_bwd_global(rank, dims, layout, NBWD_STATS_MEAN_VARIANCE, ctx.eps, f64(x, NULL), f64(w, NULL),
                              f64(mean, NULL), f64(var, NULL), f64(g, NULL), o);
    compare_fd("global statistics diff_src", fdx, dx2, total);
    compare_fd("global statistics diff_gamma", fdg, dg2, C);
    compare_fd("global statistics diff_beta", fdb, db2, C);
    /* strided x and dy (padded outer strides, negative batch stride) */
    {
        int64_t sx[NBWD_MAX_RANK], sw[NBWD_MAX_RANK];
        int dense_from = layout == NBWD_NCX ? 2 : rank - 1;
        double *xs, *ws, *mx, *mw;
        t_padded_strides(rank, dims, dense_from, 2, sx);
        t_padded_strides(rank, dims, dense_from, 5, sw);
        sx[0] = -sx[0];
        mx = to_strided(rank, dims, x, sx, &xs);
        mw = to_strided(rank, dims, w, sw, &ws);
        ref_batch_norm_bwd(rank, dims, layout, NBWD_STATS_MEAN_VARIANCE, ctx.eps, f64(xs, sx), f64(ws, sw),
                           f64(mean, NULL), f64(var, NULL), f64(g, NULL), o);
        compare_exact("strided vs dense diff_src", dx2, dx, total, 0.0);
        compare_exact("strided vs dense diff_gamma", dg2, dg, C, 0.0);
        compare_exact("strided vs dense diff_beta", db2, db, C, 0.0);
        free(mx); free(mw);
    }
    free(x); free(w); free(y); free(xh); free(fdx); free(dx); free(dx2); free(g); free(b); free(mean); free(var);
    free(spread); free(fdg); free(fdb); free(dg); free(db); free(dg2); free(db2);
}

/* GroupNorm: finite differences of its forward (the set statistics
   recomputed inside it) against the reference backward; the other three
   statistics forms; strided tensors (data, [N, groups] statistics, [C]
   parameters); and the BatchNorm (groups = C, N = 1) and LayerNorm
   (groups = 1, NCX) references on the same problem. */
static void gn_reference_case(int rank, const int64_t *dims, nbwd_layout layout, int64_t groups, uint64_t seed) {
    int cd = layout == NBWD_NCX ? 1 : rank - 1, d;
    int64_t N = dims[0], C = dims[cd], total = 1, NG = dims[0] * groups, Cg = dims[cd] / groups, S, i, e, s;
    double *x, *w, *y, *g, *b, *mean, *var, *spread, *xh, *fdx, *fdg, *fdb, *dx, *dg, *db, *dx2, *dg2, *db2;
    char dims_s[64];
    int k = 0;
    gn_ctx ctx;
    ref_out o;
    t_rng rng;
    dims_s[0] = 0;
    for (d = 0; d < rank; ++d) {
        k += snprintf(dims_s + k, sizeof dims_s - (size_t)k, "%s%lld", d ? "x" : "", (long long)dims[d]);
        total *= dims[d];
    }
    S = total / (N * C);
    t_case("reference GN vs finite differences: %s dims %s groups %lld", layout == NBWD_NCX ? "NCX" : "NXC", dims_s,
           (long long)groups);
    t_rng_seed(&rng, seed);
    x = (double *)t_xmalloc((size_t)total * sizeof(double));
    w = (double *)t_xmalloc((size_t)total * sizeof(double));
    y = (double *)t_xmalloc((size_t)total * sizeof(double));
    xh = (double *)t_xmalloc((size_t)total * sizeof(double));
    fdx = (double *)t_xmalloc((size_t)total * sizeof(double));
    dx = (double *)t_xmalloc((size_t)total * sizeof(double));
    dx2 = (double *)t_xmalloc((size_t)total * sizeof(double));
    g = (double *)t_xmalloc((size_t)C * sizeof(double));
    b = (double *)t_xmalloc((size_t)C * sizeof(double));
    fdg = (double *)t_xmalloc((size_t)C * sizeof(double));
    fdb = (double *)t_xmalloc((size_t)C * sizeof(double));
    dg = (double *)t_xmalloc((size_t)C * sizeof(double));
    db = (double *)t_xmalloc((size_t)C * sizeof(double));
    dg2 = (double *)t_xmalloc((size_t)C * sizeof(double));
    db2 = (double *)t_xmalloc((size_t)C * sizeof(double));
    mean = (double *)t_xmalloc((size_t)NG * sizeof(double));
    var = (double *)t_xmalloc((size_t)NG * sizeof(double));
    spread = (double *)t_xmalloc((size_t)NG * sizeof(double));
    /* a different offset per channel: the set's mean is not each channel's */
    for (e = 0; e < total; ++e) {
        int64_t lin = e, ch = 0;
        for (d = rank - 1; d >= 0; --d) {
            if (d == cd) ch = lin % dims[d];
            lin /= dims[d];
        }
        x[e] = 0.3 * (double)ch - 0.5 + 1.5 * t_rng_normal(&rng);
        w[e] = t_rng_normal(&rng);
    }
    for (i = 0; i < C; ++i) {
        g[i] = (i % 3 == 1 ? -1.0 : 1.0) * t_rng_uniform(&rng, 0.5, 1.5); /* |gamma| >= 0.5: y - beta keeps xhat */
        b[i] = t_rng_normal(&rng);
    }
    ctx.rank = rank; ctx.dims = dims; ctx.layout = layout; ctx.groups = groups; ctx.eps = 1e-3;
    fd_grad(gn_fwd, &ctx, x, g, b, w, y, total, x, total, fdx);
    fd_grad(gn_fwd, &ctx, x, g, b, w, y, total, g, C, fdg);
    fd_grad(gn_fwd, &ctx, x, g, b, w, y, total, b, C, fdb);
    ref_group_norm_stats(rank, dims, layout, groups, f64(x, NULL), mean, var);
    memset(&o, 0, sizeof o);
    o.dx = dx; o.dg = dg; o.db = db;
    ref_group_norm_bwd(rank, dims, layout, groups, NBWD_STATS_MEAN_VARIANCE, ctx.eps, f64(x, NULL), f64(w, NULL),
                       f64(mean, NULL), f64(var, NULL), f64(g, NULL), f64(NULL, NULL), o);
    compare_fd("GroupNorm diff_src", fdx, dx, total);
    compare_fd("GroupNorm diff_gamma", fdg, dg, C);
    compare_fd("GroupNorm diff_beta", fdb, db, C);

    /* the other forms: MEAN_RSTD, XHAT_STD (xhat in place of x), DST_RSTD (the forward output and beta) */
    o.dx = dx2; o.dg = dg2; o.db = db2;
    for (s = 0; s < NG; ++s) spread[s] = 1.0 / sqrt(var[s] + ctx.eps);
    ref_group_norm_bwd(rank, dims, layout, groups, NBWD_STATS_MEAN_RSTD, 12345.0, f64(x, NULL), f64(w, NULL),
                       f64(mean, NULL), f64(spread, NULL), f64(g, NULL), f64(NULL, NULL), o);
    compare_exact("GroupNorm MEAN_RSTD vs MEAN_VARIANCE diff_src", dx2, dx, total, 1e-12);
    compare_exact("GroupNorm MEAN_RSTD vs MEAN_VARIANCE diff_gamma", dg2, dg, C, 1e-12);
    compare_exact("GroupNorm MEAN_RSTD vs MEAN_VARIANCE diff_beta", db2, db, C, 0.0);
    gn_fwd(&ctx, x, g, b, y);
    ref_group_norm_bwd(rank, dims, layout, groups, NBWD_STATS_DST_RSTD, 12345.0, f64(y, NULL), f64(w, NULL),
                       f64(NULL, NULL), f64(spread, NULL), f64(g, NULL), f64(b, NULL), o);
    compare_exact("GroupNorm DST_RSTD vs MEAN_VARIANCE diff_src", dx2, dx, total, 1e-12);
    compare_exact("GroupNorm DST_RSTD vs MEAN_VARIANCE diff_gamma", dg2, dg, C, 1e-12);
    compare_exact("GroupNorm DST_RSTD vs MEAN_VARIANCE diff_beta", db2, db, C, 0.0);
    for (s = 0; s < NG; ++s) spread[s] = sqrt(var[s] + ctx.eps);
    for (e = 0; e < total; ++e) {
        int64_t lin = e, idx[NBWD_MAX_RANK];
        for (d = rank - 1; d >= 0; --d) { idx[d] = lin % dims[d]; lin /= dims[d]; }
        s = idx[0] * groups + idx[cd] / Cg;
        xh[e] = (x[e] - mean[s]) / spread[s];
    }
    ref_group_norm_bwd(rank, dims, layout, groups, NBWD_STATS_XHAT_STD, 12345.0, f64(xh, NULL), f64(w, NULL),
                       f64(NULL, NULL), f64(spread, NULL), f64(g, NULL), f64(NULL, NULL), o);
    compare_exact("GroupNorm XHAT_STD vs MEAN_VARIANCE diff_src", dx2, dx, total, 1e-12);
    compare_exact("GroupNorm XHAT_STD vs MEAN_VARIANCE diff_gamma", dg2, dg, C, 1e-12);
    compare_exact("GroupNorm XHAT_STD vs MEAN_VARIANCE diff_beta", db2, db, C, 0.0);

    /* strided: data padded (a negative batch stride), [N, groups] statistics
       with gaps (a negative group stride), [C] parameters with strides 3 and -2 */
    {
        int64_t sx[NBWD_MAX_RANK], sw[NBWD_MAX_RANK], sm[2], sv[2], sd[2], sg[1] = {3}, sb[1] = {-2};
        int dense_from = layout == NBWD_NCX ? 2 : rank - 1;
        double *xs, *ws, *ms, *vs, *gs, *bs, *mx, *mw, *mm, *mv, *mg, *mb;
        sd[0] = N; sd[1] = groups;
        t_padded_strides(rank, dims, dense_from, 2, sx);
        t_padded_strides(rank, dims, dense_from, 5, sw);
        t_padded_strides(2, sd, 2, 1, sm);
        t_padded_strides(2, sd, 2, 3, sv);
        sx[0] = -sx[0];
        sv[1] = -sv[1];
        for (s = 0; s < NG; ++s) spread[s] = var[s];
        mx = to_strided(rank, dims, x, sx, &xs);
        mw = to_strided(rank, dims, w, sw, &ws);
        mm = to_strided(2, sd, mean, sm, &ms);
        mv = to_strided(2, sd, spread, sv, &vs);
        mg = to_strided(1, &C, g, sg, &gs);
        mb = to_strided(1, &C, b, sb, &bs);
        ref_group_norm_bwd(rank, dims, layout, groups, NBWD_STATS_MEAN_VARIANCE, ctx.eps, f64(xs, sx), f64(ws, sw),
                           f64(ms, sm), f64(vs, sv), f64(gs, sg), f64(NULL, NULL), o);
        compare_exact("GroupNorm strided vs dense diff_src", dx2, dx, total, 0.0);
        compare_exact("GroupNorm strided vs dense diff_gamma", dg2, dg, C, 0.0);
        compare_exact("GroupNorm strided vs dense diff_beta", db2, db, C, 0.0);
        /* DST_RSTD with strided y, gamma and beta */
        gn_fwd(&ctx, x, g, b, y);
        free(mx);
        mx = to_strided(rank, dims, y, sx, &xs);
        for (s = 0; s < NG; ++s) spread[s] = 1.0 / sqrt(var[s] + ctx.eps);
        free(mv);
        mv = to_strided(2, sd, spread, sv, &vs);
        ref_group_norm_bwd(rank, dims, layout, groups, NBWD_STATS_DST_RSTD, 0.0, f64(xs, sx), f64(ws, sw),
                           f64(NULL, NULL), f64(vs, sv), f64(gs, sg), f64(bs, sb), o);
        compare_exact("GroupNorm DST_RSTD strided diff_src", dx2, dx, total, 1e-12);
        compare_exact("GroupNorm DST_RSTD strided diff_gamma", dg2, dg, C, 1e-12);
        free(mx); free(mw); free(mm); free(mv); free(mg); free(mb);
    }

    /* InstanceNorm of one sample is BatchNorm of that sample */
    if (groups == C && N == 1) {
        ref_batch_norm_bwd(rank, dims, layout, NBWD_STATS_MEAN_VARIANCE, ctx.eps, f64(x, NULL), f64(w, NULL),
                           f64(mean, NULL), f64(var, NULL), f64(g, NULL), o);
        compare_exact("InstanceNorm (N = 1) vs BatchNorm reference diff_src", dx2, dx, total, 1e-12);
        compare_exact("InstanceNorm (N = 1) vs BatchNorm reference diff_gamma", dg2, dg, C, 1e-12);
        compare_exact("InstanceNorm (N = 1) vs BatchNorm reference diff_beta", db2, db, C, 1e-12);
    }
    /* groups = 1 (NCX): LayerNorm over [C, X...] with gamma[c] repeated over X */
    if (groups == 1 && layout == NBWD_NCX) {
        double *gx = (double *)t_xmalloc((size_t)(C * S) * sizeof(double));
        double *lg = (double *)t_xmalloc((size_t)(C * S) * sizeof(double));
        double *lb = (double *)t_xmalloc((size_t)(C * S) * sizeof(double));
        for (i = 0; i < C * S; ++i) gx[i] = g[i / S];
        o.dg = lg; o.db = lb;
        ref_layer_norm_bwd(rank, dims, 1, NBWD_STATS_MEAN_VARIANCE, ctx.eps, f64(x, NULL), f64(w, NULL),
                           f64(mean, NULL), f64(var, NULL), f64(gx, NULL), o);
        for (i = 0; i < C; ++i) {
            int64_t j;
            dg2[i] = db2[i] = 0.0;
            for (j = 0; j < S; ++j) { dg2[i] += lg[i * S + j]; db2[i] += lb[i * S + j]; }
        }
        compare_exact("GroupNorm (groups 1) vs LayerNorm reference diff_src", dx2, dx, total, 1e-12);
        compare_exact("GroupNorm (groups 1) vs LayerNorm reference diff_gamma (summed over X)", dg2, dg, C, 1e-12);
        compare_exact("GroupNorm (groups 1) vs LayerNorm reference diff_beta (summed over X)", db2, db, C, 1e-12);
        free(gx); free(lg); free(lb);
    }
    free(x); free(w); free(y); free(xh); free(fdx); free(dx); free(dx2); free(g); free(b); free(fdg); free(fdb);
    free(dg); free(db); free(dg2); free(db2); free(mean); free(var); free(spread);
}

void test_reference(void) {
    static const int64_t d1[1] = {6}, d2[2] = {3, 7}, d3[3] = {2, 3, 4}, d4[4] = {2, 2, 3, 3};
    static const int64_t b2[2] = {5, 3}, b3n[3] = {3, 2, 4}, b3x[3] = {3, 4, 2}, b4n[4] = {2, 3, 2, 2},
                         b5x[5] = {2, 2, 1, 3, 2};
    uint64_t seed = 42;
    ln_reference_case(1, d1, 0, ++seed);
    ln_reference_case(2, d2, 1, ++seed);
    ln_reference_case(2, d2, 0, ++seed);
    ln_reference_case(3, d3, 1, ++seed);
    ln_reference_case(3, d3, 2, ++seed);
    ln_reference_case(4, d4, 2, ++seed);
    bn_reference_case(2, b2, NBWD_NXC, ++seed);
    bn_reference_case(2, b2, NBWD_NCX, ++seed);
    bn_reference_case(3, b3n, NBWD_NCX, ++seed);
    bn_reference_case(3, b3x, NBWD_NXC, ++seed);
    bn_reference_case(4, b4n, NBWD_NCX, ++seed);
    bn_reference_case(5, b5x, NBWD_NXC, ++seed);
    rms_reference_case(1, d1, 0, 901);
    rms_reference_case(2, d2, 1, 902);
    rms_reference_case(3, d3, 1, 903);
    rms_reference_case(4, d4, 2, 904);
    {
        static const int64_t g2n[2] = {3, 4}, g3x[3] = {2, 3, 6}, g3n[3] = {2, 6, 4}, g4n[4] = {2, 4, 2, 3},
                             g4x[4] = {2, 2, 3, 4}, g1n[3] = {1, 3, 5}, g1x[3] = {1, 3, 4}, g5x[5] = {2, 2, 1, 2, 4},
                             g3i[3] = {3, 4, 5};
        gn_reference_case(2, g2n, NBWD_NCX, 2, 951); /* no spatial dims: a set is C/groups values */
        gn_reference_case(2, g2n, NBWD_NXC, 1, 952);
        gn_reference_case(3, g3x, NBWD_NXC, 3, 953); /* groups C/2 */
        gn_reference_case(3, g3n, NBWD_NCX, 2, 954);
        gn_reference_case(3, g3i, NBWD_NCX, 4, 955); /* InstanceNorm */
        gn_reference_case(4, g4n, NBWD_NCX, 1, 956); /* = LayerNorm */
        gn_reference_case(4, g4x, NBWD_NXC, 4, 957); /* InstanceNorm */
        gn_reference_case(3, g1n, NBWD_NCX, 3, 958); /* N = 1 InstanceNorm = BatchNorm */
        gn_reference_case(3, g1x, NBWD_NXC, 4, 959);
        gn_reference_case(5, g5x, NBWD_NXC, 2, 960);
    }
}
